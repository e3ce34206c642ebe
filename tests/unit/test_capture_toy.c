/* Unit test for agent/examples/toy_train: runs the built program
 * ($CG_BINARY_DIR/agent/toy_train) with each flag set and checks that the
 * trace parses and is internally consistent (spans, memory pairing, edges,
 * gradients, contract). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_capture_common.h"

static char *g_toy;
static char *g_dir;

static int group_setup(void **st) {
    (void)st;
    const char *bin = getenv("CG_BINARY_DIR");
    if (!bin || !*bin) {
        fprintf(stderr, "CG_BINARY_DIR is not set (run through ctest)\n");
        return -1;
    }
    g_toy = cg_path_join(bin, "agent/toy_train");
    if (access(g_toy, X_OK) != 0) {
        fprintf(stderr, "%s is not built (cmake --build build --target toy_train)\n", g_toy);
        return -1;
    }
    g_dir = cap_tmpdir();
    return 0;
}

static int group_teardown(void **st) {
    (void)st;
    if (g_dir) cg_rm_rf(g_dir);
    free(g_dir);
    free(g_toy);
    return 0;
}

/* Runs toy_train with args (NULL-terminated) and --out path; returns the exit status. */
static int run_toy(const char *out, const char *const *args) {
    const char *argv[32];
    int n = 0;
    argv[n++] = g_toy;
    if (out) {
        argv[n++] = "--out";
        argv[n++] = out;
    }
    for (; args && *args; args++) argv[n++] = *args;
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        execv(g_toy, (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

static bool tensor_known(const cg_trace *t, const char *id) {
    for (size_t i = 0; i < t->n_tensors; i++)
        if (!strcmp(t->tensors[i].tensor_id, id)) return true;
    for (size_t i = 0; i < t->n_ops; i++) {
        if (t->ops[i].output && !strcmp(t->ops[i].output, id)) return true;
        for (size_t j = 0; j < t->ops[i].inputs.n; j++)
            if (!strcmp(t->ops[i].inputs.items[j], id)) return true;
    }
    return false;
}

/* Logical memory pairing as health does it (events in timestamp order, key
 * (device, storage)): no unpaired free, no size mismatch; returns live count. */
static size_t memory_live_after_walk(const cg_trace *t) {
    size_t n = t->n_memory;
    size_t *order = calloc(n ? n : 1, sizeof *order);
    for (size_t i = 0; i < n; i++) order[i] = i;
    for (size_t i = 1; i < n; i++) /* stable insertion sort by timestamp */
        for (size_t j = i; j > 0 && t->memory[order[j - 1]].timestamp_ns >
                                        t->memory[order[j]].timestamp_ns; j--) {
            size_t x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
    const cg_memory **live = calloc(n ? n : 1, sizeof *live);
    size_t n_live = 0;
    for (size_t k = 0; k < n; k++) {
        const cg_memory *m = &t->memory[order[k]];
        size_t at = n_live;
        for (size_t i = 0; i < n_live; i++)
            if (!strcmp(live[i]->storage_id, m->storage_id) && !strcmp(live[i]->device, m->device))
                at = i;
        if (m->is_free) {
            assert_true(at < n_live); /* unpaired_free */
            assert_int_equal(live[at]->bytes, m->bytes);
            live[at] = live[--n_live];
        } else if (at < n_live) {
            assert_int_equal(live[at]->bytes, m->bytes);
            assert_string_not_equal(live[at]->tensor_id, m->tensor_id);
        } else {
            live[n_live++] = m;
        }
    }
    free(live);
    free(order);
    return n_live;
}

static void check_consistent(const cg_trace *t) {
    size_t measured = 0, steps[4] = {0};
    for (size_t i = 0; i < t->n_spans; i++) {
        const cg_span *s = &t->spans[i];
        measured += s->measured;
        steps[s->step]++;
        if (s->parent_id) assert_non_null(cg_trace_find_span(t, s->parent_id));
    }
    assert_int_equal(measured, 1);
    assert_int_equal(steps[CG_STEP_FORWARD], 1);
    /* required labels each name exactly one span */
    for (size_t i = 0; i < t->run.contract.required_semantic_labels.n; i++) {
        size_t hits = 0;
        for (size_t j = 0; j < t->n_spans; j++)
            hits += !strcmp(t->spans[j].name, t->run.contract.required_semantic_labels.items[i]);
        assert_int_equal(hits, 1);
    }
    for (size_t i = 0; i < t->n_ops; i++) {
        const cg_op *o = &t->ops[i];
        const cg_span *s = cg_trace_find_span(t, o->span_id);
        assert_non_null(s);
        assert_true(o->timestamp_ns >= s->start_ns);
        if (s->closed) assert_true(o->timestamp_ns + o->duration_ns <= s->start_ns + s->duration_ns);
        assert_true(o->has_output_dense_bytes);
        assert_false(o->output_dense_bytes_derived);
    }
    for (size_t i = 0; i < t->n_tensors; i++)
        assert_non_null(cg_trace_find_span(t, t->tensors[i].span_id));
    for (size_t i = 0; i < t->n_memory; i++)
        assert_non_null(cg_trace_find_span(t, t->memory[i].span_id));
    for (size_t i = 0; i < t->n_edges; i++) {
        const cg_edge *e = &t->edges[i];
        if (e->is_data) {
            assert_true(tensor_known(t, e->from));
            assert_true(tensor_known(t, e->to));
        } else {
            const cg_span *to = cg_trace_find_span(t, e->to);
            assert_non_null(cg_trace_find_span(t, e->from));
            assert_non_null(to);
            assert_string_equal(to->parent_id, e->from);
            if (to->closed) assert_int_equal(e->host_duration_ns, to->duration_ns);
        }
    }
    assert_int_equal(t->n_device_memory, 0); /* CPU: no physical memory samples */
    cap_assert_healthy(t, t->terminal.outcome == CG_OUTCOME_COMPLETE);
    assert_int_equal(t->n_device_intervals, 0);
    assert_int_equal(t->run.contract.physical_memory, CG_COV_NONE);
    assert_int_equal(t->run.contract.device_timing, CG_COV_NONE);
}

static void test_default_run_is_complete(void **st) {
    (void)st;
    char *out = cg_path_join(g_dir, "default.jsonl");
    assert_int_equal(run_toy(out, NULL), 0);
    cg_trace *t = cap_parse_ok(out);
    assert_int_equal(t->terminal.outcome, CG_OUTCOME_COMPLETE);
    assert_int_equal(t->run.capture_step, 3);
    assert_int_equal(t->run.warmup_steps, 2);
    assert_string_equal(t->run.entrypoint, "toy::train::update");
    assert_string_equal(t->run.device, "cpu");
    assert_int_equal(t->run.contract.measurement_scope, CG_SCOPE_PROFILED_WORK);
    assert_int_equal(t->run.contract.gradients, CG_COV_PARTIAL);
    assert_null(t->run.contract.gradient_contract);
    assert_null(t->run.identity);
    check_consistent(t);
    size_t steps[4] = {0};
    for (size_t i = 0; i < t->n_spans; i++) {
        assert_true(t->spans[i].closed);
        steps[t->spans[i].step]++;
    }
    assert_int_equal(steps[CG_STEP_BACKWARD], 1);
    assert_int_equal(steps[CG_STEP_OPTIMIZER], 1);
    const cg_span *meas = cg_trace_find_span(t, "s2");
    assert_true(meas->measured);
    assert_string_equal(meas->name, "toy/update-000000000003");
    assert_int_equal(memory_live_after_walk(t), 0); /* every alloc is freed */
    size_t allocs = 0;
    for (size_t i = 0; i < t->n_memory; i++) allocs += !t->memory[i].is_free;
    assert_int_equal(allocs * 2, t->n_memory);
    assert_int_equal(t->n_gradients, 4);
    for (size_t i = 0; i < t->n_gradients; i++) {
        assert_int_equal(t->gradients[i].state, CG_GRAD_PRESENT);
        assert_true(t->gradients[i].has_norm && t->gradients[i].norm > 0.0);
    }
    bool cats[CG_CAT_COUNT] = {0};
    for (size_t i = 0; i < t->n_tensors; i++) cats[t->tensors[i].category] = true;
    for (int c = 0; c < CG_CAT_COUNT; c++) assert_true(cats[c]);
    assert_true(t->n_tensor_stats >= 5);
    for (size_t i = 0; i < t->n_tensor_stats; i++) assert_int_equal(t->tensor_stats[i].non_finite, 0);
    assert_true(t->n_ops >= 10);
    cg_trace_free(t);
    free(out);
}

static void test_production_contract_identity(void **st) {
    (void)st;
    char *out = cg_path_join(g_dir, "production.jsonl");
    const char *args[] = {"--production", "--contract", "--implementation", "impl-b", "--pair",
                          "pair-7", "--step", "5", "--seed", "9", NULL};
    assert_int_equal(run_toy(out, args), 0);
    cg_trace *t = cap_parse_ok(out);
    assert_int_equal(t->terminal.outcome, CG_OUTCOME_COMPLETE);
    assert_int_equal(t->run.capture_step, 5);
    assert_int_equal(t->run.contract.measurement_scope, CG_SCOPE_PRODUCTION_EQUIVALENT);
    assert_int_equal(t->run.contract.gradients, CG_COV_COMPLETE);
    const cg_gradient_contract *gc = t->run.contract.gradient_contract;
    assert_non_null(gc);
    char digest[72];
    cg_gradient_manifest_digest(gc->expected, gc->n_expected, digest);
    assert_string_equal(gc->manifest_sha256, digest);
    assert_non_null(t->run.identity);
    assert_string_equal(t->run.identity->implementation_id, "impl-b");
    assert_string_equal(t->run.identity->pair_id, "pair-7");
    assert_string_equal(t->run.identity->seed_policy, "fixed-9");
    cg_error err;
    assert_int_equal(cg_comparison_identity_validate(t->run.identity, &err), 0);
    /* every expected gradient observed exactly once */
    for (size_t i = 0; i < gc->n_expected; i++) {
        size_t hits = 0;
        for (size_t j = 0; j < t->n_gradients; j++)
            hits += !strcmp(t->gradients[j].root, gc->expected[i].root) &&
                    !strcmp(t->gradients[j].key, gc->expected[i].key);
        assert_int_equal(hits, 1);
    }
    check_consistent(t);
    cg_trace_free(t);
    free(out);
}

static void test_slow_variant(void **st) {
    (void)st;
    char *out = cg_path_join(g_dir, "slow.jsonl");
    const char *args[] = {"--slow", "--step", "1", NULL};
    assert_int_equal(run_toy(out, args), 0);
    cg_trace *t = cap_parse_ok(out);
    assert_int_equal(t->run.capture_step, 1);
    assert_int_equal(t->run.warmup_steps, 0);
    bool tagged = false;
    for (size_t i = 0; i < t->run.n_tags; i++)
        tagged |= !strcmp(t->run.tags[i].key, "variant") && !strcmp(t->run.tags[i].value, "slow");
    assert_true(tagged);
    check_consistent(t);
    cg_trace_free(t);
    free(out);
}

static void test_fail_writes_failed_capture(void **st) {
    (void)st;
    char *out = cg_path_join(g_dir, "fail.jsonl");
    const char *args[] = {"--fail", NULL};
    assert_int_equal(run_toy(out, args), 0);
    cg_trace *t = cap_parse_ok(out);
    assert_int_equal(t->terminal.outcome, CG_OUTCOME_FAILED);
    assert_non_null(t->terminal.reason);
    assert_non_null(strstr(t->terminal.reason, "--fail"));
    size_t open = 0;
    for (size_t i = 0; i < t->n_spans; i++) open += !t->spans[i].closed;
    assert_int_equal(open, 3); /* root, measured region, backward */
    cap_assert_healthy(t, false); /* diagnosable: valid, not complete */
    cg_trace_free(t);
    free(out);
}

static void test_bad_usage(void **st) {
    (void)st;
    char *out = cg_path_join(g_dir, "never.jsonl");
    const char *zero[] = {"--step", "0", NULL};
    assert_int_equal(run_toy(out, zero), 2);
    const char *junk[] = {"--step", "x", NULL};
    assert_int_equal(run_toy(out, junk), 2);
    const char *unknown[] = {"--bogus", NULL};
    assert_int_equal(run_toy(out, unknown), 2);
    assert_false(cg_path_exists(out));
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_run_is_complete),
        cmocka_unit_test(test_production_contract_identity),
        cmocka_unit_test(test_slow_variant),
        cmocka_unit_test(test_fail_writes_failed_capture),
        cmocka_unit_test(test_bad_usage),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
