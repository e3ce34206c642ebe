/* arena.h — bump allocator. Everything allocated from an arena is freed at once
 * by cg_arena_free (or cg_arena_reset, which keeps the first block for reuse).
 * Allocation failure follows the cg_x* policy of base/alloc.h (out of memory
 * is not recoverable here; inputs are bounded by limits before they reach the
 * arena). A regular block is block_size bytes until the arena holds 16 of
 * them; then each new block doubles while 16 × its size fits in the bytes
 * handed out, up to 8 MiB (fewer allocations, and blocks large enough to
 * spill in the server: base/spill.h). Not thread-safe. */
#ifndef CG_BASE_ARENA_H
#define CG_BASE_ARENA_H

#include <stddef.h>

typedef struct cg_arena_block cg_arena_block;
typedef struct cg_arena {
    cg_arena_block *head;
    size_t block_size;   /* default block payload size */
    size_t total;        /* bytes handed out, for accounting */
} cg_arena;

void cg_arena_init(cg_arena *a, size_t block_size); /* 0 = 64 KiB */
void *cg_arena_alloc(cg_arena *a, size_t n);         /* 16-byte aligned, uninitialized */
void *cg_arena_zalloc(cg_arena *a, size_t n);        /* zeroed */
char *cg_arena_strndup(cg_arena *a, const char *s, size_t n); /* NUL-terminated copy */
char *cg_arena_strdup(cg_arena *a, const char *s);
char *cg_arena_strdup_opt(cg_arena *a, const char *s); /* NULL stays NULL */
char *cg_arena_printf(cg_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cg_arena_reset(cg_arena *a);
void cg_arena_free(cg_arena *a);

#endif
