/* Wiring tests for libcandlegraph-cupti.so with the stand-in libcupti and
 * libcuda (tests/support/cupti_stub/): the stand-in cuInit injects the real
 * collector through CUDA_INJECTION64_PATH, so InitializeInjection, the CUPTI
 * entry-point resolution, API/NVTX callbacks, buffer requests and
 * completions, the forced flush at finish and at exit, device-memory samples
 * and dropped-record reporting all run for real. Each scenario runs in a
 * forked child (the collector initializes once per process); the parent reads
 * the trace with the trace reader and the collector's status file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(CG_HAVE_CUPTI)
#include <cupti_activity.h>

#include "base/fs.h"
#include "base/json.h"
#include "capture/capture.h"
#include "cupti_stub/cupti_stub.h"
#include "trace/trace.h"
#include "test_tmpdir.h"

static char dir[64];
static char lib_collector[4096], lib_cupti[4096], lib_cuda[4096];
static char trace_path[256], status_path[256];

/* Capture API resolved from the collector library (not the test's own copy). */
static struct {
    cg_profile_run *(*training)(const char *, uint64_t, const char *);
    void (*run_free)(cg_profile_run *);
    cg_session *(*open)(const char *, const cg_profile_run *, cg_error *);
    int (*begin_span)(cg_session *, const char *, cg_span_kind, cg_span_id *, cg_error *);
    int (*begin_measurement)(cg_session *, const char *, cg_span_id *, cg_error *);
    int (*end_span)(cg_session *, cg_span_id, cg_error *);
    int (*finish)(cg_session *, cg_error *);
    void (*free)(cg_session *);
} capi;
static struct {
    cupti_stub_launch_fn launch;
    cupti_stub_raw_fn raw;
    cupti_stub_new_buffer_fn new_buffer;
    cupti_stub_drop_fn drop;
    cupti_stub_nvtx_push_fn push;
    cupti_stub_nvtx_pop_fn pop;
    cupti_stub_device_reset_fn device_reset;
} stub;

#define CHILD_CHECK(cond)                                                                   \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "child check failed: %s (line %d)\n", #cond, __LINE__);        \
            _exit(10);                                                                      \
        }                                                                                   \
    } while (0)

static void *must_sym(void *h, const char *name) {
    void *p = dlsym(h, name);
    if (!p) {
        fprintf(stderr, "missing %s: %s\n", name, dlerror());
        _exit(11);
    }
    return p;
}

/* In the child: load the stand-in driver and inject the collector. */
static void child_inject(void) {
    void *hd = dlopen(lib_cuda, RTLD_NOW);
    void *hc = dlopen(lib_cupti, RTLD_NOW);
    CHILD_CHECK(hd && hc);
    int (*cu_init)(unsigned) = NULL;
    *(void **)(&cu_init) = must_sym(hd, "cuInit");
    CHILD_CHECK(cu_init(0) == 0);
    void *h = dlopen(lib_collector, RTLD_NOW | RTLD_NOLOAD); /* loaded by cuInit */
    CHILD_CHECK(h != NULL);
    *(void **)(&capi.training) = must_sym(h, "cg_profile_run_training");
    *(void **)(&capi.run_free) = must_sym(h, "cg_profile_run_free");
    *(void **)(&capi.open) = must_sym(h, "cg_session_open");
    *(void **)(&capi.begin_span) = must_sym(h, "cg_session_begin_span");
    *(void **)(&capi.begin_measurement) = must_sym(h, "cg_session_begin_measurement");
    *(void **)(&capi.end_span) = must_sym(h, "cg_session_end_span");
    *(void **)(&capi.finish) = must_sym(h, "cg_session_finish");
    *(void **)(&capi.free) = must_sym(h, "cg_session_free");
    *(void **)(&stub.launch) = must_sym(hc, "cupti_stub_launch");
    *(void **)(&stub.raw) = must_sym(hc, "cupti_stub_raw");
    *(void **)(&stub.new_buffer) = must_sym(hc, "cupti_stub_new_buffer");
    *(void **)(&stub.drop) = must_sym(hc, "cupti_stub_drop");
    *(void **)(&stub.push) = must_sym(hc, "cupti_stub_nvtx_push");
    *(void **)(&stub.pop) = must_sym(hc, "cupti_stub_nvtx_pop");
    *(void **)(&stub.device_reset) = must_sym(hc, "cupti_stub_device_reset");
}

static int run_child(void (*body)(void)) {
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        body();
        exit(0); /* runs atexit handlers: the collector's flush at exit */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static int setup(void **st) {
    (void)st;
    const char *bin = getenv("CG_BINARY_DIR");
    if (!bin) bin = "..";
    snprintf(lib_collector, sizeof lib_collector, "%s/agent/cupti/libcandlegraph-cupti.so", bin);
    snprintf(lib_cupti, sizeof lib_cupti, "%s/agent/cupti/libfakecupti.so", bin);
    snprintf(lib_cuda, sizeof lib_cuda, "%s/agent/cupti/libfakecuda.so", bin);
    if (test_tmpdir_in(dir, sizeof dir, "cupti-col")) return -1;
    snprintf(trace_path, sizeof trace_path, "%s/trace.jsonl", dir);
    snprintf(status_path, sizeof status_path, "%s/status.json", dir);
    setenv("CUDA_INJECTION64_PATH", lib_collector, 1);
    setenv("CG_CUPTI_LIBRARY", lib_cupti, 1);
    setenv("CG_CUDA_LIBRARY", lib_cuda, 1);
    setenv("CG_CUPTI_STATUS", status_path, 1);
    return 0;
}

static int teardown(void **st) {
    (void)st;
    cg_rm_rf(dir);
    return 0;
}

static int reset(void **st) {
    (void)st;
    remove(trace_path);
    remove(status_path);
    unsetenv("CG_CUPTI_TRACE");
    unsetenv("CG_CUPTI_NVTX");
    unsetenv("CG_CUPTI_MEASURE");
    unsetenv("CG_STUB_SUBSCRIBE_BUSY");
    unsetenv("CG_FAULT");
    return 0;
}

static cg_trace *read_trace(void) {
    cg_error err;
    cg_trace *t = cg_trace_read_file(trace_path, NULL, &err);
    if (!t) fail_msg("%s", err.msg);
    return t;
}

static uint64_t status_u64(cg_jv *st, const char *key) {
    const cg_jv *v = cg_jv_get(st, key);
    if (!v) fail_msg("status has no %s", key);
    uint64_t x = 0;
    assert_true(cg_jv_as_u64(v, &x));
    return x;
}

static cg_jv *read_status(cg_arena *a) {
    cg_error err;
    size_t len = 0;
    char *text = cg_read_file(status_path, 0, &len, &err);
    if (!text) fail_msg("%s", err.msg);
    cg_jv *v = cg_json_parse(a, text, len, NULL, &err);
    free(text);
    if (!v) fail_msg("%s", err.msg);
    return v;
}

static const char *span_name(const cg_trace *t, const char *id) {
    const cg_span *s = cg_trace_find_span(t, id);
    return s ? s->name : "?";
}

/* ---- scenario 1: instrumented program, two threads --------------------- */
static cg_session *g_session;

static void *worker(void *arg) {
    (void)arg;
    cg_span_id w = 0;
    if (capi.begin_span(g_session, "worker", CG_SPAN_FUNCTION, &w, NULL) != 0) return NULL;
    stub.launch(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 0, 21, 7000, 7300, "_Z6workerv");
    capi.end_span(g_session, w, NULL);
    return NULL;
}

static void instrumented_body(void) {
    child_inject();
    cg_error err;
    cg_profile_run *run = capi.training("train", 1, "cuda:0");
    g_session = capi.open(trace_path, run, &err);
    CHILD_CHECK(g_session != NULL);
    capi.run_free(run);
    cg_span_id step, fwd, bwd;
    CHILD_CHECK(capi.begin_measurement(g_session, "step", &step, &err) == 0);
    CHILD_CHECK(capi.begin_span(g_session, "forward", CG_SPAN_FUNCTION, &fwd, &err) == 0);
    stub.launch(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 0, 7, 1000, 1400, "_Z7forwardv");
    stub.launch(CUPTI_ACTIVITY_KIND_MEMCPY, 0, 7, 1500, 1600, NULL);
    pthread_t th;
    CHILD_CHECK(pthread_create(&th, NULL, worker, NULL) == 0); /* runs inside "forward" */
    pthread_join(th, NULL);
    CHILD_CHECK(capi.end_span(g_session, fwd, &err) == 0);
    stub.new_buffer(); /* backward's records go to another buffer */
    CHILD_CHECK(capi.begin_span(g_session, "backward", CG_SPAN_FUNCTION, &bwd, &err) == 0);
    stub.launch(CUPTI_ACTIVITY_KIND_MEMSET, 0, 7, 2000, 2050, NULL);
    stub.launch(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 0, 7, 2100, 2500, "_Z8backwardv");
    stub.launch(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 0, 7, 0, 0, "_Z7untimedv");
    uint64_t unknown[8] = {0};
    unknown[0] = 0x7ffffff0u; /* a kind from a newer CUPTI */
    stub.raw(unknown, sizeof unknown);
    stub.drop(3);
    CHILD_CHECK(capi.end_span(g_session, bwd, &err) == 0);
    CHILD_CHECK(capi.end_span(g_session, step, &err) == 0);
    CHILD_CHECK(capi.finish(g_session, &err) == 0); /* flushes CUPTI first */
    capi.free(g_session);
}

static void test_instrumented_attribution(void **st) {
    (void)st;
    assert_int_equal(run_child(instrumented_body), 0);
    cg_trace *t = read_trace();
    assert_int_equal(t->terminal.outcome, CG_OUTCOME_COMPLETE);
    assert_int_equal(t->n_device_intervals, 5); /* the untimed kernel is not an interval */
    size_t seen = 0;
    for (size_t i = 0; i < t->n_device_intervals; i++) {
        const cg_device_interval *d = &t->device_intervals[i];
        const char *name = span_name(t, d->span_id);
        assert_string_equal(d->backend, "cupti");
        assert_string_equal(d->clock_id, "cupti-device-0");
        assert_string_equal(d->device, "cuda:0");
        if (d->start_ns == 1000 || d->start_ns == 1500) {
            assert_string_equal(name, "forward");
            seen |= d->start_ns == 1000 ? 1 : 2;
        } else if (d->start_ns == 7000) {
            assert_string_equal(name, "worker"); /* the launching thread's span */
            assert_string_equal(d->stream_id, "21");
            seen |= 4;
        } else if (d->start_ns == 2000 || d->start_ns == 2100) {
            assert_string_equal(name, "backward");
            seen |= d->start_ns == 2000 ? 8 : 16;
        } else {
            fail_msg("unexpected interval at %llu", (unsigned long long)d->start_ns);
        }
    }
    assert_int_equal(seen, 31);
    /* physical memory at the measured region's start and end */
    assert_int_equal(t->n_device_memory, 2);
    const cg_span *step = NULL;
    for (size_t i = 0; i < t->n_spans; i++)
        if (t->spans[i].measured) step = &t->spans[i];
    assert_non_null(step);
    assert_true(t->device_memory[0].timestamp_ns >= step->start_ns);
    assert_true(t->device_memory[1].timestamp_ns <= step->start_ns + step->duration_ns);
    assert_true(t->device_memory[0].has_capacity && t->device_memory[0].has_used);
    assert_true(t->device_memory[1].used_bytes > t->device_memory[0].used_bytes);
    cg_trace_free(t);

    cg_arena a;
    cg_arena_init(&a, 0);
    cg_jv *s = read_status(&a);
    assert_true(cg_jv_get(s, "active")->u.b == true);
    assert_int_equal(status_u64(s, "dropped_records"), 3);
    assert_int_equal(status_u64(s, "dropped_by_cupti"), 3);
    assert_int_equal(status_u64(s, "unknown"), 1);
    assert_int_equal(status_u64(s, "untimed"), 1);
    assert_int_equal(status_u64(s, "intervals"), 5);
    assert_int_equal(status_u64(s, "written"), 5);
    assert_int_equal(status_u64(s, "device_memory_samples"), 2);
    assert_int_equal(status_u64(s, "unattributed"), 0);
    cg_arena_free(&a);
}

/* ---- scenario 2: uninstrumented, NVTX spans, flush at exit ------------- */
static void nvtx_body(void) {
    child_inject(); /* the collector opens its own session here */
    stub.launch(CUPTI_ACTIVITY_KIND_MEMCPY, 0, 7, 100, 200, NULL);
    stub.push("epoch");
    stub.push("step");
    stub.push("forward");
    stub.launch(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 0, 7, 1000, 1100, "_Z1fv");
    stub.pop();
    stub.pop();
    stub.pop();
    stub.pop(); /* one pop too many: counted, ignored */
    stub.push("left_open"); /* closed by the collector at exit */
    stub.launch(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 0, 7, 2000, 2200, "_Z1gv");
    /* no flush, no finish: exit() must deliver everything */
}

static void test_nvtx_spans_flush_at_exit(void **st) {
    (void)st;
    setenv("CG_CUPTI_TRACE", trace_path, 1);
    setenv("CG_CUPTI_NVTX", "1", 1);
    setenv("CG_CUPTI_MEASURE", "step", 1);
    setenv("CG_CUPTI_ENTRYPOINT", "candle_train", 1);
    assert_int_equal(run_child(nvtx_body), 0);
    cg_trace *t = read_trace();
    assert_int_equal(t->terminal.outcome, CG_OUTCOME_COMPLETE);
    assert_string_equal(t->run.entrypoint, "candle_train");
    assert_int_equal(t->n_spans, 5); /* root, epoch, step, forward, left_open */
    const cg_span *step = NULL;
    for (size_t i = 0; i < t->n_spans; i++) {
        assert_true(t->spans[i].closed);
        if (t->spans[i].measured) step = &t->spans[i];
    }
    assert_non_null(step);
    assert_string_equal(step->name, "step");
    assert_string_equal(span_name(t, step->parent_id), "epoch");
    assert_int_equal(t->n_device_intervals, 3);
    for (size_t i = 0; i < t->n_device_intervals; i++) {
        const cg_device_interval *d = &t->device_intervals[i];
        const char *want = d->start_ns == 100 ? "candle_train"
                           : d->start_ns == 1000 ? "forward" : "left_open";
        assert_string_equal(span_name(t, d->span_id), want);
    }
    assert_int_equal(t->n_device_memory, 2);
    cg_trace_free(t);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_jv *s = read_status(&a);
    assert_int_equal(status_u64(s, "nvtx_spans"), 4);
    assert_int_equal(status_u64(s, "nvtx_unmatched"), 1);
    assert_int_equal(status_u64(s, "dropped_records"), 0);
    cg_arena_free(&a);
}

/* ---- scenario 3: another CUPTI client holds the subscription ----------- */
static void busy_body(void) {
    child_inject();
    cg_error err;
    cg_profile_run *run = capi.training("train", 1, "cuda:0");
    cg_session *s = capi.open(trace_path, run, &err);
    CHILD_CHECK(s != NULL);
    capi.run_free(run);
    cg_span_id m;
    CHILD_CHECK(capi.begin_measurement(s, "step", &m, &err) == 0);
    stub.launch(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 0, 7, 1000, 1100, "_Z1fv");
    CHILD_CHECK(capi.end_span(s, m, &err) == 0);
    CHILD_CHECK(capi.finish(s, &err) == 0); /* the program is never disturbed */
    capi.free(s);
}

static void test_subscriber_busy_degrades(void **st) {
    (void)st;
    setenv("CG_STUB_SUBSCRIBE_BUSY", "1", 1);
    assert_int_equal(run_child(busy_body), 0);
    cg_trace *t = read_trace();
    assert_int_equal(t->terminal.outcome, CG_OUTCOME_COMPLETE);
    assert_int_equal(t->n_device_intervals, 0);
    cg_trace_free(t);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_jv *s = read_status(&a);
    assert_true(cg_jv_get(s, "active")->u.b == false);
    const cg_jv *errors = cg_jv_get(s, "errors");
    assert_non_null(errors);
    assert_true(errors->type == CG_JARR && errors->u.arr.n >= 1);
    assert_non_null(strstr(errors->u.arr.items[0]->u.str.s, "another CUPTI client"));
    cg_arena_free(&a);
}

/* ---- scenario 4: cudaDeviceReset would discard undelivered records ---- */
static void reset_body(void) {
    child_inject();
    cg_error err;
    cg_profile_run *run = capi.training("train", 1, "cuda:0");
    cg_session *s = capi.open(trace_path, run, &err);
    CHILD_CHECK(s != NULL);
    capi.run_free(run);
    cg_span_id m;
    CHILD_CHECK(capi.begin_measurement(s, "step", &m, &err) == 0);
    stub.launch(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 0, 7, 1000, 1100, "_Z1fv");
    stub.device_reset(); /* the collector flushes on the ENTER callback */
    CHILD_CHECK(capi.end_span(s, m, &err) == 0);
    CHILD_CHECK(capi.finish(s, &err) == 0);
    capi.free(s);
}

static void test_flush_before_device_reset(void **st) {
    (void)st;
    assert_int_equal(run_child(reset_body), 0);
    cg_trace *t = read_trace();
    assert_int_equal(t->n_device_intervals, 1);
    assert_string_equal(span_name(t, t->device_intervals[0].span_id), "step");
    cg_trace_free(t);
}

/* ---- scenario 5: out of memory inside the host process ----------------- */
static void oom_body(void) {
    child_inject(); /* CG_FAULT=alloc:N:ENOMEM armed in the collector */
    cg_error err;
    cg_session *s = NULL;
    cg_profile_run *run = capi.training("train", 1, "cuda:0");
    if (run) {
        s = capi.open(trace_path, run, &err); /* may report out of memory */
        capi.run_free(run);
    }
    if (s) {
        cg_span_id m;
        if (capi.begin_measurement(s, "step", &m, &err) == 0) {
            stub.launch(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 0, 7, 1000, 1100, "_Z1fv");
            capi.end_span(s, m, &err);
        }
        capi.finish(s, &err);
        capi.free(s);
    }
    /* the program goes on: exit(0) below runs the collector's exit flush */
}

/* Whether the status's errors mention `what`. */
static bool status_error_has(cg_jv *st, const char *what) {
    const cg_jv *errors = cg_jv_get(st, "errors");
    for (size_t i = 0; errors && i < errors->u.arr.n; i++)
        if (strstr(errors->u.arr.items[i]->u.str.s, what)) return true;
    return false;
}

/* The N-th allocation counted in the collector's process fails, for N = 1, 2,
 * … until, past the capture library's allocations, a run captures normally:
 * the host always exits normally, and an allocation failure disables the
 * collector with the reason in its status. */
static void test_out_of_memory_never_ends_host(void **st) {
    (void)st;
    unsigned own = 0, library = 0, clean = 0;
    for (unsigned n = 1; n <= 64 && !(clean > 0 && library > 0); n++) {
        char spec[64];
        snprintf(spec, sizeof spec, "alloc:%u:ENOMEM", n);
        setenv("CG_FAULT", spec, 1);
        remove(status_path);
        if (run_child(oom_body) != 0) fail_msg("host did not exit normally with %s", spec);
        cg_arena a;
        cg_arena_init(&a, 0);
        cg_jv *s = read_status(&a);
        bool oom_own = status_error_has(s, "out of memory for the correlation table");
        bool oom_lib = status_error_has(s, "): collector disabled");
        own += oom_own;
        library += oom_lib;
        if (oom_own || oom_lib) assert_true(cg_jv_get(s, "active")->u.b == false);
        else if (library && cg_jv_get(s, "active")->u.b && status_u64(s, "written") == 1) clean = n;
        cg_arena_free(&a);
    }
    unsetenv("CG_FAULT");
    assert_int_equal(own, 1);    /* the correlation table */
    assert_true(library >= 1);   /* allocations inside the capture library */
    assert_true(clean > 0);      /* past the last allocation: a normal capture */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_out_of_memory_never_ends_host, reset),
        cmocka_unit_test_setup(test_instrumented_attribution, reset),
        cmocka_unit_test_setup(test_flush_before_device_reset, reset),
        cmocka_unit_test_setup(test_nvtx_spans_flush_at_exit, reset),
        cmocka_unit_test_setup(test_subscriber_busy_degrades, reset),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
#else
static void test_no_cupti(void **st) {
    (void)st;
    skip(); /* CUPTI headers absent: agent/cupti is not built (see CMake message) */
}
int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_no_cupti)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
