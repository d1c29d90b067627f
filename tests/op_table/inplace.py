"""Op-table row of the in-place machinery's primitive: ``copy_slices`` (the node an
in-place op through a view gives its base, PyTorch's ``CopySlices``;
tensorplay/autograd/_inplace.py).  The in-place methods themselves are tested in
tests/test_inplace.py."""
import hypothesis.strategies as st
import numpy as np

from tensorplay._ops.shape import check_index
from tensorplay._ops.inplace import copy_slices

from ._base import Fuzz, OpSpec, _normal, fixed_samples
from .core import _basic_key


def _copy_slices_ref(x, src, key):
    out = np.array(x, copy=True)
    out[key] = src
    return out


def _copy_slices_shapes(draw):
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
    key = _basic_key(draw, shape)
    _LAST[:] = [key]
    return [shape, np.zeros(shape)[check_index(key, shape)].shape]


_LAST = []        # the key the last shape draw chose, for its kwargs


def _torch_copy_slices(T, x, src, key):
    y = x.clone()
    y[key] = src
    return y


SPECS = [
    OpSpec("copy_slices", copy_slices, _copy_slices_ref,
           fixed_samples(("slice", [(_normal, (5, 4)), (_normal, (2, 4))], {"key": slice(1, 3)}),
                         ("int", [(_normal, (3, 4)), (_normal, (4,))], {"key": 1}),
                         ("0d", [(_normal, (3, 4)), (_normal, ())], {"key": (1, 2)}),
                         ("step_none", [(_normal, (4, 5)), (_normal, (1, 2, 5))],
                          {"key": (None, slice(0, 4, 2))}),
                         ("all", [(_normal, (2, 3)), (_normal, (2, 3))], {"key": Ellipsis}),
                         ("noncontig", [(_normal, (3, 4)), (_normal, (2,))],
                          {"key": (slice(0, 2), 1)})),
           fuzz=Fuzz("copy_slices", ("input", "src"), shapes=_copy_slices_shapes,
                     kwargs=lambda draw, arrays: {"key": _LAST[0]},
                     base=lambda ts, kw: [ts[0], ts[1], kw["key"]]),
           torch=_torch_copy_slices),
]
