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


def test_model_benchmarks_run_once():
    # the whole-workload suite (time_ and peakmem_), the deep chain cut to 3 layers
    from benchmarks.benchmarks import bench_models
    mlp = bench_models.MLPStep()
    mlp.setup()
    mlp.time_step()
    grads = mlp._step()
    assert [g.shape for g in grads] == [p.shape for p in mlp.params]
    chain = bench_models.DeepChain()
    chain.layers = 3
    chain.setup()
    chain.peakmem_forward_backward()
    assert len(chain._forward_backward()) == 3
