/* stats.c — percentiles, MAD and the deterministic bootstrap of comparison/6. */
#include "comparison/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) abort();
    return p;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Small arrays (every bootstrap resample of a typical cohort) are sorted by
 * insertion sort: same order as qsort, without the per-compare call. */
#define SMALL_SORT 64

static void sort_u64(uint64_t *v, size_t n) {
    if (n > SMALL_SORT) {
        qsort(v, n, sizeof *v, cmp_u64);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        uint64_t x = v[i];
        size_t j = i;
        for (; j > 0 && v[j - 1] > x; j--) v[j] = v[j - 1];
        v[j] = x;
    }
}

static void sort_i64(int64_t *v, size_t n) {
    if (n > SMALL_SORT) {
        qsort(v, n, sizeof *v, cmp_i64);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        int64_t x = v[i];
        size_t j = i;
        for (; j > 0 && v[j - 1] > x; j--) v[j] = v[j - 1];
        v[j] = x;
    }
}

/* f64::total_cmp for the values that occur here (finite or ±inf; -0.0 < +0.0). */
static int cmp_f64_total(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    if (x < y) return -1;
    if (x > y) return 1;
    int sx = signbit(x) != 0, sy = signbit(y) != 0;
    return sy - sx; /* equal magnitudes: negative zero first */
}

double cg_stats_percentile_sorted(const double *sorted, size_t n, double q) {
    if (n == 0) return 0.0;
    double pos = q * (double)(n - 1);
    double lo_f = floor(pos), hi_f = ceil(pos);
    size_t lo = (size_t)lo_f, hi = (size_t)hi_f;
    if (lo == hi) return sorted[lo];
    double w = pos - lo_f;
    return sorted[lo] * (1.0 - w) + sorted[hi] * w;
}

static double percentile_u64_sorted(const uint64_t *sorted, size_t n, double q) {
    if (n == 0) return 0.0;
    double pos = q * (double)(n - 1);
    double lo_f = floor(pos), hi_f = ceil(pos);
    size_t lo = (size_t)lo_f, hi = (size_t)hi_f;
    double a = (double)sorted[lo], b = (double)sorted[hi];
    if (lo == hi) return a;
    double w = pos - lo_f;
    return a * (1.0 - w) + b * w;
}

double cg_stats_percentile_u64(const uint64_t *values, size_t n, double q) {
    if (n == 0) return 0.0;
    uint64_t *c = xmalloc(n * sizeof *c);
    memcpy(c, values, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_u64);
    double r = percentile_u64_sorted(c, n, q);
    free(c);
    return r;
}

void cg_stats_sample(const uint64_t *samples, size_t n, cg_sample_stats *out) {
    out->median_ns = out->p95_ns = out->mad_ns = 0.0;
    if (n == 0) return;
    uint64_t *c = xmalloc(n * sizeof *c);
    memcpy(c, samples, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_u64);
    out->median_ns = percentile_u64_sorted(c, n, 0.5);
    out->p95_ns = percentile_u64_sorted(c, n, 0.95);
    double center = round(out->median_ns); /* half away from zero */
    double *dev = xmalloc(n * sizeof *dev);
    for (size_t i = 0; i < n; i++) dev[i] = fabs((double)samples[i] - center);
    qsort(dev, n, sizeof *dev, cmp_f64_total);
    out->mad_ns = cg_stats_percentile_sorted(dev, n, 0.5);
    free(dev);
    free(c);
}

double cg_stats_integer_median(int64_t *deltas, size_t n) {
    if (n == 0) return 0.0;
    sort_i64(deltas, n);
    if (n % 2 == 1) return (double)deltas[n / 2];
    return ((double)deltas[n / 2 - 1] + (double)deltas[n / 2]) / 2.0;
}

static inline uint64_t xorshift_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return x;
}

static int64_t delta_of(const cg_pair *p) {
    return (int64_t)(p->candidate - p->baseline);
}

static void finish_ci(double *deltas, cg_ci *out) {
    qsort(deltas, CG_BOOTSTRAP_ITERATIONS, sizeof *deltas, cmp_f64_total);
    out->lower_delta_ns = deltas[CG_CI_LOWER_INDEX];
    out->upper_delta_ns = deltas[CG_CI_UPPER_INDEX];
}

void cg_stats_bootstrap_paired(const cg_pair *pairs, size_t n, cg_ci *out) {
    out->lower_delta_ns = out->upper_delta_ns = 0.0;
    if (n == 0) return;
    double *deltas = xmalloc(CG_BOOTSTRAP_ITERATIONS * sizeof *deltas);
    int64_t *draw = xmalloc(n * sizeof *draw);
    uint64_t s = CG_BOOTSTRAP_SEED;
    for (size_t it = 0; it < CG_BOOTSTRAP_ITERATIONS; it++) {
        for (size_t k = 0; k < n; k++) draw[k] = delta_of(&pairs[xorshift_next(&s) % n]);
        deltas[it] = cg_stats_integer_median(draw, n);
    }
    finish_ci(deltas, out);
    free(draw);
    free(deltas);
}

void cg_stats_bootstrap_unpaired(const uint64_t *baseline, size_t nb, const uint64_t *candidate,
                                 size_t nc, cg_ci *out) {
    out->lower_delta_ns = out->upper_delta_ns = 0.0;
    if (nb == 0 || nc == 0) return;
    double *deltas = xmalloc(CG_BOOTSTRAP_ITERATIONS * sizeof *deltas);
    uint64_t *rb = xmalloc(nb * sizeof *rb), *rc = xmalloc(nc * sizeof *rc);
    uint64_t s = CG_BOOTSTRAP_SEED;
    for (size_t it = 0; it < CG_BOOTSTRAP_ITERATIONS; it++) {
        for (size_t k = 0; k < nb; k++) rb[k] = baseline[xorshift_next(&s) % nb];
        for (size_t k = 0; k < nc; k++) rc[k] = candidate[xorshift_next(&s) % nc];
        sort_u64(rb, nb);
        sort_u64(rc, nc);
        deltas[it] = percentile_u64_sorted(rc, nc, 0.5) - percentile_u64_sorted(rb, nb, 0.5);
    }
    finish_ci(deltas, out);
    free(rb);
    free(rc);
    free(deltas);
}
