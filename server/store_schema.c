/* store_schema.c — the SQL of the schema (srv_store.h): the migration ledger
 * of migrate.c (advisory lock, schema_migrations, one migration body and its
 * record in one transaction) and the embedded cluster's database (pgembed.c),
 * on a dedicated connection the caller owns. */
#include <string.h>

#include "srv_store.h"

#define MIGRATION_LOCK "4242424242"

static const char SQL_BEGIN[] = "BEGIN";
static const char SQL_COMMIT[] = "COMMIT";
static const char SQL_ROLLBACK[] = "ROLLBACK";
static const char SQL_MIGRATION_LOCK[] = "SELECT pg_advisory_lock(" MIGRATION_LOCK ")";
static const char SQL_MIGRATION_UNLOCK[] = "SELECT pg_advisory_unlock(" MIGRATION_LOCK ")";
static const char SQL_MIGRATIONS_TABLE[] =
    "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, "
    "sha256 text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())";
static const char SQL_MIGRATIONS_APPLIED[] = "SELECT version, name, sha256 FROM schema_migrations ORDER BY version";
static const char SQL_MIGRATION_RECORD[] =
    "INSERT INTO schema_migrations (version, name, sha256) VALUES ($1::int, $2, $3)";
static const char SQL_DATABASE_EXISTS[] = "SELECT 1 FROM pg_database WHERE datname = $1";
/* CREATE DATABASE takes no parameter: the name goes in as a quoted identifier. */
static const char SQL_DATABASE_CREATE_FMT[] = "CREATE DATABASE %s";

int srv_store_migrations_open(PGconn *c, PGresult **applied, cg_error *err) {
    *applied = NULL;
    if (srv_exec(c, SQL_MIGRATION_LOCK, err) < 0) return -1;
    if (srv_exec(c, SQL_MIGRATIONS_TABLE, err) == 0 &&
        (*applied = srv_q(c, SQL_MIGRATIONS_APPLIED, 0, NULL, NULL, NULL, err)))
        return 0;
    srv_store_migrations_close(c);
    return -1;
}

void srv_store_migrations_close(PGconn *c) { srv_exec(c, SQL_MIGRATION_UNLOCK, &(cg_error){0}); }

int srv_store_migration_apply(PGconn *c, const char *version, const char *name, const char *sql, const char *sha256,
                              cg_error *err) {
    if (srv_exec(c, SQL_BEGIN, err) < 0) return -1;
    /* the body is the embedded migration file: several statements, so the simple protocol */
    PGresult *x = srv_fault_exec(c, sql);
    ExecStatusType st = PQresultStatus(x);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        cg_err_set(err, CG_EIO, "migration %s failed: %s", name, x ? PQresultErrorMessage(x) : PQerrorMessage(c));
        PQclear(x);
        srv_exec(c, SQL_ROLLBACK, &(cg_error){0});
        return -1;
    }
    PQclear(x);
    const char *p[3] = {version, name, sha256};
    PGresult *ins = srv_q(c, SQL_MIGRATION_RECORD, 3, p, NULL, NULL, err);
    int rc = ins && srv_exec(c, SQL_COMMIT, err) == 0 ? 0 : -1;
    PQclear(ins);
    if (rc < 0) srv_exec(c, SQL_ROLLBACK, &(cg_error){0});
    return rc;
}

int srv_store_database_ensure(PGconn *c, const char *name, cg_error *err) {
    const char *p[1] = {name};
    PGresult *r = srv_q(c, SQL_DATABASE_EXISTS, 1, p, NULL, NULL, err);
    if (!r) return -1;
    bool exists = PQntuples(r) > 0;
    PQclear(r);
    if (exists) return 0;
    char *ident = PQescapeIdentifier(c, name, strlen(name));
    if (!ident) return cg_err_set(err, CG_EIO, "database: %s", PQerrorMessage(c));
    cg_buf sql = CG_BUF_INIT;
    cg_buf_printf(&sql, SQL_DATABASE_CREATE_FMT, ident);
    PQfreemem(ident);
    char sqlstate[6];
    PGresult *x = srv_q(c, sql.data, 0, NULL, NULL, sqlstate, err);
    cg_buf_free(&sql);
    int rc = x || strcmp(sqlstate, "42P04") == 0 ? 0 : -1; /* lost a race with another starter: fine */
    PQclear(x);
    return rc;
}
