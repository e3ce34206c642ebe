/* routes_history.c — GET /history (candle-graph/history/1: per-commit n,
 * median and bootstrap 95 % interval of the median, and the change points)
 * and GET /compare/advice (candle-graph/replication-advice/1). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comparison/advice.h"

#include "base/alloc.h"
#include "comparison/compare.h"
#include "comparison/stats.h"
#include "srv_compare.h"
#include "srv_history.h"
#include "srv_store.h"

#define HISTORY_SCHEMA "candle-graph/history/1"
#define MAX_POINTS 10000

static cg_jv *parse_json(cg_arena *a, const char *s) {
    cg_json_limits lim;
    cg_json_limits_default(&lim);
    cg_error err = {0};
    cg_jv *v = cg_json_parse(a, s, strlen(s), &lim, &err);
    return v ? v : cg_jv_null(a);
}

/* The one series the request's filters select; 0 after answering. */
static int find_series(srv_req *r, long long *sid, cg_jv **identity, const char **branch, const char **params,
                       enum MHD_Result *res) {
    cg_arena *a = &r->arena;
    if (!srv_query(r, "workload_id")) {
        *res = srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "the series filters need at least workload_id");
        return 0;
    }
    const char **values = cg_arena_zalloc(a, (srv_n_series_fields + 1) * sizeof *values);
    for (size_t i = 0; i < srv_n_series_fields; i++) values[i] = srv_query(r, srv_series_fields[i]);
    cg_error err = {0};
    PGresult *x = srv_store_history_series_find(r->s->pool, values, srv_query(r, "branch"), &err);
    if (!x) {
        *res = srv_fail_unavailable(r, &err);
        return 0;
    }
    int rows = PQntuples(x);
    if (rows != 1) {
        cg_jv *list = cg_jv_arr(a);
        for (int i = 0; i < rows; i++) {
            cg_jv *o = cg_jv_obj(a);
            cg_jv_obj_put(a, o, "series", parse_json(a, PQgetvalue(x, i, 1)));
            cg_jv_obj_put(a, o, "branch", cg_jv_str(a, PQgetvalue(x, i, 2)));
            cg_jv_arr_push(a, list, o);
        }
        PQclear(x);
        cg_jv *d = cg_jv_obj(a);
        cg_jv_obj_put(a, d, "series", list);
        *res = rows == 0 ? srv_fail(r, CG_R_NOT_FOUND, NULL, "no history series matches the filters")
                         : srv_fail(r, CG_R_AMBIGUOUS_SERIES, d, "the filters match %d series; narrow them", rows);
        return 0;
    }
    *sid = strtoll(PQgetvalue(x, 0, 0), NULL, 10);
    *identity = parse_json(a, PQgetvalue(x, 0, 1));
    *branch = cg_arena_strdup(a, PQgetvalue(x, 0, 2));
    *params = cg_arena_strdup(a, PQgetvalue(x, 0, 3));
    PQclear(x);
    return 1;
}

/* Intervals of point medians are pure functions of the point's values, so a
 * small direct-mapped cache (keyed by the SHA-256 of the values in cohort
 * order) spares re-running 10,000 resamples per point on every GET /history. */
#define CI_CACHE_SLOTS 16384
typedef struct ci_slot {
    unsigned char key[32];
    bool used;
    cg_ci ci;
} ci_slot;
static ci_slot *ci_cache;
static pthread_mutex_t ci_mu = PTHREAD_MUTEX_INITIALIZER;

static void median_ci(const srv_point *p, cg_ci *out) {
    unsigned char key[32];
    cg_sha256_buf(p->values, p->n * sizeof *p->values, key);
    size_t slot = ((size_t)key[0] | (size_t)key[1] << 8 | (size_t)key[2] << 16) % CI_CACHE_SLOTS;
    pthread_mutex_lock(&ci_mu);
    if (!ci_cache) ci_cache = cg_xzalloc(CI_CACHE_SLOTS, sizeof *ci_cache);
    bool hit = ci_cache[slot].used && !memcmp(ci_cache[slot].key, key, 32);
    if (hit) *out = ci_cache[slot].ci;
    pthread_mutex_unlock(&ci_mu);
    if (hit) return;
    cg_stats_bootstrap_median(p->values, p->n, out);
    pthread_mutex_lock(&ci_mu);
    memcpy(ci_cache[slot].key, key, 32);
    ci_cache[slot].ci = *out;
    ci_cache[slot].used = true;
    pthread_mutex_unlock(&ci_mu);
}

static cg_jv *point_json(cg_arena *a, const srv_point *p) {
    cg_jv *o = cg_jv_obj(a), *ids = cg_jv_arr(a);
    cg_jv_obj_put(a, o, "commit", cg_jv_str(a, p->commit));
    cg_jv_obj_put(a, o, "commit_time", cg_jv_str(a, p->commit_time));
    for (size_t i = 0; i < p->n_ids; i++) cg_jv_arr_push(a, ids, cg_jv_str(a, p->ids[i]));
    cg_jv_obj_put(a, o, "bundles", ids);
    cg_jv_obj_put(a, o, "n", cg_jv_u64(a, p->n));
    if (p->n == 0) {
        cg_jv_obj_put(a, o, "median_ns", cg_jv_null(a));
        cg_jv_obj_put(a, o, "ci95", cg_jv_null(a));
        return o;
    }
    cg_ci ci;
    median_ci(p, &ci);
    cg_jv *c = cg_jv_obj(a);
    cg_jv_obj_put(a, c, "lower_ns", cg_jv_f64(a, ci.lower_delta_ns));
    cg_jv_obj_put(a, c, "upper_ns", cg_jv_f64(a, ci.upper_delta_ns));
    cg_jv_obj_put(a, o, "median_ns", cg_jv_f64(a, p->median));
    cg_jv_obj_put(a, o, "ci95", c);
    return o;
}

static cg_jv *cp_json(cg_arena *a, const char *commit, const char *before, double p, double rel, const char *state,
                      const char *verdict, cg_jv *reasons, cg_jv *alert_id) {
    cg_jv *o = cg_jv_obj(a), *cmp = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "commit", cg_jv_str(a, commit));
    cg_jv_obj_put(a, o, "before_commit", cg_jv_str(a, before));
    cg_jv_obj_put(a, o, "after_commit", cg_jv_str(a, commit));
    cg_jv_obj_put(a, o, "p_value", cg_jv_f64(a, p));
    cg_jv_obj_put(a, o, "relative_change", cg_jv_f64(a, rel));
    cg_jv_obj_put(a, o, "state", cg_jv_str(a, state));
    cg_jv_obj_put(a, cmp, "verdict", cg_jv_str(a, verdict));
    cg_jv_obj_put(a, cmp, "reasons", reasons);
    cg_jv_obj_put(a, o, "comparison", cmp);
    cg_jv_obj_put(a, o, "alert_id", alert_id);
    return o;
}

static int stored_cps(srv_pool *pool, cg_arena *a, long long sid, long from, cg_jv *out, cg_error *err) {
    PGresult *x = srv_store_history_change_points(pool, cg_arena_printf(a, "%lld", sid), SRV_METRIC_OUTER,
                                                  cg_arena_printf(a, "%ld", from), err);
    if (!x) return -1;
    for (int i = 0; i < PQntuples(x); i++)
        cg_jv_arr_push(a, out,
                       cp_json(a, PQgetvalue(x, i, 0), PQgetvalue(x, i, 1), strtod(PQgetvalue(x, i, 2), NULL),
                               strtod(PQgetvalue(x, i, 3), NULL), PQgetvalue(x, i, 4), PQgetvalue(x, i, 5),
                               parse_json(a, PQgetvalue(x, i, 6)),
                               PQgetisnull(x, i, 7) ? cg_jv_null(a)
                                                    : cg_jv_u64(a, strtoull(PQgetvalue(x, i, 7), NULL, 10))));
    PQclear(x);
    return 0;
}

/* Detection over the given points (those with a value), confirmed now. */
static int computed_cps(srv_pool *pool, cg_arena *a, long long sid, const char *metric, const srv_point *pt, size_t n,
                        const srv_cp_params *prm, cg_jv *out, cg_error *err) {
    const srv_point **use = cg_arena_zalloc(a, (n + 1) * sizeof *use);
    double *v = cg_arena_zalloc(a, (n + 1) * sizeof *v);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (pt[i].n) use[m] = &pt[i], v[m++] = pt[i].median;
    size_t cap = m / 2 + 1;
    srv_cp *cps = cg_arena_zalloc(a, cap * sizeof *cps);
    size_t k = srv_cp_detect(prm, v, m, cps, cap);
    for (size_t i = 0; i < k && i < cap; i++) {
        const srv_point *b = use[cps[i].pos - 1], *af = use[cps[i].pos];
        srv_confirmation cf;
        if (srv_history_confirm(pool, a, metric, b, af, &cf, err) < 0) return -1;
        const char *key[4] = {cg_arena_printf(a, "%lld", sid), metric, b->commit, af->commit};
        long long id = -1;
        if (cf.confirmed && srv_store_alert_id(pool, NULL, key, &id, err) < 0) return -1;
        cg_jv *aid = id >= 0 ? cg_jv_u64(a, (uint64_t)id) : cg_jv_null(a);
        cg_jv_arr_push(a, out,
                       cp_json(a, af->commit, b->commit, cps[i].p_value, cps[i].relative_change,
                               cf.confirmed ? "confirmed" : "unconfirmed", cf.verdict ? cf.verdict : "ineligible",
                               cf.reasons, aid));
    }
    return 0;
}

/* Query overrides of the detection parameters; true when any was given. */
static int overrides(srv_req *r, srv_cp_params *p, bool *any, enum MHD_Result *res) {
    *any = false;
    const char *names[] = {"p_max", "window", "min_segment", "min_relative_change"};
    for (int i = 0; i < 4; i++) {
        const char *v = srv_query(r, names[i]);
        if (!v) continue;
        char *e;
        double d = strtod(v, &e);
        if (!*v || *e || !(d >= 0.0) || d > 100000.0 || ((i == 1 || i == 2) && d != floor(d))) {
            *res = srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "%s must be a non-negative number", names[i]);
            return 0;
        }
        if (i == 0) p->p_max = d;
        if (i == 1) p->window = (unsigned)d;
        if (i == 2) p->min_segment = (unsigned)d;
        if (i == 3) p->min_relative_change = d;
        *any = true;
    }
    srv_cp_sanitize(p);
    return 1;
}

enum MHD_Result srv_h_history(srv_req *r) {
    cg_arena *a = &r->arena;
    const char *metric = srv_query(r, "metric"), *lim = srv_query(r, "limit"), *detect = srv_query(r, "detect");
    if (!metric) metric = SRV_METRIC_OUTER;
    if (strcmp(metric, SRV_METRIC_OUTER) && strncmp(metric, "span:", 5) && strncmp(metric, "op:", 3) &&
        strncmp(metric, "device:", 7))
        return srv_fail(r, CG_R_INVALID_PARAMETER, NULL,
                        "metric must be outer_wall_time_ns, span:<path>, op:<path> or device:<device>/<clock_id>");
    uint64_t nlim = 0;
    if (lim && (!srv_parse_u64(lim, MAX_POINTS, &nlim) || nlim < 1))
        return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "limit must be 1 to %d", MAX_POINTS);
    if (detect && strcmp(detect, "stored") && strcmp(detect, "full"))
        return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "detect must be stored or full");
    long limit = lim ? strtol(lim, NULL, 10) : 1000;
    srv_pool *pool = r->s->pool;
    enum MHD_Result res;
    long long sid;
    cg_jv *identity;
    const char *branch, *params;
    srv_cp_params prm;
    bool custom = false;
    if (!find_series(r, &sid, &identity, &branch, &params, &res)) return res;
    srv_history_params(params, &prm);
    if (!overrides(r, &prm, &custom, &res)) return res;
    cg_error err = {0};
    long maxpos;
    if (srv_store_history_max_pos(pool, cg_arena_printf(a, "%lld", sid), &maxpos, &err) < 0)
        return srv_fail_unavailable(r, &err);
    long from = maxpos + 1 - limit > 0 ? maxpos + 1 - limit : 0;
    srv_point *pt;
    size_t n;
    if (srv_history_points(pool, a, sid, metric, from, &pt, &n, &err) < 0) return srv_fail_unavailable(r, &err);
    cg_jv *points = cg_jv_arr(a), *cps = cg_jv_arr(a);
    for (size_t i = 0; i < n; i++) cg_jv_arr_push(a, points, point_json(a, &pt[i]));
    bool stored = !strcmp(metric, SRV_METRIC_OUTER) && !custom && !(detect && !strcmp(detect, "full"));
    if (stored ? stored_cps(pool, a, sid, from, cps, &err) < 0
               : computed_cps(pool, a, sid, metric, pt, n, &prm, cps, &err) < 0)
        return srv_fail_unavailable(r, &err);
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "schema", cg_jv_str(a, HISTORY_SCHEMA));
    cg_jv_obj_put(a, o, "series", identity);
    cg_jv_obj_put(a, o, "branch", cg_jv_str(a, branch));
    cg_jv_obj_put(a, o, "metric", cg_jv_str(a, metric));
    cg_jv_obj_put(a, o, "points", points);
    cg_jv_obj_put(a, o, "change_points", cps);
    return srv_reply_json(r, 200, o);
}

/* ------------------------------------------------------------ advice */

static int cohort_rows(srv_req *r, const srv_cohort *co, cg_cohort_row **rows, enum MHD_Result *res) {
    const char **texts = cg_arena_zalloc(&r->arena, (co->n + 1) * sizeof *texts);
    if (!srv_facts_load(r, "cohort_row", co->ids, co->n, texts, res)) return 0;
    *rows = cg_arena_zalloc(&r->arena, (co->n + 1) * sizeof **rows);
    for (size_t i = 0; i < co->n; i++) {
        cg_error err = {0};
        if (cg_cohort_row_parse(&r->arena, texts[i], strlen(texts[i]), &(*rows)[i], &err) < 0) {
            *res = srv_fail(r, CG_R_INTERNAL, NULL, "stored comparison facts of %s are unreadable", co->ids[i]);
            return 0;
        }
    }
    return 1;
}

enum MHD_Result srv_h_compare_advice(srv_req *r) {
    const char *me = srv_query(r, "min_effect_pct");
    double target = 1.0;
    if (me) {
        char *e;
        target = strtod(me, &e);
        if (!*me || *e || !(target > 0.0) || target > 1000.0)
            return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "min_effect_pct must be a number in (0, 1000]");
    }
    enum MHD_Result res;
    srv_cohort ca, cb;
    cg_cohort_row *ra, *rb;
    if (!srv_cohort_resolve(r, "a", srv_query(r, "a"), NULL, &ca, &res) ||
        !srv_cohort_resolve(r, "b", srv_query(r, "b"), NULL, &cb, &res) || !cohort_rows(r, &ca, &ra, &res) ||
        !cohort_rows(r, &cb, &rb, &res))
        return res;
    cg_jv *cmp = cg_compare_rows(&r->arena, ra, ca.n, rb, cb.n, CG_CMP_VERIFIED_BUNDLES);
    return srv_reply_json(r, 200, cg_replication_advice(&r->arena, cmp, target));
}
