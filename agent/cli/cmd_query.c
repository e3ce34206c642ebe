/* candle-graph query — one focused view of the evidence (trace-query/4). */
#include <string.h>

#include "cli_evidence.h"
#include "cli_util.h"

const char cg_cmd_query_help[] =
    "usage: candle-graph query INPUT --kind KIND [--label S | --label-prefix S] [-o FILE]\n"
    "Print one focused view of a trace's evidence as candle-graph/trace-query/4.\n"
    "  --kind KIND        slowest-host, slowest-device, heaviest, spans, tensors, gradients (need a graph:\n"
    "                     a complete, structurally valid capture), memory, tensor-stats, capabilities,\n"
    "                     gpu-status, gpu-correlation, gpu-phases (50 rows), gpu-kernels (50 rows),\n"
    "                     gpu-attribution-gaps\n"
    "  --label S          exact label filter (spans, tensors, tensor-stats, gradients as root/key)\n"
    "  --label-prefix S   label prefix filter (same kinds)\n"
    "  --nsight-dir DIR   nsys stats CSV directory for a raw trace (rejected for bundles)\n"
    "  -o, --output F     write to F instead of stdout\n";

#define QUERY_SCHEMA "candle-graph/trace-query/4"
#define GPU_ROWS 50

static const char *const graph_kinds[] = {"slowest-host", "slowest-device", "heaviest", "spans", "tensors", "gradients"};
static const char *const other_kinds[] = {"memory", "gpu-status", "tensor-stats", "capabilities", "gpu-correlation",
                                          "gpu-phases", "gpu-kernels", "gpu-attribution-gaps"};
static const char *const label_kinds[] = {"spans", "tensors", "tensor-stats", "gradients"};

static bool in(const char *k, const char *const *set, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(k, set[i])) return true;
    return false;
}
#define IN(k, set) in(k, set, sizeof set / sizeof set[0])

static bool match(const char *label, const char *exact, const char *prefix) {
    if (!exact && !prefix) return true;
    if (!label) return false;
    if (exact) return !strcmp(label, exact);
    return !strncmp(label, prefix, strlen(prefix));
}

static cg_jv *head(cg_arena *a, cg_jv *arr, size_t n) {
    cg_jv *o = cg_jv_arr(a);
    for (size_t i = 0; i < cg_jv_len(arr) && i < n; i++) cg_jv_arr_push(a, o, cg_jv_at(arr, i));
    return o;
}

static cg_jv *or_null(cg_arena *a, cg_jv *v) { return v ? v : cg_jv_null(a); }

static cg_jv *result_for(cg_arena *a, const char *kind, cg_jv *p, const char *exact, const char *prefix) {
    cg_jv *graph = cg_jv_get(p, "graph"), *gpu = cg_jv_get(p, "gpu");
    cg_jv *summary = cg_jv_get(graph, "summary");
    if (!strcmp(kind, "slowest-host")) return or_null(a, cg_jv_get(summary, "slowest_host_spans"));
    if (!strcmp(kind, "slowest-device")) return or_null(a, cg_jv_get(summary, "slowest_device_spans"));
    if (!strcmp(kind, "heaviest")) return or_null(a, cg_jv_get(summary, "heaviest_spans"));
    cg_jv *out = cg_jv_arr(a);
    if (!strcmp(kind, "spans")) {
        cg_jv *spans = cg_jv_get(graph, "spans");
        for (size_t i = 0; i < cg_jv_len(spans); i++) {
            cg_jv *n = cg_jv_at(spans, i);
            const char *k = cg_jv_as_str(cg_jv_get(n, "kind"));
            if (!k || !strcmp(k, "op") || !strcmp(k, "tensor")) continue;
            if (match(cg_jv_as_str(cg_jv_get(n, "name")), exact, prefix)) cg_jv_arr_push(a, out, n);
        }
        return out;
    }
    if (!strcmp(kind, "tensors")) {
        cg_jv *ts = cg_jv_get(graph, "tensors");
        for (size_t i = 0; i < cg_jv_len(ts); i++) {
            cg_jv *t = cg_jv_at(ts, i);
            if (match(cg_jv_as_str(cg_jv_get(t, "label")), exact, prefix)) cg_jv_arr_push(a, out, t);
        }
        return out;
    }
    if (!strcmp(kind, "gradients")) {
        cg_jv *gs = cg_jv_get(graph, "gradients");
        for (size_t i = 0; i < cg_jv_len(gs); i++) {
            cg_jv *g = cg_jv_at(gs, i);
            const char *root = cg_jv_as_str(cg_jv_get(g, "root")), *key = cg_jv_as_str(cg_jv_get(g, "key"));
            const char *composite = cg_arena_printf(a, "%s/%s", root ? root : "", key ? key : "");
            if (match(composite, exact, prefix)) cg_jv_arr_push(a, out, g);
        }
        return out;
    }
    if (!strcmp(kind, "tensor-stats")) {
        cg_jv *ts = cg_jv_get(p, "tensor_stats");
        for (size_t i = 0; i < cg_jv_len(ts); i++) {
            cg_jv *t = cg_jv_at(ts, i);
            if (match(cg_jv_as_str(cg_jv_get(t, "label")), exact, prefix)) cg_jv_arr_push(a, out, t);
        }
        return out;
    }
    if (!strcmp(kind, "memory")) return or_null(a, cg_jv_get(p, "memory"));
    if (!strcmp(kind, "capabilities")) return or_null(a, cg_jv_get(p, "capabilities"));
    if (!strcmp(kind, "gpu-status")) {
        cg_jv *o = cg_jv_obj(a);
        static const char *const keys[] = {"status", "reason", "raw_report", "source_csv", "provenance", "coverage",
                                           "diagnostics", "limits"};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
            cg_jv *v = cg_jv_get(gpu, keys[i]);
            if (v) cg_jv_obj_put(a, o, keys[i], v);
        }
        cg_jv *caps = cg_jv_get(p, "capabilities");
        cg_jv_obj_put(a, o, "correlation_capability", or_null(a, cg_jv_get(caps, "gpu_correlation")));
        cg_jv_obj_put(a, o, "provenance_capability", or_null(a, cg_jv_get(caps, "provenance_binding")));
        return o;
    }
    if (!strcmp(kind, "gpu-correlation")) return or_null(a, cg_jv_get(gpu, "correlation"));
    if (!strcmp(kind, "gpu-phases")) return head(a, cg_jv_get(gpu, "phase_attribution"), GPU_ROWS);
    if (!strcmp(kind, "gpu-kernels")) return head(a, cg_jv_get(gpu, "kernels"), GPU_ROWS);
    /* gpu-attribution-gaps: what the correlation could not attribute */
    cg_jv *corr = cg_jv_get(gpu, "correlation");
    cg_jv *ledger = cg_jv_get(corr, "ledger");
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "status", or_null(a, cg_jv_get(gpu, "status")));
    cg_jv_obj_put(a, o, "complete", or_null(a, cg_jv_get(corr, "complete")));
    cg_jv_obj_put(a, o, "reason", or_null(a, cg_jv_get(corr, "reason")));
    static const char *const lk[] = {"missing_expected", "unexpected_observed", "unexpected_cpu_only", "duplicates"};
    for (size_t i = 0; i < sizeof lk / sizeof lk[0]; i++) {
        cg_jv *v = cg_jv_get(ledger, lk[i]);
        cg_jv_obj_put(a, o, lk[i], v ? v : cg_jv_arr(a));
    }
    /* projected ranges that produced no phase attribution */
    cg_jv *unattributed = cg_jv_arr(a);
    cg_jv *ranges = cg_jv_get(gpu, "nvtx_ranges"), *phases = cg_jv_get(gpu, "phase_attribution");
    for (size_t i = 0; i < cg_jv_len(ranges); i++) {
        const char *key = cg_jv_as_str(cg_jv_get(cg_jv_at(ranges, i), "semantic_key"));
        if (!key) continue;
        bool found = false;
        for (size_t j = 0; j < cg_jv_len(phases) && !found; j++) {
            const char *pk = cg_jv_as_str(cg_jv_get(cg_jv_at(phases, j), "semantic_key"));
            found = pk && !strcmp(pk, key);
        }
        if (!found) cg_jv_arr_push(a, unattributed, cg_jv_at(ranges, i));
        if (cg_jv_len(unattributed) >= GPU_ROWS) break;
    }
    cg_jv_obj_put(a, o, "unattributed_ranges", unattributed);
    return o;
}

int cg_cmd_query(int argc, char **argv) {
    cli_evidence_args ea = {0};
    const char *kind = NULL, *label = NULL, *prefix = NULL;
    for (int i = 1; i < argc; i++) {
        int r;
        if ((r = cli_take_value(argc, argv, &i, "--kind", NULL, &kind))) { if (r < 0) return 2; continue; }
        if ((r = cli_take_value(argc, argv, &i, "--label", NULL, &label))) { if (r < 0) return 2; continue; }
        if ((r = cli_take_value(argc, argv, &i, "--label-prefix", NULL, &prefix))) { if (r < 0) return 2; continue; }
        if ((r = cli_evidence_arg("query", argc, argv, &i, true, &ea))) return r;
    }
    int rc = cli_evidence_require_input("query", &ea);
    if (rc) return rc;
    if (!kind) return cli_usage_error("query", "--kind is required");
    if (!IN(kind, graph_kinds) && !IN(kind, other_kinds)) return cli_usage_error("query", "unknown kind %s", kind);
    if (label && prefix) return cli_usage_error("query", "--label and --label-prefix are exclusive");
    if ((label || prefix) && !IN(kind, label_kinds))
        return cli_usage_error("query", "--label/--label-prefix apply to spans, tensors, tensor-stats and gradients only");
    cli_evidence ev;
    if ((rc = cli_evidence_open(&ea, false, &ev)) == 0) {
        cg_arena *a = &ev.arena;
        cg_jv *graph = cg_jv_get(ev.l.packet, "graph");
        if (IN(kind, graph_kinds) && (!graph || graph->type == CG_JNULL)) {
            rc = cli_failf("query requires a complete, structurally valid capture");
        } else {
            cg_jv *o = cg_jv_obj(a);
            cg_jv_obj_put(a, o, "schema", cg_jv_str_nocopy(a, QUERY_SCHEMA));
            cg_jv_obj_put(a, o, "tool", cli_tool_json(a));
            cg_jv_obj_put(a, o, "kind", cg_jv_str(a, kind));
            cg_jv_obj_put(a, o, "input", ev.l.input);
            cg_jv_obj_put(a, o, "capabilities", cg_jv_get(ev.l.packet, "capabilities"));
            if (label || prefix) {
                cg_jv *f = cg_jv_obj(a);
                cg_jv_obj_put(a, f, label ? "label" : "label_prefix", cg_jv_str(a, label ? label : prefix));
                cg_jv_obj_put(a, o, "filter", f);
            }
            cg_jv_obj_put(a, o, "result", result_for(a, kind, ev.l.packet, label, prefix));
            rc = cli_write_json(ea.out, o);
        }
    }
    cli_evidence_close(&ev);
    return rc;
}
