"""Build and run-time configuration: OpenMP threads and ``show_config``."""
import sys

import numpy as np

from tensorplay._kernels import _omp_env, _openmp_helpers

__all__ = ["set_num_threads", "get_num_threads", "show_config"]


class _Config:
    """Process-wide settings read by every kernel call."""
    __slots__ = ("num_threads", "threads_chosen")

    def __init__(self):
        self.num_threads = _default_threads()
        # True once the user called set_num_threads (read by distributed's
        # per-rank thread budget, which must not override the user's choice)
        self.threads_chosen = False


# An upper bound for set_num_threads and for the default taken from
# OMP_NUM_THREADS: libgomp aborts the process when thread creation fails (seen at
# 60000), and oversubscription beyond this only slows the kernels down.
MAX_THREADS = 1024


def _default_threads():
    """``omp_get_max_threads()`` (OMP_NUM_THREADS or the processor count), capped at
    MAX_THREADS with a warning naming the variable."""
    n = max(1, int(_openmp_helpers.omp_max_threads()))
    if n > MAX_THREADS:
        import warnings
        warnings.warn(f"tensorplay: OMP_NUM_THREADS asks for {n} threads; using "
                      f"{MAX_THREADS}, the most tensorplay allows (this machine has "
                      f"{_openmp_helpers.omp_num_procs()} processors)",
                      RuntimeWarning, stacklevel=2)
        n = MAX_THREADS
    return n


CONFIG = _Config()


def set_num_threads(n):
    """Set the maximum number of threads tensorplay uses: its OpenMP kernels and
    the BLAS behind ``matmul``, one budget.

    Matrix products run BLAS calls on tensorplay's own threads with the BLAS
    pinned to one thread per call, so the two never compete for cores (see
    ``tensorplay/_kernels/linalg.pyx``); a user's own numpy calls keep numpy's
    threads.  Kernels still run serially on arrays too small to pay for a second
    thread.

    Args:
        n (int): from 1 to 1024.  Ignored (with no error) when built without OpenMP.

    Raises:
        ValueError: when ``n`` is not an integer in [1, 1024].
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"set_num_threads(): expected a positive integer, got {n!r}")
    if n > MAX_THREADS:
        raise ValueError(f"set_num_threads(): {n} threads is more than the {MAX_THREADS} "
                         f"allowed (this machine has {_openmp_helpers.omp_num_procs()} "
                         f"processors; the OpenMP runtime fails or crashes when it cannot "
                         f"create that many threads)")
    CONFIG.num_threads = int(n)
    CONFIG.threads_chosen = True


def get_num_threads():
    """The maximum number of threads the kernels use (default: ``omp_get_max_threads()``,
    which honours ``OMP_NUM_THREADS``); 1 when built without OpenMP."""
    return CONFIG.num_threads if _openmp_helpers.openmp_enabled() else 1


def _hot_path_info():
    from tensorplay import _compiled
    mods = _compiled.compiled_modules()
    if mods:
        return f"compiled ({len(mods)} modules)"
    import os
    if os.environ.get("TENSORPLAY_PURE_PYTHON", "0") not in ("", "0"):
        return "plain Python (TENSORPLAY_PURE_PYTHON=1)"
    return "plain Python (built without compiled modules, or their sources changed)"


def show_config():
    """Print the version, the build (OpenMP on or off) and the thread settings."""
    from tensorplay import __version__, _blas
    lines = [
        f"tensorplay {__version__}",
        f"python {sys.version.split()[0]}, numpy {np.__version__}",
        f"OpenMP: {'enabled' if _openmp_helpers.openmp_enabled() else 'DISABLED (serial kernels)'}",
        f"threads: {get_num_threads()} (processors: {_openmp_helpers.omp_num_procs()})",
        f"OpenMP idle workers: {_omp_env.STATUS}",
        f"matmul: {_blas.info()}",
        f"Python hot path: {_hot_path_info()}",
    ]
    from tensorplay import _kernels
    info = _kernels._build_info
    if info is not None:
        if getattr(info, "CYTHON_DEBUG", False):
            lines.append("kernel bounds checks: ON (a TENSORPLAY_CYTHON_DEBUG=1 build; "
                         "slower, for testing)")
        lines.append(f"CPU target: {info.CPU_TARGET or 'none'} "
                     f"(TENSORPLAY_CPU_TARGET at build time)")
        flags = dict((v[0], v[3]) for v in _kernels.VARIANTS)
        names = [_kernels.BASELINE] + list(flags)
        lines.append(f"kernels: {_kernels.SELECTED} "
                     f"({_kernels.HOW}; this build has: {', '.join(names)})")
        # a dispatch build's baseline has no target flags; a variant adds its own
        lines.append("compile flags: "
                     + " ".join(list(info.COMPILE_ARGS) + flags.get(_kernels.SELECTED, [])))
    print("\n".join(lines))
