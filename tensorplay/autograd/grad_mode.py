"""Grad mode: whether ops record the graph for reverse mode.

Grad mode is thread-local, as in PyTorch: ``no_grad`` in one thread does not
change another thread.  The same thread-local object carries the forward-mode
state (the active dual level), which ``tensorplay.autograd._forward`` owns.
"""
import functools
import inspect
import threading

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"]


class _State(threading.local):
    def __init__(self):
        self.grad_enabled = True   # record graph nodes for reverse mode
        self.fw_level = None       # id of the active dual level, or None
        self.fw_rule = False       # True while a JVP rule runs (no tangents of tangents)
        self.fw_cycles = None      # weak refs to this level's outputs whose tangent has
        #                            a grad_fn (possible cycles; _forward.py breaks them)
        self.vmap_depth = 0        # nesting depth of active vmap calls (_ops/_batching.py),
        #                            read where code outside registry.apply must know


STATE = _State()


def is_grad_enabled():
    """Return True when ops record the graph for reverse-mode autograd in this thread."""
    return STATE.grad_enabled


def _decorate(make_ctx, func):
    """Run ``func`` inside a fresh context from ``make_ctx()``.

    Generator functions get the mode re-applied around every resume (PyTorch does
    the same), so the caller's mode between ``next()`` calls is left alone.
    """
    if inspect.isgeneratorfunction(func):
        @functools.wraps(func)
        def gen_wrapper(*args, **kwargs):
            gen = func(*args, **kwargs)
            try:
                with make_ctx():
                    value = next(gen)
                while True:
                    try:
                        sent = yield value
                    except GeneratorExit:
                        gen.close()
                        raise
                    except BaseException as exc:    # forward throw() into gen
                        with make_ctx():
                            value = gen.throw(exc)
                    else:
                        with make_ctx():
                            value = gen.send(sent)
            except StopIteration as stop:
                return stop.value
        return gen_wrapper

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with make_ctx():
            return func(*args, **kwargs)
    return wrapper


class _GradModeContext:
    """Base of ``no_grad``/``enable_grad``: a context manager and a decorator, used
    with or without parentheses (``@no_grad`` and ``@no_grad()``)."""
    _mode = True

    def __new__(cls, orig_func=None):
        self = super().__new__(cls)
        if orig_func is None:
            return self
        if not callable(orig_func):
            raise TypeError(f"{cls.__name__}() takes no arguments, or a function to "
                            f"decorate; got {type(orig_func).__name__}")
        return _decorate(cls, orig_func)

    def __init__(self, orig_func=None):
        pass

    def __enter__(self):
        self._prev = STATE.grad_enabled
        STATE.grad_enabled = self._mode

    def __exit__(self, *exc):
        STATE.grad_enabled = self._prev
        return False

    def __call__(self, func):
        return _decorate(self.__class__, func)


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

    def __new__(cls, mode):
        return object.__new__(cls)

    def __init__(self, mode):
        self._prev = STATE.grad_enabled
        self._mode = bool(mode)
        STATE.grad_enabled = self._mode

    def __enter__(self):
        pass

    def __call__(self, func):
        STATE.grad_enabled = self._prev
        mode = self._mode
        return _decorate(lambda: set_grad_enabled(mode), func)
