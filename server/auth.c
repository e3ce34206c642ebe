/* auth.c — bearer tokens (random 32 bytes, shown once, stored as SHA-256) with
 * scopes upload/read/admin, and Ed25519 signer-key parsing and key ids. */
#include <string.h>

#include <sodium.h>

#include "bundle/signature.h"
#include "srv_store.h"

static const char *const scope_names[] = {"read", "upload", "admin"};
static const unsigned scope_bits[] = {SRV_SCOPE_READ, SRV_SCOPE_UPLOAD, SRV_SCOPE_ADMIN};

static unsigned scope_bit(const char *s, size_t n) {
    for (size_t i = 0; i < 3; i++)
        if (strlen(scope_names[i]) == n && memcmp(scope_names[i], s, n) == 0) return scope_bits[i];
    return 0;
}

unsigned srv_scopes_parse_list(const cg_jv *arr, bool *bad) {
    unsigned m = 0;
    *bad = !arr || arr->type != CG_JARR || cg_jv_len(arr) == 0;
    for (size_t i = 0; !*bad && i < cg_jv_len(arr); i++) {
        const char *s = cg_jv_as_str(cg_jv_at(arr, i));
        unsigned b = s ? scope_bit(s, strlen(s)) : 0;
        if (!b) *bad = true;
        m |= b;
    }
    return m;
}

unsigned srv_scopes_parse_csv(const char *csv, bool *bad) {
    unsigned m = 0;
    *bad = !csv || !*csv;
    while (csv && *csv && !*bad) {
        const char *e = strchr(csv, ',');
        size_t n = e ? (size_t)(e - csv) : strlen(csv);
        unsigned b = scope_bit(csv, n);
        if (!b) *bad = true;
        m |= b;
        csv = e ? e + 1 : csv + n;
    }
    return m;
}

cg_jv *srv_scopes_json(cg_arena *a, unsigned scopes) {
    cg_jv *arr = cg_jv_arr(a);
    /* fixed order: admin, upload, read (as `admin bootstrap` documents) */
    if (scopes & SRV_SCOPE_ADMIN) cg_jv_arr_push(a, arr, cg_jv_str(a, "admin"));
    if (scopes & SRV_SCOPE_UPLOAD) cg_jv_arr_push(a, arr, cg_jv_str(a, "upload"));
    if (scopes & SRV_SCOPE_READ) cg_jv_arr_push(a, arr, cg_jv_str(a, "read"));
    return arr;
}

static void scopes_pg(unsigned scopes, char *out, size_t outsz) {
    snprintf(out, outsz, "{%s%s%s%s%s}", scopes & SRV_SCOPE_ADMIN ? "admin" : "",
             (scopes & SRV_SCOPE_ADMIN) && (scopes & (SRV_SCOPE_UPLOAD | SRV_SCOPE_READ)) ? "," : "",
             scopes & SRV_SCOPE_UPLOAD ? "upload" : "",
             (scopes & SRV_SCOPE_UPLOAD) && (scopes & SRV_SCOPE_READ) ? "," : "", scopes & SRV_SCOPE_READ ? "read" : "");
}

int srv_token_create(srv_db db, const char *name, unsigned scopes, cg_arena *a, const char **id,
                     const char **token, cg_error *err) {
    unsigned char secret[32], idb[8], hash[32];
    char hex[65], idhex[17], sc[64];
    randombytes_buf(secret, sizeof secret);
    randombytes_buf(idb, sizeof idb);
    cg_hex(secret, sizeof secret, hex);
    cg_hex(idb, sizeof idb, idhex);
    char *tok = cg_arena_printf(a, "cgt_%s", hex);
    char *tid = cg_arena_printf(a, "tok_%s", idhex);
    cg_sha256_buf(tok, strlen(tok), hash);
    scopes_pg(scopes, sc, sizeof sc);
    int rc = srv_store_token_insert(db, tid, name, hash, sc, err);
    sodium_memzero(secret, sizeof secret);
    sodium_memzero(hex, sizeof hex);
    if (rc < 0) return -1;
    *id = tid;
    *token = tok;
    return 0;
}

int srv_token_check(srv_db db, const char *token, cg_arena *a, const char **id, unsigned *scopes, cg_error *err) {
    if (strncmp(token, "cgt_", 4) != 0 || strlen(token) != 68 || !cg_is_sha256_hex(token + 4)) return 0;
    unsigned char hash[32];
    cg_sha256_buf(token, strlen(token), hash);
    PGresult *r = srv_store_token_lookup(db, hash, err);
    if (!r) return -1;
    int ok = PQntuples(r) == 1;
    if (ok) {
        bool bad;
        *id = cg_arena_strdup(a, PQgetvalue(r, 0, 0));
        *scopes = srv_scopes_parse_csv(PQgetvalue(r, 0, 1), &bad);
    }
    PQclear(r);
    return ok;
}

/* Key formats are the library's (bundle/signature.h): SPKI PEM or raw base64. */
/* A registered key must be a point of the prime-order subgroup: the all-zero
 * encoding and the other low-order points verify forged signatures under
 * lax verifiers, so they are refused here whatever the verifier does. */
int srv_pubkey_parse(const char *text, unsigned char pk[32], cg_error *err) {
    if (cg_sig_parse_public(text, strlen(text), pk, err) < 0) return -1;
    if (!crypto_core_ed25519_is_valid_point(pk))
        return cg_err_set(err, CG_EPARSE, "public_key is not a valid Ed25519 key (low-order or not on the curve)");
    return 0;
}

void srv_key_id(const unsigned char pk[32], char out[33]) { cg_sig_key_id(pk, out); }
