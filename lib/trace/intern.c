/* intern.c — the trace reader's string and shape store (intern.h). */
#include "trace/intern.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

#define POOL_CHUNK (64u << 10)
#define FRONT 8192u
#define MAX_INTERN 96u  /* longest interned string; fits the tag's 7 length bits */
#define MAX_CHUNKS 65535u /* chunk numbers 0..65534: ids stay below CG_HMAP_NONE */
#define MAX_SHAPE_DIMS 16u
/* The string table's largest slot array (8 B a slot, load <= 1/2): 8 MiB,
 * 524,288 strings, so that its probes stay in the last-level cache */
#define MAX_TABLE_SLOTS ((size_t)1 << 20)

void tstore_init(tstore *st, cg_arena *arena, size_t expect_strings) {
    memset(st, 0, sizeof *st);
    st->arena = arena;
    size_t expect = expect_strings < MAX_TABLE_SLOTS / 2 ? expect_strings : MAX_TABLE_SLOTS / 2;
    cg_hmap_init(&st->strings, expect > 1024 ? expect : 1024);
    cg_hmap_init(&st->shapes, 64);
    st->front = cg_xzalloc(FRONT, sizeof *st->front);
}

void tstore_done(tstore *st) {
    cg_hmap_free(&st->strings);
    cg_hmap_free(&st->shapes);
    cg_free(st->front);
    cg_free(st->chunks);
    cg_free(st->shape);
    memset(st, 0, sizeof *st);
}

/* A NUL-terminated copy of s in the pool (or, when long, in the arena). */
static char *pool_copy(tstore *st, const char *s, size_t len) {
    if (len >= POOL_CHUNK / 16) return cg_arena_strndup(st->arena, s, len);
    if (st->pool_left < len + 1) {
        st->pool = cg_arena_alloc(st->arena, POOL_CHUNK);
        st->pool_left = POOL_CHUNK;
        if (st->n_chunks < MAX_CHUNKS) {
            if (st->n_chunks == st->cap_chunks) {
                st->cap_chunks = st->cap_chunks ? 2 * st->cap_chunks : 64;
                st->chunks = cg_xrealloc(st->chunks, st->cap_chunks, sizeof *st->chunks);
            }
            st->chunks[st->n_chunks] = st->pool;
        }
        st->n_chunks++; /* past MAX_CHUNKS: counted, not addressable */
    }
    char *c = st->pool;
    memcpy(c, s, len);
    c[len] = '\0';
    st->pool += len + 1;
    st->pool_left -= len + 1;
    return c;
}

/* The 64-bit hash of a string whose top 32 bits (the table's tag) end in its
 * length: equal tags mean equal lengths. */
static inline uint64_t str_hash(const char *s, size_t len) {
    uint64_t h = cg_hmap_mix(cg_hmap_hash_bytes(0x9e3779b97f4a7c15ull, s, len), len);
    return (h & ~((uint64_t)0x7f << 32)) | ((uint64_t)len << 32);
}

static inline const char *id_str(const tstore *st, uint32_t id) { return st->chunks[id >> 16] + (id & 0xffffu); }

typedef struct skey {
    const char *s;
    size_t len;
} skey;

static bool str_eq(const void *ctx, uint32_t id, const void *key) {
    const skey *k = key;
    return memcmp(id_str(ctx, id), k->s, k->len) == 0; /* the tag matched: same length */
}

/* Whether one more string fits the table without growing it past MAX_TABLE_SLOTS. */
static inline bool table_has_room(const cg_hmap *m) {
    return m->mask + 1 < MAX_TABLE_SLOTS || (m->count + 1) * 2 <= m->mask + 1;
}

static inline tstore_slot *front_slot(tstore *st, uint64_t h) { return &st->front[h & (FRONT - 1)]; }

static inline bool front_hit(const tstore_slot *f, uint32_t tag, const char *s, size_t len) {
    return f->s && f->tag == tag && memcmp(f->s, s, len) == 0;
}

const char *tstore_intern(tstore *st, const char *s, size_t len) {
    if (len > MAX_INTERN) return pool_copy(st, s, len);
    uint64_t h = str_hash(s, len);
    uint32_t tag = (uint32_t)(h >> 32);
    tstore_slot *f = front_slot(st, h);
    if (front_hit(f, tag, s, len)) return f->s;
    skey k = {s, len};
    size_t at = 0;
    uint32_t id = cg_hmap_find(&st->strings, h, str_eq, st, &k, &at);
    if (id != CG_HMAP_NONE) {
        *f = (tstore_slot){id_str(st, id), tag};
        return f->s;
    }
    char *c = pool_copy(st, s, len);
    size_t chunk = st->n_chunks - 1;
    if (chunk < MAX_CHUNKS && table_has_room(&st->strings))
        cg_hmap_put_at(&st->strings, at, h, (uint32_t)(chunk << 16 | (size_t)(c - st->chunks[chunk])));
    *f = (tstore_slot){c, tag};
    return c;
}

const char *tstore_copy(tstore *st, const char *s, size_t len) {
    if (len > MAX_INTERN) return pool_copy(st, s, len);
    uint64_t h = str_hash(s, len);
    uint32_t tag = (uint32_t)(h >> 32);
    tstore_slot *f = front_slot(st, h);
    if (front_hit(f, tag, s, len)) return f->s;
    char *c = pool_copy(st, s, len);
    *f = (tstore_slot){c, tag};
    return c;
}

typedef struct dkey {
    const uint64_t *dims;
    size_t n;
} dkey;

static bool dims_eq(const void *ctx, uint32_t id, const void *key) {
    const tstore_shape *sh = &((const tstore *)ctx)->shape[id];
    const dkey *k = key;
    return sh->n == k->n && memcmp(sh->dims, k->dims, k->n * sizeof *k->dims) == 0;
}

static uint64_t *dims_copy(tstore *st, const uint64_t *dims, size_t n) {
    uint64_t *d = cg_arena_alloc(st->arena, n * sizeof *d);
    memcpy(d, dims, n * sizeof *d);
    return d;
}

uint64_t *tstore_dims(tstore *st, const uint64_t *dims, size_t n) {
    if (n == 0) return NULL;
    if (n > MAX_SHAPE_DIMS || st->n_shapes >= CG_HMAP_NONE - 1) return dims_copy(st, dims, n);
    uint64_t h = cg_hmap_mix(cg_hmap_hash_bytes(0, dims, n * sizeof *dims), n);
    dkey k = {dims, n};
    size_t at = 0;
    uint32_t id = cg_hmap_find(&st->shapes, h, dims_eq, st, &k, &at);
    if (id != CG_HMAP_NONE) return st->shape[id].dims;
    if (st->n_shapes == st->cap_shapes) {
        st->cap_shapes = st->cap_shapes ? 2 * st->cap_shapes : 64;
        st->shape = cg_xrealloc(st->shape, st->cap_shapes, sizeof *st->shape);
    }
    uint64_t *d = dims_copy(st, dims, n);
    st->shape[st->n_shapes] = (tstore_shape){d, n};
    cg_hmap_put_at(&st->shapes, at, h, (uint32_t)st->n_shapes++);
    return d;
}
