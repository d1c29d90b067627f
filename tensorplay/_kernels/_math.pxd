# Scalar point functions shared by unary.pyx, binary.pyx and nn.pyx.
#
# Each elementwise primitive has its forward `_<op>_fwd` and, right beside it, its
# derivative written as a VJP point function `_<op>_vjp(g, ...)` = g * f'(x) (STYLE
# A2/A5).  The derivative takes whichever of x (input) or y (output) is cheaper; the
# argument name says which.  All are `cdef inline ... noexcept nogil` so that GCC
# inlines them into the array loops and vectorises those (through libmvec for
# exp/log/tanh/pow, see _simd_math.h).
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
    return g * y


# ---- log:  y = ln x ;  dy/dx = 1/x  (domain x > 0; log(0) = -inf, x<0 -> nan) ---
cdef inline floating _log_fwd(floating x) noexcept nogil:
    if floating is float:
        return logf(x)
    else:
        return log(x)

cdef inline floating _log_vjp(floating g, floating x) noexcept nogil:
    return g / x


# ---- sqrt: y = sqrt x ;  dy/dx = 1/(2y)  (sqrt(0) has an infinite slope) -------
cdef inline floating _sqrt_fwd(floating x) noexcept nogil:
    if floating is float:
        return sqrtf(x)
    else:
        return sqrt(x)

cdef inline floating _sqrt_vjp(floating g, floating y) noexcept nogil:
    return g / (2 * y)


# ---- tanh: y = tanh x ;  dy/dx = 1 - y^2 ----------------------------------------
cdef inline floating _tanh_fwd(floating x) noexcept nogil:
    if floating is float:
        return tanhf(x)
    else:
        return tanh(x)

cdef inline floating _tanh_vjp(floating g, floating y) noexcept nogil:
    return g * (1 - y * y)


# ---- sigmoid: y = 1/(1+e^-x) ;  dy/dx = y (1 - y) -------------------------------
# Stable for any x and branch-free, so the loop vectorises (through libmvec's exp):
#   e = exp(-|x|) in [0, 1];  t = x >= 0 ? 1 : e;  y = t / (1 + e)  (= e^x/(1+e^x)
#   for x < 0).  The select picks a value, not an operation: the older form
#   `x >= 0 ? r : e * r` kept the multiply inside a branch, GCC (-ftrapping-math)
#   did not if-convert it, and the loop ran through scalar expf, 5.6x torch's time
#   at 1M float32 on one thread.  One rounding (t / (1 + e)) instead of two, too.
cdef inline floating _sigmoid_fwd(floating x) noexcept nogil:
    cdef floating e, t
    if floating is float:
        e = expf(-fabsf(x))
    else:
        e = exp(-fabs(x))
    t = 1 if x >= 0 else e
    return t / (1 + e)

cdef inline floating _sigmoid_vjp(floating g, floating y) noexcept nogil:
    return g * y * (1 - y)


# ---- relu: y = max(x, 0) ;  dy/dx = [x > 0]  (subgradient 0 at x = 0) ----------
# NaN propagates: relu(nan) = nan (like torch.relu and np.maximum(x, 0));
# relu(-0.0) = 0.0.  Its VJP sends 0 where x is NaN (x > 0 is false).
cdef inline floating _relu_fwd(floating x) noexcept nogil:
    return 0 if x <= 0 else x

cdef inline floating _relu_vjp(floating g, floating x) noexcept nogil:
    return g if x > 0 else 0


# ---- binary ops (their VJPs are composed from primitives in the Python layer) ----
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
