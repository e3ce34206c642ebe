/* srv_cache.h — the bounded, de-duplicating cache of per-bundle indexes that
 * the server keeps (the Timeline index, timeline_index.c, and the dashboard
 * view index, view_index.c).
 *
 * A cache holds at most `slots` entries (≤ SRV_CACHE_MAX_SLOTS) and about
 * `max_bytes` in all; inserting evicts the least recently used entries that
 * nobody holds (an entry in use is never evicted). Entries are reference
 * counted: srv_cache_acquire takes one reference, srv_cache_release drops it.
 * When every slot is held, a fresh entry is served uncached and freed by its
 * last release. One build per id at a time: a request for an id that another
 * thread is building waits for that build instead of building again (up to
 * SRV_CACHE_BUILDS builds of different ids are tracked at once; beyond that a
 * build runs untracked and its result is merged on insertion — the entry
 * already cached wins and the duplicate is freed).
 *
 * Ownership: the cache owns the entries it holds and frees them with the
 * free_item callback given to srv_cache_init; srv_cache_destroy frees every
 * entry (no reference may be held then). Thread-safe (one mutex per cache). */
#ifndef SRV_CACHE_H
#define SRV_CACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SRV_CACHE_MAX_SLOTS 8
#define SRV_CACHE_BUILDS 8

/* The cache's part of an entry, embedded in each cached object. */
typedef struct srv_cache_item {
    char id[65];       /* bundle id (64 hex) */
    uint64_t bytes;    /* approximate heap bytes, for max_bytes (0: not counted) */
    unsigned refs;     /* guarded by the cache mutex */
    bool uncached;     /* served outside the slots: freed by the last release */
    uint64_t last_use; /* guarded by the cache mutex */
} srv_cache_item;

typedef void (*srv_cache_free_fn)(srv_cache_item *it);
/* Builds the entry of id (its item.id set); NULL on failure (ctx carries the
 * error back to the caller of srv_cache_acquire). */
typedef srv_cache_item *(*srv_cache_build_fn)(void *ctx, const char *id);

typedef struct srv_cache {
    pthread_mutex_t mu;
    pthread_cond_t built; /* a build finished */
    size_t slots;
    uint64_t max_bytes;
    srv_cache_free_fn free_item;
    srv_cache_item *item[SRV_CACHE_MAX_SLOTS];  /* guarded by mu */
    uint64_t clock;                             /* guarded by mu */
    char building[SRV_CACHE_BUILDS][65];        /* "" = free; guarded by mu */
} srv_cache;

void srv_cache_init(srv_cache *c, size_t slots, uint64_t max_bytes, srv_cache_free_fn free_item);
void srv_cache_destroy(srv_cache *c);
/* The cached entry of id with a reference taken, or NULL (builds nothing). */
srv_cache_item *srv_cache_get(srv_cache *c, const char *id);
/* The entry of id with a reference taken: cached, or built by build(ctx, id)
 * and inserted. NULL when the build failed. */
srv_cache_item *srv_cache_acquire(srv_cache *c, const char *id, srv_cache_build_fn build, void *ctx);
void srv_cache_release(srv_cache *c, srv_cache_item *it);
/* Frees every cached entry nobody holds. */
void srv_cache_clear(srv_cache *c);

#endif
