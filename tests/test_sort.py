"""Order statistics beyond the op table: indices (ties, nan, stability) against
numpy's stable sort and PyTorch, gradients to the returned index, unique."""
import numpy as np
import pytest

import tensorplay as tp

TIES = np.array([[3.0, 1.0, 3.0, 2.0, 1.0, 3.0], [0.0, 0.0, -1.0, 5.0, 5.0, 0.0]])
NANS = np.array([[1.0, np.nan, 2.0, np.nan, 0.5], [np.inf, -np.inf, 0.0, 1.0, np.inf]])


@pytest.mark.parametrize("a", [TIES, NANS])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_is_stable_with_nan_largest(a, descending):
    r = tp.sort(tp.tensor(a), dim=1, descending=descending)
    key = np.where(np.isnan(a), np.inf, a)
    order = []
    for row, k in zip(a, key):                 # stable by (value, position), nan largest
        rank = sorted(range(len(row)), key=lambda i: ((int(np.isnan(row[i])), k[i])
                                                      if not descending else
                                                      (-int(np.isnan(row[i])), -k[i]), i))
        order.append(rank)
    np.testing.assert_array_equal(r.indices.numpy(), order)
    np.testing.assert_array_equal(r.values.numpy(), np.take_along_axis(a, np.array(order), 1))
    assert r.indices.dtype is tp.int64 and not r.indices.requires_grad


def test_sort_topk_and_cummax_match_torch_on_ties():
    torch = pytest.importorskip("torch")
    for a in (TIES, NANS):
        x, t = tp.tensor(a), torch.tensor(a)
        for desc in (False, True):
            mine = tp.sort(x, 1, descending=desc)
            theirs = torch.sort(t, stable=True, dim=1, descending=desc)
            np.testing.assert_array_equal(mine.indices.numpy(), theirs.indices.numpy())
        for fn in ("cummax", "cummin"):
            mine, theirs = getattr(tp, fn)(x, 1), getattr(torch, fn)(t, 1)
            np.testing.assert_array_equal(mine.indices.numpy(), theirs.indices.numpy())
            np.testing.assert_array_equal(mine.values.numpy(), theirs.values.numpy())
        np.testing.assert_array_equal(tp.median(x, 1).values.numpy(),
                                      torch.median(t, 1).values.numpy())
        assert np.array_equal(tp.median(x).numpy(), torch.median(t).numpy(), equal_nan=True)


def test_gradients_go_to_the_returned_indices():
    a = TIES.copy()
    x = tp.tensor(a, requires_grad=True)
    r = tp.topk(x, 2, dim=1)
    (g,) = tp.autograd.grad(r.values.sum(), [x])
    expected = np.zeros_like(a)
    np.put_along_axis(expected, r.indices.numpy(), 1.0, axis=1)
    np.testing.assert_array_equal(g.numpy(), expected)
    # cummax repeats an index along the line: the gradients accumulate there
    x = tp.tensor([1.0, 3.0, 2.0, 2.5], requires_grad=True)
    (g,) = tp.autograd.grad(tp.cummax(x, 0).values.sum(), [x])
    np.testing.assert_array_equal(g.numpy(), [1.0, 3.0, 0.0, 0.0])
    (g,) = tp.autograd.grad(tp.median(tp.tensor([4.0, 1.0, 3.0, 2.0]).requires_grad_()),
                            [x], allow_unused=True)
    assert g is None


def test_median_gradient_goes_to_the_lower_median():
    x = tp.tensor([4.0, 1.0, 3.0, 2.0], requires_grad=True)
    (g,) = tp.autograd.grad(tp.median(x), [x])
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.0, 0.0, 1.0])      # median 2


def test_unique_matches_numpy():
    a = np.array([[3, 1, 3], [2, 1, 1]])
    out, inv, counts = tp.unique(tp.tensor(a), return_inverse=True, return_counts=True)
    u, i, c = np.unique(a, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(out.numpy(), u)
    np.testing.assert_array_equal(inv.numpy(), i.reshape(a.shape))
    np.testing.assert_array_equal(counts.numpy(), c)
    rows = tp.unique(tp.tensor([[1.0, 2.0], [1.0, 2.0], [0.0, 1.0]]), dim=0)
    np.testing.assert_array_equal(rows.numpy(), [[0.0, 1.0], [1.0, 2.0]])
    assert not tp.unique(tp.ones(3, requires_grad=True)).requires_grad
    assert tp.unique(tp.zeros(0)).shape == (0,)


def test_errors_follow_pytorch():
    x = tp.ones(2, 3)
    with pytest.raises(RuntimeError, match="k = 4 out of range"):
        tp.topk(x, 4)
    with pytest.raises(RuntimeError, match="k = 0 out of range"):
        tp.kthvalue(x, 0)
    with pytest.raises(IndexError, match="empty"):       # (a float one is nan, as
        tp.median(tp.zeros(0, dtype=tp.int64))           # torch; tests/test_fresh_user7.py)
    with pytest.raises(IndexError, match="non-empty"):
        tp.median(tp.zeros(2, 0), 1)
    with pytest.raises(IndexError, match="sort"):
        tp.sort(x, 2)
    with pytest.raises(TypeError, match="unique"):
        tp.unique([1, 2])
    assert tp.topk(x, 0).values.shape == (2, 0)
    assert tp.sort(tp.zeros(0)).values.shape == (0,)
