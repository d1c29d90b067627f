"""GradientEdge / get_gradient_edge in grad() and backward(), the backward() check
on outputs that do not require grad, and materialize_grads under create_graph;
values against closed forms (and torch when installed)."""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay import autograd
from tensorplay.autograd.graph import AccumulateGrad, GradientEdge, get_gradient_edge

F64 = tp.float64


def leaf(values):
    return tp.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def npy(t):
    return t.detach().numpy()


def test_get_gradient_edge():
    x = leaf([1.0, 2.0])
    e = get_gradient_edge(x)
    assert isinstance(e, tuple) and e._fields == ("node", "output_nr", "ownership_token")
    assert type(e.node) is AccumulateGrad and e.node.variable is x and e.output_nr == 0
    y = x * 3
    ey = get_gradient_edge(y)
    assert ey.node is y.grad_fn and ey.output_nr == 0 and ey == (y.grad_fn, 0, None)
    with pytest.raises(RuntimeError, match="not possible to get the gradient edge for a "
                                           "Tensor that does not require gradients"):
        get_gradient_edge(tp.ones(2))
    with pytest.raises(TypeError, match="expected a Tensor"):
        get_gradient_edge([1.0])


def _inplace_case():
    """y_old = 3x, y2 = y_old (a copy), y_new = 5 y_old in place,
    loss = sum(y_new * y2) = 5 sum(y_old^2): d/dy_old = 10 y_old = 30x,
    d/dx = 90x, d/dy2 = y_new = 15x."""
    x = leaf([1.0, 2.0])
    y = x * 3
    ey = get_gradient_edge(y)
    y2 = y.clone()
    y.mul_(5)
    return x, y, y2, ey, (y * y2).sum()


def test_grad_wrt_edge_after_inplace():
    x, y, y2, ey, loss = _inplace_case()
    ex = get_gradient_edge(x)
    g, = autograd.grad(loss, ey, retain_graph=True)
    np.testing.assert_allclose(npy(g), [30.0, 60.0])
    gx, gy2 = autograd.grad(loss, [ex, y2], retain_graph=True)
    np.testing.assert_allclose(npy(gx), [90.0, 180.0])
    np.testing.assert_allclose(npy(gy2), [15.0, 30.0])
    gy, = autograd.grad(loss, y)               # the tensor: its new value
    np.testing.assert_allclose(npy(gy), [3.0, 6.0])


def test_grad_wrt_edge_matches_torch():
    torch = pytest.importorskip("torch")
    xt = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    yt = xt * 3
    et = torch.autograd.graph.get_gradient_edge(yt)
    y2t = yt.clone()
    yt.mul_(5)
    want, = torch.autograd.grad((yt * y2t).sum(), et)
    _, _, _, ey, loss = _inplace_case()
    got, = autograd.grad(loss, ey)
    np.testing.assert_allclose(npy(got), want.numpy())


def test_edge_as_output():
    x = leaf([1.0, 2.0])
    y = x * 3
    ey = get_gradient_edge(y)
    g, = autograd.grad(ey, x, tp.tensor([1.0, 10.0], dtype=F64), retain_graph=True)
    np.testing.assert_allclose(npy(g), [3.0, 30.0])
    g, = autograd.grad([ey], [x], [tp.ones(2, dtype=F64)], retain_graph=True)
    np.testing.assert_allclose(npy(g), [3.0, 3.0])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar "
                                           "outputs"):
        autograd.grad(ey, x, retain_graph=True)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        autograd.grad(ey, x, tp.ones(3, dtype=F64), retain_graph=True)
    s = (x * x).sum()
    g, = autograd.grad(get_gradient_edge(s), x)        # scalar edge: ones implied
    np.testing.assert_allclose(npy(g), [2.0, 4.0])
    # backward from an edge
    z = x * 2
    autograd.backward(get_gradient_edge(z), tp.tensor([1.0, 2.0], dtype=F64))
    np.testing.assert_allclose(npy(x.grad), [2.0, 4.0])


def test_backward_with_edge_inputs():
    x, y, y2, ey, loss = _inplace_case()
    autograd.backward(loss, inputs=[get_gradient_edge(x)], retain_graph=True)
    np.testing.assert_allclose(npy(x.grad), [90.0, 180.0])
    # a non-leaf edge: the gradient flows into it (its hooks see it), stored nowhere
    seen = []
    ey.node.register_prehook(lambda go: seen.append(npy(go[0]).copy()))
    autograd.backward(loss, inputs=[ey])
    np.testing.assert_allclose(npy(x.grad), [90.0, 180.0])     # unchanged
    assert seen == []              # a node's pre-hook runs only when the node runs
    assert y.grad is None


def test_edge_hooks_see_gradient_through_edge():
    x, y, y2, ey, loss = _inplace_case()
    seen = []
    y_old_hook = ey.node.register_hook(lambda gi, go: seen.append(npy(go[0]).copy()))
    loss.backward()
    np.testing.assert_allclose(seen[0], [30.0, 60.0])
    y_old_hook.remove()


def test_edge_errors():
    x = leaf([1.0])
    with pytest.raises(TypeError, match="all inputs have to be Tensors or GradientEdges"):
        autograd.grad((x * 2).sum(), [5])
    with pytest.raises(TypeError, match="GradientEdge.node must be"):
        autograd.grad((x * 2).sum(), GradientEdge("node", 0))
    y = x * 2
    with pytest.raises(RuntimeError, match="output_nr is 1"):
        autograd.grad(y.sum(), GradientEdge(y.grad_fn, 1))
    # an edge the outputs do not reach: unused
    z = x * 3
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        autograd.grad(y.sum(), get_gradient_edge(z))
    g, = autograd.grad(y.sum(), get_gradient_edge(z), materialize_grads=True)
    assert npy(g).tolist() == [0.0]


def test_backward_several_outputs_one_without_grad():
    a = leaf([1.0, 2.0])
    b = a * 2
    c = tp.ones(2, dtype=F64)
    with pytest.raises(RuntimeError, match="element 1 of tensors does not require grad "
                                           "and does not have a grad_fn"):
        autograd.backward([b.sum(), c.sum()])
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        autograd.backward([c.sum(), b.sum()])
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        c.sum().backward()
    assert a.grad is None          # nothing accumulated by the failed calls
    autograd.backward([b.sum(), (a * a).sum()])
    np.testing.assert_allclose(npy(a.grad), [4.0, 6.0])


def test_backward_several_outputs_matches_torch():
    torch = pytest.importorskip("torch")
    a = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError) as want:
        torch.autograd.backward([(a * 2).sum(), torch.ones(2).sum()])
    x = leaf([1.0, 1.0])
    with pytest.raises(RuntimeError) as got:
        autograd.backward([(x * 2).sum(), tp.ones(2).sum()])
    assert str(want.value) in str(got.value)


def test_materialize_grads_third_derivative():
    x = tp.tensor(2.0, dtype=F64, requires_grad=True)
    y = x ** 2
    g1, = autograd.grad(y, x, create_graph=True)                       # 2x
    g2, = autograd.grad(g1, x, create_graph=True, materialize_grads=True)   # 2
    assert g1.item() == pytest.approx(4.0) and g2.item() == pytest.approx(2.0)
    assert g2.requires_grad
    g3, = autograd.grad(g2, x, materialize_grads=True)                 # 0
    assert g3.item() == 0.0
    # unused inputs: zeros that require grad only under create_graph (PyTorch)
    z = tp.tensor(1.0, dtype=F64, requires_grad=True)
    g, = autograd.grad(x * 2, z, materialize_grads=True, create_graph=True)
    assert g.item() == 0.0 and g.requires_grad and g.grad_fn is None
    g, = autograd.grad(x * 2, z, materialize_grads=True)
    assert not g.requires_grad
    g, = autograd.grad(x * 2, z, allow_unused=True, create_graph=True)
    assert g is None
