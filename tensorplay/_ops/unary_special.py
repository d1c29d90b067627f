"""Unary special functions (issue 7): erf, erfc, erfinv, lgamma, digamma, sinc and
logit, with their fused derivative kernels (the pattern of ``unary.py``).

Derivatives:

==========  =========================================  ==================================
op          f'                                         derivative of the fused kernel
==========  =========================================  ==================================
erf         2/sqrt(pi) exp(-x^2)                       f'' = -2x f'
erfc        -2/sqrt(pi) exp(-x^2)                      f'' = -2x f'
erfinv      sqrt(pi)/2 exp(y^2), y = erfinv(x)         d/dy = 2y f'
lgamma      digamma(x)                                 polygamma(1, x)
digamma     polygamma(1, x) (trigamma)                 polygamma(n + 1, x), every order
sinc        (cos(pi x) - sinc(x)) / x, 0 at 0          -pi^2 sinc - 2 f'/x, -pi^2/3 at 0
logit       1/(x(1-x)) in [eps, 1-eps], 0 outside      (2x - 1) f'^2, 0 outside
==========  =========================================  ==================================

``polygamma_backward(g, x, n) = g * psi^(n)(x)`` is one kernel for every n >= 1
(the Hurwitz zeta sum, ``_math.pxd``), so digamma and lgamma are differentiable
to any order.
"""
import numbers

import numpy as np

from tensorplay._ops._common import CONFIG
from tensorplay._ops._unary_base import (_kd, _ku, defunary, deriv_forward, float_checker,
                                         public, sdiv, smul)
from tensorplay._ops._validate import IntArg, Signature, TensorArg, declare
from tensorplay._ops.elementwise import _binary_sig, _unary_forward, where
from tensorplay._ops.registry import apply, defop, tangent_sum
from tensorplay._ops import _batching as _B
from tensorplay._pool import MIN_BYTES as POOL_MIN_BYTES
from tensorplay._pool import empty as pool_empty

__all__ = ["erf", "erfc", "erfinv", "lgamma", "digamma", "sinc", "logit",
           "erf_backward", "erfc_backward", "erfinv_backward", "lgamma_backward",
           "polygamma_backward", "sinc_backward", "logit_backward"]
METHODS = ["erf", "erfc", "erfinv", "lgamma", "digamma", "sinc", "logit"]
INPLACE = list(METHODS)
PI2 = 9.869604401089358          # pi^2


# ---------------------------------------------------------------- polygamma_backward
# g * psi^(n)(x), n >= 1; d/dg = psi^(n), d/dx = g psi^(n+1): the same kernel.
def _pgb_dx(u, g, x, n):
    return polygamma_backward(smul(u, g), x, n + 1)


_polygamma_backward = defop(
    "polygamma_backward", deriv_forward("polygamma_backward", _kd.polygamma_vjp, "n"),
    vjp=(lambda gb, out, g, x, n: polygamma_backward(gb, x, n),
         lambda gb, out, g, x, n: _pgb_dx(gb, g, x, n)),
    jvp=lambda ts, out, g, x, n: tangent_sum(
        None if ts[0] is None else polygamma_backward(ts[0], x, n),
        None if ts[1] is None else _pgb_dx(ts[1], g, x, n)),
    saves=("inputs",), batch=_B.elementwise_rule)


# ---------------------------------------------------------------- primitives
# name               forward kernel      g * f'(.) kernel     u * g * f''(.) (the kernel's derivative in b)
_erf, erf_backward = defunary(           # f'' = -2x f'
    "erf", _ku.erf_fwd, _kd.erf_vjp, lambda u, g, x: erf_backward(smul(smul(u, g), -2 * x), x),
    formula="g * 2/sqrt(pi) * exp(-x^2)")
_erfc, erfc_backward = defunary(         # f'' = -2x f'
    "erfc", _ku.erfc_fwd, _kd.erfc_vjp,
    lambda u, g, x: erfc_backward(smul(smul(u, g), -2 * x), x),
    formula="-g * 2/sqrt(pi) * exp(-x^2)")
_erfinv, erfinv_backward = defunary(     # f' = sqrt(pi)/2 exp(y^2), d/dy = 2y f'
    "erfinv", _ku.erfinv_fwd, _kd.erfinv_vjp,
    lambda u, g, y: erfinv_backward(smul(smul(u, g), 2 * y), y), uses="output",
    formula="g * sqrt(pi)/2 * exp(y^2)")
_lgamma, lgamma_backward = defunary(     # f' = digamma, f'' = trigamma
    "lgamma", _ku.lgamma_fwd, _kd.lgamma_vjp,
    lambda u, g, x: polygamma_backward(smul(u, g), x, 1), formula="g * digamma(x)")


def _sinc_dd(u, g, x):
    """u * g * sinc''(x): -pi^2 sinc(x) - 2 sinc'(x)/x, and -pi^2/3 at x = 0 (the
    other branch is 0/0 there, and its cotangent is exactly 0: no nan leaks)."""
    ug = smul(u, g)
    return where(x == 0, ug * (-PI2 / 3),
                 -PI2 * smul(ug, sinc(x)) - 2 * sdiv(sinc_backward(ug, x), x))


_sinc, sinc_backward = defunary(
    "sinc", _ku.sinc_fwd, _kd.sinc_vjp, _sinc_dd, formula="g * (cos(pi x) - sinc(x)) / x")


# ---------------------------------------------------------------- digamma
# digamma' = trigamma: the polygamma kernel with n = 1
_digamma = defop("digamma", _unary_forward(_ku.digamma_fwd),
                 vjp=(lambda g, out, x: polygamma_backward(g, x, 1),),
                 jvp=lambda ts, out, x: polygamma_backward(ts[0], x, 1), saves=("inputs",),
                 batch=_B.elementwise_rule)


# ---------------------------------------------------------------- logit
def _eps_p(eps):
    return -1.0 if eps is None else float(eps)


def _logit_forward(x, eps=None):
    out = np.empty(x.shape, x.dtype) if x.nbytes < POOL_MIN_BYTES else pool_empty(x.shape,
                                                                                 x.dtype)
    _ku.logit_fwd(x, out, _eps_p(eps), CONFIG.num_threads)
    return out


_logit = defop("logit", _logit_forward,
               vjp=(lambda g, out, x, eps=None: logit_backward(g, x, eps),),
               jvp=lambda ts, out, x, eps=None: logit_backward(ts[0], x, eps),
               saves=("inputs",), batch=_B.elementwise_rule)


# f' = 1/(x(1-x)) masked to [eps, 1-eps]; d/dx = (2x - 1) f'^2 under the same mask
def _lgb_dx(u, g, x, eps):
    return logit_backward(smul(logit_backward(smul(u, g), x, eps), 2 * x - 1), x, eps)


def _lgb_forward(g, x, eps=None):
    return _lgb_kernel(g, x, eps=_eps_p(eps))


_lgb_kernel = deriv_forward("logit_backward", _kd.logit_vjp, "eps")
_logit_backward = defop(
    "logit_backward", _lgb_forward,
    vjp=(lambda gb, out, g, x, eps=None: logit_backward(gb, x, eps),
         lambda gb, out, g, x, eps=None: _lgb_dx(gb, g, x, eps)),
    jvp=lambda ts, out, g, x, eps=None: tangent_sum(
        None if ts[0] is None else logit_backward(ts[0], x, eps),
        None if ts[1] is None else _lgb_dx(ts[1], g, x, eps)),
    saves=("inputs",), batch=_B.elementwise_rule)


# ---------------------------------------------------------------- argument declarations
_TO_FLOAT = "  Integer and bool inputs give the default float dtype."
_check_polygamma_backward = declare(Signature(
    "polygamma_backward", TensorArg("grad_output", numbers=True),
    TensorArg("input", numbers=True), IntArg("n", lo=1),
    promote=("grad_output", "input"), broadcast=("grad_output", "input"),
    result_kinds="f"))
_check_logit = float_checker("logit")
_check_logit_backward = declare(_binary_sig("logit_backward", ("grad_output", "input"),
                                            result_kinds="f"))


def _check_eps(op, eps):
    if eps is not None and (isinstance(eps, bool) or not isinstance(eps, numbers.Real)):
        raise TypeError(f"{op}(): argument 'eps' must be a float or None, not "
                        f"{type(eps).__name__}")
    return None if eps is None else float(eps)


def _doc(summary, more=""):
    return (f"{summary}, elementwise.  Same shape as the input; float32 and float64 "
            f"run the Cython kernel.{_TO_FLOAT}{more}")


# ---------------------------------------------------------------- public functions
erf = public("erf", _erf, float_checker("erf"), _doc("The error function"))
erfc = public("erfc", _erfc, float_checker("erfc"), _doc(
    "The complementary error function ``1 - erf(x)``",
    "  Accurate where erf(x) is near 1 (erfc(10) = 2.1e-45, not 0)."))
erfinv = public("erfinv", _erfinv, float_checker("erfinv"), _doc(
    "The inverse error function", "  Domain [-1, 1]: +-inf at +-1, nan outside.  Computed "
    "in double for both float types (a rational guess and two Newton steps, on erfc in the "
    "tails).  The derivative sqrt(pi)/2 exp(erfinv(x)^2) is computed from the output."))
lgamma = public("lgamma", _lgamma, float_checker("lgamma"), _doc(
    "``log|Gamma(input)|``", "  inf at 0 and the negative integers.  The derivative is "
    "digamma(x), and every higher one a polygamma function."))
digamma = public("digamma", _digamma, float_checker("digamma"), _doc(
    "The digamma function psi(x) = d/dx lgamma(x)", "  -inf at +0 and inf at -0, nan at "
    "the negative integers (PyTorch's and scipy's values).  The derivative is "
    "polygamma(1, x) (trigamma), and polygamma(n, x) at order n, from one kernel "
    "(``polygamma_backward``); for n >= 3 and x < -1e5 it is nan (see docs/DECISIONS.md)."))
sinc = public("sinc", _sinc, float_checker("sinc"), _doc(
    "The normalized sinc function ``sin(pi x) / (pi x)``", "  sinc(0) = 1 with derivative "
    "0 (PyTorch's)."))


def logit(input, eps=None):
    """``log(p / (1 - p))`` with ``p = input`` clamped to ``[eps, 1 - eps]``,
    elementwise (no clamp when ``eps`` is None or negative, as PyTorch).  Same shape;
    integer and bool inputs give the default float dtype.  logit(0) = -inf,
    logit(1) = inf, nan outside [0, 1] without eps.

    The derivative is ``1 / (x (1 - x))`` inside ``[eps, 1 - eps]`` and 0 outside
    (the clamp's, PyTorch's logit_backward); without eps it is nan outside [0, 1].

    Args:
        input (Tensor): probabilities.
        eps (float, optional): the clamp's margin.

    Raises:
        TypeError: a non-Tensor input, or an ``eps`` that is not a real number.
    """
    x = _check_logit(input)
    eps = _check_eps("logit", eps)
    return apply(_logit, (x,), {} if eps is None else {"eps": eps})


def logit_backward(grad_output, input, eps=None):
    """``grad_output / (input (1 - input))`` inside ``[eps, 1 - eps]``, 0 outside
    (nan outside [0, 1] with eps None): logit's VJP and JVP in one fused pass,
    exactly 0 where ``grad_output`` is 0.  Broadcastable float operands.

    Raises:
        TypeError: an operand that is neither a Tensor nor a number, or a bad eps.
        NotImplementedError: operands whose promoted dtype is not floating.
        RuntimeError: shapes that do not broadcast.
    """
    g, x = _check_logit_backward(grad_output, input)
    eps = _check_eps("logit_backward", eps)
    return apply(_logit_backward, (g, x), {} if eps is None else {"eps": eps})


def polygamma_backward(grad_output, input, n):
    """``grad_output * psi^(n)(input)`` (psi^(n) the polygamma function, n >= 1):
    the derivative of digamma (n = 1) and of this kernel itself (n + 1), in one
    fused pass, exactly 0 where ``grad_output`` is 0.  Broadcastable float operands;
    computed in double for both float types.  +inf (n odd) or nan (n even) at 0 and
    the negative integers; nan for n >= 3 below x = -1e5.

    Raises:
        TypeError: an operand that is neither a Tensor nor a number, or a non-int n.
        RuntimeError: n < 1, or shapes that do not broadcast.
        NotImplementedError: operands whose promoted dtype is not floating.
    """
    g, x, n = _check_polygamma_backward(grad_output, input, n)
    return apply(_polygamma_backward, (g, x), {"n": n})
