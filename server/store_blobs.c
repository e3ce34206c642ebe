/* store_blobs.c — the SQL of the pg blob store (blobstore.c, srv_store.h):
 * pg_blobs rows (digest, plain size) and their 1 MiB pg_blob_chunks, on the
 * connection the caller owns (the ingest transaction for puts, a pooled or
 * offline connection for reads). The byte path — reading the source, chunking,
 * materializing a read — stays in blobstore.c. */
#include <inttypes.h>
#include <stdlib.h>

#include "srv_store.h"

static const char SQL_PG_BLOB_CLAIM[] =
    "INSERT INTO pg_blobs (sha256, bytes) VALUES ($1, $2::bigint) ON CONFLICT DO NOTHING RETURNING 1";
static const char SQL_PG_BLOB_CHUNK_PUT[] =
    "INSERT INTO pg_blob_chunks (sha256, idx, data) VALUES ($1, $2::int, $3::bytea)";
static const char SQL_PG_BLOB_SIZE[] = "SELECT bytes FROM pg_blobs WHERE sha256 = $1";
static const char SQL_PG_BLOB_CHUNK[] = "SELECT data FROM pg_blob_chunks WHERE sha256 = $1 AND idx = $2::int";
/* plain bytes from pg_blobs, stored bytes from the chunks, the form from each
 * blob's first chunk (the form word, bytes 12–15, of a blob header; plain
 * without one: chunks of older servers) */
static const char SQL_PG_BLOB_SUM[] =
    "SELECT coalesce(sum(bytes), 0), (SELECT coalesce(sum(octet_length(data)), 0) FROM pg_blob_chunks), "
    "count(*) FILTER (WHERE f = 2), count(*) FILTER (WHERE f = 1), count(*) FILTER (WHERE f NOT IN (1, 2)) "
    "FROM (SELECT b.bytes, CASE WHEN octet_length(c.data) >= 64 AND substring(c.data FROM 1 FOR 8) = "
    "decode('894347424c4f420a', 'hex') THEN get_byte(c.data, 12) ELSE 0 END AS f "
    "FROM pg_blobs b LEFT JOIN pg_blob_chunks c ON c.sha256 = b.sha256 AND c.idx = 0) x";
static const char SQL_PG_BLOB_PROBE[] = "SELECT 1 FROM pg_blobs LIMIT 1";

int srv_store_pg_blob_claim(PGconn *c, const char *hex, uint64_t size, bool *fresh, cg_error *err) {
    char sz[32];
    snprintf(sz, sizeof sz, "%" PRIu64, size);
    const char *p[2] = {hex, sz};
    PGresult *r = srv_q(c, SQL_PG_BLOB_CLAIM, 2, p, NULL, NULL, err);
    if (!r) return -1;
    *fresh = PQntuples(r) == 1;
    PQclear(r);
    return 0;
}

int srv_store_pg_blob_chunk_put(PGconn *c, const char *hex, int idx, const char *data, size_t len, cg_error *err) {
    char ix[16];
    snprintf(ix, sizeof ix, "%d", idx);
    /* an empty chunk goes as text '' (binary length 0 would mean text anyway) */
    const char *q[3] = {hex, ix, len ? data : ""};
    int lens[3] = {0, 0, (int)len};
    PGresult *x = srv_q(c, SQL_PG_BLOB_CHUNK_PUT, 3, q, lens, NULL, err);
    if (!x) return -1;
    PQclear(x);
    return 0;
}

int srv_store_pg_blob_exists(PGconn *c, const char *hex, bool *exists, uint64_t *bytes, cg_error *err) {
    const char *p[1] = {hex};
    PGresult *r = srv_q(c, SQL_PG_BLOB_SIZE, 1, p, NULL, NULL, err);
    if (!r) return -1;
    *exists = PQntuples(r) == 1;
    if (*exists && bytes) *bytes = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return 0;
}

PGresult *srv_store_pg_blob_chunk(PGconn *c, const char *hex, int idx, cg_error *err) {
    char ix[16];
    snprintf(ix, sizeof ix, "%d", idx);
    const char *q[2] = {hex, ix};
    int lens[2] = {0, 0}, fmts[2] = {0, 0};
    PGresult *x = srv_fault_exec_params(c, SQL_PG_BLOB_CHUNK, 2, NULL, q, lens, fmts, 1);
    if (PQresultStatus(x) == PGRES_TUPLES_OK) return x;
    cg_err_set(err, CG_EIO, "database: %s", x ? PQresultErrorMessage(x) : PQerrorMessage(c));
    PQclear(x);
    return NULL;
}

int srv_store_pg_blob_sum(PGconn *c, srv_blob_totals *t) {
    PGresult *r = srv_q(c, SQL_PG_BLOB_SUM, 0, NULL, NULL, NULL, NULL);
    if (!r) return -1;
    t->plain = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    t->stored = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    t->n_zstd = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
    t->n_raw = strtoll(PQgetvalue(r, 0, 3), NULL, 10);
    t->n_plain = strtoll(PQgetvalue(r, 0, 4), NULL, 10);
    PQclear(r);
    return 0;
}

int srv_store_pg_blob_probe(PGconn *c, cg_error *err) {
    PGresult *r = srv_q(c, SQL_PG_BLOB_PROBE, 0, NULL, NULL, NULL, err);
    if (!r) return -1;
    PQclear(r);
    return 0;
}
