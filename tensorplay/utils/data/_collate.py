"""``default_collate`` and ``default_convert`` with PyTorch's rules
(``torch/utils/data/_utils/collate.py``), and ``collate`` with its
``collate_fn_map`` for extending them.

``default_collate(batch)`` turns a list of samples into a batch by the type of the
first sample:

=======================  =====================================================
sample element           batch
=======================  =====================================================
Tensor                   ``stack(batch)`` (a new leading dim); sizes must agree
numpy array (numeric)    as tensors, then stacked (dtype kept)
numpy scalar             a 1-D tensor of its dtype
float / int / bool       a 1-D float64 / int64 / bool tensor (PyTorch's dtypes)
str / bytes              the batch of them as it is (no tensor)
dict (Mapping)           the same type, each key collated over the batch
namedtuple               the same namedtuple, each field collated
tuple / list             transposed and collated per position: a *list* for a
                         tuple (PyTorch's "backwards compatibility"), the
                         sequence's own type for lists; lengths must agree
=======================  =====================================================

Anything else raises ``TypeError``; elements of different sizes raise
``RuntimeError`` (from ``stack``, or "each element in list of batch should be of
equal size"), as PyTorch does.
"""
import collections.abc
import copy
import re

import numpy as np

from tensorplay._tensor import Tensor

__all__ = ["default_collate", "default_convert", "collate", "default_collate_fn_map"]

_NP_STR_OBJ = re.compile(r"[SaUO]")     # numpy dtypes that do not become tensors

_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
        "lists; found {}")


def _as_tensor(a):
    from tensorplay._creation import as_tensor
    return as_tensor(a)


def default_convert(data):
    """Numpy arrays and scalars in ``data`` become tensors, recursively through
    dicts, namedtuples and sequences (tuples become lists, as PyTorch); other
    objects pass unchanged.  What ``DataLoader(batch_size=None)`` applies to each
    sample."""
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_",
                                                                      "bytes_"):
        if isinstance(data, np.ndarray) and _NP_STR_OBJ.search(data.dtype.str) is not None:
            return data
        return _as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):        # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate(batch, *, collate_fn_map=None):
    """Collate ``batch`` (a list of samples) by the type of ``batch[0]``: a function
    from ``collate_fn_map`` (looked up by exact type, then by ``isinstance`` in the
    map's order), else recursively through mappings, namedtuples and sequences.

    Each function is called as ``fn(batch, collate_fn_map=collate_fn_map)``.

    Raises:
        TypeError: an element type with no rule.
        RuntimeError: sequences of different lengths in the batch.
    """
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        def per_key(key):
            return collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({key: per_key(key) for key in elem})
                return clone
            return elem_type({key: per_key(key) for key in elem})
        except TypeError:
            return {key: per_key(key) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):        # namedtuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map)
                           for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        elem_size = len(elem)
        if not all(len(e) == elem_size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(s, collate_fn_map=collate_fn_map) for s in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = collate(samples, collate_fn_map=collate_fn_map)
                return clone
            return elem_type([collate(s, collate_fn_map=collate_fn_map)
                              for s in transposed])
        except TypeError:
            return [collate(s, collate_fn_map=collate_fn_map) for s in transposed]
    raise TypeError(_ERR.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    from tensorplay import stack
    return stack(batch, 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if _NP_STR_OBJ.search(elem.dtype.str) is not None:
        raise TypeError(_ERR.format(elem.dtype))
    return collate([_as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return _as_tensor(np.array(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    from tensorplay._creation import tensor
    from tensorplay._dtype import float64
    return tensor(batch, dtype=float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    from tensorplay._creation import tensor
    return tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    # numpy scalars (np.float32(1.0), np.int64(3), np.bool_(True)): their own dtype;
    # before float and int, which np.float64 and friends subclass
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,              # bools too (isinstance): a bool tensor, as PyTorch
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """Collate a list of samples into a batch with PyTorch's rules (the table in
    the module docstring).  ``DataLoader``'s default ``collate_fn``.

    Example::

        >>> default_collate([(tensor([1., 2.]), 0), (tensor([3., 4.]), 1)])
        [tensor([[1., 2.], [3., 4.]]), tensor([0, 1])]

    Raises:
        TypeError: an element type with no rule (numpy string/object arrays
            included).  RuntimeError: elements whose sizes differ.
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
