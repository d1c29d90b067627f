"""asv suite: one optimiser ``step()`` (``time_step``), and a same-process
comparison with ``torch.optim`` (run this file).

Workloads, float32, gradients set once in ``setup`` (so only the update is timed):

* ``mlp``: the parameters of examples/train_digits.py's MLP -- (64, 128), (128,),
  (128, 10), (10,): four small tensors, so the per-parameter Python work counts;
* ``1M``: one parameter vector of 1,000,000 elements, memory-bound.

``python -m benchmarks.benchmarks.bench_optim`` (from the repository root)
imports tensorplay, then torch, and prints for each optimiser and workload the
median over alternating rounds of the per-round time ratio tensorplay / torch
(< 1: tensorplay faster), against torch's default path (single-tensor,
``foreach=False`` on CPU) and against ``foreach=True``.
"""
import numpy as np

import tensorplay as tp
from tensorplay import optim

from .common import rng

WORKLOADS = {"mlp": [(64, 128), (128,), (128, 10), (10,)], "1M": [(1_000_000,)]}
OPTIMIZERS = {"SGD": dict(lr=0.01, momentum=0.9), "Adam": dict(lr=1e-3),
              "AdamW": dict(lr=1e-3, weight_decay=0.01), "RMSprop": dict(lr=1e-3),
              "Adagrad": dict(lr=1e-2), "NAdam": dict(lr=2e-3), "RAdam": dict(lr=1e-3),
              "Adamax": dict(lr=2e-3), "Adadelta": dict(lr=1.0), "ASGD": dict(lr=1e-2),
              "Rprop": dict(lr=1e-2)}


def _arrays(workload):
    r = rng()
    return [(r.standard_normal(s).astype(np.float32), r.standard_normal(s).astype(np.float32))
            for s in WORKLOADS[workload]]


def make(lib, optim_mod, name, workload, **extra):
    """An optimiser of ``lib`` (tensorplay or torch) over the workload's
    parameters with gradients set, after one warm-up step (state allocated)."""
    params = []
    for value, grad in _arrays(workload):
        p = lib.tensor(value, requires_grad=True)
        p.grad = lib.tensor(grad)
        params.append(p)
    opt = getattr(optim_mod, name)(params, **OPTIMIZERS[name], **extra)
    opt.step()
    return opt


class OptimizerStep:
    """``opt.step()`` of each optimiser on each workload."""
    params = (list(OPTIMIZERS), list(WORKLOADS))
    param_names = ("optimizer", "workload")
    timeout = 30

    def setup(self, name, workload):
        self.opt = make(tp, optim, name, workload)

    def time_step(self, name, workload):
        self.opt.step()


def compare(rounds=31, names=tuple(OPTIMIZERS)):
    """Print median per-round ratios tensorplay / torch of one ``step()``."""
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from harness import alternating_rounds, median_ratio
    import torch
    torch.set_num_threads(tp.get_num_threads())
    print(f"threads: {tp.get_num_threads()}; median of per-round ratios over {rounds} "
          f"alternating rounds (< 1: tensorplay faster)")
    for name in names:
        for workload in WORKLOADS:
            ours = make(tp, optim, name, workload)
            theirs = make(torch, torch.optim, name, workload)
            theirs_fe = make(torch, torch.optim, name, workload, foreach=True)
            t = alternating_rounds({"tp": ours.step, "torch": theirs.step,
                                    "torch_foreach": theirs_fe.step}, rounds, target=0.05)
            print(f"{name:8s} {workload:4s} tp {np.median(t['tp']) * 1e6:9.1f} us  "
                  f"torch {np.median(t['torch']) * 1e6:9.1f} us  "
                  f"ratio {median_ratio(t['tp'], t['torch']):5.2f}  "
                  f"vs foreach {median_ratio(t['tp'], t['torch_foreach']):5.2f}")


if __name__ == "__main__":
    compare()
