"""Tensor methods that make tensors or move them, as PyTorch code calls them:
``new_zeros/new_ones/new_full/new_empty/new_tensor``, ``type_as``, ``where``
(its argument order differs from ``tensorplay.where``), ``cpu``,
``cuda``, ``is_cuda``/``is_cpu``, and DLPack (``__dlpack__``,
``__dlpack_device__``, ``tensorplay.from_dlpack``).

They are bound to ``Tensor`` here (``_bind``) rather than written in its class
body because none of them is on the hot path (tensorplay/_tensor.py is compiled
and kept to what ops need).
"""
import numpy as np

from tensorplay import _creation, _device, _dtype
from tensorplay._tensor import Tensor

__all__ = ["from_dlpack"]


def _dtype_of(self, dtype, op):
    return self.dtype if dtype is None else _dtype.as_dtype(dtype, op)


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    """Zeros of shape ``size`` with this tensor's dtype (unless ``dtype`` is given).

    Raises: as ``tensorplay.zeros``."""
    return _creation.zeros(*size, dtype=_dtype_of(self, dtype, "new_zeros"), device=device,
                           requires_grad=requires_grad)


def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    """Ones of shape ``size`` with this tensor's dtype.  Raises: as ``ones``."""
    return _creation.ones(*size, dtype=_dtype_of(self, dtype, "new_ones"), device=device,
                          requires_grad=requires_grad)


def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor of shape ``size`` with this dtype.  Raises: as ``empty``."""
    return _creation.empty(*size, dtype=_dtype_of(self, dtype, "new_empty"), device=device,
                           requires_grad=requires_grad)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """``fill_value`` in shape ``size`` with this dtype.  Raises: as ``full``."""
    return _creation.full(size, fill_value, dtype=_dtype_of(self, dtype, "new_full"),
                          device=device, requires_grad=requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    """``tensor(data)`` with this tensor's dtype (unless ``dtype`` is given); always a
    copy, with no history (PyTorch's ``new_tensor``).  Raises: as ``tensor``."""
    if isinstance(data, Tensor):
        data = data.detach()
    return _creation.tensor(data, dtype=_dtype_of(self, dtype, "new_tensor"), device=device,
                            requires_grad=requires_grad)


def type_as(self, other):
    """This tensor cast to ``other``'s dtype (``self.to(other.dtype)``; self when the
    dtypes match).  Raises TypeError when ``other`` is not a Tensor."""
    if not isinstance(other, Tensor):
        raise TypeError(f"type_as(): argument 'other' must be Tensor, not "
                        f"{type(other).__name__}")
    return self.to(other.dtype)


def where(self, condition, other):
    """``tensorplay.where(condition, self, other)`` (PyTorch's ``Tensor.where``: self
    where ``condition`` holds, else ``other``).  Raises: as ``tensorplay.where``."""
    from tensorplay import _ops
    return _ops.where(condition, self, other)


def cpu(self, memory_format=None):
    """This tensor (it is on the CPU already), as PyTorch returns self."""
    return self


def cuda(self, device=None, non_blocking=False, memory_format=None):
    """Always raises: there is no CUDA device here (``tensorplay.cuda.is_available()``
    is False)."""
    raise RuntimeError("cuda(): tensorplay runs on the CPU only (tensorplay.cuda."
                       "is_available() is False); keep the tensor on 'cpu'")


def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """The DLPack capsule of this tensor's storage (zero-copy; the Python array API
    protocol), so ``np.from_dlpack(t)`` and ``torch.from_dlpack(t)`` share memory.

    Raises:
        RuntimeError: the tensor requires grad (detach() it first, as PyTorch), or a
            device other than the CPU is asked for.
        BufferError: storage DLPack cannot describe (a read-only array, unless
            the consumer accepts that or asks for ``copy=True``).
    """
    if self._requires_grad:
        raise RuntimeError("Can't export tensors that require gradient, use "
                           "tensor.detach()")
    if dl_device is not None and tuple(dl_device) != (1, 0):
        raise RuntimeError(f"__dlpack__(): tensorplay tensors are on the CPU (1, 0); "
                           f"got dl_device={dl_device!r}")
    kw = {}
    if max_version is not None:
        kw["max_version"] = max_version
    if copy is not None:
        kw["copy"] = copy
    return self._data.__dlpack__(stream=stream, **kw)


def __dlpack_device__(self):
    """``(1, 0)``: DLPack's kDLCPU, device 0."""
    return (1, 0)


def from_dlpack(ext_tensor):
    """A tensor sharing memory with ``ext_tensor``, any object with ``__dlpack__``
    (a torch tensor, a numpy array, ...), or a DLPack capsule, zero-copy.

    The result has no history; numeric dtypes outside tensorplay's set raise as
    ``from_numpy`` does.

    Raises:
        TypeError: an object that does not speak DLPack, or a dtype tensorplay has
            no type for.  RuntimeError: memory on a device other than the CPU.
    """
    if isinstance(ext_tensor, Tensor):
        return ext_tensor.detach()
    if hasattr(ext_tensor, "__dlpack_device__"):
        dev = tuple(ext_tensor.__dlpack_device__())
        if dev[0] != 1:
            raise RuntimeError(f"from_dlpack(): memory on DLPack device {dev}; tensorplay "
                               f"takes CPU memory only (device type 1)")
    if not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(f"from_dlpack(): expected an object with __dlpack__, got "
                        f"{type(ext_tensor).__name__}")
    try:
        arr = np.from_dlpack(ext_tensor)
    except (TypeError, BufferError, RuntimeError) as e:
        raise TypeError(f"from_dlpack(): cannot import {type(ext_tensor).__name__}: {e}") \
            from None
    return _creation.from_numpy(arr)


def _missing_attribute(self, name):
    """Called only when normal lookup fails: say when PyTorch has the name."""
    from tensorplay._torch_names import TENSOR
    if name in TENSOR:
        raise AttributeError(f"'Tensor' object has no attribute {name!r}: PyTorch has "
                             f"Tensor.{name}, and tensorplay does not implement it (yet)")
    raise AttributeError(f"'Tensor' object has no attribute {name!r}")


def _bind():
    for fn in (new_zeros, new_ones, new_empty, new_full, new_tensor, type_as, where, cpu, cuda,
               __dlpack__, __dlpack_device__):
        setattr(Tensor, fn.__name__, fn)
    Tensor.is_cuda = property(lambda self: False, doc="Always False: tensors live on the CPU.")
    Tensor.is_cpu = property(lambda self: True, doc="Always True.")
    Tensor.__getattr__ = _missing_attribute


_bind()
