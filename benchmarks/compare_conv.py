"""conv2d forward and forward+backward, tensorplay against torch, in one process.

Run from the repository root after building (``pip install -e .``)::

    python benchmarks/compare_conv.py              # default threads, 15 rounds
    python benchmarks/compare_conv.py --rounds 31 --threads 1

Shapes: the two layers of the digits CNN of the main job (batch 64: 1 -> 16
channels on 8x8, 16 -> 32 channels on 4x4, 3x3 kernels, padding 1) and a
mid-size layer (batch 32, 32 -> 64 channels on 32x32).  "fwd" is
``conv2d(x, w, b)``; "fwd+bwd" adds ``autograd.grad`` of the output with a fixed
cotangent with respect to the weight, the bias and -- except for the first
layer, whose input is data -- the input.  Candidates alternate round by round
(harness.alternating_rounds) and the printed ratio is the median over rounds of
tensorplay_time / torch_time (< 1: tensorplay faster).  tensorplay is imported
before torch (DESIGN.md: the order matters for the OpenMP runtimes).
"""
import argparse
import statistics

import numpy as np

import harness
import tensorplay as tp

try:
    import torch
except ImportError:          # torch is optional
    torch = None

SHAPES = [  # name, N, C, O, H, x requires grad
    ("digits conv1 64x1->16 8x8", 64, 1, 16, 8, False),
    ("digits conv2 64x16->32 4x4", 64, 16, 32, 4, True),
    ("mid 32x32->64 32x32", 32, 32, 64, 32, True),
]


def _workload(lib, x, w, b, g, x_grad, backward):
    F = lib.nn.functional
    params = (x, w, b) if x_grad else (w, b)

    def fwd():
        return F.conv2d(x, w, b, padding=1)

    def fwd_bwd():
        y = F.conv2d(x, w, b, padding=1)
        return lib.autograd.grad(y, params, g)
    return fwd_bwd if backward else fwd


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--dtype", default="float32")
    args = p.parse_args()
    if args.threads:
        tp.set_num_threads(args.threads)
        if torch is not None:
            torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    print(f"tensorplay threads {tp.get_num_threads()}, torch threads "
          f"{torch.get_num_threads() if torch else '-'}, {args.dtype}")
    print(f"{'shape':30s} {'pass':8s} {'tensorplay':>12s} {'torch':>12s} {'tp/torch':>9s}")
    for name, n, c, o, h, x_grad in SHAPES:
        arrs = [rng.standard_normal(s).astype(args.dtype)
                for s in ((n, c, h, h), (o, c, 3, 3), (o,), (n, o, h, h))]
        tpx = [tp.from_numpy(a.copy()) for a in arrs]
        for i, t in enumerate(tpx[:3]):
            if i or x_grad:
                t.requires_grad_()
        cands = {}
        for backward in (False, True):
            cands[("tp", backward)] = _workload(tp, *tpx, x_grad, backward)
            if torch is not None:
                thx = [torch.from_numpy(a.copy()) for a in arrs]
                for i, t in enumerate(thx[:3]):
                    if i or x_grad:
                        t.requires_grad_()
                cands[("torch", backward)] = _workload(torch, *thx, x_grad, backward)
        for backward in (False, True):
            sub = {k: v for k, v in cands.items() if k[1] == backward}
            times = harness.alternating_rounds(sub, args.rounds, target=0.05)
            tpt = statistics.median(times[("tp", backward)])
            if torch is not None:
                tht = statistics.median(times[("torch", backward)])
                ratio = statistics.median(a / b for a, b in zip(times[("tp", backward)],
                                                                times[("torch", backward)]))
                print(f"{name:30s} {'fwd+bwd' if backward else 'fwd':8s} "
                      f"{tpt * 1e6:10.1f}us {tht * 1e6:10.1f}us {ratio:9.2f}")
            else:
                print(f"{name:30s} {'fwd+bwd' if backward else 'fwd':8s} "
                      f"{tpt * 1e6:10.1f}us")


if __name__ == "__main__":
    main()
