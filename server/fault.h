/* fault.h — libpq calls under CG_FAULT (lib/base/fault.h), op `pq`.
 *
 * Drop-in replacements for PQconnectdbParams, PQexec and PQexecParams. When
 * the rule for the current call fires, the failure is real, not simulated:
 *   ECONNRESET (`lost`): the connection's socket is shut down before the call,
 *     so libpq itself reports the lost connection (PQstatus CONNECTION_BAD);
 *   ECONNABORTED (`lost-after`): the call runs in the server, then the socket
 *     is shut down and the caller gets the lost-connection error instead of the
 *     reply (the ambiguous COMMIT of RELIABILITY.md E3);
 *   ENOSPC / EDQUOT: the statement is replaced by one that raises SQLSTATE
 *     53100 (disk_full) in the server, aborting any open transaction;
 *   EIO / EROFS: likewise with SQLSTATE 58030 (io_error) / 25006 (read only).
 * A faulted connect returns a connection whose socket is already shut down.
 * Inert (the plain libpq call) unless CG_FAULT arms `pq`. */
#ifndef SRV_FAULT_H
#define SRV_FAULT_H

#include <libpq-fe.h>

#include "base/fault.h"

PGconn *srv_fault_connect(const char *const *keys, const char *const *vals, int expand_dbname);
PGresult *srv_fault_exec(PGconn *c, const char *sql);
PGresult *srv_fault_exec_params(PGconn *c, const char *sql, int n, const Oid *types, const char *const *vals,
                                const int *lens, const int *fmts, int result_format);

#endif
