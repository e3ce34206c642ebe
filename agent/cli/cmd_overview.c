/* candle-graph overview — the crate's bounded first look (candle-graph/overview/1)
 * at a raw trace or verified bundle: input, provenance, health flags and issue
 * counts, capabilities, findings and gaps as {total, displayed, truncated,
 * rows} (20 rows), counts, the timing headline (top 5 host spans; null with
 * timing_unavailable_reason when there is no graph), memory scalars and the
 * GPU view. Never an unbounded list. Keys sorted at every level (`json!`). */
#include <string.h>

#include "analysis/graph.h"
#include "cli_evidence.h"
#include "cli_gpu.h"
#include "cli_util.h"

const char cg_cmd_overview_help[] =
    "usage: candle-graph overview INPUT [-o FILE]\n"
    "Emit a bounded first-look overview of a raw trace or verified bundle (candle-graph/overview/1).\n"
    "  --nsight-dir DIR   nsys stats CSV directory for a raw trace (ours; rejected for bundles)\n"
    "  -o, --output F     write to F instead of stdout\n";

#define LIST_LIMIT 20
#define TIMING_SPAN_LIMIT 5

static cg_jv *or_null(cg_arena *a, cg_jv *v) { return v ? v : cg_jv_null(a); }
static size_t len_of(cg_jv *v) { return v && v->type == CG_JARR ? cg_jv_len(v) : 0; }
static bool is_obj(const cg_jv *v) { return v && v->type == CG_JOBJ; }

static cg_jv *health_counts(cg_arena *a, cg_jv *health) {
    cg_jv *issues = cg_jv_get(health, "issues");
    uint64_t errors = 0, warnings = 0;
    for (size_t i = 0; i < len_of(issues); i++) {
        const char *sev = cg_jv_as_str(cg_jv_get(cg_jv_at(issues, i), "severity"));
        errors += sev && !strcmp(sev, "error");
        warnings += sev && !strcmp(sev, "warning");
    }
    cg_jv *h = cg_jv_obj(a);
    cg_jv_obj_put(a, h, "structurally_valid", or_null(a, cg_jv_get(health, "structurally_valid")));
    cg_jv_obj_put(a, h, "capture_complete", or_null(a, cg_jv_get(health, "capture_complete")));
    cg_jv_obj_put(a, h, "error_count", cg_jv_u64(a, errors));
    cg_jv_obj_put(a, h, "warning_count", cg_jv_u64(a, warnings));
    return h;
}

static int count_non_finite(void *ctx, size_t i, const cg_jv *stat) {
    (void)i;
    uint64_t k = 0;
    *(uint64_t *)ctx += cg_jv_as_u64(cg_jv_get(stat, "non_finite"), &k) && k > 0;
    return 0;
}

/* tensor-stat counts walk the (lazy) list; graph_spans is the length of the
 * graph's node list (a rebuilt summary-only graph has only its count) */
static cg_jv *counts(cg_arena *a, const cli_loaded *l) {
    cg_jv *p = l->packet;
    cg_jv *stats = cg_jv_get(p, "tensor_stats"), *graph = cg_jv_get(p, "graph");
    uint64_t non_finite = 0;
    cg_jv_each(stats, count_non_finite, &non_finite);
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "tensor_stat_events", cg_jv_u64(a, cg_jv_items(stats)));
    cg_jv_obj_put(a, o, "tensor_stat_non_finite_events", cg_jv_u64(a, non_finite));
    const cg_graph *model = l->evidence ? l->evidence->graph_model : NULL;
    cg_jv_obj_put(a, o, "graph_spans",
                  model            ? cg_jv_u64(a, model->n_nodes)
                  : is_obj(graph) ? cg_jv_u64(a, cg_jv_items(cg_jv_get(graph, "spans")))
                                  : cg_jv_null(a));
    return o;
}

static cg_jv *timing(cg_arena *a, cg_jv *summary) {
    if (!is_obj(summary)) return cg_jv_null(a);
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "outer_wall_time_ns", or_null(a, cg_jv_get(summary, "outer_wall_time_ns")));
    cg_jv_obj_put(a, o, "entrypoint", or_null(a, cg_jv_get(summary, "entrypoint")));
    cg_jv_obj_put(a, o, "slowest_host_spans",
                  cli_bounded(a, cg_jv_get(summary, "slowest_host_spans"), TIMING_SPAN_LIMIT));
    return o;
}

/* scalar aggregates of the memory profiles only, never per-storage lists */
static cg_jv *memory(cg_arena *a, cg_jv *mem) {
    cg_jv *logical = cg_jv_get(mem, "logical"), *physical = cg_jv_get(mem, "physical");
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "logical", cg_jv_bool(a, is_obj(logical)));
    cg_jv_obj_put(a, o, "physical", cg_jv_bool(a, is_obj(physical)));
    cg_jv *totals = cg_jv_null(a);
    if (is_obj(logical)) {
        cg_jv *peak = cg_jv_get(logical, "peak");
        totals = cg_jv_obj(a);
        static const char *const keys[] = {"storage_allocation_count", "matched_storage_free_count",
                                           "total_allocated_bytes"};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            cg_jv_obj_put(a, totals, keys[i], or_null(a, cg_jv_get(logical, keys[i])));
        cg_jv_obj_put(a, totals, "peak_live_bytes", is_obj(peak) ? or_null(a, cg_jv_get(peak, "live_bytes")) : cg_jv_null(a));
        cg_jv_obj_put(a, totals, "peak_timestamp_ns",
                      is_obj(peak) ? or_null(a, cg_jv_get(peak, "timestamp_ns")) : cg_jv_null(a));
    }
    cg_jv_obj_put(a, o, "logical_totals", totals);
    return o;
}

static cg_jv *overview_envelope(cg_arena *a, const cli_loaded *l) {
    cg_jv *p = l->packet, *graph = cg_jv_get(p, "graph");
    cg_jv *summary = is_obj(graph) ? cg_jv_get(graph, "summary") : NULL;
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "schema", cg_jv_str_nocopy(a, "candle-graph/overview/1"));
    cg_jv_obj_put(a, o, "tool", cli_tool_json(a));
    cg_jv_obj_put(a, o, "input", l->input);
    cg_jv_obj_put(a, o, "provenance", or_null(a, cg_jv_get(p, "provenance")));
    cg_jv_obj_put(a, o, "health", health_counts(a, cg_jv_get(p, "health")));
    cg_jv_obj_put(a, o, "capabilities", or_null(a, cg_jv_get(p, "capabilities")));
    cg_jv_obj_put(a, o, "findings", cli_bounded(a, cg_jv_get(p, "findings"), LIST_LIMIT));
    cg_jv_obj_put(a, o, "gaps", cli_bounded(a, cg_jv_get(p, "gaps"), LIST_LIMIT));
    cg_jv_obj_put(a, o, "counts", counts(a, l));
    cg_jv_obj_put(a, o, "timing", timing(a, summary));
    cg_jv_obj_put(a, o, "timing_unavailable_reason",
                  is_obj(summary) ? cg_jv_null(a)
                                  : cg_jv_str_nocopy(a, "no derived execution graph: the capture is incomplete or "
                                                        "structurally invalid, so no timing headline exists"));
    cg_jv_obj_put(a, o, "memory", memory(a, cg_jv_get(p, "memory")));
    cg_jv_obj_put(a, o, "gpu", cli_gpu_summary(a, p));
    return cli_jv_sorted(a, o);
}

int cg_cmd_overview(int argc, char **argv) {
    cli_evidence_args ea;
    int rc = cli_evidence_parse("overview", argc, argv, &ea);
    if (rc) return rc;
    cli_evidence ev;
    ea.summary_only = true; /* of the graph only its summary and node count are read */
    /* lazy: only the packet's scalars and bounded lists are read */
    if ((rc = cli_evidence_open(&ea, true, &ev)) == 0) rc = cli_write_json(ea.out, overview_envelope(&ev.arena, &ev.l));
    cli_evidence_close(&ev);
    return rc;
}
