"""Pooling primitives (``torch.nn.functional``'s max, average and adaptive pools).

Every pool works on planes: an input ``(N, C, *S)`` or unbatched ``(C, *S)`` is
viewed as ``(P, *S)`` with P the product of the leading dims, so batched,
unbatched and vmapped inputs run the same kernel (``tensorplay/_kernels/pool.pyx``),
and a vmap batch dim is one more leading dim (the batching rules fold it in).

Max pooling is two steps: a kernel finds the argmax of every window (PyTorch's
flat per-plane indices ``h * W + w``; ties keep the first maximum in scan order,
rows outer, columns inner; a NaN wins, as PyTorch's CPU kernel), and the
primitive ``max_pool(x, indices)`` gathers ``x`` at them.  Gathering is linear in
``x``: its JVP gathers the tangent at the same indices, its VJP is
``max_pool_backward`` (scatter-add into zeros), whose own VJP is the gather again,
so every order of derivative is exact.  The indices are computed from values that
are never differentiated, outside the registry (under vmap, on the physical value).

Average pools are linear: ``avg_pool`` / ``avg_pool_backward`` and
``adaptive_avg_pool`` / ``adaptive_avg_pool_backward`` are adjoint pairs, each
the other's VJP, each its own JVP.

Window geometry (PyTorch's ``pooling_output_shape``): ``out = floor((L + 2p -
d (k - 1) - 1 + (ceil_mode ? s - 1 : 0)) / s) + 1``, less one when ceil_mode
makes the last window start inside the right padding.  Adaptive windows are
``[floor(o L / O), ceil((o + 1) L / O))``.
"""
import functools
import math
import operator

import numpy as np

from tensorplay._kernels import pool as _kp
from tensorplay._ops import _batching as _B
from tensorplay._ops._common import CONFIG
from tensorplay._ops._validate import Signature, SizesArg, TensorArg, declare
from tensorplay._ops.registry import apply, defop
from tensorplay._pool import empty as pool_empty
from tensorplay._tensor import Tensor

__all__ = ["max_pool1d", "max_pool2d", "max_pool1d_with_indices", "max_pool2d_with_indices",
           "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "max_pool_backward",
           "avg_pool_backward", "adaptive_avg_pool_backward", "max_pool_gather"]
# functional-only names (torch.nn.functional), and the derivative kernels
INTERNAL = tuple(__all__)

_I64 = np.dtype(np.int64)


def _sig(name, *extra):
    return declare(Signature(name, TensorArg("input", "f", exc=NotImplementedError),
                             *extra))


_check = {name: _sig(name, SizesArg("kernel_size")) for name in
          ("max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d")}
# (adaptive output sizes may hold None: checked by _pool_avg._output_size)
_check.update({name: _sig(name) for name in
               ("adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d",
                "adaptive_max_pool2d")})
_check_max_pool_backward = declare(Signature(
    "max_pool_backward", TensorArg("grad_output", "f", exc=NotImplementedError),
    TensorArg("indices", "i", exc=RuntimeError), SizesArg("input_size")))
_check_max_pool_gather = declare(Signature(
    "max_pool_gather", TensorArg("input", "f", exc=NotImplementedError),
    TensorArg("indices", "i", exc=RuntimeError)))
_check_avg_pool_backward = declare(Signature(
    "avg_pool_backward", TensorArg("grad_output", "f", exc=NotImplementedError),
    SizesArg("input_size"), SizesArg("kernel_size")))
_check_adaptive_avg_pool_backward = declare(Signature(
    "adaptive_avg_pool_backward", TensorArg("grad_output", "f", exc=NotImplementedError),
    SizesArg("input_size")))


# ---------------------------------------------------------------- argument checks
def _ints(value, n, op, name, allow_none=False):
    """``value`` as a tuple of ``n`` ints (an int, or a sequence of 1 or n ints:
    PyTorch's ``_pair`` / ``_single`` and its IntArrayRef checks)."""
    if value is None and allow_none:
        return None
    items = value if isinstance(value, (tuple, list)) else (value,)
    for i, v in enumerate(items):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, but found "
                            f"element of type {type(v).__name__} at pos {i}")
    items = tuple(operator.index(v) for v in items)
    if allow_none and not items:
        return None                     # stride=() means the kernel size, as PyTorch
    if len(items) == 1:
        items = items * n
    if len(items) != n:
        what = "a single int, or a tuple of two ints" if n == 2 else "a single int"
        raise RuntimeError(f"{op}: {name} must either be {what}, got {list(items)}")
    return items


def _check_input(shape, nd, op):
    """(N, C, *S) or (C, *S) with every non-batch dim nonzero (PyTorch's check)."""
    if len(shape) not in (nd + 1, nd + 2) or any(s == 0 for s in shape[-nd - 1:]):
        want = "2D or 3D" if nd == 1 else "3D or 4D"
        raise RuntimeError(f"{op}: Expected {want} (batch mode) tensor with optional 0 dim "
                           f"batch size for input, but got: {list(shape)}")


def _out_size(size, k, s, p, d, ceil_mode):
    """PyTorch's pooling_output_shape for one dim."""
    n = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = n // s + 1                    # floor division, as div_rtn
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1                        # the last window would start in the padding
    return out


def _pool_args(op, shape, kernel_size, stride, padding, dilation, ceil_mode, nd):
    """Validated (kernel, stride, padding, dilation, ceil_mode, out_spatial)."""
    k = _ints(kernel_size, nd, op, "kernel_size")
    s = _ints(stride, nd, op, "stride", allow_none=True) or k
    p = _ints(padding, nd, op, "padding")
    d = _ints(dilation, nd, op, "dilation")
    if not isinstance(ceil_mode, (bool, np.bool_)):
        raise TypeError(f"{op}(): argument 'ceil_mode' must be bool, not "
                        f"{type(ceil_mode).__name__}")
    if any(v <= 0 for v in k):
        raise RuntimeError(f"{op}: kernel size should be greater than zero, but got "
                           f"kernel_size={list(k)}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"{op}: stride should be greater than zero, but got "
                           f"stride={list(s)}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"{op}: dilation should be greater than zero, but got "
                           f"dilation={list(d)}")
    if any(v < 0 for v in p):
        raise RuntimeError(f"{op}: pad must be non-negative, but got padding={list(p)}")
    if any(pv > kv // 2 for pv, kv in zip(p, k)):
        raise RuntimeError(f"{op}: pad should be at most half of effective kernel size, "
                           f"but got pad={list(p)}, kernel_size={list(k)}")
    _check_input(shape, nd, op)
    spatial = shape[-nd:]
    out = tuple(_out_size(L, kv, sv, pv, dv, bool(ceil_mode))
                for L, kv, sv, pv, dv in zip(spatial, k, s, p, d))
    if any(o < 1 for o in out):
        c = shape[-nd - 1]
        raise RuntimeError(f"{op}: Given input size: ({'x'.join(map(str, shape[-nd - 1:]))})"
                           f". Calculated output size: ({'x'.join(map(str, (c,) + out))}). "
                           f"Output size is too small")
    return k, s, p, d, bool(ceil_mode), out


def _frozen(*arrays):
    for a in arrays:
        a.setflags(write=False)
    return arrays


@functools.lru_cache(maxsize=512)
def _max_windows(size, k, s, p, d, osize):
    """(start, count) of each output's taps inside [0, size): taps at
    ``o s - p + j d`` for ``j < k``, those inside the input."""
    raw = np.arange(osize, dtype=_I64) * s - p
    j0 = np.maximum(0, -(raw // d))
    j1 = np.minimum(k - 1, (size - 1 - raw) // d)
    return _frozen(raw + j0 * d, j1 - j0 + 1)


@functools.lru_cache(maxsize=512)
def _avg_windows(size, k, s, p, osize):
    """(start, count, pool) per output: PyTorch's avg_pool windows, ``pool`` the
    window's size counting the padding (``count_include_pad``)."""
    start = np.arange(osize, dtype=_I64) * s - p
    end = np.minimum(start + k, size + p)
    pool = end - start
    start_c = np.maximum(start, 0)
    count = np.minimum(end, size) - start_c
    return _frozen(start_c, count, pool.astype(np.float64))


@functools.lru_cache(maxsize=512)
def _adaptive_windows(size, osize):
    o = np.arange(osize, dtype=_I64)
    start = (o * size) // osize
    end = ((o + 1) * size + osize - 1) // osize
    return _frozen(start, end - start)


_ONE = _frozen(np.zeros(1, _I64), np.ones(1, _I64))       # the H windows of a 1-D pool


def _planes(shape, nd):
    """(P, H, W) for an array whose last ``nd`` dims are spatial (H = 1 for 1-D)."""
    sp = shape[len(shape) - nd:]
    P = math.prod(shape[:len(shape) - nd])
    return (P, 1, sp[0]) if nd == 1 else (P, sp[0], sp[1])


# ---------------------------------------------------------------- max pooling
def _max_indices(x, windows):
    """int64 Tensor of the argmax indices of every window of ``x``; ``windows``
    holds ``(start, count, step)`` per spatial dim.  Under vmap it runs on the
    physical value (the batch is one more leading dim) and is batched again."""
    data = x._data
    if type(data) is _B.BatchedArray:
        return _B.make_batched(_max_indices(data._bt_phys, windows), data._bt_level)
    nd = len(windows)
    if nd == 1:
        windows = ((_ONE[0], _ONE[1], 1),) + tuple(windows)
    (hs, hc, dh), (ws, wc, dw) = windows
    out = tuple(w[0].size for w in windows[2 - nd:])
    xc = np.ascontiguousarray(data)
    lead = xc.shape[:xc.ndim - nd]
    vals = pool_empty(lead + out, xc.dtype)
    idx = np.empty(lead + out, _I64)
    P, H, W = _planes(xc.shape, nd)
    _kp.max_pool_fwd(xc.reshape(P, H, W), hs, hc, dh, ws, wc, dw,
                     vals.reshape(P, hs.size, ws.size), idx.reshape(P, hs.size, ws.size),
                     CONFIG.num_threads)
    return Tensor._wrap(idx)


def _gather_fwd(x, idx, nd):
    lead = x.shape[:x.ndim - nd]
    S = math.prod(x.shape[x.ndim - nd:])
    out = pool_empty(idx.shape, x.dtype)
    P = math.prod(lead)
    if out.size:
        _kp.pool_gather(np.ascontiguousarray(x).reshape(P, S),
                        np.ascontiguousarray(idx, dtype=_I64).reshape(P, -1),
                        out.reshape(P, -1), CONFIG.num_threads)
    return out


def _scatter_fwd(g, idx, input_size):
    nd = len(input_size)
    lead = g.shape[:g.ndim - nd]
    out = pool_empty(lead + tuple(input_size), g.dtype)
    P, S = math.prod(lead), math.prod(input_size)
    if out.size:
        _kp.pool_scatter(np.ascontiguousarray(g).reshape(P, -1),
                         np.ascontiguousarray(idx, dtype=_I64).reshape(P, -1),
                         out.reshape(P, S), CONFIG.num_threads)
    return out


# y[p, j] = x[p, idx[p, j]]: linear in x.  VJP scatter-adds g at idx; JVP gathers t.
_max_pool = defop(
    "max_pool", _gather_fwd,
    vjp=(lambda g, out, x, idx, nd: _scatter(g, idx, x.shape[x.ndim - nd:]), None),
    jvp=lambda ts, out, x, idx, nd: _gather(ts[0], idx, nd),
    saves=("inputs",), batch=_B.leading_rule)
# b[p, idx[p, j]] += g[p, j]: linear in g, the adjoint of the gather.
_max_pool_backward = defop(
    "max_pool_backward", _scatter_fwd,
    vjp=(lambda gb, out, g, idx, input_size: _gather(gb, idx, len(input_size)), None),
    jvp=lambda ts, out, g, idx, input_size: _scatter(ts[0], idx, input_size),
    saves=("inputs",), batch=_B.leading_rule)


def _gather(x, idx, nd):
    return apply(_max_pool, (x, idx), {"nd": nd})


def _scatter(g, idx, input_size):
    return apply(_max_pool_backward, (g, idx), {"input_size": tuple(input_size)})


def _check_indices(op, x, indices, nd):
    if indices.shape[:-nd] != x.shape[:-nd] or indices.ndim != x.ndim:
        raise RuntimeError(f"{op}(): expected indices of shape {list(x.shape[:-nd])} + "
                           f"[output dims], got {list(indices.shape)}")
    if indices._data.dtype != _I64:
        indices = indices.long()
    return indices


def max_pool_gather(input, indices, nd=2):
    """``out[..., j] = input[..., idx[..., j]]`` with flat indices into the last ``nd``
    dims: the values of a max pool at its ``indices`` (the ``max_pool`` primitive).

    Args:
        input (Tensor): float32/float64 ``(*lead, *S)``.
        indices (Tensor): integer ``(*lead, *So)``, each in ``[0, prod(S))``.
        nd (int): the number of spatial dims (1 or 2).

    Raises:
        IndexError: an index out of range (checked where the kernel reads it).
        RuntimeError: leading dims that differ, integer ``indices`` of another kind.
    """
    input, indices = _check_max_pool_gather(input, indices)
    if nd not in (1, 2):
        raise ValueError(f"max_pool_gather(): nd must be 1 or 2, got {nd!r}")
    return _gather(input, _check_indices("max_pool_gather", input, indices, nd), nd)


def max_pool_backward(grad_output, indices, input_size):
    """Zeros of shape ``(*lead, *input_size)`` with ``grad_output`` added at the flat
    ``indices`` of each plane: the VJP of max pooling (PyTorch's
    ``max_pool2d_with_indices_backward``).

    Args:
        grad_output (Tensor): float32/float64 ``(*lead, *So)``.
        indices (Tensor): integer, ``grad_output``'s shape, each in
            ``[0, prod(input_size))``.
        input_size (sequence of int): the spatial shape of the pooled input (1 or 2 dims).

    Raises:
        IndexError: an index out of range.  RuntimeError: shapes that differ.
    """
    grad_output, indices, size = _check_max_pool_backward(grad_output, indices, input_size)
    if len(size) not in (1, 2) or any(s < 0 for s in size):
        raise RuntimeError(f"max_pool_backward(): input_size must be 1 or 2 non-negative "
                           f"sizes, got {list(size)}")
    if indices.shape != grad_output.shape or grad_output.ndim < len(size):
        raise RuntimeError(f"max_pool_backward(): indices of shape {list(indices.shape)} "
                           f"for grad_output of shape {list(grad_output.shape)}")
    if indices._data.dtype != _I64:
        indices = indices.long()
    return _scatter(grad_output, indices, size)


def _key(args):
    """A cache key that tells ``True`` from ``1`` (also inside tuples), or None for
    unhashable arguments (lists)."""
    key = []
    for a in args:
        if isinstance(a, tuple):
            key.append((tuple, tuple((type(e), e) for e in a)))
        else:
            key.append((type(a), a))
    key = tuple(key)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def cached_plan(fn):
    """Memoize a validation-and-geometry function of hashable arguments (a training
    loop calls a pool with the same shapes and sizes every step: the per-call
    Python work is then one dict lookup).  Errors are not cached: they raise again."""
    cache = {}

    def plan(*args):
        key = _key(args)
        if key is None:
            return fn(*args)
        hit = cache.get(key)
        if hit is None:
            hit = fn(*args)
            if len(cache) >= 1024:
                cache.clear()
            cache[key] = hit
        return hit
    plan.__wrapped__ = fn
    return plan


@cached_plan
def _max_plan(op, nd, shape, kernel_size, stride, padding, dilation, ceil_mode):
    """Validated windows ((start, count, step) per spatial dim) of a max pool."""
    k, s, p, d, _, out = _pool_args(op, shape, kernel_size, stride, padding, dilation,
                                    ceil_mode, nd)
    windows = tuple(_max_windows(L, kv, sv, pv, dv, ov) + (dv,) for L, kv, sv, pv, dv, ov
                    in zip(shape[-nd:], k, s, p, d, out))
    for w, L in zip(windows, shape[-nd:]):
        if w[1].min() < 1:
            # only with dilation: every tap of a window in the padding (PyTorch
            # returns -inf there with an index outside the input)
            raise RuntimeError(f"{op}: a window has no element inside the input (input "
                               f"size {L}, kernel_size={list(k)}, padding={list(p)}, "
                               f"dilation={list(d)}); reduce the padding or the dilation")
    return windows


def _max_pool_call(op, nd, input, kernel_size, stride, padding, dilation, ceil_mode,
                   return_indices):
    input, _ = _check[op](input, kernel_size)
    windows = _max_plan(op, nd, tuple(input.shape), kernel_size, stride, padding, dilation,
                        ceil_mode)
    idx = _max_indices(input, windows)
    y = _gather(input, idx, nd)
    return (y, idx) if return_indices else y


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-D max pooling over ``(N, C, H, W)`` or unbatched ``(C, H, W)`` input.

    Args:
        input (Tensor): float32 or float64.
        kernel_size (int or (int, int)): the window.
        stride (int or (int, int), optional): default ``kernel_size``.
        padding (int or (int, int)): implicit -inf padding on both sides, at most
            half the kernel size.  Default 0.
        dilation (int or (int, int)): spacing of the window taps.  Default 1.
        ceil_mode (bool): round the output size up; a last window that would start
            in the right padding is dropped (PyTorch).  Default False.
        return_indices (bool): also return the argmax indices, int64, flat per
            plane (``h * W + w``), as PyTorch (usable with its max_unpool2d).

    Returns:
        Tensor ``(N, C, OH, OW)``, or ``(values, indices)``.  Ties: the first maximum
        in scan order (rows, then columns) gets the gradient; a NaN wins the window.

    Raises:
        NotImplementedError: integer input.  TypeError: non-int sizes.
        RuntimeError: a size <= 0, padding above half the kernel, an input that is
        not 3-D/4-D (or has an empty non-batch dim), an output size below 1.
    """
    return _max_pool_call("max_pool2d", 2, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """1-D max pooling over ``(N, C, L)`` or unbatched ``(C, L)`` input; arguments,
    ties and errors as ``max_pool2d`` (ints or 1-tuples)."""
    return _max_pool_call("max_pool1d", 1, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    """``max_pool2d(..., return_indices=True)``: ``(values, indices)``."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    """``max_pool1d(..., return_indices=True)``: ``(values, indices)``."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


from tensorplay._ops._pool_avg import (adaptive_avg_pool1d, adaptive_avg_pool2d,  # noqa: E402
                                       adaptive_avg_pool_backward, adaptive_max_pool1d,
                                       adaptive_max_pool2d, avg_pool1d, avg_pool2d,
                                       avg_pool_backward)
