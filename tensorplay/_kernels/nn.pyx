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
# b) nll_fwd / nll_vjp: the class-weighted negative log-likelihood of
#    log-probabilities on an (N, C, K) view (K = d1*...*dk, 1 for (N, C)), with
#    PyTorch's ignore_index.  nll_fwd is a gather (serial: N*K reads, always cheap)
#    returning the total and the total weight (the weighted mean divides them), or
#    writing the per-item losses (reduction='none'); nll_vjp checks every target
#    and totals the weights, zero-fills out (threaded above THRESH_FILL) and
#    scatters -w[t] g / D.  Both check each target where they read it
#    (_index.pxd) and raise IndexError.
# Point functions for exp/log are in _math.pxd.  Directives are set in setup.py.
cimport numpy as cnp
from cython cimport floating
from cython.parallel cimport prange
from libc.string cimport memset
from libc.math cimport INFINITY

from ._math cimport _exp_fwd, _log_fwd
from ._accumulate cimport _max_contig, _sum_contig
from ._openmp_helpers cimport GRAIN, _threads_for
from ._index cimport _bad_index

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


cdef inline int _nll_target_error(str op, Py_ssize_t pos, cnp.int64_t value,
                                  Py_ssize_t C) except -1:
    """IndexError for the first bad class target (PyTorch: 'Target 5 is out of
    bounds.'), with its position and the value as the kernel read it."""
    raise IndexError(f"{op}(): Target {value} is out of bounds for {C} classes: "
                     f"target[{pos}] = {value} is outside [0, {C}) and is not ignore_index")


cdef Py_ssize_t _nll_sum(const floating* logp, const cnp.int64_t* target,
                         const floating* weight, floating* out, Py_ssize_t N,
                         Py_ssize_t C, Py_ssize_t K, cnp.int64_t ignore,
                         double* total, double* wsum, cnp.int64_t* bad_value) noexcept nogil:
    """total := sum_{i,k} -w[t] logp[i, t, k] and wsum := sum w[t] over the targets
    t = target[i, k] != ignore (w = 1 when weight is NULL); out[i, k] := that term
    (0 where ignored) when out is not NULL.  The first bad target's flat position
    (its value in bad_value), or -1."""
    cdef double s = 0, ws = 0, w, v
    cdef Py_ssize_t i, k, pos
    cdef cnp.int64_t t
    for i in range(N):
        for k in range(K):
            pos = i * K + k
            t = target[pos]
            if t == ignore:
                if out != NULL:
                    out[pos] = 0
                continue
            if _bad_index(t, C):
                bad_value[0] = t
                return pos
            w = 1.0 if weight == NULL else weight[t]
            v = -w * logp[(i * C + t) * K + k]
            s += v
            ws += w
            if out != NULL:
                out[pos] = <floating>v
    total[0] = s
    wsum[0] = ws
    return -1


def nll_fwd(cnp.ndarray logp not None, cnp.ndarray target not None, weight,
            out, cnp.int64_t ignore_index, int n_threads):
    """Return (total, wsum): total = sum_{i,k} -w[t] logp[i, t, k] and wsum = sum w[t]
    over the targets t = target[i, k] that are not ignore_index (summed in double;
    the mean is total / wsum, PyTorch's weighted mean).  When out is given,
    out[i, k] := -w[t] logp[i, t, k] (0 where ignored): reduction='none'.

    logp : C-contiguous float32/float64 array of shape (N, C, K) (IN)
    target : C-contiguous int64 array of shape (N, K) (IN); each target is checked
        as it is read: IndexError unless 0 <= target < C or target == ignore_index
    weight : None (all 1) or a C-contiguous (C,) array of logp's dtype (IN)
    out : None or a C-contiguous (N, K) array of logp's dtype (OUT)
    n_threads : accepted for a uniform signature; the gather runs serially
    """
    cdef int t = cnp.PyArray_TYPE(logp)
    cdef Py_ssize_t N, C, K, bad
    cdef double s = 0, ws = 0
    cdef cnp.int64_t value = 0
    _check_nll(logp, target, weight, out, t, "nll_fwd")
    N, C, K = logp.shape[0], logp.shape[1], logp.shape[2]
    cdef const cnp.int64_t* tg = <const cnp.int64_t*>cnp.PyArray_DATA(target)
    cdef void* wp = NULL if weight is None else cnp.PyArray_DATA(weight)
    cdef void* op = NULL if out is None else cnp.PyArray_DATA(out)
    with nogil:
        if t == cnp.NPY_FLOAT:
            bad = _nll_sum(<const float*>cnp.PyArray_DATA(logp), tg, <const float*>wp,
                           <float*>op, N, C, K, ignore_index, &s, &ws, &value)
        else:
            bad = _nll_sum(<const double*>cnp.PyArray_DATA(logp), tg, <const double*>wp,
                           <double*>op, N, C, K, ignore_index, &s, &ws, &value)
    if bad >= 0:
        _nll_target_error("nll_loss", bad, value, C)
    return s, ws


cdef Py_ssize_t _nll_scatter(floating* out, const cnp.int64_t* target,
                             const floating* weight, const floating* g, double g0,
                             bint mean, Py_ssize_t N, Py_ssize_t C, Py_ssize_t K,
                             cnp.int64_t ignore, int n_threads,
                             cnp.int64_t* bad_value) noexcept nogil:
    """out := 0;  out[i, t, k] := -w[t] G[i, k] / D for t = target[i, k] != ignore,
    G = g (an (N, K) array) or the scalar g0, D = sum w[t] (mean) or 1.  The first
    bad target's flat position (its value in bad_value), or -1."""
    cdef Py_ssize_t i, k, b, nblk, per, s, e, pos, n = N * C * K
    cdef cnp.int64_t t
    cdef double ws = 0, scale, gv
    cdef int nt
    # pass 1: check every target (before out is touched) and total the weights
    for pos in range(N * K):
        t = target[pos]
        if t == ignore:
            continue
        if _bad_index(t, C):
            bad_value[0] = t
            return pos
        ws += 1.0 if weight == NULL else weight[t]
    scale = (1.0 / ws) if mean else 1.0      # ws == 0: inf, never used (all ignored)
    nt = _threads_for(n, THRESH_FILL // 2, n_threads)
    if nt > 1:
        per = ((n + nt - 1) // nt + 63) & ~(<Py_ssize_t>63)
        for b in prange(nt, schedule='static', num_threads=nt):
            s = b * per
            e = min(s + per, n)
            if s < e:
                memset(out + s, 0, (e - s) * sizeof(floating))
    else:
        memset(out, 0, n * sizeof(floating))
    for i in range(N):
        for k in range(K):
            pos = i * K + k
            t = target[pos]
            if t == ignore or _bad_index(t, C):   # (checked above; re-read safely)
                continue
            gv = g0 if g == NULL else g[pos]
            out[(i * C + t) * K + k] = <floating>(
                -gv * (1.0 if weight == NULL else weight[t]) * scale)
    return -1


def nll_vjp(cnp.ndarray target not None, weight, g, double g0, bint mean,
            cnp.ndarray out not None, cnp.int64_t ignore_index, int n_threads):
    """out := 0;  out[i, t, k] := -w[t] G[i, k] / D  for t = target[i, k] not
    ignore_index: the VJP of nll_fwd.  G is the (N, K) array g (reduction='none')
    or the scalar g0 (g None); D = sum of w[t] over those targets when mean, else 1.

    target : C-contiguous int64 array of shape (N, K) (IN); all targets are checked
        before out is written: IndexError unless in [0, C) or ignore_index
    weight : None (all 1) or a C-contiguous (C,) array of out's dtype (IN)
    g : None or a C-contiguous (N, K) array of out's dtype (IN)
    out : C-contiguous float32/float64 array of shape (N, C, K) (OUT)
    n_threads : int >= 1, the zero fill is threaded from 131072 elements on
    """
    cdef int t = cnp.PyArray_TYPE(out)
    cdef Py_ssize_t N, C, K, bad
    cdef cnp.int64_t value = 0
    _check_nll(out, target, weight, g, t, "nll_vjp")
    if not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError("nll_vjp: out is read-only")
    N, C, K = out.shape[0], out.shape[1], out.shape[2]
    cdef const cnp.int64_t* tg = <const cnp.int64_t*>cnp.PyArray_DATA(target)
    cdef void* wp = NULL if weight is None else cnp.PyArray_DATA(weight)
    cdef void* gp = NULL if g is None else cnp.PyArray_DATA(g)
    with nogil:
        if t == cnp.NPY_FLOAT:
            bad = _nll_scatter(<float*>cnp.PyArray_DATA(out), tg, <const float*>wp,
                               <const float*>gp, g0, mean, N, C, K, ignore_index,
                               n_threads, &value)
        else:
            bad = _nll_scatter(<double*>cnp.PyArray_DATA(out), tg, <const double*>wp,
                               <const double*>gp, g0, mean, N, C, K, ignore_index,
                               n_threads, &value)
    if bad >= 0:
        _nll_target_error("nll_loss_backward", bad, value, C)


cdef int _check_nll(cnp.ndarray arr, cnp.ndarray target, weight, per_item, int t,
                    str name) except -1:
    """arr (N, C, K) float; target (N, K) int64; weight None or (C,); per_item None
    or (N, K); all C-contiguous, one float dtype."""
    if t != cnp.NPY_FLOAT and t != cnp.NPY_DOUBLE:
        raise TypeError(f"{name}: expected float32/float64 (N, C, K), got {arr.dtype}")
    if cnp.PyArray_TYPE(target) != cnp.NPY_INT64:
        raise TypeError(f"{name}: target must be int64, got {target.dtype}")
    if cnp.PyArray_NDIM(arr) != 3 or cnp.PyArray_NDIM(target) != 2 or \
            not cnp.PyArray_IS_C_CONTIGUOUS(arr) or \
            not cnp.PyArray_IS_C_CONTIGUOUS(target):
        raise ValueError(f"{name}: expected C-contiguous (N, C, K) and int64 (N, K) arrays")
    if arr.shape[0] != target.shape[0] or arr.shape[2] != target.shape[1]:
        raise ValueError(f"{name}: array of shape {(<object>arr).shape} but targets of "
                         f"shape {(<object>target).shape}")
    cdef tuple want_w = (arr.shape[1],), want_g = (arr.shape[0], arr.shape[2])
    for a, shape, what in ((weight, want_w, "weight"), (per_item, want_g, "per-item array")):
        if a is None:
            continue
        if not isinstance(a, cnp.ndarray) or cnp.PyArray_TYPE(a) != t or \
                not cnp.PyArray_IS_C_CONTIGUOUS(a) or a.shape != shape:
            raise ValueError(f"{name}: {what} must be a C-contiguous {arr.dtype} array of "
                             f"shape {shape}")
    return 0
