"""``nn.Parameter`` and ``nn.Buffer``: Tensor subclasses that a Module registers
when they are assigned as attributes (PyTorch's ``torch.nn.parameter``).

A Parameter is a leaf Tensor that shares storage and version counter with the
tensor it was made from (as PyTorch's ``_make_subclass``: ``Parameter(t)`` is a
detached alias of ``t``), with ``requires_grad=True`` by default.  Ops on it
return plain Tensors.
"""
import copy

from tensorplay import _tensor
from tensorplay._tensor import Tensor

__all__ = ["Parameter", "Buffer"]


def _alias(cls, data, requires_grad, op):
    if data is None:
        data = _tensor._wrap(_tensor.np.empty((0,), dtype=_empty_dtype()))
    if not isinstance(data, Tensor):
        raise TypeError(f"{op}(): argument 'data' must be a Tensor, not "
                        f"{type(data).__name__}")
    t = _tensor._new(cls)
    _tensor._fresh_meta(t)
    t._data = data._data
    t._version = data._version              # a detached alias: one version counter
    t._requires_grad = False
    t.requires_grad = requires_grad         # checks bool and floating dtype
    return t


def _empty_dtype():
    from tensorplay import _dtype
    return _dtype.get_default_dtype().numpy


class Parameter(Tensor):
    """A Tensor that is a module parameter (``torch.nn.Parameter``).

    Assigned as a Module attribute, it is registered in the module's
    ``parameters()`` and ``state_dict()``.

    Args:
        data (Tensor, optional): the values; the parameter shares its storage and
            version counter (no copy).  None gives an empty tensor of the default
            float dtype.
        requires_grad (bool): default True.

    Raises:
        TypeError: ``data`` that is not a Tensor.
        RuntimeError: ``requires_grad=True`` on an integer or bool tensor (only
            floating tensors can require gradients), or a non-bool flag.
    """
    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        return _alias(cls, data, requires_grad, "Parameter")

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self._requires_grad)
        if self._grad is not None:
            result._grad = copy.deepcopy(self._grad, memo)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach(), self._requires_grad, self._grad))


def _rebuild_parameter(data, requires_grad, grad):
    p = Parameter(data, requires_grad)
    p._grad = grad
    return p


class Buffer(Tensor):
    """A Tensor that a Module registers as a buffer when assigned as an attribute
    (``torch.nn.Buffer``): ``self.x = nn.Buffer(t)`` is
    ``self.register_buffer('x', t, persistent=True)``.

    The module stores a plain Tensor sharing ``data``'s storage (as PyTorch
    unwraps the Buffer on registration).

    Args:
        data (Tensor, optional): the values (None: an empty float tensor).
        persistent (bool): whether it goes into ``state_dict()`` (default True).
    """
    # (no __slots__: a Buffer has a __dict__ holding ``persistent``)

    def __new__(cls, data=None, *, persistent=True):
        t = _alias(cls, data, False, "Buffer")
        if data is not None:
            t._requires_grad = data._requires_grad and data._grad_fn is None
        t.persistent = bool(persistent)
        return t

    def __init__(self, data=None, *, persistent=True):
        pass

    def _unwrap(self):
        t = Tensor._wrap(self._data)
        t._version = self._version
        t._requires_grad = self._requires_grad
        return t
