#include "base/strmap.h"

#include "base/alloc.h"

#include <stdlib.h>
#include <string.h>

uint64_t cg_hash_bytes(const void *p, size_t n) {
    /* FNV-1a 64 with a final avalanche */
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ull;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

void cg_strmap_init(cg_strmap *m) {
    m->slots = NULL;
    m->cap = m->n = 0;
}

void cg_strmap_free(cg_strmap *m) {
    free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
}

static cg_strmap_slot *find(const cg_strmap *m, const char *key, size_t len, uint64_t h) {
    if (!m->cap) return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        cg_strmap_slot *s = &m->slots[i];
        if (!s->key) return s;
        if (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0) return s;
    }
}

static void grow(cg_strmap *m) {
    size_t ncap = m->cap ? m->cap * 2 : 64;
    cg_strmap_slot *ns = cg_xzalloc(ncap, sizeof *ns);
    for (size_t i = 0; i < m->cap; i++) {
        cg_strmap_slot *s = &m->slots[i];
        if (!s->key) continue;
        size_t j = s->hash & (ncap - 1);
        while (ns[j].key) j = (j + 1) & (ncap - 1);
        ns[j] = *s;
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
}

size_t *cg_strmap_getn(const cg_strmap *m, const char *key, size_t len) {
    cg_strmap_slot *s = find(m, key, len, cg_hash_bytes(key, len));
    return s && s->key ? &s->value : NULL;
}

size_t *cg_strmap_get(const cg_strmap *m, const char *key) { return cg_strmap_getn(m, key, strlen(key)); }

bool cg_strmap_putn(cg_strmap *m, const char *key, size_t len, size_t value, size_t **existing) {
    if ((m->n + 1) * 4 >= m->cap * 3) grow(m);
    uint64_t h = cg_hash_bytes(key, len);
    cg_strmap_slot *s = find(m, key, len, h);
    if (s->key) {
        if (existing) *existing = &s->value;
        return false;
    }
    s->key = key;
    s->len = len;
    s->hash = h;
    s->value = value;
    m->n++;
    return true;
}

bool cg_strmap_put(cg_strmap *m, const char *key, size_t value, size_t **existing) {
    return cg_strmap_putn(m, key, strlen(key), value, existing);
}
