"""Tensor creation: from data, filled, ranges, and random (numpy's PCG64 stream).

Random tensors come from one process-wide ``numpy.random.Generator``;
``manual_seed(s)`` resets it, so a seeded program draws the same numbers every
run (not the same numbers as PyTorch's generator).
"""
import builtins
import math
import operator

import numpy as np

from tensorplay import _dtype
from tensorplay._tensor import Tensor

__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty",
           "arange", "linspace", "eye", "rand", "randn", "randint", "zeros_like",
           "ones_like", "full_like", "empty_like", "rand_like", "randn_like",
           "randint_like", "manual_seed", "initial_seed"]

# [generator, seed].  The generator is made on first use: importing numpy.random
# (and the hashlib/secrets modules it pulls in) is a third of what
# `import tensorplay` would otherwise cost.
_rng = [None, None]
_MAX_NUMEL = 2 ** 62       # numpy's own limit is about this; beyond, refuse clearly


def manual_seed(seed):
    """Seed the generator behind ``rand``/``randn``/``randint``; returns the seed.

    Raises:
        ValueError: a negative seed.  TypeError: a non-integer seed.
    """
    seed = operator.index(seed)
    if seed < 0:
        raise ValueError(f"manual_seed(): seed must be non-negative, got {seed}")
    _rng[0] = np.random.default_rng(seed)
    _rng[1] = seed
    return seed


def _generator():
    """The process-wide generator, made (from OS entropy) on first use."""
    gen = _rng[0]
    if gen is None:
        gen = _rng[0] = np.random.default_rng()
    return gen


def initial_seed():
    """The seed last given to ``manual_seed`` (None when never seeded)."""
    return _rng[1]


def _finish(arr, requires_grad, op):
    t = Tensor._wrap(arr)
    if requires_grad:
        if arr.dtype.kind != "f":
            raise RuntimeError(f"{op}(): only Tensors of floating point dtype can require "
                               f"gradients, got {t.dtype}")
        t._requires_grad = True
    return t


def _infer_dtype(data, op):
    """The dtype ``tensor(data)`` takes: bool < int64 < default float, over all leaves."""
    kinds = set()
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, Tensor):
            kinds.add(x._data.dtype.kind)
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, (builtins.bool, np.bool_)):
            kinds.add("b")
        elif isinstance(x, (int, np.integer)):
            kinds.add("i")
        elif isinstance(x, (float, np.floating)):
            kinds.add("f")
        else:
            raise TypeError(f"{op}(): could not infer dtype of {type(x).__name__}; expected "
                            f"numbers, nested lists of numbers, or an ndarray")
    if "f" in kinds:
        return _dtype.get_default_dtype()
    if "i" in kinds or "u" in kinds:
        return _dtype.int64
    if "b" in kinds:
        return _dtype.bool
    return _dtype.get_default_dtype()    # empty list


def _to_array(data, dtype, op, copy):
    """The storage for ``tensor``/``as_tensor``: a copy (``copy``), or ``data``'s own
    memory when the dtype allows; ndarrays pass ``_dtype.check_ndarray`` first."""
    if isinstance(data, Tensor):
        arr = data._data
        d = _dtype.as_dtype(dtype, op) if dtype is not None else data.dtype
    elif isinstance(data, np.ndarray):
        # as_tensor shares memory when it can; another byte order has to be copied
        arr = _dtype.check_ndarray(data, op, share=not copy and data.dtype.isnative)
        d = _dtype.as_dtype(dtype, op) if dtype is not None else \
            _dtype.from_numpy_dtype(arr.dtype, op)
    else:
        if dtype is not None:
            d = _dtype.as_dtype(dtype, op)
        elif isinstance(data, np.generic):      # a numpy scalar keeps its dtype
            d = _dtype.from_numpy_dtype(data.dtype, op)
        else:
            d = _infer_dtype(data, op)
        return _from_python(data, d, op)
    if copy:
        return np.array(arr, dtype=d.numpy, copy=True)
    return arr if arr.dtype == d.numpy else arr.astype(d.numpy)


def _from_python(data, d, op):
    """Python numbers / nested lists as an ndarray of ``d``.  Floats bound for an
    integer dtype are truncated toward zero; nan, inf and values out of the dtype's
    range raise, as PyTorch's ``tensor`` does.  Floats out of a float dtype's range
    become inf (PyTorch again)."""
    try:
        if d.numpy.kind in "iu":
            arr = np.array(data)
            if arr.dtype.kind == "f":
                if not np.isfinite(arr).all():
                    raise RuntimeError(f"{op}(): value {arr[~np.isfinite(arr)].flat[0]} cannot "
                                       f"be converted to type {d} without overflow")
                info = np.iinfo(d.numpy)
                if arr.size and not (info.min - 1.0 < arr.min() and arr.max() < info.max + 1.0):
                    raise RuntimeError(f"{op}(): a value in the data cannot be converted to "
                                       f"type {d} without overflow")
                return np.trunc(arr).astype(d.numpy)
        with np.errstate(over="ignore"):
            return np.array(data, dtype=d.numpy)
    except OverflowError:
        raise RuntimeError(f"{op}(): a value in the data does not fit in {d}") from None
    except (ValueError, TypeError) as e:
        raise ValueError(f"{op}(): could not build a tensor from the data: {e}") from None


def tensor(data, *, dtype=None, requires_grad=False):
    """A new tensor holding a copy of ``data``.

    Args:
        data: a number, a (nested) list/tuple of numbers, an ndarray or a Tensor.
        dtype (dtype, optional): default: inferred -- Python floats give the default
            float dtype (float32), ints int64, bools bool; ndarrays keep theirs.
        requires_grad (bool): make a leaf that requires grad (floating dtypes only).

    Raises:
        TypeError: unsupported element types or dtypes.  ValueError: ragged lists.
        RuntimeError: ``requires_grad=True`` with a non-floating dtype.
    """
    return _finish(_to_array(data, dtype, "tensor", copy=True), requires_grad, "tensor")


def as_tensor(data, dtype=None):
    """Like ``tensor`` but shares memory with an ndarray or Tensor when the dtype allows.

    ndarrays are normalised as ``from_numpy`` describes, except that a non-native
    byte order is converted (a copy) rather than refused.

    Raises:
        TypeError: unsupported element types or dtypes.
    """
    if isinstance(data, Tensor) and (dtype is None or _dtype.as_dtype(dtype) is data.dtype):
        return data
    return _finish(_to_array(data, dtype, "as_tensor", copy=False), False, "as_tensor")


def from_numpy(ndarray):
    """A tensor sharing memory with ``ndarray`` (element writes show through both ways).

    The tensor keeps its own ndarray view of the memory: subclasses such as
    ``np.matrix`` are stored as plain ndarrays, and later changes to the
    caller's array's ``shape`` or ``strides`` do not reach the tensor.  A writable
    array whose elements overlap in memory (zero strides from ``as_strided`` or
    ``broadcast_to(...)`` made writable) gives a read-only tensor: in-place ops
    raise RuntimeError (``clone()`` first) instead of losing writes.  Negative
    strides are kept (PyTorch refuses them).  See ``_dtype.check_ndarray``.

    Raises:
        TypeError: not an ndarray, or a dtype other than float32/float64/int64/int32/
            bool (structured, object, string, datetime and complex dtypes included).
        ValueError: a non-native byte order (memory can't be shared), as PyTorch.
    """
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy(): expected an np.ndarray, got {type(ndarray).__name__}")
    arr = _dtype.check_ndarray(ndarray, "from_numpy", share=True)
    _dtype.from_numpy_dtype(arr.dtype, "from_numpy")
    return Tensor._wrap(arr)


def _size(size, op):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    try:
        size = tuple(operator.index(s) for s in size)
    except TypeError:
        raise TypeError(f"{op}(): size must be a sequence of ints, got {size!r}") from None
    if any(s < 0 for s in size):
        raise RuntimeError(f"{op}(): trying to create tensor with negative dimension: "
                           f"{list(size)}")
    return size


def _float_dtype(dtype, op):
    return _dtype.get_default_dtype() if dtype is None else _dtype.as_dtype(dtype, op)


def zeros(*size, dtype=None, requires_grad=False):
    """A tensor of zeros of shape ``size`` (ints or one tuple); default float dtype."""
    d = _float_dtype(dtype, "zeros")
    return _finish(np.zeros(_size(size, "zeros"), d.numpy), requires_grad, "zeros")


def ones(*size, dtype=None, requires_grad=False):
    """A tensor of ones of shape ``size``; default float dtype."""
    d = _float_dtype(dtype, "ones")
    return _finish(np.ones(_size(size, "ones"), d.numpy), requires_grad, "ones")


def empty(*size, dtype=None, requires_grad=False):
    """An uninitialised tensor of shape ``size`` (contents are arbitrary)."""
    d = _float_dtype(dtype, "empty")
    return _finish(np.empty(_size(size, "empty"), d.numpy), requires_grad, "empty")


def full(size, fill_value, *, dtype=None, requires_grad=False):
    """A tensor of shape ``size`` filled with ``fill_value``; the dtype is inferred from
    the value (bool, int64 or the default float) unless given."""
    if dtype is None:
        d = _dtype.scalar_dtype(fill_value)
    else:
        d = _dtype.as_dtype(dtype, "full")
    size = _size(tuple(size) if isinstance(size, (tuple, list)) else (size,), "full")
    return _finish(np.full(size, fill_value, d.numpy), requires_grad, "full")


def arange(start, end=None, step=1, *, dtype=None, requires_grad=False):
    """Values from ``start`` (default 0) up to but excluding ``end`` by ``step``.

    int64 when all of start/end/step are ints, else the default float dtype.

    Raises:
        RuntimeError: ``step == 0`` or a step whose sign cannot reach ``end``.
    """
    if end is None:
        start, end = 0, start
    for name, v in (("start", start), ("end", end), ("step", step)):
        if not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, builtins.bool):
            raise TypeError(f"arange(): {name} must be a real number, got {type(v).__name__}")
        if not np.isfinite(v):
            raise RuntimeError(f"arange(): {name} must be finite, got {v}")
    if step == 0:
        raise RuntimeError("arange(): step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange(): the sign of step cannot reach end from start "
                           f"(start={start}, end={end}, step={step})")
    n = math.ceil((end - start) / step)
    if n > _MAX_NUMEL:
        raise RuntimeError(f"arange(): {n} elements is too many (start={start}, end={end}, "
                           f"step={step})")
    if dtype is None:
        all_int = all(isinstance(v, (int, np.integer)) and not isinstance(v, builtins.bool)
                      for v in (start, end, step))
        d = _dtype.int64 if all_int else _dtype.get_default_dtype()
    else:
        d = _dtype.as_dtype(dtype, "arange")
    return _finish(np.arange(start, end, step).astype(d.numpy), requires_grad, "arange")


def linspace(start, end, steps, *, dtype=None, requires_grad=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive.

    Raises:
        RuntimeError: negative ``steps``.
    """
    steps = operator.index(steps)
    if steps < 0:
        raise RuntimeError(f"linspace(): number of steps must be non-negative, got {steps}")
    d = _float_dtype(dtype, "linspace")
    return _finish(np.linspace(start, end, steps, dtype=np.float64).astype(d.numpy),
                   requires_grad, "linspace")


def eye(n, m=None, *, dtype=None, requires_grad=False):
    """An (n, m) matrix (m defaults to n) with ones on the diagonal."""
    n = operator.index(n)
    m = n if m is None else operator.index(m)
    if n < 0 or m < 0:
        raise RuntimeError(f"eye(): n and m must be non-negative, got n={n}, m={m}")
    d = _float_dtype(dtype, "eye")
    return _finish(np.eye(n, m, dtype=d.numpy), requires_grad, "eye")


def rand(*size, dtype=None, requires_grad=False):
    """Uniform samples on [0, 1) of shape ``size``; float32 or float64."""
    d = _float_dtype(dtype, "rand")
    if not d.is_floating_point:
        raise TypeError(f"rand(): expected a floating dtype, got {d}")
    return _finish(_generator().random(_size(size, "rand"), dtype=d.numpy), requires_grad, "rand")


def randn(*size, dtype=None, requires_grad=False):
    """Standard normal samples of shape ``size``; float32 or float64."""
    d = _float_dtype(dtype, "randn")
    if not d.is_floating_point:
        raise TypeError(f"randn(): expected a floating dtype, got {d}")
    return _finish(_generator().standard_normal(_size(size, "randn"), dtype=d.numpy),
                   requires_grad, "randn")


def randint(low=0, high=None, size=None, *, dtype=None):
    """Integers uniform on [low, high) of shape ``size``: ``randint(high, size)`` or
    ``randint(low, high, size)`` (PyTorch's signatures); int64 by default.

    Raises:
        RuntimeError: ``low >= high``.  TypeError: missing ``size``.
    """
    if size is None:
        if high is None:
            raise TypeError("randint(): missing the required argument 'size'")
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    if low >= high:
        raise RuntimeError(f"randint(): random_ expects 'from' to be less than 'to', but "
                           f"got from={low} >= to={high}")
    d = _dtype.int64 if dtype is None else _dtype.as_dtype(dtype, "randint")
    size = _size(tuple(size) if isinstance(size, (tuple, list)) else (size,), "randint")
    return Tensor._wrap(_generator().integers(low, high, size).astype(d.numpy))


def _like(input, dtype, op):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    return input._data.shape, (input.dtype if dtype is None else _dtype.as_dtype(dtype, op))


def zeros_like(input, *, dtype=None, requires_grad=False):
    """Zeros with the shape (and, by default, the dtype) of ``input``."""
    shape, d = _like(input, dtype, "zeros_like")
    return _finish(np.zeros(shape, d.numpy), requires_grad, "zeros_like")


def ones_like(input, *, dtype=None, requires_grad=False):
    """Ones with the shape and dtype of ``input``."""
    shape, d = _like(input, dtype, "ones_like")
    return _finish(np.ones(shape, d.numpy), requires_grad, "ones_like")


def empty_like(input, *, dtype=None, requires_grad=False):
    """Uninitialised, with the shape and dtype of ``input``."""
    shape, d = _like(input, dtype, "empty_like")
    return _finish(np.empty(shape, d.numpy), requires_grad, "empty_like")


def full_like(input, fill_value, *, dtype=None, requires_grad=False):
    """``fill_value`` everywhere, with the shape and dtype of ``input``."""
    shape, d = _like(input, dtype, "full_like")
    return _finish(np.full(shape, fill_value, d.numpy), requires_grad, "full_like")


def rand_like(input, *, dtype=None, requires_grad=False):
    """Uniform [0, 1) samples shaped like ``input``."""
    shape, d = _like(input, dtype, "rand_like")
    return rand(shape, dtype=d, requires_grad=requires_grad)


def randn_like(input, *, dtype=None, requires_grad=False):
    """Standard normal samples shaped like ``input``."""
    shape, d = _like(input, dtype, "randn_like")
    return randn(shape, dtype=d, requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None):
    """Integers on [low, high) shaped like ``input`` (``randint_like(x, high)`` too)."""
    shape, d = _like(input, dtype, "randint_like")
    if high is None:
        low, high = 0, low
    return randint(low, high, shape, dtype=d)
