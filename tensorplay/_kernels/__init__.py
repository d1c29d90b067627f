"""Compiled kernels of tensorplay (Cython, float32/float64, OpenMP).

Private: the Python layer validates arguments and allocates outputs; see the
``# Design:`` block at the top of each ``.pyx`` / ``.pyx.tp`` file.

Importing this package loads the OpenMP runtime with passive waiting
(``_omp_env.py`` says why and when it does not).
"""
from tensorplay._kernels import _omp_env

_omp_env.set_passive_wait()
try:
    from tensorplay._kernels import _openmp_helpers  # noqa: F401  (loads the runtime)
finally:
    _omp_env.restore()
