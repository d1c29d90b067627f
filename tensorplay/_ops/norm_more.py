"""More normalisations of ``torch.nn.functional`` (issue 9, second step):
``instance_norm``, ``rms_norm``, ``local_response_norm``, as compositions of
registered primitives.

* ``instance_norm`` with input statistics is ``group_norm`` with one group per
  channel (the fused kernel normalises each (sample, channel) plane and applies the
  per-channel affine); its running statistics are updated under no_grad the way
  PyTorch's does it (PyTorch runs batch_norm on the (1, N*C, *) view and averages
  the N copies of each channel's running value): ``running = (1 - momentum)
  running + momentum * mean_n(stat[n, c])``, the variance unbiased.  With
  ``use_input_stats=False`` it is batch_norm in eval mode with the running
  statistics.
* ``rms_norm`` is ``x * rsqrt(mean(x^2) + eps) * weight`` over the trailing
  ``normalized_shape`` (PyTorch's formula; ``eps=None`` is the dtype's machine
  epsilon, as PyTorch).
* ``local_response_norm`` divides by ``(k + alpha/size * sum of squares over a
  window of size channels) ** beta``, the window zero-padded by ``size // 2``
  before and ``(size - 1) // 2`` after (PyTorch's ``pad`` + ``avg_pool``, written
  here as a sum of ``size`` shifted slices of the padded squares).
"""
import math

import numpy as np

from tensorplay._ops import _checks9 as C
from tensorplay._tensor import Tensor

__all__ = ["instance_norm", "rms_norm", "local_response_norm"]
INTERNAL = list(__all__)      # torch.nn.functional names


def _opt_tensor(op, name, t, like):
    if t is None:
        return None
    C.tensor(op, name, t)
    return C.same_float(op, like, t)[0]


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalise each (sample, channel) plane of ``(N, C, *)`` input over its
    spatial dims, then ``* weight[c] + bias[c]`` (``torch.nn.functional.instance_norm``).

    Args:
        input (Tensor): float32/float64, (N, C, *spatial) with at least one spatial dim.
        running_mean, running_var (Tensor, optional): (C,); updated in place when
            ``use_input_stats`` (momentum, unbiased variance, averaged over N), used
            for normalising when not.
        weight, bias (Tensor, optional): (C,).
        use_input_stats (bool): normalise by the planes' own statistics (default) or
            by the running ones.
        momentum (float): default 0.1.  eps (float): default 1e-5.

    Raises:
        ValueError: one spatial element per plane with input statistics (PyTorch's
        "Expected more than 1 spatial element when training").  RuntimeError:
        integer input, fewer than 3 dims, statistics or affine of another size,
        ``use_input_stats=False`` without running statistics.
    """
    from tensorplay._ops.normalization import batch_norm
    from tensorplay._ops.normalization_rows import group_norm
    op = "instance_norm"
    C.tensor(op, "input", input)
    use_input_stats = C.flag(op, "use_input_stats", use_input_stats)
    momentum = C.number(op, "momentum", momentum)
    eps = C.number(op, "eps", eps)
    shape = tuple(input.shape)
    if use_input_stats and math.prod(shape[2:]) == 1:
        raise ValueError(f"{op}(): Expected more than 1 spatial element when training, got "
                         f"input size {list(shape)}")
    if len(shape) < 3:
        raise RuntimeError(f"{op}(): expected input of shape (N, C, *) with at least one "
                           f"spatial dim, got {list(shape)}")
    c = shape[1]
    for n, t in (("weight", weight), ("bias", bias)):   # PyTorch: "mixed dtype (CPU)"
        if isinstance(t, Tensor) and t.dtype != input.dtype and t.is_floating_point():
            from tensorplay._ops.normalization import _mixed
            _mixed(op, n, input, t)
    w, b, rm, rv = (_opt_tensor(op, n, t, input) for n, t in
                    (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                     ("running_var", running_var)))
    for n, t in (("weight", w), ("bias", b), ("running_mean", rm), ("running_var", rv)):
        if t is not None and tuple(t.shape) != (c,):
            raise RuntimeError(f"{op}(): expected {n} of shape [{c}] (the channels), got "
                               f"{list(t.shape)}")
    if not use_input_stats:
        if rm is None or rv is None:
            raise RuntimeError(f"{op}(): Expected running_mean and running_var to be "
                               f"defined when use_input_stats is false")
        return batch_norm(input, rm, rv, w, b, False, momentum, eps)
    if rm is not None or rv is not None:
        _update_running(input, running_mean, running_var, momentum)
    return group_norm(input, c, w, b, eps)


def _update_running(input, running_mean, running_var, momentum):
    """PyTorch's per-channel running update of instance_norm, in place, no grad."""
    from tensorplay._ops._batching import BatchedArray
    from tensorplay.autograd.grad_mode import no_grad
    x = input._data
    if type(x) is BatchedArray:
        raise RuntimeError("instance_norm(): updating running statistics under vmap is not "
                           "supported; pass running_mean=None, running_var=None")
    n, c = x.shape[:2]
    planes = np.asarray(x, np.float64).reshape(n, c, -1)
    m = planes.shape[2]
    with no_grad():
        if running_mean is not None:
            mean = planes.mean(axis=2).mean(axis=0)
            new = (1 - momentum) * running_mean._data.astype(np.float64) + momentum * mean
            running_mean.copy_(Tensor._wrap(new.astype(running_mean._data.dtype)))
        if running_var is not None:
            var = planes.var(axis=2, ddof=1).mean(axis=0) if m > 1 else \
                np.full(c, np.nan)
            new = (1 - momentum) * running_var._data.astype(np.float64) + momentum * var
            running_var.copy_(Tensor._wrap(new.astype(running_var._data.dtype)))


def _normalized_shape(op, normalized_shape):
    import operator
    if isinstance(normalized_shape, (int, np.integer)) and not isinstance(
            normalized_shape, (bool, np.bool_)):
        return (int(normalized_shape),)
    try:
        if isinstance(normalized_shape, str):
            raise TypeError
        return tuple(operator.index(d) for d in normalized_shape)
    except TypeError:
        raise TypeError(f"{op}(): normalized_shape must be an int or a sequence of ints, "
                        f"got {normalized_shape!r}") from None


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``x / sqrt(mean(x^2) + eps) * weight``, the mean over the trailing dims
    ``normalized_shape`` (``torch.nn.functional.rms_norm``; Zhang and Sennrich 2019).

    Args:
        input (Tensor): (*, *normalized_shape), float32/float64.
        normalized_shape (int or sequence of int): the trailing shape.
        weight (Tensor, optional): of shape normalized_shape.
        eps (float, optional): default ``finfo(input.dtype).eps`` (PyTorch).

    Raises:
        RuntimeError: a trailing shape that differs (PyTorch's "Given
        normalized_shape=..."), a weight of another shape, integer input.
    """
    op = "rms_norm"
    C.tensor(op, "input", input)
    ns = _normalized_shape(op, normalized_shape)
    shape = tuple(input.shape)
    if len(ns) > len(shape) or shape[len(shape) - len(ns):] != ns:
        raise RuntimeError(f"{op}(): Given normalized_shape={list(ns)}, expected input with "
                           f"shape [*, {', '.join(map(str, ns))}], but got input of size"
                           f"{list(shape)}")
    w = _opt_tensor(op, "weight", weight, input)
    if w is not None and tuple(w.shape) != ns:
        raise RuntimeError(f"{op}(): Expected weight to be of same shape as normalized_shape, "
                           f"but got weight of shape {list(w.shape)} and normalized_shape = "
                           f"{list(ns)}")
    eps = float(np.finfo(input._data.dtype).eps) if eps is None else C.number(op, "eps", eps)
    if not ns:
        dims = None
        out = input * (input.square() + eps).rsqrt()
    else:
        dims = tuple(range(-len(ns), 0))
        out = input * (input.square().mean(dims, keepdim=True) + eps).rsqrt()
    return out if w is None else out * w


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """``x / (k + alpha/size * sum_{c' in window(c)} x[c']^2) ** beta`` across channels
    (dim 1) of ``(N, C, *)`` input (``torch.nn.functional.local_response_norm``;
    Krizhevsky et al. 2012).  The window of channel c is ``[c - size//2, c +
    (size-1)//2]``, zero outside the channels.

    Raises:
        ValueError: input of fewer than 3 dims (PyTorch's message).  TypeError: a
        non-int size.  RuntimeError: integer input; size < 1.
    """
    from tensorplay._ops.resample import pad
    op = "local_response_norm"
    C.tensor(op, "input", input)
    size = C.number(op, "size", size, integral=True)
    alpha, beta, k = (C.number(op, n, v) for n, v in (("alpha", alpha), ("beta", beta),
                                                      ("k", k)))
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} "
                         f"dimensions)")
    if size < 1:
        raise RuntimeError(f"{op}(): size must be positive, got {size}")
    if input.numel() == 0:
        return input
    sq = input.square()
    cdim = input.shape[1]
    # pad channels (dim 1): move them last for pad, then sum `size` shifted slices
    moved = sq.movedim(1, -1)
    padded = pad(moved, (size // 2, (size - 1) // 2))
    acc = padded.narrow(-1, 0, cdim)
    for s in range(1, size):
        acc = acc + padded.narrow(-1, s, cdim)
    div = acc.movedim(-1, 1) * (alpha / size) + k
    return input / div.pow(beta)
