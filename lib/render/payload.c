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

#define NO_PARENT UINT32_MAX
#define PARENT_LATER (UINT32_MAX - 1) /* named before its node was seen: resolved after the walk */

/* A node that may be a parent (every kind but tensor; parents are spans in
 * graph/5): its id (copied), host total, graph index and parent record. Node
 * ids are unique (the builder refuses duplicates); with repeated ids the first
 * record keeps the id, as a map's first insertion would. */
typedef struct prec {
    const char *id;
    uint64_t total;
    size_t node;
    uint32_t parent; /* record index, NO_PARENT or PARENT_LATER */
} prec;

/* One of the VIEW_MAX_NODES heaviest nodes seen so far (ids copied with malloc). */
typedef struct heavy {
    uint64_t total;
    char *id, *parent_id; /* parent_id: NULL when the node names no parent */
    size_t node;
} heavy;

typedef struct later_ref {
    uint32_t rec;
    const char *parent;
} later_ref;

/* What node selection needs, read in one walk over the spans list (the list
 * may be lazy): the parent-capable nodes with their parents, and a bounded
 * heap (worst on top) of the heaviest nodes by (host total desc, id asc). A
 * parent already seen is kept as its index; the few named before their node
 * (span ids sort as strings) are copied and resolved after the walk. */
typedef struct node_scan {
    str_pool pool;
    prec *recs;
    size_t n_recs, cap_recs;
    cg_hmap by_id; /* id -> record */
    later_ref *later;
    size_t n_later, cap_later;
    heavy *heap;
    size_t n_heap;
} node_scan;

static uint64_t id_hash(const char *s) { return cg_hmap_mix(cg_hmap_hash_bytes(0, s, strlen(s)), 0); }
static bool rec_eq(const void *ctx, uint32_t id, const void *key) {
    return strcmp(((const prec *)ctx)[id].id, key) == 0;
}
static uint32_t rec_of(const node_scan *s, const char *id) {
    return cg_hmap_find(&s->by_id, id_hash(id), rec_eq, s->recs, id, NULL);
}

/* heavier: larger total, then smaller id */
static bool heavier(uint64_t ta, const char *ia, uint64_t tb, const char *ib) {
    return ta != tb ? ta > tb : strcmp(ia, ib) < 0;
}

static void heap_sift_down(heavy *h, size_t n, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, w = i; /* w: the lighter of i and its children */
        if (l < n && heavier(h[w].total, h[w].id, h[l].total, h[l].id)) w = l;
        if (r < n && heavier(h[w].total, h[w].id, h[r].total, h[r].id)) w = r;
        if (w == i) return;
        heavy x = h[i];
        h[i] = h[w];
        h[w] = x;
        i = w;
    }
}

static void heap_offer(node_scan *s, uint64_t total, const char *id, const char *parent, size_t node) {
    heavy *h = s->heap;
    if (s->n_heap == VIEW_MAX_NODES) {
        if (!heavier(total, id, h[0].total, h[0].id)) return;
        cg_free(h[0].id);
        cg_free(h[0].parent_id);
        h[0] = (heavy){total, cg_xstrdup(id), parent ? cg_xstrdup(parent) : NULL, node};
        heap_sift_down(h, s->n_heap, 0);
        return;
    }
    size_t i = s->n_heap++;
    h[i] = (heavy){total, cg_xstrdup(id), parent ? cg_xstrdup(parent) : NULL, node};
    while (i > 0 && heavier(h[(i - 1) / 2].total, h[(i - 1) / 2].id, h[i].total, h[i].id)) {
        heavy x = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = x;
        i = (i - 1) / 2;
    }
}

static int scan_node(void *ctx, size_t i, const cg_jv *n) {
    node_scan *s = ctx;
    const char *parent = cg_jv_as_str(cg_jv_get(n, "parent_id"));
    const char *id = str_or_empty(cg_jv_get(n, "id"));
    uint64_t total = u64_of(cg_jv_get(n, "host_total_time_ns"));
    heap_offer(s, total, id, parent, i);
    const char *kind = cg_jv_as_str(cg_jv_get(n, "kind"));
    if (kind && !strcmp(kind, "tensor")) return 0;
    uint32_t p = parent ? rec_of(s, parent) : NO_PARENT;
    if (parent && p == CG_HMAP_NONE) p = PARENT_LATER;
    if (s->n_recs == s->cap_recs) {
        s->cap_recs = s->cap_recs ? 2 * s->cap_recs : 1024;
        s->recs = cg_xrealloc(s->recs, s->cap_recs, sizeof *s->recs);
    }
    uint32_t r = (uint32_t)s->n_recs++;
    s->recs[r] = (prec){pool_dup(&s->pool, id), total, i, p};
    size_t at = 0;
    uint64_t h = id_hash(id);
    if (cg_hmap_find(&s->by_id, h, rec_eq, s->recs, id, &at) == CG_HMAP_NONE) cg_hmap_put_at(&s->by_id, at, h, r);
    if (p != PARENT_LATER) return 0;
    if (s->n_later == s->cap_later) {
        s->cap_later = s->cap_later ? 2 * s->cap_later : 64;
        s->later = cg_xrealloc(s->later, s->cap_later, sizeof *s->later);
    }
    s->later[s->n_later++] = (later_ref){r, pool_dup(&s->pool, parent)};
    return 0;
}

static void resolve_later(node_scan *s) {
    for (size_t k = 0; k < s->n_later; k++) {
        uint32_t p = rec_of(s, s->later[k].parent);
        s->recs[s->later[k].rec].parent = p == CG_HMAP_NONE ? NO_PARENT : p;
    }
}

/* A kept node: its host total and id (for the heaviest-first order) and graph index. */
typedef struct kept_ref {
    uint64_t total;
    const char *id;
    size_t node, pos; /* pos: in the graph-order list of kept nodes */
} kept_ref;

static int cmp_kept_cost(const void *x, const void *y) {
    const kept_ref *p = x, *q = y;
    if (p->total != q->total) return p->total > q->total ? -1 : 1;
    return strcmp(p->id, q->id);
}

static int cmp_kept_node(const void *x, const void *y) {
    const kept_ref *p = x, *q = y;
    return p->node < q->node ? -1 : p->node > q->node;
}

/* Marks the heaviest nodes and the ancestors they need (each node is marked
 * once, so the ancestor walk is linear overall); returns the kept nodes. */
static kept_ref *select_nodes(node_scan *s, bool *keep, size_t *n_kept) {
    size_t cap = 0, n = 0;
    kept_ref *k = NULL;
    for (size_t h = 0; h < s->n_heap; h++) {
        const heavy *e = &s->heap[h];
        uint32_t r = NO_PARENT;
        if (e->parent_id) {
            r = rec_of(s, e->parent_id);
            if (r == CG_HMAP_NONE) r = NO_PARENT;
        }
        for (size_t node = e->node; !keep[node];) {
            keep[node] = true;
            if (n == cap) {
                cap = cap ? 2 * cap : 256;
                k = cg_xrealloc(k, cap, sizeof *k);
            }
            k[n++] = node == e->node ? (kept_ref){e->total, e->id, node, 0}
                                     : (kept_ref){s->recs[r].total, s->recs[r].id, node, 0};
            if (node != e->node) r = s->recs[r].parent;
            if (r == NO_PARENT) break;
            node = s->recs[r].node;
        }
    }
    *n_kept = n;
    return k;
}

/* Second walk over the spans: the trace nodes of the kept ones (graph order). */
typedef struct node_emit {
    cg_arena *a;
    bool lazy;
    const bool *keep;
    const kept_ref *by_node; /* the kept nodes by graph index */
    cg_jv **node_of;         /* aligned with by_node */
    size_t n_kept, next;
    cg_jv *nodes, *tree;
} node_emit;

static int emit_node(void *ctx, size_t i, const cg_jv *n) {
    node_emit *e = ctx;
    if (!e->keep[i]) return 0;
    while (e->next < e->n_kept && e->by_node[e->next].node < i) e->next++;
    cg_jv *t = trace_node(e->a, e->lazy ? cg_jv_clone(e->a, n) : n);
    e->node_of[e->next] = t;
    cg_jv_arr_push(e->a, e->nodes, t);
    const char *kind = cg_jv_as_str(cg_jv_get(t, "kind"));
    if (kind && strcmp(kind, "op") && strcmp(kind, "tensor")) cg_jv_arr_push(e->a, e->tree, t);
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

static void scan_free(node_scan *s) {
    for (size_t h = 0; h < s->n_heap; h++) {
        cg_free(s->heap[h].id);
        cg_free(s->heap[h].parent_id);
    }
    cg_free(s->heap);
    cg_free(s->recs);
    cg_free(s->later);
    cg_hmap_free(&s->by_id);
}

/* The graph views: trace nodes (graph order) and the span tree over the selected
 * nodes, edges between them, span costs heaviest first; each cut noted in trunc.
 * spans and edges may be lazy arrays: each is walked (not materialized). Memory:
 * a record per span and op node, one byte per node, the kept nodes. */
static void graph_views(cg_arena *a, cg_jv *spans, cg_jv *edges, cg_jv *trunc, cg_jv **nodes, cg_jv **tedges,
                        cg_jv **tree, cg_jv **items) {
    size_t n = cg_jv_items(spans), n_kept = 0;
    node_scan s = {{a, NULL, 0}, NULL, 0, 0, {0}, NULL, 0, 0, cg_xalloc(VIEW_MAX_NODES, sizeof(heavy)), 0};
    cg_hmap_init(&s.by_id, 1024);
    bool *keep = cg_xzalloc(n ? n : 1, sizeof *keep);
    cg_jv_each(spans, scan_node, &s);
    resolve_later(&s);
    kept_ref *k = select_nodes(&s, keep, &n_kept);
    cg_hmap_free(&s.by_id); /* parents are indices now */
    if (n_kept) qsort(k, n_kept, sizeof *k, cmp_kept_node);
    cg_jv **node_of = cg_xzalloc(n_kept ? n_kept : 1, sizeof *node_of);
    node_emit ne = {a, spans && spans->type == CG_JLAZY, keep, k, node_of, n_kept, 0, cg_jv_arr(a), cg_jv_arr(a)};
    cg_jv_each(spans, emit_node, &ne);
    *nodes = ne.nodes;
    *tree = ne.tree;
    for (size_t i = 0; i < n_kept; i++) k[i].pos = i;
    if (n_kept) qsort(k, n_kept, sizeof *k, cmp_kept_cost);
    *items = cg_jv_arr(a);
    cg_hstr kept_ids; /* edges: endpoints looked up among the kept nodes only */
    cg_hstr_init(&kept_ids, n_kept);
    for (size_t r = 0; r < n_kept; r++) {
        cg_jv_arr_push(a, *items, node_of[k[r].pos]);
        cg_hstr_put(&kept_ids, k[r].id, k[r].node, NULL);
    }
    edge_emit ee = {a, edges && edges->type == CG_JLAZY, keep, &kept_ids, cg_jv_arr(a)};
    cg_jv_each(edges, emit_edge, &ee);
    *tedges = ee.out;
    const char *order = "heaviest by host total time, with their ancestors";
    note_cut(a, trunc, "views.trace.nodes", n, n_kept, order);
    note_cut(a, trunc, "views.span_costs.items", n, n_kept, order);
    note_cut(a, trunc, "views.trace.edges", cg_jv_items(edges), cg_jv_len(*tedges), "between displayed nodes");
    scan_free(&s);
    cg_free(k);
    cg_free(node_of);
    cg_free(keep);
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
