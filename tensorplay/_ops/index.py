"""Advanced indexing: ``x[key]`` with integer and bool index tensors or lists, and
``index_put``.

Two primitives, both through the kernels of ``tensorplay/_kernels/index.pyx``:

``index(x, indices)``
    ``indices`` holds one entry per dim of ``x``: None (the whole dim) or an int64
    ndarray, all of one broadcast shape B.  The indexed dims are replaced by B, in
    place when they are adjacent, else in front (NumPy's and PyTorch's rule).  A
    copy.  VJP: ``index_put`` of the cotangent into zeros with accumulate=True
    (repeated indices accumulate); JVP: ``index`` of the tangent.
``index_put(x, values, indices, accumulate)``
    A copy of ``x`` with ``values`` (broadcast to the indexed shape) written at
    the indices, or added to them.  VJP for x: the cotangent (accumulate) or the
    cotangent with the written positions zeroed; for values: ``index`` of the
    cotangent (the registry sums it back to the values' shape).  JVP: ``index_put``
    of the tangents.

Keys follow PyTorch (which follows NumPy except for one case): Python ints and
0-d integer tensors select first (a view), so in ``x[0, :, [1, 2]]`` the int does
not count as an advanced index and the list's dim stays in place (shape (B, 2);
NumPy gives (2, B)).  Bool masks index as their ``nonzero()`` coordinates; a bool
scalar adds a dim of size 1 (True) or 0 (False).
"""
import numpy as np

from tensorplay._kernels import index as _ki
from tensorplay._ops._common import CONFIG
from tensorplay._ops._validate import BoolArg, Signature, TensorArg, declare
from tensorplay._ops.registry import apply, defop
from tensorplay._tensor import Tensor

__all__ = ["index_put"]
METHODS = ["index_put"]
INPLACE = ["index_put"]

_I64 = np.dtype(np.int64)


class BadIndex(IndexError):
    """An index out of range, as the kernel found it: ``dim`` is the position in
    ``indices``, ``value`` the index, ``size`` the dim's size."""

    def __init__(self, op, dim, value, size):
        self.dim, self.value, self.size = dim, value, size
        super().__init__(f"{op}: index {value} is out of bounds for dimension {dim} "
                         f"with size {size}")


# ---------------------------------------------------------------- layout
def _table(sizes, strides):
    """Element offsets of every point of the grid ``sizes`` with ``strides``, C order."""
    off = np.zeros(1, _I64)
    for s, st in zip(sizes, strides):
        off = (off[:, None] + np.arange(s, dtype=_I64) * st).reshape(-1)
    return off


def _elem_strides(a):
    isz = a.itemsize
    st = a.strides
    if any(s % isz for s in st):
        raise ValueError("index: strides that are not multiples of the item size")
    return [s // isz for s in st]


def _layout(shape, strides, indices):
    """(pre, post, n_in, s_in, adv dims, out shape) for ``indices`` on an array of
    ``shape``/``strides`` (see the kernel's Design block)."""
    adv = [d for d, i in enumerate(indices) if i is not None]
    B = indices[adv[0]].shape
    rest = [d for d in range(len(shape)) if d >= len(indices) or indices[d] is None]
    if adv == list(range(adv[0], adv[-1] + 1)):
        pre = [d for d in rest if d < adv[0]]
        post = [d for d in rest if d > adv[-1]]
    else:
        pre, post = [], rest
    if post:
        n_in, s_in = shape[post[-1]], strides[post[-1]]
        post_off = _table([shape[d] for d in post[:-1]], [strides[d] for d in post[:-1]])
    else:
        n_in, s_in, post_off = 1, 1, np.zeros(1, _I64)
    pre_off = _table([shape[d] for d in pre], [strides[d] for d in pre])
    out_shape = tuple(shape[d] for d in pre) + B + tuple(shape[d] for d in post)
    return pre_off, post_off, n_in, s_in, adv, out_shape


def _offsets(op, indices, adv, shape, strides):
    nb = indices[adv[0]].size
    off = np.empty(nb, _I64)
    bad = _ki.index_offsets(tuple(indices[d].reshape(-1) for d in adv),
                            np.array([shape[d] for d in adv], _I64),
                            np.array([strides[d] for d in adv], _I64), off,
                            CONFIG.num_threads)
    if bad is not None:
        j, _, value = bad
        if j < 0:
            raise IndexError(f"{op}: an index changed while it was being read")
        raise BadIndex(op, adv[j], value, shape[adv[j]])
    return off


def _index_fwd(x, indices):
    strides = _elem_strides(x)
    if x.ndim == 1:                             # one pass: check and load (take1)
        idx = indices[0]
        out = np.empty(idx.shape, x.dtype)
        bad = _ki.take1(x, idx, out, x.shape[0], strides[0], CONFIG.num_threads)
        if bad is not None:
            if bad[0] < 0:
                raise IndexError("index: an index changed while it was being read")
            raise BadIndex("index", 0, bad[2], x.shape[0])
        return out
    pre, post, n_in, s_in, adv, out_shape = _layout(x.shape, strides, indices)
    off = _offsets("index", indices, adv, x.shape, strides)
    out = np.empty(out_shape, x.dtype)
    _ki.gather(x, out, pre, off, post, n_in, s_in, CONFIG.num_threads)
    return out


def _index_put_fwd(x, values, indices, accumulate):
    dst = np.array(x, order="C", copy=True)
    strides = _elem_strides(dst)
    pre, post, n_in, s_in, adv, out_shape = _layout(dst.shape, strides, indices)
    off = _offsets("index_put", indices, adv, dst.shape, strides)
    values = values.astype(dst.dtype, copy=False)
    if values.size == 1:
        values = np.ascontiguousarray(values.reshape(1))
    else:
        values = np.ascontiguousarray(np.broadcast_to(values, out_shape))
    if accumulate and dst.dtype.char not in "fdil":
        # bool/uint8/int8/int16: numpy's unbuffered add (logical or for bool)
        flat = (pre[:, None, None, None] + off[None, :, None, None] +
                post[None, None, :, None] + np.arange(n_in)[None, None, None, :] * s_in)
        ufunc = np.logical_or if dst.dtype.kind == "b" else np.add
        ufunc.at(dst.reshape(-1), flat.reshape(-1),
                 np.broadcast_to(values.reshape(-1), (flat.size,)) if values.size == 1
                 else values.reshape(-1))
        return dst
    _ki.put(dst, values, pre, off, post, n_in, s_in, bool(accumulate), CONFIG.num_threads)
    return dst


def _zeros(meta_or_t, like):
    return Tensor._wrap(np.zeros(meta_or_t.shape, like._data.dtype))


def _zero(g):
    return Tensor._wrap(np.zeros((), g._data.dtype))


# index: a gather; its VJP scatters the cotangent back with accumulation.
_index = defop(
    "index", _index_fwd,
    vjp=(lambda g, out, x, indices: apply(_index_put, (_zeros(x, g), g),
                                          {"indices": indices, "accumulate": True}),),
    jvp=lambda ts, out, x, indices: apply(_index, (ts[0],), {"indices": indices}))


def _index_put_jvp(ts, out, x, values, indices, accumulate):
    tx, tv = ts
    if tv is None:
        if accumulate:
            return tx
        tv = _zero(tx)
    if tx is None:
        tx = _zeros(x, tv)
    return apply(_index_put, (tx, tv), {"indices": indices, "accumulate": accumulate})


def _last_writers(shape, indices, dtype):
    """None when no two index tuples hit the same position; else a 0/1 array,
    broadcastable to the indexed shape, that is 1 at the last of each group of
    repeated index tuples (the write that wins, in the kernel's order)."""
    adv = [d for d, i in enumerate(indices) if i is not None]
    sizes = [shape[d] for d in adv]
    cs = tuple(np.where(indices[d] < 0, indices[d] + shape[d], indices[d]).reshape(-1)
               for d in adv)
    flat = np.ravel_multi_index(cs, sizes) if sizes else np.zeros(0, _I64)
    nb = flat.size
    first = np.unique(flat[::-1], return_index=True)[1]
    if first.size == nb:
        return None
    keep = np.zeros(nb, dtype)
    keep[nb - 1 - first] = 1
    out_shape = _layout(shape, [0] * len(shape), indices)[5]
    B = indices[adv[0]].shape
    npre = _n_pre(shape, indices)
    return keep.reshape((1,) * npre + B + (1,) * (len(out_shape) - npre - len(B)))


def _n_pre(shape, indices):
    """How many dims of the indexed shape come before the index dims."""
    adv = [d for d, i in enumerate(indices) if i is not None]
    if adv != list(range(adv[0], adv[-1] + 1)):
        return 0
    return adv[0]


def _put_values_vjp(g, out, x, values, indices, accumulate):
    gv = apply(_index, (g,), {"indices": indices})
    if not accumulate:
        # a repeated index: only the write that wins has an effect
        keep = _last_writers(x.shape, indices, g._data.dtype)
        if keep is not None:
            gv = gv * Tensor._wrap(keep)
    return gv


# index_put: linear in (x, values) jointly.  With accumulate=False and repeated
# indices only the last write counts (for values' gradient too; PyTorch gives
# every repeated write the gradient).
_index_put = defop(
    "index_put", _index_put_fwd,
    vjp=(lambda g, out, x, values, indices, accumulate: g if accumulate else apply(
            _index_put, (g, _zero(g)), {"indices": indices, "accumulate": False}),
         _put_values_vjp),
    jvp=_index_put_jvp)


# ---------------------------------------------------------------- keys
def _as_index_array(k, op):
    """An ndarray for an index entry that is not basic, or None when it is basic."""
    if isinstance(k, Tensor):
        arr = k._data
    elif isinstance(k, (bool, np.bool_)):
        return np.array(bool(k))
    elif isinstance(k, (list, np.ndarray)):
        try:
            arr = np.asarray(k)
        except ValueError:
            raise IndexError(f"{op}: a list index must be rectangular") from None
        if arr.size == 0 and arr.dtype.kind == "f":
            arr = arr.astype(_I64)
    else:
        return None
    if arr.dtype.kind not in "biu":
        raise IndexError(f"{op}: tensors used as indices must be long, int, byte or bool "
                         f"tensors, got {arr.dtype}")
    return arr


def split_key(shape, key, op="__getitem__", ints_select=True):
    """Split ``key`` (with at least one advanced entry) for an array of ``shape``.

    Returns ``(basic, indices, dims)``: ``basic`` a key of ints, slices, None and
    Ellipsis-free entries giving a view; ``indices`` one entry per dim of that
    view (None, or an int64 ndarray, all broadcast to one shape); ``dims`` the
    original dim of each view dim (for messages; None for a new dim).
    ``ints_select``: Python ints and 0-d integer tensors select (PyTorch); else
    0-d tensors are advanced indices (``index_put``).

    Raises:
        IndexError: too many indices, a mask whose shape does not match, index
            arrays that do not broadcast, or an index dtype that is not integer/bool.
        TypeError: other index types (from ``check_index``, on the basic part).
    """
    if not isinstance(key, tuple):
        key = (key,)
    items = []
    consumed = 0
    seen_ellipsis = False
    for k in key:
        arr = _as_index_array(k, op)
        if arr is not None and arr.ndim == 0 and arr.dtype.kind in "iu" and ints_select:
            items.append(("basic", int(arr)))
            consumed += 1
        elif arr is not None:
            kind = "mask" if arr.dtype.kind == "b" else "idx"
            items.append((kind, arr))
            consumed += arr.ndim if kind == "mask" else 1
        elif k is Ellipsis:
            if seen_ellipsis:
                raise IndexError(f"{op}: an index can only have a single ellipsis ('...')")
            seen_ellipsis = True
            items.append(("ellipsis", k))
        elif k is None:
            items.append(("none", k))
        else:
            items.append(("basic", k))
            consumed += 1
    ndim = len(shape)
    if consumed > ndim:
        raise IndexError(f"{op}: too many indices for tensor of dimension {ndim}")
    basic, adv, dims = [], {}, []
    dim = 0
    for kind, v in items:
        if kind == "ellipsis":
            fill = ndim - consumed
            basic.extend([slice(None)] * fill)
            dims.extend(range(dim, dim + fill))
            dim += fill
        elif kind == "none":
            basic.append(None)
            dims.append(None)
        elif kind == "basic":
            basic.append(v)
            if isinstance(v, slice):
                dims.append(dim)
            dim += 1
        elif kind == "idx":
            basic.append(slice(None))
            adv[len(dims)] = v
            dims.append(dim)
            dim += 1
        elif v.ndim == 0:                       # a bool scalar: a new dim of size 1 or 0
            basic.append(None)
            adv[len(dims)] = np.zeros(1 if v else 0, _I64)
            dims.append(None)
        else:
            want = shape[dim:dim + v.ndim]
            if v.shape != want:
                raise IndexError(f"{op}: the shape of the mask {list(v.shape)} at index "
                                 f"{dim} does not match the shape of the indexed tensor "
                                 f"{list(shape)} at index {dim}")
            for j, nz in enumerate(np.nonzero(v)):
                basic.append(slice(None))
                adv[len(dims)] = nz
                dims.append(dim + j)
            dim += v.ndim
    dims.extend(range(dim, ndim))
    try:
        bshape = np.broadcast_shapes(*[a.shape for a in adv.values()])
    except ValueError:
        raise IndexError(f"{op}: shape mismatch: indexing tensors could not be broadcast "
                         f"together with shapes "
                         f"{', '.join(str(list(a.shape)) for a in adv.values())}") from None
    indices = [None] * len(dims)
    for d, a in adv.items():
        a = a.astype(_I64, copy=False)
        if a.shape != bshape or not a.flags.c_contiguous:
            a = np.ascontiguousarray(np.broadcast_to(a, bshape))
        indices[d] = a
    return tuple(basic), tuple(indices), dims


def _renamed(e, dims, op):
    d = dims[e.dim] if e.dim < len(dims) and dims[e.dim] is not None else e.dim
    return IndexError(f"{op}: index {e.value} is out of bounds for dimension {d} with "
                      f"size {e.size}")


def advanced_getitem(input, key):
    """``input[key]`` for keys with integer/bool tensors, lists or ndarrays (see the
    module docstring for the rules).  A copy, differentiable in ``input``.

    Raises:
        IndexError: an index out of range (naming the dim and its size), a mask of
            the wrong shape, index arrays that do not broadcast, too many indices,
            float index tensors.
    """
    if type(key) is Tensor and key._data.dtype == _I64 and key._data.ndim and \
            input._data.ndim:                   # x[int64 tensor]: the common case
        d = key._data
        indices = (d if d.flags.c_contiguous else np.ascontiguousarray(d),) + \
            (None,) * (input._data.ndim - 1)
        try:
            return apply(_index, (input,), {"indices": indices})
        except BadIndex as e:
            raise _renamed(e, [0], "__getitem__") from None
    from tensorplay._ops.shape import getitem
    basic, indices, dims = split_key(input._data.shape, key)
    view = getitem(input, basic)
    if all(i is None for i in indices):         # only 0-d integer tensors: a view
        return view
    try:
        return apply(_index, (view,), {"indices": indices})
    except BadIndex as e:
        raise _renamed(e, dims, "__getitem__") from None


_check_index_put = declare(Signature(
    "index_put", TensorArg("input"), TensorArg("values"), BoolArg("accumulate", default=False)))


def index_put(input, indices, values, accumulate=False):
    """Out of place: a copy of ``input`` with ``values`` written at ``indices``
    (``input[indices] = values``, broadcast), or added there with
    ``accumulate=True`` (repeated indices then add up; without it the last
    repeated write wins, which PyTorch leaves undefined).

    Args:
        input (Tensor): any dtype; values are cast to it.
        indices (tuple or list of Tensor): one per leading dim; int64/int32 (negative
            counts from the end) or bool masks (covering as many dims as they have).
        values (Tensor): broadcastable to the indexed shape.
        accumulate (bool)

    Differentiable in ``input`` and ``values`` (both modes).

    Raises:
        TypeError: non-Tensor input/values, indices not a tuple/list of Tensors.
        IndexError: an index out of range, bad masks, indices that do not broadcast.
        RuntimeError: values that do not broadcast to the indexed shape.
    """
    input, values, accumulate = _check_index_put(input, values, accumulate)
    if not isinstance(indices, (tuple, list)) or not all(
            i is None or isinstance(i, Tensor) for i in indices):
        raise TypeError(f"index_put(): argument 'indices' must be a tuple of Tensors, "
                        f"not {type(indices).__name__}")
    key = tuple(slice(None) if i is None else i for i in indices)
    if not any(i is not None for i in indices):
        raise IndexError("index_put(): indices must hold at least one tensor")
    return put_key(input, key, values, accumulate, "index_put", ints_select=False)


def put_key(input, key, values, accumulate, op, ints_select=True, dims=None):
    """``index_put`` with a key of index tensors and full slices on ``input``;
    ``values`` a Tensor; ``dims`` the dims to name in errors (default: input's)."""
    basic, indices, own = split_key(input._data.shape, key, op, ints_select)
    dims = own if dims is None else dims
    if any(not (isinstance(b, slice) and b == slice(None)) for b in basic):
        raise IndexError(f"{op}: expected only index tensors")
    if len(indices) < input._data.ndim:
        indices = indices + (None,) * (input._data.ndim - len(indices))
    if len(indices) > input._data.ndim:
        raise IndexError(f"{op}: too many indices for tensor of dimension "
                         f"{input._data.ndim}")
    _, _, _, _, _, out_shape = _layout(input._data.shape, [0] * input._data.ndim, indices)
    vshape = values._data.shape
    while len(vshape) > len(out_shape) and vshape[0] == 1:
        vshape = vshape[1:]
    try:
        ok = np.broadcast_shapes(vshape, out_shape) == out_shape
    except ValueError:
        ok = False
    if not ok:
        raise RuntimeError(f"{op}(): shape mismatch: value tensor of shape "
                           f"{list(values._data.shape)} cannot be broadcast to indexing "
                           f"result of shape {list(out_shape)}")
    if vshape != values._data.shape:
        values = values.reshape(vshape)
    if values.dtype is not input.dtype:
        values = values.to(input.dtype)
    try:
        return apply(_index_put, (input, values), {"indices": indices,
                                                    "accumulate": bool(accumulate)})
    except BadIndex as e:
        raise _renamed(e, dims, op if op.startswith("__") else op + "()") from None



# ---------------------------------------------------------------- for the scatter family
def take_indices(input, indices, op):
    """``index`` on prepared ``indices`` (one entry per dim: None or a C-contiguous
    int64 ndarray, all of one shape), with out-of-range errors naming ``op``."""
    try:
        return apply(_index, (input,), {"indices": indices})
    except BadIndex as e:
        raise IndexError(f"{op}(): index {e.value} is out of bounds for dimension "
                         f"{e.dim} with size {e.size}") from None


def put_indices(input, indices, values, accumulate, op):
    """``index_put`` on prepared ``indices`` (as ``take_indices``); ``values`` a
    Tensor of input's dtype broadcastable to the indexed shape."""
    try:
        return apply(_index_put, (input, values), {"indices": indices,
                                                    "accumulate": bool(accumulate)})
    except BadIndex as e:
        raise IndexError(f"{op}(): index {e.value} is out of bounds for dimension "
                         f"{e.dim} with size {e.size}") from None
