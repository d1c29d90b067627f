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
