"""Reverse mode: graph nodes and the engine that walks them.

A ``Node`` is recorded by ``registry.apply`` for each primitive call whose inputs
require grad; it becomes the output's ``grad_fn``.  Its ``next_edges`` hold, per
input, the input's own ``grad_fn`` (non-leaf), the input Tensor itself (a leaf
that requires grad), or ``None`` (no gradient flows there).

``run_backward`` runs only the part of the graph that reaches the requested
inputs (DESIGN.md, fixed point 7): a depth-first pass from the outputs finds that
part and a topological order; a second pass calls the VJP rules in that order,
accumulating cotangents per edge, and frees saved tensors unless
``retain_graph``.  No Python recursion, so deep graphs are fine.
"""
from tensorplay._dtype import from_numpy_dtype
from tensorplay.autograd.grad_mode import STATE

__all__ = ["Node", "run_backward"]

_FREED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved "
    "tensors after they have already been freed): the saved tensors of {name} were "
    "freed by the first backward. Specify retain_graph=True on the first "
    "backward()/autograd.grad() call if you need to backward through the graph a "
    "second time.")


_INFERENCE_SAVED_MSG = (
    "Inference tensors cannot be saved for backward ({name} would save one). Please do "
    "not use Tensors created in inference mode in computation tracked by autograd. To "
    "work around this, you can make a clone to get a normal tensor and use it in "
    "autograd, or use `tensorplay.no_grad()` instead of `tensorplay.inference_mode()`.")


class _Meta:
    """Shape and dtype of an input whose data the VJP rules do not need."""
    __slots__ = ("shape", "_np_dtype")

    def __init__(self, shape, np_dtype):
        self.shape = shape
        self._np_dtype = np_dtype

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def dtype(self):
        return from_numpy_dtype(self._np_dtype)


class AccumulateGrad:
    """Stand-in for a leaf in ``Node.next_functions`` (PyTorch's name)."""
    __slots__ = ("variable",)

    def __init__(self, variable):
        self.variable = variable

    def name(self):
        return "AccumulateGrad"

    def __repr__(self):
        return "<AccumulateGrad object>"


class Node:
    """The record of one primitive call, used as the output's ``grad_fn``.

    Holds the primitive, its params, one edge per input, the input shapes/dtypes
    (for undoing broadcasting), and only the data the VJP rules read (the inputs
    and/or the output, per ``OpDef.save_inputs`` / ``save_out``).
    """
    __slots__ = ("op", "params", "next_edges", "in_meta", "saved", "versions",
                 "out_data", "out_version", "out_tangent", "freed", "__weakref__")

    def __init__(self, op, inputs, out, params):
        self._record(op, inputs, out, params)

    def _record(self, op, inputs, out, params):
        # __init__'s body, apart so that compiled (graph.pxd) its Tensors are typed
        self.op = op
        self.params = params
        vjp = op.vjp
        edges = []
        meta = []
        i = 0
        for t in inputs:
            if t._requires_grad and vjp[i] is not None:
                fn = t._grad_fn
                edges.append(t if fn is None else fn)
            else:
                edges.append(None)
            d = t._data
            meta.append((d.shape, d.dtype))
            i += 1
        self.next_edges = edges
        self.in_meta = meta
        try:                # an inference tensor's _version is None: TypeError
            if op.save_inputs:
                self.saved = tuple(inputs)
                self.versions = [t._version[0] for t in inputs]
            else:
                self.saved = None
            if op.save_out:
                self.out_data = out._data
                self.out_version = (out._version, out._version[0])
            else:
                self.out_data = None
        except TypeError:
            raise RuntimeError(_INFERENCE_SAVED_MSG.format(name=op.node_name)) from None
        self.out_tangent = None
        self.freed = False
        out._grad_fn = self
        out._requires_grad = True

    def name(self):
        """PyTorch-style name, e.g. ``'ExpBackward0'``."""
        return self.op.node_name

    @property
    def next_functions(self):
        """Tuple of ``(node, 0)`` pairs, one per input (``(None, 0)`` when no gradient flows)."""
        return tuple((AccumulateGrad(e) if e is not None and not isinstance(e, Node) else e, 0)
                     for e in self.next_edges)

    def __repr__(self):
        return f"<{self.op.node_name} object>"

    def _unpack(self):
        """Return (out, inputs) for the VJP rules, checking versions and freeing."""
        op = self.op
        if not (op.save_inputs or op.save_out):
            return None, [_Meta(s, d) for s, d in self.in_meta]
        if self.freed:
            raise RuntimeError(_FREED_MSG.format(name=op.node_name))
        if op.save_inputs:
            inputs = self.saved
            versions = self.versions
            edges = self.next_edges
            for i in range(len(inputs)):
                t, v = inputs[i], versions[i]
                if t._version[0] != v:
                    raise RuntimeError(
                        f"one of the variables needed for gradient computation has been "
                        f"modified by an inplace operation: input {i} of {op.node_name} "
                        f"is at version {t._version[0]}; expected version {v} instead."
                        + _last_inplace(t._version))
                e = edges[i]
                if e is not None and type(e) is Node and t._grad_fn is not e:
                    raise RuntimeError(
                        f"Trying to use a saved tensor that has been detached in-place, "
                        f"i.e. with .detach_(): input {i} of {op.node_name}. If you need "
                        f"the detached value, use the out-of-place .detach() instead.")
        else:
            inputs = [_Meta(s, d) for s, d in self.in_meta]
        out = None
        if op.save_out:
            counter, v = self.out_version
            if counter[0] != v:
                raise RuntimeError(
                    f"one of the variables needed for gradient computation has been "
                    f"modified by an inplace operation: the output of {op.node_name} "
                    f"is at version {counter[0]}; expected version {v} instead."
                    + _last_inplace(counter))
            out = _wrap(self.out_data)
            out._version = counter
            out._grad_fn = self
            out._requires_grad = True
            if self.out_tangent is not None:
                out._tangent, out._tangent_level = self.out_tangent
        return out, inputs

    def _release(self):
        self.saved = None
        self.out_data = None
        self.out_tangent = None
        self.freed = True


def _last_inplace(counter):
    """`` The last in-place op on it was mul_().`` when the version counter (a list
    ``[version]`` or ``[version, name]``, autograd/_inplace.py) remembers it."""
    return f" The last in-place op on it was {counter[1]}()." if len(counter) > 1 else ""


def _wrap(arr):
    """Tensor._wrap, bound on first use (graph.py loads before Tensor exists)."""
    global _wrap
    from tensorplay._tensor import Tensor
    _wrap = Tensor._wrap
    return _wrap(arr)


def run_backward(roots, root_grads, targets, *, retain_graph, create_graph):
    """Propagate ``root_grads`` from ``roots`` back through the graph.

    Args:
        roots: graph keys of the outputs (a Node, or a leaf Tensor).
        root_grads: one cotangent Tensor per root.
        targets: graph keys whose total cotangent is wanted, or ``None`` for every
            leaf that requires grad (``Tensor.backward`` without ``inputs``).
        retain_graph (bool): keep saved tensors for another pass.
        create_graph (bool): run the VJP rules with grad mode on, so the result is
            differentiable.

    Returns:
        dict mapping ``id(key)`` to ``(key, cotangent)`` for the targets reached.
    """
    return _run_backward(roots, root_grads, targets, retain_graph, create_graph)


def _run_backward(roots, root_grads, targets, retain_graph, create_graph):
    """run_backward's body, with positional arguments (compiled: a cpdef with typed
    locals, see graph.pxd)."""
    # Graph keys (Nodes and leaf Tensors) are dict keys themselves: both hash by
    # identity (Tensor.__hash__ is object.__hash__), and a dict compares identity
    # before ``__eq__``, so Tensor's elementwise ``==`` is never called.
    target_set = None if targets is None else set(targets)
    # Pass 1: iterative DFS giving a postorder, and whether each key reaches a
    # target (so branches that lead nowhere wanted are never run).
    order = []
    reaches = {}
    for root in roots:
        if root in reaches:
            continue
        reaches[root] = False
        stack = [(root, root.next_edges if type(root) is Node else (), 0)]
        while stack:
            key, edges, i = stack[-1]
            n = len(edges)
            while i < n:
                child = edges[i]
                i += 1
                if child is not None and child not in reaches:
                    reaches[child] = False
                    stack[-1] = (key, edges, i)
                    stack.append((child, child.next_edges if type(child) is Node else (), 0))
                    break
            else:
                stack.pop()
                order.append(key)
                if target_set is None:
                    hit = type(key) is not Node
                else:
                    hit = key in target_set
                if not hit:
                    for child in edges:
                        if child is not None and reaches[child]:
                            hit = True
                            break
                reaches[key] = hit

    # Pass 2: reverse postorder is a topological order (outputs first).
    grads = {}
    for root, g in zip(roots, root_grads):
        prev = grads.get(root)
        grads[root] = g if prev is None else prev + g
    results = {}
    prev_mode = STATE.grad_enabled
    STATE.grad_enabled = bool(create_graph)
    try:
        for key in reversed(order):
            if not reaches[key]:
                continue
            g = grads.pop(key, None)
            if g is None:
                continue
            is_node = type(key) is Node
            if target_set is None:
                if not is_node:
                    results[id(key)] = (key, g)
            elif key in target_set:
                results[id(key)] = (key, g)
            if not is_node:
                continue
            node = key
            vjp = node.op.vjp
            packed = node.op.pack_inputs
            out, inputs = node._unpack()
            params = node.params
            in_meta = node.in_meta
            n_in = len(inputs)
            i = -1
            for edge in node.next_edges:
                i += 1
                if edge is None or not reaches[edge]:
                    continue
                if packed:              # variadic: one tuple, not k arguments
                    gi = vjp[i](g, out, inputs, **params)
                elif params:
                    gi = vjp[i](g, out, *inputs, **params)
                elif n_in == 2:         # no argument tuple to build (compiled)
                    gi = vjp[i](g, out, inputs[0], inputs[1])
                elif n_in == 1:
                    gi = vjp[i](g, out, inputs[0])
                else:
                    gi = vjp[i](g, out, *inputs)
                if gi is None:
                    continue
                shape, dtype = in_meta[i]
                data = gi._data
                if data.shape != shape:
                    gi = _sum_to_shape(gi, shape)
                have = data.dtype
                if have is not dtype and have != dtype:
                    gi = gi.to(from_numpy_dtype(dtype))
                prev = grads.get(edge)
                grads[edge] = gi if prev is None else prev + gi
            if not retain_graph:
                node._release()
    finally:
        STATE.grad_enabled = prev_mode
    return results


def _sum_to_shape(g, shape):
    """registry.sum_to_shape, bound on first use (graph.py loads before the registry)."""
    global _sum_to_shape
    from tensorplay._ops.registry import sum_to_shape as _sum_to_shape
    return _sum_to_shape(g, shape)
