/* num.h — overflow-safe integer arithmetic shared by every layer.
 * Header-only (static inline: these sit on hot paths of the trace checks). */
#ifndef CG_BASE_NUM_H
#define CG_BASE_NUM_H

#include <stdint.h>

/* a + b, or UINT64_MAX when the sum does not fit (a saturating end of
 * [start, start + duration) and saturating totals). */
static inline uint64_t cg_sat_add_u64(uint64_t a, uint64_t b) {
    uint64_t s;
    return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
}

#endif
