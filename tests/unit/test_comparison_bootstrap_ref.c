/* The optimized bootstrap (lib/comparison/stats.c: reciprocal modulo, counting
 * resamples, selection of the two CI ranks) must give bit-identical CIs to the
 * straightforward spec §3.7 procedure, written out here: `%` for the index,
 * each resample fully sorted, the 10,000 deltas qsorted by total order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comparison/stats.h"

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}
static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}
static int cmp_total(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    if (x < y) return -1;
    if (x > y) return 1;
    return (signbit(y) != 0) - (signbit(x) != 0);
}
static uint64_t next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}
static double ref_percentile(const uint64_t *sorted, size_t n, double q) {
    double pos = q * (double)(n - 1);
    double lo_f = floor(pos), hi_f = ceil(pos);
    size_t lo = (size_t)lo_f, hi = (size_t)hi_f;
    double a = (double)sorted[lo], b = (double)sorted[hi];
    if (lo == hi) return a;
    double w = pos - lo_f;
    return a * (1.0 - w) + b * w;
}
static void ref_finish(double *d, cg_ci *out) {
    qsort(d, CG_BOOTSTRAP_ITERATIONS, sizeof *d, cmp_total);
    out->lower_delta_ns = d[CG_CI_LOWER_INDEX];
    out->upper_delta_ns = d[CG_CI_UPPER_INDEX];
}
static void ref_paired(const cg_pair *p, size_t n, cg_ci *out) {
    double *d = malloc(CG_BOOTSTRAP_ITERATIONS * sizeof *d);
    int64_t *r = malloc(n * sizeof *r);
    assert_non_null(d);
    assert_non_null(r);
    uint64_t s = CG_BOOTSTRAP_SEED;
    for (size_t it = 0; it < CG_BOOTSTRAP_ITERATIONS; it++) {
        for (size_t k = 0; k < n; k++) {
            const cg_pair *x = &p[next(&s) % n];
            r[k] = (int64_t)(x->candidate - x->baseline);
        }
        qsort(r, n, sizeof *r, cmp_i64);
        d[it] = n % 2 ? (double)r[n / 2] : ((double)r[n / 2 - 1] + (double)r[n / 2]) / 2.0;
    }
    ref_finish(d, out);
    free(r);
    free(d);
}
static void ref_unpaired(const uint64_t *b, size_t nb, const uint64_t *c, size_t nc, cg_ci *out) {
    double *d = malloc(CG_BOOTSTRAP_ITERATIONS * sizeof *d);
    uint64_t *rb = malloc(nb * sizeof *rb), *rc = malloc(nc * sizeof *rc);
    assert_non_null(d);
    assert_non_null(rb);
    assert_non_null(rc);
    uint64_t s = CG_BOOTSTRAP_SEED;
    for (size_t it = 0; it < CG_BOOTSTRAP_ITERATIONS; it++) {
        for (size_t k = 0; k < nb; k++) rb[k] = b[next(&s) % nb];
        for (size_t k = 0; k < nc; k++) rc[k] = c[next(&s) % nc];
        qsort(rb, nb, sizeof *rb, cmp_u64);
        qsort(rc, nc, sizeof *rc, cmp_u64);
        d[it] = ref_percentile(rc, nc, 0.5) - ref_percentile(rb, nb, 0.5);
    }
    ref_finish(d, out);
    free(rb);
    free(rc);
    free(d);
}

static uint64_t rng = 0x243f6a8885a308d3ULL;
static uint64_t rnd(void) {
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
/* Cohort styles: wide spread, heavy ties, huge values (u64 → double rounding,
 * wrapping candidate − baseline), and a candidate faster than the baseline. */
static uint64_t sample(int style, uint64_t base) {
    switch (style) {
    case 0: return base + rnd() % 1000000;
    case 1: return base + rnd() % 4;
    case 2: return UINT64_MAX - rnd() % 5000;
    default: return rnd();
    }
}

static void same_ci(const cg_ci *a, const cg_ci *b) {
    assert_memory_equal(&a->lower_delta_ns, &b->lower_delta_ns, sizeof(double));
    assert_memory_equal(&a->upper_delta_ns, &b->upper_delta_ns, sizeof(double));
}

static void test_paired_matches_reference(void **st) {
    (void)st;
    cg_pair p[40];
    for (size_t n = 1; n <= 40; n++) {
        for (int style = 0; style < 4; style++) {
            uint64_t base = 1000000 + rnd() % 1000;
            for (size_t k = 0; k < n; k++) {
                p[k].baseline = sample(style, base);
                p[k].candidate = sample(style, base - (style == 0 ? 20000 : 0));
            }
            cg_ci got, want;
            cg_stats_bootstrap_paired(p, n, &got);
            ref_paired(p, n, &want);
            same_ci(&got, &want);
        }
    }
}

static void test_unpaired_matches_reference(void **st) {
    (void)st;
    uint64_t b[40], c[40];
    for (size_t nb = 1; nb <= 40; nb++) {
        for (int style = 0; style < 4; style++) {
            size_t nc = 1 + (size_t)(rnd() % 40); /* sizes may differ when unpaired */
            if (style == 0) nc = nb;
            uint64_t base = 500000 + rnd() % 1000;
            for (size_t k = 0; k < nb; k++) b[k] = sample(style, base);
            for (size_t k = 0; k < nc; k++) c[k] = sample(style, base + 3000);
            cg_ci got, want;
            cg_stats_bootstrap_unpaired(b, nb, c, nc, &got);
            ref_unpaired(b, nb, c, nc, &want);
            same_ci(&got, &want);
        }
    }
}

static void test_larger_cohorts_match_reference(void **st) {
    (void)st;
    enum { N = 301 };
    static cg_pair p[N];
    static uint64_t b[N], c[N];
    for (size_t k = 0; k < N; k++) {
        p[k].baseline = b[k] = 10000 + rnd() % 50;
        p[k].candidate = c[k] = 10010 + rnd() % 50;
    }
    cg_ci got, want;
    cg_stats_bootstrap_paired(p, N, &got);
    ref_paired(p, N, &want);
    same_ci(&got, &want);
    cg_stats_bootstrap_unpaired(b, N, c, N - 1, &got);
    ref_unpaired(b, N, c, N - 1, &want);
    same_ci(&got, &want);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paired_matches_reference),
        cmocka_unit_test(test_unpaired_matches_reference),
        cmocka_unit_test(test_larger_cohorts_match_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
