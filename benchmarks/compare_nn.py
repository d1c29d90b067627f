"""Losses and normalisation (issue 9) against torch, and the fused norm kernels
against compositions of tensorplay's own primitives.

Run from the repository root after building (``pip install -e .``)::

    python benchmarks/compare_nn.py [--rounds 30] [--threads 1]

Each case is forward + backward (``loss.backward()`` of ``(y * u).sum()`` for the
norms), float32, at the default thread settings.  tensorplay is imported before
torch; candidates alternate within each round; the figure printed is the median
over rounds of the per-round ratio tensorplay / torch (< 1: tensorplay faster)
and, for the norms, fused / composition.
"""
import argparse
import statistics
import time

import numpy as np

import tensorplay as tp
import torch  # noqa: E402  (after tensorplay, as the comparison scripts do)

F = tp.nn.functional
TF = torch.nn.functional


def _pair(shape, rng):
    a = rng.standard_normal(shape).astype(np.float32)
    return a


def _composed_bn(x, w, b, eps=1e-5):
    dims = (0,) + tuple(range(2, x.ndim))
    m = x.mean(dims, keepdim=True)
    xc = x - m
    v = (xc * xc).mean(dims, keepdim=True)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return xc * (v + eps).rsqrt() * w.reshape(shape) + b.reshape(shape)


def _composed_ln(x, w, b, eps=1e-5):
    m = x.mean(-1, keepdim=True)
    xc = x - m
    v = (xc * xc).mean(-1, keepdim=True)
    return xc * (v + eps).rsqrt() * w + b


def cases(rng):
    out = {}
    logits = rng.standard_normal((256, 10)).astype(np.float32)
    target = rng.integers(0, 10, 256)

    def ce(lib):
        if lib == "torch":
            x = torch.tensor(logits, requires_grad=True)
            t = torch.tensor(target)
            return lambda: TF.cross_entropy(x, t).backward()
        x = tp.tensor(logits, requires_grad=True)
        t = tp.tensor(target)
        return lambda: F.cross_entropy(x, t).backward()
    out["cross_entropy 256x10"] = ce

    def ce_smooth(lib):
        w = rng.uniform(0.5, 2, 10).astype(np.float32)
        if lib == "torch":
            x, t, ww = torch.tensor(logits, requires_grad=True), torch.tensor(target), \
                torch.tensor(w)
            return lambda: TF.cross_entropy(x, t, weight=ww, label_smoothing=0.1).backward()
        x, t, ww = tp.tensor(logits, requires_grad=True), tp.tensor(target), tp.tensor(w)
        return lambda: F.cross_entropy(x, t, weight=ww, label_smoothing=0.1).backward()
    out["cross_entropy 256x10 weight+smoothing"] = ce_smooth

    a, b = _pair((256, 128), rng), _pair((256, 128), rng)

    def mse(lib):
        L, fn = (torch, TF) if lib == "torch" else (tp, F)
        x, y = L.tensor(a, requires_grad=True), L.tensor(b)
        return lambda: fn.mse_loss(x, y).backward()
    out["mse_loss 256x128"] = mse

    def bcel(lib):
        L, fn = (torch, TF) if lib == "torch" else (tp, F)
        x, y = L.tensor(a, requires_grad=True), L.tensor((b > 0).astype(np.float32))
        return lambda: fn.binary_cross_entropy_with_logits(x, y).backward()
    out["bce_with_logits 256x128"] = bcel

    def linear(lib):
        L, fn = (torch, TF) if lib == "torch" else (tp, F)
        x = L.tensor(a, requires_grad=True)
        w = L.tensor(_pair((64, 128), rng), requires_grad=True)
        bb = L.tensor(_pair((64,), rng), requires_grad=True)
        return lambda: fn.linear(x, w, bb).sum().backward()
    out["linear 256x128 -> 64"] = linear

    for shape in ((64, 128), (32, 64, 16, 16)):
        c = shape[1]
        xa = _pair(shape, rng)
        ua = _pair(shape, rng)
        wa = rng.uniform(0.5, 1.5, c).astype(np.float32)
        ba = _pair((c,), rng)
        lshape = shape[-1:]
        lw = rng.uniform(0.5, 1.5, lshape).astype(np.float32)
        lb = _pair(lshape, rng)
        label = "x".join(map(str, shape))

        def bn(lib, composed=False, xa=xa, ua=ua, wa=wa, ba=ba, c=c):
            L, fn = (torch, TF) if lib == "torch" else (tp, F)
            x, u = L.tensor(xa, requires_grad=True), L.tensor(ua)
            w, bb = L.tensor(wa, requires_grad=True), L.tensor(ba, requires_grad=True)
            rm, rv = L.zeros(c), L.ones(c)
            if composed:
                return lambda: (_composed_bn(x, w, bb) * u).sum().backward()
            return lambda: (fn.batch_norm(x, rm, rv, w, bb, True) * u).sum().backward()

        def ln(lib, composed=False, xa=xa, ua=ua, lw=lw, lb=lb, lshape=lshape):
            L, fn = (torch, TF) if lib == "torch" else (tp, F)
            x, u = L.tensor(xa, requires_grad=True), L.tensor(ua)
            w, bb = L.tensor(lw, requires_grad=True), L.tensor(lb, requires_grad=True)
            if composed:
                return lambda: (_composed_ln(x, w, bb) * u).sum().backward()
            return lambda: (fn.layer_norm(x, lshape, w, bb) * u).sum().backward()
        out[f"batch_norm {label}"] = bn
        out[f"layer_norm {label}"] = ln
        if len(shape) == 4:
            def gn(lib, composed=False, xa=xa, ua=ua, wa=wa, ba=ba):
                L, fn = (torch, TF) if lib == "torch" else (tp, F)
                x, u = L.tensor(xa, requires_grad=True), L.tensor(ua)
                w, bb = L.tensor(wa, requires_grad=True), L.tensor(ba, requires_grad=True)
                return lambda: (fn.group_norm(x, 8, w, bb) * u).sum().backward()
            out[f"group_norm(8) {label}"] = gn
    return out


def _time(fn, reps):
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=25)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=None,
                    help="set both libraries' thread counts (default: their defaults)")
    args = ap.parse_args()
    if args.threads:
        tp.set_num_threads(args.threads)
        torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    print(f"{'case':42s} {'tp ms':>8s} {'torch ms':>9s} {'tp/torch':>9s} {'fused/composed':>15s}")
    for name, make in cases(rng).items():
        cands = {"tp": make("tp"), "torch": make("torch")}
        if name.startswith(("batch_norm", "layer_norm")):
            cands["composed"] = make("tp", composed=True)
        for fn in cands.values():          # warm up
            fn()
            fn()
        times = {k: [] for k in cands}
        for r in range(args.rounds):
            order = list(cands) if r % 2 == 0 else list(cands)[::-1]
            for k in order:
                times[k].append(_time(cands[k], args.reps))
        ratio = statistics.median(a / b for a, b in zip(times["tp"], times["torch"]))
        fused = ""
        if "composed" in times:
            r = statistics.median(a / b for a, b in zip(times["tp"], times["composed"]))
            fused = f"{r:.2f}"
        print(f"{name:42s} {statistics.median(times['tp']) * 1e3:8.3f} "
              f"{statistics.median(times['torch']) * 1e3:9.3f} {ratio:9.2f} {fused:>15s}",
              flush=True)


if __name__ == "__main__":
    main()
