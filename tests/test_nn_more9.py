"""Issue 9, second step: instance/rms/local-response norm, BatchNorm3d, glu, pixel
and channel shuffles, max_unpool, lp_pool and the small activations, against
torch 2.13 (float64, copied weights), closed forms and finite differences.
Losses and embedding_bag are in test_nn_more9_loss.py."""
import warnings

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import nn

torch = pytest.importorskip("torch")
F, TF = tp.nn.functional, torch.nn.functional
RNG = np.random.default_rng(9)


def _np(t):
    return t.detach().numpy()


def _pair(a, grad=True):
    """The same float64 array as a tensorplay and a torch tensor."""
    return (tp.tensor(a, dtype=tp.float64, requires_grad=grad),
            torch.tensor(a, dtype=torch.float64, requires_grad=grad))


def _check(fn_tp, fn_torch, arrays, rtol=1e-10, atol=1e-12):
    """Values and the VJP of a random cotangent, w.r.t. every array, agree."""
    ts = [_pair(a) for a in arrays]
    y = fn_tp(*[t for t, _ in ts])
    yt = fn_torch(*[u for _, u in ts])
    np.testing.assert_allclose(_np(y), yt.detach().numpy(), rtol=rtol, atol=atol)
    g = RNG.standard_normal(tuple(yt.shape))
    gs = tp.autograd.grad(y, [t for t, _ in ts], tp.tensor(g))
    gts = torch.autograd.grad(yt, [u for _, u in ts], torch.tensor(g))
    for a, b in zip(gs, gts):
        np.testing.assert_allclose(_np(a), b.numpy(), rtol=rtol, atol=atol)


def _gradcheck(fn, *arrays):
    ts = [tp.tensor(a, dtype=tp.float64, requires_grad=True) for a in arrays]
    assert tp.autograd.gradcheck(fn, ts, check_forward_ad=True)


# ---------------------------------------------------------------- instance_norm
@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 4, 3), (1, 2, 2, 3, 2)])
def test_instance_norm_affine_against_torch(shape):
    x, w, b = RNG.standard_normal(shape), RNG.random(shape[1]) + 0.5, RNG.standard_normal(shape[1])
    _check(lambda x, w, b: F.instance_norm(x, weight=w, bias=b, eps=1e-3),
           lambda x, w, b: TF.instance_norm(x, weight=w, bias=b, eps=1e-3), [x, w, b])


def test_instance_norm_running_stats_update_and_eval():
    x = RNG.standard_normal((4, 3, 6)) * 2 + 1
    rm, rv = tp.zeros(3, dtype=tp.float64), tp.ones(3, dtype=tp.float64)
    rmt, rvt = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    y = F.instance_norm(tp.tensor(x), rm, rv, momentum=0.3)
    yt = TF.instance_norm(torch.tensor(x), rmt, rvt, momentum=0.3)
    np.testing.assert_allclose(_np(y), yt.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(rm), rmt.numpy(), rtol=1e-12)
    np.testing.assert_allclose(_np(rv), rvt.numpy(), rtol=1e-12)
    # eval: the running statistics normalise
    _check(lambda x: F.instance_norm(x, rm, rv, use_input_stats=False),
           lambda x: TF.instance_norm(x, rmt, rvt, use_input_stats=False), [x])


@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (2, 3, 7)), ("InstanceNorm1d", (3, 7)),
                                       ("InstanceNorm2d", (2, 3, 4, 5)),
                                       ("InstanceNorm3d", (3, 2, 3, 4))])
def test_instance_norm_modules_train_and_eval_with_torch_state(cls, shape):
    m, mt = getattr(nn, cls)(3, affine=True, track_running_stats=True), \
        getattr(torch.nn, cls)(3, affine=True, track_running_stats=True)
    with torch.no_grad():
        mt.weight.uniform_(0.5, 1.5)
        mt.bias.normal_()
    m.load_state_dict(mt.state_dict())
    m.double(), mt.double()
    x = RNG.standard_normal(shape)
    for _ in range(2):
        np.testing.assert_allclose(_np(m(tp.tensor(x))), mt(torch.tensor(x)).detach().numpy(),
                                   rtol=1e-10, atol=1e-12)
    for k, v in mt.state_dict().items():
        np.testing.assert_allclose(_np(m.state_dict()[k]), v.numpy(), rtol=1e-12)
    m.eval(), mt.eval()
    np.testing.assert_allclose(_np(m(tp.tensor(x))), mt(torch.tensor(x)).detach().numpy(),
                               rtol=1e-10, atol=1e-12)


def test_instance_norm_errors_and_defaults():
    assert repr(nn.InstanceNorm2d(4)) == repr(torch.nn.InstanceNorm2d(4))
    assert list(nn.InstanceNorm1d(4).state_dict()) == []
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        F.instance_norm(tp.randn(2, 3, 1))
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        F.instance_norm(tp.randn(2, 3))
    with pytest.raises(ValueError, match="expected 3D or 4D input"):
        nn.InstanceNorm2d(3)(tp.randn(3, 4))
    with pytest.raises(ValueError, match="match num_features"):
        nn.InstanceNorm1d(3, affine=True)(tp.randn(2, 4, 5))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(3)(tp.randn(2, 4, 5))
    with pytest.raises(RuntimeError, match="weight of shape"):
        F.instance_norm(tp.randn(2, 3, 4), weight=tp.ones(4))
    with pytest.raises(RuntimeError, match="running_mean and running_var"):
        F.instance_norm(tp.randn(2, 3, 4), use_input_stats=False)
    with pytest.raises(RuntimeError, match="floating"):
        F.instance_norm(tp.ones(2, 3, 4, dtype=tp.int64))


def test_batchnorm3d_against_torch():
    m, mt = nn.BatchNorm3d(2).double(), torch.nn.BatchNorm3d(2).double()
    x = RNG.standard_normal((3, 2, 2, 3, 2))
    _check(m, mt, [x])
    np.testing.assert_allclose(_np(m.running_var), mt.running_var.numpy(), rtol=1e-12)
    m.eval(), mt.eval()
    _check(m, mt, [x])
    with pytest.raises(ValueError, match="expected 5D input"):
        m(tp.randn(2, 2, 3))


def test_hint_only_layers_raise_with_a_hint():
    with pytest.raises(NotImplementedError, match="LocalResponseNorm"):
        nn.CrossMapLRN2d(3)
    with pytest.raises(NotImplementedError, match="BatchNorm1d/2d/3d"):
        nn.SyncBatchNorm(4)
    with pytest.raises(NotImplementedError, match="one process"):
        nn.SyncBatchNorm.convert_sync_batchnorm(nn.Linear(2, 2))
    with pytest.raises(NotImplementedError, match="fractional"):
        F.fractional_max_pool2d(tp.randn(1, 1, 4, 4), 2, output_size=2)
    with pytest.raises(NotImplementedError, match="fractional"):
        nn.FractionalMaxPool2d(2, output_size=2)


# ---------------------------------------------------------------- rms_norm, LRN
@pytest.mark.parametrize("ns,eps", [((5,), None), ((4, 5), 1e-3), (5, 0.0)])
def test_rms_norm_against_torch(ns, eps):
    x = RNG.standard_normal((3, 4, 5))
    shape = (ns,) if isinstance(ns, int) else ns
    w = RNG.random(shape) + 0.5
    _check(lambda x, w: F.rms_norm(x, ns, w, eps), lambda x, w: TF.rms_norm(x, shape, w, eps),
           [x, w])          # (torch's F.rms_norm wants a tuple; tensorplay takes an int too)
    _check(lambda x: F.rms_norm(x, ns, eps=eps), lambda x: TF.rms_norm(x, shape, eps=eps), [x])


def test_rms_norm_default_eps_is_the_dtypes_and_module():
    x = np.full((2, 3), 1e-5, np.float32)           # eps matters at this scale
    got = F.rms_norm(tp.tensor(x), (3,))
    want = TF.rms_norm(torch.tensor(x), (3,))
    np.testing.assert_allclose(_np(got), want.numpy(), rtol=1e-6)
    m, mt = nn.RMSNorm([2, 3]), torch.nn.RMSNorm([2, 3])
    assert repr(m) == repr(mt) and m.weight.shape == (2, 3)
    with pytest.raises(RuntimeError, match="normalized_shape"):
        F.rms_norm(tp.randn(2, 3), (4,))
    with pytest.raises(RuntimeError, match="same shape as normalized_shape"):
        F.rms_norm(tp.randn(2, 3), (3,), tp.ones(2))


@pytest.mark.parametrize("shape,size", [((2, 5, 4), 3), ((2, 6, 3, 2), 2), ((1, 4, 2, 2, 2), 4),
                                        ((2, 3, 4), 1), ((2, 3, 2, 2), 7)])
def test_local_response_norm_against_torch(shape, size):
    x = RNG.standard_normal(shape)
    _check(lambda x: F.local_response_norm(x, size, alpha=0.3, beta=0.6, k=1.5),
           lambda x: TF.local_response_norm(x, size, alpha=0.3, beta=0.6, k=1.5), [x])
    m = nn.LocalResponseNorm(size)
    assert repr(m) == repr(torch.nn.LocalResponseNorm(size))


def test_local_response_norm_errors_and_gradcheck():
    with pytest.raises(ValueError, match="3D or higher"):
        F.local_response_norm(tp.randn(2, 3), 2)
    _gradcheck(lambda x: F.local_response_norm(x, 3, alpha=0.5), RNG.standard_normal((1, 4, 3)))
    _gradcheck(lambda x, w: F.rms_norm(x, (3,), w), RNG.standard_normal((2, 3)),
               RNG.random(3) + 0.5)
    _gradcheck(lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
               RNG.standard_normal((2, 2, 3)), RNG.random(2) + 0.5, RNG.standard_normal(2))


# ---------------------------------------------------------------- glu, shuffles
def test_glu_and_module_against_torch():
    x = RNG.standard_normal((3, 4, 6))
    for dim in (-1, 1, 0):
        if x.shape[dim] % 2 == 0:
            _check(lambda x: F.glu(x, dim), lambda x: TF.glu(x, dim), [x])
    _check(nn.GLU(1), torch.nn.GLU(1), [x])
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(tp.randn(3, 3), 0)
    with pytest.raises(RuntimeError, match="scalars"):
        F.glu(tp.tensor(1.0))
    with pytest.raises(IndexError, match="out of range"):
        F.glu(tp.randn(2, 2), 2)


@pytest.mark.parametrize("shape,r", [((2, 8, 3, 2), 2), ((9, 2, 3), 3), ((2, 1, 4, 1, 1), 1)])
def test_pixel_shuffle_and_unshuffle_against_torch(shape, r):
    x = RNG.standard_normal(shape)
    _check(lambda x: F.pixel_shuffle(x, r), lambda x: TF.pixel_shuffle(x, r), [x])
    y = RNG.standard_normal(tuple(TF.pixel_shuffle(torch.tensor(x), r).shape))
    _check(lambda y: F.pixel_unshuffle(y, r), lambda y: TF.pixel_unshuffle(y, r), [y])
    _check(nn.PixelShuffle(r), torch.nn.PixelShuffle(r), [x])
    assert tp.equal(F.pixel_unshuffle(F.pixel_shuffle(tp.tensor(x), r), r), tp.tensor(x))
    assert tp.pixel_shuffle is F.pixel_shuffle


def test_channel_shuffle_against_torch_and_errors():
    x = RNG.standard_normal((2, 6, 3))
    _check(lambda x: F.channel_shuffle(x, 3), lambda x: TF.channel_shuffle(x, 3), [x])
    _check(nn.ChannelShuffle(2), torch.nn.ChannelShuffle(2), [RNG.standard_normal((1, 4, 2, 2))])
    for bad, exc, msg in [((tp.randn(1, 6, 4), 4), RuntimeError, "divisible by groups"),
                          ((tp.randn(6, 4), 2), RuntimeError, "> 2 dims"),
                          ((tp.randn(1, 6, 4), 0), RuntimeError, "must be positive"),
                          ((tp.randn(1, 6, 4), 2.0), TypeError, "must be int")]:
        with pytest.raises(exc, match=msg):
            F.channel_shuffle(*bad)
    for bad, msg in [((tp.randn(3, 4), 2), "at least 3 dimensions"),
                     ((tp.randn(5, 4, 4), 2), "divisible by the square"),
                     ((tp.randn(4, 4, 4), 0), "positive upscale_factor")]:
        with pytest.raises(RuntimeError, match=msg):
            F.pixel_shuffle(*bad)
    with pytest.raises(RuntimeError, match="height to be divisible"):
        F.pixel_unshuffle(tp.randn(1, 5, 4), 2)


# ---------------------------------------------------------------- max_unpool, lp_pool
@pytest.mark.parametrize("nd,shape,k,s,p", [(2, (2, 3, 6, 5), 2, None, 0), (2, (3, 7, 7), 3, 2, 1),
                                            (1, (2, 3, 9), 3, None, 1), (1, (3, 8), 2, 2, 0)])
def test_max_unpool_against_torch(nd, shape, k, s, p):
    pool, tpool = (F.max_pool2d, TF.max_pool2d) if nd == 2 else (F.max_pool1d, TF.max_pool1d)
    unpool, tunpool = (F.max_unpool2d, TF.max_unpool2d) if nd == 2 else \
        (F.max_unpool1d, TF.max_unpool1d)
    x = RNG.standard_normal(shape)
    yt, it = tpool(torch.tensor(x), k, s, p, return_indices=True)
    y, i = pool(tp.tensor(x), k, s, p, return_indices=True)
    np.testing.assert_array_equal(_np(i), it.numpy())
    out = tuple(shape[-nd:])          # the pooled input's own size: inside the window
    # values: the pooled maxima back in place (repeated indices carry equal values)
    np.testing.assert_array_equal(_np(unpool(y, i, k, s, p, output_size=out)),
                                  tunpool(yt, it, k, s, p, output_size=out).numpy())
    v = RNG.standard_normal(tuple(it.shape))
    if (s or k) >= k:                 # no repeated index: gradients agree with torch's too
        _check(lambda v: unpool(v, i, k, s, p, output_size=out),
               lambda v: tunpool(v, it, k, s, p, output_size=out), [v])
    default = [(L - 1) * (s or k) + k - 2 * p for L in it.shape[-nd:]]
    if default == list(shape[-nd:]) and (s or k) >= k:
        _check(lambda v: unpool(v, i, k, s, p), lambda v: tunpool(v, it, k, s, p), [v])
    m = (nn.MaxUnpool2d if nd == 2 else nn.MaxUnpool1d)(k, s, p)
    mt = (torch.nn.MaxUnpool2d if nd == 2 else torch.nn.MaxUnpool1d)(k, s, p)
    assert repr(m) == repr(mt)
    np.testing.assert_array_equal(_np(m(y, i, out)), mt(yt, it, out).numpy())


def test_max_unpool_overlapping_windows_keep_the_last_write():
    # stride 1 with kernel 2: neighbouring windows share their maximum
    x = np.array([[[0.0, 5.0, 1.0, 0.5]]])
    y, i = F.max_pool1d(tp.tensor(x), 2, 1, return_indices=True)
    assert _np(i).tolist() == [[[1, 1, 2]]]
    v = tp.tensor([[[3.0, 4.0, 7.0]]], requires_grad=True)
    out = F.max_unpool1d(v, i, 2, 1)
    # (torch documents repeated indices as nondeterministic; its CPU kernel writes in
    # varying order, so the closed form is the reference here)
    assert _np(out).tolist() == [[[0.0, 4.0, 7.0, 0.0]]]
    g, = tp.autograd.grad(out, v, tp.tensor([[[1.0, 2.0, 3.0, 4.0]]]))
    assert _np(g).tolist() == [[[0.0, 2.0, 3.0]]]       # the overwritten value: no gradient


def test_max_unpool_rejects_bad_indices_without_writing():
    y, i = F.max_pool2d(tp.randn(1, 1, 4, 4), 2, return_indices=True)
    for bad in (i * 10, -i - 1):
        with pytest.raises(RuntimeError, match="invalid max index"):
            F.max_unpool2d(y, bad, 2)
    with pytest.raises(RuntimeError, match="int64"):
        F.max_unpool2d(y, i.double(), 2)
    with pytest.raises(RuntimeError, match="same as that of the input"):
        F.max_unpool2d(y, i[..., :1], 2)
    with pytest.raises(ValueError, match="invalid output_size"):
        F.max_unpool2d(y, i, 2, output_size=(9, 9))
    with pytest.raises(ValueError, match="2 or 4 elements"):
        F.max_unpool2d(y, i, 2, output_size=(4,))
    with pytest.raises(RuntimeError, match="3d or 4d"):
        F.max_unpool2d(y[0, 0], i[0, 0], 2)
    # a valid index into a smaller output is still range-checked against it
    with pytest.raises(RuntimeError, match="invalid max index"):
        F.max_unpool2d(y, tp.full_like(i, 15), 2, output_size=(3, 3))


@pytest.mark.parametrize("p", [1, 2, 3, 1.5, float("inf")])
def test_lp_pool_against_torch(p):
    x = RNG.random((2, 3, 6, 5)) + 0.1             # positive: fractional powers defined
    _check(lambda x: F.lp_pool2d(x, p, 2), lambda x: TF.lp_pool2d(x, p, 2), [x])
    _check(lambda x: F.lp_pool2d(x, p, (3, 2), 2, True),
           lambda x: TF.lp_pool2d(x, p, (3, 2), 2, True), [x])
    x1 = RNG.random((2, 7)) + 0.1
    _check(lambda x: F.lp_pool1d(x, p, 3, 2), lambda x: TF.lp_pool1d(x, p, 3, 2), [x1])
    m, mt = nn.LPPool2d(p, 2), torch.nn.LPPool2d(p, 2)
    assert repr(m) == repr(mt)
    _check(m, mt, [x])


def test_lp_pool_gradcheck_and_errors():
    _gradcheck(lambda x: F.lp_pool2d(x, 2, 2), RNG.random((1, 2, 4, 4)) + 0.1)
    _gradcheck(lambda x: F.lp_pool1d(x, 3, 2), RNG.random((1, 2, 6)) + 0.1)
    with pytest.raises(RuntimeError, match="norm_type"):
        F.lp_pool1d(tp.randn(1, 4), 0, 2)
    with pytest.raises(RuntimeError):
        F.lp_pool2d(tp.ones(1, 1, 4, 4, dtype=tp.int64), 2, 2)


# ---------------------------------------------------------------- small activations
@pytest.mark.parametrize("name,args", [("hardshrink", (0.7,)), ("softshrink", (0.3,)),
                                       ("tanhshrink", ()), ("softsign", ()),
                                       ("threshold", (0.2, -3.0))])
def test_small_activations_against_torch(name, args):
    x = RNG.uniform(-2, 2, (4, 5))
    x[np.abs(np.abs(x) - 0.7) < 0.02] += 0.1       # away from the kinks
    x[np.abs(np.abs(x) - 0.3) < 0.02] += 0.1
    _check(lambda x: getattr(F, name)(x, *args), lambda x: getattr(TF, name)(x, *args), [x])


def test_threshold_inplace_softmin_and_softshrink_errors():
    x = RNG.standard_normal((3, 4))
    a, b = tp.tensor(x), torch.tensor(x)
    assert F.threshold(a, 0.1, 9.0, inplace=True) is a
    TF.threshold(b, 0.1, 9.0, inplace=True)
    np.testing.assert_array_equal(_np(a), b.numpy())
    a2 = tp.tensor(x)
    assert F.threshold_(a2, 0.1, 9.0) is a2
    np.testing.assert_array_equal(_np(a2), b.numpy())
    m = nn.Threshold(0.1, 9.0, inplace=True)
    c = tp.tensor(x)
    assert m(c) is c
    _check(lambda x: F.softmin(x, 1), lambda x: TF.softmin(x, 1), [x])
    with pytest.warns(UserWarning, match="Implicit dimension"):
        F.softmin(tp.tensor(x))
    _check(nn.Softmin(0), torch.nn.Softmin(0), [x])
    _check(nn.Softmax2d(), torch.nn.Softmax2d(), [RNG.standard_normal((2, 3, 2, 2))])
    with pytest.raises(RuntimeError, match="lambda must be in range"):
        F.softshrink(tp.tensor(x), -1.0)


def test_rrelu_eval_against_torch_and_training_is_seeded():
    x = RNG.standard_normal((5, 6))
    _check(lambda x: F.rrelu(x, 0.1, 0.3), lambda x: TF.rrelu(x, 0.1, 0.3), [x])
    _check(nn.RReLU().eval(), torch.nn.RReLU().eval(), [x])
    t = tp.tensor(x, requires_grad=True)
    tp.manual_seed(3)
    y = F.rrelu(t, 0.1, 0.3, training=True)
    tp.manual_seed(3)
    y2 = nn.RReLU(0.1, 0.3)(t)
    np.testing.assert_array_equal(_np(y), _np(y2))             # the same draw
    slope = _np(y) / x
    assert np.all(slope[x > 0] == 1.0)
    assert np.all((slope[x <= 0] >= 0.1) & (slope[x <= 0] <= 0.3))
    assert len(np.unique(slope[x < 0])) == (x < 0).sum()        # one draw per element
    g, = tp.autograd.grad(y.sum(), t)
    np.testing.assert_allclose(_np(g), slope, rtol=1e-14)      # the gradient is the slope
    c, c2 = tp.tensor(x), tp.tensor(x)
    assert F.rrelu(c, inplace=True) is c and F.rrelu_(c2) is c2
    np.testing.assert_allclose(_np(c), TF.rrelu(torch.tensor(x)).numpy(), rtol=1e-14)
    np.testing.assert_array_equal(_np(c), _np(c2))
    with pytest.raises(RuntimeError, match="Lower bound"):
        F.rrelu(t, 0.5, 0.1)


def test_feature_alpha_dropout_keeps_channels_mean_and_variance():
    x = tp.randn(400, 50, 4, dtype=tp.float64)
    assert F.feature_alpha_dropout(x, 0.5) is x                 # training=False default
    assert nn.FeatureAlphaDropout(0.3).eval()(x) is x
    tp.manual_seed(0)
    y = F.feature_alpha_dropout(x, 0.3, training=True)
    tp.manual_seed(0)
    y2 = nn.FeatureAlphaDropout(0.3)(x)
    np.testing.assert_array_equal(_np(y), _np(y2))
    d = _np(y)
    # a dropped channel is one constant (alpha' a (p - 1) + ... : the same value)
    const = np.ptp(d, axis=2) == 0
    assert 0.25 < const.mean() < 0.35
    assert abs(d.mean()) < 0.05 and abs(d.var() - 1) < 0.05
    assert float(F.feature_alpha_dropout(x, 1.0, training=True).abs().sum()) == 0
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.feature_alpha_dropout(x, 1.5, training=True)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        F.feature_alpha_dropout(tp.randn(5), 0.5, training=True)
    assert repr(nn.FeatureAlphaDropout()) == repr(torch.nn.FeatureAlphaDropout())


def test_upsample_aliases_warn_and_match_interpolate():
    x = RNG.standard_normal((1, 2, 3, 4))
    for fn, kw, tkw in [(F.upsample, dict(scale_factor=2, mode="bilinear", align_corners=False),
                         "upsample"),
                        (F.upsample_nearest, dict(size=(5, 7)), "upsample_nearest"),
                        (F.upsample_bilinear, dict(scale_factor=2), "upsample_bilinear")]:
        with pytest.warns(UserWarning, match=f"nn.functional.{tkw}` is deprecated"):
            got = fn(tp.tensor(x), **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = getattr(TF, tkw)(torch.tensor(x), **kw)
        np.testing.assert_allclose(_np(got), want.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kw", [dict(scale_factor=2), dict(scale_factor=(2, 3)),
                                dict(scale_factor=1.5, mode="bilinear"),
                                dict(scale_factor=0.5, mode="bilinear", align_corners=True),
                                dict(scale_factor=1.7, recompute_scale_factor=True)])
def test_upsample_module_scale_factor_variants(kw):
    x = RNG.standard_normal((1, 2, 4, 6))
    m, mt = nn.Upsample(**kw), torch.nn.Upsample(**kw)
    assert repr(m) == repr(mt)
    _check(m, mt, [x])
