/* Unit tests for lib/comparison/stats: percentiles, MAD and the deterministic
 * bootstrap against the spec's golden values (§3.5, §3.7). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "comparison/stats.h"

static void test_percentile_golden(void **st) {
    (void)st;
    uint64_t s[] = {100, 10, 13, 12, 11}; /* unsorted on purpose */
    cg_sample_stats r;
    cg_stats_sample(s, 5, &r);
    assert_true(r.median_ns == 12.0);
    assert_true(r.p95_ns == 82.6);
    assert_true(r.mad_ns == 1.0);
    /* input untouched (samples are reported raw, in document order) */
    assert_int_equal(s[0], 100);
}

static void test_percentile_edges(void **st) {
    (void)st;
    cg_sample_stats r;
    cg_stats_sample(NULL, 0, &r);
    assert_true(r.median_ns == 0.0 && r.p95_ns == 0.0 && r.mad_ns == 0.0);
    uint64_t one[] = {7};
    cg_stats_sample(one, 1, &r);
    assert_true(r.median_ns == 7.0 && r.p95_ns == 7.0 && r.mad_ns == 0.0);
    uint64_t two[] = {10, 21};
    cg_stats_sample(two, 2, &r);
    assert_true(r.median_ns == 15.5);
    /* MAD uses the median rounded half away from zero: 16 → |10-16|=6, |21-16|=5 → 5.5 */
    assert_true(r.mad_ns == 5.5);
    assert_true(cg_stats_percentile_u64(two, 2, 0.0) == 10.0);
    assert_true(cg_stats_percentile_u64(two, 2, 1.0) == 21.0);
}

static void test_integer_median(void **st) {
    (void)st;
    int64_t a[] = {5, -3, 9};
    assert_true(cg_stats_integer_median(a, 3) == 5.0);
    int64_t b[] = {4, -3, 9, 1};
    assert_true(cg_stats_integer_median(b, 4) == 2.5);
    assert_true(cg_stats_integer_median(NULL, 0) == 0.0);
}

static void test_bootstrap_unpaired_golden(void **st) {
    (void)st;
    uint64_t b[] = {100, 102, 99, 101, 103}, c[] = {75, 80, 78, 79, 77};
    cg_ci ci;
    cg_stats_bootstrap_unpaired(b, 5, c, 5, &ci);
    assert_true(ci.lower_delta_ns == -26.0);
    assert_true(ci.upper_delta_ns == -20.0);
}

static void test_bootstrap_paired_golden(void **st) {
    (void)st;
    cg_pair p[5];
    uint64_t b[5], c[5];
    for (int i = 0; i < 5; i++) {
        p[i].baseline = b[i] = 100 + (uint64_t)i;
        p[i].candidate = c[i] = 90 + (uint64_t)i;
    }
    cg_ci ci;
    cg_stats_bootstrap_paired(p, 5, &ci);
    assert_true(ci.lower_delta_ns == -10.0 && ci.upper_delta_ns == -10.0);
    cg_stats_bootstrap_unpaired(b, 5, c, 5, &ci);
    assert_true(ci.lower_delta_ns == -13.0 && ci.upper_delta_ns == -7.0);
}

static void test_bootstrap_constant_and_deterministic(void **st) {
    (void)st;
    uint64_t b[] = {50, 50, 50, 50, 50};
    cg_ci ci, ci2;
    cg_stats_bootstrap_unpaired(b, 5, b, 5, &ci);
    assert_true(ci.lower_delta_ns == 0.0 && ci.upper_delta_ns == 0.0);
    assert_false(signbit(ci.lower_delta_ns));
    uint64_t x[] = {3, 9, 27, 81, 243, 729}, y[] = {5, 25, 125, 625, 3125};
    cg_stats_bootstrap_unpaired(x, 6, y, 5, &ci);
    cg_stats_bootstrap_unpaired(x, 6, y, 5, &ci2);
    assert_memory_equal(&ci, &ci2, sizeof ci);
    assert_true(ci.lower_delta_ns <= ci.upper_delta_ns);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_percentile_golden),
        cmocka_unit_test(test_percentile_edges),
        cmocka_unit_test(test_integer_median),
        cmocka_unit_test(test_bootstrap_unpaired_golden),
        cmocka_unit_test(test_bootstrap_paired_golden),
        cmocka_unit_test(test_bootstrap_constant_and_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
