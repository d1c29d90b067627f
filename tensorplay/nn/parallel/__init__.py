"""``tensorplay.nn.parallel``: ``DistributedDataParallel`` over
``tensorplay.distributed`` (MPI), PyTorch's ``torch.nn.parallel`` names.

``DataParallel`` (one process driving several GPUs) has no meaning on a CPU
library and raises with a pointer to ``DistributedDataParallel``.
"""
from tensorplay.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel", "DataParallel"]


class DataParallel:
    """Not implemented: single-process multi-GPU ``torch.nn.DataParallel``.

    Raises:
        NotImplementedError: always, naming the replacement.
    """

    def __init__(self, module=None, device_ids=None, output_device=None, dim=0):
        raise NotImplementedError(
            "tensorplay.nn.parallel.DataParallel is not implemented: it splits a batch "
            "over the GPUs of one process, and tensorplay runs on the CPU (its kernels "
            "already use every core). For several processes or machines use "
            "tensorplay.nn.parallel.DistributedDataParallel under mpiexec.")
