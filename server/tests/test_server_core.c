/* test_server_core.c — unit tests of the server core: route matching (params,
 * the rest-of-path {path}, 404 vs 405 with Allow), scope parsing, public-key
 * parsing and key ids, Range, the derived-view limits. The reasons table: test_server_errors.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "srv.h"
#include "srv_derived.h"

static void test_route_match(void **state) {
    (void)state;
    cg_arena a;
    cg_arena_init(&a, 0);
    const char *p[SRV_MAX_PARAMS] = {0};
    char allow[64];
    int i = srv_route_match(&a, "GET", "/bundles/abcdef012345/files/nsight/x.csv", p, allow, sizeof allow);
    assert_true(i >= 0);
    assert_string_equal(srv_routes[i].pattern, "/bundles/{id}/files/{path}");
    assert_string_equal(p[0], "abcdef012345");
    assert_string_equal(p[1], "nsight/x.csv");
    i = srv_route_match(&a, "GET", "/bundles/abc", p, allow, sizeof allow);
    assert_string_equal(srv_routes[i].pattern, "/bundles/{id}");
    assert_int_equal(srv_route_match(&a, "GET", "/bundles/", p, allow, sizeof allow), -1);
    assert_int_equal(srv_route_match(&a, "GET", "/bundles/abc/files/", p, allow, sizeof allow), -1);
    assert_int_equal(srv_route_match(&a, "GET", "/nope", p, allow, sizeof allow), -1);
    assert_int_equal(srv_route_match(&a, "PUT", "/bundles", p, allow, sizeof allow), -2);
    assert_non_null(strstr(allow, "GET"));
    assert_non_null(strstr(allow, "POST"));
    assert_int_equal(srv_route_match(&a, "DELETE", "/keys/k1", p, allow, sizeof allow) >= 0, 1);
    assert_string_equal(p[0], "k1");
    cg_arena_free(&a);
}

static void test_routes_have_handlers(void **state) {
    (void)state;
    for (size_t i = 0; i < srv_n_routes; i++) {
        assert_non_null(srv_routes[i].handler);
        assert_true(srv_routes[i].pattern[0] == '/');
    }
}

static void test_scopes(void **state) {
    (void)state;
    bool bad;
    assert_int_equal(srv_scopes_parse_csv("upload,read", &bad), SRV_SCOPE_UPLOAD | SRV_SCOPE_READ);
    assert_false(bad);
    srv_scopes_parse_csv("upload,root", &bad);
    assert_true(bad);
    srv_scopes_parse_csv("", &bad);
    assert_true(bad);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, srv_scopes_json(&a, SRV_SCOPE_READ | SRV_SCOPE_ADMIN | SRV_SCOPE_UPLOAD), false);
    assert_string_equal(b.data, "[\"admin\",\"upload\",\"read\"]");
    cg_error err = {0};
    cg_jv *arr = cg_json_parse(&a, "[\"read\",\"bogus\"]", 16, NULL, &err);
    assert_non_null(arr);
    srv_scopes_parse_list(arr, &bad);
    assert_true(bad);
    cg_buf_free(&b);
    cg_arena_free(&a);
}

static void test_pubkey(void **state) {
    (void)state;
    unsigned char pk[32], sk[64], got[32];
    crypto_sign_keypair(pk, sk);
    char b64[64];
    sodium_bin2base64(b64, sizeof b64, pk, 32, sodium_base64_VARIANT_ORIGINAL);
    cg_error err = {0};
    assert_int_equal(srv_pubkey_parse(b64, got, &err), 0);
    assert_memory_equal(got, pk, 32);
    unsigned char der[44] = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00};
    memcpy(der + 12, pk, 32);
    char d64[80], pem[200];
    sodium_bin2base64(d64, sizeof d64, der, sizeof der, sodium_base64_VARIANT_ORIGINAL);
    snprintf(pem, sizeof pem, "-----BEGIN PUBLIC KEY-----\n%s\n-----END PUBLIC KEY-----\n", d64);
    memset(got, 0, sizeof got);
    assert_int_equal(srv_pubkey_parse(pem, got, &err), 0);
    assert_memory_equal(got, pk, 32);
    assert_int_equal(srv_pubkey_parse("bm90IGEga2V5", got, &err), -1);
    char kid[33], kid2[33];
    srv_key_id(pk, kid);
    assert_int_equal(strlen(kid), 32);
    unsigned char h[32];
    crypto_hash_sha256(h, pk, 32);
    cg_hex(h, 16, kid2);
    assert_string_equal(kid, kid2);
}

static void test_range(void **state) {
    (void)state;
    uint64_t off, len;
    assert_true(srv_parse_range("bytes=0-9", 100, &off, &len));
    assert_int_equal(off, 0);
    assert_int_equal(len, 10);
    assert_true(srv_parse_range("bytes=90-", 100, &off, &len));
    assert_int_equal(len, 10);
    assert_true(srv_parse_range("bytes=-5", 100, &off, &len));
    assert_int_equal(off, 95);
    assert_true(srv_parse_range("bytes=50-500", 100, &off, &len));
    assert_int_equal(len, 50);
    assert_false(srv_parse_range("bytes=100-", 100, &off, &len));
    assert_false(srv_parse_range("bytes=5-1", 100, &off, &len));
    assert_false(srv_parse_range("bytes=0-1,3-4", 100, &off, &len));
    assert_false(srv_parse_range("items=0-1", 100, &off, &len));
    assert_false(srv_parse_range("bytes=-0", 100, &off, &len));
    assert_false(srv_parse_range("bytes=99999999999999999999999-", 100, &off, &len));
    assert_false(srv_parse_range(NULL, 100, &off, &len));
}

/* The store layer's rule made observable: an answer queued while the thread
 * holds a pooled connection is counted, one queued after it went back is not. */
static void test_pool_held_at_reply(void **state) {
    (void)state;
    unsigned long before = srv_pool_held_at_reply();
    assert_int_equal(srv_pool_held_here(), 0);
    srv_pool_note_reply();
    assert_int_equal(srv_pool_held_at_reply(), before);
    srv_pool_held_adjust(1); /* as srv_pool_get does */
    srv_pool_note_reply();
    assert_int_equal(srv_pool_held_at_reply(), before + 1);
    srv_pool_held_adjust(-1); /* as srv_pool_put does */
    srv_pool_note_reply();
    assert_int_equal(srv_pool_held_at_reply(), before + 1);
    assert_int_equal(srv_pool_held_here(), 0);
}

/* The value of counter name in srv_pool_metrics' text. */
static unsigned long pool_counter(const char *name) {
    cg_buf b = CG_BUF_INIT;
    srv_pool_metrics(&b);
    char key[96];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *at = strstr(b.data, key);
    unsigned long v = at ? strtoul(at + strlen(key), NULL, 10) : ~0ul;
    cg_buf_free(&b);
    return v;
}

/* The sweep's rule made observable: a compute section entered while the
 * thread holds a pooled connection is counted as held, one entered after it
 * went back is counted only as a section. */
static void test_pool_held_while_computing(void **state) {
    (void)state;
    unsigned long sections = pool_counter("cg_db_pool_compute_sections_total");
    unsigned long held = pool_counter("cg_db_pool_held_while_computing_total");
    assert_int_equal(held, 0);
    srv_pool_note_compute();
    assert_int_equal(pool_counter("cg_db_pool_compute_sections_total"), sections + 1);
    assert_int_equal(pool_counter("cg_db_pool_held_while_computing_total"), held);
    srv_pool_held_adjust(1); /* as srv_pool_get does */
    srv_pool_note_compute();
    srv_pool_held_adjust(-1);
    assert_int_equal(pool_counter("cg_db_pool_compute_sections_total"), sections + 2);
    assert_int_equal(pool_counter("cg_db_pool_held_while_computing_total"), held + 1);
}

/* Derived views (issue 14): a trace is loaded up to the server's decoded limit
 * (a 5M-record trace of about 1 GB passes the 8 GiB default; the old 256 MiB
 * cap refused it), the view limit scales with the trace above its 512 MiB
 * floor, and only traces over SRV_DERIVED_HEAVY_BYTES take the heavy gate. */
static void test_derived_limits(void **state) {
    (void)state;
    const uint64_t gib = (uint64_t)1 << 30, five_m = 1037000000;
    assert_true(srv_derived_trace_fits(five_m, 8 * gib));
    assert_true(srv_derived_trace_fits(8 * gib, 8 * gib));
    assert_false(srv_derived_trace_fits(8 * gib + 1, 8 * gib));
    assert_false(srv_derived_trace_fits(five_m, 512u << 20)); /* a server run with a lower limit */
    assert_true(srv_derived_view_limit(0) == SRV_DERIVED_MAX_BYTES);
    assert_true(srv_derived_view_limit(1u << 20) == SRV_DERIVED_MAX_BYTES);
    assert_true(srv_derived_view_limit(five_m) == (uint64_t)SRV_DERIVED_OUT_RATIO * five_m);
    assert_true(srv_derived_view_limit(UINT64_MAX) == UINT64_MAX); /* saturates */
    assert_int_equal(srv_heavy_enter(SRV_DERIVED_HEAVY_BYTES, 1), 0); /* light: no gate */
    int t = srv_heavy_enter(five_m, 1);
    assert_int_equal(t, 1);
    assert_int_equal(srv_heavy_enter(five_m, 1), -1); /* a second heavy build waits, then gives up */
    assert_int_equal(srv_heavy_enter(1u << 20, 1), 0); /* light builds never wait */
    srv_heavy_leave(t);
    t = srv_heavy_enter(five_m, 1);
    assert_int_equal(t, 1);
    srv_heavy_leave(t);
}

int main(void) {
    if (sodium_init() < 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_route_match), cmocka_unit_test(test_routes_have_handlers),
        cmocka_unit_test(test_derived_limits),
        cmocka_unit_test(test_scopes),      cmocka_unit_test(test_pubkey),
        cmocka_unit_test(test_range),       cmocka_unit_test(test_pool_held_at_reply),
        cmocka_unit_test(test_pool_held_while_computing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
