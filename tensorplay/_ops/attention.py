"""``torch.nn.functional.scaled_dot_product_attention`` and the mask helpers the
attention layers share (issue 9, attention and Transformer).

``scaled_dot_product_attention`` is a composition of registered primitives
(``matmul``, ``add``, ``softmax``, ``mul``, ``dropout``), so its VJP, JVP, second
derivatives and vmap rule come from theirs.  The formula is the one PyTorch
documents as its reference ("math") implementation::

    A = softmax(q k^T * scale + bias, dim=-1)      # (..., L, S)
    out = dropout(A, dropout_p) @ v                 # (..., L, Ev)

where ``bias`` is 0 / -inf from a bool mask (True takes part) or a causal mask
(``tril`` of an (L, S) block of ones: top-left aligned when L != S), or the float
mask itself.  A query row whose keys are all masked out gives zeros (and zero
gradients), as torch 2.13's CPU kernels do, not the nan of a plain softmax.
"""
import math
import numbers

import numpy as np

from tensorplay._ops._batching import BatchedArray
from tensorplay._tensor import Tensor

__all__ = ["scaled_dot_product_attention"]
INTERNAL = list(__all__)     # torch.nn.functional names: not tensorplay.<name>

_SDPA = "scaled_dot_product_attention"
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _tensor_arg(op, name, t):
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    return t


def _check_qkv(query, key, value):
    q, k, v = (_tensor_arg(_SDPA, n, t) for n, t in
               (("query", query), ("key", key), ("value", value)))
    dts = [t._data.dtype for t in (q, k, v)]
    if not dts[0] == dts[1] == dts[2]:
        raise RuntimeError(f"{_SDPA}(): Expected query, key, and value to have the same "
                           f"dtype, but got query.dtype: {q.dtype} key.dtype: {k.dtype} and "
                           f"value.dtype: {v.dtype} instead.")
    if dts[0] not in _FLOATS:
        raise RuntimeError(f"{_SDPA}(): expected float32 or float64 query, key and value, "
                           f"got {q.dtype}")
    if min(q.ndim, k.ndim, v.ndim) < 2:
        raise RuntimeError(f"{_SDPA}(): Expected query, key, and value to all be at least 2 "
                           f"dimensional, but got query.dim: {q.ndim} key.dim: {k.ndim} and "
                           f"value.dim: {v.ndim} instead.")
    if q.shape[-1] != k.shape[-1]:
        raise RuntimeError(f"{_SDPA}(): query and key must have the same embedding size "
                           f"(last dim), got query {list(q.shape)} and key {list(k.shape)}")
    if k.shape[-2] != v.shape[-2]:
        raise RuntimeError(f"{_SDPA}(): key and value must have the same sequence length "
                           f"(dim -2), got key {list(k.shape)} and value {list(v.shape)}")
    return q, k, v


def _gqa(q, k, v):
    """Repeat the key/value heads (dim -3) to the query's number of heads."""
    if min(q.ndim, k.ndim, v.ndim) < 3:
        raise RuntimeError(f"{_SDPA}(enable_gqa=True): query, key and value need a heads "
                           f"dim (-3), got {q.ndim}-D, {k.ndim}-D and {v.ndim}-D tensors")
    hq, hk, hv = q.shape[-3], k.shape[-3], v.shape[-3]
    if hk == 0 or hv == 0 or hq % hk or hq % hv:
        raise RuntimeError(f"{_SDPA}(): Number of heads in key and value must divide the "
                           f"number of heads in query, got query {hq}, key {hk}, value {hv}")
    if hk != hq:
        k = k.repeat_interleave(hq // hk, -3)
    if hv != hq:
        v = v.repeat_interleave(hq // hv, -3)
    return k, v


def _batch_shape(q, k, v):
    try:
        return tuple(np.broadcast_shapes(tuple(q.shape[:-2]), tuple(k.shape[:-2]),
                                         tuple(v.shape[:-2])))
    except ValueError:
        raise RuntimeError(f"{_SDPA}(): the batch dims of query {list(q.shape)}, key "
                           f"{list(k.shape)} and value {list(v.shape)} do not broadcast") \
            from None


def _keep_rows(full, dtype):
    """A (..., L, 1) 0/1 multiplier that zeroes the fully masked rows."""
    return Tensor._wrap((~full).astype(dtype))


def _bias(q, mask, L, S, is_causal, out_shape):
    """The additive bias and the fully-masked-row multiplier (Tensors or None)."""
    dt = q._data.dtype
    if is_causal:
        allowed = np.tri(L, S, dtype=bool)              # top-left aligned, as torch
    elif mask is None:
        return None, None
    else:
        md = mask._data.dtype
        if md != np.bool_ and md != dt:             # a float mask must be the query's dtype
            raise RuntimeError(f"{_SDPA}(): Expected attn_mask dtype to be bool or float or "
                               f"to match query dtype, but got attn_mask.dtype: {mask.dtype} "
                               f"and  query.dtype: {q.dtype} instead.")
        try:
            ok = tuple(np.broadcast_shapes(tuple(mask.shape), out_shape)) == out_shape
        except ValueError:
            ok = False
        if not ok:
            raise RuntimeError(f"{_SDPA}(): attn_mask of shape {list(mask.shape)} does not "
                               f"broadcast to the attention weights' shape {list(out_shape)} "
                               f"(batch..., L, S)")
        if type(mask._data) is BatchedArray:            # under vmap: tensor ops only
            return _batched_bias(mask, dt)
        if md == np.bool_:
            allowed = mask._data
        else:
            m = mask if md == dt else mask.to(q.dtype)
            full = np.isneginf(m._data).all(-1, keepdims=True)
            if not full.any():
                return m, None
            return m.masked_fill(Tensor._wrap(full), 0.0), _keep_rows(full, dt)
    full = ~allowed.any(-1, keepdims=True)
    bias = np.where(allowed | full, dt.type(0), dt.type(-np.inf))
    return Tensor._wrap(bias), (_keep_rows(full, dt) if full.any() else None)


def _batched_bias(mask, dt):
    """``_bias`` for a mask batched by vmap: always zero the fully masked rows."""
    if mask._data.dtype == np.bool_:
        full = ~mask.any(-1, keepdim=True)
        bias = (mask.to(dt) * 0.0).masked_fill(~mask, -math.inf).masked_fill(full, 0.0)
    else:
        m = mask.to(dt)
        full = m.isneginf().all(-1, keepdim=True)
        bias = m.masked_fill(full, 0.0)
    return bias, (~full).to(dt)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """Attention ``softmax(q k^T * scale + bias) @ v`` (``torch.nn.functional.
    scaled_dot_product_attention``; the formula is torch's documented reference).

    Args:
        query (Tensor): ``(..., L, E)``, float32 or float64.
        key (Tensor): ``(..., S, E)``; value (Tensor): ``(..., S, Ev)``; the same
            dtype.  The batch dims ``...`` of the three broadcast.
        attn_mask (Tensor, optional): broadcastable to ``(..., L, S)``.  Bool: True
            marks the keys that take part; float: added to the scores (it gets a
            gradient).
        dropout_p (float): dropout on the attention weights (always applied when
            > 0: this function has no training flag), drawn from tensorplay's
            generator (``tensorplay.manual_seed``), not torch's stream.
        is_causal (bool): mask with ``tril(ones(L, S))`` -- query i sees keys
            ``0..i`` (top-left alignment when L != S, as torch).
        scale (float, optional): default ``1 / sqrt(E)``.
        enable_gqa (bool): grouped-query attention: key/value heads (dim -3) are
            repeated (``repeat_interleave``) to the query's number of heads.

    Returns:
        Tensor ``(..., L, Ev)``.  A query row with every key masked gives zeros.

    Raises:
        TypeError: non-Tensor inputs or mask.  RuntimeError: dtypes that differ or
        are not float (the mask: bool or float), fewer than 2 dims, E or S that do
        not match, batch dims that do not broadcast, a mask that does not broadcast
        to ``(..., L, S)``, ``attn_mask`` with ``is_causal=True``, dropout_p outside
        [0, 1], heads that do not divide (gqa).
    """
    from tensorplay._ops.linalg import matmul
    from tensorplay._ops.nn import softmax
    from tensorplay._ops.nn_misc import dropout
    q, k, v = _check_qkv(query, key, value)
    if attn_mask is not None:
        _tensor_arg(_SDPA, "attn_mask", attn_mask)
        if is_causal:
            raise RuntimeError(f"{_SDPA}(): Explicit attn_mask should not be set when "
                               f"is_causal=True")
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, numbers.Real):
        raise TypeError(f"{_SDPA}(): argument 'dropout_p' must be float, not "
                        f"{type(dropout_p).__name__}")
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"{_SDPA}(): dropout probability has to be between 0 and 1, but "
                           f"got {dropout_p}")
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, numbers.Real)):
        raise TypeError(f"{_SDPA}(): argument 'scale' must be float or None, not "
                        f"{type(scale).__name__}")
    if enable_gqa:
        k, v = _gqa(q, k, v)
    L, E = q.shape[-2], q.shape[-1]
    S = k.shape[-2]
    out_shape = _batch_shape(q, k, v) + (L, S)
    s = (1.0 / math.sqrt(E) if E else 1.0) if scale is None else float(scale)   # E = 0: 0 scores
    bias, keep = _bias(q, attn_mask, L, S, bool(is_causal), out_shape)
    # Several equal batch dims are folded into one, so that both products run as
    # one batched GEMM on tensorplay's threads (numpy's matmul of 4-D operands
    # runs on one thread); reshapes of the (contiguous) scores are views.
    fold = q.ndim > 3 and tuple(q.shape[:-2]) == tuple(k.shape[:-2]) == tuple(v.shape[:-2])
    if fold:
        q, k, v = q.reshape(-1, L, E), k.reshape(-1, S, E), v.reshape(-1, S, v.shape[-1])
    # scale the smaller of q (L x E) and the scores (L x S)
    scores = matmul(q * s, k.mT) if E <= S else matmul(q, k.mT) * s
    if bias is not None:
        scores = scores.reshape(out_shape) + bias
    w = softmax(scores, -1)
    if keep is not None:
        w = w.reshape(out_shape) * keep
    if dropout_p > 0.0:
        w = dropout(w, float(dropout_p), True)
    if not fold:
        return matmul(w, v)
    return matmul(w.reshape(-1, L, S), v).reshape(out_shape[:-2] + (L, v.shape[-1]))
