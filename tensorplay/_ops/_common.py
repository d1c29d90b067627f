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
           "check_float"]


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


def promote(a, b, op, float_result=False):
    """Turn (Tensor|scalar|ndarray, Tensor|scalar|ndarray) into two Tensors of one dtype.

    Python scalars follow PyTorch's promotion (``tensorplay._dtype.result_type``).
    With ``float_result`` an integer result dtype becomes the default float dtype
    (true division).

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
    a = _coerce(a, op, "input")
    b = _coerce(b, op, "other")
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


def normalize_dim(dim, ndim, op):
    """Map ``dim`` (possibly negative) into ``[0, ndim)``; 0-d tensors accept 0 and -1.

    Raises:
        TypeError: when ``dim`` is not an integer.
        IndexError: when ``dim`` is out of range.
    """
    try:
        d = operator.index(dim)
    except TypeError:
        raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}") from None
    n = max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"{op}(): Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {d})")
    return d % n


def normalize_dims(dim, ndim, op):
    """``None``, an int or a sequence of ints -> a sorted tuple of distinct dims.

    ``None`` and the empty tuple mean every dimension (PyTorch's convention).

    Raises:
        RuntimeError: when a dim appears twice.
    """
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        if len(dim) == 0:
            return tuple(range(ndim))
        dims = [normalize_dim(d, ndim, op) for d in dim]
    else:
        dims = [normalize_dim(dim, ndim, op)]
    if ndim == 0:
        return ()
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"{op}(): dim {next(d for d in dims if dims.count(d) > 1)} "
                           f"appears multiple times in the list of dims")
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
