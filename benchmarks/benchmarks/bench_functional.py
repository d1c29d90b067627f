"""asv suite: ``autograd.functional`` and ``tensorplay.func`` on an MLP-ish function.

Both libraries run the same code (tensorplay follows PyTorch's API), so each
class is parametrised over ``lib`` ("tensorplay", "torch"; torch is skipped when
it is not installed):

* ``HVP``: the Hessian-vector product of ``f(x) = sum(softplus(W2 tanh(W1 x)))``,
  ``x`` of 100 or 1000 float64 elements -- ``functional.hvp`` (tensorplay:
  forward-over-reverse; torch: the double-backward trick), ``functional.vhp``,
  ``func.jvp(func.grad(f))`` and, as the yardstick, three plain forward passes.
* ``Jacobian``: the (16, n) Jacobian of ``g(x) = W2 tanh(W1 x)`` --
  ``functional.jacobian`` with ``vectorize=True`` and as the loop, and
  ``func.jacrev``.

``python -m benchmarks.benchmarks.bench_functional`` from the repository root
times the two libraries in alternating rounds in one process and prints the
medians of the per-round ratios (the numbers quoted in docs/DECISIONS.md).
"""
import numpy as np

import tensorplay as tp

from .common import rng

SIZES = [100, 1000]
LIBS = ["tensorplay", "torch"]
HIDDEN, OUT = 64, 16


def _lib(name):
    if name == "tensorplay":
        return tp
    try:
        import torch
    except ImportError:
        raise NotImplementedError("torch is not installed") from None   # asv: skip
    return torch


def _weights(lib, n):
    r = rng()
    w1 = r.standard_normal((HIDDEN, n)) / np.sqrt(n)
    w2 = r.standard_normal((OUT, HIDDEN)) / np.sqrt(HIDDEN)
    x, v = r.standard_normal(n), r.standard_normal(n)
    return [lib.tensor(a, dtype=lib.float64) for a in (w1, w2, x, v)]


def _functions(lib, w1, w2):
    def g(x):                            # R^n -> R^16
        return w2 @ (w1 @ x).tanh()

    def f(x):                            # R^n -> R, a smooth scalar
        return lib.nn.functional.softplus(g(x)).sum()
    return f, g


class HVP:
    """Hessian-vector products of a scalar MLP-ish function vs three forward passes."""
    params = [SIZES, LIBS]
    param_names = ["n", "lib"]
    timeout = 60

    def setup(self, n, lib):
        self.lib = _lib(lib)
        w1, w2, self.x, self.v = _weights(self.lib, n)
        self.f, _ = _functions(self.lib, w1, w2)

    def time_hvp(self, n, lib):
        self.lib.autograd.functional.hvp(self.f, self.x, self.v)

    def time_vhp(self, n, lib):
        self.lib.autograd.functional.vhp(self.f, self.x, self.v)

    def time_func_jvp_of_grad(self, n, lib):
        self.lib.func.jvp(self.lib.func.grad(self.f), (self.x,), (self.v,))

    def time_three_forward(self, n, lib):
        with self.lib.no_grad():
            self.f(self.x)
            self.f(self.x)
            self.f(self.x)


class Jacobian:
    """The (16, n) Jacobian of an MLP-ish map: one batched call vs the loop."""
    params = [SIZES, LIBS]
    param_names = ["n", "lib"]
    timeout = 60

    def setup(self, n, lib):
        self.lib = _lib(lib)
        w1, w2, self.x, _ = _weights(self.lib, n)
        _, self.g = _functions(self.lib, w1, w2)

    def time_jacobian_vectorized(self, n, lib):
        self.lib.autograd.functional.jacobian(self.g, self.x, vectorize=True)

    def time_jacobian_loop(self, n, lib):
        self.lib.autograd.functional.jacobian(self.g, self.x)

    def time_func_jacrev(self, n, lib):
        self.lib.func.jacrev(self.g)(self.x)


def main(rounds=15):
    """Print the medians over alternating rounds of the ratios quoted in the docs."""
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    import harness
    have_torch = True
    try:
        import torch  # noqa: F401
    except ImportError:
        have_torch = False
    for n in SIZES:
        cases = {}
        for cls in (HVP, Jacobian):
            for lib in LIBS if have_torch else LIBS[:1]:
                b = cls()
                b.setup(n, lib)
                for meth in dir(cls):
                    if meth.startswith("time_"):
                        cases[f"{lib}.{cls.__name__}.{meth[5:]}"] = (
                            lambda b=b, m=getattr(b, meth): m(n, lib))
        t = harness.alternating_rounds(cases, rounds, target=0.05)
        med = {k: float(np.median(v)) for k, v in t.items()}
        print(f"n = {n}: median ms per call")
        for k in sorted(med):
            print(f"  {k:45s} {med[k] * 1e3:9.3f}")

        def ratio(a, b):
            return harness.median_ratio(t[a], t[b])
        print(f"  ratios (median over {rounds} rounds):")
        rows = [("tp hvp / tp three forward", "tensorplay.HVP.hvp", "tensorplay.HVP.three_forward"),
                ("tp func.jvp(grad) / tp three forward", "tensorplay.HVP.func_jvp_of_grad",
                 "tensorplay.HVP.three_forward"),
                ("tp hvp / tp vhp", "tensorplay.HVP.hvp", "tensorplay.HVP.vhp"),
                ("tp jacobian vectorized / tp loop", "tensorplay.Jacobian.jacobian_vectorized",
                 "tensorplay.Jacobian.jacobian_loop")]
        if have_torch:
            rows += [("torch hvp / torch three forward", "torch.HVP.hvp", "torch.HVP.three_forward"),
                     ("tp hvp / torch hvp", "tensorplay.HVP.hvp", "torch.HVP.hvp"),
                     ("tp hvp / torch.func jvp(grad)", "tensorplay.HVP.hvp",
                      "torch.HVP.func_jvp_of_grad"),
                     ("tp func.jvp(grad) / torch.func jvp(grad)", "tensorplay.HVP.func_jvp_of_grad",
                      "torch.HVP.func_jvp_of_grad"),
                     ("tp jacobian vectorized / torch.func.jacrev",
                      "tensorplay.Jacobian.jacobian_vectorized", "torch.Jacobian.func_jacrev"),
                     ("tp jacobian vectorized / torch vectorized",
                      "tensorplay.Jacobian.jacobian_vectorized",
                      "torch.Jacobian.jacobian_vectorized"),
                     ("tp func.jacrev / torch.func.jacrev", "tensorplay.Jacobian.func_jacrev",
                      "torch.Jacobian.func_jacrev")]
        for label, a, b in rows:
            print(f"    {label:45s} {ratio(a, b):7.2f}")


if __name__ == "__main__":
    main()
