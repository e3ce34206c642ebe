/* candle-graph overview — a hard-bounded first look at a capture (overview/1). */
#include <string.h>

#include "cli_evidence.h"
#include "cli_util.h"

const char cg_cmd_overview_help[] =
    "usage: candle-graph overview INPUT [-o FILE]\n"
    "Print a hard-bounded first look (candle-graph/overview/1): status, identity, capability levels, "
    "outer wall time, top host spans, first issues and gaps.\n"
    "  --nsight-dir DIR   nsys stats CSV directory for a raw trace (rejected for bundles)\n"
    "  -o, --output F     write to F instead of stdout\n";

#define MAX_ROWS 5
#define MAX_ISSUES 10

static cg_jv *or_null(cg_arena *a, cg_jv *v) { return v ? v : cg_jv_null(a); }

static cg_jv *bounded(cg_arena *a, cg_jv *arr, size_t n) {
    cg_jv *o = cg_jv_arr(a);
    for (size_t i = 0; i < cg_jv_len(arr) && i < n; i++) cg_jv_arr_push(a, o, cg_jv_at(arr, i));
    return o;
}

int cg_cmd_overview(int argc, char **argv) {
    cli_evidence_args ea;
    int rc = cli_evidence_parse("overview", argc, argv, &ea);
    if (rc) return rc;
    cli_evidence ev;
    if ((rc = cli_evidence_open(&ea, false, &ev)) == 0) {
        cg_arena *a = &ev.arena;
        cg_jv *p = ev.l.packet, *health = cg_jv_get(p, "health"), *prov = cg_jv_get(p, "provenance");
        cg_jv *graph = cg_jv_get(p, "graph");
        cg_jv *valid = cg_jv_get(health, "structurally_valid"), *complete = cg_jv_get(health, "capture_complete");
        bool v = valid && valid->type == CG_JBOOL && valid->u.b, c = complete && complete->type == CG_JBOOL && complete->u.b;
        cg_jv *o = cg_jv_obj(a);
        cg_jv_obj_put(a, o, "schema", cg_jv_str_nocopy(a, "candle-graph/overview/1"));
        cg_jv_obj_put(a, o, "tool", cli_tool_json(a));
        cg_jv_obj_put(a, o, "input", ev.l.input);
        cg_jv_obj_put(a, o, "status", cg_jv_str_nocopy(a, !v ? "invalid" : !c ? "failed" : "complete"));
        cg_jv *id = cg_jv_obj(a);
        static const char *const keys[] = {"entrypoint", "run_id", "correlation_id", "phase", "device", "capture_step",
                                           "timing_mode"};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) cg_jv_obj_put(a, id, keys[i], or_null(a, cg_jv_get(prov, keys[i])));
        cg_jv_obj_put(a, o, "run", id);
        cg_jv *issues = cg_jv_get(health, "issues");
        uint64_t errors = 0, warnings = 0;
        for (size_t i = 0; i < cg_jv_len(issues); i++) {
            const char *sev = cg_jv_as_str(cg_jv_get(cg_jv_at(issues, i), "severity"));
            if (sev && !strcmp(sev, "error")) errors++;
            else warnings++;
        }
        cg_jv *h = cg_jv_obj(a);
        cg_jv_obj_put(a, h, "structurally_valid", cg_jv_bool(a, v));
        cg_jv_obj_put(a, h, "capture_complete", cg_jv_bool(a, c));
        cg_jv_obj_put(a, h, "error_count", cg_jv_u64(a, errors));
        cg_jv_obj_put(a, h, "warning_count", cg_jv_u64(a, warnings));
        cg_jv_obj_put(a, h, "issues", bounded(a, issues, MAX_ISSUES));
        cg_jv_obj_put(a, h, "issues_truncated", cg_jv_bool(a, cg_jv_len(issues) > MAX_ISSUES));
        cg_jv_obj_put(a, o, "health", h);
        cg_jv *levels = cg_jv_obj(a), *caps = cg_jv_get(p, "capabilities");
        for (size_t i = 0; caps && caps->type == CG_JOBJ && i < caps->u.obj.n; i++)
            cg_jv_obj_put(a, levels, caps->u.obj.m[i].key, or_null(a, cg_jv_get(caps->u.obj.m[i].val, "level")));
        cg_jv_obj_put(a, o, "capabilities", levels);
        cg_jv *summary = graph ? cg_jv_get(graph, "summary") : NULL;
        cg_jv_obj_put(a, o, "outer_wall_time_ns", or_null(a, cg_jv_get(summary, "outer_wall_time_ns")));
        cg_jv_obj_put(a, o, "slowest_host_spans", bounded(a, cg_jv_get(summary, "slowest_host_spans"), MAX_ROWS));
        cg_jv_obj_put(a, o, "slowest_device_spans", bounded(a, cg_jv_get(summary, "slowest_device_spans"), MAX_ROWS));
        cg_jv_obj_put(a, o, "findings", bounded(a, cg_jv_get(p, "findings"), MAX_ROWS));
        cg_jv *gaps = cg_jv_get(p, "gaps");
        cg_jv_obj_put(a, o, "gaps", bounded(a, gaps, MAX_ISSUES));
        cg_jv_obj_put(a, o, "gaps_truncated", cg_jv_bool(a, cg_jv_len(gaps) > MAX_ISSUES));
        cg_jv_obj_put(a, o, "coverage", or_null(a, cg_jv_get(health, "coverage")));
        cg_jv_obj_put(a, o, "gpu_status", or_null(a, cg_jv_get(cg_jv_get(p, "gpu"), "status")));
        rc = cli_write_json(ea.out, o);
    }
    cli_evidence_close(&ev);
    return rc;
}
