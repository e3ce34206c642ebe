/* Unit tests for lib/bundle/opened (a bundle opened once) and the checks that
 * run on it: bundle.json is read once, every later read goes beneath the
 * directory descriptor (a link anywhere on the way is refused, a directory
 * swapped for another after opening is never seen), and the semantic step on
 * the handle answers exactly as the path form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>

#include "test_bundle_util.h"

#include "bundle/opened.h"
#include "bundle/publish.h"
#include "bundle/semantic.h"
#include "bundle/verify.h"

static void test_manifest_read_once(void **st) {
    (void)st;
    char *tmp = tb_tempdir("bopened");
    char *root = tb_join(tmp, "b");
    tb_make_bundle(root, "run-1");
    size_t len;
    char *bytes = tb_read(root, "bundle.json", &len);
    cg_bundle_handle h;
    cg_error err;
    assert_int_equal(cg_bundle_open_dir(root, &h, &err), 0);
    assert_int_equal(h.manifest_len, len);
    assert_memory_equal(h.manifest, bytes, len);
    assert_string_equal(h.man.run_id, "run-1");
    /* bundle.json changes on disk after opening: the checks use the bytes read */
    tb_write_str(root, "bundle.json", "{}");
    cg_bundle_receipt r;
    assert_int_equal(cg_bundle_verify_handle(&h, &r, &err), 0);
    char hex[65];
    cg_sha256_hex(bytes, len, hex);
    assert_string_equal(r.manifest_sha256, hex);
    assert_int_equal(r.files_verified, 3);
    /* and the post-read re-check, through the descriptor, sees the change */
    const char *consumed[] = {"trace.jsonl"};
    assert_int_equal(cg_bundle_verify_consumed_handle(&h, &r, consumed, 1, &err), -1);
    assert_int_equal(err.reason, CG_R_DIGEST_MISMATCH);
    cg_bundle_handle_close(&h);
    free(bytes);
    cg_rm_rf(tmp);
    free(root);
    free(tmp);
}

static void test_directory_swapped_after_open(void **st) {
    (void)st;
    char *tmp = tb_tempdir("bopened");
    char *root = tb_join(tmp, "b"), *moved = tb_join(tmp, "moved");
    tb_make_bundle(root, "run-original");
    cg_bundle_handle h;
    cg_error err;
    assert_int_equal(cg_bundle_open_dir(root, &h, &err), 0);
    /* the path now names another (invalid) bundle: the handle still verifies the one it opened */
    assert_int_equal(rename(root, moved), 0);
    tb_make_bundle(root, "run-other");
    tb_write_str(root, "report.md", "# tampered, longer than declared\n");
    cg_bundle_receipt r;
    assert_int_equal(cg_bundle_verify_handle(&h, &r, &err), 0);
    assert_string_equal(r.run_id, "run-original");
    assert_int_equal(cg_bundle_verify(root, &r, &err), -1); /* by path: the other one */
    assert_int_equal(err.reason, CG_R_SIZE_MISMATCH);
    cg_bundle_handle_close(&h);
    cg_rm_rf(tmp);
    free(moved);
    free(root);
    free(tmp);
}

static void test_open_never_follows_links(void **st) {
    (void)st;
    char *tmp = tb_tempdir("bopened");
    char *root = tb_join(tmp, "b"), *outside = tb_join(tmp, "outside");
    tb_make_bundle(root, "run-2");
    tb_write_str(outside, "secret.txt", "outside the bundle\n");
    char *dlink = tb_join(root, "sub"), *flink = tb_join(root, "leak.txt"), *target = tb_join(outside, "secret.txt");
    assert_int_equal(symlink(outside, dlink), 0);
    assert_int_equal(symlink(target, flink), 0);
    cg_bundle_handle h;
    cg_error err;
    assert_int_equal(cg_bundle_open_dir(root, &h, &err), 0);
    int fd = cg_bundle_handle_open(&h, "sub/secret.txt", O_RDONLY);
    assert_int_equal(fd, -1);
    assert_int_equal(errno, ELOOP);
    fd = cg_bundle_handle_open(&h, "leak.txt", O_RDONLY);
    assert_int_equal(fd, -1);
    assert_int_equal(errno, ELOOP);
    fd = cg_bundle_handle_open(&h, "report.md", O_RDONLY);
    assert_true(fd >= 0);
    close(fd);
    /* and the walk refuses the links as check 8 does */
    cg_bundle_receipt r;
    assert_int_equal(cg_bundle_verify_handle(&h, &r, &err), -1);
    assert_int_equal(err.reason, CG_R_SPECIAL_FILE);
    cg_bundle_handle_close(&h);
    cg_rm_rf(tmp);
    free(target);
    free(flink);
    free(dlink);
    free(outside);
    free(root);
    free(tmp);
}

/* A published bundle of the reader fixture (evidence/4, rederivable). */
static char *published(char **tmp_out) {
    char *tmp = tb_tempdir("bopened");
    char *root = tb_join(tmp, "b");
    char trace[4096];
    snprintf(trace, sizeof trace, "%s/reader/illustrative.jsonl", getenv("CG_FIXTURES") ? getenv("CG_FIXTURES") : "fixtures");
    cg_error err;
    if (cg_publish_bundle(root, trace, NULL, NULL, &err) != 0) fail_msg("publish: %s", err.msg);
    *tmp_out = tmp;
    return root;
}

static void test_semantic_on_the_handle(void **st) {
    (void)st;
    char *tmp, *root = published(&tmp);
    cg_bundle_handle h;
    cg_bundle_receipt r;
    cg_error err;
    assert_int_equal(cg_bundle_open_dir(root, &h, &err), 0);
    assert_int_equal(cg_bundle_verify_handle(&h, &r, &err), 0);
    cg_semantic_result res;
    cg_trace *t = NULL;
    char *schema = NULL;
    assert_int_equal(cg_bundle_verify_semantic_handle(&h, &r, false, &res, &t, &schema, NULL, &err), 0);
    assert_int_equal(res, CG_SEMANTIC_REDERIVED_MATCH);
    assert_non_null(t);
    assert_string_equal(t->run.run_id, r.run_id);
    assert_string_equal(schema, "candle-graph/evidence/4");
    cg_trace_free(t);
    free(schema);
    /* a broken trace: the same failure, naming the bundle path (not a descriptor) */
    tb_write_str(root, "trace.jsonl", "{\"kind\":\n");
    cg_error e1, e2;
    cg_semantic_diff diff = {"stale"};
    assert_int_equal(cg_bundle_verify_semantic_handle(&h, &r, false, &res, &t, &schema, &diff, &e1), -1);
    assert_string_equal(diff.member, ""); /* not a value comparison */
    assert_int_equal(cg_bundle_verify_semantic(root, &r, false, &res, &e2), -1);
    assert_int_equal(e1.reason, CG_R_TRACE_INVALID);
    assert_int_equal(e2.reason, CG_R_TRACE_INVALID);
    assert_string_equal(e1.msg, e2.msg);
    assert_null(strstr(e1.msg, "/proc/self/fd"));
    assert_null(t);
    assert_null(schema);
    cg_bundle_handle_close(&h);
    cg_rm_rf(tmp);
    free(root);
    free(tmp);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest_read_once),
        cmocka_unit_test(test_directory_swapped_after_open),
        cmocka_unit_test(test_open_never_follows_links),
        cmocka_unit_test(test_semantic_on_the_handle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
