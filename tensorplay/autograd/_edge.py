"""``GradientEdge`` and ``get_gradient_edge`` (PyTorch's
``torch.autograd.graph`` names, re-exported by ``tensorplay.autograd.graph``), and
the graph key ``autograd.grad``/``backward`` use for an edge."""
from tensorplay.autograd.graph import AccumulateGrad, MultiNode, Node, _output_nr, node_key



def _edge_base():
    import collections
    return collections.namedtuple("GradientEdge", ["node", "output_nr", "ownership_token"],
                                  defaults=[None])


class GradientEdge(_edge_base()):
    """An edge of the graph: output ``output_nr`` of ``node`` (PyTorch's
    ``torch.autograd.graph.GradientEdge``, a named tuple).

    ``node`` is a ``Node`` (a non-leaf's ``grad_fn``) or an ``AccumulateGrad``
    (a leaf).  ``autograd.grad(outputs=..., inputs=...)`` and
    ``backward(inputs=...)`` accept edges where they accept tensors: the gradient
    w.r.t. an edge is what flows into it, even after the tensor it was taken from
    has been modified in place (the edge remembers the node, not the tensor).
    ``ownership_token`` is accepted for PyTorch compatibility and unused.
    """
    __slots__ = ()


def get_gradient_edge(tensor):
    """The ``GradientEdge`` through which ``tensor``'s gradient flows: its
    ``grad_fn`` and output index, or an ``AccumulateGrad`` for a leaf.

    Raises:
        TypeError: ``tensor`` is not a Tensor.
        RuntimeError: the tensor does not require grad (PyTorch's message).
    """
    if not hasattr(tensor, "_requires_grad"):
        raise TypeError(f"get_gradient_edge(): expected a Tensor, got "
                        f"{type(tensor).__name__}")
    if not tensor._requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that "
                           "does not require gradients")
    node = tensor._grad_fn
    if node is None:
        return GradientEdge(AccumulateGrad(tensor), 0)
    nr = _output_nr(tensor)
    if type(node) is Node:      # (a MultiNode knows its outputs' shapes)
        _edge_meta_store()[node] = (nr, tensor._data.shape, tensor._data.dtype)
    return GradientEdge(node, nr)


_EDGE_META = None


def _edge_meta_store():
    """Node -> (output_nr, shape, ndarray dtype) of the edges get_gradient_edge
    handed out (weak keys): what grad(outputs=edge) checks grad_outputs against."""
    global _EDGE_META
    if _EDGE_META is None:
        import weakref
        _EDGE_META = weakref.WeakKeyDictionary()
    return _EDGE_META


def gradient_edge_key(edge, what):
    """The engine's graph key for ``edge`` and ``(shape, ndarray dtype)`` of the
    gradient flowing through it (``None`` when unknown: an edge built by hand).

    Raises:
        TypeError: ``edge.node`` is neither a Node nor an AccumulateGrad.
        RuntimeError: an output_nr the node does not have.
    """
    node, nr = edge.node, edge.output_nr
    if type(node) is AccumulateGrad:
        key = node.variable
        meta = (key._data.shape, key._data.dtype)
    elif type(node) is Node:
        key = node
        m = _EDGE_META.get(node) if _EDGE_META is not None else None
        meta = m[1:] if m is not None and m[0] == nr else None
    elif isinstance(node, MultiNode):
        n = len(node.out_meta)
        if not (type(nr) is int and 0 <= nr < n):
            raise RuntimeError(f"{what}: GradientEdge.output_nr is {nr!r}, but "
                               f"{node.name()} has {n} outputs")
        return node_key(node, nr), node.out_meta[nr]
    else:
        raise TypeError(f"{what}: GradientEdge.node must be a graph Node or an "
                        f"AccumulateGrad, got {type(node).__name__}")
    if nr != 0:
        raise RuntimeError(f"{what}: GradientEdge.output_nr is {nr!r}, but {node.name()} "
                           f"has 1 output")
    return key, meta
