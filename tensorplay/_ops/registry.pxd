# Declarations for compiling registry.py with Cython (setup.py's hot-path block);
# registry.py itself stays plain Python and runs unchanged without them.
# apply's Tensors are typed, so reading their fields is a C struct access rather
# than an attribute lookup.
import cython

from tensorplay._tensor cimport _TensorBase


@cython.locals(a=_TensorBase, b=_TensorBase, out=_TensorBase, root=_TensorBase,
               n=cython.Py_ssize_t)
cpdef apply(op, inputs, params)
