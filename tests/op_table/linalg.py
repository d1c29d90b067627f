"""Op-table rows of the linear-algebra family: the products (compositions over
matmul/mul, rows named after the primitive they reach), einsum, and the
tensorplay.linalg factorisations.

Inputs are kept well conditioned by wrappers that the row's function, its
numpy reference and its torch call all apply: ``_wc`` adds ``2n I`` (diagonal
dominance: inv, solve, det, qr, pinv, lstsq), ``_spd`` makes ``a a^T + n I``
(cholesky), ``_spread`` adds ``diag(10, 20, ...)`` so that singular values and
eigenvalues are well separated (svd, eigh; ``_sym`` first for eigh).  The
outputs that are unique only up to signs (eigenvectors, singular vectors) are
checked through sign-invariant functions (``V * V``, ``U * U``); Q and R of
``qr`` are LAPACK's (geqrf, continuous in A), checked directly.
"""
import hypothesis.strategies as st
import numpy as np

import tensorplay as tp

from ._base import Fuzz, OpSpec, _normal, _side, fixed_samples

LA = tp.linalg


# ---------------------------------------------------------------- wrappers
def _like(x, c):
    """The numpy constant ``c`` as an operand next to ``x`` (numpy, tensorplay or torch)."""
    if isinstance(x, np.ndarray):
        return c.astype(x.dtype)
    if isinstance(x, tp.Tensor):
        return tp.from_numpy(c.astype(x._data.dtype))
    import torch
    return torch.from_numpy(c).to(x.dtype)


def _mT(x):
    return np.swapaxes(x, -1, -2) if isinstance(x, np.ndarray) else x.mT


def _wc(x):
    m, n = x.shape[-2:]
    return x + _like(x, 2.0 * max(m, n, 1) * np.eye(m, n))


def _spread(x):
    m, n = x.shape[-2:]
    return x + _like(x, np.eye(m, n) * (10.0 * np.arange(1, n + 1)))


def _sym(x):
    return x + _mT(x)


def _spd(x):
    n = x.shape[-1]
    return x @ _mT(x) + _like(x, n * np.eye(n))


def _sq(x):
    return x * x


# ---------------------------------------------------------------- fuzz drawers
def _batch(draw, max_dims=2):
    return tuple(draw(st.lists(st.integers(0, 3), max_size=max_dims)))


def _square_shapes(draw):
    n = _side(draw)
    return [_batch(draw) + (n, n)]


def _matrix_shapes(draw):
    return [_batch(draw) + (_side(draw), _side(draw))]


def _tall_shapes(draw):
    n = _side(draw)
    return [_batch(draw) + (n + _side(draw, 0, 2), n)]


def _solve_shapes(draw):
    """A (*, n, n) and a matrix B (*, n, k): its batch dims all or none (one dim
    fewer than A with A's batch shape would make B a vector, PyTorch's rule)."""
    n, b = _side(draw), _batch(draw)
    keep = len(b) == 1 or draw(st.booleans())
    return [b + (n, n), (b if keep else ()) + (n, _side(draw))]


def _solve_vector_shapes(draw):
    n, b = _side(draw), _batch(draw)
    return [b + (n, n), b + (n,)]


def _lstsq_shapes(draw):
    n, b = _side(draw, 1, 3), _batch(draw, 1)
    m = n + _side(draw, 0, 2)
    return [b + (m, n), b + (m, _side(draw, 1, 3))]


def _two(shapes):
    def draw_shapes(draw):
        return shapes(draw)
    return draw_shapes


def _mm_shapes(draw):
    return [(_side(draw), (k := _side(draw))), (k, _side(draw))]


def _bmm_shapes(draw):
    b, k = _side(draw, 0, 3), _side(draw)
    return [(b, _side(draw), k), (b, k, _side(draw))]


def _mv_shapes(draw):
    k = _side(draw)
    return [(_side(draw), k), (k,)]


def _vec_shapes(draw):
    k = _side(draw)
    return [(k,), (k,)]


def _outer_shapes(draw):
    return [(_side(draw),), (_side(draw),)]


def _addmm_shapes(draw):
    n, k, p = _side(draw), _side(draw), _side(draw)
    return [draw(st.sampled_from([(n, p), (p,), (1, p), ()])), (n, k), (k, p)]


def _inner_shapes(draw):
    k = _side(draw)
    return [_batch(draw) + (k,), _batch(draw, 1) + (k,)]


def _any_two(draw):
    return [tuple(draw(st.lists(st.integers(0, 3), max_size=3))) for _ in range(2)]


def _eq_shapes(draw):
    b, i, j, k = _side(draw, 0, 3), _side(draw), _side(draw), _side(draw)
    return [(b, i, j), (b, j, k)]


# ---------------------------------------------------------------- references
def _lstsq_ref(a, b):
    return np.matmul(np.linalg.pinv(a), b)


def _kron_ref(a, b):
    return np.kron(a, b)


def _svd_parts(a, full=False):
    return np.linalg.svd(a, full_matrices=full)


M = _normal
SPECS = [
    # ---- products (compositions over matmul / mul)
    OpSpec("matmul", tp.mm, np.matmul,
           fixed_samples(("mm", [(M, (3, 4)), (M, (4, 5))], {}),
                         ("empty_k", [(M, (3, 0)), (M, (0, 2))], {}),
                         ("noncontig", [(M, (3, 4)), (M, (4, 4))], {})),
           variant="mm", fuzz=Fuzz("mm", ("input", "mat2"), kinds="fi", shapes=_mm_shapes),
           torch=lambda T, a, b: T.mm(a, b)),
    OpSpec("matmul", tp.bmm, np.matmul,
           fixed_samples(("bmm", [(M, (2, 3, 4)), (M, (2, 4, 5))], {}),
                         ("noncontig", [(M, (2, 3, 4)), (M, (2, 4, 4))], {})),
           variant="bmm", fuzz=Fuzz("bmm", ("input", "mat2"), kinds="fi", shapes=_bmm_shapes),
           torch=lambda T, a, b: T.bmm(a, b)),
    OpSpec("matmul", tp.mv, np.matmul,
           fixed_samples(("mv", [(M, (3, 4)), (M, (4,))], {}),
                         ("noncontig", [(M, (3, 4)), (M, (4,))], {})),
           variant="mv", fuzz=Fuzz("mv", ("input", "vec"), kinds="fi", shapes=_mv_shapes),
           torch=lambda T, a, b: T.mv(a, b)),
    OpSpec("matmul", tp.dot, np.dot,
           fixed_samples(("dot", [(M, (5,)), (M, (5,))], {}),
                         ("empty", [(M, (0,)), (M, (0,))], {}),
                         ("noncontig", [(M, (4,)), (M, (4,))], {})),
           variant="dot", fuzz=Fuzz("dot", ("input", "tensor"), kinds="fi", shapes=_vec_shapes),
           torch=lambda T, a, b: T.dot(a, b)),
    OpSpec("matmul", tp.vdot, np.vdot,
           fixed_samples(("vdot", [(M, (5,)), (M, (5,))], {})),
           variant="vdot", fuzz=Fuzz("vdot", ("input", "other"), kinds="fi",
                                     shapes=_vec_shapes),
           torch=lambda T, a, b: T.vdot(a, b)),
    OpSpec("mul", tp.outer, np.outer,
           fixed_samples(("outer", [(M, (3,)), (M, (4,))], {}),
                         ("noncontig", [(M, (3,)), (M, (4,))], {})),
           variant="outer", fuzz=Fuzz("outer", ("input", "vec2"), kinds="fi",
                                      shapes=_outer_shapes),
           torch=lambda T, a, b: T.outer(a, b)),
    OpSpec("matmul", tp.inner, np.inner,
           fixed_samples(("vec", [(M, (4,)), (M, (4,))], {}),
                         ("batched", [(M, (2, 3, 4)), (M, (5, 4))], {}),
                         ("noncontig", [(M, (3, 4)), (M, (2, 4))], {})),
           variant="inner", fuzz=Fuzz("inner", ("input", "other"), kinds="fi",
                                      shapes=_inner_shapes),
           torch=lambda T, a, b: T.inner(a, b)),
    OpSpec("mul", tp.inner, np.inner,
           fixed_samples(("scalar", [(M, ()), (M, (2, 3))], {})),
           variant="inner_0d", fuzz=Fuzz("inner", ("input", "other"), kinds="fi",
                                         shapes=lambda d: [(), _matrix_shapes(d)[0]]),
           torch=lambda T, a, b: T.inner(a, b)),
    OpSpec("matmul", lambda c, a, b: tp.addmm(c, a, b, beta=0.5, alpha=2.0),
           lambda c, a, b: 0.5 * c + 2.0 * (a @ b),
           fixed_samples(("full", [(M, (3, 5)), (M, (3, 4)), (M, (4, 5))], {}),
                         ("bcast", [(M, (5,)), (M, (3, 4)), (M, (4, 5))], {}),
                         ("noncontig", [(M, (3, 4)), (M, (3, 4)), (M, (4, 4))], {})),
           variant="addmm", fuzz=Fuzz("addmm", ("input", "mat1", "mat2"), shapes=_addmm_shapes),
           torch=lambda T, c, a, b: T.addmm(c, a, b, beta=0.5, alpha=2.0)),
    OpSpec("matmul", lambda c, a, b: tp.addmm(c, a, b, beta=0),
           lambda c, a, b: a @ b,
           fixed_samples(("beta0", [(M, (3, 5)), (M, (3, 4)), (M, (4, 5))], {})),
           variant="addmm_beta0", fuzz=Fuzz("addmm", ("input", "mat1", "mat2"),
                                            shapes=_addmm_shapes),
           torch=lambda T, c, a, b: T.addmm(c, a, b, beta=0)),
    OpSpec("matmul", lambda c, a, b: tp.addmv(c, a, b, beta=2.0, alpha=-1.0),
           lambda c, a, b: 2.0 * c - a @ b,
           fixed_samples(("addmv", [(M, (3,)), (M, (3, 4)), (M, (4,))], {})),
           variant="addmv", fuzz=Fuzz("addmv", ("input", "mat", "vec"),
                                      shapes=lambda d: [(m := _side(d),), (m, k := _side(d)),
                                                        (k,)]),
           torch=lambda T, c, a, b: T.addmv(c, a, b, beta=2.0, alpha=-1.0)),
    OpSpec("mul", lambda c, a, b: tp.addr(c, a, b, alpha=3.0),
           lambda c, a, b: c + 3.0 * np.outer(a, b),
           fixed_samples(("addr", [(M, (3, 4)), (M, (3,)), (M, (4,))], {})),
           variant="addr", fuzz=Fuzz("addr", ("input", "vec1", "vec2"),
                                     shapes=lambda d: [(m := _side(d), n := _side(d)), (m,),
                                                       (n,)]),
           torch=lambda T, c, a, b: T.addr(c, a, b, alpha=3.0)),
    OpSpec("matmul", lambda c, a, b: tp.baddbmm(c, a, b, beta=0.5),
           lambda c, a, b: 0.5 * c + a @ b,
           fixed_samples(("baddbmm", [(M, (2, 3, 5)), (M, (2, 3, 4)), (M, (2, 4, 5))], {}),
                         ("bcast", [(M, (3, 1)), (M, (2, 3, 4)), (M, (2, 4, 5))], {})),
           variant="baddbmm", fuzz=Fuzz("baddbmm", ("input", "batch1", "batch2"),
                                        shapes=lambda d: [(b := _side(d), m := _side(d),
                                                           n := _side(d)), (b, m, k := _side(d)),
                                                          (b, k, n)]),
           torch=lambda T, c, a, b: T.baddbmm(c, a, b, beta=0.5)),
    OpSpec("matmul", lambda a, b: tp.tensordot(a, b, dims=2),
           lambda a, b: np.tensordot(a, b, axes=2),
           fixed_samples(("int", [(M, (2, 3, 4)), (M, (3, 4, 5))], {})),
           variant="tensordot_int",
           fuzz=Fuzz("tensordot", ("a", "b"), kinds="fi",
                     shapes=lambda d: [(_side(d), i := _side(d), j := _side(d)),
                                       (i, j, _side(d))]),
           torch=lambda T, a, b: T.tensordot(a, b, dims=2)),
    OpSpec("matmul", lambda a, b: tp.tensordot(a, b, dims=([0, 2], [1, 0])),
           lambda a, b: np.tensordot(a, b, axes=([0, 2], [1, 0])),
           fixed_samples(("lists", [(M, (2, 3, 4)), (M, (4, 2, 5))], {}),
                         ("noncontig", [(M, (2, 3, 4)), (M, (4, 2, 4))], {})),
           variant="tensordot_lists",
           fuzz=Fuzz("tensordot", ("a", "b"), kinds="fi",
                     shapes=lambda d: [(i := _side(d), _side(d), j := _side(d)),
                                       (j, i, _side(d))]),
           torch=lambda T, a, b: T.tensordot(a, b, dims=([0, 2], [1, 0]))),
    OpSpec("mul", tp.kron, _kron_ref,
           fixed_samples(("2d", [(M, (2, 3)), (M, (3, 2))], {}),
                         ("ranks", [(M, (2,)), (M, (2, 3))], {}),
                         ("0d", [(M, ()), (M, (3,))], {})),
           variant="kron", fuzz=Fuzz("kron", ("input", "other"), kinds="fi", shapes=_any_two),
           torch=lambda T, a, b: T.kron(a, b)),
    # ---- einsum (its equation is a str, which a Signature cannot declare: the
    # rows fuzz the equivalent product's Signature; einsum's own errors are
    # tested in tests/test_linalg.py)
    OpSpec("matmul", lambda a, b: tp.einsum("bij,bjk->bik", a, b),
           lambda a, b: np.einsum("bij,bjk->bik", a, b),
           fixed_samples(("bmm", [(M, (2, 3, 4)), (M, (2, 4, 5))], {}),
                         ("noncontig", [(M, (2, 3, 4)), (M, (2, 4, 4))], {})),
           variant="einsum_bmm", fuzz=Fuzz("bmm", ("input", "mat2"), kinds="fi",
                                           shapes=_eq_shapes),
           torch=lambda T, a, b: T.einsum("bij,bjk->bik", a, b)),
    OpSpec("matmul", lambda a, b, c: tp.einsum("ij,jk,kl", a, b, c),
           lambda a, b, c: np.einsum("ij,jk,kl", a, b, c),
           fixed_samples(("chain", [(M, (2, 3)), (M, (3, 4)), (M, (4, 2))], {})),
           variant="einsum_chain",
           fuzz=Fuzz("addmm", ("mat1", "mat2", "input"),
                     shapes=lambda d: [(_side(d), k := _side(d)), (k, j := _side(d)),
                                       (j, _side(d))]),
           torch=lambda T, a, b, c: T.einsum("ij,jk,kl", a, b, c)),
    OpSpec("getitem", lambda a: tp.einsum("ii->", a), np.trace,
           fixed_samples(("trace", [(M, (4, 4))], {}), ("noncontig", [(M, (3, 3))], {})),
           variant="einsum_trace",
           fuzz=Fuzz("linalg.det", ("A",), shapes=lambda d: [((n := _side(d)), n)]),
           torch=lambda T, a: T.einsum("ii->", a)),
    OpSpec("getitem", lambda a: tp.einsum("...ii->...i", a),
           lambda a: np.einsum("...ii->...i", a),
           fixed_samples(("diag", [(M, (2, 3, 3))], {})),
           variant="einsum_diag", fuzz=Fuzz("linalg.det", ("A",), shapes=_square_shapes),
           torch=lambda T, a: T.einsum("...ii->...i", a)),
    OpSpec("matmul", lambda a, b: tp.einsum("...ij,...j->...i", a, b),
           lambda a, b: np.einsum("...ij,...j->...i", a, b),
           fixed_samples(("ellipsis_bcast", [(M, (2, 1, 3, 4)), (M, (5, 4))], {})),
           variant="einsum_ellipsis",
           fuzz=Fuzz("matmul", ("input", "other"),
                     shapes=lambda d: [(_side(d, 0, 2), _side(d), k := _side(d)), (k,)]),
           torch=lambda T, a, b: T.einsum("...ij,...j->...i", a, b)),
    # ---- tensorplay.linalg
    OpSpec("linalg_inv", lambda a: LA.inv(_wc(a)), lambda a: np.linalg.inv(_wc(a)),
           fixed_samples(("2d", [(M, (4, 4))], {}), ("batched", [(M, (2, 3, 3, 3))], {}),
                         ("empty_batch", [(M, (0, 3, 3))], {}), ("0x0", [(M, (0, 0))], {}),
                         ("noncontig", [(M, (3, 3))], {})),
           fuzz=Fuzz("linalg.inv", ("A",), shapes=_square_shapes, special=False),
           torch=lambda T, a: T.linalg.inv(_wc(a))),
    OpSpec("linalg_solve", lambda a, b: LA.solve(_wc(a), b),
           lambda a, b: np.linalg.solve(_wc(a), b),
           fixed_samples(("matrix", [(M, (3, 3)), (M, (3, 2))], {}),
                         ("batch_bcast", [(M, (2, 3, 3)), (M, (3, 4))], {}),
                         ("noncontig", [(M, (3, 3)), (M, (3, 3))], {})),
           variant="matrix",
           fuzz=Fuzz("linalg.solve", ("A", "B"), shapes=_solve_shapes, special=False),
           torch=lambda T, a, b: T.linalg.solve(_wc(a), b)),
    OpSpec("linalg_solve", lambda a, b: LA.solve(_wc(a), b),
           lambda a, b: np.linalg.solve(_wc(a), b[..., None])[..., 0],
           fixed_samples(("vector", [(M, (3, 3)), (M, (3,))], {}),
                         ("batched_vector", [(M, (2, 3, 3)), (M, (2, 3))], {})),
           variant="vector",
           fuzz=Fuzz("linalg.solve", ("A", "B"), shapes=_solve_vector_shapes, special=False),
           torch=lambda T, a, b: T.linalg.solve(_wc(a), b)),
    OpSpec("linalg_solve", lambda a, b: LA.solve(_wc(a), b, left=False),
           lambda a, b: np.swapaxes(np.linalg.solve(_mT(_wc(a)), _mT(b)), -1, -2),
           fixed_samples(("right", [(M, (3, 3)), (M, (2, 3))], {})),
           variant="left_false",
           fuzz=Fuzz("linalg.solve", ("A", "B"), special=False,
                     shapes=lambda d: [(n := _side(d), n), (_side(d), n)]),
           torch=lambda T, a, b: T.linalg.solve(_wc(a), b, left=False)),
    OpSpec("linalg_det", lambda a: LA.det(_wc(a) * 0.25), lambda a: np.linalg.det(_wc(a) * 0.25),
           fixed_samples(("2d", [(M, (3, 3))], {}), ("batched", [(M, (2, 4, 4))], {}),
                         ("0x0", [(M, (0, 0))], {}), ("noncontig", [(M, (3, 3))], {})),
           fuzz=Fuzz("linalg.det", ("A",), shapes=_square_shapes, special=False),
           torch=lambda T, a: T.linalg.det(_wc(a) * 0.25)),
    OpSpec("linalg_det", lambda a: LA.det(a), np.linalg.det,
           fixed_samples(("raw", [(M, (3, 3))], {})), variant="raw",
           fuzz=Fuzz("linalg.det", ("A",), shapes=lambda d: [(2, 2)], special=False,
                     domain=(0.5, 2.0)),
           torch=lambda T, a: T.linalg.det(a)),
    OpSpec("linalg_slogdet", lambda a: LA.slogdet(-_wc(a)).logabsdet,
           lambda a: np.linalg.slogdet(-_wc(a))[1],
           fixed_samples(("2d", [(M, (3, 3))], {}), ("batched", [(M, (2, 4, 4))], {}),
                         ("noncontig", [(M, (3, 3))], {})),
           fuzz=Fuzz("linalg.slogdet", ("A",), shapes=_square_shapes, special=False),
           torch=lambda T, a: T.linalg.slogdet(-_wc(a)).logabsdet),
    OpSpec("linalg_cholesky", lambda a: LA.cholesky(_spd(a)),
           lambda a: np.linalg.cholesky(_spd(a)),
           fixed_samples(("2d", [(M, (4, 4))], {}), ("batched", [(M, (2, 3, 3))], {}),
                         ("noncontig", [(M, (3, 3))], {})),
           fuzz=Fuzz("linalg.cholesky", ("A",), shapes=_square_shapes, special=False),
           torch=lambda T, a: T.linalg.cholesky(_spd(a))),
    OpSpec("linalg_cholesky", lambda a: LA.cholesky(_spd(a), upper=True),
           lambda a: _mT(np.linalg.cholesky(_spd(a))),
           fixed_samples(("upper", [(M, (3, 3))], {})), variant="upper",
           fuzz=Fuzz("linalg.cholesky", ("A",), shapes=_square_shapes, special=False),
           torch=lambda T, a: T.linalg.cholesky(_spd(a), upper=True)),
    OpSpec("linalg_qr", lambda a: LA.qr(_wc(a)).Q, lambda a: np.linalg.qr(_wc(a))[0],
           fixed_samples(("tall", [(M, (4, 3))], {}), ("square", [(M, (3, 3))], {}),
                         ("wide", [(M, (2, 4))], {}), ("batched", [(M, (2, 4, 2))], {}),
                         ("noncontig", [(M, (4, 3))], {})),
           variant="Q", fuzz=Fuzz("linalg.qr", ("A",), shapes=_matrix_shapes, special=False),
           torch=lambda T, a: T.linalg.qr(_wc(a)).Q),
    OpSpec("linalg_qr", lambda a: LA.qr(_wc(a)).R, lambda a: np.linalg.qr(_wc(a))[1],
           fixed_samples(("tall", [(M, (4, 3))], {}), ("wide", [(M, (2, 4))], {}),
                         ("batched", [(M, (2, 3, 3))], {})),
           variant="R", fuzz=Fuzz("linalg.qr", ("A",), shapes=_matrix_shapes, special=False),
           torch=lambda T, a: T.linalg.qr(_wc(a)).R),
    OpSpec("linalg_eigh", lambda a: LA.eigh(_spread(_sym(a))).eigenvalues,
           lambda a: np.linalg.eigh(_spread(_sym(a)))[0],
           fixed_samples(("2d", [(M, (4, 4))], {}), ("batched", [(M, (2, 3, 3))], {}),
                         ("noncontig", [(M, (3, 3))], {})),
           variant="eigenvalues",
           fuzz=Fuzz("linalg.eigh", ("A",), shapes=_square_shapes, special=False),
           torch=lambda T, a: T.linalg.eigh(_spread(_sym(a))).eigenvalues),
    OpSpec("linalg_eigh", lambda a: _sq(LA.eigh(_spread(_sym(a))).eigenvectors),
           lambda a: _sq(np.linalg.eigh(_spread(_sym(a)))[1]),
           fixed_samples(("2d", [(M, (4, 4))], {}), ("batched", [(M, (2, 3, 3))], {})),
           variant="eigenvectors_sq",
           fuzz=Fuzz("linalg.eigh", ("A",), shapes=_square_shapes, special=False),
           torch=lambda T, a: _sq(T.linalg.eigh(_spread(_sym(a))).eigenvectors)),
    OpSpec("linalg_eigh", lambda a: LA.eigvalsh(_spread(_sym(a)), UPLO="U"),
           lambda a: np.linalg.eigvalsh(_spread(_sym(a)), UPLO="U"),
           fixed_samples(("upper", [(M, (3, 3))], {})), variant="eigvalsh",
           fuzz=Fuzz("linalg.eigh", ("A",), shapes=_square_shapes, special=False),
           torch=lambda T, a: T.linalg.eigvalsh(_spread(_sym(a)), UPLO="U")),
    OpSpec("linalg_svd", lambda a: LA.svd(_spread(a), full_matrices=False).S,
           lambda a: _svd_parts(_spread(a))[1],
           fixed_samples(("tall", [(M, (4, 3))], {}), ("wide", [(M, (2, 4))], {}),
                         ("batched", [(M, (2, 3, 3))], {}), ("noncontig", [(M, (3, 3))], {})),
           variant="S", fuzz=Fuzz("linalg.svd", ("A",), shapes=_matrix_shapes, special=False),
           torch=lambda T, a: T.linalg.svd(_spread(a), full_matrices=False).S),
    OpSpec("linalg_svd", lambda a: _sq(LA.svd(_spread(a), full_matrices=False).U),
           lambda a: _sq(_svd_parts(_spread(a))[0]),
           fixed_samples(("tall", [(M, (4, 3))], {}), ("wide", [(M, (2, 4))], {}),
                         ("batched", [(M, (2, 3, 3))], {})),
           variant="U_sq",
           fuzz=Fuzz("linalg.svd", ("A",), shapes=_matrix_shapes, special=False),
           torch=lambda T, a: _sq(T.linalg.svd(_spread(a), full_matrices=False).U)),
    OpSpec("linalg_svd", lambda a: _sq(LA.svd(_spread(a), full_matrices=False).Vh),
           lambda a: _sq(_svd_parts(_spread(a))[2]),
           fixed_samples(("tall", [(M, (4, 3))], {}), ("wide", [(M, (2, 4))], {})),
           variant="Vh_sq",
           fuzz=Fuzz("linalg.svd", ("A",), shapes=_matrix_shapes, special=False),
           torch=lambda T, a: _sq(T.linalg.svd(_spread(a), full_matrices=False).Vh)),
    OpSpec("linalg_svd", lambda a: _sq(LA.svd(_spread(a)).U) + _sq(LA.svd(_spread(a)).Vh).mT,
           lambda a: _sq(_svd_parts(_spread(a), True)[0]) + _mT(_sq(_svd_parts(_spread(a),
                                                                          True)[2])),
           fixed_samples(("square_full", [(M, (3, 3))], {})), variant="full_square",
           fuzz=Fuzz("linalg.svd", ("A",), shapes=_square_shapes, special=False),
           torch=lambda T, a: (_sq(T.linalg.svd(_spread(a)).U)
                               + _sq(T.linalg.svd(_spread(a)).Vh).mT)),
    OpSpec("linalg_svdvals", lambda a: LA.svdvals(_spread(a)),
           lambda a: np.linalg.svd(_spread(a), compute_uv=False),
           fixed_samples(("tall", [(M, (4, 3))], {}), ("wide", [(M, (2, 4))], {}),
                         ("batched", [(M, (2, 3, 3))], {}), ("noncontig", [(M, (3, 3))], {})),
           fuzz=Fuzz("linalg.svdvals", ("A",), shapes=_matrix_shapes, special=False),
           torch=lambda T, a: T.linalg.svdvals(_spread(a))),
    OpSpec("linalg_pinv", lambda a: LA.pinv(_wc(a)), lambda a: np.linalg.pinv(_wc(a)),
           fixed_samples(("tall", [(M, (4, 3))], {}), ("wide", [(M, (2, 4))], {}),
                         ("square", [(M, (3, 3))], {}), ("batched", [(M, (2, 3, 2))], {}),
                         ("noncontig", [(M, (3, 3))], {})),
           fuzz=Fuzz("linalg.pinv", ("A",), shapes=_matrix_shapes, special=False),
           torch=lambda T, a: T.linalg.pinv(_wc(a))),
    OpSpec("linalg_pinv", lambda a: LA.pinv(_spd(a), hermitian=True),
           lambda a: np.linalg.pinv(_spd(a), hermitian=True),
           fixed_samples(("hermitian", [(M, (3, 3))], {})), variant="hermitian",
           fuzz=Fuzz("linalg.pinv", ("A",), shapes=_square_shapes, special=False),
           torch=lambda T, a: T.linalg.pinv(_spd(a), hermitian=True)),
    OpSpec("linalg_lstsq", lambda a, b: LA.lstsq(_wc(a), b).solution,
           lambda a, b: _lstsq_ref(_wc(a), b),
           fixed_samples(("tall", [(M, (5, 3)), (M, (5, 2))], {}),
                         ("wide", [(M, (2, 4)), (M, (2, 3))], {}),
                         ("batched", [(M, (2, 4, 3)), (M, (2, 4, 1))], {})),
           fuzz=Fuzz("linalg.lstsq", ("A", "B"), shapes=_lstsq_shapes, special=False),
           torch=lambda T, a, b: T.linalg.lstsq(_wc(a), b,
                                                driver="gelsd" if a.shape[-2] < a.shape[-1]
                                                else None).solution),
]
