"""Compiled hot-path modules, used only while they match their ``.py`` source.

Why: on 1-element tensors an op's cost is all Python (dispatch, promotion, the
graph node, the engine).  setup.py therefore compiles a few plain-Python modules
-- the Tensor class, the registry, the engine, the elementwise ops -- with Cython
(pure-Python mode: the very same ``.py`` files, no annotations needed), and the
extension module sits beside its source.  Python's import prefers the extension,
so after an edit to the ``.py`` of an editable install the old build would run.

How: setup.py records a checksum of each source it compiled
(``tensorplay/_compiled_sources.py``, generated).  ``install()`` -- the first
thing ``import tensorplay`` does -- compares them with the files on disk and,
for every module whose source changed, makes import load the ``.py`` instead,
with one warning saying to rebuild (``pip install -e .``).  A compiled module
that cimports a changed one (its ``.pxd`` says ``from tensorplay.X cimport``)
is loaded from source as well: its C code was built against the old extension
type and cannot run with the source-loaded class.  With the
environment variable ``TENSORPLAY_PURE_PYTHON=1`` every compiled module is
loaded from source (that is how the test suite runs uncompiled).

``compiled_modules()`` lists the modules running compiled in this process.
"""
import os
import sys
import zlib

__all__ = ["install", "compiled_modules", "checksum"]

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_from_source = set()


def checksum(path):
    """The checksum setup.py records for a source file (CRC-32 and size)."""
    with open(path, "rb") as f:
        data = f.read()
    return f"{zlib.crc32(data):08x}-{len(data)}"


def _source_path(name):
    parts = name.split(".")[1:]           # drop the top-level "tensorplay"
    return os.path.join(_PKG_DIR, *parts) + ".py"


class _SourceFinder:
    """A meta-path finder that loads the listed modules from their ``.py`` files."""

    def __init__(self, names):
        self.names = frozenset(names)

    def find_spec(self, name, path=None, target=None):
        if name not in self.names:
            return None
        import importlib.util
        return importlib.util.spec_from_file_location(name, _source_path(name))


def install():
    """Route stale (or, with TENSORPLAY_PURE_PYTHON=1, all) compiled modules to source."""
    try:
        from tensorplay._compiled_sources import SOURCES
    except ImportError:                   # not built with compiled modules
        return
    pure = os.environ.get("TENSORPLAY_PURE_PYTHON", "0") not in ("", "0")
    stale = []
    for name, recorded in SOURCES.items():
        src = _source_path(name)
        if pure:
            _from_source.add(name)
        elif os.path.exists(src) and checksum(src) != recorded:
            _from_source.add(name)
            stale.append(src)
    if stale and not pure:
        _from_source.update(_dependents(_from_source, SOURCES))
    if _from_source:
        sys.meta_path.insert(0, _SourceFinder(_from_source))
    if stale:
        import warnings
        warnings.warn("tensorplay: these sources changed since they were compiled and run "
                      "uncompiled (slower) until you rebuild with `pip install -e .`: "
                      + ", ".join(os.path.relpath(s, os.path.dirname(_PKG_DIR))
                                  for s in stale), RuntimeWarning, stacklevel=3)


def _cimports(name):
    """The tensorplay modules ``name``'s ``.pxd`` cimports from."""
    pxd = _source_path(name)[:-3] + ".pxd"
    if not os.path.exists(pxd):
        return set()
    import re
    with open(pxd) as f:
        return set(re.findall(r"^\s*from\s+(tensorplay[\w.]*)\s+cimport", f.read(), re.M))


def _dependents(changed, names):
    """Every module of ``names`` that cimports, directly or not, one in ``changed``."""
    out = set(changed)
    grew = True
    while grew:
        grew = False
        for name in names:
            if name not in out and _cimports(name) & out:
                out.add(name)
                grew = True
    return out - set(changed)


def compiled_modules():
    """Names of the hot-path modules that run compiled in this process."""
    out = []
    for name, mod in list(sys.modules.items()):
        if name.startswith("tensorplay.") and getattr(mod, "__file__", "") and \
                not mod.__file__.endswith((".py", ".pyc")) and \
                "_kernels" not in name:
            out.append(name)
    return sorted(out)
