/* candle-graph verify-signature — checks a bundle and its <BUNDLE>.sig.json sidecar. */
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "bundle/signature.h"
#include "cli_util.h"

const char cg_cmd_verify_signature_help[] =
    "usage: candle-graph verify-signature BUNDLE [--public-key FILE] [-o FILE]\n"
    "Verify BUNDLE (bundle/1) and its detached Ed25519 signature <BUNDLE>.sig.json.\n"
    "  --public-key FILE  the key the signature must carry (SPKI PEM or base64 of 32 raw bytes);\n"
    "                     without it the key inside the sidecar is used\n"
    "  -o, --output FILE  write the JSON result to FILE instead of stdout\n"
    "Prints {\"status\": \"valid\", \"key_id\", \"public_key\", \"manifest_sha256\", \"verification\"}.\n";

int cg_cmd_verify_signature(int argc, char **argv) {
    const char *bundle = NULL, *pub = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        int r = cli_take_value(argc, argv, &i, "--public-key", NULL, &pub);
        if (r == 0) r = cli_take_value(argc, argv, &i, "--output", "-o", &out);
        if (r < 0) return 2;
        if (r == 1) continue;
        if (argv[i][0] == '-' && argv[i][1]) return cli_usage_unexpected("verify-signature", argv[i]);
        if (bundle) return cli_usage_unexpected("verify-signature", argv[i]);
        bundle = argv[i];
    }
    if (!bundle) return cli_usage_error("verify-signature", "BUNDLE is required");
    cg_error err;
    cg_err_clear(&err);
    cg_bundle_receipt receipt;
    cg_signature_info info;
    if (cg_bundle_verify_signature(bundle, pub, &receipt, &info, &err) != 0) return cli_fail(&err);
    char b64[sodium_base64_ENCODED_LEN(CG_SIG_PUBLIC_BYTES, sodium_base64_VARIANT_ORIGINAL)];
    sodium_bin2base64(b64, sizeof b64, info.public_key, CG_SIG_PUBLIC_BYTES, sodium_base64_VARIANT_ORIGINAL);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_jv *o = cg_jv_obj(&a);
    cg_jv_obj_put(&a, o, "status", cg_jv_str_nocopy(&a, "valid"));
    cg_jv_obj_put(&a, o, "key_id", cg_jv_str(&a, info.key_id));
    cg_jv_obj_put(&a, o, "public_key", cg_jv_str(&a, b64));
    cg_jv_obj_put(&a, o, "manifest_sha256", cg_jv_str(&a, info.manifest_sha256));
    cg_jv_obj_put(&a, o, "verification", cg_bundle_receipt_to_json(&a, &receipt));
    int rc = cli_write_json(out, o);
    cg_arena_free(&a);
    return rc;
}
