"""Benchmark inputs of the second group of reductions (see bench_ops.OPS)."""
import numpy as np

import tensorplay as tp
from tensorplay._ops.gather import gather_backward
from tensorplay._ops.reduce_stats import prod_backward

from ..common import array, square
from ._base import _mat


def _mat_index(n, d):
    """(m, m) values and an (m, m) int64 index into dim 0 (a permutation per column)."""
    m = square(n)[0]
    idx = np.argsort(np.random.default_rng(0).random((m, m)), axis=0)
    return (array((m, m), d), tp.from_numpy(idx))


def _prod_inputs(n, d):
    m = square(n)[0]
    return (array((m,), d), array((m, m), d, 0.9, 1.1))


OPS = {
    "amax": (_mat, lambda x: x.amax(dim=0)),
    "amin": (_mat, lambda x: x.amin(dim=1)),
    "gather": (_mat_index, lambda x, i: tp.gather(x, 0, i)),
    "gather_backward": (_mat_index, lambda g, i: gather_backward(g, 0, i, g.shape)),
    "prod": (lambda n, d: (array(square(n), d, 0.9, 1.1),), lambda x: x.prod(dim=0)),
    "prod_backward": (_prod_inputs, lambda g, x: prod_backward(g, x, 0)),
}
