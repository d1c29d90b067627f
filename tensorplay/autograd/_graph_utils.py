"""``torch.autograd.graph``'s helpers that sit on top of the hook machinery:
``register_multi_grad_hook`` and ``disable_saved_tensors_hooks``.

A multi-grad hook needs to know where one backward pass ends.  ``run_backward``
(graph.py) keeps a stack of ``_Pass`` records while any multi-grad hook exists
(``_MULTI_HOOKS`` non-empty; otherwise it costs one truthiness check), and this
module's per-tensor hooks leave their gradients on the innermost record; when the
pass returns, the record calls each "all" hook once with what it collected.
"""
import functools
import weakref

from tensorplay.autograd import _hooks
from tensorplay.autograd import graph as _g

__all__ = ["register_multi_grad_hook", "disable_saved_tensors_hooks"]


class _Pass:
    """One running backward pass: the "all"-mode hooks that saw a gradient in it,
    each with its list of gradients (None where none arrived)."""
    __slots__ = ("collected", "__weakref__")

    def __init__(self):
        self.collected = {}

    def finish(self):
        for state, grads in self.collected.values():
            state.fn(tuple(grads))


def run_with_pass(run, roots, root_grads, targets, retain_graph, create_graph):
    """``run(...)`` with a ``_Pass`` on the stack; "all"-mode hooks fire after it."""
    record = _Pass()
    _g._PASS_STACK.append(record)
    try:
        results = run(roots, root_grads, targets, retain_graph, create_graph)
    finally:
        _g._PASS_STACK.pop()
    record.finish()
    return results


class _MultiGradHook:
    __slots__ = ("fn", "mode", "n", "fired_in", "__weakref__")

    def __init__(self, fn, mode, n):
        self.fn, self.mode, self.n = fn, mode, n
        self.fired_in = None        # "any": the pass it last fired in (a weak ref)

    def saw(self, i, g):
        record = _g._PASS_STACK[-1] if _g._PASS_STACK else None
        if record is None:          # not inside run_backward: nothing to group by
            return
        if self.mode == "any":
            last = self.fired_in() if self.fired_in is not None else None
            if last is not record:
                self.fired_in = weakref.ref(record)
                self.fn(g)
            return
        entry = record.collected.get(id(self))
        if entry is None:
            entry = record.collected[id(self)] = (self, [None] * self.n)
        entry[1][i] = g


class _MultiHandle:
    """Removes every per-tensor hook of one ``register_multi_grad_hook`` call."""

    def __init__(self, handles, state):
        self._handles = handles
        self._state = state

    def remove(self):
        """Remove the hook (idempotent)."""
        for h in self._handles:
            h.remove()
        self._handles = ()
        if self._state is not None:
            _g._MULTI_HOOKS.pop(id(self._state), None)
            self._state = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Call ``fn`` once per backward pass with the gradients of several tensors
    (``torch.autograd.graph.register_multi_grad_hook``).

    Args:
        tensors (sequence of Tensor): each must require grad (leaves or not).
        fn (callable): with ``mode="all"``, ``fn(grads)`` with a tuple holding, in
            the order of ``tensors``, the gradient each received in the pass, or
            ``None`` for those the pass did not reach; called once per pass in
            which at least one of them got a gradient, when the pass has finished
            (PyTorch calls it as soon as the last one is computed: the values are
            the same, only its order relative to other hooks of the pass can
            differ). With ``mode="any"``, ``fn(grad)`` with the first gradient any
            of them receives in a pass, once per pass. ``fn`` returns None: it
            observes gradients, it does not replace them (use
            ``Tensor.register_hook`` for that).
        mode (str): ``"all"`` or ``"any"``.

    Returns:
        A handle whose ``remove()`` removes the hook (also a context manager).

    Raises:
        ValueError: ``mode`` is not "all" or "any".
        TypeError: ``fn`` not callable, or an entry of ``tensors`` not a Tensor.
        RuntimeError: a tensor that does not require grad (as ``register_hook``).
    """
    from tensorplay._tensor import Tensor
    if mode not in ("all", "any"):
        raise ValueError(f"register_multi_grad_hook(): expects mode to be one of "
                         f"('all', 'any') but got {mode!r}")
    if not callable(fn):
        raise TypeError(f"register_multi_grad_hook(): fn must be callable, got "
                        f"{type(fn).__name__}")
    tensors = tuple(tensors)
    for k, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"register_multi_grad_hook(): tensors[{k}] must be a Tensor, "
                            f"got {type(t).__name__}")
    state = _MultiGradHook(fn, mode, len(tensors))
    handles = []
    try:
        for i, t in enumerate(tensors):
            handles.append(_hooks.register_tensor_hook(
                t, functools.partial(_observe, weakref.ref(state), i)))
    except Exception:
        for h in handles:
            h.remove()
        raise
    _g._MULTI_HOOKS[id(state)] = state      # keeps it alive; run_backward sees it
    return _MultiHandle(handles, state)


def _observe(state_ref, i, g):
    state = state_ref()
    if state is not None:
        state.saw(i, g)


class disable_saved_tensors_hooks:
    """Context manager (and decorator) that forbids saved-tensor hooks inside it
    (``torch.autograd.graph.disable_saved_tensors_hooks``): entering
    ``saved_tensors_hooks`` there raises ``RuntimeError(error_message)``, and so
    does entering this context while saved-tensor hooks are active. Per thread,
    as the hooks themselves; it nests, and leaving restores what was in force.

    Args:
        error_message (str): the message of the RuntimeError raised.
    """

    def __init__(self, error_message):
        self.error_message = str(error_message)
        self._prev = []

    def __enter__(self):
        if _hooks._current_saved_hooks() is not None:
            raise RuntimeError(self.error_message)
        tls = _hooks._saved_hooks_tls()
        self._prev.append(getattr(tls, "disabled", None))
        tls.disabled = self.error_message
        return self

    def __exit__(self, *exc):
        _hooks._saved_hooks_tls().disabled = self._prev.pop()

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with disable_saved_tensors_hooks(self.error_message):
                return func(*args, **kwargs)
        return wrapper
