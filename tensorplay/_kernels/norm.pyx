# Design:
# Normalisation kernels: one pass for the statistics, one for the normalise, and
# a fused backward (one reduction pass, one write pass).
# a) Channel mode (batch_norm): x is a C-contiguous (N, C, K) view, statistics per
#    channel c over n and k.  K == 1 (an (N, C) batch) is a column reduction:
#    column blocks of BB channels, the loop over channels vectorised; K > 1 loops
#    k innermost.  prange over channels (or column blocks).
# b) Row mode (layer_norm, group_norm): x is a C-contiguous (R, L) view, statistics
#    per row.  Row r belongs to group g = r % G and element j of the row to channel
#    c = g*Cg + j // K (layer_norm: G = 1, Cg = L, K = 1, c = j; group_norm: rows
#    (n, g), L = Cg*K).  prange over rows; the backward accumulates the weight and
#    bias gradients (per channel) in per-thread buffers of doubles, added in order.
# Statistics are summed in double, shifted by the first element of the group
# (sum (x - x0) and sum (x - x0)^2: no cancellation for data far from 0), the
# variance biased (divided by M, the group's size) and clamped at 0;
# rstd = 1 / sqrt(var + eps).
# Formulas (xhat = (x - mean) rstd, M the group's size, u the cotangent times the
# weight in row mode):
#    forward   y  = xhat w + b = x scale + shift,  scale = w rstd, shift = b - mean scale
#    backward  gx = rstd (u - sum(u)/M - xhat sum(u xhat)/M)   (times w in channel mode)
#              gw = sum(g xhat),  gb = sum(g)  over the group's elements of the channel
# Directives are set in setup.py.
cimport numpy as cnp
from cython cimport floating
from cython.parallel cimport prange
from libc.math cimport sqrt
from libc.stdlib cimport malloc, free
from libc.string cimport memset

from ._openmp_helpers cimport GRAIN, _threads_for, omp_get_thread_num

cnp.import_array()

cdef enum:
    BB = 256            # channels per column block (K == 1 channel mode)
    NL = 8              # independent accumulators: a sum's add latency, not its
                        # throughput, bounds one chain (no -ffast-math to reassociate)


cdef inline void _sums_x(const floating* x, Py_ssize_t n, double x0, double* s,
                         double* q) noexcept nogil:
    """s += sum (x - x0),  q += sum (x - x0)^2, in NL lanes."""
    cdef double a[NL]
    cdef double b[NL]
    cdef double d
    cdef Py_ssize_t i, k, m = n - n % NL
    for k in range(NL):
        a[k] = 0
        b[k] = 0
    for i in range(0, m, 8):               # 8 == NL
        for k in range(NL):
            d = <double>x[i + k] - x0
            a[k] += d
            b[k] += d * d
    for i in range(m, n):
        d = <double>x[i] - x0
        a[0] += d
        b[0] += d * d
    for k in range(NL):
        s[0] += a[k]
        q[0] += b[k]


cdef inline void _sums_gx(const floating* g, const floating* x, const floating* w,
                          Py_ssize_t n, double m, double* s, double* q) noexcept nogil:
    """s += sum u,  q += sum u (x - m),  u = g (times w elementwise unless NULL), in
    NL lanes."""
    cdef double a[NL]
    cdef double b[NL]
    cdef double u
    cdef Py_ssize_t i, k, e = n - n % NL
    for k in range(NL):
        a[k] = 0
        b[k] = 0
    if w == NULL:
        for i in range(0, e, 8):           # 8 == NL
            for k in range(NL):
                u = g[i + k]
                a[k] += u
                b[k] += u * (<double>x[i + k] - m)
        for i in range(e, n):
            u = g[i]
            a[0] += u
            b[0] += u * (<double>x[i] - m)
    else:
        for i in range(0, e, 8):           # 8 == NL
            for k in range(NL):
                u = <double>g[i + k] * w[i + k]
                a[k] += u
                b[k] += u * (<double>x[i + k] - m)
        for i in range(e, n):
            u = <double>g[i] * w[i]
            a[0] += u
            b[0] += u * (<double>x[i] - m)
    for k in range(NL):
        s[0] += a[k]
        q[0] += b[k]


# ---------------------------------------------------------------- channel mode
cdef void _ch_sums(const floating* x, const floating* g, const double* mean,
                   double* s1, double* s2, Py_ssize_t N, Py_ssize_t C, Py_ssize_t K,
                   Py_ssize_t c0, Py_ssize_t c1) noexcept nogil:
    """Channels c0..c1-1.  g == NULL (statistics): s1 = sum (x - x0), s2 = sum
    (x - x0)^2 with x0 = x[0, c, 0] (returned in mean[c] by the caller's choice:
    here mean is NULL and the shift is re-read).  g != NULL (backward):
    s1 = sum g, s2 = sum g (x - mean[c])."""
    cdef Py_ssize_t n, c, k
    cdef const floating* xr
    cdef const floating* gr
    cdef double a, b, d, sh
    if K == 1:
        for c in range(c0, c1):
            s1[c] = 0
            s2[c] = 0
        for n in range(N):
            xr = x + n * C
            if g == NULL:
                for c in range(c0, c1):
                    d = <double>xr[c] - <double>x[c]
                    s1[c] += d
                    s2[c] += d * d
            else:
                gr = g + n * C
                for c in range(c0, c1):
                    s1[c] += gr[c]
                    s2[c] += <double>gr[c] * (<double>xr[c] - mean[c])
        return
    for c in range(c0, c1):
        a = 0
        b = 0
        sh = x[c * K] if g == NULL else mean[c]
        for n in range(N):
            xr = x + (n * C + c) * K
            if g == NULL:
                _sums_x(xr, K, sh, &a, &b)
            else:
                _sums_gx(g + (n * C + c) * K, xr, <const floating*>NULL, K, sh, &a, &b)
        s1[c] = a
        s2[c] = b


cdef void _ch_sums_par(const floating* x, const floating* g, const double* mean,
                       double* s1, double* s2, Py_ssize_t N, Py_ssize_t C, Py_ssize_t K,
                       int n_threads) noexcept nogil:
    cdef Py_ssize_t blk = BB if K == 1 else 1, nb = (C + blk - 1) // blk, t
    cdef int nt = _threads_for(N * C * K, GRAIN, n_threads)
    if nt > nb:
        nt = <int>nb
    if nt > 1:
        for t in prange(nb, schedule='static', num_threads=nt):
            _ch_sums(x, g, mean, s1, s2, N, C, K, t * blk, min(t * blk + blk, C))
    else:
        _ch_sums(x, g, mean, s1, s2, N, C, K, 0, C)


cdef void _ch_affine(const floating* x, const floating* g, floating* y,
                     const double* sa, const double* sb, const double* sc,
                     Py_ssize_t N, Py_ssize_t C, Py_ssize_t K, int n_threads) noexcept nogil:
    """y := x sa[c] + sc[c]  (g == NULL), or y := g sa[c] + x sb[c] + sc[c]."""
    cdef Py_ssize_t q, n, c, k
    cdef double a, b, d
    cdef const floating* xr
    cdef const floating* gr
    cdef floating* yr
    cdef int nt = _threads_for(N * C * K, GRAIN, n_threads)
    if K == 1:
        if nt > N:
            nt = <int>N
        for n in prange(N, schedule='static', num_threads=nt):
            xr = x + n * C
            yr = y + n * C
            if g == NULL:
                for c in range(C):
                    yr[c] = <floating>(xr[c] * sa[c] + sc[c])
            else:
                gr = g + n * C
                for c in range(C):
                    yr[c] = <floating>(gr[c] * sa[c] + xr[c] * sb[c] + sc[c])
        return
    if nt > N * C:
        nt = <int>(N * C)
    for q in prange(N * C, schedule='static', num_threads=nt):
        c = q % C
        xr = x + q * K
        yr = y + q * K
        a = sa[c]
        d = sc[c]
        if g == NULL:
            for k in range(K):
                yr[k] = <floating>(xr[k] * a + d)
        else:
            b = sb[c]
            gr = g + q * K
            for k in range(K):
                yr[k] = <floating>(gr[k] * a + xr[k] * b + d)


cdef int _check(str name, arrays, int t, Py_ssize_t size) except -1:
    for a in arrays:
        if a is None:
            continue
        if not isinstance(a, cnp.ndarray) or cnp.PyArray_TYPE(a) != t or \
                not cnp.PyArray_IS_C_CONTIGUOUS(a) or cnp.PyArray_SIZE(a) != size:
            raise ValueError(f"{name}: expected C-contiguous arrays of one dtype and "
                             f"{size} elements")
    return 0


cdef int _check_dbl(str name, arrays, Py_ssize_t size) except -1:
    for a in arrays:
        if a is None:
            continue
        if not isinstance(a, cnp.ndarray) or cnp.PyArray_TYPE(a) != cnp.NPY_DOUBLE or \
                not cnp.PyArray_IS_C_CONTIGUOUS(a) or cnp.PyArray_SIZE(a) != size or \
                not cnp.PyArray_ISWRITEABLE(a):
            raise ValueError(f"{name}: expected writable C-contiguous float64 arrays of "
                             f"{size} elements")
    return 0


cdef inline void* _ptr(a):
    return NULL if a is None else cnp.PyArray_DATA(a)


def bn_stats(cnp.ndarray x not None, cnp.ndarray mean not None, cnp.ndarray var not None,
             int n_threads):
    """mean[c] := mean of x[:, c, :],  var[c] := the biased variance (>= 0).

    x : C-contiguous float32/float64 (N, C, K), N*K >= 1 (IN)
    mean, var : float64 (C,) (OUT)
    """
    cdef int t = cnp.PyArray_TYPE(x)
    if (t != cnp.NPY_FLOAT and t != cnp.NPY_DOUBLE) or cnp.PyArray_NDIM(x) != 3:
        raise ValueError("bn_stats: x must be a float32/float64 (N, C, K) array")
    _check("bn_stats", (x,), t, cnp.PyArray_SIZE(x))
    cdef Py_ssize_t N = x.shape[0], C = x.shape[1], K = x.shape[2], c
    _check_dbl("bn_stats", (mean, var), C)
    if N * K == 0:
        raise ValueError("bn_stats: no elements per channel")
    cdef double* m = <double*>cnp.PyArray_DATA(mean)
    cdef double* v = <double*>cnp.PyArray_DATA(var)
    cdef double M = <double>(N * K), mu, sh
    with nogil:
        if t == cnp.NPY_FLOAT:
            _ch_sums_par(<const float*>cnp.PyArray_DATA(x), <const float*>NULL, NULL,
                         m, v, N, C, K, n_threads)
        else:
            _ch_sums_par(<const double*>cnp.PyArray_DATA(x), <const double*>NULL, NULL,
                         m, v, N, C, K, n_threads)
    for c in range(C):
        sh = (<float*>cnp.PyArray_DATA(x))[c * K] if t == cnp.NPY_FLOAT else \
            (<double*>cnp.PyArray_DATA(x))[c * K]
        mu = m[c] / M
        v[c] = max(v[c] / M - mu * mu, 0.0)
        m[c] = sh + mu


def ch_affine(cnp.ndarray x not None, g, cnp.ndarray y not None, cnp.ndarray sa not None,
              sb, cnp.ndarray sc not None, int n_threads):
    """y[n, c, k] := x sa[c] + sc[c] (g None), or g sa[c] + x sb[c] + sc[c].

    x, g, y : C-contiguous float32/float64 (N, C, K) of one dtype (IN, IN, OUT)
    sa, sb, sc : float64 (C,) per-channel coefficients (IN)
    """
    cdef int t = cnp.PyArray_TYPE(x)
    if (t != cnp.NPY_FLOAT and t != cnp.NPY_DOUBLE) or cnp.PyArray_NDIM(x) != 3:
        raise ValueError("ch_affine: x must be a float32/float64 (N, C, K) array")
    _check("ch_affine", (x, g, y), t, cnp.PyArray_SIZE(x))
    if not cnp.PyArray_ISWRITEABLE(y):
        raise ValueError("ch_affine: y is read-only")
    cdef Py_ssize_t N = x.shape[0], C = x.shape[1], K = x.shape[2]
    for a in (sa, sb, sc):
        if a is not None and (cnp.PyArray_TYPE(a) != cnp.NPY_DOUBLE or
                              not cnp.PyArray_IS_C_CONTIGUOUS(a) or
                              cnp.PyArray_SIZE(a) != C):
            raise ValueError("ch_affine: coefficients must be C-contiguous float64 (C,)")
    if g is not None and sb is None:
        raise ValueError("ch_affine: g needs sb")
    if N * C * K == 0:
        return
    cdef const double* pa = <const double*>cnp.PyArray_DATA(sa)
    cdef const double* pb = <const double*>_ptr(sb)
    cdef const double* pc = <const double*>cnp.PyArray_DATA(sc)
    cdef void* pg = _ptr(g)
    with nogil:
        if t == cnp.NPY_FLOAT:
            _ch_affine(<const float*>cnp.PyArray_DATA(x), <const float*>pg,
                       <float*>cnp.PyArray_DATA(y), pa, pb, pc, N, C, K, n_threads)
        else:
            _ch_affine(<const double*>cnp.PyArray_DATA(x), <const double*>pg,
                       <double*>cnp.PyArray_DATA(y), pa, pb, pc, N, C, K, n_threads)


def bn_grad_sums(cnp.ndarray g not None, cnp.ndarray x not None, cnp.ndarray mean not None,
                 cnp.ndarray sg not None, cnp.ndarray sgx not None, int n_threads):
    """sg[c] := sum of g[:, c, :],  sgx[c] := sum of g (x - mean[c]) over it.

    g, x : C-contiguous float32/float64 (N, C, K) of one dtype (IN)
    mean : float64 (C,) (IN);  sg, sgx : float64 (C,) (OUT)
    """
    cdef int t = cnp.PyArray_TYPE(x)
    if (t != cnp.NPY_FLOAT and t != cnp.NPY_DOUBLE) or cnp.PyArray_NDIM(x) != 3:
        raise ValueError("bn_grad_sums: x must be a float32/float64 (N, C, K) array")
    _check("bn_grad_sums", (g, x), t, cnp.PyArray_SIZE(x))
    cdef Py_ssize_t N = x.shape[0], C = x.shape[1], K = x.shape[2]
    _check_dbl("bn_grad_sums", (sg, sgx), C)
    if cnp.PyArray_TYPE(mean) != cnp.NPY_DOUBLE or cnp.PyArray_SIZE(mean) != C or \
            not cnp.PyArray_IS_C_CONTIGUOUS(mean):
        raise ValueError("bn_grad_sums: mean must be C-contiguous float64 (C,)")
    cdef const double* m = <const double*>cnp.PyArray_DATA(mean)
    cdef double* p1 = <double*>cnp.PyArray_DATA(sg)
    cdef double* p2 = <double*>cnp.PyArray_DATA(sgx)
    if N * K == 0:
        memset(p1, 0, C * sizeof(double))
        memset(p2, 0, C * sizeof(double))
        return
    with nogil:
        if t == cnp.NPY_FLOAT:
            _ch_sums_par(<const float*>cnp.PyArray_DATA(x), <const float*>cnp.PyArray_DATA(g),
                         m, p1, p2, N, C, K, n_threads)
        else:
            _ch_sums_par(<const double*>cnp.PyArray_DATA(x),
                         <const double*>cnp.PyArray_DATA(g), m, p1, p2, N, C, K, n_threads)


# ---------------------------------------------------------------- row mode
cdef void _row_fwd(const floating* x, const floating* w, const floating* b, floating* y,
                   double* mean, double* rstd, Py_ssize_t r, Py_ssize_t L, Py_ssize_t G,
                   Py_ssize_t Cg, Py_ssize_t K, double eps) noexcept nogil:
    cdef const floating* xr = x + r * L
    cdef floating* yr = y + r * L
    cdef double s = 0, q = 0, d, x0 = xr[0], mu, var, rs
    cdef Py_ssize_t j, cg, k, base = (r % G) * Cg
    cdef double sc, sh
    _sums_x(xr, L, x0, &s, &q)
    mu = s / L
    var = q / L - mu * mu
    if var < 0:
        var = 0
    rs = 1.0 / sqrt(var + eps)
    mean[r] = x0 + mu
    rstd[r] = rs
    if y == NULL:
        return
    mu = x0 + mu
    # in double: x - mean cancels for a tight group, and float32 would lose digits
    if K == 1:
        if w == NULL:
            for j in range(L):
                yr[j] = <floating>((xr[j] - mu) * rs)
        else:
            for j in range(L):
                yr[j] = <floating>((xr[j] - mu) * (rs * w[base + j]) + b[base + j])
        return
    for cg in range(Cg):
        sc = rs if w == NULL else rs * w[base + cg]
        sh = 0.0 if w == NULL else b[base + cg]
        for k in range(K):
            yr[cg * K + k] = <floating>((xr[cg * K + k] - mu) * sc + sh)


def row_norm_fwd(cnp.ndarray x not None, w, b, cnp.ndarray y not None,
                 cnp.ndarray mean not None, cnp.ndarray rstd not None, Py_ssize_t G,
                 Py_ssize_t Cg, Py_ssize_t K, double eps, int n_threads):
    """Per row r of x (R, L):  mean[r], rstd[r] = 1/sqrt(var + eps) (biased var), and
    y := (x - mean) rstd w[c] + b[c], c = (r % G) Cg + j // K (no affine: w None).

    x, y : C-contiguous float32/float64 (R, L) of one dtype, L = Cg K >= 1 (IN, OUT)
    w, b : None or C-contiguous (G Cg,) of x's dtype (IN)
    mean, rstd : float64 (R,) (OUT)
    """
    cdef int t = cnp.PyArray_TYPE(x)
    if (t != cnp.NPY_FLOAT and t != cnp.NPY_DOUBLE) or cnp.PyArray_NDIM(x) != 2:
        raise ValueError("row_norm_fwd: x must be a float32/float64 (R, L) array")
    cdef Py_ssize_t R = x.shape[0], L = x.shape[1], r
    if L != Cg * K or L < 1 or G < 1 or (w is None) != (b is None):
        raise ValueError("row_norm_fwd: need L == Cg*K >= 1, G >= 1, w and b together")
    _check("row_norm_fwd", (x, y), t, R * L)
    _check("row_norm_fwd", (w, b), t, G * Cg)
    _check_dbl("row_norm_fwd", (mean, rstd), R)
    if not cnp.PyArray_ISWRITEABLE(y):
        raise ValueError("row_norm_fwd: y is read-only")
    cdef int nt = _threads_for(R * L, GRAIN, n_threads)
    if nt > R:
        nt = <int>R
    cdef double* pm = <double*>cnp.PyArray_DATA(mean)
    cdef double* pr = <double*>cnp.PyArray_DATA(rstd)
    cdef void* px = cnp.PyArray_DATA(x)
    cdef void* py = cnp.PyArray_DATA(y)
    cdef void* pw = _ptr(w)
    cdef void* pb = _ptr(b)
    with nogil:
        if t == cnp.NPY_FLOAT:
            for r in prange(R, schedule='static', num_threads=nt):
                _row_fwd(<const float*>px, <const float*>pw, <const float*>pb,
                         <float*>py, pm, pr, r, L, G, Cg, K, eps)
        else:
            for r in prange(R, schedule='static', num_threads=nt):
                _row_fwd(<const double*>px, <const double*>pw, <const double*>pb,
                         <double*>py, pm, pr, r, L, G, Cg, K, eps)


cdef void _row_bwd(const floating* g, const floating* x, const floating* w,
                   const double* mean, const double* rstd, floating* gx, double* acc,
                   Py_ssize_t r, Py_ssize_t L, Py_ssize_t G, Py_ssize_t Cg,
                   Py_ssize_t K) noexcept nogil:
    """Row r: gx = rstd (u - su/L - (x - m) rstd^2 sux/L), u = g w[c]; acc (2 G Cg
    doubles, or NULL) += per channel sum g (x - m) rstd  and  sum g."""
    cdef const floating* xr = x + r * L
    cdef const floating* gr = g + r * L
    cdef floating* o
    cdef double m = mean[r], rs = rstd[r], su = 0, sux = 0, u, d, gw, gb
    cdef Py_ssize_t j, cg, k, base = (r % G) * Cg, C2 = G * Cg
    cdef double a, bb, cc
    if K == 1:                  # layer_norm: the weight per element
        _sums_gx(gr, xr, <const floating*>NULL if w == NULL else w + base, L, m, &su, &sux)
        if acc != NULL:
            for j in range(L):
                acc[base + j] += gr[j] * (<double>xr[j] - m) * rs
                acc[C2 + base + j] += gr[j]
    else:                       # group_norm: the weight per channel of K elements
        for cg in range(Cg):
            gb = 0
            gw = 0
            _sums_gx(gr + cg * K, xr + cg * K, <const floating*>NULL, K, m, &gb, &gw)
            u = 1.0 if w == NULL else w[base + cg]
            su += u * gb
            sux += u * gw
            if acc != NULL:
                acc[base + cg] += gw * rs
                acc[C2 + base + cg] += gb
    if gx == NULL:
        return
    o = gx + r * L
    # gx = a u + bb (x - m) + cc, in double
    bb = -rs * rs * rs * sux / L
    cc = -rs * su / L
    a = rs
    if w == NULL:
        for j in range(L):
            o[j] = <floating>(a * gr[j] + bb * (xr[j] - m) + cc)
    elif K == 1:
        for j in range(L):
            o[j] = <floating>(a * gr[j] * w[base + j] + bb * (xr[j] - m) + cc)
    else:
        for cg in range(Cg):
            for k in range(K):
                j = cg * K + k
                o[j] = <floating>(a * gr[j] * w[base + cg] + bb * (xr[j] - m) + cc)


def row_norm_bwd(cnp.ndarray g not None, cnp.ndarray x not None, w,
                 cnp.ndarray mean not None, cnp.ndarray rstd not None, gx, gwb,
                 Py_ssize_t G, Py_ssize_t Cg, Py_ssize_t K, int n_threads):
    """The fused backward of row_norm_fwd: gx := rstd (u - mean(u) - xhat mean(u xhat))
    per row with u = g w[c] (gx None: skipped), and gwb[0, c] := sum g xhat,
    gwb[1, c] := sum g over the elements of channel c (gwb None: skipped).

    g, x, gx : C-contiguous float32/float64 (R, L) (IN, IN, OUT)
    w : None or (G Cg,) of x's dtype (IN);  mean, rstd : float64 (R,) (IN)
    gwb : None or float64 (2, G Cg) (OUT)
    """
    cdef int t = cnp.PyArray_TYPE(x)
    if (t != cnp.NPY_FLOAT and t != cnp.NPY_DOUBLE) or cnp.PyArray_NDIM(x) != 2:
        raise ValueError("row_norm_bwd: x must be a float32/float64 (R, L) array")
    cdef Py_ssize_t R = x.shape[0], L = x.shape[1], C2 = G * Cg, r, i, tid
    if L != Cg * K or L < 1 or G < 1:
        raise ValueError("row_norm_bwd: need L == Cg*K >= 1, G >= 1")
    _check("row_norm_bwd", (g, x, gx), t, R * L)
    _check("row_norm_bwd", (w,), t, C2)
    if gx is not None and not cnp.PyArray_ISWRITEABLE(gx):
        raise ValueError("row_norm_bwd: gx is read-only")
    for a in (mean, rstd):
        if cnp.PyArray_TYPE(a) != cnp.NPY_DOUBLE or cnp.PyArray_SIZE(a) != R or \
                not cnp.PyArray_IS_C_CONTIGUOUS(a):
            raise ValueError("row_norm_bwd: mean/rstd must be C-contiguous float64 (R,)")
    _check_dbl("row_norm_bwd", (gwb,), 2 * C2)
    cdef int nt = _threads_for(R * L, GRAIN, n_threads)
    if nt > R:
        nt = <int>R
    cdef double* acc = NULL
    cdef double* out = <double*>_ptr(gwb)
    if out != NULL:
        acc = <double*>malloc(nt * 2 * C2 * sizeof(double))
        if acc == NULL:
            raise MemoryError()
        memset(acc, 0, nt * 2 * C2 * sizeof(double))
    cdef const double* pm = <const double*>cnp.PyArray_DATA(mean)
    cdef const double* pr = <const double*>cnp.PyArray_DATA(rstd)
    cdef void* pg = cnp.PyArray_DATA(g)
    cdef void* px = cnp.PyArray_DATA(x)
    cdef void* pw = _ptr(w)
    cdef void* po = _ptr(gx)
    cdef int u
    try:
        with nogil:
            if t == cnp.NPY_FLOAT:
                for r in prange(R, schedule='static', num_threads=nt):
                    tid = omp_get_thread_num()
                    _row_bwd(<const float*>pg, <const float*>px, <const float*>pw,
                             pm, pr, <float*>po,
                             NULL if acc == NULL else acc + tid * 2 * C2,
                             r, L, G, Cg, K)
            else:
                for r in prange(R, schedule='static', num_threads=nt):
                    tid = omp_get_thread_num()
                    _row_bwd(<const double*>pg, <const double*>px, <const double*>pw,
                             pm, pr, <double*>po,
                             NULL if acc == NULL else acc + tid * 2 * C2,
                             r, L, G, Cg, K)
        if out != NULL:
            memset(out, 0, 2 * C2 * sizeof(double))
            for u in range(nt):
                for i in range(2 * C2):
                    out[i] += acc[u * 2 * C2 + i]
    finally:
        free(acc)
