/* srv_cache.c — the bounded, de-duplicating index cache (srv_cache.h). */
#include "srv_cache.h"

#include <stdio.h>
#include <string.h>

void srv_cache_init(srv_cache *c, size_t slots, uint64_t max_bytes, srv_cache_free_fn free_item) {
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->built, NULL);
    c->slots = slots < SRV_CACHE_MAX_SLOTS ? slots : SRV_CACHE_MAX_SLOTS;
    c->max_bytes = max_bytes;
    c->free_item = free_item;
}

void srv_cache_destroy(srv_cache *c) {
    for (size_t i = 0; i < c->slots; i++)
        if (c->item[i]) c->free_item(c->item[i]);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->built);
}

static srv_cache_item *find_locked(srv_cache *c, const char *id) {
    for (size_t i = 0; i < c->slots; i++)
        if (c->item[i] && !strcmp(c->item[i]->id, id)) return c->item[i];
    return NULL;
}

static srv_cache_item *take_locked(srv_cache *c, srv_cache_item *it) {
    it->refs++;
    it->last_use = ++c->clock;
    return it;
}

srv_cache_item *srv_cache_get(srv_cache *c, const char *id) {
    pthread_mutex_lock(&c->mu);
    srv_cache_item *hit = find_locked(c, id);
    if (hit) take_locked(c, hit);
    pthread_mutex_unlock(&c->mu);
    return hit;
}

/* Moves into drop[] the least recently used entries nobody holds until x fits
 * in a free slot and the byte bound; returns how many were dropped. */
static size_t make_room_locked(srv_cache *c, const srv_cache_item *x, srv_cache_item **drop) {
    size_t nd = 0;
    for (;;) {
        uint64_t total = x->bytes;
        size_t used = 0, lru = c->slots;
        for (size_t i = 0; i < c->slots; i++) {
            srv_cache_item *e = c->item[i];
            if (!e) continue;
            total += e->bytes;
            used++;
            if (e->refs == 0 && (lru == c->slots || e->last_use < c->item[lru]->last_use)) lru = i;
        }
        if ((used < c->slots && total <= c->max_bytes) || lru == c->slots) return nd;
        drop[nd++] = c->item[lru];
        c->item[lru] = NULL;
    }
}

/* Inserts x (a fresh entry, refs 0) unless the same id is cached already
 * (then x is freed); returns the cached entry with one reference taken. */
static srv_cache_item *insert(srv_cache *c, srv_cache_item *x) {
    srv_cache_item *drop[SRV_CACHE_MAX_SLOTS + 1] = {0};
    size_t nd = 0;
    pthread_mutex_lock(&c->mu);
    srv_cache_item *out = find_locked(c, x->id);
    if (out) {
        drop[nd++] = x;
    } else {
        out = x;
        nd = make_room_locked(c, x, drop);
        size_t slot = c->slots;
        for (size_t i = 0; i < c->slots && slot == c->slots; i++)
            if (!c->item[i]) slot = i;
        if (slot != c->slots) c->item[slot] = x;
        else x->uncached = true;
    }
    take_locked(c, out);
    pthread_mutex_unlock(&c->mu);
    for (size_t i = 0; i < nd; i++) c->free_item(drop[i]);
    return out;
}

srv_cache_item *srv_cache_acquire(srv_cache *c, const char *id, srv_cache_build_fn build, void *ctx) {
    int slot = -1;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        srv_cache_item *hit = find_locked(c, id);
        if (hit) {
            take_locked(c, hit);
            pthread_mutex_unlock(&c->mu);
            return hit;
        }
        bool busy = false;
        for (size_t i = 0; i < SRV_CACHE_BUILDS; i++)
            if (!strcmp(c->building[i], id)) busy = true;
        if (!busy) break;
        pthread_cond_wait(&c->built, &c->mu);
    }
    for (size_t i = 0; i < SRV_CACHE_BUILDS && slot < 0; i++)
        if (!c->building[i][0]) {
            slot = (int)i;
            snprintf(c->building[i], sizeof c->building[i], "%s", id);
        }
    pthread_mutex_unlock(&c->mu);
    srv_cache_item *x = build(ctx, id);
    srv_cache_item *out = x ? insert(c, x) : NULL;
    if (slot >= 0) {
        pthread_mutex_lock(&c->mu);
        c->building[slot][0] = 0;
        pthread_cond_broadcast(&c->built);
        pthread_mutex_unlock(&c->mu);
    }
    return out;
}

void srv_cache_release(srv_cache *c, srv_cache_item *it) {
    pthread_mutex_lock(&c->mu);
    bool free_it = --it->refs == 0 && it->uncached;
    pthread_mutex_unlock(&c->mu);
    if (free_it) c->free_item(it);
}

void srv_cache_clear(srv_cache *c) {
    srv_cache_item *drop[SRV_CACHE_MAX_SLOTS];
    size_t nd = 0;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->slots; i++)
        if (c->item[i] && c->item[i]->refs == 0) {
            drop[nd++] = c->item[i];
            c->item[i] = NULL;
        }
    pthread_mutex_unlock(&c->mu);
    for (size_t i = 0; i < nd; i++) c->free_item(drop[i]);
}
