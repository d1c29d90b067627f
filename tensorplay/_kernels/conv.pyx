# Design:
# Convolutions are GEMMs over an unrolled input ("im2col", as Caffe and PyTorch's
# slow path do); tensorplay/_ops/conv.py runs the GEMMs through BLAS on
# tensorplay's threads (_kernels/linalg.pyx `gemm`).  What lives here is the data
# movement around them:
# a) im2col: the sliding windows of an (N, C, H, W) input as cols[r, n, l], with
#    r = (c, ki, kj) the window element (c-major) and l = (oh, ow) the output
#    position.  The element of window l at (ki, kj) reads input pixel
#        ih = oh * sh - pt + ki * dh,   iw = ow * sw - pl + kj * dw
#    and is 0 where that falls outside the input (zero padding).  The caller picks
#    the layout of the first two dims by strides: (C*kh*kw, N, L) for the
#    convolution GEMM (one matrix whose columns are every output position of every
#    sample), (N, C*kh*kw, L) for F.unfold.  Only the top and left padding enter
#    the formula; the bottom and right are implied by the output size (Ho, Wo),
#    which the caller passes.
# b) col2im is im2col's adjoint: out[n, c, ih, iw] = sum of the cols entries that
#    read that pixel (plus an optional per-channel bias).  One task per (n, c)
#    plane, which only that task writes: no races, no atomics.
# c) swap01: dst[b, a, l] = src[a, b, l] (+ bias[a]), the transpose of an NCHW
#    cotangent into the GEMM's (O, N, L) layout; unpack_nlo: the forward GEMM's
#    (group, position, channel) result into NCHW, plus the bias.
# e) Output rows shorter than SMALL_ROW: im2col and col2im read a table of window
#    offsets (kh kw Ho Wo entries, the same for every sample and channel), one
#    gather/scatter loop per (row, sample); longer rows use per-row bounds, and a
#    stride-1 width-keeping window is one shifted run of the flattened plane.
# d) The entry points take ndarrays and work on raw pointers (float32 or float64,
#    dispatched once on the dtype): the layers of a small CNN run at sizes where
#    building typed memoryviews and matching fused signatures would cost more
#    than the copy.  They check shapes, dtypes and layouts (ValueError) before
#    touching memory.  Tasks: (window element, block of samples) for im2col,
#    (sample, channel) planes for col2im, (b, a) rows for swap01; integer
#    divisions once per task.  prange with one thread per GRAIN elements
#    (_openmp_helpers.pxd), the GIL released.  No kernel here reads an index
#    array.  Directives are set in setup.py.
cimport numpy as cnp
from cython cimport floating
from libc.stdint cimport uintptr_t
from cython.parallel cimport prange
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from ._openmp_helpers cimport GRAIN, _threads_for

cnp.import_array()


cdef inline void _span(Py_ssize_t off, Py_ssize_t s, Py_ssize_t size, Py_ssize_t n_out,
                       Py_ssize_t* lo, Py_ssize_t* hi) noexcept nogil:
    """[lo, hi): the outputs o in [0, n_out) whose input index o * s + off lies in
    [0, size)."""
    cdef Py_ssize_t a, b
    a = 0 if off >= 0 else (-off + s - 1) // s
    b = 0 if size - 1 - off < 0 else (size - 1 - off) // s + 1
    if a > n_out:
        a = n_out
    if b > n_out:
        b = n_out
    if b < a:
        b = a
    lo[0] = a
    hi[0] = b


cdef void _im2col_rows(const floating* x0, Py_ssize_t xn, floating* cols0, Py_ssize_t cn,
                       Py_ssize_t n0, Py_ssize_t n1, Py_ssize_t H, Py_ssize_t W,
                       Py_ssize_t Ho, Py_ssize_t Wo, Py_ssize_t ki, Py_ssize_t kj,
                       Py_ssize_t sh, Py_ssize_t sw, Py_ssize_t pt, Py_ssize_t pl,
                       Py_ssize_t dh, Py_ssize_t dw) noexcept nogil:
    """For samples n in [n0, n1): cols0[n * cn + oh * Wo + ow] :=
    x0[n * xn + ih * W + iw], ih = oh*sh - pt + ki*dh, iw = ow*sw - pl + kj*dw
    (0 outside).  Plain loops, not memcpy/memset: rows are short."""
    cdef Py_ssize_t n, oh, ow, ih, lo, hi
    cdef Py_ssize_t off = kj * dw - pl
    cdef const floating* row
    cdef floating* d
    cdef Py_ssize_t a, b, i, shift
    _span(off, sw, W, Wo, &lo, &hi)
    if sh == 1 and sw == 1 and Wo == W:
        # stride 1, width kept ('same'-like): the window is the flattened plane
        # shifted by one offset, so one long loop copies every valid row; the
        # columns outside [lo, hi) (which the shift wraps to the neighbour row)
        # and the rows outside [a, b) are zeroed after it
        _span(ki * dh - pt, 1, H, Ho, &a, &b)
        shift = (ki * dh - pt) * W + off
        for n in range(n0, n1):
            d = cols0 + n * cn
            row = x0 + n * xn
            if a == b or lo == hi:
                for i in range(Ho * Wo):
                    d[i] = 0
                continue
            for i in range(a * Wo):
                d[i] = 0
            for i in range(a * Wo + lo, (b - 1) * Wo + hi):
                d[i] = row[i + shift]
            for oh in range(a, b):
                for ow in range(lo):
                    d[oh * Wo + ow] = 0
                for ow in range(hi, Wo):
                    d[oh * Wo + ow] = 0
            for i in range(b * Wo, Ho * Wo):
                d[i] = 0
        return
    for n in range(n0, n1):
        for oh in range(Ho):
            ih = oh * sh - pt + ki * dh
            d = cols0 + n * cn + oh * Wo
            if ih < 0 or ih >= H or lo == hi:
                for ow in range(Wo):
                    d[ow] = 0
                continue
            row = x0 + n * xn + ih * W
            for ow in range(lo):
                d[ow] = 0
            if sw == 1:
                for ow in range(lo, hi):
                    d[ow] = row[ow + off]
            else:
                for ow in range(lo, hi):
                    d[ow] = row[ow * sw + off]
            for ow in range(hi, Wo):
                d[ow] = 0



cdef enum:
    SMALL_ROW = 16      # output rows shorter than this go through the index table


cdef Py_ssize_t* _window_table(Py_ssize_t H, Py_ssize_t W, Py_ssize_t kh, Py_ssize_t kw,
                               Py_ssize_t sh, Py_ssize_t sw, Py_ssize_t pt, Py_ssize_t pl,
                               Py_ssize_t dh, Py_ssize_t dw, Py_ssize_t Ho,
                               Py_ssize_t Wo) noexcept nogil:
    """table[(ki, kj) * L + (oh, ow)] = the plane offset window element (ki, kj) of
    output position (oh, ow) reads, or -1 for padding (NULL if malloc fails).
    It depends on neither sample nor channel: kh * kw * L entries."""
    cdef Py_ssize_t L = Ho * Wo, k, oh, ow, ih, iw
    cdef Py_ssize_t* t = <Py_ssize_t*>malloc(kh * kw * L * sizeof(Py_ssize_t))
    if t == NULL:
        return NULL
    for k in range(kh * kw):
        for oh in range(Ho):
            ih = oh * sh - pt + (k // kw) * dh
            for ow in range(Wo):
                iw = ow * sw - pl + (k % kw) * dw
                t[k * L + oh * Wo + ow] = (ih * W + iw if 0 <= ih < H and 0 <= iw < W
                                           else -1)
    return t


cdef void _im2col_all(const floating* x, floating* cols, Py_ssize_t cr, Py_ssize_t cn,
                      Py_ssize_t N, Py_ssize_t C, Py_ssize_t H, Py_ssize_t W,
                      Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t sh, Py_ssize_t sw,
                      Py_ssize_t pt, Py_ssize_t pl, Py_ssize_t dh, Py_ssize_t dw,
                      Py_ssize_t Ho, Py_ssize_t Wo, int nt) noexcept nogil:
    cdef Py_ssize_t kk = kh * kw, R = C * kh * kw, task, r, c, k, P, per, n0, n, i, l
    cdef Py_ssize_t L = Ho * Wo
    cdef Py_ssize_t* table = NULL
    cdef const Py_ssize_t* t
    cdef const floating* p
    cdef floating* d
    P = 1 if nt == 1 else min(N, (4 * nt + R - 1) // R)
    per = (N + P - 1) // P
    if Wo < SMALL_ROW:
        table = _window_table(H, W, kh, kw, sh, sw, pt, pl, dh, dw, Ho, Wo)
    if table != NULL:
        # short rows: one gather loop of L per (row, sample) instead of Ho
        # short loops with their bounds (measured 4x4 images: the row loops
        # cost more than the copy)
        for task in prange(R * P, schedule='static', num_threads=nt):
            r = task // P
            n0 = (task % P) * per
            c = r // kk
            t = table + (r % kk) * L
            for n in range(n0, min(n0 + per, N)):
                p = x + (n * C + c) * H * W
                d = cols + r * cr + n * cn
                for l in range(L):
                    d[l] = p[t[l]] if t[l] >= 0 else 0
        free(table)
        return
    for task in prange(R * P, schedule='static', num_threads=nt):
        r = task // P
        n0 = (task % P) * per
        c = r // kk
        k = r % kk
        if n0 < N:
            _im2col_rows(x + c * H * W, C * H * W, cols + r * cr, cn, n0, min(n0 + per, N),
                         H, W, Ho, Wo, k // kw, k % kw, sh, sw, pt, pl, dh, dw)


cdef int _kind(cnp.ndarray a) except -1:
    """0 for float32, 1 for float64, else ValueError."""
    cdef int t = cnp.PyArray_TYPE(a)
    if t == cnp.NPY_FLOAT:
        return 0
    if t == cnp.NPY_DOUBLE:
        return 1
    raise ValueError(f"conv kernels: float32 or float64 arrays, got {a.dtype}")


cdef Py_ssize_t _elems(cnp.ndarray a, int dim, Py_ssize_t item) except -1:
    """Stride of dim in elements (ValueError when it is not a whole number)."""
    cdef Py_ssize_t s = cnp.PyArray_STRIDE(a, dim)
    if s % item:
        raise ValueError("conv kernels: strides must be whole elements")
    return s // item


def im2col(cnp.ndarray x not None,        # IN  (N, C, H, W), C-contiguous
           cnp.ndarray cols not None,     # OUT [r, n, l]: (C*kh*kw, N, Ho*Wo), l contiguous
           Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t sh, Py_ssize_t sw,
           Py_ssize_t pt, Py_ssize_t pl, Py_ssize_t dh, Py_ssize_t dw,
           Py_ssize_t Ho, Py_ssize_t Wo, int n_threads):
    """cols[(c, ki, kj), n, (oh, ow)] := x[n, c, oh*sh - pt + ki*dh, ow*sw - pl + kj*dw]
    (0 outside the input).  cols may be any writeable view whose last dim is
    contiguous.

    Raises:
        ValueError: dtypes that are not one float dtype, shapes that do not
        match, a non-contiguous x or last dim of cols, a read-only cols.
    """
    cdef int kind = _kind(x)
    cdef Py_ssize_t item = 4 if kind == 0 else 8, N, C, H, W, R, r, n, i, cr, cn
    cdef int nt
    if _kind(cols) != kind or cnp.PyArray_NDIM(x) != 4 or cnp.PyArray_NDIM(cols) != 3:
        raise ValueError("im2col: x (N, C, H, W) and cols (R, N, L) of one float dtype")
    N, C, H, W = x.shape[0], x.shape[1], x.shape[2], x.shape[3]
    R = C * kh * kw
    if cols.shape[0] != R or cols.shape[1] != N or cols.shape[2] != Ho * Wo:
        raise ValueError(f"im2col: cols of shape {(<object>cols).shape} for "
                         f"({R}, {N}, {Ho * Wo})")
    if not cnp.PyArray_IS_C_CONTIGUOUS(x) or not cnp.PyArray_ISWRITEABLE(cols):
        raise ValueError("im2col: x must be C-contiguous and cols writeable")
    if R == 0 or N == 0 or Ho * Wo == 0:
        return
    if Ho * Wo > 1 and cnp.PyArray_STRIDE(cols, 2) != item:
        raise ValueError("im2col: the last dim of cols must be contiguous")
    cr, cn = _elems(cols, 0, item), _elems(cols, 1, item)
    if H == 0 or W == 0:            # nothing to read: every window is padding
        for r in range(R):
            for n in range(N):
                memset(<char*>cnp.PyArray_DATA(cols) + (r * cr + n * cn) * item, 0,
                       Ho * Wo * item)
        return
    nt = _threads_for(R * N * Ho * Wo, GRAIN, n_threads)
    with nogil:
        if kind == 0:
            _im2col_all(<const float*>cnp.PyArray_DATA(x), <float*>cnp.PyArray_DATA(cols),
                        cr, cn, N, C, H, W, kh, kw, sh, sw, pt, pl, dh, dw, Ho, Wo, nt)
        else:
            _im2col_all(<const double*>cnp.PyArray_DATA(x), <double*>cnp.PyArray_DATA(cols),
                        cr, cn, N, C, H, W, kh, kw, sh, sw, pt, pl, dh, dw, Ho, Wo, nt)


cdef void _col2im_plane(const floating* src, Py_ssize_t rstride, floating* plane,
                        Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t H, Py_ssize_t W,
                        Py_ssize_t Ho, Py_ssize_t Wo, Py_ssize_t sh, Py_ssize_t sw,
                        Py_ssize_t pt, Py_ssize_t pl, Py_ssize_t dh,
                        Py_ssize_t dw) noexcept nogil:
    """plane[ih, iw] += every src[(ki, kj) * rstride + (oh, ow)] that reads it
    (the adjoint of _im2col_row over the kh * kw rows of one channel)."""
    cdef Py_ssize_t ki, kj, oh, ow, ih, lo, hi, off
    cdef const floating* s
    cdef floating* row
    for ki in range(kh):
        for kj in range(kw):
            off = kj * dw - pl
            _span(off, sw, W, Wo, &lo, &hi)
            if lo == hi:
                continue
            s = src + (ki * kw + kj) * rstride
            for oh in range(Ho):
                ih = oh * sh - pt + ki * dh
                if ih < 0 or ih >= H:
                    continue
                row = plane + ih * W
                if sw == 1:
                    for ow in range(lo, hi):
                        row[ow + off] += s[oh * Wo + ow]
                else:
                    for ow in range(lo, hi):
                        row[ow * sw + off] += s[oh * Wo + ow]


cdef void _col2im_all(const floating* cols, Py_ssize_t cr, Py_ssize_t cn,
                      floating* out, const floating* bias, Py_ssize_t N, Py_ssize_t C,
                      Py_ssize_t H, Py_ssize_t W, Py_ssize_t kh, Py_ssize_t kw,
                      Py_ssize_t sh, Py_ssize_t sw, Py_ssize_t pt, Py_ssize_t pl,
                      Py_ssize_t dh, Py_ssize_t dw, Py_ssize_t Ho, Py_ssize_t Wo,
                      int nt) noexcept nogil:
    cdef Py_ssize_t kk = kh * kw, task, n, c, i, k, l, HW = H * W, L = Ho * Wo
    cdef floating b
    cdef floating* plane
    cdef const floating* s
    cdef Py_ssize_t* table = NULL
    cdef const Py_ssize_t* t
    if Wo < SMALL_ROW and kk and L:
        table = _window_table(H, W, kh, kw, sh, sw, pt, pl, dh, dw, Ho, Wo)
    for task in prange(N * C, schedule='static', num_threads=nt):
        n = task // C
        c = task % C
        plane = out + task * HW
        b = bias[c] if bias != NULL else 0
        for i in range(HW):
            plane[i] = b
        if table != NULL:           # short rows: scatter through the index table
            for k in range(kk):
                t = table + k * L
                s = cols + (c * kk + k) * cr + n * cn
                for l in range(L):
                    if t[l] >= 0:
                        plane[t[l]] += s[l]
        else:
            _col2im_plane(cols + c * kk * cr + n * cn, cr, plane, kh, kw, H, W, Ho, Wo,
                          sh, sw, pt, pl, dh, dw)
    if table != NULL:
        free(table)


def col2im(cnp.ndarray cols not None,     # IN  [r, n, l]: (C*kh*kw, N, Ho*Wo), l contiguous
           cnp.ndarray out not None,      # OUT (N, C, H, W), C-contiguous
           object bias,                   # IN  (C,) added to every pixel, or None
           Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t sh, Py_ssize_t sw,
           Py_ssize_t pt, Py_ssize_t pl, Py_ssize_t dh, Py_ssize_t dw,
           Py_ssize_t Ho, Py_ssize_t Wo, int n_threads):
    """out[n, c, ih, iw] := bias[c] + sum over the (ki, kj, oh, ow) with
    oh*sh - pt + ki*dh == ih and ow*sw - pl + kj*dw == iw of
    cols[(c, ki, kj), n, (oh, ow)]: the adjoint of im2col.

    Raises:
        ValueError: as im2col; a bias that is not a contiguous (C,) array of the
        dtype.
    """
    cdef int kind = _kind(out)
    cdef Py_ssize_t item = 4 if kind == 0 else 8, N, C, H, W, cr = 0, cn = 0
    cdef cnp.ndarray b
    cdef void* pb = NULL
    cdef int nt
    if _kind(cols) != kind or cnp.PyArray_NDIM(out) != 4 or cnp.PyArray_NDIM(cols) != 3:
        raise ValueError("col2im: cols (R, N, L) and out (N, C, H, W) of one float dtype")
    N, C, H, W = out.shape[0], out.shape[1], out.shape[2], out.shape[3]
    if cols.shape[0] != C * kh * kw or cols.shape[1] != N or cols.shape[2] != Ho * Wo:
        raise ValueError(f"col2im: cols of shape {(<object>cols).shape} for "
                         f"({C * kh * kw}, {N}, {Ho * Wo})")
    if not cnp.PyArray_IS_C_CONTIGUOUS(out) or not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError("col2im: out must be C-contiguous and writeable")
    if bias is not None:
        b = <cnp.ndarray?>bias
        if (_kind(b) != kind or cnp.PyArray_NDIM(b) != 1 or b.shape[0] != C
                or not cnp.PyArray_IS_C_CONTIGUOUS(b)):
            raise ValueError(f"col2im: bias must be a contiguous ({C},) array of {out.dtype}")
        pb = cnp.PyArray_DATA(b)
    if N == 0 or C == 0 or H * W == 0:
        return
    if Ho * Wo:
        if Ho * Wo > 1 and cnp.PyArray_STRIDE(cols, 2) != item:
            raise ValueError("col2im: the last dim of cols must be contiguous")
        cr, cn = _elems(cols, 0, item), _elems(cols, 1, item)
    else:
        kh = 0              # no windows: only the bias (or zeros) is written
    nt = _threads_for(N * C * (H * W + kh * kw * Ho * Wo), GRAIN, n_threads)
    with nogil:
        if kind == 0:
            _col2im_all(<const float*>cnp.PyArray_DATA(cols), cr, cn,
                        <float*>cnp.PyArray_DATA(out), <const float*>pb, N, C, H, W, kh, kw,
                        sh, sw, pt, pl, dh, dw, Ho, Wo, nt)
        else:
            _col2im_all(<const double*>cnp.PyArray_DATA(cols), cr, cn,
                        <double*>cnp.PyArray_DATA(out), <const double*>pb, N, C, H, W, kh,
                        kw, sh, sw, pt, pl, dh, dw, Ho, Wo, nt)


cdef void _swap01_all(const floating* src, floating* dst, const floating* bias,
                      Py_ssize_t A, Py_ssize_t B, Py_ssize_t L, int nt) noexcept nogil:
    cdef Py_ssize_t task, a, b, l
    cdef floating v
    cdef const floating* s
    cdef floating* d
    for task in prange(A * B, schedule='static', num_threads=nt):
        b = task // A
        a = task % A
        s = src + (a * B + b) * L
        d = dst + task * L
        v = bias[a] if bias != NULL else 0
        for l in range(L):
            d[l] = s[l] + v


def swap01(cnp.ndarray src not None,      # IN  (A, B, L), C-contiguous
           cnp.ndarray dst not None,      # OUT (B, A, L), C-contiguous
           object bias,                   # IN  (A,) added along a, or None
           int n_threads):
    """dst[b, a, l] := src[a, b, l] (+ bias[a]).

    Raises:
        ValueError: shapes, dtypes or layouts that do not fit.
    """
    cdef int kind = _kind(src)
    cdef Py_ssize_t A, B, L
    cdef cnp.ndarray bb
    cdef void* pb = NULL
    cdef int nt
    if (_kind(dst) != kind or cnp.PyArray_NDIM(src) != 3 or cnp.PyArray_NDIM(dst) != 3
            or not cnp.PyArray_IS_C_CONTIGUOUS(src) or not cnp.PyArray_IS_C_CONTIGUOUS(dst)
            or not cnp.PyArray_ISWRITEABLE(dst)):
        raise ValueError("swap01: C-contiguous 3-D src and writeable dst of one float dtype")
    A, B, L = src.shape[0], src.shape[1], src.shape[2]
    if dst.shape[0] != B or dst.shape[1] != A or dst.shape[2] != L:
        raise ValueError(f"swap01: dst of shape {(<object>dst).shape} for ({B}, {A}, {L})")
    if bias is not None:
        bb = <cnp.ndarray?>bias
        if (_kind(bb) != kind or cnp.PyArray_NDIM(bb) != 1 or bb.shape[0] != A
                or not cnp.PyArray_IS_C_CONTIGUOUS(bb)):
            raise ValueError(f"swap01: bias must be a contiguous ({A},) array of {src.dtype}")
        pb = cnp.PyArray_DATA(bb)
    if A == 0 or B == 0 or L == 0:
        return
    nt = _threads_for(A * B * L, GRAIN, n_threads)
    with nogil:
        if kind == 0:
            _swap01_all(<const float*>cnp.PyArray_DATA(src), <float*>cnp.PyArray_DATA(dst),
                        <const float*>pb, A, B, L, nt)
        else:
            _swap01_all(<const double*>cnp.PyArray_DATA(src), <double*>cnp.PyArray_DATA(dst),
                        <const double*>pb, A, B, L, nt)


cdef void _unpack_all(const floating* src, floating* dst, const floating* bias,
                      Py_ssize_t G, Py_ssize_t N, Py_ssize_t L, Py_ssize_t Og,
                      int nt) noexcept nogil:
    cdef Py_ssize_t task, n, g, o, l
    cdef floating v
    cdef const floating* s
    cdef floating* d
    for task in prange(N * G, schedule='static', num_threads=nt):
        n = task // G
        g = task % G
        s = src + (g * N + n) * L * Og
        for o in range(Og):
            d = dst + ((n * G + g) * Og + o) * L
            v = bias[g * Og + o] if bias != NULL else 0
            for l in range(L):
                d[l] = s[l * Og + o] + v


def unpack_nlo(cnp.ndarray src not None,  # IN  (G, N, L, Og), C-contiguous
               cnp.ndarray dst not None,  # OUT (N, G * Og, L), C-contiguous
               object bias,               # IN  (G * Og,) or None
               int n_threads):
    """dst[n, g * Og + o, l] := src[g, n, l, o] (+ bias[g * Og + o]): the
    (position, channel) GEMM output of each group into NCHW.

    Raises:
        ValueError: shapes, dtypes or layouts that do not fit.
    """
    cdef int kind = _kind(src)
    cdef Py_ssize_t G, N, L, Og
    cdef cnp.ndarray bb
    cdef void* pb = NULL
    cdef int nt
    if (_kind(dst) != kind or cnp.PyArray_NDIM(src) != 4 or cnp.PyArray_NDIM(dst) != 3
            or not cnp.PyArray_IS_C_CONTIGUOUS(src) or not cnp.PyArray_IS_C_CONTIGUOUS(dst)
            or not cnp.PyArray_ISWRITEABLE(dst)):
        raise ValueError("unpack_nlo: C-contiguous (G, N, L, Og) src and writeable "
                         "(N, G*Og, L) dst of one float dtype")
    G, N, L, Og = src.shape[0], src.shape[1], src.shape[2], src.shape[3]
    if dst.shape[0] != N or dst.shape[1] != G * Og or dst.shape[2] != L:
        raise ValueError(f"unpack_nlo: dst of shape {(<object>dst).shape} for "
                         f"({N}, {G * Og}, {L})")
    if bias is not None:
        bb = <cnp.ndarray?>bias
        if (_kind(bb) != kind or cnp.PyArray_NDIM(bb) != 1 or bb.shape[0] != G * Og
                or not cnp.PyArray_IS_C_CONTIGUOUS(bb)):
            raise ValueError(f"unpack_nlo: bias must be a contiguous ({G * Og},) array")
        pb = cnp.PyArray_DATA(bb)
    if G == 0 or N == 0 or L == 0 or Og == 0:
        return
    nt = _threads_for(G * N * L * Og, GRAIN, n_threads)
    with nogil:
        if kind == 0:
            _unpack_all(<const float*>cnp.PyArray_DATA(src), <float*>cnp.PyArray_DATA(dst),
                        <const float*>pb, G, N, L, Og, nt)
        else:
            _unpack_all(<const double*>cnp.PyArray_DATA(src), <double*>cnp.PyArray_DATA(dst),
                        <const double*>pb, G, N, L, Og, nt)
