/* payload.c — viewer/5 payload from an evidence/4 packet. */
#include "render/payload.h"

#include <stdlib.h>
#include <string.h>

#include "render/viewer_html.h"

static cg_jv *or_null(cg_arena *a, cg_jv *v) { return v ? v : cg_jv_null(a); }

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

static cg_jv *trace_edge(cg_arena *a, const cg_jv *e) {
    const char *kind = cg_jv_as_str(cg_jv_get(e, "kind"));
    bool data = kind && !strcmp(kind, "data");
    const char *from = cg_jv_as_str(cg_jv_get(e, data ? "from_tensor" : "from_span"));
    const char *to = cg_jv_as_str(cg_jv_get(e, data ? "to_tensor" : "to_span"));
    if (!from) from = "";
    if (!to) to = "";
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
    cg_jv *node;
    uint64_t total;
    const char *id;
} cost_ref;

static int cmp_cost(const void *x, const void *y) {
    const cost_ref *p = x, *q = y;
    if (p->total != q->total) return p->total > q->total ? -1 : 1;
    return strcmp(p->id, q->id);
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
    size_t n = cg_jv_len(spans);
    cg_jv *nodes = cg_jv_arr(a), *tedges = cg_jv_arr(a), *tree = cg_jv_arr(a);
    cost_ref *refs = n ? malloc(n * sizeof *refs) : NULL;
    if (n && !refs) abort();
    for (size_t i = 0; i < n; i++) {
        cg_jv *node = trace_node(a, cg_jv_at(spans, i));
        cg_jv_arr_push(a, nodes, node);
        refs[i].node = node;
        refs[i].total = u64_of(cg_jv_get(node, "host_total_time_ns"));
        refs[i].id = cg_jv_as_str(cg_jv_get(node, "id")) ? cg_jv_as_str(cg_jv_get(node, "id")) : "";
        const char *kind = cg_jv_as_str(cg_jv_get(node, "kind"));
        if (kind && strcmp(kind, "op") && strcmp(kind, "tensor")) cg_jv_arr_push(a, tree, node);
    }
    for (size_t i = 0; i < cg_jv_len(edges); i++) cg_jv_arr_push(a, tedges, trace_edge(a, cg_jv_at(edges, i)));
    if (n) qsort(refs, n, sizeof *refs, cmp_cost);
    cg_jv *items = cg_jv_arr(a);
    for (size_t i = 0; i < n; i++) cg_jv_arr_push(a, items, refs[i].node);
    free(refs);

    cg_jv *views = cg_jv_obj(a);
    cg_jv *trace = cg_jv_obj(a);
    cg_jv_obj_put(a, trace, "nodes", nodes);
    cg_jv_obj_put(a, trace, "edges", tedges);
    cg_jv_obj_put(a, views, "trace", trace);
    cg_jv *costs = cg_jv_obj(a);
    cg_jv_obj_put(a, costs, "items", items);
    cg_jv_obj_put(a, views, "span_costs", costs);
    cg_jv_obj_put(a, views, "memory", or_null(a, cg_jv_get(p, "memory")));
    cg_jv *ev = cg_jv_obj(a);
    static const char *const ev_keys[] = {"provenance", "health", "capabilities", "findings", "facts", "gaps"};
    for (size_t i = 0; i < sizeof ev_keys / sizeof ev_keys[0]; i++)
        cg_jv_obj_put(a, ev, ev_keys[i], or_null(a, cg_jv_get(p, ev_keys[i])));
    cg_jv_obj_put(a, ev, "tensors", or_empty_arr(a, cg_jv_get(p, "tensor_stats")));
    cg_jv *gradients = graph ? or_empty_arr(a, cg_jv_get(graph, "gradients")) : cg_jv_arr(a);
    cg_jv_obj_put(a, ev, "gradients", gradients);
    cg_jv_obj_put(a, views, "evidence", ev);
    cg_jv *gpu = cg_jv_obj(a);
    cg_jv *src_gpu = cg_jv_get(p, "gpu");
    for (size_t i = 0; src_gpu && src_gpu->type == CG_JOBJ && i < src_gpu->u.obj.n; i++)
        cg_jv_obj_put(a, gpu, src_gpu->u.obj.m[i].key, src_gpu->u.obj.m[i].val);
    cg_jv_obj_put(a, gpu, "correlation_capability", or_null(a, cg_jv_get(caps, "gpu_correlation")));
    cg_jv_obj_put(a, gpu, "provenance_capability", or_null(a, cg_jv_get(caps, "provenance_binding")));
    cg_jv_obj_put(a, views, "gpu", gpu);
    cg_jv_obj_put(a, o, "views", views);
    cg_jv_obj_put(a, o, "span_tree", tree);
    cg_jv_obj_put(a, o, "gradients", gradients);
    return o;
}
