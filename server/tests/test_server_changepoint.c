/* test_server_changepoint.c — unit tests of server/changepoint.c (issue 15): the
 * Student-t tail through the incomplete beta, Welch's test, planted shifts
 * found at their exact positions, flat and noisy series without change
 * points, and incremental detection (re-running the sweep from a changed
 * position with `last` restored, as history.c does) equal to whole-series
 * detection; plus the m-out-of-n bootstrap and replication advice. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "changepoint.h"
#include "comparison/advice.h"
#include "comparison/stats.h"

/* Deterministic noise in [-1, 1). */
static double noise(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) / (double)(1ull << 52) - 1.0;
}

static void series(double *v, size_t n, const size_t *at, const double *factor, size_t k, double amp, uint64_t seed) {
    double level = 1e6;
    for (size_t i = 0, j = 0; i < n; i++) {
        if (j < k && i == at[j]) level *= factor[j++];
        v[i] = level * (1.0 + amp * noise(&seed));
    }
}

static void test_student_t(void **state) {
    (void)state;
    /* df = 1, t = 1: two-sided p = 0.5; df = 2, t = 2: p = 1 − 2/√6 */
    assert_true(fabs(srv_betainc(0.5, 0.5, 0.5) - 0.5) < 1e-12);
    assert_true(fabs(srv_betainc(1.0, 0.5, 1.0 / 3.0) - (1.0 - 2.0 / sqrt(6.0))) < 1e-12);
    /* symmetry I_x(a, b) = 1 − I_{1−x}(b, a) */
    assert_true(fabs(srv_betainc(3.5, 0.5, 0.3) - (1.0 - srv_betainc(0.5, 3.5, 0.7))) < 1e-12);
    double x[] = {1, 2, 3, 4, 5}, y[] = {1, 2, 3, 4, 5}, z[] = {10, 11, 12, 13, 14}, c1[] = {3, 3, 3}, c2[] = {4, 4, 4};
    assert_true(fabs(srv_welch_p(x, 5, y, 5) - 1.0) < 1e-12);
    double pz = srv_welch_p(x, 5, z, 5); /* t = 9, df capped at 4 */
    assert_true(pz < 1e-3 && pz > 1e-4);
    assert_true(srv_welch_p(c1, 3, c1, 3) == 1.0);
    assert_true(srv_welch_p(c1, 3, c2, 3) == 0.0);
}

static void test_planted(void **state) {
    (void)state;
    srv_cp_params p;
    srv_cp_defaults(&p);
    double v[120];
    size_t at[] = {30, 75};
    double f[] = {1.10, 0.92};
    series(v, 120, at, f, 2, 0.01, 7);
    srv_cp cp[8];
    size_t n = srv_cp_detect(&p, v, 120, cp, 8);
    assert_int_equal(n, 2);
    assert_int_equal(cp[0].pos, 30);
    assert_int_equal(cp[1].pos, 75);
    assert_true(cp[0].relative_change > 0.08 && cp[0].relative_change < 0.12);
    assert_true(cp[1].relative_change < -0.06);
    assert_true(cp[0].p_value <= 0.001 && cp[0].detected_pos >= 32);
    /* below the minimum relative change: a 0.5 % step is not reported */
    size_t at2[] = {40};
    double f2[] = {1.005};
    series(v, 80, at2, f2, 1, 0.0005, 9);
    assert_int_equal(srv_cp_detect(&p, v, 80, cp, 8), 0);
}

static void test_flat(void **state) {
    (void)state;
    srv_cp_params p;
    srv_cp_defaults(&p);
    double v[200];
    series(v, 200, NULL, NULL, 0, 0.02, 11);
    srv_cp cp[8];
    assert_int_equal(srv_cp_detect(&p, v, 200, cp, 8), 0);
    for (size_t i = 0; i < 200; i++) v[i] = 5.0;
    assert_int_equal(srv_cp_detect(&p, v, 200, cp, 8), 0);
}

/* history.c's incremental form: keep the change points detected before k,
 * restore last from them, re-run steps k … n−1 over values from base. */
static size_t incremental(const srv_cp_params *p, const double *v, size_t n, size_t k, srv_cp *kept, size_t nk) {
    size_t m = 0, last = 0;
    for (size_t i = 0; i < nk; i++)
        if (kept[i].detected_pos < k) {
            kept[m++] = kept[i];
            if (kept[i].pos > last) last = kept[i].pos;
        }
    size_t base = k + 1 > p->window ? k + 1 - p->window : 0;
    if (base < last) base = last;
    for (size_t e = k; e < n; e++) m += srv_cp_step(p, v + base, base, e, &last, kept + m, 64 - m);
    return m;
}

static void test_incremental_equals_whole(void **state) {
    (void)state;
    srv_cp_params p;
    srv_cp_defaults(&p);
    p.window = 20;
    enum { N = 150 };
    double v[N];
    size_t at[] = {25, 60, 61, 100, 130};
    double f[] = {1.2, 0.8, 1.05, 1.3, 0.7};
    series(v, N, at, f, 5, 0.015, 5);
    srv_cp whole[64];
    size_t nw = srv_cp_detect(&p, v, N, whole, 64);
    assert_true(nw >= 4);
    /* one point at a time */
    srv_cp inc[64];
    size_t ni = 0;
    for (size_t e = 0; e < N; e++) ni = incremental(&p, v, e + 1, e, inc, ni);
    assert_int_equal(ni, nw);
    for (size_t i = 0; i < nw; i++) {
        assert_int_equal(inc[i].pos, whole[i].pos);
        assert_int_equal(inc[i].detected_pos, whole[i].detected_pos);
        assert_true(inc[i].p_value == whole[i].p_value);
    }
    /* a late change of point 70 (a cohort grew): re-run from there */
    double w[N];
    memcpy(w, v, sizeof w);
    ni = 0;
    for (size_t e = 0; e < N; e++) ni = incremental(&p, w, e + 1, e, inc, ni);
    w[70] *= 1.001;
    ni = incremental(&p, w, N, 70, inc, ni);
    size_t nw2 = srv_cp_detect(&p, w, N, whole, 64);
    assert_int_equal(ni, nw2);
    for (size_t i = 0; i < nw2; i++) assert_int_equal(inc[i].pos, whole[i].pos);
}

static void test_bootstrap_median(void **state) {
    (void)state;
    uint64_t v[] = {100, 102, 99, 101, 103};
    cg_ci ci;
    cg_stats_bootstrap_median(v, 5, &ci);
    assert_true(ci.lower_delta_ns >= 99.0 && ci.upper_delta_ns <= 103.0 && ci.lower_delta_ns <= 101.0 &&
                ci.upper_delta_ns >= 101.0);
    /* one value: the interval is that value */
    uint64_t one[] = {42};
    cg_stats_bootstrap_median(one, 1, &ci);
    assert_true(ci.lower_delta_ns == 42.0 && ci.upper_delta_ns == 42.0);
}

static cg_jv *fake_comparison(cg_arena *a, const char *verdict, const uint64_t *b, size_t nb, const uint64_t *c,
                              size_t nc, const char *reason) {
    cg_jv *o = cg_jv_obj(a), *sb = cg_jv_obj(a), *sc = cg_jv_obj(a), *ab = cg_jv_arr(a), *ac = cg_jv_arr(a);
    for (size_t i = 0; i < nb; i++) cg_jv_arr_push(a, ab, cg_jv_u64(a, b[i]));
    for (size_t i = 0; i < nc; i++) cg_jv_arr_push(a, ac, cg_jv_u64(a, c[i]));
    cg_jv_obj_put(a, sb, "samples_ns", ab);
    cg_jv_obj_put(a, sb, "median_ns", cg_jv_f64(a, cg_stats_percentile_u64(b, nb, 0.5)));
    cg_jv_obj_put(a, sc, "samples_ns", ac);
    cg_jv_obj_put(a, o, "verdict", cg_jv_str(a, verdict));
    cg_jv *rs = cg_jv_arr(a);
    if (reason) {
        cg_jv *r = cg_jv_obj(a);
        cg_jv_obj_put(a, r, "code", cg_jv_str(a, reason));
        cg_jv_arr_push(a, rs, r);
    }
    cg_jv_obj_put(a, o, "reasons", rs);
    cg_jv_obj_put(a, o, "baseline", sb);
    cg_jv_obj_put(a, o, "candidate", sc);
    double mc = cg_stats_percentile_u64(c, nc, 0.5), mb = cg_stats_percentile_u64(b, nb, 0.5);
    cg_jv_obj_put(a, o, "median_delta_percent", cg_jv_f64(a, (mc - mb) / mb * 100.0));
    return o;
}

static void test_advice(void **state) {
    (void)state;
    cg_arena a;
    cg_arena_init(&a, 0);
    uint64_t b[] = {1000, 1030, 980, 1010, 995}, c[] = {1020, 1050, 1000, 1030, 1012};
    uint64_t k;
    /* resolved already */
    cg_jv *adv = cg_replication_advice(&a, fake_comparison(&a, "candidate_slower", b, 5, c, 5, NULL), 1.0);
    assert_true(cg_jv_as_u64(cg_jv_get(adv, "additional_runs_per_side"), &k) && k == 0);
    /* inconclusive 2 % shift with 2 % noise: some more runs are needed */
    adv = cg_replication_advice(&a, fake_comparison(&a, "inconclusive", b, 5, c, 5, NULL), 1.0);
    assert_true(cg_jv_as_u64(cg_jv_get(adv, "additional_runs_per_side"), &k) && k > 0 && k < CG_ADVICE_MAX_RUNS);
    /* too few runs: at least up to the minimum */
    adv = cg_replication_advice(&a, fake_comparison(&a, "ineligible", b, 3, c, 3, "insufficient_runs"), 1.0);
    assert_true(cg_jv_as_u64(cg_jv_get(adv, "additional_runs_per_side"), &k) && k >= 2);
    adv = cg_replication_advice(&a, fake_comparison(&a, "ineligible", b, 5, c, 2, "insufficient_runs"), 1.0);
    assert_true(cg_jv_as_u64(cg_jv_get(adv, "additional_runs_per_side"), &k) && k >= 3);
    /* a larger effect needs fewer runs than a smaller one */
    uint64_t k2 = 0;
    adv = cg_replication_advice(&a, fake_comparison(&a, "inconclusive", b, 5, c, 5, NULL), 0.2);
    assert_true(cg_jv_as_u64(cg_jv_get(adv, "additional_runs_per_side"), &k2) && k2 >= k);
    /* an identity mismatch is not fixed by more runs */
    adv = cg_replication_advice(&a, fake_comparison(&a, "ineligible", b, 5, c, 5, "identity_mismatch"), 1.0);
    assert_true(cg_jv_get(adv, "additional_runs_per_side")->type == CG_JNULL);
    cg_arena_free(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_student_t),
        cmocka_unit_test(test_planted),
        cmocka_unit_test(test_flat),
        cmocka_unit_test(test_incremental_equals_whole),
        cmocka_unit_test(test_bootstrap_median),
        cmocka_unit_test(test_advice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
