/* history.c — revisions index, history points, incremental change-point
 * detection and alert creation (srv_history.h). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comparison/compare.h"
#include "comparison/stats.h"
#include "srv_compare.h"
#include "srv_history.h"
#include "srv_index.h"
#include "srv_store.h"

const char *const srv_series_fields[] = {
    "workload_id", "model_id", "config_id", "data_id", "seed_policy", "physical_batch", "accumulation_steps",
    "precision", "device_state", "entrypoint", "phase", "device",
};
const size_t srv_n_series_fields = sizeof srv_series_fields / sizeof srv_series_fields[0];

/* ------------------------------------------------------------ revision */

static const char *tag_of(const cg_run_meta *m, const char *key) {
    for (size_t i = 0; i < m->n_tags; i++)
        if (!strcmp(m->tags[i].key, key)) return m->tags[i].value;
    return NULL;
}

static bool is_commit(const char *s) {
    size_t n = strlen(s);
    if (n < 7 || n > 64) return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
    return true;
}

static bool digits(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return false;
    return true;
}

/* RFC 3339 date-time: YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM). */
static bool is_rfc3339(const char *s) {
    if (strlen(s) < 20 || !digits(s, 4) || s[4] != '-' || !digits(s + 5, 2) || s[7] != '-' || !digits(s + 8, 2) ||
        s[10] != 'T' || !digits(s + 11, 2) || s[13] != ':' || !digits(s + 14, 2) || s[16] != ':' || !digits(s + 17, 2))
        return false;
    if (s[5] > '1' || s[8] > '3' || s[11] > '2' || s[14] > '5' || s[17] > '6') return false;
    const char *p = s + 19;
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9')) return false;
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p == 'Z') return p[1] == 0;
    return (*p == '+' || *p == '-') && digits(p + 1, 2) && p[3] == ':' && digits(p + 4, 2) && p[6] == 0;
}

/* Canonical series key: the identity fields in srv_series_fields order. */
static const char *series_key(cg_arena *a, const cg_trace *t) {
    const cg_run_meta *m = &t->run;
    const cg_comparison_identity *id = m->identity;
    cg_jv *o = cg_jv_obj(a);
    const char *s[] = {id->workload_id, id->model_id, id->config_id, id->data_id, id->seed_policy};
    for (size_t i = 0; i < 5; i++) cg_jv_obj_put(a, o, srv_series_fields[i], s[i] ? cg_jv_str(a, s[i]) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "physical_batch", cg_jv_u64(a, id->physical_batch));
    cg_jv_obj_put(a, o, "accumulation_steps", cg_jv_u64(a, id->accumulation_steps));
    cg_jv_obj_put(a, o, "precision", id->precision ? cg_jv_str(a, id->precision) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "device_state", id->device_state ? cg_jv_str(a, id->device_state) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "entrypoint", cg_jv_str(a, m->entrypoint));
    cg_jv_obj_put(a, o, "phase", cg_jv_str(a, cg_phase_name(m->phase)));
    cg_jv_obj_put(a, o, "device", cg_jv_str(a, m->device));
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, o, false);
    const char *k = cg_arena_strndup(a, b.data, b.len);
    cg_buf_free(&b);
    return k;
}

int srv_history_index(PGconn *c, const char *bundle_id, const cg_trace *t, long long *series_id, char ss[6],
                      cg_error *err) {
    *series_id = -1;
    const cg_run_meta *m = &t->run;
    const char *commit = tag_of(m, "vcs.commit"), *branch = tag_of(m, "vcs.branch"),
               *ctime = tag_of(m, "vcs.commit_time");
    if (!commit || !branch || !ctime || !*branch || !is_commit(commit) || !is_rfc3339(ctime) || !m->identity ||
        !m->identity->workload_id)
        return 0;
    bool has;
    uint64_t ns, count;
    srv_measured_sample(t, &has, &ns, &count);
    if (!has) return 0;
    cg_arena a;
    cg_arena_init(&a, 0);
    int rc = -1;
    char sid[24];
    if (srv_store_history_series_put(c, series_key(&a, t), branch, sid, ss, err) < 0) goto out;
    char nss[24];
    snprintf(nss, sizeof nss, "%" PRIu64, ns);
    const char *rev[8] = {bundle_id, sid, commit, branch, ctime, tag_of(m, "vcs.repository"), tag_of(m, "ci.run_url"),
                          nss};
    long pos;
    if (srv_store_revision_put(c, rev, ss, err) < 0 || srv_store_history_point_pos(c, sid, commit, ctime, &pos, ss, err) < 0 ||
        srv_store_history_mark(c, sid, pos, ss, err) < 0)
        goto out;
    *series_id = strtoll(sid, NULL, 10);
    rc = 0;
out:
    cg_arena_free(&a);
    return rc;
}

/* ------------------------------------------------------------ points */

static uint64_t *parse_u64_list(cg_arena *a, const char *s, size_t *n) {
    size_t cap = 1;
    for (const char *p = s; *p; p++) cap += *p == ',';
    uint64_t *v = cg_arena_zalloc(a, cap * sizeof *v);
    *n = 0;
    while (*s) {
        char *e;
        v[(*n)++] = strtoull(s, &e, 10);
        s = *e == ',' ? e + 1 : e + strlen(e);
    }
    return v;
}

static const char **parse_id_list(cg_arena *a, const char *s, size_t *n) {
    size_t cap = 1;
    for (const char *p = s; *p; p++) cap += *p == ',';
    const char **v = cg_arena_zalloc(a, (cap + 1) * sizeof *v);
    *n = 0;
    while (*s) {
        const char *e = strchr(s, ',');
        if (!e) e = s + strlen(s);
        v[(*n)++] = cg_arena_strndup(a, s, (size_t)(e - s));
        s = *e ? e + 1 : e;
    }
    return v;
}

/* metric → (kind, path) of bundle_span_totals; NULL kind for the outer metric. */
static bool metric_parse(cg_arena *a, const char *metric, const char **kind, const char **path) {
    *kind = *path = NULL;
    if (!strcmp(metric, SRV_METRIC_OUTER)) return true;
    if (!strncmp(metric, "span:", 5) && metric[5]) *kind = "span", *path = metric + 5;
    else if (!strncmp(metric, "op:", 3) && metric[3]) *kind = "op", *path = metric + 3;
    else if (!strncmp(metric, "device:", 7) && strchr(metric + 7, '/')) *kind = "device", *path = metric;
    else return false;
    *path = cg_arena_strdup(a, *path);
    return true;
}

int srv_history_points(srv_pool *pool, cg_arena *a, long long series_id, const char *metric, long from_pos,
                       srv_point **out, size_t *n, cg_error *err) {
    const char *kind, *path;
    if (!metric_parse(a, metric, &kind, &path)) return cg_err_set(err, CG_EINVAL, "unknown metric %s", metric);
    PGresult *x = srv_store_history_points(pool, cg_arena_printf(a, "%lld", series_id),
                                           cg_arena_printf(a, "%ld", from_pos), kind, path, err);
    if (!x) return -1;
    int rows = PQntuples(x);
    srv_point *pt = cg_arena_zalloc(a, ((size_t)rows + 1) * sizeof *pt);
    for (int i = 0; i < rows; i++) {
        pt[i].pos = strtol(PQgetvalue(x, i, 0), NULL, 10);
        pt[i].commit = cg_arena_strdup(a, PQgetvalue(x, i, 1));
        pt[i].commit_time = cg_arena_strdup(a, PQgetvalue(x, i, 2));
        pt[i].ids = parse_id_list(a, PQgetvalue(x, i, 3), &pt[i].n_ids);
        pt[i].values = parse_u64_list(a, PQgetvalue(x, i, 4), &pt[i].n);
        pt[i].median = pt[i].n ? cg_stats_percentile_u64(pt[i].values, pt[i].n, 0.5) : NAN;
    }
    PQclear(x);
    *out = pt;
    *n = (size_t)rows;
    return 0;
}

/* ------------------------------------------------------------ confirmation */

static int load_rows(srv_pool *pool, cg_arena *a, const srv_point *pt, cg_cohort_row **rows, size_t *n,
                     cg_error *err) {
    PGresult *x = srv_store_history_cohort_rows(pool, srv_id_array(a, pt->ids, pt->n_ids), err);
    if (!x) return -1;
    *n = (size_t)PQntuples(x);
    *rows = cg_arena_zalloc(a, (*n + 1) * sizeof **rows);
    for (size_t i = 0; i < *n; i++)
        if (cg_cohort_row_parse(a, PQgetvalue(x, (int)i, 0), (size_t)PQgetlength(x, (int)i, 0), &(*rows)[i], err) < 0) {
            PQclear(x);
            return -1;
        }
    PQclear(x);
    return 0;
}

static double num(const cg_jv *v) {
    double d = 0.0;
    cg_jv_as_f64(v, &d);
    return d;
}

int srv_history_confirm(srv_pool *pool, cg_arena *a, const char *metric, const srv_point *before,
                        const srv_point *after, srv_confirmation *out, cg_error *err) {
    memset(out, 0, sizeof *out);
    cg_cohort_row *rb, *rc;
    size_t nb, nc;
    if (load_rows(pool, a, before, &rb, &nb, err) < 0 || load_rows(pool, a, after, &rc, &nc, err) < 0) return -1;
    srv_pool_note_compute();
    cg_jv *cmp = cg_compare_rows(a, rb, nb, rc, nc, CG_CMP_VERIFIED_BUNDLES);
    out->comparison = cmp;
    out->reasons = cg_jv_arr(a);
    const cg_jv *rs = cg_jv_get(cmp, "reasons");
    for (size_t i = 0; rs && i < cg_jv_len(rs); i++)
        cg_jv_arr_push(a, out->reasons, cg_jv_clone(a, cg_jv_get(cg_jv_at(rs, i), "code")));
    const char *verdict = cg_jv_as_str(cg_jv_get(cmp, "verdict"));
    const cg_jv *cv = cg_jv_get(cmp, "comparable");
    bool comparable = cv && cv->type == CG_JBOOL && cv->u.b;
    if (!strcmp(metric, SRV_METRIC_OUTER)) {
        const cg_jv *ci = cg_jv_get(cmp, "confidence_interval");
        out->verdict = verdict;
        out->delta_ns = num(cg_jv_get(cmp, "median_delta_ns"));
        double base = num(cg_jv_get(cg_jv_get(cmp, "baseline"), "median_ns"));
        out->relative_change = base != 0.0 ? out->delta_ns / base : 0.0;
        out->ci_lower = num(cg_jv_get(ci, "lower_delta_ns"));
        out->ci_upper = num(cg_jv_get(ci, "upper_delta_ns"));
    } else if (!comparable || before->n == 0 || after->n == 0) {
        out->verdict = comparable ? "inconclusive" : "ineligible";
    } else {
        cg_ci ci;
        cg_stats_bootstrap_unpaired(before->values, before->n, after->values, after->n, &ci);
        out->delta_ns = after->median - before->median;
        out->relative_change = before->median != 0.0 ? out->delta_ns / before->median : 0.0;
        out->ci_lower = ci.lower_delta_ns;
        out->ci_upper = ci.upper_delta_ns;
        out->verdict = ci.upper_delta_ns < 0.0   ? "candidate_faster"
                       : ci.lower_delta_ns > 0.0 ? "candidate_slower"
                                                 : "inconclusive";
    }
    out->confirmed = comparable && verdict &&
                     (!strcmp(out->verdict, "candidate_faster") || !strcmp(out->verdict, "candidate_slower"));
    return 0;
}

void srv_history_params(const char *params_json, srv_cp_params *p) {
    srv_cp_defaults(p);
    if (params_json && *params_json) {
        cg_arena a;
        cg_arena_init(&a, 0);
        cg_json_limits lim;
        cg_json_limits_default(&lim);
        cg_error err = {0};
        cg_jv *v = cg_json_parse(&a, params_json, strlen(params_json), &lim, &err);
        uint64_t u;
        double d;
        if (v && cg_jv_as_f64(cg_jv_get(v, "p_max"), &d)) p->p_max = d;
        if (v && cg_jv_as_u64(cg_jv_get(v, "window"), &u) && u < 100000) p->window = (unsigned)u;
        if (v && cg_jv_as_u64(cg_jv_get(v, "min_segment"), &u) && u < 100000) p->min_segment = (unsigned)u;
        if (v && cg_jv_as_f64(cg_jv_get(v, "min_relative_change"), &d)) p->min_relative_change = d;
        cg_arena_free(&a);
    }
    srv_cp_sanitize(p);
}

/* ------------------------------------------------------------ detection */

/* The post-upload sweep never holds a connection while it computes: it reads
 * the series' state, kept change points, points and cohort rows each through
 * the store (a pooled connection per statement), runs the sweep steps and
 * confirmations, then hands the result to one short write transaction that
 * compares the version it read (every write to the series' points or change
 * points bumps it) under the series row's lock, then takes the series lock
 * (store_history.c: the ingest's order). When the series moved in between
 * — another upload indexed a revision, or another sweep wrote — the sweep
 * recomputes from the new state, at most SWEEP_ATTEMPTS times; after that the
 * newer writer's own sweep, which runs after its commit, covers the series. */
#define SWEEP_ATTEMPTS 3

static atomic_ulong sweeps_written, sweeps_conflict;

static const char *f64s(cg_arena *a, double d) { return cg_arena_printf(a, "%.17g", d); }

/* Confirms one change point and fills its rows. */
static int plan_cp(srv_pool *pool, cg_arena *a, const char *sid, const srv_cp *cp, const srv_point *before,
                   const srv_point *after, srv_cp_write *w, cg_error *err) {
    srv_confirmation cf;
    if (srv_history_confirm(pool, a, SRV_METRIC_OUTER, before, after, &cf, err) < 0) return -1;
    w->confirmed = cf.confirmed;
    const char *alert[10] = {sid, SRV_METRIC_OUTER, before->commit, after->commit, f64s(a, cf.delta_ns),
                             f64s(a, cf.relative_change), f64s(a, cf.ci_lower), f64s(a, cf.ci_upper),
                             srv_id_array(a, before->ids, before->n_ids), srv_id_array(a, after->ids, after->n_ids)};
    memcpy(w->alert, alert, sizeof alert);
    cg_buf rb = CG_BUF_INIT;
    cg_json_write(&rb, cf.reasons, false);
    const char *row[12] = {sid,
                           SRV_METRIC_OUTER,
                           cg_arena_printf(a, "%zu", cp->pos),
                           cg_arena_printf(a, "%zu", cp->detected_pos),
                           after->commit,
                           before->commit,
                           f64s(a, cp->p_value),
                           f64s(a, cp->relative_change),
                           cf.confirmed ? "confirmed" : "unconfirmed",
                           cf.verdict ? cf.verdict : "ineligible",
                           cg_arena_strndup(a, rb.data, rb.len),
                           NULL};
    cg_buf_free(&rb);
    memcpy(w->row, row, sizeof row);
    return 0;
}

/* The next change point's slot of a growing array (arena-allocated). */
static srv_cp_write *cp_slot(cg_arena *a, srv_cp_write **cps, size_t *n, size_t *cap) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 8;
        srv_cp_write *grown = cg_arena_zalloc(a, *cap * sizeof *grown);
        if (*n) memcpy(grown, *cps, *n * sizeof *grown);
        *cps = grown;
    }
    return &(*cps)[(*n)++];
}

/* Reads and computes the sweep's steps from w->from with no connection held. */
static int sweep_plan(srv_pool *pool, cg_arena *a, const srv_cp_params *prm, srv_sweep_write *w, cg_error *err) {
    long k = w->from, kept;
    if (srv_store_history_cp_kept(pool, w->sid, SRV_METRIC_OUTER, k, &kept, err) < 0) return -1;
    size_t last = kept > 0 ? (size_t)kept : 0, n_cps = 0, cap = 0;
    srv_cp_write *cps = NULL;
    long base = k + 1 - (long)prm->window;
    if (base < (long)last) base = (long)last;
    if (base < 0) base = 0;
    srv_point *pt;
    size_t n;
    if (srv_history_points(pool, a, strtoll(w->sid, NULL, 10), SRV_METRIC_OUTER, base, &pt, &n, err) < 0) return -1;
    srv_pool_note_compute();
    double *v = cg_arena_zalloc(a, (n + 1) * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        if (pt[i].pos != base + (long)i)
            return cg_err_set(err, CG_ESTATE, "history points of series %s are not dense", w->sid);
        v[i] = pt[i].median;
    }
    for (long e = k; e < base + (long)n; e++) {
        srv_cp found[16];
        size_t got = srv_cp_step(prm, v, (size_t)base, (size_t)e, &last, found, 16);
        for (size_t i = 0; i < got; i++) {
            size_t at = found[i].pos - (size_t)base;
            srv_cp_write *slot = cp_slot(a, &cps, &n_cps, &cap);
            if (plan_cp(pool, a, w->sid, &found[i], &pt[at - 1], &pt[at], slot, err) < 0) return -1;
        }
    }
    w->cps = cps;
    w->n = n_cps;
    return 0;
}

/* One attempt: 0 with *conflict when the series moved, -1 on failure. */
static int sweep_once(srv_pool *pool, const char *sid, bool *conflict, cg_error *err) {
    cg_arena a;
    cg_arena_init(&a, 0);
    *conflict = false;
    srv_sweep_write w = {.sid = sid, .metric = SRV_METRIC_OUTER};
    const char *params;
    bool kick = false;
    int rc = srv_store_history_detect_state(pool, &a, sid, &w.from, &params, &w.version, err);
    if (rc == 0 && w.from >= 0) {
        srv_cp_params prm;
        srv_history_params(params, &prm);
        rc = sweep_plan(pool, &a, &prm, &w, err);
        if (rc == 0) rc = srv_store_history_sweep_commit(pool, &a, &w, conflict, &kick, err);
        if (rc == 0) atomic_fetch_add(*conflict ? &sweeps_conflict : &sweeps_written, 1);
    }
    cg_arena_free(&a);
    if (kick) srv_webhook_kick();
    return rc;
}

int srv_history_redetect(srv_pool *pool, long long series_id, cg_error *err) {
    char sid[24];
    snprintf(sid, sizeof sid, "%lld", series_id);
    bool conflict = true;
    for (int i = 0; i < SWEEP_ATTEMPTS && conflict; i++)
        if (sweep_once(pool, sid, &conflict, err) < 0) return -1;
    if (conflict) srv_log("info", "change-point sweep left to the series' newer writer", "series", sid, NULL);
    return 0;
}

void srv_history_detect(srv_server *s, long long series_id) {
    if (series_id < 0) return;
    cg_error err = {0};
    if (srv_history_redetect(s->pool, series_id, &err) < 0) {
        char id[24];
        snprintf(id, sizeof id, "%lld", series_id);
        srv_log("error", "change-point detection failed (retried at the next upload of the series)", "series", id,
                "error", err.msg, NULL);
    }
}

void srv_history_metrics(cg_buf *b) {
    cg_buf_printf(b,
                  "# HELP cg_history_sweeps_total Post-upload change-point sweeps by result: written, or conflict "
                  "(the series moved while the sweep computed; recomputed).\n"
                  "# TYPE cg_history_sweeps_total counter\n"
                  "cg_history_sweeps_total{result=\"written\"} %lu\n"
                  "cg_history_sweeps_total{result=\"conflict\"} %lu\n",
                  atomic_load(&sweeps_written), atomic_load(&sweeps_conflict));
}
