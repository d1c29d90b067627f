"""tensorplay.Generator (PyTorch's API over numpy's PCG64) and the ``generator=``
argument of every sampler.

References: numpy's own Generator seeded the same way (the streams are numpy's by
design), PyTorch's documented API (torch when installed), and the samplers'
own seeded reproducibility.
"""
import copy
import pickle

import numpy as np
import pytest

import tensorplay as tp

SAMPLERS = {
    "rand": lambda g: tp.rand(3, 2, generator=g),
    "randn": lambda g: tp.randn(4, generator=g, dtype=tp.float64),
    "randint": lambda g: tp.randint(0, 10, (6,), generator=g),
    "randperm": lambda g: tp.randperm(8, generator=g),
    "normal": lambda g: tp.normal(0.0, 2.0, (5,), generator=g),
    "normal_tensor": lambda g: tp.normal(tp.zeros(3), tp.ones(3), generator=g),
    "bernoulli": lambda g: tp.bernoulli(tp.full((9,), 0.5), generator=g),
    "multinomial": lambda g: tp.multinomial(tp.ones(6), 3, generator=g),
    "uniform_": lambda g: tp.empty(5).uniform_(-1, 1, generator=g),
    "normal_": lambda g: tp.empty(5).normal_(generator=g),
    "bernoulli_": lambda g: tp.empty(5).bernoulli_(0.3, generator=g),
    "exponential_": lambda g: tp.empty(5).exponential_(generator=g),
    "random_": lambda g: tp.empty(5, dtype=tp.int64).random_(0, 100, generator=g),
}


def test_rand_draws_numpys_pcg64_stream_of_the_seed():
    g = tp.Generator().manual_seed(123)
    np.testing.assert_array_equal(tp.rand(4, generator=g, dtype=tp.float64).numpy(),
                                  np.random.default_rng(123).random(4))
    np.testing.assert_array_equal(tp.randperm(7, generator=tp.Generator().manual_seed(5))
                                  .numpy(), np.random.default_rng(5).permutation(7))


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_each_sampler_takes_a_generator_and_repeats_with_its_seed(name):
    draw = SAMPLERS[name]
    a = draw(tp.Generator().manual_seed(7)).numpy()
    tp.manual_seed(0)                      # the default generator does not matter
    tp.rand(11)
    b = draw(tp.Generator().manual_seed(7)).numpy()
    np.testing.assert_array_equal(a, b)
    g = tp.Generator().manual_seed(7)
    draw(g)
    c = [draw(g).numpy() for _ in range(3)]  # the generator advances
    assert not all(np.array_equal(a, x) for x in c)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_a_generator_leaves_the_default_stream_alone(name):
    tp.manual_seed(1)
    expected = tp.rand(3).numpy()
    tp.manual_seed(1)
    SAMPLERS[name](tp.Generator().manual_seed(2))
    np.testing.assert_array_equal(tp.rand(3).numpy(), expected)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_generator_must_be_a_tensorplay_generator(name):
    with pytest.raises(TypeError, match=r"\(\): argument 'generator' must be "
                                        r"tensorplay.Generator, not int"):
        SAMPLERS[name](3)


def test_default_generator_is_what_manual_seed_seeds():
    tp.manual_seed(42)
    assert tp.default_generator.initial_seed() == 42 == tp.initial_seed()
    a = tp.rand(3).numpy()
    tp.default_generator.manual_seed(42)
    np.testing.assert_array_equal(tp.rand(3).numpy(), a)
    tp.manual_seed(42)
    np.testing.assert_array_equal(tp.rand(3, generator=tp.default_generator).numpy(), a)


def test_fresh_generators_start_from_pytorchs_default_seed():
    g = tp.Generator()
    assert g.initial_seed() == 67280421310721
    assert g.device == tp.device("cpu") and tp.Generator("cpu").device.type == "cpu"
    np.testing.assert_array_equal(tp.rand(3, generator=tp.Generator()).numpy(),
                                  tp.rand(3, generator=tp.Generator()).numpy())
    assert tp.Generator().manual_seed(3) is not None
    g2 = tp.Generator()
    assert g2.manual_seed(3) is g2


def test_fresh_generator_default_seed_matches_torch():
    torch = pytest.importorskip("torch")
    assert tp.Generator().initial_seed() == torch.Generator().initial_seed()


def test_seed_reseeds_nondeterministically_and_reports_it():
    g = tp.Generator()
    s = g.seed()
    assert isinstance(s, int) and 0 <= s < 2 ** 63 and g.initial_seed() == s
    a = tp.rand(4, generator=g).numpy()
    np.testing.assert_array_equal(tp.rand(4, generator=tp.Generator().manual_seed(s))
                                  .numpy(), a)
    assert g.seed() != s                   # 2**-63 chance of a false failure
    s0 = tp.seed()
    assert tp.initial_seed() == s0


def test_state_round_trips_and_replays():
    g = tp.Generator().manual_seed(9)
    tp.randn(3, generator=g)
    state = g.get_state()
    assert state.dtype is tp.int64 and state.ndim == 1
    a = tp.randn(5, generator=g).numpy()
    g.set_state(state)
    np.testing.assert_array_equal(tp.randn(5, generator=g).numpy(), a)
    other = tp.Generator().set_state(state)
    np.testing.assert_array_equal(tp.randn(5, generator=other).numpy(), a)
    assert other.initial_seed() == 9


def test_state_keeps_a_half_used_uint32_and_large_seeds():
    g = tp.Generator().manual_seed(2 ** 70 + 5)
    g._numpy().integers(0, 2 ** 32, dtype=np.uint32)   # leaves has_uint32 set
    state = g.get_state()
    h = tp.Generator().set_state(state)
    assert h.initial_seed() == 2 ** 70 + 5
    assert g._numpy().bit_generator.state == h._numpy().bit_generator.state


def test_default_rng_state_functions():
    tp.manual_seed(5)
    st = tp.get_rng_state()
    a = tp.rand(4).numpy()
    tp.set_rng_state(st)
    np.testing.assert_array_equal(tp.rand(4).numpy(), a)


def test_generators_pickle_and_deepcopy_with_their_state():
    g = tp.Generator().manual_seed(11)
    tp.rand(2, generator=g)
    for h in (copy.deepcopy(g), pickle.loads(pickle.dumps(g))):
        np.testing.assert_array_equal(tp.rand(3, generator=h).numpy(),
                                      tp.rand(3, generator=copy.deepcopy(g)).numpy())
        assert h is not g and h.initial_seed() == 11


def test_generator_errors():
    g = tp.Generator()
    with pytest.raises(TypeError, match="seed"):
        g.manual_seed(1.5)
    with pytest.raises(TypeError, match="seed"):
        g.manual_seed(True)
    with pytest.raises(ValueError, match="non-negative"):
        g.manual_seed(-1)
    with pytest.raises(RuntimeError, match="CPU"):
        tp.Generator("cuda")
    with pytest.raises(TypeError, match="int64 Tensor"):
        g.set_state([1, 2, 3])
    with pytest.raises(TypeError, match="float32"):
        g.set_state(tp.zeros(8))
    for bad in (tp.zeros(8, dtype=tp.int64), tp.zeros(2, 8, dtype=tp.int64),
                tp.tensor([1, 0, 0, 0, 0, 0, 0, 0, 0]), tp.tensor([1, 0, 0, 0, 0, 0, 5, 0])):
        with pytest.raises(RuntimeError, match="not a tensorplay generator state"):
            g.set_state(bad)
    before = g.get_state().numpy()
    with pytest.raises(RuntimeError):
        g.set_state(tp.tensor([1, 0, 0, 0, 0, 0, 5, 0]))
    np.testing.assert_array_equal(g.get_state().numpy(), before)   # left unchanged


def test_generators_refuse_randomness_under_vmap_as_the_default_does():
    g = tp.Generator().manual_seed(0)
    with pytest.raises(RuntimeError, match="randomness"):
        tp.func.vmap(lambda x: x + tp.rand(2, generator=g))(tp.ones(3, 2))
