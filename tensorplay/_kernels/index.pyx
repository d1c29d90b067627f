# Design:
# Advanced indexing (x[idx], index_put, index_select, index_add, scatter, take, ...)
# runs through three kernels on element offsets.  The Python layer
# (tensorplay/_ops/index.py) turns a key into k broadcast int64 index arrays over
# the k indexed dims of a strided view, and the remaining dims into two offset
# tables: ``pre`` (dims in front of the indexed block, when it stays in place)
# and ``post`` (dims behind it, the last of them as an inner run of n_in
# elements with stride s_in).  Then element (p, b, q, i) of the result is
#     src[pre[p] + off[b] + post[q] + i * s_in]
# and the result (or the values of a put) is C-contiguous of shape (P, nb, Q, n_in).
# a) index_offsets reads every index exactly once (tensorplay/_kernels/_index.pxd):
#    k = idx[j][b]; k += size_j if k < 0; _bad_index(k, size_j); off[b] += k * stride_j.
#    It is the only kernel that reads user indices: gather and put read the
#    private offsets it wrote.  A bad index is reported as (j, b, value) by a serial
#    rescan; the caller raises IndexError naming the dim and its size.
# b) gather copies bits (uint8/16/32/64 by itemsize: every dtype), prange over
#    (p, b) tasks with one thread per GRAIN elements; the s_in == 1 run is a plain
#    copy loop.
# c) put writes values (assign: last write wins, as numpy; accumulate: +=, for
#    float32/float64/int32/int64).  Offsets may repeat across b, never across p,
#    so threads split p only (serial when P == 1: repeated indices stay exact and
#    deterministic).
# Directives are set in setup.py (see unary.pyx.tp).
cimport numpy as cnp
from cython.parallel cimport prange
from libc.stdlib cimport malloc, free

from ._openmp_helpers cimport GRAIN, _threads_for
from ._index cimport _bad_index

cnp.import_array()

ctypedef fused word:
    cnp.uint8_t
    cnp.uint16_t
    cnp.uint32_t
    cnp.uint64_t

ctypedef fused num:
    float
    double
    cnp.int32_t
    cnp.int64_t


cdef Py_ssize_t _offsets1(const cnp.int64_t* idx, cnp.int64_t size, cnp.int64_t stride,
                          cnp.int64_t* out, Py_ssize_t nb, int nt) noexcept nogil:
    """out[b] := wrap(idx[b]) * stride for one index array; the number of bad ones."""
    cdef Py_ssize_t b, nbad = 0
    cdef cnp.int64_t v
    for b in prange(nb, schedule='static', num_threads=nt):
        v = idx[b]                                    # read once
        if v < 0:
            v = v + size
        if _bad_index(v, size):
            nbad += 1
            v = 0
        out[b] = v * stride
    return nbad


def index_offsets(tuple idx not None, const cnp.int64_t[::1] sizes, const cnp.int64_t[::1] strides,
                  cnp.int64_t[::1] out, int n_threads):
    """out[b] := sum_j wrap_j(idx[j][b]) * strides[j],  wrap_j(k) = k + sizes[j] for k < 0.

    idx : tuple of k C-contiguous int64 arrays of nb elements (IN), each index
        read once and checked (-sizes[j] <= k < sizes[j])
    sizes, strides : int64 (k,), the indexed dims' sizes and element strides (IN)
    out : int64 (nb,) (OUT)
    Returns None, or (j, b, value) for the first bad index (out is then partial).
    """
    cdef Py_ssize_t k = len(idx), nb = out.shape[0], b, j
    cdef cnp.int64_t v, acc, sz
    cdef Py_ssize_t nbad = 0
    cdef cnp.ndarray a
    if sizes.shape[0] != k or strides.shape[0] != k:
        raise ValueError("index_offsets: sizes and strides need one entry per index array")
    cdef const cnp.int64_t** ptrs = <const cnp.int64_t**>malloc((k + 1) * sizeof(void*))
    if ptrs == NULL:
        raise MemoryError()
    try:
        for j in range(k):
            a = idx[j]
            if cnp.PyArray_TYPE(a) != cnp.NPY_INT64 or not cnp.PyArray_IS_C_CONTIGUOUS(a) \
                    or cnp.PyArray_SIZE(a) != nb:
                raise ValueError(f"index_offsets: idx[{j}] must be C-contiguous int64 of "
                                 f"{nb} elements")
            ptrs[j] = <const cnp.int64_t*>cnp.PyArray_DATA(a)
        nt = _threads_for(nb * k, GRAIN, n_threads)
        with nogil:
            if k == 1:
                nbad = _offsets1(ptrs[0], sizes[0], strides[0], &out[0] if nb else NULL,
                                 nb, nt)
            else:
                for b in prange(nb, schedule='static', num_threads=nt):
                    acc = 0
                    for j in range(k):
                        v = ptrs[j][b]                    # read once
                        sz = sizes[j]
                        if v < 0:
                            v = v + sz
                        if _bad_index(v, sz):
                            nbad += 1
                            v = 0
                        acc = acc + v * strides[j]
                    out[b] = acc
        if nbad == 0:
            return None
        for b in range(nb):                           # the first bad one, serially
            for j in range(k):
                v = ptrs[j][b]
                sz = sizes[j]
                if _bad_index(v + sz if v < 0 else v, sz):
                    return (j, b, v)
        return (-1, -1, 0)                            # changed again meanwhile
    finally:
        free(ptrs)


cdef inline void _gather_run(const word* s, word* o, const cnp.int64_t* post, Py_ssize_t Q,
                             Py_ssize_t n_in, Py_ssize_t s_in) noexcept nogil:
    """o[q, i] := s[post[q] + i * s_in]."""
    cdef Py_ssize_t q, i
    cdef const word* r
    for q in range(Q):
        r = s + post[q]
        if s_in == 1:
            for i in range(n_in):
                o[i] = r[i]
        else:
            for i in range(n_in):
                o[i] = r[i * s_in]
        o = o + n_in


cdef void _gather(const word* src, word* out, const cnp.int64_t* pre, Py_ssize_t P,
                  const cnp.int64_t* off, Py_ssize_t nb, const cnp.int64_t* post,
                  Py_ssize_t Q, Py_ssize_t n_in, Py_ssize_t s_in, int nt) noexcept nogil:
    """out[p, b, q, i] := src[pre[p] + off[b] + post[q] + i * s_in]."""
    cdef Py_ssize_t p, b, row = Q * n_in
    cdef const word* s0
    if P == 1 and row == 1:                       # x[idx] on a 1-D view: one load each
        s0 = src + pre[0] + post[0]
        for b in prange(nb, schedule='static', num_threads=nt):
            out[b] = s0[off[b]]
    elif P == 1:
        for b in prange(nb, schedule='static', num_threads=nt):
            _gather_run(src + pre[0] + off[b], out + b * row, post, Q, n_in, s_in)
    else:
        for p in prange(P, schedule='static', num_threads=nt):
            for b in range(nb):
                _gather_run(src + pre[p] + off[b], out + (p * nb + b) * row, post, Q,
                            n_in, s_in)


def gather(cnp.ndarray src not None, cnp.ndarray out not None, const cnp.int64_t[::1] pre,
           const cnp.int64_t[::1] off, const cnp.int64_t[::1] post, Py_ssize_t n_in, Py_ssize_t s_in,
           int n_threads):
    """out[p, b, q, i] := src[pre[p] + off[b] + post[q] + i * s_in]  (element offsets
    from src's first element; every dtype, copied as bits).

    src : ndarray of any layout (IN); the offsets must stay inside its memory
        (index_offsets checked the indices, the caller built pre/post from its shape)
    out : C-contiguous, src's dtype, P * nb * Q * n_in elements (OUT)
    """
    cdef Py_ssize_t P = pre.shape[0], nb = off.shape[0], Q = post.shape[0]
    cdef Py_ssize_t n = P * nb * Q * n_in
    cdef int isz = cnp.PyArray_ITEMSIZE(src)
    if cnp.PyArray_ITEMSIZE(out) != isz or not cnp.PyArray_IS_C_CONTIGUOUS(out) or \
            cnp.PyArray_SIZE(out) != n or not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError("gather: out must be a writable C-contiguous array of src's "
                         "dtype with P * nb * Q * n_in elements")
    if n == 0:
        return
    cdef int nt = _threads_for(n, GRAIN, n_threads)
    cdef void* s = cnp.PyArray_DATA(src)
    cdef void* d = cnp.PyArray_DATA(out)
    with nogil:
        if isz == 1:
            _gather(<cnp.uint8_t*>s, <cnp.uint8_t*>d, &pre[0], P, &off[0], nb, &post[0],
                    Q, n_in, s_in, nt)
        elif isz == 2:
            _gather(<cnp.uint16_t*>s, <cnp.uint16_t*>d, &pre[0], P, &off[0], nb, &post[0],
                    Q, n_in, s_in, nt)
        elif isz == 4:
            _gather(<cnp.uint32_t*>s, <cnp.uint32_t*>d, &pre[0], P, &off[0], nb, &post[0],
                    Q, n_in, s_in, nt)
        elif isz == 8:
            _gather(<cnp.uint64_t*>s, <cnp.uint64_t*>d, &pre[0], P, &off[0], nb, &post[0],
                    Q, n_in, s_in, nt)
        else:
            with gil:
                raise TypeError(f"gather: unsupported item size {isz}")


cdef void _assign(word* dst, const word* val, Py_ssize_t vstep, const cnp.int64_t* pre,
                  Py_ssize_t P, const cnp.int64_t* off, Py_ssize_t nb,
                  const cnp.int64_t* post, Py_ssize_t Q, Py_ssize_t n_in,
                  Py_ssize_t s_in, int nt) noexcept nogil:
    """dst[pre[p] + off[b] + post[q] + i * s_in] := val[((p * nb + b) * Q + q) * n_in + i]
    (vstep 0: one value for all); b in order, so the last repeated index wins."""
    cdef Py_ssize_t p, b, q, i, o
    cdef word* d
    for p in prange(P, schedule='static', num_threads=nt):
        for b in range(nb):
            o = (p * nb + b) * Q * n_in
            for q in range(Q):
                d = dst + pre[p] + off[b] + post[q]
                for i in range(n_in):
                    d[i * s_in] = val[(o + i) * vstep]
                o = o + n_in


cdef void _accumulate(num* dst, const num* val, Py_ssize_t vstep, const cnp.int64_t* pre,
                      Py_ssize_t P, const cnp.int64_t* off, Py_ssize_t nb,
                      const cnp.int64_t* post, Py_ssize_t Q, Py_ssize_t n_in,
                      Py_ssize_t s_in, int nt) noexcept nogil:
    """dst[pre[p] + off[b] + post[q] + i * s_in] += val[...] (layout as _assign)."""
    cdef Py_ssize_t p, b, q, i, o
    cdef num* d
    if P == 1 and Q * n_in == 1:                  # x[idx] += v on a 1-D view
        d = dst + pre[0] + post[0]
        for b in range(nb):
            d[off[b]] += val[b * vstep]
        return
    for p in prange(P, schedule='static', num_threads=nt):
        for b in range(nb):
            o = (p * nb + b) * Q * n_in
            for q in range(Q):
                d = dst + pre[p] + off[b] + post[q]
                if s_in == 1 and vstep == 1:
                    for i in range(n_in):
                        d[i] += val[o + i]
                else:
                    for i in range(n_in):
                        d[i * s_in] += val[(o + i) * vstep]
                o = o + n_in


def put(cnp.ndarray dst not None, cnp.ndarray values not None, const cnp.int64_t[::1] pre,
        const cnp.int64_t[::1] off, const cnp.int64_t[::1] post, Py_ssize_t n_in, Py_ssize_t s_in,
        bint accumulate, int n_threads):
    """dst[pre[p] + off[b] + post[q] + i * s_in] := (or +=) values[p, b, q, i].

    dst : writable ndarray (IN/OUT), offsets from its first element
    values : C-contiguous, dst's dtype, P * nb * Q * n_in elements, or one element
        (then written everywhere) (IN)
    accumulate : += (float32, float64, int32, int64 only); else assignment, the last
        of repeated offsets wins
    """
    cdef Py_ssize_t P = pre.shape[0], nb = off.shape[0], Q = post.shape[0]
    cdef Py_ssize_t n = P * nb * Q * n_in
    cdef int isz = cnp.PyArray_ITEMSIZE(dst), t = cnp.PyArray_TYPE(dst)
    cdef Py_ssize_t vstep = 0 if cnp.PyArray_SIZE(values) == 1 else 1
    if cnp.PyArray_TYPE(values) != t or not cnp.PyArray_IS_C_CONTIGUOUS(values) or \
            (vstep and cnp.PyArray_SIZE(values) != n) or not cnp.PyArray_ISWRITEABLE(dst):
        raise ValueError("put: values must be C-contiguous of dst's dtype with "
                         "P * nb * Q * n_in elements (or one), dst writable")
    if n == 0:
        return
    cdef int nt = _threads_for(n, GRAIN, n_threads) if P > 1 else 1
    cdef void* d = cnp.PyArray_DATA(dst)
    cdef void* v = cnp.PyArray_DATA(values)
    if accumulate:
        with nogil:
            if t == cnp.NPY_FLOAT:
                _accumulate(<float*>d, <float*>v, vstep, &pre[0], P, &off[0], nb, &post[0],
                            Q, n_in, s_in, nt)
            elif t == cnp.NPY_DOUBLE:
                _accumulate(<double*>d, <double*>v, vstep, &pre[0], P, &off[0], nb,
                            &post[0], Q, n_in, s_in, nt)
            elif t == cnp.NPY_INT32:
                _accumulate(<cnp.int32_t*>d, <cnp.int32_t*>v, vstep, &pre[0], P, &off[0],
                            nb, &post[0], Q, n_in, s_in, nt)
            elif t == cnp.NPY_INT64:
                _accumulate(<cnp.int64_t*>d, <cnp.int64_t*>v, vstep, &pre[0], P, &off[0],
                            nb, &post[0], Q, n_in, s_in, nt)
            else:
                with gil:
                    raise TypeError(f"put: accumulate is not implemented for {dst.dtype}")
        return
    with nogil:
        if isz == 1:
            _assign(<cnp.uint8_t*>d, <cnp.uint8_t*>v, vstep, &pre[0], P, &off[0], nb,
                    &post[0], Q, n_in, s_in, nt)
        elif isz == 2:
            _assign(<cnp.uint16_t*>d, <cnp.uint16_t*>v, vstep, &pre[0], P, &off[0], nb,
                    &post[0], Q, n_in, s_in, nt)
        elif isz == 4:
            _assign(<cnp.uint32_t*>d, <cnp.uint32_t*>v, vstep, &pre[0], P, &off[0], nb,
                    &post[0], Q, n_in, s_in, nt)
        elif isz == 8:
            _assign(<cnp.uint64_t*>d, <cnp.uint64_t*>v, vstep, &pre[0], P, &off[0], nb,
                    &post[0], Q, n_in, s_in, nt)
        else:
            with gil:
                raise TypeError(f"put: unsupported item size {isz}")


cdef Py_ssize_t _take1(const word* src, const cnp.int64_t* idx, word* out, Py_ssize_t nb,
                       cnp.int64_t size, cnp.int64_t stride, int nt) noexcept nogil:
    """out[b] := src[wrap(idx[b]) * stride], each index read once and checked;
    the number of bad ones (their out entries are left unwritten)."""
    cdef Py_ssize_t b, nbad = 0
    cdef cnp.int64_t v
    for b in prange(nb, schedule='static', num_threads=nt):
        v = idx[b]                                    # read once
        if v < 0:
            v = v + size
        if _bad_index(v, size):
            nbad += 1
        else:
            out[b] = src[v * stride]
    return nbad


def take1(cnp.ndarray src not None, cnp.ndarray idx not None, cnp.ndarray out not None,
          cnp.int64_t size, cnp.int64_t stride, int n_threads):
    """out[b] := src[wrap(idx[b]) * stride]: gather along one dim of a 1-D view in
    one pass (index_offsets and gather fused), wrap(k) = k + size for k < 0.

    src : ndarray (IN), offsets from its first element
    idx : C-contiguous int64 (nb,) (IN), each index read once, -size <= k < size
    out : C-contiguous (nb,) of src's dtype (OUT)
    Returns None, or (0, b, value) for the first bad index (out is then partial).
    """
    cdef Py_ssize_t nb = cnp.PyArray_SIZE(idx), nbad = 0, b
    cdef int isz = cnp.PyArray_ITEMSIZE(src)
    cdef cnp.int64_t v
    if cnp.PyArray_TYPE(idx) != cnp.NPY_INT64 or not cnp.PyArray_IS_C_CONTIGUOUS(idx) or \
            cnp.PyArray_ITEMSIZE(out) != isz or not cnp.PyArray_IS_C_CONTIGUOUS(out) or \
            cnp.PyArray_SIZE(out) != nb or not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError("take1: idx must be C-contiguous int64 and out a writable "
                         "C-contiguous array of src's dtype with as many elements")
    if nb == 0:
        return None
    cdef int nt = _threads_for(nb, GRAIN, n_threads)
    cdef void* s = cnp.PyArray_DATA(src)
    cdef void* d = cnp.PyArray_DATA(out)
    cdef const cnp.int64_t* ip = <const cnp.int64_t*>cnp.PyArray_DATA(idx)
    with nogil:
        if isz == 1:
            nbad = _take1(<cnp.uint8_t*>s, ip, <cnp.uint8_t*>d, nb, size, stride, nt)
        elif isz == 2:
            nbad = _take1(<cnp.uint16_t*>s, ip, <cnp.uint16_t*>d, nb, size, stride, nt)
        elif isz == 4:
            nbad = _take1(<cnp.uint32_t*>s, ip, <cnp.uint32_t*>d, nb, size, stride, nt)
        elif isz == 8:
            nbad = _take1(<cnp.uint64_t*>s, ip, <cnp.uint64_t*>d, nb, size, stride, nt)
        else:
            with gil:
                raise TypeError(f"take1: unsupported item size {isz}")
    if nbad == 0:
        return None
    for b in range(nb):
        v = ip[b]
        if _bad_index(v + size if v < 0 else v, size):
            return (0, b, v)
    return (-1, -1, 0)
