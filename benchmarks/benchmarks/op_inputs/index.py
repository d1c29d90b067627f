"""Benchmark inputs of the indexing family (tensorplay/_ops/index.py, scatter.py):
x[idx] with n // 10 random indices, index_put with accumulation."""
import numpy as np

import tensorplay as tp

from ..common import array


def _idx(n, m=None):
    rng = np.random.default_rng(0)
    return tp.from_numpy(rng.integers(0, n, max(1, (m or n // 10))))


OPS = {
    "index": (lambda n, d: (array((n,), d), _idx(n)), lambda x, i: x[i]),
    "index_put": (lambda n, d: (array((n,), d), array((max(1, n // 10),), d), _idx(n)),
                  lambda x, v, i: tp.index_put(x, (i,), v, accumulate=True)),
}
