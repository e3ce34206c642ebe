/* opened.c — a bundle directory opened once (opened.h). */
#include "bundle/opened.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fs.h"
#include "base/sha256.h"

const char *cg_bundle_fd_name(int fd, char buf[32]) {
    snprintf(buf, 32, "/proc/self/fd/%d", fd);
    return buf;
}

int cg_bundle_handle_open(const cg_bundle_handle *h, const char *rel, int flags) {
    int dir = h->dirfd;
    const char *p = rel;
    for (;;) {
        const char *slash = strchr(p, '/');
        if (!slash) break;
        char name[256];
        size_t n = (size_t)(slash - p);
        if (n == 0 || n >= sizeof name) {
            if (dir != h->dirfd) close(dir);
            errno = n ? ENAMETOOLONG : ENOENT;
            return -1;
        }
        memcpy(name, p, n);
        name[n] = 0;
        int next = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        if (dir != h->dirfd) close(dir);
        if (next < 0) {
            errno = e == ENOTDIR ? ELOOP : e; /* a link (or file) where a directory was checked */
            return -1;
        }
        dir = next;
        p = slash + 1;
    }
    int fd = openat(dir, p, flags | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    if (dir != h->dirfd) close(dir);
    errno = e;
    return fd;
}

/* Check 2: bundle.json must be a regular file (not a link), read through the
 * descriptor; mpath names it in messages. */
static int read_manifest(cg_bundle_handle *h, const char *mpath, cg_error *err) {
    int fd = openat(h->dirfd, CG_BUNDLE_MANIFEST_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int e = errno;
        if (fd >= 0) close(fd);
        if (fd >= 0 || e == ELOOP)
            return cg_err_setr(err, CG_R_MALFORMED_MANIFEST, CG_EVERIFY, "bundle manifest is not a regular file: %s",
                        mpath);
        cg_err_os(err, e, "read bundle manifest %s", mpath); /* the crate's with_context over io::Error */
        return cg_err_reason(err, CG_R_MALFORMED_MANIFEST);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    h->manifest = cg_read_fd_io(fd, mpath, CG_BUNDLE_MANIFEST_MAX, &h->manifest_len, err);
    close(fd);
    if (!h->manifest) {
        cg_err_context(err, "read bundle manifest %s", mpath);
        return cg_err_reason(err, CG_R_MALFORMED_MANIFEST);
    }
    cg_sha256_hex(h->manifest, h->manifest_len, h->manifest_sha256);
    return 0;
}

int cg_bundle_open_dir(const char *root, cg_bundle_handle *h, cg_error *err) {
    memset(h, 0, sizeof *h);
    h->dirfd = -1;
    cg_arena_init(&h->arena, 0);
    h->root = cg_arena_strdup(&h->arena, root);
    /* 1 */
    h->dirfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (h->dirfd < 0)
        return cg_err_setr(err, CG_R_MALFORMED_ARCHIVE, CG_EVERIFY, "bundle directory does not exist: %s", root);
    /* 2 */
    char *mpath = cg_path_join(root, CG_BUNDLE_MANIFEST_NAME);
    if (!mpath) return cg_err_setr(err, CG_R_NONE, CG_ENOMEM, "out of memory");
    int rc = read_manifest(h, mpath, err);
    /* 3 */
    if (rc == 0 && cg_bundle_manifest_parse(&h->arena, h->manifest, h->manifest_len, &h->man, err) != 0)
        rc = cg_err_context(err, "parse bundle manifest %s", mpath); /* keeps malformed_manifest */
    if (rc == 0 && (h->man.run_id_len >= sizeof ((cg_bundle_receipt *)0)->run_id ||
                    strlen(h->man.run_id) != h->man.run_id_len))
        rc = cg_err_setr(err, CG_R_MALFORMED_MANIFEST, CG_ELIMIT,
                  "parse bundle manifest %s: run_id is longer than %zu bytes or contains NUL", mpath,
                  sizeof ((cg_bundle_receipt *)0)->run_id - 1);
    cg_free(mpath);
    return rc;
}

void cg_bundle_handle_close(cg_bundle_handle *h) {
    if (h->dirfd >= 0) close(h->dirfd);
    h->dirfd = -1;
    cg_free(h->manifest);
    h->manifest = NULL;
    cg_arena_free(&h->arena);
}
