"""Op-table rows of the order statistics (tensorplay/_ops/sort.py).  They are
compositions over the ``gather`` primitive, so each row covers ``gather``; the
references are numpy's sorts."""
import numpy as np

import tensorplay as tp

from ._base import Fuzz, OpSpec, _normal, _one_shape, fixed_samples


def _np_sort(x, dim, descending=False):
    if x.ndim == 0:
        return x.copy()
    s = np.sort(x, axis=dim, kind="stable")
    return np.flip(s, axis=dim) if descending else s


def _np_topk(x, k, dim, largest):
    s = _np_sort(x, dim, largest)
    return s if x.ndim == 0 else np.take(s, np.arange(k), axis=dim)


def _np_kth(x, k, dim, keepdim):
    if x.ndim == 0:
        return x.copy()
    v = np.take(np.sort(x, axis=dim), [k - 1], axis=dim)
    return v if keepdim else np.squeeze(v, axis=dim)


def _np_median(x, dim, keepdim):
    n = x.shape[dim]
    v = np.take(np.sort(x, axis=dim), [(n - 1) // 2], axis=dim)
    return v if keepdim else np.squeeze(v, axis=dim)


def _np_cum(ufunc):
    def ref(x, dim):
        return x.copy() if x.ndim == 0 else ufunc.accumulate(x, axis=dim)
    return ref


_DIM_CASES = [("last", [(_normal, (3, 5))], {"dim": 1}),
              ("first", [(_normal, (4, 3))], {"dim": 0}),
              ("middle", [(_normal, (2, 3, 4))], {"dim": -2}),
              ("1d", [(_normal, (6,))], {"dim": 0}),
              ("0d", [(_normal, ())], {"dim": 0}),
              ("noncontig", [(_normal, (3, 4))], {"dim": 1})]


def _k_kwargs(draw, arrays):
    import hypothesis.strategies as st
    a = arrays[0]
    n = a.shape[-1] if a.ndim else 1
    return {"k": draw(st.integers(0, n)), "dim": -1}


def _kth_kwargs(draw, arrays):
    import hypothesis.strategies as st
    a = arrays[0]
    n = a.shape[-1] if a.ndim else 1
    return {"k": draw(st.integers(1, max(n, 1))), "dim": -1}


SPECS = [
    OpSpec("gather", lambda x, dim: tp.sort(x, dim).values, _np_sort,
           fixed_samples(*_DIM_CASES), variant="sort",
           fuzz=Fuzz("sort", kinds="fib"),
           torch=lambda T, x, dim: T.sort(x, stable=True, dim=dim).values),
    OpSpec("gather", lambda x, dim: x.sort(dim, descending=True).values,
           lambda x, dim: _np_sort(x, dim, True), fixed_samples(*_DIM_CASES),
           variant="sort_descending",
           fuzz=Fuzz("sort", kinds="fib", base=lambda ts, kw: [ts[0], kw["dim"], True]),
           torch=lambda T, x, dim: x.sort(stable=True, dim=dim, descending=True).values),
    OpSpec("gather", lambda x, dim: tp.take_along_dim(x, x.argsort(dim), dim),
           _np_sort, fixed_samples(*[c for c in _DIM_CASES if c[0] != "0d"]),
           variant="argsort",
           fuzz=Fuzz("argsort", kinds="fib", shapes=_one_shape(min_dims=1)),
           torch=lambda T, x, dim: T.take_along_dim(x, x.argsort(stable=True, dim=dim), dim)),
    OpSpec("gather", lambda x: tp.msort(x), lambda x: _np_sort(x, 0),
           fixed_samples(("2d", [(_normal, (4, 3))], {}), ("1d", [(_normal, (5,))], {})),
           variant="msort",
           fuzz=Fuzz("sort", kinds="fib", base=lambda ts, kw: [ts[0], 0, False]),
           torch=lambda T, x: T.msort(x)),
    OpSpec("gather", lambda x, k, dim, largest: tp.topk(x, k, dim, largest).values, _np_topk,
           fixed_samples(("largest", [(_normal, (3, 5))], {"k": 2, "dim": 1, "largest": True}),
                         ("smallest", [(_normal, (5, 3))],
                          {"k": 3, "dim": 0, "largest": False}),
                         ("all", [(_normal, (4,))], {"k": 4, "dim": 0, "largest": True}),
                         ("noncontig", [(_normal, (3, 4))],
                          {"k": 1, "dim": -1, "largest": True})),
           variant="topk",
           fuzz=Fuzz("topk", kinds="fib", shapes=_one_shape(min_dims=1), kwargs=_k_kwargs,
                     base=lambda ts, kw: [ts[0], kw["k"], kw["dim"], True, True]),
           torch=lambda T, x, k, dim, largest: T.topk(x, k, dim, largest).values),
    OpSpec("gather", lambda x, k, dim, keepdim: tp.kthvalue(x, k, dim, keepdim).values, _np_kth,
           fixed_samples(("last", [(_normal, (3, 5))], {"k": 2, "dim": 1, "keepdim": False}),
                         ("keep", [(_normal, (5, 3))], {"k": 5, "dim": 0, "keepdim": True}),
                         ("0d", [(_normal, ())], {"k": 1, "dim": 0, "keepdim": False})),
           variant="kthvalue",
           fuzz=Fuzz("kthvalue", kinds="fib", shapes=_one_shape(min_dims=1, min_side=1),
                     kwargs=_kth_kwargs,
                     base=lambda ts, kw: [ts[0], kw["k"], kw["dim"], False]),
           torch=lambda T, x, k, dim, keepdim: T.kthvalue(x, k, dim, keepdim).values),
    OpSpec("gather", lambda x: tp.median(x), lambda x: _np_median(x.reshape(-1), 0, False),
           fixed_samples(("odd", [(_normal, (3, 5))], {}), ("even", [(_normal, (2, 3))], {}),
                         ("0d", [(_normal, ())], {})),
           variant="median_all",
           fuzz=Fuzz("median", kinds="fib", shapes=_one_shape(min_dims=1, min_side=1),
                     base=lambda ts, kw: [ts[0], -1, False]),
           torch=lambda T, x: T.median(x)),
    OpSpec("gather", lambda x, dim, keepdim: x.median(dim, keepdim).values, _np_median,
           fixed_samples(("odd", [(_normal, (3, 5))], {"dim": 1, "keepdim": False}),
                         ("even", [(_normal, (4, 3))], {"dim": 0, "keepdim": True}),
                         ("noncontig", [(_normal, (3, 4))], {"dim": 1, "keepdim": False})),
           variant="median_dim",
           fuzz=Fuzz("median", kinds="fib", shapes=_one_shape(min_dims=1, min_side=1)),
           torch=lambda T, x, dim, keepdim: x.median(dim, keepdim).values),
    OpSpec("gather", lambda x, dim: tp.cummax(x, dim).values, _np_cum(np.maximum),
           fixed_samples(*_DIM_CASES), variant="cummax",
           fuzz=Fuzz("cummax", kinds="fib"),
           torch=lambda T, x, dim: T.cummax(x, dim).values),
    OpSpec("gather", lambda x, dim: x.cummin(dim).values, _np_cum(np.minimum),
           fixed_samples(*_DIM_CASES), variant="cummin",
           fuzz=Fuzz("cummin", kinds="fib"),
           torch=lambda T, x, dim: x.cummin(dim).values),
]
