/* changepoint.c — E-divisive split + Welch significance, as a sweep
 * (changepoint.h, docs/statistics.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "changepoint.h"

void srv_cp_defaults(srv_cp_params *p) {
    p->p_max = 0.001;
    p->window = 50;
    p->min_segment = 3;
    p->min_relative_change = 0.01;
}

void srv_cp_sanitize(srv_cp_params *p) {
    if (!(p->p_max > 0.0) || p->p_max > 1.0) p->p_max = 0.001;
    if (p->min_segment < 2) p->min_segment = 2;
    if (p->min_segment > 1000) p->min_segment = 1000;
    if (p->window < 2 * p->min_segment) p->window = 2 * p->min_segment;
    if (p->window > 10000) p->window = 10000;
    if (!(p->min_relative_change >= 0.0)) p->min_relative_change = 0.01;
}

/* ------------------------------------------------------------ Student t */

/* Continued fraction of the incomplete beta (modified Lentz). */
static double betacf(double a, double b, double x) {
    const double tiny = 1e-300, eps = 1e-15;
    double qab = a + b, qap = a + 1.0, qam = a - 1.0;
    double c = 1.0, d = 1.0 - qab * x / qap;
    if (fabs(d) < tiny) d = tiny;
    d = 1.0 / d;
    double h = d;
    for (int m = 1; m <= 300; m++) {
        double m2 = 2.0 * m;
        double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if (fabs(d) < tiny) d = tiny;
        c = 1.0 + aa / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1.0 / d;
        h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if (fabs(d) < tiny) d = tiny;
        c = 1.0 + aa / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1.0 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1.0) < eps) break;
    }
    return h;
}

double srv_betainc(double a, double b, double x) {
    if (x <= 0.0) return 0.0;
    if (x >= 1.0) return 1.0;
    double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
    double bt = exp(lbt);
    if (x < (a + 1.0) / (a + b + 2.0)) return bt * betacf(a, b, x) / a;
    return 1.0 - bt * betacf(b, a, 1.0 - x) / b;
}

static void mean_var(const double *x, size_t n, double *mean, double *var) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += x[i];
    double m = s / (double)n, q = 0.0;
    for (size_t i = 0; i < n; i++) q += (x[i] - m) * (x[i] - m);
    *mean = m;
    *var = n > 1 ? q / (double)(n - 1) : 0.0;
}

double srv_welch_p(const double *x, size_t nx, const double *y, size_t ny) {
    if (nx < 2 || ny < 2) return 1.0;
    double mx, vx, my, vy;
    mean_var(x, nx, &mx, &vx);
    mean_var(y, ny, &my, &vy);
    double sx = vx / (double)nx, sy = vy / (double)ny, se2 = sx + sy;
    if (!(se2 > 0.0)) return mx == my ? 1.0 : 0.0;
    double t = (my - mx) / sqrt(se2);
    double df = se2 * se2 / (sx * sx / (double)(nx - 1) + sy * sy / (double)(ny - 1));
    /* Hsu's bound: never more degrees of freedom than the smaller sample has
     * (a 3-point segment whose values happen to agree must not look certain) */
    double dmin = (double)(nx < ny ? nx : ny) - 1.0;
    if (!(df <= dmin)) df = dmin;
    double p = srv_betainc(df / 2.0, 0.5, df / (df + t * t));
    return p < 0.0 ? 0.0 : p > 1.0 ? 1.0 : p;
}

/* ------------------------------------------------------------ E-divisive */

/* Best split of w[0..n) with at least k points each side: the first τ of
 * maximal q̂ = τ(n−τ)/n · (2A/(τ(n−τ)) − B/C(τ,2) − C/C(n−τ,2)), where A sums
 * |x − y| across the split and B, C within each side. O(n²). */
static size_t best_split(const double *w, size_t n, size_t k) {
    double across = 0.0, left = 0.0, right = 0.0;
    /* τ = 0: everything on the right */
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) right += fabs(w[i] - w[j]);
    size_t best = 0;
    double best_q = -INFINITY;
    for (size_t tau = 1; tau + k <= n; tau++) {
        size_t x = tau - 1; /* moves from the right side to the left */
        double to_left = 0.0, to_right = 0.0;
        for (size_t i = 0; i < x; i++) to_left += fabs(w[i] - w[x]);
        for (size_t j = x + 1; j < n; j++) to_right += fabs(w[x] - w[j]);
        across += to_right - to_left;
        left += to_left;
        right -= to_right;
        if (tau < k) continue;
        double a = (double)tau, b = (double)(n - tau);
        double e = 2.0 * across / (a * b) - left / (a * (a - 1.0) / 2.0) - right / (b * (b - 1.0) / 2.0);
        double q = a * b / (double)n * e;
        if (q > best_q) {
            best_q = q;
            best = tau;
        }
    }
    return best;
}

size_t srv_cp_step(const srv_cp_params *p, const double *v, size_t base, size_t e, size_t *last, srv_cp *out,
                   size_t cap) {
    size_t found = 0, k = p->min_segment;
    for (;;) {
        size_t count = e + 1;
        size_t lo = *last;
        if (count > p->window && count - p->window > lo) lo = count - p->window;
        if (lo < base || count - lo < 2 * k) return found;
        const double *w = v + (lo - base);
        size_t n = count - lo;
        size_t tau = best_split(w, n, k);
        if (tau < k || n - tau < k) return found;
        double p_value = srv_welch_p(w, tau, w + tau, n - tau);
        double mb, vb, ma, va;
        mean_var(w, tau, &mb, &vb);
        mean_var(w + tau, n - tau, &ma, &va);
        double rel = mb != 0.0 ? ma / mb - 1.0 : (ma == 0.0 ? 0.0 : INFINITY);
        if (!(p_value <= p->p_max) || !(fabs(rel) >= p->min_relative_change)) return found;
        if (found == cap) return found;
        out[found++] = (srv_cp){lo + tau, e, p_value, rel};
        *last = lo + tau;
    }
}

size_t srv_cp_detect(const srv_cp_params *p, const double *v, size_t n, srv_cp *out, size_t cap) {
    size_t last = 0, total = 0;
    for (size_t e = 0; e < n; e++) {
        srv_cp tmp[16];
        size_t got = srv_cp_step(p, v, 0, e, &last, tmp, 16);
        for (size_t i = 0; i < got; i++, total++)
            if (total < cap) out[total] = tmp[i];
    }
    return total;
}
