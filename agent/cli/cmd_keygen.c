/* candle-graph keygen — writes an Ed25519 key pair (PKCS#8 PEM 0600 + SPKI PEM .pub). */
#include <stdio.h>
#include <string.h>

#include "bundle/signature.h"
#include "cli_util.h"

const char cg_cmd_keygen_help[] =
    "usage: candle-graph keygen --out KEYFILE\n"
    "Generate an Ed25519 signing key: KEYFILE (PKCS#8 PEM, mode 0600) and KEYFILE.pub (SubjectPublicKeyInfo PEM).\n"
    "  --out KEYFILE   private key path; neither KEYFILE nor KEYFILE.pub may exist\n"
    "Prints {\"key_id\", \"private_key\", \"public_key\"} (paths) as JSON.\n";

int cg_cmd_keygen(int argc, char **argv) {
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        int r = cli_take_value(argc, argv, &i, "--out", "-o", &out);
        if (r < 0) return 2;
        if (r == 0) return cli_usage_unexpected("keygen", argv[i]);
    }
    if (!out) return cli_usage_error("keygen", "--out KEYFILE is required");
    cg_error err;
    cg_err_clear(&err);
    unsigned char pk[CG_SIG_PUBLIC_BYTES];
    if (cg_sig_keygen_files(out, pk, &err) != 0) return cli_fail(&err);
    char key_id[CG_SIG_KEY_ID_HEX];
    cg_sig_key_id(pk, key_id);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_jv *o = cg_jv_obj(&a);
    cg_jv_obj_put(&a, o, "key_id", cg_jv_str(&a, key_id));
    cg_jv_obj_put(&a, o, "private_key", cg_jv_str(&a, out));
    cg_jv_obj_put(&a, o, "public_key", cg_jv_str(&a, cg_arena_printf(&a, "%s.pub", out)));
    int rc = cli_write_json(NULL, o);
    cg_arena_free(&a);
    return rc;
}
