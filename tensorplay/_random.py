"""Random sampling beyond ``rand``/``randn``/``randint``: ``randperm``,
``bernoulli``, ``multinomial``, ``normal``, and the in-place fills
``Tensor.uniform_/normal_/bernoulli_/random_/exponential_``.

All take PyTorch's keyword ``generator=`` (a ``tensorplay.Generator``,
tensorplay/_generator.py); without it they draw from the process-wide generator
that ``manual_seed`` seeds (numpy's PCG64 stream, ``_creation._generator``): a
seeded program draws the same numbers every run, not the same numbers as PyTorch.
Samples are drawn in float64 and rounded to the target dtype, so float32 and
float64 tensors of one seed hold the same values up to rounding.  None of these record autograd history
(PyTorch's samplers have no gradient either).
"""
import builtins
import numbers

import numpy as np

from tensorplay import _device, _dtype
from tensorplay._creation import _finish, _generator, _int_arg, _size
from tensorplay._tensor import Tensor
from tensorplay.autograd.grad_mode import STATE

__all__ = ["randperm", "bernoulli", "multinomial", "normal"]


def _gen(generator=None, op="a tensorplay sampler"):
    return _generator(generator, op)


def _real(v, op, arg):
    if isinstance(v, (builtins.bool, np.bool_)) or not isinstance(v, numbers.Real):
        raise TypeError(f"{op}(): argument '{arg}' must be a real number, "
                        f"not {type(v).__name__}")
    v = float(v)
    if not np.isfinite(v):
        raise RuntimeError(f"{op}(): argument '{arg}' must be finite, got {v}")
    return v


def _float_tensor(x, op, arg):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' must be Tensor, not {type(x).__name__}")
    if STATE.vmap_depth:
        _vmap_refuses(x, op, arg)
    if x._data.dtype.kind != "f":
        raise RuntimeError(f"{op}(): expected a floating point tensor for '{arg}', "
                           f"got {x.dtype}")
    return x._data


def _vmap_refuses(x, op, arg):
    """Inside vmap: the randomness mode's error first (tensorplay/func/_vmap.py), then
    a batched tensor argument, which the samplers cannot take per example yet
    (rather than reading one example's metadata as the whole batch's values)."""
    _generator()
    from tensorplay._ops._batching import BatchedArray
    if isinstance(x._data, BatchedArray):
        raise RuntimeError(f"{op}(): argument '{arg}' is batched by vmap, and tensorplay's "
                           f"samplers take no batched tensors yet; draw the samples "
                           f"outside vmap and pass them in")


# ---------------------------------------------------------------- functions
def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of ``0 .. n-1``; int64 by default (PyTorch's default).

    Raises:
        TypeError: ``n`` not an int.  RuntimeError: ``n < 0``, or a dtype that
            cannot hold ``n - 1`` (as PyTorch), or requires_grad with an integer dtype.
    """
    _device.check(device, "randperm")
    n = _int_arg(n, "randperm", "n")
    if n < 0:
        raise RuntimeError(f"randperm(): n must be non-negative, got {n}")
    d = _dtype.int64 if dtype is None else _dtype.as_dtype(dtype, "randperm")
    if d is _dtype.bool or (not d.is_floating_point and n - 1 > np.iinfo(d.numpy).max):
        raise RuntimeError(f"randperm(): n = {n} is too large for result dtype {d}")
    if d.is_floating_point and n > 2 ** np.finfo(d.numpy).nmant + 1:
        raise RuntimeError(f"randperm(): n = {n} is too large for result dtype {d}")
    arr = _gen(generator, "randperm").permutation(n).astype(d.numpy, copy=False)
    return _finish(arr, requires_grad, "randperm")


def bernoulli(input, p=None, *, generator=None):
    """Draws of 0 or 1 with probabilities ``input`` (or the number ``p`` for every
    element, as ``torch.bernoulli(input, p)``); the result has input's shape and
    dtype.

    Raises:
        TypeError: input not a Tensor.  RuntimeError: an integer input, or a
            probability outside [0, 1] (nan included).
    """
    probs = _float_tensor(input, "bernoulli", "input")
    if p is not None:
        p = _real(p, "bernoulli", "p")
        probs = np.full(probs.shape, p)
    if probs.size and not (np.all(probs >= 0) and np.all(probs <= 1)):
        raise RuntimeError("bernoulli(): expected all probabilities in [0, 1]")
    gen = _gen(generator, "bernoulli")
    out = (gen.random(probs.shape) < probs).astype(input._data.dtype)
    return Tensor._wrap(out)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Indices drawn from the categorical distributions whose (unnormalised,
    non-negative) weights are the rows of ``input`` (1-D: one distribution, result
    shape ``(num_samples,)``; 2-D ``(m, k)``: result ``(m, num_samples)``); int64.

    Without replacement, each row needs at least ``num_samples`` nonzero weights
    (PyTorch's rule).

    Raises:
        TypeError: input not a Tensor or num_samples not an int.
        RuntimeError: input not 1-D or 2-D, no categories, a negative, infinite or
            nan weight, a row of zeros, num_samples <= 0, or too few nonzero
            categories without replacement.
    """
    w = _float_tensor(input, "multinomial", "input")
    n = _int_arg(num_samples, "multinomial", "num_samples")
    if w.ndim not in (1, 2):
        raise RuntimeError(f"multinomial(): prob_dist must be 1 or 2 dim, got {w.ndim}")
    if w.shape[-1] == 0:
        raise RuntimeError("multinomial(): number of categories cannot be zero")
    if n <= 0:
        raise RuntimeError(f"multinomial(): cannot sample n_sample <= 0 samples, got {n}")
    rows = w.reshape(-1, w.shape[-1]).astype(np.float64)
    if not np.all(np.isfinite(rows)) or np.any(rows < 0):
        raise RuntimeError("multinomial(): probability tensor contains either `inf`, `nan` "
                           "or element < 0")
    sums = rows.sum(axis=1)
    if np.any(sums <= 0):
        raise RuntimeError("multinomial(): invalid multinomial distribution (sum of "
                           "probabilities <= 0)")
    if not replacement and np.any((rows > 0).sum(axis=1) < n):
        raise RuntimeError("multinomial(): cannot sample n_sample > prob_dist.size(-1) "
                           "samples without replacement (counting nonzero weights only)")
    gen = _gen(generator, "multinomial")
    out = np.empty((rows.shape[0], n), np.int64)
    for i, (row, s) in enumerate(zip(rows, sums)):
        out[i] = gen.choice(row.size, size=n, replace=replacement, p=row / s)
    return Tensor._wrap(out.reshape(w.shape[:-1] + (n,)))


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False):
    """Normal samples with the given mean and standard deviation, PyTorch's overloads:

    * ``normal(mean: Tensor, std: Tensor)`` -- elementwise, broadcast shapes;
    * ``normal(mean: Tensor, std=1.0)`` / ``normal(mean: float, std: Tensor)``;
    * ``normal(mean: float, std: float, size)`` -- shape ``size``.

    The dtype is that of the tensor argument(s) (float), else ``dtype`` or the
    default float dtype.

    Raises:
        TypeError: floats for both without ``size``, or arguments of other types.
        RuntimeError: a negative std, or shapes that do not broadcast.
    """
    _device.check(device, "normal")
    tensors = [a for a in (mean, std) if isinstance(a, Tensor)]
    if tensors:
        if size is not None:
            raise TypeError("normal(): size is only taken with float mean and std")
        for name, a in (("mean", mean), ("std", std)):
            if isinstance(a, Tensor):
                _float_tensor(a, "normal", name)
            else:
                _real(a, "normal", name)
        m = mean._data if isinstance(mean, Tensor) else mean
        s = std._data if isinstance(std, Tensor) else std
        d = np.result_type(*[t._data.dtype for t in tensors])
        try:
            shape = np.broadcast_shapes(np.shape(m), np.shape(s))
        except ValueError:
            raise RuntimeError(f"normal(): mean of shape {list(np.shape(m))} and std of "
                               f"shape {list(np.shape(s))} do not broadcast") from None
    else:
        m, s = _real(mean, "normal", "mean"), _real(std, "normal", "std")
        if size is None:
            raise TypeError("normal(): with float mean and std, give size")
        shape = _size(tuple(size) if isinstance(size, (tuple, list)) else (size,), "normal")
        d = (_dtype.get_default_dtype() if dtype is None
             else _dtype.as_dtype(dtype, "normal")).numpy
    if np.any(np.asarray(s) < 0):
        raise RuntimeError("normal(): expected all std >= 0.0")
    gen = _gen(generator, "normal")
    out = (np.asarray(m) + np.asarray(s) * gen.standard_normal(shape)).astype(d)
    return _finish(out, requires_grad, "normal")


# ---------------------------------------------------------------- in-place fills
def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kw):
    """In place: samples uniform on [from, to) (``from`` is a keyword too, as PyTorch).

    Raises:
        RuntimeError: ``from > to``, an integer tensor, or a tensor that cannot be
            written in place (a leaf requiring grad outside ``no_grad``, a read-only view).
    """
    lo = _real(kw.pop("from", from_), "uniform_", "from")
    hi = _real(to, "uniform_", "to")
    _no_extra(kw, "uniform_")
    _float_tensor(self, "uniform_", "self")
    if lo > hi:
        raise RuntimeError(f"uniform_(): expects to return a [from, to) range, but found "
                           f"from={lo} > to={hi}")
    gen = _gen(generator, "uniform_")
    return self._write("uniform_", lo + (hi - lo) * gen.random(self._data.shape))


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """In place: normal samples.  Raises RuntimeError for std < 0 (and as uniform_)."""
    m, s = _real(mean, "normal_", "mean"), _real(std, "normal_", "std")
    _float_tensor(self, "normal_", "self")
    if s < 0:
        raise RuntimeError(f"normal_(): expects std >= 0.0, but found std {s}")
    gen = _gen(generator, "normal_")
    return self._write("normal_", m + s * gen.standard_normal(self._data.shape))


def bernoulli_(self, p=0.5, *, generator=None):
    """In place: 0/1 draws with probability ``p`` (a number or a tensor that
    broadcasts to self).  Raises RuntimeError for p outside [0, 1]."""
    if isinstance(p, Tensor):
        probs = _float_tensor(p, "bernoulli_", "p")
    else:
        probs = np.asarray(_real(p, "bernoulli_", "p"))
    if probs.size and not (np.all(probs >= 0) and np.all(probs <= 1)):
        raise RuntimeError("bernoulli_(): expected p in [0, 1]")
    try:
        probs = np.broadcast_to(probs, self._data.shape)
    except ValueError:
        raise RuntimeError(f"bernoulli_(): p of shape {list(probs.shape)} does not "
                           f"broadcast to {list(self._data.shape)}") from None
    gen = _gen(generator, "bernoulli_")
    return self._write("bernoulli_", (gen.random(self._data.shape) < probs)
                       .astype(self._data.dtype))


def exponential_(self, lambd=1.0, *, generator=None):
    """In place: exponential samples with rate ``lambd`` > 0."""
    rate = _real(lambd, "exponential_", "lambd")
    _float_tensor(self, "exponential_", "self")
    if rate <= 0:
        raise RuntimeError(f"exponential_(): expects lambd > 0.0, but found lambd={rate}")
    gen = _gen(generator, "exponential_")
    return self._write("exponential_", gen.exponential(1.0 / rate, self._data.shape))


def random_(self, from_=0, to=None, *, generator=None, **kw):
    """In place: integers uniform on [from, to) (PyTorch: ``random_(to)`` or
    ``random_(from, to)``; with no bounds, [0, 2**mantissa] for floats and the
    dtype's non-negative range for integers).

    Raises:
        RuntimeError: from >= to, or bounds the dtype cannot hold.
    """
    lo = kw.pop("from", from_)
    _no_extra(kw, "random_")
    if to is None and lo != 0:
        lo, to = 0, lo                          # random_(to)
    lo = _int_arg(lo, "random_", "from")
    d = self._data.dtype
    if to is None:
        if d.kind == "f":
            to = 2 ** (np.finfo(d).nmant + 1) + 1
        elif d.kind == "b":
            to = 2
        else:
            to = int(np.iinfo(d).max) + 1
    to = _int_arg(to, "random_", "to")
    if lo >= to:
        raise RuntimeError(f"random_(): expects 'from' to be less than 'to', but got "
                           f"from={lo} >= to={to}")
    if d.kind in "iub" and not (
            (0 if d.kind == "b" else np.iinfo(d).min) <= lo and
            to - 1 <= (1 if d.kind == "b" else np.iinfo(d).max)):
        raise RuntimeError(f"random_(): [{lo}, {to}) is out of bounds for {self.dtype}")
    gen = _gen(generator, "random_")
    return self._write("random_", gen.integers(lo, to, self._data.shape).astype(d))


def _no_extra(kw, op):
    if kw:
        raise TypeError(f"{op}() got an unexpected keyword argument {next(iter(kw))!r}")


def _bind():
    for fn in (uniform_, normal_, bernoulli_, exponential_, random_):
        setattr(Tensor, fn.__name__, fn)
    Tensor.bernoulli = bernoulli
    Tensor.multinomial = multinomial


_bind()
