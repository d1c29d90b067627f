"""Benchmark inputs of the pools, padding and interpolation (see bench_ops.OPS):
(N, 4, 16, 16) images with N * 4 * 16 * 16 close to n."""

import tensorplay as tp
from tensorplay._ops.pool import (adaptive_avg_pool_backward, avg_pool_backward,
                                  max_pool_backward)
from tensorplay._ops.resample import (pad_backward, upsample_linear_backward,
                                      upsample_nearest_backward)

from ..common import array

F = tp.nn.functional


def _images(n, d, side=16):
    return array((max(1, n // (4 * side * side)), 4, side, side), d)


def _img(n, d):
    return (_images(n, d),)


def _small(n, d):
    return (_images(n, d, 8),)


def _pool_grad(n, d):
    x = _images(n, d)
    _, idx = F.max_pool2d(x, 2, return_indices=True)
    return (array(tuple(idx.shape), d), idx)


OPS = {
    "max_pool": (_img, lambda x: F.max_pool2d(x, 2)),
    "max_pool_backward": (_pool_grad, lambda g, idx: max_pool_backward(g, idx, (16, 16))),
    "avg_pool": (_img, lambda x: F.avg_pool2d(x, 2)),
    "avg_pool_backward": (_small, lambda g: avg_pool_backward(g, (16, 16), 2)),
    "adaptive_avg_pool": (_img, lambda x: F.adaptive_avg_pool2d(x, (5, 5))),
    "adaptive_avg_pool_backward": (lambda n, d: (array((max(1, n // 1024), 4, 5, 5), d),),
                                   lambda g: adaptive_avg_pool_backward(g, (16, 16))),
    "pad": (_img, lambda x: F.pad(x, (1, 1, 1, 1), mode="reflect")),
    "pad_backward": (lambda n, d: (_images(n, d, 18),),
                     lambda g: pad_backward(g, (16, 16), (1, 1, 1, 1), "reflect")),
    "upsample_nearest": (_small, lambda x: F.interpolate(x, scale_factor=2)),
    "upsample_nearest_backward": (_img, lambda g: upsample_nearest_backward(g, (8, 8))),
    "upsample_linear": (_small, lambda x: F.interpolate(x, scale_factor=2, mode="bilinear")),
    "upsample_linear_backward": (_img, lambda g: upsample_linear_backward(g, (8, 8))),
}
