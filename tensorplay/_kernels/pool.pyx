# Design:
# a) Every pooling kernel works on C-contiguous planes: the Python layer views the
#    input as (P, H, W) with P = N * C (1-D pools have H = 1), so batched,
#    unbatched and vmapped inputs are the same loop.  One prange over planes, with
#    one thread per GRAIN input elements (_openmp_helpers.pxd), capped at P.
# b) Windows are separable and given per output row / column by the caller as
#    int64 arrays: start (the first tap inside the input), count (taps inside the
#    input) and a step (the dilation).  Regular, padded, dilated, ceil_mode and
#    adaptive windows are all of this form, so each kernel has one inner loop and
#    the window arithmetic lives (and is tested) in one Python function.
# c) max_pool_fwd writes the values and PyTorch's flat per-plane indices
#    (h * W + w).  Scan order is h outer, w inner; a tap replaces the running
#    maximum when it is larger or NaN (PyTorch's CPU rule: ties keep the first
#    maximum, a NaN propagates and the last NaN's index is kept).  Windows with
#    no tap inside the input are rejected by _check_windows (the Python layer
#    refuses those shapes before: see _ops/pool.py).
# d) pool_gather / pool_scatter read indices (the max pool's, or a user's) and
#    check each one where they read it (_index.pxd): out[p, j] = x[p, idx[p, j]]
#    and out[p, idx[p, j]] += g[p, j] (out zero-filled first).  They are the JVP
#    and the VJP of max pooling.
# e) avg_pool_fwd / avg_pool_bwd: the window sum (accumulated in double) divided
#    by a per-output divisor (count_include_pad / divisor_override / adaptive are
#    the caller's choice of divisor); the backward spreads g / divisor over the
#    window (out zero-filled first).  Dilation is 1 (PyTorch's avg pools have none).
# Directives are set in setup.py.
cimport numpy as cnp
from cython.parallel cimport prange
from libc.string cimport memset
from libc.math cimport INFINITY

from ._openmp_helpers cimport GRAIN, _threads_for
from ._index cimport _bad_index, _index_error

cnp.import_array()

ctypedef cnp.int64_t i64


cdef int _nt(Py_ssize_t work, Py_ssize_t planes, int n_threads) noexcept nogil:
    cdef int nt = _threads_for(work, GRAIN, n_threads)
    return <int>planes if nt > planes else nt


# ---------------------------------------------------------------- max pooling
cdef void _max_plane(const double* x, double* out, i64* idx, Py_ssize_t W,
                     const i64* hs, const i64* hc, Py_ssize_t dh, Py_ssize_t OH,
                     const i64* ws, const i64* wc, Py_ssize_t dw,
                     Py_ssize_t OW) noexcept nogil:
    """out[oh, ow] := max over the window, idx[oh, ow] := its flat position."""
    cdef Py_ssize_t oh, ow, i, j, h, w, k
    cdef bint better
    cdef double m, v
    for oh in range(OH):
        for ow in range(OW):
            m = -INFINITY
            k = hs[oh] * W + ws[ow]         # PyTorch: the first tap of the window
            for i in range(hc[oh]):
                h = hs[oh] + i * dh
                for j in range(wc[ow]):
                    w = ws[ow] + j * dw
                    v = x[h * W + w]
                    # first maximum; NaN propagates (branch-free: random data
                    # would mispredict a branch half the time)
                    better = (v > m) | (v != v)
                    m = v if better else m
                    k = (h * W + w) if better else k
            out[oh * OW + ow] = m
            idx[oh * OW + ow] = k


cdef void _max_plane_f(const float* x, float* out, i64* idx, Py_ssize_t W,
                       const i64* hs, const i64* hc, Py_ssize_t dh, Py_ssize_t OH,
                       const i64* ws, const i64* wc, Py_ssize_t dw,
                       Py_ssize_t OW) noexcept nogil:
    """_max_plane for float32."""
    cdef Py_ssize_t oh, ow, i, j, h, w, k
    cdef bint better
    cdef float m, v
    for oh in range(OH):
        for ow in range(OW):
            m = -INFINITY
            k = hs[oh] * W + ws[ow]
            for i in range(hc[oh]):
                h = hs[oh] + i * dh
                for j in range(wc[ow]):
                    w = ws[ow] + j * dw
                    v = x[h * W + w]
                    better = (v > m) | (v != v)
                    m = v if better else m
                    k = (h * W + w) if better else k
            out[oh * OW + ow] = m
            idx[oh * OW + ow] = k


cdef int _check_windows(str op, cnp.ndarray start, cnp.ndarray count, Py_ssize_t step,
                        Py_ssize_t n, Py_ssize_t size) except -1:
    """Windows inside [0, size): the kernels trust them (bounds checks are off)."""
    cdef Py_ssize_t o
    cdef i64 s, c
    if cnp.PyArray_TYPE(start) != cnp.NPY_INT64 or cnp.PyArray_TYPE(count) != cnp.NPY_INT64 \
            or not cnp.PyArray_IS_C_CONTIGUOUS(start) or not cnp.PyArray_IS_C_CONTIGUOUS(count) \
            or cnp.PyArray_SIZE(start) != n or cnp.PyArray_SIZE(count) != n:
        raise ValueError(f"{op}: window arrays must be C-contiguous int64 of size {n}")
    if step < 1:
        raise ValueError(f"{op}: window step must be >= 1, got {step}")
    cdef const i64* sp = <const i64*>cnp.PyArray_DATA(start)
    cdef const i64* cp = <const i64*>cnp.PyArray_DATA(count)
    for o in range(n):
        s = sp[o]
        c = cp[o]
        if c < 1 or s < 0 or s + (c - 1) * step >= size:
            raise ValueError(f"{op}: window {o} (start {s}, {c} taps, step {step}) is not "
                             f"inside [0, {size})")
    return 0


cdef int _check_planes(str op, arrays, int t) except -1:
    for a in arrays:
        if cnp.PyArray_TYPE(a) != t or not cnp.PyArray_IS_C_CONTIGUOUS(a) or \
                cnp.PyArray_NDIM(a) != 3:
            raise ValueError(f"{op}: expected C-contiguous 3-D arrays of dtype "
                             f"{arrays[0].dtype}, got {[(b.dtype, (<object>b).shape) for b in arrays]}")
    if t != cnp.NPY_FLOAT and t != cnp.NPY_DOUBLE:
        raise TypeError(f"{op}: expected float32/float64, got {arrays[0].dtype}")
    return 0


def max_pool_fwd(cnp.ndarray x not None, cnp.ndarray hs not None, cnp.ndarray hc not None,
                 Py_ssize_t dh, cnp.ndarray ws not None, cnp.ndarray wc not None,
                 Py_ssize_t dw, cnp.ndarray out not None, cnp.ndarray idx not None,
                 int n_threads):
    """out[p, oh, ow] := max_{i<hc[oh], j<wc[ow]} x[p, hs[oh] + i dh, ws[ow] + j dw];
    idx[p, oh, ow] := the flat position h * W + w of that maximum (first in scan
    order; NaN wins).

    x : C-contiguous float32/float64 (P, H, W) (IN)
    hs, hc : int64 (OH,): first tap and tap count of each window row (IN)
    ws, wc : int64 (OW,): the same for columns (IN)
    dh, dw : the steps between taps (dilation) >= 1
    out : C-contiguous (P, OH, OW), x's dtype (OUT)
    idx : C-contiguous int64 (P, OH, OW) (OUT)
    """
    cdef int t = cnp.PyArray_TYPE(x)
    _check_planes("max_pool_fwd", (x, out), t)
    cdef Py_ssize_t P = x.shape[0], H = x.shape[1], W = x.shape[2]
    cdef Py_ssize_t OH = out.shape[1], OW = out.shape[2], p
    if out.shape[0] != P or cnp.PyArray_TYPE(idx) != cnp.NPY_INT64 or \
            not cnp.PyArray_IS_C_CONTIGUOUS(idx) or cnp.PyArray_SIZE(idx) != P * OH * OW:
        raise ValueError("max_pool_fwd: out and idx must be (P, OH, OW)")
    _check_windows("max_pool_fwd", hs, hc, dh, OH, H)
    _check_windows("max_pool_fwd", ws, wc, dw, OW, W)
    if P * OH * OW == 0:
        return
    cdef const i64* hsp = <const i64*>cnp.PyArray_DATA(hs)
    cdef const i64* hcp = <const i64*>cnp.PyArray_DATA(hc)
    cdef const i64* wsp = <const i64*>cnp.PyArray_DATA(ws)
    cdef const i64* wcp = <const i64*>cnp.PyArray_DATA(wc)
    cdef i64* ip = <i64*>cnp.PyArray_DATA(idx)
    cdef int nt = _nt(P * H * W, P, n_threads)
    cdef const float* xf
    cdef float* of
    cdef const double* xd
    cdef double* od
    if t == cnp.NPY_FLOAT:
        xf = <const float*>cnp.PyArray_DATA(x)
        of = <float*>cnp.PyArray_DATA(out)
        with nogil:
            if nt > 1:
                for p in prange(P, schedule='static', num_threads=nt):
                    _max_plane_f(xf + p * H * W, of + p * OH * OW, ip + p * OH * OW, W,
                                 hsp, hcp, dh, OH, wsp, wcp, dw, OW)
            else:
                for p in range(P):
                    _max_plane_f(xf + p * H * W, of + p * OH * OW, ip + p * OH * OW, W,
                                 hsp, hcp, dh, OH, wsp, wcp, dw, OW)
    else:
        xd = <const double*>cnp.PyArray_DATA(x)
        od = <double*>cnp.PyArray_DATA(out)
        with nogil:
            if nt > 1:
                for p in prange(P, schedule='static', num_threads=nt):
                    _max_plane(xd + p * H * W, od + p * OH * OW, ip + p * OH * OW, W,
                               hsp, hcp, dh, OH, wsp, wcp, dw, OW)
            else:
                for p in range(P):
                    _max_plane(xd + p * H * W, od + p * OH * OW, ip + p * OH * OW, W,
                               hsp, hcp, dh, OH, wsp, wcp, dw, OW)


# ---------------------------------------------------------------- gather / scatter at indices
cdef Py_ssize_t _first_bad(const i64* idx, Py_ssize_t n, Py_ssize_t S,
                           i64* bad_value) noexcept nogil:
    """The first position of idx[:n] outside [0, S) (its value in bad_value), or -1."""
    cdef Py_ssize_t j
    cdef i64 k
    for j in range(n):
        k = idx[j]
        if _bad_index(k, S):
            bad_value[0] = k
            return j
    return -1


cdef Py_ssize_t _gather(const char* x, char* out, const i64* idx, Py_ssize_t P,
                        Py_ssize_t S, Py_ssize_t So, bint f32, int nt,
                        i64* bad_value) noexcept nogil:
    """out[p, j] := x[p, idx[p, j]]; the first bad position (value in bad_value) or -1.
    A plane stops at its first bad index; the position is then found again."""
    cdef Py_ssize_t p, nbad = 0, bad
    if nt > 1:
        for p in prange(P, schedule='static', num_threads=nt):
            nbad += _gather_plane(x, out, idx, p, S, So, f32) >= 0
    else:
        for p in range(P):
            if _gather_plane(x, out, idx, p, S, So, f32) >= 0:
                nbad = 1
                break
    if nbad == 0:
        return -1
    bad = _first_bad(idx, P * So, S, bad_value)
    return bad if bad >= 0 else 0       # (changed again since: report position 0)


cdef Py_ssize_t _gather_plane(const char* x, char* out, const i64* idx, Py_ssize_t p,
                              Py_ssize_t S, Py_ssize_t So, bint f32) noexcept nogil:
    cdef Py_ssize_t j
    cdef i64 k
    cdef const i64* ip = idx + p * So
    cdef const float* xf = (<const float*>x) + p * S
    cdef const double* xd = (<const double*>x) + p * S
    cdef float* of = (<float*>out) + p * So
    cdef double* od = (<double*>out) + p * So
    for j in range(So):
        k = ip[j]
        if _bad_index(k, S):
            return p * So + j
        if f32:
            of[j] = xf[k]
        else:
            od[j] = xd[k]
    return -1


cdef Py_ssize_t _scatter_plane(const char* g, char* out, const i64* idx, Py_ssize_t p,
                               Py_ssize_t S, Py_ssize_t So, bint f32) noexcept nogil:
    cdef Py_ssize_t j
    cdef i64 k
    cdef const i64* ip = idx + p * So
    cdef const float* gf = (<const float*>g) + p * So
    cdef const double* gd = (<const double*>g) + p * So
    cdef float* of = (<float*>out) + p * S
    cdef double* od = (<double*>out) + p * S
    if f32:
        memset(of, 0, S * sizeof(float))
    else:
        memset(od, 0, S * sizeof(double))
    for j in range(So):
        k = ip[j]
        if _bad_index(k, S):
            return p * So + j
        if f32:
            of[k] += gf[j]
        else:
            od[k] += gd[j]
    return -1


cdef Py_ssize_t _scatter(const char* g, char* out, const i64* idx, Py_ssize_t P,
                         Py_ssize_t S, Py_ssize_t So, bint f32, int nt,
                         i64* bad_value) noexcept nogil:
    """out[p] := 0; out[p, idx[p, j]] += g[p, j]; the first bad position or -1."""
    cdef Py_ssize_t p, nbad = 0, bad
    if nt > 1:
        for p in prange(P, schedule='static', num_threads=nt):
            nbad += _scatter_plane(g, out, idx, p, S, So, f32) >= 0
    else:
        for p in range(P):
            if _scatter_plane(g, out, idx, p, S, So, f32) >= 0:
                nbad = 1
                break
    if nbad == 0:
        return -1
    bad = _first_bad(idx, P * So, S, bad_value)
    return bad if bad >= 0 else 0


cdef int _check_pairs(str op, cnp.ndarray a, cnp.ndarray out, cnp.ndarray idx) except -1:
    cdef int t = cnp.PyArray_TYPE(a)
    if (t != cnp.NPY_FLOAT and t != cnp.NPY_DOUBLE) or cnp.PyArray_TYPE(out) != t:
        raise TypeError(f"{op}: expected float32/float64 arrays of one dtype, got "
                        f"{a.dtype} and {out.dtype}")
    if cnp.PyArray_TYPE(idx) != cnp.NPY_INT64:
        raise TypeError(f"{op}: indices must be int64, got {idx.dtype}")
    for b in (a, out, idx):
        if cnp.PyArray_NDIM(b) != 2 or not cnp.PyArray_IS_C_CONTIGUOUS(b):
            raise ValueError(f"{op}: expected C-contiguous 2-D (planes, elements) arrays")
    if not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError(f"{op}: out is read-only")
    return t


def pool_gather(cnp.ndarray x not None, cnp.ndarray idx not None, cnp.ndarray out not None,
                int n_threads):
    """out[p, j] := x[p, idx[p, j]]   (the JVP of max pooling: the tangent at the argmax).

    x : C-contiguous float32/float64 (P, S) (IN)
    idx : C-contiguous int64 (P, So), each checked as it is read: IndexError
        unless 0 <= idx < S (out is then partly written: pass a fresh array) (IN)
    out : C-contiguous (P, So), x's dtype (OUT)
    """
    cdef int t = _check_pairs("pool_gather", x, out, idx)
    cdef Py_ssize_t P = x.shape[0], S = x.shape[1], So = out.shape[1], bad
    cdef i64 value = 0
    if idx.shape[0] != P or idx.shape[1] != So or out.shape[0] != P:
        raise ValueError(f"pool_gather: shapes x {(<object>x).shape}, idx "
                         f"{(<object>idx).shape}, out {(<object>out).shape}")
    if P * So == 0:
        return
    cdef int nt = _nt(P * So, P, n_threads)
    with nogil:
        bad = _gather(<const char*>cnp.PyArray_DATA(x), <char*>cnp.PyArray_DATA(out),
                      <const i64*>cnp.PyArray_DATA(idx), P, S, So, t == cnp.NPY_FLOAT, nt,
                      &value)
    if bad >= 0:
        _index_error("max_pool", "indices", bad, value, S)


def pool_scatter(cnp.ndarray g not None, cnp.ndarray idx not None, cnp.ndarray out not None,
                 int n_threads):
    """out[p] := 0;  out[p, idx[p, j]] += g[p, j]   (the VJP of max pooling).

    g : C-contiguous float32/float64 (P, So) (IN)
    idx : C-contiguous int64 (P, So), checked as read (IndexError unless
        0 <= idx < S) (IN)
    out : C-contiguous (P, S), g's dtype (OUT)
    """
    cdef int t = _check_pairs("pool_scatter", g, out, idx)
    cdef Py_ssize_t P = out.shape[0], S = out.shape[1], So = g.shape[1], bad
    cdef i64 value = 0
    if idx.shape[0] != P or idx.shape[1] != So or g.shape[0] != P:
        raise ValueError(f"pool_scatter: shapes g {(<object>g).shape}, idx "
                         f"{(<object>idx).shape}, out {(<object>out).shape}")
    if P * S == 0:
        return
    cdef int nt = _nt(P * S, P, n_threads)
    with nogil:
        bad = _scatter(<const char*>cnp.PyArray_DATA(g), <char*>cnp.PyArray_DATA(out),
                       <const i64*>cnp.PyArray_DATA(idx), P, S, So, t == cnp.NPY_FLOAT, nt,
                       &value)
    if bad >= 0:
        _index_error("max_pool_backward", "indices", bad, value, S)


# ---------------------------------------------------------------- average pooling
cdef void _avg_plane(const char* x, char* out, bint f32, Py_ssize_t W,
                     const i64* hs, const i64* hc, Py_ssize_t OH,
                     const i64* ws, const i64* wc, Py_ssize_t OW,
                     const double* div) noexcept nogil:
    """out[oh, ow] := sum over the window / div[oh, ow] (summed in double)."""
    cdef Py_ssize_t oh, ow, h, w, w0, w1
    cdef double s
    cdef const float* xf = <const float*>x
    cdef const double* xd = <const double*>x
    for oh in range(OH):
        for ow in range(OW):
            s = 0
            w0 = ws[ow]
            w1 = w0 + wc[ow]
            for h in range(hs[oh], hs[oh] + hc[oh]):
                if f32:
                    for w in range(w0, w1):
                        s += xf[h * W + w]
                else:
                    for w in range(w0, w1):
                        s += xd[h * W + w]
            if f32:
                (<float*>out)[oh * OW + ow] = <float>(s / div[oh * OW + ow])
            else:
                (<double*>out)[oh * OW + ow] = s / div[oh * OW + ow]


cdef void _avg_plane_bwd(const char* g, char* out, bint f32, Py_ssize_t H, Py_ssize_t W,
                         const i64* hs, const i64* hc, Py_ssize_t OH,
                         const i64* ws, const i64* wc, Py_ssize_t OW,
                         const double* div) noexcept nogil:
    """out := 0;  out[window(oh, ow)] += g[oh, ow] / div[oh, ow]."""
    cdef Py_ssize_t oh, ow, h, w, w0, w1
    cdef double v
    cdef float vf
    cdef float* of = <float*>out
    cdef double* od = <double*>out
    memset(out, 0, H * W * (4 if f32 else 8))
    for oh in range(OH):
        for ow in range(OW):
            w0 = ws[ow]
            w1 = w0 + wc[ow]
            if f32:
                vf = <float>((<const float*>g)[oh * OW + ow] / div[oh * OW + ow])
                for h in range(hs[oh], hs[oh] + hc[oh]):
                    for w in range(w0, w1):
                        of[h * W + w] += vf
            else:
                v = (<const double*>g)[oh * OW + ow] / div[oh * OW + ow]
                for h in range(hs[oh], hs[oh] + hc[oh]):
                    for w in range(w0, w1):
                        od[h * W + w] += v


def _avg_dispatch(bint bwd, cnp.ndarray a, cnp.ndarray hs, cnp.ndarray hc, cnp.ndarray ws,
                  cnp.ndarray wc, cnp.ndarray div, cnp.ndarray out, int n_threads):
    cdef str op = "avg_pool_bwd" if bwd else "avg_pool_fwd"
    cdef int t = cnp.PyArray_TYPE(a)
    _check_planes(op, (a, out), t)
    cdef cnp.ndarray big = out if bwd else a
    cdef cnp.ndarray small = a if bwd else out
    cdef Py_ssize_t P = big.shape[0], H = big.shape[1], W = big.shape[2]
    cdef Py_ssize_t OH = small.shape[1], OW = small.shape[2], p
    if small.shape[0] != P:
        raise ValueError(f"{op}: {P} planes in, {small.shape[0]} out")
    if cnp.PyArray_TYPE(div) != cnp.NPY_DOUBLE or not cnp.PyArray_IS_C_CONTIGUOUS(div) or \
            cnp.PyArray_SIZE(div) != OH * OW:
        raise ValueError(f"{op}: div must be C-contiguous float64 of size {OH * OW}")
    if not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError(f"{op}: out is read-only")
    _check_windows(op, hs, hc, 1, OH, H)
    _check_windows(op, ws, wc, 1, OW, W)
    if P * H * W == 0:
        return
    cdef const i64* hsp = <const i64*>cnp.PyArray_DATA(hs)
    cdef const i64* hcp = <const i64*>cnp.PyArray_DATA(hc)
    cdef const i64* wsp = <const i64*>cnp.PyArray_DATA(ws)
    cdef const i64* wcp = <const i64*>cnp.PyArray_DATA(wc)
    cdef const double* dp = <const double*>cnp.PyArray_DATA(div)
    cdef bint f32 = t == cnp.NPY_FLOAT
    cdef Py_ssize_t sz = 4 if f32 else 8
    cdef const char* ap = <const char*>cnp.PyArray_DATA(a)
    cdef char* op_ = <char*>cnp.PyArray_DATA(out)
    cdef int nt = _nt(P * H * W, P, n_threads)
    with nogil:
        if bwd:
            if nt > 1:
                for p in prange(P, schedule='static', num_threads=nt):
                    _avg_plane_bwd(ap + p * OH * OW * sz, op_ + p * H * W * sz, f32, H, W,
                                   hsp, hcp, OH, wsp, wcp, OW, dp)
            else:
                for p in range(P):
                    _avg_plane_bwd(ap + p * OH * OW * sz, op_ + p * H * W * sz, f32, H, W,
                                   hsp, hcp, OH, wsp, wcp, OW, dp)
        else:
            if nt > 1:
                for p in prange(P, schedule='static', num_threads=nt):
                    _avg_plane(ap + p * H * W * sz, op_ + p * OH * OW * sz, f32, W,
                               hsp, hcp, OH, wsp, wcp, OW, dp)
            else:
                for p in range(P):
                    _avg_plane(ap + p * H * W * sz, op_ + p * OH * OW * sz, f32, W,
                               hsp, hcp, OH, wsp, wcp, OW, dp)


def avg_pool_fwd(cnp.ndarray x not None, cnp.ndarray hs not None, cnp.ndarray hc not None,
                 cnp.ndarray ws not None, cnp.ndarray wc not None, cnp.ndarray div not None,
                 cnp.ndarray out not None, int n_threads):
    """out[p, oh, ow] := sum_{hs[oh] <= h < hs[oh]+hc[oh], ws[ow] <= w < ws[ow]+wc[ow]}
    x[p, h, w] / div[oh, ow]   (summed in double).

    x : C-contiguous float32/float64 (P, H, W) (IN)
    hs, hc, ws, wc : int64 windows inside the input, as max_pool_fwd's, step 1 (IN)
    div : C-contiguous float64 (OH, OW), the divisor of each output (IN)
    out : C-contiguous (P, OH, OW), x's dtype (OUT)
    """
    _avg_dispatch(False, x, hs, hc, ws, wc, div, out, n_threads)


def avg_pool_bwd(cnp.ndarray g not None, cnp.ndarray hs not None, cnp.ndarray hc not None,
                 cnp.ndarray ws not None, cnp.ndarray wc not None, cnp.ndarray div not None,
                 cnp.ndarray out not None, int n_threads):
    """out := 0;  out[p, window(oh, ow)] += g[p, oh, ow] / div[oh, ow]: the adjoint of
    avg_pool_fwd with the same windows.

    g : C-contiguous float32/float64 (P, OH, OW) (IN)
    out : C-contiguous (P, H, W), g's dtype (OUT)
    """
    _avg_dispatch(True, g, hs, hc, ws, wc, div, out, n_threads)
