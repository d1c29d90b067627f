# Design:
# Kernels of the second group of reductions (tensorplay/_ops/reduce_extrema.py,
# reduce_stats.py, gather.py).  Like reduce.pyx:sum_fwd, every reduction takes a
# C-contiguous (A, R, B) array -- R the reduced extent -- that the Python layer
# arranges (adjacent dims: no copy; others permuted to the end: one copy).
# a) Work is split into tasks (a, b-block): B == 1 gives one task per row (a
#    contiguous run of R elements), B > 1 gives blocks of BB columns accumulated
#    in a stack buffer, the inner loop over the block's columns (vectorised).
#    Every output element belongs to one task, so results do not depend on
#    n_threads, and gather_bwd's scatter-add has no races.  prange over tasks,
#    one thread per GRAIN input elements (_threads_for).  GIL released.
# b) max/min propagate nan (PyTorch): the value kernel keeps nan once seen; the
#    index kernel returns the first nan, else the first occurrence of the extreme.
# c) prod accumulates in double.  prod_bwd computes g * prod_{j != r} x_j by a
#    prefix pass and a suffix pass (no division, so exact with zeros); its dual
#    form (c != NULL) gives the derivative of that in the direction c, i.e.
#    g * sum_{i != r} c_i prod_{j != i, r} x_j (products of dual numbers).
# d) Index kernels read each index once into a local, compare it with its bound
#    and use only the local (_index.pxd); a bad index stops nothing in flight but
#    is recorded per thread, and the def wrapper raises IndexError.
# Directives are set in setup.py (see unary.pyx.tp).
cimport numpy as cnp
from cython cimport floating
from cython.parallel cimport prange
from libc.stdlib cimport malloc, free
from libc.math cimport NAN

from ._index cimport _bad_index, _index_error
from ._openmp_helpers cimport _threads_for, omp_get_thread_num, GRAIN

cnp.import_array()

ctypedef cnp.int64_t i64

cdef enum:
    BB = 256             # columns per block, column path
    LANES = 16


cdef inline Py_ssize_t _nbb(Py_ssize_t B) noexcept nogil:
    return 1 if B == 1 else (B + BB - 1) // BB


# ---------------------------------------------------------------- max / min
cdef void _ext_task(const floating* x, Py_ssize_t R, Py_ssize_t B, Py_ssize_t nbb,
                    Py_ssize_t task, bint is_min, floating* out, i64* idx) noexcept nogil:
    """out[a, b-block] := max (or min) over r of x[a, r, b]; idx := its index."""
    cdef floating acc[BB]
    cdef floating lane[LANES]
    cdef floating nanl[LANES]
    cdef i64 ix[BB]
    cdef Py_ssize_t a = task // nbb, bb = task % nbb
    cdef Py_ssize_t b0 = bb * BB, nb = min(<Py_ssize_t>BB, B - b0), r, j, k, m
    cdef const floating* row
    cdef const floating* p
    cdef floating v, best
    cdef i64 bi
    if B == 1:
        p = x + a * R
        if idx != NULL:                      # first nan, else first extreme
            best = p[0]
            bi = 0
            if best == best:
                for r in range(1, R):
                    v = p[r]
                    if v != v:
                        best = v
                        bi = r
                        break
                    if (v < best) if is_min else (v > best):
                        best = v
                        bi = r
            out[a] = best
            idx[a] = bi
            return
        # values only: LANES lanes of plain compares (vectorised), nan counted
        # apart in nanl (a sticky select does not vectorise)
        m = R - R % LANES
        for k in range(LANES):
            lane[k] = p[0]
            nanl[k] = 0
        if is_min:
            for r in range(0, m, 16):
                for k in range(LANES):
                    v = p[r + k]
                    lane[k] = v if v < lane[k] else lane[k]
                    nanl[k] += (v != v)
        else:
            for r in range(0, m, 16):
                for k in range(LANES):
                    v = p[r + k]
                    lane[k] = v if v > lane[k] else lane[k]
                    nanl[k] += (v != v)
        for r in range(m, R):
            v = p[r]
            nanl[0] += (v != v)
            if (v < lane[0]) if is_min else (v > lane[0]):
                lane[0] = v
        for k in range(1, LANES):
            nanl[0] += nanl[k]
            if (lane[k] < lane[0]) if is_min else (lane[k] > lane[0]):
                lane[0] = lane[k]
        if nanl[0] != 0 or lane[0] != lane[0]:
            lane[0] = NAN
        out[a] = lane[0]
        return
    row = x + a * R * B + b0
    for j in range(nb):
        acc[j] = row[j]
        ix[j] = 0
    if idx == NULL:
        for r in range(1, R):
            row = x + (a * R + r) * B + b0
            if is_min:
                for j in range(nb):
                    v = row[j]
                    acc[j] = v if (v < acc[j] or v != v) else acc[j]
            else:
                for j in range(nb):
                    v = row[j]
                    acc[j] = v if (v > acc[j] or v != v) else acc[j]
    else:
        for r in range(1, R):
            row = x + (a * R + r) * B + b0
            for j in range(nb):
                v = row[j]
                if (acc[j] == acc[j]) and (
                        v != v or ((v < acc[j]) if is_min else (v > acc[j]))):
                    acc[j] = v
                    ix[j] = r
        for j in range(nb):
            idx[a * B + b0 + j] = ix[j]
    for j in range(nb):
        out[a * B + b0 + j] = acc[j]


cdef void _ext(const floating* x, Py_ssize_t A, Py_ssize_t R, Py_ssize_t B, bint is_min,
               floating* out, i64* idx, int n_threads) noexcept nogil:
    cdef Py_ssize_t nbb = _nbb(B), ntask = A * nbb, task
    cdef int nt = _threads_for(A * R * B, GRAIN, n_threads)
    if nt > ntask:
        nt = <int>ntask
    if nt > 1:
        for task in prange(ntask, schedule='static', num_threads=nt):
            _ext_task(x, R, B, nbb, task, is_min, out, idx)
    else:
        for task in range(ntask):
            _ext_task(x, R, B, nbb, task, is_min, out, idx)


cdef int _check_arb(cnp.ndarray x, cnp.ndarray out, str op) except -1:
    cdef int t = cnp.PyArray_TYPE(x)
    if (t != cnp.NPY_FLOAT and t != cnp.NPY_DOUBLE) or cnp.PyArray_TYPE(out) != t:
        raise TypeError(f"{op}: x and out must share dtype float32/float64, got "
                        f"{x.dtype} and {out.dtype}")
    if cnp.PyArray_NDIM(x) != 3 or not cnp.PyArray_IS_C_CONTIGUOUS(x) or \
            not cnp.PyArray_IS_C_CONTIGUOUS(out) or not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError(f"{op}: x must be C-contiguous 3-D (A, R, B), out C-contiguous")
    return t


def extrema_fwd(cnp.ndarray x not None, cnp.ndarray out not None, idx, bint is_min,
                int n_threads):
    """out[a, b] := max_r x[a, r, b] (min if is_min), nan if any is nan;
    idx[a, b] := the first r where it is reached (the first nan, if any).

    x : C-contiguous float32/float64 (A, R, B), R >= 1 (IN)
    out : C-contiguous (A, B), x's dtype (OUT)
    idx : C-contiguous int64 (A, B) (OUT), or None for values only
    """
    cdef int t = _check_arb(x, out, "extrema_fwd")
    cdef Py_ssize_t A = x.shape[0], R = x.shape[1], B = x.shape[2]
    cdef i64* ip = NULL
    if out.size != A * B or R < 1:
        raise ValueError("extrema_fwd: out must have A * B elements and R >= 1")
    if idx is not None:
        if cnp.PyArray_TYPE(idx) != cnp.NPY_INT64 or not cnp.PyArray_IS_C_CONTIGUOUS(idx) \
                or (<cnp.ndarray>idx).size != A * B:
            raise ValueError("extrema_fwd: idx must be C-contiguous int64 with A * B elements")
        ip = <i64*>cnp.PyArray_DATA(idx)
    if A * B == 0:
        return
    if t == cnp.NPY_FLOAT:
        with nogil:
            _ext(<const float*>cnp.PyArray_DATA(x), A, R, B, is_min,
                 <float*>cnp.PyArray_DATA(out), ip, n_threads)
    else:
        with nogil:
            _ext(<const double*>cnp.PyArray_DATA(x), A, R, B, is_min,
                 <double*>cnp.PyArray_DATA(out), ip, n_threads)


# ---------------------------------------------------------------- prod
cdef void _prod_task(const floating* x, Py_ssize_t R, Py_ssize_t B, Py_ssize_t nbb,
                     Py_ssize_t task, floating* out) noexcept nogil:
    """out[a, b-block] := prod_r x[a, r, b], in double."""
    cdef double acc[BB]
    cdef double lane[LANES]
    cdef Py_ssize_t a = task // nbb, bb = task % nbb
    cdef Py_ssize_t b0 = bb * BB, nb = min(<Py_ssize_t>BB, B - b0), r, j, k, m
    cdef const floating* row
    cdef const floating* p
    if B == 1:
        p = x + a * R
        m = R - R % LANES
        for k in range(LANES):
            lane[k] = 1
        for r in range(0, m, 16):
            for k in range(LANES):
                lane[k] *= p[r + k]
        for r in range(m, R):
            lane[0] *= p[r]
        for k in range(1, LANES):
            lane[0] *= lane[k]
        out[a] = <floating>lane[0]
        return
    for j in range(nb):
        acc[j] = 1
    for r in range(R):
        row = x + (a * R + r) * B + b0
        for j in range(nb):
            acc[j] *= row[j]                 # acc[b] *= x[a, r, b]
    for j in range(nb):
        out[a * B + b0 + j] = <floating>acc[j]


cdef void _prod(const floating* x, Py_ssize_t A, Py_ssize_t R, Py_ssize_t B,
                floating* out, int n_threads) noexcept nogil:
    cdef Py_ssize_t nbb = _nbb(B), ntask = A * nbb, task
    cdef int nt = _threads_for(A * R * B, GRAIN, n_threads)
    if nt > ntask:
        nt = <int>ntask
    if nt > 1:
        for task in prange(ntask, schedule='static', num_threads=nt):
            _prod_task(x, R, B, nbb, task, out)
    else:
        for task in range(ntask):
            _prod_task(x, R, B, nbb, task, out)


def prod_fwd(cnp.ndarray x not None, cnp.ndarray out not None, int n_threads):
    """out[a, b] := prod_r x[a, r, b]   (accumulated in double; 1 if R == 0).

    x : C-contiguous float32/float64 (A, R, B) (IN); out : (A, B), x's dtype (OUT)
    """
    cdef int t = _check_arb(x, out, "prod_fwd")
    cdef Py_ssize_t A = x.shape[0], R = x.shape[1], B = x.shape[2]
    if out.size != A * B:
        raise ValueError("prod_fwd: out must have A * B elements")
    if A * B == 0:
        return
    if t == cnp.NPY_FLOAT:
        with nogil:
            _prod(<const float*>cnp.PyArray_DATA(x), A, R, B,
                  <float*>cnp.PyArray_DATA(out), n_threads)
    else:
        with nogil:
            _prod(<const double*>cnp.PyArray_DATA(x), A, R, B,
                  <double*>cnp.PyArray_DATA(out), n_threads)


cdef void _pbwd_task(const floating* x, const floating* g, const floating* c,
                     Py_ssize_t R, Py_ssize_t B, Py_ssize_t nbb, Py_ssize_t task,
                     double* pv, double* pd, floating* out) noexcept nogil:
    """out[a, r, b] := g[a, b] * prod_{j != r} x[a, j, b]  (c == NULL), or its
    derivative in direction c: g[a, b] * sum_{i != r} c_i prod_{j != i, r} x_j.
    pv, pd: (A, R, B) double scratch for the prefix values (and dual parts)."""
    cdef double sv[BB]
    cdef double sd[BB]
    cdef Py_ssize_t a = task // nbb, bb = task % nbb
    cdef Py_ssize_t b0 = bb * BB, nb = min(<Py_ssize_t>BB, B - b0), r, j, o
    cdef double xv, cv, t
    for j in range(nb):
        sv[j] = 1
        sd[j] = 0
    for r in range(R):                       # prefix: P_r = prod_{j < r} x_j
        o = (a * R + r) * B + b0
        for j in range(nb):
            pv[o + j] = sv[j]
            xv = x[o + j]
            if c != NULL:
                pd[o + j] = sd[j]
                sd[j] = sd[j] * xv + sv[j] * c[o + j]
            sv[j] *= xv
    for j in range(nb):
        sv[j] = 1
        sd[j] = 0
    for r in range(R - 1, -1, -1):           # suffix: S_r = prod_{j > r} x_j
        o = (a * R + r) * B + b0
        for j in range(nb):
            if c == NULL:
                t = pv[o + j] * sv[j]
            else:
                t = pv[o + j] * sd[j] + pd[o + j] * sv[j]
            out[o + j] = <floating>(g[a * B + b0 + j] * t)
            xv = x[o + j]
            if c != NULL:
                sd[j] = sd[j] * xv + sv[j] * c[o + j]
            sv[j] *= xv


def prod_bwd(cnp.ndarray x not None, cnp.ndarray g not None, c, cnp.ndarray out not None,
             int n_threads):
    """out[a, r, b] := g[a, b] * prod_{j != r} x[a, j, b]   (no division);
    with c: g[a, b] * sum_{i != r} c[a, i, b] prod_{j != i, r} x[a, j, b].

    x, c : C-contiguous (A, R, B) (IN); g : C-contiguous (A, B) (IN)
    out : C-contiguous (A, R, B), x's dtype (OUT)
    """
    cdef int t = _check_arb(x, out, "prod_bwd")
    cdef Py_ssize_t A = x.shape[0], R = x.shape[1], B = x.shape[2]
    cdef Py_ssize_t nbb = _nbb(B), ntask = A * nbb, task, n = A * R * B
    cdef int nt = _threads_for(A * R * B, GRAIN, n_threads)
    cdef double* pv
    cdef double* pd = NULL
    cdef void* cp = NULL
    if cnp.PyArray_TYPE(g) != t or not cnp.PyArray_IS_C_CONTIGUOUS(g) or g.size != A * B \
            or out.size != n:
        raise ValueError("prod_bwd: g must be C-contiguous (A, B), out (A, R, B)")
    if c is not None:
        if cnp.PyArray_TYPE(c) != t or not cnp.PyArray_IS_C_CONTIGUOUS(c) or \
                (<cnp.ndarray>c).size != n:
            raise ValueError("prod_bwd: c must be C-contiguous (A, R, B), x's dtype")
        cp = cnp.PyArray_DATA(c)
    if n == 0:
        return
    if nt > ntask:
        nt = <int>ntask
    pv = <double*>malloc(n * sizeof(double) * (1 if c is None else 2))
    if pv == NULL:
        raise MemoryError("prod_bwd: cannot allocate the prefix buffer")
    if c is not None:
        pd = pv + n
    try:
        if t == cnp.NPY_FLOAT:
            with nogil:
                for task in prange(ntask, schedule='static', num_threads=nt):
                    _pbwd_task(<const float*>cnp.PyArray_DATA(x),
                               <const float*>cnp.PyArray_DATA(g), <const float*>cp,
                               R, B, nbb, task, pv, pd, <float*>cnp.PyArray_DATA(out))
        else:
            with nogil:
                for task in prange(ntask, schedule='static', num_threads=nt):
                    _pbwd_task(<const double*>cnp.PyArray_DATA(x),
                               <const double*>cnp.PyArray_DATA(g), <const double*>cp,
                               R, B, nbb, task, pv, pd, <double*>cnp.PyArray_DATA(out))
    finally:
        free(pv)


# ---------------------------------------------------------------- gather
cdef Py_ssize_t _gather(const floating* x, const i64* idx, floating* out, Py_ssize_t A,
                        Py_ssize_t R, Py_ssize_t J, Py_ssize_t B, i64* err,
                        int n_threads) noexcept nogil:
    """out[a, j, b] := x[a, idx[a, j, b], b]; returns the first bad position or -1."""
    cdef Py_ssize_t rows = A * J, t, b, o, aa, first = -1
    cdef int nt = _threads_for(rows * B, GRAIN, n_threads), tid, i
    cdef i64 k
    if nt > (A if B == 1 else rows):
        nt = <int>(A if B == 1 else rows)
    if nt < 1:
        nt = 1
    for i in range(nt):
        err[i] = -1
    if B == 1:                               # gather along the last dim: row loops
        for aa in prange(A, schedule='static', num_threads=nt):
            for b in range(J):
                o = aa * J + b
                k = idx[o]                   # read once, checked, used
                if _bad_index(k, R):
                    tid = omp_get_thread_num()
                    if err[tid] < 0:
                        err[tid] = o
                else:
                    out[o] = x[aa * R + k]
    else:
        for t in prange(rows, schedule='static', num_threads=nt):
            aa = t // J
            o = t * B
            for b in range(B):
                k = idx[o + b]               # read once, checked, used
                if _bad_index(k, R):
                    tid = omp_get_thread_num()
                    if err[tid] < 0:
                        err[tid] = o + b
                else:
                    out[o + b] = x[(aa * R + k) * B + b]
    for i in range(nt):
        if err[i] >= 0 and (first < 0 or err[i] < first):
            first = err[i]
    return first


cdef Py_ssize_t _gather_bwd(const floating* g, const i64* idx, floating* out, Py_ssize_t A,
                            Py_ssize_t R, Py_ssize_t J, Py_ssize_t B, i64* err,
                            int n_threads) noexcept nogil:
    """out[a, idx[a, j, b], b] += g[a, j, b] (out zeroed by the caller); tasks own
    (a, b-block)s, so repeated indices accumulate without races."""
    cdef Py_ssize_t nbb = (B + BB - 1) // BB, ntask = A * nbb, task, a, b0, nb, j, b, o
    cdef Py_ssize_t first = -1
    cdef int nt = _threads_for(A * J * B, GRAIN, n_threads), tid, i
    cdef i64 k
    if nt > ntask:
        nt = <int>ntask
    if nt < 1:
        nt = 1
    for i in range(nt):
        err[i] = -1
    for task in prange(ntask, schedule='static', num_threads=nt):
        tid = omp_get_thread_num()
        a = task // nbb
        b0 = (task % nbb) * BB
        nb = min(<Py_ssize_t>BB, B - b0)
        for j in range(J):
            o = (a * J + j) * B + b0
            for b in range(nb):
                k = idx[o + b]               # read once, checked, used
                if _bad_index(k, R):
                    if err[tid] < 0:
                        err[tid] = o + b
                else:
                    out[(a * R + k) * B + b0 + b] += g[o + b]
    for i in range(nt):
        if err[i] >= 0 and (first < 0 or err[i] < first):
            first = err[i]
    return first


cdef int _check_gather(cnp.ndarray src, cnp.ndarray idx, cnp.ndarray out, str op) except -1:
    cdef int t = cnp.PyArray_TYPE(src)
    if (t != cnp.NPY_FLOAT and t != cnp.NPY_DOUBLE) or cnp.PyArray_TYPE(out) != t:
        raise TypeError(f"{op}: arrays must share dtype float32/float64")
    if cnp.PyArray_TYPE(idx) != cnp.NPY_INT64:
        raise TypeError(f"{op}: idx must be int64")
    if cnp.PyArray_NDIM(src) != 3 or cnp.PyArray_NDIM(idx) != 3 or \
            cnp.PyArray_NDIM(out) != 3 or not cnp.PyArray_IS_C_CONTIGUOUS(src) or \
            not cnp.PyArray_IS_C_CONTIGUOUS(idx) or not cnp.PyArray_IS_C_CONTIGUOUS(out):
        raise ValueError(f"{op}: arrays must be C-contiguous 3-D")
    return t


def gather_fwd(cnp.ndarray x not None, cnp.ndarray idx not None, cnp.ndarray out not None,
               int n_threads, str op="gather"):
    """out[a, j, b] := x[a, idx[a, j, b], b]; IndexError for idx outside [0, R).

    x : (A, R, B) (IN); idx : int64 (A, J, B) (IN); out : (A, J, B) (OUT)
    """
    cdef int t = _check_gather(x, idx, out, "gather_fwd")
    cdef Py_ssize_t A = x.shape[0], R = x.shape[1], J = idx.shape[1], B = x.shape[2], bad
    cdef i64 err[256]
    if idx.shape[0] != A or idx.shape[2] != B or out.shape[0] != A or \
            out.shape[1] != J or out.shape[2] != B:
        raise ValueError("gather_fwd: shapes must be x (A, R, B), idx and out (A, J, B)")
    if A * J * B == 0:
        return
    n_threads = min(n_threads, 256)
    if t == cnp.NPY_FLOAT:
        with nogil:
            bad = _gather(<const float*>cnp.PyArray_DATA(x), <const i64*>cnp.PyArray_DATA(idx),
                          <float*>cnp.PyArray_DATA(out), A, R, J, B, err, n_threads)
    else:
        with nogil:
            bad = _gather(<const double*>cnp.PyArray_DATA(x), <const i64*>cnp.PyArray_DATA(idx),
                          <double*>cnp.PyArray_DATA(out), A, R, J, B, err, n_threads)
    if bad >= 0:
        _index_error(op, "index", bad, (<const i64*>cnp.PyArray_DATA(idx))[bad], R)


def gather_bwd(cnp.ndarray g not None, cnp.ndarray idx not None, cnp.ndarray out not None,
               int n_threads, str op="gather_backward"):
    """out[a, idx[a, j, b], b] += g[a, j, b]   (out zeroed by the caller).

    g : (A, J, B) (IN); idx : int64 (A, J, B) (IN); out : (A, R, B) (IN/OUT)
    """
    cdef int t = _check_gather(g, idx, out, "gather_bwd")
    cdef Py_ssize_t A = out.shape[0], R = out.shape[1], J = idx.shape[1], B = out.shape[2], bad
    cdef i64 err[256]
    if idx.shape[0] != A or idx.shape[2] != B or g.shape[0] != A or \
            g.shape[1] != J or g.shape[2] != B:
        raise ValueError("gather_bwd: shapes must be out (A, R, B), idx and g (A, J, B)")
    if A * J * B == 0:
        return
    n_threads = min(n_threads, 256)
    if t == cnp.NPY_FLOAT:
        with nogil:
            bad = _gather_bwd(<const float*>cnp.PyArray_DATA(g),
                              <const i64*>cnp.PyArray_DATA(idx),
                              <float*>cnp.PyArray_DATA(out), A, R, J, B, err, n_threads)
    else:
        with nogil:
            bad = _gather_bwd(<const double*>cnp.PyArray_DATA(g),
                              <const i64*>cnp.PyArray_DATA(idx),
                              <double*>cnp.PyArray_DATA(out), A, R, J, B, err, n_threads)
    if bad >= 0:
        _index_error(op, "index", bad, (<const i64*>cnp.PyArray_DATA(idx))[bad], R)


# ---------------------------------------------------------------- prod: jets
cdef enum:
    MAXJET = 10          # directions at most (2^10 jet components)


cdef void _jet_mul(double* cur, Py_ssize_t M, Py_ssize_t k, double xv, const double* D,
                   Py_ssize_t n, Py_ssize_t o) noexcept nogil:
    """cur := cur * (xv + sum_i eps_i D[i, o]), eps_i^2 = 0 (subsets of directions);
    descending S so that cur[S \\ i] is still the old value."""
    cdef Py_ssize_t S, i
    cdef double v
    for S in range(M - 1, -1, -1):
        v = cur[S] * xv
        for i in range(k):
            if S & (1 << i):
                v = v + cur[S ^ (1 << i)] * D[i * n + o]
        cur[S] = v


cdef void _jet_col(const double* x, const double* g, const double* D, Py_ssize_t k,
                   Py_ssize_t n, Py_ssize_t R, Py_ssize_t B, Py_ssize_t col, double* pre,
                   double* out) noexcept nogil:
    """out[a, r, b] := g[a, b] * (eps_1 ... eps_k part of prod_{j != r} (x_j + sum_i
    eps_i D_i[j])), for the column col = (a, b): prefix jets, then suffix jets."""
    cdef double cur[1 << MAXJET]
    cdef Py_ssize_t M = 1 << k, F = M - 1, a = col // B, b = col % B, r, S, o
    cdef double t
    for S in range(M):
        cur[S] = 0
    cur[0] = 1
    for r in range(R):
        o = (a * R + r) * B + b
        for S in range(M):
            pre[o * M + S] = cur[S]
        _jet_mul(cur, M, k, x[o], D, n, o)
    for S in range(M):
        cur[S] = 0
    cur[0] = 1
    for r in range(R - 1, -1, -1):
        o = (a * R + r) * B + b
        t = 0
        for S in range(M):
            t = t + pre[o * M + S] * cur[F ^ S]
        out[o] = g[a * B + b] * t
        _jet_mul(cur, M, k, x[o], D, n, o)


def prod_jet(cnp.ndarray x not None, cnp.ndarray g not None, cnp.ndarray D not None,
             cnp.ndarray out not None, int n_threads):
    """out[a, r, b] := g[a, b] * d^k/(d eps_1 ... d eps_k) prod_{j != r} (x_j + sum_i
    eps_i D[i, a, j, b]): the k-th derivative of prod's gradient along the
    directions D[0..k-1], exact with zeros (products of jets, no division).

    x : float64 C-contiguous (A, R, B) (IN); g : float64 (A, B) (IN)
    D : float64 C-contiguous (k, A, R, B), 1 <= k <= 10 (IN); out : float64 (A, R, B) (OUT)
    """
    cdef Py_ssize_t A = x.shape[0], R = x.shape[1], B = x.shape[2], n = A * R * B
    cdef Py_ssize_t k = D.shape[0], M, col
    cdef int nt = _threads_for(n * (1 << min(k, 10)), GRAIN, n_threads)
    cdef double* pre
    for arr in (x, g, D, out):
        if cnp.PyArray_TYPE(arr) != cnp.NPY_DOUBLE or not cnp.PyArray_IS_C_CONTIGUOUS(arr):
            raise TypeError("prod_jet: arrays must be C-contiguous float64")
    if k < 1 or k > MAXJET or D.size != k * n or g.size != A * B or out.size != n:
        raise ValueError(f"prod_jet: need 1 <= k <= {MAXJET} directions of x's shape")
    if n == 0:
        return
    M = 1 << k
    if nt > A * B:
        nt = <int>(A * B)
    if nt < 1:
        nt = 1
    pre = <double*>malloc(n * M * sizeof(double))
    if pre == NULL:
        raise MemoryError("prod_jet: cannot allocate the prefix jets")
    try:
        with nogil:
            for col in prange(A * B, schedule='static', num_threads=nt):
                _jet_col(<const double*>cnp.PyArray_DATA(x), <const double*>cnp.PyArray_DATA(g),
                         <const double*>cnp.PyArray_DATA(D), k, n, R, B, col, pre,
                         <double*>cnp.PyArray_DATA(out))
    finally:
        free(pre)
