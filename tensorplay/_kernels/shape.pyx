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
from cython.parallel cimport prange

from ._openmp_helpers cimport GRAIN, _threads_for

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
