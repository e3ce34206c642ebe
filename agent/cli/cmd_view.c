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
    cli_evidence_args ea;
    int rc = cli_evidence_parse("view", argc, argv, &ea);
    if (rc) return rc;
    if (!ea.out) return cli_usage_error("view", "--output FILE is required");
    cli_evidence ev;
    cg_buf html = CG_BUF_INIT;
    /* lazy: the payload walks the packet's large lists without materializing them */
    if ((rc = cli_evidence_open(&ea, true, &ev)) == 0) {
        cg_error err;
        cg_err_clear(&err);
        if (cg_viewer_render_html(cg_viewer_payload(&ev.arena, ev.l.packet), &html, &err) != 0)
            rc = cli_fail(&err);
        else
            rc = cli_write_bytes(ea.out, html.data, html.len);
    }
    cg_buf_free(&html);
    cli_evidence_close(&ev);
    return rc;
}
