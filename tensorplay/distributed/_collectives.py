"""Collectives on tensors, in place, PyTorch's signatures.

Each function validates locally (types, dtypes, list lengths, shapes that must
agree with the group size), records the cross-rank check's row (``pg.check``:
a non-blocking metadata exchange started beside the data call and compared at
``wait``; blocking before the call under DETAIL), then starts one non-blocking
MPI call on the tensors' own storage and returns a
``Work`` (``async_op=True``) or waits for it (None).  Output tensors are written
through ``out_buf``: no copy when C-contiguous, a staging array copied back on
completion otherwise; their version counters are bumped, as an in-place op's.
Nothing is recorded for autograd (PyTorch's collectives are not differentiable
either; ``requires_grad`` tensors are written in place as PyTorch writes them).
List arguments (``all_gather``'s ``tensor_list``, ``gather_list``, ...) go through
one contiguous staging array, since MPI wants one buffer.
"""
import numpy as np

from tensorplay.distributed._group import resolve
from tensorplay.distributed._work import (ReduceOp, check_tensor, in_buf, is_avg, mpi,
                                          mpi_op, out_buf, shape_str)

__all__ = ["all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
           "reduce_scatter_tensor", "reduce_scatter", "gather", "scatter",
           "all_to_all_single", "all_to_all", "all_gather_single", "reduce_scatter_single"]


def _avg(work, buf, n):
    # before any copy-back of a staging array (out_buf appended that one)
    work._finish.insert(0, lambda: np.divide(buf, n, out=buf))


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` over all ranks of ``group``, in place: every rank ends with
    the same result (``op`` of the ranks' tensors, elementwise).

    Args:
        tensor (Tensor): float32, float64, int64, int32 or bool; same shape and
            dtype on every rank.
        op (ReduceOp): default SUM.
        async_op (bool): return a ``Work`` instead of waiting.

    Returns:
        A ``Work`` if ``async_op``, else None.

    Example (2 ranks)::

        >>> t = tensorplay.tensor([1.0, 2.0]) * (dist.get_rank() + 1)
        >>> dist.all_reduce(t)          # tensor([3., 6.]) on both ranks
    """
    name = "all_reduce"
    pg = resolve(name, group)
    if pg is None:
        return None
    a = check_tensor(name, tensor, "tensor")
    mop = mpi_op(name, op, a)
    pg.check(name, (a,), op)
    w = pg.work(name)
    buf = out_buf(name, tensor, "tensor", w)
    if is_avg(op):
        _avg(w, buf, pg.size())
    w._outputs.append(tensor)
    return pg.launch(w, lambda: w._reqs.append(
        pg.comm.Iallreduce(mpi().IN_PLACE, buf, mop)), async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy ``tensor`` from rank ``src`` (a global rank; or ``group_src`` within the
    group) into ``tensor`` on every other rank, in place.

    Raises:
        ValueError: ``src`` is not in the group; both ``src`` and ``group_src``.
    """
    name = "broadcast"
    pg = resolve(name, group)
    if pg is None:
        return None
    root = pg.group_rank(name, "src", src, group_src)
    a = check_tensor(name, tensor, "tensor")
    pg.check(name, (a,), root=root)
    w = pg.work(name)
    buf = out_buf(name, tensor, "tensor", w) if pg.rank() != root else in_buf(
        name, tensor, "tensor")
    w._outputs.append(tensor)
    return pg.launch(w, lambda: w._reqs.append(pg.comm.Ibcast(buf, root=root)), async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` over the ranks into ``tensor`` on rank ``dst`` only (the
    other ranks' tensors are left unchanged)."""
    name = "reduce"
    pg = resolve(name, group)
    if pg is None:
        return None
    root = pg.group_rank(name, "dst", dst, group_dst)
    a = check_tensor(name, tensor, "tensor")
    mop = mpi_op(name, op, a)
    pg.check(name, (a,), op, root)
    w = pg.work(name)
    w._outputs.append(tensor)
    if pg.rank() == root:
        buf = out_buf(name, tensor, "tensor", w)
        if is_avg(op):
            _avg(w, buf, pg.size())
        start = lambda: w._reqs.append(  # noqa: E731
            pg.comm.Ireduce(mpi().IN_PLACE, buf, mop, root))
    else:
        buf = in_buf(name, tensor, "tensor")
        start = lambda: w._reqs.append(pg.comm.Ireduce(buf, None, mop, root))  # noqa: E731
    return pg.launch(w, start, async_op)


def _check_list(name, arg, tensors, n, like):
    """``tensors`` is a list of ``n`` tensors of ``like``'s shape and dtype."""
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): {arg} must be a list of tensors, got "
                        f"{type(tensors).__name__}")
    if len(tensors) != n:
        raise ValueError(f"{name}(): {arg} must hold one tensor per rank of the group "
                         f"({n}), got {len(tensors)}")
    for i, t in enumerate(tensors):
        a = check_tensor(name, t, f"{arg}[{i}]")
        if a.shape != like.shape or a.dtype != like.dtype:
            raise ValueError(f"{name}(): {arg}[{i}] has shape {shape_str(a.shape)} and "
                             f"dtype {a.dtype}; expected {shape_str(like.shape)} and "
                             f"{like.dtype} (the tensor's)")


def _scatter_back(w, staging, tensors):
    """On completion, copy row i of ``staging`` into ``tensors[i]`` (bumped now)."""
    from tensorplay.autograd._inplace import bump
    for i, t in enumerate(tensors):
        if not t._data.flags.writeable:
            raise RuntimeError(f"{w._name}(): output tensor {i} is read-only (an expand() "
                               f"view); clone() it first")
    for t in tensors:
        bump(t, w._name)

    def back():
        for i, t in enumerate(tensors):
            np.copyto(t._data, staging[i])
    w._finish.append(back)
    w._outputs.extend(tensors)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Gather ``tensor`` from every rank into ``tensor_list`` (one tensor per rank,
    in rank order, each of ``tensor``'s shape and dtype) on every rank.

    Goes through one staging array; ``all_gather_into_tensor`` copies nothing."""
    name = "all_gather"
    pg = resolve(name, group)
    if pg is None:
        return None
    a = in_buf(name, tensor, "tensor")
    _check_list(name, "tensor_list", tensor_list, pg.size(), a)
    pg.check(name, (a,))
    w = pg.work(name)
    staging = np.empty((pg.size(),) + a.shape, a.dtype)
    _scatter_back(w, staging, tensor_list)
    return pg.launch(w, lambda: w._reqs.append(pg.comm.Iallgather(a, staging)), async_op)


def _stacked(name, big, small, n, big_arg, small_arg):
    """``big`` must be ``n`` copies of ``small`` concatenated along dim 0
    (``(n*d0, ...)``) or stacked (``(n, *small.shape)``), of ``small``'s dtype."""
    ok_shape = (big.ndim >= 1 and big.shape[1:] == small.shape[1:] and small.ndim >= 1
                and big.shape[0] == n * small.shape[0]) or big.shape == (n,) + small.shape
    if not ok_shape or big.dtype != small.dtype:
        raise ValueError(
            f"{name}(): {big_arg} has shape {shape_str(big.shape)} and dtype {big.dtype}; "
            f"with {small_arg} of shape {shape_str(small.shape)} and dtype {small.dtype} "
            f"and {n} ranks it must be {small_arg}'s concatenation along dim 0 "
            f"({shape_str((n * small.shape[0],) + small.shape[1:]) if small.ndim else '-'})"
            f" or stack ({shape_str((n,) + small.shape)}), of dtype {small.dtype}")


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Gather ``input_tensor`` from every rank into ``output_tensor``: the ranks'
    tensors concatenated along dim 0 (shape ``(n * d0, ...)``) or stacked (shape
    ``(n, *input.shape)``), in rank order.  No copy when both are contiguous."""
    name = "all_gather_into_tensor"
    pg = resolve(name, group)
    if pg is None:
        return None
    a = in_buf(name, input_tensor, "input_tensor")
    o = check_tensor(name, output_tensor, "output_tensor")
    _stacked(name, o, a, pg.size(), "output_tensor", "input_tensor")
    pg.check(name, (a, o))
    w = pg.work(name)
    out = out_buf(name, output_tensor, "output_tensor", w, keep_values=False)
    w._outputs.append(output_tensor)
    return pg.launch(w, lambda: w._reqs.append(pg.comm.Iallgather(a, out)), async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input`` over the ranks and give rank ``i`` block ``i`` of the result
    in ``output``: ``input`` is ``n`` blocks of ``output``'s shape, concatenated
    along dim 0 or stacked.  No copy when both are contiguous."""
    name = "reduce_scatter_tensor"
    pg = resolve(name, group)
    if pg is None:
        return None
    a = in_buf(name, input, "input")
    o = check_tensor(name, output, "output")
    _stacked(name, a, o, pg.size(), "input", "output")
    mop = mpi_op(name, op, a)
    pg.check(name, (a, o), op)
    w = pg.work(name)
    out = out_buf(name, output, "output", w, keep_values=False)
    if is_avg(op):
        _avg(w, out, pg.size())
    w._outputs.append(output)
    return pg.launch(w, lambda: w._reqs.append(
        pg.comm.Ireduce_scatter_block(a, out, mop)), async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input_list`` (one tensor per rank, each of ``output``'s shape) over
    the ranks; rank ``i`` receives the reduction of the ranks' ``input_list[i]``."""
    name = "reduce_scatter"
    pg = resolve(name, group)
    if pg is None:
        return None
    o = check_tensor(name, output, "output")
    _check_list(name, "input_list", input_list, pg.size(), o)
    mop = mpi_op(name, op, o)
    pg.check(name, (o,), op)
    staging = np.stack([t._data for t in input_list]) if input_list else \
        np.empty((0,) + o.shape, o.dtype)
    w = pg.work(name)
    out = out_buf(name, output, "output", w, keep_values=False)
    if is_avg(op):
        _avg(w, out, pg.size())
    w._outputs.append(output)
    return pg.launch(w, lambda: w._reqs.append(
        pg.comm.Ireduce_scatter_block(staging, out, mop)), async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Gather ``tensor`` from every rank into ``gather_list`` on rank ``dst``.

    Raises:
        ValueError: ``gather_list`` missing on ``dst`` or given on another rank
            (PyTorch's rule); wrong length, shapes or dtypes.
    """
    name = "gather"
    pg = resolve(name, group)
    if pg is None:
        return None
    root = pg.group_rank(name, "dst", dst, group_dst)
    a = in_buf(name, tensor, "tensor")
    is_root = pg.rank() == root
    if is_root and gather_list is None:
        raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
    if not is_root and gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on "
                         "non-destination ranks.")
    if is_root:
        _check_list(name, "gather_list", gather_list, pg.size(), a)
    pg.check(name, (a,), root=root)
    w = pg.work(name)
    staging = None
    if is_root:
        staging = np.empty((pg.size(),) + a.shape, a.dtype)
        _scatter_back(w, staging, gather_list)
    return pg.launch(w, lambda: w._reqs.append(pg.comm.Igather(a, staging, root)),
                     async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Rank ``src`` sends ``scatter_list[i]`` to rank ``i``, written into ``tensor``.

    Raises:
        ValueError: ``scatter_list`` missing on ``src`` or given on another rank;
            wrong length, shapes or dtypes.
    """
    name = "scatter"
    pg = resolve(name, group)
    if pg is None:
        return None
    root = pg.group_rank(name, "src", src, group_src)
    o = check_tensor(name, tensor, "tensor")
    is_root = pg.rank() == root
    if is_root and scatter_list is None:
        raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
    if not is_root and scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on "
                         "non-source ranks.")
    staging = None
    if is_root:
        _check_list(name, "scatter_list", scatter_list, pg.size(), o)
        staging = np.stack([t._data for t in scatter_list])
    pg.check(name, (o,), root=root)
    w = pg.work(name)
    out = out_buf(name, tensor, "tensor", w, keep_values=False)
    w._outputs.append(tensor)
    return pg.launch(w, lambda: w._reqs.append(pg.comm.Iscatter(staging, out, root)),
                     async_op)


def _splits(name, arg, sizes, t, n):
    if sizes is None or len(sizes) == 0:
        if t.ndim == 0 or t.shape[0] % n:
            raise ValueError(f"{name}(): {arg} of shape {shape_str(t.shape)}: dim 0 must "
                             f"split evenly over the {n} ranks when no split sizes are given")
        return [t.shape[0] // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n or any(s < 0 for s in sizes) or t.ndim == 0 or \
            sum(sizes) != t.shape[0]:
        raise ValueError(f"{name}(): {arg} split sizes {sizes} must be {n} non-negative "
                         f"sizes summing to dim 0 of shape {shape_str(t.shape)}")
    return sizes


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    """Split ``input`` along dim 0 (evenly, or by ``input_split_sizes``) and send
    block ``i`` to rank ``i``; ``output`` receives the ranks' blocks in rank order
    (sizes ``output_split_sizes``).  The split sizes must agree across ranks
    (rank i's input split j is rank j's output split i)."""
    name = "all_to_all_single"
    pg = resolve(name, group)
    if pg is None:
        return None
    n = pg.size()
    a = in_buf(name, input, "input")
    o = check_tensor(name, output, "output")
    if a.dtype != o.dtype or a.shape[1:] != o.shape[1:]:
        raise ValueError(f"{name}(): output of shape {shape_str(o.shape)} and dtype "
                         f"{o.dtype} does not match input's {shape_str(a.shape)}, {a.dtype} "
                         f"beyond dim 0")
    sin = _splits(name, "input", input_split_sizes, a, n)
    sout = _splits(name, "output", output_split_sizes, o, n)
    pg.check(name, (a, o) if input_split_sizes is None and
             output_split_sizes is None else ())
    row = int(np.prod(a.shape[1:], dtype=np.int64))
    w = pg.work(name)
    out = out_buf(name, output, "output", w, keep_values=False)
    w._outputs.append(output)
    MPI = mpi()
    cin = [s * row for s in sin]
    cout = [s * row for s in sout]
    send = [a, (cin, list(np.cumsum([0] + cin[:-1]))), MPI._typedict[a.dtype.char]]
    recv = [out, (cout, list(np.cumsum([0] + cout[:-1]))), MPI._typedict[a.dtype.char]]
    return pg.launch(w, lambda: w._reqs.append(pg.comm.Ialltoallv(send, recv)), async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Send ``input_tensor_list[i]`` to rank ``i``; ``output_tensor_list[j]``
    receives rank ``j``'s tensor for this rank (shapes may differ per rank pair,
    dtypes must agree)."""
    name = "all_to_all"
    pg = resolve(name, group)
    if pg is None:
        return None
    n = pg.size()
    for arg, lst in (("output_tensor_list", output_tensor_list),
                     ("input_tensor_list", input_tensor_list)):
        if not isinstance(lst, (list, tuple)) or len(lst) != n:
            raise ValueError(f"{name}(): {arg} must be a list of {n} tensors (one per rank)")
    ins = [in_buf(name, t, f"input_tensor_list[{i}]") for i, t in enumerate(input_tensor_list)]
    outs = [check_tensor(name, t, f"output_tensor_list[{i}]")
            for i, t in enumerate(output_tensor_list)]
    dt = ins[0].dtype if ins else None
    if any(x.dtype != dt for x in ins + outs):
        raise ValueError(f"{name}(): every input and output tensor must have one dtype")
    pg.check(name)
    sendbuf = np.concatenate([x.reshape(-1) for x in ins]) if ins else np.empty(0)
    recvbuf = np.empty(sum(x.size for x in outs), dt)
    w = pg.work(name)
    offs = np.cumsum([0] + [x.size for x in outs])

    def back():
        for i, t in enumerate(output_tensor_list):
            np.copyto(t._data, recvbuf[offs[i]:offs[i + 1]].reshape(t._data.shape))
    for i, t in enumerate(output_tensor_list):
        out_buf(name, t, f"output_tensor_list[{i}]", w)   # checks writable, bumps
    w._finish.append(back)
    w._outputs.extend(output_tensor_list)
    MPI = mpi()
    typ = MPI._typedict[dt.char]
    cin = [x.size for x in ins]
    cout = [x.size for x in outs]
    send = [sendbuf, (cin, list(np.cumsum([0] + cin[:-1]))), typ]
    recv = [recvbuf, (cout, list(offs[:-1])), typ]
    return pg.launch(w, lambda: w._reqs.append(pg.comm.Ialltoallv(send, recv)), async_op)


# PyTorch 2.13's new names for the two (the old ones warn there, not here)
all_gather_single = all_gather_into_tensor
reduce_scatter_single = reduce_scatter_tensor
