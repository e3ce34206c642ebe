/* candle-graph sign — writes <BUNDLE>.sig.json (candle-graph/signature/1) beside a verified bundle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fs.h"
#include "bundle/signature.h"
#include "cli_util.h"

const char cg_cmd_sign_help[] =
    "usage: candle-graph sign BUNDLE --key KEYFILE\n"
    "Verify BUNDLE and write its detached Ed25519 signature to <BUNDLE>.sig.json beside the directory.\n"
    "  --key KEYFILE   Ed25519 private key (PKCS#8 PEM, as written by keygen or openssl genpkey)\n"
    "Prints the signature sidecar JSON.\n";

int cg_cmd_sign(int argc, char **argv) {
    const char *bundle = NULL, *key = NULL;
    for (int i = 1; i < argc; i++) {
        int r = cli_take_value(argc, argv, &i, "--key", NULL, &key);
        if (r < 0) return 2;
        if (r == 1) continue;
        if (argv[i][0] == '-' && argv[i][1]) return cli_usage_unexpected("sign", argv[i]);
        if (bundle) return cli_usage_unexpected("sign", argv[i]);
        bundle = argv[i];
    }
    if (!bundle || !key) return cli_usage_error("sign", "BUNDLE and --key KEYFILE are required");
    cg_error err;
    cg_err_clear(&err);
    char *sidecar = NULL;
    if (cg_bundle_sign(bundle, key, &sidecar, &err) != 0) return cli_fail(&err);
    size_t len = 0;
    char *text = cg_read_file(sidecar, 0, &len, &err);
    cg_free(sidecar);
    if (!text) return cli_fail(&err);
    int rc = cli_write_bytes(NULL, text, len);
    cg_free(text);
    return rc;
}
