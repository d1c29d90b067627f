"""RNN / LSTM / GRU and their cells: parameter names and shapes, an independent
numpy recurrence (torch-free), torch with the same weights (outputs, final
states, gradients of every parameter, float64), shapes of every input layout,
and PyTorch's errors."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay import nn


def _np(t):
    return t.detach().numpy()


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _ref_layer(mode, x, h, c, w_ih, w_hh, b_ih, b_hh, reverse=False):
    """An independent numpy recurrence over x (T, N, I) for one direction."""
    T = x.shape[0]
    out = [None] * T
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        gi = x[t] @ w_ih.T + b_ih
        gh = h @ w_hh.T + b_hh
        if mode == "LSTM":
            i, f, g, o = np.split(gi + gh, 4, axis=1)
            c = _sig(f) * c + _sig(i) * np.tanh(g)
            h = _sig(o) * np.tanh(c)
        elif mode == "GRU":
            ir, iz, in_ = np.split(gi, 3, axis=1)
            hr, hz, hn = np.split(gh, 3, axis=1)
            r, z = _sig(ir + hr), _sig(iz + hz)
            n = np.tanh(in_ + r * hn)
            h = (1 - z) * n + z * h
        elif mode == "RNN_RELU":
            h = np.maximum(gi + gh, 0)
        else:
            h = np.tanh(gi + gh)
        out[t] = h
    return np.stack(out), h, c


@pytest.mark.parametrize("cls,kw", [("RNN", {}), ("RNN", {"nonlinearity": "relu"}),
                                    ("LSTM", {}), ("GRU", {}),
                                    ("LSTM", {"num_layers": 2, "bidirectional": True}),
                                    ("GRU", {"bidirectional": True})])
def test_against_numpy_recurrence(cls, kw):
    tp.manual_seed(0)
    m = getattr(nn, cls)(3, 4, dtype=tp.float64, **kw)
    mode = m.mode
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 2, 3))
    out, hs = m(tp.tensor(x))
    D = 2 if m.bidirectional else 1
    layer_in = x
    h_fin = []
    for layer in range(m.num_layers):
        outs = []
        for d in range(D):
            sfx = "_reverse" if d else ""
            w = [_np(getattr(m, f"{n}_l{layer}{sfx}"))
                 for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
            o, h, c = _ref_layer(mode, layer_in, np.zeros((2, 4)), np.zeros((2, 4)), *w,
                                 reverse=bool(d))
            outs.append(o)
            h_fin.append(h)
        layer_in = np.concatenate(outs, axis=2)
    assert np.allclose(_np(out), layer_in, rtol=1e-12, atol=1e-13)
    h_n = hs[0] if cls == "LSTM" else hs
    assert np.allclose(_np(h_n), np.stack(h_fin), rtol=1e-12, atol=1e-13)


def test_names_shapes_and_counts():
    m = nn.LSTM(3, 5, num_layers=2, bidirectional=True)
    sd = m.state_dict()
    assert list(sd)[:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    assert list(sd)[4] == "weight_ih_l0_reverse"
    assert sd["weight_ih_l0"].shape == (20, 3) and sd["weight_ih_l1"].shape == (20, 10)
    assert sd["weight_hh_l1_reverse"].shape == (20, 5)
    assert len(sd) == 16
    g = nn.GRU(3, 5, bias=False)
    assert list(g.state_dict()) == ["weight_ih_l0", "weight_hh_l0"]
    assert g.weight_ih_l0.shape == (15, 3)
    p = nn.LSTM(3, 5, proj_size=2)
    assert p.weight_hr_l0.shape == (2, 5) and p.weight_hh_l0.shape == (20, 2)
    assert repr(m) == "LSTM(3, 5, num_layers=2, bidirectional=True)"


def test_layouts_and_initial_state():
    tp.manual_seed(0)
    m = nn.GRU(3, 4, num_layers=2, dtype=tp.float64)
    x = tp.randn(6, 2, 3, dtype=tp.float64)
    out, h = m(x)
    assert out.shape == (6, 2, 4) and h.shape == (2, 2, 4)
    m.batch_first = True
    out_bf, h_bf = m(x.transpose(0, 1))
    assert np.allclose(_np(out_bf.transpose(0, 1)), _np(out), atol=1e-15)
    m.batch_first = False
    out_u, h_u = m(x[:, 0])                          # unbatched
    assert out_u.shape == (6, 4) and h_u.shape == (2, 4)
    assert np.allclose(_np(out_u), _np(out[:, 0]), atol=1e-14)
    h0 = tp.randn(2, 2, 4, dtype=tp.float64)
    out2, _ = m(x, h0)
    out3, _ = m(x[:3])
    out4, _ = m(x[3:], m(x[:3])[1])                  # continue from the final state
    assert np.allclose(_np(out4), _np(out[3:]), atol=1e-14)
    assert not np.allclose(_np(out2), _np(out))
    lstm = nn.LSTM(3, 4, dtype=tp.float64)
    o, (hn, cn) = lstm(x, (tp.zeros(1, 2, 4, dtype=tp.float64),
                           tp.zeros(1, 2, 4, dtype=tp.float64)))
    o2, _ = lstm(x)
    assert np.array_equal(_np(o), _np(o2)) and cn.shape == (1, 2, 4)


def test_dropout_between_layers_only_in_training():
    tp.manual_seed(0)
    m = nn.RNN(3, 50, num_layers=2, dropout=0.5, dtype=tp.float64)
    x = tp.randn(4, 2, 3, dtype=tp.float64)
    m.eval()
    a, _ = m(x)
    b, _ = m(x)
    assert np.array_equal(_np(a), _np(b))
    m.train()
    c, _ = m(x)
    assert not np.allclose(_np(a), _np(c))
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.GRU(2, 2, dropout=0.3)


def test_errors():
    m = nn.LSTM(3, 4)
    with pytest.raises(ValueError, match="LSTM: Expected input to be 2D or 3D, got 4D"):
        m(tp.zeros(1, 1, 1, 3))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. "
                                           "Expected 3, got 2"):
        m(tp.zeros(5, 1, 2))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(1, 2, 4\), got "
                                           r"\[1, 3, 4\]"):
        m(tp.zeros(5, 2, 3), (tp.zeros(1, 3, 4), tp.zeros(1, 2, 4)))
    with pytest.raises(RuntimeError, match="hx and cx should also be 3-D"):
        m(tp.zeros(5, 2, 3), (tp.zeros(3, 4), tp.zeros(3, 4)))
    with pytest.raises(ValueError, match="does not match weight dtype"):
        m(tp.zeros(5, 2, 3, dtype=tp.float64))
    g = nn.GRU(3, 4)
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 4\), got \[2, 2, 4\]"):
        g(tp.zeros(5, 2, 3), tp.zeros(2, 2, 4))
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.RNN(2, 2, dropout=1.5)
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.RNN(2, 0)
    with pytest.raises(TypeError, match="hidden_size should be of type int"):
        nn.LSTM(2, 2.5)
    with pytest.raises(ValueError, match="num_layers must be greater than zero"):
        nn.GRU(2, 2, num_layers=0)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sig'"):
        nn.RNN(2, 2, nonlinearity="sig")
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(2, 2, proj_size=3)
    with pytest.raises(ValueError, match="only supported for LSTM"):
        nn.GRU(2, 2, proj_size=1)
    with pytest.raises(ValueError, match="RNNCell: Expected input to be 1D or 2D"):
        nn.RNNCell(2, 2)(tp.zeros(1, 1, 2))


def _to_tp(torch_module, module):
    module.load_state_dict({k: tp.tensor(v.detach().numpy())
                            for k, v in torch_module.state_dict().items()})


@pytest.mark.parametrize("cls,kw", [
    ("RNN", {}), ("RNN", {"nonlinearity": "relu", "num_layers": 2}),
    ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("GRU", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("LSTM", {"proj_size": 2}), ("GRU", {"bias": False}), ("LSTM", {"batch_first": True})])
def test_against_torch(cls, kw):
    torch = pytest.importorskip("torch")
    tm = getattr(torch.nn, cls)(3, 4, **kw).double()
    m = getattr(nn, cls)(3, 4, **kw).double()
    assert list(tm.state_dict()) == list(m.state_dict())
    assert repr(tm) == repr(m)
    _to_tp(tm, m)
    x = np.random.default_rng(0).standard_normal((5, 2, 3))
    tx, px = torch.tensor(x, requires_grad=True), tp.tensor(x, requires_grad=True)
    D = 2 if kw.get("bidirectional") else 1
    L = kw.get("num_layers", 1)
    hsize = kw.get("proj_size", 4)
    n = 5 if kw.get("batch_first") else 2
    h0 = np.random.default_rng(1).standard_normal((D * L, n, hsize))
    c0 = np.random.default_rng(2).standard_normal((D * L, n, 4))
    if cls == "LSTM":
        th, ph = (torch.tensor(h0), torch.tensor(c0)), (tp.tensor(h0), tp.tensor(c0))
    else:
        th, ph = torch.tensor(h0), tp.tensor(h0)
    to, ts = tm(tx, th)
    po, ps = m(px, ph)
    assert np.allclose(to.detach().numpy(), _np(po), rtol=1e-12, atol=1e-13)
    ts = ts if isinstance(ts, tuple) else (ts,)
    ps = ps if isinstance(ps, tuple) else (ps,)
    for a, b in zip(ts, ps):
        assert np.allclose(a.detach().numpy(), _np(b), rtol=1e-12, atol=1e-13)
    w = np.random.default_rng(3).standard_normal(to.shape)
    (to * torch.tensor(w)).sum().backward()
    (po * tp.tensor(w)).sum().backward()
    for (k, a), (_, b) in zip(tm.named_parameters(), m.named_parameters()):
        assert np.allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-11, atol=1e-12), k
    assert np.allclose(tx.grad.numpy(), px.grad.numpy(), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("cls,kw", [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}),
                                    ("LSTMCell", {}), ("GRUCell", {}),
                                    ("GRUCell", {"bias": False})])
def test_cells_against_torch(cls, kw):
    torch = pytest.importorskip("torch")
    tm = getattr(torch.nn, cls)(3, 4, **kw).double()
    m = getattr(nn, cls)(3, 4, **kw).double()
    assert list(tm.state_dict()) == list(m.state_dict()) and repr(tm) == repr(m)
    _to_tp(tm, m)
    x = np.random.default_rng(0).standard_normal((2, 3))
    to = tm(torch.tensor(x))
    po = m(tp.tensor(x))
    to = to if isinstance(to, tuple) else (to,)
    po = po if isinstance(po, tuple) else (po,)
    for a, b in zip(to, po):
        assert np.allclose(a.detach().numpy(), _np(b), rtol=1e-12, atol=1e-13)
    sum(a.sum() for a in to).backward()
    sum(b.sum() for b in po).backward()
    for (k, a), (_, b) in zip(tm.named_parameters(), m.named_parameters()):
        assert np.allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-11, atol=1e-12), k
    unb = m(tp.tensor(x[0]))
    unb = unb if isinstance(unb, tuple) else (unb,)
    assert np.allclose(_np(unb[0]), _np(po[0][0]), atol=1e-14)


def test_pad_sequence():
    from tensorplay.nn.utils.rnn import pad_sequence
    a, b = tp.ones(3, 2, requires_grad=True), tp.full((1, 2), 2.0, requires_grad=True)
    p = pad_sequence([a, b])
    assert p.shape == (3, 2, 2)
    assert np.array_equal(_np(p)[:, 1, 0], [2, 0, 0])
    q = pad_sequence([a, b], batch_first=True, padding_value=-1.0, padding_side="left")
    assert q.shape == (2, 3, 2) and np.array_equal(_np(q)[1, :, 0], [-1, -1, 2])
    q.sum().backward()
    assert np.all(b.grad.numpy() == 1) and np.all(a.grad.numpy() == 1)
    with pytest.raises(RuntimeError, match="every sequence must be"):
        pad_sequence([tp.ones(2, 3), tp.ones(2, 4)])
    with pytest.raises(ValueError, match="padding_side"):
        pad_sequence([a], padding_side="up")
    torch = pytest.importorskip("torch")
    xs = [np.random.default_rng(i).standard_normal((n, 3)) for i, n in enumerate([4, 2, 5])]
    t = torch.nn.utils.rnn.pad_sequence([torch.tensor(x) for x in xs], batch_first=True)
    assert np.array_equal(t.numpy(), _np(pad_sequence([tp.tensor(x) for x in xs],
                                                      batch_first=True)))
