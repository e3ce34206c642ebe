/* fake_cupti.c — stand-in libcupti.so for the collector tests (see
 * cupti_stub.h). Implements the entry points libcandlegraph-cupti resolves,
 * with CUPTI's signatures and semantics as documented in the CUDA 13 headers. */
#include <cupti.h>
#include <generated_nvtx_meta.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_stub.h"

#define MAX_BUFFERS 64
#define MAX_RECORDS 4096

typedef struct {
    uint8_t *base; /* NULL = free slot */
    uint64_t seq;  /* fill order */
    size_t size, used;
    size_t offsets[MAX_RECORDS], sizes[MAX_RECORDS];
    size_t n;
} stub_buffer;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_CallbackFunc cb_fn;
static void *cb_user;
static int domains[8];
static CUpti_BuffersCallbackRequestFunc req_fn;
static CUpti_BuffersCallbackCompleteFunc done_fn;
static int kinds[128];
static stub_buffer buffers[MAX_BUFFERS];
static int cur = -1; /* slot being filled, -1 = none */
static uint64_t next_seq;
static size_t dropped;
static uint32_t next_corr = 1;
static size_t completed;
static struct CUpti_Subscriber_st { int unused; } the_subscriber;

CUptiResult cuptiGetVersion(uint32_t *version) {
    *version = CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                           void *userdata) {
    if (getenv("CG_STUB_SUBSCRIBE_BUSY")) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    cb_fn = callback;
    cb_user = userdata;
    *subscriber = &the_subscriber;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                              CUpti_CallbackDomain domain) {
    if (subscriber != &the_subscriber || (unsigned)domain >= 8) return CUPTI_ERROR_INVALID_PARAMETER;
    domains[domain] = enable != 0;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                                           CUpti_BuffersCallbackCompleteFunc funcBufferCompleted) {
    if (!funcBufferRequested || !funcBufferCompleted) return CUPTI_ERROR_INVALID_PARAMETER;
    req_fn = funcBufferRequested;
    done_fn = funcBufferCompleted;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
    if ((unsigned)kind >= 128) return CUPTI_ERROR_INVALID_KIND;
    kinds[kind] = 1;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityFlushPeriod(uint32_t time) {
    (void)time;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiGetResultString(CUptiResult result, const char **str) {
    *str = result == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR (stub)";
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId,
                                              size_t *dropped_out) {
    (void)context;
    (void)streamId;
    pthread_mutex_lock(&lock);
    *dropped_out = dropped; /* reset on read, as CUPTI does */
    dropped = 0;
    pthread_mutex_unlock(&lock);
    return CUPTI_SUCCESS;
}

/* Walks the records of a buffer this stub filled. */
CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes,
                                       CUpti_Activity **record) {
    stub_buffer *b = NULL;
    for (size_t i = 0; i < MAX_BUFFERS; i++)
        if (buffers[i].base == buffer) b = &buffers[i];
    if (!b) return CUPTI_ERROR_INVALID_PARAMETER;
    size_t next = 0;
    if (*record) {
        size_t off = (size_t)((uint8_t *)*record - buffer);
        size_t i = 0;
        while (i < b->n && b->offsets[i] != off) i++;
        if (i == b->n) return CUPTI_ERROR_INVALID_KIND;
        next = i + 1;
    }
    if (next >= b->n || b->offsets[next] >= validBufferSizeBytes) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = (CUpti_Activity *)(buffer + b->offsets[next]);
    return CUPTI_SUCCESS;
}

/* Completes every filled buffer, newest first (out of order). */
CUptiResult cuptiActivityFlushAll(uint32_t flag) {
    (void)flag;
    for (;;) {
        pthread_mutex_lock(&lock);
        stub_buffer *b = NULL;
        for (size_t i = 0; i < MAX_BUFFERS; i++)
            if (buffers[i].base && (!b || buffers[i].seq > b->seq)) b = &buffers[i];
        cur = -1;
        if (!b) {
            pthread_mutex_unlock(&lock);
            break;
        }
        uint8_t *base = b->base;
        size_t size = b->size, used = b->used;
        pthread_mutex_unlock(&lock);
        done_fn(NULL, 0, base, size, used); /* the collector frees the buffer */
        pthread_mutex_lock(&lock);
        memset(b, 0, sizeof *b);
        completed++;
        pthread_mutex_unlock(&lock);
    }
    return CUPTI_SUCCESS;
}

/* ------------------------------------------------------------- control */
static stub_buffer *current_buffer(size_t need) {
    if (cur >= 0 && buffers[cur].used + need <= buffers[cur].size && buffers[cur].n < MAX_RECORDS)
        return &buffers[cur];
    cur = -1;
    int slot = -1;
    for (int i = 0; i < MAX_BUFFERS && slot < 0; i++)
        if (!buffers[i].base) slot = i;
    uint8_t *mem = NULL;
    size_t size = 0, max_records = 0;
    if (slot >= 0) req_fn(&mem, &size, &max_records);
    if (!mem || size < need) {
        free(mem);
        dropped++; /* like CUPTI: no buffer, the record is lost */
        return NULL;
    }
    stub_buffer *b = &buffers[slot];
    memset(b, 0, sizeof *b);
    b->base = mem;
    b->size = size;
    b->seq = next_seq++;
    cur = slot;
    return b;
}

static void append(const void *bytes, size_t len) {
    size_t padded = (len + 7) & ~(size_t)7;
    stub_buffer *b = current_buffer(padded);
    if (!b) return;
    memcpy(b->base + b->used, bytes, len);
    b->offsets[b->n] = b->used;
    b->sizes[b->n] = padded;
    b->n++;
    b->used += padded;
}

void cupti_stub_new_buffer(void) {
    pthread_mutex_lock(&lock);
    cur = -1;
    pthread_mutex_unlock(&lock);
}

void cupti_stub_raw(const void *bytes, size_t len) {
    pthread_mutex_lock(&lock);
    append(bytes, len);
    pthread_mutex_unlock(&lock);
}

void cupti_stub_drop(size_t n) {
    pthread_mutex_lock(&lock);
    dropped += n;
    pthread_mutex_unlock(&lock);
}

size_t cupti_stub_completed(void) {
    pthread_mutex_lock(&lock);
    size_t n = completed;
    pthread_mutex_unlock(&lock);
    return n;
}

static void runtime_callback(CUpti_CallbackId cbid, const char *name, uint32_t corr,
                             CUpti_ApiCallbackSite site) {
    if (!cb_fn || !domains[CUPTI_CB_DOMAIN_RUNTIME_API]) return;
    CUpti_CallbackData d;
    memset(&d, 0, sizeof d);
    d.callbackSite = site;
    d.functionName = name;
    d.correlationId = corr;
    cb_fn(cb_user, CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &d);
}

static void api_callback(uint32_t corr, CUpti_ApiCallbackSite site) {
    runtime_callback(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel", corr, site);
}

/* cudaDeviceReset: ENTER callback, then the contexts are gone and so is every
 * record CUPTI had not delivered yet (the buffers come back empty). */
void cupti_stub_device_reset(void) {
    pthread_mutex_lock(&lock);
    uint32_t corr = next_corr++;
    pthread_mutex_unlock(&lock);
    runtime_callback(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020, "cudaDeviceReset", corr,
                     CUPTI_API_ENTER);
    for (;;) {
        pthread_mutex_lock(&lock);
        stub_buffer *b = NULL;
        for (size_t i = 0; i < MAX_BUFFERS && !b; i++)
            if (buffers[i].base) b = &buffers[i];
        cur = -1;
        if (!b) {
            pthread_mutex_unlock(&lock);
            break;
        }
        uint8_t *base = b->base;
        size_t size = b->size;
        memset(b, 0, sizeof *b);
        pthread_mutex_unlock(&lock);
        done_fn(NULL, 0, base, size, 0);
    }
    runtime_callback(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020, "cudaDeviceReset", corr,
                     CUPTI_API_EXIT);
}

uint32_t cupti_stub_launch(uint32_t kind, uint32_t device, uint32_t stream, uint64_t start,
                           uint64_t end, const char *name) {
    pthread_mutex_lock(&lock);
    uint32_t corr = next_corr++;
    pthread_mutex_unlock(&lock);
    api_callback(corr, CUPTI_API_ENTER);
    api_callback(corr, CUPTI_API_EXIT);
    pthread_mutex_lock(&lock);
    if ((unsigned)kind < 128 && kinds[kind]) {
        if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            CUpti_ActivityKernel10 k;
            memset(&k, 0, sizeof k);
            k.kind = (CUpti_ActivityKind)kind;
            k.start = start;
            k.end = end;
            k.deviceId = device;
            k.streamId = stream;
            k.correlationId = corr;
            k.name = name;
            append(&k, sizeof k);
        } else if (kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            CUpti_ActivityMemcpy6 m;
            memset(&m, 0, sizeof m);
            m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
            m.start = start;
            m.end = end;
            m.bytes = 4096;
            m.deviceId = device;
            m.streamId = stream;
            m.correlationId = corr;
            append(&m, sizeof m);
        } else if (kind == CUPTI_ACTIVITY_KIND_MEMSET) {
            CUpti_ActivityMemset4 m;
            memset(&m, 0, sizeof m);
            m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
            m.start = start;
            m.end = end;
            m.bytes = 1024;
            m.deviceId = device;
            m.streamId = stream;
            m.correlationId = corr;
            append(&m, sizeof m);
        }
    }
    pthread_mutex_unlock(&lock);
    return corr;
}

static void nvtx_callback(CUpti_CallbackId cbid, const void *params) {
    if (!cb_fn || !domains[CUPTI_CB_DOMAIN_NVTX]) return;
    CUpti_NvtxData d;
    memset(&d, 0, sizeof d);
    d.functionName = cbid == CUPTI_CBID_NVTX_nvtxRangePop ? "nvtxRangePop" : "nvtxRangePushA";
    d.functionParams = params;
    cb_fn(cb_user, CUPTI_CB_DOMAIN_NVTX, cbid, &d);
}

void cupti_stub_nvtx_push(const char *name) {
    nvtxRangePushA_params p = {.message = name};
    nvtx_callback(CUPTI_CBID_NVTX_nvtxRangePushA, &p);
}

void cupti_stub_nvtx_pop(void) { nvtx_callback(CUPTI_CBID_NVTX_nvtxRangePop, NULL); }
