/* candle-graph pack — verified bundle → transport archive (tar, or tar.zst). */
#include <stdio.h>
#include <string.h>

#include "base/sha256.h"
#include "bundle/archive.h"
#include "bundle/outpath.h"
#include "cli_util.h"

const char cg_cmd_pack_help[] =
    "usage: candle-graph pack BUNDLE -o FILE\n"
    "Verify BUNDLE and write it as a transport archive: tar.zst, or plain tar when FILE ends in .tar.\n"
    "  -o, --output FILE  archive path (must not lie inside BUNDLE)\n"
    "Prints {\"archive\", \"format\", \"bytes\", \"sha256\"} as JSON.\n";

int cg_cmd_pack(int argc, char **argv) {
    const char *bundle = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        int r = cli_take_value(argc, argv, &i, "--output", "-o", &out);
        if (r < 0) return 2;
        if (r == 1) continue;
        if (argv[i][0] == '-' && argv[i][1]) return cli_usage_unexpected("pack", argv[i]);
        if (bundle) return cli_usage_unexpected("pack", argv[i]);
        bundle = argv[i];
    }
    if (!bundle || !out || !strcmp(out, "-")) return cli_usage_error("pack", "BUNDLE and -o FILE are required");
    size_t n = strlen(out);
    bool zstd = !(n >= 4 && !strcmp(out + n - 4, ".tar"));
    cg_error err;
    cg_err_clear(&err);
    if (cg_bundle_check_output_path(out, bundle, &err) != 0) return cli_fail(&err);
    if (cg_archive_pack(bundle, out, zstd, &err) != 0) return cli_fail(&err);
    char hex[65];
    uint64_t size = 0;
    if (cg_sha256_file(out, false, hex, &size, &err) != 0) return cli_fail(&err);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_jv *o = cg_jv_obj(&a);
    cg_jv_obj_put(&a, o, "archive", cg_jv_str(&a, out));
    cg_jv_obj_put(&a, o, "format", cg_jv_str_nocopy(&a, zstd ? "tar.zst" : "tar"));
    cg_jv_obj_put(&a, o, "bytes", cg_jv_u64(&a, size));
    cg_jv_obj_put(&a, o, "sha256", cg_jv_str(&a, hex));
    int rc = cli_write_json(NULL, o);
    cg_arena_free(&a);
    return rc;
}
