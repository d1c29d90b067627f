"""In-place ops in the autograd graph (tensorplay/autograd/_inplace.py).

Every gradient is checked against the same computation written out of place (and
against PyTorch when it is installed): on non-leaves, through views and views of
views, with the base or another view used afterwards, second order, forward mode;
then the errors: leaves, views of leaves, saved tensors modified, shape and dtype
rules."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay.autograd import forward_ad, gradcheck, gradgradcheck

try:
    import torch
except ImportError:         # the PyTorch comparisons are skipped
    torch = None


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _grads(fn, arrays, lib=tp):
    """``(value, grads)`` of ``fn(*leaves)`` against a fixed random cotangent."""
    leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*leaves)
    g = _rand(*tuple(out.shape), seed=7)
    out.backward(lib.tensor(g))
    return out.detach().numpy(), [t.grad.numpy() if t.grad is not None else None
                                  for t in leaves]


def _same(fn_inplace, fn_outofplace, arrays, torch_fn=None):
    got = _grads(fn_inplace, arrays)
    want = _grads(fn_outofplace, arrays)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-12)
    for a, b in zip(got[1], want[1]):
        if a is None or b is None:          # an input the function does not use
            assert a is None and b is None
            continue
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    if torch is not None:
        ref = _grads(torch_fn or fn_inplace, arrays, lib=torch)
        np.testing.assert_allclose(got[0], ref[0], rtol=1e-10, atol=1e-12)
        for a, b in zip(got[1], ref[1]):
            if a is None or b is None:
                assert a is None and b is None
            else:
                np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- non-leaf tensors
CASES = {
    "mul_": (lambda a, b: (a * 2).mul_(b), lambda a, b: a * 2 * b),
    "add_alpha": (lambda a, b: (a * 2).add_(b, alpha=3), lambda a, b: a * 2 + 3 * b),
    "sub_": (lambda a, b: (a * 2).sub_(b), lambda a, b: a * 2 - b),
    "div_": (lambda a, b: (a * 2).div_(b), lambda a, b: a * 2 / b),
    "pow_": (lambda a, b: (a.exp() * b).pow_(2), lambda a, b: (a.exp() * b) ** 2),
    "exp_": (lambda a, b: (a * b).exp_(), lambda a, b: (a * b).exp()),
    "tanh_": (lambda a, b: (a + b).tanh_(), lambda a, b: (a + b).tanh()),
    "iadd": (lambda a, b: _iadd(a * 1, b), lambda a, b: a + b),
    "imul_twice": (lambda a, b: _imul(_imul(a * 1, b), b), lambda a, b: a * b * b),
    "self_operand": (lambda a, b: _self_mul(a + b), lambda a, b: (a + b) * (a + b)),
    "broadcast_operand": (lambda a, b: (a * 1).mul_(b[0]), lambda a, b: a * b[0]),
}


def _iadd(x, y):
    x += y
    return x


def _imul(x, y):
    x *= y
    return x


def _self_mul(x):
    return x.mul_(x)


@pytest.mark.parametrize("case", CASES)
def test_inplace_on_a_non_leaf_differentiates_as_out_of_place(case):
    inplace, outofplace = CASES[case]
    arrays = [_rand(3, 4), _rand(3, 4, seed=1) + 3.0]
    if case == "self_operand":
        # departure from PyTorch, which raises here ("output 0 of Mul ... is at
        # version 1"): mul_ runs on an alias whose old values are kept when the graph
        # saved them, so x.mul_(x) differentiates as x * x
        got, want = _grads(inplace, arrays), _grads(outofplace, arrays)
        np.testing.assert_allclose(got[1][0], want[1][0], rtol=1e-12)
        return
    _same(inplace, outofplace, arrays)


def test_inplace_records_the_ops_node_and_bumps_the_version():
    a = tp.tensor(_rand(3), requires_grad=True)
    x = a * 2
    v0 = x._version[0]
    assert x.mul_(a) is x
    assert x.grad_fn.name() == "MulBackward0" and x._version[0] == v0 + 1
    x.zero_()
    assert x.requires_grad and x.grad_fn.name() == "CopySlices"


def test_copy_is_differentiable_in_src_and_cuts_the_old_value():
    def f(a, b):
        x = a * 3
        x.copy_(b[0])               # broadcast src: (4,) into (3, 4)
        return x * a
    _same(f, lambda a, b: b[0].expand(3, 4) * a, [_rand(3, 4), _rand(3, 4, seed=1)])


def test_copy_from_a_leaf_into_a_tensor_without_history():
    def f(a, b):
        x = tp.zeros(3, 4, dtype=tp.float64) if isinstance(a, tp.Tensor) else \
            torch.zeros(3, 4, dtype=torch.float64)
        x.copy_(a)
        return x * b
    _same(f, lambda a, b: a * b, [_rand(3, 4), _rand(3, 4, seed=1)])


def test_fill_and_zero_give_the_old_value_a_zero_gradient():
    def f(a, b):
        x = a * b
        x.fill_(2.0)
        y = a * b
        y.zero_()
        return x * a + y
    got = _grads(f, [_rand(3), _rand(3, seed=1)])
    want = _grads(lambda a, b: 2.0 * a + 0 * b, [_rand(3), _rand(3, seed=1)])
    np.testing.assert_allclose(got[0], want[0])
    np.testing.assert_allclose(got[1][0], want[1][0])
    np.testing.assert_array_equal(got[1][1], np.zeros(3))


def test_fill_with_a_0d_tensor_is_differentiable_in_the_value():
    def f(a, b):
        x = a * 1
        x.fill_(b.sum())
        return x * a
    _same(f, lambda a, b: b.sum().expand(3) * a, [_rand(3), _rand(2, seed=1)])


def test_no_grad_inplace_on_a_non_leaf_keeps_its_history():
    a = tp.tensor(_rand(3), requires_grad=True)
    x = a * 2
    with tp.no_grad():
        x.add_(1.0)
    x.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.full(3, 2.0))


# ---------------------------------------------------------------- views
VIEW_CASES = {
    "slice_mul": lambda a, b: _then(a, lambda x: x[1:3].mul_(2)),
    "row_add": lambda a, b: _then(a, lambda x: x[0].add_(1)),
    "row_mul_by_grad": lambda a, b: _then(a, lambda x: x[1].mul_(b[0])),
    "view_of_view": lambda a, b: _then(a, lambda x: x[1:][0].mul_(b[1])),
    "transposed": lambda a, b: _then(a, lambda x: x.t()[2].mul_(b[0, :3])),
    "transposed_slice": lambda a, b: _then(a, lambda x: x.t()[1:3, 1:].exp_()),
    "reshaped": lambda a, b: _then(a, lambda x: x.view(12)[2:7].mul_(3)),
    "unsqueezed": lambda a, b: _then(a, lambda x: x.unsqueeze(0)[0, 1].copy_(b[2])),
    "strided": lambda a, b: _then(a, lambda x: x[:, ::2].mul_(b[:, ::2])),
    "whole": lambda a, b: _then(a, lambda x: x[...].mul_(b)),
    "copy_into_zeros": lambda a, b: _into_zeros(a, b),
}


def _then(a, write):
    x = a * 1.5
    write(x)
    return x * x


def _into_zeros(a, b):
    lib = tp if isinstance(a, tp.Tensor) else torch
    buf = lib.zeros(3, 4, dtype=a.dtype)
    buf[0].copy_(a[0])
    buf[2].copy_(b[1] * a[1])
    return buf * buf


def _outofplace(a, b, case):
    """The view cases written out of place (stack and index arithmetic)."""
    x = a * 1.5
    rows = [x[i] for i in range(3)]
    if case == "slice_mul":
        rows[1], rows[2] = rows[1] * 2, rows[2] * 2
    elif case == "row_add":
        rows[0] = rows[0] + 1
    elif case == "row_mul_by_grad":
        rows[1] = rows[1] * b[0]
    elif case == "view_of_view":
        rows[1] = rows[1] * b[1]
    elif case in ("transposed", "transposed_slice", "reshaped", "unsqueezed", "strided",
                  "whole", "copy_into_zeros"):
        return None
    y = tp.stack(rows)
    return y * y


@pytest.mark.parametrize("case", VIEW_CASES)
def test_inplace_through_a_view_rebases_the_base(case):
    fn = VIEW_CASES[case]
    arrays = [_rand(3, 4), _rand(3, 4, seed=1)]
    if _outofplace(tp.tensor(arrays[0]), tp.tensor(arrays[1]), case) is not None:
        _same(fn, lambda a, b: _outofplace(a, b, case), arrays, torch_fn=fn)
    uses_b = case in ("row_mul_by_grad", "view_of_view", "transposed", "unsqueezed",
                      "strided", "whole", "copy_into_zeros")
    assert gradcheck(fn, (tp.tensor(arrays[0], requires_grad=True),
                          tp.tensor(arrays[1], requires_grad=uses_b)))
    if torch is not None:
        _same(fn, fn, arrays)


def test_base_gets_copyslices_and_the_view_a_view_node():
    a = tp.tensor(_rand(3, 4), requires_grad=True)
    x = a * 1
    v = x[0]
    v.add_(1)
    assert x.grad_fn.name() == "CopySlices"
    assert v.grad_fn.name() == "GetitemBackward0" and v.grad_fn.next_functions[0][0] is \
        x.grad_fn
    assert x._version is v._version


def test_other_views_see_the_new_history():
    # w was taken before the write through v; it overlaps v's region
    def f(a, b):
        x = a * 1
        w = x[:, 1]
        v = x[0]
        v.mul_(b[0])
        return w * b[1, :3]
    _same(f, f, [_rand(3, 4), _rand(3, 4, seed=1)])
    a = tp.tensor(_rand(3, 4), requires_grad=True)
    b = tp.tensor(_rand(3, 4, seed=1), requires_grad=True)
    gradcheck(f, (a, b))


def test_a_view_sees_the_history_of_a_write_to_its_base():
    def f(a, b):
        x = a * 1
        v = x[1]
        x.mul_(b)
        return v * v
    _same(f, f, [_rand(3, 4), _rand(3, 4, seed=1)])


def test_second_order_through_inplace_ops():
    def f(a, b):
        x = a * b
        x[1:].mul_(a[:2])
        x.t()[0].exp_()
        return (x * x).sum(dim=1)
    inputs = (tp.tensor(_rand(3, 4), requires_grad=True),
              tp.tensor(_rand(3, 4, seed=1), requires_grad=True))
    assert gradcheck(f, inputs)
    assert gradgradcheck(f, inputs)


def test_forward_mode_through_inplace_ops_and_views():
    def f(a):
        x = a * 2
        x.mul_(a)
        x[1:3].exp_()
        x.t()[0].mul_(3)
        return x * 1
    p, t = _rand(3, 4), _rand(3, 4, seed=1)
    _, want = tp.autograd.functional.jvp(f, tp.tensor(p), tp.tensor(t), mode="reversed")
    _, got = tp.autograd.functional.jvp(f, tp.tensor(p), tp.tensor(t), mode="forward")
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    with forward_ad.dual_level():
        d = forward_ad.make_dual(tp.tensor(p) * 1, tp.tensor(t))
        x = d * 1
        v = x[0]
        w = x[:, 0]
        v.mul_(2.0)
        np.testing.assert_allclose(forward_ad.unpack_dual(x).tangent.numpy()[0], 2 * t[0])
        np.testing.assert_allclose(forward_ad.unpack_dual(w).tangent.numpy(),
                                   np.r_[2 * t[0, 0], t[1:, 0]])
        x.fill_(1.0)
        assert forward_ad.unpack_dual(x).tangent is None
    assert gradcheck(f, (tp.tensor(p, requires_grad=True),), check_forward_ad=True)


# ---------------------------------------------------------------- errors
def test_leaf_that_requires_grad_raises_outside_no_grad():
    a = tp.tensor([1.0, 2.0], requires_grad=True)
    for write in (lambda: a.add_(1), lambda: a.exp_(), lambda: a.zero_(),
                  lambda: a.copy_(tp.ones(2)), lambda: a[0].mul_(2)):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            write()
    np.testing.assert_array_equal(a.detach().numpy(), [1.0, 2.0])
    v0 = a._version[0]
    with tp.no_grad():
        a.mul_(3)
        a[0].add_(1)
    np.testing.assert_array_equal(a.detach().numpy(), [4.0, 6.0])
    assert a._version[0] == v0 + 2 and a.is_leaf and a.requires_grad


@pytest.mark.parametrize("case", ["input", "output", "view_saved", "base_saved"])
def test_modified_saved_tensor_raises_naming_the_op(case):
    a = tp.tensor(_rand(3, 4), requires_grad=True)
    x = a * 1
    if case == "input":             # mul saves its inputs; then x is changed
        y = x * a
        x.add_(1)
    elif case == "output":          # exp saves its output
        y = x.exp()
        y.mul_(2)
    elif case == "view_saved":      # a saved view, its base changed
        v = x[0]
        y = v * a[0]
        x.sub_(1)
    else:                           # a saved base, changed through a view
        y = x * a
        x[1:].zero_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation") as e:
        y.sum().backward()
    assert "Backward0" in str(e.value) and "_()" in str(e.value)


def test_shape_and_dtype_rules_name_the_inplace_op():
    with pytest.raises(RuntimeError, match=r"add_\(\): output with shape \[3\] doesn't match "
                                           r"the broadcast shape \[2, 3\]"):
        tp.zeros(3).add_(tp.ones(2, 3))
    with pytest.raises(RuntimeError, match=r"add_\(\): result type tensorplay.float32 can't be cast"):
        tp.zeros(3, dtype=tp.int64).add_(1.5)
    with pytest.raises(RuntimeError, match=r"exp_\(\)"):
        tp.zeros(3, dtype=tp.int64).exp_()
    x = tp.zeros(3)
    x.add_(tp.ones(3, dtype=tp.float64))
    assert x.dtype is tp.float32 and x.tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(TypeError, match=r"pow_\(\)"):
        tp.ones(3).pow_("a")
    y = tp.ones(3)
    with pytest.raises(RuntimeError):
        y.mul_(tp.ones(4))
    assert y.tolist() == [1.0, 1.0, 1.0] and y._version[0] == 0


def test_family_inplace_names_and_dunders_are_bound():
    from tensorplay import _ops
    for name in _ops.INPLACE:
        assert callable(getattr(tp.Tensor, name + "_"))
    for name in ("exp_", "log_", "sqrt_", "tanh_", "sigmoid_", "relu_", "neg_", "pow_"):
        assert getattr(tp.Tensor, name).__name__ == name
    x = tp.tensor([1.0, 2.0])
    x **= 2
    assert x.tolist() == [1.0, 4.0]
    assert not hasattr(tp.Tensor, "__imatmul__")


def test_tensor_apply_inplace_is_the_mechanism():
    a = tp.tensor(_rand(4), requires_grad=True)
    x = a * 1
    x[1:3]._apply_inplace("custom_", (a[1:3] * 5))
    x.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [1, 5, 5, 1])
    with pytest.raises(RuntimeError, match=r"custom_\(\): output with shape"):
        x[0:2]._apply_inplace("custom_", tp.ones(3))
