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
mode live at the end of this module.  A node carries ``hooks = None`` until one of
them needs a ``_NodeExtra``; such nodes, and every node while anomaly mode is on,
go through ``_run_hooked`` / ``_run_multi_hooked`` instead of the inline loop, so
the features cost one attribute check per node when unused.  ``GradientEdge`` /
``get_gradient_edge`` name a node output for ``grad`` and ``backward``.
"""
from tensorplay._dtype import from_numpy_dtype
from tensorplay.autograd.grad_mode import STATE

__all__ = ["Node", "MultiNode", "run_backward", "GradientEdge", "get_gradient_edge",
           "saved_tensors_hooks", "save_on_cpu"]

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


# ------------------------------------------------------------------------------
# Hooks, anomaly mode and saved-tensor hooks.
#
# Everything here is off the hot path: a Node carries ``hooks = None`` until a
# hook, anomaly mode's traceback or packed saved tensors give it a ``_NodeExtra``;
# the engine sends such nodes (and every node while anomaly mode is on) through
# ``_run_hooked`` instead of its inline VJP loop.  A leaf Tensor's hooks live in
# its ``_hooks`` slot (a ``_TensorHooks``), read by the engine only for leaves.
# ``_record_extra`` runs from ``Node._record`` only while ``_RECORD_EXTRA`` is set
# (anomaly mode on, or saved-tensor hooks active in some thread).

class _NodeExtra:
    """What a Node carries beyond its VJP inputs, made on first need."""
    __slots__ = ("tensor_pre", "retains", "pre", "post", "metadata", "packed_in",
                 "packed_out")

    def __init__(self):
        self.tensor_pre = None      # {output_nr: HookDict} from Tensor.register_hook
        self.retains = None         # {output_nr: weakref to the Tensor} (retain_grad)
        self.pre = None             # HookDict of register_prehook
        self.post = None            # HookDict of register_hook
        self.metadata = None        # dict (Node.metadata; anomaly's "traceback_")
        self.packed_in = None       # [_Packed or None] per input (saved-tensor hooks)
        self.packed_out = None      # _Packed for the saved output


class _TensorHooks:
    """A Tensor's own hooks (its ``_hooks`` slot): leaf tensor hooks, post-
    accumulate-grad hooks, and whether ``retain_grad()`` was called."""
    __slots__ = ("pre", "post_acc", "retains")

    def __init__(self):
        self.pre = None             # HookDict (leaves; non-leaves use their node)
        self.post_acc = None        # HookDict
        self.retains = False


def _extra(node):
    ex = node.hooks
    if ex is None:
        ex = node.hooks = _NodeExtra()
    return ex


def _tensor_hooks(t):
    th = t._hooks
    if th is None:
        th = t._hooks = _TensorHooks()
    return th


def _add_hook(holder, field, fn, what):
    """Register ``fn`` in ``holder.<field>`` (a HookDict made on first use)."""
    from tensorplay.utils.hooks import HookDict, _add
    d = getattr(holder, field)
    if d is None:
        d = HookDict()
        setattr(holder, field, d)
    return _add(d, fn, what)


def _hook_name(fn):
    return getattr(fn, "__name__", type(fn).__name__)


def register_tensor_hook(t, fn):
    """``Tensor.register_hook``: on a leaf in its own ``_hooks``, on a non-leaf on
    its ``grad_fn`` for its output (so, as in PyTorch, a hook registered before an
    in-place op sees the gradient of the old value)."""
    if not t._requires_grad:
        raise RuntimeError("register_hook(): cannot register a hook on a tensor that "
                           "doesn't require gradient")
    fn_node = t._grad_fn
    if fn_node is None:
        return _add_hook(_tensor_hooks(t), "pre", fn, "Tensor.register_hook()")
    ex = _extra(fn_node)
    if ex.tensor_pre is None:
        ex.tensor_pre = {}
    from tensorplay.utils.hooks import HookDict, _add
    d = ex.tensor_pre.setdefault(_output_nr(t), HookDict())
    return _add(d, fn, "Tensor.register_hook()")


def retain_grad(t):
    """``Tensor.retain_grad``: a non-leaf's ``.grad`` is filled when its gradient
    is computed (accumulated over passes, after its other tensor hooks)."""
    if not t._requires_grad:
        raise RuntimeError("retain_grad(): can't retain_grad on Tensor that has "
                           "requires_grad=False")
    node = t._grad_fn
    if node is None:
        return                      # leaves accumulate .grad anyway
    th = _tensor_hooks(t)
    if th.retains:
        return
    th.retains = True
    import weakref
    key = id(t)
    ref = weakref.ref(t, lambda r: _RETAINERS.pop(key, None))
    _RETAINERS[key] = ref
    _retain_on(node, ref, t)


def _retain_on(node, ref, t):
    ex = _extra(node)
    if ex.retains is None:
        ex.retains = {}
    ex.retains[_output_nr(t)] = ref


# id -> weak reference of every live tensor that retains its grad: an in-place op
# gives such a tensor a new grad_fn, and, as in PyTorch, the retain_grad moves to
# it (checked once per backward call, only while such tensors exist)
_RETAINERS = {}


def _refresh_retains():
    for ref in list(_RETAINERS.values()):
        t = ref()
        if t is None or t._grad_fn is None:
            continue
        ex = t._grad_fn.hooks
        if ex is None or not ex.retains or ex.retains.get(_output_nr(t)) is not ref:
            _retain_on(t._grad_fn, ref, t)


def register_post_accumulate_grad_hook(t, fn):
    """``Tensor.register_post_accumulate_grad_hook``: ``fn(t)`` after ``backward()``
    accumulated into ``t.grad`` (leaves only)."""
    if not t._requires_grad:
        raise RuntimeError("register_post_accumulate_grad_hook(): cannot register a hook "
                           "on a tensor that doesn't require gradient")
    if t._grad_fn is not None:
        raise RuntimeError("register_post_accumulate_grad_hook(): post accumulate grad "
                           "hooks cannot be registered on non-leaf tensors")
    return _add_hook(_tensor_hooks(t), "post_acc", fn,
                     "Tensor.register_post_accumulate_grad_hook()")


def _check_hook_grad(fn, old, new):
    """A tensor hook's replacement must be a Tensor of the same shape and dtype."""
    if not hasattr(new, "_data"):
        raise TypeError(f"hook '{_hook_name(fn)}' returned a {type(new).__name__}; a "
                        f"tensor hook must return None or a Tensor")
    if new._data.shape != old._data.shape:
        raise RuntimeError(f"hook '{_hook_name(fn)}' has changed the size of value "
                           f"(was {list(old._data.shape)} got {list(new._data.shape)})")
    if new._data.dtype != old._data.dtype:
        raise RuntimeError(f"hook '{_hook_name(fn)}' has changed the type of value (was "
                           f"{from_numpy_dtype(old._data.dtype)} got "
                           f"{from_numpy_dtype(new._data.dtype)})")
    return new


def _run_tensor_hooks(hooks, g):
    for fn in list(hooks.values()):
        r = fn(g)
        if r is not None:
            g = _check_hook_grad(fn, g, r)
    return g


def _port_hooks(node, j, g, create_graph):
    """Output ``j`` of MultiNode ``node``: its tensor hooks and retain_grad."""
    ex = node.hooks
    if ex.tensor_pre:
        hooks = ex.tensor_pre.get(j)
        if hooks:
            g = _run_tensor_hooks(hooks, g)
    if ex.retains:
        ref = ex.retains.get(j)
        if ref is not None:
            _retain(ref, node, g, create_graph)
    return g


def _run_multi_hooked(node, gs, grads, reaches, retain_graph, anomaly):
    """``_run_multi`` with the node's pre- and post-hooks and anomaly checks."""
    ex = node.hooks
    grad_outputs = tuple(gs)
    if ex is not None and ex.pre:
        for fn in list(ex.pre.values()):
            r = fn(grad_outputs)
            if r is not None:
                grad_outputs = _node_hook_values(fn, r, len(gs), "pre-hook")
    edges = node.next_edges
    try:
        out = node._run(list(grad_outputs))
        grad_inputs = []
        for i in range(len(edges)):
            gi = out[i]
            if gi is not None and edges[i] is not None:
                gi = _fit_grad(node, i, gi)
            grad_inputs.append(gi)
    except Exception:
        if anomaly:
            _warn_anomaly(node)
        raise
    if anomaly and _ANOMALY[1]:
        _check_nan(node, grad_inputs)
    if ex is not None and ex.post:
        gi_tuple = tuple(grad_inputs)
        for fn in list(ex.post.values()):
            r = fn(gi_tuple, grad_outputs)
            if r is not None:
                gi_tuple = _node_hook_values(fn, r, len(edges), "hook")
        grad_inputs = gi_tuple
    for i in range(len(edges)):
        edge = edges[i]
        gi = grad_inputs[i]
        if edge is None or gi is None or not reaches[edge]:
            continue
        prev = grads.get(edge)
        grads[edge] = gi if prev is None else prev + gi
    if not retain_graph:
        node._release()


def _leaf_hooks(t, g):
    """The gradient of leaf ``t`` after its tensor hooks (engine, leaves only)."""
    pre = t._hooks.pre
    return _run_tensor_hooks(pre, g) if pre else g


def post_accumulate(t):
    """Run ``t``'s post-accumulate-grad hooks (``backward()``, after ``.grad`` += ...)."""
    hooks = t._hooks.post_acc
    if hooks:
        for fn in list(hooks.values()):
            if fn(t) is not None:
                raise TypeError(f"post accumulate grad hook '{_hook_name(fn)}' returned "
                                f"a value; it must return None (it may update "
                                f"tensor.grad in place)")


def _node_hook_values(fn, result, n, what):
    """Check a node hook's replacement tuple (n entries, each a Tensor or None)."""
    if not isinstance(result, (tuple, list)):
        raise TypeError(f"{what} '{_hook_name(fn)}' returned a {type(result).__name__}; "
                        f"expected None or a tuple")
    if len(result) != n:
        raise RuntimeError(f"hook '{_hook_name(fn)}' has returned an incorrect number of "
                           f"values (got {len(result)}, but expected {n})")
    for r in result:
        if r is not None and not hasattr(r, "_data"):
            raise TypeError(f"{what} '{_hook_name(fn)}' returned a tuple holding a "
                            f"{type(r).__name__}; entries must be Tensors or None")
    return tuple(result)


def _retain(ref, node, g, create_graph):
    t = ref()
    if t is None or t._grad_fn is not node:
        return
    from tensorplay.autograd import _accumulate_grad, _own_storage
    g = _own_storage(g)
    _accumulate_grad(t, g if create_graph else g.detach(), create_graph)


def _vjp_one(node, i, g, out, inputs):
    """Input ``i``'s gradient from the node's VJP rule, shaped and typed as the
    input (the inline loop of ``_run_backward``, for ``_run_hooked``)."""
    op = node.op
    vjp = op.vjp
    params = node.params
    if op.pack_inputs:
        gi = vjp[i](g, out, inputs, **params)
    else:
        gi = vjp[i](g, out, *inputs, **params)
    if gi is None:
        return None
    shape, dtype = node.in_meta[i]
    if gi._data.shape != shape:
        gi = _sum_to_shape(gi, shape)
    if gi._data.dtype != dtype:
        gi = gi.to(from_numpy_dtype(dtype))
    return gi


def _run_hooked(node, g, grads, reaches, target_set, results, retain_graph,
                create_graph, anomaly):
    """One node of ``_run_backward`` with its hooks, retain_grad, packed saved
    tensors and anomaly checks, in PyTorch's order: the output's tensor hooks,
    retain_grad, (the value ``grad()`` returns for it), and, when the node runs,
    its pre-hooks, the VJP, the NaN check, its post-hooks."""
    ex = node.hooks
    if ex is not None:
        if ex.tensor_pre:
            hooks = ex.tensor_pre.get(0)
            if hooks:
                g = _run_tensor_hooks(hooks, g)
        if ex.retains:
            ref = ex.retains.get(0)
            if ref is not None:
                _retain(ref, node, g, create_graph)
    if target_set is not None and node in target_set:
        results[id(node)] = (node, g)
    edges = node.next_edges
    needed = [e is not None and reaches[e] for e in edges]
    if True not in needed:
        if not retain_graph:
            _release_hooked(node)   # as the inline path does (and PyTorch)
        return
    grad_outputs = (g,)
    if ex is not None and ex.pre:
        for fn in list(ex.pre.values()):
            r = fn(grad_outputs)
            if r is not None:
                grad_outputs = _node_hook_values(fn, r, 1, "pre-hook")
    g = grad_outputs[0]
    grad_inputs = [None] * len(edges)
    if g is not None:
        try:
            out, inputs = _unpack_any(node)
            for i in range(len(edges)):
                if needed[i]:
                    grad_inputs[i] = _vjp_one(node, i, g, out, inputs)
        except Exception:
            if anomaly:
                _warn_anomaly(node)
            raise
        if anomaly and _ANOMALY[1]:
            _check_nan(node, grad_inputs)
    if ex is not None and ex.post:
        gi_tuple = tuple(grad_inputs)
        for fn in list(ex.post.values()):
            r = fn(gi_tuple, grad_outputs)
            if r is not None:
                gi_tuple = _node_hook_values(fn, r, len(edges), "hook")
        grad_inputs = gi_tuple
    for i in range(len(edges)):
        gi = grad_inputs[i]
        if gi is None or not needed[i]:
            continue
        edge = edges[i]
        prev = grads.get(edge)
        grads[edge] = gi if prev is None else prev + gi
    if not retain_graph:
        _release_hooked(node)


def _release_hooked(node):
    node._release()
    ex = node.hooks
    if ex is not None:
        ex.packed_in = ex.packed_out = None


# anomaly mode: process-wide, as PyTorch's (autograd/anomaly_mode.py sets it)
_ANOMALY = [False, True]            # [enabled, check_nan]
_RECORD_EXTRA = False               # anomaly on, or saved-tensor hooks somewhere


def _update_record_extra():
    global _RECORD_EXTRA
    _RECORD_EXTRA = _ANOMALY[0] or _SAVED_HOOKS_USERS[0] > 0


def set_anomaly(enabled, check_nan):
    _ANOMALY[0] = bool(enabled)
    _ANOMALY[1] = bool(check_nan)
    _update_record_extra()


def _forward_traceback():
    """The stack of the op call being recorded, without tensorplay's own frames
    at its end (PyTorch's ``traceback_`` metadata: a list of formatted frames)."""
    import os
    import traceback
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frames = traceback.extract_stack()
    while frames and os.path.abspath(frames[-1].filename).startswith(pkg + os.sep):
        frames.pop()
    return traceback.format_list(frames)


def _traceback_text(node):
    md = node.hooks.metadata if node.hooks is not None else None
    tb = md.get("traceback_") if md else None
    if not tb:
        return ("No forward pass information available. Enable detect anomaly during "
                "forward pass for more information.")
    return "".join(tb)


def _warn_anomaly(node):
    import warnings
    warnings.warn(f"Error detected in {node.name()}. Traceback of forward call "
                  f"that caused the error:\n{_traceback_text(node)}", UserWarning,
                  stacklevel=2)


def _check_nan(node, grad_inputs):
    import numpy as np
    for i, gi in enumerate(grad_inputs):
        if gi is None:
            continue
        d = gi._data
        if d.dtype.kind == "f" and not np.isfinite(d).all():
            what = "nan" if np.isnan(d).any() else "inf"
            raise RuntimeError(
                f"Function '{node.name()}' returned {what} values in its {i}th "
                f"output.\n\nTraceback of forward call that caused the error:\n"
                f"{_traceback_text(node)}")


# saved-tensor hooks: a per-thread stack of (pack, unpack); a process-wide count
# of pushed entries switches ``Node._record``'s check on
_SAVED_HOOKS_USERS = [0]


def _saved_hooks_tls():
    global _SAVED_TLS
    if _SAVED_TLS is None:
        import threading
        _SAVED_TLS = threading.local()
    return _SAVED_TLS


_SAVED_TLS = None


def push_saved_hooks(pack, unpack):
    tls = _saved_hooks_tls()
    stack = getattr(tls, "stack", None)
    if stack is None:
        stack = tls.stack = []
    stack.append((pack, unpack))
    _SAVED_HOOKS_USERS[0] += 1
    _update_record_extra()


def pop_saved_hooks():
    _saved_hooks_tls().stack.pop()
    _SAVED_HOOKS_USERS[0] -= 1
    _update_record_extra()


def _current_saved_hooks():
    if _SAVED_TLS is None:
        return None
    stack = getattr(_SAVED_TLS, "stack", None)
    return stack[-1] if stack else None


class _Packed:
    """A saved tensor given to a pack hook: what the hook returned, the unpack
    hook, and what rebuilding it into the graph needs (its version counter and
    the version at save time, its grad_fn, requires_grad, tangent)."""
    __slots__ = ("packed", "unpack", "counter", "version", "grad_fn", "output_nr",
                 "requires_grad", "leaf", "tangent", "own_output")


def pack_saved(t, hooks):
    """Pack ``t`` with the ``(pack, unpack)`` pair ``hooks``.

    While a pack hook runs, saved-tensor hooks are off in this thread (an op in
    the hook that saves tensors saves them plainly, not recursively).

    Raises:
        RuntimeError: the pack hook modified its input in place (PyTorch's error).
    """
    pack, unpack = hooks
    rec = _Packed()
    rec.counter = t._version
    rec.version = t._version[0]
    tls = _saved_hooks_tls()
    stack = tls.stack
    tls.stack = []
    try:
        rec.packed = pack(t)
    finally:
        tls.stack = stack
    if t._version[0] != rec.version:
        raise RuntimeError("A saved tensor pack hook is modifying its input in place. "
                           "Tensors provided as input to pack hook can not be modified by "
                           "in-place operations as this can lead to unexpected side-effects. "
                           "Please open an issue if you need to perform in-place operations "
                           "on the input to a pack hook.")
    rec.unpack = unpack
    rec.grad_fn = t._grad_fn
    rec.output_nr = _output_nr(t)
    rec.requires_grad = t._requires_grad
    # a leaf that requires grad (kept alive by the graph's edges anyway): double
    # backward through the unpacked value must reach it
    rec.leaf = t if t._grad_fn is None and t._requires_grad else None
    rec.tangent = None if t._tangent is None else (t._tangent, t._tangent_level)
    rec.own_output = None
    return rec


def pack_own_output(node, t, j, hooks):
    """``pack_saved`` for output ``j`` of ``node`` itself (a custom Function's
    ``save_for_backward`` of its result): the record does not hold the node."""
    rec = pack_saved(t, hooks)
    rec.grad_fn = None
    rec.own_output = j
    return rec


def unpack_saved(rec, name, what, node=None):
    """The Tensor a VJP rule reads for packed ``rec``: the unpack hook's values,
    placed back in the graph where the saved tensor was (its grad_fn; for a leaf
    that requires grad, under grad mode, a ``CloneBackward0`` onto ``leaf`` so
    double backward reaches it).

    ``node``: the node whose own output ``rec`` is, if so (``pack_own_output``).

    Raises:
        RuntimeError: the saved tensor was modified in place after it was saved.
        TypeError: the unpack hook returned something other than a Tensor.
    """
    if rec.counter[0] != rec.version:
        raise RuntimeError(
            f"one of the variables needed for gradient computation has been modified by "
            f"an inplace operation: {what} of {name} is at version {rec.counter[0]}; "
            f"expected version {rec.version} instead." + _last_inplace(rec.counter))
    u = rec.unpack(rec.packed)
    if not hasattr(u, "_data"):
        raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but "
                        f"got result of type {type(u).__name__} ({what} of {name})")
    v = _wrap(u._data)
    v._version = rec.counter
    if rec.own_output is not None:
        if rec.requires_grad:
            node.set_output(v, rec.own_output)
    elif rec.grad_fn is not None:
        v._grad_fn = rec.grad_fn
        if type(rec.grad_fn) is not Node:
            v._output_nr = rec.output_nr
        v._requires_grad = True
    elif rec.leaf is not None and STATE.grad_enabled:
        _clone_onto(rec.leaf, v)
    if rec.tangent is not None:
        v._tangent, v._tangent_level = rec.tangent
    return v


def _clone_onto(leaf, v):
    """Record ``v`` as a clone of ``leaf`` (so gradients w.r.t. ``v`` reach it)."""
    from tensorplay._ops.registry import REGISTRY
    Node(REGISTRY["clone"], (leaf,), v, {})


def _record_extra(node, inputs, out):
    """Node._record's rare part: anomaly mode's forward traceback, and packing the
    saved tensors when saved-tensor hooks are active in this thread."""
    if _ANOMALY[0]:
        _extra(node).metadata = {"traceback_": _forward_traceback()}
    hooks = _current_saved_hooks()
    if hooks is None:
        return
    op = node.op
    if node.saved is not None:
        _extra(node).packed_in = [pack_saved(t, hooks) for t in node.saved]
        node.saved = None
    if node.out_data is not None:
        rec = _extra(node).packed_out = pack_saved(out, hooks)
        rec.grad_fn = None          # the node itself (set again on unpack): no cycle
        node.out_data = None


def _unpack_any(node):
    """``node._unpack()``, or its saved tensors through their unpack hooks."""
    ex = node.hooks
    if ex is None or (ex.packed_in is None and ex.packed_out is None):
        return node._unpack()
    op = node.op
    if node.freed:
        raise RuntimeError(_FREED_MSG.format(name=op.node_name))
    name = op.node_name
    if ex.packed_in is not None:
        inputs = [unpack_saved(rec, name, f"input {i}")
                  for i, rec in enumerate(ex.packed_in)]
    else:
        inputs = [_Meta(s, d) for s, d in node.in_meta]
    out = None
    if ex.packed_out is not None:
        out = unpack_saved(ex.packed_out, name, "the output")
        out._grad_fn = node
        out._requires_grad = True
        if node.out_tangent is not None:
            out._tangent, out._tangent_level = node.out_tangent
    return out, inputs


# ------------------------------------------------------------------------------
# GradientEdge

def _edge_base():
    import collections
    return collections.namedtuple("GradientEdge", ["node", "output_nr", "ownership_token"],
                                  defaults=[None])


class GradientEdge(_edge_base()):
    """An edge of the graph: output ``output_nr`` of ``node`` (PyTorch's
    ``torch.autograd.graph.GradientEdge``, a named tuple).

    ``node`` is a ``Node`` (a non-leaf's ``grad_fn``) or an ``AccumulateGrad``
    (a leaf).  ``autograd.grad(outputs=..., inputs=...)`` and
    ``backward(inputs=...)`` accept edges where they accept tensors: the gradient
    w.r.t. an edge is what flows into it, even after the tensor it was taken from
    has been modified in place (the edge remembers the node, not the tensor).
    ``ownership_token`` is accepted for PyTorch compatibility and unused.
    """
    __slots__ = ()


def get_gradient_edge(tensor):
    """The ``GradientEdge`` through which ``tensor``'s gradient flows: its
    ``grad_fn`` and output index, or an ``AccumulateGrad`` for a leaf.

    Raises:
        TypeError: ``tensor`` is not a Tensor.
        RuntimeError: the tensor does not require grad (PyTorch's message).
    """
    if not hasattr(tensor, "_requires_grad"):
        raise TypeError(f"get_gradient_edge(): expected a Tensor, got "
                        f"{type(tensor).__name__}")
    if not tensor._requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that "
                           "does not require gradients")
    node = tensor._grad_fn
    if node is None:
        return GradientEdge(AccumulateGrad(tensor), 0)
    nr = _output_nr(tensor)
    if type(node) is Node:      # (a MultiNode knows its outputs' shapes)
        _edge_meta_store()[node] = (nr, tensor._data.shape, tensor._data.dtype)
    return GradientEdge(node, nr)


_EDGE_META = None


def _edge_meta_store():
    """Node -> (output_nr, shape, ndarray dtype) of the edges get_gradient_edge
    handed out (weak keys): what grad(outputs=edge) checks grad_outputs against."""
    global _EDGE_META
    if _EDGE_META is None:
        import weakref
        _EDGE_META = weakref.WeakKeyDictionary()
    return _EDGE_META


def gradient_edge_key(edge, what):
    """The engine's graph key for ``edge`` and ``(shape, ndarray dtype)`` of the
    gradient flowing through it (``None`` when unknown: an edge built by hand).

    Raises:
        TypeError: ``edge.node`` is neither a Node nor an AccumulateGrad.
        RuntimeError: an output_nr the node does not have.
    """
    node, nr = edge.node, edge.output_nr
    if type(node) is AccumulateGrad:
        key = node.variable
        meta = (key._data.shape, key._data.dtype)
    elif type(node) is Node:
        key = node
        m = _EDGE_META.get(node) if _EDGE_META is not None else None
        meta = m[1:] if m is not None and m[0] == nr else None
    elif isinstance(node, MultiNode):
        n = len(node.out_meta)
        if not (type(nr) is int and 0 <= nr < n):
            raise RuntimeError(f"{what}: GradientEdge.output_nr is {nr!r}, but "
                               f"{node.name()} has {n} outputs")
        return node_key(node, nr), node.out_meta[nr]
    else:
        raise TypeError(f"{what}: GradientEdge.node must be a graph Node or an "
                        f"AccumulateGrad, got {type(node).__name__}")
    if nr != 0:
        raise RuntimeError(f"{what}: GradientEdge.output_nr is {nr!r}, but {node.name()} "
                           f"has 1 output")
    return key, meta


# ------------------------------------------------------------------------------
# saved-tensor hooks (public context managers)

class saved_tensors_hooks:
    """Context manager: pack/unpack hooks for the tensors the graph saves.

    Every node recorded inside the context calls ``pack_hook(tensor)`` once per
    tensor it saves for its backward (inputs and/or its output, as its VJP rule
    needs; which ones differs per op, so counts can differ from PyTorch's) and
    keeps only the result; the backward calls ``unpack_hook(packed)``, which must
    return a Tensor with the saved tensor's values, once per saved tensor per
    pass.  An in-place change of a saved tensor after it was packed still makes the
    backward raise (the version counter is checked, as in PyTorch).  Hooks nest
    (the innermost pair applies) and are per thread; a pack hook runs with
    saved-tensor hooks off and must not modify its input in place.

    Args:
        pack_hook (callable): ``Tensor -> object``.
        unpack_hook (callable): ``object -> Tensor``.

    Raises:
        TypeError: a hook that is not callable.
    """

    def __init__(self, pack_hook, unpack_hook):
        for name, fn in (("pack_hook", pack_hook), ("unpack_hook", unpack_hook)):
            if not callable(fn):
                raise TypeError(f"saved_tensors_hooks(): {name} must be callable, got "
                                f"{type(fn).__name__}")
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        push_saved_hooks(self.pack_hook, self.unpack_hook)
        return self

    def __exit__(self, *exc):
        pop_saved_hooks()


class save_on_cpu(saved_tensors_hooks):
    """``saved_tensors_hooks`` that move saved tensors to CPU memory and back
    (PyTorch's offloading context).  Tensors are on the CPU already here, so the
    pack hook keeps a private numpy copy and the unpack hook wraps it again.

    Args:
        pin_memory (bool): accepted for PyTorch compatibility (no effect).
        device_type (str): accepted for PyTorch compatibility (no effect).
    """

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(t):
            return t._data.copy()

        def unpack(arr):
            return _wrap(arr)

        super().__init__(pack, unpack)
