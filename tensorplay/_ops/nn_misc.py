"""``torch.nn.functional`` layers that are compositions of registered primitives
(issue 9): linear, bilinear, dropout (and its channel and alpha variants),
embedding, one_hot.

* ``linear`` is ``matmul`` (BLAS) plus a broadcast ``add``; ``bilinear`` one
  ``matmul`` against the (in1, out*in2) reshaped weight and a row sum.
* ``dropout`` draws its keep-mask (Bernoulli(1 - p), scaled by 1/(1 - p)) from the
  process-wide generator that ``tensorplay.manual_seed`` seeds, in numpy, and
  multiplies: the gradient is ``g * mask`` by ``mul``'s own rule.  A seeded
  program draws the same masks every run (not PyTorch's masks).
* ``embedding`` is ``index_select`` on the rows; ``padding_idx`` rows take no
  gradient (``where`` with a detached copy: the value is the row itself).
"""
import numpy as np

from tensorplay._ops._batching import BatchedArray, loop_under_vmap
from tensorplay._ops._validate import Signature, TensorArg, declare
from tensorplay._tensor import Tensor

__all__ = ["linear", "bilinear", "dropout", "dropout1d", "dropout2d", "alpha_dropout",
           "embedding", "one_hot"]
INTERNAL = list(__all__)     # torch.nn.functional names: not tensorplay.<name>

_check_linear = declare(Signature("linear", TensorArg("input", "f", exc=RuntimeError),
                                  TensorArg("weight", "f", exc=RuntimeError)))
_check_bilinear = declare(Signature("bilinear", TensorArg("input1", "f", exc=RuntimeError),
                                    TensorArg("input2", "f", exc=RuntimeError),
                                    TensorArg("weight", "f", exc=RuntimeError)))
_check_dropout = declare(Signature("dropout", TensorArg("input", "f", exc=RuntimeError)))
_check_embedding = declare(Signature("embedding", TensorArg("input", "i", exc=RuntimeError),
                                     TensorArg("weight", "f", exc=RuntimeError)))


def _same_dtype(op, *ts):
    dt = ts[0]._data.dtype
    for t in ts[1:]:
        if t is not None and t._data.dtype != dt:
            raise RuntimeError(f"{op}(): expected all tensors of one dtype, got "
                               f"{[str(u.dtype) for u in ts if u is not None]}")


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``.

    Args:
        input (Tensor): (*, in_features), float32/float64.
        weight (Tensor): (out_features, in_features) or (in_features,).
        bias (Tensor, optional): (out_features,) (or broadcastable), or 0-d.

    Raises:
        RuntimeError: in_features that differ (PyTorch's "mat1 and mat2 shapes
        cannot be multiplied"), a weight of more than 2 dims, dtypes that differ.
    """
    from tensorplay._ops.linalg import matmul
    input, weight = _check_linear(input, weight)
    if bias is not None and not isinstance(bias, Tensor):
        raise TypeError(f"linear(): argument 'bias' must be Tensor, not "
                        f"{type(bias).__name__}")
    _same_dtype("linear", input, weight, bias)
    if weight.ndim not in (1, 2) or input.ndim == 0:
        raise RuntimeError(f"linear(): weight must be 1-D or 2-D and input at least 1-D, "
                           f"got weight {list(weight.shape)}, input {list(input.shape)}")
    if input.shape[-1] != weight.shape[-1]:
        rows = int(np.prod(input.shape[:-1]))
        raise RuntimeError(f"linear(): mat1 and mat2 shapes cannot be multiplied "
                           f"({rows}x{input.shape[-1]} and "
                           f"{'x'.join(map(str, weight.shape[::-1]))})")
    out = matmul(input, weight.mT if weight.ndim == 2 else weight)
    return out if bias is None else out + bias


def bilinear(input1, input2, weight, bias=None):
    """``y[..., k] = input1 @ weight[k] @ input2 + bias[k]``.

    Args:
        input1 (Tensor): (*, in1); input2 (Tensor): (*, in2), the same leading dims.
        weight (Tensor): (out, in1, in2); bias (Tensor, optional): (out,).

    Raises:
        RuntimeError: shapes that do not fit, dtypes that differ.
    """
    from tensorplay._ops.linalg import matmul
    x1, x2, weight = _check_bilinear(input1, input2, weight)
    _same_dtype("bilinear", x1, x2, weight, bias)
    if weight.ndim != 3 or x1.ndim == 0 or x2.ndim == 0 or \
            tuple(x1.shape[:-1]) != tuple(x2.shape[:-1]) or \
            x1.shape[-1] != weight.shape[1] or x2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): expected input1 (*, in1), input2 (*, in2) with the "
                           f"same leading dims and weight (out, in1, in2), got "
                           f"{list(x1.shape)}, {list(x2.shape)}, {list(weight.shape)}")
    if bias is not None and tuple(bias.shape) not in ((weight.shape[0],), ()):
        raise RuntimeError(f"bilinear(): bias must be ({weight.shape[0]},), got "
                           f"{list(bias.shape)}")
    o, i1, i2 = weight.shape
    lead = tuple(x1.shape[:-1])
    a = x1.reshape(-1, i1)
    b = x2.reshape(-1, i2)
    # (B, in1) @ (in1, out*in2) -> (B, out, in2), then the in2 contraction with b
    t = matmul(a, weight.permute(1, 0, 2).reshape(i1, o * i2)).reshape(-1, o, i2)
    y = (t * b.unsqueeze(1)).sum(-1)
    if bias is not None:
        y = y + bias
    return y.reshape(lead + (o,))


# ---------------------------------------------------------------- dropout
def _dropout_args(op, input, p, training, inplace):
    input = _check_dropout(input)
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, float, np.floating,
                                                             np.integer)):
        raise TypeError(f"{op}(): argument 'p' must be float, not {type(p).__name__}")
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}(): dropout probability has to be between 0 and 1, but got "
                         f"{p}")
    for name, v in (("training", training), ("inplace", inplace)):
        if v is not True and v is not False:
            raise TypeError(f"{op}(): argument '{name}' must be bool, not "
                            f"{type(v).__name__}")
    return input, p


def _keep_mask(shape, p, dtype, scale):
    """A (shape) array of ``scale`` where kept (probability 1 - p), else 0."""
    from tensorplay._creation import _generator
    u = _generator().random(shape, dtype=np.float32 if dtype == np.float32 else np.float64)
    mask = (u >= p).astype(dtype)   # u in [0, 1): p == 0 keeps all, p == 1 none
    if scale != 1.0:
        mask *= dtype.type(scale)
    return mask


def _apply_mask(input, mask, inplace):
    m = Tensor._wrap(mask)
    return input.mul_(m) if inplace else input * m


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by
    ``1 / (1 - p)`` (the mean is kept); the identity (``input`` itself) when
    ``training=False`` or ``p == 0``; zeros (with a zero gradient) when ``p == 1``.

    Args:
        input (Tensor): float32/float64, any shape.
        p (float): in [0, 1], default 0.5.
        training (bool): default True (``F.dropout``'s default, unlike the module's).
        inplace (bool): multiply ``input`` in place (``mul_``).

    Raises:
        ValueError: p outside [0, 1] (PyTorch's message).  TypeError: non-bool flags.
        RuntimeError: integer input; under vmap, as vmap's randomness mode says.
    """
    input, p = _dropout_args("dropout", input, p, training, inplace)
    if not training or p == 0.0:
        return input
    if p == 1.0:        # nothing is kept: no draw (and no generator state used)
        return input.mul_(0.0) if inplace else input * 0.0
    mask = _keep_mask(tuple(input.shape), p, input._data.dtype, 1.0 / (1.0 - p))
    return _apply_mask(input, mask, inplace)


def _feature_dropout(op, input, p, training, inplace, min_dim):
    input, p = _dropout_args(op, input, p, training, inplace)
    if input.ndim not in (min_dim, min_dim + 1):
        raise RuntimeError(f"{op}(): Expected {min_dim}D (unbatched) or {min_dim + 1}D "
                           f"(batched) input, but received an input of size: "
                           f"{list(input.shape)}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    batched = input.ndim == min_dim + 1
    lead = 2 if batched else 1          # (N, C) or (C,): one draw per channel
    shape = tuple(input.shape[:lead]) + (1,) * (input.ndim - lead)
    mask = _keep_mask(shape, p, input._data.dtype, 1.0 / (1.0 - p))
    return _apply_mask(input, mask, inplace)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) or (C, L) input with probability ``p``,
    scale the rest by 1/(1 - p).  Raises as ``dropout``; RuntimeError for other ranks."""
    return _feature_dropout("dropout1d", input, p, training, inplace, 2)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) or (C, H, W) input with probability ``p``,
    scale the rest by 1/(1 - p).  Raises as ``dropout``; RuntimeError for other ranks."""
    return _feature_dropout("dropout2d", input, p, training, inplace, 3)


_SELU_ALPHA = 1.7580993408473766        # -selu's negative saturation value


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks (PyTorch's): dropped elements are set to SELU's
    negative saturation ``-alpha'`` and an affine map ``a x + b`` restores mean 0 and
    variance 1: ``out = a (x m + (m - 1) alpha') + a alpha' p`` with
    ``a = ((1 - p)(1 + p alpha'^2))^-1/2``, ``m`` the keep-mask.  Identity when
    ``training=False`` (the default, as PyTorch) or p == 0; p == 1 gives zeros."""
    input, p = _dropout_args("alpha_dropout", input, p, training, inplace)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    dt = input._data.dtype
    keep = _keep_mask(tuple(input.shape), p, dt, 1.0)
    a = 1.0 / np.sqrt((1.0 - p) * (1.0 + p * _SELU_ALPHA ** 2))
    mul = Tensor._wrap((keep * dt.type(a)).astype(dt, copy=False))
    add = Tensor._wrap(((keep - 1.0) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p).astype(dt))
    if inplace:
        return input.mul_(mul).add_(add)
    return input * mul + add


# ---------------------------------------------------------------- embedding, one_hot
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows ``weight[input]``: shape ``input.shape + (embedding_dim,)``.

    Args:
        input (Tensor): integer indices in ``[0, num_embeddings)``.
        weight (Tensor): (num_embeddings, embedding_dim) float.
        padding_idx (int, optional): that row's entries get no gradient (negative
            counts from the end, as PyTorch).
        max_norm (float, optional): before the lookup, rows that are looked up and
            whose ``norm_type``-norm exceeds max_norm are rescaled in place to norm
            max_norm (PyTorch: ``max_norm / (norm + 1e-7)``), without gradient.
        scale_grad_by_freq, sparse: only False is supported.

    Raises:
        IndexError: an index out of range (checked where read).  RuntimeError: a
        weight that is not 2-D, float indices.  ValueError: padding_idx outside
        the table.  NotImplementedError: scale_grad_by_freq or sparse.
    """
    from tensorplay._ops.scatter import index_select
    input, weight = _check_embedding(input, weight)
    if weight.ndim != 2:
        raise RuntimeError(f"embedding(): 'weight' must be 2-D, got {list(weight.shape)}")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding(): scale_grad_by_freq and sparse gradients "
                                  "are not supported")
    n = weight.shape[0]
    if padding_idx is not None:
        if not isinstance(padding_idx, (int, np.integer)) or isinstance(padding_idx, bool):
            raise TypeError(f"embedding(): padding_idx must be int, not "
                            f"{type(padding_idx).__name__}")
        if not -n <= padding_idx < n:
            raise ValueError(f"embedding(): Padding_idx must be within num_embeddings "
                             f"({n}), got {padding_idx}")
        padding_idx = int(padding_idx) % n
    flat = input.reshape(-1)
    if max_norm is not None:
        _renorm_rows(weight, flat, float(max_norm), float(norm_type))
    try:
        rows = index_select(weight, 0, flat)
    except IndexError as e:             # PyTorch: "index out of range in self"
        raise IndexError(f"embedding(): index out of range in self ({e})") from None
    if padding_idx is not None:
        keep = (flat != padding_idx).unsqueeze(-1)
        rows = rows.where(keep, rows.detach())
    return rows.reshape(tuple(input.shape) + (weight.shape[1],))


def _renorm_rows(weight, flat, max_norm, norm_type):
    from tensorplay.autograd.grad_mode import no_grad
    if type(flat._data) is BatchedArray or type(weight._data) is BatchedArray:
        raise NotImplementedError("embedding(): max_norm under vmap is not supported")
    idx = np.unique(flat._data)
    if idx.size and (idx[0] < 0 or idx[-1] >= weight.shape[0]):
        bad = idx[0] if idx[0] < 0 else idx[-1]
        raise IndexError(f"embedding(): index {bad} is out of range for "
                         f"{weight.shape[0]} embeddings")
    rows = weight._data[idx].astype(np.float64)
    norms = np.linalg.norm(rows, ord=norm_type, axis=1)
    big = norms > max_norm
    if big.any():
        scale = (max_norm / (norms[big] + 1e-7))[:, None]
        with no_grad():
            new = Tensor._wrap((rows[big] * scale).astype(weight._data.dtype))
            weight[Tensor._wrap(idx[big])] = new


@loop_under_vmap
def one_hot(tensor, num_classes=-1):
    """int64 one-hot encoding: shape ``tensor.shape + (num_classes,)``, 1 at each
    value.  ``num_classes=-1`` takes ``max + 1`` (0 classes for an empty tensor is an
    error there, as PyTorch).

    Raises:
        RuntimeError: a non-integer tensor, a negative value ("Class values must be
        non-negative."), a value >= num_classes ("Class values must be smaller
        than num_classes."), num_classes=-1 on an empty tensor.
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"one_hot(): argument 'tensor' must be Tensor, not "
                        f"{type(tensor).__name__}")
    t = tensor._data
    if t.dtype.kind not in "iu":
        raise RuntimeError("one_hot(): one_hot is only applicable to index tensor of "
                           f"integer dtype, got {tensor.dtype}")
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)):
        raise TypeError(f"one_hot(): argument 'num_classes' must be int, not "
                        f"{type(num_classes).__name__}")
    t = np.asarray(t, dtype=np.int64)
    if t.size and t.min() < 0:
        raise RuntimeError("one_hot(): Class values must be non-negative.")
    if num_classes == -1:
        if t.size == 0:
            raise RuntimeError("one_hot(): Can not infer total number of classes from "
                               "empty tensor.")
        num_classes = int(t.max()) + 1
    elif num_classes < 0:
        raise RuntimeError(f"one_hot(): num_classes should be -1 or >= 0, got {num_classes}")
    elif t.size and t.max() >= num_classes:
        raise RuntimeError("one_hot(): Class values must be smaller than num_classes.")
    out = np.zeros(t.shape + (int(num_classes),), np.int64)
    np.put_along_axis(out, t[..., None], 1, axis=-1)
    return Tensor._wrap(out)
