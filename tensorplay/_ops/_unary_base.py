"""Machinery shared by the unary math families (``unary.py``, ``unary_special.py``):
one call registers an elementwise op together with its fused derivative kernel.

``defunary(name, fwd, deriv, second, uses=...)`` registers two primitives:

``name``
    ``y = f(x)`` by the forward kernel ``fwd`` (``tensorplay/_kernels/unary.pyx``);
    its VJP and its JVP are both ``name_backward(g, x)`` (or ``(g, y)`` when the
    derivative is cheaper from the output, ``uses="output"``).
``name_backward``
    ``g * f'(b)`` in one pass (``tensorplay/_kernels/unary_deriv.pyx``, strong-zero
    in g: exactly 0 where g == 0).  Its derivative with respect to g is itself; its
    derivative with respect to b is ``second(u, g, b)`` = ``u * g * d f'(b)/db``,
    written in tensorplay ops (so every order is differentiable), or ``None`` where
    f' is piecewise constant.

The public ``name_backward(grad_output, input_or_output)`` function validates its
operands (a declared Signature, as ``tanh_backward``) and broadcasts them.
"""
import numpy as np

from tensorplay._pool import MIN_BYTES as POOL_MIN_BYTES
from tensorplay._pool import empty as pool_empty
from tensorplay._kernels import unary as _ku
from tensorplay._kernels import unary_deriv as _kd
from tensorplay._ops._common import CONFIG, broadcast_shape
from tensorplay._ops._validate import Signature, TensorArg, declare
from tensorplay._ops.elementwise import _binary_sig, _unary_forward, div_backward, mul_backward
from tensorplay._ops.registry import apply, defop, tangent_sum
from tensorplay._ops import _batching as _B
from tensorplay._tensor import Tensor

__all__ = ["defunary", "deriv_forward", "zero_rule", "zero_jvp", "smul", "sdiv", "public",
           "float_checker", "_ku", "_kd"]

smul = mul_backward     # a * b, exactly 0 where either is 0
sdiv = div_backward     # a / b, exactly 0 where a is 0


def deriv_forward(name, kernel, param=None, default=0.0):
    """Forward of a fused derivative primitive: ``kernel(g, b, out, p, n_threads)``
    with broadcasting; ``p`` is the primitive's keyword ``param`` (or ``default``)."""
    def forward(g, b, **params):
        shape = broadcast_shape(g.shape, b.shape, name)
        p = default if param is None else params[param]
        out = (np.empty(shape, g.dtype) if g.nbytes < POOL_MIN_BYTES
               else pool_empty(shape, g.dtype))
        kernel(g, b, out, p, CONFIG.num_threads)
        return out
    return forward


def zero_rule(g, out, x, **params):
    """The VJP of a piecewise-constant op (floor, sign, ...): zeros of the input's
    shape (g's: the op is elementwise) and dtype, outside the graph (PyTorch gives
    zeros, not None).  The op saves nothing: ``x`` is only its metadata."""
    return Tensor._wrap(np.zeros(g._data.shape, g._data.dtype))


def zero_jvp(ts, out, x, **params):
    """The JVP of a piecewise-constant op: zeros (expanded to the output's shape
    by the registry)."""
    return Tensor._wrap(np.zeros(ts[0]._data.shape, ts[0]._data.dtype))


_BACKWARD_DOC = """``grad_output * f'({arg})`` for ``f = {name}``: {name}'s VJP and JVP
    in one fused pass ({formula}), exactly 0 where ``grad_output`` is 0 (the strong
    zero).  Broadcastable float operands (PyTorch's promotion); the result has the
    broadcast shape.

    Raises:
        TypeError: an operand that is neither a Tensor nor a number.
        NotImplementedError: operands whose promoted dtype is not floating.
        RuntimeError: shapes that do not broadcast.
"""


def defunary(name, fwd, deriv, second, *, uses="input", formula="", ufunc=None):
    """Register ``name`` and ``name_backward`` (see the module docstring); return the
    forward OpDef and the public backward function."""
    bname = name + "_backward"
    check = declare(_binary_sig(bname, ("grad_output", uses), result_kinds="f"))

    def backward(grad_output, other):
        g, b = check(grad_output, other)
        return apply(bop, (g, b), {})
    backward.__name__ = backward.__qualname__ = bname
    backward.__doc__ = _BACKWARD_DOC.format(name=name, arg="input" if uses == "input"
                                            else "output", formula=formula)
    if second is None:
        bvjp = (lambda gb, out, g, b: backward(gb, b), None)

        def bjvp(ts, out, g, b):
            return None if ts[0] is None else backward(ts[0], b)
    else:
        bvjp = (lambda gb, out, g, b: backward(gb, b),
                lambda gb, out, g, b: second(gb, g, b))

        def bjvp(ts, out, g, b):
            return tangent_sum(None if ts[0] is None else backward(ts[0], b),
                               None if ts[1] is None else second(ts[1], g, b))
    bop = defop(bname, deriv_forward(bname, deriv), vjp=bvjp, jvp=bjvp, saves=("inputs",),
                batch=_B.elementwise_rule)
    if uses == "input":
        op = defop(name, _unary_forward(fwd, ufunc),
                   vjp=(lambda g, out, x: backward(g, x),),
                   jvp=lambda ts, out, x: backward(ts[0], x), saves=("inputs",),
                   batch=_B.elementwise_rule)
    else:
        op = defop(name, _unary_forward(fwd, ufunc),
                   vjp=(lambda g, out, x: backward(g, out),),
                   jvp=lambda ts, out, x: backward(ts[0], out), saves=("out",),
                   batch=_B.elementwise_rule)
    return op, backward


def float_checker(name, kinds="fib", to_float=True, exc=NotImplementedError):
    """The declared check of a one-tensor op: integer and bool inputs cast to the
    default float dtype (``to_float``), as PyTorch's float-valued math."""
    return declare(Signature(name, TensorArg("input", kinds, to_float=to_float, exc=exc)))


_RAISES = """
    Raises:
        TypeError: a non-Tensor input.{extra}
"""


def public(name, op, check, doc, extra=""):
    """The public function ``name(input)``: validate, then apply primitive ``op``."""
    def fn(input):
        return apply(op, (check(input),), {})
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc + _RAISES.format(extra=extra)
    return fn
