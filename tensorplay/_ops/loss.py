"""Losses and distances of ``torch.nn.functional`` (issue 9), as compositions of
registered primitives.

Each loss here touches its operands a few times (a difference, a square or an
abs, a reduction); a fused kernel would save passes over memory, not arithmetic,
and the compositions inherit VJPs, JVPs, second order and vmap from their
primitives.  Measured against torch in docs/DECISIONS.md ("Losses and
normalisation").  ``nll_loss`` and ``cross_entropy`` (a kernel of their own) are
in ``nn.py``.

Reductions follow PyTorch: ``'mean'`` over every element (``kl_div`` also has
``'batchmean'``: the sum over the batch size), ``'sum'``, ``'none'`` (the
elementwise losses).  The deprecated ``size_average``/``reduce`` arguments map
to ``reduction`` with PyTorch's warning.
"""
import math
import warnings

import numpy as np

from tensorplay._ops._common import broadcast_shape, promote
from tensorplay._ops._validate import Signature, TensorArg, declare
from tensorplay._ops.nn import reduction_arg
from tensorplay._tensor import Tensor

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "cosine_similarity",
           "pairwise_distance"]
# PyTorch has these under torch.nn.functional (a few also as torch.<name>):
# bound in tensorplay._ops, exported from tensorplay.nn.functional only.
INTERNAL = list(__all__)


def _declare2(op):
    # integer operands: NotImplementedError (a RuntimeError), as PyTorch's "mse_cpu"
    # not implemented for 'Long'
    return declare(Signature(op, TensorArg("input", "f"), TensorArg("target", "f")))


_CHECKS = {op: _declare2(op) for op in
           ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
            "binary_cross_entropy_with_logits", "kl_div")}
_check_cos = declare(Signature("cosine_similarity", TensorArg("x1", "f", exc=RuntimeError),
                               TensorArg("x2", "f", exc=RuntimeError)))
_check_pdist = declare(Signature("pairwise_distance", TensorArg("x1", "f", exc=RuntimeError),
                                 TensorArg("x2", "f", exc=RuntimeError)))


def _operands(op, input, target, same_size=False):
    """Validated, promoted (input, target); a size mismatch warns (PyTorch: the
    losses broadcast) or raises ValueError (``same_size``: the BCE losses)."""
    input, target = _CHECKS[op](input, target)
    if input._data.dtype != target._data.dtype:
        input, target = promote(input, target, op)
    a, b = tuple(input._data.shape), tuple(target._data.shape)
    if a != b:
        if same_size:
            raise ValueError(f"{op}(): Using a target size ({list(b)}) that is different "
                             f"to the input size ({list(a)}) is deprecated. Please ensure "
                             f"they have the same size.")
        broadcast_shape(a, b, op)       # RuntimeError when they do not broadcast
        warnings.warn(f"{op}(): Using a target size ({list(b)}) that is different to the "
                      f"input size ({list(a)}). This will likely lead to incorrect results "
                      f"due to broadcasting. Please ensure they have the same size.",
                      UserWarning, stacklevel=3)
    return input, target


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def _number(v, op, arg):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.floating,
                                                             np.integer)):
        raise TypeError(f"{op}(): argument '{arg}' must be float, not {type(v).__name__}")
    return float(v)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error ``(input - target)**2``, reduced.

    Args:
        input, target (Tensor): float32/float64 of one shape (other broadcastable
            shapes warn, as PyTorch).
        reduction (str): ``'mean'`` (default), ``'sum'`` or ``'none'``.
        weight (Tensor, optional): broadcastable elementwise weights (PyTorch 2.6+).

    Raises:
        RuntimeError: non-float operands, shapes that do not broadcast.
        ValueError: an unknown reduction.  TypeError: a non-Tensor.
    """
    input, target = _operands("mse_loss", input, target)
    reduction = reduction_arg("mse_loss", reduction, size_average, reduce)
    loss = (input - target).square()     # one fused backward (2 d g), not mul's two
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error ``|input - target|`` (gradient 0 at equality, as
    PyTorch's sign), reduced; arguments and errors as ``mse_loss``."""
    input, target = _operands("l1_loss", input, target)
    reduction = reduction_arg("l1_loss", reduction, size_average, reduce)
    loss = (input - target).abs()
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _quadratic_linear(d, beta, scale_quadratic):
    """``0.5 d^2 / beta`` (or ``0.5 d^2`` when not scaled) for ``|d| < beta``, else
    the linear continuation; the kink's derivative is the linear side's."""
    a = d.abs()
    quad = d.square() * (0.5 / beta if scale_quadratic else 0.5)
    lin = a - 0.5 * beta if scale_quadratic else (a - 0.5 * beta) * beta
    return quad.where(a < beta, lin)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean",
                   beta=1.0):
    """``0.5 d^2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (``d = input -
    target``); ``beta = 0`` is ``l1_loss`` (PyTorch).

    Raises:
        RuntimeError: a negative beta (PyTorch: "smooth_l1_loss does not support
        negative values for beta."); otherwise as ``mse_loss``.
    """
    input, target = _operands("smooth_l1_loss", input, target)
    reduction = reduction_arg("smooth_l1_loss", reduction, size_average, reduce)
    beta = _number(beta, "smooth_l1_loss", "beta")
    if beta < 0:
        raise RuntimeError("smooth_l1_loss(): smooth_l1_loss does not support negative "
                           f"values for beta (got {beta}).")
    d = input - target
    loss = d.abs() if beta == 0.0 else _quadratic_linear(d, beta, True)
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``0.5 d^2`` where ``|d| < delta``, else
    ``delta (|d| - 0.5 delta)``: ``delta * smooth_l1_loss(beta=delta)`` (PyTorch).

    Raises:
        RuntimeError: delta <= 0 (PyTorch: "huber_loss does not support non-positive
        values for delta."); otherwise as ``mse_loss``.
    """
    input, target = _operands("huber_loss", input, target)
    reduction = reduction_arg("huber_loss", reduction)
    delta = _number(delta, "huber_loss", "delta")
    if not delta > 0:
        raise RuntimeError("huber_loss(): huber_loss does not support non-positive values "
                           f"for delta (got {delta}).")
    loss = _quadratic_linear(input - target, delta, False)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _weighted(loss, weight, op):
    if weight is None:
        return loss
    if not isinstance(weight, Tensor):
        raise TypeError(f"{op}(): argument 'weight' must be Tensor, not "
                        f"{type(weight).__name__}")
    broadcast_shape(tuple(weight._data.shape), tuple(loss._data.shape), op)
    if weight._data.dtype != loss._data.dtype:
        weight = weight.to(loss.dtype)
    return loss * weight


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """``-w (t log(x) + (1 - t) log(1 - x))`` of probabilities ``x = input``, each log
    clamped at -100 (PyTorch's), so ``x`` of 0 or 1 gives a finite loss.

    Args:
        input (Tensor): probabilities in [0, 1]; target (Tensor): the same shape.
        weight (Tensor, optional): broadcastable to the input (rescales each element).

    Raises:
        ValueError: a target of another size.  RuntimeError: an input outside
        [0, 1] (PyTorch: "all elements of input should be between 0 and 1"),
        non-float operands.
    """
    input, target = _operands("binary_cross_entropy", input, target, same_size=True)
    reduction = reduction_arg("binary_cross_entropy", reduction, size_average, reduce)
    from tensorplay._ops._batching import BatchedArray
    x = input._data
    if type(x) is not BatchedArray and x.size and not (
            (x >= 0).all() and (x <= 1).all()):
        raise RuntimeError("binary_cross_entropy(): all elements of input should be "
                           "between 0 and 1")
    return _reduce(_weighted(_bce_elementwise(input, target), weight,
                             "binary_cross_entropy"), reduction)


def _bce_terms(x, t):
    log_x = x.log().clamp_min(-100.0)
    log_1mx = (1.0 - x).log().clamp_min(-100.0)
    return -(t * (log_x - log_1mx) + log_1mx)


# PyTorch's EPSILON of the BCE backward: 1e-12 rounded to float32 (9.99999996e-13),
# in float64 too (its kernel holds it in a float)
_BCE_EPS = float(np.float32(1e-12))


def _bce_elementwise(x, t):
    """The unreduced BCE with PyTorch's input gradient at the edges.

    Where ``x (1 - x) >= 1e-12`` this is the composition of clamped logs (its
    gradient is ``(x - t) / (x (1 - x))``, every order).  Elsewhere (``x`` exactly 0
    or 1, or within 1e-12 of them) PyTorch's backward does not differentiate its
    forward: it uses ``(x - t) / max(x (1 - x), 1e-12)``.  Those entries get that
    first derivative through a detached surrogate (zero in value), and their
    higher input derivatives are 0 (PyTorch's are ``~1/eps^2``).  The target's
    gradient there is the clamped ``log(1 - x) - log(x)`` (+-100 at exactly 0 or
    1; PyTorch's ``-logit(x)`` is infinite, which a zero-valued composition cannot
    carry: ``0 * inf`` is nan).
    """
    from tensorplay._ops.elementwise import where
    from tensorplay.autograd.grad_mode import no_grad
    with no_grad():
        prod = x * (1.0 - x)
        edge = prod < _BCE_EPS
        from tensorplay._ops._batching import BatchedArray
        # under vmap the values cannot be read: take the general path
        any_edge = type(edge._data) is BatchedArray or bool(edge.any())
        if any_edge:
            d_x = (x - t) / prod.clamp_min(_BCE_EPS)
    if not any_edge:
        return _bce_terms(x, t)
    x0 = x.detach()
    inner = _bce_terms(where(edge, 0.5, x), t)       # finite; where cuts its gradient
    outer = _bce_terms(x0, t) + (x - x0) * d_x
    return where(edge, outer, inner)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """``-w (p t log s(x) + (1 - t) log(1 - s(x)))`` of logits ``x`` (``s`` the
    sigmoid), computed stably as ``(1 - t) x - (1 + (p - 1) t) logsigmoid(x)``
    (PyTorch's form; ``p`` = ``pos_weight``, broadcast along the last dim: one
    per class).

    Raises:
        ValueError: a target of another size.  RuntimeError: non-float operands,
        weights that do not broadcast.
    """
    op = "binary_cross_entropy_with_logits"
    input, target = _operands(op, input, target, same_size=True)
    reduction = reduction_arg(op, reduction, size_average, reduce)
    ls = input.logsigmoid() if hasattr(input, "logsigmoid") else _logsigmoid(input)
    if pos_weight is None:
        loss = (1.0 - target) * input - ls
    else:
        if not isinstance(pos_weight, Tensor):
            raise TypeError(f"{op}(): argument 'pos_weight' must be Tensor, not "
                            f"{type(pos_weight).__name__}")
        broadcast_shape(tuple(pos_weight._data.shape), tuple(input._data.shape), op)
        if pos_weight._data.dtype != input._data.dtype:
            pos_weight = pos_weight.to(input.dtype)
        loss = (1.0 - target) * input - (1.0 + (pos_weight - 1.0) * target) * ls
    return _reduce(_weighted(loss, weight, op), reduction)


def _logsigmoid(x):
    from tensorplay._ops.activation import logsigmoid
    return logsigmoid(x)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean",
           log_target=False):
    """Kullback-Leibler divergence of log-probabilities ``input`` from ``target``:
    ``target * (log(target) - input)`` (``xlogy``: 0 where target is 0), or
    ``exp(target) * (target - input)`` with ``log_target=True``.

    The gradient with respect to a target entry that is 0 is nan with
    ``log_target=False``, as PyTorch 2.13's (``d/dt t log t`` at 0), and finite
    with ``log_target=True``.

    ``reduction='batchmean'`` is the sum divided by ``input.size(0)`` (the
    mathematical KL divergence); ``'mean'`` divides by the number of elements
    (PyTorch keeps it, with a warning, for backward compatibility).

    Raises:
        ValueError: an unknown reduction.  RuntimeError: non-float operands.
    """
    input, target = _operands("kl_div", input, target)
    reduction = reduction_arg("kl_div", reduction, size_average, reduce,
                              allowed=("none", "batchmean", "sum", "mean"))
    if log_target is not True and log_target is not False:
        raise TypeError(f"kl_div(): argument 'log_target' must be bool, not "
                        f"{type(log_target).__name__}")
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size "
                      "and the support size.'batchmean' divides only by the batch size, "
                      "and aligns with the KL div math definition.'mean' will be changed "
                      "to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        from tensorplay._ops.binary import xlogy
        loss = xlogy(target, target) - target * input
        if target.requires_grad:
            loss = loss + _nan_grad_at_zeros(target)
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.ndim else total
    return _reduce(loss, reduction)


def _nan_grad_at_zeros(t):
    """A term that is exactly 0 and whose gradient is nan where ``t == 0``.

    PyTorch's ``kl_div`` target gradient is ``log(t) + 1 - input``, nan at ``t = 0``
    (its xlogy's VJP for ``other`` is ``g t / t``); tensorplay's kernels are
    strong-zero (a zero cotangent or factor gives 0, never nan), so the nan is
    made explicitly: ``sqrt(z) - sqrt(z)`` at ``z = 0`` has gradient ``inf - inf``.
    """
    from tensorplay._ops.elementwise import where
    z = where(t == 0, t - t.detach(), 0.0)
    return z.sqrt() - z.sqrt()


def _dim(dim, ndim, op):
    if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{op}(): Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    return int(dim) % n


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``sum(x1/max(|x1|, eps) * x2/max(|x2|, eps), dim)``: PyTorch's form (each
    operand divided by its own clamped norm, so the result stays in [-1, 1]).
    The operands broadcast; the gradient through a clamped norm is 0 (PyTorch's
    clamp runs under no_grad instead; they differ only where |x| < eps).

    Raises:
        RuntimeError: shapes that do not broadcast, non-float operands.
        IndexError: dim out of range.
    """
    from tensorplay._ops.reduce_norm import vector_norm
    x1, x2 = _check_cos(x1, x2)
    if x1._data.dtype != x2._data.dtype:
        x1, x2 = promote(x1, x2, "cosine_similarity")
    shape = broadcast_shape(tuple(x1._data.shape), tuple(x2._data.shape),
                            "cosine_similarity")
    eps = _number(eps, "cosine_similarity", "eps")
    d = _dim(dim, len(shape), "cosine_similarity")
    if tuple(x1.shape) != shape:
        x1 = x1.expand(shape)
    if tuple(x2.shape) != shape:
        x2 = x2.expand(shape)
    if not shape:
        x1, x2 = x1.reshape(1), x2.reshape(1)
    n1 = vector_norm(x1, 2, dim=d, keepdim=True).clamp_min(eps)
    n2 = vector_norm(x2, 2, dim=d, keepdim=True).clamp_min(eps)
    out = ((x1 / n1) * (x2 / n2)).sum(d)
    return out.reshape(()) if not shape else out


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``||x1 - x2 + eps||_p`` over the last dim (PyTorch; the operands broadcast;
    0-d and 1-D operands give a 0-d result).

    Raises:
        RuntimeError: shapes that do not broadcast, non-float operands.
    """
    from tensorplay._ops.reduce_norm import vector_norm
    x1, x2 = _check_pdist(x1, x2)
    if x1._data.dtype != x2._data.dtype:
        x1, x2 = promote(x1, x2, "pairwise_distance")
    broadcast_shape(tuple(x1._data.shape), tuple(x2._data.shape), "pairwise_distance")
    p = _number(p, "pairwise_distance", "p")
    eps = _number(eps, "pairwise_distance", "eps")
    if keepdim is not True and keepdim is not False:
        raise TypeError("pairwise_distance(): argument 'keepdim' must be bool")
    d = x1 - x2 + eps
    if d.ndim == 0:
        return vector_norm(d.reshape(1), p, dim=0, keepdim=False)
    return vector_norm(d, p, dim=-1, keepdim=keepdim and d.ndim > 1)


del math
