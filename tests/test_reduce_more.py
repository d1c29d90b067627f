"""Edge cases of the second group of reductions that the op table cannot express:
indices and ties, zeros in prod, infinities and nan, empty and 0-d inputs, repeated
gather indices, errors.  References are numpy or closed forms (and PyTorch where
installed, for its error types and its conventions)."""
import math

import numpy as np
import pytest

import tensorplay as tp
from tensorplay._kernels import reduce_ext as _kx
from tensorplay._ops import LINALG
from tensorplay._ops.reduce_norm import matrix_norm, vector_norm

try:
    import torch
except ImportError:                          # pragma: no cover
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")


def T(a, grad=False):
    t = tp.from_numpy(np.array(a, dtype=np.float64))
    return t.requires_grad_() if grad else t


def grad(y, x):
    return tp.autograd.grad(y, x)[0]._data


TIES = np.array([[3.0, 1.0, 3.0, 0.0], [2.0, 2.0, -1.0, 2.0], [0.0, 5.0, 5.0, 5.0]])


# ---------------------------------------------------------------- max / min with dim
@pytest.mark.parametrize("fn,npv,npi", [("max", np.max, np.argmax), ("min", np.min, np.argmin)])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_dim_values_and_indices_with_ties(fn, npv, npi, dim, keepdim):
    x = T(TIES)
    r = getattr(tp, fn)(x, dim, keepdim)
    values, indices = r                       # a named tuple: unpacks, and has fields
    assert values is r.values and indices is r.indices and r[1] is indices
    assert type(r).__name__ == fn
    np.testing.assert_array_equal(values._data, npv(TIES, axis=dim, keepdims=keepdim))
    np.testing.assert_array_equal(indices._data, npi(TIES, axis=dim, keepdims=keepdim))
    assert indices.dtype is tp.int64 and not indices.requires_grad


def test_max_dim_gradient_goes_to_the_returned_index():
    x = T(TIES, grad=True)
    g = grad(x.max(1).values.sum(), x)
    want = np.zeros_like(TIES)
    want[np.arange(3), np.argmax(TIES, 1)] = 1         # the first occurrence only
    np.testing.assert_array_equal(g, want)
    g = grad(tp.min(x, 0, keepdim=True)[0].sum(), x)
    want = np.zeros_like(TIES)
    want[np.argmin(TIES, 0), np.arange(4)] = 1
    np.testing.assert_array_equal(g, want)


def test_full_max_min_and_amax_split_ties_evenly():
    x = T(TIES, grad=True)
    g = grad(x.max(), x)
    np.testing.assert_allclose(g, (TIES == 5) / 3.0)
    g = grad(tp.min(x), x)
    np.testing.assert_allclose(g, (TIES == -1) * 1.0)
    g = grad(x.amax(1).sum(), x)
    m = TIES.max(1, keepdims=True)
    np.testing.assert_allclose(g, (TIES == m) / (TIES == m).sum(1, keepdims=True))
    g = grad(x.amin((0, 1)), x)
    np.testing.assert_allclose(g, (TIES == -1) * 1.0)
    # forward mode: the mean of the tangent over the tied entries
    from tensorplay.autograd import forward_ad as fwAD
    t = np.arange(12.0).reshape(3, 4)
    with fwAD.dual_level():
        y = fwAD.make_dual(T(TIES), T(t)).amax(1)
        tan = fwAD.unpack_dual(y).tangent._data
    np.testing.assert_allclose(tan, [(0 + 2) / 2, (4 + 5 + 7) / 3, (9 + 10 + 11) / 3])


def test_nan_propagates_and_argmax_finds_the_first_nan():
    a = np.array([[1.0, np.nan, 3.0, np.nan], [0.0, 2.0, -1.0, 2.0]])
    x = T(a)
    assert np.isnan(x.max().item()) and np.isnan(x.amin().item())
    np.testing.assert_array_equal(x.amax(1)._data, [np.nan, 2.0])
    np.testing.assert_array_equal(x.argmax(1)._data, [1, 1])   # numpy and PyTorch agree
    np.testing.assert_array_equal(x.argmin(1)._data, [1, 2])
    np.testing.assert_array_equal(x.max(1).indices._data, [1, 1])
    # the column path (B > 1) and the row path (B == 1) agree with numpy on nan
    big = np.random.default_rng(0).standard_normal((50, 300))
    big[7, 3] = big[20, 3] = big[9, 200] = np.nan
    for dim in (0, 1):
        np.testing.assert_array_equal(T(big).amax(dim)._data, np.max(big, dim))
        np.testing.assert_array_equal(T(big).argmax(dim)._data, np.argmax(big, dim))
        np.testing.assert_array_equal(T(big).argmin(dim)._data, np.argmin(big, dim))


def test_argmax_argmin_flatten_without_dim():
    x = T(TIES)
    assert x.argmax().item() == np.argmax(TIES) and x.argmax().shape == ()
    assert tp.argmin(x).item() == np.argmin(TIES)
    assert x.argmax(keepdim=True).shape == (1, 1)           # as PyTorch
    assert x.argmax(0, keepdim=True).shape == (1, 4)
    i = tp.from_numpy(np.array([[3, 1], [0, 2]], np.int32))
    assert i.argmax().item() == 0 and i.argmax(1)._data.tolist() == [0, 1]
    assert i.amax().item() == 3 and i.amax().dtype is tp.int32


def test_aminmax_is_a_named_tuple():
    r = tp.aminmax(T(TIES))
    assert (r.min.item(), r.max.item()) == (-1.0, 5.0) and r[0] is r.min
    r = tp.aminmax(T(TIES), dim=1, keepdim=True)
    np.testing.assert_array_equal(r.max._data, TIES.max(1, keepdims=True))
    np.testing.assert_array_equal(r.min._data, TIES.min(1, keepdims=True))


def test_max_with_a_tensor_argument_is_the_elementwise_maximum():
    a, b = T([1.0, 5.0, -2.0]), T([3.0, 0.0, -2.0])
    if getattr(tp, "maximum", None) is None:
        with pytest.raises(NotImplementedError):
            tp.max(a, b)
        return
    np.testing.assert_array_equal(tp.max(a, b)._data, [3.0, 5.0, -2.0])
    np.testing.assert_array_equal(a.min(b)._data, [1.0, 0.0, -2.0])
    np.testing.assert_array_equal(tp.max(a, other=b)._data, [3.0, 5.0, -2.0])


# ---------------------------------------------------------------- empty and 0-d
def test_empty_reductions():
    e = T(np.zeros((0, 3)))
    with pytest.raises(RuntimeError, match="max"):
        e.max()
    with pytest.raises(IndexError, match="dim 0"):
        e.max(0)
    with pytest.raises(IndexError):
        tp.amax(e, 0)
    with pytest.raises(IndexError):
        e.argmax()
    with pytest.raises(RuntimeError):
        tp.aminmax(e)
    assert tp.amax(e, 1).shape == (0,) and e.max(1).indices.shape == (0,)
    np.testing.assert_array_equal(e.prod(0)._data, np.ones(3))   # the empty product
    assert T(np.zeros(0)).prod().item() == 1.0
    np.testing.assert_array_equal(tp.logsumexp(e, 0)._data, [-np.inf] * 3)
    assert tp.all(e).item() is True and tp.any(e).item() is False
    assert tp.count_nonzero(e, 0)._data.tolist() == [0, 0, 0]


def test_zero_dim_inputs_take_dim_0_and_minus_1():
    x = T(2.5, grad=True)
    for d in (0, -1):
        r = x.max(d)
        assert r.values.item() == 2.5 and r.indices.item() == 0 and r.values.shape == ()
        assert x.argmax(d).item() == 0 and x.amax(d).shape == ()
        assert x.prod(d).item() == 2.5
        assert x.logsumexp(d).item() == 2.5
        assert x.var(d, correction=0).item() == 0.0
        assert tp.gather(x, d, tp.tensor(0)).item() == 2.5
    assert grad(x.max(0).values, x) == 1.0
    assert grad(x.amax(), x) == 1.0


# ---------------------------------------------------------------- prod with zeros
def test_prod_gradient_exact_with_zeros():
    x = T([[2.0, 0.0, 3.0, 4.0], [0.0, 5.0, 0.0, 1.0], [1.0, 2.0, 3.0, 4.0]], grad=True)
    g = grad(x.prod(1).sum(), x)
    # one zero: the product of the others there, 0 elsewhere; two zeros: all 0
    np.testing.assert_array_equal(g, [[0, 24, 0, 0], [0, 0, 0, 0], [24, 12, 8, 6]])
    g = grad(x.prod(), x)
    np.testing.assert_array_equal(g, np.zeros((3, 4)))
    y = T([0.0, 3.0, -2.0], grad=True)
    np.testing.assert_array_equal(grad(y.prod(), y), [-6.0, 0.0, 0.0])


def test_prod_second_and_third_order_exact_with_zeros():
    a = np.array([0.0, 3.0, -2.0, 0.5])
    x = T(a, grad=True)
    (g,) = tp.autograd.grad(x.prod(), x, create_graph=True)
    hess = np.stack([tp.autograd.grad(g[i], x, retain_graph=True)[0]._data for i in range(4)])
    want = np.zeros((4, 4))
    for i in range(4):
        for j in range(4):
            if i != j:
                want[i, j] = np.prod(np.delete(a, [i, j]))
    np.testing.assert_allclose(hess, want, rtol=0, atol=1e-15)
    # third order: d^3 prod / dx0 dx1 dx2 = x3
    (h01,) = tp.autograd.grad(g[0], x, create_graph=True)
    (t,) = tp.autograd.grad(h01[1], x)
    np.testing.assert_allclose(t._data, [0.0, 0.0, 0.5, -2.0])


def test_prod_dtypes():
    i = tp.from_numpy(np.array([[2, 3], [4, 5]], np.int32))
    assert i.prod().item() == 120 and i.prod().dtype is tp.int64
    b = tp.from_numpy(np.array([True, False]))
    assert b.prod().item() == 0 and b.prod().dtype is tp.int64
    f = tp.from_numpy(np.full(100, 1.1, np.float32))
    np.testing.assert_allclose(f.prod().item(), 1.1 ** 100, rtol=1e-5)   # double accumulation
    assert tp.prod(i, dtype=tp.float64).dtype is tp.float64


# ---------------------------------------------------------------- var / std
def test_var_std_corrections_and_old_keyword():
    a = np.random.default_rng(1).standard_normal((4, 5))
    x = T(a)
    np.testing.assert_allclose(x.var()._data, np.var(a, ddof=1))
    np.testing.assert_allclose(x.var(1, correction=0)._data, np.var(a, 1))
    np.testing.assert_allclose(x.var(0, unbiased=False)._data, np.var(a, 0))
    np.testing.assert_allclose(tp.var(x, False)._data, np.var(a))         # var(x, unbiased)
    np.testing.assert_allclose(x.std(1, True, True)._data, np.std(a, 1, ddof=1, keepdims=True))
    np.testing.assert_allclose(x.std(correction=2)._data, np.std(a, ddof=2))
    v, m = tp.var_mean(x, 1)
    np.testing.assert_allclose(v._data, np.var(a, 1, ddof=1))
    np.testing.assert_allclose(m._data, np.mean(a, 1))
    s, m = tp.std_mean(x, (0, 1), keepdim=True)
    assert s.shape == (1, 1) and m.shape == (1, 1)
    assert np.isnan(T([1.0]).var().item())                 # N - correction = 0, as PyTorch
    with pytest.raises(RuntimeError):
        x.var(correction=1, unbiased=True)
    with pytest.raises(RuntimeError, match="floating"):
        tp.var(tp.tensor([1, 2, 3]))
    with pytest.raises(TypeError):
        x.var(0, None)


def test_std_gradient_is_finite_for_constant_input():
    # tensorplay: 0 (the minimum-norm subgradient of |x - mean| at 0), in both modes
    # and at second order.  PyTorch 2.13 also gives 0 here (older versions gave nan).
    x = T([2.0, 2.0, 2.0, 2.0], grad=True)
    np.testing.assert_array_equal(grad(x.std(), x), np.zeros(4))
    np.testing.assert_array_equal(grad(tp.std(x, correction=0), x), np.zeros(4))
    np.testing.assert_array_equal(grad(x.var(), x), np.zeros(4))
    from tensorplay.autograd import forward_ad as fwAD
    with fwAD.dual_level():
        y = fwAD.make_dual(T([2.0, 2.0, 2.0]), T([1.0, -2.0, 0.5])).std()
        assert fwAD.unpack_dual(y).tangent.item() == 0.0
    x = T(np.full((2, 3), 1.5), grad=True)
    g = grad(tp.std(x, 1).sum(), x)
    assert np.all(g == 0)


# ---------------------------------------------------------------- logsumexp
def test_logsumexp_stable_and_infinite():
    x = T([[1000.0, 1000.0], [-1000.0, -1000.0], [-np.inf, -np.inf], [np.inf, 1.0],
           [np.inf, -np.inf], [np.nan, 1.0]])
    np.testing.assert_allclose(x.logsumexp(1)._data,
                               [1000 + math.log(2), -1000 + math.log(2), -np.inf, np.inf,
                                np.inf, np.nan])
    f = tp.from_numpy(np.array([88.0, 89.0], np.float32))          # exp overflows float32
    np.testing.assert_allclose(tp.logsumexp(f, 0).item(), 89 + math.log1p(math.exp(-1)),
                               rtol=1e-6)
    y = T([[-np.inf, -np.inf], [1000.0, 1000.0]], grad=True)
    g = grad(y.logsumexp(1).sum(), y)
    # rows of -inf: gradient 0 (PyTorch gives nan there); others: softmax
    np.testing.assert_array_equal(g, [[0.0, 0.0], [0.5, 0.5]])
    assert tp.logsumexp(tp.tensor([1, 2]), 0).dtype is tp.float32   # integer input


@needs_torch
def test_logsumexp_matches_torch_on_finite_input():
    a = np.random.default_rng(2).standard_normal((3, 4, 5)) * 100
    x = T(a, grad=True)
    t = torch.tensor(a, requires_grad=True)
    y, ty = x.logsumexp((0, 2)), torch.logsumexp(t, (0, 2))
    np.testing.assert_allclose(y._data, ty.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(grad(y.sum(), x), torch.autograd.grad(ty.sum(), t)[0].numpy(),
                               rtol=1e-10, atol=1e-300)


# ---------------------------------------------------------------- gather / take_along_dim
def test_gather_repeated_indices_accumulate():
    x = T(np.arange(12.0).reshape(3, 4), grad=True)
    idx = tp.tensor([[0, 0, 0], [3, 3, 1], [2, 2, 2]])
    y = tp.gather(x, 1, idx)
    np.testing.assert_array_equal(y._data, np.take_along_axis(x._data, idx._data, 1))
    g = grad(y.sum(), x)
    np.testing.assert_array_equal(g, [[3, 0, 0, 0], [0, 1, 0, 2], [0, 0, 3, 0]])
    # second order through gather_backward (its VJP is gather)
    x2 = T(np.arange(4.0), grad=True)
    i2 = tp.tensor([1, 1, 3])
    (g1,) = tp.autograd.grad((tp.gather(x2, 0, i2) ** 2).sum(), x2, create_graph=True)
    np.testing.assert_array_equal(g1._data, [0, 4, 0, 6])
    (g2,) = tp.autograd.grad(g1.sum(), x2)
    np.testing.assert_array_equal(g2._data, [0, 4, 0, 2])


def test_gather_errors_as_pytorch():
    x = T(np.zeros((3, 4)))
    with pytest.raises(RuntimeError, match="index 4 is out of bounds for dimension 1"):
        tp.gather(x, 1, tp.tensor([[4]]))
    with pytest.raises(RuntimeError, match="index -1"):
        tp.gather(x, 0, tp.tensor([[-1]]))                # no wrap-around, as PyTorch
    with pytest.raises(RuntimeError):
        tp.gather(x, 0, T([[0.0]]))                       # float index
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        tp.gather(x, 0, tp.tensor([0]))
    with pytest.raises(RuntimeError, match="exceed"):
        tp.gather(x, 0, tp.tensor([[0, 0, 0, 0, 0]]))
    with pytest.raises(IndexError):
        tp.gather(x, 2, tp.tensor([[0]]))
    with pytest.raises(RuntimeError, match="index 9"):
        tp.gather(tp.tensor([[1, 2]]), 1, tp.tensor([[9]]))      # the integer path


def test_gather_kernels_check_each_index_they_read():
    # called past the Python checks (as a racing writer would make them), the
    # kernels raise IndexError instead of reading or writing out of bounds
    x = np.zeros((2, 5, 3))
    idx = np.zeros((2, 4, 3), np.int64)
    idx[1, 2, 1] = 7
    with pytest.raises(IndexError, match="index"):
        _kx.gather_fwd(x, idx, np.empty((2, 4, 3)), 2)
    with pytest.raises(IndexError):
        _kx.gather_bwd(np.ones((2, 4, 3)), idx, np.zeros((2, 5, 3)), 2)
    idx[1, 2, 1] = -3
    with pytest.raises(IndexError):
        _kx.gather_fwd(x, idx, np.empty((2, 4, 3)), 1)


def test_take_along_dim_with_argmax_and_broadcasting():
    a = np.random.default_rng(3).standard_normal((3, 5))
    x = T(a)
    i = x.argmax(1, keepdim=True)
    np.testing.assert_array_equal(tp.take_along_dim(x, i, 1)._data, a.max(1, keepdims=True))
    np.testing.assert_array_equal(tp.take_along_dim(x, x.argmax())._data, [a.max()])
    j = tp.tensor([[0, 4]])                                   # broadcast over the rows
    np.testing.assert_array_equal(x.take_along_dim(j, 1)._data, a[:, [0, 4]])
    with pytest.raises(RuntimeError):
        tp.take_along_dim(x, tp.tensor([0]), 1)


# ---------------------------------------------------------------- norms
def test_norm_at_zero_has_gradient_zero():
    for ord in (2, 1, math.inf, -math.inf, 3, 1.5):
        z = T(np.zeros(4), grad=True)
        g = grad(vector_norm(z, ord), z)
        np.testing.assert_array_equal(g, np.zeros(4), err_msg=f"ord={ord}")
    z = T(np.zeros((2, 3)), grad=True)
    np.testing.assert_array_equal(grad(z.norm(), z), np.zeros((2, 3)))
    np.testing.assert_array_equal(grad(matrix_norm(z, 1), z), np.zeros((2, 3)))


def test_inf_norm_splits_ties_and_ord0_counts():
    x = T([3.0, -3.0, 1.0, 0.0], grad=True)
    np.testing.assert_allclose(grad(vector_norm(x, math.inf), x), [0.5, -0.5, 0.0, 0.0])
    assert vector_norm(x, 0).item() == 3.0 and not vector_norm(x, 0).requires_grad
    assert vector_norm(x, -math.inf).item() == 0.0


@needs_torch
def test_norms_match_torch():
    a = np.random.default_rng(4).standard_normal((2, 3, 4))
    t = torch.tensor(a)
    for ord in (2, 1, math.inf, -math.inf, 0, 3, 0.5, -1.5):
        for dim in (None, 1, (0, 2)):
            np.testing.assert_allclose(vector_norm(T(a), ord, dim)._data,
                                       torch.linalg.vector_norm(t, ord, dim).numpy(),
                                       rtol=1e-12)
    for ord in ("fro", 1, -1, math.inf, -math.inf, 2, -2, "nuc"):
        for dim in ((-2, -1), (0, 2), (2, 0)):
            np.testing.assert_allclose(matrix_norm(T(a), ord, dim)._data,
                                       torch.linalg.matrix_norm(t, ord, dim).numpy(),
                                       rtol=1e-12)
    np.testing.assert_allclose(T(a).norm(1, 2, True)._data, t.norm(1, 2, True).numpy())


def test_norm_exports_and_errors():
    assert LINALG["vector_norm"] is vector_norm and LINALG["matrix_norm"] is matrix_norm
    x = T(np.ones((3, 3)))
    with pytest.raises(RuntimeError):
        matrix_norm(T(np.ones(3)))
    with pytest.raises(RuntimeError):
        vector_norm(tp.tensor([1, 2]))
    with pytest.raises(TypeError):
        vector_norm(x, "fro")
    with pytest.raises(RuntimeError):
        vector_norm(T(np.zeros(0)), math.inf)


# ---------------------------------------------------------------- all / any / count_nonzero
def test_boolean_reductions():
    a = np.array([[0.0, 1.0, np.nan], [2.0, 3.0, 4.0]])
    x = T(a)
    assert tp.all(x).item() is False and x.any().item() is True
    np.testing.assert_array_equal(x.all(1)._data, [False, True])
    np.testing.assert_array_equal(tp.any(x == 0, 0, keepdim=True)._data, [[True, False, False]])
    assert tp.all(x).dtype is tp.bool
    c = x.count_nonzero(1)
    assert c.dtype is tp.int64 and c._data.tolist() == [2, 3]       # nan is nonzero
    assert tp.count_nonzero(x).item() == 5


# ---------------------------------------------------------------- threads
@pytest.mark.parametrize("dim", [0, 1])
def test_one_and_two_threads_agree(dim):
    rng = np.random.default_rng(5)
    a = rng.uniform(0.9, 1.1, (300, 400))
    idx = tp.from_numpy(rng.integers(0, 300 if dim == 0 else 400, (300, 400)))
    results = []
    before = tp.get_num_threads()
    for n in (1, 2):
        tp.set_num_threads(n)
        try:
            x = T(a, grad=True)
            y = tp.gather(x, dim, idx)
            outs = [x.amax(dim), x.amin(dim), x.argmax(dim), x.prod(dim), y,
                    tp.autograd.grad(y.sum(), x)[0], tp.autograd.grad(x.prod(dim).sum(), x)[0]]
            results.append([o._data.copy() for o in outs])
        finally:
            tp.set_num_threads(before)
    for r1, r2 in zip(*results):
        np.testing.assert_array_equal(r1, r2)
