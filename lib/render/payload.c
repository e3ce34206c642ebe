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
#include "base/alloc.h"

#include <stdlib.h>
#include <string.h>

#include "base/hmap.h"
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

static bool is_list(const cg_jv *v) { return v && (v->type == CG_JARR || v->type == CG_JLAZY); }

/* Collects items of a list (array or lazy array, walked once, never
 * materialized whole): either its first `limit` items, or those at the
 * ascending indices idx[0..n_idx). Lazy items are cloned into the arena. */
typedef struct pick_ctx {
    cg_arena *a;
    cg_jv *out;
    bool lazy;
    const size_t *idx;
    size_t n_idx, next, limit;
} pick_ctx;

static int pick_item(void *ctx, size_t i, const cg_jv *item) {
    pick_ctx *p = ctx;
    if (p->idx) {
        if (p->next >= p->n_idx) return 1;
        if (p->idx[p->next] != i) return 0;
        p->next++;
    } else if (i >= p->limit) {
        return 1;
    }
    cg_jv_arr_push(p->a, p->out, p->lazy ? cg_jv_clone(p->a, item) : (cg_jv *)item);
    return 0;
}

static cg_jv *pick(cg_arena *a, const cg_jv *list, const size_t *idx, size_t n_idx, size_t limit) {
    pick_ctx p = {a, cg_jv_arr(a), list->type == CG_JLAZY, idx, n_idx, 0, limit};
    cg_jv_each(list, pick_item, &p);
    return p.out;
}

/* The first `max` items of arr (arr itself when it is a short ordinary array). */
static cg_jv *first_n(cg_arena *a, cg_jv *arr, size_t max, cg_jv *trunc, const char *path) {
    size_t n = cg_jv_items(arr);
    note_cut(a, trunc, path, n, n < max ? n : max, "first");
    if (arr->type == CG_JARR && n <= max) return arr;
    return pick(a, arr, NULL, 0, max);
}

/* The numeric level of a timeline point: live_bytes (logical) or used_bytes
 * (physical); 0 when it has neither. */
static uint64_t level_of(const cg_jv *p) {
    uint64_t v = 0;
    if (!cg_jv_as_u64(cg_jv_get(p, "live_bytes"), &v)) cg_jv_as_u64(cg_jv_get(p, "used_bytes"), &v);
    return v;
}

/* The indices a downsampled timeline keeps: per bucket its first point and its
 * first highest one, found in one walk. */
typedef struct bucket_ctx {
    size_t n, buckets, b, lo, hi, top;
    uint64_t top_level;
    size_t *idx, n_idx;
} bucket_ctx;

static void bucket_open(bucket_ctx *c, size_t b) {
    c->b = b;
    c->lo = c->n * b / c->buckets;
    c->hi = c->n * (b + 1) / c->buckets;
    if (b + 1 == c->buckets) c->hi--; /* the last point is kept on its own */
}

static void bucket_close(bucket_ctx *c) {
    c->idx[c->n_idx++] = c->lo;
    if (c->top != c->lo) c->idx[c->n_idx++] = c->top;
}

static int bucket_item(void *ctx, size_t i, const cg_jv *item) {
    bucket_ctx *c = ctx;
    while (c->b < c->buckets && i >= c->hi) {
        bucket_close(c);
        bucket_open(c, c->b + 1);
    }
    if (c->b >= c->buckets) return 1;
    uint64_t level = level_of(item);
    if (i == c->lo || level > c->top_level) {
        c->top = i;
        c->top_level = level;
    }
    return 0;
}

/* At most VIEW_MAX_TIMELINE points in order: each of VIEW_MAX_TIMELINE/2 buckets
 * gives its first point and its highest (the global peak is always kept), and
 * the last point is kept. */
static cg_jv *downsample(cg_arena *a, cg_jv *arr, cg_jv *trunc, const char *path) {
    size_t n = cg_jv_items(arr);
    if (n <= VIEW_MAX_TIMELINE) {
        note_cut(a, trunc, path, n, n, "downsampled");
        return arr->type == CG_JARR ? arr : pick(a, arr, NULL, 0, n);
    }
    bucket_ctx c = {.n = n, .buckets = VIEW_MAX_TIMELINE / 2};
    c.idx = cg_arena_alloc(a, (VIEW_MAX_TIMELINE + 1) * sizeof *c.idx);
    bucket_open(&c, 0);
    cg_jv_each(arr, bucket_item, &c);
    while (c.b < c.buckets) {
        bucket_close(&c);
        bucket_open(&c, c.b + 1);
    }
    c.idx[c.n_idx++] = n - 1;
    cg_jv *o = pick(a, arr, c.idx, c.n_idx, 0);
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
        if (is_list(v))
            v = !strcmp(k, "timeline") ? downsample(a, v, trunc, sub) : first_n(a, v, VIEW_MAX_ROWS, trunc, sub);
        else if (v && v->type == CG_JOBJ && depth > 0)
            v = cap_lists(a, v, sub, depth - 1, trunc);
        cg_jv_obj_put(a, o, k, v);
    }
    return o;
}

static cg_jv *or_empty_arr(cg_arena *a, cg_jv *v) { return is_list(v) ? v : cg_jv_arr(a); }

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

static const char *str_or_empty(const cg_jv *v) {
    const char *s = cg_jv_as_str(v);
    return s ? s : "";
}

/* Byte-packed string copies (no per-string alignment) for the per-node ids. */
typedef struct str_pool {
    cg_arena *a;
    char *p;
    size_t left;
} str_pool;

static const char *pool_dup(str_pool *sp, const char *s) {
    size_t n = strlen(s) + 1;
    if (n > sp->left) {
        size_t c = n > 65536 ? n : 65536;
        sp->p = cg_arena_alloc(sp->a, c);
        sp->left = c;
    }
    char *r = sp->p;
    memcpy(r, s, n);
    sp->p += n;
    sp->left -= n;
    return r;
}

#define NO_PARENT ((size_t)-1)
#define PARENT_LATER ((size_t)-2) /* named before its node was seen: resolved after the walk */

/* What node selection needs of every graph node, read in one walk over the
 * spans list (ids copied, so the list may be lazy). Node ids are unique
 * (graph/5; the builder refuses duplicates) and parents are spans, so only
 * the nodes that can be parents (all but tensor nodes) are kept in the id
 * map. A parent already seen is kept as its index; the few named before their
 * node (span ids sort as strings) are copied and resolved after the walk. */
typedef struct later_ref {
    size_t node;
    const char *parent;
} later_ref;

typedef struct node_scan {
    str_pool pool;
    cost_ref *refs;
    size_t *parent; /* node index, NO_PARENT or PARENT_LATER */
    later_ref *later;
    size_t n_later, cap_later;
    cg_hstr by_id;
} node_scan;

static int scan_node(void *ctx, size_t i, const cg_jv *n) {
    node_scan *s = ctx;
    const char *parent = cg_jv_as_str(cg_jv_get(n, "parent_id"));
    const char *id = pool_dup(&s->pool, str_or_empty(cg_jv_get(n, "id")));
    s->refs[i] = (cost_ref){u64_of(cg_jv_get(n, "host_total_time_ns")), id, i};
    const char *kind = cg_jv_as_str(cg_jv_get(n, "kind"));
    if (!kind || strcmp(kind, "tensor")) cg_hstr_put(&s->by_id, id, i, NULL);
    size_t *pi = parent ? cg_hstr_get(&s->by_id, parent) : NULL;
    s->parent[i] = !parent ? NO_PARENT : pi ? *pi : PARENT_LATER;
    if (s->parent[i] != PARENT_LATER) return 0;
    if (s->n_later == s->cap_later) {
        s->cap_later = s->cap_later ? 2 * s->cap_later : 64;
        s->later = cg_xrealloc(s->later, s->cap_later, sizeof *s->later);
    }
    s->later[s->n_later++] = (later_ref){i, pool_dup(&s->pool, parent)};
    return 0;
}

static void resolve_later(node_scan *s) {
    for (size_t k = 0; k < s->n_later; k++) {
        size_t *pi = cg_hstr_get(&s->by_id, s->later[k].parent);
        s->parent[s->later[k].node] = pi ? *pi : NO_PARENT;
    }
}

/* Marks the `max` heaviest nodes and the ancestors they need (each node is marked
 * once, so the ancestor walk is linear overall). Sorts refs heaviest first. */
static void select_nodes(node_scan *s, size_t n, size_t max, bool *keep) {
    qsort(s->refs, n, sizeof *s->refs, cmp_cost);
    for (size_t r = 0; r < n && r < max; r++) {
        for (size_t i = s->refs[r].index; !keep[i];) {
            keep[i] = true;
            if (s->parent[i] == NO_PARENT) break;
            i = s->parent[i];
        }
    }
}

/* Second walk over the spans: the trace nodes of the kept ones (graph order). */
typedef struct node_emit {
    cg_arena *a;
    bool lazy;
    const bool *keep;
    cg_jv **node_of, *nodes, *tree;
    size_t kept;
} node_emit;

static int emit_node(void *ctx, size_t i, const cg_jv *n) {
    node_emit *e = ctx;
    if (!e->keep[i]) return 0;
    e->node_of[i] = trace_node(e->a, e->lazy ? cg_jv_clone(e->a, n) : n);
    cg_jv_arr_push(e->a, e->nodes, e->node_of[i]);
    e->kept++;
    const char *kind = cg_jv_as_str(cg_jv_get(e->node_of[i], "kind"));
    if (kind && strcmp(kind, "op") && strcmp(kind, "tensor")) cg_jv_arr_push(e->a, e->tree, e->node_of[i]);
    return 0;
}

/* A walk over the edges: those between kept nodes, up to VIEW_MAX_EDGES. */
typedef struct edge_emit {
    cg_arena *a;
    bool lazy;
    const bool *keep;
    const cg_hstr *by_id;
    cg_jv *out;
} edge_emit;

static int emit_edge(void *ctx, size_t i, const cg_jv *edge) {
    edge_emit *e = ctx;
    if (cg_jv_len(e->out) >= VIEW_MAX_EDGES) return 1;
    const char *from, *to;
    edge_ends(edge, &from, &to);
    size_t *f = cg_hstr_get(e->by_id, from), *t = cg_hstr_get(e->by_id, to);
    if (f && t && e->keep[*f] && e->keep[*t])
        cg_jv_arr_push(e->a, e->out, trace_edge(e->a, e->lazy ? cg_jv_clone(e->a, edge) : edge));
    return 0;
}

/* The graph views: trace nodes (graph order) and the span tree over the selected
 * nodes, edges between them, span costs heaviest first; each cut noted in trunc.
 * spans and edges may be lazy arrays: each is walked (not materialized). */
static void graph_views(cg_arena *a, cg_jv *spans, cg_jv *edges, cg_jv *trunc, cg_jv **nodes, cg_jv **tedges,
                        cg_jv **tree, cg_jv **items) {
    size_t n = cg_jv_items(spans);
    node_scan s = {{a, NULL, 0}, cg_xalloc(n, sizeof *s.refs), cg_xalloc(n, sizeof *s.parent), NULL, 0, 0, {{0}, NULL, 0, 0}};
    bool *keep = cg_xzalloc(n, sizeof *keep);
    cg_jv **node_of = cg_xzalloc(n, sizeof *node_of);
    cg_hstr_init(&s.by_id, 0);
    cg_jv_each(spans, scan_node, &s);
    resolve_later(&s);
    select_nodes(&s, n, VIEW_MAX_NODES, keep);
    cg_hstr_free(&s.by_id); /* parents are indices now */
    node_emit ne = {a, spans && spans->type == CG_JLAZY, keep, node_of, cg_jv_arr(a), cg_jv_arr(a), 0};
    cg_jv_each(spans, emit_node, &ne);
    *nodes = ne.nodes;
    *tree = ne.tree;
    *items = cg_jv_arr(a);
    for (size_t r = 0; r < n; r++)
        if (keep[s.refs[r].index]) cg_jv_arr_push(a, *items, node_of[s.refs[r].index]);
    /* edges: endpoints looked up among the kept nodes only */
    cg_hstr kept_ids;
    cg_hstr_init(&kept_ids, 0);
    for (size_t r = 0; r < n; r++)
        if (keep[s.refs[r].index]) cg_hstr_put(&kept_ids, s.refs[r].id, s.refs[r].index, NULL);
    edge_emit ee = {a, edges && edges->type == CG_JLAZY, keep, &kept_ids, cg_jv_arr(a)};
    cg_jv_each(edges, emit_edge, &ee);
    *tedges = ee.out;
    const char *order = "heaviest by host total time, with their ancestors";
    note_cut(a, trunc, "views.trace.nodes", n, ne.kept, order);
    note_cut(a, trunc, "views.span_costs.items", n, ne.kept, order);
    note_cut(a, trunc, "views.trace.edges", cg_jv_items(edges), cg_jv_len(*tedges), "between displayed nodes");
    free(s.refs);
    free(s.parent);
    free(s.later);
    free(node_of);
    free(keep);
    cg_hstr_free(&kept_ids);
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
