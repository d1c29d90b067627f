/* tensorplay: libmvec declarations for the activation kernels (activation.pyx).
 *
 * The same device as _simd_math.h (which this includes): re-declaring libm
 * functions with GCC's simd("notinbranch") attribute lets the vectoriser call
 * glibc's libmvec variants under -fno-math-errno, without -ffast-math.  These
 * are the ones the activations need beyond exp/log/tanh: expm1 (elu, selu,
 * celu), log1p (softplus, logsigmoid) and erfc (gelu), all in libmvec since
 * glibc 2.35.  Elsewhere (clang, arm64, older glibc) plain <math.h>.
 */
#ifndef TENSORPLAY_ACTIVATION_SIMD_H
#define TENSORPLAY_ACTIVATION_SIMD_H

#include "_simd_math.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) \
    && defined(__GLIBC__) && defined(__GLIBC_PREREQ)
#  if __GLIBC_PREREQ(2, 35)
#    define TP_ACT_SIMD __attribute__((simd("notinbranch")))
extern float  expm1f(float)        TP_ACT_SIMD;
extern double expm1(double)        TP_ACT_SIMD;
extern float  log1pf(float)        TP_ACT_SIMD;
extern double log1p(double)        TP_ACT_SIMD;
extern float  erfcf(float)         TP_ACT_SIMD;
extern double erfc(double)         TP_ACT_SIMD;
#  endif
#endif

#endif /* TENSORPLAY_ACTIVATION_SIMD_H */
