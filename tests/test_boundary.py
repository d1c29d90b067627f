"""The boundary of the library: what comes in from numpy and Python, and what goes out.

Regression tests for faults found by hostile testing: creation functions checking
their arguments for the requested dtype, numpy inputs normalised (subclasses,
unsupported dtypes, byte order, self-overlapping memory), ``numpy()`` handing out a
view rather than the storage object, version counters shared by views only, and a
summarised ``repr`` of large tensors.  Values are checked against numpy or closed
forms; behaviour and exception types against PyTorch where it is installed.
"""
import re
import time
import tracemalloc
import warnings

import numpy as np
import pytest

import tensorplay as tp
from tensorplay._ops.registry import REGISTRY

F32, F64, I32, I64 = tp.float32, tp.float64, tp.int32, tp.int64
pytestmark = pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")


# =====================================================================================
# version counters: views share, copies own
# =====================================================================================
def test_reshape_copy_has_its_own_version_counter():
    # x.T is not contiguous, so reshape(-1) copies; writing into the copy must not
    # count as modifying x, which x * x saved for its backward
    xv = np.arange(12.0).reshape(3, 4)
    x = tp.tensor(xv, requires_grad=True)
    z = (x * x).sum()
    with tp.no_grad():
        y = x.detach().T.reshape(-1)
        assert not np.shares_memory(y.numpy(), xv)
        y.add_(1.0)
    z.backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * xv)
    np.testing.assert_array_equal(y.numpy(), xv.T.reshape(-1) + 1)
    np.testing.assert_array_equal(x.detach().numpy(), xv)         # x untouched


def test_reshape_view_still_shares_the_version_counter():
    x = tp.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    z = (x * x).sum()
    with tp.no_grad():
        y = x.detach().reshape(-1)          # contiguous: a view, the same counter
        y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def _view_cases():
    """(name, input, fn) for each view=True primitive, on non-contiguous inputs."""
    base = np.arange(24.0).reshape(2, 3, 4)
    t = lambda: tp.tensor(base).permute(2, 0, 1)         # (4, 2, 3), not contiguous
    return [
        ("view", t, lambda x: x.view(4, 2, 3)),
        ("view", lambda: tp.tensor(base), lambda x: x.view(6, 4)),
        ("view", t, lambda x: x.unsqueeze(1)),
        ("view", t, lambda x: x[:, :1].squeeze(1)),
        ("view", t, lambda x: x.reshape(4, 2, 3)),       # same shape: a view
        ("view", lambda: tp.tensor(base)[:, :, ::2], lambda x: x.reshape(6, 2)),
        ("reshape", t, lambda x: x.reshape(-1)),         # needs a copy
        ("reshape", t, lambda x: x.flatten()),
        ("reshape", lambda: tp.tensor(base)[:, 1:], lambda x: x.reshape(-1)),
        ("permute", t, lambda x: x.permute(1, 2, 0)),
        ("permute", t, lambda x: x.T),
        ("expand", lambda: tp.tensor(base)[:, :1], lambda x: x.expand(2, 5, 4)),
        ("getitem", t, lambda x: x[1:, ..., ::2]),
        ("getitem", t, lambda x: x[0]),
        ("diagonal", t, lambda x: x.diagonal(1, 0, 2)),
        ("diagonal", t, lambda x: x.diagonal(-1, 2, 1)),
    ]


def test_view_primitives_are_the_known_set():
    # a new view=True primitive must be added to _view_cases (and must never copy)
    assert {n for n, op in REGISTRY.items() if op.view} == {"view", "permute", "expand",
                                                            "getitem", "diagonal"}


@pytest.mark.parametrize("case", range(len(_view_cases())))
def test_shared_version_counter_iff_shared_memory(case):
    name, make, fn = _view_cases()[case]
    x = make()
    y = fn(x)
    shares = np.shares_memory(y._data, x._data)
    assert shares == REGISTRY[name].view
    assert (y._version is x._version) == shares
    np.testing.assert_array_equal(y.numpy(), fn(tp.tensor(x.numpy().copy())).numpy())


def test_view_of_non_viewable_strides_still_raises():
    x = tp.zeros(3, 4).T
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.view(-1)


# =====================================================================================
# numpy(): a view of the storage, not the storage object
# =====================================================================================
@pytest.mark.parametrize("attr, value", [("shape", (3, 2)), ("shape", (6,)),
                                         ("dtype", np.int64), ("strides", (8, 16))])
def test_numpy_result_metadata_changes_do_not_reach_the_tensor(attr, value):
    x = tp.tensor(np.arange(6.0).reshape(2, 3), dtype=F64)
    for get in (lambda: x.numpy(), lambda: np.asarray(x), lambda: x.__array__(np.float64)):
        a = get()
        with warnings.catch_warnings():      # numpy 2.4 deprecates setting strides
            warnings.simplefilter("ignore", DeprecationWarning)
            setattr(a, attr, value)
        assert x.shape == (2, 3) and x.dtype is F64 and x.stride() == (3, 1)
        np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(2, 3))


def test_numpy_result_shares_element_writes_both_ways():
    x = tp.zeros(2, 3)
    a = x.numpy()
    a[1, 2] = 5.0
    assert x[1, 2].item() == 5.0
    with tp.no_grad():
        x.add_(1.0)
    assert a[0, 0] == 1.0 and np.shares_memory(a, np.asarray(x))


# =====================================================================================
# repr: summarised like PyTorch, touching only the shown elements
# =====================================================================================
def _repr_cases():
    rng = np.random.default_rng(0)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    return [
        f32(5), rng.standard_normal((3, 4)), f32(2000), f32(40, 50), f32(11, 12, 13),
        f32(2, 3, 7, 80), f32(1, 1, 2000), np.arange(30.0, dtype=np.float32), np.arange(3000.0),
        (f32(40) * 1e6), rng.standard_normal(7) * 1e-6, np.array([1e10, 1], np.float32),
        np.array([123456789.0, 1.0]), np.array([np.nan, 1.0, -np.inf, 0.0], np.float32),
        np.array([np.nan, 1.5, np.inf], np.float32), np.array([0.0, -0.0], np.float32),
        np.array(3.5, np.float32), np.array(np.nan, np.float32), np.array(7), np.array(True),
        rng.integers(-1000, 1000, 50), rng.integers(-10, 10, (20, 70)).astype(np.int32),
        rng.integers(-2**40, 2**40, 30), rng.integers(0, 100, (3, 1001)),
        rng.integers(0, 2, 2000).astype(bool), rng.integers(0, 2, (4, 5)).astype(bool),
        np.zeros(0, np.float32), np.zeros((0, 3), np.float32), np.zeros((2, 0)),
        np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(1001, np.float32),
        np.full(2400, 2.0, np.float32)[::2], f32(30, 40).T,        # non-contiguous
    ]


def _torch_repr(t):
    """PyTorch's repr with tensorplay's dtype names; a suffix wrapped to its own line
    is joined back, since "tensorplay." is longer than "torch." (the wrap rule itself
    is tested on int32 below, where both fit)."""
    return re.sub(r",\n +(dtype=|grad_fn=|requires_grad=|size=)", r", \1",
                  repr(t).replace("torch.", "tensorplay."))


def _unwrap(r):
    return re.sub(r",\n +(dtype=|grad_fn=|requires_grad=|size=)", r", \1", r)


@pytest.mark.parametrize("case", range(len(_repr_cases())))
def test_repr_matches_pytorch(case):
    torch = pytest.importorskip("torch")
    a = _repr_cases()[case]
    want = _torch_repr(torch.tensor(a))
    assert _unwrap(repr(tp.tensor(a))) == want
    assert _unwrap(str(tp.tensor(a))) == want


@pytest.mark.parametrize("shape", [(3,), (3, 30), (40, 30)])
def test_repr_autograd_suffixes_match_pytorch(shape):
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(1).standard_normal(shape)
    for dtype, tdtype in ((np.float32, torch.float32), (np.float64, torch.float64)):
        leaf_t = torch.tensor(a.astype(dtype), requires_grad=True)
        leaf_p = tp.tensor(a.astype(dtype), requires_grad=True)
        for t, p in ((leaf_t, leaf_p), (leaf_t * 2, leaf_p * 2)):
            assert _unwrap(repr(p)) == _torch_repr(t)


def test_repr_wraps_a_long_suffix_onto_its_own_line_like_pytorch():
    # 71 characters of body: ", dtype=tensorplay.int32" no longer fits in 80
    r = repr(tp.tensor(np.arange(0, 10 ** 10, 10 ** 9) % 2 ** 31, dtype=I32))
    assert r.endswith("],\n       dtype=tensorplay.int32)")


def _expanded(n=10_000):
    """A 10^8-element float32 tensor that costs 40 kB: a column expand()ed."""
    return tp.arange(n, dtype=F32).reshape(n, 1).expand(n, n)


def test_repr_of_huge_expanded_tensor_reads_only_the_edges():
    x = _expanded()
    assert x.numel() == 10 ** 8
    tracemalloc.start()
    try:
        t0 = time.perf_counter()
        r = repr(x)
        elapsed = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # formatting 36 shown elements; the old path allocated > 400 MB and took seconds
    assert peak < 2_000_000, f"repr allocated {peak} bytes at peak"
    assert elapsed < 2.0, f"repr took {elapsed:.2f} s"
    lines = r.splitlines()
    assert lines[0] == ("tensor([[0.0000e+00, 0.0000e+00, 0.0000e+00,  ..., 0.0000e+00, "
                        "0.0000e+00,")
    assert lines[6] == "        ...,"
    assert lines[-1] == "         9.9990e+03]])"
    assert len(lines) == 13


def test_repr_of_huge_expanded_tensor_matches_pytorch():
    torch = pytest.importorskip("torch")
    n = 10_000
    want = repr(torch.arange(n, dtype=torch.float32).reshape(n, 1).expand(n, n))
    assert repr(_expanded(n)) == want


@pytest.mark.parametrize("dtype", [F32, F64, I32, I64, tp.bool])
def test_repr_summarises_every_dtype(dtype):
    x = tp.zeros(1, 1, 1, dtype=dtype).expand(1000, 2, 1000)      # 2e6 elements
    r = repr(x)
    # dim 0 cut once (a "...," row), dim 2 cut in each of the 6 * 2 shown rows
    assert r.count("...") == 1 + 12 and r.count("...,\n") == 1
    assert len(r) < 1500



# =====================================================================================
# numpy inputs are normalised at the boundary
# =====================================================================================
def _matrix():
    return np.matrix([[1.0, 2.0], [3.0, 4.0]])


@pytest.mark.parametrize("make", [tp.from_numpy, tp.as_tensor, tp.tensor, tp.Tensor,
                                  lambda a: tp.zeros((), dtype=F64) + a])
def test_ndarray_subclass_becomes_plain_ndarray(make):
    t = make(_matrix())
    assert type(t._data) is np.ndarray
    assert t.shape == (2, 2)
    # np.matrix keeps two dims under reshape and indexing; a tensor must not
    assert t.reshape(-1).shape == (4,) and t[0].shape == (2,) and t[0, 1].shape == ()
    np.testing.assert_array_equal(t.reshape(-1).numpy(), [1.0, 2.0, 3.0, 4.0])


def test_from_numpy_of_subclass_still_shares_memory():
    m = _matrix()
    t = tp.from_numpy(m)
    m[0, 0] = -1.0
    assert t[0, 0].item() == -1.0


def test_setitem_with_matrix_value():
    x = tp.zeros(3, dtype=F64)
    x[:] = np.matrix([[1.0, 2.0, 3.0]])     # leading size-1 dim drops, as for ndarrays
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0, 3.0])


def test_masked_array_with_masked_values_is_refused():
    with pytest.raises(TypeError, match="masked"):
        tp.from_numpy(np.ma.array([1.0, 2.0], mask=[0, 1]))
    t = tp.tensor(np.ma.array([1.0, 2.0]))               # nothing masked: plain data
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])


_BAD_DTYPES = [
    ("structured", lambda: np.zeros(2, dtype=[("a", "f8"), ("b", "i4")])),
    ("object", lambda: np.array([1, 2], dtype=object)),
    ("string", lambda: np.array(["a", "b"])),
    ("bytes", lambda: np.array([b"a", b"b"])),
    ("datetime", lambda: np.array(["2020-01-01", "2021-01-01"], dtype="datetime64[D]")),
    ("timedelta", lambda: np.array([1, 2], dtype="timedelta64[s]")),
    ("complex", lambda: np.array([1 + 2j, 3j])),
]


@pytest.mark.parametrize("kind, make", _BAD_DTYPES, ids=[k for k, _ in _BAD_DTYPES])
@pytest.mark.parametrize("entry", ["tensor", "as_tensor", "from_numpy", "Tensor", "add",
                                   "setitem", "copy_"])
def test_non_numeric_dtypes_are_refused_naming_the_dtype(kind, make, entry):
    a = make()
    call = {"tensor": lambda: tp.tensor(a), "as_tensor": lambda: tp.as_tensor(a),
            "from_numpy": lambda: tp.from_numpy(a), "Tensor": lambda: tp.Tensor(a),
            "add": lambda: tp.zeros(2) + a, "setitem": lambda: tp.zeros(2).__setitem__(
                slice(None), a), "copy_": lambda: tp.zeros(2).copy_(a)}[entry]
    with pytest.raises(TypeError, match=re.escape(str(a.dtype))):
        call()


def test_pytorch_refuses_the_same_dtypes():
    torch = pytest.importorskip("torch")
    for kind, make in _BAD_DTYPES:
        if kind != "complex":              # PyTorch has complex tensors; tensorplay not
            with pytest.raises(TypeError):
                torch.from_numpy(make())


def test_non_native_byte_order():
    be = np.arange(4.0, dtype=">f8")
    for make in (tp.tensor, tp.as_tensor, lambda a: tp.zeros(4, dtype=F64) + a):
        t = make(be)
        assert t.dtype is F64 and t._data.dtype.isnative
        np.testing.assert_array_equal(t.numpy(), [0.0, 1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="byte order"):     # torch.from_numpy: ValueError
        tp.from_numpy(be)
    x = tp.zeros(4, dtype=I32)
    x[:] = np.arange(4, dtype=">i4")
    np.testing.assert_array_equal(x.numpy(), [0, 1, 2, 3])


def test_from_numpy_keeps_its_own_array_object():
    a = np.zeros(6)
    t = tp.from_numpy(a)
    a.shape = (2, 3)                        # the caller's metadata, not the tensor's
    assert t.shape == (6,)
    a[1, 2] = 4.0                           # but the memory is shared
    assert t[5].item() == 4.0


def _overlapping():
    base = np.arange(3.0)
    return base, np.lib.stride_tricks.as_strided(base, (3, 3), (8, 0))


@pytest.mark.parametrize("make", [tp.from_numpy, tp.as_tensor])
@pytest.mark.parametrize("write", [lambda t: t.add_(1.0), lambda t: t.mul_(2.0),
                                   lambda t: t.fill_(1.0), lambda t: t.zero_(),
                                   lambda t: t.copy_(tp.ones(3, 3, dtype=F64)),
                                   lambda t: t.__setitem__((0, 0), 5.0),
                                   lambda t: t[1].add_(1.0)])
def test_self_overlapping_array_refuses_in_place_writes(make, write):
    base, ov = _overlapping()
    t = make(ov)
    with pytest.raises(RuntimeError, match="overlap in memory"):
        write(t)
    np.testing.assert_array_equal(base, [0.0, 1.0, 2.0])       # nothing was written
    assert ov.flags.writeable                                  # the caller's flag kept
    c = t.clone().add_(1.0)                                    # the documented way out
    np.testing.assert_array_equal(c.numpy(), np.repeat([[1.0], [2.0], [3.0]], 3, axis=1))


def test_self_overlapping_array_is_read_through_and_copied_by_tensor():
    base, ov = _overlapping()
    t = tp.from_numpy(ov)
    base[1] = 7.0
    np.testing.assert_array_equal(t.numpy(), [[0.0] * 3, [7.0] * 3, [2.0] * 3])
    u = tp.tensor(ov).add_(1.0)            # tensor() copies into dense storage
    np.testing.assert_array_equal(u.numpy(), [[1.0] * 3, [8.0] * 3, [3.0] * 3])
    np.testing.assert_array_equal(base, [0.0, 7.0, 2.0])


@pytest.mark.parametrize("shape, strides, overlaps", [
    ((3, 3), (8, 0), True), ((3, 3), (8, 8), True), ((4, 3), (16, 8), True),
    ((3, 3), (24, 8), False), ((3, 3), (8, 24), False), ((2, 3), (-24, 8), False),
    ((3, 2), (16, 48), False), ((5,), (0,), True), ((1, 4), (0, 8), False),
])
def test_overlap_detection(shape, strides, overlaps):
    from tensorplay._dtype import _may_self_overlap
    buf = np.zeros(64)
    start = buf[32:] if strides[0] < 0 else buf
    a = np.lib.stride_tricks.as_strided(start, shape, strides)
    assert _may_self_overlap(a) == overlaps
    # the reference: count the distinct addresses of the elements
    offs = sum(np.indices(shape)[i] * strides[i] for i in range(len(shape))).ravel()
    assert (len(set(offs.tolist())) < a.size) == overlaps


# =====================================================================================
# creation functions check their arguments for the requested dtype
# =====================================================================================
@pytest.mark.parametrize("args, dtype, want", [
    ((-3.5, 3.5), I64, [-3, -2, -1, 0, 1, 2]),      # was [-3, -2, -1, 0, 0, 1, 2]
    ((-3.5, 3.5), I32, [-3, -2, -1, 0, 1, 2]),
    ((0.5, 3), I64, [0, 1, 2]),
    ((0, 5, 1.5), I64, [0, 1, 2, 3, 4]),             # the step truncates to 1
    ((3.5, -3.5, -1.5), I64, [3, 2, 1, 0, -1, -2]),
    ((0.9, 5.9, 2), I64, [0, 2, 4]),
    ((-2.5, 2.5, 2), I64, [-2, 0]),
    ((0.5, 0.9), I64, []),
    ((2 ** 31 - 2, 2 ** 31), I32, [2 ** 31 - 2, 2 ** 31 - 1]),
    ((0, 2 ** 31, 2 ** 30), I32, [0, 2 ** 30]),      # end itself need not fit
    ((0, 5, True), I64, [0, 1, 2, 3, 4]),            # bools are numbers, as in PyTorch
])
def test_arange_integer_dtype_truncates_bounds_like_pytorch_int64(args, dtype, want):
    t = tp.arange(*args, dtype=dtype)
    assert t.dtype is dtype
    np.testing.assert_array_equal(t.numpy(), np.array(want, dtype.numpy))
    # the closed form: the integer range over the truncated bounds and step
    lo, hi, st = (int(v) for v in (args if len(args) == 3 else args + (1,)))
    assert t.tolist() == list(range(lo, hi, st))


def test_arange_int64_matches_pytorch():
    torch = pytest.importorskip("torch")
    for args in [(-3.5, 3.5), (0.5, 3), (0, 5, 1.5), (3.5, -3.5, -1), (3.5, -3.5, -1.5),
                 (0.9, 5.9, 2), (-2.5, 2.5, 2), (0, 10 ** 10, 10 ** 9), (2 ** 40, 2 ** 40 + 3)]:
        assert tp.arange(*args, dtype=I64).tolist() == \
            torch.arange(*args, dtype=torch.int64).tolist(), args


@pytest.mark.parametrize("args, kw, exc, match", [
    ((0, 5, 0), {}, RuntimeError, "step must be nonzero"),
    ((0, 3, 0.5), {"dtype": I64}, ValueError, "truncates to 0"),     # PyTorch: ValueError
    ((5, 0, 1), {}, RuntimeError, "inconsistent with step sign"),
    ((0, 5, -1), {}, RuntimeError, "inconsistent with step sign"),
    ((0, float("nan")), {}, RuntimeError, "unsupported range"),
    ((0, float("inf")), {}, RuntimeError, "unsupported range"),
    ((float("-inf"), 0), {}, RuntimeError, "unsupported range"),
    ((0, 2 ** 63), {}, RuntimeError, "without overflow"),
    ((0, 2 ** 40, 2 ** 38), {"dtype": I32}, RuntimeError, "without overflow"),  # torch wraps
    ((2 ** 40, 2 ** 40 + 3), {"dtype": I32}, RuntimeError, "without overflow"),
    ((0, 1e20, 1), {}, RuntimeError, "invalid size"),
    ((0, 3), {"dtype": tp.bool}, NotImplementedError, "bool"),
    ((None,), {}, TypeError, "'end' must be a real number"),
    ((0, 5, None), {}, TypeError, "'step' must be a real number"),
    (("3",), {}, TypeError, "'end' must be a real number"),
    ((3 + 0j,), {}, TypeError, "complex"),
    ((0, 2 ** 70), {}, OverflowError, "64 bits"),
])
def test_arange_bad_arguments(args, kw, exc, match):
    with pytest.raises(exc, match=match):
        tp.arange(*args, **kw)


def test_arange_bad_arguments_raise_what_pytorch_raises():
    torch = pytest.importorskip("torch")
    for args, kw, exc in [((0, 5, 0), {}, RuntimeError), ((5, 0, 1), {}, RuntimeError),
                          ((0, float("nan")), {}, RuntimeError),
                          ((0, 3, 0.5), {"dtype": "int64"}, ValueError),
                          ((0, 2 ** 63), {}, RuntimeError),
                          ((0, 3), {"dtype": "bool"}, NotImplementedError),
                          ((None,), {}, TypeError)]:
        tkw = {k: getattr(torch, v) for k, v in kw.items()}
        with pytest.raises(exc):
            torch.arange(*args, **tkw)
        with pytest.raises(exc):
            tp.arange(*args, **kw)


def test_arange_float_and_tensor_bounds():
    np.testing.assert_allclose(tp.arange(0, 1, 0.1).numpy(), np.arange(0, 1, 0.1), rtol=1e-6)
    assert tp.arange(0, 1, 0.1).shape == (10,)
    assert tp.arange(tp.tensor(3)).tolist() == [0, 1, 2]          # 0-d tensors are numbers
    assert tp.arange(np.float64(3)).dtype is F32
    np.testing.assert_array_equal(tp.arange(0.5, 2.5, dtype=F64).numpy(), [0.5, 1.5])
    with pytest.raises(TypeError, match="0-d tensor"):
        tp.arange(tp.tensor([3]))


@pytest.mark.parametrize("args, dtype, want", [
    ((0, 10, 4), I64, [0, 3, 6, 10]),
    ((0, 10, 5), I32, [0, 2, 5, 7, 10]),
    ((10, 0, 5), I64, [10, 7, 5, 2, 0]),
    ((-10, 0, 4), I64, [-10, -6, -3, 0]),
    ((0.0, 1.0, 3), I64, [0, 0, 1]),
    ((0, 2 ** 40, 3), I64, [0, 2 ** 39, 2 ** 40]),
])
def test_linspace_integer_dtype_truncates_like_pytorch(args, dtype, want):
    t = tp.linspace(*args, dtype=dtype)
    assert t.dtype is dtype and t.tolist() == want
    np.testing.assert_array_equal(t.numpy(), np.trunc(np.linspace(*args)).astype(dtype.numpy))


@pytest.mark.parametrize("args, kw, exc, match", [
    ((0, 1, -1), {}, RuntimeError, "non-negative"),
    ((0, 1, 2.0), {}, TypeError, "'steps' must be int, not float"),
    ((0, 1, True), {}, TypeError, "'steps' must be int, not bool"),
    ((0, 1, None), {}, TypeError, "'steps' must be int"),
    ((None, 1, 3), {}, TypeError, "'start' must be a real number"),
    ((0, 1, 3), {"dtype": tp.bool}, NotImplementedError, "bool"),
    ((0, 2 ** 40, 3), {"dtype": I32}, RuntimeError, "without overflow"),
    ((0, float("nan"), 3), {"dtype": I64}, RuntimeError, "without overflow"),
    ((0, float("inf"), 3), {"dtype": I64}, RuntimeError, "without overflow"),
    ((0, 1e300, 3), {}, RuntimeError, "without overflow"),       # float32 by default
    ((0, 1, 2 ** 62), {}, RuntimeError, "overflow"),
])
def test_linspace_bad_arguments(args, kw, exc, match):
    with pytest.raises(exc, match=match):
        tp.linspace(*args, **kw)


def test_linspace_values_and_non_finite_float_bounds():
    np.testing.assert_allclose(tp.linspace(-1, 2, 7, dtype=F64).numpy(), np.linspace(-1, 2, 7))
    assert tp.linspace(0, 1, 0).shape == (0,)
    assert tp.linspace(0, 1, 1).tolist() == [0.0]
    assert np.isnan(tp.linspace(0, float("nan"), 3).numpy()).all()    # PyTorch: nan too
    np.testing.assert_allclose(tp.linspace(0, 1e300, 3, dtype=F64).numpy(), [0, 5e299, 1e300])


@pytest.mark.parametrize("low, high, dtype, match", [
    (0, 2 ** 40, I32, "to - 1 = 1099511627775 is out of bounds"),  # gave negatives
    (-2 ** 40, 0, I32, "from=-1099511627776 is out of bounds"),
    (0, 2 ** 31 + 1, I32, "out of bounds"),
    (-2 ** 31 - 1, 0, I32, "out of bounds"),
    (0, 3, tp.bool, "out of bounds for tensorplay.bool"),
    (-1, 1, tp.bool, "out of bounds for tensorplay.bool"),
    (0, 2 ** 63 + 1, I64, "out of bounds"),
])
def test_randint_bounds_outside_the_dtype_raise(low, high, dtype, match):
    with pytest.raises(RuntimeError, match=re.escape(match) if "=" in match else match):
        tp.randint(low, high, (3,), dtype=dtype)
    with pytest.raises(RuntimeError, match="out of bounds"):
        tp.randint_like(tp.zeros(3, dtype=dtype), low, high)


def test_pytorch_refuses_the_same_randint_bounds():
    torch = pytest.importorskip("torch")
    for low, high, dtype in [(0, 2 ** 40, torch.int32), (-2 ** 40, 0, torch.int32),
                             (0, 3, torch.bool)]:
        with pytest.raises(RuntimeError, match="out of bounds"):
            torch.randint(low, high, (3,), dtype=dtype)


@pytest.mark.parametrize("low, high, dtype", [
    (0, 2 ** 31, I32), (-2 ** 31, -2 ** 31 + 2, I32), (0, 2, tp.bool),
    (2 ** 63 - 3, 2 ** 63, I64), (-2 ** 63, -2 ** 63 + 2, I64), (0, 5, F32), (-3, 4, F64),
])
def test_randint_values_at_the_edges_of_the_dtype(low, high, dtype):
    tp.manual_seed(3)
    t = tp.randint(low, high, (400,), dtype=dtype)
    assert t.dtype is dtype
    v = t.numpy().astype(object) if dtype is not tp.bool else t.numpy().astype(int)
    assert min(v) >= low and max(v) <= high - 1
    if high - low <= 4:
        assert set(v.tolist()) == set(range(low, high))      # every value drawn


@pytest.mark.parametrize("call, exc, match", [
    (lambda: tp.randint(0.5, 5, (3,)), TypeError, "'low' must be int, not float"),
    (lambda: tp.randint(0, 5.5, (3,)), TypeError, "'high' must be int, not float"),
    (lambda: tp.randint(True, (3,)), TypeError, "not bool"),
    (lambda: tp.randint(5, (3.0,)), TypeError, "tuple of ints"),
    (lambda: tp.randint(5, (-1,)), RuntimeError, "negative dimension"),
    (lambda: tp.randint(0, 0, (2,)), RuntimeError, "from=0 >= to=0"),
    (lambda: tp.randint_like(tp.zeros(2), 0, 5.5), TypeError, "'high' must be int"),
])
def test_randint_bad_arguments(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


_FILL_CASES = [   # (value, dtype, exception or expected first element)
    (float("nan"), I64, RuntimeError), (float("inf"), I64, RuntimeError),
    (float("-inf"), I32, RuntimeError), (2 ** 40, I32, RuntimeError),
    (-2 ** 31 - 1, I32, RuntimeError), (2 ** 63, I64, RuntimeError),
    (2 ** 70, I64, OverflowError), (2 ** 70, F32, OverflowError), (2 ** 70, None, OverflowError),
    (2 ** 1100, F64, OverflowError), (1e300, F32, RuntimeError), (3.5e38, F32, RuntimeError),
    (None, I64, TypeError), (None, None, TypeError), (None, F32, TypeError),
    ("a", F32, TypeError), ([1, 2], F32, TypeError), (1 + 1j, F32, TypeError),
    (2.7, I64, 2), (-2.7, I32, -2), (2 ** 63 - 1, I64, 2 ** 63 - 1), (-2 ** 63, I64, -2 ** 63),
    (3.4e38, F32, np.float32(3.4e38)), (float("inf"), F32, np.inf), (1e300, F64, 1e300),
    (5, tp.bool, True), (float("nan"), tp.bool, True), (0.0, tp.bool, False),
    (np.float64(2.5), I64, 2), (np.int64(7), F32, 7.0), (True, I64, 1),
]


@pytest.mark.parametrize("value, dtype, want", _FILL_CASES)
@pytest.mark.parametrize("how", ["full", "full_like", "fill_", "setitem"])
def test_fill_values_are_checked_for_the_dtype(value, dtype, want, how):
    target = dtype or F32
    t = tp.zeros(2, dtype=target)           # the in-place target

    def call():
        if how == "full":
            return tp.full((2,), value, dtype=dtype)
        if how == "full_like":
            return tp.full_like(tp.zeros(2, dtype=target), value, dtype=dtype)
        if how == "fill_":
            return t.fill_(value)
        t[0] = value
        t[1] = value
        return t
    if how in ("fill_", "setitem") and dtype is None and value is not None:
        pytest.skip("in-place writes have the target's dtype")
    if isinstance(want, type) and issubclass(want, Exception):
        if how == "setitem" and isinstance(value, list):
            pytest.skip("a list is a valid setitem value")
        with pytest.raises(want):
            call()
        np.testing.assert_array_equal(t.numpy(), np.zeros(2))      # nothing written
        return
    out = call()
    assert out.dtype is target
    np.testing.assert_array_equal(out.numpy(), np.full(2, want, target.numpy))


def test_fill_checks_match_pytorch():
    torch = pytest.importorskip("torch")
    tdt = {F32: torch.float32, F64: torch.float64, I32: torch.int32, I64: torch.int64,
           tp.bool: torch.bool, None: None}
    for value, dtype, want in _FILL_CASES:
        if value is None or isinstance(value, (list, str, complex)):
            continue                    # torch: TypeError, or complex tensors
        try:
            got = torch.full((2,), value, dtype=tdt[dtype])
        except Exception as e:          # noqa: BLE001 -- compare the exception types
            assert isinstance(want, type) and isinstance(e, want), (value, dtype, e)
            with pytest.raises(type(e)):
                tp.full((2,), value, dtype=dtype)
        else:
            assert got.tolist() == tp.full((2,), value, dtype=dtype).tolist(), (value, dtype)


def test_fill_with_float64_max_into_float64_and_a_0d_tensor_value():
    assert tp.full((1,), 1.7e308, dtype=F64).item() == 1.7e308
    assert tp.full((2,), tp.tensor(5)).dtype is I64          # dtype from the tensor's kind
    assert tp.full((2,), tp.tensor(5.5, dtype=F64)).dtype is F32
    with pytest.raises(TypeError, match="0-d tensor"):
        tp.full((2,), tp.tensor([3.0, 4.0]))
    with pytest.raises(RuntimeError, match="0-dimension"):
        tp.zeros(2).fill_(tp.tensor([1.0]))


def test_fill_of_huge_int_on_float_tensor_is_a_clear_overflow_error():
    # was: TypeError "ufunc 'isfinite' not supported for the input types"
    x = tp.zeros(2)
    with pytest.raises(OverflowError, match="fill_.*too big to convert.*64 bits"):
        x.fill_(2 ** 70)
    assert x.fill_(float(2 ** 70)).numpy()[0] == np.float32(2.0 ** 70)


@pytest.mark.parametrize("src, dtype", [
    ([float("nan"), 1.0], I64), ([1.0, float("inf")], I32), ([1e30, 0.0], I64),
    ([2.0 ** 31, 0.0], I32), ([2 ** 40, 0], I32),
])
def test_copy_and_setitem_refuse_values_the_integer_dtype_cannot_hold(src, dtype):
    s = tp.tensor(src, dtype=F64 if isinstance(src[0], float) else I64)
    x = tp.zeros(2, dtype=dtype)
    with pytest.raises(RuntimeError, match="copy_.*without overflow"):
        x.copy_(s)
    with pytest.raises(RuntimeError, match="__setitem__.*without overflow"):
        x[:] = s
    np.testing.assert_array_equal(x.numpy(), [0, 0])


def test_copy_truncates_floats_into_integers_like_pytorch():
    x = tp.zeros(3, dtype=I32)
    x.copy_(tp.tensor([1.7, -2.7, 2.0 ** 31 - 1], dtype=F64))
    assert x.tolist() == [1, -2, 2 ** 31 - 1]
    x[:] = tp.tensor([3, 4, 5])                 # int64 -> int32 in range
    assert x.tolist() == [3, 4, 5]


@pytest.mark.parametrize("fn", [tp.zeros, tp.ones, tp.empty, tp.rand, tp.randn])
@pytest.mark.parametrize("size, exc, match", [
    ((-1,), RuntimeError, "negative dimension"),
    ((2, -3), RuntimeError, "negative dimension"),
    ((2.0,), TypeError, "element of type float at pos 0"),
    ((True,), TypeError, "element of type bool at pos 0"),
    (((2, None),), TypeError, "element of type NoneType at pos 1"),
    ((2 ** 62,), RuntimeError, "overflowed"),
    ((2 ** 31, 2 ** 31, 4), RuntimeError, "overflowed"),
    ((2 ** 40, 2 ** 40), RuntimeError, "overflowed"),
])
def test_bad_sizes(fn, size, exc, match):
    with pytest.raises(exc, match=match):
        fn(*size)


def test_unallocatable_size_is_a_runtime_error():
    # 4 PiB: numpy raises MemoryError, PyTorch RuntimeError ("can't allocate memory")
    with pytest.raises(RuntimeError, match="can't allocate memory"):
        tp.empty(2 ** 50)


def test_sizes_accept_numpy_and_tensor_ints():
    assert tp.zeros(np.int64(2), tp.tensor(3)).shape == (2, 3)
    assert tp.ones([2, 3]).shape == (2, 3) and tp.zeros(()).shape == ()
    assert tp.full([2], 1.0).shape == (2,)


@pytest.mark.parametrize("args, exc, match", [
    ((-1,), RuntimeError, "non-negative"), ((2, -1), RuntimeError, "non-negative"),
    ((2.0,), TypeError, "'n' must be int, not float"), ((2, 3.0), TypeError, "'m' must be int"),
    ((True,), TypeError, "not bool"), ((2 ** 40,), RuntimeError, "overflowed"),
])
def test_eye_bad_arguments(args, exc, match):
    with pytest.raises(exc, match=match):
        tp.eye(*args)


@pytest.mark.parametrize("dtype", [F32, F64, I32, I64, tp.bool])
def test_eye_every_dtype(dtype):
    np.testing.assert_array_equal(tp.eye(2, 3, dtype=dtype).numpy(),
                                  np.eye(2, 3, dtype=dtype.numpy))
    assert tp.eye(0).shape == (0, 0)


@pytest.mark.parametrize("fn", [tp.rand, tp.randn])
@pytest.mark.parametrize("dtype", [I32, I64, tp.bool])
def test_random_floats_refuse_other_dtypes_like_pytorch(fn, dtype):
    with pytest.raises(NotImplementedError, match="floating"):
        fn(2, dtype=dtype)


@pytest.mark.parametrize("data, dtype, want", [
    ([1.5, -2.7], I64, [1, -2]), ([2.0 ** 31 - 0.5], I32, [2 ** 31 - 1]),
    ([True, 2.5, 0.0], tp.bool, [True, True, False]), ([float("nan")], tp.bool, [True]),
])
def test_tensor_from_floats_into_integer_dtypes(data, dtype, want):
    assert tp.tensor(data, dtype=dtype).tolist() == want


@pytest.mark.parametrize("data, dtype", [
    ([float("nan")], I64), (float("nan"), I64), ([1.0, float("inf")], I32),
    (1e30, I64), ([2.0 ** 31], I32), (2 ** 40, I32), ([1, 2 ** 70], None),
])
def test_tensor_refuses_values_the_dtype_cannot_hold(data, dtype):
    with pytest.raises(RuntimeError, match="tensor().*(overflow|does not fit)"):
        tp.tensor(data, dtype=dtype)


def test_in_place_integer_narrowing_refuses_values_that_would_wrap():
    x = tp.zeros(2, dtype=I32)
    with pytest.raises(RuntimeError, match="add_.*without overflow"):
        x.add_(tp.tensor([2 ** 40, 1]))                 # int64 result into int32
    assert x.tolist() == [0, 0]
    x.add_(tp.tensor([2 ** 31 - 1, -2 ** 31]))           # in range: written
    assert x.tolist() == [2 ** 31 - 1, -2 ** 31]
    with pytest.raises(RuntimeError, match="add_.*without overflow"):
        x.add_(2 ** 40)                                  # a Python int: checked first


@pytest.mark.parametrize("make", [tp.tensor, tp.as_tensor,
                                  lambda a, dtype: tp.tensor(tp.from_numpy(a), dtype=dtype)])
@pytest.mark.parametrize("a, dtype", [(np.array([np.nan, 1.0]), I64),
                                      (np.array([1.0, -np.inf]), I32),
                                      (np.array([2 ** 40, 1]), I32),
                                      (np.array([1e19]), I64)])
def test_tensor_of_ndarray_refuses_casts_that_would_write_undefined_values(make, a, dtype):
    with pytest.raises(RuntimeError, match="without overflow"):
        make(a, dtype=dtype)


def test_tensor_of_ndarray_casts_in_range_values():
    t = tp.tensor(np.array([1.7, -2.7, 2.0 ** 31 - 1]), dtype=I32)
    assert t.tolist() == [1, -2, 2 ** 31 - 1]
    a = np.arange(3)
    assert not np.shares_memory(tp.tensor(a)._data, a)
    assert tp.tensor(np.array([0.5, 0.0]), dtype=tp.bool).tolist() == [True, False]


def test_tensor_of_uint64_array_refuses_values_beyond_int64():
    big = np.array([2 ** 63, 1], dtype=np.uint64)
    with pytest.raises(RuntimeError, match="without overflow"):
        tp.tensor(big, dtype=I64)
    assert tp.tensor(np.array([2 ** 63 - 1, 1], dtype=np.uint64), dtype=I64).tolist() == \
        [2 ** 63 - 1, 1]


# manual_seed and the creation functions given None where a number is needed: a
# TypeError naming the function and the argument (PyTorch's type), never a bare
# Python error or a misleading one (randint(0, 3, None) used to say "from=0 >= to=0")
@pytest.mark.parametrize("call, match", [
    (lambda: tp.manual_seed(None), r"manual_seed\(\): argument 'seed' must be int, not None"),
    (lambda: tp.manual_seed(1.5), r"manual_seed\(\): argument 'seed' must be int, not float"),
    (lambda: tp.randint(0, 3, None), r"randint\(\): argument 'size'"),
    (lambda: tp.randint(3, None), r"randint\(\): argument 'size'"),
    (lambda: tp.randint(None, 3, (2,)), r"randint\(\): argument 'low' must be int"),
    (lambda: tp.arange(0, None), r"arange\(\): argument 'end' must be a real number"),
    (lambda: tp.randint_like(tp.ones(2), None), r"randint_like\(\): argument 'high'"),
    (lambda: tp.randint_like(tp.ones(2), 0, None), r"randint_like\(\): argument 'high'"),
])
def test_none_where_a_number_is_needed_is_a_named_type_error(call, match):
    with pytest.raises(TypeError, match=match):
        call()


def test_pytorch_raises_type_error_for_the_same_none_arguments():
    torch = pytest.importorskip("torch")
    for call in (lambda: torch.manual_seed(None), lambda: torch.randint(0, 3, None),
                 lambda: torch.randint(3, None), lambda: torch.arange(0, None),
                 lambda: torch.randint_like(torch.ones(2), None)):
        with pytest.raises(TypeError):
            call()


def test_omitted_arguments_still_mean_what_they_did():
    assert tp.arange(3).tolist() == [0, 1, 2]
    assert tp.randint(5, (3,)).shape == (3,) and min(tp.randint(2, 5, size=(2,)).tolist()) >= 2
    assert tp.randint(5, size=(2,)).shape == (2,)
    assert max(tp.randint_like(tp.ones(4), 3).tolist()) < 3
    assert tp.manual_seed(np.int64(3)) == 3
