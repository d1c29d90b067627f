"""Gathering along a dim: ``gather``, ``take_along_dim`` and their adjoint
``gather_backward`` (a scatter-add into zeros), as primitives.

``gather(x, dim, index)[i][j][k] = x[i][index[i][j][k]][k]`` (dim = 1).  The
kernels (``_kernels/reduce_ext.pyx``: ``gather_fwd`` / ``gather_bwd``) see the
input as a C-contiguous (A, R, B) block, R the gathered dim, and the index as
(A, J, B); each index is checked where it is read.  ``gather``'s VJP is
``gather_backward`` (repeated indices accumulate), whose VJP is ``gather`` again:
both are linear, so their JVPs are themselves applied to the tangent.  Integer
and bool inputs (never differentiable) use numpy's ``take_along_axis``.
"""
import math

import numpy as np

from tensorplay._kernels import reduce_ext as _kx
from tensorplay._ops._common import CONFIG, normalize_dim
from tensorplay._ops._validate import DimArg, Signature, TensorArg, declare
from tensorplay._ops.registry import apply, defop
from tensorplay._ops import _batching as _B
from tensorplay._tensor import Tensor

__all__ = ["gather", "take_along_dim", "gather_backward"]
METHODS = ["gather", "take_along_dim"]


def _bad_index_error(op, ia, dim, size):
    flat = ia.reshape(-1)
    bad = flat[(flat < 0) | (flat >= size)]
    value = int(bad[0]) if bad.size else "?"
    return RuntimeError(f"{op}(): index {value} is out of bounds for dimension {dim} "
                        f"with size {size}")


def _blocks(shape, dim):
    return math.prod(shape[:dim]), math.prod(shape[dim + 1:])


def _gather_array(x, index, dim):
    ishape = index.shape
    if x.ndim == 0:
        x, index = x.reshape(1), index.reshape(1)
    key = tuple(slice(None) if i == dim else slice(0, s) for i, s in enumerate(index.shape))
    xv = x[key]
    R = x.shape[dim]
    A, B = _blocks(index.shape, dim)
    J = index.shape[dim]
    ia = np.ascontiguousarray(index, dtype=np.int64).reshape(A, J, B)
    if x.dtype.kind != "f":
        if ia.size and (ia.min() < 0 or ia.max() >= R):
            raise _bad_index_error("gather", ia, dim, R)
        return np.take_along_axis(xv, ia.reshape(index.shape), dim).reshape(ishape)
    xa = np.ascontiguousarray(xv).reshape(A, R, B)
    out = np.empty((A, J, B), x.dtype)
    try:
        _kx.gather_fwd(xa, ia, out, CONFIG.num_threads)
    except IndexError:
        raise _bad_index_error("gather", ia, dim, R) from None
    return out.reshape(ishape)


def _gather_backward_array(g, index, dim, shape):
    """zeros(shape) with ``g`` added at ``index`` along ``dim`` (repeats accumulate)."""
    nd0 = len(shape)
    full = tuple(shape) if nd0 else (1,)
    ishape = index.shape if index.ndim else (1,)
    sub = tuple(full[i] if i == dim else s for i, s in enumerate(ishape))
    R = full[dim]
    A, B = _blocks(sub, dim)
    J = ishape[dim]
    ia = np.ascontiguousarray(index, dtype=np.int64).reshape(A, J, B)
    ga = np.ascontiguousarray(g).reshape(A, J, B)
    acc = np.zeros((A, R, B), g.dtype)
    try:
        _kx.gather_bwd(ga, ia, acc, CONFIG.num_threads)
    except IndexError:
        raise _bad_index_error("gather_backward", ia, dim, R) from None
    acc = acc.reshape(sub)
    if sub != full:
        out = np.zeros(full, g.dtype)
        out[tuple(slice(0, s) for s in sub)] = acc
        acc = out
    return acc.reshape(shape)


# gather: linear in x; VJP scatters g back (gather_backward), JVP gathers the tangent.
_gather = defop(
    "gather", lambda x, index, dim: _gather_array(x, index, dim),
    vjp=(lambda g, out, x, index, dim: gather_backward(g, dim, index, x.shape), None),
    jvp=lambda ts, out, x, index, dim: apply(_gather, (ts[0], index), {"dim": dim}),
    saves=("inputs",), batch=_B.dims_rule("dim"))
# gather_backward: the adjoint of gather; its VJP is gather, its JVP itself.
_gather_backward = defop(
    "gather_backward",
    lambda g, index, dim, shape: _gather_backward_array(g, index, dim, shape),
    vjp=(lambda gb, out, g, index, dim, shape: apply(_gather, (gb, index), {"dim": dim}),
         None),
    jvp=lambda ts, out, g, index, dim, shape: apply(
        _gather_backward, (ts[0], index), {"dim": dim, "shape": shape}),
    saves=("inputs",), batch=_B.gather_backward_rule)


_check_gather = declare(Signature(
    "gather", TensorArg("input"), DimArg("dim"), TensorArg("index", "i", exc=RuntimeError)))
_check_gather_backward = declare(Signature(
    "gather_backward", TensorArg("grad_output", "f"), DimArg("dim", of="grad_output"),
    TensorArg("index", "i", exc=RuntimeError)))
_check_take = declare(Signature(
    "take_along_dim", TensorArg("input"), TensorArg("indices", "i", exc=RuntimeError)))


def _check_index_shape(op, x, dim, index, what="input"):
    xs, ish = x._data.shape, index._data.shape
    if len(ish) != len(xs) and not (len(ish) <= 1 and len(xs) <= 1):
        raise RuntimeError(f"{op}(): index tensor must have the same number of dimensions "
                           f"as {what} tensor, got {len(ish)} and {len(xs)}")
    if len(ish) == len(xs):
        for d, (a, b) in enumerate(zip(ish, xs)):
            if d != dim and a > b:
                raise RuntimeError(f"{op}(): size of dimension {d} of index ({a}) must not "
                                   f"exceed that of {what} ({b}) (dims other than {dim})")


def gather(input, dim, index):
    """Values of ``input`` at ``index`` along ``dim`` (``torch.gather``):
    ``out[i][j][k] = input[i][index[i][j][k]][k]`` for dim = 1.

    Args:
        input (Tensor): any shape and dtype.
        dim (int): the dim indexed.
        index (Tensor): int32/int64, the same number of dims as ``input``, no
            larger than ``input`` in the other dims; values in ``[0, size)``.

    Returns:
        Tensor of ``index``'s shape and ``input``'s dtype.  The gradient
        scatters back, repeated indices accumulating (``gather_backward``).

    Raises:
        TypeError: a non-Tensor argument or a non-int dim.  IndexError: dim out
        of range.  RuntimeError: a non-integer index, mismatched shapes, or an
        index out of bounds (as PyTorch).
    """
    input, dim, index = _check_gather(input, dim, index)
    _check_index_shape("gather", input, dim, index)
    if input._data.ndim == 0 and index._data.ndim == 1:
        index = index.reshape(())           # PyTorch treats 0-d and 1-element 1-d alike
    return apply(_gather, (input, index), {"dim": dim})


def gather_backward(grad_output, dim, index, shape):
    """The adjoint of ``gather``: zeros of ``shape`` (the gathered input's shape)
    with ``grad_output`` added at ``index`` along ``dim``; repeated indices
    accumulate.  float32/float64 ``grad_output`` of ``index``'s shape.

    Raises:
        as ``gather``.
    """
    grad_output, dim, index = _check_gather_backward(grad_output, dim, index)
    shape = tuple(int(s) for s in shape)
    if grad_output._data.shape != index._data.shape:
        raise RuntimeError(f"gather_backward(): grad_output shape "
                           f"{list(grad_output._data.shape)} != index shape "
                           f"{list(index._data.shape)}")
    return apply(_gather_backward, (grad_output, index), {"dim": dim, "shape": shape})


def take_along_dim(input, indices, dim=None):
    """``torch.take_along_dim``: values of ``input`` at ``indices`` along ``dim``,
    broadcasting the two in the other dims; with ``dim=None`` both are flattened
    (the use of ``argmax`` / ``argsort`` results).

    Args:
        input (Tensor): any dtype.
        indices (Tensor): int32/int64 with as many dims as ``input`` (any shape
            when ``dim`` is None); values in ``[0, size)``.
        dim (int, optional): the dim indexed.

    Returns:
        Tensor of the broadcast shape (``indices``' size along ``dim``).

    Raises:
        as ``gather``; RuntimeError when the other dims do not broadcast.
    """
    input, indices = _check_take(input, indices)
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    nd = input._data.ndim
    dim = normalize_dim(dim, nd, "take_along_dim")
    if indices._data.ndim != nd:
        raise RuntimeError(f"take_along_dim(): input and indices should have the same "
                           f"number of dimensions, got {nd} and {indices._data.ndim}")
    if nd == 0:
        return gather(input, 0, indices)
    xs, ish = list(input._data.shape), list(indices._data.shape)
    shape = []
    for d, (a, b) in enumerate(zip(xs, ish)):
        if d == dim:
            shape.append(None)
        elif a == b or a == 1 or b == 1:
            shape.append(b if a == 1 else a)
        else:
            raise RuntimeError(f"take_along_dim(): the shapes of input {xs} and indices "
                               f"{ish} do not broadcast in dim {d}")
    want_x = tuple(xs[dim] if s is None else s for s in shape)
    want_i = tuple(ish[dim] if s is None else s for s in shape)
    if tuple(xs) != want_x:
        input = input.expand(want_x)
    if tuple(ish) != want_i:
        indices = indices.expand(want_i)
    return gather(input, dim, indices)
