/* Unit tests for lib/bundle/semantic: the semantic_* cases of the fixture
 * corpus (bundle published at test time, tampered, re-hashed so plain
 * verification passes) and the not_rederivable mode used by the server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_bundle_util.h"

#include "bundle/publish.h"
#include "bundle/semantic.h"
#include "bundle/verify.h"

/* expected_semantic_failure.txt names the step that fails; this is the reason
 * cg_bundle_verify_semantic must report for it. */
static const struct {
    const char *step;
    cg_reason reason;
} failure_reasons[] = {
    {"NONE", CG_R_NONE},
    {"TRACE_INVALID", CG_R_TRACE_INVALID},
    {"RUN_ID_MISMATCH", CG_R_RUN_ID_MISMATCH},
    {"EVIDENCE_MISMATCH", CG_R_SEMANTIC_MISMATCH},
    {"CHANGED", CG_R_DIGEST_MISMATCH},
};

static cg_reason reason_of_step(const char *step) {
    for (size_t i = 0; i < sizeof failure_reasons / sizeof *failure_reasons; i++)
        if (strcmp(failure_reasons[i].step, step) == 0) return failure_reasons[i].reason;
    fail_msg("unknown expected_semantic_failure %s", step);
    return CG_R_NONE;
}

static void unescape(char *s) {
    char *o = s;
    for (char *p = s; *p; p++) {
        if (p[0] == '\\' && p[1] == 'n') { *o++ = '\n'; p++; }
        else if (p[0] == '\\' && p[1] == 't') { *o++ = '\t'; p++; }
        else *o++ = *p;
    }
    *o = '\0';
}

static void replace_in(const char *root, const char *rel, const char *from, const char *to) {
    size_t len;
    char *d = tb_read(root, rel, &len);
    char *at = strstr(d, from);
    if (!at) fail_msg("tamper: %s not found in %s", from, rel);
    cg_buf b = CG_BUF_INIT;
    cg_buf_append(&b, d, (size_t)(at - d));
    cg_buf_puts(&b, to);
    cg_buf_puts(&b, at + strlen(from));
    tb_write(root, rel, b.data, b.len);
    cg_buf_free(&b);
    free(d);
}

static void compact(const char *root, const char *rel) {
    size_t len;
    char *d = tb_read(root, rel, &len);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_error err;
    cg_jv *v = cg_json_parse(&a, d, len, NULL, &err);
    assert_non_null(v);
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, v, false);
    tb_write(root, rel, b.data, b.len);
    cg_buf_free(&b);
    cg_arena_free(&a);
    free(d);
}

/* Re-hashes every declared file into bundle.json, keeping run_id and paths. */
static void remanifest(const char *root) {
    size_t len;
    char *m = tb_read(root, "bundle.json", &len);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_bundle_manifest bm;
    cg_error err;
    assert_int_equal(cg_bundle_manifest_parse(&a, m, len, &bm, &err), 0);
    const char **paths = calloc(bm.n_files + 1, sizeof *paths);
    for (size_t i = 0; i < bm.n_files; i++) paths[i] = bm.files[i].path;
    char *rid = strdup(bm.run_id);
    tb_write_manifest(root, rid, paths, bm.n_files);
    free(rid);
    free((void *)paths);
    cg_arena_free(&a);
    free(m);
}

static void run_case(const char *fixtures, const char *name) {
    char *case_dir = tb_join(fixtures, name);
    char *tmp = tb_tempdir("bsem");
    char *dest = tb_join(tmp, "b");
    char *trace = tb_join(case_dir, "trace.jsonl");
    char *ns = tb_join(case_dir, "nsight");
    cg_error err;
    if (cg_publish_bundle(dest, trace, cg_is_dir(ns) ? ns : NULL, NULL, &err) != 0) fail_msg("%s: %s", name, err.msg);
    char *tamper = tb_join(case_dir, "tamper.txt");
    if (cg_path_exists(tamper)) {
        FILE *f = fopen(tamper, "r");
        char line[4096];
        while (fgets(line, sizeof line, f)) {
            tb_trim(line);
            char *op = strtok(line, "\t"), *file = strtok(NULL, "\t"), *from = strtok(NULL, "\t"),
                 *to = strtok(NULL, "\t");
            assert_non_null(op);
            assert_non_null(file);
            if (!strcmp(op, "compact")) {
                compact(dest, file);
            } else {
                assert_string_equal(op, "replace");
                assert_non_null(from);
                assert_non_null(to);
                unescape(from);
                unescape(to);
                replace_in(dest, file, from, to);
            }
        }
        fclose(f);
        remanifest(dest);
    }
    cg_bundle_receipt r;
    if (cg_bundle_verify(dest, &r, &err) != 0) fail_msg("%s: plain verification: %s", name, err.msg);
    char *want = tb_trim(tb_read(case_dir, "expected_semantic.txt", NULL));
    char *want_kind = tb_trim(tb_read(case_dir, "expected_semantic_failure.txt", NULL));
    char *member_file = tb_join(case_dir, "expected_semantic_member.txt");
    char *want_member = cg_path_exists(member_file) ? tb_trim(tb_read(case_dir, "expected_semantic_member.txt", NULL))
                                                    : NULL;
    cg_semantic_result res = CG_SEMANTIC_NOT_REDERIVABLE;
    cg_semantic_diff diff = {"stale"};
    cg_err_clear(&err);
    int rc = cg_bundle_verify_semantic_trace(dest, &r, false, &res, NULL, &diff, &err);
    /* the first differing member is reported beside the crate's message */
    if (strcmp(diff.member, want_member ? want_member : ""))
        fail_msg("%s: first difference `%s`, want `%s`", name, diff.member, want_member ? want_member : "");
    if (want_member) { /* the crate's whole message names the bundle as given */
        char full[4096];
        snprintf(full, sizeof full, "%s %s", want, dest);
        assert_string_equal(err.msg, full);
    }
    if (!strcmp(want, "rederived_match")) {
        if (rc != 0) fail_msg("%s: %s", name, err.msg);
        assert_int_equal(res, CG_SEMANTIC_REDERIVED_MATCH);
    } else {
        if (rc == 0) fail_msg("%s: expected failure %s", name, want);
        if (!strstr(err.msg, want)) fail_msg("%s: error %s lacks %s", name, err.msg, want);
    }
    if (rc != 0 && err.reason != reason_of_step(want_kind))
        fail_msg("%s: reason %s, want %s", name, cg_reason_code(err.reason), cg_reason_code(reason_of_step(want_kind)));
    if (rc == 0 && reason_of_step(want_kind) != CG_R_NONE) fail_msg("%s: passed, want failure %s", name, want_kind);
    free(want);
    free(want_kind);
    free(want_member);
    free(member_file);
    free(tamper);
    cg_rm_rf(tmp);
    free(ns);
    free(trace);
    free(dest);
    free(tmp);
    free(case_dir);
}

static void test_semantic_corpus(void **st) {
    (void)st;
    const char *fx = getenv("CG_FIXTURES");
    assert_non_null(fx);
    char *dir = tb_join(fx, "bundles");
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, "semantic_", 9) != 0) continue;
        run_case(dir, de->d_name);
        n++;
    }
    closedir(d);
    assert_true(n >= 9);
    free(dir);
}

static void test_not_rederivable_mode_and_post_read(void **st) {
    (void)st;
    const char *fx = getenv("CG_FIXTURES");
    char *case_dir = tb_join(fx, "bundles/semantic_good_trace_only");
    char *trace = tb_join(case_dir, "trace.jsonl");
    char *tmp = tb_tempdir("bsem");
    char *dest = tb_join(tmp, "b");
    cg_error err;
    assert_int_equal(cg_publish_bundle(dest, trace, NULL, NULL, &err), 0);
    replace_in(dest, "evidence.json", "candle-graph/evidence/4", "candle-graph/evidence/5");
    remanifest(dest);
    cg_bundle_receipt r;
    assert_int_equal(cg_bundle_verify(dest, &r, &err), 0);
    cg_semantic_result res;
    assert_int_equal(cg_bundle_verify_semantic(dest, &r, true, &res, &err), 0);
    assert_int_equal(res, CG_SEMANTIC_NOT_REDERIVABLE);
    assert_string_equal(cg_semantic_result_name(res), "not_rederivable");
    /* a receipt from before a change: the post-read re-check catches it */
    cg_rm_rf(dest);
    assert_int_equal(cg_publish_bundle(dest, trace, NULL, NULL, &err), 0);
    assert_int_equal(cg_bundle_verify(dest, &r, &err), 0);
    compact(dest, "evidence.json");
    remanifest(dest);
    assert_int_equal(cg_bundle_verify_semantic(dest, &r, false, &res, &err), -1);
    assert_int_equal(err.reason, CG_R_DIGEST_MISMATCH);
    assert_string_equal(err.msg, "bundle manifest changed after initial verification");
    cg_rm_rf(tmp);
    free(dest);
    free(tmp);
    free(trace);
    free(case_dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_semantic_corpus),
        cmocka_unit_test(test_not_rederivable_mode_and_post_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
