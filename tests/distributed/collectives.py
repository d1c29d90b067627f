"""Every collective against numpy, on 2 or 3 ranks (run by tests/test_distributed.py)."""
import os
import sys
from datetime import timedelta

import numpy as np
from _common import DTYPES, Checks, tensor, value

import tensorplay
import tensorplay.distributed as dist

C = Checks(-1)
n = int(sys.argv[1])
C.raises("before init", ValueError, lambda: dist.get_rank(), "not been initialized")
C.raises("all_reduce before init", ValueError, lambda: dist.all_reduce(tensorplay.ones(1)),
         "not been initialized")
C.raises("gloo", ValueError, lambda: dist.init_process_group("gloo"), "only backend is 'mpi'")
C.raises("world_size", ValueError, lambda: dist.init_process_group(world_size=n + 1),
         f"world_size={n + 1}, but MPI's world has {n}")
C.raises("rank", ValueError, lambda: dist.init_process_group(rank=n), f"rank={n}")
os.environ["WORLD_SIZE"] = "7"
C.raises("torchrun env", ValueError, lambda: dist.init_process_group(),
         "from the WORLD_SIZE environment variable")
del os.environ["WORLD_SIZE"]
C.true("not initialized after errors", not dist.is_initialized())
dist.init_process_group("mpi", timeout=timedelta(seconds=20))
r = dist.get_rank()
C.rank = r
C.true("is_initialized", dist.is_initialized())
C.true("backend", dist.get_backend() == "mpi")
C.true("world", n == int(sys.argv[1]))

# ---------------------------------------------------------------- all_reduce
R = dist.ReduceOp
NP_OPS = {R.SUM: np.sum, R.PRODUCT: np.prod, R.MAX: np.max, R.MIN: np.min,
          R.AVG: np.mean, R.BAND: np.bitwise_and.reduce, R.BOR: np.bitwise_or.reduce,
          R.BXOR: np.bitwise_xor.reduce}
BOOL = {R.SUM: np.any, R.MAX: np.any, R.BOR: np.any, R.PRODUCT: np.all, R.MIN: np.all,
        R.BAND: np.all, R.BXOR: lambda a, axis: np.logical_xor.reduce(a, axis=axis)}


def reference(op, dtype, shape, seed):
    stack = np.stack([value(k, dtype, shape, seed) for k in range(n)])
    if dtype == "bool":
        return BOOL[op](stack, axis=0)
    return NP_OPS[op](stack, axis=0).astype(dtype)


seed = 0
for dtype in DTYPES:
    for op in NP_OPS:
        floating = dtype.startswith("float")
        if (op == R.AVG and not floating) or (op in (R.BAND, R.BOR, R.BXOR) and floating) \
                or (dtype == "bool" and op == R.AVG):
            continue
        for async_op in (False, True):
            seed += 1
            shape = (3, 4) if async_op else (5,)
            t = tensor(value(r, dtype, shape, seed))
            v0 = t._version[0]
            w = dist.all_reduce(t, op=op, async_op=async_op)
            if async_op:
                C.true("wait returns True", w.wait() is True and w.is_completed())
            else:
                C.true("sync returns None", w is None)
            C.equal(f"all_reduce {op.name} {dtype} async={async_op}", t,
                    reference(op, dtype, shape, seed))
            C.true("version bumped", t._version[0] == v0 + 1)

# non-contiguous: written back into the view (and its base)
base = tensor(value(r, "float64", (4, 3), 50))
view = base.t()
dist.all_reduce(view)
C.equal("all_reduce transposed view", base, reference(R.SUM, "float64", (4, 3), 50))
base = tensor(value(r, "float32", (6,), 51))
dist.all_reduce(base[::2], op=R.MAX)
ref = value(r, "float32", (6,), 51)
ref[::2] = reference(R.MAX, "float32", (6,), 51)[::2]
C.equal("all_reduce strided view", base, ref)
# requires_grad: written in place (as PyTorch), graph untouched
x = tensorplay.ones(3, requires_grad=True)
dist.all_reduce(x)
C.equal("all_reduce leaf requiring grad", x.detach(), np.full(3, n, np.float32))
C.true("still a leaf", x.requires_grad and x.grad_fn is None)
y = x * 2
dist.all_reduce(y)
C.true("non-leaf keeps grad_fn", y.grad_fn is not None)
C.equal("all_reduce non-leaf", y.detach(), np.full(3, 2 * n * n, np.float32))
# a scalar and an empty tensor
s = tensorplay.tensor(float(r))
dist.all_reduce(s)
C.equal("0-d", s, np.float32(sum(range(n))))
e = tensorplay.zeros(0)
dist.all_reduce(e)
C.true("empty", e.shape == (0,))

# ---------------------------------------------------------------- broadcast
for src in range(n):
    for dtype in DTYPES:
        t = tensor(value(r, dtype, (2, 3), 60 + src))
        w = dist.broadcast(t, src=src, async_op=src % 2 == 1)
        if w is not None:
            w.wait()
        C.equal(f"broadcast src={src} {dtype}", t, value(src, dtype, (2, 3), 60 + src))
base = tensor(value(r, "int64", (3, 2), 70))
dist.broadcast(base.t(), src=n - 1)
C.equal("broadcast into a view", base, value(n - 1, "int64", (3, 2), 70))

# ---------------------------------------------------------------- local errors
C.raises("src outside", ValueError, lambda: dist.broadcast(tensorplay.ones(1), src=n),
         "src=")
ints = tensorplay.ones(2, dtype=tensorplay.int64)
C.raises("AVG int", RuntimeError, lambda: dist.all_reduce(ints, op=R.AVG), "AVG")
C.raises("BAND float", RuntimeError, lambda: dist.all_reduce(tensorplay.ones(2), op=R.BAND),
         "non-integral")
C.raises("op str", TypeError, lambda: dist.all_reduce(tensorplay.ones(2), op="sum"), "ReduceOp")
C.raises("not a tensor", TypeError, lambda: dist.all_reduce(np.ones(2)), "Tensor")
C.raises("read-only", RuntimeError,
         lambda: dist.all_reduce(tensorplay.ones(1).expand(3)), "read-only")
C.raises("twice", ValueError, lambda: dist.init_process_group("mpi"), "twice")

import more  # noqa: E402

more.run(C, r, n)
dist.barrier()
dist.barrier(async_op=True).wait()
dist.monitored_barrier(timeout=timedelta(seconds=10))
dist.destroy_process_group()
C.true("destroyed", not dist.is_initialized())
C.raises("after destroy", ValueError, lambda: dist.get_rank(), "not been initialized")
print(f"rank {r}: {C.n} checks OK", flush=True)
