"""asv suite: forward, VJP and JVP of every registered primitive.

``OPS`` maps each REGISTRY key (collected from one module per op family in
``op_inputs/``) to ``(make_inputs(n, dtype), fn)``; a test
(tests/test_benchmark_coverage.py) fails when a registered primitive has no
entry.  Forward, VJP and JVP are timed separately (HIPS/autograd's
``bench_numpy_vjps.py`` style), over size and dtype.

Run with asv (``cd benchmarks && asv machine --yes && asv run --python=same
--quick``, README's Speed section) or without it:
``python -m benchmarks.benchmarks.bench_ops`` from the repository root prints one table.
"""
import importlib
import pkgutil

import numpy as np

import tensorplay as tp

from . import op_inputs
from .common import DTYPES, SIZES


def _collect():
    """``OPS`` of every family module in benchmarks/benchmarks/op_inputs/."""
    ops = {}
    for mod in sorted(m.name for m in pkgutil.iter_modules(op_inputs.__path__)):
        if not mod.startswith("_"):
            family = importlib.import_module(f"{op_inputs.__name__}.{mod}").OPS
            clash = set(ops) & set(family)
            if clash:
                raise ValueError(f"op_inputs/{mod}.py: benchmarks defined twice: {sorted(clash)}")
            ops.update(family)
    return ops


OPS = _collect()



def _float_inputs(inputs):
    return [i for i, t in enumerate(inputs) if t.is_floating_point()]


class _OpBench:
    params = [sorted(OPS), SIZES, DTYPES]
    param_names = ["op", "n", "dtype"]
    timeout = 30

    def _build(self, op, n, dtype, requires_grad):
        make, fn = OPS[op]
        inputs = list(make(n, dtype))
        for i in _float_inputs(inputs):
            inputs[i] = inputs[i].detach().requires_grad_(requires_grad)
        return inputs, fn


class Forward(_OpBench):
    def setup(self, op, n, dtype):
        self.inputs, self.fn = self._build(op, n, dtype, False)

    def time_forward(self, op, n, dtype):
        self.fn(*self.inputs)


class VJP(_OpBench):
    def setup(self, op, n, dtype):
        inputs, fn = self._build(op, n, dtype, True)
        self.diff = [inputs[i] for i in _float_inputs(inputs)]
        self.out = fn(*inputs)
        self.u = tp.ones_like(self.out)

    def time_vjp(self, op, n, dtype):
        tp.autograd.grad(self.out, self.diff, self.u, retain_graph=True, allow_unused=True)


class JVP(_OpBench):
    def setup(self, op, n, dtype):
        self.inputs, fn = self._build(op, n, dtype, False)
        self.idx = _float_inputs(self.inputs)
        self.v = tuple(tp.ones_like(self.inputs[i]) for i in self.idx)

        def f(*diff):
            args = list(self.inputs)
            for i, t in zip(self.idx, diff):
                args[i] = t
            return fn(*args)
        self.f = f

    def time_jvp(self, op, n, dtype):
        tp.autograd.functional.jvp(self.f, tuple(self.inputs[i] for i in self.idx), self.v,
                                   mode="forward")


def main():
    """One table of medians without asv (microseconds)."""
    import timeit
    print(f"{'op':22}{'n':>9}{'dtype':>9}{'forward':>11}{'vjp':>11}{'jvp':>11}")
    for op in sorted(OPS):
        for n in SIZES:
            for dtype in DTYPES:
                row = []
                for cls, meth in ((Forward, "time_forward"), (VJP, "time_vjp"),
                                  (JVP, "time_jvp")):
                    b = cls()
                    b.setup(op, n, dtype)
                    call = getattr(b, meth)
                    number = 200 if n < 10_000 else 5
                    row.append(np.median([timeit.timeit(lambda: call(op, n, dtype),
                                                        number=number) / number
                                          for _ in range(5)]))
                print(f"{op:22}{n:>9}{dtype:>9}" + "".join(f"{t * 1e6:11.1f}" for t in row))


if __name__ == "__main__":
    main()
