"""nn.TransformerEncoderLayer, TransformerDecoderLayer, TransformerEncoder,
TransformerDecoder and Transformer against torch 2.13: copied state_dicts give
the same outputs, input gradients and parameter gradients in float64 (dropout 0,
train and eval), with each kind of mask; torch's errors."""
import numpy as np
import pytest

import tensorplay as tp
import tensorplay.nn.functional as F

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
TOL = 1e-12


def _arr(rng, *shape):
    return rng.standard_normal(shape)


def _copy(tm, m):
    assert list(m.state_dict()) == list(tm.state_dict())
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})


def _close(t, p):
    np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=0, atol=TOL)


def _check(tm, m, inputs, rng, train=True, **masks):
    tm.train(train)
    m.train(train)
    ti = [torch.tensor(a, requires_grad=True) for a in inputs]
    pi = [tp.tensor(a, requires_grad=True) for a in inputs]
    tk = {n: torch.tensor(a) if isinstance(a, np.ndarray) else a for n, a in masks.items()}
    pk = {n: tp.tensor(a) if isinstance(a, np.ndarray) else a for n, a in masks.items()}
    to = tm(*ti, **tk)
    o = m(*pi, **pk)
    _close(to, o)
    g = _arr(rng, *to.shape)
    (to * torch.tensor(g)).sum().backward()
    (o * tp.tensor(g)).sum().backward()
    for a, b in zip(ti, pi):
        _close(a.grad, b.grad)
    for (n, a), (n2, b) in zip(tm.named_parameters(), m.named_parameters()):
        assert n == n2
        _close(a.grad, b.grad)
    tm.zero_grad()
    m.zero_grad()


def _causal(n):
    return np.triu(np.full((n, n), -np.inf), 1)


LAYER_KW = [{}, {"norm_first": True, "activation": "gelu"},
            {"batch_first": True, "bias": False, "layer_norm_eps": 1e-3}]


@pytest.mark.parametrize("kw", LAYER_KW)
def test_encoder_layer(kw):
    rng = np.random.default_rng(0)
    tm = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **kw).double()
    m = tp.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **kw).double()
    _copy(tm, m)
    src = _arr(rng, 3, 5, 8) if kw.get("batch_first") else _arr(rng, 5, 3, 8)
    kpm = rng.random((3, 5)) > 0.7
    kpm[:, 0] = False
    _check(tm, m, [src], rng)
    _check(tm, m, [src], rng, train=False, src_mask=_causal(5), is_causal=True)
    _check(tm, m, [src], rng, src_key_padding_mask=kpm)
    _check(tm, m, [src], rng, src_mask=rng.random((5, 5)) > 0.8)
    _check(tm, m, [src[0]], rng, src_mask=_causal(src.shape[1]))  # unbatched (S, E)


@pytest.mark.parametrize("kw", LAYER_KW)
def test_decoder_layer(kw):
    rng = np.random.default_rng(1)
    tm = torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, **kw).double()
    m = tp.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, **kw).double()
    _copy(tm, m)
    bf = kw.get("batch_first")
    tgt = _arr(rng, 3, 5, 8) if bf else _arr(rng, 5, 3, 8)
    mem = _arr(rng, 3, 4, 8) if bf else _arr(rng, 4, 3, 8)
    _check(tm, m, [tgt, mem], rng)
    _check(tm, m, [tgt, mem], rng, train=False, tgt_mask=_causal(5), tgt_is_causal=True,
           memory_key_padding_mask=rng.random((3, 4)) > 0.7)
    _check(tm, m, [tgt, mem], rng, memory_mask=rng.standard_normal((5, 4)),
           tgt_key_padding_mask=np.where(rng.random((3, 5)) > 0.7, -np.inf, 0.0))


def test_stacks_and_transformer():
    rng = np.random.default_rng(2)
    tl = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=torch.nn.GELU())
    pl = tp.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=tp.nn.GELU())
    te = torch.nn.TransformerEncoder(tl, 2, torch.nn.LayerNorm(8)).double()
    pe = tp.nn.TransformerEncoder(pl, 2, tp.nn.LayerNorm(8), enable_nested_tensor=False)
    pe = pe.double()
    _copy(te, pe)
    src = _arr(rng, 6, 2, 8)
    _check(te, pe, [src], rng, mask=_causal(6))                  # is_causal detected
    _check(te, pe, [src], rng, train=False, src_key_padding_mask=rng.random((2, 6)) > 0.8)
    tdl = torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0)
    pdl = tp.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0)
    td = torch.nn.TransformerDecoder(tdl, 2).double()
    pd = tp.nn.TransformerDecoder(pdl, 2).double()
    _copy(td, pd)
    _check(td, pd, [_arr(rng, 4, 2, 8), src], rng, tgt_mask=_causal(4))
    tt = torch.nn.Transformer(8, 2, 2, 1, 16, dropout=0.0, batch_first=True).double()
    pt = tp.nn.Transformer(8, 2, 2, 1, 16, dropout=0.0, batch_first=True).double()
    _copy(tt, pt)
    _check(tt, pt, [_arr(rng, 2, 6, 8), _arr(rng, 2, 4, 8)], rng,
           tgt_mask=tp.nn.Transformer.generate_square_subsequent_mask(4).numpy().astype(
               np.float64), src_key_padding_mask=rng.random((2, 6)) > 0.8,
           memory_key_padding_mask=rng.random((2, 6)) > 0.8)


def test_square_subsequent_mask_and_init():
    for n in (1, 4):
        t = torch.nn.Transformer.generate_square_subsequent_mask(n)
        p = tp.nn.Transformer.generate_square_subsequent_mask(n)
        assert p.dtype == tp.float32
        np.testing.assert_array_equal(p.numpy(), t.numpy())
    assert tp.nn.Transformer.generate_square_subsequent_mask(3, dtype=tp.float64).dtype == \
        tp.float64
    m = tp.nn.Transformer(8, 2, 1, 1, 16)
    w = m.encoder.layers[0].linear1.weight.detach().numpy()
    assert np.abs(w).max() <= np.sqrt(6 / 24)                      # xavier_uniform_
    names = [n for n, _ in m.named_parameters()]
    tnames = [n for n, _ in torch.nn.Transformer(8, 2, 1, 1, 16).named_parameters()]
    assert names == tnames


def test_callable_activation_and_dropout_train():
    rng = np.random.default_rng(3)
    tm = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=torch.tanh)
    m = tp.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=tp.tanh)
    tm, m = tm.double(), m.double()
    _copy(tm, m)
    _check(tm, m, [_arr(rng, 5, 2, 8)], rng)
    d = tp.nn.TransformerEncoderLayer(8, 2, 16)                   # dropout 0.1
    x = tp.randn(5, 2, 8)
    tp.manual_seed(1)
    a = d(x)
    tp.manual_seed(1)
    np.testing.assert_array_equal(a.detach().numpy(), d(x).detach().numpy())
    d.eval()
    assert not np.allclose(a.detach().numpy(), d(x).detach().numpy())


def test_errors():
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        tp.nn.TransformerEncoderLayer(8, 2, activation="tanh")
    with pytest.raises(AssertionError, match="divisible by num_heads"):
        tp.nn.TransformerDecoderLayer(8, 3)
    m = tp.nn.Transformer(8, 2, 1, 1, 16)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        m(tp.randn(5, 2, 8), tp.randn(4, 3, 8))
    with pytest.raises(RuntimeError, match="feature number of src and tgt must be equal"):
        m(tp.randn(5, 2, 6), tp.randn(4, 2, 6))
    layer = tp.nn.TransformerEncoderLayer(8, 2, 16)
    with pytest.raises(RuntimeError, match="The shape of the 2D attn_mask"):
        layer(tp.randn(5, 2, 8), src_mask=tp.zeros(4, 4))
    with pytest.raises(AssertionError, match="expecting key_padding_mask shape"):
        layer(tp.randn(5, 2, 8), src_key_padding_mask=tp.zeros(2, 4, dtype=tp.bool))
    with pytest.raises(AssertionError, match="was expecting embedding dimension"):
        layer(tp.randn(5, 2, 6))
    assert F.relu is tp.nn.TransformerEncoderLayer(8, 2, 16).activation
