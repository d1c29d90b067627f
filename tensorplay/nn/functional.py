"""Functional neural-network ops (``torch.nn.functional`` names, arguments and
defaults).

Activations that take ``inplace=`` accept it as PyTorch does: ``inplace=True``
calls the in-place form (the method ``input.<name>_``, else ``tensorplay.<name>_``)
when tensorplay has one, and raises NotImplementedError saying so when it does
not.  hardtanh and relu6 write in place through ``clamp_`` (the same op).
The functions' own docstrings (in ``tensorplay._ops.activation`` and ``clamp``)
give the formulas, dtypes, errors and the derivative conventions at kinks.
"""
import importlib
import warnings

import tensorplay
from tensorplay._ops import activation as _act
from tensorplay._ops import elementwise as _ew
from tensorplay._ops.activation import gelu, logsigmoid, softplus  # noqa: F401
from tensorplay._ops.elementwise import sigmoid, tanh  # noqa: F401
from tensorplay._ops import nn as _nn
from tensorplay._ops.nn import cross_entropy, nll_loss  # noqa: F401

# (``tensorplay._ops.clamp`` is also the name of the function clamp there)
_clamp = importlib.import_module("tensorplay._ops.clamp")

# names torch.nn.functional has and this module lacks (at lookup time) raise
# "torch.nn.functional.X exists in PyTorch; tensorplay does not implement it yet"
from tensorplay._torch_names_nn import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr(__name__)

__all__ = ["relu", "sigmoid", "tanh", "log_softmax", "softmax", "nll_loss", "cross_entropy",
           "softplus", "silu", "gelu", "leaky_relu", "elu", "selu", "celu", "relu6",
           "hardtanh", "hardsigmoid", "hardswish", "mish", "logsigmoid"]


def _in_place(name, input, args, method=None):
    """Call the in-place form of ``name`` (``method``: the method's name when it
    is another op's, e.g. ``clamp_``), or raise NotImplementedError."""
    if not isinstance(input, tensorplay.Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    attr = method or name + "_"
    fn = getattr(type(input), attr, None)
    if fn is not None:
        return fn(input, *args)
    fn = getattr(tensorplay, attr, None)
    if fn is not None:
        return fn(input, *args)
    raise NotImplementedError(f"{name}(inplace=True): tensorplay has no in-place "
                              f"{attr}() yet; call {name}(input) (inplace=False) instead")


def _flag(name, inplace):
    if inplace is not True and inplace is not False:
        raise TypeError(f"{name}(): argument 'inplace' must be bool, not "
                        f"{type(inplace).__name__}")
    return inplace


def relu(input, inplace=False):
    """``max(x, 0)`` (``tensorplay.relu``); the gradient at 0 is 0."""
    if _flag("relu", inplace):
        return _in_place("relu", input, ())
    return _ew.relu(input)


def silu(input, inplace=False):
    """``x * sigmoid(x)``; see ``tensorplay._ops.activation.silu``."""
    if _flag("silu", inplace):
        return _in_place("silu", input, ())
    return _act.silu(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """``x > 0 ? x : negative_slope x``; see ``tensorplay._ops.activation.leaky_relu``."""
    if _flag("leaky_relu", inplace):
        return _in_place("leaky_relu", input, (negative_slope,))
    return _act.leaky_relu(input, negative_slope)


def elu(input, alpha=1.0, inplace=False):
    """``x > 0 ? x : alpha (exp(x) - 1)``; see ``tensorplay._ops.activation.elu``."""
    if _flag("elu", inplace):
        return _in_place("elu", input, (alpha,))
    return _act.elu(input, alpha)


def selu(input, inplace=False):
    """``tensorplay.selu``."""
    if _flag("selu", inplace):
        return _in_place("selu", input, ())
    return _act.selu(input)


def celu(input, alpha=1.0, inplace=False):
    """``tensorplay.celu``."""
    if _flag("celu", inplace):
        return _in_place("celu", input, (alpha,))
    return _act.celu(input, alpha)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``clamp(x, min_val, max_val)``; see ``tensorplay._ops.clamp.hardtanh``."""
    if _flag("hardtanh", inplace):
        out = _clamp.hardtanh(input, min_val, max_val)      # validates first
        del out
        return _in_place("hardtanh", input, (min_val, max_val), method="clamp_")
    return _clamp.hardtanh(input, min_val, max_val)


def relu6(input, inplace=False):
    """``min(max(x, 0), 6)``; see ``tensorplay._ops.clamp.relu6``."""
    if _flag("relu6", inplace):
        _clamp.relu6(input)                                  # validates first
        return _in_place("relu6", input, (0.0, 6.0), method="clamp_")
    return _clamp.relu6(input)


def hardsigmoid(input, inplace=False):
    """``min(max(x + 3, 0), 6) / 6``; see ``tensorplay._ops.activation.hardsigmoid``."""
    if _flag("hardsigmoid", inplace):
        return _in_place("hardsigmoid", input, ())
    return _act.hardsigmoid(input)


def hardswish(input, inplace=False):
    """``x min(max(x + 3, 0), 6) / 6``; see ``tensorplay._ops.activation.hardswish``."""
    if _flag("hardswish", inplace):
        return _in_place("hardswish", input, ())
    return _act.hardswish(input)


def mish(input, inplace=False):
    """``x tanh(softplus(x))``; see ``tensorplay._ops.activation.mish``."""
    if _flag("mish", inplace):
        return _in_place("mish", input, ())
    return _act.mish(input)


def _implicit_dim(name, input, dim, stacklevel):
    """PyTorch's ``_get_softmax_dim``: with ``dim=None``, warn (UserWarning, implicit
    dim deprecated) and pick 0 for 0-, 1- and 3-D input, else 1."""
    if dim is not None:
        return dim
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the "
                  f"call to include dim=X as an argument.", UserWarning,
                  stacklevel=stacklevel)
    nd = input.ndim if isinstance(input, tensorplay.Tensor) else 1
    return 0 if nd in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """Probabilities along ``dim`` (``tensorplay._ops.nn.softmax``).  ``dim=None``
    is PyTorch's deprecated implicit choice: a UserWarning, then dim 0 for 0-, 1- and
    3-D input, else 1."""
    return _nn.softmax(input, _implicit_dim("softmax", input, dim, _stacklevel), dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``log(softmax(input, dim))`` computed stably (``tensorplay._ops.nn.log_softmax``);
    ``dim=None`` as in ``softmax``."""
    return _nn.log_softmax(input, _implicit_dim("log_softmax", input, dim, _stacklevel),
                           dtype)



# ---- convolutions (issue 9): tensorplay/_ops/conv_api.py
from tensorplay._ops.conv_api import (conv1d, conv2d, conv_transpose1d,  # noqa: E402,F401
                                      conv_transpose2d, fold, unfold)

__all__ += ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "unfold", "fold"]

# ---- Pooling, padding, interpolation (issue 9): tensorplay/_ops/pool.py, resample.py
from tensorplay._ops.pool import (adaptive_avg_pool1d, adaptive_avg_pool2d,  # noqa: E402,F401
                                  adaptive_max_pool1d, adaptive_max_pool2d, avg_pool1d,
                                  avg_pool2d, max_pool1d, max_pool1d_with_indices, max_pool2d,
                                  max_pool2d_with_indices)
from tensorplay._ops.resample import interpolate, pad  # noqa: E402,F401

__all__ += ["max_pool1d", "max_pool2d", "max_pool1d_with_indices", "max_pool2d_with_indices",
            "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
            "adaptive_max_pool1d", "adaptive_max_pool2d", "pad", "interpolate"]

# ---- losses, normalisation and the other layers (issue 9: losses and normalisation)
from tensorplay._ops.loss import (binary_cross_entropy,  # noqa: E402,F401
                                  binary_cross_entropy_with_logits, cosine_similarity,
                                  huber_loss, kl_div, l1_loss, mse_loss, pairwise_distance,
                                  smooth_l1_loss)
from tensorplay._ops.nn_misc import (alpha_dropout, bilinear, dropout, dropout1d,  # noqa: E402,F401
                                     dropout2d, embedding, linear, one_hot)
from tensorplay._ops.normalization import batch_norm, normalize  # noqa: E402,F401
from tensorplay._ops.normalization_rows import group_norm, layer_norm  # noqa: E402,F401

__all__ += ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
            "binary_cross_entropy_with_logits", "kl_div", "cosine_similarity",
            "pairwise_distance", "linear", "bilinear", "dropout", "dropout1d", "dropout2d",
            "alpha_dropout", "embedding", "one_hot", "batch_norm", "layer_norm", "group_norm",
            "normalize"]

# --- attn9 --- attention (issue 9, second step): tensorplay/_ops/attention.py, attention_mha.py
from tensorplay._ops.attention import scaled_dot_product_attention  # noqa: E402,F401
from tensorplay._ops.attention_mha import (_canonical_mask,  # noqa: E402,F401
                                           _none_or_dtype, multi_head_attention_forward)

__all__ += ["scaled_dot_product_attention", "multi_head_attention_forward"]
# --- layers9 ---
# more layers and losses (issue 9, second step): tensorplay/_ops/norm_more.py,
# nn_more.py, pool_more.py, loss_more.py, embedding_bag.py
from tensorplay._ops.norm_more import (instance_norm, local_response_norm,  # noqa: E402,F401
                                       rms_norm)
from tensorplay._ops.nn_more import (channel_shuffle, feature_alpha_dropout,  # noqa: E402,F401
                                     fractional_max_pool2d, fractional_max_pool3d, glu,
                                     hardshrink, pixel_shuffle, pixel_unshuffle, rrelu,
                                     rrelu_, softmin, softshrink, softsign, tanhshrink,
                                     threshold, threshold_, upsample, upsample_bilinear,
                                     upsample_nearest)
from tensorplay._ops.pool_more import (lp_pool1d, lp_pool2d, max_unpool1d,  # noqa: E402,F401
                                       max_unpool2d)

__all__ += ["instance_norm", "rms_norm", "local_response_norm", "glu", "pixel_shuffle",
            "pixel_unshuffle", "channel_shuffle", "threshold", "threshold_", "rrelu", "rrelu_",
            "hardshrink",
            "softshrink", "tanhshrink", "softsign", "softmin", "feature_alpha_dropout",
            "upsample", "upsample_nearest", "upsample_bilinear", "fractional_max_pool2d",
            "fractional_max_pool3d", "max_unpool1d", "max_unpool2d", "lp_pool1d",
            "lp_pool2d"]
from tensorplay._ops.loss_more import (cosine_embedding_loss,  # noqa: E402,F401
                                       gaussian_nll_loss, hinge_embedding_loss,
                                       margin_ranking_loss, multi_margin_loss,
                                       multilabel_margin_loss, multilabel_soft_margin_loss,
                                       poisson_nll_loss, soft_margin_loss,
                                       triplet_margin_loss, triplet_margin_with_distance_loss)

__all__ += ["margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
            "multilabel_soft_margin_loss", "multilabel_margin_loss", "multi_margin_loss",
            "triplet_margin_loss", "triplet_margin_with_distance_loss",
            "cosine_embedding_loss", "poisson_nll_loss", "gaussian_nll_loss"]
from tensorplay._ops.embedding_bag import embedding_bag  # noqa: E402,F401

__all__ += ["embedding_bag"]
