"""Normalisation layers of ``torch.nn.functional`` (issue 9): batch_norm, layer_norm,
group_norm as fused primitives (kernels in ``_kernels/norm.pyx``), and
``normalize`` (a composition).  This module holds batch_norm, normalize and the
helpers the row norms share; layer_norm and group_norm are in
``normalization_rows.py``.

Primitives (forward, VJP and JVP side by side below):

``batch_norm(x, w, b)``      training statistics per channel of (N, C, *):
                             ``y = (x - mean) rstd w + b``, two kernel passes.
``batch_norm_backward(g, x, w)``  ``gx = w rstd (g - mean(g) - xhat mean(g xhat))``,
                             one reduction pass and one write pass.
``layer_norm(x, w, b)`` / ``group_norm(x, w, b)``  the same over rows (the trailing
                             normalized_shape, or the (C/G)*d1*... elements of a
                             group), affine per element / per channel.
``layer_norm_backward(g, x, w)``  ``gx = Q(g w)``, shared by both row primitives.

Where ``Q(u) = rstd (u - mean(u) - xhat mean(u xhat))`` over the group: a symmetric
operator, so each backward is its own adjoint in the cotangent, and its
derivative in x is a short closed form (``_x_vjp``/``_x_jvp``, derived from
``d rstd/dx = -rstd^2 xhat / M`` and ``d xhat/dx = rstd P``).  The second-order
rules compose registered ops, so third and higher orders work as well.

The weight and bias gradients are per-channel sums of ``g xhat`` and ``g``, which
the fused backward kernels compute in the same pass as ``gx``.  When the backward
records no graph (no ``create_graph``, no forward-mode level, nothing batched),
the weight and bias rules take those sums from the node's cache instead of
passing over the data again; otherwise they compose ops.  The cache holds the
forward's statistics too, keyed by the identity of the input array (a different
array -- a vmap fallback's slice -- recomputes them).

Eval-mode batch_norm is the composition ``x * scale + shift`` with per-channel
``scale = w / sqrt(running_var + eps)``.  Measurements: docs/DECISIONS.md,
"Losses and normalisation".
"""
import math
import numbers
import weakref

import numpy as np

from tensorplay._kernels import norm as _kno
from tensorplay._ops import _batching as _B
from tensorplay._ops._common import CONFIG
from tensorplay._ops._validate import Signature, TensorArg, declare, renamed_error
from tensorplay._ops.registry import apply, defop, tangent_sum
from tensorplay._pool import empty as pool_empty
from tensorplay._tensor import Tensor
from tensorplay.autograd.grad_mode import STATE

__all__ = ["batch_norm", "normalize", "batch_norm_backward"]
INTERNAL = list(__all__)     # torch.nn.functional names: not tensorplay.<name>

_check_bn = declare(Signature("batch_norm", TensorArg("input", "f", exc=RuntimeError)))
_check_bnb = declare(Signature(
    "batch_norm_backward", TensorArg("grad_output", "f", exc=RuntimeError),
    TensorArg("input", "f", min_ndim=2, exc=RuntimeError),
    TensorArg("weight", "f", exc=RuntimeError), same_shape=("grad_output", "input")))
_check_normalize = declare(Signature("normalize", TensorArg("input", "f", exc=RuntimeError)))


def _fast(*ts):
    """True when a rule may return kernel results as constants: no graph is being
    recorded, no tangents flow and nothing is batched."""
    if STATE.grad_enabled or STATE.fw_level is not None:
        return False
    for t in ts:
        if type(t._data) is _B.BatchedArray:
            return False
    return True


def _const(arr, dtype):
    return Tensor._wrap(np.asarray(arr, dtype=dtype))


# ---------------------------------------------------------------- second-order helpers
# Q(u) = s (u - mean(u) - xhat mean(u xhat)) over a group, s = rstd.  For a
# cotangent h of Q(u) (u fixed), the gradient in x; and the tangent of Q(u) along
# t.  ``mean`` reduces over the group with keepdim; Qh = Q(h), Qu = Q(u), Qt = Q(t).
def _x_vjp(h, u, Qh, Qu, s, xhat, mean):
    a = mean(u * xhat)
    b = mean(h * xhat)
    hu = mean(h * u) - mean(h) * mean(u)
    return -(s * s) * xhat * (hu - a * b) - s * (a * Qh + b * Qu)


def _x_jvp(t, u, Qt, Qu, s, xhat, mean):
    a = mean(u * xhat)
    c = mean(xhat * t)
    return -s * c * Qu - s * a * Qt - (s * s) * xhat * (mean(u * t) - mean(u) * mean(t)
                                                          - a * c)


def _standardize(x, mean, eps):
    """(s, xhat) as differentiable functions of x (the group view)."""
    xc = x - mean(x)
    s = (mean(xc * xc) + eps).rsqrt()
    return s, xc * s


# ---------------------------------------------------------------- batch_norm
def _nck(shape):
    return shape[0], shape[1], math.prod(shape[2:])


def _bn_stats(x, eps, cache):
    """(mean, rstd, var) float64 (C,) of x (N, C, *), from the cache when it is x's."""
    if cache.get("x") is x:
        return cache["mean"], cache["rstd"], cache["var"]
    n, c, k = _nck(x.shape)
    mean, var = np.empty(c), np.empty(c)
    _kno.bn_stats(np.ascontiguousarray(x).reshape(n, c, k), mean, var, CONFIG.num_threads)
    rstd = 1.0 / np.sqrt(var + eps)
    cache.update(x=x, mean=mean, rstd=rstd, var=var, sums=None)
    return mean, rstd, var


def _bn_fwd(x, w, b, eps, cache):
    n, c, k = _nck(x.shape)
    mean, rstd, _ = _bn_stats(x, eps, cache)
    scale = w.astype(np.float64) * rstd
    shift = b.astype(np.float64) - mean * scale
    y = pool_empty(x.shape, x.dtype)
    if y.size:
        _kno.ch_affine(np.ascontiguousarray(x).reshape(n, c, k), None, y.reshape(n, c, k),
                       scale, None, shift, CONFIG.num_threads)
    return y


def _bn_sums(g, x, eps, cache):
    """(sum g, sum g (x - mean)) per channel, float64: from the cache when the
    backward kernel just made them for this g."""
    s = cache.get("sums")
    if s is not None and s[0]() is g and cache.get("x") is x:
        return s[1], s[2]
    mean, _, _ = _bn_stats(x, eps, cache)
    n, c, k = _nck(x.shape)
    sg, sgx = np.empty(c), np.empty(c)
    _kno.bn_grad_sums(np.ascontiguousarray(g).reshape(n, c, k),
                      np.ascontiguousarray(x).reshape(n, c, k), mean, sg, sgx,
                      CONFIG.num_threads)
    cache["sums"] = (weakref.ref(g), sg, sgx)     # (no strong reference to g)
    return sg, sgx


def _bnb_fwd(g, x, w, eps, cache):
    n, c, k = _nck(x.shape)
    mean, rstd, _ = _bn_stats(x, eps, cache)
    sg, sgx = _bn_sums(g, x, eps, cache)
    m = float(n * k)
    wd = w.astype(np.float64)
    a = wd * rstd
    bcoef = -wd * rstd ** 3 * sgx / m
    ccoef = -a * sg / m - bcoef * mean
    out = pool_empty(x.shape, x.dtype)
    if out.size:
        _kno.ch_affine(np.ascontiguousarray(x).reshape(n, c, k),
                       np.ascontiguousarray(g).reshape(n, c, k), out.reshape(n, c, k),
                       a, bcoef, ccoef, CONFIG.num_threads)
    return out


def _bn_dims(x):
    return (0,) + tuple(range(2, x.ndim))


def _bn_mean(x):
    dims = _bn_dims(x)
    return lambda t: t.mean(dims, keepdim=True)


def _cview(v, x):
    return v.reshape((1, -1) + (1,) * (x.ndim - 2))


def _bnb(g, x, w, eps, cache):
    return apply(_batch_norm_backward, (g, x, w), {"eps": eps, "cache": cache})


def _bn_vjp_x(g, out, x, w, b, eps, cache):
    return _bnb(g, x, w, eps, cache)


def _bn_vjp_w(g, out, x, w, b, eps, cache):
    if _fast(g, x):
        sg, sgx = _bn_sums(g._data, x._data, eps, cache)
        return _const(sgx * _bn_stats(x._data, eps, cache)[1], x._data.dtype)
    mean = _bn_mean(x)
    return (g * _standardize(x, mean, eps)[1]).sum(_bn_dims(x))


def _bn_vjp_b(g, out, x, w, b, eps, cache):
    if _fast(g, x):
        return _const(_bn_sums(g._data, x._data, eps, cache)[0], x._data.dtype)
    return g.sum(_bn_dims(x))


def _bn_jvp(ts, out, x, w, b, eps, cache):
    tx, tw, tb = ts
    xhat = None
    if tw is not None:
        xhat = _standardize(x, _bn_mean(x), eps)[1]
    return tangent_sum(None if tx is None else _bnb(tx, x, w, eps, cache),
                       None if tw is None else xhat * _cview(tw, x),
                       None if tb is None else _cview(tb, x))


_batch_norm = defop("batch_norm", _bn_fwd, vjp=(_bn_vjp_x, _bn_vjp_w, _bn_vjp_b),
                    jvp=_bn_jvp, saves=("inputs",))


# batch_norm_backward F(g, x, w) = w Q(g): linear in g (self-adjoint) and in w.
def _bnb_vjp_g(h, out, g, x, w, eps, cache):
    return _bnb(h, x, w, eps, cache)


def _bnb_vjp_x(h, out, g, x, w, eps, cache):
    mean = _bn_mean(x)
    s, xhat = _standardize(x, mean, eps)
    ones = w.detach() * 0 + 1
    wv = _cview(w, x)
    return _x_vjp(h * wv, g, _bnb(h, x, w, eps, cache), _bnb(g, x, ones, eps, cache),
                  s, xhat, mean)


def _bnb_vjp_w(h, out, g, x, w, eps, cache):
    ones = w.detach() * 0 + 1
    return (h * _bnb(g, x, ones, eps, cache)).sum(_bn_dims(x))


def _bnb_jvp(ts, out, g, x, w, eps, cache):
    tg, tx, tw = ts
    dx = None
    if tx is not None:
        mean = _bn_mean(x)
        s, xhat = _standardize(x, mean, eps)
        ones = w.detach() * 0 + 1
        dx = _x_jvp(tx, g, _bnb(tx, x, ones, eps, cache), _bnb(g, x, ones, eps, cache),
                    s, xhat, mean) * _cview(w, x)
    return tangent_sum(None if tg is None else _bnb(tg, x, w, eps, cache),
                       dx, None if tw is None else _bnb(g, x, tw, eps, cache))


_batch_norm_backward = defop(
    "batch_norm_backward", _bnb_fwd, vjp=(_bnb_vjp_g, _bnb_vjp_x, _bnb_vjp_w),
    jvp=_bnb_jvp, saves=("inputs",))


def _float_arg(v, op, arg):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        raise TypeError(f"{op}(): argument '{arg}' must be float, not {type(v).__name__}")
    return float(v)


def _affine_arg(t, shape, like, op, arg, fill):
    """weight/bias as a Tensor of ``shape`` and the dtype of ``like`` (a constant
    ``fill`` when None); another float dtype raises RuntimeError, as PyTorch 2.13's
    "mixed dtype (CPU)" (a float32 module given float64 input, or the reverse)."""
    dtype = like._data.dtype
    if t is None:
        return Tensor._wrap(np.full(shape, fill, dtype))
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' must be Tensor, not {type(t).__name__}")
    if tuple(t._data.shape) != tuple(shape):
        raise RuntimeError(f"{op}(): expected {arg} of shape {list(shape)}, got "
                           f"{list(t._data.shape)}")
    if t._data.dtype != dtype:
        _mixed(op, arg, like, t)
    return t


def _mixed(op, arg, like, t):
    raise RuntimeError(f"{op}(): mixed dtype: expected {arg} to have the input's dtype "
                       f"{like.dtype}, got {t.dtype} (convert the input with .to({t.dtype}) "
                       f"or the module with .to({like.dtype}))")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Batch normalisation over the channel dim 1 of (N, C, *) (or (N, C)) input.

    Training (``training=True``): ``y = (x - mean) / sqrt(var + eps) * weight + bias``
    with the batch's per-channel mean and biased variance; the running statistics
    (when given) are updated in place, PyTorch's way:
    ``running = (1 - momentum) * running + momentum * batch``, the variance
    *unbiased* (times M/(M-1), M = N*d1*...).  Eval (``training=False``): the running
    statistics normalise.

    Args:
        input (Tensor): (N, C, *) float32/float64.
        running_mean, running_var (Tensor or None): (C,) buffers (required in eval).
        weight, bias (Tensor, optional): (C,) affine parameters.
        training (bool): default False (as ``F.batch_norm``).
        momentum (float): default 0.1.  eps (float): default 1e-5.

    An empty input (N = 0 or an empty spatial dim) gives an empty output in
    training too and leaves the running statistics unchanged (PyTorch 2.13).

    Raises:
        ValueError: training with one value per channel (PyTorch's "Expected more
        than 1 value per channel when training").  RuntimeError: fewer than 2 dims,
        buffers or parameters not of shape (C,) or not of the input's dtype
        (PyTorch's "mixed dtype"), eval without running statistics, integer input.
    """
    input = _check_bn(input)
    if input.ndim < 2:      # PyTorch: IndexError for the missing channel dim
        raise IndexError(f"batch_norm(): expected input of shape (N, C, *), got "
                         f"{list(input.shape)}: Dimension out of range (no dim 1)")
    if training is not True and training is not False:
        raise TypeError("batch_norm(): argument 'training' must be bool")
    eps = _float_arg(eps, "batch_norm", "eps")
    c = input.shape[1]
    dt = input._data.dtype
    for name, r in (("running_mean", running_mean), ("running_var", running_var)):
        if r is not None and (not isinstance(r, Tensor) or tuple(r.shape) != (c,)):
            raise RuntimeError(f"batch_norm(): {name} should contain {c} elements not "
                               f"{r.numel() if isinstance(r, Tensor) else type(r).__name__}")
        if r is not None and r._data.dtype != dt:
            _mixed("batch_norm", name, input, r)
    w = _affine_arg(weight, (c,), input, "batch_norm", "weight", 1.0)
    b = _affine_arg(bias, (c,), input, "batch_norm", "bias", 0.0)
    if not training:
        if running_mean is None or running_var is None:
            raise RuntimeError("batch_norm(): running_mean and running_var must be "
                               "defined in evaluation mode (training=False)")
        scale = w * (running_var + eps).rsqrt()
        shift = b - running_mean * scale
        return input * _cview(scale, input) + _cview(shift, input)
    n, _, k = _nck(tuple(input.shape))
    if n * k == 0:
        # PyTorch 2.13: an empty output, running statistics left as they are;
        # the affine parameters get zero gradients (sums over nothing)
        return input * _cview(w, input) + _cview(b, input)
    if n * k == 1:
        raise ValueError(f"batch_norm(): Expected more than 1 value per channel when "
                         f"training, got input size {list(input.shape)}")
    momentum = None if momentum is None else _float_arg(momentum, "batch_norm", "momentum")
    cache = {}
    out = apply(_batch_norm, (input, w, b), {"eps": eps, "cache": cache})
    if running_mean is not None or running_var is not None:
        _update_running(input, running_mean, running_var, momentum, cache, n * k)
    return out


def _update_running(input, running_mean, running_var, momentum, cache, m):
    from tensorplay.autograd.grad_mode import no_grad
    if type(input._data) is _B.BatchedArray or "mean" not in cache:
        raise NotImplementedError(
            "batch_norm(): updating running statistics under vmap is not supported "
            "(each example would need its own buffers); pass running_mean=None and "
            "running_var=None, or use eval mode")
    if momentum is None:
        raise TypeError("batch_norm(): momentum must be a float when running statistics "
                        "are updated (nn.BatchNorm's momentum=None is the module's "
                        "cumulative average: pass 1/num_batches_tracked)")
    with no_grad():
        if running_mean is not None:
            new = (1.0 - momentum) * running_mean._data + momentum * cache["mean"]
            running_mean.copy_(Tensor._wrap(new.astype(running_mean._data.dtype)))
        if running_var is not None:
            new = (1.0 - momentum) * running_var._data + \
                momentum * cache["var"] * (m / (m - 1))
            running_var.copy_(Tensor._wrap(new.astype(running_var._data.dtype)))


def _same_dtypes(op, *ts):
    dt = ts[0]._data.dtype
    if any(t._data.dtype != dt for t in ts):
        raise RuntimeError(f"{op}(): expected one float dtype, got "
                           f"{[str(t.dtype) for t in ts]}")


def batch_norm_backward(grad_output, input, weight, eps=1e-5):
    """``weight * rstd * (g - mean(g) - xhat * mean(g * xhat))`` per channel of (N, C, *)
    (statistics over all dims but 1): batch_norm's training-mode input gradient,
    fused.  Internal derivative kernel.

    Raises:
        RuntimeError: shapes that differ, a weight not (C,), an input with one
        value per channel, mixed dtypes.
    """
    g, x, w = _check_bnb(grad_output, input, weight)
    _same_dtypes("batch_norm_backward", g, x, w)
    n, c, k = _nck(tuple(x.shape))
    if tuple(w.shape) != (c,) or n * k < 1:
        raise RuntimeError(f"batch_norm_backward(): expected weight ({c},) and values per "
                           f"channel, got weight {list(w.shape)}, input {list(x.shape)}")
    return _bnb(g, x, w, _float_arg(eps, "batch_norm_backward", "eps"), {})


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim`` (PyTorch's).

    Raises:
        RuntimeError: integer input.  IndexError: dim out of range.
        NotImplementedError: ``out=``.
    """
    from tensorplay._ops.reduce_norm import vector_norm
    input = _check_normalize(input)
    if out is not None:
        raise NotImplementedError("normalize(): out= is not supported")
    p = _float_arg(p, "normalize", "p")
    eps = _float_arg(eps, "normalize", "eps")
    x = input if input.ndim else input.reshape(1)
    try:
        denom = vector_norm(x, p, dim=dim, keepdim=True).clamp_min(eps)
    except (TypeError, IndexError, RuntimeError) as e:
        named = renamed_error(e, "linalg.vector_norm", "normalize")
        if named is None:
            raise
        raise named from None
    y = x / denom
    return y if input.ndim else y.reshape(())
