/* Unit tests for lib/capture: concurrent recording from several threads (each
 * with its own span stack) and a process killed mid-session. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_capture_common.h"

#define THREADS 4
#define ROUNDS 25
#define DEPTH 3

typedef struct worker {
    cg_session *s;
    int index;
    int failures;
    cg_span_id foreign; /* a span opened by this worker, closed by another thread */
    char msg[256];
} worker;

static void note(worker *w, const char *what, const cg_error *err) {
    if (w->failures++ == 0) snprintf(w->msg, sizeof w->msg, "%.40s: %.200s", what, err ? err->msg : "");
}

static void *work(void *arg) {
    worker *w = arg;
    cg_error err;
    for (int r = 0; r < ROUNDS; r++) {
        cg_span_id ids[DEPTH];
        for (int d = 0; d < DEPTH; d++) {
            char name[64];
            snprintf(name, sizeof name, "t%d/r%d/d%d", w->index, r, d);
            if (cg_session_begin_span(w->s, name, CG_SPAN_FUNCTION, &ids[d], &err))
                note(w, "begin", &err);
            if (cg_session_current_span(w->s) != ids[d]) note(w, "current span is not the innermost span", NULL);
        }
        char tid[32];
        snprintf(tid, sizeof tid, "t%d-%d", w->index, r);
        cg_op_record op = {.op_name = "work", .output = tid, .dtype = "f32", .device = "cpu"};
        if (cg_session_record_op(w->s, ids[DEPTH - 1], &op, &err)) note(w, "op", &err);
        double norm = 1.0 + r;
        char key[32];
        snprintf(key, sizeof key, "w%d.r%d", w->index, r);
        if (cg_session_record_gradient(w->s, "parameters", key, CG_GRAD_PRESENT, &norm, &err))
            note(w, "gradient", &err);
        for (int d = DEPTH - 1; d >= 0; d--)
            if (cg_session_end_span(w->s, ids[d], &err)) note(w, "end", &err);
        if (cg_session_current_span(w->s) != CG_SPAN_ROOT) note(w, "current span is not the root", NULL);
    }
    /* leave one span open for the main thread to try (and fail) to close */
    if (cg_session_begin_span(w->s, "handoff", CG_SPAN_FUNCTION, &w->foreign, &err))
        note(w, "handoff", &err);
    return NULL;
}

static void *close_handoff(void *arg) {
    worker *w = arg;
    cg_error err;
    /* threads get fresh identities: a new thread cannot close another's span */
    return (void *)(intptr_t)cg_session_end_span(w->s, w->foreign, &err);
}

static void test_four_threads_nested_spans(void **st) {
    (void)st;
    char *dir = cap_tmpdir();
    char *path = cg_path_join(dir, "threads.jsonl");
    cg_error err;
    cg_session *s = cap_open_ok(path);
    cg_span_id m;
    assert_int_equal(cg_session_begin_measurement(s, "region", &m, &err), 0);

    worker w[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.s = s, .index = i};
        assert_int_equal(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        if (w[i].failures) fail_msg("thread %d: %s", i, w[i].msg);
    }
    /* the main thread's stack is its own: its innermost span is still m */
    assert_int_equal(cg_session_current_span(s), m);
    /* spans the (exited) workers left open cannot be closed from elsewhere */
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(cg_session_end_span(s, w[i].foreign, &err), -1);
        assert_int_equal(err.code, CG_ESTATE);
        assert_non_null(strstr(err.msg, "another thread"));
        pthread_t t2;
        void *rc;
        assert_int_equal(pthread_create(&t2, NULL, close_handoff, &w[i]), 0);
        assert_int_equal(pthread_join(t2, &rc), 0);
        assert_int_equal((intptr_t)rc, -1);
    }
    assert_int_equal(cg_session_end_span(s, m, &err), 0);
    /* open handoff spans block finish */
    assert_int_equal(cg_session_finish(s, &err), -1);
    assert_int_equal(err.code, CG_ESTATE);
    assert_int_equal(cg_session_finish_failed(s, "worker spans left open", &err), 0);
    cg_session_free(s);

    cg_trace *t = cap_parse_ok(path);
    assert_int_equal(t->n_spans, 2 + THREADS * (ROUNDS * DEPTH + 1));
    assert_int_equal(t->n_ops, THREADS * ROUNDS);
    assert_int_equal(t->n_gradients, THREADS * ROUNDS);
    /* gradient ids are unique: gradient-1 .. gradient-N */
    for (size_t i = 0; i < t->n_gradients; i++) {
        char want[32];
        snprintf(want, sizeof want, "gradient-%zu", i + 1);
        assert_string_equal(t->gradients[i].event_id, want);
    }
    /* every span nests under its own thread's span or under the root, inside
     * its parent's interval */
    for (size_t i = 0; i < t->n_spans; i++) {
        const cg_span *sp = &t->spans[i];
        if (!sp->parent_id) {
            assert_string_equal(sp->id, "s1");
            continue;
        }
        const cg_span *p = cg_trace_find_span(t, sp->parent_id);
        assert_non_null(p);
        int ti, ri, di;
        if (sscanf(sp->name, "t%d/r%d/d%d", &ti, &ri, &di) == 3) {
            if (di == 0) {
                assert_string_equal(p->id, "s1");
            } else { /* parent: the same thread's span one level up */
                char want[64];
                snprintf(want, sizeof want, "t%d/r%d/d%d", ti, ri, di - 1);
                assert_string_equal(p->name, want);
            }
        } else if (!strcmp(sp->name, "handoff")) {
            assert_string_equal(p->id, "s1");
        }
        assert_true(sp->start_ns >= p->start_ns);
        if (sp->closed && p->closed)
            assert_true(sp->start_ns + sp->duration_ns <= p->start_ns + p->duration_ns);
    }
    for (size_t i = 0; i < t->n_ops; i++) {
        const cg_span *sp = cg_trace_find_span(t, t->ops[i].span_id);
        assert_non_null(sp);
        assert_true(sp->closed);
        assert_true(t->ops[i].timestamp_ns >= sp->start_ns);
    }
    cap_assert_healthy(t, false); /* failed capture: open worker spans are warnings */
    cg_trace_free(t);
    cg_rm_rf(dir);
    free(path);
    free(dir);
}

/* Threads record complete nested spans and finish cleanly: a valid, complete trace. */
static void *clean_work(void *arg) {
    worker *w = arg;
    cg_error err;
    for (int r = 0; r < ROUNDS; r++) {
        cg_span_id a, b;
        char name[64];
        snprintf(name, sizeof name, "c%d/%d", w->index, r);
        if (cg_session_begin_span(w->s, name, CG_SPAN_MODULE, &a, &err)) note(w, "begin a", &err);
        if (cg_session_begin_span(w->s, "inner", CG_SPAN_OP, &b, &err)) note(w, "begin b", &err);
        if (cg_session_end_span(w->s, b, &err)) note(w, "end b", &err);
        if (cg_session_end_span(w->s, a, &err)) note(w, "end a", &err);
    }
    return NULL;
}

static void test_threads_then_finish_complete(void **st) {
    (void)st;
    char *dir = cap_tmpdir();
    char *path = cg_path_join(dir, "clean.jsonl");
    cg_error err;
    cg_session *s = cap_open_ok(path);
    cg_span_id m;
    assert_int_equal(cg_session_begin_measurement(s, "region", &m, &err), 0);
    worker w[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.s = s, .index = i};
        assert_int_equal(pthread_create(&th[i], NULL, clean_work, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        if (w[i].failures) fail_msg("thread %d: %s", i, w[i].msg);
    }
    assert_int_equal(cg_session_end_span(s, m, &err), 0);
    assert_int_equal(cg_session_finish(s, &err), 0);
    cg_session_free(s);
    cg_trace *t = cap_parse_ok(path);
    assert_int_equal(t->n_spans, 2 + THREADS * ROUNDS * 2);
    assert_int_equal(t->terminal.outcome, CG_OUTCOME_COMPLETE);
    for (size_t i = 0; i < t->n_spans; i++) assert_true(t->spans[i].closed);
    cap_assert_healthy(t, true);
    cg_trace_free(t);
    cg_rm_rf(dir);
    free(path);
    free(dir);
}

/* A child killed mid-session (after flushing) leaves a trace without a
 * terminal record; the reader rejects it. */
static void test_killed_child_leaves_unparseable_trace(void **st) {
    (void)st;
    char *dir = cap_tmpdir();
    char *path = cg_path_join(dir, "crash.jsonl");
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        cg_error err;
        cg_profile_run *r = cg_profile_run_training("crash::step", 1, "cpu");
        cg_session *s = r ? cg_session_open(path, r, &err) : NULL;
        cg_span_id m, a;
        if (!s || cg_session_begin_measurement(s, "region", &m, &err) ||
            cg_session_begin_span(s, "work", CG_SPAN_FUNCTION, &a, &err) ||
            cg_session_record_data_edge(s, "x", "y", &err) || cg_session_flush(s, &err))
            _exit(3);
        char ready = 'r';
        if (write(pfd[1], &ready, 1) != 1) _exit(4);
        for (;;) pause(); /* killed here, mid-session */
    }
    close(pfd[1]);
    char c = 0;
    assert_int_equal(read(pfd[0], &c, 1), 1);
    assert_int_equal(c, 'r');
    close(pfd[0]);
    assert_int_equal(kill(pid, SIGKILL), 0);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));

    char *text = cap_slurp(path);
    assert_int_equal(cap_count_lines(text), 5); /* meta, s1, s2, s3, edge */
    assert_null(strstr(text, "\"terminal\""));
    free(text);
    cg_error err;
    cg_err_clear(&err);
    assert_null(cg_trace_read_file(path, NULL, &err));
    assert_non_null(strstr(err.msg, "trace stream is missing its terminal event"));
    cg_rm_rf(dir);
    free(path);
    free(dir);
}

/* Freeing an unfinished session is like a crash: no terminal. */
static void test_free_without_finish_has_no_terminal(void **st) {
    (void)st;
    char *dir = cap_tmpdir();
    char *path = cg_path_join(dir, "abandoned.jsonl");
    cg_error err;
    cg_session *s = cap_open_ok(path);
    cg_span_id m;
    assert_int_equal(cg_session_begin_measurement(s, "region", &m, &err), 0);
    cg_session_free(s);
    char *text = cap_slurp(path);
    assert_int_equal(cap_count_lines(text), 3);
    free(text);
    assert_null(cg_trace_read_file(path, NULL, &err));
    assert_non_null(strstr(err.msg, "trace stream is missing its terminal event"));
    cg_rm_rf(dir);
    free(path);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_four_threads_nested_spans),
        cmocka_unit_test(test_threads_then_finish_complete),
        cmocka_unit_test(test_killed_child_leaves_unparseable_trace),
        cmocka_unit_test(test_free_without_finish_has_no_terminal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
