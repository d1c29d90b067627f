/* tensorplay: libm declarations that let GCC vectorise through glibc's libmvec.
 *
 * glibc ships SIMD variants of exp/log/pow/tanh/... (libmvec, symbols such as
 * _ZGVeN16v_expf), but <math.h> only announces them under -ffast-math, which we
 * refuse to use (it flips denormal handling for the whole process).  Re-declaring
 * the functions with GCC's simd("notinbranch") attribute tells the vectoriser the
 * variants exist; together with -fno-math-errno a loop such as
 *     for (i = 0; i < n; i++) out[i] = expf(x[i]);
 * becomes calls to _ZGVeN16v_expf (AVX-512), _ZGVdN8v_expf (AVX2), ... depending
 * on -march.  Accuracy of libmvec: at most 4 ulp (glibc manual, "Errors in Math
 * Functions").
 *
 * Guarded: GCC (not clang, which defines __GNUC__ too) on x86-64 with glibc.
 * exp/log/pow appeared in libmvec 2.22, tanh in 2.35.  Everywhere else this header
 * is plain <math.h> and the loops run through scalar libm.
 */
#ifndef TENSORPLAY_SIMD_MATH_H
#define TENSORPLAY_SIMD_MATH_H

#include <math.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) \
    && defined(__GLIBC__) && defined(__GLIBC_PREREQ)
#  if __GLIBC_PREREQ(2, 22)
#    define TP_SIMD_MATH 1
#    define TP_SIMD __attribute__((simd("notinbranch")))
extern float  expf(float)          TP_SIMD;
extern double exp(double)          TP_SIMD;
extern float  logf(float)          TP_SIMD;
extern double log(double)          TP_SIMD;
extern float  powf(float, float)   TP_SIMD;
extern double pow(double, double)  TP_SIMD;
#    if __GLIBC_PREREQ(2, 35)
extern float  tanhf(float)         TP_SIMD;
extern double tanh(double)         TP_SIMD;
#    endif
#  endif
#endif

#ifndef TP_SIMD_MATH
#  define TP_SIMD_MATH 0
#endif

#endif /* TENSORPLAY_SIMD_MATH_H */
