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


# ---------------------------------------------------------------- .data assignment
def test_data_assignment_refuses_non_float_data_on_a_tensor_that_requires_grad():
    for lib in (torch, tp):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with pytest.raises(RuntimeError, match="must be floating point"):
            x.data = lib.tensor([1, 2])
        assert x.dtype == lib.float32 and x.requires_grad
        with pytest.raises(TypeError):
            x.data = [1.0, 2.0]
        x.data = lib.tensor([5.0, 6.0, 7.0], dtype=lib.float64)   # new shape and dtype
        assert x.shape == (3,) and x.dtype == lib.float64 and x.requires_grad
        z = lib.tensor([1, 2])                    # no grad: any dtype goes
        z.data = lib.tensor([1.5])
        assert z.dtype == lib.float32 and z.tolist() == [1.5]


def test_data_assignment_of_a_new_shape_then_backward_refuses_the_stale_grad():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    (x * 2).sum().backward()
    x.data = tp.tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError):
        (x * 2).sum().backward()


# ---------------------------------------------------------------- == with foreign objects
@pytest.mark.parametrize("other", [None, "a", [1.0, 2.0], (1.0, 5.0), object()])
def test_eq_ne_with_a_non_operand_fall_back_to_identity_like_pytorch(other):
    for lib in (torch, tp):
        t = lib.tensor([1.0, 2.0])
        assert (t == other) is False and (other == t) is False
        assert (t != other) is True and (other != t) is True
    t = tp.tensor([1.0, 2.0])
    assert [None, t].index(t) == 1 and t in [None, "a", t]
    assert {t: 1}[t] == 1                   # still hashable by identity


def test_eq_with_operands_still_compares_elementwise():
    t = tp.tensor([1.0, 2.0])
    assert (t == 1.0).tolist() == [True, False]
    assert (t == np.array([1.0, 0.0])).tolist() == [True, False]
    assert (t != tp.tensor([1.0, 0.0])).tolist() == [False, True]
    assert tp.tensor(1.0) in [None, 1.0]     # 0-d: the comparison is a bool
    with pytest.raises(TypeError, match="lt"):
        t < None                           # noqa: B015 -- ordering has no fallback
    with pytest.raises(TypeError):
        t == np.array(["a"])                # noqa: B015 -- an ndarray is an operand


# ---------------------------------------------------------------- in
@pytest.mark.parametrize("element", [2, 5, 2.0, True, 0, "t[1.,2.]", "t[[3.,4.]]", "t7"])
def test_contains_matches_pytorch(element):
    def el(lib):
        if isinstance(element, str):
            return lib.tensor(eval(element[1:])) if element != "t7" else lib.tensor(7.0)
        return element
    want = el(torch) in torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert (el(tp) in tp.tensor([[1.0, 2.0], [3.0, 4.0]])) is want


@pytest.mark.parametrize("element", ["a", None, [1.0, 2.0]])
def test_contains_refuses_other_types_like_pytorch(element):
    for lib in (torch, tp):
        with pytest.raises(RuntimeError, match="only supports Tensor or scalar"):
            element in lib.tensor([[1.0, 2.0], [3.0, 4.0]])   # noqa: B015


def test_contains_of_a_tensor_that_does_not_broadcast_raises():
    for lib in (torch, tp):
        with pytest.raises(RuntimeError, match="size"):
            lib.tensor([1.0, 2.0, 3.0]) in lib.tensor([[1.0, 2.0], [3.0, 4.0]])  # noqa: B015
