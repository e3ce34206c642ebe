/* signature.c — candle-graph/signature/1 (Ed25519 via libsodium; PEM key files). */
#include "bundle/signature.h"

#include "base/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/sha256.h"
#include "bundle/manifest.h"

#define KEY_FILE_MAX ((size_t)64 * 1024)

static const unsigned char PKCS8_PREFIX[16] = {0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06,
                                               0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20};
static const unsigned char SPKI_PREFIX[12] = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03,
                                              0x2b, 0x65, 0x70, 0x03, 0x21, 0x00};

static int sodium_ready(cg_error *err) {
    if (sodium_init() < 0) return cg_err_set(err, CG_EINVAL, "libsodium initialisation failed");
    return 0;
}

void cg_sig_key_id(const unsigned char pk[CG_SIG_PUBLIC_BYTES], char out[CG_SIG_KEY_ID_HEX]) {
    unsigned char d[32];
    cg_sha256_buf(pk, CG_SIG_PUBLIC_BYTES, d);
    cg_hex(d, 16, out);
}

static void b64_append(cg_buf *out, const unsigned char *bin, size_t n) {
    size_t cap = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL);
    char *tmp = cg_xalloc(cap, 1);
    sodium_bin2base64(tmp, cap, bin, n, sodium_base64_VARIANT_ORIGINAL);
    cg_buf_puts(out, tmp);
    cg_free(tmp);
}

static void pem_append(cg_buf *out, const char *label, const unsigned char *der, size_t n) {
    cg_buf b64 = CG_BUF_INIT;
    b64_append(&b64, der, n);
    cg_buf_printf(out, "-----BEGIN %s-----\n", label);
    for (size_t i = 0; i < b64.len; i += 64) {
        size_t k = b64.len - i < 64 ? b64.len - i : 64;
        cg_buf_append(out, b64.data + i, k);
        cg_buf_putc(out, '\n');
    }
    cg_buf_printf(out, "-----END %s-----\n", label);
    sodium_memzero(b64.data, b64.len);
    cg_buf_free(&b64);
}

void cg_sig_private_pem(const unsigned char seed[CG_SIG_SEED_BYTES], cg_buf *out) {
    unsigned char der[48];
    memcpy(der, PKCS8_PREFIX, 16);
    memcpy(der + 16, seed, 32);
    pem_append(out, "PRIVATE KEY", der, sizeof der);
    sodium_memzero(der, sizeof der);
}

void cg_sig_public_pem(const unsigned char pk[CG_SIG_PUBLIC_BYTES], cg_buf *out) {
    unsigned char der[44];
    memcpy(der, SPKI_PREFIX, 12);
    memcpy(der + 12, pk, 32);
    pem_append(out, "PUBLIC KEY", der, sizeof der);
}

/* Decodes base64 (whitespace ignored) into bin (cap bytes); returns length or -1. */
static long b64_decode(const char *s, size_t n, unsigned char *bin, size_t cap) {
    size_t got = 0;
    const char *end = NULL;
    if (sodium_base642bin(bin, cap, s, n, " \t\r\n", &got, &end, sodium_base64_VARIANT_ORIGINAL) != 0) return -1;
    if (end != s + n) return -1;
    return (long)got;
}

/* Finds the PEM body for label; returns 1 and sets [*b, *e) or 0 when absent. */
static int pem_body(const char *text, size_t len, const char *label, const char **b, const char **e) {
    char begin[64], endl[64];
    snprintf(begin, sizeof begin, "-----BEGIN %s-----", label);
    snprintf(endl, sizeof endl, "-----END %s-----", label);
    const char *tend = text + len;
    const char *p = NULL;
    size_t bl = strlen(begin), el = strlen(endl);
    for (const char *q = text; q + bl <= tend; q++)
        if (!memcmp(q, begin, bl)) { p = q + bl; break; }
    if (!p) return 0;
    for (const char *q = p; q + el <= tend; q++)
        if (!memcmp(q, endl, el)) { *b = p; *e = q; return 1; }
    return 0;
}

int cg_sig_parse_private(const char *text, size_t len, unsigned char seed[CG_SIG_SEED_BYTES],
                         unsigned char pk[CG_SIG_PUBLIC_BYTES], cg_error *err) {
    if (sodium_ready(err) != 0) return -1;
    const char *b, *e;
    if (!pem_body(text, len, "PRIVATE KEY", &b, &e))
        return cg_err_set(err, CG_EPARSE, "not a PKCS#8 private key PEM (BEGIN PRIVATE KEY)");
    unsigned char der[128];
    long n = b64_decode(b, (size_t)(e - b), der, sizeof der);
    if (n != 48 || memcmp(der, PKCS8_PREFIX, 16) != 0) {
        sodium_memzero(der, sizeof der);
        return cg_err_set(err, CG_EPARSE, "private key is not an Ed25519 PKCS#8 key");
    }
    memcpy(seed, der + 16, 32);
    sodium_memzero(der, sizeof der);
    unsigned char sk[crypto_sign_SECRETKEYBYTES];
    crypto_sign_seed_keypair(pk, sk, seed);
    sodium_memzero(sk, sizeof sk);
    return 0;
}

int cg_sig_parse_public(const char *text, size_t len, unsigned char pk[CG_SIG_PUBLIC_BYTES], cg_error *err) {
    if (sodium_ready(err) != 0) return -1;
    const char *b, *e;
    unsigned char der[128];
    if (pem_body(text, len, "PUBLIC KEY", &b, &e)) {
        long n = b64_decode(b, (size_t)(e - b), der, sizeof der);
        if (n != 44 || memcmp(der, SPKI_PREFIX, 12) != 0)
            return cg_err_set(err, CG_EPARSE, "public key is not an Ed25519 SubjectPublicKeyInfo key");
        memcpy(pk, der + 12, 32);
        return 0;
    }
    /* raw base64 of the 32 bytes (surrounding whitespace allowed) */
    while (len && (*text == ' ' || *text == '\t' || *text == '\r' || *text == '\n')) text++, len--;
    while (len && (text[len - 1] == ' ' || text[len - 1] == '\t' || text[len - 1] == '\r' || text[len - 1] == '\n')) len--;
    long n = b64_decode(text, len, der, sizeof der);
    if (n != 32)
        return cg_err_set(err, CG_EPARSE,
                          "public key is neither an Ed25519 SubjectPublicKeyInfo PEM nor base64 of 32 raw bytes");
    memcpy(pk, der, 32);
    return 0;
}

int cg_sig_load_private(const char *path, unsigned char seed[CG_SIG_SEED_BYTES],
                        unsigned char pk[CG_SIG_PUBLIC_BYTES], cg_error *err) {
    size_t len = 0;
    char *text = cg_read_file(path, KEY_FILE_MAX, &len, err);
    if (!text) return cg_err_context(err, "read private key %s", path);
    int rc = cg_sig_parse_private(text, len, seed, pk, err);
    sodium_memzero(text, len);
    cg_free(text);
    if (rc != 0) return cg_err_context(err, "load private key %s", path);
    return 0;
}

int cg_sig_load_public(const char *path, unsigned char pk[CG_SIG_PUBLIC_BYTES], cg_error *err) {
    size_t len = 0;
    char *text = cg_read_file(path, KEY_FILE_MAX, &len, err);
    if (!text) return cg_err_context(err, "read public key %s", path);
    int rc = cg_sig_parse_public(text, len, pk, err);
    cg_free(text);
    if (rc != 0) return cg_err_context(err, "load public key %s", path);
    return 0;
}

/* Creates path exclusively with mode and writes data; fsyncs. */
static int write_new(const char *path, const void *data, size_t len, mode_t mode, cg_error *err) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0) {
        int e = errno;
        return cg_err_set(err, e == EEXIST ? CG_EEXIST : CG_EIO, "create %s: %s", path, strerror(e));
    }
    if (fchmod(fd, mode) != 0) {
        int e = errno;
        close(fd);
        unlink(path);
        return cg_err_set(err, CG_EIO, "chmod %s: %s", path, strerror(e));
    }
    const char *p = data;
    size_t left = len;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            close(fd);
            unlink(path);
            return cg_err_set(err, CG_EIO, "write %s: %s", path, strerror(e));
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        int e = errno;
        unlink(path);
        return cg_err_set(err, CG_EIO, "sync %s: %s", path, strerror(e));
    }
    return 0;
}

int cg_sig_keygen_files(const char *key_path, unsigned char pk_out[CG_SIG_PUBLIC_BYTES], cg_error *err) {
    if (sodium_ready(err) != 0) return -1;
    char *pub_path = malloc(strlen(key_path) + 5);
    if (!pub_path) return cg_err_set(err, CG_ENOMEM, "out of memory");
    memcpy(pub_path, key_path, strlen(key_path));
    memcpy(pub_path + strlen(key_path), ".pub", 5);
    if (cg_path_exists(key_path) || cg_path_exists(pub_path)) {
        int rc = cg_err_set(err, CG_EEXIST, "refusing to overwrite existing key file %s",
                            cg_path_exists(key_path) ? key_path : pub_path);
        cg_free(pub_path);
        return rc;
    }
    unsigned char seed[32], pk[32], sk[crypto_sign_SECRETKEYBYTES];
    randombytes_buf(seed, sizeof seed);
    crypto_sign_seed_keypair(pk, sk, seed);
    sodium_memzero(sk, sizeof sk);
    cg_buf priv = CG_BUF_INIT, pub = CG_BUF_INIT;
    cg_sig_private_pem(seed, &priv);
    sodium_memzero(seed, sizeof seed);
    cg_sig_public_pem(pk, &pub);
    int rc = write_new(key_path, priv.data, priv.len, 0600, err);
    if (rc == 0) {
        rc = write_new(pub_path, pub.data, pub.len, 0644, err);
        if (rc != 0) unlink(key_path);
    }
    if (rc == 0) {
        char parent[PATH_MAX];
        cg_path_parent(key_path, parent, sizeof parent);
        rc = cg_fsync_path(parent, err);
    }
    sodium_memzero(priv.data, priv.len);
    cg_buf_free(&priv);
    cg_buf_free(&pub);
    cg_free(pub_path);
    if (rc == 0 && pk_out) memcpy(pk_out, pk, 32);
    return rc;
}

void cg_sig_message(const void *manifest, size_t len, cg_buf *out) {
    cg_buf_append(out, CG_SIGNATURE_SCHEMA, strlen(CG_SIGNATURE_SCHEMA) + 1); /* includes the 0x00 */
    cg_buf_append(out, manifest, len);
}

int cg_sig_sign_manifest(const void *manifest, size_t len, const unsigned char seed[CG_SIG_SEED_BYTES],
                         cg_buf *out, cg_error *err) {
    if (sodium_ready(err) != 0) return -1;
    unsigned char pk[32], sk[crypto_sign_SECRETKEYBYTES], sig[CG_SIG_BYTES];
    crypto_sign_seed_keypair(pk, sk, seed);
    cg_buf msg = CG_BUF_INIT;
    cg_sig_message(manifest, len, &msg);
    crypto_sign_detached(sig, NULL, (const unsigned char *)msg.data, msg.len, sk);
    sodium_memzero(sk, sizeof sk);
    cg_buf_free(&msg);
    char key_id[CG_SIG_KEY_ID_HEX], digest[65];
    cg_sig_key_id(pk, key_id);
    cg_sha256_hex(manifest, len, digest);
    cg_buf pkb = CG_BUF_INIT, sigb = CG_BUF_INIT;
    b64_append(&pkb, pk, 32);
    b64_append(&sigb, sig, CG_SIG_BYTES);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_jv *o = cg_jv_obj(&a);
    cg_jv_obj_put(&a, o, "schema", cg_jv_str_nocopy(&a, CG_SIGNATURE_SCHEMA));
    cg_jv_obj_put(&a, o, "algorithm", cg_jv_str_nocopy(&a, CG_SIGNATURE_ALGORITHM));
    cg_jv_obj_put(&a, o, "key_id", cg_jv_str(&a, key_id));
    cg_jv_obj_put(&a, o, "public_key", cg_jv_str(&a, pkb.data));
    cg_jv_obj_put(&a, o, "manifest_sha256", cg_jv_str(&a, digest));
    cg_jv_obj_put(&a, o, "signature", cg_jv_str(&a, sigb.data));
    cg_json_write(out, o, true);
    cg_buf_putc(out, '\n');
    cg_arena_free(&a);
    cg_buf_free(&pkb);
    cg_buf_free(&sigb);
    return 0;
}

static const char *sidecar_str(const cg_jv *o, const char *key, cg_error *err) {
    const cg_jv *v = cg_jv_get(o, key);
    const char *s = cg_jv_as_cstr(v);
    if (!s) {
        cg_err_setr(err, CG_R_MALFORMED_SIGNATURE, CG_EPARSE, "signature sidecar field `%s` is missing or not a string",
                    key);
        return NULL;
    }
    return s;
}

int cg_sig_verify_manifest(const void *manifest, size_t manifest_len, const char *sidecar, size_t sidecar_len,
                           const unsigned char *expected_pk, cg_signature_info *info, cg_error *err) {
    if (sodium_ready(err) != 0) return -1;
    if (sidecar_len > KEY_FILE_MAX) /* the cap the file loaders apply, for sidecars given as bytes */
        return cg_err_setr(err, CG_R_SIGNATURE_INVALID, CG_ELIMIT,
                           "signature sidecar is larger than the limit of %zu bytes", KEY_FILE_MAX);
    cg_arena a;
    cg_arena_init(&a, 0);
    int rc = -1;
    cg_json_limits lim;
    cg_json_limits_default(&lim);
    lim.max_string = KEY_FILE_MAX;
    cg_jv *o = cg_json_parse(&a, sidecar, sidecar_len, &lim, err);
    if (!o) {
        cg_err_reason(err, err && err->code == CG_EPARSE ? CG_R_MALFORMED_SIGNATURE : CG_R_SIGNATURE_INVALID);
        cg_err_context(err, "parse signature sidecar");
        goto out;
    }
    if (o->type != CG_JOBJ || cg_jv_obj_dup_key(o)) {
        cg_err_setr(err, CG_R_MALFORMED_SIGNATURE, CG_EPARSE,
                    "signature sidecar is not a JSON object with unique keys");
        goto out;
    }
    const char *schema = sidecar_str(o, "schema", err), *alg = NULL, *key_id = NULL, *pk64 = NULL, *digest = NULL,
               *sig64 = NULL;
    if (!schema || !(alg = sidecar_str(o, "algorithm", err)) || !(key_id = sidecar_str(o, "key_id", err)) ||
        !(pk64 = sidecar_str(o, "public_key", err)) || !(digest = sidecar_str(o, "manifest_sha256", err)) ||
        !(sig64 = sidecar_str(o, "signature", err)))
        goto out;
    if (strcmp(schema, CG_SIGNATURE_SCHEMA) != 0) {
        cg_err_setr(err, CG_R_SIGNATURE_INVALID, CG_EVERIFY, "unsupported signature schema %s; expected %s", schema,
                    CG_SIGNATURE_SCHEMA);
        goto out;
    }
    if (strcmp(alg, CG_SIGNATURE_ALGORITHM) != 0) {
        cg_err_setr(err, CG_R_SIGNATURE_INVALID, CG_EVERIFY, "unsupported signature algorithm %s; expected %s", alg,
                    CG_SIGNATURE_ALGORITHM);
        goto out;
    }
    unsigned char pk[64], sig[96];
    if (b64_decode(pk64, strlen(pk64), pk, sizeof pk) != 32) {
        cg_err_setr(err, CG_R_MALFORMED_SIGNATURE, CG_EPARSE, "signature public_key is not base64 of 32 bytes");
        goto out;
    }
    if (b64_decode(sig64, strlen(sig64), sig, sizeof sig) != CG_SIG_BYTES) {
        cg_err_setr(err, CG_R_MALFORMED_SIGNATURE, CG_EPARSE, "signature is not base64 of 64 bytes");
        goto out;
    }
    char want_id[CG_SIG_KEY_ID_HEX];
    cg_sig_key_id(pk, want_id);
    if (strcmp(key_id, want_id) != 0) {
        cg_err_setr(err, CG_R_SIGNATURE_INVALID, CG_EVERIFY, "signature key_id %s does not match its public key (%s)",
                    key_id, want_id);
        goto out;
    }
    if (expected_pk && sodium_memcmp(expected_pk, pk, 32) != 0) {
        char exp_id[CG_SIG_KEY_ID_HEX];
        cg_sig_key_id(expected_pk, exp_id);
        cg_err_setr(err, CG_R_SIGNATURE_INVALID, CG_EVERIFY, "signature was made with key %s, not the expected key %s",
                    key_id, exp_id);
        goto out;
    }
    char hex[65];
    cg_sha256_hex(manifest, manifest_len, hex);
    if (strcmp(digest, hex) != 0) {
        cg_err_setr(err, CG_R_SIGNATURE_INVALID, CG_EVERIFY,
                    "signature covers manifest %s but bundle.json has SHA-256 %s", digest, hex);
        goto out;
    }
    cg_buf msg = CG_BUF_INIT;
    cg_sig_message(manifest, manifest_len, &msg);
    int ok = crypto_sign_verify_detached(sig, (const unsigned char *)msg.data, msg.len, pk);
    cg_buf_free(&msg);
    if (ok != 0) {
        cg_err_setr(err, CG_R_SIGNATURE_INVALID, CG_EVERIFY,
                    "Ed25519 signature by key %s is not valid for this bundle manifest", key_id);
        goto out;
    }
    if (info) {
        memcpy(info->key_id, want_id, sizeof want_id);
        memcpy(info->public_key, pk, 32);
        memcpy(info->manifest_sha256, hex, sizeof hex);
    }
    rc = 0;
out:
    cg_arena_free(&a);
    return rc;
}

char *cg_signature_sidecar_path(const char *bundle, cg_error *err) {
    char *real = realpath(bundle, NULL);
    if (!real) {
        cg_err_set(err, CG_EIO, "resolve bundle directory %s: %s", bundle, strerror(errno));
        return NULL;
    }
    if (!strcmp(real, "/")) {
        cg_free(real);
        cg_err_set(err, CG_EINVAL, "the filesystem root cannot be a signed bundle");
        return NULL;
    }
    size_t n = strlen(real);
    char *p = malloc(n + sizeof ".sig.json");
    if (!p) {
        cg_free(real);
        cg_err_set(err, CG_ENOMEM, "out of memory");
        return NULL;
    }
    memcpy(p, real, n);
    memcpy(p + n, ".sig.json", sizeof ".sig.json");
    cg_free(real);
    return p;
}

/* Verifies the bundle and returns bundle.json bytes matching the receipt. */
static char *verified_manifest(const char *bundle, cg_bundle_receipt *r, size_t *len, cg_error *err) {
    if (cg_bundle_verify(bundle, r, err) != 0) return NULL;
    char *mp = cg_path_join(bundle, "bundle.json");
    if (!mp) {
        cg_err_set(err, CG_ENOMEM, "out of memory");
        return NULL;
    }
    char *m = cg_read_file(mp, CG_BUNDLE_MANIFEST_MAX, len, err);
    cg_free(mp);
    if (!m) return NULL;
    char hex[65];
    cg_sha256_hex(m, *len, hex);
    if (strcmp(hex, r->manifest_sha256) != 0) {
        cg_free(m);
        cg_err_set(err, CG_EVERIFY, "bundle manifest changed after initial verification");
        return NULL;
    }
    return m;
}

int cg_bundle_sign(const char *bundle, const char *key_path, char **sidecar_out, cg_error *err) {
    unsigned char seed[32], pk[32];
    if (cg_sig_load_private(key_path, seed, pk, err) != 0) return -1;
    cg_bundle_receipt r;
    size_t mlen = 0;
    char *m = verified_manifest(bundle, &r, &mlen, err);
    if (!m) {
        sodium_memzero(seed, sizeof seed);
        return cg_err_context(err, "refusing to sign %s", bundle);
    }
    cg_buf side = CG_BUF_INIT;
    int rc = cg_sig_sign_manifest(m, mlen, seed, &side, err);
    sodium_memzero(seed, sizeof seed);
    cg_free(m);
    char *sp = rc == 0 ? cg_signature_sidecar_path(bundle, err) : NULL;
    if (rc == 0 && !sp) rc = -1;
    if (rc == 0) rc = cg_write_file_atomic(sp, side.data, side.len, err);
    cg_buf_free(&side);
    if (rc == 0 && sidecar_out) *sidecar_out = sp;
    else cg_free(sp);
    return rc;
}

int cg_bundle_verify_signature(const char *bundle, const char *public_key_path, cg_bundle_receipt *receipt,
                               cg_signature_info *info, cg_error *err) {
    unsigned char pk[32];
    if (public_key_path && cg_sig_load_public(public_key_path, pk, err) != 0) return -1;
    cg_bundle_receipt r;
    size_t mlen = 0;
    char *m = verified_manifest(bundle, &r, &mlen, err);
    if (!m) return -1;
    char *sp = cg_signature_sidecar_path(bundle, err);
    if (!sp) {
        cg_free(m);
        return -1;
    }
    size_t slen = 0;
    char *side = cg_read_file(sp, KEY_FILE_MAX, &slen, err);
    int rc = -1;
    if (!side) {
        cg_err_context(err, "read signature sidecar");
    } else {
        rc = cg_sig_verify_manifest(m, mlen, side, slen, public_key_path ? pk : NULL, info, err);
        if (rc != 0) cg_err_context(err, "verify signature %s", sp);
    }
    if (rc == 0 && receipt) *receipt = r;
    cg_free(side);
    cg_free(sp);
    cg_free(m);
    return rc;
}
