/* candle-graph verify — bundle/1 deep verification, optionally semantic (spec §7). */
#include <stdio.h>
#include <string.h>

#include "bundle/outpath.h"
#include "bundle/semantic.h"
#include "bundle/verify.h"
#include "cli_util.h"

const char cg_cmd_verify_help[] =
    "usage: candle-graph verify BUNDLE [--semantic] [-o FILE]\n"
    "Deeply verify an evidence bundle and print the candle-graph/verify/1 envelope.\n"
    "  --semantic         also bind the manifest run ID to trace.jsonl and rederive evidence.json\n"
    "                     from the retained trace (+ nsight/); a mismatch fails closed\n"
    "  -o, --output FILE  write the envelope to FILE (must not lie inside BUNDLE)\n";

int cg_cmd_verify(int argc, char **argv) {
    const char *bundle = NULL, *out = NULL;
    bool semantic = false;
    for (int i = 1; i < argc; i++) {
        if (cli_is_flag(argv[i], "--semantic", NULL)) {
            semantic = true;
            continue;
        }
        int r = cli_take_value(argc, argv, &i, "--output", "-o", &out);
        if (r < 0) return 2;
        if (r == 1) continue;
        if (argv[i][0] == '-' && argv[i][1]) return cli_usage_error("verify", "unknown flag %s", argv[i]);
        if (bundle) return cli_usage_error("verify", "unexpected argument %s", argv[i]);
        bundle = argv[i];
    }
    if (!bundle) return cli_usage_error("verify", "BUNDLE is required");
    cg_error err;
    cg_err_clear(&err);
    if (cg_bundle_check_output_path(out, bundle, &err) != 0) return cli_fail(&err);
    cg_bundle_receipt r;
    if (cg_bundle_verify(bundle, &r, &err) != 0) return cli_fail(&err);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_jv *sem = cg_jv_null(&a);
    if (semantic) {
        cg_semantic_result res;
        if (cg_bundle_verify_semantic(bundle, &r, false, &res, &err) != 0) {
            cg_arena_free(&a);
            return cli_fail(&err);
        }
        sem = cg_jv_obj(&a);
        cg_jv_obj_put(&a, sem, "status", cg_jv_str_nocopy(&a, cg_semantic_result_name(res)));
    }
    cg_jv *o = cg_jv_obj(&a);
    cg_jv_obj_put(&a, o, "schema", cg_jv_str_nocopy(&a, "candle-graph/verify/1"));
    cg_jv_obj_put(&a, o, "tool", cli_tool_json(&a));
    cg_jv_obj_put(&a, o, "receipt", cg_bundle_receipt_to_json(&a, &r));
    cg_jv_obj_put(&a, o, "semantic", sem);
    int rc = cli_write_json(out, cli_jv_sorted(&a, o)); /* the crate's json!: keys sorted */
    cg_arena_free(&a);
    return rc;
}
