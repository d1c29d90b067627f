"""Grad modes: whether ops record the graph for reverse mode, and inference mode.

Grad mode is thread-local, as in PyTorch: ``no_grad`` in one thread does not
change another thread.  The same thread-local object carries the forward-mode
state (the active dual level), which ``tensorplay.autograd._forward`` owns, and
inference mode.

Inference mode (``inference_mode``) costs the per-op hot path nothing: while it is
on, ``STATE.fw_level`` -- the one field ``registry.apply`` reads for every op --
holds the sentinel ``INFERENCE`` instead of a dual level, and the real dual level
(if any) waits in ``STATE.fw_outer``.  ``apply`` then returns the bare result: no
graph node (whatever the grad mode), no tangent (inference mode switches forward
AD off, as PyTorch's does), and ``_version = None`` -- an *inference tensor*,
which has no version counter, cannot be saved for backward and refuses in-place
updates outside inference mode (docs/DECISIONS.md, "gradcheck, grad modes,
forward AD").
"""
import functools
import inspect
import threading
import warnings

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
           "inference_mode", "is_inference_mode_enabled", "is_inference"]


class _Inference:
    """The ``STATE.fw_level`` sentinel of inference mode (see the module docstring)."""
    __slots__ = ()

    def __repr__(self):
        return "<inference mode>"


INFERENCE = _Inference()


class _State(threading.local):
    def __init__(self):
        self.grad_enabled = True   # record graph nodes for reverse mode
        self.fw_level = None       # id of the active dual level, None, or INFERENCE
        self.fw_outer = None       # the dual level id while fw_level is INFERENCE
        self.fw_rule = False       # True while a JVP rule runs (no tangents of tangents)
        self.fw_cycles = None      # weak refs to this level's outputs whose tangent has
        #                            a grad_fn (possible cycles; _forward.py breaks them)
        self.vmap_depth = 0        # nesting depth of active vmap calls (_ops/_batching.py),
        #                            read where code outside registry.apply must know


STATE = _State()


def is_grad_enabled():
    """Return True when grad mode is on in this thread (``torch.is_grad_enabled``).

    Inside ``inference_mode`` it is False unless ``enable_grad`` or
    ``set_grad_enabled(True)`` turned it back on -- and even then nothing is
    recorded there, as in PyTorch.
    """
    return STATE.grad_enabled


def is_inference_mode_enabled():
    """Return True inside ``inference_mode()`` (``torch.is_inference_mode_enabled``)."""
    return STATE.fw_level is INFERENCE


def is_inference(input):
    """Return True when ``input`` is an inference tensor (``torch.is_inference``):
    made by an op inside ``inference_mode``; see ``Tensor.is_inference``."""
    return input.is_inference()


# ------------------------------------------------------------------ decorators
def _wrap_generator(make_ctx, func):
    """A generator function whose body runs under a fresh ``make_ctx()`` each time
    it is resumed -- ``next``/``send``/``throw`` and ``close`` (the generator handles
    ``GeneratorExit`` in the mode too) -- while the caller's mode is left alone
    between resumptions (PyTorch's ``_wrap_generator``)."""
    @functools.wraps(func)
    def generator_context(*args, **kwargs):
        gen = func(*args, **kwargs)
        try:
            with make_ctx():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with make_ctx():
                        gen.close()
                    raise
                except BaseException as exc:    # thrown at us: forward it into gen
                    with make_ctx():
                        response = gen.throw(exc)
                else:
                    with make_ctx():
                        response = gen.send(request)
        except StopIteration as e:
            return e.value
    return generator_context


def _decorate(make_ctx, func):
    """``func`` run inside a fresh context from ``make_ctx()`` on every call.

    A generator function gets the mode around each resumption (``_wrap_generator``).
    A class is PyTorch's deprecated case: a FutureWarning, and the name becomes a
    function that constructs instances inside the mode (only ``__init__`` runs in
    it; the methods do not).

    Raises:
        TypeError: ``func`` is not callable.
    """
    if inspect.isclass(func):
        warnings.warn(
            "Decorating classes is deprecated and will be disabled in future versions. "
            "You should only decorate functions or methods. To preserve the current "
            "behavior of class decoration, you can directly decorate the `__init__` "
            "method and nothing else.", FutureWarning, stacklevel=3)
        cls = func

        def func(*args, **kwargs):
            return cls(*args, **kwargs)
    elif not callable(func):
        raise TypeError(f"a grad-mode decorator takes a function, a generator function "
                        f"or a class; got {type(func).__name__}")
    if inspect.isgeneratorfunction(func):
        return _wrap_generator(make_ctx, func)

    @functools.wraps(func)
    def decorate_context(*args, **kwargs):
        with make_ctx():
            return func(*args, **kwargs)
    return decorate_context


class _DecoratorContextManager:
    """A context manager that is also a decorator (``@mode()``); ``clone`` makes
    the fresh context each decorated call enters."""

    def __call__(self, func):
        return _decorate(self.clone, func)

    def clone(self):
        return self.__class__()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """... usable without parentheses too (``@no_grad``)."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):
    """Context manager and decorator that disables graph recording.

    Results computed inside have ``requires_grad=False`` and no ``grad_fn``, even
    when their inputs require grad.  Forward-mode tangents still propagate
    (PyTorch behaves the same).  Usable as ``with no_grad():``, ``@no_grad()`` and
    ``@no_grad`` on functions, generator functions (the mode is re-applied at every
    resumption, ``close()`` included) and -- deprecated, as in PyTorch -- classes.

    Example:
        >>> x = tensorplay.ones(2, requires_grad=True)
        >>> with tensorplay.no_grad():
        ...     y = x * 2
        >>> y.requires_grad
        False
    """

    def __enter__(self):
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = False

    def __exit__(self, *exc):
        STATE.grad_enabled = self.prev
        return False


class enable_grad(_NoParamDecoratorContextManager):
    """Context manager and decorator that enables graph recording (inside
    ``no_grad``); used as ``no_grad`` is.  Inside ``inference_mode`` it turns grad
    mode on but nothing is recorded (PyTorch's rule)."""

    def __enter__(self):
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = True

    def __exit__(self, *exc):
        STATE.grad_enabled = self.prev
        return False


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode on or off: as a function call, a context manager or a decorator.

    ``set_grad_enabled(False)`` switches the mode at once (the call form); as a
    context manager the previous mode comes back on exit; as a decorator
    (``@set_grad_enabled(False)``) the mode at decoration time is restored and each
    call of the function runs in ``mode``.

    Args:
        mode (bool): True to record the graph, False not to.
    """

    def __init__(self, mode):
        self.prev = STATE.grad_enabled
        self.mode = bool(mode)
        STATE.grad_enabled = self.mode

    def __call__(self, func):
        STATE.grad_enabled = self.prev
        return super().__call__(func)

    def __enter__(self):
        STATE.grad_enabled = self.mode

    def __exit__(self, *exc):
        STATE.grad_enabled = self.prev
        return False

    def clone(self):
        return self.__class__(self.mode)

    def __repr__(self):
        return f"tensorplay.autograd.grad_mode.set_grad_enabled(mode={self.mode})"


class inference_mode(_DecoratorContextManager):
    """Context manager and decorator for inference mode (``torch.inference_mode``).

    Inside ``inference_mode()`` (or ``inference_mode(True)``): grad mode is off, no
    graph is recorded even under ``enable_grad``, forward AD is off (no tangents
    propagate), and every tensor an op or a creation function makes is an
    *inference tensor* (``Tensor.is_inference()``): no version counter, so views
    and in-place ops on it cost no tracking.  Normal tensors keep theirs (an
    in-place op on one inside still bumps it), and a view of a normal tensor is a
    normal tensor.

    Outside inference mode an inference tensor can be read by any op, but:

    * an op whose backward would save it raises ``RuntimeError: Inference tensors
      cannot be saved for backward...`` (PyTorch's message);
    * an in-place op on it raises ``RuntimeError: Inplace update to inference
      tensor outside InferenceMode is not allowed...``;
    * ``requires_grad_()`` on it raises.

    ``clone()`` it to get a normal tensor.  ``inference_mode(False)`` inside an
    inference block switches it off again (grad mode on, as PyTorch's).

    Usable as ``with inference_mode():``, ``@inference_mode``, ``@inference_mode()``
    and ``@inference_mode(False)``, on functions, generator functions and classes
    (as ``no_grad``).  Thread-local.

    Args:
        mode (bool): True to enter inference mode, False to leave it (inside one).

    Example:
        >>> x = tensorplay.ones(3, requires_grad=True)
        >>> with tensorplay.inference_mode():
        ...     y = x * x
        >>> y.requires_grad, y.is_inference()
        (False, True)
    """

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        if not callable(mode):
            raise TypeError(f"inference_mode(): mode must be a bool (or a function to "
                            f"decorate), got {type(mode).__name__}")
        return cls()(mode)          # @inference_mode without parentheses

    def __init__(self, mode=True):
        self.mode = mode

    def __enter__(self):
        s = STATE
        was = s.fw_level is INFERENCE
        self._prev = (s.grad_enabled, was)
        real = s.fw_outer if was else s.fw_level
        if self.mode:
            s.fw_outer = real
            s.fw_level = INFERENCE
            s.grad_enabled = False
        else:
            s.fw_level = real
            s.fw_outer = None
            s.grad_enabled = True

    def __exit__(self, *exc):
        s = STATE
        grad, was = self._prev
        # the dual level active now (one may have been entered or exited inside)
        real = s.fw_outer if s.fw_level is INFERENCE else s.fw_level
        if was:
            s.fw_outer = real
            s.fw_level = INFERENCE
        else:
            s.fw_level = real
            s.fw_outer = None
        s.grad_enabled = grad
        return False

    def clone(self):
        return self.__class__(self.mode)

    def __repr__(self):
        return f"tensorplay.inference_mode(mode={self.mode})"
