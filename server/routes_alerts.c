/* routes_alerts.c — GET /alerts (filters, keyset paging) and PATCH
 * /alerts/{id} (triage: open → acknowledged / false_positive / resolved, with
 * a note and the token that changed it; emits alert.updated). */
#include <stdlib.h>
#include <string.h>

#include "srv_history.h"
#include "srv_store.h"

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
    PGresult *x = srv_store_alert_row(c, id, err);
    if (!x) return NULL;
    cg_jv *o = NULL;
    if (PQntuples(x) == 1) o = srv_alert_json(a, x, 0);
    else cg_err_set(err, CG_ESTATE, "no alert %lld", id);
    PQclear(x);
    return o;
}

enum MHD_Result srv_h_alerts_list(srv_req *r) {
    cg_arena *a = &r->arena;
    const char *state = srv_query(r, "state"), *cursor = srv_query(r, "cursor"), *lim = srv_query(r, "limit");
    if (state && !known_state(state))
        return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "state must be open, acknowledged, false_positive or resolved");
    uint64_t nlim = 0;
    if ((cursor && !srv_parse_u64(cursor, INT64_MAX, NULL)) || (lim && (!srv_parse_u64(lim, 500, &nlim) || nlim < 1)))
        return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "limit must be 1 to 500 and cursor one this server issued");
    long long limit = lim ? (long long)nlim : 50;
    const char *filters[SRV_ALERTS_NFILTERS] = {
        [SRV_ALERTS_STATE] = state, [SRV_ALERTS_WORKLOAD] = srv_query(r, "workload_id"),
        [SRV_ALERTS_BRANCH] = srv_query(r, "branch"), [SRV_ALERTS_METRIC] = srv_query(r, "metric"),
        [SRV_ALERTS_BEFORE_ID] = cursor,
    };
    cg_error err = {0};
    PGresult *x = srv_store_alerts_page(r->s->pool, filters, (unsigned)limit + 1, &err);
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
    cg_jv *aj = NULL;
    int found = srv_store_alert_triage(r->s->pool, strtoll(r->params[0], NULL, 10), state,
                                       note ? cg_jv_as_str(note) : NULL, r->token_id, a, &aj, &err);
    if (found == 1) srv_webhook_kick();
    bool missing = found == 0;
    if (missing) return srv_fail(r, CG_R_NOT_FOUND, NULL, "no alert %s", r->params[0]);
    if (!aj) return srv_fail_unavailable(r, &err);
    return srv_reply_json(r, 200, aj);
}
