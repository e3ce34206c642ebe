/* store_query.c — the store layer's shared pieces (srv_store.h): one statement
 * on a pooled connection taken and returned here, the bundle-filter WHERE
 * builder, and the SQLSTATE class-22 parameter finder. */
#include <string.h>

#include "srv_store.h"

/* Converts one value with one cast; the statement text is built from a fixed
 * cast list (srv_where_filter), never from request text. */
static const char SQL_CAST_PROBE_FMT[] = "SELECT $1%s";

PGresult *srv_store_q(srv_pool *p, const char *sql, int n, const char *const *params, char sqlstate[6],
                      cg_error *err) {
    if (sqlstate) sqlstate[0] = 0;
    PGconn *c = srv_pool_get(p, err);
    if (!c) return NULL;
    PGresult *x = srv_q(c, sql, n, params, NULL, sqlstate, err);
    srv_pool_put(p, c);
    return x;
}

PGresult *srv_store_q_binary(srv_pool *p, const char *sql, int n, const char *const *params, cg_error *err) {
    PGconn *c = srv_pool_get(p, err);
    if (!c) return NULL;
    PGresult *x = srv_fault_exec_params(c, sql, n, NULL, params, NULL, NULL, 1);
    if (PQresultStatus(x) != PGRES_TUPLES_OK) {
        cg_err_set(err, CG_EIO, "database: %s", x ? PQresultErrorMessage(x) : PQerrorMessage(c));
        PQclear(x);
        x = NULL;
    }
    srv_pool_put(p, c);
    return x;
}

const char *srv_store_sql22_param(PGconn *c, int n, const char *const *values, const char *const *casts,
                                  const char *const *names) {
    for (int i = 0; i < n; i++) {
        if (!names[i] || !casts[i] || !casts[i][0]) continue;
        char sql[64];
        snprintf(sql, sizeof sql, SQL_CAST_PROBE_FMT, casts[i]);
        const char *p[1] = {values[i]};
        PGresult *x = PQexecParams(c, sql, 1, NULL, p, NULL, NULL, 0);
        bool bad = PQresultStatus(x) != PGRES_TUPLES_OK;
        const char *st = bad ? PQresultErrorField(x, PG_DIAG_SQLSTATE) : NULL;
        bad = bad && st && strncmp(st, "22", 2) == 0;
        PQclear(x);
        if (bad) return names[i];
    }
    return NULL;
}

PGresult *srv_store_q_where(srv_pool *p, const char *sql, const srv_where *w, const char **bad, char sqlstate[6],
                            cg_error *err) {
    *bad = NULL;
    sqlstate[0] = 0;
    PGconn *c = srv_pool_get(p, err);
    if (!c) return NULL;
    PGresult *x = srv_q(c, sql, w->n, w->params, NULL, sqlstate, err);
    if (!x && !strncmp(sqlstate, "22", 2)) *bad = srv_store_sql22_param(c, w->n, w->params, w->casts, w->names);
    srv_pool_put(p, c);
    return x;
}
