"""``nn.Module``: the base class of layers and models (PyTorch's ``torch.nn.Module``).

A module keeps three ordered registries in its ``__dict__``: ``_parameters``
(name -> Parameter or None), ``_buffers`` (name -> Tensor or None; names in
``_non_persistent_buffers_set`` stay out of ``state_dict()``) and ``_modules``
(name -> Module or None).  ``__setattr__`` routes Parameters, Buffers and Modules
into them and ``__getattr__`` reads them back, with PyTorch's rules and error
texts.  Everything else (state_dict, hooks, dtype conversion) lives in
``_state.py`` and is mixed in here, to keep each file to one screenful of ideas.
"""
from collections import OrderedDict

from tensorplay._tensor import Tensor
from tensorplay.autograd._inplace import zero_grads
from tensorplay.nn.modules import _hooks
from tensorplay.nn.modules._hooks import (HooksMixin,  # noqa: F401  (torch's home of them)
                                          register_module_forward_hook,
                                          register_module_forward_pre_hook,
                                          register_module_full_backward_hook,
                                          register_module_full_backward_pre_hook)
from tensorplay.nn.modules._state import StateMixin, typename
from tensorplay.nn.parameter import Buffer, Parameter

__all__ = ["Module", "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook"]
_GLOBAL_HOOKS = _hooks.ACTIVE


def _addindent(s, num_spaces):
    """Indent every line of ``s`` but the first by ``num_spaces`` (PyTorch's)."""
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join(num_spaces * " " + line for line in lines)


def _check_name(kind, name, module, registry, module_kind=False):
    """PyTorch's checks on a name given to register_parameter/buffer, add_module."""
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {typename(name)}")
    if "." in name:
        raise KeyError(f"{kind} name can't contain \".\", got: {name}" if module_kind
                       else f"{kind} name can't contain \".\"")
    if name == "":
        raise KeyError(f"{kind} name can't be empty string \"\"")
    if hasattr(module, name) and name not in registry:
        raise KeyError(f"attribute '{name}' already exists")


class Module(HooksMixin, StateMixin):
    """Base class for all neural-network modules (``torch.nn.Module``).

    Subclasses call ``super().__init__()`` first, assign parameters, buffers and
    submodules as attributes, and define ``forward``.  Calling the module runs
    the forward pre-hooks, ``forward`` and the forward hooks; backward hooks
    (``register_full_backward_hook``) wrap the inputs and outputs (modules/_hooks.py).

    Attributes:
        training (bool): True in training mode (the default), False after
            ``eval()``.  Dropout and batch norm read it.
    """
    _version = 1
    training: bool
    call_super_init = False
    dump_patches = False

    def __init__(self, *args, **kwargs):
        if self.call_super_init is False and bool(kwargs):
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword "
                            f"argument '{next(iter(kwargs))}'")
        if self.call_super_init is False and bool(args):
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument "
                            f"but {len(args) + 1} were given")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = {}
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_pre_hooks_with_kwargs"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = OrderedDict()
        d["_forward_hooks_always_called"] = OrderedDict()
        d["_state_dict_hooks"] = OrderedDict()
        d["_load_state_dict_post_hooks"] = OrderedDict()
        d["_backward_pre_hooks"] = OrderedDict()
        d["_backward_hooks"] = OrderedDict()
        d["_is_full_backward_hook"] = None

    def forward(self, *input):
        """The computation; every subclass defines it.

        Raises:
            NotImplementedError: a module that does not define ``forward``.
        """
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  f'"forward" function')

    # ------------------------------------------------------------ registration
    def register_buffer(self, name, tensor, persistent=True):
        """Add a buffer: a tensor that is state but not a parameter (running
        statistics).  ``persistent=False`` keeps it out of ``state_dict()``.

        Raises:
            AttributeError: before ``Module.__init__``.  TypeError: a non-string
            name or a value that is not a Tensor or None.  KeyError: a name with a
            dot, empty, or already another attribute.
        """
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name("buffer", name, self, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{typename(tensor)}' object to buffer '{name}' "
                            f"(tensorplay Tensor or None required)")
        if isinstance(tensor, Buffer):
            persistent = tensor.persistent
            tensor = tensor._unwrap()
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Add a parameter (a ``Parameter``, or None to reserve the name).

        Raises:
            AttributeError: before ``Module.__init__``.  TypeError: a non-string name
            or a value that is not a Parameter or None.  KeyError: a bad or taken
            name.  ValueError: a non-leaf tensor.
        """
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name("parameter", name, self, self._parameters)
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{typename(param)}' object to parameter '{name}' "
                            f"(tensorplay.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly. To express '{name}' "
                             f"as a function of another Tensor, compute the value in the "
                             f"forward() method.")
        self._parameters[name] = param

    def add_module(self, name, module):
        """Add a child module (or None) under ``name``.

        Raises:
            TypeError: ``module`` not a Module or None, a non-string name.
            KeyError: a bad or taken name.
        """
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{typename(module)} is not a Module subclass")
        if "_modules" not in self.__dict__:
            raise AttributeError("cannot assign module before Module.__init__() call")
        _check_name("module", name, self, self._modules, module_kind=True)
        self._modules[name] = module

    def register_module(self, name, module):
        """Alias of ``add_module``."""
        self.add_module(name, module)

    # ------------------------------------------------------------ attributes
    def __getattr__(self, name):
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry in d:
                entries = d[registry]
                if name in entries:
                    return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")

        def remove_from(*dicts_or_sets):
            for s in dicts_or_sets:
                if name in s:
                    if isinstance(s, dict):
                        del s[name]
                    else:
                        s.discard(name)

        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as parameter '{name}' "
                                f"(tensorplay.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = d.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(d, self._parameters, self._buffers,
                            self._non_persistent_buffers_set)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{typename(value)}' as child module "
                                    f"'{name}' (tensorplay.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = d.get("_buffers")
                if isinstance(value, Buffer) or (buffers is not None and name in buffers):
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{typename(value)}' as buffer "
                                        f"'{name}' (tensorplay.nn.Buffer, tensorplay.Tensor "
                                        f"or None expected)")
                    if buffers is None:
                        raise AttributeError("cannot assign buffer before Module.__init__() "
                                             "call")
                    if isinstance(value, Buffer):
                        persistent = value.persistent
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    remove_from(d, self._parameters, self._modules)
                    self.register_buffer(name, value, persistent)
                else:
                    object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = (dir(type(self)) + list(self.__dict__) + list(self._parameters)
                + list(self._modules) + list(self._buffers))
        return sorted(k for k in set(keys) if not k[0].isdigit())

    def __setstate__(self, state):
        self.__dict__.update(state)
        d = self.__dict__           # modules pickled before backward hooks existed
        for name in ("_backward_pre_hooks", "_backward_hooks"):
            if name not in d:
                d[name] = OrderedDict()
        d.setdefault("_is_full_backward_hook", None)

    # ------------------------------------------------------------ traversal
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or v in memo:
                    continue
                if remove_duplicate:
                    memo.add(v)
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def parameters(self, recurse=True):
        """The parameters of this module (and, with ``recurse``, of all
        submodules), each once, in registration order."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """``(name, Parameter)`` pairs, names dotted as in ``state_dict()``
        (``'0.weight'``); a shared parameter appears once unless
        ``remove_duplicate=False``."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def buffers(self, recurse=True):
        """The buffers (persistent or not) of this module and its submodules."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """``(name, Tensor)`` pairs of the buffers."""
        yield from self._named_members(lambda m: m._buffers.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def children(self):
        """The direct submodules (each once)."""
        for _, m in self.named_children():
            yield m

    def named_children(self):
        """``(name, module)`` pairs of the direct submodules (each once)."""
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def modules(self):
        """This module and all its submodules, depth first, each once."""
        for _, m in self.named_modules():
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """``(name, module)`` pairs of this module (name ``prefix``, '' by default)
        and all submodules, depth first."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def get_submodule(self, target):
        """The submodule at dotted path ``target`` ('' is self).

        Raises:
            AttributeError: a path component that does not exist or is not a Module.
        """
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def _get_leaf(self, target, registry, kind):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        if name not in getattr(mod, registry):
            raise AttributeError("`" + name + "` is not " + kind)
        return getattr(mod, name)

    def get_parameter(self, target):
        """The parameter at dotted path ``target`` (``'0.weight'``).

        Raises:
            AttributeError: no such attribute, or not a parameter.
        """
        return self._get_leaf(target, "_parameters", "an nn.Parameter")

    def get_buffer(self, target):
        """The buffer at dotted path ``target``.

        Raises:
            AttributeError: no such attribute, or not a buffer.
        """
        return self._get_leaf(target, "_buffers", "a buffer")

    # ------------------------------------------------------------ modes
    def train(self, mode=True):
        """Set training mode on this module and all submodules; returns self.

        Raises:
            ValueError: ``mode`` is not a bool (PyTorch's type).
        """
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        """``train(False)``; returns self."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Set ``requires_grad`` of every parameter; returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all parameters: to None (default), or, with
        ``set_to_none=False``, to zeros in place (detached first)."""
        zero_grads(self.parameters(), set_to_none)

    def apply(self, fn):
        """Call ``fn(module)`` on every submodule (children first) and self;
        returns self (used to initialise weights)."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------ call
    def __call__(self, *args, **kwargs):
        if not (self._forward_hooks or self._forward_pre_hooks or self._backward_hooks
                or self._backward_pre_hooks or _GLOBAL_HOOKS[0]):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    _call_impl = __call__

    # ------------------------------------------------------------ repr
    def _get_name(self):
        return type(self).__name__

    def extra_repr(self):
        """The text inside the parentheses of ``repr(module)`` (subclasses
        override it; '' here)."""
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = ["(" + key + "): " + _addindent(repr(module), 2)
                       for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"
