/* candle-graph daemon — uploads the finalized bundles of a capture spool
 * (cli_spool.h) to candle-graph-server.
 *
 * - Bounded concurrency: --concurrency N worker threads (default 2).
 * - Each ready/ entry is uploaded (cli_upload.h). 200/201 → sent/ with the
 *   server's receipt; connection errors, 401, 429, 500, 502, 503, 504 and 507
 *   are retried with exponential backoff and full jitter (Retry-After, when
 *   given, is a lower bound); any other answer → rejected/ with
 *   rejection.json {status, body} (the server's error body); a bundle that
 *   cannot even be packed (it no longer verifies) → rejected/ with the error.
 * - State lives on disk: the folder an entry is in. A restart re-reads ready/;
 *   an upload interrupted by a crash is sent again and the server answers 200
 *   (identical bundle, content-addressed), so nothing is lost or duplicated.
 *   Retry timers are in memory (a restart retries at once).
 * - One log line per event on stderr.
 * - SIGTERM/SIGINT: no new uploads start; uploads in flight finish (bounded by
 *   --timeout); exit 0. --once exits when ready/ is empty.
 * - The token is read from --token-file (first line, surrounding blanks cut). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"

#include "base/alloc.h"
#include "base/json.h"
#include "cli_spool.h"
#include "cli_upload.h"
#include "cli_util.h"

const char cg_cmd_daemon_help[] =
    "usage: candle-graph daemon --spool DIR --server URL --token-file F [--concurrency N] "
    "[--timeout S] [--poll-ms MS] [--backoff-base-ms MS] [--max-backoff-ms MS] [--once]\n"
    "Upload the finalized bundles of a capture spool, retrying through server outages, until "
    "SIGTERM.\n"
    "  --spool DIR            spool written by `capture --spool` (ready/ → sent/ | rejected/)\n"
    "  --server URL           candle-graph-server base URL\n"
    "  --token-file F         file holding a token with the upload scope\n"
    "  --concurrency N        uploads in flight at once (default 2, at most 64)\n"
    "  --timeout S            per-upload timeout in seconds (default 600)\n"
    "  --poll-ms MS           how often ready/ is rescanned (default 2000)\n"
    "  --backoff-base-ms MS   first retry delay (default 1000), doubled per attempt\n"
    "  --max-backoff-ms MS    retry delay cap (default 300000)\n"
    "  --once                 exit when ready/ is empty instead of waiting for more\n"
    "Logs one line per event to stderr; exits 0 after a clean stop.\n";

typedef struct {
    char *name;
    bool in_flight, seen;
    unsigned attempts;
    uint64_t next_ms;
} entry;

static struct {
    const char *spool, *server;
    char token[1024];
    long timeout_s;
    uint64_t poll_ms, base_ms, max_ms;
    unsigned concurrency;
    bool once;

    pthread_mutex_t lock;
    pthread_cond_t work, done;
    entry **e; /* entries are heap objects: their address is stable */
    size_t n, cap;
    entry *queue[64]; /* waiting for a worker */
    size_t nq;
    unsigned busy;
    bool stopping;
    pthread_mutex_t log_lock;
} d = {.lock = PTHREAD_MUTEX_INITIALIZER,
       .work = PTHREAD_COND_INITIALIZER,
       .done = PTHREAD_COND_INITIALIZER,
       .log_lock = PTHREAD_MUTEX_INITIALIZER};

static volatile sig_atomic_t g_signal;

static void on_signal(int sig) { g_signal = sig; }

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...) {
    char ts[32];
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct tm tm;
    gmtime_r(&now.tv_sec, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&d.log_lock);
    fprintf(stderr, "%s candle-graph daemon: ", ts);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    fflush(stderr);
    pthread_mutex_unlock(&d.log_lock);
    va_end(ap);
}

/* Full jitter in [delay/2, delay]. */
static uint64_t backoff_ms(unsigned attempts, long retry_after_s) {
    uint64_t delay = d.base_ms;
    for (unsigned i = 1; i < attempts && delay < d.max_ms; i++) delay *= 2;
    if (delay > d.max_ms) delay = d.max_ms;
    uint64_t half = delay / 2;
    uint64_t r = half + (half ? ((uint64_t)rand() % (half + 1)) : 0);
    if (retry_after_s >= 0 && (uint64_t)retry_after_s * 1000u > r) r = (uint64_t)retry_after_s * 1000u;
    return r;
}

static bool retryable(long status) {
    return status == 0 || status == 401 || status == 429 || status == 500 || status == 502 ||
           status == 503 || status == 504 || status == 507;
}

/* One-line summary of a response body for the log. */
static void body_summary(const char *body, char *out, size_t n) {
    size_t j = 0;
    for (size_t i = 0; body && body[i] && j + 1 < n && i < 200; i++)
        out[j++] = (body[i] == '\n' || body[i] == '\r') ? ' ' : body[i];
    out[j] = '\0';
}

static void upload_one(entry *job) {
    pthread_mutex_lock(&d.lock);
    char *name = cg_xstrdup(job->name);
    unsigned attempt = ++job->attempts;
    pthread_mutex_unlock(&d.lock);
    char *ready = cg_path_join(d.spool, "ready"), *dir = cg_path_join(ready, name);
    char *bundle = cg_path_join(dir, "bundle"), *sidecar = cg_path_join(dir, "bundle.sig.json");
    cli_upload_result r;
    cg_error err;
    cg_err_clear(&err);
    int rc = cli_upload_bundle(d.server, d.token, bundle,
                               cg_is_regular_nofollow(sidecar) ? sidecar : NULL, d.timeout_s, &r,
                               &err);
    bool done = false;
    uint64_t retry_in = 0;
    cg_arena a;
    cg_arena_init(&a, 0);
    if (rc != 0) {
        if (!cg_path_exists(bundle)) {
            logf_("gone entry=%s (removed from ready/ by someone else)", name);
            done = true;
        } else {
            cg_jv *o = cg_jv_obj(&a);
            cg_jv_obj_put(&a, o, "status", cg_jv_null(&a));
            cg_jv_obj_put(&a, o, "error", cg_jv_str(&a, err.msg));
            cg_buf b = CG_BUF_INIT;
            cg_json_write(&b, o, true);
            cg_buf_putc(&b, '\n');
            cg_error merr;
            if (cli_spool_move(d.spool, name, "rejected", "rejection.json", b.data, b.len, &merr) == 0)
                logf_("rejected entry=%s local error: %s", name, err.msg);
            else
                logf_("error entry=%s cannot move to rejected/: %s", name, merr.msg);
            cg_buf_free(&b);
            done = true;
        }
    } else if (r.http_status == 200 || r.http_status == 201) {
        cg_error merr;
        char *id = NULL;
        cg_jv *v = r.body ? cg_json_parse(&a, r.body, r.body_len, NULL, &merr) : NULL;
        const cg_jv *idv = v ? cg_jv_get(v, "id") : NULL;
        if (idv && idv->type == CG_JSTR) id = (char *)idv->u.str.s;
        if (cli_spool_move(d.spool, name, "sent", "receipt.json", r.body ? r.body : "",
                           r.body_len, &merr) == 0)
            logf_("sent entry=%s status=%ld id=%s attempt=%u", name, r.http_status, id ? id : "?",
                  attempt);
        else
            logf_("error entry=%s uploaded (status %ld) but cannot move to sent/: %s", name,
                  r.http_status, merr.msg);
        done = true;
    } else if (retryable(r.http_status)) {
        retry_in = backoff_ms(attempt, r.retry_after_s);
        char sum[256];
        body_summary(r.http_status ? r.body : r.curl_error, sum, sizeof sum);
        logf_("retry entry=%s status=%ld attempt=%u in_ms=%" PRIu64 " reason=%s", name,
              r.http_status, attempt, retry_in, sum);
    } else {
        cg_jv *o = cg_jv_obj(&a);
        cg_error perr;
        cg_jv *body = r.body ? cg_json_parse(&a, r.body, r.body_len, NULL, &perr) : NULL;
        cg_jv_obj_put(&a, o, "status", cg_jv_u64(&a, (uint64_t)r.http_status));
        cg_jv_obj_put(&a, o, "body", body ? body : cg_jv_str(&a, r.body ? r.body : ""));
        cg_buf b = CG_BUF_INIT;
        cg_json_write(&b, o, true);
        cg_buf_putc(&b, '\n');
        char sum[256];
        body_summary(r.body, sum, sizeof sum);
        cg_error merr;
        if (cli_spool_move(d.spool, name, "rejected", "rejection.json", b.data, b.len, &merr) == 0)
            logf_("rejected entry=%s status=%ld body=%s", name, r.http_status, sum);
        else
            logf_("error entry=%s rejected (status %ld) but cannot move: %s", name, r.http_status,
                  merr.msg);
        cg_buf_free(&b);
        done = true;
    }
    if (rc == 0) cli_upload_result_free(&r);
    cg_arena_free(&a);
    pthread_mutex_lock(&d.lock);
    job->in_flight = false;
    if (done) job->seen = false; /* dropped at the next scan */
    else job->next_ms = now_ms() + retry_in;
    d.busy--;
    pthread_cond_broadcast(&d.done);
    pthread_mutex_unlock(&d.lock);
    cg_free(name);
    cg_free(ready);
    cg_free(dir);
    cg_free(bundle);
    cg_free(sidecar);
}

static void *worker(void *arg) {
    (void)arg;
    pthread_mutex_lock(&d.lock);
    for (;;) {
        while (d.nq == 0 && !d.stopping) pthread_cond_wait(&d.work, &d.lock);
        if (d.nq == 0 && d.stopping) break;
        entry *job = d.queue[0];
        memmove(d.queue, d.queue + 1, (d.nq - 1) * sizeof d.queue[0]);
        d.nq--;
        pthread_mutex_unlock(&d.lock);
        upload_one(job);
        pthread_mutex_lock(&d.lock);
    }
    pthread_mutex_unlock(&d.lock);
    return NULL;
}

/* Rescans ready/: adds new entries, forgets vanished idle ones. Lock held. */
static int rescan(cg_error *err) {
    char **names = NULL;
    size_t n = 0;
    if (cli_spool_list(d.spool, "ready", &names, &n, err) != 0) return -1;
    for (size_t i = 0; i < d.n; i++)
        if (!d.e[i]->in_flight) d.e[i]->seen = false;
    for (size_t k = 0; k < n; k++) {
        size_t i = 0;
        while (i < d.n && strcmp(d.e[i]->name, names[k]) != 0) i++;
        if (i < d.n) {
            d.e[i]->seen = true;
            continue;
        }
        if (d.n == d.cap) d.e = cg_xgrow(d.e, &d.cap, d.n + 1, sizeof *d.e);
        entry *ne = cg_xzalloc(1, sizeof *ne);
        ne->name = names[k];
        ne->seen = true;
        d.e[d.n++] = ne;
        names[k] = NULL;
        logf_("found entry=%s", ne->name);
    }
    cli_spool_names_free(names, n);
    /* compact: keep in-flight and present entries (queued ones are in flight) */
    size_t j = 0;
    for (size_t i = 0; i < d.n; i++) {
        if (d.e[i]->in_flight || d.e[i]->seen) {
            d.e[j++] = d.e[i];
        } else {
            cg_free(d.e[i]->name);
            cg_free(d.e[i]);
        }
    }
    d.n = j;
    return 0;
}

static int parse_u64(const char *s, uint64_t *out) {
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || !end || *end || s[0] == '-' || !s[0]) return -1;
    *out = v;
    return 0;
}

static int read_token(const char *path, cg_error *err) {
    size_t len = 0;
    char *t = cg_read_file(path, 64 << 10, &len, err);
    if (!t) return -1;
    char *s = t;
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
    size_t n = strcspn(s, "\r\n");
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
    int rc = 0;
    if (n == 0) rc = cg_err_set(err, CG_EINVAL, "token file %s is empty", path);
    else if (n >= sizeof d.token) rc = cg_err_set(err, CG_EINVAL, "token in %s is too long", path);
    else {
        memcpy(d.token, s, n);
        d.token[n] = '\0';
    }
    memset(t, 0, len);
    cg_free(t);
    return rc;
}

int cg_cmd_daemon(int argc, char **argv) {
    const char *token_file = NULL, *v = NULL;
    uint64_t conc = 2, timeout = 600;
    d.poll_ms = 2000;
    d.base_ms = 1000;
    d.max_ms = 300000;
    d.once = false;
    for (int i = 1; i < argc; i++) {
        int r;
        if ((r = cli_take_value(argc, argv, &i, "--spool", NULL, &d.spool)) ||
            (r = cli_take_value(argc, argv, &i, "--server", NULL, &d.server)) ||
            (r = cli_take_value(argc, argv, &i, "--token-file", NULL, &token_file))) {
            if (r < 0) return 2;
            continue;
        }
        struct { const char *flag; uint64_t *dst; } nums[] = {
            {"--concurrency", &conc}, {"--timeout", &timeout}, {"--poll-ms", &d.poll_ms},
            {"--backoff-base-ms", &d.base_ms}, {"--max-backoff-ms", &d.max_ms}};
        bool matched = false;
        for (size_t k = 0; k < sizeof nums / sizeof nums[0] && !matched; k++) {
            r = cli_take_value(argc, argv, &i, nums[k].flag, NULL, &v);
            if (r < 0) return 2;
            if (r == 1) {
                matched = true;
                if (parse_u64(v, nums[k].dst) != 0)
                    return cli_usage_error("daemon", "%s needs a non-negative integer", nums[k].flag);
            }
        }
        if (matched) continue;
        if (cli_is_flag(argv[i], "--once", NULL)) d.once = true;
        else return cli_usage_unexpected("daemon", argv[i]);
    }
    if (!d.spool || !d.server || !token_file)
        return cli_usage_error("daemon", "--spool, --server and --token-file are required");
    if (conc == 0 || conc > 64) return cli_usage_error("daemon", "--concurrency must be 1..64");
    if (d.base_ms == 0 || d.max_ms < d.base_ms)
        return cli_usage_error("daemon", "backoff: need 0 < --backoff-base-ms <= --max-backoff-ms");
    if (d.poll_ms == 0) d.poll_ms = 1;
    d.concurrency = (unsigned)conc;
    d.timeout_s = (long)timeout;
    cg_error err;
    cg_err_clear(&err);
    if (read_token(token_file, &err) != 0) return cli_fail(&err);
    if (cli_spool_init(d.spool, &err) != 0) return cli_fail(&err);
    if (cli_upload_global_init(&err) != 0) return cli_fail(&err);
    srand((unsigned)(now_ms() ^ (uint64_t)getpid()));

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    pthread_t th[64];
    unsigned started = 0;
    for (; started < d.concurrency; started++)
        if (pthread_create(&th[started], NULL, worker, NULL) != 0) break;
    if (started == 0) return cli_failf("daemon: cannot start worker threads");
    logf_("start spool=%s server=%s concurrency=%u", d.spool, d.server, started);

    int rc = 0;
    uint64_t next_scan = 0;
    pthread_mutex_lock(&d.lock);
    while (!g_signal) {
        uint64_t now = now_ms();
        if (now >= next_scan) {
            if (rescan(&err) != 0) {
                logf_("error scanning spool: %s", err.msg);
                cg_err_clear(&err);
            }
            next_scan = now + d.poll_ms;
        }
        uint64_t wake = next_scan;
        for (size_t i = 0; i < d.n && d.busy < started; i++) {
            entry *e = d.e[i];
            if (e->in_flight || !e->seen) continue;
            if (e->next_ms > now) {
                if (e->next_ms < wake) wake = e->next_ms;
                continue;
            }
            e->in_flight = true;
            d.busy++;
            d.queue[d.nq++] = e;
            pthread_cond_signal(&d.work);
        }
        if (d.once && d.busy == 0) {
            size_t pending = 0;
            for (size_t i = 0; i < d.n; i++) pending += d.e[i]->seen;
            if (pending == 0) {
                /* make sure nothing arrived since the last scan */
                if (rescan(&err) == 0 && d.n == 0) break;
                continue;
            }
        }
        /* Sleep until a worker finishes, the next retry or scan is due, or
         * 200 ms pass (to notice signals). */
        uint64_t now2 = now_ms(), sleep_ms = wake > now2 ? wake - now2 : 0;
        if (sleep_ms > 200) sleep_ms = 200;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += (time_t)(sleep_ms / 1000);
        ts.tv_nsec += (long)(sleep_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (sleep_ms > 0) pthread_cond_timedwait(&d.done, &d.lock, &ts);
    }
    /* Clean stop: nothing new starts; queued-but-not-started work is dropped
     * (it stays in ready/); uploads in flight finish. */
    size_t dropped_jobs = d.nq;
    for (size_t k = 0; k < d.nq; k++) {
        d.queue[k]->in_flight = false;
        d.busy--;
    }
    d.nq = 0;
    d.stopping = true;
    pthread_cond_broadcast(&d.work);
    pthread_mutex_unlock(&d.lock);
    if (g_signal) logf_("stopping signal=%d in_flight=%u not_started=%zu", (int)g_signal, d.busy, dropped_jobs);
    for (unsigned i = 0; i < started; i++) pthread_join(th[i], NULL);
    size_t left = 0;
    for (size_t i = 0; i < d.n; i++) {
        left += d.e[i]->seen;
        cg_free(d.e[i]->name);
        cg_free(d.e[i]);
    }
    cg_free(d.e);
    d.e = NULL;
    d.n = d.cap = 0;
    logf_("stopped pending=%zu", left);
    memset(d.token, 0, sizeof d.token);
    return rc;
}
