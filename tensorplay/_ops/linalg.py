"""Matrix products.  The forward is a BLAS GEMM (the one numpy loaded: OpenBLAS
for the PyPI wheels; nobody hand-writes a GEMM, DESIGN.md fixed point 6) run on
tensorplay's own threads with the BLAS pinned to one thread
(``tensorplay/_kernels/linalg.pyx``, ``tensorplay/_blas.py``).  Batch shapes the
kernel does not take (more than one batch dim, broadcast batch dims) go through
``numpy.matmul`` with the same pin.
"""
import numpy as np

from tensorplay import _blas
from tensorplay._kernels import linalg as _kl
from tensorplay._ops._common import CONFIG
from tensorplay._ops._validate import Signature, TensorArg, declare
from tensorplay._pool import empty as pool_empty
from tensorplay._ops.registry import apply, defop, tangent_sum
from tensorplay._ops import _batching as _B

__all__ = ["matmul"]


# The VJPs, case by case (1-D operands are promoted to matrices and the added
# dim removed again, numpy/PyTorch semantics).  Batch dims that broadcasting
# added are summed away by the registry's sum_to_shape.
def _matmul_vjp_a(g, out, a, b):
    if a.ndim == 1 and b.ndim == 1:          # dot: g is 0-d
        return g * b
    if b.ndim == 1:                          # (..., m, k) @ (k,) -> (..., m)
        return g.unsqueeze(-1) * b
    if a.ndim == 1:                          # (k,) @ (..., k, n) -> (..., n)
        return matmul(b, g.unsqueeze(-1)).squeeze(-1)
    return matmul(g, b.mT)                   # (..., m, n) @ (..., k, n)^T


def _matmul_vjp_b(g, out, a, b):
    if a.ndim == 1 and b.ndim == 1:
        return g * a
    if b.ndim == 1:                          # sum over m of a[..., m, k] g[..., m]
        return matmul(a.mT, g.unsqueeze(-1)).squeeze(-1)
    if a.ndim == 1:                          # outer product a g^T
        return a.unsqueeze(-1) * g.unsqueeze(-2)
    return matmul(a.mT, g)


def _gemm(a3, b3, out3):
    """out3 := a3 @ b3 (3-D arrays) on tensorplay's threads; copies a layout BLAS
    cannot take (a non-unit stride in both matrix dims) once."""
    nt = CONFIG.num_threads
    if not _kl.gemm(a3, b3, out3, nt):
        _kl.gemm(np.ascontiguousarray(a3), np.ascontiguousarray(b3), out3, nt)


def _matmul_forward(a, b):
    """numpy.matmul's semantics (1-D promotion, batch broadcasting) over ``_gemm``."""
    if not _blas.load() or a.dtype.kind != "f":
        _kl.pin()
        try:
            return np.asarray(np.matmul(a, b))
        finally:
            _kl.unpin()
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    if a_vec:
        a = a[None, :]
    if b_vec:
        b = b[:, None]
    m, n = a.shape[-2], b.shape[-1]
    if a.ndim == 2 and b.ndim == 2:
        out = pool_empty((m, n), a.dtype)
        _gemm(a[None], b[None], out[None])
    elif a.ndim == 3 and b.ndim == 2 and a.flags.c_contiguous and a.size and n:
        out = pool_empty((a.shape[0], m, n), a.dtype)        # (B, m, k) @ (k, n): one GEMM
        _gemm(a.reshape(1, -1, a.shape[2]), b[None], out.reshape(1, -1, n))
    elif a.ndim <= 3 and b.ndim <= 3:
        a3 = a if a.ndim == 3 else a[None]
        b3 = b if b.ndim == 3 else b[None]
        nb = a3.shape[0] if b3.shape[0] == 1 else b3.shape[0]     # broadcast, 0 included
        if a3.shape[0] not in (1, nb) or b3.shape[0] not in (1, nb):
            raise AssertionError("matmul: batch shapes were checked by the caller")
        out = pool_empty((nb, m, n), a.dtype)
        _gemm(a3, b3, out)
    else:                                   # several batch dims: numpy, BLAS pinned
        _kl.pin()
        try:
            out = np.asarray(np.matmul(a, b))
        finally:
            _kl.unpin()
    if b_vec:
        out = out[..., 0]
    if a_vec:
        out = out[..., 0, :] if not b_vec else out[..., 0]
    return out


# d(a @ b) = da @ b + a @ db
_matmul = defop("matmul", _matmul_forward,
                vjp=(_matmul_vjp_a, _matmul_vjp_b),
                jvp=lambda ts, out, a, b: tangent_sum(
                    None if ts[0] is None else matmul(ts[0], b),
                    None if ts[1] is None else matmul(a, ts[1])),
                saves=("inputs",), batch=_B.matmul_rule)


_check_matmul = declare(Signature(
    "matmul", TensorArg("input", "fi", min_ndim=1), TensorArg("other", "fi", min_ndim=1),
    same_dtype=("input", "other")))


def matmul(input, other):
    """Matrix product with numpy/PyTorch semantics.

    1-D @ 1-D is a dot product (0-d result); 2-D @ 1-D a matrix-vector product;
    1-D @ 2-D a vector-matrix product; 2-D @ 2-D a matrix product; N-D operands are
    batches of matrices whose batch dims broadcast, e.g. (j, 1, n, m) @ (k, m, p)
    -> (j, k, n, p).  float32, float64 and integer operands of one dtype.

    Raises:
        TypeError: a non-Tensor operand.
        NotImplementedError: bool operands (as PyTorch).
        RuntimeError: a 0-d operand, different dtypes (as PyTorch; cast first),
            mismatched inner sizes, or batch dims that do not broadcast.
    """
    a, b = _check_matmul(input, other)
    sa, sb = a._data.shape, b._data.shape
    k_a = sa[-1]
    k_b = sb[0] if len(sb) == 1 else sb[-2]
    if k_a != k_b:
        raise RuntimeError(f"matmul(): shapes {list(sa)} and {list(sb)} cannot be "
                           f"multiplied ({k_a} != {k_b})")
    if len(sa) > 2 or len(sb) > 2:
        try:
            np.broadcast_shapes(sa[:-2], sb[:-2])
        except ValueError:
            raise RuntimeError(f"matmul(): batch dims of shapes {list(sa)} and {list(sb)} "
                               f"do not broadcast") from None
    return apply(_matmul, (a, b), {})
