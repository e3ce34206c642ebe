/* verify.c — bundle/1 deep verification (§1.5) and the post-read re-check (§1.6).
 *
 * Conservative choices (documented in docs/compatibility.md by the lead):
 *  - a declared path is safe only when every '/'-separated component is a
 *    non-empty normal name (not "." or ".."), it has no backslash and no NUL;
 *    upstream's Path::components silently drops empty and inner "." components,
 *    which we refuse instead (such paths could never match an observed file).
 *  - files are opened with O_NOFOLLOW|O_NONBLOCK and re-checked with fstat, so a
 *    file swapped for a FIFO or link between the walk and hashing is refused. */
#include "bundle/verify.h"
#include "bundle/manifest_wire.h"

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
#include "bundle/dirnames.h"
#include "bundle/manifest.h"
#include "bundle/opened.h"

#define HASH_CHUNK ((size_t)1 << 20)
/* drop-behind reads leave the page cache in steps of this many bytes */
#define DROP_STEP ((uint64_t)8 << 20)

/* cg_err_setr with the reason first, as the checks read. */
bool cg_bundle_path_is_safe(const char *path) {
    if (!path || !*path) return false;
    if (path[0] == '/') return false;
    if (strchr(path, '\\')) return false;
    const char *p = path;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 0) return false;
        if (n == 1 && p[0] == '.') return false;
        if (n == 2 && p[0] == '.' && p[1] == '.') return false;
        if (!slash) return true;
        p = slash + 1;
    }
}

/* Safe per check 5 and not the reserved manifest name; rejects embedded NULs. */
static bool declared_path_ok(const cg_bundle_file *f) {
    if (strlen(f->path) != f->path_len) return false;
    if (!strcmp(f->path, CG_BUNDLE_MANIFEST_NAME)) return false;
    return cg_bundle_path_is_safe(f->path);
}

/* ---- recursive walk (check 8) ---- */
typedef struct walk {
    char **files; /* relative paths, walk order */
    size_t n, cap;
} walk;

static void walk_free(walk *w) {
    for (size_t i = 0; i < w->n; i++) cg_free(w->files[i]);
    cg_free(w->files);
}


static int walk_push(walk *w, char **child_rel, cg_error *err) {
    if (w->n == w->cap) {
        size_t c = w->cap ? w->cap * 2 : 16;
        char **nv = realloc(w->files, c * sizeof *nv);
        if (!nv) return cg_err_setr(err, CG_R_NONE, CG_ENOMEM, "out of memory");
        w->files = nv;
        w->cap = c;
    }
    w->files[w->n++] = *child_rel;
    *child_rel = NULL;
    return 0;
}

/* Walks the directory open as dfd (rel beneath root; NULL at the root),
 * inspecting entries with fstatat(AT_SYMLINK_NOFOLLOW) and descending through
 * openat(O_NOFOLLOW): no path is resolved through the filesystem. */
static int walk_dir(int dfd, const char *root, const char *rel, walk *w, cg_error *err) {
    char *dir = rel ? cg_path_join(root, rel) : strdup(root);
    if (!dir) return cg_err_setr(err, CG_R_NONE, CG_ENOMEM, "out of memory");
    char **names;
    size_t nn;
    if (cg_dir_names_sorted_fd(dfd, dir, "bundle", &names, &nn, err) != 0) {
        cg_err_reason(err, CG_R_NONE);
        cg_free(dir);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < nn; i++) {
        char *child_rel = rel ? cg_path_join(rel, names[i]) : strdup(names[i]);
        char *child = child_rel ? cg_path_join(root, child_rel) : NULL;
        struct stat st;
        if (!child) {
            rc = cg_err_setr(err, CG_R_NONE, CG_ENOMEM, "out of memory");
        } else if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
            rc = cg_err_setr(err, CG_R_NONE, CG_EIO, "inspect bundle entry %s: %s", child, strerror(errno));
        } else if (S_ISLNK(st.st_mode)) {
            rc = cg_err_setr(err, CG_R_SPECIAL_FILE, CG_EVERIFY, "symbolic links are not allowed in bundles: %s",
                      child);
        } else if (S_ISDIR(st.st_mode)) {
            int sub = openat(dfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) rc = cg_err_setr(err, CG_R_NONE, CG_EIO, "inspect bundle entry %s: %s", child, strerror(errno));
            else rc = walk_dir(sub, root, child_rel, w, err);
            if (sub >= 0) close(sub);
        } else if (!S_ISREG(st.st_mode)) {
            rc = cg_err_setr(err, CG_R_SPECIAL_FILE, CG_EVERIFY, "special files are not allowed in bundles: %s",
                      child);
        } else {
            rc = walk_push(w, &child_rel, err);
        }
        cg_free(child_rel);
        cg_free(child);
    }
    cg_dir_names_free(names, nn);
    cg_free(dir);
    return rc;
}

/* ---- hashing of one declared file (checks 11–13) ---- */
typedef enum { HF_OK, HF_NOT_REGULAR, HF_SIZE, HF_IO } hf_result;

/* Hashes the file open as fd (closed here) after checking it is regular and,
 * unless expect is UINT64_MAX, that its size is expect (HF_SIZE, nothing read).
 * drop: a file of DROP_STEP bytes or more leaves the page cache as the
 * reading goes (advice only: what is read and the outcome are the same). */
static hf_result hash_fd(int fd, uint64_t expect, bool drop, unsigned char *chunk, char hex[65],
                         uint64_t *stat_size, uint64_t *hashed, int *errnum) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        *errnum = errno;
        close(fd);
        return HF_NOT_REGULAR;
    }
    *stat_size = (uint64_t)st.st_size;
    if (expect != UINT64_MAX && *stat_size != expect) {
        close(fd);
        return HF_SIZE;
    }
#ifdef POSIX_FADV_SEQUENTIAL
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    cg_sha256 h;
    cg_sha256_init(&h);
    uint64_t total = 0, dropped = 0;
    for (;;) {
        if (drop && total - dropped >= DROP_STEP) {
            (void)posix_fadvise(fd, (off_t)dropped, (off_t)(total - dropped), POSIX_FADV_DONTNEED);
            dropped = total;
        }
        ssize_t r = read(fd, chunk, HASH_CHUNK);
        if (r < 0) {
            if (errno == EINTR) continue;
            *errnum = errno;
            close(fd);
            return HF_IO;
        }
        if (r == 0) break;
        cg_sha256_update(&h, chunk, (size_t)r);
        total += (uint64_t)r;
    }
    if (drop && total >= DROP_STEP) (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED); /* a small file stays */
    close(fd);
    unsigned char d[32];
    cg_sha256_final(&h, d);
    cg_hex(d, 32, hex);
    *hashed = total;
    return HF_OK;
}

/* Opens a declared file beneath the handle (no link followed) and hashes it. */
static hf_result hash_declared(const cg_bundle_handle *h, const char *rel, uint64_t expect, bool drop,
                               unsigned char *chunk, char hex[65], uint64_t *stat_size, uint64_t *hashed,
                               int *errnum) {
    int fd = cg_bundle_handle_open(h, rel, O_RDONLY | O_NONBLOCK);
    if (fd < 0) {
        *errnum = errno;
        return errno == ELOOP || errno == ENOENT || errno == ENOTDIR || errno == ENXIO ? HF_NOT_REGULAR : HF_IO;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return hash_fd(fd, expect, drop, chunk, hex, stat_size, hashed, errnum);
}

static bool hex_equal_ci(const char *a, const char *b) {
    for (size_t i = 0; i < 64; i++) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'F') x = (char)(x - 'A' + 'a');
        if (y >= 'A' && y <= 'F') y = (char)(y - 'A' + 'a');
        if (x != y) return false;
    }
    return true;
}

/* by path, then by manifest position (pointers into one array) */
static int decl_cmp(const void *x, const void *y) {
    const cg_bundle_file *a = *(const cg_bundle_file *const *)x, *b = *(const cg_bundle_file *const *)y;
    int c = strcmp(a->path, b->path);
    return c ? c : (a < b ? -1 : a > b);
}

static const cg_bundle_file *find_declared(const cg_bundle_file *const *sorted, size_t n, const char *path) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(sorted[mid]->path, path);
        if (c == 0) return sorted[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

static int verify_handle(const cg_bundle_handle *h, bool drop, cg_bundle_receipt *out, cg_error *err);

static int verify_dir(const char *root, bool drop, cg_bundle_receipt *out, cg_error *err) {
    memset(out, 0, sizeof *out);
    cg_bundle_handle h;
    int rc = cg_bundle_open_dir(root, &h, err);
    if (rc == 0) rc = verify_handle(&h, drop, out, err);
    cg_bundle_handle_close(&h);
    return rc;
}

int cg_bundle_verify(const char *root, cg_bundle_receipt *out, cg_error *err) {
    return verify_dir(root, false, out, err);
}

int cg_bundle_verify_drop_behind(const char *root, cg_bundle_receipt *out, cg_error *err) {
    return verify_dir(root, true, out, err);
}

int cg_bundle_verify_handle(const cg_bundle_handle *h, cg_bundle_receipt *out, cg_error *err) {
    return verify_handle(h, false, out, err);
}

static int verify_handle(const cg_bundle_handle *h, bool drop, cg_bundle_receipt *out, cg_error *err) {
    memset(out, 0, sizeof *out);
    const char *root = h->root;
    const cg_bundle_manifest m = h->man;
    int rc = -1;
    walk w = {0};
    unsigned char *chunk = NULL;
    const cg_bundle_file **sorted = NULL;
    /* 4 */
    if (strcmp(m.schema, CG_BUNDLE_SCHEMA) != 0 || strlen(m.schema) != strlen(CG_BUNDLE_SCHEMA)) {
        cg_err_setr(err, CG_R_UNSUPPORTED_BUNDLE_SCHEMA, CG_EVERIFY, "unsupported bundle schema %s; expected %s", CG_QUOTE(m.schema),
             CG_QUOTE(CG_BUNDLE_SCHEMA));
        goto out;
    }
    /* 5 */
    for (size_t i = 0; i < m.n_files; i++) {
        if (!declared_path_ok(&m.files[i])) {
            cg_err_setr(err, CG_R_UNSAFE_PATH, CG_EVERIFY, "unsafe or reserved bundle path %s", CG_QUOTE(m.files[i].path));
            goto out;
        }
    }
    /* 6: sorted view; duplicates are adjacent */
    sorted = m.n_files ? malloc(m.n_files * sizeof *sorted) : NULL;
    if (m.n_files && !sorted) {
        cg_err_setr(err, CG_R_NONE, CG_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < m.n_files; i++) sorted[i] = &m.files[i];
    if (m.n_files > 1) qsort(sorted, m.n_files, sizeof *sorted, decl_cmp);
    {
        /* like inserting into a set in manifest order: the reported path is the
         * one whose second occurrence comes first */
        const cg_bundle_file *dup = NULL;
        for (size_t i = 1; i < m.n_files; i++) {
            if (strcmp(sorted[i - 1]->path, sorted[i]->path) != 0) continue;
            if (i >= 2 && !strcmp(sorted[i - 2]->path, sorted[i]->path)) continue; /* third+ occurrence */
            if (!dup || sorted[i] < dup) dup = sorted[i];
        }
        if (dup) {
            cg_err_setr(err, CG_R_DUPLICATE_PATH, CG_EVERIFY, "bundle manifest declares %s more than once", CG_QUOTE(dup->path));
            goto out;
        }
    }
    /* 7 */
    for (size_t i = 0; i < m.n_files; i++) {
        if (!cg_is_sha256_hex(m.files[i].sha256)) {
            cg_err_setr(err, CG_R_INVALID_DIGEST, CG_EVERIFY, "bundle manifest has an invalid SHA-256 for %s",
                 CG_QUOTE(m.files[i].path));
            goto out;
        }
    }
    /* 8 */
    if (walk_dir(h->dirfd, root, NULL, &w, err) != 0) goto out;
    /* 9 */
    size_t observed = 0;
    for (size_t i = 0; i < w.n; i++) {
        if (!strcmp(w.files[i], CG_BUNDLE_MANIFEST_NAME)) continue;
        observed++;
        if (!find_declared(sorted, m.n_files, w.files[i])) {
            cg_err_setr(err, CG_R_UNDECLARED_FILE, CG_EVERIFY, "undeclared regular file in bundle: %s", w.files[i]);
            goto out;
        }
    }
    /* 10 */
    if (observed != m.n_files) {
        /* first declared path (in path order) that was not observed */
        qsort(w.files, w.n, sizeof *w.files, cg_dir_name_cmp);
        const char *missing = NULL;
        for (size_t i = 0; i < m.n_files && !missing; i++)
            if (!bsearch(&sorted[i]->path, w.files, w.n, sizeof *w.files, cg_dir_name_cmp)) missing = sorted[i]->path;
        cg_err_setr(err, CG_R_MISSING_FILE, CG_EVERIFY, "declared bundle file is missing: %s",
             missing ? missing : "?");
        goto out;
    }
    /* 11–14, in path order */
    chunk = malloc(HASH_CHUNK);
    if (!chunk) {
        cg_err_setr(err, CG_R_NONE, CG_ENOMEM, "out of memory");
        goto out;
    }
    uint64_t total = 0;
    for (size_t i = 0; i < m.n_files; i++) {
        const cg_bundle_file *f = sorted[i];
        char *full = cg_path_join(root, f->path);
        if (!full) {
            cg_err_setr(err, CG_R_NONE, CG_ENOMEM, "out of memory");
            goto out;
        }
        char hex[65];
        uint64_t ssize = 0, hashed = 0;
        int en = 0;
        hf_result hr = hash_declared(h, f->path, f->bytes, drop, chunk, hex, &ssize, &hashed, &en);
        if (hr == HF_SIZE) {
            cg_err_setr(err, CG_R_SIZE_MISMATCH, CG_EVERIFY, "bundle file %s size mismatch: expected %llu, observed %llu",
                 CG_QUOTE(f->path), (unsigned long long)f->bytes, (unsigned long long)ssize);
            cg_free(full);
            goto out;
        }
        if (hr == HF_NOT_REGULAR) {
            cg_err_setr(err, CG_R_SPECIAL_FILE, CG_EVERIFY, "declared bundle path is not a regular file: %s", full);
            cg_free(full);
            goto out;
        }
        if (hr == HF_IO) {
            cg_err_setr(err, CG_R_NONE, CG_EIO, "hash bundle file %s: %s", full, strerror(en));
            cg_free(full);
            goto out;
        }
        cg_free(full);
        if (hashed != f->bytes) {
            cg_err_setr(err, CG_R_SIZE_MISMATCH, CG_EVERIFY, "bundle file %s size mismatch: expected %llu, observed %llu",
                 CG_QUOTE(f->path), (unsigned long long)f->bytes, (unsigned long long)hashed);
            goto out;
        }
        if (!hex_equal_ci(hex, f->sha256)) {
            cg_err_setr(err, CG_R_DIGEST_MISMATCH, CG_EVERIFY, "bundle file %s SHA-256 mismatch", CG_QUOTE(f->path));
            goto out;
        }
        if (total > UINT64_MAX - f->bytes) {
            cg_err_setr(err, CG_R_PAYLOAD_TOO_LARGE, CG_EVERIFY, "verified bundle byte count overflowed u64");
            goto out;
        }
        total += f->bytes;
    }
    memcpy(out->run_id, m.run_id, m.run_id_len + 1);
    memcpy(out->manifest_sha256, h->manifest_sha256, sizeof out->manifest_sha256);
    out->files_verified = m.n_files;
    out->bytes_verified = total;
    rc = 0;
out:
    cg_free(chunk);
    cg_free(sorted);
    walk_free(&w);
    return rc;
}

cg_jv *cg_bundle_receipt_to_json(cg_arena *a, const cg_bundle_receipt *r) {
    return cg_bw_encode(a, &cg_bw_bundle_receipt, r);
}

/* §1.6 re-read of bundle.json through the handle's descriptor. */
static char *reread_manifest(const cg_bundle_handle *h, const char *mpath, size_t *len, cg_error *err) {
    int fd = openat(h->dirfd, CG_BUNDLE_MANIFEST_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) { /* gone or not a file since: changed */
        int e = errno;
        if (fd >= 0) close(fd);
        if (fd >= 0 || e == ELOOP)
            cg_err_setr(err, CG_R_DIGEST_MISMATCH, CG_EVERIFY,
                        "bundle manifest changed to a non-regular file after initial verification: %s", mpath);
        else
            cg_err_setr(err, CG_R_DIGEST_MISMATCH, CG_EIO, "read bundle manifest %s: %s", mpath, strerror(e));
        return NULL;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    cg_error rerr;
    cg_err_clear(&rerr);
    char *data = cg_read_fd(fd, mpath, CG_BUNDLE_MANIFEST_MAX, len, &rerr);
    close(fd);
    if (!data)
        cg_err_setr(err, rerr.code == CG_ENOMEM ? CG_R_NONE : CG_R_DIGEST_MISMATCH,
                    rerr.code == CG_ELIMIT ? CG_ELIMIT : CG_EIO, "read bundle manifest %s: %s", mpath, rerr.msg);
    return data;
}

int cg_bundle_verify_consumed(const char *root, const cg_bundle_receipt *initial, const char *const *consumed,
                              size_t n_consumed, cg_error *err) {
    cg_bundle_handle h;
    memset(&h, 0, sizeof h);
    cg_arena_init(&h.arena, 0);
    h.root = root;
    h.dirfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc;
    if (h.dirfd < 0) {
        int e = errno;
        char *mpath = cg_path_join(root, CG_BUNDLE_MANIFEST_NAME);
        rc = cg_err_setr(err, CG_R_DIGEST_MISMATCH, CG_EIO, "read bundle manifest %s: %s", mpath ? mpath : root,
                         strerror(e));
        cg_free(mpath);
    } else {
        rc = cg_bundle_verify_consumed_handle(&h, initial, consumed, n_consumed, err);
    }
    cg_bundle_handle_close(&h);
    return rc;
}

int cg_bundle_verify_consumed_handle(const cg_bundle_handle *h, const cg_bundle_receipt *initial,
                                     const char *const *consumed, size_t n_consumed, cg_error *err) {
    /* 1: the C receipt type always carries the bundle-verification/1 and bundle/1
     * schemas (they are constants of the struct), so only its digest is checked. */
    if (!cg_is_sha256_hex(initial->manifest_sha256))
        return cg_err_set(err, CG_EVERIFY, "unsupported initial bundle verification receipt %s",
                          initial->manifest_sha256);
    const char *root = h->root;
    char *mpath = cg_path_join(root, CG_BUNDLE_MANIFEST_NAME);
    if (!mpath) return cg_err_set(err, CG_ENOMEM, "out of memory");
    size_t mlen = 0;
    char *mdata = reread_manifest(h, mpath, &mlen, err);
    if (!mdata) {
        cg_free(mpath);
        return -1;
    }
    int rc = -1;
    cg_arena a;
    cg_arena_init(&a, 0);
    unsigned char *chunk = NULL;
    char hex[65];
    cg_sha256_hex(mdata, mlen, hex);
    if (strcmp(hex, initial->manifest_sha256) != 0) {
        cg_err_setr(err, CG_R_DIGEST_MISMATCH, CG_EVERIFY, "bundle manifest changed after initial verification");
        goto out;
    }
    cg_bundle_manifest m;
    cg_error perr;
    if (cg_bundle_manifest_parse(&a, mdata, mlen, &m, &perr) != 0 || strcmp(m.schema, CG_BUNDLE_SCHEMA) != 0 ||
        strlen(m.run_id) != m.run_id_len || strcmp(m.run_id, initial->run_id) != 0) {
        cg_err_setr(err, CG_R_DIGEST_MISMATCH, CG_EVERIFY,
                    "bundle manifest identity changed after initial verification");
        goto out;
    }
    chunk = malloc(HASH_CHUNK);
    if (!chunk) {
        cg_err_set(err, CG_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n_consumed; i++) {
        const char *p = consumed[i];
        if (!cg_bundle_path_is_safe(p) || !strcmp(p, CG_BUNDLE_MANIFEST_NAME)) {
            cg_err_setr(err, CG_R_UNSAFE_PATH, CG_EVERIFY, "unsafe or reserved consumed bundle path %s", CG_QUOTE(p));
            goto out;
        }
        const cg_bundle_file *decl = NULL;
        for (size_t j = 0; j < m.n_files && !decl; j++)
            if (m.files[j].path_len == strlen(p) && !strcmp(m.files[j].path, p)) decl = &m.files[j];
        if (!decl) {
            cg_err_setr(err, CG_R_DIGEST_MISMATCH, CG_EVERIFY, "consumed bundle file is not declared: %s", p);
            goto out;
        }
        char *full = cg_path_join(root, p);
        if (!full) {
            cg_err_set(err, CG_ENOMEM, "out of memory");
            goto out;
        }
        uint64_t ssize = 0, hashed = 0;
        int en = 0;
        char fhex[65];
        hf_result hr = hash_declared(h, p, UINT64_MAX, false, chunk, fhex, &ssize, &hashed, &en);
        if (hr != HF_OK) {
            if (hr == HF_NOT_REGULAR)
                cg_err_setr(err, CG_R_DIGEST_MISMATCH, CG_EVERIFY,
                            "consumed bundle path is no longer a regular file: %s", full);
            else
                cg_err_set(err, CG_EIO, "hash bundle file %s: %s", full, strerror(en));
            cg_free(full);
            goto out;
        }
        cg_free(full);
        if (ssize != decl->bytes || hashed != decl->bytes || !cg_is_sha256_hex(decl->sha256) ||
            !hex_equal_ci(fhex, decl->sha256)) {
            cg_err_setr(err, CG_R_DIGEST_MISMATCH, CG_EVERIFY,
                        "consumed bundle file %s changed after initial verification", CG_QUOTE(p));
            goto out;
        }
    }
    rc = 0;
out:
    cg_free(chunk);
    cg_arena_free(&a);
    cg_free(mdata);
    cg_free(mpath);
    return rc;
}
