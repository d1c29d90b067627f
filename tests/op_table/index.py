"""Op-table rows of the indexing family: advanced ``x[key]`` (the ``index``
primitive), ``index_put`` and the scatter family (tensorplay/_ops/index.py,
scatter.py).  References are numpy's own fancy indexing and ``np.add.at``."""
import hypothesis.strategies as st
import numpy as np

import tensorplay as tp

from ._base import Fuzz, OpSpec, _normal, fixed_samples

# ---------------------------------------------------------------- x[key]
# keys where PyTorch and numpy agree (ints never sit beside an advanced index
# across a slice, see tests/test_indexing.py for that case)
_KEYS = [
    ("list", (5, 3), [1, 0, 1, 4]),                       # repeated: accumulate in VJP
    ("two_lists", (3, 4), ([0, 2, 2], [1, 3, 3])),
    ("slice_list", (3, 4), (slice(None), [0, 2])),
    ("mask", (3, 4), [[True, False, True, True], [False] * 4, [True, True, False, False]]),
    ("row_mask", (3, 4), [True, False, True]),
    ("all_false", (3, 4), [False, False, False]),
    ("separated", (2, 3, 4), ([[0], [1]], slice(None), [1, 0, 3])),
    ("ellipsis", (2, 3, 4), (Ellipsis, [-1, 0])),
    ("empty", (3, 4), []),
    ("none", (3, 4), (None, [2, 0])),
    ("0d_bool", (), True),
    ("noncontig", (3, 4), (slice(None), [3, 0, 0])),
    ("broadcast", (3, 4), ([[0], [2]], [[1, 2, 3]])),
]


def _index_samples(rng):
    return fixed_samples(*[(label, [(_normal, shape)], {"key": key})
                           for label, shape, key in _KEYS])(rng)


def _torch_key(T, key):
    """The same key for PyTorch: lists as tensors (torch reads a nested list as a
    tuple of indices)."""
    if isinstance(key, tuple):
        return tuple(_torch_key(T, k) for k in key)
    return T.from_numpy(_np_index(key)) if isinstance(key, list) else key


def _np_index(i):
    a = np.asarray(i)
    return a if a.size else a.astype(np.int64)


def _adv_key(draw, shape):
    """A random advanced key for ``shape``: an int list on one dim (negatives and
    repeats allowed), or a bool mask on the leading dims."""
    if not shape:
        return draw(st.booleans())
    if draw(st.booleans()):
        d = draw(st.integers(0, len(shape) - 1))
        n = shape[d]
        idx = (draw(st.lists(st.integers(-n, n - 1), max_size=5)) if n else [])
        return (slice(None),) * d + (idx,)
    k = draw(st.integers(1, len(shape)))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    return (rng.random(shape[:k]) < 0.5).tolist() if k == 1 else rng.random(shape[:k]) < 0.5


def _index_kwargs(draw, arrays):
    return {"key": _adv_key(draw, arrays[0].shape)}


# ---------------------------------------------------------------- index_put
def _put_ref(x, v, idx, accumulate):
    out = np.array(x, np.float64)
    key = tuple(_np_index(i) for i in idx)
    if accumulate:
        np.add.at(out, key, np.broadcast_to(v, out[key].shape))
    else:
        out[key] = v
    return out


def _np_index(i):
    a = np.asarray(i)
    return a if a.size else a.astype(np.int64)


def _put(x, v, idx, accumulate):
    return tp.index_put(x, tuple(tp.from_numpy(_np_index(i)) for i in idx), v, accumulate)


_PUT = [
    ("acc_repeated", (5, 3), (4, 3), ([1, 0, 1, 4],), True),
    ("assign", (5, 3), (3, 3), ([4, 0, 2],), False),
    ("two_dims", (3, 4), (3,), ([0, 2, 1], [1, 3, 3]), False),
    ("bcast_values", (3, 4), (4,), ([2, 0],), True),
    ("0d_values", (3, 4), (), ([[0, 1], [2, 2]],), True),
    ("mask", (3, 4), (2, 4), ([True, False, True],), False),
    ("empty", (3, 4), (0, 4), ([],), True),
    ("noncontig", (3, 4), (2, 4), ([2, 1],), False),
]


def _put_samples(rng):
    return fixed_samples(*[(label, [(_normal, xs), (_normal, vs)],
                            {"idx": idx, "accumulate": acc})
                           for label, xs, vs, idx, acc in _PUT])(rng)


def _put_shapes(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    n = draw(st.integers(0, 5))
    _PUT_LAST[:] = [shape, n]
    return [shape, (n,) + shape[1:]]


def _put_kwargs(draw, arrays):
    shape, n = _PUT_LAST
    idx = draw(st.lists(st.integers(-shape[0], shape[0] - 1), min_size=n, max_size=n))
    return {"idx": (idx,), "accumulate": True}


_PUT_LAST = []

SPECS = [
    OpSpec("index", lambda x, key: x[key], lambda x, key: x[key], _index_samples,
           smooth=False,
           fuzz=Fuzz("getitem", kinds="fib", kwargs=_index_kwargs,
                     base=lambda ts, kw: [ts[0], kw["key"]]),
           torch=lambda T, x, key: x[_torch_key(T, key)]),
    OpSpec("index_put", _put, _put_ref, _put_samples, smooth=False,
           fuzz=Fuzz("index_put", ("input", "values"), kinds="fi", shapes=_put_shapes,
                     kwargs=_put_kwargs,
                     base=lambda ts, kw: [ts[0], tuple(tp.from_numpy(_np_index(i))
                                                       for i in kw["idx"]),
                                          ts[1], kw["accumulate"]]),
           torch=lambda T, x, v, idx, accumulate: T.index_put(
               x, tuple(T.from_numpy(_np_index(i)) for i in idx), v, accumulate)),
]


# ---------------------------------------------------------------- the scatter family
# Compositions over index / index_put / where: rows named after the primitive with
# the public op as variant.  Index kwargs are numpy arrays (the reference reads them
# as they are; the tensorplay and torch calls wrap them).
def _t(a):
    return tp.from_numpy(_np_index(a))


def _add_at(x, dim, idx, src, assign=False):
    out = np.array(x, np.float64)
    o, s = np.moveaxis(out, dim, 0), np.moveaxis(np.asarray(src, np.float64), dim, 0)
    if assign:
        o[np.asarray(idx)] = s
    else:
        np.add.at(o, np.asarray(idx, np.int64), s)
    return out


def _scatter_ref(x, dim, index, src=None, reduce="assign", include_self=True):
    out = np.array(x, np.float64)
    index = np.asarray(index)
    if index.size == 0:
        return out
    coords = list(np.indices(index.shape))
    coords[dim] = index
    coords = tuple(coords)
    vals = src[tuple(slice(0, n) for n in index.shape)] if np.ndim(src) else \
        np.broadcast_to(src, index.shape)
    if reduce == "assign":
        out[coords] = vals
        return out
    fill = {"sum": 0.0, "prod": 1.0, "amax": -np.inf, "amin": np.inf, "mean": 0.0}[reduce]
    if not include_self:
        out[coords] = fill
    ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
             "amin": np.minimum}[reduce]
    ufunc.at(out, coords, vals)
    if reduce == "mean":
        count = np.full(out.shape, 1.0 if include_self else 0.0)
        np.add.at(count, coords, 1.0)
        out = out / np.maximum(count, 1.0)
    return out


def _fill_ref(x, v=0.5, *, dim, index):
    out = np.array(x, np.float64 if x.dtype.kind == "f" else x.dtype)
    np.moveaxis(out, dim, 0)[np.asarray(index, np.int64)] = np.asarray(v).astype(out.dtype)
    return out


def _masked_select_ref(x, mask):
    shape = np.broadcast_shapes(np.shape(x), np.shape(mask))
    return np.broadcast_to(x, shape)[np.broadcast_to(mask, shape)]


def _masked_scatter_ref(x, src, mask):
    shape = np.broadcast_shapes(np.shape(x), np.shape(mask))
    out = np.array(np.broadcast_to(x, shape), np.float64)
    m = np.broadcast_to(mask, shape)
    out[m] = np.asarray(src).reshape(-1)[:int(m.sum())]
    return out


_M34 = np.array([[True, False, True, True], [False] * 4, [True, True, False, False]])
_I_SC = np.array([[0, 1, 2, 0], [2, 2, 0, 1]])        # scatter index into dim 0 of (3, 4)


def _sel_shapes(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    dim = draw(st.integers(0, len(shape) - 1))
    n = draw(st.integers(0, 5))
    # (non-negative: index_select, index_add, index_copy refuse negatives, as PyTorch)
    idx = np.array(draw(st.lists(st.integers(0, shape[dim] - 1), min_size=n,
                                 max_size=n)), np.int64)
    _SEL_LAST[:] = [dim, idx]
    src = shape[:dim] + (n,) + shape[dim + 1:]
    return [shape, src]


_SEL_LAST = []


def _sel_kwargs(draw, arrays):
    return {"dim": _SEL_LAST[0], "index": _SEL_LAST[1]}


def _scatter_shapes(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    dim = draw(st.integers(0, len(shape) - 1))
    ish = tuple(draw(st.integers(0, s)) for s in shape)
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    _SC_LAST[:] = [dim, rng.integers(0, shape[dim], ish)]
    return [shape, ish]


_SC_LAST = []


def _scatter_kwargs(draw, arrays):
    return {"dim": _SC_LAST[0], "index": _SC_LAST[1]}


def _mask_shapes(draw):
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    _MASK_LAST[:] = [np.asarray(rng.random(shape[1:] if shape and draw(st.booleans()) else shape) < 0.5)]
    return [shape]


_MASK_LAST = []


def _mask_kwargs(draw, arrays):
    return {"mask": _MASK_LAST[0]}


def _sel_fuzz(sig, two=False, kinds="fi"):
    return Fuzz(sig, ("input", "source") if two else ("input",), kinds=kinds,
                shapes=(_sel_shapes if two else lambda d: _sel_shapes(d)[:1]),
                kwargs=_sel_kwargs,
                base=(lambda ts, kw: [ts[0], kw["dim"], _t(kw["index"]), ts[1]]) if two
                else (lambda ts, kw: [ts[0], kw["dim"], _t(kw["index"])]))


def _sc_fuzz(sig, extra=()):
    return Fuzz(sig, ("input", "src"), shapes=_scatter_shapes, kwargs=_scatter_kwargs,
                base=lambda ts, kw: [ts[0], kw["dim"], _t(kw["index"]), ts[1], *extra])


_SC_SAMPLES = fixed_samples(
    ("dim0", [(_normal, (3, 4)), (_normal, (2, 4))], {"dim": 0, "index": _I_SC}),
    ("dim1_small", [(_normal, (3, 4)), (_normal, (2, 2))],   # src larger than index:
     {"dim": 1, "index": np.array([[3, 3], [0, 1]])}),       # tests/test_indexing.py
    ("empty", [(_normal, (3, 4)), (_normal, (0, 4))],
     {"dim": 0, "index": np.zeros((0, 4), np.int64)}),
    ("noncontig", [(_normal, (3, 4)), (_normal, (2, 4))], {"dim": 0, "index": _I_SC}))
_SC_UNIQUE = fixed_samples(       # no repeated target: assignment is well defined
    ("dim0", [(_normal, (3, 4)), (_normal, (1, 4))],       # (torch's backward needs
     {"dim": 0, "index": np.array([[0, 1, 2, 0]])}),       # src of index's shape)
    ("dim1", [(_normal, (3, 4)), (_normal, (3, 2))],
     {"dim": 1, "index": np.array([[3, 0], [0, 1], [2, 1]])}),
    ("noncontig", [(_normal, (3, 4)), (_normal, (1, 4))],
     {"dim": 0, "index": np.array([[2, 0, 1, 1]])}))


def _reduce_row(reduce, include_self):
    return OpSpec(
        "index_put",
        lambda x, s, dim, index: tp.scatter_reduce(x, dim, _t(index), s, reduce,
                                                   include_self=include_self),
        lambda x, s, dim, index: _scatter_ref(x, dim, index, s, reduce, include_self),
        _SC_SAMPLES, variant=f"scatter_reduce_{reduce}{'' if include_self else '_noself'}",
        smooth=False, fuzz=_sc_fuzz("scatter_reduce", (reduce,)),
        torch=lambda T, x, s, dim, index: T.scatter_reduce(
            x, dim, T.from_numpy(_np_index(index)), s, reduce, include_self=include_self))


SPECS += [
    OpSpec("index", lambda x, dim, index: tp.index_select(x, dim, _t(index)),
           lambda x, dim, index: np.take(x, np.asarray(index, np.int64), axis=dim),
           fixed_samples(("dim0", [(_normal, (5, 3))], {"dim": 0, "index": [4, 0, 4]}),
                         ("dim1", [(_normal, (3, 4))], {"dim": -1, "index": [1, 3]}),
                         ("empty", [(_normal, (3, 4))], {"dim": 1, "index": []}),
                         ("0d_index", [(_normal, (3, 4))], {"dim": 1, "index": np.array([2])}),
                         ("noncontig", [(_normal, (3, 4))], {"dim": 1, "index": [3, 0]})),
           variant="index_select", smooth=False, fuzz=_sel_fuzz("index_select", kinds="fib"),
           torch=lambda T, x, dim, index: T.index_select(x, dim, T.from_numpy(
               _np_index(index) % x.shape[dim]))),
    OpSpec("index", lambda x, index: tp.take(x, _t(index)),
           lambda x, index: np.take(np.ravel(x), np.asarray(index, np.int64)),
           fixed_samples(("2d", [(_normal, (3, 4))], {"index": [[0, 11], [5, 5]]}),
                         ("0d", [(_normal, ())], {"index": [0, 0]}),
                         ("noncontig", [(_normal, (3, 4))], {"index": [1, 2, 7]})),
           variant="take", smooth=False,
           fuzz=Fuzz("take", kinds="fib", shapes=lambda d: [(d(st.integers(1, 6)),)],
                     kwargs=lambda d, arrs: {"index": np.array(d(st.lists(
                         st.integers(0, arrs[0].size - 1), max_size=5)), np.int64)},
                     base=lambda ts, kw: [ts[0], _t(kw["index"])]),
           torch=lambda T, x, index: T.take(x, T.from_numpy(_np_index(index)))),
    OpSpec("index", lambda x, mask: tp.masked_select(x, tp.from_numpy(np.asarray(mask))),
           _masked_select_ref,
           fixed_samples(("2d", [(_normal, (3, 4))], {"mask": _M34}),
                         ("bcast", [(_normal, (3, 4))], {"mask": _M34[0]}),
                         ("bcast_x", [(_normal, (4,))], {"mask": _M34}),
                         ("0d", [(_normal, ())], {"mask": np.array(True)}),
                         ("noncontig", [(_normal, (3, 4))], {"mask": _M34})),
           variant="masked_select", smooth=False,
           fuzz=Fuzz("masked_select", kinds="fib", shapes=_mask_shapes, kwargs=_mask_kwargs,
                     base=lambda ts, kw: [ts[0], tp.from_numpy(kw["mask"])]),
           torch=lambda T, x, mask: T.masked_select(x, T.from_numpy(np.asarray(mask)))),
    OpSpec("where", lambda x, v=0.5, *, mask: tp.masked_fill(
               x, tp.from_numpy(np.asarray(mask)), v),
           lambda x, v=0.5, *, mask: np.where(mask, np.asarray(v).astype(x.dtype), x),
           fixed_samples(("2d", [(_normal, (3, 4)), (_normal, ())], {"mask": _M34}),
                         ("bcast", [(_normal, (3, 4)), (_normal, ())], {"mask": _M34[1:2]}),
                         ("noncontig", [(_normal, (3, 4)), (_normal, ())], {"mask": _M34})),
           variant="masked_fill", smooth=False,
           fuzz=Fuzz("masked_fill", kinds="fi", shapes=_mask_shapes, kwargs=_mask_kwargs,
                     base=lambda ts, kw: [ts[0], tp.from_numpy(kw["mask"]), 0.5]),
           torch=lambda T, x, v=0.5, *, mask: T.masked_fill(
               x, T.from_numpy(np.asarray(mask)), v)),
    OpSpec("index_put", lambda x, s, dim, index: tp.index_add(x, dim, _t(index), s, alpha=2.0),
           lambda x, s, dim, index: _add_at(x, dim, index, 2.0 * s),
           fixed_samples(("dim0", [(_normal, (5, 3)), (_normal, (3, 3))],
                          {"dim": 0, "index": [4, 0, 4]}),
                         ("dim1", [(_normal, (3, 4)), (_normal, (3, 2))],
                          {"dim": -1, "index": [1, 3]}),
                         ("empty", [(_normal, (3, 4)), (_normal, (3, 0))],
                          {"dim": 1, "index": []}),
                         ("noncontig", [(_normal, (3, 4)), (_normal, (3, 2))],
                          {"dim": 1, "index": [3, 3]})),
           variant="index_add", smooth=False, fuzz=_sel_fuzz("index_add", two=True),
           torch=lambda T, x, s, dim, index: T.index_add(
               x, dim, T.from_numpy(_np_index(index) % x.shape[dim]), s, alpha=2.0)),
    OpSpec("index_put", lambda x, s, dim, index: tp.index_copy(x, dim, _t(index), s),
           lambda x, s, dim, index: _add_at(x, dim, index, s, assign=True),
           fixed_samples(("dim0", [(_normal, (5, 3)), (_normal, (2, 3))],
                          {"dim": 0, "index": [4, 0]}),
                         ("noncontig", [(_normal, (3, 4)), (_normal, (3, 2))],
                          {"dim": 1, "index": [3, 1]})),
           variant="index_copy", smooth=False, fuzz=_sel_fuzz("index_copy", two=True),
           torch=lambda T, x, s, dim, index: T.index_copy(
               x, dim, T.from_numpy(_np_index(index) % x.shape[dim]), s)),
    OpSpec("index_put", lambda x, v=0.5, *, dim, index: tp.index_fill(x, dim, _t(index), v),
           _fill_ref,
           fixed_samples(("dim0", [(_normal, (5, 3)), (_normal, ())],
                          {"dim": 0, "index": [4, 0, 4]}),
                         ("noncontig", [(_normal, (3, 4)), (_normal, ())],
                          {"dim": 1, "index": [3, 1]})),
           variant="index_fill", smooth=False,
           fuzz=Fuzz("index_fill", kinds="fi", shapes=lambda d: _sel_shapes(d)[:1],
                     kwargs=_sel_kwargs,
                     base=lambda ts, kw: [ts[0], kw["dim"], _t(kw["index"]), 0.5]),
           torch=lambda T, x, v=0.5, *, dim, index: T.index_fill(
               x, dim, T.from_numpy(_np_index(index)), v)),
    OpSpec("index_put", lambda x, s, dim, index: tp.scatter(x, dim, _t(index), s),
           lambda x, s, dim, index: _scatter_ref(x, dim, index, s), _SC_UNIQUE,
           variant="scatter", smooth=False, fuzz=_sc_fuzz("scatter"),
           torch=lambda T, x, s, dim, index: T.scatter(
               x, dim, T.from_numpy(_np_index(index)), s)),
    OpSpec("index_put", lambda x, s, dim, index: tp.scatter_add(x, dim, _t(index), s),
           lambda x, s, dim, index: _scatter_ref(x, dim, index, s, "sum"), _SC_SAMPLES,
           variant="scatter_add", smooth=False, fuzz=_sc_fuzz("scatter_add"),
           torch=lambda T, x, s, dim, index: T.scatter_add(
               x, dim, T.from_numpy(_np_index(index)), s)),
    OpSpec("index_put",
           lambda x, s, mask: tp.masked_scatter(x, tp.from_numpy(np.asarray(mask)), s),
           _masked_scatter_ref,
           fixed_samples(("2d", [(_normal, (3, 4)), (_normal, (3, 4))], {"mask": _M34}),
                         ("bcast_small_src", [(_normal, (3, 4)), (_normal, (10,))],
                          {"mask": _M34[0]}),
                         ("noncontig", [(_normal, (3, 4)), (_normal, (3, 4))],
                          {"mask": _M34})),
           variant="masked_scatter", smooth=False,
           fuzz=Fuzz("masked_scatter", ("input", "source"), kinds="fi",
                     shapes=lambda d: _mask_shapes(d) * 2, kwargs=_mask_kwargs,
                     base=lambda ts, kw: [ts[0], tp.from_numpy(kw["mask"]), ts[1]]),
           torch=lambda T, x, s, mask: T.masked_scatter(x, T.from_numpy(np.asarray(mask)), s)),
] + [_reduce_row(r, inc) for r in ("sum", "prod", "mean", "amax", "amin")
     for inc in (True, False)]
