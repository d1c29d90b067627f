"""Kernel-level tests of tensorplay._kernels against numpy.

The kernels are called directly with the calling convention the Python layer uses:
same-dtype float32/float64 inputs, a freshly allocated C-contiguous `out`, and
n_threads >= 1.  Tolerances: float32 rtol 1e-6, float64 rtol 1e-13 (libmvec's
exp/log/tanh/pow are within 4 ulp; numpy uses its own SIMD routines).
"""
import numpy as np
import pytest

from tensorplay._kernels import _openmp_helpers, binary, nn, reduce, unary

DTYPES = [np.float32, np.float64]
RTOL = {np.float32: 1e-6, np.float64: 1e-13}
# sizes above every threading threshold (THRESH_CHEAP = 32768, sum: 65536)
BIG = 3 * 65536 + 17


def np_sigmoid(x):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


UNARY = {
    "neg": (unary.neg_fwd, np.negative, None),
    "exp": (unary.exp_fwd, np.exp, None),
    "log": (unary.log_fwd, np.log, "pos"),
    "sqrt": (unary.sqrt_fwd, np.sqrt, "pos"),
    "tanh": (unary.tanh_fwd, np.tanh, None),
    "sigmoid": (unary.sigmoid_fwd, np_sigmoid, None),
    "relu": (unary.relu_fwd, lambda x: np.maximum(x, 0), None),
}
BINARY = {
    "add": (binary.add_fwd, np.add, None),
    "sub": (binary.sub_fwd, np.subtract, None),
    "mul": (binary.mul_fwd, np.multiply, None),
    "div": (binary.div_fwd, np.divide, "nonzero_b"),
    "pow": (binary.pow_fwd, np.power, "pos_a"),
    "tanh_vjp": (binary.tanh_vjp, lambda g, y: g * (1 - y * y), None),
    "sigmoid_vjp": (binary.sigmoid_vjp, lambda g, y: g * y * (1 - y), None),
    "relu_vjp": (binary.relu_vjp, lambda g, x: np.where(x > 0, g, 0).astype(g.dtype),
                 None),
    "mul_vjp": (binary.mul_vjp, np.multiply, None),
    "div_vjp": (binary.div_vjp, np.divide, "nonzero_b"),
    "sqrt_vjp": (binary.sqrt_vjp, lambda g, y: g / (2 * y), "nonzero_b"),
}
# ternary derivative kernels: (kernel, numpy reference, domain of (b, c))
TERNARY = {
    "div_vjp_other": (binary.div_vjp_other, lambda g, y, b: -(g * y) / b, "nonzero_c"),
    "pow_vjp_base": (binary.pow_vjp_base, lambda g, a, b: g * b * a ** (b - 1), "pos_b"),
    "pow_vjp_exponent": (binary.pow_vjp_exponent, lambda g, y, a: g * y * np.log(a),
                         "pos_c"),
}


def rand(rng, shape, dtype, domain=None):
    x = rng.standard_normal(shape) * 2
    if domain == "pos":
        x = np.abs(x) + 0.1
    return np.asarray(x, dtype=dtype)


def close(got, want, dtype):
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=RTOL[dtype], atol=RTOL[dtype] * 1e-3)


def run_unary(name, x, n_threads=1):
    kern = UNARY[name][0]
    out = np.empty(x.shape, x.dtype)
    kern(x, out, n_threads)
    return out


def run_binary(name, a, b, n_threads=1):
    kern = BINARY[name][0]
    out = np.empty(np.broadcast_shapes(a.shape, b.shape), a.dtype)
    kern(a, b, out, n_threads)
    return out


def binary_inputs(name, rng, sa, sb, dtype):
    a, b = rand(rng, sa, dtype), rand(rng, sb, dtype)
    dom = BINARY[name][2]
    if dom == "pos_a":
        a = np.asarray(np.abs(a) + np.asarray(0.1, dtype))
    if dom == "nonzero_b":
        b = np.asarray(np.where(np.abs(b) < 0.1, np.asarray(0.5, dtype), b), dtype)
    return a, b


def close_binary(name, got, a, b, dtype):
    """tanh_vjp / sigmoid_vjp cancel in 1 - y*y, 1 - y (and gcc contracts to FMA):
    allow rtol relative to the size of the terms, not of the result."""
    want = BINARY[name][1](a, b).astype(dtype)
    if name in ("tanh_vjp", "sigmoid_vjp"):
        scale = np.abs(a) * (1 + np.abs(b)) ** 2
        assert got.shape == want.shape
        assert np.all(np.abs(got - want) <= RTOL[dtype] * (np.abs(want) + scale))
    else:
        close(got, want, dtype)


def unary_views(rng, dtype, domain):
    """(label, x) pairs: contiguous, 0-d, size 0 and non-contiguous views."""
    base = rand(rng, (6, 10, 7), dtype, domain)
    return [
        ("contig", rand(rng, (5, 33), dtype, domain)),
        ("0d", rand(rng, (), dtype, domain)),
        ("size0", rand(rng, (0, 4), dtype, domain)),
        ("1d", rand(rng, (1000,), dtype, domain)),
        ("transposed", base.transpose(2, 0, 1)),
        ("T2d", base[0].T),
        ("step", base[:, ::3, 1:6:2]),
        ("negstep", base[::-1, :, ::-2]),
        ("broadcast_to", np.broadcast_to(base[0, 0], (4, 3, 7))),
        ("broadcast_col", np.broadcast_to(base[0, :, :1], (10, 9))),
        ("big_strided", rand(rng, (2 * BIG,), dtype, domain)[::2]),
        ("big_T", rand(rng, (700, 400), dtype, domain).T),
    ]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_matches_numpy(name, dtype):
    rng = np.random.default_rng(0)
    _, ref, domain = UNARY[name]
    for label, x in unary_views(rng, dtype, domain):
        for nt in (1, 2):
            got = run_unary(name, x, nt)
            assert got.shape == x.shape, label
            close(got, ref(x), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_threads_agree_exactly(name, dtype):
    rng = np.random.default_rng(1)
    for x in (rand(rng, (BIG,), dtype, "pos"), rand(rng, (BIG, 3), dtype, "pos")[:, 1]):
        np.testing.assert_array_equal(run_unary(name, x, 1), run_unary(name, x, 2))


@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_special_values(dtype):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e30, 100, -100, 1e-30],
                 dtype)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(run_unary("relu", x),
                                      np.where(np.isnan(x), np.nan, np.maximum(x, 0)))
        # the stable formula keeps tiny results (sigmoid(-100) = 3.7e-44 in float32)
        # that the naive float32 formula flushes to 0 (exp(100) overflows)
        np.testing.assert_allclose(run_unary("sigmoid", x),
                                   np_sigmoid(x.astype(np.float64)).astype(dtype),
                                   rtol=RTOL[dtype], atol=0)
        np.testing.assert_allclose(run_unary("tanh", x), np.tanh(x), rtol=RTOL[dtype])
        np.testing.assert_allclose(run_unary("exp", x), np.exp(x), rtol=RTOL[dtype])
        np.testing.assert_allclose(run_unary("log", x), np.log(x), rtol=RTOL[dtype])
    assert not np.isnan(run_unary("sigmoid", x[:4])).any()


BROADCAST_PAIRS = [
    ((3, 4), (3, 4)),
    ((3, 4), (4,)),
    ((4,), (3, 4)),
    ((3, 1), (1, 4)),
    ((2, 1, 4), (1, 3, 4)),
    ((), (2, 3, 4)),
    ((2, 3, 4), ()),
    ((), ()),
    ((1,), (5,)),
    ((0, 4), (4,)),
    ((3, 0), (1, 0)),
    ((5, 1, 1), (1, 1, 6)),
    ((2, 3, 1, 5), (3, 4, 1)),
    ((BIG,), (BIG,)),
    ((BIG,), ()),
    ((3, 1), (1, BIG // 3)),
    ((BIG // 5, 5), (5,)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcasting(name, dtype):
    rng = np.random.default_rng(2)
    for sa, sb in BROADCAST_PAIRS:
        a, b = binary_inputs(name, rng, sa, sb, dtype)
        for nt in (1, 2):
            got = run_binary(name, a, b, nt)
            close_binary(name, got, a, b, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_noncontiguous(name, dtype):
    rng = np.random.default_rng(3)
    A, B = binary_inputs(name, rng, (8, 9, 10), (8, 9, 10), dtype)
    pairs = [
        (A.transpose(2, 1, 0), B.transpose(2, 1, 0)),    # both transposed
        (A.transpose(2, 1, 0), B[:, 0, 0]),               # transposed + (8,)
        (A[:, ::2, ::-3], B[::-1, ::2, 1::3]),             # steps, negative steps
        (A[0].T, B[1]),                                     # mixed
        (A[:, :1, :], B[:, :, 3]),                          # (8,1,10)+(8,9): broadcasting
        (np.broadcast_to(A[0, 0, :3], (5, 3)), B[0, :5, :3]),  # zero strides
        (A[..., 0], np.broadcast_to(B[0, 0, 0], (8, 9))),
        (A[:, 1:2, 2:3], B[0]),
    ]
    for a, b in pairs:
        try:
            shape = np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            continue
        for nt in (1, 2):
            got = run_binary(name, a, b, nt)
            assert got.shape == shape
            close_binary(name, got, a, b, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_threads_agree_exactly(name, dtype):
    rng = np.random.default_rng(4)
    cases = [((BIG,), (BIG,)), ((BIG // 7, 7), (7,)), ((3, 1), (1, BIG // 3))]
    for sa, sb in cases:
        a, b = binary_inputs(name, rng, sa, sb, dtype)
        np.testing.assert_array_equal(run_binary(name, a, b, 1), run_binary(name, a, b, 2))
    a, b = binary_inputs(name, rng, (600, 500), (500, 600), dtype)
    np.testing.assert_array_equal(run_binary(name, a, b.T, 1), run_binary(name, a, b.T, 2))


def test_kernels_reject_wrong_dtype_and_layout():
    x = np.ones(4, np.float32)
    with pytest.raises(TypeError):
        unary.exp_fwd(x, np.empty(4, np.float64), 1)
    with pytest.raises(TypeError):
        binary.add_fwd(x, np.ones(4, np.float64), np.empty(4, np.float32), 1)
    with pytest.raises(ValueError):
        unary.exp_fwd(x, np.empty((4, 2), np.float32)[:, 0], 1)
    with pytest.raises(ValueError):
        binary.add_fwd(np.ones((3, 4), np.float32)[:, ::2], np.ones(3, np.float32),
                       np.empty((3, 2), np.float32), 1)


# ----------------------------------------------------------------------- reduce

SUM_SHAPES = [(1, 1, 1), (3, 7, 1), (1, 100_003, 1), (2, 5, 3), (4, 33, 300),
              (1, 70_000, 2), (300, 1, 5), (2, 0, 3), (0, 4, 2), (5, 300, 1),
              (1, 40_000, 513)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SUM_SHAPES)
def test_sum(shape, dtype):
    rng = np.random.default_rng(5)
    x = rand(rng, shape, dtype)
    want = x.astype(np.longdouble).sum(axis=1)
    scale = np.abs(x).astype(np.float64).sum(axis=1) + 1
    res = []
    for nt in (1, 2):
        out = np.full((shape[0], shape[2]), np.nan, dtype)
        reduce.sum_fwd(x, out, nt)
        # float32 accumulates in double: only the final rounding to float32
        tol = RTOL[dtype] * (1 if dtype == np.float32 else 10)
        assert np.all(np.abs(out - want) <= tol * scale)
        res.append(out)
    np.testing.assert_array_equal(res[0], res[1])      # independent of n_threads


def test_sum_float32_accumulates_in_double():
    x = np.full((1, 10_000_000, 1), 0.1, np.float32)
    out = np.empty((1, 1), np.float32)
    reduce.sum_fwd(x, out, 2)
    assert out[0, 0] == np.float32(np.float64(np.float32(0.1)) * 10_000_000)


# --------------------------------------------------------------------------- nn

def np_log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    with np.errstate(invalid="ignore"):
        return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1, 1), (4, 10, 1), (64, 1000, 1), (2, 7, 3),
                                   (3, 5, 300), (1, 3, 70_000), (0, 3, 1), (2, 0, 3)])
def test_log_softmax(shape, dtype):
    rng = np.random.default_rng(6)
    x = rand(rng, shape, dtype) * 10
    want = np_log_softmax(x.astype(np.float64), 1) if x.size else x
    res = []
    for nt in (1, 2):
        out = np.empty(shape, dtype)
        nn.log_softmax_fwd(x, out, nt)
        tol = 2e-6 if dtype == np.float32 else 1e-13
        np.testing.assert_allclose(out, want, rtol=tol, atol=tol * 50)
        res.append(out)
    np.testing.assert_array_equal(res[0], res[1])


@pytest.mark.parametrize("dtype", DTYPES)
def test_log_softmax_edge_rows(dtype):
    x = np.array([[-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 1.0], [1e30, 0, -1e30]],
                 dtype)[:, :, None]
    out = np.empty_like(x)
    nn.log_softmax_fwd(x, out, 1)
    want = np_log_softmax(x, 1)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    np.testing.assert_allclose(out[1:], want[1:], rtol=RTOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_nll(dtype):
    rng = np.random.default_rng(7)
    N, C = 37, 11
    logp = rand(rng, (N, C), dtype)
    target = rng.integers(0, C, N).astype(np.int64)
    want = -np.mean(logp[np.arange(N), target].astype(np.float64))
    total, wsum = nn.nll_fwd(logp[..., None], target[:, None], None, None, -100, 2)
    assert isinstance(total, float) and wsum == N
    got = total / wsum
    assert abs(got - want) <= 1e-13 * (1 + abs(want))
    for nt in (1, 2):
        for n, c in ((N, C), (300, 1000)):
            t = rng.integers(0, c, n).astype(np.int64)
            out = np.full((n, c), np.nan, dtype)
            nn.nll_vjp(t[:, None], None, None, 0.5, True, out[..., None], -100, nt)
            ref = np.zeros((n, c), dtype)
            ref[np.arange(n), t] = -0.5 / n
            np.testing.assert_array_equal(out, ref)


def test_openmp_helpers():
    assert isinstance(_openmp_helpers.openmp_enabled(), bool)
    assert _openmp_helpers.omp_max_threads() >= 1
    assert _openmp_helpers.omp_num_procs() >= 1
    if not _openmp_helpers.openmp_enabled():
        assert _openmp_helpers.omp_max_threads() == 1


# ---------------------------------------------------------------- ternary kernels
def ternary_inputs(name, rng, shapes, dtype):
    g, b, c = (rand(rng, s, dtype) for s in shapes)
    dom = TERNARY[name][2]
    if dom == "nonzero_c":
        c = np.asarray(np.where(np.abs(c) < 0.1, np.asarray(0.5, dtype), c), dtype)
    if dom == "pos_b":
        b = np.asarray(np.abs(b) + np.asarray(0.1, dtype))
    if dom == "pos_c":
        c = np.asarray(np.abs(c) + np.asarray(0.1, dtype))
    return g, b, c


def run_ternary(name, a, b, c, n_threads=1):
    out = np.empty(np.broadcast_shapes(a.shape, b.shape, c.shape), a.dtype)
    TERNARY[name][0](a, b, c, out, n_threads)
    return out


def close_ternary(name, got, a, b, c, dtype):
    want = TERNARY[name][1](*(x.astype(np.float64) for x in (a, b, c)))
    assert got.shape == want.shape and got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=4 * RTOL[dtype], atol=RTOL[dtype] * 1e-3)


TERNARY_SHAPES = [((), (), ()), ((5,), (5,), (5,)), ((3, 4), (3, 4), ()),
                  ((3, 4), (), (3, 4)), ((), (3, 4), (3, 4)), ((), (7,), ()),
                  ((4,), (3, 4), (3, 1)), ((2, 1, 4), (3, 4), (4,)), ((0, 3), (3,), ())]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(TERNARY))
def test_ternary_broadcasting(name, dtype):
    rng = np.random.default_rng(5)
    for shapes in TERNARY_SHAPES:
        a, b, c = ternary_inputs(name, rng, shapes, dtype)
        for nt in (1, 2):
            close_ternary(name, run_ternary(name, a, b, c, nt), a, b, c, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(TERNARY))
def test_ternary_noncontiguous_and_threads(name, dtype):
    rng = np.random.default_rng(6)
    A, B, C = ternary_inputs(name, rng, [(8, 9, 10)] * 3, dtype)
    triples = [
        (A.transpose(2, 1, 0), B.transpose(2, 1, 0), C.transpose(2, 1, 0)),
        (A[:, ::2, ::-3], B[::-1, ::2, ::3], C[:, ::2, ::-3]),
        (np.broadcast_to(A[0, 0, :3], (5, 3)), B[0, :5, :3], C[1, 0, :3]),
        (A[..., 0], np.broadcast_to(B[0, 0, 0], (8, 9)), C[:, :, 2]),
    ]
    for a, b, c in triples:
        for nt in (1, 2):
            close_ternary(name, run_ternary(name, a, b, c, nt), a, b, c, dtype)
    for shapes in [((BIG,),) * 3, ((BIG // 7, 7), (BIG // 7, 7), (7,)),
                   ((1,), (3, BIG // 3), (3, 1))]:
        a, b, c = ternary_inputs(name, rng, shapes, dtype)
        np.testing.assert_array_equal(run_ternary(name, a, b, c, 1),
                                      run_ternary(name, a, b, c, 2))
    a, b, c = ternary_inputs(name, rng, [(600, 500), (500, 600), (600, 500)], dtype)
    np.testing.assert_array_equal(run_ternary(name, a, b.T, c, 1),
                                  run_ternary(name, a, b.T, c, 2))


def test_ternary_kernels_check_dtypes_and_shapes():
    x = np.ones(4)
    with pytest.raises(TypeError, match="c has dtype float32"):
        binary.div_vjp_other(x, x, x.astype(np.float32), np.empty(4), 1)
    with pytest.raises(ValueError, match="cannot broadcast"):
        binary.pow_vjp_base(x, x, np.ones(3), np.empty(4), 1)
