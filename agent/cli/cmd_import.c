/* candle-graph import — the full evidence/4 packet of a trace or verified bundle. */
#include <string.h>

#include "cli_evidence.h"
#include "cli_util.h"

const char cg_cmd_import_help[] =
    "usage: candle-graph import INPUT [--nsight-dir DIR] [-o FILE]\n"
    "Print the candle-graph/evidence/4 packet of a raw trace (rebuilt) or a finalized bundle (its verified "
    "evidence.json).\n"
    "  INPUT            a trace .jsonl, a directory holding only trace.jsonl, or a bundle directory\n"
    "  --nsight-dir DIR nsys stats CSV directory for a raw trace (rejected for bundles)\n"
    "  -o, --output F   write to F instead of stdout (never inside an input bundle)\n";

int cg_cmd_import(int argc, char **argv) {
    cli_evidence_args ea;
    int rc = cli_evidence_parse("import", argc, argv, &ea);
    if (rc) return rc;
    cli_evidence ev;
    if ((rc = cli_evidence_open(&ea, true, &ev)) == 0) rc = cli_write_json(ea.out, ev.l.packet);
    cli_evidence_close(&ev);
    return rc;
}
