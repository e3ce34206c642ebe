/* Unit tests for lib/campaign: campaign/1 manifest errors (fixture corpus
 * tests/fixtures/campaign/manifest), every campaign-status/1 state, status
 * from states vs from the filesystem, the series manifest-mode gate, and
 * series/1 ordering, filters and errors. Bundles are written by a test helper
 * (trace.jsonl + placeholder evidence.json + a correct bundle.json). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "campaign/campaign.h"
#include "campaign/series.h"
#include "comparison_runs.h"
#include "test_tmpdir.h"

static char g_tmp[256];

static int setup(void **st) {
    (void)st;
    return test_tmpdir_in(g_tmp, sizeof g_tmp, "campaign-test");
}

static int teardown(void **st) {
    (void)st;
    cg_rm_rf(g_tmp);
    return 0;
}

static char *json_text(cg_arena *a, const cg_jv *v) {
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, v, true);
    char *s = cg_arena_strdup(a, b.data);
    cg_buf_free(&b);
    return s;
}

static void write_text(const char *path, const char *text) {
    cg_error err;
    if (cg_write_file(path, text, strlen(text), false, &err) != 0) fail_msg("%s", err.msg);
}

/* ------------------------------------------------------------- manifests */

static void test_manifest_fixtures(void **st) {
    (void)st;
    const char *fx = getenv("CG_FIXTURES");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/campaign/manifest", fx ? fx : "fixtures");
    DIR *d = opendir(dir);
    assert_non_null(d);
    int cases = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "README")) continue;
        char mpath[4400], epath[4400], jpath[4400];
        snprintf(mpath, sizeof mpath, "%s/%s/manifest.json", dir, e->d_name);
        snprintf(epath, sizeof epath, "%s/%s/expected_error.txt", dir, e->d_name);
        snprintf(jpath, sizeof jpath, "%s/%s/expected.json", dir, e->d_name);
        cg_arena a;
        cg_arena_init(&a, 0);
        cg_error err;
        cg_err_clear(&err);
        cg_campaign_manifest m;
        int rc = cg_campaign_manifest_load(&a, mpath, &m, &err);
        char *want = cg_read_file(epath, 0, NULL, NULL);
        if (want) {
            if (rc == 0) fail_msg("%s: loaded, expected error %s", e->d_name, want);
            char exp[8192];
            char *ph = strstr(want, "{path}");
            if (ph) snprintf(exp, sizeof exp, "%.*s%s%s", (int)(ph - want), want, mpath, ph + 6);
            else snprintf(exp, sizeof exp, "%s", want);
            size_t el = strlen(exp);
            if (el && exp[el - 1] == ':') {
                if (strncmp(err.msg, exp, el) != 0) fail_msg("%s: got %s, want prefix %s", e->d_name, err.msg, exp);
            } else if (strcmp(err.msg, exp) != 0) {
                fail_msg("%s: got %s, want %s", e->d_name, err.msg, exp);
            }
            free(want);
        } else {
            if (rc != 0) fail_msg("%s: %s", e->d_name, err.msg);
            char *j = cg_read_file(jpath, 0, NULL, NULL);
            assert_non_null(j);
            cg_buf b = CG_BUF_INIT;
            cg_json_write(&b, cg_campaign_manifest_to_json(&a, &m), false);
            cg_buf_putc(&b, '\n');
            assert_string_equal(b.data, j);
            cg_buf_free(&b);
            free(j);
        }
        cg_arena_free(&a);
        cases++;
    }
    closedir(d);
    assert_true(cases >= 14);
}

static void test_manifest_read_error_and_resolution(void **st) {
    (void)st;
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_error err;
    cg_campaign_manifest m;
    assert_int_equal(cg_campaign_manifest_load(&a, "/nonexistent/campaign.json", &m, &err), -1);
    assert_true(!strncmp(err.msg, "read campaign manifest /nonexistent/campaign.json: ", 51));
    assert_string_equal(cg_campaign_resolve_bundle(&a, "campaign.json", "b1"), "./b1");
    assert_string_equal(cg_campaign_resolve_bundle(&a, "dir/sub/campaign.json", "runs/b1"), "dir/sub/runs/b1");
    assert_string_equal(cg_campaign_resolve_bundle(&a, "/abs/c.json", "b1"), "/abs/b1");
    cg_arena_free(&a);
}

/* ------------------------------------------------------------- status */

static void run_default(ts_run *r, const char *id, uint64_t step) {
    ts_run_default(r, id, "impl", 100 + step);
    r->capture_step = step;
    r->warmup_steps = step - 1;
}

/* A campaign with one capture in every state. */
static void make_campaign(const char *root) {
    char p[4096];
    ts_run r;
    /* step 3: published */
    run_default(&r, "run-3", 3);
    snprintf(p, sizeof p, "%s/runs/s3", root);
    assert_int_equal(ts_write_run_bundle(p, &r), 0);
    /* step 1: missing (nothing written) */
    /* step 2: verification_failed (trace bytes changed after publication) */
    run_default(&r, "run-2", 2);
    snprintf(p, sizeof p, "%s/runs/s2", root);
    assert_int_equal(ts_write_run_bundle(p, &r), 0);
    snprintf(p, sizeof p, "%s/runs/s2/trace.jsonl", root);
    FILE *f = fopen(p, "r+");
    assert_non_null(f);
    fputc('[', f);
    fclose(f);
    /* step 4: identity_mismatch (entrypoint) */
    run_default(&r, "run-4", 4);
    r.entrypoint = "eval";
    snprintf(p, sizeof p, "%s/runs/s4", root);
    assert_int_equal(ts_write_run_bundle(p, &r), 0);
    /* step 5: identity_mismatch (capture_step) */
    run_default(&r, "run-5", 6);
    snprintf(p, sizeof p, "%s/runs/s5", root);
    assert_int_equal(ts_write_run_bundle(p, &r), 0);
    /* step 6: failed_run */
    run_default(&r, "run-6", 6);
    r.failed_reason = "out of memory";
    snprintf(p, sizeof p, "%s/runs/s6", root);
    assert_int_equal(ts_write_run_bundle(p, &r), 0);
    /* step 7: verified bundle whose trace does not parse */
    snprintf(p, sizeof p, "%s/runs/s7", root);
    assert_int_equal(ts_write_bundle(p, "not json\n", 9, "run-7"), 0);
    snprintf(p, sizeof p, "%s/campaign.json", root);
    write_text(p, "{\"schema\":\"candle-graph/campaign/1\",\"campaign_id\":\"camp\",\"entrypoint\":\"train\",\"planned\":["
                  "{\"capture_step\":7,\"bundle\":\"runs/s7\"},{\"capture_step\":3,\"bundle\":\"runs/s3\"},"
                  "{\"capture_step\":1,\"bundle\":\"runs/s1\"},{\"capture_step\":2,\"bundle\":\"runs/s2\"},"
                  "{\"capture_step\":6,\"bundle\":\"runs/s6\"},{\"capture_step\":5,\"bundle\":\"runs/s5\"},"
                  "{\"capture_step\":4,\"bundle\":\"runs/s4\"}]}\n");
}

static const cg_jv *capture(const cg_jv *status, size_t i) {
    return cg_jv_at(cg_jv_get(status, "captures"), i);
}

static const char *cstate(const cg_jv *status, size_t i) {
    return cg_jv_as_str(cg_jv_get(cg_jv_get(capture(status, i), "state"), "state"));
}

static void test_status_every_state(void **st) {
    (void)st;
    char root[512], manifest[600];
    snprintf(root, sizeof root, "%s/status", g_tmp);
    make_campaign(root);
    snprintf(manifest, sizeof manifest, "%s/campaign.json", root);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_error err;
    cg_err_clear(&err);
    cg_campaign_manifest m;
    cg_capture_state *states = NULL;
    cg_jv *v = cg_campaign_status(&a, manifest, &states, &m, &err);
    if (!v) fail_msg("%s", err.msg);
    assert_string_equal(cg_jv_as_str(cg_jv_get(v, "schema")), "candle-graph/campaign-status/1");
    uint64_t n;
    assert_true(cg_jv_as_u64(cg_jv_get(v, "planned"), &n) && n == 7);
    assert_true(cg_jv_as_u64(cg_jv_get(v, "published"), &n) && n == 1);
    assert_true(cg_jv_as_u64(cg_jv_get(v, "missing"), &n) && n == 1);
    assert_true(cg_jv_as_u64(cg_jv_get(v, "failed"), &n) && n == 5);
    for (size_t i = 0; i < 7; i++) {
        assert_true(cg_jv_as_u64(cg_jv_get(capture(v, i), "capture_step"), &n));
        assert_int_equal(n, i + 1); /* sorted by capture_step */
    }
    assert_string_equal(cstate(v, 0), "missing");
    assert_string_equal(cstate(v, 1), "verification_failed");
    assert_string_equal(cstate(v, 2), "published");
    assert_string_equal(cstate(v, 3), "identity_mismatch");
    assert_string_equal(cstate(v, 4), "identity_mismatch");
    assert_string_equal(cstate(v, 5), "failed_run");
    assert_string_equal(cstate(v, 6), "verification_failed");
    assert_string_equal(cg_jv_as_str(cg_jv_get(capture(v, 2), "bundle")), "runs/s3");
    const cg_jv *s;
    s = cg_jv_get(capture(v, 1), "state");
    assert_string_equal(cg_jv_as_str(cg_jv_get(s, "message")), "bundle file \"trace.jsonl\" SHA-256 mismatch");
    s = cg_jv_get(capture(v, 2), "state");
    assert_string_equal(cg_jv_as_str(cg_jv_get(s, "run_id")), "run-3");
    assert_true(cg_is_sha256_hex(cg_jv_as_str(cg_jv_get(s, "manifest_sha256"))));
    assert_int_equal(cg_jv_len(s), 3);
    s = cg_jv_get(capture(v, 3), "state");
    assert_string_equal(cg_jv_as_str(cg_jv_get(s, "message")),
                        "entrypoint mismatch: manifest declares \"train\", bundle trace observes \"eval\"");
    s = cg_jv_get(capture(v, 4), "state");
    assert_string_equal(cg_jv_as_str(cg_jv_get(s, "message")),
                        "capture_step mismatch: manifest plans 5, bundle trace observes 6");
    s = cg_jv_get(capture(v, 5), "state");
    assert_string_equal(cg_jv_as_str(cg_jv_get(s, "run_id")), "run-6");
    assert_string_equal(cg_jv_as_str(cg_jv_get(s, "reason")), "out of memory");
    s = cg_jv_get(capture(v, 0), "state");
    assert_int_equal(cg_jv_len(s), 1);
    /* JSON of the state: tagged object nested under "state" */
    const char *txt = json_text(&a, capture(v, 2));
    assert_non_null(strstr(txt, "\"state\": {\n    \"state\": \"published\",\n    \"run_id\": \"run-3\""));

    /* the same document from pre-computed states */
    char *fs_text = json_text(&a, v);
    char *st_text = json_text(&a, cg_campaign_status_from_states(&a, &m, states));
    assert_string_equal(fs_text, st_text);

    /* series manifest mode gate */
    cg_err_clear(&err);
    assert_int_equal(cg_campaign_require_published(&m, states, &err), -1);
    assert_string_equal(err.msg,
                        "series requires every planned capture to be published; not published: step 1 (runs/s1): "
                        "missing, step 2 (runs/s2): verification_failed, step 4 (runs/s4): identity_mismatch, "
                        "step 5 (runs/s5): identity_mismatch, step 6 (runs/s6): failed_run, step 7 (runs/s7): "
                        "verification_failed; run `campaign-status` for the full reconciliation");
    cg_arena_free(&a);
}

static void test_status_from_facts(void **st) {
    (void)st;
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_planned_capture planned[2] = {{9, "b9"}, {2, "b2"}};
    cg_campaign_manifest m = {"camp", "train", planned, 2};
    cg_capture_state states[2];
    cg_capture_state_from_facts(&a, &m, &planned[0], "train", 9, CG_OUTCOME_FAILED, NULL, "r9", "x", &states[0]);
    assert_int_equal(states[0].kind, CG_CAPTURE_FAILED_RUN);
    cg_capture_state_from_facts(&a, &m, &planned[1], "train", 2, CG_OUTCOME_COMPLETE, NULL, "r2",
                                "0000000000000000000000000000000000000000000000000000000000000000", &states[1]);
    cg_jv *v = cg_campaign_status_from_states(&a, &m, states);
    const char *t = json_text(&a, v);
    assert_non_null(strstr(t, "\"reason\": null"));
    uint64_t n;
    assert_true(cg_jv_as_u64(cg_jv_get(capture(v, 0), "capture_step"), &n) && n == 2);
    assert_true(cg_jv_as_u64(cg_jv_get(v, "failed"), &n) && n == 1);
    cg_error err;
    assert_int_equal(cg_campaign_require_published(&m, states, &err), -1);
    states[0].kind = CG_CAPTURE_PUBLISHED;
    assert_int_equal(cg_campaign_require_published(&m, states, &err), 0);
    cg_arena_free(&a);
}

/* ------------------------------------------------------------- series */

static void series_run(ts_run *r, const char *id, uint64_t step, uint64_t dur) {
    run_default(r, id, step);
    r->duration_ns = dur;
}

static void test_series_ordering_and_filters(void **st) {
    (void)st;
    char b3[512], b1[512], b2[512];
    snprintf(b3, sizeof b3, "%s/series/b3", g_tmp);
    snprintf(b1, sizeof b1, "%s/series/b1", g_tmp);
    snprintf(b2, sizeof b2, "%s/series/b2", g_tmp);
    ts_run r;
    series_run(&r, "r3", 3, 300);
    r.n_ts = 3;
    r.ts[0] = (ts_event){"model.w", 3.0, 4.0, 0};
    r.ts[1] = (ts_event){"model.w", 3.5, 4.5, 1};
    r.ts[2] = (ts_event){"other", 1.0, 1.0, 0};
    r.n_grads = 2;
    r.grads[0] = (ts_grad){"parameters", "model.w", "present", 0.5};
    r.grads[1] = (ts_grad){"parameters", "model.b", "missing", 0};
    assert_int_equal(ts_write_run_bundle(b3, &r), 0);
    series_run(&r, "r1", 1, 100);
    r.n_ts = 1;
    r.ts[0] = (ts_event){"model.w", 1.0, 2.0, 0};
    r.n_grads = 1;
    r.grads[0] = (ts_grad){"parameters", "model.w", "zero", 0.0};
    assert_int_equal(ts_write_run_bundle(b1, &r), 0);
    series_run(&r, "r2", 2, 200);
    r.measured = 2; /* two measured regions → no outer wall time */
    assert_int_equal(ts_write_run_bundle(b2, &r), 0);

    cg_arena a;
    cg_arena_init(&a, 0);
    cg_error err;
    cg_err_clear(&err);
    const char *roots[] = {b3, b1, b2};
    cg_jv *v = cg_build_series(&a, roots, 3, NULL, &err);
    if (!v) fail_msg("%s", err.msg);
    cg_jv_materialize(&a, v); /* the point arrays are lazy (series.h) */
    assert_string_equal(cg_jv_as_str(cg_jv_get(v, "schema")), "candle-graph/series/1");
    assert_string_equal(cg_jv_as_str(cg_jv_get(v, "coordinate")), "capture_step");
    assert_int_equal(cg_jv_get(v, "label_prefix")->type, CG_JNULL);
    const cg_jv *inputs = cg_jv_get(v, "inputs"), *timing = cg_jv_get(v, "outer_wall_time");
    uint64_t n;
    for (size_t i = 0; i < 3; i++) {
        assert_true(cg_jv_as_u64(cg_jv_get(cg_jv_at(inputs, i), "capture_step"), &n) && n == i + 1);
        assert_true(cg_is_sha256_hex(cg_jv_as_str(cg_jv_get(cg_jv_at(inputs, i), "manifest_sha256"))));
    }
    assert_string_equal(cg_jv_as_str(cg_jv_get(cg_jv_at(inputs, 0), "bundle")), b1);
    assert_string_equal(cg_jv_as_str(cg_jv_get(cg_jv_at(inputs, 0), "run_id")), "r1");
    assert_true(cg_jv_as_u64(cg_jv_get(cg_jv_at(timing, 0), "outer_wall_time_ns"), &n) && n == 100);
    assert_int_equal(cg_jv_get(cg_jv_at(timing, 1), "outer_wall_time_ns")->type, CG_JNULL);
    assert_true(cg_jv_as_u64(cg_jv_get(cg_jv_at(timing, 2), "outer_wall_time_ns"), &n) && n == 300);
    const cg_jv *ts = cg_jv_get(v, "tensor_stats");
    assert_int_equal(cg_jv_len(ts), 2);
    assert_string_equal(ts->u.obj.m[0].key, "model.w"); /* keys sorted */
    assert_string_equal(ts->u.obj.m[1].key, "other");
    const cg_jv *w = cg_jv_get(ts, "model.w");
    assert_int_equal(cg_jv_len(w), 3); /* duplicates in one run are kept */
    double d;
    assert_true(cg_jv_as_u64(cg_jv_get(cg_jv_at(w, 0), "capture_step"), &n) && n == 1);
    assert_true(cg_jv_as_f64(cg_jv_get(cg_jv_at(w, 1), "rms"), &d) && d == 3.0);
    assert_true(cg_jv_as_f64(cg_jv_get(cg_jv_at(w, 2), "rms"), &d) && d == 3.5);
    assert_true(cg_jv_as_u64(cg_jv_get(cg_jv_at(w, 2), "non_finite"), &n) && n == 1);
    assert_true(cg_jv_as_u64(cg_jv_get(cg_jv_at(w, 2), "elements"), &n) && n == 4);
    const cg_jv *g = cg_jv_get(v, "gradients");
    assert_int_equal(cg_jv_len(g), 2);
    assert_string_equal(g->u.obj.m[0].key, "parameters/model.b");
    const cg_jv *gw = cg_jv_get(g, "parameters/model.w");
    assert_int_equal(cg_jv_len(gw), 2);
    assert_string_equal(cg_jv_as_str(cg_jv_get(cg_jv_at(gw, 0), "state")), "zero");
    assert_true(cg_jv_as_f64(cg_jv_get(cg_jv_at(gw, 0), "norm"), &d) && d == 0.0);
    assert_int_equal(cg_jv_get(cg_jv_at(cg_jv_get(g, "parameters/model.b"), 0), "norm")->type, CG_JNULL);

    /* label prefix filters tensor stats and gradient composites */
    cg_jv *f = cg_build_series(&a, roots, 3, "model.", &err);
    assert_non_null(f);
    assert_string_equal(cg_jv_as_str(cg_jv_get(f, "label_prefix")), "model.");
    assert_int_equal(cg_jv_len(cg_jv_get(f, "tensor_stats")), 1);
    assert_int_equal(cg_jv_len(cg_jv_get(f, "gradients")), 0);
    f = cg_build_series(&a, roots, 3, "parameters/model.w", &err);
    assert_int_equal(cg_jv_len(cg_jv_get(f, "tensor_stats")), 0);
    assert_int_equal(cg_jv_len(cg_jv_get(f, "gradients")), 1);

    /* points → JSON → points give the same document */
    cg_series_point pts[3];
    for (size_t i = 0; i < 3; i++) {
        cg_series_point p;
        assert_int_equal(cg_series_point_from_bundle(&a, roots[i], &p, &err), 0);
        cg_buf b = CG_BUF_INIT;
        cg_json_write(&b, cg_series_point_to_json(&a, &p), false);
        cg_jv *pv = cg_json_parse(&a, b.data, b.len, NULL, &err);
        assert_non_null(pv);
        if (cg_series_point_from_json(&a, pv, &pts[i], &err) != 0) fail_msg("%s", err.msg);
        cg_buf_free(&b);
    }
    assert_string_equal(json_text(&a, v), json_text(&a, cg_build_series_from_points(&a, pts, 3, NULL, &err)));
    cg_arena_free(&a);
}

static void test_series_errors(void **st) {
    (void)st;
    char x[512], y[512], z[512], p[512], bad[512];
    snprintf(x, sizeof x, "%s/serr/x", g_tmp);
    snprintf(y, sizeof y, "%s/serr/y", g_tmp);
    snprintf(z, sizeof z, "%s/serr/z", g_tmp);
    snprintf(p, sizeof p, "%s/serr/p", g_tmp);
    snprintf(bad, sizeof bad, "%s/serr/nothing", g_tmp);
    ts_run r;
    series_run(&r, "rx", 2, 10);
    assert_int_equal(ts_write_run_bundle(x, &r), 0);
    series_run(&r, "ry", 2, 11);
    assert_int_equal(ts_write_run_bundle(y, &r), 0);
    series_run(&r, "rz", 3, 12);
    r.entrypoint = "eval";
    assert_int_equal(ts_write_run_bundle(z, &r), 0);
    series_run(&r, "rp", 4, 12);
    r.phase = "infer";
    assert_int_equal(ts_write_run_bundle(p, &r), 0);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_error err;
    char want[2048];
    assert_null(cg_build_series(&a, NULL, 0, NULL, &err));
    assert_string_equal(err.msg, "series requires at least one bundle");
    const char *dup[] = {x, y};
    assert_null(cg_build_series(&a, dup, 2, NULL, &err));
    snprintf(want, sizeof want, "ambiguous series coordinate: capture_step 2 is provided by both %s and %s", x, y);
    assert_string_equal(err.msg, want);
    const char *mixe[] = {x, z};
    assert_null(cg_build_series(&a, mixe, 2, NULL, &err));
    snprintf(want, sizeof want, "series bundles mix entrypoints: %s observes \"eval\", expected \"train\" from %s", z, x);
    assert_string_equal(err.msg, want);
    const char *mixp[] = {x, p};
    assert_null(cg_build_series(&a, mixp, 2, NULL, &err));
    snprintf(want, sizeof want, "series bundles mix phases: %s observes \"infer\", expected \"train\" from %s", p, x);
    assert_string_equal(err.msg, want);
    const char *missing[] = {x, bad};
    assert_null(cg_build_series(&a, missing, 2, NULL, &err));
    snprintf(want, sizeof want, "verify series bundle %s: ", bad);
    assert_true(!strncmp(err.msg, want, strlen(want)));
    cg_arena_free(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest_fixtures),
        cmocka_unit_test(test_manifest_read_error_and_resolution),
        cmocka_unit_test(test_status_every_state),
        cmocka_unit_test(test_status_from_facts),
        cmocka_unit_test(test_series_ordering_and_filters),
        cmocka_unit_test(test_series_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
