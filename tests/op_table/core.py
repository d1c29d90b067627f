"""Op-table rows of the first primitives: exp..relu, the fused derivative kernels,
arithmetic, sum/mean, matmul, the shape ops, log_softmax and nll_loss."""
import hypothesis.strategies as st
import numpy as np

import tensorplay as tp
from tensorplay._ops.shape import check_index, getitem_backward
from tensorplay._ops.elementwise import (div_backward, div_backward_other, mul_backward,
                                         pow_backward_base, pow_backward_exponent,
                                         relu_backward, sigmoid_backward, sqrt_backward,
                                         tanh_backward)
from tensorplay._ops.nn import log_softmax_backward, nll_loss_backward

from ._base import (AWAY, Fuzz, OpSpec, _away_from_zero, _axis, _normal, _one_shape,  # noqa: F401
                    _same_shapes, _side, _uniform, binary_samples, fixed_samples, noncontig,
                    ternary_samples, unary_samples)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _log_softmax(x, dim):
    m = np.max(x, axis=dim, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=dim, keepdims=True))


def _nll(logp, target):
    return -np.mean(logp[np.arange(len(target)), target._data if hasattr(target, "_data")
                         else target])


def _nll_backward_ref(g, target, num_classes):
    t = target._data
    out = np.zeros((len(t), num_classes))
    out[np.arange(len(t)), t] = -g / len(t)
    return out


def _getitem_backward_ref(g, shape, key):
    out = np.zeros(shape)
    out[key] = g
    return out


# ---------------------------------------------------------------- fuzz drawers
# Shape and keyword drawers for rows whose arguments the Signature alone does not
# determine (tests/test_fuzz.py calls them with hypothesis's ``draw``).
def _matmul_shapes(draw):
    """Operands of every matmul case: dot, mv, vm, mm, batched and broadcast."""
    k = _side(draw)
    m, n = _side(draw), _side(draw)
    case = draw(st.sampled_from(["dot", "mv", "vm", "mm", "bmm", "bcast", "batched_mv",
                                 "vec_batched"]))
    b = _side(draw, 0, 3)                  # batch dims of size 0 too
    return {"dot": [(k,), (k,)], "mv": [(m, k), (k,)], "vm": [(k,), (k, n)],
            "mm": [(m, k), (k, n)], "bmm": [(b, m, k), (k, n)],
            "bcast": [(2, 1, m, k), (b, k, n)], "batched_mv": [(b, m, k), (k,)],
            "vec_batched": [(k,), (b, k, n)]}[case]


def _reshape_kwargs(draw, arrays):
    shape = arrays[0].shape
    n = int(np.prod(shape))
    options = [(n,), (-1,), tuple(reversed(shape)), (1,) + tuple(shape), tuple(shape) + (1,)]
    if n and n % 2 == 0:
        options.append((2, -1))
    return {"shape": draw(st.sampled_from(options))}


def _expand_kwargs(draw, arrays):
    shape = arrays[0].shape
    lead = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    rest = tuple(draw(st.integers(0, 3)) if s == 1 else draw(st.sampled_from([s, -1]))
                 for s in shape)
    return {"shape": lead + rest}


def _basic_key(draw, shape):
    """A valid basic index into ``shape``: ints, slices with positive steps, None, ...."""
    key = []
    for s in shape[:draw(st.integers(0, len(shape)))]:
        choice = draw(st.sampled_from(["int", "slice", "none"] if s else ["slice", "none"]))
        if choice == "int":
            key.append(draw(st.integers(-s, s - 1)))
        elif choice == "slice":
            key.append(slice(draw(st.one_of(st.none(), st.integers(-5, 5))),
                             draw(st.one_of(st.none(), st.integers(-5, 5))),
                             draw(st.one_of(st.none(), st.integers(1, 3)))))
        else:
            key.append(None)
            key.append(slice(None))
    if draw(st.booleans()):          # (at the end: elsewhere it would shift the dims)
        key.append(Ellipsis)
    return tuple(key)


def _getitem_kwargs(draw, arrays):
    return {"key": _basic_key(draw, arrays[0].shape)}


def _getitem_backward_draw(draw):
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
    key = _basic_key(draw, shape)
    return shape, key


def _getitem_backward_shapes(draw):
    shape, key = _getitem_backward_draw(draw)
    _GB_LAST[:] = [shape, key]
    return [np.zeros(shape)[check_index(key, shape)].shape]


_GB_LAST = []     # the (shape, key) the last shape draw chose, for its kwargs


def _getitem_backward_kwargs(draw, arrays):
    return {"shape": _GB_LAST[0], "key": _GB_LAST[1]}


def _where_kwargs(draw, arrays):
    shape = np.broadcast_shapes(*[a.shape for a in arrays])
    cshape = draw(st.sampled_from([shape, shape[1:], ()]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    return {"cond": tp.from_numpy(np.asarray(rng.random(cshape) < 0.5))}


def _nll_shapes(draw):
    return [(_side(draw, 1, 5), _side(draw, 1, 4))]


def _target_kwargs(draw, arrays):
    n, c = arrays[0].shape
    return {"target": tp.tensor(draw(st.lists(st.integers(0, c - 1), min_size=n,
                                              max_size=n)), dtype=tp.int64)}


def _nll_backward_kwargs(draw, arrays):
    n, c = _side(draw, 1, 5), _side(draw, 1, 4)
    t = _target_kwargs(draw, [np.zeros((n, c))])["target"]
    return {"target": t, "num_classes": c}


def _flatten_kwargs(draw, arrays):
    n = max(arrays[0].ndim, 1)
    s, e = sorted(draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2)))
    return {"start_dim": s - n if draw(st.booleans()) else s,
            "end_dim": e - n if draw(st.booleans()) else e}


def _flatten_ref(x, start_dim, end_dim):
    if x.ndim == 0:
        return x.reshape(1)
    s, e = start_dim % x.ndim, end_dim % x.ndim
    return x.reshape(x.shape[:s] + (int(np.prod(x.shape[s:e + 1])),) + x.shape[e + 1:])


def _squeeze_ref(x, dim):
    if x.ndim == 0:
        return x
    dims = range(x.ndim) if dim is None else [d % x.ndim for d in
                                               (dim if isinstance(dim, tuple) else (dim,))]
    return x.reshape([s for i, s in enumerate(x.shape) if not (i in dims and s == 1)])


def _expand_as_shapes(draw):
    a = tuple(draw(st.sampled_from([1, draw(st.integers(0, 3))])) for _ in
              range(draw(st.integers(0, 3))))
    lead = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    return [a, lead + tuple(draw(st.integers(0, 3)) if s == 1 else s for s in a)]


TARGET = tp.tensor([2, 0, 1, 2, 1])
COND = tp.tensor([[True, False, True, False], [False, False, True, True],
                  [True, True, False, False]])

SPECS = [
    # ---- unary math
    OpSpec("neg", lambda x: -x, lambda x: -x, unary_samples(),
           fuzz=Fuzz("neg", kinds="fi")),
    OpSpec("exp", tp.exp, np.exp, unary_samples(),
           fuzz=Fuzz("exp", kinds="fib")),
    OpSpec("exp", lambda x: x.exp(), np.exp, unary_samples(), variant="method",
           fuzz=Fuzz("exp", kinds="fib")),
    OpSpec("log", tp.log, np.log, unary_samples(_uniform(0.3, 3.0)),
           fuzz=Fuzz("log", kinds="fi", domain=(0.3, 3.0))),
    OpSpec("sqrt", tp.sqrt, np.sqrt, unary_samples(_uniform(0.3, 3.0)),
           fuzz=Fuzz("sqrt", kinds="fi", domain=(0.3, 3.0))),
    OpSpec("tanh", tp.tanh, np.tanh, unary_samples(),
           fuzz=Fuzz("tanh", kinds="fib")),
    OpSpec("sigmoid", tp.sigmoid, _sigmoid, unary_samples(_uniform(-4, 4)),
           fuzz=Fuzz("sigmoid", kinds="fib", domain=(-4.0, 4.0))),
    OpSpec("relu", tp.relu, lambda x: np.maximum(x, 0), unary_samples(_away_from_zero()),
           smooth=False,
           fuzz=Fuzz("relu", kinds="fi", domain=AWAY)),
    # ---- fused derivative kernels
    OpSpec("tanh_backward", tanh_backward, lambda g, y: g * (1 - y * y),
           binary_samples(_normal, _uniform(-0.9, 0.9)),
           fuzz=Fuzz("tanh_backward", special=False, args=("grad_output", "output"),
                     domain=[(-2.0, 2.0), (-0.9, 0.9)])),
    OpSpec("sigmoid_backward", sigmoid_backward, lambda g, y: g * y * (1 - y),
           binary_samples(_normal, _uniform(0.05, 0.95)),
           fuzz=Fuzz("sigmoid_backward", special=False, args=("grad_output", "output"),
                     domain=[(-2.0, 2.0), (0.05, 0.95)])),
    OpSpec("relu_backward", relu_backward, lambda g, x: g * (x > 0),
           binary_samples(_normal, _away_from_zero()), smooth=False,
           fuzz=Fuzz("relu_backward", special=False, args=("grad_output", "input"),
                     domain=[(-2.0, 2.0), AWAY])),
    OpSpec("mul_backward", mul_backward, lambda g, y: g * y, binary_samples(),
           fuzz=Fuzz("mul_backward", special=False, args=("grad_output", "other"))),
    OpSpec("div_backward", div_backward, lambda g, x: g / x,
           binary_samples(_normal, _away_from_zero()),
           fuzz=Fuzz("div_backward", special=False, args=("grad_output", "other"), kinds="fi",
                     domain=[(-2.0, 2.0), AWAY])),
    OpSpec("sqrt_backward", sqrt_backward, lambda g, y: g / (2 * y),
           binary_samples(_normal, _uniform(0.3, 3.0)),
           fuzz=Fuzz("sqrt_backward", special=False, args=("grad_output", "output"), kinds="fi",
                     domain=[(-2.0, 2.0), (0.3, 3.0)])),
    OpSpec("div_backward_other", div_backward_other, lambda g, y, b: -(g * y) / b,
           ternary_samples(_normal, _normal, _away_from_zero()),
           fuzz=Fuzz("div_backward_other", special=False, args=("grad_output", "output", "other"),
                     kinds="fi", domain=[(-2.0, 2.0), (-2.0, 2.0), AWAY])),
    OpSpec("pow_backward_base", pow_backward_base, lambda g, a, b: g * b * a ** (b - 1),
           ternary_samples(_normal, _uniform(0.5, 2.0), _uniform(-1.5, 1.5)),
           fuzz=Fuzz("pow_backward_base", special=False, args=("grad_output", "input", "exponent"),
                     domain=[(-2.0, 2.0), (0.5, 2.0), (-1.5, 1.5)])),
    OpSpec("pow_backward_exponent", pow_backward_exponent,
           lambda g, y, a: g * y * np.log(a),
           ternary_samples(_normal, _uniform(0.3, 3.0), _uniform(0.5, 2.0)),
           fuzz=Fuzz("pow_backward_exponent", special=False,
                     args=("grad_output", "output", "input"),
                     domain=[(-2.0, 2.0), (0.3, 3.0), (0.5, 2.0)])),
    # ---- binary arithmetic
    OpSpec("add", lambda a, b: a + b, np.add, binary_samples(),
           fuzz=Fuzz("add", ("input", "other"), kinds="fib")),
    OpSpec("add", lambda a: a + 2.5, lambda a: a + 2.5, unary_samples(), variant="scalar",
           fuzz=Fuzz("add", kinds="fib", base=lambda ts, kw: [ts[0], 2.5])),
    OpSpec("add", lambda a: 2.5 + a, lambda a: 2.5 + a, unary_samples(), variant="rscalar",
           fuzz=Fuzz("add", ("other",), kinds="fib", base=lambda ts, kw: [2.5, ts[0]])),
    OpSpec("sub", lambda a, b: a - b, np.subtract, binary_samples(),
           fuzz=Fuzz("sub", ("input", "other"), kinds="fi")),
    OpSpec("sub", lambda a: 1.5 - a, lambda a: 1.5 - a, unary_samples(), variant="rscalar",
           fuzz=Fuzz("sub", ("other",), kinds="fi", base=lambda ts, kw: [1.5, ts[0]])),
    OpSpec("mul", lambda a, b: a * b, np.multiply, binary_samples(),
           fuzz=Fuzz("mul", ("input", "other"), kinds="fib")),
    OpSpec("mul", lambda a: a * 3, lambda a: a * 3, unary_samples(), variant="scalar",
           fuzz=Fuzz("mul", kinds="fib", base=lambda ts, kw: [ts[0], 3])),
    OpSpec("div", lambda a, b: a / b, np.divide, binary_samples(_normal, _away_from_zero()),
           fuzz=Fuzz("div", ("input", "other"), kinds="fi", domain=[(-2.0, 2.0), AWAY])),
    OpSpec("div", lambda b: 2.0 / b, lambda b: 2.0 / b, unary_samples(_away_from_zero()),
           variant="rscalar",
           fuzz=Fuzz("div", ("other",), kinds="fi", domain=AWAY, base=lambda ts, kw: [2.0, ts[0]])),
    OpSpec("pow", lambda a, b: a ** b, np.power,
           binary_samples(_uniform(0.5, 2.0), _uniform(-1.5, 1.5)),
           fuzz=Fuzz("pow", ("input", "exponent"), domain=[(0.5, 2.0), (-1.5, 1.5)])),
    OpSpec("pow", lambda a: a ** 3, lambda a: a ** 3, unary_samples(), variant="int_exp",
           fuzz=Fuzz("pow", kinds="fi", base=lambda ts, kw: [ts[0], 3])),
    OpSpec("pow", lambda a: a ** 2.5, lambda a: a ** 2.5, unary_samples(_uniform(0.5, 2.0)),
           variant="float_exp",
           fuzz=Fuzz("pow", kinds="fi", domain=(0.5, 2.0), base=lambda ts, kw: [ts[0], 2.5])),
    OpSpec("pow", lambda b: 2.0 ** b, lambda b: 2.0 ** b, unary_samples(), variant="rpow",
           fuzz=Fuzz("pow", ("exponent",), kinds="fi", base=lambda ts, kw: [2.0, ts[0]])),
    OpSpec("where", lambda a, b, cond: tp.where(cond, a, b),
           lambda a, b, cond: np.where(cond._data, a, b),
           fixed_samples(("2d", [(_normal, (3, 4)), (_normal, (3, 4))], {"cond": COND}),
                         ("bcast", [(_normal, (3, 1)), (_normal, (4,))], {"cond": COND}),
                         ("scalar_other", [(_normal, (3, 4)), (_normal, ())], {"cond": COND}),
                         ("noncontig", [(_normal, (3, 4)), (_normal, (3, 4))],
                          {"cond": COND})),
           fuzz=Fuzz("where", ("input", "other"), kinds="fi", kwargs=_where_kwargs,
                     base=lambda ts, kw: [kw["cond"], ts[0], ts[1]])),
    OpSpec("where", lambda a: tp.where(a > 0, a, a * a), lambda a: np.where(a > 0, a, a * a),
           unary_samples(_away_from_zero()), variant="piecewise",
           fuzz=Fuzz("where", kinds="fi", domain=AWAY,
                     base=lambda ts, kw: [ts[0] > 0, ts[0], ts[0] * ts[0]])),
    OpSpec("pow", lambda a: a ** 0.0, lambda a: a ** 0.0, unary_samples(), variant="zero_exp",
           fuzz=Fuzz("pow", kinds="fi", base=lambda ts, kw: [ts[0], 0.0])),
    # ---- reductions
    OpSpec("sum", lambda x: x.sum(), lambda x: np.sum(x), unary_samples(), variant="all",
           fuzz=Fuzz("sum", kinds="fib")),
    OpSpec("sum", lambda x, dim, keepdim: tp.sum(x, dim=dim, keepdim=keepdim),
           lambda x, dim, keepdim: np.sum(x, axis=_axis(x, dim), keepdims=keepdim),
           fixed_samples(("dim1", [(_normal, (3, 4))], {"dim": 1, "keepdim": False}),
                         ("dim0_keep", [(_normal, (3, 4))], {"dim": 0, "keepdim": True}),
                         ("dims02", [(_normal, (2, 3, 4))], {"dim": (0, 2), "keepdim": False}),
                         ("dims12_keep", [(_normal, (2, 3, 4))], {"dim": (1, 2), "keepdim": True}),
                         ("neg_dim", [(_normal, (2, 3, 4))], {"dim": -2, "keepdim": False}),
                         ("noncontig", [(_normal, (3, 4))], {"dim": 1, "keepdim": False}),
                         ("0d", [(_normal, ())], {"dim": 0, "keepdim": False})),
           variant="dim",
           fuzz=Fuzz("sum", kinds="fib")),
    OpSpec("mean", lambda x: x.mean(), lambda x: np.mean(x), unary_samples(), variant="all",
           fuzz=Fuzz("mean")),
    OpSpec("mean", lambda x, dim, keepdim: x.mean(dim, keepdim),
           lambda x, dim, keepdim: np.mean(x, axis=_axis(x, dim), keepdims=keepdim),
           fixed_samples(("dim1", [(_normal, (3, 4))], {"dim": 1, "keepdim": False}),
                         ("dims02_keep", [(_normal, (2, 3, 4))], {"dim": (0, 2), "keepdim": True}),
                         ("noncontig", [(_normal, (3, 4))], {"dim": 0, "keepdim": False})),
           variant="dim",
           fuzz=Fuzz("mean")),
    # ---- matmul
    OpSpec("matmul", lambda a, b: a @ b, np.matmul,
           fixed_samples(("dot", [(_normal, (4,)), (_normal, (4,))], {}),
                         ("mv", [(_normal, (3, 4)), (_normal, (4,))], {}),
                         ("vm", [(_normal, (4,)), (_normal, (4, 5))], {}),
                         ("mm", [(_normal, (3, 4)), (_normal, (4, 5))], {}),
                         ("bmm_bcast", [(_normal, (2, 3, 4)), (_normal, (4, 5))], {}),
                         ("batch_bcast", [(_normal, (2, 1, 3, 4)), (_normal, (5, 4, 2))], {}),
                         ("batched_mv", [(_normal, (2, 3, 4)), (_normal, (4,))], {}),
                         ("vec_batched", [(_normal, (4,)), (_normal, (2, 4, 3))], {}),
                         ("noncontig", [(_normal, (3, 4)), (_normal, (4, 4))], {})),
           fuzz=Fuzz("matmul", ("input", "other"), kinds="fi", shapes=_matmul_shapes)),
    # ---- shape ops
    OpSpec("reshape", lambda x, shape: x.reshape(shape), lambda x, shape: np.reshape(x, shape),
           fixed_samples(("2d", [(_normal, (3, 4))], {"shape": (2, 6)}),
                         ("infer", [(_normal, (3, 4))], {"shape": (-1,)}),
                         ("noncontig", [(_normal, (3, 4))], {"shape": (4, 3)}),
                         ("0d", [(_normal, ())], {"shape": (1, 1)})),
           fuzz=Fuzz("reshape", kinds="fib", kwargs=_reshape_kwargs,
                     base=lambda ts, kw: [ts[0], kw["shape"]])),
    OpSpec("view", lambda x, shape: x.view(shape), lambda x, shape: np.reshape(x, shape),
           fixed_samples(("2d", [(_normal, (3, 4))], {"shape": (6, 2)}),
                         ("noncontig", [(_normal, (3, 4))], {"shape": (3, 1, 4)}),
                         ("0d", [(_normal, ())], {"shape": (1,)})),
           fuzz=Fuzz("view", kinds="fib", kwargs=_reshape_kwargs, layouts=("contig",),
                     base=lambda ts, kw: [ts[0], kw["shape"]])),
    OpSpec("view", lambda x: x.unsqueeze(-1).squeeze(-1), lambda x: x, unary_samples(),
           variant="unsqueeze_squeeze",
           fuzz=Fuzz("unsqueeze", kinds="fib", base=lambda ts, kw: [ts[0], -1])),
    OpSpec("permute", lambda x, dims: x.permute(dims), lambda x, dims: np.transpose(x, dims),
           fixed_samples(("3d", [(_normal, (2, 3, 4))], {"dims": (2, 0, 1)}),
                         ("noncontig", [(_normal, (3, 4))], {"dims": (1, 0)})),
           fuzz=Fuzz("permute", kinds="fib")),
    OpSpec("permute", lambda x: x.transpose(0, 2).mT, lambda x: np.swapaxes(
        np.swapaxes(x, 0, 2), -1, -2), fixed_samples(("3d", [(_normal, (2, 3, 4))], {})),
           variant="transpose_mT",
           fuzz=Fuzz("transpose", kinds="fib", shapes=_one_shape(min_dims=3),
                     base=lambda ts, kw: [ts[0], 0, 2])),
    OpSpec("permute", lambda x: x.t(), lambda x: x.T, unary_samples(), variant="t",
           fuzz=Fuzz("t", kinds="fib", shapes=_one_shape(max_dims=2))),
    OpSpec("permute", lambda x: x.T, lambda x: x.T, unary_samples(), variant="T",
           fuzz=Fuzz("permute", kinds="fib",
                     base=lambda ts, kw: [ts[0], tuple(range(ts[0].ndim))[::-1]])),
    OpSpec("expand", lambda x, shape: x.expand(*shape),
           lambda x, shape: np.broadcast_to(
               x, [x.shape[i - len(shape) + x.ndim] if s == -1 else s
                   for i, s in enumerate(shape)]),
           fixed_samples(("col", [(_normal, (3, 1))], {"shape": (3, 4)}),
                         ("lead", [(_normal, (4,))], {"shape": (2, 3, 4)}),
                         ("keep", [(_normal, (3, 1))], {"shape": (2, -1, 5)}),
                         ("0d", [(_normal, ())], {"shape": (3,)})),
           fuzz=Fuzz("expand", kinds="fib", kwargs=_expand_kwargs,
                     base=lambda ts, kw: [ts[0], kw["shape"]])),
    OpSpec("view", lambda x, dim: x.squeeze(dim), _squeeze_ref,
           fixed_samples(("dim", [(_normal, (3, 1, 4))], {"dim": 1}),
                         ("none", [(_normal, (1, 3, 1))], {"dim": None}),
                         ("tuple", [(_normal, (1, 3, 1))], {"dim": (0, -1)}),
                         ("not_one", [(_normal, (3, 4))], {"dim": 0})),
           variant="squeeze", fuzz=Fuzz("squeeze", kinds="fib")),
    OpSpec("reshape", lambda x, start_dim, end_dim: x.flatten(start_dim, end_dim), _flatten_ref,
           fixed_samples(("all", [(_normal, (2, 3, 4))], {"start_dim": 0, "end_dim": -1}),
                         ("middle", [(_normal, (2, 3, 4))], {"start_dim": 1, "end_dim": 2}),
                         ("noncontig", [(_normal, (3, 4))], {"start_dim": 0, "end_dim": 1}),
                         ("0d", [(_normal, ())], {"start_dim": 0, "end_dim": -1})),
           variant="flatten", fuzz=Fuzz("flatten", kinds="fib", kwargs=_flatten_kwargs)),
    OpSpec("expand", lambda x, other: x.expand_as(other),
           lambda x, other: np.broadcast_to(x, other.shape),
           fixed_samples(("col", [(_normal, (3, 1)), (_normal, (3, 4))], {}),
                         ("lead", [(_normal, (4,)), (_normal, (2, 4))], {})),
           variant="expand_as",
           fuzz=Fuzz("expand_as", ("input", "other"), kinds="fib", shapes=_expand_as_shapes)),
    OpSpec("getitem", lambda x, key: x[key], lambda x, key: x[key],
           fixed_samples(("int", [(_normal, (3, 4))], {"key": 1}),
                         ("slice", [(_normal, (5, 4))], {"key": slice(1, 4)}),
                         ("step", [(_normal, (5, 4))], {"key": (slice(None), slice(0, 4, 2))}),
                         ("ellipsis", [(_normal, (2, 3, 4))], {"key": (Ellipsis, 0)}),
                         ("none", [(_normal, (3, 4))], {"key": (None, slice(1, 3))}),
                         ("int_int", [(_normal, (3, 4))], {"key": (2, -1)}),
                         ("noncontig", [(_normal, (3, 4))], {"key": (slice(0, 2), 1)})),
           fuzz=Fuzz("getitem", kinds="fib", kwargs=_getitem_kwargs,
                     base=lambda ts, kw: [ts[0], kw["key"]])),
    OpSpec("getitem_backward",
           lambda g, shape, key: getitem_backward(g, shape, check_index(key, shape)),
           _getitem_backward_ref,
           fixed_samples(("slice", [(_normal, (2, 4))], {"shape": (5, 4), "key": slice(1, 3)}),
                         ("int", [(_normal, (4,))], {"shape": (3, 4), "key": 1}),
                         ("0d", [(_normal, ())], {"shape": (3, 4), "key": (1, 2)})),
           fuzz=Fuzz("getitem_backward", ("grad_output",), kinds="fib",
                     shapes=_getitem_backward_shapes, kwargs=_getitem_backward_kwargs,
                     base=lambda ts, kw: [ts[0], kw["shape"], check_index(kw["key"], kw["shape"])],
                     skip={"index_": "getitem_backward takes keys that check_index has checked"})),
    OpSpec("stack", lambda a, b, c, dim: tp.stack([a, b, c], dim),
           lambda a, b, c, dim: np.stack([a, b, c], dim),
           fixed_samples(("dim0", [(_normal, (3, 4))] * 3, {"dim": 0}),
                         ("dim_last", [(_normal, (3, 4))] * 3, {"dim": -1}),
                         ("0d", [(_normal, ())] * 3, {"dim": 0})),
           fuzz=Fuzz("stack", ("tensors",), kinds="fib", shapes=_same_shapes(3),
                     base=lambda ts, kw: [list(ts), kw["dim"]])),
    OpSpec("clone", lambda x: x.clone(), lambda x: x.copy(), unary_samples(),
           fuzz=Fuzz("clone", kinds="fib")),
    OpSpec("clone", lambda x: x.contiguous(), lambda x: x.copy(),
           unary_samples(shapes=[("noncontig", (3, 4))]), variant="contiguous",
           fuzz=Fuzz("clone", kinds="fib")),
    OpSpec("_to_copy", lambda x: x.to(x.dtype, copy=True), lambda x: x.copy(), unary_samples(),
           fuzz=Fuzz("to", kinds="fib", base=lambda ts, kw: [ts[0], ts[0].dtype, True])),
    # ---- nn
    OpSpec("log_softmax", lambda x, dim: tp.log_softmax(x, dim), _log_softmax,
           fixed_samples(("last", [(_normal, (3, 5))], {"dim": 1}),
                         ("first", [(_normal, (3, 5))], {"dim": 0}),
                         ("middle", [(_normal, (2, 3, 4))], {"dim": 1}),
                         ("1d", [(_normal, (6,))], {"dim": 0}),
                         ("noncontig", [(_normal, (3, 4))], {"dim": -1})),
           fuzz=Fuzz("log_softmax", shapes=_one_shape(min_dims=1))),
    OpSpec("log_softmax_backward", lambda g, y, dim: log_softmax_backward(g, y, dim),
           lambda g, y, dim: g - np.exp(y) * np.sum(g, axis=dim, keepdims=True),
           fixed_samples(("last", [(_normal, (3, 5)), (_uniform(-3, 0), (3, 5))], {"dim": 1}),
                         ("first", [(_normal, (3, 5)), (_uniform(-3, 0), (3, 5))], {"dim": 0}),
                         ("middle", [(_normal, (2, 3, 4)), (_uniform(-3, 0), (2, 3, 4))],
                          {"dim": 1}),
                         ("0d", [(_normal, ()), (_uniform(-3, 0), ())], {"dim": 0}),
                         ("noncontig", [(_normal, (3, 4)), (_uniform(-3, 0), (3, 4))],
                          {"dim": -1})),
           fuzz=Fuzz("log_softmax_backward", ("grad_output", "output"),
                     domain=[(-2.0, 2.0), (-3.0, 0.0)])),
    OpSpec("nll_loss", lambda logp, target: tp.nn.functional.nll_loss(logp, target), _nll,
           fixed_samples(("5x3", [(_normal, (5, 3))], {"target": TARGET}),
                         ("noncontig", [(_normal, (5, 3))], {"target": TARGET})),
           fuzz=Fuzz("nll_loss", shapes=_nll_shapes, kwargs=_target_kwargs,
                     base=lambda ts, kw: [ts[0], kw["target"]])),
    OpSpec("nll_loss_backward", lambda g, target, num_classes:
           nll_loss_backward(g, target, num_classes), _nll_backward_ref,
           fixed_samples(("0d", [(_normal, ())], {"target": TARGET, "num_classes": 3})),
           fuzz=Fuzz("nll_loss_backward", ("grad_output",), shapes=lambda draw: [()],
                     kwargs=_nll_backward_kwargs,
                     base=lambda ts, kw: [ts[0], kw["target"], kw["num_classes"]])),
    OpSpec("log_softmax", lambda x, target: tp.nn.functional.cross_entropy(x, target),
           lambda x, target: _nll(_log_softmax(x, 1), target._data),
           fixed_samples(("5x3", [(_normal, (5, 3))], {"target": TARGET})),
           variant="cross_entropy",
           fuzz=Fuzz("cross_entropy", shapes=_nll_shapes, kwargs=_target_kwargs,
                     base=lambda ts, kw: [ts[0], kw["target"]])),
]


# ---------------------------------------------------------------- the same calls in PyTorch
# (tests/test_torch_table.py; rows of later families give ``torch=`` inline)
_INTERNAL = "an internal derivative kernel: torch has no public op of this name"
_TORCH = {
    "neg": lambda T, x: -x, "exp": lambda T, x: T.exp(x), "exp[method]": lambda T, x: x.exp(),
    "log": lambda T, x: T.log(x), "sqrt": lambda T, x: T.sqrt(x),
    "tanh": lambda T, x: T.tanh(x), "sigmoid": lambda T, x: T.sigmoid(x),
    "relu": lambda T, x: T.relu(x),
    "add": lambda T, a, b: a + b, "add[scalar]": lambda T, a: a + 2.5,
    "add[rscalar]": lambda T, a: 2.5 + a, "sub": lambda T, a, b: a - b,
    "sub[rscalar]": lambda T, a: 1.5 - a, "mul": lambda T, a, b: a * b,
    "mul[scalar]": lambda T, a: a * 3, "div": lambda T, a, b: a / b,
    "div[rscalar]": lambda T, b: 2.0 / b, "pow": lambda T, a, b: a ** b,
    "pow[int_exp]": lambda T, a: a ** 3, "pow[float_exp]": lambda T, a: a ** 2.5,
    "pow[rpow]": lambda T, b: 2.0 ** b, "pow[zero_exp]": lambda T, a: a ** 0.0,
    "where": lambda T, a, b, cond: T.where(cond, a, b),
    "where[piecewise]": lambda T, a: T.where(a > 0, a, a * a),
    "sum[all]": lambda T, x: x.sum(),
    "sum[dim]": lambda T, x, dim, keepdim: T.sum(x, dim=dim, keepdim=keepdim),
    "mean[all]": lambda T, x: x.mean(),
    "mean[dim]": lambda T, x, dim, keepdim: x.mean(dim, keepdim),
    "matmul": lambda T, a, b: a @ b,
    "reshape": lambda T, x, shape: x.reshape(shape), "view": lambda T, x, shape: x.view(shape),
    "view[unsqueeze_squeeze]": lambda T, x: x.unsqueeze(-1).squeeze(-1),
    "permute": lambda T, x, dims: x.permute(dims),
    "permute[transpose_mT]": lambda T, x: x.transpose(0, 2).mT,
    "permute[t]": lambda T, x: x.t(),
    "permute[T]": lambda T, x: x.permute(tuple(range(x.ndim - 1, -1, -1))),
    "expand": lambda T, x, shape: x.expand(*shape),
    "view[squeeze]": lambda T, x, dim: x.squeeze() if dim is None else x.squeeze(dim),
    "reshape[flatten]": lambda T, x, start_dim, end_dim: x.flatten(start_dim, end_dim),
    "expand[expand_as]": lambda T, x, other: x.expand_as(other),
    "getitem": lambda T, x, key: x[key],
    "stack": lambda T, a, b, c, dim: T.stack([a, b, c], dim),
    "clone": lambda T, x: x.clone(), "clone[contiguous]": lambda T, x: x.contiguous(),
    "_to_copy": lambda T, x: x.to(x.dtype, copy=True),
    "log_softmax": lambda T, x, dim: T.log_softmax(x, dim),
    "nll_loss": lambda T, logp, target: T.nn.functional.nll_loss(logp, target),
    "log_softmax[cross_entropy]": lambda T, x, target: T.nn.functional.cross_entropy(x, target),
}
for _spec in SPECS:
    _spec.torch = _TORCH.get(_spec.id, _INTERNAL if "_backward" in _spec.name else None)
