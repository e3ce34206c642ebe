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

#include "base/alloc.h"
#include "base/sha256.h"
#include "campaign/campaign.h"
#include "campaign/series.h"
#include "srv_compare.h"

typedef struct camp {
    cg_campaign_manifest m;
    const char *manifest_sha256, *created_at;
    cg_capture_state *states;            /* manifest order */
    const char **host, **device, **bundle_id; /* manifest order; NULL → null */
} camp;

int srv_campaign_published_ids(srv_req *r, const char *cid, const char ***ids, size_t *n, enum MHD_Result *res);

static const char *col(cg_arena *a, PGresult *x, int i, int j) {
    return PQgetisnull(x, i, j) ? NULL : cg_arena_strdup(a, PQgetvalue(x, i, j));
}

/* Backfills the facts of attached bundles that have none (no connection
 * held). 1 when any was, 0 when none needed it, -1 (err). */
static int backfill_rows(srv_req *r, srv_campaign_rows *rows, size_t n, cg_error *err) {
    int any = 0;
    for (size_t k = 0; k < n; k++)
        for (int i = 0; i < PQntuples(rows[k].captures); i++) {
            if (PQgetvalue(rows[k].captures, i, SRV_CAP_NEEDS_FACTS)[0] != 't') continue;
            if (srv_facts_backfill(r->s, PQgetvalue(rows[k].captures, i, SRV_CAP_BUNDLE), err) < 0) return -1;
            any = 1;
        }
    return any;
}

/* The stored rows of n campaigns, fetched through one pooled connection that
 * is returned before they are reconciled (build_campaign); bundles stored
 * before their facts existed are backfilled first. 1 = fetched (each
 * rows[k] to be consumed by build_campaign), 0 = answered (404/503). */
static int fetch_campaigns(srv_req *r, const char *const *ids, size_t n, srv_campaign_rows *rows,
                           enum MHD_Result *res) {
    for (int attempt = 0;; attempt++) {
        cg_error err = {0};
        int rc = srv_store_campaign_rows(r->s->pool, ids, n, rows, &err);
        if (rc == 0) *res = srv_fail(r, CG_R_NOT_FOUND, NULL, "no campaign %s", n == 1 ? ids[0] : "of this page");
        if (rc < 0) *res = srv_fail_unavailable(r, &err);
        if (rc != 1) return 0;
        int filled = attempt == 0 ? backfill_rows(r, rows, n, &err) : 0;
        if (filled == 0) return 1;
        for (size_t k = 0; k < n; k++) srv_store_campaign_rows_clear(&rows[k]);
        if (filled < 0) {
            *res = srv_fail_unavailable(r, &err);
            return 0;
        }
    }
}

/* The manifest index of capture row i: its stored position when that names
 * the same planned capture (always, for rows this server wrote), else a search. */
static size_t capture_index(const cg_campaign_manifest *m, PGresult *x, int i) {
    const char *name = PQgetvalue(x, i, SRV_CAP_NAME);
    size_t k = (size_t)strtoull(PQgetvalue(x, i, SRV_CAP_POSITION), NULL, 10);
    if (k < m->n_planned && !strcmp(m->planned[k].bundle, name)) return k;
    for (k = 0; k < m->n_planned && strcmp(m->planned[k].bundle, name) != 0; k++) {}
    return k;
}

/* Reconciles every planned capture from the fetched rows (consumes rows->caps).
 * 1 = built, 0 = answered (500). No connection is held. */
static int build_campaign(srv_req *r, const char *cid, srv_campaign_rows *rows, camp *out, enum MHD_Result *res) {
    cg_arena *a = &r->arena;
    memset(out, 0, sizeof *out);
    PGresult *x = rows->captures;
    const char *text = col(a, rows->campaign, 0, 0);
    out->manifest_sha256 = col(a, rows->campaign, 0, 1);
    out->created_at = col(a, rows->campaign, 0, 2);
    cg_error err = {0};
    int parsed = cg_campaign_manifest_parse(a, text, strlen(text), &out->m, &err);
    PQclear(rows->campaign);
    rows->campaign = rows->captures = NULL;
    if (parsed < 0) {
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
        if (!PQgetisnull(x, i, SRV_CAP_BUNDLE)) {
            int oc = cg_outcome_parse(PQgetvalue(x, i, SRV_CAP_OUTCOME));
            cg_capture_state_from_facts(a, &out->m, &out->m.planned[k], PQgetvalue(x, i, SRV_CAP_ENTRYPOINT),
                                        strtoull(PQgetvalue(x, i, SRV_CAP_STEP), NULL, 10),
                                        oc < 0 ? CG_OUTCOME_FAILED : (cg_outcome)oc, col(a, x, i, 6),
                                        PQgetvalue(x, i, SRV_CAP_RUN_ID), PQgetvalue(x, i, SRV_CAP_BUNDLE), st);
            out->bundle_id[k] = col(a, x, i, 1);
            out->host[k] = col(a, x, i, 7);
            out->device[k] = col(a, x, i, 8);
        } else if (!PQgetisnull(x, i, SRV_CAP_FAILED_MESSAGE)) {
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

/* Fetches (connection returned first) and reconciles. 1 = loaded, 0 = answered. */
static int load_campaign(srv_req *r, const char *cid, camp *out, enum MHD_Result *res) {
    srv_campaign_rows rows;
    const char *ids[1] = {cid};
    return fetch_campaigns(r, ids, 1, &rows, res) && build_campaign(r, cid, &rows, out, res);
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
    cg_free(order);
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

int srv_campaign_published_ids(srv_req *r, const char *cid, const char ***ids, size_t *n, enum MHD_Result *res) {
    camp cp;
    if (!load_campaign(r, cid, &cp, res)) return 0;
    size_t *order = cg_campaign_step_order(&cp.m);
    *ids = cg_arena_zalloc(&r->arena, (cp.m.n_planned + 1) * sizeof **ids);
    *n = 0;
    for (size_t k = 0; k < cp.m.n_planned; k++)
        if (cp.states[order[k]].kind == CG_CAPTURE_PUBLISHED) (*ids)[(*n)++] = cp.bundle_id[order[k]];
    cg_free(order);
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

    /* every planned capture in one statement (position = manifest order) */
    cg_buf rows = CG_BUF_INIT;
    cg_buf_putc(&rows, '[');
    for (size_t i = 0; i < m.n_planned; i++) {
        cg_buf_printf(&rows, "%s{\"n\":", i ? "," : "");
        cg_json_write_str(&rows, m.planned[i].bundle, strlen(m.planned[i].bundle));
        cg_buf_printf(&rows, ",\"s\":%" PRIu64 ",\"p\":%zu}", m.planned[i].capture_step, i);
    }
    cg_buf_putc(&rows, ']');
    unsigned status = 0;
    int rc = srv_store_campaign_put(r->s->pool, cid, text, sha, rows.data, &status, &err);
    cg_buf_free(&rows);
    if (rc < 0) return srv_fail_unavailable(r, &err);
    if (status == 409) {
        cg_jv *d = cg_jv_obj(a);
        cg_jv_obj_put(a, d, "campaign_id", cg_jv_str(a, cid));
        return srv_fail(r, CG_R_CAMPAIGN_CONFLICT, d, "campaign %s already exists with a different manifest", cid);
    }
    camp cp;
    enum MHD_Result res;
    if (!load_campaign(r, cid, &cp, &res)) return res;
    srv_log("info", status == 201 ? "campaign created" : "campaign already exists", "request_id", r->id, "campaign_id",
            cid, NULL);
    return srv_reply_json(r, status, campaign_json(a, &cp));
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
    PGresult *x = srv_store_campaign_ids(r->s->pool, cursor, (unsigned)limit + 1, &err);
    if (!x) return srv_fail_unavailable(r, &err);
    int rows = PQntuples(x), shown = rows > (int)limit ? (int)limit : rows;
    const char **ids = cg_arena_zalloc(a, ((size_t)shown + 1) * sizeof *ids);
    srv_campaign_rows *raw = cg_arena_zalloc(a, ((size_t)shown + 1) * sizeof *raw);
    for (int i = 0; i < shown; i++) ids[i] = cg_arena_strdup(a, PQgetvalue(x, i, 0));
    PQclear(x);
    enum MHD_Result res = MHD_YES;
    int fetched = shown == 0 || fetch_campaigns(r, ids, (size_t)shown, raw, &res) ? shown : 0;
    bool ok = fetched == shown;
    cg_jv *items = cg_jv_arr(a);
    for (int i = 0; i < fetched; i++) {
        camp cp;
        if (!ok) {
            srv_store_campaign_rows_clear(&raw[i]);
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
    if (load_campaign(r, r->params[0], &cp, &res)) res = fn(r, &cp);
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
    if (!srv_facts_load(r, "series_point", ids, n, texts, &res)) return res; /* no connection held from here */
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
        cg_free(order);
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
    cg_free(order);
    return series_of(r, ids, names, n);
}

enum MHD_Result srv_h_campaign_get(srv_req *r) { return with_campaign(r, get_one); }
enum MHD_Result srv_h_campaign_status(srv_req *r) { return with_campaign(r, get_status); }
enum MHD_Result srv_h_campaign_series(srv_req *r) { return with_campaign(r, get_series); }

enum MHD_Result srv_h_series(srv_req *r) {
    srv_cohort co;
    enum MHD_Result res;
    int ok = srv_cohort_resolve(r, "bundles", srv_query(r, "bundles"), NULL, &co, &res);
    return ok ? series_of(r, co.ids, co.given, co.n) : res;
}
