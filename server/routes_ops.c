/* routes_ops.c — /healthz, /readyz, /metrics, /openapi.json (no token needed). */
#include <stdlib.h>
#include <string.h>

#include "srv_history.h"
#include "srv_store.h"

enum MHD_Result srv_h_healthz(srv_req *r) {
    cg_jv *o = cg_jv_obj(&r->arena);
    cg_jv_obj_put(&r->arena, o, "status", cg_jv_str(&r->arena, "ok"));
    return srv_reply_json(r, 200, o);
}

enum MHD_Result srv_h_readyz(srv_req *r) {
    cg_error err = {0};
    cg_arena *a = &r->arena;
    bool db_ok, store_ok;
    srv_store_ready(r->s, &db_ok, &store_ok, &err);
    if (!db_ok || !store_ok || atomic_load(&r->s->stopping)) {
        cg_jv *d = cg_jv_obj(a);
        cg_jv_obj_put(a, d, "database", cg_jv_bool(a, db_ok));
        cg_jv_obj_put(a, d, "blob_store", cg_jv_bool(a, store_ok));
        srv_log("warn", "not ready", "request_id", r->id, "error", err.msg, NULL);
        return srv_fail(r, CG_R_UNAVAILABLE, d,
                        atomic_load(&r->s->stopping) ? "shutting down" : "the database or blob store is not reachable");
    }
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "status", cg_jv_str(a, "ready"));
    cg_jv_obj_put(a, o, "database", cg_jv_bool(a, true));
    cg_jv_obj_put(a, o, "blob_store", cg_jv_bool(a, true));
    return srv_reply_json(r, 200, o);
}

enum MHD_Result srv_h_metrics(srv_req *r) {
    unsigned size, in_use, open;
    srv_pool_stats(r->s->pool, &size, &in_use, &open);
    int64_t bytes = -1, count = -1;
    srv_blob_totals bt = {-1, -1, 0, 0, 0};
    cg_error err = {0};
    if (srv_store_blob_totals(r->s->pool, &bytes, &count, &err) < 0) bytes = count = -1;
    srv_store_blob_at_rest(r->s, &bt);
    cg_buf b = CG_BUF_INIT;
    srv_metrics_render(&b, size, in_use, open, bytes, count, &bt);
    srv_pool_metrics(&b);
    srv_history_metrics(&b);
    enum MHD_Result res = srv_reply_bytes(r, 200, "text/plain; version=0.0.4; charset=utf-8", b.data, b.len, NULL);
    cg_buf_free(&b);
    return res;
}

enum MHD_Result srv_h_openapi(srv_req *r) {
    size_t len;
    const char *doc = srv_embedded_file("server/openapi.json", &len);
    if (!doc) return srv_fail(r, CG_R_NOT_FOUND, NULL, "openapi.json is not embedded");
    return srv_reply_bytes(r, 200, "application/json; charset=utf-8", doc, len, NULL);
}
