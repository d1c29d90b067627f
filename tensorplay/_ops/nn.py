"""Neural-network primitives: ``log_softmax`` and the negative log-likelihood loss,
and ``cross_entropy`` composed of the two.

``cross_entropy(x, t) = nll_loss(log_softmax(x, 1), t)``: a composition, not a
fused primitive.  The loss touches an (N, C) array a handful of times per step
either way; the composition keeps every rule a one-liner over registered
primitives, so second derivatives and forward mode come for free.
"""
import math

import numpy as np

from tensorplay._pool import empty as pool_empty
from tensorplay._kernels import nn as _kn
from tensorplay._ops._common import CONFIG, as_tensor_arg, promote
from tensorplay._ops._validate import (DimArg, IntArg, Signature, TensorArg, declare,
                                       renamed_error)
from tensorplay._ops.registry import apply, defop, tangent_sum
from tensorplay._ops import _batching as _B
from tensorplay._tensor import Tensor

__all__ = ["log_softmax", "softmax", "log_softmax_backward", "nll_loss", "nll_loss_backward",
           "cross_entropy"]

# The declared arguments (tensorplay/_ops/_validate.py); tests/test_fuzz.py draws
# valid and invalid calls from them.
_check_log_softmax = declare(Signature(
    "log_softmax", TensorArg("input", "f", exc=RuntimeError), DimArg("dim")))
_check_log_softmax_backward = declare(Signature(
    "log_softmax_backward", TensorArg("grad_output", "f"), TensorArg("output", "f"),
    DimArg("dim", of="output"), same_shape=("grad_output", "output")))
_check_nll_loss = declare(Signature(
    "nll_loss", TensorArg("input", "f", min_ndim=2, exc=RuntimeError),
    TensorArg("target", "i", exc=RuntimeError)))
_check_nll_loss_backward = declare(Signature(
    "nll_loss_backward", TensorArg("grad_output", "f", exc=RuntimeError),
    TensorArg("target", "i", exc=RuntimeError), IntArg("num_classes", lo=0)))
_check_cross_entropy = declare(Signature(
    "cross_entropy", TensorArg("input", "f", min_ndim=1, exc=RuntimeError),
    TensorArg("target", "i", exc=RuntimeError)))


def _arr(shape, dim):
    """The (A, R, B) view of ``shape`` with ``dim`` as R."""
    return (math.prod(shape[:dim]), shape[dim] if shape else 1, math.prod(shape[dim + 1:]))


def _log_softmax_fwd(x, dim):
    out = pool_empty(x.shape, x.dtype)
    if out.size:
        arr = _arr(x.shape, dim)
        _kn.log_softmax_fwd(np.ascontiguousarray(x).reshape(arr), out.reshape(arr),
                            CONFIG.num_threads)
    return out


def _log_softmax_backward_fwd(g, y, dim):
    out = pool_empty(y.shape, y.dtype)
    if out.size:
        arr = _arr(y.shape, dim)
        _kn.log_softmax_vjp(np.ascontiguousarray(g).reshape(arr),
                            np.ascontiguousarray(y).reshape(arr), out.reshape(arr),
                            CONFIG.num_threads)
    return out


# y = x - logsumexp(x):  VJP  g - exp(y) sum(g)  (fused: log_softmax_backward);
#                        JVP  t - sum(exp(y) t).
_log_softmax = defop(
    "log_softmax", _log_softmax_fwd,
    vjp=(lambda g, out, x, dim: log_softmax_backward(g, out, dim),),
    jvp=lambda ts, out, x, dim: ts[0] - (out.exp() * ts[0]).sum(dim, keepdim=True),
    saves=("out",), batch=_B.dims_rule("dim"))


# b(g, y) = g - exp(y) S,  S = sum(g, dim).  Linear in g, with adjoint
# gb -> gb - sum(gb exp(y), dim); elementwise in y: db/dy = -exp(y) S.
def _lsmb_vjp_g(gb, out, g, y, dim):
    return gb - (gb * y.exp()).sum(dim, keepdim=True)


def _lsmb_vjp_y(gb, out, g, y, dim):
    return -(gb * y.exp() * g.sum(dim, keepdim=True))


_log_softmax_backward = defop(
    "log_softmax_backward", _log_softmax_backward_fwd,
    vjp=(_lsmb_vjp_g, _lsmb_vjp_y),
    jvp=lambda ts, out, g, y, dim: tangent_sum(
        None if ts[0] is None else log_softmax_backward(ts[0], y, dim),
        None if ts[1] is None else -(ts[1] * y.exp() * g.sum(dim, keepdim=True))),
    saves=("inputs",), batch=_B.dims_rule("dim"))


def log_softmax_backward(grad_output, output, dim):
    """``grad_output - exp(output) * sum(grad_output, dim)``: the VJP of
    ``log_softmax`` given its output, in one kernel pass.

    Args:
        grad_output, output (Tensor): the same shape, float32 or float64.
        dim (int): the dim log_softmax normalised.

    Raises:
        RuntimeError: shapes that differ.
    """
    g, y, d = _check_log_softmax_backward(grad_output, output, dim)
    if g._data.dtype != y._data.dtype:
        g, y = promote(g, y, "log_softmax_backward")
    return apply(_log_softmax_backward, (g, y), {"dim": d})


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
    input, d = _check_log_softmax(input, dim)
    return apply(_log_softmax, (input,), {"dim": d})


def softmax(input, dim, dtype=None):
    """``exp(log_softmax(input, dim))``: probabilities that sum to 1 along ``dim``.

    Raises:
        as ``log_softmax``, naming ``softmax``.
    """
    try:
        y = log_softmax(input, dim, dtype)
    except (TypeError, IndexError, RuntimeError) as e:
        named = renamed_error(e, "log_softmax", "softmax")
        if named is None:
            raise
        raise named from None
    return y.exp()


def _nll_fwd(logp, target, reduction):
    n = logp.shape[0]
    if n == 0:      # PyTorch: the mean of no samples is nan, their sum 0
        return np.array(np.nan if reduction == "mean" else 0.0, logp.dtype)
    return np.array(_kn.nll_fwd(np.ascontiguousarray(logp), target,
                                n if reduction == "mean" else 1, CONFIG.num_threads),
                    logp.dtype)


def _nll_backward_fwd(g, target, num_classes, reduction):
    n = target.shape[0]
    out = pool_empty((n, num_classes), g.dtype)
    if out.size:
        _kn.nll_vjp(float(g), target, out, n if reduction == "mean" else 1,
                    CONFIG.num_threads)
    return out


# nll(logp, t) = -(1/D) sum_i logp[i, t_i], D = N ('mean') or 1 ('sum'): linear in
# logp; its VJP scatters -g/D.
_nll_loss = defop(
    "nll_loss", _nll_fwd,
    vjp=(lambda g, out, logp, target, reduction:
         nll_loss_backward(g, target, logp.shape[1], reduction), None),
    jvp=lambda ts, out, logp, target, reduction: _nll(ts[0], target, reduction),
    saves=("inputs",))
# nll_loss_backward is linear in g; its adjoint is nll_loss itself.
_nll_loss_backward = defop(
    "nll_loss_backward", _nll_backward_fwd,
    vjp=(lambda gb, out, g, target, num_classes, reduction: _nll(gb, target, reduction),
         None),
    jvp=lambda ts, out, g, target, num_classes, reduction:
        nll_loss_backward(ts[0], target, num_classes, reduction),
    saves=("inputs",))


def _nll(logp, target, reduction):
    return apply(_nll_loss, (logp, target), {"reduction": reduction})


def _check_target(logp, target, op):
    n, c = logp._data.shape
    if target._data.shape != (n,):
        raise ValueError(f"{op}(): expected target of shape ({n},) for input of shape "
                         f"({n}, {c}), got {tuple(target._data.shape)}")
    if type(target._data) is _B.BatchedArray:
        # under vmap the values are per example: the nll kernels, run once per
        # example by the primitive's loop, check each target where they read it
        return target if target._data.dtype == np.int64 else target.long()
    t = np.ascontiguousarray(target._data, dtype=np.int64)
    if t.size and (t.min() < 0 or t.max() >= c):
        bad = int(t.min()) if t.min() < 0 else int(t.max())
        raise IndexError(f"{op}(): target {bad} is out of bounds for {c} classes")
    if t is target._data:
        # the user's own tensor: the node saves it with its version counter, so an
        # in-place change before backward raises instead of changing the gradient
        return target
    return Tensor._wrap(t)      # a private int64 copy: later changes cannot reach it


def nll_loss(input, target, reduction="mean"):
    """Negative log-likelihood of class ``target`` under log-probabilities ``input``.

    Args:
        input (Tensor): (N, C) log-probabilities, float32 or float64.
        target (Tensor): (N,) integer class indices in ``[0, C)``.
        reduction (str): ``'mean'`` (default) or ``'sum'``.

    Returns:
        0-d Tensor.  With N = 0 the mean is nan and the sum 0 (as PyTorch).

    Raises:
        RuntimeError: non-integer target (as PyTorch) or input not 2-D floating.
        ValueError: shape mismatch or unknown reduction.  IndexError: a target
        outside ``[0, C)``.
    """
    input, target = _check_nll_loss(input, target)
    if input.ndim != 2:
        raise RuntimeError(f"nll_loss(): expected a 2-D input (N, C), got shape "
                           f"{list(input.shape)}")
    if reduction not in ("mean", "sum"):
        raise ValueError(f"nll_loss(): reduction must be 'mean' or 'sum', got {reduction!r}")
    t = _check_target(input, target, "nll_loss")
    return _nll(input, t, reduction)


def nll_loss_backward(grad_output, target, num_classes, reduction="mean"):
    """(N, C) zeros with ``-grad_output / D`` at ``[i, target[i]]``: nll_loss's VJP
    (D = N for ``reduction='mean'``, 1 for ``'sum'``).

    Args:
        grad_output (Tensor): 0-d float32/float64 cotangent of the loss.
        target (Tensor): (N,) integer classes in ``[0, num_classes)``.
        num_classes (int): C >= 0.
        reduction (str): the reduction of the loss, ``'mean'`` or ``'sum'``.

    Raises:
        RuntimeError: a grad_output that is not a 0-d float tensor, a negative
        num_classes.  TypeError: num_classes not an int.  ValueError: an unknown
        reduction.  As ``nll_loss`` for the target.
    """
    grad_output, target, c = _check_nll_loss_backward(grad_output, target, num_classes)
    if grad_output.ndim != 0:
        raise RuntimeError(f"nll_loss_backward(): grad_output must be a 0-d tensor, got "
                           f"shape {list(grad_output.shape)}")
    n = target.shape[0] if isinstance(target, Tensor) and target.ndim == 1 else -1
    if reduction not in ("mean", "sum"):
        raise ValueError(f"nll_loss_backward(): reduction must be 'mean' or 'sum', got "
                         f"{reduction!r}")
    like = Tensor._wrap(np.broadcast_to(np.empty(()), (max(n, 0), c)))    # shape only
    t = _check_target(like, target, "nll_loss_backward")
    return apply(_nll_loss_backward, (grad_output, t),
                 {"num_classes": c, "reduction": reduction})


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
    input, target = _check_cross_entropy(input, target)
    if input.ndim == 1:
        input = input.unsqueeze(0)
        target = target.reshape(1)
    elif input.ndim != 2:
        raise RuntimeError(f"cross_entropy(): expected input of shape (N, C) or (C,), got "
                           f"{list(input.shape)}")
    return nll_loss(log_softmax(input, 1), target, reduction)
