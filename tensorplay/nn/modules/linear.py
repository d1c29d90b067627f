"""``Identity``, ``Linear``, ``Bilinear`` (PyTorch's ``torch.nn.modules.linear``).

Default initialisation as PyTorch: the weight by ``kaiming_uniform_(a=sqrt(5))``,
which is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the bias by U(-1/sqrt(fan_in),
1/sqrt(fan_in)).
"""
import math

from tensorplay import _creation
from tensorplay.nn import functional as F
from tensorplay.nn import init
from tensorplay.nn.modules.module import Module
from tensorplay.nn.parameter import Parameter

__all__ = ["Identity", "Linear", "Bilinear", "LazyLinear"]


def _positive_int(op, name, v, allow_zero=True):
    """``v`` as a non-negative (or positive) int, else PyTorch-style errors."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{op}: argument '{name}' must be int, not {type(v).__name__}")
    if v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{op}: {name} must be {'non-negative' if allow_zero else 'positive'}"
                         f", got {v}")
    return v


def _empty(shape, device, dtype):
    """A new uninitialised parameter tensor (``device``: only the CPU)."""
    return _creation.empty(tuple(shape), dtype=dtype, device=device)


class Identity(Module):
    """Returns its input; takes (and ignores) any constructor arguments."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x W^T + b`` (``torch.nn.Linear``).

    Args:
        in_features (int), out_features (int): sizes of the last dimension.
        bias (bool): learn an additive bias (default True).
        device: only the CPU.  dtype: of the parameters (default float dtype).

    Shape: input ``(*, in_features)``, output ``(*, out_features)``.

    Attributes:
        weight (Parameter): ``(out_features, in_features)``.
        bias (Parameter or None): ``(out_features,)``.

    Raises:
        TypeError / ValueError: sizes that are not non-negative ints.
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = _positive_int("Linear", "in_features", in_features)
        self.out_features = _positive_int("Linear", "out_features", out_features)
        self.weight = Parameter(_empty((out_features, in_features), device, dtype))
        if bias:
            self.bias = Parameter(_empty((out_features,), device, dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """PyTorch's default initialisation (see the module docstring)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """``y = x1^T A x2 + b`` per output feature (``torch.nn.Bilinear``).

    Args:
        in1_features, in2_features, out_features (int); bias (bool, default True).

    Attributes:
        weight: ``(out_features, in1_features, in2_features)``, U(-1/sqrt(in1),
        1/sqrt(in1)); bias: ``(out_features,)``, the same bound.
    """

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features = _positive_int("Bilinear", "in1_features", in1_features)
        self.in2_features = _positive_int("Bilinear", "in2_features", in2_features)
        self.out_features = _positive_int("Bilinear", "out_features", out_features)
        self.weight = Parameter(_empty((out_features, in1_features, in2_features), device,
                                       dtype))
        if bias:
            self.bias = Parameter(_empty((out_features,), device, dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """U(-1/sqrt(in1_features), 1/sqrt(in1_features)) for weight and bias."""
        bound = 1 / math.sqrt(self.weight.size(1)) if self.weight.size(1) > 0 else 0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LazyLinear(Module):
    """Not supported: raises NotImplementedError (tensorplay has no uninitialised
    parameters; give ``in_features`` to ``Linear``)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("LazyLinear: tensorplay has no lazy modules; use "
                                  "Linear(in_features, out_features)")
