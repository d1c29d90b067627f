"""Benchmark input of the in-place machinery's primitive (copy_slices)."""
from tensorplay._ops.shape import check_index
from tensorplay._ops.inplace import copy_slices

from ..common import array

OPS = {
    # half of a vector replaced: a copy of n elements and a write of n/2
    "copy_slices": (lambda n, d: (array((n,), d), array(((n + 1) // 2,), d)),
                    lambda x, s: copy_slices(x, s, check_index(slice(None, None, 2),
                                                               x.shape))),
}
