/* compare.h — fail-closed replicated comparison, candle-graph/comparison/6
 * (protocol-bundles-comparison.md §3).
 *
 * Every entry point ends in one function over cohort rows (cohort.h), so the
 * bundle path, the trace path and the stored-row path give byte-identical JSON
 * for the same runs. Only verified inputs can be eligible; unverified traces
 * always carry the `unverified_inputs` reason.
 *
 * Inputs: rows, traces and receipts are borrowed (read only); receipt strings
 * must be non-NULL. Functions keep no global state (safe to call from several
 * threads with separate arenas). Cost: the comparison is O(n log n) in the
 * runs plus a 10,000-iteration bootstrap when eligible; no I/O on the row path.
 *
 * Ownership: results are cg_jv values allocated in the caller's arena a.
 * Errors: only the loaders (bundles, trace files) fail — with the spec's
 * context messages (§3.2) — and then return NULL with err set; a comparison
 * itself never fails (problems are reasons in the result). */
#ifndef CG_COMPARISON_COMPARE_H
#define CG_COMPARISON_COMPARE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/json.h"
#include "comparison/cohort.h"
#include "trace/trace.h"

#define CG_COMPARISON_SCHEMA "candle-graph/comparison/6"
#define CG_COMPARISON_MINIMUM_RUNS 5

typedef enum cg_comparison_verification {
    CG_CMP_VERIFIED_BUNDLES = 0, /* "verified_bundles" */
    CG_CMP_UNVERIFIED_TRACES,    /* "unverified_traces" */
} cg_comparison_verification;

/* Compares cohort rows. With CG_CMP_VERIFIED_BUNDLES each row's receipt is a
 * VerifiedBundleInput; rows without a receipt make the receipt count differ
 * from the document count (receipt_count_mismatch). With
 * CG_CMP_UNVERIFIED_TRACES receipts are ignored and the inputs lists are empty. */
cg_jv *cg_compare_rows(cg_arena *a, const cg_cohort_row *baseline, size_t nb,
                       const cg_cohort_row *candidate, size_t nc, cg_comparison_verification kind);

/* Same with explicit receipt lists (the upstream compare_documents shape): the
 * receipts of a cohort need not be as many as its rows; the rows' own receipts
 * are ignored. */
cg_jv *cg_compare_rows_with_receipts(cg_arena *a, const cg_cohort_row *baseline, size_t nb,
                                     const cg_cohort_receipt *baseline_receipts, size_t nbr,
                                     const cg_cohort_row *candidate, size_t nc,
                                     const cg_cohort_receipt *candidate_receipts, size_t ncr,
                                     cg_comparison_verification kind);

/* Already-verified trace documents plus their receipts (the server path):
 * runs health on each trace, builds rows, compares. */
cg_jv *cg_compare_verified_traces(cg_arena *a, const cg_trace *const *baseline, size_t nb,
                                  const cg_cohort_receipt *baseline_receipts, size_t nbr,
                                  const cg_trace *const *candidate, size_t nc,
                                  const cg_cohort_receipt *candidate_receipts, size_t ncr);

/* Diagnostic comparison of raw trace documents: always ineligible. */
cg_jv *cg_compare_unverified_traces(cg_arena *a, const cg_trace *const *baseline, size_t nb,
                                    const cg_trace *const *candidate, size_t nc);

/* Loads one verified cohort member (§3.2 steps 1–4) and builds its row.
 * cohort is "baseline" or "candidate", index is 1-based (both only for messages). */
int cg_cohort_row_from_bundle(cg_arena *a, const char *root, const char *cohort, size_t index,
                              cg_cohort_row *out, cg_error *err);
/* Loads one raw trace file and builds its row (no receipt). */
int cg_cohort_row_from_trace_file(cg_arena *a, const char *path, const char *cohort, size_t index,
                                  cg_cohort_row *out, cg_error *err);

/* compare_verified_bundles: loads every baseline then every candidate root;
 * any loading failure aborts with NULL. */
cg_jv *cg_compare_verified_bundles(cg_arena *a, const char *const *baseline_roots, size_t nb,
                                   const char *const *candidate_roots, size_t nc, cg_error *err);
/* Raw JSONL trace paths, diagnostic only. */
cg_jv *cg_compare_unverified_trace_files(cg_arena *a, const char *const *baseline_paths, size_t nb,
                                         const char *const *candidate_paths, size_t nc, cg_error *err);

/* true when the result's verdict is "ineligible". */
bool cg_comparison_is_ineligible(const cg_jv *comparison);
/* Appends "comparison ineligible: code1, code2" (distinct codes, sorted,
 * comma-space joined) — the --require-eligible / 422 message. */
void cg_comparison_ineligible_message(const cg_jv *comparison, cg_buf *out);

#endif
