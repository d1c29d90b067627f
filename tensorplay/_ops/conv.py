"""Convolution primitives: ``conv2d``, ``conv_transpose2d``, ``conv2d_weight``
(the three faces of one bilinear map) and ``im2col`` / ``col2im`` (F.unfold /
F.fold).  The public functions (argument handling, PyTorch's errors, conv1d,
unbatched inputs) are in ``conv_api.py``.

The map.  ``y = conv2d(x, w)`` is bilinear: ``y = A_w x = B_x w``.  Its three
primitives are
    conv2d(x, w [, b])            = A_w x (+ b)        (N, C, H, W) -> (N, O, Ho, Wo)
    conv_transpose2d(g, w [, b])  = A_w^T g (+ b)      (N, O, Ho, Wo) -> (N, C, H, W)
    conv2d_weight(x, g)           = B_x^T g            -> (O, C/groups, kh, kw)
and every VJP of one of them is another of them (the adjoint identities
<A_w x, g> = <x, A_w^T g> = <w, B_x^T g>), so the rules close over the three and
every order of derivative, forward or reverse, is a convolution.  The JVP of a
bilinear map is the sum of the map applied to one tangent at a time.

Geometry.  Every primitive takes ``stride=(sh, sw)``, ``padding=(pt, pb, pl, pr)``
(top, bottom, left, right: PyTorch's ``padding='same'`` pads an even kernel
asymmetrically), ``dilation=(dh, dw)`` and ``groups``.  The public functions make
the padding *exact*: ``H + pt + pb - dh (kh - 1) - 1`` divisible by ``sh``, by
taking from ``pb`` the input rows no window reaches (a bottom pad may go
negative), so that the output size of each primitive determines the input size
of its adjoint with no extra parameter:
    Ho = (H + pt + pb - dh (kh - 1) - 1) / sh + 1,
    H  = (Ho - 1) sh - pt - pb + dh (kh - 1) + 1.

The computation (``tensorplay/_kernels/conv.pyx``): im2col writes the windows of
a block of samples as one (C kh kw, n L) matrix, one BLAS GEMM per call computes
every group's product ``cols_g^T W_g^T`` (positions x channels: the orientation
OpenBLAS runs fastest here) on tensorplay's threads (the GEMM of
``_ops/linalg.py``), and ``unpack_nlo`` moves the result into NCHW while adding
the bias.  The weight gradient is the GEMM ``g^T cols^T`` over the same
cols; the input gradient is ``W^T g`` followed by col2im (the adjoint of
im2col).  Samples are processed in blocks of at most ``_BLOCK`` cols elements so
that the unrolled input stays in cache (and the memory bounded) at any batch size.
Scratch arrays are per-thread buffers reused from call to call (``_scratch``).
"""
import threading

import numpy as np

from tensorplay import _blas
from tensorplay._kernels import conv as _kc
from tensorplay._kernels import linalg as _kl
from tensorplay._ops._common import CONFIG
from tensorplay._ops.linalg import _gemm
from tensorplay._ops.registry import apply, defop, tangent_sum
from tensorplay._ops import _batching as _B
from tensorplay._pool import empty as pool_empty

__all__ = []

_BLOCK = 1 << 20        # cols elements per block of samples (4 MB in float32; 1 MB
                        # and 16 MB blocks measured within noise of it)


# ---------------------------------------------------------------- geometry
def out_size(size, k, s, p0, p1, d):
    """Output length of a convolution along one dim (floor, as PyTorch)."""
    return (size + p0 + p1 - d * (k - 1) - 1) // s + 1


def in_size(size, k, s, p0, p1, d):
    """Input length of the adjoint along one dim (exact geometry)."""
    return (size - 1) * s - p0 - p1 + d * (k - 1) + 1


def _mm(a3, b3, out3):
    """out3 := a3 @ b3 through BLAS on tensorplay's threads (numpy's matmul, BLAS
    pinned to one thread, where no BLAS symbols were found)."""
    if _blas.load():
        _gemm(a3, b3, out3)
        return
    _kl.pin()
    try:
        np.matmul(a3, b3, out=out3)
    finally:
        _kl.unpin()


def _blocks(n, per_sample):
    """Sample ranges [n0, n1) of at most _BLOCK cols elements (one sample at least)."""
    if n * per_sample <= _BLOCK:
        return ((0, n),)
    step = max(1, _BLOCK // max(per_sample, 1))
    return [(n0, min(n0 + step, n)) for n0 in range(0, n, step)]


_SCRATCH = threading.local()


def _scratch(slot, n, dtype):
    """A flat scratch array of n elements (contents arbitrary) that never leaves the
    forward that asked for it: one buffer per (slot, dtype) and Python thread,
    reused from call to call.  A fresh array of a few hundred kB costs page
    faults on every call (glibc maps and unmaps it), and the small layers of a
    CNN run at that size."""
    try:
        cache = _SCRATCH.bufs
    except AttributeError:
        cache = _SCRATCH.bufs = {}
    key = (slot, dtype)
    buf = cache.get(key)
    if buf is None or buf.size < n:
        buf = cache[key] = np.empty(n, dtype)
    return buf[:n]


def _bias(b, dtype):
    return None if b is None else np.ascontiguousarray(b, dtype)


# ---------------------------------------------------------------- forward kernels
def _conv2d_fwd(x, w, b=None, *, stride, padding, dilation, groups):
    N, C, H, W = x.shape
    O, cg, kh, kw = w.shape
    (sh, sw), (pt, pb, pl, pr), (dh, dw) = stride, padding, dilation
    Ho = out_size(H, kh, sh, pt, pb, dh)
    Wo = out_size(W, kw, sw, pl, pr, dw)
    L, R = Ho * Wo, C * kh * kw
    out = pool_empty((N, O, Ho, Wo), x.dtype)
    if out.size == 0:
        return out
    if R == 0:                                  # no input channels: the bias alone
        out[...] = 0 if b is None else np.asarray(b).reshape(1, O, 1, 1)
        return out
    x = np.ascontiguousarray(x)
    wg = np.ascontiguousarray(w).reshape(groups, O // groups, cg * kh * kw)
    bias = _bias(b, x.dtype)
    nt = CONFIG.num_threads
    dt = x.dtype
    for n0, n1 in _blocks(N, R * L):
        nb = n1 - n0
        cols = _scratch("cols", R * nb * L, dt)
        _kc.im2col(x if nb == N else x[n0:n1], cols.reshape(R, nb, L), kh, kw, sh, sw, pt,
                   pl, dh, dw, Ho, Wo, nt)
        # (positions, channels) = cols^T W^T per group: OpenBLAS runs this
        # orientation in 0.6-0.8x the time of W cols at these shapes (measured)
        tmp = _scratch("out", O * nb * L, dt)
        _mm(cols.reshape(groups, R // groups, nb * L).transpose(0, 2, 1), wg.transpose(0, 2, 1),
            tmp.reshape(groups, nb * L, O // groups))
        _kc.unpack_nlo(tmp.reshape(groups, nb, L, O // groups),
                       (out if nb == N else out[n0:n1]).reshape(nb, O, L), bias, nt)
    return out


def _nol_to_onl(g, nt):
    """(N, O, Ho, Wo) -> C-contiguous (O, N, L) (a scratch array)."""
    N, O = g.shape[:2]
    L = g.shape[2] * g.shape[3]
    src = np.ascontiguousarray(g).reshape(N, O, L)
    dst = _scratch("gt", O * N * L, g.dtype).reshape(O, N, L)
    _kc.swap01(src, dst, None, nt)
    return dst


def _conv_transpose2d_fwd(g, w, b=None, *, stride, padding, dilation, groups):
    N, O, Ho, Wo = g.shape
    _, cg, kh, kw = w.shape
    (sh, sw), (pt, pb, pl, pr), (dh, dw) = stride, padding, dilation
    H = in_size(Ho, kh, sh, pt, pb, dh)
    W = in_size(Wo, kw, sw, pl, pr, dw)
    C, L = cg * groups, Ho * Wo
    R = C * kh * kw
    out = pool_empty((N, C, H, W), g.dtype)
    if out.size == 0:
        return out
    bias = _bias(b, g.dtype)
    if L == 0 or O == 0:
        out[...] = 0 if b is None else np.asarray(b).reshape(1, C, 1, 1)
        return out
    nt = CONFIG.num_threads
    wt = w.reshape(groups, O // groups, cg * kh * kw).transpose(0, 2, 1)
    for n0, n1 in _blocks(N, R * L):
        nb = n1 - n0
        gt = _nol_to_onl(g[n0:n1], nt)
        dcols = _scratch("cols", R * nb * L, g.dtype).reshape(R, nb, L)
        _mm(wt, gt.reshape(groups, O // groups, nb * L), dcols.reshape(groups, R // groups,
                                                                      nb * L))
        _kc.col2im(dcols, out[n0:n1], bias, kh, kw, sh, sw, pt, pl, dh, dw, Ho, Wo, nt)
    return out


def _conv2d_weight_fwd(x, g, *, kernel_size, stride, padding, dilation, groups):
    N, C, H, W = x.shape
    _, O, Ho, Wo = g.shape
    kh, kw = kernel_size
    (sh, sw), (pt, pb, pl, pr), (dh, dw) = stride, padding, dilation
    cg, L = C // groups, Ho * Wo
    R = C * kh * kw
    out = np.zeros((O, cg, kh, kw), x.dtype)
    if out.size == 0 or N == 0 or L == 0:
        return out
    x = np.ascontiguousarray(x)
    nt = CONFIG.num_threads
    og = O // groups
    acc = out.reshape(groups, og, cg * kh * kw)
    part = np.empty_like(acc)
    blocks = _blocks(N, R * L)
    for n0, n1 in blocks:
        nb = n1 - n0
        cols = _scratch("cols", R * nb * L, x.dtype).reshape(R, nb, L)
        _kc.im2col(x[n0:n1], cols, kh, kw, sh, sw, pt, pl, dh, dw, Ho, Wo, nt)
        gt = _nol_to_onl(g[n0:n1], nt)
        dst = acc if len(blocks) == 1 else part
        _mm(gt.reshape(groups, og, nb * L),
            cols.reshape(groups, R // groups, nb * L).transpose(0, 2, 1), dst)
        if dst is part:
            acc += part
    return out


def _geom(params):
    return {k: params[k] for k in ("stride", "padding", "dilation", "groups")}


# ---------------------------------------------------------------- the rules
def _conv(x, w, b=None, **geom):
    return apply(_conv2d, (x, w) if b is None else (x, w, b), geom)


def _convt(g, w, b=None, **geom):
    return apply(_conv_transpose2d, (g, w) if b is None else (g, w, b), geom)


def _convw(x, g, kernel_size, **geom):
    return apply(_conv2d_weight, (x, g), dict(geom, kernel_size=tuple(kernel_size)))


def _bias_grad(g):
    return g.sum((0, 2, 3))


def _bias_tangent(tb):
    return tb.reshape(1, tb.shape[0], 1, 1)


def _conv2d_jvp(ts, out, x, w, b=None, **geom):
    tx, tw = ts[0], ts[1]
    tb = ts[2] if len(ts) > 2 else None
    return tangent_sum(None if tx is None else _conv(tx, w, tb, **geom),
                       None if tw is None else _conv(x, tw, **geom),
                       _bias_tangent(tb) if tb is not None and tx is None else None)


def _conv_transpose2d_jvp(ts, out, g, w, b=None, **geom):
    tg, tw = ts[0], ts[1]
    tb = ts[2] if len(ts) > 2 else None
    return tangent_sum(None if tg is None else _convt(tg, w, tb, **geom),
                       None if tw is None else _convt(g, tw, **geom),
                       _bias_tangent(tb) if tb is not None and tg is None else None)


# ---------------------------------------------------------------- vmap
def _fold_rule(op, args, batched, size, params):
    """vmap over an N-mapped operand only (the input of conv2d, the cotangent of
    conv_transpose2d): the vmap batch joins N, exactly."""
    a = args[0]
    s = a._data.shape
    out = apply(op, (a.reshape((s[0] * s[1],) + s[2:]),) + tuple(args[1:]), params)
    o = out._data.shape
    return out.reshape((size, s[1]) + o[1:])


def _to_channels(a, b, size):
    """Physical (B, N, C, ...) -> (N, B*C, ...), the vmap batch as channel groups."""
    a = _B._materialize(a, b, size)
    s = a._data.shape
    return a.permute((1, 0) + tuple(range(2, len(s)))).reshape((s[1], s[0] * s[2]) + s[3:])


def _to_rows(a, b, size):
    """Physical (B, K, ...) -> (B*K, ...) (weights and biases)."""
    a = _B._materialize(a, b, size)
    s = a._data.shape
    return a.reshape((s[0] * s[1],) + s[2:])


def _grouped(op, args, batched, size, params):
    """Any operand batched: the B copies of the map become B * groups groups."""
    x = _to_channels(args[0], batched[0], size)
    rest = [_to_rows(a, b, size) for a, b in zip(args[1:], batched[1:])]
    p = dict(params, groups=params["groups"] * size)
    out = apply(op, (x,) + tuple(rest), p)
    s = out._data.shape
    return out.reshape((s[0], size, s[1] // size) + s[2:]).permute(
        (1, 0) + tuple(range(2, len(s) + 1)))


def _conv_rule(op, args, batched, size, params):
    if batched[0] and not any(batched[1:]):
        return _fold_rule(op, args, batched, size, params)
    return _grouped(op, args, batched, size, params)


def _weight_rule(op, args, batched, size, params):
    """conv2d_weight sums over N: the batch goes into the groups of both operands."""
    x = _to_channels(args[0], batched[0], size)
    g = _to_channels(args[1], batched[1], size)
    out = apply(op, (x, g), dict(params, groups=params["groups"] * size))
    s = out._data.shape
    return out.reshape((size, s[0] // size) + s[1:])


# ---------------------------------------------------------------- registration
# y = A_w x + b:  x-bar = A_w^T g,  w-bar = B_x^T g,  b-bar = sum_{n,h,w} g.
_conv2d = defop(
    "conv2d", _conv2d_fwd,
    vjp=(lambda g, out, x, w, b=None, **p: _convt(g, w, **p),
         lambda g, out, x, w, b=None, **p: _convw(x, g, w.shape[2:], **p),
         lambda g, out, x, w, b=None, **p: _bias_grad(g)),
    jvp=_conv2d_jvp, saves=("inputs",), batch=_conv_rule)

# z = A_w^T g + b:  g-bar = A_w z-bar,  w-bar = B_{z-bar}^T g,  b-bar = sum z-bar.
_conv_transpose2d = defop(
    "conv_transpose2d", _conv_transpose2d_fwd,
    vjp=(lambda gz, out, g, w, b=None, **p: _conv(gz, w, **p),
         lambda gz, out, g, w, b=None, **p: _convw(gz, g, w.shape[2:], **p),
         lambda gz, out, g, w, b=None, **p: _bias_grad(gz)),
    jvp=_conv_transpose2d_jvp, saves=("inputs",), batch=_conv_rule)

# v = B_x^T g:  x-bar = A_{v-bar}^T g,  g-bar = A_{v-bar} x.
_conv2d_weight = defop(
    "conv2d_weight", _conv2d_weight_fwd,
    vjp=(lambda gv, out, x, g, kernel_size, **p: _convt(g, gv, **p),
         lambda gv, out, x, g, kernel_size, **p: _conv(x, gv, **p)),
    jvp=lambda ts, out, x, g, kernel_size, **p: tangent_sum(
        None if ts[0] is None else _convw(ts[0], g, kernel_size, **p),
        None if ts[1] is None else _convw(x, ts[1], kernel_size, **p)),
    saves=("inputs",), batch=_weight_rule)


# ---------------------------------------------------------------- unfold / fold
# im2col(x) (N, C, H, W) -> (N, C kh kw, L) and col2im, its adjoint: both linear,
# each the other's VJP.  Symmetric padding (ph, pw), sizes given (not exact).
def _unfold_geom(kernel_size, dilation, padding, stride):
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel_size, dilation, padding, stride
    return kh, kw, sh, sw, ph, pw, dh, dw


def _im2col_fwd(x, *, kernel_size, dilation, padding, stride):
    N, C, H, W = x.shape
    kh, kw, sh, sw, ph, pw, dh, dw = _unfold_geom(kernel_size, dilation, padding, stride)
    Ho = out_size(H, kh, sh, ph, ph, dh)
    Wo = out_size(W, kw, sw, pw, pw, dw)
    out = pool_empty((N, C * kh * kw, Ho * Wo), x.dtype)
    if out.size:
        _kc.im2col(np.ascontiguousarray(x), out.transpose(1, 0, 2), kh, kw, sh, sw, ph, pw,
                   dh, dw, Ho, Wo, CONFIG.num_threads)
    return out


def _col2im_fwd(cols, *, output_size, kernel_size, dilation, padding, stride):
    N, R, _ = cols.shape
    H, W = output_size
    kh, kw, sh, sw, ph, pw, dh, dw = _unfold_geom(kernel_size, dilation, padding, stride)
    Ho = out_size(H, kh, sh, ph, ph, dh)
    Wo = out_size(W, kw, sw, pw, pw, dw)
    C = R // (kh * kw)
    out = pool_empty((N, C, H, W), cols.dtype)
    if out.size:
        _kc.col2im(np.ascontiguousarray(cols).transpose(1, 0, 2), out, None,
                   kh, kw, sh, sw, ph, pw, dh, dw, Ho, Wo, CONFIG.num_threads)
    return out


def _fold_only_rule(op, args, batched, size, params):
    return _fold_rule(op, args, batched, size, params)


_im2col = defop(
    "im2col", _im2col_fwd,
    vjp=(lambda g, out, x, **p: apply(_col2im, (g,), dict(p, output_size=x.shape[2:])),),
    jvp=lambda ts, out, x, **p: apply(_im2col, (ts[0],), p),
    batch=_fold_only_rule)
_col2im = defop(
    "col2im", _col2im_fwd,
    vjp=(lambda g, out, cols, output_size, **p: apply(_im2col, (g,), p),),
    jvp=lambda ts, out, cols, **p: apply(_col2im, (ts[0],), p),
    batch=_fold_only_rule)
