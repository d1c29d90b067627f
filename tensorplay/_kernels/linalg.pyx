# Design:
# Matrix products call the BLAS that numpy loaded (OpenBLAS in the PyPI wheels);
# nobody hand-writes a GEMM (DESIGN.md, fixed point 6).  What this file adds is
# *who runs the threads*: one pool, tensorplay's OpenMP pool, never two.
#
# a) At first use, tensorplay/_blas.py finds the cblas_{s,d}gemm and
#    openblas_{set,get}_num_threads symbols of numpy's BLAS and hands their
#    addresses to `set_blas(...)`.  Both LP64 (int) and ILP64 (int64, numpy's
#    scipy-openblas64) interfaces are supported.
# b) Every call pins OpenBLAS to one thread for its duration (`_pin` / `_unpin`,
#    a depth count so that nested or concurrent callers restore the user's
#    setting exactly once; the count changes only with the GIL held).  OpenBLAS's
#    own worker threads therefore never wake for tensorplay's products and never
#    spin beside the OpenMP kernels -- the 26x cliff of issue 5.
# c) Large products are split over tensorplay's OpenMP threads instead: batches
#    when there are enough of them, else row blocks of A (or column blocks of B
#    when A has few rows); each block is one single-threaded GEMM.  Threads only
#    from MNK_PER_THREAD multiply-adds per thread on (below it one call is faster).
# d) `gemm(a, b, out, n_threads)` takes 3-D (batch, m, k) / (batch, k, n) arrays
#    whose matrices each have a unit stride in one dimension (row- or column-major,
#    transposed views included; batch strides may be 0 for broadcasting) and
#    returns False, computing nothing, when a layout is not BLAS-compatible, so
#    that the caller can copy and retry.  out is a C-contiguous (batch, m, n) array.
cimport numpy as cnp
from cython.parallel cimport prange
from libc.stdint cimport int64_t, uintptr_t

cnp.import_array()

cdef enum:
    ROW_MAJOR = 101      # CBLAS_ORDER / CBLAS_TRANSPOSE values (cblas.h)
    NO_TRANS = 111
    TRANS = 112
    # Threads only when each gets at least this many multiply-adds (~25 us on one
    # core of the dev box; waking a passive OpenMP worker costs ~30 us there).
    # Measured on the example's MLP (64-128-10, batch 256, fresh processes): with
    # its 2M-MAC products split over 2 threads the step took 0.85-0.94 ms against
    # 1.09 ms on one thread (PyTorch 0.65 ms), and the same with a busy process
    # beside it (1.0-1.2 ms either way); OpenBLAS on one thread is slow for the
    # (64, 256) @ (256, 128) weight gradient (250 us, 80 us on two).
    MNK_PER_THREAD = 1048576

ctypedef void (*sgemm64_t)(int, int, int, int64_t, int64_t, int64_t, float,
                           const float*, int64_t, const float*, int64_t, float,
                           float*, int64_t) noexcept nogil
ctypedef void (*dgemm64_t)(int, int, int, int64_t, int64_t, int64_t, double,
                           const double*, int64_t, const double*, int64_t, double,
                           double*, int64_t) noexcept nogil
ctypedef void (*sgemm32_t)(int, int, int, int, int, int, float,
                           const float*, int, const float*, int, float,
                           float*, int) noexcept nogil
ctypedef void (*dgemm32_t)(int, int, int, int, int, int, double,
                           const double*, int, const double*, int, double,
                           double*, int) noexcept nogil
ctypedef void (*set_threads_t)(int) noexcept nogil
ctypedef int (*get_threads_t)() noexcept nogil

cdef sgemm64_t _sgemm64 = NULL
cdef dgemm64_t _dgemm64 = NULL
cdef sgemm32_t _sgemm32 = NULL
cdef dgemm32_t _dgemm32 = NULL
cdef set_threads_t _set_threads = NULL
cdef get_threads_t _get_threads = NULL
cdef bint _ilp64 = False
cdef int _pin_depth = 0
cdef int _saved_threads = 0


def set_blas(uintptr_t sgemm, uintptr_t dgemm, uintptr_t set_threads,
             uintptr_t get_threads, bint ilp64):
    """Install the BLAS entry points (addresses of cblas_sgemm, cblas_dgemm and
    openblas_set/get_num_threads; the last two may be 0 for a BLAS without them)."""
    global _sgemm64, _dgemm64, _sgemm32, _dgemm32, _set_threads, _get_threads, _ilp64
    if sgemm == 0 or dgemm == 0:
        raise ValueError("set_blas: the gemm addresses must not be NULL")
    _ilp64 = ilp64
    if ilp64:
        _sgemm64 = <sgemm64_t>sgemm
        _dgemm64 = <dgemm64_t>dgemm
    else:
        _sgemm32 = <sgemm32_t>sgemm
        _dgemm32 = <dgemm32_t>dgemm
    _set_threads = <set_threads_t>set_threads if set_threads else NULL
    _get_threads = <get_threads_t>get_threads if get_threads else NULL


def blas_ready():
    """True once set_blas has installed the gemm entry points."""
    return _sgemm64 != NULL or _sgemm32 != NULL


cdef void _pin() noexcept:
    global _pin_depth, _saved_threads
    if _set_threads == NULL:
        return
    if _pin_depth == 0:
        _saved_threads = _get_threads() if _get_threads != NULL else 0
        if _saved_threads != 1:
            _set_threads(1)
    _pin_depth += 1


cdef void _unpin() noexcept:
    global _pin_depth
    if _set_threads == NULL or _pin_depth == 0:
        return
    _pin_depth -= 1
    if _pin_depth == 0 and _saved_threads > 1:
        _set_threads(_saved_threads)


def pin():
    """Pin the BLAS to one thread (depth-counted; call unpin() once per pin()).
    Call with the GIL held (from Python), as every caller here does."""
    _pin()


def unpin():
    """Undo one pin(); the last one restores the thread count found by the first."""
    _unpin()


def blas_threads():
    """The BLAS's own thread setting now (openblas_get_num_threads), or 0 if unknown."""
    return _get_threads() if _get_threads != NULL else 0


cdef struct Mat:
    char* data           # first element of batch 0
    Py_ssize_t sbatch    # batch stride, bytes
    Py_ssize_t rows, cols
    Py_ssize_t ld        # leading dimension, elements
    int trans            # NO_TRANS (row-major) or TRANS (column-major)


cdef bint _layout(cnp.ndarray x, Mat* m):
    """Describe a 3-D array for cblas (row-major order); False if not expressible."""
    cdef Py_ssize_t item = cnp.PyArray_ITEMSIZE(x)
    cdef Py_ssize_t r = cnp.PyArray_DIM(x, 1), c = cnp.PyArray_DIM(x, 2)
    cdef Py_ssize_t sr = cnp.PyArray_STRIDE(x, 1), sc = cnp.PyArray_STRIDE(x, 2)
    m.data = <char*>cnp.PyArray_DATA(x)
    m.sbatch = cnp.PyArray_STRIDE(x, 0) if cnp.PyArray_DIM(x, 0) > 1 else 0
    m.rows = r
    m.cols = c
    # a size-1 dimension's stride is arbitrary: treat it as the natural one
    if c == 1:
        sc = item
    if r == 1:
        sr = c * item if sc == item else item
    if sc == item and sr % item == 0 and sr // item >= max(c, 1):
        m.trans = NO_TRANS
        m.ld = sr // item
        return True
    if sr == item and sc % item == 0 and sc // item >= max(r, 1):
        m.trans = TRANS
        m.ld = sc // item
        return True
    return False


cdef void _gemm1(int dbl, const Mat* A, const Mat* B, char* c, Py_ssize_t ldc,
                 Py_ssize_t batch, Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t c0,
                 Py_ssize_t c1) noexcept nogil:
    """out[batch, r0:r1, c0:c1] := A[batch, r0:r1, :] @ B[batch, :, c0:c1] (one call)."""
    cdef Py_ssize_t item = 8 if dbl else 4
    cdef Py_ssize_t k = A.cols
    cdef char* pa = A.data + batch * A.sbatch
    cdef char* pb = B.data + batch * B.sbatch
    cdef char* pc = c + (batch * A.rows * ldc + r0 * ldc + c0) * item
    # row r of A starts at r*ld (row-major) or r (column-major); likewise columns of B
    pa += (r0 * A.ld if A.trans == NO_TRANS else r0) * item
    pb += (c0 if B.trans == NO_TRANS else c0 * B.ld) * item
    if r1 <= r0 or c1 <= c0:
        return
    if _ilp64:
        if dbl:
            _dgemm64(ROW_MAJOR, A.trans, B.trans, r1 - r0, c1 - c0, k, 1.0,
                     <const double*>pa, A.ld, <const double*>pb, B.ld, 0.0,
                     <double*>pc, ldc)
        else:
            _sgemm64(ROW_MAJOR, A.trans, B.trans, r1 - r0, c1 - c0, k, 1.0,
                     <const float*>pa, A.ld, <const float*>pb, B.ld, 0.0,
                     <float*>pc, ldc)
    else:
        if dbl:
            _dgemm32(ROW_MAJOR, A.trans, B.trans, <int>(r1 - r0), <int>(c1 - c0), <int>k,
                     1.0, <const double*>pa, <int>A.ld, <const double*>pb, <int>B.ld,
                     0.0, <double*>pc, <int>ldc)
        else:
            _sgemm32(ROW_MAJOR, A.trans, B.trans, <int>(r1 - r0), <int>(c1 - c0), <int>k,
                     1.0, <const float*>pa, <int>A.ld, <const float*>pb, <int>B.ld,
                     0.0, <float*>pc, <int>ldc)


def gemm(cnp.ndarray a not None, cnp.ndarray b not None, cnp.ndarray out not None,
         int n_threads):
    """out[i] := a[i] @ b[i] for every batch index i, through BLAS.

    a : (batch or 1, m, k) float32/float64, any strides with a unit stride in one
        of the last two dims (IN)
    b : (batch or 1, k, n) same dtype, same rule (IN)
    out : C-contiguous (batch, m, n) array of that dtype (OUT)
    n_threads : int >= 1, tensorplay's threads; the BLAS itself runs on one

    Returns True when done, False (nothing written) when a or b has a layout BLAS
    cannot take; the caller copies it (C-contiguous) and calls again.

    Raises:
        RuntimeError: when no BLAS was installed with set_blas.
        ValueError: for shapes or dtypes that do not match (the caller checks).
    """
    cdef Mat A, B
    cdef int t = cnp.PyArray_TYPE(out), dbl
    cdef Py_ssize_t nb, m, n, k, nblk, blk, per, r0, ldc
    cdef double work
    cdef int nt
    cdef bint split_rows
    cdef char* c
    if not blas_ready():
        raise RuntimeError("gemm: no BLAS installed (tensorplay._blas.load() first)")
    if t != cnp.NPY_FLOAT and t != cnp.NPY_DOUBLE:
        raise ValueError(f"gemm: out must be float32 or float64, got {out.dtype}")
    if cnp.PyArray_TYPE(a) != t or cnp.PyArray_TYPE(b) != t:
        raise ValueError(f"gemm: dtypes {a.dtype}, {b.dtype} differ from out's {out.dtype}")
    if (cnp.PyArray_NDIM(a) != 3 or cnp.PyArray_NDIM(b) != 3 or cnp.PyArray_NDIM(out) != 3
            or not cnp.PyArray_IS_C_CONTIGUOUS(out) or not cnp.PyArray_ISWRITEABLE(out)):
        raise ValueError("gemm: expected 3-D a, b and a C-contiguous writeable 3-D out")
    nb, m, n = out.shape[0], out.shape[1], out.shape[2]
    k = a.shape[2]
    if (a.shape[1] != m or b.shape[2] != n or b.shape[1] != k
            or a.shape[0] not in (1, nb) or b.shape[0] not in (1, nb)):
        raise ValueError(f"gemm: shapes {(<object>a).shape} @ {(<object>b).shape} -> "
                         f"{(<object>out).shape} do not match")
    if nb == 0 or m == 0 or n == 0:
        return True
    if k == 0:
        out.fill(0)
        return True
    if not _layout(a, &A) or not _layout(b, &B):
        return False
    dbl = t == cnp.NPY_DOUBLE
    c = <char*>cnp.PyArray_DATA(out)
    ldc = n
    work = <double>nb * m * n * k
    nt = n_threads
    if work < <double>MNK_PER_THREAD * 2:
        nt = 1
    elif work < <double>MNK_PER_THREAD * nt:
        nt = <int>(work // MNK_PER_THREAD)
    _pin()
    try:
        if nt <= 1:
            with nogil:
                for blk in range(nb):
                    _gemm1(dbl, &A, &B, c, ldc, blk, 0, m, 0, n)
        elif nb >= nt:
            with nogil:
                for blk in prange(nb, schedule='dynamic', num_threads=nt):
                    _gemm1(dbl, &A, &B, c, ldc, blk, 0, m, 0, n)
        else:
            # few large matrices: split the longer of m and n into blocks, two
            # per thread: a thread the OS delays holds up less of the work, and each
            # block repacks the shared operand only once (four per thread measured
            # no faster at 1024^2)
            split_rows = m >= n
            nblk = nt * 2
            per = ((m if split_rows else n) + nblk - 1) // nblk
            per = (per + 15) & ~(<Py_ssize_t>15)           # whole kernel tiles
            nblk = ((m if split_rows else n) + per - 1) // per
            with nogil:
                for blk in prange(nb * nblk, schedule='dynamic', num_threads=nt):
                    r0 = (blk % nblk) * per
                    if split_rows:
                        _gemm1(dbl, &A, &B, c, ldc, blk // nblk, r0, min(r0 + per, m), 0, n)
                    else:
                        _gemm1(dbl, &A, &B, c, ldc, blk // nblk, 0, m, r0, min(r0 + per, n))
    finally:
        _unpin()
    return True
