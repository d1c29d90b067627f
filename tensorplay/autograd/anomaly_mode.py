"""Anomaly detection for the reverse-mode engine (PyTorch's
``torch.autograd.anomaly_mode``).

While anomaly mode is on:

* every node recorded keeps the traceback of the forward call that created it
  (``grad_fn.metadata["traceback_"]``, a list of formatted frames) -- a cost paid
  only while the mode is on;
* with ``check_nan`` (the default), a backward whose VJP rule returns a NaN or an
  infinity raises ``RuntimeError("Function 'XBackward0' returned nan values in
  its 0th output.")`` followed by that traceback (PyTorch checks NaN only and
  prints the traceback as a warning; see docs/DECISIONS.md);
* any other error raised by a node's VJP is preceded by a ``UserWarning``
  naming the node and showing the traceback.

The mode is process-wide, as in PyTorch (not per thread).
"""
import functools
import warnings

from tensorplay.autograd import graph as _graph

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]

_WARNING = ("Anomaly Detection has been enabled. This mode will increase the runtime "
            "and should only be enabled for debugging.")


def is_anomaly_enabled():
    """True while anomaly detection is on."""
    return _graph._ANOMALY[0]


def is_anomaly_check_nan_enabled():
    """True when anomaly detection checks backward results for NaN/inf (meaningful
    only while it is on; True by default, as PyTorch)."""
    return _graph._ANOMALY[1]


class detect_anomaly:
    """Context manager (and decorator) that turns anomaly detection on.

    Args:
        check_nan (bool): also raise when a backward step returns NaN or inf
            values. Default True.

    On entry it warns (``UserWarning``) that the mode slows the program down, as
    PyTorch does; on exit the previous setting comes back.  Used as a decorator
    (``@detect_anomaly()``), the mode is on for each call of the function
    (tensorplay's addition: PyTorch 2.13's class is a context manager only).

    Example:
        >>> x = tensorplay.tensor([0.0], requires_grad=True)
        >>> with tensorplay.autograd.detect_anomaly():
        ...     y = (x.log() * 0).sum()
        ...     y.backward()      # RuntimeError: Function 'LogBackward0' returned nan ...
    """

    def __init__(self, check_nan=True):
        self.check_nan = bool(check_nan)
        self._prev = []

    def __enter__(self):
        warnings.warn(_WARNING, UserWarning, stacklevel=2)
        self._prev.append(tuple(_graph._ANOMALY))
        _graph.set_anomaly(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        _graph.set_anomaly(*self._prev.pop())

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"detect_anomaly(): can decorate a callable only, got "
                            f"{type(func).__name__}")

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return func(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """Turn anomaly detection on or off: immediately when called, and, used as a
    context manager, back to the previous setting on exit (PyTorch's class).

    Args:
        mode (bool): on (True) or off (False).
        check_nan (bool): also raise when a backward step returns NaN or inf
            values. Default True.

    Raises:
        TypeError: ``mode`` or ``check_nan`` is not a bool.
    """

    def __init__(self, mode, check_nan=True):
        for name, v in (("mode", mode), ("check_nan", check_nan)):
            if not isinstance(v, bool):
                raise TypeError(f"set_detect_anomaly(): {name} must be a bool, got "
                                f"{type(v).__name__}")
        self.prev = tuple(_graph._ANOMALY)
        _graph.set_anomaly(mode, check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _graph.set_anomaly(*self.prev)
