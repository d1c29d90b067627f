"""Hooks, anomaly mode and saved-tensor hooks: the engine's slow paths
(autograd/graph.py keeps the nodes and the hot loop; _edge.py GradientEdge).

A Node carries ``hooks = None`` until a hook, anomaly mode's traceback or packed
saved tensors give it a ``_NodeExtra``; ``graph._run_backward`` sends such nodes
(and every node while anomaly mode is on) through ``_run_hooked`` /
``_run_multi_hooked`` here instead of its inline VJP loop, and calls
``_leaf_hooks`` for leaves that have a ``_hooks`` record.  ``graph._RECORD_EXTRA``
(set here) makes ``Node._record`` call ``_record_extra`` while anomaly mode is on
or saved-tensor hooks are active.  The public names are re-exported by
``tensorplay.autograd.graph``, PyTorch's module for them.
"""
from tensorplay._dtype import from_numpy_dtype
from tensorplay.autograd import _accumulate
from tensorplay.autograd import graph as _g
from tensorplay.autograd.grad_mode import STATE
from tensorplay.autograd.graph import (
    _ANOMALY, _fit_grad, _FREED_MSG, _last_inplace, _Meta, MultiNode, Node,
    _output_nr, output_nr, _RETAINERS, _run_backward, _run_multi)

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
    __slots__ = ("pre", "post_acc", "retains", "acc_pre", "acc_post")

    def __init__(self):
        self.pre = None             # HookDict (leaves; non-leaves use their node)
        self.post_acc = None        # HookDict
        self.retains = False
        self.acc_pre = None         # HookDict: AccumulateGrad.register_prehook
        self.acc_post = None        # HookDict: AccumulateGrad.register_hook


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




def _refresh_retains():
    for ref in list(_RETAINERS.values()):
        t = ref()
        if t is None or t._grad_fn is None:
            continue
        ex = t._grad_fn.hooks
        if ex is None or not ex.retains or ex.retains.get(_output_nr(t)) is not ref:
            _retain_on(t._grad_fn, ref, t)


def register_post_accumulate_grad_hook(t, fn):
    """``Tensor.register_post_accumulate_grad_hook``: ``fn(t)`` as soon as
    ``backward()`` has accumulated into ``t.grad``, during the pass (leaves only;
    PyTorch's timing, autograd/_accumulate.py)."""
    if not t._requires_grad:
        raise RuntimeError("register_post_accumulate_grad_hook(): cannot register a hook "
                           "on a tensor that doesn't require gradient")
    if t._grad_fn is not None:
        raise RuntimeError("register_post_accumulate_grad_hook(): post accumulate grad "
                           "hooks cannot be registered on non-leaf tensors")
    _accumulate.ACTIVE[0] = True
    return _add_hook(_tensor_hooks(t), "post_acc", fn,
                     "Tensor.register_post_accumulate_grad_hook()")


def register_accumulate_grad_hook(t, field, fn, what):
    """A hook of leaf ``t``'s ``AccumulateGrad`` node (``field``: "acc_pre" or
    "acc_post"), kept on ``t`` since the node is made afresh on each read."""
    _accumulate.ACTIVE[0] = True
    return _add_hook(_tensor_hooks(t), field, fn, what)


def accumulate_grad_hooks(t, g, when):
    """Run leaf ``t``'s AccumulateGrad pre-hooks on ``g`` (``when="pre"``: returns
    the gradient to accumulate, None to accumulate nothing) or post-hooks
    (``when="post"``), as PyTorch's node hooks on AccumulateGrad."""
    th = t._hooks
    hooks = None if th is None else th.acc_pre if when == "pre" else th.acc_post
    if not hooks:
        return g
    for fn in list(hooks.values()):
        if when == "pre":
            r = fn((g,))
            if r is not None:
                r = _node_hook_values(fn, r, 1, "pre-hook")[0]
                g = None if r is None else _check_hook_grad(fn, g, r)
                if g is None:
                    return None
        else:
            r = fn((), (g,))
            if r is not None:
                _node_hook_values(fn, r, 0, "hook")
    return g


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
        grad_inputs = _run_post_hooks(ex.post, grad_inputs, grad_outputs, len(edges))
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
    """The gradient of leaf ``t`` after its tensor hooks (engine, leaves only); None
    if ``t`` has accumulate-grad hooks and a ``backward()`` pass accumulated it
    here and ran them, as PyTorch's AccumulateGrad node (autograd/_accumulate.py)."""
    th = t._hooks
    pre = th.pre
    if pre:
        g = _run_tensor_hooks(pre, g)
    if (th.post_acc or th.acc_pre or th.acc_post) and _accumulate.accumulate_now(t, g):
        return None
    return g


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


def _run_post_hooks(post, grad_inputs, grad_outputs, n):
    """A node's ``register_hook`` hooks in order, each seeing the previous one's
    replacement; returns the final grad_inputs tuple."""
    gi_tuple = tuple(grad_inputs)
    for fn in list(post.values()):
        r = fn(gi_tuple, grad_outputs)
        if r is not None:
            gi_tuple = _node_hook_values(fn, r, n, "hook")
    return gi_tuple


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
        gi = _g._sum_to_shape(gi, shape)
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
        grad_inputs = _run_post_hooks(ex.post, grad_inputs, grad_outputs, len(edges))
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




def _update_record_extra():
    _g._RECORD_EXTRA = _ANOMALY[0] or _SAVED_HOOKS_USERS[0] > 0


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
    disabled = getattr(tls, "disabled", None)      # disable_saved_tensors_hooks
    if disabled is not None:
        raise RuntimeError(disabled)
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
    v = _g._wrap(u._data)
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
            return _g._wrap(arr)

        super().__init__(pack, unpack)
