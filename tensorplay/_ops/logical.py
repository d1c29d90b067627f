"""Tests, logical and bitwise ops (issue 7): isclose, allclose, equal, isnan, isinf,
isfinite, isposinf, isneginf, isreal, logical_and/or/xor/not, bitwise_and/or/xor/not,
bitwise_left_shift/right_shift, and the ``& | ^ ~ << >>`` operators (reflected too).

None of these is differentiable: their results are bool or integer tensors (or a
Python bool), which never carry a gradient, so they are not registry primitives
and run numpy's ufuncs, which are as fast as a kernel for these one-instruction
loops (the comparisons eq..ge live in elementwise.py).  Each validates through a
declared ``Signature`` first: PyTorch's exception types, the op and the argument
in every message.  Type promotion follows PyTorch (``True & 3`` is int64; a bool
tensor with an int tensor promotes to the int dtype).
"""
import numpy as np

from tensorplay._ops._validate import BoolArg, Signature, TensorArg, declare
from tensorplay._ops.elementwise import _binary_sig
from tensorplay._ops import _batching as _B
from tensorplay._tensor import Tensor

__all__ = ["isclose", "allclose", "equal", "isnan", "isinf", "isfinite", "isposinf",
           "isneginf", "isreal", "logical_and", "logical_or", "logical_xor", "logical_not",
           "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
           "bitwise_right_shift"]
METHODS = list(__all__)
# declared Signatures with no primitive and so no op-table row (tests/test_fuzz.py);
# tests/test_binary.py checks their values and errors
NO_PRIMITIVE = list(__all__)
INPLACE = ["logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and",
           "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
           "bitwise_right_shift"]

_wrap = Tensor._wrap


# ---------------------------------------------------------------- declarations
_check_isclose = declare(Signature(
    "isclose", TensorArg("input"), TensorArg("other"), BoolArg("equal_nan", default=False),
    broadcast=("input", "other"), same_dtype=("input", "other")))
_check_allclose = declare(Signature(
    "allclose", TensorArg("input"), TensorArg("other"), BoolArg("equal_nan", default=False),
    broadcast=("input", "other"), same_dtype=("input", "other")))
_check_equal = declare(Signature("equal", TensorArg("input"), TensorArg("other")))
_check_unary = {op: declare(Signature(op, TensorArg("input")))
                for op in ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal",
                           "logical_not")}
_check_logical = {op: declare(Signature(op, TensorArg("input"), TensorArg("other"),
                                        broadcast=("input", "other")))
                  for op in ("logical_and", "logical_or", "logical_xor")}
_BITWISE_MSG = "bitwise ops are defined on integer and bool tensors only (as PyTorch)"
_check_bitwise = {op: declare(_binary_sig(op, kinds="ib", message=_BITWISE_MSG,
                                          forward_checks_broadcast=False))
                  for op in ("bitwise_and", "bitwise_or", "bitwise_xor")}
_check_bitwise_not = declare(Signature("bitwise_not", TensorArg("input", "ib",
                                                                message=_BITWISE_MSG)))
_SHIFT_MSG = "shifts are defined on integer tensors only (as PyTorch's lshift_cpu)"
_check_shift = {op: declare(_binary_sig(op, kinds="i", message=_SHIFT_MSG,
                                        forward_checks_broadcast=False))
                for op in ("bitwise_left_shift", "bitwise_right_shift")}


def _tolerance(op, name, value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer,
                                                                    np.floating)):
        raise TypeError(f"{op}(): argument '{name}' must be a float, not "
                        f"{type(value).__name__}")
    if not value >= 0:
        raise RuntimeError(f"{op}(): {name} must be greater than or equal to zero, but got "
                           f"{value}")
    return float(value)


# ---------------------------------------------------------------- closeness and equality
def _isclose(op, input, other, rtol, atol, equal_nan):
    a, b, equal_nan = (_check_isclose if op == "isclose" else _check_allclose)(
        input, other, equal_nan)
    rtol, atol = _tolerance(op, "rtol", rtol), _tolerance(op, "atol", atol)
    x, y = a._data, b._data
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.asarray(x == y)
        if x.dtype.kind == "f":
            if equal_nan:
                close = close | (np.isnan(x) & np.isnan(y))
            err = np.abs(x - y)
            close = close | (np.isfinite(err) & (err <= atol + np.abs(rtol * y)))
        elif x.dtype.kind != "b":
            xf, yf = x.astype(np.float64), y.astype(np.float64)
            close = close | (np.abs(xf - yf) <= atol + np.abs(rtol * yf))
    return close


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|input - other| <= atol + rtol * |other|`` (``torch.isclose``):
    a bool tensor of the broadcast shape.  Infinities are close only to themselves;
    nan is close to nan only with ``equal_nan``.  Integer tensors compare in
    float64; bool tensors by equality.

    Args:
        input, other (Tensor): of one dtype (PyTorch does not promote here).
        rtol, atol (float): non-negative tolerances.
        equal_nan (bool): treat two nans as close.

    Raises:
        TypeError: a non-Tensor operand, a non-number tolerance, a non-bool equal_nan.
        RuntimeError: dtypes that differ, a negative tolerance, shapes that do not
            broadcast.
    """
    return _wrap(_isclose("isclose", input, other, rtol, atol, equal_nan))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``isclose(...).all()`` as a Python bool (``torch.allclose``); the same
    arguments and errors as ``isclose``."""
    return bool(np.all(_isclose("allclose", input, other, rtol, atol, equal_nan)))


def equal(input, other):
    """True when both tensors have the same shape and the same values (after type
    promotion, as ``torch.equal``: ``equal(tensor([1.]), tensor([1]))`` is True);
    nan is never equal.  Returns a Python bool.  TypeError for a non-Tensor."""
    a, b = _check_equal(input, other)
    x, y = a._data, b._data
    return x.shape == y.shape and bool(np.array_equal(x, y))


# ---------------------------------------------------------------- value tests
def _value_test(op, fn, doc):
    check = _check_unary[op]

    def test(input):
        x = check(input)._data
        if x.dtype.kind != "f":
            return _wrap(np.full(x.shape, op in ("isfinite", "isreal")))
        return _wrap(np.asarray(fn(x)))
    test.__name__ = test.__qualname__ = op
    test.__doc__ = (doc + "\n\n    Any dtype (integer and bool elements are finite and real);"
                    " returns a bool tensor of the input's shape.  TypeError for a "
                    "non-Tensor.\n")
    return _B.loop_under_vmap(test)


isnan = _value_test("isnan", np.isnan, "True where ``input`` is nan.")
isinf = _value_test("isinf", np.isinf, "True where ``input`` is +inf or -inf.")
isfinite = _value_test("isfinite", np.isfinite, "True where ``input`` is neither inf nor nan.")
isposinf = _value_test("isposinf", np.isposinf, "True where ``input`` is +inf.")
isneginf = _value_test("isneginf", np.isneginf, "True where ``input`` is -inf.")
isreal = _value_test("isreal", lambda x: np.ones(x.shape, bool),
                     "True everywhere: tensorplay has no complex dtypes.")


# ---------------------------------------------------------------- logical
def _logical(op, ufunc):
    check = _check_logical[op]

    def logical(input, other):
        a, b = check(input, other)
        return _wrap(np.asarray(ufunc(a._data, b._data)))
    logical.__name__ = logical.__qualname__ = op
    logical.__doc__ = (f"Elementwise logical ``{op[8:]}`` of the truth values (nonzero is "
                       f"True) of two tensors of any dtypes; a bool tensor of the broadcast "
                       f"shape.\n\n    Raises:\n        TypeError: a non-Tensor operand "
                       f"(PyTorch takes no numbers here).\n        RuntimeError: shapes "
                       f"that do not broadcast.\n")
    return logical


logical_and = _logical("logical_and", np.logical_and)
logical_or = _logical("logical_or", np.logical_or)
logical_xor = _logical("logical_xor", np.logical_xor)


def logical_not(input):
    """Elementwise logical not (True where ``input`` is zero); a bool tensor of any
    input dtype.  TypeError for a non-Tensor."""
    return _wrap(np.logical_not(_check_unary["logical_not"](input)._data))


# ---------------------------------------------------------------- bitwise
def _bitwise(op, check, ufunc, doc):
    def bitwise(input, other):
        a, b = check(input, other)
        return _wrap(np.asarray(ufunc(a._data, b._data)))
    bitwise.__name__ = bitwise.__qualname__ = op
    bitwise.__doc__ = doc + """

    Args:
        input, other (Tensor or int or bool): broadcastable integer or bool
            operands, promoted as PyTorch does.

    Raises:
        TypeError: an operand that is neither a Tensor nor a number.
        NotImplementedError: a float operand (a RuntimeError subclass, as PyTorch).
        RuntimeError: shapes that do not broadcast.
"""
    return bitwise


bitwise_and = _bitwise("bitwise_and", _check_bitwise["bitwise_and"], np.bitwise_and,
                       "Elementwise bitwise AND (logical AND on bool); the ``&`` operator.")
bitwise_or = _bitwise("bitwise_or", _check_bitwise["bitwise_or"], np.bitwise_or,
                      "Elementwise bitwise OR; the ``|`` operator.")
bitwise_xor = _bitwise("bitwise_xor", _check_bitwise["bitwise_xor"], np.bitwise_xor,
                       "Elementwise bitwise XOR; the ``^`` operator.")
# numpy's shifts define what C leaves undefined exactly as PyTorch does: a shift by
# a negative count or by at least the bit width gives 0 (left) or the sign fill
# (right: -1 for negative values), tests/test_binary.py
bitwise_left_shift = _bitwise(
    "bitwise_left_shift", _check_shift["bitwise_left_shift"], np.left_shift,
    "``input << other``, elementwise; integer tensors only (bool raises, as PyTorch). "
    "A count < 0 or >= the bit width gives 0.")
bitwise_right_shift = _bitwise(
    "bitwise_right_shift", _check_shift["bitwise_right_shift"], np.right_shift,
    "``input >> other`` (arithmetic), elementwise; integer tensors only.  A count < 0 "
    "or >= the bit width gives 0, or -1 for negative values.")


def bitwise_not(input):
    """Elementwise bitwise NOT (logical not on bool); the ``~`` operator.

    Raises:
        TypeError: a non-Tensor.  NotImplementedError: a float tensor.
    """
    return _wrap(np.invert(_check_bitwise_not(input)._data))


def _invert(self):
    """``~self``: bitwise_not; a float tensor raises TypeError, as PyTorch's ``~``."""
    if isinstance(self, Tensor) and self._data.dtype.kind == "f":
        raise TypeError("~ (operator.invert) is only implemented on integer and bool "
                        f"tensors, got {self.dtype}")
    return bitwise_not(self)


def _reflect(fn):
    def reflected(self, other):
        return fn(other, self)
    reflected.__name__ = reflected.__qualname__ = f"__r{fn.__name__}__"
    reflected.__doc__ = f"``{fn.__name__}(other, self)``."
    return reflected


OPERATORS = {"__and__": bitwise_and, "__rand__": _reflect(bitwise_and),
             "__or__": bitwise_or, "__ror__": _reflect(bitwise_or),
             "__xor__": bitwise_xor, "__rxor__": _reflect(bitwise_xor),
             "__lshift__": bitwise_left_shift, "__rlshift__": _reflect(bitwise_left_shift),
             "__rshift__": bitwise_right_shift, "__rrshift__": _reflect(bitwise_right_shift),
             "__invert__": _invert}
