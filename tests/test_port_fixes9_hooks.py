"""Module backward hooks (register_full_backward_hook, register_full_backward_pre_hook,
register_backward_hook, the global module hooks), each scenario run on torch 2.13
and on tensorplay and compared."""
import importlib
import warnings

import numpy as np
import pytest

import tensorplay as tp

torch = pytest.importorskip("torch")


def _a(t):
    return None if t is None else np.asarray(t.detach().numpy(), dtype=np.float64)


def _same(a, b):
    """Logs of nested lists/tuples of arrays, None and str are equal."""
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, np.ndarray):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    else:
        assert a == b, (a, b)


def _both(scenario):
    out = [scenario(lib) for lib in (torch, tp)]
    _same(out[0], out[1])
    return out[1]


def _set(module, lib):
    with lib.no_grad():
        for p in module.parameters():
            p.copy_(lib.tensor(np.linspace(-1, 1, p.numel()).reshape(tuple(p.shape)),
                               dtype=lib.float32))
    return module


def _linear(lib):
    return _set(lib.nn.Linear(3, 2), lib)


def test_full_hooks_modify_gradients_on_linear():
    def scenario(lib):
        log, lin = [], _linear(lib)

        def hook(m, gi, go):
            log.append(("full", [_a(g) for g in gi], [_a(g) for g in go]))
            return tuple(None if g is None else 2 * g for g in gi)

        def pre(m, go):
            log.append(("pre", [_a(g) for g in go]))
            return (10 * go[0],)
        h1 = lin.register_full_backward_hook(hook)
        h2 = lin.register_full_backward_pre_hook(pre)
        x = lib.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], requires_grad=True)
        lin(x).sum().backward()
        log.append((_a(x.grad), _a(lin.weight.grad), _a(lin.bias.grad)))
        h1.remove()
        h2.remove()
        h1.remove()                          # idempotent
        x.grad = None
        lin(x).sum().backward()
        log.append(_a(x.grad))
        return log
    log = _both(scenario)
    assert log[0][0] == "pre" and log[1][0] == "full"


def test_hook_order_prepend_and_non_tensor_arguments():
    def scenario(lib):
        log = []

        class Two(lib.nn.Module):
            def forward(self, a, k, b):
                return a * k + b, a.sum()
        two = Two()
        two.register_full_backward_hook(
            lambda m, gi, go: log.append(("A", [_a(g) for g in gi], [_a(g) for g in go])))
        two.register_full_backward_hook(lambda m, gi, go: log.append("B"), prepend=True)
        two.register_full_backward_pre_hook(lambda m, go: log.append("P1"))
        two.register_full_backward_pre_hook(lambda m, go: log.append("P0"), prepend=True)
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0])           # no grad: zeros in grad_input (PyTorch)
        o1, o2 = two(a, 3.0, b)
        o1.sum().backward()                  # o2 unused: None in grad_output
        o1, o2 = two(a, 3.0, b)
        (o1.sum() + 2 * o2).backward()
        return log
    _both(scenario)


def test_conv_sequential_hooks_and_no_input_grad():
    def scenario(lib):
        log = []
        net = _set(lib.nn.Sequential(lib.nn.Conv2d(1, 2, 3, padding=1), lib.nn.ReLU(),
                                     lib.nn.Flatten(), lib.nn.Linear(32, 3)), lib)
        net[0].register_full_backward_hook(
            lambda m, gi, go: log.append(("conv", _a(go[0]), _a(gi[0]))))
        net[3].register_full_backward_hook(
            lambda m, gi, go: (gi[0] * 0.5,))
        net.register_full_backward_hook(lambda m, gi, go: log.append(("seq", _a(gi[0]))))
        x = lib.tensor(np.linspace(0, 1, 32).reshape(2, 1, 4, 4), dtype=lib.float32,
                       requires_grad=True)
        net(x).sum().backward()
        log.append(("x", _a(x.grad), _a(net[0].weight.grad)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # "firing ... since no inputs require grad"
            net(x.detach()).sum().backward()  # conv's input needs no grad: gi = (None,)
        return log
    _both(scenario)


def test_hooks_fire_once_per_backward_and_with_create_graph():
    def scenario(lib):
        calls = []
        lin = _linear(lib)
        lin.register_full_backward_hook(lambda m, gi, go: calls.append(_a(gi[0])))
        x = lib.tensor([[1.0, -1.0, 0.5]], requires_grad=True)
        y = lin(x)
        (y * y).sum().backward(retain_graph=True)   # two uses of the output: one call
        g, = lib.autograd.grad(y.sum(), x, create_graph=True)
        calls.append(_a(g))
        return calls
    calls = _both(scenario)
    assert len(calls) == 3


def test_inplace_on_a_hooked_output_raises_like_torch():
    for lib in (torch, tp):
        lin = _linear(lib)
        lin.register_full_backward_hook(lambda *a: None)
        with pytest.raises(RuntimeError):
            lin(lib.ones(1, 3, requires_grad=True)).relu_()
        seq = lib.nn.Sequential(_linear(lib), lib.nn.ReLU(inplace=True))
        seq[0].register_full_backward_hook(lambda *a: None)
        with pytest.raises(RuntimeError):
            seq(lib.ones(1, 3))
        # in place on the module's input after the call is fine in both
        x = lib.ones(1, 3, requires_grad=True)
        h = x * 1.0
        lin(h)
        h.add_(1.0)


def test_hook_result_errors():
    for lib in (torch, tp):
        lin = _linear(lib)
        lin.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
        with pytest.raises(RuntimeError, match="invalid number of grad_input"):
            lin(lib.ones(1, 3, requires_grad=True)).sum().backward()
        lin = _linear(lib)
        lin.register_full_backward_pre_hook(lambda m, go: (go[0], go[0]))
        with pytest.raises(RuntimeError, match="invalid number of grad_output"):
            lin(lib.ones(1, 3, requires_grad=True)).sum().backward()
        lin = _linear(lib)
        lin.register_full_backward_hook(lambda m, gi, go: (lib.ones(1, 3),))
        with pytest.raises(RuntimeError, match="no input requires gradient"), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lin(lib.ones(1, 3)).sum().backward()


def test_deprecated_register_backward_hook():
    # tensorplay runs it as the full hook (documented); torch's old hook sees the
    # last node's inputs, so only the mixing rule is compared
    tanh = tp.nn.Tanh()
    seen = []
    with pytest.warns(FutureWarning, match="register_full_backward_hook"):
        tanh.register_backward_hook(lambda m, gi, go: seen.append(_a(gi[0])))
    x = tp.tensor([0.5, -1.0], requires_grad=True)
    tanh(x).sum().backward()
    np.testing.assert_allclose(seen[0], 1 - np.tanh([0.5, -1.0]) ** 2, rtol=1e-6)
    for lib in (torch, tp):
        m = lib.nn.Tanh()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m.register_backward_hook(lambda *a: None)
        with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks"):
            m.register_full_backward_hook(lambda *a: None)
        m = lib.nn.Tanh()
        m.register_full_backward_hook(lambda *a: None)
        with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks"):
            m.register_backward_hook(lambda *a: None)


def test_global_module_hooks():
    def scenario(lib):
        mm = importlib.import_module(lib.__name__ + ".nn.modules.module")
        log = []
        hs = [mm.register_module_forward_pre_hook(lambda m, i: log.append(("gp", type(m).__name__))),
              mm.register_module_forward_hook(lambda m, i, o: log.append(("gf", type(m).__name__))),
              mm.register_module_full_backward_pre_hook(
                  lambda m, go: log.append(("gbp", type(m).__name__))),
              mm.register_module_full_backward_hook(
                  lambda m, gi, go: log.append(("gb", type(m).__name__)))]
        try:
            seq = lib.nn.Sequential(_linear(lib), lib.nn.Tanh())
            seq[1].register_full_backward_hook(lambda m, gi, go: log.append("own"))
            seq(lib.ones(1, 3, requires_grad=True)).sum().backward()
        finally:
            for h in hs:
                h.remove()
        seq(lib.ones(1, 3, requires_grad=True)).sum().backward()     # removed: no entries
        return log
    _both(scenario)
    from tensorplay.nn.modules import _hooks
    assert _hooks.ACTIVE == [False]
