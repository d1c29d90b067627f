"""``DataLoader`` (``torch.utils.data.DataLoader``), single-process.

It batches a map-style dataset through a sampler and a ``BatchSampler``, or an
``IterableDataset`` in its own order, and collates each batch with
``default_collate`` (or ``collate_fn``), with PyTorch's arguments, defaults,
mutual-exclusion errors and ``len()``.

Differences from PyTorch: ``num_workers > 0`` raises ``NotImplementedError``
(loading runs in the calling process); ``pin_memory`` is accepted and does
nothing (CPU only); no base seed is drawn per iterator (there are no workers to
seed), so the default generator's stream advances only by what the sampler
draws; shuffled orders are reproducible under ``tensorplay.manual_seed`` or
``generator=`` but are not torch's orders.
"""
import math
import numbers

from tensorplay.utils.data._collate import default_collate, default_convert
from tensorplay.utils.data.dataset import IterableDataset, TensorDataset
from tensorplay.utils.data.sampler import (BatchSampler, RandomSampler, Sampler,
                                           SequentialSampler)

__all__ = ["DataLoader", "get_worker_info"]


def get_worker_info():
    """``None``: loading always runs in the main process (PyTorch returns None there)."""
    return None


class _InfiniteConstantSampler(Sampler):
    """``None`` forever: the placeholder sampler of an iterable dataset."""

    def __iter__(self):
        while True:
            yield None


class DataLoader:
    """Iterate over ``dataset`` in batches.

    Args:
        dataset: a map-style dataset (``__getitem__`` and ``__len__``) or an
            ``IterableDataset``.
        batch_size (int or None): samples per batch (default 1).  ``None`` turns
            batching off: each sample is yielded after ``default_convert``.
        shuffle (bool): a new random order at every pass (``RandomSampler`` with
            ``generator``).  Default False.
        sampler (Sampler or iterable, optional): the order of indices; excludes
            ``shuffle``.
        batch_sampler (Sampler or iterable of index lists, optional): whole
            batches of indices; excludes batch_size, shuffle, sampler, drop_last.
        num_workers (int): only 0 (single process).
        collate_fn (callable, optional): list of samples -> batch; default
            ``default_collate`` (``default_convert`` when ``batch_size=None``).
        pin_memory (bool): accepted, ignored (CPU only).
        drop_last (bool): drop a last, incomplete batch.
        timeout (number): must be >= 0; unused without workers.
        worker_init_fn, multiprocessing_context, prefetch_factor,
            persistent_workers: PyTorch's worker options; anything but their
            defaults needs workers and raises as PyTorch does with num_workers=0.
        generator (tensorplay.Generator, optional): the source of ``shuffle``'s
            orders (default: a seed drawn from the default generator per pass).

    Raises:
        ValueError: PyTorch's mutually exclusive options (sampler with shuffle;
            batch_sampler with batch_size/shuffle/sampler/drop_last; batch_size=None
            with drop_last; shuffle, sampler or batch_sampler with an
            IterableDataset), negative num_workers or timeout, worker options
            without workers, a bad batch_size (from ``BatchSampler``), and setting
            batch_size, batch_sampler, sampler, drop_last or dataset after creation.
        NotImplementedError: ``num_workers > 0``.

    Example::

        >>> ds = TensorDataset(tensorplay.arange(10.), tensorplay.arange(10))
        >>> [x.shape for x, y in DataLoader(ds, batch_size=4)]
        [tensorplay.Size([4]), tensorplay.Size([4]), tensorplay.Size([2])]
    """
    __initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None,
                 batch_sampler=None, num_workers=0, collate_fn=None, pin_memory=False,
                 drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None,
                 persistent_workers=False, pin_memory_device="", in_order=True):
        if isinstance(num_workers, bool) or not isinstance(num_workers, numbers.Integral):
            raise TypeError(f"DataLoader(): num_workers must be an int, not "
                            f"{type(num_workers).__name__}")
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use "
                             "num_workers=0 to disable multiprocessing.")
        if num_workers > 0:
            raise NotImplementedError(
                f"DataLoader(num_workers={num_workers}): tensorplay loads data in the "
                f"calling process only; use num_workers=0")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable "
                             "multiprocessing, otherwise set prefetch_factor to None.")
        if persistent_workers:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if multiprocessing_context is not None:
            raise ValueError(f"multiprocessing_context can only be used with "
                             f"multi-process loading (num_workers > 0), but got "
                             f"num_workers={num_workers}")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.persistent_workers = persistent_workers
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._iterable = True
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"shuffle option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"sampler option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got "
                                 f"batch_sampler={batch_sampler}")
        else:
            self._iterable = False
            shuffle = bool(shuffle)

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with "
                                 "batch_size, shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is "
                             "mutually exclusive with drop_last")

        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.__initialized = True

    def __setattr__(self, attr, val):
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler",
                                           "drop_last", "dataset", "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        return _SingleProcessIter(self)

    def __len__(self):
        """Batches per pass: ``len(batch_sampler)`` (or ``len(sampler)`` without
        batching); for an IterableDataset, from ``len(dataset)`` (TypeError if it
        has none), rounded as ``drop_last`` says."""
        if self._iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                length = (length // self.batch_size if self.drop_last
                          else math.ceil(length / self.batch_size))
            return length
        return len(self._index_sampler)


class _SingleProcessIter:
    """One pass over a DataLoader (PyTorch's ``_SingleProcessDataLoaderIter``)."""

    def __init__(self, loader):
        self._loader = loader
        self._dataset = loader.dataset
        self._auto = loader._auto_collation
        self._collate = loader.collate_fn
        self._drop_last = loader.drop_last
        self._sampler_iter = iter(loader._index_sampler)
        self._dataset_iter = iter(self._dataset) if loader._iterable else None
        # A plain TensorDataset collated by default_collate: one gather per tensor
        # (t[indices]) gives the batch that stacking the samples t[i] would, at a
        # fraction of the cost (docs/DECISIONS.md).  Subclasses take the general path.
        self._gather = (type(self._dataset) is TensorDataset and self._auto
                        and self._collate is default_collate)
        self._ended = False
        self._num_yielded = 0

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def __next__(self):
        index = next(self._sampler_iter)        # StopIteration ends the pass
        if self._gather and index and all(type(i) is int for i in index):
            self._num_yielded += 1
            ids = _index_tensor(index)
            return [t[ids] for t in self._dataset.tensors]
        data = self._fetch_iterable(index) if self._dataset_iter is not None \
            else self._fetch_map(index)
        self._num_yielded += 1
        return self._collate(data)

    def _fetch_map(self, index):
        ds = self._dataset
        if not self._auto:
            return ds[index]
        getitems = getattr(ds, "__getitems__", None)
        if getitems:
            return getitems(index)
        return [ds[i] for i in index]

    def _fetch_iterable(self, index):
        if self._ended:
            raise StopIteration
        if not self._auto:
            return next(self._dataset_iter)
        data = []
        for _ in index:
            try:
                data.append(next(self._dataset_iter))
            except StopIteration:
                self._ended = True
                break
        if not data or (self._drop_last and len(data) < len(index)):
            raise StopIteration
        return data


def _index_tensor(index):
    import numpy as np

    from tensorplay._creation import from_numpy
    return from_numpy(np.array(index, dtype=np.int64))
