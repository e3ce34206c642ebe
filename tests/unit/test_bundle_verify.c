/* Unit tests for lib/bundle/verify: the fixture corpus tests/fixtures/bundles/<case>/
 * (every check of spec §1.5 in order, receipts of good bundles; the
 * drop-behind variant with the same outcome for each), receipt determinism,
 * path safety, the §1.6 post-read re-check and drop-behind leaving no page of
 * a large file cached (a small one stays). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_bundle_util.h"

#include "bundle/verify.h"

#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

/* expected_check.txt names the spec check (§1.5) that fails; this is the
 * reason cg_bundle_verify must report for it. */
static const struct {
    const char *check;
    cg_reason reason;
} check_reasons[] = {
    {"NOT_DIRECTORY", CG_R_MALFORMED_ARCHIVE},   {"MANIFEST_UNREADABLE", CG_R_MALFORMED_MANIFEST},
    {"MANIFEST_PARSE", CG_R_MALFORMED_MANIFEST}, {"SCHEMA", CG_R_UNSUPPORTED_BUNDLE_SCHEMA},
    {"UNSAFE_PATH", CG_R_UNSAFE_PATH},           {"DUPLICATE_PATH", CG_R_DUPLICATE_PATH},
    {"INVALID_DIGEST", CG_R_INVALID_DIGEST},     {"SPECIAL_FILE", CG_R_SPECIAL_FILE},
    {"UNDECLARED_FILE", CG_R_UNDECLARED_FILE},   {"MISSING_FILE", CG_R_MISSING_FILE},
    {"NOT_REGULAR", CG_R_SPECIAL_FILE},          {"SIZE_MISMATCH", CG_R_SIZE_MISMATCH},
    {"DIGEST_MISMATCH", CG_R_DIGEST_MISMATCH},   {"OVERFLOW", CG_R_PAYLOAD_TOO_LARGE},
};

static cg_reason reason_of_check(const char *check) {
    for (size_t i = 0; i < sizeof check_reasons / sizeof *check_reasons; i++)
        if (strcmp(check_reasons[i].check, check) == 0) return check_reasons[i].reason;
    fail_msg("unknown expected_check %s", check);
    return CG_R_NONE;
}

static void apply_setup(const char *case_dir, const char *root) {
    char *setup = cg_path_join(case_dir, "setup.txt");
    FILE *f = fopen(setup, "r");
    free(setup);
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        tb_trim(line);
        char op[32], a[512], b[512];
        int n = sscanf(line, "%31s %511s %511s", op, a, b);
        if (n < 2) continue;
        char *p = tb_join(root, a);
        char parent[4096];
        cg_path_parent(p, parent, sizeof parent);
        cg_error err;
        assert_int_equal(cg_mkdir_p(parent, &err), 0);
        if (!strcmp(op, "fifo")) assert_int_equal(mkfifo(p, 0644), 0);
        else if (!strcmp(op, "symlink") && n == 3) assert_int_equal(symlink(b, p), 0);
        else if (!strcmp(op, "mkdir")) assert_int_equal(cg_mkdir_p(p, &err), 0);
        else if (!strcmp(op, "rm")) assert_int_equal(cg_rm_rf(p), 0);
        else fail_msg("bad setup line: %s", line);
        free(p);
    }
    fclose(f);
}

static void run_case(const char *fixtures, const char *name, cg_arena *a) {
    char *case_dir = tb_join(fixtures, name);
    char *tmp = tb_tempdir("bverify");
    char *root = tb_join(tmp, "bundle");
    char *src = tb_join(case_dir, "bundle");
    if (cg_is_dir(src)) tb_copy_tree(src, root);
    apply_setup(case_dir, root);

    cg_bundle_receipt r;
    cg_error err;
    cg_err_clear(&err);
    int rc = cg_bundle_verify(root, &r, &err);
    /* the drop-behind variant: the same outcome, message, reason and receipt */
    cg_bundle_receipt rd;
    cg_error errd;
    cg_err_clear(&errd);
    int rcd = cg_bundle_verify_drop_behind(root, &rd, &errd);
    if (rcd != rc || errd.reason != err.reason || strcmp(errd.msg, err.msg) != 0)
        fail_msg("case %s: drop-behind verify gave %d (%s), plain %d (%s)", name, rcd, errd.msg, rc, err.msg);
    if (rc == 0 && memcmp(&rd, &r, sizeof r) != 0) fail_msg("case %s: drop-behind receipt differs", name);

    char *rpath = tb_join(case_dir, "expected_receipt.json");
    if (cg_path_exists(rpath)) {
        if (rc != 0) fail_msg("case %s: expected success, got: %s", name, err.msg);
        cg_buf b = CG_BUF_INIT;
        cg_json_write(&b, cg_bundle_receipt_to_json(a, &r), true);
        cg_buf_putc(&b, '\n');
        char *want = tb_read(rpath, NULL, NULL);
        if (strcmp(b.data, want) != 0) fail_msg("case %s: receipt\n%s\nwant\n%s", name, b.data, want);
        free(want);
        cg_buf_free(&b);
    } else {
        char *want_err = tb_trim(tb_read(case_dir, "expected_error.txt", NULL));
        char *want_check = tb_trim(tb_read(case_dir, "expected_check.txt", NULL));
        if (rc == 0) fail_msg("case %s: expected failure (%s)", name, want_err);
        if (!strstr(err.msg, want_err)) fail_msg("case %s: error %s lacks %s", name, err.msg, want_err);
        if (err.reason != reason_of_check(want_check))
            fail_msg("case %s: reason %s, want %s for check %s (error %s)", name, cg_reason_code(err.reason),
                     cg_reason_code(reason_of_check(want_check)), want_check, err.msg);
        free(want_err);
        free(want_check);
    }
    free(rpath);
    cg_rm_rf(tmp);
    free(src);
    free(root);
    free(tmp);
    free(case_dir);
}

static int name_cmp(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

static void test_fixture_corpus(void **st) {
    (void)st;
    const char *fx = getenv("CG_FIXTURES");
    assert_non_null(fx);
    char *dir = tb_join(fx, "bundles");
    DIR *d = opendir(dir);
    assert_non_null(d);
    char *names[256];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 256) {
        if (de->d_name[0] == '.' || !strncmp(de->d_name, "semantic_", 9)) continue; /* test_bundle_semantic */
        char *p = tb_join(dir, de->d_name);
        if (cg_is_dir(p)) names[n++] = strdup(de->d_name);
        free(p);
    }
    closedir(d);
    qsort(names, n, sizeof *names, name_cmp);
    assert_true(n >= 30);
    size_t good = 0, bad = 0;
    cg_arena a;
    cg_arena_init(&a, 0);
    for (size_t i = 0; i < n; i++) {
        run_case(dir, names[i], &a);
        if (!strncmp(names[i], "good_", 5)) good++;
        else bad++;
        free(names[i]);
    }
    cg_arena_free(&a);
    assert_true(good >= 5 && bad >= 25);
    free(dir);
}

static void test_receipt_deterministic_and_counts(void **st) {
    (void)st;
    char *tmp = tb_tempdir("bverify");
    char *root = tb_join(tmp, "b");
    tb_make_bundle(root, "run-42");
    cg_bundle_receipt r1, r2;
    cg_error err;
    assert_int_equal(cg_bundle_verify(root, &r1, &err), 0);
    assert_int_equal(cg_bundle_verify(root, &r2, &err), 0);
    assert_memory_equal(&r1, &r2, sizeof r1);
    assert_string_equal(r1.run_id, "run-42");
    assert_int_equal(r1.files_verified, 3);
    size_t mlen;
    char *m = tb_read(root, "bundle.json", &mlen);
    char hex[65];
    cg_sha256_hex(m, mlen, hex);
    assert_string_equal(r1.manifest_sha256, hex);
    /* the manifest is sorted by path and ends with one newline */
    const char *e = strstr(m, "\"evidence.json\""), *rp = strstr(m, "\"report.md\""), *t = strstr(m, "\"trace.jsonl\"");
    assert_true(e && rp && t && e < rp && rp < t);
    assert_int_equal(m[mlen - 1], '\n');
    assert_int_not_equal(m[mlen - 2], '\n');
    free(m);
    cg_rm_rf(tmp);
    free(root);
    free(tmp);
}

static void test_root_symlink_to_dir_follows(void **st) {
    (void)st;
    /* check 1 uses is_dir semantics (follows a link at the root itself) */
    char *tmp = tb_tempdir("bverify");
    char *root = tb_join(tmp, "b");
    tb_make_bundle(root, "run-1");
    char *link = tb_join(tmp, "alias");
    assert_int_equal(symlink("b", link), 0);
    cg_bundle_receipt r;
    cg_error err;
    assert_int_equal(cg_bundle_verify(link, &r, &err), 0);
    /* a regular file as root is "not a directory" */
    char *file = tb_join(root, "trace.jsonl");
    assert_int_equal(cg_bundle_verify(file, &r, &err), -1);
    assert_int_equal(err.reason, CG_R_MALFORMED_ARCHIVE);
    cg_rm_rf(tmp);
    free(file);
    free(link);
    free(root);
    free(tmp);
}

static void test_path_is_safe(void **st) {
    (void)st;
    assert_true(cg_bundle_path_is_safe("trace.jsonl"));
    assert_true(cg_bundle_path_is_safe("nsight/a.csv"));
    assert_true(cg_bundle_path_is_safe("bundle.json")); /* reservation is separate */
    assert_true(cg_bundle_path_is_safe("..a/b.."));
    assert_false(cg_bundle_path_is_safe(""));
    assert_false(cg_bundle_path_is_safe(NULL));
    assert_false(cg_bundle_path_is_safe("/abs"));
    assert_false(cg_bundle_path_is_safe("a/../b"));
    assert_false(cg_bundle_path_is_safe(".."));
    assert_false(cg_bundle_path_is_safe("./a"));
    assert_false(cg_bundle_path_is_safe("a/."));
    assert_false(cg_bundle_path_is_safe("a//b"));
    assert_false(cg_bundle_path_is_safe("a/"));
    assert_false(cg_bundle_path_is_safe("a\\b"));
}

static void test_nul_in_declared_path(void **st) {
    (void)st;
    char *tmp = tb_tempdir("bverify");
    tb_write_str(tmp, "bundle.json",
                 "{\"schema\":\"candle-graph/bundle/1\",\"run_id\":\"r\",\"files\":[{\"path\":\"a\\u0000b\",\"bytes\":0,"
                 "\"sha256\":\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"}]}");
    cg_bundle_receipt r;
    cg_error err;
    assert_int_equal(cg_bundle_verify(tmp, &r, &err), -1);
    assert_int_equal(err.reason, CG_R_UNSAFE_PATH);
    cg_rm_rf(tmp);
    free(tmp);
}

static void test_consumed_recheck(void **st) {
    (void)st;
    char *tmp = tb_tempdir("bverify");
    char *root = tb_join(tmp, "b");
    tb_make_bundle(root, "run-7");
    cg_bundle_receipt r;
    cg_error err;
    assert_int_equal(cg_bundle_verify(root, &r, &err), 0);
    const char *consumed[] = {"trace.jsonl", "evidence.json"};
    assert_int_equal(cg_bundle_verify_consumed(root, &r, consumed, 2, &err), 0);

    /* report.md is not consumed: changing it does not fail the narrow check */
    tb_write_str(root, "report.md", "# changed\n");
    assert_int_equal(cg_bundle_verify_consumed(root, &r, consumed, 2, &err), 0);

    const char *bad_paths[] = {"../x"};
    assert_int_equal(cg_bundle_verify_consumed(root, &r, bad_paths, 1, &err), -1);
    assert_non_null(strstr(err.msg, "unsafe or reserved consumed bundle path \"../x\""));
    const char *reserved[] = {"bundle.json"};
    assert_int_equal(cg_bundle_verify_consumed(root, &r, reserved, 1, &err), -1);
    assert_non_null(strstr(err.msg, "unsafe or reserved consumed bundle path"));
    const char *undeclared[] = {"notes.txt"};
    assert_int_equal(cg_bundle_verify_consumed(root, &r, undeclared, 1, &err), -1);
    assert_non_null(strstr(err.msg, "consumed bundle file is not declared: notes.txt"));
    assert_int_equal(err.reason, CG_R_DIGEST_MISMATCH);

    /* same size, different content */
    char *t = tb_read(root, "trace.jsonl", NULL);
    t[2] = 'X';
    tb_write_str(root, "trace.jsonl", t);
    free(t);
    assert_int_equal(cg_bundle_verify_consumed(root, &r, consumed, 2, &err), -1);
    assert_non_null(strstr(err.msg, "consumed bundle file \"trace.jsonl\" changed after initial verification"));
    assert_int_equal(err.reason, CG_R_DIGEST_MISMATCH);

    /* replaced by a FIFO */
    char *tp = tb_join(root, "trace.jsonl");
    unlink(tp);
    assert_int_equal(mkfifo(tp, 0644), 0);
    assert_int_equal(cg_bundle_verify_consumed(root, &r, consumed, 1, &err), -1);
    assert_non_null(strstr(err.msg, "consumed bundle path is no longer a regular file: "));
    assert_int_equal(err.reason, CG_R_DIGEST_MISMATCH);
    free(tp);

    /* manifest bytes changed */
    size_t ml;
    char *m = tb_read(root, "bundle.json", &ml);
    tb_write(root, "bundle.json", m, ml - 1);
    assert_int_equal(cg_bundle_verify_consumed(root, &r, consumed, 2, &err), -1);
    assert_string_equal(err.msg, "bundle manifest changed after initial verification");
    free(m);

    /* manifest replaced by a symlink */
    char *mp = tb_join(root, "bundle.json");
    unlink(mp);
    assert_int_equal(symlink("report.md", mp), 0);
    assert_int_equal(cg_bundle_verify_consumed(root, &r, consumed, 2, &err), -1);
    assert_non_null(strstr(err.msg, "bundle manifest changed to a non-regular file after initial verification: "));
    free(mp);

    /* identity: same bytes is required first, so a manifest with another run id
     * but the receipt's digest cannot exist; check a receipt with a wrong run id */
    cg_rm_rf(root);
    tb_make_bundle(root, "run-7");
    assert_int_equal(cg_bundle_verify(root, &r, &err), 0);
    cg_bundle_receipt other = r;
    snprintf(other.run_id, sizeof other.run_id, "run-8");
    assert_int_equal(cg_bundle_verify_consumed(root, &other, consumed, 2, &err), -1);
    assert_string_equal(err.msg, "bundle manifest identity changed after initial verification");
    cg_bundle_receipt broken = r;
    broken.manifest_sha256[0] = '\0';
    assert_int_equal(cg_bundle_verify_consumed(root, &broken, consumed, 2, &err), -1);
    assert_non_null(strstr(err.msg, "unsupported initial bundle verification receipt"));
    cg_rm_rf(tmp);
    free(root);
    free(tmp);
}

static void test_file_swapped_for_fifo_is_not_regular_or_special(void **st) {
    (void)st;
    char *tmp = tb_tempdir("bverify");
    char *root = tb_join(tmp, "b");
    tb_make_bundle(root, "run-9");
    char *tp = tb_join(root, "report.md");
    unlink(tp);
    assert_int_equal(mkfifo(tp, 0644), 0);
    cg_bundle_receipt r;
    cg_error err;
    assert_int_equal(cg_bundle_verify(root, &r, &err), -1); /* must not block on the FIFO */
    assert_int_equal(err.reason, CG_R_SPECIAL_FILE);
    free(tp);
    cg_rm_rf(tmp);
    free(root);
    free(tmp);
}

/* Resident pages of the file (mincore over a mapping of it). */
static size_t resident_pages(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    size_t len = (size_t)st.st_size, page = (size_t)sysconf(_SC_PAGESIZE), n = (len + page - 1) / page;
    void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    assert_true(m != MAP_FAILED);
    unsigned char *v = malloc(n);
    assert_int_equal(mincore(m, len, v), 0);
    size_t res = 0;
    for (size_t i = 0; i < n; i++) res += v[i] & 1;
    free(v);
    munmap(m, len);
    close(fd);
    return res;
}

static void test_drop_behind_leaves_large_files_uncached(void **st) {
    (void)st;
    char *tmp = tb_tempdir("bverify");
    char *root = tb_join(tmp, "b");
    tb_make_bundle(root, "run-drop");
    size_t big = (size_t)20 << 20; /* a few drop steps and a tail */
    char *data = malloc(big);
    for (size_t i = 0; i < big; i++) data[i] = (char)('a' + i % 26);
    tb_write(root, "evidence.json", data, big);
    free(data);
    const char *paths[] = {"trace.jsonl", "evidence.json", "report.md"};
    tb_write_manifest(root, "run-drop", paths, 3);
    char *ev = tb_join(root, "evidence.json");
    int fd = open(ev, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(fsync(fd), 0); /* clean pages: the kernel may drop them */
    close(fd);
    cg_bundle_receipt r, rd;
    cg_error err;
    assert_int_equal(cg_bundle_verify(root, &r, &err), 0);
    struct statfs fs;
    bool shmem = statfs(ev, &fs) == 0 && fs.f_type == 0x01021994; /* tmpfs pages cannot be dropped */
    if (!shmem) assert_true(resident_pages(ev) > 0); /* the plain check leaves the cache as it was */
    assert_int_equal(cg_bundle_verify_drop_behind(root, &rd, &err), 0);
    assert_memory_equal(&r, &rd, sizeof r);
    if (!shmem) assert_int_equal(resident_pages(ev), 0);
    char *small = tb_join(root, "report.md"); /* under the 8 MiB step: stays cached */
    if (!shmem) assert_true(resident_pages(small) > 0);
    free(small);
    free(ev);
    cg_rm_rf(tmp);
    free(root);
    free(tmp);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_corpus),
        cmocka_unit_test(test_receipt_deterministic_and_counts),
        cmocka_unit_test(test_root_symlink_to_dir_follows),
        cmocka_unit_test(test_path_is_safe),
        cmocka_unit_test(test_nul_in_declared_path),
        cmocka_unit_test(test_consumed_recheck),
        cmocka_unit_test(test_file_swapped_for_fifo_is_not_regular_or_special),
        cmocka_unit_test(test_drop_behind_leaves_large_files_uncached),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
