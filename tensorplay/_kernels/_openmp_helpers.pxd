# OpenMP shim (after sklearn/utils/_openmp_helpers.pxd): cimport omp_* from here,
# never from `openmp`, so that a build without OpenMP still compiles and runs
# serially (omp_get_max_threads() == 1).

cdef extern from *:
    """
    #ifdef _OPENMP
        #include <omp.h>
        #define TENSORPLAY_OPENMP_ENABLED 1
    #else
        #define TENSORPLAY_OPENMP_ENABLED 0
        #define omp_get_max_threads() 1
        #define omp_get_num_procs() 1
        #define omp_get_thread_num() 0
    #endif
    """
    bint TENSORPLAY_OPENMP_ENABLED
    int omp_get_max_threads() noexcept nogil
    int omp_get_num_procs() noexcept nogil
    int omp_get_thread_num() noexcept nogil


cdef enum:
    # Elements per thread below which a thread is not worth starting: PyTorch's
    # at::internal::GRAIN_SIZE.  A parallel region costs ~1 us on an idle machine but
    # milliseconds on a loaded one (a worker queued behind another process), so
    # mid-size ops (the 256x128 hidden layer of an MLP, 32K elements) run serially.
    GRAIN = 32768


cdef inline int _threads_for(Py_ssize_t work, Py_ssize_t grain, int n_threads) noexcept nogil:
    """Threads to use for `work` elements: one per `grain` elements, at most
    n_threads, 1 below 2 * grain (at::parallel_for's rule, with whole grains)."""
    cdef Py_ssize_t k
    if n_threads <= 1 or work < 2 * grain:
        return 1
    k = work // grain
    return n_threads if k >= n_threads else <int>k
