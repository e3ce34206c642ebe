/* decoder.c — CUPTI activity records → device intervals (see decoder.h).
 * Headers only: no CUPTI or CUDA function is called here. */
#include "decoder.h"
#include "base/alloc.h"

#include <cupti_activity.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Memcpy6, MemcpyPtoP4 and Memset4 are distinct record types whose shared fields
 * have the same names: one field mapping for all three. */
#define COPY_TRANSFER_FIELDS(out, m)                \
    do {                                            \
        (out)->device_id = (m)->deviceId;           \
        (out)->context_id = (m)->contextId;         \
        (out)->stream_id = (m)->streamId;           \
        (out)->correlation_id = (m)->correlationId; \
        (out)->start_ns = (m)->start;               \
        (out)->end_ns = (m)->end;                   \
        (out)->bytes = (m)->bytes;                  \
        (out)->graph_id = (m)->graphId;             \
        (out)->graph_node_id = (m)->graphNodeId;    \
    } while (0)

/* The layouts this decoder reads (CUDA 13.0 headers, LIBRARIES.md §8.1): a
 * header upgrade that moves these fields fails the build instead of reading
 * the wrong bytes. */
_Static_assert(offsetof(CUpti_ActivityKernel10, start) == 16, "Kernel10.start moved");
_Static_assert(offsetof(CUpti_ActivityKernel10, correlationId) == 92,
               "Kernel10.correlationId moved");
_Static_assert(offsetof(CUpti_ActivityKernel10, name) == 104, "Kernel10.name moved");

size_t cg_cupti_record_size(uint32_t kind) {
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(CUpti_ActivityMemcpyPtoP4);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_MEMORY2: return sizeof(CUpti_ActivityMemory4);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_MARKER: return sizeof(CUpti_ActivityMarker2);
    case CUPTI_ACTIVITY_KIND_MARKER_DATA: return sizeof(CUpti_ActivityMarkerData2);
    case CUPTI_ACTIVITY_KIND_NAME: return sizeof(CUpti_ActivityName);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
        return sizeof(CUpti_ActivityExternalCorrelation);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return sizeof(CUpti_ActivityOverhead3);
    default: return 0;
    }
}

static void copy_name(cg_cupti_event *out, const char *name) {
    out->name[0] = '\0';
    out->name_truncated = 0;
    if (!name) return;
    size_t n = strnlen(name, CG_CUPTI_NAME_MAX);
    if (n >= CG_CUPTI_NAME_MAX) {
        n = CG_CUPTI_NAME_MAX - 1;
        out->name_truncated = 1;
    }
    memcpy(out->name, name, n);
    out->name[n] = '\0';
}

static cg_cupti_result finish(cg_cupti_event *out, cg_cupti_counts *counts) {
    /* CUPTI: "A value of 0 for both the start and end timestamps indicates
     * that timestamp information could not be collected". end <= start cannot
     * make a positive duration either. */
    bool timed = !(out->start_ns == 0 && out->end_ns == 0) && out->end_ns > out->start_ns;
    if (counts) {
        if (timed) counts->intervals++;
        else counts->untimed++;
        if (out->op == CG_CUPTI_OP_KERNEL) counts->kernels++;
        else if (out->op == CG_CUPTI_OP_MEMCPY) counts->memcpys++;
        else counts->memsets++;
    }
    return timed ? CG_CUPTI_INTERVAL : CG_CUPTI_UNTIMED;
}

cg_cupti_result cg_cupti_decode(const void *record, size_t avail, cg_cupti_event *out,
                                cg_cupti_counts *counts) {
    memset(out, 0, sizeof *out);
    if (!record || avail < sizeof(CUpti_Activity)) {
        if (counts) counts->truncated++;
        return CG_CUPTI_TRUNCATED;
    }
    uint32_t kind = (uint32_t)((const CUpti_Activity *)record)->kind;
    size_t need = cg_cupti_record_size(kind);
    if (need == 0) {
        if (kind == CUPTI_ACTIVITY_KIND_INVALID || kind >= CUPTI_ACTIVITY_KIND_COUNT) {
            if (counts) counts->unknown++;
            return CG_CUPTI_UNKNOWN;
        }
        if (counts) counts->ignored++;
        return CG_CUPTI_IGNORED;
    }
    if (avail < need) {
        if (counts) counts->truncated++;
        return CG_CUPTI_TRUNCATED;
    }
    out->kind = kind;
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const CUpti_ActivityKernel10 *k = record;
        out->op = CG_CUPTI_OP_KERNEL;
        out->device_id = k->deviceId;
        out->context_id = k->contextId;
        out->stream_id = k->streamId;
        out->correlation_id = k->correlationId;
        out->start_ns = k->start;
        out->end_ns = k->end;
        out->graph_id = k->graphId;
        out->graph_node_id = k->graphNodeId;
        copy_name(out, k->name);
        return finish(out, counts);
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = record;
        out->op = CG_CUPTI_OP_MEMCPY;
        COPY_TRANSFER_FIELDS(out, m);
        return finish(out, counts);
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
        const CUpti_ActivityMemcpyPtoP4 *m = record;
        out->op = CG_CUPTI_OP_MEMCPY;
        COPY_TRANSFER_FIELDS(out, m);
        return finish(out, counts);
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = record;
        out->op = CG_CUPTI_OP_MEMSET;
        COPY_TRANSFER_FIELDS(out, m);
        return finish(out, counts);
    }
    default:
        memset(out, 0, sizeof *out);
        if (counts) counts->ignored++;
        return CG_CUPTI_IGNORED;
    }
}

void cg_cupti_queue_init(cg_cupti_queue *q, size_t max_events) {
    memset(q, 0, sizeof *q);
    q->max_events = max_events;
}

void cg_cupti_queue_free(cg_cupti_queue *q) {
    cg_free(q->ev);
    memset(q, 0, sizeof *q);
}

int cg_cupti_queue_push(cg_cupti_queue *q, const cg_cupti_event *ev) {
    if (q->max_events && q->n >= q->max_events) return -1;
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 256;
        if (q->max_events && cap > q->max_events) cap = q->max_events;
        cg_cupti_event *p = cg_try_realloc(q->ev, cap, sizeof *p);
        if (!p) return -1;
        q->ev = p;
        q->cap = cap;
    }
    q->ev[q->n++] = *ev;
    return 0;
}

static int cmp_u64(uint64_t a, uint64_t b) { return a < b ? -1 : a > b; }

static int event_cmp(const void *pa, const void *pb) {
    const cg_cupti_event *a = pa, *b = pb;
    int c;
    if ((c = cmp_u64(a->device_id, b->device_id))) return c;
    if ((c = cmp_u64(a->start_ns, b->start_ns))) return c;
    if ((c = cmp_u64(a->end_ns, b->end_ns))) return c;
    if ((c = cmp_u64(a->stream_id, b->stream_id))) return c;
    return cmp_u64(a->correlation_id, b->correlation_id);
}

void cg_cupti_event_device(const cg_cupti_event *ev, char out[32]) {
    snprintf(out, 32, "cuda:%u", (unsigned)ev->device_id);
}
void cg_cupti_event_stream(const cg_cupti_event *ev, char out[32]) {
    snprintf(out, 32, "%u", (unsigned)ev->stream_id);
}
void cg_cupti_event_clock(const cg_cupti_event *ev, char out[32]) {
    snprintf(out, 32, "cupti-device-%u", (unsigned)ev->device_id);
}

size_t cg_cupti_queue_drain(cg_cupti_queue *q, cg_cupti_resolve_fn resolve, void *rctx,
                            cg_cupti_emit_fn emit, void *ectx) {
    if (q->n == 0) return 0;
    qsort(q->ev, q->n, sizeof *q->ev, event_cmp);
    size_t done = 0;
    for (; done < q->n; done++) {
        const cg_cupti_event *ev = &q->ev[done];
        char dev[32], stream[32], clock[32];
        cg_cupti_event_device(ev, dev);
        cg_cupti_event_stream(ev, stream);
        cg_cupti_event_clock(ev, clock);
        cg_device_interval_record rec = {
            .device = dev, .stream_id = stream, .clock_id = clock, .backend = CG_CUPTI_BACKEND,
            .start_ns = ev->start_ns, .duration_ns = ev->end_ns - ev->start_ns};
        cg_span_id span = resolve ? resolve(rctx, ev->correlation_id) : CG_SPAN_ROOT;
        if (span == 0) span = CG_SPAN_ROOT;
        if (emit(ectx, span, &rec, ev) != 0) break;
    }
    memmove(q->ev, q->ev + done, (q->n - done) * sizeof *q->ev);
    q->n -= done;
    return done;
}
