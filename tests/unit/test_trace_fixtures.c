/* Data-driven trace fixtures: every folder under $CG_FIXTURES/trace is one case
 * (tests/fixtures/trace/make_fixtures.py documents the format):
 *   trace.jsonl + expected_error.txt  -> the reader must fail; line 1 is a
 *                                        substring of the message, optional
 *                                        line 2 "line=N" the error line
 *   trace.jsonl + expected_health.json -> the reader must succeed and health
 *                                        must match (flags, sorted
 *                                        "severity:code" list, optional exact
 *                                        issues / trace_summary / coverage)
 * A folder with neither (or both) expectation files, or without README, fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/json.h"
#include "trace/health.h"
#include "trace/trace.h"

static char g_root[4096];

static char *case_file(const char *dir, const char *name) {
    char *p = cg_path_join(dir, name);
    assert_non_null(p);
    return p;
}

static char *read_opt(const char *dir, const char *name) {
    char *p = case_file(dir, name);
    char *data = NULL;
    if (cg_path_exists(p)) {
        cg_error err;
        cg_err_clear(&err);
        data = cg_read_file(p, 0, NULL, &err);
        if (!data) fail_msg("%s: %s", p, err.msg);
    }
    free(p);
    return data;
}

static void check_error_case(const char *dir, const char *trace_path, char *spec) {
    char *nl = strchr(spec, '\n');
    char *rest = NULL;
    if (nl) {
        *nl = '\0';
        rest = nl + 1;
    }
    long want_line = -1;
    if (rest && *rest) {
        if (strncmp(rest, "line=", 5) != 0) fail_msg("%s: second line must be line=N", dir);
        char *end;
        want_line = strtol(rest + 5, &end, 10);
        if (end == rest + 5 || want_line <= 0) fail_msg("%s: bad line=N", dir);
    }
    if (!*spec) fail_msg("%s: expected_error.txt has an empty substring", dir);
    cg_error err;
    cg_err_clear(&err);
    cg_trace *t = cg_trace_read_file(trace_path, NULL, &err);
    if (t) {
        cg_trace_free(t);
        fail_msg("%s: expected a parse error containing \"%s\", but the trace parsed", dir, spec);
    }
    if (!strstr(err.msg, spec)) fail_msg("%s: error \"%s\" does not contain \"%s\"", dir, err.msg, spec);
    if (want_line > 0 && err.line != want_line)
        fail_msg("%s: error line %d, expected %ld (%s)", dir, err.line, want_line, err.msg);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static void expect_json_equal(const char *dir, const char *what, const cg_jv *want, const cg_jv *got) {
    if (cg_jv_equal(want, got)) return;
    cg_buf a = CG_BUF_INIT, b = CG_BUF_INIT;
    cg_json_write(&a, want, false);
    cg_json_write(&b, got, false);
    print_error("%s: %s differs\n  want %s\n  got  %s\n", dir, what, a.data, b.data);
    cg_buf_free(&a);
    cg_buf_free(&b);
    fail();
}

static void check_health_case(const char *dir, const char *trace_path, const char *spec) {
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_error err;
    cg_err_clear(&err);
    cg_jv *want = cg_json_parse(&a, spec, strlen(spec), NULL, &err);
    if (!want || want->type != CG_JOBJ) fail_msg("%s: expected_health.json: %s", dir, err.msg);
    cg_trace *t = cg_trace_read_file(trace_path, NULL, &err);
    if (!t) fail_msg("%s: expected the trace to parse, got: %s", dir, err.msg);
    cg_health *h = cg_health_analyze(t);
    cg_jv *got = cg_health_to_json(&a, h);

    cg_jv *wv = cg_jv_get(want, "structurally_valid"), *wc = cg_jv_get(want, "capture_complete");
    cg_jv *wcodes = cg_jv_get(want, "codes");
    if (!wv || !wc || !wcodes || wcodes->type != CG_JARR)
        fail_msg("%s: expected_health.json needs structurally_valid, capture_complete and codes", dir);

    /* codes: sorted "severity:code" multiset */
    const char **codes = calloc(h->n_issues + 1, sizeof *codes);
    assert_non_null(codes);
    for (size_t i = 0; i < h->n_issues; i++)
        codes[i] = cg_arena_printf(&a, "%s:%s", cg_severity_name(h->issues[i].severity), h->issues[i].code);
    qsort(codes, h->n_issues, sizeof *codes, cmp_str);
    cg_jv *gcodes = cg_jv_arr(&a);
    for (size_t i = 0; i < h->n_issues; i++) cg_jv_arr_push(&a, gcodes, cg_jv_str(&a, codes[i]));
    free(codes);
    if (!cg_jv_equal(wcodes, gcodes)) {
        cg_buf b = CG_BUF_INIT;
        cg_json_write(&b, cg_jv_get(got, "issues"), true);
        print_error("%s: issues were\n%s\n", dir, b.data);
        cg_buf_free(&b);
    }
    expect_json_equal(dir, "codes", wcodes, gcodes);
    expect_json_equal(dir, "structurally_valid", wv, cg_jv_get(got, "structurally_valid"));
    expect_json_equal(dir, "capture_complete", wc, cg_jv_get(got, "capture_complete"));

    cg_jv *wi = cg_jv_get(want, "issues");
    if (wi) expect_json_equal(dir, "issues", wi, cg_jv_get(got, "issues"));
    cg_jv *wcov = cg_jv_get(want, "coverage");
    if (wcov) expect_json_equal(dir, "coverage", wcov, cg_jv_get(got, "coverage"));
    cg_jv *wsum = cg_jv_get(want, "trace_summary");
    if (wsum) {
        cg_trace_summary s;
        cg_trace_summary_build(t, &s);
        expect_json_equal(dir, "trace_summary", wsum, cg_trace_summary_to_json(&a, &s));
    }
    cg_health_free(h);
    cg_trace_free(t);
    cg_arena_free(&a);
}

static void run_case(void **state) {
    const char *dir = *state;
    char *trace_path = case_file(dir, "trace.jsonl");
    if (!cg_is_regular_nofollow(trace_path)) fail_msg("%s: no trace.jsonl", dir);
    char *readme = read_opt(dir, "README");
    if (!readme || !*readme) fail_msg("%s: no README saying why the case exists", dir);
    char *err_spec = read_opt(dir, "expected_error.txt");
    char *health_spec = read_opt(dir, "expected_health.json");
    if (!err_spec && !health_spec) fail_msg("%s: no expected_error.txt or expected_health.json", dir);
    if (err_spec && health_spec) fail_msg("%s: both expected_error.txt and expected_health.json", dir);
    if (err_spec) check_error_case(dir, trace_path, err_spec);
    else check_health_case(dir, trace_path, health_spec);
    free(err_spec);
    free(health_spec);
    free(readme);
    free(trace_path);
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(((const struct CMUnitTest *)a)->name, ((const struct CMUnitTest *)b)->name);
}

int main(void) {
    const char *fx = getenv("CG_FIXTURES");
    snprintf(g_root, sizeof g_root, "%s/trace", fx ? fx : "fixtures");
    DIR *d = opendir(g_root);
    if (!d) {
        fprintf(stderr, "cannot open fixture directory %s\n", g_root);
        return 1;
    }
    struct CMUnitTest *tests = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char *dir = cg_path_join(g_root, e->d_name);
        if (!cg_is_dir(dir)) {
            free(dir);
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            tests = realloc(tests, cap * sizeof *tests);
            if (!tests) return 1;
        }
        tests[n++] = (struct CMUnitTest){strdup(e->d_name), run_case, NULL, NULL, dir};
    }
    closedir(d);
    /* an empty corpus must not pass */
    if (n < 100) {
        fprintf(stderr, "only %zu fixture cases under %s (expected at least 100)\n", n, g_root);
        return 1;
    }
    qsort(tests, n, sizeof *tests, cmp_name);
    int rc = _cmocka_run_group_tests("trace_fixtures", tests, n, NULL, NULL);
    for (size_t i = 0; i < n; i++) {
        free((void *)tests[i].name);
        free(tests[i].initial_state);
    }
    free(tests);
    return rc;
}
