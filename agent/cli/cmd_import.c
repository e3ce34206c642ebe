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
    const char *input = NULL, *out = NULL, *nsight = NULL;
    for (int i = 1; i < argc; i++) {
        int r;
        if ((r = cli_take_value(argc, argv, &i, "--output", "-o", &out))) { if (r < 0) return 2; continue; }
        if ((r = cli_take_value(argc, argv, &i, "--nsight-dir", NULL, &nsight))) { if (r < 0) return 2; continue; }
        if (argv[i][0] == '-' && argv[i][1]) return cli_usage_error("import", "unknown flag %s", argv[i]);
        if (input) return cli_usage_error("import", "takes one INPUT");
        input = argv[i];
    }
    if (!input) return cli_usage_error("import", "INPUT is required");
    cg_arena a;
    cg_arena_init(&a, 1 << 20);
    cg_error err;
    cg_err_clear(&err);
    cli_loaded l;
    int rc = 1;
    if (cli_load_evidence_ex(&a, input, nsight, true, &l, &err) != 0 || cli_check_output_outside(out, l.is_bundle ? l.bundle_root : NULL, &err) != 0)
        rc = cli_fail(&err);
    else
        rc = cli_write_json(out, l.packet);
    cli_loaded_free(&l);
    cg_arena_free(&a);
    return rc;
}
