/* routes_webhooks.c — POST/GET /webhooks, DELETE /webhooks/{id},
 * GET /webhooks/{id}/deliveries (admin scope). Secrets are never answered. */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "srv_history.h"

static bool known_event(const char *e) { return !strcmp(e, "alert.opened") || !strcmp(e, "alert.updated"); }

enum MHD_Result srv_h_webhooks_create(srv_req *r) {
    cg_arena *a = &r->arena;
    cg_json_limits lim;
    cg_json_limits_default(&lim);
    lim.max_depth = 4;
    cg_error err = {0};
    cg_jv *v = r->body.len ? cg_json_parse(a, r->body.data, r->body.len, &lim, &err) : NULL;
    if (!v) return srv_fail(r, CG_R_MALFORMED_JSON, NULL, "the body is not a JSON document");
    const char *url = cg_jv_as_str(cg_jv_get(v, "url")), *secret = cg_jv_as_str(cg_jv_get(v, "secret"));
    const cg_jv *ev = cg_jv_get(v, "events");
    if (v->type != CG_JOBJ || !url || !secret || !ev || ev->type != CG_JARR || cg_jv_len(ev) == 0)
        return srv_fail(r, CG_R_BAD_REQUEST, NULL, "the body must be {\"url\", \"secret\", \"events\": [...]}");
    if ((strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) || strlen(url) > 2048)
        return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "url must be an http:// or https:// URL (≤ 2048 bytes)");
    if (!*secret || strlen(secret) > 1024)
        return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "secret must be 1 to 1024 bytes");
    cg_buf arr = CG_BUF_INIT;
    cg_buf_putc(&arr, '{');
    for (size_t i = 0; i < cg_jv_len(ev); i++) {
        const char *e = cg_jv_as_str(cg_jv_at(ev, i));
        if (!e || !known_event(e)) {
            cg_buf_free(&arr);
            return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "events must be alert.opened and/or alert.updated");
        }
        cg_buf_printf(&arr, "%s%s", i ? "," : "", e);
    }
    cg_buf_putc(&arr, '}');
    unsigned char rnd[12];
    randombytes_buf(rnd, sizeof rnd);
    char hex[25];
    sodium_bin2hex(hex, sizeof hex, rnd, sizeof rnd);
    const char *id = cg_arena_printf(a, "wh_%s", hex);
    const char *p[4] = {id, url, secret, cg_arena_strndup(a, arr.data, arr.len)};
    cg_buf_free(&arr);
    PGconn *c = srv_pool_get(r->s->pool, &err);
    if (!c) return srv_fail_unavailable(r, &err);
    PGresult *x = srv_q(c, "INSERT INTO webhooks (id, url, secret, events) VALUES ($1, $2, $3, $4::text[])", 4, p, NULL,
                        NULL, &err);
    srv_pool_put(r->s->pool, c);
    if (!x) return srv_fail_unavailable(r, &err);
    PQclear(x);
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "id", cg_jv_str(a, id));
    return srv_reply_json(r, 201, o);
}

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

enum MHD_Result srv_h_webhooks_list(srv_req *r) {
    cg_arena *a = &r->arena;
    cg_error err = {0};
    PGconn *c = srv_pool_get(r->s->pool, &err);
    if (!c) return srv_fail_unavailable(r, &err);
    PGresult *x = srv_q(c,
                        "SELECT id, url, array_to_json(events)::text, " TS("created_at") " FROM webhooks "
                        "WHERE deleted_at IS NULL ORDER BY created_at, id",
                        0, NULL, NULL, NULL, &err);
    srv_pool_put(r->s->pool, c);
    if (!x) return srv_fail_unavailable(r, &err);
    cg_jv *items = cg_jv_arr(a);
    cg_json_limits lim;
    cg_json_limits_default(&lim);
    for (int i = 0; i < PQntuples(x); i++) {
        cg_jv *o = cg_jv_obj(a);
        cg_jv_obj_put(a, o, "id", cg_jv_str(a, PQgetvalue(x, i, 0)));
        cg_jv_obj_put(a, o, "url", cg_jv_str(a, PQgetvalue(x, i, 1)));
        cg_jv *ev = cg_json_parse(a, PQgetvalue(x, i, 2), (size_t)PQgetlength(x, i, 2), &lim, &err);
        cg_jv_obj_put(a, o, "events", ev ? ev : cg_jv_arr(a));
        cg_jv_obj_put(a, o, "created_at", cg_jv_str(a, PQgetvalue(x, i, 3)));
        cg_jv_arr_push(a, items, o);
    }
    PQclear(x);
    cg_jv *out = cg_jv_obj(a);
    cg_jv_obj_put(a, out, "items", items);
    return srv_reply_json(r, 200, out);
}

enum MHD_Result srv_h_webhooks_delete(srv_req *r) {
    cg_arena *a = &r->arena;
    cg_error err = {0};
    PGconn *c = srv_pool_get(r->s->pool, &err);
    if (!c) return srv_fail_unavailable(r, &err);
    const char *p[1] = {r->params[0]};
    PGresult *x = srv_q(c,
                        "UPDATE webhooks SET deleted_at = coalesce(deleted_at, now()) WHERE id = $1 AND deleted_at IS NULL "
                        "RETURNING id",
                        1, p, NULL, NULL, &err);
    srv_pool_put(r->s->pool, c);
    if (!x) return srv_fail_unavailable(r, &err);
    int n = PQntuples(x);
    PQclear(x);
    if (!n) return srv_fail(r, CG_R_NOT_FOUND, NULL, "no webhook %s", r->params[0]);
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "id", cg_jv_str(a, r->params[0]));
    cg_jv_obj_put(a, o, "deleted", cg_jv_bool(a, true));
    return srv_reply_json(r, 200, o);
}

enum MHD_Result srv_h_webhook_deliveries(srv_req *r) {
    cg_arena *a = &r->arena;
    cg_error err = {0};
    PGconn *c = srv_pool_get(r->s->pool, &err);
    if (!c) return srv_fail_unavailable(r, &err);
    const char *p[1] = {r->params[0]};
    PGresult *w = srv_q(c, "SELECT 1 FROM webhooks WHERE id = $1", 1, p, NULL, NULL, &err);
    PGresult *x = w ? srv_q(c,
                            "SELECT d.event_id, e.type, e.alert_id, d.state, d.attempts, d.last_status, d.last_error, "
                            TS("d.next_attempt_at") ", " TS("d.delivered_at") ", " TS("d.created_at") " "
                            "FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id "
                            "WHERE d.webhook_id = $1 ORDER BY d.created_at DESC, d.event_id LIMIT 500",
                            1, p, NULL, NULL, &err)
                    : NULL;
    srv_pool_put(r->s->pool, c);
    if (!w || !x) {
        if (w) PQclear(w);
        return srv_fail_unavailable(r, &err);
    }
    int found = PQntuples(w);
    PQclear(w);
    if (!found) {
        PQclear(x);
        return srv_fail(r, CG_R_NOT_FOUND, NULL, "no webhook %s", r->params[0]);
    }
    cg_jv *items = cg_jv_arr(a);
    for (int i = 0; i < PQntuples(x); i++) {
        cg_jv *o = cg_jv_obj(a);
        cg_jv_obj_put(a, o, "event_id", cg_jv_str(a, PQgetvalue(x, i, 0)));
        cg_jv_obj_put(a, o, "type", cg_jv_str(a, PQgetvalue(x, i, 1)));
        cg_jv_obj_put(a, o, "alert_id", cg_jv_u64(a, strtoull(PQgetvalue(x, i, 2), NULL, 10)));
        cg_jv_obj_put(a, o, "state", cg_jv_str(a, PQgetvalue(x, i, 3)));
        cg_jv_obj_put(a, o, "attempts", cg_jv_u64(a, strtoull(PQgetvalue(x, i, 4), NULL, 10)));
        cg_jv_obj_put(a, o, "last_status",
                      PQgetisnull(x, i, 5) ? cg_jv_null(a) : cg_jv_u64(a, strtoull(PQgetvalue(x, i, 5), NULL, 10)));
        const char *keys[] = {"last_error", "next_attempt_at", "delivered_at", "created_at"};
        for (int k = 0; k < 4; k++)
            cg_jv_obj_put(a, o, keys[k], PQgetisnull(x, i, 6 + k) ? cg_jv_null(a) : cg_jv_str(a, PQgetvalue(x, i, 6 + k)));
        cg_jv_arr_push(a, items, o);
    }
    PQclear(x);
    cg_jv *out = cg_jv_obj(a);
    cg_jv_obj_put(a, out, "items", items);
    return srv_reply_json(r, 200, out);
}
