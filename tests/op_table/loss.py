"""Op-table rows of the losses (tensorplay/_ops/nn.py: nll_loss and cross_entropy
with weights, ignore_index, label smoothing, probability targets, every
reduction and (N, C, d1) inputs; tensorplay/_ops/loss.py; tensorplay/_ops/nn_misc.py).

References are numpy closed forms, never tensorplay.  Rows of compositions name
the primitive that carries them (``mul[mse_loss]``).  Class targets and weights
are fixed per sample (keyword arguments)."""
import hypothesis.strategies as st
import numpy as np

import tensorplay as tp
from tensorplay._ops.nn import nll_loss_backward

from ._base import Fuzz, OpSpec, _normal, _side, _uniform, fixed_samples

F = tp.nn.functional


# ---------------------------------------------------------------- references
def _np(t):
    return t._data if isinstance(t, tp.Tensor) else np.asarray(t)


def _log_softmax(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


def _picked(logp, target, weight, ignore_index):
    """(-w[t] logp[i, t, ...], w[t]) with 0 where ignored; class axis 1."""
    t = _np(target)
    lp = np.moveaxis(logp, 1, -1)
    c = lp.shape[-1]
    w = np.ones(c) if weight is None else _np(weight).astype(np.float64)
    keep = t != ignore_index
    tc = np.where(keep, t, 0)
    got = np.take_along_axis(lp, tc[..., None], -1)[..., 0]
    wt = w[tc] * keep
    return np.where(keep, -wt * got, 0.0), wt      # ignored entries: 0, even nan ones


def _reduce(loss, reduction, denom=None):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return np.sum(loss)
    return np.sum(loss) / (loss.size if denom is None else denom)


def nll_ref(logp, target, weight=None, ignore_index=-100, reduction="mean"):
    loss, wt = _picked(logp, target, weight, ignore_index)
    return _reduce(loss, reduction, np.sum(wt))


def ce_ref(x, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    lp = _log_softmax(x, 1)
    nll = nll_ref(lp, target, weight, ignore_index, reduction)
    if not label_smoothing:
        return nll
    c = x.shape[1]
    w = np.ones(c) if weight is None else _np(weight).astype(np.float64)
    t = _np(target)
    keep = t != ignore_index
    smooth = np.where(keep, -np.sum(np.moveaxis(lp, 1, -1) * w, -1), 0.0)
    denom = np.sum(w[np.where(keep, t, 0)] * keep)
    ret = _reduce(smooth, reduction, denom)
    return (1 - label_smoothing) * nll + ret * label_smoothing / c


def ce_probs_ref(x, q, weight=None, reduction="mean", label_smoothing=0.0):
    lp = _log_softmax(x, 1)
    c = x.shape[1]
    q = q * (1 - label_smoothing) + label_smoothing / c
    w = np.ones(c) if weight is None else _np(weight).astype(np.float64)
    loss = -np.sum(np.moveaxis(lp * q, 1, -1) * w, -1)
    return _reduce(loss, reduction)


def _nll_bwd_ref(g, target, num_classes, reduction="mean", weight=None, ignore_index=-100):
    t = _np(target)
    n = t.shape[0]
    out = np.zeros((n, num_classes) + t.shape[1:])
    _, wt = _picked(np.zeros((n, num_classes) + t.shape[1:]), target, weight, ignore_index)
    scale = -(np.asarray(g) if reduction == "none" else g) * wt
    if reduction == "mean":
        scale = scale / np.sum(wt)
    keep = t != ignore_index
    idx = np.where(keep, t, 0)
    view = np.moveaxis(out, 1, -1)
    np.put_along_axis(view, idx[..., None], np.where(keep, scale, 0.0)[..., None], -1)
    return out


def _cast_weight(x, kw):
    """torch wants weights of the input's dtype (tensorplay casts them)."""
    return {k: (v.to(x.dtype) if k in ("weight", "pos_weight") else v) for k, v in kw.items()}


def _smooth_l1(d, beta):
    a = np.abs(d)
    return np.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta)


def _huber(d, delta):
    a = np.abs(d)
    return np.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta))


def _bce(x, t, w=None):
    out = -(t * np.maximum(np.log(x), -100) + (1 - t) * np.maximum(np.log1p(-x), -100))
    return out if w is None else out * _np(w)


def _bce_logits(x, t, pos_weight=None):
    ls = -np.logaddexp(0, -x)          # log sigmoid(x)
    l1s = -np.logaddexp(0, x)          # log (1 - sigmoid(x))
    p = 1.0 if pos_weight is None else _np(pos_weight)
    return -(p * t * ls + (1 - t) * l1s)


def _kl(x, t, log_target=False):
    if log_target:
        return np.exp(t) * (t - x)
    return np.where(t > 0, t * np.log(np.where(t > 0, t, 1.0)), 0.0) - t * x


def _cos(a, b, dim=1, eps=1e-8):
    na = np.maximum(np.sqrt(np.sum(a * a, dim, keepdims=True)), eps)
    nb = np.maximum(np.sqrt(np.sum(b * b, dim, keepdims=True)), eps)
    return np.sum((a / na) * (b / nb), dim)


# ---------------------------------------------------------------- samples
T5 = tp.tensor([2, 0, 1, 2, 1])
T5_IGN = tp.tensor([2, -100, 1, 2, 1])
T5_IGN1 = tp.tensor([2, 0, 1, 2, 1])            # with ignore_index=1: two ignored
T_ND = tp.tensor([[0, 2, 1, 1], [2, 2, -100, 0]])       # (N=2, d=4)
W3 = tp.tensor([0.3, 1.7, 0.9])
_ALL_IGN = tp.tensor([-100, -100])


def _nll_shapes(draw):
    return [(_side(draw, 1, 4), _side(draw, 1, 4))]


def _target_kwargs(draw, arrays):
    n, c = arrays[0].shape
    vals = draw(st.lists(st.integers(-1, c - 1), min_size=n, max_size=n))
    vals[0] = max(vals[0], 0)           # not all ignored: a mean of nothing is nan
    kw = {"target": tp.tensor([v if v >= 0 else -100 for v in vals], dtype=tp.int64)}
    if draw(st.booleans()):
        kw["weight"] = tp.tensor(draw(st.lists(st.floats(0.1, 2.0), min_size=c,
                                               max_size=c)), dtype=tp.float64)
    kw["reduction"] = draw(st.sampled_from(["mean", "sum", "none"]))
    return kw


def _ce_kwargs(draw, arrays):
    kw = _target_kwargs(draw, arrays)
    kw["label_smoothing"] = draw(st.sampled_from([0.0, 0.2]))
    return kw


def _pair(gen_a=_normal, gen_b=_normal, shapes=((3, 4),)):
    cases = []
    for s in shapes:
        cases.append((f"{'x'.join(map(str, s)) or '0d'}", [(gen_a, s), (gen_b, s)], {}))
    return fixed_samples(*cases)


def _away(lo, hi, points, gap=0.15):
    def gen(rng, shape):
        x = rng.uniform(lo, hi, shape)
        for p in points:
            x = np.where(np.abs(np.abs(x) - p) < gap, np.sign(x) * (p + 2 * gap), x)
        return x
    return gen


_D = _away(-2.5, 2.5, [0.0, 0.7, 1.0])          # differences away from the kinks
_PROB = _uniform(0.05, 0.95)


def _diff_pair(shapes=((3, 4), (5,))):
    """(input, target) whose difference stays away from 0 and the beta/delta kinks."""
    def samples(rng):
        out = []
        for s in shapes:
            t = rng.standard_normal(s)
            out.append(("x".join(map(str, s)), [t + _D(rng, s), t], {}))
        return out
    return samples


def _same2(draw):
    s = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    return [s, s]


def _same2d(draw):
    s = tuple(draw(st.lists(st.integers(1, 4), min_size=2, max_size=3)))
    return [s, s]


_LOSS_FUZZ = dict(args=("input", "target"), shapes=_same2, special=False)

SPECS = [
    # ---- nll_loss: weights, ignore_index, reductions, (N, C, d) (the kernel)
    OpSpec("nll_loss", lambda x, **kw: F.nll_loss(x, **kw), nll_ref,
           fixed_samples(("weight_mean", [(_normal, (5, 3))], {"target": T5, "weight": W3}),
                         ("ignore_mean", [(_normal, (5, 3))], {"target": T5_IGN}),
                         ("ignore1_weight_sum", [(_normal, (5, 3))],
                          {"target": T5_IGN1, "weight": W3, "ignore_index": 1,
                           "reduction": "sum"}),
                         ("none", [(_normal, (5, 3))], {"target": T5_IGN, "weight": W3,
                                                         "reduction": "none"}),
                         ("nd_mean", [(_normal, (2, 3, 4))], {"target": T_ND, "weight": W3}),
                         ("nd_none", [(_normal, (2, 3, 4))], {"target": T_ND,
                                                               "reduction": "none"}),
                         ("noncontig", [(_normal, (5, 3))], {"target": T5, "weight": W3})),
           variant="weighted",
           fuzz=Fuzz("nll_loss", shapes=_nll_shapes, kwargs=_target_kwargs,
                     base=lambda ts, kw: [ts[0], kw["target"]]),
           torch=lambda T, x, **kw: T.nn.functional.nll_loss(x, **_cast_weight(x, kw))),
    OpSpec("nll_loss_backward",
           lambda g, **kw: nll_loss_backward(g, **kw), _nll_bwd_ref,
           fixed_samples(("mean_weight", [(_normal, ())],
                          {"target": T5_IGN, "num_classes": 3, "weight": W3}),
                         ("none_nd", [(_normal, (2, 4))],
                          {"target": T_ND, "num_classes": 3, "reduction": "none"}),
                         ("sum_ignore1", [(_normal, ())],
                          {"target": T5_IGN1, "num_classes": 3, "reduction": "sum",
                           "ignore_index": 1})),
           variant="weighted",
           fuzz=Fuzz("nll_loss_backward", ("grad_output",), shapes=lambda draw: [()],
                     kwargs=lambda draw, arrays: {"target": tp.tensor([0, 2, -100]),
                                                  "num_classes": 3},
                     base=lambda ts, kw: [ts[0], kw["target"], kw["num_classes"]]),
           torch="an internal derivative kernel: torch has no public op of this name"),
    # ---- cross_entropy (log_softmax + nll_loss, and compositions)
    OpSpec("log_softmax", lambda x, **kw: F.cross_entropy(x, **kw), ce_ref,
           fixed_samples(("weight_ignore", [(_normal, (5, 3))],
                          {"target": T5_IGN, "weight": W3}),
                         ("smooth", [(_normal, (5, 3))],
                          {"target": T5_IGN, "label_smoothing": 0.1}),
                         ("smooth_weight", [(_normal, (5, 3))],
                          {"target": T5_IGN, "weight": W3, "label_smoothing": 0.25}),
                         ("smooth_weight_sum", [(_normal, (5, 3))],
                          {"target": T5_IGN, "weight": W3, "label_smoothing": 0.25,
                           "reduction": "sum"}),
                         ("smooth_none", [(_normal, (5, 3))],
                          {"target": T5_IGN, "weight": W3, "label_smoothing": 0.25,
                           "reduction": "none"}),
                         ("nd", [(_normal, (2, 3, 4))],
                          {"target": T_ND, "weight": W3, "label_smoothing": 0.1})),
           variant="cross_entropy_full",
           fuzz=Fuzz("cross_entropy", shapes=_nll_shapes, kwargs=_ce_kwargs,
                     base=lambda ts, kw: [ts[0], kw["target"]]),
           torch=lambda T, x, **kw: T.nn.functional.cross_entropy(x, **_cast_weight(x, kw))),
    OpSpec("log_softmax", lambda x, q, **kw: F.cross_entropy(x, q, **kw), ce_probs_ref,
           fixed_samples(("mean", [(_normal, (4, 3)), (_PROB, (4, 3))], {}),
                         ("weight_smooth", [(_normal, (4, 3)), (_PROB, (4, 3))],
                          {"weight": W3, "label_smoothing": 0.2}),
                         ("none_nd", [(_normal, (2, 3, 2)), (_PROB, (2, 3, 2))],
                          {"reduction": "none"}),
                         ("sum", [(_normal, (4, 3)), (_PROB, (4, 3))], {"reduction": "sum"})),
           variant="cross_entropy_probs",
           fuzz=Fuzz("cross_entropy", ("input", "target"),
                     shapes=lambda draw: [(_side(draw, 1, 4), _side(draw, 1, 4))] * 2,
                     domain=[(-2.0, 2.0), (0.0, 1.0)], special=False),
           torch=lambda T, x, q, **kw: T.nn.functional.cross_entropy(x, q,
                                                                    **_cast_weight(x, kw))),
    # ---- elementwise losses (compositions)
    OpSpec("square", lambda x, t, **kw: F.mse_loss(x, t, **kw),
           lambda x, t, reduction="mean": _reduce((x - t) ** 2, reduction),
           fixed_samples(("mean", [(_normal, (3, 4)), (_normal, (3, 4))], {}),
                         ("sum", [(_normal, (3, 4)), (_normal, (3, 4))], {"reduction": "sum"}),
                         ("none_0d", [(_normal, ()), (_normal, ())], {"reduction": "none"}),
                         ("noncontig", [(_normal, (3, 4)), (_normal, (3, 4))], {})),
           variant="mse_loss", fuzz=Fuzz("mse_loss", **_LOSS_FUZZ),
           torch=lambda T, x, t, **kw: T.nn.functional.mse_loss(x, t, **kw)),
    OpSpec("abs", lambda x, t, **kw: F.l1_loss(x, t, **kw),
           lambda x, t, reduction="mean": _reduce(np.abs(x - t), reduction),
           _diff_pair(), variant="l1_loss", smooth=False,
           fuzz=Fuzz("l1_loss", **_LOSS_FUZZ),
           torch=lambda T, x, t, **kw: T.nn.functional.l1_loss(x, t, **kw)),
    OpSpec("where", lambda x, t: F.smooth_l1_loss(x, t, beta=0.7),
           lambda x, t: np.mean(_smooth_l1(x - t, 0.7)), _diff_pair(),
           variant="smooth_l1_loss", smooth=False, fuzz=Fuzz("smooth_l1_loss", **_LOSS_FUZZ),
           torch=lambda T, x, t: T.nn.functional.smooth_l1_loss(x, t, beta=0.7)),
    OpSpec("where", lambda x, t: F.huber_loss(x, t, reduction="sum", delta=0.7),
           lambda x, t: np.sum(_huber(x - t, 0.7)), _diff_pair(),
           variant="huber_loss", smooth=False, fuzz=Fuzz("huber_loss", **_LOSS_FUZZ),
           torch=lambda T, x, t: T.nn.functional.huber_loss(x, t, reduction="sum",
                                                            delta=0.7)),
    OpSpec("log", lambda x, t, **kw: F.binary_cross_entropy(x, t, **kw),
           lambda x, t, weight=None, reduction="mean": _reduce(_bce(x, t, weight), reduction),
           fixed_samples(("mean", [(_PROB, (3, 4)), (_PROB, (3, 4))], {}),
                         ("weight_none", [(_PROB, (3, 4)), (_PROB, (3, 4))],
                          {"weight": tp.tensor([0.5, 1.0, 2.0, 1.5]), "reduction": "none"})),
           variant="binary_cross_entropy",
           fuzz=Fuzz("binary_cross_entropy", domain=(0.05, 0.95), **_LOSS_FUZZ),
           torch=lambda T, x, t, **kw: T.nn.functional.binary_cross_entropy(
               x, t, **_cast_weight(x, kw))),
    OpSpec("logsigmoid", lambda x, t, **kw: F.binary_cross_entropy_with_logits(x, t, **kw),
           lambda x, t, pos_weight=None, reduction="mean":
               _reduce(_bce_logits(x, t, pos_weight), reduction),
           fixed_samples(("mean", [(_normal, (3, 4)), (_PROB, (3, 4))], {}),
                         ("pos_weight_sum", [(_normal, (3, 4)), (_PROB, (3, 4))],
                          {"pos_weight": tp.tensor([0.5, 1.0, 2.0, 3.0]),
                           "reduction": "sum"})),
           variant="bce_with_logits",
           fuzz=Fuzz("binary_cross_entropy_with_logits", **_LOSS_FUZZ),
           torch=lambda T, x, t, **kw:
               T.nn.functional.binary_cross_entropy_with_logits(x, t, **_cast_weight(x, kw))),
    OpSpec("xlogy", lambda x, t: F.kl_div(x, t, reduction="batchmean"),
           lambda x, t: np.sum(_kl(x, t)) / x.shape[0],
           fixed_samples(("batchmean", [(_uniform(-3, 0), (3, 4)), (_PROB, (3, 4))], {})),
           variant="kl_div",
           fuzz=Fuzz("kl_div", domain=[(-3.0, 0.0), (0.0, 1.0)], **_LOSS_FUZZ),
           torch=lambda T, x, t: T.nn.functional.kl_div(x, t, reduction="batchmean")),
    OpSpec("exp", lambda x, t: F.kl_div(x, t, reduction="sum", log_target=True),
           lambda x, t: np.sum(_kl(x, t, True)),
           fixed_samples(("sum", [(_uniform(-3, 0), (3, 4)), (_uniform(-3, 0), (3, 4))], {})),
           variant="kl_div_log_target",
           fuzz=Fuzz("kl_div", domain=(-3.0, 0.0), **_LOSS_FUZZ),
           torch=lambda T, x, t: T.nn.functional.kl_div(x, t, reduction="sum",
                                                        log_target=True)),
    # ---- distances (compositions over vector_norm)
    OpSpec("div", lambda a, b, **kw: F.cosine_similarity(a, b, **kw), _cos,
           fixed_samples(("dim1", [(_normal, (3, 4)), (_normal, (3, 4))], {}),
                         ("dim0_bcast", [(_normal, (3, 4)), (_normal, (3, 1))], {"dim": 0})),
           variant="cosine_similarity",
           fuzz=Fuzz("cosine_similarity", ("x1", "x2"), shapes=_same2d, domain=(0.3, 2.0),
                     special=False),
           torch=lambda T, a, b, **kw: T.nn.functional.cosine_similarity(a, b, **kw)),
    OpSpec("sub", lambda a, b, **kw: F.pairwise_distance(a, b, **kw),
           lambda a, b, p=2.0, eps=1e-6, keepdim=False:
               np.sum(np.abs(a - b + eps) ** p, -1, keepdims=keepdim) ** (1 / p),
           fixed_samples(("p2", [(_normal, (3, 4)), (_normal, (3, 4))], {}),
                         ("p3_keepdim", [(_normal, (3, 4)), (_normal, (3, 4))],
                          {"p": 3.0, "keepdim": True})),
           variant="pairwise_distance",
           fuzz=Fuzz("pairwise_distance", ("x1", "x2"), shapes=_same2, special=False),
           torch=lambda T, a, b, **kw: T.nn.functional.pairwise_distance(a, b, **kw)),
    # ---- layers (compositions)
    OpSpec("matmul", lambda x, w, b=None: F.linear(x, w, b),
           lambda x, w, b=None: x @ w.T + (0 if b is None else b),
           fixed_samples(("2d", [(_normal, (3, 4)), (_normal, (2, 4)), (_normal, (2,))], {}),
                         ("3d", [(_normal, (2, 3, 4)), (_normal, (2, 4)), (_normal, (2,))],
                          {})),
           variant="linear",
           fuzz=Fuzz("linear", ("input", "weight"),
                     shapes=lambda draw: [(_side(draw, 1, 3), 4), (_side(draw, 1, 3), 4)],
                     base=lambda ts, kw: [ts[0], ts[1]]),
           torch=lambda T, x, w, b=None: T.nn.functional.linear(x, w, b)),
    OpSpec("matmul", lambda a, b, w, bias=None: F.bilinear(a, b, w, bias),
           lambda a, b, w, bias=None: np.einsum("bi,kij,bj->bk", a, w, b) + (
               0 if bias is None else bias),
           fixed_samples(("2d", [(_normal, (3, 2)), (_normal, (3, 4)), (_normal, (2, 2, 4)),
                                 (_normal, (2,))], {})),
           variant="bilinear",
           fuzz=Fuzz("bilinear", ("input1", "input2", "weight"),
                     shapes=lambda draw: [(2, 3), (2, 2), (4, 3, 2)], special=False),
           torch=lambda T, a, b, w, bias=None: T.nn.functional.bilinear(a, b, w, bias)),
    OpSpec("mul", lambda x: F.dropout(x, 1.0), lambda x: x * 0.0,     # (inf -> nan: torch's)
           fixed_samples(("p1", [(_normal, (3, 4))], {})), variant="dropout_p1",
           fuzz=Fuzz("dropout", base=lambda ts, kw: [ts[0], 1.0]),
           torch=lambda T, x: T.nn.functional.dropout(x, 1.0)),
    # (padding_idx blocks a gradient the finite differences see: tests/test_loss.py)
    OpSpec("index", lambda w: F.embedding(tp.tensor([[0, 2], [2, 3]]), w),
           lambda w: w[np.array([[0, 2], [2, 3]])],
           fixed_samples(("2x2", [(_normal, (4, 3))], {})), variant="embedding",
           fuzz=Fuzz("embedding", ("weight",), shapes=lambda draw: [(4, _side(draw, 1, 3))],
                     base=lambda ts, kw: [tp.tensor([[0, 2], [2, 3]]), ts[0]]),
           torch=lambda T, w: T.nn.functional.embedding(T.tensor([[0, 2], [2, 3]]), w)),
]
