"""Point-to-point messages and collectives on picklable objects.

send/recv carry a tensor's storage as one MPI message (no copy when contiguous);
a message of the wrong size is an error naming both sizes.  The object
collectives pickle with mpi4py's ``MPI.pickle`` (its protocol and settings), send
the sizes and then the bytes with non-blocking buffer collectives, so they obey
the group's timeout like every other call.

Security: like PyTorch's, the object collectives unpickle what the peer ranks
send, and unpickling can run arbitrary code.  Use them only among ranks you trust
(the processes of your own job).
"""
import numpy as np

from tensorplay.distributed._group import resolve
from tensorplay.distributed._work import check_tensor, in_buf, mpi, out_buf, shape_str

__all__ = ["send", "recv", "isend", "irecv", "broadcast_object_list",
           "all_gather_object", "gather_object", "scatter_object_list"]


def _peer(name, pg, arg, rank, group_rank):
    r = pg.group_rank(name, arg, rank, group_rank) if (rank is not None or
                                                         group_rank is not None) else None
    if r is None:
        raise ValueError(f"{name}(): {arg} is required")
    if r == pg.rank():
        raise ValueError(f"Invalid {'destination' if arg == 'dst' else 'source'} rank: "
                         f"{'destination' if arg == 'dst' else 'source'} rank should not be "
                         f"the same as the rank of the current process.")
    return r


def _tag(name, tag):
    if isinstance(tag, bool) or not isinstance(tag, (int, np.integer)) or \
            not 0 <= tag <= 32767:
        raise ValueError(f"{name}(): tag must be an int in [0, 32767] (MPI's guaranteed "
                         f"range), got {tag!r}")
    return int(tag)


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Start sending ``tensor`` to rank ``dst``; returns a ``Work``.  Do not write
    ``tensor`` before the Work completes."""
    name = "isend"
    pg = resolve(name, group)
    if pg is None:
        return None
    peer = _peer(name, pg, "dst", dst, group_dst)
    tag = _tag(name, tag)
    a = in_buf(name, tensor, "tensor")
    w = pg.work(name)
    return pg.launch(w, lambda: w._reqs.append(pg.comm.Isend(a, dest=peer, tag=tag)), True)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Start receiving into ``tensor`` from rank ``src`` (None: any rank); returns a
    ``Work`` whose ``source_rank()`` is the sender.

    Raises (on wait):
        RuntimeError: the message's size differs from ``tensor``'s.
    """
    name = "irecv"
    pg = resolve(name, group)
    if pg is None:
        return None
    MPI = mpi()
    peer = MPI.ANY_SOURCE if src is None and group_src is None else \
        _peer(name, pg, "src", src, group_src)
    tag = _tag(name, tag)
    a = check_tensor(name, tensor, "tensor")
    w = pg.work(name)
    buf = out_buf(name, tensor, "tensor", w, keep_values=False)
    w._outputs.append(tensor)
    w._statuses = []

    def check():
        status = w._statuses[0]
        got = status.Get_count(MPI.BYTE)
        w._source = pg.ranks[status.Get_source()]
        if got != buf.nbytes:
            raise RuntimeError(f"{name}(): rank {w._source} sent {got} bytes; the tensor "
                               f"of shape {shape_str(a.shape)} and dtype {a.dtype} holds "
                               f"{buf.nbytes}")
    w._finish.insert(0, check)
    return pg.launch(w, lambda: w._reqs.append(pg.comm.Irecv(buf, source=peer, tag=tag)),
                     True)


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to rank ``dst`` and wait until the send completes."""
    w = isend(tensor, dst, group, tag, group_dst)
    if w is not None:
        w.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor`` from rank ``src`` (None: any rank); returns the
    sender's rank (-1 when this rank is outside ``group``)."""
    w = irecv(tensor, src, group, tag, group_src)
    if w is None:
        return -1
    w.wait()
    return w.source_rank()


# ------------------------------------------------------------------ objects
def _run(pg, name, start):
    """Start ``start(reqs)`` as one operation and wait for it (deadline: the
    group's timeout)."""
    w = pg.work(name)
    pg.launch(w, lambda: start(w._reqs), False)


def _dumps(obj):
    return np.frombuffer(mpi().pickle.dumps(obj), np.uint8)


def _loads(buf):
    return mpi().pickle.loads(buf.tobytes())


def _displs(sizes):
    return [int(x) for x in np.cumsum([0] + list(sizes[:-1]))]


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Broadcast the picklable objects of ``object_list`` on rank ``src`` into
    ``object_list`` on every rank (each rank passes a list of the same length).

    Unpickles what ``src`` sent: use among trusted ranks only (as PyTorch's).

    Raises:
        ValueError: the lists' lengths differ from ``src``'s.
    """
    name = "broadcast_object_list"
    pg = resolve(name, group)
    if pg is None:
        return None
    if not isinstance(object_list, list):
        raise TypeError(f"{name}(): object_list must be a list, got "
                        f"{type(object_list).__name__}")
    root = pg.group_rank(name, "src", src, group_src)
    pg.check(name, root=root)
    MPI = mpi()
    is_root = pg.rank() == root
    data = _dumps(list(object_list)) if is_root else None
    size = np.array([0 if data is None else data.size], np.int64)
    _run(pg, name, lambda reqs: reqs.append(pg.comm.Ibcast(size, root=root)))
    if not is_root:
        data = np.empty(int(size[0]), np.uint8)
    _run(pg, name, lambda reqs: reqs.append(pg.comm.Ibcast([data, MPI.BYTE], root=root)))
    if not is_root:
        got = _loads(data)
        if len(got) != len(object_list):
            raise ValueError(f"{name}(): rank {pg.ranks[root]} broadcast {len(got)} objects "
                             f"but this rank's object_list has {len(object_list)}; every "
                             f"rank must pass a list of the same length")
        object_list[:] = got
    return None


def _allgather_bytes(pg, name, data):
    MPI = mpi()
    sizes = np.empty(pg.size(), np.int64)
    mine = np.array([data.size], np.int64)
    _run(pg, name, lambda reqs: reqs.append(pg.comm.Iallgather(mine, sizes)))
    out = np.empty(int(sizes.sum()), np.uint8)
    counts = [int(s) for s in sizes]
    _run(pg, name, lambda reqs: reqs.append(pg.comm.Iallgatherv(
        [data, MPI.BYTE], [out, (counts, _displs(counts)), MPI.BYTE])))
    return [out[d:d + c] for d, c in zip(_displs(counts), counts)]


def all_gather_object(object_list, obj, group=None):
    """Gather the picklable ``obj`` of every rank into ``object_list`` (length: the
    group's size), in rank order, on every rank.

    Unpickles what the peers sent: use among trusted ranks only (as PyTorch's)."""
    name = "all_gather_object"
    pg = resolve(name, group)
    if pg is None:
        return None
    if not isinstance(object_list, list) or len(object_list) != pg.size():
        raise ValueError(f"{name}(): object_list must be a list of length {pg.size()} "
                         f"(the group's size)")
    pg.check(name)
    parts = _allgather_bytes(pg, name, _dumps(obj))
    object_list[:] = [_loads(p) for p in parts]
    return None


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """Gather the picklable ``obj`` of every rank into ``object_gather_list`` (length:
    the group's size) on rank ``dst``; other ranks pass None.

    Unpickles what the peers sent: use among trusted ranks only (as PyTorch's)."""
    name = "gather_object"
    pg = resolve(name, group)
    if pg is None:
        return None
    root = pg.group_rank(name, "dst", dst, group_dst)
    is_root = pg.rank() == root
    if is_root and (not isinstance(object_gather_list, list)
                    or len(object_gather_list) != pg.size()):
        raise ValueError(f"{name}(): object_gather_list must be a list of length "
                         f"{pg.size()} on the destination rank")
    pg.check(name, root=root)
    MPI = mpi()
    data = _dumps(obj)
    sizes = np.empty(pg.size(), np.int64) if is_root else None
    mine = np.array([data.size], np.int64)
    _run(pg, name, lambda reqs: reqs.append(pg.comm.Igather(mine, sizes, root)))
    counts = [int(s) for s in sizes] if is_root else None
    out = np.empty(sum(counts), np.uint8) if is_root else None
    recv = [out, (counts, _displs(counts)), MPI.BYTE] if is_root else None
    _run(pg, name, lambda reqs: reqs.append(pg.comm.Igatherv([data, MPI.BYTE], recv, root)))
    if is_root:
        object_gather_list[:] = [_loads(out[d:d + c])
                                 for d, c in zip(_displs(counts), counts)]
    return None


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None,
                        src=None, group=None, group_src=None):
    """Rank ``src`` sends ``scatter_object_input_list[i]`` (picklable) to rank ``i``,
    which stores it in ``scatter_object_output_list[0]``.

    Unpickles what ``src`` sent: use among trusted ranks only (as PyTorch's)."""
    name = "scatter_object_list"
    pg = resolve(name, group)
    if pg is None:
        return None
    if not isinstance(scatter_object_output_list, list) or not scatter_object_output_list:
        raise ValueError(f"{name}(): Expected argument scatter_object_output_list to be a "
                         f"list of size at least 1.")
    root = pg.group_rank(name, "src", src, group_src)
    is_root = pg.rank() == root
    if is_root and (not isinstance(scatter_object_input_list, (list, tuple))
                    or len(scatter_object_input_list) != pg.size()):
        raise ValueError(f"{name}(): scatter_object_input_list must hold {pg.size()} "
                         f"objects (one per rank) on the source rank")
    pg.check(name, root=root)
    MPI = mpi()
    send = None
    if is_root:
        parts = [_dumps(o) for o in scatter_object_input_list]
        counts = [p.size for p in parts]
        sizes = np.array(counts, np.int64)
        send = [np.concatenate(parts), (counts, _displs(counts)), MPI.BYTE]
    mine = np.empty(1, np.int64)
    _run(pg, name, lambda reqs: reqs.append(pg.comm.Iscatter(sizes if is_root else None,
                                                             mine, root)))
    data = np.empty(int(mine[0]), np.uint8)
    _run(pg, name, lambda reqs: reqs.append(pg.comm.Iscatterv(send, [data, MPI.BYTE], root)))
    scatter_object_output_list[0] = _loads(data)
    return None
