/* timing.h — timing planes (spec §7): the overlap-safe interval union and the
 * device plane of a trace (TimingProfile).
 *
 * Ownership: cg_timing_analyze allocates the profile and every array/string it
 * points to in the caller's arena (strings point into the trace, which must
 * outlive the profile). Nothing to free separately.
 * Errors: none; the functions never fail (allocation failure aborts, like the arena).
 * Thread safety: reentrant (no global state); distinct arenas may be used concurrently.
 * Limits: O(n log n) in the number of device intervals; memory proportional to it.
 * Device time is never mixed with host time: busy_ns are lengths on each
 * interval's own clock_id. */
#ifndef CG_ANALYSIS_TIMING_H
#define CG_ANALYSIS_TIMING_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/json.h"
#include "trace/trace.h"

/* Half-open interval [start_ns, end_ns); end_ns < start_ns counts as empty. */
typedef struct cg_interval {
    uint64_t start_ns, end_ns;
} cg_interval;

/* [start, start+duration) with a saturating end. */
static inline cg_interval cg_interval_of(uint64_t start, uint64_t duration) {
    cg_interval iv = {start, start + duration < start ? UINT64_MAX : start + duration};
    return iv;
}

/* Length of the union of the intervals (§7): sorts `iv` IN PLACE by (start, end),
 * merges while next start <= current end (touching intervals merge) and sums the
 * merged lengths, saturating at UINT64_MAX. Example [0,10),[5,20),[30,35) => 25.
 * n == 0 (iv may be NULL) => 0. */
uint64_t cg_union_length(cg_interval *iv, size_t n);

typedef struct cg_device_span_timing {
    const char *span_id, *device, *clock_id;
    const char **backends; size_t n_backends; /* sorted, deduplicated */
    const char **streams; size_t n_streams;   /* sorted, deduplicated */
    uint64_t interval_count;
    uint64_t busy_ns; /* union length on clock_id */
} cg_device_span_timing;

typedef struct cg_device_clock_timing {
    const char *device, *clock_id;
    uint64_t interval_count;
    uint64_t busy_ns;
} cg_device_clock_timing;

typedef struct cg_timing_profile {
    cg_coverage device_coverage; /* declared device_timing, raised to partial when intervals exist */
    cg_device_span_timing *device_spans; size_t n_device_spans;   /* sorted by (span_id, device, clock_id) */
    cg_device_clock_timing *device_clocks; size_t n_device_clocks; /* sorted by (device, clock_id) */
} cg_timing_profile;

/* analyze_timing(doc). Never NULL. */
cg_timing_profile *cg_timing_analyze(const cg_trace *t, cg_arena *a);

/* Device span timings of one span: returns the first entry (NULL if none) and
 * stores the number of consecutive entries for span_id in *count. O(log n). */
const cg_device_span_timing *cg_timing_find_span(const cg_timing_profile *p, const char *span_id,
                                                 size_t *count);

/* TimingProfile JSON: {device_coverage, device_spans: [{span_id, device, clock_id,
 * backends, streams, interval_count, busy_ns}], device_clocks: [{device, clock_id,
 * interval_count, busy_ns}]}. */
cg_jv *cg_timing_to_json(cg_arena *a, const cg_timing_profile *p);
/* The same value with device_spans / device_clocks as lazy arrays (json.h);
 * p and its trace must outlive every use of the value. */
cg_jv *cg_timing_to_json_lazy(cg_arena *a, const cg_timing_profile *p);

#endif
