"""Argument checks and dtype promotion shared by the public op functions.

The public functions validate and promote; kernels assume valid input (they run
with bounds checks off).  Every error names the op, the argument, and what was
expected versus given.
"""
import operator

import numpy as np

from tensorplay import _dtype
from tensorplay._config import CONFIG
from tensorplay._tensor import Tensor

__all__ = ["CONFIG", "as_tensor_arg", "promote", "normalize_dim", "normalize_dims",
           "check_float", "float_input", "broadcast_shape", "tensor_checker",
           "binary_checker", "not_tensor_error", "dtype_error", "describe_kinds", "kind_of"]


def as_tensor_arg(x, op, arg="input"):
    """Require a Tensor argument."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' must be Tensor, not {type(x).__name__}")
    return x


def _scalar_tensor(value, d, op="op"):
    if d.numpy.kind in "iu" and isinstance(value, int) and not isinstance(value, bool):
        info = np.iinfo(d.numpy)
        if not info.min <= value <= info.max:
            raise RuntimeError(f"{op}(): value {value} cannot be converted to type {d} "
                               f"without overflow")
    return Tensor._wrap(np.array(value, dtype=d.numpy))


# Python-number operands of float tensors, as read-only 0-d Tensors, per dtype
_CONSTANTS = {np.dtype(np.float32): {}, np.dtype(np.float64): {}}
_CONST32 = _CONSTANTS[np.dtype(np.float32)]
_CONST64 = _CONSTANTS[np.dtype(np.float64)]
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_MAX_CONSTANTS = 256


def _constant(value, np_dtype):
    """A Python number as a 0-d Tensor of the float dtype ``np_dtype``.

    ``y * 1.01 + 0.1`` in a loop would otherwise build two arrays and two Tensors
    per step; the same few constants recur, so they are made once (read-only, no
    history: nothing can change them) and reused.  Zeros (0.0 == -0.0) and nan
    (nan != nan) are not cached.  A cache is emptied when it holds 256 entries.
    """
    cache = _CONST32 if np_dtype is _F32 else _CONST64 if np_dtype is _F64 else None
    t = None if cache is None else cache.get(value)
    if t is None:
        arr = np.array(value, dtype=np_dtype)
        t = Tensor._wrap(arr)
        if cache is not None and value != 0 and value == value:
            arr.flags.writeable = False
            if len(cache) >= _MAX_CONSTANTS:
                cache.clear()
            cache[value] = t
    return t


def promote(a, b, op, float_result=False, names=("input", "other")):
    """Turn (Tensor|scalar|ndarray, Tensor|scalar|ndarray) into two Tensors of one dtype.

    Python scalars follow PyTorch's promotion (``tensorplay._dtype.result_type``).
    With ``float_result`` an integer result dtype becomes the default float dtype
    (true division).  ``names`` are the argument names errors use.

    Raises:
        TypeError: for an operand that is neither a Tensor, a number nor an ndarray.
    """
    # fast paths: two tensors of one dtype; a float tensor with a Python float/int
    ta, tb = type(a) is Tensor, type(b) is Tensor
    if ta and tb:
        if a._data.dtype == b._data.dtype and (not float_result or a._data.dtype.kind == "f"):
            return a, b
    elif ta and type(b) in (float, int) and a._data.dtype.kind == "f":
        return a, _constant(b, a._data.dtype)
    elif tb and type(a) in (float, int) and b._data.dtype.kind == "f":
        return _constant(a, b._data.dtype), b
    a = _coerce(a, op, names[0])
    b = _coerce(b, op, names[1])
    d = _dtype.result_type(a, b)
    if float_result and not d.is_floating_point:
        d = _dtype.get_default_dtype()
    np_d = d.numpy
    if isinstance(a, Tensor):
        if a._data.dtype != np_d:
            a = a.to(d)
    else:
        a = _scalar_tensor(a, d, op)
    if isinstance(b, Tensor):
        if b._data.dtype != np_d:
            b = b.to(d)
    else:
        b = _scalar_tensor(b, d, op)
    return a, b


def _coerce(x, op, arg):
    """An operand as a Tensor or a Python number.

    ndarrays are wrapped without copying when their dtype is supported, after
    ``_dtype.check_ndarray`` (subclasses become plain ndarrays, non-numeric
    dtypes raise TypeError, a non-native byte order is converted).

    Raises:
        TypeError: for anything but a Tensor, a real number or a numeric ndarray.
    """
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (bool, int, float, np.bool_, np.integer, np.floating)):
        return x.item() if isinstance(x, np.generic) else x
    if isinstance(x, np.ndarray):
        x = _dtype.check_ndarray(x, op, share=True) if x.dtype.isnative else \
            _dtype.check_ndarray(x, op, share=False)
        return Tensor._wrap(x.astype(_dtype.from_numpy_dtype(x.dtype, op).numpy, copy=False))
    raise TypeError(f"{op}(): argument '{arg}' must be a Tensor or a real number, "
                    f"not {type(x).__name__}")


def normalize_dim(dim, ndim, op, arg="dim"):
    """Map ``dim`` (possibly negative) into ``[0, ndim)``; 0-d tensors accept 0 and -1.

    Raises:
        TypeError: when ``dim`` is not an integer (bool included, as PyTorch).
        IndexError: when ``dim`` is out of range.
    """
    if type(dim) is not int:
        if isinstance(dim, (bool, np.bool_)):
            raise TypeError(f"{op}(): argument '{arg}' must be int, not bool")
        try:
            dim = operator.index(dim)
        except TypeError:
            raise TypeError(f"{op}(): argument '{arg}' must be int, not "
                            f"{type(dim).__name__}") from None
    n = ndim if ndim > 0 else 1
    if not -n <= dim < n:
        raise IndexError(f"{op}(): argument '{arg}': Dimension out of range (expected to be "
                         f"in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def normalize_dims(dim, ndim, op, arg="dim"):
    """``None``, an int or a sequence of ints -> a sorted tuple of distinct dims.

    ``None`` and the empty tuple mean every dimension (PyTorch's convention).  A
    0-d tensor accepts 0 and -1, each at most once, and gives ``()``.

    Raises:
        TypeError: a dim that is not an integer, or ``dim`` of another type.
        IndexError: a dim out of range.
        RuntimeError: when a dim appears twice (also 0 and -1 on a 0-d tensor).
    """
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        if len(dim) == 0:
            return tuple(range(ndim))
        dims = [normalize_dim(d, ndim, op, arg) for d in dim]
    else:
        dims = [normalize_dim(dim, ndim, op, arg)]
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"{op}(): argument '{arg}': dim "
                           f"{next(d for d in dims if dims.count(d) > 1)} appears multiple "
                           f"times in the list of dims")
    if ndim == 0:
        return ()
    return tuple(sorted(dims))


def check_float(x, op):
    """Raise when ``x`` is not a float32/float64 tensor (for ops without integer forms)."""
    if x._data.dtype.kind != "f":
        raise RuntimeError(f"{op}(): expected a floating point tensor (float32 or float64), "
                           f"got {x.dtype}")


def float_input(x, op):
    """Integer and bool inputs of float-valued math (exp, log, ...) are promoted to the
    default float dtype, as PyTorch does."""
    as_tensor_arg(x, op)
    if x._data.dtype.kind != "f":
        return x.to(_dtype.get_default_dtype())
    return x


# ---------------------------------------------------------------- broadcasting
def broadcast_shape(sa, sb, op):
    """The broadcast shape of two shapes, or a RuntimeError naming ``op``."""
    if sa == sb or not sb:
        return sa
    if not sa:
        return sb
    # numpy's broadcast_shapes stops at 32 dims; PyTorch (and tensorplay's
    # kernels) go further, so the rule is spelled out
    n = max(len(sa), len(sb))
    pa = (1,) * (n - len(sa)) + tuple(sa)
    pb = (1,) * (n - len(sb)) + tuple(sb)
    out = []
    for x, y in zip(pa, pb):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise _broadcast_error(sa, sb, op)
    return tuple(out)


def _broadcast_error(sa, sb, op, names=("a", "b")):
    # apart from broadcast_shape so that its fast path has no closure (the
    # generator below) to allocate when compiled
    n = max(len(sa), len(sb))
    pa = (1,) * (n - len(sa)) + tuple(sa)
    pb = (1,) * (n - len(sb)) + tuple(sb)
    i = next(i for i in range(n) if pa[i] != pb[i] and 1 not in (pa[i], pb[i]))
    return RuntimeError(f"{op}(): the size of tensor {names[0]} ({pa[i]}) must match the size "
                        f"of tensor {names[1]} ({pb[i]}) at non-singleton dimension {i}; "
                        f"shapes are {list(sa)} and {list(sb)}")


# ---------------------------------------------------------------- compiled checkers
# The declarations in _validate.py are compiled into checkers at import time.  The
# two shapes on every hot path -- one tensor argument (exp, tanh, ...) and two
# promoted operands (add, mul, the fused derivative kernels) -- get their checker
# from the factories below: this module is compiled with Cython, so the closures
# they return run as C, and a declared check costs what the hand-written one did.
KIND_NAMES = {"f": "floating point", "i": "integer", "b": "bool"}


def describe_kinds(kinds):
    """``"fi"`` -> ``"floating point or integer"`` (for error messages)."""
    return " or ".join(KIND_NAMES[k] for k in "fib" if k in kinds)


def kind_of(value):
    """The dtype kind of a Tensor or Python number: ``"f"``, ``"i"`` or ``"b"``."""
    if isinstance(value, Tensor):
        k = value._data.dtype.kind
        return "i" if k == "u" else k
    if isinstance(value, (bool, np.bool_)):
        return "b"
    if isinstance(value, (int, np.integer)):
        return "i"
    return "f"


def not_tensor_error(op, arg, value, numbers=False):
    """TypeError for a non-Tensor argument (PyTorch's wording)."""
    want = "Tensor or a real number" if numbers else "Tensor"
    return TypeError(f"{op}(): argument '{arg}' must be {want}, not {type(value).__name__}")


def dtype_error(op, arg, got, kinds, exc=NotImplementedError, message=None):
    """The error for a dtype outside ``kinds``: PyTorch raises NotImplementedError
    ("... not implemented for 'Long'") where it has no kernel for the dtype, and
    RuntimeError where the dtype makes no sense for the op (negating a bool)."""
    text = (f"{op}(): argument '{arg}' must be a {describe_kinds(kinds)} tensor, "
            f"got {got}")
    if message:
        text += f" ({message})"
    return exc(text)


def tensor_checker(op, arg, kinds, to_float=False, exc=NotImplementedError, message=None):
    """A checker ``check(x) -> Tensor`` for one Tensor argument of dtype kind in
    ``kinds``; with ``to_float`` integer and bool tensors are cast to the default
    float dtype (float-valued math such as ``exp``, as PyTorch)."""
    float_ok = "f" in kinds
    accept = set(kinds) | ({"u"} if "i" in kinds else set())

    def check(x):
        if not isinstance(x, Tensor):
            raise not_tensor_error(op, arg, x)
        d = x._data.dtype
        if (d is _F32 or d is _F64) and float_ok:
            return x
        k = d.kind
        if k not in accept:
            raise dtype_error(op, arg, x.dtype, kinds, exc, message)
        if to_float and k != "f":
            return x.to(_dtype.get_default_dtype())
        return x
    return check


def binary_checker(op, names, kinds="fib", result_kinds="fib", float_result=False,
                   exc=NotImplementedError, message=None, check_shapes=True):
    """A checker ``check(a, b) -> (a, b)``: ``promote`` (its fast paths inlined),
    then the operand kinds (before promotion: ``sub`` refuses a bool operand even
    when the result would be an integer), the promoted dtype's kind, and -- with
    ``check_shapes`` -- that the shapes broadcast.  Without it the primitive's
    forward checks them (``broadcast_shape``, before its kernel runs): fetching
    two shapes here as well would cost about 100 ns per op.  The errors name
    the arguments."""
    check_operands = set(kinds) != {"f", "i", "b"}
    check_result = set(result_kinds) != {"f", "i", "b"}
    float_ok = "f" in result_kinds        # a float32/float64 result passes at once
    name_a, name_b = names

    def check(a, b):
        if check_operands:
            if kind_of(a) not in kinds:
                raise _operand_error(op, name_a, a, kinds, exc, message)
            if kind_of(b) not in kinds:
                raise _operand_error(op, name_b, b, kinds, exc, message)
        # promote's fast paths, inlined (one call per op, as before the checker);
        # each leaves a float32/float64 result, which every result_kinds but
        # an integer-only one accepts without a further look
        if type(a) is Tensor:
            d = a._data.dtype
            if type(b) is Tensor:
                if (d is b._data.dtype or d == b._data.dtype) and \
                        (d is _F32 or d is _F64) and float_ok:
                    return (a, b) if not check_shapes else _shapes_checked(a, b, op, names)
            elif type(b) in (float, int) and (d is _F32 or d is _F64) and float_ok:
                return a, _constant(b, d)             # a 0-d operand always broadcasts
        elif type(b) is Tensor and type(a) in (float, int):
            d = b._data.dtype
            if (d is _F32 or d is _F64) and float_ok:
                return _constant(a, d), b
        a, b = promote(a, b, op, float_result, names)
        if check_result:
            d = a._data.dtype
            if not (float_ok and (d is _F32 or d is _F64)) and kind_of(a) not in result_kinds:
                raise exc(f"{op}(): not implemented for {a.dtype} operands ('{name_a}' and "
                          f"'{name_b}' promote to {a.dtype}); expected "
                          f"{describe_kinds(result_kinds)} tensors"
                          + (f" ({message})" if message else ""))
        return (a, b) if not check_shapes else _shapes_checked(a, b, op, names)
    return check


def _shapes_checked(a, b, op, names):
    """``(a, b)`` when their shapes broadcast, else the RuntimeError naming them."""
    sa = a._data.shape
    sb = b._data.shape
    if sa != sb and sa and sb:
        try:
            broadcast_shape(sa, sb, op)
        except RuntimeError:
            raise _broadcast_error(sa, sb, op, (f"'{names[0]}'", f"'{names[1]}'")) from None
    return a, b


def _operand_error(op, arg, value, kinds, exc, message):
    got = value.dtype if isinstance(value, Tensor) else type(value).__name__
    return dtype_error(op, arg, got, kinds, exc, message)
