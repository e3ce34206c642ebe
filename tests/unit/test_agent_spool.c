/* Unit tests for the capture spool (agent/cli/cli_spool.c) that `capture
 * --spool` fills and `daemon` drains: entries appear in ready/ only complete,
 * keep enqueue order, move to sent/ or rejected/ with their note, refuse
 * anything but regular files and folders, and leftovers of dead writers are
 * cleaned up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fs.h"
#include "cli_spool.h"
#include "test_tmpdir.h"

static char root[64];

static char *path2(const char *a, const char *b) {
    char *p = cg_path_join(a, b);
    assert_non_null(p);
    return p;
}

static void write_text(const char *path, const char *text) {
    cg_error err;
    assert_int_equal(cg_write_file(path, text, strlen(text), false, &err), 0);
}

static char *read_text(const char *path) {
    cg_error err;
    size_t len = 0;
    char *t = cg_read_file(path, 0, &len, &err);
    if (!t) fail_msg("%s", err.msg);
    return t;
}

/* A small bundle folder: bundle.json, trace.jsonl, nsight/x.csv. */
static char *make_bundle(const char *name) {
    char *b = path2(root, name);
    cg_error err;
    char *nsight = path2(b, "nsight");
    assert_int_equal(cg_mkdir_p(nsight, &err), 0);
    char *f1 = path2(b, "bundle.json"), *f2 = path2(b, "trace.jsonl"), *f3 = path2(nsight, "x.csv");
    write_text(f1, "{\"schema\":\"candle-graph/bundle/1\"}\n");
    write_text(f2, name);
    write_text(f3, "a,b\n1,2\n");
    free(f1);
    free(f2);
    free(f3);
    free(nsight);
    return b;
}

static size_t count(const char *spool, const char *state) {
    char **names = NULL;
    size_t n = 0;
    cg_error err;
    assert_int_equal(cli_spool_list(spool, state, &names, &n, &err), 0);
    cli_spool_names_free(names, n);
    return n;
}

static int setup(void **st) {
    (void)st;
    return test_tmpdir_in(root, sizeof root, "spool");
}

static int teardown(void **st) {
    (void)st;
    cg_rm_rf(root);
    return 0;
}

static void test_enqueue_list_move(void **st) {
    (void)st;
    char *spool = path2(root, "spool1");
    char *b = make_bundle("b-one");
    char *sig = path2(root, "b-one.sig.json");
    write_text(sig, "{\"schema\":\"candle-graph/signature/1\"}\n");
    cg_error err;
    char *entry = NULL;
    assert_int_equal(cli_spool_enqueue(spool, b, sig, &entry, &err), 0);
    assert_non_null(strstr(entry, "/ready/"));
    assert_non_null(strstr(entry, "-b-one"));
    /* a byte-identical copy, with the signature beside the bundle */
    char *eb = path2(entry, "bundle"), *csv = path2(eb, "nsight/x.csv"), *tr = path2(eb, "trace.jsonl");
    char *esig = path2(entry, "bundle.sig.json");
    char *t = read_text(csv);
    assert_string_equal(t, "a,b\n1,2\n");
    free(t);
    t = read_text(tr);
    assert_string_equal(t, "b-one");
    free(t);
    t = read_text(esig);
    assert_non_null(strstr(t, "signature/1"));
    free(t);
    assert_int_equal(count(spool, "ready"), 1);
    assert_int_equal(count(spool, ".incoming"), 0);

    char **names = NULL;
    size_t n = 0;
    assert_int_equal(cli_spool_list(spool, "ready", &names, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(strlen(names[0]) > 21, 1);
    assert_int_equal(names[0][20], '-'); /* 20-digit enqueue time first */
    assert_int_equal(cli_spool_move(spool, names[0], "sent", "receipt.json", "{\"id\":\"x\"}\n", 11, &err), 0);
    assert_int_equal(count(spool, "ready"), 0);
    assert_int_equal(count(spool, "sent"), 1);
    char *sent = path2(spool, "sent"), *se = path2(sent, names[0]), *rc = path2(se, "receipt.json");
    t = read_text(rc);
    assert_string_equal(t, "{\"id\":\"x\"}\n");
    free(t);
    /* an entry is in exactly one folder: moving it again fails */
    assert_int_equal(cli_spool_move(spool, names[0], "rejected", NULL, NULL, 0, &err), -1);
    assert_int_equal(cli_spool_move(spool, names[0], "elsewhere", NULL, NULL, 0, &err), -1);
    assert_int_equal(err.code, CG_EINVAL);
    cli_spool_names_free(names, n);
    free(sent);
    free(se);
    free(rc);
    free(eb);
    free(csv);
    free(tr);
    free(esig);
    free(entry);
    free(sig);
    free(b);
    free(spool);
}

static void test_order_and_rejected_note(void **st) {
    (void)st;
    char *spool = path2(root, "spool2");
    const char *names_in[3] = {"b-c", "b-a", "b-b"};
    cg_error err;
    for (size_t i = 0; i < 3; i++) {
        char *b = make_bundle(names_in[i]);
        assert_int_equal(cli_spool_enqueue(spool, b, NULL, NULL, &err), 0);
        free(b);
    }
    char **names = NULL;
    size_t n = 0;
    assert_int_equal(cli_spool_list(spool, "ready", &names, &n, &err), 0);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < 3; i++) { /* enqueue order, not bundle-name order */
        const char *dash = strrchr(names[i], '-');
        assert_non_null(dash);
        assert_string_equal(dash - 1, names_in[i]);
    }
    char *ready = path2(spool, "ready"), *e = path2(ready, names[1]), *sig = path2(e, "bundle.sig.json");
    assert_false(cg_path_exists(sig)); /* unsigned */
    const char *note = "{\"status\":409}\n";
    assert_int_equal(cli_spool_move(spool, names[1], "rejected", "rejection.json", note, strlen(note), &err), 0);
    char *rej = path2(spool, "rejected"), *re = path2(rej, names[1]), *rn = path2(re, "rejection.json");
    char *t = read_text(rn);
    assert_string_equal(t, note);
    free(t);
    assert_int_equal(count(spool, "ready"), 2);
    cli_spool_names_free(names, n);
    free(ready);
    free(e);
    free(sig);
    free(rej);
    free(re);
    free(rn);
    free(spool);
}

static void test_refuses_links(void **st) {
    (void)st;
    char *spool = path2(root, "spool3");
    char *b = make_bundle("b-link");
    char *link = path2(b, "evil");
    assert_int_equal(symlink("/etc/passwd", link), 0);
    cg_error err;
    assert_int_equal(cli_spool_enqueue(spool, b, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "not a regular file or folder"));
    assert_int_equal(count(spool, "ready"), 0);
    assert_int_equal(count(spool, ".incoming"), 0); /* nothing half-written stays */
    free(link);
    free(b);
    free(spool);
}

static void test_init_cleans_dead_writers(void **st) {
    (void)st;
    char *spool = path2(root, "spool4");
    cg_error err;
    assert_int_equal(cli_spool_init(spool, &err), 0);
    pid_t dead = fork();
    assert_true(dead >= 0);
    if (dead == 0) _exit(0);
    assert_int_equal(waitpid(dead, NULL, 0), dead);
    char name_dead[128], name_live[128];
    snprintf(name_dead, sizeof name_dead, "%020llu-%ld-b", 1ull, (long)dead);
    snprintf(name_live, sizeof name_live, "%020llu-%ld-b", 2ull, (long)getpid());
    char *inc = path2(spool, ".incoming"), *d1 = path2(inc, name_dead), *d2 = path2(inc, name_live);
    assert_int_equal(mkdir(d1, 0755), 0);
    assert_int_equal(mkdir(d2, 0755), 0);
    assert_int_equal(cli_spool_init(spool, &err), 0);
    assert_false(cg_path_exists(d1)); /* its writer is gone: never finalized */
    assert_true(cg_path_exists(d2));  /* still being written */
    free(inc);
    free(d1);
    free(d2);
    free(spool);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_enqueue_list_move),
        cmocka_unit_test(test_order_and_rejected_note),
        cmocka_unit_test(test_refuses_links),
        cmocka_unit_test(test_init_cleans_dead_writers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
