#include "base/fs.h"

#include "base/alloc.h"
#include "base/arena.h"
#include "base/fault.h"
#include "base/sha256.h"
#include "base/writeback.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* An OS failure of read_file: "<what> PATH: <strerror>" (ours), or bare, the
 * io::Error alone as Rust's fs::read returns it. */
static void read_fail(cg_error *err, bool bare, const char *what, const char *path, int e) {
    char text[256];
    if (bare) cg_err_set(err, cg_errcode_of_errno(e), "%s", cg_os_error_text(text, sizeof text, e));
    else cg_err_set(err, CG_EIO, "%s %s: %s", what, path, strerror(e));
}

static char *read_fd(int fd, const char *path, size_t max_bytes, size_t *len, cg_error *err, bool bare);

static char *read_file(const char *path, size_t max_bytes, size_t *len, cg_error *err, bool bare) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        read_fail(err, bare, "open", path, errno);
        return NULL;
    }
    char *data = read_fd(fd, path, max_bytes, len, err, bare);
    close(fd);
    return data;
}

static char *read_fd(int fd, const char *path, size_t max_bytes, size_t *len, cg_error *err, bool bare) {
    struct stat st;
    if (fstat(fd, &st) != 0) {
        read_fail(err, bare, "stat", path, errno);
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        read_fail(err, bare, "read", path, EISDIR);
        return NULL;
    }
    size_t cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 4096;
    if (max_bytes && (uint64_t)st.st_size > max_bytes) {
        cg_err_set(err, CG_ELIMIT, "%s is larger than the limit of %zu bytes", path, max_bytes);
        return NULL;
    }
    char *buf = cg_try_alloc(cap, 1); /* large files spill in the server (base/spill.h) */
    if (!buf) {
        cg_err_set(err, CG_ENOMEM, "out of memory reading %s", path);
        return NULL;
    }
    size_t n = 0;
    for (;;) {
        if (n + 1 >= cap) {
            size_t ncap = cap * 2;
            char *nb = cg_try_realloc(buf, ncap, 1);
            if (!nb) {
                cg_free(buf);
                cg_err_set(err, CG_ENOMEM, "out of memory reading %s", path);
                return NULL;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0) {
            if (errno == EINTR) continue;
            read_fail(err, bare, "read", path, errno);
            cg_free(buf);
            return NULL;
        }
        if (r == 0) break;
        n += (size_t)r;
        if (max_bytes && n > max_bytes) {
            cg_err_set(err, CG_ELIMIT, "%s is larger than the limit of %zu bytes", path, max_bytes);
            cg_free(buf);
            return NULL;
        }
    }
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

char *cg_read_file(const char *path, size_t max_bytes, size_t *len, cg_error *err) {
    return read_file(path, max_bytes, len, err, false);
}

char *cg_read_fd(int fd, const char *path, size_t max_bytes, size_t *len, cg_error *err) {
    return read_fd(fd, path, max_bytes, len, err, false);
}

char *cg_read_fd_io(int fd, const char *path, size_t max_bytes, size_t *len, cg_error *err) {
    return read_fd(fd, path, max_bytes, len, err, true);
}

char *cg_read_file_io(const char *path, size_t max_bytes, size_t *len, cg_error *err) {
    return read_file(path, max_bytes, len, err, true);
}

static int write_all(int fd, const void *data, size_t len) {
    const char *p = data;
    while (len) {
        ssize_t w = cg_fault_write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int cg_write_file(const char *path, const void *data, size_t len, bool do_fsync, cg_error *err) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return cg_err_set(err, CG_EIO, "create %s: %s", path, strerror(errno));
    if (write_all(fd, data, len) != 0 || (do_fsync && cg_fault_fsync(fd) != 0)) {
        int e = errno;
        close(fd);
        return cg_err_set(err, cg_errcode_of_errno(e), "write %s: %s", path, strerror(e));
    }
    if (close(fd) != 0) return cg_err_set(err, cg_errcode_of_errno(errno), "close %s: %s", path, strerror(errno));
    return 0;
}

int cg_fsync_path(const char *path, cg_error *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return cg_err_set(err, CG_EIO, "open %s for sync: %s", path, strerror(errno));
    if (cg_fault_fsync(fd) != 0 && errno != EINVAL) {
        int e = errno;
        close(fd);
        return cg_err_set(err, cg_errcode_of_errno(e), "sync %s: %s", path, strerror(e));
    }
    close(fd);
    return 0;
}

int cg_write_file_atomic(const char *path, const void *data, size_t len, cg_error *err) {
    size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (!tmp) return cg_err_set(err, CG_ENOMEM, "out of memory");
    snprintf(tmp, n, "%s.tmp-%ld", path, (long)getpid());
    if (cg_write_file(tmp, data, len, true, err) != 0) {
        unlink(tmp);
        cg_free(tmp);
        return -1;
    }
    if (cg_fault_rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        cg_free(tmp);
        return cg_err_set(err, cg_errcode_of_errno(e), "rename into %s: %s", path, strerror(e));
    }
    cg_free(tmp);
    char parent[4096];
    cg_path_parent(path, parent, sizeof parent);
    return cg_fsync_path(parent, err);
}

/* Keeps the failing mkdir's errno for the caller (fs.h). */
static int mkdir_fail(const char *dir, cg_error *err) {
    int e = errno;
    cg_err_set(err, CG_EIO, "create directory %s: %s", dir, strerror(e));
    errno = e;
    return -1;
}

int cg_mkdir_p(const char *path, cg_error *err) {
    char tmp[4096];
    size_t n = strlen(path);
    if (n == 0) return 0;
    if (n >= sizeof tmp) return cg_err_set(err, CG_EINVAL, "path too long: %s", path);
    memcpy(tmp, path, n + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return mkdir_fail(tmp, err);
            *p = '/';
        }
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return mkdir_fail(tmp, err);
    return 0;
}

int cg_rm_rf(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode)) return unlink(path);
    DIR *d = opendir(path);
    if (!d) return -1;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char *child = cg_path_join(path, de->d_name);
        if (!child || cg_rm_rf(child) != 0) rc = -1;
        cg_free(child);
    }
    closedir(d);
    if (rmdir(path) != 0) rc = -1;
    return rc;
}

bool cg_path_exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

bool cg_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool cg_is_regular_nofollow(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* cg_copy_file; h (may be NULL) and *size get the bytes written */
static int copy_file(const char *src, const char *dst, cg_sha256 *h, uint64_t *size, cg_error *err) {
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0) return cg_err_set(err, CG_EIO, "open %s: %s", src, strerror(errno));
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (out < 0) {
        int e = errno;
        close(in);
        return cg_err_set(err, CG_EIO, "create %s: %s", dst, strerror(e));
    }
    static _Thread_local char buf[1 << 16];
    cg_writeback wb; /* the copy streams to disk as it grows: the fsync below finds little left */
    cg_writeback_init(&wb, out, CG_WRITEBACK_EARLY);
    for (;;) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            close(in);
            close(out);
            return cg_err_set(err, CG_EIO, "read %s: %s", src, strerror(e));
        }
        if (r == 0) break;
        if (write_all(out, buf, (size_t)r) != 0) {
            int e = errno;
            close(in);
            close(out);
            return cg_err_set(err, CG_EIO, "write %s: %s", dst, strerror(e));
        }
        cg_writeback_wrote(&wb, (size_t)r);
        if (h) cg_sha256_update(h, buf, (size_t)r);
        if (size) *size += (uint64_t)r;
    }
    close(in);
    if (cg_fault_fsync(out) != 0) {
        int e = errno;
        close(out);
        return cg_err_set(err, CG_EIO, "sync %s: %s", dst, strerror(e));
    }
    if (close(out) != 0) return cg_err_set(err, CG_EIO, "close %s: %s", dst, strerror(errno));
    return 0;
}

int cg_copy_file(const char *src, const char *dst, cg_error *err) { return copy_file(src, dst, NULL, NULL, err); }

int cg_copy_file_sha256(const char *src, const char *dst, char hex[65], uint64_t *size, cg_error *err) {
    cg_sha256 h;
    cg_sha256_init(&h);
    *size = 0;
    if (copy_file(src, dst, &h, size, err) != 0) return -1;
    unsigned char d[32];
    cg_sha256_final(&h, d);
    cg_hex(d, sizeof d, hex);
    return 0;
}

void cg_path_parent(const char *path, char *out, size_t outsz) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    while (n > 0 && path[n - 1] != '/') n--;
    while (n > 1 && path[n - 1] == '/') n--;
    if (n == 0) {
        snprintf(out, outsz, ".");
        return;
    }
    snprintf(out, outsz, "%.*s", (int)n, path);
}

const char *cg_path_base(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* a "/" b into p (room for strlen(a) + strlen(b) + 2 bytes). */
static char *join_into(char *p, const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    memcpy(p, a, la);
    size_t n = la;
    if (n && p[n - 1] != '/') p[n++] = '/';
    memcpy(p + n, b, lb + 1);
    return p;
}

char *cg_path_join(const char *a, const char *b) {
    char *p = cg_try_alloc(strlen(a) + strlen(b) + 2, 1);
    return p ? join_into(p, a, b) : NULL;
}

char *cg_path_join_arena(cg_arena *arena, const char *a, const char *b) {
    return join_into(cg_arena_alloc(arena, strlen(a) + strlen(b) + 2), a, b);
}

/* ---- cg_walk ---- */
typedef struct walker {
    cg_walk_limits lim;
    cg_walk_fn visit;
    void *ctx;
    cg_error *err;
    const char *root;
    uint64_t seen;
    bool stop;
    cg_buf path;
} walker;

static int walk_dir(walker *w, int fd, unsigned depth);

/* Visits one entry of the directory d, and the tree under it. */
static int walk_entry(walker *w, DIR *d, const char *name, unsigned depth) {
    if (w->lim.max_entries && ++w->seen > w->lim.max_entries)
        return cg_err_set(w->err, CG_ELIMIT, "%s holds more than %llu entries", w->root,
                          (unsigned long long)w->lim.max_entries);
    cg_walk_entry e = {.dirfd = dirfd(d), .name = name, .depth = depth};
    if (fstatat(e.dirfd, name, &e.st, AT_SYMLINK_NOFOLLOW) != 0) return 0; /* gone meanwhile */
    size_t base = w->path.len;
    if (base) cg_buf_putc(&w->path, '/');
    cg_buf_puts(&w->path, name);
    e.path = w->path.data;
    cg_walk_action a = w->visit(w->ctx, &e);
    int rc = 0;
    if (a == CG_WALK_STOP) {
        w->stop = true;
    } else if (a == CG_WALK_NEXT && S_ISDIR(e.st.st_mode) && depth < w->lim.max_depth) {
        int fd = openat(e.dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        rc = fd < 0 ? cg_err_set(w->err, CG_EIO, "open %s/%s: %s", w->root, e.path, strerror(errno))
                    : walk_dir(w, fd, depth + 1);
    }
    w->path.len = base;
    w->path.data[base] = '\0';
    return rc;
}

/* Walks the directory open on fd (closed here). */
static int walk_dir(walker *w, int fd, unsigned depth) {
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        return cg_err_set(w->err, CG_EIO, "read %s: %s", w->root, strerror(e));
    }
    int rc = 0;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno) rc = cg_err_set(w->err, CG_EIO, "read %s: %s", w->root, strerror(errno));
            break;
        }
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        if ((rc = walk_entry(w, d, de->d_name, depth)) != 0 || w->stop) break;
    }
    closedir(d);
    return rc;
}

int cg_walk(const char *root, cg_walk_limits lim, cg_walk_fn visit, void *ctx, cg_error *err) {
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return cg_err_set(err, CG_EIO, "open %s: %s", root, strerror(errno));
    walker w = {.lim = lim, .visit = visit, .ctx = ctx, .err = err, .root = root, .path = CG_BUF_INIT};
    cg_buf_reserve(&w.path, 256);
    w.path.data[0] = '\0';
    int rc = walk_dir(&w, fd, 0);
    cg_buf_free(&w.path);
    return rc;
}
