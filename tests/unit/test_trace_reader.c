/* Unit tests for the trace/10 reader, writer and summary (spec §1–3). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fs.h"
#include "trace/trace.h"
#include "test_tmpdir.h"

static char *fixture(const char *name) {
    const char *dir = getenv("CG_FIXTURES");
    char path[4096];
    snprintf(path, sizeof path, "%s/reader/%s", dir ? dir : "fixtures", name);
    cg_error err;
    char *data = cg_read_file(path, 0, NULL, &err);
    assert_non_null(data);
    return data;
}

static void test_illustrative_parses(void **st) {
    (void)st;
    char *data = fixture("illustrative.jsonl");
    cg_error err;
    cg_err_clear(&err);
    cg_trace *t = cg_trace_read_mem(data, strlen(data), "illustrative.jsonl", NULL, &err);
    if (!t) fail_msg("%s", err.msg);
    assert_string_equal(t->schema, CG_TRACE_SCHEMA);
    assert_string_equal(t->run.run_id, "run-4242-1");
    assert_int_equal(t->run.phase, CG_PHASE_TRAIN);
    assert_int_equal(t->run.capture_step, 3);
    assert_true(t->run.measured_region_device_synchronized);
    assert_non_null(t->run.identity);
    assert_string_equal(t->run.identity->implementation_id, "git:abc123");
    assert_null(t->run.identity->pair_id);
    assert_int_equal(t->run.contract.required_semantic_labels.n, 1);
    assert_int_equal(t->n_spans, 5);
    assert_string_equal(t->spans[0].id, "s1");
    assert_string_equal(t->spans[1].id, "s2");
    assert_true(t->spans[1].measured);
    assert_int_equal(t->spans[1].duration_ns, 950);
    assert_int_equal(t->spans[2].step, CG_STEP_FORWARD);
    assert_int_equal(t->n_ops, 1);
    assert_int_equal(t->ops[0].input_dense_bytes, 1536);
    assert_int_equal(t->n_tensors, 1);
    assert_int_equal(t->tensors[0].category, CG_CAT_ACTIVATION);
    assert_int_equal(t->n_tensor_stats, 1);
    assert_true(t->tensor_stats[0].rms == 0.71);
    assert_int_equal(t->n_memory, 2);
    assert_true(t->memory[1].is_free);
    assert_int_equal(t->n_device_memory, 1);
    assert_true(t->device_memory[0].has_used && !t->device_memory[0].has_free && t->device_memory[0].has_reserved);
    assert_int_equal(t->n_device_intervals, 1);
    assert_int_equal(t->n_gradients, 2);
    assert_true(t->gradients[1].has_norm && t->gradients[1].norm == 0.0);
    assert_int_equal(t->n_edges, 2);
    assert_true(t->edges[0].is_data);
    assert_int_equal(t->terminal.outcome, CG_OUTCOME_COMPLETE);

    cg_trace_summary s;
    cg_trace_summary_build(t, &s);
    assert_int_equal(s.op_count, 1);
    assert_int_equal(s.total_ns, 950);
    assert_int_equal(s.span_count, 5);
    assert_int_equal(s.root_span_count, 1);
    assert_int_equal(s.max_depth, 2); /* parent links: a root has depth 0 (build_summary) */
    assert_int_equal(s.alloc_count, 1);
    assert_int_equal(s.free_count, 1);
    assert_true(s.has_logical_peak);
    assert_int_equal(s.logical_peak_bytes, 512);
    cg_trace_free(t);
    free(data);
}

/* parse → write → parse → write is a fixed point, and every input line's JSON value
 * reappears in the output (the writer reorders records into to_events() order). */
static void test_roundtrip_value_identical(void **st) {
    (void)st;
    char *data = fixture("illustrative.jsonl");
    cg_error err;
    size_t in_len = strlen(data);
    cg_trace *t = cg_trace_read_mem(data, strlen(data), "in", NULL, &err);
    assert_non_null(t);
    cg_buf out1 = CG_BUF_INIT, out2 = CG_BUF_INIT;
    cg_trace_write(&out1, t);
    cg_trace *t2 = cg_trace_read_mem(out1.data, out1.len, "out1", NULL, &err);
    if (!t2) fail_msg("%s", err.msg);
    cg_trace_write(&out2, t2);
    assert_string_equal(out1.data, out2.data);

    cg_arena a;
    cg_arena_init(&a, 0);
    size_t in_lines = 0;
    for (char *line = strtok(data, "\n"); line; line = strtok(NULL, "\n")) {
        cg_jv *v = cg_json_parse(&a, line, strlen(line), NULL, &err);
        assert_non_null(v);
        in_lines++;
        bool found = false;
        char *copy = cg_arena_strdup(&a, out1.data);
        char *save = NULL;
        for (char *o = strtok_r(copy, "\n", &save); o; o = strtok_r(NULL, "\n", &save)) {
            cg_jv *w = cg_json_parse(&a, o, strlen(o), NULL, &err);
            if (cg_jv_equal(v, w)) found = true;
        }
        if (!found) fail_msg("input line not reproduced: %s", line);
    }
    assert_int_equal(in_lines, 23);
    /* same multiset of lines: the output only reorders records, so total bytes match
     * (empty partition lists are omitted, skip_serializing_if = Vec::is_empty) */
    assert_int_equal(out1.len, in_len);
    cg_arena_free(&a);
    cg_buf_free(&out1);
    cg_buf_free(&out2);
    cg_trace_free(t);
    cg_trace_free(t2);
    free(data);
}

static const char *META =
    "{\"kind\":\"meta\",\"schema\":\"candle-graph/trace/10\",\"run_id\":\"r\",\"correlation_id\":\"c\","
    "\"entrypoint\":\"e\",\"phase\":\"train\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"capture_step\":1,"
    "\"warmup_steps\":0,\"device\":\"cpu\",\"timing_mode\":\"host\",\"capture_contract\":{\"measurement_scope\":"
    "\"unknown\",\"operations\":\"none\",\"logical_memory\":\"none\",\"physical_memory\":\"none\","
    "\"device_timing\":\"none\"},\"tags\":{}}\n";

static void expect_error(const char *body, const char *substr, int line) {
    char doc[8192];
    snprintf(doc, sizeof doc, "%s%s", META, body);
    cg_error err;
    cg_err_clear(&err);
    cg_trace *t = cg_trace_read_mem(doc, strlen(doc), "t.jsonl", NULL, &err);
    if (t) fail_msg("expected error containing '%s' but parse succeeded", substr);
    if (!strstr(err.msg, substr)) fail_msg("error '%s' lacks '%s'", err.msg, substr);
    if (line >= 0) assert_int_equal(err.line, line);
}

static void test_parse_rules(void **st) {
    (void)st;
    const char *term = "{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":10}\n";
    (void)term;
    expect_error("{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":10}\n{\"kind\":\"span_start\",\"id\":\"s1\",\"name\":\"x\",\"start_ns\":0,\"span_kind\":\"function\"}\n",
                 "terminal event must be the final trace record", 3);
    expect_error("{\"kind\":\"span_end\",\"id\":\"s9\"}\n", "span_end for unknown span", 2);
    expect_error("{\"kind\":\"bogus\"}\n", "unknown variant `bogus`", 2);
    expect_error("{\"kind\":\"gradient\",\"event_id\":\"g\",\"root\":\"r\",\"param_key\":\"k\",\"state\":\"missing\"}\n",
                 "missing field `key`", 2);
    expect_error("{\"kind\":\"span_start\",\"id\":\"s1\",\"name\":\"x\",\"start_ns\":-1,\"span_kind\":\"function\"}\n",
                 "expected u64", 2);
    expect_error("", "trace stream is missing its terminal event", 0);
    expect_error("{\"kind\":\"terminal\",\"outcome\":\"failed\",\"timestamp_ns\":1}\n",
                 "failed terminal event requires a non-empty reason", 0);
    expect_error("{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":1,\"reason\":\"x\"}\n",
                 "complete terminal event cannot contain a failure reason", 0);
    expect_error("{\"kind\":\"span_start\",\"id\":\"s1\",\"name\":\"x\",\"start_ns\":5,\"span_kind\":\"function\"}\n"
                 "{\"kind\":\"span_end\",\"id\":\"s1\",\"duration_ns\":10}\n"
                 "{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":14}\n",
                 "terminal timestamp 14 precedes host evidence ending at 15", 0);
    expect_error("{\"kind\":\"tensor_stats\",\"span_id\":\"s1\",\"label\":\"a\",\"shape\":[2,3],\"dtype\":\"f32\","
                 "\"elements\":5,\"non_finite\":0,\"rms\":1,\"abs_max\":1,\"mean\":0}\n",
                 "invalid tensor_stats event at index 1", 2);
    /* a second meta that deserializes is reported by the first-record rule (a bare
     * {"kind":"meta"} is a serde failure first) */
    expect_error(META, "meta event must be the first non-empty trace record, found at index 1", 2);
    expect_error("{\"kind\":\"meta\"}\n", "missing field `schema`", 2);
    expect_error("{\"kind\":\"op\",\"span_id\":\"s1\",\"op_name\":\"x\",\"shape\":[],\"dtype\":\"f32\",\"device\":\"cpu\",\"duration_ns\":1,\"input_dense_bytes\":1,\"input_dense_bytes\":2}\n",
                 "duplicate field `input_dense_bytes`", 2);
    expect_error("{\"kind\":\"span_start\" \n", "parse trace JSONL line 2", 2);
    /* no meta at all: from_events has no rule for the first record, the missing meta is reported after */
    cg_error err;
    const char *nf = "\n  \n{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":0}\n";
    assert_null(cg_trace_read_mem(nf, strlen(nf), "x", NULL, &err));
    assert_string_equal(err.msg, "trace stream is missing a meta event with run metadata");
    assert_int_equal(err.line, 0);
    assert_null(cg_trace_read_mem("", 0, "x", NULL, &err));
    assert_non_null(strstr(err.msg, "missing a meta event with run metadata"));
}

static void test_limits(void **st) {
    (void)st;
    cg_trace_limits lim;
    cg_trace_limits_default(&lim);
    lim.max_line_bytes = 100;
    char doc[8192];
    snprintf(doc, sizeof doc, "%s{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":0}\n", META);
    cg_error err;
    assert_null(cg_trace_read_mem(doc, strlen(doc), "x", &lim, &err));
    assert_int_equal(err.code, CG_ELIMIT);
    assert_non_null(strstr(err.msg, "longer than the limit"));
    cg_trace_limits_default(&lim);
    lim.max_records = 1;
    assert_null(cg_trace_read_mem(doc, strlen(doc), "x", &lim, &err));
    assert_int_equal(err.code, CG_ELIMIT);
    cg_trace_limits_default(&lim);
    lim.json.max_depth = 1;
    assert_null(cg_trace_read_mem(doc, strlen(doc), "x", &lim, &err));
    assert_int_equal(err.code, CG_ELIMIT);
    cg_trace_limits_default(&lim);
    cg_trace *t = cg_trace_read_mem(doc, strlen(doc), "x", &lim, &err);
    assert_non_null(t);
    cg_trace_free(t);
}

static void test_dtype(void **st) {
    (void)st;
    assert_int_equal(cg_dtype_size(" BF16 "), 2);
    assert_int_equal(cg_dtype_size("f8"), 1);
    assert_int_equal(cg_dtype_size("u64"), 8);
    assert_int_equal(cg_dtype_size("q4"), 0);
    uint64_t dims[] = {8, 16}, big[] = {UINT64_MAX, 3};
    cg_shape s = {dims, 2}, e = {NULL, 0}, b = {big, 2};
    uint64_t out;
    assert_true(cg_dense_bytes(&s, "f32", &out));
    assert_int_equal(out, 512);
    assert_true(cg_dense_bytes(&e, "f64", &out));
    assert_int_equal(out, 8);
    assert_true(cg_dense_bytes(&b, "u8", &out));
    assert_true(out == UINT64_MAX);
    assert_false(cg_dense_bytes(&s, "weird", &out));
    assert_true(cg_str_blank(" \t\xe3\x80\x80"));
    assert_false(cg_str_blank(" a "));
}

/* The illustrative trace with its first op line repeated n times (every 7th
 * copy through the general path: an escaped name; every 11th padded; blank
 * lines between some), long enough to cross the file reader's buffer. */
static char *many_ops(size_t n, size_t *len) {
    char *base = fixture("illustrative.jsonl");
    const char *op = strstr(base, "{\"kind\":\"op\"");
    assert_non_null(op);
    const char *op_end = strchr(op, '\n') + 1;
    size_t cap = strlen(base) + n * ((size_t)(op_end - op) + 16) + 1, at = (size_t)(op_end - base);
    char *doc = malloc(cap);
    assert_non_null(doc);
    memcpy(doc, base, at);
    const char *after_name = strstr(op, "\"matmul\"") + strlen("\"matmul\""); /* ,"inputs":... */
    for (size_t i = 0; i < n; i++) {
        int w = i % 7 == 0 ? snprintf(doc + at, cap - at, "{\"kind\":\"op\",\"span_id\":\"s3\",\"op_name\":\"m\\u0061t%zu\"%.*s",
                                      i, (int)(op_end - after_name), after_name)
                           : snprintf(doc + at, cap - at, "%s%.*s%s", i % 11 == 0 ? "  " : "",
                                      (int)(op_end - op - 1), op, i % 5 == 0 ? "\n\n" : "\n");
        assert_true(w > 0 && (size_t)w < cap - at);
        at += (size_t)w;
    }
    size_t rest = strlen(op_end);
    assert_true(at + rest < cap);
    memcpy(doc + at, op_end, rest + 1);
    *len = at + rest;
    free(base);
    return doc;
}

static void expect_same_ops(const cg_trace *a, const cg_trace *b) {
    assert_int_equal(a->n_ops, b->n_ops);
    for (size_t i = 0; i < a->n_ops; i++) {
        assert_string_equal(a->ops[i].op_name, b->ops[i].op_name);
        assert_string_equal(a->ops[i].output, b->ops[i].output);
        assert_int_equal(a->ops[i].inputs.n, b->ops[i].inputs.n);
        assert_int_equal(a->ops[i].timestamp_ns, b->ops[i].timestamp_ns);
        assert_int_equal(a->ops[i].shape.n, b->ops[i].shape.n);
    }
    assert_int_equal(a->n_memory, b->n_memory);
    assert_int_equal(a->n_spans, b->n_spans);
}

/* A file and a pipe are read through read() into a buffer, text in memory as
 * it is: the same document every way, whatever falls on a buffer edge. */
static void test_file_pipe_memory_agree(void **st) {
    (void)st;
    size_t len;
    char *doc = many_ops(60000, &len);
    assert_true(len > (size_t)(8u << 20));
    char *dir = test_tmpdir("reader");
    assert_non_null(dir);
    char path[4200];
    snprintf(path, sizeof path, "%s/trace.jsonl", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(doc, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    cg_error err;
    cg_err_clear(&err);
    cg_trace *mem = cg_trace_read_mem(doc, len, "x", NULL, &err);
    if (!mem) fail_msg("%s", err.msg);
    assert_int_equal(mem->n_ops, 60000 + 1);
    assert_string_equal(mem->ops[1].op_name, "mat0"); /* the escaped copy, decoded */
    cg_trace *file = cg_trace_read_file(path, NULL, &err);
    if (!file) fail_msg("%s", err.msg);
    expect_same_ops(mem, file);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        close(fds[0]);
        for (size_t off = 0; off < len;) {
            ssize_t w = write(fds[1], doc + off, len - off > 65536 ? 65536 : len - off);
            if (w <= 0) _exit(1);
            off += (size_t)w;
        }
        _exit(0);
    }
    close(fds[1]);
    char fdpath[64];
    snprintf(fdpath, sizeof fdpath, "/dev/fd/%d", fds[0]);
    cg_trace *piped = cg_trace_read_file(fdpath, NULL, &err);
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    if (!piped) fail_msg("%s", err.msg);
    expect_same_ops(mem, piped);
    cg_trace_free(piped);
    cg_trace_free(file);
    cg_trace_free(mem);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
    free(dir);
    free(doc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_pipe_memory_agree),
        cmocka_unit_test(test_illustrative_parses), cmocka_unit_test(test_roundtrip_value_identical),
        cmocka_unit_test(test_parse_rules), cmocka_unit_test(test_limits), cmocka_unit_test(test_dtype),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
