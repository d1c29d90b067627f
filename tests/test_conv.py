"""Convolutions (tensorplay/_ops/conv.py, conv_api.py): values against the
direct-loop numpy references of tests/op_table/conv.py and against
torch.nn.functional when installed, the errors (PyTorch's exception types),
vmap, threads, the blocking over samples and the numpy-matmul fallback.  The
op table (tests/test_ops.py) checks the VJPs, JVPs and second order of its rows
against finite differences."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay._ops import conv as _c
from tensorplay._ops.conv_api import conv2d_input, conv2d_weight
from tensorplay.autograd import forward_ad as fwAD

from op_table.conv import (conv1d_ref, conv2d_ref, conv_transpose1d_ref, conv_transpose2d_ref,
                           fold_ref, unfold_ref)

F = tp.nn.functional
RNG = np.random.default_rng(0)


def _r(*shape):
    return RNG.standard_normal(shape)


def _t(a, dtype=np.float64):
    return tp.from_numpy(np.asarray(a, dtype))


def _close(got, want, dtype=np.float64):
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=tol, atol=tol * 10)


# (x shape, w shape, bias?, kwargs)
CONV2D = [
    ((2, 3, 8, 8), (4, 3, 3, 3), True, {}),
    ((2, 3, 8, 7), (4, 3, 3, 3), True, {"padding": 1}),
    ((2, 3, 9, 8), (4, 3, 3, 2), False, {"stride": 2, "padding": (1, 0)}),
    ((1, 2, 9, 9), (2, 2, 3, 3), True, {"dilation": 2, "padding": 2}),
    ((2, 4, 6, 6), (6, 2, 3, 3), True, {"groups": 2, "padding": 1, "stride": (1, 2)}),
    ((2, 4, 6, 6), (4, 1, 3, 3), True, {"groups": 4, "padding": 1}),            # depthwise
    ((1, 2, 6, 5), (3, 2, 2, 4), True, {"padding": "same"}),                    # even kernel
    ((1, 2, 7, 7), (3, 2, 4, 3), False, {"padding": "same", "dilation": (1, 2)}),
    ((1, 2, 6, 5), (3, 2, 3, 3), True, {"padding": "valid"}),
    ((4, 6, 6), (2, 2, 3, 3), True, {"groups": 2}),                             # unbatched
    ((2, 3, 5, 5), (4, 3, 1, 1), True, {}),                                     # 1x1
    ((2, 2, 7, 8), (3, 2, 3, 3), True, {"stride": 3, "padding": 1}),            # remainder
    ((2, 2, 4, 4), (3, 2, 5, 5), False, {"padding": 2}),                        # kernel = padded
    # output rows of 16 and more take the row loops instead of the index table
    ((1, 2, 6, 40), (3, 2, 3, 3), True, {"stride": (1, 2), "padding": 1}),
    ((1, 2, 5, 36), (2, 2, 3, 2), True, {"padding": "same"}),                   # shifted run
    ((1, 2, 5, 36), (2, 2, 2, 3), False, {"padding": (0, 1), "dilation": (2, 3)}),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,bias,kw", CONV2D)
def test_conv2d_values(xs, ws, bias, kw, dtype):
    x, w = _r(*xs), _r(*ws)
    b = _r(ws[0]) if bias else None
    want = conv2d_ref(x, w, b, **kw)
    got = F.conv2d(_t(x, dtype), _t(w, dtype), None if b is None else _t(b, dtype), **kw)
    assert got.dtype == (tp.float32 if dtype == np.float32 else tp.float64)
    _close(got, want, dtype)
    assert tp.conv2d is F.conv2d


def test_conv2d_noncontiguous_inputs():
    x, w, b = _r(2, 3, 6, 7), _r(4, 3, 3, 3), _r(4)
    xt = _t(np.transpose(x, (0, 1, 3, 2)).copy()).transpose(2, 3)      # transposed view
    wt = _t(w).permute(0, 1, 3, 2)
    w_np = np.transpose(w, (0, 1, 3, 2))
    assert not xt.is_contiguous() and not wt.is_contiguous()
    _close(F.conv2d(xt, wt, _t(b), padding=1), conv2d_ref(x, w_np, b, padding=1))
    xs = _t(np.repeat(x, 2, axis=3))[..., ::2]                         # strided slice
    _close(F.conv2d(xs, _t(w), _t(b)), conv2d_ref(np.repeat(x, 2, axis=3)[..., ::2], w, b))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv1d_values(dtype):
    for xs, ws, kw in [((2, 3, 10), (4, 3, 3), {}), ((2, 4, 11), (4, 2, 4),
                                                      {"stride": 2, "padding": 3,
                                                       "dilation": 2, "groups": 2}),
                       ((3, 9), (2, 3, 4), {"padding": "same"}),
                       ((1, 2, 9), (3, 2, 2), {"padding": "valid", "stride": (2,)})]:
        x, w, b = _r(*xs), _r(*ws), _r(ws[0])
        _close(F.conv1d(_t(x, dtype), _t(w, dtype), _t(b, dtype), **kw),
               conv1d_ref(x, w, b, **kw), dtype)


CONVT = [
    ((2, 3, 4, 4), (3, 2, 3, 3), {}),
    ((2, 3, 4, 5), (3, 2, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1}),
    ((1, 4, 3, 3), (4, 1, 2, 3), {"groups": 2, "stride": (2, 3), "dilation": (2, 1)}),
    ((1, 2, 3, 3), (2, 2, 2, 2), {"dilation": 3, "output_padding": 2}),   # op >= stride
    ((2, 3, 3), (2, 3, 2, 2), {"stride": 2}),                              # unbatched
    ((1, 2, 3, 20), (2, 2, 3, 3), {"stride": 2, "padding": 1}),            # long rows
    ((1, 2, 3, 20), (2, 1, 3, 2), {"padding": (1, 0), "dilation": (1, 2)}),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,kw", CONVT)
def test_conv_transpose2d_values(xs, ws, kw, dtype):
    groups = kw.get("groups", 1)
    x, w, b = _r(*xs), _r(*ws), _r(ws[1] * groups)
    _close(F.conv_transpose2d(_t(x, dtype), _t(w, dtype), _t(b, dtype), **kw),
           conv_transpose2d_ref(x, w, b, **kw), dtype)


def test_conv_transpose1d_values():
    x, w, b = _r(2, 3, 5), _r(3, 2, 3), _r(2)
    kw = {"stride": 2, "padding": 1, "output_padding": 1}
    _close(F.conv_transpose1d(_t(x), _t(w), _t(b), **kw), conv_transpose1d_ref(x, w, b, **kw))


def test_conv_transpose_is_the_adjoint_of_conv():
    """<conv2d(x, w), g> == <x, conv_transpose2d(g, w)> with PyTorch's output_padding
    bringing back the input size (an exact identity between tensorplay's own ops)."""
    x, w = _r(2, 3, 10, 8), _r(4, 3, 3, 2)
    y = F.conv2d(_t(x), _t(w), stride=2, padding=1)
    g = _r(*y.shape)
    z = F.conv_transpose2d(_t(g), _t(w), stride=2, padding=1, output_padding=(1, 0))
    assert z.shape == x.shape
    assert np.isclose(np.sum(y.numpy() * g), np.sum(x * z.numpy()), rtol=1e-12)


def test_unfold_fold_values_and_adjoint():
    x = _r(2, 3, 6, 5)
    kw = {"kernel_size": (2, 3), "dilation": (2, 1), "padding": 1, "stride": (1, 2)}
    cols = F.unfold(_t(x), **kw)
    _close(cols, unfold_ref(x, **kw))
    c = _r(*cols.shape)
    back = F.fold(_t(c), (6, 5), **kw)
    _close(back, fold_ref(c, (6, 5), **kw))
    assert np.isclose(np.sum(cols.numpy() * c), np.sum(x * back.numpy()), rtol=1e-12)
    # unbatched
    _close(F.unfold(_t(x[0]), 2), unfold_ref(x[0], 2))
    _close(F.fold(_t(c[0]), (6, 5), **kw), fold_ref(c[0], (6, 5), **kw))


def test_grad_functions_match_autograd():
    x, w = _t(_r(2, 4, 7, 6)).requires_grad_(), _t(_r(6, 2, 3, 2)).requires_grad_()
    kw = {"stride": 2, "padding": 1, "dilation": (1, 2), "groups": 2}
    y = F.conv2d(x, w, **kw)
    g = _t(_r(*y.shape))
    gx, gw = tp.autograd.grad(y, (x, w), g)
    _close(conv2d_input(x.shape, w.detach(), g, **kw), gx.numpy())
    _close(conv2d_weight(x.detach(), w.shape, g, **kw), gw.numpy())


def test_second_order_and_forward_mode():
    """d/dx <grad_w <conv(x, w), g>, v> against finite differences; JVP in both
    modes against the VJP (everything through the three primitives)."""
    x, w, v = _r(1, 2, 5, 5), _r(3, 2, 3, 3), _r(3, 2, 3, 3)
    g = _r(1, 3, 3, 3)

    def inner(xa):
        xt = _t(xa).requires_grad_()
        wt = _t(w).requires_grad_()
        (gw,) = tp.autograd.grad(F.conv2d(xt, wt), (wt,), _t(g), create_graph=True)
        return xt, (gw * _t(v)).sum()

    xt, s = inner(x)
    (hx,) = tp.autograd.grad(s, (xt,))
    t = _r(*x.shape)
    eps = 1e-6
    fd = (inner(x + eps * t)[1].item() - inner(x - eps * t)[1].item()) / (2 * eps)
    assert np.isclose(np.sum(hx.numpy() * t), fd, rtol=1e-6)
    with fwAD.dual_level():
        xd = fwAD.make_dual(_t(x), _t(t))
        wd = fwAD.make_dual(_t(w), _t(v))
        tan = fwAD.unpack_dual(F.conv2d(xd, wd, padding=1)).tangent
    want = conv2d_ref(t, w, padding=1) + conv2d_ref(x, v, padding=1)
    _close(tan, want)


# ---------------------------------------------------------------- errors
def _errors(F=F, _t=_t):
    """(name, call, exception) for tensorplay's F (or torch's, given its F and a
    numpy-to-tensor function)."""
    x, w = _t(_r(2, 3, 5, 5)), _t(_r(4, 3, 3, 3))
    return [
        ("not_tensor", lambda: F.conv2d(np.zeros((2, 3, 5, 5)), w), TypeError),
        ("int_input", lambda: F.conv2d(x.long(), w), RuntimeError),
        ("dtype_mismatch", lambda: F.conv2d(x.float(), w), RuntimeError),
        ("bias_dtype", lambda: F.conv2d(x, w, _t(_r(4), np.float32)), RuntimeError),
        ("bias_shape", lambda: F.conv2d(x, w, _t(_r(3))), RuntimeError),
        ("input_dims", lambda: F.conv2d(x[0, 0], w), RuntimeError),
        ("weight_dims", lambda: F.conv2d(x, w[0]), RuntimeError),
        ("channels", lambda: F.conv2d(x[:, :2], w), RuntimeError),
        ("groups_channels", lambda: F.conv2d(x, w, groups=2), RuntimeError),
        ("groups_zero", lambda: F.conv2d(x, w, groups=0), RuntimeError),
        ("stride_zero", lambda: F.conv2d(x, w, stride=0), RuntimeError),
        ("stride_negative", lambda: F.conv2d(x, w, stride=(1, -1)), RuntimeError),
        ("dilation_zero", lambda: F.conv2d(x, w, dilation=0), RuntimeError),
        ("padding_negative", lambda: F.conv2d(x, w, padding=-1), RuntimeError),
        ("padding_len", lambda: F.conv2d(x, w, padding=(1, 1, 1)), RuntimeError),
        ("stride_float", lambda: F.conv2d(x, w, stride=1.5), TypeError),
        ("same_strided", lambda: F.conv2d(x, w, padding="same", stride=2), RuntimeError),
        ("bad_string", lambda: F.conv2d(x, w, padding="full"), RuntimeError),
        ("kernel_too_big", lambda: F.conv2d(x, _t(_r(4, 3, 6, 6))), RuntimeError),
        ("kernel_too_big_dil", lambda: F.conv2d(x, w, dilation=3), RuntimeError),
        ("conv1d_dims", lambda: F.conv1d(x, w), RuntimeError),
        ("convt_channels", lambda: F.conv_transpose2d(x, _t(_r(2, 3, 3, 3))), RuntimeError),
        ("convt_outpad", lambda: F.conv_transpose2d(x, _t(_r(3, 2, 3, 3)), output_padding=1),
         RuntimeError),
        ("convt_too_small", lambda: F.conv_transpose2d(x, _t(_r(3, 2, 1, 1)), padding=3),
         RuntimeError),
        ("unfold_dims", lambda: F.unfold(x[0, 0], 2), RuntimeError),
        ("unfold_too_big", lambda: F.unfold(x, 6), RuntimeError),
        ("unfold_kernel_zero", lambda: F.unfold(x, 0), RuntimeError),
        ("fold_divisible", lambda: F.fold(_t(_r(1, 7, 16)), 5, 2), RuntimeError),
        ("fold_blocks", lambda: F.fold(_t(_r(1, 8, 15)), 5, 2), RuntimeError),
    ]


@pytest.mark.parametrize("name,call,exc", _errors(), ids=[e[0] for e in _errors()])
def test_errors(name, call, exc):
    with pytest.raises(exc) as info:
        call()
    if name not in ("not_tensor", "stride_float"):
        msg = str(info.value)
        assert any(op in msg for op in ("conv", "unfold", "fold")), msg


_NAMES = [e[0] for e in _errors()]


@pytest.mark.parametrize("name", _NAMES)
def test_errors_are_torch_errors(name):
    """The same bad call raises the same exception type in PyTorch."""
    torch = pytest.importorskip("torch")
    if name == "not_tensor":
        pytest.skip("a numpy array is not a Tensor in either library")
    if name == "unfold_dims":
        pytest.skip("torch 2.13 raises IndexError from inside im2col for a 2-D input; "
                    "tensorplay the RuntimeError its message promises (docs/DECISIONS.md)")
    (call, exc), = [(c, e) for n, c, e in _errors(torch.nn.functional, lambda a, dtype=np.float64:
                                                  torch.from_numpy(np.asarray(a, dtype)))
                    if n == name]
    with pytest.raises(exc):
        call()


# ---------------------------------------------------------------- vmap, threads, blocks
def test_vmap_input_and_weight_batched():
    from tensorplay.func import vmap
    xs, ws, bs = _r(3, 2, 2, 5, 5), _r(3, 4, 1, 3, 3), _r(3, 4)
    kw = {"padding": 1, "groups": 2, "stride": (1, 2)}
    loop = np.stack([conv2d_ref(xs[i], ws[i], bs[i], **kw) for i in range(3)])
    got = vmap(lambda x, w, b: F.conv2d(x, w, b, **kw))(_t(xs), _t(ws), _t(bs))
    _close(got, loop)
    got = vmap(lambda x: F.conv2d(x, _t(ws[0]), _t(bs[0]), **kw))(_t(xs))
    _close(got, np.stack([conv2d_ref(xs[i], ws[0], bs[0], **kw) for i in range(3)]))
    got = vmap(lambda w: F.conv2d(_t(xs[0]), w, **kw))(_t(ws))
    _close(got, np.stack([conv2d_ref(xs[0], ws[i], **kw) for i in range(3)]))


def test_per_example_gradients_under_vmap():
    from tensorplay.func import grad, vmap
    xs, w = _r(4, 1, 2, 5, 5), _r(3, 2, 3, 3)

    def loss(w, x):
        return (F.conv2d(x, w, padding=1) ** 2).sum()
    got = vmap(grad(loss), in_dims=(None, 0))(_t(w), _t(xs))
    for i in range(4):
        wt = _t(w).requires_grad_()
        (want,) = tp.autograd.grad(loss(wt, _t(xs[i])), (wt,))
        _close(got[i], want.numpy())


def test_threads_and_blocks_agree(monkeypatch):
    x, w, b = _r(4, 8, 20, 20), _r(16, 8, 3, 3), _r(16)
    want = conv2d_ref(x, w, b, padding=1)
    xt, wt = _t(x).requires_grad_(), _t(w).requires_grad_()
    old = tp.get_num_threads()
    results = []
    try:
        for n, block in ((1, _c._BLOCK), (2, _c._BLOCK), (2, 1000)):
            tp.set_num_threads(n)
            monkeypatch.setattr(_c, "_BLOCK", block)
            y = F.conv2d(xt, wt, _t(b), padding=1)
            _close(y, want)
            results.append([g.numpy() for g in tp.autograd.grad(y.sum(), (xt, wt))])
    finally:
        tp.set_num_threads(old)
    for r in results[1:]:
        for a, c in zip(r, results[0]):
            np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12)


def test_numpy_matmul_fallback(monkeypatch):
    monkeypatch.setattr(_c._blas, "load", lambda: False)
    x, w, b = _r(2, 4, 6, 6), _r(4, 2, 3, 3), _r(4)
    _close(F.conv2d(_t(x), _t(w), _t(b), padding=1, groups=2),
           conv2d_ref(x, w, b, padding=1, groups=2))


def test_empty_batch_and_zero_channels():
    y = F.conv2d(_t(np.zeros((0, 3, 5, 5))), _t(_r(4, 3, 3, 3)))
    assert y.shape == (0, 4, 3, 3)
    y = F.conv2d(_t(np.zeros((2, 0, 5, 5))), _t(np.zeros((4, 0, 3, 3))), _t(np.ones(4)))
    np.testing.assert_array_equal(y.numpy(), np.ones((2, 4, 3, 3)))
