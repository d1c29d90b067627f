"""Timing helpers and workloads shared by the ``benchmarks/compare*.py`` scripts.

This module imports only the standard library and numpy, so a worker process
that must load exactly one array library (tensorplay *or* torch) can import it.
The workloads take the library module as their first argument (``lib`` is
``tensorplay`` or ``torch``): tensorplay follows PyTorch's API, so one
definition serves both and the two always run the same computation.

Timing rules, for a shared and noisy machine:

* candidates are timed in *rounds*, every candidate once per round and the
  starting candidate rotating from round to round, so that a burst of load hits
  all of them alike;
* what is compared is the median over rounds of the per-round ratio, not the
  ratio of two medians taken at different moments;
* the garbage collector stays on (users have it on; autograd graphs make cycles).
"""
import contextlib
import statistics
import subprocess
import sys
import time

import numpy as np


# --------------------------------------------------------------------------- timing

def per_call(fn, number):
    """Seconds per call of ``fn()``, over ``number`` back-to-back calls."""
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def calibrate(fn, target):
    """How many calls of ``fn`` take about ``target`` seconds (at least 1).

    The first call is a warm-up and is not counted.
    """
    fn()
    number = 1
    while True:
        dt = per_call(fn, number) * number
        if dt >= target / 2 or number >= 1 << 20:
            return max(1, int(number * target / max(dt, 1e-9)))
        number *= 4


def alternating_rounds(candidates, rounds, target=0.02, number=None, budget=None,
                       min_rounds=3):
    """Per-round seconds per call of every candidate.

    Args:
        candidates (dict): name -> zero-argument callable.
        rounds (int): how many rounds at most; each times every candidate once.
        target (float): seconds one measurement should take (used to pick the
            number of calls per measurement for each candidate separately).
        number (int, optional): calls per measurement for every candidate,
            instead of calibrating.
        budget (float, optional): seconds after which no new round starts once
            ``min_rounds`` are done (a loaded machine makes every call slow).

    Returns:
        dict: name -> list of floats (seconds per call), one per round run.
    """
    start = time.perf_counter()
    names = list(candidates)
    numbers = {k: number or calibrate(candidates[k], target) for k in names}
    times = {k: [] for k in names}
    for r in range(rounds):
        if (budget is not None and r >= min_rounds
                and time.perf_counter() - start > budget):
            break
        for k in names[r % len(names):] + names[:r % len(names)]:
            times[k].append(per_call(candidates[k], numbers[k]))
    return times


def median_of_calls(fn, min_time=0.5, min_calls=10, warmup=3, max_time=None):
    """Median seconds of single calls of ``fn`` after ``warmup`` untimed calls.

    Times at least ``min_calls`` calls and at least ``min_time`` seconds, but
    stops after ``max_time`` seconds once 3 calls are timed (on a loaded
    machine one call can take a scheduler slice or many)."""
    for _ in range(warmup):
        fn()
    times, start = [], time.perf_counter()
    while True:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        elapsed = time.perf_counter() - start
        if len(times) >= min_calls and elapsed >= min_time:
            break
        if max_time is not None and len(times) >= 3 and elapsed >= max_time:
            break
    return statistics.median(times)


def median_ratio(a, b):
    """Median over rounds of ``a[i] / b[i]`` (two equally long lists of times)."""
    return statistics.median(x / y for x, y in zip(a, b))


def copy_bandwidth(nbytes=64 << 20, repeat=7):
    """The machine's memory bandwidth in GB/s, from ``np.copyto`` of an
    ``nbytes`` array into another, counting the bytes read plus the bytes
    written (STREAM's convention); best of ``repeat`` copies, both arrays
    touched beforehand so that no page fault is timed."""
    src = np.ones(nbytes // 8)
    dst = np.zeros_like(src)
    best = min(per_call(lambda: np.copyto(dst, src), 1) for _ in range(repeat))
    return 2 * src.nbytes / best / 1e9


# The busy process: one core's worth of pure-Python spinning that ends by itself
# after ``max_seconds`` even if nobody kills it.
_SPIN = "import time\nend = time.monotonic() + {0}\nwhile time.monotonic() < end:\n    pass\n"


@contextlib.contextmanager
def busy_process(enabled=True, max_seconds=120.0):
    """Run one CPU-bound child process for the duration of the ``with`` block.

    It spins a pure-Python loop (a machine that is not idle), is killed when the
    block ends, however it ends, and stops by itself after ``max_seconds`` in any
    case, so it is never left running.  With ``enabled=False`` it does nothing.
    Yields the ``subprocess.Popen`` (or None).
    """
    if not enabled:
        yield None
        return
    proc = subprocess.Popen([sys.executable, "-c", _SPIN.format(max_seconds)])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


# ------------------------------------------------------------------------- workloads

TINY_LINKS = 10
TINY_OPS = 3 * TINY_LINKS + 1          # mul, add, tanh per link, then sum


def tiny_chain(x):
    """The per-op overhead workload: ``TINY_LINKS`` links of mul, add and tanh on
    ``x`` (meant to be a 1-element tensor), then ``sum``: ``TINY_OPS`` ops."""
    y = x
    for _ in range(TINY_LINKS):
        y = (y * 1.01 + 0.1).tanh()
    return y.sum()


MLP_SIZES = (64, 128, 10)
MLP_BATCH = 256


def mlp_setup(lib, seed=0):
    """Seeded float32 data and parameters for the MLP 64 -> 128 (ReLU) -> 10 of
    ``examples/train_digits.py``, batch 256, as ``lib`` tensors.

    Returns:
        dict with ``params`` (w1 (64, 128), b1 (128,), w2 (128, 10), b2 (10,),
        requiring grad), ``consts`` (the same values, not requiring grad), ``x`` (256, 64), ``targets`` (256,) int64 class indices
        and ``v`` (256, 64), a tangent for JVPs with respect to ``x``.
    """
    rng = np.random.default_rng(seed)
    arrays = []
    for fan_in, fan_out in zip(MLP_SIZES[:-1], MLP_SIZES[1:]):
        arrays.append(rng.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in))
        arrays.append(np.zeros(fan_out))
    as32 = lambda a: lib.from_numpy(np.ascontiguousarray(a, dtype=np.float32))  # noqa: E731
    return {
        "params": [as32(a).requires_grad_() for a in arrays],
        "consts": [as32(a) for a in arrays],
        "x": as32(rng.uniform(0, 1, (MLP_BATCH, MLP_SIZES[0]))),
        "targets": lib.from_numpy(rng.integers(0, MLP_SIZES[-1], MLP_BATCH)),
        "v": as32(rng.standard_normal((MLP_BATCH, MLP_SIZES[0]))),
    }


def mlp_logits(lib, params, x):
    """Logits (N, 10) of the MLP for inputs x (N, 64)."""
    w1, b1, w2, b2 = params
    return lib.relu(x @ w1 + b1) @ w2 + b2


def mlp_step(lib, data):
    """One training step's autodiff work: forward, softmax cross-entropy and
    ``autograd.grad`` of the loss with respect to the four parameters."""
    loss = lib.nn.functional.cross_entropy(mlp_logits(lib, data["params"], data["x"]),
                                           data["targets"])
    return lib.autograd.grad(loss, data["params"])


def mlp_jvp(lib, data, mode="forward"):
    """JVP of the logits with respect to ``x`` along ``v``, the parameters held
    constant (detached, as in the example).

    ``mode="forward"``: tensorplay's ``functional.jvp(mode="forward")``, torch's
    ``torch.func.jvp``; ``mode="reversed"``: the double-backward trick,
    tensorplay's ``functional.jvp(mode="reversed")`` and
    ``torch.autograd.functional.jvp`` (which has no other mode).  Returns ``(logits, jvp)``.
    """
    consts = data["consts"]
    f = lambda x: mlp_logits(lib, consts, x)  # noqa: E731
    if lib.__name__ != "torch":
        return lib.autograd.functional.jvp(f, data["x"], data["v"], mode=mode)
    if mode == "forward":
        import torch.func
        return torch.func.jvp(f, (data["x"],), (data["v"],))
    return lib.autograd.functional.jvp(f, data["x"], data["v"])   # always reversed
