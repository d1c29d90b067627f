"""Tensor creation: from data, filled, ranges, and random (numpy's PCG64 stream).

Random tensors come from one process-wide ``numpy.random.Generator``;
``manual_seed(s)`` resets it, so a seeded program draws the same numbers every
run (not the same numbers as PyTorch's generator).

Every function here takes PyTorch's ``device=`` argument: ``None``, ``"cpu"``,
``"cpu:0"`` or ``tensorplay.device("cpu")`` (a ``torch.device("cpu")`` too);
any other device raises RuntimeError naming the function (tensorplay/_device.py).
"""
import builtins
import math
import operator

import numpy as np

from tensorplay import _device, _dtype
from tensorplay._tensor import Tensor, _checked_cast, _checked_scalar
from tensorplay.autograd.grad_mode import INFERENCE, STATE

__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty",
           "arange", "linspace", "eye", "rand", "randn", "randint", "zeros_like",
           "ones_like", "full_like", "empty_like", "rand_like", "randn_like",
           "randint_like", "manual_seed", "initial_seed"]

# [generator, seed].  The generator is made on first use: importing numpy.random
# (and the hashlib/secrets modules it pulls in) is a third of what
# `import tensorplay` would otherwise cost.
_rng = [None, None]


def manual_seed(seed):
    """Seed the generator behind ``rand``/``randn``/``randint``; returns the seed.

    Raises:
        ValueError: a negative seed.  TypeError: a seed that is not an int (None,
            floats and bools included; PyTorch truncates floats).
    """
    seed = _int_arg(seed, "manual_seed", "seed")
    if seed < 0:
        raise ValueError(f"manual_seed(): seed must be non-negative, got {seed}")
    _rng[0] = np.random.default_rng(seed)
    _rng[1] = seed
    return seed


def _generator(generator=None, op="a tensorplay sampler"):
    """The numpy Generator to draw from: that of ``generator`` (a
    ``tensorplay.Generator``, checked; tensorplay/_generator.py), else the
    process-wide one, made (from OS entropy) on first use.

    Every sampler draws through here, so this is where vmap's ``randomness="error"``
    refuses random ops (tensorplay/func/_vmap.py)."""
    if STATE.vmap_depth:
        from tensorplay.func._vmap import _check_random
        _check_random("(a tensorplay sampler)")
    if generator is not None:
        from tensorplay._generator import _numpy_of
        return _numpy_of(generator, op)
    gen = _rng[0]
    if gen is None:
        gen = _rng[0] = np.random.default_rng()
    return gen


def initial_seed():
    """The seed last given to ``manual_seed`` (None when never seeded)."""
    return _rng[1]


def _finish(arr, requires_grad, op):
    t = Tensor._wrap(arr)
    if STATE.fw_level is INFERENCE:
        t._version = None           # made in inference mode: an inference tensor
    if requires_grad:
        if arr.dtype.kind != "f":
            raise RuntimeError(f"{op}(): only Tensors of floating point dtype can require "
                               f"gradients, got {t.dtype}")
        t._requires_grad = True
    return t


_MAX_DIMS = 64         # numpy's (and PyTorch's) limit on the number of dims


def _infer_dtype(data, op):
    """The dtype ``tensor(data)`` takes: the promotion (``promote_types``) of every
    leaf's dtype, as PyTorch infers it -- Python floats count as the default float
    dtype, ints as int64, bools as bool; Tensors, numpy scalars and ndarrays as
    their own dtype (numpy dtypes tensorplay lacks as int64 or the default float).
    An empty list gives the default float dtype."""
    d = None
    stack = [(data, 0)]
    while stack:
        x, depth = stack.pop()
        if isinstance(x, Tensor):
            leaf = x.dtype
        elif isinstance(x, (list, tuple)):
            if depth >= _MAX_DIMS:      # also what a list that contains itself hits
                raise ValueError(f"{op}(): too many dimensions: the data is nested more "
                                 f"than {_MAX_DIMS} levels deep (or contains itself)")
            stack.extend((y, depth + 1) for y in x)
            continue
        elif isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind in "biuf":
            leaf = _dtype._FROM_NUMPY.get(x.dtype) or (
                _dtype.get_default_dtype() if x.dtype.kind == "f" else _dtype.int64)
        elif isinstance(x, builtins.bool):
            leaf = _dtype.bool
        elif isinstance(x, int):
            leaf = _dtype.int64
        elif isinstance(x, float):
            leaf = _dtype.get_default_dtype()
        else:
            if depth and (hasattr(x, "__dlpack__") or hasattr(x, "__array__")):
                raise TypeError(f"{op}(): a list holding {_qualname(x)} objects (another "
                                f"library's arrays) is not supported; pass the array itself "
                                f"(stack them first) or convert each with tensor()")
            raise TypeError(f"{op}(): could not infer dtype of {type(x).__name__}; expected "
                            f"numbers, Tensors, nested lists of them, an ndarray, or an "
                            f"object with __array__ or __dlpack__ (e.g. a torch tensor)")
        d = leaf if d is None else _dtype.promote_types(d, leaf)
    return _dtype.get_default_dtype() if d is None else d


def _unwrap_tensors(data, op="tensor", depth=0):
    """``data`` (a list or tuple) with every Tensor element replaced by its values:
    a one-element Tensor by its Python number, whatever its dims (as PyTorch treats
    it, so ``[ones(1), 2.0]`` has shape (2,)); a larger Tensor by its ndarray, so
    that same-shaped Tensors stack (PyTorch refuses them).  Values only: no history
    and no tangent, so a Tensor that requires grad is fine (PyTorch warns)."""
    if depth >= _MAX_DIMS:
        raise ValueError(f"{op}(): too many dimensions: the data is nested more than "
                         f"{_MAX_DIMS} levels deep (or contains itself)")
    out = []
    for x in data:
        if isinstance(x, Tensor):
            arr = x._data
            out.append(arr.reshape(()).item() if arr.size == 1 else arr)
        elif isinstance(x, (list, tuple)):
            out.append(_unwrap_tensors(x, op, depth + 1))
        else:
            out.append(x)
    return out


def _has_tensor(data, op="tensor", depth=0):
    if depth >= _MAX_DIMS:
        raise ValueError(f"{op}(): too many dimensions: the data is nested more than "
                         f"{_MAX_DIMS} levels deep (or contains itself)")
    for x in data:
        if isinstance(x, Tensor) or (isinstance(x, (list, tuple))
                                     and _has_tensor(x, op, depth + 1)):
            return True
    return False


def _qualname(x):
    """``torch.Tensor`` rather than ``Tensor`` for another library's type."""
    t = type(x)
    mod = t.__module__.split(".")[0]
    return t.__name__ if mod == "builtins" else f"{mod}.{t.__name__}"


_PLAIN = frozenset((list, tuple, float, int, builtins.bool))   # the hot path skips the probe


def _foreign_array(data, op, copy):
    """``data`` as an ndarray when it is another library's array: an object with
    ``__dlpack__`` (read with ``np.from_dlpack``, sharing memory on the CPU) or
    ``__array__`` (``np.asarray``); None otherwise.  A torch tensor that requires
    grad is read through ``detach()`` (only values are taken, as for tensorplay
    Tensors).  numpy scalars, ndarray subclasses and Python numbers are not
    foreign."""
    if isinstance(data, (np.generic, np.ndarray)) or not (
            hasattr(data, "__dlpack__") or hasattr(data, "__array__")):
        return None
    src = data
    if getattr(src, "requires_grad", False) and callable(getattr(src, "detach", None)):
        src = src.detach()
    if hasattr(src, "__dlpack__"):
        try:
            return np.from_dlpack(src)
        except (BufferError, RuntimeError, TypeError, ValueError) as e:
            if not hasattr(src, "__array__"):
                raise TypeError(f"{op}(): could not read {_qualname(data)} through "
                                f"DLPack: {e}") from None
    try:
        arr = np.asarray(src)
    except Exception as e:      # the object's own __array__ failed
        raise TypeError(f"{op}(): could not read {_qualname(data)} through "
                        f"__array__: {e}") from None
    if not isinstance(arr, np.ndarray) or arr.dtype == object:
        raise TypeError(f"{op}(): {_qualname(data)}.__array__ did not give a numeric "
                        f"ndarray (got {type(arr).__name__} of dtype {arr.dtype})")
    return arr


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
    elif type(data) not in _PLAIN and (arr := _foreign_array(data, op, copy)) is not None:
        # another library's array (a torch tensor, a CuPy/JAX CPU array, ...): its
        # values through DLPack or __array__, then as an ndarray
        return _to_array(arr, dtype, op, copy)
    else:
        if dtype is not None:
            d = _dtype.as_dtype(dtype, op)
        elif isinstance(data, np.generic):      # a numpy scalar keeps its dtype
            d = _dtype.from_numpy_dtype(data.dtype, op)
        else:
            d = _infer_dtype(data, op)
        if isinstance(data, (list, tuple)) and _has_tensor(data, op):
            data = _unwrap_tensors(data, op)
        return _from_python(data, d, op)
    if arr.dtype != d.numpy:
        # a cast copies; into an integer dtype it refuses nan, inf and values that
        # would wrap (numpy writes undefined values there), floats truncate
        return _checked_cast(arr, d.numpy, op)
    return np.array(arr, copy=True) if copy else arr


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
                if arr.size and not (info.min <= math.trunc(float(arr.min()))       # exact
                                     and math.trunc(float(arr.max())) <= info.max):
                    raise RuntimeError(f"{op}(): a value in the data cannot be converted to "
                                       f"type {d} without overflow")
                return np.trunc(arr).astype(d.numpy)
        with np.errstate(over="ignore"):
            return np.array(data, dtype=d.numpy)
    except OverflowError:
        raise RuntimeError(f"{op}(): a value in the data does not fit in {d}") from None
    except (ValueError, TypeError) as e:
        raise ValueError(f"{op}(): could not build a tensor from the data: {e}") from None


def tensor(data, *, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of ``data``.

    Args:
        data: a number, a (nested) list/tuple of numbers and Tensors, an ndarray,
            a Tensor, or another library's array -- any object with ``__dlpack__``
            or ``__array__``, e.g. a torch tensor, copied in with its dtype (a
            dtype tensorplay lacks, such as float16, raises TypeError).  In a list, a one-element Tensor counts as its number (any
            dims, as PyTorch) and larger same-shaped Tensors are stacked (PyTorch
            refuses them); only the values are taken, never the history.
        dtype (dtype, optional): default: inferred, as PyTorch does -- the
            promotion of the elements' dtypes, where Python floats count as the
            default float dtype (float32), ints as int64, bools as bool, and Tensors,
            numpy scalars and ndarrays as their own dtype.
        requires_grad (bool): make a leaf that requires grad (floating dtypes only).

    Python floats bound for an integer dtype are truncated toward zero (PyTorch).
    ndarrays are normalised by ``_dtype.check_ndarray`` (subclasses become plain
    arrays, another byte order is converted) and always copied into dense storage,
    so a self-overlapping array gives an ordinary writable tensor.

    Raises:
        TypeError: unsupported element types or dtypes (structured, object, string,
            datetime, complex arrays).  ValueError: ragged lists.
        RuntimeError: ``requires_grad=True`` with a non-floating dtype; Python values
            the dtype cannot hold (nan, inf or out of range for an integer dtype).
    """
    _device.check(device, "tensor")
    return _finish(_to_array(data, dtype, "tensor", copy=True), requires_grad, "tensor")


def as_tensor(data, dtype=None, device=None):
    """Like ``tensor`` but shares memory with an ndarray or Tensor when the dtype allows.

    ndarrays are normalised as ``from_numpy`` describes, except that a non-native
    byte order is converted (a copy) rather than refused.  Another library's CPU
    array with ``__dlpack__`` (a torch tensor) shares its memory when the dtype
    allows (``np.from_dlpack``); one with only ``__array__`` shares what
    ``np.asarray`` shares.

    Raises:
        TypeError: unsupported element types or dtypes.
    """
    _device.check(device, "as_tensor")
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
        hint = ""
        if hasattr(ndarray, "__dlpack__") or hasattr(ndarray, "__array__"):
            hint = (f"; for a {_qualname(ndarray)} (another library's array) use "
                    f"tensorplay.as_tensor(x) (shares memory through DLPack) or "
                    f"tensorplay.tensor(x) (a copy)")
        raise TypeError(f"from_numpy(): expected an np.ndarray, got "
                        f"{_qualname(ndarray)}{hint}")
    arr = _dtype.check_ndarray(ndarray, "from_numpy", share=True)
    _dtype.from_numpy_dtype(arr.dtype, "from_numpy")
    return _finish(arr, False, "from_numpy")


# ---------------------------------------------------------------- argument checks
# Every creation function validates its arguments for the requested dtype before
# allocating anything, and raises what PyTorch raises: TypeError for an argument of
# the wrong type, RuntimeError for a value the dtype cannot hold or a size that
# overflows, NotImplementedError where PyTorch has no kernel (arange/linspace of
# bool), OverflowError for a Python int beyond 64 bits.
_MAX_BYTES = 2 ** 63 - 1


def _int_arg(v, op, arg):
    """``v`` as a Python int: ints, numpy integers and integer 0-d Tensors; not bools,
    not floats (PyTorch: "argument 'n' must be int, not bool")."""
    if isinstance(v, (builtins.bool, np.bool_)) or \
            (isinstance(v, Tensor) and v._data.dtype.kind == "b"):
        raise TypeError(f"{op}(): argument '{arg}' must be int, not bool")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{op}(): argument '{arg}' must be int, not "
                        f"{type(v).__name__}") from None


def _size(size, op):
    """A shape from ``f(2, 3)`` or ``f((2, 3))`` arguments: a tuple of ints >= 0.

    Raises:
        TypeError: an entry that is not an int (bools and floats included).
        RuntimeError: a negative entry.
    """
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    out = []
    for i, s in enumerate(size):
        if isinstance(s, (builtins.bool, np.bool_)) or not _is_index(s):
            raise TypeError(f"{op}(): argument 'size' must be a tuple of ints, but found "
                            f"element of type {type(s).__name__} at pos {i}")
        out.append(operator.index(s))
    if any(s < 0 for s in out):
        raise RuntimeError(f"{op}(): trying to create tensor with negative dimension: "
                           f"{out}")
    return tuple(out)


def _is_index(v):
    try:
        operator.index(v)
    except TypeError:
        return False
    return True


def _alloc(make, size, d, op):
    """``make(size, numpy dtype)``, refusing sizes whose byte count overflows and
    turning numpy's MemoryError into PyTorch's RuntimeError."""
    n = math.prod(size)
    if n * d.itemsize > _MAX_BYTES:
        raise RuntimeError(f"{op}(): storage size calculation overflowed with sizes="
                           f"{list(size)} ({n} elements of {d})")
    try:
        return make(size, d.numpy)
    except MemoryError:
        raise RuntimeError(f"{op}(): can't allocate memory: you tried to allocate "
                           f"{n * d.itemsize} bytes (sizes={list(size)}, {d})") from None


def _number(v, op, arg):
    """A real-number argument as a Python bool, int or float.

    Accepts Python and numpy numbers and one-element 0-d Tensors (PyTorch takes
    0-d tensors where it takes numbers).

    Raises:
        TypeError: None, strings, complex numbers, sequences, multi-element tensors.
        OverflowError: a Python int outside 64 bits (PyTorch's scalars are 64-bit).
    """
    if isinstance(v, Tensor):
        if v._data.ndim != 0:
            raise TypeError(f"{op}(): argument '{arg}' must be a number or a 0-d tensor, "
                            f"got a tensor of shape {list(v._data.shape)}")
        v = v._data.item()
    elif isinstance(v, np.generic) and v.dtype.kind in "biuf":
        v = v.item()
    if not isinstance(v, (builtins.bool, int, float)):
        raise TypeError(f"{op}(): argument '{arg}' must be a real number, not "
                        f"{type(v).__name__}")
    if isinstance(v, int) and not -2 ** 63 <= v < 2 ** 64:
        raise OverflowError(f"{op}(): argument '{arg}' = {v} is too big to convert (Python "
                            f"ints must fit in 64 bits, as in PyTorch)")
    return v


def _overflow(op, value, d):
    return RuntimeError(f"{op}(): value {value} cannot be converted to type {d} without "
                        f"overflow")


def _check_fits(value, d, op):
    """Raise unless the real number ``value`` converts to ``d`` without overflow: for
    integer dtypes finite and within range after truncation toward zero, for float
    dtypes no finite value beyond the largest (inf and nan pass), bool takes all."""
    kind = d.numpy.kind
    if kind in "iu":
        if isinstance(value, float):
            if not math.isfinite(value):
                raise _overflow(op, value, d)
            value = math.trunc(value)
        info = np.iinfo(d.numpy)
        if not info.min <= value <= info.max:
            raise _overflow(op, value, d)
    elif kind == "f" and math.isfinite(value) and abs(value) > float(np.finfo(d.numpy).max):
        raise _overflow(op, value, d)


def _float_dtype(dtype, op):
    return _dtype.get_default_dtype() if dtype is None else _dtype.as_dtype(dtype, op)


def _no_bool(d, op):
    if d is _dtype.bool:
        raise NotImplementedError(f"{op}(): not implemented for dtype tensorplay.bool (as in "
                                  f"PyTorch); compare an integer range instead, e.g. "
                                  f"arange(n) > k")


# ---------------------------------------------------------------- filled
def zeros(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of zeros of shape ``size`` (ints or one tuple); default float dtype.

    Raises:
        TypeError: a size entry that is not an int.  RuntimeError: a negative size,
            or one whose storage would overflow or cannot be allocated.
    """
    _device.check(device, "zeros")
    d = _float_dtype(dtype, "zeros")
    return _finish(_alloc(np.zeros, _size(size, "zeros"), d, "zeros"), requires_grad, "zeros")


def ones(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of ones of shape ``size``; default float dtype.  Errors as ``zeros``."""
    _device.check(device, "ones")
    d = _float_dtype(dtype, "ones")
    return _finish(_alloc(np.ones, _size(size, "ones"), d, "ones"), requires_grad, "ones")


def empty(*size, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor of shape ``size`` (contents are arbitrary).  Errors as
    ``zeros``."""
    _device.check(device, "empty")
    d = _float_dtype(dtype, "empty")
    return _finish(_alloc(np.empty, _size(size, "empty"), d, "empty"), requires_grad, "empty")


def _filled(size, value, d, op):
    """An array of ``size`` and dtype ``d`` holding the checked number ``value``."""
    fill = _checked_scalar(value, d.numpy, op)
    arr = _alloc(np.empty, size, d, op)
    arr[...] = fill
    return arr


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """A tensor of shape ``size`` filled with ``fill_value``.

    The dtype is inferred from the value (bool, int64 or the default float) unless
    given.  ``fill_value`` may be a Python or numpy number or a 0-d tensor.  For an
    integer dtype a float value is truncated toward zero (PyTorch); bool takes any
    number (nonzero, nan included, is True).

    Raises:
        TypeError: a value that is not a real number (None, str, complex, a list or a
            tensor with dims), or a size entry that is not an int.
        RuntimeError: a value the dtype cannot hold (nan or inf for integers, out of
            range, beyond float32's largest), or a negative or overflowing size.
        OverflowError: a Python int outside 64 bits.
    """
    _device.check(device, "full")
    value = _number(fill_value, "full", "fill_value")
    if dtype is None:
        d = _dtype.scalar_dtype(value)
    else:
        d = _dtype.as_dtype(dtype, "full")
    size = _size(tuple(size) if isinstance(size, (tuple, list)) else (size,), "full")
    return _finish(_filled(size, value, d, "full"), requires_grad, "full")


# ---------------------------------------------------------------- ranges
class _Missing:
    """The default of an argument whose omission changes the meaning of the others
    (``arange(5)``, ``randint(5, (2,))``): unlike None, which is refused as a value."""
    __slots__ = ()

    def __repr__(self):
        return "<omitted>"


_MISSING = _Missing()


def arange(start, end=_MISSING, step=1, *, dtype=None, device=None, requires_grad=False):
    """Values from ``start`` (default 0) up to but excluding ``end`` by ``step``.

    int64 when all of start/end/step are ints (or bools), else the default float
    dtype.  For an integer dtype, ``start``, ``end`` and ``step`` are first
    truncated toward zero and the result is the integer range over them -- PyTorch's
    rule for int64 (``arange(-3.5, 3.5, dtype=int64)`` is ``[-3, ..., 2]``), used
    here for int32 as well, where PyTorch counts the length from the untruncated
    bounds.  Float ranges have ``ceil((end - start) / step)`` elements
    ``start + i * step``, computed in float64.

    Raises:
        TypeError: a bound or step that is not a real number (None included).
        RuntimeError: a non-finite bound, ``step == 0``, a step whose sign cannot
            reach ``end``, too many elements, or values the dtype cannot hold
            (PyTorch wraps int32 silently; tensorplay raises).
        ValueError: an integer dtype with a step that truncates to 0 (PyTorch's type).
        NotImplementedError: ``dtype=bool`` (as PyTorch).
    """
    _device.check(device, "arange")
    if end is _MISSING:
        start, end = 0, start
    start, end, step = (_number(v, "arange", name)
                        for name, v in (("start", start), ("end", end), ("step", step)))
    if not (math.isfinite(start) and math.isfinite(end) and math.isfinite(step)):
        raise RuntimeError(f"arange(): unsupported range: {start} -> {end} (step {step}); "
                           f"the bounds and step must be finite")
    if step == 0:
        raise RuntimeError("arange(): step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange(): upper bound and lower bound inconsistent with step "
                           f"sign (start={start}, end={end}, step={step})")
    if dtype is None:
        all_int = all(isinstance(v, int) for v in (start, end, step))
        d = _dtype.int64 if all_int else _dtype.get_default_dtype()
    else:
        d = _dtype.as_dtype(dtype, "arange")
    _no_bool(d, "arange")
    if d.is_floating_point:
        n = math.ceil((float(end) - float(start)) / float(step))
        _check_count(n, d, "arange", f"start={start}, end={end}, step={step}")
        arr = _alloc(lambda s, t: np.arange(s[0], dtype=t), (n,), _dtype.float64, "arange")
        arr *= float(step)
        arr += float(start)
        with np.errstate(over="ignore"):    # beyond float32's range: inf, as a cast gives
            return _finish(arr.astype(d.numpy, copy=False), requires_grad, "arange")
    lo, hi, st = (math.trunc(v) for v in (start, end, step))
    if st == 0:
        raise ValueError(f"arange(): step must be nonzero; step {step} truncates to 0 for "
                         f"integer dtype {d}")
    for v in (lo, hi, st):
        _check_fits(v, _dtype.int64, "arange")
    n = max(0, -((lo - hi) // st))          # ceil((hi - lo) / st), exactly
    _check_count(n, d, "arange", f"start={start}, end={end}, step={step}")
    if n:
        _check_fits(lo, d, "arange")
        _check_fits(lo + (n - 1) * st, d, "arange")
    arr = _alloc(lambda s, t: np.arange(s[0], dtype=t), (n,), _dtype.int64, "arange")
    arr *= st                               # exact: every value fits (checked above)
    arr += lo
    return _finish(arr.astype(d.numpy, copy=False), requires_grad, "arange")


def _check_count(n, d, op, what):
    if n * d.itemsize > _MAX_BYTES:
        raise RuntimeError(f"{op}(): invalid size, possible overflow: {n} elements of {d} "
                           f"({what})")


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive.

    Computed in float64 (numpy's ``linspace``) and cast; for an integer dtype the
    values are truncated toward zero, as PyTorch's are.  Non-finite bounds give
    nan/inf for float dtypes.

    Raises:
        TypeError: ``steps`` not an int (bools and floats included), or a bound that
            is not a real number.
        RuntimeError: negative ``steps``; a bound the dtype cannot hold (nan, inf or
            out of range for integers, beyond float32's largest for float32).
        NotImplementedError: ``dtype=bool`` (as PyTorch).
    """
    _device.check(device, "linspace")
    steps = _int_arg(steps, "linspace", "steps")
    start = _number(start, "linspace", "start")
    end = _number(end, "linspace", "end")
    if steps < 0:
        raise RuntimeError(f"linspace(): number of steps must be non-negative, got {steps}")
    d = _float_dtype(dtype, "linspace")
    _no_bool(d, "linspace")
    _check_fits(start, d, "linspace")
    _check_fits(end, d, "linspace")
    _check_count(steps, d, "linspace", f"steps={steps}")
    with np.errstate(invalid="ignore", over="ignore"):
        arr = np.linspace(float(start), float(end), steps, dtype=np.float64)
        if not d.is_floating_point:
            arr = np.trunc(arr)
        return _finish(arr.astype(d.numpy), requires_grad, "linspace")


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    """An (n, m) matrix (m defaults to n) with ones on the diagonal (any dtype).

    Raises:
        TypeError: ``n`` or ``m`` not an int.  RuntimeError: negative, or too large.
    """
    _device.check(device, "eye")
    n = _int_arg(n, "eye", "n")
    m = n if m is None else _int_arg(m, "eye", "m")
    if n < 0 or m < 0:
        raise RuntimeError(f"eye(): n and m must be non-negative, got n={n}, m={m}")
    d = _float_dtype(dtype, "eye")
    arr = _alloc(np.zeros, (n, m), d, "eye")
    np.fill_diagonal(arr, 1)
    return _finish(arr, requires_grad, "eye")


# ---------------------------------------------------------------- random
def _random_dtype(dtype, op):
    d = _float_dtype(dtype, op)
    if not d.is_floating_point:             # PyTorch: no kernel for integer dtypes
        raise NotImplementedError(f"{op}(): not implemented for dtype {d}; expected a "
                                  f"floating dtype (float32 or float64)")
    return d


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform samples on [0, 1) of shape ``size``; float32 or float64.  Drawn from
    ``generator`` (a ``tensorplay.Generator``) if given, else the default generator.

    Raises:
        NotImplementedError: a non-floating dtype (as PyTorch).
        TypeError: a size entry that is not an int.
        RuntimeError: a negative or overflowing size.
    """
    _device.check(device, "rand")
    d = _random_dtype(dtype, "rand")
    gen = _generator(generator, "rand")
    arr = _alloc(lambda s, t: gen.random(s, dtype=t), _size(size, "rand"), d, "rand")
    return _finish(arr, requires_grad, "rand")


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Standard normal samples of shape ``size``; float32 or float64.  ``generator``
    and errors as ``rand``."""
    _device.check(device, "randn")
    d = _random_dtype(dtype, "randn")
    gen = _generator(generator, "randn")
    arr = _alloc(lambda s, t: gen.standard_normal(s, dtype=t), _size(size, "randn"), d,
                 "randn")
    return _finish(arr, requires_grad, "randn")


def randint(low=0, high=_MISSING, size=_MISSING, *, generator=None, dtype=None,
            device=None):
    """Integers uniform on [low, high) of shape ``size``: ``randint(high, size)`` or
    ``randint(low, high, size)`` (PyTorch's signatures); int64 by default.

    ``low`` and ``high - 1`` must be values of ``dtype`` (0 and 1 for bool), as
    PyTorch checks.  Float dtypes take the integers as floats.  ``generator``: a
    ``tensorplay.Generator`` to draw from (default: the default generator).

    Raises:
        TypeError: missing ``size``; a bound that is not an int (None, bools,
            floats) or a size that is not a tuple of ints (None included).
        RuntimeError: ``low >= high``, a bound out of the dtype's range, or a bad size.
    """
    _device.check(device, "randint")
    if size is _MISSING:
        if high is _MISSING:
            raise TypeError("randint(): missing the required argument 'size'")
        low, high, size = 0, low, high
    elif high is _MISSING:
        low, high = 0, low
    low = _int_arg(low, "randint", "low")
    high = _int_arg(high, "randint", "high")
    if low >= high:
        raise RuntimeError(f"randint(): random_ expects 'from' to be less than 'to', but "
                           f"got from={low} >= to={high}")
    d = _dtype.int64 if dtype is None else _dtype.as_dtype(dtype, "randint")
    if not d.is_floating_point:
        info = (0, 1) if d is _dtype.bool else (np.iinfo(d.numpy).min, np.iinfo(d.numpy).max)
        if not info[0] <= low <= info[1]:
            raise RuntimeError(f"randint(): from={low} is out of bounds for {d} (values "
                               f"{info[0]} to {info[1]})")
        if not info[0] <= high - 1 <= info[1]:
            raise RuntimeError(f"randint(): to - 1 = {high - 1} is out of bounds for {d} "
                               f"(values {info[0]} to {info[1]})")
    elif not (-2 ** 63 <= low and high - 1 < 2 ** 63):
        raise RuntimeError(f"randint(): bounds [{low}, {high}) do not fit in int64")
    size = _size(tuple(size) if isinstance(size, (tuple, list)) else (size,), "randint")
    gen = _generator(generator, "randint")
    arr = _alloc(lambda s, t: gen.integers(low, high, s), size, _dtype.int64, "randint")
    return _finish(arr.astype(d.numpy, copy=False), False, "randint")


# ---------------------------------------------------------------- *_like
def _like(input, dtype, op):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    return input._data.shape, (input.dtype if dtype is None else _dtype.as_dtype(dtype, op))


def zeros_like(input, *, dtype=None, device=None, requires_grad=False):
    """Zeros with the shape (and, by default, the dtype) of ``input``."""
    _device.check(device, "zeros_like")
    shape, d = _like(input, dtype, "zeros_like")
    return _finish(np.zeros(shape, d.numpy), requires_grad, "zeros_like")


def ones_like(input, *, dtype=None, device=None, requires_grad=False):
    """Ones with the shape and dtype of ``input``."""
    _device.check(device, "ones_like")
    shape, d = _like(input, dtype, "ones_like")
    return _finish(np.ones(shape, d.numpy), requires_grad, "ones_like")


def empty_like(input, *, dtype=None, device=None, requires_grad=False):
    """Uninitialised, with the shape and dtype of ``input``."""
    _device.check(device, "empty_like")
    shape, d = _like(input, dtype, "empty_like")
    return _finish(np.empty(shape, d.numpy), requires_grad, "empty_like")


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False):
    """``fill_value`` everywhere, with the shape and dtype of ``input``; the value is
    checked for that dtype as ``full`` checks it (same errors)."""
    _device.check(device, "full_like")
    shape, d = _like(input, dtype, "full_like")
    value = _number(fill_value, "full_like", "fill_value")
    return _finish(_filled(shape, value, d, "full_like"), requires_grad, "full_like")


def rand_like(input, *, dtype=None, device=None, requires_grad=False):
    """Uniform [0, 1) samples shaped like ``input``."""
    _device.check(device, "rand_like")
    shape, d = _like(input, dtype, "rand_like")
    return rand(shape, dtype=d, requires_grad=requires_grad)


def randn_like(input, *, dtype=None, device=None, requires_grad=False):
    """Standard normal samples shaped like ``input``."""
    _device.check(device, "randn_like")
    shape, d = _like(input, dtype, "randn_like")
    return randn(shape, dtype=d, requires_grad=requires_grad)


def randint_like(input, low=0, high=_MISSING, *, dtype=None, device=None):
    """Integers on [low, high) shaped like ``input`` (``randint_like(x, high)`` too);
    the bounds are checked for the dtype as ``randint`` checks them.

    Raises:
        TypeError: a bound that is not an int (None included).
    """
    _device.check(device, "randint_like")
    shape, d = _like(input, dtype, "randint_like")
    if high is _MISSING:
        low, high = 0, low
    low = _int_arg(low, "randint_like", "low")
    high = _int_arg(high, "randint_like", "high")
    return randint(low, high, shape, dtype=d)
