"""``tensorplay.func``: grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian,
linearize -- values against closed forms and float64 finite differences, their
compositions, pytrees, the errors torch.func gives, and torch.func itself when
torch is installed."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay import func
from tensorplay.func import _pytree

F64 = tp.float64


@pytest.fixture
def rng():
    return np.random.default_rng(88)


def const(a):
    return tp.tensor(np.asarray(a, dtype=np.float64))


def npy(t):
    return t.detach().numpy()


Q = np.array([[2.0, 1.0, 0.0], [-1.0, 3.0, 0.5], [0.0, 4.0, 1.0]])
A = np.array([[1.0, 2.0, -1.0], [0.5, -3.0, 2.0]])


def quad(x):
    return x @ (const(Q) @ x)


def fd_grad(f, x, eps=1e-6):
    """Central differences of a scalar function of one float64 array."""
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        p, m = x.copy(), x.copy()
        p[idx] += eps
        m[idx] -= eps
        with tp.no_grad():
            g[idx] = (f(const(p)).item() - f(const(m)).item()) / (2 * eps)
    return g


# =====================================================================================
# grad / grad_and_value
# =====================================================================================
def test_grad_closed_forms(rng):
    xv = rng.standard_normal(3)
    np.testing.assert_allclose(npy(func.grad(lambda x: x.sin().sum())(const(xv))),
                               np.cos(xv), rtol=1e-15)
    np.testing.assert_allclose(npy(func.grad(quad)(const(xv))), (Q + Q.T) @ xv, rtol=1e-14)


def test_grad_argnums_pytrees_aux_and_zeros(rng):
    xv, yv = rng.standard_normal((2, 3))
    x, y = const(xv), const(yv)
    f = lambda a, b: (a * b.exp()).sum()  # noqa: E731
    gx, gy = func.grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(npy(gx), np.exp(yv), rtol=1e-15)
    np.testing.assert_allclose(npy(gy), xv * np.exp(yv), rtol=1e-15)
    np.testing.assert_allclose(npy(func.grad(f, argnums=-1)(x, y)), xv * np.exp(yv),
                               rtol=1e-15)
    (g1,) = func.grad(f, argnums=(1,))(x, y)
    np.testing.assert_allclose(npy(g1), xv * np.exp(yv), rtol=1e-15)
    # pytrees: a dict with a list inside; an unused leaf gets zeros
    tree = {"w": x, "rest": [y, const([1.0, 2.0])]}
    g = func.grad(lambda d: (d["w"] * d["rest"][0]).sum())(tree)
    assert set(g) == {"w", "rest"} and isinstance(g["rest"], list)
    np.testing.assert_allclose(npy(g["w"]), yv)
    np.testing.assert_allclose(npy(g["rest"][0]), xv)
    np.testing.assert_array_equal(npy(g["rest"][1]), [0.0, 0.0])
    # has_aux and grad_and_value
    g, aux = func.grad(lambda a: ((a ** 2).sum(), {"double": a * 2}), has_aux=True)(x)
    np.testing.assert_allclose(npy(g), 2 * xv)
    np.testing.assert_allclose(npy(aux["double"]), 2 * xv)
    g, v = func.grad_and_value(lambda a: (a ** 2).sum())(x)
    np.testing.assert_allclose(npy(v), (xv ** 2).sum())
    g, (v, aux) = func.grad_and_value(lambda a: ((a ** 2).sum(), 7), has_aux=True)(x)
    assert aux == 7
    np.testing.assert_allclose(npy(g), 2 * xv)
    # non-tensor positional and keyword arguments pass through
    np.testing.assert_allclose(npy(func.grad(lambda a, k, *, s: (a * k * s).sum())(x, 3.0, s=2)),
                               np.full(3, 6.0))


def test_grad_leaves_inputs_alone_and_results_plain(rng):
    x = tp.tensor(rng.standard_normal(3), requires_grad=True)
    c = const(rng.standard_normal(3))
    g = func.grad(lambda a: (a ** 3).sum())(c)
    assert not g.requires_grad and g.grad_fn is None and not c.requires_grad
    g = func.grad(lambda a: (a ** 3).sum())(x)        # differentiable through x
    assert g.requires_grad and x.grad is None
    (gg,) = tp.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(npy(gg), 6 * npy(x), rtol=1e-15)


def test_grad_errors():
    x = tp.ones(3, dtype=F64)
    with pytest.raises(RuntimeError, match="scalar Tensor, got tensor with 1 dims"):
        func.grad(lambda a: a * 2)(x)
    with pytest.raises(RuntimeError, match="scalar Tensor"):
        func.grad(lambda a: a.sum().reshape(1))(x)
    with pytest.raises(RuntimeError, match="to return a Tensor"):
        func.grad(lambda a: 3.0)(x)
    with pytest.raises(RuntimeError, match=r"tuple: \(output, aux\)"):
        func.grad(lambda a: a.sum(), has_aux=True)(x)
    with pytest.raises(RuntimeError, match="Got argnum=2, but only 1 positional inputs"):
        func.grad(lambda a: a.sum(), argnums=2)(x)
    with pytest.raises(RuntimeError, match="non-empty"):
        func.grad(lambda a: a.sum(), argnums=())(x)
    with pytest.raises(RuntimeError, match="unique"):
        func.grad(lambda a, b: a.sum(), argnums=(0, -2))(x, x)
    with pytest.raises(RuntimeError, match="argnums must be int or Tuple"):
        func.grad(lambda a: a.sum(), argnums="0")(x)
    with pytest.raises(RuntimeError, match="floating point"):
        func.grad(lambda a: a.sum())(tp.arange(3))
    with pytest.raises(ValueError, match="must be Tensor"):
        func.grad(lambda a: a * 2)(3.0)


# =====================================================================================
# compositions
# =====================================================================================
def test_higher_derivatives_of_sin(rng):
    x = const(rng.standard_normal(()))
    xv = x.item()
    d2 = func.grad(func.grad(tp.sin))(x)
    d3 = func.grad(func.grad(func.grad(tp.sin)))(x)
    d4 = func.grad(func.grad(func.grad(func.grad(tp.sin))))(x)
    np.testing.assert_allclose([d2.item(), d3.item(), d4.item()],
                               [-np.sin(xv), -np.cos(xv), np.sin(xv)], rtol=1e-14)
    assert not d4.requires_grad


@pytest.mark.parametrize("outer", ["jacfwd", "jacrev"])
@pytest.mark.parametrize("inner", ["jacfwd", "jacrev", "grad"])
def test_jacobian_of_jacobian_is_the_hessian(rng, outer, inner):
    x = const(rng.standard_normal(3))
    h = getattr(func, outer)(getattr(func, inner)(quad))(x)
    np.testing.assert_allclose(npy(h), Q + Q.T, atol=1e-14)
    np.testing.assert_allclose(npy(func.hessian(quad)(x)), Q + Q.T, atol=1e-14)


def test_hessian_of_mlp_loss_vs_finite_differences(rng):
    xv = rng.standard_normal((5, 2))
    w0 = rng.standard_normal(6)

    def loss(w):
        h = (const(xv) @ w[:4].reshape(2, 2)).tanh()
        return ((h @ w[4:]).exp() + 1).log().mean()

    h = func.hessian(loss)(const(w0))
    g = func.grad(loss)
    fd = np.stack([fd_grad(lambda w: g(w)[i], w0) for i in range(6)])
    np.testing.assert_allclose(npy(h), fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(npy(h), npy(h).T, atol=1e-14)


def test_forward_and_reverse_over_each_other(rng):
    xv, vv = rng.standard_normal((2, 3))
    x, v = const(xv), const(vv)
    hv = (Q + Q.T) @ vv
    _, jv = func.jvp(func.grad(quad), (x,), (v,))             # forward-over-reverse
    np.testing.assert_allclose(npy(jv), hv, rtol=1e-14)
    _, vjp_fn = func.vjp(func.grad(quad), x)                  # reverse-over-reverse
    np.testing.assert_allclose(npy(vjp_fn(v)[0]), vv @ (Q + Q.T), rtol=1e-14)
    # reverse-over-forward: d/dx <grad, v> through a jvp
    f = lambda a: func.jvp(lambda b: (b ** 3).sum(), (a,), (v,))[1]  # noqa: E731
    np.testing.assert_allclose(npy(func.grad(f)(x)), 6 * xv * vv, rtol=1e-14)
    # forward-over-forward (nested jvp falls back to the double-backward trick)
    g = lambda a: func.jvp(lambda b: (b ** 3).sum(), (a,), (v,))[1]  # noqa: E731
    _, jj = func.jvp(g, (x,), (v,))
    np.testing.assert_allclose(npy(jj), (6 * xv * vv * vv).sum(), rtol=1e-14)
    # grad inside vjp
    out, vjp_fn = func.vjp(lambda a: func.grad(lambda b: b.sin().sum())(a) * a, x)
    np.testing.assert_allclose(npy(out), np.cos(xv) * xv, rtol=1e-15)
    np.testing.assert_allclose(npy(vjp_fn(v)[0]), (np.cos(xv) - xv * np.sin(xv)) * vv,
                               rtol=1e-14)


def test_closure_parameters_stay_differentiable(rng):
    # a gradient penalty: func.grad with respect to the data, backpropagated into
    # the parameters the function closes over
    xv, wv = rng.standard_normal((2, 3))
    w = tp.tensor(wv, requires_grad=True)
    g = func.grad(lambda x: (x * w).tanh().sum())(const(xv))
    (gw,) = tp.autograd.grad((g * g).sum(), w)
    t = np.tanh(xv * wv)
    gv = wv * (1 - t * t)                                   # the penalty's gradient
    dg = (1 - t * t) - wv * 2 * t * (1 - t * t) * xv        # d g_i / d w_i
    np.testing.assert_allclose(npy(gw), 2 * gv * dg, rtol=1e-13)
    # an outer transform's input captured by an inner one
    x0 = const(xv)
    jac = func.jacrev(lambda w_: func.grad(lambda x: (x * w_).sum())(x0))(const(wv))
    np.testing.assert_allclose(npy(jac), np.eye(3), atol=1e-15)


# =====================================================================================
# vjp, jvp, linearize
# =====================================================================================
def test_vjp_structure_and_repeated_calls(rng):
    xv, yv = rng.standard_normal((2, 3))
    out, vjp_fn = func.vjp(lambda a, b: {"p": a * b, "s": [a.exp()]}, const(xv), const(yv))
    assert set(out) == {"p", "s"} and not out["p"].requires_grad
    for scale in (1.0, 2.0):
        ct = {"p": const(np.full(3, scale)), "s": [const(np.ones(3))]}
        gx, gy = vjp_fn(ct)
        np.testing.assert_allclose(npy(gx), scale * yv + np.exp(xv), rtol=1e-14)
        np.testing.assert_allclose(npy(gy), scale * xv, rtol=1e-14)
    with pytest.raises(RuntimeError, match="pytree structure of cotangents"):
        vjp_fn(const(np.ones(3)))
    with pytest.raises(RuntimeError, match="shape"):
        vjp_fn({"p": const(np.ones(2)), "s": [const(np.ones(3))]})
    out, vjp_fn, aux = func.vjp(lambda a: (a.sin(), a * 3), const(xv), has_aux=True)
    np.testing.assert_allclose(npy(aux), 3 * xv)
    with pytest.raises(RuntimeError, match="only tensors"):
        func.vjp(lambda a: (a, 3.0), const(xv))
    with pytest.raises(ValueError, match="must be Tensor"):
        func.vjp(lambda a: a, None)


def test_jvp_values_and_errors(rng):
    xv, tv = rng.standard_normal((2, 3))
    out, jv = func.jvp(lambda a: [a.sin(), a * a], (const(xv),), (const(tv),))
    assert isinstance(jv, list)
    np.testing.assert_allclose(npy(jv[0]), np.cos(xv) * tv, rtol=1e-15)
    np.testing.assert_allclose(npy(jv[1]), 2 * xv * tv, rtol=1e-15)
    out, jv, aux = func.jvp(lambda a: (a * 2, "aux"), (const(xv),), (const(tv),), has_aux=True)
    assert aux == "aux"
    out, jv = func.jvp(lambda a, b: b * 2, (const(xv), const(xv)), (const(tv), const(tv)))
    np.testing.assert_allclose(npy(jv), 2 * tv)
    _, z = func.jvp(lambda a: tp.ones(2, dtype=F64), (const(xv),), (const(tv),))
    np.testing.assert_array_equal(npy(z), [0.0, 0.0])
    with pytest.raises(RuntimeError, match="independent"):
        func.jvp(lambda a: tp.ones(2, dtype=F64), (const(xv),), (const(tv),), strict=True)
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        func.jvp(tp.sin, const(xv), const(tv))
    with pytest.raises(RuntimeError, match="same python structure"):
        func.jvp(tp.sin, (const(xv),), (const(tv), const(tv)))
    with pytest.raises(RuntimeError, match="shape"):
        func.jvp(tp.sin, (const(xv),), (const([1.0]),))
    with pytest.raises(RuntimeError, match="only contain Tensors"):
        func.jvp(tp.sin, (3.0,), (1.0,))
    with pytest.raises(RuntimeError, match="only tensors"):
        func.jvp(lambda a: 3.0, (const(xv),), (const(tv),))
    with pytest.raises(RuntimeError, match="floating point"):
        func.jvp(lambda a: a, (tp.arange(3),), (tp.arange(3),))


def test_linearize_runs_func_once(rng):
    xv, yv = rng.standard_normal((2, 3))
    calls = []

    def f(a, b):
        calls.append(1)
        return (a.sin() * b, a.sum() * 2)

    out, jvp_fn = func.linearize(f, const(xv), const(yv))
    np.testing.assert_allclose(npy(out[0]), np.sin(xv) * yv)
    for _ in range(2):
        tx, ty = rng.standard_normal((2, 3))
        j0, j1 = jvp_fn(const(tx), const(ty))
        np.testing.assert_allclose(npy(j0), np.cos(xv) * yv * tx + np.sin(xv) * ty,
                                   rtol=1e-14)
        np.testing.assert_allclose(npy(j1), 2 * tx.sum(), rtol=1e-14)
    assert len(calls) == 1
    with pytest.raises(RuntimeError, match="same argspec"):
        jvp_fn(const(xv))
    with pytest.raises(RuntimeError, match="doesn't match the shape"):
        jvp_fn(const(xv), const([1.0]))


# =====================================================================================
# jacrev / jacfwd
# =====================================================================================
@pytest.mark.parametrize("chunk_size", [None, 1, 2, 5])
def test_jacrev_chunks_agree(rng, chunk_size):
    xv = rng.standard_normal(3)
    jac = func.jacrev(lambda x: (const(A) @ x, x.sin()), chunk_size=chunk_size)(const(xv))
    np.testing.assert_allclose(npy(jac[0]), A, atol=1e-15)
    np.testing.assert_allclose(npy(jac[1]), np.diag(np.cos(xv)), atol=1e-15)


@pytest.mark.parametrize("jac", ["jacrev", "jacfwd"])
def test_jacobian_transforms_structure(rng, jac):
    t = getattr(func, jac)
    xv, yv = rng.standard_normal(3), rng.standard_normal(2)
    x, y = const(xv), const(yv)

    def f(a, b):
        return {"outer": a[:, None] * b[None, :], "total": (a.sum() * b).sum()}

    j = t(f, argnums=(0, 1))(x, y)
    assert set(j) == {"outer", "total"} and isinstance(j["outer"], tuple)
    jo_x, jo_y = j["outer"]
    assert jo_x.shape == (3, 2, 3) and jo_y.shape == (3, 2, 2)
    want_x = np.einsum("ik,j->ijk", np.eye(3), yv)
    want_y = np.einsum("i,jk->ijk", xv, np.eye(2))
    np.testing.assert_allclose(npy(jo_x), want_x, atol=1e-15)
    np.testing.assert_allclose(npy(jo_y), want_y, atol=1e-15)
    np.testing.assert_allclose(npy(j["total"][0]), np.full(3, yv.sum()), rtol=1e-14)
    np.testing.assert_allclose(npy(j["total"][1]), np.full(2, xv.sum()), rtol=1e-14)
    # pytree input, aux, zeros for an independent input, empty inputs
    jd, aux = t(lambda d: (d["a"] * 2, d["a"].sum()), has_aux=True)({"a": x, "b": y})
    np.testing.assert_allclose(npy(jd["a"]), 2 * np.eye(3))
    np.testing.assert_array_equal(npy(jd["b"]), np.zeros((3, 2)))
    np.testing.assert_allclose(npy(aux), xv.sum())
    assert not jd["a"].requires_grad
    je = t(lambda a: a.sum() * 2)(const(np.zeros(0)))
    assert je.shape == (0,)


def test_jacrev_jacfwd_argument_errors():
    with pytest.raises(ValueError, match="chunk_size"):
        func.jacrev(tp.sin, chunk_size=0)
    with pytest.raises(RuntimeError, match="randomness"):
        func.jacfwd(tp.sin, randomness="bad")
    with pytest.raises(RuntimeError, match="only tensors"):
        func.jacrev(lambda a: 3.0)(tp.ones(2, dtype=F64))
    with pytest.raises(RuntimeError, match="only tensors"):
        func.jacfwd(lambda a: 3.0)(tp.ones(2, dtype=F64))
    with pytest.raises(RuntimeError, match="argnum"):
        func.jacfwd(tp.sin, argnums=1)(tp.ones(2, dtype=F64))


# =====================================================================================
# the package and its pytree
# =====================================================================================
def test_package_exports_and_lazy_vmap():
    assert tp.func is func
    for name in ("grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian",
                 "linearize", "vmap"):
        assert name in func.__all__
    assert "vmap" in dir(func)
    with pytest.raises(AttributeError):
        func.no_such_transform


def test_pytree_roundtrip():
    from collections import namedtuple
    P = namedtuple("P", "a b")
    tree = (1, [2, {"x": 3, "y": (4,)}], P(5, None), {})
    leaves, spec = _pytree.tree_flatten(tree)
    assert leaves == [1, 2, 3, 4, 5, None]
    assert _pytree.tree_unflatten(leaves, spec) == tree
    assert _pytree.tree_map(lambda v: None if v is None else v * 10, tree)[2] == P(50, None)
    assert spec != _pytree.tree_flatten((1, [2, {"x": 3, "y": 4}], P(5, None), {}))[1]
    with pytest.raises(ValueError, match="leaves"):
        _pytree.tree_unflatten([1], spec)


# =====================================================================================
# torch.func cross-check
# =====================================================================================
def test_against_torch_func(rng):
    torch = pytest.importorskip("torch")
    import torch.func as TF
    xv, yv, tv = rng.standard_normal((3, 4))

    def f(x, y):
        return (x.sin() * y).sum() + (x * y.exp()).tanh().sum() ** 2

    def g(x):
        return (x.sin() * x.sum(), x.exp().cumsum(0))

    for name in ("grad", "jacrev", "jacfwd", "hessian"):
        got = getattr(func, name)(f, argnums=(0, 1))(const(xv), const(yv))
        want = getattr(TF, name)(f, argnums=(0, 1))(torch.tensor(xv), torch.tensor(yv))
        leaves, _ = _pytree.tree_flatten(got)
        wleaves = torch.utils._pytree.tree_flatten(want)[0]
        assert len(leaves) == len(wleaves)
        for a, b in zip(leaves, wleaves):
            assert tuple(a.shape) == tuple(b.shape)
            np.testing.assert_allclose(npy(a), b.numpy(), rtol=1e-12, atol=1e-13)
    for name in ("jacrev", "jacfwd"):
        got = getattr(func, name)(g)(const(xv))
        want = getattr(TF, name)(g)(torch.tensor(xv))
        for a, b in zip(got, want):
            np.testing.assert_allclose(npy(a), b.numpy(), rtol=1e-12, atol=1e-13)
    _, jv = func.jvp(g, (const(xv),), (const(tv),))
    _, tjv = TF.jvp(g, (torch.tensor(xv),), (torch.tensor(tv),))
    for a, b in zip(jv, tjv):
        np.testing.assert_allclose(npy(a), b.numpy(), rtol=1e-12, atol=1e-13)


def test_transforms_work_under_no_grad(rng):
    # torch.func's rule: a transform ignores an outer no_grad (its result is plain)
    xv, wv = rng.standard_normal((2, 3))
    w = tp.tensor(wv, requires_grad=True)
    with tp.no_grad():
        g = func.grad(lambda x: (x * w).sin().sum())(const(xv))
        h = func.hessian(lambda x: (x ** 3).sum())(const(xv))
        (vj,) = func.vjp(lambda x: x.exp(), const(xv))[1](const(np.ones(3)))
    assert not g.requires_grad and not h.requires_grad and not vj.requires_grad
    np.testing.assert_allclose(npy(g), wv * np.cos(xv * wv), rtol=1e-14)
    np.testing.assert_allclose(npy(h), np.diag(6 * xv), rtol=1e-14)
    np.testing.assert_allclose(npy(vj), np.exp(xv), rtol=1e-15)


def test_vjp_fn_and_jvp_fn_are_differentiable_in_their_vectors(rng):
    xv, cv = rng.standard_normal(3), rng.standard_normal(2)
    Am = const(A)
    _, vjp_fn = func.vjp(lambda x: (Am @ x).sin(), const(xv))
    # d/dc sum(J^T c) = J 1, J = diag(cos(A x)) A
    g = func.grad(lambda c: vjp_fn(c)[0].sum())(const(cv))
    np.testing.assert_allclose(npy(g), np.cos(A @ xv) * (A @ np.ones(3)), rtol=1e-14)
    _, jvp_fn = func.linearize(lambda x: (Am @ x).sin(), const(xv))
    g = func.grad(lambda t: (jvp_fn(t) * const(cv)).sum())(const(np.ones(3)))
    np.testing.assert_allclose(npy(g), A.T @ (np.cos(A @ xv) * cv), rtol=1e-14)


def test_top_level_results_are_plain_and_captured_tensors_keep_their_graph(rng):
    xv, vv, wv = rng.standard_normal((3, 3))
    x, v = const(xv), const(vv)
    cube = lambda a: (a ** 3).sum()  # noqa: E731
    results = [func.hessian(cube)(x), func.jvp(func.grad(cube), (x,), (v,))[1],
               func.jacfwd(func.jacrev(tp.sin))(x), func.jacfwd(func.jacfwd(tp.sin))(x),
               func.jacrev(func.jacrev(tp.sin))(x), func.grad(func.grad(tp.sin))(x[0]),
               func.linearize(func.grad(cube), x)[1](v)]
    for r in results:
        assert not r.requires_grad and r.grad_fn is None
    # a captured tensor that requires grad: the Hessian stays differentiable in it
    w = tp.tensor(wv, requires_grad=True)
    h = func.hessian(lambda a: ((a * w) ** 3).sum())(x)           # diag(6 x w^3)
    np.testing.assert_allclose(npy(h), np.diag(6 * xv * wv ** 3), rtol=1e-14)
    (gw,) = tp.autograd.grad(h.sum(), w)
    np.testing.assert_allclose(npy(gw), 18 * xv * wv ** 2, rtol=1e-14)
    _, jv = func.jvp(lambda a: (a * w).sin(), (x,), (v,))           # cos(x w) w v
    (gw,) = tp.autograd.grad(jv.sum(), w)
    np.testing.assert_allclose(npy(gw), (-np.sin(xv * wv) * xv * wv + np.cos(xv * wv)) * vv,
                               rtol=1e-14)
