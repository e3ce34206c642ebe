/* store_history.c — the SQL of issue 15's history (srv_store.h): the revision
 * index written in the ingest transaction, the points and cohort rows of a
 * series, the change-point sweep's reads and its short write transaction, and
 * the reads of GET /history. Functions taking an srv_pool take a pooled
 * connection and return it before they return; srv_store_alert_id runs on the
 * caller's connection when one is given. */
#include <stdlib.h>
#include <string.h>

#include "srv_history.h"
#include "srv_store.h"

#define LOCK_CLASS "1500015"

static const char SQL_BEGIN[] = "BEGIN";
static const char SQL_COMMIT[] = "COMMIT";
static const char SQL_ROLLBACK[] = "ROLLBACK";

static const char SQL_SERIES_PUT[] =
    "INSERT INTO history_series (series_key, branch, identity) VALUES ($1::text, $2, $1::text::jsonb) "
    "ON CONFLICT (series_key, branch) DO UPDATE SET series_key = EXCLUDED.series_key RETURNING id";
static const char SQL_SERIES_LOCK[] =
    "SELECT pg_advisory_xact_lock(" LOCK_CLASS ", ($1::bigint % 2147483647)::int)";
static const char SQL_REVISION_PUT[] =
    "INSERT INTO bundle_revisions (bundle_id, series_id, commit_sha, branch, commit_time, repository, run_url, "
    "measured_ns) VALUES ($1, $2::bigint, $3, $4, $5::timestamptz, $6, $7, $8::numeric)";
static const char SQL_POINT_POS[] = "SELECT pos FROM history_points WHERE series_id = $1::bigint AND commit_sha = $2";
static const char SQL_POINT_LAST[] =
    "SELECT pos, ($3::timestamptz, $2::text) > (commit_time, commit_sha) FROM history_points "
    "WHERE series_id = $1::bigint ORDER BY pos DESC LIMIT 1";
static const char SQL_POINTS_BEFORE[] =
    "SELECT count(*) FROM history_points WHERE series_id = $1::bigint AND "
    "(commit_time, commit_sha) < ($3::timestamptz, $2::text)";
static const char SQL_POINTS_SHIFT[] =
    "UPDATE history_points SET pos = pos + 1 WHERE series_id = $1::bigint AND pos >= $2::int";
static const char SQL_POINT_PUT[] =
    "INSERT INTO history_points (series_id, commit_sha, commit_time, pos) "
    "VALUES ($1::bigint, $2, $3::timestamptz, $4::int)";
static const char SQL_SERIES_MARK[] =
    "UPDATE history_series SET dirty_from = LEAST(COALESCE(dirty_from, $2::int), $2::int), version = version + 1 "
    "WHERE id = $1::bigint";

/* The points of a series from a position: the outer metric reads the
 * revision's measured_ns, span/op/device metrics the stored path totals. */
#define POINTS_HEAD                                                                                             \
    "SELECT p.pos, p.commit_sha, to_char(p.commit_time AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), " \
    "string_agg(r.bundle_id, ',' ORDER BY r.bundle_id), "                                                      \
    "coalesce(string_agg(v.total_ns::text, ',' ORDER BY r.bundle_id), '') "                                    \
    "FROM history_points p JOIN bundle_revisions r ON r.series_id = p.series_id AND r.commit_sha = p.commit_sha "
#define POINTS_TAIL " GROUP BY p.pos, p.commit_sha, p.commit_time ORDER BY p.pos"
static const char SQL_POINTS_OUTER[] =
    POINTS_HEAD "CROSS JOIN LATERAL (SELECT r.measured_ns AS total_ns) v "
                "WHERE p.series_id = $1::bigint AND p.pos >= $2::int" POINTS_TAIL;
static const char SQL_POINTS_PATH[] =
    POINTS_HEAD "LEFT JOIN bundles rb ON rb.id = r.bundle_id "
                "LEFT JOIN bundle_span_totals v ON v.bundle_seq = rb.seq AND v.kind = $3 AND "
                "v.path_hash = sha256(convert_to($4, 'UTF8')) WHERE p.series_id = $1::bigint AND p.pos >= $2::int "
                "AND $3::text IS NOT NULL AND $4::text IS NOT NULL" POINTS_TAIL;

static const char SQL_COHORT_ROWS[] =
    "SELECT f.cohort_row FROM unnest($1::text[]) WITH ORDINALITY AS u(id, ord) "
    "JOIN bundle_facts f ON f.bundle_id = u.id ORDER BY u.ord";

static const char SQL_DETECT_STATE[] =
    "SELECT dirty_from, params::text, version FROM history_series WHERE id = $1::bigint";
/* The sweep's compare-and-set: clean, and one version on, only when the series
 * is still at the version the sweep read (0 rows: it moved). */
static const char SQL_DETECT_DONE[] =
    "UPDATE history_series SET dirty_from = NULL, version = version + 1 WHERE id = $1::bigint AND "
    "version = $2::bigint RETURNING 1";
static const char SQL_CP_LAST_KEPT[] =
    "SELECT coalesce(max(pos), 0) FROM history_change_points WHERE series_id = $1::bigint AND metric = $2 AND "
    "detected_pos < $3::int";
static const char SQL_CP_DROP_FROM[] =
    "DELETE FROM history_change_points WHERE series_id = $1::bigint AND metric = $2 AND detected_pos >= $3::int";
static const char SQL_CP_PUT[] =
    "INSERT INTO history_change_points (series_id, metric, pos, detected_pos, commit_sha, before_commit, p_value, "
    "relative_change, state, verdict, reasons, alert_id) VALUES ($1::bigint, $2, $3::int, $4::int, $5, $6, "
    "$7::float8, $8::float8, $9, $10, $11::jsonb, $12::bigint) "
    "ON CONFLICT (series_id, metric, pos) DO UPDATE SET detected_pos = EXCLUDED.detected_pos, "
    "commit_sha = EXCLUDED.commit_sha, before_commit = EXCLUDED.before_commit, p_value = EXCLUDED.p_value, "
    "relative_change = EXCLUDED.relative_change, state = EXCLUDED.state, verdict = EXCLUDED.verdict, "
    "reasons = EXCLUDED.reasons, alert_id = EXCLUDED.alert_id";

static const char SQL_ALERT_OPEN[] =
    "INSERT INTO alerts (series_id, metric, before_commit, after_commit, delta_ns, relative_change, ci_lower_ns, "
    "ci_upper_ns, baseline, candidate) VALUES ($1::bigint, $2, $3, $4, $5::float8, $6::float8, $7::float8, "
    "$8::float8, $9::text[], $10::text[]) "
    "ON CONFLICT (series_id, metric, before_commit, after_commit) DO NOTHING RETURNING id";
static const char SQL_ALERT_REFRESH[] =
    "UPDATE alerts SET delta_ns = $5::float8, relative_change = $6::float8, ci_lower_ns = $7::float8, "
    "ci_upper_ns = $8::float8, baseline = $9::text[], candidate = $10::text[], updated_at = now() "
    "WHERE series_id = $1::bigint AND metric = $2 AND before_commit = $3 AND after_commit = $4 AND "
    "(delta_ns, ci_lower_ns, ci_upper_ns, baseline, candidate) IS DISTINCT FROM "
    "($5::float8, $7::float8, $8::float8, $9::text[], $10::text[]) RETURNING id";
static const char SQL_ALERT_ID[] =
    "SELECT id FROM alerts WHERE series_id = $1::bigint AND metric = $2 AND before_commit = $3 AND after_commit = $4";

/* GET /history: the filters are fixed fragments over srv_series_fields, values bound. */
static const char SQL_SERIES_FIND_FMT[] =
    "SELECT id, identity::text, branch, params::text FROM history_series WHERE true%s ORDER BY id LIMIT 51";
static const char SQL_POINTS_MAX[] = "SELECT coalesce(max(pos), -1) FROM history_points WHERE series_id = $1::bigint";
static const char SQL_CP_STORED[] =
    "SELECT commit_sha, before_commit, p_value, relative_change, state, verdict, reasons::text, alert_id "
    "FROM history_change_points WHERE series_id = $1::bigint AND metric = $2 AND pos >= $3::int ORDER BY pos";

/* ------------------------------------------------------------ helpers */

static PGresult *run(srv_pool *p, PGconn *c, const char *sql, int n, const char *const *q, char ss[6],
                     cg_error *err) {
    return c ? srv_q(c, sql, n, q, NULL, ss, err) : srv_store_q(p, sql, n, q, ss, err);
}

static int exec_p(PGconn *c, const char *sql, int n, const char *const *q, char ss[6], cg_error *err) {
    PGresult *x = srv_q(c, sql, n, q, NULL, ss, err);
    if (!x) return -1;
    PQclear(x);
    return 0;
}

/* The first column of the first row as an integer (the statements above always return one row). */
static int one_long(PGconn *c, const char *sql, int n, const char *const *q, char ss[6], long *out, cg_error *err) {
    PGresult *x = srv_q(c, sql, n, q, NULL, ss, err);
    if (!x) return -1;
    *out = PQntuples(x) ? strtol(PQgetvalue(x, 0, 0), NULL, 10) : 0;
    PQclear(x);
    return 0;
}

/* ------------------------------------------------------------ revision index */

int srv_store_history_series_put(PGconn *c, const char *series_key, const char *branch, char sid[24], char ss[6],
                                 cg_error *err) {
    const char *q[2] = {series_key, branch};
    PGresult *x = srv_q(c, SQL_SERIES_PUT, 2, q, NULL, ss, err);
    if (!x) return -1;
    snprintf(sid, 24, "%s", PQgetvalue(x, 0, 0));
    PQclear(x);
    const char *l[1] = {sid};
    return exec_p(c, SQL_SERIES_LOCK, 1, l, ss, err);
}

int srv_store_revision_put(PGconn *c, const char *const q[8], char ss[6], cg_error *err) {
    return exec_p(c, SQL_REVISION_PUT, 8, q, ss, err);
}

int srv_store_history_point_pos(PGconn *c, const char *sid, const char *commit, const char *ctime, long *pos,
                                char ss[6], cg_error *err) {
    const char *q[3] = {sid, commit, ctime};
    PGresult *x = srv_q(c, SQL_POINT_POS, 2, q, NULL, ss, err);
    if (!x) return -1;
    bool known = PQntuples(x) == 1;
    if (known) *pos = strtol(PQgetvalue(x, 0, 0), NULL, 10);
    PQclear(x);
    if (known) return 0;
    if (!(x = srv_q(c, SQL_POINT_LAST, 3, q, NULL, ss, err))) return -1;
    bool append = PQntuples(x) == 0 || !strcmp(PQgetvalue(x, 0, 1), "t");
    *pos = PQntuples(x) == 0 ? 0 : strtol(PQgetvalue(x, 0, 0), NULL, 10) + 1;
    PQclear(x);
    char ps[24];
    if (!append) { /* an older commit arrived late: later points move up one */
        if (one_long(c, SQL_POINTS_BEFORE, 3, q, ss, pos, err) < 0) return -1;
        snprintf(ps, sizeof ps, "%ld", *pos);
        const char *u[2] = {sid, ps};
        if (exec_p(c, SQL_POINTS_SHIFT, 2, u, ss, err) < 0) return -1;
    }
    snprintf(ps, sizeof ps, "%ld", *pos);
    const char *i[4] = {sid, commit, ctime, ps};
    return exec_p(c, SQL_POINT_PUT, 4, i, ss, err);
}

int srv_store_history_mark(PGconn *c, const char *sid, long pos, char ss[6], cg_error *err) {
    char ps[24];
    snprintf(ps, sizeof ps, "%ld", pos);
    const char *q[2] = {sid, ps};
    return exec_p(c, SQL_SERIES_MARK, 2, q, ss, err);
}

/* ------------------------------------------------------------ points and rows */

PGresult *srv_store_history_points(srv_pool *p, const char *sid, const char *from, const char *kind,
                                   const char *path, cg_error *err) {
    const char *q[4] = {sid, from, kind, path};
    return srv_store_q(p, kind ? SQL_POINTS_PATH : SQL_POINTS_OUTER, kind ? 4 : 2, q, NULL, err);
}

PGresult *srv_store_history_cohort_rows(srv_pool *p, const char *id_array, cg_error *err) {
    const char *q[1] = {id_array};
    return srv_store_q(p, SQL_COHORT_ROWS, 1, q, NULL, err);
}

int srv_store_alert_id(srv_pool *p, PGconn *c, const char *const key[4], long long *id, cg_error *err) {
    PGresult *x = run(p, c, SQL_ALERT_ID, 4, key, NULL, err);
    if (!x) return -1;
    *id = PQntuples(x) ? strtoll(PQgetvalue(x, 0, 0), NULL, 10) : -1;
    PQclear(x);
    return 0;
}

/* ------------------------------------------------------------ the change-point sweep */

int srv_store_history_detect_state(srv_pool *p, cg_arena *a, const char *sid, long *dirty_from, const char **params,
                                   const char **version, cg_error *err) {
    *dirty_from = -1;
    *params = *version = NULL;
    const char *q[1] = {sid};
    PGresult *x = srv_store_q(p, SQL_DETECT_STATE, 1, q, NULL, err);
    if (!x) return -1;
    if (PQntuples(x) == 1 && !PQgetisnull(x, 0, 0)) {
        *dirty_from = strtol(PQgetvalue(x, 0, 0), NULL, 10);
        *params = cg_arena_strdup(a, PQgetvalue(x, 0, 1));
        *version = cg_arena_strdup(a, PQgetvalue(x, 0, 2));
    }
    PQclear(x);
    return 0;
}

int srv_store_history_cp_kept(srv_pool *p, const char *sid, const char *metric, long k, long *last, cg_error *err) {
    char ks[24];
    snprintf(ks, sizeof ks, "%ld", k);
    const char *q[3] = {sid, metric, ks};
    PGresult *x = srv_store_q(p, SQL_CP_LAST_KEPT, 3, q, NULL, err);
    if (!x) return -1;
    *last = PQntuples(x) ? strtol(PQgetvalue(x, 0, 0), NULL, 10) : 0;
    PQclear(x);
    return 0;
}

/* Opens or refreshes the alert of a confirmed change point (q: series id,
 * metric, before, after, delta, relative change, ci lower, ci upper, baseline
 * and candidate text[] literals). *event: "alert.opened", "alert.updated" or
 * NULL (unchanged). */
static int alert_upsert(PGconn *c, const char *const q[10], long long *alert_id, const char **event, cg_error *err) {
    *event = NULL;
    PGresult *x = srv_q(c, SQL_ALERT_OPEN, 10, q, NULL, NULL, err);
    if (!x) return -1;
    bool opened = PQntuples(x) == 1;
    if (opened) *alert_id = strtoll(PQgetvalue(x, 0, 0), NULL, 10), *event = "alert.opened";
    PQclear(x);
    if (opened) return 0;
    if (!(x = srv_q(c, SQL_ALERT_REFRESH, 10, q, NULL, NULL, err))) return -1;
    if (PQntuples(x) == 1) *event = "alert.updated";
    PQclear(x);
    return srv_store_alert_id(NULL, c, q, alert_id, err);
}

/* One change point: its alert (confirmed ones) and event, then its row. */
static int cp_write(PGconn *c, cg_arena *a, const srv_cp_write *w, bool *kick, cg_error *err) {
    const char *row[12];
    memcpy(row, w->row, sizeof row);
    row[11] = NULL;
    if (w->confirmed) {
        long long alert_id = -1;
        const char *event;
        if (alert_upsert(c, w->alert, &alert_id, &event, err) < 0) return -1;
        if (event) {
            cg_jv *aj = srv_alert_load(c, a, alert_id, err);
            if (!aj || srv_webhook_enqueue(c, a, event, alert_id, aj, err) < 0) return -1;
            *kick = true;
        }
        if (alert_id >= 0) row[11] = cg_arena_printf(a, "%lld", alert_id);
    }
    return exec_p(c, SQL_CP_PUT, 12, row, NULL, err);
}

/* The write transaction on c: compare-and-set, series lock, replace, commit.
 * The compare-and-set UPDATE takes the series row's lock first, then the
 * advisory series lock follows: the order of the ingest transaction (its
 * series upsert, then the lock), so the two never wait on each other in a
 * cycle. An ingest that holds the row makes the UPDATE wait for its commit and
 * then find the new version: a conflict. */
static int sweep_tx(PGconn *c, cg_arena *a, const srv_sweep_write *w, bool *conflict, bool *kick, cg_error *err) {
    const char *q[2] = {w->sid, w->version};
    if (srv_exec(c, SQL_BEGIN, err) < 0) return -1;
    PGresult *x = srv_q(c, SQL_DETECT_DONE, 2, q, NULL, NULL, err);
    if (!x) return -1;
    *conflict = PQntuples(x) == 0;
    PQclear(x);
    if (*conflict) return srv_exec(c, SQL_ROLLBACK, err);
    if (exec_p(c, SQL_SERIES_LOCK, 1, q, NULL, err) < 0) return -1;
    char ks[24];
    snprintf(ks, sizeof ks, "%ld", w->from);
    const char *d[3] = {w->sid, w->metric, ks};
    if (exec_p(c, SQL_CP_DROP_FROM, 3, d, NULL, err) < 0) return -1;
    for (size_t i = 0; i < w->n; i++)
        if (cp_write(c, a, &w->cps[i], kick, err) < 0) return -1;
    return srv_exec(c, SQL_COMMIT, err);
}

int srv_store_history_sweep_commit(srv_pool *p, cg_arena *a, const srv_sweep_write *w, bool *conflict, bool *kick,
                                   cg_error *err) {
    *conflict = *kick = false;
    PGconn *c = srv_pool_get(p, err);
    if (!c) return -1;
    int rc = sweep_tx(c, a, w, conflict, kick, err);
    if (rc < 0) *kick = false; /* nothing was committed; srv_pool_put rolls back */
    srv_pool_put(p, c);
    return rc;
}

/* ------------------------------------------------------------ GET /history */

PGresult *srv_store_history_series_find(srv_pool *p, const char *const values[], const char *branch,
                                        cg_error *err) {
    const char *q[16];
    int n = 0;
    cg_buf where = CG_BUF_INIT;
    for (size_t i = 0; i < srv_n_series_fields && n < 15; i++) {
        if (!values[i]) continue;
        q[n++] = values[i];
        cg_buf_printf(&where, " AND identity->>'%s' = $%d", srv_series_fields[i], n);
    }
    if (branch) q[n++] = branch, cg_buf_printf(&where, " AND branch = $%d", n);
    cg_buf sql = CG_BUF_INIT;
    cg_buf_printf(&sql, SQL_SERIES_FIND_FMT, where.data ? where.data : "");
    cg_buf_free(&where);
    PGresult *x = srv_store_q(p, sql.data, n, q, NULL, err);
    cg_buf_free(&sql);
    return x;
}

int srv_store_history_max_pos(srv_pool *p, const char *sid, long *max_pos, cg_error *err) {
    const char *q[1] = {sid};
    PGresult *x = srv_store_q(p, SQL_POINTS_MAX, 1, q, NULL, err);
    if (!x) return -1;
    *max_pos = strtol(PQgetvalue(x, 0, 0), NULL, 10);
    PQclear(x);
    return 0;
}

PGresult *srv_store_history_change_points(srv_pool *p, const char *sid, const char *metric, const char *from,
                                          cg_error *err) {
    const char *q[3] = {sid, metric, from};
    return srv_store_q(p, SQL_CP_STORED, 3, q, NULL, err);
}
