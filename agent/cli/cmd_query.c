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
static size_t len_of(cg_jv *v) { return v && v->type == CG_JARR ? cg_jv_len(v) : 0; }

/* {total, matched, rows}: every row, untruncated */
static cg_jv *filtered_rows(cg_arena *a, size_t total, cg_jv *rows) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "total", cg_jv_u64(a, total));
    cg_jv_obj_put(a, o, "matched", cg_jv_u64(a, cg_jv_len(rows)));
    cg_jv_obj_put(a, o, "rows", rows);
    return o;
}

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

static cg_jv *filtered_result(cg_arena *a, const char *kind, cg_jv *p, const label_filter *f) {
    cg_jv *graph = cg_jv_get(p, "graph");
    cg_jv *src = !strcmp(kind, "tensor-stats") ? cg_jv_get(p, "tensor_stats")
                 : !strcmp(kind, "spans")      ? cg_jv_get(graph, "spans")
                 : !strcmp(kind, "tensors")    ? cg_jv_get(graph, "tensors")
                                               : cg_jv_get(graph, "gradients");
    cg_jv *rows = cg_jv_arr(a);
    for (size_t i = 0; i < len_of(src); i++)
        if (row_matches(a, kind, cg_jv_at(src, i), f)) cg_jv_arr_push(a, rows, cg_jv_at(src, i));
    cg_jv *o = filtered_rows(a, len_of(src), rows);
    if (!strcmp(kind, "spans")) {
        cg_jv_obj_put(a, o, "edges", cg_jv_null(a));
        cg_jv_obj_put(a, o, "edges_reason",
                      cg_jv_str_nocopy(a, "edges are omitted for filtered span queries; run without a filter for the "
                                          "full span graph"));
    }
    return o;
}

typedef struct weighed {
    cg_jv *node;
    uint64_t bytes;
    const cg_jv *id;
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

/* op nodes whose allocated bytes are known, heaviest first (ties by id), top 50 */
static cg_jv *heaviest_ops(cg_arena *a, cg_jv *spans) {
    size_t n = len_of(spans), k = 0;
    weighed *w = cg_arena_alloc(a, sizeof *w * (n ? n : 1));
    for (size_t i = 0; i < n; i++) {
        cg_jv *node = cg_jv_at(spans, i);
        const char *kind = cg_jv_as_str(cg_jv_get(node, "kind"));
        uint64_t bytes = 0;
        if (kind && !strcmp(kind, "op") && cg_jv_as_u64(cg_jv_get(node, "allocated_bytes"), &bytes))
            w[k++] = (weighed){node, bytes, cg_jv_get(node, "id")};
    }
    qsort(w, k, sizeof *w, weighed_cmp);
    cg_jv *out = cg_jv_arr(a);
    for (size_t i = 0; i < k && i < HEAVIEST_OPS; i++) cg_jv_arr_push(a, out, w[i].node);
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
    int rc = cli_evidence_open(ea, false, &ev);
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
