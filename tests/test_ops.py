"""Op-table driven checks of every registered primitive (STYLE.md A9).

For each spec and sample:
- forward in float32 and float64 against the numpy reference;
- VJP (reverse mode) against float64 central differences, as
  <u, J t> for random cotangent u and tangent t;
- JVP (forward mode) against the same central differences, elementwise;
- <u, J t> from the JVP equals <J^T u, t> from the VJP (exact dot-product test);
- second order: the gradient of <VJP(x; u), w> (create_graph=True) against
  central differences, and forward-over-reverse against the same;
- functional.jvp(mode="forward") against mode="reversed".
"""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay._ops.registry import REGISTRY
from tensorplay.autograd import forward_ad as fwAD
from tensorplay.autograd.functional import jvp

from op_table import SPECS, noncontig

EPS = 1e-6
CASES = [(spec, label, i) for spec in SPECS
         for i, (label, _, _) in enumerate(spec.samples(np.random.default_rng(0)))]
IDS = [f"{spec.id}-{label}" for spec, label, _ in CASES]


def test_every_primitive_has_a_spec():
    covered = {spec.name for spec in SPECS}
    missing = set(REGISTRY) - covered
    assert not missing, f"registered primitives without an op-table row: {sorted(missing)}"
    unknown = covered - set(REGISTRY)
    assert not unknown, f"op-table rows for unregistered primitives: {sorted(unknown)}"


def _sample(spec, i, seed):
    rng = np.random.default_rng(seed)
    label, arrays, kwargs = spec.samples(rng)[i]
    return arrays, kwargs


def _cast_keep_layout(a, dtype):
    """``a`` as ``dtype``, keeping a non-contiguous sample non-contiguous."""
    if a.dtype == dtype:
        return a
    return noncontig(a, dtype) if a.ndim and not a.flags.c_contiguous else a.astype(dtype)


def _f64(spec, kwargs):
    """The spec's function as numpy-in, numpy-out (float64), for finite differences."""
    def f(*arrays):
        with tp.no_grad():
            return spec.fn(*[tp.from_numpy(np.array(a)) for a in arrays], **kwargs)._data
    return f


def _numeric_jvp(f, arrays, tangents):
    plus = f(*[a + EPS * t for a, t in zip(arrays, tangents)])
    minus = f(*[a - EPS * t for a, t in zip(arrays, tangents)])
    return (plus - minus) / (2 * EPS)


def _dot(a, b):
    return float(np.sum(np.asarray(a, np.float64) * np.asarray(b, np.float64)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("spec,label,i", CASES, ids=IDS)
def test_forward(spec, label, i, dtype):
    arrays, kwargs = _sample(spec, i, seed=1)
    cast = [_cast_keep_layout(a, dtype) for a in arrays]
    out = spec.fn(*[tp.from_numpy(a) for a in cast], **kwargs)
    expected = spec.ref(*[a.astype(np.float64) for a in cast], **kwargs)
    assert out.dtype is (tp.float32 if dtype == np.float32 else tp.float64)
    assert out.shape == np.shape(expected)
    tol = dict(rtol=2e-6, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(out._data, expected, **tol)


@pytest.mark.parametrize("spec,label,i", CASES, ids=IDS)
def test_vjp_jvp_against_finite_differences(spec, label, i):
    arrays, kwargs = _sample(spec, i, seed=2)
    rng = np.random.default_rng(3)
    xs = [tp.from_numpy(a).requires_grad_() for a in arrays]
    out = spec.fn(*xs, **kwargs)
    u = rng.standard_normal(out.shape)
    ts = [rng.standard_normal(a.shape) for a in arrays]
    numeric = _numeric_jvp(_f64(spec, kwargs), arrays, ts)

    grads = tp.autograd.grad(out, xs, tp.from_numpy(u), allow_unused=True)
    for g, x in zip(grads, xs):
        if g is not None:
            assert g.shape == x.shape and g.dtype is x.dtype
    vjp_dot = sum(_dot(g._data, t) for g, t in zip(grads, ts) if g is not None)
    scale = np.linalg.norm(u) * (np.linalg.norm(numeric) + 1e-3)
    assert abs(vjp_dot - _dot(u, numeric)) <= 1e-6 * scale + 1e-8

    with fwAD.dual_level():
        duals = [fwAD.make_dual(tp.from_numpy(a), tp.from_numpy(t)) for a, t in zip(arrays, ts)]
        tangent = fwAD.unpack_dual(spec.fn(*duals, **kwargs)).tangent
    tangent = np.zeros(out.shape) if tangent is None else tangent._data
    np.testing.assert_allclose(tangent, numeric, rtol=1e-6, atol=1e-7)
    # the exact dot-product test between the two rule sets
    assert abs(_dot(u, tangent) - vjp_dot) <= 1e-12 * (scale + 1)


@pytest.mark.parametrize("spec,label,i", CASES, ids=IDS)
def test_second_order(spec, label, i):
    if not spec.smooth:
        pytest.skip("piecewise linear: second derivative is zero almost everywhere")
    arrays, kwargs = _sample(spec, i, seed=4)
    rng = np.random.default_rng(5)
    with tp.no_grad():
        out_shape = spec.fn(*[tp.from_numpy(a) for a in arrays], **kwargs).shape
    u = tp.from_numpy(rng.standard_normal(out_shape))
    ws = [rng.standard_normal(a.shape) for a in arrays]
    ts = [rng.standard_normal(a.shape) for a in arrays]

    def h(*arrs):
        """<VJP(x; u), w> as a float64 array, for finite differences."""
        xs = [tp.from_numpy(np.array(a)).requires_grad_() for a in arrs]
        gs = tp.autograd.grad(spec.fn(*xs, **kwargs), xs, u, allow_unused=True)
        return np.array(sum(_dot(g._data, w) for g, w in zip(gs, ws) if g is not None))

    numeric = float(_numeric_jvp(h, arrays, ts))
    xs = [tp.from_numpy(a.copy()).requires_grad_() for a in arrays]
    gs = tp.autograd.grad(spec.fn(*xs, **kwargs), xs, u, create_graph=True, allow_unused=True)
    hx = sum((g * tp.from_numpy(w)).sum() for g, w in zip(gs, ws) if g is not None)
    if isinstance(hx, tp.Tensor) and hx.requires_grad:
        ggs = tp.autograd.grad(hx, xs, allow_unused=True)
        analytic = sum(_dot(g._data, t) for g, t in zip(ggs, ts) if g is not None)
    else:
        analytic = 0.0                                 # the VJP does not depend on x
    assert abs(analytic - numeric) <= 1e-5 * (abs(numeric) + 1)

    # forward-over-reverse: JVP of the VJP function, in forward mode
    def vjp_fn(*xs_):
        xs_ = [x.requires_grad_() for x in xs_]       # dual leaves from make_dual
        gs_ = tp.autograd.grad(spec.fn(*xs_, **kwargs), xs_, u, create_graph=True,
                               allow_unused=True)
        return tuple(g if g is not None else tp.zeros_like(x) for g, x in zip(gs_, xs_))

    xs = tuple(tp.from_numpy(a.copy()) for a in arrays)
    _, fwd = jvp(vjp_fn, xs, tuple(tp.from_numpy(t) for t in ts), mode="forward")
    fwd_dot = sum(_dot(j._data, w) for j, w in zip(fwd, ws))
    assert abs(fwd_dot - numeric) <= 1e-5 * (abs(numeric) + 1)


@pytest.mark.parametrize("spec,label,i", CASES, ids=IDS)
def test_jvp_modes_agree(spec, label, i):
    arrays, kwargs = _sample(spec, i, seed=6)
    rng = np.random.default_rng(7)
    xs = tuple(tp.from_numpy(a) for a in arrays)
    vs = tuple(tp.from_numpy(rng.standard_normal(a.shape)) for a in arrays)
    out_f, jf = jvp(lambda *x: spec.fn(*x, **kwargs), xs, vs, mode="forward")
    out_r, jr = jvp(lambda *x: spec.fn(*x, **kwargs), xs, vs, mode="reversed")
    np.testing.assert_allclose(out_f._data, out_r._data, rtol=0, atol=0)
    np.testing.assert_allclose(jf._data, jr._data, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("spec,label,i", CASES, ids=IDS)
def test_float32_gradients_match_float64(spec, label, i):
    arrays, kwargs = _sample(spec, i, seed=8)
    results = {}
    for dtype in (np.float32, np.float64):
        xs = [tp.from_numpy(_cast_keep_layout(a, dtype)).requires_grad_() for a in arrays]
        out = spec.fn(*xs, **kwargs)
        u = tp.from_numpy(np.random.default_rng(9).standard_normal(out.shape).astype(dtype))
        gs = tp.autograd.grad(out, xs, u, allow_unused=True)
        for g, x in zip(gs, xs):
            assert g is None or g.dtype is x.dtype
        results[dtype] = gs
    for g32, g64 in zip(results[np.float32], results[np.float64]):
        if g64 is None:
            assert g32 is None
            continue
        np.testing.assert_allclose(g32._data, g64._data, rtol=1e-4, atol=1e-4)
