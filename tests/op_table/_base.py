"""Shared parts of the op table (tests/op_table/): the row types and the sample makers.

Family modules (``core.py``, ``unary.py``, ...) each define ``SPECS``, a list of
``OpSpec`` rows; ``tests/op_table/__init__.py`` collects them.
"""
from dataclasses import dataclass

import hypothesis.strategies as st
import numpy as np



@dataclass
class Fuzz:
    """What ``tests/test_fuzz.py`` needs to fuzz a row; the rest comes from the
    declared ``Signature`` of the public op the row calls
    (``tensorplay._ops._validate.SIGNATURES[sig]``): which arguments are tensors
    and their dtype kinds, which broadcast together, which are dims, flags or
    indices -- and so how to draw invalid arguments.

    Args:
        sig: the key of the public op's Signature.
        args: the Signature parameters that the row's positional tensors are
            (a TensorListArg parameter takes all of them).
        kinds: dtype kinds of valid draws ("f", "i", "b"); must be accepted by
            the Signature.  Default: float only.
        domain: (lo, hi) or AWAY (|x| in [0.2, 2]) per positional tensor (one
            entry serves all).  Integer draws round into the same domain.
        shapes: ``shapes(draw) -> list of shapes``; default: mutually
            broadcastable shapes for a Signature broadcast group, equal shapes
            for a same_shape group, else one shape of 0-4 dims of size 0-4.
        kwargs: ``kwargs(draw, arrays) -> dict`` for keyword arguments the
            Signature does not describe (targets, keys, shapes); Signature dims
            and flags named in the row's samples are drawn by the fuzzer.
        base: ``base(tensors, kwargs) -> list``: the full positional argument
            list of the public op, when the row's call does not map one to one.
        layouts: memory layouts to draw from (see test_fuzz.LAYOUTS).
        grad: check the VJP and the JVP (float64 draws).
        special: now and then put inf, -inf, nan and -0.0 among float inputs
            (off where tensorplay differs from numpy on purpose: the fused
            derivative kernels' strong zero, 0 * inf = 0).
        skip: {mutation name: reason} for invalid draws that are known faults.
    """
    sig: str
    args: tuple = ("input",)
    kinds: str = "f"
    domain: object = (-2.0, 2.0)
    shapes: object = None
    kwargs: object = None
    base: object = None
    layouts: tuple = ("contig", "noncontig", "flipped", "transposed")
    grad: bool = True
    special: bool = True
    skip: dict = None


AWAY = "away"


@dataclass
class OpSpec:
    """One row: ``fn(*tensors, **kwargs)`` must equal ``ref(*arrays, **kwargs)``.

    ``samples(rng)`` returns a list of ``(label, [float arrays], kwargs)``.
    ``smooth=False`` skips second-order checks (none needed for piecewise-linear ops).
    ``fuzz`` tells tests/test_fuzz.py how to draw random valid and invalid calls;
    a row without it fails ``test_every_row_has_fuzz_information``.
    ``torch`` is the same call written for PyTorch, ``torch(torch_module, *tensors,
    **kwargs)`` (tensorplay tensors among the kwargs arrive as torch tensors), for
    tests/test_torch_table.py; or a string saying why there is none (an internal
    derivative kernel with no public torch counterpart).  A row with neither fails
    ``test_every_row_has_a_torch_counterpart``.
    """
    name: str
    fn: callable
    ref: callable
    samples: callable
    variant: str = ""
    smooth: bool = True
    fuzz: Fuzz = None
    torch: object = None

    @property
    def id(self):
        return self.name + (f"[{self.variant}]" if self.variant else "")


def noncontig(a, dtype=None):
    """The same values as ``a`` (cast to ``dtype``) in a non-contiguous view (every
    other column)."""
    a = np.asarray(a)
    if a.ndim == 0:
        return a if dtype is None else a.astype(dtype)
    big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype if dtype is None else dtype)
    big[..., ::2] = a
    v = big[..., ::2]
    assert a.size <= 1 or not v.flags.c_contiguous
    return v


def _uniform(lo, hi):
    return lambda rng, shape: rng.uniform(lo, hi, shape)


def _away_from_zero(lo=0.2, hi=2.0):
    def gen(rng, shape):
        return rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)
    return gen


_normal = lambda rng, shape: rng.standard_normal(shape)  # noqa: E731

UNARY_SHAPES = [("0d", ()), ("1d", (5,)), ("2d", (3, 4)), ("noncontig", (3, 4))]
BINARY_SHAPES = [("0d", (), ()), ("1d", (5,), (5,)), ("2d", (3, 4), (3, 4)),
                 ("row_bcast", (3, 4), (4,)), ("outer_bcast", (3, 1), (1, 4)),
                 ("batch_bcast", (2, 1, 4), (3, 4)), ("scalar_rhs", (3, 4), ()),
                 ("noncontig", (3, 4), (3, 4))]


def unary_samples(gen=_normal, shapes=UNARY_SHAPES):
    def samples(rng):
        out = []
        for label, shape in shapes:
            a = np.asarray(gen(rng, shape), np.float64)
            out.append((label, [noncontig(a) if label == "noncontig" else a], {}))
        return out
    return samples


def binary_samples(gen_a=_normal, gen_b=_normal, shapes=BINARY_SHAPES):
    def samples(rng):
        out = []
        for label, sa, sb in shapes:
            a = np.asarray(gen_a(rng, sa), np.float64)
            b = np.asarray(gen_b(rng, sb), np.float64)
            if label == "noncontig":
                a, b = noncontig(a), noncontig(b).T.copy().T   # two layouts
            out.append((label, [a, b], {}))
        return out
    return samples


TERNARY_SHAPES = [("0d", (), (), ()), ("2d", (3, 4), (3, 4), (3, 4)),
                  ("row_bcast", (3, 4), (3, 4), (4,)), ("scalar_c", (3, 4), (3, 4), ()),
                  ("bcast_g", (4,), (3, 4), (3, 1)), ("noncontig", (3, 4), (3, 4), (3, 4))]


def ternary_samples(gen_a, gen_b, gen_c, shapes=TERNARY_SHAPES):
    def samples(rng):
        out = []
        for label, sa, sb, sc in shapes:
            arrs = [np.asarray(gen(rng, shape), np.float64)
                    for gen, shape in ((gen_a, sa), (gen_b, sb), (gen_c, sc))]
            if label == "noncontig":
                arrs = [noncontig(arrs[0]), arrs[1].T.copy().T, noncontig(arrs[2])]
            out.append((label, arrs, {}))
        return out
    return samples


def fixed_samples(*cases):
    """cases: (label, [(generator, shape), ...], kwargs)."""
    def samples(rng):
        out = []
        for label, arrays, kwargs in cases:
            arrs = [np.asarray(gen(rng, shape), np.float64) for gen, shape in arrays]
            if label.startswith("noncontig"):
                arrs = [noncontig(a) for a in arrs]
            out.append((label, arrs, dict(kwargs)))
        return out
    return samples


def _axis(x, dim):
    """numpy's axis for a tensorplay dim: a 0-d array takes only axis=None."""
    return None if np.ndim(x) == 0 else dim


# ---------------------------------------------------------------- fuzz drawers
def _side(draw, lo=0, hi=4):
    return draw(st.integers(lo, hi))


def _same_shapes(n, min_dims=0):
    def shapes(draw):
        shape = tuple(draw(st.lists(st.integers(0, 4), min_size=min_dims, max_size=4)))
        return [shape] * n
    return shapes


def _one_shape(min_dims=0, max_dims=4, min_side=0):
    def shapes(draw):
        return [tuple(draw(st.lists(st.integers(min_side, 4), min_size=min_dims,
                                    max_size=max_dims)))]
    return shapes
