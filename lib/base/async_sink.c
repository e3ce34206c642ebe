/* async_sink.c — chunks handed to a worker thread through a ring of buffers. */
#include "base/async_sink.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

typedef struct slot {
    char *data;
    size_t len, cap;
} slot;

struct cg_async_sink {
    cg_json_sink inner;
    void *inner_ctx;
    pthread_t worker;
    pthread_mutex_t mu;
    pthread_cond_t filled, emptied;
    slot slots[CG_ASYNC_SLOTS];
    size_t head, count; /* slots[head] is the oldest filled; count filled */
    bool closing;
    int result; /* the inner sink's first non-zero return */
};

static void *work(void *arg) {
    cg_async_sink *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->count && !s->closing) pthread_cond_wait(&s->filled, &s->mu);
        if (!s->count) break; /* closing and drained */
        slot *sl = &s->slots[s->head];
        int failed = s->result;
        pthread_mutex_unlock(&s->mu);
        int r = failed ? failed : s->inner(s->inner_ctx, sl->data, sl->len);
        pthread_mutex_lock(&s->mu);
        if (r && !s->result) s->result = r;
        s->head = (s->head + 1) % CG_ASYNC_SLOTS;
        s->count--;
        pthread_cond_signal(&s->emptied);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

cg_async_sink *cg_async_sink_start(cg_json_sink inner, void *inner_ctx) {
    cg_async_sink *s = cg_xzalloc(1, sizeof *s);
    s->inner = inner;
    s->inner_ctx = inner_ctx;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->filled, NULL);
    pthread_cond_init(&s->emptied, NULL);
    if (pthread_create(&s->worker, NULL, work, s) != 0) {
        pthread_cond_destroy(&s->emptied);
        pthread_cond_destroy(&s->filled);
        pthread_mutex_destroy(&s->mu);
        cg_free(s);
        return NULL;
    }
    return s;
}

int cg_async_sink_put(void *ctx, const char *data, size_t len) {
    cg_async_sink *s = ctx;
    pthread_mutex_lock(&s->mu);
    while (s->count == CG_ASYNC_SLOTS && !s->result) pthread_cond_wait(&s->emptied, &s->mu);
    int r = s->result;
    if (r) {
        pthread_mutex_unlock(&s->mu);
        return r;
    }
    /* the free slot after the filled ones is the worker's no longer */
    slot *sl = &s->slots[(s->head + s->count) % CG_ASYNC_SLOTS];
    pthread_mutex_unlock(&s->mu);
    if (sl->cap < len) {
        cg_free(sl->data);
        sl->data = cg_xalloc(len, 1);
        sl->cap = len;
    }
    if (len) memcpy(sl->data, data, len);
    sl->len = len;
    pthread_mutex_lock(&s->mu);
    s->count++;
    pthread_cond_signal(&s->filled);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

int cg_async_sink_finish(cg_async_sink *s) {
    pthread_mutex_lock(&s->mu);
    s->closing = true;
    pthread_cond_signal(&s->filled);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->worker, NULL);
    int r = s->result;
    for (size_t i = 0; i < CG_ASYNC_SLOTS; i++) cg_free(s->slots[i].data);
    pthread_cond_destroy(&s->emptied);
    pthread_cond_destroy(&s->filled);
    pthread_mutex_destroy(&s->mu);
    cg_free(s);
    return r;
}
