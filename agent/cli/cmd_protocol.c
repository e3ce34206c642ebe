/* candle-graph protocol — the schema map and the command list (protocol/1). */
#include <string.h>

#include "cli_util.h"

const char cg_cmd_protocol_help[] =
    "usage: candle-graph protocol [-o FILE]\n"
    "Print candle-graph/protocol/1: the wire schemas this build reads and writes, and its commands.\n"
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
    {"summary", "candle-graph/summary/4"},
    {"query", "candle-graph/trace-query/4"},
    {"overview", "candle-graph/overview/1"},
    {"verify", "candle-graph/verify/1"},
    {"gradient_manifest", "candle-graph/gradient-manifest/1"},
    {"nsight_capture", "candle-graph/nsight-capture/1"},
    {"viewer", "candle-graph/viewer/5"},
};

static const char *const commands[] = {
    "import", "view", "summary", "query", "overview", "compare", "report", "verify", "protocol",
    "campaign-status", "series", "keygen", "sign", "verify-signature", "pack", "unpack", "upload",
    "capture", "daemon", "version",
};

int cg_cmd_protocol(int argc, char **argv) {
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        int r;
        if ((r = cli_take_value(argc, argv, &i, "--output", "-o", &out))) { if (r < 0) return 2; continue; }
        return cli_usage_error("protocol", "unexpected argument %s", argv[i]);
    }
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_jv *o = cg_jv_obj(&a);
    cg_jv_obj_put(&a, o, "schema", cg_jv_str_nocopy(&a, "candle-graph/protocol/1"));
    cg_jv_obj_put(&a, o, "tool", cli_tool_json(&a));
    cg_jv *m = cg_jv_obj(&a);
    cg_jv_obj_put(&a, m, schema_map[0][0], cg_jv_str_nocopy(&a, schema_map[0][1]));
    cg_jv *read = cg_jv_arr(&a);
    cg_jv_arr_push(&a, read, cg_jv_str_nocopy(&a, "candle-graph/trace/10"));
    cg_jv_arr_push(&a, read, cg_jv_str_nocopy(&a, "candle-graph/trace/9"));
    cg_jv_obj_put(&a, m, "trace_read", read);
    for (size_t i = 1; i < sizeof schema_map / sizeof schema_map[0]; i++)
        cg_jv_obj_put(&a, m, schema_map[i][0], cg_jv_str_nocopy(&a, schema_map[i][1]));
    cg_jv_obj_put(&a, o, "schemas", m);
    cg_jv *cmds = cg_jv_arr(&a);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        cg_jv_arr_push(&a, cmds, cg_jv_str_nocopy(&a, commands[i]));
    cg_jv_obj_put(&a, o, "commands", cmds);
    int rc = cli_write_json(out, o);
    cg_arena_free(&a);
    return rc;
}
