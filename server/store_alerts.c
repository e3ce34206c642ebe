/* store_alerts.c — the SQL of alerts (srv_store.h): one alert's row, the
 * filtered keyset page of GET /alerts, and the triage transaction of PATCH
 * /alerts/{id} (update, reload, alert.updated into the webhook outbox). */
#include <stdlib.h>
#include <string.h>

#include "srv_history.h"
#include "srv_store.h"

#define TS_MS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
/* srv_alert_json reads the columns in this order. */
#define ALERT_COLUMNS                                                                                           \
    "a.id, a.state, s.identity::text, s.branch, a.metric, a.before_commit, a.after_commit, a.delta_ns, "        \
    "a.relative_change, a.ci_lower_ns, a.ci_upper_ns, array_to_json(a.baseline)::text, "                       \
    "array_to_json(a.candidate)::text, " TS_MS("a.created_at") ", " TS_MS("a.updated_at") ", a.note, a.updated_by"

static const char SQL_BEGIN[] = "BEGIN";
static const char SQL_COMMIT[] = "COMMIT";

static const char SQL_ALERT_ROW[] =
    "SELECT " ALERT_COLUMNS " FROM alerts a JOIN history_series s ON s.id = a.series_id WHERE a.id = $1::bigint";

static const char SQL_ALERTS_PAGE_FMT[] =
    "SELECT " ALERT_COLUMNS " FROM alerts a JOIN history_series s ON s.id = a.series_id "
    "WHERE true%s ORDER BY a.id DESC LIMIT %u";

/* The list filters: fixed fragments, values bound. */
static const struct {
    const char *lhs, *cast;
} ALERT_FILTERS[] = {
    [SRV_ALERTS_STATE] = {"a.state =", ""},
    [SRV_ALERTS_WORKLOAD] = {"s.identity->>'workload_id' =", ""},
    [SRV_ALERTS_BRANCH] = {"s.branch =", ""},
    [SRV_ALERTS_METRIC] = {"a.metric =", ""},
    [SRV_ALERTS_BEFORE_ID] = {"a.id <", "::bigint"},
};

static const char SQL_ALERT_TRIAGE[] =
    "UPDATE alerts SET state = $2, note = CASE WHEN $3::text IS NULL THEN note ELSE $3 END, "
    "updated_by = $4, updated_at = now() WHERE id = $1::bigint RETURNING id";

PGresult *srv_store_alert_row(PGconn *c, long long id, cg_error *err) {
    char ids[32];
    snprintf(ids, sizeof ids, "%lld", id);
    const char *q[1] = {ids};
    return srv_q(c, SQL_ALERT_ROW, 1, q, NULL, NULL, err);
}

PGresult *srv_store_alerts_page(srv_pool *p, const char *const filters[SRV_ALERTS_NFILTERS], unsigned limit,
                                cg_error *err) {
    const char *q[SRV_ALERTS_NFILTERS];
    int n = 0;
    cg_buf where = CG_BUF_INIT;
    for (int k = 0; k < SRV_ALERTS_NFILTERS; k++) {
        if (!filters[k]) continue;
        q[n++] = filters[k];
        cg_buf_printf(&where, " AND %s $%d%s", ALERT_FILTERS[k].lhs, n, ALERT_FILTERS[k].cast);
    }
    cg_buf sql = CG_BUF_INIT;
    cg_buf_printf(&sql, SQL_ALERTS_PAGE_FMT, where.data ? where.data : "", limit);
    cg_buf_free(&where);
    PGresult *x = srv_store_q(p, sql.data, n, q, NULL, err);
    cg_buf_free(&sql);
    return x;
}

int srv_store_alert_triage(srv_pool *p, long long id, const char *state, const char *note, const char *token_id,
                           cg_arena *a, cg_jv **alert, cg_error *err) {
    *alert = NULL;
    char ids[32];
    snprintf(ids, sizeof ids, "%lld", id);
    const char *q[4] = {ids, state, note, token_id};
    PGconn *c = srv_pool_get(p, err);
    if (!c) return -1;
    int rc = -1;
    PGresult *x = NULL;
    if (srv_exec(c, SQL_BEGIN, err) < 0 || !(x = srv_q(c, SQL_ALERT_TRIAGE, 4, q, NULL, NULL, err))) goto out;
    bool missing = PQntuples(x) == 0;
    PQclear(x);
    if (missing) {
        rc = 0;
        goto out;
    }
    cg_jv *aj = srv_alert_load(c, a, id, err);
    if (!aj || srv_webhook_enqueue(c, a, "alert.updated", id, aj, err) < 0 || srv_exec(c, SQL_COMMIT, err) < 0) goto out;
    *alert = aj;
    rc = 1;
out:
    srv_pool_put(p, c); /* rolls back what is still open */
    return rc;
}
