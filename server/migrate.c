/* migrate.c — forward-only schema migrations (migrations/NNNN_name.sql, embedded
 * at build time). Applied at start while holding a session advisory lock on a
 * dedicated (non-pooled) connection, each in its own transaction, recorded with
 * its SHA-256 in schema_migrations. A database whose schema is newer than this
 * binary, or whose recorded checksum differs from the embedded file, is refused.
 * The ledger's statements are store_schema.c's. */
#include <stdlib.h>
#include <string.h>

#include "srv_store.h"

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

/* Refuses a database newer than this binary or a migration changed after it was applied. */
static int check_applied(const mig *m, size_t n, PGresult *r, cg_error *err) {
    int known = n ? m[n - 1].version : 0;
    for (int i = 0; i < PQntuples(r); i++) {
        int v = (int)strtol(PQgetvalue(r, i, 0), NULL, 10);
        if (v > known)
            return cg_err_set(err, CG_ESTATE,
                              "database schema version %d is newer than this candle-graph-server (knows up to %d); "
                              "refusing to start — upgrade the server",
                              v, known);
        for (size_t k = 0; k < n; k++) {
            if (m[k].version != v) continue;
            char hex[65];
            cg_sha256_hex(m[k].sql, m[k].len, hex);
            if (strcmp(hex, PQgetvalue(r, i, 2)) != 0)
                return cg_err_set(err, CG_ESTATE,
                                  "migration %s was changed after it was applied (checksum differs); refusing to start",
                                  m[k].name);
        }
    }
    return 0;
}

static bool is_applied(PGresult *r, int version) {
    for (int i = 0; i < PQntuples(r); i++)
        if ((int)strtol(PQgetvalue(r, i, 0), NULL, 10) == version) return true;
    return false;
}

int srv_migrate(PGconn *c, bool verbose, cg_error *err) {
    mig m[256];
    size_t n = list_migrations(m, 256);
    PGresult *r;
    if (srv_store_migrations_open(c, &r, err) < 0) return -1;
    int rc = check_applied(m, n, r, err);
    for (size_t k = 0; k < n && rc == 0; k++) {
        if (is_applied(r, m[k].version)) continue;
        char hex[65], ver[16];
        cg_sha256_hex(m[k].sql, m[k].len, hex);
        snprintf(ver, sizeof ver, "%d", m[k].version);
        rc = srv_store_migration_apply(c, ver, m[k].name, m[k].sql, hex, err);
        if (rc == 0 && verbose) srv_log("info", "migration applied", "migration", m[k].name, NULL);
    }
    PQclear(r);
    srv_store_migrations_close(c);
    return rc;
}
