"""Statistics reductions: ``prod`` (with its exact, division-free derivative
kernels ``prod_backward`` and ``prod_backward_dual``), ``var``/``std``/
``var_mean``/``std_mean``, ``logsumexp``, and the boolean reductions ``all``,
``any``, ``count_nonzero``.

``prod``: ``_kernels/reduce_ext.pyx:prod_fwd`` (double accumulation) on the
(A, R, B) arrangement of ``reduce_extrema.arrange``.  Its gradient is
``g * prod_{j != i} x_j``, computed by prefix and suffix products
(``prod_bwd``), never as ``prod / x``: exact with zeros present (one zero: the
product of the others there, 0 elsewhere; two or more: 0 everywhere).  Higher
derivatives are the same primitive, ``prod_backward(g, x, d_1, ..., d_k)``, on
jets (products of dual numbers: ``prod_bwd`` for k = 1, ``prod_jet`` above),
exact with zeros at every order.

``var``/``std``/``logsumexp`` are compositions of registered primitives (mean,
sub, mul, sum, sqrt; amax as a constant shift, exp, log): the measured cost is
in docs/DECISIONS.md ("Reductions").  Their derivatives follow from the
primitives' rules, with these results at the edges:

* ``std`` of a constant slice: gradient 0 (the minimum-norm subgradient of
  ``|x - mean|``; PyTorch gives nan).  The fused derivative kernels' strong
  zero does it: ``sqrt_backward`` gives inf there, and ``mul_backward(inf, 0)``
  is 0.
* ``logsumexp``: the shift ``m = amax(x)`` is a constant (``lse`` does not
  depend on it), replaced by 0 where it is not finite, so rows of -inf give
  -inf (gradient 0) and rows holding +inf give +inf; the empty sum gives -inf.
"""
import builtins
import math
import numbers

import numpy as np

from tensorplay._kernels import reduce_ext as _kx
from tensorplay._ops._common import CONFIG, not_tensor_error
from tensorplay._ops._validate import BoolArg, DimsArg, Signature, TensorArg, declare
from tensorplay._ops.elementwise import exp, log, sqrt
from tensorplay._ops.reduce import mean, sum as _sum
from tensorplay._ops.reduce_extrema import (_extrema_array, arrange, kept_shape,
                                            reduced_shape, unarrange)
from tensorplay._ops.registry import apply, defop, tangent_sum
from tensorplay._ops import _batching as _B
from tensorplay._tensor import Tensor

__all__ = ["prod", "var", "std", "var_mean", "std_mean", "logsumexp", "all", "any",
           "count_nonzero", "prod_backward"]
METHODS = ["prod", "var", "std", "logsumexp", "all", "any", "count_nonzero"]


# ---------------------------------------------------------------- prod
def _prod_array(x, dims, keepdim):
    shape = reduced_shape(x.shape, dims, keepdim)
    if x.dtype.kind != "f":
        return np.asarray(np.prod(x, axis=dims, keepdims=keepdim, dtype=np.int64))
    xa = arrange(x, dims)
    out = np.empty(xa.shape[0] * xa.shape[2], x.dtype)
    _kx.prod_fwd(xa, out, CONFIG.num_threads)
    return out.reshape(shape)


def _prod_bwd_array(g, x, *dirs, dims):
    """g * prod_{j != r} x_j, or its k-th derivative along ``dirs``, in x's shape."""
    xa = arrange(x, dims)
    A, R, B = xa.shape
    if len(dirs) > 1:                        # jets, in float64
        D = np.stack([arrange(np.asarray(c, np.float64), dims) for c in dirs])
        out = np.empty((A, R, B), np.float64)
        _kx.prod_jet(np.asarray(xa, np.float64), np.ascontiguousarray(g, np.float64)
                     .reshape(A, B), D, out, CONFIG.num_threads)
        return unarrange(out.astype(x.dtype, copy=False), x.shape, dims)
    ga = np.ascontiguousarray(g, dtype=x.dtype).reshape(A, B)
    ca = arrange(np.asarray(dirs[0], x.dtype), dims) if dirs else None
    out = np.empty((A, R, B), x.dtype)
    _kx.prod_bwd(xa, ga, ca, out, CONFIG.num_threads)
    return unarrange(out, x.shape, dims)


def _ones_like_out(g):
    return Tensor._wrap(np.ones(g._data.shape, g._data.dtype))


def _prod_backward(g, x, dims, keepdim, *dirs):
    return apply(_prod_bwd, (g, x) + tuple(dirs), {"dims": dims, "keepdim": keepdim})


# prod: d prod = sum_i (prod_{j != i} x_j) dx_i; both rules are prod_backward.
_prod = defop(
    "prod", lambda x, dims, keepdim: _prod_array(x, dims, keepdim),
    vjp=(lambda g, out, x, dims, keepdim: _prod_backward(g, x, dims, keepdim),),
    jvp=lambda ts, out, x, dims, keepdim: (
        _prod_backward(_ones_like_out(out), x, dims, keepdim) * ts[0]).sum(dims, keepdim),
    saves=("inputs",), batch=_B.dims_rule("dims"))


# prod_backward(g, x, d_1..d_k) = g * D^k E [d_1..d_k], E_r = prod_{j != r} x_j the
# gradient of prod: the (k+1)-th derivative tensor of prod applied to e_r and the
# d_i.  It is symmetric, so every rule is prod_backward again with one direction
# more (x) or one direction swapped for the cotangent (d_i): exact at every order.
class _ProdBackwardVJP:
    def __getitem__(self, i):
        if i == 0:
            def rule(w, out, g, x, *dirs, dims, keepdim):
                return (w * _prod_backward(_ones_like_out(g), x, dims, keepdim, *dirs)
                        ).sum(dims, keepdim)
        elif i == 1:
            def rule(w, out, g, x, *dirs, dims, keepdim):
                return _prod_backward(g, x, dims, keepdim, *dirs, w)
        else:
            def rule(w, out, g, x, *dirs, dims, keepdim):
                rest = dirs[:i - 2] + dirs[i - 1:]
                return _prod_backward(g, x, dims, keepdim, *rest, w)
        return rule


def _prod_backward_jvp(ts, out, g, x, *dirs, dims, keepdim):
    terms = [None if ts[0] is None else _prod_backward(ts[0], x, dims, keepdim, *dirs),
             None if ts[1] is None else _prod_backward(g, x, dims, keepdim, *dirs, ts[1])]
    for i, t in enumerate(ts[2:]):
        if t is not None:
            terms.append(_prod_backward(g, x, dims, keepdim, *dirs[:i], t, *dirs[i + 1:]))
    return tangent_sum(*terms)


_prod_bwd = defop("prod_backward",
                  lambda g, x, *dirs, dims, keepdim: _prod_bwd_array(g, x, *dirs, dims=dims),
                  vjp=_ProdBackwardVJP(), jvp=_prod_backward_jvp, saves=("inputs",),
                  batch=_B.dims_rule("dims"))


def _reduce_sig(op, kinds="fib", **kw):
    return Signature(op, TensorArg("input", kinds, **kw), DimsArg("dim", default=None),
                     BoolArg("keepdim", default=False))


_check_prod = declare(_reduce_sig("prod"))
_check_prod_backward = declare(Signature(
    "prod_backward", TensorArg("grad_output", "f"), TensorArg("input", "f"),
    DimsArg("dim", default=None), BoolArg("keepdim", default=False), same_dtype=(
        "grad_output", "input")))


def _cast(input, dtype, op):
    if not isinstance(input, Tensor):
        raise not_tensor_error(op, "input", input)
    return input.to(dtype)


def prod(input, dim=None, keepdim=False, *, dtype=None):
    """Product of elements over ``dim`` (an int or a tuple; None: all).

    Returns:
        Tensor of the input's dtype (int64 for integer and bool input, as
        PyTorch) or of ``dtype``; the empty product is 1.  float32 accumulates
        in float64.  The gradient is exact with zeros present (no division).

    Raises:
        TypeError: a non-Tensor input, bad dim or keepdim types.  IndexError: a
        dim out of range.  RuntimeError: a repeated dim.
    """
    if dtype is not None:
        input = _cast(input, dtype, "prod")
    input, dims, keepdim = _check_prod(input, dim, keepdim)
    return apply(_prod, (input,), {"dims": dims, "keepdim": keepdim})


def _check_reduced(op, g, x, dims, keepdim):
    want = reduced_shape(x._data.shape, dims, keepdim)
    if g._data.shape != want:
        raise RuntimeError(f"{op}(): grad_output has shape {list(g._data.shape)}, "
                           f"expected {list(want)} (the reduced input)")


def prod_backward(grad_output, input, dim=None, keepdim=False, directions=()):
    """``grad_output * prod_{j != i} input_j`` over the reduced ``dim``: prod's VJP,
    by prefix and suffix products (no division: exact with zeros).  With
    ``directions`` (tensors of ``input``'s shape and dtype, at most 10), its
    derivative along each of them: the higher derivatives of prod, by products
    of jets (dual numbers), exact with zeros too.  ``grad_output`` has the
    reduced shape; the result has ``input``'s.

    Raises:
        TypeError / IndexError: as ``prod``.  RuntimeError: shapes or dtypes that
        do not match, more than 10 directions.
    """
    g, x, dims, keepdim = _check_prod_backward(grad_output, input, dim, keepdim)
    _check_reduced("prod_backward", g, x, dims, keepdim)
    dirs = tuple(directions)
    for j, c in enumerate(dirs):
        if not isinstance(c, Tensor):
            raise not_tensor_error("prod_backward", f"directions[{j}]", c)
        if c._data.shape != x._data.shape or c._data.dtype != x._data.dtype:
            raise RuntimeError(f"prod_backward(): directions[{j}] must have input's shape "
                               f"{list(x._data.shape)} and dtype {x.dtype}, got "
                               f"{list(c._data.shape)} and {c.dtype}")
    if len(dirs) > 10:
        raise RuntimeError("prod_backward(): at most 10 directions (derivatives of order 11)")
    return _prod_backward(g, x, dims, keepdim, *dirs)


# ---------------------------------------------------------------- var / std
def _var_sig(op):
    return Signature(op, TensorArg("input", "f", exc=RuntimeError,
                                   message="std and var only support floating point dtypes"),
                     DimsArg("dim", default=None), BoolArg("unbiased", default=True),
                     BoolArg("keepdim", default=False))


_check_var = declare(_var_sig("var"))
_check_std = declare(_var_sig("std"))
_UNSET = object()       # unbiased not given (None is an error, as a non-bool)


def _correction(op, correction, unbiased):
    if correction is not None and unbiased is not _UNSET:
        raise RuntimeError(f"{op}(): cannot specify both correction and unbiased")
    if unbiased is not _UNSET:
        return 1 if unbiased else 0
    if correction is None:
        return 1
    if isinstance(correction, (bool, np.bool_)) or not isinstance(correction, numbers.Real):
        raise TypeError(f"{op}(): argument 'correction' must be a number, not "
                        f"{type(correction).__name__}")
    return correction


def _var(op, check, input, dim, unbiased, keepdim, correction):
    if isinstance(dim, (bool, np.bool_)):           # var(x, True): the old form
        dim, unbiased = None, dim
    input, dims, flag, keepdim = check(input, dim, True if unbiased is _UNSET else unbiased,
                                       keepdim)
    c = _correction(op, correction, _UNSET if unbiased is _UNSET else flag)
    n = math.prod(input._data.shape[d] for d in dims)
    m = mean(input, dims, True)
    d = input - m
    denom = n - c
    factor = 1.0 / denom if denom > 0 else math.inf
    v = _sum(d * d, dims, keepdim) * factor
    return v, (m if keepdim else m.reshape(reduced_shape(input._data.shape, dims, False)))


def var(input, dim=None, unbiased=_UNSET, keepdim=False, *, correction=None):
    """Variance over ``dim``: ``sum((x - mean)^2) / max(0, N - correction)``.

    Args:
        input (Tensor): float32 or float64.
        dim (int or tuple, optional): dims to reduce (None: all).
        unbiased (bool, optional): PyTorch's older keyword: True is
            ``correction=1``, False ``correction=0`` (``var(x, False)`` too).
        keepdim (bool): keep reduced dims with size 1.
        correction (number): default 1 (Bessel's correction).

    Returns:
        Tensor; nan (or inf) where ``N - correction <= 0``, as PyTorch.  The
        gradient ``2 (x - mean) / (N - correction)`` is 0 for constant input.

    Raises:
        TypeError: bad argument types.  RuntimeError: integer or bool input (as
        PyTorch), a repeated dim, both ``correction`` and ``unbiased``.
        IndexError: a dim out of range.
    """
    return _var("var", _check_var, input, dim, unbiased, keepdim, correction)[0]


def std(input, dim=None, unbiased=_UNSET, keepdim=False, *, correction=None):
    """Standard deviation, ``sqrt(var(...))`` (same arguments as ``var``).

    At a constant slice (std = 0) the gradient is 0, the minimum-norm
    subgradient (std is a norm of ``x - mean``); PyTorch gives nan there.
    """
    v, _ = _var("std", _check_std, input, dim, unbiased, keepdim, correction)
    return sqrt(v)


def var_mean(input, dim=None, unbiased=_UNSET, keepdim=False, *, correction=None):
    """The tuple ``(var, mean)`` over ``dim`` (as ``var``; one mean pass shared)."""
    return _var("var", _check_var, input, dim, unbiased, keepdim, correction)


def std_mean(input, dim=None, unbiased=_UNSET, keepdim=False, *, correction=None):
    """The tuple ``(std, mean)`` over ``dim`` (as ``std``)."""
    v, m = _var("std", _check_std, input, dim, unbiased, keepdim, correction)
    return sqrt(v), m


# ---------------------------------------------------------------- logsumexp
_check_logsumexp = declare(_reduce_sig("logsumexp", to_float=True))


@_B.loop_under_vmap
def logsumexp(input, dim=None, keepdim=False):
    """``log(sum(exp(x)))`` over ``dim`` (an int or a tuple; None: all), computed as
    ``m + log(sum(exp(x - m)))`` with ``m`` the slice maximum (no overflow).

    Slices of -inf give -inf (gradient 0; PyTorch gives nan), slices holding
    +inf give +inf, an empty slice gives -inf.  Integer input gives the default
    float dtype.  The gradient is ``softmax(x)`` along ``dim`` times g.

    Raises:
        TypeError / IndexError / RuntimeError: as ``sum``.
    """
    input, dims, keepdim = _check_logsumexp(input, dim, keepdim)
    x = input._data
    ks = kept_shape(x.shape, dims)
    if x.size and builtins.all(x.shape[d] for d in dims):
        m = _extrema_array(x, dims, True, False)
        m[~np.isfinite(m)] = 0
    else:
        m = np.zeros(ks, x.dtype)
    mt = Tensor._wrap(m)                     # a constant: lse does not depend on it
    out = log(_sum(exp(input - mt), dims, True)) + mt
    return out if keepdim else out.reshape(reduced_shape(x.shape, dims, False))


# ---------------------------------------------------------------- all / any / count_nonzero
_check_all = declare(_reduce_sig("all"))
_check_any = declare(_reduce_sig("any"))
_check_count_nonzero = declare(Signature("count_nonzero", TensorArg("input"),
                                         DimsArg("dim", default=None)))


@_B.loop_under_vmap
def all(input, dim=None, keepdim=False):
    """True where every element over ``dim`` is nonzero (a bool tensor; never
    differentiable).  The empty ``all`` is True.

    Raises:
        TypeError / IndexError / RuntimeError: as ``sum``.
    """
    input, dims, keepdim = _check_all(input, dim, keepdim)
    return Tensor._wrap(np.asarray(np.all(input._data, axis=dims, keepdims=keepdim)))


@_B.loop_under_vmap
def any(input, dim=None, keepdim=False):
    """True where some element over ``dim`` is nonzero (bool; the empty ``any``
    is False).  Raises as ``all``."""
    input, dims, keepdim = _check_any(input, dim, keepdim)
    return Tensor._wrap(np.asarray(np.any(input._data, axis=dims, keepdims=keepdim)))


@_B.loop_under_vmap
def count_nonzero(input, dim=None):
    """The number of nonzero elements over ``dim`` (int64; nan counts as nonzero).

    Raises:
        TypeError / IndexError / RuntimeError: as ``sum``.
    """
    input, dims = _check_count_nonzero(input, dim)
    return Tensor._wrap(np.asarray(np.count_nonzero(input._data, axis=dims), np.int64))

