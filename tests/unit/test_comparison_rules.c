/* Unit tests for lib/comparison: every comparison/6 reason code (each shown on
 * a 5+5 cohort perturbed in one place), evaluation order, the empty-cohort edge
 * cases, paired/unpaired verdicts, determinism and the tensor-stats comparison.
 * Runs are trace/10 texts parsed with the real reader; health flags are given
 * explicitly so that each rule is exercised alone. */
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
#include "comparison_runs.h"

typedef ts_cohorts cmp_case;

static void case_default(cmp_case *k) {
    static const uint64_t bd[] = {100, 102, 99, 101, 103}, cd[] = {75, 80, 78, 79, 77};
    memset(k, 0, sizeof *k);
    cg_arena_init(&k->a, 0);
    char id[32];
    for (size_t i = 0; i < 5; i++) {
        snprintf(id, sizeof id, "b%zu", i + 1);
        ts_run_default(&k->b[i], id, "impl-a", bd[i]);
        snprintf(id, sizeof id, "c%zu", i + 1);
        ts_run_default(&k->c[i], id, "impl-b", cd[i]);
    }
    k->nb = k->nc = 5;
}

static void case_build(cmp_case *k) {
    cg_error err;
    cg_err_clear(&err);
    if (ts_cohorts_build(k, &err) != 0) fail_msg("%s", err.msg);
}

static cg_jv *case_compare(cmp_case *k, cg_comparison_verification kind) {
    return cg_compare_rows(&k->a, k->rb, k->nb, k->rc, k->nc, kind);
}

static char *to_text(cg_arena *a, const cg_jv *v) {
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, v, true);
    char *s = cg_arena_strdup(a, b.data);
    cg_buf_free(&b);
    return s;
}

/* Asserts the exact list of reason codes (NULL-terminated varargs). */
static void expect_codes(const cg_jv *v, ...) {
    const cg_jv *reasons = cg_jv_get(v, "reasons");
    va_list ap;
    va_start(ap, v);
    size_t i = 0;
    for (const char *code; (code = va_arg(ap, const char *)) != NULL; i++) {
        if (i >= cg_jv_len(reasons)) fail_msg("missing reason %zu (%s)", i, code);
        assert_string_equal(cg_jv_as_str(cg_jv_get(cg_jv_at(reasons, i), "code")), code);
    }
    va_end(ap);
    if (i != cg_jv_len(reasons))
        fail_msg("%zu reasons, expected %zu; extra: %s", cg_jv_len(reasons), i,
                 cg_jv_as_str(cg_jv_get(cg_jv_at(reasons, i), "code")));
    bool comparable = cg_jv_get(v, "comparable")->u.b;
    assert_int_equal(comparable, i == 0);
    if (i) {
        assert_string_equal(cg_jv_as_str(cg_jv_get(v, "verdict")), "ineligible");
        assert_int_equal(cg_jv_get(v, "confidence_interval")->type, CG_JNULL);
    }
}

static void expect_message(const cg_jv *v, size_t i, const char *msg) {
    const cg_jv *reasons = cg_jv_get(v, "reasons");
    assert_true(i < cg_jv_len(reasons));
    assert_string_equal(cg_jv_as_str(cg_jv_get(cg_jv_at(reasons, i), "message")), msg);
}

static const char *verdict(const cg_jv *v) {
    return cg_jv_as_str(cg_jv_get(v, "verdict"));
}

static void expect_ci(const cg_jv *v, double lo, double hi) {
    const cg_jv *ci = cg_jv_get(v, "confidence_interval");
    assert_int_equal(ci->type, CG_JOBJ);
    double x, y, level;
    assert_true(cg_jv_as_f64(cg_jv_get(ci, "lower_delta_ns"), &x));
    assert_true(cg_jv_as_f64(cg_jv_get(ci, "upper_delta_ns"), &y));
    assert_true(cg_jv_as_f64(cg_jv_get(ci, "level"), &level));
    if (x != lo || y != hi) fail_msg("CI [%g, %g], expected [%g, %g]", x, y, lo, hi);
    assert_true(level == 0.95);
}

static cmp_case *case_new(void) {
    cmp_case *k = calloc(1, sizeof *k);
    assert_non_null(k);
    case_default(k);
    return k;
}

static void case_done(cmp_case *k) {
    cg_arena_free(&k->a);
    free(k);
}

/* ------------------------------------------------------------- baseline */

static void test_default_case_is_eligible_unpaired_faster(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* default */
    case_build(k);
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, NULL);
    assert_string_equal(verdict(v), "candidate_faster");
    assert_false(cg_jv_get(v, "paired")->u.b);
    expect_ci(v, -26.0, -20.0);
    assert_string_equal(cg_jv_as_str(cg_jv_get(v, "baseline_implementation_id")), "impl-a");
    assert_string_equal(cg_jv_as_str(cg_jv_get(v, "candidate_implementation_id")), "impl-b");
    const cg_jv *id = cg_jv_get(v, "identity");
    assert_int_equal(id->type, CG_JOBJ);
    assert_null(cg_jv_get(id, "implementation_id"));
    assert_null(cg_jv_get(id, "pair_id"));
    assert_string_equal(cg_jv_as_str(cg_jv_get(id, "workload_id")), "wl");
    double d, p;
    assert_true(cg_jv_as_f64(cg_jv_get(v, "median_delta_ns"), &d));
    assert_true(d == 78.0 - 101.0);
    assert_true(cg_jv_as_f64(cg_jv_get(v, "median_delta_percent"), &p));
    assert_true(p == -23.0 / 101.0 * 100.0);
    const cg_jv *inputs = cg_jv_get(v, "inputs");
    assert_string_equal(cg_jv_as_str(cg_jv_get(inputs, "verification")), "verified_bundles");
    assert_int_equal(cg_jv_len(cg_jv_get(inputs, "baseline")), 5);
    assert_string_equal(cg_jv_as_str(cg_jv_get(cg_jv_at(cg_jv_get(inputs, "candidate"), 0), "run_id")), "c1");
    /* samples in input order, raw */
    const cg_jv *s = cg_jv_get(cg_jv_get(v, "baseline"), "samples_ns");
    uint64_t x;
    assert_true(cg_jv_as_u64(cg_jv_at(s, 1), &x) && x == 102);
    case_done(k);
}

/* ------------------------------------------------------------- provenance */

static void test_unverified_inputs(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* unverified */
    case_build(k);
    cg_jv *v = case_compare(k, CG_CMP_UNVERIFIED_TRACES);
    expect_codes(v, "unverified_inputs", NULL);
    expect_message(v, 0,
                   "unverified raw trace inputs are diagnostic only; finalized verified bundles are required for an "
                   "eligible comparison");
    const cg_jv *inputs = cg_jv_get(v, "inputs");
    assert_string_equal(cg_jv_as_str(cg_jv_get(inputs, "verification")), "unverified_traces");
    assert_int_equal(cg_jv_len(cg_jv_get(inputs, "baseline")), 0);
    assert_int_equal(cg_jv_len(cg_jv_get(inputs, "candidate")), 0);
    case_done(k);
}

static void test_receipt_count_mismatch(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* count */
    case_build(k);
    k->rc[2].has_receipt = false;
    k->rc[2].receipt.manifest_sha256 = "zz"; /* per-item checks of that cohort are skipped */
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "receipt_count_mismatch", NULL);
    expect_message(v, 0, "candidate bundle receipts must correspond one-to-one with trace documents");
    assert_int_equal(cg_jv_len(cg_jv_get(cg_jv_get(v, "inputs"), "candidate")), 4);
    case_done(k);
}

static void test_receipt_count_mismatch_explicit_lists(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* count-explicit */
    case_build(k);
    cg_cohort_receipt rb[6], rc[5];
    for (size_t i = 0; i < 5; i++) {
        rb[i] = k->rb[i].receipt;
        rc[i] = k->rc[i].receipt;
    }
    rb[5] = rb[4];
    cg_jv *v = cg_compare_rows_with_receipts(&k->a, k->rb, 5, rb, 6, k->rc, 5, rc, 5, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "receipt_count_mismatch", NULL);
    expect_message(v, 0, "baseline bundle receipts must correspond one-to-one with trace documents");
    assert_int_equal(cg_jv_len(cg_jv_get(cg_jv_get(v, "inputs"), "baseline")), 6);
    case_done(k);
}

static void test_receipt_run_id_mismatch(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* runid */
    case_build(k);
    k->rb[1].receipt.run_id = "someone-else";
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "receipt_run_id_mismatch", NULL);
    expect_message(v, 0, "baseline bundle 2 receipt run ID does not match its trace");
    case_done(k);
}

static void test_receipt_digest_invalid(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* digest */
    case_build(k);
    k->rc[3].receipt.manifest_sha256 = "abc";
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "receipt_digest_invalid", NULL);
    expect_message(v, 0, "candidate bundle 4 receipt has an invalid manifest SHA-256");
    /* uppercase hex is accepted */
    k->rc[3].receipt.manifest_sha256 = "ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789";
    expect_codes(case_compare(k, CG_CMP_VERIFIED_BUNDLES), NULL);
    case_done(k);
}

/* ------------------------------------------------------------- per run */

static void test_incomplete_capture(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* incomplete */
    case_build(k);
    k->rc[1].capture_complete = false;
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "incomplete_capture", NULL);
    expect_message(v, 0, "candidate run 2 is not a complete, structurally valid capture");
    k->rc[1].capture_complete = true;
    k->rb[4].structurally_valid = false;
    v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "incomplete_capture", NULL);
    expect_message(v, 0, "baseline run 5 is not a complete, structurally valid capture");
    case_done(k);
}

static void test_not_production_equivalent(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* scope */
    for (size_t i = 0; i < 5; i++) k->b[i].scope = k->c[i].scope = "profiled_work";
    case_build(k);
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "not_production_equivalent", "not_production_equivalent", "not_production_equivalent",
                 "not_production_equivalent", "not_production_equivalent", "not_production_equivalent",
                 "not_production_equivalent", "not_production_equivalent", "not_production_equivalent",
                 "not_production_equivalent", NULL);
    expect_message(v, 0, "baseline run 1 is not declared production-equivalent");
    expect_message(v, 9, "candidate run 5 is not declared production-equivalent");
    case_done(k);
}

static void test_unsynchronized_device_region(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* unsync */
    for (size_t i = 0; i < 5; i++) k->b[i].device = k->c[i].device = "cuda:0";
    k->b[0].device = "cuda:0";
    case_build(k);
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    assert_int_equal(cg_jv_len(cg_jv_get(v, "reasons")), 10);
    expect_message(v, 5, "candidate run 1 does not synchronize its measured device region");
    for (size_t i = 0; i < 10; i++)
        assert_string_equal(cg_jv_as_str(cg_jv_get(cg_jv_at(cg_jv_get(v, "reasons"), i), "code")),
                            "unsynchronized_device_region");
    case_done(k);
    /* synchronized GPU runs and "cpu"-prefixed devices are fine */
    k = case_new(); /* sync */
    for (size_t i = 0; i < 5; i++) {
        k->b[i].device = k->c[i].device = "cuda:0";
        k->b[i].sync = k->c[i].sync = true;
    }
    case_build(k);
    expect_codes(case_compare(k, CG_CMP_VERIFIED_BUNDLES), NULL);
    case_done(k);
    k = case_new(); /* cpu-prefix */
    for (size_t i = 0; i < 5; i++) k->b[i].device = k->c[i].device = "cpu:1";
    case_build(k);
    expect_codes(case_compare(k, CG_CMP_VERIFIED_BUNDLES), NULL);
    case_done(k);
}

static void test_measured_region_count_invalid(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* two measured */
    k->b[2].measured = 2;
    case_build(k);
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "measured_region_count_invalid", NULL);
    expect_message(v, 0, "baseline run 3 does not contain exactly one closed measured region");
    uint64_t x;
    /* the sample is the first closed measured span's duration */
    assert_true(cg_jv_as_u64(cg_jv_at(cg_jv_get(cg_jv_get(v, "baseline"), "samples_ns"), 2), &x) && x == 99);
    case_done(k);
    k = case_new(); /* open measured */
    k->c[4].measured = 0;
    k->c[4].open_measured = true;
    case_build(k);
    v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "measured_region_count_invalid", NULL);
    expect_message(v, 0, "candidate run 5 does not contain exactly one closed measured region");
    assert_true(cg_jv_as_u64(cg_jv_at(cg_jv_get(cg_jv_get(v, "candidate"), "samples_ns"), 4), &x) && x == 0);
    case_done(k);
}

/* ------------------------------------------------------------- cohort */

static void test_insufficient_runs(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* four */
    k->nb = 4;
    case_build(k);
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "insufficient_runs", NULL);
    expect_message(v, 0, "at least 5 independent baseline and candidate runs are required");
    /* statistics are still computed */
    double m;
    assert_true(cg_jv_as_f64(cg_jv_get(cg_jv_get(v, "baseline"), "median_ns"), &m) && m == 100.5);
    case_done(k);
}

static void test_duplicate_run_ids(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* dup */
    snprintf(k->c[0].run_id, sizeof k->c[0].run_id, "b1");
    case_build(k);
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "duplicate_run_ids", NULL);
    expect_message(v, 0, "run IDs must be unique across all replicates");
    case_done(k);
}

static void semantics_case(void (*perturb)(ts_run *)) {
    cmp_case *k = case_new(); /* semantics */
    perturb(&k->c[4]);
    case_build(k);
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "capture_semantics_mismatch", NULL);
    expect_message(v, 0,
                   "entrypoint, phase, device, timing mode, synchronization, warmup, capture step, and capture "
                   "contract must match");
    case_done(k);
}
static void p_entry(ts_run *r) { r->entrypoint = "train2"; }
static void p_phase(ts_run *r) { r->phase = "infer"; }
static void p_device(ts_run *r) { r->device = "cpu1"; }
static void p_timing(ts_run *r) { r->timing_mode = "device_synchronized"; }
static void p_sync(ts_run *r) { r->sync = true; }
static void p_warmup(ts_run *r) { r->warmup_steps = 1; }
static void p_step(ts_run *r) { r->capture_step = 4; }
static void p_contract(ts_run *r) { r->operations = "partial"; }

static void test_capture_semantics_mismatch(void **st) {
    (void)st;
    semantics_case(p_entry);
    semantics_case(p_phase);
    semantics_case(p_device);
    semantics_case(p_timing);
    semantics_case(p_sync);
    semantics_case(p_warmup);
    semantics_case(p_step);
    semantics_case(p_contract);
}

static void test_empty_cohorts(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* empty */
    k->nb = k->nc = 0;
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "insufficient_runs", "no_runs", "identity_missing", "implementation_id_missing",
                 "implementation_id_missing", NULL);
    expect_message(v, 2, "comparison identity is missing");
    expect_message(v, 3, "baseline implementation ID is missing");
    expect_message(v, 4, "candidate implementation ID is missing");
    double d;
    assert_true(cg_jv_as_f64(cg_jv_get(v, "median_delta_ns"), &d) && d == 0.0);
    assert_int_equal(cg_jv_get(v, "median_delta_percent")->type, CG_JNULL);
    assert_int_equal(cg_jv_get(v, "identity")->type, CG_JNULL);
    assert_int_equal(cg_jv_get(v, "baseline_implementation_id")->type, CG_JNULL);
    case_done(k);
    /* one empty cohort: identity and semantics come from the candidate's first run */
    k = case_new(); /* empty baseline */
    k->nb = 0;
    case_build(k);
    v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "insufficient_runs", "implementation_id_missing", NULL);
    expect_message(v, 1, "baseline implementation ID is missing");
    assert_int_equal(cg_jv_get(v, "identity")->type, CG_JOBJ);
    assert_string_equal(cg_jv_as_str(cg_jv_get(v, "candidate_implementation_id")), "impl-b");
    case_done(k);
}

/* ------------------------------------------------------------- identity */

static void test_identity_missing(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* first missing */
    k->b[0].has_identity = false;
    case_build(k);
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "identity_missing", "implementation_id_missing", NULL);
    expect_message(v, 0, "comparison identity is missing");
    expect_message(v, 1, "baseline implementation ID is missing");
    case_done(k);
    k = case_new(); /* later missing */
    k->c[2].has_identity = false;
    case_build(k);
    v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "identity_missing", "implementation_id_missing", NULL);
    expect_message(v, 0, "comparison identity is missing from one or more runs");
    expect_message(v, 1, "candidate implementation ID is missing from one or more runs");
    assert_int_equal(cg_jv_get(v, "identity")->type, CG_JNULL);
    case_done(k);
}

static void test_identity_invalid(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* invalid */
    k->b[0].workload_id = "  ";
    case_build(k);
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "identity_invalid", NULL);
    expect_message(v, 0, "comparison identity is invalid: comparison identity workload_id must not be empty");
    assert_int_equal(cg_jv_get(v, "identity")->type, CG_JNULL);
    case_done(k);
    /* only the first run's identity is validated */
    k = case_new(); /* later invalid */
    k->c[0].physical_batch = 0;
    case_build(k);
    v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "identity_conditions_differ", NULL);
    case_done(k);
}

static void test_identity_conditions_differ(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* differ */
    k->c[1].physical_batch = 16;
    case_build(k);
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "identity_conditions_differ", NULL);
    expect_message(v, 0, "workload, model, configuration, data, seed, batch, precision, or device state differs");
    case_done(k);
}

/* ------------------------------------------------------------- implementation */

static void test_implementation_id_missing(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* impl first */
    k->b[0].impl_id = NULL;
    case_build(k);
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "implementation_id_missing", NULL);
    expect_message(v, 0, "baseline implementation ID is missing");
    assert_int_equal(cg_jv_get(v, "baseline_implementation_id")->type, CG_JNULL);
    assert_string_equal(cg_jv_as_str(cg_jv_get(v, "candidate_implementation_id")), "impl-b");
    case_done(k);
    k = case_new(); /* impl later */
    k->b[3].impl_id = NULL;
    case_build(k);
    v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "implementation_id_missing", NULL);
    expect_message(v, 0, "baseline implementation ID is missing from one or more runs");
    case_done(k);
}

static void test_implementation_id_empty(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* impl blank */
    for (size_t i = 0; i < 5; i++) k->c[i].impl_id = "   ";
    case_build(k);
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    /* missing → empty → inconsistent: a blank first ID is "empty", not "missing" */
    expect_codes(v, "implementation_id_empty", NULL);
    expect_message(v, 0, "candidate implementation ID must not be empty");
    case_done(k);
}

static void test_implementation_id_inconsistent(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* impl differ */
    k->c[4].impl_id = "impl-c";
    case_build(k);
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "implementation_id_inconsistent", NULL);
    expect_message(v, 0, "candidate implementation ID differs within the cohort");
    assert_int_equal(cg_jv_get(v, "candidate_implementation_id")->type, CG_JNULL);
    case_done(k);
    /* IDs are compared within a cohort only: equal IDs across cohorts are fine */
    k = case_new(); /* impl same across */
    for (size_t i = 0; i < 5; i++) k->c[i].impl_id = "impl-a";
    case_build(k);
    expect_codes(case_compare(k, CG_CMP_VERIFIED_BUNDLES), NULL);
    case_done(k);
}

/* ------------------------------------------------------------- pairing */

static const char *const PAIRS[] = {"pair-0", "pair-1", "pair-2", "pair-3", "pair-4", "pair-5"};

static void set_pairs(cmp_case *k) {
    for (size_t i = 0; i < 5; i++) k->b[i].pair_id = k->c[i].pair_id = PAIRS[i];
}

static void test_pairing_incomplete(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* pair missing */
    set_pairs(k);
    k->c[2].pair_id = NULL;
    case_build(k);
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "pairing_incomplete", NULL);
    expect_message(v, 0, "pair IDs must be present on every run when pairing is requested");
    assert_false(cg_jv_get(v, "paired")->u.b);
    case_done(k);
    /* one pair ID anywhere requests pairing */
    k = case_new(); /* one pair id */
    k->b[4].pair_id = "p";
    case_build(k);
    v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "pairing_incomplete", NULL);
    case_done(k);
    k = case_new(); /* pair no measured */
    set_pairs(k);
    k->b[1].measured = 0;
    case_build(k);
    v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "measured_region_count_invalid", "pairing_incomplete", NULL);
    expect_message(v, 1, "paired runs require one closed measured region");
    case_done(k);
}

static void test_pair_ids_duplicated(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* pair dup */
    set_pairs(k);
    k->b[3].pair_id = "pair-0";
    case_build(k);
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "pair_ids_duplicated", NULL);
    expect_message(v, 0, "pair IDs must be unique within each cohort");
    case_done(k);
}

static void test_pair_sets_mismatch(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* pair sets */
    set_pairs(k);
    k->c[4].pair_id = "pair-5";
    case_build(k);
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, "pair_sets_mismatch", NULL);
    expect_message(v, 0, "baseline and candidate pair-ID sets must match exactly");
    assert_false(cg_jv_get(v, "paired")->u.b);
    case_done(k);
}

/* ------------------------------------------------------------- verdicts */

static void set_durations(cmp_case *k, const uint64_t *b, size_t nb, const uint64_t *c, size_t nc) {
    char id[32];
    k->nb = nb;
    k->nc = nc;
    for (size_t i = 0; i < nb; i++) {
        snprintf(id, sizeof id, "b%zu", i + 1);
        ts_run_default(&k->b[i], id, "impl-a", b[i]);
    }
    for (size_t i = 0; i < nc; i++) {
        snprintf(id, sizeof id, "c%zu", i + 1);
        ts_run_default(&k->c[i], id, "impl-b", c[i]);
    }
}

static void test_verdicts_unpaired(void **st) {
    (void)st;
    static const uint64_t lo[] = {100, 101, 102, 103, 104}, hi[] = {90, 91, 92, 93, 94};
    cmp_case *k = case_new(); /* unpaired faster */
    set_durations(k, lo, 5, hi, 5);
    case_build(k);
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_ci(v, -13.0, -7.0);
    assert_string_equal(verdict(v), "candidate_faster");
    case_done(k);
    k = case_new(); /* unpaired slower */
    set_durations(k, hi, 5, lo, 5);
    case_build(k);
    v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    assert_string_equal(verdict(v), "candidate_slower");
    expect_ci(v, 7.0, 13.0);
    case_done(k);
    static const uint64_t k50[] = {50, 50, 50, 50, 50};
    k = case_new(); /* constant */
    set_durations(k, k50, 5, k50, 5);
    case_build(k);
    v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_ci(v, 0.0, 0.0);
    assert_string_equal(verdict(v), "inconclusive");
    case_done(k);
    /* unequal cohort sizes are fine when unpaired */
    static const uint64_t b7[] = {100, 130, 90, 120, 110, 95, 105}, c6[] = {101, 125, 92, 118, 108, 99};
    k = case_new(); /* overlap */
    set_durations(k, b7, 7, c6, 6);
    case_build(k);
    v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, NULL);
    assert_string_equal(verdict(v), "inconclusive");
    case_done(k);
}

static void test_verdicts_paired(void **st) {
    (void)st;
    static const uint64_t lo[] = {100, 101, 102, 103, 104}, hi[] = {90, 91, 92, 93, 94};
    cmp_case *k = case_new(); /* paired faster */
    set_durations(k, lo, 5, hi, 5);
    set_pairs(k);
    case_build(k);
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, NULL);
    assert_true(cg_jv_get(v, "paired")->u.b);
    expect_ci(v, -10.0, -10.0);
    assert_string_equal(verdict(v), "candidate_faster");
    double d;
    assert_true(cg_jv_as_f64(cg_jv_get(v, "median_delta_ns"), &d) && d == -10.0);
    case_done(k);
    k = case_new(); /* paired slower */
    set_durations(k, hi, 5, lo, 5);
    set_pairs(k);
    case_build(k);
    v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_ci(v, 10.0, 10.0);
    assert_string_equal(verdict(v), "candidate_slower");
    case_done(k);
    /* paired deltas straddle zero: +5, -5, +3, -3, 0 */
    static const uint64_t pb[] = {100, 200, 300, 400, 500}, pc[] = {105, 195, 303, 397, 500};
    k = case_new(); /* paired inconclusive */
    set_durations(k, pb, 5, pc, 5);
    set_pairs(k);
    case_build(k);
    v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_codes(v, NULL);
    assert_string_equal(verdict(v), "inconclusive");
    assert_true(cg_jv_as_f64(cg_jv_get(v, "median_delta_ns"), &d) && d == 0.0);
    case_done(k);
    /* pairs are matched by pair ID, not by position */
    k = case_new(); /* paired by id */
    set_durations(k, lo, 5, hi, 5);
    set_pairs(k);
    k->c[0].pair_id = "pair-4";
    k->c[4].pair_id = "pair-0";
    k->c[0].duration_ns = 94;
    k->c[4].duration_ns = 90;
    case_build(k);
    v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    expect_ci(v, -10.0, -10.0);
    case_done(k);
}

/* ------------------------------------------------------------- determinism */

static void test_deterministic_and_rows_roundtrip(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* det */
    set_pairs(k);
    k->b[0].n_ts = 2;
    k->b[0].ts[0] = (ts_event){"layer.0", 0.1, 0.7, 0};
    k->b[0].ts[1] = (ts_event){"layer.0", 0.2, 0.3, 2};
    k->c[3].n_ts = 1;
    k->c[3].ts[0] = (ts_event){"layer.0", 0.30000000000000004, 1e-7, 1};
    case_build(k);
    char *one = to_text(&k->a, case_compare(k, CG_CMP_VERIFIED_BUNDLES));
    char *two = to_text(&k->a, case_compare(k, CG_CMP_VERIFIED_BUNDLES));
    assert_string_equal(one, two);
    /* rows → JSON text → rows gives byte-identical comparison JSON */
    cg_cohort_row rb[5], rc[5];
    for (size_t i = 0; i < 5; i++) {
        cg_buf b = CG_BUF_INIT;
        cg_error err;
        cg_cohort_row_write(&b, &k->rb[i]);
        if (cg_cohort_row_parse(&k->a, b.data, b.len, &rb[i], &err) != 0) fail_msg("%s", err.msg);
        cg_buf_reset(&b);
        cg_cohort_row_write(&b, &k->rc[i]);
        if (cg_cohort_row_parse(&k->a, b.data, b.len, &rc[i], &err) != 0) fail_msg("%s", err.msg);
        cg_buf_free(&b);
    }
    char *three = to_text(&k->a, cg_compare_rows(&k->a, rb, 5, rc, 5, CG_CMP_VERIFIED_BUNDLES));
    assert_string_equal(one, three);
    case_done(k);
}

/* ------------------------------------------------------------- tensor stats */

static void test_tensor_stats_comparison(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* tensor stats */
    /* baseline: a (rms 1, 3 → mean 2), zero (0), gone (only baseline), grow (1)
     * candidate: a (rms 2 → ratio 1), zero (0 → ratio 1.0; abs_max 0 → 5: null),
     *            new (only candidate), grow (4 → |ln 4|), shrink: both sides? */
    k->b[0].n_ts = 4;
    k->b[0].ts[0] = (ts_event){"a", 1.0, 2.0, 0};
    k->b[0].ts[1] = (ts_event){"zero", 0.0, 0.0, 3};
    k->b[0].ts[2] = (ts_event){"gone", 1.0, 1.0, 0};
    k->b[0].ts[3] = (ts_event){"grow", 1.0, 1.0, 0};
    k->b[1].n_ts = 2;
    k->b[1].ts[0] = (ts_event){"a", 3.0, 2.0, 0};
    k->b[1].ts[1] = (ts_event){"grow", 1.0, 1.0, 0};
    k->b[2].n_ts = 1;
    k->b[2].ts[0] = (ts_event){"from_zero", 0.0, 0.0, 0};
    k->c[0].n_ts = 5;
    k->c[0].ts[0] = (ts_event){"zero", 0.0, 5.0, 1};
    k->c[0].ts[1] = (ts_event){"a", 2.0, 4.0, 0};
    k->c[0].ts[2] = (ts_event){"new", 1.0, 1.0, 0};
    k->c[0].ts[3] = (ts_event){"grow", 4.0, 1.0, 0};
    k->c[0].ts[4] = (ts_event){"from_zero", 2.0, 2.0, 0};
    k->c[1].n_ts = 1;
    k->c[1].ts[0] = (ts_event){"grow", 4.0, 1.0, 0};
    case_build(k);
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    const cg_jv *ts = cg_jv_get(v, "tensor_stats");
    uint64_t n;
    assert_true(cg_jv_as_u64(cg_jv_get(ts, "baseline_runs"), &n) && n == 5);
    assert_true(cg_jv_as_u64(cg_jv_get(ts, "candidate_runs"), &n) && n == 5);
    const cg_jv *m = cg_jv_get(ts, "matched");
    assert_int_equal(cg_jv_len(m), 4);
    /* order: none-ratio first (from_zero: 0 → 2), then zero? (ratio 1.0 → 0) ... by |ln| desc */
    assert_string_equal(cg_jv_as_str(cg_jv_get(cg_jv_at(m, 0), "label")), "from_zero");
    assert_int_equal(cg_jv_get(cg_jv_at(m, 0), "rms_ratio")->type, CG_JNULL);
    assert_int_equal(cg_jv_get(cg_jv_at(m, 0), "abs_max_ratio")->type, CG_JNULL);
    assert_string_equal(cg_jv_as_str(cg_jv_get(cg_jv_at(m, 1), "label")), "grow");
    double r;
    assert_true(cg_jv_as_f64(cg_jv_get(cg_jv_at(m, 1), "rms_ratio"), &r) && r == 4.0);
    assert_true(cg_jv_as_u64(cg_jv_get(cg_jv_at(m, 1), "runs_a"), &n) && n == 2);
    assert_true(cg_jv_as_u64(cg_jv_get(cg_jv_at(m, 1), "samples_b"), &n) && n == 2);
    /* ties on |ln ratio| = 0 are by label ascending: "a" before "zero" */
    const cg_jv *ra = cg_jv_at(m, 2), *rz = cg_jv_at(m, 3);
    assert_string_equal(cg_jv_as_str(cg_jv_get(ra, "label")), "a");
    assert_true(cg_jv_as_f64(cg_jv_get(ra, "rms_a"), &r) && r == 2.0);
    assert_true(cg_jv_as_f64(cg_jv_get(ra, "rms_ratio"), &r) && r == 1.0);
    assert_true(cg_jv_as_f64(cg_jv_get(ra, "abs_max_ratio"), &r) && r == 2.0);
    assert_string_equal(cg_jv_as_str(cg_jv_get(rz, "label")), "zero");
    assert_true(cg_jv_as_f64(cg_jv_get(rz, "rms_ratio"), &r) && r == 1.0); /* 0 vs 0 */
    assert_int_equal(cg_jv_get(rz, "abs_max_ratio")->type, CG_JNULL);    /* 0 vs 5 */
    assert_true(cg_jv_as_u64(cg_jv_get(rz, "non_finite_a"), &n) && n == 3);
    assert_true(cg_jv_as_u64(cg_jv_get(rz, "non_finite_b"), &n) && n == 1);
    const cg_jv *ua = cg_jv_get(ts, "unmatched_a"), *ub = cg_jv_get(ts, "unmatched_b");
    assert_int_equal(cg_jv_len(ua), 1);
    assert_string_equal(cg_jv_as_str(cg_jv_at(ua, 0)), "gone");
    assert_int_equal(cg_jv_len(ub), 1);
    assert_string_equal(cg_jv_as_str(cg_jv_at(ub, 0)), "new");
    /* tensor stats never affect eligibility */
    expect_codes(v, NULL);
    case_done(k);
}

static void test_ineligible_message(void **st) {
    (void)st;
    cmp_case *k = case_new(); /* message */
    k->nb = 4;
    k->c[4].impl_id = "x";
    k->c[3].impl_id = "y";
    case_build(k);
    k->rb[0].capture_complete = false;
    k->rb[1].capture_complete = false;
    cg_jv *v = case_compare(k, CG_CMP_VERIFIED_BUNDLES);
    assert_true(cg_comparison_is_ineligible(v));
    cg_buf b = CG_BUF_INIT;
    cg_comparison_ineligible_message(v, &b);
    assert_string_equal(b.data,
                        "comparison ineligible: implementation_id_inconsistent, incomplete_capture, insufficient_runs");
    cg_buf_free(&b);
    case_done(k);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_case_is_eligible_unpaired_faster),
        cmocka_unit_test(test_unverified_inputs),
        cmocka_unit_test(test_receipt_count_mismatch),
        cmocka_unit_test(test_receipt_count_mismatch_explicit_lists),
        cmocka_unit_test(test_receipt_run_id_mismatch),
        cmocka_unit_test(test_receipt_digest_invalid),
        cmocka_unit_test(test_incomplete_capture),
        cmocka_unit_test(test_not_production_equivalent),
        cmocka_unit_test(test_unsynchronized_device_region),
        cmocka_unit_test(test_measured_region_count_invalid),
        cmocka_unit_test(test_insufficient_runs),
        cmocka_unit_test(test_duplicate_run_ids),
        cmocka_unit_test(test_capture_semantics_mismatch),
        cmocka_unit_test(test_empty_cohorts),
        cmocka_unit_test(test_identity_missing),
        cmocka_unit_test(test_identity_invalid),
        cmocka_unit_test(test_identity_conditions_differ),
        cmocka_unit_test(test_implementation_id_missing),
        cmocka_unit_test(test_implementation_id_empty),
        cmocka_unit_test(test_implementation_id_inconsistent),
        cmocka_unit_test(test_pairing_incomplete),
        cmocka_unit_test(test_pair_ids_duplicated),
        cmocka_unit_test(test_pair_sets_mismatch),
        cmocka_unit_test(test_verdicts_unpaired),
        cmocka_unit_test(test_verdicts_paired),
        cmocka_unit_test(test_deterministic_and_rows_roundtrip),
        cmocka_unit_test(test_tensor_stats_comparison),
        cmocka_unit_test(test_ineligible_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
