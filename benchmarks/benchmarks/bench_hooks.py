"""asv suite: what hooks, saved-tensor hooks and anomaly mode cost on the
1-element forward + backward ``(a * b).sum().backward()``.

``plain`` is the loop with none of them (the engine's inline path: the features
must cost ~nothing here); ``tensor_hook`` registers a hook on the product and
``retain_grad`` retains its gradient, every iteration (the node then takes the
engine's general path); ``saved_hooks`` records inside an identity
``saved_tensors_hooks``; ``anomaly`` runs under ``detect_anomaly`` (a traceback
per recorded node, a NaN check per VJP result).

Run directly for a one-run comparison with torch (same process, alternating
rounds, median of per-round ratios)::

    python benchmarks/benchmarks/bench_hooks.py
"""
import contextlib
import warnings

import numpy as np

import tensorplay as tp

KINDS = ["plain", "tensor_hook", "retain_grad", "saved_hooks", "anomaly"]


def workloads(lib):
    """name -> zero-argument callable, for library ``lib`` (tensorplay or torch)."""
    a = lib.tensor([1.5], requires_grad=True)
    b = lib.tensor([2.0], requires_grad=True)

    def plain():
        (a * b).sum().backward()

    def tensor_hook():
        p = a * b
        p.register_hook(lambda g: None)
        p.sum().backward()

    def retain_grad():
        p = a * b
        p.retain_grad()
        p.sum().backward()

    hooks = lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)

    def saved_hooks():
        with hooks:
            s = (a * b).sum()
        s.backward()

    def anomaly():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.autograd.detect_anomaly():
                (a * b).sum().backward()

    return {"plain": plain, "tensor_hook": tensor_hook, "retain_grad": retain_grad,
            "saved_hooks": saved_hooks, "anomaly": anomaly}


class Hooks:
    """1-element ``(a * b).sum().backward()`` with each feature in use."""
    params = [KINDS]
    param_names = ["kind"]
    timeout = 10

    def setup(self, kind):
        self.fn = workloads(tp)[kind]

    def time_forward_backward(self, kind):
        self.fn()


def main():
    """Print microseconds per call and the tp / torch median ratio per kind."""
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    import harness
    libs = {"tensorplay": tp}
    with contextlib.suppress(ImportError):
        import torch
        torch.set_num_threads(tp.get_num_threads())
        libs["torch"] = torch
    for kind in KINDS:
        cands = {name: workloads(lib)[kind] for name, lib in libs.items()}
        times = harness.alternating_rounds(cands, 15, budget=20)
        line = "  ".join(f"{name} {np.median(t) * 1e6:8.1f} us" for name, t in times.items())
        if "torch" in times:
            line += f"  tp/torch {harness.median_ratio(times['tensorplay'], times['torch']):.2f}"
        print(f"{kind:12s} {line}")


if __name__ == "__main__":
    main()
