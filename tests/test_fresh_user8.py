"""Second fresh-user pass over the issue-8 autograd toolbox (ported PyTorch
scripts, hostile inputs): each test is a bug that pass found, checked against a
torch-free reference (a closed form or float64 finite differences) and, where
PyTorch is installed, against torch 2.13."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay.autograd import functional as F


def _fd_hvp(f, x, v, eps=1e-6):
    """H v by central differences of the closed-form gradient ``f``."""
    return (f(x + eps * v) - f(x - eps * v)) / (2 * eps)


# ------------------------------------------------- hvp through a backward-only Function
# functional.hvp goes forward-over-reverse, so a custom Function with a backward
# but no jvp made it raise "You must implement the jvp function" -- PyTorch's
# hvp (double backward) needs only the backward.  It now falls back to
# reverse-over-reverse for such a Function; forward mode proper still raises.
def _cube_fn(lib):
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 3 * x ** 2 * g
    return Cube


@pytest.mark.parametrize("create_graph", [False, True])
def test_hvp_through_function_without_jvp(create_graph):
    Cube = _cube_fn(tp)
    xn = np.array([0.5, -1.0, 2.0])
    vn = np.array([1.0, 0.25, -3.0])
    x, v = tp.tensor(xn), tp.tensor(vn)
    out, hv = F.hvp(lambda z: (Cube.apply(z) * z).sum(), x, v, create_graph=create_graph)
    np.testing.assert_allclose(out.detach().numpy(), (xn ** 4).sum(), rtol=1e-14)
    # f = sum x^4: H = diag(12 x^2)
    np.testing.assert_allclose(hv.detach().numpy(), 12 * xn ** 2 * vn, rtol=1e-13)
    np.testing.assert_allclose(hv.detach().numpy(), _fd_hvp(lambda z: 4 * z ** 3, xn, vn),
                               rtol=1e-7)
    assert hv.requires_grad == create_graph
    # tuple inputs keep their nesting through the fallback
    out2, (h1, h2) = F.hvp(lambda a, b: (Cube.apply(a) * b).sum(), (x, x), (v, v))
    np.testing.assert_allclose(h1.numpy(), 6 * xn * xn * vn + 3 * xn ** 2 * vn, rtol=1e-13)
    np.testing.assert_allclose(h2.numpy(), 3 * xn ** 2 * vn, rtol=1e-13)
    # forward mode proper still refuses, with PyTorch's exception type
    with pytest.raises(NotImplementedError, match="jvp"):
        F.jvp(Cube.apply, x, v, mode="forward")


def test_hvp_through_function_without_jvp_strict():
    Cube = _cube_fn(tp)
    x = tp.tensor([0.5, -1.0])
    with pytest.raises(RuntimeError, match="independent of input 1"):
        F.hvp(lambda a, b: Cube.apply(a).sum(), (x, x), (x, x), strict=True)


def test_hvp_through_function_without_jvp_matches_torch():
    torch = pytest.importorskip("torch")
    xn = np.array([0.5, -1.0, 2.0])
    vn = np.array([1.0, 0.25, -3.0])
    P, T = _cube_fn(tp), _cube_fn(torch)
    _, got = F.hvp(lambda z: (P.apply(z) * z.sin()).sum(), tp.tensor(xn), tp.tensor(vn))
    _, want = torch.autograd.functional.hvp(lambda z: (T.apply(z) * z.sin()).sum(),
                                            torch.tensor(xn), torch.tensor(vn))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-13)


# ------------------------------------------------------------ AccumulateGrad node hooks
# ``p.grad_fn.next_functions[0][0]`` of a leaf is its AccumulateGrad node, and
# hooking it (``register_hook`` / ``register_prehook``) is the old DDP / Horovod
# way to run code when a parameter's gradient is ready.  tensorplay's
# AccumulateGrad had no hook methods (AttributeError).  Order, as PyTorch's:
# tensor hooks, node pre-hooks, accumulation, post-accumulate-grad hooks, node
# post-hooks; none of them in autograd.grad (nothing is accumulated).
def _acc_hook_log(lib, dtype):
    x = lib.tensor([1.0, -2.0, 0.5], dtype=dtype, requires_grad=True)
    log = []
    acc = (x * 2).grad_fn.next_functions[0][0]
    assert acc.name().endswith("AccumulateGrad")
    x.register_hook(lambda g: log.append(("tensor", g.tolist())) or g + 1)
    pre = acc.register_prehook(lambda go: log.append(("pre", go[0].tolist())) or (go[0] * 10,))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("post_acc", t.grad.tolist())))
    # a second read of the node: the same node for hooks
    (x * 3).grad_fn.next_functions[0][0].register_hook(
        lambda gi, go: log.append(("post", len(gi), go[0].tolist(), x.grad.tolist())))
    (x * x).sum().backward()
    first = x.grad.tolist()
    lib.autograd.grad((x * x).sum(), x)            # node hooks do not run here
    pre.remove()
    x.grad = None
    (x * x).sum().backward()
    return log, first, x.grad.tolist()


def test_accumulate_grad_node_hooks():
    log, first, second = _acc_hook_log(tp, tp.float64)
    g = [2.0, -4.0, 1.0]                           # d(x.x)/dx = 2x
    g1 = [v + 1 for v in g]                        # after the tensor hook
    g10 = [10 * v for v in g1]                     # after the node pre-hook
    assert log == [("tensor", g), ("pre", g1), ("post_acc", g10), ("post", 0, g10, g10),
                   ("tensor", g),                  # autograd.grad: tensor hook only
                   ("tensor", g), ("post_acc", g1), ("post", 0, g1, g1)]
    assert first == g10 and second == g1


def test_accumulate_grad_prehook_checks_and_drop():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    acc = (x * 1).grad_fn.next_functions[0][0]
    h = acc.register_prehook(lambda go: (None,))       # drop: nothing accumulated
    (x * 3).sum().backward()
    assert x.grad is None
    h.remove()
    acc.register_prehook(lambda go: (go[0][:1],))
    with pytest.raises(RuntimeError, match="changed the size"):
        (x * 3).sum().backward()
    with pytest.raises(TypeError):
        acc.register_hook(3)


def test_accumulate_grad_node_hooks_match_torch():
    torch = pytest.importorskip("torch")
    assert _acc_hook_log(tp, tp.float64) == _acc_hook_log(torch, torch.float64)
