"""``Optimizer``: the base class of tensorplay's optimisers (PyTorch's
``torch.optim.Optimizer``).

An optimiser holds ``param_groups`` -- a list of dicts, each with ``"params"`` (a
list of tensors) and that group's options (``lr``, ``weight_decay``, ...) -- and
``state``, a dict from parameter tensor to that parameter's own dict (Adam's
``exp_avg``, SGD's ``momentum_buffer``, ...).  ``step()`` reads each parameter's
``.grad`` and updates the parameter in place; schedulers change ``group["lr"]``
between steps.

How the updates are written: on the tensors' numpy storage (``p._data``), with
numpy's in-place ufuncs on scratch buffers the optimiser keeps (one per dtype,
grown as needed), never through the autograd graph -- so nothing is recorded
whatever the grad mode, and each write bumps the parameter's version counter
(``tensorplay.autograd._inplace.bump``) exactly as an in-place op does, so a
graph that saved the old value raises on backward as in PyTorch.  The arithmetic
follows the order of PyTorch's single-tensor implementations
(``torch/optim/*.py``, the path PyTorch takes on CPU), so float64 trajectories
agree with PyTorch's to round-off.

``state_dict()`` has PyTorch's format: ``{"state": {index: {...}}, "param_groups":
[{..., "params": [index, ...]}]}`` with parameters numbered in group order, so it
round-trips through ``tensorplay.save``/``load``.
"""
import functools
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain

import numpy as np

from tensorplay._tensor import Tensor
from tensorplay.autograd._inplace import zero_grads
from tensorplay.autograd.grad_mode import enable_grad
from tensorplay.utils.hooks import RemovableHandle

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """Singleton marking a default that each param group must give (PyTorch's
    ``torch.optim.optimizer.required``)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()

_GLOBAL_PRE_HOOKS = OrderedDict()
_BLOCK = 1 << 16            # elements per block of an update (Optimizer._run_blocked)
_GLOBAL_POST_HOOKS = OrderedDict()


def register_optimizer_step_pre_hook(hook):
    """Register ``hook(optimizer, args, kwargs)`` to run before every optimiser's
    ``step``; it may return ``(new_args, new_kwargs)``.  Returns a handle whose
    ``remove()`` unregisters it (PyTorch's global optimiser hook)."""
    handle = RemovableHandle(_GLOBAL_PRE_HOOKS)
    _GLOBAL_PRE_HOOKS[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook):
    """Register ``hook(optimizer, args, kwargs)`` to run after every optimiser's
    ``step``.  Returns a removable handle."""
    handle = RemovableHandle(_GLOBAL_POST_HOOKS)
    _GLOBAL_POST_HOOKS[handle.id] = hook
    return handle


def _with_hooks(step):
    """Wrap a subclass's ``step`` so that the step pre/post hooks run around it."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        if self.__dict__.get("_in_step"):       # super().step() of an overriding step
            return step(self, *args, **kwargs)
        self._in_step = True
        try:
            return _run_hooked(step, self, args, kwargs)
        finally:
            self._in_step = False
    wrapper._tp_hooked = True
    return wrapper


def _run_hooked(step, self, args, kwargs):
    for hook in chain(_GLOBAL_PRE_HOOKS.values(), self._optimizer_step_pre_hooks.values()):
        result = hook(self, args, kwargs)
        if result is not None:
            if isinstance(result, tuple) and len(result) == 2:
                args, kwargs = result
            else:
                raise RuntimeError(f"{hook} must return None or a tuple of "
                                   f"(new_args, new_kwargs), but got {result}.")
    out = step(self, *args, **kwargs)
    self._opt_called = True
    for hook in chain(self._optimizer_step_post_hooks.values(), _GLOBAL_POST_HOOKS.values()):
        hook(self, args, kwargs)
    return out


def _typename(obj):
    if isinstance(obj, Tensor):
        return "tensorplay.Tensor"
    t = type(obj)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


class Optimizer:
    r"""Base class for all optimisers (PyTorch's ``torch.optim.Optimizer``).

    Args:
        params (iterable): tensors to optimise, or dicts defining parameter groups
            (each with a ``"params"`` entry and per-group options overriding
            ``defaults``), or ``(name, tensor)`` pairs (``named_parameters()``;
            the names are kept in the group's ``"param_names"``).
        defaults (dict): default option values for every group.

    Attributes:
        param_groups (list of dict): mutable; schedulers change ``"lr"`` there.
        state (defaultdict): per-parameter state, keyed by the parameter tensor.
        defaults (dict): the defaults given.

    Raises:
        TypeError: ``params`` is a single Tensor (or a set), or holds something
            that is not a Tensor.
        ValueError: an empty parameter list; a non-leaf tensor; a parameter in
            two groups; a group without a required option.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_tp_hooked", False):
            cls.step = _with_hooks(step)

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        self._scratch = {}
        self._opt_called = False
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable "
                            "of Tensors or dicts, but got " + _typename(params))
        if isinstance(params, (set, frozenset)):
            raise TypeError("optimizer parameters need to be organized in ordered "
                            "collections, but the ordering of tensors in sets will change "
                            "between runs. Please use a list instead.")
        try:
            param_groups = list(params)
        except TypeError:
            raise TypeError("params argument given to the optimizer should be an iterable "
                            "of Tensors or dicts, but got " + _typename(params)) from None
        self.state = defaultdict(dict)
        self.param_groups = []
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    # ------------------------------------------------------------ pickling
    def __getstate__(self):
        d = dict(self.__dict__)
        d.pop("_scratch", None)
        return d

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self._scratch = {}
        self.__dict__.setdefault("_opt_called", False)
        self.defaults.setdefault("differentiable", False)

    def __repr__(self):
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    # ------------------------------------------------------------ groups
    def add_param_group(self, param_group):
        """Add a parameter group (a dict with ``"params"`` and optional options;
        missing options take ``defaults``).  Useful when fine-tuning: unfreeze
        layers and add them to the optimiser.

        Raises:
            TypeError: ``param_group`` is not a dict; params in a set; a param
                that is not a Tensor.
            ValueError: a non-leaf tensor; a parameter already in another group;
                a missing required option; mixing named and unnamed groups.
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        if "params" not in param_group:
            raise ValueError("param_group must have a 'params' entry (the tensors of "
                             "the group)")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, (set, frozenset)):
            raise TypeError("optimizer parameters need to be organized in ordered "
                            "collections, but the ordering of tensors in sets will change "
                            "between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple) and len(param) == 2 and not isinstance(param[0], Tensor):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) == len(tensors):
                param_group["param_names"] = names
            else:
                raise ValueError("all optimizer params should be with/without names. Some "
                                 "param names are missing")

        for param in tensors:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params "
                                "is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (
                    param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)

        ids = [id(p) for p in tensors]
        if len(ids) != len(set(ids)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; "
                          "in future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)

        seen = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                txt = "with names" if "param_names" in param_group else "without names"
                raise ValueError(f"all optimizer param groups should be with/without names. "
                                 f"cannot add param group {txt} to the optimizer")
        if not seen.isdisjoint(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ------------------------------------------------------------ grads
    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all optimised tensors.

        Args:
            set_to_none (bool): set ``.grad`` to None (default, PyTorch's) instead of
                zeroing it in place; the next ``backward()`` then allocates it anew.
        """
        zero_grads(chain.from_iterable(g["params"] for g in self.param_groups), set_to_none)

    def step(self, closure=None):
        """Perform one optimisation step (subclasses implement it).

        Args:
            closure (callable, optional): re-evaluates the model and returns the loss.
        """
        raise NotImplementedError(f"{type(self).__name__}.step() is not implemented")

    # ------------------------------------------------------------ hooks
    def register_step_pre_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` runs before ``step``; it may return
        ``(new_args, new_kwargs)``.  Returns a handle with ``remove()``."""
        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` runs after ``step``.  Returns a handle."""
        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """``hook(optimizer)`` runs before ``state_dict()`` builds its result."""
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """``hook(optimizer, state_dict)`` runs after ``state_dict()``; it may
        return a new state dict."""
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """``hook(optimizer, state_dict)`` runs before ``load_state_dict``; it may
        return a new state dict to load."""
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """``hook(optimizer)`` runs after ``load_state_dict``."""
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    @staticmethod
    def _register(hooks, hook, prepend):
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    # ------------------------------------------------------------ state dict
    def state_dict(self):
        """The optimiser's state as a dict, in PyTorch's format.

        Returns:
            dict: ``"state"`` maps each parameter's index (counting through the
            groups in order) to its state dict (the state's tensors themselves,
            not copies, as in PyTorch); ``"param_groups"`` is a list of the groups'
            options with ``"params"`` replaced by the list of indices.
        """
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        mapping = {}
        start = 0

        def pack_group(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict):
        """Load a state dict made by ``state_dict()`` (of an optimiser of the same
        type over parameters of the same shapes, groups in the same order).

        The state's tensors are copied (cast to each parameter's dtype; the
        scalar state -- ``step``, NAdam's ``mu_product``, ASGD's ``eta`` and ``mu``
        -- kept as it is, where PyTorch keeps only ``step``), so the loaded
        optimiser never shares state with the one the dict came from -- PyTorch
        shares them when nothing needs a cast.

        Every state tensor kept per element (``exp_avg``, ``momentum_buffer``, ...)
        must be a floating tensor of its parameter's shape, and every scalar state
        (``step``, ...) a number or a one-element tensor; this is checked before
        anything is changed (PyTorch checks neither, and fails at ``step()``).

        Raises:
            ValueError: a different number of parameter groups, or a group of a
                different size (PyTorch's messages); a state tensor whose shape or
                dtype does not fit its parameter (the message names the group,
                the parameter's index in it, the state key, expected and given).
                Nothing is changed then.
            TypeError: ``state_dict`` is not a dict with ``"state"`` and
                ``"param_groups"``.
        """
        if not isinstance(state_dict, dict) or "state" not in state_dict \
                or "param_groups" not in state_dict:
            raise TypeError(f"{type(self).__name__}.load_state_dict(): expected a dict with "
                            f"'state' and 'param_groups' (from state_dict()), got "
                            f"{type(state_dict).__name__}")
        state_dict = state_dict.copy()
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        param_lens = (len(g["params"]) for g in groups)
        saved_lens = (len(g["params"]) for g in saved_groups)
        if any(p_len != s_len for p_len, s_len in zip(param_lens, saved_lens)):
            raise ValueError("loaded state dict contains a parameter group that doesn't "
                             "match the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        saved_state = state_dict["state"]
        for gi, (group, saved) in enumerate(zip(groups, saved_groups)):
            for j, (param, k) in enumerate(zip(group["params"], saved["params"])):
                if k in saved_state:
                    self._check_loaded_state(gi, j, param, saved_state[k])

        def cast(param, value, key=None):
            if key in self._scalar_state and isinstance(value, (int, float, np.number)):
                return Tensor._wrap(np.array(value, np.float32))   # PyTorch's __setstate__
            if isinstance(value, Tensor):
                if key not in self._scalar_state and param.is_floating_point() \
                        and value.is_floating_point():
                    if value._data.dtype != param._data.dtype:
                        return value.detach().to(param.dtype)
                return value.detach().clone()
            if isinstance(value, dict):
                return {k: cast(param, v, key=k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v) for v in value)
            return deepcopy(value)

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = cast(param, v)
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)

    # ------------------------------------------------------------ helpers
    _state_keys = ()            # state tensors shaped like their parameter
    _scalar_state = ("step",)   # state kept as a 0-d float32 tensor

    def _check_loaded_state(self, gi, j, param, state):
        """Check one parameter's loaded state against the parameter (see
        ``load_state_dict``); ``gi``, ``j``: group index, index in the group."""
        where = (f"{type(self).__name__}.load_state_dict(): param_groups[{gi}] "
                 f"parameter {j}, state")
        if not isinstance(state, dict):
            raise ValueError(f"{where}: expected a dict of state, got "
                             f"{type(state).__name__}")
        for key, value in state.items():
            if key in self._state_keys and value is not None:
                if not isinstance(value, Tensor):
                    raise ValueError(f"{where} {key!r}: expected a Tensor of shape "
                                     f"{tuple(param.shape)}, got {type(value).__name__}")
                if tuple(value.shape) != tuple(param.shape):
                    raise ValueError(f"{where} {key!r}: expected shape "
                                     f"{tuple(param.shape)} (the parameter's), got "
                                     f"{tuple(value.shape)}")
                if not value.is_floating_point():
                    raise ValueError(f"{where} {key!r}: expected a floating dtype (the "
                                     f"parameter's is {param.dtype}), got {value.dtype}")
            elif key in self._scalar_state:
                ok = (isinstance(value, Tensor) and value.numel() == 1) or (
                    isinstance(value, (int, float, np.number)) and not isinstance(value, bool))
                if not ok:
                    given = (f"a Tensor of shape {tuple(value.shape)}"
                             if isinstance(value, Tensor) else type(value).__name__)
                    raise ValueError(f"{where} {key!r}: expected a number or a "
                                     f"one-element Tensor, got {given}")

    def _buffer(self, k, like):
        """Scratch array ``k`` shaped and typed like the ndarray ``like`` (a view of
        one flat buffer per (k, dtype), grown as needed and reused across
        parameters and steps: a fresh array per step costs page faults)."""
        key = (k, like.dtype)
        buf = self._scratch.get(key)
        n = like.size
        if buf is None or buf.size < n:
            buf = np.empty(max(n, 1), like.dtype)
            self._scratch[key] = buf
        return buf[:n].reshape(like.shape)

    def _run_blocked(self, kernel, arrays, nscratch, *args):
        """``kernel(*arrays, *scratch, *args)``, over blocks of ``_BLOCK`` elements
        when every array is C-contiguous (``None`` entries are passed through).

        The update is elementwise, so running it block by block gives the same
        numbers; a block's temporaries stay in cache, so the dozen numpy passes
        of an update cost about one pass over main memory (measured: 0.65x the
        time of whole-array passes at 1M float32 elements).
        """
        first = arrays[0]
        n = first.size
        if n <= _BLOCK or not all(a is None or a.flags.c_contiguous for a in arrays):
            kernel(*arrays, *[self._buffer(k, first) for k in range(nscratch)], *args)
            return
        flat = [None if a is None else a.reshape(-1) for a in arrays]
        scratch = [self._buffer(k, first.reshape(-1)[:_BLOCK]) for k in range(nscratch)]
        for start in range(0, n, _BLOCK):
            stop = min(start + _BLOCK, n)
            kernel(*[None if a is None else a[start:stop] for a in flat],
                   *[b[:stop - start] for b in scratch], *args)

    def _closure_loss(self, closure, name):
        """Run the closure (grad mode on), then check that every parameter to be
        updated can be written -- before anything is (no half-updated model)."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    _writable(p, name)
        return loss


def _writable(p, name):
    """Check that parameter ``p``'s storage can be written (before any write)."""
    if not p._data.flags.writeable:
        raise RuntimeError(f"{name}.step(): a parameter's storage is read-only (a broadcast "
                           f"view made by expand(), or a read-only ndarray); clone() it "
                           f"before optimising it")



def _value(x):
    """A hyper-parameter as a Python float (a 1-element Tensor ``lr`` is allowed,
    as in PyTorch)."""
    if isinstance(x, Tensor):
        return float(x.item())
    return x


def _check_lr(lr):
    """PyTorch's learning-rate checks (``Invalid learning rate: -1``)."""
    if isinstance(lr, Tensor):
        if lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        lr_value = lr.item()
    else:
        lr_value = lr
    if isinstance(lr_value, bool) or not isinstance(lr_value, (int, float, np.floating,
                                                               np.integer)):
        raise TypeError(f"lr must be a float or a 1-element Tensor, got "
                        f"{type(lr).__name__}")
    if not 0.0 <= lr_value:
        raise ValueError(f"Invalid learning rate: {lr}")


def _check_nonneg(value, what):
    """``Invalid <what>: <value>`` (PyTorch's text) for a negative or nan number."""
    if not 0.0 <= value:
        raise ValueError(f"Invalid {what}: {value}")


def _check_differentiable(name, differentiable):
    """The implementation switches PyTorch's optimisers take.  ``foreach``,
    ``fused`` and ``capturable`` select kernels of the same math in PyTorch and
    are accepted and kept in the group (tensorplay has one implementation);
    ``differentiable=True`` (a step the graph records) is not supported."""
    if differentiable:
        raise NotImplementedError(f"{name}(differentiable=True): tensorplay's optimisers "
                                  f"update parameters outside the autograd graph; a "
                                  f"differentiable step is not supported")


def _grads(group):
    """The (param, param ndarray, grad ndarray) of a group's parameters that have
    a gradient."""
    return [(p, p._data, p.grad._data) for p in group["params"] if p.grad is not None]
