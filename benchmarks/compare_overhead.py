"""Per-op Python overhead on tiny tensors, broken down: tensorplay against PyTorch.

``benchmarks/compare.py`` reports one number for this (its "tiny chain" row,
forward + backward); this script splits it up.  Run from the repository root
after building (``pip install -e .``)::

    python benchmarks/compare_overhead.py

On the same chain as compare.py (``harness.tiny_chain``: mul, add and tanh
links on a 1-element float32 tensor, then a sum) it times, per op:

* ``fwd``      -- the chain without grad (no graph);
* ``fwd+rec``  -- the same chain recording the graph (input requires grad);
* ``fwd+bwd``  -- recording plus ``autograd.grad`` back to the input;
* ``jvp fwd``  -- ``functional.jvp(mode="forward")`` of the chain (tensorplay only).

The kernels do almost nothing at this size, so the numbers are the cost of the
Python layer: dispatch, promotion, graph nodes, the engine.  Both libraries run
at their defaults; the two alternate round by round and the ``tp / torch`` line
is the median of the per-round ratios (shared machine: read ratios, not times).
"""
import argparse

import numpy as np

import harness
import tensorplay as tp


def columns(lib):
    """Column name -> zero-argument callable timing that column in ``lib``."""
    x0, x1 = lib.ones(1), lib.ones(1, requires_grad=True)
    cols = {"fwd": lambda: harness.tiny_chain(x0),
            "fwd+rec": lambda: harness.tiny_chain(x1),
            "fwd+bwd": lambda: lib.autograd.grad(harness.tiny_chain(x1), x1)}
    if lib is tp:
        cols["jvp fwd"] = lambda: tp.autograd.functional.jvp(harness.tiny_chain, x0,
                                                             tp.ones(1), mode="forward")
    return cols


def main(argv=None):
    """Print microseconds per op for each library and column, and tp / torch."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=15, help="rounds")
    p.add_argument("--number", type=int, default=300, help="chains per measurement")
    args = p.parse_args(argv)
    libs = {"tensorplay": tp}
    try:
        import torch
        libs["torch"] = torch
    except ImportError:
        pass
    per_lib = {name: columns(lib) for name, lib in libs.items()}
    names = ["fwd", "fwd+rec", "fwd+bwd", "jvp fwd"]
    times = {c: harness.alternating_rounds({n: cols[c] for n, cols in per_lib.items()
                                            if c in cols}, args.repeat, number=args.number)
             for c in names}
    print(f"microseconds per op (chains of {harness.TINY_OPS} ops on 1-element float32 "
          f"tensors)")
    print(f"{'':12}" + "".join(f"{c:>10}" for c in names))
    for name in libs:
        print(f"{name:12}" + "".join(
            f"{np.median(times[c][name]) / harness.TINY_OPS * 1e6:10.2f}"
            if name in times[c] else f"{'-':>10}" for c in names))
    if "torch" in libs:
        print(f"{'tp / torch':12}" + "".join(
            f"{harness.median_ratio(times[c]['tensorplay'], times[c]['torch']):10.2f}"
            if "torch" in times[c] else f"{'-':>10}" for c in names))


if __name__ == "__main__":
    main()
