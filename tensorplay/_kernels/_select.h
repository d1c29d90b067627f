/* tensorplay: a branch-free "r, or exactly 0" for the strong-zero derivative kernels.
 *
 * `keep ? r : 0` with r computed by a floating-point operation does not vectorise
 * under GCC's default -ftrapping-math: GCC sinks the operation into the branch
 * that uses it, and may not then if-convert a branch holding an operation that
 * could trap (-fopt-info-vec: "control flow in loop").  Masking r's bits with an
 * all-ones/all-zeros integer mask is the same select without control flow, and
 * vectorises (vpand) at any -march.  The result is +0.0 where keep is 0.
 */
#ifndef TENSORPLAY_SELECT_H
#define TENSORPLAY_SELECT_H

#include <stdint.h>
#include <string.h>

static inline float tp_keepf(int keep, float r) {
    uint32_t b;
    memcpy(&b, &r, sizeof b);
    b &= (uint32_t)0 - (uint32_t)(keep != 0);
    memcpy(&r, &b, sizeof b);
    return r;
}

static inline double tp_keepd(int keep, double r) {
    uint64_t b;
    memcpy(&b, &r, sizeof b);
    b &= (uint64_t)0 - (uint64_t)(keep != 0);
    memcpy(&r, &b, sizeof b);
    return r;
}

#endif /* TENSORPLAY_SELECT_H */
