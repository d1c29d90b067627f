"""``x[key] = v`` inside the autograd graph (issue 7: ``__setitem__`` in place and
differentiable): gradients for the old values and for ``v`` against the same
computation written out of place (``where`` / ``index_put``) and against torch."""
import numpy as np
import pytest

import tensorplay as tp

KEYS = [lambda M: 1, lambda M: (slice(0, 2), 1), lambda M: (Ellipsis, slice(1, None)),
        lambda M: M.tensor([2, 0]), lambda M: (M.tensor([0, 2]), M.tensor([1, 3])),
        lambda M: M.tensor([[True, False, True, False]] * 3),
        lambda M: (slice(None), [0, 3])]


def _run(M, key_fn, a, b):
    w = M.tensor(a, requires_grad=True)
    v = M.tensor(b, requires_grad=True)
    x = w * 2.0                                    # a non-leaf
    key = key_fn(M)
    target = x[key]
    x[key] = v.reshape(-1)[:target.numel()].reshape(target.shape) * 3.0
    y = (x * x).sum() + x.sum()
    gw, gv = M.autograd.grad(y, [w, v])
    return x.detach().numpy(), gw.numpy(), gv.numpy()


@pytest.mark.parametrize("k", range(len(KEYS)))
def test_setitem_gradients_match_torch(k):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(k)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal(12)
    for mine, theirs in zip(_run(tp, KEYS[k], a, b), _run(torch, KEYS[k], a, b)):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-12)


def test_setitem_gradient_matches_the_out_of_place_form():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4))
    mask = a > 0
    w = tp.tensor(a, requires_grad=True)
    x = w * w                      # (exp would save its output: writing into it must raise)
    x[tp.tensor(mask)] = 0.5
    (g1,) = tp.autograd.grad((x * x).sum(), [w])
    w2 = tp.tensor(a, requires_grad=True)
    x2 = tp.where(tp.tensor(mask), tp.full((3, 4), 0.5, dtype=tp.float64), w2 * w2)
    (g2,) = tp.autograd.grad((x2 * x2).sum(), [w2])
    np.testing.assert_array_equal(g1.numpy(), g2.numpy())


def test_setitem_forward_mode_and_leaf_rules():
    from tensorplay.autograd import forward_ad
    with forward_ad.dual_level():
        v = forward_ad.make_dual(tp.tensor([1.0, 2.0]), tp.tensor([10.0, 20.0]))
        z = tp.zeros(4)
        z[tp.tensor([3, 1])] = v
        np.testing.assert_array_equal(z.numpy(), [0, 2, 0, 1])
        np.testing.assert_array_equal(forward_ad.unpack_dual(z).tangent.numpy(),
                                      [0, 20, 0, 10])
    leaf = tp.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf[0] = 2.0
    with tp.no_grad():
        leaf[0] = 2.0                              # optimiser-style update
    assert leaf.tolist() == [2.0, 1.0, 1.0] and leaf.requires_grad
    x = leaf * 1.0
    v0 = x._version[0]
    x[1:] = 0.0
    assert x._version[0] > v0 and x.grad_fn is not None


def test_a_tensor_saved_for_backward_then_assigned_into_raises():
    w = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = w * 1.0
    y = x.exp()                                    # saves its output
    y[0] = 0.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        tp.autograd.grad(y.sum(), [w])


def test_in_place_through_a_view_of_a_dual_keeps_the_other_tangents():
    # (found by the fresh-user check: the dual's primal was taken as the root)
    torch = pytest.importorskip("torch")
    import torch.autograd.forward_ad as tfw
    from tensorplay.autograd import forward_ad as fw
    a, t = [1.0, 2.0, 3.0, 4.0], [1.0, 0.5, 0.25, 2.0]
    cases = [lambda x: x[0:2].add_(1.0), lambda x: x.__setitem__(0, 5.0),
             lambda x: x.view(2, 2).t()[0].mul_(2.0)]
    for case in cases:
        results = []
        for M, F in ((tp, fw), (torch, tfw)):
            with F.dual_level():
                x = F.make_dual(M.tensor(a), M.tensor(t))
                case(x)
                p, tan = F.unpack_dual(x)
                results.append((p.numpy().copy(), tan.numpy().copy()))
        for mine, theirs in zip(*results):
            np.testing.assert_array_equal(mine, theirs)
