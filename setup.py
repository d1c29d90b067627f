"""Build of tensorplay's compiled kernels (tensorplay/_kernels/*.pyx[.tp]).

Metadata lives in pyproject.toml; this file only describes the extensions.

Steps:
  1. expand Tempita templates  tensorplay/_kernels/*.pyx.tp -> *.pyx  (generated
     files are git-ignored; only the templates are sources);
  2. cythonize every tensorplay/_kernels/*.pyx with one set of directives
     (boundscheck/wraparound/initializedcheck off, cdivision on; the environment
     variable TENSORPLAY_CYTHON_DEBUG=1 turns the checks back on);
  3. compile with -O3 -fno-math-errno (never -ffast-math: it changes denormal
     handling for the whole process) plus, each decided by a probe compile:
       * OpenMP (-fopenmp).  Without it the build still succeeds, the kernels run
         serially, and a warning banner is printed;
       * the CPU target -march=$TENSORPLAY_CPU_TARGET (default "native": fastest
         on the build machine, but the binary may not run on an older CPU).  For
         wheels or shared installs use a portable baseline, e.g.
         TENSORPLAY_CPU_TARGET=x86-64-v3 (AVX2) or TENSORPLAY_CPU_TARGET=none (no
         -march flag: the compiler's default, x86-64 SSE2 / armv8-a).  If the
         compiler rejects the value, the build warns and uses no -march flag.
         When the chosen target has AVX-512, -mprefer-vector-width=512 is added
         (GCC otherwise sticks to 256-bit vectors).
     TENSORPLAY_OPENMP=0 builds without OpenMP on purpose (serial kernels).
  4. write tensorplay/_kernels/_build_info.py (the flags, for show_config()).
"""
import os
import sys
import tempfile
from pathlib import Path

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
KERNELS = Path("tensorplay") / "_kernels"

DEBUG = os.environ.get("TENSORPLAY_CYTHON_DEBUG", "0") not in ("", "0")
CPU_TARGET = os.environ.get("TENSORPLAY_CPU_TARGET", "native").strip()
WANT_OPENMP = os.environ.get("TENSORPLAY_OPENMP", "1") not in ("", "0")


def _banner(lines):
    bar = "#" * 78
    text = "\n".join([bar, *("# " + line for line in lines), bar])
    print("\n" + text + "\n", file=sys.stderr, flush=True)


def expand_templates():
    """tensorplay/_kernels/X.pyx.tp -> X.pyx (rewritten only when it changes)."""
    from Cython import Tempita

    for tp in sorted((HERE / KERNELS).glob("*.pyx.tp")):
        target = tp.with_suffix("")                       # strip ".tp"
        text = (f"# WARNING: generated from {tp.name} by setup.py -- do not edit.\n"
                + Tempita.sub(tp.read_text()))
        if not target.exists() or target.read_text() != text:
            target.write_text(text)


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


class BuildExt(build_ext):
    """build_ext that picks optimisation, CPU-target and OpenMP flags by probing."""

    def build_extensions(self):
        cc = self.compiler
        if cc.compiler_type == "msvc":
            cflags, ldflags = ["/O2", "/fp:precise"], []
            omp_c, omp_l = ["/openmp"], []
        else:
            cflags, ldflags = ["-O3", "-fno-math-errno"], []
            omp_c, omp_l = ["-fopenmp"], ["-fopenmp"]
            if CPU_TARGET.lower() not in ("none", ""):
                flag = f"-march={CPU_TARGET}"
                if _probe(cc, [flag], [], PLAIN_PROBE):
                    cflags.append(flag)
                    # GCC targets with AVX-512 still prefer 256-bit vectors; the
                    # 512-bit libmvec variants (_ZGVeN16v_expf, ...) measured 1.4-2.3x
                    # faster for exp/tanh/sigmoid on the AVX-512 dev box.
                    wide = [flag, "-mprefer-vector-width=512"]
                    if _probe(cc, wide, [], AVX512_PROBE):
                        cflags.append("-mprefer-vector-width=512")
                else:
                    _banner([f"tensorplay: the compiler rejects {flag};",
                             "building without a -march flag (generic, slower "
                             "kernels).",
                             "Set TENSORPLAY_CPU_TARGET to a value your compiler "
                             "accepts, or to 'none'."])
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
        print(f"tensorplay build: cflags={cflags} ldflags={ldflags} openmp={openmp} "
              f"cython_debug={DEBUG}", file=sys.stderr, flush=True)
        self._write_build_info(cflags, ldflags, openmp)
        for ext in self.extensions:
            ext.extra_compile_args = list(ext.extra_compile_args or []) + cflags
            ext.extra_link_args = list(ext.extra_link_args or []) + ldflags
        super().build_extensions()


    def _write_build_info(self, cflags, ldflags, openmp):
        """tensorplay/_kernels/_build_info.py, read by tensorplay.show_config()."""
        text = ("# Generated by setup.py at build time -- do not edit.\n"
                f"COMPILE_ARGS = {cflags!r}\nLINK_ARGS = {ldflags!r}\n"
                f"OPENMP = {openmp!r}\nCPU_TARGET = {CPU_TARGET!r}\n")
        targets = [HERE / KERNELS]
        if not self.inplace:
            targets.append(Path(self.build_lib) / KERNELS)
        for folder in targets:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "_build_info.py").write_text(text)


def extensions():
    from Cython.Build import cythonize

    expand_templates()
    exts = []
    for pyx in sorted((HERE / KERNELS).glob("*.pyx")):
        name = ".".join(KERNELS.parts + (pyx.stem,))
        exts.append(Extension(
            name,
            sources=[str(KERNELS / pyx.name)],
            include_dirs=[numpy.get_include(), str(KERNELS)],
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_9_API_VERSION")],
            libraries=[] if sys.platform == "win32" else ["m"],
            depends=[str(p.relative_to(HERE)) for p in (HERE / KERNELS).glob("*.p[xh]*")
                     if p.suffix in (".pxd", ".h")],
        ))
    directives = {
        "language_level": 3,
        "boundscheck": DEBUG,
        "wraparound": DEBUG,
        "initializedcheck": DEBUG,
        "cdivision": True,
    }
    return cythonize(exts, compiler_directives=directives,
                     annotate=os.environ.get("TENSORPLAY_CYTHON_ANNOTATE") == "1")


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
