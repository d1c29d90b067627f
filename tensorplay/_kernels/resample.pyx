# Design:
# a) Padding (reflect, replicate, circular) and nearest interpolation are gathers
#    through one index map per dim: out[p, a, b, c] = x[p, md[a], mh[b], mw[c]]
#    on the C-contiguous (P, D, H, W) view (unused leading spatial dims have
#    size 1 and the map [0]).  Their adjoint scatter-adds through the same maps
#    into zeros (several outputs may read one input: reflect, replicate, upsampling).
# b) Linear interpolation (linear / bilinear) is separable: per output row two
#    source rows h0, h1 and the weight lh of h1 (PyTorch's
#    area_pixel_compute_source_index, computed by the caller), the same per
#    column; out = (1 - lh)((1 - lw) x[h0, w0] + lw x[h0, w1])
#                 + lh((1 - lw) x[h1, w0] + lw x[h1, w1]);
#    the backward spreads g with the same four weights (out zero-filled first).
# c) Maps and source indices are made by the Python layer (tensorplay/_ops/resample.py)
#    as private, read-only arrays; the def wrappers check every entry against its
#    dim before the nogil loops read them (_index.pxd's rule: one compare per
#    entry; no user array is ever read as an index here).
# d) One prange over planes, one thread per GRAIN elements (_openmp_helpers.pxd).
# Directives are set in setup.py.
cimport numpy as cnp
from cython.parallel cimport prange
from libc.string cimport memset

from ._openmp_helpers cimport GRAIN, _threads_for
from ._index cimport _bad_index

cnp.import_array()

ctypedef cnp.int64_t i64


cdef int _nt(Py_ssize_t work, Py_ssize_t planes, int n_threads) noexcept nogil:
    cdef int nt = _threads_for(work, GRAIN, n_threads)
    return <int>planes if nt > planes else nt


cdef int _check_map(str op, cnp.ndarray m, Py_ssize_t n, Py_ssize_t bound) except -1:
    cdef Py_ssize_t i
    if cnp.PyArray_TYPE(m) != cnp.NPY_INT64 or not cnp.PyArray_IS_C_CONTIGUOUS(m) or \
            cnp.PyArray_SIZE(m) != n:
        raise ValueError(f"{op}: an index map must be C-contiguous int64 of size {n}")
    cdef const i64* mp = <const i64*>cnp.PyArray_DATA(m)
    for i in range(n):
        if _bad_index(mp[i], bound):
            raise IndexError(f"{op}: index map entry {i} = {mp[i]} is outside [0, {bound})")
    return 0


cdef int _check_arrays(str op, cnp.ndarray a, cnp.ndarray out, int nd) except -1:
    cdef int t = cnp.PyArray_TYPE(a)
    if (t != cnp.NPY_FLOAT and t != cnp.NPY_DOUBLE) or cnp.PyArray_TYPE(out) != t:
        raise TypeError(f"{op}: expected float32/float64 arrays of one dtype, got "
                        f"{a.dtype} and {out.dtype}")
    if cnp.PyArray_NDIM(a) != nd or cnp.PyArray_NDIM(out) != nd or \
            not cnp.PyArray_IS_C_CONTIGUOUS(a) or not cnp.PyArray_IS_C_CONTIGUOUS(out):
        raise ValueError(f"{op}: expected C-contiguous {nd}-D arrays")
    if not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError(f"{op}: out is read-only")
    if a.shape[0] != out.shape[0]:
        raise ValueError(f"{op}: {a.shape[0]} planes in, {out.shape[0]} out")
    return t


# ---------------------------------------------------------------- index maps
cdef void _map_plane(const char* x, char* out, bint f32, bint bwd, Py_ssize_t D,
                     Py_ssize_t H, Py_ssize_t W, const i64* md, Py_ssize_t OD,
                     const i64* mh, Py_ssize_t OH, const i64* mw,
                     Py_ssize_t OW) noexcept nogil:
    """Forward: out[a, b, c] := x[md[a], mh[b], mw[c]].  Backward (x = g of the
    output's shape, out of the input's): out := 0, out[md[a], mh[b], mw[c]] += g[a, b, c]."""
    cdef Py_ssize_t a, b, c, src, dst
    cdef const float* xf = <const float*>x
    cdef const double* xd = <const double*>x
    cdef float* of = <float*>out
    cdef double* od = <double*>out
    if bwd:
        memset(out, 0, D * H * W * (4 if f32 else 8))
    for a in range(OD):
        for b in range(OH):
            src = (md[a] * H + mh[b]) * W
            dst = (a * OH + b) * OW
            if bwd:
                if f32:
                    for c in range(OW):
                        of[src + mw[c]] += xf[dst + c]
                else:
                    for c in range(OW):
                        od[src + mw[c]] += xd[dst + c]
            else:
                if f32:
                    for c in range(OW):
                        of[dst + c] = xf[src + mw[c]]
                else:
                    for c in range(OW):
                        od[dst + c] = xd[src + mw[c]]


def _map_dispatch(bint bwd, cnp.ndarray a, cnp.ndarray md, cnp.ndarray mh, cnp.ndarray mw,
                  cnp.ndarray out, int n_threads):
    cdef str op = "index_map_bwd" if bwd else "index_map_fwd"
    cdef int t = _check_arrays(op, a, out, 4)
    cdef cnp.ndarray big = out if bwd else a
    cdef cnp.ndarray small = a if bwd else out
    cdef Py_ssize_t P = big.shape[0], D = big.shape[1], H = big.shape[2], W = big.shape[3]
    cdef Py_ssize_t OD = small.shape[1], OH = small.shape[2], OW = small.shape[3], p
    _check_map(op, md, OD, D)
    _check_map(op, mh, OH, H)
    _check_map(op, mw, OW, W)
    cdef const i64* mdp = <const i64*>cnp.PyArray_DATA(md)
    cdef const i64* mhp = <const i64*>cnp.PyArray_DATA(mh)
    cdef const i64* mwp = <const i64*>cnp.PyArray_DATA(mw)
    cdef bint f32 = t == cnp.NPY_FLOAT
    cdef Py_ssize_t sz = 4 if f32 else 8, n_in = D * H * W, n_out = OD * OH * OW
    cdef const char* ap = <const char*>cnp.PyArray_DATA(a)
    cdef char* op_ = <char*>cnp.PyArray_DATA(out)
    cdef Py_ssize_t sa = (n_out if bwd else n_in) * sz, so = (n_in if bwd else n_out) * sz
    if P * (n_in + n_out) == 0:
        if bwd and P * n_in:
            memset(op_, 0, P * n_in * sz)
        return
    cdef int nt = _nt(P * (n_in + n_out), P, n_threads)
    with nogil:
        if nt > 1:
            for p in prange(P, schedule='static', num_threads=nt):
                _map_plane(ap + p * sa, op_ + p * so, f32, bwd, D, H, W, mdp, OD, mhp, OH,
                           mwp, OW)
        else:
            for p in range(P):
                _map_plane(ap + p * sa, op_ + p * so, f32, bwd, D, H, W, mdp, OD, mhp, OH,
                           mwp, OW)


def index_map_fwd(cnp.ndarray x not None, cnp.ndarray md not None, cnp.ndarray mh not None,
                  cnp.ndarray mw not None, cnp.ndarray out not None, int n_threads):
    """out[p, a, b, c] := x[p, md[a], mh[b], mw[c]].

    x : C-contiguous float32/float64 (P, D, H, W) (IN)
    md, mh, mw : int64 maps of sizes OD, OH, OW into [0, D), [0, H), [0, W) (IN;
        each entry is checked before the loops)
    out : C-contiguous (P, OD, OH, OW), x's dtype (OUT)
    """
    _map_dispatch(False, x, md, mh, mw, out, n_threads)


def index_map_bwd(cnp.ndarray g not None, cnp.ndarray md not None, cnp.ndarray mh not None,
                  cnp.ndarray mw not None, cnp.ndarray out not None, int n_threads):
    """out := 0;  out[p, md[a], mh[b], mw[c]] += g[p, a, b, c]  (index_map_fwd's adjoint).

    g : C-contiguous float32/float64 (P, OD, OH, OW) (IN)
    out : C-contiguous (P, D, H, W), g's dtype (OUT)
    """
    _map_dispatch(True, g, md, mh, mw, out, n_threads)


# ---------------------------------------------------------------- linear interpolation
cdef void _lin_plane(const char* x, char* out, bint f32, bint bwd, Py_ssize_t H,
                     Py_ssize_t W, const i64* h0, const i64* h1, const double* lh,
                     Py_ssize_t OH, const i64* w0, const i64* w1, const double* lw,
                     Py_ssize_t OW) noexcept nogil:
    """Forward: the bilinear formula of the design note.  Backward (x = g, out the
    input's gradient): out := 0, then each g[oh, ow] added to its four taps."""
    cdef Py_ssize_t oh, ow, r0, r1, c0, c1
    cdef double a1, a0, b1, b0, v
    cdef const float* xf = <const float*>x
    cdef const double* xd = <const double*>x
    cdef float* of = <float*>out
    cdef double* od = <double*>out
    if bwd:
        memset(out, 0, H * W * (4 if f32 else 8))
    for oh in range(OH):
        r0 = h0[oh] * W
        r1 = h1[oh] * W
        a1 = lh[oh]
        a0 = 1.0 - a1
        for ow in range(OW):
            c0 = w0[ow]
            c1 = w1[ow]
            b1 = lw[ow]
            b0 = 1.0 - b1
            if bwd:
                v = xf[oh * OW + ow] if f32 else xd[oh * OW + ow]
                if f32:
                    of[r0 + c0] += <float>(a0 * b0 * v)
                    of[r0 + c1] += <float>(a0 * b1 * v)
                    of[r1 + c0] += <float>(a1 * b0 * v)
                    of[r1 + c1] += <float>(a1 * b1 * v)
                else:
                    od[r0 + c0] += a0 * b0 * v
                    od[r0 + c1] += a0 * b1 * v
                    od[r1 + c0] += a1 * b0 * v
                    od[r1 + c1] += a1 * b1 * v
            elif f32:
                of[oh * OW + ow] = <float>(a0 * (b0 * xf[r0 + c0] + b1 * xf[r0 + c1])
                                           + a1 * (b0 * xf[r1 + c0] + b1 * xf[r1 + c1]))
            else:
                od[oh * OW + ow] = (a0 * (b0 * xd[r0 + c0] + b1 * xd[r0 + c1])
                                    + a1 * (b0 * xd[r1 + c0] + b1 * xd[r1 + c1]))


cdef int _check_weights(str op, cnp.ndarray lam, Py_ssize_t n) except -1:
    if cnp.PyArray_TYPE(lam) != cnp.NPY_DOUBLE or not cnp.PyArray_IS_C_CONTIGUOUS(lam) or \
            cnp.PyArray_SIZE(lam) != n:
        raise ValueError(f"{op}: weights must be C-contiguous float64 of size {n}")
    return 0


def _lin_dispatch(bint bwd, cnp.ndarray a, cnp.ndarray h0, cnp.ndarray h1, cnp.ndarray lh,
                  cnp.ndarray w0, cnp.ndarray w1, cnp.ndarray lw, cnp.ndarray out,
                  int n_threads):
    cdef str op = "linear_bwd" if bwd else "linear_fwd"
    cdef int t = _check_arrays(op, a, out, 3)
    cdef cnp.ndarray big = out if bwd else a
    cdef cnp.ndarray small = a if bwd else out
    cdef Py_ssize_t P = big.shape[0], H = big.shape[1], W = big.shape[2]
    cdef Py_ssize_t OH = small.shape[1], OW = small.shape[2], p
    _check_map(op, h0, OH, H)
    _check_map(op, h1, OH, H)
    _check_map(op, w0, OW, W)
    _check_map(op, w1, OW, W)
    _check_weights(op, lh, OH)
    _check_weights(op, lw, OW)
    cdef bint f32 = t == cnp.NPY_FLOAT
    cdef Py_ssize_t sz = 4 if f32 else 8
    cdef Py_ssize_t sa = (OH * OW if bwd else H * W) * sz, so = (H * W if bwd else OH * OW) * sz
    cdef const char* ap = <const char*>cnp.PyArray_DATA(a)
    cdef char* op_ = <char*>cnp.PyArray_DATA(out)
    cdef const i64* h0p = <const i64*>cnp.PyArray_DATA(h0)
    cdef const i64* h1p = <const i64*>cnp.PyArray_DATA(h1)
    cdef const i64* w0p = <const i64*>cnp.PyArray_DATA(w0)
    cdef const i64* w1p = <const i64*>cnp.PyArray_DATA(w1)
    cdef const double* lhp = <const double*>cnp.PyArray_DATA(lh)
    cdef const double* lwp = <const double*>cnp.PyArray_DATA(lw)
    if P * H * W * OH * OW == 0:
        if bwd and P * H * W:
            memset(op_, 0, P * H * W * sz)
        return
    cdef int nt = _nt(P * (H * W + OH * OW), P, n_threads)
    with nogil:
        if nt > 1:
            for p in prange(P, schedule='static', num_threads=nt):
                _lin_plane(ap + p * sa, op_ + p * so, f32, bwd, H, W, h0p, h1p, lhp, OH,
                           w0p, w1p, lwp, OW)
        else:
            for p in range(P):
                _lin_plane(ap + p * sa, op_ + p * so, f32, bwd, H, W, h0p, h1p, lhp, OH,
                           w0p, w1p, lwp, OW)


def linear_fwd(cnp.ndarray x not None, cnp.ndarray h0 not None, cnp.ndarray h1 not None,
               cnp.ndarray lh not None, cnp.ndarray w0 not None, cnp.ndarray w1 not None,
               cnp.ndarray lw not None, cnp.ndarray out not None, int n_threads):
    """out[p, oh, ow] := bilinear blend of x[p, {h0, h1}[oh], {w0, w1}[ow]] with
    weights lh[oh] (of row h1) and lw[ow] (of column w1).

    x : C-contiguous float32/float64 (P, H, W) (IN)
    h0, h1 : int64 (OH,) rows in [0, H); lh : float64 (OH,) (IN)
    w0, w1 : int64 (OW,) columns in [0, W); lw : float64 (OW,) (IN)
    out : C-contiguous (P, OH, OW), x's dtype (OUT)
    """
    _lin_dispatch(False, x, h0, h1, lh, w0, w1, lw, out, n_threads)


def linear_bwd(cnp.ndarray g not None, cnp.ndarray h0 not None, cnp.ndarray h1 not None,
               cnp.ndarray lh not None, cnp.ndarray w0 not None, cnp.ndarray w1 not None,
               cnp.ndarray lw not None, cnp.ndarray out not None, int n_threads):
    """out := 0, then g[p, oh, ow] spread over its four taps with linear_fwd's
    weights (the adjoint of linear_fwd).

    g : C-contiguous float32/float64 (P, OH, OW) (IN)
    out : C-contiguous (P, H, W), g's dtype (OUT)
    """
    _lin_dispatch(True, g, h0, h1, lh, w0, w1, lw, out, n_threads)
