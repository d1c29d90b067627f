"""Kernel-level comparison of tensorplay's elementwise kernels with numpy (and torch).

This is the kernel developer's view (preallocated outputs, a chosen thread
count); ``benchmarks/compare.py`` is the user's view of the whole library at
default settings.  Run from the repository root after building
(``pip install -e .``)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/compare_kernels.py
    python benchmarks/compare_kernels.py --n 1000000 --threads 2 --repeat 200

For exp, tanh, sigmoid, add and mul at ``--n`` elements (default 1M), float32 and
float64, it times

* ``tp out``  -- the tensorplay kernel writing into a preallocated ``out``;
* ``tp new``  -- the same kernel plus a fresh ``np.empty`` output (what the
  Python layer does for every op);
* ``np out``  -- the numpy ufunc with ``out=`` (sigmoid: ``1/(1+np.exp(-x))``
  computed in place into ``out``, three ufunc passes);
* ``np new``  -- the numpy ufunc allocating its result;
* ``torch``   -- the torch function with ``out=`` if torch is importable
  (``torch.set_num_threads(threads)``).

Each number is the median over ``--repeat`` rounds of ``--number`` calls, the
candidates alternating round by round (the machine is shared and noisy: compare
medians and ratios, not single runs).  With 2 threads on a 2-core machine, any
other busy process makes the threaded kernels stall for scheduler time slices:
benchmark on an idle machine, or compare with ``--threads 1``.
The ratio columns are numpy_time / tensorplay_time (> 1: tensorplay faster).
"""
import argparse

import numpy as np

import harness
from tensorplay._kernels import binary, unary
from tensorplay._kernels._openmp_helpers import omp_max_threads, openmp_enabled

try:
    import torch
except ImportError:          # torch is optional
    torch = None


def median_times(fns, repeat, number):
    """Median seconds per call of each fn, the fns alternating round by round
    so that a burst of load on the shared machine hits all of them alike."""
    times = harness.alternating_rounds(dict(enumerate(fns)), repeat, number=number)
    return [float(np.median(times[i])) for i in range(len(fns))]


def np_sigmoid_out(x, out):
    np.negative(x, out=out)
    np.exp(out, out=out)
    out += 1
    np.reciprocal(out, out=out)
    return out


def cases(n, dtype, rng):
    x = rng.standard_normal(n).astype(dtype)
    y = rng.standard_normal(n).astype(dtype)
    return [
        ("exp", (x,), unary.exp_fwd, lambda out: np.exp(x, out=out), lambda: np.exp(x),
         "exp"),
        ("tanh", (x,), unary.tanh_fwd, lambda out: np.tanh(x, out=out),
         lambda: np.tanh(x), "tanh"),
        ("sigmoid", (x,), unary.sigmoid_fwd, lambda out: np_sigmoid_out(x, out),
         lambda: 1 / (1 + np.exp(-x)), "sigmoid"),
        ("add", (x, y), binary.add_fwd, lambda out: np.add(x, y, out=out),
         lambda: x + y, "add"),
        ("mul", (x, y), binary.mul_fwd, lambda out: np.multiply(x, y, out=out),
         lambda: x * y, "mul"),
    ]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=100)
    p.add_argument("--number", type=int, default=5)
    args = p.parse_args()
    n, nt = args.n, args.threads
    rng = np.random.default_rng(0)
    if torch is not None:
        torch.set_num_threads(nt)
    print(f"n={n}  n_threads={nt}  openmp={openmp_enabled()}  "
          f"omp_max_threads={omp_max_threads()}  numpy={np.__version__}  "
          f"torch={torch.__version__ if torch is not None else 'not installed'}")
    head = (f"{'op':8} {'dtype':8} {'tp out':>9} {'tp new':>9} {'np out':>9} "
            f"{'np new':>9} {'torch':>9}  {'np/tp out':>9} {'np/tp new':>9}"
            f" {'torch/tp':>9}")
    print("times are medians in microseconds")
    print(head)
    print("-" * len(head))
    worst = np.inf
    for dtype in (np.float32, np.float64):
        for name, inputs, kern, np_out, np_new, tname in cases(n, dtype, rng):
            out = np.empty(n, dtype)
            ref = np.empty(n, dtype)
            kern(*inputs, out, nt)
            np_out(ref)
            tol = 1e-5 if dtype == np.float32 else 1e-12
            assert np.allclose(out, ref, rtol=tol, atol=tol), name

            fns = [lambda: kern(*inputs, out, nt),
                   lambda: kern(*inputs, np.empty(n, dtype), nt),
                   lambda: np_out(ref), np_new]
            if torch is not None:
                tin = [torch.from_numpy(a) for a in inputs]
                tout = torch.from_numpy(out)
                fns.append({"exp": lambda: torch.exp(tin[0], out=tout),
                            "tanh": lambda: torch.tanh(tin[0], out=tout),
                            "sigmoid": lambda: torch.sigmoid(tin[0], out=tout),
                            "add": lambda: torch.add(tin[0], tin[1], out=tout),
                            "mul": lambda: torch.mul(tin[0], tin[1], out=tout)}[tname])
            t_out, t_new, t_np_out, t_np_new, *t_torch = median_times(
                fns, args.repeat, args.number)
            t_torch = t_torch[0] if t_torch else float("nan")
            r_out, r_new = t_np_out / t_out, t_np_new / t_new
            worst = min(worst, r_out)
            print(f"{name:8} {np.dtype(dtype).name:8} {t_out * 1e6:9.1f} "
                  f"{t_new * 1e6:9.1f} {t_np_out * 1e6:9.1f} {t_np_new * 1e6:9.1f} "
                  f"{t_torch * 1e6:9.1f}  {r_out:9.2f} {r_new:9.2f} "
                  f"{t_torch / t_out:9.2f}")
    print(f"\nworst numpy_out / tensorplay_out ratio: {worst:.2f} "
          f"({'meets' if worst >= 1.0 else 'BELOW'} the 1.0 floor)")


if __name__ == "__main__":
    main()
