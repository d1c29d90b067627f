"""A picture of the reverse-mode graph: ``to_dot`` (Graphviz source) and ``render``
(PNG/SVG/PDF through the ``graphviz`` package and program).

The drawing follows PyTorch's torchviz (``make_dot``), so a picture reads the same:

* each ``grad_fn`` node is a grey box labelled ``grad_fn.name()`` (``MmBackward0``);
* each leaf that requires grad is an ``AccumulateGrad`` box fed by a light-blue box
  for the tensor, labelled with its name from ``params`` (and its shape), else its
  shape alone;
* each output tensor is a green box with its shape, fed by its ``grad_fn``;
* with ``show_saved=True``, each tensor a node saved for its backward is an orange
  box (``saved input i`` / ``saved result`` and its shape) joined to the node by an
  undirected edge; freed saved tensors (after a backward without
  ``retain_graph``) are not drawn.

Edges point the way the forward ran: from an input's node to its consumer.
Graphviz is optional: ``to_dot`` needs nothing; ``render`` raises a RuntimeError
saying what to install when the package or the ``dot`` program is missing.
"""
import collections.abc

__all__ = ["to_dot", "render"]

_NODE_ATTR = ('node [align=left fontname=monospace fontsize=10 height=0.2 ranksep=0.1 '
              'shape=box style=filled]')
_FORMATS = ("png", "svg", "pdf")


def _quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _size(shape):
    return "(" + ", ".join(str(int(v)) for v in shape) + ")"


def _param_names(params):
    from tensorplay._tensor import Tensor
    if params is None:
        return {}
    items = params.items() if isinstance(params, collections.abc.Mapping) else params
    try:
        items = list(items)
    except TypeError:
        raise TypeError(f"to_dot(): params must be a dict name -> Tensor (e.g. "
                        f"dict(model.named_parameters())), not "
                        f"{type(params).__name__}") from None
    names = {}
    for item in items:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Tensor)):
            raise TypeError(f"to_dot(): params must map names to Tensors; got the entry "
                            f"{item!r:.80}")
        names[id(item[1])] = str(item[0])
    return names


def _saved_shapes(fn):
    """``(label, shape)`` of each tensor ``fn`` keeps for its backward (none once freed)."""
    from tensorplay._tensor import Tensor
    from tensorplay.autograd import graph
    out = []
    if type(fn) is graph.Node:
        if fn.freed:
            return out
        if fn.op.save_inputs and fn.saved is not None:
            out += [(f"saved input {i}", shape) for i, (shape, _) in enumerate(fn.in_meta)]
        if fn.op.save_out and fn.out_data is not None:
            out.append(("saved result", fn.out_data.shape))
        return out
    for i, rec in enumerate(getattr(fn, "_saved", None) or ()):    # autograd.Function
        t = rec[0] if isinstance(rec, tuple) and rec else None
        data = rec[2] if isinstance(rec, tuple) and len(rec) > 2 else None
        if isinstance(t, Tensor):
            out.append((f"saved tensor {i}", t.shape))
        elif hasattr(data, "shape"):
            out.append((f"saved tensor {i}", data.shape))
    return out


def to_dot(tensor, params=None, show_saved=False):
    """Graphviz (dot) source of the graph that produced ``tensor``.

    Args:
        tensor (Tensor or sequence of Tensors): the output(s) to draw back from.
        params (dict, optional): name -> Tensor (``dict(model.named_parameters())``;
            an iterable of ``(name, tensor)`` pairs works too): leaves found here
            are labelled by name.
        show_saved (bool): also draw the tensors each node saved for its backward,
            with their shapes.

    Returns:
        str: a ``digraph`` in the dot language (``graphviz.Source(...)`` takes it).

    Raises:
        TypeError: ``tensor`` not a Tensor (or a sequence of them), ``params`` not
            a mapping of names to Tensors.

    Example::

        >>> w = tensorplay.randn(3, 2, requires_grad=True)
        >>> print(to_dot((tensorplay.ones(4, 3) @ w).sum(), params={"w": w}))
    """
    from tensorplay._tensor import Tensor
    from tensorplay.autograd.graph import AccumulateGrad
    roots = [tensor] if isinstance(tensor, Tensor) else tensor
    if not isinstance(roots, (list, tuple)) or not roots or \
            not all(isinstance(t, Tensor) for t in roots):
        raise TypeError(f"to_dot(): tensor must be a Tensor or a non-empty sequence of "
                        f"Tensors, not {type(tensor).__name__}")
    names = _param_names(params)
    lines = ["digraph {", '\tgraph [size="12,12"]', "\t" + _NODE_ATTR]
    ids = {}

    def node_id(key):
        if key not in ids:
            ids[key] = f"n{len(ids)}"
        return ids[key]

    def var_label(t, name=""):
        return (name + "\n " if name else "") + _size(t.shape)

    seen = set()
    stack = []

    def add_fn(fn, nr):
        """The id of the dot node for ``(fn, nr)`` from ``next_functions``, drawing
        it (and queueing its inputs) the first time."""
        if isinstance(fn, AccumulateGrad):
            var = fn.variable
            key = ("acc", id(var))
            nid = node_id(key)
            if key not in seen:
                seen.add(key)
                vid = node_id(("var", id(var)))
                lines.append(f"\t{nid} [label=AccumulateGrad]")
                label = _quote(var_label(var, names.get(id(var), "")))
                lines.append(f"\t{vid} [label={label} fillcolor=lightblue]")
                lines.append(f"\t{vid} -> {nid}")
            return nid
        key = ("fn", id(fn))
        nid = node_id(key)
        if key not in seen:
            seen.add(key)
            lines.append(f"\t{nid} [label={_quote(fn.name())}]")
            stack.append(fn)
            if show_saved:
                for j, (label, shape) in enumerate(_saved_shapes(fn)):
                    sid = node_id(("saved", id(fn), j))
                    label = _quote(f"{label}\n {_size(shape)}")
                    lines.append(f"\t{sid} [label={label} fillcolor=orange]")
                    lines.append(f"\t{nid} -> {sid} [dir=none]")
        return nid

    for t in roots:
        key = ("var", id(t))
        if key in seen:
            continue
        seen.add(key)
        vid = node_id(key)
        fn = t.grad_fn
        if fn is None:
            color = "lightblue" if t.requires_grad else "darkolivegreen1"
            lines.append(f"\t{vid} [label={_quote(var_label(t, names.get(id(t), '')))}"
                         f" fillcolor={color}]")
            continue
        lines.append(f"\t{vid} [label={_quote(var_label(t))} fillcolor=darkolivegreen1]")
        lines.append(f"\t{add_fn(fn, 0)} -> {vid}")
        while stack:
            node = stack.pop()
            nid = ids[("fn", id(node))]
            for nxt, nr in node.next_functions:
                if nxt is None:
                    continue
                lines.append(f"\t{add_fn(nxt, nr)} -> {nid}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(tensor, path, format="png", params=None, show_saved=False):
    """Write the picture of ``to_dot(tensor, params, show_saved)`` to ``path``.

    Needs the ``graphviz`` Python package (``pip install graphviz``) and the
    Graphviz ``dot`` program (``apt install graphviz``, ``brew install graphviz``,
    ``conda install graphviz``).

    Args:
        tensor, params, show_saved: as ``to_dot``.
        path (str or os.PathLike): the file to write (written as given).
        format (str): ``"png"`` (default), ``"svg"`` or ``"pdf"``.

    Returns:
        str: ``path``.

    Raises:
        ValueError: another format.  RuntimeError: the package or the program is
            missing (the message says what to install), or ``dot`` failed.
    """
    import os
    import shutil
    if format not in _FORMATS:
        raise ValueError(f"render(): format must be one of {_FORMATS}, got {format!r}")
    src = to_dot(tensor, params=params, show_saved=show_saved)
    try:
        import graphviz
    except ImportError:
        raise RuntimeError("render() needs the graphviz Python package and the Graphviz "
                           "'dot' program: pip install graphviz, and apt install "
                           "graphviz (or brew/conda install graphviz); to_dot() gives "
                           "the dot source without them") from None
    if shutil.which("dot") is None:
        raise RuntimeError("render() needs the Graphviz 'dot' program on PATH (the "
                           "graphviz Python package is installed): apt install graphviz "
                           "(or brew/conda install graphviz)")
    try:
        data = graphviz.Source(src).pipe(format=format)
    except Exception as e:          # graphviz.ExecutableNotFound, CalledProcessError
        raise RuntimeError(f"render(): Graphviz failed to draw the graph: {e}") from e
    path = os.fspath(path)
    with open(path, "wb") as f:
        f.write(data)
    return path
