/* trace reader: every failure of a trace's own content carries the reason
 * trace_invalid, set by the reader where it detects it (base/reason.def) —
 * a JSON syntax error, a record serde refuses, a deferred from_events rule,
 * a rule of the finished stream, invalid UTF-8, and each reader limit (line
 * length, record count, the JSON limits of a line); an I/O failure of the
 * reader's own (a missing file) carries none. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace.h"

static void fixture_refused(const char *name) {
    const char *dir = getenv("CG_FIXTURES");
    char path[1024];
    snprintf(path, sizeof path, "%s/trace/%s/trace.jsonl", dir ? dir : "fixtures", name);
    cg_error err;
    cg_err_clear(&err);
    cg_trace *t = cg_trace_read_file(path, NULL, &err);
    if (t) fail_msg("%s: read", name);
    if (err.reason != CG_R_TRACE_INVALID) fail_msg("%s: reason %s (%s)", name, cg_reason_code(err.reason), err.msg);
}

static void test_fixture_classes(void **st) {
    (void)st;
    fixture_refused("json_syntax_error");      /* syntax */
    fixture_refused("missing_kind");           /* serde: no tag */
    fixture_refused("missing_required_field"); /* serde: missing field */
    fixture_refused("meta_not_first");         /* deferred record-order rule */
    fixture_refused("duplicate_span_start");   /* deferred rule */
    fixture_refused("duplicate_terminal");     /* deferred rule */
    fixture_refused("missing_meta");           /* rule of the finished stream */
}

#define META                                                                                                  \
    "{\"kind\":\"meta\",\"schema\":\"candle-graph/trace/10\",\"run_id\":\"r\",\"correlation_id\":\"c\","            \
    "\"entrypoint\":\"e\",\"phase\":\"train\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"capture_step\":1,"      \
    "\"warmup_steps\":0,\"device\":\"cpu\",\"timing_mode\":\"host\",\"capture_contract\":{\"measurement_scope\":"   \
    "\"unknown\",\"operations\":\"none\",\"logical_memory\":\"none\",\"physical_memory\":\"none\","              \
    "\"device_timing\":\"none\"},\"tags\":{}}\n"
#define TERM "{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":0}\n"

static void refused_mem(const char *doc, const cg_trace_limits *lim, cg_errcode code) {
    cg_error err;
    cg_err_clear(&err);
    assert_null(cg_trace_read_mem(doc, strlen(doc), "x", lim, &err));
    assert_int_equal(err.code, code);
    if (err.reason != CG_R_TRACE_INVALID) fail_msg("reason %s (%s)", cg_reason_code(err.reason), err.msg);
}

static void test_utf8_and_limits(void **st) {
    (void)st;
    refused_mem(META "{\"kind\":\"terminal\",\"outcome\":\"\xff\",\"timestamp_ns\":0}\n", NULL, CG_EPARSE);
    cg_trace_limits lim;
    cg_trace_limits_default(&lim);
    lim.max_line_bytes = 40;
    refused_mem(META TERM, &lim, CG_ELIMIT);
    cg_trace_limits_default(&lim);
    lim.max_records = 1;
    refused_mem(META TERM, &lim, CG_ELIMIT);
    cg_trace_limits_default(&lim);
    lim.json.max_depth = 0;
    refused_mem(META TERM, &lim, CG_ELIMIT);
    cg_trace_limits_default(&lim);
    lim.json.max_string = 3;
    refused_mem(META TERM, &lim, CG_ELIMIT);
    cg_trace_limits_default(&lim);
    cg_error err;
    cg_trace *t = cg_trace_read_mem(META TERM, strlen(META TERM), "x", &lim, &err);
    assert_non_null(t); /* the same document within the limits reads */
    cg_trace_free(t);
}

static void test_io_has_no_reason(void **st) {
    (void)st;
    cg_error err;
    cg_err_clear(&err);
    assert_null(cg_trace_read_file("/nonexistent/trace.jsonl", NULL, &err));
    assert_int_equal(err.code, CG_EIO);
    assert_int_equal(err.reason, CG_R_NONE);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_classes),
        cmocka_unit_test(test_utf8_and_limits),
        cmocka_unit_test(test_io_has_no_reason),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
