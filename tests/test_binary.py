"""Edge cases of the binary/ternary math, comparison, logical and bitwise ops that the
op table cannot express: ties, nan and inf, signed zeros, zero divisors, integer
dtypes, promotion, errors, threads.  References are numpy, Python's own operators
or closed forms; PyTorch (when installed) is a second reference for conventions.
"""
import itertools
import math

import numpy as np
import pytest

import tensorplay as tp
from tensorplay._ops import binary as B

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
NAN, INF = float("nan"), float("inf")
SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 7.0, -7.0, INF, -INF, NAN, 1e-30, 3e38]


def t(x, dtype=None, grad=False):
    out = tp.tensor(x, dtype=dtype)
    return out.requires_grad_() if grad else out


def grads(fn, *xs):
    xs = [t(x, tp.float64, grad=True) for x in xs]
    out = fn(*xs)
    return [g.numpy() for g in tp.autograd.grad(out.sum(), xs)]


def _pairs(values=SPECIAL):
    a, b = zip(*itertools.product(values, values))
    return np.array(a), np.array(b)


# ---------------------------------------------------------------- maximum / minimum / fmax / fmin
def test_maximum_minimum_ties_split_the_gradient():
    ga, gb = grads(tp.maximum, [1.0, 2.0, 3.0], [1.0, 5.0, 0.0])
    np.testing.assert_array_equal(ga, [0.5, 0.0, 1.0])
    np.testing.assert_array_equal(gb, [0.5, 1.0, 0.0])
    ga, gb = grads(tp.minimum, [1.0, 2.0, 3.0], [1.0, 5.0, 0.0])
    np.testing.assert_array_equal(ga, [0.5, 1.0, 0.0])
    np.testing.assert_array_equal(gb, [0.5, 0.0, 1.0])


def test_maximum_broadcast_tie_gradient_sums():
    ga, gb = grads(tp.maximum, [[1.0, 1.0, 1.0]], [1.0])
    np.testing.assert_array_equal(ga, [[0.5, 0.5, 0.5]])
    np.testing.assert_array_equal(gb, [1.5])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin"])
def test_selection_ops_special_values_match_numpy(name, dtype):
    a, b = _pairs()
    a, b = a.astype(dtype), b.astype(dtype)
    with np.errstate(over="ignore"):
        want = getattr(np, name)(a, b)
    got = getattr(tp, name)(tp.from_numpy(a), tp.from_numpy(b)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok])


def test_maximum_nan_gradient_goes_to_both_as_pytorch():
    ga, gb = grads(tp.maximum, [NAN, 1.0], [1.0, NAN])
    np.testing.assert_array_equal(ga, [1.0, 1.0])
    np.testing.assert_array_equal(gb, [1.0, 1.0])


def test_fmax_gradient_goes_to_the_number_and_ties_split():
    ga, gb = grads(tp.fmax, [NAN, 1.0, NAN, 2.0, 3.0], [1.0, NAN, NAN, 2.0, 0.0])
    np.testing.assert_array_equal(ga, [0.0, 1.0, 0.5, 0.5, 1.0])
    np.testing.assert_array_equal(gb, [1.0, 0.0, 0.5, 0.5, 0.0])
    ga, gb = grads(tp.fmin, [NAN, 1.0, 3.0], [1.0, 1.0, 0.0])
    np.testing.assert_array_equal(ga, [0.0, 0.5, 0.0])
    np.testing.assert_array_equal(gb, [1.0, 0.5, 1.0])


@needs_torch
def test_fmax_tie_departs_from_pytorch():
    # PyTorch gives a tie of fmax entirely to input; tensorplay splits it evenly,
    # as for maximum (the convention for ties).
    a = torch.tensor([2.0], requires_grad=True)
    b = torch.tensor([2.0], requires_grad=True)
    torch.fmax(a, b).backward()
    assert (a.grad.item(), b.grad.item()) == (1.0, 0.0)
    assert [g.item() for g in grads(tp.fmax, [2.0], [2.0])] == [0.5, 0.5]


def test_selection_dtypes_and_scalars():
    assert tp.maximum(t([1, 2]), t([3], tp.int32)).dtype is tp.int64
    assert tp.maximum(t([1, 2]), 1.5).dtype is tp.float32          # int tensor, float scalar
    assert tp.maximum(t([True, False]), t([False, False])).dtype is tp.bool
    assert tp.maximum(t([1.0], tp.float32), t(2.0, tp.float64)).dtype is tp.float32
    assert tp.minimum(2, t([1.0, 3.0])).tolist() == [1.0, 2.0]
    assert t([1.0, 5.0]).maximum(t([3.0])).tolist() == [3.0, 5.0]


# ---------------------------------------------------------------- atan2, hypot
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,ref", [("atan2", np.arctan2), ("hypot", np.hypot)])
def test_atan2_hypot_special_values(name, ref, dtype):
    a, b = _pairs()
    a, b = a.astype(dtype), b.astype(dtype)
    want = ref(a, b)
    got = getattr(tp, name)(tp.from_numpy(a), tp.from_numpy(b)).numpy()
    np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dtype).eps, atol=0)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_atan2_and_hypot_gradients_at_the_origin_are_zero():
    for fn in (tp.atan2, tp.hypot):
        ga, gb = grads(fn, [0.0, 0.0], [0.0, -0.0])
        np.testing.assert_array_equal(ga, [0.0, 0.0])
        np.testing.assert_array_equal(gb, [0.0, 0.0])


def test_hypot_does_not_overflow_and_takes_floats_only():
    x = t([3e30, 1e-30], tp.float32)
    np.testing.assert_allclose(tp.hypot(x, x).numpy(), np.hypot(x.numpy(), x.numpy()))
    ga, _ = grads(tp.hypot, [3e200], [4e200])
    np.testing.assert_allclose(ga, [0.6])
    with pytest.raises(NotImplementedError, match="hypot"):
        tp.hypot(t([1, 2]), t([3, 4]))
    assert tp.atan2(t([1]), t([1])).dtype is tp.float32              # ints: default float


# ---------------------------------------------------------------- remainder, fmod, floor_divide
INTS = [-7, -3, -1, 0, 1, 3, 7]


@pytest.mark.parametrize("dtype", [tp.int64, tp.int32])
def test_integer_remainder_floor_divide_match_python(dtype):
    a, b = zip(*[(x, y) for x in INTS for y in INTS if y != 0])
    ta, tb = t(list(a), dtype), t(list(b), dtype)
    assert (ta % tb).tolist() == [x % y for x, y in zip(a, b)]
    assert (ta // tb).tolist() == [x // y for x, y in zip(a, b)]
    assert tp.fmod(ta, tb).tolist() == [int(math.fmod(x, y)) for x, y in zip(a, b)]
    assert (ta % tb).dtype is dtype and (7 % ta[:1]).dtype is dtype
    assert (7 % t([5, -5])).tolist() == [2, -3]


@pytest.mark.parametrize("op", [tp.remainder, tp.fmod, tp.floor_divide])
def test_integer_division_by_zero_raises(op):
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        op(t([5, -5]), t([1, 0]))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        op(t([5]), 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_remainder_fmod_floor_divide_special_values(dtype):
    a, b = _pairs()
    a, b = a.astype(dtype), b.astype(dtype)
    ta, tb = tp.from_numpy(a), tp.from_numpy(b)
    with np.errstate(all="ignore"):
        for got, want in ((tp.fmod(ta, tb), np.fmod(a, b)),
                          (tp.floor_divide(ta, tb), np.floor_divide(a, b)),
                          (tp.remainder(ta, tb), np.remainder(a, b))):
            got = got.numpy()
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            ok = ~np.isnan(want)
            np.testing.assert_array_equal(got[ok], want[ok])   # +0.0 == -0.0 here


def test_float_remainder_is_python_modulus_and_signed_zero_as_pytorch():
    vals = [5.0, -5.0, 5.5, -5.5, 0.0]
    for x, y in itertools.product(vals, [3.0, -3.0, 0.5]):
        assert (t([x]) % y).item() == x % y
        assert (t([x]) // y).item() == x // y
    assert math.isnan((t([5.0]) % 0.0).item())
    assert (t([5.0, -5.0]) // 0.0).tolist() == [INF, -INF]
    # remainder(-0.0, 3) keeps -0.0 (PyTorch; numpy and Python give +0.0)
    assert math.copysign(1, tp.remainder(t([-0.0]), 3.0).item()) == -1


def test_remainder_fmod_floor_divide_gradients():
    ga, gb = grads(tp.remainder, [5.0, -5.0, 5.0], [3.0, 3.0, -3.0])
    np.testing.assert_array_equal(ga, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(gb, [-1.0, 2.0, 2.0])        # -floor(a / b)
    ga, gb = grads(tp.fmod, [5.0, -5.0, 5.0], [3.0, 3.0, -3.0])
    np.testing.assert_array_equal(gb, [-1.0, 1.0, 1.0])        # -trunc(a / b)
    ga, gb = grads(tp.floor_divide, [5.0, -5.0], [3.0, 3.0])
    np.testing.assert_array_equal(ga, [0.0, 0.0])
    np.testing.assert_array_equal(gb, [0.0, 0.0])


def test_remainder_rejects_bool():
    with pytest.raises(NotImplementedError, match="remainder"):
        tp.remainder(t([True]), t([True]))
    with pytest.raises(NotImplementedError, match="floor_divide"):
        t([True]) // t([True])


# ---------------------------------------------------------------- copysign, xlogy
def test_copysign_values_and_gradients():
    a = t([1.0, -2.0, 0.0, -0.0, INF])
    assert tp.copysign(a, -0.0).tolist() == [-1.0, -2.0, -0.0, -0.0, -INF]
    ga, gb = grads(tp.copysign, [1.0, -2.0, 0.0, INF, -3.0], [-1.0, -1.0, -1.0, -1.0, 2.0])
    np.testing.assert_array_equal(ga, [-1.0, 1.0, 0.0, -1.0, -1.0])   # PyTorch: nan at inf
    np.testing.assert_array_equal(gb, [0.0] * 5)
    assert tp.copysign(t([1, 2]), t([-1])).dtype is tp.float32


def test_xlogy_zeros_nan_and_gradients():
    x = t([0.0, 0.0, 0.0, 0.0, 2.0, 1.0])
    y = t([0.0, NAN, INF, 3.0, 0.0, -1.0])
    got = tp.xlogy(x, y).numpy()
    np.testing.assert_array_equal(got[[0, 2, 3]], [0.0, 0.0, 0.0])
    assert math.isnan(got[1]) and got[4] == -INF and math.isnan(got[5])
    ga, gb = grads(tp.xlogy, [0.0, 0.0, 2.0], [0.0, 3.0, 4.0])
    # d/dx = log y, at x = 0 too (xlogy(x, 3) = x log 3); 0 at x == y == 0 (PyTorch)
    np.testing.assert_allclose(ga, [0.0, np.log(3.0), np.log(4.0)], rtol=1e-15, atol=0)
    np.testing.assert_array_equal(gb, [0.0, 0.0, 0.5])        # PyTorch: nan at (0, 0)
    assert tp.xlogy(2, t([np.e])).item() == pytest.approx(2.0)
    assert tp.xlogy(t([1]), t([2])).dtype is tp.float32


# ---------------------------------------------------------------- lerp, addcmul, addcdiv
def test_lerp_weights_and_errors():
    a, b = t([1.0, 2.0]), t([3.0, 6.0])
    assert tp.lerp(a, b, 0.5).tolist() == [2.0, 4.0]
    assert tp.lerp(a, b, 1).tolist() == [3.0, 6.0]                     # exact at w = 1
    assert tp.lerp(a, b, t([0.0, 1.0])).tolist() == [1.0, 6.0]
    assert tp.lerp(a, b, t(0.5, tp.float64)).dtype is tp.float32       # 0-d weight
    with pytest.raises(RuntimeError, match="same dtype"):
        tp.lerp(a, b.double(), 0.5)
    with pytest.raises(RuntimeError, match="weight"):
        tp.lerp(a, b, t([0.5, 0.5], tp.float64))
    with pytest.raises(NotImplementedError):
        tp.lerp(t([1]), t([2]), 0.5)
    ga, gb, gw = grads(tp.lerp, [1.0, 2.0], [3.0, 6.0], [0.25, 0.5])
    np.testing.assert_array_equal(ga, [0.75, 0.5])
    np.testing.assert_array_equal(gb, [0.25, 0.5])
    np.testing.assert_array_equal(gw, [2.0, 4.0])


def test_addcmul_addcdiv_values_dtypes_errors():
    a, b, c = t([1.0]), t([2.0]), t([4.0])
    assert tp.addcmul(a, b, c, value=0.5).item() == 5.0
    assert tp.addcdiv(a, b, c, value=2).item() == 2.0
    assert tp.addcmul(t([1]), t([2]), t([3]), value=2).tolist() == [13]
    assert tp.addcdiv(a, b, c.double()).dtype is tp.float64            # promoted
    with pytest.raises(RuntimeError, match="truncated"):
        tp.addcmul(t([1]), t([2]), t([3]), value=2.5)
    with pytest.raises(RuntimeError, match="integer division"):
        tp.addcdiv(a, t([2]), t([3]))
    with pytest.raises(TypeError, match="value"):
        tp.addcmul(a, b, c, value="2")
    with pytest.raises(NotImplementedError):
        tp.addcmul(t([True]), t([True]), t([True]))
    g = grads(lambda x, y, z: tp.addcdiv(x, y, z, value=3.0), [1.0], [2.0], [4.0])
    np.testing.assert_allclose(np.concatenate(g), [1.0, 0.75, -3.0 * 2.0 / 16.0])


# ---------------------------------------------------------------- strong zero of the kernels
@pytest.mark.parametrize("kernel,args", [
    (B.atan2_backward_input, ([0.0, 0.0], [0.0])),
    (B.hypot_backward, ([0.0, 0.0], [0.0])),
    (B.xlogy_backward_input, ([0.0, 0.0], [0.0])),
    (B.xlogy_backward_other, ([1.0, 1.0], [0.0])),
    (B.remainder_backward_other, ([1.0, 1.0], [0.0])),
    (B.fmod_backward_other, ([1.0, 1.0], [0.0])),
    (lambda g, a, b: B.addcdiv_backward_t2(g, a, b, value=2.0), ([1.0, 1.0], [0.0])),
])
def test_derivative_kernels_are_strong_zero(kernel, args):
    out = kernel(t([0.0, 0.0]), t(args[0]), t(args[1])).numpy()
    np.testing.assert_array_equal(out, [0.0, 0.0])


def test_maximum_under_where_has_no_nan_leak():
    x = t([1.0, -1.0], tp.float64, grad=True)
    y = tp.where(x > 0, tp.xlogy(x, x), 0.0)
    (g,) = tp.autograd.grad(y.sum(), [x])
    assert np.isfinite(g.numpy()).all()


# ---------------------------------------------------------------- where
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_where_kernel_broadcast_and_layouts(dtype):
    rng = np.random.default_rng(0)
    c = rng.random((3, 1, 5)) < 0.5
    a = rng.standard_normal((4, 5)).astype(dtype)
    b = rng.standard_normal((3, 4, 1)).astype(dtype)
    want = np.where(c, a, b)
    assert np.array_equal(tp.where(tp.from_numpy(c), tp.from_numpy(a), tp.from_numpy(b))
                          .numpy(), want)
    big = np.asfortranarray(rng.standard_normal((40, 30))).astype(dtype)[::-1, ::2]
    cond = rng.random((40, 15)) < 0.5
    got = tp.where(tp.from_numpy(cond[:, ::1]), tp.from_numpy(big), 2.5).numpy()
    assert np.array_equal(got, np.where(cond, big, dtype(2.5)))
    assert tp.where(t([True]), t([1.0], tp.float32), 2.5).dtype is tp.float32
    assert tp.where(t(True), t(1), t(2)).item() == 1                  # int: numpy's where
    assert tp.where(t([True, False]), t([1]), 2.5).dtype is tp.float32
    empty = tp.where(tp.from_numpy(np.zeros((0, 3), bool)), t([1.0, 2.0, 3.0]), 0.0)
    assert tuple(empty.shape) == (0, 3)
    with pytest.raises(RuntimeError, match="condition"):
        tp.where(t([1]), t([1.0]), 2.0)


@pytest.mark.parametrize("name", ["maximum", "atan2", "remainder", "where"])
def test_threads_agree(name):
    rng = np.random.default_rng(1)
    a = tp.from_numpy(rng.standard_normal((300, 700)))
    b = tp.from_numpy(rng.uniform(0.5, 2.0, (700,)))
    fn = (lambda x, y: tp.where(x > 0, x, y)) if name == "where" else getattr(tp, name)
    old = tp.get_num_threads()
    try:
        tp.set_num_threads(1)
        one = fn(a, b).numpy().copy()
        tp.set_num_threads(2)
        two = fn(a, b).numpy()
    finally:
        tp.set_num_threads(old)
    assert np.array_equal(one, two)


# ---------------------------------------------------------------- comparisons
def test_comparisons_broadcast_mix_dtypes_and_scalars_both_sides():
    i, f, b = t([[1], [2]]), t([1.0, 1.5, 2.0]), t([True, False, True])
    assert (i == f).tolist() == [[True, False, False], [False, False, True]]
    assert (i < f).shape == (2, 3)
    assert (b < 0.5).tolist() == [False, True, False]
    assert (2 < f).tolist() == [False, False, False] and (2 <= f).tolist()[2]
    assert (1.5 == f).tolist() == [False, True, False]
    assert (b == 1).tolist() == [True, False, True]
    assert tp.ge(f, 1.5).tolist() == [False, True, True]
    assert (t([1], tp.int64) == t([1.0], tp.float32)).tolist() == [True]
    with pytest.raises(RuntimeError):
        t([1.0, 2.0]) < t([1.0, 2.0, 3.0])


@needs_torch
def test_comparisons_match_torch_on_mixed_dtypes():
    cases = [([16777217], [16777216.0]), ([1.0], 1.0000000001), ([True, False], [0.5]),
             ([3, -3], 2.5), ([NAN, 1.0], [NAN, 1.0])]
    for x, y in cases:
        for op in ("eq", "ne", "lt", "le", "gt", "ge"):
            tx = torch.tensor(x)
            ty = torch.tensor(y) if isinstance(y, list) else y
            want = getattr(torch, op)(tx, ty).tolist()
            got = getattr(tp, op)(t(x), t(y) if isinstance(y, list) else y).tolist()
            assert got == want, (op, x, y)


# ---------------------------------------------------------------- closeness, equality, tests
def test_isclose_allclose_equal():
    x = t([1.0, NAN, INF, -INF, 1.0])
    y = t([1.0 + 1e-9, NAN, INF, INF, 1.1])
    assert tp.isclose(x, y).tolist() == [True, False, True, False, False]
    assert tp.isclose(x, y, equal_nan=True).tolist()[1]
    assert tp.isclose(x, y, rtol=0.2).tolist()[4]
    assert tp.isclose(t([1, 2]), t([1, 3]), rtol=0.5).tolist() == [True, True]
    assert tp.isclose(t([1.0, 2.0]), t([1.0])).tolist() == [True, False]
    assert tp.allclose(t([1.0]), t([1.0, 1.0])) is True
    assert tp.allclose(x, y) is False
    assert tp.equal(t([1.0]), t([1])) is True
    assert tp.equal(t([1.0]), t([1.0, 1.0])) is False
    assert tp.equal(t([NAN]), t([NAN])) is False
    with pytest.raises(RuntimeError, match="same dtype"):
        tp.isclose(t([1.0]), t([1]))
    with pytest.raises(RuntimeError, match="rtol"):
        tp.isclose(x, y, rtol=-1.0)
    with pytest.raises(TypeError):
        tp.isclose(t([1.0]), 1.0)
    with pytest.raises(TypeError):
        tp.equal(t([1.0]), [1.0])


def test_value_tests():
    x = t([1.0, NAN, INF, -INF, 0.0])
    assert tp.isnan(x).tolist() == [False, True, False, False, False]
    assert x.isinf().tolist() == [False, False, True, True, False]
    assert tp.isfinite(x).tolist() == [True, False, False, False, True]
    assert tp.isposinf(x).tolist() == [False, False, True, False, False]
    assert tp.isneginf(x).tolist() == [False, False, False, True, False]
    assert tp.isreal(x).tolist() == [True] * 5
    assert tp.isnan(t([1, 2])).tolist() == [False, False]
    assert tp.isfinite(t([True])).tolist() == [True]
    assert tp.isinf(t(INF)).shape == ()


# ---------------------------------------------------------------- logical and bitwise
def test_logical_ops():
    a, b = t([1.0, 0.0, NAN, 0.0]), t([2, 0, 0, 5])
    assert tp.logical_and(a, b).tolist() == [True, False, False, False]
    assert tp.logical_or(a, b).tolist() == [True, False, True, True]
    assert tp.logical_xor(a, b).tolist() == [False, False, True, True]
    assert tp.logical_not(a).tolist() == [False, True, False, True]
    assert a.logical_and(b).dtype is tp.bool
    with pytest.raises(TypeError, match="logical_and"):
        tp.logical_and(a, 1)


@pytest.mark.parametrize("dtype", [tp.int64, tp.int32, tp.bool])
def test_bitwise_ops_match_numpy(dtype):
    rng = np.random.default_rng(2)
    x = rng.integers(-50, 50, (3, 4))
    y = rng.integers(-50, 50, (4,))
    a, b = t(x.tolist(), dtype), t(y.tolist(), dtype)
    an, bn = a.numpy(), b.numpy()
    assert np.array_equal((a & b).numpy(), an & bn)
    assert np.array_equal((a | b).numpy(), an | bn)
    assert np.array_equal((a ^ b).numpy(), an ^ bn)
    assert np.array_equal((~a).numpy(), ~an)
    assert (a & b).dtype is dtype


def test_bitwise_scalars_promotion_and_reflected():
    a = t([1, 2, 3])
    assert (3 & a).tolist() == [1, 2, 3] and (a | 4).tolist() == [5, 6, 7]
    assert (1 ^ a).tolist() == [0, 3, 2]
    assert (t([True, False]) & 1).dtype is tp.int64
    assert (t([True]) & True).dtype is tp.bool
    assert (1 << a).tolist() == [2, 4, 8] and (16 >> a).tolist() == [8, 4, 2]
    assert (a << 1).tolist() == [2, 4, 6] and (a >> 1).tolist() == [0, 1, 1]


def test_shifts_out_of_range_as_pytorch():
    # PyTorch: a count < 0 or >= the width gives 0 (left) or the sign fill (right)
    assert tp.bitwise_left_shift(t([1, 2]), t([70, -1])).tolist() == [0, 0]
    assert tp.bitwise_right_shift(t([-8, 8]), t([70, -1])).tolist() == [-1, 0]
    x = t([1], tp.int32)
    assert tp.bitwise_left_shift(x, t([33], tp.int32)).tolist() == [0]
    assert (t([-1]) >> 64).tolist() == [-1]


def test_bitwise_errors():
    f = t([1.0])
    for call in (lambda: f & 1, lambda: 1 | f, lambda: tp.bitwise_xor(f, f),
                 lambda: tp.bitwise_not(f), lambda: f << 1, lambda: tp.bitwise_left_shift(
                     t([True]), t([True]))):
        with pytest.raises(NotImplementedError):
            call()
    with pytest.raises(TypeError, match="invert"):
        ~f


@pytest.mark.xfail(strict=True, reason="_common.binary_checker reports a non-number "
                   "operand of an op without float kinds as a dtype error "
                   "(NotImplementedError); PyTorch raises TypeError")
def test_bitwise_non_number_operand_is_a_type_error():
    with pytest.raises(TypeError):
        tp.bitwise_and(t([1]), "1")


def test_inplace_names_are_declared():
    import tensorplay._ops as ops
    for name in ("remainder", "fmod", "floor_divide", "bitwise_and", "logical_or", "lerp"):
        assert name in ops.INPLACE


# ---------------------------------------------------------------- against PyTorch on edges
@needs_torch
@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin", "atan2", "hypot",
                                  "remainder", "fmod", "floor_divide", "copysign", "xlogy"])
def test_special_values_match_torch(name):
    a, b = _pairs()
    got = getattr(tp, name)(tp.from_numpy(a), tp.from_numpy(b)).numpy()
    want = getattr(torch, name)(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-15, atol=0)
    if name != "floor_divide":      # torch's floor_divide(-0.0, x) signs differ by path
        np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))


def test_div_rounding_modes_match_pytorch():
    a, b = tp.tensor([7, -7, 7, -7]), tp.tensor([2, 2, -2, -2])
    assert tp.div(a, b, rounding_mode="trunc").tolist() == [3, -3, -3, 3]
    assert tp.div(a, b, rounding_mode="floor").tolist() == [3, -4, -4, 3]
    assert tp.div(a, b, rounding_mode="trunc").dtype is tp.int64
    x = tp.tensor([7.0, -7.0, 7.5, -7.5], requires_grad=True)
    np.testing.assert_array_equal(tp.div(x, 2.0, rounding_mode="trunc").detach().numpy(),
                                  np.trunc(x.detach().numpy() / 2))
    np.testing.assert_array_equal(x.div(2.0, rounding_mode="floor").detach().numpy(),
                                  np.floor(x.detach().numpy() / 2))
    (g,) = tp.autograd.grad(tp.div(x, 2.0, rounding_mode="trunc").sum(), [x])
    assert g.tolist() == [0.0] * 4                 # piecewise constant (PyTorch: 0)
    with pytest.raises(ValueError, match="rounding_mode"):
        tp.div(x, 2.0, rounding_mode="round")
