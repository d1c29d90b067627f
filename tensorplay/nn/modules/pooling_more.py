"""``MaxUnpool1d/2d``, ``LPPool1d/2d`` (PyTorch's ``torch.nn.modules.pooling``) and
``FractionalMaxPool2d/3d``, which only say they are not implemented."""
from tensorplay.nn import functional as F
from tensorplay.nn.modules.module import Module

__all__ = ["MaxUnpool1d", "MaxUnpool2d", "LPPool1d", "LPPool2d", "FractionalMaxPool2d",
           "FractionalMaxPool3d"]


def _tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


class _MaxUnpoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = _tuple(kernel_size, self._nd)
        self.stride = _tuple(stride if stride is not None else kernel_size, self._nd)
        self.padding = _tuple(padding, self._nd)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """``F.max_unpool1d`` as a module (``torch.nn.MaxUnpool1d``): ``forward(input,
    indices, output_size=None)``."""
    _nd = 1

    def forward(self, input, indices, output_size=None):
        return F.max_unpool1d(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)


class MaxUnpool2d(_MaxUnpoolNd):
    """``F.max_unpool2d`` as a module (``torch.nn.MaxUnpool2d``): ``forward(input,
    indices, output_size=None)``; an out-of-range index raises RuntimeError."""

    def forward(self, input, indices, output_size=None):
        return F.max_unpool2d(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)


class _LPPoolNd(Module):
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def extra_repr(self):
        return ("norm_type={norm_type}, kernel_size={kernel_size}, stride={stride}, "
                "ceil_mode={ceil_mode}".format(**self.__dict__))


class LPPool1d(_LPPoolNd):
    """Power-average pooling over (N, C, L) / (C, L) input (``torch.nn.LPPool1d``)."""

    def forward(self, input):
        return F.lp_pool1d(input, float(self.norm_type), self.kernel_size, self.stride,
                           self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """Power-average pooling over (N, C, H, W) / (C, H, W) input
    (``torch.nn.LPPool2d``)."""

    def forward(self, input):
        return F.lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride,
                           self.ceil_mode)


class FractionalMaxPool2d(Module):
    """Not implemented: constructing one raises NotImplementedError (see
    ``F.fractional_max_pool2d``)."""

    def __init__(self, *args, **kwargs):
        F.fractional_max_pool2d()


class FractionalMaxPool3d(Module):
    """Not implemented: constructing one raises NotImplementedError."""

    def __init__(self, *args, **kwargs):
        F.fractional_max_pool3d()
