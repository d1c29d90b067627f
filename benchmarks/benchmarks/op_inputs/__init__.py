"""Benchmark inputs per op family: each module defines ``OPS``, a dict from a
REGISTRY key to ``(make_inputs(n, dtype), fn)``; bench_ops.py collects them."""
