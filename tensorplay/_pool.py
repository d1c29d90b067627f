"""A cache of large output arrays, reused once nothing refers to them any more.

Why: on this class of machine a fresh multi-megabyte output costs more in page
faults than the arithmetic that fills it (DESIGN.md, kernel facts; measured: a
forward-mode JVP chain over 1M float64 elements ran in 17 ms with reuse against
33-40 ms without).  glibc hands freed memory of that size back to the system,
and the next op faults it in again.

How: ``empty(shape, dtype)`` keeps, per (shape, dtype), up to ``_PER_KEY`` arrays
it has handed out.  An array is free again when the cache holds the only
reference to it -- no Tensor, view (a view's ``base`` refers to it), graph node
or user variable has it -- which ``sys.getrefcount`` tells.  The reference count
a free array shows is measured at import (``_BASELINE``), not assumed, since
interpreters differ in how they count borrowed references.  Arrays below
``_MIN_BYTES`` go straight to ``numpy.empty``.  The cache holds at most
``TENSORPLAY_POOL_MB`` megabytes (default 256; 0 turns it off).  Only kernel
outputs, which are fully overwritten, come from here: contents are arbitrary.
"""
import os
import sys

import numpy as np

__all__ = ["empty", "clear", "cached_bytes"]

_MIN_BYTES = 1 << 20
_PER_KEY = 16
_CAP_BYTES = int(float(os.environ.get("TENSORPLAY_POOL_MB", "256")) * (1 << 20))
_cache = {}
_cached = [0]
_getrefcount = sys.getrefcount
_np_empty = np.empty


def _free_count():
    """The refcount ``empty`` sees for an array only the cache refers to.

    Read as ``getrefcount(bucket[i])``, with no local variable naming the array,
    so a tracer or debugger that snapshots frame locals cannot add a reference
    at calibration that is missing later (or the other way round)."""
    bucket = [np.empty(1)]
    return _getrefcount(bucket[0])


_BASELINE = _free_count()
# Refcounts are not a safe signal on a free-threaded interpreter; and a baseline
# other than "the list + getrefcount's argument" means an interpreter whose
# counting we have not checked.
_ENABLED = (_CAP_BYTES > 0 and sys.implementation.name == "cpython"
            and getattr(sys, "_is_gil_enabled", lambda: True)() and _BASELINE == 2)


def empty(shape, dtype):
    """An uninitialised C-contiguous array, from the cache when one is free.

    Args:
        shape (tuple of int): the shape.
        dtype (numpy.dtype): the dtype.
    """
    nbytes = dtype.itemsize
    for s in shape:
        nbytes *= s
    if nbytes < _MIN_BYTES or not _ENABLED:
        return _np_empty(shape, dtype)
    key = (shape, dtype)
    bucket = _cache.get(key)
    if bucket is None:
        bucket = _cache[key] = []
    for i in range(len(bucket)):
        if _getrefcount(bucket[i]) == _BASELINE:
            arr = bucket[i]
            # the user may have reshaped, retyped or frozen the array in place
            if (arr.shape == shape and arr.dtype == dtype and arr.flags.writeable
                    and arr.flags.c_contiguous):
                return arr
    arr = _np_empty(shape, dtype)
    if len(bucket) < _PER_KEY and _cached[0] + nbytes <= _CAP_BYTES:
        bucket.append(arr)
        _cached[0] += nbytes
    return arr


def clear():
    """Drop every cached array (memory of arrays still in use stays with them)."""
    _cache.clear()
    _cached[0] = 0


def cached_bytes():
    """Bytes of the arrays the cache refers to (in use or free)."""
    return _cached[0]
