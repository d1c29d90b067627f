"""asv suite: forward, VJP and JVP of every registered primitive.

``OPS`` maps each REGISTRY key to ``(make_inputs(n, dtype), fn)``; a test
(tests/test_benchmark_coverage.py) fails when a registered primitive has no
entry.  Forward, VJP and JVP are timed separately (HIPS/autograd's
``bench_numpy_vjps.py`` style), over size and dtype.

Run with asv (``cd benchmarks && asv machine --yes && asv run --python=same
--quick``, README's Speed section) or without it:
``python -m benchmarks.benchmarks.bench_ops`` from the repository root prints one table.
"""
import numpy as np

import tensorplay as tp
from tensorplay._ops.elementwise import (div_backward, div_backward_other, mul_backward,
                                         pow_backward_base, pow_backward_exponent,
                                         relu_backward, sigmoid_backward, sqrt_backward,
                                         tanh_backward)
from tensorplay._ops.nn import log_softmax_backward, nll_loss_backward
from tensorplay._ops.shape import check_index, getitem_backward

from .common import DTYPES, SIZES, array, square


def _one(lo=None, hi=None):
    return lambda n, d: (array((n,), d, lo, hi),)


def _two(lo=None, hi=None):
    return lambda n, d: (array((n,), d), array((n,), d, lo, hi))


def _three(lo=None, hi=None):
    return lambda n, d: (array((n,), d), array((n,), d, 0.5, 2.0), array((n,), d, lo, hi))


def _mat(n, d):
    return (array(square(n), d),)


def _classes(n, d):
    rows, c = max(1, n // 10), 10
    return (array((rows, c), d), tp.from_numpy(np.arange(rows) % c))


_KEY = check_index((slice(None, None, 2),), (2,))

OPS = {
    "neg": (_one(), lambda x: -x),
    "exp": (_one(), tp.exp),
    "log": (_one(0.5, 2.0), tp.log),
    "sqrt": (_one(0.5, 2.0), tp.sqrt),
    "tanh": (_one(), tp.tanh),
    "sigmoid": (_one(), tp.sigmoid),
    "relu": (_one(), tp.relu),
    "tanh_backward": (_two(-0.9, 0.9), tanh_backward),
    "sigmoid_backward": (_two(0.1, 0.9), sigmoid_backward),
    "relu_backward": (_two(), relu_backward),
    "mul_backward": (_two(), mul_backward),
    "div_backward": (_two(0.5, 2.0), div_backward),
    "sqrt_backward": (_two(0.5, 2.0), sqrt_backward),
    "div_backward_other": (_three(0.5, 2.0), div_backward_other),
    "pow_backward_base": (_three(-1.5, 1.5), pow_backward_base),
    "pow_backward_exponent": (_three(0.5, 2.0), pow_backward_exponent),
    "add": (_two(), tp.add),
    "sub": (_two(), tp.sub),
    "mul": (_two(), tp.mul),
    "div": (_two(0.5, 2.0), tp.div),
    "pow": (_two(0.5, 2.0), lambda a, b: tp.pow(b, a)),
    "where": (_two(), lambda a, b: tp.where(a > 0, a, b)),
    "sum": (_mat, lambda x: x.sum(dim=0)),
    "mean": (_mat, lambda x: x.mean(dim=1)),
    "matmul": (lambda n, d: (array(square(n // 10 or 1), d), array(square(n // 10 or 1), d)),
               tp.matmul),
    "reshape": (_mat, lambda x: x.T.reshape(-1)),
    "view": (_mat, lambda x: x.view(-1)),
    "permute": (_mat, lambda x: x.permute(1, 0)),
    "expand": (lambda n, d: (array((1, square(n)[1]), d),),
               lambda x: x.expand(x.shape[1], x.shape[1])),
    "getitem": (_one(), lambda x: x[::2]),
    "getitem_backward": (_one(), lambda g: getitem_backward(g, (2 * g.shape[0],), _KEY)),
    "stack": (_two(), lambda a, b: tp.stack([a, b])),
    "clone": (_one(), lambda x: x.clone()),
    "_to_copy": (_one(), lambda x: x.to(x.dtype, copy=True)),
    "log_softmax": (_mat, lambda x: x.log_softmax(1)),
    "log_softmax_backward": (lambda n, d: (array(square(n), d), array(square(n), d, -3, 0)),
                             lambda g, y: log_softmax_backward(g, y, 1)),
    "nll_loss": (_classes, tp.nn.functional.nll_loss),
    "nll_loss_backward": (lambda n, d: (array((), d),
                                        tp.from_numpy(np.arange(max(1, n // 10)) % 10)),
                          lambda g, t: nll_loss_backward(g, t, 10)),
}


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
