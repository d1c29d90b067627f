"""tensorplay.func.vmap and batched gradients (issue 8).

References are independent of vmap: the Python loop ``stack([f(x[i]) ...])`` over
the op table, closed-form gradients, and torch.func.vmap where torch is installed.
"""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay import autograd
from tensorplay._ops._batching import VmapDataError
from tensorplay._ops.registry import REGISTRY
from tensorplay.autograd import forward_ad as fwAD
from tensorplay.func._vmap import vmap

from op_table import SPECS

# Primitives without a batching rule: under vmap they run once per example (the
# fallback loop).  Adding a primitive without a rule and without listing it here
# fails test_fallback_primitives_are_listed.
FALLBACK = {
    "index",            # advanced indexing with index tensors: keys are per call
    "index_put",
    "copy_slices",      # in-place write into a slice
    "linalg_solve",     # b may be a vector or a matrix: ambiguous with a batch dim
    "linalg_lstsq",
    "nll_loss",         # reduces over its own batch dim
    "nll_loss_backward",
    "batch_norm",           # statistics over its own batch dim
    "batch_norm_backward",
}

# Op-table rows whose public function reads tensor values in a way vmap cannot
# batch (copy_slices writes into a slice of its input): under vmap they raise
# VmapDataError instead of giving a wrong answer.  A row listed here that no
# longer raises fails too (remove it from the list).  Public functions that
# compute in numpy outside the registry (sort, argmax, max(dim), logsumexp, any,
# isnan, slogdet, ...) loop over the examples instead (_batching.loop_under_vmap).
DATA_DEPENDENT = {"copy_slices"}

B = 3


def _np(o):
    if isinstance(o, (tuple, list)):
        return [_np(x) for x in o]
    return o.detach().numpy() if isinstance(o, tp.Tensor) else np.asarray(o)


def _stack(outs):
    if isinstance(outs[0], list):
        return [_stack([o[j] for o in outs]) for j in range(len(outs[0]))]
    return np.stack(outs)


def _close(a, b):
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_close, a, b))
    return a.shape == b.shape and np.allclose(a, b, rtol=1e-6, atol=1e-9, equal_nan=True)


def _t(a):
    return tp.tensor(np.array(a, copy=True))


def test_fallback_primitives_are_listed():
    missing = sorted(n for n, op in REGISTRY.items() if op.batch is None)
    assert missing == sorted(FALLBACK), (
        "primitives without a batching rule (defop(..., batch=...)) must be listed in "
        "FALLBACK, and listed ones must lack a rule")


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_op_table_row_under_vmap(spec):
    """Every row: vmap over dim 0 of all operands, over the last dim of the first,
    and with only the first operand batched, against the loop over examples."""
    draws = [spec.samples(np.random.default_rng(seed)) for seed in range(B)]
    raised = checked = 0
    for k, (label, arrays, kw) in enumerate(draws[0][:3]):
        exs = [[np.asarray(a) for a in draws[s][k][1]] for s in range(B)]
        if any(e[j].shape != exs[0][j].shape for e in exs for j in range(len(arrays))):
            continue
        try:
            ref = _stack([_np(spec.fn(*map(_t, exs[s]), **kw)) for s in range(B)])
        except Exception:       # a sample whose perturbed draw is invalid (domains)
            continue
        cases = [[0] * len(arrays), [-1] + [0] * (len(arrays) - 1)]
        if len(arrays) > 1:
            cases.append([0] + [None] * (len(arrays) - 1))
        for dims in cases:
            args = []
            for j, d in enumerate(dims):
                if d is None:
                    args.append(_t(exs[0][j]))
                else:
                    st = np.stack([e[j] for e in exs])
                    args.append(_t(np.moveaxis(st, 0, -1) if d == -1 else st))
            want = ref
            if None in dims:
                want = _stack([_np(spec.fn(_t(exs[s][0]), *map(_t, exs[0][1:]), **kw))
                               for s in range(B)])
            f = vmap(lambda *a: spec.fn(*a, **kw), in_dims=tuple(dims))
            try:
                got = _np(f(*args))
            except VmapDataError:
                assert spec.id in DATA_DEPENDENT, f"{spec.id} [{label}] raised under vmap"
                raised += 1
                continue
            checked += 1
            assert _close(got, want), f"{spec.id} [{label}] in_dims={dims}"
    if spec.id in DATA_DEPENDENT:
        assert raised, f"{spec.id} no longer raises under vmap: remove it from DATA_DEPENDENT"


# ---------------------------------------------------------------- the API
def test_in_dims_out_dims_and_non_tensor_args():
    x = tp.randn(4, 3)
    y = tp.randn(3, 5)
    f = vmap(lambda a, b, s: (a @ b) * s, in_dims=(0, None, None))
    np.testing.assert_allclose(f(x, y, 2.0).numpy(), (x @ y).numpy() * 2, rtol=1e-6)
    g = vmap(lambda a: a.sum(0), in_dims=1, out_dims=0)
    np.testing.assert_allclose(g(x).numpy(), x.numpy().sum(0), rtol=1e-6)
    h = vmap(lambda a: a * 2, out_dims=1)
    assert h(tp.randn(4, 3)).shape == (3, 4)
    # out_dims per output; an output that does not depend on the batch is expanded
    two = vmap(lambda a: (a.exp(), tp.ones(2)), out_dims=(1, 0))
    e, o = two(x)
    np.testing.assert_allclose(e.numpy(), x.numpy().exp().T if False else np.exp(x.numpy()).T,
                               rtol=1e-6)
    assert o.shape == (4, 2) and (o.numpy() == 1).all()
    assert vmap(lambda a: a.shape[0] + 0 * a.sum())(x).shape == (4,)


def test_shape_inside_is_logical():
    seen = []

    def f(a):
        seen.append((tuple(a.shape), a.ndim, a.dim(), a.size(0), len(a), a.numel()))
        return a
    vmap(f)(tp.randn(5, 2, 3))
    assert seen == [((2, 3), 2, 2, 2, 2, 6)]


def test_pytree_inputs_and_outputs():
    d = {"w": tp.randn(4, 3), "b": tp.randn(4)}
    f = vmap(lambda p, scale: {"s": (p["w"].sum() + p["b"]) * scale,
                               "pair": [p["w"], p["b"]]}, in_dims=({"w": 0, "b": 0}, None))
    out = f(d, 3.0)
    np.testing.assert_allclose(out["s"].numpy(),
                               (d["w"].numpy().sum(1) + d["b"].numpy()) * 3, rtol=1e-5)
    assert out["pair"][0].shape == (4, 3) and out["pair"][1].shape == (4,)
    t = vmap(lambda ab: ab[0] * ab[1], in_dims=((0, None),))
    np.testing.assert_allclose(t((tp.ones(2, 3), tp.arange(3.0))).numpy(),
                               np.tile(np.arange(3.0), (2, 1)))


def test_nested_vmap():
    a = tp.randn(2, 3, 4)
    np.testing.assert_allclose(vmap(vmap(lambda r: r.exp().sum()))(a).numpy(),
                               np.exp(a.numpy()).sum(-1), rtol=1e-5)
    # outer over dim 1 of a, inner over dim 0 of what is left; b batched only outside
    b = tp.randn(3, 4)
    f = vmap(vmap(lambda r, s: r * s, in_dims=(0, None)), in_dims=(1, 0))
    np.testing.assert_allclose(f(a, b).numpy(),
                               np.moveaxis(a.numpy(), 1, 0) * b.numpy()[:, None, :], rtol=1e-6)
    m = tp.randn(5, 3, 3)
    v = tp.randn(7, 3)
    # every matrix with every vector
    mv = vmap(vmap(lambda mm, vv: mm @ vv, in_dims=(None, 0)), in_dims=(0, None))(m, v)
    np.testing.assert_allclose(mv.numpy(), np.einsum("aij,bj->abi", m.numpy(), v.numpy()),
                               rtol=1e-5, atol=1e-6)


def test_chunk_size_gives_the_same_result():
    x = tp.randn(10, 4)
    f = lambda a: (a.tanh() @ tp.ones(4)) * a.sum()  # noqa: E731
    full = vmap(f)(x).numpy()
    for c in (1, 3, 10, 50):
        np.testing.assert_allclose(vmap(f, chunk_size=c)(x).numpy(), full, rtol=1e-6)


def test_fallback_loop_matches_and_records_gradients():
    # linalg_solve has no rule: the per-example loop, differentiable through
    a = tp.tensor(np.random.default_rng(0).standard_normal((4, 3, 3)) + 3 * np.eye(3),
                  requires_grad=True)
    b = tp.randn(3, dtype=tp.float32).double()
    x = vmap(lambda m: tp.linalg.solve(m, b))(a)
    want = np.linalg.solve(a.detach().numpy(), np.broadcast_to(b.numpy(), (4, 3))[..., None])
    np.testing.assert_allclose(x.detach().numpy(), want[..., 0], rtol=1e-10)
    g, = autograd.grad(x.sum(), a)
    ainv = np.linalg.inv(a.detach().numpy())
    # d sum(A^-1 b)/dA = -A^-T 1 (A^-1 b)^T
    want_g = -np.einsum("bji,bj,bk->bik", ainv, np.ones((4, 3)), want[..., 0])
    np.testing.assert_allclose(g.numpy(), want_g, rtol=1e-8, atol=1e-10)


def test_functions_outside_the_registry_loop_over_examples():
    x = tp.randn(4, 6, dtype=tp.float64)
    v = vmap(lambda r: r.sort(descending=True).values[:2] + r.argmax())(x)
    xn = x.numpy()
    want = -np.sort(-xn, 1)[:, :2] + xn.argmax(1)[:, None]
    np.testing.assert_allclose(v.numpy(), want)
    mx = vmap(lambda r: r.reshape(2, 3).max(1))(x)          # a named tuple per example
    np.testing.assert_allclose(mx.values.numpy(), xn.reshape(4, 2, 3).max(2))
    np.testing.assert_array_equal(mx.indices.numpy(), xn.reshape(4, 2, 3).argmax(2))
    # the loop records the graph on the physical values: grad of a function calling vmap
    xg = x.detach().requires_grad_()
    g, = autograd.grad(vmap(lambda r: r.topk(2).values.sum())(xg).sum(), xg)
    top = np.argsort(-xn, 1)[:, :2]
    want_g = np.zeros_like(xn)
    np.put_along_axis(want_g, top, 1.0, 1)
    np.testing.assert_allclose(g.numpy(), want_g)
    # but grad inside vmap cannot see through the loop: refused, not wrong
    with pytest.raises(VmapDataError, match="per example"):
        vmap(lambda r: autograd.grad(r.detach().requires_grad_().sort().values.sum(), r))(x)
    with pytest.raises(VmapDataError, match="vmap"):      # a Python bool per example
        vmap(lambda r: tp.equal(r, r))(x)


# ---------------------------------------------------------------- autograd
def _linear_model():
    rng = np.random.default_rng(1)
    X = tp.tensor(rng.standard_normal((6, 3)))
    y = tp.tensor(rng.standard_normal(6))
    w = tp.tensor(rng.standard_normal(3))
    ref = 2 * (X.numpy() @ w.numpy() - y.numpy())[:, None] * X.numpy()
    return X, y, w, ref


def test_per_example_gradients_with_autograd_grad():
    X, y, w, ref = _linear_model()

    def grad_w(w, x, yi):
        w = w.detach().requires_grad_()
        loss = (x @ w - yi) ** 2
        return autograd.grad(loss, w)[0]
    pe = vmap(grad_w, in_dims=(None, 0, 0))(w, X, y)
    assert pe.shape == (6, 3)
    np.testing.assert_allclose(pe.numpy(), ref, rtol=1e-12)


def test_per_example_gradients_with_func_grad():
    func = pytest.importorskip("tensorplay.func")
    if not hasattr(func, "grad"):
        pytest.skip("tensorplay.func.grad is not in this tree")
    X, y, w, ref = _linear_model()
    pe = vmap(func.grad(lambda w, x, yi: ((x @ w - yi) ** 2)), in_dims=(None, 0, 0))(w, X, y)
    np.testing.assert_allclose(pe.numpy(), ref, rtol=1e-12)


def test_per_example_gradient_wrt_batched_input():
    x = tp.randn(5, 4, dtype=tp.float64)

    def g(xi):
        xi = xi.detach().requires_grad_()
        return autograd.grad((xi.sin() * xi).sum(), xi)[0]
    xn = x.numpy()
    np.testing.assert_allclose(vmap(g)(x).numpy(), np.cos(xn) * xn + np.sin(xn), rtol=1e-12)


def test_grad_of_a_function_that_calls_vmap():
    x = tp.randn(4, 3, dtype=tp.float64, requires_grad=True)
    w = tp.randn(3, dtype=tp.float64, requires_grad=True)
    out = vmap(lambda r: (r.sin() * w).sum() * r.detach().sum(), in_dims=0)(x)
    gx, gw = autograd.grad(out.sum(), (x, w))
    xn, wn = x.detach().numpy(), w.detach().numpy()
    s = xn.sum(1, keepdims=True)
    np.testing.assert_allclose(gx.numpy(), np.cos(xn) * wn * s, rtol=1e-12)   # detach: no term
    np.testing.assert_allclose(gw.numpy(), (np.sin(xn) * s).sum(0), rtol=1e-12)


def test_forward_mode_inside_and_outside_vmap():
    x = tp.randn(4, 3, dtype=tp.float64)
    t = tp.randn(4, 3, dtype=tp.float64)

    def jvp_row(xi, ti):
        with fwAD.dual_level():
            o = (fwAD.make_dual(xi, ti).exp() * 2).sum()
            return fwAD.unpack_dual(o).tangent
    want = (2 * np.exp(x.numpy()) * t.numpy()).sum(1)
    np.testing.assert_allclose(vmap(jvp_row)(x, t).numpy(), want, rtol=1e-12)
    with fwAD.dual_level():
        out = vmap(lambda r: (r.exp() * 2).sum())(fwAD.make_dual(x, t))
        np.testing.assert_allclose(fwAD.unpack_dual(out).tangent.numpy(), want, rtol=1e-12)


def test_custom_function_under_vmap():
    class Cube(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 3 * x * x * g
    x = tp.randn(4, 3, dtype=tp.float64)
    np.testing.assert_allclose(vmap(Cube.apply)(x).numpy(), x.numpy() ** 3, rtol=1e-12)

    def g(xi):
        xi = xi.detach().requires_grad_()
        return autograd.grad(Cube.apply(xi).sum(), xi)[0]
    np.testing.assert_allclose(vmap(g)(x).numpy(), 3 * x.numpy() ** 2, rtol=1e-12)
    # grad of a function that vmaps a custom Function: its forward runs without a
    # graph, so the result is disconnected -- an error, not a wrong gradient
    xr = x.clone().requires_grad_()
    with pytest.raises(RuntimeError, match="does not require grad"):
        autograd.grad(vmap(lambda r: Cube.apply(r).sum())(xr).sum(), xr)


def test_hessian_vector_products_per_example():
    # reverse over reverse inside vmap (create_graph under vmap)
    x = tp.randn(3, 4, dtype=tp.float64)
    v = tp.randn(3, 4, dtype=tp.float64)

    def hvp(xi, vi):
        xi = xi.detach().requires_grad_()
        g, = autograd.grad((xi ** 3).sum(), xi, create_graph=True)
        return autograd.grad((g * vi).sum(), xi)[0]
    np.testing.assert_allclose(vmap(hvp)(x, v).numpy(), 6 * x.numpy() * v.numpy(), rtol=1e-12)


def test_is_grads_batched_one_pass_matches_the_loop():
    x = tp.randn(3, 4, dtype=tp.float64, requires_grad=True)
    W = tp.randn(4, 5, dtype=tp.float64)
    y = (x @ W).tanh().log_softmax(-1)
    V = tp.randn(6, 3, 5, dtype=tp.float64)
    g, = autograd.grad(y, x, V, is_grads_batched=True, retain_graph=True)
    loop = np.stack([autograd.grad(y, x, V[i], retain_graph=True)[0].numpy()
                     for i in range(6)])
    np.testing.assert_allclose(g.numpy(), loop, rtol=1e-12)
    # the Jacobian with identity cotangents; the graph is freed afterwards
    s = (x * 2).sum(0)
    J, = autograd.grad(s, x, tp.eye(4, dtype=tp.float64), is_grads_batched=True)
    want = np.zeros((4, 3, 4))
    want[np.arange(4), :, np.arange(4)] = 2
    np.testing.assert_allclose(J.numpy(), want)
    with pytest.raises(RuntimeError, match="second time"):
        autograd.grad(s, x, tp.ones(4, dtype=tp.float64))


def test_is_grads_batched_falls_back_to_the_loop(monkeypatch):
    x = tp.randn(5, dtype=tp.float64, requires_grad=True)
    y = x.exp()
    op = REGISTRY["mul"]      # exp's VJP is g * out

    def refuse(*a):
        raise VmapDataError("test: no batching here")
    monkeypatch.setattr(op, "batch", refuse)
    V = tp.randn(3, 5, dtype=tp.float64)
    g, = autograd.grad(y, x, V, is_grads_batched=True)
    np.testing.assert_allclose(g.numpy(), V.numpy() * np.exp(x.detach().numpy()), rtol=1e-12)


# ---------------------------------------------------------------- errors
def test_errors_follow_pytorch():
    x = tp.randn(3, 2)
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        vmap(lambda a, b: a + b)(x, tp.randn(4, 2))
    with pytest.raises(ValueError, match="in_dims is not compatible"):
        vmap(lambda a, b: a + b, in_dims=(0,))(x, x)
    with pytest.raises(ValueError, match="cannot vmap over non-Tensor"):
        vmap(lambda a, s: a * s, in_dims=(0, 0))(x, 2.0)
    with pytest.raises(ValueError, match="expected in_dim to satisfy"):
        vmap(lambda a: a, in_dims=2)(x)
    with pytest.raises(ValueError, match="at least one"):
        vmap(lambda a: a, in_dims=None)(x)
    with pytest.raises(ValueError, match="must only return Tensors"):
        vmap(lambda a: 3)(x)
    with pytest.raises(ValueError, match="out_dim is None"):
        vmap(lambda a: a, out_dims=None)(x)
    with pytest.raises(IndexError, match="Dimension out of range"):
        vmap(lambda a: a, out_dims=3)(x)
    with pytest.raises(RuntimeError, match="randomness"):
        vmap(lambda a: a, randomness="sometimes")
    with pytest.raises(ValueError, match="chunk_size"):
        vmap(lambda a: a, chunk_size=0)
    with pytest.raises(ValueError, match="expected `in_dims` to be int"):
        vmap(lambda a: a, in_dims="0")(x)


_NAMED = {"item": r"Tensor\.item\(\)", "bool": r"bool\(\)", "numpy": r"Tensor\.numpy\(\)",
          "tolist": r"Tensor\.tolist\(\)", "if": r"bool\(\)", "float": r"float\(\)"}


@pytest.mark.parametrize("how", sorted(_NAMED))
def test_data_dependent_control_flow_raises(how):
    """Refused, and the message names what the user called (not numpy's method)."""
    def f(a):
        s = a.sum()
        if how == "item":
            return s.item()
        if how == "bool":
            return bool(s > 0)
        if how == "numpy":
            return a.numpy()
        if how == "tolist":
            return a.tolist()
        if how == "float":
            return float(s)
        return a if s > 0 else -a
    with pytest.raises(VmapDataError, match="vmap: .*" + _NAMED[how]) as info:
        vmap(f)(tp.randn(3, 2))
    assert "ndarray" not in str(info.value)


def test_in_place_on_a_batched_tensor_raises():
    with pytest.raises(RuntimeError, match="vmap"):
        vmap(lambda a: a.mul_(2))(tp.randn(3, 2))
    w = tp.zeros(2)
    with pytest.raises(RuntimeError, match="vmap"):
        vmap(lambda a: w.add_(a))(tp.randn(3, 2))
    assert (w.numpy() == 0).all()


def test_randomness_modes():
    with pytest.raises(RuntimeError, match="randomness"):
        vmap(lambda a: a + tp.randn(2))(tp.randn(3, 2))
    out = vmap(lambda a: a * 0 + tp.randn(2), randomness="same")(tp.randn(3, 2))
    assert out.shape == (3, 2) and np.allclose(out.numpy()[0], out.numpy()[1])
    # "different" would need per-example draws: refused, not one shared draw
    with pytest.raises(NotImplementedError, match="different"):
        vmap(lambda a: a + tp.randn(2), randomness="different")(tp.randn(3, 2))


@pytest.mark.parametrize("sample", [lambda a: tp.bernoulli(a * 0.5),
                                    lambda a: tp.normal(a, 1.0),
                                    lambda a: tp.multinomial(a.abs() + 0.1, 1)])
def test_samplers_refuse_batched_tensors(sample):
    x = tp.rand(4, 3)
    with pytest.raises(RuntimeError, match="randomness"):      # the default mode
        vmap(sample)(x)
    with pytest.raises(RuntimeError, match="batched"):
        vmap(sample, randomness="same")(x)


def test_batched_repr():
    seen = []
    vmap(lambda a: seen.append(repr(a)) or a)(tp.ones(2, 3))
    assert seen[0].startswith("BatchedTensor(lvl=")


# ---------------------------------------------------------------- against torch
def test_against_torch_func_vmap():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    xn, wn, vn = rng.standard_normal((5, 4)), rng.standard_normal((4, 3)), rng.standard_normal(3)

    def f(lib, x, w, v):
        h = lib.tanh(x @ w) * v
        return h.log_softmax(-1).sum() + (h.max(-1)[0] if lib is torch else h.amax(-1))
    ours = vmap(lambda x: f(tp, x, tp.tensor(wn), tp.tensor(vn)))(tp.tensor(xn)).numpy()
    theirs = torch.func.vmap(lambda x: f(torch, x, torch.tensor(wn), torch.tensor(vn)))(
        torch.tensor(xn)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_vmap_benchmarks_run_once():
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from benchmarks.benchmarks import bench_vmap
    for cls, meth in ((bench_vmap.VmapMLP, "time_forward"),
                      (bench_vmap.PerExampleGrads, "time_grads"),
                      (bench_vmap.GradsBatched, "time_vjps")):
        for mode in cls.params:
            b = cls()
            b.setup(mode)
            getattr(b, meth)(mode)
    # the benchmarked per-example gradients are right (closed form for the last bias)
    p = bench_vmap._mlp_params()
    x, y = bench_vmap._data(8)
    g = vmap(bench_vmap._example_grads, in_dims=(None, 0, 0))(p, x, y)
    logits = bench_vmap._forward(p, x).numpy()
    soft = np.exp(logits - logits.max(1, keepdims=True))
    soft /= soft.sum(1, keepdims=True)
    np.testing.assert_allclose(g[3].numpy(), soft - y.numpy(), rtol=1e-4, atol=1e-6)


def test_cross_entropy_with_a_batched_target():
    # per-example losses and gradients (torch.func's recipe) against the loop; a
    # bad target is still an IndexError, raised by the kernel that reads it
    F = tp.nn.functional
    logits = tp.tensor(np.random.default_rng(3).standard_normal((4, 3)))
    target = tp.tensor([0, 1, 2, 1])

    def loss(l, t):
        return F.cross_entropy(l.unsqueeze(0), t.unsqueeze(0))

    out = vmap(loss)(logits, target)
    x = logits.numpy()
    lse = np.log(np.exp(x).sum(1))
    np.testing.assert_allclose(out.numpy(), lse - x[np.arange(4), target.numpy()], rtol=1e-12)
    g = vmap(tp.func.grad(loss))(logits, target)
    soft = np.exp(x - lse[:, None])
    soft[np.arange(4), target.numpy()] -= 1
    np.testing.assert_allclose(g.numpy(), soft, rtol=1e-12, atol=1e-15)
    with pytest.raises(IndexError, match="out of bounds"):
        vmap(loss)(logits, tp.tensor([0, 1, 5, 1]))


@pytest.mark.parametrize("name", ["amax", "amin"])
def test_per_example_gradient_of_amax_amin_splits_each_examples_ties(name):
    """The tie-splitting VJP runs on batched tensors (each example its own ties)."""
    xn = np.array([[1.0, 3, 3], [2, 2, 2], [5, 0, 1], [0, 0, -1]])
    got = vmap(tp.func.grad(lambda r: getattr(r, name)()))(tp.tensor(xn))
    ext = xn.max(1, keepdims=True) if name == "amax" else xn.min(1, keepdims=True)
    want = (xn == ext) / (xn == ext).sum(1, keepdims=True)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-15)


def test_per_example_gradient_through_eigh_eigenvectors():
    """eigh's VJP skips the eigenvector term by a zero test on the cotangent; under
    vmap it computes the term instead, and matches the per-example loop."""
    rng = np.random.default_rng(3)
    xn = rng.standard_normal((4, 3, 3))
    a = tp.tensor(xn + xn.transpose(0, 2, 1))
    f = lambda m: tp.linalg.eigh(m).eigenvectors.abs().sum()   # noqa: E731 (sign-invariant)
    got = vmap(tp.func.grad(f))(a)
    for i in range(4):
        ai = a[i].clone().requires_grad_()
        want, = autograd.grad(f(ai), ai)
        np.testing.assert_allclose(got[i].numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    # repeated eigenvalues with the eigenvectors unused: d trace / dA = I, finite
    eye = tp.eye(3, dtype=tp.float64).expand(2, 3, 3).clone()
    g = vmap(tp.func.grad(lambda m: tp.linalg.eigh(m).eigenvalues.sum()))(eye)
    np.testing.assert_array_equal(g.numpy(), np.broadcast_to(np.eye(3), (2, 3, 3)))
