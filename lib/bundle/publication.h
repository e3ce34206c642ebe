/* publication.h — capture-to-bundle publication with idempotent crash
 * reconciliation (protocol-bundles-comparison.md §2).
 *
 * A cg_capture_run owns a live trace session writing to a hidden staging trace
 * beside the destination (".{name}.trace-{pid}-{unix_nanos}.jsonl"), a copy of
 * the planned run coordinates (entrypoint, correlation_id, phase, capture_step,
 * device) and an optional Nsight directory. Publishing finishes the session,
 * re-runs reconciliation, publishes the bundle (cg_publish_bundle), verifies it
 * again and deletes the staged trace. On a publish failure the staged trace is
 * kept and its path named in the error.
 *
 * Retry identity is the planned coordinates, never bytes or run ID: a retried
 * capture (new run ID) whose destination already holds a verified bundle of the
 * same planned capture gets an `already_published` receipt and no recapture.
 *
 * Ownership: cg_capture_run_free releases the run (and an unfinished session,
 * which leaves its staged trace without a terminal record — like a crash).
 * Receipts own no heap memory. Errors: -1 with err; messages as the spec. */
#ifndef CG_BUNDLE_PUBLICATION_H
#define CG_BUNDLE_PUBLICATION_H

#include <stdbool.h>

#include "base/arena.h"
#include "base/error.h"
#include "base/json.h"
#include "bundle/verify.h"
#include "capture/capture.h"

#define CG_PUBLICATION_SCHEMA "candle-graph/publication/1"

typedef enum cg_publication_status {
    CG_PUBLICATION_PUBLISHED = 0,
    CG_PUBLICATION_ALREADY_PUBLISHED,
} cg_publication_status;

typedef struct cg_publication_receipt {
    cg_publication_status status;
    char bundle_path[4096];          /* destination as given (truncated beyond 4095 bytes) */
    cg_bundle_receipt verification;  /* run_id = verification.run_id */
} cg_publication_receipt;

/* publication/1 JSON: schema, status, bundle_path, run_id, verification. */
cg_jv *cg_publication_receipt_to_json(cg_arena *a, const cg_publication_receipt *r);

typedef struct cg_capture_run cg_capture_run;

typedef enum cg_capture_begin_kind {
    CG_CAPTURE_ACTIVE = 0,           /* run is set: capture, then publish */
    CG_CAPTURE_ALREADY_PUBLISHED,    /* receipt is set: nothing to capture */
} cg_capture_begin_kind;

typedef struct cg_capture_begin {
    cg_capture_begin_kind kind;
    cg_capture_run *run;              /* ACTIVE: owned by the caller (cg_capture_run_free) */
    cg_publication_receipt receipt;   /* ALREADY_PUBLISHED */
} cg_capture_begin;

/* §2.2: refuses a destination below an existing bundle ("refusing to publish
 * bundle … inside existing bundle …"), reconciles, else opens the session. */
int cg_capture_run_begin(const char *destination, const cg_profile_run *run, cg_capture_begin *out, cg_error *err);
cg_session *cg_capture_run_session(cg_capture_run *r);
/* Copies dir; the directory is read when publishing. */
int cg_capture_run_with_nsight_dir(cg_capture_run *r, const char *dir, cg_error *err);
const char *cg_capture_run_destination(const cg_capture_run *r);
const char *cg_capture_run_staging_trace(const cg_capture_run *r);
/* Finish the session as complete / as an explicit failed capture, then publish.
 * May be called once; the run must still be freed. */
int cg_capture_run_publish(cg_capture_run *r, cg_publication_receipt *out, cg_error *err);
int cg_capture_run_publish_failed(cg_capture_run *r, const char *reason, cg_publication_receipt *out,
                                  cg_error *err);
void cg_capture_run_free(cg_capture_run *r);

/* §2.3: *found = false when destination does not exist; otherwise it must be a
 * verifiable bundle of the same planned capture (else an error) and out gets
 * an already_published receipt. */
int cg_reconcile_published_bundle(const char *destination, const cg_profile_run *run, bool *found,
                                  cg_publication_receipt *out, cg_error *err);

/* Refuses destination when a proper ancestor holds bundle.json (no nested bundles). */
int cg_publication_check_not_nested(const char *destination, cg_error *err);

#endif
