"""Handles for registered hooks (PyTorch's ``torch.utils.hooks``).

A hook lives in an ordinary ``dict`` keyed by its handle's ``id``; hooks run in
the dict's order, which is the order of registration.  ``RemovableHandle``
deletes the entry again.  It holds only a weak reference to the dict, so a
handle does not keep a graph node or a tensor's hooks alive.
"""
import itertools
import weakref

__all__ = ["RemovableHandle"]


class HookDict(dict):
    """A ``dict`` of hooks by handle id (a subclass, as a plain dict cannot be
    referenced weakly)."""
    __slots__ = ("__weakref__",)


class RemovableHandle:
    """A handle that removes the hook it was returned for.

    Args:
        hooks_dict (dict): the hooks, by handle ``id``; must be weakly
            referenceable (``HookDict``, ``collections.OrderedDict``).
        extra_dict (dict or list of dict, optional): further dicts whose entry
            under the same ``id`` is removed too.

    Attributes:
        id (int): unique over the process (``RemovableHandle.next_id`` counts).

    ``remove()`` is idempotent; the handle is also a context manager that removes
    the hook on exit (as PyTorch's).
    """
    next_id = 0
    _ids = itertools.count()

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(RemovableHandle._ids)
        RemovableHandle.next_id = self.id + 1
        if isinstance(extra_dict, dict):
            extra_dict = [extra_dict]
        self.extra_dict_ref = tuple(weakref.ref(d) for d in (extra_dict or ()))

    def remove(self):
        """Remove the hook (no-op when already removed or its owner is gone)."""
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            d = ref()
            if d is not None:
                d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()

    def __repr__(self):
        return f"<RemovableHandle id={self.id}>"


def _add(hooks_dict, fn, what):
    """Register ``fn`` in ``hooks_dict`` and return its handle.

    Raises:
        TypeError: ``fn`` is not callable (PyTorch fails only when the hook runs).
    """
    if not callable(fn):
        raise TypeError(f"{what}: the hook must be callable, got {type(fn).__name__}")
    handle = RemovableHandle(hooks_dict)
    hooks_dict[handle.id] = fn
    return handle
