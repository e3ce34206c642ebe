/* memory.h — the two memory planes of a trace (the crate's src/trace/memory.rs:
 * analyze_memory, node_memory_metrics) and the per-node logical memory metrics
 * used by the graph.
 *
 * Logical plane: `memory` events (storage lifetimes keyed by (device, storage_id)).
 * Physical plane: `device_memory` samples. A plane without events is absent
 * (NULL here, omitted from the JSON), never zeros; an unobserved figure stays
 * unknown (omitted), never 0, and physical figures are never derived from
 * other measurements.
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
    bool present; /* the device holds at least one live storage (so it is a key of the map) */
} cg_device_live_change;

/* LogicalMemoryPoint. live_bytes_by_device is reconstructed by replaying the
 * changes [change_first, change_first+n_changes) of every point up to this one
 * (cg_logical_live_by_device does it). Both maps hold exactly the devices /
 * categories with at least one live storage at that point (no zero entries
 * invented for the others). */
typedef struct cg_logical_point {
    uint64_t timestamp_ns;
    uint64_t live_bytes;
    uint64_t live_bytes_by_category[CG_CAT_COUNT]; /* index = cg_category */
    uint8_t category_present;                       /* bit c: category c is a key of the map */
    size_t change_first, n_changes;
} cg_logical_point;

/* LogicalDeviceMemoryStats: every device with a memory event (a device that only
 * saw unmatched frees has zero counts and no peak). */
typedef struct cg_logical_device {
    const char *device;
    uint64_t storage_allocation_count, matched_storage_free_count, total_allocated_bytes;
    bool has_peak; /* false: no allocation observed on the device (peak omitted) */
    uint64_t peak_live_bytes, peak_timestamp_ns;
} cg_logical_device;

typedef struct cg_logical_memory {
    uint64_t storage_allocation_count, matched_storage_free_count, total_allocated_bytes;
    bool has_peak;     /* false: no allocation at all (the stream only held unmatched frees) */
    size_t peak_point; /* index into timeline of the peak: the first strict maximum among the
                          points at or after the first allocation */
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

/* Live bytes of the logical peak (false when the logical plane or its peak is absent). */
bool cg_memory_logical_peak(const cg_memory_profile *p, uint64_t *bytes, uint64_t *timestamp_ns);

/* Fills out[0..n_devices) with the live bytes per device at timeline point `point`
 * and seen[0..n_devices) with whether the device appears in that point's map. O(changes). */
void cg_logical_live_by_device(const cg_logical_memory *l, size_t point, uint64_t *out, bool *seen);

/* Per-span metrics (indexed like t->spans) for the graph (node_memory_metrics).
 * complete = the contract declares complete logical-memory coverage.
 * has_allocated: complete, or at least one lifetime was opened in the span;
 *   allocated_bytes is then the (saturating) sum of those lifetimes' bytes.
 * has_window: the span is closed and reachable from a root, and complete or at
 *   least one lifetime was opened in its subtree. Over the subtree lifetimes and
 *   the window [start, start+duration) (empty window: both 0), as the crate's
 *   clipped_lifetime_metrics walks it: peak_live_bytes = the largest running sum
 *   from the bytes live at the window start, through each timestamp strictly
 *   inside the window (its frees subtracted with saturation, then its
 *   allocations added; so a storage allocated and freed at one such timestamp
 *   can lift the sum); residual_bytes = the bytes of lifetimes with
 *   start < window end < end (an open lifetime ends at UINT64_MAX).
 * Under partial or undeclared coverage an unobserved span stays unknown, not 0.
 * Returns NULL when the logical plane is absent. O(n log^2 n) (small-to-large
 * over a segment tree of composed step maps); exact while byte sums stay below
 * 2^63. */
typedef struct cg_span_memory {
    bool has_allocated;
    uint64_t allocated_bytes;
    bool has_window;
    uint64_t peak_live_bytes, residual_bytes;
} cg_span_memory;
cg_span_memory *cg_memory_span_metrics(const cg_trace *t, const cg_memory_profile *p, cg_arena *a);

/* Per-op allocation attribution (indexed like t->ops): a lifetime with an
 * op_name attributes its bytes to the op of its allocation span carrying that
 * name when exactly one op of that span does; an ambiguous or unknown name
 * leaves it at span level only. has_allocated: at least one lifetime attributed.
 * Returns NULL when the logical plane is absent. O(n log n). */
typedef struct cg_op_memory {
    bool has_allocated;
    uint64_t allocated_bytes;
} cg_op_memory;
cg_op_memory *cg_memory_op_metrics(const cg_trace *t, const cg_memory_profile *p, cg_arena *a);

/* MemoryProfile JSON {logical?, physical?} (an absent plane is omitted), in the
 * crate's field order: logical {storage_allocation_count,
 * matched_storage_free_count, total_allocated_bytes, peak?, timeline, lifetimes,
 * by_device: [{device, ..., peak_live_bytes?, peak_timestamp_ns?}]}; physical
 * {timeline, by_device: [{device, ...}]}; a lifetime's op_name is null when absent;
 * the by-device / by-category maps have sorted keys. */
cg_jv *cg_memory_to_json(cg_arena *a, const cg_memory_profile *p);
/* The same value with lifetimes, peak live allocations and both timelines as
 * lazy arrays (json.h); p and its trace must outlive every use of the value. */
cg_jv *cg_memory_to_json_lazy(cg_arena *a, const cg_memory_profile *p);
cg_jv *cg_lifetime_to_json(cg_arena *a, const cg_lifetime *l);

#endif
