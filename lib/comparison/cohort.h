/* cohort.h — the cohort sample table: everything comparison/6 needs from one run.
 *
 * A cg_cohort_row is computed once per bundle (cg_cohort_row_from_trace) and
 * can be stored (cg_cohort_row_to_json / cg_cohort_row_from_json, a stable
 * compact JSON text, schema "candle-graph/cohort-row/1") so that a comparison
 * over stored bundles never re-reads traces. Comparing rows gives byte-identical
 * comparison JSON to comparing the bundles: the bundle and trace paths build
 * rows first and go through the same code (compare.h).
 *
 * Tensor statistics keep every event's rms and abs_max value (per label, in
 * document order) rather than a per-run sum, because upstream sums the events
 * of a whole cohort sequentially; pre-summing per run would change the last bit
 * of the cohort means in some cases.
 *
 * Ownership: every string and array of a row lives in the cg_arena passed to
 * the constructor; the row is valid while that arena lives. Rows never point
 * into the cg_trace / cg_health they were built from.
 * Errors: cg_cohort_row_from_json returns -1 with a message naming the first
 * bad field; the other functions cannot fail (allocation failure aborts). */
#ifndef CG_COMPARISON_COHORT_H
#define CG_COMPARISON_COHORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/error.h"
#include "base/json.h"
#include "trace/health.h"
#include "trace/trace.h"

#define CG_COHORT_ROW_SCHEMA "candle-graph/cohort-row/1"

/* A verified-bundle receipt as comparison/6 records it (VerifiedBundleInput). */
typedef struct cg_cohort_receipt {
    const char *run_id;
    const char *manifest_sha256;
} cg_cohort_receipt;

/* Per-label tensor_stats of one run, labels in first-seen document order. */
typedef struct cg_cohort_tensor_stat {
    const char *label;
    size_t n;            /* events with this label in the run (duplicates kept) */
    double *rms;         /* n values, document order */
    double *abs_max;     /* n values, document order */
    uint64_t non_finite; /* saturating sum */
} cg_cohort_tensor_stat;

typedef struct cg_cohort_row {
    const char *run_id;            /* trace meta run_id */
    bool has_receipt;
    cg_cohort_receipt receipt;     /* valid when has_receipt */
    /* capture semantics */
    const char *entrypoint;
    cg_phase phase;
    const char *device;
    cg_timing_mode timing_mode;
    bool measured_region_device_synchronized;
    uint64_t warmup_steps, capture_step;
    const char *capture_contract_json; /* compact JSON of the contract (structural equality) */
    cg_scope measurement_scope;
    cg_comparison_identity *identity;  /* NULL when the trace declares none */
    /* health */
    bool structurally_valid, capture_complete;
    /* measured region: spans with measured && closed, in span-id order */
    uint64_t measured_regions;
    uint64_t measured_duration_ns; /* first such span's duration_ns, 0 when none */
    cg_cohort_tensor_stat *tensor_stats;
    size_t n_tensor_stats;
} cg_cohort_row;

/* Builds the row of one run. `health` is cg_health_analyze(trace); `receipt`
 * may be NULL (unverified trace). Copies everything into arena a. */
void cg_cohort_row_from_trace(cg_arena *a, const cg_trace *trace, const cg_health *health,
                              const cg_cohort_receipt *receipt, cg_cohort_row *out);

/* Stable JSON of a row (field order fixed; write it compact with cg_json_write).
 * Its tensor_stats array is lazy (items made while the value is walked): row
 * must outlive the value. */
cg_jv *cg_cohort_row_to_json(cg_arena *a, const cg_cohort_row *row);
/* Convenience: the compact JSON text into `out` (appended). */
void cg_cohort_row_write(cg_buf *out, const cg_cohort_row *row);
/* Parses a row written by cg_cohort_row_to_json (a JSON value or text). */
int cg_cohort_row_from_json(cg_arena *a, const cg_jv *v, cg_cohort_row *out, cg_error *err);
int cg_cohort_row_parse(cg_arena *a, const char *text, size_t len, cg_cohort_row *out, cg_error *err);

#endif
