"""TransformerEncoderLayer forward + backward against torch, one library per
process (issue 9, attention).

    python benchmarks/compare_transformer.py --library tensorplay|torch [--steps 30]
        [--threads N] [--profile]

d_model 128, nhead 4, dim_feedforward 512, seq 64, batch 32 (batch_first), float32,
training mode (dropout 0.1), default threads; one step is ``layer(x)``, ``(y *
u).sum().backward()``.  Prints the median step time in ms over ``--steps`` steps
after 3 warm-up steps.  Run the two libraries in alternating fresh processes and
take the median of the per-pair ratios (see docs/DECISIONS.md, "Attention and
Transformer").  ``--profile`` prints cProfile's top entries (tensorplay).
"""
import argparse
import statistics
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--library", choices=("tensorplay", "torch"), default="tensorplay")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--threads", type=int, default=0, help="0: the library's default")
    a = ap.parse_args()
    if a.library == "torch":
        import torch as lib
    else:
        import tensorplay as lib
    if a.threads:
        lib.set_num_threads(a.threads)
    rng = np.random.default_rng(0)
    lib.manual_seed(0)
    layer = lib.nn.TransformerEncoderLayer(128, 4, 512, batch_first=True)
    x = lib.tensor(rng.standard_normal((32, 64, 128)).astype(np.float32), requires_grad=True)
    u = lib.tensor(rng.standard_normal((32, 64, 128)).astype(np.float32))

    def step():
        layer.zero_grad()
        x.grad = None
        (layer(x) * u).sum().backward()

    for _ in range(3):
        step()
    if a.profile:
        import cProfile
        import pstats
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(a.steps):
            step()
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(25)
        return
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    print(f"{a.library} {statistics.median(times) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
