"""More losses of ``torch.nn.functional`` (issue 9, second step), as compositions of
registered primitives (each a few elementwise passes and a reduction, so their
VJPs, JVPs, second order and vmap come from the primitives).

Formulas, conventions and errors are PyTorch's (its ATen ``Loss.cpp`` and
``torch/nn/functional.py``); each docstring gives the formula.  Kinks take the
derivative PyTorch's kernels take (``max(0, z)`` has derivative 0 at z = 0).
Reductions ``'mean'`` (default), ``'sum'``, ``'none'``; the deprecated
``size_average``/``reduce`` map to ``reduction`` with PyTorch's warning.

Targets: float targets of the margin losses (±1, or 0/1 for the soft-margin
multilabel loss) are cast to the input's dtype and, as in PyTorch, their values
are not checked (``hinge_embedding_loss`` with a target 0 takes both branches'
complements, PyTorch's formula).  Class targets (``multi_margin_loss``,
``multilabel_margin_loss``) must be integer and are range-checked before any
arithmetic (PyTorch's RuntimeErrors), and then read only through the checked
gather/index kernels.
"""
import math

import numpy as np

from tensorplay._ops import _checks9 as C
from tensorplay._ops._common import broadcast_shape
from tensorplay._tensor import Tensor

__all__ = ["margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
           "multilabel_soft_margin_loss", "multilabel_margin_loss", "multi_margin_loss",
           "triplet_margin_loss", "triplet_margin_with_distance_loss",
           "cosine_embedding_loss", "poisson_nll_loss", "gaussian_nll_loss"]
INTERNAL = list(__all__)
_PAIRS = 1 << 20          # multilabel_margin_loss: (target, non-target) pairs per block


def _operands(op, *named, check=None):
    """Float Tensors (the first one's dtype for all; integer targets are cast); the
    first ``check`` of them (default all) must broadcast together."""
    first = C.tensor(op, named[0][0], named[0][1])
    out = [first]
    for name, t in named[1:]:
        C.tensor(op, name, t, "fib")
        out.append(t if t._data.dtype == first._data.dtype else t.to(first.dtype))
    shape = tuple(first.shape)
    for t in out[1:check]:
        shape = broadcast_shape(shape, tuple(t.shape), op)
    return out


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """``max(0, -target (input1 - input2) + margin)``: ``target = 1`` asks for
    ``input1 > input2`` by ``margin``, ``-1`` the opposite.

    Raises:
        RuntimeError: operands with different numbers of dims (PyTorch's "All input
        tensors should have same dimension"), shapes that do not broadcast, integer
        inputs.  ValueError: an unknown reduction.
    """
    op = "margin_ranking_loss"
    x1, x2, t = _operands(op, ("input1", input1), ("input2", input2), ("target", target))
    if not x1.ndim == x2.ndim == t.ndim:
        raise RuntimeError(f"{op}(): margin_ranking_loss : All input tensors should have "
                           f"same dimension but got sizes: input1: {list(x1.shape)}, "
                           f"input2: {list(x2.shape)}, target: {list(t.shape)}")
    margin = C.number(op, "margin", margin)
    red = C.reduction(op, reduction, size_average, reduce)
    return C.reduce((margin - t * (x1 - x2)).clamp_min(0.0), red)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """``x`` where ``target != -1`` plus ``max(0, margin - x)`` where ``target != 1``
    (PyTorch's formula: for targets in {1, -1} the usual hinge embedding loss).

    Raises:
        RuntimeError: shapes that do not broadcast, integer input.
    """
    op = "hinge_embedding_loss"
    x, t = _operands(op, ("input", input), ("target", target))
    margin = C.number(op, "margin", margin)
    red = C.reduction(op, reduction, size_average, reduce)
    loss = (margin - x).clamp_min(0.0).where(t != 1, 0.0) + x.where(t != -1, 0.0)
    return C.reduce(loss, red)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-target x))``, computed as ``-logsigmoid(target x)`` (stable for
    large margins; the same function).

    Raises:
        RuntimeError: shapes that do not broadcast, integer input.
    """
    from tensorplay._ops.activation import logsigmoid
    op = "soft_margin_loss"
    x, t = _operands(op, ("input", input), ("target", target))
    red = C.reduction(op, reduction, size_average, reduce)
    return C.reduce(-logsigmoid(t * x), red)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """``-mean_c w_c (t_c logsigmoid(x_c) + (1 - t_c) logsigmoid(-x_c))`` over the
    classes (the last dim) of ``(N, C)`` or ``(C,)`` input; ``'none'`` gives one loss
    per sample.

    Raises:
        RuntimeError: shapes that do not broadcast, integer input.
    """
    from tensorplay._ops.activation import logsigmoid
    op = "multilabel_soft_margin_loss"
    x, t = _operands(op, ("input", input), ("target", target))
    red = C.reduction(op, reduction, size_average, reduce)
    loss = -(t * logsigmoid(x) + (1 - t) * logsigmoid(-x))
    if weight is not None:
        C.tensor(op, "weight", weight)
        loss = loss * C.same_float(op, x, weight)[0]
    if x.ndim == 0:
        raise RuntimeError(f"{op}(): expected (N, C) or (C,) input, got a 0-d tensor")
    loss = loss.sum(-1) / x.shape[-1]
    return C.reduce(loss, red)


def _class_target(op, input, target):
    """Checks of a class target; its int64 values as numpy (under vmap, those of the
    whole batch: the range check covers every example)."""
    C.tensor(op, "input", input)
    if not isinstance(target, Tensor):
        raise TypeError(f"{op}(): argument 'target' must be Tensor, not "
                        f"{type(target).__name__}")
    if target._data.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): expected scalar type Long but found {target.dtype}")
    if input.ndim not in (1, 2) or 0 in tuple(input.shape)[-1:]:
        raise RuntimeError(f"{op}(): Expected non-empty vector or matrix with optional 0-dim "
                           f"batch size, but got: {list(input.shape)}")
    return C.values(target).astype(np.int64, copy=False)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """Multi-class hinge loss: ``sum_{i != y} w_y max(0, margin - x_y + x_i) ** p / C``
    per sample, for (N, C) input with class targets (N,) (or (C,) input with a 0-d or
    one-element target).

    Raises:
        ValueError: p other than 1 or 2.  RuntimeError: a non-integer target, a target
        outside ``[0, C)`` ("target out of range"), a target of another length, a
        weight that is not (C,).
    """
    from tensorplay._ops.nn_misc import one_hot
    op = "multi_margin_loss"
    t = _class_target(op, input, target)
    p = C.number(op, "p", p, integral=True) if not isinstance(p, float) else p
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    margin = C.number(op, "margin", margin)
    red = C.reduction(op, reduction, size_average, reduce)
    x = input if input.ndim == 2 else input.unsqueeze(0)
    n, c = x.shape
    flat_t = t.reshape(-1)
    tshape = tuple(target.shape)
    if math.prod(tshape) != n or (input.ndim == 2 and len(tshape) != 1):
        raise RuntimeError(f"{op}(): multi_margin_loss: target tensor should be 1-D with "
                           f"size equal to the number of input samples (batch size). "
                           f"Expected target size [{n}], but got {list(target.shape)}. "
                           f"Input has shape {list(input.shape)}.")
    if flat_t.size and (flat_t.min() < 0 or flat_t.max() >= c):
        raise RuntimeError(f"{op}(): target out of range (targets must be in [0, {c}), got "
                           f"{int(flat_t.min() if flat_t.min() < 0 else flat_t.max())})")
    ti = target.reshape(-1)
    ti = ti if ti._data.dtype == np.int64 else ti.long()
    if weight is not None:
        C.tensor(op, "weight", weight)
        if weight.ndim != 1 or weight.shape[0] != c:
            raise RuntimeError(f"{op}(): inconsistent weight size, expected {c} but got "
                               f"{list(weight.shape)}")
        (weight,) = C.same_float(op, x, weight)
    xy = x.gather(1, ti.unsqueeze(1))                       # (N, 1)
    others = 1 - one_hot(ti, c).to(x.dtype)                 # 0 at the target class
    h = (margin - xy + x).clamp_min(0.0)
    if p == 2:
        h = h.square()
    h = h * others
    if weight is not None:
        h = h * weight.index_select(0, ti).unsqueeze(1)
    loss = h.sum(1) / c
    if input.ndim == 1:
        loss = loss.reshape(()) if len(tshape) == 0 or red != "none" else loss
    return C.reduce(loss, red)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-label hinge loss: ``sum_{j in targets} sum_{i not in targets} max(0, 1 -
    (x_j - x_i)) / C`` per sample, the target classes of each row being the entries
    of ``target`` (input's shape, int64) before its first -1.

    Raises:
        RuntimeError: a non-integer target, a target of another shape ("inconsistent
        target size"), an entry outside ``[-1, C)`` (PyTorch's "argument #2 'target'
        is out of range"; entries after the first -1 are checked but not used).
    """
    op = "multilabel_margin_loss"
    t = _class_target(op, input, target)
    red = C.reduction(op, reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"{op}(): inconsistent target size: {list(target.shape)} for "
                           f"input of size: {list(input.shape)}")
    x = input if input.ndim == 2 else input.unsqueeze(0)
    n, c = x.shape
    if t.size and (t.min() < -1 or t.max() >= c):
        raise RuntimeError(f"{op}(): argument #2 'target' is out of range (entries must be "
                           f"in [-1, {c}), got {int(t.min() if t.min() < -1 else t.max())})")
    from tensorplay._creation import arange
    from tensorplay._ops.shape_join import cat
    t2 = target.reshape(n, c).long()
    used = (t2 != -1).long().cumprod(-1)            # the entries before the first -1
    hits = (t2.unsqueeze(-1) == arange(c)).to(x.dtype) * used.unsqueeze(-1).to(x.dtype)
    counts = hits.sum(1)                            # [n, j]: how often j is a target
    not_target = (counts == 0).to(x.dtype)
    # the (target j, non-target i) pairs, [n, j, i] = count(j) (1 - is_target(i)) times
    # max(0, 1 - x_j + x_i), in blocks of rows so that a block holds at most _PAIRS
    # pairs (memory O(C^2) per block, not O(N C^2))
    rows = max(1, _PAIRS // (c * c))
    parts = []
    for r0 in range(0, n, rows):
        xs, cs, nt = x[r0:r0 + rows], counts[r0:r0 + rows], not_target[r0:r0 + rows]
        m = (cs.unsqueeze(2) * nt.unsqueeze(1)).detach()
        z = (1.0 - xs.unsqueeze(2) + xs.unsqueeze(1)).clamp_min(0.0)     # [n, j, i]
        parts.append((z * m).sum((1, 2)))
    loss = (parts[0] if len(parts) == 1 else cat(parts)) / c
    if input.ndim == 1:
        loss = loss.reshape(())
    return C.reduce(loss, red)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """``max(0, margin + d(a, p) - d(a, n))`` with ``d = pairwise_distance(., ., p,
    eps)`` over the last dim (Balntas et al. 2016); ``swap`` uses ``min(d(a, n), d(p,
    n))`` for the negative distance.

    Raises:
        RuntimeError: operands with different numbers of dims (PyTorch's message),
        shapes that do not broadcast, integer operands.
    """
    from tensorplay._ops.loss import pairwise_distance
    op = "triplet_margin_loss"
    a, pos, neg = _operands(op, ("anchor", anchor), ("positive", positive),
                            ("negative", negative))
    _same_ndim(op, a, pos, neg)
    margin, p, eps = (C.number(op, n, v) for n, v in (("margin", margin), ("p", p),
                                                      ("eps", eps)))
    swap = C.flag(op, "swap", swap)
    red = C.reduction(op, reduction, size_average, reduce)
    d_pos = pairwise_distance(a, pos, p, eps)
    d_neg = pairwise_distance(a, neg, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(pos, neg, p, eps))
    return C.reduce((margin + d_pos - d_neg).clamp_min(0.0), red)


def _same_ndim(op, a, p, n):
    if not a.ndim == p.ndim == n.ndim:
        raise RuntimeError(f"{op}(): The anchor, positive, and negative tensors are expected "
                           f"to have the same number of dimensions, but got: anchor "
                           f"{a.ndim}D, positive {p.ndim}D, and negative {n.ndim}D inputs")


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """``max(0, margin + d(a, p) - d(a, n))`` for any ``distance_function(x, y)``
    (default ``pairwise_distance``); ``swap`` as ``triplet_margin_loss``.

    Raises:
        ValueError: margin <= 0, an unknown reduction.  RuntimeError: operands with
        different numbers of dims.  TypeError: a distance_function that is not
        callable.
    """
    from tensorplay._ops.loss import pairwise_distance
    op = "triplet_margin_with_distance_loss"
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    margin = C.number(op, "margin", margin)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    for name, t in (("anchor", anchor), ("positive", positive), ("negative", negative)):
        C.tensor(op, name, t)
    _same_ndim(op, anchor, positive, negative)
    dist = pairwise_distance if distance_function is None else distance_function
    if not callable(dist):
        raise TypeError(f"{op}(): distance_function must be callable, got "
                        f"{type(dist).__name__}")
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if C.flag(op, "swap", swap):
        d_neg = d_neg.minimum(dist(positive, negative))
    return C.reduce((margin + d_pos - d_neg).clamp_min(0.0), reduction)


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos(x1, x2) - margin)`` where
    ``target == -1`` (else 0); ``cos = <x1, x2> / sqrt((|x1|^2 + 1e-12)(|x2|^2 +
    1e-12))`` over the last dim (PyTorch's EPSILON).  (N, D) inputs with an (N,)
    target, or (D,) inputs with a 0-d target.

    Raises:
        RuntimeError: a target of more than one dim, inputs whose dims do not fit the
        target (PyTorch's messages), shapes that differ, integer inputs.
    """
    op = "cosine_embedding_loss"
    x1, x2, t = _operands(op, ("input1", input1), ("input2", input2), ("target", target),
                          check=2)
    margin = C.number(op, "margin", margin)
    red = C.reduction(op, reduction, size_average, reduce)
    if t.ndim not in (0, 1):
        raise RuntimeError(f"{op}(): 0D or 1D target tensor expected, multi-target not "
                           f"supported")
    want = 2 if t.ndim == 1 else 1
    if x1.ndim != want or x2.ndim != want:
        raise RuntimeError(f"{op}(): {t.ndim}D target tensor expects {want}D input tensors, "
                           f"but found inputs with sizes {list(x1.shape)} and "
                           f"{list(x2.shape)}.")
    d = t.ndim
    prod = (x1 * x2).sum(d)
    mag = ((x1 * x1).sum(d) + 1e-12) * ((x2 * x2).sum(d) + 1e-12)
    cos = prod / mag.sqrt()
    loss = (1 - cos).where(t == 1, 0.0) + (cos - margin).clamp_min(0.0).where(t == -1, 0.0)
    return C.reduce(loss, red)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Poisson negative log-likelihood: ``exp(x) - t x`` for log-rate input
    (``log_input=True``, default), else ``x - t log(x + eps)``; ``full`` adds the
    Stirling term ``t log t - t + log(2 pi t) / 2`` where ``t > 1``.

    Raises:
        ValueError: an unknown reduction.  RuntimeError: shapes that do not
        broadcast, integer input.
    """
    op = "poisson_nll_loss"
    if size_average is None and reduce is None and reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    x, t = _operands(op, ("input", input), ("target", target))
    log_input, full = C.flag(op, "log_input", log_input), C.flag(op, "full", full)
    eps = C.number(op, "eps", eps)
    red = C.reduction(op, reduction, size_average, reduce)
    loss = x.exp() - t * x if log_input else x - t * (x + eps).log()
    if full:
        big = t > 1
        ts = t.where(big, 2.0)          # any value > 1: the masked entries give 0
        stirling = ts * ts.log() - ts + 0.5 * (2 * math.pi * ts).log()
        loss = loss + stirling.where(big, 0.0)
    return C.reduce(loss, red)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Gaussian negative log-likelihood ``(log(max(var, eps)) + (x - t)^2 / max(var,
    eps)) / 2`` (+ ``log(2 pi) / 2`` with ``full``).  ``var`` may be a float, the
    input's shape, the input's shape without its last dim, or broadcastable with one
    dim of size 1 (PyTorch's rules).  As PyTorch, the clamp at ``eps`` does not stop
    the gradient: ``var`` gets the derivative as if unclamped at the clamped value.

    Raises:
        ValueError: a negative var ("var has negative entry/entries"), a var of
        another size ("var is of incorrect size"), an unknown reduction.
    """
    op = "gaussian_nll_loss"
    x, t = _operands(op, ("input", input), ("target", target))
    full = C.flag(op, "full", full)
    eps = C.number(op, "eps", eps)
    if not isinstance(var, Tensor):
        v = C.number(op, "var", var)
        if v < 0:
            raise ValueError("var has negative entry/entries")
        var = x.new_full(tuple(x.shape), v)
    else:
        C.tensor(op, "var", var)
        (var,) = C.same_float(op, x, var)
        if bool((C.values(var) < 0).any()):
            raise ValueError("var has negative entry/entries")
    vs, xs = tuple(var.shape), tuple(x.shape)
    if vs != xs:
        if xs[:-1] == vs:
            var = var.unsqueeze(-1)
        elif not (x.ndim == var.ndim and
                  sum(b for a, b in zip(xs, vs) if a != b) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var + (var.clamp_min(eps) - var).detach()      # PyTorch clamps under no_grad
    loss = 0.5 * (var.log() + (x - t).square() / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return C.reduce(loss, reduction)
