"""Accumulating a hooked leaf's gradient during the pass, as PyTorch's
``AccumulateGrad`` node does.

``backward()`` normally adds into every leaf's ``.grad`` after the engine's pass
(autograd/__init__.py).  PyTorch accumulates each leaf when the engine reaches
its ``AccumulateGrad`` node, and runs the post-accumulate-grad hooks
(``Tensor.register_post_accumulate_grad_hook``) and ``AccumulateGrad``'s node
hooks right then, while the rest of the graph is still being differentiated --
DistributedDataParallel starts its gradient all-reduces from there, so they
overlap the remaining backward computation.  So for a leaf that has such hooks,
``_hooks._leaf_hooks`` (called by the engine when it reaches a hooked leaf, whose
gradient for the pass is then complete) accumulates it on the spot, through the
same ``_accumulate_grad``, and tells ``backward()`` to add nothing more.

The engine does not say which call started the pass, so ``backward()`` and the
calls that only compute gradients (``grad``, ``functional``) each push a record
on a per-thread stack; the innermost one decides (a ``grad()`` run from inside a
hook of a ``backward()`` pass accumulates nothing).  Until an accumulate-grad
hook is registered in the process, ``ACTIVE[0]`` is False and no call pushes
anything (the cost when unused: one list read per call).
"""
import threading

ACTIVE = [False]                # set for good by the first accumulate-grad hook
_TLS = threading.local()


class accumulating:
    """Context of one engine pass: ``targets`` is None (``backward()`` without
    ``inputs``: every leaf that requires grad), a set of leaf ids
    (``backward(inputs=...)``), or False (a pass that accumulates nothing)."""
    __slots__ = ("targets", "create_graph")

    def __init__(self, targets, create_graph=False):
        self.targets = targets
        self.create_graph = bool(create_graph)

    def __enter__(self):
        stack = getattr(_TLS, "stack", None)
        if stack is None:
            stack = _TLS.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _TLS.stack.pop()


def accumulate_now(t, g):
    """Called for leaf ``t`` (gradient ``g`` after its tensor hooks) if it has
    accumulate-grad hooks: accumulate and run them now when the running pass is a
    ``backward()`` that targets ``t``; return whether it did."""
    stack = getattr(_TLS, "stack", None)
    if not stack:
        return False
    spec = stack[-1]
    targets = spec.targets
    if targets is False:
        return False
    if targets is None:
        if not t._requires_grad:
            return False
    elif id(t) not in targets:
        return False
    from tensorplay.autograd import _accumulate_grad, _own_storage
    g = _own_storage(g)
    _accumulate_grad(t, g if spec.create_graph else g.detach(), spec.create_graph)
    return True


def run_pass(targets, roots, root_grads, keys, *, retain_graph, create_graph):
    """``graph.run_backward(roots, root_grads, keys, ...)`` inside an
    ``accumulating(targets, create_graph)`` record (none while ``ACTIVE[0]`` is
    False)."""
    from tensorplay.autograd.graph import run_backward
    if not ACTIVE[0]:
        return run_backward(roots, root_grads, keys, retain_graph=retain_graph,
                            create_graph=create_graph)
    with accumulating(targets, create_graph):
        return run_backward(roots, root_grads, keys, retain_graph=retain_graph,
                            create_graph=create_graph)
