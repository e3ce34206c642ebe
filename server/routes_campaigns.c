/* routes_campaigns.c — campaigns (campaign/1 plans) and series from the index:
 * PUT /campaigns/{id} (201 new, 200 identical, 409 campaign_conflict),
 * GET /campaigns, /campaigns/{id}, /campaigns/{id}/status (campaign-status/1
 * with each capture's host/device), /campaigns/{id}/series and GET /series.
 *
 * A planned capture's state comes from the newest stored bundle attached to it
 * (steps 4–7 of the reconciliation from its stored facts); with none, from the
 * newest rejected upload for it (verification_failed with the rejection
 * message); else missing. A stored bundle therefore replaces an earlier
 * rejected upload, and a later rejected upload never hides a stored bundle
 * (as on disk, where a failed publication leaves the published bundle alone). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"
#include "campaign/campaign.h"
#include "campaign/series.h"
#include "srv_compare.h"

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"

typedef struct camp {
    cg_campaign_manifest m;
    const char *manifest_sha256, *created_at;
    cg_capture_state *states;            /* manifest order */
    const char **host, **device, **bundle_id; /* manifest order; NULL → null */
} camp;

int srv_campaign_published_ids(srv_req *r, PGconn *c, const char *cid, const char ***ids, size_t *n,
                               enum MHD_Result *res);

static const char *col(cg_arena *a, PGresult *x, int i, int j) {
    return PQgetisnull(x, i, j) ? NULL : cg_arena_strdup(a, PQgetvalue(x, i, j));
}

/* The index rows of one campaign, fetched through a pooled connection that is
 * returned before they are reconciled (build_campaign). */
typedef struct camp_rows {
    const char *text, *sha, *created; /* stored manifest (arena) */
    PGresult *caps;                   /* one row per planned capture, by position */
} camp_rows;

/* 1 = fetched (rows->caps to be consumed by build_campaign), 0 = answered (404/503). */
static int fetch_campaign(srv_req *r, PGconn *c, const char *cid, camp_rows *rows, enum MHD_Result *res) {
    cg_arena *a = &r->arena;
    memset(rows, 0, sizeof *rows);
    cg_error err = {0};
    const char *p[1] = {cid};
    PGresult *x = srv_q(c, "SELECT manifest::text, manifest_sha256, " TS("created_at") " FROM campaigns WHERE campaign_id = $1",
                        1, p, NULL, NULL, &err);
    if (!x) {
        *res = srv_fail_unavailable(r, &err);
        return 0;
    }
    if (PQntuples(x) == 0) {
        PQclear(x);
        *res = srv_fail(r, CG_R_NOT_FOUND, NULL, "no campaign %s", cid);
        return 0;
    }
    rows->text = col(a, x, 0, 0);
    rows->sha = col(a, x, 0, 1);
    rows->created = col(a, x, 0, 2);
    PQclear(x);
    for (int attempt = 0; attempt < 2; attempt++) {
        x = srv_q(c,
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
                  "WHERE cc.campaign_id = $1 ORDER BY cc.position",
                  1, p, NULL, NULL, &err);
        if (!x) {
            *res = srv_fail_unavailable(r, &err);
            return 0;
        }
        bool backfilled = false;
        for (int i = 0; i < PQntuples(x) && attempt == 0; i++)
            if (PQgetvalue(x, i, 12)[0] == 't') {
                if (srv_facts_backfill(r->s, c, PQgetvalue(x, i, 1), &err) < 0) {
                    PQclear(x);
                    *res = srv_fail_unavailable(r, &err);
                    return 0;
                }
                backfilled = true;
            }
        if (!backfilled) break;
        PQclear(x);
    }
    rows->caps = x;
    return 1;
}

/* The manifest index of capture row i: its stored position when that names
 * the same planned capture (always, for rows this server wrote), else a search. */
static size_t capture_index(const cg_campaign_manifest *m, PGresult *x, int i) {
    const char *name = PQgetvalue(x, i, 0);
    size_t k = (size_t)strtoull(PQgetvalue(x, i, 13), NULL, 10);
    if (k < m->n_planned && !strcmp(m->planned[k].bundle, name)) return k;
    for (k = 0; k < m->n_planned && strcmp(m->planned[k].bundle, name) != 0; k++) {}
    return k;
}

/* Reconciles every planned capture from the fetched rows (consumes rows->caps).
 * 1 = built, 0 = answered (500). No connection is held. */
static int build_campaign(srv_req *r, const char *cid, camp_rows *rows, camp *out, enum MHD_Result *res) {
    cg_arena *a = &r->arena;
    memset(out, 0, sizeof *out);
    PGresult *x = rows->caps;
    rows->caps = NULL;
    cg_error err = {0};
    out->manifest_sha256 = rows->sha;
    out->created_at = rows->created;
    if (cg_campaign_manifest_parse(a, rows->text, strlen(rows->text), &out->m, &err) < 0) {
        PQclear(x);
        srv_log("error", "stored campaign manifest unreadable", "campaign_id", cid, "error", err.msg, NULL);
        *res = srv_fail(r, CG_R_INTERNAL, NULL, "the stored manifest of campaign %s is unreadable", cid);
        return 0;
    }
    size_t n = out->m.n_planned;
    out->states = cg_arena_zalloc(a, (n + 1) * sizeof *out->states);
    out->host = cg_arena_zalloc(a, (n + 1) * sizeof *out->host);
    out->device = cg_arena_zalloc(a, (n + 1) * sizeof *out->device);
    out->bundle_id = cg_arena_zalloc(a, (n + 1) * sizeof *out->bundle_id);
    for (int i = 0; i < PQntuples(x); i++) {
        size_t k = capture_index(&out->m, x, i);
        if (k == n) continue;
        cg_capture_state *st = &out->states[k];
        if (!PQgetisnull(x, i, 1)) {
            int oc = cg_outcome_parse(PQgetvalue(x, i, 5));
            cg_capture_state_from_facts(a, &out->m, &out->m.planned[k], PQgetvalue(x, i, 3),
                                        strtoull(PQgetvalue(x, i, 4), NULL, 10),
                                        oc < 0 ? CG_OUTCOME_FAILED : (cg_outcome)oc, col(a, x, i, 6),
                                        PQgetvalue(x, i, 2), PQgetvalue(x, i, 1), st);
            out->bundle_id[k] = col(a, x, i, 1);
            out->host[k] = col(a, x, i, 7);
            out->device[k] = col(a, x, i, 8);
        } else if (!PQgetisnull(x, i, 9)) {
            st->kind = CG_CAPTURE_VERIFICATION_FAILED;
            st->message = col(a, x, i, 9);
            out->host[k] = col(a, x, i, 10);
            out->device[k] = col(a, x, i, 11);
        } else {
            st->kind = CG_CAPTURE_MISSING;
        }
    }
    PQclear(x);
    return 1;
}

/* Fetches through c (kept) and reconciles. 1 = loaded, 0 = answered. */
static int load_campaign(srv_req *r, PGconn *c, const char *cid, camp *out, enum MHD_Result *res) {
    camp_rows rows;
    return fetch_campaign(r, c, cid, &rows, res) && build_campaign(r, cid, &rows, out, res);
}

/* Takes a pooled connection for the statements only, then reconciles. */
static int load_campaign_pooled(srv_req *r, const char *cid, camp *out, enum MHD_Result *res) {
    cg_error err = {0};
    PGconn *c = srv_pool_get(r->s->pool, &err);
    if (!c) {
        *res = srv_fail_unavailable(r, &err);
        return 0;
    }
    camp_rows rows;
    int ok = fetch_campaign(r, c, cid, &rows, res);
    srv_pool_put(r->s->pool, c);
    return ok && build_campaign(r, cid, &rows, out, res);
}

static cg_jv *str_or_null(cg_arena *a, const char *s) { return s ? cg_jv_str(a, s) : cg_jv_null(a); }

/* campaign-status/1 plus host/device on every capture. */
static cg_jv *status_json(cg_arena *a, const camp *cp) {
    cg_jv *o = cg_campaign_status_from_states(a, &cp->m, cp->states);
    cg_jv *caps = cg_jv_get(o, "captures");
    size_t *order = cg_campaign_step_order(&cp->m);
    for (size_t k = 0; k < cg_jv_len(caps); k++) {
        cg_jv *c = cg_jv_at(caps, k);
        cg_jv_obj_put(a, c, "host", str_or_null(a, cp->host[order[k]]));
        cg_jv_obj_put(a, c, "device", str_or_null(a, cp->device[order[k]]));
    }
    free(order);
    return o;
}

static cg_jv *campaign_json(cg_arena *a, const camp *cp) {
    uint64_t pub = 0, miss = 0;
    for (size_t i = 0; i < cp->m.n_planned; i++) {
        pub += cp->states[i].kind == CG_CAPTURE_PUBLISHED;
        miss += cp->states[i].kind == CG_CAPTURE_MISSING;
    }
    cg_jv *o = cg_jv_obj(a), *counts = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "campaign_id", cg_jv_str(a, cp->m.campaign_id));
    cg_jv_obj_put(a, o, "manifest", cg_campaign_manifest_to_json(a, &cp->m));
    cg_jv_obj_put(a, o, "manifest_sha256", cg_jv_str(a, cp->manifest_sha256));
    cg_jv_obj_put(a, o, "created_at", str_or_null(a, cp->created_at));
    cg_jv_obj_put(a, counts, "planned", cg_jv_u64(a, cp->m.n_planned));
    cg_jv_obj_put(a, counts, "published", cg_jv_u64(a, pub));
    cg_jv_obj_put(a, counts, "missing", cg_jv_u64(a, miss));
    cg_jv_obj_put(a, counts, "failed", cg_jv_u64(a, cp->m.n_planned - pub - miss));
    cg_jv_obj_put(a, o, "counts", counts);
    cg_jv *links = cg_jv_obj(a);
    cg_jv_obj_put(a, links, "self", cg_jv_str(a, cg_arena_printf(a, "/campaigns/%s", cp->m.campaign_id)));
    cg_jv_obj_put(a, links, "status", cg_jv_str(a, cg_arena_printf(a, "/campaigns/%s/status", cp->m.campaign_id)));
    cg_jv_obj_put(a, links, "series", cg_jv_str(a, cg_arena_printf(a, "/campaigns/%s/series", cp->m.campaign_id)));
    cg_jv_obj_put(a, o, "links", links);
    return o;
}

int srv_campaign_published_ids(srv_req *r, PGconn *c, const char *cid, const char ***ids, size_t *n,
                               enum MHD_Result *res) {
    camp cp;
    if (!load_campaign(r, c, cid, &cp, res)) return 0;
    size_t *order = cg_campaign_step_order(&cp.m);
    *ids = cg_arena_zalloc(&r->arena, (cp.m.n_planned + 1) * sizeof **ids);
    *n = 0;
    for (size_t k = 0; k < cp.m.n_planned; k++)
        if (cp.states[order[k]].kind == CG_CAPTURE_PUBLISHED) (*ids)[(*n)++] = cp.bundle_id[order[k]];
    free(order);
    return 1;
}

/* ------------------------------------------------------------ PUT /campaigns/{id} */

enum MHD_Result srv_h_campaign_put(srv_req *r) {
    cg_arena *a = &r->arena;
    const char *cid = r->params[0];
    cg_json_limits lim;
    cg_json_limits_default(&lim);
    lim.max_depth = 8;
    cg_error err = {0};
    if (!strcmp(cid, ".") || !strcmp(cid, "..")) {
        cg_jv *d = cg_jv_obj(a);
        cg_jv_obj_put(a, d, "parameter", cg_jv_str(a, "campaign_id"));
        return srv_fail(r, CG_R_INVALID_PARAMETER, d, "a campaign id cannot be \".\" or \"..\"");
    }
    cg_jv *doc = r->body.len ? cg_json_parse(a, r->body.data, r->body.len, &lim, &err) : NULL;
    if (!doc)
        return srv_fail(r, CG_R_MALFORMED_JSON, NULL, "the body is not a JSON document%s%s", err.msg[0] ? ": " : "",
                        err.msg);
    const char *dup = srv_json_dup_key(doc);
    if (dup) return srv_fail_dup_key(r, dup);
    cg_campaign_manifest m;
    if (cg_campaign_manifest_parse(a, r->body.data, r->body.len, &m, &err) < 0) return srv_fail_error(r, &err, NULL);
    if (strcmp(m.campaign_id, cid) != 0)
        return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "the manifest's campaign_id %s differs from the URL's %s",
                        m.campaign_id, cid);
    if (m.n_planned > SRV_MAX_PLANNED_CAPTURES) {
        cg_jv *d = cg_jv_obj(a);
        cg_jv_obj_put(a, d, "limit", cg_jv_str(a, "planned_captures"));
        cg_jv_obj_put(a, d, "max", cg_jv_u64(a, SRV_MAX_PLANNED_CAPTURES));
        return srv_fail(r, CG_R_PAYLOAD_TOO_LARGE, d, "a campaign plans at most %d captures (this one plans %zu)",
                        SRV_MAX_PLANNED_CAPTURES, m.n_planned);
    }
    cg_buf canon = CG_BUF_INIT;
    cg_json_write(&canon, cg_campaign_manifest_to_json(a, &m), false);
    char sha[65];
    cg_sha256_hex(canon.data, canon.len, sha);
    const char *text = cg_arena_strndup(a, canon.data, canon.len);
    cg_buf_free(&canon);

    PGconn *c = srv_pool_get(r->s->pool, &err);
    if (!c) return srv_fail_unavailable(r, &err);
    unsigned status = 0;
    const char *p[3] = {cid, text, sha};
    PGresult *x = NULL;
    if (srv_exec(c, "BEGIN", &err) < 0) goto dberr;
    x = srv_q(c,
              "INSERT INTO campaigns (campaign_id, manifest, manifest_sha256) VALUES ($1, $2::jsonb, $3) "
              "ON CONFLICT (campaign_id) DO NOTHING",
              3, p, NULL, NULL, &err);
    if (!x) goto dberr;
    bool inserted = strcmp(PQcmdTuples(x), "1") == 0;
    PQclear(x);
    if (inserted) {
        /* every planned capture in one statement (position = manifest order) */
        cg_buf rows = CG_BUF_INIT;
        cg_buf_putc(&rows, '[');
        for (size_t i = 0; i < m.n_planned; i++) {
            cg_buf_printf(&rows, "%s{\"n\":", i ? "," : "");
            cg_json_write_str(&rows, m.planned[i].bundle, strlen(m.planned[i].bundle));
            cg_buf_printf(&rows, ",\"s\":%" PRIu64 ",\"p\":%zu}", m.planned[i].capture_step, i);
        }
        cg_buf_putc(&rows, ']');
        const char *q[2] = {cid, cg_arena_strndup(a, rows.data, rows.len)};
        cg_buf_free(&rows);
        x = srv_q(c,
                  "INSERT INTO campaign_captures (campaign_id, name, position, planned) SELECT $1, r.n, r.p, "
                  "jsonb_build_object('capture_step', r.s, 'bundle', r.n) FROM json_to_recordset($2::json) AS "
                  "r(n text, s numeric, p int)",
                  2, q, NULL, NULL, &err);
        if (!x) goto dberr;
        PQclear(x);
        status = 201;
    } else {
        x = srv_q(c, "SELECT manifest_sha256 FROM campaigns WHERE campaign_id = $1", 1, p, NULL, NULL, &err);
        if (!x) goto dberr;
        status = PQntuples(x) == 1 && strcmp(PQgetvalue(x, 0, 0), sha) == 0 ? 200 : 409;
        PQclear(x);
    }
    if (srv_exec(c, "COMMIT", &err) < 0) goto dberr;
    if (status == 409) {
        srv_pool_put(r->s->pool, c);
        cg_jv *d = cg_jv_obj(a);
        cg_jv_obj_put(a, d, "campaign_id", cg_jv_str(a, cid));
        return srv_fail(r, CG_R_CAMPAIGN_CONFLICT, d, "campaign %s already exists with a different manifest", cid);
    }
    srv_pool_put(r->s->pool, c);
    camp cp;
    enum MHD_Result res;
    if (!load_campaign_pooled(r, cid, &cp, &res)) return res;
    srv_log("info", status == 201 ? "campaign created" : "campaign already exists", "request_id", r->id, "campaign_id",
            cid, NULL);
    return srv_reply_json(r, status, campaign_json(a, &cp));
dberr:
    srv_pool_put(r->s->pool, c);
    return srv_fail_unavailable(r, &err);
}

/* ------------------------------------------------------------ reads */

/* GET /campaigns?limit=&cursor=: a page of campaigns by id (byte order);
 * next_cursor is the last id of a full page. The rows of the whole page are
 * fetched first and the connection returned before any is reconciled. */
enum MHD_Result srv_h_campaigns_list(srv_req *r) {
    cg_arena *a = &r->arena;
    unsigned long limit = 100;
    const char *ls = srv_query(r, "limit");
    if (ls) {
        char *end = NULL;
        limit = strtoul(ls, &end, 10);
        if (!*ls || *end || ls[0] == '-' || limit < 1 || limit > 500)
            return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "limit must be an integer from 1 to 500");
    }
    const char *cursor = srv_query(r, "cursor");
    cg_error err = {0};
    PGconn *c = srv_pool_get(r->s->pool, &err);
    if (!c) return srv_fail_unavailable(r, &err);
    const char *p[2] = {cursor ? cursor : "", cg_arena_printf(a, "%lu", limit + 1)};
    PGresult *x = srv_q(c,
                        "SELECT campaign_id FROM campaigns WHERE campaign_id COLLATE \"C\" > $1 COLLATE \"C\" "
                        "ORDER BY campaign_id COLLATE \"C\" LIMIT $2::int",
                        2, p, NULL, NULL, &err);
    if (!x) {
        srv_pool_put(r->s->pool, c);
        return srv_fail_unavailable(r, &err);
    }
    int rows = PQntuples(x), shown = rows > (int)limit ? (int)limit : rows;
    const char **ids = cg_arena_zalloc(a, ((size_t)shown + 1) * sizeof *ids);
    camp_rows *raw = cg_arena_zalloc(a, ((size_t)shown + 1) * sizeof *raw);
    for (int i = 0; i < shown; i++) ids[i] = cg_arena_strdup(a, PQgetvalue(x, i, 0));
    PQclear(x);
    enum MHD_Result res = MHD_YES;
    int fetched = 0;
    while (fetched < shown && fetch_campaign(r, c, ids[fetched], &raw[fetched], &res)) fetched++;
    srv_pool_put(r->s->pool, c);
    bool ok = fetched == shown;
    cg_jv *items = cg_jv_arr(a);
    for (int i = 0; i < fetched; i++) {
        camp cp;
        if (!ok) {
            PQclear(raw[i].caps);
        } else if (!build_campaign(r, ids[i], &raw[i], &cp, &res)) {
            ok = false;
        } else {
            cg_jv_arr_push(a, items, campaign_json(a, &cp));
        }
    }
    if (!ok) return res;
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "items", items);
    cg_jv_obj_put(a, o, "next_cursor", rows > (int)limit ? cg_jv_str(a, ids[shown - 1]) : cg_jv_null(a));
    return srv_reply_json(r, 200, o);
}

/* Runs one campaign read: loads it (connection returned first), then `fn`
 * builds the answer. */
static enum MHD_Result with_campaign(srv_req *r, enum MHD_Result (*fn)(srv_req *, camp *)) {
    camp cp;
    enum MHD_Result res;
    if (load_campaign_pooled(r, r->params[0], &cp, &res)) res = fn(r, &cp);
    return res;
}

static enum MHD_Result get_one(srv_req *r, camp *cp) {
    return srv_reply_json(r, 200, campaign_json(&r->arena, cp));
}

static enum MHD_Result get_status(srv_req *r, camp *cp) {
    return srv_reply_json(r, 200, status_json(&r->arena, cp));
}

/* series/1 over ids (display names `names`), in the given order. */
static enum MHD_Result series_of(srv_req *r, const char *const *ids, const char *const *names, size_t n) {
    cg_arena *a = &r->arena;
    enum MHD_Result res;
    const char **texts = cg_arena_zalloc(a, (n + 1) * sizeof *texts);
    cg_error e0 = {0};
    PGconn *c = srv_pool_get(r->s->pool, &e0);
    if (!c) return srv_fail_unavailable(r, &e0);
    int loaded = srv_facts_load(r, c, "series_point", ids, n, texts, &res);
    srv_pool_put(r->s->pool, c); /* returned before the series is computed */
    if (!loaded) return res;
    cg_series_point *pts = cg_arena_zalloc(a, (n + 1) * sizeof *pts);
    cg_json_limits lim;
    cg_json_limits_default(&lim);
    for (size_t i = 0; i < n; i++) {
        cg_error err = {0};
        cg_jv *v = cg_json_parse(a, texts[i], strlen(texts[i]), &lim, &err);
        if (!v || cg_series_point_from_json(a, v, &pts[i], &err) < 0) {
            srv_log("error", "stored series point unreadable", "id", ids[i], "error", err.msg, NULL);
            return srv_fail(r, CG_R_INTERNAL, NULL, "stored series facts of %s are unreadable", ids[i]);
        }
        pts[i].bundle = names[i];
    }
    cg_error err = {0};
    cg_jv *out = cg_build_series_from_points(a, pts, n, srv_query(r, "label_prefix"), &err);
    if (!out) return srv_fail_error(r, &err, NULL);
    return srv_reply_json(r, 200, out);
}

static enum MHD_Result get_series(srv_req *r, camp *cp) {
    cg_arena *a = &r->arena;
    cg_error err = {0};
    if (cg_campaign_require_published(&cp->m, cp->states, &err) < 0) {
        size_t *order = cg_campaign_step_order(&cp->m);
        cg_jv *d = cg_jv_obj(a), *np = cg_jv_arr(a);
        for (size_t k = 0; k < cp->m.n_planned; k++) {
            const cg_capture_state *st = &cp->states[order[k]];
            if (st->kind == CG_CAPTURE_PUBLISHED) continue;
            cg_jv *o = cg_jv_obj(a);
            cg_jv_obj_put(a, o, "capture_step", cg_jv_u64(a, cp->m.planned[order[k]].capture_step));
            cg_jv_obj_put(a, o, "bundle", cg_jv_str(a, cp->m.planned[order[k]].bundle));
            cg_jv_obj_put(a, o, "state", cg_jv_str(a, cg_capture_state_name(st->kind)));
            cg_jv_arr_push(a, np, o);
        }
        free(order);
        cg_jv_obj_put(a, d, "not_published", np);
        return srv_fail_error(r, &err, d);
    }
    size_t n = cp->m.n_planned;
    size_t *order = cg_campaign_step_order(&cp->m);
    const char **ids = cg_arena_zalloc(a, (n + 1) * sizeof *ids), **names = cg_arena_zalloc(a, (n + 1) * sizeof *names);
    for (size_t k = 0; k < n; k++) {
        ids[k] = cp->bundle_id[order[k]];
        names[k] = cp->m.planned[order[k]].bundle;
    }
    free(order);
    return series_of(r, ids, names, n);
}

enum MHD_Result srv_h_campaign_get(srv_req *r) { return with_campaign(r, get_one); }
enum MHD_Result srv_h_campaign_status(srv_req *r) { return with_campaign(r, get_status); }
enum MHD_Result srv_h_campaign_series(srv_req *r) { return with_campaign(r, get_series); }

enum MHD_Result srv_h_series(srv_req *r) {
    cg_error err = {0};
    PGconn *c = srv_pool_get(r->s->pool, &err);
    if (!c) return srv_fail_unavailable(r, &err);
    srv_cohort co;
    enum MHD_Result res;
    int ok = srv_cohort_resolve(r, c, "bundles", srv_query(r, "bundles"), NULL, &co, &res);
    srv_pool_put(r->s->pool, c);
    return ok ? series_of(r, co.ids, co.given, co.n) : res;
}
