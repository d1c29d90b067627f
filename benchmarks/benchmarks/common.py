"""Shared, seeded inputs for the benchmark suite.

Must not be changed -- only appended (numpy's rule): changing an input changes
every result recorded against it.
"""
import numpy as np

import tensorplay as tp

SIZES = [1_000, 1_000_000]            # elements of the main operand
DTYPES = ["float32", "float64"]


def rng():
    return np.random.default_rng(1234)


def array(shape, dtype, low=None, high=None):
    r = rng()
    a = r.uniform(low, high, shape) if low is not None else r.standard_normal(shape)
    return tp.from_numpy(np.array(a, dtype=dtype, order="C"))   # keeps 0-d as 0-d


def square(n):
    """The (m, m) shape with m*m close to n."""
    m = max(1, int(round(n ** 0.5)))
    return (m, m)
