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
    ]


def test_view_primitives_are_the_known_set():
    # a new view=True primitive must be added to _view_cases (and must never copy)
    assert {n for n, op in REGISTRY.items() if op.view} == {"view", "permute", "expand",
                                                            "getitem"}


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

