/* tensorplay: libm declarations for the unary-math kernels (unary.pyx,
 * unary_deriv.pyx), the same trick as _simd_math.h (read it first): GCC's
 * simd("notinbranch") attribute tells the vectoriser that glibc's libmvec has
 * SIMD variants of these functions, so `out[i] = sinf(x[i])` becomes calls to
 * _ZGVeN16v_sinf (AVX-512), _ZGVdN8v_sinf (AVX2), ... at most 4 ulp (glibc
 * manual).  sin/cos appeared in libmvec 2.22; the others in 2.35.  Everywhere
 * else this header is plain <math.h> plus the reentrant lgamma_r (lgamma writes
 * the global `signgam`: a data race in an OpenMP loop).
 */
#ifndef TENSORPLAY_SIMD_UNARY_H
#define TENSORPLAY_SIMD_UNARY_H

#include <math.h>

#define TP_PI 3.141592653589793238462643383279502884

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) \
    && defined(__GLIBC__) && defined(__GLIBC_PREREQ)
#  if __GLIBC_PREREQ(2, 22)
#    define TPU_SIMD __attribute__((simd("notinbranch")))
extern float  sinf(float)    TPU_SIMD;
extern double sin(double)    TPU_SIMD;
extern float  cosf(float)    TPU_SIMD;
extern double cos(double)    TPU_SIMD;
#    if __GLIBC_PREREQ(2, 35)
extern float  tanf(float)    TPU_SIMD;
extern double tan(double)    TPU_SIMD;
extern float  asinf(float)   TPU_SIMD;
extern double asin(double)   TPU_SIMD;
extern float  acosf(float)   TPU_SIMD;
extern double acos(double)   TPU_SIMD;
extern float  atanf(float)   TPU_SIMD;
extern double atan(double)   TPU_SIMD;
extern float  sinhf(float)   TPU_SIMD;
extern double sinh(double)   TPU_SIMD;
extern float  coshf(float)   TPU_SIMD;
extern double cosh(double)   TPU_SIMD;
extern float  asinhf(float)  TPU_SIMD;
extern double asinh(double)  TPU_SIMD;
extern float  acoshf(float)  TPU_SIMD;
extern double acosh(double)  TPU_SIMD;
extern float  atanhf(float)  TPU_SIMD;
extern double atanh(double)  TPU_SIMD;
extern float  log1pf(float)  TPU_SIMD;
extern double log1p(double)  TPU_SIMD;
extern float  expm1f(float)  TPU_SIMD;
extern double expm1(double)  TPU_SIMD;
extern float  log2f(float)   TPU_SIMD;
extern double log2(double)   TPU_SIMD;
extern float  log10f(float)  TPU_SIMD;
extern double log10(double)  TPU_SIMD;
extern float  exp2f(float)   TPU_SIMD;
extern double exp2(double)   TPU_SIMD;
extern float  erff(float)    TPU_SIMD;
extern double erf(double)    TPU_SIMD;
extern float  erfcf(float)   TPU_SIMD;
extern double erfc(double)   TPU_SIMD;
#    endif
#  endif
#endif

/* reentrant lgamma (POSIX/glibc, also macOS); declared here because <math.h>
 * shows it only under _DEFAULT_SOURCE */
#if defined(_MSC_VER)
static inline double tp_lgamma(double x) { return lgamma(x); }
static inline float tp_lgammaf(float x) { return lgammaf(x); }
#else
extern double lgamma_r(double, int *);
extern float lgammaf_r(float, int *);
static inline double tp_lgamma(double x) { int s; return lgamma_r(x, &s); }
static inline float tp_lgammaf(float x) { int s; return lgammaf_r(x, &s); }
#endif

#endif /* TENSORPLAY_SIMD_UNARY_H */
