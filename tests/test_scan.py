"""cumsum and cumprod beyond the op table: exact gradients with zeros (against the
closed form d out_j / d x_i = prod_{k <= j, k != i} x_k), higher orders, dtypes,
threads."""
import numpy as np
import pytest

import tensorplay as tp


def _cumprod_jacobian(x):
    """J[j, i] = d cumprod(x)_j / d x_i, by the product formula (no division)."""
    n = len(x)
    J = np.zeros((n, n))
    for j in range(n):
        for i in range(j + 1):
            J[j, i] = np.prod([x[k] for k in range(j + 1) if k != i])
    return J


@pytest.mark.parametrize("x", [[2.0, 0.0, 3.0, 4.0], [0.0, 0.0, 2.0, 5.0],
                               [1.5, -2.0, 0.0, 0.0, 3.0], [0.0], [3.0, 2.0, 0.0]])
def test_cumprod_gradient_is_exact_with_zeros(x):
    x = np.array(x)
    J = _cumprod_jacobian(x)
    rng = np.random.default_rng(0)
    u, t = rng.standard_normal(len(x)), rng.standard_normal(len(x))
    xt = tp.tensor(x, requires_grad=True)
    (g,) = tp.autograd.grad(tp.cumprod(xt, 0), [xt], tp.tensor(u))
    np.testing.assert_allclose(g.numpy(), J.T @ u, rtol=1e-14, atol=1e-14)
    _, jv = tp.autograd.functional.jvp(lambda a: tp.cumprod(a, 0), tp.tensor(x),
                                       tp.tensor(t), mode="forward")
    np.testing.assert_allclose(jv.numpy(), J @ t, rtol=1e-14, atol=1e-14)


def _second(M, a, u, w, create_graph=False):
    x = M.tensor(a, requires_grad=True)
    (g,) = M.autograd.grad(M.cumprod(x, 1), [x], M.tensor(u), create_graph=True)
    (h,) = M.autograd.grad((g * M.tensor(w)).sum(), [x], create_graph=create_graph)
    return x, h


def _zeros_sample():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 6))
    a[0, 2] = a[1, 0] = a[1, 4] = a[2, 5] = 0.0
    return a, rng.standard_normal((3, 6)), rng.standard_normal((3, 6))


def _hessian_vector_ref(x, u, w):
    """h_m = sum_i w_i d/dx_m sum_j u_j prod_{k <= j, k != i} x_k, by brute force."""
    n = len(x)
    h = np.zeros(n)
    for m in range(n):
        for i in range(n):
            if i == m:
                continue
            for j in range(max(i, m), n):
                h[m] += w[i] * u[j] * np.prod([x[k] for k in range(j + 1) if k not in (i, m)])
    return h


def test_cumprod_second_order_with_zeros_matches_the_product_formula():
    # (torch agrees, but its double backward of cumprod with zeros takes ~10 s)
    a, u, w = _zeros_sample()
    h = _second(tp, a, u, w)[1].numpy()
    for r in range(a.shape[0]):
        np.testing.assert_allclose(h[r], _hessian_vector_ref(a[r], u[r], w[r]),
                                   rtol=1e-12, atol=1e-12)


def test_cumprod_third_order_with_zeros_matches_finite_differences():
    a, u, w = _zeros_sample()
    x, h = _second(tp, a, u, w, create_graph=True)
    v = np.random.default_rng(3).standard_normal(a.shape)
    (k,) = tp.autograd.grad((h * h).sum(), [x])
    eps = 1e-6

    def f(b):
        return float(np.sum(_second(tp, b, u, w)[1].numpy() ** 2))
    numeric = (f(a + eps * v) - f(a - eps * v)) / (2 * eps)
    assert abs(float(np.sum(k.numpy() * v)) - numeric) <= 1e-6 * (abs(numeric) + 1)


def test_dtypes_follow_pytorch():
    assert tp.cumsum(tp.tensor([1, 2, 3], dtype=tp.int32), 0).dtype is tp.int64
    assert tp.cumsum(tp.tensor([True, True]), 0).tolist() == [1, 2]
    assert tp.cumprod(tp.tensor([2, 3, 4]), 0).tolist() == [2, 6, 24]
    r = tp.cumsum(tp.tensor([1, 2]), 0, dtype=tp.float32)
    assert r.dtype is tp.float32 and r.tolist() == [1.0, 3.0]
    assert tp.cumsum(tp.ones(2, 3), 1).dtype is tp.float32
    assert tp.cumsum(tp.zeros(0, 3), 0).shape == (0, 3)
    assert tp.cumprod(tp.tensor(2.0), -1).item() == 2.0


def test_errors_name_the_op():
    with pytest.raises(IndexError, match="cumsum"):
        tp.cumsum(tp.ones(2, 3), 2)
    with pytest.raises(TypeError, match="cumprod"):
        tp.cumprod([1.0, 2.0], 0)
    with pytest.raises(TypeError):
        tp.cumsum(tp.ones(3))                  # dim is required, as in PyTorch


@pytest.mark.parametrize("shape,dim", [((1, 400_000), 1), ((400_000, 1), 0), ((3, 200_000), 0),
                                       ((2000, 300), 0), ((300, 2000), 1)])
def test_threads_give_identical_results(shape, dim):
    x = tp.from_numpy(np.random.default_rng(2).uniform(0.9, 1.1, shape))
    old = tp.get_num_threads()
    try:
        tp.set_num_threads(1)
        one = [tp.cumsum(x, dim).numpy(), tp.cumprod(x, dim).numpy()]
        tp.set_num_threads(2)
        two = [tp.cumsum(x, dim).numpy(), tp.cumprod(x, dim).numpy()]
    finally:
        tp.set_num_threads(old)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(one[0], np.cumsum(x.numpy(), axis=dim), rtol=1e-12)


def test_empty_scans_have_empty_gradients():
    # (found by the fresh-user check: the kernels refused the read-only cotangent)
    for shape, dim in (((0,), 0), ((0, 3), 1), ((2, 0), 1)):
        for fn in (tp.cumsum, tp.cumprod):
            x = tp.zeros(*shape, requires_grad=True)
            (g,) = tp.autograd.grad(fn(x, dim).sum(), [x])
            assert g.shape == shape
