"""The primitive registry: one ``OpDef`` per differentiable primitive.

Every primitive is registered once, with its three parts side by side (DESIGN.md,
fixed point 2):

``forward(*arrays, **params) -> ndarray``
    A kernel call on numpy arrays.  The public function in front of it has already
    validated the arguments and promoted dtypes; kernels run with bounds checks off.
``vjp``: one rule per input, ``rule(g, out, *inputs, **params) -> Tensor``
    The cotangent contribution for that input, or ``None`` in the tuple when the
    input is not differentiable (integer targets, shapes).  Rules only run for
    inputs that need a gradient (PyTorch's ``needs_input_grad``).
``jvp(tangents, out, *inputs, **params) -> Tensor``
    ``tangents`` holds one Tensor or ``None`` (no tangent) per input.

Rules are written in tensorplay ops, so they are differentiable themselves
(fixed point 3): ``create_graph=True``, Hessians and forward-over-reverse need no
extra code.  The registry, not the rules, undoes broadcasting (``sum_to_shape``)
and casts cotangents back to the input's dtype (fixed point 4); likewise it
expands a tangent to the output's shape.

``apply`` is the one hot path.  With grad mode off and no dual level active it
costs the kernel call plus a Tensor allocation.  Inference mode costs it no extra
check: it is a value of the ``STATE.fw_level`` field read anyway (grad_mode.py).
"""
import weakref

import numpy as np

from tensorplay._tensor import Tensor
from tensorplay.autograd.grad_mode import INFERENCE, STATE
from tensorplay.autograd.graph import Node

__all__ = ["OpDef", "REGISTRY", "defop", "apply", "sum_to_shape"]


class OpDef:
    """A registered primitive.

    Attributes:
        name (str): registry key, e.g. ``"exp"``.
        forward: ``(*arrays, **params) -> ndarray``.
        vjp (sequence): one rule (or ``None``) per input; see the module docstring.
        jvp: forward-mode rule, ``(tangents, out, *inputs, **params) -> Tensor``.
        save_inputs / save_out (bool): what the VJP rules read; only that is kept.
        view (bool): the output shares storage (and the version counter) with input 0.
        pack_inputs (bool): VJP rules take the inputs as one tuple,
            ``rule(g, out, inputs, **params)``, for variadic primitives (``stack``):
            spreading k inputs into each of k rule calls would make the backward
            O(k^2).
        node_name (str): PyTorch-style ``grad_fn`` name, e.g. ``"ExpBackward0"``.
        batch: the batching rule under ``vmap``, ``rule(op, args, batched, size, params)
            -> Tensor`` (``tensorplay/_ops/_batching.py``: the rule makers and the
            contract); ``None`` runs the primitive once per batch entry (a loop).
    """
    __slots__ = ("name", "forward", "vjp", "jvp", "save_inputs", "save_out", "view",
                 "pack_inputs", "node_name", "batch")

    def __init__(self, name, forward, vjp, jvp, saves=(), view=False, pack_inputs=False,
                 batch=None):
        unknown = set(saves) - {"inputs", "out"}
        if unknown:
            raise ValueError(f"defop({name!r}): saves may hold 'inputs' and 'out', got {unknown}")
        self.name = name
        self.forward = forward
        self.vjp = vjp
        self.jvp = jvp
        self.save_inputs = "inputs" in saves
        self.save_out = "out" in saves
        self.view = view
        self.pack_inputs = pack_inputs
        self.node_name = "".join(p.capitalize() for p in name.split("_")) + "Backward0"
        self.batch = batch

    def __repr__(self):
        return f"<primitive {self.name}>"


REGISTRY: dict = {}


def defop(name, forward, vjp, jvp, *, saves=(), view=False, pack_inputs=False, batch=None):
    """Register a primitive and return its ``OpDef`` (see the module docstring)."""
    if name in REGISTRY:
        raise ValueError(f"defop(): primitive {name!r} is already registered")
    op = OpDef(name, forward, vjp, jvp, saves, view, pack_inputs, batch)
    REGISTRY[name] = op
    return op


def apply(op, inputs, params):
    """Run primitive ``op`` on the Tensors ``inputs`` with keyword ``params``.

    Records a graph node when grad mode is on and an input requires grad, and
    computes the output tangent when an input carries one at the active dual level.
    An input whose storage is batched (under ``vmap``) runs the primitive's
    batching rule instead (``_batching.batched_apply``): the check is a type
    comparison on each input's storage, which apply reads anyway.
    """
    # one and two inputs are the common case: no list, no ``**{}`` call
    n = len(inputs)
    if n == 2:
        a, b = inputs
        da = a._data
        db = b._data
        if type(da) is _BATCHED or type(db) is _BATCHED:
            return _batching.batched_apply(op, inputs, params)
        data = op.forward(da, db, **params) if params else op.forward(da, db)
        needs_node = a._requires_grad or b._requires_grad
    elif n == 1:
        a = inputs[0]
        da = a._data
        if type(da) is _BATCHED:
            return _batching.batched_apply(op, inputs, params)
        data = op.forward(da, **params) if params else op.forward(da)
        needs_node = a._requires_grad
    else:
        arrs = [t._data for t in inputs]
        for da in arrs:
            if type(da) is _BATCHED:
                return _batching.batched_apply(op, inputs, params)
        data = op.forward(*arrs, **params)
        needs_node = False
        for t in inputs:
            if t._requires_grad:
                needs_node = True
                break
    out = _wrap(data)
    if op.view:
        a = inputs[0]
        out._version = a._version
        # a view of a tensor that requires grad, made under no_grad: an in-place
        # write through it in grad mode would reach the base unseen (PyTorch refuses)
        if a._nograd_view or (a._requires_grad and not STATE.grad_enabled):
            out._nograd_view = True
        # remember how to re-derive the view from its root, so that an in-place op
        # through it can rebase the root's history (autograd/_inplace.py)
        root = a._base
        if root is None:
            root = a
            out._view_chain = ((op, params),)
        else:
            out._view_chain = a._view_chain + ((op, params),)
        out._base = root
        # a leaf that requires grad is never rebased (in-place on it, or on a view
        # of it, raises in grad mode), so its views need no regenerating
        if root._grad_fn is not None or not root._requires_grad:
            views = root._views
            if views is None:
                root._views = [_VIEWS_PRUNE, _weakref(out)]
            else:
                views.append(_weakref(out))
                if len(views) > views[0]:
                    _prune_views(views)
    state = STATE
    level = state.fw_level
    if level is INFERENCE:  # inference mode: no graph, no tangent, no version counter
        if not op.view:     # (a view shares its input's counter, or its None)
            out._version = None
        return out
    dt = data.dtype
    if dt is not _F32 and dt is not _F64 and dt.kind != "f":
        return out          # integer and bool results never carry derivatives
    node = None
    if needs_node and state.grad_enabled:
        node = Node(op, inputs, out, params)
    if level is not None and not state.fw_rule:
        _propagate_tangent(op, inputs, out, params, state)
        if node is not None and op.save_out and out._tangent is not None:
            # the saved output keeps its tangent (forward-over-reverse)
            node.out_tangent = (out._tangent, out._tangent_level)
    return out


_wrap = Tensor._wrap
_BATCHED = None     # the storage type of batched tensors (_batching.BatchedArray, bound there)
_VIEWS_PRUNE = 17           # first length at which a root's list of views is pruned


def _prune_views(views):
    """Drop the dead weak references from a root's ``[limit, ref, ...]`` list of
    views, and set the next limit to twice what is left (amortised O(1) per view)."""
    alive = [r for r in views[1:] if r() is not None]
    views[1:] = alive
    views[0] = 2 * len(alive) + _VIEWS_PRUNE
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)     # identity fast paths


def _propagate_tangent(op, inputs, out, params, state):
    level = state.fw_level
    tangents = None
    for i, t in enumerate(inputs):
        if t._tangent is not None and t._tangent_level == level:
            if tangents is None:
                tangents = [None] * len(inputs)
            tangents[i] = t._tangent
    if tangents is None:
        return
    state.fw_rule = True
    try:
        tangent = op.jvp(tangents, out, *inputs, **params)
    finally:
        state.fw_rule = False
    if tangent is None:
        return
    data, want = tangent._data, out._data
    if data.shape != want.shape:
        tangent = tangent.expand(want.shape)
    if data.dtype != want.dtype:
        tangent = tangent.to(out.dtype)
    out._tangent = tangent
    out._tangent_level = level
    if tangent._grad_fn is not None:
        # a recorded tangent may hold ``out`` (rules that read the output): a cycle
        # out -> tangent -> its node -> out, broken when the level exits
        state.fw_cycles.append(_weakref(out))


_weakref = weakref.ref


def sum_to_shape(g, shape):
    """Sum ``g`` over the dimensions that broadcasting added or stretched to reach
    ``shape`` (``at::sum_to`` in PyTorch, ``unbroadcast`` in HIPS/autograd).

    Differentiable: it is built from ``sum`` and ``reshape``.
    """
    shape = tuple(shape)
    gshape = g.shape
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    dims = list(range(lead))
    for i, s in enumerate(shape):
        if s == 1 and gshape[lead + i] != 1:
            dims.append(lead + i)
    if dims:
        g = g.sum(dim=tuple(dims), keepdim=True)
    if g.shape != shape:
        g = g.reshape(shape)
    return g


def tangent_sum(*terms):
    """Add the non-None terms (for JVP rules where some inputs have no tangent)."""
    total = None
    for t in terms:
        if t is not None:
            total = t if total is None else total + t
    return total



from tensorplay._ops import _batching  # noqa: E402  (it reads this module's names on use)
