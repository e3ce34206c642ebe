/* manifest.h — the bundle/1 manifest (bundle.json) model: parsing with serde
 * struct semantics and pretty serialization (protocol-bundles-comparison.md §1.2).
 *
 * Ownership: a parsed cg_bundle_manifest lives in the caller's arena (every
 * string and the files array); nothing is freed individually.
 * Limits: bundle.json is read with a cap of CG_BUNDLE_MANIFEST_MAX bytes.
 * Errors: parse errors return -1 with a message describing the first problem
 * (missing/duplicate field, wrong type); the caller adds context. */
#ifndef CG_BUNDLE_MANIFEST_H
#define CG_BUNDLE_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/json.h"

#define CG_BUNDLE_MANIFEST_NAME "bundle.json"
#define CG_BUNDLE_MANIFEST_MAX ((size_t)256 * 1024 * 1024)

typedef struct cg_bundle_file {
    const char *path;   /* relative, '/'-separated (NUL-free once path-checked) */
    size_t path_len;    /* byte length (a JSON string may contain \u0000) */
    uint64_t bytes;
    const char *sha256; /* as declared (not validated by the parser) */
} cg_bundle_file;

typedef struct cg_bundle_manifest {
    const char *schema;
    const char *run_id;
    size_t run_id_len;
    cg_bundle_file *files;
    size_t n_files;
} cg_bundle_manifest;

/* Parses bundle.json bytes as BundleManifest (unknown keys ignored, duplicate
 * keys and wrong types refused, like serde). Returns 0 or -1 (CG_EPARSE, or
 * the JSON parser's CG_ELIMIT; reason malformed_manifest). */
int cg_bundle_manifest_parse(cg_arena *a, const char *text, size_t len, cg_bundle_manifest *out,
                             cg_error *err);

/* Appends the manifest as pretty JSON + "\n" (field order schema, run_id, files;
 * files written in the given order — callers sort by path first). */
void cg_bundle_manifest_write(cg_buf *out, const cg_bundle_manifest *m);

/* Sorts files ascending by path (byte order). */
void cg_bundle_manifest_sort(cg_bundle_manifest *m);

#endif
