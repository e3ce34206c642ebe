/* Unit tests for lib/bundle/signature: PEM formats (RFC 8032 key vector),
 * public key forms, sidecar sign/verify and every refusal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_bundle_util.h"

#include "bundle/signature.h"

/* RFC 8032 §7.1 TEST 1 */
static const char SEED_HEX[] = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
static const char PK_HEX[] = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";

static void unhex(const char *h, unsigned char *out) {
    for (size_t i = 0; h[2 * i]; i++) {
        unsigned v;
        sscanf(h + 2 * i, "%2x", &v);
        out[i] = (unsigned char)v;
    }
}

static void test_pem_roundtrip_rfc8032(void **st) {
    (void)st;
    unsigned char seed[32], pk[32], got_seed[32], got_pk[32];
    unhex(SEED_HEX, seed);
    unhex(PK_HEX, pk);
    cg_buf pem = CG_BUF_INIT;
    cg_sig_private_pem(seed, &pem);
    assert_string_equal(pem.data, "-----BEGIN PRIVATE KEY-----\n"
                                  "MC4CAQAwBQYDK2VwBCIEIJ1hsZ3v/VpguoRK9JLsLMREScVpezJpGXA7rAMcrn9g\n"
                                  "-----END PRIVATE KEY-----\n");
    cg_error err;
    assert_int_equal(cg_sig_parse_private(pem.data, pem.len, got_seed, got_pk, &err), 0);
    assert_memory_equal(got_seed, seed, 32);
    assert_memory_equal(got_pk, pk, 32); /* derived public key matches the RFC */
    cg_buf_reset(&pem);
    cg_sig_public_pem(pk, &pem);
    assert_string_equal(pem.data, "-----BEGIN PUBLIC KEY-----\n"
                                  "MCowBQYDK2VwAyEA11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\n"
                                  "-----END PUBLIC KEY-----\n");
    assert_int_equal(cg_sig_parse_public(pem.data, pem.len, got_pk, &err), 0);
    assert_memory_equal(got_pk, pk, 32);
    const char *raw = "  11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\n";
    memset(got_pk, 0, 32);
    assert_int_equal(cg_sig_parse_public(raw, strlen(raw), got_pk, &err), 0);
    assert_memory_equal(got_pk, pk, 32);
    char kid[CG_SIG_KEY_ID_HEX], full[65];
    cg_sig_key_id(pk, kid);
    cg_sha256_hex(pk, 32, full);
    assert_int_equal(strlen(kid), 32);
    assert_memory_equal(kid, full, 32);
    cg_buf_free(&pem);
}

static void test_key_refusals(void **st) {
    (void)st;
    unsigned char seed[32], pk[32];
    cg_error err;
    const char *rsa_like = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VxBCIEIJ1hsZ3v/VpguoRK9JLsLMREScVpezJpGXA7rAMcrn9g\n-----END PRIVATE KEY-----\n";
    assert_int_equal(cg_sig_parse_private(rsa_like, strlen(rsa_like), seed, pk, &err), -1); /* OID 1.3.101.113 = Ed448 */
    assert_int_equal(err.code, CG_EPARSE);
    const char *nopem = "hello";
    assert_int_equal(cg_sig_parse_private(nopem, strlen(nopem), seed, pk, &err), -1);
    const char *short64 = "AAAA";
    assert_int_equal(cg_sig_parse_public(short64, strlen(short64), pk, &err), -1);
    const char *badpub = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VxAyEA11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\n-----END PUBLIC KEY-----\n";
    assert_int_equal(cg_sig_parse_public(badpub, strlen(badpub), pk, &err), -1);
}

static void test_sign_verify_manifest(void **st) {
    (void)st;
    unsigned char seed[32], pk[32], other_pk[32];
    unhex(SEED_HEX, seed);
    unhex(PK_HEX, pk);
    memset(other_pk, 7, 32);
    const char *manifest = "{\n  \"schema\": \"candle-graph/bundle/1\"\n}\n";
    cg_buf side = CG_BUF_INIT;
    cg_error err;
    assert_int_equal(cg_sig_sign_manifest(manifest, strlen(manifest), seed, &side, &err), 0);
    assert_non_null(strstr(side.data, "{\n  \"schema\": \"candle-graph/signature/1\",\n  \"algorithm\": \"ed25519\",\n  \"key_id\": \""));
    assert_int_equal(side.data[side.len - 1], '\n');
    cg_signature_info info;
    assert_int_equal(cg_sig_verify_manifest(manifest, strlen(manifest), side.data, side.len, pk, &info, &err), 0);
    assert_memory_equal(info.public_key, pk, 32);
    /* Ed25519 is deterministic: signing twice gives the same sidecar */
    cg_buf side2 = CG_BUF_INIT;
    assert_int_equal(cg_sig_sign_manifest(manifest, strlen(manifest), seed, &side2, &err), 0);
    assert_string_equal(side.data, side2.data);
    /* wrong expected key */
    assert_int_equal(cg_sig_verify_manifest(manifest, strlen(manifest), side.data, side.len, other_pk, NULL, &err), -1);
    assert_int_equal(err.code, CG_EVERIFY);
    /* a different manifest (digest mismatch) */
    const char *m2 = "{\n  \"schema\": \"candle-graph/bundle/2\"\n}\n";
    assert_int_equal(cg_sig_verify_manifest(m2, strlen(m2), side.data, side.len, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "signature covers manifest"));
    /* tamper: wrong schema, wrong algorithm, bad key_id, broken signature, missing field */
    struct { const char *from, *to, *want; } cases[] = {
        {"candle-graph/signature/1", "candle-graph/signature/2", "unsupported signature schema"},
        {"\"ed25519\"", "\"ed448\"", "unsupported signature algorithm"},
        {"\"key_id\": \"", "\"key_id\": \"0", "does not match its public key"},
        {"\"signature\": \"", "\"signature\": \"AAAA", "not base64 of 64 bytes"},
        {"\"public_key\"", "\"publickey\"", "`public_key` is missing"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cg_buf t = CG_BUF_INIT;
        const char *at = strstr(side.data, cases[i].from);
        assert_non_null(at);
        cg_buf_append(&t, side.data, (size_t)(at - side.data));
        cg_buf_puts(&t, cases[i].to);
        cg_buf_puts(&t, at + strlen(cases[i].from));
        if (cases[i].to[strlen(cases[i].to) - 1] == '0') {
            /* keep the value length plausible: drop one character after the insertion */
            char *q = strstr(t.data, cases[i].to) + strlen(cases[i].to);
            memmove(q, q + 1, strlen(q + 1) + 1);
            t.len--;
        }
        assert_int_equal(cg_sig_verify_manifest(manifest, strlen(manifest), t.data, t.len, NULL, NULL, &err), -1);
        if (!strstr(err.msg, cases[i].want)) fail_msg("case %zu: %s", i, err.msg);
        cg_buf_free(&t);
    }
    /* a flipped signature bit */
    char *sig = strstr(side.data, "\"signature\": \"") + 14;
    sig[0] = sig[0] == 'A' ? 'B' : 'A';
    assert_int_equal(cg_sig_verify_manifest(manifest, strlen(manifest), side.data, side.len, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "is not valid for this bundle manifest"));
    cg_buf_free(&side);
    cg_buf_free(&side2);
}

static void test_bundle_sign_files(void **st) {
    (void)st;
    char *tmp = tb_tempdir("bsig");
    char *root = tb_join(tmp, "b");
    char *key = tb_join(tmp, "key");
    tb_make_bundle(root, "run-sig");
    cg_error err;
    unsigned char pk[32];
    assert_int_equal(cg_sig_keygen_files(key, pk, &err), 0);
    struct stat stt;
    assert_int_equal(stat(key, &stt), 0);
    assert_int_equal(stt.st_mode & 0777, 0600);
    assert_int_equal(cg_sig_keygen_files(key, NULL, &err), -1);
    assert_int_equal(err.code, CG_EEXIST);
    char *sidecar = NULL;
    assert_int_equal(cg_bundle_sign(root, key, &sidecar, &err), 0);
    char *want = tb_join(tmp, "b.sig.json");
    char *real_want = realpath(want, NULL);
    assert_string_equal(sidecar, real_want);
    cg_bundle_receipt r;
    cg_signature_info info;
    char *pub = tb_join(tmp, "key.pub");
    assert_int_equal(cg_bundle_verify_signature(root, pub, &r, &info, &err), 0);
    assert_memory_equal(info.public_key, pk, 32);
    assert_string_equal(info.manifest_sha256, r.manifest_sha256);
    /* "b/" and "b/." name the same bundle and the same sidecar */
    char *slash = tb_join(root, ".");
    assert_int_equal(cg_bundle_verify_signature(slash, NULL, NULL, NULL, &err), 0);
    /* a bundle that does not verify is not signed */
    tb_write_str(root, "extra.txt", "x");
    assert_int_equal(cg_bundle_sign(root, key, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "undeclared regular file in bundle: extra.txt"));
    assert_int_equal(cg_bundle_verify_signature(root, NULL, NULL, NULL, &err), -1);
    cg_rm_rf(tmp);
    free(slash);
    free(pub);
    free(real_want);
    free(want);
    free(sidecar);
    free(key);
    free(root);
    free(tmp);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pem_roundtrip_rfc8032),
        cmocka_unit_test(test_key_refusals),
        cmocka_unit_test(test_sign_verify_manifest),
        cmocka_unit_test(test_bundle_sign_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
