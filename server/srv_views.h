/* srv_views.h — the dashboard views of a bundle (view_index.c), read by the
 * GET /bundles/{id}/views/... routes (routes_views.c) that draw every tab of
 * the web app's bundle page.
 *
 * A view index is derived only from the bundle's verified files: trace.jsonl
 * (its digest was checked at ingest) and the stored nsight/ files, through the
 * same cg_evidence_build the server uses to rederive evidence.json. Nothing of
 * an uploaded viewer.html is read. The index holds compact copies (strings in
 * its arena): span and op rows, span costs aggregated by (kind, name), the
 * logical memory timeline, the GPU tables, and small bounded JSON sections
 * (evidence, memory peak, GPU overview); the trace itself is freed after the
 * build.
 *
 * Indexes are shared and reference counted like the Timeline index:
 * srv_views_acquire takes one reference (building the index when needed; a
 * request for an index being built waits for that build), srv_views_release
 * drops it. The cache (at most SRV_VIEWS_CACHE_SLOTS bundles and about
 * SRV_VIEWS_CACHE_BYTES, least recently used evicted) lives in the server (srv_server.views), created on first use and
 * freed by srv_views_stop. Sort orders of the span and op tables are computed
 * on first use per column and kept with the index.
 *
 * Thread safety: everything reachable from an acquired index is read-only,
 * except the sort orders, which srv_views_order creates under the index's
 * mutex. */
#ifndef SRV_VIEWS_H
#define SRV_VIEWS_H

#include "srv.h"
#include "srv_cache.h"
#include "trace/trace.h"

#define SRV_VIEWS_CACHE_SLOTS 3
#define SRV_VIEWS_CACHE_BYTES ((uint64_t)1 << 30) /* approximate heap of the cached indexes */

typedef struct srv_vw_span {
    const char *id, *parent_id, *name; /* parent_id NULL for a root */
    uint64_t start_ns, duration_ns;    /* duration 0 while open */
    uint64_t self_ns, total_ns;        /* graph host times; valid when has_times */
    uint64_t ops;                      /* ops recorded in this span */
    uint32_t depth;
    uint8_t kind, step; /* cg_span_kind, cg_step */
    bool closed, measured, has_times;
} srv_vw_span;

typedef struct srv_vw_op {
    const char *span_id, *name, *device, *dtype;
    uint64_t timestamp_ns, duration_ns, output_bytes; /* output_bytes valid when has_output_bytes */
    bool has_output_bytes;
} srv_vw_op;

/* Span costs: graph nodes (spans and ops) of one (kind, name). self_ns is the
 * sum of host self times; without a graph (failed or invalid capture) the
 * totals are the closed span / op durations and has_self is false. */
typedef struct srv_vw_cost {
    const char *name, *kind;
    uint64_t count, self_ns, total_ns, max_total_ns;
    bool has_self;
} srv_vw_cost;

/* A summary table (kernels, runtime calls, memory operations) or a timeline
 * table (NVTX ranges, GPU operations) of the Nsight device plane, or the
 * device timing planes of the trace; one struct covers every column. */
typedef struct srv_vw_gpu_row {
    const char *name, *category, *kind, *device, *context, *stream, *correlation_id, *clock_id;
    uint64_t total_ns, count, average_ns, minimum_ns, maximum_ns;
    uint64_t start_ns, duration_ns;
} srv_vw_gpu_row;

enum {
    SRV_VW_KERNELS = 0,
    SRV_VW_RUNTIME_CALLS,
    SRV_VW_MEMORY_OPERATIONS,
    SRV_VW_NVTX_RANGES,
    SRV_VW_GPU_TIMELINE,
    SRV_VW_DEVICE_CLOCKS,
    SRV_VW_DEVICE_SPANS,
    SRV_VW_GPU_TABLES
};
extern const char *const srv_vw_gpu_table_names[SRV_VW_GPU_TABLES];

typedef struct srv_vw_table {
    srv_vw_gpu_row *rows;
    size_t n;
} srv_vw_table;

/* Sortable tables (the sort parameter names a column of one). */
enum { SRV_VW_SPANS = 0, SRV_VW_OPS = 1, SRV_VW_COSTS = 2, SRV_VW_SORTABLE = 3 };
#define SRV_VW_MAX_COLS 10

typedef struct srv_vw_index {
    srv_cache_item item; /* first: id, bytes (approximate heap), refs (srv_cache.h) */
    cg_arena arena; /* strings, JSON sections */
    srv_vw_span *spans; size_t n_spans;   /* trace order (sorted by id) */
    srv_vw_op *ops; size_t n_ops;         /* document order */
    srv_vw_cost *costs; size_t n_costs;   /* sorted by (kind, name) */
    uint64_t *mem_ts, *mem_live; size_t n_mem; /* logical timeline (sorted by time) */
    srv_vw_table gpu[SRV_VW_GPU_TABLES];
    cg_jv *evidence;    /* {provenance, health, capabilities, findings, facts, gaps, truncation} */
    cg_jv *memory;      /* {logical: {counts, peak, by_device}|null, physical: {by_device}|null, truncation} */
    cg_jv *gpu_summary; /* {status, reason, coverage, correlation, provenance, diagnostics, limits, truncation} */
    bool complete, valid;
    uint64_t *span_times; /* between srv_views_build_evidence and srv_views_finish: graph self, total per span */
    size_t n_span_times;  /* the graph's span nodes (the first spans of the trace) */
    pthread_mutex_t order_mu;
    uint32_t *order[SRV_VW_SORTABLE][SRV_VW_MAX_COLS]; /* ascending permutations, made on first use */
} srv_vw_index;


/* The index of bundle id (full 64-hex) with a reference taken, built from the
 * store when needed (the store takes a pooled connection only for each lookup;
 * none is held while parsing or building). NULL with err and its reason on
 * failure: none (the store is unreachable), not_found (no trace.jsonl),
 * payload_too_large (err.limit max_decoded_bytes), trace_invalid, internal. */
srv_vw_index *srv_views_acquire(srv_server *s, const char *id, cg_error *err);
void srv_views_release(srv_server *s, srv_vw_index *x);
/* Builds the index of a freshly published bundle ahead of its first request
 * (called by the upload warm-up worker of timeline_index.c, one at a time). */
void srv_views_warm(srv_server *s, const char *id);
/* The index of bundle id built from its verified trace t and the evidence
 * rederived from it (e; NULL: rebuilt here from t and the nsight directory
 * nsdir, NULL = none), neither cached nor saved: the upload builds it from
 * what its semantic step holds, so no second parse. NULL with err when the
 * evidence cannot be rebuilt. srv_views_keep saves it as the bundle's on-disk
 * copy (what the warm-up and later requests then load) and frees it. */
struct cg_evidence;
srv_vw_index *srv_views_build(const char *id, const cg_trace *t, const struct cg_evidence *e, const char *nsdir,
                              cg_error *err);
/* The same in two steps, so that the rows copied from the trace alone (spans,
 * ops) are not built while the evidence is alive: build_evidence takes from e
 * what only it has (span costs, GPU tables, JSON sections, memory timeline, the
 * graph's span times), finish copies the span and op rows from t (the same
 * trace) once e is gone. Together they make exactly srv_views_build's index;
 * an index is usable only after finish. */
srv_vw_index *srv_views_build_evidence(const char *id, const cg_trace *t, const struct cg_evidence *e);
void srv_views_finish(srv_vw_index *x, const cg_trace *t);
void srv_views_keep(srv_server *s, srv_vw_index *x);
/* Frees the server's view cache (at shutdown, after HTTP stopped). */
void srv_views_stop(srv_server *s);

/* The ascending order of table (SRV_VW_SPANS/OPS/COSTS) by column col (ties:
 * row index), computed once; owned by the index. */
const uint32_t *srv_views_order(srv_vw_index *x, int table, int col);
/* Column names of a table, in column-number order; NULL-terminated. */
extern const char *const srv_vw_span_cols[];
extern const char *const srv_vw_op_cols[];
extern const char *const srv_vw_cost_cols[];

/* routes_views.c */
enum MHD_Result srv_h_views_spans(srv_req *r);
enum MHD_Result srv_h_views_ops(srv_req *r);
enum MHD_Result srv_h_views_costs(srv_req *r);
enum MHD_Result srv_h_views_memory(srv_req *r);
enum MHD_Result srv_h_views_gpu(srv_req *r);
enum MHD_Result srv_h_views_evidence(srv_req *r);

/* view_index.c / view_store.c: an empty index (arena and order mutex ready),
 * freeing one, and its on-disk copy (<data_dir>/views/<id>.idx): save writes it
 * atomically; load returns NULL when the file is absent or does not read back
 * exactly (then the index is rebuilt from the trace). */
srv_vw_index *srv_vw_new(const char *id);
void srv_vw_free(srv_vw_index *x);
int srv_vw_save(const srv_vw_index *x, const char *path, cg_error *err);
srv_vw_index *srv_vw_load(const char *id, const char *path);

#endif
