"""asv suite: a custom ``autograd.Function`` (a trivial op, exp) forward + backward.

``CustomExp.time_forward_backward`` applies ``Exp.apply`` to a float32 tensor
that requires grad and runs ``autograd.grad`` of its sum: the cost of the
Function machinery (ctx/node, saved tensors, the multi-output engine path)
around two tiny kernels.  ``time_builtin`` is the same with the built-in
``tp.exp``, the baseline the Function's overhead is read against.

Run directly for a one-run comparison with torch (same process, alternating
rounds, median of per-round ratios)::

    python benchmarks/benchmarks/bench_function.py
"""
import numpy as np

import tensorplay as tp

SIZES = [1, 100_000]


def make_exp(lib):
    """The custom exp Function of library ``lib`` (tensorplay or torch)."""
    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y
    return Exp


def _input(lib, n):
    a = np.random.default_rng(1234).standard_normal(n).astype(np.float32)
    x = lib.from_numpy(a)
    return x.requires_grad_()


def workloads(lib, n):
    """name -> zero-argument callable, for library ``lib`` at ``n`` elements."""
    Exp = make_exp(lib)
    x = _input(lib, n)
    grad = lib.autograd.grad
    return {"function": lambda: grad(Exp.apply(x).sum(), x),
            "builtin": lambda: grad(lib.exp(x).sum(), x)}


class CustomExp:
    """Custom Function exp, forward + ``autograd.grad``, float32."""
    params = [SIZES]
    param_names = ["n"]
    timeout = 10

    def setup(self, n):
        self.w = workloads(tp, n)

    def time_forward_backward(self, n):
        self.w["function"]()

    def time_builtin(self, n):
        self.w["builtin"]()


def main():
    """Print microseconds per call and the tp / torch median ratio per size."""
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    import harness
    libs = {"tensorplay": tp}
    try:
        import torch
        torch.set_num_threads(tp.get_num_threads())
        libs["torch"] = torch
    except ImportError:
        pass
    for n in SIZES:
        for kind in ("function", "builtin"):
            cands = {name: workloads(lib, n)[kind] for name, lib in libs.items()}
            times = harness.alternating_rounds(cands, 15, budget=20)
            line = "  ".join(f"{name} {np.median(t) * 1e6:9.1f} us"
                             for name, t in times.items())
            if "torch" in times:
                line += f"  tp/torch {harness.median_ratio(times['tensorplay'], times['torch']):.2f}"
            print(f"n={n:>7} {kind:9s} {line}")


if __name__ == "__main__":
    main()
