# Design:
# sum_fwd reduces the middle axis of a C-contiguous (A, R, B) array; the Python
# layer reshapes any axis set to this form (axes must be contiguous after a
# transpose/copy, which the caller does).
# a) Accumulation is in double for both dtypes.  float32 therefore sums more
#    accurately than numpy's float32 pairwise sum; float64 sums in 16 independent
#    lanes (row path) or in order (column path), like numpy's accuracy class.
# b) Work is split into tasks of a fixed size that does not depend on n_threads:
#       B == 1 (row sums):   (a, r-chunk) tasks, r-chunks of RCHUNK elements,
#                            each summed with 16 accumulators (SLP-vectorised);
#       B  > 1 (column sums): (a, b-block, r-chunk) tasks, b-blocks of BB columns
#                            accumulated in a stack buffer of doubles, the b loop
#                            vectorised;
#    partial sums of r-chunks go to a buffer and are added in order, so results
#    are bit-identical for every n_threads.  prange over tasks with one thread
#    per GRAIN_SUM elements (_threads_for).  The GIL is released.
# Directives are set in setup.py (see unary.pyx.tp).
cimport numpy as cnp
from cython cimport floating
from cython.parallel cimport prange
from libc.stdlib cimport malloc, free
from libc.string cimport memset

from ._accumulate cimport _sum_contig
from ._openmp_helpers cimport _threads_for

cnp.import_array()

cdef enum:
    RCHUNK = 16384       # elements per task, row path
    BB = 2048            # columns per block, column path
    TASK = 262144        # target elements per task, column path
    GRAIN_SUM = 32768    # input elements per thread, at least


cdef void _row_task(const floating* x, Py_ssize_t R, Py_ssize_t nrc, Py_ssize_t task,
                    double* part, floating* out) noexcept nogil:
    """Task (a, c) of the row path: part[task] or out[a] := sum of r-chunk c of row a."""
    cdef Py_ssize_t a = task // nrc, c = task % nrc
    cdef Py_ssize_t r0 = c * RCHUNK, r1 = min(r0 + RCHUNK, R)
    cdef double s = _sum_contig(x + a * R + r0, r1 - r0)
    if part == NULL:
        out[a] = <floating>s
    else:
        part[task] = s


cdef void _col_task(const floating* x, Py_ssize_t R, Py_ssize_t B, Py_ssize_t nbb,
                    Py_ssize_t nrc, Py_ssize_t rc, Py_ssize_t task,
                    double* part, floating* out) noexcept nogil:
    """Task (a, bb, c): out[a, b-block] (or its partial row) := sum over r-chunk c."""
    cdef double acc[BB]
    cdef Py_ssize_t a = task // (nbb * nrc), rem = task % (nbb * nrc)
    cdef Py_ssize_t bb = rem // nrc, c = rem % nrc
    cdef Py_ssize_t b0 = bb * BB, nb = min(BB, B - b0)
    cdef Py_ssize_t r0 = c * rc, r1 = min(r0 + rc, R), r, j
    cdef const floating* row
    for j in range(nb):
        acc[j] = 0
    for r in range(r0, r1):
        row = x + (a * R + r) * B + b0
        for j in range(nb):
            acc[j] += row[j]                 # acc[b] += x[a, r, b]
    if part == NULL:
        for j in range(nb):
            out[a * B + b0 + j] = <floating>acc[j]
    else:
        for j in range(nb):
            part[(a * nrc + c) * B + b0 + j] = acc[j]


cdef int _sum(const floating* x, floating* out, Py_ssize_t A, Py_ssize_t R,
              Py_ssize_t B, int n_threads) except -1 nogil:
    cdef Py_ssize_t nrc, nbb, rc, ntask, task, a, b, c
    cdef double* part = NULL
    cdef double s
    cdef int nt = _threads_for(A * R * B, GRAIN_SUM, n_threads)
    if B == 1:
        nrc = (R + RCHUNK - 1) // RCHUNK
        rc = RCHUNK
        nbb = 1
    else:
        nbb = (B + BB - 1) // BB
        rc = max(1, TASK // min(B, <Py_ssize_t>BB))
        nrc = (R + rc - 1) // rc
    ntask = A * nbb * nrc
    if nrc > 1:
        part = <double*>malloc(A * nrc * B * sizeof(double))
        if part == NULL:
            with gil:
                raise MemoryError("sum_fwd: cannot allocate the partial-sum buffer")
    if nt > ntask:
        nt = <int>ntask
    try:
        if B == 1:
            if nt > 1:
                for task in prange(ntask, schedule='static', num_threads=nt):
                    _row_task(x, R, nrc, task, part, out)
            else:
                for task in range(ntask):
                    _row_task(x, R, nrc, task, part, out)
        else:
            if nt > 1:
                for task in prange(ntask, schedule='static', num_threads=nt):
                    _col_task(x, R, B, nbb, nrc, rc, task, part, out)
            else:
                for task in range(ntask):
                    _col_task(x, R, B, nbb, nrc, rc, task, part, out)
        if part != NULL:                     # add the r-chunk partials in order
            for a in range(A):
                for b in range(B):
                    s = 0
                    for c in range(nrc):
                        s += part[(a * nrc + c) * B + b]
                    out[a * B + b] = <floating>s
    finally:
        free(part)
    return 0


def sum_fwd(cnp.ndarray x not None, cnp.ndarray out not None, int n_threads):
    """out[a, b] := sum_r x[a, r, b]   (accumulated in double).

    x : C-contiguous float32/float64 array of shape (A, R, B) (IN)
    out : C-contiguous array of shape (A, B), x's dtype (OUT); zeros if R == 0
    n_threads : int >= 1, one per 32768 input elements at most
    """
    cdef int t = cnp.PyArray_TYPE(x)
    cdef Py_ssize_t A, R, B
    if (t != cnp.NPY_FLOAT and t != cnp.NPY_DOUBLE) or cnp.PyArray_TYPE(out) != t:
        raise TypeError(f"sum_fwd: x and out must share dtype float32/float64, got "
                        f"{x.dtype} and {out.dtype}")
    if cnp.PyArray_NDIM(x) != 3 or cnp.PyArray_NDIM(out) != 2 or \
            not cnp.PyArray_IS_C_CONTIGUOUS(x) or not cnp.PyArray_IS_C_CONTIGUOUS(out):
        raise ValueError("sum_fwd: x must be C-contiguous 3-D (A, R, B) and out "
                         "C-contiguous 2-D (A, B)")
    A = x.shape[0]
    R = x.shape[1]
    B = x.shape[2]
    if out.shape[0] != A or out.shape[1] != B:
        raise ValueError(f"sum_fwd: out.shape {(<object>out).shape} != ({A}, {B})")
    if A == 0 or B == 0:
        return
    if R == 0:
        memset(cnp.PyArray_DATA(out), 0, A * B * cnp.PyArray_ITEMSIZE(out))
        return
    if t == cnp.NPY_FLOAT:
        with nogil:
            _sum(<const float*>cnp.PyArray_DATA(x), <float*>cnp.PyArray_DATA(out),
                 A, R, B, n_threads)
    else:
        with nogil:
            _sum(<const double*>cnp.PyArray_DATA(x), <double*>cnp.PyArray_DATA(out),
                 A, R, B, n_threads)
