"""Kernel builds side by side: the dispatch variants of one install, or two installs.

    python benchmarks/compare_variants.py                 # this install's variants
    python benchmarks/compare_variants.py DIR [DIR ...]   # any kernel folders

A kernel folder is one holding ``unary.*.so`` and ``binary.*.so``: an install's
``tensorplay/_kernels/`` (its baseline or single build) or one of its variant
sub-folders (``_kernels/_x86_64_v3/``).  Every folder's modules are loaded into
this one process under their real names (each is a separate shared object), and
exp, tanh, sigmoid and add at ``--n`` elements (1M) run interleaved, call by
call, so that load on the shared machine hits all of them alike.  Prints median
microseconds and each folder's time relative to the first one (< 1: faster),
after checking that every folder computes the same numbers (to libmvec's 4 ulp).
Variants the CPU cannot run are skipped.
"""
import argparse
import glob
import importlib.util
import os
import sys
import timeit

import numpy as np


def load(folder, name):
    """Module ``tensorplay._kernels.<name>`` from the shared object in ``folder``."""
    (path,) = glob.glob(os.path.join(folder, f"{name}.*.so")) or [None]
    if path is None:
        raise SystemExit(f"no {name}.*.so in {folder}")
    spec = importlib.util.spec_from_file_location(f"tensorplay._kernels.{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def default_folders():
    import tensorplay._kernels as k
    base = os.path.dirname(k.__file__)
    out = [(k.BASELINE, base)]
    for name, sub, feature, _ in reversed(k.VARIANTS):
        if k._cpu_supports(feature):
            out.append((name, os.path.join(base, sub)))
        else:
            print(f"skipping {name}: this CPU lacks {feature}")
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("folders", nargs="*")
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=100)
    p.add_argument("--number", type=int, default=5)
    args = p.parse_args()
    folders = ([(f, f) for f in args.folders] if args.folders else default_folders())
    mods = [(label, load(f, "unary"), load(f, "binary")) for label, f in folders]
    rng = np.random.default_rng(0)
    n, nt = args.n, args.threads
    print(f"n={n} threads={nt} repeat={args.repeat}x{args.number}; python {sys.version.split()[0]}")
    for i, (label, _, _) in enumerate(mods):
        print(f"  [{i}] {label}")
    head = f"{'op':8} {'dtype':8}" + "".join(f" {f'[{i}] us':>10}" for i in range(len(mods)))
    head += "".join(f" {f'[{i}]/[0]':>8}" for i in range(1, len(mods)))
    print(head)
    print("-" * len(head))
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal(n).astype(dtype)
        y = rng.standard_normal(n).astype(dtype)
        for op in ("exp", "tanh", "sigmoid", "add"):
            calls = []
            outs = []
            for _, u, b in mods:
                out = np.empty(n, dtype)
                if op == "add":
                    fn = (lambda k, o: lambda: k(x, y, o, nt))(b.add_fwd, out)
                else:
                    fn = (lambda k, o: lambda: k(x, o, nt))(getattr(u, f"{op}_fwd"), out)
                fn()
                calls.append(fn)
                outs.append(out)
            tol = 2e-6 if dtype == np.float32 else 1e-14
            for (label, _, _), out in zip(mods[1:], outs[1:]):
                np.testing.assert_allclose(out, outs[0], rtol=tol, atol=tol,
                                           err_msg=f"{op} {label}")
            times = [[] for _ in calls]
            for _ in range(args.repeat):
                for t, fn in zip(times, calls):
                    t.append(timeit.timeit(fn, number=args.number) / args.number)
            med = [float(np.median(t)) * 1e6 for t in times]
            row = f"{op:8} {np.dtype(dtype).name:8}" + "".join(f" {m:10.1f}" for m in med)
            row += "".join(f" {m / med[0]:8.2f}" for m in med[1:])
            print(row)


if __name__ == "__main__":
    main()
