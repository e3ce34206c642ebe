/* payload.c — viewer/5 payload from an evidence/4 packet, bounded.
 *
 * The offline viewer must open any capture: every list of the payload is cut
 * to a fixed number of items, and each cut is stated in the payload's
 * `truncation` object (our addition, see docs/compatibility.md), keyed by the
 * list's dotted path: {total, displayed, truncated, order}. Graph nodes keep
 * the heaviest by host total time (plus the ancestors a kept span needs for
 * the tree), edges those between kept nodes, span costs the heaviest, memory
 * timelines are downsampled keeping each bucket's first and highest point (so
 * the peak survives), and every other list keeps its first items. */
#include "render/payload.h"

#include <stdlib.h>
#include <string.h>

#include "base/strmap.h"
#include "render/viewer_html.h"

#define VIEW_MAX_NODES 2000u
#define VIEW_MAX_EDGES 4000u
#define VIEW_MAX_ROWS 2000u     /* any other list */
#define VIEW_MAX_TIMELINE 2000u /* points of a downsampled timeline */

static cg_jv *or_null(cg_arena *a, cg_jv *v) { return v ? v : cg_jv_null(a); }

/* Records the cut of the list at `path` in trunc. */
static void note_cut(cg_arena *a, cg_jv *trunc, const char *path, size_t total, size_t shown, const char *order) {
    if (!total) return; /* an empty list is not cut */
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "total", cg_jv_u64(a, total));
    cg_jv_obj_put(a, o, "displayed", cg_jv_u64(a, shown));
    cg_jv_obj_put(a, o, "truncated", cg_jv_bool(a, shown < total));
    cg_jv_obj_put(a, o, "order", cg_jv_str_nocopy(a, order));
    cg_jv_obj_put(a, trunc, cg_arena_strdup(a, path), o);
}

/* The first `max` items of arr (arr itself when it is short enough). */
static cg_jv *first_n(cg_arena *a, cg_jv *arr, size_t max, cg_jv *trunc, const char *path) {
    size_t n = cg_jv_len(arr);
    note_cut(a, trunc, path, n, n < max ? n : max, "first");
    if (n <= max) return arr;
    cg_jv *o = cg_jv_arr(a);
    for (size_t i = 0; i < max; i++) cg_jv_arr_push(a, o, cg_jv_at(arr, i));
    return o;
}

/* The numeric level of a timeline point: live_bytes (logical) or used_bytes
 * (physical); 0 when it has neither. */
static uint64_t level_of(const cg_jv *p) {
    uint64_t v = 0;
    if (!cg_jv_as_u64(cg_jv_get(p, "live_bytes"), &v)) cg_jv_as_u64(cg_jv_get(p, "used_bytes"), &v);
    return v;
}

/* At most VIEW_MAX_TIMELINE points in order: each of VIEW_MAX_TIMELINE/2 buckets
 * gives its first point and its highest (the global peak is always kept), and
 * the last point is kept. */
static cg_jv *downsample(cg_arena *a, cg_jv *arr, cg_jv *trunc, const char *path) {
    size_t n = cg_jv_len(arr), buckets = VIEW_MAX_TIMELINE / 2;
    if (n <= VIEW_MAX_TIMELINE) {
        note_cut(a, trunc, path, n, n, "downsampled");
        return arr;
    }
    cg_jv *o = cg_jv_arr(a);
    for (size_t b = 0; b < buckets; b++) {
        size_t lo = n * b / buckets, hi = n * (b + 1) / buckets, top = lo;
        if (b + 1 == buckets) hi--; /* the last point is pushed on its own */
        for (size_t i = lo + 1; i < hi; i++)
            if (level_of(cg_jv_at(arr, i)) > level_of(cg_jv_at(arr, top))) top = i;
        cg_jv_arr_push(a, o, cg_jv_at(arr, lo));
        if (top != lo) cg_jv_arr_push(a, o, cg_jv_at(arr, top));
    }
    cg_jv_arr_push(a, o, cg_jv_at(arr, n - 1));
    note_cut(a, trunc, path, n, cg_jv_len(o), "downsampled");
    return o;
}

/* A shallow copy of obj whose arrays (and those of its sub-objects, to `depth`
 * levels) are cut: members named "timeline" downsampled, the others first N. */
static cg_jv *cap_lists(cg_arena *a, cg_jv *obj, const char *path, int depth, cg_jv *trunc) {
    if (!obj || obj->type != CG_JOBJ) return obj;
    cg_jv *o = cg_jv_obj(a);
    for (size_t i = 0; i < obj->u.obj.n; i++) {
        const char *k = obj->u.obj.m[i].key;
        cg_jv *v = obj->u.obj.m[i].val;
        char *sub = cg_arena_printf(a, "%s.%s", path, k);
        if (v && v->type == CG_JARR)
            v = !strcmp(k, "timeline") ? downsample(a, v, trunc, sub) : first_n(a, v, VIEW_MAX_ROWS, trunc, sub);
        else if (v && v->type == CG_JOBJ && depth > 0)
            v = cap_lists(a, v, sub, depth - 1, trunc);
        cg_jv_obj_put(a, o, k, v);
    }
    return o;
}

static cg_jv *or_empty_arr(cg_arena *a, cg_jv *v) { return v && v->type == CG_JARR ? v : cg_jv_arr(a); }

static uint64_t u64_of(const cg_jv *v) {
    uint64_t x = 0;
    cg_jv_as_u64(v, &x);
    return x;
}

static const char *short_label(const char *name) {
    const char *best = name;
    for (const char *p = name; (p = strstr(p, "::")) != NULL; p += 2) best = p + 2;
    return best;
}

static cg_jv *trace_node(cg_arena *a, const cg_jv *n) {
    cg_jv *o = cg_jv_obj(a);
    const char *name = cg_jv_as_str(cg_jv_get(n, "name"));
    if (!name) name = "";
    uint64_t self = u64_of(cg_jv_get(n, "host_self_time_ns")), total = u64_of(cg_jv_get(n, "host_total_time_ns"));
    cg_jv_obj_put(a, o, "id", or_null(a, cg_jv_get(n, "id")));
    cg_jv_obj_put(a, o, "label", cg_jv_str(a, name));
    cg_jv_obj_put(a, o, "short_label", cg_jv_str(a, short_label(name)));
    cg_jv_obj_put(a, o, "kind", or_null(a, cg_jv_get(n, "kind")));
    cg_jv_obj_put(a, o, "parent_id", or_null(a, cg_jv_get(n, "parent_id")));
    cg_jv_obj_put(a, o, "start_ns", or_null(a, cg_jv_get(n, "start_ns")));
    cg_jv_obj_put(a, o, "host_self_time_ns", cg_jv_u64(a, self));
    cg_jv_obj_put(a, o, "host_total_time_ns", cg_jv_u64(a, total));
    cg_jv_obj_put(a, o, "host_self_ratio", cg_jv_f64(a, total ? (double)self / (double)total : 0.0));
    cg_jv_obj_put(a, o, "device_timings", or_empty_arr(a, cg_jv_get(n, "device_timings")));
    static const char *const opt[] = {"shape", "dtype", "device", "allocated_bytes", "peak_live_bytes",
                                      "residual_bytes", "dense_bytes"};
    for (size_t i = 0; i < sizeof opt / sizeof opt[0]; i++) cg_jv_obj_put(a, o, opt[i], or_null(a, cg_jv_get(n, opt[i])));
    return o;
}

/* The endpoints of a graph edge (data: from/to_tensor, call: from/to_span); "" when absent. */
static bool edge_ends(const cg_jv *e, const char **from, const char **to) {
    const char *kind = cg_jv_as_str(cg_jv_get(e, "kind"));
    bool data = kind && !strcmp(kind, "data");
    *from = cg_jv_as_str(cg_jv_get(e, data ? "from_tensor" : "from_span"));
    *to = cg_jv_as_str(cg_jv_get(e, data ? "to_tensor" : "to_span"));
    if (!*from) *from = "";
    if (!*to) *to = "";
    return data;
}

static cg_jv *trace_edge(cg_arena *a, const cg_jv *e) {
    const char *from, *to;
    bool data = edge_ends(e, &from, &to);
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "id", cg_jv_str_nocopy(a, cg_arena_printf(a, "%s->%s", from, to)));
    cg_jv_obj_put(a, o, "from", cg_jv_str(a, from));
    cg_jv_obj_put(a, o, "to", cg_jv_str(a, to));
    cg_jv_obj_put(a, o, "kind", cg_jv_str_nocopy(a, data ? "data" : "call"));
    cg_jv_obj_put(a, o, "host_duration_ns", data ? cg_jv_null(a) : or_null(a, cg_jv_get(e, "host_duration_ns")));
    cg_jv_obj_put(a, o, "label", or_null(a, cg_jv_get(e, "label")));
    return o;
}

typedef struct cost_ref {
    uint64_t total;
    const char *id;
    size_t index; /* in graph order */
} cost_ref;

static int cmp_cost(const void *x, const void *y) {
    const cost_ref *p = x, *q = y;
    if (p->total != q->total) return p->total > q->total ? -1 : 1;
    return strcmp(p->id, q->id);
}

static const char *node_id(const cg_jv *n) {
    const char *id = cg_jv_as_str(cg_jv_get(n, "id"));
    return id ? id : "";
}

/* Marks the `max` heaviest nodes and the ancestors they need (each node is marked
 * once, so the ancestor walk is linear overall). Returns the refs, heaviest first. */
static cost_ref *select_nodes(const cg_jv *spans, const cg_strmap *by_id, size_t max, bool *keep) {
    size_t n = cg_jv_len(spans);
    cost_ref *refs = malloc((n ? n : 1) * sizeof *refs);
    if (!refs) abort();
    for (size_t i = 0; i < n; i++)
        refs[i] = (cost_ref){u64_of(cg_jv_get(cg_jv_at(spans, i), "host_total_time_ns")), node_id(cg_jv_at(spans, i)), i};
    qsort(refs, n, sizeof *refs, cmp_cost);
    for (size_t r = 0; r < n && r < max; r++) {
        for (size_t i = refs[r].index; !keep[i];) {
            keep[i] = true;
            const char *parent = cg_jv_as_str(cg_jv_get(cg_jv_at(spans, i), "parent_id"));
            size_t *pi = parent ? cg_strmap_get(by_id, parent) : NULL;
            if (!pi) break;
            i = *pi;
        }
    }
    return refs;
}

/* The graph views: trace nodes (graph order) and the span tree over the selected
 * nodes, edges between them, span costs heaviest first; each cut noted in trunc. */
static void graph_views(cg_arena *a, cg_jv *spans, cg_jv *edges, cg_jv *trunc, cg_jv **nodes, cg_jv **tedges,
                        cg_jv **tree, cg_jv **items) {
    size_t n = cg_jv_len(spans), kept = 0;
    cg_strmap by_id;
    cg_strmap_init(&by_id);
    for (size_t i = 0; i < n; i++) cg_strmap_put(&by_id, node_id(cg_jv_at(spans, i)), i, NULL);
    bool *keep = calloc(n ? n : 1, sizeof *keep);
    cg_jv **node_of = calloc(n ? n : 1, sizeof *node_of);
    if (!keep || !node_of) abort();
    cost_ref *refs = select_nodes(spans, &by_id, VIEW_MAX_NODES, keep);
    *nodes = cg_jv_arr(a);
    *tree = cg_jv_arr(a);
    *items = cg_jv_arr(a);
    *tedges = cg_jv_arr(a);
    for (size_t i = 0; i < n; i++) {
        if (!keep[i]) continue;
        node_of[i] = trace_node(a, cg_jv_at(spans, i));
        cg_jv_arr_push(a, *nodes, node_of[i]);
        kept++;
        const char *kind = cg_jv_as_str(cg_jv_get(node_of[i], "kind"));
        if (kind && strcmp(kind, "op") && strcmp(kind, "tensor")) cg_jv_arr_push(a, *tree, node_of[i]);
    }
    for (size_t r = 0; r < n; r++)
        if (keep[refs[r].index]) cg_jv_arr_push(a, *items, node_of[refs[r].index]);
    size_t n_edges = cg_jv_len(edges);
    for (size_t i = 0; i < n_edges && cg_jv_len(*tedges) < VIEW_MAX_EDGES; i++) {
        const char *from, *to;
        edge_ends(cg_jv_at(edges, i), &from, &to);
        size_t *f = cg_strmap_get(&by_id, from), *t = cg_strmap_get(&by_id, to);
        if (f && t && keep[*f] && keep[*t]) cg_jv_arr_push(a, *tedges, trace_edge(a, cg_jv_at(edges, i)));
    }
    const char *order = "heaviest by host total time, with their ancestors";
    note_cut(a, trunc, "views.trace.nodes", n, kept, order);
    note_cut(a, trunc, "views.span_costs.items", n, kept, order);
    note_cut(a, trunc, "views.trace.edges", n_edges, cg_jv_len(*tedges), "between displayed nodes");
    free(refs);
    free(node_of);
    free(keep);
    cg_strmap_free(&by_id);
}

static cg_jv *logical_peak(cg_arena *a, const cg_jv *packet) {
    cg_jv *facts = cg_jv_get(packet, "facts");
    for (size_t i = 0; i < cg_jv_len(facts); i++) {
        cg_jv *f = cg_jv_at(facts, i);
        const char *code = cg_jv_as_str(cg_jv_get(f, "code"));
        if (code && !strcmp(code, "logical_peak_live_bytes")) return or_null(a, cg_jv_get(cg_jv_get(f, "value"), "value"));
    }
    return cg_jv_null(a);
}

cg_jv *cg_viewer_payload(cg_arena *a, const cg_jv *p) {
    cg_jv *prov = cg_jv_get(p, "provenance"), *health = cg_jv_get(p, "health"), *graph = cg_jv_get(p, "graph");
    cg_jv *caps = cg_jv_get(p, "capabilities");
    if (graph && graph->type == CG_JNULL) graph = NULL;
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "schema", cg_jv_str_nocopy(a, CG_VIEWER_SCHEMA));
    cg_jv_obj_put(a, o, "default_view", cg_jv_str_nocopy(a, "evidence"));

    cg_jv *summary = cg_jv_obj(a);
    cg_jv_obj_put(a, summary, "entrypoint", or_null(a, cg_jv_get(prov, "entrypoint")));
    cg_jv_obj_put(a, summary, "phase", or_null(a, cg_jv_get(prov, "phase")));
    cg_jv_obj_put(a, summary, "outer_wall_time_ns",
                  graph ? or_null(a, cg_jv_get(cg_jv_get(graph, "summary"), "outer_wall_time_ns")) : cg_jv_null(a));
    cg_jv_obj_put(a, summary, "logical_peak_live_bytes", logical_peak(a, p));
    cg_jv_obj_put(a, summary, "capture_complete", or_null(a, cg_jv_get(health, "capture_complete")));
    cg_jv_obj_put(a, summary, "structurally_valid", or_null(a, cg_jv_get(health, "structurally_valid")));
    cg_jv_obj_put(a, o, "summary", summary);

    cg_jv *spans = graph ? cg_jv_get(graph, "spans") : NULL;
    cg_jv *edges = graph ? cg_jv_get(graph, "edges") : NULL;
    cg_jv *trunc = cg_jv_obj(a);
    cg_jv *nodes, *tedges, *tree, *items;
    graph_views(a, spans, edges, trunc, &nodes, &tedges, &tree, &items);

    cg_jv *views = cg_jv_obj(a);
    cg_jv *trace = cg_jv_obj(a);
    cg_jv_obj_put(a, trace, "nodes", nodes);
    cg_jv_obj_put(a, trace, "edges", tedges);
    cg_jv_obj_put(a, views, "trace", trace);
    cg_jv *costs = cg_jv_obj(a);
    cg_jv_obj_put(a, costs, "items", items);
    cg_jv_obj_put(a, views, "span_costs", costs);
    cg_jv_obj_put(a, views, "memory", or_null(a, cap_lists(a, cg_jv_get(p, "memory"), "views.memory", 2, trunc)));
    cg_jv *ev = cg_jv_obj(a);
    static const char *const ev_keys[] = {"provenance", "health", "capabilities", "findings", "facts", "gaps"};
    for (size_t i = 0; i < sizeof ev_keys / sizeof ev_keys[0]; i++)
        cg_jv_obj_put(a, ev, ev_keys[i], or_null(a, cg_jv_get(p, ev_keys[i])));
    cg_jv_obj_put(a, ev, "tensors",
                  first_n(a, or_empty_arr(a, cg_jv_get(p, "tensor_stats")), VIEW_MAX_ROWS, trunc, "views.evidence.tensors"));
    cg_jv *gradients = first_n(a, graph ? or_empty_arr(a, cg_jv_get(graph, "gradients")) : cg_jv_arr(a), VIEW_MAX_ROWS,
                               trunc, "views.evidence.gradients");
    cg_jv_obj_put(a, ev, "gradients", gradients);
    cg_jv_obj_put(a, views, "evidence", ev);
    cg_jv *gpu = cg_jv_obj(a);
    cg_jv *src_gpu = cap_lists(a, cg_jv_get(p, "gpu"), "views.gpu", 1, trunc);
    for (size_t i = 0; src_gpu && src_gpu->type == CG_JOBJ && i < src_gpu->u.obj.n; i++)
        cg_jv_obj_put(a, gpu, src_gpu->u.obj.m[i].key, src_gpu->u.obj.m[i].val);
    cg_jv_obj_put(a, gpu, "correlation_capability", or_null(a, cg_jv_get(caps, "gpu_correlation")));
    cg_jv_obj_put(a, gpu, "provenance_capability", or_null(a, cg_jv_get(caps, "provenance_binding")));
    cg_jv_obj_put(a, views, "gpu", gpu);
    cg_jv_obj_put(a, o, "views", views);
    cg_jv_obj_put(a, o, "span_tree", tree);
    cg_jv_obj_put(a, o, "gradients", gradients);
    cg_jv_obj_put(a, o, "truncation", trunc);
    return o;
}
