"""Numerical robustness beyond the op table's well-scaled samples."""
import numpy as np
import pytest

import tensorplay as tp


@pytest.mark.parametrize("dtype,shift", [(np.float32, 1e4), (np.float32, 1e6),
                                         (np.float64, 1e12), (np.float64, 1e15)])
@pytest.mark.parametrize("dim", [0, 1])
def test_log_softmax_is_shift_invariant(dtype, shift, dim):
    # log_softmax(x + c) == log_softmax(x); the reference uses the unshifted x
    base = np.array([[0.0, 0.0, -1.0], [0.5, -2.0, 1.0]])
    if dim == 0:
        base = base.T.copy()
    shifted = (base + shift).astype(dtype)
    exact = shifted.astype(np.float64) - shift    # what the shifted input really holds
    ref = exact - np.log(np.sum(np.exp(exact), axis=dim, keepdims=True))
    out = tp.from_numpy(shifted).log_softmax(dim)
    np.testing.assert_allclose(out.numpy(), ref, rtol=0, atol=1e-6 if dtype == np.float32
                               else 1e-12)


def test_cross_entropy_large_logits_matches_small():
    logits = tp.tensor([[0.0, 0.0, -1.0]])
    target = tp.tensor([2])
    small = tp.nn.functional.cross_entropy(logits, target).item()
    large = tp.nn.functional.cross_entropy(logits + 1e6, target).item()
    assert small == pytest.approx(1.0 + np.log(2 + np.exp(-1.0)), rel=1e-6)
    assert large == pytest.approx(small, rel=1e-6)


def test_sigmoid_saturates_without_overflow():
    x = tp.tensor([-1000.0, -50.0, 0.0, 50.0, 1000.0], dtype=tp.float64)
    y = tp.sigmoid(x).numpy()
    assert np.all(np.isfinite(y))
    np.testing.assert_allclose(y, [0.0, np.exp(-50.0), 0.5, 1.0, 1.0], rtol=1e-12, atol=0)


def test_pow_derivatives_at_base_zero_follow_pytorch():
    # d(x^0)/dx = 0 (not 0 * 0^-1 = nan); d(0^e)/de = 0 for e >= 0 (not 0 * log 0)
    x = tp.tensor([0.0, 1.0, 2.0], dtype=tp.float64, requires_grad=True)
    (g,) = tp.autograd.grad((x ** 0).sum(), x)
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.0, 0.0])
    e = tp.tensor([0.0, 2.0, 0.5], dtype=tp.float64, requires_grad=True)
    base = tp.tensor([0.0, 0.0, 3.0], dtype=tp.float64)
    (ge,) = tp.autograd.grad((base ** e).sum(), e)
    np.testing.assert_allclose(ge.numpy(), [0.0, 0.0, 3.0 ** 0.5 * np.log(3.0)], rtol=1e-15)
    _, jv = tp.autograd.functional.jvp(lambda e: base ** e, e.detach(), tp.ones(3, dtype=tp.float64),
                                       mode="forward")
    np.testing.assert_allclose(jv.numpy(), ge.numpy(), rtol=1e-15)
