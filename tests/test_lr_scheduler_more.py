"""tensorplay.optim.lr_scheduler's CyclicLR and CosineAnnealingWarmRestarts: rates
(and cycled momentum) against their closed formulas and, when installed, torch's
sequences step by step; fractional epochs; state dicts; errors; the names."""
import math
import warnings

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import optim
from tensorplay.optim import lr_scheduler as lrs


def _opt(lib_optim, lib, kind="SGD", lrs_=(0.1, 0.05), **kw):
    groups = [{"params": [lib.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs_]
    return getattr(lib_optim, kind)(groups, lr=lrs_[0], **kw)


def _momentum(group):
    return group["betas"][0] if "betas" in group else group.get("momentum", 0.0)


def _rates(opt, sched, n, epochs=None):
    """[lr..., momentum...] of every group after construction and after each of
    n steps (the optimiser stepped first)."""
    def row():
        return [g["lr"] for g in opt.param_groups] + [_momentum(g) for g in opt.param_groups]
    out = [row()]
    for i in range(n):
        opt.step()
        sched.step() if epochs is None else sched.step(epochs[i])
        out.append(row())
        assert sched.get_last_lr() == out[-1][:len(opt.param_groups)]
    return np.array(out)


def _tri(t, up, down):
    """The triangle wave of CyclicLR in [0, 1], and the cycle number."""
    c = math.floor(1 + t / (up + down))
    pos = t - (c - 1) * (up + down)
    return (pos / up if pos <= up else 1 - (pos - up) / down), c


# ---------------------------------------------------------------- closed forms
@pytest.mark.parametrize("mode", ["triangular", "triangular2", "exp_range"])
def test_cyclic_closed_forms(mode):
    up, down, gamma = 3, 5, 0.9
    opt = _opt(optim, tp, momentum=0.9)
    sched = lrs.CyclicLR(opt, base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=up,
                         step_size_down=down, mode=mode, gamma=gamma)
    got = _rates(opt, sched, 20)
    for t in range(21):
        h, c = _tri(t, up, down)
        scale = {"triangular": 1.0, "triangular2": 0.5 ** (c - 1),
                 "exp_range": gamma ** t}[mode]
        for k, base in enumerate((0.01, 0.02)):
            assert got[t, k] == pytest.approx(base + (0.1 - base) * h * scale, rel=1e-12)
            assert got[t, 2 + k] == pytest.approx(0.9 - 0.1 * h * scale, rel=1e-12)
    assert opt.param_groups[0]["max_momentum"] == 0.9
    assert opt.param_groups[0]["base_momentum"] == 0.8


def test_cyclic_cycles_adams_beta1_and_custom_scale_fn():
    opt = _opt(optim, tp, kind="Adam", lrs_=(0.1,))
    sched = lrs.CyclicLR(opt, 0.001, 0.01, step_size_up=2, base_momentum=0.85,
                         max_momentum=0.95)
    got = _rates(opt, sched, 4)
    np.testing.assert_allclose(got[:, 1], [0.95, 0.9, 0.85, 0.9, 0.95], rtol=1e-14)
    assert opt.param_groups[0]["betas"][1] == 0.999                # beta2 kept
    opt = _opt(optim, tp, lrs_=(0.1,))
    sched = lrs.CyclicLR(opt, 0.0, 1.0, step_size_up=1, scale_fn=lambda x: 1 / (x + 1),
                         scale_mode="iterations", cycle_momentum=False)
    got = _rates(opt, sched, 4)
    np.testing.assert_allclose(got[1:, 0], [0.5, 0.0, 0.25, 0.0], atol=1e-15)


def test_warm_restarts_closed_form_integer_steps():
    T0, mult, eta_min = 2, 2, 0.001
    opt = _opt(optim, tp)
    got = _rates(opt, lrs.CosineAnnealingWarmRestarts(opt, T_0=T0, T_mult=mult,
                                                      eta_min=eta_min), 14)
    starts = [0, 2, 6, 14]                              # periods 2, 4, 8
    for t in range(15):
        i = max(k for k, s in enumerate(starts) if s <= t)
        T_i, T_cur = T0 * mult ** i, t - starts[i]
        for k, base in enumerate((0.1, 0.05)):
            want = eta_min + (base - eta_min) * (1 + math.cos(math.pi * T_cur / T_i)) / 2
            assert got[t, k] == pytest.approx(want, rel=1e-13)


def test_warm_restarts_fractional_epochs_without_warning():
    T0, mult = 3, 2
    opt = _opt(optim, tp, lrs_=(1.0,))
    sched = lrs.CosineAnnealingWarmRestarts(opt, T_0=T0, T_mult=mult)
    epochs = [0.5, 2.25, 3.0, 4.5, 9.0, 20.0, 1.5]
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # step(epoch) does not warn
        got = _rates(opt, sched, len(epochs), epochs)
    for e, lr in zip(epochs, got[1:, 0]):
        start, T_i = 0, T0
        while e >= start + T_i:
            start, T_i = start + T_i, T_i * mult
        assert lr == pytest.approx((1 + math.cos(math.pi * (e - start) / T_i)) / 2,
                                   rel=1e-12, abs=1e-15)
    assert sched.last_epoch == 1                        # floor of the last epoch
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        sched.step(-1)


# ---------------------------------------------------------------- against torch
CASES = [
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=4), "SGD", dict(momentum=0.9)),
    ("CyclicLR", dict(base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=3, step_size_down=5,
                      mode="triangular2"), "SGD", dict(momentum=0.9)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=3, mode="exp_range",
                      gamma=0.9), "Adam", {}),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, cycle_momentum=False, step_size_up=2,
                      scale_fn=lambda x: 0.5 * (1 + math.sin(x)), scale_mode="iterations"),
     "RMSprop", {}),
    ("CosineAnnealingWarmRestarts", dict(T_0=3), "SGD", {}),
    ("CosineAnnealingWarmRestarts", dict(T_0=2, T_mult=3, eta_min=0.001), "Adam", {}),
]


@pytest.mark.parametrize("name,kw,kind,okw", CASES, ids=[f"{c[0]}-{i}" for i, c in
                                                       enumerate(CASES)])
def test_sequences_and_state_dict_keys_match_torch(name, kw, kind, okw):
    torch = pytest.importorskip("torch")
    ours_opt = _opt(optim, tp, kind, **okw)
    ours = getattr(lrs, name)(ours_opt, **kw)
    theirs_opt = _opt(torch.optim, torch, kind, **okw)
    theirs = getattr(torch.optim.lr_scheduler, name)(theirs_opt, **kw)
    np.testing.assert_allclose(_rates(ours_opt, ours, 25),
                               _rates(theirs_opt, theirs, 25), rtol=1e-15, atol=0)
    assert set(ours.state_dict()) == set(theirs.state_dict())
    assert ours_opt.param_groups[0].keys() == theirs_opt.param_groups[0].keys()
    if name == "CosineAnnealingWarmRestarts":
        epochs = [0.5, 1.25, 2.9, 3.0, 7.5, 0.2, 13.1, 100.3]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.testing.assert_allclose(_rates(ours_opt, ours, 8, epochs),
                                       _rates(theirs_opt, theirs, 8, epochs), rtol=1e-15)


# ---------------------------------------------------------------- state dicts
class _Halving:
    """A callable object scale function: its ``__dict__`` is saved."""

    def __init__(self):
        self.base = 0.5

    def __call__(self, x):
        return self.base ** (x - 1)


@pytest.mark.parametrize("make", [
    lambda o: lrs.CyclicLR(o, 0.01, 0.1, step_size_up=3, scale_fn=_Halving()),
    lambda o: lrs.CyclicLR(o, 0.01, 0.1, step_size_up=3, mode="exp_range", gamma=0.8),
    lambda o: lrs.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2, eta_min=0.01),
])
def test_state_dict_resume_mid_schedule(make, tmp_path):
    ref_opt = _opt(optim, tp, momentum=0.9)
    ref = _rates(ref_opt, make(ref_opt), 12)
    opt = _opt(optim, tp, momentum=0.9)
    sched = make(opt)
    _rates(opt, sched, 5)
    tp.save({"opt": opt.state_dict(), "sched": sched.state_dict()}, tmp_path / "s.pt")
    saved = tp.load(tmp_path / "s.pt")
    opt2 = _opt(optim, tp, momentum=0.9)
    opt2.load_state_dict(saved["opt"])
    sched2 = make(opt2)
    sched2.load_state_dict(saved["sched"])
    np.testing.assert_allclose(_rates(opt2, sched2, 7)[1:], ref[6:], rtol=1e-15)


def test_cyclic_state_dict_keeps_a_callable_objects_state():
    opt = _opt(optim, tp)
    fn = _Halving()
    fn.base = 0.25
    sd = lrs.CyclicLR(opt, 0.01, 0.1, scale_fn=fn).state_dict()
    assert sd["_scale_fn_custom"] == {"base": 0.25}
    assert lrs.CyclicLR(opt, 0.01, 0.1, scale_fn=lambda x: 1.0).state_dict()[
        "_scale_fn_custom"] is None
    other = _Halving()
    sched = lrs.CyclicLR(_opt(optim, tp), 0.01, 0.1, scale_fn=other)
    sched.load_state_dict(sd)
    assert other.base == 0.25 and sched._scale_fn_custom is other


# ---------------------------------------------------------------- errors, names
@pytest.mark.parametrize("make,exc,msg", [
    (lambda o: lrs.CyclicLR(o, 0.01, 0.1, mode="sawtooth"), ValueError,
     "mode is invalid and scale_fn is None"),
    (lambda o: lrs.CyclicLR(o, [0.01], 0.1), ValueError,
     "base_lr must have the same length as optimizer.param_groups"),
    (lambda o: lrs.CyclicLR(optim.Adagrad([tp.zeros(1, requires_grad=True)]), 0.01, 0.1),
     ValueError, "optimizer must support momentum or beta1"),
    (lambda o: lrs.CyclicLR(object(), 0.01, 0.1), TypeError, "is not an Optimizer"),
    (lambda o: lrs.CosineAnnealingWarmRestarts(o, T_0=0), ValueError,
     "Expected positive integer T_0, but got 0"),
    (lambda o: lrs.CosineAnnealingWarmRestarts(o, T_0=2.0), ValueError,
     "Expected positive integer T_0"),
    (lambda o: lrs.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0), ValueError,
     "Expected integer T_mult >= 1, but got 0"),
    (lambda o: lrs.CosineAnnealingWarmRestarts(o, T_0=2, eta_min="0"), ValueError,
     "Expected float or int eta_min"),
])
def test_errors(make, exc, msg):
    with pytest.raises(exc, match=msg):
        make(_opt(optim, tp, momentum=0.9))


def test_unknown_name_and_torch_names():
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchLR'") as info:
        lrs.NoSuchLR
    assert "PyTorch" not in str(info.value)
    from tensorplay.optim._torch_names import LR_SCHEDULER, missing
    assert all(hasattr(lrs, name) for name in LR_SCHEDULER)   # every one implemented
    err = missing("optim.lr_scheduler", LR_SCHEDULER | {"SWALR"}, "SWALR")
    assert "torch.optim.lr_scheduler.SWALR exists in PyTorch; tensorplay does not " \
           "implement it yet" in str(err)
