"""Op-table rows of the second group of reductions: amax/amin and max/min/argmax/
aminmax, gather/take_along_dim and gather_backward, prod and its derivative
kernels, var/std, logsumexp, all/any/count_nonzero, norms.

Multi-output ops are rows of one float output (``tp.max(x, 1).values``); their
indices, ties, zeros, infinities and errors are in tests/test_reduce_more.py.
Samples are random normals (no ties), so the finite differences see smooth
functions; prod has zeros in its samples (it is a polynomial: still smooth).
"""
import math

import hypothesis.strategies as st
import numpy as np
import scipy.special

import tensorplay as tp
from tensorplay._ops.gather import gather_backward
from tensorplay._ops.reduce_norm import matrix_norm, vector_norm
from tensorplay._ops.reduce_stats import prod_backward

from ._base import Fuzz, OpSpec, _axis, _normal, _one_shape, fixed_samples, unary_samples

EMPTY = {"empty": "no identity: an empty reduced dim raises, as PyTorch"}


def _np(t):
    return t._data if isinstance(t, tp.Tensor) else np.asarray(t)


def _axes(x, dim):
    """numpy axes for a tensorplay dim argument (None / () = every dim)."""
    if np.ndim(x) == 0 or dim is None or dim == ():
        return None
    return dim


def _const(values):
    return lambda rng, shape: np.asarray(values, np.float64).reshape(shape)


DIM_CASES = (("dim1", [(_normal, (3, 4))], {"dim": 1, "keepdim": False}),
             ("dim0_keep", [(_normal, (3, 4))], {"dim": 0, "keepdim": True}),
             ("dims02", [(_normal, (2, 3, 4))], {"dim": (0, 2), "keepdim": False}),
             ("neg_dim", [(_normal, (2, 3, 4))], {"dim": -2, "keepdim": True}),
             ("noncontig", [(_normal, (3, 4))], {"dim": 1, "keepdim": False}),
             ("0d", [(_normal, ())], {"dim": 0, "keepdim": False}))
ONE_DIM = tuple(c for c in DIM_CASES if not isinstance(c[2]["dim"], tuple))


# ---------------------------------------------------------------- fuzz drawers
def _rng(draw):
    return np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))


def _gather_kwargs(draw, arrays):
    shape = arrays[0].shape
    n = max(len(shape), 1)
    dim = draw(st.integers(-n, n - 1))
    d = dim % n
    if not shape:
        return {"dim": dim, "index": tp.from_numpy(np.zeros((), np.int64))}
    ish = tuple(draw(st.integers(0, 3)) if i == d else draw(st.integers(0, s))
                for i, s in enumerate(shape))
    if shape[d] == 0:
        ish = tuple(0 if i == d else s for i, s in enumerate(ish))
    idx = _rng(draw).integers(0, max(shape[d], 1), ish)
    return {"dim": dim, "index": tp.from_numpy(idx)}


def _gather_ref(x, dim, index):
    idx = _np(index)
    if np.ndim(x) == 0:
        return x.copy()
    d = dim % x.ndim
    key = tuple(slice(None) if i == d else slice(0, s) for i, s in enumerate(idx.shape))
    return np.take_along_axis(x[key], idx, d)


_GB = []


def _gb_shapes(draw):
    nd = draw(st.integers(0, 3))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(nd))
    n = max(nd, 1)
    dim = draw(st.integers(-n, n - 1))
    d = dim % n
    ish = tuple(draw(st.integers(0, 3)) if i == d else draw(st.integers(0, s))
                for i, s in enumerate(shape))
    _GB[:] = [shape, dim, ish, draw(st.integers(0, 2 ** 32 - 1))]
    return [ish]


def _gb_kwargs(draw, arrays):
    shape, dim, ish, seed = _GB
    full = shape if shape else (1,)
    idx = np.random.default_rng(seed).integers(0, full[dim % max(len(shape), 1)], ish)
    return {"dim": dim, "index": tp.from_numpy(idx), "shape": shape}


def _gb_ref(g, dim, index, shape):
    out = np.zeros(shape if shape else (1,))
    idx = _np(index)
    if not shape:
        out[idx.reshape(-1)] += np.reshape(g, -1)
        return out.reshape(())
    d = dim % len(shape)
    grid = list(np.indices(idx.shape, sparse=True))
    grid[d] = idx
    np.add.at(out, tuple(grid), g)
    return out


def _dim_kwargs(draw, arrays):
    """dim (None, an int or a tuple) and keepdim for rows whose Signature has neither."""
    nd = arrays[0].ndim
    n = max(nd, 1)
    choice = draw(st.sampled_from(["none", "int", "tuple"]))
    if choice == "none":
        dim = None
    elif choice == "int":
        dim = draw(st.integers(-n, n - 1))
    else:
        dim = tuple(draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True)))
    return {"dim": dim, "keepdim": draw(st.booleans())}


def _take_bcast_kwargs(draw, arrays):
    r, c = arrays[0].shape
    rows = draw(st.sampled_from([1, r]))
    return {"indices": tp.from_numpy(_rng(draw).integers(0, c, (rows, draw(st.integers(0, 4)))))}


def _take_kwargs(draw, arrays):
    n = arrays[0].size
    k = draw(st.integers(0, 5))
    return {"indices": tp.from_numpy(_rng(draw).integers(0, n, k))}


_PB = []


def _pb_shapes(n_x):
    def shapes(draw):
        nd = draw(st.integers(0, 3))
        shape = tuple(draw(st.integers(0, 4)) for _ in range(nd))
        dims = tuple(sorted(draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd,
                                          unique=True)))) if nd else ()
        _PB[:] = [dims]
        kept = tuple(1 if i in dims else s for i, s in enumerate(shape))
        return [kept] + [shape] * n_x
    return shapes


def _pb_kwargs(draw, arrays):
    return {"dim": _PB[0], "keepdim": True}


def _excl(x, axes, c=None):
    """prod over ``axes`` of x with entry k left out, at every k; with ``c``:
    sum_{i != k} c_i prod_{j != i, k} x_j (closed forms, by explicit loops)."""
    x = np.asarray(x, np.float64)
    if x.ndim == 0:
        return np.ones_like(x) if c is None else np.zeros_like(x)
    axes = tuple(range(x.ndim)) if axes in (None, ()) else (
        (axes,) if isinstance(axes, int) else axes)
    axes = tuple(a % x.ndim for a in axes)
    dest = tuple(range(x.ndim - len(axes), x.ndim))
    flat = np.moveaxis(x, axes, dest)
    lead = flat.shape[:x.ndim - len(axes)]
    f = flat.reshape(lead + (-1,))
    cf = None if c is None else np.moveaxis(np.asarray(c, np.float64), axes, dest).reshape(f.shape)
    m = f.shape[-1]
    out = np.zeros_like(f)
    for k in range(m):
        if c is None:
            out[..., k] = np.prod(np.delete(f, k, axis=-1), axis=-1)
        else:
            for i in range(m):
                if i != k:
                    out[..., k] += cf[..., i] * np.prod(np.delete(f, [i, k], axis=-1), axis=-1)
    return np.moveaxis(out.reshape(flat.shape), dest, axes)


def _prod_backward_ref(g, x, dim, keepdim):
    gk = g if keepdim else np.expand_dims(g, _axes(x, dim) if _axes(x, dim) is not None
                                          else tuple(range(np.ndim(x))))
    return gk * _excl(x, dim)


def _prod_dual_ref(g, x, c, dim, keepdim):
    gk = g if keepdim else np.expand_dims(g, _axes(x, dim) if _axes(x, dim) is not None
                                          else tuple(range(np.ndim(x))))
    return gk * _excl(x, dim, c)


def _var_ref(x, dim, keepdim, correction=1):
    return np.var(x, axis=_axes(x, dim), keepdims=keepdim, ddof=correction)


def _lse_ref(x, dim, keepdim):
    if np.ndim(x) == 0:
        return np.asarray(x)
    if np.size(x) == 0:                       # the empty sum: log 0
        return np.log(np.sum(np.exp(x), axis=_axes(x, dim), keepdims=keepdim))
    return scipy.special.logsumexp(x, axis=_axes(x, dim), keepdims=keepdim)


def _vnorm_ref(x, ord, dim=None, keepdim=False):
    x = np.asarray(x)
    axes = _axes(x, dim)
    a = np.abs(x)
    if ord == math.inf:
        return np.max(a, axis=axes, keepdims=keepdim)
    if ord == -math.inf:
        return np.min(a, axis=axes, keepdims=keepdim)
    if ord == 0:
        return np.sum(a != 0, axis=axes, keepdims=keepdim).astype(x.dtype)
    return np.sum(a ** ord, axis=axes, keepdims=keepdim) ** (1.0 / ord)


def _mnorm_ref(a, ord):
    return np.linalg.norm(a, ord, axis=(-2, -1))


PROD_ZEROS = (("one_zero", [(_const([[1.5, 0.0, -2.0], [0.5, 1.2, 2.0]]), (2, 3))],
               {"dim": 1, "keepdim": False}),
              ("two_zeros", [(_const([[0.0, 3.0, 0.0], [2.0, 0.0, 1.0]]), (2, 3))],
               {"dim": (0, 1), "keepdim": True}),
              ("empty", [(_normal, (0, 3))], {"dim": 0, "keepdim": False}))


SPECS = [
    # ---- amax / amin (ties split evenly); full max / min are amax / amin of all dims
    OpSpec("amax", lambda x, dim, keepdim: tp.amax(x, dim, keepdim),
           lambda x, dim, keepdim: np.amax(x, axis=_axes(x, dim), keepdims=keepdim),
           fixed_samples(*DIM_CASES), smooth=False,
           fuzz=Fuzz("amax", kinds="fib", skip=EMPTY),
           torch=lambda T, x, dim, keepdim: T.amax(x, dim, keepdim)),
    OpSpec("amin", lambda x, dim, keepdim: x.amin(dim, keepdim),
           lambda x, dim, keepdim: np.amin(x, axis=_axes(x, dim), keepdims=keepdim),
           fixed_samples(*DIM_CASES), smooth=False,
           fuzz=Fuzz("amin", kinds="fib", skip=EMPTY),
           torch=lambda T, x, dim, keepdim: x.amin(dim, keepdim)),
    OpSpec("amax", lambda x: x.max(), np.max, unary_samples(), variant="max_all", smooth=False,
           fuzz=Fuzz("amax", kinds="fib", skip=EMPTY), torch=lambda T, x: x.max()),
    OpSpec("amin", lambda x: tp.min(x), np.min, unary_samples(), variant="min_all",
           smooth=False, fuzz=Fuzz("amin", kinds="fib", skip=EMPTY),
           torch=lambda T, x: T.min(x)),
    OpSpec("amax", lambda x: tp.aminmax(x).max - tp.aminmax(x, dim=-1).min.sum(),
           lambda x: np.max(x) - np.sum(np.min(x, axis=_axis(x, -1))), unary_samples(),
           variant="aminmax", smooth=False,
           fuzz=Fuzz("aminmax", kinds="fi", skip=EMPTY,
                     base=lambda ts, kw: [ts[0], -1, False]),
           torch=lambda T, x: T.aminmax(x).max - T.aminmax(x, dim=-1).min.sum()),
    # ---- max / min along a dim: values are a gather at the returned indices
    OpSpec("gather", lambda x, dim, keepdim: tp.max(x, dim, keepdim).values,
           lambda x, dim, keepdim: np.max(x, axis=_axis(x, dim), keepdims=keepdim),
           fixed_samples(*ONE_DIM), variant="max_dim", smooth=False,
           fuzz=Fuzz("max", kinds="fib", skip=EMPTY),
           torch=lambda T, x, dim, keepdim: T.max(x, dim, keepdim).values),
    OpSpec("gather", lambda x, dim, keepdim: x.min(dim, keepdim=keepdim)[0],
           lambda x, dim, keepdim: np.min(x, axis=_axis(x, dim), keepdims=keepdim),
           fixed_samples(*ONE_DIM), variant="min_dim", smooth=False,
           fuzz=Fuzz("min", kinds="fib", skip=EMPTY),
           torch=lambda T, x, dim, keepdim: x.min(dim, keepdim=keepdim)[0]),
    OpSpec("gather", lambda x, dim: tp.take_along_dim(x, x.argmax(dim, keepdim=True), dim),
           lambda x, dim: np.take_along_axis(x, np.argmax(x, dim, keepdims=True), dim),
           fixed_samples(("dim1", [(_normal, (3, 4))], {"dim": 1}),
                         ("dim0", [(_normal, (3, 4))], {"dim": -2})),
           variant="argmax", smooth=False,
           fuzz=Fuzz("argmax", kinds="fi", skip=EMPTY, shapes=_one_shape(min_dims=1)),
           torch=lambda T, x, dim: T.take_along_dim(x, x.argmax(dim, keepdim=True), dim)),
    OpSpec("gather", lambda x, dim: tp.take_along_dim(x, tp.argmin(x, dim, True), dim),
           lambda x, dim: np.take_along_axis(x, np.argmin(x, dim, keepdims=True), dim),
           fixed_samples(("dim1", [(_normal, (3, 4))], {"dim": 1})),
           variant="argmin", smooth=False,
           fuzz=Fuzz("argmin", kinds="fi", skip=EMPTY, shapes=_one_shape(min_dims=1)),
           torch=lambda T, x, dim: T.take_along_dim(x, T.argmin(x, dim, True), dim)),
    # ---- gather / take_along_dim / gather_backward
    OpSpec("gather", lambda x, dim, index: tp.gather(x, dim, index), _gather_ref,
           fixed_samples(
               ("dim1", [(_normal, (3, 4))],
                {"dim": 1, "index": tp.tensor([[0, 3, 3], [1, 1, 0], [2, 0, 1]])}),
               ("dim0_smaller", [(_normal, (3, 4))],
                {"dim": 0, "index": tp.tensor([[2, 0], [2, 2]])}),
               ("3d", [(_normal, (2, 3, 2))],
                {"dim": -1, "index": tp.tensor([[[1], [0], [1]], [[0], [0], [1]]])}),
               ("noncontig", [(_normal, (3, 4))],
                {"dim": 0, "index": tp.tensor([[0, 1, 2, 0]])}),
               ("0d", [(_normal, ())], {"dim": 0, "index": tp.tensor(0)})),
           smooth=False,
           fuzz=Fuzz("gather", kinds="fib", kwargs=_gather_kwargs,
                     base=lambda ts, kw: [ts[0], kw["dim"], kw["index"]]),
           torch=lambda T, x, dim, index: T.gather(x, dim, index)),
    OpSpec("gather", lambda x, indices: tp.take_along_dim(x, indices),
           lambda x, indices: np.take(np.reshape(x, -1), _np(indices)),
           fixed_samples(("flat", [(_normal, (3, 4))], {"indices": tp.tensor([5, 0, 11, 5])}),
                         ("0d", [(_normal, ())], {"indices": tp.tensor([0, 0])})),
           variant="take_along_dim", smooth=False,
           fuzz=Fuzz("take_along_dim", kinds="fib", kwargs=_take_kwargs, skip=EMPTY,
                     base=lambda ts, kw: [ts[0], kw["indices"]]),
           torch=lambda T, x, indices: T.take_along_dim(x, indices)),
    OpSpec("gather", lambda x, indices: tp.take_along_dim(x, indices, 1),
           lambda x, indices: np.take_along_axis(x, _np(indices), 1),
           fixed_samples(("bcast", [(_normal, (3, 4))], {"indices": tp.tensor([[3, 0, 3]])})),
           variant="take_along_dim_bcast", smooth=False,
           fuzz=Fuzz("take_along_dim", kinds="fib", kwargs=_take_bcast_kwargs, skip=EMPTY,
                     shapes=_one_shape(min_dims=2, max_dims=2, min_side=1),
                     base=lambda ts, kw: [ts[0], kw["indices"]]),
           torch=lambda T, x, indices: T.take_along_dim(x, indices, 1)),
    OpSpec("gather_backward",
           lambda g, dim, index, shape: gather_backward(g, dim, index, shape), _gb_ref,
           fixed_samples(
               ("repeats", [(_normal, (3, 3))],
                {"dim": 1, "index": tp.tensor([[0, 3, 3], [1, 1, 1], [2, 0, 1]]),
                 "shape": (3, 4)}),
               ("smaller", [(_normal, (2, 2))],
                {"dim": 0, "index": tp.tensor([[2, 0], [2, 2]]), "shape": (3, 4)}),
               ("0d", [(_normal, ())], {"dim": 0, "index": tp.tensor(0), "shape": ()})),
           smooth=False,
           fuzz=Fuzz("gather_backward", ("grad_output",), shapes=_gb_shapes, kwargs=_gb_kwargs,
                     base=lambda ts, kw: [ts[0], kw["dim"], kw["index"], kw["shape"]]),
           torch="an internal derivative kernel (torch's is gather's backward, scatter_add)"),
    # ---- prod and its derivative kernels (exact with zeros)
    OpSpec("prod", lambda x: x.prod(), np.prod, unary_samples(), variant="all",
           fuzz=Fuzz("prod", kinds="fib"), torch=lambda T, x: x.prod()),
    OpSpec("prod", lambda x, dim, keepdim: tp.prod(x, dim, keepdim),
           lambda x, dim, keepdim: np.prod(x, axis=_axes(x, dim), keepdims=keepdim),
           fixed_samples(*ONE_DIM, *PROD_ZEROS[:1], PROD_ZEROS[2]), variant="dim",
           fuzz=Fuzz("prod", kinds="fib"),
           torch=lambda T, x, dim, keepdim: T.prod(x, dim, keepdim)),
    OpSpec("prod", lambda x, dim, keepdim: tp.prod(x, dim, keepdim),
           lambda x, dim, keepdim: np.prod(x, axis=_axes(x, dim), keepdims=keepdim),
           fixed_samples(DIM_CASES[2], PROD_ZEROS[1]), variant="dims",
           fuzz=Fuzz("prod", kinds="fib"),
           torch=lambda T, x, dim, keepdim: x.reshape(-1).prod().reshape(
               (1, 1) if keepdim else ()) if x.ndim == 2 else x.prod(2).prod(0)),
    OpSpec("prod_backward", lambda g, x, dim, keepdim: prod_backward(g, x, dim, keepdim),
           _prod_backward_ref,
           fixed_samples(("dim1", [(_normal, (3,)), (_normal, (3, 4))], {"dim": 1,
                                                                       "keepdim": False}),
                         ("zeros", [(_normal, (1, 3)), (_const([[0.0, 2.0, 3.0],
                                                                [0.0, 0.0, 1.0]]), (2, 3))],
                          {"dim": 0, "keepdim": True}),
                         ("dims02", [(_normal, (3,)), (_normal, (2, 3, 4))],
                          {"dim": (0, 2), "keepdim": False})),
           fuzz=Fuzz("prod_backward", ("grad_output", "input"), shapes=_pb_shapes(1),
                     kwargs=_pb_kwargs),
           torch="an internal derivative kernel: torch has no public op of this name"),
    OpSpec("prod_backward",
           lambda g, x, c, dim, keepdim: prod_backward(g, x, dim, keepdim, (c,)),
           _prod_dual_ref,
           fixed_samples(("dim1", [(_normal, (3,)), (_normal, (3, 4)), (_normal, (3, 4))],
                          {"dim": 1, "keepdim": False}),
                         ("zeros", [(_normal, (1, 3)), (_const([[0.0, 2.0, 3.0],
                                                                [0.0, 0.0, 1.0]]), (2, 3)),
                                    (_normal, (2, 3))], {"dim": 0, "keepdim": True}),
                         ("dims02", [(_normal, (1, 3, 1)), (_normal, (2, 3, 4)),
                                     (_normal, (2, 3, 4))], {"dim": (0, 2), "keepdim": True})),
           variant="direction",
           fuzz=Fuzz("prod_backward", ("grad_output", "input"), shapes=_pb_shapes(2),
                     kwargs=_pb_kwargs, special=False),
           torch="an internal derivative kernel: torch has no public op of this name"),
    # ---- var / std (compositions: the last primitive is mul / sqrt)
    OpSpec("mul", lambda x, dim, keepdim: tp.var(x, dim, keepdim=keepdim),
           _var_ref, fixed_samples(*DIM_CASES[:5]), variant="var",
           fuzz=Fuzz("var", shapes=_one_shape(min_dims=1, min_side=2)),
           torch=lambda T, x, dim, keepdim: T.var(x, dim, keepdim=keepdim)),
    OpSpec("mul", lambda x, dim, keepdim: x.var(dim, keepdim=keepdim, correction=0),
           lambda x, dim, keepdim: _var_ref(x, dim, keepdim, 0),
           fixed_samples(*DIM_CASES), variant="var_correction0",
           fuzz=Fuzz("var"),
           torch=lambda T, x, dim, keepdim: x.var(dim, keepdim=keepdim, correction=0)),
    OpSpec("mul", lambda x: tp.var(x, unbiased=False) + tp.var_mean(x, 0, correction=2)[0].sum()
           + tp.var_mean(x, 0)[1].sum(),
           lambda x: np.var(x) + np.sum(np.var(x, 0, ddof=2)) + np.sum(np.mean(x, 0)),
           fixed_samples(("2d", [(_normal, (4, 3))], {})), variant="var_mean_unbiased",
           fuzz=Fuzz("var", shapes=_one_shape(min_dims=1, min_side=3), special=False),
           torch=lambda T, x: T.var(x, unbiased=False) + T.var_mean(x, 0, correction=2)[0].sum()
           + T.var_mean(x, 0)[1].sum()),
    OpSpec("sqrt", lambda x, dim, keepdim: tp.std(x, dim, keepdim=keepdim, correction=0),
           lambda x, dim, keepdim: np.std(x, axis=_axes(x, dim), keepdims=keepdim),
           fixed_samples(*DIM_CASES[:5]), variant="std",
           fuzz=Fuzz("std"),
           torch=lambda T, x, dim, keepdim: T.std(x, dim, keepdim=keepdim, correction=0)),
    OpSpec("sqrt", lambda x: tp.std_mean(x, 1)[0].sum() + x.std(),
           lambda x: np.sum(np.std(x, 1, ddof=1)) + np.std(x, ddof=1),
           fixed_samples(("2d", [(_normal, (3, 4))], {})), variant="std_mean",
           fuzz=Fuzz("std", shapes=_one_shape(min_dims=2, max_dims=2, min_side=2),
                     special=False),
           torch=lambda T, x: T.std_mean(x, 1)[0].sum() + x.std()),
    # ---- logsumexp (composition: log(sum(exp(x - m))) + m)
    OpSpec("add", lambda x, dim, keepdim: tp.logsumexp(x, dim, keepdim), _lse_ref,
           fixed_samples(*DIM_CASES), variant="logsumexp",
           fuzz=Fuzz("logsumexp", kinds="fi"),
           torch=lambda T, x, dim, keepdim: T.logsumexp(x, dim, keepdim)),
    # ---- all / any / count_nonzero (bool and int64 results, no gradient)
    OpSpec("where", lambda x, dim, keepdim: tp.where(tp.any(x > 0.5, dim, keepdim),
                                                     x.sum(dim, keepdim), 0.0),
           lambda x, dim, keepdim: np.where(np.any(x > 0.5, axis=_axes(x, dim),
                                                   keepdims=keepdim),
                                            np.sum(x, axis=_axes(x, dim), keepdims=keepdim), 0),
           fixed_samples(*DIM_CASES), variant="any", smooth=False,
           fuzz=Fuzz("any"),
           torch=lambda T, x, dim, keepdim: T.where(T.any(x > 0.5, dim, keepdim),
                                                    x.sum(dim, keepdim), 0.0)),
    OpSpec("where", lambda x, dim, keepdim: tp.where(x.all(dim, keepdim),
                                                     x.sum(dim, keepdim), -1.0),
           lambda x, dim, keepdim: np.where(np.all(x, axis=_axes(x, dim), keepdims=keepdim),
                                            np.sum(x, axis=_axes(x, dim), keepdims=keepdim),
                                            -1),
           fixed_samples(*DIM_CASES), variant="all", smooth=False,
           fuzz=Fuzz("all"),
           torch=lambda T, x, dim, keepdim: T.where(x.all(dim, keepdim),
                                                    x.sum(dim, keepdim), -1.0)),
    OpSpec("mul", lambda x, dim: x.sum(dim) * tp.count_nonzero(x > 0, dim),
           lambda x, dim: np.sum(x, axis=_axes(x, dim)) * np.count_nonzero(
               x > 0, axis=_axes(x, dim)),
           fixed_samples(("dim1", [(_normal, (3, 4))], {"dim": 1}),
                         ("dims", [(_normal, (2, 3, 4))], {"dim": (0, 2)})),
           variant="count_nonzero", smooth=False,
           fuzz=Fuzz("count_nonzero"),
           torch=lambda T, x, dim: x.sum(dim) * T.count_nonzero(x > 0, dim)),
    # ---- norms (compositions)
    OpSpec("sqrt", lambda x: x.norm(), lambda x: np.sqrt(np.sum(x * x)), unary_samples(),
           variant="norm", fuzz=Fuzz("norm"), torch=lambda T, x: x.norm()),
    OpSpec("sum", lambda x, dim, keepdim: tp.norm(x, 1, dim, keepdim),
           lambda x, dim, keepdim: _vnorm_ref(x, 1, dim, keepdim),
           fixed_samples(*DIM_CASES[:5]), variant="norm_p1", smooth=False,
           fuzz=Fuzz("norm", kwargs=_dim_kwargs, base=lambda ts, kw: [ts[0]]),
           torch=lambda T, x, dim, keepdim: T.norm(x, 1, dim, keepdim)),
]

_VORDS = [(2, "sqrt", True), (1, "sum", False), (math.inf, "amax", False),
          (-math.inf, "amin", False), (3, "where", True), (0.5, "where", True),
          (-1.5, "pow", True)]
for _ord, _name, _smooth in _VORDS:
    SPECS.append(OpSpec(
        _name, lambda x, dim, keepdim, o=_ord: vector_norm(x, o, dim, keepdim),
        lambda x, dim, keepdim, o=_ord: _vnorm_ref(x, o, dim, keepdim),
        fixed_samples(*DIM_CASES), variant=f"vector_norm_{_ord}", smooth=_smooth,
        fuzz=Fuzz("vector_norm", ("x",), skip=EMPTY if _ord < 1 or _ord == math.inf else None,
                  domain="away" if _ord < 1 else (-2.0, 2.0),
                  kwargs=_dim_kwargs, base=lambda ts, kw: [ts[0]]),
        torch=lambda T, x, dim, keepdim, o=_ord: T.linalg.vector_norm(x, o, dim, keepdim)))
for _ord, _name, _smooth in [("fro", "sqrt", True), (1, "amax", False), (-1, "amin", False),
                             (math.inf, "amax", False), (-math.inf, "amin", False)]:
    SPECS.append(OpSpec(
        _name, lambda a, o=_ord: matrix_norm(a, o), lambda a, o=_ord: _mnorm_ref(a, o),
        fixed_samples(("2d", [(_normal, (3, 4))], {}), ("batch", [(_normal, (2, 3, 4))], {}),
                      ("noncontig", [(_normal, (4, 3))], {})),
        variant=f"matrix_norm_{_ord}", smooth=_smooth,
        fuzz=Fuzz("matrix_norm", args=("A",), skip=EMPTY,
                  shapes=_one_shape(min_dims=2, max_dims=3, min_side=1)),
        torch=lambda T, a, o=_ord: T.linalg.matrix_norm(a, o)))
# the spectral matrix norms: compositions over linalg.svdvals
for _ord in (2, -2, "nuc"):
    SPECS.append(OpSpec(
        "linalg_svdvals", lambda a, o=_ord: matrix_norm(a, o),
        lambda a, o=_ord: _mnorm_ref(a, o),
        fixed_samples(("2d", [(_normal, (3, 4))], {}), ("batch", [(_normal, (2, 3, 4))], {}),
                      ("noncontig", [(_normal, (4, 3))], {})),
        variant=f"matrix_norm_{_ord}",
        fuzz=Fuzz("matrix_norm", args=("A",), skip=EMPTY, special=False,
                  shapes=_one_shape(min_dims=2, max_dims=3, min_side=1)),
        torch=lambda T, a, o=_ord: T.linalg.matrix_norm(a, o)))
