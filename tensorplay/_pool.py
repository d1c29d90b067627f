"""A cache of large output arrays, reused once nothing refers to them any more.

Why: on this class of machine a fresh multi-megabyte output costs more in page
faults than the arithmetic that fills it (DESIGN.md, kernel facts; measured: a
forward-mode JVP chain over 1M float64 elements ran in 17 ms with reuse against
33-40 ms without).  glibc hands freed memory of that size back to the system,
and the next op faults it in again.

How: ``empty(shape, dtype)`` keeps, per (shape, dtype), up to ``_PER_KEY`` arrays
it has handed out.  An array is free again when the cache holds the only
reference to it -- no Tensor, view (a view's ``base`` refers to it), graph node
or user variable has it -- which ``sys.getrefcount`` tells.  The count a free
array shows is measured (``_baseline``) with the very code ``empty`` runs, not
assumed, since interpreters differ in how they count borrowed references.
Side effects of the cache's own reference: ``ndarray.resize`` refuses a cached
array, and a weak reference to one (``weakref.ref(t.numpy().base)``, say) stays
alive after every Tensor and view of it is gone, until the cache drops it.  Such a
reference always sees the values its tensor had: an array with weak references is
never handed out again (it is dropped instead).  Arrays below ``_MIN_BYTES`` go
straight to ``numpy.empty``.

Bounds: at most ``TENSORPLAY_POOL_MB`` megabytes (default 256; 0 turns the cache
off; a value that is not a non-negative number gives a warning and the default),
and at most ``_PER_KEY`` arrays per (shape, dtype).  When a new array does not
fit, the least recently used (shape, dtype) entries are dropped whole (arrays in
use stay with their users), so a program that walks through many shapes keeps
only its recent ones.  Only kernel outputs, which are fully overwritten, come
from here: contents are arbitrary.
"""
import math
import os
import sys
import warnings
import weakref

import numpy as np

__all__ = ["empty", "clear", "cached_bytes", "MIN_BYTES"]

MIN_BYTES = _MIN_BYTES = 1 << 20   # smaller outputs come from numpy.empty
_PER_KEY = 16
_DEFAULT_MB = 256


def _cap_from_env():
    """``TENSORPLAY_POOL_MB`` in bytes; a bad value warns and gives the default."""
    raw = os.environ.get("TENSORPLAY_POOL_MB")
    if raw is None:
        return _DEFAULT_MB << 20
    try:
        mb = float(raw)
    except ValueError:
        mb = math.nan
    if not (math.isfinite(mb) and mb >= 0):
        warnings.warn(f"tensorplay: ignoring TENSORPLAY_POOL_MB={raw!r}: expected a "
                      f"non-negative number of megabytes (0 turns the output cache off); "
                      f"using the default, {_DEFAULT_MB}", RuntimeWarning, stacklevel=2)
        return _DEFAULT_MB << 20
    return int(mb * (1 << 20))


_CAP_BYTES = _cap_from_env()
# (shape, dtype) -> list of arrays; dict order is recency (a hit moves its key last)
_cache = {}
_cached = [0]
_getrefcount = sys.getrefcount
_gettrace = sys.gettrace
_getprofile = sys.getprofile
_getweakrefcount = weakref.getweakrefcount
_np_empty = np.empty


def _count(bucket, i):
    """The refcount of ``bucket[i]`` seen through a local, exactly as ``empty``
    sees it (the cache's list, the local, getrefcount's argument)."""
    arr = bucket[i]
    return _getrefcount(arr)


_BASELINE = [None]      # calibrated on first use, outside any tracer
# Refcounts are not a safe signal on a free-threaded interpreter.
_ENABLED = (_CAP_BYTES > 0 and sys.implementation.name == "cpython"
            and getattr(sys, "_is_gil_enabled", lambda: True)())


def _baseline():
    if _BASELINE[0] is None:
        _BASELINE[0] = _count([np.empty(1)], 0)
    return _BASELINE[0]


def empty(shape, dtype):
    """An uninitialised C-contiguous array, from the cache when one is free.

    Args:
        shape (tuple of int): the shape.
        dtype (numpy.dtype): the dtype.

    The array is bound to a local before its count is read, so no other caller
    (another thread, a signal handler, a finaliser) can see it as free between
    the check and the return.  Under a tracer or profiler (which may hold frame
    locals) the cache is bypassed.
    """
    nbytes = dtype.itemsize
    for s in shape:
        nbytes *= s
    if (nbytes < _MIN_BYTES or not _ENABLED or _gettrace() is not None
            or _getprofile() is not None):
        return _np_empty(shape, dtype)
    free = _baseline()
    key = (shape, dtype)
    bucket = _cache.get(key)
    if bucket is not None:
        for i in range(len(bucket)):
            arr = bucket[i]
            if _getrefcount(arr) == free:
                if (arr.shape == shape and arr.dtype == dtype and arr.flags.writeable
                        and arr.flags.c_contiguous and not _getweakrefcount(arr)):
                    _cache[key] = _cache.pop(key, bucket)   # most recently used: last
                    return arr
                # changed in place by its last user (reshaped, retyped, frozen), or
                # weakly referenced (whoever holds that must keep seeing its values)
                del bucket[i]
                _cached[0] -= arr.nbytes
                break
    arr = _np_empty(shape, dtype)
    if nbytes > _CAP_BYTES or (bucket is not None and len(bucket) >= _PER_KEY):
        return arr
    if _cached[0] + nbytes > _CAP_BYTES:
        _evict(_cached[0] + nbytes - _CAP_BYTES, key)
        bucket = _cache.get(key)
    if bucket is None:
        bucket = _cache[key] = []
    bucket.append(arr)
    _cached[0] += nbytes
    return arr


def _evict(need, keep):
    """Drop whole entries, least recently used first, until ``need`` bytes are freed
    (or only ``keep``'s entry is left)."""
    for key in list(_cache):
        if need <= 0:
            break
        if key == keep:
            continue
        freed = 0
        for arr in _cache.pop(key, ()):
            freed += arr.nbytes
        _cached[0] -= freed
        need -= freed
    bucket = _cache.get(keep)
    while need > 0 and bucket:          # only this shape's own arrays are left
        arr = bucket.pop(0)
        _cached[0] -= arr.nbytes
        need -= arr.nbytes


def clear():
    """Drop every cached array (memory of arrays still in use stays with them)."""
    _cache.clear()
    _cached[0] = 0


def cached_bytes():
    """Bytes of the arrays the cache refers to (in use or free)."""
    return _cached[0]
