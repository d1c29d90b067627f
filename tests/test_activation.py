"""Edge cases of the activations and clamp that the op table cannot express:
kinks (the minimum-norm convention, with PyTorch's differing values noted),
ties of clamp with tensor bounds, +-1000 stability, nan and inf, integer dtypes,
empty and 0-d tensors, errors, inplace=, names, and thread agreement.

References are closed forms in numpy/scipy (never tensorplay)."""
import inspect

import numpy as np
import pytest
from scipy.special import expit, ndtr

import tensorplay as tp
from tensorplay._ops.activation import SELU_ALPHA, SELU_SCALE
from tensorplay.autograd import forward_ad as fwAD

F = tp.nn.functional
F64 = tp.float64


def _t(values, dtype=F64, grad=False):
    t = tp.tensor(values, dtype=dtype)
    return t.requires_grad_() if grad else t


def _grad(f, x):
    """d sum(f(x)) / dx in reverse mode, and the same from forward mode (ones tangent)."""
    xs = tp.from_numpy(x).requires_grad_()
    g, = tp.autograd.grad(f(xs).sum(), xs)
    with fwAD.dual_level():
        d = fwAD.make_dual(tp.from_numpy(x), tp.from_numpy(np.ones_like(x)))
        tangent = fwAD.unpack_dual(f(d)).tangent
    return g.numpy(), tangent.numpy()


def _check_grad(f, x, want):
    rev, fwd = _grad(f, np.asarray(x, np.float64))
    np.testing.assert_allclose(rev, want, rtol=1e-12, atol=0)
    np.testing.assert_allclose(fwd, want, rtol=1e-12, atol=0)


# ---------------------------------------------------------------- kinks
def test_leaky_relu_kink_is_the_minimum_norm_subgradient():
    x = [-1.0, 0.0, 1.0]
    _check_grad(lambda t: F.leaky_relu(t, 0.01), x, [0.01, 0.01, 1.0])   # PyTorch: same
    # slope > 1 (concave kink, supergradients [1, 1.5]): 1.  PyTorch gives 1.5.
    _check_grad(lambda t: F.leaky_relu(t, 1.5), x, [1.5, 1.0, 1.0])
    # slope < 0 (convex, subgradients [-0.5, 1] contain 0): 0.  PyTorch gives -0.5.
    _check_grad(lambda t: F.leaky_relu(t, -0.5), x, [-0.5, 0.0, 1.0])


def test_elu_family_kinks():
    x = [0.0]
    _check_grad(lambda t: F.elu(t), x, [1.0])                  # smooth for alpha = 1
    _check_grad(lambda t: F.elu(t, alpha=0.5), x, [0.5])       # PyTorch: 0.5 too
    _check_grad(lambda t: F.elu(t, alpha=2.0), x, [1.0])       # PyTorch: 2 (left slope)
    # selu: slopes scale*alpha (left) and scale (right), concave: scale.
    # PyTorch gives scale * alpha = 1.7581 at 0.
    _check_grad(tp.selu, x, [SELU_SCALE])
    _check_grad(lambda t: tp.celu(t, 3.0), x, [1.0])           # smooth


def test_hard_activation_kinks():
    _check_grad(F.hardsigmoid, [-3.0, 0.0, 3.0], [0.0, 1 / 6, 0.0])   # PyTorch: same
    # hardswish: concave kinks; slopes (0, -1/2) at -3 and (3/2, 1) at 3.
    # PyTorch gives -0.5 and 1.5 there.
    _check_grad(F.hardswish, [-3.0, 0.0, 3.0], [0.0, 0.5, 1.0])
    _check_grad(F.relu6, [0.0, 3.0, 6.0], [0.0, 1.0, 0.0])           # PyTorch: same
    _check_grad(F.hardtanh, [-1.0, 0.0, 1.0], [0.0, 1.0, 0.0])       # PyTorch: same


def test_clamp_number_bounds_give_zero_at_the_bounds():
    # minimum-norm subgradient (as relu at 0); PyTorch's clamp gives 1 at the bounds
    _check_grad(lambda t: tp.clamp(t, -1.0, 1.0), [-2.0, -1.0, 0.0, 1.0, 2.0],
                [0.0, 0.0, 1.0, 0.0, 0.0])
    _check_grad(lambda t: tp.clamp(t, min=0.0), [-1.0, 0.0, 1.0], [0.0, 0.0, 1.0])
    _check_grad(lambda t: tp.clamp(t, max=0.0), [-1.0, 0.0, 1.0], [1.0, 0.0, 0.0])
    # min > max: the output is max, the input gets nothing
    _check_grad(lambda t: tp.clamp(t, 2.0, 1.0), [0.0, 1.5, 3.0], [0.0, 0.0, 0.0])


def test_clamp_tensor_bounds_split_ties_evenly():
    x = _t([0.0, 1.0, 0.5, -1.0, 3.0, 2.0, 1.0], grad=True)
    lo = _t([0.0, 0.0, 0.0, 0.0, 2.0, 2.0, 1.0], grad=True)
    hi = _t([1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 1.0], grad=True)
    # cases: tie x=lo; tie x=hi; inside; below; lo>hi; lo>hi... (x=lo=hi=2? no: lo=hi=2,
    # x=2: three-way); x=lo=hi=1: three-way
    y = tp.clamp(x, lo, hi)
    np.testing.assert_array_equal(y.detach().numpy(), [0, 1, 0.5, 0, 1, 2, 1])
    gx, glo, ghi = tp.autograd.grad(y.sum(), (x, lo, hi))
    np.testing.assert_allclose(gx.numpy(), [0.5, 0.5, 1, 0, 0, 1 / 3, 1 / 3])
    np.testing.assert_allclose(glo.numpy(), [0.5, 0, 0, 1, 0, 1 / 3, 1 / 3])
    np.testing.assert_allclose(ghi.numpy(), [0, 0.5, 0, 0, 1, 1 / 3, 1 / 3])
    # the shares add up to 1 everywhere (the output's gradient is not lost)
    np.testing.assert_allclose((gx + glo + ghi).numpy(), np.ones(7))
    # PyTorch gives x everything at a tie: x >= min & x <= max


def test_clamp_tie_with_a_number_bound_gives_zero():
    x = _t([0.0, 1.0], grad=True)
    lo = _t([0.0, 1.0], grad=True)
    y = tp.clamp(x, lo, 1.0)            # x = lo (tensor) tie, then x = lo = 1.0 (number)
    gx, glo = tp.autograd.grad(y.sum(), (x, lo))
    np.testing.assert_allclose(gx.numpy(), [0.5, 0.0])
    np.testing.assert_allclose(glo.numpy(), [0.5, 0.0])


def test_clamp_gradients_to_broadcast_bounds_have_their_shapes():
    x = _t(np.linspace(-2, 2, 12).reshape(3, 4), grad=True)
    lo = _t([-1.0, -0.5, 0.25, 3.0], grad=True)
    hi = _t([[1.0], [2.5], [0.9]], grad=True)
    y = tp.clamp(x, lo, hi)
    gx, glo, ghi = tp.autograd.grad(y.sum(), (x, lo, hi))
    xv, lv, hv = x.detach().numpy(), lo.detach().numpy(), hi.detach().numpy()
    piece = np.where(lv > hv, 2, np.where(xv < lv, 1, np.where(xv > hv, 2, 0)))
    np.testing.assert_array_equal(gx.numpy(), piece == 0)
    np.testing.assert_array_equal(glo.numpy(), (piece == 1).sum(0))
    np.testing.assert_array_equal(ghi.numpy(), (piece == 2).sum(1, keepdims=True))
    assert glo.shape == lo.shape and ghi.shape == hi.shape


# ---------------------------------------------------------------- stability
BIG = np.array([-1000.0, -100.0, -30.0, 30.0, 100.0, 1000.0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("beta", [0.01, 0.5, 1.0, 3.0, 50.0])
@pytest.mark.parametrize("threshold", [20.0, 1e30])
def test_softplus_stable_at_1000(dtype, beta, threshold):
    x = tp.from_numpy(BIG.astype(dtype)).requires_grad_()
    y = F.softplus(x, beta, threshold)
    bx = beta * BIG
    want = np.where(bx > threshold, BIG, (np.maximum(bx, 0) + np.log1p(np.exp(-np.abs(bx))))
                    / beta)
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-6, atol=1e-30)
    g, = tp.autograd.grad(y.sum(), x)
    np.testing.assert_allclose(g.numpy(), np.where(bx > threshold, 1.0, expit(bx)),
                               rtol=1e-6, atol=1e-30)
    assert np.all(np.isfinite(g.numpy()))


def _mish_d(x):
    t = np.tanh(np.logaddexp(0, x))
    return t + x * expit(x) * (1 - t * t)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logsigmoid_silu_mish_gelu_stable_at_1000(dtype):
    x = tp.from_numpy(BIG.astype(dtype)).requires_grad_()
    cases = {
        F.logsigmoid: (np.minimum(BIG, 0) - np.log1p(np.exp(-np.abs(BIG))), expit(-BIG)),
        F.silu: (BIG * expit(BIG), expit(BIG) * (1 + BIG * (1 - expit(BIG)))),
        F.mish: (BIG * np.tanh(np.logaddexp(0, BIG)), _mish_d(BIG)),
        F.gelu: (BIG * ndtr(BIG), ndtr(BIG) + BIG * np.exp(-BIG * BIG / 2) / np.sqrt(2 * np.pi)),
        (lambda t: F.gelu(t, approximate="tanh")): (np.where(BIG > 0, BIG, 0.0),
                                                    np.where(BIG > 0, 1.0, 0.0)),
        F.elu: (np.where(BIG > 0, BIG, np.expm1(np.minimum(BIG, 0))),
                np.where(BIG > 0, 1.0, np.exp(np.minimum(BIG, 0)))),
    }
    for f, (want, dwant) in cases.items():
        y = f(x)
        np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-6, atol=1e-30)
        g, = tp.autograd.grad(y.sum(), x)
        np.testing.assert_allclose(g.numpy(), dwant, rtol=1e-5, atol=1e-37)


def test_gelu_has_no_cancellation_for_negative_inputs():
    x = np.array([-10.0, -8.0, -5.0])
    y = F.gelu(tp.from_numpy(x)).numpy()
    np.testing.assert_allclose(y, x * ndtr(x), rtol=1e-13)
    y32 = F.gelu(tp.from_numpy(x.astype(np.float32))).numpy()
    np.testing.assert_allclose(y32, x * ndtr(x), rtol=1e-5)


# ---------------------------------------------------------------- nan and inf
def test_clamp_propagates_nan_from_input_and_bounds():
    nan = np.nan
    y = tp.clamp(_t([nan, 0.5, 2.0]), 0.0, 1.0).numpy()
    np.testing.assert_array_equal(y, [nan, 0.5, 1.0])
    y = tp.clamp(_t([1.0, 2.0, 3.0]), min=_t([nan, 1.0, 1.0])).numpy()
    np.testing.assert_array_equal(y, [nan, 2.0, 3.0])                 # PyTorch: same
    np.testing.assert_array_equal(tp.clamp(_t([1.0]), min=nan).numpy(), [nan])
    np.testing.assert_array_equal(tp.clamp(_t([-np.inf, np.inf]), -1.0, 1.0).numpy(),
                                  [-1.0, 1.0])


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_nan_to_num_defaults_and_values(dtype):
    info = np.finfo(np.float32 if dtype is tp.float32 else np.float64)
    x = tp.tensor([np.nan, np.inf, -np.inf, 1.5], dtype=dtype)
    np.testing.assert_array_equal(tp.nan_to_num(x).numpy(), [0, info.max, info.min, 1.5])
    np.testing.assert_array_equal(x.nan_to_num(1.0, 2.0, -3.0).numpy(), [1, 2, -3, 1.5])
    np.testing.assert_array_equal(tp.nan_to_num(x, posinf=7.0).numpy(),
                                  [0, 7, info.min, 1.5])
    xg = x.clone().requires_grad_()
    g, = tp.autograd.grad(tp.nan_to_num(xg).sum(), xg)
    np.testing.assert_array_equal(g.numpy(), [0, 0, 0, 1])


def test_nan_to_num_integer_and_bool_are_copies():
    for x in (tp.tensor([1, 2]), tp.tensor([True, False])):
        y = tp.nan_to_num(x)
        assert y.dtype is x.dtype
        np.testing.assert_array_equal(y.numpy(), x.numpy())
        assert not np.shares_memory(y.numpy(), x.numpy())


@pytest.mark.parametrize("name", ["softplus", "silu", "gelu", "leaky_relu", "elu",
                                  "hardsigmoid", "hardswish", "mish", "logsigmoid",
                                  "nan_to_num"])
def test_backward_kernels_are_strong_zero(name):
    import importlib
    activation = importlib.import_module("tensorplay._ops.activation")
    clamp = importlib.import_module("tensorplay._ops.clamp")
    fn = getattr(activation, name + "_backward", None) or getattr(clamp, name + "_backward")
    x = _t([np.nan, np.inf, -np.inf, 0.0, 1.0])
    out = fn(_t([0.0] * 5), x).numpy()
    np.testing.assert_array_equal(out, np.zeros(5))


def test_clamp_backward_is_strong_zero():
    from tensorplay._ops.clamp import clamp_backward
    out = clamp_backward(_t([0.0, 0.0]), _t([np.nan, 1.0]), _t(0.0), _t(np.inf), 0, 1, 0)
    np.testing.assert_array_equal(out.numpy(), [0.0, 0.0])


# ---------------------------------------------------------------- integer dtypes
def test_clamp_integer_and_bool_dtypes():
    x = tp.tensor([1, 2, 3])
    y = tp.clamp(x, 2)
    assert y.dtype is tp.int64 and y.tolist() == [2, 2, 3]
    y = tp.clamp(x, min=1.5)                                  # PyTorch promotes
    assert y.dtype is tp.get_default_dtype() and y.tolist() == [1.5, 2.0, 3.0]
    y = tp.clamp(x, max=tp.tensor(1.5))
    assert y.dtype.is_floating_point and y.tolist() == [1.0, 1.5, 1.5]
    b = tp.tensor([True, False])
    assert tp.clamp(b, min=tp.tensor([True, False])).tolist() == [True, False]
    assert tp.clamp(b, min=0).dtype is tp.int64
    assert tp.clamp(tp.tensor([5, -5]), 1, 0).tolist() == [0, 0]      # min > max: max
    # float32 input, float64 0-d bound: float32 (a 0-d tensor does not upcast)
    assert tp.clamp(tp.ones(2), min=_t(1.0)).dtype is tp.float32


def test_relu6_and_hardtanh_keep_integer_dtypes():
    x = tp.tensor([-3, 1, 7])
    assert F.relu6(x).dtype is tp.int64 and F.relu6(x).tolist() == [0, 1, 6]
    assert F.hardtanh(x).tolist() == [-1, 1, 1]


@pytest.mark.parametrize("f", [F.softplus, F.silu, F.gelu, F.leaky_relu, F.elu, F.selu,
                               F.celu, F.hardsigmoid, F.hardswish, F.mish, F.logsigmoid])
def test_float_only_activations_refuse_integers(f):
    with pytest.raises(NotImplementedError):          # PyTorch: not implemented for 'Long'
        f(tp.tensor([1, 2]))


# ---------------------------------------------------------------- shapes
@pytest.mark.parametrize("f", [F.softplus, F.silu, F.gelu, F.leaky_relu, F.elu, F.selu,
                               F.celu, F.hardsigmoid, F.hardswish, F.mish, F.logsigmoid,
                               F.relu6, F.hardtanh, tp.nan_to_num,
                               lambda t: tp.clamp(t, -0.5, 0.5),
                               lambda t: tp.clamp(t, t * 0 - 0.5, None)])
def test_empty_and_0d(f):
    for shape in [(0,), (2, 0), ()]:
        x = tp.zeros(shape, dtype=F64).requires_grad_()
        y = f(x)
        assert y.shape == x.shape
        g, = tp.autograd.grad(y.sum(), x)
        assert g.shape == x.shape and g.dtype is F64


def test_threads_agree_on_large_strided_inputs():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((300, 800)).astype(np.float32)
    fs = [F.gelu, F.softplus, F.mish, F.hardswish, lambda t: tp.clamp(t, -0.5, 0.5),
          lambda t: F.elu(t, 0.5)]
    old = tp.get_num_threads()
    try:
        for x in (tp.from_numpy(base), tp.from_numpy(base).T, tp.from_numpy(base)[:, ::2]):
            results = []
            for n in (1, 2):
                tp.set_num_threads(n)
                xg = x.detach().requires_grad_()
                outs = []
                for f in fs:
                    y = f(xg)
                    g, = tp.autograd.grad(y.sum(), xg)
                    outs.append((y.detach().numpy().copy(), g.numpy().copy()))
                results.append(outs)
            for (y1, g1), (y2, g2) in zip(*results):
                np.testing.assert_array_equal(y1, y2)
                np.testing.assert_array_equal(g1, g2)
    finally:
        tp.set_num_threads(old)


def test_float32_accuracy_over_a_wide_range():
    x = np.linspace(-12, 12, 20001)
    x32 = x.astype(np.float32)
    refs = {F.gelu: x32 * ndtr(x32.astype(np.float64)),
            F.silu: x32 * expit(x32.astype(np.float64)),
            F.logsigmoid: -np.logaddexp(0, -x32.astype(np.float64)),
            F.softplus: np.logaddexp(0, x32.astype(np.float64)),
            F.mish: x32 * np.tanh(np.logaddexp(0, x32.astype(np.float64)))}
    for f, want in refs.items():
        got = f(tp.from_numpy(x32)).numpy().astype(np.float64)
        err = np.abs(got - want) / np.maximum(np.abs(want), 1e-30)
        # (gelu: float32 rounding of x / sqrt2 costs 2 z^2 eps relative, z = 8.5 at -12)
        assert np.max(err[np.abs(want) > 1e-30]) < 1.5e-5, f


# ---------------------------------------------------------------- errors
def test_errors():
    x = tp.ones(3)
    with pytest.raises(RuntimeError, match="at least one of 'min' or 'max'"):
        tp.clamp(x)
    with pytest.raises(TypeError, match="min"):
        tp.clamp(x, min="a")
    with pytest.raises(TypeError, match="max"):
        tp.clamp(x, max=[1.0])
    with pytest.raises(TypeError):
        tp.clamp([1.0, 2.0], 0.0)
    with pytest.raises(RuntimeError):
        tp.clamp(tp.ones(2, 3), min=tp.ones(4))
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(x, 2.0, 1.0)
    with pytest.raises(RuntimeError, match="alpha cannot be 0"):
        tp.celu(x, 0.0)
    with pytest.raises(RuntimeError, match="approximate"):
        F.gelu(x, approximate="foo")
    with pytest.raises(TypeError, match="approximate"):
        F.gelu(x, approximate=None)
    with pytest.raises(TypeError, match="beta"):
        F.softplus(x, beta="a")
    with pytest.raises(TypeError, match="negative_slope"):
        F.leaky_relu(x, "a")
    with pytest.raises(TypeError, match="nan"):
        tp.nan_to_num(x, nan="a")
    with pytest.raises(TypeError, match="inplace"):
        F.elu(x, inplace="yes")
    with pytest.raises(RuntimeError):
        F.relu6(tp.tensor([True]))


def test_inplace_without_an_in_place_form_says_so():
    x = tp.ones(3)
    for call in (lambda: F.leaky_relu(x, inplace=True), lambda: F.mish(x, inplace=True),
                 lambda: F.selu(x, inplace=True)):
        try:
            y = call()
        except NotImplementedError as e:
            assert "inplace=True" in str(e) and "no in-place" in str(e)
        else:                         # the in-place forms exist (another family's work)
            assert y is x or np.shares_memory(y.numpy(), x.numpy())


def test_hardtanh_inplace_goes_through_clamp_when_it_exists():
    x = tp.tensor([-2.0, 0.5, 2.0])
    if not hasattr(tp.Tensor, "clamp_"):
        with pytest.raises(NotImplementedError, match="clamp_"):
            F.hardtanh(x, inplace=True)
        return
    F.hardtanh(x, inplace=True)
    assert x.tolist() == [-1.0, 0.5, 1.0]


# ---------------------------------------------------------------- names
def test_names_follow_pytorch():
    torch = pytest.importorskip("torch")
    for name in ("clamp", "clip", "clamp_min", "clamp_max", "nan_to_num", "selu", "celu"):
        assert hasattr(torch, name) and hasattr(tp, name)
    for name in ("softplus", "gelu", "silu", "mish", "hardswish", "logsigmoid"):
        assert not hasattr(torch, name)      # nn.functional only, in both
        assert not hasattr(tp, name) and hasattr(F, name)
    for name in ("clamp", "clip", "clamp_min", "clamp_max", "nan_to_num"):
        assert hasattr(tp.Tensor, name)
    for name in ("silu", "leaky_relu", "elu", "selu", "celu", "relu6", "hardtanh",
                 "hardsigmoid", "hardswish", "mish", "relu"):
        ours = inspect.signature(getattr(F, name)).parameters
        theirs = inspect.signature(getattr(torch.nn.functional, name)).parameters
        assert list(ours) == list(theirs), name
        for p in ours:
            assert ours[p].default == theirs[p].default, (name, p)


def test_nn_functional_matches_torch_on_defaults():
    torch = pytest.importorskip("torch")
    x = np.linspace(-4, 4, 17)
    for name in ("softplus", "silu", "gelu", "leaky_relu", "elu", "selu", "celu", "relu6",
                 "hardtanh", "hardsigmoid", "hardswish", "mish", "logsigmoid"):
        ours = getattr(F, name)(tp.from_numpy(x)).numpy()
        theirs = getattr(torch.nn.functional, name)(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15, err_msg=name)
