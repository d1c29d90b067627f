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
