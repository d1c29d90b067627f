"""One thread budget: matmul's BLAS runs on tensorplay's threads, pinned to one
thread per call, and the OpenMP runtime starts with passive waiting.

Values are checked against numpy.matmul; thread behaviour through the BLAS's own
thread setting (openblas_get_num_threads) and fresh interpreters for the
import-time environment handling.  No timings (speed is shown by benchmarks).
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import _blas
from tensorplay._kernels import linalg as _kl

needs_blas = pytest.mark.skipif(not _blas.load(), reason="numpy's BLAS symbols not found")
RTOL = {np.float32: 2e-5, np.float64: 1e-12}


def _layouts(rng, m, k, n, dtype):
    """(a, b) pairs covering row-major, column-major, sliced and vector operands."""
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    return [
        (a, b),
        (np.asfortranarray(a), b),
        (a, np.asfortranarray(b)),
        (a[::2], b),                                 # row stride 2 k
        (a[:, ::2], b[::2]),                         # no unit stride: copied
        (a[:1], b), (a[:, :1], b[:1]),               # size-1 dims, arbitrary strides
        (a[0], b), (a, b[:, 0]), (a[0], b[:, 0]),    # 1-D operands
    ]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mkn", [(7, 5, 3), (300, 200, 100), (40, 2000, 3), (3, 64, 900)])
def test_matmul_layouts_match_numpy(dtype, mkn):
    rng = np.random.default_rng(0)
    for a, b in _layouts(rng, *mkn, dtype):
        got = (tp.from_numpy(a) @ tp.from_numpy(b)).numpy()
        want = a @ b
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=RTOL[dtype], atol=RTOL[dtype] * 10)


@pytest.mark.parametrize("shapes", [((4, 30, 20), (4, 20, 10)), ((4, 30, 20), (20, 10)),
                                    ((30, 20), (4, 20, 10)), ((1, 30, 20), (4, 20, 10)),
                                    ((4, 30, 20), (1, 20, 10)), ((2, 3, 5, 4), (3, 4, 6)),
                                    ((2, 1, 5, 4), (3, 4, 6)), ((64, 9, 8), (8, 7))])
def test_batched_matmul_matches_numpy(shapes):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shapes[0])
    b = rng.standard_normal(shapes[1])
    np.testing.assert_allclose((tp.from_numpy(a) @ tp.from_numpy(b)).numpy(), a @ b,
                               rtol=1e-12, atol=1e-12)
    at = np.swapaxes(a, -1, -2).copy()          # transposed batch views
    np.testing.assert_allclose((tp.from_numpy(at).mT @ tp.from_numpy(b)).numpy(), a @ b,
                               rtol=1e-12, atol=1e-12)


@needs_blas
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_threads_agree(dtype):
    """Row-split, column-split and batch-parallel GEMMs give one thread's result."""
    rng = np.random.default_rng(2)
    for sa, sb in [((1, 600, 300), (1, 300, 400)), ((1, 16, 500), (1, 500, 3000)),
                   ((6, 200, 200), (6, 200, 200))]:
        a = rng.standard_normal(sa).astype(dtype)
        b = rng.standard_normal(sb).astype(dtype)
        outs = []
        for nt in (1, 2, 3):
            out = np.empty((sa[0], sa[1], sb[2]), dtype)
            assert _kl.gemm(a, b, out, nt)
            outs.append(out)
        np.testing.assert_allclose(outs[0], a @ b, rtol=RTOL[dtype], atol=RTOL[dtype] * 50)
        for out in outs[1:]:
            np.testing.assert_allclose(out, outs[0], rtol=RTOL[dtype], atol=RTOL[dtype] * 50)


@needs_blas
def test_gemm_rejects_bad_arguments():
    a = np.ones((1, 3, 4))
    with pytest.raises(ValueError, match="shapes"):
        _kl.gemm(a, np.ones((1, 5, 2)), np.empty((1, 3, 2)), 1)
    with pytest.raises(ValueError, match="dtypes"):
        _kl.gemm(a, np.ones((1, 4, 2), np.float32), np.empty((1, 3, 2)), 1)
    with pytest.raises(ValueError, match="C-contiguous"):
        _kl.gemm(a, np.ones((1, 4, 2)), np.empty((1, 2, 3)).transpose(0, 2, 1), 1)
    no_unit_stride = np.ones((1, 6, 8))[:, ::2, ::2]          # (1, 3, 4)
    assert not _kl.gemm(no_unit_stride, np.ones((1, 4, 2)), np.empty((1, 3, 2)), 1)


@needs_blas
def test_matmul_leaves_the_blas_thread_setting_alone():
    """The pin is undone after every product; pins nest."""
    before = _kl.blas_threads()
    x = tp.randn(300, 300)
    _ = x @ x
    assert _kl.blas_threads() == before
    with pytest.raises(RuntimeError):
        tp.randn(3, 4) @ tp.randn(5, 2)
    assert _kl.blas_threads() == before
    _kl.pin()
    _kl.pin()
    assert _kl.blas_threads() == 1
    _kl.unpin()
    assert _kl.blas_threads() == 1
    _kl.unpin()
    assert _kl.blas_threads() == before


def test_matmul_gradients_through_blas_path():
    """VJPs of transposed and batched products (mT views reach BLAS uncopied)."""
    a = tp.randn(5, 7, 3, dtype=tp.float64, requires_grad=True)
    b = tp.randn(3, 4, dtype=tp.float64, requires_grad=True)
    assert tp.autograd.gradcheck(lambda a, b: a @ b, (a, b))
    assert tp.autograd.gradgradcheck(lambda a, b: a @ b, (a, b))


def _fresh(code, **env):
    full = dict(os.environ)
    for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "TENSORPLAY_BLAS"):
        full.pop(k, None)
    full.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full, check=True).stdout.split()


STATUS = ("import os, tensorplay; from tensorplay._kernels import _omp_env; "
          "print(_omp_env.STATUS.split()[0], os.environ.get('OMP_WAIT_POLICY', '-'))")


def test_passive_wait_is_set_for_the_runtime_only():
    """tensorplay starts OpenMP with passive waiting and leaves os.environ as it was."""
    assert _fresh(STATUS) == ["passive", "-"]


def test_users_wait_policy_wins():
    assert _fresh(STATUS, OMP_WAIT_POLICY="active") == ["left", "active"]


def test_numpy_fallback_matches():
    """TENSORPLAY_BLAS=numpy forces numpy.matmul (the path for a BLAS without the
    symbols tensorplay looks for)."""
    code = ("import numpy as np, tensorplay as tp; from tensorplay import _blas; "
            "a = np.arange(12.).reshape(3, 4); b = np.arange(8.).reshape(4, 2); "
            "print(_blas.load(), float(np.abs((tp.from_numpy(a) @ tp.from_numpy(b))"
            ".numpy() - a @ b).max()))")
    assert _fresh(code, TENSORPLAY_BLAS="numpy") == ["False", "0.0"]


@pytest.mark.parametrize("shapes", [((2, 3, 0), (0, 4)), ((2, 3, 4), (4, 0)), ((2, 3, 0), (0,)),
                                    ((0, 3, 4), (4, 5)), ((0, 3, 4), (4, 0)), ((3, 0), (0, 2))])
def test_matmul_with_empty_dims_matches_numpy(shapes):
    """Size-0 inner or output dims give numpy's (zero-filled or empty) result."""
    a, b = np.ones(shapes[0]), np.ones(shapes[1])
    got = (tp.from_numpy(a) @ tp.from_numpy(b)).numpy()
    want = a @ b
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- Python threads
def _train(seed, dtype, steps=25, batch=256, hidden=256):
    """SGD on a 128-hidden-10 tanh MLP from numpy's seeded generator (not
    tensorplay's process-wide one, which threads would share).  Big enough that
    every kind of kernel runs threaded: at the default sizes the products (8.4M
    multiply-adds, split over OpenMP threads), the elementwise ops and the sum
    behind ``mean`` on 65,536 elements.  Every fifth step also takes a forward-mode JVP (a dual level
    is per thread).  Returns the final parameters, the losses and the JVPs."""
    from tensorplay.autograd.functional import jvp
    rng = np.random.default_rng(seed)
    tdt = tp.float32 if dtype == np.float32 else tp.float64
    x = tp.from_numpy(rng.standard_normal((batch, 128)).astype(dtype))
    y = tp.from_numpy(rng.integers(0, 10, batch))
    v = tp.from_numpy(rng.standard_normal((batch, 128)).astype(dtype))
    params = [tp.from_numpy((rng.standard_normal((128, hidden)) * 0.1).astype(dtype)),
              tp.zeros(hidden, dtype=tdt),
              tp.from_numpy((rng.standard_normal((hidden, 10)) * 0.1).astype(dtype)),
              tp.zeros(10, dtype=tdt)]
    for p in params:
        p.requires_grad_()

    def logits(inp, w1, b1, w2, b2):
        h = (inp @ w1 + b1).tanh()
        return h @ w2 + b2, h

    losses, jvps = [], []
    for step in range(steps):
        out, h = logits(x, *params)
        loss = tp.nn.functional.cross_entropy(out, y) + (h * h).mean() * 1e-3
        grads = tp.autograd.grad(loss, params)
        with tp.no_grad():
            for p, g in zip(params, grads):
                p.sub_(g * 0.1)
        losses.append(loss.item())
        if step % 5 == 0:
            detached = [p.detach() for p in params]
            _, jv = jvp(lambda inp: logits(inp, *detached)[0], x, v, mode="forward")
            jvps.append(jv.numpy().copy())
    return [p.detach().numpy().copy() for p in params], losses, jvps


def _assert_identical(got, want):
    (gp, gl, gj), (wp, wl, wj) = got, want
    assert gl == wl
    for a, b in zip(gp + gj, wp + wj):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def _in_threads(jobs):
    """Run each ``(fn, args)`` in its own thread, started together; their
    results in order (a thread's exception is raised here)."""
    import threading
    barrier = threading.Barrier(len(jobs))
    results = [None] * len(jobs)

    def run(i, fn, args):
        try:
            barrier.wait()
            results[i] = ("ok", fn(*args))
        except BaseException as e:      # noqa: BLE001 -- handed to the main thread
            results[i] = ("error", e)
    threads = [threading.Thread(target=run, args=(i, fn, args))
               for i, (fn, args) in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a training thread hung"
    for status, value in results:
        if status == "error":
            raise value
    return [value for _, value in results]


def test_concurrent_trainings_are_bit_identical_to_trainings_alone():
    """Two Python threads training independent models (one float32, one
    float64) at once give bit for bit what each gives alone: no shared state
    between them (grad mode and dual levels are per thread, the array cache
    hands an array to one caller at a time) and no kernel whose result depends
    on what else runs.  Batch and hidden size 512, so that the activations (1 and
    2 MB) come from that cache.  Three concurrent rounds, to give a race a
    chance."""
    jobs = [(_train, (1, np.float32, 8, 512, 512)), (_train, (2, np.float64, 8, 512, 512))]
    alone = [fn(*args) for fn, args in jobs]
    from tensorplay import _pool
    assert _pool.cached_bytes() > 0 or not _pool._ENABLED    # the cache is in play
    for _ in range(3):
        together = _in_threads(jobs)
        for got, want in zip(together, alone):
            _assert_identical(got, want)


def test_set_num_threads_from_another_thread_during_training():
    """``set_num_threads`` flipped between 1, 2 and 3 by a second thread in a
    loop while a training runs: no crash or hang, and the results agree with the
    same training on one thread to float round-off.  Not bit for bit: a matrix
    product is split into one single-threaded BLAS call per thread, and the
    BLAS's blocking (hence its rounding) depends on the block's size, so
    matmul -- forward and both VJPs -- can change in the last bits with the
    thread count.  The reductions (sum, mean, log_softmax, cross_entropy) are
    bit-identical for every thread count by design (fixed-size chunks, added in
    order: _kernels/reduce.pyx), and so are the elementwise kernels."""
    import threading
    before = tp.get_num_threads()
    try:
        tp.set_num_threads(1)
        ref32, ref64 = _train(3, np.float32), _train(4, np.float64)
        stop = threading.Event()
        flips = [0]

        def flipper():
            # stop.wait, not a busy loop: a thread spinning in Python would take
            # the GIL from the training for a whole switch interval per op
            while not stop.wait(0.0002):
                tp.set_num_threads(1 + flips[0] % 3)
                flips[0] += 1

        def train_then_stop():
            try:
                return _train(3, np.float32), _train(4, np.float64)
            finally:
                stop.set()
        got32, got64 = _in_threads([(train_then_stop, ()), (flipper, ())])[0]
        assert flips[0] > 10                 # the setter really ran during training
    finally:
        tp.set_num_threads(before)
    for (gp, gl, gj), (wp, wl, wj), tol in ((got32, ref32, 1e-5), (got64, ref64, 1e-12)):
        np.testing.assert_allclose(gl, wl, rtol=tol)
        for a, b in zip(gp + gj, wp + wj):
            assert a.dtype == b.dtype
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
