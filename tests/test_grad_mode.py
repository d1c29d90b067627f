"""Grad modes: ``no_grad``, ``enable_grad``, ``set_grad_enabled`` and
``inference_mode`` as context managers and decorators (functions, generator
functions -- the mode in force at every resumption, ``close()`` included -- and
classes), and inference mode's rules for inference tensors (torch's messages).

Values are closed forms; behaviour is torch.autograd's, compared against torch
itself where it is installed.
"""
import re
import threading

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import autograd
from tensorplay.autograd import forward_ad

F64 = tp.float64

MODES = {
    "no_grad": (lambda: tp.no_grad(), False),
    "enable_grad": (lambda: tp.enable_grad(), True),
    "set_grad_enabled_false": (lambda: tp.set_grad_enabled(False), False),
    "set_grad_enabled_true": (lambda: tp.set_grad_enabled(True), True),
    "inference_mode": (lambda: tp.inference_mode(), False),
}


def _outside(name):
    """A grad mode to decorate under, opposite to the decorator's."""
    return tp.no_grad() if MODES[name][1] else tp.enable_grad()


def _state():
    return tp.is_grad_enabled(), tp.is_inference_mode_enabled()


def _want(name):
    return MODES[name][1], name == "inference_mode"


# ================================================================ decorators
@pytest.mark.parametrize("name", sorted(MODES))
def test_decorated_function(name):
    make, _ = MODES[name]
    with _outside(name):
        before = _state()

        @make()
        def f(a, b=2):
            """doc"""
            return _state(), a + b
        assert _state() == before                  # decorating changes nothing
        assert f(1, b=3) == (_want(name), 4)
        assert _state() == before
        assert f.__name__ == "f" and f.__doc__ == "doc"


@pytest.mark.parametrize("name", ["no_grad", "enable_grad", "inference_mode"])
def test_decorator_without_parentheses(name):
    deco = {"no_grad": tp.no_grad, "enable_grad": tp.enable_grad,
            "inference_mode": tp.inference_mode}[name]
    with _outside(name):
        @deco
        def f():
            return _state()
        assert f() == _want(name)


def test_inference_mode_false_decorator_inside_inference_mode():
    @tp.inference_mode(False)
    def f():
        return _state()
    with tp.inference_mode():
        assert f() == (True, False)             # PyTorch: InferenceMode(False) enables grad
        assert _state() == (False, True)


@pytest.mark.parametrize("name", sorted(MODES))
def test_decorated_generator_mode_at_every_resumption(name):
    make, _ = MODES[name]
    seen = []

    @make()
    def gen():
        try:
            got = yield _state()
            seen.append(("sent", got, _state()))
            yield _state()
            yield _state()
        except GeneratorExit:
            seen.append(("exit", _state()))
            raise

    with _outside(name):
        outer = _state()
        g = gen()
        assert next(g) == _want(name)
        assert _state() == outer                 # the caller's mode between resumptions
        assert g.send("hi") == _want(name)
        assert _state() == outer
        g.close()                                # GeneratorExit handled in the mode
        assert _state() == outer
    assert seen == [("sent", "hi", _want(name)), ("exit", _want(name))]


@pytest.mark.parametrize("name", sorted(MODES))
def test_decorated_generator_throw_and_return_value(name):
    make, _ = MODES[name]

    @make()
    def gen():
        try:
            yield 1
        except ValueError:
            yield ("caught", _state())
        return "done"

    g = gen()
    next(g)
    assert g.throw(ValueError("x")) == ("caught", _want(name))
    with pytest.raises(StopIteration) as stop:
        next(g)
    assert stop.value.value == "done"


@pytest.mark.parametrize("name", sorted(MODES))
def test_decorated_class_is_pytorchs_deprecated_constructor(name):
    make, _ = MODES[name]
    with _outside(name):
        with pytest.warns(FutureWarning, match="Decorating classes is deprecated"):
            @make()
            class C:
                def __init__(self):
                    self.init = _state()

                def method(self):
                    return _state()
        c = C()
        assert c.init == _want(name)            # only construction runs in the mode
        assert c.method() == _state()
        assert not isinstance(C, type)          # the name is now a function


def test_class_decoration_matches_torch():
    torch = pytest.importorskip("torch")
    with pytest.warns(FutureWarning):
        @torch.no_grad()
        class T:
            def __init__(self):
                self.g = torch.is_grad_enabled()
    assert T().g is False and not isinstance(T, type)


def test_decorating_something_else_raises():
    with pytest.raises(TypeError, match="takes a function"):
        tp.no_grad()(3)
    with pytest.raises(TypeError, match="inference_mode\\(\\): mode must be a bool"):
        tp.inference_mode(1)


def test_set_grad_enabled_call_form_and_repr():
    prev = tp.set_grad_enabled(False)
    try:
        assert not tp.is_grad_enabled()
        assert repr(prev).endswith("set_grad_enabled(mode=False)")
    finally:
        tp.set_grad_enabled(True)
    assert tp.is_grad_enabled()
    with tp.set_grad_enabled(False):
        assert not tp.is_grad_enabled()
    assert tp.is_grad_enabled()


def test_modes_are_restored_after_an_exception():
    for name, (make, _) in MODES.items():
        with pytest.raises(KeyError):
            with make():
                raise KeyError(name)
        assert _state() == (True, False), name


# ================================================================ inference mode
def test_inference_mode_records_nothing():
    x = tp.ones(3, dtype=F64, requires_grad=True)
    with tp.inference_mode():
        assert _state() == (False, True)
        assert tp.autograd.is_inference_mode_enabled()
        y = x * x
        with tp.enable_grad():                 # grad mode on, still no graph (PyTorch)
            assert tp.is_grad_enabled()
            z = x * 2
    assert _state() == (True, False)
    for t in (y, z):
        assert not t.requires_grad and t.grad_fn is None and t.is_inference()
    np.testing.assert_array_equal(y.numpy(), np.ones(3))


def test_inference_tensors_and_normal_tensors_inside():
    n = tp.zeros(3, dtype=F64)
    with tp.inference_mode():
        made = {"op": n + 1, "zeros": tp.zeros(2), "tensor": tp.tensor([1.0]),
                "randn": tp.randn(2), "from_numpy": tp.from_numpy(np.ones(2)),
                "randint": tp.randint(0, 3, (2,))}
        v = n[1:]                           # a view of a normal tensor stays normal
        v2 = made["op"][1:]                 # a view of an inference tensor is one
        n.add_(1)                           # normal tensors keep their version counter
        made["op"].mul_(3)                  # inference tensors: in-place fine, no counter
    assert all(t.is_inference() for t in made.values()), made
    assert tp.is_inference(made["op"]) and not tp.is_inference(n)
    assert not v.is_inference() and v2.is_inference() and not n.is_inference()
    assert n._version[0] == 1
    np.testing.assert_array_equal(made["op"].numpy(), [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(v.numpy(), [1.0, 1.0])
    assert made["op"].detach().is_inference() and not made["op"].clone().is_inference()


SAVED_MSG = "Inference tensors cannot be saved for backward"
INPLACE_MSG = "Inplace update to inference tensor outside InferenceMode is not allowed"


def test_inference_tensor_cannot_be_saved_for_backward():
    x = tp.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    with tp.inference_mode():
        z = tp.tensor([3.0, 4.0], dtype=F64) * 1
    with pytest.raises(RuntimeError, match=SAVED_MSG) as info:
        z * x                           # mul saves both inputs
    assert "MulBackward0" in str(info.value)
    with pytest.raises(RuntimeError, match=SAVED_MSG):
        x * z
    # an op that saves nothing may use it: d(sum(z + 2x))/dx = 2
    (z + 2 * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
    # and a clone is a normal tensor: d(sum(z' * x))/dx = z
    x.grad = None
    (z.clone() * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])
    # nothing recorded: no grad mode, no error
    with tp.no_grad():
        np.testing.assert_array_equal((z * x).numpy(), [3.0, 8.0])


@pytest.mark.parametrize("write", [
    lambda z: z.add_(1), lambda z: z.mul_(2), lambda z: z.__setitem__(0, 5.0),
    lambda z: z.fill_(1.0), lambda z: z.zero_(), lambda z: z.copy_(tp.ones(3)),
    lambda z: z[1:].add_(1), lambda z: z.exp_()],
    ids=["add_", "mul_", "setitem", "fill_", "zero_", "copy_", "view_add_", "exp_"])
def test_inplace_on_inference_tensor_outside_raises(write):
    with tp.inference_mode():
        z = tp.ones(3) * 2
    with pytest.raises(RuntimeError, match=INPLACE_MSG):
        write(z)
    np.testing.assert_array_equal(z.numpy(), [2.0, 2.0, 2.0])     # unchanged
    with tp.inference_mode():
        write(z)                                                     # fine inside


def test_requires_grad_on_inference_tensor_outside_raises():
    with tp.inference_mode():
        z = tp.ones(2)
        w = tp.ones(2).requires_grad_()        # allowed inside, as PyTorch
    assert w.requires_grad
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor"):
        z.requires_grad_()
    z.requires_grad_(False)


def test_inference_mode_switches_forward_ad_off():
    with forward_ad.dual_level():
        d = forward_ad.make_dual(tp.ones(2, dtype=F64), tp.full((2,), 3.0, dtype=F64))
        with tp.inference_mode():
            e = d * 2
            assert forward_ad.unpack_dual(e).tangent is None
        np.testing.assert_array_equal(forward_ad.unpack_dual(d * 2).tangent.numpy(), [6., 6.])
    with tp.inference_mode():
        with forward_ad.dual_level() as level:       # a level can be entered inside
            assert level == 0
    assert _state() == (True, False)


def test_nested_inference_modes():
    with tp.inference_mode():
        with tp.inference_mode(False):
            assert _state() == (True, False)
            x = tp.ones(2, requires_grad=True)
            y = x * 2
            assert y.requires_grad and not y.is_inference()
            with tp.inference_mode():
                assert _state() == (False, True)
            assert _state() == (True, False)
        assert _state() == (False, True)
        with tp.no_grad():
            assert _state() == (False, True)
    with tp.no_grad():
        with tp.inference_mode(False):          # PyTorch: turns grad mode on
            assert _state() == (True, False)
        assert _state() == (False, False)


def test_inference_mode_is_thread_local():
    seen = {}

    def worker():
        seen["state"] = _state()
        seen["inference"] = (tp.ones(1) * 2).is_inference()

    with tp.inference_mode():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert _state() == (False, True)
    assert seen == {"state": (True, False), "inference": False}


def test_inference_semantics_match_torch():
    torch = pytest.importorskip("torch")

    def run(lib, inference_mode):
        x = lib.ones(3, requires_grad=True)
        with inference_mode():
            y = x * 2
            z = lib.ones(3)
            v = y[1:]
            state = (lib.is_grad_enabled(), lib.is_inference_mode_enabled())
        res = {"state": state, "y": (y.requires_grad, y.is_inference()),
               "z": z.is_inference(), "v": v.is_inference(),
               "clone": y.clone().is_inference(), "detach": y.detach().is_inference()}
        for key, f in (("save", lambda: z * x), ("inplace", lambda: z.add_(1)),
                       ("req", lambda: z.requires_grad_())):
            try:
                f()
                res[key] = None
            except RuntimeError as e:
                msg = re.sub(r"^\w+\(\): ", "", str(e))     # tensorplay names the op
                res[key] = re.split(r"[.(]", msg)[0].strip()
        return res
    ours, theirs = run(tp, tp.inference_mode), run(torch, torch.inference_mode)
    assert ours == theirs


def test_inplace_inside_inference_mode_under_enable_grad_records_nothing():
    x = tp.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    y = x * 3
    with tp.inference_mode(), tp.enable_grad():
        y.mul_(2)                     # a normal tensor: written, counter bumped
        assert y.grad_fn.name() == "MulBackward0"      # its history is not rebased
    np.testing.assert_array_equal(y.detach().numpy(), [6.0, 12.0])
    y.sum().backward()                # the graph never saw the write: d(3x)/dx, as torch
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_custom_function_and_inference_tensors():
    pytest.importorskip("tensorplay.autograd.function")
    from tensorplay.autograd import Function

    class Mul(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, g * a
    x = tp.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    with tp.inference_mode():
        z = tp.tensor([3.0, 4.0], dtype=F64)
        with tp.enable_grad():
            r = Mul.apply(x, z)               # nothing recorded inside
        assert not r.requires_grad and r.is_inference()
    with pytest.raises(RuntimeError, match=SAVED_MSG + r" \(MulBackward would save one\)"):
        Mul.apply(x, z)
    g, = autograd.grad(Mul.apply(x, z.clone()).sum(), x)
    np.testing.assert_array_equal(g.numpy(), [3.0, 4.0])
