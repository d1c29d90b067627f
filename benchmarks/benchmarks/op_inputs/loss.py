"""Benchmark inputs of the losses (see bench_ops.OPS).  Every loss added in issue 9
is a composition (tensorplay/_ops/loss.py, nn_misc.py) or runs on the nll_loss
primitives benchmarked in core.py: no primitive of its own to time here; the
fwd+bwd comparisons with torch are in benchmarks/compare_nn.py."""
OPS = {}
