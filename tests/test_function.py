"""Custom ``tensorplay.autograd.Function`` and the engine's multi-output nodes.

Values are checked against closed forms and float64 central finite differences
(``fd``); behaviour and messages against ``torch.autograd.Function``'s documented
semantics (and torch itself, when installed, in the tests marked so).
"""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay import autograd
from tensorplay.autograd import Function, FunctionCtx, forward_ad, functional
from tensorplay.autograd.function import once_differentiable


@pytest.fixture
def rng():
    return np.random.default_rng(20261201)


def leaf(arr):
    return tp.tensor(np.asarray(arr, dtype=np.float64), requires_grad=True)


def const(arr):
    return tp.tensor(np.asarray(arr, dtype=np.float64))


def npy(t):
    return t.detach().numpy()


def fd(f, x, v, eps=1e-6):
    """(f(x + eps v) - f(x - eps v)) / (2 eps), float64, f: Tensor -> Tensor."""
    with tp.no_grad():
        return (npy(f(const(x + eps * v))) - npy(f(const(x - eps * v)))) / (2 * eps)


# ------------------------------------------------------------------- functions
class Exp(Function):
    """exp, saving its output; backward and jvp in tensorplay ops."""

    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        ctx.save_for_forward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        y, = ctx.saved_tensors
        return g * y

    @staticmethod
    def jvp(ctx, t):
        y, = ctx.saved_tensors
        return t * y


class SinCos(Function):
    """Two outputs (sin x, cos x); counts its backward calls."""
    calls = []

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x.sin(), x.cos()

    @staticmethod
    def backward(ctx, gs, gc):
        SinCos.calls.append((gs, gc))
        x, = ctx.saved_tensors
        return gs * x.cos() - gc * x.sin()

    @staticmethod
    def jvp(ctx, t):
        x, = ctx.saved_tensors
        return t * x.cos(), -t * x.sin()


class Cube(Function):
    """x**3 * k for a Python float k (a non-Tensor argument); setup_context style."""

    @staticmethod
    def forward(x, k=1.0):
        return x * x * x * k

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, k = inputs
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        ctx.k = k

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * 3 * x * x * ctx.k, None

    @staticmethod
    def jvp(ctx, t, _):
        x, = ctx.saved_tensors
        return t * 3 * x * x * ctx.k


# ------------------------------------------------------------------- values
def test_custom_exp_value_gradient_and_node(rng):
    xv = rng.standard_normal(5)
    x = leaf(xv)
    y = Exp.apply(x)
    np.testing.assert_allclose(npy(y), np.exp(xv))
    assert y.requires_grad and y.grad_fn.name() == "ExpBackward"
    assert type(y.grad_fn).__name__ == "ExpBackward"
    assert isinstance(y.grad_fn, FunctionCtx)
    (fn, nr), = y.grad_fn.next_functions
    assert fn.name() == "AccumulateGrad" and fn.variable is x and nr == 0
    w = rng.standard_normal(5)
    y.backward(const(w))
    np.testing.assert_allclose(npy(x.grad), w * np.exp(xv))
    # finite differences of the whole map, direction by direction
    for k in range(5):
        e = np.eye(5)[k]
        np.testing.assert_allclose(npy(x.grad)[k],
                                   fd(lambda t: (Exp.apply(t) * const(w)).sum(), xv, e),
                                   rtol=1e-6)


def test_custom_exp_in_a_larger_graph_and_gradcheck(rng):
    x = leaf(rng.standard_normal((2, 3)))
    assert autograd.gradcheck(lambda t: (Exp.apply(t * 2) + t).sin(), (x,))
    assert autograd.gradcheck(lambda t: Exp.apply(t), (x,), check_forward_ad=True)


def test_second_derivative_through_differentiable_backward(rng):
    xv = rng.standard_normal(4)
    x = leaf(xv)
    y = Cube.apply(x, 2.0)
    g, = autograd.grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(npy(g), 6 * xv ** 2)
    assert g.requires_grad
    h, = autograd.grad(g.sum(), x)
    np.testing.assert_allclose(npy(h), 12 * xv)       # d2/dx2 (2 x^3) = 12 x
    # exp: every order is exp
    x2 = leaf(xv)
    g1, = autograd.grad(Exp.apply(x2).sum(), x2, create_graph=True)
    g2, = autograd.grad(g1.sum(), x2, create_graph=True)
    g3, = autograd.grad(g2.sum(), x2)
    np.testing.assert_allclose(npy(g3), np.exp(xv))


def test_hessian_vector_product_through_function(rng):
    # forward-over-reverse: the tangent of grad(f) is H v
    xv, vv = rng.standard_normal(3), rng.standard_normal(3)
    x = leaf(xv)
    with forward_ad.dual_level():
        d = forward_ad.make_dual(x, const(vv))
        g, = autograd.grad(Cube.apply(d, 1.0).sum(), d, create_graph=True)
        hv = forward_ad.unpack_dual(g).tangent
    np.testing.assert_allclose(npy(hv), 6 * xv * vv)


def test_reverse_over_forward_through_jvp(rng):
    xv, vv = rng.standard_normal(3), rng.standard_normal(3)
    x = leaf(xv)
    with forward_ad.dual_level():
        d = forward_ad.make_dual(x, const(vv))
        t = forward_ad.unpack_dual(Cube.apply(d, 1.0)).tangent     # 3 x^2 v
        gx, = autograd.grad(t.sum(), x)
    np.testing.assert_allclose(npy(gx), 6 * xv * vv)


def test_jvp_forward_mode_vs_closed_form(rng):
    xv, vv = rng.standard_normal(4), rng.standard_normal(4)
    out, jv = functional.jvp(lambda t: Exp.apply(t), const(xv), const(vv), mode="forward")
    np.testing.assert_allclose(npy(out), np.exp(xv))
    np.testing.assert_allclose(npy(jv), np.exp(xv) * vv)
    np.testing.assert_allclose(npy(jv), fd(lambda t: Exp.apply(t), xv, vv), rtol=1e-6)
    outs, jvs = functional.jvp(lambda t: SinCos.apply(t), const(xv), const(vv),
                               mode="forward")
    np.testing.assert_allclose(npy(jvs[0]), np.cos(xv) * vv)
    np.testing.assert_allclose(npy(jvs[1]), -np.sin(xv) * vv)
    # the reversed mode goes through backward instead, same numbers
    _, jr = functional.jvp(lambda t: Exp.apply(t), const(xv), const(vv))
    np.testing.assert_allclose(npy(jr), np.exp(xv) * vv)


def test_jvp_gets_zeros_for_tensor_inputs_without_tangent_and_none_for_others():
    seen = []

    class Mul(Function):
        @staticmethod
        def forward(ctx, x, y, k):
            ctx.save_for_forward(x, y)
            ctx.k = k
            return x * y * k

        @staticmethod
        def jvp(ctx, tx, ty, tk):
            seen.append((npy(tx), npy(ty), tk))
            x, y = ctx.saved_tensors
            return (tx * y + x * ty) * ctx.k

    x, y = const([1., 2.]), const([3., 4.])
    with forward_ad.dual_level():
        out = Mul.apply(forward_ad.make_dual(x, const([1., 1.])), y, 2.0)
        tan = forward_ad.unpack_dual(out).tangent
    np.testing.assert_allclose(npy(tan), [6., 8.])
    np.testing.assert_array_equal(seen[0][1], [0., 0.])
    assert seen[0][2] is None


# ------------------------------------------------------------------- multi-output
def test_two_outputs_one_backward_call_after_all_consumers(rng):
    xv = rng.standard_normal(3)
    x = leaf(xv)
    SinCos.calls.clear()
    s, c = SinCos.apply(x * 1)
    assert s.grad_fn is c.grad_fn and s.grad_fn.name() == "SinCosBackward"
    # output 0 reached through a long chain, output 1 directly and through s
    a = s
    for _ in range(5):
        a = a * 1.5
    loss = a.sum() + (c * c).sum() + (s * c).sum()
    loss.backward()
    assert len(SinCos.calls) == 1
    sn, cs = np.sin(xv), np.cos(xv)
    gs = 1.5 ** 5 + cs
    gc = 2 * cs + sn
    np.testing.assert_allclose(npy(SinCos.calls[0][0]), gs)
    np.testing.assert_allclose(npy(SinCos.calls[0][1]), gc)
    np.testing.assert_allclose(npy(x.grad), gs * cs - gc * sn)
    for k in range(3):
        e = np.eye(3)[k]

        def f(t):
            s, c = SinCos.apply(t)
            a = s * 1.5 ** 5
            return a.sum() + (c * c).sum() + (s * c).sum()
        np.testing.assert_allclose(npy(x.grad)[k], fd(f, xv, e), rtol=1e-6)


def test_two_outputs_as_roots_of_one_pass_and_gradcheck(rng):
    xv = rng.standard_normal(3)
    x = leaf(xv)
    SinCos.calls.clear()
    s, c = SinCos.apply(x)
    autograd.backward([s, c], [const(np.ones(3)), const(2 * np.ones(3))])
    assert len(SinCos.calls) == 1
    np.testing.assert_allclose(npy(x.grad), np.cos(xv) - 2 * np.sin(xv))
    assert autograd.gradcheck(lambda t: SinCos.apply(t), (leaf(xv),), check_forward_ad=True)


def test_unused_output_gets_zeros_or_none_per_materialize():
    x = leaf([0.5, 1.0])
    SinCos.calls.clear()
    s, c = SinCos.apply(x)
    s.sum().backward()
    gs, gc = SinCos.calls[0]
    np.testing.assert_array_equal(npy(gc), [0., 0.])
    np.testing.assert_allclose(npy(x.grad), np.cos([0.5, 1.0]))

    got = []

    class Lazy(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            got.append((ga, gb))
            return (0 if ga is None else ga * 2) + (0 if gb is None else gb * 3)

    a, b = Lazy.apply(x)
    g, = autograd.grad(b.sum(), x)
    assert got[0][0] is None
    np.testing.assert_array_equal(npy(g), [3., 3.])


def test_next_functions_name_the_output_of_a_multi_output_node():
    x = leaf([1., 2.])
    s, c = SinCos.apply(x)
    y = s * c
    (f0, n0), (f1, n1) = y.grad_fn.next_functions
    assert f0 is s.grad_fn and f1 is s.grad_fn and (n0, n1) == (0, 1)


def test_grad_with_respect_to_outputs_of_a_function():
    x = leaf([1., 2.])
    s, c = SinCos.apply(x)
    y = (s * 2 + c * 3).sum()
    gs, gc, gs2 = autograd.grad(y, [s, c, s])
    np.testing.assert_array_equal(npy(gs), [2., 2.])
    np.testing.assert_array_equal(npy(gc), [3., 3.])
    np.testing.assert_array_equal(npy(gs2), [2., 2.])


def test_integer_and_non_tensor_outputs_mixed_with_differentiable_ones():
    got = []

    class ArgmaxAndDouble(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x.argmax(), "tag"

        @staticmethod
        def backward(ctx, g, gi, gtag):
            got.append((gi, gtag))
            return g * 2

    x = leaf([1., 3., 2.])
    y, i, tag = ArgmaxAndDouble.apply(x)
    assert tag == "tag" and i.item() == 1
    assert y.requires_grad and not i.requires_grad and i.grad_fn is None
    y.sum().backward()
    np.testing.assert_array_equal(npy(x.grad), [2., 2., 2.])
    assert got[0][0].item() == 0 and got[0][1] is None


def test_mark_non_differentiable():
    got = []

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            a, b = x * 2, x * 3
            ctx.mark_non_differentiable(b)
            return a, b

        @staticmethod
        def backward(ctx, ga, gb):
            got.append(gb)
            return ga * 2

    x = leaf([1., 2.])
    a, b = Two.apply(x)
    assert a.requires_grad and not b.requires_grad and b.grad_fn is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        b.sum().backward()
    a.sum().backward()
    np.testing.assert_array_equal(npy(got[0]), [0., 0.])
    np.testing.assert_array_equal(npy(x.grad), [2., 2.])


# ------------------------------------------------------------------- ctx features
def test_needs_input_grad_and_non_tensor_arguments():
    seen = []

    class Lin(Function):
        @staticmethod
        def forward(ctx, x, w, k, name="lin"):
            seen.append(ctx.needs_input_grad)
            ctx.save_for_backward(x, w)
            ctx.k = k
            return x * w * k

        @staticmethod
        def backward(ctx, g):
            seen.append(ctx.needs_input_grad)
            x, w = ctx.saved_tensors
            gx = g * w * ctx.k if ctx.needs_input_grad[0] else None
            gw = g * x * ctx.k if ctx.needs_input_grad[1] else None
            return gx, gw, None, None

    x, w = leaf([1., 2.]), const([3., 4.])
    y = Lin.apply(x, w, 2.0, "n")
    assert seen[0] == (True, False, False, False)
    y.sum().backward()
    assert seen[1] == (True, False, False, False)
    np.testing.assert_array_equal(npy(x.grad), [6., 8.])
    assert len(y.grad_fn.next_functions) == 2         # one per Tensor argument
    assert y.grad_fn.next_functions[1] == (None, 0)
    with tp.no_grad():
        z = Lin.apply(x, w, 2.0)
    assert not z.requires_grad and seen[-1] == (True, False, False)    # as torch 2.13


def test_no_input_requiring_grad_records_nothing():
    y = Exp.apply(const([1.]))
    assert not y.requires_grad and y.grad_fn is None


def test_saved_tensor_modified_in_place_raises_naming_the_function():
    a = leaf([1., 2.]) * 1
    y = Cube.apply(a)
    a.mul_(2)
    with pytest.raises(RuntimeError, match=r"saved tensor 0 of CubeBackward is at version 1; "
                                           r"expected version 0.*mul_"):
        y.sum().backward()


def test_saved_output_modified_in_place_raises():
    x = leaf([1., 2.])
    y = Exp.apply(x)
    with tp.no_grad():
        y.add_(1)
    with pytest.raises(RuntimeError, match="ExpBackward"):
        y.sum().backward()


def test_saved_tensors_freed_after_backward_unless_retain_graph():
    x = leaf([1., 2.])
    y = Exp.apply(x)
    y.sum().backward(retain_graph=True)
    assert len(y.grad_fn.saved_tensors) == 1
    y.sum().backward()
    np.testing.assert_allclose(npy(x.grad), 2 * np.exp([1., 2.]))
    with pytest.raises(RuntimeError, match="backward through the graph a second time.*"
                                           "ExpBackward"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.grad_fn.saved_tensors


def test_saved_output_is_remade_with_the_function_as_grad_fn():
    x = leaf([1., 2.])
    y = Exp.apply(x)
    saved, = y.grad_fn.saved_tensors
    assert saved is not y and saved.grad_fn is y.grad_fn
    np.testing.assert_array_equal(npy(saved), npy(y))


def test_save_for_backward_refuses_non_tensors():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 1

    with pytest.raises(TypeError, match="save_for_backward can only save variables, but "
                                        "argument 1 is of type int"):
        Bad.apply(leaf([1.]))


def test_mark_dirty_rebases_the_input_history():
    class Double_(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def jvp(ctx, t):
            return t * 2

    x = leaf([1., 2.])
    a = x * 1
    old = a.grad_fn
    b = Double_.apply(a)
    assert b is a and a.grad_fn.name() == "Double_Backward"
    assert a.grad_fn.next_functions[0][0] is old
    np.testing.assert_array_equal(npy(a), [2., 4.])
    (a * const([1., 10.])).sum().backward()
    np.testing.assert_array_equal(npy(x.grad), [2., 20.])
    # a view: its root's history goes through the Function (CopySlices)
    x.grad = None
    base = x * 1
    v = base[:1]
    Double_.apply(v)
    np.testing.assert_array_equal(npy(base), [2., 2.])
    base.sum().backward()
    np.testing.assert_array_equal(npy(x.grad), [2., 1.])
    # a leaf that requires grad refuses
    with pytest.raises(RuntimeError, match="Double_.apply.*leaf Variable that requires grad"):
        Double_.apply(leaf([1.]))
    # forward mode: the dirty input's tangent comes from jvp
    with forward_ad.dual_level():
        d = forward_ad.make_dual(const([1., 2.]), const([1., 3.]))
        Double_.apply(d)
        np.testing.assert_array_equal(npy(forward_ad.unpack_dual(d).tangent), [2., 6.])


def test_mark_dirty_input_must_be_returned():
    class Forgot(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x * 1

    with pytest.raises(RuntimeError, match="marked as dirty.*not returned"):
        Forgot.apply(leaf([1.]) * 1)


def test_input_returned_unchanged_is_a_view_with_the_function_as_grad_fn():
    class Id(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    x = leaf([1., 2.])
    y = Id.apply(x)
    assert y is not x and y.grad_fn.name() == "IdBackward"
    assert y._version is x._version and np.shares_memory(y._data, x._data)
    y.sum().backward()
    np.testing.assert_array_equal(npy(x.grad), [5., 5.])
    with pytest.raises(RuntimeError):       # writing through it would bypass IdBackward
        y.add_(1)


def test_once_differentiable_runs_under_no_grad_and_refuses_a_second_pass():
    modes = []

    class Sq(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            modes.append(tp.is_grad_enabled())
            x, = ctx.saved_tensors
            return 2 * x * g

    x = leaf([1., 2.])
    g, = autograd.grad(Sq.apply(x).sum(), x, create_graph=True)
    assert modes == [False]
    np.testing.assert_array_equal(npy(g), [2., 4.])
    with pytest.raises(RuntimeError, match="differentiate twice a function that was marked "
                                           "with @once_differentiable.*SqBackward"):
        autograd.grad(g.sum(), x)
    g2, = autograd.grad(Sq.apply(x).sum(), x)     # a plain first derivative is fine
    np.testing.assert_array_equal(npy(g2), [2., 4.])


def test_vjp_alias_and_setup_context_defaults():
    class V(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def vjp(ctx, g):
            return g * 7

    x = leaf([1.])
    V.apply(x).backward()
    assert x.grad.item() == 7.
    y = Cube.apply(x)                 # k defaults to 1.0 in setup_context's inputs
    g, = autograd.grad(y, x)
    assert g.item() == 3.
    y = Cube.apply(x, k=2.0)
    g, = autograd.grad(y, x)
    assert g.item() == 6.


def test_broadcastable_gradient_is_summed_and_dtype_cast():
    class Wide(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return tp.ones(3, 2, dtype=tp.float32)

    x = leaf([1., 2.])
    Wide.apply(x).sum().backward()
    assert x.grad.dtype == tp.float64
    np.testing.assert_array_equal(npy(x.grad), [3., 3.])


def test_function_works_with_hessian_style_nesting(rng):
    # d/dx of (grad of Exp(x) . v) = exp(x) * v, via create_graph through the node
    xv, vv = rng.standard_normal(3), rng.standard_normal(3)
    x = leaf(xv)
    g, = autograd.grad(Exp.apply(x).sum(), x, create_graph=True)
    hv, = autograd.grad(g, x, grad_outputs=const(vv))
    np.testing.assert_allclose(npy(hv), np.exp(xv) * vv)


# ------------------------------------------------------------------- errors
def _fn_returning(grads, nargs=1):
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, *rest):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return grads()
    return Bad


def test_wrong_number_of_gradients():
    with pytest.raises(RuntimeError, match=r"function BadBackward returned an incorrect number "
                                           r"of gradients \(expected 2, got 1\)"):
        _fn_returning(lambda: tp.ones(2)).apply(leaf([1., 2.]), 3.0).sum().backward()
    with pytest.raises(RuntimeError, match=r"expected 1, got 2"):
        _fn_returning(lambda: (tp.ones(2), tp.ones(2))).apply(leaf([1., 2.])).sum().backward()
    # extra trailing Nones are accepted (PyTorch)
    x = leaf([1., 2.])
    _fn_returning(lambda: (tp.ones(2), None)).apply(x).sum().backward()
    np.testing.assert_array_equal(npy(x.grad), [1., 1.])


def test_gradient_for_a_non_tensor_argument():
    with pytest.raises(RuntimeError, match="function BadBackward returned a gradient different "
                                           "than None at position 2, but the corresponding "
                                           "forward input was not a Variable"):
        _fn_returning(lambda: (tp.ones(2), tp.ones(1))).apply(leaf([1., 2.]), 3).sum().backward()


def test_gradient_of_wrong_shape_or_type():
    with pytest.raises(RuntimeError, match=r"Function BadBackward returned an invalid gradient "
                                           r"at index 0 - got \[3\] but expected shape "
                                           r"compatible with \[2\]"):
        _fn_returning(lambda: tp.ones(3)).apply(leaf([1., 2.])).sum().backward()
    with pytest.raises(RuntimeError, match="function BadBackward returned a float as the "
                                           "gradient of input 0"):
        _fn_returning(lambda: 1.0).apply(leaf([1., 2.])).sum().backward()


def test_missing_methods():
    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    y = NoBackward.apply(leaf([1.]))
    with pytest.raises(NotImplementedError, match="NoBackward: You must implement either the "
                                                  "backward or vjp method"):
        y.backward()
    with forward_ad.dual_level():
        d = forward_ad.make_dual(const([1.]), const([1.]))
        with pytest.raises(NotImplementedError, match="NoBackward: You must implement the jvp "
                                                      "function for custom autograd.Function "
                                                      "to use it with forward mode AD"):
            NoBackward.apply(d)
    with pytest.raises(NotImplementedError, match="jvp"):
        functional.jvp(lambda t: NoBackward.apply(t), const([1.]), const([1.]), mode="forward")

    class NoForward(Function):
        pass

    with pytest.raises(NotImplementedError, match="must implement the forward"):
        NoForward.apply(leaf([1.]))


def test_jvp_result_checked():
    class BadJvp(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def jvp(ctx, t):
            return t, t

    class WrongSize(BadJvp):
        @staticmethod
        def jvp(ctx, t):
            return tp.ones(3, dtype=tp.float64)

    with forward_ad.dual_level():
        d = forward_ad.make_dual(const([1., 2.]), const([1., 1.]))
        with pytest.raises(RuntimeError, match=r"BadJvp: Function's jvp returned an invalid "
                                               r"number of forward gradients \(expected 1 but "
                                               r"got 2\)"):
            BadJvp.apply(d)
        with pytest.raises(RuntimeError, match=r"WrongSize: jvp returned a tangent of size \[3\]"):
            WrongSize.apply(d)


def test_legacy_call_refused():
    with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward "
                                           "method is deprecated"):
        Exp()(leaf([1.]))


# ------------------------------------------------------------------- vs torch
def test_matches_torch_on_a_two_output_function(rng):
    torch = pytest.importorskip("torch")
    xv = rng.standard_normal(4)
    w1, w2 = rng.standard_normal(4), rng.standard_normal(4)

    class TSinCos(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin(), x.cos()

        @staticmethod
        def backward(ctx, gs, gc):
            x, = ctx.saved_tensors
            return gs * x.cos() - gc * x.sin()

    xt = torch.tensor(xv, requires_grad=True)
    s, c = TSinCos.apply(xt)
    gt, = torch.autograd.grad((s * torch.tensor(w1) + c * c * torch.tensor(w2)).sum(), xt)
    x = leaf(xv)
    s, c = SinCos.apply(x)
    g, = autograd.grad((s * const(w1) + c * c * const(w2)).sum(), x)
    np.testing.assert_allclose(npy(g), gt.numpy(), rtol=1e-12)


def test_node_does_not_keep_its_outputs_alive_without_the_collector():
    import gc
    import weakref
    x = leaf([1., 2.])
    gc.disable()
    try:
        y = Exp.apply(x)            # saves its own output
        s, c = SinCos.apply(x)
        node, node2 = weakref.ref(y.grad_fn), weakref.ref(s.grad_fn)
        out = weakref.ref(y)
        del y, s, c
        assert out() is None and node() is None and node2() is None
    finally:
        gc.enable()


def test_public_names():
    assert autograd.Function is Function and autograd.FunctionCtx is FunctionCtx
    assert autograd.once_differentiable is once_differentiable
    from tensorplay.autograd import function
    assert function.Function is Function
