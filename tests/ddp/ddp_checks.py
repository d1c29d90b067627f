"""DistributedDataParallel on 2 or 3 ranks (run by tests/test_ddp.py).

Every reference is computed on each rank in one process: a copy of the model
(after DDP's broadcast, so the same parameters) differentiated on the full batch
in float64.  Prints "DDP checks OK <count>" per rank; any failure raises, and
tensorplay.distributed's abort hook ends the job with a non-zero status.
"""
import copy
import sys
from datetime import timedelta

import numpy as np

import tensorplay as tp
import tensorplay.distributed as dist
import tensorplay.nn.functional as F
from tensorplay import nn
from tensorplay.nn.parallel import DistributedDataParallel as DDP
from tensorplay.utils.data import DistributedSampler

dist.init_process_group("mpi", timeout=timedelta(seconds=20))
r, n = dist.get_rank(), dist.get_world_size()
assert n == int(sys.argv[1]), (n, sys.argv)
checks = 0


def close(what, a, b, rtol=1e-12, atol=1e-14):
    global checks
    a = a.detach().numpy() if hasattr(a, "numpy") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "numpy") else np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"rank {r}: {what}")
    checks += 1


def true(what, cond):
    global checks
    assert cond, f"rank {r}: {what}"
    checks += 1


def raises(what, fn, match):
    global checks
    try:
        fn()
    except RuntimeError as e:
        assert match in str(e), f"rank {r}: {what}: {e}"
        checks += 1
        return str(e)
    raise AssertionError(f"rank {r}: {what}: no RuntimeError")


def mlp():
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)).double()


def cnn():
    return nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(8, 3)).double()


def data(shape, size, seed=0):
    g = np.random.default_rng(seed)
    return (tp.from_numpy(g.standard_normal((size,) + shape)),
            tp.from_numpy(g.integers(0, 3, size)))


def grads(model):
    return [p.grad.numpy().copy() for p in model.parameters()]


def reference(model, x, y):
    """Gradients of the mean loss over (x, y) for a copy of ``model``."""
    ref = copy.deepcopy(model)
    ref.zero_grad()
    F.cross_entropy(ref(x), y).backward()
    return grads(ref)


def share(t, k=r, parts=n):
    return t[k::parts]


# ---- 1. construction broadcasts rank 0's state; gradients == full batch --------------
for make, shape in ((mlp, (6,)), (cnn, (1, 4, 4))):
    for cap, as_view in ((None, False), (1e-5, True)):      # one bucket; one per param
        tp.manual_seed(100 + r)                 # a different init on every rank
        model = make()
        ddp = DDP(model, bucket_cap_mb=cap, gradient_as_bucket_view=as_view)
        tp.manual_seed(100)
        rank0 = make()
        for p, q in zip(model.parameters(), rank0.parameters()):
            close("parameters broadcast from rank 0", p, q, 0, 0)
        true("bucket count", len(ddp.reducer.buckets) == (1 if cap is None else 4))
        x, y = data(shape, 6 * n)
        for step in range(2):                   # the second step re-uses the buckets
            ref = reference(model, x, y)
            model.zero_grad()
            F.cross_entropy(ddp(share(x), ), share(y)).backward()
            for a, b in zip(grads(model), ref):
                close(f"{make.__name__} DDP grad == full-batch grad (cap {cap})", a, b)
            true("bytes moved", ddp.reducer.bytes_last_round ==
                 8 * sum(p.numel() for p in model.parameters()))
            if as_view:
                p0 = next(model.parameters())
                true("grad is a bucket view",
                     np.shares_memory(p0.grad.numpy(), ddp.reducer.buckets[-1].flat.numpy()))
            with tp.no_grad():
                for p in model.parameters():
                    p -= 0.1 * p.grad
        true("state_dict keys", list(ddp.state_dict())[0].startswith("module.0."))

# ---- 2. the buckets start during backward: bucket 0 (last layer) before layer 0's grad
model = mlp()
ddp = DDP(model, bucket_cap_mb=1e-5)
seen = []
model[0].weight.register_hook(lambda g: seen.append(ddp.reducer.buckets[0].work is not None))
x, y = data((6,), 4 * n)
F.cross_entropy(ddp(share(x)), share(y)).backward()
true("bucket 0's all-reduce was running before layer 0's gradient existed", seen == [True])
raises("a second backward through one forward",
       lambda: F.cross_entropy(ddp(share(x)), share(y)).backward(retain_graph=True)
       or F.cross_entropy(model(share(x)), share(y)).backward(), "ready only once")

# ---- 3. no_sync: local accumulation, then one averaged sync --------------------------
model = mlp()
ddp = DDP(model)
micro = [data((6,), 2 * n, seed=s) for s in range(3)]
ref_sum = None
for x, y in micro:
    g = reference(model, x, y)
    ref_sum = g if ref_sum is None else [a + b for a, b in zip(ref_sum, g)]
model.zero_grad()
local = None
with ddp.no_sync():
    for x, y in micro[:2]:
        F.cross_entropy(ddp(share(x)), share(y)).backward()
        lg = reference(model, share(x), share(y))
        local = lg if local is None else [a + b for a, b in zip(local, lg)]
for a, b in zip(grads(model), local):
    close("inside no_sync the gradients are this rank's own", a, b)
x, y = micro[2]
F.cross_entropy(ddp(share(x)), share(y)).backward()
for a, b in zip(grads(model), ref_sum):
    close("no_sync accumulation then sync == sum of full-batch grads", a, b)

# ---- 4. unused parameters ------------------------------------------------------------


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(6, 3), nn.Linear(6, 3), nn.Linear(6, 3)

    def forward(self, x, use_b):        # c is never used; b only where use_b
        return self.a(x) + (self.b(x) if use_b else 0)


x, y = data((6,), 4 * n)
model = Branchy().double()
ddp = DDP(model, find_unused_parameters=True)
ref_model = copy.deepcopy(model)
F.cross_entropy(ddp(share(x), use_b=(r == 0)), share(y)).backward()
true("unused on every rank: .grad stays None", model.c.weight.grad is None)
# reference: a's grad averages every rank's share; b's only rank 0's share, over n
ga = 0
gb = 0
for k in range(n):
    ref_model.zero_grad()
    F.cross_entropy(ref_model(share(x, k), use_b=(k == 0)), share(y, k)).backward()
    ga = ga + ref_model.a.weight.grad.numpy() / n
    if k == 0:
        gb = ref_model.b.weight.grad.numpy() / n
close("used everywhere: averaged", model.a.weight.grad, ga)
close("used on rank 0 only: its gradient over n (zeros elsewhere)", model.b.weight.grad, gb)
model = Branchy().double()
ddp = DDP(model)
F.cross_entropy(ddp(share(x), use_b=False), share(y)).backward()
msg = raises("unused parameter without find_unused_parameters",
             lambda: ddp(share(x), use_b=False), "Expected to have finished reduction")
true("the error names the parameters", "b.weight" in msg and "c.bias" in msg
     and "find_unused_parameters=True" in msg)

# ---- 4b. a forward with grad on and no backward (evaluation outside no_grad) ---------
for find in (False, True):
    model = mlp()
    ddp = DDP(model, find_unused_parameters=find)
    x, y = data((6,), 4 * n, seed=3)
    ddp(share(x))                              # evaluated, never backpropagated
    ddp.eval()
    ddp(share(x))
    ddp.train()
    ref = reference(model, x, y)
    model.zero_grad()
    F.cross_entropy(ddp(share(x)), share(y)).backward()
    for a, b in zip(grads(model), ref):
        close(f"forward without backward, then a step (find_unused={find})", a, b)

# ---- 5. buffers: broadcast from rank 0 at construction and before each forward -------
for flag in (True, False):
    model = nn.Sequential(nn.Linear(6, 4), nn.BatchNorm1d(4)).double()
    with tp.no_grad():
        model[1].running_mean.fill_(float(r))
    ddp = DDP(model, broadcast_buffers=flag)
    close("buffers broadcast at construction", model[1].running_mean, np.zeros(4), 0, 0)
    starts = []
    model.register_forward_pre_hook(
        lambda m, inp: starts.append(m[1].running_mean.detach().numpy().copy()))
    for seed in range(2):
        x, y = data((6,), 4 * n, seed=10 + seed)
        F.cross_entropy(ddp(share(x)), share(y)).backward()
    ends = model[1].running_mean.detach().numpy()
    rank0_end = ends.copy()
    dist.broadcast(tp.from_numpy(rank0_end), src=0)
    if flag:
        t = tp.from_numpy(starts[1].copy())
        dist.broadcast(t, src=0)
        close("every rank started the 2nd forward from rank 0's running_mean", starts[1], t,
              0, 0)
    elif n > 1:
        true("broadcast_buffers=False: ranks drift apart",
             r == 0 or not np.allclose(ends, rank0_end))

# ---- 6. the shares of a dataset that does not divide: DistributedSampler's padding ---
N = 10                                   # 10 samples, 3 ranks: 4 each, 2 repeated
x, y = data((6,), N, seed=3)
model = mlp()
ddp = DDP(model)
idx = list(DistributedSampler(range(N), num_replicas=n, rank=r, shuffle=False))
F.cross_entropy(ddp(x[idx]), y[idx]).backward()
padded = [i for k in range(n) for i in
          DistributedSampler(range(N), num_replicas=n, rank=k, shuffle=False)]
for a, b in zip(grads(model), reference(model, x[padded], y[padded])):
    close("uneven dataset: grad == full batch of the padded index list", a, b)
# unequal local batches (no sampler): DDP averages the ranks' means, as torch does
sizes = [3 + k for k in range(n)]
start = sum(sizes[:r])
model.zero_grad()
xs, ys = x[start:start + sizes[r]], y[start:start + sizes[r]]
F.cross_entropy(ddp(xs), ys).backward()
mean_of_means = None
for k in range(n):
    s = sum(sizes[:k])
    g = reference(model, x[s:s + sizes[k]], y[s:s + sizes[k]])
    mean_of_means = [gi / n for gi in g] if mean_of_means is None else \
        [a + gi / n for a, gi in zip(mean_of_means, g)]
for a, b in zip(grads(model), mean_of_means):
    close("unequal local batches: the mean of the ranks' mean gradients", a, b)

# ---- 7. a rank whose model differs: every rank raises, naming it ----------------------
last = n - 1
odd = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 4 if r == last else 3))
msg = raises("parameter shape mismatch", lambda: DDP(odd), f"rank(s) [{last}]")
true("names the parameter and both shapes", "'2.weight' [4, 8]" in msg and "[3, 8]" in msg)
msg = raises("parameter count mismatch",
             lambda: DDP(nn.Linear(2, 2, bias=(r != last))), "parameters, while rank 0 has")

# ---- 8. the main job's training loop (examples/train_digits.py), one epoch, 2 ranks --
import importlib.util  # noqa: E402

if n == 2 and all(importlib.util.find_spec(m) for m in ("sklearn", "tqdm")):
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "examples" / "train_digits.py"
    spec = importlib.util.spec_from_file_location("train_digits", path)
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    digits = [a.astype(np.float64) if a.dtype.kind == "f" else a
              for a in ex.load_data(0)]
    kw = dict(epochs=1, batch_size=60, lr=3e-3, seed=0, image=False, cnn=False)
    tp.manual_seed(0)
    model = ex.make_mlp().double()
    start = copy.deepcopy(model)
    h = ex.train("MLP", DDP(model), digits, shard=(r, n), **kw)
    if r == 0:
        h1 = ex.train("MLP", start, digits, shard=(0, 1), **kw)
        close("example: losses of the global batches", h["steps"], h1["steps"], 1e-12)
        for a, b in zip(model.parameters(), start.parameters()):
            close("example: parameters after an epoch == one process's", a, b, 1e-10)
# ---- 9. a process group without global rank 0: ranks 1 and 2 of 3 ------------------
if n == 3:
    sub = dist.new_group([1, 2])
    if r in (1, 2):
        tp.manual_seed(200 + r)
        model = mlp()
        ddp = DDP(model, process_group=sub)
        tp.manual_seed(201)
        first = mlp()                        # the group's rank 0 is global rank 1
        for p, q in zip(model.parameters(), first.parameters()):
            close("subgroup: parameters broadcast from the group's first rank", p, q, 0, 0)
        x, y = data((6,), 8)
        F.cross_entropy(ddp(share(x, r - 1, 2)), share(y, r - 1, 2)).backward()
        for a, b in zip(grads(model), reference(model, x, y)):
            close("subgroup: grad == the group's full-batch grad", a, b)
print(f"rank {r}: DDP checks OK {checks}", flush=True)
dist.destroy_process_group()
