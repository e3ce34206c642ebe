/* candle-graph unpack — transport archive → fresh directory (hostile-input safe). */
#include <stdio.h>
#include <string.h>

#include "bundle/archive.h"
#include "bundle/publication.h"
#include "cli_util.h"

const char cg_cmd_unpack_help[] =
    "usage: candle-graph unpack FILE --into DIR\n"
    "Unpack a bundle transport archive (tar or tar.zst) into DIR, which must not exist.\n"
    "  --into DIR   destination directory (not inside an existing bundle); on any refusal\n"
    "               nothing is left behind\n"
    "Only regular files and directories are accepted. Refusals print their class\n"
    "(unsafe_path, special_file, payload_too_large, malformed_archive) and exit 1.\n"
    "Prints {\"into\": DIR, \"status\": \"unpacked\"} as JSON.\n";

int cg_cmd_unpack(int argc, char **argv) {
    const char *file = NULL, *into = NULL;
    for (int i = 1; i < argc; i++) {
        int r = cli_take_value(argc, argv, &i, "--into", NULL, &into);
        if (r < 0) return 2;
        if (r == 1) continue;
        if (argv[i][0] == '-' && argv[i][1]) return cli_usage_error("unpack", "unknown flag %s", argv[i]);
        if (file) return cli_usage_error("unpack", "unexpected argument %s", argv[i]);
        file = argv[i];
    }
    if (!file || !into) return cli_usage_error("unpack", "FILE and --into DIR are required");
    cg_error err;
    cg_err_clear(&err);
    /* unpacking below an existing bundle would plant undeclared files in it */
    if (cg_publication_check_not_nested(into, &err) != 0) return cli_fail(&err);
    if (cg_archive_unpack(file, into, NULL, &err) != 0) /* the reason's code, or local_error for our own failure */
        return cli_failf("%s: %s", err.reason ? cg_reason_code(err.reason) : "local_error", err.msg);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_jv *o = cg_jv_obj(&a);
    cg_jv_obj_put(&a, o, "into", cg_jv_str(&a, into));
    cg_jv_obj_put(&a, o, "status", cg_jv_str_nocopy(&a, "unpacked"));
    int rc = cli_write_json(NULL, o);
    cg_arena_free(&a);
    return rc;
}
