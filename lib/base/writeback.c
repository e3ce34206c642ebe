/* writeback.c — early writeback (and optional drop-behind) of a file being written. */
#define _GNU_SOURCE /* sync_file_range */
#include "base/writeback.h"

#include <fcntl.h>

void cg_writeback_init(cg_writeback *w, int fd, cg_writeback_mode mode) {
    w->fd = mode == CG_WRITEBACK_OFF ? -1 : fd;
    w->drop_behind = mode == CG_WRITEBACK_DROP_BEHIND;
    w->written = w->started = w->dropped = 0;
}

void cg_wb_sink_init(cg_wb_sink_ctx *s, int fd, cg_writeback_mode mode) {
    s->out.fd = fd;
    s->out.err_no = 0;
    cg_writeback_init(&s->wb, fd, mode);
}

int cg_wb_sink(void *ctx, const char *data, size_t len) {
    cg_wb_sink_ctx *s = ctx;
    if (cg_fd_sink(&s->out, data, len) != 0) return -1;
    cg_writeback_wrote(&s->wb, len);
    return 0;
}

#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
/* [off, off + n): start its writeback (wait: also wait until it is on disk). */
static int range_sync(int fd, uint64_t off, uint64_t n, bool wait) {
    unsigned flags = SYNC_FILE_RANGE_WRITE;
    if (wait) flags |= SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WAIT_AFTER;
    return sync_file_range(fd, (off_t)off, (off_t)n, flags);
}

void cg_writeback_wrote(cg_writeback *w, size_t n) {
    if (w->fd < 0) return;
    w->written += n;
    while (w->written - w->started >= CG_WRITEBACK_STEP) {
        if (range_sync(w->fd, w->started, CG_WRITEBACK_STEP, false) != 0) {
            w->fd = -1; /* not a file that supports it (pipe, tty): stop trying */
            return;
        }
        w->started += CG_WRITEBACK_STEP;
    }
    while (w->drop_behind && w->started - w->dropped >= CG_WRITEBACK_WINDOW + CG_WRITEBACK_STEP) {
        /* a range whose writeback started a window ago: clean pages can be dropped */
        if (range_sync(w->fd, w->dropped, CG_WRITEBACK_STEP, true) == 0)
            posix_fadvise(w->fd, (off_t)w->dropped, (off_t)CG_WRITEBACK_STEP, POSIX_FADV_DONTNEED);
        w->dropped += CG_WRITEBACK_STEP;
    }
}
#else
void cg_writeback_wrote(cg_writeback *w, size_t n) {
    (void)n;
    w->fd = -1;
}
#endif
