"""``torch.nn.functional.multi_head_attention_forward`` (issue 9, attention), the
function behind ``nn.MultiheadAttention``, as a composition of public ops.

It follows torch 2.13's steps, so that a copied state_dict gives the same numbers:
masks made additive (``_canonical_mask``: a bool mask's True marks a position
that is *not* attended -- the opposite of ``scaled_dot_product_attention``'s bool
mask), the packed or separate input projections, ``bias_k``/``bias_v`` and
``add_zero_attn`` appended as one more key, the key padding mask merged into the
attention mask, and then either the explicit weights (``need_weights=True``:
``softmax(q k^T / sqrt(d) + mask)``, a fully masked row gives nan, as torch) or
``scaled_dot_product_attention`` (a fully masked row gives 0, as torch's kernel).
Errors are torch's exception types and messages, prefixed with the function name.
"""
import math
import warnings

import numpy as np

from tensorplay._dtype import float64
from tensorplay._tensor import Tensor

__all__ = ["multi_head_attention_forward"]
INTERNAL = list(__all__)

_MHA = "multi_head_attention_forward"
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _none_or_dtype(t):
    """The dtype of a mask, or None (torch's ``F._none_or_dtype``)."""
    if t is None:
        return None
    if isinstance(t, Tensor):
        return t.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or tensorplay.Tensor")


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask becomes a float one of ``target_type`` (-inf where True, else 0);
    a float mask is returned as it is (torch's ``F._canonical_mask``).

    Raises:
        AssertionError: a mask that is neither bool nor float (torch's type).
    """
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        raise TypeError(f"{mask_name} must be a Tensor or None, not {type(mask).__name__}")
    dt = mask._data.dtype
    is_float = dt in _FLOATS
    if dt != np.bool_ and not is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. "
                      f"Use same type for both instead.", UserWarning, stacklevel=3)
    if is_float:
        return mask
    np_dt = np.dtype(np.float64) if target_type == float64 else np.dtype(np.float32)
    return Tensor._wrap(np.where(mask._data, np_dt.type(-np.inf), np_dt.type(0)))


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """True for batched (3-D) query, False for unbatched (2-D); torch's
    AssertionErrors (``F._mha_shape_check``) otherwise."""
    if query.ndim == 3:
        if not (key.ndim == 3 and value.ndim == 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to "
                                 f"be 3-D but found {key.ndim}-D and {value.ndim}-D tensors "
                                 f"respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to "
                                 f"be `None` or 2-D but found {key_padding_mask.ndim}-D "
                                 f"tensor instead")
        if attn_mask is not None and attn_mask.ndim not in (2, 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be "
                                 f"`None`, 2-D or 3-D but found {attn_mask.ndim}-D tensor "
                                 f"instead")
        return True
    if query.ndim == 2:
        if not (key.ndim == 2 and value.ndim == 2):
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` "
                                 f"to be 2-D but found {key.ndim}-D and {value.ndim}-D "
                                 f"tensors respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != 1:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` "
                                 f"to be `None` or 1-D but found {key_padding_mask.ndim}-D "
                                 f"tensor instead")
        if attn_mask is not None:
            if attn_mask.ndim not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to "
                                     f"be `None`, 2-D or 3-D but found {attn_mask.ndim}-D "
                                     f"tensor instead")
            want = (num_heads, query.shape[0], key.shape[0])
            if attn_mask.ndim == 3 and tuple(attn_mask.shape) != want:
                raise AssertionError(f"Expected `attn_mask` shape to be {want} but got "
                                     f"{attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                         f"{query.ndim}-D query tensor")


def _in_projection_packed(q, k, v, w, b):
    """q, k, v projected by the rows [0:E], [E:2E], [2E:3E] of the packed weight;
    one matmul when q is k is v (self-attention), two when k is v."""
    from tensorplay._ops.nn_misc import linear
    E = q.shape[-1]
    if k is v:
        if q is k:
            proj = linear(q, w, b).unflatten(-1, (3, E))
            return proj[..., 0, :], proj[..., 1, :], proj[..., 2, :]
        w_q, w_kv = w.split([E, 2 * E])
        b_q, b_kv = (None, None) if b is None else b.split([E, 2 * E])
        kv = linear(k, w_kv, b_kv).unflatten(-1, (2, E))
        return linear(q, w_q, b_q), kv[..., 0, :], kv[..., 1, :]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _in_projection(q, k, v, w_q, w_k, w_v, b_q, b_k, b_v):
    """Separate projections (kdim/vdim differ from embed_dim), torch's shape checks."""
    from tensorplay._ops.nn_misc import linear
    Eq, Ek, Ev = q.shape[-1], k.shape[-1], v.shape[-1]
    for name, t, want in (("query weights", w_q, (Eq, Eq)), ("key weights", w_k, (Eq, Ek)),
                          ("value weights", w_v, (Eq, Ev)), ("query bias", b_q, (Eq,)),
                          ("key bias", b_k, (Eq,)), ("value bias", b_v, (Eq,))):
        if t is not None and tuple(t.shape) != want:
            raise AssertionError(f"expecting {name} shape of {want}, but got "
                                 f"{tuple(t.shape)}")
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _pad_last(t):
    from tensorplay._ops.resample import pad
    return None if t is None else pad(t, (0, 1))


def _static(name, t, n, head_dim):
    if t.shape[0] != n:
        raise AssertionError(f"expecting {name}.size(0) of {n}, but got {t.shape[0]}")
    if t.shape[2] != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got {t.shape[2]}")
    return t


def _check_attn_mask(attn_mask, tgt_len, src_len, bsz, num_heads):
    if attn_mask.ndim == 2:
        if tuple(attn_mask.shape) != (tgt_len, src_len):
            raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                               f"should be {(tgt_len, src_len)}.")
        return attn_mask.unsqueeze(0)
    if attn_mask.ndim == 3:
        want = (bsz * num_heads, tgt_len, src_len)
        if tuple(attn_mask.shape) != want:
            raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                               f"should be {want}.")
        return attn_mask
    raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """Multi-head attention (``torch.nn.functional.multi_head_attention_forward``).

    Shapes (sequence first; unbatched: drop N):
        query ``(L, N, E)``, key ``(S, N, kdim)``, value ``(S, N, vdim)``;
        key_padding_mask ``(N, S)`` (bool True / float added: masked keys);
        attn_mask ``(L, S)`` or ``(N * num_heads, L, S)`` (bool True: not attended,
        or float added); in_proj_weight ``(3E, E)``, in_proj_bias ``(3E,)``, or
        ``q/k/v_proj_weight`` ``(E, E)``, ``(E, kdim)``, ``(E, vdim)`` with
        ``use_separate_proj_weight=True``; bias_k, bias_v ``(1, 1, E)``;
        static_k, static_v ``(N * num_heads, S, E / num_heads)``.

    Returns:
        ``(attn_output (L, N, E), attn_weights)``; the weights are ``(N, L, S)``
        averaged over heads (``(N, num_heads, L, S)`` with
        ``average_attn_weights=False``), or None when ``need_weights=False``.
        Dropout (``dropout_p``, only when ``training``) uses tensorplay's generator.

    Raises:
        AssertionError / RuntimeError: torch's, for shapes that do not fit (embed
        dim, heads, key vs value, masks), non-bool non-float masks, ``is_causal``
        without ``attn_mask``.
    """
    from tensorplay._ops.attention import scaled_dot_product_attention
    from tensorplay._ops.linalg import matmul
    from tensorplay._ops.nn import softmax
    from tensorplay._ops.nn_misc import dropout, linear
    from tensorplay._ops.shape_join import cat
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{_MHA}(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       _none_or_dtype(attn_mask), "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None          # the causal hint goes to scaled_dot_product_attention
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                    check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not "
                                 f"match value's {tuple(value.shape[:2])}")
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight "
                                     f"is None")
        b = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight,
                                 v_proj_weight, *b)
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {key.shape} does not match value shape "
                                 f"{value.shape}")
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    if attn_mask is not None:
        attn_mask = _check_attn_mask(attn_mask, tgt_len, src_len, bsz, num_heads)
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key." if static_k is not None
                                 else "bias cannot be added to static value.")
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k and bias_v must both be given or both be None")
    n = bsz * num_heads
    q = q.reshape(tgt_len, n, head_dim).transpose(0, 1)
    k = (k.reshape(k.shape[0], n, head_dim).transpose(0, 1) if static_k is None
         else _static("static_k", static_k, n, head_dim))
    v = (v.reshape(v.shape[0], n, head_dim).transpose(0, 1) if static_v is None
         else _static("static_v", static_v, n, head_dim))
    if add_zero_attn:
        k = cat([k, k.new_zeros((n, 1, head_dim))], dim=1)
        v = cat([v, v.new_zeros((n, 1, head_dim))], dim=1)
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but "
                                 f"got {key_padding_mask.shape}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1) \
            .reshape(n, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0
    if need_weights:
        scores = matmul(q * math.sqrt(1.0 / head_dim), k.mT)
        if attn_mask is not None:
            scores = scores + attn_mask
        w = softmax(scores, -1)
        if dropout_p > 0.0:
            w = dropout(w, dropout_p)
        out = matmul(w, v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
        w = w.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            w = w.mean(dim=1)
        if not is_batched:
            out, w = out.squeeze(1), w.squeeze(0)
        return out, w
    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.ndim == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if not is_batched:
        out = out.squeeze(1)
    return out, None
