/* capture.h — the capture API: instrument a program and write a
 * candle-graph/trace/10 JSONL trace (upstream `instrument`: ProfileRun,
 * TraceSession, CaptureSelector). Spec: protocol-trace-evidence.md §1, §2, §4.
 * Usage guide with an example: docs/capture-api.md.
 *
 * Lifecycle
 *   cg_profile_run_training / _inference   describe the run (+ builders)
 *   cg_session_open                         writes `meta` and the root span s1
 *   begin/end spans, record_* evidence      one compact JSON line per record
 *   cg_session_finish | _finish_failed      writes the `terminal` record
 *   cg_session_free                         releases the handle
 * A process that dies before finish leaves a trace without a terminal; the
 * trace reader rejects such a file ("missing terminal"), as upstream.
 *
 * Errors
 *   Every fallible call returns 0 on success or -1 with `err` filled (err may
 *   be NULL). A refused call writes nothing: validation happens before a line is
 *   produced, so misuse never corrupts the trace. Codes: CG_EINVAL (bad
 *   argument), CG_ESTATE (wrong state: span order, finished session, earlier
 *   write failure), CG_EIO (file system).
 *   Write errors are sticky: after one failed write every later call on the
 *   session fails with CG_EIO and the earlier cause in the message.
 *
 * Threads
 *   A cg_session may be used from any number of threads at once. One mutex
 *   guards the writer, the id counters and the span table. Each thread has its
 *   own span stack: a new span's parent is the innermost span the calling thread
 *   has open, or the root s1 when it has none; a thread closes its spans in
 *   reverse order of opening. A thread must close its spans before it exits.
 *   cg_profile_run and cg_capture_selector are plain values: not thread-safe
 *   while being modified.
 *
 * Ownership
 *   Strings and arrays passed in are copied or written out before the call
 *   returns; the caller keeps ownership. cg_profile_run owns its copies (freed by
 *   cg_profile_run_free); cg_session does not keep a reference to the
 *   cg_profile_run, which may be freed right after cg_session_open.
 *
 * Clock
 *   Host timestamps are nanoseconds of CLOCK_MONOTONIC since cg_session_open
 *   (cg_session_host_now_ns). Device intervals carry their own device clock. */
#ifndef CG_CAPTURE_CAPTURE_H
#define CG_CAPTURE_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/error.h"
#include "trace/trace.h"

/* ======================================================================
 * ProfileRun — what is being captured (meta record contents).
 * ====================================================================== */

typedef struct cg_profile_run cg_profile_run;

/* Training update / inference invocation number `capture_step` (one-based) of
 * `entrypoint` on `device` ("cpu", "cuda:0", …). Defaults: phase train/infer,
 * warmup_steps = capture_step − 1 (0 when capture_step is 0), timing_mode host,
 * measured_region_device_synchronized false, default capture contract (scope
 * unknown, every coverage none, no labels), no comparison identity, no tags,
 * correlation_id "{entrypoint}/update-{capture_step}" (training) or
 * "{entrypoint}/inference-{capture_step}" (inference).
 * The values are validated by cg_session_open, not here. Returns NULL only when
 * entrypoint or device is NULL. Free with cg_profile_run_free. */
cg_profile_run *cg_profile_run_training(const char *entrypoint, uint64_t capture_step,
                                        const char *device);
cg_profile_run *cg_profile_run_inference(const char *entrypoint, uint64_t capture_step,
                                         const char *device);
void cg_profile_run_free(cg_profile_run *r);

/* Builders. Each copies its arguments and returns 0, or -1 when an argument —
 * or a string the copied struct requires (list items, gradient contract
 * fields, the seven required identity strings) — is NULL; the run is then
 * unchanged. Content is validated by cg_session_open, not here. */
/* Sets tag key=value (descriptive only); an existing key is replaced. Tags are
 * written sorted by key. */
int cg_profile_run_tag(cg_profile_run *r, const char *key, const char *value);
int cg_profile_run_correlation_id(cg_profile_run *r, const char *correlation_id);
/* Overrides the session's default run id "run-{pid}-{unix_nanos}". */
int cg_profile_run_run_id(cg_profile_run *r, const char *run_id);
/* Deep copy of the contract (gradient contract included). */
int cg_profile_run_capture_contract(cg_profile_run *r, const cg_capture_contract *c);
/* Deep copy of the identity. */
int cg_profile_run_comparison_identity(cg_profile_run *r, const cg_comparison_identity *id);
void cg_profile_run_warmup_steps(cg_profile_run *r, uint64_t warmup_steps);
/* Claims only that the one measured region is bounded by device
 * synchronizations; timing_mode stays host. */
void cg_profile_run_measured_region_device_synchronized(cg_profile_run *r);
/* Claims every semantic span is device-bounded: timing_mode
 * device_synchronized and the measured-region flag. */
void cg_profile_run_device_synchronized(cg_profile_run *r);

/* The run as run metadata. run_id is NULL unless set with
 * cg_profile_run_run_id; timestamp is always NULL (the session fills both).
 * Owned by r; valid until the next builder call or cg_profile_run_free. */
const cg_run_meta *cg_profile_run_meta(const cg_profile_run *r);

/* ======================================================================
 * CaptureSelector — choose the one invocation to capture.
 * ====================================================================== */

typedef struct cg_capture_selector {
    uint64_t selected; /* one-based invocation number */
} cg_capture_selector;

/* n ≥ 1, else -1 (CG_EINVAL, "... must be one-based"). */
int cg_capture_selector_new(uint64_t n, cg_capture_selector *out, cg_error *err);
/* true iff invocation == the selected one (invocations counted from 1). */
bool cg_capture_selector_is_selected(const cg_capture_selector *sel, uint64_t invocation);
uint64_t cg_capture_selector_selected_invocation(const cg_capture_selector *sel);

/* ======================================================================
 * Session.
 * ====================================================================== */

typedef struct cg_session cg_session;

/* A span handle: the n of the wire id "s{n}". The root span is 1; 0 is never
 * a span. */
typedef uint64_t cg_span_id;
#define CG_SPAN_ROOT ((cg_span_id)1)
/* Wire id "s{n}" of a span into out (NUL-terminated; at most 22 bytes with the NUL). */
void cg_span_wire_id(cg_span_id id, char out[24]);

/* Evidence records (upstream OpRecord, TensorRecord, MemoryRecord,
 * DeviceMemoryRecord, DeviceIntervalRecord). Pointers are borrowed for the
 * duration of the call. `shape` may be NULL when rank is 0. */
typedef struct cg_op_record {
    const char *op_name;                /* non-blank */
    const char *const *inputs;          /* tensor ids; NULL when n_inputs is 0 */
    size_t n_inputs;
    const char *output;                 /* output tensor id, NULL = absent */
    const uint64_t *shape;
    size_t rank;
    const char *dtype, *device;         /* required */
    uint64_t duration_ns;
    uint64_t timestamp_ns;              /* 0 = now − duration_ns */
    bool has_output_dense_bytes;        /* false: omitted (reader derives) */
    uint64_t output_dense_bytes;
    uint64_t input_dense_bytes;         /* sum of dense input footprints */
} cg_op_record;

typedef struct cg_tensor_record {
    const char *tensor_id;              /* non-empty backend identity */
    const char *label;                  /* NULL = absent; else non-blank */
    const uint64_t *shape;
    size_t rank;
    const char *dtype, *device;         /* required */
    bool requires_grad;
    bool has_dense_bytes;               /* false: omitted (reader derives) */
    uint64_t dense_bytes;
    cg_category category;
} cg_tensor_record;

typedef struct cg_memory_record {
    const char *storage_id, *tensor_id; /* non-empty */
    const char *device;                 /* non-empty */
    uint64_t bytes;                     /* actual allocation bytes */
    const char *dtype;                  /* required */
    cg_category category;
    bool has_timestamp;                 /* false: now */
    uint64_t timestamp_ns;              /* must not be later than now */
    const char *op_name;                /* NULL = absent */
    const uint64_t *shape;
    size_t rank;
} cg_memory_record;

typedef struct cg_device_memory_record {
    const char *device;                 /* non-empty */
    bool has_used, has_free, has_reserved, has_capacity; /* at least one */
    uint64_t used_bytes, free_bytes, reserved_bytes, capacity_bytes;
    bool has_timestamp;                 /* false: now */
    uint64_t timestamp_ns;              /* must not be later than now */
} cg_device_memory_record;

typedef struct cg_device_interval_record {
    const char *device, *stream_id, *clock_id, *backend; /* non-empty */
    uint64_t start_ns;                  /* on the device clock clock_id */
    uint64_t duration_ns;               /* > 0 */
} cg_device_interval_record;

/* Creates the parent directories of path, truncates path, and writes `meta`
 * (schema trace/10, run id, timestamp "YYYY-MM-DDTHH:MM:SS.mmmZ" UTC) and the
 * root span_start s1 (named after the entrypoint, kind function, start 0).
 * Refuses (NULL, nothing created) a run with capture_step 0, an invalid
 * contract (cg_capture_contract_validate) or invalid run metadata
 * (cg_run_meta_validate: blank entrypoint/device/correlation id, warmup ≥
 * capture step, invalid comparison identity). */
cg_session *cg_session_open(const char *path, const cg_profile_run *run, cg_error *err);

/* Releases the handle. A session that was not finished is flushed and closed
 * without a terminal record (the reader rejects that trace, like a crash). */
void cg_session_free(cg_session *s);

/* Path given to cg_session_open (owned by s). */
const char *cg_session_path(const cg_session *s);

/* Host nanoseconds since cg_session_open (CLOCK_MONOTONIC). */
uint64_t cg_session_host_now_ns(const cg_session *s);
/* Converts a CLOCK_MONOTONIC time point to session nanoseconds; -1 when it is
 * before the session started. */
int cg_session_host_timestamp_ns(const cg_session *s, const struct timespec *monotonic,
                                 uint64_t *out_ns, cg_error *err);

/* Opens a span on the calling thread's stack: parent = the thread's innermost
 * open span (root s1 when none). name non-blank. The id goes to *out. */
int cg_session_begin_span(cg_session *s, const char *name, cg_span_kind kind, cg_span_id *out,
                          cg_error *err);
/* The measured region: a measured function span. A session accepts one
 * measured region (a second is refused). */
int cg_session_begin_measurement(cg_session *s, const char *name, cg_span_id *out,
                                 cg_error *err);
/* A span tagged with a training step (forward / backward / optimizer; not
 * CG_STEP_NONE). */
int cg_session_begin_step_span(cg_session *s, const char *name, cg_step step, cg_span_kind kind,
                               cg_span_id *out, cg_error *err);
/* Closes `id`, writing span_end with the measured host wall duration. id must
 * be the innermost open span of the calling thread (CG_ESTATE otherwise); the
 * root is closed only by cg_session_finish. */
int cg_session_end_span(cg_session *s, cg_span_id id, cg_error *err);
/* Writes an already finished host span [start_ns, start_ns+duration_ns)
 * parented to the root, without touching any stack (concurrent work).
 * duration_ns > 0, no overflow, end ≤ now. The id goes to *out (may be NULL). */
int cg_session_record_completed_host_span(cg_session *s, const char *name, cg_span_kind kind,
                                          uint64_t start_ns, uint64_t duration_ns,
                                          cg_span_id *out, cg_error *err);
/* Innermost span the calling thread has open; the root when it has none; 0
 * once the session is finished. */
cg_span_id cg_session_current_span(cg_session *s);
/* Host duration recorded for a closed span; -1 while it is open or unknown. */
int cg_session_span_duration_ns(cg_session *s, cg_span_id id, uint64_t *out, cg_error *err);

/* Evidence. `span` must be a span of this session (open or closed).
 * An op must end (timestamp + duration) no later than now and lie within its
 * span: start ≥ the span's start and, for a closed span, end ≤ the span's end.
 * Memory and device-memory timestamps must not be later than now. These rules
 * keep the terminal after all host evidence and ops inside their spans. */
int cg_session_record_op(cg_session *s, cg_span_id span, const cg_op_record *op, cg_error *err);
int cg_session_record_tensor(cg_session *s, cg_span_id span, const cg_tensor_record *t,
                             cg_error *err);
int cg_session_record_memory_alloc(cg_session *s, cg_span_id span, const cg_memory_record *m,
                                   cg_error *err);
int cg_session_record_memory_free(cg_session *s, cg_span_id span, const cg_memory_record *m,
                                  cg_error *err);
int cg_session_record_device_memory(cg_session *s, const cg_device_memory_record *m,
                                    cg_error *err);
int cg_session_record_device_interval(cg_session *s, cg_span_id span,
                                      const cg_device_interval_record *d, cg_error *err);
/* Call edge from → to. Both spans must exist, `to` must be a child of `from`,
 * and when `to` is already closed host_duration_ns must equal its duration. */
int cg_session_record_call_edge(cg_session *s, cg_span_id from, cg_span_id to,
                                uint64_t host_duration_ns, cg_error *err);
/* Data edge between tensor ids (both non-empty). */
int cg_session_record_data_edge(cg_session *s, const char *from_tensor, const char *to_tensor,
                                cg_error *err);
/* Gradient observation, event id "gradient-{n}". root and key non-blank.
 * norm NULL = absent. State/norm must agree: present ⇒ finite norm > 0;
 * zero ⇒ norm == +0.0; missing / non_finite ⇒ no norm. */
int cg_session_record_gradient(cg_session *s, const char *root, const char *key,
                               cg_grad_state state, const double *norm, cg_error *err);

/* tensor_stats from a float buffer of n elements (the tensor converted to
 * f32; `dtype` names the original dtype). span_id is the wire id ("s3"), as
 * upstream's trace/10 API; label non-blank; the shape's element count (empty
 * shape = 1) must equal n; data may be NULL only when n is 0. Aggregates are
 * computed in double precision (see cg_tensor_stats_f32). */
int cg_session_record_tensor_stats_f32(cg_session *s, const char *span_id, const char *label,
                                       const uint64_t *shape, size_t rank, const char *dtype,
                                       const float *data, size_t n, cg_error *err);

/* The statistics used by cg_session_record_tensor_stats_f32: non_finite =
 * count of NaN/±inf; rms = sqrt(Σx²/n), abs_max = max|x|, mean = Σx/n over all
 * elements. Producer rule: an aggregate that is not finite is written as 0 —
 * so when any element is non-finite, rms, abs_max and mean are all 0 and
 * non_finite is authoritative. n == 0 gives all zeros. */
typedef struct cg_f32_stats {
    uint64_t elements, non_finite;
    double rms, abs_max, mean;
} cg_f32_stats;
void cg_tensor_stats_f32(const float *data, size_t n, cg_f32_stats *out);

/* Writes buffered records to the file. */
int cg_session_flush(cg_session *s, cg_error *err);
/* Completes the capture: only the root may still be open (CG_ESTATE
 * otherwise, naming an open span). Writes the root span_end (duration = now)
 * and `terminal` complete at the same timestamp, flushes, fsyncs and closes
 * the file. Every later call on s fails with CG_ESTATE. */
int cg_session_finish(cg_session *s, cg_error *err);
/* Records a failed capture: reason non-blank. Writes `terminal` failed
 * without closing open spans, flushes, fsyncs and closes the file. */
int cg_session_finish_failed(cg_session *s, const char *reason, cg_error *err);

#endif
