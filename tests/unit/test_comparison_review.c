/* Review tests for lib/comparison against spec §3 rules that the area tests
 * do not pin: tensor-stats ordering with ≤ 0 ratios and the "runs" count,
 * the paired even-count median, MAD with a rounded (half away from zero)
 * median, one empty cohort, identity/implementation "missing from one or more
 * runs" messages and the --require-eligible message's distinct sorted codes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"
#include "comparison/compare.h"
#include "comparison/stats.h"
#include "comparison_runs.h"

#define MAXR 8 /* runs prepared per cohort */

typedef ts_cohorts rv_case;

static rv_case *rv_new(size_t nb, size_t nc) {
    rv_case *k = calloc(1, sizeof *k);
    assert_non_null(k);
    cg_arena_init(&k->a, 0);
    char id[32];
    for (size_t i = 0; i < MAXR; i++) {
        snprintf(id, sizeof id, "b%zu", i + 1);
        ts_run_default(&k->b[i], id, "impl-a", 100 + i);
        snprintf(id, sizeof id, "c%zu", i + 1);
        ts_run_default(&k->c[i], id, "impl-b", 90 + i);
    }
    k->nb = nb;
    k->nc = nc;
    return k;
}

static cg_jv *rv_compare(rv_case *k) {
    cg_error err;
    cg_err_clear(&err);
    if (ts_cohorts_build(k, &err) != 0) fail_msg("%s", err.msg);
    return cg_compare_rows(&k->a, k->rb, k->nb, k->rc, k->nc, CG_CMP_VERIFIED_BUNDLES);
}

static void rv_done(rv_case *k) {
    cg_arena_free(&k->a);
    free(k);
}

static void expect_reasons(const cg_jv *v, const char *const *codes, const char *const *msgs, size_t n) {
    const cg_jv *r = cg_jv_get(v, "reasons");
    if (cg_jv_len(r) != n) fail_msg("%zu reasons, expected %zu", cg_jv_len(r), n);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(cg_jv_as_str(cg_jv_get(cg_jv_at(r, i), "code")), codes[i]);
        if (msgs && msgs[i]) assert_string_equal(cg_jv_as_str(cg_jv_get(cg_jv_at(r, i), "message")), msgs[i]);
    }
}

static double f64_of(const cg_jv *v) {
    double d = NAN;
    assert_true(cg_jv_as_f64(v, &d));
    return d;
}

/* §3.8: null or ≤ 0 rms_ratio ranks first (+∞), ties by label; runs counts a
 * run once per label; samples counts every event. */
static void test_tensor_stats_order_and_counts(void **st) {
    (void)st;
    rv_case *k = rv_new(5, 5);
    k->b[0].n_ts = 6;
    k->b[0].ts[0] = (ts_event){"zz_half", 2.0, 1.0, 0};
    k->b[0].ts[1] = (ts_event){"m_to_zero", 3.0, 1.0, 0};  /* ratio 0 → +∞ */
    k->b[0].ts[2] = (ts_event){"k_from_zero", 0.0, 0.0, 0}; /* ratio null → +∞ */
    k->b[0].ts[3] = (ts_event){"a_same", 1.0, 1.0, 0};
    k->b[0].ts[4] = (ts_event){"a_same", 1.0, 1.0, 0}; /* duplicate in one run */
    k->b[0].ts[5] = (ts_event){"b_double", 1.0, 1.0, 0};
    k->c[0].n_ts = 5;
    k->c[0].ts[0] = (ts_event){"zz_half", 1.0, 1.0, 0};   /* |ln 0.5| = ln 2 */
    k->c[0].ts[1] = (ts_event){"m_to_zero", 0.0, 1.0, 0};
    k->c[0].ts[2] = (ts_event){"k_from_zero", 1.0, 1.0, 0};
    k->c[0].ts[3] = (ts_event){"a_same", 1.0, 1.0, 0};
    k->c[0].ts[4] = (ts_event){"b_double", 2.0, 1.0, 0}; /* |ln 2| ties zz_half */
    cg_jv *v = rv_compare(k);
    const cg_jv *m = cg_jv_get(cg_jv_get(v, "tensor_stats"), "matched");
    static const char *const order[] = {"k_from_zero", "m_to_zero", "b_double", "zz_half", "a_same"};
    assert_int_equal(cg_jv_len(m), 5);
    for (size_t i = 0; i < 5; i++) assert_string_equal(cg_jv_as_str(cg_jv_get(cg_jv_at(m, i), "label")), order[i]);
    assert_int_equal(cg_jv_get(cg_jv_at(m, 0), "rms_ratio")->type, CG_JNULL);
    assert_true(f64_of(cg_jv_get(cg_jv_at(m, 1), "rms_ratio")) == 0.0);
    const cg_jv *same = cg_jv_at(m, 4);
    uint64_t n;
    assert_true(cg_jv_as_u64(cg_jv_get(same, "samples_a"), &n) && n == 2);
    assert_true(cg_jv_as_u64(cg_jv_get(same, "runs_a"), &n) && n == 1);
    assert_true(cg_jv_as_u64(cg_jv_get(same, "samples_b"), &n) && n == 1);
    rv_done(k);
}

/* §3.7: paired median_delta_ns over an even number of pairs is the mean of
 * the two middle integer deltas. */
static void test_paired_even_median(void **st) {
    (void)st;
    static const char *const pairs[] = {"p0", "p1", "p2", "p3", "p4", "p5"};
    static const uint64_t bd[] = {100, 100, 100, 100, 100, 100}, cd[] = {90, 93, 95, 96, 99, 120};
    rv_case *k = rv_new(6, 6);
    for (size_t i = 0; i < 6; i++) {
        k->b[i].pair_id = k->c[i].pair_id = pairs[i];
        k->b[i].duration_ns = bd[i];
        k->c[i].duration_ns = cd[i];
    }
    cg_jv *v = rv_compare(k);
    assert_true(cg_jv_get(v, "paired")->u.b);
    assert_true(f64_of(cg_jv_get(v, "median_delta_ns")) == -4.5); /* deltas -10 -7 -5 -4 -1 20 */
    rv_done(k);
}

/* §3.5: MAD uses the median rounded half away from zero. */
static void test_mad_rounds_median(void **st) {
    (void)st;
    static const uint64_t s1[] = {1, 2};          /* median 1.5 → 2: |1-2|, 0 → 0.5 */
    static const uint64_t s2[] = {10, 11, 12, 13, 100};
    static const uint64_t s3[] = {1, 2, 4, 8};    /* median 3.0 → 3: 2,1,1,5 → 1.5 */
    cg_sample_stats st1;
    cg_stats_sample(s1, 2, &st1);
    assert_true(st1.median_ns == 1.5 && st1.mad_ns == 0.5);
    cg_stats_sample(s2, 5, &st1);
    assert_true(st1.median_ns == 12.0 && st1.mad_ns == 1.0);
    cg_stats_sample(s3, 4, &st1);
    assert_true(st1.mad_ns == 1.5);
}

/* §3.4 edge cases: an empty baseline cohort alone. */
static void test_one_empty_cohort(void **st) {
    (void)st;
    rv_case *k = rv_new(0, 5);
    cg_jv *v = rv_compare(k);
    static const char *const codes[] = {"insufficient_runs", "implementation_id_missing"};
    static const char *const msgs[] = {NULL, "baseline implementation ID is missing"};
    expect_reasons(v, codes, msgs, 2);
    assert_int_equal(cg_jv_get(v, "baseline_implementation_id")->type, CG_JNULL);
    assert_string_equal(cg_jv_as_str(cg_jv_get(v, "candidate_implementation_id")), "impl-b");
    assert_int_equal(cg_jv_get(v, "identity")->type, CG_JOBJ);
    assert_int_equal(cg_jv_get(v, "median_delta_percent")->type, CG_JNULL);
    rv_done(k);
}

/* §3.4: a later run without identity → "missing from one or more runs" for
 * the identity and, in its cohort, for the implementation ID. */
static void test_missing_from_later_runs(void **st) {
    (void)st;
    rv_case *k = rv_new(5, 5);
    k->c[3].has_identity = false;
    cg_jv *v = rv_compare(k);
    static const char *const codes[] = {"identity_missing", "implementation_id_missing"};
    static const char *const msgs[] = {"comparison identity is missing from one or more runs",
                                       "candidate implementation ID is missing from one or more runs"};
    expect_reasons(v, codes, msgs, 2);
    assert_int_equal(cg_jv_get(v, "identity")->type, CG_JNULL);
    assert_string_equal(cg_jv_as_str(cg_jv_get(v, "baseline_implementation_id")), "impl-a");
    assert_int_equal(cg_jv_get(v, "candidate_implementation_id")->type, CG_JNULL);
    rv_done(k);
}

/* §3.9: distinct codes, sorted, ", "-joined. */
static void test_require_eligible_message(void **st) {
    (void)st;
    rv_case *k = rv_new(5, 5);
    k->b[1].scope = "profiled_work";
    k->c[2].scope = "profiled_work";
    k->b[0].impl_id = "   ";
    cg_jv *v = rv_compare(k);
    static const char *const codes[] = {"not_production_equivalent", "not_production_equivalent",
                                        "capture_semantics_mismatch", "identity_invalid", "implementation_id_empty"};
    static const char *const msgs[] = {"baseline run 2 is not declared production-equivalent",
                                       "candidate run 3 is not declared production-equivalent", NULL,
                                       "comparison identity is invalid: comparison identity implementation_id must "
                                       "not be empty when declared",
                                       "baseline implementation ID must not be empty"};
    expect_reasons(v, codes, msgs, 5);
    cg_buf b = CG_BUF_INIT;
    cg_comparison_ineligible_message(v, &b);
    assert_string_equal(b.data, "comparison ineligible: capture_semantics_mismatch, identity_invalid, implementation_id_empty, "
                                "not_production_equivalent");
    cg_buf_free(&b);
    rv_done(k);
}

/* §3.4 with real trace health: capture_step 0 (invalid run metadata) and a
 * failed terminal are incomplete captures; inputs stay unverified. */
static void test_real_health_incomplete(void **st) {
    (void)st;
    rv_case *k = rv_new(5, 5);
    k->b[2].capture_step = 0;
    k->b[2].warmup_steps = 0;
    k->c[4].failed_reason = "boom";
    cg_trace *tb[5], *tc[5];
    for (size_t i = 0; i < 5; i++) {
        cg_buf b = CG_BUF_INIT;
        cg_error err;
        ts_run_text(&b, &k->b[i]);
        tb[i] = cg_trace_read_mem(b.data, b.len, "b", NULL, &err);
        if (!tb[i]) fail_msg("%s", err.msg);
        cg_buf_free(&b);
        ts_run_text(&b, &k->c[i]);
        tc[i] = cg_trace_read_mem(b.data, b.len, "c", NULL, &err);
        if (!tc[i]) fail_msg("%s", err.msg);
        cg_buf_free(&b);
    }
    cg_jv *v = cg_compare_unverified_traces(&k->a, (const cg_trace *const *)tb, 5, (const cg_trace *const *)tc, 5);
    static const char *const codes[] = {"unverified_inputs", "incomplete_capture", "incomplete_capture",
                                        "capture_semantics_mismatch"};
    static const char *const msgs[] = {NULL, "baseline run 3 is not a complete, structurally valid capture",
                                       "candidate run 5 is not a complete, structurally valid capture", NULL};
    expect_reasons(v, codes, msgs, 4);
    const cg_jv *in = cg_jv_get(v, "inputs");
    assert_string_equal(cg_jv_as_str(cg_jv_get(in, "verification")), "unverified_traces");
    assert_int_equal(cg_jv_len(cg_jv_get(in, "baseline")), 0);
    for (size_t i = 0; i < 5; i++) {
        cg_trace_free(tb[i]);
        cg_trace_free(tc[i]);
    }
    rv_done(k);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tensor_stats_order_and_counts),
        cmocka_unit_test(test_paired_even_median),
        cmocka_unit_test(test_mad_rounds_median),
        cmocka_unit_test(test_one_empty_cohort),
        cmocka_unit_test(test_missing_from_later_runs),
        cmocka_unit_test(test_require_eligible_message),
        cmocka_unit_test(test_real_health_incomplete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
