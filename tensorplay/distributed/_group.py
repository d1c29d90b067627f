"""The process group: init_process_group, ranks, barriers, new_group, debug level.

A ``ProcessGroup`` wraps an MPI communicator (a ``Dup`` of ``COMM_WORLD`` for the
default group, so tensorplay's traffic never matches the user's own mpi4py calls)
and a second duplicate for tensorplay's own control messages (the DETAIL shape
checks, ``monitored_barrier``), and a third for the always-on collective check's
metadata exchange (``ProcessGroup.check``).  Ranks given to the public functions (``src``,
``dst``) are global ranks, as in PyTorch; ``group_src``/``group_dst`` are ranks
within the group.
"""
import enum
import os
import sys
import time
import warnings
from datetime import timedelta

import numpy as np

from tensorplay.distributed._work import Work, _seconds, mpi, poll

__all__ = ["Backend", "DebugLevel", "GroupMember", "ProcessGroup", "barrier",
           "destroy_process_group", "get_backend", "get_debug_level",
           "get_global_rank", "get_group_rank", "get_process_group_ranks", "get_rank",
           "get_world_size", "group", "init_process_group", "is_initialized",
           "monitored_barrier", "new_group", "set_debug_level", "set_debug_level_from_env"]

# PyTorch's default is 30 minutes; a job whose peer died should fail sooner than
# that, and 5 minutes still covers rank 0 evaluating or writing a checkpoint while
# the others wait at a barrier (docs/DECISIONS.md, "Process group and collectives").
DEFAULT_TIMEOUT = timedelta(minutes=5)


class Backend(str):
    """A backend name (PyTorch's ``torch.distributed.Backend``): a lower-case str.
    tensorplay has one backend, ``Backend.MPI`` (``"mpi"``)."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend name must be a string, but got: {name!r}")
        return str.__new__(cls, name.lower())


class DebugLevel(enum.IntEnum):
    """``OFF``, ``INFO`` or ``DETAIL`` (PyTorch's ``TORCH_DISTRIBUTED_DEBUG``).

    ``DETAIL`` checks before every collective that all ranks called the same
    collective with the same shapes, dtypes, op and root (one small allgather per
    call, about 70 us here), and raises naming the rank that differs."""
    OFF = 0
    INFO = 1
    DETAIL = 2


_DEBUG = [DebugLevel.OFF]
_CHECK = [True]     # TENSORPLAY_DISTRIBUTED_CHECK (read at init_process_group)


def set_debug_level(level):
    """Set the debug level (a ``DebugLevel``).  All ranks must use the same level:
    the DETAIL check is itself a collective."""
    _DEBUG[0] = DebugLevel(level)


def get_debug_level():
    """The current ``DebugLevel``."""
    return _DEBUG[0]


def set_debug_level_from_env():
    """Read ``TORCH_DISTRIBUTED_DEBUG`` (``OFF``, ``INFO`` or ``DETAIL``; unset: OFF)."""
    value = os.environ.get("TORCH_DISTRIBUTED_DEBUG", "OFF").upper()
    if value not in DebugLevel.__members__:
        raise ValueError(f"TORCH_DISTRIBUTED_DEBUG must be OFF, INFO or DETAIL, got "
                         f"{value!r}")
    _DEBUG[0] = DebugLevel[value]


class ProcessGroup:
    """A group of ranks and its MPI communicator.

    ``rank()``/``size()`` are this process's rank in the group and the group's size;
    ``ranks`` lists the members' global ranks.  Made by ``init_process_group``
    (the default group, ``group.WORLD``) and ``new_group``.
    """

    def __init__(self, comm, ranks, timeout, global_rank):
        self.comm = comm
        self.ctl = comm.Dup()
        self.meta = comm.Dup()                # the always-on collective check's own
        self._seq = 0                         # collectives started on this group
        self._row = None                      # (name, row) from check(), for launch()
        self.ranks = list(ranks)
        self.timeout = timeout                # seconds
        self.global_rank = global_rank
        self._rank, self._size = comm.Get_rank(), comm.Get_size()
        self._pending = set()                 # started, unfinished Works (kept alive)
        self._broken = None                   # the timeout that made the group unusable
        self._ctl_broken = None               # one that left control messages pending
        self._index = {g: i for i, g in enumerate(self.ranks)}

    def rank(self):
        return self._rank

    def size(self):
        return self._size

    def name(self):
        return Backend.MPI

    def __repr__(self):
        return f"ProcessGroup(mpi, ranks={self.ranks}, rank={self._rank})"

    def group_rank(self, name, arg, global_rank, group_value=None):
        """The group rank of the global rank passed as ``arg`` (or ``group_value``
        passed as ``group_<arg>``); an error names the argument and the group."""
        if group_value is not None:
            if global_rank is not None:
                raise ValueError(f"{name}(): pass either {arg} or group_{arg}, not both")
            if not isinstance(group_value, (int, np.integer)) or not \
                    0 <= group_value < self._size:
                raise ValueError(f"{name}(): group_{arg}={group_value!r} is not a rank of "
                                 f"the group (size {self._size})")
            return int(group_value)
        if global_rank is None:
            global_rank = 0
        if isinstance(global_rank, bool) or not isinstance(global_rank, (int, np.integer)):
            raise TypeError(f"{name}(): {arg} must be an int rank, got {global_rank!r}")
        i = self._index.get(int(global_rank))
        if i is None:
            raise ValueError(f"{name}(): {arg}={global_rank} is not a rank of the process "
                             f"group (global ranks {self.ranks})")
        return i

    def work(self, name, timeout=None):
        if self._broken is not None:
            raise RuntimeError(f"{name}(): the process group cannot be used after an "
                               f"earlier timeout ({self._broken})")
        return Work(self, name, timeout)

    def check_ctl(self, name):
        if self._ctl_broken is not None:
            raise RuntimeError(f"{name}(): tensorplay's control messages cannot be used "
                               f"after an earlier timeout ({self._ctl_broken})")

    def launch(self, work, start, async_op):
        """Start ``work``'s MPI calls (``start()`` appends its requests), then wait
        for them unless ``async_op``.  MPI errors become RuntimeErrors naming the
        collective."""
        row, self._row = self._row, None
        if row is not None and row[0] == work._name:
            self._start_meta(work, row[1])
        work._keep = start         # its closure holds the buffers (mpi4py does not
        try:                       # keep an IN_PLACE receive buffer alive)
            start()
        except mpi().Exception as e:
            work.check_meta()      # the ranks' calls differ: say how, not MPI's text
            first = str(e).strip().splitlines()[0]
            raise RuntimeError(f"{work._name}(): MPI reported: {first}. The ranks may "
                               f"have passed different shapes or dtypes: "
                               f"TORCH_DISTRIBUTED_DEBUG=DETAIL checks every "
                               f"collective") from None
        if async_op:
            self._pending.add(work)
            return work
        work.wait()
        return None

    def check(self, name, arrays=(), op=-1, root=-1):
        """Cross-rank check that every rank called the same collective on the same
        kind of tensors.  Default: record this rank's description for ``launch``,
        which starts a non-blocking ``Iallgather`` of it on ``self.meta`` beside
        the data call; ``Work.wait`` compares (``_verify``).  DETAIL: a blocking
        allgather before the call, so a mismatch raises with nothing started.
        ``TENSORPLAY_DISTRIBUTED_CHECK=0`` (read at init) turns both off."""
        self._row = None
        if self._size == 1 or not _CHECK[0]:
            return
        if _DEBUG[0] != DebugLevel.DETAIL:
            shapes = hash(tuple(a.shape for a in arrays)) & 0x7FFFFFFFFFFF
            self._row = (name, meta(name, arrays, op, root) + [shapes])
            return
        self.check_ctl(name)
        mine = np.asarray(meta(name, arrays, op, root), dtype=np.int64)
        rows = np.empty((self._size, mine.size), np.int64)
        w = self.work(name)
        w._reqs.append(self.ctl.Iallgather(mine, rows))
        w.wait()
        _compare(name, rows, mine, self, "TORCH_DISTRIBUTED_DEBUG=DETAIL check")

    def _start_meta(self, work, row):
        """Start the metadata exchange for ``work``: the ``meta`` row, this group's
        sequence number and a hash of the full shapes (dims past the fifth)."""
        self._seq += 1
        mine = np.asarray(row + [self._seq], dtype=np.int64)
        rows = np.empty((self._size, mine.size), np.int64)
        work._meta = (self.meta.Iallgather(mine, rows), mine, rows)
        work._reqs.append(work._meta[0])
        work._finish.insert(0, work.check_meta)


def _compare(name, rows, mine, pg, what):
    """Raise, naming the first rank whose row differs from ``mine`` and both calls."""
    bad = np.flatnonzero((rows != mine).any(axis=1))
    if bad.size:
        r = int(bad[0])
        seq = f" (call {mine[-1]} on the group); the data result is not valid" \
            if what.startswith("collective") else ""
        raise RuntimeError(
            f"{name}(): ranks disagree ({what}): rank {pg.ranks[r]} called "
            f"{describe(rows[r])}, rank {pg.global_rank} called {describe(mine)}{seq}")


class GroupMember:
    """``GroupMember.WORLD``: the default process group (None before
    ``init_process_group``); ``NON_GROUP_MEMBER``: what ``new_group`` returns on a
    rank outside the new group."""
    WORLD = None
    NON_GROUP_MEMBER = -100


class group:
    """``group.WORLD``: the default process group, as in PyTorch."""
    WORLD = None


_STATE = {"hook": None, "prev_hook": None, "threads": None}


def _default(name):
    pg = GroupMember.WORLD
    if pg is None:
        raise ValueError("Default process group has not been initialized, please make "
                         "sure to call init_process_group.")
    return pg


def resolve(name, grp, collective=True):
    """The ProcessGroup for ``grp`` (None: the default).  A rank outside the group
    gets None after a warning, as in PyTorch (the caller returns None)."""
    pg = _default(name)
    if grp is None:
        return pg
    if grp is GroupMember.NON_GROUP_MEMBER or (isinstance(grp, int) and grp == -100):
        if collective:
            warnings.warn(f"Running {name} on global rank {pg.global_rank} which does "
                          f"not belong to the given group.", stacklevel=3)
        return None
    if not isinstance(grp, ProcessGroup):
        raise TypeError(f"{name}(): group must be a ProcessGroup from new_group(), got "
                        f"{type(grp).__name__}")
    return grp


def _check_backend(backend):
    if backend is None:
        return Backend.MPI
    if not isinstance(backend, str):
        raise TypeError(f"init_process_group(): backend must be a str, got "
                        f"{type(backend).__name__}")
    b = backend.lower()
    if b.startswith("cpu:"):
        b = b[4:]
    if b != "mpi":
        raise ValueError(
            f"init_process_group(): backend {backend!r} is not available: tensorplay's "
            f"only backend is 'mpi' (MPI through mpi4py; launch the script with "
            f"`mpiexec -n N python script.py`). PyTorch's 'gloo' (TCP) and 'nccl' "
            f"(CUDA GPUs) do not exist in tensorplay")
    return Backend.MPI


def _expected(arg, value, env, init_method):
    """world_size/rank as given, else from torch's env:// variables when set."""
    if value is not None and value != -1:
        return value, f"{arg}={value}"
    if init_method in (None, "env://") and env in os.environ:
        try:
            return int(os.environ[env]), f"{arg}={os.environ[env]} (from the {env} " \
                                         f"environment variable)"
        except ValueError:
            return None, None
    return None, None


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1,
                       rank=-1, store=None, group_name="", pg_options=None,
                       device_id=None):
    """Join the default process group: every process that ``mpiexec`` started.

    The world (size and each process's rank) is MPI's ``COMM_WORLD``; a script run
    without ``mpiexec`` is a world of one.  ``init_method`` is not needed (MPI's
    launcher is the rendezvous) and is ignored.

    Args:
        backend (str, optional): ``"mpi"`` (or None).  Others raise.
        init_method (str, optional): ignored.
        timeout (datetime.timedelta, optional): how long an operation may wait for
            its peers before raising (default 5 minutes; PyTorch's is 30).
        world_size (int, optional): when given (or set in the ``WORLD_SIZE``
            environment variable, as torchrun does) it must equal MPI's world size.
        rank (int, optional): when given (or ``RANK``), it must equal MPI's rank.
        store, pg_options, device_id: PyTorch's; a store raises, the others must
            be None (``device_id`` may be "cpu").

    Side effects: unless the thread count was set (``OMP_NUM_THREADS`` or
    ``tensorplay.set_num_threads``), each rank's thread budget becomes
    ``max(1, cores // ranks on this node)``; an uncaught exception on any rank
    prints its traceback and aborts every rank (``MPI_Abort``), so the others do
    not hang; ``TORCH_DISTRIBUTED_DEBUG`` is read.

    Raises:
        ValueError: a second call; a backend other than MPI; a world size or rank
            that disagrees with MPI's; a store.
        RuntimeError: mpi4py is not installed.
    """
    if GroupMember.WORLD is not None:
        raise ValueError("trying to initialize the default process group twice!")
    _check_backend(backend)
    if store is not None:
        raise ValueError("init_process_group(): store is not supported: the MPI "
                         "launcher (mpiexec) is the rendezvous")
    if pg_options is not None:
        raise ValueError("init_process_group(): pg_options is not supported by the MPI "
                         "backend")
    if device_id is not None and str(device_id) != "cpu":
        raise ValueError(f"init_process_group(): device_id={device_id!r}: tensorplay "
                         f"runs on the CPU only")
    secs = _seconds("init_process_group", DEFAULT_TIMEOUT if timeout is None else timeout)
    if secs <= 0:
        raise ValueError(f"init_process_group(): timeout must be positive, got {timeout}")
    set_debug_level_from_env()
    _CHECK[0] = os.environ.get("TENSORPLAY_DISTRIBUTED_CHECK", "1").strip() not in ("0", "")
    MPI = mpi()
    world = MPI.COMM_WORLD
    n, r = world.Get_size(), world.Get_rank()
    for arg, value, env, actual in (("world_size", world_size, "WORLD_SIZE", n),
                                    ("rank", rank, "RANK", r)):
        want, said = _expected(arg, value, env, init_method)
        if want is not None and want != actual:
            raise ValueError(
                f"init_process_group(): {said}, but MPI's world has {n} process(es) and "
                f"this is rank {r}. tensorplay takes the world from MPI: launch with "
                f"`mpiexec -n <world size> python script.py` (torchrun's environment "
                f"is not a rendezvous here)")
    pg = ProcessGroup(world.Dup(), range(n), secs, r)
    GroupMember.WORLD = group.WORLD = pg
    _STATE["threads"] = _thread_budget(world)
    _install_hook(r, n)


def _thread_budget(world):
    """Give each rank ``max(1, cores // ranks on this node)`` threads unless the user
    chose a count; returns the count set, or None when left alone.

    (The user's choice is ``OMP_NUM_THREADS`` in the environment or any call of
    ``set_num_threads`` before ``init_process_group``.)"""
    from tensorplay import _config
    from tensorplay._kernels import _openmp_helpers
    local = world.Split_type(mpi().COMM_TYPE_SHARED)      # collective over the world
    on_node = local.Get_size()
    local.Free()
    if "OMP_NUM_THREADS" in os.environ or _config.CONFIG.threads_chosen:
        return None
    n = min(max(1, int(_openmp_helpers.omp_num_procs()) // on_node), _config.MAX_THREADS)
    _config.CONFIG.num_threads = n           # the budget, not the user's choice
    return n


def _install_hook(r, n):
    if _STATE["hook"] is not None:
        return

    def hook(exc_type, exc, tb):
        prev = _STATE["prev_hook"] or sys.__excepthook__
        try:
            prev(exc_type, exc, tb)
        finally:
            if n > 1:
                try:
                    sys.stdout.flush()
                    print(f"tensorplay.distributed: rank {r} raised {exc_type.__name__}; "
                          f"aborting all {n} ranks (MPI_Abort)", file=sys.stderr)
                    sys.stderr.flush()
                finally:
                    mpi().COMM_WORLD.Abort(1)

    _STATE["prev_hook"] = sys.excepthook
    _STATE["hook"] = hook
    sys.excepthook = hook


def is_initialized():
    """True after ``init_process_group`` (and before ``destroy_process_group``)."""
    return GroupMember.WORLD is not None


def destroy_process_group(group=None):
    """Leave the default group (``group=None``: also every group made by
    ``new_group``, and uninstall the abort hook) or free one ``new_group`` group.
    Operations still pending are waited for first (within the timeout)."""
    pg = _default("destroy_process_group")
    target = pg if group is None else resolve("destroy_process_group", group, False)
    if target is None:
        return
    for w in list(target._pending):
        if target._broken is None:
            w.wait()
    if target._broken is None:
        target.ctl.Free()
        target.meta.Free()
        target.comm.Free()
    if target is pg:
        GroupMember.WORLD = globals()["group"].WORLD = None
        if _STATE["hook"] is not None and sys.excepthook is _STATE["hook"]:
            sys.excepthook = _STATE["prev_hook"]
        _STATE["hook"] = _STATE["prev_hook"] = None


def get_rank(group=None):
    """This process's rank in ``group`` (default: the world); -1 outside it."""
    pg = resolve("get_rank", group, False)
    return -1 if pg is None else pg.rank()


def get_world_size(group=None):
    """The number of processes in ``group`` (default: the world); -1 outside it."""
    pg = resolve("get_world_size", group, False)
    return -1 if pg is None else pg.size()


def get_backend(group=None):
    """``Backend.MPI`` (``"mpi"``), the only backend."""
    if resolve("get_backend", group, False) is None:
        raise ValueError("Invalid process group specified")
    return Backend(Backend.MPI)


def get_process_group_ranks(group):
    """The global ranks of ``group``'s members."""
    pg = resolve("get_process_group_ranks", group, False)
    if pg is None:
        raise ValueError("get_process_group_ranks(): this rank is not in the group")
    return list(pg.ranks)


def get_global_rank(group, group_rank):
    """The global rank of ``group``'s rank ``group_rank``."""
    pg = resolve("get_global_rank", group, False)
    if pg is None or not 0 <= group_rank < pg.size():
        raise ValueError(f"get_global_rank(): group rank {group_rank} is not part of group")
    return pg.ranks[group_rank]


def get_group_rank(group, global_rank):
    """``global_rank``'s rank within ``group``."""
    pg = resolve("get_group_rank", group, False)
    if pg is None or global_rank not in pg._index:
        raise ValueError(f"get_group_rank(): global rank {global_rank} is not part of group")
    return pg._index[global_rank]


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """Wait until every rank of ``group`` has called ``barrier``.

    Args:
        timeout (datetime.timedelta, optional): default the group's timeout.

    Raises:
        RuntimeError: a rank did not arrive in time (see ``Work.wait``).
    """
    pg = resolve("barrier", group)
    if pg is None:
        return None
    pg.check("barrier")
    w = pg.work("barrier", None if timeout is None else _seconds("barrier", timeout))
    return pg.launch(w, lambda: w._reqs.append(pg.comm.Ibarrier()), async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A barrier that reports which ranks did not arrive (PyTorch's, for debugging
    hangs): rank 0 waits for a message from every other rank, then releases them.

    Args:
        timeout (datetime.timedelta, optional): default the group's timeout.
        wait_all_ranks (bool): name every missing rank, not only the first.

    Raises:
        RuntimeError: on rank 0, naming the ranks that did not arrive within
            ``timeout``; on the others, when rank 0 did not release them.
    """
    pg = resolve("monitored_barrier", group)
    if pg is None:
        return None
    pg.check_ctl("monitored_barrier")
    secs = pg.timeout if timeout is None else _seconds("monitored_barrier", timeout)
    deadline = time.monotonic() + secs
    token = np.zeros(1, np.int8)
    if pg.rank() == 0:
        reqs = [pg.ctl.Irecv(np.zeros(1, np.int8), source=i, tag=7)
                for i in range(1, pg.size())]
        missing = []
        for i, q in enumerate(reqs, start=1):
            if not poll([q], deadline):
                missing.append(pg.ranks[i])
                if not wait_all_ranks:
                    break
        if missing:
            err = RuntimeError(
                f"monitored_barrier(): rank{'s' if len(missing) > 1 else ''} "
                f"{', '.join(map(str, missing))} failed to pass monitoredBarrier in "
                f"{secs:g} s (rank 0 waited)")
            pg._ctl_broken = err
            raise err
        for q in [pg.ctl.Isend(token, dest=i, tag=8) for i in range(1, pg.size())]:
            poll([q], deadline)
    else:
        q = pg.ctl.Isend(token, dest=0, tag=7)
        back = pg.ctl.Irecv(np.zeros(1, np.int8), source=0, tag=8)
        if not poll([q, back], deadline):
            err = RuntimeError(f"monitored_barrier(): rank {pg.global_rank} was not "
                               f"released by rank {pg.ranks[0]} within {secs:g} s")
            pg._ctl_broken = err
            raise err
    return None


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None,
              sort_ranks=True):
    """A process group of the given global ``ranks`` (default: all).

    Every member must call it, in the same order as its other ``new_group`` calls;
    ranks outside get ``GroupMember.NON_GROUP_MEMBER`` (and make no MPI call, so
    they may skip it, as with PyTorch's ``use_local_synchronization=True``).

    Raises:
        ValueError: a rank outside the world, a duplicate rank, another backend.
    """
    pg = _default("new_group")
    if backend is not None:
        _check_backend(backend)
    n = pg.size()
    ranks = list(range(n)) if ranks is None else [int(x) for x in ranks]
    if sort_ranks:
        ranks = sorted(ranks)
    if len(set(ranks)) != len(ranks) or any(not 0 <= x < n for x in ranks):
        raise ValueError(f"new_group(): ranks {ranks} must be distinct ranks of the world "
                         f"(size {n})")
    secs = pg.timeout if timeout is None else _seconds("new_group", timeout)
    if pg.global_rank not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    MPI = mpi()
    world_group = MPI.COMM_WORLD.Get_group()
    sub = world_group.Incl(ranks)
    comm = pg.comm.Create_group(sub, tag=11)
    sub.Free()
    world_group.Free()
    return ProcessGroup(comm, ranks, secs, pg.global_rank)


# the collectives the DETAIL check can name (append only: codes are compared)
_CODES = ["barrier", "all_reduce", "broadcast", "reduce", "all_gather",
          "all_gather_into_tensor", "reduce_scatter_tensor", "reduce_scatter", "gather",
          "scatter", "all_to_all_single", "all_to_all", "broadcast_object_list",
          "all_gather_object", "gather_object", "scatter_object_list"]
_DIMS = 5          # dims of each tensor compared exactly (and numel for the rest)
_PER = 3 + _DIMS


def meta(name, arrays=(), op=-1, root=-1):
    """The fields the DETAIL check compares: the collective, op, root, and for up
    to two tensors dtype, ndim, numel and the first dims (a fixed-length row)."""
    from tensorplay.distributed._work import dtype_code
    f = [_CODES.index(name), int(op), int(root)]
    for a in arrays:
        f += [dtype_code(a), a.ndim, a.size] + list(a.shape[:_DIMS]) \
            + [-1] * (_DIMS - min(a.ndim, _DIMS))
    return f + [-1] * (3 + 2 * _PER - len(f))


def describe(row):
    """One rank's ``meta`` row as text: ``all_reduce(float32 (3,), op=SUM)``."""
    from tensorplay.distributed._work import _DTYPES, ReduceOp, shape_str
    row = [int(x) for x in row]
    parts = []
    for k in range(2):
        d, nd, numel, *dims = row[3 + k * _PER: 3 + (k + 1) * _PER]
        if d < 0:
            continue
        shape = shape_str(dims[:nd]) if nd <= _DIMS else \
            f"{shape_str(dims)[:-1]}, ...) ({nd} dims, {numel} elements)"
        parts.append(f"{list(_DTYPES.values())[d]} tensor of shape {shape}")
    if row[1] >= 0:
        parts.append(f"op={ReduceOp.RedOpType(row[1]).name}")
    if row[2] >= 0:
        parts.append(f"root={row[2]}")
    return f"{_CODES[row[0]]}({', '.join(parts)})"
