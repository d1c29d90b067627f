# Shared machinery of the elementwise kernels (unary.pyx, binary.pyx): argument
# checks and the strided N-d iterator (one, two or three inputs: the ternary
# derivative kernels of binary.pyx use a third stride array, `sc`).
#
# Iterator design (numpy's nditer, reduced to what a C-contiguous output needs):
#   1. pad each input's shape/strides on the left to out.ndim; a broadcast dim gets
#      stride 0;  strides are converted from bytes to elements;
#   2. drop the size-1 dims of out and merge adjacent dims d, d+1 whenever every
#      input has stride[d] == stride[d+1] * shape[d+1] (out is C-contiguous, so it
#      always merges): a transposed or sliced input usually collapses to 2-D;
#   3. split the work into blocks of about BLOCK elements: (row, column-chunk) pairs
#      when the inner dim is long, runs of whole rows when it is short;  prange
#      distributes the blocks;  each block finds its first row's offsets with
#      divmod and steps to the next rows with an odometer (no divmod per row).
# The inner loop of each op is specialised for the inner strides (1,1), (1,0),
# (0,1) and general (see the templates).
cimport numpy as cnp

cdef enum:
    MAXD = 64              # NPY_MAXDIMS in numpy 2
    BLOCK = 8192           # elements per work block of the strided path
    # Elements per thread, at least (_openmp_helpers._threads_for: one thread per
    # grain, so nothing below 2 grains is threaded).  On an idle machine a second
    # thread pays from far less (the 2-core AVX-512 dev box, 1 vs 2 threads:
    # exp f32 16K 5.0/4.1 us, add f32 32K 4.7/3.4 us), but on a loaded one a
    # parallel region waits milliseconds for a worker the OS has queued behind
    # another process.  PyTorch's grain (32K) keeps a 256x128 MLP hidden layer
    # serial; so does this.  Two names so that op classes can be tuned apart.
    GRAIN_TRANSC = 32768  # exp, log, tanh, sigmoid, pow
    GRAIN_CHEAP = 32768   # neg, relu, sqrt, add, sub, mul, div, vjps


cdef struct ElemIter:
    int nd                       # collapsed ndim (>= 1)
    Py_ssize_t shape[MAXD]
    Py_ssize_t sa[MAXD]          # element strides of input a (x for unary ops)
    Py_ssize_t sb[MAXD]          # element strides of input b (unused for unary)
    Py_ssize_t sc[MAXD]          # element strides of input c (ternary kernels only)
    Py_ssize_t inner             # shape[nd - 1]
    Py_ssize_t nrows             # prod(shape[:nd - 1])
    Py_ssize_t chunk             # columns per block
    Py_ssize_t nchunks           # column chunks per row
    Py_ssize_t rows_per_block
    Py_ssize_t nblocks


cdef inline int _check_float_out(cnp.ndarray out) except -1:
    """Return out's type number; out must be float32/float64, C-contiguous, writeable."""
    cdef int t = cnp.PyArray_TYPE(out)
    if t != cnp.NPY_FLOAT and t != cnp.NPY_DOUBLE:
        raise TypeError(f"kernel: out must be float32 or float64, got {out.dtype}")
    if not cnp.PyArray_IS_C_CONTIGUOUS(out) or not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError("kernel: out must be a C-contiguous writeable array")
    return t


cdef inline int _check_same_dtype(cnp.ndarray arr, int t, str name) except -1:
    if cnp.PyArray_TYPE(arr) != t:
        raise TypeError(f"kernel: {name} has dtype {arr.dtype}, expected the dtype of out "
                        f"({cnp.PyArray_DescrFromType(t)}); cast in the caller")
    return 0


cdef inline int _pad_strides(cnp.ndarray out, cnp.ndarray arr, Py_ssize_t* st,
                             str name) except -1:
    """st[d] := element stride of `arr` broadcast to out.shape (0 on broadcast dims)."""
    cdef int nd = cnp.PyArray_NDIM(out), ndk = cnp.PyArray_NDIM(arr), d, dk
    cdef cnp.npy_intp* osh = cnp.PyArray_DIMS(out)
    cdef cnp.npy_intp* ash = cnp.PyArray_DIMS(arr)
    cdef cnp.npy_intp* ast = cnp.PyArray_STRIDES(arr)
    cdef Py_ssize_t itemsize = cnp.PyArray_ITEMSIZE(arr)
    if ndk > nd:
        raise ValueError(f"kernel: {name} with shape {(<object>arr).shape} cannot broadcast to "
                         f"out shape {(<object>out).shape}")
    for d in range(nd):
        dk = d - (nd - ndk)
        if dk < 0:
            st[d] = 0
        elif ash[dk] == osh[d]:
            if ast[dk] % itemsize != 0:
                raise ValueError(f"kernel: {name} has strides {(<object>arr).strides} that are not "
                                 f"multiples of its itemsize; pass a copy")
            st[d] = ast[dk] // itemsize if osh[d] != 1 else 0
        elif ash[dk] == 1:
            st[d] = 0
        else:
            raise ValueError(f"kernel: {name} with shape {(<object>arr).shape} cannot broadcast "
                             f"to out shape {(<object>out).shape}")
    return 0


cdef inline int _iter_setup(ElemIter* it, cnp.ndarray out, cnp.ndarray a,
                            cnp.ndarray b) except -1:
    """Fill `it` for out = f(a[, b]); b may be None (unary)."""
    return _iter_setup3(it, out, a, b, None)


cdef inline int _iter_setup3(ElemIter* it, cnp.ndarray out, cnp.ndarray a,
                             cnp.ndarray b, cnp.ndarray c) except -1:
    """Fill `it` for out = f(a[, b[, c]]); b and c may be None."""
    cdef Py_ssize_t ta[MAXD]
    cdef Py_ssize_t tb[MAXD]
    cdef Py_ssize_t tc[MAXD]
    cdef int nd = cnp.PyArray_NDIM(out), d, j = 0
    cdef cnp.npy_intp* osh = cnp.PyArray_DIMS(out)
    cdef Py_ssize_t n
    _pad_strides(out, a, ta, "a")
    for d in range(nd):
        tb[d] = 0
        tc[d] = 0
    if b is not None:
        _pad_strides(out, b, tb, "b")
    if c is not None:
        _pad_strides(out, c, tc, "c")
    for d in range(nd):
        n = osh[d]
        if n == 1:
            continue
        if (j > 0 and it.sa[j - 1] == ta[d] * n and it.sb[j - 1] == tb[d] * n
                and it.sc[j - 1] == tc[d] * n):
            it.shape[j - 1] *= n                     # merge d into the previous dim
            it.sa[j - 1] = ta[d]
            it.sb[j - 1] = tb[d]
            it.sc[j - 1] = tc[d]
        else:
            it.shape[j] = n
            it.sa[j] = ta[d]
            it.sb[j] = tb[d]
            it.sc[j] = tc[d]
            j += 1
    if j == 0:                                       # 0-d or all dims of size 1
        it.shape[0] = 1
        it.sa[0] = 0
        it.sb[0] = 0
        it.sc[0] = 0
        j = 1
    it.nd = j
    it.inner = it.shape[j - 1]
    it.nrows = 1
    for d in range(j - 1):
        it.nrows *= it.shape[d]
    if it.inner >= BLOCK:
        it.chunk = BLOCK
        it.nchunks = (it.inner + BLOCK - 1) // BLOCK
        it.rows_per_block = 1
        it.nblocks = it.nrows * it.nchunks
    else:
        it.chunk = it.inner
        it.nchunks = 1
        it.rows_per_block = max(1, BLOCK // it.inner)
        it.nblocks = (it.nrows + it.rows_per_block - 1) // it.rows_per_block
    return 0


cdef inline void _iter_block(const ElemIter* it, Py_ssize_t blk, Py_ssize_t* r0,
                             Py_ssize_t* r1, Py_ssize_t* c0, Py_ssize_t* c1) noexcept nogil:
    """Rows [r0, r1) and columns [c0, c1) of work block `blk`."""
    if it.nchunks > 1:
        r0[0] = blk // it.nchunks
        r1[0] = r0[0] + 1
        c0[0] = (blk % it.nchunks) * it.chunk
        c1[0] = min(c0[0] + it.chunk, it.inner)
    else:
        r0[0] = blk * it.rows_per_block
        r1[0] = min(r0[0] + it.rows_per_block, it.nrows)
        c0[0] = 0
        c1[0] = it.inner


cdef inline void _iter_seek3(const ElemIter* it, Py_ssize_t row, Py_ssize_t* idx,
                             Py_ssize_t* oa, Py_ssize_t* ob, Py_ssize_t* oc) noexcept nogil:
    """Multi-index (idx) and input offsets of the first element of `row`."""
    cdef int d
    cdef Py_ssize_t q
    oa[0] = 0
    ob[0] = 0
    oc[0] = 0
    for d in range(it.nd - 2, -1, -1):
        q = row % it.shape[d]
        row = row // it.shape[d]
        idx[d] = q
        oa[0] += q * it.sa[d]
        ob[0] += q * it.sb[d]
        oc[0] += q * it.sc[d]


cdef inline void _iter_next3(const ElemIter* it, Py_ssize_t* idx, Py_ssize_t* oa,
                             Py_ssize_t* ob, Py_ssize_t* oc) noexcept nogil:
    """Odometer step to the next row."""
    cdef int d = it.nd - 2
    while d >= 0:
        idx[d] += 1
        oa[0] += it.sa[d]
        ob[0] += it.sb[d]
        oc[0] += it.sc[d]
        if idx[d] < it.shape[d] or d == 0:
            return
        oa[0] -= it.shape[d] * it.sa[d]
        ob[0] -= it.shape[d] * it.sb[d]
        oc[0] -= it.shape[d] * it.sc[d]
        idx[d] = 0
        d -= 1


# Two-input forms (it.sc is 0 for one- and two-input iterators, set by
# _iter_setup3): once per block and once per row, so the third offset costs nothing.
cdef inline void _iter_seek(const ElemIter* it, Py_ssize_t row, Py_ssize_t* idx,
                            Py_ssize_t* oa, Py_ssize_t* ob) noexcept nogil:
    cdef Py_ssize_t unused = 0
    _iter_seek3(it, row, idx, oa, ob, &unused)


cdef inline void _iter_next(const ElemIter* it, Py_ssize_t* idx, Py_ssize_t* oa,
                            Py_ssize_t* ob) noexcept nogil:
    cdef Py_ssize_t unused = 0
    _iter_next3(it, idx, oa, ob, &unused)
