"""Compiled kernels of tensorplay (Cython, float32/float64, OpenMP).

Private: the Python layer validates arguments and allocates outputs; see the
``# Design:`` block at the top of each ``.pyx`` / ``.pyx.tp`` file.

Importing this package loads the OpenMP runtime with passive waiting
(``_omp_env.py`` says why and when it does not).

Dispatch.  A portable build (``TENSORPLAY_CPU_TARGET=dispatch``, see setup.py)
holds every public kernel module (``unary``, ``binary``, ...) several times:
the baseline build here, and builds for newer instruction sets in sub-folders
(``_x86_64_v3/`` for AVX2, ``_x86_64_v4/`` for AVX-512), listed best first in
``_build_info.VARIANTS``.  At import the best variant this CPU supports (numpy's
own CPU feature detection decides) is put first on this package's ``__path__``,
so ``from tensorplay._kernels import unary`` loads it under the usual name;
helper modules (``_openmp_helpers``) exist once and come from here.  Nothing is
loaded twice and nothing costs anything per call.  Other builds (native, the
default, or one ``-march``) have no variants and nothing happens.

``TENSORPLAY_DISPATCH=<variant name>`` (``baseline``, ``x86-64-v3``,
``x86-64-v4``) forces a variant, for testing; forcing one the build does not
have, or one this CPU cannot run, raises ImportError rather than crashing on an
illegal instruction later.
"""
import os

from tensorplay._kernels import _omp_env

_omp_env.set_passive_wait()
try:
    from tensorplay._kernels import _openmp_helpers  # noqa: F401  (loads the runtime)
finally:
    _omp_env.restore()

try:
    from tensorplay._kernels import _build_info
except ImportError:                 # not built by setup.py (or an older one)
    _build_info = None

#: name of the build in this folder ("baseline" for dispatch builds, else the target)
BASELINE = getattr(_build_info, "BASELINE", "unknown")
#: ((name, sub-folder, numpy CPU feature, compile flags), ...), best first
VARIANTS = tuple(getattr(_build_info, "VARIANTS", ()))


def _cpu_supports(feature):
    """numpy's run-time CPU detection (which checks OS support for the wider
    registers too); False when this numpy cannot tell."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:
        return False
    if feature in __cpu_features__:
        return bool(__cpu_features__[feature])
    # numpy before 2.4 has no psABI level names: spell them out
    need = {"X86_V3": ("AVX", "AVX2", "FMA3", "F16C"),
            "X86_V4": ("AVX", "AVX2", "FMA3", "F16C", "AVX512F", "AVX512CD",
                       "AVX512VL", "AVX512BW", "AVX512DQ")}.get(feature)
    return need is not None and all(__cpu_features__.get(f, False) for f in need)


def _choose():
    """(name, sub-folder or None, how) of the variant to load."""
    forced = os.environ.get("TENSORPLAY_DISPATCH", "").strip()
    here = os.path.dirname(__file__)
    if forced and forced not in ("auto", BASELINE, "baseline"):
        for name, sub, feature, _ in VARIANTS:
            if name == forced:
                if not _cpu_supports(feature):
                    raise ImportError(f"TENSORPLAY_DISPATCH={forced}: this CPU lacks "
                                      f"{feature}, so the {name} kernels cannot run here")
                if not os.path.isdir(os.path.join(here, sub)):
                    raise ImportError(f"TENSORPLAY_DISPATCH={forced}: the build lists "
                                      f"{name} but {sub}/ is missing; reinstall tensorplay")
                return name, sub, "forced by TENSORPLAY_DISPATCH"
        have = ", ".join([BASELINE] + [v[0] for v in VARIANTS])
        raise ImportError(f"TENSORPLAY_DISPATCH={forced}: no such kernel variant in this "
                          f"build (it has: {have}; unset the variable to choose "
                          f"automatically)")
    if forced and forced != "auto":
        return BASELINE, None, "forced by TENSORPLAY_DISPATCH"
    for name, sub, feature, _ in VARIANTS:
        if _cpu_supports(feature) and os.path.isdir(os.path.join(here, sub)):
            return name, sub, f"best the CPU supports ({feature})"
    return BASELINE, None, ("no variant this CPU supports" if VARIANTS
                            else "the only one in this build")


SELECTED, _SUB, HOW = _choose()
if _SUB is not None:
    __path__.insert(0, os.path.join(os.path.dirname(__file__), _SUB))  # noqa: F821
