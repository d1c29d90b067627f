"""The collectives beyond all_reduce/broadcast, point-to-point, objects, groups
and the DETAIL check; ``run`` is called by collectives.py inside its process group."""
import os
import warnings
from datetime import timedelta

import numpy as np
from _common import Checks, tensor, value

import tensorplay
import tensorplay.distributed as dist

R = dist.ReduceOp


def ranks_stack(dtype, shape, seed):
    return np.stack([value(k, dtype, shape, seed) for k in range(dist.get_world_size())])


def run(C: Checks, r, n):
    # ------------------------------------------------------------ reduce
    for op, f in ((R.SUM, np.sum), (R.MAX, np.max), (R.AVG, np.mean)):
        for dst in range(n):
            t = tensor(value(r, "float64", (4,), 100 + dst))
            w = dist.reduce(t, dst=dst, op=op, async_op=dst == 1)
            if w is not None:
                w.wait()
            ref = f(ranks_stack("float64", (4,), 100 + dst), axis=0) if r == dst else \
                value(r, "float64", (4,), 100 + dst)        # non-destination: unchanged
            C.equal(f"reduce {op.name} dst={dst}", t, ref)
    # ------------------------------------------------------------ all_gather
    for dtype in ("float32", "int64", "bool"):
        out = [tensorplay.zeros(2, 3, dtype=getattr(tensorplay, dtype)) for _ in range(n)]
        dist.all_gather(out, tensor(value(r, dtype, (2, 3), 110)))
        for k in range(n):
            C.equal(f"all_gather {dtype} [{k}]", out[k], value(k, dtype, (2, 3), 110))
    one = tensorplay.ones(3)
    C.raises("all_gather length", ValueError,
             lambda: dist.all_gather([tensorplay.zeros(3)], one), "one tensor per rank")
    C.raises("all_gather shape", ValueError,
             lambda: dist.all_gather([tensorplay.zeros(4)] * n, one), "expected (3,)")
    stack = ranks_stack("float32", (2, 3), 120)
    out = tensorplay.zeros(2 * n, 3)
    w = dist.all_gather_into_tensor(out, tensor(value(r, "float32", (2, 3), 120)), async_op=True)
    C.true("future", w.get_future().wait()[0] is out)
    C.equal("all_gather_into_tensor concat", out, stack.reshape(2 * n, 3))
    out = tensorplay.zeros(n, 2, 3)
    dist.all_gather_single(out, tensor(value(r, "float32", (2, 3), 120)))
    C.equal("all_gather_into_tensor stack", out, stack)
    base = tensorplay.zeros(2 * n, 6)
    dist.all_gather_into_tensor(base[:, ::2], tensor(value(r, "float32", (2, 3), 120)))
    ref = np.zeros((2 * n, 6), np.float32)
    ref[:, ::2] = stack.reshape(2 * n, 3)
    C.equal("all_gather_into_tensor strided output", base, ref)
    C.raises("agit shape", ValueError, lambda: dist.all_gather_into_tensor(
        tensorplay.zeros(2 * n + 1, 3), tensorplay.ones(2, 3)), "concatenation")
    C.raises("agit dtype", ValueError, lambda: dist.all_gather_into_tensor(
        tensorplay.zeros(2 * n, 3, dtype=tensorplay.float64), tensorplay.ones(2, 3)), "dtype")
    # ------------------------------------------------------------ reduce_scatter
    big = ranks_stack("float64", (n * 2, 3), 130)
    for op, f in ((R.SUM, np.sum), (R.MIN, np.min), (R.AVG, np.mean)):
        out = tensorplay.zeros(2, 3, dtype=tensorplay.float64)
        dist.reduce_scatter_tensor(out, tensor(value(r, "float64", (n * 2, 3), 130)), op=op)
        C.equal(f"reduce_scatter_tensor {op.name}", out, f(big, axis=0)[2 * r:2 * r + 2])
    out = tensorplay.zeros(2, 3, dtype=tensorplay.float64)
    dist.reduce_scatter_single(out, tensor(value(r, "float64", (n * 2, 3), 130).reshape(n, 2, 3)))
    C.equal("reduce_scatter_tensor stacked", out, big.sum(0)[2 * r:2 * r + 2])
    out = tensorplay.zeros(2, dtype=tensorplay.int64)
    ins = [tensor(value(r, "int64", (2,), 140 + k)) for k in range(n)]
    dist.reduce_scatter(out, ins, op=R.PRODUCT)
    C.equal("reduce_scatter list", out, ranks_stack("int64", (2,), 140 + r).prod(0))
    # ------------------------------------------------------------ gather / scatter
    for dst in range(n):
        lst = [tensorplay.zeros(3, dtype=tensorplay.int32) for _ in range(n)] if r == dst else None
        dist.gather(tensor(value(r, "int32", (3,), 150)), lst, dst=dst)
        if r == dst:
            for k in range(n):
                C.equal(f"gather dst={dst} [{k}]", lst[k], value(k, "int32", (3,), 150))
    C.raises("gather_list missing", ValueError, lambda: dist.gather(
        tensorplay.ones(1), None, dst=r), "must be specified")
    src = n - 1
    out = tensorplay.zeros(2, 2)
    lst = [tensor(value(k, "float32", (2, 2), 160)) for k in range(n)] if r == src else None
    dist.scatter(out.t(), lst, src=src)
    C.equal("scatter into a view", out, value(r, "float32", (2, 2), 160).T)
    # ------------------------------------------------------------ all_to_all
    out = tensorplay.zeros(2 * n, 3)
    dist.all_to_all_single(out, tensor(value(r, "float32", (2 * n, 3), 170)))
    ref = np.concatenate([value(k, "float32", (2 * n, 3), 170)[2 * r:2 * r + 2] for k in range(n)])
    C.equal("all_to_all_single even", out, ref)
    rows_in = [r + k + 1 for k in range(n)]          # rank r sends r+k+1 rows to rank k
    rows_out = [k + r + 1 for k in range(n)]
    inp = tensor(value(r, "int64", (sum(rows_in), 2), 180))
    out = tensorplay.zeros(sum(rows_out), 2, dtype=tensorplay.int64)
    dist.all_to_all_single(out, inp, rows_out, rows_in)
    pieces = []
    for k in range(n):
        theirs = value(k, "int64", (sum(k + j + 1 for j in range(n)), 2), 180)
        start = sum(k + j + 1 for j in range(r))
        pieces.append(theirs[start:start + k + r + 1])
    C.equal("all_to_all_single uneven", out, np.concatenate(pieces))
    outs = [tensorplay.zeros(k + 1, dtype=tensorplay.float64) for k in range(n)]
    dist.all_to_all(outs, [tensor(np.full(r + 1, 10.0 * r + k)) for k in range(n)])
    for k in range(n):
        C.equal(f"all_to_all [{k}]", outs[k], np.full(k + 1, 10.0 * k + r))
    # ------------------------------------------------------------ point to point
    nxt, prv = (r + 1) % n, (r - 1) % n
    t = tensorplay.zeros(2, 2, dtype=tensorplay.int64)
    ws = [dist.isend(tensor(value(r, "int64", (2, 2), 190)), dst=nxt, tag=3),
          dist.irecv(t, src=prv, tag=3)]
    for w in ws:
        w.wait()
    C.equal("isend/irecv ring", t, value(prv, "int64", (2, 2), 190))
    C.true("source_rank", ws[1].source_rank() == prv)
    if r == 0:
        dist.send(tensor(value(0, "float64", (3,), 200)), dst=1)
        too_big = tensorplay.zeros(5, dtype=tensorplay.float64)
        C.raises("recv size", RuntimeError, lambda: dist.recv(too_big, src=1), "sent 24 bytes")
    elif r == 1:
        t = tensorplay.zeros(3, dtype=tensorplay.float64)
        C.true("recv returns the sender", dist.recv(t) == 0)
        C.equal("send/recv", t, value(0, "float64", (3,), 200))
        dist.send(tensorplay.ones(3, dtype=tensorplay.float64), dst=0)
    C.raises("send to self", ValueError, lambda: dist.send(tensorplay.ones(1), dst=r), "same as")
    # ------------------------------------------------------------ objects
    objs = [{"rank": r}, None, "x"] if r == 0 else [None, None, None]
    dist.broadcast_object_list(objs, src=0)
    C.true("broadcast_object_list", objs == [{"rank": 0}, None, "x"])
    got = [None] * n
    dist.all_gather_object(got, ("r", r, list(range(r))))
    C.true("all_gather_object", got == [("r", k, list(range(k))) for k in range(n)])
    got = [None] * n if r == n - 1 else None
    dist.gather_object({"k": r * 2}, got, dst=n - 1)
    C.true("gather_object", r != n - 1 or got == [{"k": 2 * k} for k in range(n)])
    out = [None]
    objs = [f"to {k}" * (k + 1) for k in range(n)] if r == 0 else None
    dist.scatter_object_list(out, objs, src=0)
    C.true("scatter_object_list", out == [f"to {r}" * (r + 1)])
    # ------------------------------------------------------------ new_group
    sub = dist.new_group([n - 2, n - 1])
    if r in (n - 2, n - 1):
        C.true("group rank", dist.get_rank(sub) == r - (n - 2) and dist.get_world_size(sub) == 2)
        t = tensorplay.tensor([float(r)])
        dist.all_reduce(t, group=sub)
        C.equal("all_reduce on a group", t, np.array([2.0 * n - 3], np.float32))
        t = tensorplay.tensor([float(r)])
        dist.broadcast(t, src=n - 1, group=sub)
        C.equal("broadcast on a group (global src)", t, np.array([n - 1.0], np.float32))
        C.raises("src outside group", ValueError, lambda: dist.broadcast(t, src=0, group=sub)
                 if n > 2 else dist.broadcast(t, src=5, group=sub), "not a rank of")
        dist.destroy_process_group(sub)
    else:
        C.true("not a member", sub == dist.GroupMember.NON_GROUP_MEMBER
               and dist.get_rank(sub) == -1)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            C.true("non-member returns None",
                   dist.all_reduce(tensorplay.ones(1), group=sub) is None)
        C.true("non-member warns", any("does not belong" in str(x.message) for x in rec))
    # ------------------------------------------------------------ DETAIL check
    dist.set_debug_level(dist.DebugLevel.DETAIL)
    e = C.raises("DETAIL shapes", RuntimeError,
                 lambda: dist.all_reduce(tensorplay.ones(3 + r)), "ranks disagree")
    other = 1 - r if r < 2 else 0
    C.true("names both shapes", f"float32 tensor of shape ({3 + r},)" in str(e)
           and f"rank {other} called all_reduce(float32 tensor of shape ({3 + other},)" in str(e))
    C.raises("DETAIL dtypes", RuntimeError, lambda: dist.all_reduce(
        tensorplay.ones(3, dtype=tensorplay.float64 if r else tensorplay.float32)), "float64")
    C.raises("DETAIL collectives", RuntimeError, lambda: dist.broadcast(tensorplay.ones(2), src=0)
             if r == 0 else dist.all_reduce(tensorplay.ones(2)), "called broadcast")
    C.raises("DETAIL root", RuntimeError, lambda: dist.broadcast(tensorplay.ones(2), src=min(r, 1)),
             "root=")
    t = tensorplay.ones(2)
    dist.all_reduce(t)                           # agreeing ranks pass the check
    C.equal("DETAIL passes", t, np.full(2, n, np.float32))
    dist.set_debug_level(dist.DebugLevel.OFF)
    # ------------------------------------------------------------ always-on check
    # non-blocking metadata exchange beside each collective, compared at wait()
    t = tensorplay.ones(2)
    dist.all_reduce(t)                           # agreeing ranks pass
    C.equal("check passes", t, np.full(2, n, np.float32))
    if n == 2:                                   # MPICH pairs mismatched calls at 2 ranks
        # (1) a rank skips a collective: its barrier meets the other's all_reduce
        e = C.raises("skipped collective", RuntimeError,
                     lambda: dist.all_reduce(tensorplay.ones(2)) if r == 0 else dist.barrier(),
                     "ranks disagree")
        C.true("names both calls", "called barrier()" in str(e) and "called all_reduce(" in str(e)
               and f"rank {1 - r} called" in str(e))
        # (2) sizes and dtypes
        e = C.raises("sizes", RuntimeError, lambda: dist.all_reduce(tensorplay.ones(3 + r)),
                     f"rank {1 - r} called all_reduce(float32 tensor of shape ({4 - r},)")
        # (4 elements: at 3, 12 bytes against 24 trip an assertion in MPICH, which aborts)
        C.raises("dtypes", RuntimeError, lambda: dist.all_reduce(tensorplay.ones(
            4, dtype=tensorplay.float64 if r else tensorplay.float32)), "float64 tensor")
        # (3) an extra async bucket all_reduce on rank 0 meets rank 1's metric
        def uneven():
            if r == 0:
                dist.all_reduce(tensorplay.ones(4), async_op=True).wait()
            else:
                dist.all_reduce(tensorplay.ones(1))
        C.raises("uneven steps", RuntimeError, uneven, "shape (4,)")
        # (6) broadcast into a buffer of another size: our message, not MPICH's
        e = C.raises("broadcast size", RuntimeError,
                     lambda: dist.broadcast(tensorplay.ones(4 - 2 * r), src=0), "ranks disagree")
        C.true("not MPI_ERROR", "MPI_ERROR" not in str(e) and "shape (2,)" in str(e))
    t = tensorplay.ones(3)
    dist.all_reduce(t)                           # the group is still usable
    C.equal("usable after mismatches", t, np.full(3, n, np.float32))
    # ------------------------------------------------------------ Work.wait(timeout)
    w = dist.all_reduce(tensorplay.ones(2), async_op=True)
    C.true("wait(timeout)", w.wait(timeout=timedelta(seconds=5)))
    from tensorplay._kernels._openmp_helpers import omp_num_procs
    C.true("thread budget: cores // ranks on the node", tensorplay.get_num_threads() ==
           max(1, omp_num_procs() // n) or "OMP_NUM_THREADS" in os.environ)
