"""Binary and ternary math (issue 7): maximum, minimum, fmax, fmin, atan2, hypot,
remainder, fmod, floor_divide, copysign, xlogy, lerp, addcmul, addcdiv, the
``%`` and ``//`` operators, and their fused derivative kernels.

Forward kernels: ``tensorplay/_kernels/binary_math.pyx`` (float32/float64,
broadcasting and any strides, OpenMP above a grain); integer and bool operands
(never differentiable) use numpy's ufuncs.  Promotion and Python numbers follow
PyTorch (``_validate.Signature``); unlike PyTorch, every binary op here also takes
a Python number on either side (``torch.maximum(x, 1.5)`` is a TypeError).

Derivatives: every VJP and JVP is one fused kernel pass per input, strong-zero in
the cotangent (exactly 0 where g == 0, see elementwise.py), and that kernel is a
primitive of its own whose rules are compositions (so higher orders work).  For an
elementwise primitive the VJP for input i and its JVP term for input i are the same
map, ``u -> u * df/dx_i``, so one rule per input serves both (``_defelem``).

==================  ==========================================  ======================
primitive           d/d(first), d/d(second) [, d/d(third)]      at kinks and limits
==================  ==========================================  ======================
maximum, minimum    maximum_backward(g, a, b), (g, b, a)        ties split 0.5 / 0.5
fmax, fmin          fmax_backward(g, a, b), (g, b, a)           ties split; nan loses
atan2               atan2_backward_input / _other(g, a, b)      0 at the origin
hypot               hypot_backward(g, a, out), (g, b, out)      0 at the origin
remainder           g, remainder_backward_other(g, a, b)        -floor(a/b), PyTorch
fmod                g, fmod_backward_other(g, a, b)             -trunc(a/b), PyTorch
floor_divide        0, 0                                        PyTorch's div(floor)
copysign            copysign_backward(g, a, b), 0               0 where a == 0
xlogy               xlogy_backward_input / _other(g, x, y)      d/dx 0 at x == y == 0;
                                                                d/dy 0 where x == 0
lerp                lerp_backward_input(g, w), mul_backward     -
                    (g, w), lerp_backward_weight(g, a, b)
addcmul             g, addcmul_backward(g, t2), (g, t1)         -
addcdiv             g, addcdiv_backward_t1(g, t2),              -
                    addcdiv_backward_t2(g, t1, t2)
==================  ==========================================  ======================
"""
import numbers

import numpy as np

from tensorplay._kernels import binary_math as _km
from tensorplay._ops._common import CONFIG, broadcast_shape
from tensorplay._ops._validate import Signature, TensorArg, declare
from tensorplay._ops.elementwise import (_binary_forward, _binary_sig, _ternary_forward,
                                         _ternary_sig, div_backward, div_backward_other,
                                         mul_backward, where)
from tensorplay._ops.registry import apply, defop, tangent_sum
from tensorplay._ops import _batching as _B
from tensorplay._pool import MIN_BYTES as POOL_MIN_BYTES
from tensorplay._pool import empty as pool_empty
from tensorplay._tensor import Tensor

__all__ = ["maximum", "minimum", "fmax", "fmin", "atan2", "hypot", "remainder", "fmod",
           "floor_divide", "copysign", "xlogy", "lerp", "addcmul", "addcdiv",
           "maximum_backward", "minimum_backward", "fmax_backward", "fmin_backward",
           "atan2_backward_input", "atan2_backward_other", "hypot_backward",
           "remainder_backward_other", "fmod_backward_other", "copysign_backward",
           "xlogy_backward_input", "xlogy_backward_other", "lerp_backward_input",
           "lerp_backward_weight", "addcmul_backward", "addcdiv_backward_t1",
           "addcdiv_backward_t2"]
METHODS = ["maximum", "minimum", "fmax", "fmin", "atan2", "hypot", "remainder", "fmod",
           "floor_divide", "copysign", "xlogy", "lerp", "addcmul", "addcdiv"]
INPLACE = ["atan2", "hypot", "remainder", "fmod", "floor_divide", "copysign", "xlogy",
           "lerp", "addcmul", "addcdiv"]


# ---------------------------------------------------------------- registration helpers
def _defelem(name, forward, rules, saves=("inputs",)):
    """An elementwise primitive whose VJP for input i is ``rules[i](u, out, *inputs,
    **params)`` (or None) and whose JVP is the sum of the same rules applied to the
    tangents (for an elementwise op both are ``u * df/dx_i``)."""
    def jvp(ts, out, *xs, **params):
        return tangent_sum(*(None if t is None or r is None else r(t, out, *xs, **params)
                             for t, r in zip(ts, rules)))
    return defop(name, forward, vjp=tuple(rules), jvp=jvp, saves=saves, batch=_B.elementwise_rule)


def _zeros(x):
    """A zero gradient of ``x``'s shape and dtype, outside the graph (a derivative
    that is 0 everywhere, as PyTorch's ``zeros_like``)."""
    return Tensor._wrap(np.zeros(x._data.shape, x._data.dtype))


def _out(shape, like):
    # small outputs skip the pool's Python call (per-op overhead counts)
    return (np.empty(shape, like.dtype) if like.nbytes < POOL_MIN_BYTES and shape == like.shape
            else pool_empty(shape, like.dtype))


def _param_forward(name, kernel, ufunc=None):
    """Forward of a three-input kernel with the scalar parameter ``value``."""
    def forward(a, b, c, value=1):
        shape = broadcast_shape(broadcast_shape(a.shape, b.shape, name), c.shape, name)
        out = _out(shape, a)
        if a.dtype.kind == "f":
            kernel(a, b, c, out, CONFIG.num_threads, value)
        else:
            ufunc(a, b, c, value, out)
        return out
    return forward


def _param2_forward(name, kernel):
    """Forward of a two-input derivative kernel with the scalar parameter ``value``."""
    def forward(g, t, value=1):
        out = _out(broadcast_shape(g.shape, t.shape, name), g)
        kernel(g, t, out, CONFIG.num_threads, value)
        return out
    return forward


def _int_division(name, ufunc):
    """numpy's integer loop, with PyTorch's error for a zero divisor."""
    def forward(a, b, out):
        if a.dtype.kind in "iu" and not np.all(b):
            raise RuntimeError(f"{name}(): ZeroDivisionError (integer division by zero)")
        ufunc(a, b, out=out)
    return forward


# ---------------------------------------------------------------- maximum, minimum, fmax, fmin
# d max(a, b)/da = [a > b] + [a == b] / 2: ties split the gradient evenly (the
# issue's convention, as autograd's balanced_eq and tinygrad's MAX); where a or b
# is nan both get g, as PyTorch's formula gives.  The kernels are piecewise
# constant in (x, o): no gradient flows to them.
_maximum_backward = _defelem(
    "maximum_backward", _ternary_forward("maximum_backward", _km.maximum_vjp),
    (lambda u, out, g, x, o: maximum_backward(u, x, o), None, None))
_minimum_backward = _defelem(
    "minimum_backward", _ternary_forward("minimum_backward", _km.minimum_vjp),
    (lambda u, out, g, x, o: minimum_backward(u, x, o), None, None))
_fmax_backward = _defelem(
    "fmax_backward", _ternary_forward("fmax_backward", _km.fmax_vjp),
    (lambda u, out, g, x, o: fmax_backward(u, x, o), None, None))
_fmin_backward = _defelem(
    "fmin_backward", _ternary_forward("fmin_backward", _km.fmin_vjp),
    (lambda u, out, g, x, o: fmin_backward(u, x, o), None, None))


def _select_op(name, kernel, ufunc, backward):
    return _defelem(name, _binary_forward(name, kernel, ufunc),
                    (lambda g, out, a, b: backward(g, a, b),
                     lambda g, out, a, b: backward(g, b, a)))


# ---------------------------------------------------------------- atan2, hypot
# atan2_backward_input(g, a, b) = g b / s, atan2_backward_other(g, a, b) = -g a / s,
# s = a^2 + b^2; 0 at the origin.  Second derivatives (compositions):
#   d(b/s)/da = -2ab/s^2, d(b/s)/db = (a^2 - b^2)/s^2 = d(-a/s)/da, d(-a/s)/db = 2ab/s^2
def _atan2_second(coef):
    def rule(u, out, g, a, b):
        s = a * a + b * b
        h = div_backward(div_backward(mul_backward(u, g), s), s)
        return where(s == 0, 0.0, mul_backward(h, coef(a, b)))
    return rule


_atan2_backward_input = _defelem(
    "atan2_backward_input", _ternary_forward("atan2_backward_input", _km.atan2_vjp_input),
    (lambda u, out, g, a, b: atan2_backward_input(u, a, b),
     _atan2_second(lambda a, b: -2 * a * b), _atan2_second(lambda a, b: a * a - b * b)))
_atan2_backward_other = _defelem(
    "atan2_backward_other", _ternary_forward("atan2_backward_other", _km.atan2_vjp_other),
    (lambda u, out, g, a, b: atan2_backward_other(u, a, b),
     _atan2_second(lambda a, b: a * a - b * b), _atan2_second(lambda a, b: 2 * a * b)))
_atan2 = _defelem("atan2", _binary_forward("atan2", _km.atan2_fwd),
                  (lambda g, out, a, b: atan2_backward_input(g, a, b),
                   lambda g, out, a, b: atan2_backward_other(g, a, b)))

# hypot_backward(g, x, y) = g x / y with y = hypot(x, .), 0 where y == 0.
# d/dx = g / y (0 where y == 0), d/dy = -f / y = div_backward_other(u, f, y).
_hypot_backward = _defelem(
    "hypot_backward", _ternary_forward("hypot_backward", _km.hypot_vjp),
    (lambda u, out, g, x, y: hypot_backward(u, x, y),
     lambda u, out, g, x, y: where(y == 0, 0.0, div_backward(mul_backward(u, g), y)),
     lambda u, out, g, x, y: div_backward_other(u, out, y)), saves=("inputs", "out"))
_hypot = _defelem("hypot", _binary_forward("hypot", _km.hypot_fwd),
                  (lambda g, out, a, b: hypot_backward(g, a, out),
                   lambda g, out, a, b: hypot_backward(g, b, out)), saves=("inputs", "out"))


# ---------------------------------------------------------------- remainder, fmod, floor_divide
# d/da = 1; d/db = -floor(a / b) (remainder) or -trunc(a / b) (fmod), PyTorch's
# rules; the kernels are piecewise constant in (a, b).  floor_divide's derivative
# is 0 (PyTorch's div(rounding_mode='floor'); torch.floor_divide itself has none).
_remainder_backward_other = _defelem(
    "remainder_backward_other",
    _ternary_forward("remainder_backward_other", _km.remainder_vjp_other),
    (lambda u, out, g, a, b: remainder_backward_other(u, a, b), None, None))
_fmod_backward_other = _defelem(
    "fmod_backward_other", _ternary_forward("fmod_backward_other", _km.fmod_vjp_other),
    (lambda u, out, g, a, b: fmod_backward_other(u, a, b), None, None))
_remainder = _defelem(
    "remainder", _binary_forward("remainder", _km.remainder_fwd,
                                 _int_division("remainder", np.remainder)),
    (lambda g, out, a, b: g, lambda g, out, a, b: remainder_backward_other(g, a, b)))
_fmod = _defelem(
    "fmod", _binary_forward("fmod", _km.fmod_fwd, _int_division("fmod", np.fmod)),
    (lambda g, out, a, b: g, lambda g, out, a, b: fmod_backward_other(g, a, b)))
_floor_divide = _defelem(
    "floor_divide", _binary_forward("floor_divide", _km.floor_divide_fwd,
                                    _int_division("floor_divide", np.floor_divide)),
    (lambda g, out, a, b: _zeros(a), lambda g, out, a, b: _zeros(b)))


# ---------------------------------------------------------------- copysign, xlogy
# copysign_backward(g, a, b) = g sign(a) sign(b), 0 where a == 0 (PyTorch); b gets 0.
_copysign_backward = _defelem(
    "copysign_backward", _ternary_forward("copysign_backward", _km.copysign_vjp),
    (lambda u, out, g, a, b: copysign_backward(u, a, b), None, None))
_copysign = _defelem("copysign", _binary_forward("copysign", _km.copysign_fwd),
                     (lambda g, out, a, b: copysign_backward(g, a, b),
                      lambda g, out, a, b: _zeros(b)))

# xlogy_backward_input(g, x, y) = g log y, 0 at x == y == 0:  d/dy = g / y there too
# xlogy_backward_other(g, x, y) = g x / y [x != 0]:  d/dx = g / y, d/dy = -f / y
_xlogy_backward_input = _defelem(
    "xlogy_backward_input", _ternary_forward("xlogy_backward_input", _km.xlogy_vjp_input),
    (lambda u, out, g, x, y: xlogy_backward_input(u, x, y), None,
     lambda u, out, g, x, y: where((x == 0) & (y == 0), 0.0,
                                   div_backward(mul_backward(u, g), y))))
_xlogy_backward_other = _defelem(
    "xlogy_backward_other", _ternary_forward("xlogy_backward_other", _km.xlogy_vjp_other),
    (lambda u, out, g, x, y: xlogy_backward_other(u, x, y),
     lambda u, out, g, x, y: div_backward(mul_backward(u, g), y),
     lambda u, out, g, x, y: div_backward_other(u, out, y)), saves=("inputs", "out"))
_xlogy = _defelem("xlogy", _binary_forward("xlogy", _km.xlogy_fwd),
                  (lambda g, out, x, y: xlogy_backward_input(g, x, y),
                   lambda g, out, x, y: xlogy_backward_other(g, x, y)))


# ---------------------------------------------------------------- lerp, addcmul, addcdiv
# lerp(a, b, w) = a + w (b - a):  d/da = 1 - w, d/db = w, d/dw = b - a
_lerp_backward_input = _defelem(
    "lerp_backward_input", _binary_forward("lerp_backward_input", _km.lerp_vjp_input),
    (lambda u, out, g, w: lerp_backward_input(u, w), lambda u, out, g, w: -mul_backward(u, g)))
_lerp_backward_weight = _defelem(
    "lerp_backward_weight", _ternary_forward("lerp_backward_weight", _km.lerp_vjp_weight),
    (lambda u, out, g, a, b: lerp_backward_weight(u, a, b),
     lambda u, out, g, a, b: -mul_backward(u, g), lambda u, out, g, a, b: mul_backward(u, g)))
_lerp = _defelem("lerp", _ternary_forward("lerp", _km.lerp_fwd),
                 (lambda g, out, a, b, w: lerp_backward_input(g, w),
                  lambda g, out, a, b, w: mul_backward(g, w),
                  lambda g, out, a, b, w: lerp_backward_weight(g, a, b)))


def _int_addcmul(a, b, c, value, out):
    np.add(a, np.multiply(np.multiply(b, c), np.asarray(value).astype(a.dtype)), out=out)


# addcmul(a, t1, t2) = a + v t1 t2: d/dt1 = v t2;  addcmul_backward(g, t) = v g t,
# strong-zero on both sides (as mul_backward), so d/dg and d/dt are the same kernel.
_addcmul_backward = _defelem(
    "addcmul_backward", _param2_forward("addcmul_backward", _km.addcmul_vjp),
    (lambda u, out, g, t, value=1: addcmul_backward(u, t, value=value),
     lambda u, out, g, t, value=1: addcmul_backward(u, g, value=value)))
_addcmul = _defelem("addcmul", _param_forward("addcmul", _km.addcmul_fwd, _int_addcmul),
                    (lambda g, out, a, b, c, value=1: g,
                     lambda g, out, a, b, c, value=1: addcmul_backward(g, c, value=value),
                     lambda g, out, a, b, c, value=1: addcmul_backward(g, b, value=value)))

# addcdiv(a, t1, t2) = a + v t1 / t2:  d/dt1 = v / t2,  d/dt2 = -v t1 / t2^2;
# d(-v g t1 / t2^2)/dt2 = -2 f / t2 = 2 div_backward_other(u, f, t2)
_addcdiv_backward_t1 = _defelem(
    "addcdiv_backward_t1", _param2_forward("addcdiv_backward_t1", _km.addcdiv_vjp_t1),
    (lambda u, out, g, t2, value=1: addcdiv_backward_t1(u, t2, value=value),
     lambda u, out, g, t2, value=1: addcdiv_backward_t2(u, g, t2, value=value)))
_addcdiv_backward_t2 = _defelem(
    "addcdiv_backward_t2", _param_forward("addcdiv_backward_t2", _km.addcdiv_vjp_t2),
    (lambda u, out, g, t1, t2, value=1: addcdiv_backward_t2(u, t1, t2, value=value),
     lambda u, out, g, t1, t2, value=1: addcdiv_backward_t2(u, g, t2, value=value),
     lambda u, out, g, t1, t2, value=1: 2 * div_backward_other(u, out, t2)),
    saves=("inputs", "out"))
_addcdiv = _defelem("addcdiv", _param_forward("addcdiv", _km.addcdiv_fwd),
                    (lambda g, out, a, b, c, value=1: g,
                     lambda g, out, a, b, c, value=1: addcdiv_backward_t1(g, c, value=value),
                     lambda g, out, a, b, c, value=1: addcdiv_backward_t2(g, b, c,
                                                                          value=value)))


# ---------------------------------------------------------------- argument declarations
_NO_BOOL = ("not implemented for bool tensors (as PyTorch's {op}_cpu); cast to an "
            "integer or float dtype first")
_check = {op: declare(_binary_sig(op)) for op in ("maximum", "minimum", "fmax", "fmin")}
_check.update({op: declare(_binary_sig(op, float_result=True))
               for op in ("atan2", "copysign", "xlogy")})
_check["hypot"] = declare(_binary_sig("hypot", result_kinds="f"))
_check.update({op: declare(_binary_sig(op, kinds="fi", message=_NO_BOOL.format(op=op)))
               for op in ("remainder", "fmod", "floor_divide")})
for _op, _args in (("maximum_backward", ("grad_output", "input", "other")),
                   ("minimum_backward", ("grad_output", "input", "other")),
                   ("fmax_backward", ("grad_output", "input", "other")),
                   ("fmin_backward", ("grad_output", "input", "other")),
                   ("atan2_backward_input", ("grad_output", "input", "other")),
                   ("atan2_backward_other", ("grad_output", "input", "other")),
                   ("hypot_backward", ("grad_output", "input", "output")),
                   ("remainder_backward_other", ("grad_output", "input", "other")),
                   ("fmod_backward_other", ("grad_output", "input", "other")),
                   ("copysign_backward", ("grad_output", "input", "other")),
                   ("xlogy_backward_input", ("grad_output", "input", "other")),
                   ("xlogy_backward_other", ("grad_output", "input", "other")),
                   ("lerp_backward_weight", ("grad_output", "input", "end")),
                   ("addcdiv_backward_t2", ("grad_output", "tensor1", "tensor2"))):
    _check[_op] = declare(_ternary_sig(_op, _args))
for _op, _args in (("lerp_backward_input", ("grad_output", "weight")),
                   ("addcmul_backward", ("grad_output", "other")),
                   ("addcdiv_backward_t1", ("grad_output", "tensor2"))):
    _check[_op] = declare(_binary_sig(_op, _args, float_result=True, result_kinds="f"))
del _op, _args
_check["lerp"] = declare(Signature(
    "lerp", TensorArg("input", "f"), TensorArg("end", "f"),
    TensorArg("weight", "fi", numbers=True), same_dtype=("input", "end"),
    broadcast=("input", "end", "weight")))
_check["addcmul"] = declare(Signature(
    "addcmul", *(TensorArg(n, "fi", message=_NO_BOOL.format(op="addcmul"))
                 for n in ("input", "tensor1", "tensor2")),
    promote=("input", "tensor1", "tensor2"), broadcast=("input", "tensor1", "tensor2")))
_check["addcdiv"] = declare(Signature(
    "addcdiv", TensorArg("input", "fi"),
    *(TensorArg(n, "f", exc=RuntimeError,
                message="integer division with addcdiv is not supported (as PyTorch); "
                        "use a float tensor1 and tensor2 (or addcmul with 1 / tensor2)")
      for n in ("tensor1", "tensor2")),
    promote=("input", "tensor1", "tensor2"), broadcast=("input", "tensor1", "tensor2")))


def _check_value(op, value, dtype):
    """addcmul/addcdiv's ``value``: a real number (TypeError otherwise), and an
    integer one for an integer result (RuntimeError: PyTorch truncates a float
    value silently there, a silent wrong answer)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) \
            or isinstance(value, Tensor):
        raise TypeError(f"{op}(): argument 'value' must be a number, not "
                        f"{type(value).__name__}")
    if dtype.kind != "f" and not isinstance(value, numbers.Integral):
        raise RuntimeError(f"{op}(): a float value {value!r} cannot be used with integer "
                           f"tensors (the result would be truncated); pass an int")
    return value


# ---------------------------------------------------------------- public functions
_OPERANDS = """
    Args:
        input, other (Tensor or number): broadcastable operands, promoted as for
            ``add`` (a Python number on either side; PyTorch wants Tensors).

    Returns:
        Tensor of the broadcast shape and the promoted dtype{dt}.

    Raises:
        TypeError: an operand that is neither a Tensor nor a number.
        RuntimeError: shapes that do not broadcast{raises}.
"""


def _public(op, prim, doc, dt="", raises=""):
    check = _check[op]

    def fn(input, other):
        a, b = check(input, other)
        return apply(prim, (a, b), {})
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = doc + _OPERANDS.format(dt=dt, raises=raises)
    return fn


maximum = _public("maximum", _select_op("maximum", _km.maximum_fwd, np.maximum,
                                        lambda g, x, o: maximum_backward(g, x, o)), """\
Elementwise maximum; nan if either operand is nan (as ``torch.maximum``).

    Gradient: to the larger operand; at ties ``a == b`` each gets ``g / 2`` (the
    issue's convention: PyTorch does the same).  Where either is nan both get g.
""")
minimum = _public("minimum", _select_op("minimum", _km.minimum_fwd, np.minimum,
                                        lambda g, x, o: minimum_backward(g, x, o)), """\
Elementwise minimum; nan if either operand is nan.  Ties split the gradient evenly.
""")
fmax = _public("fmax", _select_op("fmax", _km.fmax_fwd, np.fmax,
                                  lambda g, x, o: fmax_backward(g, x, o)), """\
Elementwise maximum ignoring nan: where one operand is nan the other is returned,
    nan only where both are (C's fmax, ``torch.fmax``).

    Gradient: to the selected operand; ties (equal values, or both nan) split it
    evenly.  PyTorch gives a tie entirely to ``input``; tensorplay splits it as
    for ``maximum`` (tests/test_binary.py says so).
""")
fmin = _public("fmin", _select_op("fmin", _km.fmin_fwd, np.fmin,
                                  lambda g, x, o: fmin_backward(g, x, o)), """\
Elementwise minimum ignoring nan (C's fmin); ties split the gradient evenly.
""")
atan2 = _public("atan2", _atan2, """\
``atan2(input, other)``: the angle of the point (other, input), in [-pi, pi],
    with C's signed-zero and infinity rules.  Integer and bool operands give the
    default float dtype.  Gradient ``(b, -a) / (a^2 + b^2)``; 0 at the origin
    (where atan2 is not continuous), as PyTorch.
""")
hypot = _public("hypot", _hypot, """\
``sqrt(input**2 + other**2)`` without intermediate overflow (C's hypot).  Float
    operands only (integer ones raise NotImplementedError, as PyTorch).
    Gradient ``(a, b) / hypot(a, b)``; 0 at the origin (the minimum-norm
    subgradient; PyTorch gives nan there).
""", raises="; NotImplementedError: integer or bool operands")
remainder = _public("remainder", _remainder, """\
Python's modulus ``input % other``: the result has the sign of ``other``
    (``torch.remainder``; numpy.remainder).  Float: ``x % 0`` is nan.
    Gradient: 1 for input, ``-floor(input / other)`` for other (PyTorch).  This
    is the ``%`` operator.
""", raises="; integer division by zero (ZeroDivisionError, as PyTorch); "
            "NotImplementedError: bool operands")
fmod = _public("fmod", _fmod, """\
C's ``fmod``: the remainder of truncated division, with the sign of ``input``
    (``torch.fmod``).  Gradient: 1 for input, ``-trunc(input / other)`` for other.
""", raises="; integer division by zero (ZeroDivisionError); NotImplementedError: "
            "bool operands")
floor_divide = _public("floor_divide", _floor_divide, """\
``floor(input / other)`` computed as numpy.floor_divide and PyTorch do (from the
    exact remainder, so ``(a // b) * b + a % b == a`` as closely as floating point
    allows).  This is the ``//`` operator.  Float ``x // 0`` is +-inf or nan.

    Gradient: 0 everywhere (piecewise constant; PyTorch's
    ``div(rounding_mode='floor')``; ``torch.floor_divide`` itself raises "derivative
    not implemented" in backward).
""", raises="; integer division by zero (ZeroDivisionError); NotImplementedError: "
            "bool operands")
copysign = _public("copysign", _copysign, """\
``|input|`` with the sign bit of ``other`` (so ``copysign(1, -0.0) = -1``).  Integer
    operands give the default float dtype.  Gradient: ``sign(input) * sign(other)``
    for input, 0 where input == 0 (PyTorch) and +-1 at +-inf (PyTorch: nan);
    other gets 0.
""")
xlogy = _public("xlogy", _xlogy, """\
``input * log(other)``, and 0 where input == 0 (also where other is 0 or inf),
    nan where other is nan (``torch.xlogy``, scipy.special.xlogy).  Integer
    operands give the default float dtype.

    Gradient (PyTorch's): ``log(other)`` for input, 0 where input == 0;
    ``input / other`` for other, and 0 where input == 0 (PyTorch: nan at
    input == other == 0, where xlogy(0, y) = 0 for every y).
""")


def lerp(input, end, weight):
    """``input + weight * (end - input)``, computed as PyTorch's kernel does (exact
    at weight 1).

    Args:
        input, end (Tensor): float tensors of one dtype (RuntimeError otherwise, as
            PyTorch), broadcastable.
        weight (float or Tensor): a number, or a float tensor broadcastable with
            them, of their dtype unless 0-d.

    Returns:
        Tensor of the broadcast shape.  Gradients: ``1 - w``, ``w``, ``end - input``.

    Raises:
        TypeError: non-Tensor input or end, a weight that is neither.
        NotImplementedError: integer or bool tensors.
        RuntimeError: dtypes that differ, shapes that do not broadcast.
    """
    a, b, w = _check["lerp"](input, end, weight)
    dt = a._data.dtype
    if not isinstance(w, Tensor):
        w = Tensor._wrap(np.array(w, dt))
    elif w._data.dtype.kind == "b":      # (a numbers=True argument's dtype is ours to check)
        raise NotImplementedError(f"lerp(): argument 'weight' must be a float tensor, got "
                                  f"{w.dtype}")
    elif w._data.dtype != dt:
        if w._data.ndim:
            raise RuntimeError(f"lerp(): expected dtype {a.dtype} for 'weight' but got "
                               f"dtype {w.dtype}")
        w = w.to(a.dtype)
    return apply(_lerp, (a, b, w), {})


def addcmul(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 * tensor2`` in one pass.

    Args:
        input, tensor1, tensor2 (Tensor): broadcastable, promoted together.
        value (number): the multiplier; an int for integer tensors.

    Raises:
        TypeError: a non-Tensor operand or a non-number value.
        NotImplementedError: bool tensors.
        RuntimeError: shapes that do not broadcast; a float value with integer
            tensors (PyTorch truncates it silently).
    """
    a, b, c = _check["addcmul"](input, tensor1, tensor2)
    value = _check_value("addcmul", value, a._data.dtype)
    return apply(_addcmul, (a, b, c), {"value": value})


def addcdiv(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 / tensor2`` in one pass (float tensor1 and tensor2:
    integer ones raise RuntimeError, as PyTorch).  Division by zero gives inf/nan.

    Raises:
        TypeError: a non-Tensor operand or a non-number value.
        RuntimeError: integer tensor1/tensor2, or shapes that do not broadcast.
    """
    a, b, c = _check["addcdiv"](input, tensor1, tensor2)
    value = _check_value("addcdiv", value, a._data.dtype)
    return apply(_addcdiv, (a, b, c), {"value": value})


# ---------------------------------------------------------------- fused derivative kernels
def _kernel_fn(op, prim, doc):
    check = _check[op]
    if len(check.signature.names) == 3:
        def fn(grad_output, x, y):
            return apply(prim, check(grad_output, x, y), {})
    else:
        def fn(grad_output, x):
            return apply(prim, check(grad_output, x), {})
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = doc + """
    Float operands (promoted together, broadcast); exactly 0 where ``grad_output``
    is 0 (the strong zero).  Raises TypeError for a non-number operand,
    NotImplementedError for a non-float result, RuntimeError for shapes that do
    not broadcast.
"""
    return fn


maximum_backward = _kernel_fn("maximum_backward", _maximum_backward,
                              "``g * ([x > o] + [x == o] / 2)``, g where x or o is nan: "
                              "maximum's VJP for x.")
minimum_backward = _kernel_fn("minimum_backward", _minimum_backward,
                              "``g * ([x < o] + [x == o] / 2)``: minimum's VJP for x.")
fmax_backward = _kernel_fn("fmax_backward", _fmax_backward,
                           "g where fmax(x, o) selects x, g/2 at ties (both nan too).")
fmin_backward = _kernel_fn("fmin_backward", _fmin_backward,
                           "g where fmin(x, o) selects x, g/2 at ties (both nan too).")
atan2_backward_input = _kernel_fn("atan2_backward_input", _atan2_backward_input,
                                  "``g * b / (a^2 + b^2)``, 0 at the origin.")
atan2_backward_other = _kernel_fn("atan2_backward_other", _atan2_backward_other,
                                  "``-g * a / (a^2 + b^2)``, 0 at the origin.")
hypot_backward = _kernel_fn("hypot_backward", _hypot_backward,
                            "``g * x / y`` with y = hypot(x, .), 0 where y == 0.")
remainder_backward_other = _kernel_fn("remainder_backward_other", _remainder_backward_other,
                                      "``-g * floor_divide(a, b)``: remainder's VJP for b.")
fmod_backward_other = _kernel_fn("fmod_backward_other", _fmod_backward_other,
                                 "``-g * trunc(a / b)``: fmod's VJP for b.")
copysign_backward = _kernel_fn("copysign_backward", _copysign_backward,
                               "``g * sign(a) * sign(b)``, 0 where a == 0.")
xlogy_backward_input = _kernel_fn("xlogy_backward_input", _xlogy_backward_input,
                                  "``g * log(y)``, 0 where x == 0 (nan where y is nan).")
xlogy_backward_other = _kernel_fn("xlogy_backward_other", _xlogy_backward_other,
                                  "``g * x / y``, 0 where x == 0.")
lerp_backward_input = _kernel_fn("lerp_backward_input", _lerp_backward_input,
                                 "``g * (1 - weight)``: lerp's VJP for input.")
lerp_backward_weight = _kernel_fn("lerp_backward_weight", _lerp_backward_weight,
                                  "``g * (end - input)``: lerp's VJP for weight.")


def _with_value(op, prim, nargs, doc):
    check = _check[op]

    def fn(*args, value=1):
        if len(args) != nargs:
            raise TypeError(f"{op}() takes {nargs} positional arguments, got {len(args)}")
        xs = check(*args)
        return apply(prim, xs, {"value": _check_value(op, value, xs[0]._data.dtype)})
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = doc + "\n\n    Float operands, broadcast; exactly 0 where grad_output is 0.\n"
    return fn


addcmul_backward = _with_value("addcmul_backward", _addcmul_backward, 2,
                               "``value * g * other``: addcmul's VJP for a factor "
                               "(0 where g or other is 0).")
addcdiv_backward_t1 = _with_value("addcdiv_backward_t1", _addcdiv_backward_t1, 2,
                                  "``value * g / tensor2``: addcdiv's VJP for tensor1.")
addcdiv_backward_t2 = _with_value("addcdiv_backward_t2", _addcdiv_backward_t2, 3,
                                  "``-value * g * tensor1 / tensor2**2``: addcdiv's VJP "
                                  "for tensor2.")


def _rmod(self, other):
    """``other % self``."""
    return remainder(other, self)


def _rfloordiv(self, other):
    """``other // self``."""
    return floor_divide(other, self)


OPERATORS = {"__mod__": remainder, "__rmod__": _rmod,
             "__floordiv__": floor_divide, "__rfloordiv__": _rfloordiv}
