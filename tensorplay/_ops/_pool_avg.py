"""Average and adaptive pools (part of the pool family, ``tensorplay/_ops/pool.py``,
which exports these names).

``avg_pool`` and ``adaptive_avg_pool`` are linear in their input: each one's JVP
is itself on the tangent and its VJP its ``_backward`` primitive (spread
``g / divisor`` over each window), whose VJP is the forward again.  Divisors
follow PyTorch's CPU kernels: the window size clipped to ``L + padding``
(``count_include_pad=True``), or the count of taps inside the input
(``count_include_pad=False``), or ``divisor_override``; adaptive windows divide by
their own size.  Adaptive max pooling reuses max pooling's indices and gather.
"""
import functools

import numpy as np

from tensorplay._kernels import pool as _kp
from tensorplay._ops import _batching as _B
from tensorplay._ops._common import CONFIG
from tensorplay._ops.pool import (_ONE, _adaptive_windows, _avg_windows, _check,
                                  _check_adaptive_avg_pool_backward,
                                  _check_avg_pool_backward, _check_input, _frozen, _gather,
                                  _max_indices, _out_size, _planes,
                                  _pool_args, cached_plan)
from tensorplay._ops.registry import apply, defop
from tensorplay._pool import empty as pool_empty


@functools.lru_cache(maxsize=512)
def _avg_geometry(spatial, kernel, stride, padding, ceil_mode, count_include_pad,
                  divisor_override):
    """(hs, hc, ws, wc, div, out_spatial) of an avg pool over ``spatial``."""
    out = []
    wins = []
    for L, k, s, p in zip(spatial, kernel, stride, padding):
        o = _out_size(L, k, s, p, 1, ceil_mode)
        out.append(o)
        wins.append(_avg_windows(L, k, s, p, o))
    if len(wins) == 1:
        wins = [(_ONE[0], _ONE[1], np.ones(1))] + wins
    (hs, hc, hp), (ws, wc, wp) = wins
    if divisor_override is not None:
        div = np.full((hs.size, ws.size), float(divisor_override))
    elif count_include_pad:
        div = np.outer(hp, wp)
    else:
        div = np.outer(hc, wc).astype(np.float64)
    (div,) = _frozen(np.ascontiguousarray(div))
    return hs, hc, ws, wc, div, tuple(out)


@functools.lru_cache(maxsize=512)
def _adaptive_geometry(spatial, output_size):
    wins = [_adaptive_windows(L, o) for L, o in zip(spatial, output_size)]
    if len(wins) == 1:
        wins = [_ONE] + wins
    (hs, hc), (ws, wc) = wins
    (div,) = _frozen(np.outer(hc, wc).astype(np.float64))
    return hs, hc, ws, wc, div, tuple(output_size)


def _run(fwd, a, geom, nd, out_spatial):
    """The avg kernel (fwd) or its adjoint over planes; ``out_spatial`` the result's."""
    hs, hc, ws, wc, div, _ = geom
    lead = a.shape[:a.ndim - nd]
    out = pool_empty(lead + tuple(out_spatial), a.dtype)
    if out.size:
        ac = np.ascontiguousarray(a)
        kern = _kp.avg_pool_fwd if fwd else _kp.avg_pool_bwd
        kern(ac.reshape(_planes(ac.shape, nd)), hs, hc, ws, wc, div,
             out.reshape(_planes(out.shape, nd)), CONFIG.num_threads)
    elif not fwd:
        out[...] = 0
    return out


def _avg_fwd(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    nd = len(kernel)
    geom = _avg_geometry(x.shape[x.ndim - nd:], kernel, stride, padding, ceil_mode,
                         count_include_pad, divisor_override)
    return _run(True, x, geom, nd, geom[5])


def _avg_bwd_fwd(g, input_size, kernel, stride, padding, ceil_mode, count_include_pad,
                 divisor_override):
    geom = _avg_geometry(input_size, kernel, stride, padding, ceil_mode, count_include_pad,
                         divisor_override)
    return _run(False, g, geom, len(kernel), input_size)


def _avg(x, **p):
    return apply(_avg_pool, (x,), p)


def _avg_b(g, **p):
    return apply(_avg_pool_backward, (g,), p)


# y = A x with A the window-average matrix: VJP A^T g (avg_pool_backward), JVP A t.
_avg_pool = defop(
    "avg_pool", _avg_fwd,
    vjp=(lambda g, out, x, **p: _avg_b(g, input_size=x.shape[x.ndim - len(p["kernel"]):],
                                       **p),),
    jvp=lambda ts, out, x, **p: _avg(ts[0], **p),
    batch=_B.leading_rule)
_avg_pool_backward = defop(
    "avg_pool_backward", _avg_bwd_fwd,
    vjp=(lambda gb, out, g, input_size, **p: _avg(gb, **p),),
    jvp=lambda ts, out, g, input_size, **p: _avg_b(ts[0], input_size=input_size, **p),
    batch=_B.leading_rule)


def _adaptive_fwd(x, output_size):
    nd = len(output_size)
    return _run(True, x, _adaptive_geometry(x.shape[x.ndim - nd:], output_size), nd,
                output_size)


def _adaptive_bwd_fwd(g, input_size):
    nd = len(input_size)
    return _run(False, g, _adaptive_geometry(tuple(input_size), g.shape[g.ndim - nd:]), nd,
                input_size)


_adaptive_avg_pool = defop(
    "adaptive_avg_pool", _adaptive_fwd,
    vjp=(lambda g, out, x, output_size: _adaptive_b(g, x.shape[x.ndim - len(output_size):]),),
    jvp=lambda ts, out, x, output_size: _adaptive(ts[0], output_size),
    batch=_B.leading_rule)
_adaptive_avg_pool_backward = defop(
    "adaptive_avg_pool_backward", _adaptive_bwd_fwd,
    vjp=(lambda gb, out, g, input_size: _adaptive(gb, g.shape[g.ndim - len(input_size):]),),
    jvp=lambda ts, out, g, input_size: _adaptive_b(ts[0], input_size),
    batch=_B.leading_rule)


def _adaptive(x, output_size):
    return apply(_adaptive_avg_pool, (x,), {"output_size": tuple(output_size)})


def _adaptive_b(g, input_size):
    return apply(_adaptive_avg_pool_backward, (g,), {"input_size": tuple(input_size)})


# ---------------------------------------------------------------- public functions
@cached_plan
def _avg_plan(op, nd, shape, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    """The validated params of the avg_pool primitive."""
    k, s, p, _, ceil, out = _pool_args(op, shape, kernel_size, stride, padding, 1,
                                       ceil_mode, nd)
    if not isinstance(count_include_pad, (bool, np.bool_)):
        raise TypeError(f"{op}(): argument 'count_include_pad' must be bool, not "
                        f"{type(count_include_pad).__name__}")
    if divisor_override is not None:
        if isinstance(divisor_override, (bool, np.bool_)) or \
                not isinstance(divisor_override, (int, np.integer)):
            raise TypeError(f"{op}(): argument 'divisor_override' must be int or None, not "
                            f"{type(divisor_override).__name__}")
        if divisor_override == 0:
            raise RuntimeError(f"{op}: divisor must be not zero")
        divisor_override = int(divisor_override)
    return dict(kernel=k, stride=s, padding=p, ceil_mode=ceil,
                count_include_pad=bool(count_include_pad), divisor_override=divisor_override)


def _avg_args(op, nd, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    input, _ = _check[op](input, kernel_size)
    return input, _avg_plan(op, nd, tuple(input.shape), kernel_size, stride, padding,
                            ceil_mode, count_include_pad, divisor_override)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-D average pooling over ``(N, C, H, W)`` or unbatched ``(C, H, W)`` input.

    Args:
        input (Tensor): float32 or float64.
        kernel_size, stride, padding: ints or pairs, as ``max_pool2d`` (zero padding).
        ceil_mode (bool): round the output size up (a window starting in the right
            padding is dropped).  Default False.
        count_include_pad (bool): divide by the window size including the padding
            (clipped to ``H + padding``, as PyTorch); else by the taps inside the
            input.  Default True.
        divisor_override (int, optional): divide every window by this instead.

    Returns:
        Tensor ``(N, C, OH, OW)``; sums are accumulated in float64.

    Raises:
        as ``max_pool2d``; RuntimeError for ``divisor_override=0``.
    """
    input, p = _avg_args("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
                         count_include_pad, divisor_override)
    return _avg(input, **p)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """1-D average pooling over ``(N, C, L)`` or unbatched ``(C, L)`` input; see
    ``avg_pool2d`` (PyTorch's avg_pool1d has no divisor_override)."""
    input, p = _avg_args("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                         count_include_pad, None)
    return _avg(input, **p)


def avg_pool_backward(grad_output, input_size, kernel_size, stride=None, padding=0,
                      ceil_mode=False, count_include_pad=True, divisor_override=None):
    """The VJP of ``avg_pool1d/2d`` (1 or 2 spatial dims by ``len(input_size)``):
    ``grad_output / divisor`` spread over each window of an input of spatial
    shape ``input_size``.

    Raises:
        RuntimeError: a ``grad_output`` whose spatial shape is not the pool's output
        shape for ``input_size``; as ``avg_pool2d`` for the pool arguments.
    """
    grad_output, size, _ = _check_avg_pool_backward(grad_output, input_size, kernel_size)
    nd = len(size)
    if nd not in (1, 2) or grad_output.ndim < nd + 1:
        raise RuntimeError(f"avg_pool_backward(): input_size must have 1 or 2 dims and "
                           f"grad_output at least {nd + 1}, got {list(size)} and "
                           f"{list(grad_output.shape)}")
    shape = tuple(grad_output.shape[:-nd]) + size
    p = _avg_plan("avg_pool_backward", nd, shape, kernel_size, stride, padding, ceil_mode,
                  count_include_pad, divisor_override)
    want = _avg_geometry(size, p["kernel"], p["stride"], p["padding"], p["ceil_mode"],
                         p["count_include_pad"], p["divisor_override"])[5]
    if tuple(grad_output.shape[-nd:]) != want:
        raise RuntimeError(f"avg_pool_backward(): grad_output of spatial shape "
                           f"{list(grad_output.shape[-nd:])}, the pool gives {list(want)}")
    return _avg_b(grad_output, input_size=size, **p)


def _output_size(op, input, output_size, nd):
    """Adaptive output sizes: ints >= 0 (None keeps the input's size)."""
    items = output_size if isinstance(output_size, (tuple, list)) else (output_size,)
    spatial = input.shape[-nd:]
    if len(items) == 1 and nd == 2:
        items = tuple(items) * 2
    if len(items) != nd:
        raise RuntimeError(f"{op}: output_size must be {nd} ints, got {list(items)}")
    out = []
    for i, v in enumerate(items):
        if v is None:
            out.append(spatial[i])
            continue
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{op}(): argument 'output_size' must be tuple of ints, but "
                            f"found element of type {type(v).__name__} at pos {i}")
        if v < 0:
            raise RuntimeError(f"{op}: elements of output_size must be greater than or "
                               f"equal to 0 but received {int(v)}")
        out.append(int(v))
    return tuple(out)


def _adaptive_args(op, nd, input, output_size):
    input = _check[op](input)
    _check_input(input.shape, nd, op)
    return input, _output_size(op, input, output_size, nd)


def adaptive_avg_pool2d(input, output_size):
    """Average over ``output_size`` windows ``[floor(o H / OH), ceil((o+1) H / OH))``
    of ``(N, C, H, W)`` or ``(C, H, W)`` input (PyTorch's adaptive windows).

    Args:
        output_size (int or (int or None, int or None)): None keeps that input size.

    Raises:
        NotImplementedError: integer input.  TypeError: non-int sizes.
        RuntimeError: a negative size, an input that is not 3-D/4-D.
    """
    input, out = _adaptive_args("adaptive_avg_pool2d", 2, input, output_size)
    return _adaptive(input, out)


def adaptive_avg_pool1d(input, output_size):
    """``adaptive_avg_pool2d`` for ``(N, C, L)`` or ``(C, L)`` input."""
    input, out = _adaptive_args("adaptive_avg_pool1d", 1, input, output_size)
    return _adaptive(input, out)


def adaptive_avg_pool_backward(grad_output, input_size):
    """The VJP of adaptive average pooling (1 or 2 spatial dims by
    ``len(input_size)``): each ``grad_output`` element divided by its window's size
    and spread over the window."""
    grad_output, size = _check_adaptive_avg_pool_backward(grad_output, input_size)
    nd = len(size)
    if nd not in (1, 2) or grad_output.ndim < nd + 1 or any(s < 1 for s in size):
        raise RuntimeError(f"adaptive_avg_pool_backward(): input_size must be 1 or 2 "
                           f"positive sizes and grad_output at least {nd + 1}-D, got "
                           f"{list(size)} and {list(grad_output.shape)}")
    return _adaptive_b(grad_output, size)


def _adaptive_max(op, nd, input, output_size, return_indices):
    input, out = _adaptive_args(op, nd, input, output_size)
    windows = tuple(_adaptive_windows(L, o) + (1,) for L, o in zip(input.shape[-nd:], out))
    idx = _max_indices(input, windows)
    y = _gather(input, idx, nd)
    return (y, idx) if return_indices else y


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max over PyTorch's adaptive windows (see ``adaptive_avg_pool2d``); indices,
    ties and NaN as ``max_pool2d``.

    Returns:
        Tensor, or ``(values, indices)`` with ``return_indices=True``.
    """
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """``adaptive_max_pool2d`` for ``(N, C, L)`` or ``(C, L)`` input."""
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)

