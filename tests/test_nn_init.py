"""nn.init: fans, gains, sample statistics within sampling bounds, exact bounds,
errors, PyTorch's default layer initialisation, seeding; nn.utils clipping and
parameter vectors."""
import math

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import nn
from tensorplay.nn import init


def _arr(t):
    return t.detach().numpy()


def test_fans_and_gains():
    assert init._calculate_fan_in_and_fan_out(tp.empty(5, 3)) == (3, 5)
    assert init._calculate_fan_in_and_fan_out(tp.empty(8, 4, 3, 3)) == (36, 72)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init._calculate_fan_in_and_fan_out(tp.empty(3))
    assert init.calculate_gain("linear") == 1 and init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("tanh") == 5 / 3
    assert init.calculate_gain("relu") == math.sqrt(2)
    assert init.calculate_gain("leaky_relu") == math.sqrt(2 / (1 + 0.01 ** 2))
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2 / 1.04)
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)


def _check_uniform(x, bound):
    n = x.size
    assert np.all(np.abs(x) <= bound)
    # mean 0, var bound^2/3; 5 sigma bands
    assert abs(x.mean()) < 5 * bound / math.sqrt(3 * n)
    var = bound ** 2 / 3
    assert abs(x.var() - var) < 5 * var * math.sqrt(0.8 / n)
    assert np.abs(x).max() > 0.95 * bound          # fills the interval


def _check_normal(x, std):
    n = x.size
    assert abs(x.mean()) < 5 * std / math.sqrt(n)
    assert abs(x.std() - std) < 5 * std / math.sqrt(2 * n)


def test_uniform_normal_constant_fills():
    tp.manual_seed(0)
    t = tp.empty(200, 100, dtype=tp.float64)
    assert init.uniform_(t, -2.0, 3.0) is t
    a = _arr(t)
    assert a.min() >= -2 and a.max() < 3 and abs(a.mean() - 0.5) < 5 * 5 / math.sqrt(12 * a.size)
    _check_normal(_arr(init.normal_(t, 0.0, 0.3)), 0.3)
    assert np.all(_arr(init.constant_(t, 1.5)) == 1.5)
    assert np.all(_arr(init.zeros_(t)) == 0) and np.all(_arr(init.ones_(t)) == 1)
    assert np.array_equal(_arr(init.eye_(tp.empty(3, 4))), np.eye(3, 4))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        init.eye_(tp.empty(3))
    with pytest.raises(RuntimeError, match="from=3.0 > to=2.0"):
        init.uniform_(t, 3.0, 2.0)
    with pytest.raises(TypeError, match="must be Tensor"):
        init.uniform_(np.zeros(3))


def test_init_on_parameters_records_no_history():
    p = nn.Parameter(tp.empty(4, 4))
    init.kaiming_uniform_(p)
    assert p.is_leaf and p.grad_fn is None and p.requires_grad


def test_xavier_and_kaiming_bounds_and_std():
    tp.manual_seed(1)
    w = tp.empty(300, 200, dtype=tp.float64)
    bound = math.sqrt(6 / 500)
    _check_uniform(_arr(init.xavier_uniform_(w)), bound)
    _check_uniform(_arr(init.xavier_uniform_(w, gain=2.0)), 2 * bound)
    _check_normal(_arr(init.xavier_normal_(w)), math.sqrt(2 / 500))
    # kaiming: fan_in = 200, default leaky_relu with a=0 -> gain sqrt(2)
    _check_uniform(_arr(init.kaiming_uniform_(w)), math.sqrt(2) * math.sqrt(3 / 200))
    _check_uniform(_arr(init.kaiming_uniform_(w, a=math.sqrt(5))), 1 / math.sqrt(200))
    _check_uniform(_arr(init.kaiming_uniform_(w, mode="fan_out", nonlinearity="relu")),
                   math.sqrt(2) * math.sqrt(3 / 300))
    _check_normal(_arr(init.kaiming_normal_(w, mode="fan_out")), math.sqrt(2 / 300))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(w, mode="fan_avg")
    with pytest.warns(UserWarning, match="zero-element"):
        init.kaiming_uniform_(tp.empty(0, 3))


def test_orthogonal_trunc_normal_dirac():
    tp.manual_seed(2)
    for shape in [(5, 3), (3, 5), (4, 2, 2)]:
        w = init.orthogonal_(tp.empty(*shape, dtype=tp.float64), gain=2.0)
        q = _arr(w).reshape(shape[0], -1)
        small = q.T @ q if shape[0] >= q.shape[1] else q @ q.T
        assert np.allclose(small, 4 * np.eye(small.shape[0]), atol=1e-12)
    with pytest.raises(ValueError, match="2 or more dimensions"):
        init.orthogonal_(tp.empty(3))
    t = init.trunc_normal_(tp.empty(20000, dtype=tp.float64), mean=0.5, std=1.0, a=0.0, b=1.0)
    a = _arr(t)
    assert a.min() >= 0 and a.max() <= 1
    # the truncated normal on [mean-0.5, mean+0.5] with std 1: nearly uniform, var
    # = 1 - 2 phi(0.5) * 0.5 / (2 Phi(0.5) - 1) = 0.0797...
    phi = math.exp(-0.125) / math.sqrt(2 * math.pi)
    big_phi = 0.5 * (1 + math.erf(0.5 / math.sqrt(2)))
    var = 1 - 2 * 0.5 * phi / (2 * big_phi - 1)
    assert abs(a.mean() - 0.5) < 5 * math.sqrt(var / a.size)
    assert abs(a.var() - var) < 5 * var * math.sqrt(2 / a.size) * 1.5
    d = _arr(init.dirac_(tp.empty(2, 2, 3, 3)))
    assert d.sum() == 2 and d[0, 0, 1, 1] == 1 and d[1, 1, 1, 1] == 1


def test_seeded_and_generator():
    tp.manual_seed(5)
    a = _arr(nn.Linear(4, 3).weight)
    tp.manual_seed(5)
    b = _arr(nn.Linear(4, 3).weight)
    assert np.array_equal(a, b)
    if hasattr(tp, "Generator"):
        g1 = tp.Generator().manual_seed(3)
        g2 = tp.Generator().manual_seed(3)
        assert np.array_equal(_arr(init.normal_(tp.empty(5), generator=g1)),
                              _arr(init.normal_(tp.empty(5), generator=g2)))


def test_default_layer_initialisation():
    tp.manual_seed(3)
    lin = nn.Linear(400, 300, dtype=tp.float64)
    bound = 1 / math.sqrt(400)
    _check_uniform(_arr(lin.weight), bound)           # kaiming_uniform_(a=sqrt(5))
    b = _arr(lin.bias)
    assert np.all(np.abs(b) <= bound) and np.abs(b).max() > 0.9 * bound
    rnn = nn.LSTM(10, 400, dtype=tp.float64)
    _check_uniform(_arr(rnn.weight_hh_l0), 1 / math.sqrt(400))


# ---------------------------------------------------------------- nn.utils
def _with_grads(*grads):
    ps = []
    for g in grads:
        p = nn.Parameter(tp.zeros(len(g), dtype=tp.float64))
        p.grad = tp.tensor(g, dtype=tp.float64)
        ps.append(p)
    return ps


def test_clip_grad_norm_closed_form():
    ps = _with_grads([3.0, 0.0], [0.0, 4.0])
    total = nn.utils.clip_grad_norm_(ps, 1.0)
    assert abs(total.item() - 5.0) < 1e-15
    coef = 1.0 / (5.0 + 1e-6)
    assert np.allclose(ps[0].grad.numpy(), [3 * coef, 0], rtol=1e-15)
    ps = _with_grads([3.0, -7.0], [1.0])
    total = nn.utils.clip_grad_norm_(ps, 2.0, norm_type=float("inf"))
    assert total.item() == 7.0
    assert np.allclose(ps[0].grad.numpy(), np.array([3, -7]) * 2 / (7 + 1e-6))
    ps = _with_grads([0.1, 0.1])                    # below the bound: unchanged
    nn.utils.clip_grad_norm_(ps[0], 10.0, norm_type=1)
    assert np.allclose(ps[0].grad.numpy(), [0.1, 0.1], rtol=1e-15)
    assert nn.utils.clip_grad_norm_([nn.Parameter(tp.zeros(1))], 1.0).item() == 0.0
    ps = _with_grads([float("nan"), 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    assert ps[0].grad.numpy()[1] == 1.0             # unchanged


def test_clip_grad_value_and_vectors():
    ps = _with_grads([3.0, -0.5], [-4.0])
    assert nn.utils.clip_grad_value_(ps, 1.0) is None
    assert np.array_equal(ps[0].grad.numpy(), [1.0, -0.5])
    assert np.array_equal(ps[1].grad.numpy(), [-1.0])
    m = nn.Linear(3, 2)
    v = nn.utils.parameters_to_vector(m.parameters())
    assert v.shape == (8,)
    assert np.array_equal(v.detach().numpy()[:6], _arr(m.weight).reshape(-1))
    nn.utils.vector_to_parameters(tp.arange(8, dtype=tp.float32), m.parameters())
    assert np.array_equal(_arr(m.bias), [6.0, 7.0])
    assert isinstance(m.weight, nn.Parameter)
    with pytest.raises(TypeError, match="expected tensorplay.Tensor"):
        nn.utils.vector_to_parameters([1.0], m.parameters())
    with pytest.raises(RuntimeError, match="vec has 7 elements, the parameters 8"):
        nn.utils.vector_to_parameters(tp.zeros(7), m.parameters())


def test_clip_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    gs = [rng.standard_normal(s) for s in [(3, 4), (5,), (2, 2, 2)]]
    for norm_type in [2.0, 1.0, 3.5, float("inf")]:
        tps = []
        for g in gs:
            p = torch.nn.Parameter(torch.zeros(g.shape, dtype=torch.float64))
            p.grad = torch.tensor(g)
            tps.append(p)
        ps = _with_grads(*[g.reshape(-1) for g in gs])
        tt = torch.nn.utils.clip_grad_norm_(tps, 0.7, norm_type=norm_type)
        t = nn.utils.clip_grad_norm_(ps, 0.7, norm_type=norm_type)
        assert abs(tt.item() - t.item()) < 1e-13
        for a, b in zip(tps, ps):
            assert np.allclose(a.grad.numpy().reshape(-1), b.grad.numpy(), rtol=1e-13)
