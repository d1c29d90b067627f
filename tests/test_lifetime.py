"""Graph lifetime: intermediate Tensors, their arrays and graph nodes are freed
by reference counting alone -- no reference cycles -- once a backward pass has
released the graph and the results are dropped.

Every test runs with the garbage collector disabled, so anything kept alive
only by a cycle shows up as a live weak reference (or as growing memory).  The
reference for "dead" is Python's own ``weakref``; for memory, ``tracemalloc``
(numpy reports its array allocations to it) and ``/proc/self/statm``.
"""
import gc
import os
import tracemalloc
import weakref

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.autograd import forward_ad as fwAD
from tensorplay.autograd.functional import jvp


@pytest.fixture
def nogc():
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class Tracker:
    """Weak references to the Tensors a function makes, their arrays, their
    graph nodes and (inside a dual level) their tangents."""

    def __init__(self):
        self.refs = []

    def __call__(self, *tensors):
        for t in tensors:
            self.refs.append(("tensor", weakref.ref(t)))
            self.refs.append(("array", weakref.ref(t._data)))
            if t.grad_fn is not None:
                self.refs.append((t.grad_fn.name(), weakref.ref(t.grad_fn)))
            tangent = fwAD.unpack_dual(t).tangent
            if tangent is not None:
                self.refs.append(("tangent", weakref.ref(tangent)))
        return tensors[-1]

    def alive(self):
        return [kind for kind, r in self.refs if r() is not None]


def _mlp(track, w, x):
    """A small function with ops that save inputs (mul, matmul) and outputs
    (exp, tanh), and a broadcast (the bias)."""
    h = track(x @ w)
    a = track(h.tanh())
    e = track((a * x[:, :3]).exp())
    return track((e + 1.0).sum())


# ---------------------------------------------------------------- reverse mode
def test_reverse_mode_graph_is_freed_by_grad_and_by_dropping_the_output(nogc):
    track = Tracker()
    x = tp.randn(5, 4, dtype=tp.float64)
    w = tp.randn(4, 3, dtype=tp.float64, requires_grad=True)
    out = _mlp(track, w, x)
    n_nodes = sum(1 for k, _ in track.refs if k.endswith("Backward0"))
    assert n_nodes == 4
    (g,) = tp.autograd.grad(out, w)              # retain_graph=False: saved data freed
    alive = track.alive()
    # only the output and the nodes its grad_fn chain holds are left
    assert sorted(alive) == sorted(["tensor", "array"] +
                                   [k for k, _ in track.refs if k.endswith("Backward0")])
    del out
    assert track.alive() == []
    assert g.shape == (4, 3)


def test_retain_graph_keeps_saved_tensors_until_the_output_goes(nogc):
    """The control: with retain_graph the saved tensors do stay alive, so the
    checks above can see a live reference."""
    track = Tracker()
    w = tp.randn(4, 3, dtype=tp.float64, requires_grad=True)
    out = _mlp(track, w, tp.randn(5, 4, dtype=tp.float64))
    tp.autograd.grad(out, w, retain_graph=True)
    alive = track.alive()
    # a (saved by the mul that uses it) and the output; the arrays of a and e
    # (tanh and exp save their outputs' data) and of the output
    assert alive.count("tensor") == 2 and alive.count("array") == 3
    del out
    assert track.alive() == []


def test_backward_into_leaf_grad_frees_the_graph(nogc):
    track = Tracker()
    w = tp.randn(4, 3, dtype=tp.float64, requires_grad=True)
    _mlp(track, w, tp.randn(5, 4, dtype=tp.float64)).backward()
    assert track.alive() == []
    assert w.grad is not None and w.grad.grad_fn is None


# ---------------------------------------------------------------- forward mode
@pytest.mark.parametrize("mode", ["forward", "reversed"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_jvp_frees_everything_once_results_are_dropped(nogc, mode, create_graph):
    track = Tracker()
    w = tp.randn(4, 3, dtype=tp.float64)
    x = tp.randn(5, 4, dtype=tp.float64, requires_grad=create_graph)
    v = tp.randn(5, 4, dtype=tp.float64)
    out, jv = jvp(lambda x: _mlp(track, w, x), x, v, mode=mode, create_graph=create_graph)
    assert jv.shape == ()
    assert (jv.grad_fn is not None) == create_graph
    if not create_graph:
        # the results are detached: nothing of the call is alive but the results
        assert all(k in ("tensor", "array") for k in track.alive())
    del out, jv
    assert track.alive() == []


def test_jvp_with_dual_parameters_inside_a_training_graph(nogc):
    """mode="forward" with create_graph, the parameters requiring grad: the JVP
    is part of a reverse graph (a loss on it), and a backward through it frees
    everything."""
    track = Tracker()
    w = tp.randn(4, 3, dtype=tp.float64, requires_grad=True)
    x = tp.randn(5, 4, dtype=tp.float64)
    v = tp.randn(5, 4, dtype=tp.float64)
    out, jv = jvp(lambda x: _mlp(track, w, x), x, v, mode="forward", create_graph=True)
    (gw,) = tp.autograd.grad(jv * jv, w)
    del out, jv
    assert track.alive() == []
    assert gw.shape == (4, 3)


def test_nested_grad_of_forward_jvp_then_second_grad(nogc):
    """grad of a forward-mode JVP with create_graph=True, then a second grad
    (third order overall): every intermediate of every pass is freed."""
    track = Tracker()
    w = tp.randn(4, 3, dtype=tp.float64)
    x = tp.randn(5, 4, dtype=tp.float64, requires_grad=True)
    v = tp.randn(5, 4, dtype=tp.float64)
    out, jv = jvp(lambda x: _mlp(track, w, x), x, v, mode="forward", create_graph=True)
    (g,) = tp.autograd.grad(jv, x, create_graph=True)
    track(g)
    (g2,) = tp.autograd.grad((g * g).sum(), x)
    del out, jv, g
    assert track.alive() == []
    # the value matches mode="reversed" (an independent route to the same number)
    _, jr = jvp(lambda x: _mlp(lambda *t: t[-1], w, x), x, v, mode="reversed",
                create_graph=True)
    (gr,) = tp.autograd.grad(jr, x, create_graph=True)
    (gr2,) = tp.autograd.grad((gr * gr).sum(), x)
    np.testing.assert_allclose(g2.numpy(), gr2.numpy(), rtol=1e-10, atol=1e-12)


def test_forward_over_reverse_inside_jvp_is_freed(nogc):
    """A function that calls autograd.grad itself (Hessian-vector product by
    forward-over-reverse) runs with a reverse graph inside the dual level."""
    track = Tracker()
    w = tp.randn(4, 3, dtype=tp.float64)

    def grad_f(x):
        (g,) = tp.autograd.grad(_mlp(track, w, x), x, create_graph=True)
        return track(g)
    x = tp.randn(5, 4, dtype=tp.float64)
    v = tp.randn(5, 4, dtype=tp.float64)
    out, hv = jvp(grad_f, x, v, mode="forward")
    out_rev, hv_rev = jvp(grad_f, x, v, mode="reversed")
    np.testing.assert_allclose(hv.numpy(), hv_rev.numpy(), rtol=1e-10, atol=1e-12)
    del out, hv, out_rev, hv_rev
    assert track.alive() == []


# ---------------------------------------------------------------- memory
N = 1_000_000


def _f(x):
    return (x.exp() * x).tanh()


def _hvp_like(x):
    (g,) = tp.autograd.grad((x.exp() * x).sum(), x, create_graph=True)
    return g


@pytest.mark.parametrize("func, kwargs", [
    (_f, {}), (_f, {"create_graph": True}), (_hvp_like, {})],
    ids=["plain", "create_graph", "grad_inside"])
def test_repeated_forward_jvp_on_1m_float64_does_not_grow_memory(nogc, func, kwargs):
    """The issue's report: 40 calls grew memory by 1.4 GB, through the cycle
    out -> grad_fn -> saved tangent -> its grad_fn -> out.  Each leaked call
    would keep at least one 8 MB array, so 12 calls after 2 warm-up calls must
    grow traced memory by less than one array (the tolerance: 8 MB; measured
    growth is a few kB)."""
    x = tp.randn(N, dtype=tp.float64)
    v = tp.randn(N, dtype=tp.float64)
    tracemalloc.start()
    try:
        for _ in range(2):
            jvp(func, x, v, mode="forward", **kwargs)
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(12):
            out, jv = jvp(func, x, v, mode="forward", **kwargs)
            del out, jv
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 8 * N, f"{grown / 1e6:.1f} MB more after 12 calls"


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
def test_ten_thousand_training_steps_keep_memory_flat(nogc):
    """10,000 SGD steps of a 64-32-10 tanh MLP (hand-written Linear layers, as in
    examples/train_digits.py) with the collector off.  Two measures after 500
    warm-up steps: the number of objects the collector tracks must not grow by
    more than 200 (one leaked Tensor or node per step would add 9,500), and RSS
    must not grow by more than 4 MB (one leaked batch activation, 64 x 32
    float32 = 8 kB, per step would add 78 MB; 4 MB leaves room for the
    allocator's own fluctuation)."""
    rng = np.random.default_rng(0)
    xs = tp.from_numpy(rng.standard_normal((640, 64)).astype(np.float32))
    ys = tp.from_numpy(rng.integers(0, 10, 640))
    params = [(tp.randn(64, 32) * 0.1).requires_grad_(), tp.zeros(32, requires_grad=True),
              (tp.randn(32, 10) * 0.1).requires_grad_(), tp.zeros(10, requires_grad=True)]

    def step(i):
        j = (i % 10) * 64
        xb, yb = xs[j:j + 64], ys[j:j + 64]
        w1, b1, w2, b2 = params
        loss = tp.nn.functional.cross_entropy((xb @ w1 + b1).tanh() @ w2 + b2, yb)
        grads = tp.autograd.grad(loss, params)
        with tp.no_grad():
            for p, g in zip(params, grads):
                p.sub_(g * 0.05)
        return loss.item()

    first = [step(i) for i in range(500)]
    objects, rss = len(gc.get_objects()), _rss_bytes()
    last = [step(i) for i in range(500, 10_000)]
    grown_objects = len(gc.get_objects()) - objects
    grown_rss = _rss_bytes() - rss
    assert grown_objects < 200, grown_objects
    assert grown_rss < 4 * 2 ** 20, f"RSS grew by {grown_rss / 2 ** 20:.1f} MB"
    assert np.mean(last[-100:]) < np.mean(first[:100])       # it did train


def test_leaving_a_dual_level_frees_the_cycles_its_graph_made(nogc):
    # forward mode used directly, with a reverse graph recorded: exp's and tanh's
    # JVPs read the output, so out -> tangent -> its node -> out is a cycle; the
    # level clears its tangents on exit (PyTorch's levels do the same)
    track = Tracker()
    w = tp.randn(4, 3, dtype=tp.float64, requires_grad=True)
    x = tp.randn(6, 4, dtype=tp.float64)
    with fwAD.dual_level():
        xd = fwAD.make_dual(x, tp.ones_like(x))
        loss = _mlp(track, w, xd)
        g, = tp.autograd.grad(loss, w, create_graph=True)    # reverse inside forward
        track(g)
        tangent = fwAD.unpack_dual(loss).tangent
        want = float(tangent)
        del loss, g, xd, tangent
    assert not track.alive()
    # the same numbers as reversed mode
    _, jv = jvp(lambda a: _mlp(lambda *t: t[-1], w.detach(), a), x, tp.ones_like(x),
                mode="reversed")
    assert want == pytest.approx(float(jv), rel=1e-12)
