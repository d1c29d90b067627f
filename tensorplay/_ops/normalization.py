"""Normalisation layers of ``torch.nn.functional`` (issue 9): batch_norm, layer_norm,
group_norm as fused primitives (kernels in ``_kernels/norm.pyx``), and
``normalize`` (a composition).

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
import operator

import numpy as np

from tensorplay._kernels import norm as _kno
from tensorplay._ops import _batching as _B
from tensorplay._ops._common import CONFIG
from tensorplay._ops._validate import Signature, TensorArg, declare, renamed_error
from tensorplay._ops.registry import apply, defop, tangent_sum
from tensorplay._pool import empty as pool_empty
from tensorplay._tensor import Tensor
from tensorplay.autograd.grad_mode import STATE

__all__ = ["batch_norm", "layer_norm", "group_norm", "normalize", "batch_norm_backward",
           "layer_norm_backward"]
INTERNAL = list(__all__)     # torch.nn.functional names: not tensorplay.<name>

_check_bn = declare(Signature("batch_norm", TensorArg("input", "f", exc=RuntimeError)))
_check_ln = declare(Signature("layer_norm", TensorArg("input", "f", exc=RuntimeError)))
_check_gn = declare(Signature("group_norm", TensorArg("input", "f", exc=RuntimeError)))
_check_bnb = declare(Signature(
    "batch_norm_backward", TensorArg("grad_output", "f", exc=RuntimeError),
    TensorArg("input", "f", min_ndim=2, exc=RuntimeError),
    TensorArg("weight", "f", exc=RuntimeError), same_shape=("grad_output", "input")))
_check_lnb = declare(Signature(
    "layer_norm_backward", TensorArg("grad_output", "f", exc=RuntimeError),
    TensorArg("input", "f", exc=RuntimeError),
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
    if s is not None and s[0] is g and cache.get("x") is x:
        return s[1], s[2]
    mean, _, _ = _bn_stats(x, eps, cache)
    n, c, k = _nck(x.shape)
    sg, sgx = np.empty(c), np.empty(c)
    _kno.bn_grad_sums(np.ascontiguousarray(g).reshape(n, c, k),
                      np.ascontiguousarray(x).reshape(n, c, k), mean, sg, sgx,
                      CONFIG.num_threads)
    cache["sums"] = (g, sg, sgx)
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
    ``fill`` when None)."""
    dtype = like._data.dtype
    if t is None:
        return Tensor._wrap(np.full(shape, fill, dtype))
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' must be Tensor, not {type(t).__name__}")
    if tuple(t._data.shape) != tuple(shape):
        raise RuntimeError(f"{op}(): expected {arg} of shape {list(shape)}, got "
                           f"{list(t._data.shape)}")
    return t if t._data.dtype == dtype else t.to(like.dtype)


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

    Raises:
        ValueError: training with one value per channel (PyTorch's "Expected more
        than 1 value per channel when training").  RuntimeError: fewer than 2 dims,
        buffers or parameters not of shape (C,), eval without running statistics,
        integer input.
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
    w = _affine_arg(weight, (c,), input, "batch_norm", "weight", 1.0)
    b = _affine_arg(bias, (c,), input, "batch_norm", "bias", 0.0)
    if not training:
        if running_mean is None or running_var is None:
            raise RuntimeError("batch_norm(): running_mean and running_var must be "
                               "defined in evaluation mode (training=False)")
        rm = running_mean if running_mean._data.dtype == dt else running_mean.to(input.dtype)
        rv = running_var if running_var._data.dtype == dt else running_var.to(input.dtype)
        scale = w * (rv + eps).rsqrt()
        shift = b - rm * scale
        return input * _cview(scale, input) + _cview(shift, input)
    n, _, k = _nck(tuple(input.shape))
    if n * k <= 1:
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


# ---------------------------------------------------------------- layer_norm, group_norm
# Row view: x (N, G*Cg*K) as R = N*G rows of L = Cg*K; layer_norm has G = 1,
# Cg = D (the normalized size), K = 1.  params: G, Cg, K, eps, cache.
def _rows(x, G, Cg, K):
    return np.ascontiguousarray(x).reshape(-1, Cg * K)


def _row_stats(x, G, Cg, K, eps, cache, chan):
    if cache.get("x") is x:
        return cache["mean"], cache["rstd"]
    x2 = _rows(x, G, Cg, K)
    r = x2.shape[0]
    mean, rstd = np.empty(r), np.empty(r)
    if r:
        _kno.row_norm_fwd(x2, None, None, np.empty_like(x2), mean, rstd, G, Cg, K, eps,
                          CONFIG.num_threads)
    cache.update(x=x, mean=mean, rstd=rstd, sums=None)
    return mean, rstd


def _rn_fwd(x, w, b, G, Cg, K, eps, cache, chan):
    x2 = _rows(x, G, Cg, K)
    r = x2.shape[0]
    y = pool_empty(x.shape, x.dtype)
    mean, rstd = np.empty(r), np.empty(r)
    if r:
        _kno.row_norm_fwd(x2, np.ascontiguousarray(w).reshape(-1),
                          np.ascontiguousarray(b).reshape(-1), y.reshape(r, -1), mean, rstd,
                          G, Cg, K, eps, CONFIG.num_threads)
    cache.update(x=x, mean=mean, rstd=rstd, sums=None)
    return y


def _rnb_fwd(g, x, w, G, Cg, K, eps, cache, chan):
    mean, rstd = _row_stats(x, G, Cg, K, eps, cache, chan)
    x2 = _rows(x, G, Cg, K)
    r = x2.shape[0]
    out = pool_empty(x.shape, x.dtype)
    gwb = np.empty((2, G * Cg))
    if r:
        _kno.row_norm_bwd(np.ascontiguousarray(g).reshape(r, -1), x2,
                          np.ascontiguousarray(w).reshape(-1), mean, rstd,
                          out.reshape(r, -1), gwb, G, Cg, K, CONFIG.num_threads)
    else:
        gwb[:] = 0
    cache["sums"] = (g, gwb)
    return out


def _rn_sums(g, x, G, Cg, K, eps, cache, chan):
    s = cache.get("sums")
    if s is not None and s[0] is g and cache.get("x") is x:
        return s[1]
    mean, rstd = _row_stats(x, G, Cg, K, eps, cache, chan)
    x2 = _rows(x, G, Cg, K)
    gwb = np.zeros((2, G * Cg))
    if x2.shape[0]:
        _kno.row_norm_bwd(np.ascontiguousarray(g).reshape(x2.shape), x2, None, mean, rstd,
                          None, gwb, G, Cg, K, CONFIG.num_threads)
    cache["sums"] = (g, gwb)
    return gwb


def _gview(t, G, Cg, K):
    """The (N, G, L) group view of an x-shaped tensor."""
    return t.reshape(-1, G, Cg * K)


def _wview(w, G, Cg, K):
    """weight (G*Cg elements) spread over the (G, L) elements of a group view."""
    w2 = w.reshape(G, Cg, 1)
    if K != 1:
        w2 = w2.expand(G, Cg, K)
    return w2.reshape(G, Cg * K)


def _row_mean(t):
    return t.mean(-1, keepdim=True)


def _chan_sum(t, G, Cg, K, shape):
    """Sum an x-shaped tensor per channel (over rows and the K positions)."""
    return t.reshape(-1, G, Cg, K).sum((0, 3)).reshape(shape)


def _rnb(g, x, w, G, Cg, K, eps, cache, chan):
    return apply(_layer_norm_backward, (g, x, w),
                 {"G": G, "Cg": Cg, "K": K, "eps": eps, "cache": cache, "chan": chan})


def _rn_vjp_x(g, out, x, w, b, G, Cg, K, eps, cache, chan):
    return _rnb(g, x, w, G, Cg, K, eps, cache, chan)


def _rn_vjp_w(g, out, x, w, b, G, Cg, K, eps, cache, chan):
    if _fast(g, x):
        return _const(_rn_sums(g._data, x._data, G, Cg, K, eps, cache, chan)[0].reshape(w.shape),
                      x._data.dtype)
    xhat = _standardize(_gview(x, G, Cg, K), _row_mean, eps)[1].reshape(x.shape)
    return _chan_sum(g * xhat, G, Cg, K, w.shape)


def _rn_vjp_b(g, out, x, w, b, G, Cg, K, eps, cache, chan):
    if _fast(g, x):
        return _const(_rn_sums(g._data, x._data, G, Cg, K, eps, cache, chan)[1].reshape(b.shape),
                      x._data.dtype)
    return _chan_sum(g, G, Cg, K, b.shape)


def _rn_jvp(ts, out, x, w, b, G, Cg, K, eps, cache, chan):
    tx, tw, tb = ts
    # y = xhat w + b: the x tangent is w Q(tx) (Q(tx w) is the adjoint's order)
    terms = [None if tx is None else
             _rnb(tx, x, _ones_like(w), G, Cg, K, eps, cache, chan) * _affine_view(w, x, chan)]
    if tw is not None:
        xhat = _standardize(_gview(x, G, Cg, K), _row_mean, eps)[1].reshape(x.shape)
        terms.append(xhat * _affine_view(tw, x, chan))
    if tb is not None:
        terms.append(_affine_view(tb, x, chan))
    return tangent_sum(*terms)


def _affine_view(t, x, chan):
    """A weight-shaped tensor broadcastable against x: as is for layer_norm (the
    trailing shape); (C, 1, ...) for group_norm (chan: per channel, dim 1)."""
    return t.reshape((-1,) + (1,) * (x.ndim - 2)) if chan else t


def _rn_batch(op, args, batched, size, params):
    """vmap: rows are independent, so a batched input (and cotangent) with an
    unbatched weight and bias folds the vmap dim into the rows (group_norm: into N);
    a batched weight or bias runs the per-example loop."""
    nx = 2 if op is _layer_norm_backward else 1      # the x-shaped leading arguments
    if any(batched[nx:]):
        return _B.fallback_rule(op, args, batched, size, params)
    phys = [_B._materialize(a, b, size) for a, b in zip(args[:nx], batched[:nx])]
    shape = tuple(phys[0].shape)
    if params["chan"]:                      # (B, N, C, *) -> (B*N, C, *)
        phys = [a.reshape((-1,) + shape[2:]) for a in phys]
    out = apply(op, tuple(phys) + tuple(args[nx:]), dict(params, cache={}))
    return out.reshape(shape) if params["chan"] else out


_RN_RULES = dict(vjp=(_rn_vjp_x, _rn_vjp_w, _rn_vjp_b), jvp=_rn_jvp, saves=("inputs",),
                 batch=_rn_batch)
_layer_norm = defop("layer_norm", _rn_fwd, **_RN_RULES)
_group_norm = defop("group_norm", _rn_fwd, **_RN_RULES)


# layer_norm_backward F(g, x, w) = Q(g w): adjoint in g is w Q(h); linear in w.
def _ones_like(w):
    return w.detach() * 0 + 1


def _rnb_vjp_g(h, out, g, x, w, G, Cg, K, eps, cache, chan):
    q = _rnb(h, x, _ones_like(w), G, Cg, K, eps, cache, chan)
    return (_gview(q, G, Cg, K) * _wview(w, G, Cg, K)).reshape(x.shape)


def _rnb_vjp_x(h, out, g, x, w, G, Cg, K, eps, cache, chan):
    xv = _gview(x, G, Cg, K)
    s, xhat = _standardize(xv, _row_mean, eps)
    u = _gview(g, G, Cg, K) * _wview(w, G, Cg, K)
    qh = _gview(_rnb(h, x, _ones_like(w), G, Cg, K, eps, cache, chan), G, Cg, K)
    return _x_vjp(_gview(h, G, Cg, K), u, qh, _gview(out, G, Cg, K), s, xhat,
                  _row_mean).reshape(x.shape)


def _rnb_vjp_w(h, out, g, x, w, G, Cg, K, eps, cache, chan):
    q = _rnb(h, x, _ones_like(w), G, Cg, K, eps, cache, chan)
    return _chan_sum(g * q, G, Cg, K, w.shape)


def _rnb_jvp(ts, out, g, x, w, G, Cg, K, eps, cache, chan):
    tg, tx, tw = ts
    dx = None
    if tx is not None:
        xv = _gview(x, G, Cg, K)
        s, xhat = _standardize(xv, _row_mean, eps)
        u = _gview(g, G, Cg, K) * _wview(w, G, Cg, K)
        qt = _gview(_rnb(tx, x, _ones_like(w), G, Cg, K, eps, cache, chan), G, Cg, K)
        qu = _gview(_rnb(g, x, w, G, Cg, K, eps, cache, chan), G, Cg, K)
        dx = _x_jvp(_gview(tx, G, Cg, K), u, qt, qu, s, xhat, _row_mean).reshape(x.shape)
    return tangent_sum(None if tg is None else _rnb(tg, x, w, G, Cg, K, eps, cache, chan), dx,
                       None if tw is None else _rnb(g, x, tw, G, Cg, K, eps, cache, chan))


_layer_norm_backward = defop(
    "layer_norm_backward", _rnb_fwd, vjp=(_rnb_vjp_g, _rnb_vjp_x, _rnb_vjp_w),
    jvp=_rnb_jvp, saves=("inputs", "out"), batch=_rn_batch)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing dims ``normalized_shape``:
    ``(x - mean) / sqrt(var + eps) * weight + bias`` (biased variance), PyTorch's.

    Args:
        input (Tensor): (*, *normalized_shape) float32/float64.
        normalized_shape (int or sequence of int): the trailing shape.
        weight, bias (Tensor, optional): of shape normalized_shape.
        eps (float): default 1e-5.

    Raises:
        RuntimeError: an input whose trailing shape differs (PyTorch's "Given
        normalized_shape=..., expected input with shape [*, ...]"), weight or bias
        of another shape, integer input.
    """
    input = _check_ln(input)
    if isinstance(normalized_shape, (int, np.integer)) and not isinstance(
            normalized_shape, bool):
        normalized_shape = (int(normalized_shape),)
    try:
        if isinstance(normalized_shape, str):
            raise TypeError
        ns = tuple(operator.index(d) for d in normalized_shape)
    except TypeError:
        raise TypeError(f"layer_norm(): normalized_shape must be an int or a sequence of "
                        f"ints, got {normalized_shape!r}") from None
    eps = _float_arg(eps, "layer_norm", "eps")
    shape = tuple(input.shape)
    if not ns or len(ns) > len(shape) or shape[len(shape) - len(ns):] != ns:
        raise RuntimeError(f"layer_norm(): Given normalized_shape={list(ns)}, expected "
                           f"input with shape [*, {', '.join(map(str, ns))}], but got input "
                           f"of size{list(shape)}")
    d = math.prod(ns)
    w = _affine_arg(weight, ns, input, "layer_norm", "weight", 1.0)
    b = _affine_arg(bias, ns, input, "layer_norm", "bias", 0.0)
    if d == 0:
        return input * 1.0                  # nothing to normalise: an empty copy
    return apply(_layer_norm, (input, w, b),
                 {"G": 1, "Cg": d, "K": 1, "eps": eps, "cache": {}, "chan": False})


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise (N, C, *) input over groups of C/num_groups channels (and all of
    *), then ``* weight[c] + bias[c]`` per channel (PyTorch's).

    Raises:
        RuntimeError: C not divisible by num_groups (PyTorch's message), fewer
        than 2 dims, weight or bias not (C,), integer input.
    """
    input = _check_gn(input)
    if isinstance(num_groups, bool) or not isinstance(num_groups, (int, np.integer)):
        raise TypeError(f"group_norm(): argument 'num_groups' must be int, not "
                        f"{type(num_groups).__name__}")
    eps = _float_arg(eps, "group_norm", "eps")
    if input.ndim < 2:
        raise RuntimeError(f"group_norm(): Expected at least 2 dimensions for input tensor "
                           f"but received {input.ndim}")
    n, c, k = _nck(tuple(input.shape))
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError(f"group_norm(): Expected number of channels in input to be "
                           f"divisible by num_groups, but got input of shape "
                           f"{list(input.shape)} and num_groups={num_groups}")
    w = _affine_arg(weight, (c,), input, "group_norm", "weight", 1.0)
    b = _affine_arg(bias, (c,), input, "group_norm", "bias", 0.0)
    G = int(num_groups)
    if k == 0 or n == 0:
        return input * 1.0                  # nothing to normalise: an empty copy
    return apply(_group_norm, (input, w, b),
                 {"G": G, "Cg": c // G, "K": k, "eps": eps, "cache": {}, "chan": True})


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


def layer_norm_backward(grad_output, input, weight, eps=1e-5):
    """``Q(g * weight)`` over the trailing ``weight.shape`` dims (``Q(u) = rstd (u -
    mean(u) - xhat mean(u xhat))``): layer_norm's input gradient, fused.  Internal
    derivative kernel.

    Raises:
        RuntimeError: shapes that differ, a weight that is not the input's
        trailing shape, mixed dtypes.
    """
    g, x, w = _check_lnb(grad_output, input, weight)
    _same_dtypes("layer_norm_backward", g, x, w)
    ws = tuple(w.shape)
    if not ws or tuple(x.shape[x.ndim - len(ws):]) != ws or len(ws) > x.ndim or \
            math.prod(ws) == 0:
        raise RuntimeError(f"layer_norm_backward(): weight {list(ws)} must be the input's "
                           f"non-empty trailing shape, input {list(x.shape)}")
    return _rnb(g, x, w, 1, math.prod(ws), 1, _float_arg(eps, "layer_norm_backward", "eps"),
                {}, False)


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
