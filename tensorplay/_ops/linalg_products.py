"""Matrix and tensor products: mm, bmm, mv, dot, vdot, outer/ger, inner, addmm,
addmv, addr, baddbmm, tensordot, kron.

Every one is a composition over registered primitives (``matmul``, ``mul``,
``add``, ``permute``, ``reshape``): no primitive of its own, so its VJP and JVP
-- and every higher order -- come from those primitives' rules.  The forward is
the same BLAS GEMM ``matmul`` runs; the composition adds the shape checks (one
Python function call, ~1 us) and nothing else (docs/DECISIONS.md, "Linear
algebra", has the measurements).  Errors follow PyTorch: RuntimeError naming
the op and the shapes for a wrong number of dims or sizes that do not match.
"""
import numbers

import numpy as np

from tensorplay._ops._validate import Signature, TensorArg, declare
from tensorplay._ops.linalg import matmul

__all__ = ["mm", "bmm", "mv", "dot", "vdot", "outer", "ger", "inner", "addmm", "addmv",
           "addr", "baddbmm", "tensordot", "kron"]
METHODS = ["mm", "bmm", "mv", "dot", "vdot", "outer", "ger", "inner", "addmm", "addmv",
           "addr", "baddbmm", "kron"]


def _shape(t):
    return list(t._data.shape)


def _need_ndim(op, name, t, nd):
    if t._data.ndim != nd:
        what = {1: "a 1-D vector", 2: "a 2-D matrix", 3: "a 3-D batch of matrices"}[nd]
        raise RuntimeError(f"{op}(): argument '{name}' must be {what}, got a "
                           f"{t._data.ndim}-D tensor of shape {_shape(t)}")


def _pair(op, names, kinds="fi", min_ndim=0):
    return declare(Signature(op, TensorArg(names[0], kinds, min_ndim=min_ndim),
                             TensorArg(names[1], kinds, min_ndim=min_ndim),
                             same_dtype=names))


_check_mm = _pair("mm", ("input", "mat2"), min_ndim=2)
_check_bmm = _pair("bmm", ("input", "mat2"), min_ndim=3)
_check_mv = _pair("mv", ("input", "vec"), min_ndim=1)
_check_dot = _pair("dot", ("input", "tensor"), min_ndim=1)
_check_vdot = _pair("vdot", ("input", "other"), min_ndim=1)
_check_inner = _pair("inner", ("input", "other"))
_check_outer = declare(Signature("outer", TensorArg("input", min_ndim=1),
                                 TensorArg("vec2", min_ndim=1), promote=("input", "vec2")))
_check_kron = declare(Signature("kron", TensorArg("input"), TensorArg("other"),
                                promote=("input", "other")))
_check_tensordot = _pair("tensordot", ("a", "b"))


def mm(input, mat2):
    """Matrix product of an (n, m) and an (m, p) matrix: (n, p).

    A composition over ``matmul`` (no broadcasting, unlike matmul).  float32,
    float64 or integer operands of one dtype.

    Raises:
        TypeError: a non-Tensor operand.
        NotImplementedError: bool operands.
        RuntimeError: an operand that is not 2-D, different dtypes, or inner
            sizes that differ ("shapes [2, 3] and [4, 5] cannot be multiplied").
    """
    a, b = _check_mm(input, mat2)
    _need_ndim("mm", "input", a, 2)
    _need_ndim("mm", "mat2", b, 2)
    if a._data.shape[1] != b._data.shape[0]:
        raise RuntimeError(f"mm(): shapes {_shape(a)} and {_shape(b)} cannot be multiplied "
                           f"({a._data.shape[1]} != {b._data.shape[0]})")
    return matmul(a, b)


def bmm(input, mat2):
    """Batched matrix product: (b, n, m) @ (b, m, p) -> (b, n, p), batch sizes equal
    (no broadcasting, as PyTorch).  A composition over ``matmul``.

    Raises:
        TypeError, NotImplementedError: as ``mm``.
        RuntimeError: an operand that is not 3-D, different batch sizes or inner
            sizes, different dtypes.
    """
    a, b = _check_bmm(input, mat2)
    _need_ndim("bmm", "input", a, 3)
    _need_ndim("bmm", "mat2", b, 3)
    sa, sb = a._data.shape, b._data.shape
    if sa[0] != sb[0]:
        raise RuntimeError(f"bmm(): batch1 and batch2 must have the same number of batches, "
                           f"got shapes {list(sa)} and {list(sb)}")
    if sa[2] != sb[1]:
        raise RuntimeError(f"bmm(): shapes {list(sa)} and {list(sb)} cannot be multiplied "
                           f"({sa[2]} != {sb[1]})")
    return matmul(a, b)


def mv(input, vec):
    """Matrix-vector product: (n, m) @ (m,) -> (n,).  A composition over ``matmul``.

    Raises:
        RuntimeError: ``input`` not 2-D, ``vec`` not 1-D, sizes that differ,
            different dtypes.  TypeError / NotImplementedError as ``mm``.
    """
    a, v = _check_mv(input, vec)
    _need_ndim("mv", "input", a, 2)
    _need_ndim("mv", "vec", v, 1)
    if a._data.shape[1] != v._data.shape[0]:
        raise RuntimeError(f"mv(): shapes {_shape(a)} and {_shape(v)} cannot be multiplied "
                           f"({a._data.shape[1]} != {v._data.shape[0]})")
    return matmul(a, v)


def _vectors(op, a, b, names):
    _need_ndim(op, names[0], a, 1)
    _need_ndim(op, names[1], b, 1)
    if a._data.shape[0] != b._data.shape[0]:
        raise RuntimeError(f"{op}(): inconsistent tensor size, expected tensors of the same "
                           f"number of elements, got {a._data.shape[0]} and "
                           f"{b._data.shape[0]}")


def dot(input, tensor):
    """Dot product of two 1-D tensors of one size and dtype: a 0-d tensor.
    A composition over ``matmul``.

    Raises:
        RuntimeError: an operand that is not 1-D, sizes or dtypes that differ.
    """
    a, b = _check_dot(input, tensor)
    _vectors("dot", a, b, ("input", "tensor"))
    return matmul(a, b)


def vdot(input, other):
    """``sum(conj(input) * other)`` of two 1-D tensors; tensorplay has no complex
    dtypes, so this is ``dot``.  Raises as ``dot``."""
    a, b = _check_vdot(input, other)
    _vectors("vdot", a, b, ("input", "other"))
    return matmul(a, b)


def outer(input, vec2):
    """Outer product of two 1-D tensors, (n,) x (m,) -> (n, m): a broadcast ``mul``
    (PyTorch's own definition), so the dtypes promote.

    Raises:
        RuntimeError: an operand that is not 1-D.
    """
    a, b = _check_outer(input, vec2)
    _need_ndim("outer", "input", a, 1)
    _need_ndim("outer", "vec2", b, 1)
    return a.unsqueeze(1) * b


def ger(input, vec2):
    """Alias of ``outer`` (PyTorch's older name)."""
    return outer(input, vec2)


def inner(input, other):
    """Inner product over the last dim: ``out[i..., j...] = sum_k a[i..., k] b[j..., k]``,
    shape ``a.shape[:-1] + b.shape[:-1]``; a 0-d operand multiplies instead.
    A composition over ``tensordot``.

    Raises:
        RuntimeError: last dims of different sizes, different dtypes.
    """
    a, b = _check_inner(input, other)
    if a._data.ndim == 0 or b._data.ndim == 0:
        return a * b
    if a._data.shape[-1] != b._data.shape[-1]:
        raise RuntimeError(f"inner(): inner dimensions differ: shapes {_shape(a)} and "
                           f"{_shape(b)} ({a._data.shape[-1]} != {b._data.shape[-1]})")
    return _tensordot(a, b, [a._data.ndim - 1], [b._data.ndim - 1])


# ---------------------------------------------------------------- add*-products
def _scalars(op, t, beta, alpha):
    for name, v in (("beta", beta), ("alpha", alpha)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"{op}(): argument '{name}' must be a number, not "
                            f"{type(v).__name__}")
        if t._data.dtype.kind != "f" and not isinstance(v, numbers.Integral):
            raise RuntimeError(f"{op}(): for integral input tensors, argument '{name}' "
                               f"must not be a floating point number, got {v!r}")


def _add_scaled(op, input, prod, beta, alpha):
    """``beta * input + alpha * prod``; ``input`` must broadcast to ``prod``'s shape.
    beta == 0 ignores ``input`` (nan and inf in it do not propagate, as PyTorch)."""
    want = prod._data.shape
    try:
        ok = np.broadcast_shapes(input._data.shape, want) == want
    except ValueError:
        ok = False
    if not ok:
        raise RuntimeError(f"{op}(): argument 'input' of shape {_shape(input)} cannot be "
                           f"broadcast to the product's shape {list(want)}")
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod if prod.shape == want else prod.expand(want)
    return prod + (input if beta == 1 else input * beta)


def _add_checker(op, names, min_ndims):
    return declare(Signature(op, *[TensorArg(n, "fi", min_ndim=k)
                                   for n, k in zip(names, min_ndims)], same_dtype=names))


_check_addmm = _add_checker("addmm", ("input", "mat1", "mat2"), (0, 2, 2))
_check_addmv = _add_checker("addmv", ("input", "mat", "vec"), (0, 2, 1))
_check_addr = _add_checker("addr", ("input", "vec1", "vec2"), (0, 1, 1))
_check_baddbmm = _add_checker("baddbmm", ("input", "batch1", "batch2"), (0, 3, 3))


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)``: mat1 (n, m), mat2 (m, p), input
    broadcastable to (n, p).  With ``beta=0`` ``input`` is ignored (its nan and inf
    do not propagate), as PyTorch.  A composition over ``mm``, ``mul``, ``add``.

    Raises:
        RuntimeError: the ``mm`` shape errors (named ``addmm``), an ``input`` that
            does not broadcast to (n, p), different dtypes, a float beta/alpha
            with integer tensors.
        TypeError: a non-Tensor operand or a non-number beta/alpha.
    """
    input, mat1, mat2 = _check_addmm(input, mat1, mat2)
    _scalars("addmm", input, beta, alpha)
    _need_ndim("addmm", "mat1", mat1, 2)
    _need_ndim("addmm", "mat2", mat2, 2)
    if mat1._data.shape[1] != mat2._data.shape[0]:
        raise RuntimeError(f"addmm(): shapes {_shape(mat1)} and {_shape(mat2)} cannot be "
                           f"multiplied ({mat1._data.shape[1]} != {mat2._data.shape[0]})")
    return _add_scaled("addmm", input, matmul(mat1, mat2), beta, alpha)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat @ vec)``: mat (n, m), vec (m,), input
    broadcastable to (n,).  Conventions and errors as ``addmm``."""
    input, mat, vec = _check_addmv(input, mat, vec)
    _scalars("addmv", input, beta, alpha)
    _need_ndim("addmv", "mat", mat, 2)
    _need_ndim("addmv", "vec", vec, 1)
    if mat._data.shape[1] != vec._data.shape[0]:
        raise RuntimeError(f"addmv(): shapes {_shape(mat)} and {_shape(vec)} cannot be "
                           f"multiplied ({mat._data.shape[1]} != {vec._data.shape[0]})")
    return _add_scaled("addmv", input, matmul(mat, vec), beta, alpha)


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """``beta * input + alpha * outer(vec1, vec2)``: vec1 (n,), vec2 (m,), input
    broadcastable to (n, m).  Conventions and errors as ``addmm``."""
    input, vec1, vec2 = _check_addr(input, vec1, vec2)
    _scalars("addr", input, beta, alpha)
    _need_ndim("addr", "vec1", vec1, 1)
    _need_ndim("addr", "vec2", vec2, 1)
    return _add_scaled("addr", input, vec1.unsqueeze(1) * vec2, beta, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * bmm(batch1, batch2)``: batch1 (b, n, m), batch2
    (b, m, p), input broadcastable to (b, n, p).  Conventions and errors as
    ``addmm`` and ``bmm``."""
    input, batch1, batch2 = _check_baddbmm(input, batch1, batch2)
    _scalars("baddbmm", input, beta, alpha)
    _need_ndim("baddbmm", "batch1", batch1, 3)
    _need_ndim("baddbmm", "batch2", batch2, 3)
    sa, sb = batch1._data.shape, batch2._data.shape
    if sa[0] != sb[0] or sa[2] != sb[1]:
        raise RuntimeError(f"baddbmm(): shapes {list(sa)} and {list(sb)} cannot be "
                           f"batch-multiplied")
    return _add_scaled("baddbmm", input, matmul(batch1, batch2), beta, alpha)


# ---------------------------------------------------------------- tensordot, kron
def _tensordot(a, b, da, db):
    """Contract dims ``da`` of ``a`` with ``db`` of ``b`` (checked lists): permute the
    free dims of ``a`` first and the contracted ones of ``b`` first, one matmul."""
    sa, sb = a._data.shape, b._data.shape
    fa = [d for d in range(len(sa)) if d not in da]
    fb = [d for d in range(len(sb)) if d not in db]
    k = int(np.prod([sa[d] for d in da], dtype=np.int64))
    m = int(np.prod([sa[d] for d in fa], dtype=np.int64))
    n = int(np.prod([sb[d] for d in fb], dtype=np.int64))
    a2 = a.permute(*(fa + list(da))).reshape(m, k)
    b2 = b.permute(*(list(db) + fb)).reshape(k, n)
    return matmul(a2, b2).reshape(tuple(sa[d] for d in fa) + tuple(sb[d] for d in fb))


def _dim_list(op, dims, nd, name):
    out = []
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"{op}(): dims must hold ints, got {d!r}")
        if not -nd <= d < nd:
            raise IndexError(f"{op}(): dim {d} of '{name}' out of range for a {nd}-D tensor")
        d = int(d) + nd if d < 0 else int(d)
        if d in out:
            raise RuntimeError(f"{op}(): dim {d} appears multiple times in the dims of "
                               f"'{name}'")
        out.append(d)
    return out


def tensordot(a, b, dims=2):
    """Sum of products over the given dims (``numpy.tensordot``, ``torch.tensordot``).

    ``dims`` an int ``d``: the last ``d`` dims of ``a`` with the first ``d`` of
    ``b``; or a pair of lists ``([a dims], [b dims])`` contracted in order.  The
    result has ``a``'s free dims, then ``b``'s.  A composition over ``permute``,
    ``reshape`` and one ``matmul``.

    Raises:
        TypeError: non-Tensor operands, ``dims`` of the wrong type.
        RuntimeError: a negative int ``dims`` or more than either operand has,
            lists of different lengths, repeated dims, contracted sizes that
            differ, different dtypes.
        IndexError: a dim out of range.
    """
    a, b = _check_tensordot(a, b)
    na, nb = a._data.ndim, b._data.ndim
    if isinstance(dims, (int, np.integer)) and not isinstance(dims, bool):
        if dims < 0:
            raise RuntimeError(f"tensordot(): expects dims >= 0, but got dims={dims}")
        if dims > na or dims > nb:
            raise RuntimeError(f"tensordot(): dims={dims} is more than the operands have "
                               f"({na} and {nb} dims)")
        da, db = list(range(na - dims, na)), list(range(dims))
    elif isinstance(dims, (list, tuple)) and len(dims) == 2:
        da_, db_ = ([d] if isinstance(d, (int, np.integer)) else d for d in dims)
        if not isinstance(da_, (list, tuple)) or not isinstance(db_, (list, tuple)):
            raise TypeError(f"tensordot(): dims must be an int or a pair of lists, "
                            f"got {dims!r}")
        if len(da_) != len(db_):
            raise RuntimeError(f"tensordot(): both dimension lists should have the same "
                               f"length, got {len(da_)} and {len(db_)}")
        da, db = _dim_list("tensordot", da_, na, "a"), _dim_list("tensordot", db_, nb, "b")
    else:
        raise TypeError(f"tensordot(): dims must be an int or a pair of lists, got {dims!r}")
    for x, y in zip(da, db):
        if a._data.shape[x] != b._data.shape[y]:
            raise RuntimeError(f"tensordot(): contracted dimensions need to match, but "
                               f"'a' has size {a._data.shape[x]} in dim {x} and 'b' has "
                               f"size {b._data.shape[y]} in dim {y}")
    return _tensordot(a, b, da, db)


def kron(input, other):
    """Kronecker product: for operands padded with leading 1s to the same number of
    dims, ``out[i*s + j] = a[i] * b[j]`` per dim (shape ``a.shape * b.shape``).
    A broadcast ``mul`` of interleaved reshapes, then one reshape; dtypes promote.

    Raises:
        TypeError: a non-Tensor operand.
    """
    a, b = _check_kron(input, other)
    nd = max(a._data.ndim, b._data.ndim)
    sa = (1,) * (nd - a._data.ndim) + a._data.shape
    sb = (1,) * (nd - b._data.ndim) + b._data.shape
    a2 = a.reshape(tuple(x for s in sa for x in (s, 1)))
    b2 = b.reshape(tuple(x for s in sb for x in (1, s)))
    return (a2 * b2).reshape(tuple(x * y for x, y in zip(sa, sb)))
