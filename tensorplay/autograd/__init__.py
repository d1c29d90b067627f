"""Automatic differentiation: reverse mode (``grad``, ``backward``), forward mode
(``forward_ad``), the ``functional`` API (``jvp``) and ``gradcheck``; hooks,
``graph.GradientEdge`` and ``graph.saved_tensors_hooks`` (``autograd/graph.py``),
anomaly mode (``detect_anomaly``, ``set_detect_anomaly``, ``anomaly_mode.py``).

Semantics follow ``torch.autograd``.  The engine is ``autograd/graph.py``; the
per-primitive rules live in the registry (``tensorplay/_ops``).
"""
import threading

import numpy as np

from tensorplay.autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled,
                                           is_inference_mode_enabled, no_grad,
                                           set_grad_enabled)
from tensorplay.autograd import _accumulate, graph
from tensorplay.autograd.anomaly_mode import (detect_anomaly, is_anomaly_check_nan_enabled,
                                              is_anomaly_enabled, set_detect_anomaly)
from tensorplay.autograd.function import Function, FunctionCtx, once_differentiable
from tensorplay.autograd.graph import (GradientEdge, Node, edge_key, gradient_edge_key,
                                       run_backward)

__all__ = ["grad", "backward", "no_grad", "enable_grad", "set_grad_enabled",
           "is_grad_enabled", "inference_mode", "is_inference_mode_enabled", "gradcheck",
           "gradgradcheck", "GradcheckError", "Node", "forward_ad", "functional",
           "Function", "FunctionCtx", "once_differentiable", "graph",
           "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]


class _Late:
    """Names this package needs from modules that import it first (Tensor, the
    creation functions), bound once on first use rather than by an import
    statement in every call."""
    Tensor = ones_like = zeros_like = stack = None

    @classmethod
    def bind(cls):
        from tensorplay._creation import ones_like, zeros_like
        from tensorplay._ops.shape import stack
        from tensorplay._tensor import Tensor
        cls.Tensor, cls.ones_like, cls.zeros_like, cls.stack = Tensor, ones_like, zeros_like, stack
        return cls


def _late():
    return _Late if _Late.Tensor is not None else _Late.bind()


def _as_tuple(x, name):
    """A Tensor, a GradientEdge or a sequence (entries may be None, e.g.
    grad_outputs) as a tuple."""
    if isinstance(x, (_late().Tensor, GradientEdge)):
        return (x,)
    try:
        return tuple(x)
    except TypeError:
        raise TypeError(f"{name} must be a Tensor or a sequence of Tensors, "
                        f"got {type(x).__name__}") from None


def _key(t):
    if type(t) is GradientEdge:
        return gradient_edge_key(t, "autograd")[0]
    return edge_key(t)


def _check_input(t, i, op):
    """``inputs[i]`` of grad()/backward(): a Tensor that requires grad, or a
    GradientEdge (checked by ``gradient_edge_key``)."""
    if type(t) is GradientEdge:
        gradient_edge_key(t, op)
        return
    if not hasattr(t, "_requires_grad"):
        raise TypeError(f"{op}: all inputs have to be Tensors or GradientEdges, but "
                        f"inputs[{i}] is a {type(t).__name__}")
    if not t._requires_grad:
        raise _no_grad_error(f"{op}: One of the differentiated Tensors (inputs[{i}]) "
                             f"does not require grad")


def _no_grad_error(msg):
    """The RuntimeError for "this tensor does not require grad".

    While ``functional.jvp(mode="forward")`` runs its function without a reverse
    graph, it is a ``functional.NeedsReverseGraph`` instead (a BaseException, so
    the function cannot catch it by accident), on which jvp runs the function again
    with inputs that require grad.
    """
    from tensorplay.autograd import functional
    if functional._GRAPH_FREE.active:
        return functional.NeedsReverseGraph(msg)
    return RuntimeError(msg)


def _make_grads(outputs, grad_outputs, is_grads_batched, op, strict=False):
    """Check ``grad_outputs`` against ``outputs``; fill in ones for scalar outputs.

    ``outputs`` may hold GradientEdges (their gradient shape is known when
    ``get_gradient_edge`` made them).  ``strict`` (backward()): every output must
    require grad, as in PyTorch; otherwise (grad()) outputs that do not are skipped.

    Returns (roots, root_grads) for the outputs that require grad.
    """
    late = _late()
    Tensor, ones_like = late.Tensor, late.ones_like
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"{op}: got {len(outputs)} outputs but {len(grad_outputs)} "
                           f"grad_outputs; pass one per output (None for scalar outputs)")
    roots, grads = [], []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if type(out) is GradientEdge:
            roots.append(out)
            grads.append(_edge_grad(out, i, g, is_grads_batched, op))
            continue
        if not isinstance(out, Tensor):
            raise TypeError(f"{op}: output {i} is a {type(out).__name__}, not a Tensor")
        if strict and not out._requires_grad:
            raise _no_grad_error(f"{op}: element {i} of tensors does not require grad and "
                                 f"does not have a grad_fn")
        if g is None:
            if out._data.size != 1:
                raise RuntimeError(f"{op}: grad can be implicitly created only for scalar "
                                   f"outputs; output {i} has shape {list(out.shape)}, so pass "
                                   f"its grad_output")
            if not out._requires_grad:
                continue
            g = ones_like(out)
        else:
            if not isinstance(g, Tensor):
                raise TypeError(f"{op}: grad_output {i} must be a Tensor or None, got "
                                f"{type(g).__name__}")
            want = out._data.shape
            have = g._data.shape[1:] if is_grads_batched else g._data.shape
            if have != want:
                raise RuntimeError(
                    f"{op}: Mismatch in shape: grad_output[{i}] has a shape of "
                    f"{list(g._data.shape)} and output[{i}] has a shape of {list(want)}"
                    + (" (with is_grads_batched=True the first dim is the batch)"
                       if is_grads_batched else ""))
            if not out._requires_grad:
                continue
            if g._data.dtype != out._data.dtype:
                g = g.to(out.dtype)
        roots.append(out)
        grads.append(g)
    if not roots:
        raise _no_grad_error(f"{op}: element 0 of tensors does not require grad and does "
                             f"not have a grad_fn")
    return roots, grads


def _edge_grad(edge, i, g, is_grads_batched, op):
    """The cotangent for output ``i``, a GradientEdge: ``g`` checked against the
    edge's shape when known, or ones when the edge carries one element."""
    Tensor = _late().Tensor
    meta = gradient_edge_key(edge, op)[1]
    if g is None:
        if meta is None or int(np.prod(meta[0])) != 1:
            raise RuntimeError(f"{op}: grad can be implicitly created only for scalar "
                               f"outputs; pass a grad_output for output {i} (a "
                               f"GradientEdge" + ("" if meta is None else
                                                  f" of shape {list(meta[0])}") + ")")
        return Tensor._wrap(np.ones(meta[0], meta[1]))
    if not isinstance(g, Tensor):
        raise TypeError(f"{op}: grad_output {i} must be a Tensor or None, got "
                        f"{type(g).__name__}")
    if meta is not None:
        have = g._data.shape[1:] if is_grads_batched else g._data.shape
        if have != meta[0]:
            raise RuntimeError(f"{op}: Mismatch in shape: grad_output[{i}] has a shape of "
                               f"{list(g._data.shape)} and output[{i}] has a shape of "
                               f"{list(meta[0])}")
        if g._data.dtype != meta[1]:
            g = Tensor._wrap(g._data.astype(meta[1]))
    return g


def _zeros_for(t):
    """Zeros shaped like input ``t`` (a Tensor or a GradientEdge)."""
    if type(t) is GradientEdge:
        meta = gradient_edge_key(t, "grad()")[1]
        if meta is None:
            raise RuntimeError("grad(): materialize_grads=True needs the shape of an unused "
                               "GradientEdge input; make the edge with get_gradient_edge()")
        return _late().Tensor._wrap(np.zeros(meta[0], meta[1]))
    return _late().zeros_like(t)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False,
         materialize_grads=False):
    """Sum of the vector-Jacobian products of ``outputs`` with respect to ``inputs``.

    Never touches ``.grad``.  Semantics are those of ``torch.autograd.grad``.

    Args:
        outputs (Tensor or sequence of Tensor): outputs of the differentiated function.
        inputs (Tensor or sequence of Tensor): tensors (leaves or not) that require
            grad, w.r.t. which the gradient is returned.
        grad_outputs (Tensor or sequence, optional): the "vector" of each VJP, one
            per output, shaped like it; ``None`` entries are ones for one-element
            outputs.  Outputs that do not require grad are skipped.
        retain_graph (bool, optional): keep the graph for another pass; defaults to
            ``create_graph``.
        create_graph (bool): record the backward pass so the result can be
            differentiated again (higher-order derivatives).
        allow_unused (bool, optional): return ``None`` for inputs the outputs do not
            depend on instead of raising; defaults to ``materialize_grads``.
        is_grads_batched (bool): the first dim of every grad_output is a batch; the
            result holds the VJP of each entry, stacked along dim 0.  Computed in
            one backward pass with batched cotangents (the VJP rules run under
            vmap, tensorplay/_ops/_batching.py); when a rule on the way reads
            tensor values directly (an op tensorplay implements in numpy, which
            vmap refuses), or the batch is empty, it falls back to one backward
            pass per entry.  Every grad_output needs the same batch size.
        materialize_grads (bool): zeros instead of ``None`` for unused inputs.
        only_inputs (bool): accepted for PyTorch compatibility and ignored
            (deprecated there too).

    Returns:
        tuple of Tensor (or None), one per input, each shaped like its input.

    Raises:
        RuntimeError: an input that does not require grad; a non-scalar output
            without grad_output; a shape mismatch; an unused input without
            ``allow_unused``; a pass through a graph freed by an earlier pass.
        ValueError: ``materialize_grads=True`` with ``allow_unused=False``.
    """
    late = _late()
    zeros_like, stack = late.zeros_like, late.stack
    if materialize_grads and allow_unused is False:
        raise ValueError("grad(): expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    if retain_graph is None:
        retain_graph = create_graph
    outputs = _as_tuple(outputs, "grad(): outputs")
    inputs = _as_tuple(inputs, "grad(): inputs")
    if not inputs:
        raise RuntimeError("grad(): grad requires non-empty inputs.")
    for i, t in enumerate(inputs):
        _check_input(t, i, "grad()")
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs, "grad(): grad_outputs")
    roots, root_grads = _make_grads(outputs, grad_outputs, is_grads_batched, "grad()")
    keys = [_key(t) for t in inputs]
    root_keys = [_key(t) for t in roots]

    def one_pass(gs, retain):
        found = _accumulate.run_pass(False, root_keys, gs, keys, retain_graph=retain,
                                     create_graph=create_graph)
        return [found[id(k)][1] if id(k) in found else None for k in keys]

    if not is_grads_batched:
        results = one_pass(root_grads, retain_graph)
    else:
        n = root_grads[0].shape[0]
        if any(g.shape[0] != n for g in root_grads):
            raise RuntimeError("grad(): with is_grads_batched=True every grad_output needs "
                               "the same batch size")
        batched = _batched_pass(root_keys, root_grads, keys, retain_graph, create_graph) \
            if n else None
        if batched is not None:
            results = batched
        else:
            per = [one_pass([g[b] for g in root_grads], retain_graph or b < n - 1)
                   for b in range(n)]
            results = []
        for j in range(len(inputs) if batched is None else 0):
            col = [p[j] for p in per]
            if n == 0:          # an empty batch: an empty batch of gradients
                z = _zeros_for(inputs[j])
                results.append(z.unsqueeze(0).expand((0,) + tuple(z.shape)).clone())
                continue
            results.append(None if all(c is None for c in col) else
                           stack([c if c is not None else _zeros_for(inputs[j])
                                  for c in col], 0))
    out = []
    for i, (t, r) in enumerate(zip(inputs, results)):
        if r is None:
            if not allow_unused:
                raise RuntimeError(f"grad(): One of the differentiated Tensors (inputs[{i}]) "
                                   f"appears to not have been used in the graph. Set "
                                   f"allow_unused=True if this is the desired behavior.")
            if materialize_grads:
                r = _zeros_for(t)
                if is_grads_batched:
                    r = stack([r] * root_grads[0].shape[0], 0)
                if create_graph:
                    # a leaf that requires grad, as PyTorch's: differentiating it
                    # again gives zeros (allow_unused) instead of an error, so the
                    # third derivative of x**2 is 0
                    r._requires_grad = True
        else:
            r = _own_storage(r)
            if not create_graph:
                r = r.detach()
        out.append(r)
    return tuple(out)


def _batched_pass(root_keys, root_grads, keys, retain_graph, create_graph):
    """``grad(..., is_grads_batched=True)`` in one backward pass: the cotangents
    are batched tensors (vmap over the VJP), so every VJP rule runs its batching
    rules.  Returns one gradient (batch dim 0) or None per key, or None when a
    rule on the way cannot run batched (the caller then loops)."""
    from tensorplay._ops import _batching
    from tensorplay.autograd.grad_mode import STATE
    level = _batching.new_level()
    size = root_grads[0].shape[0]
    gs = [_batching.make_batched(g, level) for g in root_grads]
    STATE.vmap_depth += 1
    try:
        # the graph is kept until the pass has succeeded: the loop needs it otherwise
        found = _accumulate.run_pass(False, root_keys, gs, keys, retain_graph=True,
                                     create_graph=create_graph)
    except _batching.VmapDataError:
        return None
    finally:
        STATE.vmap_depth -= 1
    if not retain_graph:
        _release_graph(root_keys)
    out = []
    for k in keys:
        if id(k) not in found:
            out.append(None)
            continue
        g = found[id(k)][1]
        phys, lv = _batching.batched_value(g)
        if phys is not None and lv == level:
            out.append(phys)
        else:                   # the same for every entry (e.g. zeros)
            out.append(g.unsqueeze(0).expand((size,) + tuple(g.shape)))
    return out


def _release_graph(root_keys):
    """Free the saved tensors of every node reachable from ``root_keys`` (what a
    pass without retain_graph does as it goes)."""
    seen = set()
    stack = list(root_keys)
    while stack:
        key = stack.pop()
        if id(key) in seen:
            continue
        seen.add(id(key))
        if type(key) is Node:
            edges = key.next_edges
            graph._release_hooked(key)
        else:
            edges = graph._edges_of(key)
            if isinstance(key, graph.MultiNode):
                graph._release_hooked(key)
        stack.extend(e for e in edges if e is not None and id(e) not in seen)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             inputs=None):
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of graph leaves.

    Semantics of ``torch.autograd.backward``: ``.grad`` is summed into, not
    overwritten (zero it between steps).

    Args:
        tensors (Tensor, GradientEdge or sequence): the outputs to differentiate;
            each must require grad (PyTorch's rule, unlike ``grad``'s outputs).
        grad_tensors (Tensor or sequence, optional): one cotangent per tensor;
            ``None`` entries are ones for one-element tensors.
        retain_graph (bool, optional): defaults to ``create_graph``.
        create_graph (bool): make the accumulated ``.grad`` differentiable.
        inputs (Tensor, GradientEdge or sequence, optional): accumulate only into
            these tensors (leaves or not) instead of every leaf; a non-leaf gets
            ``retain_grad()`` called on it, as in PyTorch.  A leaf's
            GradientEdge accumulates into the leaf's ``.grad``; a non-leaf's
            computes the gradient flowing into it (its hooks run) and stores it
            nowhere, as in PyTorch.

    Raises:
        RuntimeError: one of ``tensors`` does not require grad ("element i of
            tensors does not require grad and does not have a grad_fn"); otherwise
            as ``grad``.
    """
    if retain_graph is None:
        retain_graph = create_graph
    tensors = _as_tuple(tensors, "backward(): tensors")
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    else:
        grad_tensors = _as_tuple(grad_tensors, "backward(): grad_tensors")
    roots, root_grads = _make_grads(tensors, grad_tensors, False, "backward()",
                                    strict=True)
    if inputs is not None:
        inputs = _as_tuple(inputs, "backward(): inputs")
        if not inputs:
            raise RuntimeError("backward(): inputs argument passed to backward() cannot be "
                               "empty.")
        for i, t in enumerate(inputs):
            _check_input(t, i, "backward()")
        # a tensor listed twice gets its gradient once (PyTorch); an edge's gradient
        # goes to its leaf, or nowhere
        by_key = {}
        for t in inputs:
            key = _key(t)
            if type(t) is GradientEdge:
                t = key if type(key) is not Node else None
            if by_key.get(id(key), (None,))[0] is None:
                by_key[id(key)] = (t, key)
        inputs = [t for t, _ in by_key.values()]
        keys = [k for _, k in by_key.values()]
        for t in inputs:
            if t is not None and t._grad_fn is not None:
                # a non-leaf: PyTorch calls retain_grad() on it, which fills .grad
                # during the pass (after its hooks) and in later passes too
                graph.retain_grad(t)
    else:
        keys = None
    # a leaf with accumulate-grad hooks is accumulated during the pass (PyTorch's
    # AccumulateGrad timing; autograd/_accumulate.py) and then comes back as None
    acc_targets = None if inputs is None else {
        id(t) for t in inputs if t is not None and t._grad_fn is None}
    found = _accumulate.run_pass(acc_targets, [_key(t) for t in roots], root_grads, keys,
                                 retain_graph=retain_graph, create_graph=create_graph)
    if inputs is None:
        # every leaf reached, keyed by the leaf itself; a leaf whose requires_grad
        # was switched off after the graph was built gets nothing (PyTorch)
        targets = [(t, g) for t, g in found.values() if t._requires_grad]
    else:
        targets = [(t, found[id(k)][1] if id(k) in found else None)
                   for t, k in zip(inputs, keys) if t is not None and t._grad_fn is None]
    for t, g in targets:
        if g is None:
            continue
        g = _own_storage(g)
        if not create_graph:
            g = g.detach()
        _accumulate_grad(t, g, create_graph)


_ACCUMULATE_LOCK = threading.Lock()


def _accumulate_grad(t, g, create_graph):
    """``t.grad += g`` as PyTorch's AccumulateGrad: in place when the graph is not
    kept (references to ``t.grad``, e.g. an optimiser's, stay current), a new
    differentiable sum when it is.

    Under a lock: threads running ``backward()`` into one leaf (Hogwild-style
    training) would otherwise both see no ``.grad`` and keep one, or add into the
    same buffer at once (numpy releases the GIL) and lose updates.  PyTorch takes
    a per-leaf lock; one lock for all leaves is simpler and the sums are short."""
    if g._data.dtype != t._data.dtype:
        g = g.to(t.dtype)
    hooked = t._hooks is not None
    if hooked:                  # AccumulateGrad.register_prehook
        g = graph.accumulate_grad_hooks(t, g, "pre")
        if g is None:
            return
    with _ACCUMULATE_LOCK:
        _accumulate_locked(t, g, create_graph)
    if hooked:
        graph.post_accumulate(t)
        graph.accumulate_grad_hooks(t, g, "post")


def _accumulate_locked(t, g, create_graph):
    old = t._grad
    if old is not None and old._data.shape != g._data.shape:
        # e.g. ``x.data`` was given another shape after the last backward: adding
        # would broadcast into (or fail on) the stale .grad
        raise RuntimeError(f"backward(): the gradient has shape {list(g.shape)} but the "
                           f"tensor's existing .grad has shape {list(old.shape)}; set "
                           f".grad = None after changing the tensor's shape")
    if old is None:
        # a private copy: g may share storage with another leaf's gradient (add's
        # VJP passes g through to both inputs) or with the caller's grad_tensors;
        # with create_graph a differentiable clone, so a later plain backward can
        # still add into it in place without touching those
        t._grad = g.clone() if create_graph else g.detach().clone()
    elif create_graph or not old._data.flags.writeable:
        t._grad = old + g                    # recorded: differentiable sum
    else:
        # without create_graph PyTorch adds in place, unrecorded, even into a
        # .grad that requires grad
        np.add(old._data, g._data, out=old._data)
        old._version[0] += 1


def _own_storage(g):
    """A gradient that is a read-only broadcast view (the VJP of sum and expand)
    gets its own storage, so ``x.grad.zero_()`` and other in-place updates work."""
    return g if g._data.flags.writeable else g.clone()


# Submodules imported on first use (PEP 562) to keep `import tensorplay` cheap;
# once loaded, each is a plain attribute of this package.
_LAZY_SUBMODULES = ("forward_ad", "functional", "_forward", "_gradcheck")


def __getattr__(name):
    if name in ("gradcheck", "GradcheckError", "gradgradcheck"):
        from tensorplay.autograd import _gradcheck
        return getattr(_gradcheck, name)
    if name in _LAZY_SUBMODULES:
        import importlib
        return importlib.import_module(f"tensorplay.autograd.{name}")
    raise AttributeError(f"module 'tensorplay.autograd' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY_SUBMODULES) |
                  {"gradcheck", "GradcheckError", "gradgradcheck"})
