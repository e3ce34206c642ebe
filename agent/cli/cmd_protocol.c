/* candle-graph protocol — the crate's candle-graph/protocol/1: every schema
 * this build writes or reads, and the subcommand catalog [{about, name}] (the
 * crate's commands with the crate's about texts, in its order, then ours).
 * Keys sorted at every level (`json!`). */
#include <string.h>

#include "cli_util.h"

const char cg_cmd_protocol_help[] =
    "usage: candle-graph protocol [-o FILE]\n"
    "Emit the versioned schema and command protocol of this tool (candle-graph/protocol/1).\n"
    "  -o, --output F   write to F instead of stdout\n";

static const char *const schema_map[][2] = {
    {"trace_write", "candle-graph/trace/10"},
    {"graph", "candle-graph/graph/5"},
    {"evidence", "candle-graph/evidence/4"},
    {"comparison", "candle-graph/comparison/6"},
    {"bundle", "candle-graph/bundle/1"},
    {"bundle_verification", "candle-graph/bundle-verification/1"},
    {"publication", "candle-graph/publication/1"},
    {"campaign", "candle-graph/campaign/1"},
    {"campaign_status", "candle-graph/campaign-status/1"},
    {"series", "candle-graph/series/1"},
    {"summary", "candle-graph/summary/5"},
    {"query", "candle-graph/trace-query/5"},
    {"overview", "candle-graph/overview/1"},
    {"verify", "candle-graph/verify/1"},
    {"gradient_manifest", "candle-graph/gradient-manifest/1"},
    {"nsight_capture", "candle-graph/nsight-capture/1"},
    {"viewer", "candle-graph/viewer/5"},
};

/* name, about: clap's about is the doc comment's first line without its period */
static const char *const catalog[][2] = {
    {"import", "Emit a complete capability-qualified evidence packet"},
    {"view", "Render a standalone HTML visualizer from a trace or verified bundle (requires `visualizer` feature)"},
    {"summary", "Emit a profiler summary for a raw trace or verified bundle/profile"},
    {"query", "Run a typed query against raw-trace or verified bundle evidence"},
    {"overview", "Emit a bounded first-look overview of a raw trace or verified bundle"},
    {"compare", "Compare a candidate profile run with an explicit baseline"},
    {"report", "Atomically publish a content-addressed evidence bundle and emit its publication receipt"},
    {"verify", "Deeply verify a published evidence bundle and emit a durable receipt"},
    {"protocol", "Emit the versioned schema and command protocol of this tool"},
    {"campaign-status", "Reconcile a campaign manifest against published bundles on disk"},
    {"series", "Build a cross-run series report from a campaign manifest or explicit bundles"},
    /* ours */
    {"keygen", "Generate an Ed25519 signing key and its public key"},
    {"sign", "Write a bundle's detached Ed25519 signature beside it"},
    {"verify-signature", "Verify a bundle and its detached Ed25519 signature"},
    {"pack", "Write a verified bundle as a transport archive (tar.zst or tar)"},
    {"unpack", "Unpack a bundle transport archive into a new directory"},
    {"upload", "Upload a finalized bundle to a candle-graph-server"},
    {"capture", "Run a command under tracing and publish its capture"},
    {"daemon", "Upload spooled bundles to a candle-graph-server"},
    {"version", "Print the tool package and version"},
};

static cg_jv *protocol_json(cg_arena *a) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "schema", cg_jv_str_nocopy(a, "candle-graph/protocol/1"));
    cg_jv_obj_put(a, o, "tool", cli_tool_json(a));
    cg_jv *m = cg_jv_obj(a);
    for (size_t i = 0; i < sizeof schema_map / sizeof schema_map[0]; i++)
        cg_jv_obj_put(a, m, schema_map[i][0], cg_jv_str_nocopy(a, schema_map[i][1]));
    cg_jv *read = cg_jv_arr(a);
    cg_jv_arr_push(a, read, cg_jv_str_nocopy(a, "candle-graph/trace/9"));
    cg_jv_arr_push(a, read, cg_jv_str_nocopy(a, "candle-graph/trace/10"));
    cg_jv_obj_put(a, m, "trace_read", read);
    cg_jv_obj_put(a, o, "schemas", m);
    cg_jv *cmds = cg_jv_arr(a);
    for (size_t i = 0; i < sizeof catalog / sizeof catalog[0]; i++) {
        cg_jv *c = cg_jv_obj(a);
        cg_jv_obj_put(a, c, "name", cg_jv_str_nocopy(a, catalog[i][0]));
        cg_jv_obj_put(a, c, "about", cg_jv_str_nocopy(a, catalog[i][1]));
        cg_jv_arr_push(a, cmds, c);
    }
    cg_jv_obj_put(a, o, "commands", cmds);
    return cli_jv_sorted(a, o);
}

int cg_cmd_protocol(int argc, char **argv) {
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        int r;
        if ((r = cli_take_value(argc, argv, &i, "--output", "-o", &out))) { if (r < 0) return 2; continue; }
        return cli_usage_unexpected("protocol", argv[i]);
    }
    cg_arena a;
    cg_arena_init(&a, 0);
    int rc = cli_write_json(out, protocol_json(&a));
    cg_arena_free(&a);
    return rc;
}
