"""layer_norm and group_norm (issue 9): fused primitives over rows, with the fused
backward ``layer_norm_backward`` they share.  The design, the formulas and the
cache are described in ``normalization.py``.

Row view: x as R rows of L = Cg*K elements; row r is group g = r % G of its
sample and element j belongs to channel c = g*Cg + j // K.  layer_norm has G = 1,
Cg = the normalized size, K = 1 (the weight per element); group_norm of
(N, C, *) has rows (n, g), Cg = C/G, K = d1*... (the weight per channel:
``chan=True``).
"""
import math
import operator
import weakref

import numpy as np

from tensorplay._kernels import norm as _kno
from tensorplay._ops import _batching as _B
from tensorplay._ops._common import CONFIG
from tensorplay._ops._validate import Signature, TensorArg, declare
from tensorplay._ops.normalization import (_affine_arg, _const, _fast, _float_arg, _nck,
                                           _same_dtypes, _standardize, _x_jvp, _x_vjp)
from tensorplay._ops.registry import apply, defop, tangent_sum
from tensorplay._pool import empty as pool_empty

__all__ = ["layer_norm", "group_norm", "layer_norm_backward"]
INTERNAL = list(__all__)     # torch.nn.functional names: not tensorplay.<name>

_check_ln = declare(Signature("layer_norm", TensorArg("input", "f", exc=RuntimeError)))
_check_gn = declare(Signature("group_norm", TensorArg("input", "f", exc=RuntimeError)))
_check_lnb = declare(Signature(
    "layer_norm_backward", TensorArg("grad_output", "f", exc=RuntimeError),
    TensorArg("input", "f", exc=RuntimeError),
    TensorArg("weight", "f", exc=RuntimeError), same_shape=("grad_output", "input")))


# Row view: x (N, G*Cg*K) as R = N*G rows of L = Cg*K; layer_norm has G = 1,
# Cg = D (the normalized size), K = 1.  params: G, Cg, K, eps, cache.
def _rows(x, G, Cg, K):
    return np.ascontiguousarray(x).reshape(-1, Cg * K)


def _row_stats(x, G, Cg, K, eps, cache, chan):
    if cache.get("x") is x:
        return cache["mean"], cache["rstd"]
    x2 = _rows(x, G, Cg, K)
    r = x2.shape[0]
    mean, rstd = np.empty(r), np.empty(r)
    if r:
        _kno.row_norm_fwd(x2, None, None, np.empty_like(x2), mean, rstd, G, Cg, K, eps,
                          CONFIG.num_threads)
    cache.update(x=x, mean=mean, rstd=rstd, sums=None)
    return mean, rstd


def _rn_fwd(x, w, b, G, Cg, K, eps, cache, chan):
    x2 = _rows(x, G, Cg, K)
    r = x2.shape[0]
    y = pool_empty(x.shape, x.dtype)
    mean, rstd = np.empty(r), np.empty(r)
    if r:
        _kno.row_norm_fwd(x2, np.ascontiguousarray(w).reshape(-1),
                          np.ascontiguousarray(b).reshape(-1), y.reshape(r, -1), mean, rstd,
                          G, Cg, K, eps, CONFIG.num_threads)
    cache.update(x=x, mean=mean, rstd=rstd, sums=None)
    return y


def _rnb_fwd(g, x, w, G, Cg, K, eps, cache, chan):
    mean, rstd = _row_stats(x, G, Cg, K, eps, cache, chan)
    x2 = _rows(x, G, Cg, K)
    r = x2.shape[0]
    out = pool_empty(x.shape, x.dtype)
    gwb = np.empty((2, G * Cg))
    if r:
        _kno.row_norm_bwd(np.ascontiguousarray(g).reshape(r, -1), x2,
                          np.ascontiguousarray(w).reshape(-1), mean, rstd,
                          out.reshape(r, -1), gwb, G, Cg, K, CONFIG.num_threads)
    else:
        gwb[:] = 0
    cache["sums"] = (weakref.ref(g), gwb)
    return out


def _rn_sums(g, x, G, Cg, K, eps, cache, chan):
    s = cache.get("sums")
    if s is not None and s[0]() is g and cache.get("x") is x:
        return s[1]
    mean, rstd = _row_stats(x, G, Cg, K, eps, cache, chan)
    x2 = _rows(x, G, Cg, K)
    gwb = np.zeros((2, G * Cg))
    if x2.shape[0]:
        _kno.row_norm_bwd(np.ascontiguousarray(g).reshape(x2.shape), x2, None, mean, rstd,
                          None, gwb, G, Cg, K, CONFIG.num_threads)
    cache["sums"] = (weakref.ref(g), gwb)
    return gwb


def _gview(t, G, Cg, K):
    """The (N, G, L) group view of an x-shaped tensor."""
    return t.reshape(-1, G, Cg * K)


def _wview(w, G, Cg, K):
    """weight (G*Cg elements) spread over the (G, L) elements of a group view."""
    w2 = w.reshape(G, Cg, 1)
    if K != 1:
        w2 = w2.expand(G, Cg, K)
    return w2.reshape(G, Cg * K)


def _row_mean(t):
    return t.mean(-1, keepdim=True)


def _chan_sum(t, G, Cg, K, shape):
    """Sum an x-shaped tensor per channel (over rows and the K positions)."""
    return t.reshape(-1, G, Cg, K).sum((0, 3)).reshape(shape)


def _rnb(g, x, w, G, Cg, K, eps, cache, chan):
    return apply(_layer_norm_backward, (g, x, w),
                 {"G": G, "Cg": Cg, "K": K, "eps": eps, "cache": cache, "chan": chan})


def _rn_vjp_x(g, out, x, w, b, G, Cg, K, eps, cache, chan):
    return _rnb(g, x, w, G, Cg, K, eps, cache, chan)


def _rn_vjp_w(g, out, x, w, b, G, Cg, K, eps, cache, chan):
    if _fast(g, x):
        return _const(_rn_sums(g._data, x._data, G, Cg, K, eps, cache, chan)[0].reshape(w.shape),
                      x._data.dtype)
    xhat = _standardize(_gview(x, G, Cg, K), _row_mean, eps)[1].reshape(x.shape)
    return _chan_sum(g * xhat, G, Cg, K, w.shape)


def _rn_vjp_b(g, out, x, w, b, G, Cg, K, eps, cache, chan):
    if _fast(g, x):
        return _const(_rn_sums(g._data, x._data, G, Cg, K, eps, cache, chan)[1].reshape(b.shape),
                      x._data.dtype)
    return _chan_sum(g, G, Cg, K, b.shape)


def _rn_jvp(ts, out, x, w, b, G, Cg, K, eps, cache, chan):
    tx, tw, tb = ts
    # y = xhat w + b: the x tangent is w Q(tx) (Q(tx w) is the adjoint's order)
    terms = [None if tx is None else
             _rnb(tx, x, _ones_like(w), G, Cg, K, eps, cache, chan) * _affine_view(w, x, chan)]
    if tw is not None:
        xhat = _standardize(_gview(x, G, Cg, K), _row_mean, eps)[1].reshape(x.shape)
        terms.append(xhat * _affine_view(tw, x, chan))
    if tb is not None:
        terms.append(_affine_view(tb, x, chan))
    return tangent_sum(*terms)


def _affine_view(t, x, chan):
    """A weight-shaped tensor broadcastable against x: as is for layer_norm (the
    trailing shape); (C, 1, ...) for group_norm (chan: per channel, dim 1)."""
    return t.reshape((-1,) + (1,) * (x.ndim - 2)) if chan else t


def _rn_batch(op, args, batched, size, params):
    """vmap: rows are independent, so a batched input (and cotangent) with an
    unbatched weight and bias folds the vmap dim into the rows (group_norm: into N);
    a batched weight or bias runs the per-example loop."""
    nx = 2 if op is _layer_norm_backward else 1      # the x-shaped leading arguments
    if any(batched[nx:]):
        return _B.fallback_rule(op, args, batched, size, params)
    phys = [_B._materialize(a, b, size) for a, b in zip(args[:nx], batched[:nx])]
    shape = tuple(phys[0].shape)
    if params["chan"]:                      # (B, N, C, *) -> (B*N, C, *)
        phys = [a.reshape((-1,) + shape[2:]) for a in phys]
    out = apply(op, tuple(phys) + tuple(args[nx:]), dict(params, cache={}))
    return out.reshape(shape) if params["chan"] else out


_RN_RULES = dict(vjp=(_rn_vjp_x, _rn_vjp_w, _rn_vjp_b), jvp=_rn_jvp, saves=("inputs",),
                 batch=_rn_batch)
_layer_norm = defop("layer_norm", _rn_fwd, **_RN_RULES)
_group_norm = defop("group_norm", _rn_fwd, **_RN_RULES)


# layer_norm_backward F(g, x, w) = Q(g w): adjoint in g is w Q(h); linear in w.
def _ones_like(w):
    return w.detach() * 0 + 1


def _rnb_vjp_g(h, out, g, x, w, G, Cg, K, eps, cache, chan):
    q = _rnb(h, x, _ones_like(w), G, Cg, K, eps, cache, chan)
    return (_gview(q, G, Cg, K) * _wview(w, G, Cg, K)).reshape(x.shape)


def _rnb_vjp_x(h, out, g, x, w, G, Cg, K, eps, cache, chan):
    xv = _gview(x, G, Cg, K)
    s, xhat = _standardize(xv, _row_mean, eps)
    u = _gview(g, G, Cg, K) * _wview(w, G, Cg, K)
    qh = _gview(_rnb(h, x, _ones_like(w), G, Cg, K, eps, cache, chan), G, Cg, K)
    return _x_vjp(_gview(h, G, Cg, K), u, qh, _gview(out, G, Cg, K), s, xhat,
                  _row_mean).reshape(x.shape)


def _rnb_vjp_w(h, out, g, x, w, G, Cg, K, eps, cache, chan):
    q = _rnb(h, x, _ones_like(w), G, Cg, K, eps, cache, chan)
    return _chan_sum(g * q, G, Cg, K, w.shape)


def _rnb_jvp(ts, out, g, x, w, G, Cg, K, eps, cache, chan):
    tg, tx, tw = ts
    dx = None
    if tx is not None:
        xv = _gview(x, G, Cg, K)
        s, xhat = _standardize(xv, _row_mean, eps)
        u = _gview(g, G, Cg, K) * _wview(w, G, Cg, K)
        qt = _gview(_rnb(tx, x, _ones_like(w), G, Cg, K, eps, cache, chan), G, Cg, K)
        qu = _gview(_rnb(g, x, w, G, Cg, K, eps, cache, chan), G, Cg, K)
        dx = _x_jvp(_gview(tx, G, Cg, K), u, qt, qu, s, xhat, _row_mean).reshape(x.shape)
    return tangent_sum(None if tg is None else _rnb(tg, x, w, G, Cg, K, eps, cache, chan), dx,
                       None if tw is None else _rnb(g, x, tw, G, Cg, K, eps, cache, chan))


_layer_norm_backward = defop(
    "layer_norm_backward", _rnb_fwd, vjp=(_rnb_vjp_g, _rnb_vjp_x, _rnb_vjp_w),
    jvp=_rnb_jvp, saves=("inputs", "out"), batch=_rn_batch)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing dims ``normalized_shape``:
    ``(x - mean) / sqrt(var + eps) * weight + bias`` (biased variance), PyTorch's.

    Args:
        input (Tensor): (*, *normalized_shape) float32/float64.
        normalized_shape (int or sequence of int): the trailing shape.
        weight, bias (Tensor, optional): of shape normalized_shape.
        eps (float): default 1e-5.

    Raises:
        RuntimeError: an input whose trailing shape differs (PyTorch's "Given
        normalized_shape=..., expected input with shape [*, ...]"), weight or bias
        of another shape or dtype (PyTorch's "mixed dtype"), integer input.
    """
    input = _check_ln(input)
    if isinstance(normalized_shape, (int, np.integer)) and not isinstance(
            normalized_shape, bool):
        normalized_shape = (int(normalized_shape),)
    try:
        if isinstance(normalized_shape, str):
            raise TypeError
        ns = tuple(operator.index(d) for d in normalized_shape)
    except TypeError:
        raise TypeError(f"layer_norm(): normalized_shape must be an int or a sequence of "
                        f"ints, got {normalized_shape!r}") from None
    eps = _float_arg(eps, "layer_norm", "eps")
    shape = tuple(input.shape)
    if not ns or len(ns) > len(shape) or shape[len(shape) - len(ns):] != ns:
        raise RuntimeError(f"layer_norm(): Given normalized_shape={list(ns)}, expected "
                           f"input with shape [*, {', '.join(map(str, ns))}], but got input "
                           f"of size{list(shape)}")
    d = math.prod(ns)
    w = _affine_arg(weight, ns, input, "layer_norm", "weight", 1.0)
    b = _affine_arg(bias, ns, input, "layer_norm", "bias", 0.0)
    if d == 0:
        return input * 1.0                  # nothing to normalise: an empty copy
    return apply(_layer_norm, (input, w, b),
                 {"G": 1, "Cg": d, "K": 1, "eps": eps, "cache": {}, "chan": False})


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise (N, C, *) input over groups of C/num_groups channels (and all of
    *), then ``* weight[c] + bias[c]`` per channel (PyTorch's).

    Raises:
        RuntimeError: C not divisible by num_groups (PyTorch's message), fewer
        than 2 dims, weight or bias not (C,) or not of the input's dtype,
        integer input.
    """
    input = _check_gn(input)
    if isinstance(num_groups, bool) or not isinstance(num_groups, (int, np.integer)):
        raise TypeError(f"group_norm(): argument 'num_groups' must be int, not "
                        f"{type(num_groups).__name__}")
    eps = _float_arg(eps, "group_norm", "eps")
    if input.ndim < 2:
        raise RuntimeError(f"group_norm(): Expected at least 2 dimensions for input tensor "
                           f"but received {input.ndim}")
    n, c, k = _nck(tuple(input.shape))
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError(f"group_norm(): Expected number of channels in input to be "
                           f"divisible by num_groups, but got input of shape "
                           f"{list(input.shape)} and num_groups={num_groups}")
    w = _affine_arg(weight, (c,), input, "group_norm", "weight", 1.0)
    b = _affine_arg(bias, (c,), input, "group_norm", "bias", 0.0)
    G = int(num_groups)
    if k == 0 or n == 0:
        return input * 1.0                  # nothing to normalise: an empty copy
    return apply(_group_norm, (input, w, b),
                 {"G": G, "Cg": c // G, "K": k, "eps": eps, "cache": {}, "chan": True})


def layer_norm_backward(grad_output, input, weight, eps=1e-5):
    """``Q(g * weight)`` over the trailing ``weight.shape`` dims (``Q(u) = rstd (u -
    mean(u) - xhat mean(u xhat))``): layer_norm's input gradient, fused.  Internal
    derivative kernel.

    Raises:
        RuntimeError: shapes that differ, a weight that is not the input's
        trailing shape, mixed dtypes.
    """
    g, x, w = _check_lnb(grad_output, input, weight)
    _same_dtypes("layer_norm_backward", g, x, w)
    ws = tuple(w.shape)
    if not ws or tuple(x.shape[x.ndim - len(ws):]) != ws or len(ws) > x.ndim or \
            math.prod(ws) == 0:
        raise RuntimeError(f"layer_norm_backward(): weight {list(ws)} must be the input's "
                           f"non-empty trailing shape, input {list(x.shape)}")
    return _rnb(g, x, w, 1, math.prod(ws), 1, _float_arg(eps, "layer_norm_backward", "eps"),
                {}, False)
