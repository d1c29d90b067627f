"""tensorplay.optim's NAdam, RAdam, Adamax, Adadelta, ASGD and Rprop: trajectories
and state against torch's (when installed), first steps against closed forms, the
blocked path, state dicts and the load-time checks of ``load_state_dict``, the
errors, and the AttributeError for names of torch.optim tensorplay lacks.

The trajectory helpers are test_optim.py's: both libraries get the same float64
parameters and the same numpy gradient function of the current parameters."""
import pickle

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import optim

from test_optim import _check_float32_against_torch, _id, _init, _run_torch, _run_tp

CONFIGS = [
    ("NAdam", dict(lr=0.05)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.05)),
    ("RAdam", dict(lr=0.05, betas=(0.5, 0.9), eps=1e-3)),
    ("RAdam", dict(lr=0.05, weight_decay=0.1, maximize=True)),
    ("RAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("Adamax", dict(lr=0.05)),
    ("Adamax", dict(lr=0.05, betas=(0.5, 0.9), weight_decay=0.1, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.5, eps=1e-4, weight_decay=0.1, maximize=True)),
    ("ASGD", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, lambd=0.1, alpha=0.5, t0=5, weight_decay=0.1, maximize=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.1, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2), maximize=True)),
]
NAMES = ["NAdam", "RAdam", "Adamax", "Adadelta", "ASGD", "Rprop"]


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=[_id(c) for c in CONFIGS])
def test_trajectory_and_state_match_torch(name, kwargs):
    torch = pytest.importorskip("torch")
    arrays = _init()
    sign = -1.0 if kwargs.get("maximize") else 1.0
    ours, opt = _run_tp(getattr(optim, name), kwargs, arrays, steps=25, sign=sign)
    theirs, topt = _run_torch(torch, name, kwargs, arrays, steps=25, sign=sign)
    for a, b, a0 in zip(ours, theirs, arrays):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=0,
                                   atol=1e-12)
        assert np.abs(a.detach().numpy() - a0).max() > 1e-3       # it moved
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["state"].keys() == tsd["state"].keys()
    for k, st in sd["state"].items():
        assert list(st) == list(tsd["state"][k])                   # names and order
        for key, v in st.items():
            t = tsd["state"][k][key]
            assert (v.dtype == tp.float32) == (t.dtype == torch.float32), key
            np.testing.assert_allclose(np.asarray(v.numpy(), np.float64),
                                       t.detach().numpy(), rtol=1e-13, atol=1e-13)
    assert sd["param_groups"] == tsd["param_groups"]
    assert repr(opt) == repr(topt)


@pytest.mark.parametrize("name,kwargs", [CONFIGS[i] for i in (2, 5, 8, 10, 12, 14)],
                         ids=lambda c: str(c))
def test_float32_trajectory_matches_torch(name, kwargs):
    _check_float32_against_torch(name, kwargs)


@pytest.mark.parametrize("name,kwargs", [CONFIGS[i] for i in (2, 6, 8, 10, 12, 14)],
                         ids=lambda c: str(c))
def test_blocked_update_equals_whole_array_update(name, kwargs, monkeypatch):
    """Above the block size, and for a non-contiguous leaf (whole-array path),
    the same bits as whole-array passes."""
    from tensorplay.optim import optimizer as optimizer_mod
    r = np.random.default_rng(7)
    big = r.uniform(-1, 1, (300, 301))
    sign = -1.0 if kwargs.get("maximize") else 1.0

    def run():
        params = [tp.tensor(big, dtype=tp.float64, requires_grad=True),
                  tp.tensor(big.T.copy(), dtype=tp.float64).t().requires_grad_()]
        opt = getattr(optim, name)(params, **kwargs)
        for i in range(3):
            for p in params:
                p.grad = tp.tensor(sign * np.sin(3 * p.detach().numpy() + i) + 0.1,
                                   dtype=tp.float64)
            opt.step()
        return [p.detach().numpy().copy() for p in params]

    blocked = run()
    monkeypatch.setattr(optimizer_mod, "_BLOCK", 1 << 40)
    whole = run()
    for a, b in zip(blocked, whole):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(blocked[1], blocked[0], rtol=0, atol=1e-15)
    assert not np.array_equal(blocked[0], big)


# ---------------------------------------------------------------- closed forms
def _one(cls, g, x0=1.0, steps=1, **kw):
    p = tp.tensor([x0], dtype=tp.float64, requires_grad=True)
    opt = cls([p], **kw)
    for gi in np.atleast_1d(g)[:steps] if steps > 1 else [g]:
        p.grad = tp.tensor([gi], dtype=tp.float64)
        opt.step()
    return p.item(), opt, p


def test_first_steps_closed_forms():
    g, lr = 0.3, 0.1
    # NAdam: m = (1-b1) g, v = (1-b2) g^2, denom = |g| + eps
    b1, b2, psi, eps = 0.9, 0.999, 4e-3, 1e-8
    mu1 = b1 * (1 - 0.5 * 0.96 ** psi)
    mu2 = b1 * (1 - 0.5 * 0.96 ** (2 * psi))
    mu1_32 = float(np.float32(mu1))
    denom = np.sqrt((1 - b2) * g * g / (1 - b2)) + eps
    want = 1 - lr * (1 - mu1) / (1 - mu1_32) * g / denom \
        - lr * mu2 / (1 - mu1_32 * mu2) * (1 - b1) * g / denom
    x, opt, p = _one(optim.NAdam, g, lr=lr)
    assert x == pytest.approx(want, rel=1e-14)
    assert opt.state[p]["mu_product"].item() == np.float32(mu1)
    # RAdam: rho_1 < 5, so a plain step of the bias-corrected mean, i.e. lr * g
    assert _one(optim.RAdam, g, lr=lr)[0] == pytest.approx(1 - lr * g, rel=1e-15)
    # Adamax: lr / (1 - b1) * (1 - b1) g / (|g| + eps)
    assert _one(optim.Adamax, g, lr=lr)[0] == pytest.approx(1 - lr * g / (g + eps),
                                                            rel=1e-15)
    # Adadelta: delta = sqrt(eps) / sqrt((1 - rho) g^2 + eps) * g
    rho, e = 0.9, 1e-6
    delta = np.sqrt(e) / np.sqrt((1 - rho) * g * g + e) * g
    x, opt, p = _one(optim.Adadelta, g, lr=lr)
    assert x == pytest.approx(1 - lr * delta, rel=1e-15)
    assert opt.state[p]["acc_delta"].item() == pytest.approx((1 - rho) * delta ** 2)
    # ASGD: p (1 - lambd lr) - lr g; ax = p; eta_2 = lr / (1 + lambd lr)^alpha
    lambd, alpha = 0.01, 0.75
    x, opt, p = _one(optim.ASGD, g, lr=lr, lambd=lambd, alpha=alpha)
    assert x == pytest.approx((1 - lambd * lr) - lr * g, rel=1e-7)
    st = opt.state[p]
    assert st["ax"].item() == x
    assert st["eta"].item() == np.float32(lr / (1 + lambd * lr) ** alpha)
    assert st["mu"].item() == 1.0


def test_rprop_step_sizes_grow_shrink_and_skip():
    p = tp.tensor([0.0, 0.0, 0.0], dtype=tp.float64, requires_grad=True)
    opt = optim.Rprop([p], lr=0.1, etas=(0.5, 2.0), step_sizes=(0.01, 0.3))
    seq = [[1.0, 1.0, -1.0], [1.0, -1.0, -1.0], [1.0, 1.0, -1.0], [1.0, 1.0, 0.0]]
    xs = []
    for g in seq:
        p.grad = tp.tensor(g, dtype=tp.float64)
        opt.step()
        xs.append(p.tolist())
    # element 0: same sign each step: 0.1, 0.2, 0.3 (clamped), 0.3
    # element 1: flip at step 2 (no move, 0.05), then prev = 0 -> unchanged step
    # element 2: same sign, then g = 0: no move
    np.testing.assert_allclose(xs[0], [-0.1, -0.1, 0.1])
    np.testing.assert_allclose(xs[1], [-0.3, -0.1, 0.3])
    np.testing.assert_allclose(xs[2], [-0.6, -0.15, 0.6])
    np.testing.assert_allclose(xs[3], [-0.9, -0.25, 0.6])
    np.testing.assert_allclose(opt.state[p]["step_size"].tolist(), [0.3, 0.1, 0.3])


# ---------------------------------------------------------------- state dicts
@pytest.mark.parametrize("name,kwargs", [CONFIGS[i] for i in (1, 6, 8, 10, 12, 14)],
                         ids=lambda c: str(c))
def test_state_dict_round_trip_continues_identically(name, kwargs, tmp_path):
    """4 steps, save, load into a fresh optimiser over copies, 4 more steps: the
    same bits as 8 steps in one go."""
    from test_optim import _grad_fn
    arrays = _init(2)
    sign = -1.0 if kwargs.get("maximize") else 1.0
    ref, _ = _run_tp(getattr(optim, name), kwargs, arrays, steps=8, sign=sign)
    first, opt = _run_tp(getattr(optim, name), kwargs, arrays, steps=4, sign=sign)
    path = tmp_path / "opt.pt"
    tp.save(opt.state_dict(), path)
    params = [tp.tensor(p.detach().numpy(), dtype=tp.float64, requires_grad=True)
              for p in first]
    fresh = getattr(optim, name)(params, **kwargs)
    fresh.load_state_dict(tp.load(path))
    for _ in range(4):
        for p, g in zip(params, _grad_fn([p.detach().numpy() for p in params])):
            p.grad = tp.tensor(sign * g, dtype=tp.float64)
        fresh.step()
    for a, b in zip(params, ref):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def _stepped(name="Adam", shapes=((3, 4), (5,)), **kw):
    params = [tp.zeros(*s, requires_grad=True) for s in shapes]
    opt = getattr(optim, name)(params, **kw)
    for p in params:
        p.grad = tp.ones(*p.shape)
    opt.step()
    return opt, params


@pytest.mark.parametrize("name", NAMES + ["Adam", "SGD", "Adagrad", "RMSprop"])
def test_load_state_dict_checks_shapes_before_changing_anything(name):
    kw = {"momentum": 0.9} if name == "SGD" else {}
    opt, _ = _stepped(name, **kw)
    sd = opt.state_dict()
    swapped = [tp.zeros(5, requires_grad=True), tp.zeros(3, 4, requires_grad=True)]
    other = getattr(optim, name)(swapped, lr=0.5, **kw)
    before = dict(other.state)
    with pytest.raises(ValueError, match=r"param_groups\[0\] parameter 0, state '\w+': "
                                         r"expected shape \(5,\) .*got \(3, 4\)"):
        other.load_state_dict(sd)
    assert other.param_groups[0]["lr"] == 0.5
    assert dict(other.state) == before


def test_load_state_dict_dtype_scalar_and_group_checks():
    opt, params = _stepped("NAdam")
    sd = opt.state_dict()
    bad = {"state": {0: sd["state"][0], 1: dict(sd["state"][1],
                                               exp_avg=tp.zeros(5, dtype=tp.int64))},
           "param_groups": sd["param_groups"]}
    with pytest.raises(ValueError, match=r"parameter 1, state 'exp_avg': expected a "
                                         r"floating dtype .*int64"):
        optim.NAdam(params).load_state_dict(bad)
    bad = {"state": {0: dict(sd["state"][0], mu_product=tp.ones(3))},
           "param_groups": sd["param_groups"]}
    with pytest.raises(ValueError, match=r"'mu_product': expected a number or a one-element"):
        optim.NAdam(params).load_state_dict(bad)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.NAdam([{"params": [params[0]]}, {"params": [params[1]]}]).load_state_dict(sd)
    with pytest.raises(ValueError, match="doesn't match the size"):
        optim.NAdam([params[0]]).load_state_dict(
            {"state": {}, "param_groups": [dict(sd["param_groups"][0], params=[0, 1])]})
    # a Python-number step (older PyTorch pickles) becomes a 0-d float32 tensor
    old = {"state": {0: dict(sd["state"][0], step=1.0, mu_product=0.5)},
           "param_groups": sd["param_groups"]}
    fresh = optim.NAdam(params)
    fresh.load_state_dict(old)
    st = fresh.state[params[0]]
    assert st["step"].dtype == tp.float32 and st["step"].item() == 1.0
    assert st["mu_product"].item() == 0.5
    fresh.step()
    assert st["step"].item() == 2.0


@pytest.mark.parametrize("name", NAMES)
def test_setstate_fills_missing_flags_and_pickles(name):
    opt, params = _stepped(name)
    state = opt.__getstate__()
    for group in state["param_groups"]:
        for key in ("maximize", "foreach", "differentiable", "capturable"):
            group.pop(key)
    clone = getattr(optim, name).__new__(getattr(optim, name))
    clone.__setstate__(state)
    assert all(g["maximize"] is False and g["foreach"] is None
               for g in clone.param_groups)
    again = pickle.loads(pickle.dumps(opt))
    assert again.state_dict()["param_groups"] == opt.state_dict()["param_groups"]


# ---------------------------------------------------------------- options and errors
@pytest.mark.parametrize("name", NAMES)
def test_switches_tensor_lr_version_counter(name):
    p = tp.zeros(3, requires_grad=True)
    opt = getattr(optim, name)([p], lr=tp.tensor(0.1), foreach=True, capturable=True)
    assert opt.param_groups[0]["foreach"] is True
    assert opt.param_groups[0]["capturable"] is True
    with pytest.raises(NotImplementedError, match=f"{name}\\(differentiable=True\\)"):
        getattr(optim, name)([p], differentiable=True)
    y = (p * p).sum()                               # saves p
    p.grad = tp.ones(3)
    opt.step()
    assert p.tolist() != [0.0, 0.0, 0.0]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()                                # the step counted as a write
    q = tp.zeros(3, requires_grad=True)
    opt2 = getattr(optim, name)([q], lr=0.1)
    q.grad = tp.ones(3)
    opt2.step()
    assert p.tolist() == q.tolist()                 # a Tensor lr means the same


ERRORS = [
    ("NAdam", dict(lr=-1), "Invalid learning rate: -1"),
    ("NAdam", dict(momentum_decay=-1), "Invalid momentum_decay value: -1"),
    ("NAdam", dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    ("RAdam", dict(eps=-1), "Invalid epsilon value: -1"),
    ("RAdam", dict(betas=(0.9, 1.5)), "Invalid beta parameter at index 1: 1.5"),
    ("Adamax", dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ("Adadelta", dict(rho=1.5), "Invalid rho value: 1.5"),
    ("Adadelta", dict(eps=-1), "Invalid epsilon value: -1"),
    ("ASGD", dict(weight_decay=-0.5), "Invalid weight_decay value: -0.5"),
    ("Rprop", dict(etas=(1.5, 2.0)), "Invalid eta values: 1.5, 2.0"),
    ("Rprop", dict(lr=-0.1), "Invalid learning rate: -0.1"),
]


@pytest.mark.parametrize("name,kwargs,msg", ERRORS, ids=[f"{e[0]}-{e[2]}" for e in ERRORS])
def test_errors_match_torch(name, kwargs, msg):
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        getattr(optim, name)([tp.zeros(2, requires_grad=True)], **kwargs)
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError) as info:
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kwargs)
    assert str(info.value) == msg


def test_rprop_pairs_and_no_weight_decay():
    p = tp.zeros(2, requires_grad=True)
    with pytest.raises(TypeError, match="etas must be a pair"):
        optim.Rprop([p], etas=0.5)
    with pytest.raises(TypeError, match="weight_decay"):
        optim.Rprop([p], weight_decay=0.1)          # PyTorch's Rprop has none either


def test_read_only_parameter_refused_before_any_write():
    a = tp.zeros(3, requires_grad=True)
    b = tp.from_numpy(np.ones(3)).requires_grad_()
    b._data.flags.writeable = False
    for name in NAMES:
        opt = getattr(optim, name)([a, b])
        a.grad, b.grad = tp.ones(3), tp.ones(3, dtype=tp.float64)
        with pytest.raises(RuntimeError, match=f"{name}.step\\(\\): .*read-only"):
            opt.step()
        assert a.tolist() == [0.0, 0.0, 0.0]


# ---------------------------------------------------------------- names
def test_names_torch_has_and_tensorplay_lacks():
    with pytest.raises(AttributeError, match="torch.optim.SparseAdam exists in PyTorch; "
                                             "tensorplay does not implement it yet"):
        optim.SparseAdam
    with pytest.raises(AttributeError, match="torch.optim.swa_utils exists in PyTorch"):
        optim.swa_utils
    with pytest.raises(AttributeError) as info:
        optim.NoSuchOptimizer
    assert "PyTorch" not in str(info.value)
    assert not hasattr(optim, "Muon")


def test_name_lists_are_torch_2_13s():
    torch = pytest.importorskip("torch")
    from tensorplay.optim._torch_names import LR_SCHEDULER, OPTIM
    if not torch.__version__.startswith("2.13"):
        pytest.skip("the lists are torch 2.13's")
    assert OPTIM == set(torch.optim.__all__)
    assert LR_SCHEDULER == set(torch.optim.lr_scheduler.__all__)
    for name in OPTIM:                      # each one is either here or says so
        try:
            getattr(optim, name)
        except AttributeError as e:
            assert "exists in PyTorch" in str(e)
