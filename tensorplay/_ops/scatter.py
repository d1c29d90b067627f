"""The index/scatter family: index_select, index_add, index_copy, index_fill,
scatter, scatter_add, scatter_reduce, masked_fill, masked_scatter, masked_select,
take, nonzero, argwhere, searchsorted, bucketize.

All differentiable ones are compositions over the two indexing primitives of
``_ops/index.py`` (``index``: a checked gather; ``index_put``: a checked put or
scatter-add), so their forward runs through the same Cython kernels and their
VJPs and JVPs (both modes, any order) come from those primitives' rules:
``index_select``, ``take`` and ``masked_select`` are ``index``; ``index_add``,
``index_copy``, ``index_fill``, ``scatter``, ``scatter_add`` and ``masked_scatter``
are ``index_put`` (a scatter of ``k``-dim index tensors passes one coordinate array
per dim); ``masked_fill`` is ``where``.  ``scatter_reduce`` with 'sum'/'mean' is
``index_put`` (and a division by the counts); 'prod', 'amax' and 'amin' compute
the value in numpy (``ufunc.at``) and take their first derivatives from a linear
``index_put`` with constant weights: ties share the gradient evenly (amax/amin,
as PyTorch), and prod's weight is the product of the other entries (exact with
zeros present).  Their second derivatives are not modelled (zero).

``nonzero``, ``argwhere``, ``searchsorted`` and ``bucketize`` are in
``index_search.py``.

Index arguments: int64 or int32 tensors (PyTorch takes int32 for index_select,
index_add, scatter; tensorplay takes it everywhere).  Negative values count from
the end where PyTorch allows them (``take``, ``index_fill``, ``index_put``); the
ops PyTorch refuses them in (``index_select``, ``index_add``, ``index_copy``,
``scatter``, ``scatter_add``, ``scatter_reduce``) raise IndexError for them, as
out-of-range indices do everywhere (naming the op, the dim and its size).
"""
import numpy as np

from tensorplay._ops._validate import DimArg, Signature, TensorArg, declare
from tensorplay._ops import _batching as _B
from tensorplay._ops.index import put_indices, take_indices
from tensorplay._tensor import Tensor

__all__ = ["index_select", "index_add", "index_copy", "index_fill", "scatter",
           "scatter_add", "scatter_reduce", "masked_fill", "masked_scatter",
           "masked_select", "take"]
METHODS = ["index_select", "index_add", "index_copy", "index_fill", "scatter",
           "scatter_add", "scatter_reduce", "masked_fill", "masked_scatter",
           "masked_select", "take"]
INPLACE = ["index_add", "index_copy", "index_fill", "scatter", "scatter_add",
           "scatter_reduce", "masked_fill", "masked_scatter"]

_I64 = np.dtype(np.int64)


def _index_of(t):
    """A C-contiguous int64 copy-or-view of index tensor ``t`` (flattened)."""
    return np.ascontiguousarray(t._data.reshape(-1), _I64)


def _along(ndim, dim, idx):
    return tuple(idx if d == dim else None for d in range(ndim))


def _idx_param(name="index"):
    return TensorArg(name, "i", exc=RuntimeError,
                     message="expected an int64 or int32 index tensor")


def _same_dtype(op, input, other, name):
    if other.dtype is not input.dtype:
        raise RuntimeError(f"{op}(): expected '{name}' to have the dtype of 'input' "
                           f"({input.dtype}), got {other.dtype}")


def _vector_index(op, index):
    if index._data.ndim > 1:
        raise IndexError(f"{op}(): index is supposed to be a vector, got a "
                         f"{index._data.ndim}-D tensor")


def _no_negative(op, index, dim, size):
    """PyTorch refuses negative indices in these ops (the kernels would wrap them)."""
    idx = index._data
    if idx.size and idx.min() < 0:
        raise IndexError(f"{op}(): index {int(idx.min())} is out of bounds for dimension "
                         f"{dim} with size {size}")


# ---------------------------------------------------------------- index_select / take
_check_index_select = declare(Signature("index_select", TensorArg("input"), DimArg("dim"),
                                        _idx_param()))


def index_select(input, dim, index):
    """The entries of ``input`` at ``index`` along ``dim``: shape ``input.shape``
    with ``dim`` of size ``len(index)`` (a copy).  ``index`` a 0-d or 1-D int64/int32
    tensor.  Differentiable in ``input`` (repeated indices accumulate).

    Raises:
        TypeError: non-Tensor arguments.  IndexError: dim out of range, an index
            with more than 1 dim, an index out of range.  RuntimeError: a
            non-integer index dtype.
    """
    input, dim, index = _check_index_select(input, dim, index)
    _vector_index("index_select", index)
    _no_negative("index_select", index, dim, input._data.shape[dim] if input._data.ndim else 1)
    if input._data.ndim == 0:
        return take_indices(input.reshape(1), (_index_of(index),),
                            "index_select").reshape(())
    return take_indices(input, _along(input._data.ndim, dim, _index_of(index)),
                        "index_select")


_check_take = declare(Signature("take", TensorArg("input"), _idx_param()))


def take(input, index):
    """``input.flatten()[index]``, shaped like ``index`` (int64/int32, any shape;
    negative values count from the end).  Differentiable in ``input``.

    Raises:
        IndexError: an index outside ``[-numel, numel)``.  RuntimeError: a
            non-integer index dtype.
    """
    input, index = _check_take(input, index)
    return take_indices(input.reshape(-1), (_index_of(index),), "take").reshape(
        index._data.shape)


# ---------------------------------------------------------------- index_add / copy / fill
def _index_source_check(op, input, dim, index, source):
    _vector_index(op, index)
    _no_negative(op, index, dim, input._data.shape[dim] if input._data.ndim else 1)
    _same_dtype(op, input, source, "source")
    xs, ss = input._data.shape, source._data.shape
    n = index._data.size
    if input._data.ndim == 0:
        if source._data.size != 1 or n != 1:
            raise RuntimeError(f"{op}(): a 0-d input takes one index and a one-element "
                               f"source")
        return
    want = xs[:dim] + (n,) + xs[dim + 1:]
    if ss != want and not (source._data.ndim == 0 and want == (1,)):
        raise RuntimeError(f"{op}(): source of shape {list(ss)} must have the shape of "
                           f"'input' {list(xs)} except at dim {dim}, where it has the "
                           f"number of indices ({n})")


def _put_along(op, input, dim, index, values, accumulate):
    if input._data.ndim == 0:
        return put_indices(input.reshape(1), (_index_of(index),), values.reshape(-1),
                           accumulate, op).reshape(())
    return put_indices(input, _along(input._data.ndim, dim, _index_of(index)), values,
                       accumulate, op)


_check_index_add = declare(Signature("index_add", TensorArg("input", "fi"), DimArg("dim"),
                                     _idx_param(), TensorArg("source", "fi")))


def index_add(input, dim, index, source, *, alpha=1):
    """A copy of ``input`` with ``alpha * source[..., j, ...]`` added at
    ``index[j]`` along ``dim`` (repeated indices add up).  ``source`` has the shape
    of ``input`` except at ``dim``, where it has ``len(index)``; same dtype.
    Differentiable in ``input`` and ``source``.

    Raises:
        RuntimeError: a non-integer index, a source of the wrong shape or dtype.
        IndexError: dim or an index out of range, an index with more than 1 dim.
    """
    input, dim, index, source = _check_index_add(input, dim, index, source)
    _index_source_check("index_add", input, dim, index, source)
    if alpha != 1:
        source = source * alpha
    return _put_along("index_add", input, dim, index, source, True)


_check_index_copy = declare(Signature("index_copy", TensorArg("input"), DimArg("dim"),
                                      _idx_param(), TensorArg("source")))


def index_copy(input, dim, index, source):
    """A copy of ``input`` with ``source[..., j, ...]`` written at ``index[j]`` along
    ``dim`` (shapes as ``index_add``; a repeated index: the last write wins, which
    PyTorch leaves undefined).  Differentiable in ``input`` and ``source``.

    Raises: as ``index_add``.
    """
    input, dim, index, source = _check_index_copy(input, dim, index, source)
    _index_source_check("index_copy", input, dim, index, source)
    return _put_along("index_copy", input, dim, index, source, False)


_check_index_fill = declare(Signature("index_fill", TensorArg("input"), DimArg("dim"),
                                      _idx_param(), TensorArg("value", numbers=True)))


def _value_tensor(op, input, value):
    """``value`` (a number or a 0-d Tensor) as a 0-d Tensor of input's dtype."""
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"{op}() only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value._data.ndim} dimension(s).")
        return value if value.dtype is input.dtype else value.to(input.dtype)
    if not isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        raise TypeError(f"{op}(): argument 'value' must be a number or a 0-d Tensor, not "
                        f"{type(value).__name__}")
    # a number that does not fit input's dtype raises, as PyTorch (astype would
    # wrap 2**40 into int32 silently, and turn nan into an arbitrary integer)
    from tensorplay._creation import _check_fits
    _check_fits(value.item() if isinstance(value, np.generic) else value, input.dtype, op)
    return Tensor._wrap(np.array(value).astype(input._data.dtype))


def index_fill(input, dim, index, value):
    """A copy of ``input`` with the slices at ``index`` along ``dim`` set to
    ``value`` (a number, or a 0-d Tensor: then differentiable in it too).

    Raises:
        RuntimeError: a non-integer index, a value tensor with dims.
        IndexError: dim or an index out of range, an index with more than 1 dim.
    """
    input, dim, index, value = _check_index_fill(input, dim, index, value)
    _vector_index("index_fill", index)
    # each position once, so that a tensor value's gradient counts it once
    size = input._data.shape[dim] if input._data.ndim else 1
    i = _index_of(index)
    i = Tensor._wrap(np.unique(np.where((i < 0) & (i >= -size), i + size, i)))
    return _put_along("index_fill", input, dim, i,
                      _value_tensor("index_fill", input, value), False)


# ---------------------------------------------------------------- scatter
def _coords(op, input, dim, index, src):
    """One int64 coordinate array per dim of ``input`` for ``scatter`` (index's
    shape), and src's leading block of index's shape (a view)."""
    nd = input._data.ndim
    ish = index._data.shape
    _no_negative(op, index, dim, input._data.shape[dim] if nd else 1)
    if index._data.ndim != nd and not (nd == 0 and index._data.ndim <= 1):
        raise RuntimeError(f"{op}(): index tensor must have the same number of "
                           f"dimensions as input tensor ({nd}), got {index._data.ndim}")
    if nd == 0:
        return None, None
    xs = input._data.shape
    for d in range(nd):
        if (d != dim and ish[d] > xs[d]) or (src is not None and ish[d] > src._data.shape[d]):
            raise RuntimeError(
                f"{op}(): expected index {list(ish)} to be no larger than input "
                f"{list(xs)} apart from dimension {dim}" +
                ("" if src is None else f" and to be no larger than src "
                                        f"{list(src._data.shape)}"))
    coords = []
    for d in range(nd):
        if d == dim:
            coords.append(np.ascontiguousarray(index._data, _I64))
        else:
            shape = [1] * nd
            shape[d] = ish[d]
            coords.append(np.ascontiguousarray(np.broadcast_to(
                np.arange(ish[d], dtype=_I64).reshape(shape), ish)))
    block = None
    if src is not None:
        block = src if src._data.shape == ish else src[tuple(slice(0, n) for n in ish)]
    return tuple(coords), block


def _scatter_src(op, input, src, value):
    if src is not None and value is not None:
        raise TypeError(f"{op}(): give either 'src' or 'value', not both")
    if src is None and value is None:
        raise TypeError(f"{op}(): missing argument 'src' (a Tensor) or 'value' (a number)")
    if isinstance(src, Tensor):
        _same_dtype(op, input, src, "src")
        return src, None
    v = value if src is None else src
    return None, _value_tensor(op, input, v)


def _scatter_put(op, input, dim, index, src, value, accumulate):
    coords, block = _coords(op, input, dim, index, src)
    vals = block if block is not None else value
    if coords is None:                       # 0-d input: index has <= 1 element
        vals = src if src is not None else value     # (_coords makes no block here)
        n = index._data.size
        if n == 0:
            return input.clone()
        return put_indices(input.reshape(1), (_index_of(index),), vals.reshape(-1)[:n]
                           if vals._data.ndim else vals, accumulate, op).reshape(())
    if index._data.size == 0:
        return input.clone()
    return put_indices(input, coords, vals, accumulate, op)


_check_scatter = declare(Signature("scatter", TensorArg("input"), DimArg("dim"),
                                   _idx_param(), TensorArg("src", numbers=True)))


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """A copy of ``input`` with ``out[index[i][j]][j] = src[i][j]`` (dim 0; likewise
    for other dims).  ``index`` has input's number of dims and is no larger than
    ``src`` in every dim and than ``input`` except at ``dim``; ``src`` a Tensor of
    input's dtype, or a number (``value``).  A repeated index: the last write wins
    (PyTorch: undefined).  ``reduce='add'``/``'multiply'``: as ``scatter_reduce``
    with 'sum'/'prod' (PyTorch's deprecated form).  Differentiable in ``input`` and
    ``src``.

    Raises:
        RuntimeError: a non-integer index, index/src shapes that do not fit.
        IndexError: dim or an index out of range.
    """
    if src is not None and value is not None:
        raise TypeError("scatter(): give either 'src' or 'value', not both")
    input, dim, index, src = _check_scatter(input, dim, index,
                                            value if src is None else src)
    src, value = _scatter_src("scatter", input, src, None)
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError(f"scatter(): reduce argument must be either add or "
                               f"multiply, got {reduce!r}")
        if src is None:
            src = value.expand(index._data.shape)
        return scatter_reduce(input, dim, index, src,
                              "sum" if reduce == "add" else "prod")
    return _scatter_put("scatter", input, dim, index, src, value, False)


_check_scatter_add = declare(Signature("scatter_add", TensorArg("input", "fi"),
                                       DimArg("dim"), _idx_param(),
                                       TensorArg("src", "fi")))


def scatter_add(input, dim, index, src):
    """A copy of ``input`` with ``out[index[i][j]][j] += src[i][j]`` (dim 0; shapes as
    ``scatter``); repeated indices add up.  Differentiable in ``input`` and ``src``.

    Raises: as ``scatter``.
    """
    input, dim, index, src = _check_scatter_add(input, dim, index, src)
    _same_dtype("scatter_add", input, src, "src")
    return _scatter_put("scatter_add", input, dim, index, src, None, True)


_REDUCE = ("sum", "prod", "mean", "amax", "amin")
_check_scatter_reduce = declare(Signature(
    "scatter_reduce", TensorArg("input", "fi"), DimArg("dim"), _idx_param(),
    TensorArg("src", "fi")))


@_B.loop_under_vmap
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """A copy of ``input`` where each position that ``index`` hits holds the
    reduction ('sum', 'prod', 'mean', 'amax', 'amin') of the ``src`` entries
    scattered there (shapes as ``scatter``), together with input's own value when
    ``include_self``; other positions keep input's value.

    Derivatives: 'sum' and 'mean' are linear.  'amax'/'amin' give the gradient to
    every entry equal to the result, split evenly (PyTorch's rule); 'prod' gives
    each entry the product of the others (exact with zeros).  First order only
    for these three (their second derivatives come out zero).  'mean' on integer
    tensors rounds toward minus infinity (floor), as PyTorch.

    Raises:
        RuntimeError: an unknown reduce, a non-integer index, shapes that do not
            fit, src of another dtype.
        IndexError: dim or an index out of range.
    """
    input, dim, index, src = _check_scatter_reduce(input, dim, index, src)
    if not isinstance(include_self, (bool, np.bool_)):
        raise TypeError(f"scatter_reduce(): argument 'include_self' must be bool, not "
                        f"{type(include_self).__name__}")
    if reduce not in _REDUCE:
        raise RuntimeError(f"scatter_reduce(): reduce argument must be one of "
                           f"{', '.join(_REDUCE)}, got {reduce!r}")
    _same_dtype("scatter_reduce", input, src, "src")
    op = "scatter_reduce"
    if input._data.ndim == 0:
        return scatter_reduce(input.reshape(1), 0, index.reshape(-1),
                              src.reshape(-1), reduce,
                              include_self=include_self).reshape(())
    coords, block = _coords(op, input, dim, index, src)
    if index._data.size == 0:
        return input.clone()
    zero = Tensor._wrap(np.zeros((), input._data.dtype))
    base = input if include_self else put_indices(input, coords, zero, False, op)
    if reduce == "sum":
        return put_indices(base, coords, block, True, op)
    if reduce == "mean":
        total = put_indices(base, coords, block, True, op)
        start = np.ones if include_self else np.zeros
        count = put_indices(Tensor._wrap(start(input._data.shape, input._data.dtype)),
                            coords, Tensor._wrap(np.ones((), input._data.dtype)), True, op)
        count = Tensor._wrap(np.maximum(count._data, 1))
        if input._data.dtype.kind != "f":
            return Tensor._wrap(np.floor_divide(total._data, count._data))
        return total / count
    return _reduce_nonlinear(op, reduce, input, dim, coords, block, include_self)


def _flat_offsets(shape, coords):
    return np.ravel_multi_index(tuple(c.reshape(-1) for c in coords), shape)


def _reduce_nonlinear(op, reduce, input, dim, coords, block, include_self):
    x = input._data
    s = np.ascontiguousarray(block._data).reshape(-1)
    take_indices(input.detach(), coords, op)      # checks every index (the kernel)
    c = coords[dim]
    coords = coords[:dim] + (np.where(c < 0, c + x.shape[dim], c),) + coords[dim + 1:]
    flat = _flat_offsets(x.shape, coords)
    touched = np.zeros(x.size, bool)
    touched[flat] = True
    ufunc = {"prod": np.multiply, "amax": np.maximum, "amin": np.minimum}[reduce]
    out = np.array(x, order="C").reshape(-1)
    if not include_self:
        if x.dtype.kind == "f":
            out[flat] = {"prod": 1.0, "amax": -np.inf, "amin": np.inf}[reduce]
        else:
            info = np.iinfo(x.dtype)
            out[flat] = {"prod": 1, "amax": info.min, "amin": info.max}[reduce]
    with np.errstate(invalid="ignore"):      # a NaN source propagates, as torch
        ufunc.at(out, flat, s)
    value = out.reshape(x.shape)
    if not (input.requires_grad or block.requires_grad or _has_tangent(input, block)):
        return Tensor._wrap(value)
    # constant weights w with d out / d x = w_self, d out / d src = w_src
    self_in = touched & include_self
    xf = x.reshape(-1).astype(np.float64)
    if reduce == "prod":
        zs = (s == 0).astype(np.int64)
        zx = ((xf == 0) & self_in).astype(np.int64)
        nz = np.where(self_in, np.where(xf == 0, 1.0, xf), 1.0)
        np.multiply.at(nz, flat, np.where(s == 0, 1.0, s))
        zc = zx.copy()
        np.add.at(zc, flat, zs)

        def weight(v, pos):
            zero = v == 0
            return np.where(zc[pos] == 0, nz[pos] / np.where(zero, 1.0, v),
                            np.where((zc[pos] == 1) & zero, nz[pos], 0.0))
        w_src = weight(s, flat)
        w_self = np.where(self_in, weight(xf, np.arange(x.size)), np.where(touched, 0.0, 1.0))
    else:
        vf = value.reshape(-1)
        hit_src = (s == vf[flat]).astype(np.float64)
        hit_self = (self_in & (xf == vf)).astype(np.float64)
        n = hit_self.copy()
        np.add.at(n, flat, hit_src)
        n = np.maximum(n, 1.0)
        w_src = hit_src / n[flat]
        w_self = np.where(touched, hit_self / n, 1.0)
    dt = x.dtype
    lin = put_indices(input * Tensor._wrap(w_self.reshape(x.shape).astype(dt)), coords,
                      block * Tensor._wrap(w_src.reshape(block._data.shape).astype(dt)),
                      True, op)
    # the value exactly (lin - lin.detach() is 0), the derivatives of lin
    from tensorplay._ops.elementwise import where
    finite = Tensor._wrap(np.isfinite(lin._data))
    return Tensor._wrap(value) + where(finite, lin - lin.detach(), 0.0)


def _has_tangent(*ts):
    from tensorplay.autograd.grad_mode import STATE
    return STATE.fw_level is not None and any(
        t._tangent is not None and t._tangent_level == STATE.fw_level for t in ts)


# ---------------------------------------------------------------- masks
_check_masked_fill = declare(Signature("masked_fill", TensorArg("input"),
                                       TensorArg("mask", "b", exc=RuntimeError,
                                                 message="masked_fill only supports "
                                                         "boolean masks"),
                                       TensorArg("value", numbers=True),
                                       broadcast=("input", "mask")))


def masked_fill(input, mask, value):
    """``input`` with ``value`` where ``mask`` is True (``mask`` bool, broadcast with
    ``input``); ``value`` a number or a 0-d Tensor, cast to input's dtype.  A
    composition over ``where``: differentiable in ``input`` and in a tensor
    ``value`` (which receives the sum of the cotangent over the masked positions).

    Raises:
        RuntimeError: a non-bool mask, shapes that do not broadcast, a value tensor
            with dims.  TypeError: a value that is not a number or a Tensor.
    """
    from tensorplay._ops.elementwise import where
    input, mask, value = _check_masked_fill(input, mask, value)
    return where(mask, _value_tensor("masked_fill", input, value), input)


def _nonzero(m):
    # numpy's nonzero returns column views of one (n, ndim) array
    return tuple(np.ascontiguousarray(i, _I64) for i in np.nonzero(m))


def _broadcast_mask(op, input, mask):
    shape = np.broadcast_shapes(input._data.shape, mask._data.shape)
    if input._data.shape != shape:
        input = input.expand(shape)
    m = mask._data if mask._data.shape == shape else np.broadcast_to(mask._data, shape)
    return input, m


_check_masked_select = declare(Signature("masked_select", TensorArg("input"),
                                         TensorArg("mask", "b", exc=RuntimeError),
                                         broadcast=("input", "mask")))


def masked_select(input, mask):
    """The entries of ``input`` where ``mask`` is True, as a 1-D tensor (input and
    mask broadcast together; row-major order).  Differentiable in ``input``.

    Raises:
        RuntimeError: a non-bool mask or shapes that do not broadcast.
    """
    input, mask = _check_masked_select(input, mask)
    input, m = _broadcast_mask("masked_select", input, mask)
    if m.ndim == 0:
        input, m = input.reshape(1), m.reshape(1)
    return take_indices(input, _nonzero(m), "masked_select")


_check_masked_scatter = declare(Signature("masked_scatter", TensorArg("input"),
                                          TensorArg("mask", "b", exc=RuntimeError),
                                          TensorArg("source"),
                                          broadcast=("input", "mask")))


def masked_scatter(input, mask, source):
    """``input`` with the positions where ``mask`` is True filled, in row-major
    order, with the first ``mask.sum()`` elements of ``source`` (same dtype; at
    least that many elements).  Differentiable in ``input`` and ``source``.

    Raises:
        RuntimeError: a non-bool mask, shapes that do not broadcast, a source of
            another dtype or with too few elements.
    """
    input, mask, source = _check_masked_scatter(input, mask, source)
    _same_dtype("masked_scatter", input, source, "source")
    input, m = _broadcast_mask("masked_scatter", input, mask)
    if m.ndim == 0:
        return masked_scatter(input.reshape(1), Tensor._wrap(m.reshape(1)),
                              source).reshape(())
    idx = _nonzero(m)
    n = idx[0].size
    if source._data.size < n:
        raise RuntimeError(f"masked_scatter(): number of elements of source "
                           f"({source._data.size}) < number of ones in mask ({n})")
    flat = source.reshape(-1)
    vals = flat if flat._data.size == n else flat[:n]
    return put_indices(input, idx, vals, False, "masked_scatter")
