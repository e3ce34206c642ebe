/* Unit tests for the verified-bundle path of lib/comparison (§3.2):
 *  - comparing published bundles and comparing their stored cohort rows
 *    (row → JSON text → row) give byte-identical comparison/6 JSON, and so
 *    does the already-verified-traces entry point;
 *  - the hard loading errors abort with the spec's context messages.
 * Bundles are published with cg_publish_bundle from trace/10 texts. When
 * CG_COMPARISON_BASELINE / CG_COMPARISON_CANDIDATE hold ':'-separated bundle
 * directories (the integration test passes toy_train bundles), the identity
 * check runs over those instead. */
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
#include "bundle/publish.h"
#include "bundle/verify.h"
#include "comparison/compare.h"
#include "comparison_runs.h"
#include "test_tmpdir.h"

static char g_tmp[256];

static int setup(void **st) {
    (void)st;
    return test_tmpdir_in(g_tmp, sizeof g_tmp, "comparison-bundles");
}

static int teardown(void **st) {
    (void)st;
    cg_rm_rf(g_tmp);
    return 0;
}

static void publish_run(const ts_run *r, const char *bundle) {
    char trace[600];
    snprintf(trace, sizeof trace, "%s/%s.jsonl", g_tmp, r->run_id);
    cg_buf b = CG_BUF_INIT;
    ts_run_text(&b, r);
    cg_error err;
    if (cg_write_file(trace, b.data, b.len, false, &err) != 0) fail_msg("%s", err.msg);
    cg_buf_free(&b);
    if (cg_publish_bundle(bundle, trace, NULL, NULL, &err) != 0) fail_msg("publish %s: %s", bundle, err.msg);
}

static char *pretty(cg_arena *a, const cg_jv *v) {
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, v, true);
    char *s = cg_arena_strdup(a, b.data);
    cg_buf_free(&b);
    return s;
}

/* Splits "a:b:c:" into paths (arena). */
static size_t split_paths(cg_arena *a, const char *list, const char **out, size_t max) {
    size_t n = 0;
    char *s = cg_arena_strdup(a, list);
    for (char *save = NULL, *p = strtok_r(s, ":", &save); p && n < max; p = strtok_r(NULL, ":", &save)) out[n++] = p;
    return n;
}

/* The three entry points agree byte for byte. */
static void check_paths_agree(const char *const *base, size_t nb, const char *const *cand, size_t nc) {
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_error err;
    cg_err_clear(&err);
    cg_jv *from_bundles = cg_compare_verified_bundles(&a, base, nb, cand, nc, &err);
    if (!from_bundles) fail_msg("%s", err.msg);
    char *want = pretty(&a, from_bundles);

    /* the cohort sample table: computed once per bundle, stored as text, read back */
    cg_cohort_row *rb = cg_arena_zalloc(&a, nb * sizeof *rb), *rc = cg_arena_zalloc(&a, nc * sizeof *rc);
    for (size_t k = 0; k < nb + nc; k++) {
        cg_cohort_row row;
        const char *root = k < nb ? base[k] : cand[k - nb];
        if (cg_cohort_row_from_bundle(&a, root, k < nb ? "baseline" : "candidate", k < nb ? k + 1 : k - nb + 1, &row,
                                      &err) != 0)
            fail_msg("%s", err.msg);
        cg_buf text = CG_BUF_INIT;
        cg_cohort_row_write(&text, &row);
        cg_cohort_row *dst = k < nb ? &rb[k] : &rc[k - nb];
        if (cg_cohort_row_parse(&a, text.data, text.len, dst, &err) != 0) fail_msg("%s", err.msg);
        cg_buf_free(&text);
    }
    assert_string_equal(pretty(&a, cg_compare_rows(&a, rb, nb, rc, nc, CG_CMP_VERIFIED_BUNDLES)), want);

    /* already-verified traces + receipts (the server's entry point) */
    const cg_trace **tb = cg_arena_zalloc(&a, nb * sizeof *tb), **tc = cg_arena_zalloc(&a, nc * sizeof *tc);
    cg_cohort_receipt *xb = cg_arena_zalloc(&a, nb * sizeof *xb), *xc = cg_arena_zalloc(&a, nc * sizeof *xc);
    for (size_t k = 0; k < nb + nc; k++) {
        const char *root = k < nb ? base[k] : cand[k - nb];
        cg_bundle_receipt rec;
        if (cg_bundle_verify(root, &rec, &err) != 0) fail_msg("%s", err.msg);
        char *tp = cg_path_join(root, "trace.jsonl");
        cg_trace *t = cg_trace_read_file(tp, NULL, &err);
        free(tp);
        if (!t) fail_msg("%s", err.msg);
        cg_cohort_receipt r = {cg_arena_strdup(&a, rec.run_id), cg_arena_strdup(&a, rec.manifest_sha256)};
        if (k < nb) {
            tb[k] = t;
            xb[k] = r;
        } else {
            tc[k - nb] = t;
            xc[k - nb] = r;
        }
    }
    assert_string_equal(pretty(&a, cg_compare_verified_traces(&a, tb, nb, xb, nb, tc, nc, xc, nc)), want);
    for (size_t k = 0; k < nb; k++) cg_trace_free((cg_trace *)tb[k]);
    for (size_t k = 0; k < nc; k++) cg_trace_free((cg_trace *)tc[k]);
    cg_arena_free(&a);
}

static void test_rows_equal_bundles(void **st) {
    (void)st;
    const char *eb = getenv("CG_COMPARISON_BASELINE"), *ec = getenv("CG_COMPARISON_CANDIDATE");
    cg_arena a;
    cg_arena_init(&a, 0);
    const char *base[64], *cand[64];
    size_t nb, nc;
    if (eb && ec && *eb && *ec) {
        nb = split_paths(&a, eb, base, 64);
        nc = split_paths(&a, ec, cand, 64);
    } else {
        static const uint64_t bd[] = {1000, 1020, 990, 1010, 1030}, cd[] = {750, 800, 780, 790, 770};
        static const char *pairs[] = {"p0", "p1", "p2", "p3", "p4"};
        nb = nc = 5;
        for (size_t i = 0; i < 5; i++) {
            ts_run r;
            char id[32];
            snprintf(id, sizeof id, "base-%zu", i);
            ts_run_default(&r, id, "impl-a", bd[i]);
            r.pair_id = pairs[i];
            r.n_ts = 2;
            r.ts[0] = (ts_event){"layer.w", 0.1 * (double)(i + 1), 1.0 / 3.0, 0};
            r.ts[1] = (ts_event){"layer.w", 0.7, 0.2, i};
            base[i] = cg_arena_printf(&a, "%s/b/%zu", g_tmp, i);
            publish_run(&r, base[i]);
            snprintf(id, sizeof id, "cand-%zu", i);
            ts_run_default(&r, id, "impl-b", cd[i]);
            r.pair_id = pairs[4 - i];
            r.n_ts = 1;
            r.ts[0] = (ts_event){"layer.w", 0.3, 1e-9, 0};
            cand[i] = cg_arena_printf(&a, "%s/c/%zu", g_tmp, i);
            publish_run(&r, cand[i]);
        }
    }
    check_paths_agree(base, nb, cand, nc);
    /* and an ineligible mix (baseline as candidate too: duplicate run IDs) */
    check_paths_agree(base, nb, base, nb);
    cg_arena_free(&a);
}

static void test_loading_errors(void **st) {
    (void)st;
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_error err;
    char good[512], missing[512], mismatch[512], garbage[512], want[2048];
    snprintf(good, sizeof good, "%s/err/good", g_tmp);
    snprintf(missing, sizeof missing, "%s/err/missing", g_tmp);
    snprintf(mismatch, sizeof mismatch, "%s/err/mismatch", g_tmp);
    snprintf(garbage, sizeof garbage, "%s/err/garbage", g_tmp);
    ts_run r;
    ts_run_default(&r, "good", "impl", 10);
    publish_run(&r, good);
    ts_run_default(&r, "traced-id", "impl", 10);
    cg_buf b = CG_BUF_INIT;
    ts_run_text(&b, &r);
    assert_int_equal(ts_write_bundle(mismatch, b.data, b.len, "manifest-id"), 0);
    cg_buf_free(&b);
    assert_int_equal(ts_write_bundle(garbage, "{\"kind\":\"meta\"}\n", 16, "g"), 0);

    const char *b1[] = {missing}, *c1[] = {good};
    assert_null(cg_compare_verified_bundles(&a, b1, 1, c1, 1, &err));
    snprintf(want, sizeof want, "verify baseline bundle 1 at %s: bundle directory does not exist: %s", missing, missing);
    assert_string_equal(err.msg, want);

    const char *b2[] = {good}, *c2[] = {good, mismatch};
    assert_null(cg_compare_verified_bundles(&a, b2, 1, c2, 2, &err));
    assert_string_equal(err.msg,
                        "verified candidate bundle 2 manifest run ID \"manifest-id\" does not match trace run ID "
                        "\"traced-id\""); /* the crate's {:?} */

    const char *b3[] = {good, good, garbage};
    assert_null(cg_compare_verified_bundles(&a, b3, 3, c1, 1, &err));
    snprintf(want, sizeof want, "parse verified baseline bundle 3 trace at %s/trace.jsonl: ", garbage);
    if (strncmp(err.msg, want, strlen(want)) != 0) fail_msg("%s", err.msg);

    /* unverified trace files: parse errors carry the cohort and the path (the crate's wording) */
    char tp[600];
    snprintf(tp, sizeof tp, "%s/trace.jsonl", garbage);
    const char *b4[] = {tp};
    assert_null(cg_compare_unverified_trace_files(&a, b4, 1, b4, 1, &err));
    snprintf(want, sizeof want, "parse unverified baseline %s: ", tp);
    if (strncmp(err.msg, want, strlen(want)) != 0) fail_msg("%s", err.msg);
    cg_arena_free(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_equal_bundles),
        cmocka_unit_test(test_loading_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
