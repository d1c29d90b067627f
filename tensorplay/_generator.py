"""``tensorplay.Generator``: a random-number generator object, PyTorch's API over
numpy's ``Generator`` (the PCG64 bit generator).

Every sampler takes ``generator=`` (``randperm``, ``rand``, ``randn``, ``randint``,
``normal``, ``bernoulli``, ``multinomial``, ``Tensor.uniform_`` / ``normal_`` /
``bernoulli_`` / ``exponential_`` / ``random_``); without it they draw from the
process-wide default generator that ``tensorplay.manual_seed`` seeds, which is
also ``tensorplay.default_generator``.

Conventions (PyTorch's where it has them):

* ``Generator()`` starts from PyTorch's fixed default seed ``67280421310721``, so
  two fresh generators draw the same numbers (``initial_seed()`` says so).
  The streams are numpy's, not PyTorch's: one seed gives the same numbers on
  every run of tensorplay, not the numbers torch would give.
* ``manual_seed(seed)`` returns the generator itself; ``seed()`` reseeds from OS
  entropy and returns the new seed; ``initial_seed()`` returns the last seed.
* ``get_state()`` returns the whole state as a 1-D int64 Tensor (PyTorch returns a
  uint8 Tensor; tensorplay has no uint8 dtype) that ``set_state`` takes back.
* Generators pickle and ``copy.deepcopy`` with their state.
"""
import builtins

import numpy as np

from tensorplay import _creation, _device, _dtype
from tensorplay._tensor import Tensor

__all__ = ["Generator", "default_generator", "seed", "get_rng_state", "set_rng_state"]

DEFAULT_SEED = 67280421310721       # PyTorch's default_rng_seed_val
_STATE_VERSION = 1
_MASK64 = (1 << 64) - 1


class Generator:
    """A random-number generator (``torch.Generator``), for the ``generator=``
    argument of the samplers, ``DataLoader``, ``RandomSampler`` and ``random_split``.

    Args:
        device: only the CPU (``None``, ``"cpu"``, ``tensorplay.device("cpu")``).

    Raises:
        RuntimeError: any other device.

    Example::

        >>> g = tensorplay.Generator().manual_seed(0)
        >>> tensorplay.randperm(5, generator=g)      # the same every run
    """
    __slots__ = ("_slot",)

    def __init__(self, device="cpu"):
        _device.check(device, "Generator")
        # [numpy Generator or None (made on first use), seed or None]; the default
        # generator shares its slot with tensorplay.manual_seed.
        self._slot = [np.random.default_rng(DEFAULT_SEED), DEFAULT_SEED]

    @classmethod
    def _sharing(cls, slot):
        g = cls.__new__(cls)
        g._slot = slot
        return g

    @property
    def device(self):
        """Always ``tensorplay.device("cpu")``."""
        return _device.CPU

    def _numpy(self):
        """The numpy Generator behind this one (made from OS entropy if unseeded)."""
        gen = self._slot[0]
        if gen is None:
            gen = self._slot[0] = np.random.default_rng()
        return gen

    def manual_seed(self, seed):
        """Seed the generator; returns ``self`` (so ``Generator().manual_seed(0)``).

        Raises:
            TypeError: a seed that is not an int (bools and floats included).
            ValueError: a negative seed.
        """
        seed = _creation._int_arg(seed, "Generator.manual_seed", "seed")
        if seed < 0:
            raise ValueError(f"Generator.manual_seed(): seed must be non-negative, "
                             f"got {seed}")
        self._slot[0] = np.random.default_rng(seed)
        self._slot[1] = seed
        return self

    def seed(self):
        """Reseed from OS entropy (a 63-bit seed, as PyTorch's ``seed()``); returns it."""
        s = int(np.random.SeedSequence().entropy) & ((1 << 63) - 1)
        self.manual_seed(s)
        return s

    def initial_seed(self):
        """The seed last set (``DEFAULT_SEED`` for a fresh ``Generator()``; for the
        default generator, None until ``manual_seed``, as ``tensorplay.initial_seed``)."""
        return self._slot[1]

    def get_state(self):
        """The state as a 1-D int64 Tensor, for ``set_state`` (not PyTorch's layout)."""
        st = self._numpy().bit_generator.state
        if st["bit_generator"] != "PCG64":
            raise RuntimeError(f"Generator.get_state(): cannot save a "
                               f"{st['bit_generator']} bit generator")
        seed = self._slot[1]
        seed_words = [] if seed is None else _words(seed)
        words = [_STATE_VERSION, len(seed_words) if seed is not None else -1, *seed_words,
                 *_words(st["state"]["state"], 2), *_words(st["state"]["inc"], 2),
                 int(st["has_uint32"]), int(st["uinteger"])]
        return Tensor._wrap(np.array([v & _MASK64 for v in words], dtype=np.uint64)
                            .view(np.int64))

    def set_state(self, new_state):
        """Restore a state from ``get_state()``; returns ``self``.

        Raises:
            TypeError: ``new_state`` not an int64 Tensor.
            RuntimeError: a Tensor that is not a state ``get_state`` made.
        """
        if not isinstance(new_state, Tensor) or new_state.dtype is not _dtype.int64:
            what = (f"a Tensor of dtype {new_state.dtype}" if isinstance(new_state, Tensor)
                    else type(new_state).__name__)
            raise TypeError(f"Generator.set_state(): expected an int64 Tensor from "
                            f"get_state(), got {what}")
        w = [int(v) for v in np.asarray(new_state._data).reshape(-1).view(np.uint64)]
        bad = RuntimeError("Generator.set_state(): the Tensor is not a tensorplay "
                           "generator state (made by Generator.get_state())")
        if new_state.ndim != 1 or len(w) < 8 or w[0] != _STATE_VERSION:
            raise bad
        n_seed = w[1] if w[1] != _MASK64 else -1     # -1: never seeded
        rest = w[2 + max(n_seed, 0):]
        if len(rest) != 6 or rest[4] not in (0, 1) or rest[5] > 0xFFFFFFFF:
            raise bad
        seed = None if n_seed < 0 else _unwords(w[2:2 + n_seed])
        gen = np.random.Generator(np.random.PCG64())
        try:
            gen.bit_generator.state = {
                "bit_generator": "PCG64",
                "state": {"state": _unwords(rest[0:2]), "inc": _unwords(rest[2:4])},
                "has_uint32": rest[4], "uinteger": rest[5]}
        except (ValueError, TypeError):
            raise bad from None
        self._slot[0], self._slot[1] = gen, seed
        return self

    def __reduce__(self):
        return (_rebuild, (self.get_state()._data.copy(),))

    def __deepcopy__(self, memo):
        return _rebuild(self.get_state()._data.copy())

    def __repr__(self):
        return "<tensorplay.Generator object>"


def _words(v, n=None):
    """Non-negative int ``v`` as 64-bit words, most significant first (at least n)."""
    out = []
    while v or not out:
        out.append(v & _MASK64)
        v >>= 64
    if n is not None:
        out += [0] * (n - len(out))
    return out[::-1]


def _unwords(ws):
    v = 0
    for x in ws:
        v = (v << 64) | x
    return v


def _rebuild(state):
    return Generator().set_state(Tensor._wrap(np.asarray(state, dtype=np.int64)))


# The process-wide generator: what tensorplay.manual_seed seeds and every sampler
# without generator= draws from (its slot is _creation._rng).
default_generator = Generator._sharing(_creation._rng)


def _numpy_of(generator, op):
    """The numpy Generator of ``generator``, checked to be a tensorplay Generator
    (``_creation._generator(generator, op)`` calls this, after vmap's checks)."""
    if not isinstance(generator, Generator):
        raise TypeError(f"{op}(): argument 'generator' must be tensorplay.Generator, not "
                        f"{builtins.type(generator).__name__}")
    return generator._numpy()


def seed():
    """Reseed the default generator from OS entropy; returns the seed (``torch.seed``)."""
    return default_generator.seed()


def get_rng_state():
    """The default generator's state (``torch.get_rng_state``; an int64 Tensor)."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Restore the default generator's state from ``get_rng_state()``."""
    default_generator.set_state(new_state)
