"""Find the BLAS numpy loaded and hand its GEMM to tensorplay's kernels.

tensorplay's matrix products run BLAS GEMM calls on tensorplay's own OpenMP
threads, with the BLAS pinned to one thread per call (``_kernels/linalg.pyx``
explains why: two thread pools on the same cores are a cliff).  That needs the
addresses of ``cblas_sgemm`` / ``cblas_dgemm`` and of OpenBLAS's thread setter,
which numpy does not export.  ``load()`` looks for them, once, in the OpenBLAS
library numpy's wheels bundle (``numpy.libs/`` on Linux and Windows,
``numpy/.dylibs/`` on macOS) and then in the shared objects this process has
mapped (Linux ``/proc/self/maps``: a distribution's numpy linked to the system
OpenBLAS).  Symbol spellings tried: scipy-openblas's ILP64 ``scipy_cblas_sgemm64_``,
plain ILP64 ``cblas_sgemm64_``, and LP64 ``cblas_sgemm``.

When none is found (numpy on MKL or Accelerate, say), ``load()`` returns False
and tensorplay falls back to ``numpy.matmul``, whose BLAS then keeps its own
threads; ``tensorplay.show_config()`` says which path is in use.
"""
import glob
import os

__all__ = ["load", "info"]

# (gemm prefix, thread-function prefix, suffix, ILP64)
_SPELLINGS = (
    ("scipy_cblas_", "scipy_openblas_", "64_", True),
    ("cblas_", "openblas_", "64_", True),
    ("cblas_", "openblas_", "", False),
)
_STATE = {"loaded": None, "path": None, "ilp64": None, "threads": False}


def _candidates():
    import numpy
    root = os.path.dirname(os.path.dirname(numpy.__file__))
    here = os.path.dirname(numpy.__file__)
    found = []
    for pattern in (os.path.join(root, "numpy.libs", "*openblas*"),
                    os.path.join(here, ".dylibs", "*openblas*"),
                    os.path.join(here, ".libs", "*openblas*")):
        found += sorted(glob.glob(pattern))
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.rsplit(None, 1)[-1] if "/" in line else ""
                if "blas" in os.path.basename(path) and path not in found:
                    found.append(path)
    except OSError:
        pass
    return found


def _address(lib, name):
    import ctypes
    try:
        return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value or 0
    except AttributeError:
        return 0


def load():
    """Install numpy's BLAS GEMM in the kernels (once).  True on success."""
    if _STATE["loaded"] is not None:
        return _STATE["loaded"]
    _STATE["loaded"] = False
    if os.environ.get("TENSORPLAY_BLAS", "") == "numpy":     # testing the fallback
        return False
    import ctypes
    from tensorplay._kernels import linalg
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for gemm, thr, suffix, ilp64 in _SPELLINGS:
            s = _address(lib, f"{gemm}sgemm{suffix}")
            d = _address(lib, f"{gemm}dgemm{suffix}")
            if not (s and d):
                continue
            set_t = _address(lib, f"{thr}set_num_threads{suffix}")
            get_t = _address(lib, f"{thr}get_num_threads{suffix}")
            if not (set_t and get_t):
                set_t = get_t = 0
            linalg.set_blas(s, d, set_t, get_t, ilp64)
            _STATE.update(loaded=True, path=path, ilp64=ilp64, threads=bool(set_t))
            return True
    return False


def info():
    """One line for show_config(): which GEMM path matmul uses."""
    load()
    if not _STATE["loaded"]:
        why = ("forced by TENSORPLAY_BLAS=numpy"
               if os.environ.get("TENSORPLAY_BLAS", "") == "numpy"
               else "no cblas/OpenBLAS symbols found")
        return f"numpy.matmul ({why}; the BLAS keeps its own threads)"
    pinned = "pinned to 1 thread per call" if _STATE["threads"] else "thread count unknown"
    return (f"{os.path.basename(_STATE['path'])} "
            f"({'ILP64' if _STATE['ilp64'] else 'LP64'}), on tensorplay's threads, "
            f"BLAS {pinned}")
