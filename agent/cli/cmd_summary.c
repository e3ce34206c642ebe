/* candle-graph summary — health and trace summary of a capture (summary/4).
 *
 * Raw traces are parsed and analysed here (parse + health, no graph); a
 * verified bundle is loaded through cli_load_evidence, and its provenance and
 * health come from the bound evidence.json. summary_envelope() assembles the
 * keys in the order of design/CLI.md; the evidence keys not produced yet
 * (capabilities, findings, gaps, summary, tensor_stats, timing, memory, gpu)
 * slot in where its comments say. */
#include <stdio.h>
#include <string.h>

#include "cli_evidence.h"
#include "cli_input.h"
#include "cli_util.h"
#include "trace/health.h"
#include "trace/trace.h"

const char cg_cmd_summary_help[] =
    "usage: candle-graph summary INPUT [--require-valid] [-o FILE]\n"
    "Print a capture's provenance, structural health and trace summary as candle-graph/summary/4.\n"
    "  INPUT            a trace .jsonl, a directory holding only trace.jsonl, or a verified bundle\n"
    "  --require-valid  exit 1 (after writing) unless the capture is structurally valid and complete\n"
    "  -o, --output F   write to F instead of stdout\n";

#define SUMMARY_SCHEMA "candle-graph/summary/4"

typedef struct summary_parts {
    cg_jv *input;         /* the input envelope */
    cg_jv *provenance;    /* TraceRunMeta */
    cg_jv *health;        /* TraceHealth */
    cg_jv *trace_summary; /* TraceSummary */
} summary_parts;

static cg_jv *summary_envelope(cg_arena *a, const summary_parts *p) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "schema", cg_jv_str_nocopy(a, SUMMARY_SCHEMA));
    cg_jv_obj_put(a, o, "tool", cli_tool_json(a));
    cg_jv_obj_put(a, o, "input", p->input);
    cg_jv_obj_put(a, o, "provenance", p->provenance);
    cg_jv_obj_put(a, o, "health", p->health);
    /* evidence layer: capabilities, findings, gaps, summary (graph summary or null) */
    cg_jv_obj_put(a, o, "trace_summary", p->trace_summary);
    /* evidence layer: tensor_stats (counts), timing, memory, gpu */
    return o;
}

static bool health_ok(const cg_jv *health) {
    const cg_jv *v = cg_jv_get(health, "structurally_valid"), *c = cg_jv_get(health, "capture_complete");
    return v && v->type == CG_JBOOL && v->u.b && c && c->type == CG_JBOOL && c->u.b;
}

static cg_jv *trace_summary_json(cg_arena *a, const cg_trace *t) {
    cg_trace_summary s;
    cg_trace_summary_build(t, &s);
    return cg_trace_summary_to_json(a, &s);
}

/* Raw trace: parse, analyse, build the parts. Returns 0 or 1 (error printed). */
static int raw_parts(cg_arena *a, const cli_input *in, summary_parts *p) {
    cg_error err;
    cg_err_clear(&err);
    cg_trace *t = cg_trace_read_file(in->trace_path, NULL, &err);
    if (!t) return cli_fail(&err);
    cg_health *h = cg_health_analyze(t);
    p->input = cli_raw_input_json(a, in);
    p->provenance = cg_run_meta_to_json(a, &t->run);
    p->health = cg_health_to_json(a, h);
    p->trace_summary = trace_summary_json(a, t);
    cg_health_free(h);
    cg_trace_free(t);
    return 0;
}

/* Verified bundle: provenance and health from the bound evidence packet. */
static int bundle_parts(cg_arena *a, const cli_input *in, const char *out, summary_parts *p) {
    cg_error err;
    cg_err_clear(&err);
    cli_loaded l;
    if (cli_load_evidence(a, in->requested_path, NULL, &l, &err) != 0 ||
        cli_check_output_outside(out, l.bundle_root, &err) != 0) {
        cli_loaded_free(&l);
        return cli_fail(&err);
    }
    p->input = l.input;
    p->provenance = cg_jv_get(l.packet, "provenance");
    p->health = cg_jv_get(l.packet, "health");
    p->trace_summary = trace_summary_json(a, l.trace);
    cli_loaded_free(&l);
    if (!p->provenance || !p->health) return cli_failf("verified evidence packet lacks provenance or health");
    return 0;
}

int cg_cmd_summary(int argc, char **argv) {
    const char *input = NULL, *out = NULL;
    bool require_valid = false;
    for (int i = 1; i < argc; i++) {
        int r;
        if ((r = cli_take_value(argc, argv, &i, "--output", "-o", &out))) {
            if (r < 0) return 2;
            continue;
        }
        if (cli_is_flag(argv[i], "--require-valid", NULL)) {
            require_valid = true;
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1]) return cli_usage_error("summary", "unknown flag %s", argv[i]);
        if (input) return cli_usage_error("summary", "takes one INPUT");
        input = argv[i];
    }
    if (!input) return cli_usage_error("summary", "INPUT is required");

    cg_error err;
    cg_err_clear(&err);
    cli_input in;
    if (cli_resolve_input(input, &in, &err) != 0) return cli_fail(&err);
    cg_arena a;
    cg_arena_init(&a, 1 << 16);
    summary_parts p;
    memset(&p, 0, sizeof p);
    int rc = in.is_bundle ? bundle_parts(&a, &in, out, &p) : raw_parts(&a, &in, &p);
    if (rc == 0) rc = cli_write_json(out, summary_envelope(&a, &p));
    if (rc == 0 && require_valid && !health_ok(p.health))
        rc = cli_failf("--require-valid: %s is not a structurally valid, complete capture", input);
    cg_arena_free(&a);
    return rc;
}
