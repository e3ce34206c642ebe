/* stats.h — the statistics of candle-graph/comparison/6 (spec §3.5–3.7).
 *
 * Pure functions over caller-owned arrays; nothing is allocated except the
 * scratch copies the functions free themselves (allocation failure aborts).
 * All results are exactly the upstream arithmetic: linear-interpolated
 * percentiles, MAD around the median rounded half away from zero, and the
 * deterministic xorshift64 bootstrap (seed 0x4d595df4d0f33173, shifts 13/7/17,
 * index = state mod n, 10,000 iterations, CI indices 249 and 9749). */
#ifndef CG_COMPARISON_STATS_H
#define CG_COMPARISON_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CG_BOOTSTRAP_SEED 0x4d595df4d0f33173ULL
#define CG_BOOTSTRAP_ITERATIONS 10000
#define CG_CI_LOWER_INDEX 249
#define CG_CI_UPPER_INDEX 9749
#define CG_CI_LEVEL 0.95

/* percentile(values, q): sorts a copy ascending, pos = q×(n−1), w = pos −
 * floor(pos), result v[floor]×(1−w) + v[ceil]×w (the golden p95 82.6 needs
 * exactly this form); linear
 * interpolation between floor(pos) and ceil(pos); n == 0 → 0.0. */
double cg_stats_percentile_u64(const uint64_t *values, size_t n, double q);
/* Same, over doubles (sorted in place). */
double cg_stats_percentile_sorted(const double *sorted, size_t n, double q);

typedef struct cg_sample_stats {
    double median_ns, p95_ns, mad_ns;
} cg_sample_stats;
/* median = p50, p95, MAD = p50 of |x − round(median)|. */
void cg_stats_sample(const uint64_t *samples, size_t n, cg_sample_stats *out);

/* Median of integer deltas: odd → middle, even → mean of the two middle values;
 * sorts `deltas` in place; n == 0 → 0.0. */
double cg_stats_integer_median(int64_t *deltas, size_t n);

typedef struct cg_pair {
    uint64_t baseline, candidate;
} cg_pair;

typedef struct cg_ci {
    double lower_delta_ns, upper_delta_ns;
} cg_ci;
/* Paired bootstrap: each iteration draws n pair indices, takes the integer
 * median of candidate − baseline. n must be > 0 (else the CI is [0, 0]). */
void cg_stats_bootstrap_paired(const cg_pair *pairs, size_t n, cg_ci *out);
/* Unpaired bootstrap: resample the baseline (nb draws) then the candidate (nc
 * draws) from one PRNG stream; delta = p50(candidate) − p50(baseline). */
void cg_stats_bootstrap_unpaired(const uint64_t *baseline, size_t nb, const uint64_t *candidate,
                                 size_t nc, cg_ci *out);

/* Issue 15 (history points): the 95 % interval of one sample's median with
 * the same PRNG stream, resampling and CI ranks (lower/upper in the cg_ci
 * fields, in ns, not a delta). */
void cg_stats_bootstrap_median(const uint64_t *v, size_t n, cg_ci *out);

#endif
