"""Datasets, samplers and ``DataLoader`` (PyTorch's ``torch.utils.data``), single-process.

``from tensorplay.utils.data import DataLoader, TensorDataset, random_split`` works
as ``torch.utils.data`` does; shuffling draws from ``tensorplay.Generator``s
(seeded, reproducible; numpy's streams, not torch's orders).  Multi-process loading
(``num_workers > 0``) is not implemented; ``DistributedSampler`` splits a dataset
over the processes of ``tensorplay.distributed``.
"""
from tensorplay.utils.data._collate import default_collate, default_convert
from tensorplay.utils.data.dataloader import DataLoader, get_worker_info
from tensorplay.utils.data.dataset import (ChainDataset, ConcatDataset, Dataset,
                                           IterableDataset, Subset, TensorDataset,
                                           random_split)
from tensorplay.utils.data.distributed import DistributedSampler
from tensorplay.utils.data.sampler import (BatchSampler, RandomSampler, Sampler,
                                           SequentialSampler, SubsetRandomSampler,
                                           WeightedRandomSampler)

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "ChainDataset", "random_split", "Sampler", "SequentialSampler",
           "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler", "DistributedSampler", "DataLoader", "default_collate",
           "default_convert", "get_worker_info"]
