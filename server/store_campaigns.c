/* store_campaigns.c — the SQL of campaigns (srv_store.h): the stored plan,
 * the per-capture state rows campaign-status reconciles, the page of ids, and
 * the create-or-compare transaction of PUT /campaigns/{id}. */
#include <inttypes.h>
#include <string.h>

#include "srv_store.h"

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"

static const char SQL_BEGIN[] = "BEGIN";
static const char SQL_COMMIT[] = "COMMIT";

static const char SQL_CAMPAIGN_ROW[] =
    "SELECT manifest::text, manifest_sha256, " TS("created_at") " FROM campaigns WHERE campaign_id = $1";

/* One row per planned capture, by position: the newest stored bundle attached
 * to it (with its facts) and the newest rejected upload for it. Column order:
 * SRV_CAP_* (srv_store.h). */
static const char SQL_CAPTURE_ROWS[] =
    "SELECT cc.name, b.id, b.run_id, b.entrypoint, b.capture_step, b.outcome, f.terminal_reason, b.host, "
    "b.device, fa.message, fa.host, fa.device, (b.id IS NOT NULL AND f.bundle_id IS NULL), cc.position "
    "FROM campaign_captures cc "
    "LEFT JOIN LATERAL (SELECT y.id, y.run_id, y.entrypoint, y.capture_step, y.outcome, y.host, y.device "
    "  FROM bundles y WHERE y.campaign_id = cc.campaign_id AND y.planned_name = cc.name "
    "  ORDER BY y.seq DESC LIMIT 1) b ON true "
    "LEFT JOIN bundle_facts f ON f.bundle_id = b.id "
    "LEFT JOIN LATERAL (SELECT ua.message, ua.host, ua.device FROM upload_attempts ua "
    "  WHERE ua.campaign_id = cc.campaign_id AND ua.planned_name = cc.name "
    "  AND ua.state = 'verification_failed' ORDER BY ua.id DESC LIMIT 1) fa ON true "
    "WHERE cc.campaign_id = $1 ORDER BY cc.position";

static const char SQL_CAMPAIGN_IDS[] =
    "SELECT campaign_id FROM campaigns WHERE campaign_id COLLATE \"C\" > $1 COLLATE \"C\" "
    "ORDER BY campaign_id COLLATE \"C\" LIMIT $2::int";

static const char SQL_CAMPAIGN_INSERT[] =
    "INSERT INTO campaigns (campaign_id, manifest, manifest_sha256) VALUES ($1, $2::jsonb, $3) "
    "ON CONFLICT (campaign_id) DO NOTHING";

static const char SQL_CAPTURES_INSERT[] =
    "INSERT INTO campaign_captures (campaign_id, name, position, planned) SELECT $1, r.n, r.p, "
    "jsonb_build_object('capture_step', r.s, 'bundle', r.n) FROM json_to_recordset($2::json) AS "
    "r(n text, s numeric, p int)";

static const char SQL_CAMPAIGN_SHA[] = "SELECT manifest_sha256 FROM campaigns WHERE campaign_id = $1";

static const char SQL_CAPTURE_EXISTS[] = "SELECT 1 FROM campaign_captures WHERE campaign_id = $1 AND name = $2";

static int fetch_rows(PGconn *c, const char *cid, srv_campaign_rows *out, cg_error *err) {
    const char *p[1] = {cid};
    out->campaign = srv_q(c, SQL_CAMPAIGN_ROW, 1, p, NULL, NULL, err);
    if (!out->campaign) return -1;
    if (PQntuples(out->campaign) == 0) return 0;
    out->captures = srv_q(c, SQL_CAPTURE_ROWS, 1, p, NULL, NULL, err);
    return out->captures ? 1 : -1;
}

int srv_store_campaign_rows(srv_pool *p, const char *const *ids, size_t n, srv_campaign_rows *out, cg_error *err) {
    memset(out, 0, n * sizeof *out);
    PGconn *c = srv_pool_get(p, err);
    if (!c) return -1;
    int rc = 1;
    for (size_t i = 0; i < n && rc == 1; i++) rc = fetch_rows(c, ids[i], &out[i], err);
    srv_pool_put(p, c);
    if (rc == 1) return 1;
    for (size_t i = 0; i < n; i++) srv_store_campaign_rows_clear(&out[i]);
    return rc;
}

void srv_store_campaign_rows_clear(srv_campaign_rows *rows) {
    PQclear(rows->campaign);
    PQclear(rows->captures);
    rows->campaign = rows->captures = NULL;
}

PGresult *srv_store_campaign_ids(srv_pool *p, const char *after, unsigned limit, cg_error *err) {
    char lim[16];
    snprintf(lim, sizeof lim, "%u", limit);
    const char *q[2] = {after ? after : "", lim};
    return srv_store_q(p, SQL_CAMPAIGN_IDS, 2, q, NULL, err);
}

int srv_store_campaign_put(srv_pool *p, const char *cid, const char *manifest, const char *sha,
                           const char *captures_json, unsigned *status, cg_error *err) {
    PGconn *c = srv_pool_get(p, err);
    if (!c) return -1;
    const char *q[3] = {cid, manifest, sha};
    PGresult *x = NULL;
    int rc = -1;
    if (srv_exec(c, SQL_BEGIN, err) < 0 || !(x = srv_q(c, SQL_CAMPAIGN_INSERT, 3, q, NULL, NULL, err))) goto out;
    bool inserted = strcmp(PQcmdTuples(x), "1") == 0;
    PQclear(x);
    if (inserted) {
        const char *qc[2] = {cid, captures_json};
        if (!(x = srv_q(c, SQL_CAPTURES_INSERT, 2, qc, NULL, NULL, err))) goto out;
        *status = 201;
    } else {
        if (!(x = srv_q(c, SQL_CAMPAIGN_SHA, 1, q, NULL, NULL, err))) goto out;
        *status = PQntuples(x) == 1 && strcmp(PQgetvalue(x, 0, 0), sha) == 0 ? 200 : 409;
    }
    PQclear(x);
    rc = srv_exec(c, SQL_COMMIT, err);
out:
    srv_pool_put(p, c); /* rolls back an open transaction */
    return rc;
}

int srv_store_capture_exists(srv_pool *p, const char *cid, const char *name, cg_error *err) {
    const char *q[2] = {cid, name};
    PGresult *x = srv_store_q(p, SQL_CAPTURE_EXISTS, 2, q, NULL, err);
    if (!x) return -1;
    int n = PQntuples(x) > 0;
    PQclear(x);
    return n;
}
