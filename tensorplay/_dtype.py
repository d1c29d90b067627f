"""dtypes and PyTorch's type-promotion rules.

tensorplay has five dtypes: ``float32``, ``float64`` (differentiable), ``int64``,
``int32`` and ``bool`` (indices, masks, comparison results; never require grad).

Promotion follows PyTorch (``torch.result_type``): operands fall into three
priority groups -- tensors with at least one dimension, zero-dimensional tensors,
and Python scalars -- and into three categories, bool < integer < floating.  The
result takes the highest category present; among the operands of that category, the
highest-priority group decides the dtype.  Hence a Python float does not upcast a
float32 tensor, ``int64 tensor * 2.5`` gives the default float dtype, and a float64
0-d tensor does not upcast a float32 1-d tensor.
"""
import builtins as _builtins
import warnings as _warnings

import numpy as np

__all__ = ["dtype", "float32", "float64", "int64", "int32", "bool",
           "get_default_dtype", "set_default_dtype", "result_type", "promote_types"]


class dtype:
    """A tensorplay data type (``tensorplay.float32`` etc.).

    Attributes: ``name`` (str), ``is_floating_point`` (bool), ``itemsize`` (bytes),
    and ``numpy`` (the numpy dtype of the storage).
    """
    __slots__ = ("name", "numpy", "is_floating_point", "itemsize", "_category", "_rank")

    def __init__(self, name, np_dtype, category, rank):
        self.name = name
        self.numpy = np.dtype(np_dtype)
        self.is_floating_point = category == 2
        self.itemsize = self.numpy.itemsize
        self._category = category   # 0 bool, 1 integer, 2 floating
        self._rank = rank           # order within a category

    def __repr__(self):
        return "tensorplay." + self.name

    def __reduce__(self):
        return self.name


float32 = dtype("float32", np.float32, 2, 0)
float64 = dtype("float64", np.float64, 2, 1)
int32 = dtype("int32", np.int32, 1, 0)
int64 = dtype("int64", np.int64, 1, 1)
bool = dtype("bool", np.bool_, 0, 0)  # noqa: A001 -- PyTorch's name

_ALL = (float32, float64, int32, int64, bool)
_FROM_NUMPY = {d.numpy: d for d in _ALL}
_default = [float32]


def get_default_dtype():
    """Return the dtype of floating tensors made without an explicit dtype (float32)."""
    return _default[0]


def set_default_dtype(d):
    """Set the default floating dtype (``tensorplay.float32`` or ``tensorplay.float64``).

    Raises:
        TypeError: when ``d`` is not a floating tensorplay dtype.
    """
    d = as_dtype(d, "set_default_dtype")
    if not d.is_floating_point:
        raise TypeError(f"set_default_dtype(): only floating dtypes are supported, got {d}")
    _default[0] = d


def from_numpy_dtype(np_dtype, op="tensor"):
    """Map a numpy dtype to a tensorplay dtype, or raise TypeError naming ``op``."""
    try:
        return _FROM_NUMPY[np.dtype(np_dtype)]
    except KeyError:
        raise TypeError(f"{op}(): numpy dtype {np.dtype(np_dtype)} is not supported; "
                        f"expected one of float32, float64, int64, int32, bool") from None


_BY_NAME = {"float32": float32, "float64": float64, "int32": int32, "int64": int64,
            "bool": bool, "float": float32, "double": float64, "int": int32, "long": int64}


def as_dtype(d, op="to"):
    """A tensorplay dtype from a tensorplay dtype, a name (``"float32"``, or PyTorch's
    aliases ``"float"``, ``"double"``, ``"long"``, ``"int"``) or a numpy dtype/type.

    Raises:
        TypeError: anything else (None, an unknown name, a Tensor, a number), or an
            unsupported numpy dtype; the message names ``op``.
    """
    if isinstance(d, dtype):
        return d
    if isinstance(d, str) and d in _BY_NAME:
        return _BY_NAME[d]
    if d is None or isinstance(d, (_builtins.bool, int, float)) or \
            type(d).__name__ == "Tensor":
        # np.dtype(None) would silently mean float64; np.dtype(tensor) reads its
        # .dtype and fails with a ValueError that prints the whole tensor
        raise _not_a_dtype(op, d)
    try:
        if isinstance(d, str):
            with _warnings.catch_warnings():    # np.dtype('a') warns (a deprecated alias)
                _warnings.simplefilter("ignore", DeprecationWarning)
                np_d = np.dtype(d)
        else:
            np_d = np.dtype(d)
    except (TypeError, ValueError):
        raise _not_a_dtype(op, d) from None
    if isinstance(d, str) and np_d not in _FROM_NUMPY:    # 'a' is numpy's bytes dtype |S0
        raise _not_a_dtype(op, d)
    return from_numpy_dtype(np_d, op)


def _not_a_dtype(op, d):
    what = "a Tensor (pass tensor.dtype)" if type(d).__name__ == "Tensor" else repr(d)
    return TypeError(f"{op}(): expected a dtype such as tensorplay.float32 or one of the "
                     f"names {', '.join(map(repr, _BY_NAME))}, got {what}")


def promote_types(a, b):
    """The smallest dtype that holds both ``a`` and ``b`` (``torch.promote_types``)."""
    if a is b:
        return a
    if a._category != b._category:
        return a if a._category > b._category else b
    return a if a._rank >= b._rank else b


def scalar_dtype(x):
    """The dtype a Python scalar takes on its own: bool, int64 or the default float."""
    if isinstance(x, (_builtins.bool, np.bool_)):
        return bool
    if isinstance(x, (int, np.integer)):
        return int64
    return _default[0]



def result_type(*operands):
    """Dtype of an elementwise op over Tensors and Python scalars, by PyTorch's rules."""
    # groups: 0 = dimensioned tensor, 1 = zero-dim tensor, 2 = Python scalar
    best_cat = -1
    found = [None, None, None]
    for x in operands:
        d = getattr(x, "dtype", None)
        if isinstance(d, dtype):
            group = 0 if x.ndim > 0 else 1
        else:
            d = scalar_dtype(x)
            group = 2
        cat = d._category
        if cat > best_cat:
            best_cat = cat
            found = [None, None, None]
        if cat == best_cat:
            found[group] = d if found[group] is None else promote_types(found[group], d)
    for d in found:
        if d is not None:
            return d
    raise TypeError("result_type() needs at least one operand")


# ---------------------------------------------------------------- ndarrays at the boundary
_KIND_NAMES = {"V": "structured (void)", "O": "object", "U": "string", "S": "bytes",
               "M": "datetime", "m": "timedelta", "c": "complex", "T": "string"}


def check_ndarray(arr, op, *, share):
    """The ndarray tensorplay stores (or reads) for a user's ndarray ``arr``.

    Inputs from numpy are normalised here, once, for ``tensor``, ``as_tensor``,
    ``from_numpy``, ops given ndarray operands and ``__setitem__``/``copy_`` values:

    * a subclass (``np.matrix``, ``np.memmap``, ...) becomes a plain ndarray view
      of the same memory: tensorplay's shape ops assume ndarray semantics
      (``np.matrix`` stays 2-D under indexing).  A masked array with a masked
      element is refused (its mask would be lost); fill it first.
    * only numbers are accepted: bool, integer and floating kinds.  Structured,
      object, string, datetime, timedelta and complex dtypes raise TypeError naming
      the dtype (PyTorch raises TypeError for all but complex, which it supports
      and tensorplay, having no complex dtype, refuses).  Mapping the kind to a
      tensorplay dtype is the caller's job (``from_numpy_dtype``).
    * a non-native byte order is converted to native (a copy) when ``share`` is
      False; with ``share`` True (``from_numpy``, which promises shared memory) it
      raises ValueError, as ``torch.from_numpy`` does.
    * with ``share`` True the result is always a new view object, so changing the
      caller's array's ``shape`` or ``strides`` later does not reshape the tensor.
      A writable array whose elements may overlap in memory (a zero or small
      stride, e.g. ``np.lib.stride_tricks.as_strided(a, (3, 3), (8, 0))``) becomes
      a read-only view: in-place writes to the tensor raise (clone() first)
      instead of silently losing all but one of the writes that land on the same
      memory.  Reads, and writes made through the caller's array, are shared.

    Raises:
        TypeError: a dtype that is not a number, or a masked array with masked values.
        ValueError: a non-native byte order when ``share`` is True.
    """
    kind = arr.dtype.kind
    if kind not in "biuf":
        what = _KIND_NAMES.get(kind, "non-numeric")
        raise TypeError(f"{op}(): can't convert an np.ndarray of {what} dtype {arr.dtype}; "
                        f"expected bool, integer or floating point numbers")
    if type(arr) is not np.ndarray:
        if isinstance(arr, np.ma.MaskedArray) and np.ma.getmaskarray(arr).any():
            raise TypeError(f"{op}(): the masked array has masked elements, and a tensor "
                            f"has no mask; use arr.filled(value) first")
        arr = arr.view(np.ndarray)
    elif share:
        arr = arr.view()
    if not arr.dtype.isnative:
        if share:
            raise ValueError(f"{op}(): the array's byte order ({arr.dtype.str}) differs from "
                             f"the native byte order; memory can't be shared, use "
                             f"arr.astype(arr.dtype.newbyteorder('=')) or tensor() to copy")
        arr = arr.astype(arr.dtype.newbyteorder("="))
    if share and arr.flags.writeable and _may_self_overlap(arr):
        arr.flags.writeable = False          # the view's flag only; the caller's stays
    return arr


def _may_self_overlap(arr):
    """True unless the strides prove that no two elements share memory.

    A sufficient test, exact for the layouts that slicing, transposing and
    broadcasting make: with the dims of size > 1 sorted by |stride|, each stride
    must clear the span of the dims inside it.  (Deciding overlap exactly for arbitrary strides is a
    knapsack problem; a false "may overlap" only makes the tensor read-only.)
    """
    if arr.size <= 1 or arr.flags.c_contiguous or arr.flags.f_contiguous:
        return False
    span = arr.itemsize
    for stride, n in sorted((abs(s), n) for s, n in zip(arr.strides, arr.shape) if n > 1):
        if stride < span:
            return True
        span += stride * (n - 1)
    return False
