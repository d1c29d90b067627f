"""Fuzzing every op-table row (tests/op_table.py) from its declared Signature
(tensorplay/_ops/_validate.py).

Valid draws: random shapes (0-d, empty and size-1 dims, broadcast pairs), dtypes
(float32, float64, and integer/bool where the row's Signature accepts them),
layouts (contiguous, strided, negative strides, Fortran order) and values in the
row's domain.  The forward must match the numpy reference (per-dtype
tolerances); in float64 the VJP must match central finite differences,
<u, J t> ~ <J^T u, t>, and the JVP must match the VJP exactly enough,
<u, J t>_jvp == <J^T u, t>_vjp.

Invalid draws: one argument of a valid call is broken in a way the Signature
forbids (a non-Tensor, a dtype outside its kinds, shapes that do not broadcast,
a dim out of range or of the wrong type, a repeated dim, a bad flag, ...).  The
public op must raise the exception type the Signature documents, and leave
every input as it was (data bytes and version counters).

Profiles: ``fast`` (the default run: derandomized, no example database) and
``deep`` (``TENSORPLAY_FUZZ=deep``, or the slow-marked tests): many more
examples, random seeds.  The run's counts are printed at the end (conftest.py).
"""
import importlib
import math
import os
import pkgutil
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import tensorplay as tp
import tensorplay._ops as ops
from tensorplay._ops._validate import (SIGNATURES, BoolArg, DimArg, DimsArg, DtypeArg,
                                       IndexArg, IntArg, PermArg, SizesArg, TensorArg,
                                       TensorListArg)
from tensorplay.autograd import forward_ad as fwAD

from op_table import AWAY, SPECS

try:
    import torch                 # an optional reference (result dtypes, error types)
except ImportError:
    torch = None

_COMMON = dict(database=None, deadline=None, print_blob=True,
               suppress_health_check=list(HealthCheck))
settings.register_profile("fast", max_examples=30, derandomize=True, **_COMMON)
settings.register_profile("deep", max_examples=250, derandomize=False, **_COMMON)
PROFILE = os.environ.get("TENSORPLAY_FUZZ", "fast")

IDS = [spec.id for spec in SPECS]
DTYPES = {"f": [np.float32, np.float64], "i": [np.int64, np.int32], "b": [np.bool_]}
LAYOUTS = ("contig", "noncontig", "flipped", "transposed")
EPS = 1e-6
SPECIAL = np.array([np.inf, -np.inf, np.nan, -0.0])


# ---------------------------------------------------------------- guards
@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_every_row_has_fuzz_information(spec):
    """A row without fuzz information, or whose information does not fit the
    Signature it names, fails here (so a new op cannot go unfuzzed)."""
    f = spec.fuzz
    assert f is not None, f"op-table row {spec.id} has no fuzz=Fuzz(...) information"
    assert f.sig in SIGNATURES, f"row {spec.id}: no declared Signature {f.sig!r}"
    sig = SIGNATURES[f.sig]
    for name in f.args:
        assert name in sig.names, f"row {spec.id}: {name!r} is not a parameter of {sig}"
        p = sig.param(name)
        assert isinstance(p, (TensorArg, TensorListArg)), f"row {spec.id}: {name!r}"
        assert set(f.kinds) <= set(p.kinds) or getattr(p, "to_float", False), \
            f"row {spec.id}: kinds {f.kinds!r} not accepted by {name!r} ({p.kinds!r})"
    assert set(f.layouts) <= set(LAYOUTS)
    assert _public(sig) is not None, f"{sig}: no public function {sig.public!r}"


def _public(sig):
    """The public function a Signature declares: ``tensorplay._ops.<public>``, or
    for ``linalg.<name>`` the family export ``tensorplay._ops.LINALG[name]``."""
    if sig.public.startswith("linalg."):
        return ops.LINALG.get(sig.public[len("linalg."):])
    return getattr(ops, sig.public, None)


def test_every_declared_signature_is_fuzzed():
    """A declared Signature that no row exercises is dead weight or a gap."""
    used = {spec.fuzz.sig for spec in SPECS if spec.fuzz}
    used |= {sig.op for sig in INPLACE}             # test_fuzz_inplace
    unused = set(SIGNATURES) - used - _NOT_IN_TABLE
    assert not unused, f"declared Signatures without an op-table row: {sorted(unused)}"


# public ops with a Signature but no op-table row: thin wrappers over a row's op
# (view_as is view(other.shape)) and the comparisons, which have no primitive
_NOT_IN_TABLE = {"view_as", "reshape_as", "eq", "ne", "lt", "le", "gt", "ge"}
# and what a family lists as NO_PRIMITIVE: public ops with bool or integer results
# and no primitive (logical.py: isclose, logical_and, bitwise_and, ...), which the
# family's own tests check instead
_NOT_IN_TABLE |= {name for fam in pkgutil.iter_modules(ops.__path__)
                  if not fam.name.startswith("_") and fam.name != "registry"
                  for name in getattr(importlib.import_module(f"tensorplay._ops.{fam.name}"),
                                      "NO_PRIMITIVE", ())}


# ---------------------------------------------------------------- drawing
def _domain(f, i):
    d = f.domain
    return d[i] if isinstance(d, list) else d


def _values(rng, shape, dtype, domain):
    kind = np.dtype(dtype).kind
    if kind == "b":
        return rng.random(shape) < 0.5
    if domain == AWAY:
        x = rng.uniform(0.2, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
        if kind != "f":
            x = np.where(np.abs(np.rint(x)) < 1, np.sign(x), np.rint(x))
    else:
        lo, hi = domain
        if kind == "f":
            x = rng.uniform(lo, hi, shape)
        else:
            ilo, ihi = math.ceil(lo), math.floor(hi)
            if ilo > ihi:
                ilo = ihi = round((lo + hi) / 2)
            x = rng.integers(ilo, ihi + 1, shape)
    return np.asarray(x).astype(dtype)


def _layout(a, kind):
    """``a``'s values in the memory layout ``kind`` (a view when not contiguous)."""
    if a.ndim == 0 or kind == "contig":
        return np.array(a, order="C")          # (ascontiguousarray makes 0-d 1-d)
    if kind == "noncontig":
        big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        big[..., ::2] = a
        return big[..., ::2]
    if kind == "flipped":                       # negative strides on every dim
        flip = tuple(slice(None, None, -1) for _ in range(a.ndim))
        return np.array(a[flip], order="C")[flip]
    if kind == "transposed":                    # Fortran order
        return np.asfortranarray(a)
    raise ValueError(kind)


def _broadcast_shapes(draw, n, allow_empty):
    nd = draw(st.integers(0, 3))
    base = [draw(st.integers(0 if allow_empty else 1, 4)) for _ in range(nd)]
    shapes = []
    for _ in range(n):
        drop = draw(st.integers(0, nd))
        shape = [1 if draw(st.integers(0, 3)) == 0 else s for s in base[drop:]]
        shapes.append(tuple(shape))
    return shapes


def _draw_shapes(draw, spec, sig):
    f = spec.fuzz
    allow_empty = not (f.skip and "empty" in f.skip)
    if f.shapes is not None:
        shapes = f.shapes(draw)
    elif draw(st.integers(0, 39)) == 0:
        # now and then past the kernels' threading thresholds (OpenMP paths)
        n = len(f.args) if f.args != ("tensors",) else 1
        shapes = [(129, 257)] + [draw(st.sampled_from([(129, 257), (257,), (129, 1)]))
                                 for _ in range(n - 1)]
        if not set(f.args) <= set(sig.broadcast):
            shapes = [shapes[0]] * n
    elif len(f.args) > 1 and set(f.args) <= set(sig.broadcast):
        shapes = _broadcast_shapes(draw, len(f.args), allow_empty)
    else:
        n = len(f.args) if f.args != ("tensors",) else 1
        shape = tuple(draw(st.lists(st.integers(0 if allow_empty else 1, 4), max_size=4)))
        shapes = [shape] * n
    if not allow_empty:
        assume(all(0 not in s for s in shapes))
    return shapes


_SAMPLE_KWARGS = {}


def _sample_kwargs(spec):
    """The keyword names of the row's samples (which Signature dims/flags it takes)."""
    if spec.id not in _SAMPLE_KWARGS:
        _SAMPLE_KWARGS[spec.id] = set(spec.samples(np.random.default_rng(0))[0][2])
    return _SAMPLE_KWARGS[spec.id]


def _ndim_of_param(spec, sig, name, arrays):
    f = spec.fuzz
    if f.args == ("tensors",) or name not in f.args:
        return arrays[0].ndim
    return arrays[f.args.index(name)].ndim


def _draw_sig_kwargs(draw, spec, sig, arrays, taken=()):
    """Valid values for the Signature's dims and flags that the row takes (and
    its own kwargs drawer has not drawn: ``taken``)."""
    out = {}
    for p in sig.params:
        if p.name not in _sample_kwargs(spec) or p.name in taken:
            continue
        if isinstance(p, DimArg):
            n = max(_ndim_of_param(spec, sig, p.of, arrays) + p.extra, 1)
            out[p.name] = draw(st.integers(-n, n - 1))
        elif isinstance(p, DimsArg):
            nd = _ndim_of_param(spec, sig, p.of, arrays)
            n = max(nd, 1)
            choice = draw(st.sampled_from(["none", "int", "tuple"]))
            if choice == "none":
                out[p.name] = None
            elif choice == "int":
                out[p.name] = draw(st.integers(-n, n - 1))
            else:
                dims = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n,
                                     unique=True))
                out[p.name] = tuple(d - n if draw(st.booleans()) else d for d in dims)
        elif isinstance(p, BoolArg):
            out[p.name] = draw(st.booleans())
        elif isinstance(p, PermArg):
            nd = _ndim_of_param(spec, sig, p.of, arrays)
            perm = draw(st.permutations(list(range(nd))))
            out[p.name] = tuple(d - nd if draw(st.booleans()) else d for d in perm)
    return out


def _draw_call(draw, spec):
    """A valid call of the row: (numpy arrays, tensors, kwargs, dtype)."""
    f = spec.fuzz
    sig = SIGNATURES[f.sig]
    shapes = _draw_shapes(draw, spec, sig)
    kind = draw(st.sampled_from(f.kinds))
    dtype = draw(st.sampled_from(DTYPES[kind]))
    dtypes = [dtype] * len(shapes)
    if len(shapes) > 1 and set(f.args) <= set(sig.promote) and draw(st.booleans()):
        # operands of different dtypes exercise promotion (PyTorch's rules)
        dtypes = [draw(st.sampled_from(DTYPES[draw(st.sampled_from(f.kinds))]))
                  for _ in shapes]
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    arrays = [_values(rng, s, d, _domain(f, i)) for i, (s, d) in enumerate(zip(shapes, dtypes))]
    if any(d != dtype for d in dtypes):
        dtype = None                         # mixed: no derivative check
    if f.special and draw(st.integers(0, 7)) == 0:
        for a in arrays:
            if a.dtype.kind == "f" and a.size:
                flat = a.reshape(-1)
                at = rng.integers(0, a.size, max(1, a.size // 4))
                flat[at] = rng.choice(SPECIAL, at.size)
        dtype = None                         # no finite differences through inf/nan
    views = [_layout(a, draw(st.sampled_from(f.layouts))) for a in arrays]
    kwargs = dict(f.kwargs(draw, arrays)) if f.kwargs else {}
    kwargs.update(_draw_sig_kwargs(draw, spec, sig, arrays, set(kwargs)))
    return arrays, views, kwargs, dtype, rng


# ---------------------------------------------------------------- checks
def _ref_inputs(arrays):
    return [a.astype(np.float64) if a.dtype.kind == "f" else a for a in arrays]


def _reference(spec, arrays, kwargs):
    """The numpy reference, or None where numpy has no answer (a reduction with
    no identity over an empty dim).  numpy computes float math on bool in
    float16 and refuses ``-`` on bool: those go through float64 instead."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = np.asarray(spec.ref(*_ref_inputs(arrays), **kwargs))
        except TypeError:
            if not any(a.dtype.kind == "b" for a in arrays):
                raise
            out = None
        except ValueError:
            if not any(a.size == 0 for a in arrays):
                raise
            return None
        if out is None or out.dtype == np.float16:
            out = np.asarray(spec.ref(*[a.astype(np.float64) for a in arrays], **kwargs))
        return out


def _assert_close(out, expected):
    got = np.asarray(out._data)
    assert got.shape == expected.shape, f"shape {got.shape} != reference {expected.shape}"
    if got.dtype.kind == "f":
        tol = 2e-5 if got.dtype == np.float32 else 1e-12
        finite = expected[np.isfinite(expected)]
        scale = max(1.0, float(np.max(np.abs(finite)))) if finite.size else 1.0
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * scale, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


def _dot(a, b):
    return float(np.sum(np.asarray(a, np.float64) * np.asarray(b, np.float64)))


def _check_derivatives(spec, arrays, views, kwargs, rng):
    """float64: VJP against central differences; JVP against the VJP."""
    xs = [tp.from_numpy(v).requires_grad_() for v in views]
    out = spec.fn(*xs, **kwargs)
    if not out.requires_grad or out._data.size == 0:
        return
    if all(a.size == 0 for a in arrays):
        # no input elements: the Jacobian has no columns, so J t = 0, while
        # differences of a constant output (mean of nothing is nan) give nan;
        # the VJP is still checked to be an empty gradient of the input's shape
        u = tp.from_numpy(rng.standard_normal(out.shape))     # any cotangent
        for g, x in zip(tp.autograd.grad(out, xs, u, allow_unused=True), xs):
            assert g is None or (g.shape == x.shape and g.dtype is x.dtype)
        return
    u = rng.standard_normal(out.shape)
    ts = [rng.standard_normal(a.shape) for a in arrays]

    def f(*arrs):
        with tp.no_grad():
            return spec.fn(*[tp.from_numpy(np.array(a)) for a in arrs], **kwargs)._data
    numeric = (f(*[a + EPS * t for a, t in zip(arrays, ts)])
               - f(*[a - EPS * t for a, t in zip(arrays, ts)])) / (2 * EPS)
    grads = tp.autograd.grad(out, xs, tp.from_numpy(u), allow_unused=True)
    for g, x in zip(grads, xs):
        assert g is None or (g.shape == x.shape and g.dtype is x.dtype)
    vjp_dot = sum(_dot(g._data, t) for g, t in zip(grads, ts) if g is not None)
    scale = np.linalg.norm(u) * (np.linalg.norm(numeric) + 1e-3)
    assert abs(vjp_dot - _dot(u, numeric)) <= 1e-6 * scale + 1e-8, \
        f"VJP <J^T u, t> = {vjp_dot} but finite differences give {_dot(u, numeric)}"
    with fwAD.dual_level():
        duals = [fwAD.make_dual(tp.from_numpy(v), tp.from_numpy(t)) for v, t in zip(views, ts)]
        tangent = fwAD.unpack_dual(spec.fn(*duals, **kwargs)).tangent
    jvp = np.zeros(out.shape) if tangent is None else tangent._data
    assert abs(_dot(u, jvp) - vjp_dot) <= 1e-10 * (scale + 1), \
        f"JVP <u, J t> = {_dot(u, jvp)} but VJP <J^T u, t> = {vjp_dot}"


def _check_result_dtype(spec, tensors, kwargs, out):
    """Where the output's dtype is the promoted dtype of two operands, it must be
    PyTorch's (``torch.result_type``), when torch is installed."""
    sig = SIGNATURES[spec.fuzz.sig]
    if torch is None or len(sig.promote) != 2 or sig.op in _COMPARISONS:
        return
    values = _base_call(spec, sig, tensors, kwargs)
    pair = [values[sig.names.index(n)] for n in sig.promote]
    as_torch = [torch.from_numpy(np.array(v._data)) if isinstance(v, tp.Tensor) else v
                for v in pair]
    want = torch.result_type(*as_torch)
    if sig.float_result and not want.is_floating_point:
        want = torch.get_default_dtype()
    assert str(out.dtype).split(".")[-1] == str(want).split(".")[-1], \
        f"{sig.op}: result dtype {out.dtype}, PyTorch promotes to {want}"


_COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}


def _counted(stats, spec, kind):
    stats["examples"] += 1
    stats[kind] += 1
    stats["rows"].add(spec.id)


def _run_valid(spec, data, stats):
    arrays, views, kwargs, dtype, rng = _draw_call(data.draw, spec)
    _counted(stats, spec, "valid")
    expected = _reference(spec, arrays, kwargs)
    try:
        out = spec.fn(*[tp.from_numpy(v) for v in views], **kwargs)
    except Exception:
        stats["crashes"] += 1
        raise
    try:
        if expected is not None:
            _assert_close(out, expected)
        _check_result_dtype(spec, [tp.from_numpy(v) for v in views], kwargs, out)
        if spec.fuzz.grad and dtype == np.float64 and sum(a.size for a in arrays) <= 4096:
            _check_derivatives(spec, arrays, views, kwargs, rng)
    except AssertionError:
        stats["mismatches"] += 1
        raise


# ---------------------------------------------------------------- invalid draws
def _base_call(spec, sig, tensors, kwargs):
    """The public op's full positional argument list for a valid draw."""
    f = spec.fuzz
    if f.base is not None:
        return list(f.base(tensors, kwargs))
    values = []
    for p in sig.params:
        if p.name in f.args:
            values.append(list(tensors) if isinstance(p, TensorListArg)
                          else tensors[f.args.index(p.name)])
        elif p.name in kwargs:
            values.append(kwargs[p.name])
        elif not p.required:
            values.append(p.default)
        else:
            raise AssertionError(f"row {spec.id}: no value for {p.name!r}; give Fuzz(base=...)")
    return values


def _as_kind(t, kind):
    dtype = DTYPES[kind][0]
    a = np.array(t._data)
    if a.dtype.kind == "f":
        a[~np.isfinite(a)] = 0               # inf and nan have no integer value
    return tp.from_numpy(np.array(a.astype(dtype)))


def _with_shape(t, shape):
    return tp.from_numpy(np.zeros(shape, t._data.dtype))


def _mutations(sig, values):
    """Every way the Signature says ``values`` can be broken, as
    (name, replace(draw) -> new values, expected exception type)."""
    out = []

    def at(i, new):
        def replace(draw):
            v = list(values)
            v[i] = new(draw) if callable(new) else new
            return v
        return replace

    for i, p in enumerate(sig.params):
        v = values[i]
        if isinstance(p, TensorArg):
            junk = ["abc", None, [1.0, 2.0], object()] + ([] if p.numbers else [1.5])
            out.append(("not_tensor", at(i, lambda d, j=junk: d(st.sampled_from(j))),
                        TypeError))
            if isinstance(v, tp.Tensor):
                for k in "fib":
                    if k not in p.kinds:
                        out.append(("bad_dtype", at(i, _as_kind(v, k)), p.exc))
                if p.min_ndim:
                    out.append(("min_ndim", at(i, _with_shape(v, ())), RuntimeError))
        elif isinstance(p, TensorListArg):
            out.append(("list_type", at(i, lambda d, t=v[0]: d(st.sampled_from(["abc", t]))),
                        TypeError))
            out.append(("list_empty", at(i, []), RuntimeError))
            out.append(("list_elem", at(i, list(v) + [3.0]), TypeError))
        elif isinstance(p, (DimArg, DimsArg, PermArg)):
            ref = values[sig.names.index(p.of)]
            nd = (ref[0] if isinstance(ref, list) else ref)._data.ndim
            n = max(nd + getattr(p, "extra", 0), 1)
            bad = lambda d, n=n: d(st.one_of(st.integers(n, n + 3),  # noqa: E731
                                             st.integers(-n - 3, -n - 1)))
            if isinstance(p, DimArg):
                out.append(("dim_range", at(i, bad), IndexError))
                out.append(("dim_type", at(i, lambda d: d(st.sampled_from([1.5, True, "0"]))),
                            TypeError))
            elif isinstance(p, DimsArg):
                out.append(("dims_range", at(i, lambda d, b=bad, nd=nd: (0, b(d)) if nd else b(d)),
                            IndexError))
                out.append(("dims_dup", at(i, (0, -n) if nd else (0, -1)), RuntimeError))
                out.append(("dims_type", at(i, lambda d: d(st.sampled_from([1.5, "a", (0.5,)]))),
                            TypeError))
            else:
                out.append(("perm_len", at(i, tuple(range(nd + 1))), RuntimeError))
                if nd >= 2:
                    out.append(("perm_dup", at(i, (0,) * nd), RuntimeError))
                if nd >= 1:
                    out.append(("perm_range", at(i, (nd,) + tuple(range(1, nd))), IndexError))
                    out.append(("perm_type", at(i, (0.5,) + tuple(range(1, nd))), TypeError))
        elif isinstance(p, BoolArg):
            out.append(("flag_type", at(i, lambda d: d(st.sampled_from(["yes", 1.5, None]))),
                        TypeError))
        elif isinstance(p, SizesArg):
            out.append(("sizes_type", at(i, lambda d: d(st.sampled_from([(1.5,), ("a",)]))),
                        TypeError))
        elif isinstance(p, IndexArg):
            ref = values[sig.names.index(p.of)]
            shape = ref._data.shape if isinstance(ref, tp.Tensor) else tuple(ref)
            out.append(("index_type", at(i, 1.5), IndexError))
            if shape:
                out.append(("index_step", at(i, slice(None, None, -1)), ValueError))
                out.append(("index_range", at(i, shape[0] + 2), IndexError))
            out.append(("index_many", at(i, (slice(None),) * (len(shape) + 1)), IndexError))
        elif isinstance(p, DtypeArg):
            out.append(("dtype_type", at(i, "float32"), TypeError))
        elif isinstance(p, IntArg):
            if p.lo is not None:
                out.append(("int_range", at(i, p.lo - 1), p.exc))
            out.append(("int_type", at(i, 1.5), TypeError))
    tensors = [i for i, n in enumerate(sig.names) if n in sig.broadcast
               and isinstance(values[i], tp.Tensor)]
    if len(tensors) >= 2:
        i, j = tensors[:2]

        def mismatch(draw, i=i, j=j):      # (bound now: i is reused below)
            v = list(values)
            v[i], v[j] = _with_shape(v[i], (2,)), _with_shape(v[j], (3,))
            return v
        out.append(("broadcast", mismatch, RuntimeError))
    if sig.same_shape:
        i = sig.names.index(sig.same_shape[1])
        out.append(("same_shape", at(i, _with_shape(values[i], values[i].shape + (2,))),
                    RuntimeError))
    if sig.same_dtype:
        i = sig.names.index(sig.same_dtype[1])
        v = values[i]
        other = np.float64 if v._data.dtype == np.float32 else (
            np.float32 if v._data.dtype.kind == "f" else np.int32)
        if v._data.dtype != other:
            out.append(("same_dtype", at(i, tp.from_numpy(v._data.astype(other))),
                        RuntimeError))
    if sig.promote and set(sig.result_kinds) != {"f", "i", "b"} and not sig.float_result:
        idx = [sig.names.index(n) for n in sig.promote]
        for k in "ib":
            if k in sig.result_kinds or not all(k in sig.param(n).kinds for n in sig.promote):
                continue

            def all_kind(draw, k=k):
                v = list(values)
                for i in idx:
                    v[i] = (_as_kind(v[i], k) if isinstance(v[i], tp.Tensor)
                            else (True if k == "b" else 2))
                return v
            out.append(("bad_result_dtype", all_kind, sig.result_exc))
    return out


def _tensors_in(values):
    for v in values:
        if isinstance(v, tp.Tensor):
            yield v
        elif isinstance(v, list):
            yield from (t for t in v if isinstance(t, tp.Tensor))


def _run_invalid(spec, data, stats):
    f = spec.fuzz
    sig = SIGNATURES[f.sig]
    arrays, views, kwargs, dtype, rng = _draw_call(data.draw, spec)
    tensors = [tp.from_numpy(v) for v in views]
    values = _base_call(spec, sig, tensors, kwargs)
    skip = f.skip or {}
    muts = [m for m in _mutations(sig, values) if not m[0].startswith(tuple(skip))]
    assume(muts)
    name, replace, exc = data.draw(st.sampled_from(muts), label="mutation")
    bad = replace(data.draw)
    _counted(stats, spec, "invalid")
    watched = list(_tensors_in(values)) + list(_tensors_in(bad)) + list(kwargs.values())
    watched = [t for t in watched if isinstance(t, tp.Tensor)]
    before = [(t._data.tobytes(), t._version[0]) for t in watched]
    fn = _public(sig)
    try:
        fn(*bad)
    except exc:
        pass
    except Exception as e:
        stats["crashes"] += 1
        raise AssertionError(f"{sig.op} with {name}: expected {exc.__name__}, got "
                             f"{type(e).__name__}: {e}") from e
    else:
        stats["crashes"] += 1
        raise AssertionError(f"{sig.op} with {name}: expected {exc.__name__}, "
                             f"nothing was raised")
    after = [(t._data.tobytes(), t._version[0]) for t in watched]
    if after != before:
        stats["mismatches"] += 1
        raise AssertionError(f"{sig.op} with {name}: an input changed although the call "
                             f"raised")


# ---------------------------------------------------------------- in-place methods
INPLACE = [sig for sig in SIGNATURES.values() if sig.inplace]
_INPLACE_REF = {"add_": np.add, "sub_": np.subtract, "mul_": np.multiply, "div_": np.divide}


def _method(sig):
    return getattr(tp.Tensor, sig.public.split(".", 1)[1])


def _run_inplace(sig, data, stats):
    """A valid in-place call writes the reference values and bumps the version
    once; an invalid one (the Signature's in-place rule, or a broken argument)
    raises and leaves target and operand as they were."""
    draw = data.draw
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
    drop = draw(st.integers(0, len(shape)))
    oshape = tuple(1 if draw(st.integers(0, 2)) == 0 else n for n in shape[drop:])
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    dtype = draw(st.sampled_from(DTYPES["f"]))
    target_np = _values(rng, shape, dtype, AWAY)
    other_np = _values(rng, oshape, draw(st.sampled_from(DTYPES["f"])), AWAY)
    target = tp.from_numpy(_layout(target_np, draw(st.sampled_from(LAYOUTS))))
    other = tp.from_numpy(other_np)
    if draw(st.booleans()):
        other = float(np.asarray(other_np).reshape(-1)[0]) if other_np.size else 1.5
    muts = [("not_tensor", TypeError), ("grows", RuntimeError),
            ("requires_grad", RuntimeError), ("cast_into_int", RuntimeError)]
    if 0 not in shape and any(n > 1 for n in shape):     # expand() really broadcasts
        muts.append(("readonly", RuntimeError))
    if "b" not in sig.param("other").kinds:
        muts.append(("bool_operand", RuntimeError))
    mutation = draw(st.sampled_from([("valid", None)] * len(muts) + muts), label="mutation")
    name, exc = mutation
    stats["examples"] += 1
    stats["valid" if exc is None else "invalid"] += 1
    stats["inplace"].add(sig.op)
    if name == "not_tensor":
        other = draw(st.sampled_from(["abc", None, [1.0]]))
    elif name == "grows":
        other = tp.from_numpy(np.ones((2,) + shape, dtype))
    elif name == "requires_grad":
        target.requires_grad_()
    elif name == "cast_into_int":
        target = tp.from_numpy(np.ones(shape, np.int64))
        other = 2.5
    elif name == "readonly":
        target = tp.from_numpy(np.ones((1,) * len(shape), dtype)).expand(shape)
    elif name == "bool_operand":
        other = tp.from_numpy(np.ones(oshape, np.bool_))
    # a valid call may also be made on a non-leaf in the graph: recorded, and its
    # gradient checked (d/d target of sum(target <op> other))
    leaf = None
    if exc is None and draw(st.booleans(), label="non_leaf"):
        leaf = tp.from_numpy(target._data.copy()).requires_grad_()
        target = leaf * 1
    watched = [t for t in (target, other) if isinstance(t, tp.Tensor)]
    before = [(t._data.tobytes(), t._version[0]) for t in watched]
    if exc is None:
        other_val = other._data.astype(np.float64) if isinstance(other, tp.Tensor) else other
        expected = _INPLACE_REF[sig.op](target._data.astype(np.float64), other_val)
        try:
            out = _method(sig)(target, other)
            if leaf is not None:
                out.sum().backward()
        except Exception:
            stats["crashes"] += 1
            raise
        try:
            assert out is target and target._version[0] == before[0][1] + 1
            _assert_close(target, np.asarray(expected))
            if leaf is not None:
                ones = np.ones(target._data.shape)
                dgrad = {"add_": ones, "sub_": ones, "mul_": ones * other_val,
                         "div_": ones / other_val}[sig.op]
                _assert_close(leaf.grad, np.asarray(dgrad, np.float64))
        except AssertionError:
            stats["mismatches"] += 1
            raise
        return
    try:
        _method(sig)(target, other)
    except exc:
        pass
    except Exception as e:
        stats["crashes"] += 1
        raise AssertionError(f"{sig.op} with {name}: expected {exc.__name__}, got "
                             f"{type(e).__name__}: {e}") from e
    else:
        stats["crashes"] += 1
        raise AssertionError(f"{sig.op} with {name}: expected {exc.__name__}, nothing raised")
    if [(t._data.tobytes(), t._version[0]) for t in watched] != before:
        stats["mismatches"] += 1
        raise AssertionError(f"{sig.op} with {name}: the target or operand changed although "
                             f"the call raised")


# ---------------------------------------------------------------- the tests
@pytest.mark.parametrize("sig", INPLACE, ids=[s.op for s in INPLACE])
@settings(settings.get_profile(PROFILE))
@given(data=st.data())
def test_fuzz_inplace(sig, data, fuzz_stats):
    _run_inplace(sig, data, fuzz_stats)


@pytest.mark.slow
@pytest.mark.parametrize("sig", INPLACE, ids=[s.op for s in INPLACE])
@settings(settings.get_profile("deep"))
@given(data=st.data())
def test_fuzz_inplace_deep(sig, data, fuzz_stats):
    _run_inplace(sig, data, fuzz_stats)

@pytest.mark.parametrize("spec", SPECS, ids=IDS)
@settings(settings.get_profile(PROFILE))
@given(data=st.data())
def test_fuzz_valid(spec, data, fuzz_stats):
    _run_valid(spec, data, fuzz_stats)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
@settings(settings.get_profile(PROFILE))
@given(data=st.data())
def test_fuzz_invalid(spec, data, fuzz_stats):
    _run_invalid(spec, data, fuzz_stats)


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS, ids=IDS)
@settings(settings.get_profile("deep"))
@given(data=st.data())
def test_fuzz_valid_deep(spec, data, fuzz_stats):
    _run_valid(spec, data, fuzz_stats)


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS, ids=IDS)
@settings(settings.get_profile("deep"))
@given(data=st.data())
def test_fuzz_invalid_deep(spec, data, fuzz_stats):
    _run_invalid(spec, data, fuzz_stats)


# ---------------------------------------------------------------- regressions
# Bugs the fuzzer (or the validation work) found; each once leaked an internal
# error or accepted an invalid call.  Where PyTorch has the same call, its
# exception type is checked too.
_FUSED = [("tanh_backward", 2), ("sigmoid_backward", 2), ("relu_backward", 2),
          ("mul_backward", 2)]


@pytest.mark.parametrize("name,n", _FUSED, ids=[n for n, _ in _FUSED])
@pytest.mark.parametrize("dtype", [tp.int64, tp.int32, tp.bool], ids=str)
def test_fused_backward_rejects_integer_operands(name, n, dtype):
    """Was: TypeError "'NoneType' object is not callable" (no integer loop)."""
    args = [tp.ones(2, dtype=dtype) for _ in range(n)]
    with pytest.raises(NotImplementedError, match=rf"{name}\(\).*'grad_output'"):
        getattr(ops, name)(*args)
    assert isinstance(NotImplementedError(), RuntimeError)   # so RuntimeError catches it


@pytest.mark.skipif(torch is None, reason="torch not installed")
def test_fused_backward_error_type_matches_torch():
    with pytest.raises(NotImplementedError):
        torch.ops.aten.tanh_backward(torch.tensor([1, 2]), torch.tensor([1, 2]))
    with pytest.raises(NotImplementedError):
        ops.tanh_backward(tp.tensor([1, 2]), tp.tensor([1, 2]))


def test_fused_backward_mixed_operands_still_promote():
    g = tp.tensor([1.0, -2.0], dtype=tp.float64)
    out = ops.mul_backward(g, tp.tensor([3, 4]))
    assert out.dtype is tp.float64
    np.testing.assert_array_equal(out._data, np.array([3.0, -8.0]))


def _raises_like_torch(exc, tp_call, torch_call):
    with pytest.raises(exc):
        tp_call()
    if torch is not None:
        with pytest.raises(exc):
            torch_call()


def test_zero_dim_sum_rejects_a_repeated_dim():
    """Was: sum(0-d, dim=(0, -1)) returned the input (the duplicate check came
    after the 0-d early return)."""
    _raises_like_torch(RuntimeError, lambda: tp.sum(tp.tensor(1.0), dim=(0, -1)),
                       lambda: torch.sum(torch.tensor(1.0), dim=(0, -1)))
    _raises_like_torch(RuntimeError, lambda: tp.sum(tp.tensor(1.0), dim=(0, 0)),
                       lambda: torch.sum(torch.tensor(1.0), dim=(0, 0)))
    assert float(tp.sum(tp.tensor(2.5), dim=(0,))) == 2.5


def test_bool_dims_and_flags_are_type_errors():
    """Was: dim=True read as dim 1 (IndexError or a wrong reduction); keepdim took
    any object through bool()."""
    x = tp.ones(2, 3)
    _raises_like_torch(TypeError, lambda: tp.sum(x, dim=True),
                       lambda: torch.sum(torch.ones(2, 3), dim=True))
    _raises_like_torch(TypeError, lambda: tp.sum(x, dim=0, keepdim="yes"),
                       lambda: torch.sum(torch.ones(2, 3), dim=0, keepdim="yes"))
    with pytest.raises(TypeError, match="transpose.*dim0"):
        x.transpose(True, 1)


def test_bool_matmul_is_not_implemented():
    """Was: bool @ bool ran through numpy (PyTorch: not implemented for 'Bool')."""
    a = tp.tensor([[True, False]])
    _raises_like_torch(NotImplementedError, lambda: tp.matmul(a, a.T),
                       lambda: torch.matmul(torch.tensor([[True, False]]),
                                            torch.tensor([[True], [False]])))


def test_where_condition_dtype_is_a_runtime_error():
    """PyTorch raises RuntimeError for a non-bool condition (tensorplay raised
    TypeError)."""
    _raises_like_torch(RuntimeError, lambda: tp.where(tp.tensor([1, 0]), 1.0, 0.0),
                       lambda: torch.where(torch.tensor([1, 0]), 1.0, 0.0))


def test_flatten_checks_dims_of_a_zero_dim_tensor():
    """Was: flatten(0-d, 5) returned shape (1,) without looking at the dims."""
    _raises_like_torch(IndexError, lambda: tp.tensor(1.0).flatten(5),
                       lambda: torch.tensor(1.0).flatten(5))
    assert tp.tensor(1.0).flatten(0, -1).shape == (1,)


def test_generated_checker_source_is_one_function():
    """The generic checker is generated once per Signature (no per-call loop)."""
    from tensorplay._ops.reduce import _check_sum
    assert _check_sum.source.startswith("def check(a0, a1, a2):")
    x = tp.ones(2, 3)
    t, dims, keep = _check_sum(x, -1, True)
    assert t is x and dims == (1,) and keep is True


def test_three_operand_promotion_is_not_pairwise():
    """Found by the deep fuzz profile: f32 (n,), f64 0-d, f64 (n,) promoted
    pairwise rounded the 0-d float64 operand to float32 (the 0-d tensor does
    not upcast the first pair) before the third operand made the result float64."""
    g = tp.tensor([1.0], dtype=tp.float32)
    y = tp.tensor(0.1, dtype=tp.float64)
    b = tp.tensor([3.0], dtype=tp.float64)
    out = ops.div_backward_other(g, y, b)
    assert out.dtype is tp.float64
    assert float(out._data[0]) == -(1.0 * 0.1) / 3.0          # numpy float64 reference
    if torch is not None:
        assert torch.result_type(torch.tensor([1.0], dtype=torch.float32),
                                 torch.tensor(0.1, dtype=torch.float64)) == torch.float32
