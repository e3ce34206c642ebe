/* base/fault: CG_FAULT is inert when unset or invalid; armed, the N-th call of
 * an operation made on an enabled thread fails with the named errno (once, or
 * from N on with :persist), and calls on other threads are never counted.
 * CG_FAULT is read by a constructor, so each case re-executes this program
 * with the variable set (CG_FAULT_TEST_CASE names the case). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fault.h"
#include "test_tmpdir.h"

/* Results of 6 writes, 3 fsyncs and 2 renames made on a second thread. */
typedef struct outcome {
    int write_err[6], fsync_err[3], rename_err[2];
} outcome;

static void *worker(void *arg) {
    outcome *o = arg;
    cg_fault_thread_enable();
    char dir[512];
    if (test_tmpdir_in(dir, sizeof dir, "fault")) return NULL;
    char a[600], b[600];
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    int fd = open("/dev/null", O_WRONLY);
    for (int i = 0; i < 6; i++) o->write_err[i] = cg_fault_write(fd, "x", 1) < 0 ? errno : 0;
    for (int i = 0; i < 3; i++) o->fsync_err[i] = cg_fault_fsync(fd) < 0 && errno != EINVAL ? errno : 0;
    for (int i = 0; i < 2; i++) {
        FILE *g = fopen(a, "w");
        if (g) fclose(g);
        o->rename_err[i] = cg_fault_rename(a, b) < 0 ? errno : 0;
    }
    close(fd);
    unlink(a);
    unlink(b);
    rmdir(dir);
    return NULL;
}

static outcome run_worker(void) {
    outcome o;
    memset(&o, 0xff, sizeof o);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, worker, &o), 0);
    pthread_join(t, NULL);
    return o;
}

static void expect_inert(void) {
    outcome o = run_worker();
    assert_false(cg_fault_armed());
    for (int i = 0; i < 6; i++) assert_int_equal(o.write_err[i], 0);
    for (int i = 0; i < 3; i++) assert_int_equal(o.fsync_err[i], 0);
    for (int i = 0; i < 2; i++) assert_int_equal(o.rename_err[i], 0);
    assert_int_equal(cg_fault_calls(CG_FAULT_WRITE), 0);
}

static void expect_armed(void) {
    assert_true(cg_fault_armed());
    /* a thread that did not enable faults is never faulted nor counted */
    for (int i = 0; i < 4; i++) assert_int_equal(cg_fault_hit(CG_FAULT_WRITE), 0);
    assert_int_equal(cg_fault_calls(CG_FAULT_WRITE), 0);
    outcome o = run_worker();
    int want_w[6] = {0, ENOSPC, 0, 0, 0, 0}, want_f[3] = {0, EIO, EIO}, want_r[2] = {ECONNRESET, 0};
    assert_memory_equal(o.write_err, want_w, sizeof want_w);
    assert_memory_equal(o.fsync_err, want_f, sizeof want_f);
    assert_memory_equal(o.rename_err, want_r, sizeof want_r);
    assert_int_equal(cg_fault_calls(CG_FAULT_WRITE), 6);
    assert_int_equal(cg_fault_calls(CG_FAULT_FSYNC), 3);
    assert_int_equal(cg_fault_calls(CG_FAULT_PQ), 0);
}

/* Re-runs this program with CG_FAULT=spec; returns its exit status. */
static int rerun(const char *spec, const char *name) {
    pid_t pid = fork();
    if (pid == 0) {
        setenv("CG_FAULT", spec, 1);
        setenv("CG_FAULT_TEST_CASE", name, 1);
        execl("/proc/self/exe", "test_base_fault", (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void test_unset_is_inert(void **st) {
    (void)st;
    expect_inert();
}

static void test_armed_rules(void **st) {
    (void)st;
    assert_int_equal(rerun("write:2:ENOSPC,fsync:2:EIO:persist,rename:1:lost", "armed"), 0);
}

static void test_invalid_specs_are_inert(void **st) {
    (void)st;
    static const char *const bad[] = {"write", "write:0:EIO", "write:1:EWHAT", "open:1:EIO", "write:1:EIO:forever",
                                      "write:x:EIO", "write:1:EIO,", "write:99999999999999999999999:EIO"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) assert_int_equal(rerun(bad[i], "inert"), 0);
}

int main(void) {
    const char *c = getenv("CG_FAULT_TEST_CASE");
    if (c && strcmp(c, "armed") == 0) {
        expect_armed();
        return 0;
    }
    if (c && strcmp(c, "inert") == 0) {
        expect_inert();
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unset_is_inert),
        cmocka_unit_test(test_armed_rules),
        cmocka_unit_test(test_invalid_specs_are_inert),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
