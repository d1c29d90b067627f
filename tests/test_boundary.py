"""The boundary of the library: what comes in from numpy and Python, and what goes out.

Regression tests for faults found by hostile testing: creation functions checking
their arguments for the requested dtype, numpy inputs normalised (subclasses,
unsupported dtypes, byte order, self-overlapping memory), ``numpy()`` handing out a
view rather than the storage object, version counters shared by views only, and a
summarised ``repr`` of large tensors.  Values are checked against numpy or closed
forms; behaviour and exception types against PyTorch where it is installed.
"""
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
