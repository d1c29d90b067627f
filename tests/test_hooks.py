"""Tensor and node hooks, retain_grad, post-accumulate-grad hooks and saved-tensor
hooks, against closed-form gradients (and torch's call order when installed).

PyTorch's order, which these tests pin down: a tensor's hooks (in registration
order, each seeing the previous one's replacement), then ``retain_grad``, then --
only when the node runs -- the node's pre-hooks, its VJP, its post-hooks; for a
leaf, its hooks, then the accumulation into ``.grad``, then its
post-accumulate-grad hooks.
"""
import threading

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import autograd
from tensorplay.autograd.graph import save_on_cpu, saved_tensors_hooks
from tensorplay.utils.hooks import RemovableHandle

F64 = tp.float64


def leaf(values):
    return tp.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def npy(t):
    return t.detach().numpy()


def _chain(log):
    """x = 2; y = 3x; z = sum(y*y), with every kind of hook logging what it sees.

    dz/dy = 2y = 12; the second tensor hook scales it by 10 (120, what retain_grad
    keeps), the pre-hook doubles it (240), so dz/dx = 3 * 240 = 720."""
    x = leaf([2.0])
    y = x * leaf([3.0]).detach()
    y.register_hook(lambda g: log.append(("y_tensor", g.item())))
    y.retain_grad()
    y.register_hook(lambda g: (log.append(("y_tensor2", g.item())), g * 10)[1])
    y.grad_fn.register_prehook(lambda go: (log.append(("y_pre", go[0].item())),
                                           (go[0] * 2,))[1])
    y.grad_fn.register_hook(lambda gi, go: log.append(("y_post", gi[0].item(),
                                                       go[0].item())))
    x.register_hook(lambda g: log.append(("x_tensor", g.item())))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("x_postacc", t.grad.item())))
    z = (y * y).sum()
    return x, y, z


BACKWARD_LOG = [("y_tensor", 12.0), ("y_tensor2", 12.0), ("y_pre", 120.0),
                ("y_post", 720.0, 240.0), ("x_tensor", 720.0), ("x_postacc", 720.0)]


def test_hook_order_and_replacements_backward():
    log = []
    x, y, z = _chain(log)
    z.backward(retain_graph=True)
    assert log == BACKWARD_LOG
    assert x.grad.item() == 720.0 and y.grad.item() == 120.0
    # a second pass: retain_grad and .grad accumulate
    log.clear()
    z.backward()
    assert log == BACKWARD_LOG[:-1] + [("x_postacc", 1440.0)]
    assert x.grad.item() == 1440.0 and y.grad.item() == 240.0


def test_hooks_in_grad():
    log = []
    x, y, z = _chain(log)
    gx, = autograd.grad(z, x, retain_graph=True)
    assert gx.item() == 720.0
    assert log == BACKWARD_LOG[:-1]             # grad() accumulates nothing: no post-acc
    assert x.grad is None and y.grad.item() == 120.0    # retain_grad fires (PyTorch)
    # the pass stops at y: y's tensor hooks and retain_grad run, its node does not
    log.clear()
    gy, = autograd.grad(z, y, retain_graph=True)
    assert gy.item() == 120.0
    assert log == BACKWARD_LOG[:2]
    assert y.grad.item() == 240.0
    # both: y's value is after its tensor hooks here too (PyTorch gives the value
    # before them when y's node also runs; see docs/DECISIONS.md)
    log.clear()
    gy, gx = autograd.grad(z, [y, x])
    assert (gy.item(), gx.item()) == (120.0, 720.0)
    assert log == BACKWARD_LOG[:-1]


def test_hook_order_matches_torch():
    torch = pytest.importorskip("torch")
    log_t = []
    x = torch.tensor([2.0], dtype=torch.float64, requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: log_t.append(("y_tensor", g.item())))
    y.retain_grad()
    y.register_hook(lambda g: (log_t.append(("y_tensor2", g.item())), g * 10)[1])
    y.grad_fn.register_prehook(lambda go: (log_t.append(("y_pre", go[0].item())),
                                           (go[0] * 2,))[1])
    y.grad_fn.register_hook(lambda gi, go: log_t.append(("y_post", gi[0].item(),
                                                         go[0].item())))
    x.register_hook(lambda g: log_t.append(("x_tensor", g.item())))
    x.register_post_accumulate_grad_hook(lambda t: log_t.append(("x_postacc",
                                                                 t.grad.item())))
    (y * y).sum().backward()
    log = []
    _chain(log)[2].backward()
    assert log == log_t


def test_leaf_hook_replaces_gradient_in_grad_and_backward():
    x = leaf([1.0, 2.0])
    y = x * x                      # dy/dx = 2x
    calls = []
    h = x.register_hook(lambda g: (calls.append(npy(g).copy()), g * 100)[1])
    gx, = autograd.grad(y.sum(), x, retain_graph=True)
    np.testing.assert_allclose(npy(gx), 200 * np.array([1.0, 2.0]))
    y.sum().backward(retain_graph=True)
    np.testing.assert_allclose(npy(x.grad), 200 * np.array([1.0, 2.0]))
    assert len(calls) == 2
    np.testing.assert_allclose(calls[0], [2.0, 4.0])
    h.remove()
    x.grad = None
    y.sum().backward()
    np.testing.assert_allclose(npy(x.grad), [2.0, 4.0])
    assert len(calls) == 2


def test_hook_sees_summed_gradient_once():
    x = leaf([1.5])
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.item()))
    z = y * 3 + y * y              # dz/dy = 3 + 2y = 9
    z.sum().backward()
    assert seen == [9.0]
    assert x.grad.item() == 18.0


def test_hook_registered_before_inplace_sees_old_value_gradient():
    x = leaf([1.0, 2.0])
    y = x * 2
    before, after = [], []
    y.register_hook(lambda g: before.append(npy(g).copy()))
    y.mul_(3)                      # y_new = 3 y_old
    y.register_hook(lambda g: after.append(npy(g).copy()))
    y.sum().backward()
    np.testing.assert_allclose(before[0], [3.0, 3.0])     # d sum / d y_old
    np.testing.assert_allclose(after[0], [1.0, 1.0])      # d sum / d y_new
    np.testing.assert_allclose(npy(x.grad), [6.0, 6.0])


def test_hook_not_called_off_the_path():
    a, b = leaf([1.0]), leaf([2.0])
    y = a * 2
    called = []
    y.register_hook(lambda g: called.append(1))
    u = b * 3
    autograd.grad(u.sum() + y.sum(), b)        # y's branch leads nowhere wanted
    assert called == []


def test_hooks_with_create_graph():
    # y = x**2, hook g -> g * x: dy/dx reported as 2x * x = 2x^2, whose derivative
    # is 4x (the hook's own op is recorded under create_graph)
    x = tp.tensor(3.0, dtype=F64, requires_grad=True)
    y = x ** 2
    y.register_hook(lambda g: g * x)
    g, = autograd.grad(y, x, create_graph=True)
    assert g.item() == pytest.approx(18.0)
    g2, = autograd.grad(g, x)
    assert g2.item() == pytest.approx(12.0)


def test_node_hooks_replace_and_drop():
    x = leaf([1.0, -2.0])
    y = x.exp()                    # d/dx = exp(x)
    h = y.grad_fn.register_prehook(lambda go: (go[0] * 5,))
    y.sum().backward(retain_graph=True)
    np.testing.assert_allclose(npy(x.grad), 5 * np.exp([1.0, -2.0]))
    h.remove()
    x.grad = None
    h = y.grad_fn.register_hook(lambda gi, go: (gi[0] + 1,))
    y.sum().backward(retain_graph=True)
    np.testing.assert_allclose(npy(x.grad), np.exp([1.0, -2.0]) + 1)
    h.remove()
    x.grad = None
    with y.grad_fn.register_hook(lambda gi, go: (None,)):     # drop the gradient
        y.sum().backward(retain_graph=True)
    assert x.grad is None
    y.sum().backward()             # the context manager removed it
    np.testing.assert_allclose(npy(x.grad), np.exp([1.0, -2.0]))


def test_node_hooks_run_in_registration_order():
    x = leaf([1.0])
    y = x * 2
    order = []
    y.grad_fn.register_prehook(lambda go: (order.append("a"), (go[0] + 1,))[1])
    y.grad_fn.register_prehook(lambda go: (order.append(("b", go[0].item())), None)[1])
    y.sum().backward()
    assert order == ["a", ("b", 2.0)]
    assert x.grad.item() == 4.0


def test_post_accumulate_grad_hook():
    w = leaf([1.0, 2.0])
    seen = []

    def step(t):                   # an optimiser step per parameter (PyTorch's use)
        seen.append(npy(t.grad).copy())
        with tp.no_grad():
            t.sub_(0.5 * t.grad)
        t.grad = None

    h = w.register_post_accumulate_grad_hook(step)
    (w * w).sum().backward()       # grad 2w
    np.testing.assert_allclose(seen[0], [2.0, 4.0])
    np.testing.assert_allclose(npy(w), [0.0, 0.0])
    assert w.grad is None
    autograd.grad((w * w).sum(), w)            # grad() does not accumulate
    assert len(seen) == 1
    h.remove()
    (w * 3).sum().backward()
    assert len(seen) == 1 and npy(w.grad).tolist() == [3.0, 3.0]


def test_retain_grad():
    x = leaf([1.0, 2.0])
    assert not x.retains_grad
    x.retain_grad()                # leaves: no-op
    assert not x.retains_grad
    y = x * x
    z = y.exp()
    assert not y.retains_grad
    y.retain_grad()
    y.retain_grad()                # idempotent
    assert y.retains_grad
    z.sum().backward(retain_graph=True)
    np.testing.assert_allclose(npy(y.grad), np.exp([1.0, 4.0]))      # dz/dy = exp(y)
    np.testing.assert_allclose(npy(x.grad), 2 * np.array([1.0, 2.0]) * np.exp([1.0, 4.0]))
    assert z.grad is None
    z.sum().backward()
    np.testing.assert_allclose(npy(y.grad), 2 * np.exp([1.0, 4.0]))
    assert not y.grad.requires_grad


def test_retain_grad_create_graph():
    x = leaf([3.0])
    y = x * x
    y.retain_grad()
    (y * y).sum().backward(create_graph=True)  # dz/dy = 2y, recorded
    assert y.grad.item() == 18.0 and y.grad.requires_grad
    gx, = autograd.grad(y.grad.sum(), x)       # d(2x^2)/dx = 4x
    assert gx.item() == pytest.approx(12.0)


def test_handles():
    x = leaf([1.0])
    y = x * 2
    calls = []
    h1 = y.register_hook(lambda g: calls.append(1))
    h2 = y.register_hook(lambda g: calls.append(2))
    assert isinstance(h1, RemovableHandle) and h1.id != h2.id
    h1.remove()
    h1.remove()                    # idempotent
    y.sum().backward()
    assert calls == [2]


@pytest.mark.parametrize("bad, exc, match", [
    (lambda g: g[:1], RuntimeError, "has changed the size of value"),
    (lambda g: g.to(tp.float32), RuntimeError, "has changed the type of value"),
    (lambda g: 3, TypeError, "returned a int"),
])
def test_tensor_hook_bad_returns(bad, exc, match):
    x = leaf([1.0, 2.0])
    y = x * 2
    y.register_hook(bad)
    with pytest.raises(exc, match=match):
        y.sum().backward()


def test_node_hook_bad_returns():
    x = leaf([1.0, 2.0])
    y = x.exp()
    with y.grad_fn.register_prehook(lambda go: (go[0], go[0])):
        with pytest.raises(RuntimeError, match=r"incorrect number of values \(got 2, but "
                                               r"expected 1\)"):
            y.sum().backward(retain_graph=True)
    with y.grad_fn.register_prehook(lambda go: go[0]):
        with pytest.raises(TypeError, match="expected None or a tuple"):
            y.sum().backward(retain_graph=True)
    with y.grad_fn.register_hook(lambda gi, go: (gi[0], gi[0])):
        with pytest.raises(RuntimeError, match="incorrect number of values"):
            y.sum().backward(retain_graph=True)
    with y.grad_fn.register_hook(lambda gi, go: ("a",)):
        with pytest.raises(TypeError, match="entries must be Tensors or None"):
            y.sum().backward(retain_graph=True)


def test_registration_errors():
    t = tp.ones(2)
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that "
                                           "doesn't require gradient"):
        t.register_hook(lambda g: g)
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has "
                                           "requires_grad=False"):
        t.retain_grad()
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        t.register_post_accumulate_grad_hook(lambda t: None)
    x = leaf([1.0])
    with pytest.raises(RuntimeError, match="cannot be registered on non-leaf tensors"):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(TypeError, match="must be callable"):
        x.register_hook(5)
    with pytest.raises(TypeError, match="must be callable"):
        (x * 2).grad_fn.register_prehook(None)
    h = x.register_post_accumulate_grad_hook(lambda t: 1)
    with pytest.raises(TypeError, match="must return None"):
        (x * 2).sum().backward()
    h.remove()


def test_hooks_cost_nothing_when_unused():
    x = leaf([1.0])
    y = (x * 2).exp()
    assert y.grad_fn.hooks is None and x._hooks is None


# ------------------------------------------------------------ saved-tensor hooks
class Counting:
    def __init__(self, copy=True):
        self.packed = 0
        self.unpacked = 0
        self.copy = copy

    def pack(self, t):
        self.packed += 1
        return ("box", t.detach().clone() if self.copy else t.detach())

    def unpack(self, box):
        self.unpacked += 1
        assert box[0] == "box"
        return box[1]


def test_saved_tensor_hooks_counts_and_values():
    x, y = leaf([0.5, -1.0]), leaf([2.0, 3.0])
    c = Counting()
    with saved_tensors_hooks(c.pack, c.unpack):
        z = (x * y).exp().sum()    # mul saves x and y, exp its output: 3 tensors
    assert c.packed == 3 and c.unpacked == 0
    assert z.grad_fn.hooks is None                 # sum saves nothing
    gx, gy = autograd.grad(z, [x, y], retain_graph=True)
    assert c.unpacked == 3
    e = np.exp(np.array([0.5, -1.0]) * np.array([2.0, 3.0]))
    np.testing.assert_allclose(npy(gx), np.array([2.0, 3.0]) * e)
    np.testing.assert_allclose(npy(gy), np.array([0.5, -1.0]) * e)
    z.backward()                   # unpacked again, per pass
    assert c.unpacked == 6
    np.testing.assert_allclose(npy(x.grad), npy(gx))
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.backward()
    # outside the context nothing is packed
    (x * y).exp().sum().backward()
    assert c.packed == 3


def test_saved_tensor_hooks_torch_counts():
    torch = pytest.importorskip("torch")
    counts = {"p": 0, "u": 0}

    def pack(t):
        counts["p"] += 1
        return t

    def unpack(t):
        counts["u"] += 1
        return t

    xt = torch.tensor([0.5, -1.0], requires_grad=True)
    yt = torch.tensor([2.0, 3.0], requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        (xt * yt).exp().sum().backward()
    c = Counting()
    x, y = leaf([0.5, -1.0]), leaf([2.0, 3.0])
    with saved_tensors_hooks(c.pack, c.unpack):
        (x * y).exp().sum().backward()
    assert (c.packed, c.unpacked) == (counts["p"], counts["u"])


def test_saved_tensor_hooks_version_check():
    x = leaf([1.0, 2.0])
    c = Counting()
    a = x * 1.0
    with saved_tensors_hooks(c.pack, c.unpack):
        z = (a * a).sum()
    with tp.no_grad():
        a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_saved_tensor_hooks_double_backward_through_leaf():
    x = leaf([1.0, 2.0])
    c = Counting()
    with saved_tensors_hooks(c.pack, c.unpack):
        f = (x * x * x).sum()
    g, = autograd.grad(f, x, create_graph=True)    # 3x^2
    np.testing.assert_allclose(npy(g), [3.0, 12.0])
    h, = autograd.grad(g.sum(), x)                  # 6x
    np.testing.assert_allclose(npy(h), [6.0, 12.0])


def test_saved_tensor_hooks_inplace_op_with_sharing_pack():
    # x.mul_(y) saves the old x for y's gradient; a pack hook that keeps only a
    # detached view of that memory must still see the old values
    y = leaf([2.0, 3.0])
    base = leaf([1.0, 4.0])
    c = Counting(copy=False)
    with saved_tensors_hooks(c.pack, c.unpack):
        a = base * 1.0
        a.mul_(y)
    a.sum().backward()
    np.testing.assert_allclose(npy(y.grad), [1.0, 4.0])
    np.testing.assert_allclose(npy(base.grad), [2.0, 3.0])


def test_saved_tensor_hooks_nesting_and_errors():
    x = leaf([1.0])
    outer, inner = Counting(), Counting()
    with saved_tensors_hooks(outer.pack, outer.unpack):
        with saved_tensors_hooks(inner.pack, inner.unpack):
            x.exp()
        x.exp()
    assert (outer.packed, inner.packed) == (1, 1)
    with pytest.raises(TypeError, match="pack_hook must be callable"):
        saved_tensors_hooks(None, lambda p: p)

    def bad_pack(t):
        with tp.no_grad():
            t.add_(1)
        return t

    b = leaf([1.0])
    with saved_tensors_hooks(bad_pack, lambda p: p):
        with pytest.raises(RuntimeError, match="pack hook is modifying its input in place"):
            b * b
    with saved_tensors_hooks(lambda t: 0, lambda p: p):
        z = x.exp().sum()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor"):
        z.backward()


def test_saved_tensor_hooks_are_per_thread():
    x = leaf([1.0])
    c = Counting()
    done = []

    def other():
        x.exp()
        done.append(True)

    with saved_tensors_hooks(c.pack, c.unpack):
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert done and c.packed == 0


def test_save_on_cpu():
    x = leaf([0.3, 0.7])
    with save_on_cpu():
        z = (x.sin() * x).sum()    # d/dx = cos(x) x + sin(x)
    z.backward()
    v = np.array([0.3, 0.7])
    np.testing.assert_allclose(npy(x.grad), np.cos(v) * v + np.sin(v))


def test_retain_grad_follows_inplace():
    # PyTorch moves retain_grad to the new grad_fn: .grad is w.r.t. the new value
    x = leaf([1.0, 2.0])
    y = x * 2
    y.retain_grad()
    y.mul_(3)
    assert y.retains_grad
    (y * y).sum().backward()       # d/dy_new = 2 y_new = 12x
    np.testing.assert_allclose(npy(y.grad), [12.0, 24.0])
    np.testing.assert_allclose(npy(x.grad), [72.0, 144.0])


def test_hook_before_inplace_through_view():
    x = leaf([1.0, 2.0])
    y = x * 1
    seen = []
    y.register_hook(lambda g: seen.append(npy(g).copy()))
    y[0].mul_(5)
    y.sum().backward()
    np.testing.assert_allclose(seen[0], [5.0, 1.0])       # d sum / d y_old (torch too)


def test_backward_inputs_non_leaf_retains_grad():
    x = leaf([1.0, 2.0])
    y = x * 2
    (y * y).sum().backward(inputs=[y], retain_graph=True)
    assert y.retains_grad                      # PyTorch's side effect
    np.testing.assert_allclose(npy(y.grad), [4.0, 8.0])
    assert x.grad is None
    (y * y).sum().backward()                   # later passes fill y.grad too
    np.testing.assert_allclose(npy(y.grad), [8.0, 16.0])
    np.testing.assert_allclose(npy(x.grad), [8.0, 16.0])


# ------------------------------------------------------------ custom Function nodes
class Split2(autograd.Function):
    """(2x, 3x^2): d/dx of <(g1, g2), out> = 2 g1 + 6x g2."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2, x * x * 3

    @staticmethod
    def backward(ctx, g1, g2):
        x, = ctx.saved_tensors
        return g1 * 2 + g2 * 6 * x


class Exp(autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        y, = ctx.saved_tensors
        return g * y


def test_hooks_on_custom_function_outputs_and_node():
    x = leaf([1.0, 2.0])
    a, b = Split2.apply(x)
    log = []
    b.register_hook(lambda g: (log.append(("b", npy(g).tolist())), g * 2)[1])
    a.retain_grad()
    b.retain_grad()
    node = a.grad_fn
    assert node is b.grad_fn
    node.register_prehook(lambda go: (log.append(("pre", [None if g is None else
                                                          npy(g).tolist() for g in go])),
                                      None)[1])
    node.register_hook(lambda gi, go: (log.append(("post", npy(gi[0]).tolist())),
                                       (gi[0] + 1,))[1])
    loss = (a * 5).sum() + (b * 1).sum()       # g1 = 5, g2 = 1 -> 2 by the hook
    loss.backward()
    v = np.array([1.0, 2.0])
    want = 2 * 5 + 6 * v * 2
    assert log == [("b", [1.0, 1.0]), ("pre", [[5.0, 5.0], [2.0, 2.0]]),
                   ("post", want.tolist())]
    np.testing.assert_allclose(npy(x.grad), want + 1)
    np.testing.assert_allclose(npy(a.grad), [5.0, 5.0])
    np.testing.assert_allclose(npy(b.grad), [2.0, 2.0])


def test_custom_function_output_without_gradient_prehook_sees_none():
    x = leaf([1.0])
    a, b = Split2.apply(x)
    seen = []
    a.grad_fn.register_prehook(lambda go: seen.append(tuple(g is None for g in go)))
    b.sum().backward()
    assert seen == [(True, False)]
    assert x.grad.item() == pytest.approx(6.0)


def test_gradient_edge_of_custom_function_output():
    from tensorplay.autograd.graph import get_gradient_edge
    x = leaf([1.0, 2.0])
    a, b = Split2.apply(x)
    e = get_gradient_edge(b)
    assert e.node is b.grad_fn and e.output_nr == 1
    loss = (a * b).sum()                       # d/db = a = 2x
    g, = autograd.grad(loss, e, retain_graph=True)
    np.testing.assert_allclose(npy(g), [2.0, 4.0])
    g, = autograd.grad(e, x, tp.ones(2, dtype=F64))            # d(3x^2)/dx = 6x
    np.testing.assert_allclose(npy(g), [6.0, 12.0])
    with pytest.raises(RuntimeError, match="has 2 outputs"):
        autograd.grad(loss, autograd.graph.GradientEdge(e.node, 2))


def test_saved_tensor_hooks_on_custom_function():
    x = leaf([0.5, 1.0])
    c = Counting()
    with saved_tensors_hooks(c.pack, c.unpack):
        y = Exp.apply(x)                       # saves its own output
        a, b = Split2.apply(x)                 # saves its input
    assert c.packed == 2
    (y.sum() + b.sum()).backward()
    assert c.unpacked == 2
    v = np.array([0.5, 1.0])
    np.testing.assert_allclose(npy(x.grad), np.exp(v) + 6 * v)
