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
