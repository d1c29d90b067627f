"""Helpers for the scripts that tests/test_distributed.py runs under mpiexec.

Each script checks values against numpy on every rank and raises on a mismatch;
the abort hook of init_process_group then ends the job with a non-zero exit
status, which the test reports with the output.
"""
import numpy as np

import tensorplay

DTYPES = ("float32", "float64", "int64", "int32", "bool")


def value(rank, dtype, shape, seed=0):
    """Rank ``rank``'s deterministic array (every rank can compute every rank's)."""
    rng = np.random.default_rng(1000 * seed + rank)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith("int"):
        return rng.integers(-3, 4, shape).astype(dtype)
    return rng.uniform(0.5, 1.5, shape).astype(dtype)


def tensor(a):
    return tensorplay.tensor(np.array(a, copy=True))


class Checks:
    """Counts checks; ``equal`` compares a tensor with a numpy reference."""

    def __init__(self, rank):
        self.rank, self.n = rank, 0

    def equal(self, what, t, ref, rtol=None):
        got = t.numpy() if hasattr(t, "numpy") else np.asarray(t)
        ref = np.asarray(ref)
        assert got.dtype == ref.dtype, f"rank {self.rank}: {what}: dtype {got.dtype} vs {ref.dtype}"
        if rtol is None and got.dtype.kind == "f":
            rtol = 1e-5 if got.dtype == np.float32 else 1e-12
        if rtol:
            np.testing.assert_allclose(got, ref, rtol=rtol, err_msg=f"rank {self.rank}: {what}")
        else:
            np.testing.assert_array_equal(got, ref, err_msg=f"rank {self.rank}: {what}")
        self.n += 1

    def raises(self, what, exc, fn, match):
        try:
            fn()
        except exc as e:
            assert match in str(e), f"rank {self.rank}: {what}: message {str(e)!r} lacks {match!r}"
            self.n += 1
            return e
        raise AssertionError(f"rank {self.rank}: {what}: no {exc.__name__}")

    def true(self, what, cond):
        assert cond, f"rank {self.rank}: {what}"
        self.n += 1
