/* alloc.h — the one allocation helper of candle-graph, and its OOM policy.
 *
 * Every size is a count × element size, checked for overflow (an overflowing
 * request fails like an allocation failure). Zero-sized requests allocate one
 * byte, so a NULL result always means failure.
 *
 * Out-of-memory policy (the only one):
 *   - Fallible functions — those that take a cg_error — allocate with the
 *     cg_try_* family below, report failure as CG_ENOMEM "out of memory" and
 *     never abort. The server answers such a request with a retryable 503
 *     from its error table (server/errors.c) and keeps serving; a CLI command
 *     prints the message and exits 1. The server also installs an OOM handler
 *     (server/serve.c) that gives back an emergency reserve, logs one line and
 *     asks for the retry, so an exhausted container does not end it either.
 *   - Containers whose API cannot fail (cg_arena, cg_buf, cg_hmap, cg_hstr, working
 *     arrays of the analyses) use the cg_x* family: on failure it calls
 *     cg_oom(), which asks the process's OOM handler (cg_set_oom_handler) and
 *     retries the allocation once when the handler returns true (it released
 *     memory). When the handler returns false, or the retry fails too, the
 *     process writes "candle-graph: out of memory" to stderr and exits with
 *     status 1 (_exit: no atexit handler runs on an exhausted heap). Inputs are
 *     bounded by limits before they reach these containers, so this is the
 *     last resort, not a control path.
 *   - The CUPTI collector (agent/cupti) lives inside someone else's process and
 *     must never end it: its own allocations use cg_try_* and disable it on
 *     failure; it installs an OOM handler that releases its emergency reserve,
 *     disables the collector, records the failure in its status file and
 *     returns true, so the allocation inside the capture library is retried
 *     and the host program keeps running.
 *
 * Fault injection: every call of both families counts as CG_FAULT op `alloc`
 * (base/fault.h; ERR ENOMEM), so tests can fail the N-th allocation.
 * Thread-safe (the handler is one atomic pointer). */
#ifndef CG_BASE_ALLOC_H
#define CG_BASE_ALLOC_H

#include <stdbool.h>
#include <stddef.h>

/* ---- fallible: NULL on overflow or failure (p stays valid for realloc) ---- */
void *cg_try_alloc(size_t n, size_t size);           /* uninitialized */
void *cg_try_zalloc(size_t n, size_t size);          /* zeroed */
void *cg_try_realloc(void *p, size_t n, size_t size);
/* Makes room for at least `need` elements of `size` bytes in the array p of
 * capacity *cap (growing geometrically: max(need, 2 × *cap, 16)). Returns the
 * (possibly moved) array and updates *cap; NULL on failure, p and *cap
 * unchanged. */
void *cg_try_grow(void *p, size_t *cap, size_t need, size_t size);
char *cg_try_strndup(const char *s, size_t n);      /* NUL-terminated copy */

/* Releases a block of either family, spilled (base/spill.h) or not, and any
 * pointer from malloc, strdup and the like; NULL is a no-op. The one free of
 * candle-graph: a spilled block handed to the C library's free is a bug. */
void cg_free(void *p);

/* ---- infallible: never NULL (cg_oom on failure, see above) ---- */
void *cg_xalloc(size_t n, size_t size);
void *cg_xzalloc(size_t n, size_t size);
void *cg_xrealloc(void *p, size_t n, size_t size);
void *cg_xgrow(void *p, size_t *cap, size_t need, size_t size);
char *cg_xstrdup(const char *s);

/* The process's OOM handler: called with the size of the request that failed;
 * returns true when it released memory and the allocation should be retried
 * once. NULL (the default) means exit at once. Returns the previous handler. */
typedef bool (*cg_oom_handler)(size_t bytes);
cg_oom_handler cg_set_oom_handler(cg_oom_handler h);

/* The last resort: message on stderr, _exit(1). */
_Noreturn void cg_oom_exit(size_t bytes);

/* Fixes glibc's mmap threshold at `bytes`, turning off its sliding threshold:
 * glibc raises the threshold to the size of each large block freed, so later
 * growing arrays land on the brk heap, where a realloc leaves a resident hole
 * and freed memory is not handed back; blocks of `bytes` or more then stay
 * mmapped (grown in place by mremap, unmapped when freed). For a program's own
 * main or command only, never from code that runs inside another process (the
 * CUPTI collector). Does nothing on other C libraries. */
void cg_malloc_fixed_mmap_threshold(size_t bytes);

#endif
