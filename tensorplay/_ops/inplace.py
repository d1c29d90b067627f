"""The in-place machinery's primitive: ``copy_slices(input, src, key)``, ``input``
with ``input[key]`` replaced by ``src`` -- the node an in-place op through a view
gives the view's base (PyTorch's ``CopySlices``; tensorplay/autograd/_inplace.py
is the mechanism).  Internal: not exported as ``tensorplay.copy_slices``.

The forward is numpy's copy and basic-index assignment (memory-bound: nothing to
gain from a kernel, as for ``getitem_backward``).
"""
import numpy as np

from tensorplay._ops._validate import IndexArg, Signature, TensorArg, declare
from tensorplay._ops.registry import REGISTRY, apply, defop
from tensorplay._ops.shape import check_index
from tensorplay._tensor import Tensor

__all__ = ["copy_slices"]
INTERNAL = ["copy_slices"]                          # the in-place mechanism's node

_wrap = Tensor._wrap
_GETITEM = REGISTRY["getitem"]


# ---------------------------------------------------------------- copy_slices
def _zeros(shape, np_dtype):
    return _wrap(np.zeros(shape, np_dtype))


def _copy_slices_fwd(x, src, key):
    out = np.array(x, order="C", copy=True)
    out[key] = src
    return out


def _copy_slices_jvp(ts, out, x, src, key):
    tx = ts[0] if ts[0] is not None else _zeros(x._data.shape, out._data.dtype)
    tsrc = ts[1] if ts[1] is not None else _zeros(src._data.shape, out._data.dtype)
    return copy_slices(tx, tsrc, key)


# copy_slices(x, src, key): x with x[key] replaced by src.  Linear in (x, src): the
# VJP for x is g with the region zeroed (copy_slices again), for src g[key].
_copy_slices = defop(
    "copy_slices", _copy_slices_fwd,
    vjp=(lambda g, out, x, src, key: apply(
        _copy_slices, (g, _zeros(src.shape, g._data.dtype)), {"key": key}),
         lambda g, out, x, src, key: apply(_GETITEM, (g,), {"key": key})),
    jvp=_copy_slices_jvp)
_copy_slices.node_name = "CopySlices"       # PyTorch's name for the rebased base's node

_check_copy_slices = declare(Signature("copy_slices", TensorArg("input"), TensorArg("src"),
                                       IndexArg("key", check=check_index)))


def copy_slices(input, src, key):
    """A copy of ``input`` with ``input[key]`` replaced by ``src`` (internal: the
    node an in-place op through a view gives its base, PyTorch's ``CopySlices``).

    ``key`` is a basic index (ints, slices, None, Ellipsis); ``src`` has exactly
    the shape of ``input[key]`` and is cast to ``input``'s dtype.  Differentiable
    in both arguments (the gradient of ``input`` is zero inside the region).

    Raises:
        TypeError, IndexError: a bad key or non-Tensor arguments.
        RuntimeError: ``src`` of another shape than ``input[key]``, or of a dtype
            that does not cast to ``input``'s (same kind).
    """
    input, src, key = _check_copy_slices(input, src, key)
    want = input._data[key].shape
    if src._data.shape != want:
        raise RuntimeError(f"copy_slices(): src has shape {list(src._data.shape)}, but "
                           f"the index selects {list(want)} from "
                           f"{list(input._data.shape)}")
    if src._data.dtype != input._data.dtype:
        if not np.can_cast(src._data.dtype, input._data.dtype, casting="same_kind"):
            raise RuntimeError(f"copy_slices(): src of type {src.dtype} can't be cast to "
                               f"input's type {input.dtype}")
        src = src.to(input.dtype)
    return apply(_copy_slices, (input, src), {"key": key})
