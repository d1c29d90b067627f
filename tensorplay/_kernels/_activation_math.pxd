# Scalar point functions of the activation kernels (activation.pyx.tp).
#
# Each activation has its forward `_<op>_fwd(x, p0, p1, p2, p3)` and right beside
# it its fused derivative `_<op>_bwd(g, x, p0, p1, p2, p3)` = g * f'(x) (STYLE
# A2/A5): one uniform signature, so one template loop serves every op; p0..p3 are
# the op's scalar parameters (unused ones are 0 and vanish when GCC inlines).
#
# Strong zero: every _bwd returns exactly 0 where g == 0 (`_sz`, from _math.pxd),
# whatever f'(x) is.
#
# Vectorisation: selects pick values, not operations (`d = pos ? scale : e`), or
# are written as sums of bit-masked terms (`_keep(a, u) + _keep(b, v)`), because
# GCC with the default -ftrapping-math sinks an operation into the branch that
# uses it and then does not if-convert the loop (see _math.pxd).
#
# Kinks: the derivative at a non-differentiable point is the minimum-norm
# element of the (sub- or super-) differential there -- PyTorch's documented
# autograd rule (docs "Autograd mechanics: gradients for non-differentiable
# functions"), which its implementation does not always follow (hardswish,
# leaky_relu with a slope > 1 or < 0, elu/selu at 0).  For a kink with one-sided
# slopes a, b that is 0 if a and b have opposite signs, else the one of smaller
# magnitude: `_min_norm(a, b)`, computed once in Python (activation.py) and
# passed in as a parameter where the kink's position is a parameter.
from cython cimport floating

from ._math cimport _keep, _sz

cdef extern from "_activation_simd.h" nogil:
    float expf(float)
    double exp(double)
    float expm1f(float)
    double expm1(double)
    float log1pf(float)
    double log1p(double)
    float erfcf(float)
    double erfc(double)
    float fabsf(float)
    double fabs(double)
    double INFINITY


cdef inline floating _exp(floating x) noexcept nogil:
    if floating is float:
        return expf(x)
    else:
        return exp(x)


cdef inline floating _expm1(floating x) noexcept nogil:
    if floating is float:
        return expm1f(x)
    else:
        return expm1(x)


cdef inline floating _log1p(floating x) noexcept nogil:
    if floating is float:
        return log1pf(x)
    else:
        return log1p(x)


cdef inline floating _erfc(floating x) noexcept nogil:
    if floating is float:
        return erfcf(x)
    else:
        return erfc(x)


cdef inline floating _fabs(floating x) noexcept nogil:
    if floating is float:
        return fabsf(x)
    else:
        return fabs(x)


cdef inline floating _sigm(floating z) noexcept nogil:
    """1 / (1 + e^-z), stable and branch-free (as _sigmoid_fwd in _math.pxd)."""
    cdef floating one = 1
    cdef floating e = _exp(-_fabs(z))
    cdef floating t = one if z >= 0 else e
    return t / (one + e)


# ---- softplus(x; beta = p0, threshold = p1) --------------------------------------
#   y = x                                   where beta x > threshold (PyTorch)
#   y = (max(bx, 0) + log1p(e^-|bx|)) / beta  elsewhere: stable at +-1000 for any
#       beta (PyTorch's log1p(exp(bx)) / beta overflows for bx > 88 in float32
#       when the threshold is raised)
#   dy/dx = 1 where bx > threshold, else sigmoid(bx)
cdef inline floating _softplus_fwd(floating x, floating beta, floating thr, floating p2,
                                   floating p3) noexcept nogil:
    cdef floating zero = 0
    cdef floating bx = beta * x
    cdef floating m = bx if bx > zero else zero
    cdef floating r = (m + _log1p(_exp(-_fabs(bx)))) / beta
    return x if bx > thr else r

cdef inline floating _softplus_bwd(floating g, floating x, floating beta, floating thr,
                                   floating p2, floating p3) noexcept nogil:
    cdef floating one = 1
    cdef floating bx = beta * x
    cdef floating s = _sigm(bx)
    cdef floating d = one if bx > thr else s
    return _sz(g, g * d)


# ---- silu(x) = x sigmoid(x) ;  dy/dx = s (1 + x (1 - s)) ---------------------------
cdef inline floating _silu_fwd(floating x, floating p0, floating p1, floating p2,
                               floating p3) noexcept nogil:
    return x * _sigm(x)

cdef inline floating _silu_bwd(floating g, floating x, floating p0, floating p1,
                               floating p2, floating p3) noexcept nogil:
    cdef floating one = 1
    cdef floating s = _sigm(x)
    return _sz(g, g * (s * (one + x * (one - s))))


# ---- gelu(x) = x Phi(x), Phi(x) = erfc(-x / sqrt 2) / 2 ---------------------------
#   erfc, not 1 + erf: no cancellation for x << 0 (gelu(-10) = -7.6e-23, not 0).
#   dy/dx = Phi(x) + x phi(x),  phi(x) = e^(-x^2/2) / sqrt(2 pi)
cdef inline floating _gelu_fwd(floating x, floating p0, floating p1, floating p2,
                               floating p3) noexcept nogil:
    cdef floating half = 0.5, r2 = 0.70710678118654752440
    return half * x * _erfc(-x * r2)

cdef inline floating _gelu_bwd(floating g, floating x, floating p0, floating p1,
                               floating p2, floating p3) noexcept nogil:
    cdef floating half = 0.5, r2 = 0.70710678118654752440, c = 0.39894228040143267794
    cdef floating d = half * _erfc(-x * r2) + x * c * _exp(-half * x * x)
    return _sz(g, g * d)


# ---- gelu(x, approximate='tanh') = x (1 + tanh u) / 2 = x sigmoid(2u),
#      u = sqrt(2/pi) (x + 0.044715 x^3): the sigmoid form has no cancellation
#      for x << 0.  dy/dx = s + 2 x s (1 - s) u',  u' = sqrt(2/pi) (1 + 3 0.044715 x^2)
cdef inline floating _gelu_tanh_fwd(floating x, floating p0, floating p1, floating p2,
                                    floating p3) noexcept nogil:
    cdef floating k = 0.79788456080286535588, a = 0.044715, two = 2
    return x * _sigm(two * k * (x + a * x * x * x))

cdef inline floating _gelu_tanh_bwd(floating g, floating x, floating p0, floating p1,
                                    floating p2, floating p3) noexcept nogil:
    cdef floating k = 0.79788456080286535588, a = 0.044715, two = 2, one = 1, three = 3
    cdef floating s = _sigm(two * k * (x + a * x * x * x))
    cdef floating du = k * (one + three * a * x * x)
    return _sz(g, g * (s + two * x * s * (one - s) * du))


# ---- leaky_relu(x; slope = p0, kink derivative d0 = p1) -------------------------
#   y = x > 0 ? x : slope x ;  dy/dx = 1 (x > 0), slope (x < 0), d0 at 0
#   d0 = _min_norm(slope, 1): slope for 0 <= slope <= 1 (PyTorch too), 1 for
#   slope > 1 and 0 for slope < 0 (PyTorch: slope)
cdef inline floating _leaky_relu_fwd(floating x, floating slope, floating p1, floating p2,
                                     floating p3) noexcept nogil:
    cdef floating one = 1
    return x * (one if x > 0 else slope)

cdef inline floating _leaky_relu_bwd(floating g, floating x, floating slope, floating d0,
                                     floating p2, floating p3) noexcept nogil:
    cdef floating one = 1
    cdef floating d = one if x > 0 else slope
    d = d0 if x == 0 else d
    return _sz(g, g * d)


# ---- elu family: y = x > 0 ? scale x : scale alpha (e^(x in_scale) - 1) ----------
#   forward p0 = scale alpha, p1 = scale, p2 = in_scale (PyTorch's elu(x, alpha,
#   scale, input_scale): elu (1, 1), selu (1.0507.., 1), celu (1, 1/alpha))
#   derivative p0 = scale alpha in_scale, p1 = scale, p2 = in_scale, p3 = d0:
#   dy/dx = scale (x > 0), scale alpha in_scale e^(x in_scale) (x < 0), d0 at 0,
#   d0 = _min_norm of the two one-sided slopes (PyTorch: the left one)
cdef inline floating _elu_fwd(floating x, floating sa, floating scale, floating ins,
                              floating p3) noexcept nogil:
    # two masked terms (not `pos ? x : e`, which kept the loop scalar): the second
    # is taken where !(x > 0), so that elu(nan) = nan
    cdef bint pos = x > 0
    return _keep(pos, scale * x) + _keep(not pos, sa * _expm1(x * ins))

cdef inline floating _elu_bwd(floating g, floating x, floating sai, floating scale,
                              floating ins, floating d0) noexcept nogil:
    cdef floating d = (_keep(x > 0, scale) + _keep(x < 0, sai * _exp(x * ins))
                       + _keep(x == 0, d0))
    return _sz(g, g * d)


# ---- hardsigmoid(x) = min(max(x + 3, 0), 6) / 6  (PyTorch's order of operations) --
#   dy/dx = 1/6 on (-3, 3), else 0: 0 at both kinks (convex at -3, concave at 3:
#   the minimum-norm subgradient; PyTorch too)
cdef inline floating _hardsigmoid_fwd(floating x, floating p0, floating p1, floating p2,
                                      floating p3) noexcept nogil:
    cdef floating zero = 0, three = 3, six = 6
    cdef floating y = x + three
    y = zero if y < zero else y
    y = six if y > six else y
    return y / six

cdef inline floating _hardsigmoid_bwd(floating g, floating x, floating p0, floating p1,
                                      floating p2, floating p3) noexcept nogil:
    cdef floating three = 3, six = 6
    return _keep((x > -three) & (x < three), g / six)


# ---- hardswish(x) = x min(max(x + 3, 0), 6) / 6 ----------------------------------
#   dy/dx = 0 (x < -3), (2x + 3)/6 (-3 < x < 3), 1 (x > 3).  Kinks: at -3 the slopes
#   are 0 and -1/2 (concave): 0; at 3 they are 3/2 and 1 (concave): 1 -- the
#   minimum-norm supergradients.  PyTorch gives -1/2 and 3/2 there.
cdef inline floating _hardswish_fwd(floating x, floating p0, floating p1, floating p2,
                                    floating p3) noexcept nogil:
    cdef floating zero = 0, three = 3, six = 6
    cdef floating y = x + three
    y = zero if y < zero else y
    y = six if y > six else y
    return x * y / six

cdef inline floating _hardswish_bwd(floating g, floating x, floating p0, floating p1,
                                    floating p2, floating p3) noexcept nogil:
    cdef floating three = 3, six = 6, one = 1, two = 2
    cdef floating d = (_keep((x > -three) & (x < three), (two * x + three) / six)
                       + _keep(x >= three, one))
    return _sz(g, g * d)


# ---- mish(x) = x tanh(softplus(x)) ------------------------------------------------
#   tanh(log(1 + e^x)) = n / (n + 2), n = e^x (e^x + 2): one exp, accurate for
#   x << 0 (~ e^x).  x is capped at 20 inside the exp, where the ratio is 1.0 in
#   float64 already (1 - 8e-18), so large x do not overflow (inf / inf).
#   dy/dx = t + x sigmoid(x) (1 - t^2),  t = tanh(softplus(x))
cdef inline floating _mish_t(floating x, floating* s) noexcept nogil:
    cdef floating one = 1, two = 2, cap = 20
    cdef floating xe = x if x < cap else cap
    cdef floating e = _exp(xe)
    cdef floating n = e * (e + two)
    s[0] = e / (one + e)
    return n / (n + two)

cdef inline floating _mish_fwd(floating x, floating p0, floating p1, floating p2,
                               floating p3) noexcept nogil:
    cdef floating s
    return x * _mish_t(x, &s)

cdef inline floating _mish_bwd(floating g, floating x, floating p0, floating p1,
                               floating p2, floating p3) noexcept nogil:
    cdef floating s, one = 1
    cdef floating t = _mish_t(x, &s)
    return _sz(g, g * (t + x * s * (one - t * t)))


# ---- logsigmoid(x) = -softplus(-x) = min(x, 0) - log1p(e^-|x|)  (stable) -----------
#   dy/dx = sigmoid(-x)
cdef inline floating _logsigmoid_fwd(floating x, floating p0, floating p1, floating p2,
                                     floating p3) noexcept nogil:
    cdef floating zero = 0
    cdef floating m = x if x < zero else zero
    return m - _log1p(_exp(-_fabs(x)))

cdef inline floating _logsigmoid_bwd(floating g, floating x, floating p0, floating p1,
                                     floating p2, floating p3) noexcept nogil:
    return _sz(g, g * _sigm(-x))


# ---- nan_to_num(x; nan = p0, posinf = p1, neginf = p2) ----------------------------
#   dy/dx = 1 where x is finite, else 0 (the replaced values are constants)
cdef inline floating _nan_to_num_fwd(floating x, floating vnan, floating vpos,
                                     floating vneg, floating p3) noexcept nogil:
    cdef floating inf = INFINITY
    cdef floating r = vnan if x != x else x
    r = vpos if x == inf else r
    return vneg if x == -inf else r

cdef inline floating _nan_to_num_bwd(floating g, floating x, floating p0, floating p1,
                                     floating p2, floating p3) noexcept nogil:
    return _keep(x - x == 0, g)


# ---- clamp(x, lo, hi) = min(max(x, lo), hi) ----------------------------------------
#   NaN propagates from x and from either bound (PyTorch); lo > hi gives hi.
#   An absent bound is passed as -inf / +inf.
cdef inline floating _clamp_fwd(floating x, floating lo, floating hi) noexcept nogil:
    cdef floating r = lo if (x < lo) | (lo != lo) else x
    return hi if (r > hi) | (hi != hi) else r

# Derivative for one argument (`which`: 0 = x, 1 = lo, 2 = hi), klo / khi the
# bounds' kinds (0 absent, 1 a constant number, 2 a tensor).  The pieces of
# clamp active at the point (their value is the output on a neighbourhood's
# region) are: x where lo <= x <= hi; lo where x <= lo <= hi; hi where x >= hi or
# lo >= hi.  The minimum-norm element of the convex hull of the active pieces'
# gradients is: 0 for everyone when a constant bound is active (its gradient is
# 0), else 1/k to each of the k active tensors (ties split evenly, as for
# maximum/minimum).  So x gets 1 strictly inside (lo, hi) and 0 at a number
# bound (as relu at 0), 1/2 at a tie with a tensor bound.
cdef inline floating _clamp_bwd(floating g, floating x, floating lo, floating hi,
                                int which, int klo, int khi) noexcept nogil:
    cdef floating one = 1, half = 0.5, third = 1.0 / 3.0
    cdef bint hl = klo != 0, hh = khi != 0
    cdef bint ax = ((not hl) | (lo <= x)) & ((not hh) | (x <= hi))
    cdef bint alo = hl & (x <= lo) & ((not hh) | (lo <= hi))
    cdef bint ahi = hh & ((x >= hi) | (hl & (lo >= hi)))
    cdef bint cst = (alo & (klo == 1)) | (ahi & (khi == 1))
    cdef int k = <int>ax + <int>alo + <int>ahi
    cdef bint me = ax if which == 0 else (alo if which == 1 else ahi)
    cdef floating w = one if k == 1 else (half if k == 2 else third)
    return _keep(me & (not cst), g * w)
