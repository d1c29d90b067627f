"""Losses and the other nn.functional layers of issue 9 (cross_entropy, nll_loss,
the elementwise losses, distances, linear, bilinear, dropout, embedding, one_hot):
edge cases and errors beyond the op table (tests/op_table/loss.py).

References: numpy closed forms, and torch.nn.functional where installed."""
import warnings

import numpy as np
import pytest

import tensorplay as tp

F = tp.nn.functional
RNG = np.random.default_rng(0)


def _t(a, dtype=tp.float64, grad=False):
    return tp.tensor(np.asarray(a), dtype=dtype, requires_grad=grad)


def _np_nll(logp, t, w=None, ignore=-100, reduction="mean"):
    """Independent loop: class axis 1, any trailing dims."""
    lp = np.moveaxis(logp, 1, -1).reshape(-1, logp.shape[1])
    tt = np.asarray(t).reshape(-1)
    w = np.ones(logp.shape[1]) if w is None else np.asarray(w, np.float64)
    losses, total = np.zeros(tt.size), 0.0
    for i, k in enumerate(tt):
        if k != ignore:
            losses[i] = -w[k] * lp[i, k]
            total += w[k]
    if reduction == "none":
        return losses.reshape(np.shape(t))
    return losses.sum() if reduction == "sum" else losses.sum() / total


# ---------------------------------------------------------------- nll / cross_entropy
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_weighted_mean_and_ignore_against_a_loop(reduction):
    logp = np.log(RNG.dirichlet(np.ones(4), 6))
    t = np.array([0, 3, -100, 2, 3, 1])
    w = np.array([0.5, 2.0, 1.0, 3.0])
    got = F.nll_loss(_t(logp), tp.tensor(t), weight=_t(w), reduction=reduction)
    np.testing.assert_allclose(got.detach().numpy(), _np_nll(logp, t, w, reduction=reduction),
                               rtol=1e-14)


def test_nll_ignore_index_may_be_any_int_and_out_of_range():
    logp = np.log(RNG.dirichlet(np.ones(3), 4))
    t = np.array([7, 0, 7, 2])
    got = F.nll_loss(_t(logp), tp.tensor(t), ignore_index=7)
    assert float(got) == pytest.approx(_np_nll(logp, t, ignore=7), rel=1e-14)


def test_all_ignored_batch_gives_nan_mean_zero_sum_zero_grad():
    x = _t(RNG.standard_normal((3, 4)), grad=True)
    t = tp.tensor([-100, -100, -100])
    mean = F.cross_entropy(x, t)
    assert np.isnan(float(mean))
    mean.backward()
    np.testing.assert_array_equal(x.grad.detach().numpy(), np.zeros((3, 4)))
    assert float(F.cross_entropy(x, t, reduction="sum")) == 0.0
    none = F.cross_entropy(x, t, reduction="none")
    np.testing.assert_array_equal(none.detach().numpy(), np.zeros(3))
    # label smoothing: the mean is 0/0 as well (PyTorch)
    assert np.isnan(float(F.cross_entropy(x, t, label_smoothing=0.2)))


def test_target_out_of_range_is_an_index_error_from_the_kernel():
    x = tp.randn(3, 4, requires_grad=True)
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        F.cross_entropy(x, tp.tensor([0, 4, 1]))
    with pytest.raises(IndexError, match="Target -3 is out of bounds"):
        F.nll_loss(x, tp.tensor([0, -3, 1]), reduction="none")
    with pytest.raises(IndexError, match="Target 9"):
        F.nll_loss(tp.randn(2, 3, 2), tp.tensor([[0, 1], [9, 0]]))


def test_nll_loss_backward_leaves_nothing_half_written():
    from tensorplay._ops.nn import nll_loss_backward
    with pytest.raises(IndexError, match="nll_loss_backward"):
        nll_loss_backward(tp.tensor(1.0), tp.tensor([0, 5]), 3)


@pytest.mark.parametrize("shape", [(4,), (3, 4), (2, 4, 3), (2, 4, 2, 3)])
def test_cross_entropy_shapes_against_a_closed_form(shape):
    x = RNG.standard_normal(shape)
    cdim = 1 if len(shape) > 1 else 0
    c = shape[cdim]
    tshape = shape[:1] + shape[2:] if len(shape) > 1 else ()
    t = RNG.integers(0, c, tshape)
    lp = x - np.log(np.exp(x).sum(cdim, keepdims=True))
    want = _np_nll(lp if cdim else lp[None], t if cdim else np.array([t]), reduction="none")
    got = F.cross_entropy(_t(x), tp.tensor(t), reduction="none")
    assert tuple(got.shape) == tuple(tshape)
    np.testing.assert_allclose(got.detach().numpy().reshape(-1), np.reshape(want, -1), rtol=1e-13)


def test_label_smoothing_with_weights_is_pytorchs_formula():
    x = RNG.standard_normal((5, 3))
    t = np.array([2, 0, -100, 1, 1])
    w = np.array([0.2, 1.0, 3.0])
    e = 0.3
    lp = x - np.log(np.exp(x).sum(1, keepdims=True))
    keep = t != -100
    nll = _np_nll(lp, t, w)
    smooth = -(lp * w).sum(1) * keep
    want = (1 - e) * nll + e / 3 * smooth.sum() / w[t[keep]].sum()
    got = F.cross_entropy(_t(x), tp.tensor(t), weight=_t(w), label_smoothing=e)
    assert float(got) == pytest.approx(want, rel=1e-13)


def test_probability_targets_receive_a_gradient():
    x = _t(RNG.standard_normal((3, 4)), grad=True)
    q = _t(RNG.dirichlet(np.ones(4), 3), grad=True)
    F.cross_entropy(x, q).backward()
    lp = x.detach().numpy() - np.log(np.exp(x.detach().numpy()).sum(1, keepdims=True))
    np.testing.assert_allclose(q.grad.detach().numpy(), -lp / 3, rtol=1e-13)
    p = np.exp(lp)
    qn = q.detach().numpy()
    np.testing.assert_allclose(x.grad.detach().numpy(), (p * qn.sum(1, keepdims=True)
                                                - qn) / 3, rtol=1e-12)


def test_cross_entropy_against_torch_values_and_gradients():
    torch = pytest.importorskip("torch")
    cases = [
        dict(reduction="mean"), dict(reduction="sum"), dict(reduction="none"),
        dict(weight=[0.3, 1.0, 2.0, 0.5]), dict(ignore_index=2),
        dict(weight=[0.3, 1.0, 2.0, 0.5], ignore_index=1, label_smoothing=0.15),
        dict(weight=[0.3, 1.0, 2.0, 0.5], label_smoothing=0.4, reduction="sum"),
        dict(label_smoothing=0.4, reduction="none", ignore_index=0),
    ]
    for shape in [(6, 4), (3, 4, 5), (4,)]:
        x = RNG.standard_normal(shape)
        tshape = shape[:1] + shape[2:] if len(shape) > 1 else ()
        t = RNG.integers(0, 4, tshape)
        for kw in cases:
            kp = {k: (_t(v) if k == "weight" else v) for k, v in kw.items()}
            kt = {k: (torch.tensor(v, dtype=torch.float64) if k == "weight" else v)
                  for k, v in kw.items()}
            xp, xt = _t(x, grad=True), torch.tensor(x, requires_grad=True)
            lp = F.cross_entropy(xp, tp.tensor(t), **kp)
            lt = torch.nn.functional.cross_entropy(xt, torch.tensor(t), **kt)
            np.testing.assert_allclose(lp.detach().numpy(), lt.detach().numpy(), rtol=1e-12,
                                       atol=1e-14, err_msg=str((shape, kw)))
            u = RNG.standard_normal(lt.shape)
            (lp * _t(u)).sum().backward()
            (lt * torch.tensor(u)).sum().backward()
            np.testing.assert_allclose(xp.grad.numpy(), xt.grad.numpy(), rtol=1e-11,
                                       atol=1e-14, err_msg=str((shape, kw)))


def test_second_order_of_cross_entropy_against_torch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((4, 3))
    t = np.array([0, 2, -100, 1])
    w = np.array([1.0, 2.0, 0.5])
    v = RNG.standard_normal((4, 3))
    res = []
    for lib, mk in ((tp, _t), (torch, lambda a, grad=False: torch.tensor(
            a, dtype=torch.float64, requires_grad=grad))):
        xx = mk(x, grad=True)
        fn = F if lib is tp else torch.nn.functional
        loss = fn.cross_entropy(xx, lib.tensor(t), weight=mk(w), label_smoothing=0.1)
        g, = lib.autograd.grad(loss, xx, create_graph=True)
        hv, = lib.autograd.grad((g * mk(v)).sum(), xx)
        res.append(hv.detach().numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-11, atol=1e-14)


@pytest.mark.parametrize("call,exc,match", [
    (lambda: F.cross_entropy(tp.randn(3, 4), tp.zeros(3, dtype=tp.int64), reduction="avg"),
     ValueError, "not a valid value for reduction"),
    (lambda: F.nll_loss(tp.randn(3, 4), tp.zeros(2, dtype=tp.int64)), ValueError,
     "batch_size"),
    (lambda: F.nll_loss(tp.randn(3, 4), tp.zeros(3, 2, dtype=tp.int64)), RuntimeError,
     "multi-target"),
    (lambda: F.nll_loss(tp.randn(2, 4, 3), tp.zeros(2, 4, dtype=tp.int64)), RuntimeError,
     r"Expected target size \[2, 3\]"),
    (lambda: F.nll_loss(tp.randn(3, 4), tp.zeros(3)), RuntimeError, "integer"),
    (lambda: F.nll_loss(tp.randn(3, 4), tp.zeros(3, dtype=tp.int64), weight=tp.ones(3)),
     RuntimeError, "for all 4 classes"),
    (lambda: F.cross_entropy(tp.randn(3, 4), tp.zeros(3, dtype=tp.int64), label_smoothing=1.5),
     RuntimeError, "label_smoothing must be between"),
    (lambda: F.cross_entropy(tp.randn(3, 4), tp.rand(3, 3)), RuntimeError, "input's shape"),
    (lambda: F.cross_entropy(tp.randn(3, 4), tp.rand(3, 4), ignore_index=1), RuntimeError,
     "ignore_index is not supported"),
    (lambda: F.cross_entropy(tp.randn(3, 4), tp.zeros(3, dtype=tp.bool)), RuntimeError,
     "target"),
    (lambda: F.nll_loss(tp.randn(3, 4), tp.zeros(3, dtype=tp.int64), ignore_index=1.5),
     TypeError, "ignore_index"),
    (lambda: F.mse_loss(tp.ones(3), tp.ones(4)), RuntimeError, "size"),
    (lambda: F.mse_loss(tp.ones(3, dtype=tp.int64), tp.ones(3, dtype=tp.int64)),
     NotImplementedError, "floating"),
    (lambda: F.l1_loss(tp.ones(3), tp.ones(3), reduction=None), ValueError, "reduction"),
    (lambda: F.binary_cross_entropy(tp.tensor([1.5]), tp.tensor([1.0])), RuntimeError,
     "between 0 and 1"),
    (lambda: F.binary_cross_entropy(tp.rand(3), tp.rand(3, 1)), ValueError, "target size"),
    (lambda: F.binary_cross_entropy_with_logits(tp.rand(3), tp.rand(3), pos_weight=[1.0]),
     TypeError, "pos_weight"),
    (lambda: F.smooth_l1_loss(tp.rand(3), tp.rand(3), beta=-1.0), RuntimeError, "negative"),
    (lambda: F.huber_loss(tp.rand(3), tp.rand(3), delta=0.0), RuntimeError, "non-positive"),
    (lambda: F.kl_div(tp.rand(3), tp.rand(3), reduction="x"), ValueError, "reduction"),
    (lambda: F.kl_div(tp.rand(3), tp.rand(3), log_target=1), TypeError, "log_target"),
    (lambda: F.cosine_similarity(tp.rand(2, 3), tp.rand(2, 3), dim=2), IndexError, "range"),
    (lambda: F.pairwise_distance(tp.rand(2, 3), tp.rand(2, 4)), RuntimeError, "size"),
    (lambda: F.dropout(tp.rand(3), 1.5), ValueError, "between 0 and 1"),
    (lambda: F.dropout(tp.rand(3), 0.5, training=1), TypeError, "training"),
    (lambda: F.dropout(tp.ones(3, dtype=tp.int64), 0.5), RuntimeError, "floating"),
    (lambda: F.dropout2d(tp.rand(3), 0.5), RuntimeError, "3D"),
    (lambda: F.linear(tp.rand(2, 3), tp.rand(4, 5)), RuntimeError, "cannot be multiplied"),
    (lambda: F.linear(tp.rand(2, 3), tp.rand(4, 3, dtype=tp.float64)), RuntimeError, "dtype"),
    (lambda: F.bilinear(tp.rand(2, 3), tp.rand(2, 4), tp.rand(5, 3, 3)), RuntimeError,
     "bilinear"),
    (lambda: F.embedding(tp.tensor([0, 5]), tp.rand(3, 2)), IndexError, "out of range"),
    (lambda: F.embedding(tp.tensor([0.0]), tp.rand(3, 2)), RuntimeError, "integer"),
    (lambda: F.embedding(tp.tensor([0]), tp.rand(3, 2), padding_idx=3), ValueError,
     "Padding_idx"),
    (lambda: F.one_hot(tp.tensor([-1, 2])), RuntimeError, "non-negative"),
    (lambda: F.one_hot(tp.tensor([1, 2]), 2), RuntimeError, "smaller than num_classes"),
    (lambda: F.one_hot(tp.tensor([1.0])), RuntimeError, "integer"),
    (lambda: F.one_hot(tp.zeros(0, dtype=tp.int64)), RuntimeError, "empty"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_legacy_size_average_and_reduce_map_to_reduction():
    x, t = tp.randn(3, 4), tp.tensor([0, 1, 2])
    with pytest.warns(UserWarning, match="reduction='sum'"):
        got = F.cross_entropy(x, t, size_average=False)
    assert float(got) == pytest.approx(float(F.cross_entropy(x, t, reduction="sum")))
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert F.nll_loss(x, t, reduce=False).shape == (3,)


# ---------------------------------------------------------------- elementwise losses
def test_elementwise_losses_against_torch_every_reduction():
    torch = pytest.importorskip("torch")
    a = RNG.standard_normal((3, 5))
    b = RNG.standard_normal((3, 5))
    p = RNG.uniform(0.01, 0.99, (3, 5))
    q = RNG.uniform(0, 1, (3, 5))
    w = RNG.uniform(0.5, 2, (5,))
    calls = [
        ("mse_loss", (a, b), {}), ("l1_loss", (a, b), {}),
        ("smooth_l1_loss", (a, b), {"beta": 0.5}), ("smooth_l1_loss", (a, b), {"beta": 0.0}),
        ("huber_loss", (a, b), {"delta": 0.5}),
        ("binary_cross_entropy", (p, q), {"weight": w}),
        ("binary_cross_entropy_with_logits", (a, q), {"weight": w, "pos_weight": w[::-1]}),
        ("kl_div", (np.log(p), q), {}), ("kl_div", (np.log(p), np.log(q)), {"log_target": True}),
    ]
    for name, (x, y), kw in calls:
        reds = ["none", "mean", "sum"] + (["batchmean"] if name == "kl_div" else [])
        for red in reds:
            xs = [_t(x, grad=True), _t(y, grad=True)]
            ts = [torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)]
            kp = {k: _t(v.copy()) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
            kt = {k: torch.tensor(v.copy()) if isinstance(v, np.ndarray) else v
                  for k, v in kw.items()}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lp = getattr(F, name)(*xs, reduction=red, **kp)
                lt = getattr(torch.nn.functional, name)(*ts, reduction=red, **kt)
            np.testing.assert_allclose(lp.detach().numpy(), lt.detach().numpy(), rtol=1e-12,
                                       err_msg=f"{name} {red} {kw}")
            u = RNG.standard_normal(lt.shape)
            (lp * _t(u)).sum().backward()
            (lt * torch.tensor(u)).sum().backward()
            for gp, gt in zip(xs, ts):
                np.testing.assert_allclose(gp.grad.numpy(), gt.grad.numpy(), rtol=1e-10,
                                           atol=1e-12, err_msg=f"{name} {red} grad")


def test_bce_clamps_logs_at_minus_100():
    got = F.binary_cross_entropy(_t([0.0, 1.0, 0.0]), _t([1.0, 0.0, 0.0]), reduction="none")
    np.testing.assert_array_equal(got.detach().numpy(), [100.0, 100.0, 0.0])


def test_bce_with_logits_is_stable_for_large_logits():
    got = F.binary_cross_entropy_with_logits(_t([800.0, -800.0]), _t([0.0, 1.0]),
                                             reduction="none")
    np.testing.assert_allclose(got.detach().numpy(), [800.0, 800.0])


def test_kl_div_mean_warns_and_batchmean_divides_by_batch():
    x, y = tp.log(tp.rand(4, 3) + 0.1), tp.rand(4, 3)
    with pytest.warns(UserWarning, match="batchmean"):
        mean = F.kl_div(x, y)
    total = F.kl_div(x, y, reduction="sum")
    assert float(mean) == pytest.approx(float(total) / 12)
    assert float(F.kl_div(x, y, reduction="batchmean")) == pytest.approx(float(total) / 4)
    # xlogy: a zero target contributes 0 (no nan from 0 * log 0)
    assert float(F.kl_div(x, tp.zeros(4, 3), reduction="sum")) == 0.0


def test_mse_loss_broadcasting_warns():
    with pytest.warns(UserWarning, match="different to the input size"):
        got = F.mse_loss(tp.ones(3, 1), tp.zeros(3))
    assert float(got) == 1.0


def test_distances_against_numpy():
    a, b = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    np.testing.assert_allclose(F.cosine_similarity(_t(a), _t(b)).detach().numpy(), cos, rtol=1e-13)
    np.testing.assert_allclose(F.pairwise_distance(_t(a), _t(b)).detach().numpy(),
                               np.linalg.norm(a - b + 1e-6, axis=1), rtol=1e-13)
    assert F.pairwise_distance(_t(a[0]), _t(b[0])).shape == ()
    assert F.pairwise_distance(_t(a), _t(b), keepdim=True).shape == (4, 1)
    # a zero vector: eps keeps it finite (0)
    assert float(F.cosine_similarity(tp.zeros(1, 3), _t(b[:1]))) == 0.0


# ---------------------------------------------------------------- linear, bilinear
def test_linear_and_bilinear_against_torch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3, 4))
    w, b = RNG.standard_normal((5, 4)), RNG.standard_normal(5)
    np.testing.assert_allclose(F.linear(_t(x), _t(w), _t(b)).detach().numpy(),
                               x @ w.T + b, rtol=1e-13)
    np.testing.assert_allclose(F.linear(_t(x), _t(w[0])).detach().numpy(), x @ w[0], rtol=1e-13)
    x1, x2 = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 3, 2))
    wb, bb = RNG.standard_normal((5, 4, 2)), RNG.standard_normal(5)
    want = torch.nn.functional.bilinear(torch.tensor(x1), torch.tensor(x2), torch.tensor(wb),
                                        torch.tensor(bb)).detach().numpy()
    np.testing.assert_allclose(F.bilinear(_t(x1), _t(x2), _t(wb), _t(bb)).detach().numpy(), want,
                               rtol=1e-12)


# ---------------------------------------------------------------- dropout
def test_dropout_is_seeded_scaled_and_identity_in_eval():
    x = tp.ones(2000)
    tp.manual_seed(5)
    a = F.dropout(x, 0.3)
    tp.manual_seed(5)
    b = F.dropout(x, 0.3)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    vals = set(np.unique(a.detach().numpy()).tolist())
    assert vals == {0.0, np.float32(1 / 0.7)}
    kept = (a.detach().numpy() != 0).mean()
    assert abs(kept - 0.7) < 0.05                     # 2000 draws: 5 sigma ~ 0.05
    assert F.dropout(x, 0.3, training=False) is x
    assert F.dropout(x, 0.0) is x
    np.testing.assert_array_equal(F.dropout(x, 1.0).detach().numpy(), np.zeros(2000))


def test_dropout_gradient_is_the_mask_and_inplace_writes_the_input():
    x = tp.randn(50, requires_grad=True)
    y = F.dropout(x, 0.5)
    y.sum().backward()
    mask = (y.detach().numpy() != 0) * 2.0
    np.testing.assert_array_equal(x.grad.detach().numpy(), mask)
    z = tp.ones(10)
    out = F.dropout(z, 0.5, inplace=True)
    assert out is z and set(np.unique(z.detach().numpy()).tolist()) <= {0.0, 2.0}


def test_channel_dropout_zeroes_whole_channels():
    x = tp.ones(8, 16, 3, 3)
    y = F.dropout2d(x, 0.5).detach().numpy()
    per_channel = y.reshape(8, 16, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1))
    y1 = F.dropout1d(tp.ones(4, 6, 5), 0.5).detach().numpy()
    assert np.all((y1 == 0).all(-1) | (y1 == 2.0).all(-1))


def test_alpha_dropout_keeps_mean_and_variance():
    tp.manual_seed(0)
    x = tp.randn(200000, dtype=tp.float64)
    y = F.alpha_dropout(x, 0.2, training=True).detach().numpy()
    assert abs(y.mean()) < 0.02 and abs(y.var() - 1) < 0.03
    assert F.alpha_dropout(x, 0.2) is x                       # training=False default


# ---------------------------------------------------------------- embedding, one_hot
def test_embedding_padding_idx_gets_no_gradient():
    w = _t(RNG.standard_normal((5, 3)), grad=True)
    idx = tp.tensor([[0, 2, 2], [4, 2, 1]])
    out = F.embedding(idx, w, padding_idx=2)
    np.testing.assert_array_equal(out.detach().numpy(), w.detach().numpy()[idx.detach().numpy()])
    out.sum().backward()
    want = np.zeros((5, 3))
    for i in (0, 4, 1):
        want[i] += 1
    np.testing.assert_array_equal(w.grad.detach().numpy(), want)


def test_embedding_max_norm_renormalises_looked_up_rows_like_torch():
    torch = pytest.importorskip("torch")
    w0 = RNG.standard_normal((5, 3)) * 3
    idx = [[0, 3], [3, 1]]
    wp, wt = _t(w0.copy()), torch.tensor(w0.copy())
    op = F.embedding(tp.tensor(idx), wp, max_norm=1.5)
    ot = torch.nn.functional.embedding(torch.tensor(idx), wt, max_norm=1.5)
    np.testing.assert_allclose(op.detach().numpy(), ot.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(wp.detach().numpy(), wt.detach().numpy(), rtol=1e-12)     # in place


def test_one_hot():
    got = F.one_hot(tp.tensor([[0, 2], [1, 0]]))
    assert got.dtype == tp.int64 and got.shape == (2, 2, 3)
    np.testing.assert_array_equal(got.detach().numpy(), np.eye(3, dtype=np.int64)[[[0, 2], [1, 0]]])
    assert F.one_hot(tp.tensor([1]), 4).shape == (1, 4)
