"""Fused derivative primitives against the chains of primitives they replaced,
and forward-mode ``jvp`` of the example MLP against its forward pass.

Run from the repository root after building (``pip install -e .``)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/compare_fused.py

1. For each fused derivative kernel (``sqrt_backward``, ``div_backward_other``,
   ``pow_backward_base``, ...) the old rule, written with public ops, and the new
   primitive, under ``no_grad`` (what a rule costs with grad mode off), float32,
   at 1K and 1M elements.  Prints medians and the median of per-round ratios
   chain/fused (> 1: the fused kernel is faster).
2. ``functional.jvp(mode="forward")`` of the 64-128-10 MLP of
   ``examples/train_digits.py`` at batch 256, float32, against tensorplay's own
   forward pass, and the same math in plain numpy as the floor.

Candidates alternate within each round and times are per-thread CPU time
(``time.thread_time``), so a busy neighbour on the shared machine stretches all
of them alike; run with one OpenMP and one OpenBLAS thread for that to hold.
"""
import argparse
import time

import numpy as np

import tensorplay as tp
from tensorplay._ops import elementwise as ew
from tensorplay.autograd.functional import jvp


def _arr(rng, n, lo=None, hi=None):
    a = rng.uniform(lo, hi, n) if lo is not None else rng.standard_normal(n)
    return tp.from_numpy(a.astype(np.float32))


def fused_cases(n, rng):
    """name -> (old chain, fused primitive), both returning the same values."""
    g, y, a, b = _arr(rng, n), _arr(rng, n, 0.5, 2), _arr(rng, n, 0.5, 2), _arr(rng, n, -1.5, 1.5)
    s = tp.tensor(3.0)
    return {
        "exp:  g*out -> mul_backward": (lambda: g * y, lambda: ew.mul_backward(g, y)),
        "log:  g/x -> div_backward": (lambda: g / y, lambda: ew.div_backward(g, y)),
        "sqrt: g/(2*out) -> sqrt_backward": (lambda: g / (2 * y),
                                             lambda: ew.sqrt_backward(g, y)),
        "div:  -(g*out)/b -> div_backward_other": (lambda: -(g * y) / a,
                                                   lambda: ew.div_backward_other(g, y, a)),
        "pow:  base, tensor exponent": (lambda: tp.where(b == 0, 0.0, g * b * a ** (b - 1)),
                                        lambda: ew.pow_backward_base(g, a, b)),
        "pow:  base, x ** 3": (lambda: tp.where(s == 0, 0.0, g * s * a ** (s - 1)),
                               lambda: ew.pow_backward_base(g, a, s)),
        "pow:  exponent": (lambda: g * tp.where((a == 0) * (b >= 0), 0.0, y * tp.log(a)),
                           lambda: ew.pow_backward_exponent(g, y, a)),
    }


def rounds(fns, n_rounds, number):
    """Per-round CPU seconds per call of each fn, interleaved."""
    times = {k: [] for k in fns}
    for fn in fns.values():
        fn()
    for _ in range(n_rounds):
        for k, fn in fns.items():
            t0 = time.thread_time()
            for _ in range(number):
                fn()
            times[k].append((time.thread_time() - t0) / number)
    return {k: np.array(v) for k, v in times.items()}


def ratio(times, a, b):
    return float(np.median(times[a] / times[b]))


def mlp_case(rng):
    tp.manual_seed(0)
    w1, b1 = tp.randn(64, 128) * 0.17, tp.randn(128) * 0.1
    w2, b2 = tp.randn(128, 10) * 0.1, tp.randn(10)
    x, v = tp.rand(256, 64), tp.randn(256, 64)
    f = lambda inp: tp.relu(inp @ w1 + b1) @ w2 + b2    # noqa: E731
    xn, vn = x.numpy(), v.numpy()
    w1n, b1n, w2n, b2n = (t.numpy() for t in (w1, b1, w2, b2))

    def np_jvp():
        p = xn @ w1n + b1n
        return np.maximum(p, 0) @ w2n + b2n, np.where(p > 0, vn @ w1n, 0) @ w2n

    return {"tp forward": lambda: f(x),
            "tp jvp(mode='forward')": lambda: jvp(f, x, v, mode="forward"),
            "numpy forward": lambda: np.maximum(xn @ w1n + b1n, 0) @ w2n + b2n,
            "numpy forward + tangent": np_jvp}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=25)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    print("fused derivative primitive vs the chain it replaced (float32, no_grad)")
    with tp.no_grad():
        for n in (1_000, 1_000_000):
            for name, (chain, fused) in fused_cases(n, rng).items():
                np.testing.assert_allclose(chain().numpy(), fused().numpy(), rtol=2e-5,
                                           atol=1e-6)
                t = rounds({"chain": chain, "fused": fused}, args.rounds,
                           300 if n < 10_000 else 3)
                print(f"  n={n:>8}  {name:40} chain {np.median(t['chain']) * 1e6:9.1f} us"
                      f"  fused {np.median(t['fused']) * 1e6:9.1f} us"
                      f"  chain/fused {ratio(t, 'chain', 'fused'):5.2f}")
    print("MLP 64-128-10, batch 256, float32: jvp(mode='forward') vs forward")
    t = rounds(mlp_case(rng), 3 * args.rounds, 20)
    for k, v in t.items():
        print(f"  {k:28} {np.median(v) * 1e6:9.1f} us")
    jv = "tp jvp(mode='forward')"
    print(f"  jvp / forward (tensorplay)        {ratio(t, jv, 'tp forward'):5.2f}")
    print(f"  forward + tangent / forward (numpy, the floor) "
          f"{ratio(t, 'numpy forward + tangent', 'numpy forward'):5.2f}")


if __name__ == "__main__":
    main()
