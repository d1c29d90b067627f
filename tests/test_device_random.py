"""What PyTorch code passes around (issue 7): devices, NumPy's argument aliases,
``new_*``/``type_as``, the random samplers and fills, DLPack, ``__array__``'s
``copy=``, and the message for a PyTorch name tensorplay lacks.

References: the closed-form moments of each distribution (with a fixed seed and
tolerances of several standard errors), numpy, and torch where installed.
"""
import numpy as np
import pytest

import tensorplay as tp

CREATION = [lambda d: tp.zeros(2, device=d), lambda d: tp.ones(2, device=d),
            lambda d: tp.empty(2, device=d), lambda d: tp.full((2,), 1.0, device=d),
            lambda d: tp.tensor([1.0], device=d), lambda d: tp.as_tensor([1.0], device=d),
            lambda d: tp.arange(3, device=d), lambda d: tp.linspace(0, 1, 3, device=d),
            lambda d: tp.eye(2, device=d), lambda d: tp.rand(2, device=d),
            lambda d: tp.randn(2, device=d), lambda d: tp.randint(3, (2,), device=d),
            lambda d: tp.zeros_like(tp.ones(2), device=d),
            lambda d: tp.randperm(3, device=d), lambda d: tp.normal(0.0, 1.0, (2,), device=d),
            lambda d: tp.ones(2).new_zeros(3, device=d)]


# ---------------------------------------------------------------- devices
@pytest.mark.parametrize("make", CREATION)
@pytest.mark.parametrize("dev", [None, "cpu", "cpu:0", tp.device("cpu"), tp.device("cpu", 0)])
def test_creation_takes_a_cpu_device(make, dev):
    assert make(dev).device == tp.device("cpu")


@pytest.mark.parametrize("make", CREATION)
@pytest.mark.parametrize("dev", ["cuda", "cuda:0", tp.device("cuda"), "meta", "cpu:1"])
def test_creation_refuses_other_devices_naming_the_op(make, dev):
    with pytest.raises(RuntimeError, match=r"\(\): tensorplay tensors live on the CPU only"):
        make(dev)


def test_device_object_follows_torch_device():
    d = tp.device("cpu")
    assert repr(d) == "device(type='cpu')" and str(d) == "cpu" and d.type == "cpu"
    assert d.index is None and tp.device("cpu:0").index == 0
    assert tp.device("cpu") == "cpu" and tp.device("cuda", 1) == "cuda:1"
    assert tp.device("cpu") != tp.device("cpu:0") and tp.device(d) == d
    assert len({tp.device("cpu"), tp.device("cpu")}) == 1
    with pytest.raises(RuntimeError, match="device type at start of device string: gpu"):
        tp.device("gpu")
    with pytest.raises(RuntimeError, match="Invalid device string"):
        tp.device("cpu:x")
    with pytest.raises(TypeError):
        tp.device(1.5)
    x = tp.ones(2)
    assert x.device == "cpu" and x.cpu() is x and x.is_cuda is False and x.is_cpu
    assert x.to(tp.device("cpu")) is x and x.to("cpu", tp.float64).dtype is tp.float64
    with pytest.raises(RuntimeError, match="CPU only"):
        x.cuda()
    with pytest.raises(RuntimeError, match=r"to\(\).*CPU only"):
        x.to(tp.device("cuda"))
    assert tp.cuda.is_available() is False and tp.cuda.device_count() == 0


def test_torch_device_objects_are_accepted():
    torch = pytest.importorskip("torch")
    assert tp.zeros(2, device=torch.device("cpu")).device == "cpu"
    with pytest.raises(RuntimeError, match="CPU only"):
        tp.zeros(2, device=torch.device("cuda"))


def test_the_usual_device_idiom_runs():
    device = tp.device("cuda" if tp.cuda.is_available() else "cpu")
    x = tp.randn(3, device=device).to(device)
    assert tp.zeros_like(x, device=x.device).device == device


# ---------------------------------------------------------------- numpy aliases
def test_axis_and_keepdims_are_aliases_of_dim_and_keepdim():
    a = np.arange(12.0).reshape(3, 4)
    x = tp.tensor(a)
    np.testing.assert_array_equal(x.sum(axis=0).numpy(), a.sum(axis=0))
    np.testing.assert_array_equal(tp.sum(x, axis=1, keepdims=True).numpy(),
                                  a.sum(axis=1, keepdims=True))
    np.testing.assert_array_equal(x.mean(axis=(0, 1)).numpy(), a.mean())
    np.testing.assert_array_equal(tp.stack([x, x], axis=1).numpy(), np.stack([a, a], axis=1))
    with pytest.raises(TypeError, match="both 'dim' and its NumPy alias 'axis'"):
        x.sum(dim=0, axis=0)
    with pytest.raises(TypeError):
        x.sum(0, axis=1)                       # dim twice


def test_axis_keeps_gradients():
    x = tp.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    (g,) = tp.autograd.grad((x * x).sum(axis=1).sum(), [x])
    np.testing.assert_array_equal(g.numpy(), 2 * np.arange(6.0).reshape(2, 3))


# ---------------------------------------------------------------- new_* and type_as
def test_new_factories_take_self_dtype_unless_given():
    x = tp.ones(2, dtype=tp.float64)
    assert x.new_zeros(2, 3).dtype is tp.float64 and x.new_zeros((2, 3)).shape == (2, 3)
    assert x.new_ones(2, dtype=tp.int64).dtype is tp.int64
    np.testing.assert_array_equal(x.new_full((2,), 7).numpy(), [7.0, 7.0])
    assert x.new_empty(4).shape == (4,)
    t = x.new_tensor([1, 2])
    assert t.dtype is tp.float64 and t.tolist() == [1.0, 2.0]
    src = tp.ones(2, requires_grad=True)
    c = x.new_tensor(src)
    assert not c.requires_grad and c.grad_fn is None
    c.add_(1)
    assert src.tolist() == [1.0, 1.0]          # a copy
    assert x.new_zeros(2, requires_grad=True).requires_grad
    i = tp.tensor([1, 2])
    assert i.type_as(x).dtype is tp.float64 and x.type_as(x) is x
    with pytest.raises(TypeError, match="type_as"):
        x.type_as(np.ones(2))
    with pytest.raises(RuntimeError):
        x.new_zeros(-1)


def test_tensor_where_takes_self_where_the_condition_holds():
    x, y = tp.tensor([1.0, 2.0, 3.0], requires_grad=True), tp.zeros(3)
    r = x.where(x > 1.5, y)
    assert r.tolist() == [0.0, 2.0, 3.0]
    (g,) = tp.autograd.grad(r.sum(), [x])
    assert g.tolist() == [0.0, 1.0, 1.0]


# ---------------------------------------------------------------- random
def _moments(samples):
    s = np.asarray(samples, np.float64).ravel()
    return s.mean(), s.var()


def test_seeded_samplers_repeat():
    for draw in (lambda: tp.randperm(10), lambda: tp.normal(0.0, 1.0, (5,)),
                 lambda: tp.bernoulli(tp.full((8,), 0.5)),
                 lambda: tp.multinomial(tp.ones(6), 3),
                 lambda: tp.empty(5).uniform_(), lambda: tp.empty(5).normal_(),
                 lambda: tp.empty(5, dtype=tp.int64).random_(10)):
        tp.manual_seed(3)
        a = draw().numpy()
        tp.manual_seed(3)
        np.testing.assert_array_equal(a, draw().numpy())


def test_randperm_is_a_permutation():
    tp.manual_seed(0)
    p = tp.randperm(100)
    assert p.dtype is tp.int64 and sorted(p.tolist()) == list(range(100))
    assert tp.randperm(0).shape == (0,) and tp.randperm(5, dtype=tp.float32).dtype is tp.float32
    with pytest.raises(RuntimeError, match="too large"):
        tp.randperm(300, dtype=tp.bool)
    with pytest.raises(RuntimeError, match="non-negative"):
        tp.randperm(-1)


def test_distribution_moments_match_closed_forms():
    tp.manual_seed(1)
    n = 200_000
    m, v = _moments(tp.empty(n).uniform_(-1.0, 3.0).numpy())
    assert abs(m - 1.0) < 0.02 and abs(v - 16 / 12) < 0.02
    m, v = _moments(tp.empty(n, dtype=tp.float64).normal_(2.0, 0.5).numpy())
    assert abs(m - 2.0) < 0.01 and abs(v - 0.25) < 0.01
    m, v = _moments(tp.empty(n).exponential_(4.0).numpy())
    assert abs(m - 0.25) < 0.01 and abs(v - 1 / 16) < 0.01
    m, _ = _moments(tp.bernoulli(tp.full((n,), 0.3)).numpy())
    assert abs(m - 0.3) < 0.01
    m, _ = _moments(tp.empty(n).bernoulli_(0.8).numpy())
    assert abs(m - 0.8) < 0.01
    m, v = _moments(tp.normal(tp.full((n,), -1.0), tp.full((n,), 2.0)).numpy())
    assert abs(m + 1.0) < 0.03 and abs(v - 4.0) < 0.1
    m, v = _moments(tp.empty(n, dtype=tp.int64).random_(3, 7).numpy())
    assert abs(m - 4.5) < 0.02 and abs(v - 1.25) < 0.02      # discrete uniform {3..6}


def test_multinomial_frequencies_and_rules():
    tp.manual_seed(2)
    w = tp.tensor([1.0, 0.0, 3.0])
    s = tp.multinomial(w, 40_000, replacement=True).numpy()
    counts = np.bincount(s, minlength=3) / s.size
    np.testing.assert_allclose(counts, [0.25, 0.0, 0.75], atol=0.01)
    rows = tp.multinomial(tp.tensor([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]), 2)
    assert rows.shape == (2, 2) and rows.dtype is tp.int64
    assert set(rows[0].tolist()) == {0, 1} and set(rows[1].tolist()) == {1, 2}
    with pytest.raises(RuntimeError, match="without replacement"):
        tp.multinomial(w, 3)
    with pytest.raises(RuntimeError, match="inf"):
        tp.multinomial(tp.tensor([1.0, -1.0]), 1)
    with pytest.raises(RuntimeError, match="sum of probabilities"):
        tp.multinomial(tp.zeros(3), 1)
    with pytest.raises(RuntimeError, match="1 or 2 dim"):
        tp.multinomial(tp.ones(2, 2, 2), 1)


def test_random_argument_errors():
    with pytest.raises(RuntimeError, match="from=2.0 > to=1.0"):
        tp.empty(2).uniform_(2, 1)
    with pytest.raises(RuntimeError, match="std >= 0"):
        tp.empty(2).normal_(0, -1)
    with pytest.raises(RuntimeError, match=r"\[0, 1\]"):
        tp.bernoulli(tp.tensor([1.5]))
    with pytest.raises(RuntimeError, match="out of bounds"):
        tp.empty(2, dtype=tp.int32).random_(0, 2 ** 40)
    with pytest.raises(TypeError, match="size"):
        tp.normal(0.0, 1.0)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        tp.ones(2, requires_grad=True).uniform_()
    w = tp.ones(2, requires_grad=True)
    with tp.no_grad():
        w.normal_()                            # nn.init's way
    assert w.requires_grad and w.grad_fn is None


# ---------------------------------------------------------------- DLPack and __array__
def test_dlpack_shares_memory_with_numpy_both_ways():
    x = tp.arange(6.0).reshape(2, 3)
    a = np.from_dlpack(x)
    a[0, 0] = 42.0
    assert x[0, 0].item() == 42.0
    b = np.arange(4.0)
    t = tp.from_dlpack(b)
    b[1] = -1.0
    assert t.tolist() == [0.0, -1.0, 2.0, 3.0] and x.__dlpack_device__() == (1, 0)
    with pytest.raises(RuntimeError, match="require gradient"):
        x.requires_grad_().__dlpack__()
    with pytest.raises(TypeError, match="__dlpack__"):
        tp.from_dlpack([1, 2])


def test_dlpack_with_torch():
    torch = pytest.importorskip("torch")
    x = tp.arange(4.0)
    t = torch.from_dlpack(x)
    t[0] = 9.0
    assert x[0].item() == 9.0
    src = torch.arange(3, dtype=torch.float64)
    y = tp.from_dlpack(src)
    src[2] = 7.0
    assert y.dtype is tp.float64 and y.tolist() == [0.0, 1.0, 7.0]


def test_array_honours_copy():
    x = tp.arange(3.0)
    v = np.asarray(x)
    v[0] = 5.0
    assert x[0].item() == 5.0                      # a view
    c = np.array(x, copy=True)
    c[1] = 6.0
    assert x[1].item() == 1.0
    np.array(x, copy=False)[2] = 8.0
    assert x[2].item() == 8.0
    with pytest.raises(ValueError, match="copy"):
        np.array(x, dtype=np.float64, copy=False)
    assert np.array(x, dtype=np.float64).dtype == np.float64


# ---------------------------------------------------------------- missing names
def test_missing_names_say_whether_pytorch_has_them():
    with pytest.raises(AttributeError, match="PyTorch has torch.fft, and tensorplay does not"):
        tp.fft
    with pytest.raises(AttributeError, match=r"has no attribute 'frobnicate'$"):
        tp.frobnicate
    with pytest.raises(AttributeError, match="PyTorch has Tensor.cholesky_inverse"):
        tp.ones(2).cholesky_inverse
    with pytest.raises(AttributeError, match=r"'Tensor' object has no attribute 'frob'$"):
        tp.ones(2).frob
    assert not hasattr(tp.ones(2), "frob") and hasattr(tp.ones(2), "sum")
