/* hmap.h — the generic hash table of candle-graph: open addressing with
 * linear probing over 32-bit record ids. The table stores no keys: the caller
 * keeps its records (an array, an arena) and supplies the 64-bit hash of a key
 * and an equality test of a key against record `id`. Each slot is 8 bytes —
 * the hash's top 32 bits and id + 1 (0 = empty) — so a probe reads a record
 * only when 32 hash bits agree, and growth rehashes from the stored bits (no
 * callback). The home slot is the Fibonacci hash of those 32 bits.
 *
 * Lookups are static inline so that the caller's (constant) equality function
 * is inlined on hot paths (the trace health checks). cg_hstr (below) is the
 * string-keyed map on this table for callers that want it to hold the key.
 *
 * A slot array of 2 MiB or more is aligned to 2 MiB and asks the kernel for
 * transparent huge pages (madvise), so that random probes of a table larger
 * than the cache do not also miss the TLB on every probe.
 *
 * Limits: ids < CG_HMAP_NONE (2^32 - 1); at most 2^31 entries; load ≤ 1/2.
 * Ownership: the table owns its slot array (cg_hmap_free). Allocation failure
 * follows the cg_x* policy of base/alloc.h. Not thread-safe; concurrent
 * lookups without writers are fine. */
#ifndef CG_BASE_HMAP_H
#define CG_BASE_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CG_HMAP_NONE UINT32_MAX

typedef struct cg_hmap {
    uint64_t *slot;
    size_t mask, count;
    unsigned shift; /* 32 - log2(capacity) */
    void *block;    /* the allocation slot lies in (aligned inside it when large) */
} cg_hmap;

/* Equality of the caller's key with record id. */
typedef bool (*cg_hmap_eq)(const void *ctx, uint32_t id, const void *key);

/* A table sized for `expect` entries without growing. */
void cg_hmap_init(cg_hmap *m, size_t expect);
void cg_hmap_free(cg_hmap *m);
/* Stores id under hash h in the empty slot `at` that cg_hmap_find returned
 * (the table must not have changed since); grows when half full. */
void cg_hmap_put_at(cg_hmap *m, size_t at, uint64_t h, uint32_t id);

static inline size_t cg_hmap_home(const cg_hmap *m, uint32_t tag) {
    return (size_t)((uint32_t)(tag * 0x9e3779b1u) >> m->shift) & m->mask;
}

/* Starts loading the home slot of hash h into the cache, for a lookup of h a
 * little later (a table larger than the cache: issue several before the first
 * find). A hint only: nothing is read or changed. */
static inline void cg_hmap_prefetch(const cg_hmap *m, uint64_t h) {
    __builtin_prefetch(&m->slot[cg_hmap_home(m, (uint32_t)(h >> 32))]);
}

/* The id of the record equal to key under hash h, or CG_HMAP_NONE; *at (when
 * not NULL) receives the empty slot where such a record would be stored. */
static inline uint32_t cg_hmap_find(const cg_hmap *m, uint64_t h, cg_hmap_eq eq, const void *ctx,
                                    const void *key, size_t *at) {
    uint32_t tag = (uint32_t)(h >> 32);
    size_t i = cg_hmap_home(m, tag);
    for (uint64_t s; (s = m->slot[i]) != 0; i = (i + 1) & m->mask)
        if ((uint32_t)(s >> 32) == tag && eq(ctx, (uint32_t)s - 1, key)) return (uint32_t)s - 1;
    if (at) *at = i;
    return CG_HMAP_NONE;
}

/* Finds key; when absent, stores id under it. Returns the id found, or
 * CG_HMAP_NONE when id was stored. */
static inline uint32_t cg_hmap_find_or_put(cg_hmap *m, uint64_t h, cg_hmap_eq eq, const void *ctx,
                                           const void *key, uint32_t id) {
    size_t at = 0;
    uint32_t found = cg_hmap_find(m, h, eq, ctx, key, &at);
    if (found == CG_HMAP_NONE) cg_hmap_put_at(m, at, h, id);
    return found;
}

/* Hash of n bytes continued from h (word at a time; the length is mixed in,
 * so adjacent fields of a composite key cannot trade bytes). Finish with
 * cg_hmap_mix before use: the slot tag is the top 32 bits. */
static inline uint64_t cg_hmap_hash_bytes(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t w;
    h ^= (uint64_t)n * 0xff51afd7ed558ccdULL;
    while (n >= 8) {
        memcpy(&w, b, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
        h ^= h >> 29;
        b += 8;
        n -= 8;
    }
    w = 0;
    memcpy(&w, b, n);
    h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
    return h ^ (h >> 32);
}
/* Mixes a 64-bit value into a hash (for composite keys and integer keys). */
static inline uint64_t cg_hmap_mix(uint64_t h, uint64_t v) {
    h ^= v * 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

/* ---- cg_hstr: byte strings to size_t values, over one cg_hmap.
 * Entries are kept in insertion order (ent[0..n)): iterating them gives
 * first-seen order, never hash order. Keys are NOT copied: they must outlive
 * the map (arena strings, literals). The map owns its entry array and table
 * (cg_hstr_free). Limits and allocation policy as cg_hmap. A value pointer
 * returned by get/put stays valid until the next put. */
typedef struct cg_hstr_ent {
    const char *key;
    size_t len;
    size_t value;
} cg_hstr_ent;

typedef struct cg_hstr {
    cg_hmap index;
    cg_hstr_ent *ent;
    size_t n, cap;
} cg_hstr;

void cg_hstr_init(cg_hstr *m, size_t expect);
void cg_hstr_free(cg_hstr *m);
/* Appends an entry (no lookup): the slot `at` from cg_hmap_find, hash h. */
size_t *cg_hstr_add_at(cg_hstr *m, size_t at, uint64_t h, const char *key, size_t len, size_t value);

/* The seed of cg_hstr_hash: random per process (set before main), so that
 * keys taken from the input cannot be precomputed to collide. Nothing may
 * depend on hash order: cg_hstr iterates in insertion order. */
extern uint64_t cg_hstr_seed;
/* The hash cg_hstr uses for n bytes. */
static inline uint64_t cg_hstr_hash(const void *p, size_t n) {
    return cg_hmap_mix(cg_hmap_hash_bytes(cg_hstr_seed, p, n), n);
}

static inline bool cg_hstr_eq(const void *ctx, uint32_t id, const void *key) {
    const cg_hstr_ent *e = &((const cg_hstr *)ctx)->ent[id], *k = key;
    return e->len == k->len && memcmp(e->key, k->key, k->len) == 0;
}

/* The value stored for the len bytes at key, or NULL. */
static inline size_t *cg_hstr_getn(const cg_hstr *m, const char *key, size_t len) {
    cg_hstr_ent k = {key, len, 0};
    uint32_t id = cg_hmap_find(&m->index, cg_hstr_hash(key, len), cg_hstr_eq, m, &k, NULL);
    return id == CG_HMAP_NONE ? NULL : &m->ent[id].value;
}
static inline size_t *cg_hstr_get(const cg_hstr *m, const char *key) { return cg_hstr_getn(m, key, strlen(key)); }

/* Stores key with value when absent. Returns true when it was stored; *slot
 * (when not NULL) points to the value stored for key either way. */
static inline bool cg_hstr_putn(cg_hstr *m, const char *key, size_t len, size_t value, size_t **slot) {
    cg_hstr_ent k = {key, len, 0};
    uint64_t h = cg_hstr_hash(key, len);
    size_t at = 0;
    uint32_t id = cg_hmap_find(&m->index, h, cg_hstr_eq, m, &k, &at);
    size_t *v = id == CG_HMAP_NONE ? cg_hstr_add_at(m, at, h, key, len, value) : &m->ent[id].value;
    if (slot) *slot = v;
    return id == CG_HMAP_NONE;
}
static inline bool cg_hstr_put(cg_hstr *m, const char *key, size_t value, size_t **slot) {
    return cg_hstr_putn(m, key, strlen(key), value, slot);
}

#endif
