"""PackedSequence and its functions (tensorplay.nn.utils.rnn) and RNN/LSTM/GRU on
packed input, against torch 2.x with copied state_dicts in float64: packed data,
batch_sizes, indices, padded outputs, h_n/c_n and every parameter gradient; the
torch errors for bad lengths; gradients through pack/pad (gradcheck)."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay import nn
from tensorplay.nn.utils import rnn as R

torch = pytest.importorskip("torch")
TR = torch.nn.utils.rnn


def _np(t):
    return t.detach().numpy()


def _copy(m_tp, m_t):
    m_tp.load_state_dict({k: v.detach().numpy() for k, v in m_t.state_dict().items()})


@pytest.mark.parametrize("lens,enforce,batch_first", [
    ([5, 3, 2], True, False), ([2, 5, 3], False, False), ([2, 5, 3, 5], False, True),
    ([1, 1], True, True), ([4], True, False)])
def test_pack_pad_roundtrip_matches_torch(lens, enforce, batch_first):
    rng = np.random.default_rng(0)
    B, T = len(lens), max(lens) + 1
    x = rng.standard_normal((B, T, 3) if batch_first else (T, B, 3))
    p = R.pack_padded_sequence(tp.tensor(x), lens, batch_first, enforce)
    q = TR.pack_padded_sequence(torch.tensor(x), torch.tensor(lens), batch_first, enforce)
    np.testing.assert_array_equal(_np(p.data), q.data.numpy())
    np.testing.assert_array_equal(p.batch_sizes.numpy(), q.batch_sizes.numpy())
    for mine, theirs in ((p.sorted_indices, q.sorted_indices),
                         (p.unsorted_indices, q.unsorted_indices)):
        assert (mine is None) == (theirs is None)
        if mine is not None:
            np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    for total in (None, T + 2):
        a, la = R.pad_packed_sequence(p, batch_first, -7.0, total)
        b, lb = TR.pad_packed_sequence(q, batch_first, -7.0, total)
        np.testing.assert_array_equal(_np(a), b.numpy())
        np.testing.assert_array_equal(la.numpy(), lb.numpy())
        assert la.dtype == tp.int64


def test_pack_sequence_unpack_unpad():
    seqs = [tp.randn(2, 3), tp.randn(4, 3), tp.randn(1, 3)]
    packed = R.pack_sequence(seqs, enforce_sorted=False)
    back = R.unpack_sequence(packed)
    for s, b in zip(seqs, back):
        np.testing.assert_array_equal(_np(s), _np(b))
    padded = R.pad_sequence(seqs, batch_first=True)
    for s, b in zip(seqs, R.unpad_sequence(padded, tp.tensor([2, 4, 1]), batch_first=True)):
        np.testing.assert_array_equal(_np(s), _np(b))
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        R.pack_sequence(seqs)
    with pytest.raises(RuntimeError, match="empty list"):
        R.pack_sequence([])


def test_packed_sequence_tuple_and_conversions():
    p = R.pack_padded_sequence(tp.randn(3, 2, 2), [3, 1])
    data, bs, si, ui = p
    assert p._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    assert si is None and ui is None and bs.tolist() == [2, 1, 1]
    assert p.to(tp.float32) is p and p.float() is p and p.cpu() is p
    d = p.double()
    assert isinstance(d, R.PackedSequence) and d.data.dtype == tp.float64
    assert d.batch_sizes.dtype == tp.int64
    q = R.PackedSequence(data, bs, tp.tensor([1, 0]))
    assert q.unsorted_indices.tolist() == [1, 0]
    with pytest.raises(RuntimeError):
        p.cuda()


@pytest.mark.parametrize("lens,enforce,msg,exc", [
    ([2, 3], True, "sorted in decreasing order", RuntimeError),
    ([3, 0], True, "greater than 0", RuntimeError),
    ([3, -1], False, "greater than 0", RuntimeError),
    ([3], True, r"equal to batch_size, but got 1 \(batch_size=2\)", RuntimeError),
    ([5, 2], True, "at most the sequence dim", RuntimeError),
    ([[3, 2]], True, "lengths must be a 1-D", TypeError)])
def test_pack_errors(lens, enforce, msg, exc):
    with pytest.raises(exc, match=msg):
        R.pack_padded_sequence(tp.randn(3, 2, 1), lens, enforce_sorted=enforce)


def test_pad_total_length_error_and_2d_lengths_tensor():
    p = R.pack_padded_sequence(tp.randn(4, 2, 1), [4, 2])
    with pytest.raises(ValueError, match="total_length=3 and max sequence length being 4"):
        R.pad_packed_sequence(p, total_length=3)
    with pytest.raises(RuntimeError, match="1D CPU int64 tensor"):
        R.pack_padded_sequence(tp.randn(4, 2, 1), tp.tensor([[4, 2]]))


def test_gradients_flow_through_pack_and_pad():
    x = tp.randn(4, 3, 2, dtype=tp.float64, requires_grad=True)

    def f(x):
        p = R.pack_padded_sequence(x, [2, 4, 3], enforce_sorted=False)
        out, _ = R.pad_packed_sequence(p, padding_value=1.5, total_length=5)
        return out * out
    assert tp.autograd.gradcheck(f, (x,))
    # the padded steps take no gradient
    f(x).sum().backward()
    g = _np(x.grad)
    assert np.all(g[2:, 0] == 0) and np.all(g[3:, 2] == 0) and np.all(g[:, 1] != 0)


_CASES = [("LSTM", {}), ("GRU", {}), ("RNN", {}), ("RNN", {"nonlinearity": "relu"}),
          ("LSTM", {"num_layers": 2, "bidirectional": True}),
          ("LSTM", {"proj_size": 2, "bidirectional": True}),
          ("GRU", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
          ("RNN", {"bidirectional": True})]


@pytest.mark.parametrize("cls,kw", _CASES)
@pytest.mark.parametrize("enforce", [True, False])
def test_packed_recurrent_layers_match_torch(cls, kw, enforce):
    torch.manual_seed(0)
    m_t = getattr(torch.nn, cls)(3, 4, dtype=torch.float64, **kw)
    m_tp = getattr(nn, cls)(3, 4, dtype=tp.float64, **kw)
    _copy(m_tp, m_t)
    bf = kw.get("batch_first", False)
    lens = [5, 4, 2, 2] if enforce else [2, 5, 1, 4]
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 5, 3) if bf else (5, 4, 3))
    D = 2 if kw.get("bidirectional") else 1
    L = kw.get("num_layers", 1)
    h0 = rng.standard_normal((L * D, 4, kw.get("proj_size") or 4))
    c0 = rng.standard_normal((L * D, 4, 4))
    hx_tp = (tp.tensor(h0), tp.tensor(c0)) if cls == "LSTM" else tp.tensor(h0)
    hx_t = (torch.tensor(h0), torch.tensor(c0)) if cls == "LSTM" else torch.tensor(h0)
    out_tp, st_tp = m_tp(R.pack_padded_sequence(tp.tensor(x), lens, bf, enforce), hx_tp)
    out_t, st_t = m_t(TR.pack_padded_sequence(torch.tensor(x), torch.tensor(lens), bf,
                                              enforce), hx_t)
    assert isinstance(out_tp, R.PackedSequence)
    np.testing.assert_allclose(_np(out_tp.data), out_t.data.detach().numpy(), atol=1e-12)
    np.testing.assert_array_equal(out_tp.batch_sizes.numpy(), out_t.batch_sizes.numpy())
    sts_tp = st_tp if cls == "LSTM" else (st_tp,)
    sts_t = st_t if cls == "LSTM" else (st_t,)
    for a, b in zip(sts_tp, sts_t):
        np.testing.assert_allclose(_np(a), b.detach().numpy(), atol=1e-12)
    # a loss on the padded output and on every final state
    pad_tp, _ = R.pad_packed_sequence(out_tp, bf)
    pad_t, _ = TR.pad_packed_sequence(out_t, bf)
    w = rng.standard_normal(tuple(pad_t.shape))
    loss_tp = (pad_tp * tp.tensor(w)).sum() + sum((s * s).sum() for s in sts_tp)
    loss_t = (pad_t * torch.tensor(w)).sum() + sum((s * s).sum() for s in sts_t)
    loss_tp.backward()
    loss_t.backward()
    for (name, p_t), p_tp in zip(m_t.named_parameters(), m_tp.parameters()):
        np.testing.assert_allclose(_np(p_tp.grad), p_t.grad.numpy(), atol=1e-11,
                                   err_msg=name)


def test_tutorial_embedding_pack_lstm_pad():
    # the usual tutorial pipeline, unsorted batch: Embedding -> pack -> LSTM -> pad
    torch.manual_seed(0)
    emb_t = torch.nn.Embedding(10, 5, padding_idx=0, dtype=torch.float64)
    lstm_t = torch.nn.LSTM(5, 6, batch_first=True, dtype=torch.float64)
    emb_tp = nn.Embedding(10, 5, padding_idx=0, dtype=tp.float64)
    lstm_tp = nn.LSTM(5, 6, batch_first=True, dtype=tp.float64)
    _copy(emb_tp, emb_t)
    _copy(lstm_tp, lstm_t)
    tokens = np.array([[3, 4, 0, 0], [1, 2, 5, 9], [7, 0, 0, 0]])
    lengths = [2, 4, 1]

    def run(lib, emb, lstm, rnn):
        e = emb(lib.tensor(tokens))
        packed = rnn.pack_padded_sequence(e, lib.tensor(lengths), batch_first=True,
                                          enforce_sorted=False)
        out, (h, c) = lstm(packed)
        padded, lens = rnn.pad_packed_sequence(out, batch_first=True)
        loss = padded.sum() + h.sum() * 2 + c.sum()
        loss.backward()
        return padded, lens, h, c
    got = run(tp, emb_tp, lstm_tp, R)
    want = run(torch, emb_t, lstm_t, TR)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(_np(emb_tp.weight.grad), emb_t.weight.grad.numpy(),
                               atol=1e-12)
    np.testing.assert_allclose(_np(lstm_tp.weight_hh_l0.grad),
                               lstm_t.weight_hh_l0.grad.numpy(), atol=1e-12)


def test_packed_input_errors():
    m = nn.LSTM(3, 4)
    p = R.pack_padded_sequence(tp.randn(2, 2, 3), [2, 1])
    with pytest.raises(RuntimeError, match="For batched 3-D input, hx and cx should also "
                                           "be 3-D"):
        m(p, (tp.zeros(1, 4), tp.zeros(1, 4)))
    with pytest.raises(RuntimeError, match="Expected hidden"):
        m(p, (tp.zeros(1, 3, 4), tp.zeros(1, 3, 4)))
    with pytest.raises(RuntimeError, match="input_size"):
        m(R.pack_padded_sequence(tp.randn(2, 2, 5), [2, 1]))
