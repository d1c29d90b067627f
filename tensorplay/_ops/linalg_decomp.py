"""tensorplay.linalg, part 1: inv, solve, det, slogdet, cholesky, pinv, lstsq,
matrix_power, multi_dot (eigh, qr, svd, svdvals: ``linalg_spectral.py``).

Forward: LAPACK through ``numpy.linalg`` (batched gufuncs; nobody hand-writes a
factorisation), with the BLAS pinned to one thread as ``matmul``'s numpy path
is (one thread budget, DESIGN.md fixed point 6).  Each factorisation is one
registered primitive whose VJP and JVP are the published matrix-derivative
formulas -- Giles 2008, "An extended collection of matrix derivative results
for forward and reverse mode AD"; Murray 2016 for the Cholesky factor; Golub &
Pereyra 1973 for the pseudo-inverse -- as PyTorch's FunctionsManual.cpp writes
them, here in tensorplay ops (``matmul``, ``inv``, ``solve``, ...), so every
rule is differentiable again and second order works.

Primitives with several outputs (slogdet's sign and log|det|, qr, eigh, svd)
return them packed into one array, flattened along a last dim, and the public
function unpacks them with views (``_unpack``): the registry has one output per
primitive.  The rules unpack the cotangent the same way and pack tangents with
``getitem_backward`` (``_pack``).

These functions are exported as ``tensorplay.linalg.<name>`` (``LINALG``), not at
the top level.  Errors raise ``tensorplay.linalg.LinAlgError`` (a RuntimeError,
as ``torch.linalg.LinAlgError``) when LAPACK reports a singular or non-positive-
definite input.
"""
from collections import namedtuple

import numpy as np

from tensorplay._kernels import linalg as _kl
from tensorplay._ops._validate import Signature, TensorArg, declare
from tensorplay._ops.linalg import matmul
from tensorplay._ops.registry import apply, defop, tangent_sum
from tensorplay._ops import _batching as _B
from tensorplay._ops.shape import check_index, getitem_backward
from tensorplay._tensor import Tensor

__all__ = []
LINALG = {}


class LinAlgError(RuntimeError):
    """LAPACK could not complete: a singular matrix (inv, solve), a matrix that is
    not positive-definite (cholesky), no convergence (eigh, svd).  A RuntimeError,
    as ``torch.linalg.LinAlgError``."""


def _np_linalg(op, fn, *args, **kw):
    """``fn(*args, **kw)`` (a numpy.linalg function) with the BLAS pinned to one
    thread; numpy's LinAlgError becomes ours, naming the op."""
    _kl.pin()
    try:
        with np.errstate(all="ignore"):
            return fn(*args, **kw)
    except np.linalg.LinAlgError as e:
        raise LinAlgError(f"{op}: {e}") from None
    finally:
        _kl.unpin()


# ---------------------------------------------------------------- helpers (tensorplay ops)
def _const(a):
    return Tensor._wrap(np.asarray(a))


def _eye(n, dtype):
    return _const(np.eye(n, dtype=dtype))


def _diag_embed(v):
    """(..., n) -> (..., n, n) with v on the diagonal (mul by a constant eye)."""
    return v.unsqueeze(-1) * _eye(v._data.shape[-1], v._data.dtype)


def _diagonal(x):
    """(..., n, n) -> (..., n), the diagonal: every (n+1)-th entry of the flattened
    matrix (reshape and a strided getitem: differentiable, O(n) past the reshape)."""
    n = x._data.shape[-1]
    return x.reshape(tuple(x._data.shape[:-2]) + (n * n,))[..., ::n + 1]


def _trace(x):
    return _diagonal(x).sum(dim=-1)


def _tril(x, k=0):
    """Lower triangle (mul by a constant 0/1 mask)."""
    n, m = x._data.shape[-2:]
    return x * _const(np.tri(n, m, k, dtype=x._data.dtype))


def _bcast(x, nd):
    """Add trailing unit dims so a batch-shaped tensor broadcasts against matrices."""
    for _ in range(nd):
        x = x.unsqueeze(-1)
    return x


def _offsets(shapes):
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    ends = np.cumsum([0] + sizes)
    return list(zip(ends[:-1].tolist(), ends[1:].tolist())), int(ends[-1])


def _pack_np(parts, batch):
    """Outputs of one batch shape flattened into one array (..., total)."""
    nb = len(batch)
    return np.concatenate([np.asarray(p).reshape(batch + (int(np.prod(np.shape(p)[nb:],
                                                                       dtype=np.int64)),))
                           for p in parts], axis=-1)


def _unpack(t, batch, shapes):
    """The parts of a packed tensor, as views reshaped to ``batch + shape``."""
    offs, _ = _offsets(shapes)
    lead = (slice(None),) * len(batch)
    return [t[lead + (slice(a, b),)].reshape(tuple(batch) + tuple(s))
            for (a, b), s in zip(offs, shapes)]


def _pack(parts, batch, shapes):
    """The packed tensor of ``parts`` (None: zeros) in tensorplay ops
    (``getitem_backward`` scatters each part into its slot)."""
    offs, total = _offsets(shapes)
    full = tuple(batch) + (total,)
    lead = (slice(None),) * len(batch)
    acc = None
    for p, (a, b), s in zip(parts, offs, shapes):
        if p is None:
            continue
        want = tuple(batch) + tuple(s)
        if p.shape != want:
            p = p.expand(want)
        piece = getitem_backward(p.reshape(tuple(batch) + (b - a,)), full,
                                 check_index(lead + (slice(a, b),), full))
        acc = piece if acc is None else acc + piece
    return acc


def _nonzero(t):
    """False when the cotangent ``t`` is exactly zero and nothing differentiates
    through it (no grad, no tangent): then the terms it feeds can be skipped, as
    PyTorch skips an undefined gradient.  (A zero cotangent that requires grad --
    the double-backward trick of ``functional.jvp`` -- keeps its terms.)"""
    return t is not None and (t._requires_grad or t._tangent is not None
                              or bool(np.any(t._data)))


def _square(op, A):
    m, n = A._data.shape[-2:]
    if m != n:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{m} by {n} matrices")


def _float_checker(op, *names, min_ndims=None):
    min_ndims = min_ndims or (2,) * len(names)
    msg = "expected a floating point tensor (float32 or float64)"
    params = [TensorArg(n, "f", min_ndim=k, exc=RuntimeError, message=msg)
              for n, k in zip(names, min_ndims)]
    return declare(Signature(op, *params, same_dtype=names if len(names) > 1 else (),
                             public=op))


# ---------------------------------------------------------------- inv
# X = A^-1:  dX = -X dA X;  gA = -X^T g X^T  (Giles 2008, 2.2.3)
_inv = defop("linalg_inv", lambda a: _np_linalg("linalg.inv", np.linalg.inv, a),
             vjp=(lambda g, out, a: -matmul(matmul(out.mT, g), out.mT),),
             jvp=lambda ts, out, a: -matmul(matmul(out, ts[0]), out),
             saves=("out",), batch=_B.leading_rule)
_check_inv = _float_checker("linalg.inv", "A")


def inv(A):
    """Inverse of a square matrix or a batch of them, (*, n, n) -> (*, n, n).

    Derivatives (Giles 2008): ``dX = -X dA X``, ``gA = -X^T g X^T``.

    Raises:
        TypeError: a non-Tensor.
        RuntimeError: an integer/bool tensor, fewer than 2 dims, non-square
            matrices; ``LinAlgError`` (a RuntimeError) for a singular matrix.
    """
    (A,) = _check_inv(A)
    _square("linalg.inv", A)
    return apply(_inv, (A,), {})


# ---------------------------------------------------------------- solve
def _solve_fwd(a, b):
    return _np_linalg("linalg.solve", np.linalg.solve, a, b)


# Both VJPs need gB = A^-T g; the engine asks for them one after the other with
# the same g, so the second reuses the first's solve (one LAPACK call, not two:
# measured 2.1x torch for solve's forward+backward at 200x200 before).  The entry
# is dropped by whichever rule uses it, or replaced by the next solve backward.
_GB = [None]


def _solve_gb(g, a, other):
    """A^-T g, shared by the two rules; kept only when the ``other`` input may ask."""
    hit = _GB[0]
    if hit is not None and hit[0] is g and hit[1] is a:
        _GB[0] = None
        return hit[2]
    gb = _solve(a.mT, g)
    _GB[0] = (g, a, gb) if other._requires_grad else None
    return gb


def _solve_vjp_b(g, out, a, b):
    return _solve_gb(g, a, a)                                # gB = A^-T g


def _solve_vjp_a(g, out, a, b):
    return -matmul(_solve_gb(g, a, b), out.mT)               # gA = -gB X^T


# A X = B:  dX = A^-1 (dB - dA X)  (Giles 2008, 2.3.1)
_solve_p = defop("linalg_solve", _solve_fwd, vjp=(_solve_vjp_a, _solve_vjp_b),
                 jvp=lambda ts, out, a, b: _solve(a, tangent_sum(
                     ts[1], None if ts[0] is None else -matmul(ts[0], out))),
                 saves=("inputs", "out"))


def _solve(a, b):
    """The primitive on (*, n, n) and (*, n, k) (batch dims broadcast)."""
    return apply(_solve_p, (a, b), {})


_check_solve = _float_checker("linalg.solve", "A", "B", min_ndims=(2, 1))


def solve(A, B, *, left=True):
    """The solution X of ``A X = B`` (``left=False``: ``X A = B``).

    A (*, n, n); B (*, n, k) -- or a vector case (n,) or (*, n) when B has one dim
    fewer than A and its shape is A's batch shape plus n, as PyTorch -- with batch
    dims broadcasting.  Derivatives (Giles 2008): ``dX = A^-1 (dB - dA X)``,
    ``gB = A^-T g``, ``gA = -gB X^T``.

    Raises:
        TypeError: a non-Tensor.
        RuntimeError: integer/bool tensors, different dtypes, non-square A, sizes
            that do not match, batch dims that do not broadcast;
            ``LinAlgError`` for a singular A.
    """
    A, B = _check_solve(A, B)
    _square("linalg.solve", A)
    if not isinstance(left, (bool, np.bool_)):
        raise TypeError(f"linalg.solve(): argument 'left' must be bool, not "
                        f"{type(left).__name__}")
    sa, sb = A._data.shape, B._data.shape
    vector = B._data.ndim == 1 or (B._data.ndim == A._data.ndim - 1 and sb == sa[:-1])
    if not left:
        if vector:
            raise RuntimeError("linalg.solve(): vector B is not supported with left=False")
        return solve(A.mT, B.mT).mT
    n = sa[-1]
    if (sb[-1] if vector else sb[-2]) != n:
        raise RuntimeError(f"linalg.solve(): incompatible shapes of A and B for the "
                           f"equation AX = B ({sa[-2]}x{sa[-1]} and "
                           f"{'x'.join(map(str, sb[-1:] if vector else sb[-2:]))})")
    try:
        np.broadcast_shapes(sa[:-2], sb[:-1] if vector else sb[:-2])
    except ValueError:
        raise RuntimeError(f"linalg.solve(): the batch dims of A {list(sa)} and B "
                           f"{list(sb)} do not broadcast") from None
    if vector:
        return _solve(A, B.unsqueeze(-1)).squeeze(-1)
    return _solve(A, B)


# ---------------------------------------------------------------- det, slogdet
# d det = det tr(A^-1 dA);  g_A = g det A^-T  (Giles 2008, 2.2.4)
_det = defop("linalg_det", lambda a: np.asarray(_np_linalg("linalg.det", np.linalg.det, a)),
             vjp=(lambda g, out, a: _bcast(g * out, 2) * inv(a).mT,),
             jvp=lambda ts, out, a: out * _trace(_solve(a, ts[0])),
             saves=("inputs", "out"), batch=_B.leading_rule)
_check_det = _float_checker("linalg.det", "A")


def det(A):
    """Determinant, (*, n, n) -> (*); 1 for 0x0 matrices.

    Derivatives (Giles 2008): ``d det = det tr(A^-1 dA)``, ``gA = g det A^-T``.
    At a singular A the rules need ``A^-1``: the gradient raises LinAlgError when
    LAPACK finds A exactly singular and is rounding noise near it.  PyTorch
    switches to an SVD-based adjugate there; tensorplay does not (a departure).

    Raises:
        TypeError, RuntimeError: as ``inv``.
    """
    (A,) = _check_det(A)
    _square("linalg.det", A)
    return apply(_det, (A,), {})


def _slogdet_fwd(a):
    sign, logabs = _np_linalg("linalg.slogdet", np.linalg.slogdet, a)
    return np.stack([np.asarray(sign, a.dtype), np.asarray(logabs, a.dtype)], axis=-1)


def _slogdet_logabs_t(ts, out, a):
    # d log|det A| = tr(A^-1 dA); the sign is piecewise constant
    t = _trace(_solve(a, ts[0]))
    return _pack([None, t], a.shape[:-2], [(), ()])


_slogdet = defop("linalg_slogdet", _slogdet_fwd,
                 vjp=(lambda g, out, a: _bcast(g[..., 1], 2) * inv(a).mT,),
                 jvp=_slogdet_logabs_t, saves=("inputs",), batch=_B.leading_rule)
_check_slogdet = _float_checker("linalg.slogdet", "A")
SlogdetResult = namedtuple("linalg_slogdet", ["sign", "logabsdet"])


@_B.loop_under_vmap
def slogdet(A):
    """Sign and log of the absolute value of the determinant: a named tuple
    ``(sign, logabsdet)``, both of shape (*).  ``sign`` is -1, 0 or 1 and carries
    no gradient; ``logabsdet`` is -inf for a singular matrix.

    Derivatives (Giles 2008): ``d logabsdet = tr(A^-1 dA)``, ``gA = g A^-T``
    (at a singular A: as ``det``).

    Raises:
        TypeError, RuntimeError: as ``inv``.
    """
    (A,) = _check_slogdet(A)
    _square("linalg.slogdet", A)
    out = apply(_slogdet, (A,), {})
    sign = Tensor._wrap(np.array(out._data[..., 0]))      # (ascontiguousarray makes 0-d 1-d)
    return SlogdetResult(sign, out[..., 1])


# ---------------------------------------------------------------- cholesky
def _phi(x):
    """Lower triangle with the diagonal halved (Murray 2016's Phi)."""
    return _tril(x, -1) + _diag_embed(_diagonal(x) * 0.5)


def _cholesky_vjp(g, L, a):
    # Murray 2016, "Differentiation of the Cholesky decomposition", eq. 10; PyTorch
    # cholesky_backward: gA = sym(L^-T Phi(L^T gL) L^-1)
    Linv = inv(L)
    s = matmul(matmul(Linv.mT, _phi(matmul(L.mT, g))), Linv)
    return (s + s.mT) * 0.5


def _cholesky_jvp(ts, L, a):
    # dL = L Phi(L^-1 dA L^-T)
    Linv = inv(L)
    return matmul(L, _phi(matmul(matmul(Linv, ts[0]), Linv.mT)))


_cholesky = defop("linalg_cholesky",
                  lambda a: _np_linalg("linalg.cholesky", np.linalg.cholesky, a),
                  vjp=(_cholesky_vjp,), jvp=_cholesky_jvp, saves=("out",), batch=_B.leading_rule)
_check_cholesky = _float_checker("linalg.cholesky", "A")


def cholesky(A, *, upper=False):
    """Cholesky factor of a symmetric positive-definite matrix: lower L with
    ``A = L L^T`` (``upper=True``: ``U = L^T``, ``A = U^T U``).  (*, n, n).

    Only the lower triangle of A is read (LAPACK potrf), as PyTorch; the gradient
    is symmetrised, so it is the gradient with respect to a symmetric A.
    Derivatives (Murray 2016; PyTorch's cholesky_backward/jvp):
    ``dL = L Phi(L^-1 dA L^-T)``, ``gA = sym(L^-T Phi(L^T gL) L^-1)``, Phi = lower
    triangle with the diagonal halved.

    Raises:
        TypeError, RuntimeError: as ``inv``; ``LinAlgError`` when A is not
            positive-definite.
    """
    (A,) = _check_cholesky(A)
    _square("linalg.cholesky", A)
    if not isinstance(upper, (bool, np.bool_)):
        raise TypeError(f"linalg.cholesky(): argument 'upper' must be bool, not "
                        f"{type(upper).__name__}")
    L = apply(_cholesky, (A,), {})
    return L.mT if upper else L


# ---------------------------------------------------------------- pinv
def _pinv_fwd(a, rtol, atol, hermitian):
    """The pseudo-inverse by SVD (eigh when hermitian), singular values at or below
    max(atol, rtol * s_max) dropped (PyTorch's rule)."""
    m, n = a.shape[-2:]
    if a.size == 0:
        return np.zeros(a.shape[:-2] + (n, m), a.dtype)
    if hermitian:
        w, v = _np_linalg("linalg.pinv", np.linalg.eigh, a)
        s = np.abs(w)
        u, vh = v * np.sign(w)[..., None, :], np.swapaxes(v, -1, -2)
    else:
        u, s, vh = _np_linalg("linalg.pinv", np.linalg.svd, a, full_matrices=False)
    cut = np.maximum(atol, rtol * s.max(axis=-1, keepdims=True))
    with np.errstate(divide="ignore"):
        sinv = np.where(s > cut, 1.0 / s, 0.0).astype(a.dtype)
    return np.matmul(np.swapaxes(vh, -1, -2) * sinv[..., None, :], np.swapaxes(u, -1, -2))


def _pinv_dX(X, A, dA):
    """Golub & Pereyra 1973: dX = -X dA X + X X^T dA^T (I - A X) + (I - X A) dA^T X^T X."""
    AX, XA = matmul(A, X), matmul(X, A)
    Im, In = _eye(A.shape[-2], A._data.dtype), _eye(A.shape[-1], A._data.dtype)
    return (-matmul(matmul(X, dA), X)
            + matmul(matmul(matmul(X, X.mT), dA.mT), Im - AX)
            + matmul(matmul(In - XA, dA.mT), matmul(X.mT, X)))


def _pinv_gA(X, A, g):
    """The adjoint of ``_pinv_dX``: -X^T g X^T + (I - A X) g^T X X^T + X^T X g^T (I - X A)."""
    AX, XA = matmul(A, X), matmul(X, A)
    Im, In = _eye(A.shape[-2], A._data.dtype), _eye(A.shape[-1], A._data.dtype)
    return (-matmul(matmul(X.mT, g), X.mT)
            + matmul(matmul(Im - AX, g.mT), matmul(X, X.mT))
            + matmul(matmul(matmul(X.mT, X), g.mT), In - XA))


_pinv = defop("linalg_pinv", _pinv_fwd,
              vjp=(lambda g, out, a, **kw: _pinv_gA(out, a, g),),
              jvp=lambda ts, out, a, **kw: _pinv_dX(out, a, ts[0]),
              saves=("inputs", "out"), batch=_B.leading_rule)
_check_pinv = _float_checker("linalg.pinv", "A")


def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """Moore-Penrose pseudo-inverse, (*, m, n) -> (*, n, m).

    Singular values at or below ``max(atol, rtol * s_max)`` are treated as zero;
    defaults as PyTorch: ``atol=0`` and ``rtol = eps * max(m, n)`` when both are
    None, else ``rtol=0`` when only ``atol`` is given.  ``hermitian=True`` uses
    eigh (A must be symmetric).

    Derivatives (Golub & Pereyra 1973; PyTorch's pinv_backward):
    ``dX = -X dA X + X X^T dA^T (I - A X) + (I - X A) dA^T X^T X``: the derivative
    at a point where the rank is locally constant.  Where the rank changes the
    pseudo-inverse is discontinuous and the formula gives the derivative of the
    rank-r branch.

    Raises:
        TypeError: a non-Tensor or non-number tolerances.
        RuntimeError: integer/bool tensors, fewer than 2 dims.
    """
    (A,) = _check_pinv(A)
    for name, v in (("atol", atol), ("rtol", rtol)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise TypeError(f"linalg.pinv(): argument '{name}' must be a float or None, "
                            f"not {type(v).__name__}")
    if not isinstance(hermitian, (bool, np.bool_)):
        raise TypeError("linalg.pinv(): argument 'hermitian' must be bool")
    m, n = A._data.shape[-2:]
    if rtol is None:
        rtol = float(np.finfo(A._data.dtype).eps) * max(m, n) if atol is None else 0.0
    if hermitian:
        _square("linalg.pinv", A)
    return apply(_pinv, (A,), {"rtol": float(rtol), "atol": float(atol or 0.0),
                               "hermitian": bool(hermitian)})


# ---------------------------------------------------------------- lstsq
def _lstsq_fwd(a, b, rcond):
    """Minimum-norm least-squares solutions (LAPACK gelsd through numpy.linalg.lstsq),
    one batch entry at a time (numpy's lstsq is not batched); batch dims broadcast."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    out = np.empty(batch + (a.shape[-1], b.shape[-1]), np.result_type(a, b))
    for i in np.ndindex(*batch):
        if a.shape[-2] == 0 or a.shape[-1] == 0:
            out[i] = 0
            continue
        out[i] = _np_linalg("linalg.lstsq", np.linalg.lstsq, a[i], b[i], rcond=rcond)[0]
    return out


def _lstsq_vjp_a(g, out, a, b, rcond):
    X = pinv(a, rtol=rcond)                     # solution = A^+ B
    return _pinv_gA(X, a, matmul(g, b.mT))


def _lstsq_vjp_b(g, out, a, b, rcond):
    return matmul(pinv(a, rtol=rcond).mT, g)


def _lstsq_jvp(ts, out, a, b, rcond):
    X = pinv(a, rtol=rcond)
    return tangent_sum(None if ts[0] is None else matmul(_pinv_dX(X, a, ts[0]), b),
                       None if ts[1] is None else matmul(X, ts[1]))


# X = A^+ B: the derivatives are those of the pseudo-inverse (Golub & Pereyra 1973)
_lstsq = defop("linalg_lstsq", _lstsq_fwd, vjp=(_lstsq_vjp_a, _lstsq_vjp_b),
               jvp=_lstsq_jvp, saves=("inputs",))
_check_lstsq = _float_checker("linalg.lstsq", "A", "B", min_ndims=(2, 1))
LstsqResult = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@_B.loop_under_vmap
def lstsq(A, B, rcond=None, *, driver=None):
    """Least-squares solution of ``A X = B``: a named tuple ``(solution, residuals,
    rank, singular_values)`` as ``torch.linalg.lstsq``.

    A (*, m, n), B (*, m, k) or (*, m) (a vector: B has one dim fewer than A),
    batch dims broadcasting.  The solution is always the minimum-norm solution
    (LAPACK gelsd, through numpy), whatever ``driver`` names; ``driver`` only
    decides, as in PyTorch, which extra outputs are filled: ``rank`` for
    'gelsy' (the CPU default), 'gelsd', 'gelss'; ``singular_values`` for
    'gelsd', 'gelss'; ``residuals`` (squared column norms of A X - B, shape
    (*, k)) for drivers other than 'gelsy' when m > n and every A has full rank;
    each is empty otherwise.
    ``rcond`` (default ``eps * max(m, n)``): singular values below
    ``rcond * s_max`` count as zero.

    Derivatives: those of ``X = A^+ B`` (Golub & Pereyra 1973, as ``pinv``);
    PyTorch differentiates only full-rank problems, where both agree.

    Raises:
        TypeError: non-Tensors.
        RuntimeError: integer/bool tensors, different dtypes, rows of A and B that
            differ, an unknown driver.
    """
    A, B = _check_lstsq(A, B)
    if driver is not None and driver not in _DRIVERS:
        raise RuntimeError(f"linalg.lstsq(): parameter `driver` should be one of "
                           f"{_DRIVERS}, got {driver!r}")
    driver = driver or "gelsy"
    vector = B._data.ndim == A._data.ndim - 1
    Bm = B.unsqueeze(-1) if vector else B
    m, n = A._data.shape[-2:]
    if Bm._data.shape[-2] != m:
        raise RuntimeError(f"linalg.lstsq(): A and B must have the same number of rows, "
                           f"got {m} and {Bm._data.shape[-2]}")
    try:
        np.broadcast_shapes(A._data.shape[:-2], Bm._data.shape[:-2])
    except ValueError:
        raise RuntimeError("linalg.lstsq(): the batch dims of A and B do not broadcast") \
            from None
    if rcond is None:
        rcond = float(np.finfo(A._data.dtype).eps) * max(m, n)
    X = apply(_lstsq, (A, Bm), {"rcond": float(rcond)})
    dt = A._data.dtype
    s = _np_linalg("linalg.lstsq", np.linalg.svd, A._data, compute_uv=False) \
        if A._data.size else np.zeros(A._data.shape[:-2] + (0,), dt)
    cut = rcond * (s.max(axis=-1, keepdims=True) if s.shape[-1] else 0)
    rank = np.asarray((s > cut).sum(axis=-1), np.int64)
    empty = Tensor._wrap(np.zeros((0,), dt))
    if driver != "gelsy" and m > n and np.all(rank == n):
        residuals = ((matmul(A, X) - Bm) ** 2).sum(dim=-2)
    else:
        residuals = empty
    rank_t = Tensor._wrap(rank) if driver != "gels" else Tensor._wrap(np.zeros((0,), np.int64))
    sv = Tensor._wrap(s) if driver in ("gelsd", "gelss") else empty
    return LstsqResult(X.squeeze(-1) if vector else X,
                       residuals.squeeze(-1) if vector and residuals.ndim else residuals,
                       rank_t, sv)


# ---------------------------------------------------------------- compositions
def matrix_power(A, n):
    """``A`` to the integer power ``n`` (n = 0: the identity; n < 0: ``inv(A)**-n``),
    by repeated squaring over ``matmul``: a composition, derivatives for free.

    Raises:
        TypeError: a non-Tensor or non-int ``n``.
        RuntimeError: non-square matrices, fewer than 2 dims; a negative ``n`` for
            an integer tensor or a singular A (LinAlgError).
    """
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.matrix_power(): argument 'A' must be Tensor, not "
                        f"{type(A).__name__}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"linalg.matrix_power(): argument 'n' must be int, not "
                        f"{type(n).__name__}")
    if A._data.ndim < 2:
        raise RuntimeError("linalg.matrix_power: the input tensor A must have at least 2 "
                           "dimensions")
    _square("linalg.matrix_power", A)
    if n == 0:
        return _eye(A._data.shape[-1], A._data.dtype).expand(A.shape).clone()
    if n < 0:
        A, n = inv(A), -n
    result, base = None, A
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


def multi_dot(tensors):
    """``tensors[0] @ tensors[1] @ ...`` (at least two); the first may be 1-D (a row
    vector) and the last 1-D (a column vector), the others 2-D.  Multiplied left
    to right (no ordering search): a composition over ``matmul``.

    Raises:
        TypeError: not a sequence of Tensors.
        RuntimeError: fewer than two tensors, wrong dims, sizes that do not chain.
    """
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError("linalg.multi_dot(): expected a list or tuple of tensors")
    if len(tensors) < 2:
        raise RuntimeError(f"linalg.multi_dot(): expected at least 2 tensors but got "
                           f"{len(tensors)}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"linalg.multi_dot(): element {i} is not a Tensor")
        ok = t._data.ndim == 2 or (t._data.ndim == 1 and i in (0, len(tensors) - 1))
        if not ok:
            raise RuntimeError(f"linalg.multi_dot(): tensor {i} must be 2-D"
                               f"{' (or 1-D)' if i in (0, len(tensors) - 1) else ''}, got "
                               f"{t._data.ndim}-D")
    out = tensors[0]
    for t in tensors[1:]:
        out = matmul(out, t)
    return out


LINALG.update(inv=inv, solve=solve, det=det, slogdet=slogdet, cholesky=cholesky,
              pinv=pinv, lstsq=lstsq, matrix_power=matrix_power, multi_dot=multi_dot)
