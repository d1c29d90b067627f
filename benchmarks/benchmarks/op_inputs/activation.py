"""Benchmark inputs of the activations and clamp (see bench_ops.OPS)."""
import tensorplay as tp
from tensorplay._ops.activation import (elu_backward, gelu_backward, hardsigmoid_backward,
                                        hardswish_backward, leaky_relu_backward,
                                        logsigmoid_backward, mish_backward, silu_backward,
                                        softplus_backward)
from tensorplay._ops.clamp import clamp_backward, nan_to_num_backward

from ..common import array
from ._base import _one, _two

F = tp.nn.functional

OPS = {
    "softplus": (_one(), F.softplus),
    "silu": (_one(), F.silu),
    "gelu": (_one(), F.gelu),
    "leaky_relu": (_one(), F.leaky_relu),
    "elu": (_one(), F.elu),
    "hardsigmoid": (_one(), F.hardsigmoid),
    "hardswish": (_one(), F.hardswish),
    "mish": (_one(), F.mish),
    "logsigmoid": (_one(), F.logsigmoid),
    "clamp": (_one(), lambda x: x.clamp(-0.5, 0.5)),
    "nan_to_num": (_one(), tp.nan_to_num),
    "softplus_backward": (_two(), softplus_backward),
    "silu_backward": (_two(), silu_backward),
    "gelu_backward": (_two(), gelu_backward),
    "leaky_relu_backward": (_two(), leaky_relu_backward),
    "elu_backward": (_two(), elu_backward),
    "hardsigmoid_backward": (_two(), hardsigmoid_backward),
    "hardswish_backward": (_two(), hardswish_backward),
    "mish_backward": (_two(), mish_backward),
    "logsigmoid_backward": (_two(), logsigmoid_backward),
    "nan_to_num_backward": (_two(), nan_to_num_backward),
    "clamp_backward": (lambda n, d: (array((n,), d), array((n,), d), array((), d, -1.0, -0.5),
                                     array((), d, 0.5, 1.0)),
                       lambda g, x, lo, hi: clamp_backward(g, x, lo, hi, 0, 1, 1)),
}
