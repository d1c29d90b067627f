"""Benchmark inputs of the scans (see bench_ops.OPS)."""
import tensorplay as tp

from ._base import _mat

OPS = {
    "cumsum": (_mat, lambda x: tp.cumsum(x, 1)),
    "cumprod": (_mat, lambda x: tp.cumprod(x, 0)),
}

from tensorplay._ops.scan import linrec, scan_shift  # noqa: E402

OPS.update({
    "scan_shift": (_mat, lambda x: scan_shift(x, 1, 1)),
    "linrec": (lambda n, d: _mat(n, d) * 2, lambda g, a: linrec(g, a, 1)),
})
