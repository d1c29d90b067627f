"""Issue 9, second step: the eleven margin / likelihood losses and embedding_bag,
functional and module, every reduction, against torch 2.13 (float64, the same
targets and weights), finite differences, and their errors."""
import warnings

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import nn

torch = pytest.importorskip("torch")
F, TF = tp.nn.functional, torch.nn.functional
RNG = np.random.default_rng(19)
REDUCTIONS = ["mean", "sum", "none"]


def _np(t):
    return t.detach().numpy()


def _conv(v, lib, grad):
    if isinstance(v, np.ndarray):
        t = lib.tensor(v)
        if grad and v.dtype.kind == "f":
            t.requires_grad_(True)
        return t
    return v


def _check(name, args, kw=None, ngrad=1, module=None, margs=None):
    """F.<name>(*args, **kw) against torch's, values and VJPs w.r.t. the first ``ngrad``
    arrays, for every reduction; the module class ``module`` with ``margs`` too."""
    kw = kw or {}
    for red in REDUCTIONS:
        ta = [_conv(a, tp, i < ngrad) for i, a in enumerate(args)]
        ua = [_conv(a, torch, i < ngrad) for i, a in enumerate(args)]
        tk = {k: _conv(v, tp, False) for k, v in kw.items()}
        uk = {k: _conv(v, torch, False) for k, v in kw.items()}
        if module is None:
            y = getattr(F, name)(*ta, reduction=red, **tk)
            yt = getattr(TF, name)(*ua, reduction=red, **uk)
        else:
            y = getattr(nn, module)(*(margs or ()), reduction=red, **tk)(*ta)
            yt = getattr(torch.nn, module)(*(margs or ()), reduction=red, **uk)(*ua)
        assert tuple(y.shape) == tuple(yt.shape)
        np.testing.assert_allclose(_np(y), yt.detach().numpy(), rtol=1e-10, atol=1e-12)
        g = RNG.standard_normal(tuple(yt.shape))
        gs = tp.autograd.grad(y, ta[:ngrad], tp.tensor(g))
        gts = torch.autograd.grad(yt, ua[:ngrad], torch.tensor(g))
        for a, b in zip(gs, gts):
            np.testing.assert_allclose(_np(a), b.numpy(), rtol=1e-10, atol=1e-12)


def _pm1(*shape):
    return np.where(RNG.random(shape) > 0.5, 1.0, -1.0)


X = RNG.standard_normal((5, 4))
Y = RNG.standard_normal((5, 4))
Z = RNG.standard_normal((5, 4))


# ---------------------------------------------------------------- against torch
def test_margin_ranking_loss():
    a, b, t = RNG.standard_normal(7), RNG.standard_normal(7), _pm1(7)
    _check("margin_ranking_loss", [a, b, t], {"margin": 0.4}, ngrad=2)
    _check(None, [a, b, t], ngrad=2, module="MarginRankingLoss", margs=(0.2,))


def test_hinge_embedding_and_soft_margin_losses():
    t = _pm1(5, 4)
    _check("hinge_embedding_loss", [X, t], {"margin": 0.7})
    _check(None, [X, t], module="HingeEmbeddingLoss", margs=(0.5,))
    _check("soft_margin_loss", [X * 10, t])           # large margins: stable form
    _check(None, [X, t], module="SoftMarginLoss")


def test_multilabel_soft_margin_loss():
    t = (RNG.random((5, 4)) > 0.5) * 1.0
    _check("multilabel_soft_margin_loss", [X, t])
    _check("multilabel_soft_margin_loss", [X, t], {"weight": RNG.random(4)})
    _check(None, [X[0], t[0]], module="MultiLabelSoftMarginLoss")


def test_multilabel_margin_loss():
    t = np.array([[3, 0, -1, 1], [0, 1, 2, 3], [-1, 0, 0, 0], [2, 2, 1, -1], [1, -1, 3, 0]])
    _check("multilabel_margin_loss", [X, t])
    _check("multilabel_margin_loss", [X[0], t[0]])
    _check(None, [X, t], module="MultiLabelMarginLoss")


@pytest.mark.parametrize("kw", [{}, {"p": 2, "margin": 0.6}, {"p": 1, "margin": 2.0}])
def test_multi_margin_loss(kw):
    t = np.array([0, 3, 2, 1, 3])
    _check("multi_margin_loss", [X, t], kw)
    _check("multi_margin_loss", [X, t], dict(kw, weight=RNG.random(4) + 0.1))
    _check("multi_margin_loss", [X[0], np.array(2)], kw)
    _check(None, [X, t], module="MultiMarginLoss", margs=(kw.get("p", 1),))


@pytest.mark.parametrize("kw", [{}, {"swap": True, "p": 1.5, "margin": 2.0}, {"eps": 0.1}])
def test_triplet_margin_loss(kw):
    _check("triplet_margin_loss", [X, Y, Z], kw, ngrad=3)
    _check("triplet_margin_loss", [X[0], Y[0], Z[0]], kw, ngrad=3)
    _check(None, [X, Y, Z], kw, ngrad=3, module="TripletMarginLoss")


def test_triplet_margin_with_distance_loss():
    def cos_dist(a, b, lib):
        return 1 - lib.nn.functional.cosine_similarity(a, b)
    for red in REDUCTIONS:
        for swap in (False, True):
            a, p, n = [tp.tensor(v, requires_grad=True) for v in (X, Y, Z)]
            u = [torch.tensor(v, requires_grad=True) for v in (X, Y, Z)]
            y = F.triplet_margin_with_distance_loss(
                a, p, n, distance_function=lambda x, z: cos_dist(x, z, tp), margin=0.3,
                swap=swap, reduction=red)
            yt = TF.triplet_margin_with_distance_loss(
                *u, distance_function=lambda x, z: cos_dist(x, z, torch), margin=0.3, swap=swap,
                reduction=red)
            np.testing.assert_allclose(_np(y), yt.detach().numpy(), rtol=1e-10, atol=1e-12)
            g = tp.autograd.grad(y.sum(), [a, p, n])
            gt = torch.autograd.grad(yt.sum(), u)
            for x1, x2 in zip(g, gt):
                np.testing.assert_allclose(_np(x1), x2.numpy(), rtol=1e-10, atol=1e-12)
    _check(None, [X, Y, Z], ngrad=3, module="TripletMarginWithDistanceLoss")  # pairwise default
    assert repr(nn.TripletMarginWithDistanceLoss()) == \
        repr(torch.nn.TripletMarginWithDistanceLoss())


def test_cosine_embedding_loss():
    _check("cosine_embedding_loss", [X, Y, _pm1(5)], {"margin": -0.3}, ngrad=2)
    _check("cosine_embedding_loss", [X[0], Y[0], np.array(-1.0)], ngrad=2)
    _check(None, [X, Y, _pm1(5)], ngrad=2, module="CosineEmbeddingLoss", margs=(0.1,))


@pytest.mark.parametrize("kw", [{}, {"full": True}, {"log_input": False, "eps": 1e-3},
                                {"log_input": False, "full": True}])
def test_poisson_nll_loss(kw):
    x = np.abs(X) + 0.1 if kw.get("log_input") is False else X
    t = np.round(np.abs(Y) * 3)                       # counts, some 0 and 1 (no Stirling term)
    _check("poisson_nll_loss", [x, t], kw)
    _check(None, [x, t], module="PoissonNLLLoss", margs=tuple(kw.get(k, d) for k, d in
                                                               (("log_input", True),
                                                                ("full", False))))


@pytest.mark.parametrize("vshape", [(5, 4), (5,), (5, 1), (1, 4)])
def test_gaussian_nll_loss_var_shapes(vshape):
    var = RNG.random(vshape) + 0.1
    _check("gaussian_nll_loss", [X, Y, var], ngrad=3)
    _check("gaussian_nll_loss", [X, Y, var], {"full": True, "eps": 0.5}, ngrad=3)  # clamped
    _check(None, [X, Y, var], ngrad=3, module="GaussianNLLLoss")


def test_gaussian_nll_loss_float_var_and_errors():
    for red in REDUCTIONS:
        got = F.gaussian_nll_loss(tp.tensor(X), tp.tensor(Y), 0.7, reduction=red)
        want = TF.gaussian_nll_loss(torch.tensor(X), torch.tensor(Y), 0.7, reduction=red)
        np.testing.assert_allclose(_np(got), want.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(tp.tensor(X), tp.tensor(Y), -1.0)
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(tp.tensor(X), tp.tensor(Y), -tp.ones(5, 1, dtype=tp.float64))
    with pytest.raises(ValueError, match="incorrect size"):
        F.gaussian_nll_loss(tp.tensor(X), tp.tensor(Y), tp.ones(4, dtype=tp.float64))
    with pytest.raises(ValueError, match="incorrect size"):
        F.gaussian_nll_loss(tp.tensor(X), tp.tensor(Y), tp.ones(2, 4, dtype=tp.float64))
    with pytest.raises(ValueError, match="not valid"):
        F.gaussian_nll_loss(tp.tensor(X), tp.tensor(Y), 1.0, reduction="bad")


def test_gradcheck_a_few():
    def gc(fn, *arrays):
        ts = [tp.tensor(a, requires_grad=True) for a in arrays]
        assert tp.autograd.gradcheck(fn, ts, check_forward_ad=True)
    t = tp.tensor(np.array([0, 3, 2, 1, 3]))
    gc(lambda x: F.multi_margin_loss(x, t, p=2), X)
    pm = tp.tensor(_pm1(5))
    gc(lambda a, b: F.cosine_embedding_loss(a, b, pm), X, Y)
    gc(lambda a, p, n: F.triplet_margin_loss(a, p, n, swap=True), X, Y, Z)
    gc(lambda x, v: F.gaussian_nll_loss(x, tp.tensor(Y), v), X, RNG.random((5, 1)) + 0.5)
    gc(lambda x: F.poisson_nll_loss(x, tp.tensor(np.abs(Y) * 3), full=True), X)
    w = RNG.standard_normal((6, 3))
    gc(lambda w: F.embedding_bag(tp.tensor([1, 2, 4, 5, 4, 3]), w, tp.tensor([0, 2, 2]),
                                 mode="max"), w)


# ---------------------------------------------------------------- loss errors
def test_class_targets_are_validated():
    x = tp.tensor(X)
    for t in ([0, 1, 2, 4, 0], [0, 1, -1, 0, 0]):
        with pytest.raises(RuntimeError, match="target out of range"):
            F.multi_margin_loss(x, tp.tensor(t))
    with pytest.raises(RuntimeError, match="Long"):
        F.multi_margin_loss(x, tp.tensor([0.0, 1, 2, 3, 0]))
    with pytest.raises(RuntimeError, match="Expected target size"):
        F.multi_margin_loss(x, tp.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="inconsistent weight size"):
        F.multi_margin_loss(x, tp.tensor([0, 1, 2, 3, 0]), weight=tp.ones(3))
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        F.multi_margin_loss(x, tp.tensor([0, 1, 2, 3, 0]), p=3)
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        nn.MultiMarginLoss(p=3)
    for bad in (7, -2):
        with pytest.raises(RuntimeError, match="'target' is out of range"):
            F.multilabel_margin_loss(x, tp.full((5, 4), bad))
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        F.multilabel_margin_loss(x, tp.zeros(5, 3, dtype=tp.int64))
    # entries after the first -1 are checked (PyTorch) but not used
    with pytest.raises(RuntimeError, match="'target' is out of range"):
        F.multilabel_margin_loss(x, tp.tensor([[1, -1, 9, 0]] * 5))
    a = F.multilabel_margin_loss(x, tp.tensor([[1, -1, 3, 0]] * 5))
    b = F.multilabel_margin_loss(x, tp.tensor([[1, -1, 2, 2]] * 5))
    assert float(a) == float(b)


def test_shape_and_argument_errors():
    a = tp.tensor(X)
    with pytest.raises(RuntimeError, match="same dimension"):
        F.margin_ranking_loss(a, a[0], a[0])
    with pytest.raises(RuntimeError, match="size of tensor"):
        F.hinge_embedding_loss(a, a[:2])
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        F.triplet_margin_loss(a, a, a[0])
    with pytest.raises(ValueError, match="margin must be greater than 0"):
        F.triplet_margin_with_distance_loss(a, a, a, margin=0)
    with pytest.raises(ValueError, match="expected margin to be greater than 0"):
        nn.TripletMarginWithDistanceLoss(margin=-1)
    with pytest.raises(RuntimeError, match="multi-target not supported"):
        F.cosine_embedding_loss(a, a, tp.ones(5, 1))
    with pytest.raises(RuntimeError, match="expects 2D input"):
        F.cosine_embedding_loss(tp.randn(2, 3, 4), tp.randn(2, 3, 4), tp.ones(2))
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.poisson_nll_loss(a, a.abs(), reduction="x")
    for fn in (lambda r: F.soft_margin_loss(a, a, reduction=r),
               lambda r: F.margin_ranking_loss(a, a, a, reduction=r)):
        with pytest.raises(ValueError, match="reduction"):
            fn("avg")
    with pytest.raises(RuntimeError, match="floating"):
        F.soft_margin_loss(tp.ones(3, dtype=tp.int64), tp.ones(3))
    with pytest.raises(TypeError, match="must be Tensor"):
        F.hinge_embedding_loss(X, a)
    with pytest.warns(UserWarning, match="size_average and reduce"):
        got = F.soft_margin_loss(a, a, size_average=False)
    np.testing.assert_allclose(float(got), float(F.soft_margin_loss(a, a, reduction="sum")))


# ---------------------------------------------------------------- embedding_bag
W = RNG.standard_normal((10, 3))
IDX = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 7])


def _bag_pair(mode, offsets=None, idx=IDX, psw=None, **kw):
    w, wt = tp.tensor(W, requires_grad=True), torch.tensor(W, requires_grad=True)
    p = None if psw is None else tp.tensor(psw, requires_grad=True)
    pt = None if psw is None else torch.tensor(psw, requires_grad=True)
    off = None if offsets is None else tp.tensor(offsets)
    offt = None if offsets is None else torch.tensor(offsets)
    y = F.embedding_bag(tp.tensor(idx), w, off, mode=mode, per_sample_weights=p, **kw)
    yt = TF.embedding_bag(torch.tensor(idx), wt, offt, mode=mode, per_sample_weights=pt, **kw)
    np.testing.assert_allclose(_np(y), yt.detach().numpy(), rtol=1e-12, atol=1e-14)
    g = RNG.standard_normal(tuple(yt.shape))
    ins, inst = [w] + ([p] if p is not None else []), [wt] + ([pt] if pt is not None else [])
    for a, b in zip(tp.autograd.grad(y, ins, tp.tensor(g)),
                    torch.autograd.grad(yt, inst, torch.tensor(g))):
        np.testing.assert_allclose(_np(a), b.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 4, -1])
def test_embedding_bag_modes_against_torch(mode, padding_idx):
    for off in ([0, 4, 4, 8], [0], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [0, 10]):
        _bag_pair(mode, np.array(off), padding_idx=padding_idx)
    _bag_pair(mode, np.array([0, 3, 3, 7, 10]), include_last_offset=True,
              padding_idx=padding_idx)
    _bag_pair(mode, idx=IDX.reshape(2, 5), padding_idx=padding_idx)       # 2-D: one bag a row
    if mode == "sum":
        _bag_pair(mode, np.array([0, 4, 4, 8]), psw=RNG.random(10), padding_idx=padding_idx)
        _bag_pair(mode, idx=IDX.reshape(5, 2), psw=RNG.random((5, 2)))


def test_embedding_bag_include_last_offset_is_csr_and_empty_input():
    w = tp.tensor(W)
    # CSR: the last offset ends the last bag; positions after it belong to no bag
    got = F.embedding_bag(tp.tensor(IDX), w, tp.tensor([0, 3, 8]), mode="mean",
                          include_last_offset=True)
    np.testing.assert_allclose(_np(got), np.stack([W[IDX[:3]].mean(0), W[IDX[3:8]].mean(0)]))
    got = F.embedding_bag(tp.tensor(np.zeros(0, np.int64)), w, tp.tensor([0, 0]))
    assert got.shape == (2, 3) and float(got.abs().sum()) == 0


def test_embedding_bag_max_ties_go_to_the_first():
    w = tp.tensor([[1.0, 5.0], [1.0, 2.0], [0.0, 5.0]], requires_grad=True)
    y = F.embedding_bag(tp.tensor([0, 1, 2]), w, tp.tensor([0]), mode="max")
    g, = tp.autograd.grad(y.sum(), w)
    assert _np(g).tolist() == [[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]


def test_embedding_bag_validates_indices_and_offsets():
    w, i = tp.tensor(W), tp.tensor(IDX)
    for bad, exc, msg in [
            (dict(offsets=tp.tensor([1, 4])), RuntimeError, "offsets\\[0\\] has to be 0"),
            (dict(offsets=tp.tensor([0, 11])), RuntimeError, "can not be greater"),
            (dict(offsets=tp.tensor([0, 5, 3])), RuntimeError, "non-decreasing"),
            (dict(offsets=tp.tensor([0.0, 4.0])), RuntimeError, "Long, Int"),
            (dict(offsets=tp.tensor([[0, 4]])), ValueError, "1D Tensor"),
            (dict(offsets=None), ValueError, "offsets has to be a 1D Tensor but got None"),
            (dict(offsets=tp.tensor([0]), mode="median"), ValueError, "mode has to be"),
            (dict(offsets=tp.tensor([0]), padding_idx=10), RuntimeError, "padding_idx must"),
            (dict(offsets=tp.tensor([0]), mode="mean", per_sample_weights=tp.ones(10)),
             NotImplementedError, "only supported for mode='sum'"),
            (dict(offsets=tp.tensor([0]), mode="sum", per_sample_weights=tp.ones(9)),
             ValueError, "same shape as the input"),
            (dict(offsets=tp.tensor([0]), mode="sum",
                  per_sample_weights=tp.ones(10, dtype=tp.float32)), RuntimeError, "dtype"),
            (dict(offsets=tp.tensor([0]), scale_grad_by_freq=True), NotImplementedError,
             "scale_grad_by_freq")]:
        kw = dict(bad)
        with pytest.raises(exc, match=msg):
            F.embedding_bag(i, w, kw.pop("offsets"), **kw)
    for idx in ([1, 2, 10], [-1, 0, 0]):
        with pytest.raises(IndexError, match="not in the valid range"):
            F.embedding_bag(tp.tensor(idx), w, tp.tensor([0]))
    with pytest.raises(RuntimeError, match="Long, Int"):
        F.embedding_bag(tp.tensor([1.0, 2.0]), w, tp.tensor([0]))
    with pytest.raises(ValueError, match="offsets has to be None"):
        F.embedding_bag(i.reshape(2, 5), w, tp.tensor([0, 5]))
    with pytest.raises(ValueError, match="1D or 2D"):
        F.embedding_bag(i.reshape(1, 2, 5), w)
    with pytest.raises(ValueError, match="weight has to be a 2D"):
        F.embedding_bag(i, w[0], tp.tensor([0]))
    with pytest.warns(UserWarning, match="Argument order"):
        F.embedding_bag(w, i.reshape(2, 5))


def test_embedding_bag_module_and_from_pretrained():
    m, mt = nn.EmbeddingBag(10, 3, mode="sum", padding_idx=2), \
        torch.nn.EmbeddingBag(10, 3, mode="sum", padding_idx=2)
    assert repr(m) == repr(mt) and float(m.weight[2].abs().sum()) == 0
    m.load_state_dict(mt.state_dict())
    m.double(), mt.double()
    i, o = tp.tensor(IDX), tp.tensor([0, 3, 6])
    np.testing.assert_allclose(_np(m(i, o)), mt(torch.tensor(IDX), torch.tensor([0, 3, 6]))
                               .detach().numpy(), rtol=1e-12)
    e = tp.tensor(W)
    bag = nn.EmbeddingBag.from_pretrained(e, mode="max")
    assert not bag.weight.requires_grad and bag.mode == "max"
    assert nn.EmbeddingBag.from_pretrained(e, freeze=False).weight.requires_grad
    emb = nn.Embedding.from_pretrained(e, padding_idx=1)
    np.testing.assert_array_equal(_np(emb(tp.tensor([1, 3]))), W[[1, 3]])
    with pytest.raises(AssertionError, match="2-dimensional"):
        nn.EmbeddingBag.from_pretrained(e[0])
    with pytest.raises(AssertionError, match="padding_idx"):
        nn.EmbeddingBag(4, 2, padding_idx=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.EmbeddingBag(4, 2, max_norm=1.0)(tp.tensor([[0, 1]]))


def test_class_target_losses_under_vmap():
    from tensorplay.func import grad, vmap
    x, w = tp.tensor(RNG.standard_normal((6, 5))), tp.tensor(RNG.standard_normal(5))
    t = tp.tensor([0, 1, 2, 3, 4, 0])
    per = vmap(grad(lambda w, x, t: F.multi_margin_loss((x * w).unsqueeze(0), t.unsqueeze(0))),
               in_dims=(None, 0, 0))(w, x, t)
    loop = tp.stack([grad(lambda w: F.multi_margin_loss((x[k] * w).unsqueeze(0),
                                                        t[k:k + 1]))(w) for k in range(6)])
    np.testing.assert_allclose(_np(per), _np(loop), rtol=1e-13)
    tl = tp.tensor([[1, 0, -1, 0, 0], [2, -1, 3, 3, 3], [4, 3, 2, 1, 0], [-1, 0, 0, 0, 0],
                    [0, 0, 0, 1, -1], [3, -1, 0, 0, 0]])
    np.testing.assert_allclose(_np(vmap(F.multilabel_margin_loss)(x, tl)),
                               _np(F.multilabel_margin_loss(x, tl, reduction="none")), rtol=1e-14)
    # a bad target in one example of the batch is found
    with pytest.raises(RuntimeError, match="target out of range"):
        vmap(lambda x, t: F.multi_margin_loss(x.unsqueeze(0), t.unsqueeze(0)))(
            x, tp.tensor([0, 1, 2, 3, 4, 5]))
    y, i = F.max_pool2d(tp.randn(2, 1, 4, 4), 2, return_indices=True)
    with pytest.raises(RuntimeError, match="invalid max index"):
        vmap(lambda a, j: F.max_unpool2d(a, j, 2))(y, tp.stack([i[0], i[1] * 100]))


def test_multilabel_margin_loss_in_blocks_of_rows(monkeypatch):
    import tensorplay._ops.loss_more as L
    t = RNG.integers(-1, 4, (5, 4))
    monkeypatch.setattr(L, "_PAIRS", 40)          # 2 rows of 4 x 4 pairs per block
    _check("multilabel_margin_loss", [X, t])
