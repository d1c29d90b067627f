"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their cells (PyTorch's
``torch.nn.modules.rnn``), built from tensorplay ops.

Parameter names, shapes, gate order and initialisation are PyTorch's, so a torch
``state_dict`` (converted to tensorplay tensors) loads and gives the same
outputs:

* per layer ``k`` and direction (suffix ``''`` or ``'_reverse'``):
  ``weight_ih_l{k}`` (G, in), ``weight_hh_l{k}`` (G, H_out), ``bias_ih_l{k}`` (G,),
  ``bias_hh_l{k}`` (G,) and, for an LSTM with ``proj_size > 0``, ``weight_hr_l{k}``
  (proj_size, H); G = H (RNN), 3H (GRU: r, z, n), 4H (LSTM: i, f, g, o);
* every parameter starts U(-1/sqrt(H), 1/sqrt(H)).

How it runs (tensorplay/nn/modules/_recurrence.py): per layer and direction,
the input projection of all time steps is one matmul (``x W_ih^T + b``, with
``b_hh`` folded in for RNN and LSTM); the recurrence is a Python loop over time
steps of ``h W_hh^T`` plus one fused cell primitive (LSTM, GRU; tensorplay/_ops/
rnn.py) or the activation (RNN), so backward is ordinary autograd through those
ops.  Padded input and ``PackedSequence`` input share that loop.  Dropout
(training only) goes between layers, not after the last, as PyTorch.
"""
import math
import numbers
import warnings

import tensorplay
from tensorplay.nn import functional as F
from tensorplay.nn import init
from tensorplay.nn.modules._recurrence import run_layers
from tensorplay.nn.modules.module import Module
from tensorplay.nn.utils.rnn import PackedSequence
from tensorplay.nn.parameter import Parameter

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _check_size(cls, name, v):
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{name} should be of type int, got: {type(v).__name__}")
    if v <= 0:
        raise ValueError(f"{name} must be greater than zero")
    return v


class RNNBase(Module):
    """The common machinery of ``RNN``, ``LSTM`` and ``GRU`` (``torch.nn.RNNBase``).

    Args:
        mode (str): ``'RNN_TANH'``, ``'RNN_RELU'``, ``'LSTM'`` or ``'GRU'``.
        input_size, hidden_size (int), num_layers (int, default 1), bias (bool,
        default True), batch_first (bool, default False: (L, N, H_in) inputs),
        dropout (float in [0, 1], default 0), bidirectional (bool, default False),
        proj_size (int, LSTM only, default 0), device (CPU only), dtype.

    Raises:
        ValueError: dropout outside [0, 1], sizes <= 0, a bad proj_size, an
        unknown mode.  TypeError: non-int sizes.
    """

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        super().__init__()
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + str(mode))
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        _check_size(type(self), "input_size", input_size)
        _check_size(type(self), "hidden_size", hidden_size)
        if isinstance(num_layers, bool) or not isinstance(num_layers, int):
            raise TypeError(f"num_layers should be of type int, got: "
                            f"{type(num_layers).__name__}")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"dropout option adds dropout after all but last recurrent layer, "
                          f"so non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=3)
        if isinstance(proj_size, bool) or not isinstance(proj_size, int) or proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih_l{}{}", (gate_size, layer_input)),
                          ("weight_hh_l{}{}", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih_l{}{}", (gate_size,)), ("bias_hh_l{}{}", (gate_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr_l{}{}", (proj_size, hidden_size)))
                for fmt, shape in shapes:
                    name = fmt.format(layer, suffix)
                    setattr(self, name, Parameter(tensorplay.empty(shape, dtype=dtype,
                                                                   device=device)))
                    self._flat_weights_names.append(name)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        """The parameters per layer and direction, as PyTorch's ``all_weights``."""
        per = len(self._flat_weights_names) // (self.num_layers * (2 if self.bidirectional
                                                                  else 1))
        w = self._flat_weights
        return [w[i:i + per] for i in range(0, len(w), per)]

    def flatten_parameters(self):
        """A no-op (PyTorch packs weights for cuDNN here)."""

    def reset_parameters(self):
        """Every parameter U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ------------------------------------------------------------ forward pieces
    def _check_features(self, x):
        """The input's dtype and feature size against the weights (torch's errors)."""
        w = self._flat_weights[0]
        if x.dtype != w.dtype:
            raise ValueError(f"{type(self).__name__}: input dtype ({x.dtype}) does not "
                             f"match weight dtype ({w.dtype}). Convert the input: "
                             f"input.to({w.dtype}), or the model: model.to({x.dtype})")
        if x.size(-1) != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {x.size(-1)}")

    def _name(self):
        return type(self).__name__

    def _prepare(self, input):
        """Check ``input``; return it as (L, N, H_in) and whether it was batched."""
        if not isinstance(input, tensorplay.Tensor):
            raise TypeError(f"{self._name()}: input must be a Tensor, not "
                            f"{type(input).__name__}")
        if input.dim() not in (2, 3):
            raise ValueError(f"{self._name()}: Expected input to be 2D or 3D, got "
                             f"{input.dim()}D tensor instead")
        self._check_features(input)
        if input.shape[0 if input.dim() == 2 or not self.batch_first else 1] == 0:
            # PyTorch 2.13 refuses an empty sequence too
            raise RuntimeError(f"{self._name()}: Expected sequence length to be larger than "
                               f"0 in RNN, got input of shape {list(input.shape)}")
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(1)
        elif self.batch_first:
            input = input.transpose(0, 1)
        return input, batched

    def _hidden(self, hx, batched, n, size, dtype, which=""):
        """``hx`` as (L*D, N, size) (zeros when None), checked as PyTorch."""
        expected = (self.num_layers * (2 if self.bidirectional else 1), n, size)
        if hx is None:
            return tensorplay.zeros(expected, dtype=dtype)
        if not batched:
            hx = hx.unsqueeze(1)
        if tuple(hx.shape) != expected:
            raise RuntimeError(f"Expected hidden{which} size {expected}, got "
                               f"{list(hx.shape)}")
        return hx

    def _layer_weights(self, layer, direction):
        suffix = "_reverse" if direction == 1 else ""
        get = lambda fmt: getattr(self, fmt.format(layer, suffix))   # noqa: E731
        w_ih, w_hh = get("weight_ih_l{}{}"), get("weight_hh_l{}{}")
        b_ih = get("bias_ih_l{}{}") if self.bias else None
        b_hh = get("bias_hh_l{}{}") if self.bias else None
        w_hr = get("weight_hr_l{}{}") if self.proj_size > 0 else None
        return w_ih, w_hh, b_ih, b_hh, w_hr

    def _check_packed(self, input):
        data = input.data
        if not isinstance(data, tensorplay.Tensor) or data.dim() != 2:
            raise ValueError(f"{self._name()}: a PackedSequence's data must be 2-D "
                             f"(sum(lengths), input_size), got "
                             f"{getattr(data, 'dim', lambda: '?')()}D")
        self._check_features(data)
        return data

    def _forward(self, input, hx, kinds):
        """The shared forward: ``kinds`` lists (size, label) per state kind (h, or h
        and c); ``hx`` is None or one tensor (or None) per kind.  Returns the
        output (a PackedSequence for a packed input) and the final states."""
        packed = isinstance(input, PackedSequence)
        if packed:
            x = self._check_packed(input)
            sizes = input.batch_sizes.tolist()
            n = sizes[0] if sizes else 0
            batched = True
        else:
            x, batched = self._prepare(input)
            steps, n = x.shape[0], x.shape[1]
            sizes = [n] * steps
            x = x.reshape(steps * n, x.shape[2])
        given = [None] * len(kinds) if hx is None else list(hx)
        states = [self._hidden(h, batched, n, size, x.dtype, label)
                  for h, (size, label) in zip(given, kinds)]
        if packed and input.sorted_indices is not None:
            # the caller's hx is in batch order; the loop runs longest-first
            states = [s.index_select(1, input.sorted_indices) for s in states]
        out, finals = run_layers(self, x, sizes, states)
        if packed:
            if input.unsorted_indices is not None:
                finals = [f.index_select(1, input.unsorted_indices) for f in finals]
            return PackedSequence(out, input.batch_sizes, input.sorted_indices,
                                  input.unsorted_indices), finals
        out = out.reshape(steps, n, out.shape[-1])
        if not batched:
            finals = [f.squeeze(1) for f in finals]
        return self._finish(out, batched), finals

    def _check_hx_dims(self, input, hx, names="hx"):
        batched = isinstance(input, PackedSequence) or (
            isinstance(input, tensorplay.Tensor) and input.dim() == 3)
        want = 3 if batched else 2
        if isinstance(input, tensorplay.Tensor) and input.dim() not in (2, 3):
            return                # _prepare raises the input's own error
        if any(h.dim() != want for h in hx):
            got = (f"{hx[0].dim()}-D tensor" if len(hx) == 1 else
                   "(" + ", ".join(f"{h.dim()}-D" for h in hx) + ") tensors")
            raise RuntimeError(f"For {'batched 3-D' if batched else 'unbatched 2-D'} input, "
                               f"{names} should also be {want}-D but got {got}")

    def _finish(self, out, batched):
        if not batched:
            return out.squeeze(1)
        return out.transpose(0, 1) if self.batch_first else out


class RNN(RNNBase):
    """Elman RNN: ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)``
    (``torch.nn.RNN``), act = tanh or relu.

    Args: ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh',
    bias=True, batch_first=False, dropout=0.0, bidirectional=False, device=None,
    dtype=None)`` (positional order as PyTorch).

    Call: ``rnn(input, hx=None)`` with input (L, N, H_in), (N, L, H_in) when
    batch_first, unbatched (L, H_in), or a ``PackedSequence``; hx (D*num_layers,
    N, H) (zeros when None).  Returns ``(output, h_n)``: output (L, N, D*H)
    (batch_first: (N, L, D*H)), or a PackedSequence for packed input, whose h_n
    holds each sequence's state at its own last step (PyTorch's convention).

    Raises:
        ValueError: an unknown nonlinearity, input not 2-D/3-D or of another
        dtype.  RuntimeError: input_size or hidden shape mismatches (PyTorch's text).
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from "
                             f"'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        if hx is not None:
            self._check_hx_dims(input, [hx])
        out, (h_n,) = self._forward(input, None if hx is None else [hx],
                                    [(self.hidden_size, "")])
        return out, h_n


class LSTM(RNNBase):
    """Long short-term memory (``torch.nn.LSTM``), gates i, f, g, o:
    ``c_t = f c_{t-1} + i g``, ``h_t = o tanh(c_t)`` (times ``W_hr^T`` when
    ``proj_size > 0``).

    Args: ``LSTM(input_size, hidden_size, num_layers=1, bias=True,
    batch_first=False, dropout=0.0, bidirectional=False, proj_size=0, device=None,
    dtype=None)``.

    Call: ``lstm(input, (h_0, c_0)=None)``, input as for ``RNN`` (a tensor or a
    ``PackedSequence``); returns ``(output, (h_n, c_n))``; h has size proj_size
    when projecting, else hidden_size.

    Raises: as ``RNN``.
    """

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input, hx=None):
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if hx is not None:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError("LSTM: hx must be a tuple (h_0, c_0)")
            self._check_hx_dims(input, list(hx), "hx and cx")
        out, (h_n, c_n) = self._forward(input, hx, [(real_hidden, "[0]"),
                                                    (self.hidden_size, "[1]")])
        return out, (h_n, c_n)


class GRU(RNNBase):
    """Gated recurrent unit (``torch.nn.GRU``), gates r, z, n:
    ``n = tanh(W_in x + b_in + r (W_hn h + b_hn))``, ``h' = (1 - z) n + z h``.

    Args: ``GRU(input_size, hidden_size, num_layers=1, bias=True,
    batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None)``.

    Call and returns as ``RNN``.
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    forward = RNN.forward


# ---------------------------------------------------------------- cells
class RNNCellBase(Module):
    """The parameters of one recurrent step: ``weight_ih`` (G, input_size),
    ``weight_hh`` (G, hidden_size), ``bias_ih`` and ``bias_hh`` (G,), all
    U(-1/sqrt(H), 1/sqrt(H)) (``torch.nn.RNNCellBase``)."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        _check_size(type(self), "input_size", input_size)
        _check_size(type(self), "hidden_size", hidden_size)
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        g = num_chunks * hidden_size
        kw = {"dtype": dtype, "device": device}
        self.weight_ih = Parameter(tensorplay.empty((g, input_size), **kw))
        self.weight_hh = Parameter(tensorplay.empty((g, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(tensorplay.empty((g,), **kw))
            self.bias_hh = Parameter(tensorplay.empty((g,), **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Every parameter U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def _prepare(self, input, hx, name):
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D "
                             f"instead")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {hx.dim()}D "
                             f"instead")
        if input.size(-1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(-1)} "
                               f"expected {self.input_size}")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = tensorplay.zeros((input.shape[0], self.hidden_size), dtype=input.dtype)
        elif not batched:
            hx = hx.unsqueeze(0)
        if tuple(hx.shape) != (input.shape[0], self.hidden_size):
            raise RuntimeError(f"hidden has inconsistent size: got {list(hx.shape)}, "
                               f"expected {[input.shape[0], self.hidden_size]}")
        return input, hx, batched

    def _gates(self, x, h):
        gi = x.matmul(self.weight_ih.mT)
        gh = h.matmul(self.weight_hh.mT)
        if self.bias:
            gi, gh = gi + self.bias_ih, gh + self.bias_hh
        return gi, gh


class RNNCell(RNNCellBase):
    """One Elman step: ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``.

    Args: ``RNNCell(input_size, hidden_size, bias=True, nonlinearity='tanh')``.
    Call: ``cell(input, hx=None)``, input (N, H_in) or (H_in,); returns h'.
    """

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh",
                 device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, h, batched = self._prepare(input, hx, "RNNCell")
        gi, gh = self._gates(x, h)
        act = F.tanh if self.nonlinearity == "tanh" else F.relu
        h = act(gi + gh)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step (gates i, f, g, o).

    Call: ``cell(input, (h, c)=None)``; returns ``(h', c')``.
    """

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        if hx is None:
            h = c = None
        else:
            h, c = hx
        x, h, batched = self._prepare(input, h, "LSTMCell")
        if c is None:
            c = tensorplay.zeros(tuple(h.shape), dtype=x.dtype)
        elif not batched:
            c = c.unsqueeze(0)
        if tuple(c.shape) != tuple(h.shape):
            raise RuntimeError(f"cell state has inconsistent size: got {list(c.shape)}, "
                               f"expected {list(h.shape)}")
        gi, gh = self._gates(x, h)
        i, f, g, o = (gi + gh).chunk(4, 1)
        c = F.sigmoid(f) * c + F.sigmoid(i) * F.tanh(g)
        h = F.sigmoid(o) * F.tanh(c)
        if not batched:
            h, c = h.squeeze(0), c.squeeze(0)
        return h, c


class GRUCell(RNNCellBase):
    """One GRU step (gates r, z, n).

    Call: ``cell(input, hx=None)``; returns h'.
    """

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        x, h, batched = self._prepare(input, hx, "GRUCell")
        gi, gh = self._gates(x, h)
        i_r, i_z, i_n = gi.chunk(3, 1)
        h_r, h_z, h_n = gh.chunk(3, 1)
        r = F.sigmoid(i_r + h_r)
        z = F.sigmoid(i_z + h_z)
        n = F.tanh(i_n + r * h_n)
        h = n + z * (h - n)
        return h if batched else h.squeeze(0)
