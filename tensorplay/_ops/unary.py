"""Unary math (issue 7): abs, sign/sgn, trigonometric and hyperbolic functions
and their inverses, log1p/expm1/log2/log10/exp2, rsqrt/square/reciprocal, the
rounding functions and frac.  The special functions (erf, lgamma, digamma, sinc,
logit, ...) are in ``unary_special.py``.

Each op is one ``defunary`` line (``_unary_base.py``): its forward kernel, its
fused derivative kernel ``<op>_backward(g, x) = g * f'(x)`` (strong-zero in g)
and, beside it, the rule for the derivative of that kernel with respect to x,
``second(u, g, x) = u * g * f''(x)``, written in tensorplay ops so that every
higher order is differentiable.  The derivatives' formulas are the rows of
``tensorplay/_kernels/unary_deriv.pyx.tp``.

dtypes (PyTorch's): float32 and float64 run the Cython kernels; integer and bool
inputs of the float-valued functions (sin, log1p, reciprocal, ...) are cast to the
default float dtype first; abs, sign and square keep integer dtypes (square of
bool gives int64), floor/ceil/round/trunc of integers are the identity, and
abs/floor/ceil/round/trunc of bool and frac of any non-float raise
NotImplementedError, as in PyTorch.

Derivatives at non-differentiable points (the issue's conventions): abs' = sign,
so 0 at 0 (the minimum-norm subgradient); sign, floor, ceil, round and trunc have
derivative 0 everywhere (zeros of the input's shape and dtype, as PyTorch);
frac' = 1.
"""
import math

import numpy as np

from tensorplay import _dtype
from tensorplay._ops._common import CONFIG
from tensorplay._ops._unary_base import (_kd, _ku, defunary, float_checker, public, sdiv,
                                         smul, zero_jvp, zero_rule)
from tensorplay._ops._validate import IntArg, Signature, TensorArg, declare
from tensorplay._ops.elementwise import _unary_forward
from tensorplay._ops.registry import apply, defop
from tensorplay._ops import _batching as _B
from tensorplay._pool import MIN_BYTES as POOL_MIN_BYTES
from tensorplay._pool import empty as pool_empty

__all__ = ["abs", "sign", "sgn", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
           "asinh", "acosh", "atanh", "log1p", "expm1", "log2", "log10", "exp2", "rsqrt",
           "square", "reciprocal", "floor", "ceil", "round", "trunc", "frac",
           "abs_backward", "sin_backward", "cos_backward", "tan_backward", "asin_backward",
           "acos_backward", "atan_backward", "sinh_backward", "cosh_backward",
           "asinh_backward", "acosh_backward", "atanh_backward", "log1p_backward",
           "expm1_backward", "log2_backward", "log10_backward", "exp2_backward",
           "rsqrt_backward", "square_backward", "reciprocal_backward"]
_FORWARD = __all__[:__all__.index("abs_backward")]
METHODS = list(_FORWARD)
INPLACE = list(_FORWARD)
LN2 = 0.6931471805599453


def _copy(x, out):
    np.copyto(out, x)


def _int_sign(x, out):
    np.copyto(out, x) if x.dtype.kind == "b" else np.sign(x, out=out)


# ---------------------------------------------------------------- primitives
# name              forward kernel     g * f'(.) kernel   u * g * f''(.) (the kernel's derivative in b)
_abs, abs_backward = defunary(       # f' = sign(x): 0 at 0; f'' = 0
    "abs", _ku.abs_fwd, _kd.abs_vjp, None, formula="g * sign(x)", ufunc=np.abs)
_sin, sin_backward = defunary(       # f' = cos x, f'' = -sin x
    "sin", _ku.sin_fwd, _kd.sin_vjp, lambda u, g, x: cos_backward(smul(u, g), x),
    formula="g * cos(x)")
_cos, cos_backward = defunary(       # f' = -sin x, f'' = -cos x
    "cos", _ku.cos_fwd, _kd.cos_vjp, lambda u, g, x: -sin_backward(smul(u, g), x),
    formula="-g * sin(x)")
_tan, tan_backward = defunary(       # f' = 1 + y^2, d/dy = 2y
    "tan", _ku.tan_fwd, _kd.tan_vjp, lambda u, g, y: smul(smul(u, g), 2 * y),
    uses="output", formula="g * (1 + y^2)")
_asin, asin_backward = defunary(     # f' = (1-x^2)^-1/2, f'' = x (1-x^2)^-3/2
    "asin", _ku.asin_fwd, _kd.asin_vjp,
    lambda u, g, x: asin_backward(sdiv(smul(smul(u, g), x), (1 - x) * (1 + x)), x),
    formula="g / sqrt((1 - x)(1 + x))")
_acos, acos_backward = defunary(     # f' = -(1-x^2)^-1/2, f'' = -x (1-x^2)^-3/2
    "acos", _ku.acos_fwd, _kd.acos_vjp,
    lambda u, g, x: acos_backward(sdiv(smul(smul(u, g), x), (1 - x) * (1 + x)), x),
    formula="-g / sqrt((1 - x)(1 + x))")
_atan, atan_backward = defunary(     # f' = 1/(1+x^2), f'' = -2x f'^2
    "atan", _ku.atan_fwd, _kd.atan_vjp,
    lambda u, g, x: atan_backward(atan_backward(smul(smul(u, g), -2 * x), x), x),
    formula="g / (1 + x^2)")
_sinh, sinh_backward = defunary(     # f' = cosh x, f'' = sinh x
    "sinh", _ku.sinh_fwd, _kd.sinh_vjp, lambda u, g, x: cosh_backward(smul(u, g), x),
    formula="g * cosh(x)")
_cosh, cosh_backward = defunary(     # f' = sinh x, f'' = cosh x
    "cosh", _ku.cosh_fwd, _kd.cosh_vjp, lambda u, g, x: sinh_backward(smul(u, g), x),
    formula="g * sinh(x)")
_asinh, asinh_backward = defunary(   # f' = (1+x^2)^-1/2, f'' = -x (1+x^2)^-3/2
    "asinh", _ku.asinh_fwd, _kd.asinh_vjp,
    lambda u, g, x: asinh_backward(sdiv(smul(smul(u, g), -x), 1 + x * x), x),
    formula="g / sqrt(x^2 + 1)")
_acosh, acosh_backward = defunary(   # f' = (x^2-1)^-1/2, f'' = -x (x^2-1)^-3/2
    "acosh", _ku.acosh_fwd, _kd.acosh_vjp,
    lambda u, g, x: acosh_backward(sdiv(smul(smul(u, g), -x), (x - 1) * (x + 1)), x),
    formula="g / sqrt((x - 1)(x + 1))")
_atanh, atanh_backward = defunary(   # f' = 1/(1-x^2), f'' = 2x f'^2
    "atanh", _ku.atanh_fwd, _kd.atanh_vjp,
    lambda u, g, x: atanh_backward(atanh_backward(smul(smul(u, g), 2 * x), x), x),
    formula="g / ((1 - x)(1 + x))")
_log1p, log1p_backward = defunary(   # f' = 1/(1+x), f'' = -f'^2
    "log1p", _ku.log1p_fwd, _kd.log1p_vjp,
    lambda u, g, x: log1p_backward(log1p_backward(-smul(u, g), x), x),
    formula="g / (1 + x)")
_expm1, expm1_backward = defunary(   # f' = y + 1, d/dy = 1
    "expm1", _ku.expm1_fwd, _kd.expm1_vjp, lambda u, g, y: smul(u, g),
    uses="output", formula="g * (y + 1)")
_log2, log2_backward = defunary(     # f' = 1/(x ln 2), f'' = -f'/x
    "log2", _ku.log2_fwd, _kd.log2_vjp,
    lambda u, g, x: log2_backward(sdiv(-smul(u, g), x), x), formula="g / (x ln 2)")
_log10, log10_backward = defunary(   # f' = 1/(x ln 10), f'' = -f'/x
    "log10", _ku.log10_fwd, _kd.log10_vjp,
    lambda u, g, x: log10_backward(sdiv(-smul(u, g), x), x), formula="g / (x ln 10)")
_exp2, exp2_backward = defunary(     # f' = y ln 2, d/dy = ln 2
    "exp2", _ku.exp2_fwd, _kd.exp2_vjp, lambda u, g, y: smul(u, g) * LN2,
    uses="output", formula="g * y * ln 2")
_rsqrt, rsqrt_backward = defunary(   # f' = -y^3 / 2, d/dy = -3 y^2 / 2
    "rsqrt", _ku.rsqrt_fwd, _kd.rsqrt_vjp,
    lambda u, g, y: smul(smul(u, g), -1.5 * y * y), uses="output", formula="-g * y^3 / 2")
_square, square_backward = defunary(  # f' = 2x, f'' = 2
    "square", _ku.square_fwd, _kd.square_vjp, lambda u, g, x: 2 * smul(u, g),
    formula="2 g x", ufunc=np.square)
_reciprocal, reciprocal_backward = defunary(  # f' = -y^2, d/dy = -2y
    "reciprocal", _ku.reciprocal_fwd, _kd.reciprocal_vjp,
    lambda u, g, y: smul(smul(u, g), -2 * y), uses="output", formula="-g * y^2")

# piecewise constant: derivative 0 (zeros, not None: PyTorch's values)
_sign = defop("sign", _unary_forward(_ku.sign_fwd, _int_sign), vjp=(zero_rule,), jvp=zero_jvp,
              batch=_B.elementwise_rule)
_floor = defop("floor", _unary_forward(_ku.floor_fwd, _copy), vjp=(zero_rule,), jvp=zero_jvp,
               batch=_B.elementwise_rule)
_ceil = defop("ceil", _unary_forward(_ku.ceil_fwd, _copy), vjp=(zero_rule,), jvp=zero_jvp,
              batch=_B.elementwise_rule)
_trunc = defop("trunc", _unary_forward(_ku.trunc_fwd, _copy), vjp=(zero_rule,), jvp=zero_jvp,
               batch=_B.elementwise_rule)
# frac(x) = x - trunc(x): f' = 1
_frac = defop("frac", _unary_forward(_ku.frac_fwd), vjp=(lambda g, out, x: g,),
              jvp=lambda ts, out, x: ts[0], batch=_B.elementwise_rule)


def _round_forward(x, decimals=0):
    out = np.empty(x.shape, x.dtype) if x.nbytes < POOL_MIN_BYTES else pool_empty(x.shape,
                                                                                 x.dtype)
    if x.dtype.kind != "f":
        np.copyto(out, x)                 # decimals == 0 (checked by round())
    elif decimals == 0:
        _ku.round_fwd(x, out, CONFIG.num_threads)
    else:
        # |decimals| >= 309: 10**|decimals| is inf in double (Python's ** raises
        # OverflowError), so the formula gives nan, as PyTorch's and numpy's
        n = decimals if decimals > 0 else -decimals
        p = 10.0 ** n if n < 309 else math.inf
        p = p if decimals > 0 else -p
        _ku.round_dec_fwd(x, out, p, CONFIG.num_threads)
    return out


_round = defop("round", _round_forward, vjp=(zero_rule,), jvp=zero_jvp, batch=_B.elementwise_rule)


# ---------------------------------------------------------------- argument declarations
_INT_KEPT = " Integer inputs keep their dtype."
_TO_FLOAT = " Integer and bool inputs give the default float dtype."
_BOOL_NI = "\n        NotImplementedError: a bool tensor (as PyTorch)."
_check_abs = float_checker("abs", "fi", to_float=False)
_check_sign = float_checker("sign", "fib", to_float=False)
_check_sgn = float_checker("sgn", "fib", to_float=False)
_check_square = float_checker("square", "fib", to_float=False)
_check_floor, _check_ceil, _check_trunc = (float_checker(n, "fi", to_float=False)
                                           for n in ("floor", "ceil", "trunc"))
_check_frac = float_checker("frac", "f", to_float=False)
_check_round = declare(Signature("round", TensorArg("input", "fi"),
                                 IntArg("decimals", default=0)))


def _doc(summary, more=""):
    return (f"{summary}, elementwise.  Same shape as the input; float32 and float64 "
            f"run the Cython kernel.{more}")


# ---------------------------------------------------------------- public functions
abs = public("abs", _abs, _check_abs, _doc(
    "``|input|``", _INT_KEPT + "  The derivative is sign(x): 0 at x = 0 (the minimum-norm "
    "subgradient, PyTorch's).  Also the ``abs()`` builtin (``__abs__``)."), _BOOL_NI)
sign = public("sign", _sign, _check_sign, _doc(
    "-1, 0 or +1 by the sign of ``input``", _INT_KEPT + "  Bool stays bool.  sign(nan) = 0 "
    "and sign(-0.0) = 0 (PyTorch's; numpy gives nan for nan).  Derivative 0 (zeros)."))
sin = public("sin", _sin, float_checker("sin"), _doc("Sine", _TO_FLOAT))
cos = public("cos", _cos, float_checker("cos"), _doc("Cosine", _TO_FLOAT))
tan = public("tan", _tan, float_checker("tan"), _doc(
    "Tangent", _TO_FLOAT + "  The derivative 1 + tan(x)^2 is computed from the output."))
asin = public("asin", _asin, float_checker("asin"), _doc(
    "Arcsine", _TO_FLOAT + "  Domain [-1, 1] (nan outside); the derivative is inf at +-1."))
acos = public("acos", _acos, float_checker("acos"), _doc(
    "Arccosine", _TO_FLOAT + "  Domain [-1, 1] (nan outside); the derivative is -inf at +-1."))
atan = public("atan", _atan, float_checker("atan"), _doc("Arctangent", _TO_FLOAT))
sinh = public("sinh", _sinh, float_checker("sinh"), _doc("Hyperbolic sine", _TO_FLOAT))
cosh = public("cosh", _cosh, float_checker("cosh"), _doc("Hyperbolic cosine", _TO_FLOAT))
asinh = public("asinh", _asinh, float_checker("asinh"), _doc("Inverse hyperbolic sine",
                                                             _TO_FLOAT))
acosh = public("acosh", _acosh, float_checker("acosh"), _doc(
    "Inverse hyperbolic cosine", _TO_FLOAT + "  Domain x >= 1 (nan below); the derivative "
    "is inf at 1."))
atanh = public("atanh", _atanh, float_checker("atanh"), _doc(
    "Inverse hyperbolic tangent", _TO_FLOAT + "  Domain [-1, 1]: +-inf at +-1, nan outside."))
log1p = public("log1p", _log1p, float_checker("log1p"), _doc(
    "``log(1 + input)``", _TO_FLOAT + "  Accurate near 0 (libm's log1p: log1p(1e-10) = "
    "1e-10 to the last bit, where log(1 + x) gives 1.00000008e-10)."))
expm1 = public("expm1", _expm1, float_checker("expm1"), _doc(
    "``exp(input) - 1``", _TO_FLOAT + "  Accurate near 0 (libm's expm1).  The derivative "
    "exp(x) = y + 1 is computed from the output."))
log2 = public("log2", _log2, float_checker("log2"), _doc("Base-2 logarithm", _TO_FLOAT))
log10 = public("log10", _log10, float_checker("log10"), _doc("Base-10 logarithm", _TO_FLOAT))
exp2 = public("exp2", _exp2, float_checker("exp2"), _doc("``2 ** input``", _TO_FLOAT))
rsqrt = public("rsqrt", _rsqrt, float_checker("rsqrt"), _doc(
    "``1 / sqrt(input)``", _TO_FLOAT + "  rsqrt(0) = inf, nan below 0."))
reciprocal = public("reciprocal", _reciprocal, float_checker("reciprocal"), _doc(
    "``1 / input``", _TO_FLOAT + "  1/0 = inf (IEEE 754)."))
floor = public("floor", _floor, _check_floor, _doc(
    "Largest integer <= input", "  Integer inputs are returned as a copy.  Derivative 0."),
    _BOOL_NI)
ceil = public("ceil", _ceil, _check_ceil, _doc(
    "Smallest integer >= input", "  Integer inputs are returned as a copy.  Derivative 0."),
    _BOOL_NI)
trunc = public("trunc", _trunc, _check_trunc, _doc(
    "``input`` rounded toward zero", "  Integer inputs are returned as a copy.  "
    "Derivative 0."), _BOOL_NI)
frac = public("frac", _frac, _check_frac, _doc(
    "``input - trunc(input)``", "  Sign of the input (frac(-1.5) = -0.5).  Derivative 1."),
    "\n        NotImplementedError: an integer or bool tensor (as PyTorch).")


def sgn(input):
    """The sign of ``input``: for real tensors the same as :func:`sign` (PyTorch's
    sgn extends it to complex numbers, which tensorplay does not have).

    Raises:
        TypeError: a non-Tensor input.
    """
    return apply(_sign, (_check_sgn(input),), {})


def square(input):
    """``input * input``, elementwise.  Same shape; integer inputs keep their dtype
    and bool gives int64 (PyTorch's).  Derivative 2x.

    Raises:
        TypeError: a non-Tensor input.
    """
    x = _check_square(input)
    if x._data.dtype.kind == "b":
        x = x.to(_dtype.int64)
    return apply(_square, (x,), {})


def round(input, decimals=0):
    """``input`` rounded to ``decimals`` decimal places, elementwise; halves go to
    the even neighbour (``rint``, as PyTorch and numpy).  For decimals > 0,
    ``rint(x * 10**d) / 10**d``; for decimals < 0, ``rint(x / 10**-d) * 10**-d``
    (PyTorch's formulas, so round(2.675, decimals=2) = 2.67 as the float 2.675 is
    below it).  Same shape and dtype; integer inputs (decimals = 0) are returned as
    a copy.  Derivative 0 (zeros).

    Args:
        input (Tensor): float or integer tensor.
        decimals (int): number of decimal places (may be negative); keyword-only in
            PyTorch, accepted positionally here too.

    Raises:
        TypeError: a non-Tensor input or a non-integer ``decimals``.
        NotImplementedError: a bool tensor, or an integer tensor with decimals != 0
            (as PyTorch).
    """
    x, decimals = _check_round(input, decimals)
    if decimals != 0 and x._data.dtype.kind != "f":
        raise NotImplementedError(f"round(): decimals={decimals} is not implemented for "
                                  f"{x.dtype} tensors (only decimals=0); cast to float first")
    return apply(_round, (x,), {"decimals": decimals} if decimals else {})


OPERATORS = {"__abs__": abs}
