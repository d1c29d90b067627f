"""Tensor's Python protocol against PyTorch: read-only attributes, ``.data``
assignment, comparisons with foreign objects, ``in``, ``to()``, the legacy
``Tensor(...)`` constructor and iteration.  Each test runs the same calls on
torch (when installed) and checks that tensorplay does what it does."""
import warnings

import numpy as np
import pytest

import tensorplay as tp

torch = pytest.importorskip("torch")


# ---------------------------------------------------------------- grad_fn is read-only
@pytest.mark.parametrize("value", [None, 5, "other"])
def test_grad_fn_is_not_writable_like_pytorch(value):
    for lib in (torch, tp):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        with pytest.raises(AttributeError, match="attribute 'grad_fn' of .* not writable"):
            y.grad_fn = value if value != "other" else (x * 3).grad_fn
        assert y.grad_fn is not None and not y.is_leaf
        with pytest.raises(AttributeError):
            x.grad_fn = y.grad_fn          # would splice y's graph under the leaf x
        assert x.grad_fn is None and x.is_leaf
    # the graph is intact: d(sum(2x))/dx = 2, and splicing did not double it
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2)
    with pytest.raises(AttributeError):
        y.grad_fn = None
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
    assert repr(y) == "tensor([2., 4.], grad_fn=<MulBackward0>)"


def test_grad_fn_cannot_be_deleted():
    y = tp.tensor([1.0], requires_grad=True) * 2
    with pytest.raises(AttributeError, match="grad_fn"):
        del y.grad_fn
    assert y.grad_fn.name() == "MulBackward0"


def test_detach_in_place_still_clears_grad_fn():
    y = tp.tensor([1.0], requires_grad=True) * 2
    y.detach_()
    assert y.grad_fn is None and y.is_leaf and not y.requires_grad
