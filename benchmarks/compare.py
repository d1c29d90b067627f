"""Where tensorplay stands against PyTorch (and numpy), in one run.

    python benchmarks/compare.py            # full run, about 3 minutes
    python benchmarks/compare.py --quick    # shorter, noisier, under a minute
    python benchmarks/compare.py --help

Both libraries run at their default settings (no thread tuning by either):
that is what a user gets.  PyTorch is optional: without it (or with
``--no-torch``) the tensorplay and numpy columns are still printed.

Rows, all float32 unless said otherwise:

* ``tiny chain``: 1-element tensors, mul/add/tanh chain, forward +
  ``autograd.grad``, in microseconds per op (the per-op Python cost);
* ``exp tanh sigmoid add mul`` at 1M elements; ``sum()`` and ``sum(dim=0)`` of a
  2048x2048 float64 array; ``matmul`` 512^2 and 1024^2 in float32 and float64
  (numpy's BLAS as a reference);
* ``MLP step``: 64 -> 128 (ReLU) -> 10, batch 256, softmax cross-entropy, forward
  + ``autograd.grad`` w.r.t. the parameters (examples/train_digits.py's model);
* ``jvp fwd``/``jvp rev``: JVP of the MLP's logits w.r.t. its input, tensorplay's
  ``mode="forward"`` vs ``torch.func.jvp`` and ``mode="reversed"`` vs
  ``torch.autograd.functional.jvp``; ``hvp`` when tensorplay has
  ``autograd.functional.hvp``;
* ``fresh``: the MLP step and the forward-mode JVP again, each library in its
  own new Python process that imports only that library, idle and with one
  busy process spinning beside it (the setting that exposed the two-pools
  cliff of issue 5).

In-process rows time tensorplay, torch and numpy in alternating rounds and
report the median time of each and the median over rounds of the per-round
ratio; fresh-process rows alternate the processes round by round the same way.
Ratios are tensorplay's time over the other's: below 1, tensorplay is faster.
"target" and "met?" are issue 5's goals (tp/torch, except where a row says).
The machine is shared and noisy: read the ratios, not the absolute times.
"""
import argparse
import importlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field

import numpy as np

if __package__:                       # imported as benchmarks.compare (the tests)
    from . import harness
else:                                 # run as a script: harness.py sits beside it
    import harness

MODULES = {"tp": "tensorplay", "torch": "torch"}


@dataclass
class Result:
    """One table row: per-round seconds for each of tp/torch/numpy (any may be
    missing), the issue's target for tp/torch and how to read the row."""
    op: str
    size: str
    times: dict
    target: float = None
    per: int = 1                      # the times are divided by this (ops per call)
    notes: list = field(default_factory=list)

    def median(self, name):
        """Median seconds (per op if ``per``) of ``name``, or None if not timed."""
        return float(np.median(self.times[name])) / self.per if name in self.times else None

    def ratio(self, name):
        """Median per-round ratio tp / ``name``, or None if either is missing."""
        if "tp" in self.times and name in self.times:
            return harness.median_ratio(self.times["tp"], self.times[name])
        return None


# ------------------------------------------------------------------- in-process rows

def _from_numpy(libs, arrays):
    """Each library's tensors over (copies of) the same numpy arrays."""
    return {name: [lib.from_numpy(a.copy()) for a in arrays] for name, lib in libs.items()}


def array_row(op, size, shapes, dtype, fn, np_fn=None, target=None, traffic=False):
    """A row timing ``fn(lib, *tensors)`` in every library (and ``np_fn(*arrays)``).

    ``shapes`` are the seeded standard-normal inputs; with ``traffic`` the row
    also notes tensorplay's GB/s (inputs read plus one output written per call)
    against ``np.copyto`` of an array of the output's size (in cache or not, as
    the row's own arrays are)."""
    def build(libs):
        rng = np.random.default_rng(0)
        arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
        tensors = _from_numpy(libs, arrays)
        cands = {name: (lambda lib=lib, t=tensors[name]: fn(lib, *t))
                 for name, lib in libs.items()}
        if np_fn is not None:
            cands["numpy"] = lambda: np_fn(*arrays)
        moved = sum(a.nbytes for a in arrays) + arrays[0].nbytes
        return cands, {"traffic": (moved, arrays[0].nbytes)} if traffic else {}
    return op, size, build, target


def mlp_row(op, workload, target):
    """A row timing ``workload(lib, data)`` (a harness MLP function) per library."""
    def build(libs):
        data = {name: harness.mlp_setup(lib) for name, lib in libs.items()}
        return {name: (lambda lib=lib, d=data[name]: workload(lib, d))
                for name, lib in libs.items()}, {}
    return op, "64-128-10 b256", build, target


def _jvp_forward_row():
    """The forward-mode JVP row, with tensorplay's own forward pass timed beside
    it (issue 5: the JVP should cost at most 1.5x the forward pass)."""
    op, size, build_jvp, target = mlp_row(
        "jvp fwd", lambda lib, d: harness.mlp_jvp(lib, d, "forward"), 0.5)

    def build(libs):
        cands, extra = build_jvp(libs)
        data = harness.mlp_setup(libs["tp"])
        cands["tp forward pass"] = lambda: harness.mlp_logits(libs["tp"], data["consts"],
                                                              data["x"])
        return cands, extra
    return op, size, build, target


def _hvp_row():
    """Hessian-vector product of the MLP loss w.r.t. the parameters, if
    tensorplay has ``autograd.functional.hvp`` (torch's signature assumed)."""
    def build(libs):
        if not hasattr(libs["tp"].autograd.functional, "hvp"):
            return None, {"skip": "tensorplay.autograd.functional.hvp does not exist yet"}
        cands = {}
        for name, lib in libs.items():
            d = harness.mlp_setup(lib)
            loss = lambda *ps, lib=lib, d=d: lib.nn.functional.cross_entropy(  # noqa: E731
                harness.mlp_logits(lib, ps, d["x"]), d["targets"])
            v = tuple(lib.ones_like(p) for p in d["consts"])
            cands[name] = (lambda lib=lib, loss=loss, d=d, v=v:
                           lib.autograd.functional.hvp(loss, tuple(d["consts"]), v))
        return cands, {}
    return "hvp", "64-128-10 b256", build, None


FULL_SIZES = {"elementwise": 1_000_000, "square": 2048, "matmul": (512, 1024)}
TINY_SIZES = {"elementwise": 1000, "square": 64, "matmul": (32, 64)}   # the selftest's


def in_process_rows(sizes=FULL_SIZES):
    """(op, size, build(libs) -> (candidates, extras), target) for every
    in-process row, in table order; ``sizes`` as ``FULL_SIZES``."""
    f32, f64 = np.float32, np.float64
    n, m = sizes["elementwise"], sizes["square"]
    count = "1M" if n == 1_000_000 else str(n)
    yield ("tiny chain", f"1 elt, {harness.TINY_OPS} ops", _tiny_chain_build, 0.5)
    for name, target in (("exp", 0.4), ("tanh", 0.4), ("sigmoid", 1.0)):
        np_fn = getattr(np, name, None)                # numpy has no sigmoid
        yield array_row(name, count, [(n,)], f32,
                        lambda lib, x, name=name: getattr(lib, name)(x), np_fn, target)
    for name, np_fn in (("add", np.add), ("mul", np.multiply)):
        yield array_row(name, count, [(n,), (n,)], f32,
                        lambda lib, x, y, name=name: getattr(lib, name)(x, y), np_fn,
                        1.0, traffic=True)
    yield array_row("sum()", f"{m}^2 float64", [(m, m)], f64, lambda lib, a: a.sum(),
                    np.sum, 0.9)
    yield array_row("sum(dim=0)", f"{m}^2 float64", [(m, m)], f64,
                    lambda lib, a: a.sum(dim=0), lambda a: a.sum(axis=0), 0.5)
    for dtype in (f32, f64):
        for k in sizes["matmul"]:
            yield array_row("matmul", f"{k}^2 {np.dtype(dtype).name}", [(k, k), (k, k)],
                            dtype, lambda lib, a, b: a @ b, lambda a, b: a @ b, 0.85)
    yield mlp_row("MLP step", harness.mlp_step, 0.7)
    yield _jvp_forward_row()
    yield mlp_row("jvp rev", lambda lib, d: harness.mlp_jvp(lib, d, "reversed"), 1.0)
    yield _hvp_row()


def _tiny_chain_build(libs):
    """Candidates for the tiny chain: forward + autograd.grad on 1 element."""
    xs = {name: lib.ones(1, requires_grad=True) for name, lib in libs.items()}
    cands = {name: (lambda lib=lib, x=xs[name]: lib.autograd.grad(harness.tiny_chain(x), x))
             for name, lib in libs.items()}
    return cands, {"per": harness.TINY_OPS}


def run_in_process(libs, rounds, target, number, sizes, budget, min_rounds):
    """Time every in-process row (at most ``rounds`` rounds, no new round after
    ``budget`` seconds once ``min_rounds`` are done); returns the Results,
    skipped rows included."""
    results = []
    for op, size, build, goal in in_process_rows(sizes):
        cands, extras = build(libs)
        if cands is None:
            results.append(Result(op, size, {}, goal, notes=[f"skipped: {extras['skip']}"]))
            continue
        times = harness.alternating_rounds(cands, rounds, target, number, budget,
                                           min_rounds)
        res = Result(op, size, times, goal, per=extras.get("per", 1))
        if "traffic" in extras:
            res.notes.append(_bandwidth_note(res.median("tp"), *extras["traffic"]))
        if "tp forward pass" in times:
            r = harness.median_ratio(times["tp"], times.pop("tp forward pass"))
            res.notes.append(f"tp jvp fwd / tp forward pass = {r:.2f} (target <= 1.5: "
                             f"{_met(r, 1.5)})")
        results.append(res)
    return results


def _bandwidth_note(seconds, moved, nbytes):
    """tensorplay's GB/s on a memory-bound row against a copy of the same size."""
    gbs, copy = moved / seconds / 1e9, harness.copy_bandwidth(nbytes)
    met = "yes" if gbs >= 0.9 * copy else "NO"
    return (f"tp moves {gbs:.1f} GB/s = {gbs / copy:.2f} x np.copyto of {nbytes / 1e6:.3g} MB "
            f"({copy:.1f} GB/s; target >= 0.9: {met})")


# ---------------------------------------------------------------- fresh-process rows

def worker(name, timing):
    """Worker mode: import one library only, time the MLP step and the
    forward-mode JVP at its defaults (``timing``: keyword arguments of
    ``harness.median_of_calls``), print ``{"mlp": s, "jvp": s}`` as JSON."""
    lib = importlib.import_module(MODULES[name])
    data = harness.mlp_setup(lib)
    out = {key: harness.median_of_calls(fn, **timing)
           for key, fn in (("mlp", lambda: harness.mlp_step(lib, data)),
                           ("jvp", lambda: harness.mlp_jvp(lib, data, "forward")))}
    others = sorted(m for n, m in MODULES.items() if n != name and m in sys.modules)
    if others:
        raise SystemExit(f"the {name} worker must not import {others}")
    print(json.dumps(out))


def spawn_worker(name, loaded, timing, timeout=150):
    """Run one fresh worker process (with a busy process beside it if ``loaded``)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", name,
           "--timing", json.dumps(timing)]
    with harness.busy_process(loaded, max_seconds=timeout):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{name} worker failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_fresh(names, rounds, timing, loads=(False, True)):
    """Fresh-process rows: per round, for each of ``loads`` (idle, busy beside)
    one process per library, the library order alternating from round to round."""
    times = {(load, key): {n: [] for n in names} for load in loads
             for key in ("mlp", "jvp")}
    for r in range(rounds):
        for load in loads:
            for name in (names if r % 2 == 0 else names[::-1]):
                for key, t in spawn_worker(name, load, timing).items():
                    times[(load, key)][name].append(t)
    label = {"mlp": ("MLP step", 0.7), "jvp": ("jvp fwd", 0.5)}
    return [Result(f"fresh {label[key][0]}", "busy beside" if load else "idle",
                   times[(load, key)], label[key][1])
            for key in ("mlp", "jvp") for load in loads]


# ------------------------------------------------------------------------- printing

def _met(ratio, target):
    if ratio is None or target is None:
        return "-"
    return "yes" if ratio <= target else "NO"


def _time(seconds):
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    return f"{seconds * 1e3:.2f} ms"


def _ratio(r):
    return "-" if r is None else f"{r:.2f}"


def print_table(results, bandwidth, bandwidth_bytes):
    """The table, then the per-row notes and the bandwidth lines."""
    head = ["op", "size", "tp", "torch", "numpy", "tp/torch", "tp/numpy", "target", "met?"]
    rows = []
    for res in results:
        if not res.times:
            rows.append([res.op, res.size] + ["-"] * 7)
            continue
        rt = res.ratio("torch")
        rows.append([res.op, res.size, _time(res.median("tp")), _time(res.median("torch")),
                     _time(res.median("numpy")), _ratio(rt), _ratio(res.ratio("numpy")),
                     "-" if res.target is None else f"<= {res.target}",
                     _met(rt, res.target)])
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    line = lambda r: "  ".join(c.ljust(w) if i < 2 else c.rjust(w)  # noqa: E731
                               for i, (c, w) in enumerate(zip(r, widths)))
    print(line(head))
    print("-" * len(line(head)))
    for r in rows:
        print(line(r))
    print()
    print(f"copy bandwidth (np.copyto of {bandwidth_bytes >> 20} MB, read + write): "
          f"{bandwidth:.1f} GB/s")
    for res in results:
        for note in res.notes:
            print(f"{res.op} {res.size}: {note}")


def print_header(libs, settings):
    """Versions, thread counts, load average and time: what the numbers depend on."""
    tp = libs["tp"]
    torch = libs.get("torch")
    print(f"tensorplay {tp.__version__} ({tp.get_num_threads()} threads), numpy "
          f"{np.__version__}, torch "
          + (f"{torch.__version__} ({torch.get_num_threads()} threads)" if torch else
             "not used (not installed or --no-torch)"))
    print(f"python {platform.python_version()}, {os.cpu_count()} cpus, load average "
          f"{os.getloadavg()[0]:.2f}, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; {settings}")
    print()


# ----------------------------------------------------------------------------- main

SETTINGS = {
    # in process: at most `rounds` rounds (none new after `budget` s once
    # `min_rounds` are done), each measurement about `target` s or `number` calls;
    # fresh processes: `fresh_rounds` rounds, each worker timing each workload
    # as `harness.median_of_calls(**fresh)` says
    "full": dict(rounds=15, min_rounds=3, target=0.03, number=None, budget=4.0,
                 fresh_rounds=3,
                 fresh=dict(min_time=0.5, min_calls=20, warmup=2, max_time=1.0),
                 bandwidth_bytes=64 << 20, sizes=FULL_SIZES),
    "quick": dict(rounds=5, min_rounds=2, target=0.008, number=None, budget=0.5,
                  fresh_rounds=1,
                  fresh=dict(min_time=0.05, min_calls=5, warmup=2, max_time=0.3),
                  bandwidth_bytes=64 << 20, sizes=FULL_SIZES),
    # every code path once on small inputs, timings meaningless: what the tests run
    "selftest": dict(rounds=1, min_rounds=1, target=0.0, number=1, budget=None,
                     fresh_rounds=1,
                     fresh=dict(min_time=0.0, min_calls=1, warmup=0, max_time=0.0),
                     bandwidth_bytes=1 << 20, sizes=TINY_SIZES),
}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                epilog="Ratios are tensorplay's time / the other's "
                                       "(below 1: tensorplay is faster).")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="fewer rounds (under a minute)")
    mode.add_argument("--selftest", action="store_true",
                      help="run every row once on small inputs (seconds; the numbers mean "
                           "nothing), fresh processes for tensorplay only")
    p.add_argument("--no-torch", action="store_true", help="leave PyTorch out even if installed")
    p.add_argument("--no-fresh", action="store_true", help="skip the fresh-process rows")
    p.add_argument("--worker", choices=sorted(MODULES), help=argparse.SUPPRESS)
    p.add_argument("--timing", type=json.loads, default={}, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None):
    """Run the comparison (or, with ``--worker``, one fresh-process measurement)."""
    args = parse_args(argv)
    if args.worker:
        return worker(args.worker, args.timing)
    name = "selftest" if args.selftest else "quick" if args.quick else "full"
    s = SETTINGS[name]
    libs = {"tp": importlib.import_module("tensorplay")}
    if not args.no_torch and importlib.util.find_spec("torch") is not None:
        libs["torch"] = importlib.import_module("torch")
    print_header(libs, f"{name} run, {s['rounds']} rounds in process, "
                       f"{s['fresh_rounds']} of fresh processes")
    t0 = time.perf_counter()
    results = run_in_process(libs, s["rounds"], s["target"], s["number"], s["sizes"],
                             s["budget"], s["min_rounds"])
    t1 = time.perf_counter()
    if not args.no_fresh:
        # the selftest spawns only tensorplay workers: a fresh torch import takes seconds
        names = ["tp"] if args.selftest else list(libs)
        results += run_fresh(names, s["fresh_rounds"], s["fresh"])
    t2 = time.perf_counter()
    bandwidth = harness.copy_bandwidth(s["bandwidth_bytes"])
    print_table(results, bandwidth, s["bandwidth_bytes"])
    print(f"\n{t1 - t0:.0f} s in process, {t2 - t1:.0f} s in fresh processes; "
          f"ratios below 1: tensorplay is faster")
    return results


if __name__ == "__main__":
    main()
