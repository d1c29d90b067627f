"""Op-table rows of the pools (tensorplay/_ops/pool.py, _pool_avg.py).

References are window loops in numpy written from PyTorch's documented formulas
(output size, padding, dilation, ceil_mode, count_include_pad, adaptive
windows), never tensorplay.  Max-pool samples are spread-out distinct values
(gaps >= 0.2 within any window) so finite differences never cross a tie.
"""
import hypothesis.strategies as st
import numpy as np

import tensorplay as tp
from tensorplay._ops.pool import adaptive_avg_pool_backward, avg_pool_backward, \
    max_pool_backward, max_pool_gather

from ._base import Fuzz, OpSpec, _normal, fixed_samples

F = tp.nn.functional


# ---------------------------------------------------------------- references
def _tuple(v, n):
    return tuple(v) * (n // len(v)) if isinstance(v, (tuple, list)) else (v,) * n


def out_size(L, k, s, p, d, ceil_mode):
    """PyTorch's documented output size, with the ceil_mode rule that a window
    starting in the right padding is dropped."""
    num = L + 2 * p - d * (k - 1) - 1
    o = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (o - 1) * s >= L + p:
        o -= 1
    return o


def ref_max_pool(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                 nd=2, indices=False):
    """Window loop: the maximum of the taps inside the input (first in scan order,
    NaN wins), and its flat index."""
    x = np.asarray(x)
    k = _tuple(kernel_size, nd)
    s = _tuple(stride if stride is not None else kernel_size, nd)
    p, d = _tuple(padding, nd), _tuple(dilation, nd)
    sp = x.shape[-nd:]
    osz = [out_size(L, *a, ceil_mode) for L, a in zip(sp, zip(k, s, p, d))]
    lead = x.shape[:-nd]
    flat = x.reshape((-1,) + sp)
    vals = np.empty((flat.shape[0],) + tuple(osz), x.dtype)
    idx = np.empty(vals.shape, np.int64)
    for o in np.ndindex(*osz):
        taps = [[o[i] * s[i] - p[i] + j * d[i] for j in range(k[i])
                 if 0 <= o[i] * s[i] - p[i] + j * d[i] < sp[i]] for i in range(nd)]
        pos = [tuple(t) for t in np.array(np.meshgrid(*taps, indexing="ij")).reshape(nd, -1).T]
        for pl in range(flat.shape[0]):
            m, at = -np.inf, None
            for q in pos:
                v = flat[(pl,) + q]
                if at is None or v > m or np.isnan(v):
                    m, at = v, q
            vals[(pl,) + o] = m
            idx[(pl,) + o] = at[0] * sp[1] + at[1] if nd == 2 else at[0]
    vals, idx = vals.reshape(lead + tuple(osz)), idx.reshape(lead + tuple(osz))
    return (vals, idx) if indices else vals


def ref_avg_pool(x, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None, nd=2):
    """Window loop: sum of the taps inside the input over PyTorch's divisor."""
    x = np.asarray(x)
    k = _tuple(kernel_size, nd)
    s = _tuple(stride if stride is not None else kernel_size, nd)
    p = _tuple(padding, nd)
    sp = x.shape[-nd:]
    osz = [out_size(L, kk, ss, pp, 1, ceil_mode) for L, kk, ss, pp in zip(sp, k, s, p)]
    out = np.empty(x.shape[:-nd] + tuple(osz))
    for o in np.ndindex(*osz):
        sl, padded, inside = [], 1, 1
        for i in range(nd):
            a = o[i] * s[i] - p[i]
            b = min(a + k[i], sp[i] + p[i])
            padded *= b - a
            a, b = max(a, 0), min(b, sp[i])
            inside *= b - a
            sl.append(slice(a, b))
        div = divisor_override or (padded if count_include_pad else inside)
        out[(Ellipsis,) + o] = x[(Ellipsis,) + tuple(sl)].sum(axis=tuple(range(-nd, 0))) / div
    return out


def ref_adaptive(x, output_size, nd=2, op="avg"):
    x = np.asarray(x)
    sp = x.shape[-nd:]
    osz = _tuple(output_size, nd)
    out = np.empty(x.shape[:-nd] + osz)
    for o in np.ndindex(*osz):
        sl = tuple(slice(int(np.floor(o[i] * sp[i] / osz[i])),
                         int(np.ceil((o[i] + 1) * sp[i] / osz[i]))) for i in range(nd))
        win = x[(Ellipsis,) + sl]
        axes = tuple(range(-nd, 0))
        out[(Ellipsis,) + o] = win.mean(axis=axes) if op == "avg" else win.max(axis=axes)
    return out


def ref_scatter(g, indices, input_size):
    g = np.asarray(g)
    idx = np.asarray(indices._data if hasattr(indices, "_data") else indices)
    lead = g.shape[:g.ndim - len(input_size)]
    out = np.zeros((int(np.prod(lead)), int(np.prod(input_size))))
    gf, jf = g.reshape(out.shape[0], -1), idx.reshape(out.shape[0], -1)
    for pl in range(out.shape[0]):
        np.add.at(out[pl], jf[pl], gf[pl])
    return out.reshape(lead + tuple(input_size))


def ref_gather(x, indices, nd=2):
    x = np.asarray(x)
    idx = np.asarray(indices._data if hasattr(indices, "_data") else indices)
    lead = x.shape[:x.ndim - nd]
    xf = x.reshape(int(np.prod(lead)), -1)
    return np.take_along_axis(xf, idx.reshape(xf.shape[0], -1), 1).reshape(idx.shape)


def ref_vjp(fwd_ref, input_shape, g, **kw):
    """The adjoint of a linear reference, column by column (a dense Jacobian; its
    matrix product turns an inf cotangent into nan, so rows using it fuzz without
    inf/nan: Fuzz(special=False))."""
    n = int(np.prod(input_shape))
    cols = [fwd_ref(np.eye(n)[i].reshape(input_shape), **kw).ravel() for i in range(n)]
    return (np.array(cols) @ np.asarray(g).ravel()).reshape(input_shape)


# ---------------------------------------------------------------- samples
def distinct(rng, shape):
    """Distinct values with gaps of at least 0.2 (no ties, finite differences safe)."""
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.3 + rng.uniform(0, 0.1, n) - 0.15 * n).reshape(shape)


_MAX2D = [("k2", (2, 2, 6, 6), dict(kernel_size=2)),
          ("k3s2p1", (2, 2, 5, 5), dict(kernel_size=3, stride=2, padding=1)),
          ("dilation", (1, 2, 6, 5), dict(kernel_size=2, stride=1, dilation=2)),
          ("ceil", (2, 1, 5, 5), dict(kernel_size=2, stride=2, ceil_mode=True)),
          ("ceil_pad", (1, 2, 5, 6), dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1),
                                          ceil_mode=True)),
          ("unbatched", (2, 5, 5), dict(kernel_size=2, stride=1)),
          ("noncontig", (2, 2, 4, 4), dict(kernel_size=2))]
_MAX1D = [("k2", (2, 2, 6), dict(kernel_size=2)),
          ("k3s2p1d2", (2, 2, 9), dict(kernel_size=3, stride=2, padding=1, dilation=2)),
          ("ceil", (1, 2, 7), dict(kernel_size=2, ceil_mode=True)),
          ("unbatched", (2, 6), dict(kernel_size=3, stride=1)),
          ("noncontig", (2, 2, 6), dict(kernel_size=2))]
_AVG2D = [("k2", (2, 2, 4, 4), dict(kernel_size=2)),
          ("pad", (2, 1, 5, 5), dict(kernel_size=3, stride=2, padding=1)),
          ("no_pad_count", (1, 2, 5, 5), dict(kernel_size=3, stride=2, padding=1,
                                              count_include_pad=False)),
          ("ceil", (1, 2, 5, 5), dict(kernel_size=2, ceil_mode=True, padding=1)),
          ("divisor", (2, 1, 4, 5), dict(kernel_size=(2, 3), stride=1, divisor_override=5)),
          ("unbatched", (2, 4, 4), dict(kernel_size=2, stride=1)),
          ("noncontig", (2, 2, 4, 4), dict(kernel_size=2))]
_AVG1D = [("k2", (2, 2, 6), dict(kernel_size=2)),
          ("pad_ceil", (2, 1, 7), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                       count_include_pad=False)),
          ("unbatched", (2, 5), dict(kernel_size=2, stride=1))]


def _rows(cases, gen):
    return fixed_samples(*[(label, [(gen, shape)], kw) for label, shape, kw in cases])


def _idx_samples(cases, nd):
    """(g, indices, input_size) samples of max_pool_backward from real pools."""
    def samples(rng):
        out = []
        for label, shape, kw in cases:
            x = distinct(rng, shape)
            _, idx = ref_max_pool(x, nd=nd, indices=True, **kw)
            out.append((label, [rng.standard_normal(idx.shape)],
                        {"indices": tp.from_numpy(idx), "input_size": shape[-nd:]}))
        return out
    return samples


def _gather_samples(cases, nd):
    def samples(rng):
        out = []
        for label, shape, kw in cases:
            x = distinct(rng, shape)
            _, idx = ref_max_pool(x, nd=nd, indices=True, **kw)
            out.append((label, [rng.standard_normal(shape)],
                        {"indices": tp.from_numpy(idx), "nd": nd}))
        return out
    return samples


def _avg_backward_samples(cases, nd):
    def samples(rng):
        out = []
        for label, shape, kw in cases:
            y = ref_avg_pool(np.zeros(shape), nd=nd, **kw)
            out.append((label, [rng.standard_normal(y.shape)],
                        dict(kw, input_size=shape[-nd:])))
        return out
    return samples


# ---------------------------------------------------------------- fuzz drawers
def _pool_shapes(nd, lo=1):
    def shapes(draw):
        lead = [draw(st.integers(1, 2))] * draw(st.integers(1, 2))
        return [tuple(lead) + tuple(draw(st.integers(lo, 6)) for _ in range(nd))]
    return shapes


def _valid_configs(spatial, avg):
    """Every small (kernel, stride, padding, dilation, ceil_mode) that PyTorch
    accepts for this spatial shape (no empty window)."""
    out = []
    for k in (1, 2, 3):
        for s in (1, 2, 3):
            for p in range(k // 2 + 1):
                for d in ((1,) if avg else (1, 2)):
                    for c in (False, True):
                        ok = True
                        for L in spatial:
                            o = out_size(L, k, s, p, d, c)
                            if o < 1 or any(
                                    not any(0 <= i * s - p + j * d < L for j in range(k))
                                    for i in range(o)):
                                ok = False
                        if ok:
                            out.append((k, s, p, d, c))
    return out


def _pool_kwargs(nd, avg):
    def kwargs(draw, arrays):
        configs = _valid_configs(arrays[0].shape[-nd:], avg)
        k, s, p, d, c = draw(st.sampled_from(configs))
        kw = dict(kernel_size=k, stride=s, padding=p, ceil_mode=c)
        if not avg:
            kw["dilation"] = d
        elif draw(st.booleans()):
            kw["count_include_pad"] = False
        return kw
    return kwargs


def _adaptive_kwargs(nd):
    def kwargs(draw, arrays):
        return {"output_size": tuple(draw(st.integers(1, 4)) for _ in range(nd))}
    return kwargs


def _scatter_kwargs(draw, arrays):
    g = arrays[0]
    size = (draw(st.integers(1, 5)), draw(st.integers(1, 5)))
    idx = np.random.default_rng(draw(st.integers(0, 99))).integers(0, size[0] * size[1],
                                                                   g.shape)
    return {"indices": tp.from_numpy(idx), "input_size": size}


def _gather_kwargs(draw, arrays):
    x = arrays[0]
    n = x.shape[-1] * x.shape[-2]
    idx = np.random.default_rng(draw(st.integers(0, 99))).integers(
        0, n, x.shape[:-2] + (draw(st.integers(1, 3)), draw(st.integers(1, 3))))
    return {"indices": tp.from_numpy(idx), "nd": 2}


def _torch_vjp(T, f, shape, g):
    """The VJP of ``f`` at zeros of ``shape`` with cotangent ``g``, differentiable in
    ``g`` (torch's double backward of a linear op)."""
    x0 = T.zeros(tuple(shape), dtype=g.dtype, requires_grad=True)
    return T.autograd.grad(f(x0), x0, g, create_graph=True)[0]


def _torch_scatter(T, g, indices, input_size):
    lead = tuple(g.shape[:g.ndim - len(input_size)])
    z = T.zeros(lead + (int(np.prod(input_size)),), dtype=g.dtype)
    return z.scatter_add(-1, indices.reshape(lead + (-1,)), g.reshape(lead + (-1,))) \
        .reshape(lead + tuple(input_size))


def _torch_gather(T, x, indices, nd):
    lead = tuple(x.shape[:x.ndim - nd])
    return x.reshape(lead + (-1,)).gather(-1, indices.reshape(lead + (-1,))) \
        .reshape(indices.shape)


SPECS = [
    OpSpec("max_pool", lambda x, **kw: F.max_pool2d(x, **kw),
           lambda x, **kw: ref_max_pool(x, nd=2, **kw), _rows(_MAX2D, distinct),
           variant="2d",
           fuzz=Fuzz("max_pool2d", shapes=_pool_shapes(2), kwargs=_pool_kwargs(2, False),
                     base=lambda ts, kw: [ts[0], kw["kernel_size"]]),
           torch=lambda T, x, **kw: T.nn.functional.max_pool2d(x, **kw)),
    OpSpec("max_pool", lambda x, **kw: F.max_pool1d(x, **kw),
           lambda x, **kw: ref_max_pool(x, nd=1, **kw), _rows(_MAX1D, distinct),
           variant="1d",
           fuzz=Fuzz("max_pool1d", shapes=_pool_shapes(1), kwargs=_pool_kwargs(1, False),
                     base=lambda ts, kw: [ts[0], kw["kernel_size"]]),
           torch=lambda T, x, **kw: T.nn.functional.max_pool1d(x, **kw)),
    OpSpec("max_pool", lambda x, **kw: F.adaptive_max_pool2d(x, **kw),
           lambda x, **kw: ref_adaptive(x, nd=2, op="max", **kw),
           fixed_samples(("3x2", [(distinct, (2, 2, 5, 7))], {"output_size": (3, 2)}),
                         ("overlap", [(distinct, (1, 2, 5, 5))], {"output_size": 3}),
                         ("unbatched", [(distinct, (2, 4, 6))], {"output_size": (4, 4)})),
           variant="adaptive2d",
           fuzz=Fuzz("adaptive_max_pool2d", shapes=_pool_shapes(2), kwargs=_adaptive_kwargs(2),
                     base=lambda ts, kw: [ts[0], kw["output_size"]]),
           torch=lambda T, x, **kw: T.nn.functional.adaptive_max_pool2d(x, **kw)),
    OpSpec("max_pool", lambda x, **kw: F.adaptive_max_pool1d(x, **kw),
           lambda x, **kw: ref_adaptive(x, nd=1, op="max", **kw),
           fixed_samples(("5of7", [(distinct, (2, 2, 7))], {"output_size": 5})),
           variant="adaptive1d",
           fuzz=Fuzz("adaptive_max_pool1d", shapes=_pool_shapes(1), kwargs=_adaptive_kwargs(1),
                     base=lambda ts, kw: [ts[0], kw["output_size"]]),
           torch=lambda T, x, **kw: T.nn.functional.adaptive_max_pool1d(x, **kw)),
    OpSpec("max_pool", lambda x, indices, nd: max_pool_gather(x, indices, nd),
           lambda x, indices, nd: ref_gather(x, indices, nd),
           _gather_samples(_MAX2D[:3], 2), variant="gather",
           fuzz=Fuzz("max_pool_gather", shapes=_pool_shapes(2), kwargs=_gather_kwargs,
                     base=lambda ts, kw: [ts[0], kw["indices"]]),
           torch=_torch_gather),
    OpSpec("max_pool_backward",
           lambda g, indices, input_size: max_pool_backward(g, indices, input_size),
           ref_scatter, _idx_samples(_MAX2D[:4] + _MAX2D[5:6], 2),
           fuzz=Fuzz("max_pool_backward", ("grad_output",),
                     shapes=lambda draw: [(draw(st.integers(1, 2)), draw(st.integers(1, 3)),
                                           draw(st.integers(1, 3)))],
                     kwargs=_scatter_kwargs,
                     base=lambda ts, kw: [ts[0], kw["indices"], kw["input_size"]]),
           torch=_torch_scatter),
    OpSpec("max_pool_backward",
           lambda g, indices, input_size: max_pool_backward(g, indices, input_size),
           ref_scatter, _idx_samples(_MAX1D[:3], 1), variant="1d",
           fuzz=Fuzz("max_pool_backward", ("grad_output",),
                     shapes=lambda draw: [(draw(st.integers(1, 2)), draw(st.integers(1, 3)),
                                           draw(st.integers(1, 3)))],
                     kwargs=_scatter_kwargs,
                     base=lambda ts, kw: [ts[0], kw["indices"], kw["input_size"]]),
           torch=_torch_scatter),
    OpSpec("avg_pool", lambda x, **kw: F.avg_pool2d(x, **kw),
           lambda x, **kw: ref_avg_pool(x, nd=2, **kw), _rows(_AVG2D, _normal), variant="2d",
           fuzz=Fuzz("avg_pool2d", shapes=_pool_shapes(2), kwargs=_pool_kwargs(2, True),
                     base=lambda ts, kw: [ts[0], kw["kernel_size"]]),
           torch=lambda T, x, **kw: T.nn.functional.avg_pool2d(x, **kw)),
    OpSpec("avg_pool", lambda x, **kw: F.avg_pool1d(x, **kw),
           lambda x, **kw: ref_avg_pool(x, nd=1, **kw), _rows(_AVG1D, _normal), variant="1d",
           fuzz=Fuzz("avg_pool1d", shapes=_pool_shapes(1), kwargs=_pool_kwargs(1, True),
                     base=lambda ts, kw: [ts[0], kw["kernel_size"]]),
           torch=lambda T, x, **kw: T.nn.functional.avg_pool1d(x, **kw)),
    OpSpec("avg_pool_backward",
           lambda g, input_size, **kw: avg_pool_backward(g, input_size, **kw),
           lambda g, input_size, **kw: ref_vjp(
               lambda x, **k: ref_avg_pool(x, nd=len(input_size), **k),
               g.shape[:g.ndim - len(input_size)] + tuple(input_size), g, **kw),
           _avg_backward_samples(_AVG2D[:5], 2),
           fuzz=Fuzz("avg_pool_backward", ("grad_output",), special=False,
                     shapes=lambda draw: [(draw(st.integers(1, 2)), 2, 2)],
                     kwargs=lambda draw, arrays: {"input_size": (4, 5), "kernel_size": 2},
                     base=lambda ts, kw: [ts[0], kw["input_size"], kw["kernel_size"]]),
           torch=lambda T, g, input_size, **kw: _torch_vjp(
               T, lambda x: T.nn.functional.avg_pool2d(x, **kw),
               tuple(g.shape[:-2]) + tuple(input_size), g)),
    OpSpec("avg_pool_backward",
           lambda g, input_size, **kw: avg_pool_backward(g, input_size, **kw),
           lambda g, input_size, **kw: ref_vjp(
               lambda x, **k: ref_avg_pool(x, nd=1, **k),
               g.shape[:-1] + tuple(input_size), g, **kw),
           _avg_backward_samples(_AVG1D[:2], 1), variant="1d",
           fuzz=Fuzz("avg_pool_backward", ("grad_output",), special=False,
                     shapes=lambda draw: [(draw(st.integers(1, 2)), 2)],
                     kwargs=lambda draw, arrays: {"input_size": (5,), "kernel_size": 2},
                     base=lambda ts, kw: [ts[0], kw["input_size"], kw["kernel_size"]]),
           torch=lambda T, g, input_size, **kw: _torch_vjp(
               T, lambda x: T.nn.functional.avg_pool1d(x, **kw),
               tuple(g.shape[:-1]) + tuple(input_size), g)),
    OpSpec("adaptive_avg_pool", lambda x, **kw: F.adaptive_avg_pool2d(x, **kw),
           lambda x, **kw: ref_adaptive(x, nd=2, **kw),
           fixed_samples(("3x2", [(_normal, (2, 2, 5, 7))], {"output_size": (3, 2)}),
                         ("up", [(_normal, (1, 2, 3, 2))], {"output_size": (4, 5)}),
                         ("global", [(_normal, (2, 3, 4, 4))], {"output_size": 1}),
                         ("unbatched", [(_normal, (2, 5, 5))], {"output_size": (2, 3)}),
                         ("noncontig", [(_normal, (2, 2, 4, 6))], {"output_size": (3, 4)})),
           variant="2d",
           fuzz=Fuzz("adaptive_avg_pool2d", shapes=_pool_shapes(2), kwargs=_adaptive_kwargs(2),
                     base=lambda ts, kw: [ts[0], kw["output_size"]]),
           torch=lambda T, x, **kw: T.nn.functional.adaptive_avg_pool2d(x, **kw)),
    OpSpec("adaptive_avg_pool", lambda x, **kw: F.adaptive_avg_pool1d(x, **kw),
           lambda x, **kw: ref_adaptive(x, nd=1, **kw),
           fixed_samples(("4of7", [(_normal, (2, 2, 7))], {"output_size": 4}),
                         ("unbatched", [(_normal, (2, 5))], {"output_size": 3})),
           variant="1d",
           fuzz=Fuzz("adaptive_avg_pool1d", shapes=_pool_shapes(1), kwargs=_adaptive_kwargs(1),
                     base=lambda ts, kw: [ts[0], kw["output_size"]]),
           torch=lambda T, x, **kw: T.nn.functional.adaptive_avg_pool1d(x, **kw)),
    OpSpec("adaptive_avg_pool_backward",
           lambda g, input_size: adaptive_avg_pool_backward(g, input_size),
           lambda g, input_size: ref_vjp(
               lambda x: ref_adaptive(x, g.shape[g.ndim - len(input_size):],
                                      nd=len(input_size)),
               g.shape[:g.ndim - len(input_size)] + tuple(input_size), g),
           fixed_samples(("3x2of5x7", [(_normal, (2, 1, 3, 2))], {"input_size": (5, 7)}),
                         ("1d", [(_normal, (2, 3))], {"input_size": (7,)})),
           fuzz=Fuzz("adaptive_avg_pool_backward", ("grad_output",), special=False,
                     shapes=lambda draw: [(draw(st.integers(1, 2)), draw(st.integers(1, 3)),
                                           draw(st.integers(1, 3)))],
                     kwargs=lambda draw, arrays: {"input_size": (draw(st.integers(1, 5)),
                                                                 draw(st.integers(1, 5)))},
                     base=lambda ts, kw: [ts[0], kw["input_size"]]),
           torch=lambda T, g, input_size: _torch_vjp(
               T, lambda x: T.nn.functional.adaptive_avg_pool2d(x, tuple(g.shape[-2:]))
               if len(input_size) == 2 else
               T.nn.functional.adaptive_avg_pool1d(x, tuple(g.shape[-1:])),
               tuple(g.shape[:g.ndim - len(input_size)]) + tuple(input_size), g)),
]
