/* Unit tests for lib/base/json: parser limits, number kinds, serde_json-style output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"

static char *roundtrip(cg_arena *a, const char *in, bool pretty) {
    cg_error err;
    cg_jv *v = cg_json_parse(a, in, strlen(in), NULL, &err);
    if (!v) return NULL;
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, v, pretty);
    char *s = cg_arena_strdup(a, b.data);
    cg_buf_free(&b);
    return s;
}

static void expect_f64(double d, const char *want) {
    cg_buf b = CG_BUF_INIT;
    cg_json_write_f64(&b, d);
    assert_string_equal(b.data, want);
    cg_buf_free(&b);
}

static void test_floats_like_serde(void **st) {
    (void)st;
    expect_f64(1.0, "1.0");
    expect_f64(0.71, "0.71");
    expect_f64(0.125, "0.125");
    expect_f64(-2.5, "-2.5");
    expect_f64(1e-7, "1e-7");
    expect_f64(1.5e-7, "1.5e-7");
    expect_f64(0.0001, "0.0001");
    expect_f64(1e15, "1000000000000000.0");
    expect_f64(1e16, "1e16");
    expect_f64(1.2345e20, "1.2345e20");
    expect_f64(123456.789, "123456.789");
    expect_f64(0.1 + 0.2, "0.30000000000000004");
    expect_f64(82.6, "82.6");
    expect_f64(0.0, "0.0");
    expect_f64(-0.0, "-0.0");
    expect_f64(5e-324, "5e-324");
    expect_f64(1.7976931348623157e308, "1.7976931348623157e308");
}

/* Significant digits of a written float ("1.25e-7" -> 3, "1000.0" -> 1). */
static int sig_digits(const char *s) {
    char d[40];
    int n = 0;
    for (const char *p = s; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9' && (n || *p != '0')) d[n++] = *p;
    while (n > 1 && d[n - 1] == '0') n--;
    return n;
}

/* Shortest round trip for any double (normal, subnormal, both signs): the
 * text reads back as the value, and no spelling with one digit fewer does. */
static void test_floats_shortest_round_trip(void **st) {
    (void)st;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t bits = x;
        if (i % 4 == 1) bits &= 0x800fffffffffffffull; /* subnormals */
        if (i % 4 == 2) bits = (bits & 0x800fffffffffffffull) | (uint64_t)(1020 + x % 8) << 52; /* near 1 */
        double d;
        memcpy(&d, &bits, sizeof d);
        if (!isfinite(d) || d == 0) continue;
        cg_buf b = CG_BUF_INIT;
        cg_json_write_f64(&b, d);
        if (strtod(b.data, NULL) != d) fail_msg("%s does not read back as %.17g", b.data, d);
        int k = sig_digits(b.data);
        if (k > 1) {
            char shorter[40];
            snprintf(shorter, sizeof shorter, "%.*e", k - 2, d);
            if (strtod(shorter, NULL) == d) fail_msg("%s is not the shortest: %s reads back too", b.data, shorter);
        }
        cg_buf_free(&b);
    }
    expect_f64(0.1 + 0.2, "0.30000000000000004");
    expect_f64(1.0 / 3.0, "0.3333333333333333");
    expect_f64(1e23, "1e23");
    expect_f64(-1.7976931348623157e308, "-1.7976931348623157e308");
}

static void test_roundtrip_compact_and_pretty(void **st) {
    (void)st;
    cg_arena a;
    cg_arena_init(&a, 0);
    assert_string_equal(roundtrip(&a, " {\"b\":1,\"a\":[1,2.5,-3,true,null,\"x\\u00e9\\n\"]} ", false),
                        "{\"b\":1,\"a\":[1,2.5,-3,true,null,\"xé\\n\"]}");
    assert_string_equal(roundtrip(&a, "{\"a\":[],\"b\":{},\"c\":[1,{\"d\":2}]}", true),
                        "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    1,\n    {\n      \"d\": 2\n    }\n  ]\n}");
    assert_string_equal(roundtrip(&a, "18446744073709551615", false), "18446744073709551615");
    assert_string_equal(roundtrip(&a, "-9223372036854775808", false), "-9223372036854775808");
    assert_string_equal(roundtrip(&a, "\"\\u001f/\\ud83d\\ude00\"", false), "\"\\u001f/😀\"");
    cg_arena_free(&a);
}

static void test_parse_errors_and_limits(void **st) {
    (void)st;
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_error err;
    const char *bad[] = {"{", "[1,]", "01", "\"abc", "{\"a\" 1}", "nul", "1 2", "\"\\ud800\"", "\"a\x01\"", "\"\xff\"", "1e999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cg_err_clear(&err);
        assert_null(cg_json_parse(&a, bad[i], strlen(bad[i]), NULL, &err));
        assert_int_equal(err.code, CG_EPARSE);
    }
    cg_json_limits lim;
    cg_json_limits_default(&lim);
    lim.max_depth = 3;
    assert_non_null(cg_json_parse(&a, "[[[1]]]", 7, &lim, &err));
    assert_null(cg_json_parse(&a, "[[[[1]]]]", 9, &lim, &err));
    assert_int_equal(err.code, CG_ELIMIT);
    lim.max_string = 3;
    assert_null(cg_json_parse(&a, "\"abcd\"", 6, &lim, &err));
    assert_int_equal(err.code, CG_ELIMIT);
    cg_arena_free(&a);
}

/* Each class of parse failure carries its reason, set by the parser itself:
 * syntax malformed_json (no limit), each limit payload_too_large naming it. */
static void test_parse_reasons(void **st) {
    (void)st;
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_error err;
    const char *bad[] = {"{", "[1,]", "01", "\"abc", "nul", "1 2", "\"\\ud800\"", "\"\xff\"", "1e999", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cg_err_clear(&err);
        assert_null(cg_json_parse(&a, bad[i], strlen(bad[i]), NULL, &err));
        assert_int_equal(err.reason, CG_R_MALFORMED_JSON);
        assert_null(err.limit);
    }
    const struct { const char *text; unsigned depth; size_t string, items; const char *limit; } over[] = {
        {"[[[[1]]]]", 3, 100, 100, CG_JSON_LIMIT_DEPTH},
        {"{\"a\":{\"b\":{\"c\":{}}}}", 3, 100, 100, CG_JSON_LIMIT_DEPTH},
        {"\"abcd\"", 8, 3, 100, CG_JSON_LIMIT_STRING},
        {"{\"abcd\":1}", 8, 3, 100, CG_JSON_LIMIT_STRING},
        {"\"a\\u0062cd\"", 8, 3, 100, CG_JSON_LIMIT_STRING},
        {"[1,2,3]", 8, 100, 2, CG_JSON_LIMIT_ITEMS},
        {"{\"a\":1,\"b\":2,\"c\":3}", 8, 100, 2, CG_JSON_LIMIT_ITEMS},
    };
    for (size_t i = 0; i < sizeof over / sizeof over[0]; i++) {
        cg_json_limits lim = {over[i].depth, over[i].string, over[i].items};
        cg_err_clear(&err);
        assert_null(cg_json_parse(&a, over[i].text, strlen(over[i].text), &lim, &err));
        assert_int_equal(err.code, CG_ELIMIT);
        assert_int_equal(err.reason, CG_R_PAYLOAD_TOO_LARGE);
        assert_non_null(err.limit);
        assert_string_equal(err.limit, over[i].limit);
    }
    cg_arena_free(&a);
}

static void test_value_equality(void **st) {
    (void)st;
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_error err;
    cg_jv *x = cg_json_parse(&a, "{\"a\":1,\"b\":[1.5]}", 17, NULL, &err);
    cg_jv *y = cg_json_parse(&a, "{\"b\":[1.5],\"a\":1}", 17, NULL, &err);
    cg_jv *z = cg_json_parse(&a, "{\"b\":[1.5],\"a\":1.0}", 19, NULL, &err);
    assert_true(cg_jv_equal(x, y));
    assert_false(cg_jv_equal(x, z)); /* integer 1 is not real 1.0, as in serde_json */
    cg_arena_free(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_floats_like_serde),
        cmocka_unit_test(test_floats_shortest_round_trip),
        cmocka_unit_test(test_roundtrip_compact_and_pretty),
        cmocka_unit_test(test_parse_errors_and_limits),
        cmocka_unit_test(test_parse_reasons),
        cmocka_unit_test(test_value_equality),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
