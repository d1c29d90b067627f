"""The output cache (tensorplay/_pool.py) reuses an array only when nothing else
refers to it; results a user holds are never overwritten."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay import _pool

N = 300_000                       # float64: 2.4 MB, above the cache's 1 MiB floor
F64 = np.dtype(np.float64)

pytestmark = pytest.mark.skipif(not _pool._ENABLED, reason="cache disabled here")


def test_reuse_only_when_free():
    a = _pool.empty((N,), F64)
    b = _pool.empty((N,), F64)
    assert a is not b                              # a is still referenced
    a_id = id(a)
    del a
    assert id(_pool.empty((N,), F64)) == a_id      # free again: reused
    c = _pool.empty((N,), F64)
    view = c[::2]                                  # a view keeps its base alive
    c_id = id(c)
    del c
    assert id(_pool.empty((N,), F64)) != c_id
    del view, b


def test_small_arrays_bypass_the_cache():
    before = _pool.cached_bytes()
    _pool.empty((10,), F64)
    assert _pool.cached_bytes() == before


def test_results_held_by_the_user_are_never_overwritten():
    x = tp.from_numpy(np.linspace(-1, 1, N))
    y = x.exp()
    arr = (x * 2).numpy()             # the tensor is gone, its array is not
    expect_y, expect_arr = np.exp(x.numpy()), 2 * x.numpy()
    for _ in range(10):               # plenty of same-shaped outputs
        z = (x * 3 + 1).tanh()
    np.testing.assert_allclose(y.numpy(), expect_y, rtol=1e-15)
    np.testing.assert_array_equal(arr, expect_arr)
    np.testing.assert_allclose(z.numpy(), np.tanh(3 * x.numpy() + 1), rtol=1e-15)


def test_gradients_with_reuse_match_without(monkeypatch):
    x_np = np.random.default_rng(0).standard_normal(N)

    def run():
        x = tp.from_numpy(x_np.copy()).requires_grad_()
        total = None
        for _ in range(3):
            y = ((x * x).tanh() + x.exp() * 0.5).sum()
            (g,) = tp.autograd.grad(y, x)
            total = g.numpy().copy() if total is None else total + g.numpy()
        return total

    pooled = run()
    monkeypatch.setattr(_pool, "_ENABLED", False)
    plain = run()
    np.testing.assert_array_equal(pooled, plain)


def test_no_double_handout_across_threads():
    # a tiny switch interval makes the interpreter switch threads between almost
    # any two bytecodes, including between the refcount check and the return
    import sys
    import threading

    bad = []

    def worker(k):
        for _ in range(20000):
            a = _pool.empty((N,), F64)
            a[0] = k
            a[-1] = k
            for _ in range(3):        # room for a switch before the check
                pass
            if a[0] != k or a[-1] != k:
                bad.append(k)
            del a

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not bad


def test_bypassed_under_a_tracer():
    import sys
    sys.settrace(lambda *a: None)
    try:
        before = _pool.cached_bytes()
        _pool.empty((N + 7,), F64)
        assert _pool.cached_bytes() == before
    finally:
        sys.settrace(None)


def _total_cached():
    """Bytes of the arrays the cache holds, counted from its entries."""
    return sum(a.nbytes for bucket in _pool._cache.values() for a in bucket)


def test_many_shapes_stay_within_the_byte_cap(monkeypatch):
    # a program that walks through ever new shapes must not keep one entry each
    monkeypatch.setattr(_pool, "_CAP_BYTES", 8 * N * 8)        # room for 8 arrays
    _pool.clear()
    try:
        for k in range(50):
            _pool.empty((N + k,), F64)
            assert _pool.cached_bytes() == _total_cached() <= _pool._CAP_BYTES
        assert len(_pool._cache) <= 8
        # the most recent shapes are the ones kept
        assert ((N + 49,), F64) in _pool._cache and ((N,), F64) not in _pool._cache
    finally:
        _pool.clear()


def test_a_hit_makes_an_entry_recent(monkeypatch):
    monkeypatch.setattr(_pool, "_CAP_BYTES", 3 * N * 8)
    _pool.clear()
    try:
        for k in range(3):
            _pool.empty((N + k,), F64)          # entries 0, 1, 2; all free again
        _pool.empty((N,), F64)                  # a hit on entry 0
        _pool.empty((N + 3,), F64)              # full: the oldest, entry 1, goes
        assert ((N,), F64) in _pool._cache
        assert ((N + 1,), F64) not in _pool._cache
    finally:
        _pool.clear()


def test_a_weakly_referenced_array_is_never_handed_out_again():
    import weakref
    _pool.clear()
    a = _pool.empty((N,), F64)
    a[:] = 7.0
    ref = weakref.ref(a)
    del a
    b = _pool.empty((N,), F64)        # would have been the same array
    b[:] = -1.0
    if ref() is not None:             # the cache may still hold it: values unchanged
        assert ref() is not b and (ref() == 7.0).all()
    _pool.clear()


@pytest.mark.parametrize("value", ["abc", "", "nan", "inf", "-5"])
def test_bad_pool_size_setting_warns_and_uses_the_default(value):
    import subprocess
    import sys
    code = ("import warnings; warnings.simplefilter('always')\n"
            "import tensorplay, tensorplay._pool as p; print(p._CAP_BYTES)")
    env = dict(__import__("os").environ, TENSORPLAY_POOL_MB=value)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-1] == str(256 << 20)
    assert "TENSORPLAY_POOL_MB" in r.stderr and repr(value) in r.stderr
