/* candle-graph view — the offline single-file viewer (viewer/5). */
#include <string.h>

#include "cli_evidence.h"
#include "cli_util.h"
#include "render/payload.h"
#include "render/viewer_html.h"

const char cg_cmd_view_help[] =
    "usage: candle-graph view INPUT --output FILE [--nsight-dir DIR]\n"
    "Write the offline, self-contained HTML viewer (candle-graph/viewer/5) of a trace or verified bundle.\n"
    "  --output, -o FILE  the HTML file to write (required; never inside an input bundle)\n"
    "  --nsight-dir DIR   nsys stats CSV directory for a raw trace (rejected for bundles)\n";

int cg_cmd_view(int argc, char **argv) {
    const char *input = NULL, *out = NULL, *nsight = NULL;
    for (int i = 1; i < argc; i++) {
        int r;
        if ((r = cli_take_value(argc, argv, &i, "--output", "-o", &out))) { if (r < 0) return 2; continue; }
        if ((r = cli_take_value(argc, argv, &i, "--nsight-dir", NULL, &nsight))) { if (r < 0) return 2; continue; }
        if (argv[i][0] == '-' && argv[i][1]) return cli_usage_error("view", "unknown flag %s", argv[i]);
        if (input) return cli_usage_error("view", "takes one INPUT");
        input = argv[i];
    }
    if (!input) return cli_usage_error("view", "INPUT is required");
    if (!out) return cli_usage_error("view", "--output FILE is required");
    cg_arena a;
    cg_arena_init(&a, 1 << 20);
    cg_error err;
    cg_err_clear(&err);
    cli_loaded l;
    cg_buf html = CG_BUF_INIT;
    int rc = 1;
    if (cli_load_evidence(&a, input, nsight, &l, &err) != 0 ||
        cli_check_output_outside(out, l.is_bundle ? l.bundle_root : NULL, &err) != 0 ||
        cg_viewer_render_html(cg_viewer_payload(&a, l.packet), &html, &err) != 0)
        rc = cli_fail(&err);
    else
        rc = cli_write_bytes(out, html.data, html.len);
    cg_buf_free(&html);
    cli_loaded_free(&l);
    cg_arena_free(&a);
    return rc;
}
