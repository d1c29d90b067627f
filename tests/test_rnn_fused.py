"""The fused LSTM/GRU cell primitives (tensorplay/_ops/rnn.py) inside nn.LSTM /
nn.GRU: the same outputs, final states and parameter gradients as the op-by-op
reference path (fused=False) for padded and packed input, float32 and float64;
second order through the layer (create_graph falls back to the op formulas);
one and several threads agree; shape errors name the op."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay import nn
from tensorplay._ops.rnn import gru_cell, lstm_cell
from tensorplay.nn.modules import _recurrence
from tensorplay.nn.utils import rnn as R


def _run(m, x, fused, hx=None):
    old = _recurrence.FUSED
    _recurrence.FUSED = fused
    try:
        m.zero_grad()
        out, st = m(x, hx)
        st = st if isinstance(st, tuple) else (st,)
        data = out.data if isinstance(out, R.PackedSequence) else out
        (data.sum() + sum((s * s).sum() for s in st)).backward()
        return [data.detach().numpy()] + [s.detach().numpy() for s in st] + \
            [p.grad.numpy().copy() for p in m.parameters()]
    finally:
        _recurrence.FUSED = old


@pytest.mark.parametrize("mode,kw", [("LSTM", {}), ("LSTM", {"proj_size": 2}),
                                     ("LSTM", {"num_layers": 2, "bidirectional": True}),
                                     ("GRU", {}), ("GRU", {"bidirectional": True})])
@pytest.mark.parametrize("dtype,tol", [(tp.float64, 1e-13), (tp.float32, 2e-5)])
@pytest.mark.parametrize("packed", [False, True])
def test_fused_matches_reference(mode, kw, dtype, tol, packed):
    tp.manual_seed(0)
    m = getattr(nn, mode)(3, 4, dtype=dtype, **kw)
    x = tp.randn(6, 3, 3, dtype=dtype)
    if packed:
        x = R.pack_padded_sequence(x, [4, 6, 1], enforce_sorted=False)
    for a, b in zip(_run(m, x, True), _run(m, x, False)):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_second_order_through_fused_layer(mode):
    tp.manual_seed(1)
    m = getattr(nn, mode)(2, 2, dtype=tp.float64)
    x = tp.randn(3, 1, 2, dtype=tp.float64, requires_grad=True)

    def f(x):
        out, _ = m(x)
        return (out * out).sum()
    assert tp.autograd.gradgradcheck(f, (x,))


def test_cells_against_closed_forms_and_threads():
    rng = np.random.default_rng(2)
    gx, gh = rng.standard_normal((2, 300, 4 * 200))
    c = rng.standard_normal((300, 200))
    sig = lambda v: 1 / (1 + np.exp(-v))    # noqa: E731
    i, f, g, o = np.split(gx + gh, 4, axis=1)
    c1 = sig(f) * c + sig(i) * np.tanh(g)
    h1 = sig(o) * np.tanh(c1)
    old = tp.get_num_threads()
    try:
        for n in (1, 2):
            tp.set_num_threads(n)
            h, cc = lstm_cell(tp.tensor(gx), tp.tensor(gh), tp.tensor(c))
            np.testing.assert_allclose(h.numpy(), h1, atol=1e-14)
            np.testing.assert_allclose(cc.numpy(), c1, atol=1e-14)
    finally:
        tp.set_num_threads(old)
    gx3, gh3 = gx[:, :600], gh[:, :600]
    xr, xz, xn = np.split(gx3, 3, axis=1)
    hr, hz, hn = np.split(gh3, 3, axis=1)
    r, z = sig(xr + hr), sig(xz + hz)
    n_ = np.tanh(xn + r * hn)
    got = gru_cell(tp.tensor(gx3), tp.tensor(gh3), tp.tensor(c))
    np.testing.assert_allclose(got.numpy(), (1 - z) * n_ + z * c, atol=1e-14)


def test_backward_memo_gives_each_input_its_gradient():
    # the three rules of one node share one kernel pass; two nodes in a row must
    # not see each other's result
    rng = np.random.default_rng(3)
    ts = [tp.tensor(rng.standard_normal(s), requires_grad=True)
          for s in ((2, 8), (2, 8), (2, 2))]
    h1, c1 = lstm_cell(*ts)
    h2, c2 = lstm_cell(ts[0] * 2, ts[1], c1)
    (h1.sum() + (h2 * c2).sum()).backward()
    want = []
    for t in ts:
        want.append(t.grad.numpy().copy())
        t.grad = None
    from tensorplay.nn import functional as F

    def ref(gx, gh, c):
        i, f, g, o = (gx + gh).chunk(4, 1)
        c = F.sigmoid(f) * c + F.sigmoid(i) * F.tanh(g)
        return F.sigmoid(o) * F.tanh(c), c
    h1, c1 = ref(*ts)
    h2, c2 = ref(ts[0] * 2, ts[1], c1)
    (h1.sum() + (h2 * c2).sum()).backward()
    for w, t in zip(want, ts):
        np.testing.assert_allclose(w, t.grad.numpy(), atol=1e-14)


def test_cell_errors():
    with pytest.raises(RuntimeError, match=r"lstm_cell\(\): expected input_gates"):
        lstm_cell(tp.randn(2, 7), tp.randn(2, 7), tp.randn(2, 2))
    with pytest.raises(RuntimeError, match="gru_cell"):
        gru_cell(tp.randn(2, 6), tp.randn(3, 6), tp.randn(2, 2))
    with pytest.raises(RuntimeError):
        lstm_cell(tp.randn(2, 8), tp.randn(2, 8, dtype=tp.float64), tp.randn(2, 2))
