/* advice.c — replication advice from a comparison/6 result (advice.h). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "comparison/advice.h"

#include "base/alloc.h"
#include "comparison/compare.h"
#include "comparison/stats.h"

typedef struct sample {
    uint64_t *v;
    size_t n;
} sample;

static sample samples_of(const cg_jv *cmp, const char *side) {
    sample s = {NULL, 0};
    const cg_jv *arr = cg_jv_get(cg_jv_get(cmp, side), "samples_ns");
    if (!arr || arr->type != CG_JARR) return s;
    s.v = cg_xalloc((cg_jv_len(arr) + 1), sizeof *s.v);
    for (size_t i = 0; i < cg_jv_len(arr); i++)
        if (cg_jv_as_u64(cg_jv_at(arr, i), &s.v[s.n])) s.n++;
    return s;
}

/* Only too few runs can be fixed by running more. */
static bool fixable(const cg_jv *reasons) {
    for (size_t i = 0; reasons && i < cg_jv_len(reasons); i++) {
        const char *code = cg_jv_as_str(cg_jv_get(cg_jv_at(reasons, i), "code"));
        if (!code || strcmp(code, "insufficient_runs") != 0) return false;
    }
    return true;
}

/* The observed 95 % interval of the median delta (comparison/6's own
 * bootstrap, also for an ineligible pair) gives its centre c and half-width
 * h at the observed sizes; at n+k runs per side the half-width is taken to
 * shrink with the usual 1/sqrt(n) rate of the median's standard error:
 * h_k = h * sqrt((1/(nb+k) + 1/(nc+k)) / (1/nb + 1/nc)). Resolved at k: the
 * interval c ± h_k excludes zero, or lies within ±target; and both sides
 * have at least CG_COMPARISON_MINIMUM_RUNS runs. Smallest k, or -1 past the cap. */
static long runs_needed(const sample *b, const sample *c, double target_ns) {
    cg_ci ci;
    cg_stats_bootstrap_unpaired(b->v, b->n, c->v, c->n, &ci);
    double centre = (ci.lower_delta_ns + ci.upper_delta_ns) / 2.0;
    double h = (ci.upper_delta_ns - ci.lower_delta_ns) / 2.0;
    double v0 = 1.0 / (double)b->n + 1.0 / (double)c->n;
    size_t n = b->n > c->n ? b->n : c->n;
    for (size_t k = 0; n + k <= CG_ADVICE_MAX_RUNS; k++) {
        if (b->n + k < CG_COMPARISON_MINIMUM_RUNS || c->n + k < CG_COMPARISON_MINIMUM_RUNS) continue;
        double hk = h * sqrt((1.0 / (double)(b->n + k) + 1.0 / (double)(c->n + k)) / v0);
        if (fabs(centre) > hk || fabs(centre) + hk < target_ns) return (long)k;
    }
    return -1;
}

cg_jv *cg_replication_advice(cg_arena *a, const cg_jv *cmp, double target_effect_pct) {
    const char *verdict = cg_jv_as_str(cg_jv_get(cmp, "verdict"));
    if (!verdict) verdict = "ineligible";
    const cg_jv *reasons = cg_jv_get(cmp, "reasons");
    double observed = 0.0, base_median = 0.0;
    bool has_observed = cg_jv_as_f64(cg_jv_get(cmp, "median_delta_percent"), &observed);
    cg_jv_as_f64(cg_jv_get(cg_jv_get(cmp, "baseline"), "median_ns"), &base_median);
    double target = target_effect_pct > 0.0 ? target_effect_pct : fabs(observed) > 0.0 ? fabs(observed) : 1.0;

    cg_jv *o = cg_jv_obj(a), *codes = cg_jv_arr(a);
    for (size_t i = 0; reasons && i < cg_jv_len(reasons); i++) {
        const char *code = cg_jv_as_str(cg_jv_get(cg_jv_at(reasons, i), "code"));
        if (code) cg_jv_arr_push(a, codes, cg_jv_str(a, code));
    }
    cg_jv_obj_put(a, o, "schema", cg_jv_str_nocopy(a, CG_ADVICE_SCHEMA));
    cg_jv_obj_put(a, o, "verdict", cg_jv_str(a, verdict));
    cg_jv_obj_put(a, o, "reasons", codes);
    cg_jv_obj_put(a, o, "observed_delta_percent", has_observed ? cg_jv_f64(a, observed) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "target_effect_percent", cg_jv_f64(a, target));

    cg_jv *runs;
    if (!strcmp(verdict, "candidate_faster") || !strcmp(verdict, "candidate_slower")) {
        runs = cg_jv_u64(a, 0);
    } else if (!fixable(reasons)) {
        runs = cg_jv_null(a);
    } else {
        sample b = samples_of(cmp, "baseline"), c = samples_of(cmp, "candidate");
        long k = b.n && c.n && base_median > 0.0 ? runs_needed(&b, &c, target / 100.0 * base_median) : -1;
        runs = k >= 0 ? cg_jv_u64(a, (uint64_t)k) : cg_jv_null(a);
        cg_free(b.v);
        cg_free(c.v);
    }
    cg_jv_obj_put(a, o, "additional_runs_per_side", runs);
    cg_jv_obj_put(a, o, "method",
                  cg_jv_str_nocopy(a, "comparison/6's bootstrap interval of the median delta (xorshift64, 10000 "
                                      "resamples, 95 %) from the observed runs, its half-width projected to n+k runs "
                                      "per side at the 1/sqrt(n) rate: the smallest k (at least 5 runs per side) for "
                                      "which the interval excludes zero or lies within ±target"));
    return o;
}
