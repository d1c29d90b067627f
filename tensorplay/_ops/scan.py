"""Scans: ``cumsum`` and ``cumprod`` along one dim.

The forward arranges the input as a C-contiguous (O, N, I) block (N the scanned
extent; a copy only when the input is not C-contiguous) and calls
``_kernels/scan.pyx:scan_fwd``.  Integer and bool inputs scan in int64 with numpy,
as PyTorch (they have no derivative).

Primitive ``cumsum(x, dim, reverse)``: ``reverse`` scans from the end, which is
the VJP (the reversed cumulative sum of the cotangent), so the VJP of the VJP is
cumsum again.  ``cumprod``'s VJP and JVP are exact with zeros anywhere in the input: they use
no division, only the primitives ``scan_shift`` and ``linrec`` (a first-order
linear recurrence, below), whose rules are again those primitives.
"""
import math

import numpy as np

from tensorplay._ops._common import CONFIG, not_tensor_error
from tensorplay._ops._validate import (BoolArg, DimArg, IntArg, Signature, TensorArg,
                                       declare)
from tensorplay._ops.registry import apply, defop
from tensorplay._ops import _batching as _B
from tensorplay._kernels import scan as _ks
from tensorplay._tensor import Tensor

__all__ = ["cumsum", "cumprod", "scan_shift", "linrec"]
INTERNAL = ["scan_shift", "linrec"]
METHODS = ["cumsum", "cumprod"]
INPLACE = ["cumsum", "cumprod"]


def _scan_array(x, dim, prod, reverse):
    if x.ndim == 0:
        return x.copy()
    if x.dtype.kind != "f":
        y = x[(slice(None),) * dim + (slice(None, None, -1),)] if reverse else x
        r = (np.cumprod if prod else np.cumsum)(y, axis=dim, dtype=np.int64)
        return r[(slice(None),) * dim + (slice(None, None, -1),)] if reverse else r
    shape = x.shape
    o, n, i = math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1:])
    xa = np.ascontiguousarray(x)
    out = np.empty(shape, x.dtype)
    _ks.scan_fwd(xa.reshape(o, n, i), out.reshape(o, n, i), prod, reverse,
                 CONFIG.num_threads)
    return out


# cumsum is linear: its VJP is the reversed scan of g, and its JVP the scan of t.
_cumsum = defop("cumsum", lambda x, dim, reverse: _scan_array(x, dim, False, reverse),
                vjp=(lambda g, out, x, dim, reverse: _scan(g, dim, not reverse),),
                jvp=lambda ts, out, x, dim, reverse: _scan(ts[0], dim, reverse),
                batch=_B.dims_rule("dim"))


def _scan(x, dim, reverse=False):
    return apply(_cumsum, (x,), {"dim": dim, "reverse": reverse})


def _lines(x, dim):
    """``x`` as a C-contiguous (O, N, I) array, N the extent of ``dim``."""
    shape = x.shape
    return np.ascontiguousarray(x).reshape(math.prod(shape[:dim]), shape[dim],
                                           math.prod(shape[dim + 1:]))


# shift(x, dim, by, fill): out_j = x_{j - by} along dim (by = +1 or -1), ``fill``
# where that falls outside.  Linear in x, so its VJP is the opposite shift of g
# (filled with 0) and its JVP the same shift of t (filled with 0).
def _shift_array(x, dim, by, fill):
    out = np.full(x.shape, fill, x.dtype)
    if x.ndim and x.shape[dim] > 1:
        lo = (slice(None),) * dim
        if by > 0:
            out[lo + (slice(1, None),)] = x[lo + (slice(None, -1),)]
        else:
            out[lo + (slice(None, -1),)] = x[lo + (slice(1, None),)]
    return out


_shift = defop("scan_shift", _shift_array,
               vjp=(lambda g, out, x, dim, by, fill: _shifted(g, dim, -by),),
               jvp=lambda ts, out, x, dim, by, fill: _shifted(ts[0], dim, by),
               batch=_B.dims_rule("dim"))


def _shifted(x, dim, by, fill=0.0):
    return apply(_shift, (x,), {"dim": dim, "by": by, "fill": fill})


# linrec(g, a, dim, reverse), the recurrence of _kernels/scan.pyx (d):
#   forward  out_j = g_j + a_j out_{j-1},   reverse  out_j = g_j + a_{j+1} out_{j+1}.
# Linear in g; the two directions are each other's transpose, so the VJP in g is
# the other direction.  In a: forward, d out / d a_m feeds out_m from out_{m-1},
# so the VJP is lam_m out_{m-1} with lam = reverse(h, a); reverse, a_m feeds
# out_{m-1} from out_m: lam_{m-1} out_m with lam = forward(h, a).
def _linrec_array(g, a, dim, reverse):
    if g.ndim == 0:
        return g.copy()
    out = np.empty(g.shape, g.dtype)
    _ks.linrec_fwd(_lines(g, dim), _lines(a, dim), out.reshape(_lines(g, dim).shape),
                   reverse, CONFIG.num_threads)
    return out


def _linrec_vjp_a(h, out, g, a, dim, reverse):
    lam = _linrec(h, a, dim, not reverse)
    if reverse:
        return _shifted(lam, dim, 1) * out
    return lam * _shifted(out, dim, 1)


def _linrec_jvp(ts, out, g, a, dim, reverse):
    tg, ta = ts
    total = None if tg is None else _linrec(tg, a, dim, reverse)
    if ta is not None:
        # the tangent of a enters as a source term: forward ta_j out_{j-1};
        # reverse ta_{j+1} out_{j+1}
        src = ta * _shifted(out, dim, 1) if not reverse else _shifted(ta * out, dim, -1)
        term = _linrec(src, a, dim, reverse)
        total = term if total is None else total + term
    return total


_linrec_op = defop("linrec", _linrec_array,
                   vjp=(lambda h, out, g, a, dim, reverse: _linrec(h, a, dim, not reverse),
                        _linrec_vjp_a),
                   jvp=_linrec_jvp, saves=("inputs", "out"), batch=_B.dims_rule("dim"))


def _linrec(g, a, dim, reverse):
    return apply(_linrec_op, (g, a), {"dim": dim, "reverse": reverse})


# cumprod: d out_j / d x_i = P_{i-1} prod_{i<k<=j} x_k (i <= j), P the exclusive
# cumprod (P_{-1} = 1).  So the VJP is P_{i-1} R_i with R_i = g_i + x_{i+1} R_{i+1}
# (the reverse recurrence), and the JVP the forward recurrence of t P_excl.  No
# division, so zeros anywhere are exact, and every piece is a primitive with
# rules of its own, so higher orders are exact too.
def _exclusive(out, dim):
    return _shifted(out, dim, 1, fill=1.0)


_cumprod = defop("cumprod", lambda x, dim: _scan_array(x, dim, True, False),
                 vjp=(lambda g, out, x, dim: _exclusive(out, dim) * _linrec(g, x, dim, True),),
                 jvp=lambda ts, out, x, dim: _linrec(ts[0] * _exclusive(out, dim), x, dim,
                                                     False),
                 saves=("inputs", "out"), batch=_B.dims_rule("dim"))

_check_shift = declare(Signature("scan_shift", TensorArg("input", "f"), DimArg("dim"),
                                 IntArg("by", lo=-1, hi=1)))
_check_linrec = declare(Signature("linrec", TensorArg("input", "f"), TensorArg("coeffs", "f"),
                                  DimArg("dim"), BoolArg("reverse"),
                                  same_shape=("input", "coeffs"),
                                  same_dtype=("input", "coeffs")))


def scan_shift(input, dim, by):
    """Internal (the derivatives of cumprod): ``input`` shifted by ``by`` (+1 or -1)
    along ``dim``, zero-filled.  Checked; the rules call the unchecked form."""
    input, dim, by = _check_shift(input, dim, by)
    if by == 0:
        raise RuntimeError("scan_shift(): by must be +1 or -1, got 0")
    return _shifted(input, dim, by)


def linrec(input, coeffs, dim, reverse=False):
    """Internal (the derivatives of cumprod): the recurrence
    ``out_j = input_j + coeffs_j out_{j-1}`` along ``dim`` (``reverse``:
    ``out_j = input_j + coeffs_{j+1} out_{j+1}``).  Same shapes and dtypes."""
    input, coeffs, dim, reverse = _check_linrec(input, coeffs, dim, reverse)
    return _linrec(input, coeffs, dim, reverse)


# (dtype is keyword-only, as in PyTorch: checked by ``Tensor.to``)
_check_cumsum = declare(Signature("cumsum", TensorArg("input"), DimArg("dim")))
_check_cumprod = declare(Signature("cumprod", TensorArg("input"), DimArg("dim")))


def _cast(input, dtype, op):
    if dtype is None:
        return input
    if not isinstance(input, Tensor):
        raise not_tensor_error(op, "input", input)
    return input.to(dtype)


def cumsum(input, dim, *, dtype=None):
    """Cumulative sum along ``dim``: ``out[..., j, ...] = sum_{k <= j} input[..., k, ...]``.

    Args:
        input (Tensor): any shape (0-d: ``dim`` is 0 or -1, a copy).
        dim (int): the dim to scan.
        dtype (dtype, optional): cast the input to it first (PyTorch).

    Returns:
        Tensor of input's shape; the input's float dtype, int64 for integer and
        bool inputs (PyTorch).  float32 accumulates in float32, as numpy and PyTorch.

    Raises:
        TypeError: input not a Tensor, dim not an int.  IndexError: dim out of range.
    """
    input, dim = _check_cumsum(_cast(input, dtype, "cumsum"), dim)
    return apply(_cumsum, (input,), {"dim": dim, "reverse": False})


def cumprod(input, dim, *, dtype=None):
    """Cumulative product along ``dim``.

    The gradient is exact with zeros anywhere in the input (it is computed by a
    linear recurrence, never by dividing by the input), in reverse and forward
    mode and at every order.

    Returns and raises as ``cumsum``.
    """
    input, dim = _check_cumprod(_cast(input, dtype, "cumprod"), dim)
    return apply(_cumprod, (input,), {"dim": dim})
