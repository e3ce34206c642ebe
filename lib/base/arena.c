#include "base/arena.h"

#include "base/alloc.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_MAX_BLOCK ((size_t)8 << 20) /* the largest a regular block grows to */

struct cg_arena_block {
    cg_arena_block *next;
    size_t cap, used;
    _Alignas(16) unsigned char data[];
};

void cg_arena_init(cg_arena *a, size_t block_size) {
    a->head = NULL;
    a->block_size = block_size ? block_size : 64 * 1024;
    a->total = 0;
}

void *cg_arena_alloc(cg_arena *a, size_t n) {
    size_t need = (n + 15u) & ~(size_t)15u;
    if (need < n) cg_oom_exit(n);
    cg_arena_block *b = a->head;
    if (!b || b->cap - b->used < need) {
        size_t cap = a->block_size;
        if (need > cap / 4) {
            /* large allocation: own block, inserted behind the head so the head keeps filling */
            cg_arena_block *big = cg_xalloc(1, sizeof *big + need);
            big->cap = need;
            big->used = need;
            if (b) {
                big->next = b->next;
                b->next = big;
            } else {
                big->next = NULL;
                a->head = big;
            }
            a->total += need;
            return big->data;
        }
        /* a growing arena takes larger blocks (fewer allocations, and blocks
         * large enough to spill in the server: base/spill.h) */
        while (cap < ARENA_MAX_BLOCK && cap * 16 <= a->total) cap *= 2;
        b = cg_xalloc(1, sizeof *b + cap);
        b->cap = cap;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += need;
    a->total += need;
    return p;
}

void *cg_arena_zalloc(cg_arena *a, size_t n) {
    void *p = cg_arena_alloc(a, n);
    memset(p, 0, n);
    return p;
}

char *cg_arena_strndup(cg_arena *a, const char *s, size_t n) {
    char *p = cg_arena_alloc(a, n + 1);
    if (n) memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *cg_arena_strdup(cg_arena *a, const char *s) { return cg_arena_strndup(a, s, strlen(s)); }

char *cg_arena_printf(cg_arena *a, const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    char *p = cg_arena_alloc(a, (size_t)n + 1);
    vsnprintf(p, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return p;
}

char *cg_arena_strdup_opt(cg_arena *a, const char *s) { return s ? cg_arena_strdup(a, s) : NULL; }

void cg_arena_reset(cg_arena *a) {
    /* keep one ordinary block (the last in the chain is the oldest) */
    cg_arena_block *keep = NULL;
    cg_arena_block *b = a->head;
    while (b) {
        cg_arena_block *next = b->next;
        if (!keep && b->cap == a->block_size) {
            keep = b;
        } else {
            cg_free(b);
        }
        b = next;
    }
    if (keep) {
        keep->used = 0;
        keep->next = NULL;
    }
    a->head = keep;
    a->total = 0;
}

void cg_arena_free(cg_arena *a) {
    cg_arena_block *b = a->head;
    while (b) {
        cg_arena_block *next = b->next;
        cg_free(b);
        b = next;
    }
    a->head = NULL;
    a->total = 0;
}
