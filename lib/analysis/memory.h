/* memory.h — the two memory planes of a trace (spec §8) and the per-span
 * logical memory metrics used by the graph.
 *
 * Logical plane: `memory` events (storage lifetimes keyed by (device, storage_id)).
 * Physical plane: `device_memory` samples. A plane without events is absent
 * (NULL here, `null` in JSON), never zeros.
 *
 * Ownership: everything is allocated in the caller's arena; strings and shapes
 * point into the trace, which must outlive the profile. Scratch memory is
 * malloc'd and freed before returning.
 * Errors: none (allocation failure aborts).
 * Thread safety: reentrant (no global state); distinct arenas may be used concurrently.
 * Limits: O(n log n) in the number of events; memory proportional to the input
 * (the timeline stores per-device changes, not full per-point device maps).
 * Byte sums saturate at UINT64_MAX except the running live sums, which are exact
 * as long as the true values fit in u64. */
#ifndef CG_ANALYSIS_MEMORY_H
#define CG_ANALYSIS_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/json.h"
#include "trace/trace.h"

/* LogicalStorageLifetime. tensor_ids: opening tensor, aliases, freeing tensor;
 * sorted, deduplicated. */
typedef struct cg_lifetime {
    const char *device, *storage_id;
    const char **tensor_ids; size_t n_tensor_ids;
    const char *allocation_span_id;
    const char *op_name; /* NULL when the opening alloc had none */
    uint64_t bytes;
    const cg_shape *shape;
    const char *dtype;
    cg_category category;
    uint64_t start_timestamp_ns;
    bool has_end; /* false while retained */
    uint64_t end_timestamp_ns;
} cg_lifetime;

/* One change of a device's live bytes, applied at a timeline point. */
typedef struct cg_device_live_change {
    size_t device; /* index into cg_logical_memory.devices */
    uint64_t live_bytes;
} cg_device_live_change;

/* LogicalMemoryPoint. live_bytes_by_device is reconstructed by replaying the
 * changes [change_first, change_first+n_changes) of every point up to this one
 * (cg_logical_live_by_device does it); devices appear once they opened a lifetime. */
typedef struct cg_logical_point {
    uint64_t timestamp_ns;
    uint64_t live_bytes;
    uint64_t live_bytes_by_category[CG_CAT_COUNT]; /* index = cg_category */
    size_t change_first, n_changes;
} cg_logical_point;

typedef struct cg_logical_device {
    const char *device;
    uint64_t storage_allocation_count, matched_storage_free_count, total_allocated_bytes;
    uint64_t peak_live_bytes, peak_timestamp_ns;
} cg_logical_device;

typedef struct cg_logical_memory {
    uint64_t storage_allocation_count, matched_storage_free_count, total_allocated_bytes;
    size_t peak_point; /* index into timeline of the peak (first strict maximum) */
    cg_lifetime *peak_live_allocations; size_t n_peak_live_allocations; /* snapshot at the peak:
                                          sorted by (start, device, storage_id), no end, aliases so far */
    cg_logical_device *devices; size_t n_devices; /* sorted by device */
    cg_lifetime *lifetimes; size_t n_lifetimes;   /* sorted by (start, device, storage_id) */
    cg_logical_point *timeline; size_t n_timeline; /* one point per timestamp group */
    cg_device_live_change *changes; size_t n_changes;
} cg_logical_memory;

typedef struct cg_physical_device {
    const char *device;
    uint64_t sample_count, used_sample_count, free_sample_count, reserved_sample_count,
        capacity_sample_count;
    bool has_peak_used, has_peak_reserved, has_minimum_free, has_maximum_capacity;
    uint64_t peak_used_bytes, peak_used_timestamp_ns;         /* earliest on ties */
    uint64_t peak_reserved_bytes, peak_reserved_timestamp_ns; /* earliest on ties */
    uint64_t minimum_free_bytes, minimum_free_timestamp_ns;   /* earliest on ties */
    uint64_t maximum_observed_capacity_bytes;
} cg_physical_device;

typedef struct cg_physical_memory {
    const cg_device_memory **timeline; size_t n_timeline; /* sorted by (timestamp, device), stable */
    cg_physical_device *devices; size_t n_devices;         /* sorted by device */
} cg_physical_memory;

typedef struct cg_memory_profile {
    cg_logical_memory *logical;   /* NULL when the trace has no memory events */
    cg_physical_memory *physical; /* NULL when the trace has no device_memory samples */
} cg_memory_profile;

/* Builds both planes. Never NULL. */
cg_memory_profile *cg_memory_analyze(const cg_trace *t, cg_arena *a);

/* Live bytes of the logical peak (false when the logical plane is absent). */
bool cg_memory_logical_peak(const cg_memory_profile *p, uint64_t *bytes, uint64_t *timestamp_ns);

/* Fills out[0..n_devices) with the live bytes per device at timeline point `point`
 * and seen[0..n_devices) with whether the device appears in that point's map. O(changes). */
void cg_logical_live_by_device(const cg_logical_memory *l, size_t point, uint64_t *out, bool *seen);

/* Per-span metrics (indexed like t->spans) for the graph (§8 "Per-node metrics").
 * known: the logical plane exists. allocated_bytes: bytes of lifetimes opened in
 * the span. has_window: the span is closed and reachable from a root; then
 * peak_live_bytes / residual_bytes are the subtree lifetimes clipped to
 * [start, start+duration): live at start = start <= window start and (open or
 * end > window start); later starts add, ends strictly inside subtract, frees
 * before allocations at equal timestamps; peak = max running live; residual =
 * live after the window (start < window end, open or end >= window end).
 * Returns NULL when the logical plane is absent. O(n log^2 n) (small-to-large). */
typedef struct cg_span_memory {
    bool known;
    uint64_t allocated_bytes;
    bool has_window;
    uint64_t peak_live_bytes, residual_bytes;
} cg_span_memory;
cg_span_memory *cg_memory_span_metrics(const cg_trace *t, const cg_memory_profile *p, cg_arena *a);

/* MemoryProfile JSON {logical, physical} (absent plane = null). Field names in
 * docs/compatibility-analysis.md. */
cg_jv *cg_memory_to_json(cg_arena *a, const cg_memory_profile *p);
/* The same value with lifetimes, peak live allocations and both timelines as
 * lazy arrays (json.h); p and its trace must outlive every use of the value. */
cg_jv *cg_memory_to_json_lazy(cg_arena *a, const cg_memory_profile *p);
cg_jv *cg_lifetime_to_json(cg_arena *a, const cg_lifetime *l);

#endif
