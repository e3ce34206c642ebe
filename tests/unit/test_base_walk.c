/* base/fs cg_walk: pre-order visits with root-relative paths and depths, the
 * depth and entry limits, SKIP and STOP, and no symbolic link followed (neither
 * below root nor root itself). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "test_tmpdir.h"

static char dir[512], root[600], outside[600];

static void touch(const char *rel) {
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    close(fd);
}

static void sub(const char *rel) {
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    assert_int_equal(mkdir(p, 0700), 0);
}

/* root/{a, d/{b, e/{c}}, link -> outside/, flink -> outside/secret} */
static int setup(void **st) {
    (void)st;
    if (test_tmpdir_in(dir, sizeof dir, "walk")) return -1;
    snprintf(root, sizeof root, "%s/root", dir);
    snprintf(outside, sizeof outside, "%s/outside", dir);
    if (mkdir(root, 0700) || mkdir(outside, 0700)) return -1;
    char p[1200];
    snprintf(p, sizeof p, "%s/secret", outside);
    close(open(p, O_WRONLY | O_CREAT, 0600));
    touch("a");
    sub("d");
    touch("d/b");
    sub("d/e");
    touch("d/e/c");
    snprintf(p, sizeof p, "%s/link", root);
    if (symlink(outside, p)) return -1;
    snprintf(p, sizeof p, "%s/flink", root);
    char target[1200];
    snprintf(target, sizeof target, "%s/secret", outside);
    return symlink(target, p);
}

static int teardown(void **st) {
    (void)st;
    cg_rm_rf(dir);
    return 0;
}

typedef struct seen {
    char paths[16][64];
    unsigned depth[16];
    size_t n;
    const char *skip, *stop;
    bool saw_link;
} seen;

static cg_walk_action record(void *ctx, const cg_walk_entry *e) {
    seen *s = ctx;
    if (s->n < 16) {
        snprintf(s->paths[s->n], sizeof s->paths[0], "%s", e->path);
        s->depth[s->n++] = e->depth;
    }
    if (!strcmp(e->name, "link")) s->saw_link = S_ISLNK(e->st.st_mode);
    if (s->stop && !strcmp(e->name, s->stop)) return CG_WALK_STOP;
    if (s->skip && !strcmp(e->name, s->skip)) return CG_WALK_SKIP;
    return CG_WALK_NEXT;
}

static bool has(const seen *s, const char *path, unsigned depth) {
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->paths[i], path)) return s->depth[i] == depth;
    return false;
}

static void test_walks_tree_without_links(void **st) {
    (void)st;
    seen s = {0};
    cg_error err = {0};
    assert_int_equal(cg_walk(root, (cg_walk_limits){.max_depth = 8}, record, &s, &err), 0);
    assert_int_equal(s.n, 7); /* a d d/b d/e d/e/c link flink */
    assert_true(has(&s, "a", 0) && has(&s, "d", 0) && has(&s, "d/b", 1));
    assert_true(has(&s, "d/e", 1) && has(&s, "d/e/c", 2));
    assert_true(has(&s, "link", 0) && has(&s, "flink", 0));
    assert_true(s.saw_link);                 /* lstat: the link itself */
    assert_false(has(&s, "link/secret", 1)); /* never followed */
}

static void test_depth_skip_stop(void **st) {
    (void)st;
    seen s = {0};
    cg_error err = {0};
    assert_int_equal(cg_walk(root, (cg_walk_limits){.max_depth = 1}, record, &s, &err), 0);
    assert_int_equal(s.n, 6); /* d/e/c is deeper than max_depth */
    assert_false(has(&s, "d/e/c", 2));
    seen k = {.skip = "d"};
    assert_int_equal(cg_walk(root, (cg_walk_limits){.max_depth = 8}, record, &k, &err), 0);
    assert_int_equal(k.n, 4); /* a d link flink */
    seen p = {.stop = "b"};
    assert_int_equal(cg_walk(root, (cg_walk_limits){.max_depth = 8}, record, &p, &err), 0);
    assert_true(p.n < 7);
    assert_string_equal(p.paths[p.n - 1], "d/b"); /* nothing after the stop */
}

static void test_entry_limit(void **st) {
    (void)st;
    seen s = {0};
    cg_error err = {0};
    assert_int_equal(cg_walk(root, (cg_walk_limits){.max_depth = 8, .max_entries = 3}, record, &s, &err), -1);
    assert_int_equal(err.code, CG_ELIMIT);
    assert_int_equal(s.n, 3);
}

static void test_root_refused(void **st) {
    (void)st;
    seen s = {0};
    cg_error err = {0};
    char p[1200];
    snprintf(p, sizeof p, "%s/link", root); /* a symlink as root */
    assert_int_equal(cg_walk(p, (cg_walk_limits){.max_depth = 8}, record, &s, &err), -1);
    assert_int_equal(err.code, CG_EIO);
    snprintf(p, sizeof p, "%s/missing", root);
    assert_int_equal(cg_walk(p, (cg_walk_limits){0}, record, &s, &err), -1);
    assert_int_equal(err.code, CG_EIO);
    assert_int_equal(s.n, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walks_tree_without_links),
        cmocka_unit_test(test_depth_skip_stop),
        cmocka_unit_test(test_entry_limit),
        cmocka_unit_test(test_root_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
