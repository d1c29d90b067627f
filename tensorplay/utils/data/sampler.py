"""Samplers (``torch.utils.data.sampler``): iterables of dataset indices, or of
lists of indices (``BatchSampler``), with PyTorch's arguments, checks and lengths.

Random samplers draw through tensorplay's samplers (``randperm``, ``randint``,
``multinomial``) from the ``generator`` given, else -- like PyTorch's
``RandomSampler`` -- from a fresh ``Generator`` seeded with a number drawn from the
default generator at each ``iter()``: after ``tensorplay.manual_seed(s)`` the
orders are the same every run (not the orders torch would give: numpy's streams).
"""
import numbers

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]


class Sampler:
    """Base class: subclasses define ``__iter__`` over indices (and ``__len__``).

    ``data_source`` is accepted and ignored, as PyTorch does.
    """

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError("Subclasses of Sampler should implement __iter__.")


def _positive_int(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, bool) and v > 0


def _seeded_generator(generator):
    """``generator``, or a fresh Generator seeded from the default one (PyTorch's
    ``RandomSampler``: ``seed = torch.empty((), dtype=torch.int64).random_()``)."""
    from tensorplay._creation import _generator
    from tensorplay._generator import Generator
    if generator is not None:
        return generator
    return Generator().manual_seed(int(_generator().integers(0, 2 ** 63)))


class SequentialSampler(Sampler):
    """Indices ``0, 1, ..., len(data_source) - 1`` in order."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """Random indices of ``data_source``: a permutation (each index once per pass),
    or with ``replacement`` ``num_samples`` independent uniform draws.

    Args:
        data_source: a sized dataset.
        replacement (bool): draw with replacement.  Default False.
        num_samples (int, optional): how many indices per ``iter()``; default
            ``len(data_source)``.  Without replacement and more than the length,
            further permutations follow the first (PyTorch's behaviour).
        generator (tensorplay.Generator, optional): see the module docstring.

    Raises:
        TypeError: ``replacement`` not a bool.
        ValueError: ``num_samples`` (or the dataset's length) not a positive int.
    """

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got "
                            f"replacement={self.replacement}")
        if not _positive_int(self.num_samples):
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")
        _check_generator(generator, "RandomSampler")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        from tensorplay._creation import randint
        from tensorplay._random import randperm
        n = len(self.data_source)
        generator = _seeded_generator(self.generator)
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from randint(high=n, size=(32,), generator=generator).tolist()
            yield from randint(high=n, size=(self.num_samples % 32,),
                               generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from randperm(n, generator=generator).tolist()
            yield from randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a random order (one permutation per ``iter()``).

    Args:
        indices (sequence): the indices to sample from.
        generator (tensorplay.Generator, optional): default: the default generator.
    """

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator
        _check_generator(generator, "SubsetRandomSampler")

    def __iter__(self):
        from tensorplay._random import randperm
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices in ``[0, len(weights))``, index ``i`` with probability
    proportional to ``weights[i]`` (``tensorplay.multinomial``).

    Args:
        weights (sequence or Tensor): non-negative, 1-D; need not sum to 1.
        num_samples (int): how many indices per ``iter()``.
        replacement (bool): draw with replacement (default True); without it,
            ``num_samples`` may not exceed the number of nonzero weights.
        generator (tensorplay.Generator, optional): default: the default generator.

    Raises:
        ValueError: ``num_samples`` not a positive int, ``replacement`` not a bool,
            weights that are not 1-D (PyTorch's types and messages).
        RuntimeError: negative, infinite or all-zero weights (when drawing, from
            ``multinomial``).
    """

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        from tensorplay._creation import as_tensor
        from tensorplay._dtype import float64
        if not _positive_int(num_samples):
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        weights_tensor = as_tensor(weights, dtype=float64)
        if weights_tensor.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have "
                             f"shape {tuple(weights_tensor.shape)}")
        _check_generator(generator, "WeightedRandomSampler")
        self.weights = weights_tensor
        self.num_samples = int(num_samples)
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        from tensorplay._random import multinomial
        rand_tensor = multinomial(self.weights, self.num_samples, self.replacement,
                                  generator=self.generator)
        yield from iter(rand_tensor.tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler``; the last one shorter unless
    ``drop_last``.

    Args:
        sampler (Sampler or iterable): the indices.
        batch_size (int): positive.
        drop_last (bool): drop a last, incomplete batch.

    Raises:
        ValueError: ``batch_size`` not a positive int, ``drop_last`` not a bool.

    Example::

        >>> list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=False))
        [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    """

    def __init__(self, sampler, batch_size, drop_last):
        if not _positive_int(batch_size):
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got "
                             f"drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = int(batch_size)
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


def _check_generator(generator, who):
    from tensorplay._generator import Generator
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"{who}(): generator must be a tensorplay.Generator or None, not "
                        f"{type(generator).__name__}")

