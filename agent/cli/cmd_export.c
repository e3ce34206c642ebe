/* candle-graph export — a bundle (verified) or a raw trace as Chrome Trace Event
 * Format JSON, the format ui.perfetto.dev and chrome://tracing open. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fs.h"
#include "bundle/verify.h"
#include "cli_util.h"
#include "render/chrome_trace.h"
#include "trace/trace.h"

const char cg_cmd_export_help[] =
    "usage: candle-graph export INPUT --format chrome [-o FILE]\n"
    "Write a capture as Chrome Trace Event Format JSON (opens in ui.perfetto.dev and chrome://tracing):\n"
    "host spans and ops as nested events per lane, each device clock as its own process (never aligned\n"
    "with the host clock), logical and physical memory as counters.\n"
    "  INPUT            a bundle directory (verified first) or a trace .jsonl\n"
    "  --format chrome  the output format (the only one)\n"
    "  -o, --output F   write to F instead of stdout\n";

static int produce(cg_json_sink sink, void *sink_ctx, void *arg, cg_error *err) {
    return cg_chrome_trace_write(arg, sink, sink_ctx, err);
}

/* The trace to export: a bundle's trace.jsonl after bundle/1 verification, or the file itself. */
static cg_trace *load(const char *input, cg_error *err) {
    if (!cg_is_dir(input)) {
        cg_trace *t = cg_trace_read_file(input, NULL, err);
        if (!t) cg_err_context(err, "parse trace %s", input); /* the crate's chain: rule errors carry no path */
        return t;
    }
    cg_bundle_receipt receipt;
    if (cg_bundle_verify(input, &receipt, err) != 0) return NULL;
    char *path = cg_path_join(input, "trace.jsonl");
    cg_trace *t = cg_trace_read_file(path, NULL, err);
    const char *consumed[] = {"trace.jsonl"};
    if (t && cg_bundle_verify_consumed(input, &receipt, consumed, 1, err) != 0) {
        cg_trace_free(t);
        t = NULL;
    }
    cg_free(path);
    return t;
}

int cg_cmd_export(int argc, char **argv) {
    const char *input = NULL, *format = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        int r;
        if ((r = cli_take_value(argc, argv, &i, "--format", NULL, &format)) != 0) {
            if (r < 0) return 2;
            continue;
        }
        if ((r = cli_take_value(argc, argv, &i, "--output", "-o", &out)) != 0) {
            if (r < 0) return 2;
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1]) return cli_usage_unexpected("export", argv[i]);
        if (input) return cli_usage_error("export", "takes one INPUT");
        input = argv[i];
    }
    if (!input) return cli_usage_error("export", "INPUT is required");
    if (!format) return cli_usage_error("export", "--format is required (chrome)");
    if (strcmp(format, "chrome")) return cli_usage_error("export", "unknown --format %s (chrome)", format);
    cg_error err;
    cg_err_clear(&err);
    cg_trace *t = load(input, &err);
    if (!t) return cli_fail(&err);
    int rc = cli_write_stream(out, produce, t);
    cg_trace_free(t);
    return rc;
}
