"""Convolution modules (PyTorch's ``torch.nn.modules.conv``): ``Conv1d``,
``Conv2d``, ``ConvTranspose1d``, ``ConvTranspose2d``, thin wrappers over
``nn.functional.conv*`` with PyTorch's arguments, weight layout and default
initialisation (weight ``kaiming_uniform_(a=sqrt(5))``, bias U(-1/sqrt(fan_in),
1/sqrt(fan_in)) with fan_in from the weight).

``padding_mode`` other than ``'zeros'`` pads with ``nn.functional.pad`` first
(``'reflect'``, ``'replicate'``, ``'circular'`` where pad has it) and then
convolves without padding, as PyTorch.
"""
import math

import tensorplay
from tensorplay.nn import functional as F
from tensorplay.nn import init
from tensorplay.nn.modules.module import Module
from tensorplay.nn.parameter import Parameter

__all__ = ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d"]


def _ntuple(n, name):
    def parse(x):
        if isinstance(x, (tuple, list)):
            if len(x) != n:
                raise ValueError(f"{name}: expected {n} values, got {tuple(x)}")
            return tuple(x)
        return (x,) * n
    return parse


def _reverse_repeat_tuple(t, n):
    """``(a, b) -> (b, b, a, a)`` for n=2: F.pad's order, last dim first."""
    return tuple(x for x in reversed(t) for _ in range(n))


_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


class _ConvNd(Module):
    """Shared constructor, initialisation and repr of the convolutions."""
    _n = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, bias, padding_mode, device=None,
                 dtype=None):
        super().__init__()
        name = type(self).__name__
        for arg, v in (("in_channels", in_channels), ("out_channels", out_channels)):
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name}: {arg} must be a positive integer, got {v!r}")
        if isinstance(groups, bool) or not isinstance(groups, int) or groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        tup = _ntuple(self._n, name)
        kernel_size, stride, dilation = tup(kernel_size), tup(stride), tup(dilation)
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = tup(padding)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.transposed = dilation, transposed
        self.output_padding, self.groups = tup(output_padding), groups
        self.padding_mode = padding_mode
        if isinstance(padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size,
                                   range(len(kernel_size) - 1, -1, -1)):
                    total = d * (k - 1)
                    left = total // 2
                    self._reversed_padding_repeated_twice[2 * i] = left
                    self._reversed_padding_repeated_twice[2 * i + 1] = total - left
        else:
            self._reversed_padding_repeated_twice = list(_reverse_repeat_tuple(padding, 2))
        shape = ((in_channels, out_channels // groups) if transposed
                 else (out_channels, in_channels // groups)) + kernel_size
        kw = {"dtype": dtype, "device": device}
        self.weight = Parameter(tensorplay.empty(shape, **kw))
        if bias:
            self.bias = Parameter(tensorplay.empty((out_channels,), **kw))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """PyTorch's default initialisation (see the module docstring)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.kernel_size):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def _conv_forward(self, input, weight, bias):
        conv = F.conv1d if self._n == 1 else F.conv2d
        if self.padding_mode != "zeros":
            pad_mode = self.padding_mode
            return conv(F.pad(input, tuple(self._reversed_padding_repeated_twice),
                              mode=pad_mode), weight, bias, self.stride, 0, self.dilation,
                        self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation,
                    self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_ConvNd):
    """1-D convolution (cross-correlation) over (N, C_in, L) or (C_in, L) inputs
    (``torch.nn.Conv1d``).

    Args: ``in_channels, out_channels, kernel_size, stride=1, padding=0
    (int, tuple, 'valid' or 'same'), dilation=1, groups=1, bias=True,
    padding_mode='zeros', device=None, dtype=None``.

    Attributes:
        weight: (out_channels, in_channels / groups, kernel_size).
        bias: (out_channels,) or None.

    Raises:
        ValueError: non-positive or indivisible channels/groups, a bad padding
        string or padding_mode, 'same' with a stride.
    """
    _n = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         False, 0, groups, bias, padding_mode, device, dtype)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C_in, H, W) or (C_in, H, W) inputs
    (``torch.nn.Conv2d``).

    Args: as ``Conv1d``, with int or pair sizes.

    Attributes:
        weight: (out_channels, in_channels / groups, kH, kW).
        bias: (out_channels,) or None.
    """
    _n = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         False, 0, groups, bias, padding_mode, device, dtype)


class _ConvTransposeNd(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding,
                 output_padding, groups, bias, dilation, padding_mode, device, dtype):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f'{type(self).__name__}')
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be an int or a tuple, "
                             f"not {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         True, output_padding, groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size):
        """The output_padding that makes the output ``output_size`` (PyTorch's).

        Raises:
            ValueError: an output_size of the wrong length or out of reach.
        """
        if output_size is None:
            return self.output_padding
        n = self._n
        has_batch_dim = input.dim() == n + 2
        non_spatial = 2 if has_batch_dim else 1
        output_size = list(output_size)
        if len(output_size) == non_spatial + n:
            output_size = output_size[non_spatial:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.dim()}D input, output_size must "
                             f"have {n} or {non_spatial + n} elements (got "
                             f"{len(output_size)})")
        min_sizes, max_sizes = [], []
        for d in range(n):
            size = ((input.size(d + non_spatial) - 1) * self.stride[d] - 2 * self.padding[d]
                    + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            min_sizes.append(size)
            max_sizes.append(size + self.stride[d] - 1)
        for size, lo, hi in zip(output_size, min_sizes, max_sizes):
            if size < lo or size > hi:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                                 f"range from {min_sizes} to {max_sizes} (for an input of "
                                 f"{list(input.shape[non_spatial:])})")
        return tuple(s - lo for s, lo in zip(output_size, min_sizes))

    def forward(self, input, output_size=None):
        conv = F.conv_transpose1d if self._n == 1 else F.conv_transpose2d
        output_padding = self._output_padding(input, output_size)
        return conv(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                    self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution (``torch.nn.ConvTranspose1d``).

    Args: ``in_channels, out_channels, kernel_size, stride=1, padding=0,
    output_padding=0, groups=1, bias=True, dilation=1, padding_mode='zeros'``
    (only 'zeros'), device=None, dtype=None.

    Attributes:
        weight: (in_channels, out_channels / groups, kernel_size).
    """
    _n = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding,
                         output_padding, groups, bias, dilation, padding_mode, device, dtype)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution (``torch.nn.ConvTranspose2d``).

    Args: as ``ConvTranspose1d``, with int or pair sizes.  ``forward(input,
    output_size=None)``: ``output_size`` picks the output_padding.

    Attributes:
        weight: (in_channels, out_channels / groups, kH, kW).
    """
    _n = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding,
                         output_padding, groups, bias, dilation, padding_mode, device, dtype)
