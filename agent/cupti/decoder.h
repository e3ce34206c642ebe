/* decoder.h — turns CUPTI activity records into device intervals.
 *
 * Pure code: needs the CUPTI *headers* only (the struct layouts of CUDA 13:
 * CUpti_ActivityKernel10, CUpti_ActivityMemcpy6, CUpti_ActivityMemcpyPtoP4,
 * CUpti_ActivityMemset4) and never calls a CUPTI or CUDA function, so it is
 * testable on a machine without a GPU (tests/unit/test_cupti_decoder.c).
 * The collector (collector.c) walks CUPTI buffers and hands each record here.
 *
 * Records
 *   cg_cupti_decode reads one record. Kernels (KERNEL, CONCURRENT_KERNEL),
 *   memcpy (MEMCPY, MEMCPY2 peer-to-peer) and memset become intervals;
 *   records with both timestamps 0 or end <= start are "untimed" (CUPTI could
 *   not time them: counted, never given a made-up duration); the other known
 *   kinds (API, marker, memory, overhead, ...) are "ignored"; a kind this code
 *   does not know is "unknown"; a record that does not fit in the bytes that
 *   remain in the buffer is "truncated" and nothing of it is read past `avail`.
 *   Names (kernel names) are copied at once into the event (CUPTI owns the
 *   original string), cut at CG_CUPTI_NAME_MAX-1 bytes with name_truncated set.
 *
 * Queue
 *   Buffers complete in any order and each holds one thread's records, so
 *   intervals are collected in a cg_cupti_queue and emitted sorted by (device,
 *   start, end, stream, correlation id). Each emitted interval carries the
 *   span returned by the caller's resolver for its correlation id.
 *   Wire values: device "cuda:{deviceId}", stream_id "{streamId}", clock_id
 *   "cupti-device-{deviceId}" (one CUPTI device clock per device), backend
 *   "cupti".
 *
 * Ownership / threads: a queue owns its events; it is not thread-safe (the
 * collector guards it with its own mutex). Allocation failure is reported by
 * cg_cupti_queue_push returning -1 (the event is counted as dropped). */
#ifndef CG_CUPTI_DECODER_H
#define CG_CUPTI_DECODER_H

#include <stddef.h>
#include <stdint.h>

#include "capture/capture.h"

#define CG_CUPTI_NAME_MAX 128
#define CG_CUPTI_BACKEND "cupti"

typedef enum cg_cupti_result {
    CG_CUPTI_INTERVAL = 0, /* out is a timed kernel/memcpy/memset */
    CG_CUPTI_UNTIMED,      /* interval kind without usable timestamps */
    CG_CUPTI_IGNORED,      /* known kind that is not a device interval */
    CG_CUPTI_UNKNOWN,      /* kind this decoder does not know */
    CG_CUPTI_TRUNCATED     /* record larger than the bytes available */
} cg_cupti_result;

typedef enum cg_cupti_op {
    CG_CUPTI_OP_KERNEL = 0,
    CG_CUPTI_OP_MEMCPY,
    CG_CUPTI_OP_MEMSET
} cg_cupti_op;

typedef struct cg_cupti_event {
    cg_cupti_op op;
    uint32_t kind;             /* CUpti_ActivityKind of the record */
    uint32_t device_id, context_id, stream_id, correlation_id;
    uint64_t start_ns, end_ns; /* CUPTI device clock */
    uint64_t bytes;            /* memcpy/memset bytes; 0 for kernels */
    uint32_t graph_id;
    uint64_t graph_node_id;
    char name[CG_CUPTI_NAME_MAX]; /* kernel name (mangled), "" for copies */
    int name_truncated;
} cg_cupti_event;

typedef struct cg_cupti_counts {
    uint64_t intervals, untimed, ignored, unknown, truncated;
    uint64_t kernels, memcpys, memsets;
} cg_cupti_counts;

/* Decodes the record at `record` (8-byte aligned, `avail` bytes readable).
 * On CG_CUPTI_INTERVAL and CG_CUPTI_UNTIMED `out` is filled; otherwise it is
 * zeroed. `counts` (may be NULL) is incremented for the result. */
cg_cupti_result cg_cupti_decode(const void *record, size_t avail, cg_cupti_event *out,
                                cg_cupti_counts *counts);

/* Size in bytes of the record struct of `kind`, 0 when unknown. */
size_t cg_cupti_record_size(uint32_t kind);

typedef struct cg_cupti_queue {
    cg_cupti_event *ev;
    size_t n, cap;
    size_t max_events; /* 0 = unbounded; beyond it pushes fail (dropped) */
} cg_cupti_queue;

void cg_cupti_queue_init(cg_cupti_queue *q, size_t max_events);
void cg_cupti_queue_free(cg_cupti_queue *q);
/* Copies ev into the queue: 0, or -1 when full / out of memory. */
int cg_cupti_queue_push(cg_cupti_queue *q, const cg_cupti_event *ev);

/* Maps a correlation id to the span that launched it (the root when unknown). */
typedef cg_span_id (*cg_cupti_resolve_fn)(void *ctx, uint32_t correlation_id);
/* Receives one interval; the strings in rec are valid during the call only.
 * A non-zero return stops the drain (the rest stays queued). */
typedef int (*cg_cupti_emit_fn)(void *ctx, cg_span_id span, const cg_device_interval_record *rec,
                                const cg_cupti_event *ev);

/* Sorts the queued events and emits them in order; emitted events leave the
 * queue. Returns the number emitted. */
size_t cg_cupti_queue_drain(cg_cupti_queue *q, cg_cupti_resolve_fn resolve, void *rctx,
                            cg_cupti_emit_fn emit, void *ectx);

/* Wire strings of an event (out buffers of 32 bytes). */
void cg_cupti_event_device(const cg_cupti_event *ev, char out[32]);
void cg_cupti_event_stream(const cg_cupti_event *ev, char out[32]);
void cg_cupti_event_clock(const cg_cupti_event *ev, char out[32]);

#endif
