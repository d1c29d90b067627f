"""scaled_dot_product_attention, multi_head_attention_forward and
nn.MultiheadAttention against torch 2.13 (float64, copied state_dicts): outputs,
attention weights, input and parameter gradients; masks of each kind; errors;
a vmap / jvp check of sdpa."""
import warnings

import numpy as np
import pytest

import tensorplay as tp
import tensorplay.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
TOL = 1e-12


def _arr(rng, *shape):
    return rng.standard_normal(shape)


def _both(a, grad=True):
    return (torch.tensor(a, requires_grad=grad and a.dtype.kind == "f"),
            tp.tensor(a, requires_grad=grad and a.dtype.kind == "f"))


def _close(t, p, tol=TOL):
    if t is None:
        assert p is None
        return
    t = t.detach().numpy()
    p = p.detach().numpy()
    assert t.shape == p.shape
    np.testing.assert_allclose(p, t, rtol=0, atol=tol)


def _check_sdpa(rng, qs, ks, vs, mask=None, **kw):
    (tq, q), (tk, k), (tv, v) = (_both(_arr(rng, *s)) for s in (qs, ks, vs))
    tm = pm = None
    if mask is not None:
        tm, pm = _both(mask)
    to = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm, **kw)
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=pm, **kw)
    _close(to, o)
    g = _arr(rng, *to.shape)
    to.backward(torch.tensor(g))
    o.backward(tp.tensor(g))
    for a, b in ((tq, q), (tk, k), (tv, v)) + (((tm, pm),) if mask is not None and
                                                mask.dtype.kind == "f" else ()):
        _close(a.grad, b.grad)
    return o


@pytest.mark.parametrize("L,S,kw", [(4, 5, {}), (4, 5, {"is_causal": True}),
                                    (6, 3, {"is_causal": True}), (3, 6, {"is_causal": True}),
                                    (4, 5, {"scale": 0.3}), (4, 2, {"scale": 2.0})])
def test_sdpa_matches_torch(L, S, kw):
    rng = np.random.default_rng(L * 10 + S)
    _check_sdpa(rng, (2, 3, L, 8), (2, 3, S, 8), (2, 3, S, 6), **kw)


def test_sdpa_masks_and_broadcasting():
    rng = np.random.default_rng(1)
    m = rng.random((3, 4, 5)) > 0.5
    m[1, 2] = False                      # a fully masked query row: zeros, as torch
    o = _check_sdpa(rng, (2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6), m)
    assert np.all(o.detach().numpy()[:, 1, 2] == 0)
    fm = np.where(m, 0.0, -np.inf) + rng.standard_normal((3, 4, 5))
    _check_sdpa(rng, (2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6), fm)
    _check_sdpa(rng, (2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6), rng.standard_normal((4, 5)))
    _check_sdpa(rng, (2, 1, 4, 8), (1, 3, 5, 8), (2, 3, 5, 6), rng.random((5,)) > 0.3)
    _check_sdpa(rng, (4, 8), (5, 8), (5, 2))
    _check_sdpa(rng, (3, 4, 8), (5, 8), (5, 2), rng.random((3, 1, 5)) > 0.3)


def test_sdpa_gqa():
    rng = np.random.default_rng(2)
    _check_sdpa(rng, (2, 6, 4, 8), (2, 2, 5, 8), (2, 3, 5, 4), enable_gqa=True)
    with pytest.raises(RuntimeError, match="divide"):
        F.scaled_dot_product_attention(tp.randn(2, 6, 4, 8), tp.randn(2, 4, 5, 8),
                                       tp.randn(2, 4, 5, 8), enable_gqa=True)


def test_sdpa_dropout_is_on_the_weights_and_seeded():
    q, k, v = tp.randn(2, 4, 8), tp.randn(2, 5, 8), tp.randn(2, 5, 3)
    tp.manual_seed(3)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.4)
    tp.manual_seed(3)
    w = F.dropout(F.softmax(q @ k.mT / np.sqrt(8), -1), 0.4)
    np.testing.assert_allclose(out.numpy(), (w @ v).numpy(), rtol=1e-6, atol=1e-6)
    assert not np.allclose(out.numpy(), F.scaled_dot_product_attention(q, k, v).numpy())
    zero = F.scaled_dot_product_attention(q, k, v, dropout_p=1.0)
    assert np.all(zero.numpy() == 0)


@pytest.mark.parametrize("call,exc,match", [
    (lambda q, k, v: F.scaled_dot_product_attention(q, k.double(), v), RuntimeError,
     "same dtype"),
    (lambda q, k, v: F.scaled_dot_product_attention(q[0, 0, 0], k[0, 0, 0], v[0, 0, 0]), RuntimeError,
     "at least 2 dimensional"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k[..., :3], v), RuntimeError,
     "embedding size"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v[..., :2, :]), RuntimeError,
     "sequence length"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k[:2], v[:2]), RuntimeError,
     "broadcast"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=tp.zeros(3, 5)),
     RuntimeError, "does not broadcast"),
    (lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, attn_mask=tp.zeros(4, 5, dtype=tp.int64)), RuntimeError, "bool or float"),
    (lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, attn_mask=tp.ones(4, 5, dtype=tp.bool), is_causal=True), RuntimeError,
     "is_causal"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=1.5), RuntimeError,
     "between 0 and 1"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v.numpy()), TypeError, "Tensor"),
    (lambda q, k, v: F.scaled_dot_product_attention(q.long(), k.long(), v.long()),
     RuntimeError, "float32 or float64"),
])
def test_sdpa_errors(call, exc, match):
    q, k, v = tp.randn(3, 2, 4, 8), tp.randn(3, 2, 5, 8), tp.randn(3, 2, 5, 6)
    with pytest.raises(exc, match=match):
        call(q, k, v)


def test_sdpa_vmap_jvp_and_gradcheck():
    rng = np.random.default_rng(4)
    q, k, v = (tp.tensor(_arr(rng, *s)) for s in ((3, 4, 6), (3, 5, 6), (3, 5, 2)))
    mask = tp.tensor(rng.random((4, 5)) > 0.3)

    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    np.testing.assert_allclose(tp.func.vmap(f)(q, k, v).numpy(), f(q, k, v).numpy(),
                               atol=1e-13)
    ts = [tp.tensor(_arr(rng, *x.shape)) for x in (q, k, v)]
    _, j = tp.func.jvp(f, (q, k, v), tuple(ts))
    eps = 1e-6                       # central differences in float64
    hi = f(*(x + eps * t for x, t in zip((q, k, v), ts)))
    lo = f(*(x - eps * t for x, t in zip((q, k, v), ts)))
    np.testing.assert_allclose(j.numpy(), ((hi - lo) / (2 * eps)).numpy(), atol=1e-8)
    small = [tp.tensor(_arr(rng, *s), requires_grad=True) for s in ((2, 3, 4), (2, 3, 4),
                                                                    (2, 3, 2))]
    assert tp.autograd.gradcheck(lambda a, b, c: F.scaled_dot_product_attention(
        a, b, c, is_causal=True), small)


# ---------------------------------------------------------------- MultiheadAttention
def _copy(tm, m):
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    assert list(m.state_dict()) == list(tm.state_dict())


def _check_mha(tm, m, q, k, v, rng, **extra):
    tkw = {n: torch.tensor(a) if isinstance(a, np.ndarray) else a for n, a in extra.items()}
    pkw = {n: tp.tensor(a) if isinstance(a, np.ndarray) else a for n, a in extra.items()}
    ins = [_both(a) for a in (q, k, v)]
    to, tw = tm(*(t for t, _ in ins), **tkw)
    o, w = m(*(p for _, p in ins), **pkw)
    _close(to, o)
    _close(tw, w)
    g = _arr(rng, *to.shape)
    (to * torch.tensor(g)).sum().backward()
    (o * tp.tensor(g)).sum().backward()
    for t, p in ins:
        _close(t.grad, p.grad)
    for (n, tp_), (n2, p) in zip(tm.named_parameters(), m.named_parameters()):
        assert n == n2
        _close(tp_.grad, p.grad)
    tm.zero_grad()
    m.zero_grad()


MHA_KW = [{}, {"kdim": 5, "vdim": 3}, {"add_bias_kv": True, "add_zero_attn": True},
          {"bias": False, "batch_first": True}]


@pytest.mark.parametrize("kw", MHA_KW)
def test_mha_matches_torch(kw):
    rng = np.random.default_rng(5)
    tm = torch.nn.MultiheadAttention(8, 2, **kw).double()
    m = tp.nn.MultiheadAttention(8, 2, **kw).double()
    _copy(tm, m)
    q, k, v = _arr(rng, 4, 3, 8), _arr(rng, 6, 3, kw.get("kdim", 8)), \
        _arr(rng, 6, 3, kw.get("vdim", 8))
    if kw.get("batch_first"):
        q, k, v = (a.transpose(1, 0, 2).copy() for a in (q, k, v))
    kpm = rng.random((3, 6)) > 0.7
    am = rng.random((4, 6)) > 0.8
    fam = rng.standard_normal((6, 4, 6))
    for train in (True, False):
        tm.train(train)
        m.train(train)
        for extra in ({}, {"key_padding_mask": kpm}, {"attn_mask": am},
                      {"attn_mask": fam, "need_weights": False},
                      {"attn_mask": am, "key_padding_mask": kpm, "need_weights": False},
                      {"key_padding_mask": np.where(kpm, -np.inf, 0.0),
                       "average_attn_weights": False}):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _check_mha(tm, m, q, k, v, rng, **extra)


def test_mha_self_attention_unbatched_and_causal():
    rng = np.random.default_rng(6)
    tm = torch.nn.MultiheadAttention(6, 3).double()
    m = tp.nn.MultiheadAttention(6, 3).double()
    _copy(tm, m)
    x = _arr(rng, 5, 6)
    causal = np.triu(np.full((5, 5), -np.inf), 1)
    for extra in ({}, {"key_padding_mask": rng.random(5) > 0.6},
                  {"attn_mask": causal, "is_causal": True, "need_weights": False},
                  {"attn_mask": rng.standard_normal((3, 5, 5))}):
        (tx, px) = _both(x)
        tkw = {n: torch.tensor(a) if isinstance(a, np.ndarray) else a for n, a in extra.items()}
        pkw = {n: tp.tensor(a) if isinstance(a, np.ndarray) else a for n, a in extra.items()}
        to, tw = tm(tx, tx, tx, **tkw)
        o, w = m(px, px, px, **pkw)
        _close(to, o)
        _close(tw, w)
        to.sum().backward()
        o.sum().backward()
        _close(tx.grad, px.grad)
        _close(tm.in_proj_weight.grad, m.in_proj_weight.grad)
        tm.zero_grad()
        m.zero_grad()


def test_mha_functional_static_kv():
    rng = np.random.default_rng(7)
    tm = torch.nn.MultiheadAttention(4, 2).double()
    args = [_arr(rng, 3, 2, 4)] * 3
    sk, sv = _arr(rng, 4, 5, 2), _arr(rng, 4, 5, 2)
    t_out = TF.multi_head_attention_forward(
        *(torch.tensor(a) for a in args), 4, 2, tm.in_proj_weight, tm.in_proj_bias, None,
        None, False, 0.0, tm.out_proj.weight, tm.out_proj.bias,
        static_k=torch.tensor(sk), static_v=torch.tensor(sv))
    p = {n: tp.tensor(a.detach().numpy()) for n, a in tm.named_parameters()}
    out = F.multi_head_attention_forward(
        *(tp.tensor(a) for a in args), 4, 2, p["in_proj_weight"], p["in_proj_bias"], None,
        None, False, 0.0, p["out_proj.weight"], p["out_proj.bias"],
        static_k=tp.tensor(sk), static_v=tp.tensor(sv))
    _close(t_out[0], out[0])
    _close(t_out[1], out[1])


def test_mha_dropout_train_and_eval():
    m = tp.nn.MultiheadAttention(8, 2, dropout=0.5)
    x = tp.randn(4, 3, 8)
    tp.manual_seed(0)
    a = m(x, x, x)[0]
    tp.manual_seed(0)
    b = m(x, x, x)[0]
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    m.eval()
    c, d = m(x, x, x)[0], m(x, x, x)[0]
    np.testing.assert_array_equal(c.detach().numpy(), d.detach().numpy())
    assert not np.allclose(a.detach().numpy(), c.detach().numpy())


def test_mha_init_and_repr():
    m = tp.nn.MultiheadAttention(8, 2, add_bias_kv=True, kdim=4)
    assert m.in_proj_weight is None and m.q_proj_weight.shape == (8, 8)
    assert m.k_proj_weight.shape == (8, 4) and m.bias_k.shape == (1, 1, 8)
    assert np.all(m.in_proj_bias.detach().numpy() == 0)
    assert np.all(m.out_proj.bias.detach().numpy() == 0)
    bound = np.sqrt(6 / 16)
    assert np.abs(m.q_proj_weight.detach().numpy()).max() <= bound
    assert "NonDynamicallyQuantizableLinear(in_features=8, out_features=8" in repr(m)
    assert tp.nn.MultiheadAttention(8, 2).bias_k is None


@pytest.mark.parametrize("call,exc,match", [
    (lambda: tp.nn.MultiheadAttention(10, 3), AssertionError, "divisible by num_heads"),
    (lambda: tp.nn.MultiheadAttention(0, 3), ValueError, "greater than 0"),
    (lambda: tp.nn.MultiheadAttention(8, 0), ValueError, "greater than 0"),
])
def test_mha_constructor_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


@pytest.mark.parametrize("kw,exc,match", [
    ({"q": (4, 2, 6)}, AssertionError, "was expecting embedding dimension of 8, but got 6"),
    ({"k": (3, 2, 8)}, AssertionError, "does not match value shape"),
    ({"attn_mask": tp.zeros(3, 4)}, RuntimeError, "The shape of the 2D attn_mask"),
    ({"attn_mask": tp.zeros(5, 4, 4)}, RuntimeError, "The shape of the 3D attn_mask"),
    ({"attn_mask": tp.zeros(1, 1, 4, 4)}, AssertionError, "2-D or 3-D"),
    ({"key_padding_mask": tp.zeros(2, 3, dtype=tp.bool)}, AssertionError,
     "key_padding_mask shape"),
    ({"key_padding_mask": tp.zeros(2, 4, dtype=tp.int64)}, AssertionError,
     "only bool and floating types of key_padding_mask"),
    ({"is_causal": True}, RuntimeError, "Need attn_mask"),
    ({"q": (4, 8)}, AssertionError, "unbatched"),
    ({"q": (2, 4, 2, 8)}, AssertionError, "unbatched 2D or batched 3D"),
])
def test_mha_forward_errors(kw, exc, match):
    m = tp.nn.MultiheadAttention(8, 2)
    q = tp.randn(*kw.pop("q", (4, 2, 8)))
    k = tp.randn(*kw.pop("k", (4, 2, 8)))
    with pytest.raises(exc, match=match):
        m(q, k, tp.randn(4, 2, 8), **kw)
