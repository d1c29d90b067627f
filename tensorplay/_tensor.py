"""Tensor: a numpy ndarray plus autograd metadata.

Storage is a numpy ``ndarray`` (``Tensor._data``).  Views -- ``reshape`` where
possible, ``view``, ``permute``/``transpose``, ``expand``, basic indexing, ``detach``
-- share the array memory and a version counter (a one-element list) with their
base (DESIGN.md, fixed point 1).  In-place ops bump the counter, and the backward
of an op that saved a since-modified tensor raises.
"""
import builtins
import math

import numpy as np

from tensorplay import _device, _dtype
from tensorplay._dtype import from_numpy_dtype
from tensorplay.autograd.grad_mode import INFERENCE, STATE

__all__ = ["Tensor", "Size"]



class Size(tuple):
    """The shape of a Tensor: a tuple of ints (PyTorch's ``torch.Size``)."""
    __slots__ = ()

    def numel(self):
        """Product of the sizes (1 for an empty shape)."""
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self):
        return f"tensorplay.Size({list(self)})"


class _TensorBase:
    """The storage and autograd metadata of a Tensor, and nothing else.

    A base class of its own so that, when this module is compiled (setup.py's
    hot-path block, ``_tensor.pxd``), it becomes an extension type whose fields are
    C struct slots -- a Tensor is made for every op result -- while ``Tensor``
    stays an ordinary class that ``_bind_methods`` can add the op methods to.
    """
    __slots__ = ("_data", "_requires_grad", "_grad", "_grad_fn", "_version", "_tangent",
                 "_tangent_level", "_nograd_view", "_base", "_view_chain", "_views",
                 "_hooks", "_output_nr", "__weakref__")
    # _output_nr: which output of its grad_fn this is, set only when the grad_fn is
    # a MultiNode (autograd/graph.py), so op results (_wrap) pay nothing for it


_new = _TensorBase.__new__
# the storage type of batched tensors and its module (tensorplay/_ops/_batching.py
# binds both on import; methods that copy storage must unwrap it)
_BatchedArray = _batching = None


class Tensor(_TensorBase):
    """A multi-dimensional array of one dtype, with optional autograd history.

    Create tensors with ``tensorplay.tensor``, ``zeros``, ``randn`` and friends.
    ``Tensor(...)`` is PyTorch's legacy constructor:

    * ``Tensor()`` -- an empty 1-d tensor of the default float dtype;
    * ``Tensor(2, 3)`` or ``Tensor(Size([2, 3]))`` -- a tensor of that shape
      (PyTorch leaves it uninitialised; tensorplay fills it with zeros);
    * ``Tensor(data)`` -- ``tensor(data)`` in the default float dtype (a list of
      ints gives floats, as in PyTorch); a Tensor keeps its dtype;
    * keywords ``dtype`` and ``requires_grad`` (tensorplay's additions) apply to all.

    ``Tensor.__new__(Tensor)`` alone (copy, pickle) gives a valid empty tensor.

    Raises:
        TypeError: a single number that is not a size (``Tensor(2.5)``), or sizes
            mixed with other types.  RuntimeError: a negative size.

    Attributes:
        grad (Tensor or None): gradient accumulated by ``backward()`` (leaves).
        grad_fn (Node or None): the node that made this tensor; None for leaves.
    """
    __slots__ = ()
    # ``ndarray op Tensor`` defers to the Tensor's reflected operator.
    __array_ufunc__ = None

    def __new__(cls, *args, dtype=None, requires_grad=False):
        # The legacy constructor lives here, as in PyTorch (``__init__`` does
        # nothing, so ``t.__init__(data)`` cannot swap a live tensor's storage).
        # Every field is set, so a bare ``Tensor.__new__(Tensor)`` (copy, pickle)
        # is a usable empty tensor; op results skip this (``_wrap`` calls the base's
        # ``__new__``).
        t = _new(cls)
        _fresh_meta(t)
        t._data, t._requires_grad = _legacy_data(args, dtype, requires_grad)
        return t

    def __init__(self, *args, dtype=None, requires_grad=False):
        pass

    @staticmethod
    def _wrap(arr):
        """Wrap an ndarray of a supported dtype without copying (internal)."""
        return _wrap(arr)

    # ------------------------------------------------------------ attributes
    @property
    def shape(self):
        """The sizes of the dimensions, a ``tensorplay.Size``."""
        return Size(self._data.shape)

    @property
    def dtype(self):
        """The ``tensorplay.dtype`` of the elements."""
        return from_numpy_dtype(self._data.dtype)

    @property
    def ndim(self):
        """Number of dimensions (same as ``dim()``)."""
        return self._data.ndim

    @property
    def device(self):
        """Always ``tensorplay.device("cpu")``."""
        return _device.CPU

    @property
    def grad_fn(self):
        """The graph node that made this tensor (None for leaves).  Read-only.

        The library records it in the ``_grad_fn`` slot; assigning would make a
        leaf of a computed tensor or splice another graph in, so, as in PyTorch,
        it cannot be set.

        Raises:
            AttributeError: on assignment or deletion.
        """
        return self._grad_fn

    @grad_fn.setter
    def grad_fn(self, value):
        raise AttributeError(f"attribute 'grad_fn' of '{type(self).__name__}' objects is "
                             f"not writable (the graph records it; use detach() for a "
                             f"tensor without history)")

    @grad_fn.deleter
    def grad_fn(self):
        raise AttributeError(f"attribute 'grad_fn' of '{type(self).__name__}' objects is "
                             f"not writable")

    @property
    def is_leaf(self):
        """True when the tensor was not made by a recorded op (``grad_fn is None``)."""
        return self._grad_fn is None

    @property
    def grad(self):
        """The gradient accumulated by ``backward()`` (None until then).

        ``backward()`` adds into it in place (so references to it stay current);
        with ``create_graph=True`` it is replaced by a differentiable sum instead.
        Assigning checks shape and dtype, as PyTorch does.

        Raises:
            TypeError: assigning something other than a Tensor or None.
            RuntimeError: assigning a tensor of another shape or dtype.
        """
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got "
                                f"grad of type {type(value).__name__}")
            if value is self:
                raise RuntimeError("can't assign Variable as its own grad (the next "
                                   "backward would add into the tensor itself)")
            if value._data.shape != self._data.shape:
                raise RuntimeError(f"assigned grad has data of a different size: "
                                   f"{list(value._data.shape)} vs the tensor's "
                                   f"{list(self._data.shape)}")
            if value._data.dtype != self._data.dtype:
                raise RuntimeError(f"assigned grad has data of a different type: "
                                   f"{value.dtype} vs the tensor's {self.dtype}")
        self._grad = value

    @property
    def requires_grad(self):
        """Whether gradients are computed for this tensor.

        Raises:
            RuntimeError: on setting a value that is not a bool (PyTorch's type),
                True for a non-floating tensor, or changing it on a non-leaf tensor.
        """
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        if not isinstance(value, (builtins.bool, np.bool_)):
            raise RuntimeError(f"requires_grad must be a bool, got {type(value).__name__}")
        value = builtins.bool(value)
        if value and self._version is None and STATE.fw_level is not INFERENCE:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                               "InferenceMode is not allowed (clone() it first).")
        if self._grad_fn is not None:
            if value:
                return
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want "
                "to use a computed variable in a subgraph that doesn't require "
                "differentiation use var_no_grad = var.detach().")
        if value and self._data.dtype.kind != "f":
            raise RuntimeError(
                f"only Tensors of floating point dtype can require gradients, got {self.dtype}")
        self._requires_grad = value

    def is_inference(self):
        """True for an inference tensor: made inside ``tensorplay.inference_mode()``
        (no version counter; see ``inference_mode`` for what it cannot do)."""
        return self._version is None

    def requires_grad_(self, requires_grad=True):
        """Set ``requires_grad`` in place and return self."""
        self.requires_grad = requires_grad
        return self

    @property
    def data(self):
        """A detached tensor that shares storage with this one (PyTorch's ``.data``).

        Unlike ``detach()``, in-place changes through it are not tracked: it has its
        own version counter, so saved tensors modified this way do not raise.

        Assigning ``x.data = other`` makes ``x`` use ``other``'s storage (shape and
        dtype included, as in PyTorch; a stale ``.grad`` of the old shape is then
        refused by the next ``backward``).

        Raises:
            TypeError: assigning something other than a Tensor.
            RuntimeError: assigning a non-floating tensor to one that requires grad.
        """
        d = self._data
        if type(d) is _BatchedArray:            # under vmap: detach the physical value
            return _batching.make_batched(d._bt_phys.data, d._bt_level)
        return Tensor._wrap(d)

    @data.setter
    def data(self, other):
        if not isinstance(other, Tensor):
            raise TypeError(f"Tensor.data: expected a Tensor to be assigned, but got "
                            f"{type(other).__name__} (Variable data has to be a tensor)")
        if self._requires_grad and other._data.dtype.kind != "f":
            raise RuntimeError(f"Tensor.data: data set to a tensor that requires gradients "
                               f"must be floating point or complex dtype, got {other.dtype}")
        self._data = other._data

    @property
    def T(self):
        """All dimensions reversed (``permute(ndim-1, ..., 0)``)."""
        return _F.permute(self, tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self):
        """The last two dimensions swapped (a batch of matrices transposed)."""
        if self.ndim < 2:
            raise RuntimeError(f"tensor.mT is only supported on matrices or batches of "
                               f"matrices. Got {self.ndim}-D tensor.")
        return _F.transpose(self, -2, -1)

    def numel(self):
        """Number of elements."""
        return self._data.size

    def dim(self):
        """Number of dimensions."""
        return self._data.ndim

    def size(self, dim=None):
        """The shape (a ``Size``), or the size of dimension ``dim`` (an int).

        Raises:
            IndexError: when ``dim`` is out of range.
        """
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_F.normalize_dim(dim, self.ndim, "size")]

    def is_floating_point(self):
        """True for float32 and float64 tensors."""
        return self._data.dtype.kind == "f"

    def is_contiguous(self):
        """True when the elements are laid out in C (row-major) order without gaps."""
        return self._data.flags.c_contiguous

    def stride(self, dim=None):
        """Strides in elements (PyTorch convention), or the stride of one dimension."""
        st = tuple(s // self._data.itemsize for s in self._data.strides)
        if dim is None:
            return st
        return st[_F.normalize_dim(dim, self.ndim, "stride")]

    # ------------------------------------------------------------ conversion
    def numpy(self):
        """The elements as an ndarray that shares memory with the tensor.

        A fresh ndarray *view* of the storage, never the storage object itself:
        writes to its elements show in the tensor (as in PyTorch), but assigning to
        its ``shape``, ``dtype`` or ``strides`` changes only the returned array.
        A read-only tensor (an ``expand()`` view, say) gives a read-only array.

        Raises:
            RuntimeError: when the tensor requires grad and grad mode is on (use
                ``detach().numpy()``), as PyTorch.
        """
        if self._requires_grad and STATE.grad_enabled:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        return self._data.view()

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(t)``: a view of the storage (as ``numpy()``), or a copy/cast
        when ``dtype``/``copy`` ask for one (NumPy 2's protocol: ``copy=True`` always
        copies, ``copy=False`` never does, ``None`` copies only to cast).

        Raises:
            RuntimeError: when the tensor requires grad.
            ValueError: ``copy=False`` with a dtype that needs a cast (as NumPy).
        """
        if self._requires_grad:
            raise RuntimeError("Can't convert a Tensor that requires grad to a numpy array. "
                               "Use tensor.detach().numpy() instead.")
        arr = self._data
        if dtype is not None:
            if copy is False and np.dtype(dtype) != arr.dtype:
                raise ValueError(f"Unable to avoid a copy while casting the tensor's "
                                 f"{arr.dtype} storage to {np.dtype(dtype)} (copy=False)")
            out = arr.astype(dtype, copy=builtins.bool(copy))
            return out.view() if out is arr else out     # no cast needed: still a view
        if copy:
            return arr.copy()
        return arr.view()

    def item(self):
        """The value of a one-element tensor as a Python number.

        Raises:
            RuntimeError: when the tensor has more or fewer than one element.
        """
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be "
                               f"converted to Scalar")
        return self._data.reshape(()).item()

    def tolist(self):
        """The elements as (nested) Python lists; a Python number for 0-d tensors."""
        return self._data.tolist()

    def detach(self):
        """A new leaf tensor sharing storage, with no history and no tangent."""
        d = self._data
        if type(d) is _BatchedArray:            # under vmap: detach the physical value
            t = _batching.make_batched(d._bt_phys.detach(), d._bt_level)
            t._version = self._version
            return t
        t = Tensor._wrap(d)
        t._version = self._version
        return t

    def detach_(self):
        """Make this tensor a leaf that does not require grad, in place.

        Raises:
            RuntimeError: for a view made by a recorded view op (``x[0:1]``,
                ``reshape``, ...), as PyTorch: writes through it would reach
                its base behind the graph's back; use ``detach()``.
        """
        fn = self._grad_fn
        if fn is not None and fn.op.view:
            raise RuntimeError("detach_(): Can't detach views in-place. Use detach() "
                               "instead.")
        self._grad_fn = None
        self._requires_grad = False
        return self

    def clone(self):
        """A differentiable copy with its own (C-contiguous) storage."""
        return _F.clone(self)

    def contiguous(self):
        """Self when C-contiguous, else a differentiable contiguous copy."""
        return self if self._data.flags.c_contiguous else _F.clone(self)

    def to(self, *args, dtype=None, non_blocking=False, copy=False, device=None):
        """This tensor cast to a dtype (differentiable between float dtypes).

        PyTorch's forms: ``to(dtype, non_blocking=False, copy=False)``,
        ``to(device=None, dtype=None, non_blocking=False, copy=False)`` and
        ``to(other, non_blocking=False, copy=False)`` (``other``'s dtype).  The only
        device is ``"cpu"``; ``non_blocking`` is accepted and ignored.  Returns self
        when the dtype already matches and ``copy`` is False.

        Casting floats to an integer dtype truncates toward zero and refuses nan,
        inf and values out of range (PyTorch writes undefined values there), as
        does narrowing int64 to int32 (PyTorch wraps): RuntimeError, as ``copy_``.

        Raises:
            TypeError: an argument that is not a dtype, a Tensor or a device.
            RuntimeError: a device other than the CPU; values the dtype cannot hold.
        """
        target = dtype
        rest = list(args)
        if rest and not isinstance(rest[0], builtins.bool):
            first = rest.pop(0)
            if isinstance(first, Tensor):
                target = first.dtype
            elif first is None or _is_device(first):
                _check_device(first)
                if rest and not isinstance(rest[0], builtins.bool):
                    target = rest.pop(0)
            else:
                target = first
        if device is not None:
            _check_device(device)
        if rest and not all(isinstance(a, (builtins.bool, np.bool_)) for a in rest[:2]):
            raise TypeError(f"to(): expected non_blocking and copy (bools) after the "
                            f"dtype, Tensor or device, got {rest!r}")
        if rest:                                # positional non_blocking, copy
            non_blocking = rest.pop(0)
        if rest:
            copy = rest.pop(0)
        if rest:
            raise TypeError(f"to(): too many positional arguments: {args!r}")
        if target is None:
            return _F.clone(self) if copy else self
        d = _dtype.as_dtype(target, "to")
        src = self._data
        if d.numpy.kind in "iu" and src.dtype != d.numpy:
            _check_narrowing(src, d.numpy, "to")
        elif d is _dtype.float32 and src.dtype == np.float64:
            with np.errstate(over="ignore"):    # beyond float32's range: inf, as PyTorch
                return _F.to_dtype(self, d, copy)
        return _F.to_dtype(self, d, copy)

    def float(self):
        """Cast to float32."""
        return self.to(_dtype.float32)

    def double(self):
        """Cast to float64."""
        return self.to(_dtype.float64)

    def long(self):
        """Cast to int64 (truncating toward zero, not differentiable)."""
        return self.to(_dtype.int64)

    def int(self):
        """Cast to int32 (truncating toward zero, not differentiable)."""
        return self.to(_dtype.int32)

    def bool(self):
        """Cast to bool (nonzero is True)."""
        return self.to(_dtype.bool)

    def type(self, dtype=None):
        """The dtype name as ``'tensorplay.FloatTensor'`` style string, or cast to ``dtype``."""
        if dtype is None:
            return {"float32": "tensorplay.FloatTensor", "float64": "tensorplay.DoubleTensor",
                    "int64": "tensorplay.LongTensor", "int32": "tensorplay.IntTensor",
                    "bool": "tensorplay.BoolTensor"}[self.dtype.name]
        return self.to(dtype)

    # ------------------------------------------------------------ python protocol
    def __eq__(self, other):
        """``self == other``: ``eq(self, other)`` for Tensors, numbers and ndarrays;
        NotImplemented for anything else, so Python falls back to identity (``t ==
        None`` is False, ``t in [None, t]`` works), as PyTorch does."""
        return _compare(_F.eq, self, other)

    def __ne__(self, other):
        """``self != other``: ``ne(self, other)``, or NotImplemented as ``__eq__``."""
        return _compare(_F.ne, self, other)

    def __format__(self, format_spec):
        """``format(t, spec)`` / f-strings: a 0-d tensor formats as its Python number
        (``f"{loss:.4f}"``), as PyTorch does; other tensors as ``str(t)`` (a
        non-empty spec raises TypeError, as for any object)."""
        if self._data.ndim == 0:
            return self._data.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def __contains__(self, element):
        """``element in self``: ``(element == self).any()`` for numbers and Tensors
        (broadcasting, as PyTorch).

        Raises:
            RuntimeError: an element that is neither a Tensor nor a number (as
                PyTorch), or a Tensor that does not broadcast with self.
        """
        if not isinstance(element, (Tensor, builtins.bool, int, float, np.bool_,
                                    np.integer, np.floating)):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but "
                               f"you passed in a {type(element)}.")
        return builtins.bool(_F.eq(element, self)._data.any())

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        """The rows ``self[0], self[1], ...`` (views, each differentiable).

        Recording a graph, a long tensor is split in halves recursively and the
        rows are taken from the small pieces: each row's backward then scatters
        into a piece of a few rows instead of a zeros tensor of the full size, so
        ``stack(list(x)).sum().backward()`` costs O(n log n) rather than O(n^2).

        Raises:
            TypeError: iteration over a 0-d tensor.
        """
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        n = self._data.shape[0]
        if n > _ITER_LEAF and self._requires_grad and STATE.grad_enabled:
            return _iter_halving(self, n)
        return (self[i] for i in range(n))

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with {self._data.size} values is "
                               f"ambiguous")
        return builtins.bool(self._data.reshape(()))

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self._data.dtype.kind not in "iu" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted "
                            "to an index")
        return int(self.item())

    # identity hash (Tensors are dict keys in the engine); the C slot, not a
    # Python method
    __hash__ = object.__hash__

    def __repr__(self):
        d = self._data
        if type(d) is _BatchedArray:            # PyTorch's form for a batched tensor
            return f"BatchedTensor(lvl={d._bt_level}, bdim=0, value=\n{d._bt_phys!r}\n)"
        return _format(self)

    def __getstate__(self):
        if self._grad_fn is not None:
            raise RuntimeError("Can't pickle a non-leaf Tensor (it has a grad_fn); "
                               "detach() it first.")
        return {"data": self._data, "requires_grad": self._requires_grad, "grad": self._grad}

    def __setstate__(self, state):
        self._data = state["data"]
        self._requires_grad = state["requires_grad"]
        _fresh_meta(self)
        self._grad = state["grad"]

    # ------------------------------------------------------------ autograd
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate the gradient of this tensor into the ``.grad`` of leaves.

        Same as ``tensorplay.autograd.backward(self, gradient, ...)``; see there.
        """
        from tensorplay.autograd import backward
        backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph,
                 inputs=inputs)

    def register_hook(self, hook):
        """Register ``hook(grad) -> Tensor or None``, called with this tensor's
        gradient whenever it is computed (``backward()`` and ``autograd.grad``).

        A returned Tensor (same shape and dtype) replaces the gradient for what
        follows: later hooks, ``retain_grad``, the value ``grad()`` returns, and
        the rest of the backward pass.  Hooks run in registration order.  On a
        non-leaf the hook belongs to the node that made the tensor, so a hook
        registered before an in-place op sees the gradient of the old value
        (PyTorch's semantics).

        Returns:
            tensorplay.utils.hooks.RemovableHandle: ``handle.remove()`` unregisters.

        Raises:
            RuntimeError: the tensor does not require grad.
            TypeError: ``hook`` is not callable; when run, a hook returning
                something other than a Tensor or None.
        """
        from tensorplay.autograd.graph import register_tensor_hook
        return register_tensor_hook(self, hook)

    def retain_grad(self):
        """Fill ``.grad`` of this non-leaf tensor when its gradient is computed
        (accumulated like a leaf's, after its other hooks).  No-op on leaves.

        Raises:
            RuntimeError: the tensor does not require grad.
        """
        from tensorplay.autograd.graph import retain_grad
        retain_grad(self)

    @property
    def retains_grad(self):
        """True for a non-leaf tensor on which ``retain_grad()`` was called."""
        return (self._grad_fn is not None and self._hooks is not None
                and self._hooks.retains)

    def register_post_accumulate_grad_hook(self, hook):
        """Register ``hook(tensor) -> None``, called after ``backward()`` has
        accumulated into this leaf's ``.grad`` (e.g. an optimiser step per
        parameter).  Not called by ``autograd.grad``, which leaves ``.grad`` alone.

        Returns:
            tensorplay.utils.hooks.RemovableHandle.

        Raises:
            RuntimeError: the tensor does not require grad, or is not a leaf.
            TypeError: ``hook`` is not callable, or, when run, returns a value.
        """
        from tensorplay.autograd.graph import register_post_accumulate_grad_hook
        return register_post_accumulate_grad_hook(self, hook)

    # ------------------------------------------------------------ in-place
    # In-place ops run outside the autograd graph (under no_grad, or on tensors
    # that do not require grad): they compute the whole result first and write it
    # last, so a failing op leaves the tensor unchanged, and they bump the version
    # counter shared with views.
    def _check_writable(self, name):
        if self._version is None and STATE.fw_level is not INFERENCE:
            _INPLACE.check_target(self, name)       # (raises: an inference tensor)
        if STATE.grad_enabled and self._nograd_view:
            raise RuntimeError(
                f"{name}(): A view was created in no_grad mode and is being modified "
                f"inplace with grad mode enabled: its base requires grad, and the graph "
                f"cannot see the change. Make the change under no_grad too, or clone() "
                f"the view.")
        if STATE.grad_enabled and self._requires_grad:
            if self._grad_fn is None:
                raise RuntimeError(
                    f"{name}(): a leaf Variable that requires grad is being used in an "
                    f"in-place operation. Wrap it in tensorplay.no_grad() to update it.")
            raise RuntimeError(
                f"{name}(): in-place operations on tensors that are part of the autograd "
                f"graph are not supported; use the out-of-place form.")
        if self._tangent is not None and self._tangent_level == STATE.fw_level:
            raise RuntimeError(f"{name}(): in-place operations on dual tensors are not "
                               f"supported; use the out-of-place form.")
        if not self._data.flags.writeable:
            raise RuntimeError(
                f"{name}(): the tensor's storage is read-only (a broadcast view made by "
                f"expand(), a read-only ndarray, or an ndarray whose elements overlap in "
                f"memory); clone() it before writing to it.")

    def _source(self, name, value):
        """The ndarray to write for ``value``: a Tensor (not in the graph, not dual),
        a number (range-checked for integer tensors, as PyTorch) or array-like."""
        if isinstance(value, Tensor):
            if STATE.grad_enabled and value._requires_grad:
                raise RuntimeError(f"{name}(): the source requires grad, and in-place "
                                   f"writes are not differentiable here; detach() it first.")
            if value._tangent is not None and value._tangent_level == STATE.fw_level:
                raise RuntimeError(f"{name}(): the source is a dual tensor, and in-place "
                                   f"writes do not carry tangents; use out-of-place ops.")
            return value._data
        if isinstance(value, (builtins.bool, int, float, np.bool_, np.integer, np.floating)):
            return _checked_scalar(value, self._data.dtype, name)
        if isinstance(value, np.ndarray):       # plain, native, numeric (or TypeError)
            return _dtype.check_ndarray(value, name, share=False)
        if isinstance(value, (list, tuple)):
            try:
                arr = np.asarray(value)
            except ValueError as e:
                raise ValueError(f"{name}(): could not build an array from the value: {e}") \
                    from None
            if arr.dtype.kind not in "biuf":
                raise TypeError(f"{name}(): expected numbers, got an array of {arr.dtype}")
            return arr
        raise TypeError(f"{name}(): expected a Tensor or a number, got {type(value).__name__}")

    def _write(self, name, value):
        """Write ``value`` (an ndarray broadcastable to self) into self, atomically.

        Same-kind casts only (no float into an integer tensor); integer values that
        the target's narrower integer dtype cannot hold raise RuntimeError."""
        self._check_writable(name)
        value = np.asarray(value)
        if value.shape != self._data.shape:
            try:
                bshape = np.broadcast_shapes(value.shape, self._data.shape)
            except ValueError:
                bshape = None
            if bshape != self._data.shape:
                raise RuntimeError(
                    f"{name}(): output with shape {list(self._data.shape)} doesn't match "
                    f"the broadcast shape {list(bshape) if bshape else list(value.shape)}")
        if not np.can_cast(value.dtype, self._data.dtype, casting="same_kind"):
            raise RuntimeError(
                f"{name}(): result type {from_numpy_dtype(value.dtype)} can't be cast to "
                f"the desired output type {self.dtype}")
        if value.dtype != self._data.dtype and self._data.dtype.kind in "iu":
            # int64 results written into int32 (x.add_(int64 tensor)): refuse values
            # that would wrap (PyTorch wraps them silently)
            value = _checked_cast(value, self._data.dtype, name)
        np.copyto(self._data, value, casting="same_kind")
        _INPLACE.bump(self, name)
        return self

    # The in-place methods proper (add_, mul_, ..., and x.<op>_ for every op family's
    # INPLACE names) go through one mechanism, tensorplay/autograd/_inplace.py:
    # the public out-of-place op computes the result, which is checked against
    # self (same shape, castable dtype), written, and self's history rebased --
    # differentiable on non-leaves and through views, as in PyTorch.
    def _inplace(self, name, fn, *args, **kwargs):
        """``self.<name>(*args, **kwargs)`` as ``fn(self, *args, **kwargs)`` written into
        self (internal; see tensorplay/autograd/_inplace.py).  Returns self."""
        return _INPLACE.inplace(self, name, fn, args, kwargs)

    def _apply_inplace(self, name, result):
        """Write the out-of-place ``result`` (a Tensor of self's shape, computed from
        self by public ops) into self and rebase self's history (internal).

        Prefer ``_inplace(name, fn, ...)`` when the result is computed from self: it
        runs ``fn`` on an alias so that an op that saves its input for the backward
        keeps the old values.  Returns self.
        """
        return _INPLACE.commit(self, name, result)

    def _inplace_binary(self, name, fn, other, **kwargs):
        if isinstance(other, (int, float, np.integer, np.floating)) and \
                self._data.dtype.kind in "iu" and not isinstance(other, builtins.bool):
            _checked_scalar(other, self._data.dtype, name)   # overflow, named for name
        elif not isinstance(other, (Tensor, builtins.bool, int, float, np.generic,
                                    np.ndarray)):
            raise TypeError(f"{name}(): argument 'other' must be a Tensor or a number, "
                            f"not {type(other).__name__}")
        return _INPLACE.inplace(self, name, fn, (other,), kwargs)

    def add_(self, other, *, alpha=1):
        """In place: ``self += alpha * other`` (``other`` broadcast to self's shape).

        Differentiable on tensors in the graph and through views (see ``mul_``).
        """
        return self._inplace_binary("add_", _F.add, other,
                                    **({} if alpha == 1 else {"alpha": alpha}))

    def sub_(self, other, *, alpha=1):
        """In place: ``self -= alpha * other``."""
        return self._inplace_binary("sub_", _F.sub, other,
                                    **({} if alpha == 1 else {"alpha": alpha}))

    def mul_(self, other):
        """In place: ``self *= other``.

        Like every in-place method: ``other`` broadcasts to self's shape but self is
        never broadcast up; the result's dtype must cast to self's (same kind: no
        float into an integer tensor).  In the autograd graph (a non-leaf, or a view
        of one) the op is recorded and ``grad_fn`` rebased, as in PyTorch.

        Raises:
            RuntimeError: a leaf that requires grad (or a view of one) with grad mode
                on; shape or dtype mismatch as above; a read-only tensor.
            TypeError: an operand that is neither a Tensor nor a number.
        """
        return self._inplace_binary("mul_", _F.mul, other)

    def div_(self, other):
        """In place: ``self /= other`` (true division: an integer self raises, the
        result being float)."""
        return self._inplace_binary("div_", _F.div, other)

    def zero_(self):
        """In place: fill with zeros (the old value gets a zero gradient).

        Raises:
            RuntimeError: a read-only tensor (an ``expand()`` view, a read-only or
                self-overlapping ndarray), or a leaf that requires grad.
        """
        _INPLACE.check_target(self, "zero_")
        zeros = np.broadcast_to(np.zeros((), self._data.dtype), self._data.shape)
        return _INPLACE.commit(self, "zero_", _wrap(zeros))

    def fill_(self, value):
        """In place: fill with the number ``value`` (or a 0-d tensor, as PyTorch:
        then differentiable, the gradient of ``value`` being the sum of the
        incoming one; the old value of self gets a zero gradient).

        The value is checked for this tensor's dtype as ``tensorplay.full`` checks
        it: integer tensors truncate floats toward zero and refuse nan, inf and
        out-of-range values; float32 refuses finite values beyond its largest;
        bool takes any number.

        Raises:
            TypeError: a value that is not a real number (None, str, complex, list).
            RuntimeError: a value the dtype cannot hold, a tensor value with dims, or a
                tensor that cannot be written (see ``zero_``).
            OverflowError: a Python int outside 64 bits (as PyTorch).
        """
        _INPLACE.check_target(self, "fill_")
        if isinstance(value, Tensor):
            if value._data.ndim != 0:
                raise RuntimeError(f"fill_(): only supports 0-dimension value tensor but "
                                   f"got tensor with {value._data.ndim} dimensions")
            if self._data.dtype.kind == "f" and value._data.dtype.kind == "f":
                src = _F.expand(value.to(self.dtype), self._data.shape)
                return _INPLACE.commit(self, "fill_", src)
            value = value._data.item()
        elif not isinstance(value, (builtins.bool, int, float, np.bool_, np.integer,
                                    np.floating)):
            raise TypeError(f"fill_(): argument 'value' must be a number or a 0-d Tensor, "
                            f"not {type(value).__name__}")
        arr = np.broadcast_to(_checked_scalar(value, self._data.dtype, "fill_"),
                              self._data.shape)
        return _INPLACE.commit(self, "fill_", _wrap(arr))

    def copy_(self, src):
        """In place: copy ``src`` (broadcast to self's shape, cast to self's dtype).

        ``src`` may be a Tensor, a number or an ndarray (normalised as
        ``from_numpy`` describes).  Differentiable in ``src`` between float dtypes
        (the old value of self gets a zero gradient), also through views.
        Casting into an integer dtype truncates toward zero and refuses nan,
        inf and out-of-range values (PyTorch writes undefined values there).

        Raises:
            TypeError: a non-numeric source.  RuntimeError: shapes that do not
                broadcast, values the dtype cannot hold, a read-only target.
        """
        _INPLACE.check_target(self, "copy_")
        shape, dt = self._data.shape, self._data.dtype
        if isinstance(src, Tensor):
            sd = src._data
            _check_broadcasts("copy_", sd.shape, shape)
            if dt.kind == "f" and sd.dtype.kind == "f":
                if src is self:
                    src = _INPLACE._alias(self)
                value = _F.expand(src, shape) if sd.shape != shape else _F.view(src, shape)
                return _INPLACE.commit(self, "copy_", value)
            arr = _checked_cast(sd, dt, "copy_")
        else:
            arr = _checked_cast(np.asarray(self._source("copy_", src)), dt, "copy_")
            _check_broadcasts("copy_", arr.shape, shape)
        return _INPLACE.commit(self, "copy_", _wrap(np.broadcast_to(arr, shape)))

    __iadd__ = add_
    __isub__ = sub_
    __imul__ = mul_
    __itruediv__ = div_

    def __setitem__(self, key, value):
        """``self[key] = value`` with any key ``__getitem__`` takes: basic indices
        (ints, slices, None, Ellipsis) and advanced ones (integer tensors, lists,
        bool masks and their mixtures).  ``value`` broadcasts to the indexed shape.

        ``value`` is a number (checked as ``fill_`` checks it), a Tensor (cast as
        ``copy_`` casts), or an ndarray/list of numbers (same-kind casts only).
        Repeated advanced indices: the last write wins (numpy's order; PyTorch
        leaves it undefined).

        An in-place op (PyTorch's rules, tensorplay/autograd/_inplace.py): on a
        tensor in the graph it is recorded, so gradients flow to the old values
        outside the region and to a ``value`` that requires grad; a leaf that
        requires grad refuses it with grad mode on.  Basic keys write through the
        view ``self[key]`` (O(region)); advanced keys through the out-of-place
        ``index_put`` on the basic part's view.

        Raises:
            TypeError, IndexError: a bad index or a non-numeric value.
            RuntimeError: a value that does not broadcast to the indexed shape or the
                dtype cannot hold, or a tensor that cannot be written.
        """
        advanced = _F.shape.is_advanced(key)
        if advanced:
            from tensorplay._ops.index import split_key
            basic, indices, dims = split_key(self._data.shape, key, "__setitem__")
            key = _F.check_index(basic, self._data.shape, "__setitem__")
            advanced = any(i is not None for i in indices)    # else only 0-d tensors
        else:
            key = _F.check_index(key, self._data.shape, "__setitem__")
        _INPLACE.check_target(self, "__setitem__")
        src = self._setitem_source(value)
        view = _F.getitem(self, key)
        if advanced:
            from tensorplay._ops.index import put_key
            adv = tuple(slice(None) if i is None else Tensor._wrap(i) for i in indices)
            view._inplace("__setitem__", lambda v: put_key(
                v, adv, src, False, "__setitem__", ints_select=False, dims=dims))
            return
        target_shape = view._data.shape
        shape = src._data.shape
        while len(shape) > len(target_shape) and shape[0] == 1:
            shape = shape[1:]                   # leading size-1 dims drop (PyTorch, numpy)
        try:
            ok = np.broadcast_shapes(shape, target_shape) == target_shape
        except ValueError:
            ok = False
        if not ok:
            raise RuntimeError(f"__setitem__(): shape {list(src._data.shape)} doesn't match "
                               f"the indexed shape {list(target_shape)}")
        if shape != src._data.shape:
            src = src.reshape(shape)
        if shape != target_shape:
            src = src.expand(target_shape)
        view._apply_inplace("__setitem__", src)

    def _setitem_source(self, value):
        """``value`` of ``__setitem__`` as a Tensor of self's dtype: Tensors cast as
        ``copy_`` casts (differentiably between float dtypes), numbers and arrays
        checked as ``fill_`` and ``_write`` check them."""
        if isinstance(value, Tensor):
            if value._data.dtype == self._data.dtype:
                return value
            if self._data.dtype.kind == "f" and value._data.dtype.kind == "f":
                return value.to(self.dtype)
            return Tensor._wrap(_checked_cast(value.detach()._data, self._data.dtype,
                                              "__setitem__"))
        val = np.asarray(self._source("__setitem__", value))
        if not np.can_cast(val.dtype, self._data.dtype, casting="same_kind"):
            raise RuntimeError(f"__setitem__(): value of type {val.dtype} can't "
                               f"be cast to the tensor's dtype {self.dtype}")
        _check_narrowing(val, self._data.dtype, "__setitem__")
        return Tensor._wrap(val.astype(self._data.dtype, copy=True))


def _legacy_data(args, dtype, requires_grad):
    """``(ndarray, requires_grad)`` for ``Tensor(*args, dtype=, requires_grad=)``
    (see the Tensor docstring); errors name ``Tensor()``."""
    from tensorplay import _creation
    op = "Tensor"
    if dtype is not None:
        dtype = _dtype.as_dtype(dtype, op)
    if len(args) == 1 and not isinstance(args[0], Size) and (
            isinstance(args[0], (builtins.bool, np.bool_)) or
            not isinstance(args[0], (int, np.integer))):
        data = args[0]                          # Tensor(data); an int is a size
        if not isinstance(data, (list, tuple, np.ndarray, Tensor)):
            raise TypeError(f"{op}(): data must be a sequence, an ndarray or a Tensor "
                            f"(got {type(data).__name__}); use tensorplay.tensor() for "
                            f"a 0-d tensor")
        if dtype is None and not isinstance(data, Tensor):
            dtype = _dtype.get_default_dtype()
        arr = _creation._to_array(data, dtype, op, copy=True)
    else:
        d = _dtype.get_default_dtype() if dtype is None else dtype
        size = _creation._size(args, op) if args else (0,)    # Tensor(): shape (0,)
        arr = _creation._alloc(np.zeros, size, d, op)
    t = _creation._finish(arr, requires_grad, op)
    return t._data, t._requires_grad


def _compare(fn, a, b):
    """``fn(a, b)`` (eq/ne), or NotImplemented when ``b`` is no operand at all."""
    try:
        return fn(a, b)
    except TypeError:
        if _is_operand(b):
            raise
        return NotImplemented


def _fresh_meta(t):
    """No gradient, no history, version 0, no tangent: a new tensor's metadata
    (``_wrap`` sets the same fields inline, being the per-op hot path)."""
    t._grad = None
    t._grad_fn = None
    t._version = [0]
    t._tangent = None
    t._tangent_level = None
    t._nograd_view = False
    t._base = None
    t._view_chain = None
    t._views = None
    t._hooks = None


def _wrap(arr):
    """``Tensor._wrap``: a new Tensor on ``arr`` (no copy), no history, version 0;
    the fields of ``_fresh_meta``, set inline."""
    t = _new(Tensor)
    t._data = arr
    t._requires_grad = False
    t._grad = None
    t._grad_fn = None
    t._version = [0]
    t._tangent = None
    t._tangent_level = None
    t._nograd_view = False
    t._base = None
    t._view_chain = None
    t._views = None
    t._hooks = None
    return t


Tensor._wrap = staticmethod(_wrap)     # the module function itself: one call, not two


def _checked_scalar(value, np_dtype, name):
    """The real number ``value`` as a 0-d array of ``np_dtype``, checked as PyTorch
    checks a scalar it writes ("value cannot be converted to type ... without
    overflow"):

    * bool targets take any number (nonzero, nan included, is True);
    * integer targets truncate floats toward zero and refuse nan, inf and values
      out of range;
    * float targets refuse finite values beyond the largest (inf and nan pass);
    * Python ints outside 64 bits are refused whatever the target, with
      OverflowError, as PyTorch does (its scalars are 64-bit).

    Raises:
        RuntimeError: a value the dtype cannot hold.  OverflowError: see above.
    """
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, int) and not -_TWO_63 <= value < 2 * _TWO_63:
        raise OverflowError(f"{name}(): value {value} is too big to convert: Python ints "
                            f"must fit in 64 bits (as in PyTorch); pass float(value) to "
                            f"fill a floating tensor")
    kind = np_dtype.kind
    if kind == "b":
        return np.array(builtins.bool(value))
    if kind in "iu":
        if isinstance(value, float):
            if not math.isfinite(value):
                raise _overflow(name, value, np_dtype)
            value = math.trunc(value)
        info = np.iinfo(np_dtype)
        if not info.min <= value <= info.max:
            raise _overflow(name, value, np_dtype)
        return np.array(value, np_dtype)
    if math.isfinite(value) and abs(value) > float(np.finfo(np_dtype).max):
        raise _overflow(name, value, np_dtype)
    return np.array(value, np_dtype)


_TWO_63 = 2 ** 63


def _overflow(name, value, np_dtype):
    return RuntimeError(f"{name}(): value {value} cannot be converted to type "
                        f"{from_numpy_dtype(np_dtype)} without overflow")


def _checked_cast(arr, np_dtype, name):
    """``arr`` cast to ``np_dtype`` for an in-place write (copy_, setitem with a
    tensor value).  Narrowing into an integer dtype refuses nan, inf and values
    out of range instead of writing numpy's wrapped or undefined results (PyTorch
    writes garbage there); floats truncate toward zero.

    Raises:
        RuntimeError: a value the integer dtype cannot hold.
    """
    if arr.dtype == np_dtype:
        return arr
    _check_narrowing(arr, np_dtype, name)
    return arr.astype(np_dtype)


def _check_narrowing(arr, np_dtype, name):
    """Raise ``_checked_cast``'s RuntimeError unless every element of ``arr`` fits
    ``np_dtype`` (no-op for non-integer targets)."""
    if np_dtype.kind in "iu" and arr.dtype.kind in "fiu" and arr.size:
        info = np.iinfo(np_dtype)
        if arr.dtype.kind == "f":
            bad = ~np.isfinite(arr)
            if bad.any():
                raise _overflow(name, arr[bad].flat[0], np_dtype)
            lo, hi = arr.min(), arr.max()
            # exactly, in Python ints: the bounds +-1 round in the array's float type
            # (float32(-2**31 - 1) is -2**31), so -2**31 itself was refused
            if not (info.min <= math.trunc(float(lo)) and math.trunc(float(hi)) <= info.max):
                raise _overflow(name, lo if math.trunc(float(lo)) < info.min else hi, np_dtype)
        elif np.iinfo(arr.dtype).min < info.min or np.iinfo(arr.dtype).max > info.max:
            lo, hi = arr.min(), arr.max()
            if not (info.min <= lo and hi <= info.max):
                raise _overflow(name, lo if lo < info.min else hi, np_dtype)


def _check_broadcasts(name, src_shape, shape):
    """RuntimeError unless ``src_shape`` broadcasts to ``shape`` (and not beyond)."""
    if src_shape == shape:
        return
    try:
        bshape = np.broadcast_shapes(src_shape, shape)
    except ValueError:
        bshape = src_shape
    if bshape != shape:
        raise RuntimeError(f"{name}(): output with shape {list(shape)} doesn't match the "
                           f"broadcast shape {list(bshape)}")


# ---------------------------------------------------------------- repr
# PyTorch's default print options (torch.set_printoptions): tensors with more than
# _THRESHOLD elements are summarised to _EDGEITEMS items at each end of every long
# dim; lines wrap at _LINEWIDTH; floats show _PRECISION decimals.
_THRESHOLD, _EDGEITEMS, _LINEWIDTH, _PRECISION = 1000, 3, 80, 4


def _summary(arr):
    """``(shown, cut)``: the elements ``repr`` shows, and which dims were cut.

    Up to ``_THRESHOLD`` elements everything is shown.  Above it, each dim longer
    than ``2 * _EDGEITEMS`` keeps its first and last ``_EDGEITEMS`` entries
    (PyTorch's ``get_summarized_data``), gathered in one fancy-indexing step, so
    only the shown elements are ever read: a 10^8-element tensor costs what a
    6x6 one does, whatever its strides (an ``expand()`` view included).
    """
    if arr.size <= _THRESHOLD:
        return arr, (False,) * arr.ndim
    e = _EDGEITEMS
    index, cut = [], []
    for n in arr.shape:
        if n > 2 * e:
            index.append(np.concatenate((np.arange(e), np.arange(n - e, n))))
            cut.append(True)
        else:
            index.append(np.arange(n))
            cut.append(False)
    return arr[np.ix_(*index)], tuple(cut)


def _element_format(values, kind):
    """``(fmt, width)`` for the Python numbers ``values`` (the shown elements) of an
    array of numpy dtype kind ``kind``, following PyTorch's ``_Formatter``.

    Floats: ``1.`` style when every nonzero finite value is integral, ``0.1235``
    (_PRECISION decimals) otherwise, and ``1.2346e+05`` when the nonzero finite
    magnitudes span more than 1000x, exceed 1e8 or (non-integral) go below 1e-4.
    The column width is that of the widest nonzero finite value (at least 1);
    nan and inf are formatted by Python (``nan``, ``inf``, ``-inf``).
    """
    if kind == "b":
        strs = ["True" if v else "False" for v in values]
        return (lambda v: "True" if v else "False"), max(map(len, strs), default=1)
    if kind != "f":
        return str, max(max(map(len, map(str, values)), default=1), 1)
    nonzero = [v for v in values if v != 0 and math.isfinite(v)]
    if not nonzero:
        return _float_fmt("int"), 1
    mags = [abs(v) for v in nonzero]
    hi, lo = max(mags), min(mags)
    int_mode = all(v == math.ceil(v) for v in nonzero)
    if hi / lo > 1000.0 or hi > 1.0e8 or (not int_mode and lo < 1.0e-4):
        mode = "sci"
    else:
        mode = "int" if int_mode else "fixed"
    fmt = _float_fmt(mode)
    return fmt, max(len(fmt(v)) for v in nonzero)


def _float_fmt(mode):
    p = _PRECISION
    if mode == "sci":
        return lambda v: f"{v:.{p}e}"
    if mode == "fixed":
        return lambda v: f"{v:.{p}f}"
    return lambda v: f"{v:.0f}." if math.isfinite(v) else f"{v:.0f}"


def _nested_str(values, ndim, cut, indent, fmt, width):
    """The bracketed text of the nested lists ``values`` (``ndim`` >= 1 levels), with
    `` ...`` / ``...`` where ``cut`` says a dim was summarised (PyTorch's layout:
    vectors wrap at _LINEWIDTH, rows of an n-d tensor are separated by n-1 newlines)."""
    e = _EDGEITEMS
    if ndim == 1:
        items = [fmt(v).rjust(width) for v in values]
        if cut[0]:
            items[e:e] = [" ..."]
        per_line = max(1, (_LINEWIDTH - indent) // (width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    parts = [_nested_str(v, ndim - 1, cut[1:], indent + 1, fmt, width) for v in values]
    if cut[0]:
        parts[e:e] = ["..."]
    return "[" + ("," + "\n" * (ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _format(t):
    """``repr(t)`` in PyTorch's format: ``tensor([...], dtype=..., requires_grad=True)``
    or ``grad_fn=<...>``, summarised above _THRESHOLD elements (see ``_summary``)."""
    arr = t._data
    prefix = "tensor("
    indent = len(prefix)
    d = t.dtype
    default = _dtype.get_default_dtype()
    suffixes = []
    if arr.size == 0:
        body = "[]"
        if arr.ndim != 1:
            suffixes.append(f"size={tuple(arr.shape)}")
        if d is not default:                # PyTorch names every non-default dtype here
            suffixes.append(f"dtype={d!r}")
    else:
        shown, cut = _summary(arr)
        values = shown.tolist()
        flat = [values] if shown.ndim == 0 else shown.reshape(-1).tolist()
        fmt, width = _element_format(flat, arr.dtype.kind)
        if shown.ndim == 0:
            body = fmt(values).rjust(width)
        else:
            body = _nested_str(values, shown.ndim, cut, indent, fmt, width)
        if d is not default and d is not _dtype.int64 and d is not _dtype.bool:
            suffixes.append(f"dtype={d!r}")
    if t._grad_fn is not None:
        suffixes.append(f"grad_fn=<{t._grad_fn.name()}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    if t._tangent is not None and t._tangent_level == STATE.fw_level:
        suffixes.append("tangent=" + repr(t._tangent))
    # suffixes go on the last line while it stays within _LINEWIDTH (PyTorch's
    # _add_suffixes, including its line-length arithmetic)
    out = [prefix + body]
    last = len(out[0]) - out[0].rfind("\n") + 1
    for sfx in suffixes:
        if last + len(sfx) + 2 > _LINEWIDTH:
            out.append(",\n" + " " * indent + sfx)
            last = indent + len(sfx)
        else:
            out.append(", " + sfx)
            last += len(sfx) + 2
    return "".join(out) + ")"


from tensorplay import _ops as _F  # noqa: E402  (circular: ops build on Tensor)
from tensorplay.autograd import _inplace as _INPLACE  # noqa: E402  (builds on the ops)


# ---------------------------------------------------------------- methods that are ops
def _bind_methods():
    """Tensor methods and operators are the public op functions themselves
    (``x.exp`` is ``tensorplay.exp`` bound to x): one call frame, one docstring."""
    for name in ("exp", "log", "sqrt", "tanh", "sigmoid", "relu", "neg", "pow",
                 "add", "sub", "mul", "div", "matmul", "sum", "mean", "reshape", "view",
                 "permute", "transpose", "t", "unsqueeze", "squeeze", "expand", "expand_as",
                 "log_softmax", "softmax", "eq", "ne", "lt", "le", "gt", "ge",
                 "view_as", "reshape_as", "flatten"):
        setattr(Tensor, name, getattr(_F, name))
    for dunder, name in (("add", "add"), ("sub", "sub"), ("mul", "mul"),
                         ("truediv", "div"), ("pow", "pow"), ("matmul", "matmul")):
        fn = getattr(_F, name)
        setattr(Tensor, f"__{dunder}__", fn)
        setattr(Tensor, f"__r{dunder}__", _reflected(fn))
    for dunder in ("lt", "le", "gt", "ge"):    # __eq__/__ne__ are methods (identity fallback)
        setattr(Tensor, f"__{dunder}__", getattr(_F, dunder))
    Tensor.__neg__ = _F.neg
    Tensor.__getitem__ = _F.getitem
    Tensor.__pos__ = lambda self: self
    # what the op families declare (tensorplay/_ops/__init__.py: METHODS, OPERATORS)
    for name in _F.METHODS:
        setattr(Tensor, name, getattr(_F, name))
    for dunder, fn in _F.OPERATORS.items():
        setattr(Tensor, dunder, fn)
    # in-place methods x.<name>_ through the one mechanism (autograd/_inplace.py):
    # the core elementwise ones and the names the families declare (INPLACE);
    # add_, copy_, fill_, ... are written out above and kept
    for name in dict.fromkeys(_CORE_INPLACE + tuple(_F.INPLACE)):
        if name + "_" not in Tensor.__dict__:
            setattr(Tensor, name + "_", _inplace_method(name, getattr(_F, name)))
    for dunder, name in _INPLACE_DUNDERS.items():
        if name + "_" in Tensor.__dict__ and dunder not in Tensor.__dict__:
            setattr(Tensor, dunder, Tensor.__dict__[name + "_"])


_CORE_INPLACE = ("exp", "log", "sqrt", "tanh", "sigmoid", "relu", "neg", "pow")
# PyTorch's augmented assignments beyond += -= *= /= (no @=: PyTorch has none);
# each is bound when its in-place method exists
_INPLACE_DUNDERS = {"__ipow__": "pow", "__imod__": "remainder",
                    "__ifloordiv__": "floor_divide", "__iand__": "bitwise_and",
                    "__ior__": "bitwise_or", "__ixor__": "bitwise_xor",
                    "__ilshift__": "bitwise_left_shift", "__irshift__": "bitwise_right_shift"}


def _inplace_method(name, fn):
    """``Tensor.<name>_``: ``fn(self, ...)`` written into self (autograd/_inplace.py)."""
    iname = name + "_"

    def method(self, *args, **kwargs):
        return _INPLACE.inplace(self, iname, fn, args, kwargs)
    method.__name__ = iname
    method.__qualname__ = f"Tensor.{iname}"
    method.__doc__ = (
        f"In place: ``self`` becomes ``tensorplay.{name}(self, *args, **kwargs)``.\n\n"
        f"PyTorch's rules for in-place ops: the result must have self's shape (self is "
        f"never broadcast up) and a dtype that casts to self's (same kind).  Recorded "
        f"in the autograd graph on non-leaves and through views (grad_fn rebased).\n\n"
        f"Raises:\n    RuntimeError: a leaf that requires grad (or a view of one) with "
        f"grad mode on; a result of another shape, or of a dtype that cannot be cast "
        f"into self's; a read-only tensor.  Errors of ``{name}`` itself, renamed "
        f"``{iname}``.")
    return method


# Iteration with a graph (Tensor.__iter__): pieces of at most _ITER_LEAF rows are
# indexed row by row; longer ones are halved first (slices: views, one node each).
_ITER_LEAF = 16


def _iter_halving(t, n):
    """Yield the rows of ``t`` (``n`` of them) in order, each ``piece[i]`` of a piece
    made by halving ``t`` until it has at most ``_ITER_LEAF`` rows.  A row's VJP
    allocates its piece's size, and a piece's that of its parent: O(n log n) in
    all over the log2(n / _ITER_LEAF) levels, where ``t[i]`` per row is O(n^2)."""
    stack = [(t, n)]
    while stack:
        piece, m = stack.pop()
        if m <= _ITER_LEAF:
            for i in range(m):
                yield piece[i]
        else:
            h = m // 2
            stack.append((piece[h:], m - h))
            stack.append((piece[:h], h))


def _is_device(x):
    """A device-like argument of ``to()``: a device, or a string that is not a dtype name."""
    if isinstance(x, _device.device) or type(x).__name__ == "device":
        return True
    if not isinstance(x, str) or x in _dtype._BY_NAME:
        return False
    try:
        _dtype.as_dtype(x)                      # a numpy name: 'f4', 'int64', ...
    except TypeError:
        return True
    return False


def _check_device(device):
    _device.check(device, "to")


def _is_operand(x):
    """True for the operand types the elementwise ops take (Tensors, real numbers,
    ndarrays): for those a TypeError from ``eq`` is a real error, for anything
    else ``==`` falls back to identity."""
    return isinstance(x, (Tensor, builtins.bool, int, float, np.bool_, np.integer,
                          np.floating, np.ndarray))


def _reflected(fn):
    def reflected(self, other):
        return fn(other, self)
    reflected.__name__ = f"__r{fn.__name__}__"
    return reflected


_bind_methods()
