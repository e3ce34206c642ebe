/* Unit tests for lib/capture/session.c: record → parse round trips, exact
 * record lines, and misuse that must be refused without touching the trace. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_capture_common.h"

typedef struct fx {
    char *dir;
    char *path;
} fx;

static int setup(void **st) {
    fx *f = calloc(1, sizeof *f);
    f->dir = cap_tmpdir();
    f->path = cg_path_join(f->dir, "nested/dir/trace.jsonl");
    *st = f;
    return 0;
}

static int teardown(void **st) {
    fx *f = *st;
    cg_rm_rf(f->dir);
    free(f->dir);
    free(f->path);
    free(f);
    return 0;
}

static bool starts_with(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The lines of text, sorted, as one '\n'-joined malloc'd string. */
static char *sorted_lines(const char *text) {
    size_t n = cap_count_lines(text);
    char **lines = calloc(n ? n : 1, sizeof *lines);
    size_t total = 1;
    for (size_t i = 0; i < n; i++) {
        lines[i] = cap_line(text, i);
        total += strlen(lines[i]) + 1;
    }
    qsort(lines, n, sizeof *lines, cmp_str);
    char *out = malloc(total), *p = out;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(lines[i]);
        memcpy(p, lines[i], l);
        p[l] = '\n';
        p += l + 1;
        free(lines[i]);
    }
    *p = '\0';
    free(lines);
    return out;
}

/* Busy-waits until the session clock has advanced by at least ns. */
static void spin(cg_session *s, uint64_t ns) {
    uint64_t t0 = cg_session_host_now_ns(s);
    while (cg_session_host_now_ns(s) - t0 < ns) {
    }
}

static void test_full_lifecycle_round_trip(void **st) {
    fx *f = *st;
    cg_error err;
    cg_profile_run *r = cap_demo_run();
    assert_int_equal(cg_profile_run_tag(r, "zeta", "1"), 0);
    assert_int_equal(cg_profile_run_tag(r, "alpha", "2"), 0);
    cg_session *s = cg_session_open(f->path, r, &err);
    cg_profile_run_free(r); /* the session keeps no reference */
    assert_non_null(s);
    assert_string_equal(cg_session_path(s), f->path);
    assert_int_equal(cg_session_current_span(s), CG_SPAN_ROOT);

    cg_span_id m, fwd, bwd, inner, host;
    assert_int_equal(cg_session_begin_measurement(s, "demo/update-3", &m, &err), 0);
    assert_int_equal(m, 2);
    assert_int_equal(cg_session_current_span(s), m);
    assert_int_equal(cg_session_begin_step_span(s, "demo/update-3/forward", CG_STEP_FORWARD,
                                                CG_SPAN_FUNCTION, &fwd, &err), 0);
    assert_int_equal(cg_session_begin_span(s, "matmul-block", CG_SPAN_MODULE, &inner, &err), 0);
    spin(s, 2000);
    uint64_t shape[] = {2, 3};
    const char *inputs[] = {"T1", "T2"};
    cg_op_record op = {.op_name = "matmul", .inputs = inputs, .n_inputs = 2, .output = "T3",
                       .shape = shape, .rank = 2, .dtype = "f32", .device = "cpu",
                       .duration_ns = 1000, .timestamp_ns = 0, .input_dense_bytes = 48};
    assert_int_equal(cg_session_record_op(s, inner, &op, &err), 0);
    cg_tensor_record tr = {.tensor_id = "T3", .label = "demo/out", .shape = shape, .rank = 2,
                           .dtype = "f32", .device = "cpu", .has_dense_bytes = true,
                           .dense_bytes = 24, .category = CG_CAT_ACTIVATION};
    assert_int_equal(cg_session_record_tensor(s, inner, &tr, &err), 0);
    cg_memory_record mem = {.storage_id = "storage:1", .tensor_id = "T3", .device = "cpu",
                            .bytes = 24, .dtype = "f32", .category = CG_CAT_ACTIVATION,
                            .op_name = "matmul", .shape = shape, .rank = 2};
    assert_int_equal(cg_session_record_memory_alloc(s, inner, &mem, &err), 0);
    float data[] = {1, -2, 3, -4, 0, 2};
    assert_int_equal(cg_session_record_tensor_stats_f32(s, "s4", "demo/out", shape, 2, "f32",
                                                        data, 6, &err), 0);
    assert_int_equal(cg_session_record_data_edge(s, "T1", "T3", &err), 0);
    assert_int_equal(cg_session_end_span(s, inner, &err), 0);
    assert_int_equal(cg_session_end_span(s, fwd, &err), 0);
    uint64_t fwd_dur;
    assert_int_equal(cg_session_span_duration_ns(s, fwd, &fwd_dur, &err), 0);
    assert_int_equal(cg_session_record_call_edge(s, m, fwd, fwd_dur, &err), 0);

    assert_int_equal(cg_session_begin_step_span(s, "demo/update-3/backward", CG_STEP_BACKWARD,
                                                CG_SPAN_FUNCTION, &bwd, &err), 0);
    mem.has_timestamp = false;
    assert_int_equal(cg_session_record_memory_free(s, bwd, &mem, &err), 0);
    double norm = 0.5, zero = 0.0;
    assert_int_equal(cg_session_record_gradient(s, "parameters", "w", CG_GRAD_PRESENT, &norm, &err), 0);
    assert_int_equal(cg_session_record_gradient(s, "parameters", "b", CG_GRAD_ZERO, &zero, &err), 0);
    assert_int_equal(cg_session_record_gradient(s, "parameters", "c", CG_GRAD_MISSING, NULL, &err), 0);
    assert_int_equal(cg_session_record_gradient(s, "parameters", "d", CG_GRAD_NON_FINITE, NULL, &err), 0);
    cg_device_interval_record di = {.device = "cuda:0", .stream_id = "7", .clock_id = "clk",
                                    .backend = "cuda-event", .start_ns = 5000, .duration_ns = 300};
    assert_int_equal(cg_session_record_device_interval(s, bwd, &di, &err), 0);
    cg_device_memory_record dm = {.device = "cuda:0", .has_used = true, .used_bytes = 1024,
                                  .has_reserved = true, .reserved_bytes = 2048};
    assert_int_equal(cg_session_record_device_memory(s, &dm, &err), 0);
    assert_int_equal(cg_session_end_span(s, bwd, &err), 0);
    assert_int_equal(cg_session_end_span(s, m, &err), 0);
    spin(s, 1000);
    assert_int_equal(cg_session_record_completed_host_span(s, "loader", CG_SPAN_FUNCTION, 10, 500,
                                                           &host, &err), 0);
    assert_int_equal(host, 6);
    assert_int_equal(cg_session_current_span(s), CG_SPAN_ROOT);
    assert_int_equal(cg_session_finish(s, &err), 0);
    assert_int_equal(cg_session_current_span(s), 0);
    cg_session_free(s);

    char *text = cap_slurp(f->path);
    assert_true(cap_has_line(text, "{\"kind\":\"span_start\",\"id\":\"s1\",\"name\":\"demo::step\","
                                   "\"start_ns\":0,\"span_kind\":\"function\",\"measured\":false}"));
    assert_true(cap_has_line(text, "{\"kind\":\"gradient\",\"event_id\":\"gradient-1\",\"root\":"
                                   "\"parameters\",\"key\":\"w\",\"state\":\"present\",\"norm\":0.5}"));
    assert_true(cap_has_line(text, "{\"kind\":\"gradient\",\"event_id\":\"gradient-2\",\"root\":"
                                   "\"parameters\",\"key\":\"b\",\"state\":\"zero\",\"norm\":0.0}"));
    assert_true(cap_has_line(text, "{\"kind\":\"gradient\",\"event_id\":\"gradient-3\",\"root\":"
                                   "\"parameters\",\"key\":\"c\",\"state\":\"missing\"}"));
    assert_true(cap_has_line(text, "{\"kind\":\"edge\",\"edge_kind\":\"data\",\"from_tensor\":"
                                   "\"T1\",\"to_tensor\":\"T3\"}"));
    assert_true(cap_has_line(text, "{\"kind\":\"device_interval\",\"span_id\":\"s5\",\"device\":"
                                   "\"cuda:0\",\"stream_id\":\"7\",\"clock_id\":\"clk\",\"backend\":"
                                   "\"cuda-event\",\"start_ns\":5000,\"duration_ns\":300}"));
    assert_true(cap_has_line(text, "{\"kind\":\"span_start\",\"id\":\"s6\",\"parent_id\":\"s1\","
                                   "\"name\":\"loader\",\"start_ns\":10,\"span_kind\":\"function\","
                                   "\"measured\":false}"));
    assert_true(cap_has_line(text, "{\"kind\":\"span_end\",\"id\":\"s6\",\"duration_ns\":500}"));
    assert_true(cap_has_line(text, "{\"kind\":\"tensor_stats\",\"span_id\":\"s4\",\"label\":"
                                   "\"demo/out\",\"shape\":[2,3],\"dtype\":\"f32\",\"elements\":6,"
                                   "\"non_finite\":0,\"rms\":2.3804761428476167,\"abs_max\":4.0,"
                                   "\"mean\":0.0}"));
    /* one compact JSON object per line, meta first, terminal last */
    char *first = cap_line(text, 0);
    assert_true(starts_with(first, "{\"kind\":\"meta\",\"schema\":\"candle-graph/trace/10\",\"run_id\":\"run-"));
    assert_non_null(strstr(first, "\"correlation_id\":\"demo::step/update-3\""));
    assert_non_null(strstr(first, "\"capture_step\":3,\"warmup_steps\":2,\"device\":\"cpu\""));
    assert_non_null(strstr(first, "\"tags\":{\"alpha\":\"2\",\"zeta\":\"1\"}"));
    assert_null(strstr(first, "candle_version"));
    free(first);
    size_t n = cap_count_lines(text);
    char *last = cap_line(text, n - 1);
    assert_true(starts_with(last, "{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":"));
    free(last);
    free(text);

    cg_trace *t = cap_parse_ok(f->path);
    assert_string_equal(t->schema, CG_TRACE_SCHEMA);
    assert_int_equal(t->run.capture_step, 3);
    assert_int_equal(t->run.phase, CG_PHASE_TRAIN);
    /* timestamp "YYYY-MM-DDTHH:MM:SS.mmmZ" */
    const char *ts = t->run.timestamp;
    assert_int_equal(strlen(ts), 24);
    assert_true(ts[4] == '-' && ts[7] == '-' && ts[10] == 'T' && ts[13] == ':' && ts[16] == ':' &&
                ts[19] == '.' && ts[23] == 'Z');
    assert_int_equal(t->n_spans, 6);
    const cg_span *root = cg_trace_find_span(t, "s1");
    assert_non_null(root);
    assert_true(root->closed);
    assert_null(root->parent_id);
    assert_int_equal(root->duration_ns, t->terminal.timestamp_ns);
    assert_int_equal(t->terminal.outcome, CG_OUTCOME_COMPLETE);
    const cg_span *sm = cg_trace_find_span(t, "s2");
    assert_true(sm->measured);
    assert_string_equal(sm->parent_id, "s1");
    const cg_span *sf = cg_trace_find_span(t, "s3");
    assert_int_equal(sf->step, CG_STEP_FORWARD);
    assert_string_equal(sf->parent_id, "s2");
    const cg_span *si = cg_trace_find_span(t, "s4");
    assert_string_equal(si->parent_id, "s3");
    assert_int_equal(si->kind, CG_SPAN_MODULE);
    for (size_t i = 0; i < t->n_spans; i++) assert_true(t->spans[i].closed);
    /* op timestamp 0 became now − duration, inside its span */
    assert_int_equal(t->n_ops, 1);
    assert_true(t->ops[0].timestamp_ns >= si->start_ns);
    assert_true(t->ops[0].timestamp_ns + 1000 <= si->start_ns + si->duration_ns);
    assert_int_equal(t->n_memory, 2);
    assert_false(t->memory[0].is_free);
    assert_true(t->memory[1].is_free);
    assert_int_equal(t->n_gradients, 4);
    assert_int_equal(t->n_edges, 2);
    assert_int_equal(t->n_tensor_stats, 1);
    assert_int_equal(t->n_device_memory, 1);
    assert_false(t->device_memory[0].has_free);
    cap_assert_healthy(t, true);
    /* the reader's writer reproduces every line (in to_events order) */
    cg_buf again = CG_BUF_INIT;
    cg_trace_write(&again, t);
    char *orig = cap_slurp(f->path);
    char *a = sorted_lines(orig), *b = sorted_lines(again.data);
    assert_string_equal(a, b);
    free(a);
    free(b);
    free(orig);
    cg_buf_free(&again);
    cg_trace_free(t);
}

/* Flushes and returns the file bytes so far. */
static char *snapshot(cg_session *s, const char *path) {
    cg_error err;
    assert_int_equal(cg_session_flush(s, &err), 0);
    return cap_slurp(path);
}

#define REFUSED(call, want_code)                                 \
    do {                                                         \
        cg_err_clear(&err);                                      \
        assert_int_equal((call), -1);                            \
        assert_int_equal(err.code, (want_code));                 \
        assert_true(err.msg[0] != '\0');                         \
    } while (0)

static void test_misuse_is_refused_without_output(void **st) {
    fx *f = *st;
    cg_error err;
    cg_session *s = cap_open_ok(f->path);
    cg_span_id m, a, b;
    assert_int_equal(cg_session_begin_measurement(s, "region", &m, &err), 0);
    assert_int_equal(cg_session_begin_span(s, "a", CG_SPAN_FUNCTION, &a, &err), 0);
    assert_int_equal(cg_session_begin_span(s, "b", CG_SPAN_FUNCTION, &b, &err), 0);
    spin(s, 1000);
    char *before = snapshot(s, f->path);

    /* span order */
    REFUSED(cg_session_end_span(s, a, &err), CG_ESTATE);
    assert_non_null(strstr(err.msg, "out of order"));
    REFUSED(cg_session_end_span(s, CG_SPAN_ROOT, &err), CG_ESTATE);
    REFUSED(cg_session_end_span(s, 99, &err), CG_EINVAL);
    REFUSED(cg_session_end_span(s, 0, &err), CG_EINVAL);
    REFUSED(cg_session_begin_measurement(s, "second", &a, &err), CG_ESTATE);
    REFUSED(cg_session_begin_span(s, "   ", CG_SPAN_FUNCTION, &a, &err), CG_EINVAL);
    REFUSED(cg_session_begin_span(s, NULL, CG_SPAN_FUNCTION, &a, &err), CG_EINVAL);
    REFUSED(cg_session_begin_step_span(s, "x", CG_STEP_NONE, CG_SPAN_FUNCTION, &a, &err),
            CG_EINVAL);
    /* completed spans */
    REFUSED(cg_session_record_completed_host_span(s, "w", CG_SPAN_FUNCTION, 1, 0, NULL, &err),
            CG_EINVAL);
    REFUSED(cg_session_record_completed_host_span(s, "w", CG_SPAN_FUNCTION, 1, UINT64_MAX, NULL,
                                                  &err), CG_EINVAL);
    REFUSED(cg_session_record_completed_host_span(s, "w", CG_SPAN_FUNCTION,
                                                  cg_session_host_now_ns(s) + 1000000000u, 5,
                                                  NULL, &err), CG_EINVAL);
    REFUSED(cg_session_record_completed_host_span(s, "", CG_SPAN_FUNCTION, 1, 5, NULL, &err),
            CG_EINVAL);
    /* device intervals */
    cg_device_interval_record di = {.device = "cuda:0", .stream_id = "1", .clock_id = "c",
                                    .backend = "cupti", .start_ns = 10, .duration_ns = 0};
    REFUSED(cg_session_record_device_interval(s, b, &di, &err), CG_EINVAL);
    di.duration_ns = 5;
    di.stream_id = "";
    REFUSED(cg_session_record_device_interval(s, b, &di, &err), CG_EINVAL);
    di.stream_id = "1";
    REFUSED(cg_session_record_device_interval(s, 42, &di, &err), CG_EINVAL);
    /* device memory without any value */
    cg_device_memory_record dm = {.device = "cuda:0"};
    REFUSED(cg_session_record_device_memory(s, &dm, &err), CG_EINVAL);
    dm.has_free = true;
    dm.has_timestamp = true;
    dm.timestamp_ns = cg_session_host_now_ns(s) + 1000000000u;
    REFUSED(cg_session_record_device_memory(s, &dm, &err), CG_EINVAL);
    /* labels and names */
    uint64_t shape[] = {2};
    float data[] = {1.0f, 2.0f};
    REFUSED(cg_session_record_tensor_stats_f32(s, "s3", " \t", shape, 1, "f32", data, 2, &err),
            CG_EINVAL);
    REFUSED(cg_session_record_tensor_stats_f32(s, "", "x", shape, 1, "f32", data, 2, &err),
            CG_EINVAL);
    REFUSED(cg_session_record_tensor_stats_f32(s, "s3", "x", shape, 1, "f32", data, 3, &err),
            CG_EINVAL);
    cg_tensor_record tr = {.tensor_id = "T", .label = "  ", .dtype = "f32", .device = "cpu"};
    REFUSED(cg_session_record_tensor(s, b, &tr, &err), CG_EINVAL);
    tr.label = NULL;
    tr.tensor_id = "";
    REFUSED(cg_session_record_tensor(s, b, &tr, &err), CG_EINVAL);
    cg_op_record op = {.op_name = " ", .dtype = "f32", .device = "cpu"};
    REFUSED(cg_session_record_op(s, b, &op, &err), CG_EINVAL);
    op.op_name = "add";
    op.timestamp_ns = cg_session_host_now_ns(s) + 1000000000u; /* ends in the future */
    REFUSED(cg_session_record_op(s, b, &op, &err), CG_EINVAL);
    op.timestamp_ns = 1; /* before span b started */
    op.duration_ns = 1;
    REFUSED(cg_session_record_op(s, b, &op, &err), CG_EINVAL);
    assert_non_null(strstr(err.msg, "outside span"));
    op.timestamp_ns = 0;
    op.rank = 2; /* rank without dims */
    REFUSED(cg_session_record_op(s, b, &op, &err), CG_EINVAL);
    cg_memory_record mem = {.storage_id = "st", .tensor_id = "T", .device = "cpu", .bytes = 4,
                            .dtype = "f32", .has_timestamp = true,
                            .timestamp_ns = cg_session_host_now_ns(s) + 1000000000u};
    REFUSED(cg_session_record_memory_alloc(s, b, &mem, &err), CG_EINVAL);
    mem.has_timestamp = false;
    mem.storage_id = "";
    REFUSED(cg_session_record_memory_free(s, b, &mem, &err), CG_EINVAL);
    /* edges */
    REFUSED(cg_session_record_data_edge(s, "", "T", &err), CG_EINVAL);
    REFUSED(cg_session_record_data_edge(s, "T", NULL, &err), CG_EINVAL);
    REFUSED(cg_session_record_call_edge(s, m, b, 5, &err), CG_EINVAL); /* b's parent is a */
    REFUSED(cg_session_record_call_edge(s, m, 77, 5, &err), CG_EINVAL);
    /* gradients */
    double half = 0.5, zero = 0.0, negzero = -0.0, neg = -1.0, nan = NAN, inf = INFINITY;
    REFUSED(cg_session_record_gradient(s, "p", "k", CG_GRAD_PRESENT, NULL, &err), CG_EINVAL);
    REFUSED(cg_session_record_gradient(s, "p", "k", CG_GRAD_PRESENT, &zero, &err), CG_EINVAL);
    REFUSED(cg_session_record_gradient(s, "p", "k", CG_GRAD_PRESENT, &neg, &err), CG_EINVAL);
    REFUSED(cg_session_record_gradient(s, "p", "k", CG_GRAD_PRESENT, &nan, &err), CG_EINVAL);
    REFUSED(cg_session_record_gradient(s, "p", "k", CG_GRAD_PRESENT, &inf, &err), CG_EINVAL);
    REFUSED(cg_session_record_gradient(s, "p", "k", CG_GRAD_ZERO, &negzero, &err), CG_EINVAL);
    REFUSED(cg_session_record_gradient(s, "p", "k", CG_GRAD_ZERO, &half, &err), CG_EINVAL);
    REFUSED(cg_session_record_gradient(s, "p", "k", CG_GRAD_ZERO, NULL, &err), CG_EINVAL);
    REFUSED(cg_session_record_gradient(s, "p", "k", CG_GRAD_MISSING, &half, &err), CG_EINVAL);
    REFUSED(cg_session_record_gradient(s, "p", "k", CG_GRAD_NON_FINITE, &inf, &err), CG_EINVAL);
    REFUSED(cg_session_record_gradient(s, " ", "k", CG_GRAD_MISSING, NULL, &err), CG_EINVAL);
    REFUSED(cg_session_record_gradient(s, "p", "", CG_GRAD_MISSING, NULL, &err), CG_EINVAL);
    /* finishing */
    REFUSED(cg_session_finish_failed(s, "", &err), CG_EINVAL);
    REFUSED(cg_session_finish_failed(s, " \n ", &err), CG_EINVAL);
    REFUSED(cg_session_finish_failed(s, NULL, &err), CG_EINVAL);
    REFUSED(cg_session_finish(s, &err), CG_ESTATE);
    assert_non_null(strstr(err.msg, "only the root span may remain open"));

    char *after = snapshot(s, f->path);
    assert_string_equal(before, after); /* not one byte was written by a refused call */
    free(before);
    free(after);

    /* the session is still healthy: the first gradient id is still gradient-1 */
    double one = 1.0;
    assert_int_equal(cg_session_record_gradient(s, "p", "k", CG_GRAD_PRESENT, &one, &err), 0);
    assert_int_equal(cg_session_end_span(s, b, &err), 0);
    REFUSED(cg_session_end_span(s, b, &err), CG_ESTATE); /* twice */
    assert_int_equal(cg_session_end_span(s, a, &err), 0);
    assert_int_equal(cg_session_end_span(s, m, &err), 0);
    assert_int_equal(cg_session_finish(s, &err), 0);
    /* everything after finish is refused */
    REFUSED(cg_session_finish(s, &err), CG_ESTATE);
    REFUSED(cg_session_begin_span(s, "late", CG_SPAN_FUNCTION, &a, &err), CG_ESTATE);
    REFUSED(cg_session_record_data_edge(s, "a", "b", &err), CG_ESTATE);
    REFUSED(cg_session_flush(s, &err), CG_ESTATE);
    cg_session_free(s);

    char *text = cap_slurp(f->path);
    assert_true(cap_has_line(text, "{\"kind\":\"gradient\",\"event_id\":\"gradient-1\",\"root\":"
                                   "\"p\",\"key\":\"k\",\"state\":\"present\",\"norm\":1.0}"));
    free(text);
    cg_trace *t = cap_parse_ok(f->path);
    assert_int_equal(t->n_spans, 4);
    assert_int_equal(t->n_gradients, 1);
    cg_trace_free(t);
}

static void test_open_refuses_invalid_runs(void **st) {
    fx *f = *st;
    cg_error err;
    cg_profile_run *r = cg_profile_run_training("demo::step", 0, "cpu");
    assert_non_null(r);
    assert_null(cg_session_open(f->path, r, &err));
    assert_int_equal(err.code, CG_EINVAL);
    assert_non_null(strstr(err.msg, "capture_step"));
    cg_profile_run_free(r);
    assert_false(cg_path_exists(f->path));

    r = cap_demo_run();
    cg_capture_contract c = {.gradients = CG_COV_COMPLETE}; /* complete without a contract */
    assert_int_equal(cg_profile_run_capture_contract(r, &c), 0);
    assert_null(cg_session_open(f->path, r, &err));
    assert_non_null(strstr(err.msg, "complete gradient coverage requires an exact gradient contract"));
    const char *dup[] = {"x", "x"};
    cg_capture_contract c2 = {.required_semantic_labels = {dup, 2}};
    assert_int_equal(cg_profile_run_capture_contract(r, &c2), 0);
    assert_null(cg_session_open(f->path, r, &err));
    const char *blank[] = {" "};
    cg_capture_contract c3 = {.required_semantic_labels = {blank, 1}};
    assert_int_equal(cg_profile_run_capture_contract(r, &c3), 0);
    assert_null(cg_session_open(f->path, r, &err));
    cg_profile_run_free(r);
    assert_false(cg_path_exists(f->path));

    r = cg_profile_run_training("  ", 1, "cpu"); /* blank entrypoint */
    assert_null(cg_session_open(f->path, r, &err));
    cg_profile_run_free(r);
    r = cg_profile_run_inference("demo", 2, "cpu");
    cg_profile_run_warmup_steps(r, 2); /* warmup must stay below the capture step */
    assert_null(cg_session_open(f->path, r, &err));
    cg_profile_run_free(r);
    assert_false(cg_path_exists(f->path));
    assert_null(cg_session_open(f->path, NULL, &err));
    assert_null(cg_session_open("", NULL, &err));
}

static void test_clock_and_durations(void **st) {
    fx *f = *st;
    cg_error err;
    struct timespec before;
    clock_gettime(CLOCK_MONOTONIC, &before);
    cg_session *s = cap_open_ok(f->path);
    uint64_t ns = 1;
    assert_int_equal(cg_session_host_timestamp_ns(s, &before, &ns, &err), -1);
    assert_int_equal(err.code, CG_EINVAL);
    assert_int_equal(ns, 1); /* untouched */
    uint64_t t0 = cg_session_host_now_ns(s);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    assert_int_equal(cg_session_host_timestamp_ns(s, &now, &ns, &err), 0);
    assert_true(ns >= t0 && ns <= cg_session_host_now_ns(s));

    cg_span_id a;
    uint64_t d = 0;
    assert_int_equal(cg_session_begin_span(s, "a", CG_SPAN_OP, &a, &err), 0);
    assert_int_equal(cg_session_span_duration_ns(s, a, &d, &err), -1);
    assert_int_equal(err.code, CG_ESTATE);
    assert_int_equal(cg_session_span_duration_ns(s, 50, &d, &err), -1);
    assert_int_equal(err.code, CG_EINVAL);
    spin(s, 1000);
    assert_int_equal(cg_session_end_span(s, a, &err), 0);
    assert_int_equal(cg_session_span_duration_ns(s, a, &d, &err), 0);
    assert_true(d >= 1000);
    /* ops after a closed span's end are refused; the open root takes them */
    cg_op_record op = {.op_name = "late", .dtype = "f32", .device = "cpu"};
    spin(s, 10);
    op.timestamp_ns = cg_session_host_now_ns(s) - 1; /* after a ended */
    op.duration_ns = 1;
    assert_int_equal(cg_session_record_op(s, a, &op, &err), -1);
    assert_non_null(strstr(err.msg, "outside span"));
    op.timestamp_ns = 0; /* now − 0 = now: also after a ended */
    op.duration_ns = 0;
    assert_int_equal(cg_session_record_op(s, a, &op, &err), -1);
    assert_int_equal(cg_session_record_op(s, CG_SPAN_ROOT, &op, &err), 0);
    assert_int_equal(cg_session_finish(s, &err), 0);
    cg_session_free(s);
    cg_trace *t = cap_parse_ok(f->path);
    const cg_span *sa = cg_trace_find_span(t, "s2");
    assert_int_equal(sa->duration_ns, d);
    assert_int_equal(sa->kind, CG_SPAN_OP);
    cg_trace_free(t);
}

static void test_finish_failed_keeps_open_spans(void **st) {
    fx *f = *st;
    cg_error err;
    cg_session *s = cap_open_ok(f->path);
    cg_span_id m, a;
    assert_int_equal(cg_session_begin_measurement(s, "region", &m, &err), 0);
    assert_int_equal(cg_session_begin_step_span(s, "fwd", CG_STEP_FORWARD, CG_SPAN_FUNCTION, &a,
                                                &err), 0);
    assert_int_equal(cg_session_finish_failed(s, "out of memory in forward", &err), 0);
    cg_session_free(s);
    cg_trace *t = cap_parse_ok(f->path);
    assert_int_equal(t->terminal.outcome, CG_OUTCOME_FAILED);
    assert_string_equal(t->terminal.reason, "out of memory in forward");
    assert_int_equal(t->n_spans, 3);
    for (size_t i = 0; i < t->n_spans; i++) assert_false(t->spans[i].closed);
    cap_assert_healthy(t, false);
    cg_trace_free(t);
}

static void test_inference_run_and_builders_in_meta(void **st) {
    fx *f = *st;
    cg_error err;
    cg_profile_run *r = cg_profile_run_inference("serve::predict", 5, "cuda:1");
    assert_int_equal(cg_profile_run_correlation_id(r, "req-17"), 0);
    assert_int_equal(cg_profile_run_run_id(r, "run-fixed-1"), 0);
    cg_profile_run_device_synchronized(r);
    cg_comparison_identity id = {.workload_id = "w", .model_id = "m", .config_id = "c",
                                 .data_id = "d", .seed_policy = "fixed", .physical_batch = 4,
                                 .accumulation_steps = 1, .precision = "bf16",
                                 .device_state = "exclusive"};
    assert_int_equal(cg_profile_run_comparison_identity(r, &id), 0);
    cg_session *s = cg_session_open(f->path, r, &err);
    cg_profile_run_free(r);
    assert_non_null(s);
    cg_span_id m;
    assert_int_equal(cg_session_begin_measurement(s, "predict", &m, &err), 0);
    assert_int_equal(cg_session_end_span(s, m, &err), 0);
    assert_int_equal(cg_session_finish(s, &err), 0);
    cg_session_free(s);
    char *text = cap_slurp(f->path);
    char *first = cap_line(text, 0);
    assert_non_null(strstr(first, "\"run_id\":\"run-fixed-1\",\"correlation_id\":\"req-17\","
                                  "\"entrypoint\":\"serve::predict\",\"phase\":\"infer\""));
    assert_non_null(strstr(first, "\"capture_step\":5,\"warmup_steps\":4,\"device\":\"cuda:1\","
                                  "\"measured_region_device_synchronized\":true,"
                                  "\"timing_mode\":\"device_synchronized\""));
    assert_non_null(strstr(first, "\"comparison_identity\":{\"workload_id\":\"w\""));
    assert_non_null(strstr(first, "\"tags\":{}"));
    free(first);
    free(text);
    cg_trace *t = cap_parse_ok(f->path);
    assert_int_equal(t->run.phase, CG_PHASE_INFER);
    assert_non_null(t->run.identity);
    assert_int_equal(t->run.identity->physical_batch, 4);
    cap_assert_healthy(t, true);
    cg_trace_free(t);
}

/* A write error is sticky: run in a child whose file size limit makes the
 * second flush fail with EFBIG. */
static void test_write_error_is_sticky(void **st) {
    fx *f = *st;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cg_error err;
        signal(SIGXFSZ, SIG_IGN);
        cg_session *s = cap_open_ok(f->path);
        struct rlimit rl = {.rlim_cur = 4096, .rlim_max = RLIM_INFINITY};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(10);
        cg_span_id id;
        for (int i = 0; i < 200; i++) {
            if (cg_session_begin_span(s, "some fairly long span name to fill the file", CG_SPAN_FUNCTION, &id, &err)) _exit(11);
            if (cg_session_end_span(s, id, &err)) _exit(12);
        }
        if (cg_session_flush(s, &err) == 0) _exit(13);
        if (err.code != CG_EIO) _exit(14);
        /* every later call fails, naming the earlier cause */
        if (cg_session_begin_span(s, "x", CG_SPAN_FUNCTION, &id, &err) == 0) _exit(15);
        if (err.code != CG_EIO || !strstr(err.msg, "failed earlier")) _exit(16);
        if (cg_session_finish(s, &err) == 0) _exit(17);
        if (cg_session_record_data_edge(s, "a", "b", &err) == 0) _exit(18);
        cg_session_free(s);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    cg_error err;
    assert_null(cg_trace_read_file(f->path, NULL, &err)); /* no terminal */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_full_lifecycle_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_misuse_is_refused_without_output, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_refuses_invalid_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clock_and_durations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_finish_failed_keeps_open_spans, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inference_run_and_builders_in_meta, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_error_is_sticky, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
