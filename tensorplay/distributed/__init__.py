"""Data-parallel training across processes on MPI: PyTorch's ``torch.distributed``
names over mpi4py.

Launch one process per rank with MPI's launcher and join the group::

    $ mpiexec -n 2 python train.py

    import tensorplay.distributed as dist
    dist.init_process_group("mpi")
    t = tensorplay.ones(3) * dist.get_rank()
    dist.all_reduce(t)                       # in place, on every rank
    dist.destroy_process_group()

Collectives work in place on the tensors' own numpy storage (float32, float64,
int64, int32, bool), synchronously or with ``async_op=True`` returning a ``Work``.
Every wait has a deadline (``init_process_group(timeout=...)``, default 5 min),
and an uncaught exception on one rank aborts them all, so a failure never hangs
the job.  ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` checks that the ranks' shapes and
dtypes agree before each collective.  The design notes are in docs/DECISIONS.md,
"Data-parallel training (issue 10)".

Importing this module does not import mpi4py (which starts MPI); the first
``init_process_group`` does.
"""
import importlib.util

from tensorplay.distributed._collectives import (all_gather, all_gather_into_tensor,  # noqa: F401
                                                 all_gather_single, all_reduce,
                                                 all_to_all, all_to_all_single, broadcast,
                                                 gather, reduce, reduce_scatter,
                                                 reduce_scatter_single,
                                                 reduce_scatter_tensor, scatter)
from tensorplay.distributed._group import (Backend, DebugLevel, GroupMember,  # noqa: F401
                                           ProcessGroup, barrier, destroy_process_group,
                                           get_backend, get_debug_level, get_global_rank,
                                           get_group_rank, get_process_group_ranks,
                                           get_rank, get_world_size, group,
                                           init_process_group, is_initialized,
                                           monitored_barrier, new_group, set_debug_level,
                                           set_debug_level_from_env)
from tensorplay.distributed._p2p import (all_gather_object, broadcast_object_list,  # noqa: F401
                                        gather_object, irecv, isend, recv,
                                        scatter_object_list, send)
from tensorplay.distributed._work import Future, ReduceOp, Work  # noqa: F401


def is_available():
    """True: the package is always importable (``is_mpi_available`` says whether
    it can run)."""
    return True


def is_mpi_available():
    """True when mpi4py is installed (checked without importing it, which would
    start MPI)."""
    return importlib.util.find_spec("mpi4py") is not None


def is_gloo_available():
    """False: tensorplay has no gloo backend."""
    return False


def is_nccl_available():
    """False: tensorplay has no NCCL backend (no GPUs)."""
    return False
