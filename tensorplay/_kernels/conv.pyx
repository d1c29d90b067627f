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
# c) swap01: dst[b, a, l] = src[a, b, l] (+ bias[a]), the transposes between the
#    GEMM's (O, N, L) layout and the (N, O, L) layout of an NCHW tensor.
# All loops are over tasks of one contiguous row each (l innermost); prange with
# one thread per GRAIN elements (_openmp_helpers.pxd), the GIL released.  No
# kernel here reads an index array.  Directives are set in setup.py.
cimport numpy as cnp
from cython cimport floating
from cython.parallel cimport prange
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


cdef void _im2col_row(const floating* plane, floating* dst, Py_ssize_t H, Py_ssize_t W,
                      Py_ssize_t Ho, Py_ssize_t Wo, Py_ssize_t ki, Py_ssize_t kj,
                      Py_ssize_t sh, Py_ssize_t sw, Py_ssize_t pt, Py_ssize_t pl,
                      Py_ssize_t dh, Py_ssize_t dw) noexcept nogil:
    """dst[oh * Wo + ow] := plane[oh*sh - pt + ki*dh, ow*sw - pl + kj*dw] (0 outside)."""
    cdef Py_ssize_t oh, ow, ih, lo, hi
    cdef Py_ssize_t off = kj * dw - pl
    cdef const floating* row
    cdef floating* d
    _span(off, sw, W, Wo, &lo, &hi)
    for oh in range(Ho):
        ih = oh * sh - pt + ki * dh
        d = dst + oh * Wo
        if ih < 0 or ih >= H or lo == hi:
            memset(d, 0, Wo * sizeof(floating))
            continue
        row = plane + ih * W
        if lo:
            memset(d, 0, lo * sizeof(floating))
        if sw == 1:
            memcpy(d + lo, row + lo + off, (hi - lo) * sizeof(floating))
        else:
            for ow in range(lo, hi):
                d[ow] = row[ow * sw + off]
        if hi < Wo:
            memset(d + hi, 0, (Wo - hi) * sizeof(floating))


def im2col(const floating[:, :, :, ::1] x,     # IN  (N, C, H, W), C-contiguous
           floating[:, :, :] cols,              # OUT [r, n, l]: (C*kh*kw, N, Ho*Wo) view
           Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t sh, Py_ssize_t sw,
           Py_ssize_t pt, Py_ssize_t pl, Py_ssize_t dh, Py_ssize_t dw,
           Py_ssize_t Ho, Py_ssize_t Wo, int n_threads):
    """cols[(c, ki, kj), n, (oh, ow)] := x[n, c, oh*sh - pt + ki*dh, ow*sw - pl + kj*dw]
    (0 outside the input).  cols may be any view whose last dim is contiguous (ValueError otherwise);
    the caller checks the shapes."""
    cdef Py_ssize_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3]
    cdef Py_ssize_t kk = kh * kw, R = C * kh * kw, task, r, n, c, k
    cdef int nt
    if cols.shape[0] != R or cols.shape[1] != N or cols.shape[2] != Ho * Wo:
        raise ValueError(f"im2col: cols of shape {tuple(cols.shape)[:3]} for "
                         f"({R}, {N}, {Ho * Wo})")
    if R == 0 or N == 0 or Ho * Wo == 0:
        return
    if Ho * Wo > 1 and cols.strides[2] != sizeof(floating):
        raise ValueError("im2col: the last dim of cols must be contiguous")
    if H == 0 or W == 0:            # nothing to read: every window is padding
        for r in range(R):
            for n in range(N):
                memset(&cols[r, n, 0], 0, Ho * Wo * sizeof(floating))
        return
    nt = _threads_for(R * N * Ho * Wo, GRAIN, n_threads)
    with nogil:
        for task in prange(R * N, schedule='static', num_threads=nt):
            r = task // N
            n = task % N
            c = r // kk
            k = r % kk
            _im2col_row(&x[n, c, 0, 0], &cols[r, n, 0], H, W, Ho, Wo, k // kw, k % kw,
                        sh, sw, pt, pl, dh, dw)


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


def col2im(const floating[:, :, :] cols,       # IN  [r, n, l]: (C*kh*kw, N, Ho*Wo) view
           floating[:, :, :, ::1] out,          # OUT (N, C, H, W), C-contiguous
           const floating[::1] bias,            # IN  (C,) added to every pixel, or (0,)
           Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t sh, Py_ssize_t sw,
           Py_ssize_t pt, Py_ssize_t pl, Py_ssize_t dh, Py_ssize_t dw,
           Py_ssize_t Ho, Py_ssize_t Wo, int n_threads):
    """out[n, c, ih, iw] := bias[c] + sum over the (ki, kj, oh, ow) with
    oh*sh - pt + ki*dh == ih and ow*sw - pl + kj*dw == iw of
    cols[(c, ki, kj), n, (oh, ow)]: the adjoint of im2col."""
    cdef Py_ssize_t N = out.shape[0], C = out.shape[1], H = out.shape[2], W = out.shape[3]
    cdef Py_ssize_t kk = kh * kw, task, n, c, i, HW = H * W
    cdef Py_ssize_t rstride = cols.strides[0] // sizeof(floating)
    cdef bint has_bias = bias.shape[0] != 0
    cdef floating b
    cdef floating* plane
    cdef int nt
    if cols.shape[0] != C * kk or cols.shape[1] != N or cols.shape[2] != Ho * Wo:
        raise ValueError(f"col2im: cols of shape {tuple(cols.shape)[:3]} for "
                         f"({C * kk}, {N}, {Ho * Wo})")
    if has_bias and bias.shape[0] != C:
        raise ValueError(f"col2im: bias of {bias.shape[0]} entries for {C} channels")
    if N == 0 or C == 0 or HW == 0:
        return
    if cols.strides[0] % sizeof(floating) or (Ho * Wo > 1 and
                                              cols.strides[2] != sizeof(floating)):
        raise ValueError("col2im: the last dim of cols must be contiguous")
    nt = _threads_for(N * C * (HW + kk * Ho * Wo), GRAIN, n_threads)
    with nogil:
        for task in prange(N * C, schedule='static', num_threads=nt):
            n = task // C
            c = task % C
            plane = &out[n, c, 0, 0]
            if has_bias:
                b = bias[c]
                for i in range(HW):
                    plane[i] = b
            else:
                memset(plane, 0, HW * sizeof(floating))
            if kk and Ho * Wo:
                _col2im_plane(&cols[c * kk, n, 0], rstride, plane, kh, kw, H, W, Ho, Wo,
                              sh, sw, pt, pl, dh, dw)


def swap01(const floating[:, :, ::1] src,      # IN  (A, B, L), last dim contiguous
           floating[:, :, ::1] dst,             # OUT (B, A, L), last dim contiguous
           const floating[::1] bias,            # IN  (A,) added along a, or (0,)
           int n_threads):
    """dst[b, a, l] := src[a, b, l] (+ bias[a])."""
    cdef Py_ssize_t A = src.shape[0], B = src.shape[1], L = src.shape[2]
    cdef Py_ssize_t task, a, b, l
    cdef bint has_bias = bias.shape[0] != 0
    cdef floating v
    cdef const floating* s
    cdef floating* d
    cdef int nt
    if dst.shape[0] != B or dst.shape[1] != A or dst.shape[2] != L:
        raise ValueError(f"swap01: dst of shape {tuple(dst.shape)[:3]} for ({B}, {A}, {L})")
    if has_bias and bias.shape[0] != A:
        raise ValueError(f"swap01: bias of {bias.shape[0]} entries for {A}")
    if A == 0 or B == 0 or L == 0:
        return
    nt = _threads_for(A * B * L, GRAIN, n_threads)
    with nogil:
        for task in prange(A * B, schedule='static', num_threads=nt):
            b = task // A
            a = task % A
            s = &src[a, b, 0]
            d = &dst[b, a, 0]
            if has_bias:
                v = bias[a]
                for l in range(L):
                    d[l] = s[l] + v
            else:
                memcpy(d, s, L * sizeof(floating))
