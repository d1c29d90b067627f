"""Tensor and creation API against numpy and PyTorch's documented behaviour.

Values are checked against numpy; dtypes, reprs and error types against what
PyTorch does (the expected reprs are PyTorch's format, written out by hand).
"""
import numpy as np
import pytest

import tensorplay as tp

F32, F64, I64 = tp.float32, tp.float64, tp.int64


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def npy(t):
    return t.detach().numpy()


# =====================================================================================
# creation
# =====================================================================================
@pytest.mark.parametrize("data, dtype, np_dtype", [
    ([1.0, 2.5, -3.0], F32, np.float32),
    ([[1, 2], [3, 4]], I64, np.int64),
    ([True, False], tp.bool, np.bool_),
    ([1, 2.5], F32, np.float32),            # a float anywhere makes it floating
    ([True, 2], I64, np.int64),
    (3.5, F32, np.float32),
    (7, I64, np.int64),
])
def test_tensor_from_python_data(data, dtype, np_dtype):
    t = tp.tensor(data)
    assert t.dtype == dtype
    np.testing.assert_array_equal(t.numpy(), np.array(data, dtype=np_dtype))
    assert t.shape == np.shape(data)


@pytest.mark.parametrize("np_dtype, dtype", [(np.float32, F32), (np.float64, F64),
                                             (np.int64, I64), (np.int32, tp.int32),
                                             (np.bool_, tp.bool)])
def test_tensor_from_ndarray_keeps_dtype_and_copies(rng, np_dtype, dtype):
    a = (rng.standard_normal((2, 3)) * 5).astype(np_dtype)
    t = tp.tensor(a)
    assert t.dtype == dtype
    np.testing.assert_array_equal(t.numpy(), a)
    assert not np.shares_memory(t.numpy(), a)


def test_tensor_dtype_argument(rng):
    a = rng.standard_normal(4)
    t = tp.tensor(a, dtype=F32)
    assert t.dtype == F32
    np.testing.assert_array_equal(t.numpy(), a.astype(np.float32))


def test_as_tensor_shares_memory_with_ndarray(rng):
    a = rng.standard_normal((2, 3))
    t = tp.as_tensor(a)
    assert t.dtype == F64
    assert np.shares_memory(t.numpy(), a)
    a[1, 2] = 42.0
    assert t[1, 2].item() == 42.0
    # a dtype change forces a copy
    t32 = tp.as_tensor(a, dtype=F32)
    assert t32.dtype == F32 and not np.shares_memory(t32.numpy(), a)
    np.testing.assert_array_equal(t32.numpy(), a.astype(np.float32))


def test_from_numpy_shares_memory_both_ways(rng):
    a = rng.standard_normal((2, 3))
    t = tp.from_numpy(a)
    assert t.dtype == F64 and t.shape == (2, 3)
    a[0, 0] = -7.0                      # numpy -> tensor
    assert t[0, 0].item() == -7.0
    with tp.no_grad():
        t.mul_(2.0)                     # tensor -> numpy
    assert a[0, 0] == -14.0
    t.zero_()
    np.testing.assert_array_equal(a, np.zeros((2, 3)))


def test_from_numpy_rejects_non_ndarray():
    with pytest.raises(TypeError):
        tp.from_numpy([1.0, 2.0])


@pytest.mark.parametrize("fn, npfn", [(tp.zeros, np.zeros), (tp.ones, np.ones)])
@pytest.mark.parametrize("size_as", ["varargs", "tuple", "list"])
def test_zeros_ones(fn, npfn, size_as):
    args = {"varargs": (2, 3), "tuple": ((2, 3),), "list": ([2, 3],)}[size_as]
    t = fn(*args)
    assert t.dtype == F32 and t.shape == (2, 3)
    np.testing.assert_array_equal(t.numpy(), npfn((2, 3), np.float32))
    t64 = fn(4, dtype=F64)
    assert t64.dtype == F64
    np.testing.assert_array_equal(t64.numpy(), npfn(4))
    ti = fn(3, dtype=I64)
    assert ti.dtype == I64
    np.testing.assert_array_equal(ti.numpy(), npfn(3, np.int64))


@pytest.mark.parametrize("fill, dtype", [(3, I64), (2.5, F32), (True, tp.bool), (-1, I64)])
def test_full_infers_dtype_from_fill_value(fill, dtype):
    t = tp.full((2, 2), fill)
    assert t.dtype == dtype
    np.testing.assert_array_equal(t.numpy(), np.full((2, 2), fill, dtype.numpy))
    t64 = tp.full((3,), fill, dtype=F64)
    assert t64.dtype == F64
    np.testing.assert_array_equal(t64.numpy(), np.full(3, float(fill)))


def test_empty_shape_and_dtype():
    t = tp.empty(2, 3)
    assert t.shape == (2, 3) and t.dtype == F32
    assert tp.empty((4,), dtype=F64).dtype == F64
    assert tp.empty(0).numel() == 0


@pytest.mark.parametrize("args, dtype", [
    ((5,), I64), ((2, 9), I64), ((2, 9, 3), I64), ((-3, 3), I64),
    ((5.0,), F32), ((0, 1, 0.25), F32), ((0.5, 3), F32), ((1, 2.5, 0.5), F32),
    ((10, 0, -3), I64),
])
def test_arange(args, dtype):
    t = tp.arange(*args)
    assert t.dtype == dtype
    np.testing.assert_allclose(t.numpy(), np.arange(*args).astype(dtype.numpy), rtol=1e-7)


def test_arange_dtype_argument():
    t = tp.arange(4, dtype=F64)
    assert t.dtype == F64
    np.testing.assert_array_equal(t.numpy(), np.arange(4.0))


@pytest.mark.parametrize("start, end, steps", [(0, 1, 5), (-2.5, 7, 11), (3, 3, 1), (0, 1, 0),
                                               (1, 0, 4)])
def test_linspace(start, end, steps):
    t = tp.linspace(start, end, steps)
    assert t.dtype == F32 and t.shape == (steps,)
    np.testing.assert_allclose(t.numpy(), np.linspace(start, end, steps), rtol=1e-6, atol=1e-7)
    t64 = tp.linspace(start, end, steps, dtype=F64)
    np.testing.assert_allclose(t64.numpy(), np.linspace(start, end, steps), rtol=1e-15)


@pytest.mark.parametrize("n, m", [(3, None), (2, 4), (4, 2), (1, None), (0, None)])
def test_eye(n, m):
    t = tp.eye(n) if m is None else tp.eye(n, m)
    assert t.dtype == F32
    np.testing.assert_array_equal(t.numpy(), np.eye(n, m, dtype=np.float32))


@pytest.mark.parametrize("dtype", [F32, F64])
def test_rand_range_and_moments(dtype):
    tp.manual_seed(11)
    t = tp.rand(20000, dtype=dtype)
    assert t.dtype == dtype and t.shape == (20000,)
    a = t.numpy()
    assert a.min() >= 0.0 and a.max() < 1.0
    assert abs(a.mean() - 0.5) < 0.02 and abs(a.var() - 1 / 12) < 0.01
    assert tp.rand(2, 3).dtype == F32 and tp.rand((2, 3)).shape == (2, 3)


@pytest.mark.parametrize("dtype", [F32, F64])
def test_randn_moments(dtype):
    tp.manual_seed(12)
    a = tp.randn(20000, dtype=dtype).numpy()
    assert a.dtype == dtype.numpy
    assert abs(a.mean()) < 0.05 and abs(a.std() - 1) < 0.05
    assert tp.randn(2, 3).shape == (2, 3)


def test_randint_two_signatures_and_range():
    tp.manual_seed(13)
    a = tp.randint(5, (2000,))                  # randint(high, size)
    assert a.dtype == I64 and a.shape == (2000,)
    assert set(np.unique(a.numpy())) == set(range(5))
    b = tp.randint(-3, 4, (50, 40))             # randint(low, high, size)
    assert b.dtype == I64 and b.shape == (50, 40)
    assert set(np.unique(b.numpy())) == set(range(-3, 4))
    c = tp.randint(3, 5, size=(100,))
    assert c.numpy().min() >= 3 and c.numpy().max() <= 4
    with pytest.raises(RuntimeError):
        tp.randint(5, 5, (3,))


def test_randint_keyword_high_only():
    t = tp.randint(high=5, size=(300,))
    assert t.shape == (300,) and set(np.unique(t.numpy())) == set(range(5))


@pytest.mark.parametrize("dtype", [F32, F64, I64])
def test_like_functions(rng, dtype):
    x = tp.tensor((rng.standard_normal((2, 3)) * 4).astype(dtype.numpy))
    for fn, ref in ((tp.zeros_like, np.zeros((2, 3))), (tp.ones_like, np.ones((2, 3))),
                    (lambda t: tp.full_like(t, 7), np.full((2, 3), 7))):
        r = fn(x)
        assert r.shape == x.shape and r.dtype == dtype
        np.testing.assert_array_equal(r.numpy(), ref.astype(dtype.numpy))
    assert tp.empty_like(x).shape == (2, 3) and tp.empty_like(x).dtype == dtype
    assert tp.zeros_like(x, dtype=F64).dtype == F64
    ri = tp.randint_like(x, 10)
    assert ri.shape == (2, 3) and ri.numpy().min() >= 0 and ri.numpy().max() < 10
    ri = tp.randint_like(x, 3, 5)
    assert ri.numpy().min() >= 3 and ri.numpy().max() < 5


@pytest.mark.parametrize("fn", [tp.rand_like, tp.randn_like])
@pytest.mark.parametrize("dtype", [F32, F64])
def test_random_like_functions(fn, dtype):
    tp.manual_seed(14)
    x = tp.zeros(3, 4, dtype=dtype)
    r = fn(x)
    assert r.shape == (3, 4) and r.dtype == dtype
    assert len(np.unique(r.numpy())) == 12


def test_manual_seed_reproducibility():
    def draw():
        return (tp.rand(5).numpy().copy(), tp.randn(2, 3, dtype=F64).numpy().copy(),
                tp.randint(0, 1000, (6,)).numpy().copy())

    tp.manual_seed(1234)
    first = draw()
    tp.manual_seed(1234)
    second = draw()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    tp.manual_seed(4321)
    other = draw()
    assert not any(np.array_equal(a, b) for a, b in zip(first, other))
    # the stream continues: two consecutive draws differ
    tp.manual_seed(1234)
    assert not np.array_equal(tp.rand(5).numpy(), tp.rand(5).numpy())


# =====================================================================================
# attributes and conversions
# =====================================================================================
@pytest.mark.parametrize("shape", [(), (4,), (2, 3), (1, 3, 1), (2, 0)])
def test_shape_attributes(shape):
    a = np.zeros(shape, np.float32)
    t = tp.zeros(shape)
    assert t.shape == a.shape and isinstance(t.shape, tuple)
    assert t.size() == a.shape
    assert t.ndim == a.ndim and t.dim() == a.ndim
    assert t.numel() == a.size and t.shape.numel() == a.size
    for d in range(-a.ndim, a.ndim):
        assert t.size(d) == a.shape[d]
    with pytest.raises(IndexError):
        t.size(max(a.ndim, 1))


def test_requires_grad_and_is_leaf():
    x = tp.ones(3)
    assert not x.requires_grad and x.is_leaf
    assert x.requires_grad_() is x
    assert x.requires_grad and x.is_leaf
    y = x * 2
    assert y.requires_grad and not y.is_leaf
    x.requires_grad_(False)
    assert not x.requires_grad
    z = x * 2
    assert not z.requires_grad and z.is_leaf      # computed, but not recorded


@pytest.mark.parametrize("make", [
    lambda: tp.tensor([1, 2], requires_grad=True),
    lambda: tp.ones(2, dtype=I64, requires_grad=True),
    lambda: tp.zeros(2, dtype=tp.bool, requires_grad=True),
    lambda: tp.tensor([1, 2]).requires_grad_(),
    lambda: tp.arange(3, requires_grad=True),
])
def test_requires_grad_on_non_floating_raises(make):
    with pytest.raises(RuntimeError):
        make()


def test_detach_shares_storage_without_grad(rng):
    x = tp.tensor(rng.standard_normal(3), requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    np.testing.assert_array_equal(d.numpy(), 2 * npy(x))
    dx = x.detach()
    dx.zero_()                           # writes through to x
    np.testing.assert_array_equal(npy(x), np.zeros(3))


def test_clone_owns_storage_and_is_differentiable(rng):
    xv = rng.standard_normal(3)
    x = tp.tensor(xv, requires_grad=True)
    c = x.clone()
    assert c.requires_grad and c.grad_fn is not None
    assert not np.shares_memory(npy(c), npy(x))
    np.testing.assert_array_equal(npy(c), xv)
    (c * c).sum().backward()
    np.testing.assert_allclose(npy(x.grad), 2 * xv, rtol=1e-15)
    # writing into a clone does not touch the original
    plain = tp.tensor(xv)
    pc = plain.clone()
    pc.zero_()
    np.testing.assert_array_equal(plain.numpy(), xv)


def test_numpy_shares_memory_and_refuses_requires_grad(rng):
    t = tp.tensor(rng.standard_normal(3))
    a = t.numpy()
    a[0] = 5.0
    assert t[0].item() == 5.0
    t.requires_grad_()
    with pytest.raises(RuntimeError):
        t.numpy()
    np.testing.assert_array_equal(t.detach().numpy(), a)


def test_numpy_of_requires_grad_tensor_under_no_grad(rng):
    a = rng.standard_normal(3)
    t = tp.tensor(a, requires_grad=True)
    with tp.no_grad():
        np.testing.assert_array_equal(t.numpy(), a)


@pytest.mark.parametrize("data, shape", [(2.5, ()), ([2.5], (1,)), ([[2.5]], (1, 1))])
def test_item_of_one_element(data, shape):
    t = tp.tensor(data, dtype=F64).reshape(shape)
    v = t.item()
    assert isinstance(v, float) and v == 2.5
    iv = tp.tensor([7]).item()
    assert isinstance(iv, int) and iv == 7


@pytest.mark.parametrize("shape", [(2,), (0,), (2, 2)])
def test_item_raises_unless_one_element(shape):
    with pytest.raises(RuntimeError):
        tp.zeros(shape).item()


@pytest.mark.parametrize("a", [np.arange(6.0).reshape(2, 3), np.arange(4), np.array(3.5),
                               np.array([[True, False]])])
def test_tolist(a):
    assert tp.tensor(a).tolist() == a.tolist()


def test_contiguous_on_transpose(rng):
    a = rng.standard_normal((3, 4))
    t = tp.tensor(a)
    assert t.is_contiguous()
    tt = t.T
    assert not tt.is_contiguous()
    np.testing.assert_array_equal(tt.numpy(), a.T)
    c = tt.contiguous()
    assert c.is_contiguous()
    np.testing.assert_array_equal(c.numpy(), a.T)
    assert t.contiguous() is t
    tr = t.transpose(0, 1)
    assert not tr.is_contiguous() and tr.contiguous().is_contiguous()


@pytest.mark.parametrize("method, dtype", [("float", F32), ("double", F64), ("long", I64)])
@pytest.mark.parametrize("src", [np.array([1.7, -1.7, 2.0, -0.5]), np.array([3, -4, 0]),
                                 np.array([True, False])])
def test_dtype_conversion_methods(method, dtype, src):
    t = getattr(tp.tensor(src), method)()
    assert t.dtype == dtype
    # numpy's astype truncates toward zero for float -> int, as PyTorch does
    np.testing.assert_array_equal(t.numpy(), src.astype(dtype.numpy))


@pytest.mark.parametrize("dtype", [F32, F64, I64, tp.int32, tp.bool])
def test_to_dtype(rng, dtype):
    a = rng.standard_normal(5) * 3
    t = tp.tensor(a).to(dtype)
    assert t.dtype == dtype
    np.testing.assert_array_equal(t.numpy(), a.astype(dtype.numpy))


def test_to_is_differentiable_between_floats(rng):
    xv = rng.standard_normal(3)
    x = tp.tensor(xv, dtype=F32, requires_grad=True)
    y = x.to(F64)
    assert y.dtype == F64 and y.requires_grad
    (y * y).sum().backward()
    assert x.grad.dtype == F32
    np.testing.assert_allclose(npy(x.grad), 2 * xv.astype(np.float32), rtol=1e-6)


# =====================================================================================
# repr (PyTorch's format)
# =====================================================================================
def test_repr_requires_grad():
    assert repr(tp.tensor([1.0, 2.0, 3.0], requires_grad=True)) == \
        "tensor([1., 2., 3.], requires_grad=True)"


def test_repr_grad_fn_of_product():
    x = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    r = repr(x * x)
    assert "grad_fn=<MulBackward0>" in r
    assert r == "tensor([1., 4., 9.], grad_fn=<MulBackward0>)"


def test_repr_float64_shows_dtype():
    assert "dtype=tensorplay.float64" in repr(tp.tensor([1.0, 2.0], dtype=F64))
    assert repr(tp.tensor([1.0, 2.0], dtype=F64)) == "tensor([1., 2.], dtype=tensorplay.float64)"
    assert "dtype" not in repr(tp.tensor([1.0, 2.0]))
    assert "dtype" not in repr(tp.tensor([1, 2]))


@pytest.mark.parametrize("data, want", [
    ([1.5, 2.25], "tensor([1.5000, 2.2500])"),
    ([1, -2], "tensor([ 1, -2])"),
    ([True, False], "tensor([ True, False])"),
    (3.0, "tensor(3.)"),
])
def test_repr_matches_pytorch_format(data, want):
    assert repr(tp.tensor(data)) == want


@pytest.mark.parametrize("data, want", [
    ([-1.5, 2.0], "tensor([-1.5000,  2.0000])"),
    ([1.0, 100.0, 1000.0], "tensor([   1.,  100., 1000.])"),
    ([[1.0, 2.5], [-3.0, 4.0]], "tensor([[ 1.0000,  2.5000],\n        [-3.0000,  4.0000]])"),
    ([123456.0, 1.0], "tensor([1.2346e+05, 1.0000e+00])"),
])
def test_repr_pads_like_pytorch(data, want):
    assert repr(tp.tensor(data)) == want


def test_repr_single_true():
    assert repr(tp.tensor([True])) == "tensor([True])"


# =====================================================================================
# dtype promotion (PyTorch's rules)
# =====================================================================================
@pytest.mark.parametrize("make, want", [
    (lambda: tp.ones(3) * 2.5, F32),                               # scalar does not upcast
    (lambda: tp.tensor([1, 2, 3]) * 2.5, F32),                     # int tensor * float -> default
    (lambda: tp.tensor([1, 2, 3]) + 1, I64),
    (lambda: tp.ones(3) + tp.ones(3, dtype=F64), F64),
    (lambda: tp.ones(3) + tp.tensor(1.0, dtype=F64), F32),         # 0-d does not upcast 1-d
    (lambda: tp.tensor([1, 2]) / tp.tensor([2, 4]), F32),          # true division
    (lambda: tp.tensor(1.0, dtype=F64) * tp.tensor([1, 2]), F64),  # higher category wins
    (lambda: tp.tensor([True]) + 1, I64),
    (lambda: tp.tensor([1, 2], dtype=tp.int32) + tp.tensor([1], dtype=I64), I64),
    (lambda: tp.tensor([1, 2], dtype=tp.int32) * 3, tp.int32),
])
def test_dtype_promotion(make, want):
    assert make().dtype == want


def test_promotion_values(rng):
    a = rng.integers(-5, 5, 4)
    np.testing.assert_allclose((tp.tensor(a) * 2.5).numpy(), a * 2.5, rtol=1e-7)
    np.testing.assert_allclose((tp.tensor(a) / tp.tensor(np.array([2, 4, 8, 3]))).numpy(),
                               a / np.array([2, 4, 8, 3]), rtol=1e-7)


# =====================================================================================
# comparisons
# =====================================================================================
@pytest.mark.parametrize("op, npop", [("__eq__", np.equal), ("__ne__", np.not_equal),
                                      ("__lt__", np.less), ("__le__", np.less_equal),
                                      ("__gt__", np.greater), ("__ge__", np.greater_equal)])
@pytest.mark.parametrize("other_kind", ["tensor", "broadcast", "scalar"])
def test_comparisons_give_bool_without_grad(rng, op, npop, other_kind):
    a = np.round(rng.standard_normal((3, 4)))
    x = tp.tensor(a, requires_grad=True)
    if other_kind == "tensor":
        b = np.round(rng.standard_normal((3, 4)))
        other, ref_other = tp.tensor(b, requires_grad=True), b
    elif other_kind == "broadcast":
        b = np.round(rng.standard_normal(4))
        other, ref_other = tp.tensor(b), b
    else:
        other, ref_other = 0.0, 0.0
    r = getattr(x, op)(other)
    assert r.dtype == tp.bool
    assert not r.requires_grad and r.grad_fn is None
    np.testing.assert_array_equal(r.numpy(), npop(a, ref_other))


# =====================================================================================
# indexing
# =====================================================================================
KEYS = [
    0, -1, 2, (1, 2), (1, -1, 3), slice(1, None), slice(None, None, 2), slice(-2, None),
    slice(5, 10), (slice(None), 0), (slice(None), slice(1, 3)), None, (None, 0),
    (0, None, slice(None)), Ellipsis, (Ellipsis, 1), (0, Ellipsis), (Ellipsis, None),
    (1, Ellipsis, None, slice(1, 3)), (slice(None, None, 2), None, slice(1, None, 2)), (),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_getitem_matches_numpy(rng, key):
    a = rng.standard_normal((3, 4, 5))
    r = tp.tensor(a)[key]
    want = a[key]
    assert r.shape == np.shape(want)
    np.testing.assert_array_equal(r.numpy(), want)


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_getitem_gradient_scatters_back(rng, key):
    a = rng.standard_normal((3, 4, 5))
    x = tp.tensor(a, requires_grad=True)
    y = x[key]
    w = rng.standard_normal(y.shape)
    (y * tp.tensor(w)).sum().backward()
    want = np.zeros_like(a)
    want[key] += w
    np.testing.assert_array_equal(npy(x.grad), want)


@pytest.mark.parametrize("key, exc", [
    (1.5, (TypeError, IndexError)),
    ("a", (TypeError, IndexError)),
    ((0, 1.0), (TypeError, IndexError)),
    (slice(0.5, 2), (TypeError, IndexError)),
    (3, IndexError),
    (-4, IndexError),
    ((0, 4), IndexError),
    ((0, 0, 0, 0), IndexError),
    ((Ellipsis, 0, Ellipsis), IndexError),
], ids=repr)
def test_getitem_bad_index_raises(key, exc):
    with pytest.raises(exc):
        tp.zeros(3, 4, 5)[key]


def test_getitem_on_0d_tensor():
    t = tp.tensor(2.5)
    assert t[None].shape == (1,) and t[...].item() == 2.5
    with pytest.raises(IndexError):
        t[0]


# =====================================================================================
# in-place ops
# =====================================================================================
def test_inplace_ops_under_no_grad_on_leaf(rng):
    a, b = rng.standard_normal((2, 3))
    x = tp.tensor(a, requires_grad=True)
    with tp.no_grad():
        assert x.add_(tp.tensor(b)) is x
        np.testing.assert_allclose(npy(x), a + b, rtol=1e-15)
        x.mul_(3.0)
        np.testing.assert_allclose(npy(x), (a + b) * 3, rtol=1e-15)
        x.add_(tp.tensor(b), alpha=2)
        np.testing.assert_allclose(npy(x), (a + b) * 3 + 2 * b, rtol=1e-15)
        x.zero_()
    np.testing.assert_array_equal(npy(x), np.zeros(3))
    assert x.requires_grad and x.is_leaf


def test_inplace_broadcasts_other_into_self(rng):
    a, b = rng.standard_normal((2, 3)), rng.standard_normal(3)
    x = tp.tensor(a)
    x.add_(tp.tensor(b))
    np.testing.assert_allclose(x.numpy(), a + b, rtol=1e-15)
    x.mul_(tp.tensor(b[:1]))
    np.testing.assert_allclose(x.numpy(), (a + b) * b[0], rtol=1e-15)


@pytest.mark.parametrize("op", [lambda t: t.add_(1.0), lambda t: t.mul_(2.0),
                                lambda t: t.zero_()])
def test_inplace_on_leaf_requiring_grad_raises(rng, op):
    a = rng.standard_normal(3)
    x = tp.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError):
        op(x)
    np.testing.assert_array_equal(npy(x), a)


@pytest.mark.parametrize("other_shape", [(4,), (2, 3), (3, 1)])
@pytest.mark.parametrize("name", ["add_", "mul_"])
def test_failed_inplace_leaves_tensor_unchanged(rng, name, other_shape):
    a = rng.standard_normal(3)
    x = tp.tensor(a)
    with pytest.raises(RuntimeError):
        getattr(x, name)(tp.ones(other_shape, dtype=F64))
    np.testing.assert_array_equal(x.numpy(), a)


def test_failed_inplace_dtype_leaves_tensor_unchanged():
    x = tp.tensor([1, 2, 3])
    with pytest.raises(RuntimeError):
        x.mul_(2.5)                     # float result cannot be cast into int64
    np.testing.assert_array_equal(x.numpy(), [1, 2, 3])


# =====================================================================================
# config
# =====================================================================================
def test_set_get_num_threads_round_trip():
    from tensorplay._kernels import _openmp_helpers
    before = tp.get_num_threads()
    assert isinstance(before, int) and before >= 1
    if not _openmp_helpers.openmp_enabled():
        pytest.skip("built without OpenMP: get_num_threads() is always 1")
    try:
        for n in (1, 3, before):
            tp.set_num_threads(n)
            assert tp.get_num_threads() == n
    finally:
        tp.set_num_threads(before)


@pytest.mark.parametrize("bad, exc", [(0, ValueError), (-1, ValueError),
                                      (1.5, (TypeError, ValueError)),
                                      ("2", (TypeError, ValueError))])
def test_set_num_threads_rejects_non_positive(bad, exc):
    before = tp.get_num_threads()
    with pytest.raises(exc):
        tp.set_num_threads(bad)
    assert tp.get_num_threads() == before


def test_threads_agree(rng):
    from tensorplay._kernels import _openmp_helpers
    if not _openmp_helpers.openmp_enabled():
        pytest.skip("built without OpenMP")
    a = rng.standard_normal((300, 700))
    before = tp.get_num_threads()
    res = []
    try:
        for n in (1, 2):
            tp.set_num_threads(n)
            x = tp.tensor(a, requires_grad=True)
            y = (x.tanh() * x.exp()).sum(1)
            (g,) = tp.autograd.grad(y.sum(), x)
            res.append((npy(y), npy(g)))
    finally:
        tp.set_num_threads(before)
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-13)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-13)
    np.testing.assert_allclose(res[0][0], (np.tanh(a) * np.exp(a)).sum(1), rtol=1e-12)


def test_version_is_a_string():
    assert isinstance(tp.__version__, str)
    assert tp.__version__.split(".")[0].isdigit()


def test_show_config_mentions_openmp(capsys):
    tp.show_config()
    out = capsys.readouterr().out
    assert "OpenMP" in out
    assert tp.__version__ in out


def test_setitem_and_fill_cast_tensor_values_like_pytorch():
    a = tp.zeros(2, 3)
    a[0] = tp.ones(1, 3)                 # leading size-1 dims are dropped
    a[1] = tp.tensor([1, 2, 3])          # an int tensor is cast
    np.testing.assert_array_equal(a.numpy(), [[1, 1, 1], [1, 2, 3]])
    t = tp.zeros(3, dtype=tp.int64).fill_(tp.tensor(2.5))
    np.testing.assert_array_equal(t.numpy(), [2, 2, 2])
    with pytest.raises(RuntimeError, match="0-dimension"):    # PyTorch: 0-d only
        t.fill_(tp.tensor([2.5]))
    with pytest.raises(RuntimeError, match="fill_"):
        tp.ones(1).fill_(1e300)          # overflows float32


def test_t_swaps_two_dims_and_refuses_more():
    # torch.t: <= 2-D only; 0-d and 1-d come back unchanged (as views)
    a = np.arange(6.0).reshape(2, 3)
    x = tp.tensor(a)
    np.testing.assert_array_equal(x.t().numpy(), a.T)
    np.testing.assert_array_equal(tp.t(x).numpy(), a.T)
    v = tp.ones(3)
    assert v.t().shape == (3,) and np.shares_memory(v.t().numpy(), v.numpy())
    assert tp.tensor(2.0).t().shape == ()
    with pytest.raises(RuntimeError, match=r"t\(\): expects a tensor with <= 2 dimensions"):
        tp.ones(2, 2, 2).t()
