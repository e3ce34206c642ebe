/* fuzz_entry_signature.c — the signature sidecar and key parsers on untrusted
 * bytes (see fuzz_entry.h).
 *
 * Input layout: manifest bytes, one 0x00 byte, sidecar JSON (no 0x00: the
 * whole input is the sidecar and the manifest is empty). The whole input is
 * also parsed as a public key (SPKI PEM or raw base64) and as a private key
 * (PKCS#8 PEM). The corpus seeds are signed with the fixed seed below
 * (32 bytes of 0x42), whose public key is also passed as the expected key.
 *
 * Invariants: rejections are CG_EPARSE / CG_EVERIFY with a message; an
 * accepted sidecar's info names the key that verified (key_id = first 16
 * bytes of SHA-256 of the public key) and the manifest's SHA-256; acceptance
 * against the expected key implies acceptance without one; a parsed private
 * key's public half equals crypto_sign_seed_keypair of its seed; signing the
 * manifest with that key produces a sidecar that verifies. */
#include <sodium.h>
#include <string.h>

#include "base/buf.h"
#include "base/sha256.h"
#include "bundle/signature.h"
#include "fuzz_entry.h"

static const cg_errcode sig_codes[] = {CG_EPARSE, CG_ELIMIT, CG_EVERIFY, CG_OK};

static void fixed_public_key(unsigned char pk[CG_SIG_PUBLIC_BYTES]) {
    unsigned char seed[CG_SIG_SEED_BYTES], sk[crypto_sign_SECRETKEYBYTES];
    memset(seed, 0x42, sizeof seed);
    crypto_sign_seed_keypair(pk, sk, seed);
}

int cg_fuzz_signature(const uint8_t *data, size_t size) {
    CG_FUZZ_REQUIRE(sodium_init() >= 0, "sodium_init failed");
    const uint8_t *nul = memchr(data, 0, size);
    const uint8_t *manifest = data;
    size_t mlen = nul ? (size_t)(nul - data) : 0;
    const char *sidecar = nul ? (const char *)nul + 1 : (const char *)data;
    size_t slen = nul ? size - mlen - 1 : size;

    unsigned char pk[CG_SIG_PUBLIC_BYTES];
    fixed_public_key(pk);
    cg_signature_info info, info2;
    cg_error err, err2;
    cg_err_clear(&err);
    cg_err_clear(&err2);
    int rc = cg_sig_verify_manifest(manifest, mlen, sidecar, slen, NULL, &info, &err);
    int rc_pk = cg_sig_verify_manifest(manifest, mlen, sidecar, slen, pk, &info2, &err2);
    if (rc != 0) {
        cg_fuzz_check_error(&err, "cg_sig_verify_manifest", sig_codes);
        CG_FUZZ_REQUIRE(rc_pk != 0, "accepted with an expected key but rejected without one: %s", err.msg);
    } else {
        char id[CG_SIG_KEY_ID_HEX], hex[65];
        cg_sig_key_id(info.public_key, id);
        cg_sha256_hex(manifest, mlen, hex);
        CG_FUZZ_REQUIRE(strcmp(id, info.key_id) == 0, "info.key_id does not match info.public_key");
        CG_FUZZ_REQUIRE(strcmp(hex, info.manifest_sha256) == 0, "info.manifest_sha256 is not the manifest digest");
        if (rc_pk == 0)
            CG_FUZZ_REQUIRE(memcmp(info2.public_key, pk, sizeof pk) == 0, "accepted a key other than the expected one");
        else
            cg_fuzz_check_error(&err2, "cg_sig_verify_manifest (expected key)", sig_codes);
    }

    unsigned char ppk[CG_SIG_PUBLIC_BYTES];
    cg_err_clear(&err);
    if (cg_sig_parse_public((const char *)data, size, ppk, &err) != 0) {
        cg_fuzz_check_error(&err, "cg_sig_parse_public", sig_codes);
    } else {
        cg_buf pem = CG_BUF_INIT;
        cg_sig_public_pem(ppk, &pem);
        unsigned char again[CG_SIG_PUBLIC_BYTES];
        CG_FUZZ_REQUIRE(cg_sig_parse_public(pem.data, pem.len, again, &err) == 0, "written public PEM does not parse: %s",
                        err.msg);
        CG_FUZZ_REQUIRE(memcmp(again, ppk, sizeof again) == 0, "public PEM round trip changed the key");
        cg_buf_free(&pem);
    }

    unsigned char seed[CG_SIG_SEED_BYTES], spk[CG_SIG_PUBLIC_BYTES];
    cg_err_clear(&err);
    if (cg_sig_parse_private((const char *)data, size, seed, spk, &err) != 0) {
        cg_fuzz_check_error(&err, "cg_sig_parse_private", sig_codes);
    } else {
        unsigned char dpk[crypto_sign_PUBLICKEYBYTES], dsk[crypto_sign_SECRETKEYBYTES];
        crypto_sign_seed_keypair(dpk, dsk, seed);
        CG_FUZZ_REQUIRE(memcmp(dpk, spk, sizeof dpk) == 0, "private key parse derived the wrong public key");
        cg_buf sc = CG_BUF_INIT;
        CG_FUZZ_REQUIRE(cg_sig_sign_manifest(data, size, seed, &sc, &err) == 0, "signing failed: %s", err.msg);
        CG_FUZZ_REQUIRE(cg_sig_verify_manifest(data, size, sc.data, sc.len, spk, NULL, &err) == 0,
                        "a fresh signature does not verify: %s", err.msg);
        cg_buf_free(&sc);
        sodium_memzero(seed, sizeof seed);
        sodium_memzero(dsk, sizeof dsk);
    }
    return 0;
}
