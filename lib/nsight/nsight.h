/* nsight.h — Nsight Systems evidence: `nsys stats --format csv` reports and the
 * `candle-graph/nsight-capture/1` capture manifest of one flat directory,
 * normalized into the evidence packet's `gpu` object (NsightEvidence).
 *
 * Spec: ../shared/spec/protocol-trace-evidence.md §10 (and §9 for how the
 * evidence layer consumes it). Choices where the spec is marked (inferred) or
 * does not say are listed in docs/compatibility-nsight.md.
 *
 * Input: a flat directory of regular files. The raw report is the first
 * `*.nsys-rep` by byte order of the file name (hashed, streamed). CSV files are
 * matched by substring of the file name (first match in this order):
 * cuda_gpu_kern_sum, cuda_api_sum, cuda_gpu_mem_time_sum, nvtx_gpu_proj_trace,
 * cuda_gpu_trace. Other files are ignored; `capture-manifest.json` and
 * `status.txt` have their own meaning.
 *
 * Ownership: everything an evidence value points to lives in the arena passed
 * to cg_nsight_load (strings, rows, the manifest DOM). Free the arena to free
 * the evidence; nothing is freed individually.
 *
 * Errors: cg_nsight_load never fails hard (the crate's
 * load_optional_with_semantic_contract, src/nsight.rs at 65b3678d). A missing
 * or unreadable directory, or an artifact that cannot be hashed, gives status
 * `failed` with that error as reason and otherwise the shape of unavailable
 * evidence (no rows, no artifacts, provenance without a manifest). A malformed
 * report (invalid UTF-8, a bad or missing required number, a missing required
 * column, a zero-duration row, an NVTX row without positive projected timing,
 * a limit exceeded; the crate's texts, see nsight_internal.h) becomes one
 * diagnostic "<dir>/<file name>: <error>", contributes no rows and is not
 * listed in source_csv; an invalid capture manifest leaves provenance
 * `partial` with a diagnostic. Only out-of-memory aborts (arena policy).
 *
 * Limits (cg_nsight_limits, defaults in cg_nsight_limits_default): bytes per
 * CSV file, rows per CSV file, bytes per field, columns per record, directory
 * entries, capture-manifest.json / status.txt size. Exceeding a per-report
 * limit makes that report a diagnostic naming the limit; exceeding the
 * directory-entry limit fails the load. Display caps (100 summary rows, 500
 * timeline rows) are applied only when writing JSON, after correlation and
 * phase attribution were computed on the full row sets. */
#ifndef CG_NSIGHT_NSIGHT_H
#define CG_NSIGHT_NSIGHT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/json.h"
#include "trace/trace.h"

#define CG_NSIGHT_CAPTURE_SCHEMA "candle-graph/nsight-capture/1"
#define CG_NSIGHT_MANIFEST_FILE "capture-manifest.json"
#define CG_NSIGHT_STATUS_FILE "status.txt"
#define CG_NSIGHT_SUMMARY_DISPLAY_ROWS 100
#define CG_NSIGHT_TIMELINE_DISPLAY_ROWS 500

typedef enum cg_nsight_status {
    CG_NSIGHT_AVAILABLE = 0,
    CG_NSIGHT_UNAVAILABLE,
    CG_NSIGHT_FAILED
} cg_nsight_status;

typedef enum cg_nsight_binding {
    CG_NSIGHT_PARTIAL = 0,
    CG_NSIGHT_BOUND,
    CG_NSIGHT_MISMATCH
} cg_nsight_binding;

typedef enum cg_nsight_corr_mode {
    CG_NSIGHT_CORR_NONE = 0,
    CG_NSIGHT_CORR_NVTX_PROJECTED_RANGE
} cg_nsight_corr_mode;

/* Report kinds, in file-name matching order. */
typedef enum cg_nsight_report {
    CG_NSIGHT_KERNELS = 0,     /* cuda_gpu_kern_sum      -> kernels */
    CG_NSIGHT_RUNTIME,         /* cuda_api_sum           -> runtime_calls */
    CG_NSIGHT_MEMORY,          /* cuda_gpu_mem_time_sum  -> memory_operations */
    CG_NSIGHT_NVTX,            /* nvtx_gpu_proj_trace    -> nvtx_ranges */
    CG_NSIGHT_GPU_TRACE,       /* cuda_gpu_trace         -> gpu_timeline */
    CG_NSIGHT_REPORT_COUNT
} cg_nsight_report;

/* Wire names: "available"… / "bound"… / "none", "nvtx_projected_range". */
const char *cg_nsight_status_name(cg_nsight_status s);
const char *cg_nsight_binding_name(cg_nsight_binding b);
const char *cg_nsight_corr_mode_name(cg_nsight_corr_mode m);
/* File-name substring of a report kind ("cuda_gpu_kern_sum", …). */
const char *cg_nsight_report_pattern(cg_nsight_report r);

typedef struct cg_nsight_limits {
    uint64_t max_csv_bytes;       /* per CSV file; default 256 MiB */
    uint64_t max_rows;            /* data records per CSV file; default 5,000,000 */
    size_t max_field_bytes;       /* per CSV field (after unquoting); default 1 MiB */
    size_t max_columns;           /* fields per CSV record; default 1024 */
    size_t max_dir_entries;       /* entries in the directory; default 65,536 */
    size_t max_manifest_bytes;    /* capture-manifest.json and status.txt; default 16 MiB */
} cg_nsight_limits;
void cg_nsight_limits_default(cg_nsight_limits *l);

/* {path, size_bytes, sha256}: path is the file name inside the directory;
 * sha256 is 64 lowercase hex digits. */
typedef struct cg_nsight_artifact {
    const char *path;
    uint64_t size_bytes;
    char sha256[65];
} cg_nsight_artifact;

/* Summary row (kernels, runtime calls, memory operations). */
typedef struct cg_nsight_summary_row {
    const char *name;
    uint64_t total_ns, count, average_ns, minimum_ns, maximum_ns; /* absent => 0 */
    const char *category;                                        /* NULL = absent */
    const char *source_file; /* file the row came from (not serialized) */
} cg_nsight_summary_row;

/* Timeline row (NVTX projected range or GPU operation). Absent optional
 * strings are NULL; present ones are kept as written (an empty cell is "");
 * semantic_key is the name for NVTX ranges, else NULL. */
typedef struct cg_nsight_timeline_row {
    const char *name;
    bool is_nvtx; /* kind: nvtx_range (true) | gpu_operation (false) */
    const char *device, *context, *stream, *correlation_id, *semantic_key;
    uint64_t start_ns, duration_ns;
    bool has_projected_start, has_projected_duration; /* always both for NVTX ranges */
    uint64_t projected_start_ns, projected_duration_ns;
    bool has_gpu_operations;
    uint64_t gpu_operations;
    const char *source_file; /* file the row came from (not serialized) */
} cg_nsight_timeline_row;

/* A table of rows. Rows are kept in full (sorted); `displayed` is how many
 * the JSON output shows (the display cap). */
typedef struct cg_nsight_summary_table {
    cg_nsight_summary_row *rows;
    size_t n, displayed;
} cg_nsight_summary_table;
typedef struct cg_nsight_timeline_table {
    cg_nsight_timeline_row *rows;
    size_t n, displayed;
} cg_nsight_timeline_table;

/* limits[file] entry (one per successfully parsed report file). */
typedef struct cg_nsight_report_limit {
    const char *file;
    uint64_t total_rows, displayed_rows;
    bool truncated;
} cg_nsight_report_limit;

typedef struct cg_nsight_duplicate {
    const char *semantic_key;
    uint64_t occurrences; /* > 1 */
} cg_nsight_duplicate;

/* Correlation ledger; every list is sorted (byte order) and deduplicated. */
typedef struct cg_nsight_ledger {
    cg_strlist expected;            /* resolved GPU-expected labels */
    cg_strlist cpu_only;
    cg_strlist observed;            /* distinct NVTX range names */
    cg_strlist matched;             /* expected ∩ observed */
    cg_strlist missing_expected;    /* expected − observed */
    cg_strlist unexpected_observed; /* observed − expected − cpu_only */
    cg_strlist unexpected_cpu_only; /* cpu_only ∩ observed */
    cg_nsight_duplicate *duplicates; size_t n_duplicates;
} cg_nsight_ledger;

typedef struct cg_nsight_correlation {
    cg_nsight_corr_mode mode;
    bool complete;            /* clock_aligned is always false */
    cg_nsight_ledger ledger;
    const char *reason;
} cg_nsight_correlation;

typedef struct cg_nsight_phase_attribution {
    const char *semantic_key;
    uint64_t projected_start_ns, projected_duration_ns;
    uint64_t gpu_busy_ns, gpu_operation_count;
    cg_strlist join_keys; /* names of the keys used, order: correlation_id, device, context, stream */
} cg_nsight_phase_attribution;

typedef struct cg_nsight_provenance {
    cg_nsight_binding binding;
    cg_jv *manifest;                     /* the parsed CaptureManifest, as the crate re-serializes it; NULL without one */
    const char *run_id, *correlation_id; /* from the manifest (NULL without one) */
    cg_strlist diagnostics;              /* every finding in check order (NsightProvenance.diagnostics) */
    size_t diag_cap;                     /* private: capacity of diagnostics.items */
} cg_nsight_provenance;

typedef struct cg_nsight_evidence {
    cg_nsight_status status;
    const char *reason;              /* NULL when absent (status available) */
    cg_nsight_artifact *raw_report;  /* NULL when absent */
    cg_nsight_artifact *source_csv;  /* matched CSV files, by file name */
    size_t n_source_csv;
    cg_nsight_provenance provenance;
    bool coverage[CG_NSIGHT_REPORT_COUNT]; /* the report kind produced >= 1 row */
    cg_nsight_correlation correlation;
    cg_strlist diagnostics;
    cg_nsight_report_limit *limits;  /* sorted by file name */
    size_t n_limits;
    cg_nsight_summary_table kernels, runtime_calls, memory_operations; /* total desc */
    cg_nsight_timeline_table nvtx_ranges, gpu_timeline;              /* (start, name) */
    cg_nsight_phase_attribution *phase_attribution;
    size_t n_phase_attribution;
    cg_arena *arena; /* the arena everything lives in (not owned) */
    size_t diag_cap; /* private: capacity of diagnostics.items */
} cg_nsight_evidence;

/* Loads the directory `dir` (NULL = Nsight capture was not requested ⇒ status
 * unavailable). `required`, `gpu_expected`, `cpu_only` are the trace contract's
 * semantic labels (NULL = empty); when gpu_expected and cpu_only are both
 * empty the legacy rule applies: GPU-expected = required. The provenance is
 * left `partial` (or `mismatch`) until cg_nsight_bind_to_trace. Never NULL. */
cg_nsight_evidence *cg_nsight_load(cg_arena *a, const char *dir, const cg_strlist *required,
                                   const cg_strlist *gpu_expected, const cg_strlist *cpu_only);
/* Same with explicit limits (NULL = defaults). */
cg_nsight_evidence *cg_nsight_load_ex(cg_arena *a, const char *dir, const cg_strlist *required,
                                      const cg_strlist *gpu_expected, const cg_strlist *cpu_only,
                                      const cg_nsight_limits *lim);
/* Same, naming the directory `display_dir` (NULL = dir) in the messages that
 * quote a path ("<display_dir>/capture-manifest.json is absent",
 * "<display_dir>/<file>: <error>"). Bundles pass "nsight" so that a packet
 * rebuilt from the bundle says what the published one says. */
cg_nsight_evidence *cg_nsight_load_as(cg_arena *a, const char *dir, const char *display_dir,
                                      const cg_strlist *required, const cg_strlist *gpu_expected,
                                      const cg_strlist *cpu_only, const cg_nsight_limits *lim);

/* Binds the capture manifest to the trace's run: a loaded manifest that passed
 * every check becomes `bound`, or `mismatch` when its run.id / correlation.id
 * differ from run_id / correlation_id. Without a manifest (or an invalid one)
 * the state stays `partial`; `mismatch` stays `mismatch`. Rows are never
 * discarded. Idempotent for the same ids. */
void cg_nsight_bind_to_trace(cg_nsight_evidence *ev, const char *run_id, const char *correlation_id);

/* NsightEvidence JSON (field order of the spec; optional fields omitted). */
cg_jv *cg_nsight_to_json(cg_arena *a, const cg_nsight_evidence *ev);
cg_jv *cg_nsight_correlation_to_json(cg_arena *a, const cg_nsight_correlation *c);
cg_jv *cg_nsight_provenance_to_json(cg_arena *a, const cg_nsight_provenance *p);

/* ---- accessors for the evidence layer ---- */
static inline cg_nsight_status cg_nsight_get_status(const cg_nsight_evidence *ev) {
    return ev->status;
}
static inline cg_nsight_binding cg_nsight_get_binding(const cg_nsight_evidence *ev) {
    return ev->provenance.binding;
}
static inline const cg_nsight_correlation *cg_nsight_get_correlation(const cg_nsight_evidence *ev) {
    return &ev->correlation;
}
static inline const cg_nsight_ledger *cg_nsight_get_ledger(const cg_nsight_evidence *ev) {
    return &ev->correlation.ledger;
}
/* First kernel summary row (largest total), or NULL when there is none. */
static inline const cg_nsight_summary_row *cg_nsight_first_kernel(const cg_nsight_evidence *ev) {
    return ev->kernels.n ? &ev->kernels.rows[0] : NULL;
}

#endif
