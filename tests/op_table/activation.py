"""Op-table rows of the activations and clamp (tensorplay/_ops/activation.py,
clamp.py) and of their fused derivative kernels.

References are closed forms in numpy / scipy.special, never tensorplay.  Samples
stay away from the kinks (where tensorplay's minimum-norm convention may differ
from PyTorch's implementation: tests/test_activation.py checks the kinks)."""
import hypothesis.strategies as st
import numpy as np
from scipy.special import expit, ndtr

import tensorplay as tp
from tensorplay._ops.activation import (SELU_ALPHA, SELU_SCALE, elu_backward, gelu_backward,
                                        hardsigmoid_backward, hardswish_backward,
                                        leaky_relu_backward, logsigmoid_backward,
                                        mish_backward, silu_backward, softplus_backward)
from tensorplay._ops.clamp import clamp_backward, nan_to_num_backward

from ._base import (AWAY, Fuzz, OpSpec, _normal, _uniform, binary_samples, fixed_samples,
                    unary_samples)

F = tp.nn.functional
_INTERNAL = "an internal derivative kernel: torch has no public op of this name"
_K, _A = np.sqrt(2 / np.pi), 0.044715


def _away_from(points, lo, hi, gap=0.2):
    """Uniform on (lo, hi) with values within ``gap`` of a kink moved ``2 gap`` off it."""
    def gen(rng, shape):
        x = rng.uniform(lo, hi, shape)
        for p in points:
            near = np.abs(x - p) < gap
            x = np.where(near, p + np.where(x >= p, 2 * gap, -2 * gap), x)
        return x
    return gen


# ---------------------------------------------------------------- references
def _softplus(x, beta=1.0, threshold=20.0):
    return np.where(beta * x > threshold, x, np.logaddexp(0, beta * x) / beta)


def _softplus_d(x, beta=1.0, threshold=20.0):
    return np.where(beta * x > threshold, 1.0, expit(beta * x))


def _silu(x):
    return x * expit(x)


def _gelu(x, approximate="none"):
    if approximate == "none":
        return x * ndtr(x)
    return 0.5 * x * (1 + np.tanh(_K * (x + _A * x ** 3)))


def _gelu_d(x, approximate="none"):
    if approximate == "none":
        return ndtr(x) + x * np.exp(-x * x / 2) / np.sqrt(2 * np.pi)
    t = np.tanh(_K * (x + _A * x ** 3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _K * (1 + 3 * _A * x * x)


def _elu(x, alpha=1.0, scale=1.0, input_scale=1.0):
    return scale * np.where(x > 0, x, alpha * np.expm1(x * input_scale))


def _elu_d(x, alpha=1.0, scale=1.0, input_scale=1.0):
    return scale * np.where(x > 0, 1.0, alpha * input_scale * np.exp(x * input_scale))


def _hardsigmoid(x):
    return np.clip(x + 3, 0, 6) / 6


def _hardswish(x):
    return x * np.clip(x + 3, 0, 6) / 6


def _mish(x):
    return x * np.tanh(np.logaddexp(0, x))


def _mish_d(x):
    t = np.tanh(np.logaddexp(0, x))
    return t + x * expit(x) * (1 - t * t)


def _clamp(x, lo, hi):
    return np.minimum(np.maximum(x, lo), hi)


def _clamp_bwd_ref(g, x, lo, hi, which, min_kind, max_kind):
    """Samples have no ties: each element belongs to one piece."""
    shape = np.broadcast_shapes(g.shape, x.shape, lo.shape, hi.shape)
    lo = lo if min_kind else -np.inf
    hi = hi if max_kind else np.inf
    piece = np.where(x < lo, 1, np.where(x > hi, 2, 0))
    piece = np.where(lo > hi, 2, piece)       # min > max: the output is max
    keep = piece == which
    if which and (min_kind if which == 1 else max_kind) == 1:
        keep = np.zeros_like(keep)        # a number bound has no gradient
    return np.broadcast_to(np.where(keep, g, 0.0), shape).copy()


# ---------------------------------------------------------------- fuzz drawers
def _kw(**choices):
    def kwargs(draw, arrays):
        return {k: draw(st.sampled_from(v)) for k, v in choices.items()}
    return kwargs


def _clamp_backward_kwargs(draw, arrays):
    return {"which": draw(st.integers(0, 2)), "min_kind": draw(st.integers(0, 2)),
            "max_kind": draw(st.integers(0, 2))}


def _clamp_backward_call(ts, kw):
    return [*ts, kw["which"], kw["min_kind"], kw["max_kind"]]


_SP = [("default", {}), ("beta2_thr1", {"beta": 2.0, "threshold": 1.0}),
       ("beta_half", {"beta": 0.5, "threshold": 20.0})]


def _softplus_samples(rng):
    out = []
    for label, kw in _SP:
        beta, thr = kw.get("beta", 1.0), kw.get("threshold", 20.0)
        gen = _away_from([thr / beta], -3.0, 3.0)     # the threshold is a jump
        for shape_label, shape in (("1d", (5,)), ("0d", ()), ("2d", (3, 4))):
            out.append((f"{label}_{shape_label}", [gen(rng, shape)], dict(kw)))
    return out


_UNIT = _uniform(-3.0, 3.0)
_KINK0 = _away_from([0.0], -3.0, 3.0)
_KINK3 = _away_from([-3.0, 3.0], -5.0, 5.0)
_KINK06 = _away_from([0.0, 6.0], -2.0, 8.0)
_KINK1 = _away_from([-1.0, 1.0], -2.5, 2.5)

SPECS = [
    # ---- activations (torch.nn.functional)
    OpSpec("softplus", lambda x, **kw: F.softplus(x, **kw), _softplus, _softplus_samples,
           fuzz=Fuzz("softplus", domain=(-3.0, 3.0),
                     kwargs=_kw(beta=[0.5, 1.0, 3.0], threshold=[20.0, 100.0])),
           torch=lambda T, x, **kw: T.nn.functional.softplus(x, **kw)),
    OpSpec("silu", F.silu, _silu, unary_samples(_UNIT),
           fuzz=Fuzz("silu", domain=(-3.0, 3.0)),
           torch=lambda T, x: T.nn.functional.silu(x)),
    OpSpec("gelu", F.gelu, _gelu, unary_samples(_UNIT),
           fuzz=Fuzz("gelu", domain=(-3.0, 3.0)),
           torch=lambda T, x: T.nn.functional.gelu(x)),
    OpSpec("gelu", lambda x: F.gelu(x, approximate="tanh"), lambda x: _gelu(x, "tanh"),
           unary_samples(_UNIT), variant="tanh",
           fuzz=Fuzz("gelu", domain=(-3.0, 3.0)),
           torch=lambda T, x: T.nn.functional.gelu(x, approximate="tanh")),
    OpSpec("leaky_relu", F.leaky_relu, lambda x: np.where(x > 0, x, 0.01 * x),
           unary_samples(_KINK0), smooth=False,
           fuzz=Fuzz("leaky_relu", domain=AWAY),
           torch=lambda T, x: T.nn.functional.leaky_relu(x)),
    OpSpec("leaky_relu", lambda x: F.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x),
           unary_samples(_KINK0), smooth=False, variant="slope",
           fuzz=Fuzz("leaky_relu", domain=AWAY),
           torch=lambda T, x: T.nn.functional.leaky_relu(x, 0.2)),
    OpSpec("elu", F.elu, _elu, unary_samples(_KINK0),
           fuzz=Fuzz("elu", domain=AWAY),
           torch=lambda T, x: T.nn.functional.elu(x)),
    OpSpec("elu", lambda x: F.elu(x, alpha=0.5), lambda x: _elu(x, 0.5),
           unary_samples(_KINK0), variant="alpha",
           fuzz=Fuzz("elu", domain=AWAY),
           torch=lambda T, x: T.nn.functional.elu(x, alpha=0.5)),
    OpSpec("elu", tp.selu, lambda x: _elu(x, SELU_ALPHA, SELU_SCALE),
           unary_samples(_KINK0), variant="selu",
           fuzz=Fuzz("selu", domain=AWAY),
           torch=lambda T, x: T.selu(x)),
    OpSpec("elu", lambda x: tp.celu(x, 2.0), lambda x: _elu(x, 2.0, 1.0, 0.5),
           unary_samples(_UNIT), variant="celu",
           fuzz=Fuzz("celu"),
           torch=lambda T, x: T.celu(x, 2.0)),
    OpSpec("hardsigmoid", F.hardsigmoid, _hardsigmoid, unary_samples(_KINK3), smooth=False,
           fuzz=Fuzz("hardsigmoid", domain=(-5.0, 5.0)),
           # PyTorch's hardsigmoid_backward multiplies by 1/6 rounded to float32
           # (3e-8 relative error in float64): compared with the same function
           # in torch ops, whose gradient is exact away from the kinks
           torch=lambda T, x: T.clamp(x + 3, 0, 6) / 6),
    OpSpec("hardswish", F.hardswish, _hardswish, unary_samples(_KINK3),
           fuzz=Fuzz("hardswish", domain=(-5.0, 5.0)),
           torch=lambda T, x: T.nn.functional.hardswish(x)),
    OpSpec("mish", F.mish, _mish, unary_samples(_UNIT),
           fuzz=Fuzz("mish", domain=(-3.0, 3.0)),
           torch=lambda T, x: T.nn.functional.mish(x)),
    OpSpec("logsigmoid", F.logsigmoid, lambda x: -np.logaddexp(0, -x), unary_samples(_UNIT),
           fuzz=Fuzz("logsigmoid", domain=(-3.0, 3.0)),
           torch=lambda T, x: T.nn.functional.logsigmoid(x)),
    # ---- clamp and friends
    OpSpec("clamp", lambda x: tp.clamp(x, -0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5),
           unary_samples(_away_from([-0.5, 0.5], -2.0, 2.0, 0.1)), smooth=False,
           variant="numbers",
           fuzz=Fuzz("clamp", kinds="fi",
                     # (invalid calls: 0-d tensor bounds, so that there is a broadcast
                     # to break; None, a valid bound, is what not_tensor would draw)
                     base=lambda ts, kw: [ts[0], tp.tensor(-0.5), tp.tensor(0.5)],
                     skip={"not_tensor": "None is a valid bound (no bound)"}),
           torch=lambda T, x: T.clamp(x, -0.5, 0.5)),
    OpSpec("clamp", lambda x, lo, hi: tp.clamp(x, lo, hi), _clamp,
           fixed_samples(("same", [(_normal, (3, 4)), (_uniform(-1, -0.1), (3, 4)),
                                   (_uniform(0.1, 1), (3, 4))], {}),
                         ("bcast", [(_normal, (3, 4)), (_uniform(-1, -0.1), (4,)),
                                    (_uniform(0.1, 1), (3, 1))], {}),
                         ("bounds_bigger", [(_normal, (4,)), (_uniform(-1, -0.1), (2, 4)),
                                            (_uniform(0.1, 1), ())], {}),
                         ("0d", [(_normal, ()), (_uniform(-1, -0.1), ()),
                                 (_uniform(0.1, 1), ())], {}),
                         ("noncontig", [(_normal, (3, 4)), (_uniform(-1, -0.1), (3, 4)),
                                        (_uniform(0.1, 1), (3, 4))], {})),
           smooth=False, variant="tensors",
           fuzz=Fuzz("clamp", ("input", "min", "max"), kinds="fi",
                     skip={"not_tensor": "None is a valid bound (no bound); "
                                         "tests/test_activation.py checks non-Tensors"}),
           # (torch's clamp backward fails when the bounds broadcast x to a bigger
           # shape, "output with shape [4] doesn't match the broadcast shape [2, 4]":
           # the same function with x expanded first)
           torch=lambda T, x, lo, hi: T.clamp(
               x.expand(T.broadcast_shapes(x.shape, lo.shape, hi.shape)), lo, hi)),
    OpSpec("clamp", lambda x, lo: x.clamp(min=lo), lambda x, lo: np.maximum(x, lo),
           binary_samples(_normal, _uniform(-1, 1)), smooth=False, variant="min_only",
           fuzz=Fuzz("clamp", ("input", "min"), kinds="fi",
                     base=lambda ts, kw: [ts[0], ts[1], None],
                     skip={"not_tensor": "None is a valid bound"}),
           torch=lambda T, x, lo: x.clamp(min=lo)),
    OpSpec("clamp", lambda x, hi: tp.clip(x, max=hi), lambda x, hi: np.minimum(x, hi),
           binary_samples(_normal, _uniform(-1, 1)), smooth=False, variant="clip_max",
           fuzz=Fuzz("clip", ("input", "max"), kinds="fi",
                     base=lambda ts, kw: [ts[0], None, ts[1]],
                     skip={"not_tensor": "None is a valid bound"}),
           torch=lambda T, x, hi: T.clip(x, max=hi)),
    OpSpec("clamp", lambda x: tp.clip(x, max=0.3), lambda x: np.minimum(x, 0.3),
           unary_samples(_away_from([0.3], -2.0, 2.0, 0.1)), smooth=False,
           variant="clip_max_number",
           fuzz=Fuzz("clip", kinds="fi", base=lambda ts, kw: [ts[0], None, tp.tensor(0.3)],
                     skip={"not_tensor": "None is a valid bound"}, grad=True),
           torch=lambda T, x: T.clip(x, max=0.3)),
    OpSpec("clamp", lambda x, lo: tp.clamp_min(x, lo), lambda x, lo: np.maximum(x, lo),
           binary_samples(_normal, _uniform(-1, 1)), smooth=False, variant="clamp_min",
           fuzz=Fuzz("clamp_min", ("input", "min"), kinds="fi"),
           torch=lambda T, x, lo: T.clamp_min(x, lo)),
    OpSpec("clamp", lambda x, hi: x.clamp_max(hi), lambda x, hi: np.minimum(x, hi),
           binary_samples(_normal, _uniform(-1, 1)), smooth=False, variant="clamp_max",
           fuzz=Fuzz("clamp_max", ("input", "max"), kinds="fi"),
           torch=lambda T, x, hi: x.clamp_max(hi)),
    OpSpec("clamp", F.hardtanh, lambda x: np.clip(x, -1, 1), unary_samples(_KINK1),
           smooth=False, variant="hardtanh",
           fuzz=Fuzz("hardtanh", kinds="fi", domain=(-2.5, 2.5)),
           torch=lambda T, x: T.nn.functional.hardtanh(x)),
    OpSpec("clamp", lambda x: F.hardtanh(x, -0.5, 2.0), lambda x: np.clip(x, -0.5, 2.0),
           unary_samples(_away_from([-0.5, 2.0], -2.5, 2.5)),
           smooth=False, variant="hardtanh_bounds",
           # (float only: an integer input's bounds are truncated, -0.5 -> 0, as
           # PyTorch; tests/test_activation.py checks that)
           fuzz=Fuzz("hardtanh", domain=(-2.5, 2.5)),
           torch=lambda T, x: T.nn.functional.hardtanh(x, -0.5, 2.0)),
    OpSpec("clamp", F.relu6, lambda x: np.clip(x, 0, 6), unary_samples(_KINK06),
           smooth=False, variant="relu6",
           fuzz=Fuzz("relu6", kinds="fi", domain=(-2.0, 8.0)),
           torch=lambda T, x: T.nn.functional.relu6(x)),
    OpSpec("nan_to_num", tp.nan_to_num, np.nan_to_num, unary_samples(), smooth=False,
           fuzz=Fuzz("nan_to_num", kinds="fib", special=False),
           torch=lambda T, x: T.nan_to_num(x)),
    OpSpec("nan_to_num", lambda x: x.nan_to_num(nan=1.0, posinf=2.0, neginf=-3.0),
           lambda x: np.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-3.0), unary_samples(),
           smooth=False, variant="method",
           fuzz=Fuzz("nan_to_num", kinds="fib", special=False),
           torch=lambda T, x: x.nan_to_num(nan=1.0, posinf=2.0, neginf=-3.0)),
]


# ---------------------------------------------------------------- fused derivative kernels
def _bwd_row(name, fn, deriv, gen, smooth=True, domain=(-3.0, 3.0), variant="", **kw):
    def ref(g, x):
        return g * deriv(x)
    return OpSpec(name, fn, ref, binary_samples(_normal, gen), smooth=smooth, variant=variant,
                  fuzz=Fuzz(name, ("grad_output", "input"), special=False,
                            domain=[(-2.0, 2.0), domain], **kw),
                  torch=_INTERNAL)


SPECS += [
    _bwd_row("softplus_backward", softplus_backward, _softplus_d, _UNIT),
    _bwd_row("softplus_backward", lambda g, x: softplus_backward(g, x, 2.0, 1.0),
             lambda x: _softplus_d(x, 2.0, 1.0), _away_from([0.5], -3.0, 3.0),
             variant="threshold", kwargs=None),
    _bwd_row("silu_backward", silu_backward, lambda x: expit(x) * (1 + x * (1 - expit(x))),
             _UNIT),
    _bwd_row("gelu_backward", gelu_backward, _gelu_d, _UNIT),
    _bwd_row("gelu_backward", lambda g, x: gelu_backward(g, x, "tanh"),
             lambda x: _gelu_d(x, "tanh"), _UNIT, variant="tanh"),
    _bwd_row("leaky_relu_backward", lambda g, x: leaky_relu_backward(g, x, 0.1),
             lambda x: np.where(x > 0, 1.0, 0.1), _KINK0, smooth=False, domain=AWAY),
    _bwd_row("elu_backward", elu_backward, _elu_d, _KINK0, domain=AWAY),
    _bwd_row("elu_backward", lambda g, x: elu_backward(g, x, 2.0, 1.5, 0.5),
             lambda x: _elu_d(x, 2.0, 1.5, 0.5), _KINK0, domain=AWAY, variant="scaled"),
    _bwd_row("hardsigmoid_backward", hardsigmoid_backward,
             lambda x: np.where(np.abs(x) < 3, 1 / 6, 0.0), _KINK3, smooth=False,
             domain=(-5.0, 5.0)),
    _bwd_row("hardswish_backward", hardswish_backward,
             lambda x: np.where(x < -3, 0.0, np.where(x > 3, 1.0, (2 * x + 3) / 6)), _KINK3,
             domain=(-5.0, 5.0)),
    _bwd_row("mish_backward", mish_backward, _mish_d, _UNIT),
    _bwd_row("logsigmoid_backward", logsigmoid_backward, lambda x: expit(-x), _UNIT),
    _bwd_row("nan_to_num_backward", nan_to_num_backward, lambda x: np.ones_like(x), _UNIT,
             smooth=False),
    OpSpec("clamp_backward", lambda g, x, lo, hi, **kw: clamp_backward(g, x, lo, hi, **kw),
           _clamp_bwd_ref,
           fixed_samples(*[(f"{lab}_w{w}", arrs, {"which": w, "min_kind": klo,
                                                   "max_kind": khi})
                           for lab, arrs in (
                               ("same", [(_normal, (3, 4)), (_normal, (3, 4)),
                                         (_uniform(-1, -0.1), (3, 4)),
                                         (_uniform(0.1, 1), (3, 4))]),
                               ("bcast", [(_normal, (3, 4)), (_normal, (3, 4)),
                                          (_uniform(-1, -0.1), (4,)),
                                          (_uniform(0.1, 1), ())]))
                           for w, klo, khi in ((0, 1, 1), (0, 2, 0), (1, 2, 2), (2, 2, 1),
                                               (1, 1, 2))]),
           smooth=False,
           fuzz=Fuzz("clamp_backward", ("grad_output", "input", "min", "max"), special=False,
                     kwargs=_clamp_backward_kwargs,
                     base=lambda ts, kw: _clamp_backward_call(ts, kw)),
           torch=_INTERNAL),
]
