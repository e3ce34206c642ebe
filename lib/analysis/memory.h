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
 * Limits: fewer than 2^31 memory events (more exits as out of memory);
 * O(n log n) time in the number of events. Held memory: 16 bytes per
 * timeline point, 4 bytes and a bit per event (its effect, the group starts),
 * 20 bytes per lifetime and 4 per tensor id;
 * the by-device / by-category maps are replayed, never stored per point.
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

/* LogicalStorageLifetime, stored compactly: the opening alloc and the matching
 * free are events of the trace (indices into t->memory), and the tensor ids
 * (opening tensor, aliases, freeing tensor; sorted, deduplicated) are the
 * tensor_id of the events tensor_ev[ids_first, ids_first + n_ids). */
#define CG_LIFETIME_RETAINED UINT32_MAX
typedef struct cg_lifetime_rec {
    uint32_t open;  /* the opening alloc: device, storage_id, span, op_name, bytes, shape, dtype,
                       category and start timestamp are its fields */
    uint32_t close; /* the matching free (its timestamp is the end), CG_LIFETIME_RETAINED while retained */
    uint32_t device; /* index into cg_logical_memory.devices */
    uint32_t ids_first, n_ids;
} cg_lifetime_rec;

/* A lifetime's fields as the crate names them (cg_logical_lifetime builds it). */
typedef struct cg_lifetime {
    const char *device, *storage_id, *allocation_span_id;
    const char *op_name; /* NULL when the opening alloc had none */
    uint64_t bytes;
    const cg_shape *shape;
    const char *dtype;
    cg_category category;
    uint64_t start_timestamp_ns;
    bool has_end; /* false while retained */
    uint64_t end_timestamp_ns;
    size_t n_tensor_ids;
} cg_lifetime;

/* LogicalMemoryPoint: one per group of events of equal timestamp, in order (the
 * group of point p starts at the p-th set bit of cg_logical_memory.group_start
 * in the (timestamp, document index) order of the events). Its
 * live_bytes_by_device / live_bytes_by_category maps are rebuilt by replaying
 * the effects of every event up to it (the JSON writer does it in one pass;
 * cg_logical_live_by_device for one point). Both maps hold exactly the devices /
 * categories with at least one live storage at that point. */
typedef struct cg_logical_point {
    uint64_t timestamp_ns;
    uint64_t live_bytes;
} cg_logical_point;

/* LogicalDeviceMemoryStats: every device with a memory event (a device that only
 * saw unmatched frees has zero counts and no peak). */
typedef struct cg_logical_device {
    const char *device;
    uint64_t storage_allocation_count, matched_storage_free_count, total_allocated_bytes;
    bool has_peak; /* false: no allocation observed on the device (peak omitted) */
    uint64_t peak_live_bytes, peak_timestamp_ns;
} cg_logical_device;

/* effects[i], for the i-th event in (timestamp, document index) order: 2 k when it
 * opens lifetimes[k], 2 k + 1 when it closes it, CG_EFFECT_NONE when it changes
 * nothing (an alias alloc of a live storage, an unmatched free). */
#define CG_EFFECT_NONE UINT32_MAX

typedef struct cg_logical_memory {
    const cg_trace *trace; /* the events the records index */
    uint64_t storage_allocation_count, matched_storage_free_count, total_allocated_bytes;
    bool has_peak;     /* false: no allocation at all (the stream only held unmatched frees) */
    size_t peak_point; /* index into timeline of the peak: the first strict maximum among the
                          points at or after the first allocation */
    cg_lifetime_rec *peak_live_allocations; size_t n_peak_live_allocations; /* snapshot at the peak:
                          sorted by (start, device, storage_id), close RETAINED, aliases so far */
    cg_logical_device *devices; size_t n_devices; /* sorted by device */
    cg_lifetime_rec *lifetimes; size_t n_lifetimes; /* sorted by (start, device, storage_id) */
    uint32_t *tensor_ev;                           /* tensor ids of lifetimes and snapshot */
    cg_logical_point *timeline; size_t n_timeline;
    uint32_t *effects; size_t n_effects;           /* one per memory event */
    uint64_t *group_start;                         /* bit i: event i of the order opens a point */
} cg_logical_memory;

/* The fields of record r (a lifetime or a peak snapshot entry) and its i-th tensor id. */
cg_lifetime cg_logical_lifetime(const cg_logical_memory *l, const cg_lifetime_rec *r);
const char *cg_logical_tensor_id(const cg_logical_memory *l, const cg_lifetime_rec *r, size_t i);

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
 * and seen[0..n_devices) with whether the device appears in that point's map.
 * O(events up to the point). */
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
 * over a segment tree of composed step maps; subtrees of at most 32 lifetimes
 * are walked directly); exact while byte sums stay below 2^63. Scratch, freed
 * before returning: about 64 bytes per distinct lifetime timestamp (the tree,
 * only when some subtree is larger) and 24 per lifetime. */
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

#endif
