"""Weight initialisation (PyTorch's ``torch.nn.init``): in-place fills that run
without recording autograd history and return the tensor.

Fans follow PyTorch: for a tensor of shape ``(out, in, *k)``, ``fan_in = in *
prod(k)`` and ``fan_out = out * prod(k)`` (Linear's ``(out_features,
in_features)`` weight: fan_in = in_features).  Random numbers come from
tensorplay's generator (``tensorplay.manual_seed``, or ``generator=`` a
``tensorplay.Generator`` where tensorplay has one), not torch's stream: a seed
gives the same weights on every run of tensorplay, not torch's weights.
"""
import math
import numbers
import warnings

import numpy as np

from tensorplay._tensor import Tensor
from tensorplay.autograd.grad_mode import no_grad
from tensorplay._torch_names_nn import module_getattr as _module_getattr

# names torch.nn.init has and this module lacks: the PyTorch hint (PEP 562)
__getattr__ = _module_getattr(__name__)

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "sparse_", "uniform", "normal", "constant",
           "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal",
           "orthogonal"]


def _check_tensor(tensor, op):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{op}(): argument 'tensor' must be Tensor, not "
                        f"{type(tensor).__name__}")
    if not tensor.is_floating_point():
        raise RuntimeError(f"{op}(): expected a floating point tensor, got {tensor.dtype}")


def _gkw(generator):
    return {} if generator is None else {"generator": generator}


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (PyTorch's table).

    ==============  ============================================
    linear, conv*   1
    sigmoid         1
    tanh            5/3
    relu            sqrt(2)
    leaky_relu      sqrt(2 / (1 + negative_slope**2)) (param, default 0.01)
    selu            3/4
    ==============  ============================================

    Raises:
        ValueError: an unknown nonlinearity or a non-numeric ``param``.
    """
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                  "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    """``(fan_in, fan_out)`` of a weight of shape ``(out, in, *kernel)``.

    Raises:
        ValueError: fewer than 2 dimensions.
    """
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer "
                         "than 2 dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower() if isinstance(mode, str) else mode
    valid = ["fan_in", "fan_out"]
    if mode not in valid:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _number(v, op, name):
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{op}(): argument '{name}' must be a real number, not "
                        f"{type(v).__name__}")
    return float(v)


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with samples of U(a, b).

    Raises:
        TypeError: not a Tensor, bounds not numbers.  RuntimeError: a > b or an
        integer tensor.
    """
    _check_tensor(tensor, "uniform_")
    a, b = _number(a, "uniform_", "a"), _number(b, "uniform_", "b")
    with no_grad():
        return tensor.uniform_(a, b, **_gkw(generator))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with samples of N(mean, std**2).

    Raises:
        RuntimeError: std < 0 or an integer tensor.
    """
    _check_tensor(tensor, "normal_")
    with no_grad():
        return tensor.normal_(_number(mean, "normal_", "mean"), _number(std, "normal_", "std"),
                              **_gkw(generator))


def _numpy_rng(generator):
    if generator is None:
        from tensorplay._creation import _generator
        return _generator()
    if isinstance(generator, np.random.Generator):
        return generator
    return generator._numpy()


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with samples of N(mean, std**2) truncated to [a, b] (absolute bounds,
    as PyTorch), by inverting the normal CDF on a uniform sample, as PyTorch.

    Warns when ``mean`` is more than 2 std outside [a, b] (the samples are then
    crowded at a bound).

    Raises:
        RuntimeError: std < 0 or a > b.
    """
    _check_tensor(tensor, "trunc_normal_")
    mean, std = _number(mean, "trunc_normal_", "mean"), _number(std, "trunc_normal_", "std")
    a, b = _number(a, "trunc_normal_", "a"), _number(b, "trunc_normal_", "b")
    if std < 0:
        raise RuntimeError(f"trunc_normal_(): expects std >= 0.0, but found std {std}")
    if a > b:
        raise RuntimeError(f"trunc_normal_(): expects a <= b, got a={a} > b={b}")
    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    from tensorplay import erfinv, tensor as _t

    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    lo = norm_cdf((a - mean) / std) if std > 0 else 0.0
    hi = norm_cdf((b - mean) / std) if std > 0 else 1.0
    u = _numpy_rng(generator).uniform(2 * lo - 1, 2 * hi - 1, tuple(tensor.shape))
    x = erfinv(_t(u, dtype=_float64())).numpy() * (std * math.sqrt(2.0)) + mean
    with no_grad():
        return tensor.copy_(_t(np.clip(x, a, b), dtype=tensor.dtype))


def _float64():
    from tensorplay import float64
    return float64


def constant_(tensor, val):
    """Fill with the number ``val``."""
    _check_tensor(tensor, "constant_")
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    """Fill with 1."""
    return constant_(tensor, 1.0)


def zeros_(tensor):
    """Fill with 0."""
    _check_tensor(tensor, "zeros_")
    with no_grad():
        return tensor.zero_()


def eye_(tensor):
    """Fill a 2-D tensor with the identity (ones on the main diagonal).

    Raises:
        ValueError: not 2-D.
    """
    _check_tensor(tensor, "eye_")
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from tensorplay import eye
    with no_grad():
        return tensor.copy_(eye(*tensor.shape, dtype=tensor.dtype))


def dirac_(tensor, groups=1):
    """Fill a 3-, 4- or 5-D conv weight with the Dirac delta (the identity
    convolution, per group).

    Raises:
        ValueError: other ranks, or out channels not divisible by ``groups``.
    """
    _check_tensor(tensor, "dirac_")
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_chans_per_grp = sizes[0] // groups
    min_dim = min(out_chans_per_grp, sizes[1])
    arr = np.zeros(tuple(sizes))
    for g in range(groups):
        for d in range(min_dim):
            idx = (g * out_chans_per_grp + d, d) + tuple(s // 2 for s in sizes[2:])
            arr[idx] = 1
    from tensorplay import tensor as _t
    with no_grad():
        return tensor.copy_(_t(arr, dtype=tensor.dtype))


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot uniform: U(-a, a), ``a = gain * sqrt(6 / (fan_in + fan_out))``.

    Raises:
        ValueError: fewer than 2 dimensions.
    """
    _check_tensor(tensor, "xavier_uniform_")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot normal: N(0, std**2), ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    _check_tensor(tensor, "xavier_normal_")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    return gain / math.sqrt(fan)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He uniform: U(-bound, bound), ``bound = gain * sqrt(3 / fan)``, gain =
    ``calculate_gain(nonlinearity, a)``, fan by ``mode`` ('fan_in'/'fan_out').
    A tensor with a zero-size dimension is left alone with a warning (PyTorch).

    Raises:
        ValueError: fewer than 2 dimensions, an unknown mode or nonlinearity.
    """
    _check_tensor(tensor, "kaiming_uniform_")
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He normal: N(0, std**2), ``std = gain / sqrt(fan)`` (as kaiming_uniform_)."""
    _check_tensor(tensor, "kaiming_normal_")
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def orthogonal_(tensor, gain=1, generator=None):
    """Fill with a (semi-)orthogonal matrix: the Q of a QR decomposition of a
    standard normal sample, its column signs fixed by diag(R) (Saxe et al.,
    PyTorch's recipe), times ``gain``.  Dimensions after the first are flattened.

    Raises:
        ValueError: fewer than 2 dimensions.
    """
    _check_tensor(tensor, "orthogonal_")
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _numpy_rng(generator).standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    from tensorplay import tensor as _t
    with no_grad():
        return tensor.copy_(_t(q.reshape(tuple(tensor.shape)) * gain, dtype=tensor.dtype))


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Fill a 2-D tensor with N(0, std**2) samples and zero a fraction
    ``sparsity`` of the rows in each column (Martens 2010).

    Raises:
        ValueError: not 2-D.
    """
    _check_tensor(tensor, "sparse_")
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    rng = _numpy_rng(generator)
    arr = rng.standard_normal((rows, cols)) * std
    for c in range(cols):
        arr[rng.permutation(rows)[:num_zeros], c] = 0
    from tensorplay import tensor as _t
    with no_grad():
        return tensor.copy_(_t(arr, dtype=tensor.dtype))


def _deprecated(new):
    def old(*args, **kwargs):
        warnings.warn(f"nn.init.{new.__name__[:-1]} is now deprecated in favor of "
                      f"nn.init.{new.__name__}.", FutureWarning, stacklevel=2)
        return new(*args, **kwargs)
    old.__name__ = new.__name__[:-1]
    old.__doc__ = f"Deprecated alias of ``{new.__name__}``."
    return old


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
