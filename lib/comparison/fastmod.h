/* fastmod.h — exact `a % d` for 64-bit numerators and a runtime-constant
 * 64-bit divisor, by a precomputed 128-bit reciprocal (Lemire, Kaser, Kurz,
 * "Faster remainder by direct computation", 2019, with N = 64, F = 128).
 *
 * M = ceil(2^128 / d) (computed as floor((2^128 − 1) / d) + 1, which wraps to 0
 * for d = 1 — then every result is 0, which is a % 1). For 0 ≤ a < 2^64 and
 * 1 ≤ d < 2^64, F = 128 ≥ N + log2(d) holds, so
 *     a % d = floor(((M × a) mod 2^128) × d / 2^128)
 * exactly (tests/unit/test_comparison_fastmod.c checks it against `%`).
 * d must be ≥ 1 (d == 0 is undefined, like `%`). Header-only; no allocation. */
#ifndef CG_COMPARISON_FASTMOD_H
#define CG_COMPARISON_FASTMOD_H

#include <stdint.h>

__extension__ typedef unsigned __int128 cg_u128;

typedef struct cg_fastmod {
    cg_u128 m;
    uint64_t d;
} cg_fastmod;

static inline cg_fastmod cg_fastmod_init(uint64_t d) {
    cg_fastmod f;
    f.m = ~(cg_u128)0 / d + 1;
    f.d = d;
    return f;
}

static inline uint64_t cg_fastmod_u64(const cg_fastmod *f, uint64_t a) {
    cg_u128 low = f->m * a; /* mod 2^128 */
    uint64_t lo = (uint64_t)low, hi = (uint64_t)(low >> 64);
    /* floor(low × d / 2^128): hi×d×2^64 + lo×d, top 64 bits of 192 */
    cg_u128 t = ((cg_u128)lo * f->d) >> 64;
    t += (cg_u128)hi * f->d;
    return (uint64_t)(t >> 64);
}

#endif
