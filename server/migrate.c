/* migrate.c — forward-only schema migrations (migrations/NNNN_name.sql, embedded
 * at build time). Applied at start while holding a session advisory lock on a
 * dedicated (non-pooled) connection, each in its own transaction, recorded with
 * its SHA-256 in schema_migrations. A database whose schema is newer than this
 * binary, or whose recorded checksum differs from the embedded file, is refused. */
#include <stdlib.h>
#include <string.h>

#include "srv.h"

#define MIGRATION_LOCK "4242424242"

typedef struct mig { int version; const char *name; const char *sql; size_t len; } mig;

static size_t list_migrations(mig *out, size_t cap) {
    size_t n = 0;
    const char *data;
    size_t len;
    for (size_t k = 0;; k++) {
        const char *path = srv_embedded_at(k, &data, &len);
        if (!path) break;
        if (strncmp(path, "migrations/", 11) != 0 || n >= cap) continue;
        const char *base = path + 11;
        char *end;
        long v = strtol(base, &end, 10);
        if (end != base + 4 || *end != '_' || v <= 0) continue;
        out[n].version = (int)v;
        out[n].name = base;
        out[n].sql = data;
        out[n].len = len;
        n++;
    }
    /* embedded in sorted order already (CMake sorts); keep a defensive insertion sort */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && out[j - 1].version > out[j].version; j--) {
            mig t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

int srv_schema_version_known(void) {
    mig m[256];
    size_t n = list_migrations(m, 256);
    return n ? m[n - 1].version : 0;
}

int srv_migrate(PGconn *c, bool verbose, cg_error *err) {
    mig m[256];
    size_t n = list_migrations(m, 256);
    if (srv_exec(c, "SELECT pg_advisory_lock(" MIGRATION_LOCK ")", err) < 0) return -1;
    int rc = -1;
    if (srv_exec(c,
                 "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, "
                 "sha256 text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
                 err) < 0)
        goto out;
    PGresult *r = srv_q(c, "SELECT version, name, sha256 FROM schema_migrations ORDER BY version", 0, NULL, NULL,
                        NULL, err);
    if (!r) goto out;
    int known = n ? m[n - 1].version : 0;
    for (int i = 0; i < PQntuples(r); i++) {
        int v = (int)strtol(PQgetvalue(r, i, 0), NULL, 10);
        if (v > known) {
            cg_err_set(err, CG_ESTATE,
                       "database schema version %d is newer than this candle-graph-server (knows up to %d); "
                       "refusing to start — upgrade the server",
                       v, known);
            PQclear(r);
            goto out;
        }
        for (size_t k = 0; k < n; k++) {
            if (m[k].version != v) continue;
            char hex[65];
            cg_sha256_hex(m[k].sql, m[k].len, hex);
            if (strcmp(hex, PQgetvalue(r, i, 2)) != 0) {
                cg_err_set(err, CG_ESTATE,
                           "migration %s was changed after it was applied (checksum differs); refusing to start",
                           m[k].name);
                PQclear(r);
                goto out;
            }
        }
    }
    for (size_t k = 0; k < n; k++) {
        bool applied = false;
        for (int i = 0; i < PQntuples(r); i++)
            if ((int)strtol(PQgetvalue(r, i, 0), NULL, 10) == m[k].version) applied = true;
        if (applied) continue;
        char hex[65], ver[16];
        cg_sha256_hex(m[k].sql, m[k].len, hex);
        snprintf(ver, sizeof ver, "%d", m[k].version);
        if (srv_exec(c, "BEGIN", err) < 0) {
            PQclear(r);
            goto out;
        }
        PGresult *x = PQexec(c, m[k].sql);
        if (PQresultStatus(x) != PGRES_COMMAND_OK && PQresultStatus(x) != PGRES_TUPLES_OK) {
            cg_err_set(err, CG_EIO, "migration %s failed: %s", m[k].name, PQresultErrorMessage(x));
            PQclear(x);
            PQclear(PQexec(c, "ROLLBACK"));
            PQclear(r);
            goto out;
        }
        PQclear(x);
        const char *p[3] = {ver, m[k].name, hex};
        PGresult *ins = srv_q(c, "INSERT INTO schema_migrations (version, name, sha256) VALUES ($1::int, $2, $3)", 3, p,
                              NULL, NULL, err);
        if (!ins || srv_exec(c, "COMMIT", err) < 0) {
            PQclear(ins);
            PQclear(PQexec(c, "ROLLBACK"));
            PQclear(r);
            goto out;
        }
        PQclear(ins);
        if (verbose) srv_log("info", "migration applied", "migration", m[k].name, NULL);
    }
    PQclear(r);
    rc = 0;
out:;
    cg_error e2 = {0};
    srv_exec(c, "SELECT pg_advisory_unlock(" MIGRATION_LOCK ")", &e2);
    return rc;
}
