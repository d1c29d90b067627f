"""Op-table rows of the shape family (tensorplay/_ops/shape_join.py, shape_more.py):
cat and its stacking compositions, the splitting views, dim moves, flip, roll,
tril/triu, diagonal/diag_embed/diag/trace, repeat/tile, repeat_interleave.

Ops returning several tensors (split, chunk, unbind, ...) are checked through
``_weighted``: the pieces flattened, piece i scaled by i + 1 and concatenated, so
every piece's values and gradient reach the output distinctly.
"""
import hypothesis.strategies as st
import numpy as np

import tensorplay as tp

from ._base import Fuzz, OpSpec, _normal, _one_shape, _same_shapes, fixed_samples


def _weighted(pieces, cat, ref=False):
    """pieces -> cat of (i + 1) * piece_i flattened (tp, torch or numpy ``cat``)."""
    pieces = list(pieces)
    if not pieces:
        return None
    return cat([p.reshape(-1) * (i + 1) for i, p in enumerate(pieces)])


def _tp_w(pieces):
    out = _weighted(pieces, tp.cat)
    return tp.zeros(0, dtype=tp.float64) if out is None else out


def _np_w(pieces):
    out = _weighted(pieces, np.concatenate)
    return np.zeros(0) if out is None else out


def _torch_w(T, pieces):
    out = _weighted(pieces, T.cat)
    return T.zeros(0, dtype=T.float64) if out is None else out


def _n(dim, nd):
    return dim % nd if nd else 0


# ---------------------------------------------------------------- numpy references
def _split_ref(x, s, dim):
    n = x.shape[dim]
    if isinstance(s, (list, tuple)):
        idx = np.cumsum(s)[:-1]
    else:
        idx = list(range(s, n, s)) if s else []
    return np.split(x, idx, axis=dim)


def _chunk_ref(x, chunks, dim):
    n = x.shape[dim]
    if n == 0:
        return [x] * chunks
    s = -(-n // chunks)
    return np.split(x, list(range(s, n, s)), axis=dim)


def _tensor_split_ref(x, sections, dim):
    return np.array_split(x, sections, axis=dim) if isinstance(sections, int) else \
        np.split(x, sections, axis=dim)


def _diag_embed_ref(x, offset, dim1, dim2):
    n = x.shape[-1]
    m = n + abs(offset)
    out = np.zeros(x.shape[:-1] + (m, m), x.dtype)
    for k in range(n):
        out[..., k + max(-offset, 0), k + max(offset, 0)] = x[..., k]
    nd = x.ndim + 1
    return np.moveaxis(out, [-2, -1], [dim1 % nd, dim2 % nd])


def _narrow_ref(x, dim, start, length):
    start = start % x.shape[dim] if start < 0 else start
    return np.take(x, np.arange(start, start + length), axis=dim)


def _unflatten_ref(x, dim, sizes):
    shp = x.shape if x.ndim else (1,)
    d = _n(dim, x.ndim)
    return x.reshape(shp[:d] + tuple(sizes) + shp[d + 1:])


def _ri_ref(x, repeats, dim):
    r = repeats._data if isinstance(repeats, tp.Tensor) else repeats
    return np.repeat(x, r, axis=dim)


# ---------------------------------------------------------------- fuzz drawers
def _dim(draw, nd):
    n = max(nd, 1)
    return draw(st.integers(-n, n - 1))


def _cat_shapes(draw):
    nd = draw(st.integers(1, 3))
    base = [draw(st.integers(0, 3)) for _ in range(nd)]
    d = draw(st.integers(0, nd - 1))
    _CAT_DIM[:] = [d - nd if draw(st.booleans()) else d]
    out = []
    for _ in range(3):
        s = list(base)
        s[d] = draw(st.integers(0, 3))
        out.append(tuple(s))
    return out


_CAT_DIM = [0]


def _cat_kwargs(draw, arrays):
    return {"dim": _CAT_DIM[0]}


def _split_kwargs(draw, arrays):
    x = arrays[0]
    dim = _dim(draw, x.ndim)
    n = x.shape[dim]
    if draw(st.booleans()):
        sizes, left = [], n
        while left:
            s = draw(st.integers(0, left))
            sizes.append(s)
            left -= s
        return {"s": sizes + [0] * draw(st.integers(0, 1)) or [0], "dim": dim}
    return {"s": draw(st.integers(1, 4)) if n else draw(st.integers(0, 2)), "dim": dim}


def _chunk_kwargs(draw, arrays):
    return {"chunks": draw(st.integers(1, 5)), "dim": _dim(draw, arrays[0].ndim)}


def _tensor_split_kwargs(draw, arrays):
    dim = _dim(draw, arrays[0].ndim)
    if draw(st.booleans()):
        return {"sections": draw(st.integers(1, 5)), "dim": dim}
    n = arrays[0].shape[dim]
    return {"sections": sorted(draw(st.lists(st.integers(0, n), max_size=3))), "dim": dim}


def _narrow_kwargs(draw, arrays):
    x = arrays[0]
    dim = _dim(draw, x.ndim)
    n = x.shape[dim]
    start = draw(st.integers(-n, n))
    s = start + n if start < 0 else start
    return {"dim": dim, "start": start, "length": draw(st.integers(0, n - s))}


def _select_kwargs(draw, arrays):
    x = arrays[0]
    dim = _dim(draw, x.ndim)
    n = x.shape[dim]
    return {"dim": dim, "index": draw(st.integers(-n, n - 1))}


def _movedim_kwargs(draw, arrays):
    nd = arrays[0].ndim
    k = draw(st.integers(0, nd))
    src = draw(st.permutations(list(range(nd))))[:k]
    dst = draw(st.permutations(list(range(nd))))[:k]
    return {"source": tuple(src), "destination": tuple(dst)}


def _unflatten_kwargs(draw, arrays):
    x = arrays[0]
    dim = _dim(draw, x.ndim)
    n = (x.shape if x.ndim else (1,))[dim]
    a = draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0] or [1]))
    sizes = [a, n // a] if n else [draw(st.integers(0, 2)), 0]
    if n and draw(st.booleans()):
        sizes[draw(st.integers(0, 1))] = -1
    return {"dim": dim, "sizes": tuple(sizes)}


def _broadcast_to_kwargs(draw, arrays):
    shape = arrays[0].shape
    lead = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    return {"size": lead + tuple(draw(st.integers(0, 3)) if s == 1 else s for s in shape)}


def _bcast3(draw):
    from op_table._base import _side
    nd = draw(st.integers(0, 3))
    base = [_side(draw, 0, 3) for _ in range(nd)]
    out = []
    for _ in range(2):
        drop = draw(st.integers(0, nd))
        out.append(tuple(1 if draw(st.integers(0, 2)) == 0 else s for s in base[drop:]))
    return out


def _flip_kwargs(draw, arrays):
    nd = max(arrays[0].ndim, 1)
    dims = draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True))
    return {"dims": tuple(d - nd if draw(st.booleans()) else d for d in dims)}


def _roll_kwargs(draw, arrays):
    nd = arrays[0].ndim
    if nd == 0 or draw(st.integers(0, 3)) == 0:
        return {"shifts": draw(st.integers(-5, 5)), "dims": None}
    k = draw(st.integers(1, 3))
    return {"shifts": tuple(draw(st.integers(-5, 5)) for _ in range(k)),
            "dims": tuple(draw(st.integers(-nd, nd - 1)) for _ in range(k))}


def _roll_ref(x, shifts, dims):
    return np.roll(x, shifts, dims)


def _tri_kwargs(draw, arrays):
    return {"diagonal": draw(st.integers(-4, 4))}


def _diagonal_kwargs(draw, arrays):
    nd = arrays[0].ndim
    d1, d2 = draw(st.permutations(list(range(nd))))[:2]
    return {"offset": draw(st.integers(-4, 4)), "dim1": d1 - nd if draw(st.booleans()) else d1,
            "dim2": d2}


def _diag_embed_kwargs(draw, arrays):
    nd = arrays[0].ndim + 1
    d1, d2 = draw(st.permutations(list(range(nd))))[:2]
    return {"offset": draw(st.integers(-3, 3)), "dim1": d1, "dim2": d2 - nd}


def _diag_shapes(draw):
    return [tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=2)))]


def _repeat_kwargs(draw, arrays):
    nd = arrays[0].ndim
    return {"reps": tuple(draw(st.lists(st.integers(0, 3), min_size=nd, max_size=nd + 2)))}


def _tile_kwargs(draw, arrays):
    return {"dims": tuple(draw(st.lists(st.integers(0, 3), max_size=arrays[0].ndim + 2)))}


def _ri_kwargs(draw, arrays):
    x = arrays[0]
    if draw(st.booleans()):
        return {"repeats": draw(st.integers(0, 3)), "dim": _dim(draw, x.ndim) if x.ndim else 0}
    dim = _dim(draw, x.ndim) if x.ndim else 0
    n = x.shape[dim] if x.ndim else 1
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    return {"repeats": tp.from_numpy(rng.integers(0, 4, n)), "dim": dim}


def _ri_flat_kwargs(draw, arrays):
    n = arrays[0].size
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    return {"repeats": tp.from_numpy(rng.integers(0, 4, n))}


def _ri_ref_any(x, repeats, dim):
    x = x.reshape(1) if x.ndim == 0 else x
    return _ri_ref(x, repeats, dim)


_R = [(_normal, (3, 4))]
_ALL = "fib"

SPECS = [
    # ---- cat and the stacking compositions
    OpSpec("cat", lambda a, b, c, dim: tp.cat([a, b, c], dim),
           lambda a, b, c, dim: np.concatenate([a, b, c], dim),
           fixed_samples(("dim0", [(_normal, (2, 4)), (_normal, (3, 4)), (_normal, (1, 4))],
                          {"dim": 0}),
                         ("dim_last", [(_normal, (3, 1)), (_normal, (3, 4)), (_normal, (3, 2))],
                          {"dim": -1}),
                         ("empty_piece", [(_normal, (3, 0)), (_normal, (3, 2)), (_normal, (3, 1))],
                          {"dim": 1}),
                         ("noncontig", [(_normal, (3, 4))] * 3, {"dim": 1})),
           fuzz=Fuzz("cat", ("tensors",), kinds=_ALL, shapes=_cat_shapes, kwargs=_cat_kwargs,
                     base=lambda ts, kw: [list(ts), kw["dim"]]),
           torch=lambda T, a, b, c, dim: T.cat([a, b, c], dim)),
    OpSpec("cat", lambda a, b: tp.cat([a, b]), lambda a, b: b,
           fixed_samples(("legacy_empty", [(_normal, (0,)), (_normal, (2, 3))], {})),
           variant="legacy_empty",
           fuzz=Fuzz("cat", ("tensors",), shapes=lambda draw: [(0,), (2, 3)],
                     base=lambda ts, kw: [list(ts), 0],
                     skip={"dim_range": "dims refer to the first tensor that is not a "
                                        "legacy empty, (2, 3) here"}),
           torch=lambda T, a, b: T.cat([a, b])),
    OpSpec("cat", lambda a, b: tp.hstack([a, b]), lambda a, b: np.hstack([a, b]),
           fixed_samples(("1d", [(_normal, (2,)), (_normal, (3,))], {}),
                         ("2d", [(_normal, (3, 1)), (_normal, (3, 2))], {})),
           variant="hstack",
           fuzz=Fuzz("hstack", ("tensors",), kinds=_ALL, shapes=_same_shapes(2)),
           torch=lambda T, a, b: T.hstack([a, b])),
    OpSpec("cat", lambda a, b: tp.vstack([a, b]), lambda a, b: np.vstack([a, b]),
           fixed_samples(("1d", [(_normal, (3,)), (_normal, (3,))], {}),
                         ("2d", [(_normal, (1, 3)), (_normal, (2, 3))], {})),
           variant="vstack",
           fuzz=Fuzz("vstack", ("tensors",), kinds=_ALL, shapes=_same_shapes(2)),
           torch=lambda T, a, b: T.vstack([a, b])),
    OpSpec("cat", lambda a, b: tp.dstack([a, b]), lambda a, b: np.dstack([a, b]),
           fixed_samples(("1d", [(_normal, (3,)), (_normal, (3,))], {}),
                         ("2d", [(_normal, (2, 3)), (_normal, (2, 3))], {})),
           variant="dstack",
           fuzz=Fuzz("dstack", ("tensors",), kinds=_ALL, shapes=_same_shapes(2)),
           torch=lambda T, a, b: T.dstack([a, b])),
    OpSpec("cat", lambda a, b: tp.column_stack([a, b]), lambda a, b: np.column_stack([a, b]),
           fixed_samples(("1d_2d", [(_normal, (3,)), (_normal, (3, 2))], {}),
                         ("0d", [(_normal, ()), (_normal, ())], {})),
           variant="column_stack",
           fuzz=Fuzz("column_stack", ("tensors",), kinds=_ALL,
                     shapes=lambda draw: [(3,), (3, draw(st.integers(0, 3)))]),
           torch=lambda T, a, b: T.column_stack([a, b])),
    # ---- splitting views (getitem)
    OpSpec("getitem", lambda x, s, dim: _tp_w(x.split(s, dim)),
           lambda x, s, dim: _np_w(_split_ref(x, s, dim)),
           fixed_samples(("int", [(_normal, (5, 3))], {"s": 2, "dim": 0}),
                         ("sizes", [(_normal, (3, 5))], {"s": [1, 0, 4], "dim": -1}),
                         ("noncontig", [(_normal, (3, 4))], {"s": 3, "dim": 1})),
           variant="split",
           fuzz=Fuzz("split", ("tensor",), kinds="f", shapes=_one_shape(min_dims=1),
                     kwargs=_split_kwargs, base=lambda ts, kw: [ts[0], kw["s"], kw["dim"]]),
           torch=lambda T, x, s, dim: _torch_w(T, x.split(s, dim))),
    OpSpec("getitem", lambda x, chunks, dim: _tp_w(x.chunk(chunks, dim)),
           lambda x, chunks, dim: _np_w(_chunk_ref(x, chunks, dim)),
           fixed_samples(("uneven", [(_normal, (5, 3))], {"chunks": 3, "dim": 0}),
                         ("fewer", [(_normal, (3, 6))], {"chunks": 4, "dim": 1})),
           variant="chunk",
           fuzz=Fuzz("chunk", kinds="f", shapes=_one_shape(min_dims=1), kwargs=_chunk_kwargs,
                     base=lambda ts, kw: [ts[0], kw["chunks"], kw["dim"]]),
           torch=lambda T, x, chunks, dim: _torch_w(T, x.chunk(chunks, dim))),
    OpSpec("getitem", lambda x, sections, dim: _tp_w(x.tensor_split(sections, dim)),
           lambda x, sections, dim: _np_w(_tensor_split_ref(x, sections, dim)),
           fixed_samples(("sections", [(_normal, (5, 3))], {"sections": 3, "dim": 0}),
                         ("indices", [(_normal, (3, 6))], {"sections": [1, 4], "dim": 1})),
           variant="tensor_split",
           fuzz=Fuzz("tensor_split", kinds="f", shapes=_one_shape(min_dims=1),
                     kwargs=_tensor_split_kwargs,
                     base=lambda ts, kw: [ts[0], kw["sections"], kw["dim"]]),
           torch=lambda T, x, sections, dim: _torch_w(T, x.tensor_split(sections, dim))),
    OpSpec("getitem", lambda x, dim: _tp_w(x.unbind(dim)),
           lambda x, dim: _np_w([np.take(x, i, axis=dim) for i in range(x.shape[dim])]),
           fixed_samples(("dim0", _R, {"dim": 0}), ("dim1", _R, {"dim": -1})),
           variant="unbind",
           fuzz=Fuzz("unbind", kinds="f", shapes=_one_shape(min_dims=1)),
           torch=lambda T, x, dim: _torch_w(T, x.unbind(dim))),
    OpSpec("getitem", lambda x, dim, start, length: x.narrow(dim, start, length),
           _narrow_ref,
           fixed_samples(("mid", [(_normal, (5, 3))], {"dim": 0, "start": 1, "length": 3}),
                         ("neg", _R, {"dim": 1, "start": -3, "length": 2}),
                         ("noncontig", _R, {"dim": 1, "start": 2, "length": 2})),
           variant="narrow",
           fuzz=Fuzz("narrow", kinds=_ALL, shapes=_one_shape(min_dims=1),
                     kwargs=_narrow_kwargs,
                     base=lambda ts, kw: [ts[0], kw["dim"], kw["start"], kw["length"]]),
           torch=lambda T, x, dim, start, length: x.narrow(dim, start, length)),
    OpSpec("getitem", lambda x, dim, index: x.select(dim, index),
           lambda x, dim, index: np.take(x, index, axis=dim),
           fixed_samples(("row", _R, {"dim": 0, "index": 2}),
                         ("col", _R, {"dim": -1, "index": -1})),
           variant="select",
           fuzz=Fuzz("select", kinds=_ALL, shapes=_one_shape(min_dims=1, min_side=1),
                     kwargs=_select_kwargs,
                     base=lambda ts, kw: [ts[0], kw["dim"], kw["index"]]),
           torch=lambda T, x, dim, index: x.select(dim, index)),
    # ---- dim moves (permute) and reshaping views
    OpSpec("permute", lambda x, source, destination: x.movedim(source, destination),
           lambda x, source, destination: np.moveaxis(x, source, destination),
           fixed_samples(("int", [(_normal, (2, 3, 4))], {"source": 0, "destination": -1}),
                         ("tuple", [(_normal, (2, 3, 4))],
                          {"source": (0, 1), "destination": (2, 0)})),
           variant="movedim",
           fuzz=Fuzz("movedim", kinds=_ALL, kwargs=_movedim_kwargs,
                     base=lambda ts, kw: [ts[0], kw["source"], kw["destination"]]),
           torch=lambda T, x, source, destination: x.movedim(source, destination)),
    OpSpec("permute", lambda x, axis0, axis1: x.swapaxes(axis0, axis1),
           lambda x, axis0, axis1: np.swapaxes(x, axis0, axis1) if x.ndim else x,
           fixed_samples(("3d", [(_normal, (2, 3, 4))], {"axis0": 0, "axis1": 2})),
           variant="swapaxes", fuzz=Fuzz("swapaxes", kinds=_ALL),
           torch=lambda T, x, axis0, axis1: x.swapaxes(axis0, axis1)),
    OpSpec("permute", lambda x, dim0, dim1: x.swapdims(dim0, dim1),
           lambda x, dim0, dim1: np.swapaxes(x, dim0, dim1) if x.ndim else x,
           fixed_samples(("2d", _R, {"dim0": -1, "dim1": 0})),
           variant="swapdims", fuzz=Fuzz("swapdims", kinds=_ALL),
           torch=lambda T, x, dim0, dim1: x.swapdims(dim0, dim1)),
    OpSpec("view", lambda x, dim, sizes: x.unflatten(dim, sizes), _unflatten_ref,
           fixed_samples(("mid", [(_normal, (2, 6))], {"dim": 1, "sizes": (2, 3)}),
                         ("infer", [(_normal, (6, 2))], {"dim": 0, "sizes": (-1, 2)})),
           variant="unflatten",
           fuzz=Fuzz("unflatten", kinds=_ALL, kwargs=_unflatten_kwargs, layouts=("contig",),
                     base=lambda ts, kw: [ts[0], kw["dim"], kw["sizes"]]),
           torch=lambda T, x, dim, sizes: x.unflatten(dim, sizes)),
    OpSpec("expand", lambda x, size: x.broadcast_to(size),
           lambda x, size: np.broadcast_to(x, size),
           fixed_samples(("col", [(_normal, (3, 1))], {"size": (2, 3, 4)})),
           variant="broadcast_to",
           fuzz=Fuzz("broadcast_to", kinds=_ALL, kwargs=_broadcast_to_kwargs,
                     base=lambda ts, kw: [ts[0], kw["size"]]),
           torch=lambda T, x, size: x.broadcast_to(size)),
    OpSpec("expand", lambda a, b: _tp_w(tp.broadcast_tensors(a, b)),
           lambda a, b: _np_w(np.broadcast_arrays(a, b)),
           fixed_samples(("outer", [(_normal, (3, 1)), (_normal, (4,))], {})),
           variant="broadcast_tensors",
           fuzz=Fuzz("broadcast_tensors", ("tensors",), shapes=_bcast3,
                     base=lambda ts, kw: [list(ts)],
                     skip={"list_empty": "broadcast_tensors() of nothing is (), as PyTorch",
                           "list_type": "the tensors are varargs: one Tensor is a valid call"}),
           torch=lambda T, a, b: _torch_w(T, T.broadcast_tensors(a, b))),
    # ---- flip and roll
    OpSpec("flip", lambda x, dims: x.flip(dims),
           lambda x, dims: np.flip(x, dims) if x.ndim else x.copy(),
           fixed_samples(("one", _R, {"dims": (0,)}), ("both", _R, {"dims": (1, -2)}),
                         ("noncontig", _R, {"dims": (-1,)}),
                         ("0d", [(_normal, ())], {"dims": (0,)})),
           fuzz=Fuzz("flip", kinds=_ALL, kwargs=_flip_kwargs,
                     base=lambda ts, kw: [ts[0], kw["dims"]]),
           torch=lambda T, x, dims: x.flip(dims)),
    OpSpec("flip", lambda x: x.fliplr(), np.fliplr, fixed_samples(("2d", _R, {})),
           variant="fliplr", fuzz=Fuzz("fliplr", kinds=_ALL, shapes=_one_shape(min_dims=2)),
           torch=lambda T, x: x.fliplr()),
    OpSpec("flip", lambda x: x.flipud(), np.flipud, fixed_samples(("2d", _R, {})),
           variant="flipud", fuzz=Fuzz("flipud", kinds=_ALL, shapes=_one_shape(min_dims=1)),
           torch=lambda T, x: x.flipud()),
    OpSpec("roll", lambda x, shifts, dims: x.roll(shifts, dims), _roll_ref,
           fixed_samples(("dim", _R, {"shifts": 1, "dims": 1}),
                         ("two", _R, {"shifts": (-1, 5), "dims": (0, 1)}),
                         ("flat", _R, {"shifts": 5, "dims": None}),
                         ("noncontig", _R, {"shifts": (2,), "dims": (-1,)}),
                         ("0d", [(_normal, ())], {"shifts": 3, "dims": None})),
           fuzz=Fuzz("roll", kinds=_ALL, kwargs=_roll_kwargs,
                     base=lambda ts, kw: [ts[0], kw["shifts"], kw["dims"]],
                     skip={"sizes_type": "roll(dims=None) has no dims to break"}),
           torch=lambda T, x, shifts, dims: x.roll(shifts, dims)),
    # ---- tril / triu
    OpSpec("tril", lambda x, diagonal: x.tril(diagonal), lambda x, diagonal: np.tril(x, diagonal),
           fixed_samples(("main", [(_normal, (4, 4))], {"diagonal": 0}),
                         ("wide", [(_normal, (3, 5))], {"diagonal": 1}),
                         ("batch", [(_normal, (2, 3, 4))], {"diagonal": -1}),
                         ("noncontig", _R, {"diagonal": 0})),
           fuzz=Fuzz("tril", kinds=_ALL, shapes=_one_shape(min_dims=2), kwargs=_tri_kwargs,
                     base=lambda ts, kw: [ts[0], kw["diagonal"]]),
           torch=lambda T, x, diagonal: x.tril(diagonal)),
    OpSpec("triu", lambda x, diagonal: x.triu(diagonal), lambda x, diagonal: np.triu(x, diagonal),
           fixed_samples(("main", [(_normal, (4, 4))], {"diagonal": 0}),
                         ("tall", [(_normal, (5, 3))], {"diagonal": -2}),
                         ("batch", [(_normal, (2, 3, 4))], {"diagonal": 2}),
                         ("noncontig", _R, {"diagonal": 1})),
           fuzz=Fuzz("triu", kinds=_ALL, shapes=_one_shape(min_dims=2), kwargs=_tri_kwargs,
                     base=lambda ts, kw: [ts[0], kw["diagonal"]]),
           torch=lambda T, x, diagonal: x.triu(diagonal)),
    # ---- diagonals
    OpSpec("diagonal", lambda x, offset, dim1, dim2: x.diagonal(offset, dim1, dim2),
           lambda x, offset, dim1, dim2: np.diagonal(x, offset, dim1, dim2),
           fixed_samples(("main", _R, {"offset": 0, "dim1": 0, "dim2": 1}),
                         ("above", _R, {"offset": 2, "dim1": 0, "dim2": 1}),
                         ("below_swapped", _R, {"offset": -1, "dim1": 1, "dim2": 0}),
                         ("past", _R, {"offset": 5, "dim1": 0, "dim2": 1}),
                         ("batch", [(_normal, (2, 3, 4))], {"offset": 1, "dim1": -1, "dim2": 0}),
                         ("noncontig", _R, {"offset": 0, "dim1": 0, "dim2": 1})),
           fuzz=Fuzz("diagonal", kinds=_ALL, shapes=_one_shape(min_dims=2),
                     kwargs=_diagonal_kwargs,
                     base=lambda ts, kw: [ts[0], kw["offset"], kw["dim1"], kw["dim2"]]),
           torch=lambda T, x, offset, dim1, dim2: x.diagonal(offset, dim1, dim2)),
    OpSpec("diagonal", lambda x: x.trace(), np.trace,
           fixed_samples(("square", [(_normal, (4, 4))], {}), ("wide", _R, {})),
           variant="trace", fuzz=Fuzz("trace", kinds=_ALL, shapes=_one_shape(2, 2)),
           torch=lambda T, x: x.trace()),
    OpSpec("diagonal_backward",
           lambda x, offset, dim1, dim2: x.diag_embed(offset, dim1, dim2), _diag_embed_ref,
           fixed_samples(("main", [(_normal, (4,))], {"offset": 0, "dim1": -2, "dim2": -1}),
                         ("batch", _R, {"offset": 1, "dim1": 0, "dim2": 2}),
                         ("swapped", _R, {"offset": -2, "dim1": 2, "dim2": 0}),
                         ("noncontig", _R, {"offset": 0, "dim1": 1, "dim2": -1})),
           variant="diag_embed",
           fuzz=Fuzz("diag_embed", kinds=_ALL, shapes=_one_shape(min_dims=1),
                     kwargs=_diag_embed_kwargs,
                     base=lambda ts, kw: [ts[0], kw["offset"], kw["dim1"], kw["dim2"]]),
           torch=lambda T, x, offset, dim1, dim2: x.diag_embed(offset, dim1, dim2)),
    OpSpec("diagonal_backward", lambda x, diagonal: x.diag(diagonal),
           lambda x, diagonal: np.diag(x, diagonal),
           fixed_samples(("1d", [(_normal, (4,))], {"diagonal": 0}),
                         ("1d_off", [(_normal, (3,))], {"diagonal": -2}),
                         ("2d", _R, {"diagonal": 1}), ("2d_past", _R, {"diagonal": -4})),
           variant="diag",
           fuzz=Fuzz("diag", kinds=_ALL, shapes=_diag_shapes, kwargs=_tri_kwargs,
                     base=lambda ts, kw: [ts[0], kw["diagonal"]]),
           torch=lambda T, x, diagonal: x.diag(diagonal)),
    # ---- repeat, tile, repeat_interleave
    OpSpec("reshape", lambda x, reps: x.repeat(*reps), lambda x, reps: np.tile(x, reps),
           fixed_samples(("same", _R, {"reps": (2, 1)}), ("more", _R, {"reps": (2, 1, 3)}),
                         ("zero", _R, {"reps": (0, 2)}), ("0d", [(_normal, ())], {"reps": (3,)}),
                         ("noncontig", _R, {"reps": (1, 2)})),
           variant="repeat",
           fuzz=Fuzz("repeat", kinds=_ALL, kwargs=_repeat_kwargs,
                     base=lambda ts, kw: [ts[0], kw["reps"]]),
           torch=lambda T, x, reps: x.repeat(*reps)),
    OpSpec("reshape", lambda x, dims: x.tile(dims), lambda x, dims: np.tile(x, dims),
           fixed_samples(("short", _R, {"dims": (2,)}), ("long", _R, {"dims": (2, 1, 2)})),
           variant="tile",
           fuzz=Fuzz("tile", kinds=_ALL, kwargs=_tile_kwargs,
                     base=lambda ts, kw: [ts[0], kw["dims"]]),
           torch=lambda T, x, dims: x.tile(dims)),
    OpSpec("repeat_interleave", lambda x, repeats, dim: x.repeat_interleave(repeats, dim),
           _ri_ref_any,
           fixed_samples(("int", _R, {"repeats": 2, "dim": 1}),
                         ("tensor", _R, {"repeats": tp.tensor([1, 0, 3]), "dim": 0}),
                         ("one", _R, {"repeats": tp.tensor([2]), "dim": -1}),
                         ("noncontig", _R, {"repeats": tp.tensor([2, 1, 0, 1]), "dim": 1})),
           fuzz=Fuzz("repeat_interleave", kinds=_ALL, kwargs=_ri_kwargs,
                     base=lambda ts, kw: [ts[0], kw["repeats"], kw["dim"]]),
           torch=lambda T, x, repeats, dim: x.repeat_interleave(repeats, dim)),
    OpSpec("repeat_interleave_backward", lambda x, repeats: x.repeat_interleave(repeats),
           lambda x, repeats: np.repeat(x, repeats),
           fixed_samples(("flat_int", _R, {"repeats": 2}),
                         ("flat_tensor", [(_normal, (2, 2))], {"repeats": tp.tensor([1, 0, 2, 1])})),
           variant="flat",
           fuzz=Fuzz("repeat_interleave", kinds="f", kwargs=_ri_flat_kwargs,
                     base=lambda ts, kw: [ts[0], kw["repeats"], None]),
           torch=lambda T, x, repeats: x.repeat_interleave(repeats)),
]
