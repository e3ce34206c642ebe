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
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fs.h"

#include "base/alloc.h"
#include "base/json.h"
#include "base/sha256.h"
#include "bundle/publish.h"
#include "bundle/signature.h"
#include "capture/capture.h"
#include "capture/revision.h"
#include "cli_spool.h"
#include "cli_util.h"
#include "trace/health.h"
#include "trace/trace.h"

const char cg_cmd_capture_help[] =
    "usage: candle-graph capture --entrypoint E --step N [--train|--infer] --bundle DIR "
    "[--nvtx-spans] [--measure LABEL] [--nsys] [--sign KEY] [--spool DIR] [--git] [--tag KEY=VALUE]... "
    "-- CMD ARGS...\n"
    "Run CMD under the CUPTI collector, merge host and device evidence into one trace/10 and "
    "publish it as a bundle.\n"
    "  --entrypoint E     entrypoint of the captured run\n"
    "  --step N           one-based training update / inference invocation that is captured\n"
    "  --train | --infer  phase (default --train)\n"
    "  --bundle DIR       bundle destination (must not exist)\n"
    "  --nvtx-spans       uninstrumented program: NVTX push/pop ranges become spans\n"
    "  --measure LABEL    with --nvtx-spans: the NVTX range that is the measured region\n"
    "  --nsys             record with Nsight Systems instead of the CUPTI collector (one CUPTI\n"
    "                     client per process): nsys profile, the five nsys stats CSV reports and\n"
    "                     capture-manifest.json go to the bundle's nsight/ (nsys from $CG_NSYS or PATH)\n"
    "  --sign KEY         sign the bundle with this Ed25519 private key (<DIR>.sig.json)\n"
    "  --spool DIR        copy the finished bundle (and signature) into this daemon spool\n"
    "  --git              add the revision tags vcs.commit, vcs.branch, vcs.commit_time, vcs.repository\n"
    "                     and ci.run_url from the working copy and the CI environment (docs/ci.md)\n"
    "  --tag KEY=VALUE    add a tag to the trace's run metadata (repeatable; wins over --git)\n"
    "The program's environment: CG_CAPTURE_TRACE (where an instrumented program writes its\n"
    "trace), CG_CAPTURE_ENTRYPOINT, CG_CAPTURE_STEP, CG_CAPTURE_PHASE.\n"
    "Prints {tool, bundle, outcome, exit_status, collector, health, gaps, signature, spool_entry}.\n"
    "A run that fails is still published, as a failed capture.\n";

typedef struct {
    const char *entrypoint, *bundle, *measure, *sign_key, *spool;
    uint64_t step;
    bool infer, nvtx;
    char *nsys; /* resolved nsys path with --nsys, else NULL */
    char **cmd;
    bool git;                  /* --git: revision tags (detected before the run) */
    cg_revision rev;
    const char *tags[64];      /* --tag KEY=VALUE, in order */
    size_t n_tags;
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
            cg_free(p);
            return r;
        }
        cg_free(p);
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

/* nsys: $CG_NSYS, else the first executable "nsys" on PATH (malloc'd). */
static char *find_nsys(void) {
    const char *env = getenv("CG_NSYS");
    if (env && *env) return access(env, X_OK) == 0 ? strdup(env) : NULL;
    const char *path = getenv("PATH");
    if (!path) return NULL;
    while (*path) {
        size_t n = strcspn(path, ":");
        char dir[4096];
        if (n > 0 && n < sizeof dir) {
            memcpy(dir, path, n);
            dir[n] = '\0';
            char *p = cg_path_join(dir, "nsys");
            if (p && access(p, X_OK) == 0) return p;
            cg_free(p);
        }
        path += n;
        if (*path == ':') path++;
    }
    return NULL;
}

/* Runs argv with stdout+stderr appended to log_path; returns the wait status
 * (-1 when it could not start). */
static int run_logged(char *const *argv, const char *log_path) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        FILE *f = log_path ? freopen(log_path, "a", stdout) : NULL;
        if (f) dup2(fileno(stdout), 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return st;
}

static const char *const nsys_reports[] = {"cuda_gpu_kern_sum", "cuda_api_sum",
                                           "cuda_gpu_mem_time_sum", "nvtx_gpu_proj_trace",
                                           "cuda_gpu_trace"};
#define N_NSYS_REPORTS (sizeof nsys_reports / sizeof nsys_reports[0])

static void join_cmd(cg_buf *b, char *const *argv) {
    for (size_t i = 0; argv[i]; i++) {
        if (i) cg_buf_putc(b, ' ');
        cg_buf_puts(b, argv[i]);
    }
}

/* nsys stats → five CSV reports beside capture.nsys-rep; the exported
 * .sqlite is removed (only declared artifacts may stay). Missing reports are
 * added to `missing` (gap messages). Commands are recorded for the manifest. */
static void nsys_stats(const char *nsys, const char *nsight, cg_arena *a, cg_jv *commands,
                       cg_jv *missing) {
    char *rep = cg_path_join(nsight, "capture.nsys-rep"), *prefix = cg_path_join(nsight, "capture");
    char *log = cg_path_join(nsight, "..");
    char *logfile = cg_path_join(log, "nsys.log");
    for (size_t i = 0; i < N_NSYS_REPORTS; i++) {
        char *argv[] = {(char *)nsys, "stats", "--format", "csv", "--force-export", "true",
                        "--report", (char *)nsys_reports[i], "--output", prefix, rep, NULL};
        int st = run_logged(argv, logfile);
        cg_buf b = CG_BUF_INIT;
        join_cmd(&b, argv);
        cg_buf_putc(&b, '\0');
        cg_jv_arr_push(a, commands, cg_jv_str(a, b.data));
        cg_buf_free(&b);
        char csv[4200];
        snprintf(csv, sizeof csv, "%s_%s.csv", prefix, nsys_reports[i]);
        if (st != 0 || !cg_path_exists(csv))
            cg_jv_arr_push(a, missing, cg_jv_str(a, cg_arena_printf(a,
                "nsys stats report %s was not produced", nsys_reports[i])));
    }
    DIR *d = opendir(nsight);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            size_t n = strlen(e->d_name);
            if (n > 7 && strcmp(e->d_name + n - 7, ".sqlite") == 0) {
                char *p = cg_path_join(nsight, e->d_name);
                unlink(p);
                cg_free(p);
            }
        }
        closedir(d);
    }
    cg_free(rep);
    cg_free(prefix);
    cg_free(log);
    cg_free(logfile);
}

static int cmp_cstr(const void *x, const void *y) {
    return strcmp(*(char *const *)x, *(char *const *)y);
}

static cg_jv *strlist_json(cg_arena *a, const cg_strlist *l) {
    cg_jv *arr = cg_jv_arr(a);
    for (size_t i = 0; i < l->n; i++) cg_jv_arr_push(a, arr, cg_jv_str(a, l->items[i]));
    return arr;
}

/* capture-manifest.json (candle-graph/nsight-capture/1) binding the Nsight
 * artifacts to the trace's run: every regular file of the nsight folder is
 * declared with its size and SHA-256. */
static int write_nsight_manifest(const char *nsys, const char *nsight, const cg_trace *t,
                                 cg_jv *commands, cg_error *err) {
    cg_arena a;
    cg_arena_init(&a, 0);
    int rc = -1;
    char version[256] = "unknown";
    char *vlog = cg_path_join(nsight, "../nsys-version.txt");
    char *vargv[] = {(char *)nsys, "--version", NULL};
    if (run_logged(vargv, vlog) == 0) {
        size_t vl = 0;
        char *v = cg_read_file(vlog, 4096, &vl, NULL);
        if (v) {
            const char *p = v;
            const char *num = strpbrk(p, "0123456789");
            if (num) {
                size_t n = strcspn(num, " \r\n");
                if (n >= sizeof version) n = sizeof version - 1;
                memcpy(version, num, n);
                version[n] = '\0';
            }
            cg_free(v);
        }
    }
    unlink(vlog);
    cg_free(vlog);
    cg_jv *m = cg_jv_obj(&a), *run = cg_jv_obj(&a), *corr = cg_jv_obj(&a), *tool = cg_jv_obj(&a);
    cg_jv_obj_put(&a, m, "schema", cg_jv_str(&a, "candle-graph/nsight-capture/1"));
    cg_jv_obj_put(&a, run, "id", cg_jv_str(&a, t->run.run_id));
    if (t->run.timestamp) cg_jv_obj_put(&a, run, "started_at", cg_jv_str(&a, t->run.timestamp));
    cg_jv_obj_put(&a, m, "run", run);
    cg_jv_obj_put(&a, corr, "id", cg_jv_str(&a, t->run.correlation_id));
    cg_jv_obj_put(&a, m, "correlation", corr);
    cg_jv_obj_put(&a, tool, "name", cg_jv_str(&a, "nsys"));
    cg_jv_obj_put(&a, tool, "version", cg_jv_str(&a, version));
    cg_jv_obj_put(&a, m, "tool", tool);
    cg_jv_obj_put(&a, m, "commands", commands);
    cg_jv *hw = cg_jv_obj(&a), *devices = cg_jv_arr(&a);
    char host[256];
    if (gethostname(host, sizeof host) == 0) {
        host[sizeof host - 1] = '\0';
        cg_jv_obj_put(&a, hw, "host", cg_jv_str(&a, host));
    }
    char *smi_log = cg_path_join(nsight, "../nvidia-smi.txt");
    char *sargv[] = {"nvidia-smi", "--query-gpu=name", "--format=csv,noheader", NULL};
    if (run_logged(sargv, smi_log) == 0) {
        size_t sl = 0;
        char *txt = cg_read_file(smi_log, 65536, &sl, NULL);
        for (char *line = txt; line && *line;) {
            char *nl = strchr(line, '\n');
            if (nl) *nl = '\0';
            if (*line) cg_jv_arr_push(&a, devices, cg_jv_str(&a, line));
            line = nl ? nl + 1 : NULL;
        }
        cg_free(txt);
    }
    unlink(smi_log);
    cg_free(smi_log);
    cg_jv_obj_put(&a, hw, "devices", devices);
    cg_jv_obj_put(&a, m, "hardware", hw);
    cg_jv *rev = cg_jv_obj(&a);
    const char *srcrev = getenv("CG_SOURCE_REVISION");
    if (srcrev && *srcrev) cg_jv_obj_put(&a, rev, t->run.entrypoint, cg_jv_str(&a, srcrev));
    cg_jv_obj_put(&a, m, "source_revisions", rev);
    const cg_capture_contract *c = &t->run.contract;
    cg_jv_obj_put(&a, m, "required_semantic_labels", strlist_json(&a, &c->required_semantic_labels));
    if (c->gpu_expected_semantic_labels.n || c->cpu_only_semantic_labels.n) {
        cg_jv_obj_put(&a, m, "gpu_expected_semantic_labels",
                      strlist_json(&a, &c->gpu_expected_semantic_labels));
        cg_jv_obj_put(&a, m, "cpu_only_semantic_labels", strlist_json(&a, &c->cpu_only_semantic_labels));
    }
    /* artifacts: every regular file, sorted by name */
    cg_jv *arts = cg_jv_arr(&a);
    char **names = NULL;
    size_t n = 0, cap = 0;
    DIR *d = opendir(nsight);
    if (!d) {
        cg_err_set(err, CG_EIO, "open %s: %s", nsight, strerror(errno));
        goto out;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "capture-manifest.json") == 0) continue;
        if (n == cap) names = cg_xgrow(names, &cap, n + 1, sizeof *names);
        names[n++] = cg_arena_strdup(&a, e->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_cstr);
    for (size_t i = 0; i < n; i++) {
        char *p = cg_path_join(nsight, names[i]);
        char hex[65];
        uint64_t size = 0;
        int hr = cg_sha256_file(p, true, hex, &size, err);
        cg_free(p);
        if (hr != 0) goto out;
        cg_jv *art = cg_jv_obj(&a);
        cg_jv_obj_put(&a, art, "path", cg_jv_str(&a, names[i]));
        cg_jv_obj_put(&a, art, "size_bytes", cg_jv_u64(&a, size));
        cg_jv_obj_put(&a, art, "sha256", cg_jv_str(&a, hex));
        cg_jv_arr_push(&a, arts, art);
    }
    cg_jv_obj_put(&a, m, "artifacts", arts);
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, m, true);
    cg_buf_putc(&b, '\n');
    char *mp = cg_path_join(nsight, "capture-manifest.json");
    rc = cg_write_file(mp, b.data, b.len, true, err);
    cg_free(mp);
    cg_buf_free(&b);
out:
    cg_free(names);
    cg_arena_free(&a);
    return rc;
}

static volatile sig_atomic_t g_child_pid;

/* SIGTERM/SIGHUP sent to capture go to the program: it ends, and its run is
 * still published (as a failed capture). */
static void forward_signal(int sig) {
    if (g_child_pid > 0) kill((pid_t)g_child_pid, sig);
}

/* Runs the program; returns its wait status, or -1 when it could not start.
 * While it runs, SIGINT/SIGQUIT are ignored here (the terminal delivers them
 * to the program too, as system(3) does) and SIGTERM/SIGHUP are forwarded. */
static int run_program(const capture_opts *o, const char *collector, const char *trace,
                       const char *status, const char *nsight, cg_arena *a, cg_jv *commands) {
    char **argv = o->cmd;
    if (o->nsys) {
        size_t n = 0;
        while (o->cmd[n]) n++;
        char *out = cg_path_join(nsight, "capture");
        static char *const pre[] = {"profile", "--trace", "cuda,nvtx", "--sample", "none",
                                    "--cpuctxsw", "none", "--force-overwrite", "true", "--output"};
        size_t np = sizeof pre / sizeof pre[0];
        argv = cg_arena_zalloc(a, (n + np + 3) * sizeof *argv);
        argv[0] = o->nsys;
        for (size_t i = 0; i < np; i++) argv[1 + i] = pre[i];
        argv[1 + np] = cg_arena_strdup(a, out);
        for (size_t i = 0; i < n; i++) argv[2 + np + i] = o->cmd[i];
        cg_free(out);
        cg_buf b = CG_BUF_INIT;
        join_cmd(&b, argv);
        cg_buf_putc(&b, '\0');
        cg_jv_arr_push(a, commands, cg_jv_str(a, b.data));
        cg_buf_free(&b);
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        dup2(2, 1); /* the program's output is diagnostics: stdout carries our JSON */
        char step[32];
        snprintf(step, sizeof step, "%llu", (unsigned long long)o->step);
        if (collector) { /* with --nsys, nsys injects its own CUPTI client */
            setenv("CUDA_INJECTION64_PATH", collector, 1);
            setenv("CG_CUPTI_STATUS", status, 1);
        }
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
        execvp(argv[0], argv);
        fprintf(stderr, "Error: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    g_child_pid = pid;
    struct sigaction ign, fwd, old_int, old_quit, old_term, old_hup;
    memset(&ign, 0, sizeof ign);
    memset(&fwd, 0, sizeof fwd);
    ign.sa_handler = SIG_IGN;
    fwd.sa_handler = forward_signal;
    sigemptyset(&ign.sa_mask);
    sigemptyset(&fwd.sa_mask);
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    sigaction(SIGTERM, &fwd, &old_term);
    sigaction(SIGHUP, &fwd, &old_hup);
    int st = 0, rc;
    while ((rc = waitpid(pid, &st, 0)) < 0 && errno == EINTR) {}
    g_child_pid = 0;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    return rc < 0 ? -1 : st;
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
                if (n_spans == cap) spans = cg_xgrow(spans, &cap, n_spans + 1, sizeof *spans);
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
    cg_free(spans);
    cg_free(text);
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

/* --git and --tag (issue 15); --tag values win. */
static void add_revision_tags(cg_trace *t, const capture_opts *o) {
    if (o->git) {
        put_tag(t, "vcs.commit", o->rev.commit);
        put_tag(t, "vcs.branch", o->rev.branch);
        put_tag(t, "vcs.commit_time", o->rev.commit_time);
        if (o->rev.repository[0]) put_tag(t, "vcs.repository", o->rev.repository);
        if (o->rev.run_url[0]) put_tag(t, "ci.run_url", o->rev.run_url);
    }
    for (size_t i = 0; i < o->n_tags; i++) {
        const char *eq = strchr(o->tags[i], '=');
        char *key = cg_arena_strndup(&t->arena, o->tags[i], (size_t)(eq - o->tags[i]));
        put_tag(t, key, eq + 1);
    }
}

static void tag_u64(cg_trace *t, const cg_jv *st, const char *field, const char *tag) {
    uint64_t x = 0;
    char buf[32];
    if (st && cg_jv_as_u64(cg_jv_get(st, field), &x)) {
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)x);
        put_tag(t, tag, buf);
    }
}

static uint64_t status_u64(const cg_jv *st, const char *field) {
    uint64_t x = 0;
    return st && cg_jv_as_u64(cg_jv_get(st, field), &x) ? x : 0;
}

/* The collector is the authority on device-timing coverage: with it active,
 * intervals recorded and nothing lost (no dropped, untimed or unwritten
 * records) the coverage is complete (a program's own "partial" stays);
 * any loss makes it partial, so the evidence's nested_device_time capability
 * and its gaps say the device timing is incomplete. */
static void adjust_device_coverage(cg_trace *t, const cg_jv *st) {
    const cg_jv *active = st ? cg_jv_get(st, "active") : NULL;
    if (!active || active->type != CG_JBOOL || !active->u.b || t->n_device_intervals == 0) return;
    bool lossy = status_u64(st, "dropped_records") || status_u64(st, "untimed") ||
                 status_u64(st, "write_failed");
    cg_coverage *c = &t->run.contract.device_timing;
    if (lossy) *c = CG_COV_PARTIAL;
    else if (*c == CG_COV_NONE) *c = CG_COV_COMPLETE;
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
        const char *tag = NULL;
        if ((r = cli_take_value(argc, argv, &i, "--tag", NULL, &tag))) {
            if (r < 0) return 2;
            const char *eq = strchr(tag, '=');
            if (!eq || eq == tag) return cli_usage_error("capture", "--tag needs KEY=VALUE, got %s", tag);
            if (o->n_tags == sizeof o->tags / sizeof o->tags[0]) return cli_usage_error("capture", "too many --tag");
            o->tags[o->n_tags++] = tag;
            continue;
        }
        if (cli_is_flag(argv[i], "--git", NULL)) {
            o->git = true;
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
    cg_error gerr = {0};
    if (o->git && cg_revision_detect(NULL, &o->rev, &gerr) < 0) {
        fprintf(stderr, "candle-graph capture: --git: %s\n", gerr.msg);
        return 2;
    }
    if (i >= argc) return cli_usage_error("capture", "missing the command to run after --");
    if (train && o->infer) return cli_usage_error("capture", "--train and --infer exclude each other");
    if (o->measure && !o->nvtx)
        return cli_usage_error("capture", "--measure names an NVTX range: it needs --nvtx-spans");
    if (nsys && o->nvtx)
        return cli_usage_error("capture", "--nsys and --nvtx-spans exclude each other: the NVTX "
                                          "spans come from the CUPTI collector, and a process has "
                                          "one CUPTI client (nsys)");
    if (nsys && !(o->nsys = find_nsys()))
        return cli_failf("capture --nsys: Nsight Systems (nsys) not found on PATH (or $CG_NSYS)");
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
    if (cg_path_exists(o.bundle)) {
        cg_free(o.nsys);
        return cli_failf("bundle destination already exists: %s", o.bundle);
    }
    char *collector = o.nsys ? NULL : find_collector();
    if (!o.nsys && !collector)
        return cli_failf("capture: libcandlegraph-cupti.so not found (set CG_CUPTI_COLLECTOR)");
    char work[4200];
    snprintf(work, sizeof work, "%s.capture-%ld", o.bundle, (long)getpid());
    cg_error err;
    cg_err_clear(&err);
    cg_rm_rf(work);
    char *nsight = cg_path_join(work, "nsight");
    if (cg_mkdir_p(o.nsys ? nsight : work, &err) != 0) {
        cg_free(collector);
        cg_free(o.nsys);
        cg_free(nsight);
        return cli_fail(&err);
    }
    char *trace = cg_path_join(work, "trace.jsonl"), *status = cg_path_join(work, "cupti-status.json");
    int rc = 1;
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_trace *t = NULL;
    cg_health *h = NULL;
    char *sidecar = NULL, *entry = NULL;

    cg_jv *commands = cg_jv_arr(&a), *nsys_gaps = cg_jv_arr(&a);
    int wst = run_program(&o, collector, trace, status, nsight, &a, commands);
    char reason[256];
    int exit_status = 0;
    describe_status(wst, reason, sizeof reason, &exit_status);
    bool failed_run = exit_status != 0;
    if (o.nsys) {
        char *rep = cg_path_join(nsight, "capture.nsys-rep");
        if (cg_path_exists(rep)) nsys_stats(o.nsys, nsight, &a, commands, nsys_gaps);
        else cg_jv_arr_push(&a, nsys_gaps, cg_jv_str(&a, "nsys profile produced no report"));
        cg_free(rep);
    }

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
    cg_free(stext);
    cg_err_clear(&err);
    put_tag(t, "capture.collector", o.nsys ? "nsys" : "cupti");
    add_revision_tags(t, &o);
    if (o.nsys) {
        /* device evidence comes from Nsight Systems (nsight/ in the bundle) */
    } else if (st) {
        const cg_jv *active = cg_jv_get(st, "active"), *kinds = cg_jv_get(st, "kinds");
        put_tag(t, "cupti.active", active && active->type == CG_JBOOL && active->u.b ? "true" : "false");
        if (kinds && kinds->type == CG_JSTR) put_tag(t, "cupti.kinds", kinds->u.str.s);
        tag_u64(t, st, "cupti_version", "cupti.version");
        tag_u64(t, st, "dropped_records", "cupti.dropped_records");
        tag_u64(t, st, "unattributed", "cupti.unattributed");
        tag_u64(t, st, "untimed", "cupti.untimed");
        adjust_device_coverage(t, st);
    } else {
        put_tag(t, "cupti.active", "false");
        put_tag(t, "cupti.status", "missing");
    }
    if (cg_trace_write_file(t, trace, &err) != 0) goto out;
    if (o.nsys && write_nsight_manifest(o.nsys, nsight, t, commands, &err) != 0) goto out;

    /* 4. Publish, sign, spool. */
    if (cg_publish_bundle(o.bundle, trace, o.nsys ? nsight : NULL, NULL, &err) != 0) goto out;
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
    for (size_t i = 0; i < cg_jv_len(nsys_gaps); i++) cg_jv_arr_push(&a, gaps, cg_jv_at(nsys_gaps, i));
    /* With --nsys there is no CUPTI collector (nsys is the process's CUPTI
     * client): the device evidence is in nsight/. */
    if (!o.nsys && !st)
        cg_jv_arr_push(&a, gaps, cg_jv_str(&a, "the CUPTI collector did not report (not injected?): "
                                               "no device evidence"));
    else if (!o.nsys && !(cg_jv_get(st, "active") && cg_jv_get(st, "active")->u.b))
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
    cg_free(trace);
    cg_free(status);
    cg_free(collector);
    cg_free(o.nsys);
    cg_free(nsight);
    cg_free(sidecar);
    cg_free(entry);
    return rc;
}
