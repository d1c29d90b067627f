"""Layer modules: constructor defaults, parameter names and shapes, repr, closed
forms (torch-free), and outputs and gradients against torch with the same
weights (float64)."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay import nn

RNG = np.random.default_rng(0)


def _np(t):
    return t.detach().numpy()


def _x(*shape):
    # values away from the kinks of piecewise activations (|x| > 0.05, not near 0.5)
    x = RNG.uniform(-3, 3, shape)
    x[np.abs(x) < 0.05] += 0.2
    x[np.abs(np.abs(x) - 0.5) < 0.05] += 0.2
    return x


# ---------------------------------------------------------------- torch-free
def test_flatten_unflatten_identity():
    x = tp.randn(2, 3, 4, 5)
    assert nn.Flatten()(x).shape == (2, 60)
    assert nn.Flatten(0, 2)(x).shape == (24, 5)
    assert nn.Unflatten(1, (3, 1))(tp.randn(2, 3)).shape == (2, 3, 1)
    assert nn.Identity(54, unused="x")(x) is x
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints"):
        nn.Unflatten(1, (2.0, 3))


def test_linear_shapes_and_errors():
    m = nn.Linear(5, 3)
    assert m.weight.shape == (3, 5) and m.bias.shape == (3,)
    assert nn.Linear(5, 3, bias=False).bias is None
    assert list(nn.Linear(5, 3, bias=False).state_dict()) == ["weight"]
    assert nn.Linear(2, 2, dtype=tp.float64).weight.dtype == tp.float64
    assert m(tp.randn(5)).shape == (3,)
    with pytest.raises(TypeError, match="in_features"):
        nn.Linear(2.5, 3)
    with pytest.raises(ValueError, match="out_features must be non-negative"):
        nn.Linear(2, -1)
    with pytest.raises(RuntimeError):
        m(tp.randn(2, 4))


def test_piecewise_closed_forms():
    x = _x(4, 6)
    t = tp.tensor(x)
    assert np.allclose(_np(nn.Softsign()(t)), x / (1 + np.abs(x)), atol=1e-15)
    assert np.allclose(_np(nn.Tanhshrink()(t)), x - np.tanh(x), atol=1e-15)
    assert np.array_equal(_np(nn.Threshold(0.1, 20.0)(t)), np.where(x > 0.1, x, 20.0))
    assert np.array_equal(_np(nn.Hardshrink(0.5)(t)), np.where(np.abs(x) > 0.5, x, 0))
    assert np.allclose(_np(nn.Softshrink(0.5)(t)),
                       np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0)))
    a, b = np.split(x, 2, axis=1)
    assert np.allclose(_np(nn.GLU()(t)), a / (1 + np.exp(-b)), atol=1e-15)
    p = nn.PReLU(6, init=0.1, dtype=tp.float64)
    assert p.weight.shape == (6,) and np.all(_np(p.weight) == 0.1)
    assert np.allclose(_np(p(t)), np.where(x > 0, x, 0.1 * x))
    with pytest.raises(RuntimeError, match="mismatch of parameter numbers"):
        nn.PReLU(3)(t)
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        nn.GLU(0)(tp.zeros(3, 2))
    with pytest.raises(ValueError, match="lambda must be greater or equal to 0"):
        nn.Softshrink(-1)
    sm = nn.Softmax(dim=1)(t)
    assert np.allclose(_np(sm).sum(1), 1, atol=1e-15)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        nn.Softmax()(t)


# ---------------------------------------------------------------- against torch
ACTIVATIONS = [
    ("ReLU", (), {}), ("ReLU6", (), {}), ("Sigmoid", (), {}), ("Tanh", (), {}),
    ("SiLU", (), {}), ("Mish", (), {}), ("GELU", (), {}), ("GELU", (), {"approximate": "tanh"}),
    ("ELU", (), {"alpha": 0.7}), ("CELU", (), {"alpha": 1.3}), ("SELU", (), {}),
    ("LeakyReLU", (0.2,), {}), ("Hardtanh", (-0.7, 1.2), {}), ("Hardsigmoid", (), {}),
    ("Hardswish", (), {}), ("Softplus", (), {"beta": 2.0, "threshold": 3.0}),
    ("LogSigmoid", (), {}), ("Softmax", (), {"dim": 1}), ("LogSoftmax", (), {"dim": -1}),
    ("Softmin", (), {"dim": 0}), ("Softmax2d", (), {}), ("Softsign", (), {}),
    ("Tanhshrink", (), {}), ("Threshold", (0.3, -1.0), {}), ("Hardshrink", (), {}),
    ("Softshrink", (0.4,), {}), ("PReLU", (), {}), ("PReLU", (3,), {"init": 0.3}),
    ("GLU", (), {"dim": 1}),
]


@pytest.mark.parametrize("name,args,kw", ACTIVATIONS,
                         ids=[f"{a[0]}{i}" for i, a in enumerate(ACTIVATIONS)])
def test_activation_against_torch(name, args, kw):
    torch = pytest.importorskip("torch")
    tm = getattr(torch.nn, name)(*args, **kw).double()
    m = getattr(nn, name)(*args, **kw).double()
    assert repr(tm) == repr(m)
    assert list(tm.state_dict()) == list(m.state_dict())
    x = _x(2, 6, 3, 2) if name in ("Softmax2d",) else _x(4, 6, 2)
    if name == "PReLU" and args:
        x = _x(4, 3, 2)
    tx, px = torch.tensor(x, requires_grad=True), tp.tensor(x, requires_grad=True)
    ty, py = tm(tx), m(px)
    assert np.allclose(ty.detach().numpy(), _np(py), rtol=1e-13, atol=1e-14)
    w = RNG.standard_normal(ty.shape)
    (ty * torch.tensor(w)).sum().backward()
    (py * tp.tensor(w)).sum().backward()
    # torch's float64 backward of these two uses float32 constants (1/alpha, 1/6):
    # ~1e-8 off the exact derivative, which tensorplay gives (checked here)
    rtol = 1e-7 if name in ("CELU", "Hardsigmoid") else 1e-12
    assert np.allclose(tx.grad.numpy(), px.grad.numpy(), rtol=rtol, atol=1e-13)
    if name == "CELU":
        a = kw["alpha"]
        assert np.allclose(px.grad.numpy(), w * np.where(x > 0, 1, np.exp(x / a)),
                           rtol=1e-14, atol=1e-15)
    if name == "Hardsigmoid":
        assert np.allclose(px.grad.numpy(), w * np.where(np.abs(x) < 3, 1 / 6, 0),
                           rtol=1e-15, atol=0)
    for (k, a), (_, b) in zip(tm.named_parameters(), m.named_parameters()):
        assert np.allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-13), k


@pytest.mark.parametrize("inplace_cls", ["ReLU", "ELU", "LeakyReLU", "Hardtanh", "ReLU6",
                                         "SELU", "SiLU"])
def test_inplace_repr_matches_torch(inplace_cls):
    torch = pytest.importorskip("torch")
    assert repr(getattr(torch.nn, inplace_cls)(inplace=True)) == \
        repr(getattr(nn, inplace_cls)(inplace=True))


def test_linear_against_torch():
    torch = pytest.importorskip("torch")
    for bias in (True, False):
        tm = torch.nn.Linear(4, 3, bias=bias).double()
        m = nn.Linear(4, 3, bias=bias).double()
        assert repr(tm) == repr(m)
        m.load_state_dict({k: tp.tensor(v.numpy()) for k, v in tm.state_dict().items()})
        x = RNG.standard_normal((2, 5, 4))
        tx, px = torch.tensor(x, requires_grad=True), tp.tensor(x, requires_grad=True)
        ty, py = tm(tx), m(px)
        assert np.allclose(ty.detach().numpy(), _np(py), rtol=1e-13, atol=1e-14)
        ty.sum().backward()
        py.sum().backward()
        for (k, a), (_, b) in zip(tm.named_parameters(), m.named_parameters()):
            assert np.allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12), k


# ---------------------------------------------------------------- wrappers over F
def _copy_in(tm, m):
    m.load_state_dict({k: tp.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


def _compare(tm, m, *inputs, rtol=1e-12, atol=1e-13, grad=True):
    """Same weights, same float64 inputs: outputs, input and parameter gradients
    (of a random weighting of the outputs) and buffers agree with torch."""
    torch = pytest.importorskip("torch")
    tm = tm.double()
    m = m.double()
    _copy_in(tm, m)
    tin = [torch.tensor(x, requires_grad=x.dtype.kind == "f" and grad) for x in inputs]
    pin = [tp.tensor(x, requires_grad=x.dtype.kind == "f" and grad) for x in inputs]
    to, po = tm(*tin), m(*pin)
    tos = to if isinstance(to, tuple) else (to,)
    pos = po if isinstance(po, tuple) else (po,)
    for a, b in zip(tos, pos):
        assert tuple(a.shape) == tuple(b.shape)
        assert np.allclose(a.detach().numpy(), _np(b), rtol=rtol, atol=atol)
    for (k, a), (_, b) in zip(tm.named_buffers(), m.named_buffers()):
        assert np.allclose(a.numpy(), b.numpy(), rtol=rtol, atol=atol), k
    if not grad:
        return tm, m
    w = RNG.standard_normal(tuple(tos[0].shape))
    (tos[0] * torch.tensor(w)).sum().backward()
    (pos[0] * tp.tensor(w)).sum().backward()
    for a, b in zip(tin, pin):
        if a.requires_grad:
            assert np.allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=atol)
    for (k, a), (_, b) in zip(tm.named_parameters(), m.named_parameters()):
        if a.grad is None:
            assert b.grad is None, k
        else:
            assert np.allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=atol), k
    return tm, m


def _both(name, *args, **kw):
    torch = pytest.importorskip("torch")
    tm, m = getattr(torch.nn, name)(*args, **kw), getattr(nn, name)(*args, **kw)
    assert repr(tm) == repr(m)
    assert list(tm.state_dict()) == list(m.state_dict())
    for (k, a), (_, b) in zip(tm.state_dict().items(), m.state_dict().items()):
        assert tuple(a.shape) == tuple(b.shape), k
    return tm, m


CONVS = [("Conv1d", (3, 4, 3), {}, (2, 3, 9)),
         ("Conv1d", (4, 6, 2), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2}, (2, 4, 9)),
         ("Conv1d", (3, 4, 4), {"padding": "same", "bias": False}, (2, 3, 7)),
         ("Conv2d", (3, 4, 3), {}, (2, 3, 6, 5)),
         ("Conv2d", (4, 6, (3, 2)), {"stride": (2, 1), "padding": (1, 0), "groups": 2},
          (2, 4, 7, 5)),
         ("Conv2d", (2, 3, 3), {"padding": "valid", "dilation": 2}, (1, 2, 7, 7)),
         ("Conv2d", (2, 3, 3), {"padding": 1, "padding_mode": "reflect"}, (1, 2, 5, 5)),
         ("Conv2d", (2, 3, 3), {"padding": 2, "padding_mode": "replicate"}, (1, 2, 5, 4)),
         ("Conv2d", (3, 4, 3), {}, (3, 6, 5)),                        # unbatched
         ("ConvTranspose1d", (3, 4, 3), {"stride": 2}, (2, 3, 5)),
         ("ConvTranspose2d", (4, 6, 3), {"stride": 2, "padding": 1, "output_padding": 1,
                                         "groups": 2}, (2, 4, 4, 3)),
         ("ConvTranspose2d", (2, 3, (2, 3)), {"dilation": 2, "bias": False}, (1, 2, 3, 4))]


@pytest.mark.filterwarnings("ignore:Using padding='same'")     # torch's, for even kernels
@pytest.mark.parametrize("name,args,kw,shape", CONVS, ids=[f"{c[0]}{i}" for i, c in
                                                           enumerate(CONVS)])
def test_conv_against_torch(name, args, kw, shape):
    pytest.importorskip("torch")
    if not hasattr(nn.functional, "conv2d"):
        pytest.skip("nn.functional.conv2d has not landed")
    tm, m = _both(name, *args, **kw)
    _compare(tm, m, RNG.standard_normal(shape))


def test_conv_init_and_errors():
    tp.manual_seed(0)
    m = nn.Conv2d(6, 8, 3, dtype=tp.float64)
    bound = 1 / np.sqrt(6 * 9)
    w, b = _np(m.weight), _np(m.bias)
    assert m.weight.shape == (8, 6, 3, 3) and np.all(np.abs(w) <= bound)
    assert np.abs(w).max() > 0.9 * bound and np.all(np.abs(b) <= bound)
    assert nn.ConvTranspose2d(4, 6, 3, groups=2).weight.shape == (4, 3, 3, 3)
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="groups must be a positive integer"):
        nn.Conv1d(3, 3, 3, groups=0)
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        nn.Conv2d(3, 3, 3, padding="full")
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        nn.Conv2d(3, 3, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(3, 3, 3, padding_mode="wrap")
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported'):
        nn.ConvTranspose2d(3, 3, 3, padding_mode="reflect")


def test_conv_transpose_output_size_against_torch():
    torch = pytest.importorskip("torch")
    if not hasattr(nn.functional, "conv_transpose2d"):
        pytest.skip("nn.functional.conv_transpose2d has not landed")
    tm, m = _both("ConvTranspose2d", 2, 3, 3, stride=2)
    tm, m = tm.double(), m.double()
    _copy_in(tm, m)
    x = RNG.standard_normal((1, 2, 4, 4))
    a = tm(torch.tensor(x), output_size=(10, 9))
    b = m(tp.tensor(x), output_size=(10, 9))
    assert tuple(b.shape) == (1, 3, 10, 9)
    assert np.allclose(a.detach().numpy(), _np(b), rtol=1e-12, atol=1e-13)
    with pytest.raises(ValueError, match="requested an output size of \\[12, 9\\], but valid "
                                         "sizes range from \\[9, 9\\] to \\[10, 10\\]"):
        m(tp.tensor(x), output_size=(12, 9))


POOLS = [("MaxPool1d", (3,), {}, (2, 3, 10)),
         ("MaxPool1d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True}, (2, 3, 10)),
         ("MaxPool2d", (2,), {}, (2, 3, 6, 5)),
         ("MaxPool2d", ((3, 2),), {"stride": 1, "dilation": (1, 2), "padding": 1}, (1, 2, 7, 6)),
         ("AvgPool1d", (3,), {"stride": 2, "padding": 1, "count_include_pad": False}, (2, 3, 9)),
         ("AvgPool2d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True}, (2, 3, 7, 6)),
         ("AvgPool2d", (2,), {"divisor_override": 3}, (1, 2, 4, 4)),
         ("AdaptiveAvgPool1d", (4,), {}, (2, 3, 9)),
         ("AdaptiveAvgPool2d", ((3, 2),), {}, (2, 3, 7, 5)),
         ("AdaptiveAvgPool2d", (1,), {}, (2, 3, 4, 4)),
         ("AdaptiveMaxPool1d", (3,), {}, (2, 3, 8)),
         ("AdaptiveMaxPool2d", ((2, 3),), {}, (1, 2, 5, 7)),
         ("ZeroPad2d", ((1, 2, 0, 3),), {}, (1, 2, 3, 4)),
         ("ConstantPad1d", (2, 1.5), {}, (2, 3, 4)),
         ("ReflectionPad2d", (2,), {}, (1, 2, 4, 5)),
         ("ReflectionPad1d", ((1, 2),), {}, (2, 3, 5)),
         ("ReplicationPad2d", ((1, 0, 2, 1),), {}, (1, 2, 3, 3)),
         ("ReplicationPad1d", (2,), {}, (2, 3, 4)),
         ("Upsample", (), {"scale_factor": 2}, (1, 2, 3, 4)),
         ("Upsample", (), {"size": (5, 7), "mode": "bilinear"}, (1, 2, 3, 4)),
         ("Upsample", (), {"scale_factor": 1.5, "mode": "bilinear", "align_corners": True},
          (1, 2, 4, 4)),
         ("UpsamplingNearest2d", (), {"size": (6, 6)}, (1, 1, 3, 2)),
         ("UpsamplingBilinear2d", (), {"scale_factor": 2}, (1, 1, 3, 2))]


@pytest.mark.parametrize("name,args,kw,shape", POOLS, ids=[f"{c[0]}{i}" for i, c in
                                                           enumerate(POOLS)])
def test_pool_pad_upsample_against_torch(name, args, kw, shape):
    pytest.importorskip("torch")
    if not hasattr(nn.functional, "max_pool2d"):
        pytest.skip("nn.functional pooling has not landed")
    tm, m = _both(name, *args, **kw)
    _compare(tm, m, RNG.permutation(int(np.prod(shape))).reshape(shape) * 0.1 + 0.0)


def test_maxpool_return_indices():
    torch = pytest.importorskip("torch")
    if not hasattr(nn.functional, "max_pool2d"):
        pytest.skip("nn.functional pooling has not landed")
    x = RNG.standard_normal((2, 3, 6, 6))
    a, ai = torch.nn.MaxPool2d(2, return_indices=True)(torch.tensor(x))
    b, bi = nn.MaxPool2d(2, return_indices=True)(tp.tensor(x))
    assert np.array_equal(a.numpy(), b.numpy()) and np.array_equal(ai.numpy(), bi.numpy())
    assert nn.MaxPool2d(3).stride == 3


def _need(fn):
    if not hasattr(nn.functional, fn):
        pytest.skip(f"nn.functional.{fn} has not landed")


@pytest.mark.parametrize("name,kw,shape", [
    ("BatchNorm1d", {}, (6, 4)), ("BatchNorm1d", {"momentum": None}, (5, 4, 3)),
    ("BatchNorm2d", {"momentum": 0.3}, (4, 4, 3, 2)), ("BatchNorm2d", {"affine": False}, (3, 4, 2, 2)),
    ("BatchNorm1d", {"track_running_stats": False}, (6, 4)),
    ("BatchNorm2d", {"bias": False}, (2, 4, 3, 3))])
def test_batchnorm_against_torch_over_steps(name, kw, shape):
    torch = pytest.importorskip("torch")
    _need("batch_norm")
    tm, m = _both(name, 4, **kw)
    tm, m = tm.double(), m.double()
    _copy_in(tm, m)
    for step in range(3):                       # running statistics over several batches
        x = RNG.standard_normal(shape) * (step + 1) + step
        tx, px = torch.tensor(x, requires_grad=True), tp.tensor(x, requires_grad=True)
        a, b = tm(tx), m(px)
        assert np.allclose(a.detach().numpy(), _np(b), rtol=1e-11, atol=1e-12)
        if step == 0:
            a.sum().backward()
            b.sum().backward()
            assert np.allclose(tx.grad.numpy(), px.grad.numpy(), rtol=1e-10, atol=1e-11)
        for (k, ta), (_, pa) in zip(tm.named_buffers(), m.named_buffers()):
            assert np.allclose(ta.numpy(), pa.numpy(), rtol=1e-12, atol=1e-13), (k, step)
    tm.eval()
    m.eval()
    x = RNG.standard_normal(shape)
    assert np.allclose(tm(torch.tensor(x)).detach().numpy(), _np(m(tp.tensor(x))),
                       rtol=1e-11, atol=1e-12)
    if kw.get("track_running_stats", True):
        assert m.num_batches_tracked.item() == 3 and m.num_batches_tracked.dtype == tp.int64


def test_batchnorm_cumulative_average_closed_form():
    _need("batch_norm")
    m = nn.BatchNorm1d(2, momentum=None, dtype=tp.float64)
    xs = [RNG.standard_normal((5, 2)) for _ in range(4)]
    for x in xs:
        m(tp.tensor(x))
    assert np.allclose(_np(m.running_mean), np.mean([x.mean(0) for x in xs], 0), atol=1e-14)
    assert np.allclose(_np(m.running_var), np.mean([x.var(0, ddof=1) for x in xs], 0),
                       atol=1e-14)
    assert list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                    "num_batches_tracked"]
    with pytest.raises(ValueError, match="expected 2D or 3D input \\(got 4D input\\)"):
        m(tp.zeros(2, 2, 2, 2))
    with pytest.raises(ValueError, match="expected 4D input \\(got 2D input\\)"):
        nn.BatchNorm2d(2)(tp.zeros(2, 2))
    sd = {k: v for k, v in m.state_dict().items() if k != "num_batches_tracked"}
    nn.BatchNorm1d(2, dtype=tp.float64).load_state_dict(sd)   # legacy checkpoint: loads 0


@pytest.mark.parametrize("name,args,kw,shape", [
    ("LayerNorm", (5,), {}, (3, 5)), ("LayerNorm", ((3, 4),), {"eps": 1e-3}, (2, 3, 4)),
    ("LayerNorm", (4,), {"elementwise_affine": False}, (2, 3, 4)),
    ("LayerNorm", (4,), {"bias": False}, (2, 4)),
    ("GroupNorm", (2, 4), {}, (3, 4, 5)), ("GroupNorm", (1, 6), {"affine": False}, (2, 6, 2, 2)),
    ("GroupNorm", (3, 6), {"eps": 1e-2}, (2, 6, 3))])
def test_layer_group_norm_against_torch(name, args, kw, shape):
    pytest.importorskip("torch")
    _need("layer_norm" if name == "LayerNorm" else "group_norm")
    torch = pytest.importorskip("torch")
    tm, m = _both(name, *args, **kw)
    with torch.no_grad():                       # non-trivial affine parameters
        for p in tm.parameters():
            p.normal_()
    _compare(tm, m, RNG.standard_normal(shape), rtol=1e-11, atol=1e-12)


def test_groupnorm_errors():
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        nn.GroupNorm(3, 4)


def test_dropout_modes_and_errors():
    _need("dropout")
    tp.manual_seed(0)
    d = nn.Dropout(0.25)
    x = tp.ones(200, 100, dtype=tp.float64)
    y = _np(d(x))
    kept = y != 0
    assert np.allclose(y[kept], 1 / 0.75)
    frac = 1 - kept.mean()
    assert abs(frac - 0.25) < 5 * np.sqrt(0.25 * 0.75 / y.size)
    d.eval()
    assert np.array_equal(_np(d(x)), _np(x))
    assert repr(nn.Dropout()) == "Dropout(p=0.5, inplace=False)"
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but "
                                         "got 1.5"):
        nn.Dropout(1.5)
    d2 = nn.Dropout2d(0.5)
    z = _np(d2(tp.ones(4, 50, 3, 3)))
    per_channel = z.reshape(4, 50, -1)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))


def test_embedding():
    _need("embedding")
    tp.manual_seed(0)
    e = nn.Embedding(10, 3, padding_idx=-2)
    assert e.padding_idx == 8 and np.all(_np(e.weight)[8] == 0)
    idx = tp.tensor([[1, 8], [8, 3]])
    out = e(idx)
    assert out.shape == (2, 2, 3)
    assert np.array_equal(_np(out)[0, 0], _np(e.weight)[1])
    out.sum().backward()
    g = e.weight.grad.numpy()
    assert np.all(g[8] == 0) and np.all(g[1] == 1) and np.all(g[0] == 0)
    w = tp.randn(4, 2)
    f = nn.Embedding.from_pretrained(w)
    assert not f.weight.requires_grad and np.array_equal(_np(f.weight), _np(w))
    assert nn.Embedding.from_pretrained(w, freeze=False).weight.requires_grad
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=3)
    with pytest.raises(AssertionError, match="expected to be 2-dimensional"):
        nn.Embedding.from_pretrained(tp.zeros(3))
    with pytest.raises(IndexError):
        e(tp.tensor([10]))


def test_embedding_against_torch():
    pytest.importorskip("torch")
    _need("embedding")
    tm, m = _both("Embedding", 7, 4, padding_idx=2)
    _compare(tm, m, np.array([[0, 2, 5], [6, 2, 1]]))


def _targets(kind, shape):
    if kind == "class":
        return RNG.integers(0, shape[1], (shape[0],) + tuple(shape[2:]))
    if kind == "prob01":
        return RNG.uniform(0, 1, shape)
    if kind == "probs":
        p = RNG.uniform(0.1, 1, shape)
        return p / p.sum(1, keepdims=True)
    return RNG.standard_normal(shape)


LOSSES = [
    ("CrossEntropyLoss", {}, (4, 5), "class", "raw"),
    ("CrossEntropyLoss", {"reduction": "sum", "label_smoothing": 0.1}, (4, 5), "class", "raw"),
    ("CrossEntropyLoss", {"ignore_index": 1}, (6, 3, 2), "class", "raw"),
    ("CrossEntropyLoss", {}, (4, 5), "probs", "raw"),
    ("NLLLoss", {"reduction": "none"}, (4, 5), "class", "logp"),
    ("MSELoss", {}, (3, 4), "real", "raw"), ("MSELoss", {"reduction": "sum"}, (3, 4), "real", "raw"),
    ("L1Loss", {"reduction": "none"}, (3, 4), "real", "raw"),
    ("SmoothL1Loss", {"beta": 0.5}, (3, 4), "real", "raw"),
    ("HuberLoss", {"delta": 0.7}, (3, 4), "real", "raw"),
    ("BCELoss", {}, (3, 4), "prob01", "prob"),
    ("BCEWithLogitsLoss", {}, (3, 4), "prob01", "raw"),
    ("KLDivLoss", {"reduction": "batchmean"}, (3, 4), "probs", "logp"),
    ("KLDivLoss", {"reduction": "sum", "log_target": True}, (3, 4), "logp", "logp"),
]


@pytest.mark.parametrize("name,kw,shape,tkind,ikind", LOSSES,
                         ids=[f"{c[0]}{i}" for i, c in enumerate(LOSSES)])
def test_loss_against_torch(name, kw, shape, tkind, ikind):
    pytest.importorskip("torch")
    _need("mse_loss")
    tm, m = _both(name, **kw)
    x = RNG.standard_normal(shape)
    if ikind == "prob":
        x = RNG.uniform(0.05, 0.95, shape)
    elif ikind == "logp":
        x = x - np.log(np.exp(x).sum(1, keepdims=True))
    t = np.log(_targets("probs", shape)) if tkind == "logp" else _targets(tkind, shape)
    _compare(tm, m, x, t, rtol=1e-11, atol=1e-12)


def test_weighted_losses_register_buffers():
    torch = pytest.importorskip("torch")
    _need("mse_loss")
    w = RNG.uniform(0.5, 2, 5)
    tm = torch.nn.CrossEntropyLoss(weight=torch.tensor(w))
    m = nn.CrossEntropyLoss(weight=tp.tensor(w))
    assert list(m.state_dict()) == list(tm.state_dict()) == ["weight"]
    _compare(tm, m, RNG.standard_normal((6, 5)), RNG.integers(0, 5, 6), rtol=1e-11)
    pw = RNG.uniform(0.5, 2, 4)
    tm = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(pw))
    m = nn.BCEWithLogitsLoss(pos_weight=tp.tensor(pw))
    assert list(m.state_dict()) == ["pos_weight"]
    _compare(tm, m, RNG.standard_normal((3, 4)), RNG.uniform(0, 1, (3, 4)), rtol=1e-11)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        assert nn.MSELoss(size_average=False).reduction == "sum"


@pytest.mark.parametrize("name,args,kw,shapes", [
    ("CosineSimilarity", (), {}, [(3, 4), (3, 4)]),
    ("CosineSimilarity", (), {"dim": 0, "eps": 1e-6}, [(3, 4), (3, 4)]),
    ("PairwiseDistance", (), {}, [(3, 4), (3, 4)]),
    ("PairwiseDistance", (), {"p": 1.0, "keepdim": True}, [(3, 4), (3, 4)]),
    ("Unfold", (2,), {"stride": 1, "padding": 1}, [(2, 3, 4, 4)]),
    ("Fold", ((4, 5), 2), {}, [(2, 12, 12)])])
def test_distance_and_fold_against_torch(name, args, kw, shapes):
    pytest.importorskip("torch")
    _need("cosine_similarity" if name in ("CosineSimilarity", "PairwiseDistance") else "unfold")
    tm, m = _both(name, *args, **kw)
    _compare(tm, m, *[RNG.standard_normal(s) for s in shapes], rtol=1e-11, atol=1e-12)
