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
