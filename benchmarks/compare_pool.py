"""max_pool2d(2) and avg_pool2d(2), forward + backward, tensorplay vs torch.

Run from the repository root after building (``pip install -e .``)::

    python benchmarks/compare_pool.py [--rounds 15] [--dtype float32]

For (64, 16, 8, 8) and (32, 64, 32, 32) float32 inputs it times one step
``y = pool(x); grad(y, x, g)`` in each library at its default settings, in the
same process (tensorplay imported first), the two alternating round by round;
it prints each library's median and the median over rounds of the per-round
ratio torch_time / tensorplay_time (> 1: tensorplay faster).  Forward alone is
timed the same way.
"""
import argparse

import numpy as np

import harness
import tensorplay as tp

try:
    import torch
except ImportError:          # torch is optional
    torch = None

SHAPES = [(64, 16, 8, 8), (32, 64, 32, 32)]


def _step(lib, pool, x, g):
    def run():
        y = pool(lib, x)
        return lib.autograd.grad(y, x, g)
    return run


def _fwd(lib, pool, x):
    def run():
        with lib.no_grad():
            return pool(lib, x)
    return run


POOLS = {
    "max_pool2d(2)": lambda lib, x: lib.nn.functional.max_pool2d(x, 2),
    "avg_pool2d(2)": lambda lib, x: lib.nn.functional.avg_pool2d(x, 2),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--dtype", default="float32")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'op':16}{'shape':>18}{'what':>10}{'tp ms':>10}{'torch ms':>10}{'torch/tp':>10}")
    for name, pool in POOLS.items():
        for shape in SHAPES:
            a = rng.standard_normal(shape).astype(args.dtype)
            xt = tp.from_numpy(a.copy()).requires_grad_()
            with tp.no_grad():
                gshape = tuple(pool(tp, xt).shape)
            ga = rng.standard_normal(gshape).astype(args.dtype)
            cands = {"tp_step": _step(tp, pool, xt, tp.from_numpy(ga)),
                     "tp_fwd": _fwd(tp, pool, xt)}
            if torch is not None:
                xo = torch.from_numpy(a.copy()).requires_grad_()
                cands["torch_step"] = _step(torch, pool, xo, torch.from_numpy(ga))
                cands["torch_fwd"] = _fwd(torch, pool, xo)
            times = harness.alternating_rounds(cands, args.rounds, target=0.02)
            for what in ("step", "fwd"):
                t = float(np.median(times["tp_" + what])) * 1e3
                if torch is not None:
                    o = float(np.median(times["torch_" + what])) * 1e3
                    r = harness.median_ratio(times["torch_" + what], times["tp_" + what])
                    print(f"{name:16}{str(shape):>18}{what:>10}{t:10.3f}{o:10.3f}{r:10.2f}")
                else:
                    print(f"{name:16}{str(shape):>18}{what:>10}{t:10.3f}{'-':>10}{'-':>10}")


if __name__ == "__main__":
    main()
