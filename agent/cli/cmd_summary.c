/* candle-graph summary — the summary/4 envelope of a capture: provenance,
 * structural health, capabilities, findings, gaps, graph summary, trace
 * summary, tensor-stat counts, timing, memory and gpu (design/CLI.md order).
 * Raw traces are rebuilt; verified bundles use their bound evidence.json. */
#include <stdio.h>
#include <string.h>

#include "base/strmap.h"
#include "cli_evidence.h"
#include "cli_util.h"
#include "trace/trace.h"

const char cg_cmd_summary_help[] =
    "usage: candle-graph summary INPUT [--require-valid] [-o FILE]\n"
    "Print a capture's provenance, health, capabilities, findings, gaps and summaries as candle-graph/summary/4.\n"
    "  INPUT            a trace .jsonl, a directory holding only trace.jsonl, or a verified bundle\n"
    "  --require-valid  exit 1 (after writing) unless the capture is structurally valid and complete\n"
    "  -o, --output F   write to F instead of stdout (never inside an input bundle)\n";

#define SUMMARY_SCHEMA "candle-graph/summary/4"

static cg_jv *or_null(cg_arena *a, cg_jv *v) { return v ? v : cg_jv_null(a); }

static bool health_ok(const cg_jv *health) {
    const cg_jv *v = cg_jv_get(health, "structurally_valid"), *c = cg_jv_get(health, "capture_complete");
    return v && v->type == CG_JBOOL && v->u.b && c && c->type == CG_JBOOL && c->u.b;
}

/* {events, labels, non_finite_events}: counts of the trace's tensor_stats records */
static cg_jv *tensor_stat_counts(cg_arena *a, const cg_trace *t) {
    cg_strmap labels;
    cg_strmap_init(&labels);
    uint64_t non_finite = 0;
    for (size_t i = 0; i < t->n_tensor_stats; i++) {
        cg_strmap_put(&labels, t->tensor_stats[i].label, 0, NULL);
        non_finite += t->tensor_stats[i].non_finite > 0;
    }
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "events", cg_jv_u64(a, t->n_tensor_stats));
    cg_jv_obj_put(a, o, "labels", cg_jv_u64(a, labels.n));
    cg_jv_obj_put(a, o, "non_finite_events", cg_jv_u64(a, non_finite));
    cg_strmap_free(&labels);
    return o;
}

static cg_jv *summary_envelope(cg_arena *a, const cli_loaded *l) {
    cg_jv *p = l->packet;
    cg_jv *graph = cg_jv_get(p, "graph");
    cg_trace_summary ts;
    cg_trace_summary_build(l->trace, &ts);
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "schema", cg_jv_str_nocopy(a, SUMMARY_SCHEMA));
    cg_jv_obj_put(a, o, "tool", cli_tool_json(a));
    cg_jv_obj_put(a, o, "input", l->input);
    static const char *const keys[] = {"provenance", "health", "capabilities", "findings", "gaps"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) cg_jv_obj_put(a, o, keys[i], or_null(a, cg_jv_get(p, keys[i])));
    cg_jv_obj_put(a, o, "summary", graph && graph->type == CG_JOBJ ? or_null(a, cg_jv_get(graph, "summary")) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "trace_summary", cg_trace_summary_to_json(a, &ts));
    cg_jv_obj_put(a, o, "tensor_stats", tensor_stat_counts(a, l->trace));
    static const char *const tail[] = {"timing", "memory", "gpu"};
    for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++) cg_jv_obj_put(a, o, tail[i], or_null(a, cg_jv_get(p, tail[i])));
    return o;
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
    if ((rc = cli_evidence_open(&ea, true, &ev)) == 0) {
        cg_jv *env = summary_envelope(&ev.arena, &ev.l);
        rc = cli_write_json(ea.out, env);
        if (rc == 0 && require_valid && !health_ok(cg_jv_get(ev.l.packet, "health")))
            rc = cli_failf("--require-valid: %s is not a structurally valid, complete capture", ea.input);
    }
    cli_evidence_close(&ev);
    return rc;
}
