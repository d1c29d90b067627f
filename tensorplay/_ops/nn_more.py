"""More ``torch.nn.functional`` layers (issue 9, second step), as compositions of
registered primitives: ``glu``, ``pixel_shuffle``, ``pixel_unshuffle``,
``channel_shuffle`` (reshape and permute), the small activations ``threshold``,
``rrelu``, ``hardshrink``, ``softshrink``, ``tanhshrink``, ``softsign``,
``softmin``, ``feature_alpha_dropout``, and the deprecated ``upsample*`` aliases of
``interpolate``.

Random ops (``rrelu`` in training, ``feature_alpha_dropout``) draw from the
process-wide generator that ``tensorplay.manual_seed`` seeds: a seeded program
draws the same numbers every run, not the ones PyTorch draws.  The draw becomes
a constant factor, so gradients are ``g * factor`` by ``mul``'s own rule.

``fractional_max_pool2d``/``3d`` exist only to say they are not implemented.
"""
import warnings

import numpy as np

from tensorplay._ops import _checks9 as C
from tensorplay._tensor import Tensor

__all__ = ["glu", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "threshold",
           "threshold_", "rrelu", "rrelu_", "hardshrink", "softshrink", "tanhshrink",
           "softsign", "softmin",
           "feature_alpha_dropout", "upsample", "upsample_nearest", "upsample_bilinear",
           "fractional_max_pool2d", "fractional_max_pool3d"]
# torch has pixel_shuffle, pixel_unshuffle and channel_shuffle as torch.<name> too
INTERNAL = [n for n in __all__ if n not in ("pixel_shuffle", "pixel_unshuffle",
                                           "channel_shuffle")]


def glu(input, dim=-1):
    """Gated linear unit ``a * sigmoid(b)``, ``a, b`` the two halves of ``input`` along
    ``dim`` (Dauphin et al. 2017; ``torch.nn.functional.glu``).

    Raises:
        RuntimeError: a 0-d input, an odd size along ``dim``, integer input.
        IndexError: dim out of range.
    """
    from tensorplay._ops.elementwise import sigmoid
    op = "glu"
    C.tensor(op, "input", input)
    dim = C.number(op, "dim", dim, integral=True)
    if input.ndim == 0:
        raise RuntimeError("glu(): glu does not support scalars because halving size must "
                           "be even")
    if not -input.ndim <= dim < input.ndim:
        raise IndexError(f"glu(): Dimension out of range (expected to be in range of "
                         f"[{-input.ndim}, {input.ndim - 1}], but got {dim})")
    n = input.shape[dim]
    if n % 2:
        raise RuntimeError(f"glu(): Halving dimension must be even, but dimension "
                           f"{dim % input.ndim} is size {n}")
    a, b = input.narrow(dim, 0, n // 2), input.narrow(dim, n // 2, n // 2)
    return a * sigmoid(b)


def _factor(op, name, v):
    v = C.number(op, name, v, integral=True)
    if v <= 0:
        raise RuntimeError(f"{op}(): {op} expects a positive {name}, but got {v}")
    return v


def pixel_shuffle(input, upscale_factor):
    """``(*, C r^2, H, W) -> (*, C, H r, W r)``: channel ``c r^2 + i r + j`` goes to
    pixel ``(h r + i, w r + j)`` of channel c (Shi et al. 2016; PyTorch's layout).

    Raises:
        RuntimeError: fewer than 3 dims, channels not divisible by r^2, r <= 0.
        TypeError: a non-int factor.
    """
    op = "pixel_shuffle"
    C.tensor(op, "input", input, "fib")
    r = _factor(op, "upscale_factor", upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"{op}(): pixel_shuffle expects input to have at least 3 "
                           f"dimensions, but got input with {input.ndim} dimension(s)")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"{op}(): pixel_shuffle expects its input's 'channel' dimension "
                           f"to be divisible by the square of upscale_factor, but "
                           f"input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    x = x.permute(tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2))
    return x.reshape(tuple(lead) + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    """``(*, C, H r, W r) -> (*, C r^2, H, W)``, the inverse of ``pixel_shuffle``.

    Raises:
        RuntimeError: fewer than 3 dims, height or width not divisible by r, r <= 0.
    """
    op = "pixel_unshuffle"
    C.tensor(op, "input", input, "fib")
    r = _factor(op, "downscale_factor", downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"{op}(): pixel_unshuffle expects input to have at least 3 "
                           f"dimensions, but got input with {input.ndim} dimension(s)")
    *lead, c, h, w = input.shape
    for name, v, d in (("height", h, -2), ("width", w, -1)):
        if v % r:
            raise RuntimeError(f"{op}(): pixel_unshuffle expects {name} to be divisible by "
                               f"downscale_factor, but input.size({d})={v} is not divisible "
                               f"by {r}")
    n = len(lead)
    x = input.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    x = x.permute(tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3))
    return x.reshape(tuple(lead) + (c * r * r, h // r, w // r))


def channel_shuffle(input, groups):
    """``(N, C, *) -> (N, C, *)`` with the channels seen as (groups, C/groups)
    transposed (Zhang et al. 2018, ShuffleNet; ``torch.nn.functional.channel_shuffle``).

    Raises:
        RuntimeError: fewer than 3 dims (PyTorch's "> 2 dims"), groups <= 0, C not
        divisible by groups.
    """
    op = "channel_shuffle"
    C.tensor(op, "input", input, "fib")
    g = C.number(op, "groups", groups, integral=True)
    if g <= 0:
        raise RuntimeError(f"{op}(): Number of groups to divide channels in must be "
                           f"positive. Value of groups:{g}")
    if input.ndim <= 2:
        raise RuntimeError(f"{op}(): channel_shuffle expects input with > 2 dims, but got "
                           f"input with sizes {list(input.shape)}")
    n, c, *rest = input.shape
    if c % g:
        raise RuntimeError(f"{op}(): Number of channels must be divisible by groups. Got "
                           f"{c} channels and {g} groups.")
    x = input.reshape((n, g, c // g) + tuple(rest)).transpose(1, 2)
    return x.reshape(tuple(input.shape))


# ---------------------------------------------------------------- small activations
def threshold(input, threshold, value, inplace=False):
    """``x > threshold ? x : value`` (gradient ``g`` where ``x > threshold``, else 0).
    ``inplace=True`` writes into ``input`` (``masked_fill_``)."""
    op = "threshold"
    C.tensor(op, "input", input)
    th, value = C.number(op, "threshold", threshold), C.number(op, "value", value)
    if C.flag(op, "inplace", inplace):
        return input.masked_fill_(~(input > th), value)
    return input.where(input > th, value)


def threshold_(input, threshold, value):
    """``threshold(input, threshold, value, inplace=True)``."""
    return globals()["threshold"](input, threshold, value, inplace=True)


def hardshrink(input, lambd=0.5):
    """``|x| > lambd ? x : 0`` (``torch.nn.functional.hardshrink``)."""
    C.tensor("hardshrink", "input", input)
    lambd = C.number("hardshrink", "lambd", lambd)
    return input.where(input.abs() > lambd, 0.0)


def softshrink(input, lambd=0.5):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0.

    Raises:
        RuntimeError: ``lambd < 0`` (PyTorch's "lambda must be in range").
    """
    op = "softshrink"
    C.tensor(op, "input", input)
    lambd = C.number(op, "lambd", lambd)
    if not lambd >= 0:
        raise RuntimeError(f"{op}(): lambda must be in range [0, inf) for input dtype "
                           f"{input.dtype}, but found {lambd}")
    return (input - lambd).where(input > lambd, (input + lambd).where(input < -lambd, 0.0))


def tanhshrink(input):
    """``x - tanh(x)``."""
    C.tensor("tanhshrink", "input", input)
    return input - input.tanh()


def softsign(input):
    """``x / (1 + |x|)``."""
    C.tensor("softsign", "input", input)
    return input / (input.abs() + 1)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """``softmax(-x, dim)``; ``dim=None`` picks PyTorch's implicit dim (0 for 0-, 1- and
    3-D input, else 1) with its deprecation warning."""
    from tensorplay._ops.nn import softmax
    C.tensor("softmin", "input", input)
    if dim is None:
        warnings.warn("Implicit dimension choice for softmin has been deprecated. Change "
                      "the call to include dim=X as an argument.", UserWarning,
                      stacklevel=_stacklevel - 1)     # PyTorch counts a helper frame
        dim = 0 if input.ndim in (0, 1, 3) else 1
    return softmax(-input, dim, dtype=dtype)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU (Xu et al. 2015): ``x`` where ``x > 0``, else ``a x`` with
    ``a ~ U(lower, upper)`` drawn per element in training, ``a = (lower + upper) / 2``
    in eval (the default, ``training=False``, as PyTorch).  The gradient is the same
    factor (``a`` at ``x <= 0``, PyTorch's branch).

    Raises:
        RuntimeError: integer input, ``lower > upper``.  TypeError: non-bool flags.
    """
    from tensorplay._creation import _generator
    op = "rrelu"
    C.tensor(op, "input", input)
    lower, upper = C.number(op, "lower", lower), C.number(op, "upper", upper)
    training, inplace = C.flag(op, "training", training), C.flag(op, "inplace", inplace)
    if lower > upper:
        raise RuntimeError(f"{op}(): Lower bound should be less than or equal to the upper "
                           f"bound, got lower={lower}, upper={upper}")
    dt = input._data.dtype
    if training:
        u = _generator().random(tuple(input.shape))
        a = Tensor._wrap((lower + (upper - lower) * u).astype(dt))
        noise = a.where(input <= 0, 1.0)         # PyTorch: x <= 0 takes the draw
    else:
        noise = Tensor._wrap(np.ones((), dt)).where(input > 0, (lower + upper) / 2)
    noise = noise.detach()
    return input.mul_(noise) if inplace else input * noise


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """``rrelu(input, lower, upper, training, inplace=True)``."""
    return rrelu(input, lower, upper, training, inplace=True)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """``alpha_dropout`` with one draw per channel: (N, C, *) input keeps or drops
    whole channels (the mask has shape (N, C, 1, ...)), dropped ones set to SELU's
    negative saturation and the affine correction restoring mean 0 and variance 1
    (PyTorch's ``feature_alpha_dropout``).  Identity when ``training=False`` (the
    default) or p == 0; p == 1 gives zeros.

    Raises:
        ValueError: p outside [0, 1].  RuntimeError: fewer than 2 dims (PyTorch's
        "Feature dropout requires at least 2 dimensions in the input"), integer input.
    """
    from tensorplay._ops.nn_misc import _SELU_ALPHA, _dropout_args, _keep_mask
    input, p = _dropout_args("feature_alpha_dropout", input, p, training, inplace)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if input.ndim < 2:
        raise RuntimeError("feature_alpha_dropout(): Feature dropout requires at least 2 "
                           "dimensions in the input")
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    dt = input._data.dtype
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    keep = _keep_mask(shape, p, dt, 1.0)
    a = 1.0 / np.sqrt((1.0 - p) * (1.0 + p * _SELU_ALPHA ** 2))
    mul = Tensor._wrap((keep * dt.type(a)).astype(dt, copy=False))
    add = Tensor._wrap(((keep - 1.0) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p).astype(dt))
    if inplace:
        return input.mul_(mul).add_(add)
    return input * mul + add


# ---------------------------------------------------------------- deprecated aliases
def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of ``interpolate`` (PyTorch's warning)."""
    from tensorplay._ops._interpolate import interpolate
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(..., mode='nearest')`` (PyTorch's warning)."""
    from tensorplay._ops._interpolate import interpolate
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)``."""
    from tensorplay._ops._interpolate import interpolate
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def _fractional(name):
    def fn(*args, **kwargs):
        raise NotImplementedError(
            f"{name}(): fractional max pooling (random pooling regions, Graham 2014) is not "
            f"implemented in tensorplay; max_pool2d or adaptive_max_pool2d with the output "
            f"size you want is the closest deterministic replacement")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Not implemented: raises NotImplementedError (PyTorch's ``{name}``)."
    return fn


fractional_max_pool2d = _fractional("fractional_max_pool2d")
fractional_max_pool3d = _fractional("fractional_max_pool3d")
