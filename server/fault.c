/* fault.c — the `pq` operation of CG_FAULT (see fault.h): a driver without SQL
 * of its own; the statement a faulted call runs instead of the caller's is
 * store_session.c's. */
#include "fault.h"

#include <errno.h>
#include <sys/socket.h>

#include "base/fault.h"
#include "srv_store.h"

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

/* The reply of a call that ran is lost: drop it and cut the connection; the
 * caller then repeats the call on the cut socket, which cannot reach the
 * server, and hands back libpq's own failure. */
static void lose_reply(PGconn *c, PGresult *r) {
    PQclear(r);
    cut(c);
}

PGresult *srv_fault_exec(PGconn *c, const char *sql) {
    int e = cg_fault_hit(CG_FAULT_PQ);
    if (e == ECONNABORTED) lose_reply(c, PQexec(c, sql));
    if (e == ECONNRESET) cut(c);
    bool raise = e && e != ECONNRESET && e != ECONNABORTED;
    return PQexec(c, raise ? srv_store_fault_statement(e) : sql);
}

PGresult *srv_fault_exec_params(PGconn *c, const char *sql, int n, const Oid *types, const char *const *vals,
                                const int *lens, const int *fmts, int result_format) {
    int e = cg_fault_hit(CG_FAULT_PQ);
    if (e == ECONNABORTED) lose_reply(c, PQexecParams(c, sql, n, types, vals, lens, fmts, result_format));
    if (e == ECONNRESET) cut(c);
    if (e && e != ECONNRESET && e != ECONNABORTED)
        return PQexecParams(c, srv_store_fault_statement(e), 0, NULL, NULL, NULL, NULL, result_format);
    return PQexecParams(c, sql, n, types, vals, lens, fmts, result_format);
}
