"""Argument checks shared by the layers and losses of issue 9's second step
(``norm_more``, ``nn_more``, ``pool_more``, ``loss_more``, ``embedding_bag``).

These ops are compositions of registered primitives, so they have no
``Signature`` of their own (a declared Signature asks for an op-table row, and
the primitives they run are in the table already); the few checks they need
are here, once, with PyTorch's exception types: a non-Tensor is a TypeError, an
integer operand of float math a RuntimeError (PyTorch's "not implemented for
'Long'"), a bad flag or number a TypeError or ValueError.
"""
import numbers

import numpy as np

from tensorplay._tensor import Tensor

_REDUCTIONS = ("none", "mean", "sum")


def tensor(op, name, t, kinds="f"):
    """``t`` itself when it is a Tensor whose dtype kind is in ``kinds`` ('f' float,
    'i' integer, 'b' bool); TypeError / RuntimeError otherwise."""
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    k = t._data.dtype.kind
    k = "i" if k == "u" else k
    if k not in kinds:
        want = {"f": "floating point", "i": "integer", "b": "bool"}
        raise RuntimeError(f"{op}(): expected '{name}' of {' or '.join(want[c] for c in kinds)}"
                           f" dtype, got {t.dtype}")
    return t


def same_float(op, first, *others):
    """Cast Tensors ``others`` to ``first``'s dtype (None entries pass through)."""
    dt = first._data.dtype
    return tuple(o if o is None or o._data.dtype == dt else o.to(first.dtype) for o in others)


def number(op, name, v, integral=False):
    """A Python float (or int when ``integral``) from a real number; TypeError else."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(
            v, numbers.Integral if integral else numbers.Real):
        kind = "int" if integral else "float"
        raise TypeError(f"{op}(): argument '{name}' must be {kind}, not {type(v).__name__}")
    return int(v) if integral else float(v)


def flag(op, name, v):
    if v is not True and v is not False and not isinstance(v, np.bool_):
        raise TypeError(f"{op}(): argument '{name}' must be bool, not {type(v).__name__}")
    return bool(v)


def reduction(op, reduction, size_average=None, reduce=None):
    """PyTorch's reduction string (the legacy ``size_average``/``reduce`` pair maps
    to it with PyTorch's warning); ValueError for an unknown one."""
    from tensorplay._ops.nn import reduction_arg
    return reduction_arg(op, reduction, size_average, reduce)


def reduce(loss, reduction):
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def values(t):
    """The numpy values of Tensor ``t``; under vmap those of the whole batch (the
    physical array), so a range check covers every example."""
    from tensorplay._ops._batching import BatchedArray
    data = t._data
    while type(data) is BatchedArray:
        data = data._bt_phys._data
    return np.asarray(data)
