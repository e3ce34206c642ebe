/* verify.h — bundle/1 deep verification (protocol-bundles-comparison.md §1.5, §1.6).
 *
 * cg_bundle_verify runs every check of the spec table in order and fails with
 * the upstream message text of the first failing check. `check` receives which
 * check failed (for the server's error codes). The receipt owns no heap memory. */
#ifndef CG_BUNDLE_VERIFY_H
#define CG_BUNDLE_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/error.h"
#include "base/json.h"

#define CG_BUNDLE_SCHEMA "candle-graph/bundle/1"
#define CG_BUNDLE_VERIFICATION_SCHEMA "candle-graph/bundle-verification/1"

/* Which verification check failed; mapped to API.md 422 codes by the server. */
typedef enum cg_bundle_check {
    CG_BCHK_NONE = 0,
    CG_BCHK_NOT_DIRECTORY,       /* 1 */
    CG_BCHK_MANIFEST_UNREADABLE, /* 2 */
    CG_BCHK_MANIFEST_PARSE,      /* 3  -> malformed_manifest */
    CG_BCHK_SCHEMA,              /* 4  -> unsupported_bundle_schema */
    CG_BCHK_UNSAFE_PATH,         /* 5  -> unsafe_path */
    CG_BCHK_DUPLICATE_PATH,      /* 6  -> duplicate_path */
    CG_BCHK_INVALID_DIGEST,      /* 7  -> invalid_digest */
    CG_BCHK_SPECIAL_FILE,        /* 8  -> special_file (symlinks too) */
    CG_BCHK_UNDECLARED_FILE,     /* 9  -> undeclared_file */
    CG_BCHK_MISSING_FILE,        /* 10 -> missing_file */
    CG_BCHK_NOT_REGULAR,         /* 11 -> special_file */
    CG_BCHK_SIZE_MISMATCH,       /* 12 -> size_mismatch */
    CG_BCHK_DIGEST_MISMATCH,     /* 13 -> digest_mismatch */
    CG_BCHK_OVERFLOW,            /* 14 */
    CG_BCHK_IO,                  /* an I/O error while hashing */
} cg_bundle_check;

typedef struct cg_bundle_receipt {
    char run_id[1024];            /* manifest run_id (truncated beyond 1023 bytes: refused) */
    char manifest_sha256[65];     /* lowercase hex of raw bundle.json bytes */
    uint64_t files_verified;
    uint64_t bytes_verified;
} cg_bundle_receipt;

/* Full point-in-time verification of the bundle directory `root`.
 * Returns 0 and fills `out`, or -1 with err set and *check (may be NULL) set. */
int cg_bundle_verify(const char *root, cg_bundle_receipt *out, cg_bundle_check *check, cg_error *err);

/* bundle-verification/1 receipt JSON (field order as the spec). */
cg_jv *cg_bundle_receipt_to_json(cg_arena *a, const cg_bundle_receipt *r);

/* §1.6 post-read re-check of the consumed files against the initial receipt. */
int cg_bundle_verify_consumed(const char *root, const cg_bundle_receipt *initial,
                              const char *const *consumed, size_t n_consumed, cg_error *err);

/* The same two on a bundle opened once (bundle/opened.h): checks 4–14 on the
 * handle's parsed manifest, every file reached through its descriptor;
 * cg_bundle_verify is cg_bundle_open_dir + cg_bundle_verify_handle. */
struct cg_bundle_handle;
int cg_bundle_verify_handle(const struct cg_bundle_handle *h, cg_bundle_receipt *out, cg_bundle_check *check,
                            cg_error *err);
int cg_bundle_verify_consumed_handle(const struct cg_bundle_handle *h, const cg_bundle_receipt *initial,
                                     const char *const *consumed, size_t n_consumed, cg_error *err);

/* Safe relative bundle path (§1.5 check 5, without the bundle.json reservation). */
bool cg_bundle_path_is_safe(const char *path);

#endif
