/* Data-driven analysis fixtures: tests/fixtures/analysis/<case>/ holds trace.jsonl
 * and any of expected_timing.json, expected_memory.json, expected_graph.json
 * (exact JSON of cg_*_to_json, compared with cg_jv_equal) or expected_error.txt
 * (the graph build error message, first line). README says why the case exists.
 * CG_UPDATE_ANALYSIS_FIXTURES=1 rewrites the expected files that exist (for
 * reviewing a deliberate change with git diff); it never creates passing tests
 * on its own because the expectations are reviewed and committed by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/graph.h"
#include "analysis/memory.h"
#include "analysis/timing.h"
#include "base/fs.h"
#include "trace/health.h"

static const char *fixtures_root(void) {
    const char *d = getenv("CG_FIXTURES");
    return d ? d : "fixtures";
}

static bool update_mode(void) {
    const char *u = getenv("CG_UPDATE_ANALYSIS_FIXTURES");
    return u && strcmp(u, "1") == 0;
}

/* Compares `got` with the JSON in dir/name; returns 1 on mismatch (printing both). */
static int compare_json(cg_arena *a, const char *dir, const char *name, const cg_jv *got) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (!cg_path_exists(path)) return 0;
    cg_buf out = CG_BUF_INIT;
    cg_json_write(&out, got, true);
    if (update_mode()) {
        cg_buf_putc(&out, '\n');
        cg_error werr;
        assert_int_equal(cg_write_file(path, out.data, out.len, false, &werr), 0);
        cg_buf_free(&out);
        return 0;
    }
    cg_error err;
    size_t len = 0;
    char *text = cg_read_file(path, 0, &len, &err);
    if (!text) fail_msg("%s: %s", path, err.msg);
    cg_jv *want = cg_json_parse(a, text, len, NULL, &err);
    if (!want) fail_msg("%s: %s", path, err.msg);
    int bad = 0;
    if (!cg_jv_equal(want, got)) {
        cg_buf wb = CG_BUF_INIT;
        cg_json_write(&wb, want, true);
        fprintf(stderr, "MISMATCH %s\n--- expected\n%s\n--- got\n%s\n", path, wb.data, out.data);
        cg_buf_free(&wb);
        bad = 1;
    }
    free(text);
    cg_buf_free(&out);
    return bad;
}

/* The summary-only build against the full one g (NULL: refused with full_err):
 * the same refusal, node count and summary; its JSON is {schema, summary}. */
static int check_summary_only(cg_arena *a, const char *dir, const cg_trace *t, const cg_health *h,
                              const cg_timing_profile *tp, const cg_memory_profile *mp, const cg_graph *g,
                              const char *full_err) {
    cg_error err;
    cg_err_clear(&err);
    cg_graph *s = cg_graph_build_summary(t, h, tp, mp, a, &err);
    if (!g || !s) {
        if (g || s || strcmp(err.msg, full_err) != 0) {
            fprintf(stderr, "%s: summary-only build: %s (full build: %s)\n", dir, s ? "built" : err.msg,
                    g ? "built" : full_err);
            return 1;
        }
        return 0;
    }
    int bad = s->n_nodes != g->n_nodes || s->n_tensor_nodes != g->n_tensor_nodes || s->n_edges != 0 ||
              !cg_jv_equal(cg_graph_summary_to_json(a, &s->summary), cg_graph_summary_to_json(a, &g->summary));
    cg_jv *j = cg_graph_to_json_lazy(a, s);
    bad |= cg_jv_len(j) != 2 || !cg_jv_get(j, "schema") || !cg_jv_get(j, "summary");
    if (bad) fprintf(stderr, "%s: summary-only graph differs from the full build's counts or summary\n", dir);
    return bad;
}

static int run_case(const char *dir) {
    char path[8192];
    snprintf(path, sizeof path, "%s/trace.jsonl", dir);
    cg_error err;
    cg_err_clear(&err);
    cg_trace *t = cg_trace_read_file(path, NULL, &err);
    if (!t) {
        fprintf(stderr, "%s: %s\n", path, err.msg);
        return 1;
    }
    cg_health *h = cg_health_analyze(t);
    cg_arena a;
    cg_arena_init(&a, 0);
    int bad = 0;
    cg_timing_profile *tp = cg_timing_analyze(t, &a);
    bad += compare_json(&a, dir, "expected_timing.json", cg_timing_to_json(&a, tp));
    cg_memory_profile *mp = cg_memory_analyze(t, &a);
    bad += compare_json(&a, dir, "expected_memory.json", cg_memory_to_json(&a, mp));
    cg_graph *g = cg_graph_build_with(t, h, tp, mp, &a, &err);
    bad += check_summary_only(&a, dir, t, h, tp, mp, g, err.msg);
    snprintf(path, sizeof path, "%s/expected_error.txt", dir);
    if (cg_path_exists(path)) {
        char *want = cg_read_file(path, 0, NULL, &err);
        assert_non_null(want);
        want[strcspn(want, "\n")] = '\0';
        if (g) {
            fprintf(stderr, "%s: expected error \"%s\", graph was built\n", dir, want);
            bad++;
        } else if (strcmp(err.msg, want) != 0) {
            fprintf(stderr, "%s: error mismatch\n--- expected\n%s\n--- got\n%s\n", dir, want, err.msg);
            bad++;
        }
        free(want);
    } else if (!g) {
        fprintf(stderr, "%s: graph build failed: %s\n", dir, err.msg);
        bad++;
    } else {
        bad += compare_json(&a, dir, "expected_graph.json", cg_graph_to_json(&a, g));
    }
    cg_arena_free(&a);
    cg_health_free(h);
    cg_trace_free(t);
    return bad;
}

static void test_analysis_fixture_corpus(void **st) {
    (void)st;
    char root[2048];
    snprintf(root, sizeof root, "%s/analysis", fixtures_root());
    DIR *d = opendir(root);
    assert_non_null(d);
    struct dirent *e;
    int cases = 0, failures = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", root, e->d_name);
        if (!cg_is_dir(dir)) continue;
        int bad = run_case(dir);
        fprintf(stderr, "%-40s %s\n", e->d_name, bad ? "FAIL" : "ok");
        failures += bad ? 1 : 0;
        cases++;
    }
    closedir(d);
    assert_true(cases >= 6);
    assert_int_equal(failures, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_analysis_fixture_corpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
