/* Unit tests for lib/capture: tensor_stats math (incl. NaN/inf), the
 * CaptureSelector and ProfileRun defaults/builders. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "test_capture_common.h"

static void test_stats_finite(void **st) {
    (void)st;
    float d[] = {1.0f, -2.0f, 3.0f, -4.0f};
    cg_f32_stats s;
    cg_tensor_stats_f32(d, 4, &s);
    assert_int_equal(s.elements, 4);
    assert_int_equal(s.non_finite, 0);
    assert_true(s.rms == sqrt(30.0 / 4.0));
    assert_true(s.abs_max == 4.0);
    assert_true(s.mean == -0.5);

    float one[] = {-0.25f};
    cg_tensor_stats_f32(one, 1, &s);
    assert_true(s.rms == 0.25 && s.abs_max == 0.25 && s.mean == -0.25);

    /* large finite values do not overflow (double accumulation) */
    float big[] = {3.0e38f, 3.0e38f, -3.0e38f};
    cg_tensor_stats_f32(big, 3, &s);
    assert_int_equal(s.non_finite, 0);
    assert_true(isfinite(s.rms) && s.rms > 2.9e38);
    assert_true(s.abs_max == (double)3.0e38f);
    assert_true(fabs(s.mean - (double)3.0e38f / 3.0) < 1e30);
}

static void test_stats_non_finite_written_as_zero(void **st) {
    (void)st;
    float d[] = {1.0f, NAN, INFINITY, -INFINITY, 2.0f};
    cg_f32_stats s;
    cg_tensor_stats_f32(d, 5, &s);
    assert_int_equal(s.elements, 5);
    assert_int_equal(s.non_finite, 3);
    assert_true(s.rms == 0.0 && s.abs_max == 0.0 && s.mean == 0.0);

    float only_inf[] = {INFINITY};
    cg_tensor_stats_f32(only_inf, 1, &s);
    assert_int_equal(s.non_finite, 1);
    assert_true(s.rms == 0.0 && s.abs_max == 0.0 && s.mean == 0.0);

    float only_nan[] = {1.0f, NAN};
    cg_tensor_stats_f32(only_nan, 2, &s);
    assert_int_equal(s.non_finite, 1);
    assert_true(s.rms == 0.0 && s.abs_max == 0.0 && s.mean == 0.0);

    cg_tensor_stats_f32(NULL, 0, &s);
    assert_int_equal(s.elements, 0);
    assert_int_equal(s.non_finite, 0);
    assert_true(s.rms == 0.0 && s.abs_max == 0.0 && s.mean == 0.0);
}

/* Stats recorded through a session parse back (the reader validates them). */
static void test_stats_records_parse(void **st) {
    (void)st;
    char *dir = cap_tmpdir();
    char *path = cg_path_join(dir, "stats.jsonl");
    cg_error err;
    cg_session *s = cap_open_ok(path);
    uint64_t shape[] = {2, 2};
    float clean[] = {0.5f, -1.5f, 2.0f, 0.0f};
    float dirty[] = {NAN, 1.0f, INFINITY, 3.0f};
    assert_int_equal(cg_session_record_tensor_stats_f32(s, "s1", "toy/clean", shape, 2, "bf16",
                                                        clean, 4, &err), 0);
    assert_int_equal(cg_session_record_tensor_stats_f32(s, "s1", "toy/dirty", shape, 2, "f32",
                                                        dirty, 4, &err), 0);
    uint64_t empty_shape[] = {0, 3};
    assert_int_equal(cg_session_record_tensor_stats_f32(s, "s1", "toy/empty", empty_shape, 2,
                                                        "f32", NULL, 0, &err), 0);
    float scalar = 7.0f;
    assert_int_equal(cg_session_record_tensor_stats_f32(s, "s1", "toy/scalar", NULL, 0, "f32",
                                                        &scalar, 1, &err), 0);
    assert_int_equal(cg_session_finish(s, &err), 0);
    cg_session_free(s);

    char *text = cap_slurp(path);
    assert_true(cap_has_line(text, "{\"kind\":\"tensor_stats\",\"span_id\":\"s1\",\"label\":"
                                   "\"toy/dirty\",\"shape\":[2,2],\"dtype\":\"f32\",\"elements\":4,"
                                   "\"non_finite\":2,\"rms\":0.0,\"abs_max\":0.0,\"mean\":0.0}"));
    assert_true(cap_has_line(text, "{\"kind\":\"tensor_stats\",\"span_id\":\"s1\",\"label\":"
                                   "\"toy/scalar\",\"shape\":[],\"dtype\":\"f32\",\"elements\":1,"
                                   "\"non_finite\":0,\"rms\":7.0,\"abs_max\":7.0,\"mean\":7.0}"));
    free(text);
    cg_trace *t = cap_parse_ok(path);
    assert_int_equal(t->n_tensor_stats, 4);
    const cg_tensor_stats *c = &t->tensor_stats[0];
    assert_string_equal(c->label, "toy/clean");
    assert_string_equal(c->dtype, "bf16");
    assert_int_equal(c->elements, 4);
    assert_true(c->rms == sqrt((0.25 + 2.25 + 4.0) / 4.0));
    assert_true(c->abs_max == 2.0);
    assert_true(c->mean == 0.25);
    assert_int_equal(t->tensor_stats[2].elements, 0);
    cg_trace_free(t);
    cg_rm_rf(dir);
    free(path);
    free(dir);
}

static void test_selector(void **st) {
    (void)st;
    cg_error err;
    cg_capture_selector sel = {0};
    assert_int_equal(cg_capture_selector_new(0, &sel, &err), -1);
    assert_int_equal(err.code, CG_EINVAL);
    assert_non_null(strstr(err.msg, "must be one-based"));
    assert_int_equal(cg_capture_selector_new(3, &sel, &err), 0);
    assert_int_equal(cg_capture_selector_selected_invocation(&sel), 3);
    assert_false(cg_capture_selector_is_selected(&sel, 0));
    assert_false(cg_capture_selector_is_selected(&sel, 2));
    assert_true(cg_capture_selector_is_selected(&sel, 3));
    assert_false(cg_capture_selector_is_selected(&sel, 4));
    assert_int_equal(cg_capture_selector_new(1, &sel, &err), 0);
    assert_true(cg_capture_selector_is_selected(&sel, 1));
}

static void test_profile_run_defaults_and_builders(void **st) {
    (void)st;
    cg_profile_run *r = cg_profile_run_training("toy::train::update", 3, "cuda:0");
    const cg_run_meta *m = cg_profile_run_meta(r);
    assert_string_equal(m->entrypoint, "toy::train::update");
    assert_string_equal(m->correlation_id, "toy::train::update/update-3");
    assert_int_equal(m->phase, CG_PHASE_TRAIN);
    assert_int_equal(m->capture_step, 3);
    assert_int_equal(m->warmup_steps, 2);
    assert_string_equal(m->device, "cuda:0");
    assert_int_equal(m->timing_mode, CG_TIMING_HOST);
    assert_false(m->measured_region_device_synchronized);
    assert_int_equal(m->contract.measurement_scope, CG_SCOPE_UNKNOWN);
    assert_int_equal(m->contract.operations, CG_COV_NONE);
    assert_null(m->contract.gradient_contract);
    assert_null(m->identity);
    assert_null(m->run_id);
    assert_null(m->timestamp);
    assert_int_equal(m->n_tags, 0);

    cg_profile_run_measured_region_device_synchronized(r);
    assert_true(m->measured_region_device_synchronized);
    assert_int_equal(m->timing_mode, CG_TIMING_HOST); /* the flag only */
    cg_profile_run_device_synchronized(r);
    assert_int_equal(m->timing_mode, CG_TIMING_DEVICE_SYNCHRONIZED);

    /* tags: sorted by key, replace on repeat */
    assert_int_equal(cg_profile_run_tag(r, "m", "1"), 0);
    assert_int_equal(cg_profile_run_tag(r, "b", "2"), 0);
    assert_int_equal(cg_profile_run_tag(r, "z", "3"), 0);
    assert_int_equal(cg_profile_run_tag(r, "b", "4"), 0);
    assert_int_equal(cg_profile_run_tag(r, "B", "5"), 0);
    m = cg_profile_run_meta(r);
    assert_int_equal(m->n_tags, 4);
    const char *keys[] = {"B", "b", "m", "z"};
    for (size_t i = 0; i < 4; i++) assert_string_equal(m->tags[i].key, keys[i]);
    assert_string_equal(m->tags[1].value, "4");
    for (int i = 0; i < 20; i++) { /* growth keeps order */
        char k[16];
        snprintf(k, sizeof k, "k%02d", 19 - i);
        assert_int_equal(cg_profile_run_tag(r, k, "v"), 0);
    }
    m = cg_profile_run_meta(r);
    assert_int_equal(m->n_tags, 24);
    for (size_t i = 1; i < m->n_tags; i++)
        assert_true(strcmp(m->tags[i - 1].key, m->tags[i].key) < 0);

    /* the contract is deep-copied */
    char label[] = "fwd";
    const char *labels[] = {label};
    cg_expected_gradient exp[] = {{"parameters", "w", "f"}};
    cg_family_contract fam[] = {{"f", CG_FAM_ACTIVE, 1}};
    cg_gradient_contract gc = {.manifest_sha256 = "sha256:00", .expected = exp, .n_expected = 1,
                               .families = fam, .n_families = 1};
    cg_capture_contract c = {.operations = CG_COV_PARTIAL, .gradients = CG_COV_COMPLETE,
                             .gradient_contract = &gc, .required_semantic_labels = {labels, 1}};
    assert_int_equal(cg_profile_run_capture_contract(r, &c), 0);
    label[0] = 'X';
    exp[0].key = "changed";
    m = cg_profile_run_meta(r);
    assert_string_equal(m->contract.required_semantic_labels.items[0], "fwd");
    assert_string_equal(m->contract.gradient_contract->expected[0].key, "w");
    assert_int_equal(m->contract.gradient_contract->families[0].min_present, 1);
    assert_int_equal(m->contract.operations, CG_COV_PARTIAL);

    /* NULL arguments are refused and change nothing */
    assert_int_equal(cg_profile_run_tag(r, NULL, "v"), -1);
    assert_int_equal(cg_profile_run_correlation_id(r, NULL), -1);
    assert_int_equal(cg_profile_run_capture_contract(r, NULL), -1);
    cg_comparison_identity bad = {.workload_id = "w"};
    assert_int_equal(cg_profile_run_comparison_identity(r, &bad), -1);
    assert_null(cg_profile_run_meta(r)->identity);
    assert_int_equal(cg_profile_run_correlation_id(r, "custom"), 0);
    assert_string_equal(cg_profile_run_meta(r)->correlation_id, "custom");
    cg_profile_run_free(r);

    r = cg_profile_run_inference("serve", 1, "cpu");
    m = cg_profile_run_meta(r);
    assert_int_equal(m->phase, CG_PHASE_INFER);
    assert_string_equal(m->correlation_id, "serve/inference-1");
    assert_int_equal(m->warmup_steps, 0);
    cg_profile_run_free(r);
    assert_null(cg_profile_run_training(NULL, 1, "cpu"));
    assert_null(cg_profile_run_inference("x", 1, NULL));
    cg_profile_run_free(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats_finite),
        cmocka_unit_test(test_stats_non_finite_written_as_zero),
        cmocka_unit_test(test_stats_records_parse),
        cmocka_unit_test(test_selector),
        cmocka_unit_test(test_profile_run_defaults_and_builders),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
