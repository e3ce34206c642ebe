/* store_admin.c — the SQL of API tokens and signer keys (srv_store.h), shared
 * by the admin routes (pooled connections) and `candle-graph-server admin`
 * (its own connection) through srv_db. */
#include <string.h>

#include "srv_store.h"

#define TS_SECONDS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"

static const char SQL_TOKEN_INSERT[] =
    "INSERT INTO api_tokens (id, name, token_hash, scopes) VALUES ($1, $2, $3, $4::text[])";

static const char SQL_TOKEN_LOOKUP[] =
    "SELECT id, array_to_string(scopes, ',') FROM api_tokens WHERE token_hash = $1 AND "
    "revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())";

/* API tokens and signer keys are listed and revoked alike: by their id column,
 * name, one column of their own, and the two timestamps. */
#define SQL_CREDENTIALS_LIST(table, idcol, own)                                                                   \
    "SELECT " idcol ", name, " own ", " TS_SECONDS("created_at") ", " TS_SECONDS("revoked_at") " FROM " table \
    " ORDER BY created_at, " idcol
#define SQL_CREDENTIAL_REVOKE(table, idcol)                                                                       \
    "UPDATE " table " SET revoked_at = coalesce(revoked_at, now()) WHERE " idcol " = $1 RETURNING " idcol

static const char SQL_TOKENS_LIST[] = SQL_CREDENTIALS_LIST("api_tokens", "id", "array_to_string(scopes, ',')");
static const char SQL_TOKEN_REVOKE[] = SQL_CREDENTIAL_REVOKE("api_tokens", "id");

static const char SQL_KEY_INSERT[] =
    "INSERT INTO signer_keys (key_id, name, public_key) VALUES ($1, $2, $3) ON CONFLICT (key_id) "
    "DO NOTHING RETURNING key_id";

static const char SQL_KEYS_LIST[] = SQL_CREDENTIALS_LIST("signer_keys", "key_id", "encode(public_key, 'base64')");
static const char SQL_KEY_REVOKE[] = SQL_CREDENTIAL_REVOKE("signer_keys", "key_id");

PGresult *srv_store_db_q(srv_db db, const char *sql, int n, const char *const *params, const int *bin_lens,
                         cg_error *err) {
    if (db.conn) return srv_q(db.conn, sql, n, params, bin_lens, NULL, err);
    PGconn *c = srv_pool_get(db.pool, err);
    if (!c) return NULL;
    PGresult *x = srv_q(c, sql, n, params, bin_lens, NULL, err);
    srv_pool_put(db.pool, c);
    return x;
}

int srv_store_token_insert(srv_db db, const char *id, const char *name, const unsigned char hash[32],
                           const char *scopes_pg, cg_error *err) {
    const char *p[4] = {id, name, (const char *)hash, scopes_pg};
    int lens[4] = {0, 0, 32, 0};
    PGresult *x = srv_store_db_q(db, SQL_TOKEN_INSERT, 4, p, lens, err);
    PQclear(x);
    return x ? 0 : -1;
}

PGresult *srv_store_token_lookup(srv_db db, const unsigned char hash[32], cg_error *err) {
    const char *p[1] = {(const char *)hash};
    int lens[1] = {32};
    return srv_store_db_q(db, SQL_TOKEN_LOOKUP, 1, p, lens, err);
}

PGresult *srv_store_tokens_list(srv_db db, cg_error *err) {
    return srv_store_db_q(db, SQL_TOKENS_LIST, 0, NULL, NULL, err);
}

PGresult *srv_store_keys_list(srv_db db, cg_error *err) {
    return srv_store_db_q(db, SQL_KEYS_LIST, 0, NULL, NULL, err);
}

int srv_store_key_insert(srv_db db, const char *key_id, const char *name, const unsigned char pk[32], bool *fresh,
                         cg_error *err) {
    const char *p[3] = {key_id, name, (const char *)pk};
    int lens[3] = {0, 0, 32};
    PGresult *x = srv_store_db_q(db, SQL_KEY_INSERT, 3, p, lens, err);
    if (!x) return -1;
    *fresh = PQntuples(x) == 1;
    PQclear(x);
    return 0;
}

int srv_store_revoke(srv_db db, bool key, const char *id, cg_error *err) {
    const char *p[1] = {id};
    PGresult *x = srv_store_db_q(db, key ? SQL_KEY_REVOKE : SQL_TOKEN_REVOKE, 1, p, NULL, err);
    if (!x) return -1;
    int n = PQntuples(x) > 0;
    PQclear(x);
    return n;
}
