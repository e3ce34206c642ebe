/* candle-graph summary — the crate's summary/5 envelope of a capture: input,
 * provenance, health, capabilities, findings, gaps, graph summary (null
 * without a graph), tensor-stat counts, timing, memory and the GPU view, plus
 * our trace_summary (design/CLI.md). Keys are sorted at every level, as the
 * crate's `json!` envelope serializes. Raw traces are rebuilt; verified
 * bundles use their bound evidence.json. */
#include <stdio.h>
#include <string.h>

#include "cli_evidence.h"
#include "cli_gpu.h"
#include "cli_util.h"
#include "trace/trace.h"

const char cg_cmd_summary_help[] =
    "usage: candle-graph summary INPUT [--require-valid] [-o FILE]\n"
    "Emit a profiler summary for a raw trace or verified bundle/profile (candle-graph/summary/5).\n"
    "  INPUT            raw trace, finalized bundle/profile directory, or its trace.jsonl\n"
    "  --require-valid  exit nonzero (after writing output) unless the capture is structurally valid and complete\n"
    "  -o, --output F   write to F instead of stdout (never inside an input bundle)\n";

#define SUMMARY_SCHEMA "candle-graph/summary/5"

static cg_jv *or_null(cg_arena *a, cg_jv *v) { return v ? v : cg_jv_null(a); }

static bool flag_true(const cg_jv *health, const char *key) {
    const cg_jv *v = cg_jv_get(health, key);
    return v && v->type == CG_JBOOL && v->u.b;
}

/* {events, non_finite_events} of the packet's tensor_stats */
static int count_non_finite(void *ctx, size_t i, const cg_jv *stat) {
    uint64_t k = 0;
    *(uint64_t *)ctx += cg_jv_as_u64(cg_jv_get(stat, "non_finite"), &k) && k > 0;
    return 0;
}

static cg_jv *tensor_stat_counts(cg_arena *a, cg_jv *stats) {
    size_t n = cg_jv_items(stats);
    uint64_t non_finite = 0;
    cg_jv_each(stats, count_non_finite, &non_finite);
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "events", cg_jv_u64(a, n));
    cg_jv_obj_put(a, o, "non_finite_events", cg_jv_u64(a, non_finite));
    return o;
}

static cg_jv *summary_envelope(cg_arena *a, const cli_loaded *l) {
    cg_jv *p = l->packet;
    cg_jv *graph = cg_jv_get(p, "graph");
    cg_trace_summary ts;
    if (l->evidence) { /* the rebuilt logical plane already walked the memory events */
        cg_trace_summary_counts(l->trace, &ts);
        ts.has_logical_peak = l->trace->n_memory > 0;
        if (!cg_memory_logical_peak(l->evidence->memory, &ts.logical_peak_bytes, NULL)) ts.logical_peak_bytes = 0;
    } else {
        cg_trace_summary_build(l->trace, &ts);
    }
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "schema", cg_jv_str_nocopy(a, SUMMARY_SCHEMA));
    cg_jv_obj_put(a, o, "tool", cli_tool_json(a));
    cg_jv_obj_put(a, o, "input", l->input);
    static const char *const keys[] = {"provenance", "health", "capabilities", "findings", "gaps"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) cg_jv_obj_put(a, o, keys[i], or_null(a, cg_jv_get(p, keys[i])));
    cg_jv_obj_put(a, o, "summary", graph && graph->type == CG_JOBJ ? or_null(a, cg_jv_get(graph, "summary")) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "tensor_stats", tensor_stat_counts(a, cg_jv_get(p, "tensor_stats")));
    cg_jv_obj_put(a, o, "timing", or_null(a, cg_jv_get(p, "timing")));
    cg_jv_obj_put(a, o, "memory", or_null(a, cg_jv_get(p, "memory")));
    cg_jv_obj_put(a, o, "gpu", cli_gpu_summary(a, p));
    cg_jv_obj_put(a, o, "trace_summary", cg_trace_summary_to_json(a, &ts));
    return cli_jv_sorted(a, o);
}

/* "summary --require-valid: structurally_valid is false, capture_complete is false" */
static int require_valid_failure(const cg_jv *health) {
    bool valid = flag_true(health, "structurally_valid"), complete = flag_true(health, "capture_complete");
    if (valid && complete) return 0;
    return cli_failf("summary --require-valid: %s%s%s", valid ? "" : "structurally_valid is false",
                     valid || complete ? "" : ", ", complete ? "" : "capture_complete is false");
}

int cg_cmd_summary(int argc, char **argv) {
    cli_evidence_args ea = {0};
    bool require_valid = false;
    for (int i = 1; i < argc; i++) {
        if (cli_is_flag(argv[i], "--require-valid", NULL)) {
            require_valid = true;
            continue;
        }
        int r = cli_evidence_arg("summary", argc, argv, &i, false, &ea);
        if (r) return r;
    }
    int rc = cli_evidence_require_input("summary", &ea);
    if (rc) return rc;
    cli_evidence ev;
    ea.summary_only = true; /* only graph.summary is read */
    /* lazy: the packet's large lists are streamed, never materialized */
    if ((rc = cli_evidence_open(&ea, true, &ev)) == 0) {
        cg_jv *env = summary_envelope(&ev.arena, &ev.l);
        rc = cli_write_json(ea.out, env);
        if (rc == 0 && require_valid) rc = require_valid_failure(cg_jv_get(ev.l.packet, "health"));
    }
    cli_evidence_close(&ev);
    return rc;
}
