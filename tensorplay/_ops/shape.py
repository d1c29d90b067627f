"""Shape primitives: reshape/view, permute, expand, indexing, stack, clone and dtype
casts.  Forward passes are numpy views (no kernel: nothing is computed) except
``reshape`` (the fallback of the public ``reshape`` when the strides need a copy),
``clone``, ``to_dtype``, ``stack`` and ``getitem_backward``, which copy.  Exactly the
primitives registered with ``view=True`` (``view``, ``permute``, ``expand``,
``getitem``) share the version counter of their input, and each of them always
returns a numpy view (``tests/test_boundary.py`` checks it).

``unsqueeze``, ``squeeze``, ``flatten`` and ``*_as`` are compositions over
``view``/``reshape``; ``transpose``, ``.T`` and ``.mT`` over ``permute``.
"""
import math
import operator

import numpy as np

from tensorplay import _dtype
from tensorplay._ops._common import as_tensor_arg
from tensorplay._ops._validate import (BoolArg, DimArg, DimsArg, DtypeArg, IndexArg,
                                       PermArg, Signature, SizesArg, TensorArg,
                                       TensorListArg, declare)
from tensorplay._ops.registry import apply, defop, sum_to_shape
from tensorplay._ops import _batching as _B
from tensorplay._tensor import Tensor

__all__ = ["reshape", "view", "permute", "transpose", "t", "unsqueeze", "squeeze", "expand",
           "expand_as", "flatten", "view_as", "reshape_as", "getitem", "getitem_backward",
           "check_index", "stack", "clone", "to_dtype"]
INTERNAL = ["check_index", "getitem_backward"]     # helpers, not tensorplay.<name>


def _sizes(args, op):
    """Accept ``f(2, 3)`` and ``f((2, 3))`` forms; return a tuple of ints."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    try:
        return tuple(operator.index(s) for s in args)
    except TypeError:
        raise TypeError(f"{op}(): sizes must be integers, got {args!r}") from None


def _infer_shape(shape, numel, op):
    if shape.count(-1) > 1:
        raise RuntimeError(f"{op}(): only one dimension can be inferred, got {list(shape)}")
    if any(s < -1 for s in shape):
        raise RuntimeError(f"{op}(): invalid shape dimension in {list(shape)}")
    known = math.prod(s for s in shape if s != -1)
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"{op}(): shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"{op}(): shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


# reshape and view are two primitives: ``view`` is always a view (it shares the
# version counter, view=True), ``reshape`` is the copying fallback and owns its
# storage and counter (view=False), so an in-place op on a copy cannot trip the
# saved-tensor check of its source.  The public ``reshape`` tries the view first:
# ``ndarray.reshape(copy=False)`` raises ValueError exactly when the strides need a
# copy, before ``apply`` records anything, so the common (view) case costs one
# reshape and no extra check.  (ndarray methods, not np.reshape: a Python-level
# wrapper that costs more than the view itself on small arrays.)
_view = defop("view", lambda x, shape: x.reshape(shape, copy=False),
              vjp=(lambda g, out, x, shape: g.reshape(x.shape),),
              jvp=lambda ts, out, x, shape: ts[0].reshape(shape), view=True, batch=_B.reshape_rule)
# the copy: np.array(x, order="C") always copies, and reshaping that fresh
# C-contiguous array is a view of the copy, never of x
_reshape = defop("reshape", lambda x, shape: np.array(x, order="C").reshape(shape),
                 vjp=(lambda g, out, x, shape: g.reshape(x.shape),),
                 jvp=lambda ts, out, x, shape: ts[0].reshape(shape), batch=_B.reshape_rule)


def reshape(input, *shape):
    """The elements of ``input`` in a new shape (one entry may be -1, inferred).

    A view sharing storage and the version counter with ``input`` when the strides
    allow, otherwise a copy with storage and a version counter of its own
    (PyTorch's ``reshape``): in-place changes to a copy do not count as changes to
    ``input``.

    Raises:
        RuntimeError: when the shape does not match the number of elements.
    """
    as_tensor_arg(input, "reshape")
    shape = _infer_shape(_sizes(shape, "reshape"), input._data.size, "reshape")
    try:
        return apply(_view, (input,), {"shape": shape})
    except ValueError:          # the strides need a copy (raised before any recording)
        return apply(_reshape, (input,), {"shape": shape})


def view(input, *shape):
    """Like ``reshape`` but always a view (shares storage and the version counter).

    Raises:
        RuntimeError: when the strides do not allow a view (use ``reshape``), or the
            shape does not match the number of elements.
        NotImplementedError: ``view(dtype)``.
    """
    as_tensor_arg(input, "view")
    if len(shape) == 1 and isinstance(shape[0], _dtype.dtype):
        raise NotImplementedError("view(dtype) is not supported; use to(dtype)")
    shape = _infer_shape(_sizes(shape, "view"), input._data.size, "view")
    try:
        return apply(_view, (input,), {"shape": shape})
    except ValueError:
        raise RuntimeError(
            f"view(): view size is not compatible with input tensor's size and stride "
            f"(shape {list(input._data.shape)}, strides {list(input.stride())}); at least one "
            f"dimension spans across two contiguous subspaces. Use .reshape(...) instead."
        ) from None


# ---------------------------------------------------------------- argument declarations
# (tensorplay/_ops/_validate.py; reshape and view keep their own checks for now)
def _two_tensors(op):
    return Signature(op, TensorArg("input"), TensorArg("other"))


_check_view_as = declare(_two_tensors("view_as"))
_check_reshape_as = declare(_two_tensors("reshape_as"))
_check_expand_as = declare(_two_tensors("expand_as"))
_check_flatten = declare(Signature("flatten", TensorArg("input"),
                                   DimArg("start_dim", default=0), DimArg("end_dim", default=-1)))
_check_unsqueeze = declare(Signature("unsqueeze", TensorArg("input"), DimArg("dim", extra=1)))
_check_squeeze = declare(Signature("squeeze", TensorArg("input"), DimsArg("dim", default=None)))
_check_permute = declare(Signature("permute", TensorArg("input"), PermArg("dims")))
_check_transpose = declare(Signature("transpose", TensorArg("input"), DimArg("dim0"),
                                     DimArg("dim1")))
_check_expand = declare(Signature("expand", TensorArg("input"), SizesArg("sizes")))
# reshape and view: declared (the fuzzer holds them to it) but not yet called by them
declare(Signature("reshape", TensorArg("input"), SizesArg("shape")))
declare(Signature("view", TensorArg("input"), SizesArg("shape")))
_check_stack = declare(Signature("stack", TensorListArg("tensors"),
                                 DimArg("dim", of="tensors", extra=1, default=0)))
_check_clone = declare(Signature("clone", TensorArg("input")))
_check_to = declare(Signature("to", TensorArg("input"), DtypeArg("dtype"),
                              BoolArg("copy", default=False), public="to_dtype"))


def view_as(input, other):
    """``input.view(other.shape)``.  TypeError for non-Tensor arguments."""
    input, other = _check_view_as(input, other)
    return view(input, other._data.shape)


def reshape_as(input, other):
    """``input.reshape(other.shape)``.  TypeError for non-Tensor arguments."""
    input, other = _check_reshape_as(input, other)
    return reshape(input, other._data.shape)


def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims ``start_dim..end_dim`` into one (a view when possible); a 0-d
    input gives shape (1,).

    Raises:
        TypeError: a non-Tensor input or a non-integer dim.
        IndexError: a dim out of range.  RuntimeError: start_dim after end_dim.
    """
    input, s, e = _check_flatten(input, start_dim, end_dim)
    if input.ndim == 0:
        return reshape(input, (1,))
    if s > e:
        raise RuntimeError(f"flatten(): start_dim ({start_dim}) cannot come after end_dim "
                           f"({end_dim})")
    shp = input._data.shape
    return reshape(input, shp[:s] + (math.prod(shp[s:e + 1]),) + shp[e + 1:])


def unsqueeze(input, dim):
    """A view with a size-1 dim inserted at ``dim`` (in ``[-ndim-1, ndim]``).

    Raises:
        TypeError: a non-Tensor input or a non-integer dim.  IndexError: dim out of range.
    """
    input, d = _check_unsqueeze(input, dim)
    shp = input._data.shape
    return view(input, shp[:d] + (1,) + shp[d:])


def squeeze(input, dim=None):
    """A view with size-1 dims removed: all of them, or those in ``dim`` (an int or a
    tuple); a named dim whose size is not 1 is left alone (PyTorch's behaviour).

    Raises:
        TypeError: a non-Tensor input or a non-integer dim.
        IndexError: a dim out of range.  RuntimeError: a repeated dim.
    """
    input, dims = _check_squeeze(input, dim)
    shp = input._data.shape
    dims = {d for d in dims if shp[d] == 1}
    return view(input, tuple(s for i, s in enumerate(shp) if i not in dims))


# permute: VJP applies the inverse permutation.
_permute = defop("permute", lambda x, dims: np.transpose(x, dims),
                 vjp=(lambda g, out, x, dims: g.permute(tuple(np.argsort(dims).tolist())),),
                 jvp=lambda ts, out, x, dims: ts[0].permute(dims), view=True,
                 batch=_B.permute_rule)


def permute(input, *dims):
    """A view with the dims reordered: output dim i is input dim ``dims[i]``.

    Raises:
        TypeError: a non-Tensor input or non-integer dims.
        IndexError: a dim out of range.
        RuntimeError: when ``dims`` is not a permutation of ``range(ndim)``.
    """
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    input, dims = _check_permute(input, dims)
    return apply(_permute, (input,), {"dims": dims})


def transpose(input, dim0, dim1):
    """A view with dims ``dim0`` and ``dim1`` swapped.

    Raises:
        TypeError: a non-Tensor input or a non-integer dim.  IndexError: dim out of range.
    """
    input, d0, d1 = _check_transpose(input, dim0, dim1)
    n = input.ndim
    dims = list(range(n))
    if n:
        dims[d0], dims[d1] = dims[d1], dims[d0]
    return apply(_permute, (input,), {"dims": tuple(dims)})


_check_t = declare(Signature("t", TensorArg("input")))


def t(input):
    """``input`` with dims 0 and 1 swapped, for tensors of at most 2 dims (0-d and
    1-d tensors come back as a view unchanged), as ``torch.t``.  A composition over
    ``permute``: a view, differentiable in both modes.

    Raises:
        TypeError: a non-Tensor input.  RuntimeError: more than 2 dims (use
            ``transpose`` or ``.mT``).
    """
    input = _check_t(input)
    n = input._data.ndim
    if n > 2:
        raise RuntimeError(f"t(): expects a tensor with <= 2 dimensions, but input is {n}D")
    return apply(_permute, (input,), {"dims": tuple(range(n))[::-1]})


# expand: VJP sums the cotangent back to the input's shape (in the registry).
_expand = defop("expand", lambda x, shape: np.broadcast_to(x, shape),
                vjp=(lambda g, out, x, shape: sum_to_shape(g, x.shape),),
                jvp=lambda ts, out, x, shape: ts[0].expand(shape), view=True, batch=_B.expand_rule)


def expand(input, *sizes):
    """A read-only broadcast view of ``input`` with the given sizes.

    -1 keeps a dim's size; new dims may be added in front; only size-1 dims can grow.

    Raises:
        TypeError: a non-Tensor input or non-integer sizes.
        RuntimeError: when a non-singleton dim would change, or fewer sizes than dims.
    """
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    input, sizes = _check_expand(input, sizes)
    shp = input._data.shape
    if len(sizes) < len(shp):
        raise RuntimeError(f"expand(): the number of sizes provided ({len(sizes)}) must be "
                           f"greater or equal to the number of dimensions in the tensor "
                           f"({len(shp)})")
    lead = len(sizes) - len(shp)
    target = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"expand(): the expanded size {s} is not allowed in a "
                                   f"leading, non-existing dimension {i}")
            target.append(s)
            continue
        cur = shp[i - lead]
        if s == -1:
            s = cur
        if cur != s and cur != 1:
            raise RuntimeError(
                f"expand(): the expanded size of the tensor ({s}) must match the existing size "
                f"({cur}) at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  "
                f"Tensor sizes: {list(shp)}")
        target.append(s)
    target = tuple(target)
    if target == shp:
        return apply(_view, (input,), {"shape": target})
    if math.prod(s for s in target if s) * input._data.itemsize >= _MAX_BYTES:
        # numpy refuses a view whose nominal size overflows its index type (even
        # with a zero-size dim), with "array is too big" / "iterator is too large"
        raise RuntimeError(f"expand(): the expanded shape {list(target)} has more elements "
                           f"than an array can index (at most 2**63 bytes)")
    return apply(_expand, (input,), {"shape": target})


_MAX_BYTES = 2 ** 63 - 1


def expand_as(input, other):
    """``input.expand(other.shape)``.  TypeError for non-Tensor arguments."""
    input, other = _check_expand_as(input, other)
    return expand(input, other._data.shape)


# ---------------------------------------------------------------- indexing
def check_index(key, shape, op="__getitem__"):
    """Validate a basic index (ints, slices, None, Ellipsis) against ``shape``.

    Returns the key as a tuple ending in Ellipsis, so numpy returns a view (also
    for all-integer keys, which would otherwise give a scalar copy).

    Raises:
        TypeError: for index types other than int, slice, None and Ellipsis.
        IndexError: for too many indices or an integer out of range.
    """
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    dim = 0
    seen_ellipsis = False
    n_real = len([k for k in key if k is not None and k is not Ellipsis])
    if n_real > len(shape):
        raise IndexError(f"{op}: too many indices for tensor of dimension {len(shape)}")
    for k in key:
        if k is Ellipsis:
            if seen_ellipsis:
                raise IndexError(f"{op}: an index can only have a single ellipsis ('...')")
            seen_ellipsis = True
            out.append(k)
            dim = len(shape) - (n_real - dim)
            continue
        if k is None:
            out.append(k)
            continue
        if isinstance(k, slice):
            for part in (k.start, k.stop, k.step):
                if part is not None:
                    try:
                        operator.index(part)
                    except TypeError:
                        raise TypeError(f"{op}: slice indices must be integers or None, "
                                        f"got {part!r}") from None
            if k.step is not None and operator.index(k.step) <= 0:
                raise ValueError(f"{op}: step must be greater than zero, got {k.step}")
            out.append(k)
            dim += 1
            continue
        if isinstance(k, (bool, np.bool_, list, np.ndarray, Tensor)):
            raise TypeError(f"{op}: only integers, slices, None and Ellipsis are basic "
                            f"indices, got {type(k).__name__} (advanced keys go through "
                            f"tensorplay/_ops/index.py)")
        try:
            i = operator.index(k)
        except TypeError:
            # PyTorch: IndexError for floats and other non-index objects
            raise IndexError(f"{op}: only integers, slices, None and Ellipsis are valid "
                             f"indices, got {type(k).__name__}") from None
        size = shape[dim]
        if not -size <= i < size:
            raise IndexError(f"{op}: index {i} is out of bounds for dimension {dim} "
                             f"with size {size}")
        out.append(i)
        dim += 1
    if not seen_ellipsis:
        out.append(Ellipsis)
    return tuple(out)


def _getitem_backward_fwd(g, shape, key):
    out = np.zeros(shape, g.dtype)
    out[key] = g
    return out


# getitem: a view; VJP scatters the cotangent into zeros of the input's shape.
_getitem = defop("getitem", lambda x, key: x[key],
                 vjp=(lambda g, out, x, key: getitem_backward(g, x.shape, key),),
                 jvp=lambda ts, out, x, key: ts[0][key], view=True, batch=_B.getitem_rule)
# getitem_backward is linear in g; its adjoint is getitem.
_getitem_backward = defop(
    "getitem_backward", _getitem_backward_fwd,
    vjp=(lambda gb, out, g, shape, key: apply(_getitem, (gb,), {"key": key}),),
    jvp=lambda ts, out, g, shape, key: getitem_backward(ts[0], shape, key),
    batch=_B.getitem_backward_rule)


_check_getitem = declare(Signature("getitem", TensorArg("input"),
                                   IndexArg("key", check=check_index)))
_check_getitem_backward = declare(Signature(
    "getitem_backward", TensorArg("grad_output"), SizesArg("shape"),
    IndexArg("key", of="shape", check=lambda k, shape, op: k)))   # keys come checked


_BASIC_TYPES = (int, slice, type(None), type(Ellipsis))


def is_advanced(key):
    """True when ``key`` holds an integer or bool tensor, list, ndarray or a bool:
    an advanced index (``tensorplay/_ops/index.py``)."""
    if type(key) is tuple:
        for k in key:
            if type(k) not in _BASIC_TYPES and isinstance(
                    k, (Tensor, list, np.ndarray, bool, np.bool_)):
                return True
        return False
    return type(key) not in _BASIC_TYPES and isinstance(
        key, (Tensor, list, np.ndarray, bool, np.bool_))


def getitem(input, key):
    """``input[key]``, NumPy/PyTorch indexing.

    Basic keys (ints, slices with positive steps, None, Ellipsis) give a view.
    Keys holding integer tensors, lists or ndarrays (int64/int32; negative
    counts from the end) or bool masks (tensors, lists of bools, bool scalars)
    are advanced: a copy, through the ``index`` primitive (``_ops/index.py``):
    index arrays broadcast together; their dims replace the indexed dims in
    place when those are adjacent, else in front.  As in PyTorch, ints and 0-d
    integer tensors select before the advanced part (``x[0, :, [1, 2]]`` has shape
    ``(x.shape[1], 2)``; NumPy puts the 2 in front).

    Raises:
        IndexError: an index out of range (naming the dim and its size), too many
            indices, a bool mask whose shape does not match the dims it covers,
            index arrays that do not broadcast, a float index tensor, or a
            non-index object such as a float.
        ValueError: a slice step that is not positive (PyTorch has no negative steps).
    """
    if is_advanced(key):
        from tensorplay._ops.index import advanced_getitem
        return advanced_getitem(as_tensor_arg(input, "__getitem__"), key)
    input, key = _check_getitem(input, key)
    return apply(_getitem, (input,), {"key": key})


def getitem_backward(grad_output, shape, key):
    """Zeros of ``shape`` with ``grad_output`` written at ``key``: the VJP of getitem.

    ``key`` is a basic index as ``check_index`` returns it.

    Raises:
        TypeError: a non-Tensor grad_output or a shape that is not a sequence of ints.
        RuntimeError: a grad_output whose shape is not that of ``zeros(shape)[key]``.
    """
    grad_output, shape, key = _check_getitem_backward(grad_output, shape, key)
    want = np.broadcast_to(np.empty((), np.bool_), shape)[key].shape   # no allocation
    if grad_output._data.shape != want:
        raise RuntimeError(f"getitem_backward(): grad_output has shape "
                           f"{list(grad_output._data.shape)}, but the index selects "
                           f"{list(want)} from {list(shape)}")
    return apply(_getitem_backward, (grad_output,), {"shape": shape, "key": key})


# ---------------------------------------------------------------- stack, clone, casts
class _StackVJP:
    """stack's VJP for input i selects slice i along ``dim`` (variadic inputs)."""

    def __getitem__(self, i):
        def rule(g, out, inputs, dim):          # pack_inputs: inputs is one tuple
            return g[(slice(None),) * dim + (i,)]
        return rule


_stack = defop("stack", lambda *xs, dim: np.stack(xs, axis=dim),
               vjp=_StackVJP(),
               jvp=lambda ts, out, *xs, dim: stack(
                   [t if t is not None else Tensor._wrap(np.zeros(x.shape, x._data.dtype))
                    for t, x in zip(ts, xs)], dim),
               pack_inputs=True, batch=_B.join_rule)


def stack(tensors, dim=0):
    """Join same-shaped tensors along a new dim ``dim`` (in ``[-ndim-1, ndim]``).

    Raises:
        TypeError: ``tensors`` not a list or tuple of Tensors; a non-integer dim.
        IndexError: dim out of range.
        RuntimeError: empty sequence, or tensors of different shapes.
    """
    tensors, dim = _check_stack(tensors, dim)
    for i, t in enumerate(tensors):
        if t._data.shape != tensors[0]._data.shape:
            raise RuntimeError(f"stack(): expects each tensor to be equal size, but got "
                               f"{list(tensors[0]._data.shape)} at entry 0 and "
                               f"{list(t._data.shape)} at entry {i}")
    d = tensors[0].dtype
    for t in tensors[1:]:
        d = _dtype.promote_types(d, t.dtype)
    tensors = [t if t.dtype is d else t.to(d) for t in tensors]
    return apply(_stack, tuple(tensors), {"dim": dim})


_clone = defop("clone", lambda x: np.array(x, order="C", copy=True),
               vjp=(lambda g, out, x: g,),
               jvp=lambda ts, out, x: ts[0], batch=_B.leading_rule)


def clone(input):
    """A differentiable copy of ``input`` with its own C-contiguous storage.
    TypeError for a non-Tensor input."""
    return apply(_clone, (_check_clone(input),), {})


# _to_copy: a float->float cast is differentiable; the registry casts the
# cotangent back to the input's dtype, so the rule is the identity.
_to_copy = defop("_to_copy", lambda x, dtype: x.astype(dtype.numpy),
                 vjp=(lambda g, out, x, dtype: g,),
                 jvp=lambda ts, out, x, dtype: ts[0].to(dtype), batch=_B.leading_rule)


def to_dtype(input, dtype, copy=False):
    """``input`` cast to ``dtype``; self when the dtype matches and not ``copy``.

    Float to integer truncates toward zero; the result never requires grad.

    Raises:
        TypeError: a non-Tensor input, a dtype that is not a tensorplay dtype, or a
            copy flag that is not a bool.
    """
    input, dtype, copy = _check_to(input, dtype, copy)
    if input._data.dtype == dtype.numpy and not copy:
        return input
    return apply(_to_copy, (input,), {"dtype": dtype})
