"""``functional_call``: run a module with some parameters and buffers replaced by
given tensors, without changing the module (PyTorch's ``torch.func.functional_call``,
also ``torch.nn.utils.stateless.functional_call``).  With it, ``tensorplay.func``
transforms (``grad``, ``vmap``, ``jacrev``) apply to a module's forward as a
function of its parameters."""
import contextlib

from tensorplay._tensor import Tensor

__all__ = ["functional_call"]


def _owner(module, name):
    path, _, leaf = name.rpartition(".")
    return module.get_submodule(path), leaf


@contextlib.contextmanager
def _swapped(module, values, tie_weights, strict):
    names = {}                          # name -> (owner module, registry, leaf)
    for name, t in module.named_parameters(remove_duplicate=False):
        owner, leaf = _owner(module, name)
        names[name] = (owner, "_parameters", leaf, t)
    for name, t in module.named_buffers(remove_duplicate=False):
        owner, leaf = _owner(module, name)
        names[name] = (owner, "_buffers", leaf, t)
    unexpected = [k for k in values if k not in names]
    missing = [k for k in names if k not in values]
    if unexpected or (strict and missing):
        parts = []
        if unexpected:
            parts.append("Unexpected key(s): " + ", ".join(repr(k) for k in unexpected) + ".")
        if strict and missing:
            parts.append("Missing key(s): " + ", ".join(repr(k) for k in missing) + ".")
        raise RuntimeError("Error(s) in reparametrizing for "
                           f"{type(module).__name__}:\n\t" + "\n\t".join(parts))
    for k, v in values.items():
        if not isinstance(v, Tensor):
            raise TypeError(f"functional_call(): the value for {k!r} must be a Tensor, not "
                            f"{type(v).__name__}")
    new = dict(values)
    if tie_weights:                     # a tensor shared under several names: all of them
        by_id = {id(names[k][3]): v for k, v in values.items() if names[k][3] is not None}
        for k, (_, _, _, t) in names.items():
            if k not in new and t is not None and id(t) in by_id:
                new[k] = by_id[id(t)]
    saved = []
    try:
        for k, v in new.items():
            owner, registry, leaf, _ = names[k]
            reg = owner.__dict__[registry]
            saved.append((reg, leaf, reg[leaf]))
            reg[leaf] = v
        yield
    finally:
        for reg, leaf, old in reversed(saved):
            reg[leaf] = old


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with the named parameters/buffers replaced.

    Args:
        module (nn.Module): the module; it is restored afterwards (also on error).
        parameter_and_buffer_dicts (dict or tuple of dicts): dotted name (as in
            ``named_parameters()``) -> Tensor (any tensor: it need not be a
            Parameter, and may carry autograd history or be batched by vmap).
        args: a single positional argument or a tuple of them.
        kwargs (dict, optional): keyword arguments.
        tie_weights (bool): a tensor shared under several names is replaced under
            all of them when one is given (default True, as PyTorch).
        strict (bool): every parameter and buffer must be given.

    Returns:
        what ``module`` returns.

    Raises:
        RuntimeError: a name that is not a parameter or buffer of the module (or,
        with ``strict``, one missing); a name given in two dicts.
        TypeError: a value that is not a Tensor.
    """
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, dict):
        values = dicts
    else:
        values = {}
        for d in dicts:
            for k, v in d.items():
                if k in values:
                    raise RuntimeError(f"{k!r} appeared in multiple dictionaries; behavior "
                                       f"of functional call is ambiguous")
                values[k] = v
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _swapped(module, values, tie_weights, strict):
        return module(*args, **(kwargs or {}))
