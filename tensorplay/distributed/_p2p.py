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

from tensorplay.distributed._group import meta, resolve
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
