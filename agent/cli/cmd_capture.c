/* candle-graph capture — runs a CUDA program under the CUPTI collector
 * (libcandlegraph-cupti.so, injected with CUDA_INJECTION64_PATH), turns what
 * it recorded into one trace/10 (host spans from the capture API or NVTX
 * ranges, device intervals and memory samples from CUPTI, collector status as
 * meta tags), publishes the bundle (a failed run is published as a failed
 * capture), optionally signs it and drops it in a spool for `daemon`.
 *
 * Environment given to the program:
 *   CUDA_INJECTION64_PATH  the collector
 *   CG_CAPTURE_TRACE       where an instrumented program writes its trace
 *                          (also CG_CAPTURE_ENTRYPOINT / _STEP / _PHASE)
 *   CG_CUPTI_STATUS        the collector's status file
 *   --nvtx-spans: CG_CUPTI_TRACE (the collector opens the session itself),
 *   CG_CUPTI_NVTX=1, CG_CUPTI_MEASURE, NVTX_INJECTION64_PATH (libcupti).
 * The collector is found through CG_CUPTI_COLLECTOR, else beside the
 * executable (cupti/, ../lib/, ../lib/candle-graph/). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/json.h"
#include "bundle/publish.h"
#include "bundle/signature.h"
#include "capture/capture.h"
#include "cli_spool.h"
#include "cli_util.h"
#include "trace/health.h"
#include "trace/trace.h"

const char cg_cmd_capture_help[] =
    "usage: candle-graph capture --entrypoint E --step N [--train|--infer] --bundle DIR "
    "[--nvtx-spans] [--measure LABEL] [--nsys] [--sign KEY] [--spool DIR] -- CMD ARGS...\n"
    "Run CMD under the CUPTI collector, merge host and device evidence into one trace/10 and "
    "publish it as a bundle.\n"
    "  --entrypoint E     entrypoint of the captured run\n"
    "  --step N           one-based training update / inference invocation that is captured\n"
    "  --train | --infer  phase (default --train)\n"
    "  --bundle DIR       bundle destination (must not exist)\n"
    "  --nvtx-spans       uninstrumented program: NVTX push/pop ranges become spans\n"
    "  --measure LABEL    with --nvtx-spans: the NVTX range that is the measured region\n"
    "  --nsys             not available in this build (see docs/agent.md)\n"
    "  --sign KEY         sign the bundle with this Ed25519 private key (<DIR>.sig.json)\n"
    "  --spool DIR        copy the finished bundle (and signature) into this daemon spool\n"
    "Prints {bundle, outcome, exit_status, collector, health, gaps, signature, spool_entry}. "
    "A run that fails is still published, as a failed capture.\n";

typedef struct {
    const char *entrypoint, *bundle, *measure, *sign_key, *spool;
    uint64_t step;
    bool infer, nvtx;
    char **cmd;
} capture_opts;

static bool file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static char *find_collector(void) {
    const char *env = getenv("CG_CUPTI_COLLECTOR");
    if (env && *env) return file_exists(env) ? strdup(env) : NULL;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return NULL;
    exe[n] = '\0';
    char dir[4096];
    cg_path_parent(exe, dir, sizeof dir);
    static const char *const rel[] = {"cupti/libcandlegraph-cupti.so",
                                      "../lib/libcandlegraph-cupti.so",
                                      "../lib/candle-graph/libcandlegraph-cupti.so"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char *p = cg_path_join(dir, rel[i]);
        if (p && file_exists(p)) {
            char *r = realpath(p, NULL);
            free(p);
            return r;
        }
        free(p);
    }
    return NULL;
}

/* libcupti for NVTX_INJECTION64_PATH (the NVTX loader needs a full path). */
static const char *find_libcupti(void) {
    const char *env = getenv("CG_CUPTI_LIBRARY");
    if (env && *env) return env;
    static const char *const c[] = {"/usr/local/cuda/lib64/libcupti.so.13",
                                    "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
                                    "/usr/local/cuda/lib64/libcupti.so",
                                    "/usr/local/cuda/lib/libcupti.so.13"};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        if (file_exists(c[i])) return c[i];
    return NULL;
}

/* Runs the program; returns its wait status, or -1 when it could not start. */
static int run_program(const capture_opts *o, const char *collector, const char *trace,
                       const char *status) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        char step[32];
        snprintf(step, sizeof step, "%llu", (unsigned long long)o->step);
        setenv("CUDA_INJECTION64_PATH", collector, 1);
        setenv("CG_CUPTI_STATUS", status, 1);
        setenv("CG_CAPTURE_ENTRYPOINT", o->entrypoint, 1);
        setenv("CG_CAPTURE_STEP", step, 1);
        setenv("CG_CAPTURE_PHASE", o->infer ? "infer" : "train", 1);
        if (o->nvtx) {
            setenv("CG_CUPTI_TRACE", trace, 1);
            setenv("CG_CUPTI_NVTX", "1", 1);
            setenv("CG_CUPTI_ENTRYPOINT", o->entrypoint, 1);
            setenv("CG_CUPTI_STEP", step, 1);
            setenv("CG_CUPTI_PHASE", o->infer ? "infer" : "train", 1);
            if (o->measure) setenv("CG_CUPTI_MEASURE", o->measure, 1);
            const char *lib = find_libcupti();
            if (lib && !getenv("NVTX_INJECTION64_PATH")) setenv("NVTX_INJECTION64_PATH", lib, 1);
            unsetenv("CG_CAPTURE_TRACE");
        } else {
            setenv("CG_CAPTURE_TRACE", trace, 1);
            unsetenv("CG_CUPTI_TRACE");
        }
        execvp(o->cmd[0], o->cmd);
        fprintf(stderr, "candle-graph: cannot run %s: %s\n", o->cmd[0], strerror(errno));
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return st;
}

static void describe_status(int st, char *out, size_t n, int *exit_status) {
    if (st < 0) {
        snprintf(out, n, "the command could not be started");
        *exit_status = -1;
    } else if (WIFEXITED(st)) {
        *exit_status = WEXITSTATUS(st);
        snprintf(out, n, "command exited with status %d", *exit_status);
    } else if (WIFSIGNALED(st)) {
        *exit_status = 128 + WTERMSIG(st);
        snprintf(out, n, "command was killed by signal %d", WTERMSIG(st));
    } else {
        *exit_status = -1;
        snprintf(out, n, "command ended abnormally");
    }
}

/* A trace without a terminal (the program died): append a failed terminal at
 * the latest host time the file records. */
static int close_crashed_trace(const char *path, const char *reason, cg_error *err) {
    size_t len = 0;
    char *text = cg_read_file(path, 0, &len, err);
    if (!text) return -1;
    cg_arena a;
    cg_arena_init(&a, 0);
    uint64_t latest = 0;
    size_t n_spans = 0, cap = 0;
    struct { char *id; uint64_t start; } *spans = NULL;
    bool has_terminal = false, ends_nl = len == 0 || text[len - 1] == '\n';
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        size_t ll = nl ? (size_t)(nl - line) : strlen(line);
        cg_error perr;
        cg_jv *v = ll ? cg_json_parse(&a, line, ll, NULL, &perr) : NULL;
        const cg_jv *kind = v ? cg_jv_get(v, "kind") : NULL;
        if (kind && kind->type == CG_JSTR) {
            const char *k = kind->u.str.s;
            uint64_t x = 0, d = 0;
            if (strcmp(k, "terminal") == 0) has_terminal = true;
            if (strcmp(k, "span_start") == 0 && cg_jv_as_u64(cg_jv_get(v, "start_ns"), &x)) {
                if (n_spans == cap) {
                    cap = cap ? cap * 2 : 64;
                    void *p = realloc(spans, cap * sizeof *spans);
                    if (!p) abort();
                    spans = p;
                }
                const cg_jv *id = cg_jv_get(v, "id");
                spans[n_spans].id = id && id->type == CG_JSTR ? (char *)id->u.str.s : "";
                spans[n_spans++].start = x;
                if (x > latest) latest = x;
            } else if (strcmp(k, "span_end") == 0 && cg_jv_as_u64(cg_jv_get(v, "duration_ns"), &d)) {
                const cg_jv *id = cg_jv_get(v, "id");
                for (size_t i = 0; id && id->type == CG_JSTR && i < n_spans; i++)
                    if (strcmp(spans[i].id, id->u.str.s) == 0 && spans[i].start + d > latest)
                        latest = spans[i].start + d;
            } else if (strcmp(k, "device_interval") != 0 &&
                       cg_jv_as_u64(cg_jv_get(v, "timestamp_ns"), &x)) {
                if (cg_jv_as_u64(cg_jv_get(v, "duration_ns"), &d)) x += d;
                if (x > latest) latest = x;
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    free(spans);
    free(text);
    int rc = 0;
    if (!has_terminal) {
        cg_terminal t = {.outcome = CG_OUTCOME_FAILED, .timestamp_ns = latest, .reason = reason};
        cg_buf b = CG_BUF_INIT;
        if (!ends_nl) cg_buf_append(&b, "\n", 1);
        cg_json_write(&b, cg_event_terminal_json(&a, &t), false);
        cg_buf_append(&b, "\n", 1);
        FILE *f = fopen(path, "a");
        if (!f || fwrite(b.data, 1, b.len, f) != b.len || fclose(f) != 0) {
            rc = cg_err_set(err, CG_EIO, "append terminal to %s: %s", path, strerror(errno));
        }
        cg_buf_free(&b);
    }
    cg_arena_free(&a);
    return rc;
}

/* A trace for a run that never produced one. */
static int write_failed_trace(const capture_opts *o, const char *path, const char *reason,
                              cg_error *err) {
    cg_profile_run *run = o->infer ? cg_profile_run_inference(o->entrypoint, o->step, "cuda:0")
                                   : cg_profile_run_training(o->entrypoint, o->step, "cuda:0");
    if (!run) return cg_err_set(err, CG_EINVAL, "cannot describe the run");
    cg_profile_run_tag(run, "capture.collector", "cupti");
    cg_session *s = cg_session_open(path, run, err);
    cg_profile_run_free(run);
    if (!s) return -1;
    int rc = cg_session_finish_failed(s, reason, err);
    cg_session_free(s);
    return rc;
}

static void put_tag(cg_trace *t, const char *key, const char *value) {
    for (size_t i = 0; i < t->run.n_tags; i++)
        if (strcmp(t->run.tags[i].key, key) == 0) {
            t->run.tags[i].value = cg_arena_strdup(&t->arena, value);
            return;
        }
    cg_kv *tags = cg_arena_alloc(&t->arena, (t->run.n_tags + 1) * sizeof *tags);
    size_t j = 0;
    bool placed = false;
    for (size_t i = 0; i < t->run.n_tags; i++) {
        if (!placed && strcmp(key, t->run.tags[i].key) < 0) {
            tags[j++] = (cg_kv){cg_arena_strdup(&t->arena, key), cg_arena_strdup(&t->arena, value)};
            placed = true;
        }
        tags[j++] = t->run.tags[i];
    }
    if (!placed) tags[j++] = (cg_kv){cg_arena_strdup(&t->arena, key), cg_arena_strdup(&t->arena, value)};
    t->run.tags = tags;
    t->run.n_tags = j;
}

static void tag_u64(cg_trace *t, const cg_jv *st, const char *field, const char *tag) {
    uint64_t x = 0;
    char buf[32];
    if (st && cg_jv_as_u64(cg_jv_get(st, field), &x)) {
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)x);
        put_tag(t, tag, buf);
    }
}

static int parse_args(int argc, char **argv, capture_opts *o) {
    memset(o, 0, sizeof *o);
    const char *step = NULL;
    bool train = false, nsys = false;
    int i = 1;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        int r;
        if ((r = cli_take_value(argc, argv, &i, "--entrypoint", NULL, &o->entrypoint)) ||
            (r = cli_take_value(argc, argv, &i, "--step", NULL, &step)) ||
            (r = cli_take_value(argc, argv, &i, "--bundle", NULL, &o->bundle)) ||
            (r = cli_take_value(argc, argv, &i, "--measure", NULL, &o->measure)) ||
            (r = cli_take_value(argc, argv, &i, "--sign", NULL, &o->sign_key)) ||
            (r = cli_take_value(argc, argv, &i, "--spool", NULL, &o->spool))) {
            if (r < 0) return 2;
            continue;
        }
        if (cli_is_flag(argv[i], "--train", NULL)) train = true;
        else if (cli_is_flag(argv[i], "--infer", NULL)) o->infer = true;
        else if (cli_is_flag(argv[i], "--nvtx-spans", NULL)) o->nvtx = true;
        else if (cli_is_flag(argv[i], "--nsys", NULL)) nsys = true;
        else return cli_usage_error("capture", "unknown argument %s (the command goes after --)", argv[i]);
    }
    if (!o->entrypoint || !step || !o->bundle)
        return cli_usage_error("capture", "--entrypoint, --step and --bundle are required");
    if (i >= argc) return cli_usage_error("capture", "missing the command to run after --");
    if (train && o->infer) return cli_usage_error("capture", "--train and --infer exclude each other");
    if (o->measure && !o->nvtx)
        return cli_usage_error("capture", "--measure names an NVTX range: it needs --nvtx-spans");
    if (nsys)
        return cli_usage_error("capture", "--nsys is not implemented in this build yet");
    char *end = NULL;
    errno = 0;
    unsigned long long n = strtoull(step, &end, 10);
    if (errno || !end || *end || step[0] == '-' || n == 0)
        return cli_usage_error("capture", "--step must be a one-based integer");
    o->step = n;
    o->cmd = argv + i;
    return 0;
}

int cg_cmd_capture(int argc, char **argv) {
    capture_opts o;
    int prc = parse_args(argc, argv, &o);
    if (prc) return prc;
    if (cg_path_exists(o.bundle)) return cli_failf("bundle destination already exists: %s", o.bundle);
    char *collector = find_collector();
    if (!collector)
        return cli_failf("capture: libcandlegraph-cupti.so not found (set CG_CUPTI_COLLECTOR)");
    char work[4200];
    snprintf(work, sizeof work, "%s.capture-%ld", o.bundle, (long)getpid());
    cg_error err;
    cg_err_clear(&err);
    cg_rm_rf(work);
    if (cg_mkdir_p(work, &err) != 0) {
        free(collector);
        return cli_fail(&err);
    }
    char *trace = cg_path_join(work, "trace.jsonl"), *status = cg_path_join(work, "cupti-status.json");
    int rc = 1;
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_trace *t = NULL;
    cg_health *h = NULL;
    char *sidecar = NULL, *entry = NULL;

    int wst = run_program(&o, collector, trace, status);
    char reason[256];
    int exit_status = 0;
    describe_status(wst, reason, sizeof reason, &exit_status);
    bool failed_run = exit_status != 0;

    /* 1. Make sure there is a trace with a terminal. */
    if (!cg_path_exists(trace)) {
        char why[400];
        snprintf(why, sizeof why, "%s without writing a trace%s", reason,
                 o.nvtx ? "" : " (an instrumented program writes $CG_CAPTURE_TRACE)");
        if (write_failed_trace(&o, trace, why, &err) != 0) goto out;
        failed_run = true;
    } else if (close_crashed_trace(trace, reason, &err) != 0) {
        goto out;
    }
    t = cg_trace_read_file(trace, NULL, &err);
    if (!t) {
        cg_err_context(&err, "the captured trace is not a valid trace/10");
        goto out;
    }
    /* 2. A run that failed is a failed capture, whatever the trace says. */
    if (failed_run && t->terminal.outcome == CG_OUTCOME_COMPLETE) {
        t->terminal.outcome = CG_OUTCOME_FAILED;
        t->terminal.reason = cg_arena_strdup(&t->arena, reason);
    }
    /* 3. Collector status → meta tags (dropped records are never silent). */
    size_t slen = 0;
    char *stext = cg_read_file(status, 1 << 20, &slen, NULL);
    cg_jv *st = stext ? cg_json_parse(&a, stext, slen, NULL, &err) : NULL;
    free(stext);
    cg_err_clear(&err);
    put_tag(t, "capture.collector", "cupti");
    if (st) {
        const cg_jv *active = cg_jv_get(st, "active"), *kinds = cg_jv_get(st, "kinds");
        put_tag(t, "cupti.active", active && active->type == CG_JBOOL && active->u.b ? "true" : "false");
        if (kinds && kinds->type == CG_JSTR) put_tag(t, "cupti.kinds", kinds->u.str.s);
        tag_u64(t, st, "cupti_version", "cupti.version");
        tag_u64(t, st, "dropped_records", "cupti.dropped_records");
        tag_u64(t, st, "unattributed", "cupti.unattributed");
        tag_u64(t, st, "untimed", "cupti.untimed");
    } else {
        put_tag(t, "cupti.active", "false");
        put_tag(t, "cupti.status", "missing");
    }
    if (cg_trace_write_file(t, trace, &err) != 0) goto out;

    /* 4. Publish, sign, spool. */
    if (cg_publish_bundle(o.bundle, trace, NULL, NULL, &err) != 0) goto out;
    if (o.sign_key && cg_bundle_sign(o.bundle, o.sign_key, &sidecar, &err) != 0) goto out;
    if (o.spool && cli_spool_enqueue(o.spool, o.bundle, sidecar, &entry, &err) != 0) goto out;

    /* 5. Report. */
    h = cg_health_analyze(t);
    cg_jv *gaps = cg_jv_arr(&a);
    for (size_t i = 0; i < h->n_issues; i++)
        if (h->issues[i].severity == CG_SEV_WARNING)
            cg_jv_arr_push(&a, gaps, cg_jv_str(&a, h->issues[i].message));
    uint64_t dropped = 0;
    if (st && cg_jv_as_u64(cg_jv_get(st, "dropped_records"), &dropped) && dropped > 0)
        cg_jv_arr_push(&a, gaps, cg_jv_str(&a, cg_arena_printf(&a,
            "%llu CUPTI activity records were dropped: device timing is incomplete",
            (unsigned long long)dropped)));
    if (!st)
        cg_jv_arr_push(&a, gaps, cg_jv_str(&a, "the CUPTI collector did not report (not injected?): "
                                               "no device evidence"));
    else if (!(cg_jv_get(st, "active") && cg_jv_get(st, "active")->u.b))
        cg_jv_arr_push(&a, gaps, cg_jv_str(&a, "the CUPTI collector was disabled: no device intervals"));
    cg_jv *out = cg_jv_obj(&a);
    cg_jv_obj_put(&a, out, "tool", cli_tool_json(&a));
    cg_jv_obj_put(&a, out, "bundle", cg_jv_str(&a, o.bundle));
    cg_jv_obj_put(&a, out, "outcome", cg_jv_str(&a, cg_outcome_name(t->terminal.outcome)));
    cg_jv_obj_put(&a, out, "exit_status", cg_jv_i64(&a, exit_status));
    cg_jv_obj_put(&a, out, "collector", st ? st : cg_jv_null(&a));
    cg_jv *hj = cg_jv_obj(&a);
    cg_jv_obj_put(&a, hj, "structurally_valid", cg_jv_bool(&a, h->structurally_valid));
    cg_jv_obj_put(&a, hj, "capture_complete", cg_jv_bool(&a, h->capture_complete));
    cg_jv_obj_put(&a, out, "health", hj);
    cg_jv_obj_put(&a, out, "gaps", gaps);
    cg_jv_obj_put(&a, out, "signature", sidecar ? cg_jv_str(&a, sidecar) : cg_jv_null(&a));
    cg_jv_obj_put(&a, out, "spool_entry", entry ? cg_jv_str(&a, entry) : cg_jv_null(&a));
    if (t->terminal.outcome == CG_OUTCOME_FAILED)
        fprintf(stderr, "candle-graph: published %s as a failed capture: %s\n", o.bundle,
                t->terminal.reason ? t->terminal.reason : reason);
    rc = cli_write_json(NULL, out);
out:
    if (rc != 0 && err.msg[0]) cli_fail(&err);
    if (h) cg_health_free(h);
    if (t) cg_trace_free(t);
    cg_arena_free(&a);
    cg_rm_rf(work);
    free(trace);
    free(status);
    free(collector);
    free(sidecar);
    free(entry);
    return rc;
}
