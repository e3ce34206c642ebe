/* `candle-graph summary` end to end: envelope keys, -o, parse errors with line
 * numbers, --require-valid, directory inputs and the unverified-evidence
 * refusal. Runs $CG_BINARY_DIR/agent/candle-graph. */
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
#include "base/json.h"
#include "base/sha256.h"
#include "test_tmpdir.h"

static char g_bin[4096], g_fx[4096], g_tmp[4096];

typedef struct run_result {
    int rc;
    char *out, *err;
    size_t out_len;
} run_result;

static char *slurp(const char *path, size_t *len) {
    cg_error err;
    size_t n = 0;
    char *d = cg_read_file(path, 0, &n, &err);
    if (!d) fail_msg("%s", err.msg);
    if (len) *len = n;
    return d;
}

/* args is appended verbatim to the shell command (paths here have no spaces). */
static run_result run(const char *args) {
    char cmd[40000];
    snprintf(cmd, sizeof cmd, "%s summary %s >%s/out 2>%s/err", g_bin, args, g_tmp, g_tmp);
    int st = system(cmd);
    assert_true(st != -1 && WIFEXITED(st));
    run_result r = {WEXITSTATUS(st), NULL, NULL, 0};
    char p[4200];
    snprintf(p, sizeof p, "%s/out", g_tmp);
    r.out = slurp(p, &r.out_len);
    snprintf(p, sizeof p, "%s/err", g_tmp);
    r.err = slurp(p, NULL);
    return r;
}

static void run_free(run_result *r) {
    free(r->out);
    free(r->err);
}

static const char *fixture(const char *name) {
    static char p[4200];
    snprintf(p, sizeof p, "%s/trace/%s/trace.jsonl", g_fx, name);
    return p;
}

static int setup(void **st) {
    (void)st;
    const char *bin = getenv("CG_BINARY_DIR"), *fx = getenv("CG_FIXTURES");
    snprintf(g_bin, sizeof g_bin, "%s/agent/candle-graph", bin ? bin : "../build");
    snprintf(g_fx, sizeof g_fx, "%s", fx ? fx : "fixtures");
    if (access(g_bin, X_OK) != 0) {
        fprintf(stderr, "candle-graph binary not built at %s\n", g_bin);
        return -1;
    }
    if (test_tmpdir_in(g_tmp, sizeof g_tmp, "summary-test")) return -1;
    return 0;
}

static int teardown(void **st) {
    (void)st;
    cg_rm_rf(g_tmp);
    return 0;
}

static void test_envelope(void **st) {
    (void)st;
    char args[16384];
    snprintf(args, sizeof args, "%s", fixture("illustrative"));
    run_result r = run(args);
    assert_int_equal(r.rc, 0);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_error err;
    cg_jv *v = cg_json_parse(&a, r.out, r.out_len, NULL, &err);
    assert_non_null(v);
    /* the crate's json! envelope: keys sorted (serde_json without preserve_order),
     * our trace_summary in its sorted place */
    static const char *const keys[] = {"capabilities", "findings", "gaps",    "gpu",          "health",
                                       "input",        "memory",   "provenance", "schema",    "summary",
                                       "tensor_stats", "timing",   "tool",    "trace_summary"};
    assert_int_equal(v->u.obj.n, 14);
    for (size_t i = 0; i < 14; i++) assert_string_equal(v->u.obj.m[i].key, keys[i]);
    assert_true(cg_jv_as_u64(cg_jv_get(cg_jv_get(v, "summary"), "outer_wall_time_ns"), &(uint64_t){0}));
    assert_string_equal(cg_jv_as_str(cg_jv_get(v, "schema")), "candle-graph/summary/5");
    assert_string_equal(cg_jv_as_str(cg_jv_get(cg_jv_get(v, "tool"), "package")), "candle-graph");
    cg_jv *in = cg_jv_get(v, "input");
    assert_string_equal(cg_jv_as_str(cg_jv_get(in, "kind")), "raw_trace");
    assert_string_equal(cg_jv_as_str(cg_jv_get(in, "requested_path")), args);
    assert_string_equal(cg_jv_as_str(cg_jv_get(in, "trace_path")), args);
    assert_string_equal(cg_jv_as_str(cg_jv_get(in, "evidence_source")), "trace_reconstruction");
    assert_int_equal(cg_jv_get(in, "gpu_identity_bound")->type, CG_JBOOL);
    assert_false(cg_jv_get(in, "gpu_identity_bound")->u.b);
    assert_string_equal(cg_jv_as_str(cg_jv_get(cg_jv_get(v, "provenance"), "run_id")), "run-4242-1");
    assert_true(cg_jv_get(cg_jv_get(v, "health"), "structurally_valid")->u.b);
    uint64_t n = 0;
    assert_true(cg_jv_as_u64(cg_jv_get(cg_jv_get(v, "trace_summary"), "total_ns"), &n));
    assert_int_equal(n, 950);
    assert_true(cg_jv_as_u64(cg_jv_get(cg_jv_get(v, "trace_summary"), "logical_peak_bytes"), &n));
    assert_int_equal(n, 512);
    /* pretty JSON + newline */
    assert_true(r.out_len > 2 && r.out[r.out_len - 1] == '\n' && r.out[r.out_len - 2] == '}');
    assert_string_equal(r.err, "");
    run_free(&r);

    /* -o FILE: same bytes in the file, nothing on stdout */
    char *first = NULL;
    run_result again = run(args);
    first = again.out;
    snprintf(args, sizeof args, "%s -o %s/summary.json", fixture("illustrative"), g_tmp);
    r = run(args);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.out_len, 0);
    char p[4200];
    snprintf(p, sizeof p, "%s/summary.json", g_tmp);
    char *file = slurp(p, NULL);
    assert_string_equal(file, first);
    free(file);
    run_free(&r);
    run_free(&again);
    cg_arena_free(&a);
}

static void test_parse_error_exit(void **st) {
    (void)st;
    run_result r = run(fixture("unknown_kind"));
    assert_int_equal(r.rc, 1);
    assert_int_equal(r.out_len, 0);
    assert_non_null(strstr(r.err, "line 4"));
    assert_non_null(strstr(r.err, "unknown variant `span_begin`"));
    run_free(&r);
    r = run(fixture("missing_terminal"));
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "trace stream is missing its terminal event"));
    run_free(&r);
}

static void test_require_valid(void **st) {
    (void)st;
    char args[16384];
    snprintf(args, sizeof args, "--require-valid %s", fixture("illustrative"));
    run_result r = run(args);
    assert_int_equal(r.rc, 0);
    run_free(&r);
    /* failed capture: still written, then exit 1 */
    snprintf(args, sizeof args, "%s --require-valid", fixture("capture_failed"));
    r = run(args);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.out, "\"capture_complete\": false"));
    assert_non_null(strstr(r.err, "--require-valid"));
    run_free(&r);
    /* structurally invalid: same */
    snprintf(args, sizeof args, "%s --require-valid -o %s/invalid.json", fixture("root_count_two"), g_tmp);
    r = run(args);
    assert_int_equal(r.rc, 1);
    char p[4200];
    snprintf(p, sizeof p, "%s/invalid.json", g_tmp);
    char *file = slurp(p, NULL);
    assert_non_null(strstr(file, "\"code\": \"root_count\""));
    free(file);
    run_free(&r);
    /* without the flag, an invalid capture still exits 0 */
    r = run(fixture("root_count_two"));
    assert_int_equal(r.rc, 0);
    run_free(&r);
}

static void make_dir(const char *name, char *out, size_t cap) {
    snprintf(out, cap, "%s/%s", g_tmp, name);
    cg_error err;
    if (cg_mkdir_p(out, &err) != 0) fail_msg("%s", err.msg);
}

static void put_trace(const char *dir) {
    char p[8400];
    snprintf(p, sizeof p, "%s/trace.jsonl", dir);
    cg_rm_rf(p);
    cg_error err;
    if (cg_copy_file(fixture("illustrative"), p, &err) != 0) fail_msg("%s", err.msg);
}

static void test_directory_inputs(void **st) {
    (void)st;
    char dir[4200], args[16384];
    make_dir("rawdir", dir, sizeof dir);
    put_trace(dir);
    run_result r = run(dir);
    assert_int_equal(r.rc, 0);
    snprintf(args, sizeof args, "\"trace_path\": \"%s/trace.jsonl\"", dir);
    assert_non_null(strstr(r.out, args));
    run_free(&r);

    /* evidence.json beside a raw trace: refused, for the directory and the file */
    char p[8400];
    snprintf(p, sizeof p, "%s/evidence.json", dir);
    cg_error err;
    assert_int_equal(cg_write_file(p, "{}", 2, false, &err), 0);
    r = run(dir);
    assert_int_equal(r.rc, 1);
    assert_int_equal(r.out_len, 0);
    assert_non_null(strstr(r.err, "refusing to discard unverified GPU evidence and rebuild as trace-only"));
    run_free(&r);
    snprintf(args, sizeof args, "%s/trace.jsonl", dir);
    r = run(args);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "refusing to discard unverified GPU evidence"));
    run_free(&r);

    char nsdir[4200];
    make_dir("nsdir/nsight", nsdir, sizeof nsdir);
    make_dir("nsdir", nsdir, sizeof nsdir);
    put_trace(nsdir);
    r = run(nsdir);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "refusing to discard unverified GPU evidence"));
    run_free(&r);

    /* a directory without trace.jsonl */
    char empty[4200];
    make_dir("emptydir", empty, sizeof empty);
    r = run(empty);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "input directory is neither a finalized bundle nor a raw-trace directory"));
    run_free(&r);

    /* bundle.json present: the bundle path verifies (this one is not a valid bundle) */
    char bdir[4200];
    make_dir("fakebundle", bdir, sizeof bdir);
    put_trace(bdir);
    snprintf(p, sizeof p, "%s/bundle.json", bdir);
    assert_int_equal(cg_write_file(p, "{}", 2, false, &err), 0);
    r = run(bdir);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "verify evidence bundle"));
    run_free(&r);

    /* missing input and usage errors */
    snprintf(args, sizeof args, "%s/does-not-exist.jsonl", g_tmp);
    r = run(args);
    assert_int_equal(r.rc, 1);
    run_free(&r);
    r = run("--bogus x");
    assert_int_equal(r.rc, 2);
    run_free(&r);
    r = run("");
    assert_int_equal(r.rc, 2);
    run_free(&r);
}

static void file_entry(cg_buf *b, const char *dir, const char *name, bool last) {
    char p[8400], hex[65];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    uint64_t size = 0;
    cg_error err;
    if (cg_sha256_file(p, true, hex, &size, &err) != 0) fail_msg("%s", err.msg);
    cg_buf_printf(b, "    {\"path\": \"%s\", \"bytes\": %llu, \"sha256\": \"%s\"}%s\n", name,
                  (unsigned long long)size, hex, last ? "" : ",");
}

/* A verified bundle (trace.jsonl + evidence.json from `import` + bundle.json):
 * provenance and health come from the bound evidence packet. */
static void test_bundle_input(void **st) {
    (void)st;
    char dir[4200], cmd[40000], p[8400];
    make_dir("bundle", dir, sizeof dir);
    put_trace(dir);
    snprintf(cmd, sizeof cmd, "%s import %s/trace.jsonl -o %s/evidence.json", g_bin, dir, dir);
    assert_int_equal(system(cmd), 0);
    cg_buf b = CG_BUF_INIT;
    cg_buf_puts(&b, "{\n  \"schema\": \"candle-graph/bundle/1\",\n  \"run_id\": \"run-4242-1\",\n  \"files\": [\n");
    file_entry(&b, dir, "evidence.json", false);
    file_entry(&b, dir, "trace.jsonl", true);
    cg_buf_puts(&b, "  ]\n}\n");
    snprintf(p, sizeof p, "%s/bundle.json", dir);
    cg_error err;
    assert_int_equal(cg_write_file(p, b.data, b.len, false, &err), 0);
    cg_buf_free(&b);

    run_result r = run(dir);
    if (r.rc != 0) fail_msg("summary of a bundle failed: %s", r.err);
    assert_non_null(strstr(r.out, "\"kind\": \"verified_bundle\""));
    assert_non_null(strstr(r.out, "\"evidence_source\": \"verified_evidence_json\""));
    assert_non_null(strstr(r.out, "\"structurally_valid\": true"));
    assert_non_null(strstr(r.out, "\"op_count\": 1"));
    run_free(&r);
    char args[16384];
    snprintf(args, sizeof args, "%s/trace.jsonl", dir);
    r = run(args);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "\"kind\": \"verified_bundle\""));
    run_free(&r);
    /* output into the bundle is refused */
    snprintf(args, sizeof args, "%s -o %s/out.json", dir, dir);
    r = run(args);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "inside verified bundle"));
    run_free(&r);
    /* a tampered trace fails verification */
    snprintf(p, sizeof p, "%s/trace.jsonl", dir);
    FILE *f = fopen(p, "a");
    assert_non_null(f);
    fputs("\n", f);
    fclose(f);
    r = run(dir);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "verify evidence bundle"));
    run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_envelope),
        cmocka_unit_test(test_parse_error_exit),
        cmocka_unit_test(test_require_valid),
        cmocka_unit_test(test_directory_inputs),
        cmocka_unit_test(test_bundle_input),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
