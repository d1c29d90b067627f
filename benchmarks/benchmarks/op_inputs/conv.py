"""Benchmark inputs of the convolution primitives (tensorplay/_ops/conv.py): an
(N, 8, 16, 16) image batch with N from the size (n elements of the input), a
3x3 kernel to 16 channels, padding 1."""
import tensorplay as tp
from tensorplay._ops.conv_api import conv2d_weight

from ..common import array

F = tp.nn.functional
_C, _O, _S = 8, 16, 16


def _batch(n):
    return max(1, n // (_C * _S * _S))


def _conv(n, d):
    return (array((_batch(n), _C, _S, _S), d), array((_O, _C, 3, 3), d), array((_O,), d))


def _convt(n, d):
    return (array((_batch(n), _O, _S, _S), d), array((_O, _C, 3, 3), d), array((_C,), d))


def _weight(n, d):
    return (array((_batch(n), _C, _S, _S), d), array((_batch(n), _O, _S, _S), d))


def _unfold(n, d):
    return (array((_batch(n), _C, _S, _S), d),)


def _fold(n, d):
    return (array((_batch(n), _C * 9, _S * _S), d),)


OPS = {
    "conv2d": (_conv, lambda x, w, b: F.conv2d(x, w, b, padding=1)),
    "conv_transpose2d": (_convt, lambda x, w, b: F.conv_transpose2d(x, w, b, padding=1)),
    "conv2d_weight": (_weight, lambda x, g: conv2d_weight(x, (_O, _C, 3, 3), g, padding=1)),
    "im2col": (_unfold, lambda x: F.unfold(x, 3, padding=1)),
    "col2im": (_fold, lambda c: F.fold(c, (_S, _S), 3, padding=1)),
}
