"""``interpolate`` (modes 'nearest', 'linear', 'bilinear'): part of the resample
family (``tensorplay/_ops/resample.py`` exports these names and describes the
primitives).  Argument handling follows ``torch.nn.functional.interpolate``
line by line: the input is (N, C, L) or (N, C, H, W); exactly one of ``size`` and
``scale_factor``; ``recompute_scale_factor=True`` computes the output size as
``floor(L * scale)`` and then forgets the scale (the kernels use L / out);
otherwise a given scale factor reaches the index computation as ``1 / scale``.
"""
import functools
import math
import numbers

import numpy as np

from tensorplay._kernels import resample as _kr
from tensorplay._ops import _batching as _B
from tensorplay._ops._common import CONFIG
from tensorplay._ops.registry import apply, defop
from tensorplay._ops.resample import (_I64, _ZERO, _check_interpolate, _check_up_backward,
                                      _frozen, _planes)
from tensorplay._pool import empty as pool_empty


def _scale_of(L, O, scale, dtype):
    """PyTorch's compute_scales_value: 1 / scale when one is given (> 0), else L / O,
    in ``dtype``."""
    if scale is not None and scale > 0:
        return dtype(1.0 / scale)
    return dtype(L) / dtype(O)


@functools.lru_cache(maxsize=512)
def _nearest_map(L, O, scale):
    """PyTorch's nearest_idx (UpSample.h) for one dim."""
    o = np.arange(O, dtype=_I64)
    if O == L:
        m = o
    elif O == 2 * L:
        m = o >> 1
    else:
        s = _scale_of(L, O, scale, np.float32)
        m = np.minimum(np.floor(o.astype(np.float32) * s).astype(_I64), L - 1)
    return _frozen(m)[0]


@functools.lru_cache(maxsize=512)
def _linear_taps(L, O, align_corners, scale, dtype):
    """(i0, i1, lambda1) per output index: area_pixel_compute_source_index and
    guard_index_and_lambda of PyTorch's CPU kernel, in the input's dtype."""
    t = np.dtype(dtype).type
    o = np.arange(O).astype(t)
    if align_corners:
        s = t(L - 1) / t(O - 1) if O > 1 else t(0)
        src = s * o
    else:
        s = _scale_of(L, O, scale, t)
        src = np.maximum(s * (o + t(0.5)) - t(0.5), t(0))
    i0 = np.minimum(np.floor(src).astype(_I64), L - 1)
    lam = np.clip(src - i0.astype(t), 0, 1).astype(np.float64)
    i1 = i0 + (i0 < L - 1)
    return _frozen(i0, i1, lam)


_ZLAM = _frozen(np.zeros(1))[0]


def _nearest_run(a, input_size, output_size, scales, bwd):
    k = len(input_size)
    maps = [_nearest_map(L, O, s) for L, O, s in zip(input_size, output_size, scales)]
    md, mh, mw = [_ZERO] * (3 - k) + maps
    lead = a.shape[:a.ndim - k]
    shape = lead + tuple(input_size if bwd else output_size)
    out = pool_empty(shape, a.dtype)
    if out.size:
        ac = np.ascontiguousarray(a)
        (_kr.index_map_bwd if bwd else _kr.index_map_fwd)(
            ac.reshape(_planes(ac.shape, k)), md, mh, mw, out.reshape(_planes(shape, k)),
            CONFIG.num_threads)
    return out


def _linear_run(a, input_size, output_size, align_corners, scales, bwd):
    k = len(input_size)
    taps = [_linear_taps(L, O, align_corners, s, a.dtype.type)
            for L, O, s in zip(input_size, output_size, scales)]
    if k == 1:
        taps = [(_ZERO, _ZERO, _ZLAM)] + taps
    (h0, h1, lh), (w0, w1, lw) = taps
    lead = a.shape[:a.ndim - k]
    shape = lead + tuple(input_size if bwd else output_size)
    out = pool_empty(shape, a.dtype)
    if out.size:
        ac = np.ascontiguousarray(a)
        P = math.prod(lead)
        (_kr.linear_bwd if bwd else _kr.linear_fwd)(
            ac.reshape((P,) + ((1,) if k == 1 else ()) + ac.shape[ac.ndim - k:]),
            h0, h1, lh, w0, w1, lw, out.reshape((P,) + ((1,) if k == 1 else ()) +
                                                shape[len(shape) - k:]),
            CONFIG.num_threads)
    return out


def _spatial(x, k):
    return tuple(x.shape[x.ndim - k:])


# y = S x (a selection / a fixed blend): VJP S^T g, JVP S t.
_nearest = defop(
    "upsample_nearest",
    lambda x, output_size, scales: _nearest_run(x, _spatial(x, len(output_size)),
                                                output_size, scales, False),
    vjp=(lambda g, out, x, output_size, scales:
         _nearest_b(g, _spatial(x, len(output_size)), output_size, scales),),
    jvp=lambda ts, out, x, output_size, scales: _near(ts[0], output_size, scales),
    batch=_B.leading_rule)
_nearest_backward = defop(
    "upsample_nearest_backward",
    lambda g, input_size, output_size, scales: _nearest_run(g, input_size, output_size,
                                                            scales, True),
    vjp=(lambda gb, out, g, input_size, output_size, scales:
         _near(gb, output_size, scales),),
    jvp=lambda ts, out, g, input_size, output_size, scales:
        _nearest_b(ts[0], input_size, output_size, scales),
    batch=_B.leading_rule)
_linear = defop(
    "upsample_linear",
    lambda x, output_size, align_corners, scales: _linear_run(
        x, _spatial(x, len(output_size)), output_size, align_corners, scales, False),
    vjp=(lambda g, out, x, output_size, align_corners, scales:
         _linear_b(g, _spatial(x, len(output_size)), output_size, align_corners, scales),),
    jvp=lambda ts, out, x, output_size, align_corners, scales:
        _lin(ts[0], output_size, align_corners, scales),
    batch=_B.leading_rule)
_linear_backward = defop(
    "upsample_linear_backward",
    lambda g, input_size, output_size, align_corners, scales: _linear_run(
        g, input_size, output_size, align_corners, scales, True),
    vjp=(lambda gb, out, g, input_size, output_size, align_corners, scales:
         _lin(gb, output_size, align_corners, scales),),
    jvp=lambda ts, out, g, input_size, output_size, align_corners, scales:
        _linear_b(ts[0], input_size, output_size, align_corners, scales),
    batch=_B.leading_rule)


def _near(x, output_size, scales):
    return apply(_nearest, (x,), {"output_size": output_size, "scales": scales})


def _nearest_b(g, input_size, output_size, scales):
    return apply(_nearest_backward, (g,), {"input_size": tuple(input_size),
                                           "output_size": output_size, "scales": scales})


def _lin(x, output_size, align_corners, scales):
    return apply(_linear, (x,), {"output_size": output_size, "align_corners": align_corners,
                                 "scales": scales})


def _linear_b(g, input_size, output_size, align_corners, scales):
    return apply(_linear_backward, (g,), {"input_size": tuple(input_size),
                                          "output_size": output_size,
                                          "align_corners": align_corners, "scales": scales})


# ---------------------------------------------------------------- public functions
def _real(v, name):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        raise TypeError(f"interpolate(): argument '{name}' must be a float or a tuple of "
                        f"floats, not {type(v).__name__}")
    return float(v)


def _sizes(input, size, scale_factor, recompute_scale_factor, k):
    """(output_size, scales) as torch.nn.functional.interpolate computes them."""
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        items = list(size) if isinstance(size, (list, tuple)) else [size] * k
        if len(items) != k:
            raise ValueError(f"Input and output must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of "
                             f"{spatial} and output size of {list(items)}. Please provide "
                             f"input tensor in (N, C, d1, d2, ...,dK) format and output "
                             f"size in (o1, o2, ...,oK) format.")
        for v in items:
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"interpolate(): size must be an int or a tuple of ints, "
                                f"got {size!r}")
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit "
                             "size.")
        return tuple(int(v) for v in items), (None,) * k
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    items = list(scale_factor) if isinstance(scale_factor, (list, tuple)) else [scale_factor] * k
    if len(items) != k:
        raise ValueError(f"Input and scale_factor must have the same number of spatial "
                         f"dimensions, but got input with spatial dimensions of {spatial} "
                         f"and scale_factor of shape {list(items)}. Please provide input "
                         f"tensor in (N, C, d1, d2, ...,dK) format and scale_factor in "
                         f"(s1, s2, ...,sK) format.")
    scales = tuple(_real(v, "scale_factor") for v in items)
    out = tuple(math.floor(float(L) * s) for L, s in zip(spatial, scales))
    return out, ((None,) * k if recompute_scale_factor else scales)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize (N, C, L) or (N, C, H, W) input to ``size`` or by ``scale_factor``.

    Args:
        input (Tensor): float32 or float64, 3-D or 4-D (always batched, as PyTorch).
        size (int or tuple of int, optional): the output's spatial size.
        scale_factor (float or tuple of float, optional): multiplier of the spatial
            size (output ``floor(L * scale)``); exactly one of size and scale_factor.
        mode (str): ``'nearest'`` (PyTorch's legacy nearest: ``floor(o * L / O)``),
            ``'linear'`` (3-D) or ``'bilinear'`` (4-D).
        align_corners (bool, optional): linear modes only (default False): map the
            corner pixels' centres onto each other, else half-pixel centres.
        recompute_scale_factor (bool, optional): compute the kernels' scale from the
            output size instead of using ``scale_factor``.
        antialias (bool): must be False (not implemented).

    Raises:
        ValueError: both or neither of size and scale_factor, lengths that do not
        match the spatial dims, align_corners with 'nearest', recompute_scale_factor
        with a size.  NotImplementedError: another mode, another number of dims,
        antialias.  RuntimeError: an input or output size below 1.
    """
    input = _check_interpolate(input)
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    if not isinstance(align_corners, (bool, np.bool_, type(None))):
        raise TypeError(f"interpolate(): align_corners must be bool, not "
                        f"{type(align_corners).__name__}")
    if antialias:
        raise NotImplementedError("interpolate(): antialias=True is not implemented in "
                                  "tensorplay")
    nd = input.ndim
    if nd == 3 and mode == "bilinear":
        raise NotImplementedError("Got 3D input, but bilinear mode needs 4D input")
    if nd == 4 and mode == "linear":
        raise NotImplementedError("Got 4D input, but linear mode needs 3D input")
    if mode not in ("nearest", "linear", "bilinear") or nd not in (3, 4):
        raise NotImplementedError(
            f"Input Error: tensorplay supports 3D and 4D input for the modes nearest | "
            f"linear | bilinear (got {nd}D, mode {mode!r})")
    k = nd - 2
    if input.shape[1] == 0:
        raise RuntimeError(f"interpolate(): Non-empty {nd}D data tensor expected but got a "
                           f"tensor with sizes {list(input.shape)}")
    out, scales = _sizes(input, size, scale_factor, recompute_scale_factor, k)
    spatial = tuple(input.shape[2:])
    if any(L < 1 for L in spatial) or any(o < 1 for o in out):
        raise RuntimeError(f"interpolate(): Input and output sizes should be greater than 0, "
                           f"but got input {list(spatial)} output {list(out)}")
    if mode == "nearest":
        return _near(input, out, scales)
    return _lin(input, out, bool(align_corners), scales)


def _backward_args(op, grad_output, input_size, output_size, scales):
    grad_output, size = _check_up_backward[op](grad_output, input_size)
    k = len(size)
    if k not in (1, 2) or grad_output.ndim != k + 2 or any(s < 1 for s in size):
        raise RuntimeError(f"{op}(): input_size must be 1 or 2 positive sizes and "
                           f"grad_output (N, C, *output_size), got {list(size)} and "
                           f"{list(grad_output.shape)}")
    out = tuple(grad_output.shape[2:]) if output_size is None else tuple(output_size)
    if out != tuple(grad_output.shape[2:]):
        raise RuntimeError(f"{op}(): output_size {list(out)} but grad_output of shape "
                           f"{list(grad_output.shape)}")
    sc = (None,) * k if scales is None else tuple(
        None if s is None else _real(s, "scales") for s in scales)
    if len(sc) != k:
        raise RuntimeError(f"{op}(): {len(sc)} scales for {k} spatial dims")
    return grad_output, size, out, sc


def upsample_nearest_backward(grad_output, input_size, output_size=None, scales=None):
    """The VJP of nearest interpolation: each ``grad_output`` element added to the
    input element it was read from (``input_size``: the input's spatial shape).

    Raises:
        RuntimeError: shapes that do not match.
    """
    g, size, out, sc = _backward_args("upsample_nearest_backward", grad_output, input_size,
                                      output_size, scales)
    return _nearest_b(g, size, out, sc)


def upsample_linear_backward(grad_output, input_size, output_size=None, align_corners=False,
                             scales=None):
    """The VJP of linear / bilinear interpolation: each ``grad_output`` element
    spread over its taps with the forward's weights.

    Raises:
        RuntimeError: shapes that do not match.
    """
    g, size, out, sc = _backward_args("upsample_linear_backward", grad_output, input_size,
                                      output_size, scales)
    return _linear_b(g, size, out, bool(align_corners), sc)
