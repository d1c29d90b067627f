"""Index-valued ops: nonzero, argwhere, searchsorted, bucketize.

They return int64 (int32 with ``out_int32``) indices, with data-dependent shapes
for nonzero/argwhere; never differentiable, so numpy computes them (DESIGN.md:
integer results may use numpy where there is no derivative to carry).
"""
import numpy as np

from tensorplay._ops._common import as_tensor_arg
from tensorplay._ops._validate import BoolArg, Signature, TensorArg, declare
from tensorplay._tensor import Tensor

__all__ = ["nonzero", "argwhere", "searchsorted", "bucketize"]
# int64 results of data-dependent shape, no primitive: checked in tests/test_indexing.py
NO_PRIMITIVE = list(__all__)
METHODS = ["nonzero", "argwhere"]

_I64 = np.dtype(np.int64)


# ---------------------------------------------------------------- index-valued ops
_check_nonzero = declare(Signature("nonzero", TensorArg("input"),
                                   BoolArg("as_tuple", default=False)))


def nonzero(input, *, as_tuple=False):
    """The indices of the non-zero entries of ``input``, in row-major order: an
    int64 tensor of shape (n, ndim), or with ``as_tuple`` a tuple of ndim int64
    vectors (a 0-d input counts as 1-D, as PyTorch).  Never requires grad."""
    input, as_tuple = _check_nonzero(input, as_tuple)
    x = input._data
    if as_tuple:
        return tuple(Tensor._wrap(np.ascontiguousarray(i, _I64))
                     for i in np.nonzero(x.reshape(1) if x.ndim == 0 else x))
    if x.ndim == 0:
        return Tensor._wrap(np.zeros((1 if x else 0, 0), _I64))
    return Tensor._wrap(np.ascontiguousarray(np.argwhere(x), _I64))


_check_argwhere = declare(Signature("argwhere", TensorArg("input")))


def argwhere(input):
    """``nonzero(input)``: the (n, ndim) int64 indices of the non-zero entries."""
    return nonzero(_check_argwhere(input))


_check_searchsorted = declare(Signature(
    "searchsorted", TensorArg("sorted_sequence", "fi"),
    BoolArg("out_int32", default=False), BoolArg("right", default=False)))


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """For each value of ``input`` (a Tensor or a number), the index where it would
    be inserted into ``sorted_sequence`` to keep it sorted: the first such index,
    or the last with ``right=True`` / ``side='right'``.  ``sorted_sequence`` is 1-D,
    or N-D with leading dims equal to input's (one sequence per row).  ``sorter``:
    int64 indices that sort ``sorted_sequence`` along its last dim.  Returns int64
    (int32 with ``out_int32``) of input's shape (0-d for a number); no gradient.

    Raises:
        RuntimeError: leading dims that do not match, right=True with side='left',
            a bad side, a sorter of the wrong shape or dtype.
        IndexError: sorter values out of range.
    """
    seq, out_int32, right = _check_searchsorted(sorted_sequence, out_int32, right)
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"searchsorted(): side can only be 'left' or 'right', got "
                               f"{side!r}")
        if right and side == "left":
            raise RuntimeError("searchsorted(): side and right can't be set to opposites, "
                               "got side of left while right was True")
        right = side == "right"
    scalar = not isinstance(input, Tensor)
    if scalar:
        if not isinstance(input, (int, float, np.integer, np.floating)) or \
                isinstance(input, bool):
            raise TypeError(f"searchsorted(): argument 'input' must be a Tensor or a "
                            f"number, not {type(input).__name__}")
        vals = np.array(input)
    else:
        vals = as_tensor_arg(input, "searchsorted")._data
    s = seq._data
    if s.ndim == 0:
        raise RuntimeError("searchsorted(): boundaries tensor should be 1 dimension or "
                           "the first N-1 dimensions of boundaries tensor and input value "
                           "tensor must match, but we got a 0-d boundaries tensor")
    if s.ndim > 1 and (scalar or vals.ndim != s.ndim or vals.shape[:-1] != s.shape[:-1]):
        raise RuntimeError(f"searchsorted(): boundaries tensor should be 1 dimension or "
                           f"the first N-1 dimensions of boundaries tensor and input value "
                           f"tensor must match, but we got boundaries tensor "
                           f"{list(s.shape)} and input value tensor {list(vals.shape)}")
    if sorter is not None:
        if not isinstance(sorter, Tensor) or sorter._data.dtype.kind not in "iu" or \
                sorter._data.shape != s.shape:
            raise RuntimeError("searchsorted(): sorter must be an int64 tensor of the "
                               "shape of sorted_sequence")
        srt = sorter._data.astype(_I64)
        n = s.shape[-1]
        bad = (srt < 0) | (srt >= n)
        if bad.any():
            raise IndexError(f"searchsorted(): sorter index {int(srt[bad].flat[0])} is out "
                             f"of bounds for size {n}")
        s = np.take_along_axis(s, srt, axis=-1)
    side_ = "right" if right else "left"
    dt = np.result_type(s, vals)
    if s.ndim == 1:
        out = np.searchsorted(s.astype(dt, copy=False), vals.astype(dt, copy=False), side_)
    else:
        rows = s.reshape(-1, s.shape[-1]).astype(dt, copy=False)
        v = vals.reshape(rows.shape[0], -1).astype(dt, copy=False)
        out = np.empty(v.shape, _I64)
        for r in range(rows.shape[0]):
            out[r] = np.searchsorted(rows[r], v[r], side_)
        out = out.reshape(vals.shape)
    return Tensor._wrap(np.asarray(out, np.int32 if out_int32 else _I64).reshape(vals.shape))


_check_bucketize = declare(Signature(
    "bucketize", TensorArg("input", "fi"), TensorArg("boundaries", "fi"),
    BoolArg("out_int32", default=False), BoolArg("right", default=False)))


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each value of ``input`` for the sorted 1-D ``boundaries``:
    ``i`` with ``boundaries[i-1] < x <= boundaries[i]`` (``right=False``) or
    ``boundaries[i-1] <= x < boundaries[i]`` (``right=True``), as PyTorch.  int64
    (int32 with ``out_int32``) of input's shape; no gradient.

    Raises:
        RuntimeError: boundaries that are not 1-D.
    """
    if not isinstance(input, Tensor) and isinstance(input, (int, float)) and \
            not isinstance(input, bool):
        input = Tensor._wrap(np.array(input))
    input, boundaries, out_int32, right = _check_bucketize(input, boundaries, out_int32,
                                                           right)
    if boundaries._data.ndim != 1:
        raise RuntimeError(f"bucketize(): boundaries tensor must be 1 dimension, but got "
                           f"dim({boundaries._data.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)
