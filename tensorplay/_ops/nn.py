"""Neural-network primitives: ``log_softmax`` and the negative log-likelihood loss
(class weights, ``ignore_index``, every reduction, (N, C, d1, ...) inputs), and
``cross_entropy`` composed of the two (with label smoothing and probability
targets).  The other losses are in ``loss.py``, the norms in ``norm.py``.

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
    "nll_loss", TensorArg("input", "f", min_ndim=1, exc=RuntimeError),
    TensorArg("target", "i", exc=RuntimeError)))
_check_nll_loss_backward = declare(Signature(
    "nll_loss_backward", TensorArg("grad_output", "f", exc=RuntimeError),
    TensorArg("target", "i", exc=RuntimeError), IntArg("num_classes", lo=0)))
_check_cross_entropy = declare(Signature(
    "cross_entropy", TensorArg("input", "f", min_ndim=1, exc=RuntimeError),
    TensorArg("target", "if", exc=RuntimeError)))


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


# ---------------------------------------------------------------- nll_loss
# nll(logp, t) on an (N, C, K) view of (N, C, d1, ..., dk) log-probabilities and
# (N, K) targets:  L[i, k] = -w[t] logp[i, t, k] (0 where t == ignore_index),
# reduced by 'none', 'sum' or the weighted mean  sum L / sum_{not ignored} w[t]
# (PyTorch's).  The divisor depends on the targets and the weights only, so the
# loss is linear in logp: its VJP scatters (nll_loss_backward), whose adjoint is
# nll_loss again.  The class weights are a parameter (a private copy), not an
# input: PyTorch's nll_loss has no derivative for them either.
_REDUCTIONS = ("none", "mean", "sum")


def _nk(shape):
    """(N, C, K) of an (N, C, d1, ...) shape."""
    return shape[0], shape[1], math.prod(shape[2:])


def _nll_fwd(logp, target, reduction, ignore_index, weight):
    n, c, k = _nk(logp.shape)
    x3 = np.ascontiguousarray(logp).reshape(n, c, k)
    t2 = target.reshape(n, k)
    if reduction == "none":
        out = np.empty(target.shape, logp.dtype)
        _kn.nll_fwd(x3, t2, weight, out.reshape(n, k), ignore_index, CONFIG.num_threads)
        return out
    s, ws = _kn.nll_fwd(x3, t2, weight, None, ignore_index, CONFIG.num_threads)
    if reduction == "mean":     # no (or only zero-weight) targets: 0/0, nan as PyTorch
        s = s / ws if ws != 0 else (math.nan if s == 0 or s != s
                                    else math.copysign(math.inf, s))
    return np.array(s, logp.dtype)


def _nll_backward_fwd(g, target, num_classes, reduction, ignore_index, weight):
    n = target.shape[0]
    k = math.prod(target.shape[1:])
    out = pool_empty((n, num_classes) + target.shape[1:], g.dtype)
    if out.size:
        gk = np.ascontiguousarray(g).reshape(n, k) if reduction == "none" else None
        _kn.nll_vjp(target.reshape(n, k), weight, gk,
                    0.0 if gk is not None else float(g), reduction == "mean",
                    out.reshape(n, num_classes, k), ignore_index, CONFIG.num_threads)
    elif target.size:           # C == 0: every target must be ignored (check them)
        _kn.nll_vjp(target.reshape(n, k), None, None, 0.0, False,
                    np.empty((n, 0, k), g.dtype), ignore_index, 1)
    return out


def _nll_vjp(g, out, logp, target, reduction, ignore_index, weight):
    return apply(_nll_loss_backward, (g, target),
                 {"num_classes": logp.shape[1], "reduction": reduction,
                  "ignore_index": ignore_index, "weight": weight})


def _nll_jvp(ts, out, logp, target, reduction, ignore_index, weight):
    return _nll(ts[0], target, reduction, ignore_index, weight)


_nll_loss = defop("nll_loss", _nll_fwd, vjp=(_nll_vjp, None), jvp=_nll_jvp,
                  saves=("inputs",))
# nll_loss_backward is linear in g; its adjoint is nll_loss itself.
_nll_loss_backward = defop(
    "nll_loss_backward", _nll_backward_fwd,
    vjp=(lambda gb, out, g, target, num_classes, reduction, ignore_index, weight:
         _nll(gb, target, reduction, ignore_index, weight), None),
    jvp=lambda ts, out, g, target, num_classes, reduction, ignore_index, weight:
        apply(_nll_loss_backward, (ts[0], target),
              {"num_classes": num_classes, "reduction": reduction,
               "ignore_index": ignore_index, "weight": weight}),
    saves=("inputs",))


def _nll(logp, target, reduction, ignore_index=-100, weight=None):
    return apply(_nll_loss, (logp, target),
                 {"reduction": reduction, "ignore_index": ignore_index, "weight": weight})


def reduction_arg(op, reduction, size_average=None, reduce=None, allowed=_REDUCTIONS):
    """The reduction string, from PyTorch's deprecated ``size_average``/``reduce``
    when either is given (with PyTorch's warning); ValueError for an unknown one."""
    if size_average is not None or reduce is not None:
        import warnings
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = ("mean" if size_average else "sum") if reduce else "none"
        warnings.warn("size_average and reduce args will be deprecated, please use "
                      f"reduction='{reduction}' instead.", UserWarning, stacklevel=3)
    if not isinstance(reduction, str) or reduction not in allowed:
        raise ValueError(f"{op}(): {reduction!r} is not a valid value for reduction "
                         f"(expected one of {', '.join(map(repr, allowed))})")
    return reduction


def _check_target(logp, target, op):
    """The (N, d1, ...) class target of (N, C, d1, ...) log-probabilities as a
    C-contiguous int64 Tensor (a private copy unless it already is one); shape
    errors as PyTorch's.  Values are checked by the kernels where they read them
    (IndexError), never here: a check here could be raced."""
    shape, tshape = logp._data.shape, target._data.shape
    if len(shape) == 2 and len(tshape) != 1:
        raise RuntimeError(f"{op}(): 0D or 1D target tensor expected, multi-target not "
                           f"supported (input {list(shape)}, target {list(tshape)})")
    if not tshape or tshape[0] != shape[0]:
        raise ValueError(f"{op}(): Expected input batch_size ({shape[0]}) to match target "
                         f"batch_size ({tshape[0] if tshape else 'none: 0-d'}).")
    if tshape != shape[:1] + shape[2:]:
        raise RuntimeError(f"{op}(): Expected target size {list(shape[:1] + shape[2:])}, "
                           f"got {list(tshape)} (input {list(shape)})")
    if type(target._data) is _B.BatchedArray:
        # under vmap the values are per example: the nll kernels, run once per
        # example by the primitive's loop, check each target where they read it
        return target if target._data.dtype == np.int64 else target.long()
    t = np.ascontiguousarray(target._data, dtype=np.int64)
    if t is target._data:
        # the user's own tensor: the node saves it with its version counter, so an
        # in-place change before backward raises instead of changing the gradient
        return target
    return Tensor._wrap(t)      # a private int64 copy: later changes cannot reach it


def _weight_arg(weight, c, dtype, op):
    """The class weights as a private C-contiguous (C,) array of ``dtype``, or None."""
    if weight is None:
        return None
    if not isinstance(weight, Tensor):
        raise TypeError(f"{op}(): argument 'weight' must be Tensor, not "
                        f"{type(weight).__name__}")
    if type(weight._data) is _B.BatchedArray:
        raise NotImplementedError(f"{op}(): a class weight batched by vmap is not "
                                  f"supported; pass one weight for every example")
    if weight._data.dtype.kind not in "fiub":
        raise RuntimeError(f"{op}(): weight must be a real tensor, got {weight.dtype}")
    if weight._data.shape != (c,):
        raise RuntimeError(f"{op}(): weight tensor should be defined either for all {c} "
                           f"classes or no classes but got weight tensor of shape: "
                           f"{list(weight._data.shape)}")
    return np.array(weight._data, dtype=dtype, order="C", copy=True)


def _index_arg(ignore_index, op):
    if isinstance(ignore_index, (bool, np.bool_)) or not isinstance(
            ignore_index, (int, np.integer)):
        raise TypeError(f"{op}(): argument 'ignore_index' must be int, not "
                        f"{type(ignore_index).__name__}")
    if not -2 ** 63 <= ignore_index < 2 ** 63:
        raise RuntimeError(f"{op}(): ignore_index {ignore_index} does not fit in int64")
    return int(ignore_index)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log-likelihood of class ``target`` under log-probabilities ``input``
    (``torch.nn.functional.nll_loss``).

    ``L[i, d] = -weight[t] * input[i, t, d]`` with ``t = target[i, d]``, and 0 where
    ``t == ignore_index``.

    Args:
        input (Tensor): (N, C), (N, C, d1, ..., dk) or unbatched (C,)
            log-probabilities, float32 or float64.
        target (Tensor): (N,), (N, d1, ..., dk) or 0-d integer class indices in
            ``[0, C)`` or equal to ``ignore_index``.
        weight (Tensor, optional): (C,) class weights (cast to input's dtype; no
            gradient flows to them, as in PyTorch).
        size_average, reduce: PyTorch's deprecated spellings of ``reduction``.
        ignore_index (int): a target value that contributes nothing (default -100).
        reduction (str): ``'none'`` (the (N, d1, ...) losses), ``'sum'``, or
            ``'mean'`` (default): ``sum L / sum of weight[t] over the targets not
            ignored``, PyTorch's weighted mean; nan when every target is ignored
            or N = 0 (the sum is then 0).

    Raises:
        RuntimeError: non-integer target, input of 0 dims or not floating, a
        target of the wrong size, a weight that is not (C,).  ValueError: batch
        sizes that differ, an unknown reduction.  IndexError: a target outside
        ``[0, C)`` that is not ``ignore_index`` (checked in the kernel).
    """
    input, target = _check_nll_loss(input, target)
    reduction = reduction_arg("nll_loss", reduction, size_average, reduce)
    ii = _index_arg(ignore_index, "nll_loss")
    unbatched = input.ndim == 1
    if unbatched:
        if target.ndim != 0:
            raise RuntimeError(f"nll_loss(): for an unbatched (C,) input the target must "
                               f"be 0-d, got shape {list(target.shape)}")
        input, target = input.unsqueeze(0), target.reshape(1)
    t = _check_target(input, target, "nll_loss")
    w = _weight_arg(weight, input.shape[1], input._data.dtype, "nll_loss")
    out = _nll(input, t, reduction, ii, w)
    return out.reshape(()) if unbatched and reduction == "none" else out


def nll_loss_backward(grad_output, target, num_classes, reduction="mean", weight=None,
                      ignore_index=-100):
    """``nll_loss``'s VJP: zeros of shape (N, C, d1, ...) with
    ``-weight[t] * grad_output[i, d] / D`` at ``[i, t, d]``, ``t = target[i, d]`` not
    ``ignore_index`` (D = the total weight of those targets for ``'mean'``, else 1;
    ``grad_output`` is 0-d for ``'mean'``/``'sum'``, of the target's shape for
    ``'none'``).

    Args:
        grad_output (Tensor): the cotangent, float32 or float64.
        target (Tensor): (N, d1, ...) integer classes.
        num_classes (int): C >= 0.
        reduction, weight, ignore_index: as ``nll_loss``.

    Raises:
        RuntimeError: a grad_output of the wrong shape, a negative num_classes.
        TypeError: num_classes not an int.  ValueError: an unknown reduction.
        IndexError: a bad target (kernel).
    """
    grad_output, target, c = _check_nll_loss_backward(grad_output, target, num_classes)
    reduction = reduction_arg("nll_loss_backward", reduction)
    ii = _index_arg(ignore_index, "nll_loss_backward")
    if target.ndim == 0:
        raise RuntimeError("nll_loss_backward(): target must have a batch dim (N, ...)")
    want = tuple(target.shape) if reduction == "none" else ()
    if tuple(grad_output.shape) != want:
        raise RuntimeError(f"nll_loss_backward(): grad_output must have shape "
                           f"{list(want)} for reduction={reduction!r}, got "
                           f"{list(grad_output.shape)}")
    shape = (target.shape[0], c) + tuple(target.shape[1:])
    like = Tensor._wrap(np.broadcast_to(np.empty(()), shape))    # shape only
    t = _check_target(like, target, "nll_loss_backward")
    w = _weight_arg(weight, c, grad_output._data.dtype, "nll_loss_backward")
    return apply(_nll_loss_backward, (grad_output, t),
                 {"num_classes": c, "reduction": reduction, "ignore_index": ii, "weight": w})


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Softmax cross-entropy of logits ``input`` (``torch.nn.functional.cross_entropy``).

    Class-index targets (integer): ``nll_loss(log_softmax(input, 1), target, ...)``.
    With ``label_smoothing = e`` (PyTorch's formula):
    ``(1 - e) * nll + (e / C) * S``, ``S[i, d] = -sum_c weight[c] logp[i, c, d]`` (0
    where ignored), reduced as nll (the mean divides by the same total weight).

    Probability targets (floating, the input's shape): ``L = -sum_c weight[c]
    q[c] logp[c]`` with ``q = (1 - e) target + e / C``; ``'mean'`` divides the sum by
    the number of samples N*d1*...*dk (not by weights); ``ignore_index`` does not
    apply.  The gradient reaches the target too.

    Args:
        input (Tensor): (N, C), (N, C, d1, ..., dk) or unbatched (C,) logits.
        target (Tensor): class indices of shape (N,), (N, d1, ...), 0-d; or class
            probabilities of the input's shape.
        weight (Tensor, optional): (C,) class weights.
        ignore_index (int): default -100 (class-index targets only).
        reduction (str): ``'none'``, ``'mean'`` (default) or ``'sum'``.
        label_smoothing (float): in [0, 1], default 0.

    Returns:
        0-d Tensor, or the per-sample losses for ``'none'``.

    Raises:
        as ``nll_loss``; RuntimeError for a 0-d input, a label_smoothing outside
        [0, 1], probability targets of another shape.
    """
    input, target = _check_cross_entropy(input, target)
    reduction = reduction_arg("cross_entropy", reduction, size_average, reduce)
    if isinstance(label_smoothing, bool) or not isinstance(label_smoothing, (int, float)):
        raise TypeError(f"cross_entropy(): argument 'label_smoothing' must be float, not "
                        f"{type(label_smoothing).__name__}")
    ls = float(label_smoothing)
    if not 0.0 <= ls <= 1.0:
        raise RuntimeError(f"cross_entropy(): label_smoothing must be between 0.0 and 1.0. "
                           f"Got: {label_smoothing}")
    if input.ndim == 0:
        raise RuntimeError("cross_entropy(): expected input of shape (C,), (N, C) or "
                           "(N, C, d1, ...), got a 0-d tensor")
    cdim = 1 if input.ndim >= 2 else 0
    logp = log_softmax(input, cdim)
    if target._data.dtype.kind == "f":
        if ignore_index != -100:
            raise RuntimeError("cross_entropy(): ignore_index is not supported for floating "
                               "point target")
        return _cross_entropy_probs(logp, target, weight, reduction, ls, cdim)
    if target._data.dtype.kind not in "iu":
        raise RuntimeError(f"cross_entropy(): expected target of an integer dtype (class "
                           f"indices) or of the input's floating dtype (probabilities), got "
                           f"{target.dtype}")
    nll = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if ls == 0.0:
        return nll
    c = input.shape[cdim]
    w = None if weight is None else Tensor._wrap(
        _weight_arg(weight, c, input._data.dtype, "cross_entropy"))
    wview = None if w is None else w.reshape((c,) + (1,) * (input.ndim - cdim - 1))
    smooth = -((logp if w is None else logp * wview).sum(cdim))
    keep_b = target != ignore_index
    keep = keep_b.to(input.dtype)
    smooth = smooth.where(keep_b, 0.0)      # ignored: 0 (PyTorch's masked_fill), even nan
    if reduction == "mean":
        if w is None:
            denom = keep.sum()
        else:
            denom = (w[target.long().clamp(0, c - 1)] * keep).sum()
        ret = smooth.sum() / denom
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth
    return nll * (1.0 - ls) + ret * (ls / c)


def _cross_entropy_probs(logp, target, weight, reduction, ls, cdim):
    if tuple(target.shape) != tuple(logp.shape):
        raise RuntimeError(f"cross_entropy(): expected target dtype to be int64 (class "
                           f"indices) or a float target of the input's shape "
                           f"{list(logp.shape)} (class probabilities), but got a "
                           f"{target.dtype} target of shape {list(target.shape)}")
    if target._data.dtype != logp._data.dtype:
        target = target.to(logp.dtype)
    c = logp.shape[cdim]
    if ls > 0.0:
        target = target * (1.0 - ls) + ls / c
    prod = logp * target
    if weight is not None:
        _weight_arg(weight, c, logp._data.dtype, "cross_entropy")      # checks only
        w = weight if weight._data.dtype == logp._data.dtype else weight.to(logp.dtype)
        prod = prod * w.reshape((c,) + (1,) * (logp.ndim - cdim - 1))
    loss = -(prod.sum(cdim))
    if reduction == "none":
        return loss
    total = loss.sum()
    if reduction == "sum":
        return total
    return total / (logp._data.size // c if c else 0) if logp._data.size else total * math.nan
