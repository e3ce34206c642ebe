/* metrics.c — Prometheus text exposition: requests by route/status, ingest
 * outcomes by code, ingest bytes and duration histograms, time per ingest
 * stage, pool use, blob store bytes (referenced, and stored/plain at rest) and
 * the process's resident memory. Counters live in fixed tables under one mutex. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/spill.h"
#include "srv.h"

#define MAX_REQ 256
#define MAX_OUTCOMES 64

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct { int route, status; uint64_t n; } reqs[MAX_REQ];
static size_t n_reqs;
static struct { char code[40]; uint64_t n; } outcomes[MAX_OUTCOMES];
static size_t n_outcomes;
static const double byte_bounds[] = {1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
static const double sec_bounds[] = {0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120};
#define NB (sizeof byte_bounds / sizeof byte_bounds[0])
#define NS (sizeof sec_bounds / sizeof sec_bounds[0])
static uint64_t byte_hist[NB + 1], sec_hist[NS + 1], ingest_count;
static double byte_sum, sec_sum;
static double stage_sec[SRV_STAGE_COUNT];
static uint64_t staged_count;

const char *const srv_ingest_stage_names[SRV_STAGE_COUNT] = {
    "unpack", "bundle", "gate", "semantic", "views", "signature", "blobs", "facts", "commit", "timeline",
};

void srv_metrics_request(int route, int status) {
    pthread_mutex_lock(&mu);
    size_t i;
    for (i = 0; i < n_reqs; i++)
        if (reqs[i].route == route && reqs[i].status == status) break;
    if (i == n_reqs && n_reqs < MAX_REQ) {
        reqs[i].route = route;
        reqs[i].status = status;
        reqs[i].n = 0;
        n_reqs++;
    }
    if (i < n_reqs) reqs[i].n++;
    pthread_mutex_unlock(&mu);
}

void srv_metrics_ingest(const char *outcome, uint64_t bytes, double seconds) {
    pthread_mutex_lock(&mu);
    size_t i;
    for (i = 0; i < n_outcomes; i++)
        if (strcmp(outcomes[i].code, outcome) == 0) break;
    if (i == n_outcomes && n_outcomes < MAX_OUTCOMES) {
        snprintf(outcomes[i].code, sizeof outcomes[i].code, "%s", outcome);
        outcomes[i].n = 0;
        n_outcomes++;
    }
    if (i < n_outcomes) outcomes[i].n++;
    size_t b = 0;
    while (b < NB && (double)bytes > byte_bounds[b]) b++;
    byte_hist[b]++;
    size_t s = 0;
    while (s < NS && seconds > sec_bounds[s]) s++;
    sec_hist[s]++;
    byte_sum += (double)bytes;
    sec_sum += seconds;
    ingest_count++;
    pthread_mutex_unlock(&mu);
}

void srv_metrics_ingest_stages(const srv_ingest_stages *st) {
    pthread_mutex_lock(&mu);
    for (int i = 0; i < SRV_STAGE_COUNT; i++) stage_sec[i] += st->seconds[i];
    staged_count++;
    pthread_mutex_unlock(&mu);
}

/* VmRSS and VmHWM of /proc/self/status in bytes (0 when unknown). */
void srv_process_memory(uint64_t *rss, uint64_t *peak) {
    *rss = *peak = 0;
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return;
    buf[n] = 0;
    for (const char *p = buf; *p;) {
        if (!strncmp(p, "VmRSS:", 6)) *rss = strtoull(p + 6, NULL, 10) * 1024;
        else if (!strncmp(p, "VmHWM:", 6)) *peak = strtoull(p + 6, NULL, 10) * 1024;
        const char *nl = strchr(p, '\n');
        if (!nl) break;
        p = nl + 1;
    }
}

static void stages(cg_buf *o) {
    cg_buf_puts(o, "# HELP cg_ingest_stage_seconds_total Time spent in each stage of successful uploads.\n"
                   "# TYPE cg_ingest_stage_seconds_total counter\n");
    for (int i = 0; i < SRV_STAGE_COUNT; i++)
        cg_buf_printf(o, "cg_ingest_stage_seconds_total{stage=\"%s\"} %.6f\n", srv_ingest_stage_names[i], stage_sec[i]);
    cg_buf_printf(o,
                  "# HELP cg_ingest_staged_total Successful uploads (201 published, 200 already published) whose stage times are counted.\n"
                  "# TYPE cg_ingest_staged_total counter\ncg_ingest_staged_total %llu\n",
                  (unsigned long long)staged_count);
}

static void process_memory(cg_buf *o) {
    uint64_t rss, peak;
    srv_process_memory(&rss, &peak);
    cg_buf_printf(o,
                  "# HELP process_resident_memory_bytes Resident memory of the server process.\n"
                  "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %llu\n"
                  "# HELP cg_process_peak_resident_memory_bytes Peak resident memory since the process started.\n"
                  "# TYPE cg_process_peak_resident_memory_bytes gauge\ncg_process_peak_resident_memory_bytes %llu\n",
                  (unsigned long long)rss, (unsigned long long)peak);
    cg_spill_stats sp;
    cg_spill_stats_get(&sp);
    cg_buf_printf(o,
                  "# HELP cg_spill_bytes Mapped bytes of the large blocks now kept in spill files (base/spill.h).\n"
                  "# TYPE cg_spill_bytes gauge\ncg_spill_bytes %llu\n"
                  "# HELP cg_spill_blocks Large blocks now kept in spill files.\n"
                  "# TYPE cg_spill_blocks gauge\ncg_spill_blocks %llu\n"
                  "# HELP cg_spill_blocks_total Large blocks placed in spill files since start.\n"
                  "# TYPE cg_spill_blocks_total counter\ncg_spill_blocks_total %llu\n"
                  "# HELP cg_spill_trims_total Times the resident set went over the budget and spilled pages were dropped.\n"
                  "# TYPE cg_spill_trims_total counter\ncg_spill_trims_total %llu\n"
                  "# HELP cg_spill_fallbacks_total Large blocks that could not spill and came from the heap.\n"
                  "# TYPE cg_spill_fallbacks_total counter\ncg_spill_fallbacks_total %llu\n",
                  (unsigned long long)sp.live_bytes, (unsigned long long)sp.live_blocks,
                  (unsigned long long)sp.blocks_total, (unsigned long long)sp.trims_total,
                  (unsigned long long)sp.fallbacks);
}

static void hist(cg_buf *o, const char *name, const double *bounds, size_t nb, const uint64_t *h, double sum,
                 uint64_t count) {
    uint64_t cum = 0;
    for (size_t i = 0; i < nb; i++) {
        cum += h[i];
        cg_buf_printf(o, "%s_bucket{le=\"%g\"} %llu\n", name, bounds[i], (unsigned long long)cum);
    }
    cum += h[nb];
    cg_buf_printf(o, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %g\n%s_count %llu\n", name, (unsigned long long)cum, name,
                  sum, name, (unsigned long long)count);
}

/* At-rest totals of the blob store (docs/deployment.md, "Metrics"). */
static void blob_totals(cg_buf *o, const srv_blob_totals *t) {
    if (t->stored < 0 || t->plain < 0) return;
    double ratio = t->plain > 0 ? (double)t->stored / (double)t->plain : 1.0;
    cg_buf_printf(o,
                  "# HELP cg_blob_store_stored_bytes Bytes the stored blob files occupy (headers, zstd frames, "
                  "frame indexes).\n# TYPE cg_blob_store_stored_bytes gauge\ncg_blob_store_stored_bytes %lld\n"
                  "# HELP cg_blob_store_plain_bytes Plain (decompressed) bytes of the same blob files.\n"
                  "# TYPE cg_blob_store_plain_bytes gauge\ncg_blob_store_plain_bytes %lld\n"
                  "# HELP cg_blob_store_compression_ratio Stored bytes divided by plain bytes (1 when empty).\n"
                  "# TYPE cg_blob_store_compression_ratio gauge\ncg_blob_store_compression_ratio %.6f\n"
                  "# HELP cg_blob_store_files Stored blob files by at-rest form.\n"
                  "# TYPE cg_blob_store_files gauge\ncg_blob_store_files{form=\"zstd\"} %lld\n"
                  "cg_blob_store_files{form=\"raw\"} %lld\ncg_blob_store_files{form=\"plain\"} %lld\n",
                  (long long)t->stored, (long long)t->plain, ratio, (long long)t->n_zstd, (long long)t->n_raw,
                  (long long)t->n_plain);
}

void srv_metrics_render(cg_buf *o, unsigned pool_size, unsigned pool_in_use, unsigned pool_open,
                        int64_t blob_bytes, int64_t blob_count, const srv_blob_totals *bt) {
    pthread_mutex_lock(&mu);
    cg_buf_puts(o, "# HELP cg_http_requests_total HTTP requests by route and status.\n"
                   "# TYPE cg_http_requests_total counter\n");
    for (size_t i = 0; i < n_reqs; i++) {
        const char *route = reqs[i].route >= 0 ? srv_routes[reqs[i].route].pattern : "unmatched";
        const char *method = reqs[i].route >= 0 ? srv_routes[reqs[i].route].method : "";
        cg_buf_printf(o, "cg_http_requests_total{method=\"%s\",route=\"%s\",status=\"%d\"} %llu\n", method, route,
                      reqs[i].status, (unsigned long long)reqs[i].n);
    }
    cg_buf_puts(o, "# HELP cg_ingest_outcomes_total Upload outcomes by result code.\n"
                   "# TYPE cg_ingest_outcomes_total counter\n");
    for (size_t i = 0; i < n_outcomes; i++)
        cg_buf_printf(o, "cg_ingest_outcomes_total{code=\"%s\"} %llu\n", outcomes[i].code,
                      (unsigned long long)outcomes[i].n);
    cg_buf_puts(o, "# HELP cg_ingest_bytes Upload body sizes.\n# TYPE cg_ingest_bytes histogram\n");
    hist(o, "cg_ingest_bytes", byte_bounds, NB, byte_hist, byte_sum, ingest_count);
    cg_buf_puts(o, "# HELP cg_ingest_duration_seconds Upload processing time.\n"
                   "# TYPE cg_ingest_duration_seconds histogram\n");
    hist(o, "cg_ingest_duration_seconds", sec_bounds, NS, sec_hist, sec_sum, ingest_count);
    stages(o);
    pthread_mutex_unlock(&mu);
    process_memory(o);
    cg_buf_printf(o,
                  "# HELP cg_db_pool_connections Database pool size.\n# TYPE cg_db_pool_connections gauge\n"
                  "cg_db_pool_connections %u\n"
                  "# HELP cg_db_pool_in_use Database connections checked out.\n# TYPE cg_db_pool_in_use gauge\n"
                  "cg_db_pool_in_use %u\n"
                  "# HELP cg_db_pool_open Open database connections.\n# TYPE cg_db_pool_open gauge\n"
                  "cg_db_pool_open %u\n",
                  pool_size, pool_in_use, pool_open);
    if (blob_bytes >= 0)
        cg_buf_printf(o,
                      "# HELP cg_blob_store_bytes Bytes of distinct blobs referenced by bundles.\n"
                      "# TYPE cg_blob_store_bytes gauge\ncg_blob_store_bytes %lld\n"
                      "# HELP cg_blob_store_blobs Distinct blobs referenced by bundles.\n"
                      "# TYPE cg_blob_store_blobs gauge\ncg_blob_store_blobs %lld\n",
                      (long long)blob_bytes, (long long)blob_count);
    blob_totals(o, bt);
}
