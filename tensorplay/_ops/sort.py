"""Order statistics: ``sort``, ``argsort``, ``msort``, ``topk``, ``kthvalue``,
``median``, ``cummax``, ``cummin``, and ``unique`` (no gradient).

All are compositions (no primitive of their own): the indices come from numpy
(``np.argsort(kind="stable")``, a well-kept sort; or the running-extreme
recurrence of cummax in vectorised numpy) and never require grad; the values are
``gather(input, dim, indices)``, so their gradient is ``gather_backward`` (it goes
to the returned index; repeated indices accumulate) and their JVP gathers the
tangent -- both modes and every order come from that one primitive.

Conventions (PyTorch's, where PyTorch states one):
  * sorts are stable: equal values keep their input order, ascending and
    descending (``stable=`` is accepted; the sort is always stable);
  * nan sorts as the largest value (last ascending, first descending);
  * ``topk`` returns the first k of the stable descending (or ascending) sort;
  * ``kthvalue`` and ``median(dim)`` return the position in the stable sort, so
    among tied values the index may differ from PyTorch's (the value does not);
  * ``median`` is the lower median of an even count; a slice with nan has median
    nan (index of its first nan);
  * ``cummax``/``cummin`` index the last occurrence of the running extreme; from
    the first nan on the values are nan and the index is the latest nan, as PyTorch.
"""
import collections
import math

import numpy as np

from tensorplay._ops._common import normalize_dim, not_tensor_error
from tensorplay._ops import _batching as _B
from tensorplay._ops._validate import BoolArg, DimArg, IntArg, Signature, TensorArg, declare
from tensorplay._ops.gather import gather
from tensorplay._tensor import Tensor

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "cummax", "cummin",
           "unique"]
METHODS = list(__all__)

sort_result = collections.namedtuple("sort", ["values", "indices"])
topk_result = collections.namedtuple("topk", ["values", "indices"])
kthvalue_result = collections.namedtuple("kthvalue", ["values", "indices"])
median_result = collections.namedtuple("median", ["values", "indices"])
cummax_result = collections.namedtuple("cummax", ["values", "indices"])
cummin_result = collections.namedtuple("cummin", ["values", "indices"])

_check_sort = declare(Signature("sort", TensorArg("input"), DimArg("dim", default=-1),
                                BoolArg("descending", default=False)))
_check_argsort = declare(Signature("argsort", TensorArg("input"), DimArg("dim", default=-1),
                                   BoolArg("descending", default=False)))
_check_topk = declare(Signature("topk", TensorArg("input"), IntArg("k", lo=0),
                                DimArg("dim", default=-1), BoolArg("largest", default=True),
                                BoolArg("sorted", default=True)))
_check_kth = declare(Signature("kthvalue", TensorArg("input"), IntArg("k"),
                               DimArg("dim", default=-1), BoolArg("keepdim", default=False)))
# (the dim=None form checks its input alone)
_check_median = declare(Signature("median", TensorArg("input"), DimArg("dim"),
                                  BoolArg("keepdim", default=False)))
_check_cummax = declare(Signature("cummax", TensorArg("input"), DimArg("dim")))
_check_cummin = declare(Signature("cummin", TensorArg("input"), DimArg("dim")))


def _stable_order(a, dim, descending):
    """int64 indices sorting ``a`` along ``dim``, stable, nan largest."""
    if a.ndim == 0:
        return np.zeros((), np.int64)
    if not descending:
        return np.argsort(a, axis=dim, kind="stable").astype(np.int64, copy=False)
    # descending and stable: sort the reversed line ascending, then reverse back
    n = a.shape[dim]
    rev = np.flip(a, axis=dim)
    idx = np.flip(np.argsort(rev, axis=dim, kind="stable"), axis=dim)
    return (n - 1 - idx).astype(np.int64)


def _index_tensor(idx):
    return Tensor._wrap(idx if idx.flags.c_contiguous else idx.copy())


def _take(input, dim, idx):
    """Values of ``input`` at int64 ndarray ``idx`` along ``dim`` (differentiable)."""
    if input._data.ndim == 0:
        return gather(input, 0, _index_tensor(idx.reshape(())))
    return gather(input, dim, _index_tensor(idx))


@_B.loop_under_vmap
def sort(input, dim=-1, descending=False, *, stable=False):
    """Sorted values along ``dim`` and the int64 indices they came from, as the
    named tuple ``(values, indices)`` (``torch.return_types.sort``).

    Args:
        input (Tensor): any shape and dtype (0-d: itself, index 0).
        dim (int): default the last.
        descending (bool): largest first.
        stable (bool): accepted for PyTorch; the sort is always stable.

    Raises:
        TypeError: a non-Tensor input or non-int dim.  IndexError: dim out of range.
    """
    input, dim, descending = _check_sort(input, dim, descending)
    idx = _stable_order(input._data, dim, descending)
    return sort_result(_take(input, dim, idx), _index_tensor(idx))


@_B.loop_under_vmap
def argsort(input, dim=-1, descending=False, *, stable=False):
    """The int64 indices that sort ``input`` along ``dim`` (stable; see ``sort``)."""
    input, dim, descending = _check_argsort(input, dim, descending)
    return _index_tensor(_stable_order(input._data, dim, descending))


@_B.loop_under_vmap
def msort(input):
    """``sort(input, dim=0).values`` (``torch.msort``)."""
    return sort(input, 0).values


@_B.loop_under_vmap
def topk(input, k, dim=-1, largest=True, sorted=True):
    """The ``k`` largest (``largest=False``: smallest) entries along ``dim`` and their
    int64 indices, named tuple ``(values, indices)``; ties in input order.

    Raises:
        RuntimeError: ``k`` negative or larger than the size of ``dim``.
        TypeError, IndexError: as ``sort``.
    """
    input, k, dim, largest, sorted = _check_topk(input, k, dim, largest, sorted)
    a = input._data
    n = a.shape[dim] if a.ndim else 1
    if k > n:
        raise RuntimeError(f"topk(): selected index k = {k} out of range for dim {dim} "
                           f"of size {n}")
    idx = _stable_order(a, dim, largest)
    if a.ndim:
        idx = np.take(idx, np.arange(k), axis=dim)
    elif k == 0:
        idx = np.zeros((0,), np.int64)
        return topk_result(input.reshape(1)[:0], _index_tensor(idx))
    return topk_result(_take(input, dim, idx), _index_tensor(idx))


def _select(input, dim, idx, keepdim, result):
    """``result(values, indices)`` for one index per line (``idx`` keeps ``dim``)."""
    values = _take(input, dim, idx)
    indices = _index_tensor(idx)
    if not keepdim and input._data.ndim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return result(values, indices)


@_B.loop_under_vmap
def kthvalue(input, k, dim=-1, keepdim=False):
    """The ``k``-th smallest entry (1-based) along ``dim`` and its int64 index,
    named tuple ``(values, indices)``; the index is the entry's place in the stable
    sort (among tied values it may differ from PyTorch's).

    Raises:
        RuntimeError: ``k`` outside ``[1, size of dim]``.  TypeError, IndexError: as ``sort``.
    """
    input, k, dim, keepdim = _check_kth(input, k, dim, keepdim)
    a = input._data
    n = a.shape[dim] if a.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k = {k} out of range for dim "
                           f"{dim} of size {n}")
    idx = _stable_order(a, dim, False)
    if a.ndim:
        idx = np.take(idx, [k - 1], axis=dim)
    return _select(input, dim, idx, keepdim, kthvalue_result)


def _median_index(a, dim):
    """Index (keeping ``dim``) of the lower median of each line, or of its first nan."""
    n = a.shape[dim]
    idx = np.take(_stable_order(a, dim, False), [(n - 1) // 2], axis=dim)
    if a.dtype.kind == "f":
        nan = np.isnan(a)
        has = nan.any(axis=dim, keepdims=True)
        if has.any():
            first = np.argmax(nan, axis=dim, keepdims=True)
            idx = np.where(has, first, idx)
    return idx


@_B.loop_under_vmap
def median(input, dim=None, keepdim=False):
    """The lower median: of all elements (``dim=None``: a 0-d tensor whose gradient
    is split evenly among the entries equal to it, or among the nans when it is
    nan, as PyTorch's median()), or along ``dim`` as the named tuple
    ``(values, indices)`` (the gradient goes to the returned index).  nan in a
    slice makes its median nan; the median of an empty float tensor is nan.

    Raises:
        IndexError: dim out of range, ``dim`` of size 0, or ``dim=None`` of an
            empty integer input.
        TypeError: as ``sort``.
    """
    if dim is None:
        if not isinstance(input, Tensor):
            raise not_tensor_error("median", "input", input)
        a = input._data
        if a.size == 0:
            if a.dtype.kind == "f":                     # PyTorch: nan
                return input.reshape(-1).sum() + math.nan
            raise IndexError("median(): cannot compute the median of an empty tensor")
        flat = input.reshape(-1)
        idx = _median_index(flat._data, 0)
        m = flat._data[idx[0]]
        tied = (np.isnan(flat._data) if m != m else flat._data == m) \
            if a.dtype.kind == "f" else None
        if tied is None or np.count_nonzero(tied) == 1:
            return _take(flat, 0, idx).reshape(())
        # ties share the gradient evenly (PyTorch's evenly_distribute_backward):
        # amax/amin over the tied entries alone split it so, the value exact
        from tensorplay._ops.elementwise import where
        from tensorplay._ops.reduce_extrema import amax, amin
        mask = Tensor._wrap(tied)
        if m != m:                                      # nan: 1/k to each nan
            return where(mask, flat, 0.0).sum() / float(np.count_nonzero(tied))
        if m == math.inf:
            return amax(where(mask, flat, -math.inf))
        return amin(where(mask, flat, math.inf))
    input, dim, keepdim = _check_median(input, dim, keepdim)
    a = input._data
    if a.ndim and a.shape[dim] == 0:
        raise IndexError(f"median(): expected a non-empty dim {dim}, got size 0")
    if a.ndim == 0:
        return _select(input, 0, np.zeros((), np.int64), keepdim, median_result)
    return _select(input, dim, _median_index(a, dim), keepdim, median_result)


def _cum_extreme(input, dim, take_max, result):
    a = input._data
    if a.ndim == 0:
        return result(_take(input, 0, np.zeros((), np.int64)), _index_tensor(
            np.zeros((), np.int64)))
    n = a.shape[dim]
    ufunc = np.maximum if take_max else np.minimum      # propagate nan
    run = ufunc.accumulate(a, axis=dim) if n else a.copy()
    prev = np.concatenate([np.take(run, [0], axis=dim), np.take(run, np.arange(n - 1),
                                                               axis=dim)], axis=dim) \
        if n else run
    # a new (or equal) extreme at j takes j; every nan does too (PyTorch: the
    # values stay nan from the first one, the index moves to the latest)
    better = (a >= prev) if take_max else (a <= prev)
    if a.dtype.kind == "f":
        better = better | np.isnan(a)
    shape = [1] * a.ndim
    shape[dim] = n
    pos = np.where(better, np.arange(n).reshape(shape), 0)
    idx = np.maximum.accumulate(pos, axis=dim).astype(np.int64) if n else \
        pos.astype(np.int64)
    return result(_take(input, dim, idx), _index_tensor(idx))


@_B.loop_under_vmap
def cummax(input, dim):
    """Running maximum along ``dim`` and the int64 index of its last occurrence,
    named tuple ``(values, indices)``; nan propagates, indexed at the latest nan
    (PyTorch).  The gradient
    goes to the indexed entries (repeated indices accumulate).

    Raises: TypeError, IndexError as ``sort``."""
    input, dim = _check_cummax(input, dim)
    return _cum_extreme(input, dim, True, cummax_result)


@_B.loop_under_vmap
def cummin(input, dim):
    """Running minimum along ``dim``; see ``cummax``."""
    input, dim = _check_cummin(input, dim)
    return _cum_extreme(input, dim, False, cummin_result)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values (``torch.unique``): sorted ascending, as a 1-D tensor, or
    the distinct slices along ``dim``; optionally the int64 inverse indices (input's
    shape, or the size of ``dim``) and counts.  No gradient (as PyTorch, which has
    no derivative for unique): the result never requires grad.

    Returns:
        Tensor, or a tuple ``(output, inverse?, counts?)`` with what was asked.

    Raises:
        TypeError: a non-Tensor input.  IndexError: dim out of range.
    """
    if not isinstance(input, Tensor):
        raise not_tensor_error("unique", "input", input)
    a = input._data
    if dim is not None:
        dim = normalize_dim(dim, a.ndim, "unique")
        if a.ndim == 0:
            dim = None
    res = np.unique(a, return_inverse=True, return_counts=True, axis=dim)
    out, inv, counts = res
    if dim is None:
        inv = inv.reshape(a.shape)
    parts = [Tensor._wrap(np.ascontiguousarray(out))]
    if return_inverse:
        parts.append(Tensor._wrap(inv.astype(np.int64).reshape(inv.shape)))
    if return_counts:
        parts.append(Tensor._wrap(counts.astype(np.int64)))
    return parts[0] if len(parts) == 1 else tuple(parts)
