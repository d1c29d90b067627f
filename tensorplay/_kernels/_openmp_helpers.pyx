# Design: three tiny queries about the OpenMP runtime the kernels were built with.
# The Python layer uses them for tensorplay.get_num_threads()/set_num_threads() and
# to warn at import when the build has no OpenMP (the kernels then run serially).
from ._openmp_helpers cimport (TENSORPLAY_OPENMP_ENABLED, omp_get_max_threads,
                               omp_get_num_procs)


def openmp_enabled():
    """True if the kernels were compiled with OpenMP (-fopenmp)."""
    return bool(TENSORPLAY_OPENMP_ENABLED)


def omp_max_threads():
    """omp_get_max_threads(): OMP_NUM_THREADS or the number of CPUs; 1 without OpenMP."""
    return omp_get_max_threads()


def omp_num_procs():
    """omp_get_num_procs(): processors available to the process; 1 without OpenMP."""
    return omp_get_num_procs()
