"""Norms: ``norm`` (``torch.norm``) and ``linalg.vector_norm`` /
``linalg.matrix_norm`` (exported through ``LINALG``), as compositions of
registered primitives (sum, mul, sqrt, pow, amax/amin, relu, where), so their
derivatives of every order come from those primitives' rules.

Conventions at the kinks (issue 7): the norm of a zero vector has gradient 0
(the minimum-norm subgradient; PyTorch's documented rule); ``|x|`` has
subgradient 0 at 0; ``ord=inf`` / ``-inf`` split the gradient evenly among the
entries tied at the extreme |x| (``amax``'s rule).  ``ord=0`` counts nonzeros and
has no gradient.  Matrix ``ord=2``, ``-2`` and ``'nuc'`` are the largest, smallest and summed
singular values (``tensorplay.linalg.svdvals``, whose gradient is U diag(g) V^T).
"""
import math
import numbers

import numpy as np

from tensorplay._ops._common import normalize_dims
from tensorplay._ops._validate import Signature, TensorArg, declare
from tensorplay._ops.elementwise import relu, sqrt, where
from tensorplay._ops.reduce import sum as _sum
from tensorplay._ops.reduce_extrema import amax, amin
from tensorplay._tensor import Tensor

__all__ = ["norm"]
METHODS = ["norm"]

_MSG = "norms need a floating point tensor"
_check_norm = declare(Signature("norm", TensorArg("input", "f", exc=RuntimeError,
                                                  message=_MSG)))
# vector_norm/matrix_norm check their tensor argument the same way; their
# Signatures name ``norm`` as the public function (the fuzzer calls an op of the
# tensorplay._ops namespace, and linalg functions are not in it)
_check_vector_norm = declare(Signature("vector_norm", TensorArg(
    "x", "f", exc=RuntimeError, message=_MSG), public="norm"))
_check_matrix_norm = declare(Signature("matrix_norm", TensorArg(
    "A", "f", exc=RuntimeError, message=_MSG), public="norm"))


def _abs(x):
    """|x| with subgradient 0 at 0 (tensorplay.abs where the unary family has it)."""
    import tensorplay
    f = getattr(tensorplay, "abs", None)
    return f(x) if f is not None else relu(x) + relu(-x)


def _flag(op, keepdim):
    if not isinstance(keepdim, (bool, np.bool_)):
        raise TypeError(f"{op}(): argument 'keepdim' must be bool, not "
                        f"{type(keepdim).__name__}")
    return bool(keepdim)


def _vector(x, ord, dims, keepdim):
    if ord == 2:
        # sqrt's derivative at 0 is inf, and mul_backward(inf, x = 0) = 0 (strong
        # zero): the zero vector gets gradient 0
        return sqrt(_sum(x * x, dims, keepdim))
    if ord == 1:
        return _sum(_abs(x), dims, keepdim)
    if ord == math.inf:
        return amax(_abs(x), dims, keepdim)
    if ord == -math.inf:
        return amin(_abs(x), dims, keepdim)
    if ord == 0:
        return Tensor._wrap(np.asarray(
            np.count_nonzero(x._data, axis=dims, keepdims=keepdim)).astype(x._data.dtype))
    s = _sum(_abs(x) ** ord, dims, keepdim)
    if ord > 0:
        # the zero vector: the selected branch is the constant 0, so the power's
        # infinite derivative there receives a zero cotangent (gradient 0)
        return where(s != 0, s ** (1.0 / ord), 0.0)
    return s ** (1.0 / ord)


def _check_ord(op, ord):
    if isinstance(ord, (bool, np.bool_)) or not isinstance(ord, numbers.Real):
        raise TypeError(f"{op}(): argument 'ord' must be a number, not {type(ord).__name__}")
    return float(ord)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """``torch.linalg.vector_norm``: ``(sum |x|^ord)^(1/ord)`` over ``dim`` (an int,
    a tuple, or None: every element, flattened).

    Args:
        x (Tensor): float32 or float64.
        ord (number): 2 (default), 1, inf (max |x|), -inf (min |x|), 0 (the
            number of nonzeros; no gradient) or any other float.
        dim, keepdim: as ``sum``.
        dtype (dtype, optional): cast ``x`` first.

    Returns:
        Tensor.  Gradient 0 for the zero vector; ties at inf/-inf share it evenly.

    Raises:
        TypeError: a non-Tensor x, a non-number ord, bad dim/keepdim types.
        RuntimeError: integer or bool x (as PyTorch), a repeated dim.
        IndexError: a dim out of range.
    """
    if dtype is not None and isinstance(x, Tensor):
        x = x.to(dtype)
    x = _check_vector_norm(x)
    ord = _check_ord("linalg.vector_norm", ord)
    keepdim = _flag("linalg.vector_norm", keepdim)
    dims = normalize_dims(dim, x._data.ndim, "linalg.vector_norm")
    if ord < 0 and any(x._data.shape[d] == 0 for d in dims):
        raise RuntimeError(f"linalg.vector_norm(): cannot compute the {ord} norm of an "
                           f"empty tensor because the operation does not have an identity")
    if ord == -math.inf or ord == math.inf:
        if any(x._data.shape[d] == 0 for d in dims) or (not dims and x._data.size == 0):
            raise RuntimeError(f"linalg.vector_norm(): cannot compute the {ord} norm of an "
                               f"empty tensor because the operation does not have an "
                               f"identity")
    return _vector(x, ord, dims, keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """``torch.linalg.matrix_norm`` over the two dims ``dim`` (rows, columns).

    Args:
        A (Tensor): float32 or float64 with at least 2 dims.
        ord: ``'fro'`` (default), 1 (max column sum of |A|), -1 (min column
            sum), inf (max row sum), -inf (min row sum), 2 / -2 (largest /
            smallest singular value), ``'nuc'`` (sum of singular values).
        dim (tuple of 2 ints): the matrix dims.  keepdim (bool).

    Returns:
        Tensor of A's batch shape; gradients as ``vector_norm``, ties (equal
        column or row sums) sharing the gradient evenly.

    Raises:
        TypeError: bad argument types.  RuntimeError: fewer than 2 dims,
        integer input, repeated dims, an unknown ord, ord -1 / -inf with no
        columns / rows.  IndexError: dims out of range, ord -2 of an empty
        matrix.  (ord 1, inf, 2 of an empty matrix are 0, as PyTorch.)
    """
    if dtype is not None and isinstance(A, Tensor):
        A = A.to(dtype)
    A = _check_matrix_norm(A)
    op = "linalg.matrix_norm"
    keepdim = _flag(op, keepdim)
    nd = A._data.ndim
    if nd < 2:
        raise RuntimeError(f"{op}(): The input tensor A must have at least 2 dimensions.")
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise RuntimeError(f"{op}(): dim must be a 2-tuple of ints, got {dim!r}")
    d0, d1 = normalize_dims(dim[0], nd, op)[0], normalize_dims(dim[1], nd, op)[0]
    if d0 == d1:
        raise RuntimeError(f"{op}(): dims must be different, got {list(dim)}")
    if isinstance(ord, str):
        if ord == "fro":
            return _vector(A, 2.0, tuple(sorted((d0, d1))), keepdim)
        if ord == "nuc":
            return _spectral(A, d0, d1, keepdim, lambda s: _sum(s, (-1,), False))
        raise RuntimeError(f"{op}(): order {ord!r} not supported")
    if isinstance(ord, (bool, np.bool_)) or not isinstance(ord, numbers.Real):
        raise TypeError(f"{op}(): argument 'ord' must be a number or a string, not "
                        f"{type(ord).__name__}")
    if ord not in (1, -1, 2, -2, math.inf, -math.inf):
        raise RuntimeError(f"{op}(): order {ord} not supported")
    # ord 1 / -1: sums over rows (d0), extreme over columns; inf / -inf: the reverse
    inner, outer = (d0, d1) if abs(ord) == 1 else (d1, d0)
    if ord > 0 and A._data.shape[d0] * A._data.shape[d1] == 0:
        # an empty matrix: the largest of no (or only zero) sums / singular
        # values is 0 (PyTorch, numpy.linalg.norm); the sum keeps the graph
        return _sum(_abs(A), tuple(sorted((d0, d1))), keepdim)
    if ord in (2, -2):
        return _spectral(A, d0, d1, keepdim,
                         lambda s: (amax if ord > 0 else amin)(s, (-1,), False))
    if A._data.shape[outer] == 0:
        raise RuntimeError(f"{op}(): cannot compute the {ord} norm of a matrix with no "
                           f"{'columns' if abs(ord) == 1 else 'rows'} (no identity)")
    s = _sum(_abs(A), (inner,), True)
    out = (amax if ord > 0 else amin)(s, (outer,), True)
    if not keepdim:
        out = out.squeeze((d0, d1))
    return out


def _spectral(A, d0, d1, keepdim, reduce):
    """``reduce`` over the singular values of the matrices in dims (d0, d1)."""
    from tensorplay._ops.linalg_spectral import svdvals
    nd = A._data.ndim
    rest = [d for d in range(nd) if d not in (d0, d1)]
    out = reduce(svdvals(A.permute(rest + [d0, d1])))
    if keepdim:
        for d in sorted((d0, d1)):
            out = out.unsqueeze(d)
    return out


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """``torch.norm``: the Frobenius / 2-norm by default, ``vector_norm(input, p,
    dim)`` for a number ``p``, the Frobenius norm over two dims for ``'fro'``.

    Args:
        input (Tensor): float32 or float64.
        p: ``'fro'`` (default), ``'nuc'`` (the nuclear norm of the matrices in
            ``dim``, default the last two) or a number
            (as ``vector_norm``'s ord).
        dim (int or tuple, optional): dims (None: every element).
        keepdim (bool).  dtype (dtype, optional): cast the input first.

    Raises:
        as ``vector_norm``.
    """
    if isinstance(p, str):
        if p == "nuc":
            if dtype is not None and isinstance(input, Tensor):
                input = input.to(dtype)
            return matrix_norm(_check_norm(input), "nuc", (-2, -1) if dim is None else dim,
                               keepdim)
        if p != "fro":
            raise RuntimeError(f"norm(): unknown p {p!r}")
        p = 2
    if dtype is not None and isinstance(input, Tensor):
        input = input.to(dtype)
    input = _check_norm(input)
    return vector_norm(input, p, dim, keepdim)


LINALG = {"vector_norm": vector_norm, "matrix_norm": matrix_norm}
