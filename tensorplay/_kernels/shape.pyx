# Design:
# Shape kernels that compute something (most shape ops are numpy views or copies
# and need none; see tensorplay/_ops/shape_more.py and shape_join.py).
# a) tri_fwd: tril / triu of a (B, R, C) stack of matrices in one pass, the kept
#    part copied and the rest zeroed row by row (numpy's np.tril builds a
#    broadcast mask and calls where(): two passes and a bool temporary).
#    Row r keeps columns j <= r + k (lower) or j >= r + k (upper).
# b) One fused element type for every dtype tensorplay has (bool is read as
#    uint8): tril of a bool causal mask is as common as tril of floats.
# c) The input may be strided (any memory layout, negative strides too); the
#    output is C-contiguous and allocated by the caller.  prange over the B * R
#    rows with one thread per GRAIN elements (_threads_for); the GIL is released.
# Directives are set in setup.py (see unary.pyx.tp).
cimport numpy as cnp
from cython.parallel cimport prange
from libc.string cimport memcpy

from ._openmp_helpers cimport GRAIN, _threads_for

cnp.import_array()

# Words that copy_fwd moves (element bits, not indices: nothing here reads an
# index array, so the _index.pxd check does not apply).
ctypedef unsigned short word16
ctypedef unsigned int word32
ctypedef unsigned long long word64

ctypedef fused tri_t:
    float
    double
    long long
    int
    short
    signed char
    unsigned char


cdef inline void _tri_row(const tri_t[:] x, tri_t[::1] out, Py_ssize_t lim,
                          bint lower) noexcept nogil:
    """out[j] := x[j] where j is kept (j <= lim lower, j >= lim upper), else 0."""
    cdef Py_ssize_t j, n = out.shape[0]
    cdef Py_ssize_t cut = lim + 1 if lower else lim
    if cut < 0:
        cut = 0
    if cut > n:
        cut = n
    if lower:
        for j in range(cut):
            out[j] = x[j]
        for j in range(cut, n):
            out[j] = 0
    else:
        for j in range(cut):
            out[j] = 0
        for j in range(cut, n):
            out[j] = x[j]


def tri_fwd(const tri_t[:, :, :] x,        # IN  (B, R, C), any strides
            tri_t[:, :, ::1] out,          # OUT (B, R, C), C-contiguous
            Py_ssize_t k, bint lower, int n_threads):
    """out := tril(x, k) if lower else triu(x, k), matrix by matrix."""
    cdef Py_ssize_t B = x.shape[0], R = x.shape[1], C = x.shape[2]
    cdef Py_ssize_t row, b, r
    cdef int nt = _threads_for(B * R * C, GRAIN, n_threads)
    if B * R == 0 or C == 0:
        return
    with nogil:
        if nt > 1:
            for row in prange(B * R, schedule="static", num_threads=nt):
                b = row // R
                r = row % R
                _tri_row(x[b, r], out[b, r], r + k, lower)
        else:
            for row in range(B * R):
                b = row // R
                r = row % R
                _tri_row(x[b, r], out[b, r], r + k, lower)


# ---------------------------------------------------------------- strided copy
# d) copy_fwd: out := x for any strides of x (flip's negatively strided views),
#    row by row over the last dim: a memcpy for unit stride, a reversed loop for
#    stride -1 (vectorised by gcc with a lane permute), a strided gather
#    otherwise.  numpy's copy of a reversed view runs element by element (about
#    4x slower than PyTorch's flip at 1000x1000 float32).  Elements are copied
#    as 1/2/4/8-byte words: the dtype does not matter.
cdef inline void _row_copy(const char* s, char* d, Py_ssize_t n, Py_ssize_t st,
                           Py_ssize_t isz) noexcept nogil:
    """d[0:n] := the n elements at s, s + st, s + 2 st, ... (byte stride st)."""
    cdef Py_ssize_t j
    if st == isz:
        memcpy(d, s, n * isz)
    elif isz == 4:
        if st == -4:
            for j in range(n):
                (<word32*>d)[j] = (<const word32*>s)[-j]
        else:
            for j in range(n):
                (<word32*>d)[j] = (<const word32*>(s + j * st))[0]
    elif isz == 8:
        if st == -8:
            for j in range(n):
                (<word64*>d)[j] = (<const word64*>s)[-j]
        else:
            for j in range(n):
                (<word64*>d)[j] = (<const word64*>(s + j * st))[0]
    elif isz == 1:
        for j in range(n):
            d[j] = s[j * st]
    elif isz == 2:
        for j in range(n):
            (<word16*>d)[j] = (<const word16*>(s + j * st))[0]
    else:
        for j in range(n):
            memcpy(d + j * isz, s + j * st, isz)


cdef void _copy_rows(const char* src, char* dst, const Py_ssize_t* shape,
                     const Py_ssize_t* strides, int nd, Py_ssize_t isz, Py_ssize_t r0,
                     Py_ssize_t r1) noexcept nogil:
    """Rows r0..r1 of the C-order output (rows = all dims but the last)."""
    cdef Py_ssize_t r, rem, off, idx, C = shape[nd - 1]
    cdef int k
    for r in range(r0, r1):
        rem = r
        off = 0
        for k in range(nd - 2, -1, -1):
            idx = rem % shape[k]
            rem = rem // shape[k]
            off = off + idx * strides[k]
        _row_copy(src + off, dst + r * C * isz, C, strides[nd - 1], isz)


def copy_fwd(cnp.ndarray x not None,      # IN  any strides
             cnp.ndarray out not None,    # OUT C-contiguous, x's shape and dtype
             int n_threads):
    """out := x (a strided gather into a C-contiguous array)."""
    cdef int nd = x.ndim, k, nt, t
    cdef Py_ssize_t shape[64]
    cdef Py_ssize_t strides[64]
    cdef Py_ssize_t isz = x.itemsize, R, C, n = x.size, per
    if nd == 0 or n == 0 or nd > 64:
        out[...] = x
        return
    for k in range(nd):
        shape[k] = x.shape[k]
        strides[k] = x.strides[k]
    C = shape[nd - 1]
    R = n // C
    cdef const char* src = <const char*>cnp.PyArray_DATA(x)
    cdef char* dst = <char*>cnp.PyArray_DATA(out)
    nt = _threads_for(n, GRAIN, n_threads)
    if R < nt:
        nt = <int>R
    if nt <= 1:
        with nogil:
            _copy_rows(src, dst, shape, strides, nd, isz, 0, R)
        return
    per = (R + nt - 1) // nt
    with nogil:
        for t in prange(nt, schedule="static", num_threads=nt):
            _copy_rows(src, dst, shape, strides, nd, isz, t * per, min(R, (t + 1) * per))
