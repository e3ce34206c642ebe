/* Unit tests for the CUPTI decoder (agent/cupti/decoder.c): hand-built
 * activity records of every kind the decoder reads (CUDA 13 layouts), zero
 * timestamps, truncated buffers, truncated names, unknown kinds, out-of-order
 * buffers, and the device_interval records it produces through a real
 * capture session. No CUPTI library, no GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(CG_HAVE_CUPTI)
#include <cupti_activity.h>

#include "base/fs.h"
#include "capture/capture.h"
#include "decoder.h"
#include "trace/trace.h"
#include "test_tmpdir.h"

/* Aligned storage for one record of any kind. */
typedef union {
    CUpti_Activity a;
    CUpti_ActivityKernel10 k;
    CUpti_ActivityMemcpy6 mc;
    CUpti_ActivityMemcpyPtoP4 p2p;
    CUpti_ActivityMemset4 ms;
    CUpti_ActivityAPI api;
    CUpti_ActivityMarker2 marker;
    uint64_t raw[64];
} rec_t;

static rec_t kernel(uint32_t dev, uint32_t stream, uint32_t corr, uint64_t s, uint64_t e,
                    const char *name) {
    rec_t r;
    memset(&r, 0, sizeof r);
    r.k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    r.k.deviceId = dev;
    r.k.contextId = 1;
    r.k.streamId = stream;
    r.k.correlationId = corr;
    r.k.start = s;
    r.k.end = e;
    r.k.name = name;
    r.k.graphId = 3;
    r.k.graphNodeId = 42;
    return r;
}

static void test_kernel(void **st) {
    (void)st;
    rec_t r = kernel(1, 13, 77, 1000, 1250, "_Z3addPfS_");
    cg_cupti_event ev;
    cg_cupti_counts c = {0};
    assert_int_equal(cg_cupti_decode(&r, sizeof r.k, &ev, &c), CG_CUPTI_INTERVAL);
    assert_int_equal(ev.op, CG_CUPTI_OP_KERNEL);
    assert_int_equal(ev.device_id, 1);
    assert_int_equal(ev.stream_id, 13);
    assert_int_equal(ev.correlation_id, 77);
    assert_int_equal(ev.start_ns, 1000);
    assert_int_equal(ev.end_ns, 1250);
    assert_int_equal(ev.graph_id, 3);
    assert_int_equal(ev.graph_node_id, 42);
    assert_string_equal(ev.name, "_Z3addPfS_");
    assert_int_equal(ev.name_truncated, 0);
    assert_int_equal(c.intervals, 1);
    assert_int_equal(c.kernels, 1);
    /* serialized KERNEL kind uses the same struct */
    r.k.kind = CUPTI_ACTIVITY_KIND_KERNEL;
    assert_int_equal(cg_cupti_decode(&r, sizeof r.k, &ev, &c), CG_CUPTI_INTERVAL);
    assert_int_equal(c.kernels, 2);
    /* NULL name */
    r.k.name = NULL;
    assert_int_equal(cg_cupti_decode(&r, sizeof r.k, &ev, &c), CG_CUPTI_INTERVAL);
    assert_string_equal(ev.name, "");
    char dev[32], stream[32], clock[32];
    cg_cupti_event_device(&ev, dev);
    cg_cupti_event_stream(&ev, stream);
    cg_cupti_event_clock(&ev, clock);
    assert_string_equal(dev, "cuda:1");
    assert_string_equal(stream, "13");
    assert_string_equal(clock, "cupti-device-1");
}

static void test_copies_and_sets(void **st) {
    (void)st;
    cg_cupti_counts c = {0};
    cg_cupti_event ev;
    rec_t r;
    memset(&r, 0, sizeof r);
    r.mc.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    r.mc.deviceId = 0;
    r.mc.streamId = 7;
    r.mc.correlationId = 5;
    r.mc.bytes = 1 << 20;
    r.mc.start = 10;
    r.mc.end = 30;
    assert_int_equal(cg_cupti_decode(&r, sizeof r.mc, &ev, &c), CG_CUPTI_INTERVAL);
    assert_int_equal(ev.op, CG_CUPTI_OP_MEMCPY);
    assert_int_equal(ev.bytes, 1 << 20);
    assert_int_equal(ev.correlation_id, 5);

    memset(&r, 0, sizeof r);
    r.p2p.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    r.p2p.deviceId = 2;
    r.p2p.srcDeviceId = 2;
    r.p2p.dstDeviceId = 3;
    r.p2p.streamId = 9;
    r.p2p.correlationId = 6;
    r.p2p.start = 100;
    r.p2p.end = 160;
    assert_int_equal(cg_cupti_decode(&r, sizeof r.p2p, &ev, &c), CG_CUPTI_INTERVAL);
    assert_int_equal(ev.op, CG_CUPTI_OP_MEMCPY);
    assert_int_equal(ev.device_id, 2);
    assert_int_equal(ev.correlation_id, 6);

    memset(&r, 0, sizeof r);
    r.ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    r.ms.deviceId = 0;
    r.ms.streamId = 7;
    r.ms.correlationId = 8;
    r.ms.bytes = 512;
    r.ms.start = 200;
    r.ms.end = 201;
    assert_int_equal(cg_cupti_decode(&r, sizeof r.ms, &ev, &c), CG_CUPTI_INTERVAL);
    assert_int_equal(ev.op, CG_CUPTI_OP_MEMSET);
    assert_int_equal(ev.bytes, 512);
    assert_int_equal(c.memcpys, 2);
    assert_int_equal(c.memsets, 1);
    assert_int_equal(c.intervals, 3);
}

static void test_untimed(void **st) {
    (void)st;
    cg_cupti_counts c = {0};
    cg_cupti_event ev;
    rec_t r = kernel(0, 1, 1, 0, 0, "k"); /* CUPTI could not time it */
    assert_int_equal(cg_cupti_decode(&r, sizeof r.k, &ev, &c), CG_CUPTI_UNTIMED);
    r = kernel(0, 1, 1, 500, 500, "k"); /* zero duration */
    assert_int_equal(cg_cupti_decode(&r, sizeof r.k, &ev, &c), CG_CUPTI_UNTIMED);
    r = kernel(0, 1, 1, 500, 400, "k"); /* end before start */
    assert_int_equal(cg_cupti_decode(&r, sizeof r.k, &ev, &c), CG_CUPTI_UNTIMED);
    assert_int_equal(c.untimed, 3);
    assert_int_equal(c.intervals, 0);
}

static void test_ignored_unknown_truncated(void **st) {
    (void)st;
    cg_cupti_counts c = {0};
    cg_cupti_event ev;
    rec_t r;
    memset(&r, 0, sizeof r);
    r.api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    r.api.correlationId = 4;
    assert_int_equal(cg_cupti_decode(&r, sizeof r.api, &ev, &c), CG_CUPTI_IGNORED);
    memset(&r, 0, sizeof r);
    r.marker.kind = CUPTI_ACTIVITY_KIND_MARKER;
    assert_int_equal(cg_cupti_decode(&r, sizeof r.marker, &ev, &c), CG_CUPTI_IGNORED);
    memset(&r, 0, sizeof r);
    r.a.kind = CUPTI_ACTIVITY_KIND_DEVICE; /* known, no size table entry */
    assert_int_equal(cg_cupti_decode(&r, sizeof r.a, &ev, &c), CG_CUPTI_IGNORED);
    assert_int_equal(c.ignored, 3);

    memset(&r, 0, sizeof r);
    r.a.kind = (CUpti_ActivityKind)(CUPTI_ACTIVITY_KIND_COUNT + 5); /* from a newer CUPTI */
    assert_int_equal(cg_cupti_decode(&r, sizeof r, &ev, &c), CG_CUPTI_UNKNOWN);
    r.a.kind = CUPTI_ACTIVITY_KIND_INVALID;
    assert_int_equal(cg_cupti_decode(&r, sizeof r, &ev, &c), CG_CUPTI_UNKNOWN);
    assert_int_equal(c.unknown, 2);

    /* A kernel record cut by the end of the valid bytes is never read past it. */
    r = kernel(0, 1, 1, 10, 20, "k");
    assert_int_equal(cg_cupti_decode(&r, sizeof r.k - 8, &ev, &c), CG_CUPTI_TRUNCATED);
    assert_int_equal(cg_cupti_decode(&r, 2, &ev, &c), CG_CUPTI_TRUNCATED);
    assert_int_equal(cg_cupti_decode(NULL, 0, &ev, &c), CG_CUPTI_TRUNCATED);
    assert_int_equal(c.truncated, 3);
    assert_int_equal(c.intervals, 0);
}

static void test_truncated_name(void **st) {
    (void)st;
    char longname[400];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    cg_cupti_event ev;
    rec_t r = kernel(0, 1, 1, 10, 20, longname);
    assert_int_equal(cg_cupti_decode(&r, sizeof r.k, &ev, NULL), CG_CUPTI_INTERVAL);
    assert_int_equal(ev.name_truncated, 1);
    assert_int_equal(strlen(ev.name), CG_CUPTI_NAME_MAX - 1);
    /* exactly the maximum that fits */
    longname[CG_CUPTI_NAME_MAX - 1] = '\0';
    assert_int_equal(cg_cupti_decode(&r, sizeof r.k, &ev, NULL), CG_CUPTI_INTERVAL);
    assert_int_equal(ev.name_truncated, 0);
    assert_string_equal(ev.name, longname);
    /* The name is copied: CUPTI may reuse its string after the callback. */
    longname[0] = 'y';
    assert_int_equal(ev.name[0], 'x');
}

/* ---- queue + trace records ------------------------------------------- */
typedef struct {
    cg_span_id map[16]; /* correlation id → span */
} resolver;

static cg_span_id resolve(void *ctx, uint32_t corr) {
    resolver *r = ctx;
    return corr < 16 ? r->map[corr] : 0;
}

typedef struct {
    cg_session *s;
    size_t n;
    uint64_t starts[16];
    int stop_after;
} sink;

static int emit(void *ctx, cg_span_id span, const cg_device_interval_record *rec,
                const cg_cupti_event *ev) {
    (void)ev;
    sink *k = ctx;
    if (k->stop_after && (int)k->n == k->stop_after) return 1;
    k->starts[k->n++] = rec->start_ns;
    cg_error err;
    if (cg_session_record_device_interval(k->s, span, rec, &err) != 0) fail_msg("%s", err.msg);
    return 0;
}

static void push_buffer(cg_cupti_queue *q, rec_t *recs, size_t n) {
    for (size_t i = 0; i < n; i++) {
        cg_cupti_event ev;
        if (cg_cupti_decode(&recs[i], sizeof recs[i], &ev, NULL) == CG_CUPTI_INTERVAL)
            assert_int_equal(cg_cupti_queue_push(q, &ev), 0);
    }
}

static void test_out_of_order_buffers_to_trace(void **st) {
    (void)st;
    char dir[200];
    assert_int_equal(test_tmpdir_in(dir, sizeof dir, "cupti-dec"), 0);
    char path[256];
    snprintf(path, sizeof path, "%s/trace.jsonl", dir);
    cg_profile_run *run = cg_profile_run_training("train", 1, "cuda:0");
    cg_error err;
    cg_session *s = cg_session_open(path, run, &err);
    assert_non_null(s);
    cg_profile_run_free(run);
    cg_span_id fwd, bwd;
    assert_int_equal(cg_session_begin_measurement(s, "step", &fwd, &err), 0);
    assert_int_equal(cg_session_begin_span(s, "backward", CG_SPAN_FUNCTION, &bwd, &err), 0);
    assert_int_equal(cg_session_end_span(s, bwd, &err), 0);
    assert_int_equal(cg_session_end_span(s, fwd, &err), 0);

    resolver r = {{0}};
    r.map[1] = fwd;
    r.map[2] = bwd;
    r.map[3] = bwd; /* corr 4 has no API record: root */

    /* Buffer B (later work, thread 2) completes before buffer A. */
    rec_t b[2] = {kernel(0, 8, 3, 5000, 5400, "late"), kernel(1, 2, 4, 100, 150, "other_dev")};
    rec_t a[3] = {kernel(0, 7, 1, 1000, 1500, "first"), kernel(0, 7, 2, 3000, 3100, "second"),
                  kernel(0, 7, 2, 0, 0, "untimed")};
    cg_cupti_queue q;
    cg_cupti_queue_init(&q, 0);
    push_buffer(&q, b, 2);
    push_buffer(&q, a, 3);
    assert_int_equal(q.n, 4);
    sink k = {.s = s, .stop_after = 2};
    assert_int_equal(cg_cupti_queue_drain(&q, resolve, &r, emit, &k), 2); /* emit stops */
    assert_int_equal(q.n, 2);
    k.stop_after = 0;
    assert_int_equal(cg_cupti_queue_drain(&q, resolve, &r, emit, &k), 2);
    assert_int_equal(q.n, 0);
    /* sorted by device, then start */
    assert_int_equal(k.starts[0], 1000);
    assert_int_equal(k.starts[1], 3000);
    assert_int_equal(k.starts[2], 5000);
    assert_int_equal(k.starts[3], 100);
    cg_cupti_queue_free(&q);
    assert_int_equal(cg_session_finish(s, &err), 0);
    cg_session_free(s);

    cg_trace *t = cg_trace_read_file(path, NULL, &err);
    if (!t) fail_msg("%s", err.msg);
    assert_int_equal(t->n_device_intervals, 4);
    const char *want_span[4] = {"s2", "s3", "s3", "s1"}; /* corr 4: no API record → root */
    const char *want_dev[4] = {"cuda:0", "cuda:0", "cuda:0", "cuda:1"};
    const char *want_stream[4] = {"7", "7", "8", "2"};
    uint64_t want_dur[4] = {500, 100, 400, 50};
    for (size_t i = 0; i < 4; i++) {
        const cg_device_interval *d = &t->device_intervals[i];
        assert_string_equal(d->span_id, want_span[i]);
        assert_string_equal(d->device, want_dev[i]);
        assert_string_equal(d->stream_id, want_stream[i]);
        assert_string_equal(d->backend, "cupti");
        assert_int_equal(d->duration_ns, want_dur[i]);
    }
    assert_string_equal(t->device_intervals[3].clock_id, "cupti-device-1");
    assert_string_equal(t->device_intervals[0].clock_id, "cupti-device-0");
    cg_trace_free(t);
    cg_rm_rf(dir);
}

static void test_queue_bound(void **st) {
    (void)st;
    cg_cupti_queue q;
    cg_cupti_queue_init(&q, 2);
    cg_cupti_event ev;
    rec_t r = kernel(0, 1, 1, 1, 2, "k");
    assert_int_equal(cg_cupti_decode(&r, sizeof r.k, &ev, NULL), CG_CUPTI_INTERVAL);
    assert_int_equal(cg_cupti_queue_push(&q, &ev), 0);
    assert_int_equal(cg_cupti_queue_push(&q, &ev), 0);
    assert_int_equal(cg_cupti_queue_push(&q, &ev), -1); /* full: the caller counts a drop */
    cg_cupti_queue_free(&q);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernel),
        cmocka_unit_test(test_copies_and_sets),
        cmocka_unit_test(test_untimed),
        cmocka_unit_test(test_ignored_unknown_truncated),
        cmocka_unit_test(test_truncated_name),
        cmocka_unit_test(test_out_of_order_buffers_to_trace),
        cmocka_unit_test(test_queue_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
static void test_no_cupti(void **st) {
    (void)st;
    skip(); /* CUPTI headers absent: agent/cupti is not built (see CMake message) */
}
int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_no_cupti)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
