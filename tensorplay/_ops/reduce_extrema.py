"""Extrema: ``amax``/``amin`` (primitives), ``max``/``min`` (full, along a dim
with indices, or elementwise against another tensor), ``argmax``/``argmin``
and ``aminmax``.

Kernels: ``_kernels/reduce_ext.pyx:extrema_fwd`` on the input arranged as a
C-contiguous (A, R, B) block (``arrange``; R the reduced extent), values only or
values and first indices in one pass.  nan propagates (PyTorch): the max of a
slice holding nan is nan and its argmax is the first nan.  Integer and bool
inputs (never differentiable) use numpy.

Gradients (issue 7's conventions):
  * ``amax``/``amin`` and the full ``max()``/``min()`` split the gradient evenly
    among tied entries (PyTorch's amax rule; its full ``max()`` does the same);
  * ``max(x, dim)``/``min(x, dim)`` give it to the returned index: the values are
    ``gather(x, dim, indices)``, so their gradient is ``gather_backward``
    (PyTorch: the first occurrence of the extreme).
Indices are int64 and never require grad.
"""
import collections
import math

import numpy as np

from tensorplay._kernels import reduce_ext as _kx
from tensorplay._ops._common import CONFIG
from tensorplay._ops._validate import BoolArg, DimArg, DimsArg, Signature, TensorArg, declare
from tensorplay._ops.elementwise import where
from tensorplay._ops.gather import gather
from tensorplay._ops.registry import apply, defop
from tensorplay._ops import _batching as _B
from tensorplay._tensor import Tensor

__all__ = ["amax", "amin", "max", "min", "argmax", "argmin", "aminmax"]
METHODS = list(__all__)

# PyTorch's torch.return_types.max / min / aminmax: named (values, indices) pairs
max_result = collections.namedtuple("max", ["values", "indices"])
min_result = collections.namedtuple("min", ["values", "indices"])
aminmax_result = collections.namedtuple("aminmax", ["min", "max"])


# ---------------------------------------------------------------- layout helpers
def kept_shape(shape, dims):
    """``shape`` with the reduced ``dims`` set to 1 (the keepdim shape)."""
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def reduced_shape(shape, dims, keepdim):
    """The output shape of a reduction of ``shape`` over ``dims``."""
    if keepdim:
        return kept_shape(shape, dims)
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def arrange(x, dims):
    """``x`` as a C-contiguous (A, R, B) array whose middle axis runs over the
    reduced ``dims`` (sorted): adjacent dims need no copy of a contiguous input,
    others are moved to the end first (one copy).  ``dims == ()`` gives R = 1."""
    shape = x.shape
    if not dims:
        return np.ascontiguousarray(x).reshape(x.size, 1, 1)
    if dims == tuple(range(dims[0], dims[-1] + 1)):
        a = math.prod(shape[:dims[0]])
        r = math.prod(shape[dims[0]:dims[-1] + 1])
        b = math.prod(shape[dims[-1] + 1:])
        return np.ascontiguousarray(x).reshape(a, r, b)
    kept = [i for i in range(len(shape)) if i not in dims]
    a = math.prod(shape[i] for i in kept)
    r = math.prod(shape[i] for i in dims)
    return np.ascontiguousarray(x.transpose(kept + list(dims))).reshape(a, r, 1)


def unarrange(y, shape, dims):
    """The inverse of ``arrange`` for an (A, R, B) array of the input's size."""
    if not dims or dims == tuple(range(dims[0], dims[-1] + 1)):
        return y.reshape(shape)
    kept = [i for i in range(len(shape)) if i not in dims]
    perm = kept + list(dims)
    y = y.reshape([shape[i] for i in perm])
    return y.transpose(np.argsort(perm))


def keep(t, shape, dims, keepdim):
    """The reduced Tensor ``t`` reshaped to the keepdim shape (differentiable)."""
    if keepdim:
        return t
    want = kept_shape(shape, dims)
    return t if tuple(t.shape) == want else t.reshape(want)


def _extrema_array(x, dims, keepdim, is_min):
    shape = reduced_shape(x.shape, dims, keepdim)
    if x.dtype.kind != "f":
        f = np.amin if is_min else np.amax
        return np.asarray(f(x, axis=dims, keepdims=keepdim))
    xa = arrange(x, dims)
    out = np.empty(xa.shape[0] * xa.shape[2], x.dtype)
    _kx.extrema_fwd(xa, out, None, is_min, CONFIG.num_threads)
    return out.reshape(shape)


def _argext_array(x, dim, is_min):
    """(values, int64 indices) along one ``dim``, keepdim shape."""
    shape = kept_shape(x.shape, (dim,)) if x.ndim else ()
    if x.dtype.kind != "f":
        f = np.argmin if is_min else np.argmax
        idx = np.asarray(f(x, axis=dim if x.ndim else None), np.int64).reshape(shape)
        return np.take_along_axis(x, idx, dim) if x.ndim else x.copy(), idx
    xa = arrange(x, (dim,) if x.ndim else ())
    n = xa.shape[0] * xa.shape[2]
    out = np.empty(n, x.dtype)
    idx = np.empty(n, np.int64)
    _kx.extrema_fwd(xa, out, idx, is_min, CONFIG.num_threads)
    return out.reshape(shape), idx.reshape(shape)


# ---------------------------------------------------------------- amax / amin
def _ties(out, x, dims, keepdim):
    """(mask of the entries equal to the extreme, their count per slice as float).

    In tensor ops (not on the storages), so that the rules also run on batched
    tensors: ``vmap(grad(amax))`` gives each example its own tie split."""
    x, out = x.detach(), out.detach()
    o = out if keepdim else out.reshape(kept_shape(x.shape, dims))
    mask = x == o
    return mask, mask.sum(dims, keepdim=True).to(x.dtype)


def _ext_vjp(g, out, x, dims, keepdim):
    """g split evenly among the tied extreme entries of each slice."""
    mask, count = _ties(out, x, dims, keepdim)
    return where(mask, keep(g, x.shape, dims, keepdim) / count, 0.0)


def _ext_jvp(ts, out, x, dims, keepdim):
    """The mean of the tangent over the tied extreme entries."""
    mask, count = _ties(out, x, dims, keepdim)
    s = where(mask, ts[0], 0.0).sum(dims, keepdim=True) / count
    return s if keepdim else s.reshape(out.shape)


_amax = defop("amax", lambda x, dims, keepdim: _extrema_array(x, dims, keepdim, False),
              vjp=(_ext_vjp,), jvp=_ext_jvp, saves=("inputs", "out"), batch=_B.dims_rule("dims"))
_amin = defop("amin", lambda x, dims, keepdim: _extrema_array(x, dims, keepdim, True),
              vjp=(_ext_vjp,), jvp=_ext_jvp, saves=("inputs", "out"), batch=_B.dims_rule("dims"))


def _reduce_sig(op):
    return Signature(op, TensorArg("input"), DimsArg("dim", default=()),
                     BoolArg("keepdim", default=False))


_check_amax = declare(_reduce_sig("amax"))
_check_amin = declare(_reduce_sig("amin"))
_check_max = declare(Signature("max", TensorArg("input"), DimArg("dim"),
                               BoolArg("keepdim", default=False)))
_check_min = declare(Signature("min", TensorArg("input"), DimArg("dim"),
                               BoolArg("keepdim", default=False)))
_check_argmax = declare(Signature("argmax", TensorArg("input", "fi"), DimArg("dim", default=0),
                                  BoolArg("keepdim", default=False)))
_check_argmin = declare(Signature("argmin", TensorArg("input", "fi"), DimArg("dim", default=0),
                                  BoolArg("keepdim", default=False)))
_check_aminmax = declare(Signature("aminmax", TensorArg("input"), DimArg("dim", default=0),
                                   BoolArg("keepdim", default=False)))


def _nonempty(op, x, dims):
    shape = x._data.shape
    for d in dims:
        if shape[d] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    if not dims and x._data.size == 0:
        raise RuntimeError(f"{op}(): Expected reduction dim to be specified for "
                           f"input.numel() == 0.")


def amax(input, dim=(), keepdim=False):
    """Maximum over ``dim`` (an int or a tuple; ``()`` or None: every dim).

    Returns:
        Tensor of the input's dtype; nan where a slice holds nan (PyTorch).
        The gradient is split evenly among the entries tied at the maximum.

    Raises:
        TypeError: a non-Tensor input, bad dim or keepdim types.  IndexError: a
        dim out of range, or a reduced dim of size 0 (as PyTorch).
        RuntimeError: a repeated dim.
    """
    input, dims, keepdim = _check_amax(input, dim, keepdim)
    _nonempty("amax", input, dims)
    return apply(_amax, (input,), {"dims": dims, "keepdim": keepdim})


def amin(input, dim=(), keepdim=False):
    """Minimum over ``dim``; as ``amax`` (ties split the gradient evenly)."""
    input, dims, keepdim = _check_amin(input, dim, keepdim)
    _nonempty("amin", input, dims)
    return apply(_amin, (input,), {"dims": dims, "keepdim": keepdim})


def _max_min(op, input, dim, keepdim, other, is_min):
    if isinstance(dim, Tensor) and other is None:
        dim, other = None, dim
    if other is not None:
        import tensorplay
        fn = getattr(tensorplay, "minimum" if is_min else "maximum", None)
        if fn is None:
            raise NotImplementedError(f"{op}(input, other): elementwise "
                                      f"{'minimum' if is_min else 'maximum'} is not "
                                      f"available in this build")
        return fn(input, other)
    if dim is None:
        if not isinstance(input, Tensor):
            _check_amax(input, (), False)            # the TypeError, named max
        check = _check_amin if is_min else _check_amax
        input, dims, _ = check(input, (), False)
        if input._data.size == 0:
            raise RuntimeError(f"{op}(): Expected reduction dim to be specified for "
                               f"input.numel() == 0. Specify the reduction dim with the "
                               f"'dim' argument.")
        return apply(_amin if is_min else _amax, (input,), {"dims": dims, "keepdim": False})
    check = _check_min if is_min else _check_max
    input, dim, keepdim = check(input, dim, keepdim)
    x = input._data
    if x.ndim and x.shape[dim] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {dim} to have non-zero size.")
    _, idx = _argext_array(x, dim, is_min)
    index = Tensor._wrap(idx)
    values = gather(input, dim, index) if x.ndim else gather(input, 0, index)
    if not keepdim and x.ndim:
        values = values.squeeze(dim)
        index = Tensor._wrap(idx.reshape(values._data.shape))
    return (min_result if is_min else max_result)(values, index)


@_B.loop_under_vmap
def max(input, dim=None, keepdim=False, *, other=None):
    """``max(input)``: the maximum of all elements (0-d; the gradient split evenly
    among ties).  ``max(input, dim, keepdim=False)``: the named tuple
    ``(values, indices)`` along ``dim`` (``torch.return_types.max``; indices int64,
    the first occurrence; the gradient goes to that index).  ``max(input, other)``:
    the elementwise maximum (``tensorplay.maximum``).

    nan propagates: a slice holding nan has maximum nan at its first nan.

    Raises:
        TypeError: a non-Tensor input, bad dim or keepdim types.  IndexError: a
        dim out of range, or a reduced dim of size 0.  RuntimeError: an empty
        input without ``dim`` (as PyTorch).
    """
    return _max_min("max", input, dim, keepdim, other, False)


@_B.loop_under_vmap
def min(input, dim=None, keepdim=False, *, other=None):
    """The minimum; the same forms and conventions as ``max``."""
    return _max_min("min", input, dim, keepdim, other, True)


def _argext(op, input, dim, keepdim, is_min):
    check = _check_argmin if is_min else _check_argmax
    input, d, keepdim = check(input, 0 if dim is None else dim, keepdim)
    x = input._data
    if dim is None:
        if x.size == 0:
            raise IndexError(f"{op}(): Expected reduction dim to be specified for "
                             f"input.numel() == 0.")
        _, idx = _argext_array(x.reshape(-1), 0, is_min)
        return Tensor._wrap(idx.reshape((1,) * x.ndim if keepdim else ()))
    if x.ndim and x.shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    _, idx = _argext_array(x, d, is_min)
    if not keepdim and x.ndim:
        idx = idx.reshape(reduced_shape(x.shape, (d,), False))
    return Tensor._wrap(idx)


@_B.loop_under_vmap
def argmax(input, dim=None, keepdim=False):
    """Indices (int64) of the maximum: over the flattened input when ``dim`` is
    None (a 0-d result; keepdim gives all dims of size 1), else along ``dim``.
    The first occurrence among ties; the first nan where there is one (PyTorch).

    Raises:
        TypeError / IndexError: as ``max`` (IndexError also for an empty input
        without ``dim``, as PyTorch).  NotImplementedError: a bool input.
    """
    return _argext("argmax", input, dim, keepdim, False)


@_B.loop_under_vmap
def argmin(input, dim=None, keepdim=False):
    """Indices of the minimum; as ``argmax``."""
    return _argext("argmin", input, dim, keepdim, True)


@_B.loop_under_vmap
def aminmax(input, dim=None, keepdim=False):
    """The named tuple ``(min, max)`` (``torch.aminmax``) over every element, or
    along ``dim``; gradients as ``amin``/``amax`` (ties split evenly).  (PyTorch
    takes ``dim`` and ``keepdim`` by keyword only; both forms work here.)

    Raises:
        as ``amax``; an empty input without ``dim`` raises RuntimeError.
    """
    input, d, keepdim = _check_aminmax(input, 0 if dim is None else dim, keepdim)
    if dim is None:
        if input._data.size == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension "
                               "as the operation has no identity.")
        dims = tuple(range(input._data.ndim))
    else:
        dims = (d,) if input._data.ndim else ()
        _nonempty("aminmax", input, dims)
    p = {"dims": dims, "keepdim": keepdim}
    return aminmax_result(apply(_amin, (input,), p), apply(_amax, (input,), p))
