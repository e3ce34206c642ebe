/* Unit tests for lib/bundle/dirnames: strcmp-sorted names without "." and
 * "..", hidden names kept, an empty directory, and the worded error for a
 * directory that cannot be read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bundle/dirnames.h"
#include "test_bundle_util.h"

static void test_sorted_names(void **st) {
    (void)st;
    char *tmp = tb_tempdir("bdirn");
    tb_write_str(tmp, "b", "x");
    tb_write_str(tmp, "B", "x");
    tb_write_str(tmp, ".hidden", "x");
    tb_write_str(tmp, "sub/inner", "x");
    tb_write_str(tmp, "a", "x");
    char **names = NULL;
    size_t n = 0;
    cg_error err;
    if (cg_dir_names_sorted(tmp, "test", &names, &n, &err) != 0) fail_msg("%s", err.msg);
    static const char *const want[] = {".hidden", "B", "a", "b", "sub"};
    assert_int_equal(n, 5);
    for (size_t i = 0; i < n; i++) assert_string_equal(names[i], want[i]);
    cg_dir_names_free(names, n);
    cg_rm_rf(tmp);
    free(tmp);
}

static void test_empty_directory(void **st) {
    (void)st;
    char *tmp = tb_tempdir("bdirn");
    char **names = NULL;
    size_t n = 7;
    cg_error err;
    assert_int_equal(cg_dir_names_sorted(tmp, "test", &names, &n, &err), 0);
    assert_int_equal(n, 0);
    cg_dir_names_free(names, n);
    cg_rm_rf(tmp);
    free(tmp);
}

static void test_missing_directory(void **st) {
    (void)st;
    char *tmp = tb_tempdir("bdirn");
    char *gone = tb_join(tmp, "gone");
    char **names = (char **)&gone; /* must be reset */
    size_t n = 3;
    cg_error err;
    assert_int_equal(cg_dir_names_sorted(gone, "Nsight", &names, &n, &err), -1);
    assert_null(names);
    assert_int_equal(n, 0);
    assert_int_equal(err.code, CG_EIO);
    char want[4200];
    snprintf(want, sizeof want, "read Nsight directory %s: No such file or directory", gone);
    assert_string_equal(err.msg, want);
    cg_rm_rf(tmp);
    free(gone);
    free(tmp);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sorted_names),
        cmocka_unit_test(test_empty_directory),
        cmocka_unit_test(test_missing_directory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
