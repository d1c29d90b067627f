"""Datasets (``torch.utils.data.dataset``): ``Dataset``, ``IterableDataset``,
``TensorDataset``, ``Subset``, ``ConcatDataset``, ``ChainDataset`` and
``random_split``, with PyTorch's behaviour and exception types.

A map-style dataset is any object with ``__getitem__(index)`` and ``__len__``; an
iterable-style dataset (``IterableDataset``) yields samples from ``__iter__``.
"""
import bisect
import itertools
import math
import numbers
import warnings

from tensorplay._tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "ChainDataset", "random_split"]


class Dataset:
    """A map-style dataset: subclasses define ``__getitem__(index)`` (and usually
    ``__len__``, which samplers and ``DataLoader.__len__`` need).

    ``a + b`` is ``ConcatDataset([a, b])``.
    """

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """An iterable-style dataset: subclasses define ``__iter__`` yielding samples
    (``DataLoader`` then batches them in order; no sampler, no shuffle).

    ``a + b`` is ``ChainDataset([a, b])``.
    """

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement "
                                  "__iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are tuples ``(t[i] for t in tensors)``: tensors indexed along dim 0.

    Args:
        *tensors (Tensor): one or more tensors of the same size in dim 0.

    Raises:
        ValueError: no tensors.  TypeError: an argument that is not a Tensor.
        IndexError: a 0-d tensor.  AssertionError: sizes differ in dim 0
            (PyTorch's type, "Size mismatch between tensors").
    """

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset(): expected at least one tensor")
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(f"TensorDataset(): argument {i} must be a Tensor, not "
                                f"{type(t).__name__}")
            if t.ndim == 0:
                raise IndexError(f"TensorDataset(): tensor {i} is 0-d; its dim 0 must "
                                 f"index the samples")
        sizes = [t.shape[0] for t in tensors]
        if any(s != sizes[0] for s in sizes):
            raise AssertionError(f"TensorDataset(): Size mismatch between tensors: sizes "
                                 f"in dim 0 are {sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order.

    Args:
        dataset: a map-style dataset.
        indices (sequence of int): positions in ``dataset``.
    """

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        """A list of samples (the batched fetch PyTorch's fetcher uses when the
        wrapped dataset has ``__getitems__`` itself)."""
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """The map-style datasets one after another.

    Attributes:
        datasets (list), cumulative_sizes (list of int): the running total of lengths.

    Raises:
        AssertionError: no datasets, or an ``IterableDataset`` among them (PyTorch's
            type and messages).
        IndexError: an index out of range when reading.
    """

    @staticmethod
    def cumsum(sequence):
        r, s = [], 0
        for e in sequence:
            s += len(e)
            r.append(s)
        return r

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        n = len(self)
        if idx < 0:
            if -idx > n:
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = n + idx
        if idx >= n:
            raise IndexError(f"ConcatDataset: index {idx} is out of range for a dataset "
                             f"of length {n}")
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        start = 0 if dataset_idx == 0 else self.cumulative_sizes[dataset_idx - 1]
        sample_idx = idx - start
        return self.datasets[dataset_idx][sample_idx]


class ChainDataset(IterableDataset):
    """Iterable datasets chained one after another (``itertools.chain``)."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


def random_split(dataset, lengths, generator=None):
    """Split ``dataset`` into non-overlapping ``Subset``s of the given lengths, from
    one random permutation of its indices (PyTorch's algorithm).

    Args:
        dataset: a map-style dataset.
        lengths (sequence of int, or of float fractions summing to 1): with
            fractions, each split gets ``floor(len(dataset) * frac)`` items and the
            remainder is dealt one by one round-robin from the first split; an
            empty split warns.
        generator (tensorplay.Generator, optional): the permutation's source
            (default: the default generator, as ``tensorplay.manual_seed`` seeds it).

    Returns:
        list of Subset, one per length.

    Raises:
        ValueError: a fraction outside [0, 1], a negative length, or lengths that do
            not sum to ``len(dataset)``.  TypeError: lengths that are not numbers.
    """
    from tensorplay._random import randperm
    lengths = list(lengths)
    for i, v in enumerate(lengths):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"random_split(): lengths[{i}] must be an int or a fraction, "
                            f"not {type(v).__name__}")
    n = len(dataset)
    total = sum(lengths)
    if math.isclose(total, 1) and total <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            sizes.append(int(math.floor(n * frac)))
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        lengths = sizes
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an "
                              f"empty dataset.", stacklevel=2)
    for i, v in enumerate(lengths):
        if v != int(v) or v < 0:
            raise ValueError(f"random_split(): lengths[{i}] = {v} is not a non-negative "
                             f"int (or fractions that sum to 1)")
    lengths = [int(v) for v in lengths]
    if sum(lengths) != n:
        raise ValueError(f"Sum of input lengths does not equal the length of the input "
                         f"dataset! (lengths sum to {sum(lengths)}, the dataset has {n})")
    indices = randperm(sum(lengths), generator=generator).tolist()
    return [Subset(dataset, indices[offset - length:offset])
            for offset, length in zip(itertools.accumulate(lengths), lengths)]
