/* fault.c — the `pq` operation of CG_FAULT (see fault.h). */
#include "fault.h"

#include <errno.h>
#include <sys/socket.h>

#include "base/fault.h"

/* Statement that fails in the server with the SQLSTATE standing for e. */
static const char *raise_sql(int e) {
    switch (e) {
    case ENOSPC:
    case EDQUOT:
        return "DO $$BEGIN RAISE EXCEPTION 'injected fault: disk full' USING ERRCODE = '53100'; END$$";
    case EROFS:
        return "DO $$BEGIN RAISE EXCEPTION 'injected fault: read only' USING ERRCODE = '25006'; END$$";
    default:
        return "DO $$BEGIN RAISE EXCEPTION 'injected fault: I/O error' USING ERRCODE = '58030'; END$$";
    }
}

static void cut(PGconn *c) {
    int fd = c ? PQsocket(c) : -1;
    if (fd >= 0) shutdown(fd, SHUT_RDWR);
}

PGconn *srv_fault_connect(const char *const *keys, const char *const *vals, int expand_dbname) {
    int e = cg_fault_hit(CG_FAULT_PQ);
    PGconn *c = PQconnectdbParams(keys, vals, expand_dbname);
    if (e) cut(c);
    return c;
}

/* The reply of a call that ran is lost: drop it, cut the connection and hand
 * back libpq's own failure for the next exchange. */
static PGresult *lose_reply(PGconn *c, PGresult *r) {
    PQclear(r);
    cut(c);
    return PQexec(c, "SELECT 1");
}

PGresult *srv_fault_exec(PGconn *c, const char *sql) {
    int e = cg_fault_hit(CG_FAULT_PQ);
    if (e == ECONNABORTED) return lose_reply(c, PQexec(c, sql));
    if (e == ECONNRESET) cut(c);
    return PQexec(c, e && e != ECONNRESET ? raise_sql(e) : sql);
}

PGresult *srv_fault_exec_params(PGconn *c, const char *sql, int n, const Oid *types, const char *const *vals,
                                const int *lens, const int *fmts, int result_format) {
    int e = cg_fault_hit(CG_FAULT_PQ);
    if (e == ECONNABORTED) return lose_reply(c, PQexecParams(c, sql, n, types, vals, lens, fmts, result_format));
    if (e == ECONNRESET) cut(c);
    if (e && e != ECONNRESET) return PQexecParams(c, raise_sql(e), 0, NULL, NULL, NULL, NULL, result_format);
    return PQexecParams(c, sql, n, types, vals, lens, fmts, result_format);
}
