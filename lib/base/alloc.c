/* alloc.c — overflow-checked allocation, geometric growth and the OOM
 * handler (see alloc.h for the policy). */
#include "base/alloc.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fault.h"
#include "base/spill.h"

#include <malloc.h> /* malloc_usable_size (glibc, musl) and mallopt */

static _Atomic(cg_oom_handler) oom_handler;

cg_oom_handler cg_set_oom_handler(cg_oom_handler h) { return atomic_exchange(&oom_handler, h); }

_Noreturn void cg_oom_exit(size_t bytes) {
    static const char msg[] = "candle-graph: out of memory\n";
    (void)bytes;
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
    _exit(1);
}

/* n × size in *out (at least 1); false on overflow. */
static bool total(size_t n, size_t size, size_t *out) {
    if (__builtin_mul_overflow(n, size, out)) return false;
    if (*out == 0) *out = 1;
    return true;
}

/* An injected `alloc` fault (tests only; one relaxed load when unarmed). */
static bool injected(void) { return cg_fault_hit(CG_FAULT_ALLOC) != 0; }

/* malloc, calloc and realloc, with large blocks spilled to files once the
 * process turned spilling on (base/spill.h); no fault injection here. */
static void *raw_alloc(size_t b, bool zero) {
    if (cg_spill_wanted(b)) {
        void *p = cg_spill_alloc(b); /* file pages start zeroed */
        if (p) return p;
    }
    return zero ? calloc(1, b) : malloc(b);
}

/* A spilled block grows into another one (the heap when that fails); a heap
 * block that grows to a spilling size while spilling is on moves to a file. */
static void *raw_realloc(void *p, size_t b) {
    size_t old = cg_spill_size(p);
    if (old) {
        if (b <= old) return p;
        void *q = cg_spill_alloc(b);
        if (!q && !(q = malloc(b))) return NULL;
        memcpy(q, p, old);
        cg_spill_release(p);
        return q;
    }
    if (p && cg_spill_wanted(b)) {
        size_t have = malloc_usable_size(p);
        void *q = b > have ? cg_spill_alloc(b) : NULL;
        if (q) {
            memcpy(q, p, have);
            free(p);
            return q;
        }
    }
    return p ? realloc(p, b) : raw_alloc(b, false);
}

void cg_free(void *p) {
    if (!cg_spill_release(p)) free(p);
}

void *cg_try_alloc(size_t n, size_t size) {
    size_t b;
    if (!total(n, size, &b) || injected()) return NULL;
    return raw_alloc(b, false);
}

void *cg_try_zalloc(size_t n, size_t size) {
    size_t b;
    if (!total(n, size, &b) || injected()) return NULL;
    return raw_alloc(b, true);
}

void *cg_try_realloc(void *p, size_t n, size_t size) {
    size_t b;
    if (!total(n, size, &b) || injected()) return NULL;
    return raw_realloc(p, b);
}

/* The capacity cg_*grow moves to: max(need, 2 × cap, 16); 0 on overflow. */
static size_t grown(size_t cap, size_t need) {
    size_t c = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
    if (c < 16) c = 16;
    return c < need ? need : c;
}

void *cg_try_grow(void *p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap && p) return p;
    size_t c = grown(*cap, need);
    void *q = cg_try_realloc(p, c, size);
    if (q) *cap = c;
    return q;
}

char *cg_try_strndup(const char *s, size_t n) {
    if (n == SIZE_MAX) return NULL;
    char *d = cg_try_alloc(n + 1, 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* The failure path of the cg_x* family: the handler may release memory and ask
 * for one retry; an overflowing size is never retried. */
static void *oom(void *p, size_t n, size_t size, bool zero) {
    size_t b;
    cg_oom_handler h = atomic_load(&oom_handler);
    if (!total(n, size, &b) || !h || !h(b)) cg_oom_exit(b);
    void *q = zero ? raw_alloc(b, true) : raw_realloc(p, b);
    if (!q) cg_oom_exit(b);
    return q;
}

void *cg_xalloc(size_t n, size_t size) {
    void *p = cg_try_alloc(n, size);
    return p ? p : oom(NULL, n, size, false);
}

void *cg_xzalloc(size_t n, size_t size) {
    void *p = cg_try_zalloc(n, size);
    return p ? p : oom(NULL, n, size, true);
}

void *cg_xrealloc(void *p, size_t n, size_t size) {
    void *q = cg_try_realloc(p, n, size);
    return q ? q : oom(p, n, size, false);
}

void *cg_xgrow(void *p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap && p) return p;
    size_t c = grown(*cap, need);
    void *q = cg_xrealloc(p, c, size);
    *cap = c;
    return q;
}

char *cg_xstrdup(const char *s) {
    size_t n = strlen(s);
    char *d = cg_xalloc(n + 1, 1);
    memcpy(d, s, n + 1);
    return d;
}

void cg_malloc_fixed_mmap_threshold(size_t bytes) {
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, bytes > (size_t)INT32_MAX ? INT32_MAX : (int)bytes);
#else
    (void)bytes;
#endif
}
