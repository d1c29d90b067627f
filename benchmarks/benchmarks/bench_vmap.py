"""asv suite: ``tensorplay.func.vmap`` against the Python loop it replaces.

* ``VmapMLP``: the forward pass of the 64 -> 128 (ReLU) -> 10 MLP, one example
  at a time inside vmap (batch 256, float32), vs the loop over examples.
* ``PerExampleGrads``: per-example gradients of that MLP's softmax cross-entropy
  with respect to its four parameters (batch 64): ``vmap`` of a function that
  calls ``autograd.grad``, vs the loop.
* ``GradsBatched``: ``autograd.grad(..., is_grads_batched=True)`` with 64
  cotangents (one batched backward pass) vs 64 backward passes.

``python -m benchmarks.benchmarks.bench_vmap`` prints medians of per-round ratios
against ``torch.func.vmap`` (same process, alternating rounds) when torch is
installed.
"""
import time

import numpy as np

import tensorplay as tp
from tensorplay.func._vmap import vmap

from .common import rng


def _mlp_params(lib=tp):
    r = rng()
    shapes = [(64, 128), (128,), (128, 10), (10,)]
    arrs = [(r.standard_normal(s) / np.sqrt(s[0])).astype(np.float32) for s in shapes]
    if lib is tp:
        return [tp.from_numpy(a) for a in arrs]
    return [lib.from_numpy(a) for a in arrs]


def _data(n, lib=tp):
    r = rng()
    x = r.standard_normal((n, 64)).astype(np.float32)
    onehot = np.eye(10, dtype=np.float32)[np.arange(n) % 10]
    return lib.from_numpy(x), lib.from_numpy(onehot)


def _forward(params, x):
    w1, b1, w2, b2 = params
    return tp.relu(x @ w1 + b1) @ w2 + b2


def _loss(params, x, onehot):
    return -(tp.log_softmax(_forward(params, x), -1) * onehot).sum()


def _example_grads(params, x, onehot):
    ps = [p.detach().requires_grad_() for p in params]
    with tp.enable_grad():
        return tp.autograd.grad(_loss(ps, x, onehot), ps)


class VmapMLP:
    """MLP forward, example by example: vmap vs loop (batch 256)."""
    params = ["vmap", "loop"]
    param_names = ["mode"]
    timeout = 60

    def setup(self, mode):
        self.p = _mlp_params()
        self.x, _ = _data(256)

    def time_forward(self, mode):
        if mode == "vmap":
            vmap(lambda xi: _forward(self.p, xi))(self.x)
        else:
            tp.stack([_forward(self.p, self.x[i]) for i in range(self.x.shape[0])])


class PerExampleGrads:
    """Per-example gradients of the MLP loss: vmap(grad) vs loop (batch 64)."""
    params = ["vmap", "loop"]
    param_names = ["mode"]
    timeout = 60

    def setup(self, mode):
        self.p = _mlp_params()
        self.x, self.y = _data(64)

    def time_grads(self, mode):
        if mode == "vmap":
            vmap(_example_grads, in_dims=(None, 0, 0))(self.p, self.x, self.y)
        else:
            per = [_example_grads(self.p, self.x[i], self.y[i]) for i in range(64)]
            [tp.stack(list(g)) for g in zip(*per)]


class GradsBatched:
    """``is_grads_batched=True`` (one pass) vs 64 backward passes."""
    params = ["batched", "loop"]
    param_names = ["mode"]
    timeout = 60

    def setup(self, mode):
        self.p = [p.requires_grad_() for p in _mlp_params()]
        self.x, _ = _data(32)
        self.v = tp.from_numpy(rng().standard_normal((64, 32, 10)).astype(np.float32))

    def time_vjps(self, mode):
        out = _forward(self.p, self.x)
        if mode == "batched":
            tp.autograd.grad(out, self.p, self.v, is_grads_batched=True)
        else:
            for i in range(64):
                tp.autograd.grad(out, self.p, self.v[i], retain_graph=True)


# ---------------------------------------------------------------- one-run comparison
def _median_ratios(fns, rounds=15):
    """Median over rounds of time(fn) / time(fns["torch"]), alternating calls."""
    times = {k: [] for k in fns}
    for f in fns.values():
        f()                                         # warm up
    for _ in range(rounds):
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    base = np.array(times["torch"])
    return {k: (float(np.median(np.array(v) / base)), float(np.median(v)) * 1e3)
            for k, v in times.items()}


def compare():
    import torch
    from torch.func import grad as tgrad, vmap as tvmap
    torch.set_num_threads(tp.get_num_threads())
    p, (x, y) = _mlp_params(), _data(256)
    tpar, (tx, ty) = _mlp_params(torch), _data(256, torch)

    def tforward(ps, xi):
        w1, b1, w2, b2 = ps
        return torch.relu(xi @ w1 + b1) @ w2 + b2

    def tloss(ps, xi, yi):
        return -(torch.log_softmax(tforward(ps, xi), -1) * yi).sum()
    print("MLP forward, batch 256 (time / torch.func.vmap; ms):")
    for k, (r, ms) in _median_ratios({
            "torch": lambda: tvmap(lambda xi: tforward(tpar, xi))(tx),
            "tensorplay vmap": lambda: vmap(lambda xi: _forward(p, xi))(x),
            "tensorplay loop": lambda: tp.stack([_forward(p, x[i]) for i in range(256)]),
    }).items():
        print(f"  {k:18s} {r:7.2f}  {ms:8.3f}")
    x64, y64, tx64, ty64 = x[:64], y[:64], tx[:64], ty[:64]
    print("per-example grads, batch 64 (time / torch.func.vmap(grad); ms):")
    for k, (r, ms) in _median_ratios({
            "torch": lambda: tvmap(tgrad(tloss), in_dims=(None, 0, 0))(tpar, tx64, ty64),
            "tensorplay vmap": lambda: vmap(_example_grads, in_dims=(None, 0, 0))(p, x64, y64),
            "tensorplay loop": lambda: [_example_grads(p, x64[i], y64[i]) for i in range(64)],
    }).items():
        print(f"  {k:18s} {r:7.2f}  {ms:8.3f}")


if __name__ == "__main__":
    compare()
