"""tensorplay.optim.lr_scheduler: each schedule's rates against its closed formula,
and (when installed) against torch's sequence step by step; state dicts, the
step-order warning and the errors."""
import math
import warnings

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import optim
from tensorplay.optim import lr_scheduler as lrs


def _opt(lib_optim, tensor, kind="SGD", lrs_=(0.1, 0.05), **kw):
    groups = [{"params": [tensor()], "lr": lr} for lr in lrs_]
    return getattr(lib_optim, kind)(groups, lr=lrs_[0], **kw)


def _tp_opt(kind="SGD", lrs_=(0.1, 0.05), **kw):
    return _opt(optim, lambda: tp.zeros(2, requires_grad=True), kind, lrs_, **kw)


def _rates(opt, sched, n, metrics=None):
    """Rates of every group after construction and after each of n steps (an
    optimizer step first, as a training loop does)."""
    out = [[g["lr"] for g in opt.param_groups]]
    for i in range(n):
        opt.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[i])
        out.append([g["lr"] for g in opt.param_groups])
        assert sched.get_last_lr() == out[-1]
    return np.array(out)


# ---------------------------------------------------------------- closed forms
def test_step_multistep_exponential_closed_forms():
    opt = _tp_opt()
    got = _rates(opt, lrs.StepLR(opt, step_size=3, gamma=0.5), 10)
    e = np.arange(11)
    np.testing.assert_allclose(got, np.outer(0.5 ** (e // 3), [0.1, 0.05]), rtol=1e-14)
    opt = _tp_opt()
    got = _rates(opt, lrs.MultiStepLR(opt, milestones=[2, 5, 5], gamma=0.1), 8)
    k = np.array([np.searchsorted([2, 5, 5], i, side="right") for i in e[:9]])
    np.testing.assert_allclose(got, np.outer(0.1 ** k, [0.1, 0.05]), rtol=1e-13)
    opt = _tp_opt()
    got = _rates(opt, lrs.ExponentialLR(opt, gamma=0.9), 10)
    np.testing.assert_allclose(got, np.outer(0.9 ** e, [0.1, 0.05]), rtol=1e-13)


def test_cosine_recursive_form_agrees_with_closed_form():
    T, eta_min = 10, 0.001
    opt = _tp_opt()
    got = _rates(opt, lrs.CosineAnnealingLR(opt, T_max=T, eta_min=eta_min), 3 * T)
    e = np.arange(3 * T + 1)
    closed = eta_min + np.outer((1 + np.cos(np.pi * e / T)) / 2,
                                np.array([0.1, 0.05]) - eta_min)
    np.testing.assert_allclose(got, closed, rtol=1e-10, atol=1e-15)
    assert got[T, 0] == pytest.approx(eta_min, abs=1e-15)


def test_linear_constant_lambda_multiplicative_polynomial():
    opt = _tp_opt(lrs_=(1.0,))
    got = _rates(opt, lrs.LinearLR(opt, start_factor=0.25, end_factor=1.0, total_iters=4), 7)
    want = [0.25 + 0.75 * min(i, 4) / 4 for i in range(8)]
    np.testing.assert_allclose(got[:, 0], want, rtol=1e-14)
    opt = _tp_opt(lrs_=(1.0,))
    got = _rates(opt, lrs.ConstantLR(opt, factor=0.5, total_iters=3), 6)
    np.testing.assert_allclose(got[:, 0], [0.5, 0.5, 0.5, 1, 1, 1, 1], rtol=1e-15)
    opt = _tp_opt()
    got = _rates(opt, lrs.LambdaLR(opt, [lambda e: 1 / (e + 1), lambda e: 0.5 ** e]), 5)
    np.testing.assert_allclose(got[:, 0], [0.1 / (i + 1) for i in range(6)], rtol=1e-14)
    np.testing.assert_allclose(got[:, 1], [0.05 * 0.5 ** i for i in range(6)], rtol=1e-14)
    opt = _tp_opt(lrs_=(1.0,))
    got = _rates(opt, lrs.MultiplicativeLR(opt, lambda e: 0.9), 4)
    np.testing.assert_allclose(got[:, 0], 0.9 ** np.arange(5), rtol=1e-14)
    opt = _tp_opt(lrs_=(1.0,))
    got = _rates(opt, lrs.PolynomialLR(opt, total_iters=4, power=2.0), 6)
    np.testing.assert_allclose(got[:, 0], [(1 - min(i, 4) / 4) ** 2 for i in range(7)],
                               atol=1e-15)


def test_onecycle_closed_form():
    opt = _tp_opt(lrs_=(0.1,), momentum=0.9)
    n, max_lr = 20, 1.0
    sched = lrs.OneCycleLR(opt, max_lr=max_lr, total_steps=n, pct_start=0.25)
    got, moms = [opt.param_groups[0]["lr"]], [opt.param_groups[0]["momentum"]]
    for _ in range(n - 1):
        opt.step()
        sched.step()
        got.append(opt.param_groups[0]["lr"])
        moms.append(opt.param_groups[0]["momentum"])
    lo, end1 = max_lr / 25, 0.25 * n - 1
    for i, (lr, m) in enumerate(zip(got, moms)):
        if i <= end1:
            pct = i / end1
            want = max_lr + (lo - max_lr) / 2 * (math.cos(math.pi * pct) + 1)
            wm = 0.85 + (0.95 - 0.85) / 2 * (math.cos(math.pi * pct) + 1)
        else:
            pct = (i - end1) / (n - 1 - end1)
            want = lo / 1e4 + (max_lr - lo / 1e4) / 2 * (math.cos(math.pi * pct) + 1)
            wm = 0.95 + (0.85 - 0.95) / 2 * (math.cos(math.pi * pct) + 1)
        assert lr == pytest.approx(want, rel=1e-12)
        assert m == pytest.approx(wm, rel=1e-12)
    assert got[0] == pytest.approx(lo) and got[-1] == pytest.approx(lo / 1e4)
    opt.step()
    sched.step()
    with pytest.raises(ValueError, match="Tried to step 21 times"):
        opt.step()
        sched.step()


def test_reduce_on_plateau_by_hand():
    opt = _tp_opt(lrs_=(1.0,))
    sched = lrs.ReduceLROnPlateau(opt, factor=0.5, patience=1, cooldown=1, min_lr=0.2)
    metrics = [5, 4, 4, 4, 4, 4, 4, 4, 4, 3]
    got = _rates(opt, sched, len(metrics), metrics)[1:, 0]
    #         5  4  4  4(bad 2: cut) 4(cool) 4 4(cut) 4(cool) 4 3
    np.testing.assert_allclose(got, [1, 1, 1, .5, .5, .5, .25, .25, .25, .25])
    opt = _tp_opt(lrs_=(1.0,))
    sched = lrs.ReduceLROnPlateau(opt, mode="max", threshold=0.1, threshold_mode="abs", factor=0.5,
                                  patience=0, min_lr=0.3)
    got = _rates(opt, sched, 4, [1.0, 1.05, 1.2, 1.0])[1:, 0]
    np.testing.assert_allclose(got, [1.0, 0.5, 0.5, 0.3])


def test_sequential_warmup_then_cosine():
    opt = _tp_opt(lrs_=(1.0,))
    warm = lrs.LinearLR(opt, start_factor=0.1, total_iters=3)
    cos = lrs.CosineAnnealingLR(opt, T_max=5)
    sched = lrs.SequentialLR(opt, [warm, cos], milestones=[3])
    got = _rates(opt, sched, 8)[:, 0]
    want = [0.1 + 0.9 * i / 3 for i in range(3)] + \
        [(1 + math.cos(math.pi * k / 5)) / 2 for k in range(6)]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------- against torch
def _make(lib, name, opt):
    L = lib.optim.lr_scheduler if lib is not tp else lrs
    if name == "Sequential":
        return L.SequentialLR(opt, [L.LinearLR(opt, 0.2, total_iters=4),
                                    L.ExponentialLR(opt, 0.9)], milestones=[4])
    if name == "Chained":
        return L.ChainedScheduler([L.ConstantLR(opt, 0.5, total_iters=3),
                                   L.ExponentialLR(opt, 0.95)])
    ctor, kw = SCHEDULES[name]
    return getattr(L, ctor)(opt, **kw)


SCHEDULES = {
    "StepLR": ("StepLR", dict(step_size=4, gamma=0.3)),
    "MultiStepLR": ("MultiStepLR", dict(milestones=[3, 7, 7, 12], gamma=0.5)),
    "ExponentialLR": ("ExponentialLR", dict(gamma=0.93)),
    "CosineAnnealingLR": ("CosineAnnealingLR", dict(T_max=6, eta_min=0.002)),
    "LinearLR": ("LinearLR", dict(start_factor=0.3, end_factor=0.8, total_iters=9)),
    "ConstantLR": ("ConstantLR", dict(factor=0.4, total_iters=6)),
    "PolynomialLR": ("PolynomialLR", dict(total_iters=11, power=1.5)),
    "OneCycle-cos": ("OneCycleLR", dict(max_lr=[1.0, 0.4], total_steps=25)),
    "OneCycle-linear-3": ("OneCycleLR", dict(max_lr=0.5, total_steps=25, pct_start=0.2,
                                             anneal_strategy="linear", three_phase=True)),
    "OneCycle-nomom": ("OneCycleLR", dict(max_lr=0.5, epochs=5, steps_per_epoch=5,
                                          cycle_momentum=False)),
    "Plateau": ("ReduceLROnPlateau", dict(factor=0.3, patience=2, cooldown=1,
                                          threshold=0.05, min_lr=[0.01, 0.001])),
    "Sequential": None, "Chained": None,
}


@pytest.mark.parametrize("kind", ["SGD", "Adam"])
@pytest.mark.parametrize("name", list(SCHEDULES))
def test_sequences_match_torch(name, kind):
    torch = pytest.importorskip("torch")
    kw = dict(momentum=0.9) if kind == "SGD" else {}
    metrics = [3.0, 2.0, 2.0, 1.99, 2.5, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5,
               0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    seqs = []
    for lib, mod, tensor in ((tp, optim, lambda: tp.zeros(1, requires_grad=True)),
                             (torch, torch.optim, lambda: torch.zeros(1, requires_grad=True))):
        opt = _opt(mod, tensor, kind, **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched = _make(lib, name, opt)
            rows = []
            for i in range(24):
                opt.step()
                sched.step(metrics[i]) if name == "Plateau" else sched.step()
                g = opt.param_groups
                rows.append([x["lr"] for x in g]
                            + [x.get("momentum", x.get("betas", (0,))[0]) for x in g])
                rows[-1] += list(sched.get_last_lr())
        seqs.append(np.array(rows, dtype=float))
    np.testing.assert_allclose(seqs[0], seqs[1], rtol=1e-13, atol=1e-16)


def test_state_dict_resume_mid_schedule():
    def fresh():
        opt = _tp_opt(lrs_=(1.0,))
        return opt, lrs.CosineAnnealingLR(opt, T_max=8, eta_min=0.01)

    opt, sched = fresh()
    for _ in range(3):
        opt.step()
        sched.step()
    sd_opt, sd_sched = opt.state_dict(), sched.state_dict()
    assert "optimizer" not in sd_sched and sd_sched["last_epoch"] == 3
    opt2, sched2 = fresh()
    opt2.load_state_dict(sd_opt)
    sched2.load_state_dict(sd_sched)
    for _ in range(6):
        for o, s in ((opt, sched), (opt2, sched2)):
            o.step()
            s.step()
        assert sched.get_last_lr() == sched2.get_last_lr()


def test_lambda_state_dict_keeps_callable_objects_state():
    class Decay:
        def __init__(self):
            self.rate = 0.5

        def __call__(self, e):
            return self.rate ** e

    opt = _tp_opt(lrs_=(1.0,))
    s = lrs.LambdaLR(opt, Decay())
    sd = s.state_dict()
    assert sd["lr_lambdas"] == [{"rate": 0.5}]
    s2 = lrs.LambdaLR(_tp_opt(lrs_=(1.0,)), lambda e: 1.0)
    assert lrs.LambdaLR(opt, lambda e: 1.0).state_dict()["lr_lambdas"] == [None]
    sd["lr_lambdas"] = [None]
    s2.load_state_dict(sd)
    assert s2.last_epoch == 0


def test_scheduler_state_dict_through_save(tmp_path):
    opt = _tp_opt()
    sched = lrs.OneCycleLR(opt, max_lr=0.3, total_steps=10)
    opt.step()
    sched.step()
    tp.save(sched.state_dict(), tmp_path / "s.safetensors")
    loaded = tp.load(tmp_path / "s.safetensors")
    opt2 = _tp_opt()
    s2 = lrs.OneCycleLR(opt2, max_lr=0.3, total_steps=10)
    s2.load_state_dict(loaded)
    assert s2.last_epoch == 1 and s2.get_last_lr() == sched.get_last_lr()


def test_order_warning_and_get_lr_warning():
    opt = _tp_opt()
    sched = lrs.StepLR(opt, 2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    opt = _tp_opt()
    sched = lrs.StepLR(opt, 2)
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched.get_lr()


def test_initial_lr_and_resume_errors():
    opt = _tp_opt()
    lrs.ExponentialLR(opt, 0.5)
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.05]
    with pytest.raises(KeyError, match="initial_lr"):
        lrs.StepLR(_tp_opt(), 3, last_epoch=5)
    # resuming with initial_lr present uses it as base_lr
    s = lrs.ExponentialLR(opt, 0.5, last_epoch=3)
    assert s.base_lrs == [0.1, 0.05]


@pytest.mark.parametrize("make,exc,msg", [
    (lambda o: lrs.StepLR(object(), 3), TypeError, "object is not an Optimizer"),
    (lambda o: lrs.ConstantLR(o, factor=2), ValueError, "between 0 and 1"),
    (lambda o: lrs.LinearLR(o, start_factor=0), ValueError, "greater than 0"),
    (lambda o: lrs.LinearLR(o, end_factor=1.5), ValueError, "Ending multiplicative"),
    (lambda o: lrs.LambdaLR(o, [lambda e: 1]), ValueError, "Expected 2 lr_lambdas, but got 1"),
    (lambda o: lrs.MultiplicativeLR(o, 3), TypeError, "lr_lambda should be a function"),
    (lambda o: lrs.ReduceLROnPlateau(o, factor=1.0), ValueError, "Factor should be < 1.0."),
    (lambda o: lrs.ReduceLROnPlateau(o, mode="up"), ValueError, "mode up is unknown!"),
    (lambda o: lrs.ReduceLROnPlateau(o, threshold_mode="x"), ValueError,
     "threshold mode x is unknown!"),
    (lambda o: lrs.ReduceLROnPlateau(o, min_lr=[0.1]), ValueError, "expected 2 min_lrs, got 1"),
    (lambda o: lrs.OneCycleLR(o, 1.0), ValueError, "You must define either total_steps"),
    (lambda o: lrs.OneCycleLR(o, 1.0, total_steps=0), ValueError,
     "Expected positive integer total_steps"),
    (lambda o: lrs.OneCycleLR(o, 1.0, total_steps=5, pct_start=1), ValueError,
     "Expected float between 0 and 1 pct_start"),
    (lambda o: lrs.OneCycleLR(o, 1.0, total_steps=5, anneal_strategy="exp"), ValueError,
     "anneal_strategy must be one of 'cos' or 'linear'"),
    (lambda o: lrs.OneCycleLR(o, [1.0], total_steps=5), ValueError,
     "max_lr must have the same length as optimizer.param_groups"),
    (lambda o: lrs.OneCycleLR(o, 1.0, total_steps=5), ValueError,
     "optimizer must support momentum or beta1"),
    (lambda o: lrs.SequentialLR(o, [], []), ValueError, "expects at least one scheduler"),
    (lambda o: lrs.SequentialLR(o, [lrs.StepLR(o, 2)], [3]), ValueError,
     "one more than the number of milestone points"),
    (lambda o: lrs.SequentialLR(o, [lrs.ReduceLROnPlateau(o)], []), ValueError,
     "does not support `ReduceLROnPlateau`"),
    (lambda o: lrs.SequentialLR(o, [lrs.StepLR(_tp_opt(), 2)], []), ValueError,
     "expects all schedulers to belong to the same optimizer"),
    (lambda o: lrs.ChainedScheduler([]), ValueError, "expects at least one scheduler"),
], ids=lambda x: x if isinstance(x, str) else None)
def test_errors(make, exc, msg):
    o = optim.Adagrad([{"params": [tp.zeros(1, requires_grad=True)]},
                       {"params": [tp.zeros(1, requires_grad=True)]}], lr=0.1)
    with pytest.raises(exc, match=msg.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        make(o)


def test_tensor_lr_is_filled_in_place():
    lr = tp.tensor(0.5)
    opt = optim.SGD([tp.zeros(1, requires_grad=True)], lr=lr)
    sched = lrs.ExponentialLR(opt, 0.5)
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] is lr and lr.item() == 0.25
    assert sched.get_last_lr()[0] is not lr
