/* comparison_runs.h — builds trace/10 texts, cohort rows and bundle
 * directories for the comparison unit tests (tests/unit/test_comparison_*.c,
 * test_comparison_review.c). Buffers are the caller's (cg_buf); rows live in
 * the caller's arena. Functions return 0 or -1 (with err where one is taken). */
#ifndef CG_TEST_COMPARISON_RUNS_H
#define CG_TEST_COMPARISON_RUNS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/fs.h"
#include "base/sha256.h"
#include "bundle/manifest.h"
#include "comparison/cohort.h"
#include "trace/trace.h"

typedef struct ts_grad {
    const char *root, *key, *state;
    double norm; /* written when state is present or zero */
} ts_grad;

typedef struct ts_event {
    const char *label;
    double rms, abs_max;
    uint64_t non_finite;
} ts_event;

/* One run's knobs; ts_run_default() gives a valid, comparable CPU run. */
typedef struct ts_run {
    char run_id[64];
    const char *entrypoint, *phase, *device, *timing_mode, *scope, *operations;
    bool sync;
    uint64_t capture_step, warmup_steps;
    bool has_identity;
    const char *impl_id;  /* NULL = omitted */
    const char *pair_id;  /* NULL = omitted */
    const char *workload_id;
    uint64_t physical_batch;
    int measured;          /* number of closed measured spans (0, 1, 2) */
    bool open_measured;    /* add one measured span that never ends */
    uint64_t duration_ns;  /* of each measured span */
    ts_event ts[8];
    size_t n_ts;
    ts_grad grads[4];
    size_t n_grads;
    const char *failed_reason; /* non-NULL: terminal outcome failed */
} ts_run;

/* Fills r with a valid, comparable CPU run (one measured span of `duration` ns). */
void ts_run_default(ts_run *r, const char *run_id, const char *impl, uint64_t duration);

/* Appends the run's JSONL trace text. */
void ts_run_text(cg_buf *b, const ts_run *r);

/* Writes a bundle/1 directory at `dir` holding `trace` as trace.jsonl and a
 * placeholder evidence.json, with a correct bundle.json (run_id as given).
 * Test helper only: real bundles come from publication. Returns 0 or -1. */
int ts_write_bundle(const char *dir, const char *trace, size_t len, const char *run_id);

/* ts_run → bundle directory. */
int ts_write_run_bundle(const char *dir, const ts_run *r);

/* Parses r's trace/10 text (the real reader) and builds its cohort row with
 * explicit health (structurally valid, capture complete) and the receipt
 * {run_id, sha256(run_id)}. -1 with err when the text does not parse. */
int ts_cohort_row(cg_arena *a, const ts_run *r, cg_cohort_row *out, cg_error *err);

#define TS_MAX_RUNS 10

/* A baseline (b) and a candidate (c) cohort of runs with their rows; the rows
 * live in `a` (the caller initialises and frees it). */
typedef struct ts_cohorts {
    ts_run b[TS_MAX_RUNS], c[TS_MAX_RUNS];
    size_t nb, nc;
    cg_cohort_row rb[TS_MAX_RUNS], rc[TS_MAX_RUNS];
    cg_arena a;
} ts_cohorts;

/* Builds rb[0..nb) and rc[0..nc) from b and c with ts_cohort_row; -1 with err
 * at the first run that does not parse. */
int ts_cohorts_build(ts_cohorts *k, cg_error *err);

#endif
