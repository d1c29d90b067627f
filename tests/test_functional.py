"""``tensorplay.autograd.functional``: vjp, jvp, jacobian, hessian, hvp, vhp.

Values against closed forms (linear maps, quadratic forms ``x^T A x`` whose Hessian
is ``A + A^T``, elementwise functions with diagonal Jacobians) and float64 central
finite differences (a small MLP); result nesting for Tensor and tuple inputs and
outputs; every error and the ``strict`` / ``create_graph`` cases; and, when torch
is installed, the same calls through ``torch.autograd.functional``.
"""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay.autograd import forward_ad, functional as F

F64 = tp.float64
MODES = ["reversed", "forward"]


@pytest.fixture
def rng():
    return np.random.default_rng(8)


def const(a):
    return tp.tensor(np.asarray(a, dtype=np.float64))


def npy(t):
    return t.detach().numpy()


def fd_jacobian(f, xs, eps=1e-6):
    """Float64 central differences: ``J[k][j]`` of shape ``out_k.shape + x_j.shape``
    for ``f`` taking and returning numpy arrays via tensors (tuples of them)."""
    xs = [np.asarray(x, dtype=np.float64) for x in xs]

    def call(arrs):
        with tp.no_grad():
            out = f(*[const(a) for a in arrs])
        return [npy(o) for o in (out if isinstance(out, tuple) else (out,))]

    base = call(xs)
    jac = [[np.zeros(o.shape + x.shape) for x in xs] for o in base]
    for j, x in enumerate(xs):
        for idx in np.ndindex(x.shape):
            plus = [a.copy() for a in xs]
            minus = [a.copy() for a in xs]
            plus[j][idx] += eps
            minus[j][idx] -= eps
            for k, (p, m) in enumerate(zip(call(plus), call(minus))):
                jac[k][j][(Ellipsis,) + idx] = (p - m) / (2 * eps)
    return jac


# ---- functions with closed forms
A = np.array([[1.0, 2.0, -1.0], [0.5, -3.0, 2.0]])          # (2, 3)
Q = np.array([[2.0, 1.0, 0.0], [-1.0, 3.0, 0.5], [0.0, 4.0, 1.0]])   # not symmetric


def linear(x):
    return const(A) @ x


def quad(x):
    return x @ (const(Q) @ x)


def mlp(x, w):
    """A small MLP: tanh layer then softplus-ish output, one scalar per row."""
    h = (x @ w).tanh()
    return (h.exp() + 1).log().sum(1)


def mlp_loss(x, w):
    return (mlp(x, w) ** 2).mean()


JAC_WAYS = [dict(), dict(vectorize=True), dict(vectorize=True, strategy="forward-mode")]
JAC_IDS = ["rev-loop", "rev-vectorized", "fwd-vectorized"]
HESS_WAYS = [dict(), dict(vectorize=True),
             dict(vectorize=True, outer_jacobian_strategy="forward-mode")]


# =====================================================================================
# jacobian
# =====================================================================================
@pytest.mark.parametrize("kw", JAC_WAYS, ids=JAC_IDS)
def test_jacobian_of_linear_map_is_the_matrix(rng, kw):
    x = const(rng.standard_normal(3))
    jac = F.jacobian(linear, x, **kw)
    assert isinstance(jac, tp.Tensor) and jac.shape == (2, 3)
    np.testing.assert_allclose(npy(jac), A, rtol=0, atol=1e-15)


@pytest.mark.parametrize("kw", JAC_WAYS, ids=JAC_IDS)
def test_jacobian_of_elementwise_function_is_diagonal(rng, kw):
    xv = rng.standard_normal((2, 3))
    jac = F.jacobian(lambda x: x.sin() * 2, const(xv), **kw)
    assert jac.shape == (2, 3, 2, 3)
    want = np.zeros((2, 3, 2, 3))
    for idx in np.ndindex(2, 3):
        want[idx + idx] = 2 * np.cos(xv[idx])
    np.testing.assert_allclose(npy(jac), want, rtol=1e-14, atol=0)


@pytest.mark.parametrize("kw", JAC_WAYS, ids=JAC_IDS)
def test_jacobian_of_mlp_matches_finite_differences(rng, kw):
    xv, wv = rng.standard_normal((4, 3)), rng.standard_normal((3, 5))
    jx, jw = F.jacobian(mlp, (const(xv), const(wv)), **kw)
    fx, fw = fd_jacobian(mlp, [xv, wv])[0]
    assert jx.shape == (4, 4, 3) and jw.shape == (4, 3, 5)
    np.testing.assert_allclose(npy(jx), fx, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(npy(jw), fw, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("kw", JAC_WAYS, ids=JAC_IDS)
@pytest.mark.parametrize("ins,outs", [(False, False), (True, False), (False, True),
                                      (True, True)])
def test_jacobian_result_nesting(rng, kw, ins, outs):
    xv, yv = rng.standard_normal(3), rng.standard_normal(2)

    def f(*a):
        x = a[0]
        y = a[1] if ins else const(yv)
        r0 = (x.sum() * y).exp()              # (2,)
        r1 = x * x                            # (3,)
        return (r0, r1) if outs else r0

    inputs = (const(xv), const(yv)) if ins else const(xv)
    jac = F.jacobian(f, inputs, **kw)
    fd = fd_jacobian(f, [xv, yv] if ins else [xv])
    shapes = [[(2, 3), (2, 2)], [(3, 3), (3, 2)]]
    if ins and outs:
        assert isinstance(jac, tuple) and all(isinstance(r, tuple) and len(r) == 2 for r in jac)
        got = jac
    elif ins:
        assert isinstance(jac, tuple) and len(jac) == 2 and isinstance(jac[0], tp.Tensor)
        got = (jac,)
    elif outs:
        assert isinstance(jac, tuple) and len(jac) == 2 and isinstance(jac[0], tp.Tensor)
        got = tuple((j,) for j in jac)
    else:
        assert isinstance(jac, tp.Tensor)
        got = ((jac,),)
    for k, row in enumerate(got):
        for j, block in enumerate(row):
            assert block.shape == shapes[k][j]
            np.testing.assert_allclose(npy(block), fd[k][j], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("kw", JAC_WAYS, ids=JAC_IDS)
def test_jacobian_independent_output_is_zeros(kw):
    x, y = tp.ones(3, dtype=F64), tp.ones(2, dtype=F64)
    jx, jy = F.jacobian(lambda a, b: a * 2, (x, y), **kw)
    np.testing.assert_array_equal(npy(jx), 2 * np.eye(3))
    assert jy.shape == (3, 2)
    np.testing.assert_array_equal(npy(jy), np.zeros((3, 2)))
    (c,) = F.jacobian(lambda a: (tp.ones(2, dtype=F64),), x, **kw)
    np.testing.assert_array_equal(npy(c), np.zeros((2, 3)))


@pytest.mark.parametrize("kw", JAC_WAYS, ids=JAC_IDS)
def test_jacobian_keeps_float32_and_empty_outputs(kw):
    x = tp.ones(3)
    jac = F.jacobian(lambda a: a * 3, x, **kw)
    assert jac.dtype == tp.float32
    np.testing.assert_array_equal(jac.numpy(), 3 * np.eye(3, dtype=np.float32))
    e = F.jacobian(lambda a: a[:0] * 2, x, **kw)
    assert e.shape == (0, 3)


def test_jacobian_strict(rng):
    x, y = const(rng.standard_normal(3)), const(rng.standard_normal(3))
    with pytest.raises(RuntimeError, match="independent of input 1"):
        F.jacobian(lambda a, b: a.exp(), (x, y), strict=True)
    with pytest.raises(RuntimeError, match="does not require gradients"):
        F.jacobian(lambda a: tp.ones(2, dtype=F64), x, strict=True)
    # strict with create_graph: the Jacobian of a linear map does not depend on x
    with pytest.raises(RuntimeError, match="create_graph=True"):
        F.jacobian(linear, x, strict=True, create_graph=True)
    jac = F.jacobian(linear, x, strict=True)          # but is fine without create_graph
    np.testing.assert_allclose(npy(jac), A, atol=1e-15)


def test_jacobian_option_errors():
    x = tp.ones(3, dtype=F64)
    with pytest.raises(RuntimeError, match="vectorize"):
        F.jacobian(linear, x, strict=True, vectorize=True)
    with pytest.raises(RuntimeError, match="forward-mode"):
        F.jacobian(linear, x, strict=True, vectorize=True, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="create_graph"):
        F.jacobian(linear, x, create_graph=True, vectorize=True, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="vectorize=True"):
        F.jacobian(linear, x, strategy="forward-mode")
    with pytest.raises(AssertionError, match="strategy"):
        F.jacobian(linear, x, strategy="sideways")
    with pytest.raises(TypeError, match="jacobian"):
        F.jacobian(linear, [x, 3.0])
    with pytest.raises(TypeError, match="outputs of the user-provided function"):
        F.jacobian(lambda a: 3.0, x)
    with pytest.raises(RuntimeError, match="floating point"):
        F.jacobian(lambda a: a, tp.ones(3, dtype=tp.int64))
    with pytest.raises(TypeError, match="callable"):
        F.jacobian(3, x)


@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian_create_graph_is_differentiable(rng, vectorize):
    xv = rng.standard_normal(3)
    x = tp.tensor(xv, requires_grad=True)
    jac = F.jacobian(lambda a: a ** 3, x, create_graph=True, vectorize=vectorize)
    assert jac.requires_grad
    np.testing.assert_allclose(npy(jac), np.diag(3 * xv ** 2), rtol=1e-14)
    (g,) = tp.autograd.grad(jac.sum(), x)                  # d/dx sum(diag(3x^2)) = 6x
    np.testing.assert_allclose(npy(g), 6 * xv, rtol=1e-14)
    plain = F.jacobian(lambda a: a ** 3, x, vectorize=vectorize)
    assert not plain.requires_grad and x.grad is None


# =====================================================================================
# hessian
# =====================================================================================
@pytest.mark.parametrize("kw", HESS_WAYS, ids=JAC_IDS)
def test_hessian_of_quadratic_form_is_a_plus_a_transpose(rng, kw):
    h = F.hessian(quad, const(rng.standard_normal(3)), **kw)
    assert isinstance(h, tp.Tensor) and h.shape == (3, 3)
    np.testing.assert_allclose(npy(h), Q + Q.T, rtol=0, atol=1e-14)


@pytest.mark.parametrize("kw", HESS_WAYS, ids=JAC_IDS)
def test_hessian_of_elementwise_sum_is_diagonal(rng, kw):
    xv = rng.standard_normal((2, 2))
    h = F.hessian(lambda x: x.sin().sum(), const(xv), **kw)
    want = np.zeros((2, 2, 2, 2))
    for idx in np.ndindex(2, 2):
        want[idx + idx] = -np.sin(xv[idx])
    np.testing.assert_allclose(npy(h), want, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("kw", HESS_WAYS, ids=JAC_IDS)
def test_hessian_of_mlp_loss_matches_finite_differences_of_the_gradient(rng, kw):
    xv, wv = rng.standard_normal((4, 2)), rng.standard_normal((2, 3))
    hxx, hxw = F.hessian(mlp_loss, (const(xv), const(wv)), **kw)[0]
    hwx, hww = F.hessian(mlp_loss, (const(xv), const(wv)), **kw)[1]

    def grads(x, w):
        with tp.enable_grad():
            x, w = x.requires_grad_(), w.requires_grad_()
            return tp.autograd.grad(mlp_loss(x, w), (x, w))

    fd = fd_jacobian(grads, [xv, wv])
    for got, want in ((hxx, fd[0][0]), (hxw, fd[0][1]), (hwx, fd[1][0]), (hww, fd[1][1])):
        assert got.shape == want.shape
        np.testing.assert_allclose(npy(got), want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("kw", HESS_WAYS, ids=JAC_IDS)
def test_hessian_tuple_inputs_give_tuple_of_tuples(kw):
    x, y = const([0.5, -1.0]), const([2.0])
    h = F.hessian(lambda a, b: (a ** 2).sum() * b.sum() ** 3, (x, y), **kw)
    assert isinstance(h, tuple) and len(h) == 2 and all(len(r) == 2 for r in h)
    assert [[b.shape for b in r] for r in h] == [[(2, 2), (2, 1)], [(1, 2), (1, 1)]]
    xv, yv = np.array([0.5, -1.0]), 2.0
    np.testing.assert_allclose(npy(h[0][0]), 2 * yv ** 3 * np.eye(2))
    np.testing.assert_allclose(npy(h[0][1]), (6 * xv * yv ** 2)[:, None])
    np.testing.assert_allclose(npy(h[1][0]), (6 * xv * yv ** 2)[None, :])
    np.testing.assert_allclose(npy(h[1][1]), [[6 * (xv ** 2).sum() * yv]])


def test_hessian_errors():
    x = tp.ones(3, dtype=F64)
    with pytest.raises(RuntimeError, match="single element"):
        F.hessian(lambda a: a * 2, x)
    with pytest.raises(RuntimeError, match="single Tensor"):
        F.hessian(lambda a: (a.sum(), a.sum()), x)
    with pytest.raises(AssertionError, match="strategy"):
        F.hessian(quad, x, outer_jacobian_strategy="diagonal")
    with pytest.raises(NotImplementedError):
        F.hessian(quad, x, outer_jacobian_strategy="forward-mode")
    # strict: a linear function has a Jacobian independent of the input
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function"):
        F.hessian(lambda a: (a * 3).sum(), x, strict=True)
    with pytest.raises(RuntimeError, match="with respect to input 1 is independent"):
        F.hessian(lambda a, b: (a ** 3).sum(), (x, x), strict=True)
    h = F.hessian(lambda a: (a * 3).sum(), x)                  # not strict: zeros
    np.testing.assert_array_equal(npy(h), np.zeros((3, 3)))


def test_hessian_create_graph_third_derivative(rng):
    xv = rng.standard_normal(3)
    x = tp.tensor(xv, requires_grad=True)
    h = F.hessian(lambda a: (a ** 4).sum(), x, create_graph=True)
    np.testing.assert_allclose(npy(h), np.diag(12 * xv ** 2), rtol=1e-14)
    (g,) = tp.autograd.grad(h.sum(), x)
    np.testing.assert_allclose(npy(g), 24 * xv, rtol=1e-14)


# =====================================================================================
# vjp
# =====================================================================================
def test_vjp_closed_forms(rng):
    xv, vv = rng.standard_normal(3), rng.standard_normal(2)
    out, vj = F.vjp(linear, const(xv), const(vv))
    np.testing.assert_allclose(npy(out), A @ xv, rtol=1e-14)
    np.testing.assert_allclose(npy(vj), A.T @ vv, rtol=1e-14)
    out, g = F.vjp(quad, const(xv))                     # v=None: scalar output
    np.testing.assert_allclose(npy(g), (Q + Q.T) @ xv, rtol=1e-14)


def test_vjp_nesting_and_zeros(rng):
    xv, yv = rng.standard_normal((2, 3))
    v = (const(np.ones(3)), const(np.full(3, 2.0)))
    out, (gx, gy, gz) = F.vjp(lambda a, b, c: (a * b, a.exp()), (const(xv), const(yv),
                                                                  const(xv)), v)
    assert isinstance(out, tuple) and len(out) == 2
    np.testing.assert_allclose(npy(gx), yv + 2 * np.exp(xv), rtol=1e-14)
    np.testing.assert_allclose(npy(gy), xv, rtol=1e-14)
    np.testing.assert_array_equal(npy(gz), np.zeros(3))   # unused input: zeros
    assert gz._data.flags.writeable


def test_vjp_errors():
    x = tp.ones(3, dtype=F64)
    with pytest.raises(RuntimeError, match="v can only be None"):
        F.vjp(lambda a: a * 2, x)
    with pytest.raises(RuntimeError, match="invalid size"):
        F.vjp(lambda a: a * 2, x, tp.ones(2, dtype=F64))
    with pytest.raises(RuntimeError, match="invalid length"):
        F.vjp(lambda a: (a, a), x, (tp.ones(3, dtype=F64),))
    with pytest.raises(RuntimeError, match="single Tensor"):
        F.vjp(lambda a: a, x, (tp.ones(3, dtype=F64), tp.ones(3, dtype=F64)))
    with pytest.raises(TypeError, match="v given to vjp"):
        F.vjp(lambda a: a, x, 3.0)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        F.vjp(lambda a, b: a.sum(), (x, x), strict=True)
    with pytest.raises(RuntimeError, match="does not require gradients"):
        F.vjp(lambda a: tp.ones((), dtype=F64), x, strict=True)


def test_vjp_create_graph(rng):
    xv, vv = rng.standard_normal((2, 3))
    x, v = tp.tensor(xv, requires_grad=True), tp.tensor(vv, requires_grad=True)
    out, vj = F.vjp(lambda a: a ** 3, x, v, create_graph=True)
    assert out.requires_grad and vj.requires_grad
    gx, gv = tp.autograd.grad(vj.sum(), (x, v))        # vj = 3 x^2 v
    np.testing.assert_allclose(npy(gx), 6 * xv * vv, rtol=1e-14)
    np.testing.assert_allclose(npy(gv), 3 * xv ** 2, rtol=1e-14)
    out, vj = F.vjp(lambda a: a ** 3, x, v)
    assert not out.requires_grad and not vj.requires_grad
    assert x.grad is None and v.grad is None


# =====================================================================================
# jvp (both modes): strict and create_graph in forward mode too
# =====================================================================================
@pytest.mark.parametrize("mode", MODES)
def test_jvp_strict_unused_input_raises_in_both_modes(mode):
    x = tp.ones(3, dtype=F64)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        F.jvp(lambda a, b: a * 2, (x, x), (x, x), strict=True, mode=mode)
    out, (j,) = F.jvp(lambda a, b: (a * 2,), (x, x), (x, x), strict=False, mode=mode)
    np.testing.assert_array_equal(npy(j), 2 * np.ones(3))


@pytest.mark.parametrize("mode", MODES)
def test_jvp_strict_create_graph_linear_raises(mode):
    x = tp.ones(3, dtype=F64)
    with pytest.raises(RuntimeError, match="create_graph=True"):
        F.jvp(linear, x, x, strict=True, create_graph=True, mode=mode)
    _, j = F.jvp(lambda a: a ** 2, x, x, strict=True, create_graph=True, mode=mode)
    np.testing.assert_array_equal(npy(j), 2 * np.ones(3))


@pytest.mark.parametrize("mode", MODES)
def test_jvp_closed_forms(rng, mode):
    xv, vv = rng.standard_normal((2, 3))
    out, j = F.jvp(linear, const(xv), const(vv), mode=mode)
    np.testing.assert_allclose(npy(j), A @ vv, rtol=1e-14)
    out, j = F.jvp(quad, const(xv), const(vv), mode=mode)
    np.testing.assert_allclose(npy(j), xv @ (Q + Q.T) @ vv, rtol=1e-14)


# =====================================================================================
# hvp (forward-over-reverse) and vhp (reverse-over-reverse)
# =====================================================================================
@pytest.mark.parametrize("fn", [F.hvp, F.vhp], ids=["hvp", "vhp"])
def test_hvp_vhp_quadratic_form(rng, fn):
    xv, vv = rng.standard_normal((2, 3))
    out, r = fn(quad, const(xv), const(vv))
    np.testing.assert_allclose(npy(out), xv @ Q @ xv, rtol=1e-14)
    want = (Q + Q.T) @ vv if fn is F.hvp else vv @ (Q + Q.T)
    np.testing.assert_allclose(npy(r), want, rtol=1e-14)


@pytest.mark.parametrize("fn", [F.hvp, F.vhp], ids=["hvp", "vhp"])
def test_hvp_vhp_mlp_against_the_hessian(rng, fn):
    xv, wv = rng.standard_normal((4, 2)), rng.standard_normal((2, 3))
    vx, vw = rng.standard_normal((4, 2)), rng.standard_normal((2, 3))
    out, (rx, rw) = fn(mlp_loss, (const(xv), const(wv)), (const(vx), const(vw)))
    (hxx, hxw), (hwx, hww) = F.hessian(mlp_loss, (const(xv), const(wv)))
    h = [[npy(hxx).reshape(8, 8), npy(hxw).reshape(8, 6)],
         [npy(hwx).reshape(6, 8), npy(hww).reshape(6, 6)]]
    full = np.block(h)
    want = full @ np.concatenate([vx.ravel(), vw.ravel()])
    np.testing.assert_allclose(np.concatenate([npy(rx).ravel(), npy(rw).ravel()]), want,
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fn", [F.hvp, F.vhp], ids=["hvp", "vhp"])
def test_hvp_vhp_errors_and_strict(fn):
    x = tp.ones(3, dtype=F64)
    with pytest.raises(RuntimeError, match="single element"):
        fn(lambda a: a * 2, x, x)
    with pytest.raises(RuntimeError, match="single Tensor"):
        fn(lambda a: (a.sum(),), x, x)
    with pytest.raises(RuntimeError, match="v can only be None"):
        fn(quad, x)
    with pytest.raises(RuntimeError, match="v can only be None"):
        fn(lambda a, b: a.sum(), (tp.ones(1, dtype=F64), tp.ones(1, dtype=F64)))
    with pytest.raises(RuntimeError, match="invalid size"):
        fn(quad, x, tp.ones(2, dtype=F64))
    with pytest.raises(RuntimeError, match="independent of input 1"):
        fn(lambda a, b: (a ** 3).sum(), (x, x), (x, x), strict=True)
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function"):
        fn(lambda a: (a * 3).sum(), x, x, strict=True)
    # not strict: zeros for the independent input and for a linear function
    _, (r0, r1) = fn(lambda a, b: (a ** 3).sum(), (x, x), (x, x))
    np.testing.assert_array_equal(npy(r0), 6 * np.ones(3))
    np.testing.assert_array_equal(npy(r1), np.zeros(3))
    _, r = fn(lambda a: (a * 3).sum(), x, x)
    np.testing.assert_array_equal(npy(r), np.zeros(3))


@pytest.mark.parametrize("fn", [F.hvp, F.vhp], ids=["hvp", "vhp"])
def test_hvp_vhp_v_none_and_create_graph(rng, fn):
    x = tp.tensor([0.7], dtype=F64, requires_grad=True)
    out, r = fn(lambda a: (a ** 4).sum(), x)                  # v = 1
    np.testing.assert_allclose(npy(r), [12 * 0.49], rtol=1e-14)
    assert not r.requires_grad and x.grad is None
    out, r = fn(lambda a: (a ** 4).sum(), x, create_graph=True)
    (g,) = tp.autograd.grad(r.sum(), x)                        # d/dx 12 x^2 = 24 x
    np.testing.assert_allclose(npy(g), [24 * 0.7], rtol=1e-14)
    # differentiable in v as well: d/dv (H v) summed = H 1
    xv = rng.standard_normal(3)
    v = tp.tensor(rng.standard_normal(3), requires_grad=True)
    _, r = fn(lambda a: (a ** 3).sum(), const(xv), v, create_graph=True)
    (gv,) = tp.autograd.grad(r.sum(), v)
    np.testing.assert_allclose(npy(gv), 6 * xv, rtol=1e-14)


def test_hvp_inside_a_dual_level_falls_back_and_is_right(rng):
    # forward mode over hvp: d/de [H(x + e t) v] for f = sum(x^4): H = diag(12 x^2)
    xv, vv, tv = rng.standard_normal((3, 3))
    with forward_ad.dual_level():
        x = forward_ad.make_dual(const(xv), const(tv))
        _, r = F.hvp(lambda a: (a ** 4).sum(), x, const(vv), create_graph=True)
        np.testing.assert_allclose(npy(forward_ad.unpack_dual(r).primal), 12 * xv ** 2 * vv,
                                   rtol=1e-14)
        np.testing.assert_allclose(npy(forward_ad.unpack_dual(r).tangent),
                                   24 * xv * tv * vv, rtol=1e-14)


def test_hvp_calls_the_function_once_and_needs_no_double_backward(rng):
    calls = []

    def f(x):
        calls.append(1)
        return (x.tanh() ** 2).sum()

    xv, vv = rng.standard_normal((2, 4))
    _, r = F.hvp(f, const(xv), const(vv))
    assert len(calls) == 1
    t = np.tanh(xv)
    # d2/dx2 tanh^2 = 2 (1 - t^2)^2 - 4 t^2 (1 - t^2)
    np.testing.assert_allclose(npy(r), (2 * (1 - t * t) ** 2 - 4 * t * t * (1 - t * t)) * vv,
                               rtol=1e-13)


# =====================================================================================
# torch cross-checks
# =====================================================================================
def test_against_torch_autograd_functional(rng):
    torch = pytest.importorskip("torch")
    import torch.autograd.functional as TF
    xv, yv = rng.standard_normal(3), rng.standard_normal(3)
    vx, vy = rng.standard_normal(3), rng.standard_normal(3)

    def f(x, y):
        return (x.sin() * y.sum()).exp(), (x * y).cos()

    def s(x, y):
        return ((x * y).sin().sum() + (x ** 3).sum()) * y.sum()

    tpi = (const(xv), const(yv))
    tv = (const(vx), const(vy))
    ti = (torch.tensor(xv), torch.tensor(yv))
    tt = (torch.tensor(vx), torch.tensor(vy))

    def same(a, b):
        if isinstance(a, tuple):
            assert isinstance(b, tuple) and len(a) == len(b)
            for p, q in zip(a, b):
                same(p, q)
        else:
            assert tuple(a.shape) == tuple(b.shape)
            np.testing.assert_allclose(npy(a), b.detach().numpy(), rtol=1e-12, atol=1e-13)

    same(F.jacobian(f, tpi), TF.jacobian(f, ti))
    same(F.jacobian(f, tpi, vectorize=True), TF.jacobian(f, ti, vectorize=True))
    same(F.jacobian(lambda x: f(x, const(yv)), tpi[0], vectorize=True,
                    strategy="forward-mode"),
         TF.jacobian(lambda x: f(x, torch.tensor(yv)), ti[0], vectorize=True,
                     strategy="forward-mode"))
    same(F.hessian(s, tpi), TF.hessian(s, ti))
    same(F.vjp(f, tpi, (const(vx), const(vy))), TF.vjp(f, ti, tt))
    for mode in MODES:
        same(F.jvp(f, tpi, tv, mode=mode), TF.jvp(f, ti, tt))
    same(F.hvp(s, tpi, tv), TF.hvp(s, ti, tt))
    same(F.vhp(s, tpi, tv), TF.vhp(s, ti, tt))


def test_functional_benchmarks_run_once():
    # the asv suite's setup and timed calls work (tensorplay, smallest size); the
    # hvp it times agrees with vhp on its symmetric Hessian
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from benchmarks.benchmarks import bench_functional as bench
    for cls in (bench.HVP, bench.Jacobian):
        b = cls()
        b.setup(bench.SIZES[0], "tensorplay")
        for meth in dir(cls):
            if meth.startswith("time_"):
                getattr(b, meth)(bench.SIZES[0], "tensorplay")
    h = bench.HVP()
    h.setup(bench.SIZES[0], "tensorplay")
    np.testing.assert_allclose(npy(F.hvp(h.f, h.x, h.v)[1]), npy(F.vhp(h.f, h.x, h.v)[1]),
                               rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("mode", MODES)
def test_jvp_inside_a_dual_level(rng, mode):
    # forward mode over jvp (create_graph keeps the outer tangent): for f = x^3,
    # J v = 3 x^2 v, whose derivative along t is 6 x t v
    xv, vv, tv = rng.standard_normal((3, 3))
    with forward_ad.dual_level():
        x = forward_ad.make_dual(const(xv), const(tv))
        _, j = F.jvp(lambda a: a ** 3, x, const(vv), create_graph=True, mode=mode)
        p, t = forward_ad.unpack_dual(j)
        np.testing.assert_allclose(npy(p), 3 * xv ** 2 * vv, rtol=1e-14)
        np.testing.assert_allclose(npy(t), 6 * xv * tv * vv, rtol=1e-14)


@pytest.mark.parametrize("mode", ["forward", "reversed"])
def test_jvp_and_hvp_cast_v_to_the_input_dtype(mode):
    # a float32 or int64 v for a float64 input is cast (as PyTorch), in both modes
    x = tp.tensor([0.5, -1.0, 2.0], dtype=tp.float64)
    for v in (tp.ones(3), tp.ones(3, dtype=tp.int64)):
        _, jv = F.jvp(lambda a: a.exp(), x, v, mode=mode)
        assert jv.dtype == tp.float64
        np.testing.assert_allclose(jv.numpy(), np.exp(x.numpy()), rtol=1e-15)
        _, hv = F.hvp(lambda a: (a ** 3).sum(), x, v)
        np.testing.assert_allclose(hv.numpy(), 6 * x.numpy(), rtol=1e-15)


def test_forward_jacobian_does_not_retry_the_functions_own_error():
    # only what vmap cannot batch is retried by the loop; a ValueError raised by
    # the function itself propagates from the first (vmap) call
    calls = []

    def f(x):
        calls.append(1)
        raise ValueError("the function's own error")

    with pytest.raises(ValueError, match="own error"):
        F.jacobian(f, tp.ones(3, dtype=tp.float64), vectorize=True, strategy="forward-mode")
    assert len(calls) == 1
