"""Benchmark inputs of the binary and ternary math family (tensorplay/_ops/binary.py)."""
import tensorplay as tp
from tensorplay._ops import binary as B

from ._base import _three, _two

OPS = {
    "maximum": (_two(), tp.maximum),
    "minimum": (_two(), tp.minimum),
    "fmax": (_two(), tp.fmax),
    "fmin": (_two(), tp.fmin),
    "atan2": (_two(), tp.atan2),
    "hypot": (_two(), tp.hypot),
    "remainder": (_two(0.5, 2.0), tp.remainder),
    "fmod": (_two(0.5, 2.0), tp.fmod),
    "floor_divide": (_two(0.5, 2.0), tp.floor_divide),
    "copysign": (_two(), tp.copysign),
    "xlogy": (_two(0.5, 2.0), tp.xlogy),
    "lerp": (_three(0.0, 1.0), tp.lerp),
    "addcmul": (_three(), lambda a, b, c: tp.addcmul(a, b, c, value=0.5)),
    "addcdiv": (_three(0.5, 2.0), lambda a, b, c: tp.addcdiv(a, b, c, value=0.5)),
    "maximum_backward": (_three(), B.maximum_backward),
    "minimum_backward": (_three(), B.minimum_backward),
    "fmax_backward": (_three(), B.fmax_backward),
    "fmin_backward": (_three(), B.fmin_backward),
    "atan2_backward_input": (_three(), B.atan2_backward_input),
    "atan2_backward_other": (_three(), B.atan2_backward_other),
    "hypot_backward": (_three(0.5, 2.0), B.hypot_backward),
    "remainder_backward_other": (_three(0.5, 2.0), B.remainder_backward_other),
    "fmod_backward_other": (_three(0.5, 2.0), B.fmod_backward_other),
    "copysign_backward": (_three(), B.copysign_backward),
    "xlogy_backward_input": (_three(0.5, 2.0), B.xlogy_backward_input),
    "xlogy_backward_other": (_three(0.5, 2.0), B.xlogy_backward_other),
    "lerp_backward_input": (_two(), B.lerp_backward_input),
    "lerp_backward_weight": (_three(), B.lerp_backward_weight),
    "addcmul_backward": (_two(), lambda g, t: B.addcmul_backward(g, t, value=0.5)),
    "addcdiv_backward_t1": (_two(0.5, 2.0), lambda g, t: B.addcdiv_backward_t1(g, t, value=0.5)),
    "addcdiv_backward_t2": (_three(0.5, 2.0),
                            lambda g, a, b: B.addcdiv_backward_t2(g, a, b, value=0.5)),
}
