"""Edge cases of the linear-algebra family that the op table cannot express:
errors (types, messages, PyTorch's exception classes), einsum's equation
grammar, degenerate spectra, singular inputs, multi-output invariants, the
lstsq/pinv/qr/svd options, second order through the factorisations.

References are numpy (and torch where installed), never tensorplay itself.
"""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay.autograd import forward_ad as fwAD

try:
    import torch
except ImportError:
    torch = None

LA = tp.linalg
EPS = 1e-6


def T(a):
    return tp.from_numpy(np.array(a, dtype=np.float64))


def _rng(seed=0):
    return np.random.default_rng(seed)


def _wc(rng, *shape):
    a = rng.standard_normal(shape)
    n = shape[-1]
    return a + 2 * n * np.eye(shape[-2], n)


def _fd_check(f, arrays, seed=1, tol=1e-6):
    """VJP and JVP of the scalar-or-tensor f (numpy arrays in) against central
    differences in a random direction."""
    rng = _rng(seed)
    xs = [T(a).requires_grad_() for a in arrays]
    out = f(*xs)
    u = rng.standard_normal(out.shape)
    ts = [rng.standard_normal(a.shape) for a in arrays]
    with tp.no_grad():
        plus = f(*[T(a + EPS * t) for a, t in zip(arrays, ts)])._data
        minus = f(*[T(a - EPS * t) for a, t in zip(arrays, ts)])._data
    num = (plus - minus) / (2 * EPS)
    gs = tp.autograd.grad(out, xs, T(u))
    vjp = sum(float(np.sum(g._data * t)) for g, t in zip(gs, ts))
    scale = np.linalg.norm(u) * (np.linalg.norm(num) + 1e-3)
    assert abs(vjp - float(np.sum(u * num))) <= tol * scale + 1e-8
    with fwAD.dual_level():
        tan = fwAD.unpack_dual(f(*[fwAD.make_dual(T(a), T(t)) for a, t in
                                   zip(arrays, ts)])).tangent
    np.testing.assert_allclose(tan._data, num, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- products: errors
@pytest.mark.parametrize("call,match", [
    (lambda: tp.mm(tp.ones(2, 3, 4), tp.ones(4, 2)), r"mm\(\).*'input'.*2-D.*\[2, 3, 4\]"),
    (lambda: tp.mm(tp.ones(3, 4), tp.ones(3, 4)), r"mm\(\): shapes \[3, 4\] and \[3, 4\]"),
    (lambda: tp.bmm(tp.ones(2, 3, 4), tp.ones(3, 4, 5)), r"bmm\(\).*batches"),
    (lambda: tp.bmm(tp.ones(3, 4), tp.ones(4, 5)), r"bmm\(\).*3"),
    (lambda: tp.mv(tp.ones(3, 4), tp.ones(3)), r"mv\(\): shapes"),
    (lambda: tp.dot(tp.ones(3), tp.ones(4)), r"dot\(\): inconsistent tensor size"),
    (lambda: tp.dot(tp.ones(3, 1), tp.ones(3)), r"dot\(\).*1-D"),
    (lambda: tp.outer(tp.ones(3, 1), tp.ones(3)), r"outer\(\).*1-D"),
    (lambda: tp.inner(tp.ones(3), tp.ones(4)), r"inner\(\)"),
    (lambda: tp.addmm(tp.ones(4, 4), tp.ones(3, 2), tp.ones(2, 4)), r"addmm\(\).*broadcast"),
    (lambda: tp.addmm(tp.ones(3, 4), tp.ones(3, 2), tp.ones(3, 4)), r"addmm\(\): shapes"),
    (lambda: tp.tensordot(tp.ones(2, 3), tp.ones(4, 2), dims=1), r"tensordot\(\).*match"),
    (lambda: tp.tensordot(tp.ones(2, 3), tp.ones(3, 2), dims=-1), r"dims >= 0"),
    (lambda: tp.tensordot(tp.ones(2, 3), tp.ones(3, 2), dims=([0], [0, 1])), r"same length"),
    (lambda: tp.mm(tp.ones(2, 2), tp.ones(2, 2, dtype=tp.float64)), r"mm\(\).*same dtype"),
])
def test_product_errors_are_runtime_errors_naming_the_op(call, match):
    with pytest.raises(RuntimeError, match=match):
        call()


@pytest.mark.skipif(torch is None, reason="torch not installed")
def test_product_error_types_match_torch():
    for tp_call, t_call in [
            (lambda: tp.mm(tp.ones(2, 3, 4), tp.ones(4, 2)),
             lambda: torch.mm(torch.ones(2, 3, 4), torch.ones(4, 2))),
            (lambda: tp.bmm(tp.ones(2, 3, 4), tp.ones(3, 4, 5)),
             lambda: torch.bmm(torch.ones(2, 3, 4), torch.ones(3, 4, 5))),
            (lambda: tp.dot(tp.ones(3), tp.ones(4)),
             lambda: torch.dot(torch.ones(3), torch.ones(4)))]:
        with pytest.raises(RuntimeError):
            tp_call()
        with pytest.raises(RuntimeError):
            t_call()
    with pytest.raises(TypeError):
        tp.mm([[1.0]], tp.ones(1, 1))
    with pytest.raises(NotImplementedError):
        tp.mm(tp.ones(2, 2, dtype=tp.bool), tp.ones(2, 2, dtype=tp.bool))


def test_addmm_beta_zero_ignores_nan_and_inf_in_input():
    c = T([[np.nan, np.inf], [1.0, -np.inf]])
    a, b = T(np.eye(2)), T([[1.0, 2.0], [3.0, 4.0]])
    out = tp.addmm(c, a, b, beta=0, alpha=2)
    np.testing.assert_array_equal(out._data, 2 * np.array([[1.0, 2.0], [3.0, 4.0]]))


def test_add_products_scalar_arguments():
    a = tp.ones(2, 2, dtype=tp.int64)
    with pytest.raises(TypeError, match="beta"):
        tp.addmm(a, a, a, beta="x")
    # a departure: PyTorch silently truncates a float beta for integer tensors
    with pytest.raises(RuntimeError, match="integral"):
        tp.addmm(a, a, a, beta=0.5)
    np.testing.assert_array_equal(tp.addmm(a, a, a, beta=2, alpha=3)._data,
                                  2 + 3 * 2 * np.ones((2, 2)))


def test_products_on_integers_and_empty():
    a = tp.from_numpy(np.arange(6).reshape(2, 3))
    b = tp.from_numpy(np.arange(12).reshape(3, 4))
    np.testing.assert_array_equal(tp.mm(a, b)._data, np.arange(6).reshape(2, 3)
                                  @ np.arange(12).reshape(3, 4))
    assert tp.mm(tp.ones(3, 0), tp.ones(0, 2)).tolist() == [[0.0, 0.0]] * 3
    assert float(tp.dot(tp.ones(0), tp.ones(0))) == 0.0


@pytest.mark.parametrize("sa,sb", [((2, 3), (3, 2)), ((2,), (2, 3)), ((), (3,)), ((2, 1, 2), (3,)),
                                   ((0, 2), (2, 2))])
def test_kron_matches_numpy(sa, sb):
    rng = _rng()
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    np.testing.assert_allclose(tp.kron(T(a), T(b))._data, np.kron(a, b), rtol=1e-14)


def test_tensordot_int_zero_is_an_outer_product():
    rng = _rng()
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((4,))
    np.testing.assert_allclose(tp.tensordot(T(a), T(b), dims=0)._data,
                               np.tensordot(a, b, axes=0), rtol=1e-14)


def test_methods_are_bound():
    a = T(np.eye(2))
    np.testing.assert_array_equal(a.mm(a)._data, np.eye(2))
    np.testing.assert_array_equal(T([1.0, 2.0]).outer(T([3.0]))._data, [[3.0], [6.0]])


# ---------------------------------------------------------------- einsum
EQUATIONS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]), ("ii->", [(4, 4)]),
    ("ii", [(4, 4)]), ("ii->i", [(4, 4)]), ("iij->j", [(3, 3, 2)]), ("iji->j", [(3, 2, 3)]),
    ("iii->i", [(3, 3, 3)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]), ("...ii->...", [(2, 3, 3)]),
    ("i,j->ij", [(3,), (4,)]), ("i,i->", [(4,), (4,)]), ("i,i", [(4,), (4,)]),
    ("ij->ji", [(3, 4)]), ("ij->", [(3, 4)]), ("ijk,jkl,lm->im", [(2, 3, 4), (3, 4, 5), (5, 2)]),
    ("i,i,i->", [(4,), (4,), (4,)]), ("Ab,bA->", [(2, 3), (3, 2)]), ("ba,ab", [(2, 3), (3, 2)]),
    ("bi,i->b", [(3, 1), (4,)]), ("ab,ab->", [(0, 3), (0, 3)]), ("ij,jk->ik", [(3, 0), (0, 2)]),
    ("", [()]), (",->", [(), ()]), ("i,->i", [(3,), ()]), (" i j , j k -> i k ", [(2, 3), (3, 2)]),
    ("...,...->...", [(2, 3), (3,)]), ("...ij->ji", [(2, 3, 4)]), ("ij...->...", [(2, 3, 4)]),
]


@pytest.mark.parametrize("eq,shapes", EQUATIONS, ids=[e for e, _ in EQUATIONS])
def test_einsum_matches_numpy_and_its_derivatives_finite_differences(eq, shapes):
    rng = _rng()
    arrays = [rng.standard_normal(s) for s in shapes]
    out = tp.einsum(eq, *[T(a) for a in arrays])
    if eq == "bi,i->b":                   # size-1 broadcasting of a label: torch's rule
        ref = np.einsum("bi,i->b", np.broadcast_to(arrays[0], (3, 4)), arrays[1])
    elif eq == "...ij->ji":               # torch sums ellipsis dims missing from the output
        ref = np.einsum("...ij->...ji", arrays[0]).sum(axis=0)
    else:
        ref = np.einsum(eq.replace(" ", ""), *arrays)
    np.testing.assert_allclose(out._data, ref, rtol=1e-12, atol=1e-12)
    if out._data.size and all(a.size for a in arrays):
        _fd_check(lambda *xs: tp.einsum(eq, *xs), arrays)
    if torch is not None:
        t = torch.einsum(eq, *[torch.from_numpy(a) for a in arrays])
        np.testing.assert_allclose(out._data, t.numpy(), rtol=1e-12, atol=1e-12)


def test_einsum_list_form_and_integers():
    a = tp.from_numpy(np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(tp.einsum("ij->j", [a])._data, [3, 5, 7])
    np.testing.assert_array_equal(tp.einsum("ij,kj->ik", a, a)._data,
                                  np.arange(6).reshape(2, 3) @ np.arange(6).reshape(2, 3).T)


def test_einsum_trace_ignores_infinities_off_the_diagonal():
    a = T([[1.0, np.inf], [np.nan, 2.0]])
    assert float(tp.einsum("ii->", a)) == 3.0
    x = T([[1.0, np.inf], [np.nan, 2.0]]).requires_grad_()
    (g,) = tp.autograd.grad(tp.einsum("ii", x), x)
    np.testing.assert_array_equal(g._data, np.eye(2))


@pytest.mark.parametrize("eq,shapes,match", [
    ("ij,jk->il", [(3, 4), (4, 5)], "output subscript 'l' does not appear"),
    ("ii->i", [(3, 4)], "repeated"),
    ("i->ii", [(3,)], "more than once"),
    ("ij", [(3,)], "number of subscripts"),
    ("ij,jk", [(3, 4), (5, 2)], "does not broadcast"),
    ("ij,jk", [(3, 4)], "2 operand subscripts, but 1"),
    ("i1", [(3, 3)], "invalid subscript"),
    ("......i", [(3,)], "ellipsis"),
    ("i->j->k", [(3,)], "more than one"),
    ("ijk...", [(3, 3)], "more labels"),
])
def test_einsum_errors(eq, shapes, match):
    with pytest.raises(RuntimeError, match=match):
        tp.einsum(eq, *[tp.ones(*s) for s in shapes])
    if torch is not None:
        with pytest.raises(RuntimeError):
            torch.einsum(eq, *[torch.ones(*s) for s in shapes])


def test_einsum_argument_types():
    with pytest.raises(TypeError, match="equation"):
        tp.einsum(tp.ones(2), tp.ones(2))
    with pytest.raises(TypeError, match="operand 1"):
        tp.einsum("i,i", tp.ones(2), [1.0, 2.0])
    with pytest.raises(RuntimeError, match="same dtype"):
        tp.einsum("i,i", tp.ones(2), tp.ones(2, dtype=tp.float64))
    with pytest.raises(NotImplementedError):
        tp.einsum("i", tp.ones(2, dtype=tp.bool))
    with pytest.raises(RuntimeError, match="at least one operand"):
        tp.einsum("i")


def test_einsum_second_order():
    rng = _rng()
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 3))
    x = T(a).requires_grad_()
    y = T(b)
    out = tp.einsum("ij,ji->", x, y) ** 2
    (g,) = tp.autograd.grad(out, x, create_graph=True)
    (h,) = tp.autograd.grad(g.sum(), x)
    # d/dx sum_kl 2 s y_lk = 2 (sum y^T) y^T
    np.testing.assert_allclose(h._data, 2 * b.T.sum() * b.T, rtol=1e-12)


# ---------------------------------------------------------------- linalg: errors
@pytest.mark.parametrize("name", ["inv", "det", "slogdet", "cholesky", "eigh"])
def test_non_square_and_low_rank_inputs_raise(name):
    fn = getattr(LA, name)
    with pytest.raises(RuntimeError, match=f"linalg.{name}.*square matrices, but they are "
                                           f"3 by 4"):
        fn(tp.ones(3, 4))
    with pytest.raises(RuntimeError, match="at least 2 dims"):
        fn(tp.ones(3))
    with pytest.raises(RuntimeError, match="floating point"):
        fn(tp.ones(3, 3, dtype=tp.int64))
    with pytest.raises(TypeError):
        fn(np.eye(3))


def test_singular_and_not_positive_definite_raise_linalg_error():
    assert issubclass(LA.LinAlgError, RuntimeError)
    with pytest.raises(LA.LinAlgError, match="linalg.inv"):
        LA.inv(tp.zeros(3, 3))
    with pytest.raises(LA.LinAlgError, match="linalg.solve"):
        LA.solve(tp.zeros(2, 2), tp.ones(2))
    with pytest.raises(LA.LinAlgError, match="linalg.cholesky"):
        LA.cholesky(-tp.eye(3))
    if torch is not None:
        with pytest.raises(torch.linalg.LinAlgError):
            torch.linalg.inv(torch.zeros(3, 3))


def test_det_gradient_at_a_singular_matrix_raises():
    """A documented departure: PyTorch returns the adjugate-based gradient."""
    x = tp.zeros(2, 2, dtype=tp.float64).requires_grad_()
    d = LA.det(x)
    assert float(d) == 0.0
    with pytest.raises(LA.LinAlgError):
        tp.autograd.grad(d, x)


def test_solve_shapes():
    rng = _rng()
    A = _wc(rng, 2, 3, 3)
    b = rng.standard_normal((2, 3))
    out = LA.solve(T(A), T(b))               # a batch of vectors (PyTorch's rule)
    assert out.shape == (2, 3)
    np.testing.assert_allclose(out._data, np.linalg.solve(A, b[..., None])[..., 0], rtol=1e-12)
    with pytest.raises(RuntimeError, match="incompatible shapes"):
        LA.solve(T(A), tp.ones(2, 4, 1, dtype=tp.float64))
    with pytest.raises(RuntimeError, match="do not broadcast"):
        LA.solve(T(A), tp.ones(5, 3, 1, dtype=tp.float64))
    with pytest.raises(RuntimeError, match="same dtype"):
        LA.solve(T(A), tp.ones(2, 3, 1))
    with pytest.raises(TypeError):
        LA.solve(T(A), T(b), left="no")


# ---------------------------------------------------------------- multi-output results
def test_named_tuples_and_values():
    rng = _rng()
    A = rng.standard_normal((2, 4, 3))
    U, S, Vh = LA.svd(T(A), full_matrices=False)
    nu, ns, nvh = np.linalg.svd(A, full_matrices=False)
    np.testing.assert_allclose(S._data, ns, rtol=1e-13)
    np.testing.assert_allclose((U * S.unsqueeze(-2)) @ Vh, A, atol=1e-13)
    r = LA.svd(T(A))
    assert r.U.shape == (2, 4, 4) and r.Vh.shape == (2, 3, 3)
    Q, R = LA.qr(T(A))
    assert Q.shape == (2, 4, 3) and R.shape == (2, 3, 3)
    assert LA.qr(T(A), mode="complete").Q.shape == (2, 4, 4)
    q_r = LA.qr(T(A), mode="r")
    assert q_r.Q.shape == (0,) and q_r.R.shape == (2, 3, 3)
    S_ = _wc(rng, 3, 3)
    L, V = LA.eigh(T(S_ + S_.T))
    np.testing.assert_allclose(L._data, np.linalg.eigvalsh(S_ + S_.T), rtol=1e-13)
    assert np.all(np.diff(L._data) > 0)
    sign, logabs = LA.slogdet(T(-S_))
    ns, nl = np.linalg.slogdet(-S_)
    assert float(sign) == ns and abs(float(logabs) - nl) < 1e-13
    assert not sign.requires_grad


def test_eigh_reads_only_the_uplo_triangle():
    rng = _rng()
    a = rng.standard_normal((3, 3))
    lower = np.tril(a) + np.tril(a, -1).T
    upper = np.triu(a) + np.triu(a, 1).T
    np.testing.assert_allclose(LA.eigh(T(a)).eigenvalues._data, np.linalg.eigvalsh(lower),
                               rtol=1e-12)
    np.testing.assert_allclose(LA.eigh(T(a), UPLO="U").eigenvalues._data,
                               np.linalg.eigvalsh(upper), rtol=1e-12)
    with pytest.raises(RuntimeError, match="UPLO"):
        LA.eigh(T(a), UPLO="X")


def test_svd_invariant_loss_matches_finite_differences():
    """loss = sum(S) + sum((U U^T)^2) + sum(V^T)^2 ... : invariant under the sign
    choices, so finite differences see the same function."""
    rng = _rng(3)
    A = rng.standard_normal((5, 3)) + np.eye(5, 3) * np.array([10.0, 20.0, 30.0])

    def loss(x):
        U, S, Vh = LA.svd(x, full_matrices=False)
        return S.sum() + ((U @ U.mT) ** 2).sum() + ((Vh.mT * S) @ Vh).sum()
    _fd_check(loss, [A])


def test_svd_full_matrices_gradient_uses_the_first_k_columns():
    rng = _rng(4)
    A = rng.standard_normal((4, 2)) + np.eye(4, 2) * np.array([10.0, 20.0])
    x = T(A).requires_grad_()
    U, S, Vh = LA.svd(x)                       # U (4, 4)
    (g_full,) = tp.autograd.grad(((U[:, :2] ** 2) * T([1.0, 2.0])).sum() + S.sum(), x)
    y = T(A).requires_grad_()
    U2, S2, _ = LA.svd(y, full_matrices=False)
    (g_red,) = tp.autograd.grad(((U2 ** 2) * T([1.0, 2.0])).sum() + S2.sum(), y)
    np.testing.assert_allclose(g_full._data, g_red._data, rtol=1e-12, atol=1e-14)
    with fwAD.dual_level():
        d = fwAD.make_dual(T(A), T(np.ones_like(A)))
        with pytest.raises(RuntimeError, match="full_matrices"):
            LA.svd(d)


def test_repeated_eigenvalues_and_singular_values():
    """Eigenvalues only: a finite gradient (the vector terms are skipped, as
    PyTorch skips an undefined gradient).  Vectors at a repeated eigenvalue: not
    unique, the gradient is not finite (PyTorch: the same)."""
    x = tp.eye(3, dtype=tp.float64).requires_grad_()
    (g,) = tp.autograd.grad(LA.eigvalsh(x).sum(), x)
    np.testing.assert_allclose(g._data, np.eye(3))
    (g,) = tp.autograd.grad(LA.svdvals(x).sum(), x)
    np.testing.assert_allclose(g._data, np.eye(3), atol=1e-15)
    (g,) = tp.autograd.grad(LA.svd(x).S.sum(), x)
    np.testing.assert_allclose(g._data, np.eye(3), atol=1e-15)
    L, V = LA.eigh(x)
    (g,) = tp.autograd.grad((V * tp.from_numpy(np.arange(9.0).reshape(3, 3))).sum(), x)
    assert not np.all(np.isfinite(g._data))


def test_qr_derivative_errors():
    x = T(np.eye(4, 2) + 0.1).requires_grad_()
    with pytest.raises(RuntimeError, match="mode='r'"):
        tp.autograd.grad(LA.qr(x, mode="r").R.sum(), x)
    with pytest.raises(RuntimeError, match="complete"):
        tp.autograd.grad(LA.qr(x, mode="complete").Q.sum(), x)
    with pytest.raises(RuntimeError, match="unrecognized mode"):
        LA.qr(x, mode="full")


def test_qr_wide_and_complete_square_values_and_gradients():
    rng = _rng(5)
    A = _wc(rng, 2, 4)
    Q, R = LA.qr(T(A), mode="complete")            # m < n: complete == reduced
    nq, nr = np.linalg.qr(A, mode="complete")
    np.testing.assert_allclose(Q._data, nq, atol=1e-13)
    np.testing.assert_allclose(R._data, nr, atol=1e-13)
    _fd_check(lambda x: LA.qr(x, mode="complete").Q.sum() + (LA.qr(x).R ** 2).sum(), [A])


# ---------------------------------------------------------------- pinv, lstsq
def test_pinv_rank_deficient_and_tolerances():
    rng = _rng(6)
    u = rng.standard_normal((4, 2))
    A = u @ u.T                                       # rank 2
    np.testing.assert_allclose(LA.pinv(T(A))._data, np.linalg.pinv(A), atol=1e-12)
    np.testing.assert_allclose(LA.pinv(T(A), hermitian=True)._data,
                               np.linalg.pinv(A, hermitian=True), atol=1e-12)
    s = np.linalg.svd(A, compute_uv=False)
    big = LA.pinv(T(A), atol=float(s[0]) * 1.01)      # every singular value dropped
    np.testing.assert_array_equal(big._data, np.zeros((4, 4)))
    assert LA.pinv(tp.zeros(0, 3, dtype=tp.float64)).shape == (3, 0)
    with pytest.raises(TypeError):
        LA.pinv(T(A), rtol="x")


@pytest.mark.skipif(torch is None, reason="torch not installed")
@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
def test_lstsq_outputs_match_torch(driver):
    rng = _rng(7)
    A, B = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    r = LA.lstsq(T(A), T(B), driver=driver)
    t = torch.linalg.lstsq(torch.from_numpy(A), torch.from_numpy(B), driver=driver)
    np.testing.assert_allclose(r.solution._data, t.solution.numpy(), rtol=1e-10)
    for name in ("residuals", "rank", "singular_values"):
        got, want = getattr(r, name), getattr(t, name)
        assert tuple(got.shape) == tuple(want.shape), name
        np.testing.assert_allclose(got._data, want.numpy(), rtol=1e-10)


def test_lstsq_underdetermined_is_minimum_norm_and_vector_b():
    rng = _rng(8)
    A, b = rng.standard_normal((2, 4)), rng.standard_normal(2)
    x = LA.lstsq(T(A), T(b)).solution
    assert x.shape == (4,)
    np.testing.assert_allclose(x._data, np.linalg.pinv(A) @ b, rtol=1e-12)
    with pytest.raises(RuntimeError, match="driver"):
        LA.lstsq(T(A), T(b), driver="gelsx")
    with pytest.raises(RuntimeError, match="same number of rows"):
        LA.lstsq(T(A), tp.ones(3, 1, dtype=tp.float64))


# ---------------------------------------------------------------- compositions
@pytest.mark.parametrize("n", [0, 1, 2, 5, -1, -3])
def test_matrix_power(n):
    rng = _rng(9)
    A = _wc(rng, 2, 3, 3) * 0.2
    np.testing.assert_allclose(LA.matrix_power(T(A), n)._data,
                               np.linalg.matrix_power(A, n), rtol=1e-12)
    if n:
        _fd_check(lambda x: LA.matrix_power(x, n), [A])


def test_multi_dot():
    rng = _rng(10)
    a, b, c = rng.standard_normal(3), rng.standard_normal((3, 4)), rng.standard_normal(4)
    np.testing.assert_allclose(float(LA.multi_dot([T(a), T(b), T(c)])),
                               np.linalg.multi_dot([a, b, c]), rtol=1e-12)
    with pytest.raises(RuntimeError, match="at least 2"):
        LA.multi_dot([T(a)])
    with pytest.raises(RuntimeError, match="2-D"):
        LA.multi_dot([T(b), T(a), T(b)])


def test_linalg_namespace():
    assert LA.matmul is tp.matmul
    with pytest.raises(AttributeError, match="not implement"):
        LA.matrix_exp
    with pytest.raises(AttributeError, match="no attribute"):
        LA.no_such_function


# ---------------------------------------------------------------- second order
@pytest.mark.parametrize("name", ["inv", "det", "cholesky", "eigh", "svd", "qr", "pinv"])
def test_hessian_vector_products_match_finite_differences(name):
    rng = _rng(11)
    a = rng.standard_normal((3, 3))
    f = {"inv": lambda x: (LA.inv(x + T(6 * np.eye(3))) ** 2).sum(),
         "det": lambda x: LA.det(x + T(6 * np.eye(3))),
         "cholesky": lambda x: (LA.cholesky(x @ x.mT + T(3 * np.eye(3))) ** 3).sum(),
         "eigh": lambda x: (LA.eigh(x + x.mT + T(np.diag([10.0, 20, 30]))).eigenvectors ** 4).sum(),
         "svd": lambda x: (LA.svd(x + T(np.diag([10.0, 20, 30]))).U ** 4).sum(),
         "qr": lambda x: (LA.qr(x + T(6 * np.eye(3))).Q ** 3).sum(),
         "pinv": lambda x: (LA.pinv(x + T(6 * np.eye(3))) ** 2).sum()}[name]
    t = rng.standard_normal((3, 3))

    def grad_at(arr):
        x = T(arr).requires_grad_()
        (g,) = tp.autograd.grad(f(x), x)
        return g._data
    numeric = (grad_at(a + EPS * t) - grad_at(a - EPS * t)) / (2 * EPS)
    x = T(a).requires_grad_()
    (g,) = tp.autograd.grad(f(x), x, create_graph=True)
    (hv,) = tp.autograd.grad((g * T(t)).sum(), x)
    np.testing.assert_allclose(hv._data, numeric, rtol=1e-5, atol=1e-6)


def test_slogdet_of_one_matrix_gives_0d_sign_and_logabsdet():
    # (found by the fresh-user check: sign came back with shape [1])
    r = tp.linalg.slogdet(tp.tensor([[0.0, 1.0], [1.0, 0.0]]))
    assert r.sign.shape == () and r.logabsdet.shape == ()
    assert r.sign.item() == -1.0 and r.logabsdet.item() == 0.0
    assert tp.linalg.slogdet(tp.eye(2).expand(3, 2, 2)).sign.shape == (3,)
