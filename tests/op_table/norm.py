"""Op-table rows of the normalisation primitives (tensorplay/_ops/normalization.py,
normalization_rows.py):
batch_norm (training statistics; eval is a composition), its fused backward,
layer_norm, group_norm and their fused backward, and normalize.

References are numpy closed forms (the biased variance, eps inside the root)."""
import hypothesis.strategies as st
import numpy as np

import tensorplay as tp
from tensorplay._ops.normalization import batch_norm_backward
from tensorplay._ops.normalization_rows import layer_norm_backward

from ._base import Fuzz, OpSpec, _normal, _side, _uniform, fixed_samples

F = tp.nn.functional
EPS = 1e-5
_INTERNAL = "an internal derivative kernel: torch has no public op of this name"


def _cshape(x):
    return (1, -1) + (1,) * (x.ndim - 2)


def _bn_ref(x, w=None, b=None, eps=EPS):
    ax = (0,) + tuple(range(2, x.ndim))
    m = x.mean(ax, keepdims=True)
    v = ((x - m) ** 2).mean(ax, keepdims=True)
    y = (x - m) / np.sqrt(v + eps)
    if w is not None:
        y = y * w.reshape(_cshape(x))
    if b is not None:
        y = y + b.reshape(_cshape(x))
    return y


def _bn_eval_ref(x, w, b, rm, rv, eps=EPS):
    rm, rv = rm._data, rv._data
    return (x - rm.reshape(_cshape(x))) / np.sqrt(rv.reshape(_cshape(x)) + eps) * \
        w.reshape(_cshape(x)) + b.reshape(_cshape(x))


def _q(u, x, ax, eps=EPS):
    """rstd (u - mean(u) - xhat mean(u xhat)) over the axes ax."""
    m = x.mean(ax, keepdims=True)
    s = 1 / np.sqrt(((x - m) ** 2).mean(ax, keepdims=True) + eps)
    xh = (x - m) * s
    return s * (u - u.mean(ax, keepdims=True) - xh * (u * xh).mean(ax, keepdims=True))


def _bnb_ref(g, x, w):
    return _q(g, x, (0,) + tuple(range(2, x.ndim))) * w.reshape(_cshape(x))


def _ln_ref(x, w=None, b=None, nd=1, eps=EPS):
    ax = tuple(range(x.ndim - nd, x.ndim))
    m = x.mean(ax, keepdims=True)
    y = (x - m) / np.sqrt(((x - m) ** 2).mean(ax, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def _lnb_ref(g, x, w):
    ax = tuple(range(x.ndim - w.ndim, x.ndim))
    return _q(g * w, x, ax)


def _gn_ref(x, w=None, b=None, groups=2, eps=EPS):
    n, c = x.shape[:2]
    xg = x.reshape(n, groups, -1)
    m = xg.mean(-1, keepdims=True)
    y = ((xg - m) / np.sqrt(((xg - m) ** 2).mean(-1, keepdims=True) + eps)).reshape(x.shape)
    if w is not None:
        y = y * w.reshape(_cshape(x))
    if b is not None:
        y = y + b.reshape(_cshape(x))
    return y


_W = _uniform(0.5, 1.5)
RM3, RV3 = tp.tensor([0.1, -0.2, 0.3], dtype=tp.float64), tp.tensor([0.5, 1.2, 2.0],
                                                                      dtype=tp.float64)


def _bn_shapes(draw):
    return [(_side(draw, 2, 4), _side(draw, 1, 3)) + tuple(
        draw(st.lists(st.integers(1, 3), max_size=2)))]


def _row_shapes(draw):
    return [(_side(draw, 1, 3), _side(draw, 2, 4))]


def _stats_like(kw, x):
    return {k: v.to(x.dtype) for k, v in kw.items()}


SPECS = [
    OpSpec("batch_norm", lambda x, w=None, b=None: F.batch_norm(x, None, None, w, b, True),
           _bn_ref,
           fixed_samples(("2d", [(_normal, (4, 3)), (_W, (3,)), (_normal, (3,))], {}),
                         ("4d", [(_normal, (2, 3, 2, 2)), (_W, (3,)), (_normal, (3,))], {}),
                         ("3d_noaffine", [(_normal, (3, 2, 2))], {}),
                         ("noncontig", [(_normal, (3, 4)), (_W, (4,)), (_normal, (4,))], {})),
           fuzz=Fuzz("batch_norm", special=False, shapes=_bn_shapes,
                     base=lambda ts, kw: [ts[0], None, None, None, None, True]),
           torch=lambda T, x, w=None, b=None: T.nn.functional.batch_norm(x, None, None, w, b,
                                                                          True)),
    # (the running statistics in the input's dtype: mixed dtypes raise, as torch's)
    OpSpec("mul", lambda x, w=None, b=None, **kw: F.batch_norm(x, weight=w, bias=b,
                                                               **_stats_like(kw, x)),
           lambda x, w=None, b=None, running_mean=None, running_var=None: _bn_eval_ref(
               x, np.ones(3) if w is None else w, np.zeros(3) if b is None else b,
               running_mean, running_var),
           fixed_samples(("eval", [(_normal, (4, 3)), (_W, (3,)), (_normal, (3,))],
                          {"running_mean": RM3, "running_var": RV3})),
           variant="batch_norm_eval",
           fuzz=Fuzz("batch_norm", special=False,
                     shapes=lambda draw: [(_side(draw, 1, 4), 3)],
                     kwargs=lambda draw, arrays: {"running_mean": RM3, "running_var": RV3},
                     base=lambda ts, kw: [ts[0], kw["running_mean"].to(ts[0].dtype),
                                          kw["running_var"].to(ts[0].dtype)]),
           torch=lambda T, x, w=None, b=None, **kw: T.nn.functional.batch_norm(
               x, weight=w, bias=b, **kw)),
    OpSpec("batch_norm_backward", batch_norm_backward, _bnb_ref,
           fixed_samples(("2d", [(_normal, (4, 3)), (_normal, (4, 3)), (_W, (3,))], {}),
                         ("3d", [(_normal, (2, 2, 3)), (_normal, (2, 2, 3)), (_W, (2,))], {})),
           fuzz=Fuzz("batch_norm_backward", ("grad_output", "input", "weight"),
                     shapes=lambda draw: (lambda s: [s, s, (s[1],)])(_bn_shapes(draw)[0]),
                     special=False),
           torch=_INTERNAL),
    OpSpec("layer_norm", lambda x, w=None, b=None: F.layer_norm(x, x.shape[-1:], w, b),
           _ln_ref,
           fixed_samples(("2d", [(_normal, (3, 4)), (_W, (4,)), (_normal, (4,))], {}),
                         ("1d_noaffine", [(_normal, (5,))], {}),
                         ("noncontig", [(_normal, (3, 4)), (_W, (4,)), (_normal, (4,))], {})),
           fuzz=Fuzz("layer_norm", special=False, shapes=_row_shapes,
                     base=lambda ts, kw: [ts[0], tuple(ts[0].shape[-1:])]),
           torch=lambda T, x, w=None, b=None: T.nn.functional.layer_norm(x, x.shape[-1:], w,
                                                                          b)),
    OpSpec("layer_norm", lambda x, w=None, b=None: F.layer_norm(x, (2, 3), w, b),
           lambda x, w=None, b=None: _ln_ref(x, w, b, nd=2),
           fixed_samples(("3d", [(_normal, (2, 2, 3)), (_W, (2, 3)), (_normal, (2, 3))], {})),
           variant="2dims",
           fuzz=Fuzz("layer_norm", special=False,
                     shapes=lambda draw: [(_side(draw, 1, 3), 2, 3)],
                     base=lambda ts, kw: [ts[0], (2, 3)]),
           torch=lambda T, x, w=None, b=None: T.nn.functional.layer_norm(x, (2, 3), w, b)),
    OpSpec("layer_norm_backward", layer_norm_backward, _lnb_ref,
           fixed_samples(("2d", [(_normal, (3, 4)), (_normal, (3, 4)), (_W, (4,))], {}),
                         ("3d", [(_normal, (2, 2, 3)), (_normal, (2, 2, 3)), (_W, (2, 3))],
                          {})),
           fuzz=Fuzz("layer_norm_backward", ("grad_output", "input", "weight"),
                     shapes=lambda draw: (lambda s: [s, s, s[-1:]])(_row_shapes(draw)[0]),
                     special=False),
           torch=_INTERNAL),
    OpSpec("group_norm", lambda x, w=None, b=None: F.group_norm(x, 2, w, b), _gn_ref,
           fixed_samples(("3d", [(_normal, (2, 4, 3)), (_W, (4,)), (_normal, (4,))], {}),
                         ("2d", [(_normal, (3, 4)), (_W, (4,)), (_normal, (4,))], {}),
                         ("4d_noaffine", [(_normal, (1, 4, 2, 2))], {})),
           fuzz=Fuzz("group_norm", special=False,
                     shapes=lambda draw: [(_side(draw, 1, 3), 4, _side(draw, 1, 3))],
                     base=lambda ts, kw: [ts[0], 2]),
           torch=lambda T, x, w=None, b=None: T.nn.functional.group_norm(x, 2, w, b)),
    OpSpec("div", lambda x, **kw: F.normalize(x, **kw),
           lambda x, p=2.0, dim=1: x / np.maximum(
               np.sum(np.abs(x) ** p, dim, keepdims=True) ** (1 / p), 1e-12),
           fixed_samples(("p2", [(_normal, (3, 4))], {}),
                         ("p3_dim0", [(_normal, (3, 4))], {"p": 3.0, "dim": 0})),
           variant="normalize",
           fuzz=Fuzz("normalize", shapes=_row_shapes, domain=(0.3, 2.0), special=False),
           torch=lambda T, x, **kw: T.nn.functional.normalize(x, **kw)),
]
