# Design:
# Fused recurrent cells (tensorplay/_ops/rnn.py): the gate nonlinearities and the
# state update of one LSTM or GRU step in one pass over the (R, H) rows, forward
# and backward, instead of about a dozen elementwise ops each way.
# a) Point math is _math.pxd's (_sigmoid_fwd, _tanh_fwd), the same functions the
#    unary ops use, and the arithmetic is done in the order the op-by-op reference
#    does it (tensorplay/nn/modules/_recurrence.py, fused=False), so the fused step
#    gives the reference's values bit for bit.
# b) The forward also writes the activations it computed (the "saved" parts): the
#    backward is then plain arithmetic (no exp/tanh), and it is a polynomial in the
#    forward's outputs, which keeps the higher-order rules simple (see rnn.py).
#       LSTM  gates = gx + gh = [a_i, a_f, a_g, a_o] (R, 4H), c (R, H):
#             i = s(a_i), f = s(a_f), g = tanh(a_g), o = s(a_o)
#             c' = f c + i g,  t = tanh(c'),  h' = o t
#             out (7, R, H) = [h', c', i, f, g, o, t]
#       GRU   gx = [x_r, x_z, x_n], gh = [h_r, h_z, h_n] (R, 3H), h (R, H):
#             r = s(x_r + h_r), z = s(x_z + h_z), n = tanh(x_n + r h_n)
#             h' = n + z (h - n)
#             out (4, R, H) = [h', r, z, n]
# c) The backward takes the cotangent of every part of out (the saved parts get
#    one only under higher-order differentiation) and writes the gradients of the
#    inputs; formulas beside the loops.
# d) Entry points: caller-allocated C-contiguous arrays (# IN / # OUT), prange over
#    rows with one thread per GRAIN elements (the transcendental grain).
# Directives are set in setup.py.
from cython cimport floating
from cython.parallel cimport prange

from ._math cimport _sigmoid_fwd, _tanh_fwd
from ._openmp_helpers cimport _threads_for
from ._elementwise cimport GRAIN_TRANSC


cdef inline void _lstm_row(const floating* gx, const floating* gh, const floating* c,
                           floating* h1, floating* c1, floating* i, floating* f,
                           floating* g, floating* o, floating* t,
                           Py_ssize_t H) noexcept nogil:
    """One row in short loops of few arrays each: a single loop over all twelve
    would need more runtime alias checks than GCC versions a loop for, and would
    stay scalar (a libm call per element)."""
    cdef Py_ssize_t j
    for j in range(H):
        i[j] = _sigmoid_fwd(gx[j] + gh[j])
    for j in range(H):
        f[j] = _sigmoid_fwd(gx[H + j] + gh[H + j])
    for j in range(H):
        g[j] = _tanh_fwd(gx[2 * H + j] + gh[2 * H + j])
    for j in range(H):
        o[j] = _sigmoid_fwd(gx[3 * H + j] + gh[3 * H + j])
    for j in range(H):
        c1[j] = f[j] * c[j] + i[j] * g[j]
    for j in range(H):
        t[j] = _tanh_fwd(c1[j])
    for j in range(H):
        h1[j] = o[j] * t[j]


def lstm_cell_fwd(const floating[:, ::1] gx,     # IN  (R, 4H)
                  const floating[:, ::1] gh,     # IN  (R, 4H)
                  const floating[:, ::1] c,      # IN  (R, H)
                  floating[:, :, ::1] out,       # OUT (7, R, H)
                  int n_threads):
    """out := [h', c', i, f, g, o, tanh c'] of one LSTM step (see Design b)."""
    cdef Py_ssize_t R = c.shape[0], H = c.shape[1], r
    cdef int nt = _threads_for(R * H, GRAIN_TRANSC // 4, n_threads)
    if R == 0 or H == 0:
        return
    for r in prange(R, nogil=True, schedule="static", num_threads=nt):
        _lstm_row(&gx[r, 0], &gh[r, 0], &c[r, 0], &out[0, r, 0], &out[1, r, 0],
                  &out[2, r, 0], &out[3, r, 0], &out[4, r, 0], &out[5, r, 0],
                  &out[6, r, 0], H)


def lstm_cell_bwd(const floating[:, :, ::1] gout,   # IN  (7, R, H) cotangent of out
                  const floating[:, :, ::1] out,    # IN  (7, R, H)
                  const floating[:, ::1] c,         # IN  (R, H)
                  floating[:, ::1] dgates,          # OUT (R, 4H)
                  floating[:, ::1] dc,              # OUT (R, H)
                  int n_threads):
    """The gradients of one LSTM step's gates and c from the cotangent of out."""
    cdef Py_ssize_t R = c.shape[0], H = c.shape[1], r, j
    cdef int nt = _threads_for(R * H, GRAIN_TRANSC // 4, n_threads)
    cdef floating i, f, g, o, t, ob, tb, cb, one = 1
    for r in prange(R, nogil=True, schedule="static", num_threads=nt):
        for j in range(H):
            i = out[2, r, j]
            f = out[3, r, j]
            g = out[4, r, j]
            o = out[5, r, j]
            t = out[6, r, j]
            ob = gout[5, r, j] + gout[0, r, j] * t          # o-bar  (h' = o t)
            tb = gout[6, r, j] + gout[0, r, j] * o          # t-bar
            cb = gout[1, r, j] + tb * (one - t * t)         # c'-bar (t = tanh c')
            # c' = f c + i g;  i, f, o sigmoids (s' = s (1 - s)), g a tanh
            dgates[r, j] = (gout[2, r, j] + cb * g) * (i * (one - i))
            dgates[r, H + j] = (gout[3, r, j] + cb * c[r, j]) * (f * (one - f))
            dgates[r, 2 * H + j] = (gout[4, r, j] + cb * i) * (one - g * g)
            dgates[r, 3 * H + j] = ob * (o * (one - o))
            dc[r, j] = cb * f


cdef inline void _gru_row(const floating* gx, const floating* gh, const floating* h,
                          floating* h1, floating* r, floating* z, floating* n,
                          Py_ssize_t H) noexcept nogil:
    """One row in short loops (see _lstm_row)."""
    cdef Py_ssize_t j
    for j in range(H):
        r[j] = _sigmoid_fwd(gx[j] + gh[j])
    for j in range(H):
        z[j] = _sigmoid_fwd(gx[H + j] + gh[H + j])
    for j in range(H):
        n[j] = _tanh_fwd(gx[2 * H + j] + r[j] * gh[2 * H + j])
    for j in range(H):
        h1[j] = n[j] + z[j] * (h[j] - n[j])


def gru_cell_fwd(const floating[:, ::1] gx,     # IN  (R, 3H)
                 const floating[:, ::1] gh,     # IN  (R, 3H)
                 const floating[:, ::1] h,      # IN  (R, H)
                 floating[:, :, ::1] out,       # OUT (4, R, H)
                 int n_threads):
    """out := [h', r, z, n] of one GRU step (see Design b)."""
    cdef Py_ssize_t R = h.shape[0], H = h.shape[1], r_
    cdef int nt = _threads_for(R * H, GRAIN_TRANSC // 4, n_threads)
    if R == 0 or H == 0:
        return
    for r_ in prange(R, nogil=True, schedule="static", num_threads=nt):
        _gru_row(&gx[r_, 0], &gh[r_, 0], &h[r_, 0], &out[0, r_, 0], &out[1, r_, 0],
                 &out[2, r_, 0], &out[3, r_, 0], H)


def gru_cell_bwd(const floating[:, :, ::1] gout,   # IN  (4, R, H) cotangent of out
                 const floating[:, :, ::1] out,    # IN  (4, R, H)
                 const floating[:, ::1] gh,        # IN  (R, 3H)
                 const floating[:, ::1] h,         # IN  (R, H)
                 floating[:, ::1] dgx,             # OUT (R, 3H)
                 floating[:, ::1] dgh,             # OUT (R, 3H)
                 floating[:, ::1] dh,              # OUT (R, H)
                 int n_threads):
    """The gradients of one GRU step's gx, gh and h from the cotangent of out."""
    cdef Py_ssize_t R = h.shape[0], H = h.shape[1], r_, j
    cdef int nt = _threads_for(R * H, GRAIN_TRANSC // 4, n_threads)
    cdef floating r, z, n, hb, zb, nb, an, rb, one = 1
    for r_ in prange(R, nogil=True, schedule="static", num_threads=nt):
        for j in range(H):
            r = out[1, r_, j]
            z = out[2, r_, j]
            n = out[3, r_, j]
            hb = gout[0, r_, j]
            zb = (gout[2, r_, j] + hb * (h[r_, j] - n)) * (z * (one - z))
            nb = gout[3, r_, j] + hb * (one - z)            # h' = n + z (h - n)
            an = nb * (one - n * n)                         # n = tanh(x_n + r h_n)
            rb = (gout[1, r_, j] + an * gh[r_, 2 * H + j]) * (r * (one - r))
            dgx[r_, j] = rb
            dgh[r_, j] = rb
            dgx[r_, H + j] = zb
            dgh[r_, H + j] = zb
            dgx[r_, 2 * H + j] = an
            dgh[r_, 2 * H + j] = an * r
            dh[r_, j] = hb * z
