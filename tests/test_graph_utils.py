"""autograd.graph.register_multi_grad_hook and disable_saved_tensors_hooks,
against closed-form gradients and PyTorch's documented behaviour."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay import autograd
from tensorplay.autograd.graph import (disable_saved_tensors_hooks, register_multi_grad_hook,
                                       saved_tensors_hooks)


def leaves(n):
    return [tp.tensor(np.arange(2.0) + k, dtype=tp.float64, requires_grad=True)
            for k in range(n)]


def values(gs):
    return [None if g is None else g.numpy().tolist() for g in gs]


def test_all_mode_once_per_pass_with_none_for_unreached():
    a, b, c = leaves(3)
    seen = []
    handle = register_multi_grad_hook((a, b, c), lambda gs: seen.append(values(gs)))
    (a * 2 + b * b).sum().backward()                 # d/da = 2, d/db = 2 b
    assert seen == [[[2.0, 2.0], [2.0, 4.0], None]]
    autograd.grad((c * 3).sum(), c)                  # a second pass, via grad
    assert seen[1] == [None, None, [3.0, 3.0]]
    (a + 1).sum().backward(inputs=[a])
    assert seen[2] == [[1.0, 1.0], None, None]
    handle.remove()
    handle.remove()                                  # idempotent
    (a * b).sum().backward()
    assert len(seen) == 3
    # a pass that reaches none of them calls nothing
    with register_multi_grad_hook((c,), lambda gs: seen.append(gs)):
        (a * 5).sum().backward()
    assert len(seen) == 3


def test_all_mode_on_non_leaves_sees_their_gradients():
    a, = leaves(1)
    u, v = a * 3, a.exp()
    got = []
    register_multi_grad_hook((u, v), lambda gs: got.append(values(gs)))
    (u * u + v).sum().backward()                     # d/du = 2 u, d/dv = 1
    np.testing.assert_allclose(got[0][0], 2 * 3 * np.arange(2.0))
    np.testing.assert_allclose(got[0][1], [1.0, 1.0])


def test_any_mode_fires_once_per_pass_with_the_first_gradient():
    a, b = leaves(2)
    got = []
    register_multi_grad_hook((a, b), lambda g: got.append(g.numpy().tolist()), mode="any")
    (a * 2 + b * 3).sum().backward()
    assert len(got) == 1 and got[0] in ([2.0, 2.0], [3.0, 3.0])
    (b * 4).sum().backward()
    assert got[1] == [4.0, 4.0]


def test_nested_backward_inside_a_hook_is_its_own_pass():
    a, b = leaves(2)
    outer = []

    def inner_pass(gs):
        outer.append(values(gs))

    register_multi_grad_hook((a,), inner_pass)

    def b_hook(g):        # runs a whole backward of its own while the outer one runs
        with tp.enable_grad():
            (a * 7).sum().backward()
    b.register_hook(b_hook)
    (a * 2 + b).sum().backward()
    # the inner pass reports a's gradient from it (7), the outer one a's own (2)
    assert outer[0] == [[7.0, 7.0]]
    assert outer[1] == [[2.0, 2.0]]


def test_multi_grad_hook_errors():
    a, = leaves(1)
    with pytest.raises(ValueError, match="mode"):
        register_multi_grad_hook((a,), lambda gs: None, mode="some")
    with pytest.raises(TypeError, match="callable"):
        register_multi_grad_hook((a,), 3)
    with pytest.raises(TypeError, match=r"tensors\[1\] must be a Tensor"):
        register_multi_grad_hook((a, 2.0), lambda gs: None)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        register_multi_grad_hook((a, tp.ones(2)), lambda gs: None)
    # the failed registration left no hook behind on a
    assert not a._hooks or not a._hooks.pre


def test_multi_grad_hook_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.autograd.graph import register_multi_grad_hook as t_register
    results = []
    for lib, register in ((tp, register_multi_grad_hook), (torch, t_register)):
        a, b, c = (lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
                   for _ in range(3))
        got = []
        register((a, b, c), lambda gs: got.append(
            [None if g is None else g.detach().numpy().tolist() for g in gs]))
        (a * b + b.exp()).sum().backward()
        results.append(got)
    assert len(results[0]) == len(results[1]) == 1
    for mine, theirs in zip(results[0][0], results[1][0]):
        if theirs is None:
            assert mine is None
        else:
            np.testing.assert_allclose(mine, theirs, rtol=1e-15)


def test_disable_saved_tensors_hooks():
    def ident(t):
        return t
    with disable_saved_tensors_hooks("no saved-tensor hooks in here"):
        with pytest.raises(RuntimeError, match="no saved-tensor hooks in here"):
            with saved_tensors_hooks(ident, ident):
                pass
        with disable_saved_tensors_hooks("inner"):
            with pytest.raises(RuntimeError, match="inner"):
                saved_tensors_hooks(ident, ident).__enter__()
        with pytest.raises(RuntimeError, match="no saved-tensor hooks in here"):
            saved_tensors_hooks(ident, ident).__enter__()
    with saved_tensors_hooks(ident, ident):          # allowed again after it
        with pytest.raises(RuntimeError, match="while active"):
            with disable_saved_tensors_hooks("while active"):
                pass
    x = tp.tensor([1.0, 2.0], dtype=tp.float64, requires_grad=True)

    @disable_saved_tensors_hooks("decorated")
    def f(t):
        with saved_tensors_hooks(ident, ident):
            return (t * t).sum()
    with pytest.raises(RuntimeError, match="decorated"):
        f(x)
    # the graph works as usual inside the context (only hooks are refused)
    with disable_saved_tensors_hooks("m"):
        g, = autograd.grad((x * x).sum(), x)
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])
