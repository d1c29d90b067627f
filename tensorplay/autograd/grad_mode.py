"""Grad mode: whether ops record the graph for reverse mode.

Grad mode is thread-local, as in PyTorch: ``no_grad`` in one thread does not
change another thread.  The same thread-local object carries the forward-mode
state (the active dual level), which ``tensorplay.autograd._forward`` owns.
"""
import functools
import threading

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"]


class _State(threading.local):
    def __init__(self):
        self.grad_enabled = True   # record graph nodes for reverse mode
        self.fw_level = None       # id of the active dual level, or None
        self.fw_rule = False       # True while a JVP rule runs (no tangents of tangents)


STATE = _State()


def is_grad_enabled():
    """Return True when ops record the graph for reverse-mode autograd in this thread."""
    return STATE.grad_enabled


class _GradModeContext:
    """Base of the grad-mode context managers; also usable as a decorator."""
    _mode = True

    def __enter__(self):
        self._prev = STATE.grad_enabled
        STATE.grad_enabled = self._mode

    def __exit__(self, *exc):
        STATE.grad_enabled = self._prev
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return func(*args, **kwargs)
        return wrapper


class no_grad(_GradModeContext):
    """Context manager and decorator that disables graph recording.

    Results computed inside have ``requires_grad=False`` and no ``grad_fn``, even
    when their inputs require grad.  Forward-mode tangents still propagate
    (PyTorch behaves the same).

    Example:
        >>> x = tensorplay.ones(2, requires_grad=True)
        >>> with tensorplay.no_grad():
        ...     y = x * 2
        >>> y.requires_grad
        False
    """
    _mode = False


class enable_grad(_GradModeContext):
    """Context manager and decorator that enables graph recording (inside ``no_grad``)."""
    _mode = True


class set_grad_enabled(_GradModeContext):
    """Set grad mode on or off: as a function call, a context manager or a decorator.

    Args:
        mode (bool): True to record the graph, False not to.
    """

    def __init__(self, mode):
        self._prev = STATE.grad_enabled
        self._mode = bool(mode)
        STATE.grad_enabled = self._mode

    def __enter__(self):
        pass

    def __call__(self, func):
        STATE.grad_enabled = self._prev
        mode = self._mode

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return func(*args, **kwargs)
        return wrapper
