# Design:
# Fused recurrent cells (tensorplay/_ops/rnn.py): the gate nonlinearities and the
# state update of one LSTM or GRU step in one pass over the (R, H) rows, forward
# and backward, instead of about a dozen elementwise ops each way.
# a) Point math is _math.pxd's (_sigmoid_fwd, _tanh_fwd), the same functions the
#    unary ops use, and the arithmetic is done in the order the op-by-op reference
#    does it (tensorplay/nn/modules/_recurrence.py, fused=False), so the fused step
#    gives the reference's values bit for bit.
#       LSTM  gates = gx + gh = [a_i, a_f, a_g, a_o] (R, 4H), c (R, H):
#             i = s(a_i), f = s(a_f), g = tanh(a_g), o = s(a_o)
#             c' = f c + i g,  t = tanh(c'),  h' = o t;   out (2, R, H) = [h', c']
#       GRU   gx = [x_r, x_z, x_n], gh = [h_r, h_z, h_n] (R, 3H), h (R, H):
#             r = s(x_r + h_r), z = s(x_z + h_z), n = tanh(x_n + r h_n)
#             h' = n + z (h - n);                          out (R, H) = h'
# b) The output holds only the states: the cotangent the backward receives is
#    then no wider than they are (each state's slice of a wider output got a
#    zero cotangent of the whole output).  The backward recomputes the
#    activations (cheap next to the matmuls), writing them first into the rows of
#    its own gradient output and then turning them into the gradients in place.
# c) Each row runs as short loops of a few arrays: one loop over a dozen arrays
#    needs more runtime alias checks than GCC versions a loop for, and stays
#    scalar (a libm call per element).  The forward's activations go to a
#    caller-allocated scratch array.
# d) Entry points: caller-allocated C-contiguous arrays (# IN / # OUT), prange over
#    rows with one thread per GRAIN_TRANSC / 4 elements (an element costs about
#    five transcendentals).
# Directives are set in setup.py.
from cython cimport floating
from cython.parallel cimport prange

from ._math cimport _sigmoid_fwd, _tanh_fwd
from ._openmp_helpers cimport _threads_for
from ._elementwise cimport GRAIN_TRANSC


cdef inline void _lstm_acts(const floating* gx, const floating* gh, floating* a,
                            Py_ssize_t H) noexcept nogil:
    """a[0:4H] := [s(a_i), s(a_f), tanh(a_g), s(a_o)] of one row."""
    cdef Py_ssize_t j
    for j in range(H):
        a[j] = _sigmoid_fwd(gx[j] + gh[j])
    for j in range(H, 2 * H):
        a[j] = _sigmoid_fwd(gx[j] + gh[j])
    for j in range(2 * H, 3 * H):
        a[j] = _tanh_fwd(gx[j] + gh[j])
    for j in range(3 * H, 4 * H):
        a[j] = _sigmoid_fwd(gx[j] + gh[j])


cdef inline void _lstm_row(const floating* gx, const floating* gh, const floating* c,
                           floating* h1, floating* c1, floating* a,
                           Py_ssize_t H) noexcept nogil:
    """One row: activations into the scratch row a (4H), then c' and h'."""
    cdef Py_ssize_t j
    _lstm_acts(gx, gh, a, H)
    for j in range(H):
        c1[j] = a[H + j] * c[j] + a[j] * a[2 * H + j]
    for j in range(H):
        h1[j] = _tanh_fwd(c1[j])
    for j in range(H):
        h1[j] = a[3 * H + j] * h1[j]


def lstm_cell_fwd(const floating[:, ::1] gx,     # IN  (R, 4H)
                  const floating[:, ::1] gh,     # IN  (R, 4H)
                  const floating[:, ::1] c,      # IN  (R, H)
                  floating[:, :, ::1] out,       # OUT (2, R, H)
                  floating[:, ::1] scratch,      # OUT (R, 4H) the activations
                  int n_threads):
    """out := [h', c'] of one LSTM step (see Design a)."""
    cdef Py_ssize_t R = c.shape[0], H = c.shape[1], r
    cdef int nt = _threads_for(R * H, GRAIN_TRANSC // 4, n_threads)
    if R == 0 or H == 0:
        return
    for r in prange(R, nogil=True, schedule="static", num_threads=nt):
        _lstm_row(&gx[r, 0], &gh[r, 0], &c[r, 0], &out[0, r, 0], &out[1, r, 0],
                  &scratch[r, 0], H)


cdef inline void _lstm_bwd_row(const floating* gh_, const floating* gc,
                               const floating* gx, const floating* gh,
                               const floating* c, const floating* c1,
                               floating* d, floating* dc, Py_ssize_t H) noexcept nogil:
    """d (4H) := the gates' gradient, dc (H) := c's, from the cotangents gh_ of h'
    and gc of c'."""
    cdef Py_ssize_t j
    cdef floating i, f, g, o, t, cb, one = 1
    _lstm_acts(gx, gh, d, H)
    for j in range(H):
        dc[j] = _tanh_fwd(c1[j])
    for j in range(H):
        i = d[j]
        f = d[H + j]
        g = d[2 * H + j]
        o = d[3 * H + j]
        t = dc[j]
        cb = gc[j] + gh_[j] * o * (one - t * t)         # c'-bar (h' = o tanh c')
        # c' = f c + i g;  i, f, o sigmoids (s' = s (1 - s)), g a tanh
        d[j] = cb * g * (i * (one - i))
        d[H + j] = cb * c[j] * (f * (one - f))
        d[2 * H + j] = cb * i * (one - g * g)
        d[3 * H + j] = gh_[j] * t * (o * (one - o))
        dc[j] = cb * f


def lstm_cell_bwd(const floating[:, :, ::1] gout,   # IN  (2, R, H) cotangent of out
                  const floating[:, ::1] gx,        # IN  (R, 4H)
                  const floating[:, ::1] gh,        # IN  (R, 4H)
                  const floating[:, ::1] c,         # IN  (R, H)
                  const floating[:, :, ::1] out,    # IN  (2, R, H)
                  floating[:, ::1] dgates,          # OUT (R, 4H)
                  floating[:, ::1] dc,              # OUT (R, H)
                  int n_threads):
    """The gradients of one LSTM step's gates and c from the cotangent of out."""
    cdef Py_ssize_t R = c.shape[0], H = c.shape[1], r
    cdef int nt = _threads_for(R * H, GRAIN_TRANSC // 4, n_threads)
    if R == 0 or H == 0:
        return
    for r in prange(R, nogil=True, schedule="static", num_threads=nt):
        _lstm_bwd_row(&gout[0, r, 0], &gout[1, r, 0], &gx[r, 0], &gh[r, 0], &c[r, 0],
                      &out[1, r, 0], &dgates[r, 0], &dc[r, 0], H)


cdef inline void _gru_acts(const floating* gx, const floating* gh, floating* a,
                           Py_ssize_t H) noexcept nogil:
    """a[0:3H] := [r, z, n] of one row."""
    cdef Py_ssize_t j
    for j in range(2 * H):
        a[j] = _sigmoid_fwd(gx[j] + gh[j])
    for j in range(H):
        a[2 * H + j] = _tanh_fwd(gx[2 * H + j] + a[j] * gh[2 * H + j])


def gru_cell_fwd(const floating[:, ::1] gx,     # IN  (R, 3H)
                 const floating[:, ::1] gh,     # IN  (R, 3H)
                 const floating[:, ::1] h,      # IN  (R, H)
                 floating[:, ::1] out,          # OUT (R, H)
                 floating[:, ::1] scratch,      # OUT (R, 3H) the activations
                 int n_threads):
    """out := h' of one GRU step (see Design a)."""
    cdef Py_ssize_t R = h.shape[0], H = h.shape[1], r_, j
    cdef int nt = _threads_for(R * H, GRAIN_TRANSC // 4, n_threads)
    cdef floating* a
    if R == 0 or H == 0:
        return
    for r_ in prange(R, nogil=True, schedule="static", num_threads=nt):
        a = &scratch[r_, 0]
        _gru_acts(&gx[r_, 0], &gh[r_, 0], a, H)
        for j in range(H):
            out[r_, j] = a[2 * H + j] + a[H + j] * (h[r_, j] - a[2 * H + j])


cdef inline void _gru_bwd_row(const floating* hb_, const floating* gx,
                              const floating* gh, const floating* h, floating* dx,
                              floating* dhh, floating* dh, Py_ssize_t H) noexcept nogil:
    """dx, dhh (3H), dh (H) from the cotangent hb_ of h'; the activations go
    through dx first."""
    cdef Py_ssize_t j
    cdef floating r, z, n, hb, zb, an, rb, one = 1
    _gru_acts(gx, gh, dx, H)
    for j in range(H):
        r = dx[j]
        z = dx[H + j]
        n = dx[2 * H + j]
        hb = hb_[j]
        zb = hb * (h[j] - n) * (z * (one - z))
        an = hb * (one - z) * (one - n * n)             # h' = n + z (h - n)
        rb = an * gh[2 * H + j] * (r * (one - r))        # n = tanh(x_n + r h_n)
        dx[j] = rb
        dhh[j] = rb
        dx[H + j] = zb
        dhh[H + j] = zb
        dx[2 * H + j] = an
        dhh[2 * H + j] = an * r
        dh[j] = hb * z


def gru_cell_bwd(const floating[:, ::1] gout,      # IN  (R, H) cotangent of h'
                 const floating[:, ::1] gx,        # IN  (R, 3H)
                 const floating[:, ::1] gh,        # IN  (R, 3H)
                 const floating[:, ::1] h,         # IN  (R, H)
                 floating[:, ::1] dgx,             # OUT (R, 3H)
                 floating[:, ::1] dgh,             # OUT (R, 3H)
                 floating[:, ::1] dh,              # OUT (R, H)
                 int n_threads):
    """The gradients of one GRU step's gx, gh and h from the cotangent of h'."""
    cdef Py_ssize_t R = h.shape[0], H = h.shape[1], r_
    cdef int nt = _threads_for(R * H, GRAIN_TRANSC // 4, n_threads)
    if R == 0 or H == 0:
        return
    for r_ in prange(R, nogil=True, schedule="static", num_threads=nt):
        _gru_bwd_row(&gout[r_, 0], &gx[r_, 0], &gh[r_, 0], &h[r_, 0], &dgx[r_, 0],
                     &dgh[r_, 0], &dh[r_, 0], H)
