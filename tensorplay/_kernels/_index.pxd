# Index arrays in kernels.  Kernels run with bounds checks off, and an index array
# can change between the Python layer's validation and the kernel's read (another
# thread writing through t.numpy()).  So every kernel that takes indices reads each
# one exactly once into a local, compares that local with the bound and uses only
# the local: one compare per element.  The nogil loop stops at the first bad index
# and returns its position (or -1); the def wrapper, holding the GIL again, calls
# _index_error, which raises IndexError naming the op, the position and the value.
# A kernel whose output is fresh may leave it half-written on error (the wrapper
# discards it); a kernel writing into a user's array checks all indices first.
cimport numpy as cnp


cdef inline bint _bad_index(cnp.int64_t k, Py_ssize_t bound) noexcept nogil:
    """True unless 0 <= k < bound (one unsigned compare)."""
    return <cnp.uint64_t>k >= <cnp.uint64_t>bound


cdef inline int _index_error(str op, str arg, Py_ssize_t pos, cnp.int64_t value,
                             Py_ssize_t bound) except -1:
    """Raise IndexError for ``arg[pos] = value``, the first index outside [0, bound)
    (``value`` as the kernel read it: the array may have changed again since)."""
    raise IndexError(f"{op}(): {arg}[{pos}] = {value} is out of bounds for size "
                     f"{bound} (it changed after validation, or was never checked)")
