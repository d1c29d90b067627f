"""tensorplay.linalg, part 2: the orthogonal factorisations qr, eigh, svd, svdvals
(see ``linalg_decomp.py`` for the layout: LAPACK through numpy.linalg, one
primitive each, several outputs packed into one array).

Degenerate spectra.  The eigenvector and singular-vector derivatives divide by
eigenvalue (singular value squared) gaps: at repeated eigenvalues or singular
values the vectors are not unique and the gradient is inf or nan, as in
PyTorch (whose docs say the same); a loss that uses only the eigenvalues or
singular values (the cotangent of the vectors is exactly zero) skips those
terms and stays finite, as PyTorch skips an undefined gradient.  The SVD's
gradient also divides by the singular values when m != n and the vectors are
used: a rank-deficient A gives inf/nan there.
"""
from collections import namedtuple

import numpy as np

from tensorplay._ops.elementwise import where
from tensorplay._ops.linalg import matmul
from tensorplay._ops.linalg_decomp import (_diag_embed, _diagonal, _eye, _float_checker,
                                           _nonzero, _np_linalg, _pack, _pack_np, _square,
                                           _tril, _unpack, inv)
from tensorplay._ops.registry import apply, defop
from tensorplay._ops import _batching as _B
from tensorplay._tensor import Tensor

__all__ = []

QRResult = namedtuple("linalg_qr", ["Q", "R"])
EighResult = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
SVDResult = namedtuple("linalg_svd", ["U", "S", "Vh"])


def _gap_inverse(x):
    """F[..., i, j] = 1 / (x_j - x_i) off the diagonal, 0 on it (a 0/1 mask and a
    shifted diagonal, so no inf ever enters the graph at i == j)."""
    n = x.shape[-1]
    eye = _eye(n, x._data.dtype)
    e = x.unsqueeze(-2) - x.unsqueeze(-1)
    return (1.0 / (e + eye)) * (1.0 - eye)


# ---------------------------------------------------------------- qr
def _qr_shapes(a_shape, mode):
    m, n = a_shape[-2:]
    k = min(m, n)
    if mode == "complete":
        return [(m, m), (m, n)]
    if mode == "r":
        return [(0,), (k, n)]
    return [(m, k), (k, n)]


def _qr_fwd(a, mode):
    batch = a.shape[:-2]
    if mode == "r":
        r = _np_linalg("linalg.qr", np.linalg.qr, a, mode="r")
        return _pack_np([np.zeros(batch + (0,), a.dtype), r], batch)
    q, r = _np_linalg("linalg.qr", np.linalg.qr, a, mode=mode)
    return _pack_np([q, r], batch)


def _qr_check_grad(a, mode):
    m, n = a.shape[-2:]
    if mode == "r":
        raise RuntimeError("linalg.qr: the derivative of linalg.qr depends on Q, which is "
                           "not computed when mode='r'. Please use linalg.qr(A, "
                           "mode='reduced') if you are going to differentiate through "
                           "linalg.qr.")
    if mode == "complete" and m > n:
        raise RuntimeError("linalg.qr: the QR decomposition is not differentiable when "
                           "mode='complete' and nrows > ncols.")


def _qr_square_vjp(gQ, gR, Q, R):
    """m >= n (Q (m, n), R (n, n)): gA = (gQ + Q copyltu(M)) R^-T with
    M = R gR^T - gQ^T Q, copyltu(M) = tril(M) + tril(M, -1)^T (Liao, Liu, Wang &
    Xiang 2019, "Differentiable programming tensor networks", eq. 7; PyTorch's
    linalg_qr_backward)."""
    M = matmul(R, gR.mT) - matmul(gQ.mT, Q)
    C = _tril(M) + _tril(M, -1).mT
    return matmul(gQ + matmul(Q, C), inv(R).mT)


def _qr_vjp(g, out, a, mode):
    _qr_check_grad(a, mode)
    m, n = a.shape[-2:]
    Q, R = _unpack(out, a.shape[:-2], _qr_shapes(a.shape, mode))
    gQ, gR = _unpack(g, a.shape[:-2], _qr_shapes(a.shape, mode))
    if m >= n:
        return _qr_square_vjp(gQ, gR, Q, R)
    # m < n: A = [X | Y], R = [U | V] with X = Q U (square), Y = Q V
    U, gU, gV = R[..., :, :m], gR[..., :, :m], gR[..., :, m:]
    Y = a[..., :, m:]
    gX = _qr_square_vjp(gQ + matmul(Y, gV.mT), gU, Q, U)
    return _cat_last(gX, matmul(Q, gV))


def _cat_last(x, y):
    """[x | y] along the last dim (two ``getitem_backward`` scatters)."""
    from tensorplay._ops.shape import check_index, getitem_backward
    full = x.shape[:-1] + (x.shape[-1] + y.shape[-1],)
    lead = (slice(None),) * (len(full) - 1)
    return (getitem_backward(x, full, check_index(lead + (slice(0, x.shape[-1]),), full))
            + getitem_backward(y, full, check_index(lead + (slice(x.shape[-1], None),),
                                                    full)))


def _qr_square_jvp(dA, Q, R):
    """m >= n: C = Q^T dA R^-1, Omega = tril(C, -1) - tril(C, -1)^T (Q^T dQ),
    dR = (C - Omega) R, dQ = dA R^-1 - Q (C - Omega) (PyTorch's linalg_qr_jvp)."""
    Rinv = inv(R)
    dARinv = matmul(dA, Rinv)
    C = matmul(Q.mT, dARinv)
    low = _tril(C, -1)
    B = C - (low - low.mT)
    return dARinv - matmul(Q, B), matmul(B, R)


def _qr_jvp(ts, out, a, mode):
    _qr_check_grad(a, mode)
    m, n = a.shape[-2:]
    batch, shapes = a.shape[:-2], _qr_shapes(a.shape, mode)
    Q, R = _unpack(out, batch, shapes)
    dA = ts[0]
    if m >= n:
        dQ, dR = _qr_square_jvp(dA, Q, R)
    else:
        U, V = R[..., :, :m], R[..., :, m:]
        dQ, dU = _qr_square_jvp(dA[..., :, :m], Q, U)
        dV = matmul(Q.mT, dA[..., :, m:] - matmul(dQ, V))
        dR = _cat_last(dU, dV)
    return _pack([dQ, dR], batch, shapes)


_qr = defop("linalg_qr", _qr_fwd, vjp=(_qr_vjp,), jvp=_qr_jvp, saves=("inputs", "out"),
            batch=_B.leading_rule)
_check_qr = _float_checker("linalg.qr", "A")


def qr(A, mode="reduced"):
    """QR decomposition ``A = Q R``: a named tuple ``(Q, R)``, A (*, m, n).

    ``mode='reduced'`` (default): Q (*, m, k), R (*, k, n), k = min(m, n);
    ``'complete'``: Q (*, m, m), R (*, m, n); ``'r'``: Q empty, R (*, k, n).
    Signs as LAPACK (geqrf) returns them, as PyTorch and numpy.

    Derivatives: m >= n, Liao et al. 2019 eq. 7 (PyTorch's linalg_qr_backward)
    ``gA = (gQ + Q copyltu(R gR^T - gQ^T Q)) R^-T``; m < n, the square case on the
    first m columns plus ``Q gR[:, m:]`` for the rest; the JVP is the same
    construction forwards.  They need R invertible (A of full rank k).  As
    PyTorch: mode='r' and mode='complete' with m > n are not differentiable
    (RuntimeError in backward).

    Raises:
        TypeError: a non-Tensor.
        RuntimeError: integer/bool tensors, fewer than 2 dims, an unknown mode.
    """
    (A,) = _check_qr(A)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"linalg.qr: qr received unrecognized mode '{mode}' but expected "
                           f"one of 'reduced' (default), 'r', or 'complete'")
    out = apply(_qr, (A,), {"mode": mode})
    Q, R = _unpack(out, A._data.shape[:-2], _qr_shapes(A._data.shape, mode))
    if mode == "r":                       # an empty Q, as PyTorch
        Q = Tensor._wrap(np.zeros((0,), A._data.dtype))
    return QRResult(Q, R)


# ---------------------------------------------------------------- eigh
def _eigh_fwd(a, uplo):
    w, v = _np_linalg("linalg.eigh", np.linalg.eigh, a, UPLO=uplo)
    return _pack_np([w, v], a.shape[:-2])


def _eigh_parts(t, a):
    n = a.shape[-1]
    return _unpack(t, a.shape[:-2], [(n,), (n, n)])


def _eigh_vjp(g, out, a, uplo):
    # gA = V (diag(gL) + F o skew(V^T gV)) V^T, F_ij = 1/(L_j - L_i): the symmetric
    # gradient (Giles 2008, 3.1; PyTorch's linalg_eig_backward, hermitian case)
    L, V = _eigh_parts(out, a)
    gL, gV = _eigh_parts(g, a)
    inner = _diag_embed(gL)
    if type(gV._data) is _B.BatchedArray:
        # under vmap the zero test would need each example's values: compute the
        # term, with the zero entries of its skew part kept exactly 0 so that an
        # example with repeated eigenvalues and unused eigenvectors stays finite
        VtgV = matmul(V.mT, gV)
        skew = (VtgV - VtgV.mT) * 0.5
        inner = inner + where(skew == 0, 0.0, _gap_inverse(L) * skew)
    elif _nonzero(gV):
        VtgV = matmul(V.mT, gV)
        inner = inner + _gap_inverse(L) * ((VtgV - VtgV.mT) * 0.5)
    return matmul(matmul(V, inner), V.mT)


def _eigh_jvp(ts, out, a, uplo):
    # dL = diag(V^T dA V), dV = V (F o V^T dA V)  (Giles 2008, 3.1)
    L, V = _eigh_parts(out, a)
    P = matmul(matmul(V.mT, ts[0]), V)
    n = a.shape[-1]
    return _pack([_diagonal(P), matmul(V, _gap_inverse(L) * P)], a.shape[:-2],
                 [(n,), (n, n)])


_eigh = defop("linalg_eigh", _eigh_fwd, vjp=(_eigh_vjp,), jvp=_eigh_jvp,
              saves=("inputs", "out"), batch=_B.leading_rule)
_check_eigh = _float_checker("linalg.eigh", "A")


def eigh(A, UPLO="L"):
    """Eigen-decomposition of a symmetric matrix: a named tuple ``(eigenvalues,
    eigenvectors)``, (*, n) ascending and (*, n, n) with ``A = V diag(L) V^T``.

    Only the ``UPLO`` ('L' or 'U') triangle is read, as PyTorch; the gradient is
    the symmetric one.  Eigenvector signs are LAPACK's (syevd), so test
    sign-invariant functions of them.  Derivatives (Giles 2008, 3.1; PyTorch's
    linalg_eig_backward/jvp): ``dL = diag(V^T dA V)``, ``dV = V (F o V^T dA V)``,
    ``F_ij = 1 / (L_j - L_i)``; repeated eigenvalues: see the module docstring
    (inf/nan unless only the eigenvalues are used).

    Raises:
        TypeError: a non-Tensor.
        RuntimeError: integer/bool tensors, fewer than 2 dims, non-square matrices,
            UPLO other than 'L'/'U'; ``LinAlgError`` if LAPACK does not converge.
    """
    (A,) = _check_eigh(A)
    _square("linalg.eigh", A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"linalg.eigh: expected UPLO argument to be 'L' or 'U', but got "
                           f"{UPLO!r}")
    out = apply(_eigh, (A,), {"uplo": UPLO})
    return EighResult(*_eigh_parts(out, A))


def eigvalsh(A, UPLO="L"):
    """The eigenvalues of a symmetric matrix, ascending: ``eigh(A, UPLO).eigenvalues``
    (a composition; its gradient uses only the eigenvalue term, finite at
    repeated eigenvalues).  Raises as ``eigh``."""
    return eigh(A, UPLO).eigenvalues


# ---------------------------------------------------------------- svd
def _svd_shapes(a_shape, full):
    m, n = a_shape[-2:]
    k = min(m, n)
    return [(m, m) if full else (m, k), (k,), (n, n) if full else (k, n)]


def _svd_fwd(a, full_matrices):
    batch = a.shape[:-2]
    u, s, vh = _np_linalg("linalg.svd", np.linalg.svd, a, full_matrices=full_matrices)
    return _pack_np([u, s, vh], batch)


def _svd_vjp(g, out, a, full_matrices):
    # Townsend 2016, "Differentiating the singular value decomposition"; PyTorch's
    # svd_backward (full_matrices: only the first k columns of U and rows of Vh
    # enter, as PyTorch narrows them):
    #   gA = U [(F o (U^T gU - gU^T U)) S + diag(gS) + S (F o (V^T gV - gV^T V))] V^T
    #        + (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T),  F_ij = 1/(s_j^2 - s_i^2)
    m, n = a.shape[-2:]
    k = min(m, n)
    shapes = _svd_shapes(a.shape, full_matrices)
    U, S, Vh = _unpack(out, a.shape[:-2], shapes)
    gU, gS, gVh = _unpack(g, a.shape[:-2], shapes)
    if full_matrices:
        U, gU, Vh, gVh = U[..., :, :k], gU[..., :, :k], Vh[..., :k, :], gVh[..., :k, :]
    inner = _diag_embed(gS)
    use_u, use_v = _nonzero(gU), _nonzero(gVh)
    if not (use_u or use_v):
        return matmul(U * gS.unsqueeze(-2), Vh)
    F = _gap_inverse(S * S)
    Sr = S.unsqueeze(-2)                            # scales columns
    Sc = S.unsqueeze(-1)                            # scales rows
    extra = None
    if use_u:
        UtgU = matmul(U.mT, gU)
        inner = inner + (F * (UtgU - UtgU.mT)) * Sr
        if m > k:
            extra = matmul((gU - matmul(U, UtgU)) / Sr, Vh)
    if use_v:
        VhgVt = matmul(Vh, gVh.mT)                  # V^T gV
        inner = inner + Sc * (F * (VhgVt - VhgVt.mT))
        if n > k:
            t = matmul(U / Sr, gVh - matmul(VhgVt.mT, Vh))
            extra = t if extra is None else extra + t
    gA = matmul(matmul(U, inner), Vh)
    return gA if extra is None else gA + extra


def _svd_jvp(ts, out, a, full_matrices):
    # dP = U^T dA V;  dS = diag(dP);  dU = U (F o (dP S + S dP^T)) + (I - U U^T) dA V S^-1;
    # dV = V (F o (S dP + dP^T S)) + (I - V V^T) dA^T U S^-1  (Townsend 2016; PyTorch's
    # linalg_svd_jvp)
    m, n = a.shape[-2:]
    k = min(m, n)
    if full_matrices and m != n:
        raise RuntimeError("linalg.svd: forward-mode derivatives with full_matrices=True "
                           "and a non-square A are not defined (use full_matrices=False)")
    shapes = _svd_shapes(a.shape, full_matrices)
    U, S, Vh = _unpack(out, a.shape[:-2], shapes)
    dA = ts[0]
    V = Vh.mT
    dP = matmul(matmul(U.mT, dA), V)
    F = _gap_inverse(S * S)
    Sr, Sc = S.unsqueeze(-2), S.unsqueeze(-1)
    dS = _diagonal(dP)
    dU = matmul(U, F * (dP * Sr + Sc * dP.mT))
    dV = matmul(V, F * (Sc * dP + dP.mT * Sr))
    if m > k:
        dU = dU + (matmul(dA, V) - matmul(U, dP)) / Sr
    if n > k:
        dV = dV + (matmul(dA.mT, U) - matmul(V, dP.mT)) / Sr
    return _pack([dU, dS, dV.mT], a.shape[:-2], shapes)


_svd = defop("linalg_svd", _svd_fwd, vjp=(_svd_vjp,), jvp=_svd_jvp, saves=("inputs", "out"),
             batch=_B.leading_rule)
_check_svd = _float_checker("linalg.svd", "A")


def svd(A, full_matrices=True):
    """Singular value decomposition ``A = U diag(S) Vh``: a named tuple ``(U, S, Vh)``.

    A (*, m, n), k = min(m, n); S (*, k) descending; ``full_matrices=True`` (the
    default, as PyTorch): U (*, m, m), Vh (*, n, n); else U (*, m, k), Vh (*, k, n).
    Signs are LAPACK's (gesdd): differentiate sign-invariant functions.

    Derivatives (Townsend 2016; PyTorch's svd_backward/linalg_svd_jvp), see
    ``_svd_vjp``: with ``full_matrices=True`` only the first k columns of U and
    rows of Vh enter the gradient (as PyTorch); forward mode needs
    ``full_matrices=False`` or a square A.  Repeated singular values and (m != n)
    zero singular values give inf/nan when U or Vh are used (module docstring).

    Raises:
        TypeError: a non-Tensor, a non-bool full_matrices.
        RuntimeError: integer/bool tensors, fewer than 2 dims; ``LinAlgError``
            if LAPACK does not converge.
    """
    (A,) = _check_svd(A)
    if not isinstance(full_matrices, (bool, np.bool_)):
        raise TypeError(f"linalg.svd(): argument 'full_matrices' must be bool, not "
                        f"{type(full_matrices).__name__}")
    out = apply(_svd, (A,), {"full_matrices": bool(full_matrices)})
    return SVDResult(*_unpack(out, A._data.shape[:-2],
                              _svd_shapes(A._data.shape, full_matrices)))


# ---------------------------------------------------------------- svdvals
def _svdvals_fwd(a):
    if a.size == 0:
        return np.zeros(a.shape[:-2] + (min(a.shape[-2:]),), a.dtype)
    return np.asarray(_np_linalg("linalg.svdvals", np.linalg.svd, a, compute_uv=False))


def _svdvals_vjp(g, out, a):
    # gA = U diag(g) V^T (PyTorch's svd_backward with gU = gVh = 0)
    U, _, Vh = svd(a, full_matrices=False)
    return matmul(U * g.unsqueeze(-2), Vh)


def _svdvals_jvp(ts, out, a):
    U, _, Vh = svd(a, full_matrices=False)
    return _diagonal(matmul(matmul(U.mT, ts[0]), Vh.mT))


_svdvals = defop("linalg_svdvals", _svdvals_fwd, vjp=(_svdvals_vjp,), jvp=_svdvals_jvp,
                 saves=("inputs",), batch=_B.leading_rule)
_check_svdvals = _float_checker("linalg.svdvals", "A")


def svdvals(A):
    """The singular values of A (*, m, n), descending, (*, min(m, n)); no U, V in the
    forward (LAPACK gesdd without vectors).  Derivatives: ``gA = U diag(g) V^T``,
    ``dS = diag(U^T dA V)`` (U, V recomputed in the rule); finite at repeated
    singular values, as PyTorch.

    Raises:
        TypeError: a non-Tensor.
        RuntimeError: integer/bool tensors, fewer than 2 dims.
    """
    (A,) = _check_svdvals(A)
    return apply(_svdvals, (A,), {})


LINALG = dict(qr=qr, eigh=eigh, eigvalsh=eigvalsh, svd=svd, svdvals=svdvals)
