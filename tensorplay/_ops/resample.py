"""Padding and interpolation primitives (``torch.nn.functional.pad`` and
``interpolate``).

Every op here is linear in its input and is a pair of adjoint primitives, each
the other's VJP, each its own JVP on the tangent (so every order of derivative
is exact):

* ``pad`` / ``pad_backward``.  ``constant`` mode copies the overlap of input and
  output with numpy slices (any number of padded dims; memcpy speed, nothing for
  a kernel to win); ``reflect``, ``replicate`` and ``circular`` gather through one
  index map per padded dim (``_kernels/resample.pyx``), and their backward
  scatter-adds through the same maps.  Negative padding crops, as PyTorch.
* ``upsample_nearest`` / ``_backward``: a gather through PyTorch's nearest maps
  (``nearest_idx``: identity for equal sizes, ``o >> 1`` for doubling, else
  ``min(floor(o * scale), L - 1)`` with the scale in float32, as its CPU kernel).
* ``upsample_linear`` / ``_backward``: linear (3-D input) and bilinear (4-D)
  interpolation, with PyTorch's ``area_pixel_compute_source_index`` (align_corners,
  half-pixel centres clamped at 0 otherwise), computed in the input's dtype.

The pad tuple is PyTorch's: ``(left, right)`` of the last dim first, then the
dim before it, and so on.
"""
import functools
import math
import numbers

import numpy as np

from tensorplay._kernels import resample as _kr
from tensorplay._ops import _batching as _B
from tensorplay._ops._common import CONFIG
from tensorplay._ops._validate import Signature, SizesArg, TensorArg, declare
from tensorplay._ops.registry import apply, defop
from tensorplay._pool import empty as pool_empty
from tensorplay._tensor import Tensor

__all__ = ["pad", "interpolate", "pad_backward", "upsample_nearest_backward",
           "upsample_linear_backward"]
INTERNAL = tuple(__all__)      # torch.nn.functional names, and derivative kernels

_I64 = np.dtype(np.int64)
_MODES = ("constant", "reflect", "replicate", "circular")

_check_pad = declare(Signature("pad", TensorArg("input", "fib"), SizesArg("pad")))
_check_pad_backward = declare(Signature(
    "pad_backward", TensorArg("grad_output", "f", exc=NotImplementedError),
    SizesArg("input_size"), SizesArg("pad")))
_check_interpolate = declare(Signature(
    "interpolate", TensorArg("input", "f", exc=NotImplementedError)))
_check_up_backward = {name: declare(Signature(
    name, TensorArg("grad_output", "f", exc=NotImplementedError), SizesArg("input_size")))
    for name in ("upsample_nearest_backward", "upsample_linear_backward")}


def _frozen(*arrays):
    for a in arrays:
        a.setflags(write=False)
    return arrays


_ZERO = _frozen(np.zeros(1, _I64))[0]


def _planes(shape, k):
    """The (P, D, H, W) view of an array whose last ``k <= 3`` dims are mapped."""
    sp = tuple(shape[len(shape) - k:])
    return (math.prod(shape[:len(shape) - k]),) + (1,) * (3 - k) + sp


# ---------------------------------------------------------------- pad
def _pairs(pad, ndim):
    """[(dim, before, after)] from PyTorch's pad tuple (last dim first)."""
    return [(ndim - 1 - i, pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]


def _padded_shape(shape, pad):
    out = list(shape)
    for dim, a, b in _pairs(pad, len(shape)):
        out[dim] += a + b
    return tuple(out)


def _overlap(shape, pad):
    """Slices (source in the input, destination in the output) of the copied part,
    or None when nothing overlaps."""
    src = [slice(None)] * len(shape)
    dst = [slice(None)] * len(shape)
    for dim, a, b in _pairs(pad, len(shape)):
        L = shape[dim]
        s0, s1 = max(-a, 0), L - max(-b, 0)
        if s1 <= s0:
            return None
        src[dim] = slice(s0, s1)
        dst[dim] = slice(max(a, 0), max(a, 0) + s1 - s0)
    return tuple(src), tuple(dst)


@functools.lru_cache(maxsize=512)
def _pad_map(L, a, b, mode):
    j = np.arange(L + a + b, dtype=_I64) - a
    if mode == "reflect":
        j = np.abs(j)
        j = np.where(j >= L, 2 * (L - 1) - j, j)
    elif mode == "replicate":
        j = np.clip(j, 0, L - 1)
    else:
        # circular: PyTorch crops first (negative pads), then wraps the cropped
        # dim: x[c0:c1] with (i - max(a, 0)) mod (c1 - c0)
        c0, c1 = max(-a, 0), L - max(-b, 0)
        j = c0 + (np.arange(L + a + b, dtype=_I64) - max(a, 0)) % (c1 - c0)
    return _frozen(j)[0]


def _maps(sizes, pad, mode):
    """Index maps (md, mh, mw) for the last len(pad)//2 dims of spatial ``sizes``."""
    k = len(pad) // 2
    maps = [_pad_map(sizes[len(sizes) - 1 - i], pad[2 * i], pad[2 * i + 1], mode)
            for i in range(k)][::-1]
    return [_ZERO] * (3 - k) + maps


def _pad_fwd(x, pad, mode, value):
    shape = _padded_shape(x.shape, pad)
    out = pool_empty(shape, x.dtype)
    if mode == "constant":
        if any(a > 0 or b > 0 for a, b in zip(pad[::2], pad[1::2])):
            out.fill(value)
        ov = _overlap(x.shape, pad)
        if ov is not None:
            out[ov[1]] = x[ov[0]]
        return out
    k = len(pad) // 2
    if out.size:
        xc = np.ascontiguousarray(x)
        md, mh, mw = _maps(x.shape[x.ndim - k:], pad, mode)
        _kr.index_map_fwd(xc.reshape(_planes(xc.shape, k)), md, mh, mw,
                          out.reshape(_planes(shape, k)), CONFIG.num_threads)
    return out


def _pad_bwd_fwd(g, input_size, pad, mode):
    k = len(input_size)
    shape = g.shape[:g.ndim - k] + tuple(input_size)
    out = pool_empty(shape, g.dtype)
    if mode == "constant":
        out.fill(0)
        ov = _overlap(shape, pad)
        if ov is not None:
            src, dst = ov
            out[src] = g[dst]
        return out
    if out.size:
        gc = np.ascontiguousarray(g)
        md, mh, mw = _maps(tuple(input_size), pad, mode)
        _kr.index_map_bwd(gc.reshape(_planes(gc.shape, k)), md, mh, mw,
                          out.reshape(_planes(shape, k)), CONFIG.num_threads)
    return out


def _pad(x, pad, mode, value=0.0):
    return apply(_pad_prim, (x,), {"pad": pad, "mode": mode, "value": value})


def _pad_b(g, input_size, pad, mode):
    return apply(_pad_backward_prim, (g,), {"input_size": tuple(input_size), "pad": pad,
                                            "mode": mode})


# y = M x (a selection, plus a constant outside for mode='constant'): VJP M^T g,
# JVP M t (the constant has no tangent).
_pad_prim = defop(
    "pad", _pad_fwd,
    vjp=(lambda g, out, x, pad, mode, value: _pad_b(g, x.shape[x.ndim - len(pad) // 2:],
                                                    pad, mode),),
    jvp=lambda ts, out, x, pad, mode, value: _pad(ts[0], pad, mode),
    batch=_B.leading_rule)
_pad_backward_prim = defop(
    "pad_backward", _pad_bwd_fwd,
    vjp=(lambda gb, out, g, input_size, pad, mode: _pad(gb, pad, mode),),
    jvp=lambda ts, out, g, input_size, pad, mode: _pad_b(ts[0], input_size, pad, mode),
    batch=_B.leading_rule)


def _check_pad_args(op, x, pad, mode, value):
    if mode not in _MODES:
        raise NotImplementedError(f"{op}(): mode must be one of {list(_MODES)}, got {mode!r}")
    if len(pad) % 2:
        raise RuntimeError(f"{op}(): Padding length must be divisible by 2, got {len(pad)}")
    k = len(pad) // 2
    if len(pad) > 2 * x.ndim:
        raise RuntimeError(f"{op}(): Padding length should be less than or equal to two "
                           f"times the input dimension but got padding length {len(pad)} "
                           f"and input of dimension {x.ndim}")
    if mode != "constant":
        if value is not None and value != 0:
            raise RuntimeError(f"{op}(): Padding mode \"{mode}\" doesn't take in value "
                               f"argument")
        if not 1 <= k <= 3 or x.ndim not in (k + 1, k + 2):
            raise NotImplementedError(
                f"{op}(): Only 2D, 3D, 4D, 5D padding with non-constant padding are "
                f"supported for now (mode {mode!r}: {k} padded dims of a {x.ndim}-D input; "
                f"pad the last 1, 2 or 3 dims of an input with 1 or 2 more dims)")
    shape = x.shape
    for dim, a, b in _pairs(pad, x.ndim):
        L = shape[dim]
        if L + a + b < 0 or (mode != "constant" and L + a + b < 1):
            raise RuntimeError(f"{op}(): The input size {L}, plus negative padding {a} and "
                               f"{b} resulted in a negative output size, which is invalid. "
                               f"Check dimension {dim} of your input.")
        if mode == "reflect" and (a >= L or b >= L):
            raise RuntimeError(f"{op}(): Argument #4: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({a}, {b}) "
                               f"at dimension {dim} of input {list(shape)}")
        if mode == "circular" and (a > L or b > L):
            raise RuntimeError(f"{op}(): Padding value causes wrapping around more than once "
                               f"(padding ({a}, {b}) of dimension {dim} of size {L})")
        if mode in ("replicate", "circular") and L == 0:
            raise RuntimeError(f"{op}(): mode {mode!r} needs a non-empty dimension {dim}, "
                               f"got input of shape {list(shape)}")


def pad(input, pad, mode="constant", value=None):
    """Pad (or, with negative sizes, crop) the last ``len(pad) // 2`` dims.

    Args:
        input (Tensor): any dtype for ``'constant'`` (only float tensors carry
            gradients); float32/float64 for the other modes.
        pad (sequence of int): ``(left, right)`` of the last dim, then of the dim
            before it, ... (PyTorch's order); negative entries crop.
        mode (str): ``'constant'`` (default; any number of dims), ``'reflect'``
            (mirror without the edge), ``'replicate'`` (repeat the edge) or
            ``'circular'`` (wrap); the last three pad 1-3 trailing dims of an input
            with 1 or 2 more dims (batched or not).
        value (float, optional): the fill of ``'constant'`` mode (default 0).

    Raises:
        TypeError: non-int pad entries.  NotImplementedError: an unknown mode, or a
        non-constant mode on an unsupported number of dims.  RuntimeError: an odd
        pad length, more pairs than dims, a negative output size, reflect padding
        >= the dim's size, circular padding > the dim's size, a value with a
        non-constant mode.
    """
    input, pad_ = _check_pad(input, pad)
    _check_pad_args("pad", input, pad_, mode, value)
    if mode != "constant" and input._data.dtype.kind != "f":
        raise NotImplementedError(f"pad(): mode {mode!r} is implemented for float32 and "
                                  f"float64, got {input.dtype}")
    v = 0.0 if value is None else value
    if not isinstance(v, numbers.Real):
        raise TypeError(f"pad(): argument 'value' must be a number, not {type(v).__name__}")
    if mode == "constant" and input._data.dtype.kind != "f":
        if isinstance(v, float) and not float(v).is_integer():
            raise RuntimeError(f"pad(): value {v} cannot be converted to {input.dtype} "
                               f"without overflow or rounding")
        v = int(v)
    else:
        v = float(v)
    return _pad(input, pad_, mode, v)


def pad_backward(grad_output, input_size, pad, mode="constant"):
    """The VJP of ``pad``: ``grad_output`` summed back onto an input whose padded
    dims have sizes ``input_size`` (the last ``len(pad) // 2`` dims).

    Raises:
        RuntimeError: a ``grad_output`` whose padded dims are not ``input_size``
        padded; as ``pad`` otherwise.
    """
    grad_output, size, pad_ = _check_pad_backward(grad_output, input_size, pad)
    k = len(pad_) // 2
    if len(size) != k or grad_output.ndim < k:
        raise RuntimeError(f"pad_backward(): input_size must give the {k} padded dims, got "
                           f"{list(size)} for a {grad_output.ndim}-D grad_output")
    like = np.broadcast_to(np.empty((), grad_output._data.dtype),
                           tuple(grad_output.shape[:grad_output.ndim - k]) + size)
    _check_pad_args("pad_backward", Tensor._wrap(like), pad_, mode, None)
    if _padded_shape(like.shape, pad_) != tuple(grad_output.shape):
        raise RuntimeError(f"pad_backward(): grad_output of shape {list(grad_output.shape)}, "
                           f"the padded input has {list(_padded_shape(like.shape, pad_))}")
    return _pad_b(grad_output, size, pad_, mode)


from tensorplay._ops._interpolate import (interpolate, upsample_linear_backward,  # noqa: E402
                                          upsample_nearest_backward)
