/* changepoint.h — change points of a per-commit series: E-divisive means
 * (Matteson & James 2014, alpha = 1) for the split, the Otava/Hunter
 * significance test (Welch's t between the two segments of the split) for the
 * decision, run as a left-to-right sweep so that adding a point only costs one
 * step over the last `window` points (docs/statistics.md).
 *
 * The sweep: after each point e (0-based position, values v[0..e]) the window
 * is the points at positions max(last, e + 1 − window) … e, where `last` is the
 * position of the newest accepted change point (0 at first). Inside it the
 * split τ (min_segment points on each side at least) maximizing the E-divisive
 * statistic q̂ is found (the first on ties); it is accepted when Welch's
 * two-sided p ≤ p_max and |mean(after) / mean(before) − 1| ≥ min_relative_change;
 * then last = τ and the step repeats on the shorter window. A change point
 * found at step e keeps detected_pos = e. Detection over a whole series is
 * exactly the steps e = 0 … n−1 in order, so the incremental form (restore
 * `last` from the change points detected before position k, re-run steps
 * k … n−1) gives the same change points by construction.
 *
 * Pure functions, no allocation beyond a window-sized scratch (aborts on
 * allocation failure), thread-safe. */
#ifndef SRV_CHANGEPOINT_H
#define SRV_CHANGEPOINT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct srv_cp_params {
    double p_max;               /* default 0.001 */
    unsigned window;            /* points; default 50 (≥ 2 × min_segment) */
    unsigned min_segment;       /* points each side; default 3 (≥ 2) */
    double min_relative_change; /* fraction; default 0.01 */
} srv_cp_params;

typedef struct srv_cp {
    size_t pos;          /* first point after the change */
    size_t detected_pos; /* newest point of the step that found it */
    double p_value;
    double relative_change; /* mean(after) / mean(before) − 1 within the window */
} srv_cp;

void srv_cp_defaults(srv_cp_params *p);
/* Clamps a parameter set into its valid ranges (window ≥ 2 × min_segment, …). */
void srv_cp_sanitize(srv_cp_params *p);

/* One sweep step for the point at position e. v[i − base] is the value at
 * position i, for base ≤ i ≤ e; base must be ≤ max(*last, e + 1 − window)
 * (else no change point can be found and 0 is returned). Appends at most cap
 * change points to out, updates *last, returns how many were appended. */
size_t srv_cp_step(const srv_cp_params *p, const double *v, size_t base, size_t e, size_t *last, srv_cp *out,
                   size_t cap);

/* Whole-series detection: steps 0 … n−1 from last = 0. Returns the count
 * (at most cap written). */
size_t srv_cp_detect(const srv_cp_params *p, const double *v, size_t n, srv_cp *out, size_t cap);

/* Welch's two-sided t-test p-value of two samples (n ≥ 2 each): Welch's
 * statistic, Welch–Satterthwaite degrees of freedom capped at
 * min(nx, ny) − 1 (Hsu's conservative bound). Both variances zero: 1 when
 * the means are equal, else 0. */
double srv_welch_p(const double *x, size_t nx, const double *y, size_t ny);

/* The regularized incomplete beta function I_x(a, b) (0 ≤ x ≤ 1, a, b > 0). */
double srv_betainc(double a, double b, double x);

#endif
