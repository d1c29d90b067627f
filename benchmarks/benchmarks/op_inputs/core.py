"""Benchmark inputs of the first primitives (see bench_ops.OPS)."""
import numpy as np

import tensorplay as tp
from tensorplay._ops.elementwise import (div_backward, div_backward_other, mul_backward,
                                         pow_backward_base, pow_backward_exponent,
                                         relu_backward, sigmoid_backward, sqrt_backward,
                                         tanh_backward)
from tensorplay._ops.nn import log_softmax_backward, nll_loss_backward
from tensorplay._ops.shape import check_index, getitem_backward

from ..common import array, square
from ._base import _classes, _mat, _one, _three, _two

_KEY = check_index((slice(None, None, 2),), (2,))

OPS = {
    "neg": (_one(), lambda x: -x),
    "exp": (_one(), tp.exp),
    "log": (_one(0.5, 2.0), tp.log),
    "sqrt": (_one(0.5, 2.0), tp.sqrt),
    "tanh": (_one(), tp.tanh),
    "sigmoid": (_one(), tp.sigmoid),
    "relu": (_one(), tp.relu),
    "tanh_backward": (_two(-0.9, 0.9), tanh_backward),
    "sigmoid_backward": (_two(0.1, 0.9), sigmoid_backward),
    "relu_backward": (_two(), relu_backward),
    "mul_backward": (_two(), mul_backward),
    "div_backward": (_two(0.5, 2.0), div_backward),
    "sqrt_backward": (_two(0.5, 2.0), sqrt_backward),
    "div_backward_other": (_three(0.5, 2.0), div_backward_other),
    "pow_backward_base": (_three(-1.5, 1.5), pow_backward_base),
    "pow_backward_exponent": (_three(0.5, 2.0), pow_backward_exponent),
    "add": (_two(), tp.add),
    "sub": (_two(), tp.sub),
    "mul": (_two(), tp.mul),
    "div": (_two(0.5, 2.0), tp.div),
    "pow": (_two(0.5, 2.0), lambda a, b: tp.pow(b, a)),
    "where": (_two(), lambda a, b: tp.where(a > 0, a, b)),
    "sum": (_mat, lambda x: x.sum(dim=0)),
    "mean": (_mat, lambda x: x.mean(dim=1)),
    "matmul": (lambda n, d: (array(square(n // 10 or 1), d), array(square(n // 10 or 1), d)),
               tp.matmul),
    "reshape": (_mat, lambda x: x.T.reshape(-1)),
    "view": (_mat, lambda x: x.view(-1)),
    "permute": (_mat, lambda x: x.permute(1, 0)),
    "expand": (lambda n, d: (array((1, square(n)[1]), d),),
               lambda x: x.expand(x.shape[1], x.shape[1])),
    "getitem": (_one(), lambda x: x[::2]),
    "getitem_backward": (_one(), lambda g: getitem_backward(g, (2 * g.shape[0],), _KEY)),
    "stack": (_two(), lambda a, b: tp.stack([a, b])),
    "clone": (_one(), lambda x: x.clone()),
    "_to_copy": (_one(), lambda x: x.to(x.dtype, copy=True)),
    "log_softmax": (_mat, lambda x: x.log_softmax(1)),
    "log_softmax_backward": (lambda n, d: (array(square(n), d), array(square(n), d, -3, 0)),
                             lambda g, y: log_softmax_backward(g, y, 1)),
    "nll_loss": (_classes, tp.nn.functional.nll_loss),
    "nll_loss_backward": (lambda n, d: (array((), d),
                                        tp.from_numpy(np.arange(max(1, n // 10)) % 10)),
                          lambda g, t: nll_loss_backward(g, t, 10)),
}
