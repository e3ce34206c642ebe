/* test_bundle_util.h — small helpers shared by the tests/unit/test_bundle_*.c
 * programs (header-only, static functions; not a test itself). Every helper
 * fails the running cmocka test on error. Returned strings are malloc'd. */
#ifndef TEST_BUNDLE_UTIL_H
#define TEST_BUNDLE_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/sha256.h"
#include "bundle/manifest.h"
#include "test_tmpdir.h"

static inline char *tb_tempdir(const char *tag) {
    char *d = test_tmpdir(tag);
    assert_non_null(d);
    return d;
}

static inline char *tb_join(const char *a, const char *b) {
    char *p = cg_path_join(a, b);
    assert_non_null(p);
    return p;
}

static inline void tb_write(const char *dir, const char *rel, const void *data, size_t len) {
    char *p = tb_join(dir, rel);
    char parent[4096];
    cg_path_parent(p, parent, sizeof parent);
    cg_error err;
    assert_int_equal(cg_mkdir_p(parent, &err), 0);
    assert_int_equal(cg_write_file(p, data, len, false, &err), 0);
    free(p);
}

static inline void tb_write_str(const char *dir, const char *rel, const char *s) { tb_write(dir, rel, s, strlen(s)); }

static inline char *tb_read(const char *dir, const char *rel, size_t *len) {
    char *p = rel ? tb_join(dir, rel) : strdup(dir);
    cg_error err;
    char *d = cg_read_file(p, 0, len, &err);
    if (!d) fail_msg("read %s: %s", p, err.msg);
    free(p);
    return d;
}

/* Copies a directory tree of regular files and directories. */
static inline void tb_copy_tree(const char *src, const char *dst) {
    cg_error err;
    assert_int_equal(cg_mkdir_p(dst, &err), 0);
    DIR *d = opendir(src);
    assert_non_null(d);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char *s = tb_join(src, de->d_name), *t = tb_join(dst, de->d_name);
        struct stat st;
        assert_int_equal(lstat(s, &st), 0);
        if (S_ISDIR(st.st_mode)) tb_copy_tree(s, t);
        else assert_int_equal(cg_copy_file(s, t, &err), 0);
        free(s);
        free(t);
    }
    closedir(d);
}

/* Writes bundle.json declaring the given relative paths (digests computed from disk). */
static inline void tb_write_manifest(const char *root, const char *run_id, const char *const *paths, size_t n) {
    cg_bundle_manifest m = {.schema = "candle-graph/bundle/1", .run_id = run_id, .run_id_len = strlen(run_id)};
    cg_bundle_file *files = calloc(n ? n : 1, sizeof *files);
    char(*hex)[65] = calloc(n ? n : 1, sizeof *hex);
    for (size_t i = 0; i < n; i++) {
        char *p = tb_join(root, paths[i]);
        cg_error err;
        assert_int_equal(cg_sha256_file(p, true, hex[i], &files[i].bytes, &err), 0);
        files[i].path = paths[i];
        files[i].path_len = strlen(paths[i]);
        files[i].sha256 = hex[i];
        free(p);
    }
    m.files = files;
    m.n_files = n;
    cg_bundle_manifest_sort(&m);
    cg_buf b = CG_BUF_INIT;
    cg_bundle_manifest_write(&b, &m);
    tb_write(root, "bundle.json", b.data, b.len);
    cg_buf_free(&b);
    free(files);
    free(hex);
}

/* A hand-built valid bundle at root (created) with trace/evidence/report. */
static inline void tb_make_bundle(const char *root, const char *run_id) {
    char trace[512];
    snprintf(trace, sizeof trace, "{\"kind\":\"meta\",\"run_id\":\"%s\"}\n", run_id);
    tb_write_str(root, "trace.jsonl", trace);
    tb_write_str(root, "evidence.json", "{\n  \"schema\": \"candle-graph/evidence/4\"\n}\n");
    tb_write_str(root, "report.md", "# report\n");
    const char *paths[] = {"trace.jsonl", "evidence.json", "report.md"};
    tb_write_manifest(root, run_id, paths, 3);
}

static inline char *tb_trim(char *s) {
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = '\0';
    return s;
}

#endif
