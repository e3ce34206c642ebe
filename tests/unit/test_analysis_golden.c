/* Targeted analysis tests: the spec's golden numbers (§6–8, §15), refusals,
 * edge order, rankings and tie-breaks, per-span clipping, deep nesting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/graph.h"
#include "analysis/memory.h"
#include "analysis/timing.h"
#include "base/fs.h"
#include "trace/health.h"

#define META                                                                                          \
    "{\"kind\":\"meta\",\"schema\":\"candle-graph/trace/10\",\"run_id\":\"r\",\"correlation_id\":\"c\"," \
    "\"entrypoint\":\"app\",\"phase\":\"infer\",\"timestamp\":\"2026-09-01T12:00:00.000Z\","           \
    "\"capture_step\":1,\"warmup_steps\":0,\"device\":\"cuda:0\",\"timing_mode\":\"host\","            \
    "\"capture_contract\":{\"measurement_scope\":\"profiled_work\",\"operations\":\"partial\","        \
    "\"logical_memory\":\"partial\",\"physical_memory\":\"partial\",\"device_timing\":\"none\"},"      \
    "\"tags\":{}}\n"

/* META declaring complete logical-memory coverage */
#define META_COMPLETE_MEMORY                                                                          \
    "{\"kind\":\"meta\",\"schema\":\"candle-graph/trace/10\",\"run_id\":\"r\",\"correlation_id\":\"c\"," \
    "\"entrypoint\":\"app\",\"phase\":\"infer\",\"timestamp\":\"2026-09-01T12:00:00.000Z\","           \
    "\"capture_step\":1,\"warmup_steps\":0,\"device\":\"cuda:0\",\"timing_mode\":\"host\","            \
    "\"capture_contract\":{\"measurement_scope\":\"profiled_work\",\"operations\":\"partial\","        \
    "\"logical_memory\":\"complete\",\"physical_memory\":\"partial\",\"device_timing\":\"none\"},"     \
    "\"tags\":{}}\n"

static cg_trace *parse(const char *text) {
    cg_error err;
    cg_err_clear(&err);
    cg_trace *t = cg_trace_read_mem(text, strlen(text), "test.jsonl", NULL, &err);
    if (!t) fail_msg("parse: %s", err.msg);
    return t;
}

static cg_trace *fixture_trace(const char *name) {
    const char *dir = getenv("CG_FIXTURES");
    char path[4096];
    snprintf(path, sizeof path, "%s/analysis/%s/trace.jsonl", dir ? dir : "fixtures", name);
    cg_error err;
    cg_trace *t = cg_trace_read_file(path, NULL, &err);
    if (!t) fail_msg("%s: %s", path, err.msg);
    return t;
}

typedef struct built {
    cg_trace *t;
    cg_health *h;
    cg_arena a;
    cg_graph *g;
    cg_error err;
} built;

static void build(built *b, cg_trace *t) {
    b->t = t;
    b->h = cg_health_analyze(t);
    cg_arena_init(&b->a, 0);
    cg_err_clear(&b->err);
    b->g = cg_graph_build(t, b->h, &b->a, &b->err);
}

static void unbuild(built *b) {
    cg_arena_free(&b->a);
    cg_health_free(b->h);
    cg_trace_free(b->t);
}

/* A view of node id; the last 4 views stay valid (their ids live in a static arena). */
static const cg_graph_node *node(const cg_graph *g, const char *id) {
    static cg_graph_node ring[4];
    static unsigned next;
    static cg_arena ids;
    static bool ids_ready;
    if (!ids_ready) cg_arena_init(&ids, 0), ids_ready = true;
    size_t i = cg_graph_find_node(g, id);
    if (i == CG_GRAPH_NONE) fail_msg("no node %s", id);
    cg_graph_node *n = &ring[next++ % 4];
    cg_graph_node_view(g, i, &ids, n);
    assert_string_equal(n->id, id);
    return n;
}

static cg_graph_edge edge(const cg_graph *g, size_t i, cg_arena *a) {
    cg_graph_edge e;
    cg_graph_edge_view(g, i, a, &e);
    return e;
}

/* ---- §7 union ---- */

static void test_union_length(void **st) {
    (void)st;
    cg_interval iv[] = {{30, 35}, {0, 10}, {5, 20}};
    assert_int_equal(cg_union_length(iv, 3), 25);
    cg_interval touch[] = {{10, 20}, {0, 10}};
    assert_int_equal(cg_union_length(touch, 2), 20);
    cg_interval gap[] = {{0, 10}, {11, 20}};
    assert_int_equal(cg_union_length(gap, 2), 19);
    assert_int_equal(cg_union_length(NULL, 0), 0);
    cg_interval inverted[] = {{50, 40}};
    assert_int_equal(cg_union_length(inverted, 1), 0);
    cg_interval big = cg_interval_of(UINT64_MAX - 5, 100);
    assert_true(big.end_ns == UINT64_MAX);
    cg_interval whole[] = {cg_interval_of(0, UINT64_MAX), cg_interval_of(7, UINT64_MAX)};
    assert_true(cg_union_length(whole, 2) == UINT64_MAX);
    cg_interval nested[] = {{0, 100}, {10, 20}, {30, 40}};
    assert_int_equal(cg_union_length(nested, 3), 100);
}

/* ---- §8 logical memory ---- */

#define SPANS_0_100                                                                                     \
    "{\"kind\":\"span_start\",\"id\":\"s1\",\"name\":\"app\",\"start_ns\":0,\"span_kind\":\"function\"}\n" \
    "{\"kind\":\"span_start\",\"id\":\"s2\",\"parent_id\":\"s1\",\"name\":\"m\",\"start_ns\":0,"         \
    "\"span_kind\":\"function\",\"measured\":true}\n"                                                   \
    "{\"kind\":\"span_end\",\"id\":\"s2\",\"duration_ns\":100}\n"                                       \
    "{\"kind\":\"span_end\",\"id\":\"s1\",\"duration_ns\":100}\n"
#define TERMINAL_100 "{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":100}\n"
#define MEM(ts, st, dev, bytes, action)                                                                \
    "{\"kind\":\"memory\",\"timestamp_ns\":" #ts ",\"storage_id\":\"" st "\",\"tensor_id\":\"t-" st    \
    "\",\"span_id\":\"s2\",\"device\":\"" dev "\",\"bytes\":" #bytes ",\"action\":\"" action           \
    "\",\"dtype\":\"u8\"}\n"

static void test_peak_is_simultaneous_sum(void **st) {
    (void)st;
    cg_trace *t = parse(META SPANS_0_100 MEM(10, "a", "cpu", 40, "alloc") MEM(20, "b", "cpu", 70, "alloc")
                            MEM(30, "a", "cpu", 40, "free") TERMINAL_100);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_memory_profile *p = cg_memory_analyze(t, &a);
    assert_non_null(p->logical);
    assert_null(p->physical);
    uint64_t bytes = 0, ts = 0;
    assert_true(cg_memory_logical_peak(p, &bytes, &ts));
    assert_int_equal(bytes, 110);
    assert_int_equal(ts, 20);
    assert_int_equal(p->logical->n_timeline, 3);
    assert_int_equal(p->logical->timeline[2].live_bytes, 70);
    assert_int_equal(p->logical->n_peak_live_allocations, 2);
    assert_int_equal(p->logical->storage_allocation_count, 2);
    assert_int_equal(p->logical->matched_storage_free_count, 1);
    cg_arena_free(&a);
    cg_trace_free(t);
}

static void test_same_storage_two_devices(void **st) {
    (void)st;
    cg_trace *t = parse(META SPANS_0_100 MEM(10, "x", "cuda:0", 8, "alloc") MEM(10, "x", "cuda:1", 8, "alloc")
                            MEM(20, "x", "cuda:1", 8, "free") TERMINAL_100);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_memory_profile *p = cg_memory_analyze(t, &a);
    const cg_logical_memory *l = p->logical;
    assert_int_equal(l->storage_allocation_count, 2);
    assert_int_equal(l->n_lifetimes, 2);
    cg_lifetime l0 = cg_logical_lifetime(l, &l->lifetimes[0]), l1 = cg_logical_lifetime(l, &l->lifetimes[1]);
    assert_string_equal(l0.device, "cuda:0");
    assert_false(l0.has_end);
    assert_string_equal(l1.device, "cuda:1");
    assert_true(l1.has_end);
    assert_int_equal(l->n_devices, 2);
    uint64_t bytes = 0;
    assert_true(cg_memory_logical_peak(p, &bytes, NULL));
    assert_int_equal(bytes, 16);
    cg_arena_free(&a);
    cg_trace_free(t);
}

static void test_unpaired_free_is_ignored_and_equal_peaks_keep_earliest(void **st) {
    (void)st;
    cg_trace *t = parse(META SPANS_0_100 MEM(5, "z", "cpu", 9, "free") MEM(10, "a", "cpu", 50, "alloc")
                            MEM(20, "a", "cpu", 50, "free") MEM(30, "b", "cpu", 50, "alloc") TERMINAL_100);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_memory_profile *p = cg_memory_analyze(t, &a);
    uint64_t bytes = 0, ts = 0;
    assert_true(cg_memory_logical_peak(p, &bytes, &ts));
    assert_int_equal(bytes, 50);
    assert_int_equal(ts, 10);
    assert_int_equal(p->logical->matched_storage_free_count, 1);
    assert_int_equal(p->logical->n_timeline, 4); /* the ignored free still closes a group */
    assert_int_equal(p->logical->timeline[0].live_bytes, 0);
    assert_int_equal(p->logical->devices[0].peak_timestamp_ns, 10);
    cg_arena_free(&a);
    cg_trace_free(t);
}

static void test_absent_planes_are_omitted(void **st) {
    (void)st;
    cg_trace *t = parse(META SPANS_0_100 TERMINAL_100);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_memory_profile *p = cg_memory_analyze(t, &a);
    assert_null(p->logical);
    assert_null(p->physical);
    assert_false(cg_memory_logical_peak(p, NULL, NULL));
    assert_null(cg_memory_span_metrics(t, p, &a));
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, cg_memory_to_json(&a, p), false);
    assert_string_equal(b.data, "{}"); /* absent planes are omitted (skip_serializing_if) */
    cg_buf_free(&b);
    cg_timing_profile *tp = cg_timing_analyze(t, &a);
    assert_int_equal(tp->device_coverage, CG_COV_NONE);
    cg_buf_reset(&b);
    cg_json_write(&b, cg_timing_to_json(&a, tp), false);
    assert_string_equal(b.data, "{\"device_coverage\":\"none\",\"device_spans\":[],\"device_clocks\":[]}");
    cg_buf_free(&b);
    cg_arena_free(&a);
    cg_trace_free(t);
}

/* ---- §15 illustrative ---- */

static void test_illustrative_derivations(void **st) {
    (void)st;
    built b;
    build(&b, fixture_trace("illustrative"));
    assert_true(b.h->structurally_valid && b.h->capture_complete);
    assert_int_equal(b.h->n_issues, 0);
    const cg_graph *g = b.g;
    assert_non_null(g);
    uint64_t wall = 0;
    assert_true(cg_graph_outer_wall_time(g, &wall));
    assert_int_equal(wall, 950);
    const char *want[] = {"s4", "s2", "s3", "s5"};
    const uint64_t self[] = {250, 160, 100, 40};
    assert_int_equal(g->summary.n_slowest_host_spans, 4);
    for (int i = 0; i < 4; i++) {
        assert_string_equal(g->summary.slowest_host_spans[i].id, want[i]);
        assert_int_equal(g->summary.slowest_host_spans[i].measured_overlap_self_time_ns, self[i]);
        assert_int_equal(g->summary.slowest_host_spans[i].scope, CG_HOST_SCOPE_MEASURED_SUBTREE);
    }
    assert_string_equal(cg_graph_first_slowest_host(g)->id, "s4");
    const cg_device_span_cost *d = cg_graph_first_slowest_device(g);
    assert_non_null(d);
    assert_string_equal(d->id, "s3");
    assert_string_equal(d->device, "cuda:0");
    assert_string_equal(d->clock_id, "cuda-event-0");
    assert_int_equal(d->device_busy_ns, 300);
    uint64_t peak = 0, ts = 0;
    assert_true(cg_memory_logical_peak(g->memory, &peak, &ts));
    assert_int_equal(peak, 512);
    assert_int_equal(ts, 210);
    const cg_logical_memory *l = g->memory->logical;
    assert_int_equal(l->n_lifetimes, 1);
    cg_lifetime l0 = cg_logical_lifetime(l, &l->lifetimes[0]);
    assert_int_equal(l0.start_timestamp_ns, 210);
    assert_true(l0.has_end);
    assert_int_equal(l0.end_timestamp_ns, 900);
    assert_int_equal(g->timing->n_device_clocks, 1);
    assert_int_equal(g->timing->device_clocks[0].busy_ns, 300);
    assert_int_equal(g->n_tensor_nodes, 3);
    assert_string_equal(node(g, "tensor/TensorId(1)")->name, "TensorId(1)");
    assert_string_equal(node(g, "tensor/TensorId(2)")->name, "TensorId(2)");
    assert_string_equal(node(g, "tensor/TensorId(3)")->name, "toy/hidden");
    assert_string_equal(node(g, "tensor/TensorId(3)")->parent_id, "s3");
    const cg_graph_node *op = node(g, "s3/op/0");
    assert_int_equal(op->kind, CG_NODE_OP);
    assert_string_equal(op->name, "matmul");
    assert_int_equal(op->host_total_time_ns, 400);
    assert_int_equal(node(g, "s1")->kind, CG_NODE_ROOT);
    assert_int_equal(node(g, "s2")->host_self_time_ns, 160);
    assert_int_equal(node(g, "s3")->peak_live_bytes, 512);
    assert_int_equal(node(g, "s3")->residual_bytes, 512); /* freed at 900, after s3's window */
    assert_int_equal(node(g, "s2")->residual_bytes, 0);
    unbuild(&b);
}

/* ---- rankings, scopes, tie-breaks ---- */

static void test_concurrent_overlap_and_tie_breaks(void **st) {
    (void)st;
    built b;
    build(&b, fixture_trace("concurrent_overlap"));
    const cg_graph *g = b.g;
    if (!g) fail_msg("%s", b.err.msg);
    const char *want[] = {"s2", "s3", "s7", "s6", "s10", "s9"};
    assert_int_equal(g->summary.n_slowest_host_spans, 6);
    for (int i = 0; i < 6; i++) assert_string_equal(g->summary.slowest_host_spans[i].id, want[i]);
    const cg_host_span_cost *s6 = &g->summary.slowest_host_spans[3];
    assert_int_equal(s6->scope, CG_HOST_SCOPE_CONCURRENT_OVERLAP);
    assert_int_equal(s6->host_self_time_ns, 200);
    assert_int_equal(s6->measured_overlap_duration_ns, 200);   /* [900,1400) ∩ [100,1100) */
    assert_int_equal(s6->measured_overlap_self_time_ns, 100);  /* child clipped to [1000,1100) */
    assert_int_equal(s6->full_duration_ns, 500);
    /* concurrent span keeps its real parent and adds nothing to the wall time */
    assert_string_equal(node(g, "s6")->parent_id, "s1");
    assert_int_equal(g->summary.outer_wall_time_ns, 1000);
    for (size_t i = 0; i < g->summary.n_slowest_host_spans; i++) {
        assert_string_not_equal(g->summary.slowest_host_spans[i].id, "s4"); /* span_kind op */
        assert_string_not_equal(g->summary.slowest_host_spans[i].id, "s1"); /* ancestor */
        assert_string_not_equal(g->summary.slowest_host_spans[i].id, "s8"); /* no overlap */
    }
    assert_int_equal(node(g, "s4")->kind, CG_NODE_OP);
    /* device ranking: measured subtree only (s7 is concurrent), busy desc, ties by node order */
    assert_int_equal(g->summary.n_slowest_device_spans, 3);
    assert_string_equal(g->summary.slowest_device_spans[0].id, "s3");
    assert_string_equal(g->summary.slowest_device_spans[1].id, "s4");
    assert_string_equal(g->summary.slowest_device_spans[2].id, "s2");
    assert_int_equal(g->summary.n_heaviest_spans, 0); /* no logical plane: bytes unknown */
    assert_false(node(g, "s2")->has_allocated_bytes);
    assert_int_equal(g->timing->device_coverage, CG_COV_PARTIAL); /* declared none + intervals */
    unbuild(&b);
}

static void test_top_eight_with_id_tie_break(void **st) {
    (void)st;
    cg_buf text = CG_BUF_INIT;
    cg_buf_puts(&text, META);
    cg_buf_puts(&text, "{\"kind\":\"span_start\",\"id\":\"s1\",\"name\":\"app\",\"start_ns\":0,\"span_kind\":\"function\"}\n"
                       "{\"kind\":\"span_start\",\"id\":\"m\",\"parent_id\":\"s1\",\"name\":\"m\",\"start_ns\":0,"
                       "\"span_kind\":\"function\",\"measured\":true}\n");
    for (int i = 0; i < 12; i++)
        cg_buf_printf(&text,
                      "{\"kind\":\"span_start\",\"id\":\"c%02d\",\"parent_id\":\"m\",\"name\":\"c\",\"start_ns\":%d,"
                      "\"span_kind\":\"function\"}\n{\"kind\":\"span_end\",\"id\":\"c%02d\",\"duration_ns\":%d}\n",
                      11 - i, i * 10, 11 - i, i < 2 ? 10 : 5);
    cg_buf_puts(&text, "{\"kind\":\"span_end\",\"id\":\"m\",\"duration_ns\":1000}\n"
                       "{\"kind\":\"span_end\",\"id\":\"s1\",\"duration_ns\":1000}\n"
                       "{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":1000}\n");
    built b;
    build(&b, parse(text.data));
    cg_buf_free(&text);
    const cg_graph *g = b.g;
    if (!g) fail_msg("%s", b.err.msg);
    assert_int_equal(g->summary.n_slowest_host_spans, CG_GRAPH_TOP);
    /* m: self 1000 - 10 - 10 - 10*5 + overlaps... first anyway */
    assert_string_equal(g->summary.slowest_host_spans[0].id, "m");
    assert_string_equal(g->summary.slowest_host_spans[1].id, "c10"); /* duration 10, ties by id */
    assert_string_equal(g->summary.slowest_host_spans[2].id, "c11");
    const char *rest[] = {"c00", "c01", "c02", "c03", "c04"};
    for (int i = 0; i < 5; i++) assert_string_equal(g->summary.slowest_host_spans[3 + i].id, rest[i]);
    unbuild(&b);
}

/* ---- refusals ---- */

static void test_refusals(void **st) {
    (void)st;
    built b;
    build(&b, parse(META SPANS_0_100 "{\"kind\":\"terminal\",\"outcome\":\"failed\",\"timestamp_ns\":100,"
                                     "\"reason\":\"boom\"}\n"));
    assert_null(b.g);
    assert_string_equal(b.err.msg, "cannot build a graph from a failed capture");
    unbuild(&b);

    /* two measured spans and an unknown call-edge span: both messages, joined */
    build(&b, parse(META
                    "{\"kind\":\"span_start\",\"id\":\"s1\",\"name\":\"app\",\"start_ns\":0,\"span_kind\":\"function\","
                    "\"measured\":true}\n"
                    "{\"kind\":\"span_start\",\"id\":\"s2\",\"parent_id\":\"s1\",\"name\":\"m\",\"start_ns\":0,"
                    "\"span_kind\":\"function\",\"measured\":true}\n"
                    "{\"kind\":\"span_end\",\"id\":\"s2\",\"duration_ns\":100}\n"
                    "{\"kind\":\"span_end\",\"id\":\"s1\",\"duration_ns\":100}\n"
                    "{\"kind\":\"edge\",\"edge_kind\":\"call\",\"from_span\":\"s1\",\"to_span\":\"nope\","
                    "\"host_duration_ns\":1}\n" TERMINAL_100));
    assert_null(b.g);
    assert_false(b.h->structurally_valid);
    cg_buf want = CG_BUF_INIT;
    cg_buf_puts(&want, "trace is structurally invalid: ");
    size_t errors = 0;
    for (size_t i = 0; i < b.h->n_issues; i++) {
        if (b.h->issues[i].severity != CG_SEV_ERROR) continue;
        if (errors++) cg_buf_puts(&want, "; ");
        cg_buf_puts(&want, b.h->issues[i].message);
    }
    assert_true(errors >= 2);
    assert_string_equal(b.err.msg, want.data);
    cg_buf_free(&want);
    unbuild(&b);

    /* a span literally named like a tensor node */
    build(&b, parse(META
                    "{\"kind\":\"span_start\",\"id\":\"s1\",\"name\":\"app\",\"start_ns\":0,\"span_kind\":\"function\"}\n"
                    "{\"kind\":\"span_start\",\"id\":\"tensor/t\",\"parent_id\":\"s1\",\"name\":\"m\",\"start_ns\":0,"
                    "\"span_kind\":\"function\",\"measured\":true}\n"
                    "{\"kind\":\"tensor\",\"span_id\":\"s1\",\"tensor_id\":\"t\",\"shape\":[1],\"dtype\":\"f32\","
                    "\"device\":\"cpu\"}\n"
                    "{\"kind\":\"span_end\",\"id\":\"tensor/t\",\"duration_ns\":100}\n"
                    "{\"kind\":\"span_end\",\"id\":\"s1\",\"duration_ns\":100}\n" TERMINAL_100));
    assert_true(b.h->structurally_valid);
    assert_null(b.g);
    assert_string_equal(b.err.msg, "duplicate graph node ID \"tensor/t\": span IDs must not collide with "
                                   "synthesized `<span>/op/<n>` or `tensor/<id>` node IDs");
    unbuild(&b);
}

/* ---- edges ---- */

static void test_edges_deduplicated_and_sorted(void **st) {
    (void)st;
    const char *cases[] = {"illustrative", "concurrent_overlap", "memory_planes"};
    for (size_t c = 0; c < 3; c++) {
        built b;
        build(&b, fixture_trace(cases[c]));
        const cg_graph *g = b.g;
        if (!g) fail_msg("%s", b.err.msg);
        for (size_t i = 1; i < g->n_edges; i++) {
            cg_graph_edge p = edge(g, i - 1, &b.a), e = edge(g, i, &b.a);
            int k = strcmp(p.from, e.from);
            if (!k) k = strcmp(p.to, e.to);
            if (!k) k = (int)p.is_data - (int)e.is_data;
            assert_true(k < 0);
        }
        unbuild(&b);
    }
    /* concurrent_overlap: trace call edge s2->s3 (no label) wins over the synthesized one,
     * and the repeated input t1 of op add yields one data edge */
    built b;
    build(&b, fixture_trace("concurrent_overlap"));
    size_t s2s3 = 0, t1add = 0;
    for (size_t i = 0; i < b.g->n_edges; i++) {
        cg_graph_edge ev = edge(b.g, i, &b.a);
        const cg_graph_edge *e = &ev;
        if (!strcmp(e->from, "s2") && !strcmp(e->to, "s3")) {
            s2s3++;
            assert_false(e->is_data);
            assert_null(e->label);
            assert_int_equal(e->host_duration_ns, 300);
        }
        if (!strcmp(e->from, "tensor/t1") && !strcmp(e->to, "s3/op/0")) {
            t1add++;
            assert_string_equal(e->label, "input");
        }
    }
    assert_int_equal(s2s3, 1);
    assert_int_equal(t1add, 1);
    unbuild(&b);
}

/* ---- node id order and ids the reader does not intern ---- */

/* Span ids where one is a prefix of another ("a" < "a-b", but "a-b/op/0" < "a/op/0"),
 * twelve ops in one span ("a/op/10" < "a/op/2"), and a 130-byte tensor id (longer
 * than the reader interns, so each mention is its own copy) named by a tensor
 * event, two op inputs and a trace edge: one tensor node, edges in id order. */
static void test_node_id_order_and_uninterned_ids(void **st) {
    (void)st;
    char longid[131];
    memset(longid, 'x', 130);
    longid[130] = '\0';
    cg_buf text = CG_BUF_INIT;
    cg_buf_puts(&text, META);
    cg_buf_puts(&text, "{\"kind\":\"span_start\",\"id\":\"a\",\"name\":\"root\",\"start_ns\":0,\"span_kind\":\"function\","
                       "\"measured\":true}\n"
                       "{\"kind\":\"span_start\",\"id\":\"a-b\",\"parent_id\":\"a\",\"name\":\"child\",\"start_ns\":10,"
                       "\"span_kind\":\"function\"}\n");
    for (int k = 0; k < 12; k++)
        cg_buf_printf(&text, "{\"kind\":\"op\",\"span_id\":\"a\",\"op_name\":\"op%d\",\"inputs\":[\"%s\"],"
                             "\"output\":\"o%d\",\"shape\":[],\"dtype\":\"f32\",\"device\":\"cpu\",\"duration_ns\":1,"
                             "\"timestamp_ns\":%d,\"input_dense_bytes\":0}\n", k, k < 2 ? longid : "in", k, 100 + k);
    cg_buf_printf(&text, "{\"kind\":\"op\",\"span_id\":\"a-b\",\"op_name\":\"b0\",\"inputs\":[],\"shape\":[],"
                         "\"dtype\":\"f32\",\"device\":\"cpu\",\"duration_ns\":1,\"timestamp_ns\":20,\"input_dense_bytes\":0}\n"
                         "{\"kind\":\"tensor\",\"span_id\":\"a\",\"tensor_id\":\"%s\",\"label\":\"long\",\"shape\":[2],"
                         "\"dtype\":\"f32\",\"device\":\"cpu\",\"requires_grad\":false,\"category\":\"activation\"}\n"
                         "{\"kind\":\"edge\",\"edge_kind\":\"data\",\"from_tensor\":\"%s\",\"to_tensor\":\"o0\"}\n"
                         "{\"kind\":\"span_end\",\"id\":\"a-b\",\"duration_ns\":50}\n"
                         "{\"kind\":\"span_end\",\"id\":\"a\",\"duration_ns\":1000}\n"
                         "{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":2000}\n",
                  longid, longid);
    built b;
    build(&b, parse(text.data));
    cg_buf_free(&text);
    const cg_graph *g = b.g;
    if (!g) fail_msg("%s", b.err.msg);
    assert_int_equal(g->n_tensor_nodes, 14); /* long, in, o0..o11 */
    char tid[140];
    snprintf(tid, sizeof tid, "tensor/%s", longid);
    assert_string_equal(node(g, tid)->name, "long");
    assert_string_equal(node(g, tid)->parent_id, "a");
    assert_string_equal(node(g, "a/op/10")->name, "op10");
    assert_string_equal(node(g, "a-b/op/0")->name, "b0");
    assert_int_equal(cg_graph_find_node(g, "a/op/12"), CG_GRAPH_NONE);
    size_t from_long = 0;
    for (size_t i = 0; i < g->n_edges; i++) {
        cg_graph_edge e = edge(g, i, &b.a);
        from_long += e.is_data && !strcmp(e.from, tid);
        if (i == 0) continue;
        cg_graph_edge p = edge(g, i - 1, &b.a);
        int k = strcmp(p.from, e.from);
        if (!k) k = strcmp(p.to, e.to);
        if (!k) k = (int)p.is_data - (int)e.is_data;
        assert_true(k < 0);
    }
    assert_int_equal(from_long, 3); /* inputs of a/op/0 and a/op/1, the trace edge to tensor/o0 */
    unbuild(&b);
}

/* ---- per-span memory clipping ---- */

static void test_span_peak_and_residual_clipping(void **st) {
    (void)st;
    built b;
    build(&b, fixture_trace("memory_planes"));
    const cg_graph *g = b.g;
    if (!g) fail_msg("%s", b.err.msg);
    /* s3 [15,80): +70@20, +30@30, at 50 free 70 before alloc 40 => peak 100 (not 140) */
    assert_int_equal(node(g, "s3")->allocated_bytes, 140);
    assert_int_equal(node(g, "s3")->peak_live_bytes, 100);
    assert_int_equal(node(g, "s3")->residual_bytes, 70);
    /* s4 [60,90): lifetime 60..70 opens at the window start and ends inside it */
    assert_int_equal(node(g, "s4")->allocated_bytes, 5);
    assert_int_equal(node(g, "s4")->peak_live_bytes, 5);
    assert_int_equal(node(g, "s4")->residual_bytes, 0);
    assert_int_equal(node(g, "s2")->peak_live_bytes, 110);
    assert_int_equal(node(g, "s2")->residual_bytes, 77);
    /* partial coverage: s1 opened no lifetime, so its allocation is unknown, not 0 */
    assert_false(node(g, "s1")->has_allocated_bytes);
    assert_int_equal(g->summary.n_heaviest_spans, 3);
    assert_string_equal(g->summary.heaviest_spans[0].id, "s3");
    assert_string_equal(g->summary.heaviest_spans[1].id, "s2");
    assert_string_equal(g->summary.heaviest_spans[2].id, "s4");
    /* ops carry dense bytes only */
    unbuild(&b);
}

/* ---- deep nesting (no recursion over the span tree) ---- */

static void test_deep_chain(void **st) {
    (void)st;
    enum { DEPTH = 20000 };
    cg_buf text = CG_BUF_INIT;
    cg_buf_puts(&text, META);
    for (int i = 0; i < DEPTH; i++) {
        if (i == 0)
            cg_buf_printf(&text, "{\"kind\":\"span_start\",\"id\":\"s%d\",\"name\":\"n\",\"start_ns\":%d,"
                                 "\"span_kind\":\"function\"}\n", i, i);
        else
            cg_buf_printf(&text, "{\"kind\":\"span_start\",\"id\":\"s%d\",\"parent_id\":\"s%d\",\"name\":\"n\","
                                 "\"start_ns\":%d,\"span_kind\":\"function\",\"measured\":%s}\n",
                          i, i - 1, i, i == 1 ? "true" : "false");
        cg_buf_printf(&text, "{\"kind\":\"memory\",\"timestamp_ns\":%d,\"storage_id\":\"m%d\",\"tensor_id\":\"t%d\","
                             "\"span_id\":\"s%d\",\"device\":\"cpu\",\"bytes\":1,\"action\":\"alloc\",\"dtype\":\"u8\"}\n",
                      i, i, i, i);
    }
    for (int i = DEPTH - 1; i >= 0; i--)
        cg_buf_printf(&text, "{\"kind\":\"span_end\",\"id\":\"s%d\",\"duration_ns\":%d}\n", i, 2 * (DEPTH - i));
    cg_buf_printf(&text, "{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":%d}\n", 2 * DEPTH);
    built b;
    build(&b, parse(text.data));
    cg_buf_free(&text);
    const cg_graph *g = b.g;
    if (!g) fail_msg("%s", b.err.msg);
    assert_int_equal(node(g, "s0")->peak_live_bytes, DEPTH);
    assert_int_equal(node(g, "s0")->residual_bytes, DEPTH);
    assert_int_equal(node(g, "s1")->peak_live_bytes, DEPTH - 1);
    assert_int_equal(node(g, "s1")->host_self_time_ns, 2);
    assert_int_equal(node(g, "s100")->peak_live_bytes, DEPTH - 100);
    assert_int_equal(g->summary.outer_wall_time_ns, 2 * (DEPTH - 1));
    assert_int_equal(g->summary.n_heaviest_spans, CG_GRAPH_TOP);
    unbuild(&b);
}


/* ---- randomized cross-checks against literal (quadratic) reference walks ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(uint64_t n) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return n ? rng_state % n : 0;
}

static void test_union_matches_bitmap(void **st) {
    (void)st;
    for (int round = 0; round < 300; round++) {
        cg_interval iv[12];
        bool cover[80] = {false};
        size_t n = (size_t)rnd(12);
        for (size_t i = 0; i < n; i++) {
            uint64_t s = rnd(60), d = rnd(20);
            iv[i] = cg_interval_of(s, d);
            for (uint64_t x = s; x < s + d; x++) cover[x] = true;
        }
        uint64_t want = 0;
        for (int x = 0; x < 80; x++) want += cover[x];
        assert_int_equal(cg_union_length(iv, n), want);
    }
}

typedef struct rspan {
    int parent;
    uint64_t start, dur;
} rspan;

static bool in_subtree(const rspan *sp, int s, int v) {
    for (; s >= 0; s = sp[s].parent)
        if (s == v) return true;
    return false;
}

static uint64_t sub_sat(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

/* The crate's clipped_lifetime_metrics, restated literally: live at the window
 * start, then per timestamp inside it the frees (saturating) before the allocations;
 * residual = lifetimes with start < window end < end. */
static void reference_window(const uint64_t *a_ts, const uint64_t *f_ts, const bool *freed, const uint64_t *bytes,
                             const bool *member, int n, uint64_t ws, uint64_t we, uint64_t *peak, uint64_t *resid) {
    *peak = *resid = 0;
    if (we <= ws) return;
    uint64_t live = 0, ts[256], fr[256], al[256];
    int nt = 0;
    for (int k = 0; k < n; k++) {
        if (!member[k]) continue;
        uint64_t end = freed[k] ? f_ts[k] : UINT64_MAX;
        if (a_ts[k] >= we || end <= ws) continue;
        uint64_t at[2] = {a_ts[k], end};
        for (int side = 0; side < 2; side++) {
            if (side == 0 && a_ts[k] <= ws) {
                live += bytes[k];
                continue;
            }
            if (side == 1 && !(end > ws && end < we)) continue;
            int i = 0;
            while (i < nt && ts[i] != at[side]) i++;
            if (i == nt) {
                ts[nt] = at[side];
                fr[nt] = al[nt] = 0;
                nt++;
            }
            if (side == 0)
                al[i] += bytes[k];
            else
                fr[i] += bytes[k];
        }
        if (a_ts[k] < we && end > we) *resid += bytes[k];
    }
    *peak = live;
    for (int done = 0; done < nt; done++) {
        int best = -1;
        for (int i = 0; i < nt; i++)
            if (ts[i] != UINT64_MAX && (best < 0 || ts[i] < ts[best])) best = i;
        live = sub_sat(live, fr[best]) + al[best];
        if (live > *peak) *peak = live;
        ts[best] = UINT64_MAX;
    }
}

static void test_span_metrics_match_reference(void **st) {
    (void)st;
    enum { NSP = 40, NST = 60 };
    for (int round = 0; round < 60; round++) {
        rspan sp[NSP];
        int alloc_span[NST];
        uint64_t a_ts[NST], f_ts[NST], bytes[NST];
        bool freed[NST];
        cg_buf text = CG_BUF_INIT;
        bool complete = round % 2 == 1;
        cg_buf_puts(&text, complete ? META_COMPLETE_MEMORY : META);
        for (int i = 0; i < NSP; i++) {
            if (i == 0) {
                sp[i] = (rspan){-1, 0, 10000};
            } else {
                int p = i == 1 ? 0 : (int)rnd((uint64_t)i);
                uint64_t pend = sp[p].start + sp[p].dur;
                uint64_t s0 = sp[p].start + rnd(sp[p].dur + 1) / 100 * 100;
                if (s0 > pend) s0 = pend;
                uint64_t d = rnd(pend - s0 + 1) / 100 * 100;
                sp[i] = (rspan){p, s0, d};
            }
            if (sp[i].parent < 0)
                cg_buf_printf(&text, "{\"kind\":\"span_start\",\"id\":\"s%d\",\"name\":\"n%d\",\"start_ns\":%llu,"
                                     "\"span_kind\":\"function\"}\n", i, i, (unsigned long long)sp[i].start);
            else
                cg_buf_printf(&text, "{\"kind\":\"span_start\",\"id\":\"s%d\",\"parent_id\":\"s%d\",\"name\":\"n%d\","
                                     "\"start_ns\":%llu,\"span_kind\":\"function\",\"measured\":%s}\n",
                              i, sp[i].parent, i, (unsigned long long)sp[i].start, i == 1 ? "true" : "false");
        }
        for (int k = 0; k < NST; k++) {
            alloc_span[k] = (int)rnd(NSP);
            /* inside the allocating span (trace/10 health: memory_outside_span); the free names
             * the root span, which covers every instant */
            a_ts[k] = sp[alloc_span[k]].start + rnd(sp[alloc_span[k]].dur / 100 + 1) * 100;
            freed[k] = rnd(3) != 0;
            f_ts[k] = a_ts[k] + rnd(20) * 200;
            if (f_ts[k] > 9999) f_ts[k] = 9999;
            bytes[k] = 1 + rnd(1000);
            const char *dev = rnd(2) ? "cuda:0" : "cuda:1";
            cg_buf_printf(&text, "{\"kind\":\"memory\",\"timestamp_ns\":%llu,\"storage_id\":\"m%d\",\"tensor_id\":\"t%d\","
                                 "\"span_id\":\"s%d\",\"device\":\"%s\",\"bytes\":%llu,\"action\":\"alloc\",\"dtype\":\"u8\"}\n",
                          (unsigned long long)a_ts[k], k, k, alloc_span[k], dev, (unsigned long long)bytes[k]);
            if (freed[k])
                cg_buf_printf(&text, "{\"kind\":\"memory\",\"timestamp_ns\":%llu,\"storage_id\":\"m%d\",\"tensor_id\":\"t%d\","
                                     "\"span_id\":\"s0\",\"device\":\"%s\",\"bytes\":%llu,\"action\":\"free\",\"dtype\":\"u8\"}\n",
                              (unsigned long long)f_ts[k], k, k, dev, (unsigned long long)bytes[k]);
        }
        for (int i = NSP - 1; i >= 0; i--)
            cg_buf_printf(&text, "{\"kind\":\"span_end\",\"id\":\"s%d\",\"duration_ns\":%llu}\n", i,
                          (unsigned long long)sp[i].dur);
        cg_buf_puts(&text, "{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":10000}\n");
        built b;
        build(&b, parse(text.data));
        cg_buf_free(&text);
        if (!b.g) fail_msg("round %d: %s", round, b.err.msg);
        for (int v = 0; v < NSP; v++) {
            char id[16];
            snprintf(id, sizeof id, "s%d", v);
            const cg_graph_node *n = node(b.g, id);
            uint64_t direct = 0, peak, resid;
            bool observed = false, member[NST], any_member = false;
            for (int k = 0; k < NST; k++) {
                if (alloc_span[k] == v) {
                    direct += bytes[k];
                    observed = true;
                }
                member[k] = in_subtree(sp, alloc_span[k], v);
                any_member |= member[k];
            }
            reference_window(a_ts, f_ts, freed, bytes, member, NST, sp[v].start, sp[v].start + sp[v].dur, &peak,
                             &resid);
            bool want_alloc = complete || observed, want_window = complete || any_member;
            if (n->has_allocated_bytes != want_alloc || n->has_peak_live_bytes != want_window ||
                n->has_residual_bytes != want_window)
                fail_msg("round %d span %s: known alloc %d window %d, want %d %d", round, id, n->has_allocated_bytes,
                         n->has_peak_live_bytes, want_alloc, want_window);
            if ((want_alloc && n->allocated_bytes != direct) ||
                (want_window && (n->peak_live_bytes != peak || n->residual_bytes != resid)))
                fail_msg("round %d span %s [%llu,%llu): got alloc %llu peak %llu resid %llu, want %llu %llu %llu",
                         round, id, (unsigned long long)sp[v].start, (unsigned long long)(sp[v].start + sp[v].dur),
                         (unsigned long long)n->allocated_bytes, (unsigned long long)n->peak_live_bytes,
                         (unsigned long long)n->residual_bytes, (unsigned long long)direct,
                         (unsigned long long)peak, (unsigned long long)resid);
        }
        unbuild(&b);
    }
}


static void test_device_coverage_never_lowered(void **st) {
    (void)st;
    char meta[2 * sizeof META];
    const char *src = META;
    const char *at = strstr(src, "\"device_timing\":\"none\"");
    assert_non_null(at);
    snprintf(meta, sizeof meta, "%.*s\"device_timing\":\"complete\"%s", (int)(at - src), src,
             at + strlen("\"device_timing\":\"none\""));
    cg_buf text = CG_BUF_INIT;
    cg_buf_puts(&text, meta);
    cg_buf_puts(&text, SPANS_0_100 TERMINAL_100);
    cg_trace *t = parse(text.data);
    cg_buf_free(&text);
    cg_arena a;
    cg_arena_init(&a, 0);
    assert_int_equal(cg_timing_analyze(t, &a)->device_coverage, CG_COV_COMPLETE);
    cg_arena_free(&a);
    cg_trace_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_union_length),
        cmocka_unit_test(test_peak_is_simultaneous_sum),
        cmocka_unit_test(test_same_storage_two_devices),
        cmocka_unit_test(test_unpaired_free_is_ignored_and_equal_peaks_keep_earliest),
        cmocka_unit_test(test_absent_planes_are_omitted),
        cmocka_unit_test(test_illustrative_derivations),
        cmocka_unit_test(test_concurrent_overlap_and_tie_breaks),
        cmocka_unit_test(test_top_eight_with_id_tie_break),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_edges_deduplicated_and_sorted),
        cmocka_unit_test(test_node_id_order_and_uninterned_ids),
        cmocka_unit_test(test_span_peak_and_residual_clipping),
        cmocka_unit_test(test_deep_chain),
        cmocka_unit_test(test_union_matches_bitmap),
        cmocka_unit_test(test_device_coverage_never_lowered),
        cmocka_unit_test(test_span_metrics_match_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
