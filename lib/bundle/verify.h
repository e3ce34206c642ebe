/* verify.h — bundle/1 deep verification (protocol-bundles-comparison.md §1.5, §1.6).
 *
 * cg_bundle_verify runs every check of the spec table in order and fails with
 * the upstream message text of the first failing check; err->reason names the
 * check (base/reason.def): malformed_manifest (2–3, bundle.json missing,
 * unreadable or not parsing), unsupported_bundle_schema (4), unsafe_path (5),
 * duplicate_path (6), invalid_digest (7), special_file (8 and 11: links and
 * special files), undeclared_file (9), missing_file (10), size_mismatch (12),
 * digest_mismatch (13), payload_too_large (14, a byte count overflow),
 * malformed_archive (1, root is not a directory); CG_R_NONE for a local failure
 * (out of memory, an I/O error while walking or hashing). The receipt owns no
 * heap memory. */
#ifndef CG_BUNDLE_VERIFY_H
#define CG_BUNDLE_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/error.h"
#include "base/json.h"

#define CG_BUNDLE_SCHEMA "candle-graph/bundle/1"
#define CG_BUNDLE_VERIFICATION_SCHEMA "candle-graph/bundle-verification/1"

typedef struct cg_bundle_receipt {
    char run_id[1024];            /* manifest run_id (truncated beyond 1023 bytes: refused) */
    char manifest_sha256[65];     /* lowercase hex of raw bundle.json bytes */
    uint64_t files_verified;
    uint64_t bytes_verified;
} cg_bundle_receipt;

/* Full point-in-time verification of the bundle directory `root`.
 * Returns 0 and fills `out`, or -1 with err (and its reason) set. */
int cg_bundle_verify(const char *root, cg_bundle_receipt *out, cg_error *err);
/* The same checks and outcome, with every hashed file of 8 MiB or more
 * leaving the page cache behind the reading (posix_fadvise DONTNEED, advice
 * only; smaller files stay cached): for a caller that reads none of the large
 * files again soon (publication's check of the bundle it just wrote), so that
 * a multi-GB bundle reuses its page-cache pages instead of taking fresh ones. */
int cg_bundle_verify_drop_behind(const char *root, cg_bundle_receipt *out, cg_error *err);

/* bundle-verification/1 receipt JSON (field order as the spec). */
cg_jv *cg_bundle_receipt_to_json(cg_arena *a, const cg_bundle_receipt *r);

/* §1.6 post-read re-check of the consumed files against the initial receipt.
 * A file or the manifest that changed (or vanished) since: -1 with reason
 * digest_mismatch; CG_R_NONE for a local failure (memory, I/O while hashing). */
int cg_bundle_verify_consumed(const char *root, const cg_bundle_receipt *initial,
                              const char *const *consumed, size_t n_consumed, cg_error *err);

/* The same two on a bundle opened once (bundle/opened.h): checks 4–14 on the
 * handle's parsed manifest, every file reached through its descriptor;
 * cg_bundle_verify is cg_bundle_open_dir + cg_bundle_verify_handle. */
struct cg_bundle_handle;
int cg_bundle_verify_handle(const struct cg_bundle_handle *h, cg_bundle_receipt *out, cg_error *err);
int cg_bundle_verify_consumed_handle(const struct cg_bundle_handle *h, const cg_bundle_receipt *initial,
                                     const char *const *consumed, size_t n_consumed, cg_error *err);

/* Safe relative bundle path (§1.5 check 5, without the bundle.json reservation). */
bool cg_bundle_path_is_safe(const char *path);

#endif
