/* spill.h — file-backed large blocks and a bound on the resident set.
 *
 * Why: the server rederives a bundle's evidence from its trace in memory; the
 * model of a 5M-record trace is ≈ 750 MB of arrays. With spilling on, every
 * large block allocated by the cg_try_* / cg_x* family of base/alloc.h (and
 * so every large arena block, hash table and growing array) lives in an
 * unlinked file of the spill directory,
 * mapped shared, instead of anonymous memory; a governor thread watches the
 * process's resident set and, above the budget, drops the resident pages of
 * every spilled block (madvise MADV_DONTNEED: their contents stay in the file
 * and the page cache, a later access faults them back). The process then
 * holds at most about the budget whatever the input; what does not fit is
 * page cache the kernel may write to disk and reclaim instead of running out
 * of memory. The files' disk space is reserved when a block is made
 * (fallocate), so a write to a spilled page never faults on a full disk; a
 * block that cannot be made (no space, no O_TMPFILE, no memory map) is
 * allocated from the heap as without spilling.
 *
 * Scope: the whole process, every thread, once cg_spill_enable returned (the
 * server calls it at start; the CLI never does, and then alloc.h's calls are
 * malloc's). A spilled block may be freed or grown from any thread.
 *
 * Ownership: a block is released with cg_free (alloc.h), which tells spilled
 * blocks from heap ones; free() on a spilled block is a bug (glibc aborts).
 * Every free in candle-graph goes through cg_free for that reason.
 *
 * Limits: the spill directory must not be on tmpfs or ramfs (its pages would
 * be memory all the same; cg_spill_enable refuses it). Thread-safe: one mutex
 * over the registry of live blocks (touched only for spilled blocks and for
 * frees of page-aligned pointers). */
#ifndef CG_BASE_SPILL_H
#define CG_BASE_SPILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* Turns spilling on for the process: blocks of min_bytes or more allocated
 * from then on go to files in dir; the governor trims when the resident set
 * exceeds budget_bytes (checked every 5 ms). Once per process; CG_EINVAL when
 * dir is on tmpfs/ramfs or not a directory, CG_EIO when it cannot hold
 * unnamed files (O_TMPFILE) or the governor cannot start. */
int cg_spill_enable(const char *dir, size_t min_bytes, size_t budget_bytes, cg_error *err);

typedef struct cg_spill_stats {
    uint64_t live_blocks;   /* spilled blocks now */
    uint64_t live_bytes;    /* their mapped size */
    uint64_t blocks_total;  /* spilled blocks made since start */
    uint64_t trims_total;   /* times the governor dropped resident pages */
    uint64_t fallbacks;     /* blocks that could not spill and came from the heap */
} cg_spill_stats;
void cg_spill_stats_get(cg_spill_stats *out);

/* Drops the resident pages of every spilled block now (the governor's step). */
void cg_spill_trim(void);

/* ---- for base/alloc.c ---- */
/* True when an allocation of `bytes` should spill. */
bool cg_spill_wanted(size_t bytes);
/* A zeroed spilled block of at least `bytes`, or NULL (then use the heap). */
void *cg_spill_alloc(size_t bytes);
/* The mapped size of p when it is a spilled block, else 0. */
size_t cg_spill_size(const void *p);
/* Unmaps the spilled block p; false (nothing done) when p is not one. */
bool cg_spill_release(void *p);

#endif
