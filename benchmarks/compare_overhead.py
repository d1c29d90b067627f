"""Per-op Python overhead on tiny tensors: tensorplay against PyTorch (when installed).

Run from the repository root after building (``pip install -e .``)::

    python benchmarks/compare_overhead.py

On 1-element float32 tensors it times, per op (median of ``--repeat`` runs):

* ``fwd``      -- ``y = y * 1.01 + 0.1`` chains without grad (no graph);
* ``fwd+rec``  -- the same chain recording the graph (input requires grad);
* ``fwd+bwd``  -- recording plus ``autograd.grad`` back to the input;
* ``jvp fwd``  -- ``functional.jvp(mode="forward")`` of the chain (tensorplay only).

The kernels do almost nothing at this size, so the numbers are the cost of the
Python layer: dispatch, promotion, graph nodes, the engine.  DESIGN.md's target
is at or below PyTorch's.  Compare ratios, not absolute times (shared machine).
"""
import argparse
import timeit

import numpy as np

import tensorplay as tp

CHAIN = 10            # each link is two ops (mul, add); plus one sum


def _chain(x):
    y = x
    for _ in range(CHAIN):
        y = y * 1.01 + 0.1
    return y.sum()


def _time(fn, repeat, number):
    return float(np.median([timeit.timeit(fn, number=number) / number
                            for _ in range(repeat)]))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--number", type=int, default=300)
    args = p.parse_args(argv)
    n_ops = 2 * CHAIN + 1
    rows = {}
    x0 = tp.ones(1)
    x1 = tp.ones(1, requires_grad=True)
    rows["tensorplay"] = {
        "fwd": _time(lambda: _chain(x0), args.repeat, args.number),
        "fwd+rec": _time(lambda: _chain(x1), args.repeat, args.number),
        "fwd+bwd": _time(lambda: tp.autograd.grad(_chain(x1), x1), args.repeat,
                         args.number),
        "jvp fwd": _time(lambda: tp.autograd.functional.jvp(
            lambda x: _chain(x), x0, tp.ones(1), mode="forward"),
            args.repeat, args.number),
    }
    try:
        import torch
        torch.set_num_threads(1)
        t0 = torch.ones(1)
        t1 = torch.ones(1, requires_grad=True)
        rows["torch"] = {
            "fwd": _time(lambda: _chain(t0), args.repeat, args.number),
            "fwd+rec": _time(lambda: _chain(t1), args.repeat, args.number),
            "fwd+bwd": _time(lambda: torch.autograd.grad(_chain(t1), t1),
                             args.repeat, args.number),
        }
    except ImportError:
        pass
    cols = ["fwd", "fwd+rec", "fwd+bwd", "jvp fwd"]
    print(f"microseconds per op (chains of {n_ops} ops on 1-element float32 tensors)")
    print(f"{'':12}" + "".join(f"{c:>10}" for c in cols))
    for name, r in rows.items():
        print(f"{name:12}" + "".join(f"{r[c] / n_ops * 1e6:10.2f}" if c in r else f"{'-':>10}"
                                     for c in cols))
    if "torch" in rows:
        print(f"{'tp / torch':12}" + "".join(
            f"{rows['tensorplay'][c] / rows['torch'][c]:10.2f}" if c in rows["torch"]
            else f"{'-':>10}" for c in cols))


if __name__ == "__main__":
    main()
