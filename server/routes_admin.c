/* routes_admin.c — admin API: tokens (create/list/revoke) and signer keys
 * (register/list/revoke). Tokens are shown once at creation. */
#include <string.h>

#include "srv_store.h"

/* Parses the JSON request body into an object; answers 400 itself on failure. */
static cg_jv *body_object(srv_req *r, enum MHD_Result *res) {
    cg_error err = {0};
    cg_json_limits lim;
    cg_json_limits_default(&lim);
    lim.max_depth = 16;
    lim.max_items = 1000;
    cg_jv *v = r->body.len ? cg_json_parse(&r->arena, r->body.data, r->body.len, &lim, &err) : NULL;
    if (!v) {
        *res = srv_fail(r, CG_R_MALFORMED_JSON, NULL, "request body is not valid JSON%s%s", err.msg[0] ? ": " : "",
                        err.msg);
        return NULL;
    }
    if (v->type != CG_JOBJ) {
        *res = srv_fail(r, CG_R_BAD_REQUEST, NULL, "request body must be a JSON object");
        return NULL;
    }
    const char *dup = srv_json_dup_key(v);
    if (dup) {
        *res = srv_fail_dup_key(r, dup);
        return NULL;
    }
    return v;
}

static const char *str_field(srv_req *r, cg_jv *o, const char *key, enum MHD_Result *res) {
    const char *s = cg_jv_as_str(cg_jv_get(o, key));
    if (!s || !*s || strlen(s) > 256) {
        cg_jv *d = cg_jv_obj(&r->arena);
        cg_jv_obj_put(&r->arena, d, "field", cg_jv_str(&r->arena, key));
        *res = srv_fail(r, CG_R_BAD_REQUEST, d, "field %s must be a non-empty string", key);
        return NULL;
    }
    return s;
}

#define DB(r) SRV_DB_POOL((r)->s->pool)

enum MHD_Result srv_h_tokens_create(srv_req *r) {
    enum MHD_Result res;
    cg_jv *o = body_object(r, &res);
    if (!o) return res;
    const char *name = str_field(r, o, "name", &res);
    if (!name) return res;
    bool bad;
    unsigned scopes = srv_scopes_parse_list(cg_jv_get(o, "scopes"), &bad);
    if (bad) return srv_fail(r, CG_R_BAD_REQUEST, NULL, "scopes must be a non-empty array of upload, read, admin");
    cg_error err = {0};
    const char *id, *token;
    int rc = srv_token_create(DB(r), name, scopes, &r->arena, &id, &token, &err);
    if (rc < 0) return srv_fail_unavailable(r, &err);
    cg_arena *a = &r->arena;
    cg_jv *out = cg_jv_obj(a);
    cg_jv_obj_put(a, out, "id", cg_jv_str(a, id));
    cg_jv_obj_put(a, out, "token", cg_jv_str(a, token));
    cg_jv_obj_put(a, out, "scopes", srv_scopes_json(a, scopes));
    return srv_reply_json(r, 201, out);
}

enum MHD_Result srv_h_tokens_list(srv_req *r) {
    cg_error err = {0};
    PGresult *q = srv_store_tokens_list(DB(r), &err);
    if (!q) return srv_fail_unavailable(r, &err);
    cg_arena *a = &r->arena;
    cg_jv *items = cg_jv_arr(a);
    for (int i = 0; i < PQntuples(q); i++) {
        bool bad;
        cg_jv *t = cg_jv_obj(a);
        cg_jv_obj_put(a, t, "id", cg_jv_str(a, PQgetvalue(q, i, 0)));
        cg_jv_obj_put(a, t, "name", cg_jv_str(a, PQgetvalue(q, i, 1)));
        cg_jv_obj_put(a, t, "scopes", srv_scopes_json(a, srv_scopes_parse_csv(PQgetvalue(q, i, 2), &bad)));
        cg_jv_obj_put(a, t, "created_at", cg_jv_str(a, PQgetvalue(q, i, 3)));
        cg_jv_obj_put(a, t, "revoked_at", PQgetisnull(q, i, 4) ? cg_jv_null(a) : cg_jv_str(a, PQgetvalue(q, i, 4)));
        cg_jv_arr_push(a, items, t);
    }
    PQclear(q);
    cg_jv *out = cg_jv_obj(a);
    cg_jv_obj_put(a, out, "items", items);
    return srv_reply_json(r, 200, out);
}

static enum MHD_Result revoke_row(srv_req *r, const char *what) {
    cg_error err = {0};
    int n = srv_store_revoke(DB(r), strcmp(what, "key") == 0, r->params[0], &err);
    if (n < 0) return srv_fail_unavailable(r, &err);
    if (n == 0) return srv_fail(r, CG_R_NOT_FOUND, NULL, "no such %s: %s", what, r->params[0]);
    cg_arena *a = &r->arena;
    cg_jv *out = cg_jv_obj(a);
    cg_jv_obj_put(a, out, strcmp(what, "key") == 0 ? "key_id" : "id", cg_jv_str(a, r->params[0]));
    cg_jv_obj_put(a, out, "revoked", cg_jv_bool(a, true));
    return srv_reply_json(r, 200, out);
}

enum MHD_Result srv_h_tokens_delete(srv_req *r) {
    return revoke_row(r, "token");
}

enum MHD_Result srv_h_keys_create(srv_req *r) {
    enum MHD_Result res;
    cg_jv *o = body_object(r, &res);
    if (!o) return res;
    const char *name = str_field(r, o, "name", &res);
    if (!name) return res;
    const char *pub = cg_jv_as_str(cg_jv_get(o, "public_key"));
    if (!pub) return srv_fail(r, CG_R_BAD_REQUEST, NULL, "field public_key must be a string");
    unsigned char pk[32];
    char kid[33];
    cg_error perr = {0};
    if (srv_pubkey_parse(pub, pk, &perr) < 0) return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "%s", perr.msg);
    srv_key_id(pk, kid);
    cg_error err = {0};
    bool fresh;
    if (srv_store_key_insert(DB(r), kid, name, pk, &fresh, &err) < 0) return srv_fail_unavailable(r, &err);
    cg_arena *a = &r->arena;
    cg_jv *out = cg_jv_obj(a);
    cg_jv_obj_put(a, out, "key_id", cg_jv_str(a, kid));
    return srv_reply_json(r, fresh ? 201 : 200, out);
}

enum MHD_Result srv_h_keys_list(srv_req *r) {
    cg_error err = {0};
    PGresult *q = srv_store_keys_list(DB(r), &err);
    if (!q) return srv_fail_unavailable(r, &err);
    cg_arena *a = &r->arena;
    cg_jv *items = cg_jv_arr(a);
    for (int i = 0; i < PQntuples(q); i++) {
        cg_jv *t = cg_jv_obj(a);
        cg_jv_obj_put(a, t, "key_id", cg_jv_str(a, PQgetvalue(q, i, 0)));
        cg_jv_obj_put(a, t, "name", cg_jv_str(a, PQgetvalue(q, i, 1)));
        cg_jv_obj_put(a, t, "public_key", cg_jv_str(a, PQgetvalue(q, i, 2)));
        cg_jv_obj_put(a, t, "created_at", cg_jv_str(a, PQgetvalue(q, i, 3)));
        cg_jv_obj_put(a, t, "revoked_at", PQgetisnull(q, i, 4) ? cg_jv_null(a) : cg_jv_str(a, PQgetvalue(q, i, 4)));
        cg_jv_arr_push(a, items, t);
    }
    PQclear(q);
    cg_jv *out = cg_jv_obj(a);
    cg_jv_obj_put(a, out, "items", items);
    return srv_reply_json(r, 200, out);
}

enum MHD_Result srv_h_keys_delete(srv_req *r) {
    return revoke_row(r, "key");
}
