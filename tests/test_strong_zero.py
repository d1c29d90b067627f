"""The strong-zero convention of the fused derivative kernels (docs/DECISIONS.md).

A zero cotangent (or tangent) contributes exactly zero whatever f'(x) is there,
so the branch that ``where`` did not select cannot turn a derivative into nan.
The classic cases, in reverse mode, forward mode and at second order, against
closed forms; then every fused kernel at 0 * inf and 0 * nan.
"""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay._ops import elementwise as ew
from tensorplay.autograd import forward_ad as fwAD
from tensorplay.autograd.functional import jvp

DTYPES = [tp.float32, tp.float64]


def _exp_or_linear(x):
    # exp(200) overflows float32: the unselected branch is inf there
    return tp.where(x < 50, x.exp(), 3 * x)


@pytest.mark.parametrize("dtype", DTYPES)
def test_where_exp_overflow_reverse_forward_and_second_order(dtype):
    xs = np.array([200.0, 1.0, -2.0])
    want_d1 = np.where(xs < 50, np.exp(xs), 3.0)          # f'
    want_d2 = np.where(xs < 50, np.exp(xs), 0.0)          # f''
    tol = dict(rtol=1e-6 if dtype is tp.float32 else 1e-14)
    x = tp.tensor(xs, dtype=dtype, requires_grad=True)
    y = _exp_or_linear(x)
    if dtype is tp.float32:
        assert np.isinf(x.detach().exp().numpy()[0])      # the case really overflows
    (g,) = tp.autograd.grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), want_d1, **tol)
    (h,) = tp.autograd.grad(g.sum(), x)                   # diagonal Hessian
    np.testing.assert_allclose(h.numpy(), want_d2, **tol)
    # forward mode, and forward-over-reverse
    v = tp.tensor([1.0, -2.0, 0.5], dtype=dtype)
    _, jv = jvp(_exp_or_linear, x.detach(), v, mode="forward")
    np.testing.assert_allclose(jv.numpy(), want_d1 * v.numpy(), **tol)
    grad_fn = lambda t: tp.autograd.grad(_exp_or_linear(t).sum(), t,  # noqa: E731
                                         create_graph=True)[0]
    for mode in ("forward", "reversed"):
        _, hv = jvp(grad_fn, x.detach(), v, mode=mode)
        np.testing.assert_allclose(hv.numpy(), want_d2 * v.numpy(), **tol)


def _safe_norm(x):
    s = (x * x).sum()
    return tp.where(s > 0, tp.sqrt(s), 0.0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_safe_sqrt_norm_at_zero_has_zero_derivatives(dtype):
    x = tp.zeros(3, dtype=dtype, requires_grad=True)
    (g,) = tp.autograd.grad(_safe_norm(x), x, create_graph=True)
    np.testing.assert_array_equal(g.detach().numpy(), np.zeros(3))     # not nan
    (h,) = tp.autograd.grad(g.sum(), x)
    np.testing.assert_array_equal(h.numpy(), np.zeros(3))
    v = tp.tensor([1.0, 2.0, -1.0], dtype=dtype)
    _, jv = jvp(_safe_norm, x.detach(), v, mode="forward")
    np.testing.assert_array_equal(jv.numpy(), 0.0)
    with fwAD.dual_level():                                 # JVP of the gradient
        d = fwAD.make_dual(x.detach().requires_grad_(), v)
        (gd,) = tp.autograd.grad(_safe_norm(d), d, create_graph=True)
        t = fwAD.unpack_dual(gd).tangent
    np.testing.assert_array_equal(t.detach().numpy(), np.zeros(3))


def test_safe_sqrt_norm_away_from_zero_matches_closed_form():
    xs = np.array([0.3, -1.2, 2.0])
    r = np.linalg.norm(xs)
    x = tp.tensor(xs, dtype=tp.float64, requires_grad=True)
    (g,) = tp.autograd.grad(_safe_norm(x), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), xs / r, rtol=1e-14)
    hess = np.stack([tp.autograd.grad(g[i], x, retain_graph=True)[0].numpy()
                     for i in range(3)])
    np.testing.assert_allclose(hess, (np.eye(3) - np.outer(xs, xs) / r ** 2) / r, rtol=1e-13)


def test_plain_sqrt_at_zero_still_has_an_infinite_derivative():
    # the strong zero only drops zero cotangents; a nonzero one keeps IEEE's inf
    x = tp.zeros(2, dtype=tp.float64, requires_grad=True)
    (g,) = tp.autograd.grad(tp.sqrt(x).sum(), x)
    np.testing.assert_array_equal(g.numpy(), [np.inf, np.inf])


# ---- every fused derivative kernel: 0 * (inf or nan) = 0, nonzero g keeps IEEE
INF, NAN = np.inf, np.nan
CASES = [  # (function, inputs after g with f' infinite or nan, value for g = 1)
    (ew.mul_backward, [INF], INF),
    (ew.mul_backward, [NAN], NAN),
    (ew.div_backward, [0.0], INF),
    (ew.sqrt_backward, [0.0], INF),
    (ew.tanh_backward, [NAN], NAN),
    (ew.sigmoid_backward, [NAN], NAN),
    (ew.div_backward_other, [INF, 1.0], -INF),
    (ew.div_backward_other, [1.0, 0.0], -INF),
    (ew.div_backward_other, [NAN, 1.0], NAN),
    (ew.pow_backward_base, [0.0, -1.0], -INF),
    (ew.pow_backward_base, [NAN, 2.0], NAN),
    (ew.pow_backward_exponent, [INF, 0.0], -INF),
    (ew.pow_backward_exponent, [1.0, -1.0], NAN),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn,rest,at_one", CASES,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
@pytest.mark.parametrize("n", [1, 70_000], ids=["small", "threaded"])
def test_zero_cotangent_contributes_exactly_zero(fn, rest, at_one, dtype, n):
    g = np.zeros(n)
    g[::2] = 1.0                                         # alternate 1 and 0 (and -0)
    g[1::4] = -0.0
    args = [tp.tensor(g, dtype=dtype)] + [tp.full((n,), r, dtype=dtype) for r in rest]
    out = fn(*args).numpy()
    np.testing.assert_array_equal(out[1::2], 0.0)
    np.testing.assert_array_equal(out[::2], at_one)


def test_mul_backward_is_strong_on_both_sides():
    # 0 * inf = 0 in either order: the derivative of a kernel that is identically 0
    # where its g is 0 (x -> g * f'(x)) is 0 there, even for an infinite tangent
    g = tp.tensor([0.0, np.inf, 2.0, np.nan], dtype=tp.float64)
    y = tp.tensor([np.inf, 0.0, 3.0, 0.0], dtype=tp.float64)
    np.testing.assert_array_equal(ew.mul_backward(g, y).numpy(), [0.0, 0.0, 6.0, 0.0])
    np.testing.assert_array_equal(ew.mul_backward(y, g).numpy(), [0.0, 0.0, 6.0, 0.0])


def test_pow_conventions_at_base_zero_and_exponent_zero():
    # PyTorch's: d(a^b)/da = 0 where b == 0; d(a^b)/db = 0 where a == 0 and b >= 0
    a = tp.tensor([0.0, 0.0, 0.0, 2.0, 0.0], dtype=tp.float64, requires_grad=True)
    b = tp.tensor([0.0, 2.0, 0.5, 0.0, -1.0], dtype=tp.float64, requires_grad=True)
    ga, gb = tp.autograd.grad((a ** b).sum(), (a, b))
    np.testing.assert_array_equal(ga.numpy(), [0.0, 0.0, np.inf, 0.0, -np.inf])
    np.testing.assert_array_equal(gb.numpy(), [0.0, 0.0, 0.0, np.log(2.0), -np.inf])
    _, (jv,) = jvp(lambda s, t: (s ** t,), (a.detach(), b.detach()),
                   (tp.ones(5, dtype=tp.float64), tp.zeros(5, dtype=tp.float64)),
                   mode="forward")
    np.testing.assert_array_equal(jv.numpy(), ga.numpy())


def test_ternary_derivative_primitives_name_their_arguments_in_errors():
    with pytest.raises(RuntimeError, match=r"pow_backward_base\(\).*exponent \[4\]"):
        ew.pow_backward_base(tp.ones(3), tp.ones(3), tp.ones(4))
    with pytest.raises(RuntimeError, match=r"div_backward_other\(\).*output \[2\]"):
        ew.div_backward_other(tp.ones(3), tp.ones(2), 1.0)
    # mixed dtypes promote as for mul: a float64 operand makes the result float64
    out = ew.pow_backward_exponent(tp.ones(2), tp.ones(2, dtype=tp.float64), 2.0)
    assert out.dtype is tp.float64
    np.testing.assert_allclose(out.numpy(), np.log(2.0), rtol=1e-15)


def test_relu_gradient_at_nan_passes_through():
    """relu(nan) = nan, and its gradient passes the cotangent on (PyTorch's
    threshold_backward on the result), rather than silently hiding the nan."""
    x = tp.tensor([float("nan"), -1.0, 0.0, 2.0], dtype=tp.float64, requires_grad=True)
    g, = tp.autograd.grad(tp.relu(x).sum(), x)
    np.testing.assert_array_equal(g.numpy(), [1.0, 0.0, 0.0, 1.0])


def test_forward_jvp_fallback_is_not_swallowed_by_the_function():
    """A function that catches RuntimeError around autograd.grad still gets the
    reverse graph it needs in jvp(mode="forward"): same numbers as mode="reversed"."""
    from tensorplay.autograd.functional import jvp

    def f(x):
        try:
            return tp.autograd.grad((x ** 2).sum(), x, create_graph=True)[0]
        except RuntimeError:
            return x * 0 + 7

    x = tp.tensor([1.0, -2.0], dtype=tp.float64)
    v = tp.tensor([0.5, 3.0], dtype=tp.float64)
    out_f, jv_f = jvp(f, x, v, mode="forward")
    out_r, jv_r = jvp(f, x, v, mode="reversed")
    np.testing.assert_allclose(out_f.numpy(), 2 * x.numpy())
    np.testing.assert_allclose(jv_f.numpy(), 2 * v.numpy())
    np.testing.assert_allclose(jv_r.numpy(), jv_f.numpy())


@pytest.mark.parametrize("name", ["tanh", "sigmoid"])
def test_second_order_strong_zero_at_nan(name):
    """where(x < 50, f(x), 0) at x = nan: the unselected branch contributes 0 to the
    second derivative too (reverse-over-reverse and forward-over-reverse); at x = 1
    the closed forms tanh'' = -2 t (1 - t^2), sigmoid'' = s (1 - s)(1 - 2 s)."""
    fn = getattr(tp, name)
    t, s = np.tanh(1.0), 1 / (1 + np.exp(-1.0))
    want = {"tanh": -2 * t * (1 - t * t), "sigmoid": s * (1 - s) * (1 - 2 * s)}[name]

    def f(x):
        return tp.where(x < 50, fn(x), x * 0).sum()

    def df(x):
        return tp.autograd.grad(f(x), x, create_graph=True)[0]

    x = tp.tensor([float("nan"), 1.0], dtype=tp.float64, requires_grad=True)
    h, = tp.autograd.grad(df(x).sum(), x)
    np.testing.assert_allclose(h.numpy(), [0.0, want], rtol=1e-12)
    _, hv = jvp(df, x.detach(), tp.ones(2, dtype=tp.float64), mode="forward")
    np.testing.assert_allclose(hv.numpy(), [0.0, want], rtol=1e-12)
