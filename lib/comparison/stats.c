/* stats.c — percentiles, MAD and the deterministic bootstrap of comparison/6. */
#include "comparison/stats.h"

#include "base/alloc.h"

#include "comparison/fastmod.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Small arrays (a typical cohort's deltas) are sorted by insertion sort: same
 * order as qsort, without the per-compare call. */
#define SMALL_SORT 64

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

/* The interpolation step of percentile(): one expression for every caller so
 * the bootstrap's medians round exactly like the direct percentile. */
static inline double lerp_at(double a, double b, bool same, double w) {
    if (same) return a;
    return a * (1.0 - w) + b * w;
}

static double percentile_u64_sorted(const uint64_t *sorted, size_t n, double q) {
    if (n == 0) return 0.0;
    double pos = q * (double)(n - 1);
    double lo_f = floor(pos), hi_f = ceil(pos);
    size_t lo = (size_t)lo_f, hi = (size_t)hi_f;
    return lerp_at((double)sorted[lo], (double)sorted[hi], lo == hi, pos - lo_f);
}

double cg_stats_percentile_u64(const uint64_t *values, size_t n, double q) {
    if (n == 0) return 0.0;
    uint64_t *c = cg_xalloc(n, sizeof *c);
    memcpy(c, values, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_u64);
    double r = percentile_u64_sorted(c, n, q);
    cg_free(c);
    return r;
}

void cg_stats_sample(const uint64_t *samples, size_t n, cg_sample_stats *out) {
    out->median_ns = out->p95_ns = out->mad_ns = 0.0;
    if (n == 0) return;
    uint64_t *c = cg_xalloc(n, sizeof *c);
    memcpy(c, samples, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_u64);
    out->median_ns = percentile_u64_sorted(c, n, 0.5);
    out->p95_ns = percentile_u64_sorted(c, n, 0.95);
    double center = round(out->median_ns); /* half away from zero */
    double *dev = cg_xalloc(n, sizeof *dev);
    for (size_t i = 0; i < n; i++) dev[i] = fabs((double)samples[i] - center);
    qsort(dev, n, sizeof *dev, cmp_f64_total);
    out->mad_ns = cg_stats_percentile_sorted(dev, n, 0.5);
    cg_free(dev);
    cg_free(c);
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

/* ---- CI extraction -------------------------------------------------------
 * The spec sorts the 10,000 deltas by f64::total_cmp and reads indices 249 and
 * 9749. Only those two order statistics are needed, so the deltas are mapped
 * to keys whose unsigned order is total_cmp's order (sign set → all bits
 * flipped, else the sign bit set; a bijection, so equal keys are bit-identical
 * doubles) and the two ranks are found by selection. */
static uint64_t total_key(double x) {
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return (b >> 63) ? ~b : (b | (1ULL << 63));
}

static double key_value(uint64_t k) {
    uint64_t b = (k >> 63) ? (k & ~(1ULL << 63)) : ~k;
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}

static inline void swap_u64(uint64_t *v, size_t i, size_t j) {
    uint64_t t = v[i];
    v[i] = v[j];
    v[j] = t;
}

/* Rearranges v[lo, hi) so v[k] holds its k-th smallest, everything before is
 * ≤ and everything after ≥ (three-way partition: deltas repeat a lot). */
static void select_u64(uint64_t *v, size_t lo, size_t hi, size_t k) {
    while (hi - lo > 1) {
        uint64_t x = v[lo], y = v[lo + (hi - lo) / 2], z = v[hi - 1];
        uint64_t p = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        size_t lt = lo, i = lo, gt = hi;
        while (i < gt) {
            if (v[i] < p)
                swap_u64(v, lt++, i++);
            else if (v[i] > p)
                swap_u64(v, i, --gt);
            else
                i++;
        }
        if (k < lt)
            hi = lt;
        else if (k >= gt)
            lo = gt;
        else
            return;
    }
}

static void finish_ci(const double *deltas, cg_ci *out) {
    uint64_t *keys = cg_xalloc(CG_BOOTSTRAP_ITERATIONS, sizeof *keys);
    for (size_t i = 0; i < CG_BOOTSTRAP_ITERATIONS; i++) keys[i] = total_key(deltas[i]);
    select_u64(keys, 0, CG_BOOTSTRAP_ITERATIONS, CG_CI_UPPER_INDEX);
    /* keys[0, 9749) are now the 9749 smallest, so rank 249 lies among them */
    select_u64(keys, 0, CG_CI_UPPER_INDEX, CG_CI_LOWER_INDEX);
    out->lower_delta_ns = key_value(keys[CG_CI_LOWER_INDEX]);
    out->upper_delta_ns = key_value(keys[CG_CI_UPPER_INDEX]);
    cg_free(keys);
}

/* ---- resampling by counts ------------------------------------------------
 * A resample's sorted order depends only on how often each source value was
 * drawn. The source values are sorted once; each draw increments the count of
 * its value's rank (ties share the lowest rank), and the order statistics the
 * median needs are read by walking the counts: O(n) per iteration instead of
 * sorting the resample, and the same values as sorting it. */
typedef struct resampler {
    size_t n;
    cg_fastmod mod;    /* index = state mod n */
    size_t *rank;      /* source index → rank of its value in the sorted values */
    size_t *count;     /* per rank, draws this iteration */
    size_t lo, hi;     /* positions in the sorted resample the median reads */
} resampler;

/* First position in sorted[0..n) whose value is not below x (its rank). */
#define LOWER_BOUND(name, T)                                      \
    static size_t name(const T *sorted, size_t n, T x) {          \
        size_t lo = 0, hi = n;                                    \
        while (lo < hi) {                                         \
            size_t mid = lo + (hi - lo) / 2;                      \
            if (sorted[mid] < x)                                  \
                lo = mid + 1;                                     \
            else                                                  \
                hi = mid;                                         \
        }                                                         \
        return lo;                                                \
    }
LOWER_BOUND(lower_bound_u64, uint64_t)
LOWER_BOUND(lower_bound_i64, int64_t)
#undef LOWER_BOUND

static void resampler_init(resampler *r, size_t n, size_t lo, size_t hi) {
    r->n = n;
    r->mod = cg_fastmod_init(n);
    r->rank = cg_xalloc(n, sizeof *r->rank);
    r->count = cg_xalloc(n, sizeof *r->count);
    r->lo = lo;
    r->hi = hi;
}

static void resampler_free(resampler *r) {
    cg_free(r->rank);
    cg_free(r->count);
}

/* Draws n indices from the stream, counting ranks. */
static inline void resampler_draw(resampler *r, uint64_t *s) {
    memset(r->count, 0, r->n * sizeof *r->count);
    for (size_t k = 0; k < r->n; k++) r->count[r->rank[cg_fastmod_u64(&r->mod, xorshift_next(s))]]++;
}

/* Ranks (in the sorted source) of the resample's elements at positions lo and
 * hi (lo ≤ hi). */
static inline void resampler_pick(const resampler *r, size_t *rlo, size_t *rhi) {
    size_t cum = 0, p = 0;
    while (cum + r->count[p] <= r->lo) cum += r->count[p++];
    *rlo = p;
    while (cum + r->count[p] <= r->hi) cum += r->count[p++];
    *rhi = p;
}

void cg_stats_bootstrap_paired(const cg_pair *pairs, size_t n, cg_ci *out) {
    out->lower_delta_ns = out->upper_delta_ns = 0.0;
    if (n == 0) return;
    int64_t *sorted = cg_xalloc(n, sizeof *sorted);
    for (size_t k = 0; k < n; k++) sorted[k] = delta_of(&pairs[k]);
    sort_i64(sorted, n);
    /* integer median: odd → position n/2; even → positions n/2 − 1 and n/2 */
    resampler r;
    resampler_init(&r, n, n % 2 ? n / 2 : n / 2 - 1, n / 2);
    for (size_t k = 0; k < n; k++) r.rank[k] = lower_bound_i64(sorted, n, delta_of(&pairs[k]));
    double *deltas = cg_xalloc(CG_BOOTSTRAP_ITERATIONS, sizeof *deltas);
    uint64_t s = CG_BOOTSTRAP_SEED;
    for (size_t it = 0; it < CG_BOOTSTRAP_ITERATIONS; it++) {
        resampler_draw(&r, &s);
        size_t a, b;
        resampler_pick(&r, &a, &b);
        deltas[it] = n % 2 == 1 ? (double)sorted[a] : ((double)sorted[a] + (double)sorted[b]) / 2.0;
    }
    finish_ci(deltas, out);
    resampler_free(&r);
    cg_free(deltas);
    cg_free(sorted);
}

/* Sorted copy of `v` and the rank table of a resampler for percentile(0.5). */
static uint64_t *median_resampler(const uint64_t *v, size_t n, resampler *r, double *w) {
    uint64_t *sorted = cg_xalloc(n, sizeof *sorted);
    memcpy(sorted, v, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_u64);
    /* the same position arithmetic as percentile_u64_sorted(…, 0.5) */
    double pos = 0.5 * (double)(n - 1);
    double lo_f = floor(pos), hi_f = ceil(pos);
    *w = pos - lo_f;
    resampler_init(r, n, (size_t)lo_f, (size_t)hi_f);
    for (size_t k = 0; k < n; k++) r->rank[k] = lower_bound_u64(sorted, n, v[k]);
    return sorted;
}

void cg_stats_bootstrap_unpaired(const uint64_t *baseline, size_t nb, const uint64_t *candidate,
                                 size_t nc, cg_ci *out) {
    out->lower_delta_ns = out->upper_delta_ns = 0.0;
    if (nb == 0 || nc == 0) return;
    resampler rb, rc;
    double wb, wc;
    uint64_t *sb = median_resampler(baseline, nb, &rb, &wb);
    uint64_t *sc = median_resampler(candidate, nc, &rc, &wc);
    double *deltas = cg_xalloc(CG_BOOTSTRAP_ITERATIONS, sizeof *deltas);
    uint64_t s = CG_BOOTSTRAP_SEED;
    for (size_t it = 0; it < CG_BOOTSTRAP_ITERATIONS; it++) {
        resampler_draw(&rb, &s); /* baseline first, then candidate, one stream */
        resampler_draw(&rc, &s);
        size_t b0, b1, c0, c1;
        resampler_pick(&rb, &b0, &b1);
        resampler_pick(&rc, &c0, &c1);
        double mb = lerp_at((double)sb[b0], (double)sb[b1], rb.lo == rb.hi, wb);
        double mc = lerp_at((double)sc[c0], (double)sc[c1], rc.lo == rc.hi, wc);
        deltas[it] = mc - mb;
    }
    finish_ci(deltas, out);
    resampler_free(&rb);
    resampler_free(&rc);
    cg_free(sb);
    cg_free(sc);
    cg_free(deltas);
}

/* ---- the interval of one sample's median (issue 15: history points) */
void cg_stats_bootstrap_median(const uint64_t *v, size_t n, cg_ci *out) {
    out->lower_delta_ns = out->upper_delta_ns = 0.0;
    if (n == 0) return;
    resampler r;
    double w;
    uint64_t *sv = median_resampler(v, n, &r, &w);
    double *meds = cg_xalloc(CG_BOOTSTRAP_ITERATIONS, sizeof *meds);
    uint64_t s = CG_BOOTSTRAP_SEED;
    for (size_t it = 0; it < CG_BOOTSTRAP_ITERATIONS; it++) {
        resampler_draw(&r, &s);
        size_t a, b;
        resampler_pick(&r, &a, &b);
        meds[it] = lerp_at((double)sv[a], (double)sv[b], r.lo == r.hi, w);
    }
    finish_ci(meds, out);
    resampler_free(&r);
    cg_free(sv);
    cg_free(meds);
}
