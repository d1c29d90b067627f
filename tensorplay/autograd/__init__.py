"""Automatic differentiation: reverse mode (``grad``, ``backward``), forward mode
(``forward_ad``), the ``functional`` API (``jvp``) and ``gradcheck``.

Semantics follow ``torch.autograd``.  The engine is ``autograd/graph.py``; the
per-primitive rules live in the registry (``tensorplay/_ops``).
"""
import threading

import numpy as np

from tensorplay.autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled,
                                           is_inference_mode_enabled, no_grad,
                                           set_grad_enabled)
from tensorplay.autograd.graph import Node, edge_key, run_backward
from tensorplay.autograd.function import Function, FunctionCtx, once_differentiable

__all__ = ["grad", "backward", "no_grad", "enable_grad", "set_grad_enabled",
           "is_grad_enabled", "inference_mode", "is_inference_mode_enabled", "gradcheck",
           "gradgradcheck", "GradcheckError", "Node", "forward_ad", "functional",
           "Function", "FunctionCtx", "once_differentiable"]


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
    """A Tensor or a sequence (entries may be None, e.g. grad_outputs) as a tuple."""
    if isinstance(x, _late().Tensor):
        return (x,)
    try:
        return tuple(x)
    except TypeError:
        raise TypeError(f"{name} must be a Tensor or a sequence of Tensors, "
                        f"got {type(x).__name__}") from None


def _key(t):
    return edge_key(t)


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


def _make_grads(outputs, grad_outputs, is_grads_batched, op):
    """Check ``grad_outputs`` against ``outputs``; fill in ones for scalar outputs.

    Returns (roots, root_grads) for the outputs that require grad.
    """
    late = _late()
    Tensor, ones_like = late.Tensor, late.ones_like
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"{op}: got {len(outputs)} outputs but {len(grad_outputs)} "
                           f"grad_outputs; pass one per output (None for scalar outputs)")
    roots, grads = [], []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if not isinstance(out, Tensor):
            raise TypeError(f"{op}: output {i} is a {type(out).__name__}, not a Tensor")
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
            VJP is computed for each entry and the results stacked along dim 0.
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
        if not hasattr(t, "_requires_grad"):
            raise TypeError(f"grad(): inputs[{i}] is a {type(t).__name__}, not a Tensor")
        if not t._requires_grad:
            raise _no_grad_error(f"grad(): One of the differentiated Tensors (inputs[{i}]) "
                                 f"does not require grad")
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs, "grad(): grad_outputs")
    roots, root_grads = _make_grads(outputs, grad_outputs, is_grads_batched, "grad()")
    keys = [_key(t) for t in inputs]
    root_keys = [_key(t) for t in roots]

    def one_pass(gs, retain):
        found = run_backward(root_keys, gs, keys, retain_graph=retain,
                             create_graph=create_graph)
        return [found[id(k)][1] if id(k) in found else None for k in keys]

    if not is_grads_batched:
        results = one_pass(root_grads, retain_graph)
    else:
        n = root_grads[0].shape[0]
        if any(g.shape[0] != n for g in root_grads):
            raise RuntimeError("grad(): with is_grads_batched=True every grad_output needs "
                               "the same batch size")
        per = [one_pass([g[b] for g in root_grads], retain_graph or b < n - 1)
               for b in range(n)]
        results = []
        for j in range(len(inputs)):
            col = [p[j] for p in per]
            if n == 0:          # an empty batch: an empty batch of gradients
                results.append(zeros_like(inputs[j]).unsqueeze(0).expand(
                    (0,) + tuple(inputs[j].shape)).clone())
                continue
            results.append(None if all(c is None for c in col) else
                           stack([c if c is not None else zeros_like(inputs[j])
                                  for c in col], 0))
    out = []
    for i, (t, r) in enumerate(zip(inputs, results)):
        if r is None:
            if not allow_unused:
                raise RuntimeError(f"grad(): One of the differentiated Tensors (inputs[{i}]) "
                                   f"appears to not have been used in the graph. Set "
                                   f"allow_unused=True if this is the desired behavior.")
            if materialize_grads:
                r = zeros_like(t)
                if is_grads_batched:
                    r = stack([r] * root_grads[0].shape[0], 0)
        else:
            r = _own_storage(r)
            if not create_graph:
                r = r.detach()
        out.append(r)
    return tuple(out)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             inputs=None):
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of graph leaves.

    Semantics of ``torch.autograd.backward``: ``.grad`` is summed into, not
    overwritten (zero it between steps).

    Args:
        tensors (Tensor or sequence): the outputs to differentiate.
        grad_tensors (Tensor or sequence, optional): one cotangent per tensor;
            ``None`` entries are ones for one-element tensors.
        retain_graph (bool, optional): defaults to ``create_graph``.
        create_graph (bool): make the accumulated ``.grad`` differentiable.
        inputs (Tensor or sequence, optional): accumulate only into these tensors
            (leaves or not) instead of every leaf.

    Raises:
        RuntimeError: as ``grad``.
    """
    if retain_graph is None:
        retain_graph = create_graph
    tensors = _as_tuple(tensors, "backward(): tensors")
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    else:
        grad_tensors = _as_tuple(grad_tensors, "backward(): grad_tensors")
    roots, root_grads = _make_grads(tensors, grad_tensors, False, "backward()")
    if inputs is not None:
        inputs = _as_tuple(inputs, "backward(): inputs")
        if not inputs:
            raise RuntimeError("backward(): inputs argument passed to backward() cannot be "
                               "empty.")
        for i, t in enumerate(inputs):
            if not t._requires_grad:
                raise _no_grad_error(f"backward(): inputs[{i}] does not require grad")
        # a tensor listed twice gets its gradient once (PyTorch)
        inputs = tuple({id(t): t for t in inputs}.values())
        keys = [_key(t) for t in inputs]
    else:
        keys = None
    found = run_backward([_key(t) for t in roots], root_grads, keys,
                         retain_graph=retain_graph, create_graph=create_graph)
    if inputs is None:
        # every leaf reached, keyed by the leaf itself; a leaf whose requires_grad
        # was switched off after the graph was built gets nothing (PyTorch)
        targets = [(t, g) for t, g in found.values() if t._requires_grad]
    else:
        targets = [(t, found[id(_key(t))][1] if id(_key(t)) in found else None)
                   for t in inputs]
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
    with _ACCUMULATE_LOCK:
        _accumulate_locked(t, g, create_graph)


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
