/* compare_cache.c — a bounded in-process LRU of GET/POST /compare answers.
 *
 * A comparison is a pure function of its cohorts' ordered bundle ids: stored
 * bundles are immutable (no route deletes or changes one) and their facts are
 * computed deterministically, so an answer computed once can be served again
 * byte for byte. Each server instance keeps its own cache (instances on one
 * database may each compute an answer once). Limits: SRV_CMP_CACHE_ENTRIES
 * entries, answers above SRV_CMP_CACHE_MAX_BYTES are not kept. Thread-safe
 * (one mutex); entries live until evicted (process lifetime). */
#include <stdlib.h>
#include <string.h>

#include "srv_compare.h"
#include "base/alloc.h"

#define SRV_CMP_CACHE_ENTRIES 128
#define SRV_CMP_CACHE_MAX_BYTES (4u << 20)

typedef struct entry {
    char key[65];
    char *data;
    size_t len;
    bool ineligible;
    uint64_t used; /* LRU clock */
} entry;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static entry cache[SRV_CMP_CACHE_ENTRIES];
static uint64_t clock_;

void srv_compare_cache_key(const srv_cohort *a, const srv_cohort *b, char key[65]) {
    cg_buf s = CG_BUF_INIT;
    cg_buf_puts(&s, "comparison/6 verified_bundles\na:");
    for (size_t i = 0; i < a->n; i++) cg_buf_printf(&s, "%s%s", i ? "," : "", a->ids[i]);
    cg_buf_puts(&s, "\nb:");
    for (size_t i = 0; i < b->n; i++) cg_buf_printf(&s, "%s%s", i ? "," : "", b->ids[i]);
    cg_sha256_hex(s.data, s.len, key);
    cg_buf_free(&s);
}

char *srv_compare_cache_get(const char key[65], size_t *len, bool *ineligible) {
    char *out = NULL;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < SRV_CMP_CACHE_ENTRIES; i++) {
        entry *e = &cache[i];
        if (!e->data || memcmp(e->key, key, 64) != 0) continue;
        out = malloc(e->len ? e->len : 1);
        if (out) {
            memcpy(out, e->data, e->len);
            *len = e->len;
            *ineligible = e->ineligible;
            e->used = ++clock_;
        }
        break;
    }
    pthread_mutex_unlock(&mu);
    return out;
}

void srv_compare_cache_put(const char key[65], const char *data, size_t len, bool ineligible) {
    if (len > SRV_CMP_CACHE_MAX_BYTES) return;
    char *copy = malloc(len ? len : 1);
    if (!copy) return;
    memcpy(copy, data, len);
    pthread_mutex_lock(&mu);
    entry *victim = &cache[0];
    for (size_t i = 0; i < SRV_CMP_CACHE_ENTRIES; i++) {
        entry *e = &cache[i];
        if (e->data && memcmp(e->key, key, 64) == 0) { /* computed twice concurrently: keep one */
            victim = e;
            break;
        }
        if (!e->data) {
            victim = e;
            break;
        }
        if (e->used < victim->used) victim = e;
    }
    cg_free(victim->data);
    memcpy(victim->key, key, 65);
    victim->data = copy;
    victim->len = len;
    victim->ineligible = ineligible;
    victim->used = ++clock_;
    pthread_mutex_unlock(&mu);
}
