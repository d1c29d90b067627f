"""Neural-network primitives: ``log_softmax`` and the negative log-likelihood loss,
and ``cross_entropy`` composed of the two.

``cross_entropy(x, t) = nll_loss(log_softmax(x, 1), t)``: a composition, not a
fused primitive.  The loss touches an (N, C) array a handful of times per step
either way; the composition keeps every rule a one-liner over registered
primitives, so second derivatives and forward mode come for free.
"""
import math

import numpy as np

from tensorplay._kernels import nn as _kn
from tensorplay._ops._common import CONFIG, as_tensor_arg, normalize_dim
from tensorplay._ops.registry import apply, defop
from tensorplay._tensor import Tensor

__all__ = ["log_softmax", "softmax", "nll_loss", "nll_loss_backward", "cross_entropy"]


def _log_softmax_fwd(x, dim):
    shape = x.shape
    a = math.prod(shape[:dim])
    r = shape[dim] if shape else 1
    b = math.prod(shape[dim + 1:])
    out = np.empty(shape, x.dtype)
    if out.size:
        _kn.log_softmax_fwd(np.ascontiguousarray(x).reshape(a, r, b), out.reshape(a, r, b),
                            CONFIG.num_threads)
    return out


# y = x - logsumexp(x):  VJP  g - exp(y) * sum(g);  JVP  t - sum(exp(y) * t).
_log_softmax = defop(
    "log_softmax", _log_softmax_fwd,
    vjp=(lambda g, out, x, dim: g - out.exp() * g.sum(dim, keepdim=True),),
    jvp=lambda ts, out, x, dim: ts[0] - (out.exp() * ts[0]).sum(dim, keepdim=True),
    saves=("out",))


def log_softmax(input, dim, dtype=None):
    """``x - log(sum(exp(x), dim))`` along ``dim``, computed max-shifted (no overflow).

    Args:
        input (Tensor): float32 or float64, any shape.
        dim (int): the dim that is normalised (required; PyTorch's implicit choice
            is deprecated).
        dtype (dtype, optional): cast the input first.

    Raises:
        RuntimeError: integer input.  IndexError: dim out of range.
    """
    as_tensor_arg(input, "log_softmax")
    if dtype is not None:
        input = input.to(dtype)
    if input._data.dtype.kind != "f":
        raise RuntimeError(f"log_softmax(): expected a floating point tensor, got {input.dtype}")
    d = normalize_dim(dim, input.ndim, "log_softmax")
    return apply(_log_softmax, (input,), {"dim": d})


def softmax(input, dim, dtype=None):
    """``exp(log_softmax(input, dim))``: probabilities that sum to 1 along ``dim``."""
    return log_softmax(input, dim, dtype).exp()


def _nll_fwd(logp, target):
    n = logp.shape[0]
    if n == 0:
        return np.array(np.nan, logp.dtype)
    return np.array(_kn.nll_fwd(np.ascontiguousarray(logp), target, CONFIG.num_threads),
                    logp.dtype)


def _nll_backward_fwd(g, target, num_classes):
    out = np.empty((target.shape[0], num_classes), g.dtype)
    if out.size:
        _kn.nll_vjp(float(g), target, out, CONFIG.num_threads)
    return out


# nll(logp, t) = -(1/N) sum_i logp[i, t_i]: linear in logp; its VJP scatters -g/N.
_nll_loss = defop(
    "nll_loss", _nll_fwd,
    vjp=(lambda g, out, logp, target: nll_loss_backward(g, target, logp.shape[1]), None),
    jvp=lambda ts, out, logp, target: _nll_mean(ts[0], target),
    saves=("inputs",))
# nll_loss_backward is linear in g; its adjoint is nll_loss itself.
_nll_loss_backward = defop(
    "nll_loss_backward", _nll_backward_fwd,
    vjp=(lambda gb, out, g, target, num_classes: _nll_mean(gb, target), None),
    jvp=lambda ts, out, g, target, num_classes: nll_loss_backward(ts[0], target, num_classes),
    saves=("inputs",))


def _nll_mean(logp, target):
    return apply(_nll_loss, (logp, target), {})


def _check_target(logp, target, op):
    as_tensor_arg(target, op, "target")
    if target._data.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): expected target of integer class indices (int64), got "
                        f"{target.dtype}; probability targets are not supported")
    n, c = logp._data.shape
    if target._data.shape != (n,):
        raise ValueError(f"{op}(): expected target of shape ({n},) for input of shape "
                         f"({n}, {c}), got {tuple(target._data.shape)}")
    t = np.ascontiguousarray(target._data, dtype=np.int64)
    if t.size and (t.min() < 0 or t.max() >= c):
        bad = int(t.min()) if t.min() < 0 else int(t.max())
        raise IndexError(f"{op}(): target {bad} is out of bounds for {c} classes")
    return Tensor._wrap(t)


def nll_loss(input, target, reduction="mean"):
    """Negative log-likelihood of class ``target`` under log-probabilities ``input``.

    Args:
        input (Tensor): (N, C) log-probabilities, float32 or float64.
        target (Tensor): (N,) integer class indices in ``[0, C)``.
        reduction (str): ``'mean'`` (default) or ``'sum'``.

    Returns:
        0-d Tensor.  With N = 0 and ``'mean'`` the result is nan (as PyTorch).

    Raises:
        RuntimeError: non-integer target (as PyTorch) or input not 2-D floating.
        ValueError: shape mismatch or unknown reduction.  IndexError: a target
        outside ``[0, C)``.
    """
    as_tensor_arg(input, "nll_loss")
    if input.ndim != 2 or input._data.dtype.kind != "f":
        raise RuntimeError(f"nll_loss(): expected a 2-D floating input (N, C), got "
                           f"{input.ndim}-D {input.dtype}")
    if reduction not in ("mean", "sum"):
        raise ValueError(f"nll_loss(): reduction must be 'mean' or 'sum', got {reduction!r}")
    t = _check_target(input, target, "nll_loss")
    loss = _nll_mean(input, t)
    return loss * input._data.shape[0] if reduction == "sum" else loss


def nll_loss_backward(grad_output, target, num_classes):
    """(N, C) zeros with ``-grad_output / N`` at ``[i, target[i]]``: nll_loss's VJP."""
    return apply(_nll_loss_backward, (grad_output, target), {"num_classes": num_classes})


def cross_entropy(input, target, reduction="mean"):
    """Softmax cross-entropy of logits ``input`` against integer classes ``target``.

    ``nll_loss(log_softmax(input, dim=1), target)`` (PyTorch's definition).

    Args:
        input (Tensor): (N, C) logits, or (C,) for one sample.
        target (Tensor): (N,) int64 class indices (0-d for one sample).
        reduction (str): ``'mean'`` (default) or ``'sum'``.

    Returns:
        0-d Tensor.

    Raises:
        as ``nll_loss``; RuntimeError for input that is not 1-D or 2-D.
    """
    as_tensor_arg(input, "cross_entropy")
    as_tensor_arg(target, "cross_entropy", "target")
    if input.ndim == 1:
        input = input.unsqueeze(0)
        target = target.reshape(1)
    elif input.ndim != 2:
        raise RuntimeError(f"cross_entropy(): expected input of shape (N, C) or (C,), got "
                           f"{list(input.shape)}")
    return nll_loss(log_softmax(input, 1), target, reduction)
