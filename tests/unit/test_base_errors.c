/* base/error + base/json: the crate's failure text. A context chain renders as
 * anyhow 1.0.69's Debug form (what the crate's main prints after "Error: ");
 * an io::Error cause ends with " (os error N)"; cg_json_parse words and places
 * every syntax error as serde_json 1.0.87's SliceRead does (the expectations
 * were confirmed against the crate's own CLI on bundle.json texts), and the
 * bundle manifest's serde errors carry the reader's position (manifest_wire). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/json.h"
#include "bundle/manifest.h"

static char *chain_of(const cg_error *e) {
    static char out[CG_ERROR_MAX * 2];
    cg_buf b = CG_BUF_INIT;
    cg_err_write_chain(&b, e);
    snprintf(out, sizeof out, "%s", b.data ? b.data : "");
    cg_buf_free(&b);
    return out;
}

static void test_chain_layout(void **state) {
    (void)state;
    cg_error e;
    cg_err_clear(&e);
    cg_err_set(&e, CG_EPARSE, "bare message");
    assert_string_equal(chain_of(&e), "bare message");
    cg_err_context(&e, "outer %d", 1);
    assert_string_equal(chain_of(&e), "outer 1\n\nCaused by:\n    bare message");
    cg_err_context(&e, "outermost");
    assert_string_equal(chain_of(&e), "outermost\n\nCaused by:\n    0: outer 1\n    1: bare message");
    cg_err_set(&e, CG_EPARSE, "first line\nsecond line");
    cg_err_context(&e, "a");
    assert_string_equal(chain_of(&e), "a\n\nCaused by:\n    first line\n    second line");
    cg_err_context(&e, "b");
    assert_string_equal(chain_of(&e), "b\n\nCaused by:\n    0: a\n    1: first line\n       second line");
}

static void test_os_error(void **state) {
    (void)state;
    cg_error e;
    cg_err_clear(&e);
    cg_err_os(&e, ENOENT, "read bundle manifest %s", "b/bundle.json");
    assert_int_equal(e.code, CG_EIO);
    assert_string_equal(chain_of(&e), "read bundle manifest b/bundle.json\n\nCaused by:\n"
                                      "    No such file or directory (os error 2)");
    cg_err_os(&e, ENOSPC, "write x");
    assert_int_equal(e.code, CG_ENOSPC);
}

static const struct { const char *text, *msg; } syntax[] = {
    {"{\"x\": tru}", "expected ident at line 1 column 10"},
    {"{\"x\": nul", "EOF while parsing a value at line 1 column 9"},
    {"{\"x\": -}", "invalid number at line 1 column 8"},
    {"{\"x\": 1.}", "invalid number at line 1 column 9"},
    {"{\"x\": 1e+}", "invalid number at line 1 column 10"},
    {"{\"x\": 01}", "invalid number at line 1 column 8"},
    {"{\"x\": [1 2]}", "expected `,` or `]` at line 1 column 10"},
    {"{\"x\": [", "EOF while parsing a list at line 1 column 7"},
    {"{\"x\": 1,}", "trailing comma at line 1 column 9"},
    {"{\"x\": 1,", "EOF while parsing a value at line 1 column 8"},
    {"{\"x\" 1}", "expected `:` at line 1 column 6"},
    {"{\"x\"", "EOF while parsing an object at line 1 column 4"},
    {"{\"x\": \"a\\qb\"}", "invalid escape at line 1 column 10"},
    {"{\"x\": \"a\\u12g4\"}", "invalid escape at line 1 column 13"},
    {"{\"x\": \"ab", "EOF while parsing a string at line 1 column 9"},
    {"{1: 2}", "key must be a string at line 1 column 2"},
    {"{", "EOF while parsing an object at line 1 column 1"},
    {"[", "EOF while parsing a list at line 1 column 1"},
    {"{\n  \"x\": 1\n", "EOF while parsing an object at line 3 column 0"},
    {"\n\n", "EOF while parsing a value at line 3 column 0"},
    {"{\"a\": 1} x", "trailing characters at line 1 column 10"},
};

static void test_serde_syntax_positions(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof syntax / sizeof syntax[0]; i++) {
        cg_arena a;
        cg_arena_init(&a, 0);
        cg_error e;
        cg_err_clear(&e);
        assert_null(cg_json_parse(&a, syntax[i].text, strlen(syntax[i].text), NULL, &e));
        assert_string_equal(e.msg, syntax[i].msg);
        cg_arena_free(&a);
    }
}

static const struct { const char *text, *msg; } manifest[] = {
    {"{\"schema\":\"candle-graph/bundle/1\",\"files\":[]}", "missing field `run_id` at line 1 column 45"},
    {"{\"schema\":\"s\",\"run_id\":\"r\",\"run_id\":\"r\",\"files\":[]}", "duplicate field `run_id` at line 1 column 35"},
    {"{\"schema\":\"s\",\"run_id\":\"r\",\"files\":[{\"path\":\"a\",\"bytes\":\"1\",\"sha256\":\"x\"}]}",
     "invalid type: string \"1\", expected u64 at line 1 column 59"},
    {"{\"schema\":\"s\",\"run_id\":\"r\",\"files\":[{\"path\":\"a\",\"bytes\":-1,\"sha256\":\"x\"}]}",
     "invalid value: integer `-1`, expected u64 at line 1 column 58"},
    {"{\"schema\":\"candle-graph/bundle/1\",\"run_id\":\"r\",\"files\":{}}",
     "invalid type: map, expected a sequence at line 1 column 55"},
    {"{\n \"schema\":\"s\",\n \"run_id\":5,\n \"files\":[]}", "invalid type: integer `5`, expected a string at line 3 column 11"},
};

static void test_manifest_positions(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof manifest / sizeof manifest[0]; i++) {
        cg_arena a;
        cg_arena_init(&a, 0);
        cg_error e;
        cg_err_clear(&e);
        cg_bundle_manifest m;
        assert_int_equal(cg_bundle_manifest_parse(&a, manifest[i].text, strlen(manifest[i].text), &m, &e), -1);
        assert_string_equal(e.msg, manifest[i].msg);
        cg_arena_free(&a);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_layout),
        cmocka_unit_test(test_os_error),
        cmocka_unit_test(test_serde_syntax_positions),
        cmocka_unit_test(test_manifest_positions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
