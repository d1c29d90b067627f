"""``DistributedSampler`` (``torch.utils.data.distributed``): each of
``num_replicas`` processes reads its own share of a dataset.

The partition is PyTorch's: the index list (``range(len(dataset))``, or a
permutation when shuffling) is padded by repeating its head until its length is
a multiple of ``num_replicas`` (or cut to one with ``drop_last``), and rank ``r``
takes every ``num_replicas``-th index starting at ``r``.  Without shuffling the
shares are exactly torch's.  With shuffling the permutation is
``tensorplay.randperm(n, generator=Generator().manual_seed(seed + epoch))``:
tensorplay's stream (numpy's PCG64), so the order differs from torch's for the
same seed, while every rank computes the same permutation (the point of the seed).
"""
import math
import numbers

from tensorplay.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]


def _default(what):
    """The default process group's world size or rank (torch's defaults)."""
    try:
        import tensorplay.distributed as dist
    except ImportError as e:                    # pragma: no cover - packaging
        raise RuntimeError("Requires distributed package to be available") from e
    if not getattr(dist, "is_available", lambda: True)():
        raise RuntimeError("Requires distributed package to be available")
    return dist.get_world_size() if what == "num_replicas" else dist.get_rank()


def _check_int(value, name, minimum):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise TypeError(f"DistributedSampler(): {name} must be an int, got "
                        f"{type(value).__name__}")
    if value < minimum:
        raise ValueError(f"DistributedSampler(): {name} must be >= {minimum}, got {value}")
    return int(value)


class DistributedSampler(Sampler):
    """Indices of ``dataset`` for one of ``num_replicas`` processes.

    Use it as a ``DataLoader``'s ``sampler`` (with ``shuffle=False`` on the loader)
    and call :meth:`set_epoch` at the start of every epoch, before iterating, so
    each epoch gets a new order (the same on every rank).

    Args:
        dataset: a sized dataset; assumed to be the same on every rank.
        num_replicas (int, optional): the number of processes; default the world
            size of the default process group (``tensorplay.distributed``).
        rank (int, optional): this process's share, in ``[0, num_replicas)``;
            default the process group's rank.
        shuffle (bool): shuffle the indices (default True), from
            ``seed + epoch`` -- tensorplay's stream, not torch's (module docstring).
        seed (int): the shuffling seed; must be the same on every rank. Default 0.
        drop_last (bool): drop the tail so the length divides evenly; otherwise
            (default) pad by repeating indices from the head of the list.

    ``len(sampler)`` is ``num_samples``: ``ceil(len(dataset) / num_replicas)``, or
    with ``drop_last`` and an uneven length ``ceil((len(dataset) - num_replicas) /
    num_replicas)``; ``total_size = num_samples * num_replicas``.

    Raises:
        ValueError: ``rank`` outside ``[0, num_replicas - 1]`` (torch's message),
            ``num_replicas`` < 1, a negative ``seed``.
        TypeError: a non-int ``num_replicas``, ``rank``, ``seed`` or ``epoch``.
        RuntimeError: ``num_replicas``/``rank`` omitted and no process group
            (``tensorplay.distributed``'s error).

    Example::

        >>> sampler = DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=False)
        >>> list(DistributedSampler(range(5), num_replicas=2, rank=1, shuffle=False))
        [1, 3, 0]
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None:
            num_replicas = _default("num_replicas")
        if rank is None:
            rank = _default("rank")
        num_replicas = _check_int(num_replicas, "num_replicas", 1)
        rank = _check_int(rank, "rank", -(2 ** 63))
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = bool(drop_last)
        n = len(dataset)
        if self.drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = bool(shuffle)
        self.seed = _check_int(seed, "seed", 0)

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            from tensorplay._generator import Generator
            from tensorplay._random import randperm
            g = Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:                   # fewer samples than replicas: repeat the list
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        assert len(indices) == self.total_size, (len(indices), self.total_size)
        indices = indices[self.rank:self.total_size:self.num_replicas]
        assert len(indices) == self.num_samples, (len(indices), self.num_samples)
        return iter(indices)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Set the epoch: with ``shuffle``, the next ``iter()`` permutes with seed
        ``seed + epoch`` (call it on every rank with the same value)."""
        self.epoch = _check_int(epoch, "epoch", -self.seed)
