# Declarations for compiling graph.py with Cython (setup.py's hot-path block);
# graph.py itself stays plain Python and runs unchanged without them.
# Node becomes an extension type: its fields are C struct slots, so building one
# per recorded op costs a fraction of a Python object with __slots__, and the
# engine, with its node typed, reads them and calls _unpack/_release directly.
import cython

from tensorplay._tensor cimport _TensorBase


cdef class Node:
    cdef public object op, params, next_edges, in_meta, saved, versions
    cdef public object out_data, out_version, out_tangent, freed, hooks
    cdef object __weakref__

    @cython.locals(t=_TensorBase, i=cython.Py_ssize_t)
    cpdef _record(self, op, inputs, _TensorBase out, params)
    @cython.locals(out=_TensorBase)
    cpdef _unpack(self)
    cpdef _release(self)


cdef class _Meta:
    cdef public object shape, _np_dtype


# the engine's helpers for keys that are not Nodes (ports, MultiNodes, leaves)
cpdef object _edges_of(object key)
cdef bint _is_leaf(object key)


@cython.locals(node=Node, gi=_TensorBase, i=cython.Py_ssize_t, n_in=cython.Py_ssize_t)
cpdef _run_backward(roots, root_grads, targets, retain_graph, create_graph)
