/* base/alloc: overflow-checked sizes, geometric growth, and the OOM policy —
 * the fallible family returns NULL, the infallible one asks the handler and
 * retries once, or exits 1 with one message (checked in forked children; an
 * overflowing size stands in for an exhausted heap). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fault.h"
#include "base/num.h"

static void test_try_overflow_is_null(void **st) {
    (void)st;
    assert_null(cg_try_alloc(SIZE_MAX / 2, 3));
    assert_null(cg_try_zalloc(3, SIZE_MAX / 2));
    char *p = cg_try_alloc(0, 8); /* zero-sized: one byte, never NULL */
    assert_non_null(p);
    assert_null(cg_try_realloc(p, SIZE_MAX, 2));
    free(p); /* p untouched by the failed realloc */
    assert_null(cg_try_strndup("x", SIZE_MAX));
}

static void test_grow(void **st) {
    (void)st;
    size_t cap = 0;
    int *v = cg_try_grow(NULL, &cap, 1, sizeof *v);
    assert_non_null(v);
    assert_int_equal(cap, 16);
    int *same = cg_try_grow(v, &cap, 16, sizeof *v);
    assert_ptr_equal(same, v);
    v = cg_xgrow(v, &cap, 17, sizeof *v);
    assert_int_equal(cap, 32);
    v = cg_xgrow(v, &cap, 100, sizeof *v);
    assert_int_equal(cap, 100);
    size_t before = cap;
    assert_null(cg_try_grow(v, &cap, SIZE_MAX, sizeof *v));
    assert_int_equal(cap, before); /* unchanged on failure */
    free(v);
    char *d = cg_try_strndup("abcdef", 3);
    assert_string_equal(d, "abc");
    free(d);
    char *x = cg_xstrdup("kept");
    assert_string_equal(x, "kept");
    free(x);
}

static int handler_calls;
static bool releasing_handler(size_t bytes) {
    (void)bytes;
    handler_calls++;
    return true;
}

/* Runs body in a child; returns its exit status (-1 when it did not exit) and
 * what it wrote to stderr in err (NUL-terminated). */
static int in_child(void (*body)(void), char *err, size_t errsz) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO);
        body();
        _exit(0);
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < errsz && (r = read(fds[0], err + n, errsz - 1 - n)) > 0) n += (size_t)r;
    err[n] = '\0';
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void exhaust_without_handler(void) {
    cg_set_oom_handler(NULL);
    free(cg_xalloc(SIZE_MAX / 2, 4));
}

static void exhaust_with_handler(void) {
    cg_set_oom_handler(releasing_handler);
    free(cg_xzalloc(SIZE_MAX / 4, 8)); /* an overflowing size is never retried */
    _exit(handler_calls == 0 ? 3 : 4);
}

static void test_infallible_exits_1_with_message(void **st) {
    (void)st;
    char err[256];
    assert_int_equal(in_child(exhaust_without_handler, err, sizeof err), 1);
    assert_string_equal(err, "candle-graph: out of memory\n");
    assert_int_equal(in_child(exhaust_with_handler, err, sizeof err), 1);
    assert_string_equal(err, "candle-graph: out of memory\n");
}

static void test_handler_is_swapped(void **st) {
    (void)st;
    assert_null(cg_set_oom_handler(releasing_handler));
    assert_ptr_equal(cg_set_oom_handler(NULL), releasing_handler);
}

/* Re-executed with CG_FAULT=alloc:1:ENOMEM (read by a constructor): the first
 * counted allocation fails, the handler is asked, and the retry succeeds. */
static int retry_case(void) {
    cg_fault_thread_enable();
    cg_set_oom_handler(releasing_handler);
    char *p = cg_xalloc(10, 1);
    p[9] = 'x';
    free(p);
    return handler_calls == 1 && cg_fault_calls(CG_FAULT_ALLOC) == 1 ? 0 : 5;
}

static void test_handler_retry_after_injected_failure(void **st) {
    (void)st;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("CG_FAULT", "alloc:1:ENOMEM", 1);
        setenv("CG_ALLOC_TEST_CASE", "retry", 1);
        execl("/proc/self/exe", "test_base_alloc", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_sat_add(void **st) {
    (void)st;
    assert_true(cg_sat_add_u64(1, 2) == 3);
    assert_true(cg_sat_add_u64(UINT64_MAX - 1, 1) == UINT64_MAX);
    assert_true(cg_sat_add_u64(UINT64_MAX, 1) == UINT64_MAX);
    assert_true(cg_sat_add_u64(UINT64_MAX / 2 + 1, UINT64_MAX / 2 + 1) == UINT64_MAX);
}

int main(void) {
    const char *c = getenv("CG_ALLOC_TEST_CASE");
    if (c && strcmp(c, "retry") == 0) return retry_case();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handler_retry_after_injected_failure),
        cmocka_unit_test(test_try_overflow_is_null),
        cmocka_unit_test(test_grow),
        cmocka_unit_test(test_infallible_exits_1_with_message),
        cmocka_unit_test(test_handler_is_swapped),
        cmocka_unit_test(test_sat_add),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
