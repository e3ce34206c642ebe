/* base/hmap: cg_hstr, the string-keyed map over cg_hmap — lookups by length
 * (keys with NUL bytes and prefixes of each other are distinct), put keeping
 * the first value and pointing at it, entries in insertion order through
 * growth, and 100,000 keys found again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/hmap.h"

static void test_keys_by_length(void **state) {
    (void)state;
    cg_hstr m;
    cg_hstr_init(&m, 0);
    static const char k[] = "ab\0cd";
    assert_true(cg_hstr_putn(&m, k, 5, 1, NULL));
    assert_true(cg_hstr_putn(&m, k, 2, 2, NULL)); /* "ab", a prefix */
    assert_true(cg_hstr_put(&m, "", 3, NULL));
    assert_int_equal(*cg_hstr_getn(&m, "ab\0cd", 5), 1);
    assert_int_equal(*cg_hstr_get(&m, "ab"), 2);
    assert_int_equal(*cg_hstr_get(&m, ""), 3);
    assert_null(cg_hstr_getn(&m, "ab\0c", 4));
    assert_null(cg_hstr_get(&m, "abc"));
    size_t *slot = NULL;
    assert_false(cg_hstr_put(&m, "ab", 9, &slot)); /* present: the first value stays */
    assert_int_equal(*slot, 2);
    (*slot)++;
    assert_int_equal(*cg_hstr_get(&m, "ab"), 3);
    assert_true(cg_hstr_put(&m, "new", 7, &slot));
    assert_int_equal(*slot, 7);
    assert_int_equal(m.n, 4);
    cg_hstr_free(&m);
    assert_int_equal(m.n, 0);
}

static void test_insertion_order_and_growth(void **state) {
    (void)state;
    enum { N = 100000 };
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_hstr m;
    cg_hstr_init(&m, 0);
    /* keys whose hash order differs from insertion order */
    for (size_t i = 0; i < N; i++) assert_true(cg_hstr_put(&m, cg_arena_printf(&a, "key-%zu", (i * 7919) % N), i, NULL));
    assert_int_equal(m.n, N);
    for (size_t i = 0; i < N; i++) {
        char want[32];
        snprintf(want, sizeof want, "key-%zu", (i * 7919) % N);
        assert_string_equal(m.ent[i].key, want); /* ent[] is insertion order */
        assert_int_equal(m.ent[i].value, i);
        size_t *v = cg_hstr_get(&m, want);
        assert_non_null(v);
        assert_int_equal(*v, i);
    }
    assert_null(cg_hstr_get(&m, "key-100000"));
    cg_hstr_free(&m);
    cg_arena_free(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys_by_length),
        cmocka_unit_test(test_insertion_order_and_growth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
