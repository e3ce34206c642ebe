/* blob_trace.c — parses a stored trace.jsonl straight from the blob store,
 * streamed: the plain bytes are never held in memory whole. A plain fs blob is
 * read by the library's streaming reader from its path; any other form is
 * decompressed frame by frame by a feeder thread into a pipe that the reader
 * reads as /proc/self/fd/N. Without /proc the bytes are read into memory
 * (srv_blob_read) as before. Messages name the file "trace.jsonl", as
 * cg_trace_read_mem(…, "trace.jsonl", …) does. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "srv.h"
#include "base/alloc.h"
#include "trace/trace.h"

typedef struct feed {
    srv_blob_cursor *c;
    int wfd;
    uint64_t size;
    int rc; /* -1: the blob could not be read to its end */
    cg_error err;
} feed;

static void *feed_main(void *p) {
    feed *f = p;
    char *buf = malloc(1u << 16);
    uint64_t at = 0;
    f->rc = buf ? 0 : cg_err_set(&f->err, CG_ENOMEM, "out of memory");
    while (f->rc == 0 && at < f->size) {
        ssize_t n = srv_blob_pread(f->c, buf, 1u << 16, at, &f->err);
        if (n <= 0) {
            f->rc = n < 0 ? -1 : cg_err_set(&f->err, CG_EIO, "stored blob ends early");
            break;
        }
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(f->wfd, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) goto out; /* EPIPE: the reader stopped (its own error) */
            off += w;
        }
        at += (uint64_t)n;
    }
out:
    cg_free(buf);
    close(f->wfd);
    return NULL;
}

/* Rewrites path to "trace.jsonl" in err's message. */
static void name_trace(cg_error *err, const char *path) {
    if (!err) return;
    char *hit = strstr(err->msg, path);
    if (!hit) return;
    char tail[sizeof err->msg];
    snprintf(tail, sizeof tail, "%s", hit + strlen(path));
    snprintf(hit, sizeof err->msg - (size_t)(hit - err->msg), "trace.jsonl%s", tail);
}

static cg_trace *parse_path(const char *path, const cg_trace_limits *lim, cg_error *err) {
    cg_trace *t = cg_trace_read_file(path, lim, err);
    if (!t) name_trace(err, path);
    return t;
}

/* Without /proc: the plain bytes in memory, as before streaming. */
static cg_trace *from_memory(const srv_blob_view *v, const cg_trace_limits *lim, bool *store_error, cg_error *err) {
    srv_blob_cursor *c = srv_blob_cursor_new(v);
    char *data = c ? malloc((size_t)v->plain_size + 1) : NULL;
    uint64_t at = 0;
    while (data && at < v->plain_size) {
        ssize_t n = srv_blob_pread(c, data + at, (size_t)(v->plain_size - at), at, err);
        if (n <= 0) break;
        at += (uint64_t)n;
    }
    srv_blob_cursor_free(c);
    if (!data || at != v->plain_size) {
        cg_free(data);
        *store_error = true;
        cg_err_set(err, CG_EIO, "the stored trace is missing or damaged");
        return NULL;
    }
    cg_trace *t = cg_trace_read_mem(data, (size_t)at, "trace.jsonl", lim, err);
    cg_free(data);
    return t;
}

static cg_trace *through_pipe(const srv_blob_view *v, const cg_trace_limits *lim, bool *store_error,
                              cg_error *err) {
    int p[2];
    feed f = {.c = srv_blob_cursor_new(v), .size = v->plain_size};
    if (!f.c || pipe2(p, O_CLOEXEC) != 0) {
        srv_blob_cursor_free(f.c);
        *store_error = true;
        cg_err_set(err, CG_EIO, "cannot stream the stored trace: %s", f.c ? strerror(errno) : "out of memory");
        return NULL;
    }
    f.wfd = p[1];
    pthread_t th;
    if (pthread_create(&th, NULL, feed_main, &f) != 0) {
        close(p[0]);
        close(p[1]);
        srv_blob_cursor_free(f.c);
        *store_error = true;
        cg_err_set(err, CG_EIO, "cannot start the trace feeder");
        return NULL;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", p[0]);
    cg_trace *t = parse_path(path, lim, err);
    close(p[0]); /* a feeder still writing gets EPIPE */
    pthread_join(th, NULL);
    srv_blob_cursor_free(f.c);
    if (f.rc < 0) { /* a damaged blob: whatever was parsed is not the stored trace */
        cg_trace_free(t);
        *store_error = true;
        if (err) *err = f.err;
        return NULL;
    }
    return t;
}

cg_trace *srv_blob_trace_fd(srv_blobstore *b, int fd, const char *hex, uint64_t max, const cg_trace_limits *lim,
                            bool *store_error, cg_error *err) {
    *store_error = false;
    srv_blob_view v;
    cg_trace *t = NULL;
    if (srv_blob_view_open(fd, &v, err) < 0) {
        *store_error = true;
    } else if (v.plain_size > max) {
        *store_error = true;
        cg_err_set(err, CG_ELIMIT, "blob %s is larger than %llu bytes", hex, (unsigned long long)max);
    } else if (access("/proc/self/fd", X_OK) != 0) {
        t = from_memory(&v, lim, store_error, err);
    } else if (v.form == SRV_BLOBF_PLAIN && b->kind == SRV_BLOB_FS) {
        char path[PATH_MAX + 128];
        srv_blob_path(b, hex, path, sizeof path);
        t = parse_path(path, lim, err);
    } else {
        t = through_pipe(&v, lim, store_error, err);
    }
    close(fd);
    return t;
}
