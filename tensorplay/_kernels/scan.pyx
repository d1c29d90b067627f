# Design:
# Scans (cumulative sum and product) along the middle axis of a C-contiguous
# (O, N, I) array -- N the scanned extent; the Python layer reshapes any dim to
# this form (tensorplay/_ops/scan.py).
# a) The inner loop runs over the I contiguous columns, so for I > 1 each step
#    j updates a whole row (vectorised); for I == 1 (a scan along the last dim)
#    it is the sequential recurrence per line.
# b) Threads split the O lines (O >= number of threads) or, for one line
#    block (O == 1, a scan along dim 0), the I columns in blocks of ICHUNK;
#    one thread per GRAIN elements (_threads_for).  Lines are independent, so
#    results are bit-identical for every thread count.
# c) Accumulation is in double, also for float32 (as PyTorch's CPU scans, whose
#    accumulator type for float is double; numpy accumulates float32 in float32,
#    which loses ~1% over 1e6 additions of 0.1).  `reverse` scans from the end
#    (the VJP of cumsum is the reversed cumulative sum of the cotangent).
# d) linrec_fwd is the first-order linear recurrence behind cumprod's exact
#    derivatives: forward  out_j = g_j + a_j     * out_{j-1}  (out_{-1} = 0),
#                 reverse  out_j = g_j + a_{j+1} * out_{j+1}  (out_N = 0);
#    the two are each other's transpose for the same a.
# Directives are set in setup.py (see unary.pyx.tp).  The GIL is released.
cimport numpy as cnp
from cython cimport floating
from cython.parallel cimport prange

from ._openmp_helpers cimport GRAIN, _threads_for

cnp.import_array()

cdef enum:
    ICHUNK = 1024


cdef void _scan_block(const floating* x, floating* out, Py_ssize_t N, Py_ssize_t I,
                      Py_ssize_t k0, Py_ssize_t k1, bint prod, bint reverse) noexcept nogil:
    """Scan columns [k0, k1) of one (N, I) line block, accumulating in double."""
    cdef Py_ssize_t j, k, row, c0, c1
    cdef double acc
    cdef double buf[ICHUNK]
    if I == 1:                  # one contiguous line: the plain recurrence
        if reverse:
            acc = x[N - 1]
            out[N - 1] = <floating>acc
            for j in range(N - 2, -1, -1):
                acc = acc * x[j] if prod else acc + x[j]
                out[j] = <floating>acc
        else:
            acc = x[0]
            out[0] = <floating>acc
            for j in range(1, N):
                acc = acc * x[j] if prod else acc + x[j]
                out[j] = <floating>acc
        return
    c0 = k0
    while c0 < k1:              # ICHUNK columns at a time, their running values in buf
        c1 = min(c0 + ICHUNK, k1)
        for j in range(N):
            row = (N - 1 - j) if reverse else j
            if j == 0:
                for k in range(c0, c1):
                    buf[k - c0] = x[row * I + k]
                    out[row * I + k] = x[row * I + k]
            elif prod:
                for k in range(c0, c1):
                    buf[k - c0] = buf[k - c0] * x[row * I + k]
                    out[row * I + k] = <floating>buf[k - c0]
            else:
                for k in range(c0, c1):
                    buf[k - c0] = buf[k - c0] + x[row * I + k]
                    out[row * I + k] = <floating>buf[k - c0]
        c0 = c1


def scan_fwd(const floating[:, :, ::1] x, floating[:, :, ::1] out, bint prod, bint reverse,
             int n_threads):
    """out := cumulative sum (prod=False) or product of x along axis 1.

    x, out: C-contiguous (O, N, I) arrays of one float dtype, same shape (x may be
    read-only: a broadcast cotangent)."""
    cdef Py_ssize_t O = x.shape[0], N = x.shape[1], I = x.shape[2]
    cdef Py_ssize_t o, c, nc
    cdef int nt
    if O == 0 or N == 0 or I == 0:
        return
    nt = _threads_for(O * N * I, GRAIN, n_threads)
    if nt > 1 and O == 1 and I >= 2 * ICHUNK:
        nc = (I + ICHUNK - 1) // ICHUNK
        with nogil:
            for c in prange(nc, schedule='static', num_threads=nt):
                _scan_block(&x[0, 0, 0], &out[0, 0, 0], N, I, c * ICHUNK,
                            min((c + 1) * ICHUNK, I), prod, reverse)
    elif nt > 1 and O > 1:
        with nogil:
            for o in prange(O, schedule='static', num_threads=nt):
                _scan_block(&x[o, 0, 0], &out[o, 0, 0], N, I, 0, I, prod, reverse)
    else:
        with nogil:
            for o in range(O):
                _scan_block(&x[o, 0, 0], &out[o, 0, 0], N, I, 0, I, prod, reverse)


cdef void _linrec_block(const floating* g, const floating* a, floating* out, Py_ssize_t N,
                        Py_ssize_t I, Py_ssize_t k0, Py_ssize_t k1,
                        bint reverse) noexcept nogil:
    cdef Py_ssize_t j, k, row
    if not reverse:
        for k in range(k0, k1):
            out[k] = g[k]
        for row in range(1, N):
            for k in range(k0, k1):
                out[row * I + k] = g[row * I + k] + a[row * I + k] * out[(row - 1) * I + k]
    else:
        for k in range(k0, k1):
            out[(N - 1) * I + k] = g[(N - 1) * I + k]
        for j in range(1, N):
            row = N - 1 - j
            for k in range(k0, k1):
                out[row * I + k] = g[row * I + k] + a[(row + 1) * I + k] * out[(row + 1) * I + k]


def linrec_fwd(const floating[:, :, ::1] g, const floating[:, :, ::1] a, floating[:, :, ::1] out,
               bint reverse, int n_threads):
    """out := the linear recurrence of (d) along axis 1 of C-contiguous (O, N, I)
    arrays g, a, out of one float dtype and one shape."""
    cdef Py_ssize_t O = g.shape[0], N = g.shape[1], I = g.shape[2]
    cdef Py_ssize_t o, c, nc
    cdef int nt
    if O == 0 or N == 0 or I == 0:
        return
    nt = _threads_for(O * N * I, GRAIN, n_threads)
    if nt > 1 and O == 1 and I >= 2 * ICHUNK:
        nc = (I + ICHUNK - 1) // ICHUNK
        with nogil:
            for c in prange(nc, schedule='static', num_threads=nt):
                _linrec_block(&g[0, 0, 0], &a[0, 0, 0], &out[0, 0, 0], N, I, c * ICHUNK,
                              min((c + 1) * ICHUNK, I), reverse)
    elif nt > 1 and O > 1:
        with nogil:
            for o in prange(O, schedule='static', num_threads=nt):
                _linrec_block(&g[o, 0, 0], &a[o, 0, 0], &out[o, 0, 0], N, I, 0, I, reverse)
    else:
        with nogil:
            for o in range(O):
                _linrec_block(&g[o, 0, 0], &a[o, 0, 0], &out[o, 0, 0], N, I, 0, I, reverse)
