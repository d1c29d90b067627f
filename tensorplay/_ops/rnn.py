"""Fused recurrent cells: one registered primitive per LSTM or GRU step
(tensorplay/_kernels/rnn.pyx), used by ``nn.LSTM``/``nn.GRU``
(tensorplay/nn/modules/_recurrence.py).

``lstm_cell``  (gx, gh, c) -> out (2, ..., H) = [h', c']
``gru_cell``   (gx, gh, h) -> h' (..., H)

gx and gh are the input and hidden projections of the step (..., 4H) / (..., 3H)
(biases included), gate order PyTorch's (LSTM i, f, g, o; GRU r, z, n with b_hn
inside ``r *``).  ``lstm_cell`` returns ``(h', c')``; ``lstm_cell_packed`` the
(2, ..., H) output.  The output holds only the states, so the cotangent reaching
the backward is no wider than they are; the backward recomputes the activations
(the kernel's Design block has the formulas):

* VJP: one backward kernel pass gives the gradients of every input at once; the
  per-input rules share it through a one-entry memo keyed on the identity of the
  cotangent and the output (the engine calls the rules of one node back to back
  with the same two objects), dropped by the node's last rule that needs it.
  When a graph is recorded (``create_graph``), tangents flow or a tensor is
  batched, the same formulas run as tensorplay ops instead, so higher orders,
  forward-over-reverse and vmap of the backward work.
* JVP: the forward formulas differentiated, in tensorplay ops.
* vmap: every argument gets the batch dim at 0 (a leading dim of the rows); the
  LSTM result's part dim moves behind it.
"""
import numpy as np

from tensorplay._kernels import rnn as _kr
from tensorplay._ops import _batching as _B
from tensorplay._ops._common import CONFIG
from tensorplay._ops._validate import Signature, TensorArg, declare
from tensorplay._ops.registry import apply, defop, tangent_sum
from tensorplay._tensor import Tensor
from tensorplay.autograd.grad_mode import STATE

__all__ = []          # internal: torch's lstm_cell/gru_cell take weights, not gates
INTERNAL = ["lstm_cell", "gru_cell", "lstm_cell_packed"]


def _fast(*ts):
    """Kernel results may be returned as constants: no graph recorded, no
    tangents, nothing batched (as normalization.py's rules)."""
    if STATE.grad_enabled or STATE.fw_level is not None:
        return False
    for t in ts:
        if type(t._data) is _B.BatchedArray:
            return False
    return True


def _rows(a, width):
    return np.ascontiguousarray(a).reshape(-1, width)


def _cell_batch(op, args, batched, size, params):
    new = [_B._materialize(a, b, size) for a, b in zip(args, batched)]
    return apply(op, tuple(new), params).movedim(1, 0)


class _Memo:
    """The last backward kernel result, keyed on (cotangent, output) identity.
    ``keep``: a later rule of the same node will ask (its input requires grad);
    otherwise the entry is dropped, so no arrays outlive the node's backward."""
    __slots__ = ("g", "out", "grads")

    def __init__(self):
        self.g = self.out = self.grads = None

    def get(self, g, out, compute, keep):
        if self.g is g and self.out is out:
            grads = self.grads
        else:
            grads = compute()
        if keep:
            self.g, self.out, self.grads = g, out, grads
        else:
            self.g = self.out = self.grads = None
        return grads


# ---------------------------------------------------------------- LSTM cell
def _lstm_fwd(gx, gh, c):
    H = c.shape[-1]
    out = np.empty((2,) + c.shape, c.dtype)
    scratch = np.empty(c.shape[:-1] + (4 * H,), c.dtype)
    _kr.lstm_cell_fwd(_rows(gx, 4 * H), _rows(gh, 4 * H), _rows(c, H),
                      out.reshape(2, -1, H), scratch.reshape(-1, 4 * H), CONFIG.num_threads)
    return out


def _lstm_acts(gx, gh):
    from tensorplay.nn import functional as F
    a_i, a_f, a_g, a_o = (gx + gh).chunk(4, -1)
    return F.sigmoid(a_i), F.sigmoid(a_f), F.tanh(a_g), F.sigmoid(a_o)


def _lstm_bwd_ops(g, out, gx, gh, c):
    """The backward in tensorplay ops (differentiable): (dgates, dc)."""
    from tensorplay._ops.shape_join import cat
    from tensorplay.nn import functional as F
    g_h, g_c = g.unbind(0)
    i, f, gate, o = _lstm_acts(gx, gh)
    t = F.tanh(out[1])
    cb = g_c + g_h * o * (1 - t * t)
    dgates = cat([cb * gate * (i * (1 - i)), cb * c * (f * (1 - f)),
                  cb * i * (1 - gate * gate), g_h * t * (o * (1 - o))], -1)
    return dgates, cb * f


_LSTM_MEMO = _Memo()


def _lstm_grads(g, out, gx, gh, c, keep):
    if not _fast(g, out, gx, gh, c):
        return _lstm_bwd_ops(g, out, gx, gh, c)

    def compute():
        H = c.shape[-1]
        dt = out._data.dtype
        dgates = np.empty(c.shape[:-1] + (4 * H,), dt)
        dc = np.empty(c.shape, dt)
        _kr.lstm_cell_bwd(np.ascontiguousarray(g._data, dt).reshape(2, -1, H),
                          _rows(gx._data, 4 * H), _rows(gh._data, 4 * H), _rows(c._data, H),
                          out._data.reshape(2, -1, H), dgates.reshape(-1, 4 * H),
                          dc.reshape(-1, H), CONFIG.num_threads)
        return Tensor._wrap(dgates), Tensor._wrap(dc)
    return _LSTM_MEMO.get(g, out, compute, keep)


def _lstm_jvp(ts, out, gx, gh, c):
    from tensorplay._ops.shape import stack
    from tensorplay.nn import functional as F
    tgates, tc = tangent_sum(ts[0], ts[1]), ts[2]
    i, f, gate, o = _lstm_acts(gx, gh)
    t = F.tanh(out[1])
    if tgates is None:
        tgates = gx.detach() * 0
    a_i, a_f, a_g, a_o = tgates.chunk(4, -1)
    tc1 = a_f * (f * (1 - f)) * c + a_i * (i * (1 - i)) * gate + i * (a_g * (1 - gate * gate))
    if tc is not None:
        tc1 = tc1 + f * tc
    return stack([a_o * (o * (1 - o)) * t + o * (tc1 * (1 - t * t)), tc1], 0)


_lstm_cell = defop("lstm_cell", _lstm_fwd,
                   vjp=(lambda g, out, gx, gh, c: _lstm_grads(
                            g, out, gx, gh, c, gh._requires_grad or c._requires_grad)[0],
                        lambda g, out, gx, gh, c: _lstm_grads(g, out, gx, gh, c,
                                                              c._requires_grad)[0],
                        lambda g, out, gx, gh, c: _lstm_grads(g, out, gx, gh, c,
                                                              False)[1]),
                   jvp=_lstm_jvp, saves=("inputs", "out"), batch=_cell_batch)


# ---------------------------------------------------------------- GRU cell
def _gru_fwd(gx, gh, h):
    H = h.shape[-1]
    out = np.empty(h.shape, h.dtype)
    scratch = np.empty(h.shape[:-1] + (3 * H,), h.dtype)
    _kr.gru_cell_fwd(_rows(gx, 3 * H), _rows(gh, 3 * H), _rows(h, H), out.reshape(-1, H),
                     scratch.reshape(-1, 3 * H), CONFIG.num_threads)
    return out


def _gru_acts(gx, gh):
    from tensorplay.nn import functional as F
    x_r, x_z, x_n = gx.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    r = F.sigmoid(x_r + h_r)
    return r, F.sigmoid(x_z + h_z), F.tanh(x_n + r * h_n), h_n


def _gru_bwd_ops(g, gx, gh, h):
    """The backward in tensorplay ops (differentiable): (dgx, dgh, dh)."""
    from tensorplay._ops.shape_join import cat
    r, z, n, h_n = _gru_acts(gx, gh)
    zb = g * (h - n) * (z * (1 - z))
    an = g * (1 - z) * (1 - n * n)
    rb = an * h_n * (r * (1 - r))
    return cat([rb, zb, an], -1), cat([rb, zb, an * r], -1), g * z


_GRU_MEMO = _Memo()


def _gru_grads(g, out, gx, gh, h, keep):
    if not _fast(g, out, gx, gh, h):
        return _gru_bwd_ops(g, gx, gh, h)

    def compute():
        H = h.shape[-1]
        dt = out._data.dtype
        dgx = np.empty(h.shape[:-1] + (3 * H,), dt)
        dgh = np.empty(h.shape[:-1] + (3 * H,), dt)
        dh = np.empty(h.shape, dt)
        _kr.gru_cell_bwd(_rows(np.asarray(g._data, dt), H), _rows(gx._data, 3 * H),
                         _rows(gh._data, 3 * H), _rows(h._data, H), dgx.reshape(-1, 3 * H),
                         dgh.reshape(-1, 3 * H), dh.reshape(-1, H), CONFIG.num_threads)
        return Tensor._wrap(dgx), Tensor._wrap(dgh), Tensor._wrap(dh)
    return _GRU_MEMO.get(g, out, compute, keep)


def _gru_jvp(ts, out, gx, gh, h):
    zero = None
    tx, th_, th = ts
    if tx is None or th_ is None:
        zero = gx.detach() * 0
    x_r, x_z, x_n = (zero if tx is None else tx).chunk(3, -1)
    h_r, h_z, h_n = (zero if th_ is None else th_).chunk(3, -1)
    r, z, n, gh_n = _gru_acts(gx, gh)
    tr = (x_r + h_r) * (r * (1 - r))
    tz = (x_z + h_z) * (z * (1 - z))
    tn = (x_n + tr * gh_n + r * h_n) * (1 - n * n)
    dh = tn + tz * (h - n) - z * tn
    if th is not None:
        dh = dh + z * th
    return dh


_gru_cell = defop("gru_cell", _gru_fwd,
                  vjp=(lambda g, out, gx, gh, h: _gru_grads(
                           g, out, gx, gh, h, gh._requires_grad or h._requires_grad)[0],
                       lambda g, out, gx, gh, h: _gru_grads(g, out, gx, gh, h,
                                                            h._requires_grad)[1],
                       lambda g, out, gx, gh, h: _gru_grads(g, out, gx, gh, h, False)[2]),
                  jvp=_gru_jvp, saves=("inputs", "out"), batch=_B.leading_rule)


# ---------------------------------------------------------------- entry points
def _signature(name, state):
    return declare(Signature(name, TensorArg("input_gates", "f", exc=RuntimeError),
                             TensorArg("hidden_gates", "f", exc=RuntimeError),
                             TensorArg(state, "f", exc=RuntimeError),
                             same_dtype=("input_gates", "hidden_gates", state)))


_check_lstm = _signature("lstm_cell", "cx")
_check_gru = _signature("gru_cell", "hx")


def _shapes(op, gates, gx, gh, s):
    H = s.shape[-1] if s.ndim else -1
    want = tuple(s.shape[:-1]) + (gates * H,)
    if s.ndim == 0 or tuple(gx.shape) != want or tuple(gh.shape) != want:
        raise RuntimeError(f"{op}(): expected input_gates and hidden_gates of shape "
                           f"(..., {gates} * H) = {list(want) if s.ndim else '?'} for a "
                           f"state of shape (..., H) = {list(s.shape)}, got "
                           f"{list(gx.shape)} and {list(gh.shape)}")


def lstm_cell_packed(input_gates, hidden_gates, cx):
    """One fused LSTM step: (2, ..., H) = [h', c'].

    Args:
        input_gates, hidden_gates (Tensor): (..., 4H) pre-activations, gate order
            i, f, g, o (biases included); they are added.
        cx (Tensor): (..., H) the cell state; all three float32 or float64, one dtype.

    Raises:
        TypeError: non-Tensors.  RuntimeError: integer/bool or mixed dtypes,
        shapes that do not fit.
    """
    gx, gh, c = _check_lstm(input_gates, hidden_gates, cx)
    _shapes("lstm_cell", 4, gx, gh, c)
    return apply(_lstm_cell, (gx, gh, c), {})


def lstm_cell(input_gates, hidden_gates, cx):
    """One fused LSTM step: ``(h', c')``, each (..., H) (see ``lstm_cell_packed``
    for the arguments)."""
    out = lstm_cell_packed(input_gates, hidden_gates, cx)
    return out[0], out[1]


def gru_cell(input_gates, hidden_gates, hx):
    """One fused GRU step: h' (..., H).

    Args:
        input_gates (Tensor): (..., 3H) ``x W_ih^T + b_ih``, gates r, z, n.
        hidden_gates (Tensor): (..., 3H) ``h W_hh^T + b_hh``.
        hx (Tensor): (..., H) the hidden state; one float dtype for all three.

    Raises:
        TypeError: non-Tensors.  RuntimeError: integer/bool or mixed dtypes,
        shapes that do not fit.
    """
    gx, gh, h = _check_gru(input_gates, hidden_gates, hx)
    _shapes("gru_cell", 3, gx, gh, h)
    return apply(_gru_cell, (gx, gh, h), {})
