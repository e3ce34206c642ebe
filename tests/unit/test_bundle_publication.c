/* Unit tests for lib/bundle/publication (spec §2): CaptureRun begin/publish/
 * publish_failed, reconciliation by planned coordinates, already_published
 * receipts, the "conflicting …" error, no nested bundles, staged trace kept on
 * failure, and crash-then-retry at every publish step (plus a crash during the
 * capture itself): never two bundles, never a partial one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <sys/wait.h>

#include "bundle_publish_support.h"
#include "test_bundle_util.h"

#include "bundle/publication.h"
#include "bundle/publish.h"
#include "bundle/semantic.h"
#include "trace/trace.h"

static cg_profile_run *plan(const char *entry, uint64_t step, const char *device) {
    cg_profile_run *r = cg_profile_run_training(entry, step, device);
    assert_non_null(r);
    return r;
}

/* Records a small capture into the run's session. */
static void capture_some(cg_capture_run *run) {
    cg_session *s = cg_capture_run_session(run);
    assert_non_null(s);
    cg_error err;
    cg_span_id m, f;
    assert_int_equal(cg_session_begin_measurement(s, "update", &m, &err), 0);
    assert_int_equal(cg_session_begin_span(s, "forward", CG_SPAN_FUNCTION, &f, &err), 0);
    assert_int_equal(cg_session_end_span(s, f, &err), 0);
    assert_int_equal(cg_session_end_span(s, m, &err), 0);
}

static void test_capture_publish_and_reconcile(void **st) {
    (void)st;
    char *tmp = tb_tempdir("bpubn");
    char *dest = tb_join(tmp, "runs/b");
    cg_profile_run *p = plan("toy/train", 3, "cpu");
    cg_capture_begin cb;
    cg_error err;
    if (cg_capture_run_begin(dest, p, &cb, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(cb.kind, CG_CAPTURE_ACTIVE);
    const char *staged = cg_capture_run_staging_trace(cb.run);
    assert_non_null(strstr(staged, "/runs/.b.trace-"));
    assert_true(cg_path_exists(staged));
    char *staged_copy = strdup(staged);
    assert_string_equal(cg_capture_run_destination(cb.run), dest);
    capture_some(cb.run);
    cg_publication_receipt rec;
    if (cg_capture_run_publish(cb.run, &rec, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(cg_capture_run_publish(cb.run, &rec, &err), -1); /* once */
    assert_null(cg_capture_run_session(cb.run));
    cg_capture_run_free(cb.run);
    assert_int_equal(rec.status, CG_PUBLICATION_PUBLISHED);
    assert_string_equal(rec.bundle_path, dest);
    assert_false(cg_path_exists(staged_copy)); /* staged trace removed after publishing */
    free(staged_copy);
    /* receipt JSON field order */
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, cg_publication_receipt_to_json(&a, &rec), false);
    char want_prefix[8192];
    snprintf(want_prefix, sizeof want_prefix,
             "{\"schema\":\"candle-graph/publication/1\",\"status\":\"published\",\"bundle_path\":\"%s\",\"run_id\":\"%s\","
             "\"verification\":{\"schema\":\"candle-graph/bundle-verification/1\"",
             dest, rec.verification.run_id);
    assert_memory_equal(b.data, want_prefix, strlen(want_prefix));
    cg_buf_free(&b);
    /* semantic verification of the published capture */
    cg_semantic_result res;
    if (cg_bundle_verify_semantic(dest, &rec.verification, false, &res, &err) != 0) fail_msg("%s", err.msg);

    /* a retry of the same planned capture (new session, new run id) does not recapture */
    cg_capture_begin again;
    assert_int_equal(cg_capture_run_begin(dest, p, &again, &err), 0);
    assert_int_equal(again.kind, CG_CAPTURE_ALREADY_PUBLISHED);
    assert_null(again.run);
    assert_int_equal(again.receipt.status, CG_PUBLICATION_ALREADY_PUBLISHED);
    assert_memory_equal(&again.receipt.verification, &rec.verification, sizeof rec.verification);
    cg_buf_reset(&b);
    cg_json_write(&b, cg_publication_receipt_to_json(&a, &again.receipt), false);
    assert_non_null(strstr(b.data, "\"status\":\"already_published\""));
    cg_buf_free(&b);
    bool found = false;
    cg_publication_receipt rr;
    assert_int_equal(cg_reconcile_published_bundle(dest, p, &found, &rr, &err), 0);
    assert_true(found);

    /* a different planned capture at the same destination conflicts (fields in spec order) */
    cg_profile_run *q = plan("toy/eval", 4, "cuda:0");
    assert_int_equal(cg_reconcile_published_bundle(dest, q, &found, &rr, &err), -1);
    if (!strstr(err.msg, "already holds a different planned capture (conflicting entrypoint, correlation_id, "
                         "capture_step, device)"))
        fail_msg("%s", err.msg);
    cg_profile_run_free(q);
    q = cg_profile_run_inference("toy/train", 3, "cpu");
    assert_int_equal(cg_capture_run_begin(dest, q, &again, &err), -1);
    assert_non_null(strstr(err.msg, "(conflicting correlation_id, phase)"));
    cg_profile_run_free(q);

    /* "dir/" is the same destination */
    char *slashed = tb_join(dest, "");
    assert_int_equal(cg_capture_run_begin(slashed, p, &again, &err), 0);
    assert_int_equal(again.kind, CG_CAPTURE_ALREADY_PUBLISHED);
    free(slashed);

    /* a nonexistent destination reconciles to nothing */
    char *none = tb_join(tmp, "runs/none");
    assert_int_equal(cg_reconcile_published_bundle(none, p, &found, &rr, &err), 0);
    assert_false(found);
    free(none);

    /* no nested bundles */
    char *nested = tb_join(dest, "inner/b2");
    assert_int_equal(cg_capture_run_begin(nested, p, &again, &err), -1);
    assert_non_null(strstr(err.msg, "refusing to publish bundle "));
    assert_non_null(strstr(err.msg, " inside existing bundle "));
    assert_false(cg_path_exists(nested));
    free(nested);

    /* a destination that is not a verifiable bundle is never reused */
    tb_write_str(dest, "stray.txt", "x");
    assert_int_equal(cg_capture_run_begin(dest, p, &again, &err), -1);
    assert_non_null(strstr(err.msg, "is not a verifiable evidence bundle; refusing to reuse or overwrite it"));
    assert_non_null(strstr(err.msg, "undeclared regular file in bundle: stray.txt"));
    cg_arena_free(&a);
    cg_profile_run_free(p);
    cg_rm_rf(tmp);
    free(dest);
    free(tmp);
}

static void test_failed_capture_and_run_id_binding(void **st) {
    (void)st;
    char *tmp = tb_tempdir("bpubn");
    char *dest = tb_join(tmp, "b");
    cg_profile_run *p = plan("toy/train", 1, "cpu");
    cg_capture_begin cb;
    cg_error err;
    char *slashed = tb_join(dest, "");
    assert_int_equal(cg_capture_run_begin(slashed, p, &cb, &err), 0); /* "b/" publishes b */
    free(slashed);
    cg_span_id m;
    assert_int_equal(cg_session_begin_measurement(cg_capture_run_session(cb.run), "update", &m, &err), 0);
    cg_publication_receipt rec;
    if (cg_capture_run_publish_failed(cb.run, "out of memory in step 1", &rec, &err) != 0) fail_msg("%s", err.msg);
    cg_capture_run_free(cb.run);
    assert_int_equal(rec.status, CG_PUBLICATION_PUBLISHED);
    char *tp = tb_join(dest, "trace.jsonl");
    cg_trace *t = cg_trace_read_file(tp, NULL, &err);
    assert_non_null(t);
    assert_int_equal(t->terminal.outcome, CG_OUTCOME_FAILED);
    cg_trace_free(t);
    /* a failed-outcome bundle reconciles as already_published */
    cg_capture_begin again;
    assert_int_equal(cg_capture_run_begin(dest, p, &again, &err), 0);
    assert_int_equal(again.kind, CG_CAPTURE_ALREADY_PUBLISHED);

    /* run-ID binding: a bundle whose manifest run_id differs from its trace */
    size_t mlen;
    char *m2 = tb_read(dest, "bundle.json", &mlen);
    char *at = strstr(m2, "\"run_id\": \"");
    assert_non_null(at);
    at += 11;
    *at = *at == 'X' ? 'Y' : 'X'; /* same length, different run id */
    tb_write(dest, "bundle.json", m2, mlen);
    free(m2);
    bool found;
    cg_publication_receipt rr;
    assert_int_equal(cg_reconcile_published_bundle(dest, p, &found, &rr, &err), -1);
    assert_non_null(strstr(err.msg, "published bundle manifest run ID "));
    assert_non_null(strstr(err.msg, " does not match its trace run ID "));
    cg_profile_run_free(p);
    cg_rm_rf(tmp);
    free(tp);
    free(dest);
    free(tmp);
}

static void test_publish_failure_keeps_staged_trace(void **st) {
    (void)st;
    char *tmp = tb_tempdir("bpubn");
    char *dest = tb_join(tmp, "b");
    char *ns = tb_join(tmp, "ns");
    cg_error err;
    assert_int_equal(cg_mkdir_p(ns, &err), 0);
    char *lnk = tb_join(ns, "evil");
    assert_int_equal(symlink("/etc/passwd", lnk), 0);
    cg_profile_run *p = plan("toy/train", 2, "cpu");
    cg_capture_begin cb;
    assert_int_equal(cg_capture_run_begin(dest, p, &cb, &err), 0);
    assert_int_equal(cg_capture_run_with_nsight_dir(cb.run, ns, &err), 0);
    capture_some(cb.run);
    cg_publication_receipt rec;
    assert_int_equal(cg_capture_run_publish(cb.run, &rec, &err), -1);
    const char *staged = cg_capture_run_staging_trace(cb.run);
    assert_non_null(strstr(err.msg, "staged trace retained at "));
    assert_non_null(strstr(err.msg, staged));
    assert_non_null(strstr(err.msg, "symbolic links are not allowed in Nsight inputs: "));
    assert_true(cg_is_regular_nofollow(staged)); /* kept for diagnosis */
    cg_trace *t = cg_trace_read_file(staged, NULL, &err);
    assert_non_null(t); /* a complete, readable trace */
    cg_trace_free(t);
    assert_false(cg_path_exists(dest));
    cg_capture_run_free(cb.run);
    cg_profile_run_free(p);
    cg_rm_rf(tmp);
    free(lnk);
    free(ns);
    free(dest);
    free(tmp);
}

/* ---- crash, then retry with the same planned capture ---- */
/* kill_at: a publish step, or 0 = die in the middle of the capture. */
static void crash_then_retry(int kill_at) {
    char *tmp = tb_tempdir("bpubc");
    char *dest = tb_join(tmp, "b");
    cg_profile_run *p = plan("toy/train", 5, "cpu");
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cg_capture_begin cb;
        cg_error e;
        if (cg_capture_run_begin(dest, p, &cb, &e) != 0) _exit(4);
        capture_some(cb.run);
        if (kill_at == 0) raise(SIGKILL);
        tbs_kill_at_publish_step(kill_at);
        cg_publication_receipt r;
        cg_capture_run_publish(cb.run, &r, &e);
        _exit(3);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    /* the destination is either absent or complete */
    cg_error err;
    cg_bundle_receipt v;
    if (cg_path_exists(dest)) {
        assert_true(kill_at >= CG_PUBLISH_STEP_RENAMED);
        if (cg_bundle_verify(dest, &v, &err) != 0) fail_msg("step %d: %s", kill_at, err.msg);
    } else {
        assert_true(kill_at < CG_PUBLISH_STEP_RENAMED);
    }
    /* retry: a fresh process would do exactly this */
    cg_capture_begin cb;
    if (cg_capture_run_begin(dest, p, &cb, &err) != 0) fail_msg("retry after %d: %s", kill_at, err.msg);
    cg_publication_receipt rec;
    if (cb.kind == CG_CAPTURE_ACTIVE) {
        assert_true(kill_at < CG_PUBLISH_STEP_RENAMED);
        capture_some(cb.run);
        if (cg_capture_run_publish(cb.run, &rec, &err) != 0) fail_msg("retry publish after %d: %s", kill_at, err.msg);
        cg_capture_run_free(cb.run);
        assert_int_equal(rec.status, CG_PUBLICATION_PUBLISHED);
    } else {
        assert_true(kill_at >= CG_PUBLISH_STEP_RENAMED);
        rec = cb.receipt;
        assert_int_equal(rec.status, CG_PUBLICATION_ALREADY_PUBLISHED);
    }
    assert_int_equal(cg_bundle_verify(dest, &v, &err), 0);
    assert_memory_equal(&v, &rec.verification, sizeof v);
    cg_semantic_result res;
    if (cg_bundle_verify_semantic(dest, &v, false, &res, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(tbs_count_bundles(tmp), 1);
    char *l = tbs_listing(tmp, true);
    assert_string_equal(l, "b\n");
    free(l);
    /* a second retry is idempotent */
    assert_int_equal(cg_capture_run_begin(dest, p, &cb, &err), 0);
    assert_int_equal(cb.kind, CG_CAPTURE_ALREADY_PUBLISHED);
    assert_int_equal(tbs_count_bundles(tmp), 1);
    cg_profile_run_free(p);
    cg_rm_rf(tmp);
    free(dest);
    free(tmp);
}

static void test_crash_anywhere_then_retry(void **st) {
    (void)st;
    crash_then_retry(0);
    for (int k = CG_PUBLISH_STEP_STAGING_CREATED; k <= CG_PUBLISH_STEP_PARENT_SYNCED; k++) crash_then_retry(k);
}

/* A concurrent retry publishes the same planned capture between our final
 * reconciliation and our rename: we converge on its bundle. */
static char g_dest[4096];
static void concurrent_publish(cg_publish_step s, const char *staging, void *ctx) {
    (void)ctx;
    if (s != CG_PUBLISH_STEP_VERIFIED) return;
    cg_publish_set_hook(NULL, NULL);
    char *t = tb_join(staging, "trace.jsonl");
    cg_error e;
    assert_int_equal(cg_publish_bundle(g_dest, t, NULL, NULL, &e), 0);
    free(t);
}

static void test_concurrent_retry_converges(void **st) {
    (void)st;
    char *tmp = tb_tempdir("bpubn");
    char *dest = tb_join(tmp, "b");
    snprintf(g_dest, sizeof g_dest, "%s", dest);
    cg_profile_run *p = plan("toy/train", 7, "cpu");
    cg_capture_begin cb;
    cg_error err;
    assert_int_equal(cg_capture_run_begin(dest, p, &cb, &err), 0);
    capture_some(cb.run);
    char *staged = strdup(cg_capture_run_staging_trace(cb.run));
    cg_publish_set_hook(concurrent_publish, NULL);
    cg_publication_receipt rec;
    int rc = cg_capture_run_publish(cb.run, &rec, &err);
    cg_publish_set_hook(NULL, NULL);
    if (rc != 0) fail_msg("%s", err.msg);
    assert_int_equal(rec.status, CG_PUBLICATION_ALREADY_PUBLISHED);
    assert_false(cg_path_exists(staged));
    cg_bundle_receipt v;
    assert_int_equal(cg_bundle_verify(dest, &v, &err), 0);
    assert_memory_equal(&v, &rec.verification, sizeof v);
    assert_int_equal(tbs_count_bundles(tmp), 1);
    cg_capture_run_free(cb.run);
    cg_profile_run_free(p);
    free(staged);
    cg_rm_rf(tmp);
    free(dest);
    free(tmp);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capture_publish_and_reconcile),
        cmocka_unit_test(test_failed_capture_and_run_id_binding),
        cmocka_unit_test(test_publish_failure_keeps_staged_trace),
        cmocka_unit_test(test_crash_anywhere_then_retry),
        cmocka_unit_test(test_concurrent_retry_converges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
