"""Benchmark inputs of the shape family (tensorplay/_ops/shape_join.py, shape_more.py)."""
import numpy as np

import tensorplay as tp

from ..common import array, square
from ._base import _mat, _one, _two


def _ri_reps(x):
    return tp.from_numpy(np.arange(x.shape[0]) % 3)


OPS = {
    "cat": (_two(), lambda a, b: tp.cat([a, b])),
    "flip": (_mat, lambda x: x.flip(0, 1)),
    "roll": (_mat, lambda x: x.roll((1, 2), (0, 1))),
    "tril": (_mat, lambda x: x.tril()),
    "triu": (_mat, lambda x: x.triu(1)),
    "diagonal": (_mat, lambda x: x.diagonal()),
    "diagonal_backward": (lambda n, d: (array((square(n)[0],), d),), lambda x: x.diag_embed()),
    "repeat_interleave": (_one(), lambda x: x.repeat_interleave(_ri_reps(x))),
    "repeat_interleave_backward": (_one(), lambda x: x.repeat_interleave(_ri_reps(x))),
}
