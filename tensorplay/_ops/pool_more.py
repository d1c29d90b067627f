"""``max_unpool1d/2d`` and ``lp_pool1d/2d`` of ``torch.nn.functional`` (issue 9,
second step), as compositions of registered primitives.

* ``max_unpool`` is ``scatter`` (``index_put``) of each plane's values into zeros
  at the flat per-plane indices ``max_pool(..., return_indices=True)`` returns
  (``h * W + w``).  The indices are checked against the output plane first
  (PyTorch's RuntimeError "Found an invalid max index"), and the index kernel checks
  each again where it reads it, so an out-of-range index can never write outside
  the output.  A repeated index (overlapping pooling windows) keeps the last write,
  as PyTorch's CPU kernel, and only that write gets the gradient (the derivative of
  what was computed; PyTorch's backward gathers the cotangent for every copy).
* ``lp_pool`` is PyTorch's formula: ``(sign(s) relu(|s|) * K) ** (1/p)`` of
  ``s = avg_pool(x ** p)`` (K the window size), ``p = inf`` a max pool of ``|x|``.
"""
import numpy as np

from tensorplay._ops import _checks9 as C

__all__ = ["max_unpool1d", "max_unpool2d", "lp_pool1d", "lp_pool2d"]
INTERNAL = list(__all__)


def _unpool_output_size(op, in_spatial, kernel, stride, padding, output_size):
    """PyTorch's ``_unpool_output_size``: the default ``(L - 1) s + k - 2 p``, or the
    given size (its last ``nd`` entries may be preceded by N, C), which must lie
    strictly within one stride of the default."""
    nd = len(kernel)
    default = [(L - 1) * s + k - 2 * p for L, k, s, p in zip(in_spatial, kernel, stride,
                                                            padding)]
    if output_size is None:
        ret = default
    else:
        out = [C.number(op, "output_size", v, integral=True) for v in output_size]
        if len(out) == nd + 2:
            out = out[2:]
        if len(out) != nd:
            raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} "
                             f"elements, but it has a length of '{len(out)}'")
        for d in range(nd):
            lo, hi = default[d] - stride[d], default[d] + stride[d]
            if not lo < out[d] < hi:
                raise ValueError(f'invalid output_size "{tuple(output_size)}" (dim {d} must '
                                 f'be between {lo} and {hi})')
        ret = out
    for d, v in enumerate(ret):
        if v < 0:
            raise ValueError(f"max_unpooling: output_size must contain non-negative spatial "
                             f"dimensions, but got output_size[{d}]={v}")
    return ret


def _unpool(op, nd, input, indices, kernel_size, stride, padding, output_size):
    from tensorplay._ops.pool import _ints
    from tensorplay._ops.scatter import scatter
    C.tensor(op, "input", input)
    if not isinstance(indices, type(input)):
        C.tensor(op, "indices", indices, "i")
    if indices._data.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): elements in indices should be type int64 but got: "
                           f"{indices.dtype}")
    k = _ints(kernel_size, nd, op, "kernel_size")
    s = _ints(stride, nd, op, "stride", allow_none=True) or k
    p = _ints(padding, nd, op, "padding")
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}(): Input to {op} should be a {nd + 1}d or {nd + 2}d "
                           f"Tensor, but got a tensor with {input.ndim} dimensions.")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"{op}(): Expected shape of indices to be same as that of the "
                           f"input tensor ({list(input.shape)}) but got indices tensor with "
                           f"shape: {list(indices.shape)}")
    out_sp = _unpool_output_size(op, tuple(input.shape[-nd:]), k, s, p, output_size)
    plane = int(np.prod(out_sp))
    lead = tuple(input.shape[:-nd])
    idx = C.values(indices)
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= plane:
            bad = lo if lo < 0 else hi
            raise RuntimeError(f"{op}(): Found an invalid max index: {bad} (output volumes "
                               f"are of size {'x'.join(map(str, out_sp))})")
    flat_i = indices.reshape(lead + (-1,))
    if flat_i._data.dtype != np.int64:
        flat_i = flat_i.long()
    zeros = input.new_zeros(lead + (plane,))
    if input.numel() == 0:
        return zeros.reshape(lead + tuple(out_sp))
    out = scatter(zeros, len(lead), flat_i, input.reshape(lead + (-1,)))
    return out.reshape(lead + tuple(out_sp))


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of ``max_pool2d``: each value written at its index in a
    zero plane of size ``output_size`` (default ``(H - 1) s + k - 2 p`` per dim).

    Args:
        input (Tensor): float32/float64 ``(N, C, H, W)`` or ``(C, H, W)``.
        indices (Tensor): integer, input's shape: flat indices ``h * W_out + w`` into
            each output plane (what ``max_pool2d(..., return_indices=True)`` gives).
        kernel_size, stride, padding: the pooling's (int or pair; stride defaults to
            kernel_size).
        output_size (sequence of int, optional): (H_out, W_out), optionally preceded by
            N, C; must lie strictly within one stride of the default.

    Raises:
        RuntimeError: an index outside ``[0, H_out W_out)`` (PyTorch's "Found an invalid
        max index"), non-integer indices, indices of another shape, input not 3-D/4-D.
        ValueError: an output_size of the wrong length or out of range.
    """
    return _unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding,
                   output_size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of ``max_pool1d`` over ``(N, C, L)`` or ``(C, L)`` input;
    arguments and errors as ``max_unpool2d`` (one spatial dim)."""
    return _unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding,
                   output_size)


def _lp(op, nd, input, norm_type, kernel_size, stride, ceil_mode):
    from tensorplay._ops.elementwise import relu
    from tensorplay._ops.pool import _ints, avg_pool1d, avg_pool2d, max_pool1d, max_pool2d
    C.tensor(op, "input", input)
    p = C.number(op, "norm_type", norm_type)
    k = _ints(kernel_size, nd, op, "kernel_size")
    maxp, avgp = (max_pool1d, avg_pool1d) if nd == 1 else (max_pool2d, avg_pool2d)
    if p == float("inf"):
        return maxp(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if p == -float("inf"):
        return -maxp(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if p == 0:
        raise RuntimeError(f"{op}(): norm_type must be nonzero (the result is x ** (1/p))")
    out = avgp(input.pow(p), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * relu(out.abs())).mul(float(np.prod(k))).pow(1.0 / p)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling ``(sum over the window of x^p) ** (1/p)`` of ``(N, C, H,
    W)`` or ``(C, H, W)`` input (``torch.nn.functional.lp_pool2d``); p = inf is a max
    pool of ``|x|``.  Negative ``x`` with a fractional p gives nan (as PyTorch).

    Raises:
        RuntimeError: norm_type 0, integer input; the pooling's errors (see
        ``avg_pool2d``).  TypeError: a non-number norm_type.
    """
    return _lp("lp_pool2d", 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``lp_pool2d`` over one spatial dim: ``(N, C, L)`` or ``(C, L)`` input."""
    return _lp("lp_pool1d", 1, input, norm_type, kernel_size, stride, ceil_mode)
