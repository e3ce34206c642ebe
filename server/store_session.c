/* store_session.c — the statements of a connection's session (srv_store.h):
 * its setup when the pool opens it (pool.c), the rollback when it goes back
 * with a transaction open, and the statements an injected libpq fault runs
 * instead of the caller's (fault.c), so that the failure comes from the
 * server with the SQLSTATE standing for the errno. */
#include <errno.h>

#include "srv_store.h"

static const char SQL_STATEMENT_TIMEOUT[] = "SELECT set_config('statement_timeout', $1, false)";
static const char SQL_ROLLBACK[] = "ROLLBACK";
static const char SQL_FAULT_DISK_FULL[] =
    "DO $$BEGIN RAISE EXCEPTION 'injected fault: disk full' USING ERRCODE = '53100'; END$$";
static const char SQL_FAULT_READ_ONLY[] =
    "DO $$BEGIN RAISE EXCEPTION 'injected fault: read only' USING ERRCODE = '25006'; END$$";
static const char SQL_FAULT_IO[] =
    "DO $$BEGIN RAISE EXCEPTION 'injected fault: I/O error' USING ERRCODE = '58030'; END$$";

int srv_store_session_init(PGconn *c, unsigned stmt_timeout_ms, cg_error *err) {
    char ms[16];
    snprintf(ms, sizeof ms, "%u", stmt_timeout_ms);
    const char *p[1] = {ms};
    PGresult *r = srv_q(c, SQL_STATEMENT_TIMEOUT, 1, p, NULL, NULL, err);
    if (!r) return -1;
    PQclear(r);
    return 0;
}

void srv_store_session_rollback(PGconn *c) { PQclear(srv_fault_exec(c, SQL_ROLLBACK)); }

const char *srv_store_fault_statement(int e) {
    switch (e) {
    case ENOSPC:
    case EDQUOT: return SQL_FAULT_DISK_FULL;
    case EROFS: return SQL_FAULT_READ_ONLY;
    default: return SQL_FAULT_IO;
    }
}
