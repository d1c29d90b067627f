"""Rearranging shape ops: flip, roll, tril/triu, diagonal and diag_embed,
repeat_interleave (primitives), and repeat, tile, diag, trace, fliplr/flipud
(compositions).

Every primitive here is linear, so its JVP is the primitive applied to the
tangent and its VJP the adjoint (flip: flip; roll: roll back; tril: tril;
diagonal: diagonal_backward; repeat_interleave: its segment sum), each itself a
registered primitive, so higher orders come free.

Forwards: ``tril``/``triu`` run the kernel ``_kernels/shape.pyx:tri_fwd`` (one
pass, every dtype); ``flip`` and ``roll`` are numpy copies of views (``roll``:
one block copy per combination of the two halves of each rolled dim) into an
output from the cache of ``tensorplay/_pool.py``; ``diagonal`` is a view
(strided, sharing storage and the version counter); ``repeat_interleave`` with a
tensor of repeats is numpy's ``repeat``.  ``repeat``/``tile`` are ``view`` +
``expand`` + one copying ``reshape``, and ``repeat_interleave`` with an int the
same: derivatives come from those primitives.  Measurements: docs/DECISIONS.md,
"Shape ops".
"""
import itertools
import math
import operator

import numpy as np
from numpy.lib.stride_tricks import as_strided

from tensorplay import _dtype
from tensorplay._config import CONFIG
from tensorplay._kernels import shape as _ks
from tensorplay._ops import shape as _shape
from tensorplay._ops._common import normalize_dim
from tensorplay._ops._validate import (DimArg, DimsArg, IntArg, Signature, SizesArg,
                                       TensorArg, declare)
from tensorplay._ops.registry import apply, defop
from tensorplay._ops import _batching as _B
from tensorplay._pool import empty as pool_empty
from tensorplay._tensor import Tensor

__all__ = ["flip", "fliplr", "flipud", "roll", "tril", "triu", "diagonal", "diag_embed",
           "diag", "trace", "repeat", "tile", "repeat_interleave"]
METHODS = ["flip", "fliplr", "flipud", "roll", "tril", "triu", "diagonal", "diag_embed",
           "diag", "trace", "repeat", "tile", "repeat_interleave"]
INPLACE = ["tril", "triu"]


# ---------------------------------------------------------------- flip
def _flip_fwd(x, dims):
    key = tuple(slice(None, None, -1) if i in dims else slice(None) for i in range(x.ndim))
    out = pool_empty(x.shape, x.dtype)
    v = x[key]
    if v.ndim and v.shape[-1] >= 16:           # rows long enough for the kernel
        _ks.copy_fwd(v, out, CONFIG.num_threads)
    else:
        np.copyto(out, v)
    return out


_flip = defop("flip", _flip_fwd,
              vjp=(lambda g, out, x, dims: apply(_flip, (g,), {"dims": dims}),),
              jvp=lambda ts, out, x, dims: apply(_flip, (ts[0],), {"dims": dims}),
              batch=_B.dims_rule("dims"))

_check_flip = declare(Signature("flip", TensorArg("input"), DimsArg("dims")))


def flip(input, *dims):
    """A copy of ``input`` with the order of elements reversed along ``dims`` (an
    int or a sequence; an empty sequence flips nothing), as ``torch.flip``.
    Every dtype; the gradient is the cotangent flipped back.

    Raises:
        TypeError: non-integer dims.  IndexError: a dim out of range.
        RuntimeError: a repeated dim.
    """
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = tuple(dims[0])
    if dims == ():
        if not isinstance(input, Tensor):
            _check_flip(input, None)
        return apply(_flip, (input,), {"dims": ()})
    input, dims = _check_flip(input, dims)
    return apply(_flip, (input,), {"dims": dims})


_check_fliplr = declare(Signature("fliplr", TensorArg("input", min_ndim=2)))
_check_flipud = declare(Signature("flipud", TensorArg("input", min_ndim=1)))


def fliplr(input):
    """``flip(input, 1)``; the input must have at least 2 dims (RuntimeError)."""
    input, = _check_fliplr(input)          # (min_ndim: the generic checker's tuple)
    return apply(_flip, (input,), {"dims": (1,)})


def flipud(input):
    """``flip(input, 0)``; the input must have at least 1 dim (RuntimeError)."""
    input, = _check_flipud(input)
    return apply(_flip, (input,), {"dims": (0,)})


# ---------------------------------------------------------------- roll
def _roll_fwd(x, shifts, dims):
    out = pool_empty(x.shape, x.dtype)
    if x.size == 0:
        return out
    # along each rolled dim the output is two blocks: out[s:] = x[:n-s], out[:s] = x[n-s:]
    parts = []
    for d in range(x.ndim):
        s = shifts[dims.index(d)] if d in dims else 0
        n = x.shape[d]
        parts.append([(slice(None), slice(None))] if s == 0 else
                     [(slice(s, None), slice(0, n - s)), (slice(0, s), slice(n - s, None))])
    for combo in itertools.product(*parts):
        out[tuple(c[0] for c in combo)] = x[tuple(c[1] for c in combo)]
    return out


def _roll(x, shifts, dims):
    return apply(_roll_p, (x,), {"shifts": shifts, "dims": dims})


def _unroll(t, shifts, dims):
    shp = t._data.shape
    return _roll(t, tuple((shp[d] - s) % shp[d] if shp[d] else 0
                          for s, d in zip(shifts, dims)), dims)


_roll_p = defop("roll", _roll_fwd,
                vjp=(lambda g, out, x, shifts, dims: _unroll(g, shifts, dims),),
                jvp=lambda ts, out, x, shifts, dims: _roll(ts[0], shifts, dims),
                batch=_B.dims_rule("dims"))

_check_roll = declare(Signature("roll", TensorArg("input"), SizesArg("shifts"),
                                SizesArg("dims", default=())))


def roll(input, shifts, dims=None):
    """Elements shifted cyclically by ``shifts`` along ``dims`` (ints or sequences
    of one length; a dim may repeat, its shifts add up); with ``dims=None`` the
    tensor is flattened, rolled and given its shape back, as ``torch.roll``.

    Raises:
        TypeError: non-integer shifts or dims.  IndexError: a dim out of range.
        RuntimeError: shifts and dims of different lengths; no shifts.
    """
    flat = dims is None
    input, shifts, dims = _check_roll(input, shifts, () if flat else dims)
    if flat:
        if len(shifts) != 1:
            raise RuntimeError(f"roll(): shifts and dimensions must align. shifts: "
                               f"{len(shifts)}, dims: 0")
        shp = input._data.shape
        x = _shape.reshape(input, (-1,))
        n = x._data.shape[0]
        return _shape.reshape(_roll(x, (shifts[0] % n if n else 0,), (0,)), shp)
    if len(shifts) != len(dims) or not shifts:
        raise RuntimeError(f"roll(): shifts and dimensions must align. shifts: "
                           f"{len(shifts)}, dims:{len(dims)}")
    shp = input._data.shape
    total = {}
    for s, d in zip(shifts, dims):
        d = normalize_dim(d, input._data.ndim, "roll", "dims")
        total[d] = total.get(d, 0) + s
    if not shp:                             # 0-d: nothing moves
        return _roll(input, (), ())
    dims = tuple(sorted(total))
    shifts = tuple(total[d] % shp[d] if shp[d] else 0 for d in dims)
    return _roll(input, shifts, dims)


# ---------------------------------------------------------------- tril / triu
def _tri_fwd(x, diagonal, lower):
    shp = x.shape
    out = pool_empty(shp, x.dtype)
    x3 = x.reshape((math.prod(shp[:-2]),) + shp[-2:])   # a view unless a copy is needed
    o3 = out.reshape(x3.shape)
    if x.dtype == np.bool_:
        x3, o3 = x3.view(np.uint8), o3.view(np.uint8)
    _ks.tri_fwd(x3, o3, diagonal, lower, CONFIG.num_threads)
    return out


_tril = defop("tril", lambda x, diagonal: _tri_fwd(x, diagonal, True),
              vjp=(lambda g, out, x, diagonal: apply(_tril, (g,), {"diagonal": diagonal}),),
              jvp=lambda ts, out, x, diagonal: apply(_tril, (ts[0],), {"diagonal": diagonal}),
              batch=_B.leading_rule)
_triu = defop("triu", lambda x, diagonal: _tri_fwd(x, diagonal, False),
              vjp=(lambda g, out, x, diagonal: apply(_triu, (g,), {"diagonal": diagonal}),),
              jvp=lambda ts, out, x, diagonal: apply(_triu, (ts[0],), {"diagonal": diagonal}),
              batch=_B.leading_rule)

_check_tril = declare(Signature("tril", TensorArg("input", min_ndim=2),
                                IntArg("diagonal", default=0)))
_check_triu = declare(Signature("triu", TensorArg("input", min_ndim=2),
                                IntArg("diagonal", default=0)))


def tril(input, diagonal=0):
    """The lower triangle of the matrices in the last two dims of ``input``
    (elements ``j <= i + diagonal`` kept, the rest 0): a copy, every dtype.
    The gradient is ``tril`` of the cotangent.

    Raises:
        TypeError: a non-integer diagonal.  RuntimeError: fewer than 2 dims.
    """
    input, diagonal = _check_tril(input, diagonal)
    return apply(_tril, (input,), {"diagonal": diagonal})


def triu(input, diagonal=0):
    """The upper triangle (elements ``j >= i + diagonal`` kept): as ``tril``."""
    input, diagonal = _check_triu(input, diagonal)
    return apply(_triu, (input,), {"diagonal": diagonal})


# ---------------------------------------------------------------- diagonal
def _diag_view(x, offset, dim1, dim2):
    """The diagonal of ``x`` over (dim1, dim2) as a strided view, writable when
    ``x`` is (numpy's own ``diagonal`` is read-only), the diagonal last."""
    if offset >= 0:
        base = x[(slice(None),) * dim2 + (slice(min(offset, x.shape[dim2]), None),)]
    else:
        base = x[(slice(None),) * dim1 + (slice(min(-offset, x.shape[dim1]), None),)]
    n = min(base.shape[dim1], base.shape[dim2])
    rest = [i for i in range(x.ndim) if i not in (dim1, dim2)]
    shape = tuple(base.shape[i] for i in rest) + (n,)
    strides = tuple(base.strides[i] for i in rest) + (base.strides[dim1] + base.strides[dim2],)
    return as_strided(base, shape, strides, writeable=base.flags.writeable)


def _diagonal(x, offset, dim1, dim2):
    return apply(_diagonal_p, (x,), {"offset": offset, "dim1": dim1, "dim2": dim2})


def _diagonal_backward_fwd(g, shape, offset, dim1, dim2):
    out = np.zeros(shape, g.dtype)
    _diag_view(out, offset, dim1, dim2)[...] = g
    return out


def _diagonal_backward(g, shape, offset, dim1, dim2):
    return apply(_diagonal_backward_p, (g,),
                 {"shape": shape, "offset": offset, "dim1": dim1, "dim2": dim2})


# diagonal: a view; its VJP writes the cotangent on the diagonal of zeros
# (diagonal_backward, whose adjoint is diagonal again).
_diagonal_p = defop(
    "diagonal", _diag_view,
    vjp=(lambda g, out, x, offset, dim1, dim2:
         _diagonal_backward(g, x.shape, offset, dim1, dim2),),
    jvp=lambda ts, out, x, offset, dim1, dim2: _diagonal(ts[0], offset, dim1, dim2),
    view=True, batch=_B.diagonal_rule)
_diagonal_backward_p = defop(
    "diagonal_backward", _diagonal_backward_fwd,
    vjp=(lambda gb, out, g, shape, offset, dim1, dim2: _diagonal(gb, offset, dim1, dim2),),
    jvp=lambda ts, out, g, shape, offset, dim1, dim2:
        _diagonal_backward(ts[0], shape, offset, dim1, dim2), batch=_B.diagonal_backward_rule)

_check_diagonal = declare(Signature("diagonal", TensorArg("input"), IntArg("offset", default=0),
                                    DimArg("dim1", default=0), DimArg("dim2", default=1)))
_check_diag_embed = declare(Signature("diag_embed", TensorArg("input"),
                                      IntArg("offset", default=0),
                                      DimArg("dim1", extra=1, default=-2),
                                      DimArg("dim2", extra=1, default=-1)))


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal of ``input`` over dims ``dim1`` and ``dim2`` (``offset`` > 0
    above the main diagonal, < 0 below), appended as the last dim: a view sharing
    storage and the version counter (writable when ``input`` is), as
    ``torch.diagonal``.  An offset past the matrix gives a size-0 diagonal.

    Raises:
        TypeError: non-integer arguments.  IndexError: a dim out of range.
        RuntimeError: ``dim1 == dim2``.
    """
    input, offset, dim1, dim2 = _check_diagonal(input, offset, dim1, dim2)
    if dim1 == dim2 or input._data.ndim < 2:
        raise RuntimeError(f"diagonal(): diagonal dimensions cannot be identical {dim1}, "
                           f"{dim2}")
    return _diagonal(input, offset, dim1, dim2)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """A tensor whose diagonals over (``dim1``, ``dim2``) -- dims of the output,
    which has one dim more than ``input`` -- hold the last dim of ``input``
    (zeros elsewhere), as ``torch.diag_embed``; its ``diagonal(offset, dim1,
    dim2)`` is ``input``.  The gradient is the diagonal of the cotangent.

    Raises:
        TypeError: non-integer arguments.  IndexError: a dim out of range.
        RuntimeError: ``dim1 == dim2``, or a 0-d input.
    """
    input, offset, dim1, dim2 = _check_diag_embed(input, offset, dim1, dim2)
    shp = input._data.shape
    if not shp:
        raise RuntimeError("diag_embed(): expected a tensor with at least 1 dim, got 0-d")
    if dim1 == dim2:
        raise RuntimeError(f"diag_embed(): diagonal dimensions cannot be identical {dim1}, "
                           f"{dim2}")
    m = shp[-1] + abs(offset)
    out = list(shp[:-1])
    for d in sorted((dim1, dim2)):
        out.insert(d, m)
    return _diagonal_backward(input, tuple(out), offset, dim1, dim2)


_check_diag = declare(Signature("diag", TensorArg("input"), IntArg("diagonal", default=0)))
_check_trace = declare(Signature("trace", TensorArg("input")))


def diag(input, diagonal=0):
    """A 1-D input becomes the square matrix with it on diagonal ``diagonal``; a
    2-D input gives a copy of its diagonal ``diagonal`` (as ``torch.diag``).

    Raises:
        TypeError: a non-integer diagonal.  RuntimeError: other numbers of dims.
    """
    input, diagonal = _check_diag(input, diagonal)
    nd = input._data.ndim
    if nd == 1:
        return diag_embed(input, diagonal, 0, 1)
    if nd == 2:
        return _shape.clone(_diagonal(input, diagonal, 0, 1))
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {nd}D")


def trace(input):
    """The sum of the main diagonal of a 2-D tensor (integer inputs give int64,
    as ``sum``).  RuntimeError for other numbers of dims."""
    input = _check_trace(input)
    if input._data.ndim != 2:
        raise RuntimeError(f"trace(): expected a matrix, but got tensor with dim "
                           f"{input._data.ndim}")
    return _diagonal(input, 0, 0, 1).sum()


# ---------------------------------------------------------------- repeat and tile
_check_repeat = declare(Signature("repeat", TensorArg("input"), SizesArg("repeats")))
_check_tile = declare(Signature("tile", TensorArg("input"), SizesArg("dims")))


def _repeat(input, reps, op):
    shp = input._data.shape
    if len(reps) < len(shp):
        raise RuntimeError(f"{op}(): Number of dimensions of repeat dims can not be smaller "
                           f"than number of dimensions of tensor")
    if any(r < 0 for r in reps):
        raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension "
                           f"{min(reps)}: {list(reps)}")
    shp = (1,) * (len(reps) - len(shp)) + shp
    inter = tuple(v for s in shp for v in (1, s))
    big = tuple(v for r, s in zip(reps, shp) for v in (r, s))
    x = _shape.view(input, inter) if input._data.ndim else _shape.reshape(input, inter)
    return _shape.reshape(_shape.expand(x, big), tuple(r * s for r, s in zip(reps, shp)))


def repeat(input, *repeats):
    """``input`` repeated ``repeats[i]`` times along dim i (``repeats`` may have
    more entries than ``input`` has dims: new leading dims), as
    ``Tensor.repeat`` (numpy's ``tile``).  A copy; a composition of view,
    expand and reshape, so the gradient sums the copies.

    Raises:
        TypeError: non-integer repeats.  RuntimeError: fewer repeats than dims,
            or a negative repeat.
    """
    if len(repeats) == 1 and isinstance(repeats[0], (list, tuple)):
        repeats = tuple(repeats[0])
    input, repeats = _check_repeat(input, repeats)
    return _repeat(input, repeats, "repeat")


def tile(input, dims):
    """``repeat`` with ``dims`` padded by leading 1s when it is shorter than the
    number of dims of ``input`` (as ``torch.tile``).  Errors as ``repeat``."""
    input, dims = _check_tile(input, dims)
    dims = (1,) * (input._data.ndim - len(dims)) + dims
    return _repeat(input, dims, "tile")


# ---------------------------------------------------------------- repeat_interleave
def _ri_fwd(x, repeats, dim):
    return np.repeat(x, repeats, axis=dim)


def _ri_backward_fwd(g, repeats, dim):
    """out[i] := sum of the repeats[i] rows of g that copy input row i (along dim)."""
    shape = list(g.shape)
    shape[dim] = len(repeats)
    out = np.zeros(shape, g.dtype)
    nz = np.flatnonzero(repeats)
    if nz.size and g.shape[dim]:
        starts = np.concatenate(([0], np.cumsum(repeats)[:-1]))[nz]
        idx = (slice(None),) * dim + (nz,)
        out[idx] = np.add.reduceat(g, starts, axis=dim)
    return out


def _ri(x, repeats, dim):
    return apply(_ri_p, (x,), {"repeats": repeats, "dim": dim})


def _ri_backward(g, repeats, dim):
    return apply(_ri_backward_p, (g,), {"repeats": repeats, "dim": dim})


_ri_p = defop("repeat_interleave", _ri_fwd,
              vjp=(lambda g, out, x, repeats, dim: _ri_backward(g, repeats, dim),),
              jvp=lambda ts, out, x, repeats, dim: _ri(ts[0], repeats, dim),
              batch=_B.dims_rule("dim"))
_ri_backward_p = defop("repeat_interleave_backward", _ri_backward_fwd,
                       vjp=(lambda gb, out, g, repeats, dim: _ri(gb, repeats, dim),),
                       jvp=lambda ts, out, g, repeats, dim: _ri_backward(ts[0], repeats, dim),
                       batch=_B.dims_rule("dim"))

_check_ri = declare(Signature("repeat_interleave", TensorArg("input"),
                              TensorArg("repeats", kinds="i", numbers=True),
                              DimArg("dim", default=0)))


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element (``dim=None``: of the flattened input) or each slice along
    ``dim`` repeated ``repeats`` times, as ``torch.repeat_interleave``.

    ``repeats`` is an int, or an integer tensor with one entry per slice (or one
    entry for all).  With a single integer tensor argument, the result is
    ``repeat_interleave(arange(len(repeats)), repeats)`` (int64).
    ``output_size``, if given, must be the total length.  An int repeat is a
    composition (unsqueeze, expand, reshape); a tensor of repeats runs the
    ``repeat_interleave`` primitive, whose gradient sums each input slice's copies.

    Raises:
        TypeError: non-integer repeats or dim.  NotImplementedError: a float
            tensor of repeats.  IndexError: dim out of range.
        RuntimeError: negative repeats, repeats of the wrong length, or an
            output_size that is not the total.
    """
    if repeats is None:
        if not isinstance(input, Tensor) or input._data.dtype.kind not in "iu" or \
                input._data.ndim > 1:
            raise TypeError("repeat_interleave(): with one argument, 'repeats' must be a "
                            "1-D integer tensor")
        reps = input._data.reshape(-1)
        if (reps < 0).any():
            raise RuntimeError("repeat_interleave(): repeats can not be negative")
        return Tensor._wrap(np.repeat(np.arange(reps.size, dtype=np.int64), reps))
    flat = dim is None
    if flat and isinstance(input, Tensor):
        input = _shape.reshape(input, (-1,))
    input, repeats, dim = _check_ri(input, repeats, 0 if flat else dim)
    if isinstance(repeats, Tensor) and repeats._data.dtype.kind not in "iu":
        raise NotImplementedError(f"repeat_interleave(): argument 'repeats' must be an "
                                  f"integer tensor, got {repeats.dtype}")
    n = input._data.shape[dim] if input._data.ndim else 1
    if isinstance(repeats, Tensor):
        reps = np.asarray(repeats._data, np.int64).reshape(-1)
        if repeats._data.ndim > 1:
            raise RuntimeError("repeat_interleave(): repeats must be 0-dim or 1-dim tensor")
        if reps.size == 1:
            reps = np.full(n, reps[0], np.int64)
        elif reps.size != n:
            raise RuntimeError(f"repeat_interleave(): repeats must have the same size as "
                               f"input along dim, but got repeats.size(0) = {reps.size} and "
                               f"input.size({dim}) = {n}")
        if (reps < 0).any():
            raise RuntimeError("repeat_interleave(): repeats can not be negative")
        total = int(reps.sum())
    else:
        r = operator.index(repeats)
        if r < 0:
            raise RuntimeError("repeat_interleave(): Repeats must be non-negative")
        total = r * n
    if output_size is not None and output_size != total:
        raise RuntimeError(f"repeat_interleave(): output_size {output_size} is not the "
                           f"total number of repeats {total}")
    if input._data.ndim == 0:
        input = _shape.reshape(input, (1,))
    if isinstance(repeats, Tensor):
        return _ri(input, reps, dim)
    shp = input._data.shape
    x = _shape.unsqueeze(input, dim + 1)
    x = _shape.expand(x, shp[:dim + 1] + (r,) + shp[dim + 1:])
    return _shape.reshape(x, shp[:dim] + (shp[dim] * r,) + shp[dim + 1:])
