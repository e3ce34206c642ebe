/* store_maintenance.c — the SQL of the offline fsck command (fsck.c) and of
 * the janitor's orphan-blob sweep (janitor.c), on the connection the caller
 * owns (srv_store.h). */
#include "srv_store.h"

static const char SQL_BLOB_REFS[] =
    "SELECT sha256, min(bytes), max(bytes) FROM bundle_files GROUP BY sha256 ORDER BY sha256";
static const char SQL_PG_BLOB_ORPHANS[] =
    "SELECT sha256 FROM pg_blobs p WHERE NOT EXISTS (SELECT 1 FROM bundle_files f WHERE f.sha256 = p.sha256) "
    "ORDER BY sha256";
static const char SQL_MANIFESTS[] = "SELECT id, manifest FROM bundles ORDER BY seq";
static const char SQL_BLOB_REFERENCED[] = "SELECT 1 FROM bundle_files WHERE sha256 = $1 LIMIT 1";

PGresult *srv_store_blob_refs(PGconn *c, cg_error *err) { return srv_q(c, SQL_BLOB_REFS, 0, NULL, NULL, NULL, err); }

PGresult *srv_store_pg_blob_orphans(PGconn *c, cg_error *err) {
    return srv_q(c, SQL_PG_BLOB_ORPHANS, 0, NULL, NULL, NULL, err);
}

PGresult *srv_store_manifests(PGconn *c, cg_error *err) {
    PGresult *m = PQexecParams(c, SQL_MANIFESTS, 0, NULL, NULL, NULL, NULL, 1);
    if (PQresultStatus(m) == PGRES_TUPLES_OK) return m;
    cg_err_set(err, CG_EIO, "database: %s", m ? PQresultErrorMessage(m) : PQerrorMessage(c));
    PQclear(m);
    return NULL;
}

int srv_store_blob_referenced(PGconn *c, const char *hex, cg_error *err) {
    const char *q[1] = {hex};
    PGresult *r = srv_q(c, SQL_BLOB_REFERENCED, 1, q, NULL, NULL, err);
    if (!r) return -1;
    int referenced = PQntuples(r) > 0;
    PQclear(r);
    return referenced;
}
