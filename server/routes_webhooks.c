/* routes_webhooks.c — POST/GET /webhooks, DELETE /webhooks/{id},
 * GET /webhooks/{id}/deliveries (admin scope). Secrets are never answered. */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "srv_history.h"
#include "srv_store.h"

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
    if (srv_store_webhook_insert(r->s->pool, p[0], p[1], p[2], p[3], &err) < 0) return srv_fail_unavailable(r, &err);
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "id", cg_jv_str(a, id));
    return srv_reply_json(r, 201, o);
}

enum MHD_Result srv_h_webhooks_list(srv_req *r) {
    cg_arena *a = &r->arena;
    cg_error err = {0};
    PGresult *x = srv_store_webhooks_list(r->s->pool, &err);
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
    int n = srv_store_webhook_delete(r->s->pool, r->params[0], &err);
    if (n < 0) return srv_fail_unavailable(r, &err);
    if (!n) return srv_fail(r, CG_R_NOT_FOUND, NULL, "no webhook %s", r->params[0]);
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "id", cg_jv_str(a, r->params[0]));
    cg_jv_obj_put(a, o, "deleted", cg_jv_bool(a, true));
    return srv_reply_json(r, 200, o);
}

enum MHD_Result srv_h_webhook_deliveries(srv_req *r) {
    cg_arena *a = &r->arena;
    cg_error err = {0};
    PGresult *x;
    int found = srv_store_webhook_deliveries(r->s->pool, r->params[0], &x, &err);
    if (found < 0) return srv_fail_unavailable(r, &err);
    if (!found) {
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
