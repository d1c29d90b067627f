"""``autograd.gradcheck`` / ``gradgradcheck`` (torch.autograd's signatures and checks).

Each check is shown both ways: it passes on correct functions (several inputs and
outputs, non-tensor arguments, nested lists, integer outputs, every mode), and it
fails -- raising ``GradcheckError`` or returning False -- on deliberately wrong
rules, registered as throwaway primitives (``register_op``: removed from the
REGISTRY afterwards, since other tests iterate it).  The wrong rules differ from
the right ones by a closed form (d(x^3) = 3x^2 dx, wrongly 2x dx), so the values
the error message prints are checked against it.
"""
import re
import uuid

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import autograd
from tensorplay._ops import registry

F64 = tp.float64


@pytest.fixture
def rng():
    return np.random.default_rng(8)


def leaf(rng, *shape, pos=False):
    a = rng.standard_normal(shape)
    return tp.tensor(np.abs(a) + 0.5 if pos else a, dtype=F64, requires_grad=True)


def npy(t):
    return t.detach().numpy()



def _cube_fwd(x):
    return x ** 3


def _right(g, out, x):          # d(x^3) = 3 x^2
    return g * 3 * x * x


def _wrong(g, out, x):          # wrongly 2 x
    return g * 2 * x


def _jvp_of(rule):
    return lambda ts, out, x: rule(ts[0], out, x)


@pytest.fixture
def cubes(register_op):
    """``right``, ``wrong_vjp``, ``wrong_jvp``: x^3 with right and wrong rules."""
    return {
        "right": register_op(_cube_fwd, vjp=(_right,), jvp=_jvp_of(_right)),
        "wrong_vjp": register_op(_cube_fwd, vjp=(_wrong,), jvp=_jvp_of(_right)),
        "wrong_jvp": register_op(_cube_fwd, vjp=(_right,), jvp=_jvp_of(_wrong)),
    }


MODES = [dict(), dict(fast_mode=True)]
MODE_IDS = ["slow", "fast"]


# ================================================================ passing functions
def _several(x, k, y):
    """Two float outputs of different shapes, an integer one (not checked), a number."""
    return (x * k).exp() @ y, (x.sin() * k).sum(), (x > 0).long()


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("forward", [False, True])
def test_passes_on_several_inputs_and_outputs(rng, mode, forward):
    x, y = leaf(rng, 2, 3), leaf(rng, 3, 2)
    assert autograd.gradcheck(_several, (x, 0.7, y), check_forward_ad=forward, **mode) is True


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_passes_with_fixed_tensor_inputs_and_list_outputs(rng, mode):
    x = leaf(rng, 4)
    c = tp.tensor(rng.standard_normal(4), dtype=F64)        # no requires_grad: held fixed
    assert autograd.gradcheck(lambda x, c: [x * c, (x * x).tanh()], (x, c),
                              check_forward_ad=True, check_batched_grad=True, **mode)


def test_a_single_tensor_input_needs_no_tuple(rng):
    assert autograd.gradcheck(lambda x: x.sigmoid(), leaf(rng, 3))


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_tensors_inside_a_list_argument_are_checked(rng, mode, cubes):
    # PyTorch's gradcheck crashes on this (IndexError); tensorplay checks them
    x, y = leaf(rng, 2), leaf(rng, 3)
    f = lambda a, ys: (a.exp().sum() * ys[0], cubes["right"](ys[1]))   # noqa: E731
    assert autograd.gradcheck(f, (x, [y, leaf(rng, 2)]), check_forward_ad=True, **mode)
    g = lambda a, ys: a.exp().sum() * cubes["wrong_vjp"](ys[0])        # noqa: E731
    with pytest.raises(autograd.GradcheckError, match=r"input 1\[0\]"):
        autograd.gradcheck(g, (x, [y]), **mode)


def test_scalar_and_empty_tensors(rng):
    s = tp.tensor(0.3, dtype=F64, requires_grad=True)
    e = tp.zeros(0, 3, dtype=F64, requires_grad=True)
    assert autograd.gradcheck(lambda s, e: (s.exp(), e * s), (s, e), check_forward_ad=True)


def test_non_contiguous_input(rng):
    base = tp.tensor(rng.standard_normal((3, 4)), dtype=F64)
    x = base.t().requires_grad_()              # a transposed view, still a leaf
    assert not x.is_contiguous()
    assert autograd.gradcheck(lambda x: (x @ x.t()).sum(1), (x,), check_forward_ad=True)


def test_inputs_are_restored(rng, cubes):
    x = leaf(rng, 5)
    before = npy(x).copy()
    assert not autograd.gradcheck(cubes["wrong_vjp"], (x,), raise_exception=False)
    np.testing.assert_array_equal(npy(x), before)


# ================================================================ catching wrong rules
@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_catches_a_wrong_vjp(rng, cubes, mode):
    x = leaf(rng, 3)
    with pytest.raises(autograd.GradcheckError) as info:
        autograd.gradcheck(cubes["wrong_vjp"], (x,), **mode)
    assert isinstance(info.value, RuntimeError)
    msg = str(info.value)
    assert msg.startswith("Jacobian mismatch for output 0 with respect to input 0,")
    assert "numerical:" in msg and "analytical:" in msg
    assert autograd.gradcheck(cubes["wrong_vjp"], (x,), raise_exception=False, **mode) is False
    # forward mode alone does not look at the VJP
    assert autograd.gradcheck(cubes["wrong_vjp"], (x,), check_forward_ad=True,
                              check_backward_ad=False, **mode)


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_catches_a_wrong_jvp(rng, cubes, mode):
    x = leaf(rng, 3)
    assert autograd.gradcheck(cubes["wrong_jvp"], (x,), **mode)     # reverse mode only
    with pytest.raises(autograd.GradcheckError) as info:
        autograd.gradcheck(cubes["wrong_jvp"], (x,), check_forward_ad=True, **mode)
    assert str(info.value).startswith(
        "Jacobian computed with forward mode mismatch for output 0 with respect to input 0,")
    assert autograd.gradcheck(cubes["wrong_jvp"], (x,), check_forward_ad=True,
                              raise_exception=False, **mode) is False


def test_message_shows_both_jacobians_and_the_worst_entry(rng, cubes):
    x = leaf(rng, 2, 2)
    xv = npy(x)
    with pytest.raises(autograd.GradcheckError) as info:
        autograd.gradcheck(cubes["wrong_vjp"], (x,))
    msg = str(info.value)
    # PyTorch's layout: rows are input elements, columns output elements
    assert "(rows: the 4 elements of input 0, columns: the 4 elements of output 0)" in msg
    num = 3 * xv.ravel() ** 2
    ana = 2 * xv.ravel()
    excess = np.abs(ana - num) - (1e-5 + 1e-3 * np.abs(num))
    i = int(np.argmax(excess))
    pos = str([int(v) for v in np.unravel_index(i, (2, 2))])
    assert f"The worst entry: d output 0{pos} / d input 0{pos}:" in msg
    line = msg[msg.index("The worst entry"):]
    got_num = float(line.split("numerical ")[1].split(",")[0])
    got_ana = float(line.split("analytical ")[1].split(" ")[0])
    assert got_num == pytest.approx(num[i], rel=1e-6)
    assert got_ana == pytest.approx(ana[i], rel=1e-12)
    # the printed Jacobians are the diagonal matrices diag(3x^2) and diag(2x)
    numerical = msg.split("numerical:")[1].split("analytical:")[0]
    assert f"{num[0]:.6f}"[:6] in numerical


def test_message_names_positions_in_inputs_and_outputs(rng, cubes):
    x, y = leaf(rng, 2), leaf(rng, 3)

    def f(k, x, y):        # a number first: the failing tensor is input 2 of (k, x, y)
        return x * k, cubes["wrong_vjp"](y)
    with pytest.raises(autograd.GradcheckError) as info:
        autograd.gradcheck(f, (2.0, x, y))
    assert str(info.value).startswith("Jacobian mismatch for output 1 with respect to input 2,")
    assert "d output 1[" in str(info.value) and "/ d input 2[" in str(info.value)


def test_fast_mode_message_has_the_scalars_and_the_slow_jacobians(rng, cubes):
    x = leaf(rng, 3)
    with pytest.raises(autograd.GradcheckError) as info:
        autograd.gradcheck(cubes["wrong_vjp"], (x,), fast_mode=True)
    msg = str(info.value)
    n = float(msg.split("numerical:")[1].split("\n")[0])
    a = float(msg.split("analytical:")[1].split("\n")[0])
    assert abs(n - a) > 1e-3
    assert "in slow mode" in msg and "The worst entry" in msg
    assert "max per-element difference (slow mode)" in msg


def test_fast_mode_projections_are_the_closed_form(rng, cubes):
    """v^T J u with gradcheck's own u and v (a fixed-seed generator): the printed
    scalars are v . (3x^2 * u) and v . (2x * u) (J diagonal)."""
    x = leaf(rng, 4)
    with pytest.raises(autograd.GradcheckError) as info:
        autograd.gradcheck(cubes["wrong_vjp"], (x,), fast_mode=True)
    msg = str(info.value)
    g = np.random.default_rng(67280421310721)
    u = g.random(4)
    u /= np.linalg.norm(u)
    v = g.random(4)
    v /= np.linalg.norm(v)
    xv = npy(x)
    n = float(msg.split("numerical:")[1].split("\n")[0])
    a = float(msg.split("analytical:")[1].split("\n")[0])
    assert n == pytest.approx(v @ (3 * xv ** 2 * u), rel=1e-6)
    assert a == pytest.approx(v @ (2 * xv * u), rel=1e-12)


def test_does_not_touch_the_global_random_state(rng, cubes):
    tp.manual_seed(5)
    want = tp.rand(3)
    tp.manual_seed(5)
    autograd.gradcheck(cubes["right"], (leaf(rng, 3),), fast_mode=True, check_forward_ad=True)
    np.testing.assert_array_equal(npy(tp.rand(3)), npy(want))


def test_nondeterministic_backward(rng, register_op):
    noise = np.random.default_rng(0)

    def noisy(g, out, x):
        return g * (3 * x * x + float(noise.standard_normal()) * 1e-9)
    f = register_op(_cube_fwd, vjp=(noisy,), jvp=_jvp_of(_right))
    x = leaf(rng, 3)
    with pytest.raises(autograd.GradcheckError, match="Backward is not reentrant"):
        autograd.gradcheck(f, (x,))
    assert autograd.gradcheck(f, (x,), nondet_tol=1e-6)
    assert autograd.gradcheck(f, (x,), nondet_tol=1e-6, fast_mode=True)


def test_backward_not_multiplied_by_grad_output(rng, register_op):
    # right where the cotangent is one, but g is added instead of multiplied
    f = register_op(_cube_fwd, vjp=(lambda g, out, x: g + 3 * x * x - 1,), jvp=_jvp_of(_right))
    x = leaf(rng, 1)
    with pytest.raises(autograd.GradcheckError, match="backward not multiplied by grad_output"):
        autograd.gradcheck(f, (x,))


def test_no_differentiable_output(rng):
    x = leaf(rng, 3)
    # constant in x: the numerical Jacobian is zero, nothing else to check
    assert autograd.gradcheck(lambda x: tp.ones(2, dtype=F64), (x,))
    # depends on x but hides it from autograd
    with pytest.raises(autograd.GradcheckError,
                       match="Numerical gradient for function expected to be zero"):
        autograd.gradcheck(lambda x: x.detach() * 2, (x,))
    assert not autograd.gradcheck(lambda x: x.detach() * 2, (x,), fast_mode=True,
                                  raise_exception=False)


# ================================================================ undefined grads
def _mul_fwd(x, y):
    return x * y


def _mul_vjps():
    return (lambda g, out, x, y: g * y, lambda g, out, x, y: g * x)


def test_undefined_tangent_must_not_crash(rng, register_op):
    """A JVP rule that assumes every input has a tangent fails on a plain input."""
    naive = register_op(_mul_fwd, vjp=_mul_vjps(),
                        jvp=lambda ts, out, x, y: ts[0] * y + ts[1] * x)
    careful = register_op(_mul_fwd, vjp=_mul_vjps(),
                          jvp=lambda ts, out, x, y: registry.tangent_sum(
                              None if ts[0] is None else ts[0] * y,
                              None if ts[1] is None else ts[1] * x))
    x, y = leaf(rng, 3), leaf(rng, 3)
    assert autograd.gradcheck(careful, (x, y), check_forward_ad=True)
    with pytest.raises(autograd.GradcheckError, match="input 0 has no tangent"):
        autograd.gradcheck(naive, (x, y), check_forward_ad=True)
    # without the check, the Jacobians alone (zero tangents, never None) pass
    assert autograd.gradcheck(naive, (x, y), check_forward_ad=True, check_undefined_grad=False)


def test_undefined_output_grad_with_several_outputs_passes(rng):
    x = leaf(rng, 3)
    assert autograd.gradcheck(lambda x: (x.exp(), x.sin(), x * 2), (x,))


# ================================================================ inputs, flags, errors
def test_float32_inputs_warn_as_pytorch(rng):
    x = tp.tensor(rng.standard_normal(3), dtype=tp.float32, requires_grad=True)
    with pytest.warns(UserWarning, match=r"Input #0 requires gradient and is not a double "
                                         r"precision floating point"):
        autograd.gradcheck(lambda x: x * 2, (x,), atol=1e-2, rtol=1e-2, eps=1e-3)


def test_errors(rng):
    x = leaf(rng, 3)
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        autograd.gradcheck(lambda x: x * 2, (x.detach(),))
    with pytest.raises(ValueError, match="at least one input tensor"):
        autograd.gradcheck(lambda k: k, (3.0,))
    with pytest.raises(TypeError, match="inputs must be a Tensor or a tuple"):
        autograd.gradcheck(lambda k: k, 3.0)
    e = tp.tensor([1.0], dtype=F64).expand(3).requires_grad_()
    with pytest.raises(RuntimeError, match="stride 0"):
        autograd.gradcheck(lambda x: x * 2, (e,))
    with pytest.raises(TypeError, match="func must be callable"):
        autograd.gradcheck(3, (x,))
    with pytest.raises(TypeError, match="output 1 is a float"):
        autograd.gradcheck(lambda x: (x * 2, 3.0), (x,))
    with pytest.raises(AssertionError, match="at least one of check_forward_ad"):
        autograd.gradcheck(lambda x: x, (x,), check_backward_ad=False)
    with pytest.raises(AssertionError, match="check_batched_grad=True requires"):
        autograd.gradcheck(lambda x: x, (x,), check_backward_ad=False, check_forward_ad=True,
                           check_batched_grad=True)
    with pytest.raises(AssertionError, match="check_batched_forward_grad=True requires"):
        autograd.gradcheck(lambda x: x, (x,), check_batched_forward_grad=True)
    ro = tp.from_numpy(np.ones(3)).requires_grad_()
    ro._data.flags.writeable = False
    with pytest.raises(RuntimeError, match="read-only"):
        autograd.gradcheck(lambda x: x * 2, (ro,))


def test_shape_change_under_perturbation_is_refused(rng):
    x = leaf(rng, 2)

    def f(x):          # output length depends on the input's values
        return x[: 1 + int(x._data[0] > x0)]
    x0 = float(npy(x)[0])
    with pytest.raises(AssertionError, match="same shape when inputs are perturbed"):
        autograd.gradcheck(f, (x,))


def test_signature_matches_torch():
    torch = pytest.importorskip("torch")
    import inspect
    for ours, theirs in ((autograd.gradcheck, torch.autograd.gradcheck),
                         (autograd.gradgradcheck, torch.autograd.gradgradcheck)):
        a, b = inspect.signature(ours), inspect.signature(theirs)
        assert list(a.parameters) == list(b.parameters)
        for name, p in a.parameters.items():
            assert p.default == b.parameters[name].default, name
            assert p.kind == b.parameters[name].kind, name
    assert issubclass(autograd.GradcheckError, RuntimeError)
    assert tp.autograd.GradcheckError is autograd._gradcheck.GradcheckError


def test_same_first_line_as_torch_for_a_wrong_backward(rng):
    torch = pytest.importorskip("torch")

    class WrongCube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 2 * x

    xv = rng.standard_normal(3)
    with pytest.raises(RuntimeError) as theirs:         # torch's GradcheckError
        torch.autograd.gradcheck(WrongCube.apply,
                                 (torch.tensor(xv, requires_grad=True),))
    f = registry.defop(f"_test_gradcheck_{uuid.uuid4().hex}", _cube_fwd, vjp=(_wrong,),
                       jvp=_jvp_of(_right), saves=("inputs",))
    try:
        with pytest.raises(autograd.GradcheckError) as ours:
            autograd.gradcheck(lambda x: registry.apply(f, (x,), {}),
                               (tp.tensor(xv, dtype=F64, requires_grad=True),))
    finally:
        registry.REGISTRY.pop(f.name)
    assert str(ours.value).split("\n")[0] == str(theirs.value).split("\n")[0]
    # the same numerical Jacobian, printed in the same layout
    t_num = np.diag(3 * xv ** 2)
    block = str(ours.value).split("numerical:")[1].split("analytical:")[0]
    o_num = np.array([float(v) for v in re.findall(r"-?\d+\.\d*(?:e[-+]\d+)?", block)])
    o_num = o_num.reshape(3, 3)
    np.testing.assert_allclose(o_num, t_num, rtol=1e-5, atol=1e-7)


# ================================================================ batched checks
def test_check_batched_grad_passes(rng):
    x, w = leaf(rng, 2, 3), leaf(rng, 3)
    assert autograd.gradcheck(lambda x, w: ((x * w).tanh(), (x @ w).exp()), (x, w),
                              check_batched_grad=True)


def test_check_batched_forward_grad(rng):
    x = leaf(rng, 3)
    from tensorplay.autograd._gradcheck import _vmap
    if _vmap() is None:
        with pytest.raises(NotImplementedError, match="tensorplay.func.vmap"):
            autograd.gradcheck(lambda x: x.exp(), (x,), check_forward_ad=True,
                               check_batched_forward_grad=True)
    else:
        assert autograd.gradcheck(lambda x: x.exp(), (x,), check_forward_ad=True,
                                  check_batched_forward_grad=True)


# ================================================================ gradgradcheck
@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_gradgradcheck_passes(rng, mode):
    x, w = leaf(rng, 2, 3), leaf(rng, 3, 2)
    f = lambda x, w: ((x @ w).sigmoid(), (x * x).sum())          # noqa: E731
    assert autograd.gradgradcheck(f, (x, w), check_fwd_over_rev=True, **mode)
    assert autograd.gradgradcheck(f, (x, w), check_fwd_over_rev=True,
                                  check_rev_over_rev=False, check_undefined_grad=False,
                                  **mode)
    assert autograd.gradgradcheck(f, (x, w), gen_non_contig_grad_outputs=True,
                                  check_batched_grad=True, **mode)


def test_gradgradcheck_with_given_grad_outputs_and_a_constant_input(rng):
    x = leaf(rng, 3)
    c = tp.tensor(rng.standard_normal(3), dtype=F64)
    go = tp.tensor(rng.standard_normal(3), dtype=F64, requires_grad=True)
    assert autograd.gradgradcheck(lambda x, c: (x * c).exp(), (x, c), (go,),
                                  check_fwd_over_rev=True)
    # a grad_output that does not require grad is held fixed
    assert autograd.gradgradcheck(lambda x, c: (x * c).exp(), (x, c), go.detach())


def _detached_cube_vjp(g, out, x):
    # the right first derivative with a wrong second one: d/dx (3 x x_const) = 3 x
    return g * 3 * x.detach() * x


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("fwd", [False, True], ids=["rev_over_rev", "fwd_over_rev"])
def test_gradgradcheck_catches_a_wrong_second_derivative(rng, register_op, mode, fwd):
    f = register_op(_cube_fwd, vjp=(_detached_cube_vjp,), jvp=_jvp_of(_right))
    x = leaf(rng, 3)
    assert autograd.gradcheck(f, (x,), check_forward_ad=True, **mode)   # first order right
    kw = dict(check_fwd_over_rev=True, check_rev_over_rev=False,
              check_undefined_grad=False) if fwd else {}
    with pytest.raises(autograd.GradcheckError) as info:
        autograd.gradgradcheck(f, (x,), **kw, **mode)
    msg = str(info.value)
    assert "for output 0 with respect to input 0," in msg
    assert ("computed with forward mode" in msg) == fwd
    assert autograd.gradgradcheck(f, (x,), raise_exception=False, **kw, **mode) is False


def test_gradgradcheck_second_derivative_values(rng, register_op):
    """The numerical Jacobian of the VJP printed on failure is diag(6 x g)."""
    f = register_op(_cube_fwd, vjp=(_detached_cube_vjp,), jvp=_jvp_of(_right))
    x = leaf(rng, 2)
    g = tp.tensor(rng.standard_normal(2), dtype=F64, requires_grad=True)
    with pytest.raises(autograd.GradcheckError) as info:
        autograd.gradgradcheck(f, (x,), (g,))
    msg = str(info.value)
    line = msg[msg.index("The worst entry"):]
    i = int(line.split("d output 0[")[1].split("]")[0])
    got_num = float(line.split("numerical ")[1].split(",")[0])
    got_ana = float(line.split("analytical ")[1].split(" ")[0])
    xv, gv = npy(x), npy(g)
    assert got_num == pytest.approx(6 * xv[i] * gv[i], rel=1e-5)
    assert got_ana == pytest.approx(3 * xv[i] * gv[i], rel=1e-12)


def test_gradgradcheck_errors(rng):
    x = leaf(rng, 2)
    with pytest.raises(AssertionError, match="at least one of check_fwd_over_rev"):
        autograd.gradgradcheck(lambda x: x * x, (x,), check_rev_over_rev=False)
    with pytest.raises(AssertionError, match="check_undefined_grad=True requires"):
        autograd.gradgradcheck(lambda x: x * x, (x,), check_rev_over_rev=False,
                               check_fwd_over_rev=True)
    with pytest.raises(AssertionError, match="check_batched_grad=True requires"):
        autograd.gradgradcheck(lambda x: x * x, (x,), check_rev_over_rev=False,
                               check_fwd_over_rev=True, check_undefined_grad=False,
                               check_batched_grad=True)
    with pytest.raises(ValueError, match="no output that requires grad"):
        autograd.gradgradcheck(lambda x: x.detach(), (x,))


def test_gradgradcheck_default_grad_outputs_are_reproducible(rng, register_op):
    f = register_op(_cube_fwd, vjp=(_detached_cube_vjp,), jvp=_jvp_of(_right))
    x = leaf(rng, 3)
    msgs = []
    for _ in range(2):
        tp.manual_seed(11)
        with pytest.raises(autograd.GradcheckError) as info:
            autograd.gradgradcheck(f, (x,))
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


# ================================================================ custom Functions
def _cube_function(backward_factor, jvp_factor, backward_detached=False):
    """x^3 as a custom Function whose backward is ``g * c x^2`` (c =
    backward_factor; the right one is 3) and whose jvp is ``t * c' x^2``;
    ``backward_detached`` computes the right first derivative outside the graph
    (so the second derivative is lost)."""
    from tensorplay.autograd import Function

    class CubeFn(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            if backward_detached:
                return g * tp.from_numpy(3 * x.detach().numpy() ** 2)
            return g * backward_factor * x * x

        @staticmethod
        def jvp(ctx, t):
            x, = ctx.saved_tensors
            return t * jvp_factor * x * x
    return CubeFn.apply


def test_custom_function_right_rules_pass(rng):
    pytest.importorskip("tensorplay.autograd.function")
    f = _cube_function(3, 3)
    x = leaf(rng, 3)
    for mode in MODES:
        assert autograd.gradcheck(f, (x,), check_forward_ad=True, check_batched_grad=True,
                                  **mode)
        assert autograd.gradgradcheck(f, (x,), check_fwd_over_rev=True, **mode)


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_custom_function_wrong_backward_caught(rng, mode):
    pytest.importorskip("tensorplay.autograd.function")
    f = _cube_function(2, 3)
    x = leaf(rng, 3)
    with pytest.raises(autograd.GradcheckError,
                       match="^Jacobian mismatch for output 0 with respect to input 0"):
        autograd.gradcheck(f, (x,), check_forward_ad=True, **mode)
    assert autograd.gradcheck(f, (x,), check_forward_ad=True, raise_exception=False,
                              **mode) is False
    # (gradgradcheck checks the backward's own derivatives, consistent here: as
    # PyTorch's, it does not re-check the first order)
    assert autograd.gradgradcheck(f, (x,), **mode)


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_custom_function_backward_with_a_wrong_second_derivative(rng, register_op, mode):
    """The backward is right to first order, but built on a primitive whose own
    VJP is wrong (x^2 with d = x instead of 2x): only gradgradcheck sees it."""
    pytest.importorskip("tensorplay.autograd.function")
    from tensorplay.autograd import Function
    square = register_op(lambda x: x * x, vjp=(lambda g, out, x: g * x,),
                         jvp=lambda ts, out, x: ts[0] * x)

    class CubeFn(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 3 * square(x)
    x = leaf(rng, 3)
    assert autograd.gradcheck(CubeFn.apply, (x,), **mode)
    with pytest.raises(autograd.GradcheckError) as info:
        autograd.gradgradcheck(CubeFn.apply, (x,), **mode)
    assert "for output 0 with respect to input 0," in str(info.value)


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_custom_function_wrong_jvp_caught(rng, mode):
    pytest.importorskip("tensorplay.autograd.function")
    f = _cube_function(3, 2)
    x = leaf(rng, 3)
    assert autograd.gradcheck(f, (x,), **mode)              # reverse mode is right
    with pytest.raises(autograd.GradcheckError,
                       match="^Jacobian computed with forward mode mismatch for output 0"):
        autograd.gradcheck(f, (x,), check_forward_ad=True, **mode)
    assert autograd.gradcheck(f, (x,), check_forward_ad=True, raise_exception=False,
                              **mode) is False


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_custom_function_non_differentiable_backward_caught_by_gradgradcheck(rng, mode):
    pytest.importorskip("tensorplay.autograd.function")
    f = _cube_function(3, 3, backward_detached=True)
    x = leaf(rng, 3)
    assert autograd.gradcheck(f, (x,), check_forward_ad=True, **mode)   # first order right
    with pytest.raises(autograd.GradcheckError):
        autograd.gradgradcheck(f, (x,), **mode)
    with pytest.raises(autograd.GradcheckError):
        autograd.gradgradcheck(f, (x,), check_fwd_over_rev=True, check_rev_over_rev=False,
                               check_undefined_grad=False, **mode)


def test_custom_function_undefined_output_grad(rng):
    """With set_materialize_grads(False), a backward that assumes every cotangent
    is a Tensor crashes when one output is unused: check_undefined_grad finds it."""
    pytest.importorskip("tensorplay.autograd.function")
    from tensorplay.autograd import Function

    def make(careful):
        class TwoOut(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                ctx.save_for_backward(x)
                return x * 2, x * x

            @staticmethod
            def backward(ctx, ga, gb):
                x, = ctx.saved_tensors
                if careful:
                    return registry.tangent_sum(None if ga is None else ga * 2,
                                                None if gb is None else gb * 2 * x)
                return ga * 2 + gb * 2 * x
        return TwoOut.apply
    x = leaf(rng, 3)
    assert autograd.gradcheck(make(True), (x,), check_forward_ad=False)
    # the Jacobian's rows (one output at a time) already meet the None, and the
    # backward's own error comes out, as with torch
    with pytest.raises(TypeError, match="NoneType"):
        autograd.gradcheck(make(False), (x,))
    # the undefined-grad check on its own names the output it left out
    from tensorplay.autograd._gradcheck import _Problem, _undefined_backward
    with pytest.raises(autograd.GradcheckError,
                       match="handle undefined output grads.*output 0's gradient is undefined"):
        _undefined_backward(_Problem(make(False), (x,), "gradcheck"), [0, 1])
    _undefined_backward(_Problem(make(True), (x,), "gradcheck"), [0, 1])
