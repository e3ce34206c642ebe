/* Unit tests for lib/nsight pieces that fixtures cannot isolate: header
 * normalization, the number rule, the CSV reader, the busy-time union, binding
 * state transitions, accessors, non-regular entries and the directory limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "nsight/nsight.h"
#include "nsight/nsight_internal.h"
#include "test_tmpdir.h"

static void test_header_normalization(void **st) {
    (void)st;
    cg_arena a;
    cg_arena_init(&a, 0);
    static const char *const cases[][2] = {
        {"Total Time (ns)", "total_time_ns"}, {"NumGPUOps", "numgpuops"}, {"CorrId", "corrid"},
        {"Time (%)", "time"},                 {"Reg/Trd", "reg_trd"},     {"  -Dur-  ", "dur"},
        {"Proj Dur (ns)", "proj_dur_ns"},     {"Orig Start (ns)", "orig_start_ns"},
        {"Throughput (MB/s)", "throughput_mb_s"}, {"(%)", ""},      {"Kernel Name", "kernel_name"},
        {"Device ID", "device_id"},           {"num-gpu-ops", "num_gpu_ops"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_string_equal(cg_nsi_normalize_header(&a, cases[i][0]), cases[i][1]);
    cg_arena_free(&a);
}

static void expect_num(const char *raw, bool present, uint64_t want) {
    bool p = !present;
    uint64_t v = 12345;
    cg_error err;
    if (cg_nsi_parse_number(raw, "x", &p, &v, &err) != 0) fail_msg("'%s' rejected: %s", raw, err.msg);
    if (p != present || v != want)
        fail_msg("'%s': got present=%d %llu", raw, p, (unsigned long long)v);
}

/* The crate's optional_number message: "<why> x value <cleaned:?>". */
static void expect_bad(const char *raw, const char *why) {
    bool p;
    uint64_t v;
    cg_error err;
    if (cg_nsi_parse_number(raw, "x", &p, &v, &err) == 0) fail_msg("'%s' accepted as %llu", raw, (unsigned long long)v);
    assert_string_equal(err.msg, why);
}

static void test_number_rule(void **st) {
    (void)st;
    expect_num(NULL, false, 0);
    expect_num("", false, 0);
    expect_num("   ", false, 0);
    expect_num(",", false, 0);
    expect_num("\xc2\xa0" "7\xe3\x80\x80", true, 7); /* Unicode White_Space is trimmed */
    expect_num("0", true, 0);
    expect_num("+5", true, 5);
    expect_num(" 1,234 ", true, 1234);
    expect_num("1,234,567.9", true, 1234567);
    expect_num("12.9", true, 12);
    expect_num("1e3", true, 1000);
    expect_num("2.5E2", true, 250);
    expect_num(".5", true, 0);
    expect_num("5.", true, 5);
    expect_num("18446744073709551615", true, UINT64_MAX);
    expect_num("1.8446744073709550e19", true, 18446744073709549568ull);
    /* -0 is not a u64 and is a sign-negative f64 (is_sign_negative) */
    expect_bad("-0", "negative x value \"-0\"");
    expect_bad("-0.0", "negative x value \"-0.0\"");
    expect_bad("-5", "negative x value \"-5\"");
    expect_bad("-0.5", "negative x value \"-0.5\"");
    expect_bad("NaN", "non-finite x value \"NaN\"");
    expect_bad("nan", "non-finite x value \"nan\"");
    expect_bad("inf", "non-finite x value \"inf\"");
    expect_bad("-Infinity", "non-finite x value \"-Infinity\"");
    expect_bad("1e400", "non-finite x value \"1e400\"");
    expect_bad("18446744073709551616", "overflowing x value \"18446744073709551616\"");
    expect_bad("1.8446744073709552e19", "overflowing x value \"1.8446744073709552e19\"");
    expect_bad("abc", "invalid x value \"abc\"");
    expect_bad("0x10", "invalid x value \"0x10\"");
    expect_bad("1e", "invalid x value \"1e\"");
    expect_bad("1 2", "invalid x value \"1 2\"");
    expect_bad("e5", "invalid x value \"e5\"");
    expect_bad("--1", "invalid x value \"--1\"");
    expect_bad(".", "invalid x value \".\"");
    expect_bad("1,\"2\\", "invalid x value \"1\\\"2\\\\\"");
    expect_bad("a\tb\x01", "invalid x value \"a\\tb\\u{1}\"");
}

static void expect_fields(const cg_nsi_csv_record *r, size_t n, const char *const *want) {
    assert_int_equal(r->n, n);
    for (size_t i = 0; i < n; i++) assert_string_equal(r->fields[i], want[i]);
}

/* The csv crate's reader (csv-core 0.1.6 defaults, flexible). */
static void test_csv_reader(void **st) {
    (void)st;
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_nsight_limits lim;
    cg_nsight_limits_default(&lim);
    cg_nsi_csv csv;
    cg_error err;
    const char *in = "a,b,c\n1,\"x,\"\"y\"\"\nz\",\n\n\"\",,3";
    assert_int_equal(cg_nsi_csv_parse(&a, in, strlen(in), &lim, &csv, &err), 0);
    assert_int_equal(csv.n_records, 3);
    expect_fields(&csv.records[1], 3, (const char *[]){"1", "x,\"y\"\nz", ""});
    expect_fields(&csv.records[2], 3, (const char *[]){"", "", "3"});
    /* positions are where the previous record ended (blank lines do not move them) */
    assert_int_equal(csv.records[0].pos.byte, 0);
    assert_int_equal(csv.records[1].pos.record, 1);
    assert_int_equal(csv.records[1].pos.line, 2);
    assert_int_equal(csv.records[1].pos.byte, 6);
    assert_int_equal(csv.records[2].pos.line, 4);
    /* empty input: no header, no records */
    assert_int_equal(cg_nsi_csv_parse(&a, "", 0, &lim, &csv, &err), 0);
    assert_int_equal(csv.n_records, 0);
    /* records may be longer or shorter than the header */
    assert_int_equal(cg_nsi_csv_parse(&a, "a,b\n1,2,\n3\n", 11, &lim, &csv, &err), 0);
    expect_fields(&csv.records[1], 3, (const char *[]){"1", "2", ""});
    expect_fields(&csv.records[2], 1, (const char *[]){"3"});
    /* a lone CR ends a record; CRLF ends one record; the BOM is dropped but counted */
    assert_int_equal(cg_nsi_csv_parse(&a, "\xef\xbb\xbfh\r\na\rb\r\n", 11, &lim, &csv, &err), 0);
    assert_int_equal(csv.n_records, 3);
    expect_fields(&csv.records[0], 1, (const char *[]){"h"});
    expect_fields(&csv.records[2], 1, (const char *[]){"b"});
    assert_int_equal(csv.records[1].pos.byte, 5);
    assert_int_equal(csv.records[1].pos.line, 1);
    /* a character after a closing quote continues the field; an unterminated quote runs to the end */
    assert_int_equal(cg_nsi_csv_parse(&a, "\"ab\"c,d\n\"x,\ny", 14, &lim, &csv, &err), 0);
    expect_fields(&csv.records[0], 2, (const char *[]){"abc", "d"});
    expect_fields(&csv.records[1], 1, (const char *[]){"x,\ny"});
    /* UTF-8 is checked per record, with the csv crate's message */
    assert_int_equal(cg_nsi_csv_parse(&a, "n\nok\nab\xff\n", 9, &lim, &csv, &err), 0);
    assert_int_equal(cg_nsi_csv_utf8(&csv.records[1], &err), 0);
    assert_int_not_equal(cg_nsi_csv_utf8(&csv.records[2], &err), 0);
    assert_string_equal(err.msg, "CSV parse error: record 2 (line 3, field: 0, byte: 5): invalid utf-8: "
                                 "invalid UTF-8 in field 0 near byte index 2");
    /* overlong UTF-8 and surrogates are invalid */
    assert_int_equal(cg_nsi_csv_parse(&a, "\xc0\xaf,\xed\xa0\x80\n", 6, &lim, &csv, &err), 0);
    assert_int_not_equal(cg_nsi_csv_utf8(&csv.records[0], &err), 0);
    assert_int_equal(cg_nsi_csv_parse(&a, "\xc3\xa9,\xf0\x9f\x98\x80\n", 8, &lim, &csv, &err), 0);
    assert_int_equal(cg_nsi_csv_utf8(&csv.records[0], &err), 0);
    /* our limit: the field limit counts unquoted bytes */
    lim.max_field_bytes = 3;
    assert_int_equal(cg_nsi_csv_parse(&a, "\"a\"\"b\"\n", 7, &lim, &csv, &err), 0);
    assert_int_not_equal(cg_nsi_csv_parse(&a, "\"abcd\"\n", 7, &lim, &csv, &err), 0);
    assert_string_equal(err.msg, "line 1: field exceeds limit max_field_bytes (3 bytes)");
    cg_arena_free(&a);
}

static void test_union_clipped(void **st) {
    (void)st;
    cg_nsi_interval iv[3] = {{0, 10}, {5, 20}, {30, 35}};
    assert_int_equal(cg_nsi_union_clipped(iv, 3, 0, 100), 25); /* spec example */
    cg_nsi_interval iv2[3] = {{30, 35}, {5, 20}, {0, 10}};
    assert_int_equal(cg_nsi_union_clipped(iv2, 3, 6, 32), 16); /* [6,20) + [30,32) */
    cg_nsi_interval iv3[2] = {{0, 5}, {5, 10}};
    assert_int_equal(cg_nsi_union_clipped(iv3, 2, 0, 100), 10);
    cg_nsi_interval iv4[1] = {{50, 60}};
    assert_int_equal(cg_nsi_union_clipped(iv4, 1, 0, 50), 0);
    assert_int_equal(cg_nsi_union_clipped(NULL, 0, 0, 50), 0);
}

static char *fixture_input(const char *name) {
    const char *fx = getenv("CG_FIXTURES");
    char *root = cg_path_join(fx ? fx : "fixtures", "nsight");
    char *c = cg_path_join(root, name);
    char *in = cg_path_join(c, "input");
    free(c);
    free(root);
    return in;
}

static void test_binding_transitions(void **st) {
    (void)st;
    cg_arena a;
    cg_arena_init(&a, 0);
    const char *fwd = "toy/update-000000000003/forward";
    cg_strlist req = {&fwd, 1};
    char *dir = fixture_input("spec_fixture_bound");
    cg_nsight_evidence *ev = cg_nsight_load(&a, dir, &req, NULL, NULL);
    assert_int_equal(cg_nsight_get_status(ev), CG_NSIGHT_AVAILABLE);
    assert_int_equal(cg_nsight_get_binding(ev), CG_NSIGHT_PARTIAL);
    cg_nsight_bind_to_trace(ev, "run-4242-1", "toy::train::update/update-3");
    assert_int_equal(cg_nsight_get_binding(ev), CG_NSIGHT_BOUND);
    cg_nsight_bind_to_trace(ev, "run-4242-1", "toy::train::update/update-3"); /* idempotent */
    assert_int_equal(cg_nsight_get_binding(ev), CG_NSIGHT_BOUND);
    assert_int_equal(ev->provenance.diagnostics.n, 0);
    const cg_nsight_summary_row *k = cg_nsight_first_kernel(ev);
    assert_non_null(k);
    assert_string_equal(k->name, "void gemm<float, 2>(float*, \"tile\")");
    assert_int_equal(k->total_ns, 1200);
    assert_true(cg_nsight_get_correlation(ev)->complete);
    assert_int_equal(cg_nsight_get_correlation(ev)->mode, CG_NSIGHT_CORR_NVTX_PROJECTED_RANGE);
    assert_int_equal(cg_nsight_get_ledger(ev)->matched.n, 1);

    /* a wrong run id is a mismatch that later binding cannot undo */
    ev = cg_nsight_load(&a, dir, &req, NULL, NULL);
    cg_nsight_bind_to_trace(ev, "run-x", "toy::train::update/update-3");
    assert_int_equal(cg_nsight_get_binding(ev), CG_NSIGHT_MISMATCH);
    cg_nsight_bind_to_trace(ev, "run-4242-1", "toy::train::update/update-3");
    assert_int_equal(cg_nsight_get_binding(ev), CG_NSIGHT_MISMATCH);
    assert_int_equal(ev->kernels.n, 2); /* rows are never discarded */
    /* NULL ids never bind */
    ev = cg_nsight_load(&a, dir, &req, NULL, NULL);
    cg_nsight_bind_to_trace(ev, NULL, NULL);
    assert_int_equal(cg_nsight_get_binding(ev), CG_NSIGHT_MISMATCH);
    free(dir);

    /* not requested: unavailable, stays partial after binding, no kernel */
    ev = cg_nsight_load(&a, NULL, &req, NULL, NULL);
    cg_nsight_bind_to_trace(ev, "run-4242-1", "toy::train::update/update-3");
    assert_int_equal(cg_nsight_get_status(ev), CG_NSIGHT_UNAVAILABLE);
    assert_int_equal(cg_nsight_get_binding(ev), CG_NSIGHT_PARTIAL);
    assert_null(cg_nsight_first_kernel(ev));
    assert_string_equal(ev->reason, "Nsight capture was not requested");
    /* legacy rule with NULL lists: nothing expected */
    ev = cg_nsight_load(&a, NULL, NULL, NULL, NULL);
    assert_int_equal(ev->correlation.ledger.expected.n, 0);
    assert_false(ev->correlation.complete);
    cg_arena_free(&a);
}

static void write_text(const char *dir, const char *name, const char *text) {
    char *p = cg_path_join(dir, name);
    assert_int_equal(cg_write_file(p, text, strlen(text), false, NULL), 0);
    free(p);
}

static void test_non_regular_and_dir_limit(void **st) {
    (void)st;
    char dir[1024];
    assert_int_equal(test_tmpdir_in(dir, sizeof dir, "nsight-unit"), 0);
    write_text(dir, "k_cuda_gpu_kern_sum.csv", "Name,Total Time (ns)\nk,5\n");
    char *sub = cg_path_join(dir, "sub_cuda_api_sum.csv");
    assert_int_equal(cg_mkdir_p(sub, NULL), 0);
    char *link = cg_path_join(dir, "link_cuda_gpu_mem_time_sum.csv");
    assert_int_equal(symlink("k_cuda_gpu_kern_sum.csv", link), 0);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_nsight_evidence *ev = cg_nsight_load(&a, dir, NULL, NULL, NULL);
    assert_int_equal(ev->status, CG_NSIGHT_AVAILABLE);
    /* as the crate (Path::is_file follows links): the link to a regular file is
     * read, the directory is skipped without a diagnostic */
    assert_int_equal(ev->n_source_csv, 2);
    assert_int_equal(ev->diagnostics.n, 0);
    assert_int_equal(ev->memory_operations.n, 1);

    cg_nsight_limits lim;
    cg_nsight_limits_default(&lim);
    lim.max_dir_entries = 2;
    ev = cg_nsight_load_ex(&a, dir, NULL, NULL, NULL, &lim);
    assert_int_equal(ev->status, CG_NSIGHT_FAILED);
    assert_non_null(strstr(ev->reason, "exceeds limit max_dir_entries (2 entries)"));

    /* a regular file given as the directory fails, in the crate's words */
    char *file = cg_path_join(dir, "k_cuda_gpu_kern_sum.csv");
    ev = cg_nsight_load(&a, file, NULL, NULL, NULL);
    assert_int_equal(ev->status, CG_NSIGHT_FAILED);
    assert_non_null(strstr(ev->reason, "Nsight report directory does not exist: "));
    assert_int_equal(ev->n_source_csv, 0);
    assert_string_equal(ev->provenance.diagnostics.items[0], "No capture manifest was loaded");
    cg_arena_free(&a);
    free(file);
    free(sub);
    free(link);
    assert_int_equal(cg_rm_rf(dir), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_normalization), cmocka_unit_test(test_number_rule),
        cmocka_unit_test(test_csv_reader),           cmocka_unit_test(test_union_clipped),
        cmocka_unit_test(test_binding_transitions),  cmocka_unit_test(test_non_regular_and_dir_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
