/* Unit tests for lib/bundle/publish (spec §1.4): exact layout, manifest rules,
 * Nsight input refusals, step order, cleanup on failure, and crash safety —
 * a child process is SIGKILLed after each numbered step, then a retry must
 * leave exactly one verified bundle and never a partial destination. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <sys/wait.h>

#include "bundle_publish_support.h"
#include "test_bundle_util.h"

#include "bundle/publish.h"
#include "bundle/semantic.h"
#include "bundle/verify.h"
#include "render/artifacts.h"

static char *fixture_trace(void) {
    const char *fx = getenv("CG_FIXTURES");
    assert_non_null(fx);
    return tb_join(fx, "analysis/illustrative/trace.jsonl");
}

static void test_layout_and_manifest(void **st) {
    (void)st;
    char *tmp = tb_tempdir("bpub");
    char *dest = tb_join(tmp, "out/b");
    char *trace = fixture_trace();
    cg_buf man = CG_BUF_INIT;
    cg_error err;
    if (cg_publish_bundle(dest, trace, NULL, &man, &err) != 0) fail_msg("%s", err.msg);
    char *l = tbs_listing(dest, false);
    assert_string_equal(l, "bundle.json\nevidence.json\nreport.md\ntrace.jsonl\nviewer.html\n");
    free(l);
    char *parent = tb_join(tmp, "out");
    l = tbs_listing(parent, false);
    assert_string_equal(l, "b\n"); /* no staging directory left beside it */
    free(l);
    /* trace.jsonl is a byte copy */
    size_t a_len, b_len;
    char *orig = tb_read(trace, NULL, &a_len), *copy = tb_read(dest, "trace.jsonl", &b_len);
    assert_int_equal(a_len, b_len);
    assert_memory_equal(orig, copy, a_len);
    free(orig);
    free(copy);
    /* manifest_out holds the exact bundle.json bytes */
    size_t mlen;
    char *m = tb_read(dest, "bundle.json", &mlen);
    assert_int_equal(mlen, man.len);
    assert_memory_equal(m, man.data, mlen);
    /* parse: schema, run_id from evidence provenance, files sorted and hashed like sha256 */
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_bundle_manifest bm;
    assert_int_equal(cg_bundle_manifest_parse(&a, m, mlen, &bm, &err), 0);
    assert_string_equal(bm.schema, "candle-graph/bundle/1");
    assert_int_equal(bm.n_files, 4);
    const char *want[] = {"evidence.json", "report.md", "trace.jsonl", "viewer.html"};
    for (size_t i = 0; i < 4; i++) {
        assert_string_equal(bm.files[i].path, want[i]);
        char *p = tb_join(dest, want[i]);
        char hex[65];
        uint64_t size;
        assert_int_equal(cg_sha256_file(p, true, hex, &size, &err), 0);
        assert_string_equal(bm.files[i].sha256, hex);
        assert_int_equal(bm.files[i].bytes, size);
        free(p);
    }
    size_t elen;
    char *ev = tb_read(dest, "evidence.json", &elen);
    cg_jv *evj = cg_json_parse(&a, ev, elen, NULL, &err);
    assert_non_null(evj);
    assert_string_equal(bm.run_id, cg_jv_as_str(cg_jv_get(cg_jv_get(evj, "provenance"), "run_id")));
    assert_int_equal(ev[elen - 1], '\n');
    /* pretty JSON + exactly one newline, re-serialization is byte identical */
    cg_buf re = CG_BUF_INIT;
    cg_bundle_manifest_write(&re, &bm);
    assert_int_equal(re.len, mlen);
    assert_memory_equal(re.data, m, mlen);
    /* evidence.json equals the evidence built from the trace (pretty + newline) */
    cg_buf want_ev = CG_BUF_INIT;
    assert_int_equal(cg_render_bundle_artifacts(trace, NULL, &want_ev, NULL, NULL, &err), 0);
    assert_int_equal(want_ev.len, elen);
    assert_memory_equal(want_ev.data, ev, elen);
    /* verifies, also semantically */
    cg_bundle_receipt r;
    assert_int_equal(cg_bundle_verify(dest, &r, &err), 0);
    cg_semantic_result res;
    if (cg_bundle_verify_semantic(dest, &r, false, &res, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(res, CG_SEMANTIC_REDERIVED_MATCH);
    /* publishing twice fails and changes nothing */
    assert_int_equal(cg_publish_bundle(dest, trace, NULL, NULL, &err), -1);
    assert_int_equal(err.code, CG_EEXIST);
    assert_non_null(strstr(err.msg, "bundle destination already exists: "));
    char *m2 = tb_read(dest, "bundle.json", NULL);
    assert_string_equal(m, m2);
    free(m2);
    cg_buf_free(&want_ev);
    cg_buf_free(&re);
    cg_buf_free(&man);
    cg_arena_free(&a);
    free(ev);
    free(m);
    cg_rm_rf(tmp);
    free(parent);
    free(trace);
    free(dest);
    free(tmp);
}

static void test_nsight_inputs(void **st) {
    (void)st;
    char *tmp = tb_tempdir("bpub");
    char *trace = fixture_trace();
    char *ns = tb_join(tmp, "ns");
    tb_write_str(ns, "b_cuda_gpu_kern_sum.csv", "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n");
    tb_write(ns, "a.nsys-rep", "\x00\x01\x02", 3);
    tb_write_str(ns, ".hidden", "dotfiles are entries too\n");
    char *dest = tb_join(tmp, "b");
    cg_error err;
    if (cg_publish_bundle(dest, trace, ns, NULL, &err) != 0) fail_msg("%s", err.msg);
    char *nsd = tb_join(dest, "nsight");
    char *l = tbs_listing(nsd, false);
    assert_string_equal(l, ".hidden\na.nsys-rep\nb_cuda_gpu_kern_sum.csv\n");
    free(l);
    size_t n1, n2;
    char *x = tb_read(ns, "a.nsys-rep", &n1), *y = tb_read(nsd, "a.nsys-rep", &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(x, y, n1);
    free(x);
    free(y);
    cg_bundle_receipt r;
    assert_int_equal(cg_bundle_verify(dest, &r, &err), 0);
    assert_int_equal(r.files_verified, 7);
    cg_semantic_result res;
    if (cg_bundle_verify_semantic(dest, &r, false, &res, &err) != 0) fail_msg("%s", err.msg);
    cg_rm_rf(dest);

    /* an empty Nsight dir still creates nsight/ */
    char *empty = tb_join(tmp, "empty");
    assert_int_equal(cg_mkdir_p(empty, &err), 0);
    assert_int_equal(cg_publish_bundle(dest, trace, empty, NULL, &err), 0);
    assert_true(cg_is_dir(nsd));
    cg_rm_rf(dest);

    /* refusals: link, directory, special file — nothing left behind */
    struct { const char *setup; const char *want; } cases[] = {
        {"link", "symbolic links are not allowed in Nsight inputs: "},
        {"dir", "directories are not allowed in Nsight inputs: "},
        {"fifo", "special files are not allowed in Nsight inputs: "},
    };
    for (size_t i = 0; i < 3; i++) {
        char *bad = tb_join(tmp, "bad");
        cg_rm_rf(bad);
        tb_write_str(bad, "ok.csv", "a\n");
        char *p = tb_join(bad, "zz");
        if (i == 0) assert_int_equal(symlink("ok.csv", p), 0);
        if (i == 1) assert_int_equal(mkdir(p, 0755), 0);
        if (i == 2) assert_int_equal(mkfifo(p, 0644), 0);
        assert_int_equal(cg_publish_bundle(dest, trace, bad, NULL, &err), -1);
        if (!strstr(err.msg, cases[i].want)) fail_msg("%s: %s", cases[i].setup, err.msg);
        assert_false(cg_path_exists(dest));
        l = tbs_listing(tmp, false);
        assert_string_equal(l, "bad\nempty\nns\n");
        free(l);
        free(p);
        cg_rm_rf(bad);
        free(bad);
    }
    /* a missing Nsight dir and an unparsable trace fail cleanly too */
    char *missing = tb_join(tmp, "nope");
    assert_int_equal(cg_publish_bundle(dest, trace, missing, NULL, &err), -1);
    tb_write_str(tmp, "broken.jsonl", "{not a trace\n");
    char *broken = tb_join(tmp, "broken.jsonl");
    assert_int_equal(cg_publish_bundle(dest, broken, NULL, NULL, &err), -1);
    assert_false(cg_path_exists(dest));
    l = tbs_listing(tmp, false);
    assert_string_equal(l, "broken.jsonl\nempty\nns\n");
    free(l);
    free(broken);
    free(missing);
    free(empty);
    cg_rm_rf(tmp);
    free(nsd);
    free(dest);
    free(ns);
    free(trace);
    free(tmp);
}

static int g_steps[32];
static size_t g_nsteps;
static void record_step(cg_publish_step s, const char *staging, void *ctx) {
    (void)ctx;
    assert_non_null(strstr(staging, "/.b.tmp-"));
    g_steps[g_nsteps++] = (int)s;
}

static void test_step_order_and_name(void **st) {
    (void)st;
    char *tmp = tb_tempdir("bpub");
    char *trace = fixture_trace();
    char *dest = tb_join(tmp, "b/");
    g_nsteps = 0;
    cg_publish_set_hook(record_step, NULL);
    cg_error err;
    assert_int_equal(cg_publish_bundle(dest, trace, NULL, NULL, &err), 0);
    cg_publish_set_hook(NULL, NULL);
    int want[] = {4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
    assert_int_equal(g_nsteps, 10);
    assert_memory_equal(g_steps, want, sizeof want);
    char *real = tb_join(tmp, "b");
    assert_true(cg_is_dir(real));
    /* a destination without a file name */
    char *dot = tb_join(tmp, ".");
    assert_int_equal(cg_publish_bundle(dot, trace, NULL, NULL, &err), -1);
    free(dot);
    cg_rm_rf(tmp);
    free(real);
    free(dest);
    free(trace);
    free(tmp);
}

/* ---- crash safety ---- */
static void test_crash_at_every_step_then_retry(void **st) {
    (void)st;
    char *trace = fixture_trace();
    for (int k = CG_PUBLISH_STEP_STAGING_CREATED; k <= CG_PUBLISH_STEP_PARENT_SYNCED; k++) {
        char *tmp = tb_tempdir("bcrash");
        char *dest = tb_join(tmp, "b");
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            tbs_kill_at_publish_step(k);
            cg_error e;
            cg_publish_bundle(dest, trace, NULL, NULL, &e);
            _exit(3); /* not reached: the hook kills us */
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGKILL);
        cg_error err;
        cg_bundle_receipt r;
        if (k < CG_PUBLISH_STEP_RENAMED) {
            /* never a partial destination */
            assert_false(cg_path_exists(dest));
            if (cg_publish_bundle(dest, trace, NULL, NULL, &err) != 0) fail_msg("retry after step %d: %s", k, err.msg);
        } else {
            /* the rename happened: the destination is complete; a republish refuses */
            assert_int_equal(cg_publish_bundle(dest, trace, NULL, NULL, &err), -1);
            assert_int_equal(err.code, CG_EEXIST);
        }
        if (cg_bundle_verify(dest, &r, &err) != 0) fail_msg("after step %d: %s", k, err.msg);
        /* exactly one bundle: the dead child's staging dir was swept by the retry */
        assert_int_equal(tbs_count_bundles(tmp), 1);
        char *l = tbs_listing(tmp, false);
        assert_string_equal(l, "b\n");
        free(l);
        cg_rm_rf(tmp);
        free(dest);
        free(tmp);
    }
    free(trace);
}

static void test_live_staging_is_not_swept(void **st) {
    (void)st;
    /* a staging dir of a live process (ours is skipped; use pid 1) is kept */
    char *tmp = tb_tempdir("bpub");
    char *trace = fixture_trace();
    char *other = tb_join(tmp, ".b.tmp-1-123");
    cg_error err;
    assert_int_equal(cg_mkdir_p(other, &err), 0);
    char *dead = tb_join(tmp, ".b.tmp-999999999-5");
    assert_int_equal(cg_mkdir_p(dead, &err), 0);
    char *unrelated = tb_join(tmp, ".c.tmp-999999999-5");
    assert_int_equal(cg_mkdir_p(unrelated, &err), 0);
    char *dest = tb_join(tmp, "b");
    assert_int_equal(cg_publish_bundle(dest, trace, NULL, NULL, &err), 0);
    assert_true(cg_is_dir(other));
    assert_false(cg_path_exists(dead));
    assert_true(cg_is_dir(unrelated));
    cg_rm_rf(tmp);
    free(unrelated);
    free(dead);
    free(dest);
    free(other);
    free(trace);
    free(tmp);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_and_manifest),
        cmocka_unit_test(test_nsight_inputs),
        cmocka_unit_test(test_step_order_and_name),
        cmocka_unit_test(test_crash_at_every_step_then_retry),
        cmocka_unit_test(test_live_staging_is_not_swept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
