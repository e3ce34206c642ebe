/* hmap.c — growth of the generic hash table and cg_hstr's entries (see hmap.h). */
#include "base/hmap.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>

#include "base/alloc.h"

uint64_t cg_hstr_seed;

__attribute__((constructor)) static void seed_hstr(void) {
    uint64_t s = 0;
    if (getrandom(&s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s) { /* no entropy yet: the clock */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        s = ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)&s;
    }
    cg_hstr_seed = s;
}

#define HUGE_PAGE ((size_t)2 << 20)

/* A zeroed slot array of cap = 2^bits slots; a large one 2 MiB-aligned inside
 * a block one huge page longer (calloc maps it fresh: its pages stay
 * untouched until probed), advised to use huge pages. */
static void set_capacity(cg_hmap *m, unsigned bits) {
    size_t bytes = ((size_t)1 << bits) * sizeof *m->slot;
    if (bytes < HUGE_PAGE) {
        m->block = m->slot = cg_xzalloc((size_t)1 << bits, sizeof *m->slot);
    } else {
        m->block = cg_xzalloc(1, bytes + HUGE_PAGE);
        uintptr_t at = ((uintptr_t)m->block + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
        m->slot = (uint64_t *)at;
        (void)madvise(m->slot, bytes, MADV_HUGEPAGE); /* a hint: without it the table works the same */
    }
    m->mask = ((size_t)1 << bits) - 1;
    m->shift = 32 - bits;
}

void cg_hmap_init(cg_hmap *m, size_t expect) {
    unsigned bits = 4;
    while (bits < 32 && ((size_t)1 << bits) / 2 < expect) bits++;
    set_capacity(m, bits);
    m->count = 0;
}

void cg_hmap_free(cg_hmap *m) {
    cg_free(m->block);
    m->slot = m->block = NULL;
    m->mask = m->count = 0;
}

static void grow(cg_hmap *m) {
    uint64_t *old = m->slot;
    void *old_block = m->block;
    size_t n = m->mask + 1;
    unsigned bits = 32 - m->shift + 1;
    if (bits > 32) return; /* 2^32 slots: the id limit is reached first */
    set_capacity(m, bits);
    for (size_t i = 0; i < n; i++) {
        if (!old[i]) continue;
        size_t j = cg_hmap_home(m, (uint32_t)(old[i] >> 32));
        while (m->slot[j]) j = (j + 1) & m->mask;
        m->slot[j] = old[i];
    }
    cg_free(old_block);
}

void cg_hmap_put_at(cg_hmap *m, size_t at, uint64_t h, uint32_t id) {
    m->slot[at] = (h >> 32 << 32) | ((uint64_t)id + 1);
    if (++m->count * 2 > m->mask + 1) grow(m);
}

void cg_hstr_init(cg_hstr *m, size_t expect) {
    cg_hmap_init(&m->index, expect);
    m->ent = NULL;
    m->n = m->cap = 0;
}

void cg_hstr_free(cg_hstr *m) {
    cg_hmap_free(&m->index);
    cg_free(m->ent);
    m->ent = NULL;
    m->n = m->cap = 0;
}

size_t *cg_hstr_add_at(cg_hstr *m, size_t at, uint64_t h, const char *key, size_t len, size_t value) {
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 16;
        m->ent = cg_xrealloc(m->ent, m->cap, sizeof *m->ent);
    }
    m->ent[m->n] = (cg_hstr_ent){key, len, value};
    cg_hmap_put_at(&m->index, at, h, (uint32_t)m->n);
    return &m->ent[m->n++].value;
}
