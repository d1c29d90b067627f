"""Module hooks around the forward call: forward pre-hooks and forward hooks (per
module and global), and backward hooks, PyTorch's ``torch.nn.Module`` semantics.

Backward hooks (``register_full_backward_hook``, ``register_full_backward_pre_hook``)
work as PyTorch's ``torch.utils.hooks.BackwardHook``: the call wraps the module's
positional Tensor inputs, and then its Tensor outputs, each in one identity
``autograd.Function`` (``_BackwardHookFunction``).  In the backward pass the output
wrapper's node receives the gradients w.r.t. the outputs (``grad_output``): the
pre-hooks run there and may replace them.  The input wrapper's node receives the
gradients w.r.t. the inputs (``grad_input``) once everything inside the module
has run: the full hooks run there, once per pass, and may replace them.  Entries
are None for arguments that are not Tensors; a Tensor input that does not require
grad (or gets none) shows zeros, as PyTorch's materialised cotangents.  When no
input requires grad, the full hooks run at the output wrapper with ``grad_input``
all None (and PyTorch's UserWarning).  As in PyTorch, the outputs are views made by a custom Function, so an
in-place op on them raises.

Global hooks (``register_module_forward_pre_hook``, ``register_module_forward_hook``,
``register_module_full_backward_pre_hook``, ``register_module_full_backward_hook``)
run for every module, before the module's own hooks.
"""
import warnings
from collections import OrderedDict

from tensorplay._tensor import Tensor
from tensorplay.autograd.function import Function
from tensorplay.autograd.grad_mode import STATE
from tensorplay.utils.hooks import RemovableHandle

__all__ = ["register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook",
           "HooksMixin"]

_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()
_global_forward_hooks_with_kwargs = OrderedDict()
_global_forward_hooks_always_called = OrderedDict()
_global_backward_pre_hooks = OrderedDict()
_global_backward_hooks = OrderedDict()
# one flag the fast path of Module.__call__ reads: any global hook registered
ACTIVE = [False]


def _refresh():
    ACTIVE[0] = bool(_global_forward_pre_hooks or _global_forward_hooks
                     or _global_backward_pre_hooks or _global_backward_hooks)


class _GlobalHandle(RemovableHandle):
    def remove(self):
        super().remove()
        _refresh()


def _callable(hook, what):
    if not callable(hook):
        raise TypeError(f"{what}: the hook must be callable, got {type(hook).__name__}")


def register_module_forward_pre_hook(hook):
    """``hook(module, args)`` before every module's forward (before its own
    pre-hooks); a non-None result replaces the inputs.  Returns a RemovableHandle."""
    _callable(hook, "register_module_forward_pre_hook()")
    handle = _GlobalHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = hook
    _refresh()
    return handle


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """``hook(module, args, output)`` (``hook(module, args, kwargs, output)`` with
    ``with_kwargs``) after every module's forward, before its own forward hooks; a
    non-None result replaces the output.  Returns a RemovableHandle."""
    _callable(hook, "register_module_forward_hook()")
    handle = _GlobalHandle(_global_forward_hooks,
                           extra_dict=[_global_forward_hooks_with_kwargs,
                                       _global_forward_hooks_always_called])
    _global_forward_hooks[handle.id] = hook
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    _refresh()
    return handle


def register_module_full_backward_pre_hook(hook):
    """``Module.register_full_backward_pre_hook`` for every module (run before the
    module's own).  Returns a RemovableHandle."""
    _callable(hook, "register_module_full_backward_pre_hook()")
    handle = _GlobalHandle(_global_backward_pre_hooks)
    _global_backward_pre_hooks[handle.id] = hook
    _refresh()
    return handle


def register_module_full_backward_hook(hook):
    """``Module.register_full_backward_hook`` for every module (run before the
    module's own).  Returns a RemovableHandle."""
    _callable(hook, "register_module_full_backward_hook()")
    handle = _GlobalHandle(_global_backward_hooks)
    _global_backward_hooks[handle.id] = hook
    _refresh()
    return handle


# ---------------------------------------------------------------- backward hooks
class _BackwardHookFunction(Function):
    """Identity on its Tensor arguments; ``backward`` hands the cotangents to the
    ``_BackwardHook`` that made it (``side``: "in" or "out")."""

    @staticmethod
    def forward(ctx, bw, side, *tensors):
        ctx.set_materialize_grads(False)
        ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
        ctx.bw, ctx.side = bw, side
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        bw = ctx.bw
        grads = bw.on_outputs(grads) if ctx.side == "out" else bw.on_inputs(grads)
        return (None, None) + tuple(grads)

    @staticmethod
    def jvp(ctx, bw, side, *tangents):
        return tangents


def _pack(index, values, n):
    out = [None] * n
    for i, v in zip(index, values):
        out[i] = v
    return tuple(out)


class _BackwardHook:
    """The backward hooks of one module call (PyTorch's ``BackwardHook``)."""

    def __init__(self, module, hooks, pre_hooks):
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.grad_outputs = None
        self.n_inputs = 0
        self.input_index = None
        self.n_outputs = 0
        self.output_index = None
        self.input_meta = ()

    def _wrap(self, values, side):
        """The Tensors of ``values`` (a tuple) through the identity Function, when
        grad mode is on and one of them requires grad; (values, index or None)."""
        index = [i for i, v in enumerate(values) if isinstance(v, Tensor)]
        if not (STATE.grad_enabled and any(values[i].requires_grad for i in index)):
            return values, None
        if side == "in":        # for the zeros PyTorch's materialised cotangents give
            self.input_meta = [(values[i].shape, values[i].dtype) for i in index]
        new = _BackwardHookFunction.apply(self, side, *[values[i] for i in index])
        out = list(values)
        for i, t in zip(index, new):
            out[i] = t
        return tuple(out), index

    def setup_input(self, args):
        self.n_inputs = len(args)
        args, self.input_index = self._wrap(args, "in")
        return args

    def setup_output(self, result):
        is_tuple = isinstance(result, tuple)
        if not (is_tuple or isinstance(result, Tensor)):
            warnings.warn(f"For backward hooks to be called, module output should be a Tensor "
                          f"or a tuple of Tensors but received {type(result)}",
                          UserWarning, stacklevel=4)
            return result
        values = result if is_tuple else (result,)
        self.n_outputs = len(values)
        values, self.output_index = self._wrap(values, "out")
        return values if is_tuple else values[0]

    def on_outputs(self, grads):
        grad_outputs = _pack(self.output_index, grads, self.n_outputs)
        for hook in self.pre_hooks:
            res = hook(self.module, grad_outputs)
            if res is None:
                continue
            grad_outputs = _checked(hook, res, grad_outputs, "pre")
        if self.input_index is None:         # no input requires grad: run them now
            if self.hooks:
                warnings.warn("Full backward hook is firing when gradients are computed "
                              "with respect to module outputs since no inputs require "
                              "gradients. See the documentation of "
                              "Module.register_full_backward_hook for more details.",
                              UserWarning, stacklevel=2)
            grad_inputs = (None,) * self.n_inputs
            for hook in self.hooks:
                res = hook(self.module, grad_inputs, grad_outputs)
                if res is not None and not all(r is None for r in _as_tuple(res)):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
            self.grad_outputs = None
        else:
            self.grad_outputs = grad_outputs
        return [grad_outputs[i] for i in self.output_index]

    def on_inputs(self, grads):
        if self.grad_outputs is None:
            # the gradient reached the inputs without passing through the outputs
            # (a second backward through the module's inside): PyTorch skips the hooks
            return grads
        # PyTorch's wrapper materialises missing cotangents: a Tensor input that
        # does not require grad (or got none) shows zeros, not None
        import tensorplay
        grads = [tensorplay.zeros(shape, dtype=dtype) if g is None else g
                 for g, (shape, dtype) in zip(grads, self.input_meta)]
        grad_inputs = _pack(self.input_index, grads, self.n_inputs)
        for hook in self.hooks:
            res = hook(self.module, grad_inputs, self.grad_outputs)
            if res is None:
                continue
            grad_inputs = _checked(hook, res, grad_inputs, "full")
        self.grad_outputs = None
        return [grad_inputs[i] for i in self.input_index]


def _as_tuple(res):
    return tuple(res) if isinstance(res, (tuple, list)) else (res,)


def _checked(hook, res, ref, what):
    """A hook's non-None result as a tuple, checked as PyTorch checks it: a tuple
    (not a bare Tensor) as long as ``ref``, each Tensor of its entry's shape and
    dtype."""
    if not isinstance(res, (tuple, list)):
        raise RuntimeError(f"Backward {'pre ' if what == 'pre' else ''}hook must return None or a tuple of "
                           f"{len(ref)} gradient(s), got {type(res).__name__} (wrap a "
                           f"single gradient as (grad,))")
    res = tuple(res)
    if len(res) != len(ref):
        kind = "grad_output" if what == "pre" else "grad_input"
        raise RuntimeError(f"Backward {'pre ' if what == 'pre' else ''}hook returned an "
                           f"invalid number of {kind}, got {len(res)}, but expected "
                           f"{len(ref)}")
    name = getattr(hook, "__name__", repr(hook))
    for new, old in zip(res, ref):
        if isinstance(new, Tensor) and isinstance(old, Tensor):
            if tuple(new.shape) != tuple(old.shape):
                raise RuntimeError(f"hook '{name}' has changed the size of value (was "
                                   f"{list(old.shape)}, got {list(new.shape)})")
            if new.dtype != old.dtype:
                raise RuntimeError(f"hook '{name}' has changed the type of value (was "
                                   f"{old.dtype}, got {new.dtype})")
    return res


class HooksMixin:
    """Backward-hook registration and the hooked call, mixed into ``Module``."""

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """Call ``hook(module, grad_output)`` when the gradients w.r.t. the module's
        outputs are computed, before those w.r.t. its inputs.  ``grad_output`` is a
        tuple, one entry per output (None for a non-Tensor output or one without a
        gradient); a non-None result (a tuple of the same length) replaces it.
        ``prepend``: run it before the hooks registered so far.

        Returns:
            a ``RemovableHandle``.
        Raises:
            TypeError: ``hook`` not callable.
        """
        _callable(hook, "register_full_backward_pre_hook()")
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """Call ``hook(module, grad_input, grad_output)`` once per backward pass,
        when the gradients w.r.t. the module's positional inputs are computed.
        ``grad_input`` has one entry per positional argument (None for non-Tensors
        and inputs that do not require grad), ``grad_output`` one per output; a
        non-None result (a tuple as long as ``grad_input``) replaces the input
        gradients that flow on.  Keyword arguments get no gradient entry.

        Returns:
            a ``RemovableHandle``.
        Raises:
            RuntimeError: the module has ``register_backward_hook`` hooks (PyTorch:
            one kind per module).  TypeError: ``hook`` not callable.
        """
        _callable(hook, "register_full_backward_hook()")
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward "
                               "hooks on a single Module. Please use only one of them.")
        self._is_full_backward_hook = True
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook):
        """Deprecated (as in PyTorch): runs ``hook`` as ``register_full_backward_hook``
        does, with a FutureWarning.  PyTorch's old hook sees the gradients of the
        last autograd node's inputs (for ``Linear``: bias, input and weight), which
        depends on how forward is written; tensorplay gives the documented full-hook
        ``grad_input`` instead.

        Raises:
            RuntimeError: the module has full backward hooks (PyTorch's rule).
        """
        _callable(hook, "register_backward_hook()")
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward "
                               "hooks on a single Module. Please use only one of them.")
        warnings.warn("Module.register_backward_hook() is deprecated: tensorplay runs the "
                      "hook as register_full_backward_hook() does (grad_input w.r.t. the "
                      "module's inputs, not the last op's); use "
                      "register_full_backward_hook().", FutureWarning, stacklevel=2)
        self._is_full_backward_hook = False
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        return handle

    def _call_with_hooks(self, args, kwargs):
        pre = list(_global_forward_pre_hooks.items()) + list(self._forward_pre_hooks.items())
        for hook_id, hook in pre:
            if hook_id in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if isinstance(result, tuple) and len(result) == 2:
                        args, kwargs = result
                    else:
                        raise RuntimeError(f"forward pre-hook must return None or a tuple "
                                           f"of (new_args, new_kwargs), but got {result}.")
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        bw = None
        bw_hooks = list(_global_backward_hooks.values()) + list(self._backward_hooks.values())
        bw_pre = (list(_global_backward_pre_hooks.values())
                  + list(self._backward_pre_hooks.values()))
        if bw_hooks or bw_pre:
            bw = _BackwardHook(self, bw_hooks, bw_pre)
            args = bw.setup_input(args)
        with_kwargs = (_global_forward_hooks_with_kwargs, self._forward_hooks_with_kwargs)
        always = (_global_forward_hooks_always_called, self._forward_hooks_always_called)
        post = list(_global_forward_hooks.items()) + list(self._forward_hooks.items())
        called = set()
        try:
            result = self.forward(*args, **kwargs)
            for hook_id, hook in post:
                called.add(hook_id)
                if hook_id in with_kwargs[0] or hook_id in with_kwargs[1]:
                    hook_result = hook(self, args, kwargs, result)
                else:
                    hook_result = hook(self, args, result)
                if hook_result is not None:
                    result = hook_result
        except Exception:
            for hook_id, hook in post:
                if (hook_id in always[0] or hook_id in always[1]) and hook_id not in called:
                    try:
                        if hook_id in with_kwargs[0] or hook_id in with_kwargs[1]:
                            hook(self, args, kwargs, None)
                        else:
                            hook(self, args, None)
                    except Exception:
                        pass
            raise
        if bw is not None:
            result = bw.setup_output(result)
        return result
