/* signature.h — candle-graph/signature/1: detached Ed25519 signatures of a
 * bundle (ARCHITECTURE.md "Our additions"; CLI.md keygen/sign/verify-signature).
 *
 * Signed message: the UTF-8 bytes "candle-graph/signature/1", one 0x00 byte,
 * then the raw bytes of bundle.json. Sidecar file "<bundle>.sig.json" beside the
 * bundle directory (never inside it), pretty JSON + "\n", fields in order:
 * schema, algorithm ("ed25519"), key_id (lowercase hex of the first 16 bytes of
 * SHA-256 of the 32-byte public key), public_key (base64), manifest_sha256,
 * signature (base64 of 64 bytes).
 *
 * Key files: private key = PKCS#8 PEM ("BEGIN PRIVATE KEY", DER
 * 302e020100300506032b657004220420 || 32-byte seed, as `openssl genpkey
 * -algorithm ed25519` writes), written with mode 0600; public key =
 * SubjectPublicKeyInfo PEM ("BEGIN PUBLIC KEY", DER 302a300506032b6570032100 ||
 * 32 bytes). Public keys are also accepted as base64 of the raw 32 bytes.
 *
 * Ownership: key material lives in caller buffers; functions that touch a seed
 * wipe their own temporaries (sodium_memzero); callers wipe theirs.
 * Limits: key files and sidecars are read with a 64 KiB cap; cg_sig_verify_manifest
 * refuses a larger sidecar given as bytes (CG_ELIMIT).
 * Errors: -1 with err set; CG_EVERIFY for a signature/identity mismatch,
 * CG_EPARSE for malformed keys or sidecars, CG_EIO for file errors,
 * CG_EEXIST when keygen would overwrite a file. */
#ifndef CG_BUNDLE_SIGNATURE_H
#define CG_BUNDLE_SIGNATURE_H

#include <stddef.h>

#include "base/buf.h"
#include "base/error.h"
#include "bundle/verify.h"

#define CG_SIGNATURE_SCHEMA "candle-graph/signature/1"
#define CG_SIGNATURE_ALGORITHM "ed25519"
#define CG_SIG_PUBLIC_BYTES 32
#define CG_SIG_SEED_BYTES 32
#define CG_SIG_BYTES 64
#define CG_SIG_KEY_ID_HEX 33 /* 32 hex digits + NUL */

/* What a successful verification established. */
typedef struct cg_signature_info {
    char key_id[CG_SIG_KEY_ID_HEX];
    unsigned char public_key[CG_SIG_PUBLIC_BYTES];
    char manifest_sha256[65];
} cg_signature_info;

/* key_id of a raw public key. */
void cg_sig_key_id(const unsigned char pk[CG_SIG_PUBLIC_BYTES], char out[CG_SIG_KEY_ID_HEX]);

/* PEM encodings (append to out, each ends with "\n"). */
void cg_sig_private_pem(const unsigned char seed[CG_SIG_SEED_BYTES], cg_buf *out);
void cg_sig_public_pem(const unsigned char pk[CG_SIG_PUBLIC_BYTES], cg_buf *out);
/* Parses a PKCS#8 Ed25519 private key PEM; fills seed and the derived public key. */
int cg_sig_parse_private(const char *text, size_t len, unsigned char seed[CG_SIG_SEED_BYTES],
                         unsigned char pk[CG_SIG_PUBLIC_BYTES], cg_error *err);
/* Parses an SPKI Ed25519 public key PEM or base64 of the raw 32 bytes. */
int cg_sig_parse_public(const char *text, size_t len, unsigned char pk[CG_SIG_PUBLIC_BYTES], cg_error *err);
int cg_sig_load_private(const char *path, unsigned char seed[CG_SIG_SEED_BYTES],
                        unsigned char pk[CG_SIG_PUBLIC_BYTES], cg_error *err);
int cg_sig_load_public(const char *path, unsigned char pk[CG_SIG_PUBLIC_BYTES], cg_error *err);

/* Generates a key pair and writes key_path (0600, must not exist) and
 * key_path + ".pub" (0644, must not exist). pk_out may be NULL. */
int cg_sig_keygen_files(const char *key_path, unsigned char pk_out[CG_SIG_PUBLIC_BYTES], cg_error *err);

/* The signed message for manifest bytes (appended to out). */
void cg_sig_message(const void *manifest, size_t len, cg_buf *out);

/* Builds the sidecar JSON (pretty + "\n", appended to out) for manifest bytes. */
int cg_sig_sign_manifest(const void *manifest, size_t len, const unsigned char seed[CG_SIG_SEED_BYTES],
                         cg_buf *out, cg_error *err);
/* Checks sidecar JSON against manifest bytes. expected_pk (may be NULL) must equal
 * the sidecar's key when given. info (may be NULL) is filled on success.
 * Reasons: malformed_signature (the sidecar does not parse or a field is
 * missing or not base64), signature_invalid (over the size limit, unsupported
 * schema or algorithm, wrong key or manifest, bad Ed25519 signature). */
int cg_sig_verify_manifest(const void *manifest, size_t manifest_len, const char *sidecar, size_t sidecar_len,
                           const unsigned char *expected_pk, cg_signature_info *info, cg_error *err);

/* "<bundle>.sig.json" for the bundle directory (resolved with realpath, so
 * "." or "dir/" get a sidecar beside the directory). malloc'd; NULL on error. */
char *cg_signature_sidecar_path(const char *bundle, cg_error *err);

/* Verifies the bundle (cg_bundle_verify), signs the exact verified bundle.json
 * bytes and writes the sidecar atomically. sidecar_out (may be NULL) receives
 * the malloc'd sidecar path. */
int cg_bundle_sign(const char *bundle, const char *key_path, char **sidecar_out, cg_error *err);
/* Verifies the bundle and its sidecar; public_key_path (may be NULL) names the
 * key the sidecar must carry. receipt and info (may be NULL) are filled. */
int cg_bundle_verify_signature(const char *bundle, const char *public_key_path, cg_bundle_receipt *receipt,
                               cg_signature_info *info, cg_error *err);

#endif
