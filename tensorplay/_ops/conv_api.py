"""Public convolutions: conv1d, conv2d, conv_transpose1d, conv_transpose2d (also
``tensorplay.conv2d`` etc., as ``torch.conv2d``), ``nn.functional.unfold`` / ``fold``
and ``conv2d_weight`` / ``conv2d_input`` (``torch.nn.grad``'s names).

PyTorch's signatures, defaults and errors.  Each function checks its arguments
(the exception type PyTorch raises, the function, the argument, expected vs
given) and calls a primitive of ``conv.py``: 1-D convolutions are the 2-D
primitives on a height-1 image (views in and out), unbatched inputs get a batch
dim of 1, ``padding='same'`` becomes explicit (asymmetric for even kernels, as
PyTorch pads: the extra row or column at the bottom or right), and the padding is
made exact (see ``conv.py``).
"""
import numbers

import numpy as np

from tensorplay._ops import conv as _c
from tensorplay._ops._validate import (IntArg, Signature, SizesArg, TensorArg, declare)
from tensorplay._ops.registry import apply
from tensorplay._tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"]
# F.unfold / F.fold are not torch.unfold (there is none) nor Tensor.unfold (another
# op); torch.nn.grad's functions are not top-level either
INTERNAL = ["nn_unfold", "nn_fold", "conv2d_weight", "conv2d_input"]


def _conv_sig(op):
    return declare(Signature(op, TensorArg("input", "f", exc=RuntimeError),
                             TensorArg("weight", "f", exc=RuntimeError),
                             same_dtype=("input", "weight")))


_check = {op: _conv_sig(op) for op in ("conv1d", "conv2d", "conv_transpose1d",
                                        "conv_transpose2d")}
_check_unfold = declare(Signature("unfold", TensorArg("input", "f", exc=RuntimeError),
                                  public="nn_unfold"))
_check_fold = declare(Signature("fold", TensorArg("input", "f", exc=RuntimeError),
                                SizesArg("output_size"), public="nn_fold"))
_check_weight = declare(Signature(
    "conv2d_weight", TensorArg("input", "f", exc=RuntimeError), SizesArg("weight_size"),
    TensorArg("grad_output", "f", exc=RuntimeError), same_dtype=("input", "grad_output")))
_check_input = declare(Signature(
    "conv2d_input", SizesArg("input_size"), TensorArg("weight", "f", exc=RuntimeError),
    TensorArg("grad_output", "f", exc=RuntimeError), same_dtype=("weight", "grad_output")))


# ---------------------------------------------------------------- argument helpers
def _ints(op, name, v, nd, lo=None, what=None):
    """An int or a sequence of ``nd`` ints (PyTorch's IntArrayRef of size nd)."""
    if type(v) is int and (lo is None or v >= lo):
        return (v,) * nd
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Integral, tuple, list)):
        raise TypeError(f"{op}(): argument '{name}' must be an int or a tuple of {nd} ints, "
                        f"not {type(v).__name__}")
    vals = (v,) * nd if isinstance(v, numbers.Integral) else tuple(v)
    for x in vals:
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Integral):
            raise TypeError(f"{op}(): argument '{name}' must be a tuple of ints, but found "
                            f"an element of type {type(x).__name__}")
    if len(vals) == 1 and nd > 1:
        vals = vals * nd
    if len(vals) != nd:
        raise RuntimeError(f"{op}(): expected {name} to be a single integer value or a "
                           f"list of {nd} values to match the convolution dimensions, but "
                           f"got {name}={list(vals)}")
    vals = tuple(int(x) for x in vals)
    if lo is not None and any(x < lo for x in vals):
        what = what or f"{name} must be {'positive' if lo == 1 else 'non-negative'}"
        raise RuntimeError(f"{op}(): {what} (got {name}={list(vals)})")
    return vals


def _dtype_of_bias(op, bias, x, o):
    if bias is None:
        return None
    if not isinstance(bias, Tensor):
        raise TypeError(f"{op}(): argument 'bias' must be Tensor or None, not "
                        f"{type(bias).__name__}")
    if bias._data.ndim != 1 or bias._data.shape[0] != o:
        raise RuntimeError(f"{op}(): expected bias to be 1-dimensional with {o} elements, "
                           f"but got bias of size {list(bias._data.shape)} instead")
    if bias._data.dtype != x._data.dtype:
        raise RuntimeError(f"{op}(): input type ({x.dtype}) and bias type ({bias.dtype}) "
                           f"should be the same")
    return bias


def _batch(op, x, w, nd):
    """input (N, C, *spatial) or unbatched (C, *spatial): (4-D-ready input, unbatched)."""
    xn, wn = x._data.ndim, w._data.ndim
    if wn != nd + 2:
        raise RuntimeError(f"{op}(): expected weight to be {nd + 2}-dimensional "
                           f"(out_channels, in_channels/groups, {'kW' if nd == 1 else 'kH, kW'}),"
                           f" but got weight of size {list(w._data.shape)}")
    if xn not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{op}, but got input of size: {list(x._data.shape)}")
    unbatched = xn == nd + 1
    return (x.unsqueeze(0) if unbatched else x), unbatched


def _exact(op, size, k, s, p0, p1, d, sizes, ks):
    """The bottom/right pad with the rows no window reaches taken away (exact geometry)."""
    span = size + p0 + p1 - d * (k - 1) - 1
    if span < 0:
        padded = " x ".join(str(v) for v in sizes)
        raise RuntimeError(f"{op}(): calculated padded input size per channel: ({padded}). "
                           f"Kernel size: ({' x '.join(str(v) for v in ks)}). Kernel size "
                           f"can't be greater than actual input size")
    return p1 - span % s


def _as2d(vals, one):
    """1-D geometry as 2-D: height 1 (``one`` for the height entry)."""
    return (one,) + vals if len(vals) == 1 else vals


_GEOMETRY = {}          # (op, shapes, geometry arguments) -> the primitive's params


def _conv(op, nd, input, weight, bias, stride, padding, dilation, groups):
    x, w = _check[op](input, weight)
    x, unbatched = _batch(op, x, w, nd)
    key = (op, x._data.shape, w._data.shape, stride, padding, dilation, groups)
    try:
        params = _GEOMETRY.get(key)
    except TypeError:               # a list among the arguments: not cached
        key, params = None, None
    if params is None:
        params = _conv_geometry(op, nd, x._data.shape, w._data.shape, stride, padding,
                                dilation, groups)
        if key is not None:
            if len(_GEOMETRY) >= 512:
                _GEOMETRY.clear()
            _GEOMETRY[key] = params
    b = _dtype_of_bias(op, bias, x, w._data.shape[0])
    if nd == 1:
        x = x.unsqueeze(2)
        w = w.unsqueeze(2)
    out = _c._conv(x, w, b, **params)
    if nd == 1:
        out = out.squeeze(2)
    return out.squeeze(0) if unbatched else out


def _positive_kernel(op, ks):
    """PyTorch: "kernel size should be greater than zero" (a weight with an empty
    spatial dim would otherwise give a silent all-bias output)."""
    if any(k <= 0 for k in ks):
        raise RuntimeError(f"{op}(): kernel size should be greater than zero, but got a "
                           f"weight with kernel size {list(ks)}")


def _conv_geometry(op, nd, xs, ws, stride, padding, dilation, groups):
    """Check the geometry arguments against the (batched) shapes and return the
    2-D primitive's params (exact padding, see conv.py)."""
    stride = _ints(op, "stride", stride, nd, lo=1, what="non-positive stride is not supported")
    dilation = _ints(op, "dilation", dilation, nd, lo=1,
                     what="dilation should be greater than zero")
    if isinstance(groups, (bool, np.bool_)) or not isinstance(groups, numbers.Integral):
        raise TypeError(f"{op}(): argument 'groups' must be int, not {type(groups).__name__}")
    if groups <= 0:
        raise RuntimeError(f"{op}(): non-positive groups is not supported, got groups={groups}")
    ks = ws[2:]
    _positive_kernel(op, ks)
    if isinstance(padding, str):
        if padding == "valid":
            pads = [(0, 0)] * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError(f"{op}(): padding='same' is not supported for strided "
                                   f"convolutions, got stride={list(stride)}")
            pads = []
            for k, d in zip(ks, dilation):      # PyTorch: the odd row/column at the end
                total = d * (k - 1)
                pads.append((total // 2, total - total // 2))
        else:
            raise RuntimeError(f"{op}(): invalid padding string {padding!r}, should be one "
                               f"of 'valid' or 'same'")
    else:
        pads = [(p, p) for p in _ints(op, "padding", padding, nd, lo=0,
                                      what="negative padding is not supported")]
    o = ws[0]
    if o % groups:
        raise RuntimeError(f"{op}(): given groups={groups}, expected weight to be divisible "
                           f"by {groups} at dimension 0, but got weight of size {list(ws)} "
                           f"instead")
    if xs[1] != ws[1] * groups:
        raise RuntimeError(f"{op}(): given groups={groups}, weight of size {list(ws)}, "
                           f"expected input{list(xs)} to have {ws[1] * groups} channels, "
                           f"but got {xs[1]} channels instead")
    padded = [n + p0 + p1 for n, (p0, p1) in zip(xs[2:], pads)]
    dks = [d * (k - 1) + 1 for k, d in zip(ks, dilation)]
    ends = [_exact(op, n, k, s, p0, p1, d, padded, dks)
            for n, k, s, (p0, p1), d in zip(xs[2:], ks, stride, pads, dilation)]
    if nd == 1:
        pad4 = (0, 0, pads[0][0], ends[0])
    else:
        pad4 = (pads[0][0], ends[0], pads[1][0], ends[1])
    return {"stride": _as2d(stride, 1), "padding": pad4, "dilation": _as2d(dilation, 1),
            "groups": int(groups)}


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation, as PyTorch) of an (N, C, H, W) or unbatched
    (C, H, W) input with a weight (O, C / groups, kH, kW):

        out[n, o, i, j] = bias[o] + sum_{c, p, q} weight[o, c, p, q]
                          * input[n, g C/groups + c, i sH - padT + p dH, j sW - padL + q dW]

    (g = o // (O / groups); zero outside the input), of shape (N, O, Ho, Wo) with
    ``Ho = floor((H + 2 padH - dH (kH - 1) - 1) / sH) + 1``.

    Args:
        input (Tensor): float32 or float64.
        weight (Tensor): the same dtype.
        bias (Tensor, optional): (O,), the same dtype.
        stride, dilation (int or tuple of 2 ints): >= 1.  Default 1.
        padding (int, tuple of 2 ints, 'valid' or 'same'): zeros on both sides;
            'same' keeps the input size (stride 1 only) and pads an even total at
            the bottom/right one more than at the top/left, as PyTorch.  Default 0.
        groups (int): >= 1, dividing O; C must be weight.shape[1] * groups.

    Raises:
        TypeError: a non-Tensor input/weight/bias, non-integer geometry.
        RuntimeError: integer dtypes, dtypes that differ, wrong number of dims, a
            channel count that does not match groups, non-positive stride,
            dilation or groups, negative padding, 'same' with a stride, a kernel
            larger than the padded input, a bias of the wrong shape, an unknown
            padding string.
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution of an (N, C, L) or unbatched (C, L) input with a weight
    (O, C / groups, k): ``conv2d`` on a height-1 image (see there for the formula,
    arguments and errors; geometry arguments are an int or a 1-tuple)."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def _conv_t(op, nd, input, weight, bias, stride, padding, output_padding, groups,
            dilation):
    x, w = _check[op](input, weight)
    x, unbatched = _batch(op, x, w, nd)
    stride = _ints(op, "stride", stride, nd, lo=1, what="non-positive stride is not supported")
    dilation = _ints(op, "dilation", dilation, nd, lo=1,
                     what="dilation should be greater than zero")
    if isinstance(padding, str):
        raise TypeError(f"{op}(): argument 'padding' must be an int or a tuple of {nd} ints "
                        f"(padding strings are for conv{nd}d), not {padding!r}")
    padding = _ints(op, "padding", padding, nd, lo=0,
                    what="negative padding is not supported")
    opad = _ints(op, "output_padding", output_padding, nd, lo=0,
                 what="negative output_padding is not supported")
    if isinstance(groups, (bool, np.bool_)) or not isinstance(groups, numbers.Integral):
        raise TypeError(f"{op}(): argument 'groups' must be int, not {type(groups).__name__}")
    if groups <= 0:
        raise RuntimeError(f"{op}(): non-positive groups is not supported, got groups={groups}")
    for a, s, d in zip(opad, stride, dilation):
        if a >= s and a >= d:
            raise RuntimeError(f"{op}(): output padding must be smaller than either stride "
                               f"or dilation, but got output_padding={list(opad)}, "
                               f"stride={list(stride)}, dilation={list(dilation)}")
    ws, xs = w._data.shape, x._data.shape
    _positive_kernel(op, ws[2:])
    if ws[0] % groups:
        raise RuntimeError(f"{op}(): given groups={groups}, expected weight to be divisible "
                           f"by {groups} at dimension 0, but got weight of size {list(ws)} "
                           f"instead")
    if xs[1] != ws[0]:
        raise RuntimeError(f"{op}(): given transposed=1, weight of size {list(ws)}, expected "
                           f"input{list(xs)} to have {ws[0]} channels, but got {xs[1]} "
                           f"channels instead")
    b = _dtype_of_bias(op, bias, x, ws[1] * groups)
    outs = [(n - 1) * s - 2 * p + d * (k - 1) + a + 1
            for n, s, p, d, k, a in zip(xs[2:], stride, padding, dilation, ws[2:], opad)]
    if any(v <= 0 for v in outs):
        raise RuntimeError(f"{op}(): given input size per channel: "
                           f"({' x '.join(map(str, xs[2:]))}). Calculated output size per "
                           f"channel: ({' x '.join(map(str, outs))}). Output size is too small")
    if nd == 1:
        x = x.unsqueeze(2)
        w = w.unsqueeze(2)
        pad4 = (0, 0, padding[0], padding[0] - opad[0])
    else:
        pad4 = (padding[0], padding[0] - opad[0], padding[1], padding[1] - opad[1])
    out = _c._convt(x, w, b, stride=_as2d(stride, 1), padding=pad4,
                    dilation=_as2d(dilation, 1), groups=int(groups))
    if nd == 1:
        out = out.squeeze(2)
    return out.squeeze(0) if unbatched else out


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """2-D transposed convolution (the adjoint of ``conv2d`` in its input, PyTorch's
    "fractionally-strided convolution") of an (N, C_in, H, W) or unbatched input
    with a weight (C_in, C_out / groups, kH, kW): (N, C_out, Ho, Wo) with
    ``Ho = (H - 1) sH - 2 padH + dH (kH - 1) + output_padH + 1``.

    Args:
        input, weight, bias (Tensor): float32/float64 of one dtype; bias (C_out,).
        stride, padding, output_padding, dilation (int or tuple of 2 ints):
            stride, dilation >= 1; padding, output_padding >= 0, and
            output_padding smaller than the stride or the dilation.
        groups (int): >= 1, dividing C_in.  (The order groups, dilation is
            PyTorch's.)

    Raises:
        as ``conv2d``; RuntimeError for a too large output_padding or an output
        size below 1; TypeError for a padding string.
    """
    return _conv_t("conv_transpose2d", 2, input, weight, bias, stride, padding,
                   output_padding, groups, dilation)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """1-D transposed convolution of an (N, C_in, L) or (C_in, L) input with a
    weight (C_in, C_out / groups, k): ``conv_transpose2d`` on a height-1 image."""
    return _conv_t("conv_transpose1d", 1, input, weight, bias, stride, padding,
                   output_padding, groups, dilation)


# ---------------------------------------------------------------- unfold / fold
def _blocks_geom(op, kernel_size, dilation, padding, stride):
    k = _ints(op, "kernel_size", kernel_size, 2)
    d = _ints(op, "dilation", dilation, 2)
    p = _ints(op, "padding", padding, 2)
    s = _ints(op, "stride", stride, 2)
    for name, v, lo in (("kernel_size", k, 1), ("dilation", d, 1), ("padding", p, 0),
                        ("stride", s, 1)):
        if any(x < lo for x in v):
            raise RuntimeError(f"{op}(): {name} should be "
                               f"{'greater than zero' if lo else 'non-negative'}, but got "
                               f"{name}={list(v)}")
    return k, d, p, s


def _nblocks(op, spatial, k, d, p, s):
    n = [(size + 2 * pp - dd * (kk - 1) - 1) // ss + 1
         for size, kk, dd, pp, ss in zip(spatial, k, d, p, s)]
    if any(v < 1 for v in n):
        raise RuntimeError(f"{op}(): given input with spatial size {tuple(spatial)}, "
                           f"kernel_size={k}, dilation={d}, padding={p}, calculated shape of "
                           f"the array of sliding blocks as {tuple(n)}, but its components "
                           f"must be at least one")
    return n


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding local blocks (im2col): (N, C, H, W) -> (N, C * kH * kW, L), or
    unbatched (C, H, W) -> (C * kH * kW, L), as ``torch.nn.functional.unfold``:

        out[n, (c, p, q), (i, j)] = input[n, c, i sH - padH + p dH, j sW - padW + q dW]

    (zero outside), rows ordered c-major, L = Ho * Wo blocks in row-major order.

    Args:
        input (Tensor): float32/float64.
        kernel_size (int or tuple of 2 ints): >= 1.
        dilation, stride (int or tuple): >= 1.  padding (int or tuple): >= 0,
            zeros on both sides.

    Raises:
        TypeError: non-Tensor input, non-integer sizes.
        RuntimeError: integer input, input not 3-D/4-D, sizes out of range, no
            complete block.
    """
    x = _check_unfold(input)
    op = "unfold"
    if x._data.ndim not in (3, 4):
        raise RuntimeError(f"{op}(): input error: only 3D or 4D input tensors are supported "
                           f"(got {x._data.ndim}D)")
    k, d, p, s = _blocks_geom(op, kernel_size, dilation, padding, stride)
    unbatched = x._data.ndim == 3
    if unbatched:
        x = x.unsqueeze(0)
    _nblocks(op, x._data.shape[2:], k, d, p, s)
    out = apply(_c._im2col, (x,), {"kernel_size": k, "dilation": d, "padding": p,
                                   "stride": s})
    return out.squeeze(0) if unbatched else out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum sliding local blocks into an image (col2im), the adjoint of ``unfold``:
    (N, C * kH * kW, L) -> (N, C, H, W), or unbatched (C * kH * kW, L) -> (C, H, W),
    as ``torch.nn.functional.fold``.  Overlapping entries add up.

    Args:
        input (Tensor): float32/float64; L must be the number of blocks that
            ``unfold`` makes of an ``output_size`` image.
        output_size (int or tuple of 2 ints): (H, W).
        kernel_size, dilation, padding, stride: as ``unfold``.

    Raises:
        as ``unfold``; RuntimeError when dim 1 is not divisible by kH * kW or L
        does not match.
    """
    x, size = _check_fold(input, output_size)
    op = "fold"
    if x._data.ndim not in (2, 3):
        raise RuntimeError(f"{op}(): expected 2D or 3D (batched) input tensor, but got "
                           f"input of size {list(x._data.shape)}")
    size = _ints(op, "output_size", size, 2)
    k, d, p, s = _blocks_geom(op, kernel_size, dilation, padding, stride)
    unbatched = x._data.ndim == 2
    if unbatched:
        x = x.unsqueeze(0)
    n, r, L = x._data.shape
    if r % (k[0] * k[1]):
        raise RuntimeError(f"{op}(): expected size of input's dimension 1 to be divisible "
                           f"by the product of kernel_size, but got input.size(1)={r} and "
                           f"kernel_size={k}")
    nb = _nblocks(op, size, k, d, p, s)
    if nb[0] * nb[1] != L:
        raise RuntimeError(f"{op}(): given output_size={size}, kernel_size={k}, "
                           f"dilation={d}, padding={p}, stride={s}, expected size of "
                           f"input's dimension 2 to match the calculated number of sliding "
                           f"blocks {nb[0]} * {nb[1]} = {nb[0] * nb[1]}, but got "
                           f"input.size(2)={L}")
    out = apply(_c._col2im, (x,), {"output_size": size, "kernel_size": k, "dilation": d,
                                   "padding": p, "stride": s})
    return out.squeeze(0) if unbatched else out


nn_unfold, nn_fold = unfold, fold


# ---------------------------------------------------------------- torch.nn.grad
def _grad_geom(op, x_shape, w_shape, g, stride, padding, dilation, groups):
    """Exact 4-tuple padding for the conv with input x_shape and weight w_shape
    whose output must have g's shape."""
    stride = _ints(op, "stride", stride, 2, lo=1)
    dilation = _ints(op, "dilation", dilation, 2, lo=1)
    padding = _ints(op, "padding", padding, 2, lo=0)
    if isinstance(groups, (bool, np.bool_)) or not isinstance(groups, numbers.Integral) \
            or groups <= 0:
        raise RuntimeError(f"{op}(): groups must be a positive int, got {groups!r}")
    if len(x_shape) != 4 or len(w_shape) != 4 or g._data.ndim != 4:
        raise RuntimeError(f"{op}(): expected 4-D input size {list(x_shape)}, weight size "
                           f"{list(w_shape)} and grad_output {list(g._data.shape)}")
    if x_shape[1] != w_shape[1] * groups or w_shape[0] % groups:
        raise RuntimeError(f"{op}(): given groups={groups}, weight of size {list(w_shape)} "
                           f"does not fit input of size {list(x_shape)}")
    want = [x_shape[0], w_shape[0]]
    pad4 = []
    for n, k, s, p, d in zip(x_shape[2:], w_shape[2:], stride, padding, dilation):
        if n + 2 * p - d * (k - 1) - 1 < 0:
            raise RuntimeError(f"{op}(): kernel size can't be greater than the padded "
                               f"input size ({n + 2 * p})")
        want.append(_c.out_size(n, k, s, p, p, d))
        pad4 += [p, p - (n + 2 * p - d * (k - 1) - 1) % s]
    if list(g._data.shape) != want:
        raise RuntimeError(f"{op}(): expected grad_output of size {want}, got "
                           f"{list(g._data.shape)}")
    return {"stride": stride, "padding": tuple(pad4), "dilation": dilation,
            "groups": int(groups)}


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1,
                  groups=1):
    """The gradient of ``conv2d(input, weight, ...)`` with respect to a weight of
    shape ``weight_size``, given ``grad_output`` (``torch.nn.grad.conv2d_weight``):
    ``B_x^T g``, an (O, C / groups, kH, kW) tensor.  A primitive (the weight
    gradient GEMM), differentiable in both tensors.

    Raises:
        TypeError, RuntimeError: as ``conv2d``; RuntimeError for a grad_output
        whose shape is not conv2d's output shape.
    """
    x, wsize, g = _check_weight(input, weight_size, grad_output)
    geom = _grad_geom("conv2d_weight", x._data.shape, wsize, g, stride, padding, dilation,
                      groups)
    return _c._convw(x, g, wsize[2:], **geom)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1,
                 groups=1):
    """The gradient of ``conv2d(input, weight, ...)`` with respect to an input of
    shape ``input_size`` (N, C, H, W), given ``grad_output``
    (``torch.nn.grad.conv2d_input``): ``A_w^T g``, the ``conv_transpose2d``
    primitive with the output padding that gives back ``input_size``.

    Raises:
        as ``conv2d_weight``.
    """
    xsize, w, g = _check_input(input_size, weight, grad_output)
    geom = _grad_geom("conv2d_input", xsize, w._data.shape, g, stride, padding, dilation,
                      groups)
    return _c._convt(g, w, **geom)
