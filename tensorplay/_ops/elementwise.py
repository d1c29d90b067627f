"""Elementwise primitives: unary math, binary arithmetic, and their fused
derivative kernels (``tanh_backward`` and friends), each a registered primitive
with forward, VJP and JVP side by side.

For a unary elementwise op the VJP and the JVP are the same map (multiply by
f'(x)), so one ``deriv(g, out, x)`` serves both (PyTorch's ``auto_element_wise``).
Forward kernels live in ``tensorplay/_kernels/unary.pyx`` and ``binary.pyx``;
integer and bool operands (never differentiable) use numpy's ufuncs.
"""
import numpy as np

from tensorplay._pool import MIN_BYTES as POOL_MIN_BYTES
from tensorplay._pool import empty as pool_empty
from tensorplay import _dtype
from tensorplay._kernels import binary as _kb
from tensorplay._kernels import unary as _ku
from tensorplay._ops._common import CONFIG, as_tensor_arg, float_input, promote
from tensorplay._ops.registry import apply, defop, tangent_sum
from tensorplay._tensor import Tensor

__all__ = ["neg", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "add", "sub", "mul",
           "div", "pow", "where", "tanh_backward", "sigmoid_backward", "relu_backward",
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


def broadcast_shape(sa, sb, op):
    """The broadcast shape of two shapes, or a RuntimeError naming ``op``."""
    if sa == sb or not sb:
        return sa
    if not sa:
        return sb
    if len(sa) == len(sb):
        out = []
        for x, y in zip(sa, sb):
            if x == y or y == 1:
                out.append(x)
            elif x == 1:
                out.append(y)
            else:
                break
        else:
            return tuple(out)
    try:
        return np.broadcast_shapes(sa, sb)
    except ValueError:
        raise _broadcast_error(sa, sb, op) from None


def _broadcast_error(sa, sb, op):
    # apart from broadcast_shape so that its fast path has no closure (the
    # generator below) to allocate when compiled
    n = max(len(sa), len(sb))
    pa = (1,) * (n - len(sa)) + tuple(sa)
    pb = (1,) * (n - len(sb)) + tuple(sb)
    i = next(i for i in range(n) if pa[i] != pb[i] and 1 not in (pa[i], pb[i]))
    return RuntimeError(f"{op}(): the size of tensor a ({pa[i]}) must match the size of "
                        f"tensor b ({pb[i]}) at non-singleton dimension {i}; shapes are "
                        f"{list(sa)} and {list(sb)}")


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


def _defunary(name, kernel, deriv, saves, ufunc=None):
    """Register an elementwise unary op whose VJP and JVP both are ``deriv``."""
    return defop(name, _unary_forward(kernel, ufunc),
                 vjp=(deriv,),
                 jvp=lambda ts, out, x: deriv(ts[0], out, x),
                 saves=saves)


# ---------------------------------------------------------------- unary math
_neg = defop("neg", _unary_forward(_ku.neg_fwd, np.negative),
             vjp=(lambda g, out, x: -g,),
             jvp=lambda ts, out, x: -ts[0])
# d exp(x) = exp(x) dx
_exp = _defunary("exp", _ku.exp_fwd, lambda g, out, x: g * out, ("out",))
# d log(x) = dx / x
_log = _defunary("log", _ku.log_fwd, lambda g, out, x: g / x, ("inputs",))
# d sqrt(x) = dx / (2 sqrt(x))
_sqrt = _defunary("sqrt", _ku.sqrt_fwd, lambda g, out, x: g / (2 * out), ("out",))
# d tanh(x) = (1 - tanh(x)^2) dx, by the fused tanh_backward kernel
_tanh = _defunary("tanh", _ku.tanh_fwd, lambda g, out, x: tanh_backward(g, out), ("out",))
# d sigmoid(x) = s (1 - s) dx
_sigmoid = _defunary("sigmoid", _ku.sigmoid_fwd,
                     lambda g, out, x: sigmoid_backward(g, out), ("out",))
# relu'(x) = [x > 0]; the subgradient at 0 is 0 (PyTorch's convention)
_relu = _defunary("relu", _ku.relu_fwd, lambda g, out, x: relu_backward(g, x), ("inputs",),
                  ufunc=lambda x, out: np.maximum(x, 0, out=out))


# ---------------------------------------------------------------- fused derivative kernels
# tanh_backward(g, y) = g * (1 - y^2), with y = tanh(x).
_tanh_backward = defop(
    "tanh_backward", _binary_forward("tanh_backward", _kb.tanh_vjp),
    vjp=(lambda gb, out, g, y: tanh_backward(gb, y),
         lambda gb, out, g, y: -2 * (gb * g * y)),
    jvp=lambda ts, out, g, y: tangent_sum(
        None if ts[0] is None else tanh_backward(ts[0], y),
        None if ts[1] is None else -2 * (ts[1] * g * y)),
    saves=("inputs",))
# sigmoid_backward(g, y) = g * y * (1 - y), with y = sigmoid(x).
_sigmoid_backward = defop(
    "sigmoid_backward", _binary_forward("sigmoid_backward", _kb.sigmoid_vjp),
    vjp=(lambda gb, out, g, y: sigmoid_backward(gb, y),
         lambda gb, out, g, y: gb * g * (1 - 2 * y)),
    jvp=lambda ts, out, g, y: tangent_sum(
        None if ts[0] is None else sigmoid_backward(ts[0], y),
        None if ts[1] is None else ts[1] * g * (1 - 2 * y)),
    saves=("inputs",))
# relu_backward(g, x) = g * [x > 0]; piecewise constant in x, so x gets no gradient.
_relu_backward = defop(
    "relu_backward", _binary_forward("relu_backward", _kb.relu_vjp),
    vjp=(lambda gb, out, g, x: relu_backward(gb, x), None),
    jvp=lambda ts, out, g, x: None if ts[0] is None else relu_backward(ts[0], x),
    saves=("inputs",))


# ---------------------------------------------------------------- binary arithmetic
_add = defop("add", _binary_forward("add", _kb.add_fwd, np.add),
             vjp=(lambda g, out, a, b: g, lambda g, out, a, b: g),
             jvp=lambda ts, out, a, b: tangent_sum(*ts))
_sub = defop("sub", _binary_forward("sub", _kb.sub_fwd, np.subtract),
             vjp=(lambda g, out, a, b: g, lambda g, out, a, b: -g),
             jvp=lambda ts, out, a, b: tangent_sum(ts[0], None if ts[1] is None else -ts[1]))
_mul = defop("mul", _binary_forward("mul", _kb.mul_fwd, np.multiply),
             vjp=(lambda g, out, a, b: g * b, lambda g, out, a, b: g * a),
             jvp=lambda ts, out, a, b: tangent_sum(
                 None if ts[0] is None else ts[0] * b,
                 None if ts[1] is None else a * ts[1]),
             saves=("inputs",))
# d(a/b) = da / b - (a/b) db / b
_div = defop("div", _binary_forward("div", _kb.div_fwd),
             vjp=(lambda g, out, a, b: g / b, lambda g, out, a, b: -(g * out) / b),
             jvp=lambda ts, out, a, b: tangent_sum(
                 None if ts[0] is None else ts[0] / b,
                 None if ts[1] is None else -(ts[1] * out) / b),
             saves=("inputs", "out"))


# d(a^b) = b a^(b-1) da + a^b log(a) db, with PyTorch's conventions where the
# formulas give nan: the base's derivative is 0 where b == 0 (0 * 0^-1), the
# exponent's is 0 where a == 0 and b >= 0 (0 * log 0).
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
    return where(b == 0, 0.0, g * b * a ** (b - 1))


def _pow_dexp(g, out, a, b):
    """g * d(a^b)/db = g a^b log a, and 0 where a == 0 and b >= 0."""
    return g * where((a == 0) * (b >= 0), 0.0, out * log(a))


def _zeros_outside_graph(a, g):
    """Zeros of the broadcast shape of ``a`` and ``g``, in g's dtype, outside the graph."""
    return Tensor._wrap(np.zeros(broadcast_shape(a._data.shape, g._data.shape, "pow"),
                                 g._data.dtype))


_pow = defop("pow", _binary_forward("pow", _kb.pow_fwd, _int_pow),
             vjp=(lambda g, out, a, b: _pow_dbase(g, a, b),
                  lambda g, out, a, b: _pow_dexp(g, out, a, b)),
             jvp=lambda ts, out, a, b: tangent_sum(
                 None if ts[0] is None else _pow_dbase(ts[0], a, b),
                 None if ts[1] is None else _pow_dexp(ts[1], out, a, b)),
             saves=("inputs", "out"))


# where(c, a, b): c selects; no gradient flows to the condition.
def _where_forward(cond, a, b):
    return np.where(cond, a, b)


_where = defop("where", _where_forward,
               vjp=(None,
                    lambda g, out, c, a, b: where(c, g, 0.0),
                    lambda g, out, c, a, b: where(c, 0.0, g)),
               jvp=lambda ts, out, c, a, b: where(
                   c, 0.0 if ts[1] is None else ts[1], 0.0 if ts[2] is None else ts[2]),
               saves=("inputs",))


def where(condition, input, other):
    """Elementwise ``input`` where ``condition`` is True, else ``other``.

    Args:
        condition (Tensor): bool, broadcastable with the others.
        input, other (Tensor or number): values; promoted to one dtype (PyTorch's
            rules) and broadcast together with ``condition``.

    Returns:
        Tensor of the broadcast shape.  Gradients flow to ``input`` and ``other``
        where each is selected; the condition gets none.

    Raises:
        TypeError: a condition that is not a bool tensor.
        RuntimeError: shapes that do not broadcast.
    """
    as_tensor_arg(condition, "where", "condition")
    if condition._data.dtype != np.bool_:
        raise TypeError(f"where(): expected condition to be a bool tensor, got "
                        f"{condition.dtype}")
    a, b = promote(input, other, "where")
    broadcast_shape(broadcast_shape(condition._data.shape, a._data.shape, "where"),
                    b._data.shape, "where")
    return apply(_where, (condition, a, b), {})


# ---------------------------------------------------------------- public functions
def neg(input):
    """``-input``, elementwise.  Any dtype but bool; same shape and dtype out."""
    as_tensor_arg(input, "neg")
    if input._data.dtype == np.bool_:
        raise RuntimeError("neg(): negation, the `-` operator, on a bool tensor is not "
                           "supported. Use logical_not instead.")
    return apply(_neg, (input,), {})


def exp(input):
    """``e ** input``, elementwise.  Integer input is promoted to the default float dtype."""
    return apply(_exp, (float_input(input, "exp"),), {})


def log(input):
    """Natural logarithm, elementwise.  Domain x > 0; log(0) = -inf, log(x<0) = nan
    (IEEE 754, as numpy and PyTorch)."""
    return apply(_log, (float_input(input, "log"),), {})


def sqrt(input):
    """Square root, elementwise.  sqrt(x<0) = nan; the derivative at 0 is inf."""
    return apply(_sqrt, (float_input(input, "sqrt"),), {})


def tanh(input):
    """Hyperbolic tangent, elementwise."""
    return apply(_tanh, (float_input(input, "tanh"),), {})


def sigmoid(input):
    """Logistic function ``1 / (1 + exp(-x))``, elementwise, computed without overflow."""
    return apply(_sigmoid, (float_input(input, "sigmoid"),), {})


def relu(input):
    """``max(x, 0)``, elementwise; same dtype as the input.  The gradient at 0 is 0."""
    as_tensor_arg(input, "relu")
    if input._data.dtype == np.bool_:
        raise RuntimeError("relu(): not implemented for bool tensors")
    return apply(_relu, (input,), {})


def tanh_backward(grad_output, output):
    """``grad_output * (1 - output**2)``: the VJP of tanh given its output."""
    g, y = promote(grad_output, output, "tanh_backward")
    return apply(_tanh_backward, (g, y), {})


def sigmoid_backward(grad_output, output):
    """``grad_output * output * (1 - output)``: the VJP of sigmoid given its output."""
    g, y = promote(grad_output, output, "sigmoid_backward")
    return apply(_sigmoid_backward, (g, y), {})


def relu_backward(grad_output, input):
    """``grad_output * (input > 0)``: the VJP of relu given its input."""
    g, x = promote(grad_output, input, "relu_backward")
    return apply(_relu_backward, (g, x), {})


def add(input, other, *, alpha=1):
    """``input + alpha * other`` with broadcasting and PyTorch type promotion.

    Args:
        input, other (Tensor or number): broadcastable operands.
        alpha (number): multiplier for ``other``.

    Raises:
        RuntimeError: when the shapes do not broadcast.
    """
    if alpha != 1:
        other = mul(other, alpha)
    a, b = promote(input, other, "add")
    return apply(_add, (a, b), {})


def sub(input, other, *, alpha=1):
    """``input - alpha * other`` with broadcasting and type promotion.

    Raises:
        RuntimeError: a bool operand (as PyTorch), or shapes that do not broadcast.
    """
    for x in (input, other):
        if isinstance(x, (bool, np.bool_)) or (isinstance(x, Tensor)
                                               and x._data.dtype == np.bool_):
            raise RuntimeError("sub(): subtraction, the `-` operator, with a bool tensor is "
                               "not supported. If you are trying to invert a mask, use the "
                               "`~` or `logical_not()` operator instead.")
    if alpha != 1:
        other = mul(other, alpha)
    a, b = promote(input, other, "sub")
    return apply(_sub, (a, b), {})


def mul(input, other):
    """``input * other`` with broadcasting and type promotion."""
    a, b = promote(input, other, "mul")
    return apply(_mul, (a, b), {})


def div(input, other):
    """True division ``input / other``; integer operands give the default float dtype.
    Division by zero gives inf or nan (IEEE 754)."""
    a, b = promote(input, other, "div", float_result=True)
    return apply(_div, (a, b), {})


def pow(input, exponent):
    """``input ** exponent``: tensor**scalar, scalar**tensor or tensor**tensor.

    Broadcasting and type promotion as for ``mul``.  A negative base with a
    non-integer exponent gives nan.  Derivative conventions (PyTorch's): the
    base's derivative is 0 where the exponent is 0, and the exponent's derivative
    is 0 where the base is 0 and the exponent is >= 0.

    Raises:
        RuntimeError: integer tensors to negative integer powers.
    """
    a, b = promote(input, exponent, "pow")
    if a._data.dtype == np.bool_:
        raise RuntimeError("pow(): not implemented for bool tensors")
    return apply(_pow, (a, b), {})


# ---------------------------------------------------------------- comparisons
def _compare(name, ufunc):
    def compare(input, other):
        a, b = promote(input, other, name)
        broadcast_shape(a._data.shape, b._data.shape, name)
        return Tensor._wrap(np.asarray(ufunc(a._data, b._data)))
    compare.__name__ = name
    compare.__doc__ = (f"Elementwise ``{name}`` comparison with broadcasting; a bool tensor, "
                       f"never differentiable.")
    return compare


eq = _compare("eq", np.equal)
ne = _compare("ne", np.not_equal)
lt = _compare("lt", np.less)
le = _compare("le", np.less_equal)
gt = _compare("gt", np.greater)
ge = _compare("ge", np.greater_equal)
