"""The half of ``nn.Module`` that deals with state and calls: ``state_dict`` /
``load_state_dict``, dtype conversion (``to``, ``double``, ``float``, ``_apply``)
and forward-hook registration (the hooked call: _hooks.py).  Mixed into ``Module`` (module.py).

``load_state_dict`` checks everything before it writes anything: a strict load
with a missing or unexpected key, or any size mismatch, raises PyTorch's
RuntimeError and leaves the module as it was (PyTorch copies the matching
tensors first, then raises; see docs/DECISIONS.md).
"""
import collections
from collections import OrderedDict

import numpy as np

from tensorplay import _dtype
from tensorplay._tensor import Tensor
from tensorplay.autograd.grad_mode import no_grad
from tensorplay.utils.hooks import RemovableHandle

__all__ = ["StateMixin", "typename", "_IncompatibleKeys"]


def typename(obj):
    """PyTorch's ``torch.typename``: ``'tensorplay.FloatTensor'`` for a tensor,
    the qualified class name otherwise."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = type(obj).__module__ or ""
        qualname = type(obj).__qualname__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"


class _IncompatibleKeys(collections.namedtuple("_IncompatibleKeys",
                                               ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns (PyTorch's ``_IncompatibleKeys``)."""
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class StateMixin:
    """state_dict, conversion and hooks for ``Module`` (see module docstring)."""

    # ------------------------------------------------------------ state_dict
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An ``OrderedDict`` of every parameter and persistent buffer, keyed by
        dotted name as PyTorch (``'0.weight'``, ``'bn.running_mean'``).  Values
        are detached tensors sharing storage with the module (``keep_vars=True``:
        the Parameters themselves).  ``_metadata`` holds each module's version.

        Raises:
            TypeError: positional arguments other than PyTorch's deprecated
            ``(destination, prefix, keep_vars)``.
        """
        if args:
            if len(args) > 3:
                raise TypeError(f"state_dict() takes at most 3 positional arguments, got "
                                f"{len(args)}")
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        meta = getattr(destination, "_metadata", None)
        if meta is not None:
            meta[prefix[:-1]] = {"version": self._version}
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, {})
            if result is not None:
                destination = result
        return destination

    def _check_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                               missing_keys, unexpected_keys, error_msgs, plan):
        """Check this module's own entries of ``state_dict``: append problems to
        the lists and ``(target, source)`` pairs to ``plan``.  Writes nothing."""
        persistent = {k: v for k, v in self._buffers.items()
                      if k not in self._non_persistent_buffers_set}
        local = {k: v for k, v in list(self._parameters.items()) + list(persistent.items())
                 if v is not None}
        for name, param in local.items():
            key = prefix + name
            if key not in state_dict:
                missing_keys.append(key)
                continue
            src = _as_tensor(state_dict[key])
            if not isinstance(src, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  f'tensorplay.Tensor or Tensor-like object from checkpoint '
                                  f'but received {type(src)}')
                continue
            if src.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{src.shape} from checkpoint, the shape in current model "
                                  f"is {param.shape}.")
                continue
            plan.append((param, src, key))
        if strict:
            for key in state_dict:
                if key.startswith(prefix):
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local:
                        unexpected_keys.append(key)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                              missing_keys, unexpected_keys, error_msgs):
        """PyTorch's per-module hook; here it checks and then copies this module's
        own entries (load_state_dict itself checks the whole tree first)."""
        plan = []
        self._check_from_state_dict(state_dict, prefix, local_metadata, strict,
                                    missing_keys, unexpected_keys, error_msgs, plan)
        if not error_msgs:
            _copy_plan(plan)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy parameters and persistent buffers from ``state_dict`` (as made by
        ``state_dict()``, or a torch one converted to tensorplay tensors).

        Args:
            state_dict (dict): name -> Tensor.  numpy arrays and other libraries'
                CPU tensors (anything with ``__array__``, e.g. a torch state_dict)
                are accepted and copied from.
            strict (bool): keys must match exactly (default True).
            assign (bool): put the given tensors in place instead of copying into
                the existing ones (Parameters stay Parameters).

        Returns:
            ``IncompatibleKeys(missing_keys, unexpected_keys)`` (empty lists when
            strict; repr ``<All keys matched successfully>`` when both are empty).

        Raises:
            TypeError: ``state_dict`` is not a mapping.
            RuntimeError: ``Error(s) in loading state_dict for <Class>:`` followed
                by PyTorch's lines -- ``Missing key(s) in state_dict: "a", "b".``,
                ``Unexpected key(s) in state_dict: ...``, ``size mismatch for
                <key>: ...``.  Nothing is written when it raises.
        """
        if not isinstance(state_dict, collections.abc.Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        if not isinstance(strict, bool):
            raise TypeError(f"load_state_dict(): argument 'strict' must be bool, not "
                            f"{type(strict).__name__}")
        missing, unexpected, errors, plan = [], [], [], []
        metadata = getattr(state_dict, "_metadata", None) or {}
        for prefix, module in _prefixed_modules(self):
            module._check_from_state_dict(state_dict, prefix, metadata.get(prefix[:-1], {}),
                                          True, missing, unexpected, errors, plan)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        if assign:
            _assign_plan(self, plan)
        else:
            _copy_plan(plan)
        result = _IncompatibleKeys(missing, unexpected)
        for _, module in _prefixed_modules(self):
            for hook in module._load_state_dict_post_hooks.values():
                hook(module, result)
        return result

    # ------------------------------------------------------------ conversion
    def _apply(self, fn):
        """Replace every parameter's and buffer's values by ``fn(tensor)``, keeping
        the Parameter objects (so optimisers holding them stay valid), and
        converting gradients alike."""
        for module in self.children():
            module._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with no_grad():
                new = fn(param)
            if new is not param:
                param.data = new
            if param.grad is not None:
                with no_grad():
                    g = fn(param.grad)
                if g is not param.grad:
                    param._grad = g
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs):
        """Cast floating parameters and buffers to a dtype, in place; returns self.

        PyTorch's forms: ``to(dtype)``, ``to(device)``, ``to(device, dtype)``,
        ``to(tensor)`` (its dtype), keywords ``device``, ``dtype``,
        ``non_blocking``.  Integer buffers (``num_batches_tracked``) keep their
        dtype, as in PyTorch.  The only device is the CPU.

        Raises:
            TypeError: a dtype that is not floating ("nn.Module.to only accepts
            floating point or complex dtypes"), or arguments of the wrong kind.
        """
        from tensorplay._tensor import _check_device, _is_device
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
        rest = list(args)
        if rest and isinstance(rest[0], Tensor):
            dtype = rest.pop(0).dtype
        elif rest and (rest[0] is None or _is_device(rest[0])):
            device = rest.pop(0)
        if rest and isinstance(rest[0], _dtype.dtype):
            dtype = rest.pop(0)
        if rest and isinstance(rest[0], bool):
            rest.pop(0)
        if rest:
            raise TypeError(f"to() received an invalid combination of arguments: {args!r}")
        if device is not None:
            _check_device(device)
        if dtype is not None:
            dtype = _dtype.as_dtype(dtype, "to")
            if not dtype.is_floating_point:
                raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, "
                                f"but got desired dtype={dtype}")
            return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)
        return self

    def double(self):
        """Cast floating parameters and buffers to float64; returns self."""
        return self.to(_dtype.float64)

    def float(self):
        """Cast floating parameters and buffers to float32; returns self."""
        return self.to(_dtype.float32)

    def type(self, dst_type):
        """Cast all parameters and buffers to ``dst_type``; returns self."""
        d = _dtype.as_dtype(dst_type, "type")
        return self._apply(lambda t: t.to(d))

    def cpu(self):
        """Returns self (tensorplay has only the CPU)."""
        return self

    def cuda(self, device=None):
        """Always raises: tensorplay runs on the CPU only."""
        raise RuntimeError("Module.cuda(): tensorplay runs on the CPU only (tensorplay.cuda."
                           "is_available() is False); keep the module on 'cpu'")

    def half(self):
        """Always raises: tensorplay has no float16 (float32 and float64 only)."""
        raise TypeError("Module.half(): tensorplay has no float16 dtype; use float() or "
                        "double()")

    bfloat16 = half

    # ------------------------------------------------------------ hooks
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """Call ``hook(module, args)`` before ``forward`` (``hook(module, args,
        kwargs)`` with ``with_kwargs``).  A non-None result replaces the inputs: a
        tuple (a single value is wrapped), or ``(args, kwargs)`` with_kwargs.

        Returns:
            a ``RemovableHandle``.
        """
        handle = RemovableHandle(self._forward_pre_hooks,
                                 extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        """Call ``hook(module, args, output)`` after ``forward`` (``hook(module,
        args, kwargs, output)`` with ``with_kwargs``); a non-None result replaces
        the output.  ``always_call``: run it even when forward raised.

        Returns:
            a ``RemovableHandle``.
        """
        handle = RemovableHandle(self._forward_hooks,
                                 extra_dict=[self._forward_hooks_with_kwargs,
                                             self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata)`` after this module's
        entries are saved; a non-None result replaces the dict."""
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys)`` after ``load_state_dict``."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle


def _as_tensor(value):
    """A checkpoint value as a Tensor: Tensors as they are; numpy arrays and
    array-like tensors of other libraries (a torch state_dict's values, through
    ``__array__``) copied into a new Tensor; anything else unchanged (then refused)."""
    if isinstance(value, Tensor) or not hasattr(value, "__array__"):
        return value
    try:
        # (the object's own __array__, called plainly: torch's takes no copy=)
        arr = np.array(value if isinstance(value, np.ndarray) else value.__array__())
    except Exception:                   # noqa: BLE001 -- refused by the caller then
        return value
    if arr.dtype.kind not in "fiub" or arr.dtype == np.float16:
        return value
    if arr.dtype.kind == "u" or arr.dtype == np.int8 or arr.dtype == np.int16:
        arr = arr.astype(np.int64)
    return Tensor._wrap(np.asarray(arr, order="C"))       # (ascontiguousarray makes 0-d 1-d)


def _prefixed_modules(root):
    """``(prefix, module)`` for every module of the tree (``'a.b.'`` style prefixes),
    a module shared under two names once per name, as PyTorch's recursive load)."""
    return [(name + "." if name else "", m)
            for name, m in root.named_modules(remove_duplicate=False)]


def _copy_plan(plan):
    with no_grad():
        for target, src, _ in plan:
            target.copy_(src)


def _assign_plan(root, plan):
    from tensorplay.nn.parameter import Parameter
    by_key = {key: src for _, src, key in plan}
    for prefix, module in _prefixed_modules(root):
        for name in list(module._parameters):
            key = prefix + name
            if key in by_key and module._parameters[name] is not None:
                old = module._parameters[name]
                src = by_key[key]
                module._parameters[name] = (src if isinstance(src, Parameter)
                                            else Parameter(src, old.requires_grad))
        for name in list(module._buffers):
            key = prefix + name
            if key in by_key:
                module._buffers[name] = by_key[key]
