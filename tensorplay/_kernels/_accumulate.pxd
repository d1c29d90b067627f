# Contiguous accumulation loops shared by reduce.pyx (sum) and nn.pyx (log_softmax).
# LANES independent accumulators give the compiler independent chains to
# vectorise without reassociating one floating-point sum (no -ffast-math).
from cython cimport floating
from libc.math cimport INFINITY

cdef enum:
    LANES = 16


cdef inline floating _max_contig(const floating* x, Py_ssize_t n) noexcept nogil:
    """max(x[0:n]) ignoring nan, -inf for n == 0; LANES independent lanes."""
    cdef floating acc[LANES]
    cdef floating v
    cdef Py_ssize_t i, k, m = n - n % LANES
    for k in range(LANES):
        acc[k] = -INFINITY
    for i in range(0, m, 16):                   # 16 == LANES
        for k in range(LANES):
            v = x[i + k]
            acc[k] = v if v > acc[k] else acc[k]
    for i in range(m, n):
        v = x[i]
        acc[0] = v if v > acc[0] else acc[0]
    for k in range(1, LANES):
        acc[0] = acc[k] if acc[k] > acc[0] else acc[0]
    return acc[0]


cdef inline double _sum_contig(const floating* x, Py_ssize_t n) noexcept nogil:
    """sum(x[0:n]) in double with LANES independent accumulators."""
    cdef double acc[LANES]
    cdef Py_ssize_t i, k, m = n - n % LANES
    for k in range(LANES):
        acc[k] = 0
    for i in range(0, m, 16):                   # 16 == LANES
        for k in range(LANES):
            acc[k] += x[i + k]
    for i in range(m, n):
        acc[i - m] += x[i]
    k = LANES // 2
    while k >= 1:                      # pairwise combination of the lanes
        for i in range(k):
            acc[i] += acc[i + k]
        k //= 2
    return acc[0]
