"""Edge cases of the unary math family that the op table cannot express: integer
and bool dtypes, infinities and nan, kinks and their subgradients, stability near
0 and in the tails, higher orders of digamma/lgamma, errors, threads."""
import math

import numpy as np
import pytest
import scipy.special as sp

import tensorplay as tp
from tensorplay._ops import unary as U
from tensorplay._ops import unary_special as S
from tensorplay.autograd import forward_ad as fwAD

try:
    import torch
except ImportError:          # pragma: no cover
    torch = None


def _t(values, dtype=tp.float64, grad=False):
    x = tp.tensor(values, dtype=dtype)
    return x.requires_grad_() if grad else x


def _grad(f, x, order=1):
    """d^order/dx^order of sum(f(x)), by reverse mode with create_graph."""
    y = f(x).sum()
    for _ in range(order):
        (y,) = tp.autograd.grad(y, x, create_graph=True)
        if _ < order - 1:
            y = y.sum()
    return y


# ---------------------------------------------------------------- dtypes (PyTorch's)
FLOAT_VALUED = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
                "atanh", "log1p", "expm1", "log2", "log10", "exp2", "rsqrt", "reciprocal",
                "erf", "erfc", "erfinv", "lgamma", "digamma", "sinc", "logit"]


@pytest.mark.parametrize("name", FLOAT_VALUED)
@pytest.mark.parametrize("dtype", [tp.int64, tp.int32, tp.bool], ids=str)
def test_integer_input_gives_default_float(name, dtype):
    x = tp.tensor([1, 0, 1], dtype=dtype)
    out = getattr(tp, name)(x)
    assert out.dtype is tp.get_default_dtype()
    ref = getattr(tp, name)(x.to(tp.float32))
    np.testing.assert_array_equal(out.numpy(), ref.numpy())


@pytest.mark.parametrize("name", ["abs", "sign", "sgn", "square", "floor", "ceil", "round",
                                  "trunc"])
@pytest.mark.parametrize("dtype", [tp.int64, tp.int32], ids=str)
def test_integer_dtype_is_kept(name, dtype):
    a = np.array([-3, 0, 2, 7])
    x = tp.tensor(a, dtype=dtype)
    out = getattr(tp, name)(x)
    assert out.dtype is dtype
    ref = {"abs": np.abs, "sign": np.sign, "sgn": np.sign, "square": np.square}.get(
        name, lambda v: v)(a)
    np.testing.assert_array_equal(out.numpy(), ref)
    assert out._data is not x._data              # a copy, also for the identities


def test_bool_inputs():
    b = tp.tensor([True, False])
    assert tp.sign(b).dtype is tp.bool and tp.sign(b).tolist() == [True, False]
    assert tp.square(b).dtype is tp.int64 and tp.square(b).tolist() == [1, 0]
    for name in ("abs", "floor", "ceil", "round", "trunc", "frac"):
        with pytest.raises(NotImplementedError, match=name):
            getattr(tp, name)(b)


def test_frac_and_round_decimals_of_integers_raise():
    x = tp.tensor([1, 2])
    with pytest.raises(NotImplementedError, match="frac"):
        tp.frac(x)
    with pytest.raises(NotImplementedError, match="decimals"):
        tp.round(x, decimals=1)
    assert tp.round(x, decimals=0).tolist() == [1, 2]


@pytest.mark.skipif(torch is None, reason="torch not installed")
def test_result_dtypes_match_torch():
    for name in FLOAT_VALUED + ["abs", "sign", "sgn", "square", "floor", "round"]:
        for dt, tdt in ((tp.int64, torch.int64), (tp.int32, torch.int32),
                        (tp.float32, torch.float32), (tp.float64, torch.float64)):
            got = getattr(tp, name)(tp.tensor([1, 2], dtype=dt)).dtype
            want = getattr(torch, name)(torch.tensor([1, 2], dtype=tdt)).dtype
            assert str(got).split(".")[-1] == str(want).split(".")[-1], (name, dt)


# ---------------------------------------------------------------- kinks and zero derivatives
def test_abs_subgradient_at_zero_is_zero():
    x = _t([-2.0, 0.0, -0.0, 3.0], grad=True)
    (g,) = tp.autograd.grad(tp.abs(x).sum(), x)
    assert g.tolist() == [-1.0, 0.0, 0.0, 1.0]
    assert abs(x).tolist() == [2.0, 0.0, 0.0, 3.0]          # __abs__
    with fwAD.dual_level():
        d = fwAD.make_dual(_t([0.0, -1.0]), _t([5.0, 5.0]))
        assert fwAD.unpack_dual(tp.abs(d)).tangent.tolist() == [0.0, -5.0]


@pytest.mark.parametrize("name", ["sign", "sgn", "floor", "ceil", "round", "trunc"])
@pytest.mark.parametrize("dtype", [tp.float32, tp.float64], ids=str)
def test_piecewise_constant_ops_have_zero_gradient(name, dtype):
    x = tp.tensor(np.linspace(-2.3, 2.7, 12).reshape(3, 4), dtype=dtype).requires_grad_()
    (g,) = tp.autograd.grad(getattr(tp, name)(x).sum(), x)
    assert g.shape == x.shape and g.dtype is dtype and not g.numpy().any()
    with fwAD.dual_level():
        d = fwAD.make_dual(x.detach(), tp.ones_like(x))
        t = fwAD.unpack_dual(getattr(tp, name)(d)).tangent
    assert t is None or not t.numpy().any()


def test_frac_derivative_is_one_and_sign_of_input():
    x = _t([-1.5, 2.75, -0.25], grad=True)
    assert tp.frac(x).tolist() == [-0.5, 0.75, -0.25]
    (g,) = tp.autograd.grad(tp.frac(x).sum(), x)
    assert g.tolist() == [1.0, 1.0, 1.0]


def test_sign_of_nan_is_zero_as_torch():
    assert tp.sign(_t([math.nan, -0.0, -3.0, math.inf])).tolist() == [0.0, 0.0, -1.0, 1.0]


# ---------------------------------------------------------------- round
def test_round_half_to_even_and_decimals():
    x = _t([0.5, 1.5, 2.5, -0.5, -2.5])
    assert tp.round(x).tolist() == [0.0, 2.0, 2.0, -0.0, -2.0]
    assert tp.round(_t([1.25, 1.35, -2.55]), decimals=1).tolist() == \
        np.round([1.25, 1.35, -2.55], 1).tolist()
    assert tp.round(_t([15.0, 25.0, 1234.5]), decimals=-1).tolist() == [20.0, 20.0, 1230.0]
    # rint(2.675 * 100) / 100: 2.675 * 100 rounds to 267.5, so 2.68, as numpy and torch
    # (Python's round(2.675, 2) is 2.67, correctly rounded from the binary value)
    assert tp.round(_t(2.675), decimals=2).item() == 2.68
    with pytest.raises(TypeError, match="decimals"):
        tp.round(x, decimals=1.5)


# ---------------------------------------------------------------- stability
def test_log1p_expm1_exact_near_zero():
    for dtype, tol in ((tp.float64, 1e-16), (tp.float32, 1e-7)):
        x = tp.tensor([1e-10, -1e-12, 1e-30], dtype=dtype)
        np.testing.assert_allclose(tp.log1p(x).numpy(), np.log1p(x.numpy()), rtol=tol)
        np.testing.assert_allclose(tp.expm1(x).numpy(), np.expm1(x.numpy()), rtol=tol)
        assert tp.log1p(x).numpy()[0] != 0 and tp.expm1(x).numpy()[0] != 0
    x = _t([1e-10, -1e-10], grad=True)
    (g,) = tp.autograd.grad(tp.log1p(x).sum(), x)
    np.testing.assert_allclose(g.numpy(), 1 / (1 + np.array([1e-10, -1e-10])), rtol=1e-15)


def test_erfc_and_erfinv_tails():
    np.testing.assert_allclose(tp.erfc(_t([10.0, 26.0])).numpy(), sp.erfc([10.0, 26.0]),
                               rtol=1e-13)
    y = np.array([1 - 1e-10, -(1 - 1e-15), 0.999, 1e-300, -0.7, 0.7000001])
    np.testing.assert_allclose(tp.erfinv(_t(y)).numpy(), sp.erfinv(y), rtol=1e-13)
    out = tp.erfinv(_t([1.0, -1.0, 1.5, math.nan])).tolist()
    assert out[:2] == [math.inf, -math.inf] and all(math.isnan(v) for v in out[2:])


def test_special_values():
    d = tp.digamma(_t([0.0, -0.0, -1.0, -2.0, math.inf, -math.inf])).tolist()
    assert d[:2] == [-math.inf, math.inf] and math.isnan(d[2]) and math.isnan(d[3])
    assert d[4] == math.inf and math.isnan(d[5])
    assert tp.lgamma(_t([0.0, -1.0, math.inf, -math.inf])).tolist() == [math.inf] * 4
    np.testing.assert_allclose(tp.digamma(_t([1e-300, 1e17, 1e20, -1e10 + 0.5])).numpy(),
                               sp.digamma([1e-300, 1e17, 1e20, -1e10 + 0.5]), rtol=1e-12)
    assert tp.sinc(_t([0.0, -0.0, math.inf])).tolist()[:2] == [1.0, 1.0]
    assert math.isnan(tp.sinc(_t([math.inf])).item())
    assert tp.rsqrt(_t([0.0, 4.0])).tolist() == [math.inf, 0.5]
    assert tp.reciprocal(_t([0.0, -0.0])).tolist() == [math.inf, -math.inf]
    assert math.isnan(tp.asin(_t(1.5)).item()) and math.isnan(tp.acosh(_t(0.5)).item())
    assert tp.atanh(_t([1.0, -1.0])).tolist() == [math.inf, -math.inf]


def test_large_arguments():
    x = np.array([1e5, -1e8, 1e15])
    np.testing.assert_allclose(tp.sin(_t(x)).numpy(), np.sin(x), rtol=1e-13, atol=1e-15)
    x = np.array([-1000.0, 1000.0, 700.0])
    assert tp.exp2(_t([-1100.0, 1100.0])).tolist() == [0.0, math.inf]
    np.testing.assert_allclose(tp.erf(_t(x)).numpy(), [-1.0, 1.0, 1.0])
    np.testing.assert_allclose(tp.asinh(_t([1e300, -1e300])).numpy(), np.arcsinh([1e300, -1e300]))
    np.testing.assert_allclose(tp.lgamma(_t([1e300, 1e5])).numpy(), sp.gammaln([1e300, 1e5]),
                               rtol=1e-14)


# ---------------------------------------------------------------- sinc at 0
def test_sinc_derivatives_at_zero():
    x = _t([0.0, 1e-5, 0.5], grad=True)
    g = _grad(tp.sinc, x)
    assert g.tolist()[0] == 0.0
    np.testing.assert_allclose(g.detach().numpy()[1], -np.pi ** 2 / 3 * 1e-5, rtol=1e-6)
    h = _grad(tp.sinc, x, order=2)
    np.testing.assert_allclose(h.detach().numpy()[:2], [-np.pi ** 2 / 3] * 2, rtol=1e-8)
    assert np.isfinite(_grad(tp.sinc, x, order=3).detach().numpy()).all()


# ---------------------------------------------------------------- logit
def test_logit_eps_clamps_and_has_zero_gradient_outside():
    x = _t([0.0, 1e-7, 0.5, 1.0, -1.0, 2.0], grad=True)
    out = tp.logit(x, eps=1e-6)
    np.testing.assert_allclose(out.detach().numpy(),
                               sp.logit(np.clip(x.detach().numpy(), 1e-6, 1 - 1e-6)))
    (g,) = tp.autograd.grad(out.sum(), x)
    assert g.tolist() == [0.0, 0.0, 4.0, 0.0, 0.0, 0.0]              # as torch
    (g,) = tp.autograd.grad(tp.logit(x).sum(), x)
    got = g.tolist()
    assert got[0] == math.inf and got[2] == 4.0 and got[3] == math.inf
    assert all(math.isnan(v) for v in got[4:])                         # torch: nan outside
    assert tp.logit(_t([0.0, 1.0])).tolist() == [-math.inf, math.inf]
    for bad in ("a", True, [0.1]):
        with pytest.raises(TypeError, match="eps"):
            tp.logit(x, bad)


# ---------------------------------------------------------------- gamma functions, all orders
def test_digamma_and_lgamma_higher_orders_are_polygamma():
    a = np.array([0.3, 1.7, 4.2, -1.4, -2.6])
    x = _t(a, grad=True)
    for order in (1, 2, 3):
        np.testing.assert_allclose(_grad(tp.digamma, x, order).detach().numpy(),
                                   sp.polygamma(order, a), rtol=1e-10)
        np.testing.assert_allclose(_grad(tp.lgamma, x, order).detach().numpy(),
                                   sp.polygamma(order - 1, a) if order > 1 else sp.digamma(a),
                                   rtol=1e-10)


def test_polygamma_kernel_accuracy():
    a = np.concatenate([np.linspace(0.01, 40, 97), -np.linspace(0.1, 30.9, 41) - 0.033])
    for n in (1, 2, 3, 4, 7):
        got = S.polygamma_backward(1.0, _t(a), n).numpy()
        np.testing.assert_allclose(got, sp.polygamma(n, a), rtol=1e-11, err_msg=f"n={n}")
    with pytest.raises(RuntimeError, match="'n'"):
        S.polygamma_backward(1.0, _t(a), 0)
    with pytest.raises(TypeError, match="'n'"):
        S.polygamma_backward(1.0, _t(a), 1.5)


@pytest.mark.skipif(torch is None, reason="torch not installed")
def test_digamma_against_torch():
    # torch's trigamma is accurate to ~1e-9 (the op table's torch check is 1e-10)
    a = np.array([0.3, 1.7, 4.2, -1.4, -2.6, 25.0])
    x = _t(a, grad=True)
    tx = torch.tensor(a, requires_grad=True)
    np.testing.assert_allclose(tp.digamma(x).detach().numpy(),
                               torch.digamma(tx).detach().numpy(), rtol=1e-13)
    (g,) = tp.autograd.grad(tp.digamma(x).sum(), x)
    (tg,) = torch.autograd.grad(torch.digamma(tx).sum(), tx)
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-8)
    np.testing.assert_allclose(g.numpy(), sp.polygamma(1, a), rtol=1e-14)


def test_digamma_float32_matches_float64():
    a = np.linspace(-3.7, 9.9, 51)
    a = a[np.abs(a - np.round(a)) > 0.05]
    got = tp.digamma(tp.tensor(a, dtype=tp.float32)).numpy()
    np.testing.assert_allclose(got, sp.digamma(a.astype(np.float32).astype(np.float64)),
                               rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- strong zero
@pytest.mark.parametrize("name", [n for n in U.__all__ + S.__all__ if n.endswith("_backward")
                                  and n not in ("polygamma_backward", "logit_backward")])
def test_fused_kernels_are_strong_zero(name):
    fn = getattr(U, name, None) or getattr(S, name)
    b = _t([math.inf, -math.inf, math.nan, 0.0, 1.0, -1.0])
    out = fn(_t(np.zeros(6)), b).numpy()
    assert (out == 0).all(), out


def test_strong_zero_through_where():
    # the gradient of the unselected branch cannot become nan
    x = _t([0.0, 2.0], grad=True)
    y = tp.where(x > 1, tp.digamma(x), x)
    (g,) = tp.autograd.grad(y.sum(), x)
    np.testing.assert_allclose(g.numpy(), [1.0, sp.polygamma(1, 2.0)])
    y = tp.where(x > 1, tp.rsqrt(x), x)
    (g,) = tp.autograd.grad(y.sum(), x)
    assert np.isfinite(g.numpy()).all()


# ---------------------------------------------------------------- kernels: layouts, threads
@pytest.mark.parametrize("name", ["sin", "erf", "lgamma", "digamma", "floor", "logit",
                                  "erfinv"])
def test_threads_and_layouts_agree(name):
    rng = np.random.default_rng(0)
    a = rng.uniform(0.05, 0.95, (300, 400))
    fn = getattr(tp, name)
    ref = fn(tp.from_numpy(a.copy())).numpy()
    old = tp.get_num_threads()
    try:
        # contiguous loops run libmvec's SIMD functions, strided ones scalar libm:
        # the same values to an ulp or two; thread counts agree exactly
        close = dict(rtol=1e-15, atol=1e-300)
        for n in (1, 2):
            tp.set_num_threads(n)
            np.testing.assert_array_equal(fn(tp.from_numpy(a)).numpy(), ref)
            np.testing.assert_allclose(fn(tp.from_numpy(a.T)).numpy(), ref.T, **close)
            np.testing.assert_allclose(fn(tp.from_numpy(a[::2, ::-3])).numpy(),
                                       ref[::2, ::-3], **close)
            g = tp.from_numpy(rng.standard_normal((300, 400))[:, ::2])
            bname = "polygamma_backward" if name == "digamma" else f"{name}_backward"
            bfn = getattr(U, bname, None) or getattr(S, bname, None)
            if bfn is not None:
                args = (1,) if bname == "polygamma_backward" else ()
                np.testing.assert_allclose(bfn(g, tp.from_numpy(a[:, ::2]), *args).numpy(),
                                           bfn(g.contiguous(), tp.from_numpy(a[:, ::2].copy()),
                                               *args).numpy(), **close)
    finally:
        tp.set_num_threads(old)


def test_float32_kernels_vectorised_accuracy():
    # libmvec float32 loops (4 ulp at most) against float64 numpy/scipy
    rng = np.random.default_rng(1)
    a = rng.uniform(-3, 3, 100_000).astype(np.float32)
    for name, ref in (("sin", np.sin), ("cos", np.cos), ("atan", np.arctan),
                      ("expm1", np.expm1), ("erf", sp.erf), ("sinh", np.sinh)):
        got = getattr(tp, name)(tp.from_numpy(a)).numpy()
        np.testing.assert_allclose(got, ref(a.astype(np.float64)), rtol=1e-6, atol=1e-7,
                                   err_msg=name)


# ---------------------------------------------------------------- registration
def test_methods_inplace_and_operator_are_declared():
    x = _t([0.25, 0.5])
    for name in U.METHODS + S.METHODS:
        assert getattr(x, name).__name__ == name
        assert name in tp._ops.INPLACE
    assert tp._ops.OPERATORS["__abs__"] is tp.abs
    assert x.round(decimals=1).tolist() == [0.2, 0.5]
    assert x.logit(0.3).tolist() == tp.logit(x, 0.3).tolist()


def test_errors_name_the_op():
    with pytest.raises(TypeError, match=r"sin\(\).*'input'"):
        tp.sin([1.0])
    with pytest.raises(NotImplementedError, match=r"sin_backward\(\).*'grad_output'"):
        U.sin_backward(tp.tensor([1]), tp.tensor([1]))
    with pytest.raises(RuntimeError, match="sin_backward"):
        U.sin_backward(tp.ones(2), tp.ones(3))
