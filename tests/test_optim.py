"""tensorplay.optim: update math against closed forms and (when installed) torch's
trajectories; param groups, state dicts, hooks, zero_grad and the errors.

The trajectory tests feed both libraries the same float64 parameters and the same
deterministic gradient function (computed in numpy from the current parameters
and assigned to ``.grad``), so only the optimisers' arithmetic is compared."""
import io
import math

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import optim

SHAPES = [(3, 4), (5,)]


def _init(seed=0):
    r = np.random.default_rng(seed)
    return [r.uniform(-1.5, 1.5, s) for s in SHAPES]


def _grad_fn(arrays):
    """Gradient of a smooth nonconvex function of all the parameters (a coupled
    Rosenbrock on the flat vector plus a quartic), in numpy."""
    x = np.concatenate([a.ravel() for a in arrays])
    g = np.zeros_like(x)
    g[:-1] += -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    g = g / 100.0 + 0.1 * x ** 3
    out, k = [], 0
    for a in arrays:
        out.append(g[k:k + a.size].reshape(a.shape))
        k += a.size
    return out


def _tp_params(arrays, dtype=tp.float64):
    return [tp.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]


def _run_tp(cls, kwargs, arrays, steps=20, dtype=tp.float64, sign=1.0):
    params = _tp_params(arrays, dtype)
    opt = cls(params, **kwargs)
    for _ in range(steps):
        grads = _grad_fn([p.detach().numpy().astype(np.float64) for p in params])
        for p, g in zip(params, grads):
            p.grad = tp.tensor(sign * g, dtype=dtype)
        opt.step()
    return params, opt


def _run_torch(torch, name, kwargs, arrays, steps=20, dtype=None, sign=1.0):
    dtype = dtype or torch.float64
    params = [torch.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
    opt = getattr(torch.optim, name)(params, **kwargs)
    for _ in range(steps):
        grads = _grad_fn([p.detach().numpy().astype(np.float64) for p in params])
        for p, g in zip(params, grads):
            p.grad = torch.tensor(sign * g, dtype=dtype)
        opt.step()
    return params, opt


CONFIGS = [
    ("SGD", dict(lr=0.01)),
    ("SGD", dict(lr=0.01, momentum=0.9)),
    ("SGD", dict(lr=0.01, momentum=0.9, dampening=0.3)),
    ("SGD", dict(lr=0.01, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.01, weight_decay=0.1)),
    ("SGD", dict(lr=0.01, maximize=True)),
    ("SGD", dict(lr=0.01, momentum=0.5, weight_decay=0.1, nesterov=True, maximize=True)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, amsgrad=True)),
    ("Adam", dict(lr=0.05, weight_decay=0.1)),
    ("Adam", dict(lr=0.05, maximize=True)),
    ("Adam", dict(lr=0.05, betas=(0.5, 0.9), eps=1e-3)),
    ("Adam", dict(lr=0.05, weight_decay=0.1, amsgrad=True, maximize=True)),
    ("Adam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, weight_decay=0.3, amsgrad=True)),
    ("AdamW", dict(lr=0.05, maximize=True, betas=(0.8, 0.99))),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, weight_decay=0.1, alpha=0.5)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.1, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1)),
    ("Adagrad", dict(lr=0.1, weight_decay=0.1, initial_accumulator_value=0.5)),
    ("Adagrad", dict(lr=0.1, eps=1e-2, maximize=True)),
]


def _id(c):
    return c[0] + "-" + "-".join(f"{k}={v}" for k, v in c[1].items())


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=[_id(c) for c in CONFIGS])
def test_trajectory_matches_torch(name, kwargs):
    torch = pytest.importorskip("torch")
    arrays = _init()
    sign = -1.0 if kwargs.get("maximize") else 1.0     # ascent on -f descends f
    ours, opt = _run_tp(getattr(optim, name), kwargs, arrays, sign=sign)
    theirs, topt = _run_torch(torch, name, kwargs, arrays, sign=sign)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=0,
                                   atol=1e-12)
    # the state matches too, key by key
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["state"].keys() == tsd["state"].keys()
    for k, st in sd["state"].items():
        assert set(st) == set(tsd["state"][k])
        for key, v in st.items():
            np.testing.assert_allclose(np.asarray(v.numpy(), np.float64),
                                       tsd["state"][k][key].detach().numpy(), atol=1e-12)
    assert sd["param_groups"] == tsd["param_groups"]
    assert repr(opt) == repr(topt)


@pytest.mark.parametrize("name,kwargs", [CONFIGS[1], CONFIGS[12], CONFIGS[21], CONFIGS[24]],
                         ids=lambda c: str(c))
def test_float32_trajectory_matches_torch(name, kwargs):
    _check_float32_against_torch(name, kwargs)


def _check_float32_against_torch(name, kwargs):
    """10 float32 steps of tensorplay's and torch's optimiser ``name`` agree to
    float32 round-off (test_optim_more.py uses it too)."""
    torch = pytest.importorskip("torch")
    arrays = [a.astype(np.float32) for a in _init(1)]
    sign = -1.0 if kwargs.get("maximize") else 1.0
    ours, _ = _run_tp(getattr(optim, name), kwargs, arrays, steps=10, dtype=tp.float32,
                      sign=sign)
    theirs, _ = _run_torch(torch, name, kwargs, arrays, steps=10, dtype=torch.float32,
                           sign=sign)
    for a, b in zip(ours, theirs):
        assert a.dtype == tp.float32
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


BIG = [("SGD", dict(lr=0.01, momentum=0.9, weight_decay=0.1, maximize=True)),
       ("SGD", dict(lr=0.01, momentum=0.9, dampening=0.2)),
       ("Adam", dict(lr=0.05, amsgrad=True, weight_decay=0.1)),
       ("AdamW", dict(lr=0.05)),
       ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, maximize=True)),
       ("Adagrad", dict(lr=0.1, weight_decay=0.1))]


@pytest.mark.parametrize("name,kwargs", BIG, ids=[_id(c) for c in BIG])
def test_blocked_update_equals_whole_array_update(name, kwargs, monkeypatch):
    """Parameters above the block size (and a non-contiguous one, which takes the
    whole-array path) give bit-identical results to whole-array updates."""
    from tensorplay.optim import optimizer as optimizer_mod
    r = np.random.default_rng(5)
    arrays = [r.uniform(-1, 1, (300, 301)), r.uniform(-1, 1, 70_001)]
    sign = -1.0 if kwargs.get("maximize") else 1.0

    def run():
        params = [tp.tensor(a, dtype=tp.float64, requires_grad=True) for a in arrays]
        t = tp.tensor(arrays[0].T.copy(), dtype=tp.float64).t().requires_grad_()
        params.append(t)                            # a transposed (non-contiguous) leaf
        opt = getattr(optim, name)(params, **kwargs)
        for _ in range(3):
            for p in params:
                p.grad = tp.tensor(sign * np.sin(3 * p.detach().numpy()) + 0.1,
                                   dtype=tp.float64)
            opt.step()
        return [p.detach().numpy().copy() for p in params]

    blocked = run()
    monkeypatch.setattr(optimizer_mod, "_BLOCK", 1 << 40)
    whole = run()
    for a, b in zip(blocked, whole):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(blocked[2], blocked[0], rtol=0, atol=1e-15)
    assert not np.array_equal(blocked[0], arrays[0])


def test_scheduled_adamw_with_groups_matches_torch():
    """Two groups with their own options, a cosine schedule changing lr between
    steps, gradients through backward()."""
    torch = pytest.importorskip("torch")
    arrays = _init(2)

    def run(lib, opt_mod, sched_mod, tensor):
        ps = [tensor(a) for a in arrays]
        opt = opt_mod.AdamW([{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.02,
                                                   "weight_decay": 0.0}],
                            lr=0.05, weight_decay=0.2)
        sched = sched_mod.CosineAnnealingLR(opt, T_max=7, eta_min=1e-3)
        for _ in range(15):
            opt.zero_grad()
            loss = (ps[0] ** 4).sum() + ((ps[1] - 0.5) ** 2).sum() + (ps[0].sum() * ps[1][0])
            loss.backward()
            opt.step()
            sched.step()
        return [p.detach().numpy() for p in ps]

    ours = run(tp, optim, optim.lr_scheduler,
               lambda a: tp.tensor(a, dtype=tp.float64, requires_grad=True))
    theirs = run(torch, torch.optim, torch.optim.lr_scheduler,
                 lambda a: torch.tensor(a, dtype=torch.float64, requires_grad=True))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


# ---------------------------------------------------------------- closed forms
def _scalar_param(v):
    return tp.tensor([v], dtype=tp.float64, requires_grad=True)


def test_sgd_quadratic_closed_form():
    # f = a/2 x^2: x_t = (1 - lr a)^t x_0
    a, lr, x0 = 3.0, 0.1, 2.0
    x = _scalar_param(x0)
    opt = optim.SGD([x], lr=lr)
    for t in range(1, 11):
        opt.zero_grad()
        (0.5 * a * x * x).sum().backward()
        opt.step()
        assert x.item() == pytest.approx(x0 * (1 - lr * a) ** t, rel=1e-13)


def test_sgd_momentum_first_step_buffer_is_the_gradient():
    # PyTorch's rule: the first buffer is g itself (no (1 - dampening) factor)
    x = _scalar_param(1.0)
    opt = optim.SGD([x], lr=0.1, momentum=0.9, dampening=0.5)
    x.grad = tp.tensor([2.0], dtype=tp.float64)
    opt.step()
    assert opt.state[x]["momentum_buffer"].item() == 2.0
    assert x.item() == pytest.approx(1.0 - 0.1 * 2.0, abs=1e-15)
    x.grad = tp.tensor([1.0], dtype=tp.float64)
    opt.step()
    b = 0.9 * 2.0 + 0.5 * 1.0
    assert opt.state[x]["momentum_buffer"].item() == pytest.approx(b, abs=1e-15)
    assert x.item() == pytest.approx(0.8 - 0.1 * b, abs=1e-15)


def test_sgd_nesterov_two_steps():
    x = _scalar_param(0.0)
    opt = optim.SGD([x], lr=0.5, momentum=0.9, nesterov=True)
    x.grad = tp.tensor([1.0], dtype=tp.float64)
    opt.step()                                  # b = 1; step g + 0.9 b = 1.9
    assert x.item() == pytest.approx(-0.95, abs=1e-15)
    x.grad = tp.tensor([2.0], dtype=tp.float64)
    opt.step()                                  # b = 0.9 + 2 = 2.9; step 2 + 2.61
    assert x.item() == pytest.approx(-0.95 - 0.5 * (2.0 + 0.9 * 2.9), abs=1e-15)


@pytest.mark.parametrize("amsgrad", [False, True])
def test_adam_first_two_steps_closed_form(amsgrad):
    lr, b1, b2, eps = 0.01, 0.9, 0.999, 1e-8
    g1 = np.array([0.3, -2.0, 1e-3, 0.0])
    g2 = np.array([-0.1, -1.0, 5.0, 0.2])
    p0 = np.array([1.0, 2.0, -3.0, 0.5])
    x = tp.tensor(p0, dtype=tp.float64, requires_grad=True)
    opt = optim.Adam([x], lr=lr, betas=(b1, b2), eps=eps, amsgrad=amsgrad)
    x.grad = tp.tensor(g1, dtype=tp.float64)
    opt.step()
    # step 1: mhat = g, vhat = g^2: p - lr g / (|g| + eps)  (~ -lr sign(g))
    p1 = p0 - lr * g1 / (np.abs(g1) + eps)
    np.testing.assert_allclose(x.detach().numpy(), p1, rtol=1e-14, atol=1e-16)
    x.grad = tp.tensor(g2, dtype=tp.float64)
    opt.step()
    m2 = b1 * (1 - b1) * g1 + (1 - b1) * g2
    v2 = b2 * (1 - b2) * g1 ** 2 + (1 - b2) * g2 ** 2
    if amsgrad:
        v2 = np.maximum(v2, (1 - b2) * g1 ** 2)
    p2 = p1 - lr / (1 - b1 ** 2) * m2 / (np.sqrt(v2) / math.sqrt(1 - b2 ** 2) + eps)
    np.testing.assert_allclose(x.detach().numpy(), p2, rtol=1e-13, atol=1e-16)
    assert opt.state[x]["step"].item() == 2.0
    assert opt.state[x]["step"].dtype == tp.float32          # PyTorch's type


def test_adamw_decay_is_decoupled():
    # zero gradient: Adam's update is 0; AdamW still shrinks p by (1 - lr wd)
    x = tp.tensor([2.0, -4.0], dtype=tp.float64, requires_grad=True)
    y = tp.tensor([2.0, -4.0], dtype=tp.float64, requires_grad=True)
    opt_w = optim.AdamW([x], lr=0.1, weight_decay=0.5)
    opt_l2 = optim.Adam([y], lr=0.1, weight_decay=0.5)
    for t in range(1, 4):
        x.grad = tp.zeros(2, dtype=tp.float64)
        y.grad = tp.zeros(2, dtype=tp.float64)
        opt_w.step()
        opt_l2.step()
        np.testing.assert_allclose(x.detach().numpy(), np.array([2.0, -4.0]) * 0.95 ** t,
                                   rtol=1e-14)
    # L2 decay enters the moments: the first step moves by ~lr against sign(p)
    assert y.detach().numpy()[0] < 2.0 - 0.09


def test_rmsprop_and_adagrad_first_step():
    g = np.array([0.5, -3.0])
    x = tp.tensor([1.0, 1.0], dtype=tp.float64, requires_grad=True)
    opt = optim.RMSprop([x], lr=0.01, alpha=0.9, eps=1e-8)
    x.grad = tp.tensor(g, dtype=tp.float64)
    opt.step()
    np.testing.assert_allclose(x.detach().numpy(),
                               1.0 - 0.01 * g / (np.sqrt(0.1 * g * g) + 1e-8), rtol=1e-14)
    y = tp.tensor([1.0, 1.0], dtype=tp.float64, requires_grad=True)
    opt = optim.Adagrad([y], lr=0.1, initial_accumulator_value=0.25, lr_decay=0.5)
    for t in (1, 2):
        y.grad = tp.tensor(g, dtype=tp.float64)
        before = y.detach().numpy().copy()
        opt.step()
        s = 0.25 + t * g * g
        clr = 0.1 / (1 + (t - 1) * 0.5)
        np.testing.assert_allclose(y.detach().numpy(), before - clr * g / (np.sqrt(s) + 1e-10),
                                   rtol=1e-14)


# ---------------------------------------------------------------- LBFGS
def _rosenbrock(x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_converges_on_rosenbrock(line_search_fn):
    x = tp.tensor([-1.5, 2.0], dtype=tp.float64, requires_grad=True)
    opt = optim.LBFGS([x], lr=1 if line_search_fn else 0.2, max_iter=500,
                      line_search_fn=line_search_fn, tolerance_grad=1e-12,
                      tolerance_change=1e-14)

    def closure():
        opt.zero_grad()
        loss = _rosenbrock(x)
        loss.backward()
        return loss

    for _ in range(6):
        opt.step(closure)
    np.testing.assert_allclose(x.detach().numpy(), [1.0, 1.0], atol=1e-6)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_iterates_match_torch(line_search_fn):
    torch = pytest.importorskip("torch")

    def run(lib, mod, x0):
        x = x0
        opt = mod.LBFGS([x], lr=1 if line_search_fn else 0.1, max_iter=7, history_size=4,
                        line_search_fn=line_search_fn)

        def closure():
            opt.zero_grad()
            loss = _rosenbrock(x) + (x ** 4).sum() * 0.01
            loss.backward()
            return loss
        path = []
        for _ in range(4):
            opt.step(closure)
            path.append(x.detach().numpy().copy())
        return np.array(path), opt.state[x]["func_evals"], opt.state[x]["n_iter"]

    ours = run(tp, optim, tp.tensor([-1.2, 1.0], dtype=tp.float64, requires_grad=True))
    theirs = run(torch, torch.optim,
                 torch.tensor([-1.2, 1.0], dtype=torch.float64, requires_grad=True))
    np.testing.assert_allclose(ours[0], theirs[0], rtol=0, atol=1e-10)
    assert ours[1:] == theirs[1:]


def test_lbfgs_needs_closure_and_one_group():
    x = tp.zeros(2, requires_grad=True)
    opt = optim.LBFGS([x])
    with pytest.raises(TypeError, match="closure"):
        opt.step()
    with pytest.raises(ValueError, match="per-parameter options"):
        optim.LBFGS([{"params": [x]}, {"params": [tp.zeros(1, requires_grad=True)]}])
    with pytest.raises(ValueError, match="strong_wolfe"):
        optim.LBFGS([x], line_search_fn="backtracking")


# ---------------------------------------------------------------- state dicts
@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=0.01, momentum=0.9)),
                                         ("Adam", dict(lr=0.05, amsgrad=True)),
                                         ("RMSprop", dict(lr=0.01, centered=True,
                                                          momentum=0.5)),
                                         ("Adagrad", dict(lr=0.1))])
@pytest.mark.parametrize("through_file", [False, True])
def test_state_dict_round_trip_continues_identically(name, kwargs, through_file, tmp_path):
    arrays = _init(3)
    params, opt = _run_tp(getattr(optim, name), kwargs, arrays, steps=5)
    sd = opt.state_dict()
    if through_file:
        tp.save(sd, tmp_path / "opt.safetensors")
        sd = tp.load(tmp_path / "opt.safetensors")
    clones = [tp.tensor(p.detach().numpy(), dtype=tp.float64, requires_grad=True)
              for p in params]
    opt2 = getattr(optim, name)(clones, lr=123.0)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == kwargs["lr"]
    for _ in range(5):
        for ps, o in ((params, opt), (clones, opt2)):
            grads = _grad_fn([p.detach().numpy() for p in ps])
            for p, g in zip(ps, grads):
                p.grad = tp.tensor(g, dtype=tp.float64)
            o.step()
    for a, b in zip(params, clones):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_state_dict_format_and_load_errors():
    a, b, c = (tp.zeros(2, requires_grad=True) for _ in range(3))
    opt = optim.SGD([{"params": [a, b]}, {"params": [c], "lr": 0.5}], lr=0.1, momentum=0.9)
    for p in (a, c):
        p.grad = tp.ones(2)
    opt.step()
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 2]                     # b had no gradient
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sd["state"][0]["momentum_buffer"] is opt.state[a]["momentum_buffer"]
    one_group = optim.SGD([a, b, c], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        one_group.load_state_dict(sd)
    sizes = optim.SGD([{"params": [a]}, {"params": [b, c]}], lr=0.1)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        sizes.load_state_dict(sd)
    assert sizes.param_groups[0]["lr"] == 0.1 and not sizes.state   # unchanged
    with pytest.raises(TypeError, match="state_dict"):
        sizes.load_state_dict([1, 2])
    # the loaded state is a copy: stepping one optimiser leaves the other alone
    other = optim.SGD([{"params": [a, b]}, {"params": [c]}], lr=0.1)
    other.load_state_dict(sd)
    assert other.param_groups[1]["lr"] == 0.5
    buf = other.state[a]["momentum_buffer"]
    assert buf is not opt.state[a]["momentum_buffer"]
    opt.step()
    assert buf.tolist() == [1.0, 1.0]


def test_load_state_dict_casts_to_the_parameter_dtype():
    x = tp.zeros(3, dtype=tp.float64, requires_grad=True)
    opt = optim.Adam([x])
    x.grad = tp.ones(3, dtype=tp.float64)
    opt.step()
    y = tp.zeros(3, dtype=tp.float32, requires_grad=True)
    opt2 = optim.Adam([y])
    opt2.load_state_dict(opt.state_dict())
    assert opt2.state[y]["exp_avg"].dtype == tp.float32
    assert opt2.state[y]["step"].dtype == tp.float32


# ---------------------------------------------------------------- groups, grads
def test_param_groups_defaults_and_add_param_group():
    a, b = tp.zeros(2, requires_grad=True), tp.zeros(3, requires_grad=True)
    opt = optim.SGD([a], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": b, "lr": 0.01})
    g = opt.param_groups[1]
    assert g["params"] == [b] and g["lr"] == 0.01 and g["momentum"] == 0.9
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([a])
    assert len(opt.param_groups) == 2
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([a, a], lr=0.1)


def test_named_parameters_are_accepted():
    a, b = tp.zeros(2, requires_grad=True), tp.zeros(3, requires_grad=True)
    opt = optim.Adam([("w", a), ("b", b)])
    assert opt.param_groups[0]["param_names"] == ["w", "b"]
    assert opt.param_groups[0]["params"] == [a, b]
    with pytest.raises(ValueError, match="with/without names"):
        opt.add_param_group({"params": [tp.zeros(1, requires_grad=True)]})


def test_a_lr_scheduler_changes_the_step():
    x = _scalar_param(0.0)
    opt = optim.SGD([x], lr=1.0)
    x.grad = tp.tensor([1.0], dtype=tp.float64)
    opt.param_groups[0]["lr"] = 0.25
    opt.step()
    assert x.item() == -0.25


def test_tensor_lr():
    x = _scalar_param(0.0)
    opt = optim.Adam([x], lr=tp.tensor(0.5))
    x.grad = tp.tensor([1.0], dtype=tp.float64)
    opt.step()
    assert x.item() == pytest.approx(-0.5, rel=1e-7)
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        optim.SGD([x], lr=tp.ones(2))


def test_params_without_grad_are_skipped_and_state_is_per_parameter():
    a, b = tp.ones(2, requires_grad=True), tp.ones(2, requires_grad=True)
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = tp.ones(2)
    opt.step()
    assert b.tolist() == [1.0, 1.0] and b not in opt.state
    assert a.tolist() != [1.0, 1.0] and opt.state[a]["step"].item() == 1


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad(set_to_none):
    x = tp.ones(2, requires_grad=True)
    (x * x).sum().backward()
    g = x.grad
    opt = optim.SGD([x], lr=0.1)
    opt.zero_grad(set_to_none=set_to_none)
    if set_to_none:
        assert x.grad is None
    else:
        assert x.grad is g and g.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert x.grad is None


def test_step_bumps_the_version_counter():
    # a graph that saved the parameter must refuse to backward after the update
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    x.grad = tp.ones(2)
    optim.SGD([x], lr=0.1).step()
    assert x.tolist() == pytest.approx([0.9, 1.9])
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_step_under_grad_mode_records_nothing_and_closure_gets_grad():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.Adam([x], lr=0.1)

    def closure():
        assert tp.is_grad_enabled()
        opt.zero_grad()
        loss = (x * x).sum()
        loss.backward()
        return loss

    with tp.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 5.0
    assert x.grad_fn is None and x.is_leaf and x.requires_grad


def test_step_hooks():
    x = tp.ones(1, requires_grad=True)
    opt = optim.SGD([x], lr=0.1)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append(("pre", o)))
    h2 = opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", o)))
    x.grad = tp.ones(1)
    opt.step()
    assert calls == [("pre", opt), ("post", opt)]
    h1.remove()
    h2.remove()
    opt.step()
    assert len(calls) == 2


def test_a_subclass_gets_hooks_once():
    class MySGD(optim.SGD):
        def step(self, closure=None):
            return super().step(closure)

    x = tp.ones(1, requires_grad=True)
    opt = MySGD([x], lr=0.1)
    calls = []
    opt.register_step_pre_hook(lambda *a: calls.append(1))
    x.grad = tp.ones(1)
    opt.step()
    assert calls == [1]
    assert x.item() == pytest.approx(0.9)


def test_repr():
    x = tp.ones(1, requires_grad=True)
    assert repr(optim.SGD([x], lr=0.1)) == (
        "SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n"
        "    foreach: None\n    fused: None\n    lr: 0.1\n    maximize: False\n"
        "    momentum: 0\n    nesterov: False\n    weight_decay: 0\n)")


def test_works_on_nn_parameter_when_available():
    nn = pytest.importorskip("tensorplay.nn")
    if not hasattr(nn, "Parameter"):
        pytest.skip("nn.Parameter not merged yet")
    w = nn.Parameter(tp.ones(2, 2))
    opt = optim.AdamW([w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    assert isinstance(w, nn.Parameter) and w.detach().numpy().max() < 1.0


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize("make,exc,msg", [
    (lambda p: optim.SGD(p, lr=-0.1), ValueError, "Invalid learning rate: -0.1"),
    (lambda p: optim.Adam(p, lr=-1), ValueError, "Invalid learning rate: -1"),
    (lambda p: optim.SGD(p, momentum=-0.5), ValueError, "Invalid momentum value: -0.5"),
    (lambda p: optim.SGD(p, weight_decay=-1), ValueError, "Invalid weight_decay value: -1"),
    (lambda p: optim.SGD(p, nesterov=True), ValueError,
     "Nesterov momentum requires a momentum and zero dampening"),
    (lambda p: optim.SGD(p, momentum=0.9, dampening=0.1, nesterov=True), ValueError,
     "Nesterov momentum requires a momentum and zero dampening"),
    (lambda p: optim.Adam(p, betas=(1.0, 0.999)), ValueError,
     "Invalid beta parameter at index 0: 1.0"),
    (lambda p: optim.AdamW(p, betas=(0.9, -0.1)), ValueError,
     "Invalid beta parameter at index 1: -0.1"),
    (lambda p: optim.Adam(p, eps=-1e-8), ValueError, "Invalid epsilon value: -1e-08"),
    (lambda p: optim.Adam(p, betas=0.9), TypeError, "betas must be a pair"),
    (lambda p: optim.RMSprop(p, alpha=-0.1), ValueError, "Invalid alpha value: -0.1"),
    (lambda p: optim.Adagrad(p, lr_decay=-1), ValueError, "Invalid lr_decay value: -1"),
    (lambda p: optim.Adagrad(p, initial_accumulator_value=-1), ValueError,
     "Invalid initial_accumulator_value value: -1"),
    (lambda p: optim.SGD(p, lr="fast"), TypeError, "lr must be a float"),
    (lambda p: optim.Adam(p, differentiable=True), NotImplementedError, "differentiable"),
    (lambda p: optim.SGD(p[0], lr=0.1), TypeError,
     "params argument given to the optimizer should be an iterable of Tensors or dicts, "
     "but got tensorplay.Tensor"),
    (lambda p: optim.SGD(set(p), lr=0.1), TypeError, "ordered collections"),
    (lambda p: optim.SGD([], lr=0.1), ValueError, "optimizer got an empty parameter list"),
    (lambda p: optim.SGD([np.zeros(2)], lr=0.1), TypeError,
     "optimizer can only optimize Tensors, but one of the params is numpy.ndarray"),
    (lambda p: optim.SGD([p[0] * 2], lr=0.1), ValueError, "can't optimize a non-leaf Tensor"),
    (lambda p: optim.SGD(5, lr=0.1), TypeError, "iterable of Tensors or dicts"),
], ids=lambda x: x if isinstance(x, str) else None)
def test_errors(make, exc, msg):
    p = [tp.ones(2, requires_grad=True)]
    with pytest.raises(exc, match=msg.replace("(", r"\(").replace(")", r"\)")):
        make(p)


def test_errors_match_torch_messages():
    torch = pytest.importorskip("torch")
    cases = [("SGD", dict(lr=-0.1)), ("SGD", dict(nesterov=True)),
             ("Adam", dict(betas=(0.9, 1.0))), ("Adam", dict(eps=-1.0)),
             ("RMSprop", dict(alpha=-1.0)), ("Adagrad", dict(lr_decay=-1.0)),
             ("AdamW", dict(weight_decay=-1.0))]
    for name, kw in cases:
        with pytest.raises(ValueError) as ours:
            getattr(optim, name)([tp.ones(1, requires_grad=True)], **kw)
        with pytest.raises(ValueError) as theirs:
            getattr(torch.optim, name)([torch.ones(1, requires_grad=True)], **kw)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError) as ours:
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError) as theirs:
        torch.optim.SGD([], lr=0.1)
    assert str(ours.value) == str(theirs.value)


def test_read_only_parameter_is_refused_before_any_write():
    a = tp.ones(2, requires_grad=True)
    b = tp.from_numpy(np.ones(3)).requires_grad_()
    b._data.flags.writeable = False
    opt = optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1)
    a.grad, b.grad = tp.ones(2), tp.ones(3, dtype=tp.float64)
    with pytest.raises(RuntimeError, match="read-only"):
        opt.step()
    assert a.tolist() == [1.0, 1.0]                 # nothing was written


def test_save_then_load_into_fresh_optimizer_via_bytes():
    x = tp.tensor([1.0, 2.0], dtype=tp.float64, requires_grad=True)
    opt = optim.AdamW([x], lr=0.1)
    x.grad = tp.ones(2, dtype=tp.float64)
    opt.step()
    buf = io.BytesIO()
    tp.save(opt.state_dict(), buf)
    buf.seek(0)
    sd = tp.load(buf)
    assert sd["param_groups"][0]["betas"] == (0.9, 0.999)
    assert sd["state"][0]["exp_avg"].tolist() == opt.state[x]["exp_avg"].tolist()


def test_module_training_matches_torch():
    """An nn MLP with torch's initial weights copied in, the same batches, AdamW
    (two groups: no decay on biases) and OneCycleLR with beta1 cycling."""
    torch = pytest.importorskip("torch")
    nn = pytest.importorskip("tensorplay.nn")
    if not hasattr(nn, "Sequential"):
        pytest.skip("nn.Module not merged yet")
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    tm = tm.double()
    m = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)).to(tp.float64)
    m.load_state_dict({k: tp.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    r = np.random.default_rng(0)
    batches = [(r.standard_normal((16, 6)), r.integers(0, 3, 16)) for _ in range(12)]

    def train(lib, model, mod, sched_mod, F, tensor, long):
        decay = [p for n, p in model.named_parameters() if n.endswith("weight")]
        no_decay = [p for n, p in model.named_parameters() if n.endswith("bias")]
        opt = mod.AdamW([{"params": decay}, {"params": no_decay, "weight_decay": 0.0}],
                        lr=0.01, weight_decay=0.1)
        sched = sched_mod.OneCycleLR(opt, max_lr=0.05, total_steps=len(batches))
        losses = []
        for x, y in batches:
            opt.zero_grad()
            loss = F.cross_entropy(model(tensor(x)), long(y))
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
        return losses, {k: v.detach().numpy() for k, v in model.state_dict().items()}

    ours = train(tp, m, optim, optim.lr_scheduler, nn.functional, tp.tensor,
                 lambda y: tp.tensor(y, dtype=tp.int64))
    theirs = train(torch, tm, torch.optim, torch.optim.lr_scheduler, torch.nn.functional,
                   torch.tensor, lambda y: torch.tensor(y, dtype=torch.int64))
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
    for k in theirs[1]:
        np.testing.assert_allclose(ours[1][k], theirs[1][k], rtol=0, atol=1e-12)


def test_benchmark_suite_runs_once():
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from benchmarks.benchmarks import bench_optim
    for name in bench_optim.OPTIMIZERS:
        b = bench_optim.OptimizerStep()
        b.setup(name, "mlp")
        before = [p.detach().numpy().copy() for p in b.opt.param_groups[0]["params"]]
        b.time_step(name, "mlp")
        after = [p.detach().numpy() for p in b.opt.param_groups[0]["params"]]
        assert all(not np.array_equal(x, y) for x, y in zip(before, after))


def test_lbfgs_state_dict_round_trip_through_save(tmp_path):
    def make(x0):
        x = tp.tensor(x0, dtype=tp.float64, requires_grad=True)
        opt = optim.LBFGS([x], max_iter=3, history_size=3, line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = _rosenbrock(x)
            loss.backward()
            return loss
        return x, opt, closure

    x, opt, closure = make([-1.2, 1.0])
    opt.step(closure)
    tp.save(opt.state_dict(), tmp_path / "lbfgs.safetensors")
    y, opt2, closure2 = make(x.detach().numpy())
    opt2.load_state_dict(tp.load(tmp_path / "lbfgs.safetensors"))
    for _ in range(3):
        opt.step(closure)
        opt2.step(closure2)
    np.testing.assert_array_equal(x.detach().numpy(), y.detach().numpy())
    assert opt.state[x]["n_iter"] == opt2.state[y]["n_iter"] > 3
    assert opt.state[x]["func_evals"] == opt2.state[y]["func_evals"]
