"""Input makers shared by the benchmark families in this package."""
import numpy as np

from tensorplay import from_numpy  # noqa: F401

from ..common import array, square  # noqa: F401


def _one(lo=None, hi=None):
    return lambda n, d: (array((n,), d, lo, hi),)


def _two(lo=None, hi=None):
    return lambda n, d: (array((n,), d), array((n,), d, lo, hi))


def _three(lo=None, hi=None):
    return lambda n, d: (array((n,), d), array((n,), d, 0.5, 2.0), array((n,), d, lo, hi))


def _mat(n, d):
    return (array(square(n), d),)


def _classes(n, d):
    rows, c = max(1, n // 10), 10
    return (array((rows, c), d), from_numpy(np.arange(rows) % c))
