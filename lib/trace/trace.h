/* trace.h — the candle-graph/trace/10 document model (reads trace/9 too).
 *
 * A cg_trace owns every record and string through its arena; cg_trace_free
 * releases all of it. Records keep document order, except spans, which are
 * sorted by id (byte order, like upstream's BTreeMap: "s10" < "s2").
 * Strings are NUL-terminated UTF-8 and never NULL for required fields; absent
 * optional strings are NULL. Short strings are interned, so equal strings of a
 * document often (not always) share a pointer: compare with strcmp.
 *
 * Spec: ../shared/spec/protocol-trace-evidence.md §1–3. */
#ifndef CG_TRACE_TRACE_H
#define CG_TRACE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/rustfmt.h"
#include "base/arena.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/json.h"

#define CG_TRACE_SCHEMA "candle-graph/trace/10"
#define CG_TRACE_SCHEMA_PREVIOUS "candle-graph/trace/9"
#define CG_GRADIENT_MANIFEST_SCHEMA "candle-graph/gradient-manifest/1"

typedef enum cg_phase { CG_PHASE_TRAIN = 0, CG_PHASE_INFER } cg_phase;
typedef enum cg_timing_mode { CG_TIMING_HOST = 0, CG_TIMING_DEVICE_SYNCHRONIZED } cg_timing_mode;
typedef enum cg_coverage { CG_COV_NONE = 0, CG_COV_PARTIAL, CG_COV_COMPLETE } cg_coverage;
typedef enum cg_scope {
    CG_SCOPE_UNKNOWN = 0,
    CG_SCOPE_PROFILED_WORK,
    CG_SCOPE_PRODUCTION_EQUIVALENT
} cg_scope;
typedef enum cg_span_kind { CG_SPAN_FUNCTION = 0, CG_SPAN_OP, CG_SPAN_MODULE } cg_span_kind;
typedef enum cg_step { CG_STEP_NONE = 0, CG_STEP_FORWARD, CG_STEP_BACKWARD, CG_STEP_OPTIMIZER } cg_step;
typedef enum cg_category {
    CG_CAT_PARAMETER = 0,
    CG_CAT_ACTIVATION,
    CG_CAT_GRADIENT,
    CG_CAT_OPTIMIZER,
    CG_CAT_OTHER
} cg_category;
#define CG_CAT_COUNT 5
typedef enum cg_grad_state {
    CG_GRAD_PRESENT = 0,
    CG_GRAD_MISSING,
    CG_GRAD_ZERO,
    CG_GRAD_NON_FINITE
} cg_grad_state;
typedef enum cg_family_expectation {
    CG_FAM_ACTIVE = 0,
    CG_FAM_INACTIVE,
    CG_FAM_DATA_CONDITIONAL
} cg_family_expectation;
typedef enum cg_outcome { CG_OUTCOME_COMPLETE = 0, CG_OUTCOME_FAILED } cg_outcome;

/* snake_case wire names; *_parse return -1 for an unknown name. */
const char *cg_phase_name(cg_phase v);
const char *cg_timing_mode_name(cg_timing_mode v);
const char *cg_coverage_name(cg_coverage v);
const char *cg_scope_name(cg_scope v);
const char *cg_span_kind_name(cg_span_kind v);
const char *cg_step_name(cg_step v); /* NULL for CG_STEP_NONE */
const char *cg_category_name(cg_category v);
const char *cg_grad_state_name(cg_grad_state v);
const char *cg_family_expectation_name(cg_family_expectation v);
const char *cg_outcome_name(cg_outcome v);
int cg_phase_parse(const char *s);
int cg_timing_mode_parse(const char *s);
int cg_coverage_parse(const char *s);
int cg_scope_parse(const char *s);
int cg_span_kind_parse(const char *s);
int cg_step_parse(const char *s);
int cg_category_parse(const char *s);
int cg_grad_state_parse(const char *s);
int cg_family_expectation_parse(const char *s);
int cg_outcome_parse(const char *s);
/* Lenient CLI aliases (§11): train/training, infer/inference/eval/evaluate; fwd, bwd, optim… */
int cg_phase_parse_alias(const char *s);
int cg_step_parse_alias(const char *s);

typedef struct cg_strlist {
    const char **items;
    size_t n;
} cg_strlist;

/* A shape (Vec<usize>): n dims (n < 2^32; the reader's item limit is far
 * lower). Packed to 12 bytes (4-aligned) so that it fills the records' tails;
 * read the members by value (no pointer to .dims or .n). A read trace's dims
 * arrays are shared between equal shapes: never written. */
typedef struct __attribute__((packed, aligned(4))) cg_shape {
    uint64_t *dims;
    uint32_t n;
} cg_shape;

typedef struct cg_kv {
    const char *key, *value;
} cg_kv;

typedef struct cg_expected_gradient {
    const char *root, *key, *family;
} cg_expected_gradient;

typedef struct cg_family_contract {
    const char *family;
    cg_family_expectation expectation;
    uint64_t min_present;
} cg_family_contract;

typedef struct cg_gradient_contract {
    const char *manifest_sha256; /* "sha256:" + 64 lowercase hex */
    cg_expected_gradient *expected;
    size_t n_expected;
    cg_family_contract *families;
    size_t n_families;
} cg_gradient_contract;

typedef struct cg_capture_contract {
    cg_scope measurement_scope;
    cg_coverage operations, tensors, gradients;
    cg_gradient_contract *gradient_contract; /* NULL when absent */
    cg_coverage logical_memory, physical_memory, device_timing;
    cg_strlist required_semantic_labels;
    cg_strlist gpu_expected_semantic_labels; /* absent on read ⇒ empty (legacy) */
    cg_strlist cpu_only_semantic_labels;
} cg_capture_contract;

typedef struct cg_comparison_identity {
    const char *implementation_id; /* optional */
    const char *workload_id, *model_id, *config_id, *data_id, *seed_policy;
    uint64_t physical_batch, accumulation_steps;
    const char *precision, *device_state;
    const char *pair_id; /* optional */
} cg_comparison_identity;

typedef struct cg_run_meta {
    const char *run_id, *correlation_id, *entrypoint;
    cg_phase phase;
    const char *timestamp;
    uint64_t capture_step, warmup_steps;
    const char *device;
    bool measured_region_device_synchronized;
    cg_timing_mode timing_mode;
    cg_capture_contract contract;
    cg_comparison_identity *identity; /* NULL when absent */
    cg_kv *tags;                      /* sorted by key (BTreeMap order) */
    size_t n_tags;
    const char *candle_version; /* optional */
} cg_run_meta;

/* The record structs keep their members ordered by size (fewest padding
 * bytes: a 1M-record trace holds ~10^6 of them); enum-valued members of the
 * record arrays are stored in a uint8_t (the enum named beside each). */
typedef struct cg_span {
    const char *id, *parent_id /* optional */, *name;
    uint64_t start_ns;
    uint64_t duration_ns; /* 0 while open */
    uint32_t line;        /* 1-based line of the span_start (saturates at UINT32_MAX) */
    uint8_t kind;         /* cg_span_kind */
    uint8_t step;         /* cg_step */
    bool measured;
    bool closed;          /* a span_end was seen */
} cg_span;

typedef struct cg_op {
    const char *span_id, *op_name;
    cg_strlist inputs;
    const char *output; /* optional */
    const char *dtype, *device;
    uint64_t duration_ns, timestamp_ns;
    uint64_t output_dense_bytes;
    uint64_t input_dense_bytes;
    cg_shape shape;
    bool has_output_dense_bytes; /* after read: present or derived from shape×dtype */
    bool output_dense_bytes_derived; /* true when the reader derived it (absent on the wire) */
} cg_op;

typedef struct cg_tensor {
    const char *span_id, *tensor_id, *label /* optional */;
    const char *dtype, *device;
    uint64_t dense_bytes;
    cg_shape shape;
    bool requires_grad;
    bool has_dense_bytes;
    bool dense_bytes_derived;
    uint8_t category; /* cg_category */
} cg_tensor;

typedef struct cg_tensor_stats {
    const char *span_id, *label;
    cg_shape shape;
    const char *dtype;
    uint64_t elements, non_finite;
    double rms, abs_max, mean;
} cg_tensor_stats;

typedef struct cg_memory {
    uint64_t timestamp_ns;
    const char *storage_id, *tensor_id, *span_id, *op_name /* optional */, *device;
    uint64_t bytes;
    const char *dtype;
    cg_shape shape;
    bool is_free;     /* action: alloc (false) | free (true) */
    uint8_t category; /* cg_category */
} cg_memory;

typedef struct cg_device_memory {
    uint64_t timestamp_ns;
    const char *device;
    bool has_used, has_free, has_reserved, has_capacity;
    uint64_t used_bytes, free_bytes, reserved_bytes, capacity_bytes;
} cg_device_memory;

typedef struct cg_device_interval {
    const char *span_id, *device, *stream_id, *clock_id, *backend;
    uint64_t start_ns, duration_ns;
} cg_device_interval;

typedef struct cg_gradient {
    const char *event_id, *root, *key;
    double norm;
    uint8_t state; /* cg_grad_state */
    bool has_norm;
} cg_gradient;

typedef struct cg_edge {
    bool is_data;           /* edge_kind: call (false) | data (true) */
    const char *from, *to;  /* call: from_span/to_span; data: from_tensor/to_tensor */
    uint64_t host_duration_ns; /* call only */
} cg_edge;

typedef struct cg_terminal {
    cg_outcome outcome;
    uint64_t timestamp_ns;
    const char *reason; /* optional */
} cg_terminal;

typedef struct cg_trace {
    cg_arena arena; /* owns everything below */
    const char *schema;
    cg_run_meta run;
    cg_span *spans; size_t n_spans; /* sorted by id */
    cg_op *ops; size_t n_ops;
    cg_tensor *tensors; size_t n_tensors;
    cg_tensor_stats *tensor_stats; size_t n_tensor_stats;
    cg_memory *memory; size_t n_memory;
    cg_device_memory *device_memory; size_t n_device_memory;
    cg_device_interval *device_intervals; size_t n_device_intervals;
    cg_gradient *gradients; size_t n_gradients;
    cg_edge *edges; size_t n_edges;
    cg_terminal terminal;
} cg_trace;

/* Reader limits. Defaults: line 64 MiB, depth 64, string 16 MiB, 100,000,000 records,
 * 1,000,000 items per JSON array/object. general_only (default false) turns
 * off the fast path for flat records (same results; for tests that compare). */
typedef struct cg_trace_limits {
    size_t max_line_bytes;
    size_t max_records;
    cg_json_limits json;
    bool general_only;
} cg_trace_limits;
void cg_trace_limits_default(cg_trace_limits *l);

/* Parses a trace file (streamed line by line). On error returns NULL, err->msg
 * holds the message (with the 1-based line number where one applies) and
 * err->line that line number. lim may be NULL for defaults. */
cg_trace *cg_trace_read_file(const char *path, const cg_trace_limits *lim, cg_error *err);
/* Same for bytes in memory; display_path is used in messages. */
cg_trace *cg_trace_read_mem(const char *data, size_t len, const char *display_path,
                            const cg_trace_limits *lim, cg_error *err);
void cg_trace_free(cg_trace *t);

/* Span lookup by id (binary search over the sorted spans); NULL if absent. */
const cg_span *cg_trace_find_span(const cg_trace *t, const char *id);

/* ---- dtype helpers (§3) ---- */
/* Element size in bytes for a known dtype (trimmed, case-insensitive), else 0. */
size_t cg_dtype_size(const char *dtype);
/* Product of dims, empty shape = 1, saturating at UINT64_MAX. */
uint64_t cg_shape_elements(const cg_shape *s);
/* shape×dtype; false when the dtype is unknown. Saturating. */
bool cg_dense_bytes(const cg_shape *s, const char *dtype, uint64_t *out);

/* ---- JSON of the model (field order exactly as the wire format) ---- */
/* TraceRunMeta (the `provenance` object: meta fields without kind/schema). */
cg_jv *cg_run_meta_to_json(cg_arena *a, const cg_run_meta *m);
cg_jv *cg_capture_contract_to_json(cg_arena *a, const cg_capture_contract *c);
cg_jv *cg_comparison_identity_to_json(cg_arena *a, const cg_comparison_identity *id);
/* A deep copy of id in a (its strings copied); NULL for NULL. */
cg_comparison_identity *cg_comparison_identity_copy(cg_arena *a, const cg_comparison_identity *id);
cg_jv *cg_shape_to_json(cg_arena *a, const cg_shape *s);
cg_jv *cg_strlist_to_json(cg_arena *a, const cg_strlist *l);
/* Wire events ("kind": …). The *_derived dense-bytes values are omitted on write
 * so a parse → write round trip reproduces the input's values. */
cg_jv *cg_event_meta_json(cg_arena *a, const char *schema, const cg_run_meta *m);
cg_jv *cg_event_span_start_json(cg_arena *a, const cg_span *s);
cg_jv *cg_event_span_end_json(cg_arena *a, const cg_span *s);
cg_jv *cg_event_op_json(cg_arena *a, const cg_op *o);
cg_jv *cg_event_tensor_json(cg_arena *a, const cg_tensor *t);
cg_jv *cg_event_tensor_stats_json(cg_arena *a, const cg_tensor_stats *s);
cg_jv *cg_event_memory_json(cg_arena *a, const cg_memory *m);
cg_jv *cg_event_device_memory_json(cg_arena *a, const cg_device_memory *m);
cg_jv *cg_event_device_interval_json(cg_arena *a, const cg_device_interval *d);
cg_jv *cg_event_gradient_json(cg_arena *a, const cg_gradient *g);
cg_jv *cg_event_edge_json(cg_arena *a, const cg_edge *e);
cg_jv *cg_event_terminal_json(cg_arena *a, const cg_terminal *t);
/* TensorRecord / GradientRecord / TensorStatsEvent as embedded in graph/evidence
 * (same fields as the events, without "kind"; derived dense bytes included). */
cg_jv *cg_tensor_record_json(cg_arena *a, const cg_tensor *t);
cg_jv *cg_gradient_record_json(cg_arena *a, const cg_gradient *g);
cg_jv *cg_tensor_stats_record_json(cg_arena *a, const cg_tensor_stats *s);

/* Writes the document as compact JSONL in to_events() order (§3): meta, spans by
 * id (start, then end if closed), ops, tensors, tensor_stats, memory,
 * device_memory, device_intervals, gradients, edges, terminal. */
void cg_trace_write(cg_buf *out, const cg_trace *t);
int cg_trace_write_file(const cg_trace *t, const char *path, cg_error *err);

/* ---- TraceSummary (§3) ---- */
typedef struct cg_trace_summary {
    uint64_t op_count, total_ns, span_count, root_span_count, max_depth;
    uint64_t alloc_count, free_count;
    bool has_logical_peak;
    uint64_t logical_peak_bytes;
} cg_trace_summary;
void cg_trace_summary_build(const cg_trace *t, cg_trace_summary *out);
/* The same without the logical peak (has_logical_peak false), for a caller
 * that has the trace's logical memory plane: its peak is this peak (0 when no
 * event allocates; present whenever there are memory events). */
void cg_trace_summary_counts(const cg_trace *t, cg_trace_summary *out);
cg_jv *cg_trace_summary_to_json(cg_arena *a, const cg_trace_summary *s);

/* ---- validation shared by the capture API and health ---- */
/* TraceRunMeta::validate. Returns 0 or -1 with the reason in err. */
int cg_run_meta_validate(const cg_run_meta *m, cg_error *err);
int cg_comparison_identity_validate(const cg_comparison_identity *id, cg_error *err);
/* CaptureContract::validate (labels, partition, gradient contract). */
int cg_capture_contract_validate(const cg_capture_contract *c, cg_error *err);
int cg_gradient_contract_validate(const cg_gradient_contract *g, cg_error *err);
/* Gradient manifest digest: "sha256:" + hex into out (72 bytes). */
void cg_gradient_manifest_digest(const cg_expected_gradient *e, size_t n, char out[72]);
/* cg_str_blank and cg_str_trim_span: base/rustfmt.h */

/* ---- rules shared by the reader and health (rules.c), one home each ---- */
typedef enum cg_terminal_reason_rule {
    CG_TERMINAL_REASON_OK = 0,
    CG_TERMINAL_COMPLETE_WITH_REASON,  /* a complete outcome carries a reason */
    CG_TERMINAL_FAILED_WITHOUT_REASON, /* a failed outcome has no (or a blank) reason */
} cg_terminal_reason_rule;
cg_terminal_reason_rule cg_rule_terminal_reason(const cg_terminal *t);
/* The latest host timestamp of the evidence: span start (+ duration when
 * closed), op timestamp + duration, memory and device-memory timestamps;
 * saturating; 0 for none. */
uint64_t cg_rule_latest_host_evidence_end(const cg_trace *t);
/* true when the terminal timestamp is earlier than that end (stored in *latest). */
bool cg_rule_terminal_precedes_evidence(const cg_trace *t, uint64_t *latest);
/* A tensor_stats record is valid: non-blank label, shape product (checked, no
 * overflow) == elements, non_finite <= elements, rms and abs_max finite and
 * >= 0, mean finite. */
bool cg_rule_tensor_stats_valid(const cg_tensor_stats *s);

/* cg_rust_debug_str (Rust's `{:?}` of a str): base/rustfmt.h */
/* Rust's `{:?}` of an f64 (1.0, 0.125, 1e-5, 1e16). */
void cg_rust_debug_f64(cg_buf *b, double d);
/* Rust's `{}` of an f64 (1, 1.5, -0, 100000000000000000000, 0.0000001): how
 * serde (1.0.152, the oracle's) names an unexpected float. */
void cg_rust_display_f64(cg_buf *b, double d);
/* serde's Unexpected of a JSON value, as its "invalid type: X, expected …"
 * names it: `integer `5``, `string "x"`, `floating point `1.5``, `map`, … */
void cg_serde_unexpected(cg_buf *b, const cg_jv *v);

#endif
