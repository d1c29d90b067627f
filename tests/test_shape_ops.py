"""Edge cases of the shape family that the op table cannot express: views sharing
storage and the version counter, PyTorch's legacy cat rule, dtype promotion,
integer and bool inputs, empty and 0-d tensors, threads, and errors (the
exception type PyTorch raises, checked against torch when it is installed)."""
import numpy as np
import pytest

import tensorplay as tp

try:
    import torch
except ImportError:
    torch = None


def _a(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------- views
VIEWS = [
    ("split", lambda x: x.split(2, 1)[1]),
    ("split_sizes", lambda x: x.split([1, 3], 1)[1]),
    ("chunk", lambda x: x.chunk(2, 0)[0]),
    ("tensor_split", lambda x: x.tensor_split([1], 1)[1]),
    ("unbind", lambda x: x.unbind(1)[2]),
    ("narrow", lambda x: x.narrow(1, 1, 2)),
    ("select", lambda x: x.select(0, -1)),
    ("diagonal", lambda x: x.diagonal(1)),
    ("movedim", lambda x: x.movedim(0, 1)),
    ("swapaxes", lambda x: x.swapaxes(0, 1)),
    ("swapdims", lambda x: x.swapdims(1, 0)),
    ("unflatten", lambda x: x.unflatten(1, (2, 2))),
    ("atleast_3d", lambda x: tp.atleast_3d(x)),
]


@pytest.mark.parametrize("name,fn", VIEWS, ids=[n for n, _ in VIEWS])
def test_views_share_storage_and_version_counter(name, fn):
    x = tp.tensor(np.arange(12.0).reshape(3, 4))
    y = fn(x)
    assert np.shares_memory(y._data, x._data)
    assert y._version is x._version
    before = x.numpy().copy()
    y.fill_(-1.0)                              # a write through the view reaches x
    assert (x.numpy() == -1.0).sum() == y.numel() and (x.numpy() != before).any()


@pytest.mark.parametrize("name,fn", VIEWS, ids=[n for n, _ in VIEWS])
def test_writing_a_view_after_saving_its_base_fails_backward(name, fn):
    x = tp.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    base = x * 1.0
    z = (base * base).sum()                    # saves base
    with tp.no_grad():
        fn(base).fill_(0.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_diagonal_of_a_broadcast_view_is_read_only():
    x = tp.ones(3).expand(3, 3)
    d = x.diagonal()
    assert not d._data.flags.writeable
    with pytest.raises(RuntimeError):
        d.fill_(2.0)


def test_diagonal_views_match_numpy_for_every_layout():
    a = _a((3, 4, 5))
    for v in (a, a.transpose(2, 0, 1), a[:, ::-1, ::2]):
        x = tp.from_numpy(v)
        for off in (-3, -1, 0, 2, 6):
            for d1, d2 in ((0, 1), (2, 0), (-1, 1)):
                got = x.diagonal(off, d1, d2)
                np.testing.assert_array_equal(got.numpy(), np.diagonal(v, off, d1, d2))


# ---------------------------------------------------------------- cat
def test_cat_promotes_dtypes_as_pytorch():
    cases = [(tp.int64, tp.float32, tp.float32), (tp.bool, tp.int32, tp.int32),
             (tp.float32, tp.float64, tp.float64), (tp.bool, tp.bool, tp.bool)]
    for a, b, want in cases:
        out = tp.cat([tp.ones(2, dtype=a), tp.ones(3, dtype=b)])
        assert out.dtype is want and out.shape == (5,)
    if torch is not None:
        assert torch.cat([torch.ones(2, dtype=torch.int64),
                          torch.ones(3, dtype=torch.float32)]).dtype == torch.float32


def test_cat_gradient_casts_back_to_each_input_dtype():
    a = tp.ones(2, dtype=tp.float32, requires_grad=True)
    b = tp.ones(3, dtype=tp.float64, requires_grad=True)
    out = tp.cat([a, b])
    assert out.dtype is tp.float64
    ga, gb = tp.autograd.grad(out.sum(), [a, b])
    assert ga.dtype is tp.float32 and gb.dtype is tp.float64


def test_cat_skips_legacy_empty_tensors():
    e = tp.zeros(0, dtype=tp.float64, requires_grad=True)
    x = tp.tensor(_a((2, 3)), requires_grad=True)
    out = tp.cat([e, x, e], dim=1)
    np.testing.assert_array_equal(out.detach().numpy(), x.detach().numpy())
    ge, gx = tp.autograd.grad(out.sum(), [e, x])
    assert ge.shape == (0,) and gx.shape == (2, 3)
    assert tp.cat([tp.zeros(0), tp.zeros(0)]).shape == (0,)
    # (0, 3) is not the legacy shape: it must match
    with pytest.raises(RuntimeError, match="Sizes of tensors must match"):
        tp.cat([tp.zeros(0, 2), tp.zeros(2, 3)])


def test_cat_forward_mode_with_a_tangent_on_one_input():
    from tensorplay.autograd import forward_ad as fwAD
    a, b = tp.tensor(_a((2, 3))), tp.tensor(_a((1, 3), seed=1))
    t = tp.tensor(_a((2, 3), seed=2))
    with fwAD.dual_level():
        out = tp.cat([fwAD.make_dual(a, t), b])
        tangent = fwAD.unpack_dual(out).tangent
    np.testing.assert_array_equal(tangent.numpy(), np.concatenate([t.numpy(), np.zeros((1, 3))]))


def test_stacking_compositions_match_numpy():
    a, b = _a((3,)), _a((3,), seed=1)
    for f, g in ((tp.hstack, np.hstack), (tp.vstack, np.vstack), (tp.dstack, np.dstack),
                 (tp.column_stack, np.column_stack)):
        np.testing.assert_array_equal(f([tp.tensor(a), tp.tensor(b)]).numpy(), g([a, b]))
    assert tp.concat([tp.ones(2)], 0).shape == (2,)
    assert tp.concatenate([tp.ones(2, 1), tp.ones(2, 2)], axis=1).shape == (2, 3)


# ---------------------------------------------------------------- split family
@pytest.mark.parametrize("n", [0, 1, 5, 6, 7])
@pytest.mark.parametrize("chunks", [1, 3, 4, 8])
def test_chunk_counts_match_pytorch(n, chunks):
    got = [p.shape[0] for p in tp.ones(n).chunk(chunks)]
    if torch is not None:
        assert got == [p.shape[0] for p in torch.ones(n).chunk(chunks)]
    assert sum(got) == n and len(got) <= chunks


@pytest.mark.parametrize("arg", [3, 1, [1, 4], [0, 0], [2, 9], [-1, 2]])
def test_tensor_split_matches_pytorch(arg):
    got = [tuple(p.shape) for p in tp.ones(5, 2).tensor_split(arg)]
    want = [p.shape for p in np.array_split(np.ones((5, 2)), arg)] if isinstance(arg, int) \
        else [p.shape for p in np.split(np.ones((5, 2)), arg)]
    assert got == [tuple(s) for s in want]
    if torch is not None:
        assert got == [tuple(p.shape) for p in torch.ones(5, 2).tensor_split(arg)]


def test_split_of_an_empty_dim():
    assert [p.shape for p in tp.ones(0, 2).split(0)] == [(0, 2)]
    assert [p.shape for p in tp.ones(0, 2).split(3)] == [(0, 2)]
    assert tp.ones(3, 0).unbind(1) == ()


def test_split_backward_accumulates_every_piece():
    x = tp.tensor(_a((6, 2)), requires_grad=True)
    p = x.split([1, 2, 3])
    (g,) = tp.autograd.grad(p[0].sum() + 2 * p[1].sum() + 3 * p[2].sum(), [x])
    np.testing.assert_array_equal(g.numpy()[:, 0], [1, 2, 2, 3, 3, 3])


# ---------------------------------------------------------------- flip, roll
def test_flip_integer_bool_and_empty_dims():
    x = tp.tensor([[1, 2], [3, 4]])
    np.testing.assert_array_equal(x.flip(0).numpy(), [[3, 4], [1, 2]])
    b = tp.tensor([True, False, False])
    np.testing.assert_array_equal(b.flip(0).numpy(), [False, False, True])
    y = x.flip([])                             # flips nothing, still a copy
    assert not np.shares_memory(y._data, x._data)
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    assert tp.ones(0, 3).flip(0, 1).shape == (0, 3)


def test_roll_repeated_dims_add_up_and_match_pytorch():
    a = np.arange(12.0).reshape(3, 4)
    got = tp.tensor(a).roll((1, 2, -7), (1, 0, 1)).numpy()
    np.testing.assert_array_equal(got, np.roll(np.roll(np.roll(a, 1, 1), 2, 0), -7, 1))
    if torch is not None:
        np.testing.assert_array_equal(
            got, torch.from_numpy(a).roll((1, 2, -7), (1, 0, 1)).numpy())
    assert tp.tensor(2.0).roll(5).item() == 2.0
    assert tp.ones(0, 3).roll(2, 0).shape == (0, 3)
    assert tp.ones(0).roll(2).shape == (0,)


# ---------------------------------------------------------------- tril / triu
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_, np.float32])
def test_tril_triu_every_dtype(dtype):
    a = (np.arange(20).reshape(4, 5) % 3).astype(dtype)
    for k in (-5, -1, 0, 2, 9):
        assert tp.from_numpy(a).tril(k).dtype is tp.from_numpy(a).dtype
        np.testing.assert_array_equal(tp.from_numpy(a).tril(k).numpy(), np.tril(a, k))
        np.testing.assert_array_equal(tp.from_numpy(a).triu(k).numpy(), np.triu(a, k))


def test_tril_causal_mask_and_nan_kept_only_where_kept():
    mask = tp.ones(4, 4, dtype=tp.bool).tril()
    np.testing.assert_array_equal(mask.numpy(), np.tril(np.ones((4, 4), bool)))
    a = np.full((3, 3), np.nan)
    got = tp.from_numpy(a).tril().numpy()
    assert np.isnan(got[np.tril_indices(3)]).all() and (got[np.triu_indices(3, 1)] == 0).all()


def test_tril_threads_agree_and_layouts():
    a = _a((3, 200, 300), np.float32)
    views = [a, a.transpose(0, 2, 1), a[:, ::-1, ::2], np.asfortranarray(a),
             a.transpose(1, 0, 2)[:, :, :50]]        # batch dims that cannot merge
    old = tp.get_num_threads()
    try:
        for v in views:
            outs = []
            for n in (1, 2):
                tp.set_num_threads(n)
                outs.append(tp.from_numpy(v).tril(3).numpy())
            np.testing.assert_array_equal(outs[0], outs[1])
            np.testing.assert_array_equal(outs[0], np.tril(v, 3))
    finally:
        tp.set_num_threads(old)
    assert tp.ones(2, 0, 3).triu().shape == (2, 0, 3)


def test_tril_inplace_methods():
    if not hasattr(tp.Tensor, "tril_"):
        pytest.skip("the in-place mechanism (INPLACE) is not on this branch yet")
    x = tp.tensor(np.ones((3, 3)))
    assert x.tril_() is x
    np.testing.assert_array_equal(x.numpy(), np.tril(np.ones((3, 3))))
    x.triu_(1)
    assert not x.numpy().any()


# ---------------------------------------------------------------- diagonals
@pytest.mark.parametrize("offset,dim1,dim2", [(0, -2, -1), (1, 0, 2), (-2, 2, 0), (3, 1, 0)])
def test_diag_embed_matches_pytorch(offset, dim1, dim2):
    a = _a((2, 3))
    got = tp.tensor(a).diag_embed(offset, dim1, dim2)
    np.testing.assert_array_equal(got.diagonal(offset, dim1, dim2).numpy(), a)
    assert got.numpy().sum() == pytest.approx(a.sum())
    if torch is not None:
        np.testing.assert_array_equal(
            got.numpy(), torch.from_numpy(a).diag_embed(offset, dim1, dim2).numpy())


def test_diag_and_trace():
    a = _a((3, 4))
    np.testing.assert_array_equal(tp.tensor(a).diag(1).numpy(), np.diag(a, 1))
    d = tp.tensor(a).diag()
    assert not np.shares_memory(d._data, a)     # a copy, as torch.diag
    np.testing.assert_array_equal(tp.tensor([1.0, 2.0]).diag(-1).numpy(),
                                  np.diag([1.0, 2.0], -1))
    t = tp.tensor([[1, 2], [3, 4]], dtype=tp.int32).trace()
    assert t.dtype is tp.int64 and t.item() == 5
    assert tp.ones(0, 3).trace().item() == 0


# ---------------------------------------------------------------- repeat family
def test_repeat_and_tile_match_numpy():
    a = _a((2, 3))
    for reps in [(1, 1), (2, 3), (2, 1, 2), (0, 1)]:
        np.testing.assert_array_equal(tp.tensor(a).repeat(*reps).numpy(), np.tile(a, reps))
    np.testing.assert_array_equal(tp.tensor(a).tile((2,)).numpy(), np.tile(a, 2))
    np.testing.assert_array_equal(tp.tensor(3.0).repeat(2, 2).numpy(), np.full((2, 2), 3.0))


def test_repeat_interleave_forms():
    x = tp.tensor([[1, 2], [3, 4]])
    np.testing.assert_array_equal(x.repeat_interleave(2).numpy(), [1, 1, 2, 2, 3, 3, 4, 4])
    np.testing.assert_array_equal(
        x.repeat_interleave(tp.tensor([1, 2]), dim=0).numpy(), [[1, 2], [3, 4], [3, 4]])
    np.testing.assert_array_equal(
        x.repeat_interleave(tp.tensor([3]), dim=1, output_size=6).numpy(),
        [[1, 1, 1, 2, 2, 2], [3, 3, 3, 4, 4, 4]])
    np.testing.assert_array_equal(tp.repeat_interleave(tp.tensor([2, 0, 1])).numpy(), [0, 0, 2])
    assert tp.tensor(5.0).repeat_interleave(3).shape == (3,)


def test_repeat_interleave_gradient_with_zero_repeats():
    x = tp.tensor(_a((4, 2)), requires_grad=True)
    out = x.repeat_interleave(tp.tensor([0, 3, 0, 1]), dim=0)
    (g,) = tp.autograd.grad(out.sum(), [x])
    np.testing.assert_array_equal(g.numpy()[:, 0], [0, 3, 0, 1])
    y = tp.tensor(_a((2, 0)), requires_grad=True)
    (g,) = tp.autograd.grad(y.repeat_interleave(tp.tensor([1, 2]), dim=0).sum(), [y])
    assert g.shape == (2, 0)


# ---------------------------------------------------------------- errors vs PyTorch
_ERRORS = [
    ("cat_sizes", RuntimeError, lambda m: m.cat([m.ones(2, 3), m.ones(2, 4)])),
    ("cat_ndim", RuntimeError, lambda m: m.cat([m.ones(2, 3), m.ones(2)])),
    ("cat_0d", RuntimeError, lambda m: m.cat([m.ones(()), m.ones(())])),
    # torch 2.13 raises ValueError for an empty list (RuntimeError, PyTorch's usual
    # type for a bad argument value, before); tensorplay keeps RuntimeError
    ("cat_empty", (RuntimeError, ValueError), lambda m: m.cat([])),
    ("cat_dim", IndexError, lambda m: m.cat([m.ones(2)], 1)),
    ("cat_type", TypeError, lambda m: m.cat([m.ones(2), 3.0])),
    ("split_0d", RuntimeError, lambda m: m.split(m.ones(()), 1)),
    ("split_zero", RuntimeError, lambda m: m.ones(4).split(0)),
    ("split_neg", RuntimeError, lambda m: m.ones(4).split(-1)),
    ("split_sum", RuntimeError, lambda m: m.ones(4).split([1, 2])),
    ("split_neg_size", RuntimeError, lambda m: m.ones(4).split([5, -1])),
    ("chunk_zero", RuntimeError, lambda m: m.ones(4).chunk(0)),
    ("tensor_split_zero", RuntimeError, lambda m: m.ones(4).tensor_split(0)),
    ("unbind_0d", IndexError, lambda m: m.ones(()).unbind()),
    ("narrow_start", IndexError, lambda m: m.ones(4).narrow(0, 5, 0)),
    ("narrow_past", RuntimeError, lambda m: m.ones(4).narrow(0, 3, 2)),
    ("narrow_len", RuntimeError, lambda m: m.ones(4).narrow(0, 1, -1)),
    ("narrow_0d", RuntimeError, lambda m: m.ones(()).narrow(0, 0, 1)),
    ("select_index", IndexError, lambda m: m.ones(4).select(0, 4)),
    ("select_0d", IndexError, lambda m: m.ones(()).select(0, 0)),
    ("movedim_len", RuntimeError, lambda m: m.ones(2, 3).movedim((0, 1), (0,))),
    ("movedim_repeat", RuntimeError, lambda m: m.ones(2, 3).movedim((0, 0), (0, 1))),
    ("movedim_range", IndexError, lambda m: m.ones(2, 3).movedim(2, 0)),
    ("unflatten_prod", RuntimeError, lambda m: m.ones(4).unflatten(0, (2, 3))),
    ("unflatten_empty", RuntimeError, lambda m: m.ones(4).unflatten(0, ())),
    ("broadcast_to", RuntimeError, lambda m: m.ones(3).broadcast_to((2, 4))),
    ("broadcast_tensors", RuntimeError, lambda m: m.broadcast_tensors(m.ones(3), m.ones(4))),
    ("flip_repeat", RuntimeError, lambda m: m.ones(2, 3).flip(0, 0)),
    ("flip_range", IndexError, lambda m: m.ones(2, 3).flip(2)),
    ("fliplr_1d", RuntimeError, lambda m: m.ones(2).fliplr()),
    ("roll_align", RuntimeError, lambda m: m.ones(2, 3).roll((1, 2), (0,))),
    ("roll_range", IndexError, lambda m: m.ones(2, 3).roll(1, 2)),
    ("tril_1d", RuntimeError, lambda m: m.ones(3).tril()),
    ("triu_float_k", TypeError, lambda m: m.ones(3, 3).triu(1.5)),
    ("diagonal_same", RuntimeError, lambda m: m.ones(2, 3).diagonal(0, 1, 1)),
    ("diagonal_range", IndexError, lambda m: m.ones(2, 3).diagonal(0, 0, 2)),
    ("diag_3d", RuntimeError, lambda m: m.ones(2, 2, 2).diag()),
    ("trace_3d", RuntimeError, lambda m: m.ones(2, 2, 2).trace()),
    ("repeat_few", RuntimeError, lambda m: m.ones(2, 3).repeat(2)),
    ("repeat_neg", RuntimeError, lambda m: m.ones(2, 3).repeat(-1, 2)),
    ("tile_neg", RuntimeError, lambda m: m.ones(2, 3).tile((-1, 2))),
    ("ri_neg", RuntimeError, lambda m: m.ones(2, 3).repeat_interleave(-1)),
    ("ri_len", RuntimeError,
     lambda m: m.ones(2, 3).repeat_interleave(m.tensor([1, 2]), dim=1)),
    ("ri_neg_tensor", RuntimeError,
     lambda m: m.ones(2, 3).repeat_interleave(m.tensor([1, -2]), dim=0)),
    ("ri_float", NotImplementedError,
     lambda m: m.ones(2, 3).repeat_interleave(m.tensor([1.0, 2.0]), dim=0)),
]


@pytest.mark.parametrize("name,exc,call", _ERRORS, ids=[e[0] for e in _ERRORS])
def test_errors_as_pytorch(name, exc, call):
    with pytest.raises(exc):
        call(tp)
    if torch is not None:
        with pytest.raises(exc):
            call(torch)


def test_error_messages_name_the_op_and_the_values():
    with pytest.raises(RuntimeError, match=r"cat\(\).*Expected size 3 but got size 4 for "
                                           r"tensor number 1"):
        tp.cat([tp.ones(2, 3), tp.ones(2, 4)])
    with pytest.raises(RuntimeError, match=r"hstack\(\)"):
        tp.hstack([tp.ones(2, 3), tp.ones(3, 4)])
    with pytest.raises(RuntimeError, match=r"split_with_sizes\(\).*sum exactly to 4"):
        tp.ones(4).split([1, 2])
    with pytest.raises(RuntimeError, match=r"broadcast_to\(\)"):
        tp.ones(3).broadcast_to((4,))


def test_flip_kernel_layouts_dtypes_and_threads():
    """flip copies through _kernels/shape.pyx:copy_fwd for rows of 16 or more."""
    a = _a((3, 40, 50))
    old = tp.get_num_threads()
    try:
        for v in (a, a[:, ::-1], a.transpose(2, 0, 1), a[..., ::3], np.asfortranarray(a),
                  _a((300, 400), np.float32)):
            for d in ((0,), (1,), (-1,), (0, -1), tuple(range(v.ndim))):
                for n in (1, 2):
                    tp.set_num_threads(n)
                    np.testing.assert_array_equal(tp.from_numpy(v).flip(d).numpy(),
                                                  np.flip(v, d))
    finally:
        tp.set_num_threads(old)
    for dt in (np.int32, np.int64, np.bool_, np.float32):
        b = (np.arange(200) % 7).astype(dt).reshape(5, 40)
        np.testing.assert_array_equal(tp.from_numpy(b).flip(1).numpy(), b[:, ::-1])
