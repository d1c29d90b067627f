"""DDP's construction-time checks and state broadcasts over tensorplay.distributed.

``verify_params`` makes every rank compare its parameters' names, shapes and
dtypes with rank 0's and raise the same error, naming the ranks that differ and
the first differing parameter; ``broadcast_tensors`` copies rank 0's values into
the other ranks' tensors in place, one broadcast per dtype (coalesced through a
flat buffer).  Strings travel as int64 tensors (one entry per byte) because the
collectives take tensors only.
"""
import numpy as np


def _send_text(text, src, group):
    """``text`` on group rank ``src``, returned on every rank (two broadcasts)."""
    import tensorplay
    import tensorplay.distributed as dist
    raw = np.frombuffer(text.encode(), dtype=np.uint8).astype(np.int64)
    n = tensorplay.tensor([len(raw)], dtype=tensorplay.int64)
    dist.broadcast(n, group=group, group_src=src)
    buf = tensorplay.from_numpy(raw.copy() if len(raw) == n.item()
                                else np.zeros(int(n.item()), dtype=np.int64))
    if buf.numel():
        dist.broadcast(buf, group=group, group_src=src)
    return bytes(buf.numpy().astype(np.uint8).tolist()).decode()


def _describe(entries):
    return [f"'{name}' {list(shape)} {dtype}" for name, shape, dtype in entries]


def verify_params(named, rank, world_size, group):
    """Raise RuntimeError on every rank unless all ranks registered the same
    parameters (names, shapes, dtypes, in order) as rank 0."""
    import tensorplay
    import tensorplay.distributed as dist
    mine = _describe((n, tuple(p.shape), str(p.dtype).replace("tensorplay.", ""))
                     for n, p in named)
    theirs = _send_text("\n".join(mine), 0, group).split("\n")
    theirs = [] if theirs == [""] else theirs
    detail = ""
    if mine != theirs:
        if len(mine) != len(theirs):
            detail = (f"rank {rank} has {len(mine)} parameters, while rank 0 has "
                      f"{len(theirs)}")
        for k, (a, b) in enumerate(zip(mine, theirs)):
            if a != b:
                detail = (f"params[{k}] on rank {rank} is {a} but on rank 0 it is {b}"
                          + (f" ({detail})" if detail else ""))
                break
    flags = tensorplay.zeros(world_size, dtype=tensorplay.int64)
    flags[rank] = 1 if detail else 0
    dist.all_reduce(flags, group=group)
    bad = [r for r, f in enumerate(flags.tolist()) if f]
    if bad:
        detail = _send_text(detail, bad[0], group)
        raise RuntimeError(
            f"DistributedDataParallel: DDP expects the same model on every rank, but "
            f"rank(s) {bad} registered parameters that differ from rank 0's: {detail}. "
            f"Build the model identically on every rank (same layers, shapes and "
            f"dtypes, in the same order) before wrapping it.")


def broadcast_tensors(tensors, src, group):
    """Overwrite each tensor with group rank ``src``'s values, in place (version
    bumped), one coalesced broadcast per dtype."""
    import tensorplay
    import tensorplay.distributed as dist
    by_dtype = {}
    for t in tensors:
        by_dtype.setdefault(t._data.dtype, []).append(t)
    for dtype, ts in by_dtype.items():
        flat = tensorplay.from_numpy(np.concatenate([t._data.ravel() for t in ts]))
        dist.broadcast(flat, group=group, group_src=src)
        off = 0
        data = flat._data
        for t in ts:
            n = t._data.size
            np.copyto(t._data, data[off:off + n].reshape(t._data.shape))
            t._version[0] += 1
            off += n
