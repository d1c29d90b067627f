"""Reductions: ``sum`` and ``mean`` over one or several dims, with ``keepdim``.

The forward arranges the input as a C-contiguous (A, R, B) block -- R the reduced
extent -- and calls ``_kernels/reduce.pyx:sum_fwd`` (float32 accumulates in
float64).  Reduced dims that are adjacent need no copy; others are permuted to the
end first (one copy).  Integer and bool inputs sum in int64 with numpy, as PyTorch.
"""
import math

import numpy as np

from tensorplay._pool import MIN_BYTES as POOL_MIN_BYTES
from tensorplay._pool import empty as pool_empty
from tensorplay._kernels import reduce as _kr
from tensorplay._ops._common import CONFIG, not_tensor_error
from tensorplay._ops._validate import BoolArg, DimsArg, Signature, TensorArg, declare
from tensorplay._ops.registry import apply, defop
from tensorplay._ops import _batching as _B
from tensorplay._ops.shape import _expand, _reshape
from tensorplay._tensor import Tensor

__all__ = ["sum", "mean"]


def _kept_shape(shape, dims):
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def _sum_array(x, dims, keepdim):
    if 0 in x.strides and x.size:
        return _sum_broadcast(x, dims, keepdim)
    return _sum_plain(x, dims, keepdim)


def _sum_broadcast(x, dims, keepdim):
    """The sum of a broadcast view (stride-0 dims) without materialising it: each
    stride-0 dim is summed as one slice, times its size when it is reduced, and
    broadcast back when it is kept.  (``tp.ones(1).expand(2**36).sum()`` would
    otherwise ask for 256 GiB; PyTorch computes it without allocating.)"""
    key = []
    factor = 1
    for i, (n, st) in enumerate(zip(x.shape, x.strides)):
        if st == 0 and n > 1:
            key.append(slice(0, 1))
            if i in dims:
                factor *= n
        else:
            key.append(slice(None))
    out = _sum_plain(x[tuple(key)], dims, keepdim)
    if factor != 1:
        out = np.multiply(out, factor, out=out, casting="unsafe")
    want = _kept_shape(x.shape, dims) if keepdim else \
        tuple(n for i, n in enumerate(x.shape) if i not in dims)
    if out.shape != want:
        out = np.broadcast_to(out, want).copy()
    return out


def _sum_plain(x, dims, keepdim):
    shape = x.shape
    if x.dtype.kind != "f":
        return np.asarray(np.sum(x, axis=dims, keepdims=keepdim, dtype=np.int64))
    out_shape = _kept_shape(shape, dims) if keepdim else \
        tuple(s for i, s in enumerate(shape) if i not in dims)
    if not dims:
        return x.copy().reshape(out_shape)
    if dims == tuple(range(dims[0], dims[-1] + 1)):
        xa = np.ascontiguousarray(x)
        a = math.prod(shape[:dims[0]])
        r = math.prod(shape[dims[0]:dims[-1] + 1])
        b = math.prod(shape[dims[-1] + 1:])
    else:
        kept = [i for i in range(len(shape)) if i not in dims]
        xa = np.ascontiguousarray(x.transpose(kept + list(dims)))
        a = math.prod(shape[i] for i in kept)
        r = math.prod(shape[i] for i in dims)
        b = 1
    # small outputs skip the pool's Python call, as in elementwise.py
    out = (np.empty((a, b), x.dtype) if a * b * x.itemsize < POOL_MIN_BYTES
           else pool_empty((a, b), x.dtype))
    _kr.sum_fwd(xa.reshape(a, r, b), out, CONFIG.num_threads)
    return out.reshape(out_shape)


def _count(shape, dims):
    return math.prod(shape[d] for d in dims)


def _mean_array(x, dims, keepdim):
    s = _sum_array(x, dims, keepdim)
    n = _count(x.shape, dims)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.multiply(s, 1.0 / n if n else np.nan, out=s, casting="unsafe")


def _expand_back(g, x, dims, keepdim):
    """Broadcast a reduced cotangent back to the input's shape.

    The shapes are valid by construction, so the reshape and expand primitives
    are applied directly, without the public functions' checks (on tiny tensors
    those cost more than the views); an expand to the shape ``g`` already has is
    skipped.
    """
    shape = tuple(x.shape)
    if not keepdim:
        kept = _kept_shape(shape, dims)
        if kept != g._data.shape:
            g = apply(_reshape, (g,), {"shape": kept})
    if g._data.shape == shape:
        return g
    return apply(_expand, (g,), {"shape": shape})


# sum: VJP broadcasts g back over the reduced dims; JVP sums the tangent.
_sum = defop("sum", lambda x, dims, keepdim: _sum_array(x, dims, keepdim),
             vjp=(lambda g, out, x, dims, keepdim: _expand_back(g, x, dims, keepdim),),
             jvp=lambda ts, out, x, dims, keepdim: sum(ts[0], dims, keepdim),
             batch=_B.dims_rule("dims"))
# mean = sum / n, n the number of reduced elements.
_mean = defop("mean", lambda x, dims, keepdim: _mean_array(x, dims, keepdim),
              vjp=(lambda g, out, x, dims, keepdim:
                   _expand_back(g, x, dims, keepdim) * (1.0 / max(_count(x.shape, dims), 1)),),
              jvp=lambda ts, out, x, dims, keepdim: mean(ts[0], dims, keepdim),
              batch=_B.dims_rule("dims"))


def _reduce_sig(op, kinds="fib", **kw):
    return Signature(op, TensorArg("input", kinds, **kw), DimsArg("dim", default=None),
                     BoolArg("keepdim", default=False))


_check_sum = declare(_reduce_sig("sum"))
_check_mean = declare(_reduce_sig(
    "mean", "f", exc=RuntimeError,
    message="could not infer output dtype; pass dtype=tensorplay.float32"))


def _cast(input, dtype, op):
    if not isinstance(input, Tensor):
        raise not_tensor_error(op, "input", input)
    return input.to(dtype)


def sum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum of elements over ``dim``.

    Args:
        input (Tensor): any shape and dtype.
        dim (int or tuple of ints, optional): dims to reduce; None (or ``()``)
            reduces all of them.
        keepdim (bool): keep reduced dims with size 1.
        dtype (dtype, optional): cast the input to this dtype first.

    Returns:
        Tensor of the input's dtype (int64 for integer and bool inputs), or of
        ``dtype`` when given (PyTorch: the sum is computed in that dtype).

    Raises:
        TypeError: a non-Tensor input, a dim that is not an int (or tuple of
            ints), a keepdim that is not a bool.
        IndexError: a dim out of range.  RuntimeError: a repeated dim.
    """
    if dtype is not None:
        input = _cast(input, dtype, "sum")
    input, dims, keepdim = _check_sum(input, dim, keepdim)
    out = apply(_sum, (input,), {"dims": dims, "keepdim": keepdim})
    if dtype is not None and out._data.dtype != input._data.dtype:
        out = out.to(input.dtype)       # an int32 sum stays int32 (not int64)
    return out


def mean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean of elements over ``dim`` (same arguments as ``sum``).  The mean over zero
    elements is nan.

    Raises:
        as ``sum``; RuntimeError for integer or bool input (as PyTorch; pass ``dtype``).
    """
    if dtype is not None:
        input = _cast(input, dtype, "mean")
    input, dims, keepdim = _check_mean(input, dim, keepdim)
    return apply(_mean, (input,), {"dims": dims, "keepdim": keepdim})
