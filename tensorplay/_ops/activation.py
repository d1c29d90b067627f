"""Activations: softplus, silu, gelu, leaky_relu, elu (selu, celu), hardsigmoid,
hardswish, mish, logsigmoid -- each a primitive with a fused derivative kernel
``<op>_backward(g, x, params)`` that is a primitive of its own.

Kernels: ``tensorplay/_kernels/activation.pyx.tp`` (one table row per op), point
functions in ``_activation_math.pxd`` (forward and derivative side by side).

=============  ====================================  ===============================
primitive      VJP (and JVP, with t for g)           rules of the _backward kernel
=============  ====================================  ===============================
softplus       softplus_backward(g, x, beta, thr)    d/dx: beta s (1 - s), s = sigm(bx)
silu           silu_backward(g, x)                   d/dx: s (1 - s) (2 + x (1 - 2s))
gelu           gelu_backward(g, x, approximate)      d/dx: phi(x) (2 - x^2) / tanh form
leaky_relu     leaky_relu_backward(g, x, slope)      piecewise constant: x gets None
elu            elu_backward(g, x, alpha, sc, isc)    d/dx: sc alpha isc^2 e^(isc x), x < 0
hardsigmoid    hardsigmoid_backward(g, x)            piecewise constant
hardswish      hardswish_backward(g, x)              d/dx: 1/3 on (-3, 3)
mish           mish_backward(g, x)                   d/dx: s (1-t^2) (2 + x(1-s) - 2xst)
logsigmoid     logsigmoid_backward(g, x)             d/dx: -s (1 - s)
=============  ====================================  ===============================

Each ``_backward`` kernel is linear in g, so its VJP and JVP for g are the kernel
itself; for x they are compositions of registered primitives (second order only).
Every ``_backward`` kernel is strong-zero in g (exactly 0 where g == 0).

Kinks follow the minimum-norm convention (PyTorch's documented autograd rule,
issue 7): at a kink with one-sided slopes a and b the derivative is 0 if they
differ in sign, else the smaller in magnitude (``_min_norm``).  leaky_relu at 0:
the slope for 0 <= slope <= 1 (as PyTorch), 1 above, 0 below 0; elu/selu at 0:
``_min_norm(scale alpha, scale)`` (PyTorch: the left slope); hardsigmoid at
+-3: 0 (as PyTorch); hardswish: 0 at -3 and 1 at 3 (PyTorch: -1/2 and 3/2).

PyTorch has ``selu`` and ``celu`` at the top level (``tensorplay.selu``); the
others only as ``tensorplay.nn.functional.<name>`` (bound in ``tensorplay._ops``
through ``INTERNAL``, not exported).
"""
import numpy as np

from tensorplay._pool import MIN_BYTES as POOL_MIN_BYTES
from tensorplay._pool import empty as pool_empty
from tensorplay._kernels import activation as _ka
from tensorplay._ops._common import CONFIG, broadcast_shape
from tensorplay._ops._validate import Signature, TensorArg, declare
from tensorplay._ops.elementwise import (exp, mul_backward, sigmoid, sigmoid_backward, tanh,
                                         where)
from tensorplay._ops.registry import apply, defop, tangent_sum
from tensorplay._ops import _batching as _B
from tensorplay._tensor import Tensor

__all__ = ["selu", "celu"]
INTERNAL = ["softplus", "silu", "gelu", "leaky_relu", "elu", "hardsigmoid", "hardswish",
            "mish", "logsigmoid",
            "softplus_backward", "silu_backward", "gelu_backward", "leaky_relu_backward",
            "elu_backward", "hardsigmoid_backward", "hardswish_backward", "mish_backward",
            "logsigmoid_backward"]

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _min_norm(a, b):
    """The minimum-norm element of the interval between the one-sided slopes a, b."""
    if (a <= 0 <= b) or (b <= 0 <= a):
        return 0.0
    return a if abs(a) < abs(b) else b


# ---------------------------------------------------------------- forward helpers
def _fwd(kernel, params):
    """forward(x, **p) -> kernel(x, out, *params(**p)); params gives p0..p3."""
    def forward(x, **p):
        out = (np.empty(x.shape, x.dtype) if x.nbytes < POOL_MIN_BYTES
               else pool_empty(x.shape, x.dtype))
        kernel(x, out, *params(**p), CONFIG.num_threads)
        return out
    return forward


def _bwd(name, kernel, params):
    """forward(g, x, **p) -> kernel(g, x, out, *params(**p)), g and x broadcast."""
    def forward(g, x, **p):
        sx = x.shape
        shape = broadcast_shape(g.shape, sx, name)
        out = (np.empty(shape, x.dtype) if shape == sx and x.nbytes < POOL_MIN_BYTES
               else pool_empty(shape, x.dtype))
        kernel(g, x, out, *params(**p), CONFIG.num_threads)
        return out
    return forward


_NONE = (0.0, 0.0, 0.0, 0.0)


def _noparams():
    return _NONE


def _defact(name, fwd_params, bwd_params, d2, saves=("inputs",)):
    """Register ``name`` and ``name_backward`` (kernels ``name_fwd``/``name_bwd``).

    ``d2(u, g, x, **p)`` is u * g * f''(x), the derivative of the backward kernel
    in x (None: piecewise constant).  The forward's VJP and JVP are the backward
    kernel; the backward kernel's are itself (for g) and d2 (for x)."""
    kf, kb = getattr(_ka, name + "_fwd"), getattr(_ka, name + "_bwd")
    bname = name + "_backward"
    box = {}

    def backward(g, x, **p):
        return apply(box["bwd"], (g, x), p)

    bwd = defop(
        bname, _bwd(bname, kb, bwd_params),
        vjp=(lambda gb, out, g, x, **p: backward(gb, x, **p),
             None if d2 is None else (lambda gb, out, g, x, **p: d2(gb, g, x, **p))),
        jvp=lambda ts, out, g, x, **p: tangent_sum(
            None if ts[0] is None else backward(ts[0], x, **p),
            None if ts[1] is None or d2 is None else d2(ts[1], g, x, **p)),
        saves=("inputs",), batch=_B.elementwise_rule)
    box["bwd"] = bwd
    fwd = defop(
        name, _fwd(kf, fwd_params),
        vjp=(lambda g, out, x, **p: backward(g, x, **p),),
        jvp=lambda ts, out, x, **p: backward(ts[0], x, **p),
        saves=saves, batch=_B.elementwise_rule)
    return fwd, bwd


def _mask(cond):
    """A bool Tensor outside the graph from a numpy condition."""
    return Tensor._wrap(np.asarray(cond))


# ---------------------------------------------------------------- second derivatives
def _softplus_d2(u, g, x, beta, threshold):
    # f'' = beta s (1 - s) where beta x <= threshold, else 0
    bx = x * beta
    d = sigmoid_backward(mul_backward(u, g) * beta, sigmoid(bx))
    return where(_mask(bx._data > threshold), 0.0, d)


def _silu_d2(u, g, x):
    s = sigmoid(x)
    return sigmoid_backward(mul_backward(u, g) * (2 + x * (1 - 2 * s)), s)


_INV_SQRT_2PI = 0.39894228040143267794
_K = 0.79788456080286535588        # sqrt(2 / pi)
_A = 0.044715


def _gelu_d2(u, g, x, approximate):
    ug = mul_backward(u, g)
    if approximate == "none":        # f'' = phi(x) (2 - x^2)
        return mul_backward(ug, exp(x * x * -0.5) * (2 - x * x) * _INV_SQRT_2PI)
    # f = x s(2u): f'' = 2 s (1 - s) (2u' + 2 x u'^2 (1 - 2s) + x u'')
    du = (1 + 3 * _A * x * x) * _K
    s = sigmoid(2 * _K * (x + _A * x * x * x))
    inner = 2 * du + 2 * x * du * du * (1 - 2 * s) + x * x * (6 * _K * _A)
    return sigmoid_backward(ug * (2 * inner), s)


def _elu_d2(u, g, x, alpha, scale, input_scale):
    # f'' = scale alpha input_scale^2 e^(input_scale x) for x < 0, else 0
    c = scale * alpha * input_scale * input_scale
    d = mul_backward(mul_backward(u, g), exp(x * input_scale) * c)
    return where(_mask(x._data < 0), d, 0.0)


def _hardswish_d2(u, g, x):
    inside = _mask((x._data > -3) & (x._data < 3))
    return where(inside, mul_backward(u, g) * (1.0 / 3.0), 0.0)


def _mish_d2(u, g, x):
    # f'' = s (1 - t^2) (2 + x (1 - s) - 2 x s t), t = tanh(softplus(x))
    s = sigmoid(x)
    t = tanh(softplus(x))
    return mul_backward(mul_backward(u, g), s * (1 - t * t) * (2 + x * (1 - s) - 2 * x * s * t))


def _logsigmoid_d2(u, g, x):
    return -sigmoid_backward(mul_backward(u, g), sigmoid(x))


# ---------------------------------------------------------------- the primitives
def _sp_params(beta, threshold):
    return (beta, threshold, 0.0, 0.0)


def _lr_params(negative_slope):
    return (negative_slope, 0.0, 0.0, 0.0)


def _lr_bparams(negative_slope):
    return (negative_slope, _min_norm(negative_slope, 1.0), 0.0, 0.0)


def _elu_params(alpha, scale, input_scale):
    return (scale * alpha, scale, input_scale, 0.0)


def _elu_bparams(alpha, scale, input_scale):
    left = scale * alpha * input_scale
    return (left, scale, input_scale, _min_norm(left, scale))


_softplus, _softplus_backward = _defact("softplus", _sp_params, _sp_params, _softplus_d2)
_silu, _silu_backward = _defact("silu", _noparams, _noparams, _silu_d2)
_leaky_relu, _leaky_relu_backward = _defact("leaky_relu", _lr_params, _lr_bparams, None)
_elu, _elu_backward = _defact("elu", _elu_params, _elu_bparams, _elu_d2)
_hardsigmoid, _hardsigmoid_backward = _defact("hardsigmoid", _noparams, _noparams, None)
_hardswish, _hardswish_backward = _defact("hardswish", _noparams, _noparams, _hardswish_d2)
_mish, _mish_backward = _defact("mish", _noparams, _noparams, _mish_d2)
_logsigmoid, _logsigmoid_backward = _defact("logsigmoid", _noparams, _noparams,
                                            _logsigmoid_d2)


# gelu: one primitive, two kernels (approximate='none' | 'tanh')
def _gelu_fwd(x, approximate):
    out = (np.empty(x.shape, x.dtype) if x.nbytes < POOL_MIN_BYTES
           else pool_empty(x.shape, x.dtype))
    (_ka.gelu_fwd if approximate == "none" else _ka.gelu_tanh_fwd)(
        x, out, 0.0, 0.0, 0.0, 0.0, CONFIG.num_threads)
    return out


def _gelu_bwd(g, x, approximate):
    shape = broadcast_shape(g.shape, x.shape, "gelu_backward")
    out = pool_empty(shape, x.dtype)
    (_ka.gelu_bwd if approximate == "none" else _ka.gelu_tanh_bwd)(
        g, x, out, 0.0, 0.0, 0.0, 0.0, CONFIG.num_threads)
    return out


_gelu_backward = defop(
    "gelu_backward", _gelu_bwd,
    vjp=(lambda gb, out, g, x, approximate: apply(_gelu_backward, (gb, x),
                                                  {"approximate": approximate}),
         lambda gb, out, g, x, approximate: _gelu_d2(gb, g, x, approximate)),
    jvp=lambda ts, out, g, x, approximate: tangent_sum(
        None if ts[0] is None else apply(_gelu_backward, (ts[0], x),
                                         {"approximate": approximate}),
        None if ts[1] is None else _gelu_d2(ts[1], g, x, approximate)),
    saves=("inputs",), batch=_B.elementwise_rule)
_gelu = defop(
    "gelu", _gelu_fwd,
    vjp=(lambda g, out, x, approximate: apply(_gelu_backward, (g, x),
                                              {"approximate": approximate}),),
    jvp=lambda ts, out, x, approximate: apply(_gelu_backward, (ts[0], x),
                                              {"approximate": approximate}),
    saves=("inputs",), batch=_B.elementwise_rule)


# ---------------------------------------------------------------- argument checks
def _float_sig(op):
    # float only: PyTorch's CPU kernels are "not implemented for 'Long'"
    return declare(Signature(op, TensorArg("input", "f")))


def _backward_sig(op):
    return declare(Signature(op, TensorArg("grad_output", numbers=True),
                             TensorArg("input", numbers=True),
                             promote=("grad_output", "input"),
                             broadcast=("grad_output", "input"), result_kinds="f",
                             forward_checks_broadcast=True))


_check = {op: _float_sig(op) for op in ("softplus", "silu", "gelu", "leaky_relu", "elu",
                                        "selu", "celu", "hardsigmoid", "hardswish", "mish",
                                        "logsigmoid")}
_check_backward = {op: _backward_sig(op + "_backward")
                   for op in ("softplus", "silu", "gelu", "leaky_relu", "elu",
                              "hardsigmoid", "hardswish", "mish", "logsigmoid")}


def number(op, name, value):
    """``value`` as a Python float; TypeError for anything but a real number."""
    if isinstance(value, Tensor) or not isinstance(value, (int, float, np.integer,
                                                           np.floating)):
        raise TypeError(f"{op}(): argument '{name}' must be a number, not "
                        f"{type(value).__name__}")
    return float(value)


def _approximate(op, approximate):
    if not isinstance(approximate, str):
        raise TypeError(f"{op}(): argument 'approximate' must be str, not "
                        f"{type(approximate).__name__}")
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"{op}(): approximate argument must be either none or tanh, "
                           f"got {approximate!r}")
    return approximate


_RAISES = """
    Raises:
        TypeError: a non-Tensor input, or a parameter that is not a number.
        NotImplementedError: an integer or bool tensor (float kernels only, as
            PyTorch's CPU kernels).
"""


# ---------------------------------------------------------------- public functions
def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta x)) / beta``, and ``x`` where ``beta x > threshold``
    (``torch.nn.functional.softplus``).  Computed as
    ``(max(bx, 0) + log1p(exp(-|bx|))) / beta``: finite and accurate at +-1000 for
    every beta and threshold.  Derivative ``sigmoid(beta x)`` (1 above the
    threshold).  Float tensors; same shape and dtype out."""
    x = _check["softplus"](input)
    p = {"beta": number("softplus", "beta", beta),
         "threshold": number("softplus", "threshold", threshold)}
    return apply(_softplus, (x,), p)


def silu(input):
    """``x * sigmoid(x)`` (``torch.nn.functional.silu``), stable for any x.  Float
    tensors; same shape and dtype out."""
    return apply(_silu, (_check["silu"](input),), {})


def gelu(input, approximate="none"):
    """``x * Phi(x)``, Phi the standard normal CDF (``approximate='none'``), or
    ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` (``'tanh'``), as
    ``torch.nn.functional.gelu``.  Computed as ``x erfc(-x/sqrt2) / 2`` and
    ``x sigmoid(2 sqrt(2/pi)(...))``: no cancellation for x << 0.

    Raises:
        TypeError: a non-Tensor input, or a non-str ``approximate``.
        RuntimeError: ``approximate`` not 'none' or 'tanh' (PyTorch's type).
        NotImplementedError: an integer or bool tensor.
    """
    x = _check["gelu"](input)
    return apply(_gelu, (x,), {"approximate": _approximate("gelu", approximate)})


def leaky_relu(input, negative_slope=0.01):
    """``x > 0 ? x : negative_slope * x`` (``torch.nn.functional.leaky_relu``).

    Derivative 1 for x > 0, negative_slope for x < 0; at 0 the minimum-norm
    subgradient: negative_slope for 0 <= slope <= 1 (as PyTorch), 1 for a slope
    above 1 and 0 for a negative slope (PyTorch: the slope in both cases)."""
    x = _check["leaky_relu"](input)
    return apply(_leaky_relu, (x,),
                 {"negative_slope": number("leaky_relu", "negative_slope", negative_slope)})


def _elu_call(op, input, alpha, scale, input_scale):
    x = _check[op](input)
    return apply(_elu, (x,), {"alpha": alpha, "scale": scale, "input_scale": input_scale})


def elu(input, alpha=1.0):
    """``x > 0 ? x : alpha (exp(x) - 1)`` (``torch.nn.functional.elu``), through
    expm1.  Derivative 1 / ``alpha exp(x)``; at 0 (a kink unless alpha == 1) the
    minimum-norm subgradient ``_min_norm(alpha, 1)`` (PyTorch: alpha)."""
    return _elu_call("elu", input, number("elu", "alpha", alpha), 1.0, 1.0)


def selu(input):
    """``scale * elu(x, alpha)`` with PyTorch's constants (alpha = 1.6732632...,
    scale = 1.0507009...): ``torch.selu``.  At 0 (a concave kink: slopes
    scale alpha on the left, scale on the right) the derivative is ``scale``, the
    minimum-norm supergradient (PyTorch: scale alpha)."""
    return _elu_call("selu", input, SELU_ALPHA, SELU_SCALE, 1.0)


def celu(input, alpha=1.0):
    """``max(0, x) + min(0, alpha (exp(x / alpha) - 1))`` (``torch.celu``);
    differentiable at 0 (both slopes 1).

    Raises:
        RuntimeError: alpha == 0 (as PyTorch's "alpha cannot be 0 for CELU").
    """
    alpha = number("celu", "alpha", alpha)
    if alpha == 0:
        raise RuntimeError("celu(): ZeroDivisionError: alpha cannot be 0 for CELU")
    return _elu_call("celu", input, alpha, 1.0, 1.0 / alpha)


def hardsigmoid(input):
    """``min(max(x + 3, 0), 6) / 6`` (``torch.nn.functional.hardsigmoid``).
    Derivative 1/6 on (-3, 3), 0 outside and at both kinks (minimum norm; PyTorch
    too)."""
    return apply(_hardsigmoid, (_check["hardsigmoid"](input),), {})


def hardswish(input):
    """``x * min(max(x + 3, 0), 6) / 6`` (``torch.nn.functional.hardswish``).
    Derivative 0 below -3, (2x + 3)/6 on (-3, 3), 1 above 3; at the (concave)
    kinks the minimum-norm supergradients 0 at -3 and 1 at 3 (PyTorch: -1/2, 3/2)."""
    return apply(_hardswish, (_check["hardswish"](input),), {})


def mish(input):
    """``x * tanh(softplus(x))`` (``torch.nn.functional.mish``), with one exp:
    ``tanh(softplus(x)) = n / (n + 2)``, ``n = e^x (e^x + 2)``; finite at +-1000."""
    return apply(_mish, (_check["mish"](input),), {})


def logsigmoid(input):
    """``log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|))``
    (``torch.nn.functional.logsigmoid``): exact at +-1000 (-1000 and 0).
    Derivative ``sigmoid(-x)``."""
    return apply(_logsigmoid, (_check["logsigmoid"](input),), {})


for _f in (softplus, silu, leaky_relu, elu, selu, celu, hardsigmoid, hardswish, mish,
           logsigmoid):
    _f.__doc__ += _RAISES


# ---------------------------------------------------------------- fused derivative kernels
def _bcall(op, grad_output, input, params):
    g, x = _check_backward[op](grad_output, input)
    return apply(_PRIMS[op], (g, x), params)


def softplus_backward(grad_output, input, beta=1.0, threshold=20.0):
    """``g * (beta x > threshold ? 1 : sigmoid(beta x))``: softplus's VJP and JVP."""
    return _bcall("softplus", grad_output, input,
                  {"beta": number("softplus_backward", "beta", beta),
                   "threshold": number("softplus_backward", "threshold", threshold)})


def silu_backward(grad_output, input):
    """``g * s (1 + x (1 - s))``, s = sigmoid(x): silu's VJP and JVP."""
    return _bcall("silu", grad_output, input, {})


def gelu_backward(grad_output, input, approximate="none"):
    """``g * gelu'(x)`` for either form of gelu: its VJP and JVP."""
    return _bcall("gelu", grad_output, input,
                  {"approximate": _approximate("gelu_backward", approximate)})


def leaky_relu_backward(grad_output, input, negative_slope=0.01):
    """``g * leaky_relu'(x)`` (the minimum-norm subgradient at 0, see leaky_relu)."""
    return _bcall("leaky_relu", grad_output, input,
                  {"negative_slope": number("leaky_relu_backward", "negative_slope",
                                            negative_slope)})


def elu_backward(grad_output, input, alpha=1.0, scale=1.0, input_scale=1.0):
    """``g * d/dx [x > 0 ? scale x : scale alpha (exp(input_scale x) - 1)]`` (the
    minimum-norm subgradient at 0): the VJP and JVP of elu, selu and celu."""
    op = "elu_backward"
    return _bcall("elu", grad_output, input,
                  {"alpha": number(op, "alpha", alpha), "scale": number(op, "scale", scale),
                   "input_scale": number(op, "input_scale", input_scale)})


def hardsigmoid_backward(grad_output, input):
    """``g / 6`` on (-3, 3), else 0: hardsigmoid's VJP and JVP."""
    return _bcall("hardsigmoid", grad_output, input, {})


def hardswish_backward(grad_output, input):
    """``g * hardswish'(x)`` (0 at -3, 1 at 3): hardswish's VJP and JVP."""
    return _bcall("hardswish", grad_output, input, {})


def mish_backward(grad_output, input):
    """``g * (t + x sigmoid(x) (1 - t^2))``, t = tanh(softplus(x)): mish's VJP and JVP."""
    return _bcall("mish", grad_output, input, {})


def logsigmoid_backward(grad_output, input):
    """``g * sigmoid(-x)``: logsigmoid's VJP and JVP."""
    return _bcall("logsigmoid", grad_output, input, {})


_PRIMS = {"softplus": _softplus_backward, "silu": _silu_backward, "gelu": _gelu_backward,
          "leaky_relu": _leaky_relu_backward, "elu": _elu_backward,
          "hardsigmoid": _hardsigmoid_backward, "hardswish": _hardswish_backward,
          "mish": _mish_backward, "logsigmoid": _logsigmoid_backward}

_BACKWARD_DOC = """
    Exactly 0 where ``grad_output`` is 0 (the strong zero).  Broadcastable operands
    (Tensors or numbers), promoted together; the result dtype must be float.

    Raises:
        TypeError: an operand that is neither a Tensor nor a number, or a
            parameter that is not a number.
        NotImplementedError: operands that promote to an integer or bool dtype.
        RuntimeError: shapes that do not broadcast.
"""
for _f in (softplus_backward, silu_backward, gelu_backward, leaky_relu_backward,
           elu_backward, hardsigmoid_backward, hardswish_backward, mish_backward,
           logsigmoid_backward):
    _f.__doc__ += _BACKWARD_DOC
del _f
