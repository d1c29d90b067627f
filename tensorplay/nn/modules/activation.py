"""Activation modules (PyTorch's ``torch.nn.modules.activation``): thin wrappers
over ``tensorplay.nn.functional`` with PyTorch's constructor arguments, defaults
and ``repr``.

PReLU and Softmax2d, which ``nn.functional`` does not have as such, are
compositions of public ops here (Softmin, Softsign, Tanhshrink, Threshold,
Hardshrink, Softshrink and GLU call the functional forms, in
``tensorplay/_ops/nn_more.py``), with the derivative conventions PyTorch uses at the kinks
(the branch taken by the comparison, e.g. PReLU's ``x > 0``).
"""
import warnings

import tensorplay
from tensorplay.nn import functional as F
from tensorplay.nn.modules.module import Module
from tensorplay.nn.parameter import Parameter

__all__ = ["ReLU", "ReLU6", "Sigmoid", "Tanh", "SiLU", "Mish", "GELU", "ELU", "CELU", "SELU",
           "LeakyReLU", "Hardtanh", "Hardsigmoid", "Hardswish", "Softplus", "LogSigmoid",
           "Softmax", "LogSoftmax", "Softmin", "Softmax2d", "Softsign", "Tanhshrink",
           "Threshold", "Hardshrink", "Softshrink", "PReLU", "GLU"]


def _inplace_str(inplace, first=False):
    if not inplace:
        return ""
    return "inplace=True" if first else ", inplace=True"


class _Inplace(Module):
    """An activation whose only argument is ``inplace`` (default False)."""
    _fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace, first=True)


class ReLU(_Inplace):
    """``max(x, 0)`` elementwise (``torch.nn.ReLU``)."""
    _fn = staticmethod(F.relu)


class SELU(_Inplace):
    """``scale * elu(x, alpha)`` with the self-normalising constants."""
    _fn = staticmethod(F.selu)


class SiLU(_Inplace):
    """``x * sigmoid(x)`` (swish)."""
    _fn = staticmethod(F.silu)


class Mish(_Inplace):
    """``x * tanh(softplus(x))``."""
    _fn = staticmethod(F.mish)


class Hardswish(_Inplace):
    """``x * relu6(x + 3) / 6``."""
    _fn = staticmethod(F.hardswish)


class Hardsigmoid(_Inplace):
    """``relu6(x + 3) / 6``."""
    _fn = staticmethod(F.hardsigmoid)


class Sigmoid(Module):
    """``1 / (1 + exp(-x))``."""

    def forward(self, input):
        return F.sigmoid(input)


class Tanh(Module):
    """``tanh(x)``."""

    def forward(self, input):
        return F.tanh(input)


class LogSigmoid(Module):
    """``log(sigmoid(x))``, computed stably."""

    def forward(self, input):
        return F.logsigmoid(input)


class Hardtanh(Module):
    """``clamp(x, min_val, max_val)`` (``torch.nn.Hardtanh``).

    Raises:
        ValueError: ``max_val <= min_val``.
    """

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None,
                 max_value=None):
        super().__init__()
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and rename to "
                          "`min_val`", FutureWarning, stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and rename to "
                          "`max_val`", FutureWarning, stacklevel=2)
            max_val = max_value
        if not max_val > min_val:
            raise ValueError(f"Hardtanh: max_val must be greater than min_val, got "
                             f"min_val={min_val}, max_val={max_val}")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class ReLU6(Hardtanh):
    """``min(max(x, 0), 6)``."""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def forward(self, input):
        return F.relu6(input, self.inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace, first=True)


class GELU(Module):
    """Gaussian error linear unit; ``approximate='tanh'`` for the tanh form."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class ELU(Module):
    """``x > 0 ? x : alpha (exp(x) - 1)``."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class CELU(ELU):
    """``max(0, x) + min(0, alpha (exp(x / alpha) - 1))``."""

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class LeakyReLU(Module):
    """``x > 0 ? x : negative_slope x``."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}{_inplace_str(self.inplace)}"


class Softplus(Module):
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold``."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


def _softmax_dim(name, ndim):
    """PyTorch's implicit dim (with its deprecation warning) when ``dim=None``."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the "
                  f"call to include dim=X as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


class _SoftmaxBase(Module):
    _name = "softmax"

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def _dim(self, input):
        return _softmax_dim(self._name, input.ndim) if self.dim is None else self.dim

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    """``exp(x) / sum(exp(x))`` along ``dim``."""

    def forward(self, input):
        return F.softmax(input, self._dim(input))


class LogSoftmax(_SoftmaxBase):
    """``log(softmax(x))`` along ``dim``, computed stably."""
    _name = "log_softmax"

    def forward(self, input):
        return F.log_softmax(input, self._dim(input))


class Softmin(_SoftmaxBase):
    """``softmax(-x)`` along ``dim``."""
    _name = "softmin"

    def forward(self, input):
        return F.softmin(input, self._dim(input))


class Softmax2d(Module):
    """Softmax over the channels of a (N, C, H, W) or (C, H, W) input.

    Raises:
        ValueError: an input that is not 3-D or 4-D.
    """

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got "
                             f"{input.dim()}D instead")
        return F.softmax(input, -3)


class Softsign(Module):
    """``x / (1 + |x|)``."""

    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(Module):
    """``x - tanh(x)``."""

    def forward(self, input):
        return F.tanhshrink(input)


class Threshold(Module):
    """``x > threshold ? x : value``."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class Hardshrink(Module):
    """``|x| > lambd ? x : 0``."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Softshrink(Module):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0.

    Raises:
        ValueError: ``lambd < 0``.
    """

    def __init__(self, lambd=0.5):
        super().__init__()
        if lambd < 0:
            raise ValueError(f"lambda must be greater or equal to 0, but found to be "
                             f"{lambd}.")
        self.lambd = lambd

    def forward(self, input):
        return F.softshrink(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class PReLU(Module):
    """``x > 0 ? x : a x`` with a learnt slope ``a`` per channel (dim 1) or one
    shared (``num_parameters=1``), initialised to ``init``.

    Attributes:
        weight (Parameter): ``(num_parameters,)``.

    Raises:
        RuntimeError (forward): a channel count that is not ``num_parameters``.
    """

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(tensorplay.empty(num_parameters, dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self):
        """Fill the slopes with ``init``."""
        from tensorplay.nn import init as _init
        _init.constant_(self.weight, self.init)

    def forward(self, input):
        w = self.weight
        n = self.num_parameters
        if input.ndim >= 2 and n != 1:
            if input.shape[1] != n:
                raise RuntimeError(f"PReLU: mismatch of parameter numbers and input channel "
                                   f"size. Found parameter numbers = {n} and channel size = "
                                   f"{input.shape[1]}.")
            w = w.reshape((n,) + (1,) * (input.ndim - 2))
        elif n != 1:
            if input.ndim == 0 or input.shape[0] != n:
                raise RuntimeError(f"PReLU: mismatch of parameter numbers and input channel "
                                   f"size. Found parameter numbers = {n} and channel size = "
                                   f"{input.shape[0] if input.ndim else 1}.")
        return tensorplay.where(input > 0, input, w * input)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class GLU(Module):
    """``a * sigmoid(b)`` where ``a, b`` are the halves of the input along ``dim``.

    Raises:
        RuntimeError (forward): an odd size along ``dim``.
    """

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"
