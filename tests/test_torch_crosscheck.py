"""tensorplay against PyTorch itself, in float64: values, gradients (via
``autograd.grad`` on both sides), ``functional.jvp`` and dtype promotion.

Each test function is written once against a module ``M`` (``torch`` or
``tensorplay``) -- the two share their API -- and run on both with the same numpy
data.  Skipped when torch is not installed.
"""
import itertools
import zlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tensorplay as tp  # noqa: E402

RTOL, ATOL = 1e-12, 1e-13


def _seed(*parts):
    """A generator seeded by the test's parameters (stable across processes)."""
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


def _to(M, a):
    if M is torch:
        t = torch.tensor(a)
        return t.requires_grad_() if a.dtype.kind == "f" else t
    return tp.tensor(a, requires_grad=a.dtype.kind == "f")


def _np(t):
    return t.detach().numpy()


def _tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _run(M, fn, arrays, cotangents):
    ins = [_to(M, a) for a in arrays]
    outs = _tuple(fn(M, *ins))
    diff = [t for t, a in zip(ins, arrays) if a.dtype.kind == "f"]
    if cotangents is None:
        gouts = None
    else:
        gouts = [torch.tensor(u) if M is torch else tp.tensor(u) for u in cotangents]
    grads = M.autograd.grad(outs, diff, gouts, allow_unused=True)
    return [_np(o) for o in outs], [None if g is None else _np(g) for g in grads]


def check_against_torch(fn, arrays, rng, scalar_loss=False, rtol=RTOL, atol=ATOL):
    """Compare ``fn(M, *inputs)`` and the VJP w.r.t. every float input between
    torch and tensorplay.  Cotangents are random normal (ones-implied with
    ``scalar_loss``)."""
    arrays = [np.asarray(a) for a in arrays]
    with torch.no_grad():
        ref_outs = _tuple(fn(torch, *[torch.tensor(a) for a in arrays]))
    cot = None if scalar_loss else [np.asarray(rng.standard_normal(tuple(o.shape)), np.float64)
                                    for o in ref_outs]
    want_out, want_grad = _run(torch, fn, arrays, cot)
    got_out, got_grad = _run(tp, fn, arrays, cot)
    assert len(got_out) == len(want_out)
    for g, w in zip(got_out, want_out):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    for g, w in zip(got_grad, want_grad):
        if w is None:
            assert g is None or not np.any(g)
            continue
        assert g is not None and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


# =====================================================================================
# 2-layer MLP with cross-entropy
# =====================================================================================
ACTS = {"tanh": lambda h: h.tanh(), "relu": lambda h: h.relu(), "sigmoid": lambda h: h.sigmoid()}


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("act2", sorted(ACTS))
@pytest.mark.parametrize("act1", sorted(ACTS))
def test_mlp_cross_entropy(act1, act2, reduction):
    rng = _seed("mlp", act1, act2, reduction)
    n, d, h, c = 16, 5, 7, 4
    X = rng.standard_normal((n, d))
    target = rng.integers(0, c, n)
    W1, b1 = rng.standard_normal((d, h)) / 2, rng.standard_normal(h)
    W2, b2 = rng.standard_normal((h, h)) / 2, rng.standard_normal(h)
    W3, b3 = rng.standard_normal((h, c)), rng.standard_normal(c)

    def mlp(M, X, target, W1, b1, W2, b2, W3, b3):
        h1 = ACTS[act1](X @ W1 + b1)
        h2 = ACTS[act2](h1 @ W2 + b2)
        return M.nn.functional.cross_entropy(h2 @ W3 + b3, target, reduction=reduction)

    check_against_torch(mlp, [X, target, W1, b1, W2, b2, W3, b3], rng, scalar_loss=True)


def test_mlp_input_gradient_and_log_softmax_head():
    rng = _seed("mlp-head")
    X, W = rng.standard_normal((6, 4)), rng.standard_normal((4, 3))

    def head(M, X, W):
        logp = M.log_softmax((X @ W).tanh() * 3, 1)
        return logp, logp.exp().sum(1)

    check_against_torch(head, [X, W], rng)


# =====================================================================================
# log_softmax, broadcasting chains, reductions
# =====================================================================================
@pytest.mark.parametrize("shape, dim", [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((3, 4), -1),
                                        ((2, 3, 4), 1), ((2, 3, 4), -1), ((1, 6), 1),
                                        ((4, 1), 1)])
def test_log_softmax(shape, dim):
    rng = _seed("lsm", shape, dim)
    x = rng.standard_normal(shape) * 5
    check_against_torch(lambda M, x: M.log_softmax(x, dim), [x], rng)
    check_against_torch(lambda M, x: M.softmax(x, dim), [x], rng)


BROADCAST_SHAPES = [
    ((3,), (3,), ()),
    ((2, 1, 3), (4, 1), (3,)),
    ((4, 1), (1, 5), (4, 5)),
    ((), (2, 3), (1, 3)),
    ((2, 3, 1, 1), (5,), (1, 4, 1)),
]


@pytest.mark.parametrize("sa, sb, sc", BROADCAST_SHAPES, ids=str)
def test_broadcast_add_mul_div_pow_chain(sa, sb, sc):
    rng = _seed("bcast", sa, sb, sc)
    a, b, c = rng.standard_normal(sa), rng.standard_normal(sb), rng.standard_normal(sc)

    def chain(M, a, b, c):
        base = a * a + 0.5                      # positive base for tensor ** tensor
        q = (a + b) * c / (b * b + 1) - 2.5 / (c * c + 1)
        return q, base ** c, (q ** 2 + 1) ** 0.5, 3 ** (c / 4) * b

    check_against_torch(chain, [a, b, c], rng)


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [None, 0, -1, 1, (0, 2), (2, 0), (-1, -3), (1, 2), (0, 1, 2), ()],
                         ids=str)
@pytest.mark.parametrize("op", ["sum", "mean"])
def test_sum_mean(op, dim, keepdim):
    rng = _seed("reduce", op, dim, keepdim)
    x = rng.standard_normal((3, 4, 5))

    def reduce(M, x):
        f = getattr(x, op)
        return f() if dim is None else f(dim, keepdim=keepdim)

    check_against_torch(reduce, [x], rng)
    # non-contiguous input
    check_against_torch(lambda M, x: reduce(M, x.permute(2, 0, 1)), [x], rng)


# =====================================================================================
# matmul in every rank combination
# =====================================================================================
MATMUL_SHAPES = [
    ((3,), (3,)),                   # 1-D . 1-D
    ((2, 3), (3,)),                 # 2-D . 1-D
    ((3,), (3, 4)),                 # 1-D . 2-D
    ((2, 3), (3, 4)),               # 2-D . 2-D
    ((5, 2, 3), (3, 4)),            # batched . 2-D
    ((3, 4), (5, 4, 2)),            # 2-D . batched
    ((5, 2, 3), (3,)),              # batched . 1-D
    ((3,), (5, 3, 4)),              # 1-D . batched
    ((5, 2, 3), (5, 3, 4)),         # same batch
    ((2, 1, 2, 3), (4, 3, 5)),      # broadcast batch dims
    ((1, 2, 3), (6, 3, 2)),         # size-1 batch
    ((6, 1, 2, 3), (1, 5, 3, 2)),
]


@pytest.mark.parametrize("sa, sb", MATMUL_SHAPES, ids=str)
def test_matmul(sa, sb):
    rng = _seed("matmul", sa, sb)
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    check_against_torch(lambda M, a, b: a @ b, [a, b], rng)
    check_against_torch(lambda M, a, b: M.matmul(a, b).tanh(), [a, b], rng)


def test_matmul_transposed_operands():
    rng = _seed("matmul-T")
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((5, 4))
    check_against_torch(lambda M, a, b: a.T @ b.T, [a, b], rng)
    check_against_torch(lambda M, a, b: a.mT @ b.transpose(0, 1), [a, b], rng)


# =====================================================================================
# indexing, expand, permute
# =====================================================================================
GETITEM_KEYS = [
    (slice(1, None),), (slice(None, None, 2),), (slice(None), 1), (1, slice(1, 3)),
    (Ellipsis, slice(None, 2)), (None, slice(None), 0), (-1,), (slice(-3, -1), None, 2),
    (0, Ellipsis, None), (slice(5, 9),),
]


@pytest.mark.parametrize("key", GETITEM_KEYS, ids=str)
def test_getitem(key):
    rng = _seed("getitem", str(key))
    x = rng.standard_normal((4, 3, 5))
    check_against_torch(lambda M, x: x[key] * 2, [x], rng)
    # the same slice taken twice accumulates
    check_against_torch(lambda M, x: x[key] * x[key], [x], rng)


@pytest.mark.parametrize("shape, sizes", [((3, 1), (3, 4)), ((1, 3), (2, 5, 3)),
                                          ((3,), (2, 3)), ((2, 1, 1), (-1, 4, 3)),
                                          ((), (2, 2)), ((3, 1), (3, 1))], ids=str)
def test_expand(shape, sizes):
    rng = _seed("expand", shape, sizes)
    x = rng.standard_normal(shape)
    check_against_torch(lambda M, x: x.expand(*sizes).exp(), [x], rng)
    check_against_torch(lambda M, x: x.expand(sizes) * 3, [x], rng)


@pytest.mark.parametrize("dims", [(0, 1, 2), (2, 0, 1), (1, 2, 0), (2, 1, 0), (-1, 0, 1)],
                         ids=str)
def test_permute(dims):
    rng = _seed("permute", dims)
    x = rng.standard_normal((2, 3, 4))
    w = rng.standard_normal(x.transpose([d % 3 for d in dims]).shape)

    def f(M, x, w):
        p = x.permute(*dims)
        return p * w, p.reshape(-1), p.contiguous().sum(0)

    check_against_torch(f, [x, w], rng)


# =====================================================================================
# functional.jvp vs torch.autograd.functional.jvp
# =====================================================================================
def _jvp_single(M, x):
    return (x @ x.T).tanh().sum(1) * x.sigmoid().mean()


def _jvp_tuple(M, x, y):
    z = M.log_softmax(x @ y, 1)
    return z, (x.exp() / (y.sum(1) ** 2 + 1)).sqrt()


JVP_FUNCS = {
    "single": (_jvp_single, [(3, 4)]),
    "tuple": (_jvp_tuple, [(3, 4), (4, 2)]),
}


@pytest.mark.parametrize("mode", ["reversed", "forward"])
@pytest.mark.parametrize("name", sorted(JVP_FUNCS))
def test_functional_jvp(name, mode):
    fn, shapes = JVP_FUNCS[name]
    rng = _seed("jvp", name, mode)
    xs = [rng.standard_normal(s) for s in shapes]
    vs = [rng.standard_normal(s) for s in shapes]
    if name == "tuple":
        xs[1] = np.abs(xs[1])

    def call(M, jvp, **kw):
        ins = tuple(M.tensor(a) for a in xs)
        v = tuple(M.tensor(a) for a in vs)
        f = lambda *args: fn(M, *args)  # noqa: E731
        if len(ins) == 1:
            return jvp(f, ins[0], v[0], **kw)
        return jvp(f, ins, v, **kw)

    want_out, want_jvp = call(torch, torch.autograd.functional.jvp)
    got_out, got_jvp = call(tp, tp.autograd.functional.jvp, mode=mode)
    assert isinstance(got_out, tuple) == isinstance(want_out, tuple)
    assert isinstance(got_jvp, tuple) == isinstance(want_jvp, tuple)
    for g, w in zip(_tuple(got_out) + _tuple(got_jvp), _tuple(want_out) + _tuple(want_jvp)):
        np.testing.assert_allclose(_np(g), _np(w), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("mode", ["reversed", "forward"])
def test_functional_jvp_strict_and_create_graph_like_torch(mode):
    rng = _seed("jvp-strict", mode)
    xv, vv = rng.standard_normal((2, 3))

    def fn(M, x):
        return x ** 3, M.ones(3, dtype=M.float64)

    res = {}
    for M, jvp, kw in ((torch, torch.autograd.functional.jvp, {}),
                       (tp, tp.autograd.functional.jvp, {"mode": mode})):
        with pytest.raises(RuntimeError):
            jvp(lambda x: fn(M, x), M.tensor(xv), M.tensor(vv), strict=True, **kw)
        x = M.tensor(xv).requires_grad_()
        out, jv = jvp(lambda x: fn(M, x), x, M.tensor(vv), create_graph=True, **kw)
        (g,) = M.autograd.grad(jv[0].sum(), x)
        res[M.__name__] = [_np(jv[0]), _np(jv[1]), _np(g)]
    for g, w in zip(res["tensorplay"], res["torch"]):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


# =====================================================================================
# dtype promotion
# =====================================================================================
DTYPES = ["bool", "int32", "int64", "float32", "float64"]
KINDS = ([("1-d", d) for d in DTYPES] + [("0-d", d) for d in DTYPES]
         + [("scalar", s) for s in ("bool", "int", "float")])
PAIRS = [(a, b) for a, b in itertools.product(KINDS, KINDS)
         if not (a[0] == "scalar" and b[0] == "scalar")]


def _operand(M, kind):
    group, name = kind
    if group == "scalar":
        return {"bool": True, "int": 3, "float": 2.5}[name]
    shape = (2,) if group == "1-d" else ()
    return M.ones(shape, dtype=getattr(M, name))


def _dtype_name(d):
    return str(d).split(".")[-1]


@pytest.mark.parametrize("a, b", PAIRS, ids=lambda k: "-".join(k))
def test_result_type_and_op_dtypes(a, b):
    want = _dtype_name(torch.result_type(_operand(torch, a), _operand(torch, b)))
    assert _dtype_name(tp.result_type(_operand(tp, a), _operand(tp, b))) == want
    for op in ("add", "mul", "div"):
        want_op = getattr(torch, op)(_operand(torch, a), _operand(torch, b))
        got_op = getattr(tp, op)(_operand(tp, a), _operand(tp, b))
        assert _dtype_name(got_op.dtype) == _dtype_name(want_op.dtype), op
        assert tuple(got_op.shape) == tuple(want_op.shape)
        np.testing.assert_allclose(np.asarray(got_op.numpy(), dtype=np.float64),
                                   want_op.double().numpy(), rtol=1e-7)


BOOL_SUB_PAIRS = [(a, b) for a, b in PAIRS if "bool" in (a[1], b[1])]


def test_sub_with_a_bool_operand_raises_like_torch():
    disagree = []
    for a, b in BOOL_SUB_PAIRS:
        try:
            torch.sub(_operand(torch, a), _operand(torch, b))
            torch_raises = False
        except RuntimeError:
            torch_raises = True
        try:
            tp.sub(_operand(tp, a), _operand(tp, b))
            tp_raises = False
        except RuntimeError:
            tp_raises = True
        if torch_raises != tp_raises:
            disagree.append((a, b))
    assert not disagree


# =====================================================================================
# repr
# =====================================================================================
REPR_DATA = {
    "integral": [1.0, 2.0, 3.0],
    "fixed": [1.5, 2.25],
    "sci-small": [1e-5, 1.0],
    "sci-big": [1e9, 1.0],
    "nonfinite": [1.0, float("nan"), float("inf")],
    "int-2d": [[1, 20], [-3, 4]],
    "bool": [True, False],
    "0d": 2.5,
    "empty": [],
    "neg-integral": [-1.0, 2.0],
    "neg-fixed": [-1.5, 2.0],
    "neg-sci": [-1e-5, 1.0],
    "neg-2d": [[1.0, 2.5], [-3.0, 4.0]],
    "wide-fixed": [1000.5, 1.25],
    "wide-integral": [1.0, 100.0, 1000.0],
    "integral-ratio": [123456.0, 1.0],
    "single-true": [True],
    "summarized": list(range(1500)),
}
REPR_CASES = [pytest.param(data, dt, id=f"{name}-{dt or 'inferred'}")
              for name, data in REPR_DATA.items() for dt in (None, "float64")]


@pytest.mark.parametrize("data, dtype", REPR_CASES)
def test_repr_matches_torch(data, dtype):
    want = repr(torch.tensor(data, dtype=None if dtype is None else getattr(torch, dtype)))
    got = repr(tp.tensor(data, dtype=None if dtype is None else getattr(tp, dtype)))
    assert got == want.replace("torch.", "tensorplay.")


def test_pow_and_where_gradients_at_the_edges_match_torch():
    # x^0 at x = 0, 0^e for e >= 0 and e < 0, and where() routing
    xs = [0.0, 0.0, 1.5, 2.0]
    es = [0.0, 2.0, -1.0, 0.5]
    x_tp = tp.tensor(xs, dtype=tp.float64, requires_grad=True)
    e_tp = tp.tensor(es, dtype=tp.float64, requires_grad=True)
    x_t = torch.tensor(xs, dtype=torch.float64, requires_grad=True)
    e_t = torch.tensor(es, dtype=torch.float64, requires_grad=True)
    out_tp = (x_tp ** e_tp + tp.where(x_tp > 1, x_tp * 3, e_tp)).sum()
    out_t = (x_t ** e_t + torch.where(x_t > 1, x_t * 3, e_t)).sum()
    g_tp = tp.autograd.grad(out_tp, (x_tp, e_tp))
    g_t = torch.autograd.grad(out_t, (x_t, e_t))
    for a, b in zip(g_tp, g_t):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-14, equal_nan=True)


def test_pow_fused_derivatives_match_torch_on_a_grid_of_edges():
    # pow_backward_base / pow_backward_exponent apply PyTorch's conventions inside
    # the loop: compare first derivatives on every (base, exponent) pair of edges
    a_vals = [0.0, 0.5, 2.0, -1.5, 1.0]
    b_vals = [0.0, 1.0, 2.0, 0.5, -1.0, -2.0, 3.0]
    a_np, b_np = (np.array(v, np.float64) for v in zip(*itertools.product(a_vals, b_vals)))
    grads = {}
    for M in (torch, tp):
        a, b = _to(M, a_np), _to(M, b_np)
        grads[M] = [_np(g) for g in M.autograd.grad((a ** b).sum(), (a, b))]
    for mine, ref in zip(grads[tp], grads[torch]):
        np.testing.assert_allclose(mine, ref, rtol=1e-14, equal_nan=True)


def test_pow_second_derivatives_match_torch():
    rng = _seed("pow2")
    a_np, b_np = rng.uniform(0.5, 2.0, 6), rng.uniform(-2.0, 3.0, 6)
    b_np[:2] = [0.0, 1.0]                        # the masked exponents
    res = {}
    for M in (torch, tp):
        a, b = _to(M, a_np), _to(M, b_np)
        ga, gb = M.autograd.grad((a ** b).sum(), (a, b), create_graph=True)
        res[M] = [_np(g) for g in M.autograd.grad((ga * gb).sum(), (a, b))]
    for mine, ref in zip(res[tp], res[torch]):
        np.testing.assert_allclose(mine, ref, rtol=1e-12, atol=1e-13)


def test_where_with_an_overflowing_branch_differs_from_torch_by_design():
    # torch: 0 (unselected cotangent) * inf (exp's derivative) = nan; tensorplay's
    # fused kernels follow the strong zero (docs/DECISIONS.md): the gradient is 3
    xs = np.array([200.0, 1.0], np.float32)
    x_t = torch.tensor(xs, requires_grad=True)
    (g_t,) = torch.autograd.grad(torch.where(x_t < 50, x_t.exp(), 3 * x_t).sum(), x_t)
    x = tp.tensor(xs, requires_grad=True)
    (g,) = tp.autograd.grad(tp.where(x < 50, x.exp(), 3 * x).sum(), x)
    assert np.isnan(g_t.numpy()[0])
    np.testing.assert_allclose(g.numpy(), [3.0, np.exp(1.0)], rtol=1e-6)
    np.testing.assert_allclose(g.numpy()[1], g_t.numpy()[1], rtol=1e-6)
