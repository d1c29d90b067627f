"""Op-table rows of the binary and ternary math family (tensorplay/_ops/binary.py):
maximum..addcdiv, the % and // operators, and their fused derivative kernels.

References are numpy, scipy.special or closed forms.  Samples stay away from the
kinks (ties of maximum, a / b near an integer for remainder, the origin of atan2
and hypot, zeros of copysign's input); the kinks, nan, inf, ties, integer dtypes
and errors are tested in tests/test_binary.py.
"""
import numpy as np
import scipy.special

import tensorplay as tp
from tensorplay._ops import binary as B

from ._base import (AWAY, Fuzz, OpSpec, _away_from_zero, _normal, _uniform, binary_samples,
                    ternary_samples, unary_samples)

_INTERNAL = "an internal derivative kernel: torch has no public op of this name"
_POS = _uniform(0.5, 2.0)
_AWAY = _away_from_zero()


def _floordiv_ref(a, b):
    return np.floor_divide(a, b)


def _remainder_ref(a, b):
    return np.remainder(a, b)


def _sel(wins, g, x, o):
    return g * np.where(x == o, 0.5, wins(x, o))


def _row(name, fn, ref, samples, torch, variant="", smooth=True, **fuzz):
    sig = fuzz.pop("sig", name)
    return OpSpec(name, fn, ref, samples, variant=variant, smooth=smooth,
                  fuzz=Fuzz(sig, **fuzz), torch=torch)


_AB = ("input", "other")
_GXO = ("grad_output", "input", "other")

SPECS = [
    # ---- forward ops
    _row("maximum", tp.maximum, np.maximum, binary_samples(), lambda T, a, b: T.maximum(a, b),
         smooth=False, args=_AB, kinds="fib"),
    _row("maximum", lambda a: a.maximum(0.25), lambda a: np.maximum(a, 0.25), unary_samples(),
         None, variant="scalar", smooth=False, kinds="fi",
         base=lambda ts, kw: [ts[0], 0.25]),
    _row("minimum", tp.minimum, np.minimum, binary_samples(), lambda T, a, b: T.minimum(a, b),
         smooth=False, args=_AB, kinds="fib"),
    _row("fmax", tp.fmax, np.fmax, binary_samples(), lambda T, a, b: T.fmax(a, b),
         smooth=False, args=_AB, kinds="fib"),
    _row("fmin", tp.fmin, np.fmin, binary_samples(), lambda T, a, b: T.fmin(a, b),
         smooth=False, args=_AB, kinds="fib"),
    _row("atan2", tp.atan2, np.arctan2, binary_samples(_AWAY, _AWAY),
         lambda T, a, b: T.atan2(a, b), args=_AB, kinds="fi", domain=AWAY),
    _row("atan2", lambda a: a.atan2(2.0), lambda a: np.arctan2(a, 2.0), unary_samples(),
         None, variant="scalar", kinds="fi", base=lambda ts, kw: [ts[0], 2.0]),
    _row("hypot", tp.hypot, np.hypot, binary_samples(_AWAY, _AWAY),
         lambda T, a, b: T.hypot(a, b), args=_AB, domain=AWAY),
    _row("remainder", tp.remainder, _remainder_ref, binary_samples(_normal, _AWAY),
         lambda T, a, b: T.remainder(a, b), smooth=False, args=_AB, kinds="fi",
         domain=[(-2.0, 2.0), AWAY], special=False),   # -0.0 % 3: torch's -0.0, numpy's 0.0
    _row("remainder", lambda a, b: a % b, _remainder_ref, binary_samples(_normal, _AWAY),
         lambda T, a, b: a % b, variant="operator", smooth=False, args=_AB, kinds="fi",
         domain=[(-2.0, 2.0), AWAY], special=False),
    _row("remainder", lambda b: 2.5 % b, lambda b: np.remainder(2.5, b),
         unary_samples(_AWAY), lambda T, b: T.tensor(2.5, dtype=b.dtype) % b,   # (torch: no
         variant="rscalar", smooth=False,                       # grad for a Scalar % b)
         args=("other",), kinds="fi", domain=AWAY, special=False,
         base=lambda ts, kw: [2.5, ts[0]]),
    _row("fmod", tp.fmod, np.fmod, binary_samples(_normal, _AWAY),
         lambda T, a, b: T.fmod(a, b), smooth=False, args=_AB, kinds="fi",
         domain=[(-2.0, 2.0), AWAY]),
    _row("floor_divide", tp.floor_divide, _floordiv_ref, binary_samples(_normal, _AWAY),
         "torch.floor_divide has no derivative (backward raises); tensorplay's is 0, "
         "as torch.div(rounding_mode='floor'): see the [div_floor] row",
         smooth=False, args=_AB, kinds="fi", domain=[(-2.0, 2.0), AWAY]),
    _row("floor_divide", lambda a, b: a // b, _floordiv_ref, binary_samples(_normal, _AWAY),
         lambda T, a, b: T.div(a, b, rounding_mode="floor"), variant="div_floor",
         smooth=False, args=_AB, kinds="fi", domain=[(-2.0, 2.0), AWAY]),
    _row("copysign", tp.copysign, np.copysign, binary_samples(_AWAY, _AWAY),
         lambda T, a, b: T.copysign(a, b), smooth=False, args=_AB, kinds="fi",
         domain=AWAY),
    _row("xlogy", tp.xlogy, scipy.special.xlogy, binary_samples(_normal, _POS),
         lambda T, a, b: T.xlogy(a, b), args=_AB, kinds="fi",
         domain=[(-2.0, 2.0), (0.5, 2.0)]),
    _row("xlogy", lambda b: tp.xlogy(2.0, b), lambda b: scipy.special.xlogy(2.0, b),
         unary_samples(_POS), lambda T, b: T.xlogy(2.0, b), variant="scalar_x",
         args=("other",), kinds="fi", domain=(0.5, 2.0), base=lambda ts, kw: [2.0, ts[0]]),
    _row("lerp", tp.lerp, lambda a, b, w: a + w * (b - a),
         ternary_samples(_normal, _normal, _uniform(-0.5, 1.5)),
         lambda T, a, b, w: T.lerp(a, b, w), args=("input", "end", "weight"),
         special=False),
    _row("lerp", lambda a, b: tp.lerp(a, b, 0.75), lambda a, b: a + 0.75 * (b - a),
         binary_samples(), lambda T, a, b: T.lerp(a, b, 0.75), variant="scalar_weight",
         args=("input", "end"), special=False, base=lambda ts, kw: [ts[0], ts[1], 0.75]),
    _row("addcmul", lambda a, b, c: tp.addcmul(a, b, c, value=3),
         lambda a, b, c: a + 3 * b * c, ternary_samples(_normal, _normal, _normal),
         lambda T, a, b, c: T.addcmul(a, b, c, value=3),
         args=("input", "tensor1", "tensor2"), kinds="fi", special=False),
    _row("addcdiv", lambda a, b, c: tp.addcdiv(a, b, c, value=-2.0),
         lambda a, b, c: a - 2.0 * b / c, ternary_samples(_normal, _normal, _AWAY),
         lambda T, a, b, c: T.addcdiv(a, b, c, value=-2.0),
         args=("input", "tensor1", "tensor2"), domain=[(-2.0, 2.0), (-2.0, 2.0), AWAY],
         special=False),
    # ---- fused derivative kernels (strong zero in g: special values off)
    _row("maximum_backward", B.maximum_backward, lambda g, x, o: _sel(np.greater, g, x, o),
         ternary_samples(_normal, _normal, _normal), _INTERNAL, smooth=False, args=_GXO,
         special=False),
    _row("minimum_backward", B.minimum_backward, lambda g, x, o: _sel(np.less, g, x, o),
         ternary_samples(_normal, _normal, _normal), _INTERNAL, smooth=False, args=_GXO,
         special=False),
    _row("fmax_backward", B.fmax_backward, lambda g, x, o: _sel(np.greater, g, x, o),
         ternary_samples(_normal, _normal, _normal), _INTERNAL, smooth=False, args=_GXO,
         special=False),
    _row("fmin_backward", B.fmin_backward, lambda g, x, o: _sel(np.less, g, x, o),
         ternary_samples(_normal, _normal, _normal), _INTERNAL, smooth=False, args=_GXO,
         special=False),
    _row("atan2_backward_input", B.atan2_backward_input,
         lambda g, a, b: g * b / (a * a + b * b), ternary_samples(_normal, _AWAY, _AWAY),
         _INTERNAL, args=_GXO, special=False, domain=[(-2.0, 2.0), AWAY, AWAY]),
    _row("atan2_backward_other", B.atan2_backward_other,
         lambda g, a, b: -g * a / (a * a + b * b), ternary_samples(_normal, _AWAY, _AWAY),
         _INTERNAL, args=_GXO, special=False, domain=[(-2.0, 2.0), AWAY, AWAY]),
    _row("hypot_backward", B.hypot_backward, lambda g, x, y: g * x / y,
         ternary_samples(_normal, _normal, _POS), _INTERNAL,
         args=("grad_output", "input", "output"), special=False,
         domain=[(-2.0, 2.0), (-2.0, 2.0), (0.5, 2.0)]),
    _row("remainder_backward_other", B.remainder_backward_other,
         lambda g, a, b: -g * np.floor_divide(a, b), ternary_samples(_normal, _normal, _AWAY),
         _INTERNAL, smooth=False, args=_GXO, special=False,
         domain=[(-2.0, 2.0), (-2.0, 2.0), AWAY]),
    _row("fmod_backward_other", B.fmod_backward_other,
         lambda g, a, b: -g * np.trunc(a / b), ternary_samples(_normal, _normal, _AWAY),
         _INTERNAL, smooth=False, args=_GXO, special=False,
         domain=[(-2.0, 2.0), (-2.0, 2.0), AWAY]),
    _row("copysign_backward", B.copysign_backward,
         lambda g, a, b: g * np.sign(a) * np.sign(b), ternary_samples(_normal, _AWAY, _AWAY),
         _INTERNAL, smooth=False, args=_GXO, special=False, domain=[(-2.0, 2.0), AWAY, AWAY]),
    _row("xlogy_backward_input", B.xlogy_backward_input,
         lambda g, x, y: np.broadcast_to(g * np.log(y), np.broadcast_shapes(
             g.shape, x.shape, y.shape)).copy(),
         ternary_samples(_normal, _AWAY, _POS), _INTERNAL, args=_GXO, special=False,
         domain=[(-2.0, 2.0), AWAY, (0.5, 2.0)]),
    _row("xlogy_backward_other", B.xlogy_backward_other, lambda g, x, y: g * x / y,
         ternary_samples(_normal, _normal, _POS), _INTERNAL, args=_GXO, special=False,
         domain=[(-2.0, 2.0), (-2.0, 2.0), (0.5, 2.0)]),
    _row("lerp_backward_input", B.lerp_backward_input, lambda g, w: g * (1 - w),
         binary_samples(), _INTERNAL, args=("grad_output", "weight"), special=False),
    _row("lerp_backward_weight", B.lerp_backward_weight, lambda g, a, b: g * (b - a),
         ternary_samples(_normal, _normal, _normal), _INTERNAL,
         args=("grad_output", "input", "end"), special=False),
    _row("addcmul_backward", lambda g, t: B.addcmul_backward(g, t, value=1.5),
         lambda g, t: 1.5 * g * t, binary_samples(), _INTERNAL,
         args=("grad_output", "other"), special=False),
    _row("addcdiv_backward_t1", lambda g, t: B.addcdiv_backward_t1(g, t, value=1.5),
         lambda g, t: 1.5 * g / t, binary_samples(_normal, _AWAY), _INTERNAL,
         args=("grad_output", "tensor2"), special=False, domain=[(-2.0, 2.0), AWAY]),
    _row("addcdiv_backward_t2", lambda g, a, b: B.addcdiv_backward_t2(g, a, b, value=1.5),
         lambda g, a, b: -1.5 * g * a / (b * b), ternary_samples(_normal, _normal, _AWAY),
         _INTERNAL, args=("grad_output", "tensor1", "tensor2"), special=False,
         domain=[(-2.0, 2.0), (-2.0, 2.0), AWAY]),
]
for _s in SPECS:
    if _s.torch is None:        # the scalar variants: the same call in torch
        _s.torch = {"maximum[scalar]": lambda T, a: T.maximum(a, T.tensor(0.25, dtype=a.dtype)),
                    "atan2[scalar]": lambda T, a: T.atan2(a, T.tensor(2.0, dtype=a.dtype))}[_s.id]
