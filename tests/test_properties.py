"""Property tests (hypothesis): broadcasting, reductions and reshapes over random
shapes, against numpy and against the definition of the VJP.

The op table covers hand-picked shapes; these search the shape space for the
cases nobody listed (size-1 and size-0 dims, many dims, scalars)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorplay as tp

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
BINARY = {"add": (tp.add, np.add), "sub": (tp.sub, np.subtract), "mul": (tp.mul, np.multiply)}


def _values(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


@SETTINGS
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4,
                                                 min_side=0, max_side=4),
       op=st.sampled_from(sorted(BINARY)), seed=st.integers(0, 2 ** 16))
def test_binary_broadcasting_forward_and_vjp(shapes, op, seed):
    (sa, sb), out_shape = shapes.input_shapes, shapes.result_shape
    a_np, b_np = _values(sa, seed), _values(sb, seed + 1)
    tp_op, np_op = BINARY[op]
    a = tp.tensor(a_np, requires_grad=True)
    b = tp.tensor(b_np, requires_grad=True)
    out = tp_op(a, b)
    np.testing.assert_allclose(out.numpy() if not out.requires_grad else out.detach().numpy(),
                               np_op(a_np, b_np), rtol=1e-13, atol=1e-13)
    u = _values(out_shape, seed + 2)
    ga, gb = tp.autograd.grad(out, (a, b), tp.tensor(u))
    # the VJP of a broadcast binary op: d/da = u * df/da summed over broadcast dims
    da = {"add": u, "sub": u, "mul": u * b_np}[op]
    db = {"add": u, "sub": -u, "mul": u * a_np}[op]
    def unbroadcast(g, shape):
        g = np.asarray(g)
        g = g.sum(axis=tuple(range(g.ndim - len(shape)))) if g.ndim > len(shape) else g
        axes = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1)
        return g.sum(axis=axes, keepdims=True) if axes else g
    np.testing.assert_allclose(ga.numpy(), unbroadcast(np.broadcast_to(da, out_shape), sa),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gb.numpy(), unbroadcast(np.broadcast_to(db, out_shape), sb),
                               rtol=1e-12, atol=1e-12)


@st.composite
def _shape_and_dims(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=5))
    dims = draw(st.lists(st.integers(0, len(shape) - 1), unique=True, min_size=1,
                         max_size=len(shape)))
    negate = draw(st.booleans())
    dims = tuple(d - len(shape) if negate else d for d in dims)
    return shape, dims, draw(st.booleans())


@SETTINGS
@given(case=_shape_and_dims(), seed=st.integers(0, 2 ** 16),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_sum_over_any_dims(case, seed, dtype):
    shape, dims, keepdim = case
    x_np = _values(shape, seed).astype(dtype)
    x = tp.tensor(x_np, requires_grad=True)
    out = x.sum(dim=dims, keepdim=keepdim)
    ref = x_np.astype(np.float64).sum(axis=dims, keepdims=keepdim)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=tol, atol=tol)
    u = _values(ref.shape, seed + 1).astype(dtype)
    (g,) = tp.autograd.grad(out, x, tp.tensor(u))
    expect = np.broadcast_to(u if keepdim else np.expand_dims(u, tuple(d % len(shape)
                                                                        for d in dims)), shape)
    np.testing.assert_allclose(g.numpy(), expect, rtol=tol, atol=tol)
    assert g.dtype is x.dtype


@SETTINGS
@given(shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=4),
       seed=st.integers(0, 2 ** 16), data=st.data())
def test_permute_reshape_roundtrip_gradients(shape, seed, data):
    x_np = _values(shape, seed)
    perm = data.draw(st.permutations(range(len(shape))))
    x = tp.tensor(x_np, requires_grad=True)
    y = x.permute(*perm).reshape(-1)
    np.testing.assert_array_equal(y.detach().numpy(), np.transpose(x_np, perm).reshape(-1))
    u = _values(y.shape, seed + 1)
    (g,) = tp.autograd.grad(y, x, tp.tensor(u))
    inverse = np.argsort(perm)
    np.testing.assert_array_equal(g.numpy(), np.transpose(
        u.reshape(np.transpose(x_np, perm).shape), inverse))


@pytest.mark.parametrize("mode", ["forward", "reversed"])
@SETTINGS
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3,
                                                 min_side=1, max_side=3),
       seed=st.integers(0, 2 ** 16))
def test_jvp_of_broadcast_composite_matches_finite_differences(mode, shapes, seed):
    (sa, sb) = shapes.input_shapes
    a_np, b_np = _values(sa, seed), _values(sb, seed + 1)
    va, vb = _values(sa, seed + 2), _values(sb, seed + 3)

    def f(a, b):
        return (a * b).tanh() + (a - b).exp() * 0.5

    def f_np(a, b):
        return np.tanh(a * b) + np.exp(a - b) * 0.5

    eps = 1e-6
    numeric = (f_np(a_np + eps * va, b_np + eps * vb)
               - f_np(a_np - eps * va, b_np - eps * vb)) / (2 * eps)
    _, jv = tp.autograd.functional.jvp(f, (tp.tensor(a_np), tp.tensor(b_np)),
                                       (tp.tensor(va), tp.tensor(vb)), mode=mode)
    np.testing.assert_allclose(jv.numpy(), numeric, rtol=1e-6, atol=1e-7)
