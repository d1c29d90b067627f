"""A small pytree: nested tuples, lists, namedtuples and dicts of leaves.

``tensorplay.func`` takes and returns such trees (torch.func and JAX do the same).
Only these containers are nodes; everything else (Tensors, numbers, None, ...) is
a leaf.  Dicts keep their insertion order, as ``torch.utils._pytree`` does (JAX
sorts the keys instead).
"""
__all__ = ["TreeSpec", "tree_flatten", "tree_unflatten", "tree_map"]


class TreeSpec:
    """The structure of a pytree without its leaves.

    ``kind`` is None for a leaf, else the container type (tuple, list, dict or a
    namedtuple class); ``context`` the dict keys; ``children`` one spec per child.
    Two specs are equal when the trees have the same shape.
    """
    __slots__ = ("kind", "context", "children", "num_leaves")

    def __init__(self, kind, context, children):
        self.kind = kind
        self.context = context
        self.children = children
        self.num_leaves = 1 if kind is None else sum(c.num_leaves for c in children)

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and self.kind is other.kind
                and self.context == other.context and self.children == other.children)

    def __hash__(self):
        return hash((self.kind, self.context, self.children))

    def __repr__(self):
        if self.kind is None:
            return "*"
        inner = ", ".join(repr(c) for c in self.children)
        if self.kind is dict:
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.context, self.children))
            return "{" + inner + "}"
        if self.kind is list:
            return "[" + inner + "]"
        if self.kind is tuple:
            return "(" + inner + ("," if len(self.children) == 1 else "") + ")"
        return f"{self.kind.__name__}({inner})"


_LEAF = TreeSpec(None, None, ())


def _is_namedtuple(t):
    return issubclass(t, tuple) and hasattr(t, "_fields")


def tree_flatten(tree):
    """``(leaves, spec)``: the leaves in depth-first order and the structure.

    Examples:
        >>> tree_flatten((a, {"w": b, "v": [c]}))
        ([a, b, c], ({'w': *, 'v': [*]},))
    """
    leaves = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree, leaves):
    t = type(tree)
    if t is tuple or t is list:
        return TreeSpec(t, None, tuple(_flatten(c, leaves) for c in tree))
    if t is dict:
        keys = tuple(tree)
        return TreeSpec(dict, keys, tuple(_flatten(tree[k], leaves) for k in keys))
    if isinstance(tree, tuple) and _is_namedtuple(t):
        return TreeSpec(t, None, tuple(_flatten(c, leaves) for c in tree))
    leaves.append(tree)
    return _LEAF


def tree_unflatten(leaves, spec):
    """The tree of structure ``spec`` holding ``leaves`` (inverse of ``tree_flatten``).

    Raises:
        ValueError: when the number of leaves differs from ``spec.num_leaves``.
    """
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"tree_unflatten(): the spec has {spec.num_leaves} leaves but "
                         f"{len(leaves)} were given")
    it = iter(leaves)
    return _unflatten(it, spec)


def _unflatten(it, spec):
    kind = spec.kind
    if kind is None:
        return next(it)
    children = [_unflatten(it, c) for c in spec.children]
    if kind is dict:
        return dict(zip(spec.context, children))
    if kind is tuple or kind is list:
        return kind(children)
    return kind(*children)          # a namedtuple


def tree_map(fn, tree):
    """The tree with every leaf replaced by ``fn(leaf)``."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)
