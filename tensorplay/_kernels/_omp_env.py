"""Make idle OpenMP workers sleep instead of spin, before the OpenMP runtime starts.

Why: on a machine with few cores, GNU OpenMP's default is to let a worker spin for
a while (GOMP_SPINCOUNT, 300,000 iterations) after each parallel region.  Spinning
workers take a core from whatever runs next -- BLAS threads, another process, the
next region's own workers once the OS has pushed them back in its queue -- and on
the 2-core development machine with one busy process beside it, a step of a
4096-row MLP took 46 ms at the default against 15.5 ms with passive waiting
(PyTorch 2.13: 26-60 ms).  Both libgomp and LLVM's libomp read OMP_WAIT_POLICY
once, when they are loaded, and offer no call to change it afterwards.

So, before the first kernel module (and with it the OpenMP runtime) is loaded,
``set_passive_wait()`` puts ``OMP_WAIT_POLICY=PASSIVE`` in the environment, and
``restore()`` takes it out again once the runtime has read it, so that child
processes and OpenMP runtimes loaded later (PyTorch and scikit-learn bundle their
own copies) see the environment the user had.  It does nothing when the user set
OMP_WAIT_POLICY or GOMP_SPINCOUNT (their choice wins) or when the OpenMP runtime is
already loaded (another library started it first: the policy is then whatever that
runtime read).  ``STATUS`` records which case happened, for show_config().
"""
import os

STATUS = "not set"
_ADDED = False


def _runtime_loaded():
    """True when the OpenMP runtime the kernels link (libgomp.so.1 or libomp, by
    soname) is already mapped into the process.  Wheels that bundle a renamed copy
    (PyTorch's libgomp-<hash>.so.1) load a separate runtime and do not count.
    Linux only; elsewhere assume it is not loaded yet."""
    try:
        with open("/proc/self/maps") as f:
            names = {os.path.basename(line.split()[-1]) for line in f if "/" in line}
    except OSError:
        return False
    return any(n.startswith(("libgomp.so", "libomp.so", "libomp.dylib", "libiomp5"))
               for n in names)


def set_passive_wait():
    global STATUS, _ADDED
    env = os.environ
    if "OMP_WAIT_POLICY" in env or "GOMP_SPINCOUNT" in env:
        STATUS = "left to the environment (OMP_WAIT_POLICY/GOMP_SPINCOUNT is set)"
    elif _runtime_loaded():
        STATUS = "unchanged (the OpenMP runtime was loaded before tensorplay)"
    else:
        env["OMP_WAIT_POLICY"] = "PASSIVE"
        _ADDED = True
        STATUS = "passive (set by tensorplay)"


def restore():
    global _ADDED
    if _ADDED:
        os.environ.pop("OMP_WAIT_POLICY", None)
        _ADDED = False
