/* The reader's fast path (lib/trace/scan.c) against its general path
 * (cg_json_parse + wire_decode, cg_trace_limits.general_only): on every
 * fixture trace, on hand-written edge lines, and on byte mutations of the
 * reader fixture, both must return the same document (rewritten as JSONL,
 * plus the reader-only fields) or the same error message and line. */
#define _XOPEN_SOURCE 700
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/fs.h"
#include "trace/trace.h"

/* The document as text: its JSONL rewrite plus what the rewrite leaves out. */
static void describe(cg_buf *b, const cg_trace *t) {
    cg_trace_write(b, t);
    for (size_t i = 0; i < t->n_spans; i++) cg_buf_printf(b, "span %s line %zu\n", t->spans[i].id, (size_t)t->spans[i].line);
    for (size_t i = 0; i < t->n_ops; i++)
        cg_buf_printf(b, "op %d %d %llu\n", t->ops[i].has_output_dense_bytes, t->ops[i].output_dense_bytes_derived,
                      (unsigned long long)t->ops[i].output_dense_bytes);
    for (size_t i = 0; i < t->n_tensors; i++)
        cg_buf_printf(b, "tensor %d %d %llu\n", t->tensors[i].has_dense_bytes, t->tensors[i].dense_bytes_derived,
                      (unsigned long long)t->tensors[i].dense_bytes);
}

/* Reads data both ways; fails the test when they differ. Returns true when it parsed. */
static bool same_both_ways(const char *data, size_t len, const cg_trace_limits *base) {
    cg_trace_limits lim[2];
    cg_buf out[2];
    cg_error err[2];
    bool ok[2];
    for (int k = 0; k < 2; k++) {
        lim[k] = *base;
        lim[k].general_only = k == 1;
        out[k] = (cg_buf)CG_BUF_INIT;
        cg_err_clear(&err[k]);
        cg_trace *t = cg_trace_read_mem(data, len, "t.jsonl", &lim[k], &err[k]);
        ok[k] = t != NULL;
        if (t) describe(&out[k], t);
        else cg_buf_printf(&out[k], "error %d line %d: %s\n", (int)err[k].code, err[k].line, err[k].msg);
        cg_trace_free(t);
    }
    if (ok[0] != ok[1] || out[0].len != out[1].len || memcmp(out[0].data, out[1].data, out[0].len) != 0)
        fail_msg("fast and general paths differ on\n%.*s\nfast:\n%s\ngeneral:\n%s", (int)(len > 2000 ? 2000 : len),
                 data, out[0].data ? out[0].data : "", out[1].data ? out[1].data : "");
    cg_buf_free(&out[0]);
    cg_buf_free(&out[1]);
    return ok[0];
}

static bool same_default(const char *data, size_t len) {
    cg_trace_limits lim;
    cg_trace_limits_default(&lim);
    return same_both_ways(data, len, &lim);
}

static size_t n_files, n_parsed;

static int visit(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)ftw;
    size_t n = strlen(path);
    if (flag != FTW_F || n < 6 || strcmp(path + n - 6, ".jsonl") != 0 || st->st_size > (8 << 20)) return 0;
    cg_error err;
    size_t len = 0;
    char *data = cg_read_file(path, 0, &len, &err);
    assert_non_null(data);
    n_files++;
    n_parsed += same_default(data, len);
    free(data);
    return 0;
}

static const char *fixtures(void) {
    const char *dir = getenv("CG_FIXTURES");
    return dir ? dir : "fixtures";
}

static void test_every_fixture_trace(void **st) {
    (void)st;
    n_files = n_parsed = 0;
    assert_int_equal(nftw(fixtures(), visit, 16, FTW_PHYS), 0);
    assert_true(n_files > 100);
    assert_true(n_parsed > 50);
}

static const char META[] =
    "{\"kind\":\"meta\",\"schema\":\"candle-graph/trace/10\",\"run_id\":\"r\",\"correlation_id\":\"c\","
    "\"entrypoint\":\"e\",\"phase\":\"train\",\"timestamp\":\"t\",\"capture_step\":1,\"warmup_steps\":0,"
    "\"device\":\"cpu\",\"timing_mode\":\"host\",\"capture_contract\":{\"measurement_scope\":\"profiled_work\","
    "\"operations\":\"partial\",\"logical_memory\":\"partial\",\"physical_memory\":\"none\",\"device_timing\":"
    "\"none\"},\"tags\":{}}\n"
    "{\"kind\":\"span_start\",\"id\":\"s1\",\"name\":\"root\",\"start_ns\":0,\"span_kind\":\"function\"}\n";
static const char END[] =
    "{\"kind\":\"span_end\",\"id\":\"s1\",\"duration_ns\":100000}\n"
    "{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":200000}\n";

/* Lines the fast path must take or refuse exactly as the general path decides. */
static const char *const EDGE_LINES[] = {
    "{\"kind\":\"op\",\"span_id\":\"s1\",\"op_name\":\"m\\u00e9\",\"inputs\":[],\"shape\":[2,3],\"dtype\":\"f32\","
    "\"device\":\"cpu\",\"duration_ns\":5}",
    "{\"kind\":\"op\",\"span_id\":\"s1\",\"op_name\":\"m\xc3\xa9\",\"inputs\":[\"a\",\"b\"],\"output\":null,"
    "\"shape\":[],\"dtype\":\"bf16\",\"device\":\"cpu\",\"duration_ns\":5,\"input_dense_bytes\":3}",
    "{\"kind\":\"op\",\"span_id\":\"s1\",\"op_name\":\"\xff\",\"shape\":[1],\"dtype\":\"f32\",\"device\":\"cpu\","
    "\"duration_ns\":5,\"input_dense_bytes\":0}",
    "{ \"kind\" : \"op\" , \"span_id\":\"s1\",\"op_name\":\"x\",\"shape\":[ 1 , 2 ],\"dtype\":\"u8\",\"device\":\"c\","
    "\"duration_ns\":5,\"input_dense_bytes\":0 ,\"extra\":[1,\"a\"]}",
    "{\"kind\":\"op\",\"span_id\":\"s1\",\"op_name\":\"x\",\"shape\":[1],\"dtype\":\"f32\",\"device\":\"c\","
    "\"duration_ns\":5,\"duration_ns\":6,\"input_dense_bytes\":0}",
    "{\"kind\":\"op\",\"span_id\":\"s1\",\"op_name\":\"x\",\"shape\":[-1],\"dtype\":\"f32\",\"device\":\"c\","
    "\"duration_ns\":5,\"input_dense_bytes\":0}",
    "{\"kind\":\"op\",\"span_id\":\"s1\",\"op_name\":\"x\",\"shape\":[1],\"dtype\":\"f32\",\"device\":\"c\","
    "\"duration_ns\":18446744073709551616,\"input_dense_bytes\":0}",
    "{\"kind\":\"op\",\"span_id\":\"s1\",\"op_name\":\"x\",\"shape\":[1],\"dtype\":\"f32\",\"device\":\"c\","
    "\"duration_ns\":18446744073709551615,\"input_dense_bytes\":0,\"output_dense_bytes\":null}",
    "{\"kind\":\"op\",\"span_id\":\"s1\",\"op_name\":\"x\",\"shape\":[1],\"dtype\":\"f32\",\"device\":\"c\","
    "\"duration_ns\":1.0,\"input_dense_bytes\":0}",
    "{\"kind\":\"op\",\"span_id\":\"s1\",\"op_name\":\"x\",\"shape\":[01],\"dtype\":\"f32\",\"device\":\"c\","
    "\"duration_ns\":1,\"input_dense_bytes\":0}",
    "{\"kind\":\"op\",\"span_id\":\"s1\",\"op_name\":\"x\",\"shape\":{\"a\":1},\"dtype\":\"f32\",\"device\":\"c\"}",
    "{\"kind\":\"op\",\"span_id\":\"s1\",\"op_name\":\"x\",\"shape\":[1],\"dtype\":\"f32\",\"device\":\"c\","
    "\"duration_ns\":1,\"input_dense_bytes\":0,}",
    "{\"kind\":\"tensor_stats\",\"span_id\":\"s1\",\"label\":\"l\",\"shape\":[2],\"dtype\":\"f32\",\"elements\":2,"
    "\"non_finite\":0,\"rms\":1e-7,\"abs_max\":-0,\"mean\":-0.0}",
    "{\"kind\":\"tensor_stats\",\"span_id\":\"s1\",\"label\":\"l\",\"shape\":[2],\"dtype\":\"f32\",\"elements\":2,"
    "\"non_finite\":0,\"rms\":1e400,\"abs_max\":1,\"mean\":-12345678901234567890123}",
    "{\"kind\":\"tensor_stats\",\"span_id\":\"s1\",\"label\":\"l\",\"shape\":[2],\"dtype\":\"f32\",\"elements\":2,"
    "\"non_finite\":0,\"rms\":0.71,\"abs_max\":9007199254740993,\"mean\":-9223372036854775808}",
    "{\"kind\":\"tensor_stats\",\"span_id\":\"s1\",\"label\":\"l\",\"shape\":[2],\"dtype\":\"f32\",\"elements\":2,"
    "\"non_finite\":0,\"rms\":3,\"abs_max\":5,\"mean\":-5}",
    "{\"kind\":\"gradient\",\"event_id\":\"g\",\"root\":\"r\",\"key\":\"k\",\"state\":\"present\",\"norm\":null}",
    "{\"kind\":\"gradient\",\"event_id\":\"g\",\"root\":\"r\",\"key\":\"k\",\"state\":\"zero\",\"norm\":2}",
    "{\"kind\":\"gradient\",\"event_id\":\"g\",\"root\":\"r\",\"key\":\"k\",\"state\":{\"present\":null}}",
    "{\"kind\":\"gradient\",\"event_id\":\"g\",\"root\":\"r\",\"key\":\"k\",\"state\":\"presentx\"}",
    "{\"kind\":\"edge\",\"edge_kind\":\"data\",\"from_tensor\":\"a\",\"to_tensor\":\"b\"}",
    "{\"kind\":\"edge\",\"edge_kind\":1,\"from_tensor\":\"a\",\"to_tensor\":\"b\"}",
    "{\"kind\":\"edge\",\"edge_kind\":\"call\",\"edge_kind\":\"call\",\"from_span\":\"s1\",\"to_span\":\"s1\","
    "\"host_duration_ns\":1}",
    "{\"kind\":\"edge\",\"edge_kind\":\"cal\",\"from_span\":\"s1\",\"to_span\":\"s1\",\"host_duration_ns\":1}",
    "{\"kind\":\"memory\",\"timestamp_ns\":1,\"storage_id\":\"st\",\"tensor_id\":\"t\",\"span_id\":\"s1\","
    "\"device\":\"cpu\",\"bytes\":4,\"action\":\"alloc\",\"dtype\":\"f32\",\"category\":\"activation\"}",
    "{\"kind\":\"memory\",\"timestamp_ns\":1,\"storage_id\":\"st\",\"tensor_id\":\"t\",\"span_id\":\"s1\","
    "\"device\":\"cpu\",\"bytes\":4,\"action\":\"free\",\"dtype\":\"f32\",\"category\":true}",
    "{\"kind\":\"device_memory\",\"timestamp_ns\":1,\"device\":\"cuda:0\",\"used_bytes\":7,\"free_bytes\":null}",
    "{\"kind\":\"span_start\",\"id\":\"s1\",\"name\":\"again\",\"start_ns\":0,\"span_kind\":\"function\"}",
    "{\"kind\":\"span_start\",\"id\":\"s2\",\"parent_id\":\"s1\",\"name\":\"c\",\"start_ns\":1,\"span_kind\":\"op\","
    "\"measured\":true,\"step\":\"backward\",\"kind\":\"span_start\"}",
    "{\"kind\":\"span_end\",\"id\":\"nope\"}",
    "{\"kind\":\"bogus\",\"id\":\"s1\"}",
    "{\"id\":\"s1\"}",
    "{}",
    "[\"span_end\",\"s1\",5]",
    "{\"kind\":\"span_end\",\"id\":\"s\\\"q\"}",
    "{\"kind\":\"span_end\",\"id\":\"s1\"}\r",
    "  {\"kind\":\"span_end\",\"id\":\"s1\"}  ",
    "{\"kind\":\"span_end\",\"id\":\"s1\"} x",
    "{\"kind\":\"span_end\",\"id\":\"s1\"",
    "{\"kind\":\"span_end\",\"id\":\"s1\t\"}",
};

static void test_edge_lines(void **st) {
    (void)st;
    cg_buf b = CG_BUF_INIT;
    for (size_t i = 0; i < sizeof EDGE_LINES / sizeof EDGE_LINES[0]; i++) {
        cg_buf_reset(&b);
        cg_buf_printf(&b, "%s%s\n%s", META, EDGE_LINES[i], END);
        same_default(b.data, b.len);
    }
    cg_buf_free(&b);
}

/* Tight limits: the fast path must leave every limit message to the general path. */
static void test_limits(void **st) {
    (void)st;
    static const char line[] = "{\"kind\":\"op\",\"span_id\":\"s1\",\"op_name\":\"abcdefgh\",\"inputs\":[\"a\",\"b\",\"c\"],"
                               "\"shape\":[1,2,3],\"dtype\":\"f32\",\"device\":\"c\",\"duration_ns\":5,"
                               "\"input_dense_bytes\":0}";
    cg_buf b = CG_BUF_INIT;
    cg_buf_printf(&b, "%s%s\n%s", META, line, END);
    for (int k = 0; k < 4; k++) {
        cg_trace_limits lim;
        cg_trace_limits_default(&lim);
        if (k == 0) lim.json.max_string = 4;
        if (k == 1) lim.json.max_items = 2;
        if (k == 2) lim.json.max_depth = 1;
        if (k == 3) lim.max_records = 2;
        assert_false(same_both_ways(b.data, b.len, &lim));
    }
    cg_buf_free(&b);
}

/* Every line of the reader fixture with one byte replaced, at many positions. */
static void test_mutations(void **st) {
    (void)st;
    char path[4096];
    snprintf(path, sizeof path, "%s/reader/illustrative.jsonl", fixtures());
    cg_error err;
    size_t len = 0;
    char *data = cg_read_file(path, 0, &len, &err);
    assert_non_null(data);
    static const char repl[] = {'"', '\\', ',', '}', ']', '1', '-', ' ', 'x', '\x01', '\xc3'};
    char *copy = malloc(len);
    assert_non_null(copy);
    for (size_t at = 0; at < len; at += 3) {
        for (size_t r = 0; r < sizeof repl; r++) {
            if (data[at] == '\n') continue;
            memcpy(copy, data, len);
            copy[at] = repl[r];
            same_default(copy, len);
        }
    }
    free(copy);
    free(data);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_fixture_trace),
        cmocka_unit_test(test_edge_lines),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
