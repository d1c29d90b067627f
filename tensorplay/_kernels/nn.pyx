# Design:
# a) log_softmax_fwd works on a C-contiguous (A, R, B) view (softmax axis in the
#    middle; the Python layer reshapes).  Per row:  m = max_r x;  out = exp(x - m)
#    (vectorised through libmvec);  s = sum_r out (double, 16 lanes);
#    out = (x - m) - log s.  B == 1 is the fast path (rows contiguous); for B > 1
#    the same three passes run over blocks of BB columns, vectorised over b.
#    prange over rows (or (row, b-block) tasks) with one thread per GRAIN
#    elements (_openmp_helpers.pxd).  A single huge row runs on one thread.  log_softmax_vjp (out = g - exp(y) sum_r g) runs
#    through the same dispatcher.
#    Edge cases follow the formula as numpy evaluates it: a row of all -inf gives
#    x - m = -inf - (-inf) = nan, so the row is nan; a row holding +inf or nan is
#    nan as well.  R == 0: nothing to write.
# b) nll_fwd / nll_vjp: the negative log-likelihood of log-probabilities, mean
#    or sum over the batch (a divisor of N or 1).  nll_fwd is a gather (serial: N
#    reads, always cheap); nll_vjp zero-fills out (threaded above THRESH_FILL) and
#    scatters -g/divisor.
#    Both check each target where they read it (_index.pxd) and raise IndexError.
# Point functions for exp/log are in _math.pxd.  Directives are set in setup.py.
cimport numpy as cnp
from cython cimport floating
from cython.parallel cimport prange
from libc.string cimport memset
from libc.math cimport INFINITY

from ._math cimport _exp_fwd, _log_fwd
from ._accumulate cimport _max_contig, _sum_contig
from ._openmp_helpers cimport GRAIN, _threads_for
from ._index cimport _bad_index, _index_error

cnp.import_array()

cdef enum:
    BB = 256
    THRESH_FILL = 262144    # memset


cdef void _lsm_row(const floating* x, floating* out, Py_ssize_t R) noexcept nogil:
    """out[r] := x[r] - m - log(sum_r exp(x[r] - m)),  m = max_r x[r]."""
    cdef Py_ssize_t r
    cdef floating m = _max_contig(x, R), log_s
    for r in range(R):
        out[r] = _exp_fwd(x[r] - m)                  # scratch: exp(x - m)
    log_s = <floating>_log_fwd(_sum_contig(out, R))
    # (x - m) - log s, not x - (m + log s): for |m| >> log s the latter rounds
    # log s away (float32 logits near 1e6 lost 1e-2).
    for r in range(R):
        out[r] = (x[r] - m) - log_s


cdef void _lsm_cols(const floating* x, floating* out, Py_ssize_t R, Py_ssize_t B,
                    Py_ssize_t nbb, Py_ssize_t task) noexcept nogil:
    """Task (a, b-block) of the B > 1 path: the same formula, vectorised over b."""
    cdef floating mx[BB]
    cdef floating log_s[BB]
    cdef double s[BB]
    cdef Py_ssize_t a = task // nbb, b0 = (task % nbb) * BB, nb = min(BB, B - b0)
    cdef Py_ssize_t r, j
    cdef const floating* xr
    cdef floating* orow
    cdef floating v
    for j in range(nb):
        mx[j] = -INFINITY
        s[j] = 0
    for r in range(R):
        xr = x + (a * R + r) * B + b0
        for j in range(nb):
            v = xr[j]
            mx[j] = v if v > mx[j] else mx[j]
    for r in range(R):
        xr = x + (a * R + r) * B + b0
        for j in range(nb):
            s[j] += _exp_fwd(xr[j] - mx[j])
    for j in range(nb):
        log_s[j] = <floating>_log_fwd(s[j])
    for r in range(R):                               # (x - m) - log s, as _lsm_row
        xr = x + (a * R + r) * B + b0
        orow = out + (a * R + r) * B + b0
        for j in range(nb):
            orow[j] = (xr[j] - mx[j]) - log_s[j]


cdef void _lsmb_row(const floating* g, const floating* y, floating* out,
                    Py_ssize_t R) noexcept nogil:
    """out[r] := g[r] - exp(y[r]) * sum_r g[r]   (the VJP of log_softmax, y its output)."""
    cdef Py_ssize_t r
    cdef floating s = <floating>_sum_contig(g, R)
    for r in range(R):
        out[r] = g[r] - _exp_fwd(y[r]) * s


cdef void _lsmb_cols(const floating* g, const floating* y, floating* out, Py_ssize_t R,
                     Py_ssize_t B, Py_ssize_t nbb, Py_ssize_t task) noexcept nogil:
    """Task (a, b-block) of the B > 1 path of _lsmb_row, vectorised over b."""
    cdef floating sf[BB]
    cdef double s[BB]
    cdef Py_ssize_t a = task // nbb, b0 = (task % nbb) * BB, nb = min(BB, B - b0)
    cdef Py_ssize_t r, j, off
    for j in range(nb):
        s[j] = 0
    for r in range(R):
        off = (a * R + r) * B + b0
        for j in range(nb):
            s[j] += g[off + j]
    for j in range(nb):
        sf[j] = <floating>s[j]
    for r in range(R):
        off = (a * R + r) * B + b0
        for j in range(nb):
            out[off + j] = g[off + j] - _exp_fwd(y[off + j]) * sf[j]


cdef void _lsm_dispatch(bint vjp, const floating* x, const floating* y, floating* out,
                        Py_ssize_t A, Py_ssize_t R, Py_ssize_t B,
                        int n_threads) noexcept nogil:
    """Run the forward (vjp=0: x -> out) or the VJP (vjp=1: g=x, y -> out) over
    (A, R, B): rows in parallel when B == 1, else (row, b-block) tasks."""
    cdef Py_ssize_t a, task, nbb
    cdef int nt = _threads_for(A * R * B, GRAIN, n_threads)
    if B == 1:
        if nt > A:
            nt = <int>A
        if nt > 1:
            for a in prange(A, schedule='static', num_threads=nt):
                if vjp:
                    _lsmb_row(x + a * R, y + a * R, out + a * R, R)
                else:
                    _lsm_row(x + a * R, out + a * R, R)
        else:
            for a in range(A):
                if vjp:
                    _lsmb_row(x + a * R, y + a * R, out + a * R, R)
                else:
                    _lsm_row(x + a * R, out + a * R, R)
    else:
        nbb = (B + BB - 1) // BB
        if nt > A * nbb:
            nt = <int>(A * nbb)
        if nt > 1:
            for task in prange(A * nbb, schedule='static', num_threads=nt):
                if vjp:
                    _lsmb_cols(x, y, out, R, B, nbb, task)
                else:
                    _lsm_cols(x, out, R, B, nbb, task)
        else:
            for task in range(A * nbb):
                if vjp:
                    _lsmb_cols(x, y, out, R, B, nbb, task)
                else:
                    _lsm_cols(x, out, R, B, nbb, task)


cdef _check_lsm(str op, arrays):
    cdef int t = cnp.PyArray_TYPE(arrays[0])
    for a in arrays:
        if (t != cnp.NPY_FLOAT and t != cnp.NPY_DOUBLE) or cnp.PyArray_TYPE(a) != t:
            raise TypeError(f"{op}: all arrays must share dtype float32/float64, got "
                            f"{[str(b.dtype) for b in arrays]}")
        if not cnp.PyArray_IS_C_CONTIGUOUS(a) or \
                cnp.PyArray_SIZE(a) != cnp.PyArray_SIZE(arrays[0]):
            raise ValueError(f"{op}: arrays must be C-contiguous and of one size")
    if cnp.PyArray_NDIM(arrays[0]) != 3:
        raise ValueError(f"{op}: the first array must be 3-D (A, R, B)")
    return t


def log_softmax_fwd(cnp.ndarray x not None, cnp.ndarray out not None, int n_threads):
    """out := x - max_r x - log(sum_r exp(x - max_r x)), over axis 1 of (A, R, B).

    x : C-contiguous float32/float64 array of shape (A, R, B) (IN)
    out : C-contiguous array of the same shape and dtype (OUT)
    n_threads : int >= 1, used only from 16384 elements on
    """
    cdef int t = _check_lsm("log_softmax_fwd", (x, out))
    cdef Py_ssize_t A = x.shape[0], R = x.shape[1], B = x.shape[2]
    if A * R * B == 0:
        return
    if t == cnp.NPY_FLOAT:
        with nogil:
            _lsm_dispatch(0, <const float*>cnp.PyArray_DATA(x), NULL,
                          <float*>cnp.PyArray_DATA(out), A, R, B, n_threads)
    else:
        with nogil:
            _lsm_dispatch(0, <const double*>cnp.PyArray_DATA(x), NULL,
                          <double*>cnp.PyArray_DATA(out), A, R, B, n_threads)


def log_softmax_vjp(cnp.ndarray g not None, cnp.ndarray y not None,
                    cnp.ndarray out not None, int n_threads):
    """out := g - exp(y) * sum_r g, over axis 1 of (A, R, B): the VJP of log_softmax
    with output y, in one pass (the composition takes four).

    g : C-contiguous float32/float64 array of shape (A, R, B), the cotangent (IN)
    y : C-contiguous, same shape and dtype, log_softmax's output (IN)
    out : C-contiguous, same shape and dtype (OUT)
    n_threads : int >= 1, used only from 16384 elements on
    """
    cdef int t = _check_lsm("log_softmax_vjp", (g, y, out))
    cdef Py_ssize_t A = g.shape[0], R = g.shape[1], B = g.shape[2]
    if A * R * B == 0:
        return
    if t == cnp.NPY_FLOAT:
        with nogil:
            _lsm_dispatch(1, <const float*>cnp.PyArray_DATA(g),
                          <const float*>cnp.PyArray_DATA(y),
                          <float*>cnp.PyArray_DATA(out), A, R, B, n_threads)
    else:
        with nogil:
            _lsm_dispatch(1, <const double*>cnp.PyArray_DATA(g),
                          <const double*>cnp.PyArray_DATA(y),
                          <double*>cnp.PyArray_DATA(out), A, R, B, n_threads)


cdef Py_ssize_t _nll_sum(const floating* logp, const cnp.int64_t* target, Py_ssize_t N,
                         Py_ssize_t C, double* total, cnp.int64_t* bad_value) noexcept nogil:
    """total := sum_i logp[i, target[i]]; the first bad target's position (its value
    in bad_value), or -1."""
    cdef double s = 0
    cdef Py_ssize_t i
    cdef cnp.int64_t k
    for i in range(N):
        k = target[i]
        if _bad_index(k, C):
            bad_value[0] = k
            return i
        s += logp[i * C + k]
    total[0] = s
    return -1


def nll_fwd(cnp.ndarray logp not None, cnp.ndarray target not None, double divisor,
            int n_threads):
    """Return -sum_i logp[i, target[i]] / divisor  (a Python float, summed in double;
    divisor N gives the mean, 1 the sum).

    logp : C-contiguous float32/float64 array of shape (N, C), N >= 1 (IN)
    target : C-contiguous int64 array of shape (N,) (IN); each target is checked
        as it is read, IndexError unless 0 <= target[i] < C
    n_threads : accepted for a uniform signature; the gather runs serially
    """
    cdef int t = cnp.PyArray_TYPE(logp)
    cdef Py_ssize_t N, C, bad
    cdef double s = 0
    cdef cnp.int64_t value = 0
    _check_nll(logp, target, t, "nll_fwd")
    N = logp.shape[0]
    C = logp.shape[1]
    cdef const cnp.int64_t* tg = <const cnp.int64_t*>cnp.PyArray_DATA(target)
    with nogil:
        if t == cnp.NPY_FLOAT:
            bad = _nll_sum(<const float*>cnp.PyArray_DATA(logp), tg, N, C, &s, &value)
        else:
            bad = _nll_sum(<const double*>cnp.PyArray_DATA(logp), tg, N, C, &s, &value)
    if bad >= 0:
        _index_error("nll_loss", "target", bad, value, C)
    return -s / divisor


cdef Py_ssize_t _nll_scatter(floating* out, const cnp.int64_t* target, Py_ssize_t N,
                             Py_ssize_t C, double v, int n_threads,
                             cnp.int64_t* bad_value) noexcept nogil:
    """out := 0, out[i, target[i]] := v; the first bad target's position (its value
    in bad_value), or -1."""
    cdef Py_ssize_t i, k, nblk, per, s, e, n = N * C
    cdef cnp.int64_t j
    cdef int nt = _threads_for(n, THRESH_FILL // 2, n_threads)
    if nt > 1:
        per = ((n + nt - 1) // nt + 63) & ~(<Py_ssize_t>63)
        for k in prange(nt, schedule='static', num_threads=nt):
            s = k * per
            e = min(s + per, n)
            if s < e:
                memset(out + s, 0, (e - s) * sizeof(floating))
    else:
        memset(out, 0, n * sizeof(floating))
    for i in range(N):
        j = target[i]
        if _bad_index(j, C):
            bad_value[0] = j
            return i
        out[i * C + j] = <floating>v                  # out[i, target[i]] = -g/N
    return -1


def nll_vjp(double g, cnp.ndarray target not None, cnp.ndarray out not None,
            double divisor, int n_threads):
    """out := 0;  out[i, target[i]] := -g / divisor  (N for the mean, 1 for the sum).

    g : the cotangent of the scalar loss
    target : C-contiguous int64 array of shape (N,) (IN); each target is checked
        as it is read, IndexError unless 0 <= target[i] < C (out is then
        partly written: pass a fresh array)
    out : C-contiguous float32/float64 array of shape (N, C) (OUT)
    n_threads : int >= 1, the zero fill is threaded from 262144 elements on
    """
    cdef int t = cnp.PyArray_TYPE(out)
    cdef Py_ssize_t N, C, bad
    cdef cnp.int64_t value = 0
    _check_nll(out, target, t, "nll_vjp")
    if not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError("nll_vjp: out is read-only")
    N = out.shape[0]
    C = out.shape[1]
    cdef const cnp.int64_t* tg = <const cnp.int64_t*>cnp.PyArray_DATA(target)
    with nogil:
        if t == cnp.NPY_FLOAT:
            bad = _nll_scatter(<float*>cnp.PyArray_DATA(out), tg, N, C, -g / divisor,
                               n_threads, &value)
        else:
            bad = _nll_scatter(<double*>cnp.PyArray_DATA(out), tg, N, C, -g / divisor,
                               n_threads, &value)
    if bad >= 0:
        _index_error("nll_loss_backward", "target", bad, value, C)


cdef int _check_nll(cnp.ndarray arr, cnp.ndarray target, int t, str name) except -1:
    if t != cnp.NPY_FLOAT and t != cnp.NPY_DOUBLE:
        raise TypeError(f"{name}: expected float32/float64 (N, C), got {arr.dtype}")
    if cnp.PyArray_TYPE(target) != cnp.NPY_INT64:
        raise TypeError(f"{name}: target must be int64, got {target.dtype}")
    if cnp.PyArray_NDIM(arr) != 2 or cnp.PyArray_NDIM(target) != 1 or \
            not cnp.PyArray_IS_C_CONTIGUOUS(arr) or \
            not cnp.PyArray_IS_C_CONTIGUOUS(target):
        raise ValueError(f"{name}: expected C-contiguous (N, C) and int64 (N,) arrays")
    if arr.shape[0] != target.shape[0] or arr.shape[0] < 1:
        raise ValueError(f"{name}: N = {arr.shape[0]} rows but {target.shape[0]} "
                         f"targets (need N >= 1)")
    return 0
