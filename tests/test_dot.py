"""autograd.graph.to_dot / render: the structure of the Graphviz source for small
graphs whose shape is known in closed form, and render's behaviour with and
without the optional graphviz package and program (graphviz is not required)."""
import re
import sys
import types

import pytest

import tensorplay as tp
from tensorplay.autograd.graph import render, to_dot

NODE = re.compile(r'^\t(n\d+) \[label=("(?:[^"\\]|\\.)*"|\w+)(?: fillcolor=(\w+))?\]$')
EDGE = re.compile(r"^\t(n\d+) -> (n\d+)( \[dir=none\])?$")


def parse(src):
    """{id: (label, fillcolor)}, [(tail, head, undirected)] of to_dot's output."""
    lines = src.rstrip("\n").split("\n")
    assert lines[0] == "digraph {" and lines[-1] == "}"
    assert lines[1] == '\tgraph [size="12,12"]' and lines[2].startswith("\tnode [")
    nodes, edges = {}, []
    for line in lines[3:-1]:
        m = NODE.match(line)
        if m:
            label = m.group(2)
            if label.startswith('"'):
                label = re.sub(r"\\(.)", lambda c: "\n" if c.group(1) == "n" else c.group(1),
                               label[1:-1])
            assert m.group(1) not in nodes, line
            nodes[m.group(1)] = (label, m.group(3))
            continue
        m = EDGE.match(line)
        assert m, f"neither a node nor an edge: {line!r}"
        edges.append((m.group(1), m.group(2), bool(m.group(3))))
    for a, b, _ in edges:
        assert a in nodes and b in nodes
    return nodes, edges


def fn_names(t):
    """The grad_fn names reachable from ``t`` (walking next_functions), one per node."""
    seen, names, stack = set(), [], [t.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen or fn.name() == "AccumulateGrad":
            continue
        seen.add(id(fn))
        names.append(fn.name())
        stack += [f for f, _ in fn.next_functions]
    return sorted(names)


def small_graph():
    w = tp.randn(3, 2, requires_grad=True)
    b = tp.zeros(2, requires_grad=True)
    x = tp.randn(4, 3)
    return (x @ w + b).relu().sum(), w, b


def by_color(nodes, color):
    return sorted(label for label, c in nodes.values() if c == color)


def test_node_and_edge_counts_of_a_known_graph():
    loss, w, b = small_graph()
    nodes, edges = parse(to_dot(loss))
    fns = [label for label, c in nodes.values() if c is None and label != "AccumulateGrad"]
    assert sorted(fns) == fn_names(loss) and len(fns) == 4     # sum, relu, add, matmul
    assert len([1 for label, _ in nodes.values() if label == "AccumulateGrad"]) == 2
    assert by_color(nodes, "lightblue") == ["(2)", "(3, 2)"]       # the leaves, by shape
    assert by_color(nodes, "darkolivegreen1") == ["()"]           # the output
    assert len(nodes) == 4 + 2 + 2 + 1
    # a tree: output <- 4 grad_fns <- 2 AccumulateGrad <- 2 leaves
    assert len(edges) == len(nodes) - 1 and not any(u for _, _, u in edges)
    label = {k: v[0] for k, v in nodes.items()}
    assert (loss.grad_fn.name(), "()") in {(label[a], label[b]) for a, b, _ in edges}
    leaf_edges = [(label[a], label[b]) for a, b, _ in edges if label[b] == "AccumulateGrad"]
    assert sorted(leaf_edges) == [("(2)", "AccumulateGrad"), ("(3, 2)", "AccumulateGrad")]


def test_leaves_are_named_from_params():
    loss, w, b = small_graph()
    nodes, _ = parse(to_dot(loss, params={"fc.weight": w, "fc.bias": b}))
    assert by_color(nodes, "lightblue") == ["fc.bias\n (2)", "fc.weight\n (3, 2)"]
    nodes, _ = parse(to_dot(loss, params=[("only_w", w)]))        # pairs, as named_parameters
    assert by_color(nodes, "lightblue") == ["(2)", "only_w\n (3, 2)"]
    nodes, _ = parse(to_dot(loss, params={'we"ird\\name': w}))    # quoted safely
    assert 'we"ird\\name\n (3, 2)' in by_color(nodes, "lightblue")


def test_show_saved_draws_saved_tensor_shapes_until_freed():
    w = tp.randn(3, 2, requires_grad=True)
    x = tp.randn(4, 3)
    y = (x @ w).exp().sum()
    nodes, edges = parse(to_dot(y))
    assert by_color(nodes, "orange") == []
    nodes, edges = parse(to_dot(y, show_saved=True))
    saved = by_color(nodes, "orange")
    shapes = sorted(s.split("\n ")[1] for s in saved)
    assert "(4, 3)" in shapes and "(3, 2)" in shapes           # matmul keeps both inputs
    assert all(s.startswith("saved ") for s in saved)
    undirected = [e for e in edges if e[2]]
    assert len(undirected) == len(saved)                        # one line per saved tensor
    label = {k: v[0] for k, v in nodes.items()}
    assert all(label[a].endswith("Backward0") and nodes[b][1] == "orange"
               for a, b, _ in undirected)
    y.backward()                                                # frees the saved tensors
    nodes, _ = parse(to_dot(y, show_saved=True))
    assert by_color(nodes, "orange") == []


def test_shared_inputs_are_drawn_once_with_one_edge_per_use():
    a = tp.randn(3, requires_grad=True)
    y = a * a + a
    nodes, edges = parse(to_dot(y))
    assert [label for label, _ in nodes.values()].count("AccumulateGrad") == 1
    acc = next(k for k, v in nodes.items() if v[0] == "AccumulateGrad")
    assert len([1 for t, _, _ in edges if t == acc]) == 3      # mul (twice) and add


def test_several_roots_leaves_and_custom_functions():
    class Twice(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    a = tp.randn(2, requires_grad=True)
    y = Twice.apply(a)
    z = a.sin()
    nodes, edges = parse(to_dot((y, z)))
    labels = [label for label, _ in nodes.values()]
    assert y.grad_fn.name() in labels and z.grad_fn.name() in labels
    assert labels.count("AccumulateGrad") == 1 and by_color(nodes, "darkolivegreen1") == \
        ["(2)", "(2)"]
    nodes, edges = parse(to_dot(a, params={"a": a}))               # a bare leaf
    assert list(nodes.values()) == [("a\n (2)", "lightblue")] and edges == []
    nodes, _ = parse(to_dot(tp.ones(2)))                            # no graph at all
    assert len(nodes) == 1


def test_deep_graphs_do_not_recurse():
    x = tp.ones(1, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y + 1
    nodes, edges = parse(to_dot(y))
    assert len(nodes) == 3000 + 3 and len(edges) == len(nodes) - 1


def test_to_dot_argument_errors():
    loss, w, _ = small_graph()
    with pytest.raises(TypeError, match="to_dot\\(\\): tensor must be a Tensor"):
        to_dot(3)
    with pytest.raises(TypeError, match="tensor must be a Tensor"):
        to_dot([])
    with pytest.raises(TypeError, match="params must be a dict"):
        to_dot(loss, params=5)
    with pytest.raises(TypeError, match="params must map names to Tensors"):
        to_dot(loss, params={"w": 3})


def test_render_without_the_graphviz_package_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "graphviz", None)           # import fails
    loss, _, _ = small_graph()
    with pytest.raises(RuntimeError, match="pip install graphviz.*apt install graphviz"):
        render(loss, tmp_path / "g.png")
    assert not (tmp_path / "g.png").exists()


def _fake_graphviz(calls):
    class Source:
        def __init__(self, src):
            calls.append(src)

        def pipe(self, format):
            calls.append(format)
            return b"PICTURE:" + format.encode()
    return types.SimpleNamespace(Source=Source)


def test_render_without_the_dot_program_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "graphviz", _fake_graphviz([]))
    monkeypatch.setattr("shutil.which", lambda name: None)
    loss, _, _ = small_graph()
    with pytest.raises(RuntimeError, match="'dot' program.*apt install graphviz"):
        render(loss, tmp_path / "g.svg", format="svg")


def test_render_writes_what_graphviz_draws(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setitem(sys.modules, "graphviz", _fake_graphviz(calls))
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/dot")
    loss, w, _ = small_graph()
    out = render(loss, tmp_path / "g.svg", format="svg", params={"w": w})
    assert out == str(tmp_path / "g.svg")
    assert (tmp_path / "g.svg").read_bytes() == b"PICTURE:svg"
    assert calls == [to_dot(loss, params={"w": w}), "svg"]
    with pytest.raises(ValueError, match="format must be one of"):
        render(loss, tmp_path / "g.gif", format="gif")


def test_render_with_real_graphviz(tmp_path):
    pytest.importorskip("graphviz")
    import shutil
    if shutil.which("dot") is None:
        pytest.skip("the Graphviz dot program is not installed")
    loss, w, b = small_graph()
    render(loss, tmp_path / "g.png", params={"w": w, "b": b})
    assert (tmp_path / "g.png").read_bytes()[:4] == b"\x89PNG"
    render(loss, tmp_path / "g.svg", format="svg")
    assert b"<svg" in (tmp_path / "g.svg").read_bytes()
