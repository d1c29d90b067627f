"""Every registered primitive has a benchmark (DESIGN.md fixed point 2; numpy's
bench_ufunc raises on an unbenchmarked ufunc the same way)."""
import pathlib
import sys

import tensorplay as tp

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from benchmarks.benchmarks import bench_ops  # noqa: E402


def test_every_primitive_has_a_benchmark():
    missing = set(tp.REGISTRY) - set(bench_ops.OPS)
    assert not missing, f"registered primitives without a benchmark: {sorted(missing)}"
    assert not set(bench_ops.OPS) - set(tp.REGISTRY)


def test_every_benchmark_runs_once():
    # the suite's setup and timed calls work for every op (smallest size, both modes)
    for op in sorted(bench_ops.OPS):
        for cls, meth in ((bench_ops.Forward, "time_forward"), (bench_ops.VJP, "time_vjp"),
                          (bench_ops.JVP, "time_jvp")):
            b = cls()
            b.setup(op, bench_ops.SIZES[0], "float64")
            getattr(b, meth)(op, bench_ops.SIZES[0], "float64")
