/* semantic.h — run-ID binding and semantic verification of a bundle that
 * already passed cg_bundle_verify (spec §7 `verify --semantic`; ARCHITECTURE.md
 * ingest step 4).
 *
 * 1. trace.jsonl must parse and its meta run_id must equal the manifest run_id
 *    ("bundle manifest run ID … does not match its trace run ID …").
 * 2. evidence.json must parse; when its schema is candle-graph/evidence/4 the
 *    packet is rebuilt once from the bundle's trace.jsonl (+ nsight/ when
 *    present) and must be equal as a JSON value (streamed against the file's
 *    bytes first: no DOM of either side unless the bytes differ) (the crate's "semantic verification
 *    failed: rederived evidence differs from published evidence.json for
 *    ROOT", ROOT as given; the first differing member goes to a
 *    cg_semantic_diff where the caller asks for it).
 *    Another evidence schema is CG_SEMANTIC_NOT_REDERIVABLE when
 *    allow_not_rederivable, else a failure.
 * 3. A post-read re-check (cg_bundle_verify_consumed) of trace.jsonl,
 *    evidence.json and every declared nsight/ file.
 * No allocation escapes. Errors: -1 with err and its reason set: trace_invalid
 * (trace.jsonl missing or not parsing), run_id_mismatch, semantic_mismatch
 * (evidence.json unreadable, different, or not rederivable when that is not
 * allowed), digest_mismatch (the post-read re-check found a change);
 * CG_R_NONE for a local failure (out of memory, I/O while hashing). */
#ifndef CG_BUNDLE_SEMANTIC_H
#define CG_BUNDLE_SEMANTIC_H

#include <stdbool.h>

#include "base/error.h"
#include "bundle/verify.h"
#include "trace/trace.h"

typedef enum cg_semantic_result {
    CG_SEMANTIC_REDERIVED_MATCH = 0,
    CG_SEMANTIC_NOT_REDERIVABLE,
} cg_semantic_result;

/* Where a failed value comparison of step 2 found evidence.json first
 * differing: member is the first top-level member (evidence.json's order, then
 * members only the rebuilt packet has) whose values differ, "(root)" when
 * either side is not an object, truncated to fit; "" for every other outcome
 * (success included). */
#define CG_SEMANTIC_MEMBER_MAX 128
typedef struct cg_semantic_diff {
    char member[CG_SEMANTIC_MEMBER_MAX];
} cg_semantic_diff;

const char *cg_semantic_result_name(cg_semantic_result r); /* "rederived_match" / "not_rederivable" */

int cg_bundle_verify_semantic(const char *root, const cg_bundle_receipt *receipt, bool allow_not_rederivable,
                              cg_semantic_result *result, cg_error *err);
/* The same, handing the parsed trace.jsonl (cg_trace_read_file with default
 * limits — the bytes the post-read check then confirmed) to the caller on
 * success: *trace_out (may be NULL) is the caller's (cg_trace_free); NULL on
 * failure. Lets a consumer that needs the trace model too parse it once. diff
 * (may be NULL) receives the first differing member (cg_semantic_diff). */
int cg_bundle_verify_semantic_trace(const char *root, const cg_bundle_receipt *receipt, bool allow_not_rederivable,
                                    cg_semantic_result *result, cg_trace **trace_out, cg_semantic_diff *diff,
                                    cg_error *err);

/* The same on a bundle opened once (bundle/opened.h), for ingest: trace.jsonl,
 * evidence.json and nsight/ are opened beneath the handle's descriptor (the
 * readers get their /proc/self/fd names; messages name the bundle paths), the
 * nsight inputs come from the handle's parsed manifest, and the post-read
 * check goes through the handle. *evidence_schema (malloc'd, caller frees;
 * NULL when evidence.json has none) is the schema the step found. diff (may be
 * NULL) receives the first differing member (cg_semantic_diff); the message's
 * ROOT is the handle's root. */
struct cg_bundle_handle;
int cg_bundle_verify_semantic_handle(const struct cg_bundle_handle *h, const cg_bundle_receipt *receipt,
                                     bool allow_not_rederivable, cg_semantic_result *result, cg_trace **trace_out,
                                     char **evidence_schema, cg_semantic_diff *diff, cg_error *err);

/* The same, handing what the step built to hook->use (hook may be NULL) once
 * every check passed, post-read check included: the parsed trace and, when
 * the packet was rederived (CG_SEMANTIC_REDERIVED_MATCH), the rebuilt
 * evidence, NULL otherwise. Both are only lent: the evidence is freed when
 * use returns, before the trace goes to *trace_out, so a consumer of the
 * evidence (an index built from it) needs no second parse or rebuild. A use
 * that returns nonzero fails the step with err as it set it. */
struct cg_evidence;
typedef struct cg_semantic_hook {
    int (*use)(void *ctx, const cg_trace *t, const struct cg_evidence *e, cg_error *err);
    void *ctx;
} cg_semantic_hook;
int cg_bundle_verify_semantic_use(const struct cg_bundle_handle *h, const cg_bundle_receipt *receipt,
                                  bool allow_not_rederivable, cg_semantic_result *result, cg_trace **trace_out,
                                  char **evidence_schema, cg_semantic_diff *diff, const cg_semantic_hook *hook,
                                  cg_error *err);

#endif
