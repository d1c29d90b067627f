"""Benchmark inputs of the unary math family (tensorplay/_ops/unary.py and
unary_special.py; see bench_ops.OPS): inputs inside each op's domain."""
import tensorplay as tp
from tensorplay._ops import unary as U
from tensorplay._ops import unary_special as S

from ._base import _one, _two

# op -> (lo, hi) of its input (None: standard normal)
_DOMAIN = {
    "abs": None, "sign": None, "sin": None, "cos": None, "tan": (-1.2, 1.2),
    "asin": (-0.9, 0.9), "acos": (-0.9, 0.9), "atan": None, "sinh": None, "cosh": None,
    "asinh": None, "acosh": (1.2, 3.0), "atanh": (-0.9, 0.9), "log1p": (-0.5, 2.0),
    "expm1": None, "log2": (0.5, 2.0), "log10": (0.5, 2.0), "exp2": None,
    "rsqrt": (0.5, 2.0), "square": None, "reciprocal": (0.5, 2.0), "floor": (-3.0, 3.0),
    "ceil": (-3.0, 3.0), "round": (-3.0, 3.0), "trunc": (-3.0, 3.0), "frac": (-3.0, 3.0),
    "erf": None, "erfc": None, "erfinv": (-0.9, 0.9), "lgamma": (0.2, 4.0),
    "digamma": (0.2, 4.0), "sinc": None, "logit": (0.1, 0.9),
}
_OUT_DOMAIN = {"tan": None, "expm1": (0.5, 3.0), "exp2": (0.5, 3.0), "rsqrt": (0.5, 2.0),
               "reciprocal": (0.5, 2.0), "erfinv": (-1.5, 1.5)}


def _fn(name):
    return getattr(U, name, None) or getattr(S, name)


def _inputs(dom):
    return _one() if dom is None else _one(*dom)


def _backward_inputs(name):
    dom = _OUT_DOMAIN.get(name, _DOMAIN[name])
    return _two() if dom is None else _two(*dom)


OPS = {name: (_inputs(dom), _fn(name)) for name, dom in _DOMAIN.items()}
OPS.update({f"{name}_backward": (_backward_inputs(name), _fn(f"{name}_backward"))
            for name in _DOMAIN if hasattr(U, f"{name}_backward")
            or hasattr(S, f"{name}_backward")})
OPS["polygamma_backward"] = (_two(0.3, 4.0), lambda g, x: S.polygamma_backward(g, x, 1))
OPS["round"] = (_one(-30.0, 30.0), lambda x: tp.round(x, decimals=1))
