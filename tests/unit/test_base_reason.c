/* test_base_reason.c — the reason table (base/reason.def) and cg_error's
 * reason: every code unique and equal to its enum name in lower case, a
 * category and a meaning each, lookups by code; cg_err_setr / cg_err_reason
 * set it, cg_err_context keeps it, cg_err_set and cg_err_clear reset it.
 * (The HTTP status of each reason: server/tests/test_server_errors.c.) */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "base/error.h"
#include "base/reason.h"

static const char *const enum_names[CG_R__COUNT] = {
    [CG_R_NONE] = "NONE",
#define CG_REASON(id, code, cat, retry, meaning) [CG_R_##id] = #id,
#include "base/reason.def"
#undef CG_REASON
};

static void test_table(void **state) {
    (void)state;
    for (unsigned i = CG_R_NONE + 1; i < CG_R__COUNT; i++) {
        cg_reason r = (cg_reason)i;
        const char *code = cg_reason_code(r);
        assert_non_null(code);
        char lower[64];
        size_t n = strlen(enum_names[i]);
        assert_true(n < sizeof lower);
        for (size_t k = 0; k <= n; k++) lower[k] = (char)tolower((unsigned char)enum_names[i][k]);
        assert_string_equal(code, lower); /* no typo between the enum and the JSON code */
        for (unsigned j = CG_R_NONE + 1; j < i; j++) assert_string_not_equal(code, cg_reason_code((cg_reason)j));
        assert_int_equal(cg_reason_from_code(code), r);
        cg_reason_category c = cg_reason_cat(r);
        assert_true(c > CG_CAT_NONE && c < CG_CAT__COUNT);
        assert_non_null(cg_reason_category_name(c));
        assert_true(cg_reason_meaning(r)[0] != '\0');
    }
    assert_string_equal(cg_reason_code(CG_R_NONE), "none");
    assert_int_equal(cg_reason_cat(CG_R_NONE), CG_CAT_NONE);
    assert_null(cg_reason_code(CG_R__COUNT));
    assert_int_equal(cg_reason_cat(CG_R__COUNT), CG_CAT_NONE);
    assert_false(cg_reason_retryable(CG_R__COUNT));
    assert_null(cg_reason_category_name(CG_CAT__COUNT));
    assert_int_equal(cg_reason_from_code("no_such_code"), CG_R_NONE);
    assert_int_equal(cg_reason_from_code("none"), CG_R_NONE);
    assert_int_equal(cg_reason_from_code(NULL), CG_R_NONE);
}

static void test_error_carries_reason(void **state) {
    (void)state;
    cg_error e;
    cg_err_clear(&e);
    assert_int_equal(e.reason, CG_R_NONE);
    assert_int_equal(cg_err_setr(&e, CG_R_UNSAFE_PATH, CG_EVERIFY, "unsafe path in archive: %s", "../x"), -1);
    assert_int_equal(e.reason, CG_R_UNSAFE_PATH);
    assert_int_equal(e.code, CG_EVERIFY);
    assert_string_equal(e.msg, "unsafe path in archive: ../x");
    cg_err_context(&e, "unpack %s", "a.tar");
    assert_int_equal(e.reason, CG_R_UNSAFE_PATH); /* context keeps the reason */
    assert_string_equal(e.msg, "unpack a.tar: unsafe path in archive: ../x");
    e.limit = "archive";
    cg_err_set(&e, CG_EIO, "write: %s", "EIO");
    assert_int_equal(e.reason, CG_R_NONE); /* a new error starts without reason or limit */
    assert_null(e.limit);
    assert_int_equal(cg_err_reason(&e, CG_R_DIGEST_MISMATCH), -1);
    assert_int_equal(e.reason, CG_R_DIGEST_MISMATCH);
    assert_int_equal(e.code, CG_EIO);
    cg_err_clear(&e);
    assert_int_equal(e.reason, CG_R_NONE);
    assert_int_equal(cg_err_setr(NULL, CG_R_NOT_FOUND, CG_EINVAL, "x"), -1); /* err may be NULL */
    assert_int_equal(cg_err_reason(NULL, CG_R_NOT_FOUND), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_error_carries_reason),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
