/* campaign.h — campaign plans (candle-graph/campaign/1) and their status
 * reconciliation (candle-graph/campaign-status/1), spec §4.1–4.2.
 *
 * The status JSON is built from one cg_capture_state per planned capture, so
 * the filesystem path (cg_campaign_status: verifies each planned bundle) and a
 * server that keeps per-bundle facts in its index
 * (cg_capture_state_from_facts + cg_campaign_status_from_states) produce the
 * same document.
 *
 * Ownership: manifests, states and JSON live in the caller's arena.
 * Errors: loaders return -1 / NULL with err set to the spec's message; the
 * validation messages carry no prefix, read/parse failures are prefixed
 * "read campaign manifest PATH" / "parse campaign manifest PATH".
 * Reasons: cg_campaign_manifest_parse bad_request (the document is not a valid
 * campaign manifest); cg_campaign_require_published campaign_conflict. */
#ifndef CG_CAMPAIGN_CAMPAIGN_H
#define CG_CAMPAIGN_CAMPAIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/error.h"
#include "base/json.h"
#include "trace/trace.h"

#define CG_CAMPAIGN_SCHEMA "candle-graph/campaign/1"
#define CG_CAMPAIGN_STATUS_SCHEMA "candle-graph/campaign-status/1"

typedef struct cg_planned_capture {
    uint64_t capture_step;
    const char *bundle; /* as written in the manifest (safe relative path) */
} cg_planned_capture;

typedef struct cg_campaign_manifest {
    const char *campaign_id;
    const char *entrypoint;
    cg_planned_capture *planned; /* manifest order */
    size_t n_planned;
} cg_campaign_manifest;

/* Parses and validates manifest JSON text (unknown keys are ignored). */
int cg_campaign_manifest_parse(cg_arena *a, const char *text, size_t len, cg_campaign_manifest *out,
                               cg_error *err);
/* Reads + parses + validates a manifest file. */
int cg_campaign_manifest_load(cg_arena *a, const char *path, cg_campaign_manifest *out, cg_error *err);
/* The validation rules alone (schema already checked by parse). */
int cg_campaign_manifest_validate(const cg_campaign_manifest *m, cg_error *err);
/* The manifest as campaign/1 JSON. */
cg_jv *cg_campaign_manifest_to_json(cg_arena *a, const cg_campaign_manifest *m);
/* A planned bundle path resolved against the manifest file's parent directory
 * (or "."): "dir/manifest.json" + "b1" → "dir/b1", "manifest.json" → "./b1".
 * Returned string lives in a. */
char *cg_campaign_resolve_bundle(cg_arena *a, const char *manifest_path, const char *bundle);

typedef enum cg_capture_state_kind {
    CG_CAPTURE_MISSING = 0,
    CG_CAPTURE_VERIFICATION_FAILED,
    CG_CAPTURE_IDENTITY_MISMATCH,
    CG_CAPTURE_FAILED_RUN,
    CG_CAPTURE_PUBLISHED,
} cg_capture_state_kind;
/* "missing" | "verification_failed" | "identity_mismatch" | "failed_run" | "published" */
const char *cg_capture_state_name(cg_capture_state_kind k);

typedef struct cg_capture_state {
    cg_capture_state_kind kind;
    const char *message;         /* verification_failed, identity_mismatch */
    const char *run_id;          /* failed_run, published (bundle receipt run ID) */
    const char *reason;          /* failed_run: terminal reason, NULL → null */
    const char *manifest_sha256; /* published */
} cg_capture_state;

/* Steps 4–7 of the reconciliation from facts of a verified, parsed bundle:
 * entrypoint / capture_step mismatch, failed run, published. Strings are
 * copied into a. */
void cg_capture_state_from_facts(cg_arena *a, const cg_campaign_manifest *m, const cg_planned_capture *planned,
                                 const char *trace_entrypoint, uint64_t trace_capture_step, cg_outcome outcome,
                                 const char *terminal_reason, const char *receipt_run_id,
                                 const char *manifest_sha256, cg_capture_state *out);
/* The whole reconciliation of one planned capture on the filesystem
 * (missing → verify → parse → facts). Never fails. */
void cg_capture_state_reconcile(cg_arena *a, const cg_campaign_manifest *m, const cg_planned_capture *planned,
                                const char *manifest_path, cg_capture_state *out);

/* campaign-status/1 from one state per planned capture (states[i] belongs to
 * m->planned[i]); captures are sorted by capture_step. */
cg_jv *cg_campaign_status_from_states(cg_arena *a, const cg_campaign_manifest *m, const cg_capture_state *states);
/* Loads the manifest and reconciles every planned capture. NULL only when
 * the manifest cannot be loaded. If states_out is non-NULL it receives the
 * states array (arena-owned, manifest order). */
cg_jv *cg_campaign_status(cg_arena *a, const char *manifest_path, cg_capture_state **states_out,
                          cg_campaign_manifest *manifest_out, cg_error *err);

/* Series manifest mode gate: 0 when every planned capture is published, else
 * -1 with "series requires every planned capture to be published; not
 * published: step N (bundle): state_name, …; run `campaign-status` for the
 * full reconciliation" (captures in capture-step order). */
int cg_campaign_require_published(const cg_campaign_manifest *m, const cg_capture_state *states, cg_error *err);
/* The planned captures' indices in capture-step order (malloc'd; caller frees). */
size_t *cg_campaign_step_order(const cg_campaign_manifest *m);

/* The crate's is_safe_relative_path for a planned bundle path: non-empty, no
 * backslash, not absolute, and every component (as Rust's Path::components
 * yields them: empty and interior "." segments dropped) a normal name; so
 * "runs/./b1" and "a//b" are safe, "./b1", "../x" and "a/../b" are not. */
bool cg_campaign_bundle_path_is_safe(const char *path);

#endif
