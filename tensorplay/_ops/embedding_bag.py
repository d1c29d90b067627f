"""``torch.nn.functional.embedding_bag`` (issue 9, second step): sums, means or
maxima of bags of embedding rows, as a composition of registered primitives.

The bags are read from ``offsets`` in numpy (validated first, PyTorch's errors):
each kept position gets its bag id, then

* the rows are ``index_select(weight, 0, indices)`` (the index kernel checks every
  index where it reads it, after a Python check that gives PyTorch's message),
  times ``per_sample_weights`` (mode 'sum' only, as PyTorch);
* 'sum' is ``index_add`` of the rows into a (B, D) zero tensor at the bag ids,
  'mean' that divided by each bag's count; 'max' gathers, per bag and column, the
  row holding the maximum (the first one in the bag, PyTorch's strict ``>``), so
  the gradient goes to that entry alone, as PyTorch's ``max_indices``.

Empty bags give zeros (all modes).  Positions equal to ``padding_idx`` are left
out of their bag (not counted by 'mean'); with ``include_last_offset`` the last
offset ends the last bag and positions after it are ignored (PyTorch).
"""
import warnings

import numpy as np

from tensorplay._ops import _checks9 as C
from tensorplay._ops._batching import loop_under_vmap
from tensorplay._tensor import Tensor

__all__ = ["embedding_bag"]
INTERNAL = list(__all__)
_MODES = ("sum", "mean", "max")


def _index_tensor(name, t):
    if not isinstance(t, Tensor):
        raise TypeError(f"embedding_bag(): argument '{name}' must be Tensor, not "
                        f"{type(t).__name__}")
    if t._data.dtype.kind not in "iu":
        raise RuntimeError(f"embedding_bag(): Expected tensor for argument '{name}' to have "
                           f"one of the following scalar types: Long, Int; but got "
                           f"{t.dtype} instead")
    return C.values(t).astype(np.int64, copy=False)


def _bags(inp, off, include_last_offset):
    """(bag id per position, -1 for positions after the last bag; number of bags)."""
    n = inp.size
    if off.size and off[0] != 0:
        raise RuntimeError(f"embedding_bag(): offsets[0] has to be 0, i.e., the first "
                           f"sequence in the mini-batch has to start from position 0. "
                           f"However, got {int(off[0])}")
    if off.size and off[-1] > n:
        raise RuntimeError(f"embedding_bag(): offsets[-1] can not be greater than input's "
                           f"length {n} but got offsets[-1] of {int(off[-1])}")
    if off.size > 1 and (np.diff(off) < 0).any():
        raise RuntimeError(f"embedding_bag(): offsets must be non-decreasing, got "
                           f"{off.tolist()}")
    if include_last_offset:
        if off.size == 0:
            raise RuntimeError("embedding_bag(): include_last_offset needs at least one "
                               "offset (the end of the last bag)")
        b, starts, end = off.size - 1, off[:-1], off[-1]
    else:
        b, starts, end = off.size, off, n
    pos = np.arange(n)
    bag = np.searchsorted(starts, pos, side="right") - 1 if b else np.full(n, -1)
    bag[pos >= end] = -1
    return bag, b


@loop_under_vmap
def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Reduce bags of rows of ``weight`` without materialising the rows per bag
    (``torch.nn.functional.embedding_bag``).

    Args:
        input (Tensor): integer indices: 1-D with ``offsets`` (the start of each bag),
            or 2-D (B, L), each row one bag (``offsets`` must then be None).
        weight (Tensor): (num_embeddings, D) float32/float64.
        offsets (Tensor, optional): 1-D integer, starting at 0, non-decreasing, at
            most ``len(input)``.
        max_norm, norm_type: as ``embedding`` (rows looked up are renormalised in
            place first).
        mode (str): ``'sum'``, ``'mean'`` (default) or ``'max'``.
        per_sample_weights (Tensor, optional): input's shape, weight's dtype; mode
            'sum' only.
        include_last_offset (bool): ``offsets`` has B + 1 entries, the last ending
            the last bag.
        padding_idx (int, optional): positions holding it are left out of their bags.
        scale_grad_by_freq, sparse: only False.

    Returns:
        Tensor (B, D), weight's dtype; empty bags are zeros.

    Raises:
        ValueError: PyTorch's argument errors (shapes of input/offsets/weight/
        per_sample_weights, an unknown mode).  RuntimeError: non-integer indices or
        offsets, offsets that do not start at 0, decrease or pass the input's end,
        padding_idx out of range, per_sample_weights of another dtype.  IndexError:
        an index outside ``[0, num_embeddings)``.  NotImplementedError:
        per_sample_weights with mode 'mean'/'max' (PyTorch's), scale_grad_by_freq or
        sparse.
    """
    from tensorplay._ops.nn_misc import _renorm_rows
    from tensorplay._ops.scatter import index_add, index_select
    op = "embedding_bag"
    if isinstance(weight, Tensor) and isinstance(input, Tensor) and \
            weight._data.dtype.kind in "iu" and input._data.dtype.kind == "f":
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=2)
        weight, input = input, weight
    C.tensor(op, "weight", weight)
    inp = _index_tensor("input", input)
    if per_sample_weights is not None:
        C.tensor(op, "per_sample_weights", per_sample_weights)
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(f"embedding_bag: If per_sample_weights "
                             f"({list(per_sample_weights.shape)}) is not None, then it must "
                             f"have the same shape as the input ({list(input.shape)})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.ndim}")
    psw = per_sample_weights
    if inp.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is "
                             f"treated is a mini-batch of fixed length sequences. However, "
                             f"found offsets of type {type(offsets)}")
        off = np.arange(0, inp.size, max(inp.shape[1], 1), dtype=np.int64)[:inp.shape[0]]
        include_last_offset = False
        inp = inp.reshape(-1)
        if psw is not None:
            psw = psw.reshape(-1)
    elif inp.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        off = _index_tensor("offsets", offsets)
        if off.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{inp.ndim}")
    if mode not in _MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding_bag(): scale_grad_by_freq and sparse gradients "
                                  "are not supported")
    include_last_offset = C.flag(op, "include_last_offset", include_last_offset)
    num, d = weight.shape
    if padding_idx is not None:
        padding_idx = C.number(op, "padding_idx", padding_idx, integral=True)
        if not -num <= padding_idx < num:
            raise RuntimeError(f"embedding_bag(): padding_idx must be within the number of "
                               f"embeddings, {-num} through {num - 1}, but got {padding_idx}")
        padding_idx %= num
    bad = np.flatnonzero((inp < 0) | (inp >= num))
    if bad.size:
        raise IndexError(f"embedding_bag(): Index {int(bad[0])} of input takes value "
                         f"{int(inp[bad[0]])} which is not in the valid range [0, {num})")
    if max_norm is not None:
        _renorm_rows(weight, Tensor._wrap(inp), float(max_norm), float(norm_type))
    if psw is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' "
                                  f"(got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")
    if psw is not None and psw._data.dtype != weight._data.dtype:
        raise RuntimeError(f"embedding_bag(): Expected per_sample_weights of the weight's "
                           f"dtype {weight.dtype}, got {psw.dtype}")
    bag, b = _bags(inp, off, include_last_offset)
    keep = bag >= 0
    if padding_idx is not None:
        keep &= inp != padding_idx
    sel = np.flatnonzero(keep)
    bag_k = bag[sel]
    out = weight.new_zeros((b, d))
    if sel.size == 0:
        return out
    rows = index_select(weight, 0, Tensor._wrap(inp[sel]))          # (K, D)
    bag_t = Tensor._wrap(bag_k)
    if mode == "max":
        return _bag_max(out, rows, bag_k, bag_t)
    if psw is not None:
        rows = rows * index_select(psw, 0, Tensor._wrap(sel)).unsqueeze(1)
    out = index_add(out, 0, bag_t, rows)
    if mode == "mean":
        counts = np.maximum(np.bincount(bag_k, minlength=b), 1).astype(weight._data.dtype)
        out = out / Tensor._wrap(counts[:, None])
    return out


def _bag_max(out, rows, bag_k, bag_t):
    """Per bag and column the first row holding the maximum, gathered (its gradient
    goes to that entry only)."""
    from tensorplay._ops.scatter import index_add
    vals = np.asarray(rows._data)
    starts = np.flatnonzero(np.r_[True, bag_k[1:] != bag_k[:-1]])   # bags are contiguous
    mx = np.maximum.reduceat(vals, starts, axis=0)                    # (Bn, D)
    seg = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, bag_k.size]))
    pos = np.where(vals == mx[seg], np.arange(vals.shape[0])[:, None], vals.shape[0])
    first = np.minimum.reduceat(pos, starts, axis=0)                  # (Bn, D)
    nan_cols = first >= vals.shape[0]                                 # a NaN in the bag
    if nan_cols.any():
        isn = np.isnan(vals)
        posn = np.where(isn, np.arange(vals.shape[0])[:, None], vals.shape[0])
        first = np.where(nan_cols, np.minimum.reduceat(posn, starts, axis=0), first)
    picked = rows.gather(0, Tensor._wrap(first.astype(np.int64)))
    return index_add(out, 0, Tensor._wrap(bag_k[starts]), picked)
