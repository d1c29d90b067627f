"""clamp / clip (number or tensor bounds, either may be None), clamp_min,
clamp_max, hardtanh and relu6 (clamp with number bounds), nan_to_num; with their
fused derivative kernels ``clamp_backward`` and ``nan_to_num_backward``.

Kernels: ``clamp_fwd`` / ``clamp_bwd`` / ``nan_to_num_fwd`` / ``nan_to_num_bwd`` in
``tensorplay/_kernels/activation.pyx.tp`` (point functions in
``_activation_math.pxd``).  Integer and bool tensors (never differentiable) use
numpy.

**clamp at its bounds** (issue 7's convention, PyTorch's documented rule for
non-differentiable points: the minimum-norm subgradient).  The pieces of
``min(max(x, lo), hi)`` active at a point are x (lo <= x <= hi), lo
(x <= lo <= hi) and hi (x >= hi, or lo >= hi); the gradient is the minimum-norm
element of the convex hull of their gradients:

- number bounds: x gets 1 strictly inside (min, max) and 0 at a bound (as relu
  at 0, and hardtanh/relu6 in PyTorch too).  PyTorch's clamp gives 1 at the
  bounds (derivatives.yaml: "we return the subgradient 1"); tensorplay departs;
- tensor bounds: at a tie the gradient is split evenly between x and the bound
  it ties (1/2 each; 1/3 each when x == min == max), as for maximum/minimum.
  PyTorch gives x everything at a tie (``x >= min & x <= max``).
- a number bound that is active makes everyone's share 0 (its gradient is 0);
  min > max gives max everything (the output is max), as PyTorch.
"""
import numpy as np

from tensorplay._pool import MIN_BYTES as POOL_MIN_BYTES
from tensorplay._pool import empty as pool_empty
from tensorplay._kernels import activation as _ka
from tensorplay._ops._common import CONFIG, _constant, broadcast_shape
from tensorplay._ops._validate import IntArg, Signature, TensorArg, declare
from tensorplay._ops.activation import _bwd, number
from tensorplay._ops.registry import apply, defop, tangent_sum
from tensorplay._ops import _batching as _B
from tensorplay._tensor import Tensor

__all__ = ["clamp", "clip", "clamp_min", "clamp_max", "nan_to_num"]
METHODS = ["clamp", "clip", "clamp_min", "clamp_max", "nan_to_num"]
INPLACE = ["clamp", "clip", "clamp_min", "clamp_max", "nan_to_num"]
INTERNAL = ["hardtanh", "relu6", "clamp_backward", "nan_to_num_backward"]

ABSENT, NUMBER, TENSOR = 0, 1, 2     # kinds of a bound (the kernel's klo / khi)


# ---------------------------------------------------------------- clamp
def _clamp_fwd(x, lo, hi, min_kind, max_kind):
    shape = broadcast_shape(broadcast_shape(x.shape, lo.shape, "clamp"), hi.shape, "clamp")
    out = (np.empty(shape, x.dtype) if shape == x.shape and x.nbytes < POOL_MIN_BYTES
           else pool_empty(shape, x.dtype))
    if x.dtype.kind == "f":
        _ka.clamp_fwd(x, lo, hi, out, CONFIG.num_threads)
    else:
        np.minimum(np.maximum(x, lo), hi, out=out)
    return out


def _flat_operand(a, shape, n):
    """``a`` C-contiguous with n elements, or of size 1 (clamp_bwd's operands)."""
    if a.size == 1 or (a.size == n and a.flags.c_contiguous):
        return a
    return np.ascontiguousarray(np.broadcast_to(a, shape))


def _clamp_bwd(g, x, lo, hi, which, min_kind, max_kind):
    shape = broadcast_shape(broadcast_shape(g.shape, x.shape, "clamp_backward"),
                            broadcast_shape(lo.shape, hi.shape, "clamp_backward"),
                            "clamp_backward")
    out = pool_empty(shape, x.dtype)
    n = out.size
    _ka.clamp_bwd(*[_flat_operand(a, shape, n) for a in (g, x, lo, hi)], out,
                  which, min_kind, max_kind, CONFIG.num_threads)
    return out


def _cb(g, x, lo, hi, which, min_kind, max_kind):
    return apply(_clamp_backward, (g, x, lo, hi),
                 {"which": which, "min_kind": min_kind, "max_kind": max_kind})


# clamp_backward is piecewise constant in x, lo and hi and linear in g: its own
# VJP and JVP for g are itself, and x, lo, hi get none.
_clamp_backward = defop(
    "clamp_backward", _clamp_bwd,
    vjp=(lambda gb, out, g, x, lo, hi, **p: _cb(gb, x, lo, hi, **p), None, None, None),
    jvp=lambda ts, out, g, x, lo, hi, **p: None if ts[0] is None else _cb(ts[0], x, lo, hi,
                                                                          **p),
    saves=("inputs",), batch=_B.elementwise_rule)
_clamp = defop(
    "clamp", _clamp_fwd,
    vjp=tuple((lambda g, out, x, lo, hi, w=w, **p: _cb(g, x, lo, hi, w, **p))
              for w in range(3)),
    jvp=lambda ts, out, x, lo, hi, **p: tangent_sum(
        *[None if t is None else _cb(t, x, lo, hi, w, **p) for w, t in enumerate(ts)]),
    saves=("inputs",), batch=_B.elementwise_rule)


def _clamp_sig(op):
    names = ("input", "min", "max")
    return declare(Signature(op, TensorArg("input"), TensorArg("min", numbers=True),
                             TensorArg("max", numbers=True), promote=names,
                             broadcast=names))


_check_clamp = _clamp_sig("clamp")
_check_clip = _clamp_sig("clip")
_check_clamp_min = declare(Signature("clamp_min", TensorArg("input"),
                                     TensorArg("min", numbers=True),
                                     promote=("input", "min"), broadcast=("input", "min")))
_check_clamp_max = declare(Signature("clamp_max", TensorArg("input"),
                                     TensorArg("max", numbers=True),
                                     promote=("input", "max"), broadcast=("input", "max")))
_check_clamp_backward = declare(Signature(
    "clamp_backward", *(TensorArg(n, numbers=True) for n in ("grad_output", "input", "min",
                                                              "max")),
    IntArg("which", lo=0, hi=2), IntArg("min_kind", lo=0, hi=2),
    IntArg("max_kind", lo=0, hi=2),
    promote=("grad_output", "input", "min", "max"),
    broadcast=("grad_output", "input", "min", "max"), result_kinds="f"))

_LIMITS = {}


def _limit(dtype, upper):
    """The absent bound of a dtype: -inf / +inf, or the integer range's end."""
    key = (dtype, upper)
    t = _LIMITS.get(key)
    if t is None:
        if dtype.kind == "f":
            v = np.inf if upper else -np.inf
        elif dtype.kind == "b":
            v = upper
        else:
            info = np.iinfo(dtype)
            v = info.max if upper else info.min
        arr = np.array(v, dtype)
        arr.flags.writeable = False
        t = _LIMITS[key] = Tensor._wrap(arr)
    return t


def _kind(bound):
    return ABSENT if bound is None else TENSOR if isinstance(bound, Tensor) else NUMBER


_NUMBER = (float, int)


def _clamp_impl(op, check, input, min, max):
    # the common case first: a float tensor and Python-number bounds, which keep
    # the tensor's dtype (PyTorch), as cached 0-d constants -- the generic
    # three-operand checker costs several times the kernel on small tensors
    if type(input) is Tensor and input._data.dtype.kind == "f" and (min is not None or
                                                                    max is not None):
        tmin, tmax = type(min), type(max)
        if (tmin in _NUMBER or min is None) and (tmax in _NUMBER or max is None):
            dt = input._data.dtype
            lo = _limit(dt, False) if min is None else _constant(min, dt)
            hi = _limit(dt, True) if max is None else _constant(max, dt)
            return apply(_clamp, (input, lo, hi),
                         {"min_kind": NUMBER if tmin in _NUMBER else ABSENT,
                          "max_kind": NUMBER if tmax in _NUMBER else ABSENT})
    if min is None and max is None:
        raise RuntimeError(f"{op}(): at least one of 'min' or 'max' must not be None")
    # an absent bound is checked as the input itself: promotion and broadcasting
    # see only the bounds that are there, and errors name the argument given
    x, lo, hi = check(input, input if min is None else min, input if max is None else max)
    dt = x._data.dtype
    if min is None:
        lo = _limit(dt, False)
    if max is None:
        hi = _limit(dt, True)
    return apply(_clamp, (x, lo, hi), {"min_kind": _kind(min), "max_kind": _kind(max)})


_CLAMP_DOC = """``min(max(input, min), max)``, elementwise with broadcasting
    (``torch.{op}``).

    Args:
        input (Tensor): any dtype.
        min, max (Tensor, number or None): bounds; either may be None (no bound),
            not both.  Tensor bounds broadcast with the input (the result has
            the broadcast shape).  Operands promote together (PyTorch's rules:
            an integer tensor with a float bound gives a float result).

    NaN in the input or in a bound propagates; where min > max the result is max
    (PyTorch).  Gradients (see the module docstring): the input gets 1 strictly
    inside (min, max) and 0 at a number bound (the minimum-norm subgradient,
    as relu at 0; PyTorch gives 1); at a tie with a tensor bound the gradient is
    split evenly between them; a tensor bound gets the gradient where it is the
    output.

    Raises:
        TypeError: a non-Tensor input, or a bound that is neither a Tensor, a
            number nor None.
        RuntimeError: both bounds None, or shapes that do not broadcast.
"""


def clamp(input, min=None, max=None):
    return _clamp_impl("clamp", _check_clamp, input, min, max)


def clip(input, min=None, max=None):
    return _clamp_impl("clip", _check_clip, input, min, max)


clamp.__doc__ = _CLAMP_DOC.replace("{op}", "clamp")
clip.__doc__ = "Alias of ``clamp``: " + _CLAMP_DOC.replace("{op}", "clip")


def _not_tensor(op, input):
    if not isinstance(input, Tensor):      # (the pair checker takes numbers on both sides)
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")


def clamp_min(input, min):
    """``clamp(input, min=min)``: ``max(input, min)`` elementwise (``torch.clamp_min``);
    the same conventions as ``clamp``.  Raises as ``clamp``."""
    if type(input) is not Tensor:
        _not_tensor("clamp_min", input)
    x, lo = _check_clamp_min(input, min)
    return apply(_clamp, (x, lo, _limit(x._data.dtype, True)),
                 {"min_kind": _kind(min), "max_kind": ABSENT})


def clamp_max(input, max):
    """``clamp(input, max=max)``: ``min(input, max)`` elementwise (``torch.clamp_max``);
    the same conventions as ``clamp``.  Raises as ``clamp``."""
    if type(input) is not Tensor:
        _not_tensor("clamp_max", input)
    x, hi = _check_clamp_max(input, max)
    return apply(_clamp, (x, _limit(x._data.dtype, False), hi),
                 {"min_kind": ABSENT, "max_kind": _kind(max)})


def clamp_backward(grad_output, input, min, max, which, min_kind, max_kind):
    """``grad_output * d clamp(input, min, max) / d(input | min | max)`` for
    ``which`` = 0 | 1 | 2, with ``min_kind``/``max_kind`` the bounds' kinds (0
    absent, 1 number, 2 tensor), in one pass: the VJP and JVP of clamp (see the
    module docstring for the weights at ties).  Exactly 0 where ``grad_output``
    is 0.  Operands broadcast and promote together; the result must be float.

    Raises:
        TypeError: an operand that is neither a Tensor nor a number; a non-int
            which/kind.
        RuntimeError: which or a kind outside [0, 2]; shapes that do not broadcast.
        NotImplementedError: operands that promote to an integer or bool dtype.
    """
    g, x, lo, hi, which, klo, khi = _check_clamp_backward(grad_output, input, min, max,
                                                          which, min_kind, max_kind)
    return _cb(g, x, lo, hi, which, klo, khi)


# ---------------------------------------------------------------- hardtanh, relu6
_check_hardtanh = declare(Signature("hardtanh", TensorArg("input", "fi", exc=RuntimeError)))
_check_relu6 = declare(Signature("relu6", TensorArg("input", "fi", exc=RuntimeError)))


def _number_bounds(x, lo, hi):
    dt = x._data.dtype
    if dt.kind == "f":
        return _constant(lo, dt), _constant(hi, dt)
    lo, hi = int(lo), int(hi)          # PyTorch keeps an integer input's dtype
    return (Tensor._wrap(np.array(lo, dt)), Tensor._wrap(np.array(hi, dt)))


def hardtanh(input, min_val=-1.0, max_val=1.0):
    """``clamp(input, min_val, max_val)`` with number bounds
    (``torch.nn.functional.hardtanh``): the same kernel; derivative 1 strictly
    inside, 0 outside and at the bounds (minimum norm; PyTorch too).  An integer
    input keeps its dtype (bounds truncated to integers), as PyTorch.

    Raises:
        TypeError: a non-Tensor input or non-number bounds.
        RuntimeError: a bool tensor.
        ValueError: min_val > max_val (PyTorch's type).
    """
    x = _check_hardtanh(input)
    lo, hi = number("hardtanh", "min_val", min_val), number("hardtanh", "max_val", max_val)
    if lo > hi:
        raise ValueError(f"hardtanh(): min_val cannot be greater than max_val, got "
                         f"min_val={min_val}, max_val={max_val}")
    return apply(_clamp, (x, *_number_bounds(x, lo, hi)),
                 {"min_kind": NUMBER, "max_kind": NUMBER})


def relu6(input):
    """``min(max(input, 0), 6)`` (``torch.nn.functional.relu6``): hardtanh(0, 6).
    Derivative 1 on (0, 6), else 0 (also at 0 and 6).  Integer input keeps its
    dtype.  Raises TypeError (non-Tensor) and RuntimeError (bool)."""
    x = _check_relu6(input)
    return apply(_clamp, (x, *_number_bounds(x, 0.0, 6.0)),
                 {"min_kind": NUMBER, "max_kind": NUMBER})


# ---------------------------------------------------------------- nan_to_num
def _nan_to_num_fwd(x, nan, posinf, neginf):
    if x.dtype.kind != "f":
        return np.array(x)                  # nothing to replace: a copy
    out = (np.empty(x.shape, x.dtype) if x.nbytes < POOL_MIN_BYTES
           else pool_empty(x.shape, x.dtype))
    info = np.finfo(x.dtype)
    _ka.nan_to_num_fwd(x, out, nan, info.max if posinf is None else posinf,
                       info.min if neginf is None else neginf, 0.0, CONFIG.num_threads)
    return out


def _n2n_params():
    return (0.0, 0.0, 0.0, 0.0)


def _n2nb(g, x):
    return apply(_nan_to_num_backward, (g, x), {})


# nan_to_num_backward(g, x) = g where x is finite, else 0: linear in g, constant in x
_nan_to_num_backward = defop(
    "nan_to_num_backward", _bwd("nan_to_num_backward", _ka.nan_to_num_bwd, _n2n_params),
    vjp=(lambda gb, out, g, x: _n2nb(gb, x), None),
    jvp=lambda ts, out, g, x: None if ts[0] is None else _n2nb(ts[0], x),
    saves=("inputs",), batch=_B.elementwise_rule)
_nan_to_num = defop(
    "nan_to_num", _nan_to_num_fwd,
    vjp=(lambda g, out, x, **p: _n2nb(g, x),),
    jvp=lambda ts, out, x, **p: _n2nb(ts[0], x),
    saves=("inputs",), batch=_B.elementwise_rule)

_check_nan_to_num = declare(Signature("nan_to_num", TensorArg("input")))
_check_nan_to_num_backward = declare(Signature(
    "nan_to_num_backward", TensorArg("grad_output", numbers=True),
    TensorArg("input", numbers=True), promote=("grad_output", "input"),
    broadcast=("grad_output", "input"), result_kinds="f", forward_checks_broadcast=True))


def _optional_number(op, name, value):
    return None if value is None else number(op, name, value)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """``input`` with NaN replaced by ``nan``, +inf by ``posinf`` and -inf by
    ``neginf`` (``torch.nan_to_num``; defaults 0, the dtype's largest and
    smallest finite values).  Integer and bool tensors come back as a copy.
    Gradient 1 where the input is finite, 0 where a value was replaced.

    Raises:
        TypeError: a non-Tensor input, or a replacement that is not a number.
    """
    x = _check_nan_to_num(input)
    return apply(_nan_to_num, (x,), {"nan": number("nan_to_num", "nan", nan),
                                     "posinf": _optional_number("nan_to_num", "posinf", posinf),
                                     "neginf": _optional_number("nan_to_num", "neginf", neginf)})


def nan_to_num_backward(grad_output, input):
    """``grad_output`` where ``input`` is finite, else 0: nan_to_num's VJP and JVP.
    Broadcastable operands, promoted to a float dtype.

    Raises:
        TypeError: an operand that is neither a Tensor nor a number.
        NotImplementedError: operands that promote to an integer or bool dtype.
        RuntimeError: shapes that do not broadcast.
    """
    g, x = _check_nan_to_num_backward(grad_output, input)
    return _n2nb(g, x)

