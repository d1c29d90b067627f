# Scalar point functions shared by unary.pyx, binary.pyx and nn.pyx.
#
# Each elementwise primitive has its forward `_<op>_fwd` and, right beside it, its
# derivative written as a VJP point function `_<op>_vjp(g, ...)` = g * f'(x) (STYLE
# A2/A5).  The derivative takes whichever of x (input) or y (output) is cheaper; the
# argument name says which.  All are `cdef inline ... noexcept nogil` so that GCC
# inlines them into the array loops and vectorises those (through libmvec for
# exp/log/tanh/pow, see _simd_math.h).
#
# Strong zero (docs/DECISIONS.md, "Strong zero"): every derivative point function
# returns exactly 0 where its cotangent/tangent g is 0, whatever f'(x) is there
# (0 * inf = 0 * nan = 0), through `_keep(g != 0, r)`: one select, written as a bit
# mask (_select.h) because GCC, with the default -ftrapping-math, does not
# if-convert `g == 0 ? 0 : g * y` (it sinks the multiply into the branch) and a
# loop with control flow does not vectorise.  Other selects pick a value, not an
# operation (`x >= 0 ? 1 : e`), which GCC does turn into a blend.
#
# Constants are typed locals (`cdef floating one = 1`): Cython writes a literal 1 or
# 2 as the C double 1.0 / 2.0, and `1.0 - y*y` with a float y is evaluated in
# double (C's usual arithmetic conversions), with conversions in the loop.
from cython cimport floating

cdef extern from "_simd_math.h" nogil:
    float expf(float)
    double exp(double)
    float logf(float)
    double log(double)
    float tanhf(float)
    double tanh(double)
    float powf(float, float)
    double pow(double, double)
    float sqrtf(float)
    double sqrt(double)
    float fabsf(float)
    double fabs(double)
    int TP_SIMD_MATH

cdef extern from "_select.h" nogil:
    float tp_keepf(int keep, float r)
    double tp_keepd(int keep, double r)


cdef inline floating _keep(bint keep, floating r) noexcept nogil:
    """r where keep, else exactly +0.0; branch-free (vectorises)."""
    if floating is float:
        return tp_keepf(keep, r)
    else:
        return tp_keepd(keep, r)


cdef inline floating _sz(floating g, floating r) noexcept nogil:
    """r, or exactly 0 where the cotangent g is 0 (the strong zero)."""
    return _keep(g != 0, r)


# ---- neg:  y = -x ;  dy/dx = -1 ------------------------------------------------
cdef inline floating _neg_fwd(floating x) noexcept nogil:
    return -x

cdef inline floating _neg_vjp(floating g) noexcept nogil:
    return -g


# ---- exp:  y = e^x ;  dy/dx = y ------------------------------------------------
cdef inline floating _exp_fwd(floating x) noexcept nogil:
    if floating is float:
        return expf(x)
    else:
        return exp(x)

cdef inline floating _exp_vjp(floating g, floating y) noexcept nogil:
    """g * y, exactly 0 where g == 0 or y == 0 (a strong zero on both sides: the
    product is symmetric, and the rules of the fused kernels use it for
    derivatives of kernels that are identically 0 where their g is 0, see
    elementwise.py); also mul's VJP g * other (the mul_backward kernel)."""
    return _keep((g != 0) & (y != 0), g * y)


# ---- log:  y = ln x ;  dy/dx = 1/x  (domain x > 0; log(0) = -inf, x<0 -> nan) ---
cdef inline floating _log_fwd(floating x) noexcept nogil:
    if floating is float:
        return logf(x)
    else:
        return log(x)

cdef inline floating _log_vjp(floating g, floating x) noexcept nogil:
    """g / x (strong zero in g); also div's VJP for the numerator, g / b."""
    return _sz(g, g / x)


# ---- sqrt: y = sqrt x ;  dy/dx = 1/(2y)  (sqrt(0) has an infinite slope) -------
cdef inline floating _sqrt_fwd(floating x) noexcept nogil:
    if floating is float:
        return sqrtf(x)
    else:
        return sqrt(x)

cdef inline floating _sqrt_vjp(floating g, floating y) noexcept nogil:
    return _sz(g, g / (y + y))           # y + y: a literal 2 would be a C double


# ---- tanh: y = tanh x ;  dy/dx = 1 - y^2 ----------------------------------------
cdef inline floating _tanh_fwd(floating x) noexcept nogil:
    if floating is float:
        return tanhf(x)
    else:
        return tanh(x)

cdef inline floating _tanh_vjp(floating g, floating y) noexcept nogil:
    cdef floating one = 1
    return _sz(g, g * (one - y * y))


# ---- sigmoid: y = 1/(1+e^-x) ;  dy/dx = y (1 - y) -------------------------------
# Stable for any x and branch-free, so the loop vectorises (through libmvec's exp):
#   e = exp(-|x|) in [0, 1];  t = x >= 0 ? 1 : e;  y = t / (1 + e)  (= e^x/(1+e^x)
#   for x < 0).  The select picks a value, not an operation: the older form
#   `x >= 0 ? r : e * r` kept the multiply inside a branch, GCC (-ftrapping-math)
#   did not if-convert it, and the loop ran through scalar expf, 5.6x torch's time
#   at 1M float32 on one thread.  One rounding (t / (1 + e)) instead of two, too.
cdef inline floating _sigmoid_fwd(floating x) noexcept nogil:
    cdef floating e, t, one = 1
    if floating is float:
        e = expf(-fabsf(x))
    else:
        e = exp(-fabs(x))
    t = one if x >= 0 else e
    return t / (one + e)

cdef inline floating _sigmoid_vjp(floating g, floating y) noexcept nogil:
    cdef floating one = 1
    return _sz(g, g * y * (one - y))


# ---- relu: y = max(x, 0) ;  dy/dx = [x > 0]  (subgradient 0 at x = 0) ----------
# NaN propagates: relu(nan) = nan (like torch.relu and np.maximum(x, 0));
# relu(-0.0) = 0.0.  Its VJP sends 0 where x is NaN (x > 0 is false).
cdef inline floating _relu_fwd(floating x) noexcept nogil:
    cdef floating zero = 0
    return zero if x <= 0 else x

cdef inline floating _relu_vjp(floating g, floating x) noexcept nogil:
    # x <= 0, not !(x > 0): relu(nan) = nan passes the gradient on, as PyTorch's
    # threshold_backward on the result does
    cdef floating zero = 0
    return zero if x <= 0 else g


# ---- binary ops ------------------------------------------------------------------
# mul's VJPs are _exp_vjp (g * other), div's numerator VJP is _log_vjp (g / b); the
# rest have point functions of their own below (_div_vjp_other, _pow_vjp_*).
cdef inline floating _add_fwd(floating a, floating b) noexcept nogil:
    return a + b

cdef inline floating _sub_fwd(floating a, floating b) noexcept nogil:
    return a - b

cdef inline floating _mul_fwd(floating a, floating b) noexcept nogil:
    return a * b

cdef inline floating _div_fwd(floating a, floating b) noexcept nogil:
    return a / b

# pow follows C99/IEEE pow: pow(x, 0) = 1 (also for nan), pow(1, y) = 1,
# pow(negative, non-integer) = nan -- the same as numpy.power on floats.
cdef inline floating _pow_fwd(floating a, floating b) noexcept nogil:
    if floating is float:
        return powf(a, b)
    else:
        return pow(a, b)


# ---- div:  y = a / b ;  dy/db = -a/b^2 = -y/b ---------------------------------------
# -(g*y)/b, exactly 0 where g == 0 or y == 0 (a strong zero in g, and in y, where
# -0/b is 0 anyway except at b = 0: 0/0).  The rules of sqrt_backward and
# div_backward use this for their second derivatives (-f/x with f = 0 at x = 0).
cdef inline floating _div_vjp_other(floating g, floating y, floating b) noexcept nogil:
    return _keep((g != 0) & (y != 0), -(g * y) / b)


# ---- pow:  y = a^b ;  dy/da = b a^(b-1) ;  dy/db = a^b log a -------------------------
# PyTorch's conventions where the formulas give nan: the base's derivative is 0
# where b == 0 (also for a = 0, where 0 * 0^-1 = nan), the exponent's is 0 where
# a == 0 and b >= 0 (0 * log 0).  The latter is read from (a, y): for a == 0,
# y = 0^b is finite exactly when b >= 0 (0 or 1), inf for b < 0, nan for b nan.
cdef inline floating _pow_vjp_base(floating g, floating a, floating b) noexcept nogil:
    cdef floating r, one = 1
    if floating is float:
        r = g * b * powf(a, b - one)
    else:
        r = g * b * pow(a, b - one)
    return _keep((g != 0) & (b != 0), r)

cdef inline floating _pow_vjp_exponent(floating g, floating y, floating a) noexcept nogil:
    cdef floating r
    if floating is float:
        r = g * y * logf(a)
    else:
        r = g * y * log(a)
    return _keep((g != 0) & ((a != 0) | (y - y != 0)), r)


# =================================================================================
# Unary math (issue 7): forward point functions; their derivatives g * f'(x) are
# the one-line formulas of unary_deriv.pyx.tp's table, which call these.
# float32 runs the float libm functions (vectorised through libmvec where
# _simd_unary.h declares them); digamma, polygamma and erfinv are computed in
# double for both types (series and Newton steps, not hot paths).
# =================================================================================
cdef extern from "_simd_unary.h" nogil:
    float sinf(float)
    double sin(double)
    float cosf(float)
    double cos(double)
    float tanf(float)
    double tan(double)
    float asinf(float)
    double asin(double)
    float acosf(float)
    double acos(double)
    float atanf(float)
    double atan(double)
    float sinhf(float)
    double sinh(double)
    float coshf(float)
    double cosh(double)
    float asinhf(float)
    double asinh(double)
    float acoshf(float)
    double acosh(double)
    float atanhf(float)
    double atanh(double)
    float log1pf(float)
    double log1p(double)
    float expm1f(float)
    double expm1(double)
    float log2f(float)
    double log2(double)
    float log10f(float)
    double log10(double)
    float exp2f(float)
    double exp2(double)
    float erff(float)
    double erf(double)
    float erfcf(float)
    double erfc(double)
    float floorf(float)
    double floor(double)
    float ceilf(float)
    double ceil(double)
    float truncf(float)
    double trunc(double)
    float rintf(float)
    double rint(double)
    double copysign(double, double)
    float tp_lgammaf(float)
    double tp_lgamma(double)
    double INFINITY
    double NAN
    double PI "TP_PI"


# ---- abs: |x| ;  d/dx = sign(x)  (subgradient 0 at 0, the minimum-norm one) ------
cdef inline floating _abs_fwd(floating x) noexcept nogil:
    return fabsf(x) if floating is float else fabs(x)

# ---- sign: -1, 0, +1 ;  sign(nan) = 0 (PyTorch's; numpy gives nan) ;  d/dx = 0 ---
cdef inline floating _sign_fwd(floating x) noexcept nogil:
    cdef floating one = 1, zero = 0
    return one if x > 0 else (-one if x < 0 else zero)

# ---- trigonometric and hyperbolic: libm (libmvec) ---------------------------------
cdef inline floating _sin_fwd(floating x) noexcept nogil:
    return sinf(x) if floating is float else sin(x)

cdef inline floating _cos_fwd(floating x) noexcept nogil:
    return cosf(x) if floating is float else cos(x)

cdef inline floating _tan_fwd(floating x) noexcept nogil:
    return tanf(x) if floating is float else tan(x)

cdef inline floating _asin_fwd(floating x) noexcept nogil:
    return asinf(x) if floating is float else asin(x)

cdef inline floating _acos_fwd(floating x) noexcept nogil:
    return acosf(x) if floating is float else acos(x)

cdef inline floating _atan_fwd(floating x) noexcept nogil:
    return atanf(x) if floating is float else atan(x)

cdef inline floating _sinh_fwd(floating x) noexcept nogil:
    return sinhf(x) if floating is float else sinh(x)

cdef inline floating _cosh_fwd(floating x) noexcept nogil:
    return coshf(x) if floating is float else cosh(x)

cdef inline floating _asinh_fwd(floating x) noexcept nogil:
    return asinhf(x) if floating is float else asinh(x)

cdef inline floating _acosh_fwd(floating x) noexcept nogil:
    return acoshf(x) if floating is float else acosh(x)

cdef inline floating _atanh_fwd(floating x) noexcept nogil:
    return atanhf(x) if floating is float else atanh(x)

# ---- exponentials and logarithms: libm's log1p/expm1 are exact near 0 ------------
cdef inline floating _log1p_fwd(floating x) noexcept nogil:
    return log1pf(x) if floating is float else log1p(x)

cdef inline floating _expm1_fwd(floating x) noexcept nogil:
    return expm1f(x) if floating is float else expm1(x)

cdef inline floating _log2_fwd(floating x) noexcept nogil:
    return log2f(x) if floating is float else log2(x)

cdef inline floating _log10_fwd(floating x) noexcept nogil:
    return log10f(x) if floating is float else log10(x)

cdef inline floating _exp2_fwd(floating x) noexcept nogil:
    return exp2f(x) if floating is float else exp2(x)

# ---- powers: 1/sqrt(x), x*x, 1/x --------------------------------------------------
cdef inline floating _rsqrt_fwd(floating x) noexcept nogil:
    cdef floating one = 1
    return one / _sqrt_fwd(x)

cdef inline floating _square_fwd(floating x) noexcept nogil:
    return x * x

cdef inline floating _reciprocal_fwd(floating x) noexcept nogil:
    cdef floating one = 1
    return one / x

# ---- rounding (zero derivative): round is rint, half to even, as PyTorch ---------
cdef inline floating _floor_fwd(floating x) noexcept nogil:
    return floorf(x) if floating is float else floor(x)

cdef inline floating _ceil_fwd(floating x) noexcept nogil:
    return ceilf(x) if floating is float else ceil(x)

cdef inline floating _trunc_fwd(floating x) noexcept nogil:
    return truncf(x) if floating is float else trunc(x)

cdef inline floating _round_fwd(floating x) noexcept nogil:
    return rintf(x) if floating is float else rint(x)

cdef inline floating _round_dec_fwd(floating x, floating p) noexcept nogil:
    """round(x, decimals): p = 10^decimals for decimals > 0 (rint(x p) / p), and
    -10^-decimals for decimals < 0 (rint(x / q) q, q = -p): PyTorch's and numpy's."""
    if p > 0:
        return _round_fwd(x * p) / p
    return _round_fwd(x / (-p)) * (-p)

# ---- frac: x - trunc(x) (sign of x) ;  d/dx = 1 ----------------------------------
cdef inline floating _frac_fwd(floating x) noexcept nogil:
    return x - _trunc_fwd(x)

# ---- error functions ---------------------------------------------------------------
cdef inline floating _erf_fwd(floating x) noexcept nogil:
    return erff(x) if floating is float else erf(x)

cdef inline floating _erfc_fwd(floating x) noexcept nogil:
    return erfcf(x) if floating is float else erfc(x)


cdef inline double _erfinv_d(double y) noexcept nogil:
    """erf^-1(y): PyTorch's rational first guess (calc_erfinv) and two Newton
    steps; in the tails (|y| > 0.7) three steps solve erfc(x) = 1 - |y| (exact for
    |y| >= 0.5), so accuracy does not drop as |y| -> 1.  erfinv(+-1) = +-inf,
    nan outside [-1, 1]."""
    cdef double ya = fabs(y), z, num, dem, x, w
    cdef double c = 1.1283791670955126       # 2 / sqrt(pi)
    if ya > 1 or y != y:
        return NAN
    if ya == 1:
        return copysign(INFINITY, y)
    if ya <= 0.7:
        z = y * y
        num = ((-0.140543331 * z + 0.914624893) * z - 1.645349621) * z + 0.886226899
        dem = (((0.012229801 * z - 0.329097515) * z + 1.442710462) * z - 2.118377725) * z + 1
        x = y * num / dem
        x = x - (erf(x) - y) / (c * exp(-x * x))
        x = x - (erf(x) - y) / (c * exp(-x * x))
        return x
    z = sqrt(-log((1 - ya) / 2))
    num = ((1.641345311 * z + 3.429567803) * z - 1.624906493) * z - 1.970840454
    dem = (1.637067800 * z + 3.543889200) * z + 1
    x = num / dem
    w = 1 - ya
    x = x + (erfc(x) - w) / (c * exp(-x * x))
    x = x + (erfc(x) - w) / (c * exp(-x * x))
    x = x + (erfc(x) - w) / (c * exp(-x * x))    # the far tail's first guess is rougher
    return copysign(x, y)

cdef inline floating _erfinv_fwd(floating x) noexcept nogil:
    return <floating>_erfinv_d(x)

# ---- gamma functions -----------------------------------------------------------------
# lgamma = log|Gamma(x)| (lgamma_r: reentrant); inf at 0 and the negative integers.
cdef inline floating _lgamma_fwd(floating x) noexcept nogil:
    return tp_lgammaf(x) if floating is float else tp_lgamma(x)


cdef inline double _digamma_d(double x) noexcept nogil:
    """psi(x) = d/dx lgamma(x) (Cephes psi, as PyTorch's calc_digamma): reflection
    psi(x) = psi(1 - x) - pi / tan(pi x) for x < 0, recurrence psi(x) = psi(x+1)
    - 1/x up to x >= 10, then the asymptotic series in 1/x^2.  psi(+-0) = -+inf,
    nan at the negative integers (PyTorch's and scipy's values)."""
    cdef double result = 0, z, y
    if x == 0:
        return copysign(INFINITY, -x)
    if x < 0:
        if x == floor(x):
            return NAN
        result = -PI / tan(PI * (x - trunc(x)))
        x = 1 - x
    while x < 10:
        result -= 1 / x
        x += 1
    if x == 10:
        return result + 2.25175258906672110764
    y = 0
    if x < 1e17:
        z = 1 / (x * x)
        y = z * (((((((8.33333333333333333333E-2 * z - 2.10927960927960927961E-2) * z
                      + 7.57575757575757575758E-3) * z - 4.16666666666666666667E-3) * z
                    + 3.96825396825396825397E-3) * z - 8.33333333333333333333E-3) * z
                  + 8.33333333333333333333E-2))
    return result + log(x) - 0.5 / x - y

cdef inline floating _digamma_fwd(floating x) noexcept nogil:
    return <floating>_digamma_d(x)


cdef inline double _polygamma_d(int n, double x) noexcept nogil:
    """psi^(n)(x), n >= 1: (-1)^(n+1) n! zeta(n+1, x) as the sum over (x+k)^-(n+1)
    for k below m, with x + m >= 15 + n, plus the Euler-Maclaurin tail
    z^-n (1/n + 1/(2z) + sum_k B_2k (n+1)...(n+2k-1) / (2k)! z^-2k), z = x + m.
    Reflection for x < 0.5 when n is 1 or 2 (psi1(x) = pi^2/sin^2(pi x) - psi1(1-x),
    psi2(x) = psi2(1-x) - 2 pi^3 cot(pi x)/sin^2(pi x)); for n >= 3 the sum runs
    from x itself (nan below x = -1e5).  +inf (n odd) or nan (n even) at 0 and the
    negative integers."""
    cdef double s = 0, refl = 0, sign = 1, z, t, iz2, term, fact = 1, sp, cp, c
    cdef int i, k
    if x != x:
        return x
    if x <= 0 and x == floor(x):
        return INFINITY if n % 2 == 1 else NAN
    if x < 0.5 and n <= 2:
        sp = sin(PI * x)
        if n == 1:
            refl = PI * PI / (sp * sp)
            sign = -1
        else:
            cp = cos(PI * x)
            refl = -2 * PI * PI * PI * cp / (sp * sp * sp)
        x = 1 - x
    elif x < -1e5:
        return NAN
    for i in range(2, n + 1):
        fact *= i
    while x < 15 + n:
        s += pow(x, -(n + 1.0))
        x += 1
    z = x
    iz2 = 1 / (z * z)
    t = 1.0 / n + 0.5 / z
    term = 1
    for k in range(1, 9):
        # term = (n+1)(n+2)...(n+2k-1) z^-2k ;  c = B_2k / (2k)!
        term *= (n + 2 * k - 2.0 if k > 1 else 1.0) * (n + 2 * k - 1.0) * iz2
        c = (1.0 / 12 if k == 1 else -1.0 / 720 if k == 2 else 1.0 / 30240 if k == 3
             else -1.0 / 1209600 if k == 4 else 1.0 / 47900160 if k == 5
             else -691.0 / 1307674368000.0 if k == 6 else 1.0 / 74724249600.0 if k == 7
             else -3617.0 / 10670622842880000.0)
        t += c * term
    s += pow(z, -n * 1.0) * t
    s *= fact
    if n % 2 == 0:
        s = -s
    return refl + sign * s

cdef inline floating _polygamma_fwd(int n, floating x) noexcept nogil:
    return <floating>_polygamma_d(n, x)

# ---- sinc: sin(pi x) / (pi x), 1 at 0 ;  d/dx = (cos(pi x) - sinc(x)) / x, 0 at 0 ---
cdef inline floating _sinc_fwd(floating x) noexcept nogil:
    cdef floating one = 1, pi = PI
    cdef floating u = pi * x
    cdef floating r = _sin_fwd(u) / u
    return one if x == 0 else r

cdef inline double _sinc_deriv_d(double x) noexcept nogil:
    """sinc'(x) = pi (u cos u - sin u) / u^2, u = pi x, in double; where |u| < 0.5
    (cancellation) its Taylor series pi u sum_k (-1)^k 2k u^(2k-2) / (2k+1)!, to
    u^13 (relative error below 1e-17 there), which is 0 at 0."""
    cdef double u = PI * x, u2
    if fabs(u) < 0.5:
        u2 = u * u
        return PI * u * (-1.0 / 3 + u2 * (1.0 / 30 + u2 * (-1.0 / 840 + u2 * (
            1.0 / 45360 + u2 * (-1.0 / 3991680 + u2 * (1.0 / 518918400
                                                      - u2 / 93405312000.0))))))
    return PI * (u * cos(u) - sin(u)) / (u * u)

cdef inline floating _sinc_deriv(floating x) noexcept nogil:
    return <floating>_sinc_deriv_d(x)

# ---- logit: log(x / (1 - x)), x clamped to [eps, 1 - eps] when eps >= 0 ----------
# (p < 0 stands for eps=None).  d/dx = 1 / (x (1 - x)) inside [eps, 1 - eps] and 0
# outside it (the clamp's derivative, PyTorch's logit_backward); with eps=None, nan
# outside [0, 1] (PyTorch's).
cdef inline floating _logit_fwd(floating x, floating p) noexcept nogil:
    cdef floating one = 1
    cdef floating hi = one - p
    if p >= 0:
        x = p if x < p else (hi if x > hi else x)
    return _log_fwd(x / (one - x))

cdef inline floating _logit_deriv(floating x, floating p) noexcept nogil:
    cdef floating one = 1, zero = 0
    cdef floating r = one / (x * (one - x))
    cdef floating nan = NAN
    if p >= 0:
        return zero if (x < p or x > one - p) else r
    return nan if (x < 0 or x > one) else r
