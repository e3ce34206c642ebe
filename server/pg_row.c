/* pg_row.c — one result column as JSON, shared by every handler that turns
 * rows into objects (see srv.h). Values stay in the arena. */
#include <stdlib.h>

#include "srv.h"

cg_jv *srv_col_str(cg_arena *a, PGresult *x, int row, int col) {
    return PQgetisnull(x, row, col) ? cg_jv_null(a) : cg_jv_str(a, PQgetvalue(x, row, col));
}

cg_jv *srv_col_u64(cg_arena *a, PGresult *x, int row, int col) {
    return PQgetisnull(x, row, col) ? cg_jv_null(a) : cg_jv_u64(a, strtoull(PQgetvalue(x, row, col), NULL, 10));
}

cg_jv *srv_col_f64(cg_arena *a, PGresult *x, int row, int col) {
    return cg_jv_f64(a, strtod(PQgetvalue(x, row, col), NULL));
}

cg_jv *srv_col_bool(cg_arena *a, PGresult *x, int row, int col) {
    return cg_jv_bool(a, PQgetvalue(x, row, col)[0] == 't');
}

cg_jv *srv_col_json(cg_arena *a, PGresult *x, int row, int col) {
    if (PQgetisnull(x, row, col)) return cg_jv_null(a);
    cg_json_limits lim;
    cg_json_limits_default(&lim);
    cg_error err = {0};
    cg_jv *v = cg_json_parse(a, PQgetvalue(x, row, col), (size_t)PQgetlength(x, row, col), &lim, &err);
    return v ? v : cg_jv_null(a);
}
