/* candle-graph query — one typed view of raw-trace or verified-bundle evidence,
 * as the crate's candle-graph/trace-query/5 envelope: schema, tool, kind,
 * filter {label, label_prefix}, input, capabilities, result; keys sorted at
 * every level (the crate's `json!`).
 *
 * Results: slowest-host {entrypoint, outer_wall_time_ns, slowest_host_spans},
 * slowest-device {entrypoint, slowest_device_spans}, heaviest {entrypoint,
 * heaviest_spans, heaviest_ops (op nodes with known allocated bytes, top 50)},
 * spans {spans, edges} (every node), tensors and gradients (the graph's
 * lists), memory, tensor-stats and capabilities (the packet's), gpu-* (see
 * cli_gpu.h). A label filter (spans, tensors, tensor-stats, gradients) gives
 * the complete {total, matched, rows}; filtered spans add edges null and
 * edges_reason. The graph kinds fail with "query requires a complete,
 * structurally valid capture" when the packet has no graph. */
#include <stdlib.h>
#include <string.h>

#include "cli_evidence.h"
#include "cli_gpu.h"
#include "cli_util.h"

const char cg_cmd_query_help[] =
    "usage: candle-graph query INPUT --kind KIND [--label S | --label-prefix S] [-o FILE]\n"
    "Run a typed query against raw-trace or verified bundle evidence (candle-graph/trace-query/5).\n"
    "  --kind KIND        slowest-host, slowest-device, heaviest, memory, spans, tensors, tensor-stats,\n"
    "                     gradients, capabilities, gpu-status, gpu-correlation, gpu-phases, gpu-kernels,\n"
    "                     gpu-attribution-gaps\n"
    "  --label S          exact label filter (kinds: spans, tensors, tensor-stats, gradients)\n"
    "  --label-prefix S   label-prefix filter (kinds: spans, tensors, tensor-stats, gradients)\n"
    "  --nsight-dir DIR   nsys stats CSV directory for a raw trace (ours; rejected for bundles)\n"
    "  -o, --output F     write to F instead of stdout\n";

#define QUERY_SCHEMA "candle-graph/trace-query/5"
#define HEAVIEST_OPS 50

static const char *const kinds[] = {"slowest-host", "slowest-device", "heaviest",     "memory",
                                    "spans",        "tensors",        "tensor-stats", "gradients",
                                    "capabilities", "gpu-status",     "gpu-correlation", "gpu-phases",
                                    "gpu-kernels",  "gpu-attribution-gaps"};
static const char *const graph_kinds[] = {"slowest-host", "slowest-device", "heaviest", "spans", "tensors",
                                          "gradients"};

static bool in(const char *k, const char *const *set, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(k, set[i])) return true;
    return false;
}
#define IN(k, set) in(k, set, sizeof set / sizeof set[0])

typedef struct label_filter {
    const char *exact, *prefix; /* at most one set */
} label_filter;

static bool filter_matches(const label_filter *f, const char *value) {
    if (!value) return false;
    if (f->exact) return !strcmp(value, f->exact);
    return !strncmp(value, f->prefix, strlen(f->prefix));
}

static cg_jv *or_null(cg_arena *a, cg_jv *v) { return v ? v : cg_jv_null(a); }

/* the label a row is filtered by: tensors fall back to their tensor_id; a
 * gradient matches by key or by root/key */
static bool row_matches(cg_arena *a, const char *kind, cg_jv *row, const label_filter *f) {
    if (!strcmp(kind, "spans")) return filter_matches(f, cg_jv_as_str(cg_jv_get(row, "name")));
    if (!strcmp(kind, "tensor-stats")) return filter_matches(f, cg_jv_as_str(cg_jv_get(row, "label")));
    if (!strcmp(kind, "tensors")) {
        const char *label = cg_jv_as_str(cg_jv_get(row, "label"));
        return filter_matches(f, label ? label : cg_jv_as_str(cg_jv_get(row, "tensor_id")));
    }
    const char *root = cg_jv_as_str(cg_jv_get(row, "root")), *key = cg_jv_as_str(cg_jv_get(row, "key"));
    return filter_matches(f, key) ||
           filter_matches(f, cg_arena_printf(a, "%s/%s", root ? root : "", key ? key : ""));
}

/* The items of src at ascending indices ix, as an array or, for a lazy src, a
 * lazy array that walks src in order (its generators may keep running state). */
typedef struct subset {
    cg_jv *src;
    const size_t *ix;
    size_t n, next; /* next: src's index the walk has reached */
} subset;

static cg_jv *subset_item(cg_arena *a, void *ctx, size_t k) {
    subset *s = ctx;
    if (k == 0) s->next = 0;
    for (; s->next < s->ix[k]; s->next++) s->src->u.lazy.item(a, s->src->u.lazy.ctx, s->next);
    s->next++;
    return s->src->u.lazy.item(a, s->src->u.lazy.ctx, s->ix[k]);
}

static cg_jv *subset_of(cg_arena *a, cg_jv *src, const size_t *ix, size_t n) {
    if (src->type == CG_JLAZY) {
        subset *s = cg_arena_alloc(a, sizeof *s);
        *s = (subset){src, ix, n, 0};
        return cg_jv_lazy_arr(a, n, subset_item, s);
    }
    cg_jv *rows = cg_jv_arr(a);
    for (size_t i = 0; i < n; i++) cg_jv_arr_push(a, rows, src->u.arr.items[ix[i]]);
    return rows;
}

typedef struct match_ctx {
    const char *kind;
    const label_filter *f;
    cg_arena scratch; /* row_matches' joined labels, reset per row */
    size_t *ix, n;
} match_ctx;

static int match_item(void *ctx, size_t i, const cg_jv *row) {
    match_ctx *m = ctx;
    if (row_matches(&m->scratch, m->kind, (cg_jv *)row, m->f)) m->ix[m->n++] = i;
    cg_arena_reset(&m->scratch);
    return 0;
}

static cg_jv *filtered_result(cg_arena *a, const char *kind, cg_jv *p, const label_filter *f) {
    cg_jv *graph = cg_jv_get(p, "graph");
    cg_jv *src = !strcmp(kind, "tensor-stats") ? cg_jv_get(p, "tensor_stats")
                 : !strcmp(kind, "spans")      ? cg_jv_get(graph, "spans")
                 : !strcmp(kind, "tensors")    ? cg_jv_get(graph, "tensors")
                                               : cg_jv_get(graph, "gradients");
    size_t total = cg_jv_items(src);
    match_ctx m = {kind, f, {0}, cg_arena_alloc(a, sizeof *m.ix * (total ? total : 1)), 0};
    cg_arena_init(&m.scratch, 0);
    cg_jv_each(src, match_item, &m);
    cg_arena_free(&m.scratch);
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "total", cg_jv_u64(a, total));
    cg_jv_obj_put(a, o, "matched", cg_jv_u64(a, m.n));
    cg_jv_obj_put(a, o, "rows", m.n ? subset_of(a, src, m.ix, m.n) : cg_jv_arr(a));
    if (!strcmp(kind, "spans")) {
        cg_jv_obj_put(a, o, "edges", cg_jv_null(a));
        cg_jv_obj_put(a, o, "edges_reason",
                      cg_jv_str_nocopy(a, "edges are omitted for filtered span queries; run without a filter for the "
                                          "full span graph"));
    }
    return o;
}

typedef struct weighed {
    size_t at; /* index among the spans */
    uint64_t bytes;
    const cg_jv *id; /* a copy in the main arena */
} weighed;

static int id_cmp(const cg_jv *x, const cg_jv *y) {
    if (x && y && x->type == CG_JSTR && y->type == CG_JSTR) return strcmp(x->u.str.s, y->u.str.s);
    uint64_t l = 0, r = 0;
    cg_jv_as_u64(x, &l);
    cg_jv_as_u64(y, &r);
    return (l > r) - (l < r);
}

static int weighed_cmp(const void *l, const void *r) {
    const weighed *x = l, *y = r;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return id_cmp(x->id, y->id);
}

typedef struct weigh_ctx {
    cg_arena *main;
    weighed *w;
    size_t n;
} weigh_ctx;

static int weigh_item(void *ctx, size_t i, const cg_jv *node) {
    weigh_ctx *c = ctx;
    const char *kind = cg_jv_as_str(cg_jv_get(node, "kind"));
    uint64_t bytes = 0;
    if (kind && !strcmp(kind, "op") && cg_jv_as_u64(cg_jv_get(node, "allocated_bytes"), &bytes)) {
        const cg_jv *id = cg_jv_get(node, "id");
        c->w[c->n++] = (weighed){i, bytes, id ? cg_jv_clone(c->main, id) : NULL};
    }
    return 0;
}

static int at_cmp(const void *l, const void *r) {
    size_t x = *(const size_t *)l, y = *(const size_t *)r;
    return (x > y) - (x < y);
}

typedef struct pick_ctx {
    cg_arena *main;
    const size_t *at; /* ascending */
    size_t n, k;
    cg_jv **nodes;
} pick_ctx;

static int pick_item(void *ctx, size_t i, const cg_jv *node) {
    pick_ctx *c = ctx;
    if (c->k < c->n && c->at[c->k] == i) c->nodes[c->k++] = cg_jv_clone(c->main, node);
    return c->k == c->n; /* every pick made: stop */
}

/* op nodes whose allocated bytes are known, heaviest first (ties by id), top 50 */
static cg_jv *heaviest_ops(cg_arena *a, cg_jv *spans) {
    size_t n = cg_jv_items(spans);
    weigh_ctx wc = {a, cg_arena_alloc(a, sizeof *wc.w * (n ? n : 1)), 0};
    cg_jv_each(spans, weigh_item, &wc);
    qsort(wc.w, wc.n, sizeof *wc.w, weighed_cmp);
    size_t top = wc.n < HEAVIEST_OPS ? wc.n : HEAVIEST_OPS;
    size_t at[HEAVIEST_OPS];
    for (size_t i = 0; i < top; i++) at[i] = wc.w[i].at;
    qsort(at, top, sizeof *at, at_cmp);
    cg_jv *nodes[HEAVIEST_OPS];
    pick_ctx pc = {a, at, top, 0, nodes};
    if (top) cg_jv_each(spans, pick_item, &pc);
    cg_jv *out = cg_jv_arr(a);
    for (size_t i = 0; i < top; i++) { /* heaviest first: node of wc.w[i] */
        size_t lo = 0, hi = top;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (at[mid] < wc.w[i].at) lo = mid + 1;
            else hi = mid;
        }
        cg_jv_arr_push(a, out, nodes[lo]);
    }
    return out;
}

static cg_jv *graph_result(cg_arena *a, const char *kind, cg_jv *graph) {
    cg_jv *summary = cg_jv_get(graph, "summary"), *o = cg_jv_obj(a);
    if (!strcmp(kind, "tensors")) return or_null(a, cg_jv_get(graph, "tensors"));
    if (!strcmp(kind, "gradients")) return or_null(a, cg_jv_get(graph, "gradients"));
    if (!strcmp(kind, "spans")) {
        cg_jv_obj_put(a, o, "spans", or_null(a, cg_jv_get(graph, "spans")));
        cg_jv_obj_put(a, o, "edges", or_null(a, cg_jv_get(graph, "edges")));
        return o;
    }
    cg_jv_obj_put(a, o, "entrypoint", or_null(a, cg_jv_get(summary, "entrypoint")));
    if (!strcmp(kind, "slowest-host")) {
        cg_jv_obj_put(a, o, "outer_wall_time_ns", or_null(a, cg_jv_get(summary, "outer_wall_time_ns")));
        cg_jv_obj_put(a, o, "slowest_host_spans", or_null(a, cg_jv_get(summary, "slowest_host_spans")));
    } else if (!strcmp(kind, "slowest-device")) {
        cg_jv_obj_put(a, o, "slowest_device_spans", or_null(a, cg_jv_get(summary, "slowest_device_spans")));
    } else {
        cg_jv_obj_put(a, o, "heaviest_spans", or_null(a, cg_jv_get(summary, "heaviest_spans")));
        cg_jv_obj_put(a, o, "heaviest_ops", heaviest_ops(a, cg_jv_get(graph, "spans")));
    }
    return o;
}

static cg_jv *packet_result(cg_arena *a, const char *kind, cg_jv *p) {
    if (!strcmp(kind, "memory")) return or_null(a, cg_jv_get(p, "memory"));
    if (!strcmp(kind, "tensor-stats")) { /* omitted from evidence.json when empty; the crate reads [] */
        cg_jv *stats = cg_jv_get(p, "tensor_stats");
        return stats ? stats : cg_jv_arr(a);
    }
    if (!strcmp(kind, "capabilities")) return or_null(a, cg_jv_get(p, "capabilities"));
    if (!strcmp(kind, "gpu-status")) return cli_query_gpu_status(a, p);
    if (!strcmp(kind, "gpu-correlation")) return cli_query_gpu_correlation(a, p);
    if (!strcmp(kind, "gpu-phases")) return cli_query_gpu_phases(a, p);
    if (!strcmp(kind, "gpu-kernels")) return cli_query_gpu_kernels(a, p);
    return cli_query_gpu_attribution_gaps(a, p);
}

/* The result, or NULL after printing the crate's error (exit 1). */
static cg_jv *query_result(cg_arena *a, const char *kind, cg_jv *p, const label_filter *f) {
    bool filtered = f->exact || f->prefix;
    bool label_kind = !strcmp(kind, "spans") || !strcmp(kind, "tensors") || !strcmp(kind, "gradients");
    if (filtered && !label_kind && strcmp(kind, "tensor-stats") != 0) {
        cli_failf("query kind %s does not support label filtering", kind);
        return NULL;
    }
    cg_jv *graph = cg_jv_get(p, "graph");
    bool needs_graph = filtered ? label_kind : IN(kind, graph_kinds);
    if (needs_graph && (!graph || graph->type != CG_JOBJ)) {
        cli_failf("query requires a complete, structurally valid capture");
        return NULL;
    }
    if (filtered) return filtered_result(a, kind, p, f);
    return needs_graph ? graph_result(a, kind, graph) : packet_result(a, kind, p);
}

static cg_jv *filter_json(cg_arena *a, const label_filter *f) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "label", f->exact ? cg_jv_str(a, f->exact) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "label_prefix", f->prefix ? cg_jv_str(a, f->prefix) : cg_jv_null(a));
    return o;
}

static int run_query(const cli_evidence_args *ea, const char *kind, const label_filter *f) {
    cli_evidence ev;
    int rc = cli_evidence_open(ea, true, &ev); /* lazy: lists stream as they are written */
    if (rc == 0) {
        cg_arena *a = &ev.arena;
        cg_jv *result = query_result(a, kind, ev.l.packet, f);
        if (!result) {
            rc = 1;
        } else {
            cg_jv *o = cg_jv_obj(a);
            cg_jv_obj_put(a, o, "schema", cg_jv_str_nocopy(a, QUERY_SCHEMA));
            cg_jv_obj_put(a, o, "tool", cli_tool_json(a));
            cg_jv_obj_put(a, o, "kind", cg_jv_str(a, kind));
            cg_jv_obj_put(a, o, "filter", filter_json(a, f));
            cg_jv_obj_put(a, o, "input", ev.l.input);
            cg_jv_obj_put(a, o, "capabilities", or_null(a, cg_jv_get(ev.l.packet, "capabilities")));
            cg_jv_obj_put(a, o, "result", result);
            rc = cli_write_json(ea->out, cli_jv_sorted(a, o));
        }
    }
    cli_evidence_close(&ev);
    return rc;
}

#define POSSIBLE_KINDS                                                                                   \
    "  [possible values: slowest-host, slowest-device, heaviest, memory, spans, tensors, tensor-stats, " \
    "gradients, capabilities, gpu-status, gpu-correlation, gpu-phases, gpu-kernels, gpu-attribution-gaps]"

/* clap's order: an invalid --kind as it is parsed, then the conflict, then
 * the missing required arguments (options before positionals). */
int cg_cmd_query(int argc, char **argv) {
    cli_evidence_args ea = {0};
    const char *kind = NULL;
    label_filter f = {0};
    for (int i = 1; i < argc; i++) {
        int r;
        if (!strcmp(argv[i], "--kind") && i + 1 == argc)
            return cli_usage_error("query", "The argument '--kind <KIND>' requires a value but none was supplied\n" POSSIBLE_KINDS);
        if ((r = cli_take_value(argc, argv, &i, "--kind", NULL, &kind))) {
            if (r < 0) return 2;
            if (!IN(kind, kinds)) return cli_usage_error("query", "'%s' isn't a valid value for '--kind <KIND>'\n" POSSIBLE_KINDS, kind);
            continue;
        }
        if ((r = cli_take_value(argc, argv, &i, "--label", NULL, &f.exact))) { if (r < 0) return 2; continue; }
        if ((r = cli_take_value(argc, argv, &i, "--label-prefix", NULL, &f.prefix))) { if (r < 0) return 2; continue; }
        if ((r = cli_evidence_arg("query", argc, argv, &i, true, &ea))) return r;
    }
    if (f.exact && f.prefix)
        return cli_usage_error("query", "The argument '--label <S>' cannot be used with '--label-prefix <S>'");
    if (!kind) return cli_usage_missing("query", ea.input ? "--kind <KIND>" : "--kind <KIND>\n  <INPUT>");
    int rc = cli_evidence_require_input("query", &ea);
    if (rc) return rc;
    return run_query(&ea, kind, &f);
}
