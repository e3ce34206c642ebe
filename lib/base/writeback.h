/* writeback.h — streaming a large file to disk while it is written.
 *
 * A writer that produces gigabytes and then fsyncs waits, at the fsync, for
 * the whole file to reach the disk, and on the way it is throttled once the
 * dirty pages pass the kernel's limits. cg_writeback starts the writeback of
 * each CG_WRITEBACK_STEP bytes as soon as they are written (Linux
 * sync_file_range, asynchronous), so the disk works while the writer does and
 * the final fsync finds little left. With drop_behind, ranges older than
 * CG_WRITEBACK_WINDOW are, once on disk, dropped from the page cache
 * (posix_fadvise DONTNEED): for outputs nobody reads back soon, so that a
 * multi-gigabyte output neither evicts the page cache nor pays for fresh
 * pages; the newest window stays cached.
 *
 * Everything here is advisory: errors (a pipe, a filesystem without
 * sync_file_range, another OS) are ignored and never change what is written.
 * It does not replace fsync: durability is still the caller's fsync.
 * Ownership: the struct is the caller's; fd is not closed. */
#ifndef CG_BASE_WRITEBACK_H
#define CG_BASE_WRITEBACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/json.h"

#define CG_WRITEBACK_STEP ((uint64_t)8 << 20)
#define CG_WRITEBACK_WINDOW ((uint64_t)64 << 20)

/* What to do with a file as it is written. */
typedef enum cg_writeback_mode {
    CG_WRITEBACK_OFF,         /* nothing (e.g. stdout, which may not start at offset 0) */
    CG_WRITEBACK_EARLY,       /* start writeback early, keep the pages cached */
    CG_WRITEBACK_DROP_BEHIND, /* also drop what is on disk, but the newest window */
} cg_writeback_mode;

typedef struct cg_writeback {
    int fd; /* -1: off */
    bool drop_behind;
    uint64_t written; /* bytes written from offset 0 */
    uint64_t started; /* writeback started for [0, started) */
    uint64_t dropped; /* dropped from the page cache: [0, dropped) */
} cg_writeback;

/* fd is written sequentially from offset 0 (a new or truncated file). */
void cg_writeback_init(cg_writeback *w, int fd, cg_writeback_mode mode);
/* Call after each write of n more bytes at the end of the file. */
void cg_writeback_wrote(cg_writeback *w, size_t n);

/* A cg_json_sink (ctx: cg_wb_sink_ctx): cg_fd_sink, then cg_writeback_wrote.
 * Set it up with cg_wb_sink_init; errors as cg_fd_sink (out.err_no). */
typedef struct cg_wb_sink_ctx {
    cg_fd_sink_ctx out;
    cg_writeback wb;
} cg_wb_sink_ctx;
void cg_wb_sink_init(cg_wb_sink_ctx *s, int fd, cg_writeback_mode mode);
int cg_wb_sink(void *ctx, const char *data, size_t len);

#endif
