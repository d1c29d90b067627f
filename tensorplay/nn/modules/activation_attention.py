"""``nn.MultiheadAttention`` (torch's ``torch.nn.modules.activation`` class; issue 9,
attention), with torch's parameter names, layout and initialisation, so a torch
state_dict loads and gives the same outputs and gradients.

Parameters (own, in state_dict order): ``in_proj_weight (3E, E)`` -- or
``q_proj_weight (E, E)``, ``k_proj_weight (E, kdim)``, ``v_proj_weight (E, vdim)``
when kdim or vdim differ from embed_dim -- ``in_proj_bias (3E,)``, ``bias_k``,
``bias_v (1, 1, E)`` (``add_bias_kv``), then ``out_proj.weight (E, E)``,
``out_proj.bias (E,)``.  Initialisation as torch: xavier_uniform_ projections,
zero biases, xavier_normal_ bias_k/bias_v, from tensorplay's generator.
"""
import numbers

from tensorplay import _creation
from tensorplay.nn import functional as F
from tensorplay.nn import init
from tensorplay.nn.modules.linear import Linear
from tensorplay.nn.modules.module import Module
from tensorplay.nn.parameter import Parameter

__all__ = ["MultiheadAttention", "NonDynamicallyQuantizableLinear"]


class NonDynamicallyQuantizableLinear(Linear):
    """``Linear`` under torch's name for ``MultiheadAttention.out_proj`` (torch uses
    the subclass to keep dynamic quantisation away from it; here only the name
    and the repr differ from Linear)."""


def _size(name, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"MultiheadAttention: argument '{name}' must be int, not "
                        f"{type(v).__name__}")
    return int(v)


class MultiheadAttention(Module):
    """Multi-head attention (``torch.nn.MultiheadAttention``).

    Args:
        embed_dim (int): E, the model dim; num_heads (int): divides E.
        dropout (float): on the attention weights in training (default 0.0).
        bias (bool): in_proj_bias and out_proj.bias (default True).
        add_bias_kv (bool): learn one more key and value (bias_k, bias_v).
        add_zero_attn (bool): append a zero key and value.
        kdim, vdim (int, optional): key / value feature sizes (default E).
        batch_first (bool): (N, L, E) inputs and outputs instead of (L, N, E).
        device: only the CPU; dtype: of the parameters.

    Forward ``(query, key, value, key_padding_mask=None, need_weights=True,
    attn_mask=None, average_attn_weights=True, is_causal=False)``: see
    ``nn.functional.multi_head_attention_forward`` for shapes and masks (bool
    masks: True marks positions *not* attended).  Returns ``(attn_output,
    attn_weights or None)``.

    Raises:
        ValueError: embed_dim or num_heads not positive.  AssertionError:
        embed_dim not divisible by num_heads (torch's types).
    """

    __constants__ = ["batch_first"]

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        embed_dim, num_heads = _size("embed_dim", embed_dim), _size("num_heads", num_heads)
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.embed_dim = embed_dim
        self.kdim = _size("kdim", kdim) if kdim is not None else embed_dim
        self.vdim = _size("vdim", vdim) if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(_creation.empty((embed_dim, embed_dim), **kw))
            self.k_proj_weight = Parameter(_creation.empty((embed_dim, self.kdim), **kw))
            self.v_proj_weight = Parameter(_creation.empty((embed_dim, self.vdim), **kw))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(_creation.empty((3 * embed_dim, embed_dim), **kw))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        if bias:
            self.in_proj_bias = Parameter(_creation.empty((3 * embed_dim,), **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(_creation.empty((1, 1, embed_dim), **kw))
            self.bias_v = Parameter(_creation.empty((1, 1, embed_dim), **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        is_batched = getattr(query, "ndim", None) == 3
        key_padding_mask = F._canonical_mask(key_padding_mask, "key_padding_mask",
                                             F._none_or_dtype(attn_mask), "attn_mask",
                                             query.dtype)
        attn_mask = F._canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                      check_other=False)
        if self.batch_first and is_batched:
            # keep the "is" relations, which pick the packed projection's fast form
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = (x.transpose(1, 0) for x in (query, key))
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        separate = not self._qkv_same_embed_dim
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=separate,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight,
            v_proj_weight=self.v_proj_weight, average_attn_weights=average_attn_weights,
            is_causal=is_causal)
        if self.batch_first and is_batched:
            return out.transpose(1, 0), weights
        return out, weights
