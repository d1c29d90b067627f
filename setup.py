"""Build of tensorplay's compiled kernels (tensorplay/_kernels/*.pyx[.tp]).

Metadata lives in pyproject.toml; this file only describes the extensions.
Every tensorplay/_kernels/*.pyx and *.pyx.tp is picked up by globbing: a new
kernel file needs no edit here.

Steps:
  1. expand Tempita templates  tensorplay/_kernels/*.pyx.tp -> *.pyx  (generated
     files are git-ignored; only the templates are sources; a file is rewritten
     only when its text changes);
  2. cythonize every tensorplay/_kernels/*.pyx with one set of directives
     (boundscheck/wraparound/initializedcheck off, cdivision on; the environment
     variable TENSORPLAY_CYTHON_DEBUG=1 turns the checks back on) -- only when the
     source key changed: a hash of the .pyx, every .pxd/.pxi/.h beside it, the
     Cython and numpy versions and the directives, kept in the last line of the
     generated .c.  Cython's own check compares modification times, and pip's
     isolated build environment installs a fresh Cython (with fresh .pxd files)
     for every build, so it recompiled everything every time;
  3. compile with -O3 -fno-math-errno -g0 (never -ffast-math: it changes denormal
     handling for the whole process; -g0 drops the debug info that Python's
     CFLAGS ask for, 80% of each module's size) plus, each decided by a probe
     compile:
       * OpenMP (-fopenmp).  Without it the build still succeeds, the kernels run
         serially, and a warning banner is printed;
       * the CPU target, from TENSORPLAY_CPU_TARGET:
           native (default)  -march=native: fastest on the build machine, but the
                             binary may not run on an older CPU;
           dispatch          a portable build for wheels: every public kernel
                             module (name not starting with "_") is compiled
                             three times -- the compiler's default target
                             (x86-64, SSE2) into tensorplay/_kernels/, x86-64-v3
                             (AVX2, FMA) into _kernels/_x86_64_v3/ and
                             x86-64-v4 (AVX-512) into _kernels/_x86_64_v4/ -- and
                             tensorplay/_kernels/__init__.py puts the best one the
                             CPU supports first on the package's __path__ at
                             import.  Off x86-64 (arm64, ...) or with MSVC the
                             variants collapse to the default target;
           x86-64-v3, ...    one binary for that -march;
           none              no -march flag: the compiler's default (x86-64
                             SSE2 / armv8-a).
         If the compiler rejects the value, the build warns and uses no -march
         flag.  When a target has AVX-512, -mprefer-vector-width=512 is added
         (GCC otherwise sticks to 256-bit vectors); when it has AVX2 but not
         AVX-512, -mprefer-vector-width=256 (some -march=native targets, e.g.
         znver1, prefer 128-bit vectors and the SSE libmvec functions).
     TENSORPLAY_OPENMP=0 builds without OpenMP on purpose (serial kernels).
     TENSORPLAY_OPT replaces -O3 with the flags it holds (e.g. "-O1 -g0": CI's
     bounds-checked build, where compile time matters and speed does not; -O1
     compiles in about a third of -O3's time here).
  4. reuse: each compiled module is also kept in build/tensorplay-cache/, named
     by a hash of its .c file, the headers, the compiler and every flag (the
     CACHE_PER_MODULE most recently used builds of each module); a build whose
     hash is there copies the module instead of compiling it (pip builds in
     fresh temporary directories, so distutils' own check never saw the previous
     result).  A second `pip install -e .` with no source change compiles
     nothing; `build_ext --force` ignores the cache.  Extensions are compiled in
     parallel, one per CPU.
  5. write tensorplay/_kernels/_build_info.py (the flags and the variants, for
     the dispatcher and show_config()).
"""
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
KERNELS = Path("tensorplay") / "_kernels"
CACHE = HERE / "build" / "tensorplay-cache"
CACHE_PER_MODULE = 4

DEBUG = os.environ.get("TENSORPLAY_CYTHON_DEBUG", "0") not in ("", "0")
CPU_TARGET = os.environ.get("TENSORPLAY_CPU_TARGET", "native").strip()
DISPATCH = CPU_TARGET.lower() == "dispatch"
WANT_OPENMP = os.environ.get("TENSORPLAY_OPENMP", "1") not in ("", "0")
ANNOTATE = os.environ.get("TENSORPLAY_CYTHON_ANNOTATE") == "1"
OPT_FLAGS = os.environ.get("TENSORPLAY_OPT", "").split() or ["-O3"]
DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
}
KEY_PREFIX = "/* tensorplay-source-key: "

# Dispatch variants beyond the baseline, best first:
# (name, sub-folder of _kernels, numpy CPU feature, -march flags, fallback flags
#  for compilers that do not know the psABI level names, GCC < 11).
_V3_FLAGS = ["-mavx", "-mavx2", "-mfma", "-mf16c", "-mbmi", "-mbmi2", "-mlzcnt",
             "-mmovbe", "-mpopcnt", "-msse4.2"]
_V4_FLAGS = _V3_FLAGS + ["-mavx512f", "-mavx512cd", "-mavx512vl", "-mavx512bw",
                         "-mavx512dq"]
X86_VARIANTS = [
    ("x86-64-v4", "_x86_64_v4", "X86_V4", ["-march=x86-64-v4"], _V4_FLAGS),
    ("x86-64-v3", "_x86_64_v3", "X86_V3", ["-march=x86-64-v3"], _V3_FLAGS),
]


def _banner(lines):
    bar = "#" * 78
    text = "\n".join([bar, *("# " + line for line in lines), bar])
    print("\n" + text + "\n", file=sys.stderr, flush=True)


def _write_if_changed(path, text):
    """Write only when the text differs, so mtimes (and builds) stay put."""
    path = Path(path)
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def expand_templates():
    """tensorplay/_kernels/X.pyx.tp -> X.pyx (rewritten only when it changes)."""
    from Cython import Tempita

    for tp in sorted((HERE / KERNELS).glob("*.pyx.tp")):
        target = tp.with_suffix("")                       # strip ".tp"
        _write_if_changed(target, f"# WARNING: generated from {tp.name} by setup.py "
                                  f"-- do not edit.\n" + Tempita.sub(tp.read_text()))


def _headers():
    """Every file a .pyx or .c can include or cimport from beside it."""
    return sorted(p for p in (HERE / KERNELS).iterdir()
                  if p.suffix in (".pxd", ".pxi", ".h"))


def _source_key(pyx):
    """Hash of everything the generated .c depends on."""
    import Cython
    h = hashlib.sha256()
    for part in (Cython.__version__, numpy.__version__, repr(sorted(DIRECTIVES.items())),
                 pyx.name, str(ANNOTATE)):
        h.update(part.encode() + b"\0")
    for path in [pyx, *_headers()]:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _c_is_current(c_file, key):
    if not c_file.exists():
        return False
    with open(c_file, "rb") as f:
        f.seek(max(0, c_file.stat().st_size - 200))
        return (KEY_PREFIX + key).encode() in f.read()


def _drop_stale_variants(kernels, keep):
    """Remove the variant folders under `kernels` that this build does not make."""
    for _, sub, *_ in X86_VARIANTS:
        folder = kernels / sub
        if sub not in keep and folder.is_dir():
            shutil.rmtree(folder, ignore_errors=True)


def _probe(compiler, cflags, ldflags, code):
    """True if `code` compiles and links with these flags (output silenced)."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "probe.c")
        with open(src, "w") as f:
            f.write(code)
        saved = os.dup(1), os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            objs = compiler.compile([src], output_dir=tmp, extra_postargs=cflags)
            compiler.link_executable(objs, os.path.join(tmp, "probe"),
                                     extra_postargs=ldflags)
            return True
        except Exception:
            return False
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in (*saved, devnull):
                os.close(fd)


OMP_PROBE = """
#include <omp.h>
int main(void) {
    int n = 0;
    #pragma omp parallel reduction(+:n)
    n += 1;
    return n > 0 ? 0 : omp_get_max_threads();
}
"""
PLAIN_PROBE = "int main(void) { return 0; }\n"
AVX512_PROBE = """
#ifndef __AVX512F__
#error "no AVX-512 in this target"
#endif
int main(void) { return 0; }
"""
AVX2_PROBE = """
#ifndef __AVX2__
#error "no AVX2 in this target"
#endif
int main(void) { return 0; }
"""
X86_64_PROBE = """
#ifndef __x86_64__
#error "not x86-64"
#endif
int main(void) { return 0; }
"""


class BuildExt(build_ext):
    """build_ext that picks optimisation, CPU-target and OpenMP flags by probing,
    builds the dispatch variants and reuses unchanged modules from the cache."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:          # compile extensions side by side
            self.parallel = os.cpu_count() or 1

    def run(self):
        self._to_source = self.inplace or self.editable_mode
        super().run()

    def _march(self, flags):
        """`flags` plus the widest -mprefer-vector-width the target has; or None
        when the compiler rejects them."""
        cc = self.compiler
        if not _probe(cc, flags, [], PLAIN_PROBE):
            return None
        # GCC targets with AVX-512 still prefer 256-bit vectors; the 512-bit libmvec
        # variants (_ZGVeN16v_expf, ...) measured 1.4-2.3x faster for
        # exp/tanh/sigmoid on an AVX-512 machine.  Some AVX2 targets prefer
        # 128-bit vectors (-march=native is znver1 on the 2-core dev VM), which
        # calls the SSE libmvec variants: 256-bit there measured exp float32 0.64x
        # and tanh float64 0.70x the time.
        for width, probe in (("512", AVX512_PROBE), ("256", AVX2_PROBE)):
            wide = flags + [f"-mprefer-vector-width={width}"]
            if _probe(cc, wide, [], probe):
                return wide
        return list(flags)

    def _targets(self):
        """[(variant name, sub-folder or None for the base folder, numpy feature,
        target flags)], base first."""
        cc = self.compiler
        if cc.compiler_type == "msvc":
            return [("baseline" if DISPATCH else "none", None, None, [])]
        if CPU_TARGET.lower() in ("none", ""):
            return [("none", None, None, [])]
        if DISPATCH:
            out = [("baseline", None, None, [])]
            if not any(getattr(e, "tp_variant", None) for e in self.extensions):
                return out                       # off x86-64: variants collapse
            if not _probe(cc, [], [], X86_64_PROBE):
                print("tensorplay build: the compiler does not target x86-64: one "
                      "variant (its default target)", file=sys.stderr, flush=True)
                return out
            for name, sub, feature, march, fallback in X86_VARIANTS:
                flags = self._march(march) or self._march(fallback)
                if flags is None:
                    _banner([f"tensorplay: the compiler accepts neither {march} nor "
                             f"{' '.join(fallback)};",
                             f"the {name} variant is left out (slower kernels on "
                             f"such CPUs)."])
                else:
                    out.append((name, sub, feature, flags))
            return out
        flags = self._march([f"-march={CPU_TARGET}"])
        if flags is None:
            _banner([f"tensorplay: the compiler rejects -march={CPU_TARGET};",
                     "building without a -march flag (generic, slower kernels).",
                     "Set TENSORPLAY_CPU_TARGET to a value your compiler accepts, "
                     "or to 'none'."])
            return [("none", None, None, [])]
        return [(CPU_TARGET, None, None, flags)]

    def build_extensions(self):
        cc = self.compiler
        if cc.compiler_type == "msvc":
            cflags, ldflags = ["/O2", "/fp:precise"], []
            omp_c, omp_l = ["/openmp"], []
        else:
            cflags, ldflags = [*OPT_FLAGS, "-fno-math-errno"], []
            if not DEBUG:
                cflags.append("-g0")
            omp_c, omp_l = ["-fopenmp"], ["-fopenmp"]
        targets = self._targets()
        if not WANT_OPENMP:
            openmp = False
            _banner(["tensorplay: OpenMP switched off (TENSORPLAY_OPENMP=0);",
                     "every kernel runs on one thread."])
        elif _probe(cc, omp_c, omp_l, OMP_PROBE):
            cflags += omp_c
            ldflags += omp_l
            openmp = True
        else:
            openmp = False
            _banner(["WARNING: tensorplay is being built WITHOUT OpenMP.",
                     "The compiler could not build an OpenMP test program, so every",
                     "kernel will run on ONE thread (set_num_threads has no effect).",
                     "Install an OpenMP runtime (gcc: libgomp; clang: libomp, e.g.",
                     "`brew install libomp` with CFLAGS/LDFLAGS pointing at it)",
                     "and rebuild to get multi-threaded kernels."])
        base_name, _, _, base_flags = targets[0]
        print(f"tensorplay build: cflags={cflags + base_flags} ldflags={ldflags} "
              f"openmp={openmp} cython_debug={DEBUG} variants="
              f"{[(t[0], t[3]) for t in targets[1:]]}", file=sys.stderr, flush=True)
        self._write_build_info(cflags, ldflags, openmp, targets)

        kept = {t[0]: t for t in targets[1:]}
        for ext in list(self.extensions):
            variant = getattr(ext, "tp_variant", None)
            if variant is None:
                ext.extra_compile_args = cflags + base_flags
            elif variant in kept:
                ext.extra_compile_args = cflags + kept[variant][3]
            else:                                # the compiler cannot build it
                self.extensions.remove(ext)
                continue
            ext.extra_link_args = list(ldflags)
        self._cc_id = self._compiler_id()
        keep = {t[1] for t in targets[1:]}
        # build_lib persists between wheel builds (build/lib.*), and bdist_wheel
        # packs all of it: variants of an earlier dispatch build must go
        _drop_stale_variants(Path(self.build_lib) / KERNELS, keep)
        if self._to_source:
            _drop_stale_variants(HERE / KERNELS, keep)
            for sub in keep:                      # copy_extensions_to_source's targets
                (HERE / KERNELS / sub).mkdir(exist_ok=True)
        super().build_extensions()

    # -- reuse of unchanged modules ---------------------------------------------

    def _compiler_id(self):
        """The compiler command and its --version banner."""
        cmd = list(getattr(self.compiler, "compiler_so", None) or ["msvc"])
        try:
            version = subprocess.run([cmd[0], "--version"], capture_output=True,
                                     text=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            version = "?"
        return repr(cmd) + version

    def _build_key(self, ext):
        h = hashlib.sha256()
        for part in (self._cc_id, sysconfig.get_config_var("EXT_SUFFIX") or "",
                     sys.platform, numpy.__version__, ext.name,
                     repr(ext.extra_compile_args), repr(ext.extra_link_args),
                     repr(ext.define_macros), repr(ext.libraries)):
            h.update(str(part).encode() + b"\0")
        for src in sorted(ext.sources):
            h.update(Path(src).read_bytes() + b"\0")
        for path in _headers():
            if path.suffix == ".h":
                h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        return h.hexdigest()[:24]

    def build_extension(self, ext):
        target = Path(self.get_ext_fullpath(ext.name))
        if self.force:
            return super().build_extension(ext)
        key = self._build_key(ext)
        cached = CACHE / f"{ext.name}.{key}{target.suffix}"
        if cached.exists():
            print(f"tensorplay build: {ext.name} unchanged, reusing "
                  f"{cached.relative_to(HERE)}", file=sys.stderr, flush=True)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(cached, target)
            os.utime(cached)                  # most recently used: kept longest
            return
        if target.exists():                   # never trust distutils' mtime check
            target.unlink()
        super().build_extension(ext)
        try:
            CACHE.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_name(cached.name + ".tmp")
            shutil.copyfile(target, tmp)
            os.replace(tmp, cached)
            # keep a few builds per module (say a native editable install and a
            # dispatch wheel built from the same tree), the most recently used
            entries = sorted(CACHE.glob(f"{ext.name}.*{target.suffix}"),
                             key=lambda p: p.stat().st_mtime, reverse=True)
            for old in entries[CACHE_PER_MODULE:]:
                old.unlink()
        except OSError as err:               # a read-only tree: no cache, no harm
            print(f"tensorplay build: not caching {ext.name}: {err}", file=sys.stderr)

    def _write_build_info(self, cflags, ldflags, openmp, targets):
        """tensorplay/_kernels/_build_info.py, read by the dispatcher
        (tensorplay/_kernels/__init__.py) and tensorplay.show_config()."""
        base_name, _, _, base_flags = targets[0]
        variants = tuple(tuple(t) for t in targets[1:])          # best first
        text = ("# Generated by setup.py at build time -- do not edit.\n"
                f"COMPILE_ARGS = {cflags + base_flags!r}\nLINK_ARGS = {ldflags!r}\n"
                f"OPENMP = {openmp!r}\nCPU_TARGET = {CPU_TARGET!r}\n"
                f"# boundscheck/wraparound/initializedcheck on (TENSORPLAY_CYTHON_DEBUG)\n"
                f"CYTHON_DEBUG = {DEBUG!r}\n"
                f"# the modules in _kernels/ itself\nBASELINE = {base_name!r}\n"
                "# (name, sub-folder, numpy CPU feature, extra flags), best first\n"
                f"VARIANTS = {variants!r}\n")
        targets = [Path(self.build_lib) / KERNELS]
        if self._to_source:
            targets.append(HERE / KERNELS)
        for folder in targets:
            _write_if_changed(folder / "_build_info.py", text)


def extensions():
    from Cython.Build import cythonize

    expand_templates()
    exts, stale = [], []
    for pyx in sorted((HERE / KERNELS).glob("*.pyx")):
        name = ".".join(KERNELS.parts + (pyx.stem,))
        c_file = pyx.with_suffix(".c")
        key = _source_key(pyx)
        ext = Extension(
            name,
            sources=[str(KERNELS / c_file.name)],
            include_dirs=[numpy.get_include(), str(KERNELS)],
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_9_API_VERSION")],
            libraries=[] if sys.platform == "win32" else ["m"],
        )
        exts.append(ext)
        if not _c_is_current(c_file, key):
            stale.append((Extension(name, sources=[str(KERNELS / pyx.name)],
                                    include_dirs=ext.include_dirs), c_file, key))
    if stale:
        cythonize([e for e, _, _ in stale], compiler_directives=DIRECTIVES, force=True,
                  annotate=ANNOTATE)
        for _, c_file, key in stale:
            with open(c_file, "a") as f:
                f.write(f"\n{KEY_PREFIX}{key} */\n")
    if DISPATCH and platform.machine().lower() in ("x86_64", "amd64"):
        exts += [_variant(ext, name, sub) for name, sub, *_ in X86_VARIANTS
                 for ext in exts if not ext.name.rpartition(".")[2].startswith("_")]
    return exts


def _variant(ext, name, sub):
    """The extension `ext` compiled into the sub-folder `sub` of its package.

    Same C code, so the module keeps its name (PyInit_<mod>, and the dotted name
    Cython compiled in); only the folder and the flags (set by BuildExt) differ.
    Public kernel modules get variants; helpers (names starting with "_") are
    built once.  The C file is copied to build/tensorplay-variants/<sub>/ so that
    each variant gets its own object file when extensions compile in parallel.
    """
    pkg, _, mod = ext.name.rpartition(".")
    (src,) = ext.sources
    copy = Path("build") / "tensorplay-variants" / sub / Path(src).name
    _write_if_changed(HERE / copy, (HERE / src).read_text())
    out = Extension(f"{pkg}.{sub}.{mod}", sources=[str(copy)],
                    include_dirs=list(ext.include_dirs),
                    define_macros=list(ext.define_macros), libraries=list(ext.libraries))
    out.tp_variant = name
    return out


# ---------------------------------------------------------------- hot path: compiled .py
# Separate from the kernels above on purpose.  These plain-Python modules (the
# Tensor class, the registry, the engine, the elementwise ops) are also compiled
# by Cython in pure-Python mode: the same .py files, which still run as they are.
# setup.py records each source's checksum in tensorplay/_compiled_sources.py;
# tensorplay/_compiled.py loads the .py instead of a stale build (with a warning),
# and TENSORPLAY_PURE_PYTHON=1 at run time loads them all from source.
# TENSORPLAY_COMPILE_PY=0 at build time skips this block.  See docs/DECISIONS.md
# for what each module measured.
HOT_PY = ["tensorplay/_tensor.py", "tensorplay/_ops/registry.py",
          "tensorplay/_ops/_common.py", "tensorplay/_ops/elementwise.py",
          "tensorplay/autograd/graph.py"]
COMPILE_PY = os.environ.get("TENSORPLAY_COMPILE_PY", "1") not in ("", "0")


def hot_path_extensions():
    if not COMPILE_PY:
        return []
    import zlib
    from Cython.Build import cythonize

    def checksum(path):          # the same as tensorplay._compiled.checksum
        data = (HERE / path).read_bytes()
        return f"{zlib.crc32(data):08x}-{len(data)}"

    names = {p[:-3].replace("/", "."): p for p in HOT_PY}
    record = HERE / "tensorplay" / "_compiled_sources.py"
    text = ("# Generated by setup.py: checksums of the compiled .py sources -- do not edit.\n"
            "SOURCES = {\n" + "".join(f"    {n!r}: {checksum(p)!r},\n"
                                       for n, p in names.items()) + "}\n")
    if not record.exists() or record.read_text() != text:
        record.write_text(text)
    exts = [Extension(n, [p]) for n, p in names.items()]
    # no annotation typing: the .py files must mean the same compiled or not; no
    # auto-pickling: Tensor pickles itself (__getstate__/__setstate__)
    return cythonize(exts, compiler_directives={"language_level": 3,
                                                "annotation_typing": False,
                                                "auto_pickle": False})


setup(ext_modules=extensions() + hot_path_extensions(), cmdclass={"build_ext": BuildExt})
