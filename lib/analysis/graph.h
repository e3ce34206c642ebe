/* graph.h — the execution graph (candle-graph/graph/5, spec §6) built from a
 * complete, structurally valid trace: span, op and tensor nodes, call/data
 * edges and the GraphSummary (outer wall time, slowest host / device spans,
 * heaviest spans).
 *
 * Ownership: the graph and everything it points to live in the caller's arena;
 * strings point into the trace, the timing/memory profiles or the arena, so
 * they must outlive the graph. Scratch memory is malloc'd and freed before
 * returning.
 * Memory: O(distinct nodes + edges) in compact records (spans 40 bytes, ops 8,
 * tensors 16, edges 16, plus 4 per node for the id order): ids of op and tensor
 * nodes are formatted only when viewed, and no trace string is copied.
 * Errors (returns NULL, err set, CG_ESTATE / CG_EINVAL):
 *   "cannot build a graph from a failed capture"           (capture not complete)
 *   "trace is structurally invalid: <error messages joined by '; '>"
 *   "duplicate graph node ID \"<id>\": span IDs must not collide with synthesized
 *    `<span>/op/<n>` or `tensor/<id>` node IDs"            (the first id, in node order,
 *                                                          that repeats an earlier node's)
 *   "execution graph would exceed 4294967295 edges"         (CG_ELIMIT; also when the
 *                                                          nodes would not fit 32-bit indices,
 *                                                          or one op has over 2^28 - 1 inputs)
 * Thread safety: reentrant (no global state); distinct arenas may be used concurrently.
 * Limits: O(n log n) integer work in the number of records (node ids are
 * ordered once by a multikey string sort and a linear merge; edges sort on
 * integer ranks; O(n log^2 n) for the per-span memory metrics); memory proportional to the input; no recursion over the
 * span tree (deep nesting is safe). */
#ifndef CG_ANALYSIS_GRAPH_H
#define CG_ANALYSIS_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/memory.h"
#include "analysis/timing.h"
#include "base/arena.h"
#include "base/error.h"
#include "base/json.h"
#include "trace/health.h"
#include "trace/trace.h"

#define CG_GRAPH_SCHEMA "candle-graph/graph/5"
#define CG_GRAPH_NONE ((size_t)-1)
#define CG_GRAPH_TOP 8 /* rows kept in each summary ranking */

typedef enum cg_node_kind {
    CG_NODE_ROOT = 0,
    CG_NODE_FUNCTION,
    CG_NODE_MODULE,
    CG_NODE_OP,
    CG_NODE_TENSOR,
    CG_NODE_OTHER
} cg_node_kind;
const char *cg_node_kind_name(cg_node_kind k); /* "root" | "function" | ... */

/* A node as the JSON shows it. The graph stores nodes compactly per kind and
 * never keeps synthesized ids: cg_graph_node_view fills this view on demand. */
typedef struct cg_graph_node {
    const char *id;        /* op/tensor nodes: formatted into the view's arena (NULL without one) */
    const char *parent_id; /* NULL => JSON null */
    const char *name;
    uint64_t start_ns, host_self_time_ns, host_total_time_ns;
    const cg_device_span_timing *device_timings; /* n_device_timings of them; omitted when 0 */
    const cg_shape *shape; /* NULL => omitted */
    const char *dtype, *device; /* NULL => omitted */
    uint64_t allocated_bytes, peak_live_bytes, residual_bytes, dense_bytes;
    /* navigation (not serialized) */
    size_t parent;       /* node index or CG_GRAPH_NONE */
    uint32_t n_device_timings;
    cg_node_kind kind;
    bool has_allocated_bytes, has_peak_live_bytes, has_residual_bytes, has_dense_bytes;
    bool in_measured_subtree;
} cg_graph_node;

/* An edge as the JSON shows it (cg_graph_edge_view). */
typedef struct cg_graph_edge {
    bool is_data;              /* kind: call (false) | data (true) */
    const char *from, *to;     /* call: from_span/to_span; data: from_tensor/to_tensor */
    uint64_t host_duration_ns; /* call only */
    const char *label;         /* NULL => omitted */
} cg_graph_edge;

typedef enum cg_host_scope { CG_HOST_SCOPE_MEASURED_SUBTREE = 0, CG_HOST_SCOPE_CONCURRENT_OVERLAP } cg_host_scope;
const char *cg_host_scope_name(cg_host_scope s); /* "measured_subtree" | "concurrent_overlap" */

typedef struct cg_host_span_cost {
    const char *id, *name;
    cg_host_scope scope;
    uint64_t host_self_time_ns, measured_overlap_self_time_ns, full_duration_ns,
        measured_overlap_duration_ns;
} cg_host_span_cost;

typedef struct cg_device_span_cost {
    const char *id, *name, *device, *clock_id;
    uint64_t device_busy_ns;
} cg_device_span_cost;

typedef struct cg_heavy_span {
    const char *id, *name;
    uint64_t allocated_bytes;
    bool has_peak_live_bytes;
    uint64_t peak_live_bytes;
} cg_heavy_span;

typedef struct cg_graph_summary {
    const char *entrypoint;
    bool has_measured;    /* false only for a graph without a measured span (never for valid traces) */
    uint64_t outer_wall_time_ns;
    cg_host_span_cost slowest_host_spans[CG_GRAPH_TOP]; size_t n_slowest_host_spans;
    cg_device_span_cost slowest_device_spans[CG_GRAPH_TOP]; size_t n_slowest_device_spans;
    cg_heavy_span heaviest_spans[CG_GRAPH_TOP]; size_t n_heaviest_spans;
} cg_graph_summary;

typedef struct cg_graph_store cg_graph_store; /* private: the compact nodes and edges */

typedef struct cg_graph {
    const cg_trace *trace;
    /* nodes: spans (trace order = sorted by id), then ops (document order),
     * then tensors (sorted by tensor id) */
    size_t n_nodes, n_span_nodes, n_op_nodes, n_tensor_nodes;
    size_t n_edges; /* deduplicated, sorted by (from, to, kind) */
    bool summary_only; /* built by cg_graph_build_summary: no edges, no views */
    cg_graph_summary summary;
    const cg_timing_profile *timing;
    const cg_memory_profile *memory;
    const cg_graph_store *store;
} cg_graph;

/* build_from_trace(doc). health must be cg_health_analyze(t). */
cg_graph *cg_graph_build(const cg_trace *t, const cg_health *h, cg_arena *a, cg_error *err);
/* Same, reusing profiles already computed for this trace (timing/memory may be NULL). */
cg_graph *cg_graph_build_with(const cg_trace *t, const cg_health *h, const cg_timing_profile *timing,
                              const cg_memory_profile *memory, cg_arena *a, cg_error *err);

/* The same build (same refusals, node counts and summary) without what only
 * views of nodes and edges need: no edges (n_edges 0) and no per-op memory.
 * Such a graph is never viewed (cg_graph_node_view, cg_graph_edge_view,
 * cg_graph_find_node); its JSON is {schema, summary}. */
cg_graph *cg_graph_build_summary(const cg_trace *t, const cg_health *h, const cg_timing_profile *timing,
                                 const cg_memory_profile *memory, cg_arena *a, cg_error *err);

/* Accessors for the evidence / viewer layers. */
bool cg_graph_outer_wall_time(const cg_graph *g, uint64_t *ns);                /* false: no measured span */
const cg_host_span_cost *cg_graph_first_slowest_host(const cg_graph *g);     /* NULL when none */
const cg_device_span_cost *cg_graph_first_slowest_device(const cg_graph *g); /* NULL when none */
size_t cg_graph_find_node(const cg_graph *g, const char *id); /* node index, O(log n); CG_GRAPH_NONE if absent */
/* Node i (< n_nodes) / edge i (< n_edges) into *out. Synthesized ids (ops,
 * tensors, and edge endpoints naming them) are formatted into a; a node viewed
 * with a == NULL leaves them NULL (an edge needs a). */
void cg_graph_node_view(const cg_graph *g, size_t i, cg_arena *a, cg_graph_node *out);
void cg_graph_edge_view(const cg_graph *g, size_t i, cg_arena *a, cg_graph_edge *out);

/* JSON. ExecutionGraph: {schema, spans, edges, tensors, gradients, summary}
 * ({schema, summary} for a summary-only graph). */
cg_jv *cg_graph_to_json(cg_arena *a, const cg_graph *g);
/* The same value with spans, edges, tensors and gradients as lazy arrays
 * (json.h): g and its trace must outlive every use of the value. */
cg_jv *cg_graph_to_json_lazy(cg_arena *a, const cg_graph *g);
cg_jv *cg_graph_node_to_json(cg_arena *a, const cg_graph_node *n);
cg_jv *cg_graph_edge_to_json(cg_arena *a, const cg_graph_edge *e);
cg_jv *cg_graph_summary_to_json(cg_arena *a, const cg_graph_summary *s);
cg_jv *cg_host_span_cost_to_json(cg_arena *a, const cg_host_span_cost *c);
cg_jv *cg_device_span_cost_to_json(cg_arena *a, const cg_device_span_cost *c);
cg_jv *cg_heavy_span_to_json(cg_arena *a, const cg_heavy_span *c);

#endif
