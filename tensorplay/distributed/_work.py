"""MPI access, reduction ops, tensor buffers and the Work handle.

Design: every collective is started as a non-blocking MPI call on the tensor's own
numpy storage (``Iallreduce(IN_PLACE, array)``: no copy when the tensor is
C-contiguous) and returned as a ``Work``.  ``async_op=False`` is ``Work.wait()``
right away.  ``wait`` polls ``MPI.Request.Testall`` against a deadline (the
process group's timeout) instead of blocking in ``MPI_Wait``, so a peer that never
arrives becomes a RuntimeError naming the collective instead of a hang.  MPICH
progresses a non-blocking collective only inside MPI calls, so the poll spins for
the first millisecond and then sleeps in growing steps up to 1 ms (measured on this
machine: as fast as the blocking call from 1K to 4M float32 elements, and it leaves
the core to the other rank on a 2-core machine).  ``is_completed()`` tests the
requests too, which is what drives progress when nobody waits.
"""
import enum
import time
from datetime import timedelta

import numpy as np

from tensorplay._tensor import Tensor
from tensorplay.autograd._inplace import bump

__all__ = ["ReduceOp", "Work", "mpi"]

_MPI = None


def mpi():
    """The ``mpi4py.MPI`` module (importing it initialises MPI), or a RuntimeError
    saying how to install it."""
    global _MPI
    if _MPI is None:
        try:
            import mpi4py
            mpi4py.rc.errors = "exception"     # MPI errors raise (mpi4py's default)
            from mpi4py import MPI
        except ImportError as e:
            raise RuntimeError(
                "tensorplay.distributed needs mpi4py and an MPI library: "
                "`pip install mpi4py mpich` (or the 'distributed' extra: "
                "`pip install tensorplay[distributed]`), then launch with "
                "`mpiexec -n 2 python script.py`") from e
        _MPI = MPI
    return _MPI


class ReduceOp:
    """Reduction operations for ``all_reduce``, ``reduce`` and ``reduce_scatter*``
    (PyTorch's ``torch.distributed.ReduceOp``): ``SUM``, ``AVG``, ``PRODUCT``,
    ``MIN``, ``MAX``, ``BAND``, ``BOR``, ``BXOR``.

    ``AVG`` is the sum divided by the group's size, floating tensors only (PyTorch
    raises for integer tensors too).  ``BAND``/``BOR``/``BXOR`` need integer or bool
    tensors.  On bool tensors ``SUM``/``MAX``/``BOR`` are logical or and
    ``PRODUCT``/``MIN``/``BAND`` logical and, as PyTorch's results are.
    ``PREMUL_SUM`` is NCCL-only in PyTorch and raises here.
    """

    class RedOpType(enum.IntEnum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7
        PREMUL_SUM = 8

    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM


_DTYPES = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64",
           np.dtype(np.int64): "int64", np.dtype(np.int32): "int32",
           np.dtype(np.bool_): "bool"}
_DTYPE_CODE = {d: i for i, d in enumerate(_DTYPES)}


def dtype_code(arr):
    return _DTYPE_CODE[arr.dtype]


_OPS = {}       # (op, dtype kind) -> MPI.Op, filled on first use


def mpi_op(name, op, arr):
    """The MPI reduction for ``op`` on ``arr``'s dtype; errors name the collective."""
    key = (op, arr.dtype.kind)
    found = _OPS.get(key) if isinstance(op, ReduceOp.RedOpType) else None
    if found is not None:
        return found
    MPI = mpi()
    try:
        op = ReduceOp.RedOpType(op)
    except ValueError:
        raise TypeError(f"{name}(): op must be a tensorplay.distributed.ReduceOp "
                        f"(SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR), got {op!r}") from None
    R = ReduceOp.RedOpType
    kind = arr.dtype.kind
    if op is R.PREMUL_SUM:
        raise ValueError(f"{name}(): ReduceOp.PREMUL_SUM is only available with NCCL in "
                         f"PyTorch; scale the tensor and use ReduceOp.SUM")
    if op in (R.BAND, R.BOR, R.BXOR) and kind == "f":
        raise RuntimeError(f"{name}(): Cannot use ReduceOp.{op.name} with non-integral "
                           f"dtype {_DTYPES[arr.dtype]}")
    if op is R.AVG and kind != "f":
        raise RuntimeError(f"{name}(): ReduceOp.AVG needs a floating tensor (the mean of "
                           f"integers is not an integer), got {_DTYPES[arr.dtype]}")
    if kind == "b":
        if op in (R.SUM, R.MAX, R.BOR):
            found = MPI.LOR
        elif op in (R.PRODUCT, R.MIN, R.BAND):
            found = MPI.LAND
        else:
            found = MPI.LXOR
    else:
        found = {R.SUM: MPI.SUM, R.AVG: MPI.SUM, R.PRODUCT: MPI.PROD, R.MIN: MPI.MIN,
                 R.MAX: MPI.MAX, R.BAND: MPI.BAND, R.BOR: MPI.BOR, R.BXOR: MPI.BXOR}[op]
    _OPS[(op, kind)] = found
    return found


def is_avg(op):
    return op == 1          # ReduceOp.AVG (an IntEnum)


# ------------------------------------------------------------------ tensor buffers
def check_tensor(name, t, arg):
    """``t``'s ndarray storage, after checking it is a Tensor of a dtype MPI takes."""
    if not isinstance(t, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' must be a tensorplay Tensor, got "
                        f"{type(t).__name__}")
    a = t._data
    if not isinstance(a, np.ndarray):
        raise RuntimeError(f"{name}(): argument '{arg}': collectives on batched tensors "
                           f"(inside vmap) are not supported")
    if a.dtype not in _DTYPES:
        raise TypeError(f"{name}(): argument '{arg}' has dtype {a.dtype}, which "
                        f"tensorplay.distributed does not send")
    return a


def in_buf(name, t, arg):
    """A C-contiguous array holding ``t``'s values, to be read: ``t``'s own storage
    when it is contiguous, else a contiguous copy (``t`` is not written)."""
    a = check_tensor(name, t, arg)
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def out_buf(name, t, arg, work, keep_values=True):
    """A C-contiguous array that MPI writes ``t``'s new values into.

    ``t``'s own storage when it is contiguous (no copy).  Otherwise (a transposed or
    sliced view) a contiguous staging array -- holding ``t``'s values when
    ``keep_values`` (in-place reductions read them) -- that ``work`` copies back into
    ``t`` when the operation completes, as PyTorch's backends write non-contiguous
    tensors.  Bumps ``t``'s version counter, as an in-place op does.

    Raises:
        RuntimeError: ``t``'s storage is read-only (an ``expand()`` view).
    """
    a = check_tensor(name, t, arg)
    if not a.flags.writeable:
        raise RuntimeError(f"{name}(): argument '{arg}' is read-only (a broadcast view "
                           f"made by expand(), or a read-only ndarray); clone() it first")
    bump(t, name)
    if a.flags.c_contiguous:
        return a
    staging = np.ascontiguousarray(a) if keep_values else np.empty(a.shape, a.dtype)
    work._finish.append(lambda: np.copyto(a, staging))
    return staging


def shape_str(shape):
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


# ------------------------------------------------------------------ Work
def _seconds(name, timeout):
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        return float(timeout)
    raise TypeError(f"{name}(): timeout must be a datetime.timedelta, got "
                    f"{type(timeout).__name__}")


def poll(reqs, deadline, statuses=None):
    """Test ``reqs`` until all complete (True) or ``deadline`` passes (False);
    ``statuses`` (a list) receives their statuses."""
    testall = mpi().Request.Testall
    if testall(reqs, statuses):
        return True
    now = time.monotonic()
    spin_until, delay = now + 1e-3, 2e-5
    while True:
        if testall(reqs, statuses):
            return True
        now = time.monotonic()
        if now >= deadline:
            return testall(reqs, statuses)
        if now > spin_until:
            time.sleep(min(delay, max(deadline - now, 0.0)))
            delay = min(delay * 1.5, 1e-3)


class Work:
    """The handle of a started collective or point-to-point operation
    (``torch.distributed.Work``): returned by collectives called with
    ``async_op=True`` and by ``isend``/``irecv``.

    The output tensors may be read only after ``wait()`` returns (or
    ``is_completed()`` is True); the input tensors must not be written before then.
    """
    __slots__ = ("_pg", "_name", "_reqs", "_finish", "_outputs", "_started", "_timeout",
                 "_done", "_error", "_source", "_statuses", "_keep", "_meta", "__weakref__")

    def __init__(self, pg, name, timeout=None):
        self._pg = pg
        self._name = name
        self._reqs = []
        self._finish = []          # callables run once, in order, on completion
        self._outputs = []
        self._started = time.monotonic()
        self._timeout = pg.timeout if timeout is None else timeout    # seconds
        self._done = False
        self._error = None
        self._source = None
        self._statuses = None      # a list when the statuses are needed (recv)
        self._keep = None          # what holds the buffers alive until completion
        self._meta = None          # (request, this rank's row, all rows): the check

    def _complete(self):
        self._done = True
        self._reqs = []
        self._keep = None
        finish, self._finish = self._finish, []
        if self._pg is not None:
            self._pg._pending.discard(self)
        try:
            for f in finish:
                f()
        except Exception as e:
            self._error = e
            raise

    def check_meta(self):
        """Complete the collective check's exchange (if any) and raise, naming both
        ranks and their calls, when a rank described a different call."""
        if self._meta is None:
            return
        req, mine, rows = self._meta
        self._meta = None
        if not poll([req], min(time.monotonic() + 5.0, self._started + self._timeout)):
            return                 # the peer never started one: the timeout reports
        from tensorplay.distributed._group import _compare
        _compare(self._name, rows, mine, self._pg, "collective check")

    def is_completed(self):
        """True once the operation has finished (tests the MPI requests, which also
        lets MPI progress the operation)."""
        if self._done:
            return True
        if self._error is None and self._test(lambda: mpi().Request.Testall(
                self._reqs, self._statuses)):
            self._complete()
        return self._done

    def _test(self, fn):
        try:
            return fn()
        except mpi().Exception as e:
            raise self._mpi_error(e) from None

    def _mpi_error(self, e):
        try:
            self.check_meta()      # a mismatch explains MPI's error better than MPI
        except RuntimeError as m:
            self._error = m
            return m
        first = str(e).strip().splitlines()[0]
        self._error = RuntimeError(f"{self._name}: MPI reported: {first} (on rank "
                                   f"{self._pg.global_rank}; a message or buffer size "
                                   f"differs between the ranks)")
        return self._error

    def is_success(self):
        """True when the operation completed without error."""
        return self.is_completed() and self._error is None

    def exception(self):
        """The error that ended the operation (a timeout), or None."""
        return self._error

    def wait(self, timeout=None):
        """Block until the operation completes; returns True.

        Args:
            timeout (datetime.timedelta, optional): how long to wait from now.
                Default (None or ``timedelta(0)``): until the process group's
                timeout (``init_process_group(timeout=...)``) after the operation
                was started.

        Raises:
            RuntimeError: the deadline passed first, naming the operation, this rank
                and the group's ranks.  MPI cannot cancel a started collective, so
                the process group is unusable afterwards (every later call raises);
                an uncaught error aborts the job (``init_process_group`` installs
                the hook).
        """
        if self._error is not None:
            raise self._error
        if self._done:
            return True
        if timeout is None and self._statuses is None:
            try:                                  # the common case: already complete
                done = _MPI.Request.Testall(self._reqs)
            except _MPI.Exception as e:
                raise self._mpi_error(e) from None
            if done:
                self._complete()
                return True
        pg = self._pg
        secs = None if timeout is None else _seconds("wait", timeout)
        if not secs:
            secs = self._timeout
            deadline = self._started + secs
        else:
            deadline = time.monotonic() + secs
        if self._test(lambda: poll(self._reqs, deadline, self._statuses)):
            self._complete()
            return True
        err = RuntimeError(
            f"{self._name}: timed out after {secs:g} s on rank {pg.global_rank} "
            f"(process group of ranks {pg.ranks}): a peer rank did not reach the "
            f"matching call -- it raised, exited, is stuck, or called a different "
            f"collective. The process group cannot be used after this.")
        self._error = err
        pg._broken = err
        raise err

    def result(self):
        """The output tensors of the operation (after waiting)."""
        self.wait()
        return list(self._outputs)

    def source_rank(self):
        """The global rank a completed ``irecv`` received from."""
        self.wait()
        if self._source is None:
            raise RuntimeError(f"{self._name}: source_rank() is only defined for recv")
        return self._source

    def get_future(self):
        """A ``Future`` completed with the output tensors when the operation
        completes (its ``wait()`` waits on this Work)."""
        return Future(self)

    def __repr__(self):
        state = "completed" if self._done else ("failed" if self._error else "pending")
        return f"Work({self._name}, {state})"


class Future:
    """The minimal ``torch.futures.Future`` of a ``Work``: ``wait()``/``value()``
    return the output tensors, ``done()`` tests, ``then(fn)`` returns a Future of
    ``fn(self)`` (run when waited on: nothing runs in the background here)."""
    __slots__ = ("_work", "_fn", "_parent", "_value", "_has")

    def __init__(self, work, fn=None, parent=None):
        self._work, self._fn, self._parent = work, fn, parent
        self._has, self._value = False, None

    def done(self):
        return self._work.is_completed()

    def wait(self):
        if not self._has:
            if self._fn is None:
                self._value = self._work.result()
            else:
                self._parent.wait()
                self._value = self._fn(self._parent)
            self._has = True
        return self._value

    value = wait

    def then(self, callback):
        return Future(self._work, callback, self)
