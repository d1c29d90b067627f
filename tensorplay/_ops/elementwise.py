"""Elementwise primitives: unary math, binary arithmetic, and their fused
derivative kernels (``tanh_backward`` and friends), each a registered primitive
with forward, VJP and JVP side by side.

For a unary elementwise op the VJP and the JVP are the same map (multiply by
f'(x)), so one ``deriv(g, out, x)`` serves both (PyTorch's ``auto_element_wise``).
Forward kernels live in ``tensorplay/_kernels/unary.pyx`` and ``binary.pyx``;
integer and bool operands (never differentiable) use numpy's ufuncs.

Every derivative of an elementwise primitive runs as one fused kernel pass,
``g * f'(x)`` in one loop, and that kernel is a primitive of its own (with VJP
and JVP rules written in these ops, so higher orders work):

=========  ==========================================  ============================
primitive  VJP (and JVP, with t for g)                 fused derivative primitives
=========  ==========================================  ============================
exp        mul_backward(g, out)                        mul_backward
log        div_backward(g, x)                          div_backward
sqrt       sqrt_backward(g, out)                       sqrt_backward
tanh       tanh_backward(g, out)                       tanh_backward
sigmoid    sigmoid_backward(g, out)                    sigmoid_backward
relu       relu_backward(g, x)                         relu_backward
mul        mul_backward(g, b), mul_backward(g, a)      mul_backward
div        div_backward(g, b), div_backward_other(g, out, b)
pow        pow_backward_base(g, a, b), pow_backward_exponent(g, out, a)
where      where(c, g, 0), where(c, 0, g)              (a select: already one pass)
=========  ==========================================  ============================

**Strong zero.**  Every fused derivative kernel returns exactly 0 where its
cotangent (or tangent) ``g`` is 0, whatever f'(x) is there: ``0 * inf = 0`` and
``0 * nan = 0`` (one select in the loop; ``mul_backward`` and
``div_backward_other`` also where their second factor is 0).  So the branch that ``where`` did not
select cannot turn a gradient into nan: ``where(x < 50, x.exp(), 3 * x)`` at
x = 200 (float32, exp overflows) has gradient 3, and ``where(s > 0, sqrt(s), 0)``
has gradient 0 at s = 0, in reverse mode, forward mode and at second order.  A
nonzero g times an infinite or nan f'(x) still gives inf or nan (IEEE 754).
See docs/DECISIONS.md, "Strong zero".
"""
import numpy as np

from tensorplay._pool import MIN_BYTES as POOL_MIN_BYTES
from tensorplay._pool import empty as pool_empty
from tensorplay import _dtype
from tensorplay._kernels import binary as _kb
from tensorplay._kernels import binary_math as _kbm
from tensorplay._kernels import unary as _ku
from tensorplay._ops._common import CONFIG, broadcast_shape
from tensorplay._ops._validate import (BoolArg, Signature, TensorArg,  # noqa: F401
                                       declare)
from tensorplay._ops.registry import apply, defop, tangent_sum
from tensorplay._ops import _batching as _B
from tensorplay._tensor import Tensor

__all__ = ["neg", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "add", "sub", "mul",
           "div", "pow", "where", "tanh_backward", "sigmoid_backward", "relu_backward",
           "mul_backward", "div_backward", "sqrt_backward", "div_backward_other",
           "pow_backward_base", "pow_backward_exponent",
           "eq", "ne", "lt", "le", "gt", "ge"]


# ---------------------------------------------------------------- forward helpers
def _unary_forward(kernel, ufunc=None):
    def forward(x):
        # small outputs skip the pool's Python call (per-op overhead counts)
        out = (np.empty(x.shape, x.dtype) if x.nbytes < POOL_MIN_BYTES
               else pool_empty(x.shape, x.dtype))
        if x.dtype.kind == "f":
            kernel(x, out, CONFIG.num_threads)
        else:
            ufunc(x, out=out)
        return out
    return forward


def _binary_forward(name, kernel, ufunc=None):
    def forward(a, b):
        sa = a.shape
        shape = broadcast_shape(sa, b.shape, name)
        out = (np.empty(shape, a.dtype) if shape is sa and a.nbytes < POOL_MIN_BYTES
               else pool_empty(shape, a.dtype))
        if a.dtype.kind == "f":
            kernel(a, b, out, CONFIG.num_threads)
        else:
            ufunc(a, b, out=out)
        return out
    return forward


def _ternary_forward(name, kernel):
    def forward(a, b, c):
        shape = broadcast_shape(broadcast_shape(a.shape, b.shape, name), c.shape, name)
        # small outputs skip the pool's Python call (b, y or a: usually the full shape)
        small = shape == b.shape and b.nbytes < POOL_MIN_BYTES
        out = np.empty(shape, a.dtype) if small else pool_empty(shape, a.dtype)
        kernel(a, b, c, out, CONFIG.num_threads)
        return out
    return forward


def _defunary(name, kernel, deriv, saves, ufunc=None):
    """Register an elementwise unary op whose VJP and JVP both are ``deriv``."""
    return defop(name, _unary_forward(kernel, ufunc),
                 vjp=(deriv,),
                 jvp=lambda ts, out, x: deriv(ts[0], out, x),
                 saves=saves, batch=_B.elementwise_rule)


# ---------------------------------------------------------------- unary math
_neg = defop("neg", _unary_forward(_ku.neg_fwd, np.negative),
             vjp=(lambda g, out, x: -g,),
             jvp=lambda ts, out, x: -ts[0], batch=_B.elementwise_rule)
# d exp(x) = exp(x) dx
_exp = _defunary("exp", _ku.exp_fwd, lambda g, out, x: mul_backward(g, out), ("out",))
# d log(x) = dx / x
_log = _defunary("log", _ku.log_fwd, lambda g, out, x: div_backward(g, x), ("inputs",))
# d sqrt(x) = dx / (2 sqrt(x))
_sqrt = _defunary("sqrt", _ku.sqrt_fwd, lambda g, out, x: sqrt_backward(g, out), ("out",))
# d tanh(x) = (1 - tanh(x)^2) dx, by the fused tanh_backward kernel
_tanh = _defunary("tanh", _ku.tanh_fwd, lambda g, out, x: tanh_backward(g, out), ("out",))
# d sigmoid(x) = s (1 - s) dx
_sigmoid = _defunary("sigmoid", _ku.sigmoid_fwd,
                     lambda g, out, x: sigmoid_backward(g, out), ("out",))
# relu'(x) = [x > 0]; the subgradient at 0 is 0 (PyTorch's convention)
_relu = _defunary("relu", _ku.relu_fwd, lambda g, out, x: relu_backward(g, x), ("inputs",),
                  ufunc=lambda x, out: np.maximum(x, 0, out=out))


# ---------------------------------------------------------------- fused derivative kernels
# Each is strong-zero in its first argument g (see the module docstring), and so
# are the rules below where they can be: a derivative of a strong-zero kernel with
# respect to another argument is again written with a strong-zero kernel, so that
# second-order passes through an unselected where-branch stay finite too.
#
# mul_backward(g, y) = g * y: the VJP of exp (y = exp(x)) and of mul (y = other).
_mul_backward = defop(
    "mul_backward", _binary_forward("mul_backward", _kb.mul_vjp),
    vjp=(lambda gb, out, g, y: mul_backward(gb, y),
         lambda gb, out, g, y: mul_backward(gb, g)),
    jvp=lambda ts, out, g, y: tangent_sum(
        None if ts[0] is None else mul_backward(ts[0], y),
        None if ts[1] is None else mul_backward(ts[1], g)),
    saves=("inputs",), batch=_B.elementwise_rule)
# div_backward(g, x) = g / x: the VJP of log and of div's numerator.  d/dx = -f/x.
_div_backward = defop(
    "div_backward", _binary_forward("div_backward", _kb.div_vjp),
    vjp=(lambda gb, out, g, x: div_backward(gb, x),
         lambda gb, out, g, x: div_backward_other(gb, out, x)),
    jvp=lambda ts, out, g, x: tangent_sum(
        None if ts[0] is None else div_backward(ts[0], x),
        None if ts[1] is None else div_backward_other(ts[1], out, x)),
    saves=("inputs", "out"), batch=_B.elementwise_rule)
# sqrt_backward(g, y) = g / (2 y), with y = sqrt(x).  d/dy = -f/y.
_sqrt_backward = defop(
    "sqrt_backward", _binary_forward("sqrt_backward", _kb.sqrt_vjp),
    vjp=(lambda gb, out, g, y: sqrt_backward(gb, y),
         lambda gb, out, g, y: div_backward_other(gb, out, y)),
    jvp=lambda ts, out, g, y: tangent_sum(
        None if ts[0] is None else sqrt_backward(ts[0], y),
        None if ts[1] is None else div_backward_other(ts[1], out, y)),
    saves=("inputs", "out"), batch=_B.elementwise_rule)
# tanh_backward(g, y) = g * (1 - y^2), with y = tanh(x).
_tanh_backward = defop(
    "tanh_backward", _binary_forward("tanh_backward", _kb.tanh_vjp),
    vjp=(lambda gb, out, g, y: tanh_backward(gb, y),
         lambda gb, out, g, y: -2 * mul_backward(gb, mul_backward(g, y))),
    jvp=lambda ts, out, g, y: tangent_sum(
        None if ts[0] is None else tanh_backward(ts[0], y),
        None if ts[1] is None else -2 * mul_backward(ts[1], mul_backward(g, y))),
    saves=("inputs",), batch=_B.elementwise_rule)
# sigmoid_backward(g, y) = g * y * (1 - y), with y = sigmoid(x).
_sigmoid_backward = defop(
    "sigmoid_backward", _binary_forward("sigmoid_backward", _kb.sigmoid_vjp),
    vjp=(lambda gb, out, g, y: sigmoid_backward(gb, y),
         lambda gb, out, g, y: mul_backward(gb, mul_backward(g, 1 - 2 * y))),
    jvp=lambda ts, out, g, y: tangent_sum(
        None if ts[0] is None else sigmoid_backward(ts[0], y),
        None if ts[1] is None else mul_backward(ts[1], mul_backward(g, 1 - 2 * y))),
    saves=("inputs",), batch=_B.elementwise_rule)
# relu_backward(g, x) = g * [x > 0]; piecewise constant in x, so x gets no gradient.
_relu_backward = defop(
    "relu_backward", _binary_forward("relu_backward", _kb.relu_vjp),
    vjp=(lambda gb, out, g, x: relu_backward(gb, x), None),
    jvp=lambda ts, out, g, x: None if ts[0] is None else relu_backward(ts[0], x),
    saves=("inputs",), batch=_B.elementwise_rule)
# div_backward_other(g, y, b) = -(g y) / b, with y = a / b: div's VJP for the
# denominator, and the second derivative of div_backward/sqrt_backward.  Exactly
# 0 where g == 0 or y == 0.  d/dg = -y/b, d/dy = -g/b, d/db = g y / b^2 = -f/b.
_div_backward_other = defop(
    "div_backward_other", _ternary_forward("div_backward_other", _kb.div_vjp_other),
    vjp=(lambda gb, out, g, y, b: div_backward_other(gb, y, b),
         lambda gb, out, g, y, b: div_backward_other(gb, g, b),
         lambda gb, out, g, y, b: div_backward_other(gb, out, b)),
    jvp=lambda ts, out, g, y, b: tangent_sum(
        None if ts[0] is None else div_backward_other(ts[0], y, b),
        None if ts[1] is None else div_backward_other(ts[1], g, b),
        None if ts[2] is None else div_backward_other(ts[2], out, b)),
    saves=("inputs", "out"), batch=_B.elementwise_rule)


# pow_backward_base(g, a, b) = g b a^(b-1), 0 where b == 0 (PyTorch's convention).
# d/da = g b (b-1) a^(b-2): the same kernel one power down (0 where b == 0 or 1);
# d/db = g a^(b-1) (1 + b log a) = g q + b * pow_backward_exponent(g, q, a), with
# q = a^(b-1), and 0 where b == 0 (the mask is constant there).
def _pbb_dbase(u, g, a, b):
    """u * d pow_backward_base(g, a, b) / da, u the cotangent (or tangent)."""
    return pow_backward_base(mul_backward(u, g) * b, a, b - 1)


def _pbb_dexp(u, g, a, b):
    """u * d pow_backward_base(g, a, b) / db."""
    ug = mul_backward(u, g)
    q = a ** (b - 1)
    return where(b == 0, 0.0, mul_backward(ug, q) + pow_backward_exponent(ug * b, q, a))


_pow_backward_base = defop(
    "pow_backward_base", _ternary_forward("pow_backward_base", _kb.pow_vjp_base),
    vjp=(lambda gb, out, g, a, b: pow_backward_base(gb, a, b),
         lambda gb, out, g, a, b: _pbb_dbase(gb, g, a, b),
         lambda gb, out, g, a, b: _pbb_dexp(gb, g, a, b)),
    jvp=lambda ts, out, g, a, b: tangent_sum(
        None if ts[0] is None else pow_backward_base(ts[0], a, b),
        None if ts[1] is None else _pbb_dbase(ts[1], g, a, b),
        None if ts[2] is None else _pbb_dexp(ts[2], g, a, b)),
    saves=("inputs",), batch=_B.elementwise_rule)


# pow_backward_exponent(g, y, a) = g y log a, with y = a^b; 0 where a == 0 and y
# is finite (that is b >= 0: PyTorch's convention).  d/dg = y log a,
# d/dy = g log a, d/da = g y / a, each 0 under the same mask.
def _pbe_mask(y, a):
    return Tensor._wrap(np.logical_and(a._data == 0, np.isfinite(y._data)))


def _pbe_dy(u, g, y, a):
    return where(_pbe_mask(y, a), 0.0, mul_backward(mul_backward(u, g), log(a)))


def _pbe_da(u, g, y, a):
    return where(_pbe_mask(y, a), 0.0, div_backward(mul_backward(mul_backward(u, g), y), a))


_pow_backward_exponent = defop(
    "pow_backward_exponent", _ternary_forward("pow_backward_exponent", _kb.pow_vjp_exponent),
    vjp=(lambda gb, out, g, y, a: pow_backward_exponent(gb, y, a),
         lambda gb, out, g, y, a: _pbe_dy(gb, g, y, a),
         lambda gb, out, g, y, a: _pbe_da(gb, g, y, a)),
    jvp=lambda ts, out, g, y, a: tangent_sum(
        None if ts[0] is None else pow_backward_exponent(ts[0], y, a),
        None if ts[1] is None else _pbe_dy(ts[1], g, y, a),
        None if ts[2] is None else _pbe_da(ts[2], g, y, a)),
    saves=("inputs",), batch=_B.elementwise_rule)


# ---------------------------------------------------------------- binary arithmetic
_add = defop("add", _binary_forward("add", _kb.add_fwd, np.add),
             vjp=(lambda g, out, a, b: g, lambda g, out, a, b: g),
             jvp=lambda ts, out, a, b: tangent_sum(*ts), batch=_B.elementwise_rule)
_sub = defop("sub", _binary_forward("sub", _kb.sub_fwd, np.subtract),
             vjp=(lambda g, out, a, b: g, lambda g, out, a, b: -g),
             jvp=lambda ts, out, a, b: tangent_sum(ts[0], None if ts[1] is None else -ts[1]),
             batch=_B.elementwise_rule)
_mul = defop("mul", _binary_forward("mul", _kb.mul_fwd, np.multiply),
             vjp=(lambda g, out, a, b: mul_backward(g, b),
                  lambda g, out, a, b: mul_backward(g, a)),
             jvp=lambda ts, out, a, b: tangent_sum(
                 None if ts[0] is None else mul_backward(ts[0], b),
                 None if ts[1] is None else mul_backward(ts[1], a)),
             saves=("inputs",), batch=_B.elementwise_rule)
# d(a/b) = da / b - (a/b) db / b
_div = defop("div", _binary_forward("div", _kb.div_fwd),
             vjp=(lambda g, out, a, b: div_backward(g, b),
                  lambda g, out, a, b: div_backward_other(g, out, b)),
             jvp=lambda ts, out, a, b: tangent_sum(
                 None if ts[0] is None else div_backward(ts[0], b),
                 None if ts[1] is None else div_backward_other(ts[1], out, b)),
             saves=("inputs", "out"), batch=_B.elementwise_rule)


# d(a^b) = b a^(b-1) da + a^b log(a) db, with PyTorch's conventions where the
# formulas give nan: the base's derivative is 0 where b == 0 (0 * 0^-1), the
# exponent's is 0 where a == 0 and b >= 0 (0 * log 0).  Both are fused kernels.
def _int_pow(a, b, out):
    if np.any(b < 0):
        raise RuntimeError("pow(): integers to negative integer powers are not allowed")
    np.power(a, b, out=out)


def _pow_dbase(g, a, b):
    """g * d(a^b)/da = g b a^(b-1), and exactly 0 where b == 0 (PyTorch: the mask
    is outside the product, so an inf or nan g does not leak through).  A 0-d
    exponent of 0 gives zeros with no graph, as PyTorch's scalar-exponent path."""
    if b.ndim == 0 and b._data == 0:
        return _zeros_outside_graph(a, g)
    return pow_backward_base(g, a, b)


def _zeros_outside_graph(a, g):
    """Zeros of the broadcast shape of ``a`` and ``g``, in g's dtype, outside the graph."""
    return Tensor._wrap(np.zeros(broadcast_shape(a._data.shape, g._data.shape, "pow"),
                                 g._data.dtype))


_pow = defop("pow", _binary_forward("pow", _kb.pow_fwd, _int_pow),
             vjp=(lambda g, out, a, b: _pow_dbase(g, a, b),
                  lambda g, out, a, b: pow_backward_exponent(g, out, a)),
             jvp=lambda ts, out, a, b: tangent_sum(
                 None if ts[0] is None else _pow_dbase(ts[0], a, b),
                 None if ts[1] is None else pow_backward_exponent(ts[1], out, a)),
             saves=("inputs", "out"), batch=_B.elementwise_rule)


# where(c, a, b): c selects; no gradient flows to the condition.  Float values
# run the where_fwd kernel (tensorplay/_kernels/binary_math.pyx: broadcasting, any
# strides, OpenMP above a grain); integer and bool values numpy's np.where.
def _where_forward(cond, a, b):
    if a.dtype.kind != "f" or type(cond) is not np.ndarray:
        return np.where(cond, a, b)         # (a numpy bool scalar for a 0-d cond: numpy)
    shape = broadcast_shape(broadcast_shape(cond.shape, a.shape, "where"), b.shape, "where")
    out = (np.empty(shape, a.dtype) if a.nbytes < POOL_MIN_BYTES and shape == a.shape
           else pool_empty(shape, a.dtype))
    _kbm.where_fwd(cond, a, b, out, CONFIG.num_threads)
    return out


_where = defop("where", _where_forward,
               vjp=(None,
                    lambda g, out, c, a, b: where(c, g, 0.0),
                    lambda g, out, c, a, b: where(c, 0.0, g)),
               jvp=lambda ts, out, c, a, b: where(
                   c, 0.0 if ts[1] is None else ts[1], 0.0 if ts[2] is None else ts[2]),
               saves=("inputs",), batch=_B.elementwise_rule)


def where(condition, input=None, other=None):
    """Elementwise ``input`` where ``condition`` is True, else ``other``.

    ``where(condition)`` alone is ``nonzero(condition, as_tuple=True)``, as PyTorch.

    Args:
        condition (Tensor): bool, broadcastable with the others.
        input, other (Tensor or number): values; promoted to one dtype (PyTorch's
            rules) and broadcast together with ``condition``.

    Returns:
        Tensor of the broadcast shape.  Gradients flow to ``input`` and ``other``
        where each is selected; the condition gets none.

    Derivatives and the unselected branch (the strong zero): the branch that is
    not selected receives a cotangent of exactly 0, and every fused derivative
    kernel maps a zero cotangent to exactly 0 whatever the local derivative is
    there (``0 * inf = 0 * nan = 0``).  So an inf or nan in the unselected
    branch's derivative no longer leaks through, unlike PyTorch and JAX, where
    the advice is a "double where"::

        y = where(x < 50, x.exp(), 3 * x)        # x = 200, float32: exp is inf
        grad(y, x) == 3                           # PyTorch gives nan
        s = (x * x).sum()
        n = where(s > 0, sqrt(s), 0.0)           # a "safe" norm
        grad(n, x) == 0 at x = 0                  # PyTorch gives nan

    The same holds in forward mode and at second order.  Branch values are still
    computed: an overflow or nan in the unselected branch's forward value is
    harmless, but one in a selected branch propagates as IEEE 754 says.

    Raises:
        TypeError: a condition that is not a Tensor, or values that are neither
            Tensors nor numbers.
        RuntimeError: a condition that is not a bool tensor (PyTorch's type), or
            shapes that do not broadcast.
    """
    if input is None and other is None:
        from tensorplay._ops.index_search import nonzero
        return nonzero(condition, as_tuple=True)
    condition, a, b = _check_where(condition, input, other)
    return apply(_where, (condition, a, b), {})


# ---------------------------------------------------------------- argument declarations
# One Signature per public function (tensorplay/_ops/_validate.py): the checks the
# function runs, and what tests/test_fuzz.py draws valid and invalid arguments from.
def _binary_sig(op, names=("input", "other"), kinds="fib", exc=NotImplementedError,
                message=None, forward_checks_broadcast=True, **kw):
    """Two operands (Tensors or numbers), promoted together and broadcast (by
    default the primitive's forward, ``_binary_forward``, raises the broadcast
    error before its kernel runs)."""
    return Signature(op, *(TensorArg(n, kinds, numbers=True, exc=exc, message=message)
                           for n in names),
                     promote=names, broadcast=names,
                     forward_checks_broadcast=forward_checks_broadcast, **kw)


def _ternary_sig(op, names):
    """Three float operands of a fused derivative kernel."""
    return Signature(op, *(TensorArg(n, numbers=True) for n in names), promote=names,
                     broadcast=names, float_result=True, result_kinds="f")


_check_where = declare(Signature(
    "where", TensorArg("condition", "b", exc=RuntimeError),
    TensorArg("input", numbers=True), TensorArg("other", numbers=True),
    promote=("input", "other"), broadcast=("condition", "input", "other")))
_check_neg = declare(Signature("neg", TensorArg(
    "input", "fi", exc=RuntimeError,
    message="negation, the `-` operator, on a bool tensor is not supported; use "
            "logical_not instead")))
_check_exp, _check_log, _check_sqrt, _check_tanh, _check_sigmoid = (
    declare(Signature(op, TensorArg("input", to_float=True)))
    for op in ("exp", "log", "sqrt", "tanh", "sigmoid"))
_check_relu = declare(Signature("relu", TensorArg("input", "fi", exc=RuntimeError)))
# the fused derivative kernels have float loops only (PyTorch: tanh_backward is
# "not implemented for 'Long'"); the division-like ones promote integers to float
_check_tanh_backward = declare(_binary_sig("tanh_backward", ("grad_output", "output"),
                                           result_kinds="f"))
_check_sigmoid_backward = declare(_binary_sig("sigmoid_backward", ("grad_output", "output"),
                                              result_kinds="f"))
_check_relu_backward = declare(_binary_sig("relu_backward", ("grad_output", "input"),
                                           result_kinds="f"))
_check_mul_backward = declare(_binary_sig("mul_backward", ("grad_output", "other"),
                                          result_kinds="f"))
_check_div_backward = declare(_binary_sig("div_backward", ("grad_output", "other"),
                                          float_result=True, result_kinds="f"))
_check_sqrt_backward = declare(_binary_sig("sqrt_backward", ("grad_output", "output"),
                                           float_result=True, result_kinds="f"))
_check_div_backward_other = declare(_ternary_sig("div_backward_other",
                                                 ("grad_output", "output", "other")))
_check_pow_backward_base = declare(_ternary_sig("pow_backward_base",
                                                ("grad_output", "input", "exponent")))
_check_pow_backward_exponent = declare(_ternary_sig("pow_backward_exponent",
                                                    ("grad_output", "output", "input")))
_check_add = declare(_binary_sig("add"))
_check_sub = declare(_binary_sig(
    "sub", kinds="fi", exc=RuntimeError,
    message="subtraction, the `-` operator, with a bool tensor is not supported; to "
            "invert a mask, use the `~` or `logical_not()` operator instead"))
_check_mul = declare(_binary_sig("mul"))
_check_div = declare(_binary_sig("div", float_result=True))
_check_pow = declare(_binary_sig("pow", ("input", "exponent"), result_kinds="fi"))


# ---------------------------------------------------------------- public functions
def neg(input):
    """``-input``, elementwise.  Any dtype but bool; same shape and dtype out.

    Raises:
        TypeError: a non-Tensor input.  RuntimeError: a bool tensor (as PyTorch).
    """
    return apply(_neg, (_check_neg(input),), {})


def exp(input):
    """``e ** input``, elementwise.  Integer and bool input is promoted to the default
    float dtype.  Raises TypeError for a non-Tensor input."""
    return apply(_exp, (_check_exp(input),), {})


def log(input):
    """Natural logarithm, elementwise.  Domain x > 0; log(0) = -inf, log(x<0) = nan
    (IEEE 754, as numpy and PyTorch).  Integer input gives the default float dtype."""
    return apply(_log, (_check_log(input),), {})


def sqrt(input):
    """Square root, elementwise.  sqrt(x<0) = nan; the derivative at 0 is inf.
    Integer input gives the default float dtype."""
    return apply(_sqrt, (_check_sqrt(input),), {})


def tanh(input):
    """Hyperbolic tangent, elementwise.  Integer input gives the default float dtype."""
    return apply(_tanh, (_check_tanh(input),), {})


def sigmoid(input):
    """Logistic function ``1 / (1 + exp(-x))``, elementwise, computed without overflow.
    Integer input gives the default float dtype."""
    return apply(_sigmoid, (_check_sigmoid(input),), {})


def relu(input):
    """``max(x, 0)``, elementwise; same dtype as the input.  The gradient at 0 is 0.

    Raises:
        TypeError: a non-Tensor input.  RuntimeError: a bool tensor (as PyTorch).
    """
    return apply(_relu, (_check_relu(input),), {})


_FUSED_RAISES = """
    Raises:
        TypeError: an operand that is neither a Tensor nor a number.
        NotImplementedError: operands whose promoted dtype is not floating (the
            kernel has float32 and float64 loops only; a RuntimeError subclass).
        RuntimeError: shapes that do not broadcast.
"""


def tanh_backward(grad_output, output):
    """``grad_output * (1 - output**2)``: the VJP of tanh given its output.

    Same-shape or broadcastable float tensors; exactly 0 where ``grad_output`` is
    0 (the strong zero)."""
    g, y = _check_tanh_backward(grad_output, output)
    return apply(_tanh_backward, (g, y), {})


def sigmoid_backward(grad_output, output):
    """``grad_output * output * (1 - output)``: the VJP of sigmoid given its output.

    Exactly 0 where ``grad_output`` is 0 (the strong zero)."""
    g, y = _check_sigmoid_backward(grad_output, output)
    return apply(_sigmoid_backward, (g, y), {})


def relu_backward(grad_output, input):
    """``grad_output * (input > 0)``: the VJP of relu given its input (a select)."""
    g, x = _check_relu_backward(grad_output, input)
    return apply(_relu_backward, (g, x), {})


def mul_backward(grad_output, other):
    """``grad_output * other``, exactly 0 where either factor is 0 (the strong zero:
    ``0 * inf = inf * 0 = 0 * nan = 0``).  The VJP and JVP of ``mul`` (other = the
    other factor) and of ``exp`` (other = exp's output), in one fused pass.
    Strong on both sides because the rules of the fused kernels use it for the
    derivative of a kernel with respect to its second argument, which is 0
    wherever the kernel's own cotangent is 0.

    Args:
        grad_output, other (Tensor or number): broadcastable, promoted as for
            ``mul``; the promoted dtype must be float32 or float64.

    Returns:
        Tensor of the broadcast shape.
    """
    g, y = _check_mul_backward(grad_output, other)
    return apply(_mul_backward, (g, y), {})


def div_backward(grad_output, other):
    """``grad_output / other``, exactly 0 where ``grad_output`` is 0 (so ``0 / 0 = 0``).
    The VJP and JVP of ``log`` (other = log's input) and of ``div`` for its
    numerator (other = the denominator).

    Args:
        grad_output, other (Tensor or number): broadcastable operands; integers
            promote to the default float dtype, as for ``div``.

    Returns:
        Tensor of the broadcast shape.
    """
    g, x = _check_div_backward(grad_output, other)
    return apply(_div_backward, (g, x), {})


def sqrt_backward(grad_output, output):
    """``grad_output / (2 * output)``: the VJP and JVP of sqrt given its output,
    exactly 0 where ``grad_output`` is 0 (so a zero cotangent at sqrt(0) gives 0,
    not nan).  Broadcastable operands; integers promote to the default float."""
    g, y = _check_sqrt_backward(grad_output, output)
    return apply(_sqrt_backward, (g, y), {})


def div_backward_other(grad_output, output, other):
    """``-(grad_output * output) / other``: div's VJP and JVP for the denominator
    (``output = input / other``), in one pass; exactly 0 where ``grad_output``
    or ``output`` is 0 (the strong zero; at ``output == 0 == other`` it gives 0
    instead of 0/0).

    Args:
        grad_output, output, other (Tensor or number): broadcastable operands,
            promoted to one float dtype.

    Returns:
        Tensor of the broadcast shape.
    """
    g, y, b = _check_div_backward_other(grad_output, output, other)
    return apply(_div_backward_other, (g, y, b), {})


def pow_backward_base(grad_output, input, exponent):
    """``grad_output * exponent * input ** (exponent - 1)``: pow's VJP and JVP for
    the base, in one pass.  Exactly 0 where ``exponent == 0`` (PyTorch's
    convention, so ``x ** 0`` has derivative 0 also at x = 0) and where
    ``grad_output == 0`` (the strong zero).

    Args:
        grad_output, input, exponent (Tensor or number): broadcastable operands,
            promoted to one float dtype.

    Returns:
        Tensor of the broadcast shape.
    """
    g, a, b = _check_pow_backward_base(grad_output, input, exponent)
    return apply(_pow_backward_base, (g, a, b), {})


def pow_backward_exponent(grad_output, output, input):
    """``grad_output * output * log(input)`` with ``output = input ** exponent``: pow's
    VJP and JVP for the exponent, in one pass.  Exactly 0 where ``input == 0``
    and ``output`` is finite (that is, exponent >= 0: PyTorch's convention for
    0 * log 0) and where ``grad_output == 0`` (the strong zero).

    Args:
        grad_output, output, input (Tensor or number): broadcastable operands,
            promoted to one float dtype.

    Returns:
        Tensor of the broadcast shape.
    """
    g, y, a = _check_pow_backward_exponent(grad_output, output, input)
    return apply(_pow_backward_exponent, (g, y, a), {})


for _f in (tanh_backward, sigmoid_backward, relu_backward, mul_backward, div_backward,
           sqrt_backward, div_backward_other, pow_backward_base, pow_backward_exponent):
    _f.__doc__ += _FUSED_RAISES
del _f


def add(input, other, *, alpha=1):
    """``input + alpha * other`` with broadcasting and PyTorch type promotion.

    Args:
        input, other (Tensor or number): broadcastable operands.
        alpha (number): multiplier for ``other``.

    Raises:
        TypeError: an operand that is neither a Tensor nor a number.
        RuntimeError: when the shapes do not broadcast.
    """
    if alpha != 1:
        other = mul(other, alpha)
    a, b = _check_add(input, other)
    return apply(_add, (a, b), {})


def sub(input, other, *, alpha=1):
    """``input - alpha * other`` with broadcasting and type promotion.

    Raises:
        TypeError: an operand that is neither a Tensor nor a number.
        RuntimeError: a bool operand (as PyTorch), or shapes that do not broadcast.
    """
    if alpha != 1:
        _check_sub(input, other)        # a bool operand is named before mul runs
        other = mul(other, alpha)
    a, b = _check_sub(input, other)
    return apply(_sub, (a, b), {})


def mul(input, other):
    """``input * other`` with broadcasting and type promotion.

    Raises:
        TypeError: an operand that is neither a Tensor nor a number.
        RuntimeError: shapes that do not broadcast.
    """
    a, b = _check_mul(input, other)
    return apply(_mul, (a, b), {})


def div(input, other, *, rounding_mode=None):
    """True division ``input / other``; integer operands give the default float dtype.
    Division by zero gives inf or nan (IEEE 754).

    ``rounding_mode`` (PyTorch's): ``None`` true division; ``"floor"`` is
    ``floor_divide``; ``"trunc"`` rounds toward zero.  Both keep integer dtypes
    (PyTorch) and have a zero derivative (the result is piecewise constant).

    Raises:
        TypeError: an operand that is neither a Tensor nor a number.
        RuntimeError: shapes that do not broadcast; integer division by zero with
            a rounding mode.  ValueError: an unknown rounding_mode.
    """
    if rounding_mode is not None:
        return _div_rounded(input, other, rounding_mode)
    a, b = _check_div(input, other)
    return apply(_div, (a, b), {})


def _div_rounded(input, other, mode):
    from tensorplay._ops import binary, unary       # (they build on this module)
    if mode == "floor":
        return binary.floor_divide(input, other)
    if mode != "trunc":
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or "
                         f"'floor' but found {mode!r}")
    a, b = _check_div(input, other)                # (the checks)
    if any(isinstance(v, float) or (isinstance(v, Tensor) and v._data.dtype.kind == "f")
           for v in (input, other)):
        return unary.trunc(apply(_div, (a, b), {}))
    # integers: a - fmod(a, b) is an exact multiple of b, so floor division is exact
    return binary.floor_divide(sub(input, binary.fmod(input, other)), other)


def pow(input, exponent):
    """``input ** exponent``: tensor**scalar, scalar**tensor or tensor**tensor.

    Broadcasting and type promotion as for ``mul``.  A negative base with a
    non-integer exponent gives nan.  Derivative conventions (PyTorch's): the
    base's derivative is 0 where the exponent is 0, and the exponent's derivative
    is 0 where the base is 0 and the exponent is >= 0.

    Raises:
        TypeError: an operand that is neither a Tensor nor a number.
        NotImplementedError: operands that promote to bool.
        RuntimeError: integers to negative integer powers, or shapes that do not
            broadcast.
    """
    a, b = _check_pow(input, exponent)
    return apply(_pow, (a, b), {})


# ---------------------------------------------------------------- comparisons
def _compare(name, ufunc):
    check = declare(_binary_sig(name, forward_checks_broadcast=False))   # numpy's ufunc

    def compare(input, other):
        a, b = check(input, other)
        r = ufunc(a._data, b._data)     # under vmap, a batched storage (_batching.py)
        return Tensor._wrap(np.asarray(r) if isinstance(r, np.generic) else r)
    compare.__name__ = name
    compare.__doc__ = (f"Elementwise ``{name}`` comparison with broadcasting and type "
                       f"promotion; a bool tensor, never differentiable.\n\n"
                       f"    Raises:\n        TypeError: an operand that is neither a "
                       f"Tensor nor a number.\n        RuntimeError: shapes that do not "
                       f"broadcast.\n")
    return compare


eq = _compare("eq", np.equal)
ne = _compare("ne", np.not_equal)
lt = _compare("lt", np.less)
le = _compare("le", np.less_equal)
gt = _compare("gt", np.greater)
ge = _compare("ge", np.greater_equal)
