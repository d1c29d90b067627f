"""Joining and splitting: ``cat`` (one primitive) and the compositions over it and
over the view primitives of ``shape.py``.

``cat`` copies (numpy's concatenate into an output from the cache of
``tensorplay/_pool.py``: a memcpy per input, nothing for a kernel to gain; see
docs/DECISIONS.md, "Shape ops").  Everything else here is a composition:

- views over ``getitem`` (basic slices and ints): ``split``, ``chunk``,
  ``tensor_split``, ``unbind``, ``narrow``, ``select`` -- they share storage and
  the version counter with their input, and their derivatives are getitem's;
- views over ``permute``: ``movedim``/``moveaxis``, ``swapaxes``/``swapdims``;
- ``view``/``expand``: ``unflatten``, ``broadcast_to``, ``broadcast_tensors``,
  ``atleast_1d/2d/3d``;
- ``cat``: ``concat``, ``concatenate``, ``hstack``, ``vstack``, ``dstack``,
  ``column_stack``.

A view built on ``getitem`` costs one primitive call, what a dedicated view
primitive would cost.  The backward of a split into k pieces that are all used
allocates k input-sized cotangents (the registry has no multi-output primitive
yet; PyTorch's ``split`` backward is one ``cat``).
"""
import math
import operator

import numpy as np

from tensorplay import _dtype
from tensorplay._ops import shape as _shape
from tensorplay._ops._common import broadcast_shape, normalize_dim
from tensorplay._ops._validate import (DimArg, IntArg, Signature, SizesArg, TensorArg,
                                       TensorListArg, declare)
from tensorplay._ops.registry import apply, defop
from tensorplay._ops import _batching as _B
from tensorplay._pool import MIN_BYTES as POOL_MIN_BYTES
from tensorplay._pool import empty as pool_empty
from tensorplay._tensor import Tensor

__all__ = ["cat", "concat", "concatenate", "hstack", "vstack", "dstack", "column_stack",
           "split", "chunk", "tensor_split", "unbind", "narrow", "select", "movedim",
           "moveaxis", "swapaxes", "swapdims", "unflatten", "broadcast_to",
           "broadcast_tensors", "atleast_1d", "atleast_2d", "atleast_3d"]
METHODS = ["split", "chunk", "tensor_split", "unbind", "narrow", "select", "movedim",
           "moveaxis", "swapaxes", "swapdims", "unflatten", "broadcast_to"]


def _slice_key(dim, index):
    """A basic key selecting ``index`` (an int or a slice) along ``dim``, in the
    form ``check_index`` returns (ending in Ellipsis: numpy then gives a view)."""
    return (slice(None),) * dim + (index, Ellipsis)


def _getitem(x, key):
    return apply(_shape._getitem, (x,), {"key": key})


# ---------------------------------------------------------------- cat
def _cat_fwd(*xs, dim, bounds):
    if None in bounds:                        # skipped legacy empties
        xs = [x for x, b in zip(xs, bounds) if b is not None]
    x0 = xs[0]
    n = bounds[-1][1] if bounds[-1] is not None else offset_end(bounds)
    if x0.itemsize * (x0.size // (x0.shape[dim] or 1)) * n < POOL_MIN_BYTES:
        return np.concatenate(xs, axis=dim)
    out = pool_empty(x0.shape[:dim] + (n,) + x0.shape[dim + 1:], x0.dtype)
    return np.concatenate(xs, axis=dim, out=out)


def offset_end(bounds):
    """The end of the last non-skipped input in ``bounds``."""
    return max(b[1] for b in bounds if b is not None)


class _CatVJP:
    """cat's VJP for input i: the slice of ``g`` the input filled (a view); a
    skipped legacy empty input gets zeros of its shape (0,)."""

    def __getitem__(self, i):
        def rule(g, out, inputs, dim, bounds):      # pack_inputs: inputs is one tuple
            b = bounds[i]
            if b is None:
                return Tensor._wrap(np.zeros((0,), g._data.dtype))
            return _getitem(g, _slice_key(dim, slice(b[0], b[1])))
        return rule


def _cat_jvp(ts, out, *xs, dim, bounds):
    parts = [t if t is not None else Tensor._wrap(np.zeros(x._data.shape, x._data.dtype))
             for t, x in zip(ts, xs)]
    return apply(_cat, tuple(parts), {"dim": dim, "bounds": bounds})


_cat = defop("cat", _cat_fwd, vjp=_CatVJP(), jvp=_cat_jvp, pack_inputs=True, batch=_B.join_rule)

_check_cat = declare(Signature("cat", TensorListArg("tensors"),
                               DimArg("dim", of="tensors", default=0)))


def cat(tensors, dim=0):
    """Join ``tensors`` along the existing dim ``dim``; the result's dtype is
    their promoted dtype (PyTorch's rules: int64 with float32 gives float32).

    Tensors must have the same number of dims and the same sizes except along
    ``dim``.  PyTorch's legacy rule holds: 1-D tensors of shape (0,) are skipped
    whatever the others' shapes (their dtype still takes part in promotion).
    The gradient of each input is the slice of the cotangent it filled.

    Raises:
        TypeError: ``tensors`` not a list or tuple of Tensors; a non-integer dim.
        IndexError: dim out of range.
        RuntimeError: an empty sequence, a 0-d tensor, tensors with different
            numbers of dims, or sizes that differ outside ``dim``.
    """
    first = tensors[0] if isinstance(tensors, (list, tuple)) and tensors else None
    if isinstance(first, Tensor) and first._data.shape == (0,) and len(tensors) > 1:
        # dims are checked against the first tensor that is not a legacy empty
        kept = [t for t in tensors if not (isinstance(t, Tensor) and t._data.shape == (0,))]
        first = kept[0] if kept else tensors[0]
        _, dim = _check_cat([first] + [t for t in tensors if t is not first], dim)
        tensors = list(tensors)
    else:
        tensors, dim = _check_cat(tensors, dim)
    np_d = tensors[0]._data.dtype
    mixed = False
    for t in tensors:
        if t._data.dtype != np_d:
            mixed = True
            break
    ref = None
    bounds = []
    offset = 0
    legacy = (0,)
    all_empty = False
    for t in tensors:
        if t._data.shape != legacy:
            break
    else:
        all_empty = True
    for i, t in enumerate(tensors):
        shp = t._data.shape
        if shp == legacy and not all_empty:
            bounds.append(None)
            continue
        if ref is None:
            if not shp:
                raise RuntimeError(f"cat(): zero-dimensional tensor (at position {i}) cannot "
                                   f"be concatenated")
            ref = shp
        elif len(shp) != len(ref) or shp[:dim] != ref[:dim] or shp[dim + 1:] != ref[dim + 1:]:
            _cat_shape_error(ref, shp, dim, i)
        n = shp[dim]
        bounds.append((offset, offset + n))
        offset += n
    if mixed:
        d = tensors[0].dtype
        for t in tensors[1:]:
            if t.dtype is not d:
                d = _dtype.promote_types(d, t.dtype)
        tensors = [t if t.dtype is d else t.to(d) for t in tensors]
    return apply(_cat, tuple(tensors), {"dim": dim, "bounds": tuple(bounds)})


def _cat_shape_error(ref, shp, dim, i):
    if not shp:
        raise RuntimeError(f"cat(): zero-dimensional tensor (at position {i}) cannot be "
                           f"concatenated")
    if len(shp) != len(ref):
        raise RuntimeError(f"cat(): Tensors must have same number of dimensions: got "
                           f"{len(ref)} and {len(shp)}")
    j = next(j for j, (a, b) in enumerate(zip(ref, shp)) if j != dim and a != b)
    raise RuntimeError(f"cat(): Sizes of tensors must match except in dimension {dim}. "
                       f"Expected size {ref[j]} but got size {shp[j]} for tensor number {i} "
                       f"in the list.")


def concat(tensors, dim=0):
    """Alias of ``cat`` (as ``torch.concat``)."""
    return cat(tensors, dim)


def concatenate(tensors, axis=0):
    """Alias of ``cat`` with numpy's argument name (as ``torch.concatenate``)."""
    return cat(tensors, axis)


def _seq(tensors, op):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' must be a list or tuple of Tensors, "
                        f"not {type(tensors).__name__}")
    if not tensors:
        raise RuntimeError(f"{op}(): expects a non-empty TensorList")
    for j, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected Tensor as element {j} of argument 'tensors', "
                            f"but got {type(t).__name__}")
    return list(tensors)


def _renamed(fn, op, *args):
    try:
        return fn(*args)
    except (RuntimeError, IndexError, TypeError) as e:
        text = str(e)
        if text.startswith("cat()"):
            raise type(e)(op + "()" + text[5:]) from None
        raise


declare(Signature("hstack", TensorListArg("tensors")))
declare(Signature("vstack", TensorListArg("tensors")))
declare(Signature("dstack", TensorListArg("tensors")))
declare(Signature("column_stack", TensorListArg("tensors")))


def hstack(tensors):
    """Stack horizontally: ``cat`` along dim 1, or dim 0 when every tensor is 1-D
    (0-d tensors count as shape (1,)), as ``torch.hstack``.  Errors as ``cat``."""
    ts = atleast_1d(*_seq(tensors, "hstack"))
    ts = ts if isinstance(ts, tuple) else (ts,)
    d = 0 if all(t.ndim == 1 for t in ts) else 1
    return _renamed(cat, "hstack", list(ts), d)


def vstack(tensors):
    """Stack vertically: ``cat`` of ``atleast_2d`` of each along dim 0."""
    ts = atleast_2d(*_seq(tensors, "vstack"))
    return _renamed(cat, "vstack", list(ts if isinstance(ts, tuple) else (ts,)), 0)


def dstack(tensors):
    """Stack depth-wise: ``cat`` of ``atleast_3d`` of each along dim 2."""
    ts = atleast_3d(*_seq(tensors, "dstack"))
    return _renamed(cat, "dstack", list(ts if isinstance(ts, tuple) else (ts,)), 2)


def column_stack(tensors):
    """``cat`` along dim 1, 0-d and 1-D tensors first made columns of shape (n, 1)."""
    ts = [t.reshape(t.numel(), 1) if t.ndim <= 1 else t
          for t in _seq(tensors, "column_stack")]
    return _renamed(cat, "column_stack", ts, 1)


# ---------------------------------------------------------------- splitting (views)
_check_split = declare(Signature("split", TensorArg("tensor", min_ndim=1),
                                 SizesArg("split_size_or_sections"), DimArg("dim", of="tensor",
                                                                            default=0)))
_check_chunk = declare(Signature("chunk", TensorArg("input", min_ndim=1),
                                 IntArg("chunks", lo=1), DimArg("dim", default=0)))
_check_tensor_split = declare(Signature("tensor_split", TensorArg("input", min_ndim=1),
                                        SizesArg("indices_or_sections"),
                                        DimArg("dim", default=0)))
_check_unbind = declare(Signature("unbind", TensorArg("input"),
                                  DimArg("dim", default=0)))
_check_narrow = declare(Signature("narrow", TensorArg("input", min_ndim=1), DimArg("dim"),
                                  IntArg("start"), IntArg("length", lo=0)))
_check_select = declare(Signature("select", TensorArg("input"), DimArg("dim"),
                                  IntArg("index")))


def _pieces(x, dim, bounds):
    return tuple(_getitem(x, _slice_key(dim, slice(a, b))) for a, b in bounds)


def split(tensor, split_size_or_sections, dim=0):
    """Views of ``tensor`` split along ``dim``: pieces of ``split_size`` elements
    (the last may be smaller) for an int, or of the given sizes for a list.

    Each piece shares storage and the version counter with ``tensor``.

    Raises:
        TypeError: a non-Tensor input, non-integer sizes or dim.
        IndexError: dim out of range.
        RuntimeError: a 0-d input; a negative size; a size of 0 on a non-empty dim;
            sizes that do not sum to the dim's size.
    """
    sections = isinstance(split_size_or_sections, (list, tuple))
    tensor, sizes, dim = _check_split(tensor, split_size_or_sections, dim)
    n = tensor._data.shape[dim]
    if sections:
        if any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes(): expects split_sizes have only "
                               f"non-negative entries, but got split_sizes={list(sizes)}")
        if sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes(): expects split_sizes to sum exactly to "
                               f"{n} (input tensor's size at dimension {dim}), but got "
                               f"split_sizes={list(sizes)}")
        bounds, at = [], 0
        for s in sizes:
            bounds.append((at, at + s))
            at += s
        return _pieces(tensor, dim, bounds)
    if len(sizes) != 1:
        raise TypeError(f"split(): argument 'split_size_or_sections' must be an int or a "
                        f"list of ints, got {split_size_or_sections!r}")
    s = sizes[0]
    if s < 0:
        raise RuntimeError(f"split(): expects split_size be non-negative, but got "
                           f"split_size={s}")
    if s == 0:
        if n:
            raise RuntimeError(f"split(): split_size can only be 0 if dimension size is 0, "
                               f"but got dimension size of {n}")
        return _pieces(tensor, dim, [(0, 0)])
    return _pieces(tensor, dim, [(a, min(a + s, n)) for a in range(0, max(n, 1), s)])


def chunk(input, chunks, dim=0):
    """``split(input, ceil(size / chunks), dim)``: at most ``chunks`` views (fewer
    when the size does not allow that many, as PyTorch).

    Raises:
        TypeError: a non-Tensor input, non-integer chunks or dim.
        IndexError: dim out of range.  RuntimeError: a 0-d input; chunks < 1.
    """
    input, chunks, dim = _check_chunk(input, chunks, dim)
    n = input._data.shape[dim]
    if n == 0:
        return _pieces(input, dim, [(0, 0)] * chunks)
    s = -(-n // chunks)
    return _pieces(input, dim, [(a, min(a + s, n)) for a in range(0, n, s)])


def tensor_split(input, indices_or_sections, dim=0):
    """Views of ``input`` along ``dim``: ``sections`` nearly equal pieces for an
    int (the first ``size % sections`` one longer), or the pieces between the
    given indices for a list (clipped to the size, as numpy's array_split).

    Raises:
        TypeError / IndexError as ``split``.  RuntimeError: a 0-d input, or
            sections < 1.
    """
    sections = isinstance(indices_or_sections, (list, tuple))
    input, idx, dim = _check_tensor_split(input, indices_or_sections, dim)
    n = input._data.shape[dim]
    if not sections:
        k = idx[0] if len(idx) == 1 else 0
        if k < 1:
            raise RuntimeError(f"tensor_split(): number of sections must be larger than 0, "
                               f"got {k}")
        q, r = divmod(n, k)
        bounds, at = [], 0
        for i in range(k):
            step = q + (1 if i < r else 0)
            bounds.append((at, at + step))
            at += step
        return _pieces(input, dim, bounds)
    cuts = [min(max(i + n if i < 0 else i, 0), n) for i in idx]
    starts = [0] + cuts
    ends = cuts + [n]
    return _pieces(input, dim, [(a, max(a, b)) for a, b in zip(starts, ends)])


def unbind(input, dim=0):
    """The slices of ``input`` along ``dim`` as a tuple of views (``select`` each).

    Raises:
        TypeError: non-Tensor input.  IndexError: dim out of range, or a 0-d input.
    """
    input, dim = _check_unbind(input, dim)
    if input._data.ndim == 0:
        raise IndexError("unbind(): Dimension specified as 0 but tensor has no dimensions")
    return tuple(_getitem(input, _slice_key(dim, i)) for i in range(input._data.shape[dim]))


def narrow(input, dim, start, length):
    """The view ``input[..., start:start + length, ...]`` along ``dim``; ``start``
    may be negative (counted from the end).

    Raises:
        TypeError: non-integer arguments.  IndexError: dim out of range, or start
            outside ``[-size, size]``.  RuntimeError: a 0-d input, a negative
            length, or ``start + length`` past the end.
    """
    input, dim, start, length = _check_narrow(input, dim, start, length)
    n = input._data.shape[dim]
    if not -n <= start <= n:
        raise IndexError(f"narrow(): start out of range (expected to be in range of "
                         f"[{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if start + length > n:
        raise RuntimeError(f"narrow(): start ({start}) + length ({length}) exceeds dimension "
                           f"size ({n}).")
    return _getitem(input, _slice_key(dim, slice(start, start + length)))


def select(input, dim, index):
    """The view ``input[..., index, ...]`` with ``dim`` removed.

    Raises:
        TypeError: non-integer arguments.  IndexError: dim out of range, an index
            out of range, or a 0-d input.
    """
    input, dim, index = _check_select(input, dim, index)
    if input._data.ndim == 0:
        raise IndexError("select(): cannot be applied to a 0-dim tensor.")
    n = input._data.shape[dim]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input._data.shape)} at dimension {dim}")
    return _getitem(input, _slice_key(dim, index))


# ---------------------------------------------------------------- dim moves (views)
_check_movedim = declare(Signature("movedim", TensorArg("input"), SizesArg("source"),
                                   SizesArg("destination")))
_check_swapaxes = declare(Signature("swapaxes", TensorArg("input"), DimArg("axis0"),
                                    DimArg("axis1")))
_check_swapdims = declare(Signature("swapdims", TensorArg("input"), DimArg("dim0"),
                                    DimArg("dim1")))


def movedim(input, source, destination):
    """A view with dims ``source`` moved to positions ``destination`` (ints or
    sequences of one length), the other dims in their order (a ``permute``).

    Raises:
        TypeError: non-integer dims.  IndexError: a dim out of range.
        RuntimeError: source and destination of different lengths, or repeated.
    """
    input, src, dst = _check_movedim(input, source, destination)
    n = input._data.ndim
    if len(src) != len(dst):
        raise RuntimeError(f"movedim(): Invalid source or destination dims: source "
                           f"({list(src)} dims) should contain the same number of dims as "
                           f"destination ({list(dst)} dims)")
    src = [normalize_dim(d, n, "movedim", "source") for d in src]
    dst = [normalize_dim(d, n, "movedim", "destination") for d in dst]
    for name, ds, given in (("source", src, source), ("destination", dst, destination)):
        if len(set(ds)) != len(ds):
            raise RuntimeError(f"movedim(): repeated dim in `{name}` ({list(given)})")
    if n == 0:
        return apply(_shape._permute, (input,), {"dims": ()})
    order = [None] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(n) if i not in set(src))
    perm = tuple(o if o is not None else next(rest) for o in order)
    return apply(_shape._permute, (input,), {"dims": perm})


def moveaxis(input, source, destination):
    """Alias of ``movedim`` (numpy's name)."""
    return movedim(input, source, destination)


def _swap(input, d0, d1):
    n = input._data.ndim
    dims = list(range(n))
    if n:
        dims[d0], dims[d1] = dims[d1], dims[d0]
    return apply(_shape._permute, (input,), {"dims": tuple(dims)})


def swapaxes(input, axis0, axis1):
    """Alias of ``transpose`` (numpy's name): a view with two dims swapped."""
    return _swap(*_check_swapaxes(input, axis0, axis1))


def swapdims(input, dim0, dim1):
    """Alias of ``transpose``: a view with two dims swapped."""
    return _swap(*_check_swapdims(input, dim0, dim1))


# ---------------------------------------------------------------- reshaping views
_check_unflatten = declare(Signature("unflatten", TensorArg("input"), DimArg("dim"),
                                     SizesArg("sizes")))
_check_broadcast_to = declare(Signature("broadcast_to", TensorArg("input"), SizesArg("size")))
declare(Signature("broadcast_tensors", TensorListArg("tensors")))


def unflatten(input, dim, sizes):
    """Split dim ``dim`` into ``sizes`` (one entry may be -1): a ``view``.

    Raises:
        TypeError: non-integer dim or sizes.  IndexError: dim out of range.
        RuntimeError: empty sizes, or sizes whose product is not the dim's size.
    """
    input, dim, sizes = _check_unflatten(input, dim, sizes)
    if not sizes:
        raise RuntimeError("unflatten(): sizes must be non-empty")
    shp = input._data.shape if input._data.ndim else (1,)
    n = shp[dim]
    if sizes.count(-1) > 1 or any(s < -1 for s in sizes):
        raise RuntimeError(f"unflatten(): invalid sizes {list(sizes)} (at most one -1, no "
                           f"other negative size)")
    known = math.prod(s for s in sizes if s != -1)
    if -1 in sizes and known and n % known == 0:
        sizes = tuple(n // known if s == -1 else s for s in sizes)
    if -1 in sizes or math.prod(sizes) != n:
        raise RuntimeError(f"unflatten(): Provided sizes {list(sizes)} don't multiply up to "
                           f"the size of dim {dim} ({n}) in the input tensor")
    new = shp[:dim] + tuple(sizes) + shp[dim + 1:]
    return _shape.reshape(input, new)


def broadcast_to(input, size):
    """``input.expand(size)`` (-1 keeps a dim): a read-only view.  Errors as expand."""
    input, size = _check_broadcast_to(input, size)
    try:
        return _shape.expand(input, size)
    except RuntimeError as e:
        raise RuntimeError("broadcast_to" + str(e)[len("expand"):]) from None


def broadcast_tensors(*tensors):
    """Each tensor expanded to the common broadcast shape (views), as a tuple.

    Raises:
        TypeError: a non-Tensor argument.  RuntimeError: shapes that do not broadcast.
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    tensors = _seq(list(tensors), "broadcast_tensors") if tensors else []
    shape = ()
    for t in tensors:
        shape = broadcast_shape(shape, t._data.shape, "broadcast_tensors")
    return tuple(t if t._data.shape == shape else _shape.expand(t, shape) for t in tensors)


def _atleast(args, nd, op):
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return tuple(_atleast(tuple(args[0]), nd, op))
    out = []
    for t in args:
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected Tensor arguments, got {type(t).__name__}")
        shp = t._data.shape
        if len(shp) >= nd:
            out.append(t)
            continue
        if nd == 3 and len(shp) == 2:
            new = shp + (1,)
        elif nd == 3 and len(shp) == 1:
            new = (1,) + shp + (1,)
        else:
            new = (1,) * (nd - len(shp)) + shp
        out.append(_shape.view(t, new))
    return out[0] if len(out) == 1 else tuple(out)


def atleast_1d(*tensors):
    """Each tensor with at least 1 dim (a 0-d tensor becomes shape (1,)): views;
    one tensor in, one out, else a tuple."""
    return _atleast(tensors, 1, "atleast_1d")


def atleast_2d(*tensors):
    """At least 2 dims: (n,) becomes (1, n), 0-d (1, 1)."""
    return _atleast(tensors, 2, "atleast_2d")


def atleast_3d(*tensors):
    """At least 3 dims: (m, n) becomes (m, n, 1), (n,) (1, n, 1), 0-d (1, 1, 1)."""
    return _atleast(tensors, 3, "atleast_3d")
