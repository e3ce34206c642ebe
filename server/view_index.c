/* view_index.c — the dashboard view index of a bundle (srv_views.h): built
 * once from the verified trace.jsonl and nsight/ files (cg_evidence_build,
 * the graph for complete valid captures), copied into compact rows, and kept
 * in a small LRU cache that lives in the server (srv_server.views), with one
 * build per bundle at a time. */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "analysis/evidence.h"
#include "analysis/graph.h"
#include "base/num.h"
#include "base/fs.h"
#include "base/hmap.h"
#include "srv_cache.h"
#include "srv_derived.h"
#include "srv_timeline.h"
#include "srv_store.h"
#include "srv_views.h"
#include "trace/trace.h"

#define JSON_CAP 200   /* items kept of any list of a JSON section */
#define PEAK_CAP 100   /* live allocations kept of the memory peak */

const char *const srv_vw_gpu_table_names[SRV_VW_GPU_TABLES] = {
    "kernels", "runtime_calls", "memory_operations", "nvtx_ranges", "gpu_timeline", "device_clocks", "device_spans",
};
const char *const srv_vw_span_cols[] = {"id",      "name",    "kind",  "step", "start_ns", "duration_ns",
                                        "self_ns", "total_ns", "depth", "ops",  NULL};
const char *const srv_vw_op_cols[] = {"name", "span_id", "device", "dtype", "timestamp_ns", "duration_ns",
                                      "output_bytes", NULL};
const char *const srv_vw_cost_cols[] = {"name", "kind", "count", "self_ns", "total_ns", "max_ns", NULL};

static void free_item(srv_cache_item *it);

struct srv_views {
    srv_cache cache; /* of srv_vw_index (item first) */
};

static struct srv_views *views_of(srv_server *s) {
    struct srv_views *V = atomic_load(&s->views);
    if (V) return V;
    struct srv_views *n = cg_xzalloc(1, sizeof *n);
    srv_cache_init(&n->cache, SRV_VIEWS_CACHE_SLOTS, SRV_VIEWS_CACHE_BYTES, free_item);
    if (atomic_compare_exchange_strong(&s->views, &V, n)) return n;
    srv_cache_destroy(&n->cache);
    cg_free(n);
    return V;
}

srv_vw_index *srv_vw_new(const char *id) {
    srv_vw_index *x = cg_xzalloc(1, sizeof *x);
    snprintf(x->item.id, sizeof x->item.id, "%s", id);
    cg_arena_init(&x->arena, 0);
    pthread_mutex_init(&x->order_mu, NULL);
    return x;
}

void srv_vw_free(srv_vw_index *x) {
    if (!x) return;
    cg_free(x->spans);
    cg_free(x->ops);
    cg_free(x->costs);
    cg_free(x->span_times);
    cg_free(x->mem_ts);
    cg_free(x->mem_live);
    for (int t = 0; t < SRV_VW_GPU_TABLES; t++) cg_free(x->gpu[t].rows);
    for (int t = 0; t < SRV_VW_SORTABLE; t++)
        for (int c = 0; c < SRV_VW_MAX_COLS; c++) cg_free(x->order[t][c]);
    pthread_mutex_destroy(&x->order_mu);
    cg_arena_free(&x->arena);
    cg_free(x);
}

/* ---------------------------------------------------------------- copying */

typedef struct builder {
    srv_vw_index *x;
    cg_hstr names; /* arena copy → itself (interned strings) */
} builder;

static const char *intern(builder *b, const char *s) {
    if (!s) return NULL;
    size_t *v = cg_hstr_get(&b->names, s);
    if (v) return (const char *)(uintptr_t)*v;
    char *cp = cg_arena_strdup(&b->x->arena, s);
    cg_hstr_put(&b->names, cp, (size_t)(uintptr_t)cp, NULL);
    return cp;
}

/* A copy of v in arena a where every list longer than cap keeps its first cap
 * items; each cut is noted in trunc under its dotted path {total, displayed,
 * truncated}. Lazy lists produce only the items kept. */
static cg_jv *clone_cap(cg_arena *a, const cg_jv *v, size_t cap, const char *path, cg_jv *trunc) {
    if (!v) return cg_jv_null(a);
    if (v->type == CG_JLAZY || v->type == CG_JARR) {
        size_t n = v->type == CG_JLAZY ? v->u.lazy.n : v->u.arr.n, keep = n < cap ? n : cap;
        cg_jv *o = cg_jv_arr(a);
        cg_arena scratch;
        cg_arena_init(&scratch, 0);
        for (size_t i = 0; i < keep; i++) {
            const cg_jv *it = v->type == CG_JLAZY ? v->u.lazy.item(&scratch, v->u.lazy.ctx, i) : v->u.arr.items[i];
            cg_jv_arr_push(a, o, clone_cap(a, it, cap, path, trunc));
            cg_arena_reset(&scratch);
        }
        cg_arena_free(&scratch);
        if (keep < n) {
            cg_jv *t = cg_jv_obj(a);
            cg_jv_obj_put(a, t, "total", cg_jv_u64(a, n));
            cg_jv_obj_put(a, t, "displayed", cg_jv_u64(a, keep));
            cg_jv_obj_put(a, t, "truncated", cg_jv_bool(a, true));
            cg_jv_obj_put(a, trunc, cg_arena_strdup(a, path), t);
        }
        return o;
    }
    if (v->type == CG_JOBJ) {
        cg_jv *o = cg_jv_obj(a);
        for (size_t i = 0; i < v->u.obj.n; i++) {
            const cg_jmember *m = &v->u.obj.m[i];
            char *k = cg_arena_strndup(a, m->key, m->key_len);
            char *sub = cg_arena_printf(a, "%s%s%s", path, *path ? "." : "", k);
            cg_jv_obj_put(a, o, k, clone_cap(a, m->val, cap, sub, trunc));
        }
        return o;
    }
    return cg_jv_clone(a, v);
}

/* Picks the members keys of src into a fresh object (capped). */
static cg_jv *pick(cg_arena *a, const cg_jv *src, const char *const *keys, const char *prefix, size_t cap, cg_jv *trunc) {
    cg_jv *o = cg_jv_obj(a);
    for (size_t i = 0; keys[i]; i++) {
        const cg_jv *v = cg_jv_get(src, keys[i]);
        if (!v) continue;
        char *path = cg_arena_printf(a, "%s%s%s", prefix, *prefix ? "." : "", keys[i]);
        cg_jv_obj_put(a, o, keys[i], clone_cap(a, v, cap, path, trunc));
    }
    return o;
}

/* The graph's host self and total time of each span (its span nodes are the
 * trace's spans, in its order), kept until the span rows are copied. */
static void keep_span_times(srv_vw_index *x, const cg_graph *g) {
    x->n_span_times = g ? g->n_span_nodes : 0;
    if (!g) return;
    x->span_times = cg_xalloc(2 * (g->n_span_nodes + 1), sizeof *x->span_times);
    for (size_t i = 0; i < g->n_span_nodes; i++) {
        cg_graph_node n;
        cg_graph_node_view(g, i, NULL, &n);
        x->span_times[2 * i] = n.host_self_time_ns;
        x->span_times[2 * i + 1] = n.host_total_time_ns;
    }
}

static void copy_spans(builder *b, const cg_trace *t) {
    srv_vw_index *x = b->x;
    x->n_spans = t->n_spans;
    x->spans = cg_xalloc(t->n_spans, sizeof *x->spans);
    int *depth = srv_tl_span_depths(t);
    for (size_t i = 0; i < t->n_spans; i++) {
        const cg_span *s = &t->spans[i];
        x->spans[i] = (srv_vw_span){
            .id = cg_arena_strdup(&x->arena, s->id), .parent_id = s->parent_id ? cg_arena_strdup(&x->arena, s->parent_id) : NULL,
            .name = intern(b, s->name), .start_ns = s->start_ns, .duration_ns = s->duration_ns,
            .depth = depth[i] < 0 ? 0 : (uint32_t)depth[i], .kind = (uint8_t)s->kind, .step = (uint8_t)s->step,
            .closed = s->closed, .measured = s->measured};
    }
    cg_free(depth);
    for (size_t i = 0; i < t->n_ops; i++) {
        const cg_span *s = cg_trace_find_span(t, t->ops[i].span_id);
        if (s) x->spans[s - t->spans].ops++;
    }
    /* the graph's span nodes are the trace's spans, in its order */
    for (size_t i = 0; i < x->n_span_times && i < t->n_spans; i++) {
        srv_vw_span *r = &x->spans[i];
        r->self_ns = x->span_times[2 * i];
        r->total_ns = x->span_times[2 * i + 1];
        r->has_times = true;
    }
    cg_free(x->span_times);
    x->span_times = NULL;
}

static void copy_ops(builder *b, const cg_trace *t) {
    srv_vw_index *x = b->x;
    x->n_ops = t->n_ops;
    x->ops = cg_xalloc(t->n_ops, sizeof *x->ops);
    for (size_t i = 0; i < t->n_ops; i++) {
        const cg_op *o = &t->ops[i];
        x->ops[i] = (srv_vw_op){.span_id = intern(b, o->span_id), .name = intern(b, o->op_name),
                                .device = intern(b, o->device), .dtype = intern(b, o->dtype),
                                .timestamp_ns = o->timestamp_ns, .duration_ns = o->duration_ns,
                                .output_bytes = o->output_dense_bytes, .has_output_bytes = o->has_output_dense_bytes};
    }
}

/* ---------------------------------------------------------------- span costs */

/* Costs are aggregated as they come, one entry per (kind, name) found through
 * a table keyed by the two interned pointers (equal texts are one pointer),
 * then sorted: no array of every span and op node. */
typedef struct cost_acc {
    srv_vw_index *x;
    cg_hmap by_key;
    size_t cap;
} cost_acc;

static bool cost_eq(const void *ctx, uint32_t id, const void *key) {
    const srv_vw_cost *c = &((const srv_vw_index *)ctx)->costs[id], *k = key;
    return c->kind == k->kind && c->name == k->name;
}

static void add_cost(cost_acc *ca, const char *kind, const char *name, uint64_t self, uint64_t total, bool has_self) {
    srv_vw_index *x = ca->x;
    srv_vw_cost key = {.name = name, .kind = kind};
    uint64_t h = cg_hmap_mix(cg_hmap_mix(0, (uint64_t)(uintptr_t)kind), (uint64_t)(uintptr_t)name);
    size_t at = 0;
    uint32_t id = cg_hmap_find(&ca->by_key, h, cost_eq, x, &key, &at);
    if (id == CG_HMAP_NONE) {
        if (x->n_costs == ca->cap) {
            ca->cap = ca->cap ? 2 * ca->cap : 256;
            x->costs = cg_xrealloc(x->costs, ca->cap, sizeof *x->costs);
        }
        id = (uint32_t)x->n_costs++;
        x->costs[id] = (srv_vw_cost){.name = name, .kind = kind, .has_self = has_self};
        cg_hmap_put_at(&ca->by_key, at, h, id);
    }
    srv_vw_cost *c = &x->costs[id];
    c->count++;
    c->self_ns = cg_sat_add_u64(c->self_ns, self);
    c->total_ns = cg_sat_add_u64(c->total_ns, total);
    if (total > c->max_total_ns) c->max_total_ns = total;
}

static int cmp_cost(const void *pa, const void *pb) {
    const srv_vw_cost *a = pa, *b = pb;
    int c = strcmp(a->kind, b->kind);
    return c ? c : strcmp(a->name, b->name);
}

static void build_costs(builder *b, const cg_trace *t, const cg_graph *g) {
    cost_acc ca = {b->x, {0}, 0};
    cg_hmap_init(&ca.by_key, 0);
    if (g) {
        for (size_t i = 0; i < g->n_span_nodes + g->n_op_nodes; i++) { /* tensor nodes have no cost */
            cg_graph_node v;
            cg_graph_node_view(g, i, NULL, &v);
            add_cost(&ca, intern(b, cg_node_kind_name(v.kind)), intern(b, v.name), v.host_self_time_ns,
                     v.host_total_time_ns, true);
        }
    } else {
        for (size_t i = 0; i < t->n_spans; i++)
            if (t->spans[i].closed)
                add_cost(&ca, intern(b, cg_span_kind_name(t->spans[i].kind)), intern(b, t->spans[i].name), 0,
                         t->spans[i].duration_ns, false);
        for (size_t i = 0; i < t->n_ops; i++)
            add_cost(&ca, intern(b, "op"), intern(b, t->ops[i].op_name), 0, t->ops[i].duration_ns, false);
    }
    cg_hmap_free(&ca.by_key);
    if (b->x->n_costs) qsort(b->x->costs, b->x->n_costs, sizeof *b->x->costs, cmp_cost);
}

/* ---------------------------------------------------------------- GPU tables */

static void copy_summary(builder *b, srv_vw_table *dst, const cg_nsight_summary_table *src) {
    dst->n = src->n;
    dst->rows = cg_xalloc(src->n, sizeof *dst->rows);
    for (size_t i = 0; i < src->n; i++) {
        const cg_nsight_summary_row *r = &src->rows[i];
        dst->rows[i] = (srv_vw_gpu_row){.name = intern(b, r->name), .category = intern(b, r->category),
                                        .total_ns = r->total_ns, .count = r->count, .average_ns = r->average_ns,
                                        .minimum_ns = r->minimum_ns, .maximum_ns = r->maximum_ns};
    }
}

static void copy_timeline(builder *b, srv_vw_table *dst, const cg_nsight_timeline_table *src) {
    dst->n = src->n;
    dst->rows = cg_xalloc(src->n, sizeof *dst->rows);
    for (size_t i = 0; i < src->n; i++) {
        const cg_nsight_timeline_row *r = &src->rows[i];
        dst->rows[i] = (srv_vw_gpu_row){.name = intern(b, r->name), .kind = r->is_nvtx ? "nvtx_range" : "gpu_operation",
                                        .device = intern(b, r->device), .context = intern(b, r->context),
                                        .stream = intern(b, r->stream), .correlation_id = intern(b, r->correlation_id),
                                        .start_ns = r->start_ns, .duration_ns = r->duration_ns};
    }
}

static void copy_gpu(builder *b, const cg_evidence *e) {
    srv_vw_index *x = b->x;
    copy_summary(b, &x->gpu[SRV_VW_KERNELS], &e->gpu->kernels);
    copy_summary(b, &x->gpu[SRV_VW_RUNTIME_CALLS], &e->gpu->runtime_calls);
    copy_summary(b, &x->gpu[SRV_VW_MEMORY_OPERATIONS], &e->gpu->memory_operations);
    copy_timeline(b, &x->gpu[SRV_VW_NVTX_RANGES], &e->gpu->nvtx_ranges);
    copy_timeline(b, &x->gpu[SRV_VW_GPU_TIMELINE], &e->gpu->gpu_timeline);
    const cg_timing_profile *tp = e->timing;
    srv_vw_table *dc = &x->gpu[SRV_VW_DEVICE_CLOCKS], *ds = &x->gpu[SRV_VW_DEVICE_SPANS];
    dc->n = tp->n_device_clocks;
    dc->rows = cg_xalloc(dc->n, sizeof *dc->rows);
    for (size_t i = 0; i < dc->n; i++)
        dc->rows[i] = (srv_vw_gpu_row){.device = intern(b, tp->device_clocks[i].device),
                                       .clock_id = intern(b, tp->device_clocks[i].clock_id),
                                       .count = tp->device_clocks[i].interval_count, .total_ns = tp->device_clocks[i].busy_ns};
    ds->n = tp->n_device_spans;
    ds->rows = cg_xalloc(ds->n, sizeof *ds->rows);
    for (size_t i = 0; i < ds->n; i++) {
        const cg_device_span_timing *d = &tp->device_spans[i];
        const cg_span *sp = cg_trace_find_span(e->trace, d->span_id);
        ds->rows[i] = (srv_vw_gpu_row){.name = intern(b, d->span_id), .category = sp ? intern(b, sp->name) : NULL,
                                       .device = intern(b, d->device), .clock_id = intern(b, d->clock_id),
                                       .count = d->interval_count, .total_ns = d->busy_ns};
    }
}

/* ---------------------------------------------------------------- JSON sections */

static void build_sections(builder *b, const cg_evidence *e, cg_arena *tmp) {
    srv_vw_index *x = b->x;
    cg_arena *a = &x->arena;
    cg_jv *packet = cg_evidence_to_json_lazy(tmp, e);
    static const char *const ev_keys[] = {"provenance", "health", "capabilities", "findings", "facts", "gaps", NULL};
    cg_jv *trunc = cg_jv_obj(a);
    x->evidence = pick(a, packet, ev_keys, "", JSON_CAP, trunc);
    cg_jv_obj_put(a, x->evidence, "truncation", trunc);

    const cg_jv *mem = cg_jv_get(packet, "memory");
    cg_jv *mtrunc = cg_jv_obj(a);
    x->memory = cg_jv_obj(a);
    const cg_jv *lg = cg_jv_get(mem, "logical"), *ph = cg_jv_get(mem, "physical");
    static const char *const lg_keys[] = {"storage_allocation_count", "matched_storage_free_count",
                                          "total_allocated_bytes", "by_device", NULL};
    static const char *const ph_keys[] = {"by_device", NULL};
    cg_jv *lo = lg ? pick(a, lg, lg_keys, "logical", JSON_CAP, mtrunc) : cg_jv_null(a);
    if (lg && cg_jv_get(lg, "peak"))
        cg_jv_obj_put(a, lo, "peak", clone_cap(a, cg_jv_get(lg, "peak"), PEAK_CAP, "logical.peak", mtrunc));
    cg_jv_obj_put(a, x->memory, "logical", lo);
    cg_jv_obj_put(a, x->memory, "physical", ph ? pick(a, ph, ph_keys, "physical", JSON_CAP, mtrunc) : cg_jv_null(a));
    cg_jv_obj_put(a, x->memory, "truncation", mtrunc);

    const cg_jv *gpu = cg_jv_get(packet, "gpu");
    static const char *const gpu_keys[] = {"status", "reason", "raw_report", "source_csv", "provenance", "coverage",
                                           "correlation", "diagnostics", "limits", "phase_attribution", NULL};
    cg_jv *gtrunc = cg_jv_obj(a);
    x->gpu_summary = pick(a, gpu, gpu_keys, "", JSON_CAP, gtrunc);
    cg_jv_obj_put(a, x->gpu_summary, "device_coverage", cg_jv_str(a, cg_coverage_name(e->timing->device_coverage)));
    cg_jv_obj_put(a, x->gpu_summary, "truncation", gtrunc);

    const cg_logical_memory *l = e->memory->logical;
    x->n_mem = l ? l->n_timeline : 0;
    x->mem_ts = cg_xalloc(x->n_mem, sizeof *x->mem_ts);
    x->mem_live = cg_xalloc(x->n_mem, sizeof *x->mem_live);
    for (size_t i = 0; i < x->n_mem; i++) {
        x->mem_ts[i] = l->timeline[i].timestamp_ns;
        x->mem_live[i] = l->timeline[i].live_bytes;
    }
}

srv_vw_index *srv_views_build_evidence(const char *id, const cg_trace *t, const cg_evidence *e) {
    srv_vw_index *x = srv_vw_new(id);
    builder b = {.x = x};
    cg_hstr_init(&b.names, 0);
    cg_arena tmp;
    cg_arena_init(&tmp, 1 << 20);
    const cg_graph *g = e->graph_model; /* the evidence's own graph: never built twice */
    x->complete = e->health->capture_complete;
    x->valid = e->health->structurally_valid;
    keep_span_times(x, g);
    build_costs(&b, t, g);
    copy_gpu(&b, e);
    build_sections(&b, e, &tmp);
    cg_arena_free(&tmp);
    cg_hstr_free(&b.names);
    return x;
}

void srv_views_finish(srv_vw_index *x, const cg_trace *t) {
    builder b = {.x = x};
    cg_hstr_init(&b.names, 0);
    copy_spans(&b, t);
    copy_ops(&b, t);
    cg_hstr_free(&b.names);
}

/* Builds the index from a parsed trace and the evidence rederived from it. */
static srv_vw_index *index_from(const char *id, const cg_trace *t, const cg_evidence *e) {
    srv_vw_index *x = srv_views_build_evidence(id, t, e);
    srv_views_finish(x, t);
    return x;
}

srv_vw_index *srv_views_build(const char *id, const cg_trace *t, const cg_evidence *e, const char *nsdir,
                              cg_error *err) {
    if (e) return index_from(id, t, e);
    cg_arena tmp;
    cg_arena_init(&tmp, 1 << 20);
    cg_evidence *own = cg_evidence_build_as(&tmp, t, nsdir, nsdir ? "nsight" : NULL, err);
    srv_vw_index *x = own ? index_from(id, t, own) : NULL;
    if (own) cg_evidence_free(own);
    cg_arena_free(&tmp);
    return x;
}

/* Approximate heap bytes of an index: rows, sort orders, strings, memory points. */
static uint64_t index_bytes(const srv_vw_index *x) {
    uint64_t b = x->n_spans * (sizeof *x->spans + 4 * sizeof(uint32_t)) + x->n_ops * (sizeof *x->ops + sizeof(uint32_t)) +
                 x->n_costs * (sizeof *x->costs + sizeof(uint32_t)) + x->n_mem * 2 * sizeof(uint64_t);
    for (size_t i = 0; i < x->n_spans; i++) b += strlen(x->spans[i].id) + 1 + (x->spans[i].parent_id ? strlen(x->spans[i].parent_id) + 1 : 0);
    for (int t = 0; t < SRV_VW_GPU_TABLES; t++) b += x->gpu[t].n * sizeof *x->gpu[t].rows;
    return b + (1u << 20); /* interned names and JSON sections: small beside the rows */
}

/* The orders the tabs open with: spans by start and by total time, ops by time, costs by total. */
static void first_orders(srv_vw_index *x) {
    srv_views_order(x, SRV_VW_SPANS, 4);
    srv_views_order(x, SRV_VW_SPANS, 7);
    srv_views_order(x, SRV_VW_OPS, 4);
    srv_views_order(x, SRV_VW_COSTS, 4);
}

/* ---------------------------------------------------------------- loading */

/* The index of bundle id: its on-disk copy when it reads back, else built from
 * the verified files (and saved). */
static srv_vw_index *build_from_store(srv_server *s, const char *id, cg_error *err);

static void index_paths(const srv_server *s, const char *id, char *dir, size_t dl, char *path, size_t pl) {
    snprintf(dir, dl, "%s/views", s->cfg.data_dir);
    snprintf(path, pl, "%s/%s.idx", dir, id);
}

static srv_vw_index *load_index(srv_server *s, const char *id, cg_error *err) {
    char dir[PATH_MAX + 16], path[PATH_MAX + 96];
    index_paths(s, id, dir, sizeof dir, path, sizeof path);
    srv_vw_index *x = srv_vw_load(id, path);
    if (x) {
        srv_log("info", "view index loaded", "id", id, NULL);
    } else {
        x = build_from_store(s, id, err);
        cg_error serr = {0};
        if (x && (cg_mkdir_p(dir, &serr) < 0 || srv_vw_save(x, path, &serr) < 0))
            srv_log("warning", "view index not saved", "id", id, "error", serr.msg, NULL);
    }
    if (!x) return NULL;
    first_orders(x);
    x->item.bytes = index_bytes(x);
    return x;
}

static void log_built(const srv_vw_index *x) {
    char spans[32], ops[32];
    snprintf(spans, sizeof spans, "%zu", x->n_spans);
    snprintf(ops, sizeof ops, "%zu", x->n_ops);
    srv_log("info", "view index built", "id", x->item.id, "spans", spans, "ops", ops, NULL);
}

void srv_views_keep(srv_server *s, srv_vw_index *x) {
    char dir[PATH_MAX + 16], path[PATH_MAX + 96];
    index_paths(s, x->item.id, dir, sizeof dir, path, sizeof path);
    cg_error serr = {0};
    if (cg_mkdir_p(dir, &serr) < 0 || srv_vw_save(x, path, &serr) < 0)
        srv_log("warning", "view index not saved", "id", x->item.id, "error", serr.msg, NULL);
    else
        log_built(x);
    srv_vw_free(x);
}

/* Reads the verified files of bundle id (the trace streamed from its blob) and
 * builds its index. NULL with err and its reason: none (the store is
 * unreachable), not_found, payload_too_large (limit max_decoded_bytes),
 * internal (staging or a stored blob failed), or the trace's own
 * (trace_invalid). */
static srv_vw_index *build_from_store(srv_server *s, const char *id, cg_error *err) {
    char hex[65];
    uint64_t bytes = 0;
    int found = srv_store_file_ref(s->pool, id, "trace.jsonl", hex, &bytes, err);
    if (found <= 0) {
        if (found == 0) cg_err_setr(err, CG_R_NOT_FOUND, CG_EIO, "bundle %s has no trace.jsonl", id);
        return NULL;
    }
    if (bytes > s->cfg.max_decoded_bytes) {
        cg_err_setr(err, CG_R_PAYLOAD_TOO_LARGE, CG_ELIMIT,
                    "the trace of bundle %s is larger than the server's decoded limit", id);
        err->limit = "max_decoded_bytes";
        return NULL;
    }
    char stage[PATH_MAX + 64], ns[PATH_MAX + 80];
    snprintf(stage, sizeof stage, "%s/staging", s->cfg.data_dir);
    size_t n_ns = 0;
    bool staged = cg_mkdir_p(stage, err) == 0;
    if (staged) {
        snprintf(stage, sizeof stage, "%s/staging/views-XXXXXX", s->cfg.data_dir);
        staged = mkdtemp(stage) != NULL;
    }
    snprintf(ns, sizeof ns, "%s/nsight", stage);
    if (!staged || srv_store_place_files(s, id, "nsight/", stage, &n_ns, err) < 0) {
        if (staged) cg_rm_rf(stage);
        if (!err->msg[0]) cg_err_set(err, CG_EIO, "cannot stage the nsight files of bundle %s", id);
        cg_err_reason(err, CG_R_INTERNAL);
        return NULL;
    }
    uint64_t size;
    bool missing, store_error = true;
    int heavy = srv_heavy_enter(bytes, 0); /* a large build runs alone (srv_derived.h) */
    int fd = srv_store_blob_open(s, hex, &size, &missing, err);
    cg_trace *t = fd < 0 ? NULL : srv_blob_trace_fd(&s->blobs, fd, hex, s->cfg.max_decoded_bytes, NULL, &store_error, err);
    srv_vw_index *x = t ? srv_views_build(id, t, NULL, n_ns ? ns : NULL, err) : NULL;
    /* a stored blob that does not read is damage inside our store; else the
     * reader set the trace's reason (an evidence build failure is the trace's) */
    if (!x && !t && store_error) cg_err_reason(err, CG_R_INTERNAL);
    else if (!x && !err->reason) cg_err_reason(err, CG_R_TRACE_INVALID);
    if (t) cg_trace_free(t);
    if (heavy) srv_memory_trim();
    srv_heavy_leave(heavy);
    cg_rm_rf(stage);
    if (x) log_built(x);
    return x;
}

/* ---------------------------------------------------------------- cache */

static void free_item(srv_cache_item *it) { srv_vw_free((srv_vw_index *)it); }

typedef struct build_ctx {
    srv_server *s;
    cg_error *err;
} build_ctx;

static srv_cache_item *build_item(void *ctx, const char *id) {
    build_ctx *b = ctx;
    srv_vw_index *x = load_index(b->s, id, b->err);
    return x ? &x->item : NULL;
}

srv_vw_index *srv_views_acquire(srv_server *s, const char *id, cg_error *err) {
    build_ctx b = {s, err};
    return (srv_vw_index *)srv_cache_acquire(&views_of(s)->cache, id, build_item, &b);
}

void srv_views_release(srv_server *s, srv_vw_index *x) { srv_cache_release(&views_of(s)->cache, &x->item); }

void srv_views_warm(srv_server *s, const char *id) {
    srv_memory_trim(); /* the Timeline build before this one freed its trace in this thread */
    cg_error err = {0};
    srv_vw_index *x = srv_views_acquire(s, id, &err);
    if (x) srv_views_release(s, x);
    else srv_log("warning", "view index not built", "id", id, "error", err.msg, NULL);
}

void srv_views_stop(srv_server *s) {
    struct srv_views *V = atomic_load(&s->views);
    if (!V) return;
    atomic_store(&s->views, NULL);
    srv_cache_destroy(&V->cache);
    cg_free(V);
}

/* ---------------------------------------------------------------- sort orders */

typedef struct key_num { uint64_t k; uint32_t i; } key_num;
typedef struct key_str { const char *k; uint32_t i; } key_str;
static int cmp_num(const void *pa, const void *pb) {
    const key_num *a = pa, *b = pb;
    if (a->k != b->k) return a->k < b->k ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}
static int cmp_strk(const void *pa, const void *pb) {
    const key_str *a = pa, *b = pb;
    int c = strcmp(a->k ? a->k : "", b->k ? b->k : "");
    if (c) return c;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* The string key of row i (NULL when the column is numeric). */
static const char *str_key(const srv_vw_index *x, int table, int col, size_t i, uint64_t *num) {
    if (table == SRV_VW_SPANS) {
        const srv_vw_span *s = &x->spans[i];
        uint64_t v[] = {0, 0, 0, 0, s->start_ns, s->duration_ns, s->self_ns, s->total_ns, s->depth, s->ops};
        *num = v[col];
        if (col == 0) return s->id;
        if (col == 1) return s->name;
        if (col == 2) return cg_span_kind_name((cg_span_kind)s->kind);
        if (col == 3) return s->step ? cg_step_name((cg_step)s->step) : "";
        return NULL;
    }
    if (table == SRV_VW_COSTS) {
        const srv_vw_cost *c = &x->costs[i];
        uint64_t v[] = {0, 0, c->count, c->self_ns, c->total_ns, c->max_total_ns};
        *num = v[col];
        return col == 0 ? c->name : col == 1 ? c->kind : NULL;
    }
    const srv_vw_op *o = &x->ops[i];
    uint64_t v[] = {0, 0, 0, 0, o->timestamp_ns, o->duration_ns, o->output_bytes};
    *num = v[col];
    const char *s[] = {o->name, o->span_id, o->device, o->dtype};
    return col < 4 ? (s[col] ? s[col] : "") : NULL;
}

const uint32_t *srv_views_order(srv_vw_index *x, int table, int col) {
    pthread_mutex_lock(&x->order_mu);
    uint32_t *o = x->order[table][col];
    if (!o) {
        size_t n = table == SRV_VW_SPANS ? x->n_spans : table == SRV_VW_OPS ? x->n_ops : x->n_costs;
        o = cg_xalloc(n, sizeof *o);
        uint64_t num = 0;
        if (col < (table == SRV_VW_COSTS ? 2 : 4)) { /* the string columns come first */
            key_str *k = cg_xalloc(n, sizeof *k);
            for (size_t i = 0; i < n; i++) k[i] = (key_str){str_key(x, table, col, i, &num), (uint32_t)i};
            qsort(k, n, sizeof *k, cmp_strk);
            for (size_t i = 0; i < n; i++) o[i] = k[i].i;
            cg_free(k);
        } else {
            key_num *k = cg_xalloc(n, sizeof *k);
            for (size_t i = 0; i < n; i++) {
                str_key(x, table, col, i, &num);
                k[i] = (key_num){num, (uint32_t)i};
            }
            qsort(k, n, sizeof *k, cmp_num);
            for (size_t i = 0; i < n; i++) o[i] = k[i].i;
            cg_free(k);
        }
        x->order[table][col] = o;
    }
    pthread_mutex_unlock(&x->order_mu);
    return o;
}
