/* routes_alerts.c — GET /alerts (filters, keyset paging) and PATCH
 * /alerts/{id} (triage: open → acknowledged / false_positive / resolved, with
 * a note and the token that changed it; emits alert.updated). */
#include <stdlib.h>
#include <string.h>

#include "srv_history.h"

static const char *const states[] = {"open", "acknowledged", "false_positive", "resolved", NULL};

static bool known_state(const char *s) {
    for (size_t i = 0; states[i]; i++)
        if (!strcmp(states[i], s)) return true;
    return false;
}

cg_jv *srv_alert_json(cg_arena *a, PGresult *x, int i) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "id", cg_jv_u64(a, strtoull(PQgetvalue(x, i, 0), NULL, 10)));
    cg_jv_obj_put(a, o, "state", cg_jv_str(a, PQgetvalue(x, i, 1)));
    cg_jv_obj_put(a, o, "series", srv_col_json(a, x, i, 2));
    cg_jv_obj_put(a, o, "branch", cg_jv_str(a, PQgetvalue(x, i, 3)));
    cg_jv_obj_put(a, o, "metric", cg_jv_str(a, PQgetvalue(x, i, 4)));
    cg_jv_obj_put(a, o, "before_commit", cg_jv_str(a, PQgetvalue(x, i, 5)));
    cg_jv_obj_put(a, o, "after_commit", cg_jv_str(a, PQgetvalue(x, i, 6)));
    cg_jv_obj_put(a, o, "delta_ns", srv_col_f64(a, x, i, 7));
    cg_jv_obj_put(a, o, "relative_change", srv_col_f64(a, x, i, 8));
    cg_jv *ci = cg_jv_obj(a);
    cg_jv_obj_put(a, ci, "lower_ns", srv_col_f64(a, x, i, 9));
    cg_jv_obj_put(a, ci, "upper_ns", srv_col_f64(a, x, i, 10));
    cg_jv_obj_put(a, o, "ci95", ci);
    cg_jv *in = cg_jv_obj(a);
    cg_jv_obj_put(a, in, "baseline", srv_col_json(a, x, i, 11));
    cg_jv_obj_put(a, in, "candidate", srv_col_json(a, x, i, 12));
    cg_jv_obj_put(a, o, "inputs", in);
    cg_jv_obj_put(a, o, "created_at", cg_jv_str(a, PQgetvalue(x, i, 13)));
    cg_jv_obj_put(a, o, "updated_at", cg_jv_str(a, PQgetvalue(x, i, 14)));
    cg_jv_obj_put(a, o, "note", srv_col_str(a, x, i, 15));
    cg_jv_obj_put(a, o, "updated_by", srv_col_str(a, x, i, 16));
    return o;
}

cg_jv *srv_alert_load(PGconn *c, cg_arena *a, long long id, cg_error *err) {
    const char *p[1] = {cg_arena_printf(a, "%lld", id)};
    PGresult *x = srv_q(c,
                        "SELECT " SRV_ALERT_COLUMNS " FROM alerts a JOIN history_series s ON s.id = a.series_id "
                        "WHERE a.id = $1::bigint",
                        1, p, NULL, NULL, err);
    if (!x) return NULL;
    cg_jv *o = NULL;
    if (PQntuples(x) == 1) o = srv_alert_json(a, x, 0);
    else cg_err_set(err, CG_ESTATE, "no alert %lld", id);
    PQclear(x);
    return o;
}

enum MHD_Result srv_h_alerts_list(srv_req *r) {
    cg_arena *a = &r->arena;
    const char *params[8];
    int np = 0;
    cg_buf where = CG_BUF_INIT;
    cg_buf_puts(&where, "true");
    const char *state = srv_query(r, "state"), *wl = srv_query(r, "workload_id"), *br = srv_query(r, "branch"),
               *metric = srv_query(r, "metric"), *cursor = srv_query(r, "cursor"), *lim = srv_query(r, "limit");
    if (state && !known_state(state)) {
        cg_buf_free(&where);
        return srv_fail(r, CG_R_INVALID_PARAMETER, NULL,
                        "state must be open, acknowledged, false_positive or resolved");
    }
    uint64_t nlim = 0;
    if ((cursor && !srv_parse_u64(cursor, INT64_MAX, NULL)) || (lim && (!srv_parse_u64(lim, 500, &nlim) || nlim < 1))) {
        cg_buf_free(&where);
        return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "limit must be 1 to 500 and cursor one this server issued");
    }
    long long limit = lim ? strtoll(lim, NULL, 10) : 50;
    if (state) params[np++] = state, cg_buf_printf(&where, " AND a.state = $%d", np);
    if (wl) params[np++] = wl, cg_buf_printf(&where, " AND s.identity->>'workload_id' = $%d", np);
    if (br) params[np++] = br, cg_buf_printf(&where, " AND s.branch = $%d", np);
    if (metric) params[np++] = metric, cg_buf_printf(&where, " AND a.metric = $%d", np);
    if (cursor) params[np++] = cursor, cg_buf_printf(&where, " AND a.id < $%d::bigint", np);
    char *sql = cg_arena_printf(a,
                                "SELECT " SRV_ALERT_COLUMNS " FROM alerts a JOIN history_series s ON s.id = a.series_id "
                                "WHERE %s ORDER BY a.id DESC LIMIT %lld",
                                where.data, limit + 1);
    cg_buf_free(&where);
    cg_error err = {0};
    PGconn *c = srv_pool_get(r->s->pool, &err);
    if (!c) return srv_fail_unavailable(r, &err);
    PGresult *x = srv_q(c, sql, np, params, NULL, NULL, &err);
    srv_pool_put(r->s->pool, c);
    if (!x) return srv_fail_unavailable(r, &err);
    int rows = PQntuples(x), shown = rows > limit ? (int)limit : rows;
    cg_jv *out = cg_jv_obj(a), *items = cg_jv_arr(a);
    for (int i = 0; i < shown; i++) cg_jv_arr_push(a, items, srv_alert_json(a, x, i));
    cg_jv_obj_put(a, out, "items", items);
    cg_jv_obj_put(a, out, "next_cursor", rows > shown ? cg_jv_str(a, PQgetvalue(x, shown - 1, 0)) : cg_jv_null(a));
    PQclear(x);
    return srv_reply_json(r, 200, out);
}

enum MHD_Result srv_h_alert_patch(srv_req *r) {
    cg_arena *a = &r->arena;
    if (!srv_parse_u64(r->params[0], INT64_MAX, NULL))
        return srv_fail(r, CG_R_NOT_FOUND, NULL, "no alert %s", r->params[0]);
    cg_json_limits lim;
    cg_json_limits_default(&lim);
    lim.max_depth = 4;
    cg_error err = {0};
    cg_jv *v = r->body.len ? cg_json_parse(a, r->body.data, r->body.len, &lim, &err) : NULL;
    if (!v) return srv_fail(r, CG_R_MALFORMED_JSON, NULL, "the body is not a JSON document");
    const char *state = cg_jv_as_str(cg_jv_get(v, "state"));
    const cg_jv *note = cg_jv_get(v, "note");
    if (v->type != CG_JOBJ || !state || !known_state(state) || (note && note->type != CG_JSTR && note->type != CG_JNULL))
        return srv_fail(r, CG_R_BAD_REQUEST, NULL,
                        "the body must be {\"state\": open|acknowledged|false_positive|resolved, \"note\"?: string}");
    if (note && note->type == CG_JSTR && strlen(cg_jv_as_str(note)) > 4096)
        return srv_fail(r, CG_R_BAD_REQUEST, NULL, "note is longer than 4096 bytes");
    PGconn *c = srv_pool_get(r->s->pool, &err);
    if (!c) return srv_fail_unavailable(r, &err);
    const char *p[4] = {r->params[0], state, note ? cg_jv_as_str(note) : NULL, r->token_id};
    cg_jv *aj = NULL;
    bool missing = false;
    if (srv_exec(c, "BEGIN", &err) == 0) {
        PGresult *x = srv_q(c,
                            "UPDATE alerts SET state = $2, note = CASE WHEN $3::text IS NULL THEN note ELSE $3 END, "
                            "updated_by = $4, updated_at = now() WHERE id = $1::bigint RETURNING id",
                            4, p, NULL, NULL, &err);
        if (x) {
            missing = PQntuples(x) == 0;
            PQclear(x);
            if (!missing) {
                aj = srv_alert_load(c, a, strtoll(r->params[0], NULL, 10), &err);
                if (aj && srv_webhook_enqueue(c, a, "alert.updated", strtoll(r->params[0], NULL, 10), aj, &err) < 0) aj = NULL;
            }
        }
        if (aj && srv_exec(c, "COMMIT", &err) == 0) srv_webhook_kick();
        else {
            srv_exec(c, "ROLLBACK", &(cg_error){0});
            aj = NULL;
        }
    }
    srv_pool_put(r->s->pool, c);
    if (missing) return srv_fail(r, CG_R_NOT_FOUND, NULL, "no alert %s", r->params[0]);
    if (!aj) return srv_fail_unavailable(r, &err);
    return srv_reply_json(r, 200, aj);
}
