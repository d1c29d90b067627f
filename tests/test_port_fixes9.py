"""What a hostile port of PyTorch scripts found in tensorplay.nn / nn.functional
(issue 9, second step), each checked against torch 2.13 or a closed form."""
import warnings

import numpy as np
import pytest

import tensorplay as tp

torch = pytest.importorskip("torch")
F = tp.nn.functional
TF = torch.nn.functional
DTYPES = [(tp.float32, torch.float32), (tp.float64, torch.float64)]


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


# ---------------------------------------------------------------- 1. BCE at 0 and 1
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("dts", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("weighted", [False, True])
def test_bce_gradient_at_the_edges(reduction, dts, weighted):
    tdt, Tdt = dts
    x = np.array([0.0, 1.0, 0.5, 1e-13, 0.0, 1.0, 0.3], dtype=np.float64)
    y = np.array([0.0, 1.0, 0.3, 1.0, 1.0, 0.0, 0.25])
    w = np.array([1.0, 2.0, 0.5, 1.5, 3.0, 0.25, 1.0])
    g = np.linspace(0.5, 2.0, x.size)
    res = []
    for lib, dt in ((tp, tdt), (torch, Tdt)):
        xi = lib.tensor(x, dtype=dt, requires_grad=True)
        kw = {"weight": lib.tensor(w, dtype=dt)} if weighted else {}
        out = lib.nn.functional.binary_cross_entropy(xi, lib.tensor(y, dtype=dt),
                                                     reduction=reduction, **kw)
        out.backward(lib.tensor(g, dtype=dt) if reduction == "none" else None)
        res.append((_np(out), _np(xi.grad)))
    rtol = 1e-5 if tdt == tp.float32 else 1e-10
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=rtol)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=rtol)


def test_bce_edge_closed_form_and_target_gradient():
    # torch's backward: g (x - y) / max(x (1 - x), 1e-12); the forward clamps each
    # log at -100.  The target's gradient at exactly 0/1 is the clamped
    # log(1-x) - log(x) (+-100; torch: +-inf, see DECISIONS).
    x = tp.tensor([0.0, 1.0, 0.0], dtype=tp.float64, requires_grad=True)
    y = tp.tensor([0.25, 0.75, 1.0], dtype=tp.float64, requires_grad=True)
    loss = F.binary_cross_entropy(x, y, reduction="none")
    np.testing.assert_allclose(_np(loss), [25.0, 25.0, 100.0])
    gx, gy = tp.autograd.grad(loss.sum(), (x, y))
    np.testing.assert_allclose(_np(gx), [-0.25e12, 0.25e12, -1e12])
    np.testing.assert_allclose(_np(gy), [100.0, -100.0, 100.0])


def test_bce_interior_gradcheck_and_vmap():
    x = tp.tensor([[0.2, 0.7], [0.4, 0.9]], dtype=tp.float64, requires_grad=True)
    y = tp.tensor([[0.1, 0.5], [1.0, 0.0]], dtype=tp.float64)
    assert tp.autograd.gradcheck(lambda a: F.binary_cross_entropy(a, y), (x,))
    assert tp.autograd.gradgradcheck(lambda a: F.binary_cross_entropy(a, y), (x,))
    xe = tp.tensor([[0.0, 0.5], [0.2, 1.0]])
    got = tp.func.vmap(tp.func.grad(lambda a, b: F.binary_cross_entropy(a, b)))(xe, y.float())
    xt = torch.tensor(_np(xe), requires_grad=True)
    TF.binary_cross_entropy(xt, torch.tensor(_np(y)).float(), reduction="none").sum().backward()
    np.testing.assert_allclose(_np(got), xt.grad.numpy() / 2, rtol=1e-6)


# ---------------------------------------------------------------- 2. conv arguments
@pytest.mark.parametrize("name,shape", [("Conv1d", (1, 4, 6)), ("Conv2d", (1, 4, 6, 6)),
                                        ("ConvTranspose1d", (1, 4, 6)),
                                        ("ConvTranspose2d", (1, 4, 6, 6))])
@pytest.mark.parametrize("kw", [dict(kernel_size=0), dict(kernel_size=3, stride=0),
                                dict(kernel_size=3, dilation=0),
                                dict(kernel_size=3, padding=-1)],
                         ids=["k0", "s0", "d0", "p-1"])
def test_conv_bad_geometry_raises_in_forward_like_torch(name, shape, kw):
    # torch 2.13 accepts these at construction and refuses them in the forward
    m = getattr(tp.nn, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # "Initializing zero-element tensors"
        mod, tmod = m(4, 6, **kw), getattr(torch.nn, name)(4, 6, **kw)
    with pytest.raises(RuntimeError):
        tmod(torch.zeros(shape))
    op = name[:-2].lower().replace("convtranspose", "conv_transpose") + name[-2:]
    with pytest.raises(RuntimeError, match=op + r"\(\)"):
        mod(tp.zeros(shape))


@pytest.mark.parametrize("kw", [dict(groups=0), dict(groups=3), dict(kernel_size=-1)])
def test_conv_construction_errors_like_torch(kw):
    kw = {"kernel_size": 3, **kw}
    for name in ("Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d"):
        with pytest.raises((ValueError, RuntimeError)) as want:
            getattr(torch.nn, name)(4, 6, **kw)
        with pytest.raises(want.type):
            getattr(tp.nn, name)(4, 6, **kw)


def test_functional_conv_zero_kernel():
    with pytest.raises(RuntimeError, match=r"conv1d\(\): kernel size should be greater"):
        F.conv1d(tp.zeros(1, 4, 6), tp.zeros(6, 4, 0))
    with pytest.raises(RuntimeError, match=r"conv2d\(\): kernel size .* \[3, 0\]"):
        F.conv2d(tp.zeros(1, 4, 6, 6), tp.zeros(6, 4, 3, 0))
    with pytest.raises(RuntimeError, match=r"conv_transpose2d\(\): kernel size"):
        F.conv_transpose2d(tp.zeros(1, 4, 6, 6), tp.zeros(4, 6, 0, 2))


# ---------------------------------------------------------------- 3. kl_div target grad
@pytest.mark.parametrize("log_target", [False, True])
@pytest.mark.parametrize("reduction", ["sum", "batchmean"])
def test_kl_div_gradient_at_zero_targets(log_target, reduction):
    inp = np.array([[-1.0, -2.0, -0.5], [-0.3, -1.2, -3.0]])
    tgt = np.array([[0.0, 0.5, 0.2], [0.0, 0.0, 0.7]])
    res = []
    for lib in (tp, torch):
        i = lib.tensor(inp, requires_grad=True)
        t = lib.tensor(tgt, requires_grad=True)
        out = lib.nn.functional.kl_div(i, t, reduction=reduction, log_target=log_target)
        out.backward()
        res.append([_np(out), _np(i.grad), _np(t.grad)])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-12)      # nan where torch's is nan
    assert np.isnan(res[0][2]).any() == (not log_target)


# ---------------------------------------------------------------- 4. empty batches
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batchnorm_training_on_an_empty_batch(momentum):
    out = []
    for lib in (tp, torch):
        bn = lib.nn.BatchNorm2d(3, momentum=momentum)
        with lib.no_grad():
            bn.running_mean.fill_(5.0)
            bn.running_var.fill_(2.0)
        x = lib.zeros(0, 3, 2, 2, requires_grad=True)
        y = bn(x)
        y.sum().backward()
        out.append((tuple(y.shape), _np(bn.running_mean), _np(bn.running_var),
                    int(bn.num_batches_tracked), tuple(x.grad.shape), _np(bn.weight.grad),
                    _np(bn.bias.grad)))
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)


def test_empty_normalisation_inputs_match_torch():
    cases = [lambda L, x: L.nn.functional.batch_norm(x, L.zeros(3), L.ones(3), training=True),
             lambda L, x: L.nn.BatchNorm1d(3)(x),
             lambda L, x: L.nn.LayerNorm(3)(x),
             lambda L, x: L.nn.GroupNorm(1, 3)(x.unsqueeze(-1))]
    for f in cases:
        for shape in ((0, 3), ):
            a, b = f(tp, tp.zeros(shape)), f(torch, torch.zeros(shape))
            assert tuple(a.shape) == tuple(b.shape)
    a = tp.nn.BatchNorm1d(3)(tp.zeros(2, 3, 0))
    assert tuple(a.shape) == tuple(torch.nn.BatchNorm1d(3)(torch.zeros(2, 3, 0)).shape)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        tp.nn.BatchNorm1d(3)(tp.zeros(1, 3))


# ---------------------------------------------------------------- 7. implicit softmax dim
@pytest.mark.parametrize("ndim", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
def test_softmax_without_dim(ndim, name):
    a = np.asarray(np.random.default_rng(ndim).standard_normal((2, 3, 2, 3)[:ndim]))
    with pytest.warns(UserWarning, match=f"Implicit dimension choice for {name}") as rec:
        got = getattr(F, name)(tp.tensor(a))
    assert rec[0].filename == __file__                   # the caller's line (stacklevel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = getattr(TF, name)(torch.tensor(a))
    np.testing.assert_allclose(_np(got), want.numpy(), rtol=1e-12)
    mod = {"softmax": "Softmax", "log_softmax": "LogSoftmax", "softmin": "Softmin"}[name]
    with pytest.warns(UserWarning, match="Implicit dimension"):
        np.testing.assert_allclose(_np(getattr(tp.nn, mod)()(tp.tensor(a))), want.numpy(),
                                   rtol=1e-12)


def test_softmax_with_dim_and_dtype_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = F.softmax(tp.ones(2, 3), dim=1, dtype=tp.float64)
        z = F.softmin(tp.ones(2, 3), 0)
    assert y.dtype == tp.float64
    np.testing.assert_allclose(_np(z), np.full((2, 3), 0.5))


# ---------------------------------------------------------------- 8. dtype strictness
def _modules(L):
    return {"BatchNorm1d": (L.nn.BatchNorm1d(3), (2, 3)),
            "BatchNorm1d-eval": (L.nn.BatchNorm1d(3).eval(), (2, 3)),
            "BatchNorm1d-noaffine": (L.nn.BatchNorm1d(3, affine=False), (2, 3)),
            "BatchNorm2d": (L.nn.BatchNorm2d(3), (2, 3, 2, 2)),
            "BatchNorm-nostats": (L.nn.BatchNorm1d(3, affine=False,
                                                   track_running_stats=False), (2, 3)),
            "LayerNorm": (L.nn.LayerNorm(3), (2, 3)),
            "LayerNorm-noaffine": (L.nn.LayerNorm(3, elementwise_affine=False), (2, 3)),
            "GroupNorm": (L.nn.GroupNorm(1, 3), (2, 3)),
            "GroupNorm-noaffine": (L.nn.GroupNorm(1, 3, affine=False), (2, 3)),
            "Linear": (L.nn.Linear(3, 2), (2, 3)),
            "Conv1d": (L.nn.Conv1d(3, 2, 1), (2, 3, 4)),
            "Conv2d": (L.nn.Conv2d(3, 2, 1), (2, 3, 4, 4)),
            "ConvTranspose1d": (L.nn.ConvTranspose1d(3, 2, 1), (2, 3, 4)),
            "LSTM": (L.nn.LSTM(3, 2), (4, 2, 3))}


@pytest.mark.parametrize("name", sorted(_modules(tp)))
@pytest.mark.parametrize("order", ["f32-module", "f64-module"])
def test_mixed_dtypes_refused_where_torch_refuses(name, order):
    mdt, xdt = (0, 1) if order == "f32-module" else (1, 0)
    (tm, shape), (Tm, _) = _modules(tp)[name], _modules(torch)[name]
    tm, Tm = tm.to([tp.float32, tp.float64][mdt]), Tm.to([torch.float32, torch.float64][mdt])
    try:
        Tm(torch.ones(shape, dtype=[torch.float32, torch.float64][xdt]))
        refused = None
    except (RuntimeError, ValueError) as e:
        refused = type(e)
    x = tp.ones(shape, dtype=[tp.float32, tp.float64][xdt])
    if refused is None:
        out = tm(x)
        assert out.dtype == x.dtype
    else:
        with pytest.raises(refused, match="dtype|type"):
            tm(x)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("shape,batch_first", [((0, 2, 3), False), ((2, 0, 3), True),
                                               ((0, 3), False)])
def test_rnn_on_an_empty_sequence_raises_like_torch(name, shape, batch_first):
    with pytest.raises(RuntimeError, match="sequence length to be larger than 0"):
        getattr(torch.nn, name)(3, 4, batch_first=batch_first)(torch.zeros(shape))
    with pytest.raises(RuntimeError, match=f"{name}: Expected sequence length to be larger"):
        getattr(tp.nn, name)(3, 4, batch_first=batch_first)(tp.zeros(shape))
    # an empty batch is fine in both
    out, _ = getattr(tp.nn, name)(3, 4)(tp.zeros(5, 0, 3))
    assert tuple(out.shape) == (5, 0, 4)


# ---------------------------------------------------------------- 5. foreign arrays
@pytest.mark.parametrize("tdt,want", [(torch.float32, tp.float32), (torch.float64, tp.float64),
                                      (torch.int64, tp.int64), (torch.int32, tp.int32),
                                      (torch.bool, tp.bool)])
def test_tensor_of_a_torch_tensor_keeps_its_dtype(tdt, want):
    src = torch.arange(6).reshape(2, 3).to(tdt)
    t = tp.tensor(src)
    assert t.dtype == want and tuple(t.shape) == (2, 3)
    np.testing.assert_array_equal(t.numpy(), src.numpy())
    src.view(-1)[0] = 1                                   # tensor() copies
    assert t.numpy().reshape(-1)[0] == 0
    a = tp.as_tensor(src)                                 # as_tensor shares (DLPack)
    src.view(-1)[1] = 0
    assert a.numpy().reshape(-1)[1] == 0
    assert tp.tensor(src, dtype=tp.float64).dtype == tp.float64


def test_tensor_of_foreign_objects():
    g = torch.tensor([1.5, 2.5], requires_grad=True)      # values only, as for tp Tensors
    t = tp.tensor(g, requires_grad=True)
    assert t.requires_grad and t.is_leaf
    np.testing.assert_array_equal(t.detach().numpy(), [1.5, 2.5])
    np.testing.assert_array_equal(tp.tensor(torch.arange(8.)[::2]).numpy(), [0, 2, 4, 6])
    assert tp.tensor(torch.tensor(2.5)).shape == ()

    class OnlyArray:
        def __array__(self, dtype=None, copy=None):
            return np.array([[1, 2]], dtype=np.int32)
    assert tp.tensor(OnlyArray()).dtype == tp.int32
    with pytest.raises(TypeError, match=r"tensor\(\).*float16"):
        tp.tensor(torch.ones(2, dtype=torch.float16))
    with pytest.raises(TypeError, match=r"tensor\(\).*torch.Tensor"):
        tp.tensor(torch.ones(2, dtype=torch.bfloat16))
    with pytest.raises(TypeError, match=r"a list holding torch.Tensor"):
        tp.tensor([torch.ones(1), torch.ones(1)])
    with pytest.raises(TypeError, match=r"__array__ or __dlpack__"):
        tp.as_tensor(object())
    with pytest.raises(TypeError, match=r"from_numpy\(\): expected an np.ndarray, got "
                                        r"torch.Tensor; .*as_tensor"):
        tp.from_numpy(torch.ones(2))
    with pytest.raises(TypeError, match=r"from_numpy\(\): expected an np.ndarray, got list$"):
        tp.from_numpy([1.0])


# ---------------------------------------------------------------- 6. nn name hints
def _nn_modules():
    import torch.nn.init  # noqa: F401
    return [(tp.nn, torch.nn), (tp.nn.functional, torch.nn.functional),
            (tp.nn.init, torch.nn.init), (tp.nn.utils, torch.nn.utils)]


def test_nn_hint_tables_are_torch_names():
    from tensorplay import _torch_names_nn as names
    for table, (_, tmod) in zip((names.NN, names.FUNCTIONAL, names.INIT, names.UTILS),
                                _nn_modules()):
        assert table and table <= set(dir(tmod)), sorted(table - set(dir(tmod)))


def test_nn_missing_names_say_pytorch_has_them():
    from tensorplay import _torch_names_nn as names
    tables = (names.NN, names.FUNCTIONAL, names.INIT, names.UTILS)
    hinted = 0
    for table, (mod, tmod) in zip(tables, _nn_modules()):
        for name in sorted(table):
            try:
                getattr(mod, name)                     # present now: no hint to give
            except AttributeError as e:
                hinted += 1
                assert str(e).endswith(f"{tmod.__name__}.{name} exists in PyTorch; "
                                       f"tensorplay does not implement it yet"), str(e)
        with pytest.raises(AttributeError) as e:
            getattr(mod, "surely_not_a_torch_name")
        assert "PyTorch" not in str(e.value)
    assert hinted > 10
    with pytest.raises(AttributeError, match="torch.nn.functional.ctc_loss exists in PyTorch"):
        F.ctc_loss        # noqa: B018
    assert tp.nn.utils.rnn.__name__ == "tensorplay.nn.utils.rnn"     # submodules import
    assert not hasattr(tp.nn.functional, "__wrapped__")
