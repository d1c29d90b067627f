"""Edge cases and errors of the pools (tensorplay.nn.functional max/avg/adaptive
pools); values, VJPs, JVPs and second order are the op table's
(tests/op_table/pool.py).  (tests/test_pool.py is the memory pool's.)"""
import itertools

import numpy as np
import pytest

import tensorplay as tp
from tensorplay._ops.pool import max_pool_backward, max_pool_gather
from tensorplay.autograd import forward_ad as fwAD
from tensorplay.func import vmap

from op_table.pool import distinct, out_size, ref_adaptive, ref_avg_pool, ref_max_pool

F = tp.nn.functional

_CONFIGS = [dict(kernel_size=k, stride=s, padding=p, dilation=d, ceil_mode=c)
            for k, s, p, d, c in itertools.product((1, 2, 3), (None, 1, 2), (0, 1), (1, 2),
                                                   (False, True)) if p <= k // 2]


def _t(a):
    return tp.from_numpy(np.array(a))


@pytest.mark.parametrize("kw", _CONFIGS, ids=lambda kw: "-".join(f"{v}" for v in kw.values()))
def test_max_pool2d_values_and_indices_against_window_loops(kw):
    x = distinct(np.random.default_rng(0), (2, 3, 7, 6))
    y, idx = F.max_pool2d(_t(x), return_indices=True, **kw)
    ry, ridx = ref_max_pool(x, indices=True, **kw)
    np.testing.assert_array_equal(y.numpy(), ry)
    np.testing.assert_array_equal(idx.numpy(), ridx)
    assert idx.dtype is tp.int64


@pytest.mark.parametrize("kw", _CONFIGS[::3], ids=lambda kw: "-".join(f"{v}" for v in kw.values()))
def test_max_pool_indices_equal_torch(kw):
    torch = pytest.importorskip("torch")
    # integer-valued input: plenty of ties, which both break to the first maximum
    x = np.random.default_rng(1).integers(0, 3, (2, 2, 7, 8)).astype(np.float64)
    y, idx = F.max_pool2d(_t(x), return_indices=True, **kw)
    ty, tidx = torch.nn.functional.max_pool2d(torch.from_numpy(x), return_indices=True, **kw)
    np.testing.assert_array_equal(y.numpy(), ty.numpy())
    np.testing.assert_array_equal(idx.numpy(), tidx.numpy())
    y1, i1 = F.max_pool1d(_t(x[0]), return_indices=True, **kw)
    ty1, ti1 = torch.nn.functional.max_pool1d(torch.from_numpy(x[0]), return_indices=True, **kw)
    np.testing.assert_array_equal(i1.numpy(), ti1.numpy())
    np.testing.assert_array_equal(y1.numpy(), ty1.numpy())


def test_ties_take_the_first_maximum_and_get_the_whole_gradient():
    x = tp.tensor([[[[1.0, 1.0], [1.0, 1.0]]]], requires_grad=True)
    y, idx = F.max_pool2d(x, 2, return_indices=True)
    assert idx.item() == 0
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[[[1.0, 0.0], [0.0, 0.0]]]])
    x = tp.tensor([[0.0, 3.0, 1.0, 3.0]])
    assert F.max_pool1d(x, 4, return_indices=True)[1].tolist() == [[1]]


def test_nan_wins_the_window_and_the_last_nan_is_kept():
    x = tp.tensor([[1.0, float("nan"), 5.0, float("nan"), 2.0]])
    y, idx = F.max_pool1d(x, 5, return_indices=True)
    assert np.isnan(y.item()) and idx.item() == 3
    y, idx = F.max_pool1d(tp.tensor([[-np.inf, -np.inf]]), 2, return_indices=True)
    assert y.item() == -np.inf and idx.item() == 0


def test_padding_is_never_the_maximum():
    x = -distinct(np.random.default_rng(2), (1, 1, 4, 4)) - 100       # all negative
    y, idx = F.max_pool2d(_t(x), 3, stride=1, padding=1, return_indices=True)
    assert (y.numpy() < -1).all() and idx.numpy().min() >= 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_non_contiguous_input(dtype):
    base = distinct(np.random.default_rng(3), (2, 3, 6, 10)).astype(dtype)
    x = base[:, :, :, ::2]
    assert not x.flags.c_contiguous
    y = F.max_pool2d(tp.from_numpy(x), 2)
    np.testing.assert_array_equal(y.numpy(), ref_max_pool(x, 2))
    a = F.avg_pool2d(tp.from_numpy(np.swapaxes(base, 2, 3)), 2)
    np.testing.assert_allclose(a.numpy(), ref_avg_pool(np.swapaxes(base, 2, 3), 2),
                               rtol=1e-6)
    assert y.dtype is (tp.float32 if dtype == np.float32 else tp.float64)


def test_threaded_and_serial_kernels_agree():
    # 4 * 8 * 64 * 64 = 131072 elements: above 2 * GRAIN, so n = 2 runs two threads
    x = _t(distinct(np.random.default_rng(4), (4, 8, 64, 64)))
    old = tp.get_num_threads()
    try:
        results = []
        for n in (1, 2):
            tp.set_num_threads(n)
            xr = x.detach().requires_grad_()
            y, idx = F.max_pool2d(xr, 3, 2, 1, return_indices=True)
            a = F.avg_pool2d(xr, 3, 2, 1)
            r = F.pad(xr, (2, 1, 1, 2), mode="reflect")
            b = F.interpolate(xr, size=(57, 31), mode="bilinear")
            n = F.interpolate(xr, scale_factor=1.5)
            (y.sum() + (a * a).sum() + (r * r).sum() + (b * b).sum() + n.sum()).backward()
            results.append((y.detach().numpy(), idx.numpy(), a.detach().numpy(),
                            r.detach().numpy(), b.detach().numpy(), n.detach().numpy(),
                            xr.grad.numpy()))
    finally:
        tp.set_num_threads(old)
    for r1, r2 in zip(*results):
        np.testing.assert_array_equal(r1, r2)


def test_max_pool_gradient_and_tangent_follow_the_argmax():
    rng = np.random.default_rng(5)
    x = distinct(rng, (2, 2, 5, 5))
    g = rng.standard_normal((2, 2, 3, 3))
    xt = _t(x).requires_grad_()
    y, idx = F.max_pool2d(xt, 3, 2, 1, return_indices=True)
    (gx,) = tp.autograd.grad(y, xt, _t(g))
    want = np.zeros((4, 25))
    np.add.at(want, (np.arange(4)[:, None], idx.numpy().reshape(4, 9)), g.reshape(4, 9))
    np.testing.assert_allclose(gx.numpy(), want.reshape(x.shape))
    t = rng.standard_normal(x.shape)
    with fwAD.dual_level():
        out = F.max_pool2d(fwAD.make_dual(_t(x), _t(t)), 3, 2, 1)
        tan = fwAD.unpack_dual(out).tangent.numpy()
    np.testing.assert_allclose(tan, np.take_along_axis(t.reshape(4, 25),
                                                        idx.numpy().reshape(4, 9), 1)
                               .reshape(2, 2, 3, 3))


def test_second_order_through_max_pool_is_zero_and_graphs_nest():
    x = _t(distinct(np.random.default_rng(6), (1, 2, 4, 4))).requires_grad_()
    y = F.max_pool2d(x, 2)
    (g,) = tp.autograd.grad((y * y).sum(), x, create_graph=True)
    # d/dx sum(y^2) = 2 y at the argmax: its gradient is 2 at each argmax
    (gg,) = tp.autograd.grad(g.sum(), x)
    np.testing.assert_array_equal(gg.numpy(), 2 * (g.detach().numpy() != 0))


def test_vmap_over_max_and_avg_pools_matches_the_loop():
    x = distinct(np.random.default_rng(7), (3, 2, 2, 5, 5))
    got = vmap(lambda a: F.max_pool2d(a, 2, 1))(_t(x))
    want = np.stack([ref_max_pool(e, 2, 1) for e in x])
    np.testing.assert_array_equal(got.numpy(), want)
    got = vmap(lambda a: F.avg_pool2d(a, 3, 2, 1), in_dims=1)(_t(np.moveaxis(x, 0, 1)))
    np.testing.assert_allclose(got.numpy(), np.stack([ref_avg_pool(e, 3, 2, 1) for e in x]))
    # per-example gradients through the pool (grad inside vmap)
    gfun = vmap(tp.func.grad(lambda a: F.max_pool2d(a, 2).sum()))
    gs = gfun(_t(x)).numpy()
    assert gs.shape == x.shape and gs.sum() == 3 * 2 * 2 * 4


def test_adaptive_windows_and_none_sizes():
    x = np.random.default_rng(8).standard_normal((2, 3, 7, 5))
    np.testing.assert_allclose(F.adaptive_avg_pool2d(_t(x), (3, None)).numpy(),
                               ref_adaptive(x, (3, 5)), rtol=1e-12)
    np.testing.assert_allclose(F.adaptive_avg_pool2d(_t(x), 1).numpy(),
                               x.mean(axis=(2, 3), keepdims=True), rtol=1e-12)
    y, idx = F.adaptive_max_pool2d(_t(x), (4, 3), return_indices=True)
    np.testing.assert_array_equal(y.numpy(), ref_adaptive(x, (4, 3), op="max"))
    np.testing.assert_array_equal(
        np.take_along_axis(x.reshape(6, 35), idx.numpy().reshape(6, 12), 1).reshape(y.shape),
        y.numpy())
    assert F.adaptive_avg_pool2d(_t(x), (0, 2)).shape == (2, 3, 0, 2)


def test_adaptive_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(9).integers(0, 4, (2, 3, 9, 7)).astype(np.float64)
    for size in [(4, 3), (9, 7), (10, 11), 1, (None, 2)]:
        tx = torch.from_numpy(x)
        np.testing.assert_allclose(F.adaptive_avg_pool2d(_t(x), size).numpy(),
                                   torch.nn.functional.adaptive_avg_pool2d(tx, size).numpy(),
                                   rtol=1e-13)
        y, i = F.adaptive_max_pool2d(_t(x), size, return_indices=True)
        ty, ti = torch.nn.functional.adaptive_max_pool2d(tx, size, return_indices=True)
        np.testing.assert_array_equal(i.numpy(), ti.numpy())
    y, i = F.adaptive_max_pool1d(_t(x[0]), 4, return_indices=True)
    ty, ti = torch.nn.functional.adaptive_max_pool1d(torch.from_numpy(x[0]), 4,
                                                     return_indices=True)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())


@pytest.mark.parametrize("kw", [dict(kernel_size=3, stride=2, padding=1, ceil_mode=c,
                                     count_include_pad=i, divisor_override=dv)
                                for c in (False, True) for i in (False, True)
                                for dv in (None, 3, -2)])
def test_avg_pool_divisors_against_torch_and_loops(kw):
    x = np.random.default_rng(10).standard_normal((2, 2, 6, 7))
    y = F.avg_pool2d(_t(x), **kw)
    np.testing.assert_allclose(y.numpy(), ref_avg_pool(x, **kw), rtol=1e-13, atol=1e-14)
    try:
        import torch
    except ImportError:
        return
    np.testing.assert_allclose(y.numpy(), torch.nn.functional.avg_pool2d(
        torch.from_numpy(x), **kw).numpy(), rtol=1e-13, atol=1e-14)


def test_ceil_mode_drops_the_window_that_starts_in_the_padding():
    # L = 5, k = 2, s = 2, p = 1: ceil gives 4 windows, but the 4th starts at 5 = L + p - 1 + 1
    assert out_size(5, 2, 2, 1, 1, True) == 3
    x = _t(np.arange(5.0).reshape(1, 1, 5))
    assert F.max_pool1d(x, 2, 2, 1, ceil_mode=True).shape == (1, 1, 3)
    assert F.avg_pool1d(x, 2, 2, 1, ceil_mode=True).tolist() == [[[0.0, 1.5, 3.5]]]
    assert F.max_pool1d(x, 2, 2, 0, ceil_mode=True).tolist() == [[[1.0, 3.0, 4.0]]]


def test_empty_batch_is_allowed():
    y = F.max_pool2d(tp.zeros(0, 2, 4, 4), 2)
    assert y.shape == (0, 2, 2, 2)
    assert F.avg_pool1d(tp.zeros(0, 2, 4), 2).shape == (0, 2, 2)


# ---------------------------------------------------------------- errors
_ERRORS = [
    ("kernel0", RuntimeError, "kernel size should be greater than zero",
     lambda f, x: f.max_pool2d(x, 0)),
    ("stride0", RuntimeError, "stride should be greater than zero",
     lambda f, x: f.max_pool2d(x, 2, 0)),
    ("dilation0", RuntimeError, "dilation should be greater than zero",
     lambda f, x: f.max_pool2d(x, 2, 1, 0, 0)),
    ("pad_gt_half", RuntimeError, "pad should be",
     lambda f, x: f.max_pool2d(x, 2, 1, 2)),
    ("avg_pad_gt_half", RuntimeError, "pad should be",
     lambda f, x: f.avg_pool2d(x, 3, 1, 2)),
    ("output_too_small", RuntimeError, "Output size is too small",
     lambda f, x: f.max_pool2d(x, 5)),
    ("avg_output_too_small", RuntimeError, "Output size is too small",
     lambda f, x: f.avg_pool2d(x, (1, 5))),
    ("kernel_len", RuntimeError, "kernel_size must",
     lambda f, x: f.max_pool2d(x, (2, 2, 2))),
    ("kernel_float", TypeError, "kernel_size",
     lambda f, x: f.max_pool2d(x, 2.5)),
    ("input_2d", RuntimeError, "3D or 4D",
     lambda f, x: f.max_pool2d(x[0, 0], 2)),
    ("input_5d", RuntimeError, "3D or 4D",
     lambda f, x: f.avg_pool2d(x[None], 2)),
    ("empty_spatial", RuntimeError, "3D or 4D",
     lambda f, x: f.max_pool2d(x[:, :, :0], 2)),
    ("divisor0", RuntimeError, "divisor must be not zero",
     lambda f, x: f.avg_pool2d(x, 2, divisor_override=0)),
    ("adaptive_negative", RuntimeError, "output_size",
     lambda f, x: f.adaptive_avg_pool2d(x, (-1, 2))),
    ("adaptive_1d_input", RuntimeError, "2D or 3D",
     lambda f, x: f.adaptive_avg_pool1d(x[0, 0, 0], 2)),
    ("not_tensor", TypeError, "input",
     lambda f, x: f.max_pool2d([[1.0]], 2)),
]


@pytest.mark.parametrize("name,exc,match,call", _ERRORS, ids=[e[0] for e in _ERRORS])
def test_errors_match_torch(name, exc, match, call):
    x = np.zeros((1, 2, 4, 4))
    with pytest.raises(exc, match=match):
        call(F, _t(x))
    try:
        import torch
    except ImportError:
        return
    with pytest.raises(exc):
        call(torch.nn.functional, torch.from_numpy(x))


def test_integer_input_is_not_implemented():
    with pytest.raises(NotImplementedError, match="max_pool2d"):
        F.max_pool2d(tp.zeros(1, 1, 2, 2, dtype=tp.int64), 2)


def test_a_window_entirely_in_the_padding_is_refused():
    # L = 2, k = 2, p = 1, d = 3: the first window's taps are -1 and 2
    with pytest.raises(RuntimeError, match="no element inside the input"):
        F.max_pool1d(tp.zeros(1, 2), 2, 1, 1, 3)


def test_bad_indices_raise_index_errors():
    g = tp.ones(1, 1, 2, 2)
    with pytest.raises(IndexError, match="out of bounds"):
        max_pool_backward(g, tp.tensor([[[[0, 1], [2, 16]]]]), (4, 4))
    with pytest.raises(IndexError, match="out of bounds"):
        max_pool_backward(g, tp.tensor([[[[0, -1], [2, 3]]]]), (4, 4))
    with pytest.raises(IndexError, match="out of bounds"):
        max_pool_gather(tp.ones(1, 1, 2, 2), tp.tensor([[[[4]]]]))
    with pytest.raises(RuntimeError, match="indices of shape"):
        max_pool_backward(g, tp.tensor([[[[0, 1]]]]), (4, 4))


# ---------------------------------------------------------------- pad
from op_table.resample import ref_interpolate, ref_pad  # noqa: E402

_PAD_CASES = [((2, 3, 5), (2, 1), m) for m in ("constant", "reflect", "replicate", "circular")] + [
    ((1, 2, 4, 5), (-1, 3, 2, -1), "reflect"), ((1, 2, 4, 5), (-1, 3, 2, -1), "circular"),
    ((1, 2, 4, 5), (-2, 1, 0, 3), "replicate"), ((2, 4, 5), (3, 3, 3, 3), "circular"),
    ((1, 1, 2, 3, 4), (1, 2, 1, 0, 1, 1), "reflect"), ((2, 3), (1, -1, 2, 2), "constant"),
    ((2, 5), (-5, 1), "replicate"), ((3, 2, 2, 2), (1, 1, 1, 1, 1, 1, 1, 1), "constant")]


@pytest.mark.parametrize("shape,pad,mode", _PAD_CASES,
                         ids=[f"{m}-{p}" for _, p, m in _PAD_CASES])
def test_pad_against_numpy_and_torch(shape, pad, mode):
    x = np.random.default_rng(11).standard_normal(shape)
    y = F.pad(_t(x), pad, mode=mode)
    np.testing.assert_array_equal(y.numpy(), ref_pad(x, pad, mode))
    try:
        import torch
    except ImportError:
        return
    np.testing.assert_array_equal(
        y.numpy(), torch.nn.functional.pad(torch.from_numpy(x), pad, mode=mode).numpy())


def test_constant_pad_of_integer_and_bool_tensors():
    x = tp.tensor([[1, 2], [3, 4]])
    y = F.pad(x, (1, 0), value=7)
    assert y.dtype is tp.int64 and y.tolist() == [[7, 1, 2], [7, 3, 4]]
    b = F.pad(tp.tensor([True, False]), (1, 1))
    assert b.tolist() == [False, True, False, False]
    with pytest.raises(RuntimeError, match="cannot be converted"):
        F.pad(x, (1, 0), value=2.5)
    with pytest.raises(NotImplementedError, match="float32 and float64"):
        F.pad(x, (1, 0), mode="reflect")


def test_pad_gradient_sums_the_copies():
    x = _t(np.arange(4.0).reshape(1, 4)).requires_grad_()
    y = F.pad(x, (2, 1), mode="reflect")           # [2, 1, 0, 1, 2, 3, 2]
    assert y.detach().tolist() == [[2.0, 1.0, 0.0, 1.0, 2.0, 3.0, 2.0]]
    y.sum().backward()
    assert x.grad.tolist() == [[1.0, 2.0, 3.0, 1.0]]


_PAD_ERRORS = [
    ("odd", RuntimeError, "divisible by 2", lambda f, x: f.pad(x, (1, 2, 3))),
    ("too_long", RuntimeError, "two times the input dimension", lambda f, x: f.pad(x, (1,) * 10)),
    ("reflect_big", RuntimeError, "Padding size should be less than",
     lambda f, x: f.pad(x, (4, 1, 0, 0), mode="reflect")),
    ("circular_twice", RuntimeError, "wrapping around more than once",
     lambda f, x: f.pad(x, (5, 1, 0, 0), mode="circular")),
    ("negative_out", RuntimeError, "negative output size", lambda f, x: f.pad(x, (-3, -2))),
    ("non_constant_dims", NotImplementedError, "Padding size|non-constant",
     lambda f, x: f.pad(x, (1, 1), mode="reflect")),
    ("value_with_reflect", RuntimeError, "doesn't take in value",
     lambda f, x: f.pad(x, (1, 1, 1, 1), mode="reflect", value=2.0)),
    ("mode", NotImplementedError, "mode", lambda f, x: f.pad(x, (1, 1), mode="wrap")),
    ("float_pad", TypeError, "pad", lambda f, x: f.pad(x, (1.5, 1))),
]


@pytest.mark.parametrize("name,exc,match,call", _PAD_ERRORS, ids=[e[0] for e in _PAD_ERRORS])
def test_pad_errors_match_torch(name, exc, match, call):
    test_errors_match_torch(name, exc, match, call)


# ---------------------------------------------------------------- interpolate
_INTERP_CASES = [dict(size=(5, 7)), dict(size=(3, 2)), dict(size=(8, 10)), dict(size=(9, 11)),
                 dict(scale_factor=2), dict(scale_factor=(1.5, 0.7)),
                 dict(scale_factor=1.3, recompute_scale_factor=True),
                 dict(size=(7, 9), mode="bilinear"), dict(size=(3, 2), mode="bilinear"),
                 dict(size=(7, 9), mode="bilinear", align_corners=True),
                 dict(size=(1, 1), mode="bilinear", align_corners=True),
                 dict(scale_factor=(2.5, 1.5), mode="bilinear"),
                 dict(scale_factor=1.7, mode="bilinear", recompute_scale_factor=True)]


@pytest.mark.parametrize("kw", _INTERP_CASES, ids=lambda kw: "-".join(map(str, kw.values())))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_interpolate_against_torch(kw, dtype):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(12).standard_normal((2, 3, 6, 5)).astype(dtype)
    y = F.interpolate(tp.from_numpy(x), **kw)
    ty = torch.nn.functional.interpolate(torch.from_numpy(x), **kw)
    tol = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=tol, atol=tol)
    y1 = F.interpolate(tp.from_numpy(x[:, :, 0]), size=11,
                       mode="linear" if "mode" in kw else "nearest")
    ty1 = torch.nn.functional.interpolate(torch.from_numpy(x[:, :, 0]), size=11,
                                          mode="linear" if "mode" in kw else "nearest")
    np.testing.assert_allclose(y1.numpy(), ty1.numpy(), rtol=tol, atol=tol)


def test_interpolate_against_the_formula_without_torch():
    x = np.random.default_rng(13).standard_normal((1, 2, 4, 5))
    for kw in (dict(size=(7, 3)), dict(size=(6, 8), mode="bilinear"),
               dict(size=(6, 8), mode="bilinear", align_corners=True)):
        np.testing.assert_allclose(F.interpolate(_t(x), **kw).numpy(),
                                   ref_interpolate(x, **kw), rtol=1e-13, atol=1e-13)
    # nearest upsampling by 2 repeats every pixel
    np.testing.assert_array_equal(F.interpolate(_t(x), scale_factor=2).numpy(),
                                  x.repeat(2, axis=2).repeat(2, axis=3))


_INTERP_ERRORS = [
    ("both", ValueError, "only one of size or scale_factor",
     lambda f, x: f.interpolate(x, size=3, scale_factor=2)),
    ("neither", ValueError, "either size or scale_factor", lambda f, x: f.interpolate(x)),
    ("size_len", ValueError, "same number of spatial dimensions",
     lambda f, x: f.interpolate(x, size=(3,))),
    ("align_nearest", ValueError, "align_corners option",
     lambda f, x: f.interpolate(x, size=3, align_corners=True)),
    ("bilinear_3d", NotImplementedError, "bilinear mode needs 4D",
     lambda f, x: f.interpolate(x[0], size=3, mode="bilinear")),
    ("linear_4d", NotImplementedError, "linear mode needs 3D",
     lambda f, x: f.interpolate(x, size=3, mode="linear")),
    ("2d_input", NotImplementedError, "Input Error", lambda f, x: f.interpolate(x[0, 0], size=3)),
    ("zero_size", RuntimeError, "greater than 0", lambda f, x: f.interpolate(x, size=0)),
    ("tiny_scale", RuntimeError, "greater than 0",
     lambda f, x: f.interpolate(x, scale_factor=0.1)),
    ("recompute_with_size", ValueError, "recompute_scale_factor",
     lambda f, x: f.interpolate(x, size=3, recompute_scale_factor=True)),
    ("mode", NotImplementedError, "foo", lambda f, x: f.interpolate(x, size=3, mode="foo")),
    ("no_channels", RuntimeError, "Non-empty", lambda f, x: f.interpolate(x[:, :0], size=3)),
]


@pytest.mark.parametrize("name,exc,match,call", _INTERP_ERRORS,
                         ids=[e[0] for e in _INTERP_ERRORS])
def test_interpolate_errors_match_torch(name, exc, match, call):
    test_errors_match_torch(name, exc, match, call)


def test_interpolate_gradients_and_tangents_are_adjoint():
    rng = np.random.default_rng(14)
    for kw in (dict(size=(7, 3)), dict(size=(5, 9), mode="bilinear", align_corners=True)):
        x = rng.standard_normal((2, 2, 4, 5))
        t = rng.standard_normal(x.shape)
        xt = _t(x).requires_grad_()
        y = F.interpolate(xt, **kw)
        u = rng.standard_normal(tuple(y.shape))
        (g,) = tp.autograd.grad(y, xt, _t(u))
        with fwAD.dual_level():
            jt = fwAD.unpack_dual(F.interpolate(fwAD.make_dual(_t(x), _t(t)), **kw)).tangent
        assert abs((g.numpy() * t).sum() - (u * jt.numpy()).sum()) < 1e-12


def test_memoized_checks_still_tell_bools_from_ints():
    x = tp.zeros(1, 1, 4, 4)
    F.max_pool2d(x, 2, ceil_mode=True)
    F.max_pool2d(x, (1, 1))
    F.avg_pool2d(x, 2, count_include_pad=True)
    with pytest.raises(TypeError, match="ceil_mode"):
        F.max_pool2d(x, 2, ceil_mode=1)
    with pytest.raises(TypeError, match="kernel_size"):
        F.max_pool2d(x, (1, True))
    with pytest.raises(TypeError, match="count_include_pad"):
        F.avg_pool2d(x, 2, count_include_pad=1)
    assert F.max_pool2d(x, [2, 2]).shape == (1, 1, 2, 2)      # lists: not cached, fine
