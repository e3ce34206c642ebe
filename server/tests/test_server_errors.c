/* test_server_errors.c — the one status mapping of the reasons table
 * (server/errors.c; the table itself: tests/unit/test_base_reason.c): every
 * reason walked — a status consistent with its category (input never 5xx;
 * store/dependency 5xx), retry only for capacity and our own store —
 * the answers the API contract fixes, the mapping of library errors, and
 * docs/api.md listing exactly the generated table, openapi.json listing every
 * code. Runs in the source dir. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "base/fs.h"
#include "srv.h"

static void test_every_reason(void **state) {
    (void)state;
    assert_true(CG_R__COUNT > 40);
    for (unsigned i = CG_R_NONE + 1; i < CG_R__COUNT; i++) {
        cg_reason r = (cg_reason)i;
        const char *code = cg_reason_code(r);
        cg_reason_category c = cg_reason_cat(r);
        assert_null(strchr(cg_reason_meaning(r), '|')); /* a Markdown table cell */
        unsigned st = srv_reason_status(r);
        switch (c) {
        case CG_CAT_INPUT: assert_true(st >= 400 && st < 500 && st != 401 && st != 403 && st != 429); break;
        case CG_CAT_VERIFY: assert_int_equal(st, 422); break;
        case CG_CAT_AUTH: assert_true(st == 401 || st == 403); break;
        case CG_CAT_CONFLICT: assert_int_equal(st, 409); break;
        case CG_CAT_LIMIT: assert_true(st == 413 || st == 414 || st == 431); break;
        case CG_CAT_OVERLOAD: assert_int_equal(st, 429); break;
        case CG_CAT_UNSUPPORTED: assert_int_equal(st, 501); break;
        case CG_CAT_INTERNAL: assert_int_equal(st, 500); break;
        case CG_CAT_DEPENDENCY: assert_int_equal(st, 503); break;
        case CG_CAT_STORE: assert_int_equal(st, 507); break;
        default: fail_msg("reason %s has no category", code);
        }
        /* a retry can only help when our capacity or our store was the cause */
        bool ours = c == CG_CAT_OVERLOAD || c == CG_CAT_DEPENDENCY || c == CG_CAT_STORE;
        if (cg_reason_retryable(r)) assert_true(ours);
        if (c == CG_CAT_OVERLOAD || c == CG_CAT_DEPENDENCY) assert_true(cg_reason_retryable(r));
    }
    assert_int_equal(srv_reason_status(CG_R_NONE), 500);
    assert_int_equal(srv_reason_status(CG_R__COUNT), 500);
}

/* The statuses clients and the integration tests rely on (API.md). */
static void test_contract_statuses(void **state) {
    (void)state;
    static const struct {
        const char *code;
        unsigned status;
    } want[] = {
        {"bad_request", 400},
        {"malformed_signature", 400},
        {"duplicate_key", 400},
        {"unauthorized", 401},
        {"signer_revoked", 403},
        {"not_found", 404},
        {"method_not_allowed", 405},
        {"run_id_conflict", 409},
        {"payload_too_large", 413},
        {"uri_too_long", 414},
        {"unsupported_media_type", 415},
        {"semantic_mismatch", 422},
        {"ineligible", 422},
        {"invalid_run_id", 422},
        {"too_many_requests", 429},
        {"too_many_parameters", 431},
        {"internal", 500},
        {"not_implemented", 501},
        {"unavailable", 503},
        {"insufficient_storage", 507},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        cg_reason r = cg_reason_from_code(want[i].code);
        assert_int_not_equal(r, CG_R_NONE);
        assert_int_equal(srv_reason_status(r), want[i].status);
    }
    assert_true(cg_reason_retryable(CG_R_TOO_MANY_REQUESTS));
    assert_true(cg_reason_retryable(CG_R_UNAVAILABLE));
    assert_false(cg_reason_retryable(CG_R_BAD_REQUEST));
}

/* A library error answers its own reason; a local failure 503 (507 when full). */
static void test_reason_of_error(void **state) {
    (void)state;
    cg_error e;
    cg_err_clear(&e);
    cg_err_setr(&e, CG_R_UNSAFE_PATH, CG_EVERIFY, "unsafe path in archive: %s", "../x");
    assert_int_equal(srv_reason_of(&e), CG_R_UNSAFE_PATH);
    cg_err_set(&e, CG_EIO, "write: %s", "EIO");
    assert_int_equal(srv_reason_of(&e), CG_R_UNAVAILABLE);
    cg_err_set(&e, CG_ENOSPC, "write: %s", "ENOSPC");
    assert_int_equal(srv_reason_of(&e), CG_R_INSUFFICIENT_STORAGE);
    assert_int_equal(srv_reason_of(NULL), CG_R_UNAVAILABLE);
}

/* docs/api.md carries the generated table (candle-graph-server errors) verbatim. */
static void test_doc_lists_every_code(void **state) {
    (void)state;
    cg_error err;
    size_t len;
    char *doc = cg_read_file("docs/api.md", 1u << 22, &len, &err);
    if (!doc) fail_msg("docs/api.md: %s", err.msg);
    cg_buf b = CG_BUF_INIT;
    srv_reasons_markdown(&b);
    if (!strstr(doc, b.data))
        fail_msg("docs/api.md \"Errors\" is not the table of `candle-graph-server errors`; regenerate it:\n%s", b.data);
    for (unsigned i = CG_R_NONE + 1; i < CG_R__COUNT; i++) {
        char cell[80];
        snprintf(cell, sizeof cell, "| `%s` |", cg_reason_code((cg_reason)i));
        assert_non_null(strstr(doc, cell));
    }
    cg_buf_free(&b);
    cg_free(doc);
}

/* openapi.json's Error.code enum is exactly the table's codes. */
static void test_openapi_lists_every_code(void **state) {
    (void)state;
    cg_error err;
    size_t len;
    char *text = cg_read_file("server/openapi.json", 1u << 24, &len, &err);
    if (!text) fail_msg("server/openapi.json: %s", err.msg);
    cg_arena a;
    cg_arena_init(&a, 0);
    const cg_jv *v = cg_json_parse(&a, text, len, NULL, &err);
    assert_non_null(v);
    const char *const keys[] = {"components", "schemas", "Error", "properties", "error", "properties", "code", "enum"};
    for (size_t i = 0; v && i < sizeof keys / sizeof *keys; i++) v = cg_jv_get(v, keys[i]);
    assert_non_null(v);
    assert_int_equal(cg_jv_len(v), CG_R__COUNT - 1);
    bool seen[CG_R__COUNT] = {false};
    for (size_t i = 0; i < cg_jv_len(v); i++) {
        const char *code = cg_jv_as_str(cg_jv_at(v, i));
        cg_reason r = cg_reason_from_code(code);
        if (r == CG_R_NONE) fail_msg("openapi.json lists %s, which is no reason", code ? code : "(not a string)");
        assert_false(seen[r]);
        seen[r] = true;
    }
    cg_arena_free(&a);
    cg_free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_reason),
        cmocka_unit_test(test_contract_statuses),
        cmocka_unit_test(test_reason_of_error),
        cmocka_unit_test(test_doc_lists_every_code),
        cmocka_unit_test(test_openapi_lists_every_code),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
