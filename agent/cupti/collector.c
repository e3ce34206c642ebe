/* collector.c — libcandlegraph-cupti.so: the CUPTI collector injected into a
 * CUDA process with CUDA_INJECTION64_PATH (the driver calls
 * InitializeInjection from cuInit).
 *
 * What it does
 *   - Resolves the CUPTI and CUDA driver entry points it needs with dlopen/
 *     dlsym (CG_CUPTI_LIBRARY / CG_CUDA_LIBRARY override the paths, which is how
 *     tests load a stand-in), so nothing is linked against libcupti.
 *   - Enables CONCURRENT_KERNEL, MEMCPY, MEMCPY2 and MEMSET activity; decodes
 *     completed buffers with decoder.c into device_interval records on the
 *     CUPTI device clock (clock_id per device, backend "cupti").
 *   - Subscribes to runtime and driver API callbacks: on every API entry the
 *     calling thread's open span (cg_session_current_span) is stored under the
 *     call's correlation id, so each kernel/copy is attributed to the span that
 *     was open on the launching thread.
 *   - Wraps the capture API it exports (session.c is compiled with its open/
 *     finish/free/measurement entry points renamed, see CMakeLists.txt): the
 *     first session opened in the process is the one the collector feeds;
 *     device-memory samples (cuMemGetInfo) are recorded when the measured
 *     region begins and right before it ends; finishing the session first
 *     flushes CUPTI and writes the device intervals.
 *   - Uninstrumented programs: with CG_CUPTI_TRACE set the collector opens its
 *     own session (CG_CUPTI_ENTRYPOINT, CG_CUPTI_STEP, CG_CUPTI_PHASE), turns
 *     NVTX push/pop ranges into spans when CG_CUPTI_NVTX=1 (the range named
 *     CG_CUPTI_MEASURE becomes the measured region) and finishes it at exit.
 *   - Counts dropped records (CUPTI's counter, buffers it could not get,
 *     queue overflow, invalid records) and reports them: a line on stderr and
 *     the status file CG_CUPTI_STATUS (JSON, schema candle-graph/cupti-status/1)
 *     that `candle-graph capture` turns into trace tags.
 *   - Never does network I/O; never exits or aborts the host process: every
 *     failure disables the collector and is reported in the status. Out of
 *     memory included (base/alloc.h's policy): its own allocations are
 *     fallible, and its OOM handler releases an emergency reserve, disables
 *     the collector and lets the capture library's allocation be retried.
 * Only InitializeInjection and the capture API are exported (version script). */
#include <cupti.h>
#include <dlfcn.h>
#include <errno.h>
#include <generated_nvtx_meta.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fault.h"
#include "capture/capture.h"
#include "decoder.h"

#define EXPORT __attribute__((visibility("default")))

/* The real session entry points (session.c compiled with renamed symbols). */
cg_session *cg_cupti_real_session_open(const char *path, const cg_profile_run *run,
                                       cg_error *err);
int cg_cupti_real_session_finish(cg_session *s, cg_error *err);
int cg_cupti_real_session_finish_failed(cg_session *s, const char *reason, cg_error *err);
void cg_cupti_real_session_free(cg_session *s);
int cg_cupti_real_session_begin_measurement(cg_session *s, const char *name, cg_span_id *out,
                                            cg_error *err);
int cg_cupti_real_session_end_span(cg_session *s, cg_span_id id, cg_error *err);

/* ---------------------------------------------------------------- entry points */
typedef CUptiResult (*fn_get_version)(uint32_t *);
typedef CUptiResult (*fn_subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
typedef CUptiResult (*fn_enable_domain)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain);
typedef CUptiResult (*fn_register_callbacks)(CUpti_BuffersCallbackRequestFunc,
                                             CUpti_BuffersCallbackCompleteFunc);
typedef CUptiResult (*fn_activity_enable)(CUpti_ActivityKind);
typedef CUptiResult (*fn_flush_all)(uint32_t);
typedef CUptiResult (*fn_next_record)(uint8_t *, size_t, CUpti_Activity **);
typedef CUptiResult (*fn_dropped)(CUcontext, uint32_t, size_t *);
typedef CUptiResult (*fn_flush_period)(uint32_t);
typedef CUptiResult (*fn_result_string)(CUptiResult, const char **);
typedef CUresult (*fn_mem_get_info)(size_t *, size_t *);
typedef CUresult (*fn_ctx_get_device)(CUdevice *);

static struct {
    fn_get_version get_version;
    fn_subscribe subscribe;
    fn_enable_domain enable_domain;
    fn_register_callbacks register_callbacks;
    fn_activity_enable activity_enable;
    fn_flush_all flush_all;
    fn_next_record next_record;
    fn_dropped dropped;
    fn_flush_period flush_period;        /* optional */
    fn_result_string result_string;      /* optional */
    fn_mem_get_info mem_get_info;        /* optional (no samples without it) */
    fn_ctx_get_device ctx_get_device;    /* optional (device "cuda:0" without it) */
} api;

/* ---------------------------------------------------------------- state */
#define CORR_SLOTS (1u << 20)
#define NVTX_DEPTH 64
#define ERR_MAX 8
#define BUFFER_BYTES ((size_t)4 << 20)
#define DRAIN_THRESHOLD 65536
#define RESERVE_BYTES ((size_t)8 << 20)

static struct {
    atomic_int initialized; /* InitializeInjection ran (once) */
    atomic_int active;      /* CUPTI set up successfully */
    atomic_int oom;         /* ran out of memory: disabled for good */
    _Atomic(void *) reserve; /* emergency memory released on the first OOM */
    uint32_t cupti_version;
    char kinds[256];        /* enabled activity kinds, comma-separated */

    pthread_rwlock_t attach_lock; /* guards `session` against detach */
    cg_session *session;          /* the session being fed, or NULL */
    bool own_session;             /* opened by the collector (CG_CUPTI_TRACE) */
    cg_span_id measured;          /* measured span of the attached session */
    bool nvtx;
    char measure_label[256];

    _Atomic uint64_t *corr; /* correlation id → span, packed (corr << 32 | span) */

    pthread_mutex_t queue_lock; /* guards queue + counts */
    cg_cupti_queue queue;
    cg_cupti_counts counts;
    uint64_t written, write_failed;

    atomic_uint_fast64_t dropped_cupti, dropped_buffers, dropped_queue, invalid_records;
    atomic_uint_fast64_t unattributed, memory_samples, memory_unavailable;
    atomic_uint_fast64_t nvtx_spans, nvtx_unmatched, nvtx_overflow;

    pthread_mutex_t err_lock;
    char errors[ERR_MAX][160];
    size_t n_errors;
} g = {.attach_lock = PTHREAD_RWLOCK_INITIALIZER,
       .queue_lock = PTHREAD_MUTEX_INITIALIZER,
       .err_lock = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local cg_span_id tl_nvtx[NVTX_DEPTH];
static _Thread_local size_t tl_nvtx_depth, tl_nvtx_lost;

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...) {
    char line[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "candle-graph-cupti: %s\n", line);
    pthread_mutex_lock(&g.err_lock);
    if (g.n_errors < ERR_MAX) {
        memcpy(g.errors[g.n_errors], line, sizeof line);
        g.n_errors++;
    }
    pthread_mutex_unlock(&g.err_lock);
}

/* Feeding sessions: CUPTI set up and memory never ran out. */
static bool collecting(void) { return atomic_load(&g.active) && !atomic_load(&g.oom); }

/* base/alloc.h's OOM handler inside the host process: give the emergency
 * reserve back, stop collecting for good, record why, and let the failed
 * allocation be retried, so the host program goes on. */
static bool collector_oom(size_t bytes) {
    cg_free(atomic_exchange(&g.reserve, NULL));
    if (!atomic_exchange(&g.oom, 1)) note("out of memory (%zu bytes): collector disabled", bytes);
    return true;
}

static const char *result_name(CUptiResult r) {
    const char *s = NULL;
    if (api.result_string && api.result_string(r, &s) == CUPTI_SUCCESS && s) return s;
    return "CUPTI error";
}

/* ---------------------------------------------------------------- status file */
static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static uint64_t dropped_total(void) {
    return atomic_load(&g.dropped_cupti) + atomic_load(&g.dropped_buffers) +
           atomic_load(&g.dropped_queue) + atomic_load(&g.invalid_records);
}

/* Writes CG_CUPTI_STATUS atomically (tmp + rename). */
static void write_status(void) {
    const char *path = getenv("CG_CUPTI_STATUS");
    if (!path || !*path) return;
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) return;
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    pthread_mutex_lock(&g.queue_lock);
    cg_cupti_counts c = g.counts;
    uint64_t written = g.written, write_failed = g.write_failed;
    pthread_mutex_unlock(&g.queue_lock);
    fprintf(f, "{\"schema\":\"candle-graph/cupti-status/1\",\"active\":%s,",
            collecting() ? "true" : "false");
    fprintf(f, "\"cupti_version\":%" PRIu32 ",\"cupti_api_version\":%d,\"kinds\":",
            g.cupti_version, CUPTI_API_VERSION);
    json_str(f, g.kinds);
    fprintf(f,
            ",\"intervals\":%" PRIu64 ",\"written\":%" PRIu64 ",\"write_failed\":%" PRIu64
            ",\"kernels\":%" PRIu64 ",\"memcpys\":%" PRIu64 ",\"memsets\":%" PRIu64
            ",\"untimed\":%" PRIu64 ",\"ignored\":%" PRIu64 ",\"unknown\":%" PRIu64
            ",\"truncated\":%" PRIu64,
            c.intervals, written, write_failed, c.kernels, c.memcpys, c.memsets, c.untimed,
            c.ignored, c.unknown, c.truncated);
    fprintf(f,
            ",\"dropped_records\":%" PRIu64 ",\"dropped_by_cupti\":%" PRIu64
            ",\"dropped_buffers\":%" PRIu64 ",\"dropped_queue\":%" PRIu64
            ",\"invalid_records\":%" PRIu64 ",\"unattributed\":%" PRIu64
            ",\"device_memory_samples\":%" PRIu64 ",\"device_memory_unavailable\":%" PRIu64
            ",\"nvtx_spans\":%" PRIu64 ",\"nvtx_unmatched\":%" PRIu64 ",\"errors\":[",
            dropped_total(), (uint64_t)atomic_load(&g.dropped_cupti),
            (uint64_t)atomic_load(&g.dropped_buffers), (uint64_t)atomic_load(&g.dropped_queue),
            (uint64_t)atomic_load(&g.invalid_records), (uint64_t)atomic_load(&g.unattributed),
            (uint64_t)atomic_load(&g.memory_samples),
            (uint64_t)atomic_load(&g.memory_unavailable), (uint64_t)atomic_load(&g.nvtx_spans),
            (uint64_t)(atomic_load(&g.nvtx_unmatched) + atomic_load(&g.nvtx_overflow)));
    pthread_mutex_lock(&g.err_lock);
    for (size_t i = 0; i < g.n_errors; i++) {
        if (i) fputc(',', f);
        json_str(f, g.errors[i]);
    }
    pthread_mutex_unlock(&g.err_lock);
    fputs("]}\n", f);
    bool ok = fflush(f) == 0;
    ok = (fclose(f) == 0) && ok;
    if (ok) rename(tmp, path);
    else remove(tmp);
}

/* ---------------------------------------------------------------- correlation */
static void corr_store(uint32_t corr, cg_span_id span) {
    if (!g.corr || span > UINT32_MAX) return;
    atomic_store_explicit(&g.corr[corr & (CORR_SLOTS - 1)], ((uint64_t)corr << 32) | span,
                          memory_order_relaxed);
}

static cg_span_id corr_resolve(void *ctx, uint32_t corr) {
    (void)ctx;
    if (g.corr) {
        uint64_t v = atomic_load_explicit(&g.corr[corr & (CORR_SLOTS - 1)], memory_order_relaxed);
        if ((uint32_t)(v >> 32) == corr && (uint32_t)v != 0) return (cg_span_id)(uint32_t)v;
    }
    atomic_fetch_add(&g.unattributed, 1);
    return CG_SPAN_ROOT;
}

/* ---------------------------------------------------------------- intervals */
static int emit_interval(void *ctx, cg_span_id span, const cg_device_interval_record *rec,
                         const cg_cupti_event *ev) {
    cg_session *s = ctx;
    (void)ev;
    if (cg_session_record_device_interval(s, span, rec, NULL) == 0) g.written++;
    else g.write_failed++;
    return 0;
}

/* Writes the queued intervals into the attached session. The caller holds the
 * attach lock (read or write); takes the queue lock. */
static void drain_locked_session(void) {
    if (atomic_load(&g.oom)) return;
    pthread_mutex_lock(&g.queue_lock);
    if (g.session) cg_cupti_queue_drain(&g.queue, corr_resolve, NULL, emit_interval, g.session);
    pthread_mutex_unlock(&g.queue_lock);
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *max_records = 0;
    *buffer = atomic_load(&g.oom) ? NULL : cg_try_alloc(BUFFER_BYTES, 1); /* malloc: 16-aligned */
    *size = *buffer ? BUFFER_BYTES : 0;
    if (!*buffer) atomic_fetch_add(&g.dropped_buffers, 1);
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                      size_t size, size_t valid) {
    (void)size;
    if (buffer && valid > 0) {
        CUpti_Activity *rec = NULL;
        pthread_mutex_lock(&g.queue_lock);
        for (;;) {
            CUptiResult r = api.next_record(buffer, valid, &rec);
            if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
            if (r != CUPTI_SUCCESS) { /* INVALID_KIND: incomplete/invalid record */
                atomic_fetch_add(&g.invalid_records, 1);
                break;
            }
            size_t avail = valid - (size_t)((const uint8_t *)rec - buffer);
            cg_cupti_event ev;
            if (cg_cupti_decode(rec, avail, &ev, &g.counts) == CG_CUPTI_INTERVAL &&
                cg_cupti_queue_push(&g.queue, &ev) != 0)
                atomic_fetch_add(&g.dropped_queue, 1);
        }
        bool drain = g.queue.n >= DRAIN_THRESHOLD;
        pthread_mutex_unlock(&g.queue_lock);
        if (drain && pthread_rwlock_tryrdlock(&g.attach_lock) == 0) {
            drain_locked_session();
            pthread_rwlock_unlock(&g.attach_lock);
        }
    }
    size_t dropped = 0;
    if (api.dropped(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped > 0)
        atomic_fetch_add(&g.dropped_cupti, dropped);
    cg_free(buffer);
}

/* ---------------------------------------------------------------- device memory */
static void sample_memory(cg_session *s) {
    size_t free_b = 0, total_b = 0;
    if (!api.mem_get_info || api.mem_get_info(&free_b, &total_b) != CUDA_SUCCESS ||
        total_b < free_b) {
        atomic_fetch_add(&g.memory_unavailable, 1);
        return;
    }
    CUdevice dev = 0;
    if (api.ctx_get_device && api.ctx_get_device(&dev) != CUDA_SUCCESS) dev = 0;
    char device[32];
    snprintf(device, sizeof device, "cuda:%d", (int)dev);
    cg_device_memory_record m = {.device = device,
                                 .has_used = true, .used_bytes = total_b - free_b,
                                 .has_free = true, .free_bytes = free_b,
                                 .has_capacity = true, .capacity_bytes = total_b};
    if (cg_session_record_device_memory(s, &m, NULL) == 0) atomic_fetch_add(&g.memory_samples, 1);
}

/* ---------------------------------------------------------------- flush */
/* Forces CUPTI to hand back every buffer, then writes the queued intervals. */
static void flush_into_session(void) {
    if (atomic_load(&g.active)) {
        CUptiResult r = api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        if (r != CUPTI_SUCCESS) note("cuptiActivityFlushAll failed: %s", result_name(r));
    }
    pthread_rwlock_rdlock(&g.attach_lock);
    drain_locked_session();
    pthread_rwlock_unlock(&g.attach_lock);
}

/* One stderr line whenever the dropped count grew since the last report. */
static void report_dropped(void) {
    static atomic_uint_fast64_t reported;
    uint64_t d = dropped_total();
    uint64_t prev = atomic_exchange(&reported, d);
    if (d > prev)
        fprintf(stderr,
                "candle-graph-cupti: %" PRIu64 " activity records dropped (cupti %" PRIu64
                ", buffers %" PRIu64 ", queue %" PRIu64 ", invalid %" PRIu64
                "): the device timing is incomplete\n",
                d, (uint64_t)atomic_load(&g.dropped_cupti),
                (uint64_t)atomic_load(&g.dropped_buffers), (uint64_t)atomic_load(&g.dropped_queue),
                (uint64_t)atomic_load(&g.invalid_records));
}

/* Detaches `s` if it is the attached session; returns whether it was. */
static bool detach(cg_session *s) {
    pthread_rwlock_wrlock(&g.attach_lock);
    bool was = s && g.session == s;
    if (was) {
        g.session = NULL;
        g.measured = 0;
    }
    pthread_rwlock_unlock(&g.attach_lock);
    return was;
}

/* ---------------------------------------------------------------- wrapped API */
EXPORT cg_session *cg_session_open(const char *path, const cg_profile_run *run, cg_error *err) {
    cg_session *s = cg_cupti_real_session_open(path, run, err);
    if (!s) return NULL;
    pthread_rwlock_wrlock(&g.attach_lock);
    if (!g.session && !atomic_load(&g.oom)) {
        g.session = s;
        g.measured = 0;
    }
    pthread_rwlock_unlock(&g.attach_lock);
    return s;
}

EXPORT int cg_session_begin_measurement(cg_session *s, const char *name, cg_span_id *out,
                                        cg_error *err) {
    cg_span_id id = 0;
    int rc = cg_cupti_real_session_begin_measurement(s, name, &id, err);
    if (rc != 0) return rc;
    if (out) *out = id;
    pthread_rwlock_rdlock(&g.attach_lock);
    bool attached = g.session == s;
    pthread_rwlock_unlock(&g.attach_lock);
    if (attached) {
        pthread_rwlock_wrlock(&g.attach_lock);
        if (g.session == s) g.measured = id;
        pthread_rwlock_unlock(&g.attach_lock);
        sample_memory(s);
    }
    return 0;
}

EXPORT int cg_session_end_span(cg_session *s, cg_span_id id, cg_error *err) {
    pthread_rwlock_rdlock(&g.attach_lock);
    bool measured = g.session == s && g.measured != 0 && g.measured == id;
    pthread_rwlock_unlock(&g.attach_lock);
    if (measured && cg_session_current_span(s) == id) sample_memory(s);
    return cg_cupti_real_session_end_span(s, id, err);
}

/* Before a session finishes: when it is the attached one, its device
 * intervals are flushed into it and it is detached. Returns whether it was. */
static bool flush_and_detach(cg_session *s) {
    pthread_rwlock_rdlock(&g.attach_lock);
    bool attached = s && g.session == s;
    pthread_rwlock_unlock(&g.attach_lock);
    if (attached) {
        flush_into_session();
        detach(s);
        report_dropped();
    }
    return attached;
}

EXPORT int cg_session_finish(cg_session *s, cg_error *err) {
    bool attached = flush_and_detach(s);
    int rc = cg_cupti_real_session_finish(s, err);
    if (attached) write_status();
    return rc;
}

EXPORT int cg_session_finish_failed(cg_session *s, const char *reason, cg_error *err) {
    bool attached = flush_and_detach(s);
    int rc = cg_cupti_real_session_finish_failed(s, reason, err);
    if (attached) write_status();
    return rc;
}

EXPORT void cg_session_free(cg_session *s) {
    if (detach(s)) write_status();
    cg_cupti_real_session_free(s);
}

/* ---------------------------------------------------------------- callbacks */
static const char *nvtx_push_name(CUpti_CallbackId cbid, const CUpti_NvtxData *d) {
    if (!d || !d->functionParams) return NULL;
    const nvtxEventAttributes_t *attr = NULL;
    switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
        return ((const nvtxRangePushA_params *)d->functionParams)->message;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
        attr = ((const nvtxRangePushEx_params *)d->functionParams)->eventAttrib;
        break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
        attr = ((const nvtxDomainRangePushEx_params *)d->functionParams)->core.eventAttrib;
        break;
    default: return NULL;
    }
    if (attr && attr->messageType == NVTX_MESSAGE_TYPE_ASCII) return attr->message.ascii;
    return NULL;
}

static void nvtx_callback(CUpti_CallbackId cbid, const CUpti_NvtxData *d) {
    bool push = cbid == CUPTI_CBID_NVTX_nvtxRangePushA || cbid == CUPTI_CBID_NVTX_nvtxRangePushEx ||
                cbid == CUPTI_CBID_NVTX_nvtxDomainRangePushEx;
    bool pop = cbid == CUPTI_CBID_NVTX_nvtxRangePop || cbid == CUPTI_CBID_NVTX_nvtxDomainRangePop;
    if (!push && !pop) return;
    pthread_rwlock_rdlock(&g.attach_lock);
    cg_session *s = g.session;
    bool measure_free = g.measured == 0;
    pthread_rwlock_unlock(&g.attach_lock);
    if (!s) return;
    if (push) {
        const char *name = nvtx_push_name(cbid, d);
        if (tl_nvtx_depth + tl_nvtx_lost >= NVTX_DEPTH || !name || cg_str_blank(name)) {
            /* An unnamed or too deep range: remember it so its pop matches. */
            tl_nvtx_lost++;
            atomic_fetch_add(&g.nvtx_overflow, 1);
            return;
        }
        cg_span_id id = 0;
        int rc;
        if (measure_free && g.measure_label[0] && strcmp(name, g.measure_label) == 0)
            rc = cg_session_begin_measurement(s, name, &id, NULL);
        else
            rc = cg_session_begin_span(s, name, CG_SPAN_FUNCTION, &id, NULL);
        if (rc == 0) {
            tl_nvtx[tl_nvtx_depth++] = id;
            atomic_fetch_add(&g.nvtx_spans, 1);
        } else {
            tl_nvtx_lost++;
            atomic_fetch_add(&g.nvtx_unmatched, 1);
        }
        return;
    }
    if (tl_nvtx_lost > 0) {
        tl_nvtx_lost--;
        return;
    }
    if (tl_nvtx_depth == 0) {
        atomic_fetch_add(&g.nvtx_unmatched, 1);
        return;
    }
    cg_span_id id = tl_nvtx[--tl_nvtx_depth];
    if (cg_session_end_span(s, id, NULL) != 0) atomic_fetch_add(&g.nvtx_unmatched, 1);
}

/* Which API calls can launch device work (kernels, copies, sets, graphs):
 * only their correlation ids are stored. Classified once per callback id from
 * the function name, then read lock-free. */
#define CBID_CACHE 4096
static _Atomic uint8_t g_cbid_class[2][CBID_CACHE]; /* 0 unknown, 1 launch, 2 other */

static bool launches_work(const char *name) {
    static const char *const prefixes[] = {"cudaLaunch", "cudaMemcpy", "cudaMemset",
                                           "cudaGraphLaunch", "cuLaunch", "cuMemcpy",
                                           "cuMemset", "cuGraphLaunch"};
    if (!name) return true; /* unknown: keep it */
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) return true;
    return false;
}

static void CUPTIAPI api_callback(void *userdata, CUpti_CallbackDomain domain,
                                  CUpti_CallbackId cbid, const void *cbdata) {
    (void)userdata;
    if (atomic_load(&g.oom)) return;
    if (domain == CUPTI_CB_DOMAIN_NVTX) {
        if (g.nvtx) nvtx_callback(cbid, cbdata);
        return;
    }
    if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
    const CUpti_CallbackData *d = cbdata;
    if (!d || d->callbackSite != CUPTI_API_ENTER) return;
    /* cudaDeviceReset destroys the contexts and the records CUPTI still holds
     * for them: deliver them first (as NVIDIA's injection sample does). */
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020 &&
        atomic_load(&g.active))
        api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (cbid < CBID_CACHE) {
        _Atomic uint8_t *cls = &g_cbid_class[domain == CUPTI_CB_DOMAIN_DRIVER_API][cbid];
        uint8_t c = atomic_load_explicit(cls, memory_order_relaxed);
        if (c == 0) {
            c = launches_work(d->functionName) ? 1 : 2;
            atomic_store_explicit(cls, c, memory_order_relaxed);
        }
        if (c == 2) return;
    }
    if (pthread_rwlock_tryrdlock(&g.attach_lock) != 0) return;
    if (g.session) corr_store(d->correlationId, cg_session_current_span(g.session));
    pthread_rwlock_unlock(&g.attach_lock);
}

/* ---------------------------------------------------------------- set-up */
static void *sym(void *h, const char *name, bool required, bool *ok) {
    void *p = h ? dlsym(h, name) : NULL;
    if (!p && required) {
        note("missing CUPTI/CUDA entry point %s", name);
        *ok = false;
    }
    return p;
}

static void *open_first(const char *env, const char *const *names) {
    const char *o = getenv(env);
    if (o && *o) return dlopen(o, RTLD_NOW | RTLD_LOCAL);
    for (; *names; names++) {
        void *h = dlopen(*names, RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
    }
    return NULL;
}

static bool resolve_api(void) {
    static const char *const cupti_names[] = {"libcupti.so.13", "libcupti.so", NULL};
    static const char *const cuda_names[] = {"libcuda.so.1", "libcuda.so", NULL};
    void *hc = open_first("CG_CUPTI_LIBRARY", cupti_names);
    if (!hc) {
        note("cannot load libcupti: %s", dlerror());
        return false;
    }
    bool ok = true;
    /* dlsym returns void*; converting to a function pointer is POSIX-defined. */
#define SYM(field, h, name, req) *(void **)(&api.field) = sym(h, name, req, &ok)
    SYM(get_version, hc, "cuptiGetVersion", true);
    SYM(subscribe, hc, "cuptiSubscribe", true);
    SYM(enable_domain, hc, "cuptiEnableDomain", true);
    SYM(register_callbacks, hc, "cuptiActivityRegisterCallbacks", true);
    SYM(activity_enable, hc, "cuptiActivityEnable", true);
    SYM(flush_all, hc, "cuptiActivityFlushAll", true);
    SYM(next_record, hc, "cuptiActivityGetNextRecord", true);
    SYM(dropped, hc, "cuptiActivityGetNumDroppedRecords", true);
    SYM(flush_period, hc, "cuptiActivityFlushPeriod", false);
    SYM(result_string, hc, "cuptiGetResultString", false);
    void *hd = open_first("CG_CUDA_LIBRARY", cuda_names);
    if (hd) {
        SYM(mem_get_info, hd, "cuMemGetInfo_v2", false);
        SYM(ctx_get_device, hd, "cuCtxGetDevice", false);
    }
    if (!api.mem_get_info) note("cuMemGetInfo unavailable: no device memory samples");
#undef SYM
    return ok;
}

static void kinds_add(const char *name) {
    size_t n = strlen(g.kinds);
    snprintf(g.kinds + n, sizeof g.kinds - n, "%s%s", n ? "," : "", name);
}

static uint64_t env_u64(const char *name, uint64_t dflt) {
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || *end) return dflt;
    return (uint64_t)x;
}

static void open_own_session(const char *path) {
    const char *entry = getenv("CG_CUPTI_ENTRYPOINT");
    const char *phase = getenv("CG_CUPTI_PHASE");
    const char *device = getenv("CG_CUPTI_DEVICE");
    uint64_t step = env_u64("CG_CUPTI_STEP", 1);
    if (!entry || !*entry) entry = "program";
    if (!device || !*device) device = "cuda:0";
    cg_profile_run *run = (phase && strcmp(phase, "infer") == 0)
                              ? cg_profile_run_inference(entry, step, device)
                              : cg_profile_run_training(entry, step, device);
    if (!run) return;
    cg_profile_run_tag(run, "capture.collector", "cupti");
    cg_profile_run_tag(run, "capture.spans", g.nvtx ? "nvtx" : "none");
    cg_error err = {0};
    cg_session *s = cg_session_open(path, run, &err);
    cg_profile_run_free(run);
    if (!s) {
        note("cannot open trace %s: %s", path, err.msg);
        return;
    }
    g.own_session = true;
}

/* Finishes the collector's own session at exit: the main thread's NVTX spans
 * are closed; spans other threads left open make the capture failed. */
static void at_exit(void) {
    cg_session *own = NULL;
    pthread_rwlock_rdlock(&g.attach_lock);
    if (g.own_session) own = g.session;
    pthread_rwlock_unlock(&g.attach_lock);
    if (own) {
        while (tl_nvtx_depth > 0) cg_session_end_span(own, tl_nvtx[--tl_nvtx_depth], NULL);
        cg_error err = {0};
        if (cg_session_finish(own, &err) != 0) {
            char reason[CG_ERROR_MAX + 64];
            snprintf(reason, sizeof reason, "capture could not complete: %s", err.msg);
            cg_session_finish_failed(own, reason, NULL);
        }
        cg_session_free(own);
    } else {
        /* No session attached (or already finished): still flush so the
         * dropped-record count is final. */
        flush_into_session();
        report_dropped();
    }
    write_status();
}

EXPORT int InitializeInjection(void); /* the entry point CUDA calls (CUDA_INJECTION64_PATH) */
EXPORT int InitializeInjection(void) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&g.initialized, &expected, 1)) return 1;
    cg_fault_thread_enable(); /* CG_FAULT (tests): count this thread's allocations */
    cg_set_oom_handler(collector_oom);
    atomic_store(&g.reserve, cg_try_alloc(RESERVE_BYTES, 1));
    const char *label = getenv("CG_CUPTI_MEASURE");
    if (label) snprintf(g.measure_label, sizeof g.measure_label, "%s", label);
    const char *nv = getenv("CG_CUPTI_NVTX");
    g.nvtx = nv && strcmp(nv, "1") == 0;
    g.corr = cg_try_zalloc(CORR_SLOTS, sizeof *g.corr);
    cg_cupti_queue_init(&g.queue, env_u64("CG_CUPTI_MAX_EVENTS", 4u << 20));
    atexit(at_exit);

    if (!g.corr) note("out of memory for the correlation table");
    if (!g.corr || !resolve_api()) {
        note("collector disabled: no device intervals will be recorded");
        write_status();
        return 1; /* never fail the host's cuInit */
    }
    CUptiResult r = api.get_version(&g.cupti_version);
    if (r != CUPTI_SUCCESS) note("cuptiGetVersion failed: %s", result_name(r));

    CUpti_SubscriberHandle sub = NULL;
    r = api.subscribe(&sub, api_callback, NULL);
    if (r != CUPTI_SUCCESS) {
        note("cuptiSubscribe failed (%s): another CUPTI client (Nsight?) is active; "
             "collector disabled",
             result_name(r));
        write_status();
        return 1;
    }
    r = api.register_callbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS) {
        note("cuptiActivityRegisterCallbacks failed: %s; collector disabled", result_name(r));
        write_status();
        return 1;
    }
    if (api.enable_domain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API) != CUPTI_SUCCESS ||
        api.enable_domain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API) != CUPTI_SUCCESS)
        note("API callbacks unavailable: launches are attributed to the root span");
    if (g.nvtx && api.enable_domain(1, sub, CUPTI_CB_DOMAIN_NVTX) != CUPTI_SUCCESS)
        note("NVTX callbacks unavailable: no NVTX spans");

    static const struct { CUpti_ActivityKind kind; const char *name; } kinds[] = {
        {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "concurrent_kernel"},
        {CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy"},
        {CUPTI_ACTIVITY_KIND_MEMCPY2, "memcpy2"},
        {CUPTI_ACTIVITY_KIND_MEMSET, "memset"},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        r = api.activity_enable(kinds[i].kind);
        if (r == CUPTI_SUCCESS) kinds_add(kinds[i].name);
        else note("cuptiActivityEnable(%s) failed: %s", kinds[i].name, result_name(r));
    }
    if (api.flush_period) api.flush_period((uint32_t)env_u64("CG_CUPTI_FLUSH_MS", 500));
    atomic_store(&g.active, 1);

    const char *trace = getenv("CG_CUPTI_TRACE");
    if (trace && *trace) open_own_session(trace);
    return 1;
}
