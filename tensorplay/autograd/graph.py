"""Reverse mode: graph nodes and the engine that walks them.

A ``Node`` is recorded by ``registry.apply`` for each primitive call whose inputs
require grad; it becomes the output's ``grad_fn``.  Its ``next_edges`` hold, per
input, the input's own ``grad_fn`` (non-leaf), the input Tensor itself (a leaf
that requires grad), or ``None`` (no gradient flows there).

A node with several outputs (a custom ``autograd.Function``; later split-like
primitives) is a ``MultiNode``.  Each output ``j`` is reached through a
``_Port`` ``(node, j)`` -- the edge its consumers record and the graph key its
cotangent accumulates under -- whose one edge leads to the node; a tensor knows
its ``j`` from ``Tensor._output_nr`` (PyTorch's ``output_nr``).  The ports come
before the node in topological order, so the node runs once per pass, after
every consumer of every output, with one cotangent (or None) per output.

``run_backward`` runs only the part of the graph that reaches the requested
inputs (DESIGN.md, fixed point 7): a depth-first pass from the outputs finds that
part and a topological order; a second pass calls the VJP rules in that order,
accumulating cotangents per edge, and frees saved tensors unless
``retain_graph``.  No Python recursion, so deep graphs are fine.

Hooks (``Tensor.register_hook``, ``retain_grad``, ``Node.register_hook`` /
``register_prehook``), packed saved tensors (``saved_tensors_hooks``) and anomaly
mode live in ``autograd/_hooks.py`` (re-exported here).  A node carries ``hooks = None`` until one of
them needs a ``_NodeExtra``; such nodes, and every node while anomaly mode is on,
go through ``_run_hooked`` / ``_run_multi_hooked`` instead of the inline loop, so
the features cost one attribute check per node when unused.  ``GradientEdge`` /
``get_gradient_edge`` name a node output for ``grad`` and ``backward``.
"""
from tensorplay._dtype import from_numpy_dtype
from tensorplay.autograd.grad_mode import STATE

__all__ = ["Node", "MultiNode", "run_backward", "GradientEdge", "get_gradient_edge",
           "saved_tensors_hooks", "save_on_cpu", "register_multi_grad_hook",
           "disable_saved_tensors_hooks"]

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

    # The stand-in is made afresh on each read, so its hooks live on the leaf
    # (PyTorch keeps one AccumulateGrad per leaf; hooks on any read of it are the
    # same).  As in PyTorch they run when backward() accumulates into .grad, not
    # in autograd.grad (which returns the gradient instead).
    def register_prehook(self, fn):
        """Register ``fn(grad_outputs)``, called before the leaf's ``.grad`` is
        accumulated (after its tensor hooks); ``grad_outputs`` is a 1-tuple, and
        ``fn`` may return None or a replacement 1-tuple.

        Returns:
            tensorplay.utils.hooks.RemovableHandle.
        """
        return register_accumulate_grad_hook(self.variable, "acc_pre", fn,
                                             "AccumulateGrad.register_prehook()")

    def register_hook(self, fn):
        """Register ``fn(grad_inputs, grad_outputs)``, called after the leaf's
        ``.grad`` was accumulated (and its post-accumulate-grad hooks ran):
        ``grad_inputs`` is ``()`` (the node has no inputs), ``grad_outputs`` the
        1-tuple of the gradient accumulated.

        Returns:
            tensorplay.utils.hooks.RemovableHandle.
        """
        return register_accumulate_grad_hook(self.variable, "acc_post", fn,
                                             "AccumulateGrad.register_hook()")

    @property
    def next_functions(self):
        return ()


class Node:
    """The record of one primitive call, used as the output's ``grad_fn``.

    Holds the primitive, its params, one edge per input, the input shapes/dtypes
    (for undoing broadcasting), and only the data the VJP rules read (the inputs
    and/or the output, per ``OpDef.save_inputs`` / ``save_out``).
    """
    __slots__ = ("op", "params", "next_edges", "in_meta", "saved", "versions",
                 "out_data", "out_version", "out_tangent", "freed", "hooks", "__weakref__")

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
                if fn is None:
                    edges.append(t)
                elif type(fn) is Node:
                    edges.append(fn)
                else:                   # an output of a MultiNode
                    edges.append(_Port((fn, t._output_nr)))
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
        self.hooks = None
        out._grad_fn = self
        out._requires_grad = True
        if _RECORD_EXTRA:           # anomaly mode or saved-tensor hooks (rare)
            _record_extra(self, inputs, out)

    def name(self):
        """PyTorch-style name, e.g. ``'ExpBackward0'``."""
        return self.op.node_name

    @property
    def next_functions(self):
        """Tuple of ``(node, 0)`` pairs, one per input (``(None, 0)`` when no gradient flows)."""
        return tuple(map(_function_pair, self.next_edges))

    def __repr__(self):
        return f"<{self.op.node_name} object>"

    def register_hook(self, fn):
        """Register ``fn(grad_inputs, grad_outputs)``, called after this node's VJP.

        ``grad_inputs`` is a tuple with one entry per input (``next_functions``),
        ``None`` where no gradient is computed; ``grad_outputs`` a tuple with one
        entry per output, after the pre-hooks.  It may return ``None`` or a
        replacement tuple of the same length (entries ``None`` to drop a gradient).
        It runs only when the node runs (not when the pass stops at its output).

        Returns:
            tensorplay.utils.hooks.RemovableHandle.

        Raises:
            TypeError: ``fn`` is not callable.
        """
        return _add_hook(_extra(self), "post", fn, "Node.register_hook()")

    def register_prehook(self, fn):
        """Register ``fn(grad_outputs)``, called before this node's VJP.

        ``grad_outputs`` is a tuple with one gradient per output; ``fn`` may return
        ``None`` or a replacement tuple of the same length.  Runs after the tensor
        hooks of the node's outputs, and only when the node runs.

        Returns:
            tensorplay.utils.hooks.RemovableHandle.

        Raises:
            TypeError: ``fn`` is not callable.
        """
        return _add_hook(_extra(self), "pre", fn, "Node.register_prehook()")

    @property
    def metadata(self):
        """A dict for the user's own annotations (PyTorch's ``Node.metadata``);
        anomaly mode stores the forward traceback under ``"traceback_"``."""
        ex = _extra(self)
        if ex.metadata is None:
            ex.metadata = {}
        return ex.metadata

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
                if e is not None and (t._grad_fn is not e if type(e) is Node else
                                      type(e) is _Port and t._grad_fn is not e[0]):
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


class _Port(tuple):
    """``(node, j)``: the graph key of output ``j`` of the MultiNode ``node``.

    Equal and hashed as the tuple, so every consumer's port of one output is the
    same dict key (the node holds no ports: no node <-> port reference cycle).
    """
    __slots__ = ()


class MultiNode:
    """Base class of graph nodes with several outputs, run once per backward pass.

    The engine gathers one cotangent per output (through the outputs' ``_Port``
    keys), fills those that got none with zeros when ``materialize_grads`` (else
    leaves them None; when no output got one the node does not run), calls
    ``_backward(grads)`` and fits each returned gradient to its input
    (``_fit_grad``: broadcast shapes summed back, dtype cast, as PyTorch's
    ``validate_outputs``) before accumulating it into ``next_edges``.

    A subclass sets, in its constructor:
        next_edges (list): one edge per differentiable input, as ``Node``'s (a Node,
            a ``_Port``, a leaf Tensor, or None).
        in_meta (list): ``(shape, numpy dtype)`` of each of those inputs.
        out_meta (list): ``(shape, numpy dtype)`` of each output (None for an output
            that is not a Tensor: its cotangent is always None).
        materialize_grads (bool): zeros (True) or None for outputs without a cotangent.
    and implements ``_backward(grads) -> sequence`` (one Tensor or None per entry
    of ``next_edges``), ``name()`` and ``_release()`` (free saved data; called
    after the pass unless ``retain_graph``).  Its outputs get ``_grad_fn = node``
    and ``_output_nr = j`` (``set_output``).
    """
    materialize_grads = True
    hooks = None        # a _NodeExtra once a hook, or anomaly mode's traceback, needs one

    def name(self):
        return type(self).__name__

    def register_hook(self, fn):
        """As ``Node.register_hook``: ``fn(grad_inputs, grad_outputs)`` after the
        backward, ``grad_outputs`` with one entry per output."""
        return _add_hook(_extra(self), "post", fn, "Node.register_hook()")

    def register_prehook(self, fn):
        """As ``Node.register_prehook``: ``fn(grad_outputs)`` before the backward
        (``None`` for outputs that got no gradient; zeros are filled in after)."""
        return _add_hook(_extra(self), "pre", fn, "Node.register_prehook()")

    @property
    def metadata(self):
        """As ``Node.metadata``."""
        ex = _extra(self)
        if ex.metadata is None:
            ex.metadata = {}
        return ex.metadata

    def __repr__(self):
        return f"<{self.name()} object>"

    @property
    def next_functions(self):
        """Tuple of ``(node, output_nr)`` pairs, one per input (``(None, 0)`` when no
        gradient flows)."""
        return tuple(map(_function_pair, self.next_edges))

    def set_output(self, t, j):
        """Make Tensor ``t`` this node's output ``j``."""
        t._grad_fn = self
        t._output_nr = j
        t._requires_grad = True
        if _ANOMALY[0] and (self.hooks is None or self.hooks.metadata is None):
            _extra(self).metadata = {"traceback_": _forward_traceback()}

    def _release(self):
        pass

    def _run(self, grads):
        """The engine's call: ``grads`` holds one cotangent or None per output."""
        if self.materialize_grads:
            meta = self.out_meta
            for j in range(len(grads)):
                if grads[j] is None and meta[j] is not None:
                    shape, dtype = meta[j]
                    grads[j] = _wrap(_np_zeros(shape, dtype))
        return self._backward(grads)


def _fit_grad(node, i, gi):
    """Gradient ``gi`` for input ``i`` of MultiNode ``node``, shaped and typed as
    the input (PyTorch's ``validate_outputs``).

    Raises:
        RuntimeError: a shape that does not broadcast to the input's, naming the node.
    """
    shape, dtype = node.in_meta[i]
    data = gi._data
    if data.shape != shape:
        if not _expandable(shape, data.shape):
            raise RuntimeError(
                f"Function {node.name()} returned an invalid gradient at index {i} - got "
                f"{list(data.shape)} but expected shape compatible with {list(shape)}")
        gi = _sum_to_shape(gi, shape)
    if data.dtype != dtype:
        gi = gi.to(from_numpy_dtype(dtype))
    return gi


def _expandable(shape, to):
    """Whether ``shape`` broadcasts to ``to`` (``at::is_expandable_to``)."""
    if len(shape) > len(to):
        return False
    for s, t in zip(reversed(shape), reversed(to)):
        if s != t and s != 1:
            return False
    return True


def _np_zeros(shape, dtype):
    global _np_zeros
    from numpy import zeros as _np_zeros
    return _np_zeros(shape, dtype)


def _function_pair(e):
    """``next_functions`` entry of edge ``e``."""
    if e is None or type(e) is Node:
        return (e, 0)
    if type(e) is _Port:
        return (e[0], e[1])
    return (AccumulateGrad(e), 0)


def edge_key(t):
    """The graph key under which the cotangent of Tensor ``t`` accumulates: its
    Node, the ``_Port`` of its MultiNode output, or ``t`` itself (a leaf)."""
    fn = t._grad_fn
    if fn is None:
        return t
    if type(fn) is Node:
        return fn
    return _Port((fn, t._output_nr))


def output_nr(t):
    """Which output of its ``grad_fn`` Tensor ``t`` is (PyTorch's ``output_nr``)."""
    fn = t._grad_fn
    return 0 if fn is None or type(fn) is Node else t._output_nr


_output_nr = output_nr


def node_key(node, output_nr):
    """The graph key of output ``output_nr`` of ``node`` (a GradientEdge's)."""
    return node if type(node) is Node else _Port((node, output_nr))


def _edges_of(key):
    """The edges out of a key that is not a ``Node``: a port leads to its node, a
    MultiNode to its inputs, a leaf nowhere."""
    if type(key) is _Port:
        return (key[0],)
    if isinstance(key, MultiNode):
        return key.next_edges
    return ()


def _is_leaf(key):
    return type(key) is not Node and type(key) is not _Port and not isinstance(key, MultiNode)


def _run_multi(node, gs, grads, reaches, retain_graph):
    """Run MultiNode ``node`` on its gathered cotangents ``gs`` and accumulate the
    gradients it returns into its edges."""
    edges = node.next_edges
    out = node._run(gs)
    for i in range(len(edges)):
        edge = edges[i]
        gi = out[i]
        if edge is None or gi is None or not reaches[edge]:
            continue
        gi = _fit_grad(node, i, gi)
        prev = grads.get(edge)
        grads[edge] = gi if prev is None else prev + gi
    if not retain_graph:
        node._release()


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
        roots: graph keys of the outputs (``edge_key``: a Node, a MultiNode
            output's ``_Port``, or a leaf Tensor).
        root_grads: one cotangent Tensor per root.
        targets: graph keys whose total cotangent is wanted, or ``None`` for every
            leaf that requires grad (``Tensor.backward`` without ``inputs``).
        retain_graph (bool): keep saved tensors for another pass.
        create_graph (bool): run the VJP rules with grad mode on, so the result is
            differentiable.

    Returns:
        dict mapping ``id(key)`` to ``(key, cotangent)`` for the targets reached
        (``key`` the object passed in ``targets``; each of several equal ports).
    """
    if _RETAINERS:
        _refresh_retains()
    if _MULTI_HOOKS:        # register_multi_grad_hook: group its gradients by pass
        return _run_with_pass(_run_backward, roots, root_grads, targets, retain_graph,
                              create_graph)
    return _run_backward(roots, root_grads, targets, retain_graph, create_graph)


def _run_backward(roots, root_grads, targets, retain_graph, create_graph):
    """run_backward's body, with positional arguments (compiled: a cpdef with typed
    locals, see graph.pxd)."""
    # Graph keys (Nodes and leaf Tensors) are dict keys themselves: both hash by
    # identity (Tensor.__hash__ is object.__hash__), and a dict compares identity
    # before ``__eq__``, so Tensor's elementwise ``==`` is never called.
    # targets by key, each with the objects passed for it (ports compare by value)
    target_set = None
    if targets is not None:
        target_set = {}
        for t in targets:
            target_set.setdefault(t, []).append(t)
    # Pass 1: iterative DFS giving a postorder, and whether each key reaches a
    # target (so branches that lead nowhere wanted are never run).
    order = []
    reaches = {}
    for root in roots:
        if root in reaches:
            continue
        reaches[root] = False
        stack = [(root, root.next_edges if type(root) is Node else _edges_of(root), 0)]
        while stack:
            key, edges, i = stack[-1]
            n = len(edges)
            while i < n:
                child = edges[i]
                i += 1
                if child is not None and child not in reaches:
                    reaches[child] = False
                    stack[-1] = (key, edges, i)
                    stack.append((child, child.next_edges if type(child) is Node
                                  else _edges_of(child), 0))
                    break
            else:
                stack.pop()
                order.append(key)
                if target_set is None:
                    hit = type(key) is not Node and _is_leaf(key)
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
    anomaly = _ANOMALY[0]
    prev_mode = STATE.grad_enabled
    STATE.grad_enabled = bool(create_graph)
    try:
        for key in reversed(order):
            if not reaches[key]:
                continue
            g = grads.pop(key, None)
            if g is None:
                continue
            if type(key) is not Node:
                if type(key) is _Port:      # deposit into the node's per-output list
                    owner = key[0]
                    if owner.hooks is not None:     # the output's tensor hooks, retain_grad
                        g = _port_hooks(owner, key[1], g, create_graph)
                    if target_set is not None and key in target_set:
                        for t in target_set[key]:
                            results[id(t)] = (t, g)
                    gs = grads.get(owner)
                    if gs is None:
                        gs = grads[owner] = [None] * len(owner.out_meta)
                    gs[key[1]] = g
                elif isinstance(key, MultiNode):
                    if anomaly or key.hooks is not None:
                        _run_multi_hooked(key, g, grads, reaches, retain_graph, anomaly)
                    else:
                        _run_multi(key, g, grads, reaches, retain_graph)
                else:                       # a leaf
                    if key._hooks is not None:
                        g = _leaf_hooks(key, g)
                    if target_set is None or key in target_set:
                        results[id(key)] = (key, g)
                continue
            node = key
            if anomaly or node.hooks is not None:   # hooks, packed saves, anomaly
                _run_hooked(node, g, grads, reaches, target_set, results,
                            retain_graph, create_graph, anomaly)
                continue
            if target_set is not None and key in target_set:
                results[id(key)] = (key, g)
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


# id -> weak reference of every live tensor that retains its grad: an in-place op
# gives such a tensor a new grad_fn, and, as in PyTorch, the retain_grad moves to
# it (checked once per backward call, only while such tensors exist)
_RETAINERS = {}
# register_multi_grad_hook's live hooks by id, and the running passes
# (autograd/_graph_utils.py)
_MULTI_HOOKS = {}
_PASS_STACK = []


# anomaly mode: process-wide, as PyTorch's (autograd/anomaly_mode.py sets it)
_ANOMALY = [False, True]            # [enabled, check_nan]
_RECORD_EXTRA = False               # anomaly on, or saved-tensor hooks somewhere


# The slow paths (hooks, anomaly mode, saved-tensor hooks, GradientEdge) live in
# autograd/_hooks.py, which imports this module: bound last, once the names it
# needs exist.  Re-exported here, PyTorch's module for the public ones.
from tensorplay.autograd._hooks import (  # noqa: E402
    _NodeExtra,
    _Packed,
    _add_hook,
    _current_saved_hooks,
    _extra,
    _forward_traceback,
    _leaf_hooks,
    _port_hooks,
    _record_extra,
    _refresh_retains,
    _release_hooked,
    _run_hooked,
    _run_multi_hooked,
    pack_own_output,
    pack_saved,
    accumulate_grad_hooks,
    post_accumulate,
    register_accumulate_grad_hook,
    register_post_accumulate_grad_hook,
    register_tensor_hook,
    retain_grad,
    save_on_cpu,
    saved_tensors_hooks,
    set_anomaly,
    unpack_saved)
from tensorplay.autograd._edge import (  # noqa: E402
    GradientEdge, get_gradient_edge, gradient_edge_key)
from tensorplay.autograd._graph_utils import (  # noqa: E402
    disable_saved_tensors_hooks, register_multi_grad_hook)
from tensorplay.autograd._graph_utils import run_with_pass as _run_with_pass  # noqa: E402
from tensorplay.autograd._dot import render, to_dot  # noqa: E402,F401  (graph pictures)
