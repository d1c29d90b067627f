# Declarations for compiling _tensor.py with Cython (setup.py's hot-path block);
# _tensor.py itself stays plain Python and runs unchanged without them.
# _TensorBase becomes an extension type (fields in a C struct), and _wrap, which
# makes a Tensor for every op result, stores into those fields directly.
# (setup.py compiles with auto_pickle=False: Tensor pickles itself.)
import cython


cdef class _TensorBase:
    cdef public object _data, _requires_grad, _grad, _grad_fn, _version, _tangent
    cdef public object _tangent_level, _nograd_view, _base, _view_chain, _views, _output_nr
    cdef object __weakref__


@cython.locals(t=_TensorBase)
cpdef _wrap(arr)
