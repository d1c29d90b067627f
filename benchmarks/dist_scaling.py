"""Data-parallel scaling of the main job's models: time in all-reduce vs compute,
and bytes moved, per training step, at several rank counts.

Run from the repository root (needs mpi4py and mpiexec: ``pip install mpi4py mpich``)::

    python benchmarks/dist_scaling.py [--ranks 1 2 4] [--steps 60] [--json out.json]

The driver launches itself under ``mpiexec -n P`` for each P.  Each worker trains
the MLP and the CNN of examples/train_digits.py (Adam, random 8x8 images, global
batch 64 split over the ranks: strong scaling, as ``--distributed`` does) and
reports, as medians over ``--steps`` steps after a warm-up (the machine is shared
and noisy):

* ``compute``: one local step (forward, backward, optimiser) without DDP on the
  rank's share of the batch, wall time, and ``cpu``: its CPU time (all threads;
  less sensitive to the other jobs on a shared machine);
* ``ddp``: the same step with DistributedDataParallel;
* ``exposed``: the part of the DDP step spent waiting for the all-reduces at the
  end of backward (``Reducer.finish``), i.e. communication not hidden by overlap;
* ``allreduce``: one blocking all_reduce of the gradients' size, alone (median,
  and ``min``: the cost when both ranks happen to be on a core -- on a loaded
  machine the median mostly measures waiting for a descheduled peer);
* ``bytes``: gradient bytes per rank per step (the buckets), and the ring
  all-reduce's traffic per rank, 2 (P - 1) / P times that;
* ``bw``: the bus bandwidth of a 4 MiB float32 all_reduce, 2 (P - 1) / P * bytes /
  time (what the ring model's "bandwidth" means).

Ranks beyond the core count share cores (4 ranks on this 2-core machine): those
rows check correctness and show oversubscription, not scaling.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _models():
    import importlib.util
    spec = importlib.util.spec_from_file_location("train_digits",
                                                  ROOT / "examples" / "train_digits.py")
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    return {"MLP": (ex.make_mlp, (64,)), "CNN": (ex.make_cnn, (1, 8, 8))}


def _median_ms(samples):
    return 1e3 * statistics.median(samples)


def worker(steps, warmup, batch):
    import tensorplay as tp
    import tensorplay.distributed as dist
    from tensorplay.nn.parallel import DistributedDataParallel as DDP
    from tensorplay.nn.parallel import _reducer
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = batch // world
    rng = np.random.default_rng(rank)
    waits = []
    finish = _reducer.Reducer.finish

    def timed_finish(self):
        t0 = time.perf_counter()
        finish(self)
        waits.append(time.perf_counter() - t0)

    _reducer.Reducer.finish = timed_finish
    rows = {}
    for name, (make, shape) in _models().items():
        tp.manual_seed(0)
        x = tp.from_numpy(rng.random((local,) + shape, dtype=np.float32))
        y = tp.from_numpy(rng.integers(0, 10, local))
        loss_fn = tp.nn.CrossEntropyLoss()
        result = {}
        for mode in ("compute", "ddp"):
            model = make()
            net = DDP(model) if mode == "ddp" else model
            opt = tp.optim.Adam(model.parameters(), lr=1e-3)
            times, cpu = [], []
            waits.clear()
            for i in range(warmup + steps):
                dist.barrier()              # every rank starts the step together
                t0, c0 = time.perf_counter(), time.process_time()
                opt.zero_grad()
                loss_fn(net(x), y).backward()
                opt.step()
                times.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
            result[mode] = _median_ms(times[warmup:])
            result[mode + "_cpu"] = _median_ms(cpu[warmup:])
            if mode == "ddp":
                result["exposed"] = _median_ms(waits[warmup:])
                grad_bytes = net.reducer.bytes_last_round
        flat = tp.zeros(grad_bytes // 4)
        times = []
        for i in range(warmup + steps):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(flat)
            times.append(time.perf_counter() - t0)
        result["allreduce"] = _median_ms(times[warmup:])
        result["allreduce_min"] = 1e3 * min(times[warmup:])
        result["bytes"] = grad_bytes
        result["ring_bytes"] = int(2 * (world - 1) / world * grad_bytes)
        rows[name] = result
    big = tp.zeros(1024 * 1024)                     # 4 MiB float32
    times = []
    for i in range(3 + 10):
        dist.barrier()
        t0 = time.perf_counter()
        dist.all_reduce(big)
        times.append(time.perf_counter() - t0)
    t = statistics.median(times[3:])
    rows["bus_bw_GBps"] = (2 * (world - 1) / world * big.numel() * 4 / t / 1e9
                           if world > 1 else None)
    rows["world"] = world
    rows["threads"] = tp.get_num_threads()
    if rank == 0:
        print("RESULT " + json.dumps(rows), flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--batch", type=int, default=64, help="global batch (default 64)")
    p.add_argument("--json", default=None, help="also write the results here")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args.steps, args.warmup, args.batch)
    mpiexec = Path(sys.executable).parent / "mpiexec"
    mpiexec = str(mpiexec) if mpiexec.exists() else "mpiexec"
    results = []
    for n in args.ranks:
        cmd = [mpiexec, "-n", str(n), sys.executable, __file__, "--worker",
               "--steps", str(args.steps), "--warmup", str(args.warmup),
               "--batch", str(args.batch)]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                             env=dict(os.environ))
        line = [s for s in out.stdout.splitlines() if s.startswith("RESULT ")]
        if out.returncode or not line:
            sys.exit(f"{n} ranks failed:\n{out.stdout}\n{out.stderr}")
        results.append(json.loads(line[0][7:]))
    print(f"global batch {args.batch}, medians of {args.steps} steps (ms); "
          f"bytes per rank per step")
    print(f"{'model':5} {'P':>2} {'thr':>3} {'compute':>8} {'cpu':>7} {'ddp':>8} "
          f"{'ddp cpu':>7} {'exposed':>8} "
          f"{'allreduce':>9} {'min':>6} {'grad B':>8} {'ring B':>8} {'bus GB/s':>8}")
    for r in results:
        bw = r["bus_bw_GBps"]
        for name in ("MLP", "CNN"):
            m = r[name]
            print(f"{name:5} {r['world']:>2} {r['threads']:>3} {m['compute']:8.2f} "
                  f"{m['compute_cpu']:7.2f} {m['ddp']:8.2f} {m['ddp_cpu']:7.2f} "
                  f"{m['exposed']:8.3f} {m['allreduce']:9.3f} {m['allreduce_min']:6.3f} "
                  f"{m['bytes']:8d} {m['ring_bytes']:8d} "
                  f"{'-' if bw is None else f'{bw:.2f}':>8}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
