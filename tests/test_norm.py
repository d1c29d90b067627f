"""batch_norm, layer_norm, group_norm and normalize (issue 9): running statistics,
eval mode, accuracy, threads, second order and errors, beyond the op table
(tests/op_table/norm.py).  References: numpy closed forms, torch where installed."""
import numpy as np
import pytest

import tensorplay as tp

F = tp.nn.functional
RNG = np.random.default_rng(1)


def _t(a, dtype=tp.float64, grad=False):
    return tp.tensor(np.asarray(a), dtype=dtype, requires_grad=grad)


def _n(t):
    return t.detach().numpy()


def test_running_statistics_over_several_steps_closed_form():
    rm, rv = tp.zeros(3, dtype=tp.float64), tp.ones(3, dtype=tp.float64)
    want_m, want_v = np.zeros(3), np.ones(3)
    for step in range(4):
        x = RNG.standard_normal((5, 3, 2)) * (step + 1) + step
        F.batch_norm(_t(x), rm, rv, training=True, momentum=0.2)
        m = x.mean((0, 2))
        v = x.var((0, 2), ddof=1)                     # the unbiased variance
        want_m = 0.8 * want_m + 0.2 * m
        want_v = 0.8 * want_v + 0.2 * v
        np.testing.assert_allclose(_n(rm), want_m, rtol=1e-13)
        np.testing.assert_allclose(_n(rv), want_v, rtol=1e-13)
    x = RNG.standard_normal((4, 3, 2))
    got = F.batch_norm(_t(x), rm, rv, training=False)
    want = (x - want_m[:, None]) / np.sqrt(want_v[:, None] + 1e-5)
    np.testing.assert_allclose(_n(got), want, rtol=1e-12)
    np.testing.assert_allclose(_n(rm), want_m)          # eval leaves them alone


def test_batch_norm_training_and_eval_against_torch():
    torch = pytest.importorskip("torch")
    C = 4
    state = {"tp": (tp.zeros(C), tp.ones(C)), "torch": (torch.zeros(C), torch.ones(C))}
    w0, b0 = RNG.uniform(0.5, 1.5, C), RNG.standard_normal(C)
    for step in range(3):
        x = RNG.standard_normal((6, C, 3, 3)).astype(np.float32) * 2 + 1
        u = RNG.standard_normal(x.shape).astype(np.float32)
        outs = []
        for lib in ("tp", "torch"):
            L = tp if lib == "tp" else torch
            fn = F if lib == "tp" else torch.nn.functional
            xx = L.tensor(x, requires_grad=True)
            w = L.tensor(w0.astype(np.float32), requires_grad=True)
            b = L.tensor(b0.astype(np.float32), requires_grad=True)
            y = fn.batch_norm(xx, *state[lib], w, b, training=True, momentum=0.3, eps=1e-3)
            (y * L.tensor(u)).sum().backward()
            outs.append([y.detach().numpy(), xx.grad.numpy(), w.grad.numpy(), b.grad.numpy(),
                         state[lib][0].numpy().copy(), state[lib][1].numpy().copy()])
        for a, b in zip(*outs):
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)
    x = RNG.standard_normal((2, C, 3)).astype(np.float32)
    yp = F.batch_norm(tp.tensor(x), *state["tp"], tp.tensor(w0.astype(np.float32)),
                      None, training=False)
    yt = torch.nn.functional.batch_norm(torch.tensor(x), *state["torch"],
                                        torch.tensor(w0.astype(np.float32)), None)
    np.testing.assert_allclose(_n(yp), yt.numpy(), rtol=1e-5, atol=1e-6)


def test_eval_mode_gradients_reach_input_weight_and_bias():
    x = _t(RNG.standard_normal((4, 3)), grad=True)
    w = _t([1.0, 2.0, 3.0], grad=True)
    b = _t([0.0, 1.0, 0.0], grad=True)
    rm, rv = _t([0.5, 0.0, -1.0]), _t([1.0, 4.0, 0.25])
    F.batch_norm(x, rm, rv, w, b, training=False, eps=0.0).sum().backward()
    np.testing.assert_allclose(_n(x.grad), np.tile([1.0, 1.0, 6.0], (4, 1)), rtol=1e-12)
    np.testing.assert_allclose(_n(b.grad), [4.0] * 3)
    want_w = ((_n(x) - [0.5, 0.0, -1.0]) / np.sqrt([1.0, 4.0, 0.25])).sum(0)
    np.testing.assert_allclose(_n(w.grad), want_w, rtol=1e-12)


@pytest.mark.parametrize("shape,norm", [((5, 7), (7,)), ((2, 3, 4, 5), (4, 5)),
                                        ((3, 64), (64,))])
def test_layer_norm_against_torch(shape, norm):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal(shape)
    w, b = RNG.uniform(0.5, 1.5, norm), RNG.standard_normal(norm)
    u = RNG.standard_normal(shape)
    res = []
    for L, fn, mk in ((tp, F, _t), (torch, torch.nn.functional,
                                    lambda a, grad=False: torch.tensor(a, requires_grad=grad))):
        xs = [mk(x, grad=True), mk(w, grad=True), mk(b, grad=True)]
        y = fn.layer_norm(xs[0], norm, xs[1], xs[2], eps=1e-4)
        gs = L.autograd.grad((y * mk(u)).sum(), xs, create_graph=True)
        hv = L.autograd.grad(sum((g * g).sum() for g in gs), xs, allow_unused=True)
        res.append([a.detach().numpy() for a in (y, *gs, *hv) if a is not None])
    assert len(res[0]) == len(res[1])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_group_and_batch_norm_second_order_against_torch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((3, 4, 2, 2))
    w, b = RNG.uniform(0.5, 1.5, 4), RNG.standard_normal(4)
    u = RNG.standard_normal(x.shape)
    for name in ("group_norm", "batch_norm"):
        res = []
        for L, fn, mk in ((tp, F, _t), (torch, torch.nn.functional,
                                        lambda a, grad=False: torch.tensor(a,
                                                                           requires_grad=grad))):
            xs = [mk(x, grad=True), mk(w, grad=True), mk(b, grad=True)]
            if name == "group_norm":
                y = fn.group_norm(xs[0], 2, xs[1], xs[2])
            else:
                y = fn.batch_norm(xs[0], None, None, xs[1], xs[2], True)
            gs = L.autograd.grad((y * mk(u)).sum(), xs, create_graph=True)
            hv = L.autograd.grad(sum((g * g).sum() for g in gs), xs, allow_unused=True)
            res.append([a.detach().numpy() for a in (y, *gs, *hv) if a is not None])
        assert len(res[0]) == len(res[1])
        for a, b in zip(*res):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=name)


def test_float32_statistics_far_from_zero():
    # values 1e4 +- 1: a naive sum of squares in float32 loses every digit
    x = (RNG.standard_normal((64, 8)) + 1e4).astype(np.float32)
    want = (x.astype(np.float64) - x.mean(0, dtype=np.float64)) / np.sqrt(
        x.astype(np.float64).var(0) + 1e-5)
    got = F.batch_norm(tp.tensor(x), None, None, training=True)
    np.testing.assert_allclose(_n(got), want, atol=2e-3)
    got = F.layer_norm(tp.tensor(x.T.copy()), (64,))
    np.testing.assert_allclose(_n(got), want.T, atol=2e-3)


@pytest.mark.parametrize("fn", [
    lambda x, w, b: F.batch_norm(x, None, None, w, b, True),
    lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w.sum() * 0 + tp.ones(x.shape[-1]), None),
    lambda x, w, b: F.group_norm(x, 4, w, b),
])
def test_one_and_two_threads_agree(fn):
    x = tp.tensor(RNG.standard_normal((512, 64, 3)).astype(np.float32), requires_grad=True)
    w = tp.tensor(RNG.uniform(0.5, 1.5, 64).astype(np.float32), requires_grad=True)
    b = tp.tensor(RNG.standard_normal(64).astype(np.float32), requires_grad=True)
    u = tp.tensor(RNG.standard_normal((512, 64, 3)).astype(np.float32))
    res = []
    old = tp.get_num_threads()
    try:
        for n in (1, 2):
            tp.set_num_threads(n)
            y = fn(x, w, b)
            gs = tp.autograd.grad((y * u).sum(), [x, w, b], allow_unused=True)
            res.append([_n(y)] + [None if g is None else _n(g) for g in gs])
    finally:
        tp.set_num_threads(old)
    for a, c in zip(*res):
        if a is not None:
            np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-4)


def test_weight_and_bias_gradients_without_an_input_gradient():
    x = _t(RNG.standard_normal((5, 3, 2)))
    w, b = _t([1.0, 2.0, 0.5], grad=True), _t([0.0, 0.0, 1.0], grad=True)
    u = RNG.standard_normal((5, 3, 2))
    y = F.batch_norm(x, None, None, w, b, True)
    gw, gb = tp.autograd.grad((y * _t(u)).sum(), [w, b])
    xn = _n(x)
    xhat = (xn - xn.mean((0, 2), keepdims=True)) / np.sqrt(xn.var((0, 2), keepdims=True) + 1e-5)
    np.testing.assert_allclose(_n(gw), (u * xhat).sum((0, 2)), rtol=1e-12)
    np.testing.assert_allclose(_n(gb), u.sum((0, 2)), rtol=1e-12)
    y = F.group_norm(x, 3, w, b)
    gw, gb = tp.autograd.grad((y * _t(u)).sum(), [w, b])
    xhat = (xn - xn.mean(2, keepdims=True)) / np.sqrt(xn.var(2, keepdims=True) + 1e-5)
    np.testing.assert_allclose(_n(gw), (u * xhat).sum((0, 2)), rtol=1e-12)


def test_normalize_against_numpy():
    x = RNG.standard_normal((3, 4))
    np.testing.assert_allclose(_n(F.normalize(_t(x))),
                               x / np.linalg.norm(x, axis=1, keepdims=True), rtol=1e-13)
    np.testing.assert_allclose(_n(F.normalize(_t(x), p=1.0, dim=0)),
                               x / np.abs(x).sum(0, keepdims=True), rtol=1e-13)
    np.testing.assert_array_equal(_n(F.normalize(tp.zeros(2, 3))), np.zeros((2, 3)))


@pytest.mark.parametrize("call,exc,match", [
    (lambda: F.batch_norm(tp.rand(1, 3), tp.zeros(3), tp.ones(3), training=True), ValueError,
     "more than 1 value per channel"),
    (lambda: F.batch_norm(tp.rand(2, 3), None, None, training=False), RuntimeError,
     "evaluation mode"),
    (lambda: F.batch_norm(tp.rand(2, 3), tp.zeros(2), tp.ones(3), training=True),
     RuntimeError, "running_mean should contain 3 elements not 2"),
    (lambda: F.batch_norm(tp.rand(2, 3), None, None, tp.ones(2), training=True),
     RuntimeError, "weight of shape"),
    (lambda: F.batch_norm(tp.rand(3), None, None, training=True), IndexError, "dim"),
    (lambda: F.batch_norm(tp.ones(2, 3, dtype=tp.int64), None, None, training=True),
     RuntimeError, "floating"),
    (lambda: F.batch_norm(tp.rand(2, 3), tp.zeros(3), tp.ones(3), training=True,
                          momentum="a"), TypeError, "momentum"),
    (lambda: F.layer_norm(tp.rand(2, 3), (4,)), RuntimeError, "normalized_shape=\\[4\\]"),
    (lambda: F.layer_norm(tp.rand(2, 3), (3,), tp.ones(4)), RuntimeError, "weight"),
    (lambda: F.layer_norm(tp.rand(2, 3), "3"), TypeError, "normalized_shape"),
    (lambda: F.group_norm(tp.rand(2, 3, 4), 2), RuntimeError, "divisible by num_groups"),
    (lambda: F.group_norm(tp.rand(3), 1), RuntimeError, "at least 2 dimensions"),
    (lambda: F.group_norm(tp.rand(2, 4), 2.0), TypeError, "num_groups"),
    (lambda: F.normalize(tp.rand(2, 3), dim=3), IndexError, "range"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_failed_call_leaves_running_stats_alone():
    rm, rv = tp.zeros(3), tp.ones(3)
    with pytest.raises(RuntimeError):
        F.batch_norm(tp.rand(4, 3), rm, rv, tp.ones(2), training=True)
    np.testing.assert_array_equal(_n(rm), np.zeros(3))
    np.testing.assert_array_equal(_n(rv), np.ones(3))


def test_layer_norm_under_vmap_matches_the_loop():
    from tensorplay.func import vmap
    x = _t(RNG.standard_normal((3, 4, 5)))
    w = _t(RNG.uniform(0.5, 1.5, 5))
    got = vmap(lambda a: F.layer_norm(a, (5,), w))(x)
    want = np.stack([_n(F.layer_norm(x[i], (5,), w)) for i in range(3)])
    np.testing.assert_allclose(_n(got), want, rtol=1e-13)
