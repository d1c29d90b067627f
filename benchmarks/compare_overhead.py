"""Per-op Python overhead on tiny tensors: tensorplay against PyTorch (when installed).

Run from the repository root after building (``pip install -e .``)::

    python benchmarks/compare_overhead.py

On 1-element float32 tensors it times, per op, chains of ``tanh(y * 1.01 + 0.1)``
(mul, add, tanh; plus one sum):

* ``fwd``      -- the chain without grad (no graph);
* ``fwd+rec``  -- the same chain recording the graph (input requires grad);
* ``fwd+bwd``  -- recording plus ``autograd.grad`` back to the input;
* ``jvp fwd``  -- ``functional.jvp(mode="forward")`` of the chain (tensorplay only).

The kernels do almost nothing at this size, so the numbers are the cost of the
Python layer: dispatch, promotion, graph nodes, the engine.  The target (issue 5)
is at or below 0.5x PyTorch's time for ``fwd+bwd``.

The machine is shared, so tensorplay and PyTorch alternate: each round times
every case once per library, and the ratios printed are medians of the per-round
ratios (a slow spell hits both sides of a round alike).  Compare ratios, not
absolute times.
"""
import argparse
import time

import numpy as np

import tensorplay as tp

CHAIN = 10            # each link is three ops (mul, add, tanh); plus one sum
N_OPS = 3 * CHAIN + 1
CASES = ["fwd", "fwd+rec", "fwd+bwd", "jvp fwd"]


def _chain(lib, x):
    y = x
    for _ in range(CHAIN):
        y = lib.tanh(y * 1.01 + 0.1)
    return y.sum()


def _cases_tp():
    x0 = tp.ones(1)
    x1 = tp.ones(1, requires_grad=True)
    v = tp.ones(1)
    jvp = tp.autograd.functional.jvp
    return {
        "fwd": lambda: _chain(tp, x0),
        "fwd+rec": lambda: _chain(tp, x1),
        "fwd+bwd": lambda: tp.autograd.grad(_chain(tp, x1), x1),
        "jvp fwd": lambda: jvp(lambda x: _chain(tp, x), x0, v, mode="forward"),
    }


def _cases_torch(torch):
    t0 = torch.ones(1)
    t1 = torch.ones(1, requires_grad=True)
    return {
        "fwd": lambda: _chain(torch, t0),
        "fwd+rec": lambda: _chain(torch, t1),
        "fwd+bwd": lambda: torch.autograd.grad(_chain(torch, t1), t1),
    }


def _per_op(fn, number):
    """Seconds per op of one timing of ``number`` calls of ``fn``."""
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number / N_OPS


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--number", type=int, default=200, help="calls per timing")
    args = p.parse_args(argv)
    libs = {"tensorplay": _cases_tp()}
    try:
        import torch
        torch.set_num_threads(1)
        libs["torch"] = _cases_torch(torch)
    except ImportError:
        pass
    times = {name: {c: [] for c in cases} for name, cases in libs.items()}
    for name, cases in libs.items():               # warm up
        for fn in cases.values():
            _per_op(fn, max(1, args.number // 10))
    for _ in range(args.rounds):
        for case in CASES:
            for name, cases in libs.items():       # tp, torch, tp, torch, ...
                if case in cases:
                    times[name][case].append(_per_op(cases[case], args.number))
    print(f"microseconds per op, median of {args.rounds} rounds (chains of {N_OPS} ops "
          f"on 1-element float32 tensors)")
    print(f"{'':12}" + "".join(f"{c:>10}" for c in CASES))
    for name, r in times.items():
        print(f"{name:12}" + "".join(f"{np.median(r[c]) * 1e6:10.2f}" if r.get(c) else
                                     f"{'-':>10}" for c in CASES))
    if "torch" in times:
        ratios = {c: np.median(np.array(times["tensorplay"][c]) / np.array(times["torch"][c]))
                  for c in CASES if times["torch"].get(c)}
        print(f"{'tp / torch':12}" + "".join(f"{ratios[c]:10.2f}" if c in ratios else
                                             f"{'-':>10}" for c in CASES)
              + "   (median of per-round ratios)")


if __name__ == "__main__":
    main()
