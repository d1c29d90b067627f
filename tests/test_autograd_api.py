"""Public autograd API against independent references.

Covers the rules of ``tensorplay.autograd.grad``, ``Tensor.backward`` /
``autograd.backward``, grad mode, forward AD (``forward_ad`` and ``_forward``),
``autograd.functional.jvp`` (both modes), ``gradcheck`` and the version counter.

Every value is checked against closed-form derivatives, numpy, or float64
central finite differences (``fd_jvp``); behaviour is checked against
``torch.autograd``'s documented semantics.
"""
import threading

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import autograd
from tensorplay.autograd import _forward, forward_ad, functional

F64 = tp.float64


@pytest.fixture
def rng():
    return np.random.default_rng(20240917)


def leaf(arr):
    """A float64 leaf that requires grad, holding a copy of ``arr``."""
    return tp.tensor(np.asarray(arr, dtype=np.float64), requires_grad=True)


def const(arr):
    return tp.tensor(np.asarray(arr, dtype=np.float64))


def npy(t):
    return t.detach().numpy()


def fd_jvp(f, xs, vs, eps=1e-6):
    """Central difference (f(x + eps v) - f(x - eps v)) / (2 eps) in float64.

    ``f`` takes tensors and returns one tensor; ``xs``/``vs`` are numpy arrays.
    """
    with tp.no_grad():
        plus = f(*[const(x + eps * v) for x, v in zip(xs, vs)])
        minus = f(*[const(x - eps * v) for x, v in zip(xs, vs)])
    return (npy(plus) - npy(minus)) / (2 * eps)


# =====================================================================================
# autograd.grad
# =====================================================================================
@pytest.mark.parametrize("inputs_as", ["tensor", "list", "tuple"])
@pytest.mark.parametrize("outputs_as", ["tensor", "list", "tuple"])
def test_grad_accepts_tensor_or_sequence_and_returns_tuple(rng, inputs_as, outputs_as):
    xv = rng.standard_normal(4)
    x = leaf(xv)
    out = (x * x).sum()
    outputs = {"tensor": out, "list": [out], "tuple": (out,)}[outputs_as]
    inputs = {"tensor": x, "list": [x], "tuple": (x,)}[inputs_as]
    res = autograd.grad(outputs, inputs)
    assert isinstance(res, tuple) and len(res) == 1
    np.testing.assert_allclose(npy(res[0]), 2 * xv, rtol=1e-14)


def test_grad_returns_one_entry_per_input_in_order(rng):
    xv, yv, zv = rng.standard_normal((3, 5))
    x, y, z = leaf(xv), leaf(yv), leaf(zv)
    out = (x * y + z.exp()).sum()
    gz, gx, gy = autograd.grad(out, [z, x, y])
    np.testing.assert_allclose(npy(gx), yv, rtol=1e-14)
    np.testing.assert_allclose(npy(gy), xv, rtol=1e-14)
    np.testing.assert_allclose(npy(gz), np.exp(zv), rtol=1e-14)
    for g, inp in ((gz, z), (gx, x), (gy, y)):
        assert g.shape == inp.shape and g.dtype == inp.dtype


def test_grad_with_respect_to_non_leaf(rng):
    xv = rng.standard_normal(4)
    x = leaf(xv)
    h = x.exp()                      # intermediate
    out = (h * h).sum()
    (gh,) = autograd.grad(out, h, retain_graph=True)
    np.testing.assert_allclose(npy(gh), 2 * np.exp(xv), rtol=1e-14)
    # both the intermediate and the leaf at once, in one pass
    gh2, gx = autograd.grad(out, [h, x])
    np.testing.assert_allclose(npy(gh2), 2 * np.exp(xv), rtol=1e-14)
    np.testing.assert_allclose(npy(gx), 2 * np.exp(2 * xv), rtol=1e-13)


@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
@pytest.mark.parametrize("grad_outputs", [None, [None], (None,)])
def test_grad_outputs_none_means_ones_for_one_element_output(rng, shape, grad_outputs):
    xv = rng.standard_normal(3)
    x = leaf(xv)
    out = (x * x).sum().reshape(shape)
    (g,) = autograd.grad(out, x, grad_outputs)
    np.testing.assert_allclose(npy(g), 2 * xv, rtol=1e-14)


def test_grad_outputs_mixed_none_and_tensor(rng):
    xv, uv = rng.standard_normal((2, 3))
    x = leaf(xv)
    (g,) = autograd.grad([x * x, x.sum()], x, [const(uv), None])
    np.testing.assert_allclose(npy(g), 2 * xv * uv + 1, rtol=1e-14)


def test_grad_non_scalar_output_without_grad_output_raises(rng):
    x = leaf(rng.standard_normal(3))
    with pytest.raises(RuntimeError):
        autograd.grad(x * 2, x)
    with pytest.raises(RuntimeError):
        autograd.grad([x * 2], x, [None])


@pytest.mark.parametrize("bad_shape", [(4,), (3, 1), (1, 3), ()])
def test_grad_output_shape_mismatch_raises(rng, bad_shape):
    x = leaf(rng.standard_normal(3))
    with pytest.raises(RuntimeError):
        autograd.grad(x * 2, x, tp.ones(bad_shape, dtype=F64))


def test_grad_second_call_through_freed_graph_raises(rng):
    x = leaf(rng.standard_normal(3))
    out = (x * x).sum()
    autograd.grad(out, x)
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        autograd.grad(out, x)


def test_grad_retain_graph_true_allows_second_call(rng):
    xv = rng.standard_normal(3)
    x = leaf(xv)
    out = (x.exp() * x).sum()
    (g1,) = autograd.grad(out, x, retain_graph=True)
    (g2,) = autograd.grad(out, x)
    want = np.exp(xv) * (1 + xv)
    np.testing.assert_allclose(npy(g1), want, rtol=1e-14)
    np.testing.assert_allclose(npy(g2), want, rtol=1e-14)


def test_grad_retain_graph_defaults_to_create_graph(rng):
    xv = rng.standard_normal(3)
    x = leaf(xv)
    out = (x * x * x).sum()
    (g1,) = autograd.grad(out, x, create_graph=True)     # retains the graph
    (g2,) = autograd.grad(out, x)                         # so this still works
    np.testing.assert_allclose(npy(g1), 3 * xv ** 2, rtol=1e-14)
    np.testing.assert_allclose(npy(g2), 3 * xv ** 2, rtol=1e-14)
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        autograd.grad(out, x)


def test_grad_unused_input_raises_by_default(rng):
    x = leaf(rng.standard_normal(3))
    unused = leaf(rng.standard_normal(2))
    with pytest.raises(RuntimeError):
        autograd.grad((x * 2).sum(), [x, unused])


def test_grad_unused_input_allow_unused_gives_none(rng):
    x = leaf(rng.standard_normal(3))
    unused = leaf(rng.standard_normal(2))
    gx, gu = autograd.grad((x * 2).sum(), [x, unused], allow_unused=True)
    np.testing.assert_array_equal(npy(gx), np.full(3, 2.0))
    assert gu is None


@pytest.mark.parametrize("allow_unused", [None, True])
def test_grad_materialize_grads_gives_zeros(rng, allow_unused):
    x = leaf(rng.standard_normal(3))
    unused = leaf(rng.standard_normal((2, 4)))
    kwargs = {} if allow_unused is None else {"allow_unused": allow_unused}
    gx, gu = autograd.grad((x * 2).sum(), [x, unused], materialize_grads=True, **kwargs)
    np.testing.assert_array_equal(npy(gx), np.full(3, 2.0))
    assert gu is not None
    assert gu.shape == (2, 4) and gu.dtype == F64
    np.testing.assert_array_equal(npy(gu), np.zeros((2, 4)))


def test_grad_materialize_grads_with_allow_unused_false_is_value_error(rng):
    x = leaf(rng.standard_normal(3))
    with pytest.raises(ValueError):
        autograd.grad((x * 2).sum(), x, materialize_grads=True, allow_unused=False)


def test_grad_never_touches_dot_grad(rng):
    x = leaf(rng.standard_normal(3))
    y = leaf(rng.standard_normal(3))
    autograd.grad((x * y).sum(), [x])
    assert x.grad is None and y.grad is None
    preset = rng.standard_normal(3)
    x.grad = const(preset)
    autograd.grad((x * y).sum(), [x, y])
    np.testing.assert_array_equal(npy(x.grad), preset)
    assert y.grad is None


def test_grad_multiple_outputs_sum_their_vjps(rng):
    xv, uv, wv = rng.standard_normal((3, 4))
    x = leaf(xv)
    (g,) = autograd.grad([x * x, x.exp(), (x * 3).sum()], x, [const(uv), const(wv), None])
    np.testing.assert_allclose(npy(g), 2 * xv * uv + np.exp(xv) * wv + 3, rtol=1e-13)


def test_grad_is_grads_batched_rows_equal_separate_vjps(rng):
    M = rng.standard_normal((3, 4))
    xv = rng.standard_normal(4)
    V = rng.standard_normal((5, 3))
    x = leaf(xv)
    out = (const(M) @ x).tanh()                # (3,)
    (batched,) = autograd.grad(out, x, const(V), is_grads_batched=True, retain_graph=True)
    assert batched.shape == (5, 4)
    # closed form: rows V[b] @ diag(1 - tanh^2) @ M
    t = np.tanh(M @ xv)
    np.testing.assert_allclose(npy(batched), (V * (1 - t ** 2)) @ M, rtol=1e-12)
    for b in range(5):
        (row,) = autograd.grad(out, x, const(V[b]), retain_graph=True)
        np.testing.assert_allclose(npy(batched)[b], npy(row), rtol=1e-14, atol=1e-15)


def test_grad_is_grads_batched_multiple_inputs_and_outputs(rng):
    av, bv = rng.standard_normal((2, 3))
    U, W = rng.standard_normal((2, 4, 3))
    a, b = leaf(av), leaf(bv)
    ga, gb = autograd.grad([a * b, a + b], [a, b], [const(U), const(W)],
                           is_grads_batched=True)
    np.testing.assert_allclose(npy(ga), U * bv + W, rtol=1e-14)
    np.testing.assert_allclose(npy(gb), U * av + W, rtol=1e-14)


# second derivatives of unary ops, closed form: (f, f'')
SECOND_DERIVS = {
    "cube": (lambda x: x * x * x, lambda x: 6 * x, None),
    "pow3": (lambda x: x ** 3, lambda x: 6 * x, None),
    "exp": (lambda x: x.exp(), np.exp, None),
    "tanh": (lambda x: x.tanh(), lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2), None),
    "sigmoid": (lambda x: x.sigmoid(),
                lambda x: (s := 1 / (1 + np.exp(-x))) * (1 - s) * (1 - 2 * s), None),
    "log": (lambda x: x.log(), lambda x: -1 / x ** 2, "pos"),
    "sqrt": (lambda x: x.sqrt(), lambda x: -0.25 * x ** -1.5, "pos"),
    "reciprocal": (lambda x: 1 / x, lambda x: 2 / x ** 3, "pos"),
}


@pytest.mark.parametrize("name", sorted(SECOND_DERIVS))
def test_grad_create_graph_second_derivative(rng, name):
    f, f2, domain = SECOND_DERIVS[name]
    xv = rng.standard_normal(5)
    if domain == "pos":
        xv = np.abs(xv) + 0.5
    x = leaf(xv)
    (g,) = autograd.grad(f(x).sum(), x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    (h,) = autograd.grad(g.sum(), x)
    np.testing.assert_allclose(npy(h), f2(xv), rtol=1e-12, atol=1e-14)


def test_grad_third_derivative_of_cube(rng):
    xv = rng.standard_normal(4)
    x = leaf(xv)
    (g1,) = autograd.grad((x ** 3).sum(), x, create_graph=True)
    (g2,) = autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = autograd.grad(g2.sum(), x)
    np.testing.assert_allclose(npy(g1), 3 * xv ** 2, rtol=1e-14)
    np.testing.assert_allclose(npy(g2), 6 * xv, rtol=1e-14)
    np.testing.assert_allclose(npy(g3), np.full(4, 6.0), rtol=1e-14)


def test_grad_hessian_vector_product_closed_form(rng):
    # f(x) = 0.5 x^T A x + sum(x^3) + sum(exp(x)):  H = (A + A^T)/2 + diag(6x + exp(x))
    n = 5
    A = rng.standard_normal((n, n))
    xv, vv = rng.standard_normal((2, n))
    x = leaf(xv)
    f = 0.5 * (x @ (const(A) @ x)) + (x ** 3).sum() + x.exp().sum()
    (g,) = autograd.grad(f, x, create_graph=True)
    np.testing.assert_allclose(npy(g), 0.5 * (A + A.T) @ xv + 3 * xv ** 2 + np.exp(xv),
                               rtol=1e-12)
    (hv,) = autograd.grad(g, x, const(vv))
    H = 0.5 * (A + A.T) + np.diag(6 * xv + np.exp(xv))
    np.testing.assert_allclose(npy(hv), H @ vv, rtol=1e-12)


def test_grad_input_not_requiring_grad_raises(rng):
    x = leaf(rng.standard_normal(3))
    c = const(rng.standard_normal(3))
    with pytest.raises(RuntimeError):
        autograd.grad((x * c).sum(), c)
    with pytest.raises(RuntimeError):
        autograd.grad((x * c).sum(), [x, c])


# =====================================================================================
# Tensor.backward / autograd.backward
# =====================================================================================
def _call_backward(api, out, gradient=None, **kwargs):
    if api == "method":
        out.backward(gradient, **kwargs)
    else:
        autograd.backward(out, gradient, **kwargs)


@pytest.mark.parametrize("api", ["method", "function"])
def test_backward_accumulates_into_leaf_grad(rng, api):
    xv = rng.standard_normal(4)
    x = leaf(xv)
    out = (x * x).sum()
    _call_backward(api, out, retain_graph=True)
    np.testing.assert_allclose(npy(x.grad), 2 * xv, rtol=1e-14)
    assert not x.grad.requires_grad
    _call_backward(api, out)
    np.testing.assert_allclose(npy(x.grad), 4 * xv, rtol=1e-14)
    # a fresh graph accumulates too
    _call_backward(api, x.exp().sum())
    np.testing.assert_allclose(npy(x.grad), 4 * xv + np.exp(xv), rtol=1e-14)


@pytest.mark.parametrize("api", ["method", "function"])
def test_backward_with_gradient_argument(rng, api):
    xv, gv = rng.standard_normal((2, 3))
    x = leaf(xv)
    _call_backward(api, x.tanh(), const(gv))
    np.testing.assert_allclose(npy(x.grad), gv * (1 - np.tanh(xv) ** 2), rtol=1e-13)


@pytest.mark.parametrize("api", ["method", "function"])
@pytest.mark.parametrize("inputs_as", ["tensor", "list"])
def test_backward_inputs_restricts_accumulation(rng, api, inputs_as):
    av, bv = rng.standard_normal((2, 3))
    a, b = leaf(av), leaf(bv)
    inputs = a if inputs_as == "tensor" else [a]
    _call_backward(api, (a * b * 3).sum(), inputs=inputs)
    np.testing.assert_allclose(npy(a.grad), 3 * bv, rtol=1e-14)
    assert b.grad is None


def test_backward_inputs_may_be_non_leaf(rng):
    av = rng.standard_normal(3)
    a = leaf(av)
    h = a * 2
    (h * h).sum().backward(inputs=[h])
    np.testing.assert_allclose(npy(h.grad), 4 * av, rtol=1e-14)
    assert a.grad is None


def test_autograd_backward_sequence_of_tensors(rng):
    av, bv, gv = rng.standard_normal((3, 3))
    a, b = leaf(av), leaf(bv)
    autograd.backward([(a * b).sum(), a * 5], [None, const(gv)])
    np.testing.assert_allclose(npy(a.grad), bv + 5 * gv, rtol=1e-14)
    np.testing.assert_allclose(npy(b.grad), av, rtol=1e-14)


@pytest.mark.parametrize("api", ["method", "function"])
def test_backward_non_scalar_without_gradient_raises(rng, api):
    x = leaf(rng.standard_normal(3))
    with pytest.raises(RuntimeError):
        _call_backward(api, x * 2)
    assert x.grad is None


@pytest.mark.parametrize("api", ["method", "function"])
def test_backward_tensor_not_requiring_grad_raises(rng, api):
    c = const(rng.standard_normal(3))
    with pytest.raises(RuntimeError):
        _call_backward(api, (c * 2).sum())


def test_backward_twice_without_retain_graph_raises(rng):
    x = leaf(rng.standard_normal(3))
    out = (x * x).sum()
    out.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        out.backward()


def test_backward_create_graph_makes_grad_differentiable(rng):
    xv = rng.standard_normal(3)
    x = leaf(xv)
    (x ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    np.testing.assert_allclose(npy(x.grad), 3 * xv ** 2, rtol=1e-14)
    (h,) = autograd.grad(x.grad.sum(), x)
    np.testing.assert_allclose(npy(h), 6 * xv, rtol=1e-14)


# =====================================================================================
# grad mode
# =====================================================================================
def test_no_grad_context_manager(rng):
    x = leaf(rng.standard_normal(3))
    assert tp.is_grad_enabled()
    with tp.no_grad():
        assert not tp.is_grad_enabled()
        y = x * 2
        z = x.exp().sum()
    assert tp.is_grad_enabled()
    for t in (y, z):
        assert not t.requires_grad and t.grad_fn is None
    np.testing.assert_allclose(npy(y), 2 * npy(x))
    w = x * 2
    assert w.requires_grad and w.grad_fn is not None


def test_grad_mode_restored_after_exception():
    with pytest.raises(KeyError):
        with tp.no_grad():
            raise KeyError
    assert tp.is_grad_enabled()
    with tp.no_grad():
        with pytest.raises(KeyError):
            with tp.enable_grad():
                raise KeyError
        assert not tp.is_grad_enabled()
    assert tp.is_grad_enabled()


def test_no_grad_and_enable_grad_as_decorators(rng):
    x = leaf(rng.standard_normal(3))

    @tp.no_grad()
    def off(t):
        """doc of off"""
        return tp.is_grad_enabled(), t * 2

    @tp.enable_grad()
    def on(t):
        return tp.is_grad_enabled(), t * 2

    enabled, y = off(x)
    assert not enabled and not y.requires_grad
    assert off.__name__ == "off" and off.__doc__ == "doc of off"
    assert tp.is_grad_enabled()
    with tp.no_grad():
        enabled, y = on(x)
        assert not tp.is_grad_enabled()
    assert enabled and y.requires_grad and y.grad_fn is not None


def test_enable_grad_inside_no_grad(rng):
    x = leaf(rng.standard_normal(3))
    with tp.no_grad():
        with tp.enable_grad():
            assert tp.is_grad_enabled()
            y = x * 2
        assert not tp.is_grad_enabled()
    assert y.requires_grad
    (g,) = autograd.grad(y.sum(), x)
    np.testing.assert_array_equal(npy(g), np.full(3, 2.0))


def test_set_grad_enabled_function_context_and_decorator(rng):
    x = leaf(rng.standard_normal(3))
    try:
        tp.set_grad_enabled(False)              # as a plain call
        assert not tp.is_grad_enabled()
        assert not (x * 2).requires_grad
    finally:
        tp.set_grad_enabled(True)
    assert tp.is_grad_enabled()

    with tp.set_grad_enabled(False):
        assert not tp.is_grad_enabled()
        with tp.set_grad_enabled(True):
            assert tp.is_grad_enabled()
            assert (x * 2).requires_grad
        assert not tp.is_grad_enabled()
    assert tp.is_grad_enabled()

    @tp.set_grad_enabled(False)
    def off():
        return tp.is_grad_enabled(), (x * 2).requires_grad

    assert tp.is_grad_enabled()               # decorating does not change the mode
    assert off() == (False, False)
    assert tp.is_grad_enabled()


def test_no_grad_bare_decorator():
    @tp.no_grad
    def off():
        return tp.is_grad_enabled()

    @tp.enable_grad
    def on():
        return tp.is_grad_enabled()

    assert off() is False
    with tp.no_grad():
        assert on() is True


def test_no_grad_decorated_generator():
    @tp.no_grad()
    def gen():
        yield tp.is_grad_enabled()
        yield tp.is_grad_enabled()

    assert list(gen()) == [False, False]
    assert tp.is_grad_enabled()


def test_grad_mode_is_thread_local():
    seen = {}

    def worker():
        seen["enabled"] = tp.is_grad_enabled()
        seen["records"] = (tp.ones(2, requires_grad=True) * 2).requires_grad

    with tp.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert not tp.is_grad_enabled()
    assert seen == {"enabled": True, "records": True}


def test_no_grad_in_another_thread_does_not_leak():
    entered, release = threading.Event(), threading.Event()
    seen = {}

    def worker():
        with tp.no_grad():
            seen["worker"] = tp.is_grad_enabled()
            entered.set()
            release.wait(5)

    t = threading.Thread(target=worker)
    t.start()
    try:
        assert entered.wait(5)
        assert tp.is_grad_enabled()
        assert (tp.ones(2, requires_grad=True) * 2).requires_grad
    finally:
        release.set()
        t.join()
    assert seen["worker"] is False


# =====================================================================================
# forward AD
# =====================================================================================
@pytest.fixture(params=["forward_ad", "_forward"])
def fwad(request):
    return {"forward_ad": forward_ad, "_forward": _forward}[request.param]


def test_forward_ad_modules_name_the_same_objects():
    for name in ("dual_level", "make_dual", "unpack_dual", "UnpackedDualTensor"):
        assert getattr(forward_ad, name) is getattr(_forward, name)


def test_unpack_dual_is_named_tuple(rng, fwad):
    xv, vv = rng.standard_normal((2, 3))
    with fwad.dual_level():
        d = fwad.make_dual(const(xv), const(vv))
        u = fwad.unpack_dual(d)
        assert isinstance(u, tuple) and len(u) == 2
        assert u._fields == ("primal", "tangent")
        primal, tangent = u
        assert primal is u.primal and tangent is u.tangent
        np.testing.assert_array_equal(npy(u.primal), xv)
        np.testing.assert_array_equal(npy(u.tangent), vv)
        # the primal carries no tangent of its own
        assert fwad.unpack_dual(u.primal).tangent is None


def test_unpack_dual_of_plain_tensor_has_no_tangent(rng, fwad):
    x = const(rng.standard_normal(3))
    with fwad.dual_level():
        assert fwad.unpack_dual(x).tangent is None
        np.testing.assert_array_equal(npy(fwad.unpack_dual(x).primal), npy(x))
    assert fwad.unpack_dual(x).tangent is None


def test_exp_function_and_method_propagate_same_tangent(rng, fwad):
    xv, vv = rng.standard_normal((2, 4))
    with fwad.dual_level():
        d = fwad.make_dual(const(xv), const(vv))
        p1, t1 = fwad.unpack_dual(tp.exp(d))
        p2, t2 = fwad.unpack_dual(d.exp())
    np.testing.assert_allclose(npy(p1), np.exp(xv), rtol=1e-14)
    np.testing.assert_allclose(npy(t1), np.exp(xv) * vv, rtol=1e-14)
    np.testing.assert_array_equal(npy(t1), npy(t2))
    np.testing.assert_array_equal(npy(p1), npy(p2))


def test_make_dual_outside_level_raises(rng, fwad):
    with pytest.raises(RuntimeError):
        fwad.make_dual(const(rng.standard_normal(3)), const(rng.standard_normal(3)))


@pytest.mark.parametrize("tshape", [(4,), (3, 1), (1, 3), ()])
def test_make_dual_tangent_shape_mismatch_raises(rng, fwad, tshape):
    with fwad.dual_level():
        with pytest.raises(RuntimeError):
            fwad.make_dual(const(rng.standard_normal(3)), tp.ones(tshape, dtype=F64))


def test_nested_dual_level_raises(rng, fwad):
    xv, vv = rng.standard_normal((2, 3))
    with fwad.dual_level():
        with pytest.raises(RuntimeError):
            with fwad.dual_level():
                pass
        # the outer level is still usable
        d = fwad.make_dual(const(xv), const(vv))
        np.testing.assert_allclose(npy(fwad.unpack_dual(d * d).tangent), 2 * xv * vv,
                                   rtol=1e-14)
    with fwad.dual_level():     # and a fresh level can be entered afterwards
        pass


def test_tangents_disappear_after_level_exits(rng, fwad):
    xv, vv = rng.standard_normal((2, 3))
    with fwad.dual_level():
        d = fwad.make_dual(const(xv), const(vv))
        y = d.exp()
        assert fwad.unpack_dual(y).tangent is not None
    assert fwad.unpack_dual(d).tangent is None
    assert fwad.unpack_dual(y).tangent is None
    with fwad.dual_level():          # not resurrected by a later level
        assert fwad.unpack_dual(d).tangent is None
        assert fwad.unpack_dual(d * 2).tangent is None
    # ops on the former dual still compute the right primal
    np.testing.assert_allclose(npy(d * 2), 2 * xv)


def test_tangent_propagates_under_no_grad(rng, fwad):
    xv, vv = rng.standard_normal((2, 3))
    with tp.no_grad(), fwad.dual_level():
        d = fwad.make_dual(const(xv), const(vv))
        t = fwad.unpack_dual((d * d).sum()).tangent
    np.testing.assert_allclose(t.item(), np.sum(2 * xv * vv), rtol=1e-14)


def test_forward_ad_composite_matches_finite_differences(rng, fwad):
    W = rng.standard_normal((4, 3))
    xv, vv = rng.standard_normal((2, 2, 4))

    def f(x):
        h = (x @ const(W)).tanh()
        return tp.log_softmax(h * h.sigmoid(), 1) + (x.exp() / 3).sum(1, keepdim=True)

    with fwad.dual_level():
        t = fwad.unpack_dual(f(fwad.make_dual(const(xv), const(vv)))).tangent
    np.testing.assert_allclose(npy(t), fd_jvp(f, [xv], [vv]), rtol=1e-7, atol=1e-9)


# =====================================================================================
# functional.jvp
# =====================================================================================
MODES = ["reversed", "forward"]


@pytest.mark.parametrize("mode", MODES)
def test_jvp_doc_example_exp_reducer(mode):
    def exp_reducer(x):
        return x.exp().sum(dim=1)

    inputs = tp.rand(4, 4)
    v = tp.ones(4, 4)
    out, jv = functional.jvp(exp_reducer, inputs, v, mode=mode)
    assert isinstance(out, tp.Tensor) and isinstance(jv, tp.Tensor)
    assert out.shape == (4,) and jv.shape == (4,)
    want = np.exp(npy(inputs).astype(np.float64)).sum(1)
    np.testing.assert_allclose(npy(out), want, rtol=1e-5)
    np.testing.assert_allclose(npy(jv), npy(out), rtol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_jvp_doc_example_adder(mode):
    def adder(x, y):
        return 2 * x + 3 * y

    inputs = (tp.rand(2), tp.rand(2))
    v = (tp.ones(2), tp.ones(2))
    out, jv = functional.jvp(adder, inputs, v, mode=mode)
    assert isinstance(out, tp.Tensor) and isinstance(jv, tp.Tensor)
    np.testing.assert_allclose(npy(out), 2 * npy(inputs[0]) + 3 * npy(inputs[1]), rtol=1e-6)
    np.testing.assert_array_equal(npy(jv), np.full(2, 5.0))


@pytest.mark.parametrize("mode", MODES)
def test_jvp_tuple_output_gives_tuples(rng, mode):
    xv, vv = rng.standard_normal((2, 3))
    out, jv = functional.jvp(lambda x: (x.exp(), x * x), const(xv), const(vv), mode=mode)
    assert isinstance(out, tuple) and isinstance(jv, tuple)
    assert len(out) == 2 and len(jv) == 2
    np.testing.assert_allclose(npy(out[0]), np.exp(xv), rtol=1e-14)
    np.testing.assert_allclose(npy(jv[0]), np.exp(xv) * vv, rtol=1e-14)
    np.testing.assert_allclose(npy(out[1]), xv * xv, rtol=1e-14)
    np.testing.assert_allclose(npy(jv[1]), 2 * xv * vv, rtol=1e-14)
    # a one-element tuple output stays a tuple; tuple inputs of one tensor are fine
    out, jv = functional.jvp(lambda x: (x * 2,), (const(xv),), (const(vv),), mode=mode)
    assert isinstance(out, tuple) and isinstance(jv, tuple) and len(jv) == 1
    np.testing.assert_allclose(npy(jv[0]), 2 * vv, rtol=1e-15)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_jvp_v_none_for_single_one_element_input(mode, shape):
    x = tp.full(shape, 0.7, dtype=F64)
    out, jv = functional.jvp(lambda t: t ** 3, x, mode=mode)
    assert jv.shape == shape
    np.testing.assert_allclose(npy(jv), np.full(shape, 3 * 0.7 ** 2), rtol=1e-14)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("inputs", [lambda: tp.ones(2, dtype=F64),
                                    lambda: (tp.ones(1, dtype=F64), tp.ones(1, dtype=F64))],
                         ids=["two-elements", "two-inputs"])
def test_jvp_v_none_otherwise_raises(mode, inputs):
    def f(*xs):
        return xs[0] * 2

    with pytest.raises(RuntimeError):
        functional.jvp(f, inputs(), mode=mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("vshape", [(4,), (3, 1), (1, 3), ()])
def test_jvp_v_shape_mismatch_raises(mode, vshape):
    with pytest.raises(RuntimeError):
        functional.jvp(lambda x: x * 2, tp.ones(3, dtype=F64), tp.ones(vshape, dtype=F64),
                       mode=mode)


@pytest.mark.parametrize("mode", MODES)
def test_jvp_v_length_mismatch_raises(mode):
    x, y = tp.ones(3, dtype=F64), tp.ones(3, dtype=F64)
    with pytest.raises(RuntimeError):
        functional.jvp(lambda a, b: a * b, (x, y), (tp.ones(3, dtype=F64),), mode=mode)
    with pytest.raises(RuntimeError):
        functional.jvp(lambda a: a * 2, x, (tp.ones(3, dtype=F64), tp.ones(3, dtype=F64)),
                       mode=mode)


@pytest.mark.parametrize("mode", MODES)
def test_jvp_strict(rng, mode):
    xv, vv = rng.standard_normal((2, 3))

    def f(x):
        return x.exp(), tp.ones(3, dtype=F64)

    with pytest.raises(RuntimeError):
        functional.jvp(f, const(xv), const(vv), strict=True, mode=mode)
    out, jv = functional.jvp(f, const(xv), const(vv), strict=False, mode=mode)
    np.testing.assert_allclose(npy(jv[0]), np.exp(xv) * vv, rtol=1e-14)
    assert jv[1].shape == (3,)
    np.testing.assert_array_equal(npy(jv[1]), np.zeros(3))
    np.testing.assert_array_equal(npy(out[1]), np.ones(3))


@pytest.mark.parametrize("mode", MODES)
def test_jvp_create_graph_is_differentiable(rng, mode):
    xv, vv = rng.standard_normal((2, 4))
    x, v = leaf(xv), leaf(vv)
    out, jv = functional.jvp(lambda t: t ** 3, x, v, create_graph=True, mode=mode)
    assert jv.requires_grad
    np.testing.assert_allclose(npy(jv), 3 * xv ** 2 * vv, rtol=1e-14)
    # d/dx sum(3 x^2 v) = 6 x v,  d/dv = 3 x^2
    gx, gv = autograd.grad(jv.sum(), [x, v])
    np.testing.assert_allclose(npy(gx), 6 * xv * vv, rtol=1e-13)
    np.testing.assert_allclose(npy(gv), 3 * xv ** 2, rtol=1e-13)
    # the output is differentiable too
    (go,) = autograd.grad(out.sum(), x)
    np.testing.assert_allclose(npy(go), 3 * xv ** 2, rtol=1e-13)


@pytest.mark.parametrize("mode", MODES)
def test_jvp_results_do_not_require_grad_without_create_graph(rng, mode):
    xv, vv = rng.standard_normal((2, 3))
    x, v = leaf(xv), leaf(vv)
    out, jv = functional.jvp(lambda t: (t.exp(), t * t), x, v, mode=mode)
    for t in out + jv:
        assert not t.requires_grad and t.grad_fn is None
    assert x.grad is None and v.grad is None


def test_jvp_unknown_mode_is_value_error():
    with pytest.raises(ValueError):
        functional.jvp(lambda x: x * 2, tp.ones(3), tp.ones(3), mode="backward")


def _composite(x, y):
    h = (x @ y).tanh() * x.sum(1, keepdim=True).sigmoid()
    return (h / (1 + y.mean() ** 2)).exp().log_softmax(1), (x.relu() + 1).sqrt().sum(0)


def test_jvp_forward_and_reversed_agree(rng):
    xs = [rng.standard_normal((3, 4)), rng.standard_normal((4, 5))]
    vs = [rng.standard_normal((3, 4)), rng.standard_normal((4, 5))]
    res = {m: functional.jvp(_composite, tuple(map(const, xs)), tuple(map(const, vs)), mode=m)
           for m in MODES}
    for k in range(2):
        np.testing.assert_allclose(npy(res["forward"][0][k]), npy(res["reversed"][0][k]),
                                   rtol=1e-14)
        np.testing.assert_allclose(npy(res["forward"][1][k]), npy(res["reversed"][1][k]),
                                   rtol=1e-12, atol=1e-14)
        ref = fd_jvp(lambda a, b: _composite(a, b)[k], xs, vs)
        np.testing.assert_allclose(npy(res["forward"][1][k]), ref, rtol=1e-7, atol=1e-9)


def test_jvp_dot_product_with_vjp(rng):
    """<u, J v> (forward) == <J^T u, v> (reverse)."""
    xs = [rng.standard_normal((3, 4)), rng.standard_normal((4, 5))]
    vs = [rng.standard_normal((3, 4)), rng.standard_normal((4, 5))]
    us = [rng.standard_normal((3, 5)), rng.standard_normal(4)]
    _, jv = functional.jvp(_composite, tuple(map(const, xs)), tuple(map(const, vs)),
                           mode="forward")
    lhs = sum(np.sum(u * npy(j)) for u, j in zip(us, jv))
    ins = [leaf(x) for x in xs]
    grads = autograd.grad(_composite(*ins), ins, [const(u) for u in us])
    rhs = sum(np.sum(npy(g) * v) for g, v in zip(grads, vs))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12)


# =====================================================================================
# gradcheck
# =====================================================================================
def _r(rng, *shape, pos=False):
    a = rng.standard_normal(shape)
    return leaf(np.abs(a) + 0.5 if pos else a)


GRADCHECK_CASES = {
    "exp": (lambda x: x.exp(), lambda r: (_r(r, 3),)),
    "log": (lambda x: x.log(), lambda r: (_r(r, 3, pos=True),)),
    "mul_broadcast": (lambda x, y: x * y, lambda r: (_r(r, 2, 3), _r(r, 3))),
    "div": (lambda x, y: x / y, lambda r: (_r(r, 3), _r(r, 3, pos=True))),
    "pow": (lambda x, y: x ** y, lambda r: (_r(r, 3, pos=True), _r(r, 3))),
    "matmul": (lambda x, y: x @ y, lambda r: (_r(r, 2, 3), _r(r, 3, 2))),
    "tanh_sigmoid": (lambda x: x.tanh() * x.sigmoid(), lambda r: (_r(r, 4),)),
    "log_softmax": (lambda x: tp.log_softmax(x, 1), lambda r: (_r(r, 2, 3),)),
    "sum_mean": (lambda x: (x.sum(0), x.mean((0, 1), keepdim=True)), lambda r: (_r(r, 2, 3),)),
    "getitem_permute": (lambda x: x[:, 1:, None].permute(2, 1, 0), lambda r: (_r(r, 2, 3),)),
    "fixed_second_input": (lambda x, c: (x * c).exp(),
                           lambda r: (_r(r, 3), const(r.standard_normal(3)))),
}


@pytest.mark.parametrize("check_forward_ad", [False, True])
@pytest.mark.parametrize("name", sorted(GRADCHECK_CASES))
def test_gradcheck_passes_on_correct_ops(rng, name, check_forward_ad):
    f, make = GRADCHECK_CASES[name]
    assert autograd.gradcheck(f, make(rng), check_forward_ad=check_forward_ad) is True



# d(x^3) = 3 x^2 dx; the wrong rules use 2 x.
def _right(g, out, x):
    return g * 3 * x * x


def _wrong(g, out, x):
    return g * 2 * x


CUBE_RULES = {
    "wrong_vjp": dict(vjp=(_wrong,), jvp=lambda ts, out, x: _right(ts[0], out, x)),
    "wrong_jvp": dict(vjp=(_right,), jvp=lambda ts, out, x: _wrong(ts[0], out, x)),
}


def _cube_forward(x):
    return x ** 3


def test_gradcheck_register_op_right_rules_pass(rng, register_op):
    cube = register_op(_cube_forward, vjp=(_right,), jvp=lambda ts, out, x: _right(ts[0], out, x))
    x = _r(rng, 4)
    np.testing.assert_allclose(npy(cube(x)), npy(x) ** 3, rtol=1e-15)
    assert autograd.gradcheck(cube, (x,), check_forward_ad=True)


@pytest.mark.parametrize("which", sorted(CUBE_RULES))
def test_gradcheck_fails_on_wrong_rule(rng, register_op, which):
    cube = register_op(_cube_forward, **CUBE_RULES[which])
    x = _r(rng, 3)
    kwargs = {"check_forward_ad": True, "check_backward_ad": which == "wrong_vjp"}
    assert issubclass(autograd.GradcheckError, RuntimeError)
    with pytest.raises(autograd.GradcheckError) as info:
        autograd.gradcheck(cube, (x,), **kwargs)
    msg = str(info.value)
    assert "numerical" in msg and "analytical" in msg
    assert autograd.gradcheck(cube, (x,), raise_exception=False, **kwargs) is False


def test_gradcheck_wrong_vjp_caught_in_default_mode(rng, register_op):
    cube = register_op(_cube_forward, **CUBE_RULES["wrong_vjp"])
    with pytest.raises(RuntimeError):          # GradcheckError is a RuntimeError
        autograd.gradcheck(cube, (_r(rng, 3),))


def test_gradcheck_wrong_jvp_missed_without_forward_check(rng, register_op):
    cube = register_op(_cube_forward, **CUBE_RULES["wrong_jvp"])
    assert autograd.gradcheck(cube, (_r(rng, 3),), check_forward_ad=False) is True


def _detached_right(g, out, x):
    # correct first derivative, but computed outside the graph: second order is lost
    return g * tp.from_numpy(3 * x.detach().numpy() ** 2)


def test_gradgradcheck_passes_on_correct_ops(rng):
    x, w = _r(rng, 3), _r(rng, 3, 2)
    assert autograd.gradgradcheck(lambda x: (x.tanh() * x.exp()).sum(), (x,))
    assert autograd.gradgradcheck(lambda x, w: (x @ w).sigmoid(), (x, w))


def test_gradgradcheck_catches_a_non_differentiable_rule(rng, register_op):
    cube = register_op(_cube_forward, vjp=(_detached_right,),
                       jvp=lambda ts, out, x: _right(ts[0], out, x))
    x = _r(rng, 3)
    assert autograd.gradcheck(cube, (x,))               # first order is right
    with pytest.raises(autograd.GradcheckError):
        autograd.gradgradcheck(cube, (x,))


def test_gradcheck_restores_inputs_when_the_function_raises(rng):
    x = _r(rng, 3)
    before = npy(x).copy()
    calls = []

    def flaky(x):
        calls.append(1)
        if len(calls) > 2:
            raise ValueError("boom")
        return x * 2

    with pytest.raises(ValueError, match="boom"):
        autograd.gradcheck(flaky, (x,))
    np.testing.assert_array_equal(npy(x), before)


# =====================================================================================
# version counter
# =====================================================================================
def test_inplace_on_saved_input_makes_backward_raise(rng):
    x = leaf(rng.standard_normal(3))
    w = const(rng.standard_normal(3))
    y = x * w                       # mul saves w
    with tp.no_grad():
        w.add_(1)
    with pytest.raises(RuntimeError, match="inplace"):
        y.sum().backward()


def test_inplace_on_saved_output_makes_backward_raise(rng):
    x = leaf(rng.standard_normal(3))
    y = x.exp()                     # exp saves its output
    with tp.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="inplace"):
        autograd.grad(y.sum(), x)


def test_inplace_through_a_view_bumps_the_shared_version(rng):
    x = leaf(rng.standard_normal(3))
    w = const(rng.standard_normal((2, 3)))
    y = x * w
    with tp.no_grad():
        w[0].mul_(3)                # a view shares the version counter
    with pytest.raises(RuntimeError, match="inplace"):
        y.sum().backward()


def test_inplace_on_unsaved_tensor_is_fine(rng):
    xv = rng.standard_normal(3)
    x = leaf(xv)
    w = const(rng.standard_normal(3))
    y = x + w                       # add saves nothing
    with tp.no_grad():
        w.add_(1)
    y.sum().backward()
    np.testing.assert_array_equal(npy(x.grad), np.ones(3))


def test_inplace_through_dot_data_is_not_tracked(rng):
    xv, wv = rng.standard_normal((2, 3))
    x = leaf(xv)
    w = const(wv)
    y = x * w
    w.data.add_(1)
    y.sum().backward()
    np.testing.assert_allclose(npy(x.grad), wv + 1, rtol=1e-15)


def test_gradients_from_broadcast_views_are_writable():
    # the VJP of sum is a read-only expand view; .grad and grad() results own storage
    x = tp.ones(3, requires_grad=True)
    x.sum().backward()
    x.grad.zero_()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3))
    (g,) = tp.autograd.grad((x * 2).sum(), x)
    g.add_(1)
    np.testing.assert_array_equal(g.numpy(), np.full(3, 3.0))


@pytest.mark.parametrize("mode", ["forward", "reversed"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_jvp_of_a_function_that_calls_grad(mode, create_graph):
    # forward-over-reverse: the JVP of x -> tanh'(x) is tanh''(x) v
    xs = np.array([0.3, -0.5, 1.0])
    vs = np.array([1.0, 2.0, -1.0])
    f = lambda x: tp.autograd.grad(x.tanh().sum(), x, create_graph=True)[0]  # noqa: E731
    _, jv = functional.jvp(f, tp.tensor(xs, dtype=tp.float64), tp.tensor(vs, dtype=tp.float64),
                           mode=mode, create_graph=create_graph)
    t = np.tanh(xs)
    np.testing.assert_allclose(jv.numpy() if not create_graph else jv.detach().numpy(),
                               -2 * t * (1 - t * t) * vs, rtol=1e-12)


def test_backward_accumulates_into_grad_in_place_and_privately():
    a = tp.ones(3, requires_grad=True)
    b = tp.ones(3, requires_grad=True)
    (a + b).sum().backward()             # add's VJP hands the same g to a and b
    g_a = a.grad
    (a + b).sum().backward()
    assert a.grad is g_a                 # accumulated in place (an optimiser's reference)
    np.testing.assert_array_equal(a.grad.numpy(), np.full(3, 2.0))
    np.testing.assert_array_equal(b.grad.numpy(), np.full(3, 2.0))   # not shared with a
    v = tp.ones(3)
    x = tp.zeros(3, requires_grad=True)
    x.backward(v)
    x.backward(v)
    np.testing.assert_array_equal(v.numpy(), np.ones(3))             # caller's tensor intact


@pytest.mark.parametrize("bad,exc", [(5, TypeError), ("g", TypeError)])
def test_grad_setter_rejects_non_tensors(bad, exc):
    x = tp.ones(3, requires_grad=True)
    with pytest.raises(exc, match="assigned grad"):
        x.grad = bad


def test_grad_setter_checks_shape_and_dtype():
    x = tp.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="different size"):
        x.grad = tp.ones(1)
    with pytest.raises(RuntimeError, match="different type"):
        x.grad = tp.ones(3, dtype=tp.float64)
    x.grad = tp.full((3,), 2.0)
    x.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 3.0))
    x.grad = None
    assert x.grad is None


@pytest.mark.parametrize("n", [1025, 60000, 2 ** 31])
def test_set_num_threads_rejects_absurd_counts(n):
    before = tp.get_num_threads()
    with pytest.raises(ValueError, match="set_num_threads"):
        tp.set_num_threads(n)
    assert tp.get_num_threads() == before


def test_inplace_writes_check_integer_range_and_types():
    t = tp.zeros(3, dtype=tp.int32)
    with pytest.raises(RuntimeError, match="overflow"):
        t[0] = 2 ** 40
    with pytest.raises(RuntimeError, match="overflow"):
        tp.zeros(3, dtype=tp.int64).fill_(float("nan"))
    with pytest.raises(TypeError):
        tp.zeros(3).fill_(None)
    with pytest.raises(TypeError):
        tp.zeros(3)[0] = "a"
    with pytest.raises(RuntimeError, match="__setitem__"):
        tp.zeros(2, 3)[0] = tp.tensor([1.0, 2.0])
    np.testing.assert_array_equal(t.numpy(), np.zeros(3))


def test_inplace_write_of_a_dual_source_carries_the_tangent():
    # copy_/add_ go through the in-place mechanism (autograd/_inplace.py) and take
    # the source's tangent; __setitem__ (not yet on the mechanism) still refuses
    with forward_ad.dual_level():
        d = forward_ad.make_dual(tp.ones(3), tp.full((3,), 2.0))
        y = tp.zeros(3)
        y.copy_(d)
        np.testing.assert_array_equal(forward_ad.unpack_dual(y).tangent.numpy(), [2, 2, 2])
        y.add_(d)
        np.testing.assert_array_equal(y.numpy(), [2, 2, 2])
        np.testing.assert_array_equal(forward_ad.unpack_dual(y).tangent.numpy(), [4, 4, 4])
        z = tp.zeros(3)
        z[0] = d[1]                      # __setitem__ is an in-place op like the others
        np.testing.assert_array_equal(z.numpy(), [1, 0, 0])
        np.testing.assert_array_equal(forward_ad.unpack_dual(z).tangent.numpy(), [2, 0, 0])


def test_plain_backward_adds_into_a_grad_that_requires_grad_in_place():
    # PyTorch's AccumulateGrad: without create_graph the add is in place, unrecorded
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    (x ** 3).sum().backward(create_graph=True)      # .grad = 3x^2, differentiable
    g = x.grad
    assert g.requires_grad
    (x ** 2).sum().backward()                       # adds 2x into the same object
    assert x.grad is g
    np.testing.assert_allclose(g.detach().numpy(), [3 + 2, 12 + 4])


def test_grad_from_create_graph_backward_does_not_alias_the_callers_tensors():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    y = tp.tensor([3.0, 4.0], requires_grad=True)
    gt = tp.tensor([1.0, 1.0])
    (x + y).backward(gt, create_graph=True)     # add passes gt through to x and y
    (x + y).backward(tp.tensor([10.0, 10.0]))   # then adds in place
    np.testing.assert_array_equal(gt.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(x.grad.detach().numpy(), [11.0, 11.0])
    np.testing.assert_array_equal(y.grad.detach().numpy(), [11.0, 11.0])


def test_pow_zero_exponent_mask_holds_for_inf_cotangents():
    a = tp.tensor([2.0, 0.0], dtype=tp.float64, requires_grad=True)
    b = tp.tensor([0.0, 2.0], dtype=tp.float64)
    (ga,) = tp.autograd.grad(a ** b, a, tp.tensor([np.inf, 1.0], dtype=tp.float64))
    np.testing.assert_array_equal(ga.numpy(), [0.0, 0.0])   # masked to exactly 0
    x = tp.tensor([0.0, 3.0], dtype=tp.float64, requires_grad=True)
    (g,) = tp.autograd.grad((x ** 0).sum(), x, create_graph=True)
    np.testing.assert_array_equal(g.detach().numpy(), [0.0, 0.0])
    assert not g.requires_grad                               # no graph: d2 is zero


# ---- functional.jvp(mode="forward") records a reverse graph only when needed
def test_jvp_forward_records_no_graph_and_calls_func_once(rng):
    w = leaf(rng.standard_normal((3, 2)))                 # a parameter requiring grad
    seen = []

    def f(x):
        seen.append(x.requires_grad)
        y = (x @ w).tanh().exp() * x.sum()
        seen.append(y.grad_fn)
        return y

    xv, vv = rng.standard_normal((2, 4, 3))
    _, jv = functional.jvp(f, const(xv), const(vv), mode="forward")
    assert seen == [False, None]                          # one run, no nodes
    _, jr = functional.jvp(f, const(xv), const(vv), mode="reversed")
    np.testing.assert_allclose(npy(jv), npy(jr), rtol=1e-12)


def test_jvp_forward_leaves_no_reference_cycles():
    import gc
    x, v, w = tp.rand(4, 3, dtype=F64), tp.randn(4, 3, dtype=F64), tp.randn(3, 2, dtype=F64)
    f = lambda a: (tp.relu(a @ w + 1.0).exp().tanh().sigmoid() * a.sum()).sqrt()  # noqa: E731
    functional.jvp(f, x, v, mode="forward")
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(3):
            functional.jvp(f, x, v, mode="forward")
        assert gc.collect() == 0
    finally:
        if was_enabled:
            gc.enable()


@pytest.mark.parametrize("create_graph", [False, True])
def test_jvp_forward_reruns_a_function_that_needs_a_graph(create_graph):
    calls = []

    def f(x):
        calls.append(x.requires_grad)
        return tp.autograd.grad((x ** 3).sum(), x, create_graph=True)[0]    # 3 x^2

    xs, vs = np.array([0.5, -2.0]), np.array([1.0, 3.0])
    _, jv = functional.jvp(f, tp.tensor(xs, dtype=F64), tp.tensor(vs, dtype=F64),
                           mode="forward", create_graph=create_graph)
    np.testing.assert_allclose(npy(jv), 6 * xs * vs, rtol=1e-14)
    assert calls == ([False, True] if not create_graph else [True])


def test_jvp_forward_real_errors_still_raise():
    def f(x):
        return tp.autograd.grad(tp.ones(2, dtype=F64).sum(), x)   # output has no graph

    with pytest.raises(RuntimeError, match="does not require grad") as info:
        functional.jvp(f, tp.ones(2, dtype=F64), tp.ones(2, dtype=F64), mode="forward")
    assert type(info.value) is RuntimeError              # the eager run's own error
