"""Op-table rows of the scans (tensorplay/_ops/scan.py)."""
import hypothesis.strategies as st
import numpy as np

from tensorplay._ops.scan import linrec, scan_shift

from ._base import Fuzz, OpSpec, _normal, fixed_samples


def _with_zeros(rng, shape):
    """Normal samples with about a third of the entries exactly 0 (cumprod's hard case)."""
    a = rng.standard_normal(shape)
    return np.where(rng.random(shape) < 0.35, 0.0, a)


def _np_scan(fn):
    def ref(x, dim):
        return x.copy() if x.ndim == 0 else fn(x, axis=dim)
    return ref


def _np_shift(x, dim, by):
    if x.ndim == 0:
        return np.zeros_like(x)
    out = np.zeros_like(x)
    n = x.shape[dim]
    src = np.moveaxis(x, dim, 0)
    dst = np.moveaxis(out, dim, 0)
    if by > 0:
        dst[1:] = src[:n - 1]
    else:
        dst[:n - 1] = src[1:]
    return out


def _np_linrec(g, a, dim, reverse):
    """The recurrence written out in a Python loop over numpy rows."""
    if g.ndim == 0:
        return g.copy()
    g, a = np.moveaxis(g, dim, 0), np.moveaxis(a, dim, 0)
    out = np.zeros_like(g)
    n = g.shape[0]
    for j in (range(n - 1, -1, -1) if reverse else range(n)):
        prev = j + 1 if reverse else j - 1
        coef = a[j + 1] if reverse and j + 1 < n else a[j]
        out[j] = g[j] + (coef * out[prev] if 0 <= prev < n else 0)
    return np.moveaxis(out, 0, dim)


_SCAN_CASES = [("last", [(_normal, (3, 5))], {"dim": 1}),
               ("first", [(_normal, (3, 5))], {"dim": 0}),
               ("middle", [(_normal, (2, 3, 4))], {"dim": 1}),
               ("neg_dim", [(_normal, (2, 3, 4))], {"dim": -3}),
               ("1d", [(_normal, (6,))], {"dim": 0}),
               ("0d", [(_normal, ())], {"dim": 0}),
               ("empty", [(_normal, (0, 3))], {"dim": 0}),
               ("noncontig", [(_normal, (3, 4))], {"dim": 1})]

SPECS = [
    OpSpec("cumsum", lambda x, dim: x.cumsum(dim), _np_scan(np.cumsum),
           fixed_samples(*_SCAN_CASES),
           fuzz=Fuzz("cumsum", kinds="fib"),
           torch=lambda T, x, dim: x.cumsum(dim)),
    OpSpec("cumprod", lambda x, dim: x.cumprod(dim), _np_scan(np.cumprod),
           fixed_samples(*_SCAN_CASES,
                         ("zeros", [(_with_zeros, (4, 6))], {"dim": 1}),
                         ("zeros_dim0", [(_with_zeros, (6, 3))], {"dim": 0})),
           fuzz=Fuzz("cumprod", kinds="fib"),
           torch=lambda T, x, dim: x.cumprod(dim)),
]

_INTERNAL = "an internal primitive of cumprod's derivatives: no torch counterpart"
SPECS += [
    OpSpec("scan_shift", lambda x, dim, by: scan_shift(x, dim, by), _np_shift,
           fixed_samples(("right", [(_normal, (3, 5))], {"dim": 1, "by": 1}),
                         ("left", [(_normal, (3, 5))], {"dim": 0, "by": -1}),
                         ("0d", [(_normal, ())], {"dim": 0, "by": 1}),
                         ("noncontig", [(_normal, (3, 4))], {"dim": 1, "by": -1})),
           fuzz=Fuzz("scan_shift", kwargs=lambda draw, arrays: {
               "by": draw(st.sampled_from([-1, 1]))}), torch=_INTERNAL),
    OpSpec("linrec", lambda g, a, dim, reverse: linrec(g, a, dim, reverse), _np_linrec,
           fixed_samples(("fwd", [(_normal, (3, 5)), (_normal, (3, 5))],
                          {"dim": 1, "reverse": False}),
                         ("rev", [(_normal, (3, 5)), (_normal, (3, 5))],
                          {"dim": 1, "reverse": True}),
                         ("dim0", [(_normal, (4, 3)), (_normal, (4, 3))],
                          {"dim": 0, "reverse": True}),
                         ("zeros", [(_normal, (3, 6)), (_with_zeros, (3, 6))],
                          {"dim": 1, "reverse": False}),
                         ("0d", [(_normal, ()), (_normal, ())], {"dim": 0, "reverse": False}),
                         ("noncontig", [(_normal, (3, 4)), (_normal, (3, 4))],
                          {"dim": 1, "reverse": True})),
           fuzz=Fuzz("linrec", ("input", "coeffs")), torch=_INTERNAL),
]
