/* fault.h — fault injection for I/O and database calls (SQLite-style anomaly
 * loops), compiled into every build and inert unless armed.
 *
 * Arming: the environment variable CG_FAULT, read once when the process starts
 * (a constructor), holds one or more comma-separated rules
 *     OP:N:ERR[:persist]
 * OP is write, fsync, rename, pq (a libpq connect/exec call, see
 * server/fault.h) or alloc (a cg_try_* / cg_x* allocation, see base/alloc.h);
 * N ≥ 1 is the 1-based index of the call of that OP that fails;
 * ERR is EIO, ENOSPC, EDQUOT, EROFS, ENOMEM, ECONNRESET (alias `lost`) or
 * ECONNABORTED (alias `lost-after`: for pq, the call runs and its reply is
 * lost); with
 * `persist` every call from the N-th on fails (a disk that stays full),
 * otherwise only the N-th (transient). An invalid CG_FAULT is reported on
 * stderr and leaves injection off.
 *
 * Only calls made on threads that called cg_fault_thread_enable() count and
 * fail — the server enables its request threads — so start-up, migrations,
 * the offline commands (fsck, admin) and background threads (janitor, webhook
 * delivery, index builds) are never faulted and N counts the calls made while
 * answering requests, deterministically. Each injected failure is reported on
 * stderr as one JSON line {"msg":"fault injected","op":…,"call":…,"errno":…}.
 *
 * Thread-safe (atomic counters). No allocation after start-up. */
#ifndef CG_BASE_FAULT_H
#define CG_BASE_FAULT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef enum cg_fault_op {
    CG_FAULT_WRITE,
    CG_FAULT_FSYNC,
    CG_FAULT_RENAME,
    CG_FAULT_PQ,
    CG_FAULT_ALLOC,
    CG_FAULT_NOPS
} cg_fault_op;

/* Counts one call of op; returns 0 when it should proceed, otherwise the errno
 * value it must fail with. Always 0 (and no counting) when not armed. */
int cg_fault_hit(cg_fault_op op);

/* Lets the calls of the calling thread count (and fail) from now on; a no-op
 * when not armed. */
void cg_fault_thread_enable(void);

/* true when CG_FAULT armed at least one rule. */
bool cg_fault_armed(void);

/* Calls of op counted so far (0 when not armed). */
uint64_t cg_fault_calls(cg_fault_op op);

/* Drop-in replacements for the raw calls: on an injected fault they set errno
 * and return -1 without performing the call. */
ssize_t cg_fault_write(int fd, const void *buf, size_t n);
int cg_fault_fsync(int fd);
int cg_fault_rename(const char *from, const char *to);
/* renameat2(2) (Linux), counted as a `rename`. */
int cg_fault_renameat2(int olddirfd, const char *from, int newdirfd, const char *to, unsigned flags);

#endif
