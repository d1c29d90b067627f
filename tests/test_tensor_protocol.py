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


# ---------------------------------------------------------------- to()
@pytest.mark.parametrize("call", [
    lambda lib, x: x.to(lib.tensor([1, 2, 3])),
    lambda lib, x: x.to(lib.tensor([1.0], dtype=lib.float64)),
    lambda lib, x: x.to("cpu", lib.float64),
    lambda lib, x: x.to(device="cpu", dtype=lib.int32),
    lambda lib, x: x.to(None),
    lambda lib, x: x.to("cpu"),
    lambda lib, x: x.to(lib.float64, False, True),
])
def test_to_forms_match_pytorch(call):
    want = call(torch, torch.tensor([1.5, -2.0]))
    got = call(tp, tp.tensor([1.5, -2.0]))
    assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
    assert got.tolist() == want.tolist()


def test_to_another_tensor_is_differentiable_between_floats():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    x.to(tp.zeros(1, dtype=tp.float64)).sum().backward()
    assert x.grad.dtype == tp.float32 and x.grad.tolist() == [1.0, 1.0]


def test_to_bad_arguments_name_to_and_raise_what_pytorch_raises():
    x = tp.tensor([1.0])
    with pytest.raises(RuntimeError, match=r"to\(\).*'cpu'.*got 'a'"):
        x.to("a")                           # a device string, to PyTorch too
    with pytest.raises(RuntimeError):
        torch.tensor([1.0]).to("a")
    with pytest.raises(TypeError, match=r"to\(\): expected a dtype.*got 5"):
        x.to(5)
    with pytest.raises(TypeError, match=r"to\(\): expected a dtype.*got <object"):
        x.to(object())
    for args in ((tp.ones(1), tp.float64), ("cpu", "cpu"), (tp.float64, False, True, True)):
        with pytest.raises(TypeError, match=r"to\(\)"):
            x.to(*args)
        with pytest.raises(TypeError):
            torch.ones(1).to(*[torch.ones(1) if isinstance(a, tp.Tensor) else
                               torch.float64 if a is tp.float64 else a for a in args])


def test_dtype_errors_name_the_function_given_the_dtype():
    for name in ("a", "float16x"):
        with pytest.raises(TypeError, match=rf"set_default_dtype\(\): .*got '{name}'"):
            tp.set_default_dtype(name)
        with pytest.raises(TypeError):
            torch.set_default_dtype(name)
    assert tp.get_default_dtype() is tp.float32
    with pytest.raises(TypeError, match=r"zeros\(\): .*a Tensor \(pass tensor.dtype\)"):
        tp.zeros(2, dtype=tp.tensor([1]))
    assert tp.tensor([1.0]).to("f8").dtype is tp.float64     # numpy names still work


# ---------------------------------------------------------------- casts that cannot hold
@pytest.mark.parametrize("values, src, dst", [
    ([float("nan")], tp.float32, tp.int64), ([float("inf")], tp.float64, tp.int32),
    ([-float("inf")], tp.float32, tp.int64), ([3e9], tp.float32, tp.int32),
    ([1e19], tp.float64, tp.int64), ([2 ** 40], tp.int64, tp.int32),
    ([-2 ** 31 - 1], tp.int64, tp.int32),
])
def test_to_integer_refuses_values_it_cannot_hold_without_a_numpy_warning(values, src, dst):
    # PyTorch writes undefined (float) or wrapped (int) values silently; tensorplay
    # raises, as copy_ and tensor(..., dtype=) already do (test_boundary.py)
    t = tp.tensor(values, dtype=src)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeError, match=r"to\(\): value .* cannot be converted to "
                                               r"type tensorplay.int"):
            t.to(dst)


def test_to_integer_truncates_in_range_values_like_pytorch():
    vals = [-2147483648.0, 2147483647.0, -1.9, 1.9, 0.0]
    for dst, tdst in ((tp.int32, torch.int32), (tp.int64, torch.int64)):
        got = tp.tensor(vals, dtype=tp.float64).to(dst).tolist()
        assert got == torch.tensor(vals, dtype=torch.float64).to(tdst).tolist()
    assert tp.tensor([float("nan"), 0.0]).bool().tolist() == [True, False]


def test_to_float32_of_huge_float64_is_inf_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = tp.tensor([1e300, -1e300], dtype=tp.float64).float().tolist()
    want = torch.tensor([1e300, -1e300], dtype=torch.float64).float().tolist()
    assert got == want == [float("inf"), float("-inf")]


# ---------------------------------------------------------------- tensor() of Tensors
def _elements(lib):
    w = lib.tensor([1.5, -2.0], requires_grad=True)
    i32 = lib.tensor(3, dtype=lib.int32)
    f64 = lib.tensor(0.25, dtype=lib.float64)
    return {
        "grad elements": [w[0], w[1]],
        "grad elements, nested": [[w[0]], [w[1] * 2]],
        "0-d int32s": [i32, i32],
        "0-d int32 and an int": [i32, 5],
        "0-d int32 and a float": [i32, 2.5],
        "0-d float64 and a float": (f64, 2.5),
        "0-d bool and an int": [lib.tensor(True), 1],
        "one-element 1-d and a float": [lib.ones(1), 2.0],
        "one-element 2-d tensors": [lib.ones(1, 1), lib.zeros(1, 1)],
        "numpy float64 scalar": [np.float64(1.0), 2.5],
        "numpy int32 scalar": [np.int32(1), 2],
    }


@pytest.mark.parametrize("case", list(_elements(tp)))
def test_tensor_of_tensor_elements_matches_pytorch(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # PyTorch warns on a requires-grad scalar
        want = torch.tensor(_elements(torch)[case])
    got = tp.tensor(_elements(tp)[case])
    assert got.dtype.name == str(want.dtype).split(".")[1]
    assert got.shape == tuple(want.shape) and got.tolist() == want.tolist()
    assert not got.requires_grad and got.grad_fn is None


def test_tensor_of_same_shaped_tensors_stacks_them():
    w = tp.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    t = tp.tensor([w[0], w[1] * 10])         # PyTorch refuses; tensorplay stacks
    assert t.tolist() == [[1.0, 2.0], [30.0, 40.0]] and not t.requires_grad
    with pytest.raises(ValueError, match=r"tensor\(\): could not build"):
        tp.tensor([tp.ones(2), tp.ones(3)])


# ---------------------------------------------------------------- legacy Tensor(...)
@pytest.mark.parametrize("args", [(), (2, 3), (2,), (0,), "size", ((2, 3),), ([2, 3],),
                                  ([[1, 2], [3, 4]],), ([True, False],), "ndarray",
                                  "int tensor"])
def test_legacy_constructor_matches_pytorch(args):
    def build(lib):
        if args == "size":
            return lib.Tensor(lib.Size([2, 3]))
        if args == "ndarray":
            return lib.Tensor(np.arange(3, dtype=np.int64))
        if args == "int tensor":
            return lib.Tensor(lib.tensor([1, 2]))
        return lib.Tensor(*args)
    want, got = build(torch), build(tp)
    assert got.shape == tuple(want.shape)
    assert got.dtype.name == str(want.dtype).split(".")[1]
    if args in ((2, 3), (2,), "size"):
        assert not got.numpy().any()        # PyTorch leaves it uninitialised
    else:
        assert got.tolist() == want.tolist()


@pytest.mark.parametrize("args, exc", [((2.5,), TypeError), ((2, 3.0), TypeError),
                                       ((-1,), RuntimeError), ((None,), TypeError)])
def test_legacy_constructor_bad_arguments_raise_what_pytorch_raises(args, exc):
    with pytest.raises(exc):
        torch.Tensor(*args)
    with pytest.raises(exc, match=r"Tensor\(\)"):
        tp.Tensor(*args)


def test_legacy_constructor_keywords():
    t = tp.Tensor(2, dtype=tp.int64)
    assert t.dtype is tp.int64 and t.tolist() == [0, 0]
    t = tp.Tensor([1, 2], requires_grad=True)
    assert t.dtype is tp.float32 and t.requires_grad and t.is_leaf


def test_bare_new_is_a_valid_empty_tensor_like_pytorch():
    want = torch.Tensor.__new__(torch.Tensor)
    t = tp.Tensor.__new__(tp.Tensor)
    assert t.shape == tuple(want.shape) == (0,) and t.dtype is tp.float32
    assert repr(t) == "tensor([])" and t.grad_fn is None and not t.requires_grad
    assert (t + 1).shape == (0,) and t.sum().item() == 0.0
    t.requires_grad_()
    t.sum().backward()
    assert t.grad.shape == (0,)


# ---------------------------------------------------------------- iteration
@pytest.mark.parametrize("n", [1, 5, 16, 17, 100, 257])
def test_iteration_rows_and_gradients_match_pytorch(n):
    a = np.random.default_rng(n).standard_normal((n, 3))
    grads, rows = [], []
    for lib in (torch, tp):
        x = lib.tensor(a, requires_grad=True)
        rs = list(x)
        rows.append([r.tolist() for r in rs])
        w = lib.arange(n, dtype=lib.float64)
        loss = (lib.stack([r * r for r in rs]).sum(dim=1) * w).sum() + rs[-1].sum()
        loss.backward()
        grads.append(x.grad.tolist())
    assert rows[1] == rows[0] == a.tolist()
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)


def test_iteration_rows_are_views_with_history():
    x = tp.randn(40, 2, requires_grad=True)
    rows = list(x)
    assert all(r.grad_fn is not None and r.shape == (2,) for r in rows)
    with tp.no_grad():
        assert all(r.grad_fn is None for r in x)
    y = tp.randn(40, 2)
    r = list(y)[30]
    with tp.no_grad():
        y.mul_(2)
    assert r.tolist() == y[30].tolist()      # a view: sees the write


def test_iteration_backward_allocates_n_log_n_not_n_squared(monkeypatch):
    # each row's VJP (getitem_backward) allocates the piece it was taken from; one
    # row of a plain x[i] scatters into zeros of all n rows: n^2 rows in all
    from tensorplay._ops.registry import REGISTRY
    op = REGISTRY["getitem_backward"]
    total = [0]
    forward = op.forward

    def counting(g, shape, key):
        out = forward(g, shape, key)
        total[0] += out.shape[0] if out.ndim else 1
        return out
    monkeypatch.setattr(op, "forward", counting)
    n = 4096
    x = tp.randn(n, 2, requires_grad=True)
    tp.stack(list(x)).sum().backward()
    assert x.grad.numpy().min() == x.grad.numpy().max() == 1.0
    assert total[0] < n * (16 + 2 * 12)     # n^2 = 1024 n before


def test_legacy_constructor_work_is_in_new_and_init_cannot_swap_storage():
    want = torch.Tensor.__new__(torch.Tensor, 2, 3)
    assert tp.Tensor.__new__(tp.Tensor, 2, 3).shape == tuple(want.shape)
    assert tp.Tensor.__new__(tp.Tensor, [1, 2]).tolist() == [1.0, 2.0]
    for lib in (torch, tp):
        x = lib.tensor([1.0], requires_grad=True)
        y = x * 2
        y.__init__([5.0, 6.0])              # a no-op, as in PyTorch
        assert y.tolist() == [2.0] and y.grad_fn is not None


# ---------------------------------------------------------------- grad / requires_grad setters
def test_grad_cannot_be_the_tensor_itself_like_pytorch():
    for lib in (torch, tp):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with pytest.raises(RuntimeError, match="its own grad"):
            x.grad = x
        assert x.grad is None


@pytest.mark.parametrize("value", [None, 2, 1.0, "yes"])
def test_requires_grad_must_be_a_bool_like_pytorch(value):
    for lib in (torch, tp):
        x = lib.tensor([1.0, 2.0])
        with pytest.raises(RuntimeError, match="requires_grad must be a bool"):
            x.requires_grad = value
        assert x.requires_grad is False
    x = tp.tensor([1.0])
    x.requires_grad = np.bool_(True)
    assert x.requires_grad is True
