/* archive.c — bundle transport archive: pack (tar / tar.zst) and hostile-input
 * safe unpack (libarchive for tar, libzstd streaming for the zstd layer). */
#define _GNU_SOURCE /* renameat2 / RENAME_NOREPLACE */
#include "bundle/archive.h"
#include "base/fault.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "base/alloc.h"
#include "base/fs.h"
#include "base/hmap.h"
#include "base/json.h"
#include "base/sha256.h"
#include "bundle/dirnames.h"
#include "bundle/manifest.h"
#include "bundle/verify.h"

#define IO_CHUNK ((size_t)1 << 20)
#define ZSTD_LEVEL 3

void cg_archive_limits_default(cg_archive_limits *l) {
    l->max_entries = 100000;
    l->max_file_bytes = (uint64_t)4 << 30;
    l->max_total_bytes = (uint64_t)8 << 30;
    l->max_stream_bytes = 0; /* derived */
    l->window_log_max = 27;
    l->max_ratio = 0;
    l->ratio_floor_bytes = (uint64_t)16 << 20;
    l->scratch = false;
}

static int write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t w = cg_fault_write(fd, c, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static uint64_t now_nanos(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* "<parent>/.<name><tag>-<pid>-<nanos>" beside path (malloc'd). */
static char *sibling_temp(const char *path, const char *tag) {
    char parent[PATH_MAX];
    cg_path_parent(path, parent, sizeof parent);
    const char *name = cg_path_base(path);
    size_t n = strlen(parent) + strlen(name) + strlen(tag) + 64;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/.%s%s-%ld-%llu", parent, name, tag, (long)getpid(), (unsigned long long)now_nanos());
    return p;
}

/* ================= pack ================= */

typedef struct pack_out {
    int fd;
    ZSTD_CCtx *z;
    void *zbuf;
    size_t zcap;
    int errnum;
    char zerr[128];
} pack_out;

static int zflush(pack_out *o, const void *data, size_t len, ZSTD_EndDirective mode) {
    ZSTD_inBuffer in = {data, len, 0};
    for (;;) {
        ZSTD_outBuffer out = {o->zbuf, o->zcap, 0};
        size_t r = ZSTD_compressStream2(o->z, &out, &in, mode);
        if (ZSTD_isError(r)) {
            snprintf(o->zerr, sizeof o->zerr, "zstd: %s", ZSTD_getErrorName(r));
            return -1;
        }
        if (out.pos && write_all(o->fd, o->zbuf, out.pos) != 0) {
            o->errnum = errno;
            return -1;
        }
        if (mode == ZSTD_e_end ? r == 0 : in.pos == in.size) return 0;
    }
}

static la_ssize_t pack_write_cb(struct archive *a, void *ctx, const void *buf, size_t len) {
    (void)a;
    pack_out *o = ctx;
    if (o->z) {
        if (zflush(o, buf, len, ZSTD_e_continue) != 0) return -1;
    } else if (write_all(o->fd, buf, len) != 0) {
        o->errnum = errno;
        return -1;
    }
    return (la_ssize_t)len;
}

static struct archive_entry *file_entry(const char *path, uint64_t size) {
    struct archive_entry *e = archive_entry_new();
    if (!e) return NULL;
    /* raw bytes (manifest paths are UTF-8 from JSON); for non-ASCII paths the
     * pax writer runs with hdrcharset=BINARY and stores them unconverted,
     * independent of the process locale (libarchive 3.6 crashes converting a
     * UTF-8-only name under the C locale) */
    archive_entry_set_pathname(e, path);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, (la_int64_t)size);
    archive_entry_set_mtime(e, 0, 0);
    archive_entry_set_uid(e, 0);
    archive_entry_set_gid(e, 0);
    return e;
}

static int pack_fail(struct archive *a, pack_out *o, cg_error *err, const char *what) {
    if (o->errnum) return cg_err_set(err, CG_EIO, "%s: %s", what, strerror(o->errnum));
    if (o->zerr[0]) return cg_err_set(err, CG_EIO, "%s: %s", what, o->zerr);
    return cg_err_set(err, CG_EIO, "%s: %s", what, a ? archive_error_string(a) : "archive error");
}

/* Reads up to n bytes of the next part of a file: count, 0 at its end, -1 with err. */
typedef ssize_t (*pack_read_fn)(void *h, void *buf, size_t n, cg_error *err);

static ssize_t fd_read(void *h, void *buf, size_t n, cg_error *err) {
    for (;;) {
        ssize_t r = read(*(int *)h, buf, n);
        if (r >= 0 || errno != EINTR) {
            if (r < 0) cg_err_set(err, CG_EIO, "%s", strerror(errno));
            return r;
        }
    }
}

/* Archives declared file f (header, then its bytes from rd), hashing it; a
 * file whose bytes differ from its manifest entry fails the pack. */
static int pack_data(struct archive *a, pack_out *o, const cg_bundle_file *f, unsigned char *chunk, pack_read_fn rd,
                     void *h, cg_error *err) {
    struct archive_entry *e = file_entry(f->path, f->bytes);
    if (!e || archive_write_header(a, e) != ARCHIVE_OK) {
        if (e) archive_entry_free(e);
        return pack_fail(a, o, err, "write archive header");
    }
    archive_entry_free(e);
    cg_sha256 sh;
    cg_sha256_init(&sh);
    uint64_t total = 0;
    for (;;) {
        ssize_t r = rd(h, chunk, IO_CHUNK, err);
        if (r < 0) return cg_err_context(err, "read bundle file %s", f->path);
        if (r == 0) break;
        if (total + (uint64_t)r > f->bytes) break; /* grew: mismatch below */
        cg_sha256_update(&sh, chunk, (size_t)r);
        total += (uint64_t)r;
        if (archive_write_data(a, chunk, (size_t)r) != r) return pack_fail(a, o, err, "write archive data");
    }
    unsigned char d[32];
    char hex[65];
    cg_sha256_final(&sh, d);
    cg_hex(d, 32, hex);
    if (total != f->bytes || strcasecmp(hex, f->sha256) != 0)
        return cg_err_set(err, CG_EVERIFY, "bundle file %s changed after verification", f->path);
    return 0;
}

/* Streams one declared file of the bundle directory into the archive. */
static int pack_file(struct archive *a, pack_out *o, const char *root, const cg_bundle_file *f, unsigned char *chunk,
                     cg_error *err) {
    char *full = cg_path_join(root, f->path);
    if (!full) return cg_err_set(err, CG_ENOMEM, "out of memory");
    int fd = open(full, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != f->bytes) {
        int e = errno;
        if (fd >= 0) close(fd);
        int rc = cg_err_set(err, CG_EVERIFY, "bundle file %s changed after verification (%s)", f->path,
                            fd < 0 ? strerror(e) : "type or size");
        cg_free(full);
        return rc;
    }
    cg_free(full);
    int rc = pack_data(a, o, f, chunk, fd_read, &fd, err);
    close(fd);
    return rc;
}

static int pack_dir(struct archive *a, pack_out *o, const char *rel, cg_error *err) {
    struct archive_entry *e = archive_entry_new();
    if (!e) return cg_err_set(err, CG_ENOMEM, "out of memory");
    archive_entry_set_pathname(e, rel);
    archive_entry_set_filetype(e, AE_IFDIR);
    archive_entry_set_perm(e, 0755);
    archive_entry_set_size(e, 0);
    archive_entry_set_mtime(e, 0, 0);
    int rc = archive_write_header(a, e) != ARCHIVE_OK ? pack_fail(a, o, err, "write archive header") : 0;
    archive_entry_free(e);
    return rc;
}

static int file_path_cmp(const void *key, const void *elem) {
    return strcmp((const char *)key, ((const cg_bundle_file *)elem)->path);
}

/* Walks the verified bundle (names sorted) and archives every directory (so
 * empty ones such as an empty nsight/ survive transport) and every declared
 * file; anything else means the bundle changed after verification. */
static int pack_tree(struct archive *a, pack_out *o, const char *root, const char *rel, const cg_bundle_manifest *m,
                     unsigned char *chunk, size_t *packed, cg_error *err) {
    char *dir = rel ? cg_path_join(root, rel) : strdup(root);
    if (!dir) return cg_err_set(err, CG_ENOMEM, "out of memory");
    char **names;
    size_t n;
    if (cg_dir_names_sorted(dir, "bundle", &names, &n, err) != 0) {
        cg_free(dir);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (!rel && !strcmp(names[i], CG_BUNDLE_MANIFEST_NAME)) continue; /* written first */
        char *crel = rel ? cg_path_join(rel, names[i]) : strdup(names[i]);
        char *full = crel ? cg_path_join(root, crel) : NULL;
        struct stat st;
        if (!full) {
            rc = cg_err_set(err, CG_ENOMEM, "out of memory");
        } else if (lstat(full, &st) != 0) {
            rc = cg_err_set(err, CG_EIO, "inspect %s: %s", full, strerror(errno));
        } else if (S_ISDIR(st.st_mode)) {
            rc = pack_dir(a, o, crel, err);
            if (rc == 0) rc = pack_tree(a, o, root, crel, m, chunk, packed, err);
        } else {
            const cg_bundle_file *f =
                S_ISREG(st.st_mode) ? bsearch(crel, m->files, m->n_files, sizeof *m->files, file_path_cmp) : NULL;
            if (!f) rc = cg_err_set(err, CG_EVERIFY, "bundle entry %s changed after verification", crel);
            else if ((rc = pack_file(a, o, root, f, chunk, err)) == 0) (*packed)++;
        }
        cg_free(full);
        cg_free(crel);
    }
    cg_dir_names_free(names, n);
    cg_free(dir);
    return rc;
}

static bool non_ascii_paths(const cg_bundle_manifest *m) {
    for (size_t i = 0; i < m->n_files; i++)
        for (const unsigned char *p = (const unsigned char *)m->files[i].path; *p; p++)
            if (*p >= 0x80) return true;
    return false;
}

/* The archive being written: a temp file beside out_path, renamed in by pack_finish. */
typedef struct packer {
    struct archive *a;
    pack_out o;
    char *tmp;
    unsigned char *chunk;
} packer;

/* Opens the writer and archives bundle.json (mdata) first. */
static int pack_open(packer *p, const char *out_path, bool zstd, const cg_bundle_manifest *m, const char *mdata,
                     size_t mlen, cg_error *err) {
    memset(p, 0, sizeof *p);
    p->o.fd = -1;
    p->tmp = sibling_temp(out_path, ".pack");
    p->chunk = malloc(IO_CHUNK);
    if (!p->tmp || !p->chunk) return cg_err_set(err, CG_ENOMEM, "out of memory");
    p->o.fd = open(p->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (p->o.fd < 0) return cg_err_set(err, CG_EIO, "create %s: %s", p->tmp, strerror(errno));
    if (zstd) {
        p->o.z = ZSTD_createCCtx();
        p->o.zcap = ZSTD_CStreamOutSize();
        p->o.zbuf = malloc(p->o.zcap);
        if (!p->o.z || !p->o.zbuf) return cg_err_set(err, CG_ENOMEM, "out of memory");
        ZSTD_CCtx_setParameter(p->o.z, ZSTD_c_compressionLevel, ZSTD_LEVEL);
        ZSTD_CCtx_setParameter(p->o.z, ZSTD_c_checksumFlag, 1);
    }
    p->a = archive_write_new();
    if (!p->a || archive_write_set_format_pax_restricted(p->a) != ARCHIVE_OK ||
        (non_ascii_paths(m) && archive_write_set_format_option(p->a, "pax", "hdrcharset", "BINARY") != ARCHIVE_OK) ||
        archive_write_open(p->a, &p->o, NULL, pack_write_cb, NULL) != ARCHIVE_OK)
        return pack_fail(p->a, &p->o, err, "open archive writer");
    struct archive_entry *e = file_entry(CG_BUNDLE_MANIFEST_NAME, mlen);
    if (!e || archive_write_header(p->a, e) != ARCHIVE_OK || archive_write_data(p->a, mdata, mlen) != (la_ssize_t)mlen) {
        if (e) archive_entry_free(e);
        return pack_fail(p->a, &p->o, err, "write archive entry bundle.json");
    }
    archive_entry_free(e);
    return 0;
}

/* Finishes the archive, syncs it and renames it to out_path. */
static int pack_finish(packer *p, const char *out_path, cg_error *err) {
    if (archive_write_close(p->a) != ARCHIVE_OK) return pack_fail(p->a, &p->o, err, "finish archive");
    if (p->o.z && zflush(&p->o, NULL, 0, ZSTD_e_end) != 0) return pack_fail(NULL, &p->o, err, "finish zstd stream");
    if (cg_fault_fsync(p->o.fd) != 0) return cg_err_set(err, CG_EIO, "sync %s: %s", p->tmp, strerror(errno));
    close(p->o.fd);
    p->o.fd = -1;
    if (cg_fault_rename(p->tmp, out_path) != 0)
        return cg_err_set(err, CG_EIO, "rename %s to %s: %s", p->tmp, out_path, strerror(errno));
    char parent[PATH_MAX];
    cg_path_parent(out_path, parent, sizeof parent);
    return cg_fsync_path(parent, err) != 0 ? -1 : 0;
}

static void pack_free(packer *p, int rc) {
    if (p->a) archive_write_free(p->a);
    if (p->o.fd >= 0) close(p->o.fd);
    if (rc != 0 && p->tmp) unlink(p->tmp);
    ZSTD_freeCCtx(p->o.z);
    cg_free(p->o.zbuf);
    cg_free(p->chunk);
    cg_free(p->tmp);
}

int cg_archive_pack(const char *bundle, const char *out_path, bool zstd, cg_error *err) {
    cg_bundle_receipt r;
    if (cg_bundle_verify(bundle, &r, err) != 0) return cg_err_context(err, "refusing to pack %s", bundle);
    char *mpath = cg_path_join(bundle, CG_BUNDLE_MANIFEST_NAME);
    if (!mpath) return cg_err_set(err, CG_ENOMEM, "out of memory");
    size_t mlen = 0;
    char *mdata = cg_read_file(mpath, CG_BUNDLE_MANIFEST_MAX, &mlen, err);
    cg_free(mpath);
    if (!mdata) return -1;
    char hex[65];
    cg_sha256_hex(mdata, mlen, hex);
    if (strcmp(hex, r.manifest_sha256) != 0) {
        cg_free(mdata);
        return cg_err_set(err, CG_EVERIFY, "bundle manifest changed after initial verification");
    }
    cg_arena ar;
    cg_arena_init(&ar, 0);
    cg_bundle_manifest m;
    packer p = {.o.fd = -1};
    size_t packed = 0;
    int rc = cg_bundle_manifest_parse(&ar, mdata, mlen, &m, err);
    if (rc == 0) {
        cg_bundle_manifest_sort(&m);
        rc = pack_open(&p, out_path, zstd, &m, mdata, mlen, err);
    }
    if (rc == 0) rc = pack_tree(p.a, &p.o, bundle, NULL, &m, p.chunk, &packed, err);
    if (rc == 0 && packed != m.n_files)
        rc = cg_err_set(err, CG_EVERIFY, "bundle %s changed after verification (files missing)", bundle);
    if (rc == 0) rc = pack_finish(&p, out_path, err);
    pack_free(&p, rc);
    cg_free(mdata);
    cg_arena_free(&ar);
    return rc;
}

/* Path order of a directory walk with sorted names: component by component,
 * so '/' sorts below every other byte ("a/b" before "a.txt"). */
static int walk_cmp(const void *pa, const void *pb) {
    const unsigned char *a = (const unsigned char *)((const cg_bundle_file *)pa)->path;
    const unsigned char *b = (const unsigned char *)((const cg_bundle_file *)pb)->path;
    for (; *a && *a == *b; a++, b++) {}
    int ca = *a == '/' ? 1 : *a ? *a + 1 : 0, cb = *b == '/' ? 1 : *b ? *b + 1 : 0;
    return ca - cb;
}

/* Archives the directories of path not yet archived (those past the common
 * prefix with prev, the previous file's path; NULL for the first). */
static int pack_parents(packer *p, const char *prev, const char *path, cg_error *err) {
    size_t common = 0; /* length of the shared directory prefix, up to and including its '/' */
    for (size_t i = 0; prev && prev[i] && prev[i] == path[i]; i++)
        if (path[i] == '/') common = i + 1;
    for (const char *s = strchr(path + common, '/'); s; s = strchr(s + 1, '/')) {
        char dir[PATH_MAX];
        if ((size_t)(s - path) >= sizeof dir) return cg_err_set(err, CG_EVERIFY, "bundle path %s is too long", path);
        memcpy(dir, path, (size_t)(s - path));
        dir[s - path] = 0;
        if (pack_dir(p->a, &p->o, dir, err) != 0) return -1;
    }
    return 0;
}

int cg_archive_pack_from(const char *mdata, size_t mlen, const cg_archive_source *src, const char *out_path, bool zstd,
                         cg_error *err) {
    cg_arena ar;
    cg_arena_init(&ar, 0);
    cg_bundle_manifest m;
    packer p = {.o.fd = -1};
    int rc = cg_bundle_manifest_parse(&ar, mdata, mlen, &m, err);
    if (rc == 0) {
        qsort(m.files, m.n_files, sizeof *m.files, walk_cmp);
        rc = pack_open(&p, out_path, zstd, &m, mdata, mlen, err);
    }
    for (size_t i = 0; rc == 0 && i < m.n_files; i++) {
        const cg_bundle_file *f = &m.files[i];
        rc = pack_parents(&p, i ? m.files[i - 1].path : NULL, f->path, err);
        void *h = rc == 0 ? src->open(src->ctx, f, err) : NULL;
        if (rc == 0 && !h) rc = cg_err_context(err, "open bundle file %s", f->path);
        if (rc == 0) {
            rc = pack_data(p.a, &p.o, f, p.chunk, src->read, h, err);
            src->close(h);
        }
    }
    if (rc == 0) rc = pack_finish(&p, out_path, err);
    pack_free(&p, rc);
    cg_arena_free(&ar);
    return rc;
}

/* ================= unpack ================= */

typedef struct unpack_in {
    int fd;
    bool zstd;
    ZSTD_DCtx *z;
    unsigned char *inbuf, *outbuf;
    size_t incap, outcap;
    ZSTD_inBuffer in;
    bool eof;
    size_t last_ret;     /* last ZSTD_decompressStream hint (0 = frame complete) */
    bool first_pending;  /* plain tar: bytes already in inbuf to hand out first */
    uint64_t total_out;
    uint64_t limit;
    uint64_t max_ratio, ratio_floor; /* zstd only; 0 = off */
    uint64_t compressed;             /* whole input when known (regular file), else 0 */
    uint64_t total_in;               /* bytes read from fd */
    const unsigned char *last;       /* the chunk produce() handed out last (total_out ends it) */
    size_t last_len;
    bool failed;                     /* msg, reason and limit are set */
    cg_reason reason;
    const char *limit_name;          /* err->limit of a payload_too_large */
    char msg[256];
} unpack_in;

static void in_fail(unpack_in *u, cg_reason reason, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void in_fail(unpack_in *u, cg_reason reason, const char *fmt, ...) {
    if (u->failed) return;
    u->failed = true;
    u->reason = reason;
    u->limit_name = reason == CG_R_PAYLOAD_TOO_LARGE ? "archive" : NULL;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(u->msg, sizeof u->msg, fmt, ap);
    va_end(ap);
}

static ssize_t read_some(int fd, void *buf, size_t n) {
    for (;;) {
        ssize_t r = read(fd, buf, n);
        if (r < 0 && errno == EINTR) continue;
        return r;
    }
}

/* The decompression-ratio trip-wire (zstd input only). */
static bool ratio_exceeded(unpack_in *u) {
    if (!u->max_ratio) return false;
    uint64_t in = u->compressed ? u->compressed : u->total_in;
    uint64_t cap = in > UINT64_MAX / u->max_ratio ? UINT64_MAX : in * u->max_ratio;
    if (cap < u->ratio_floor) cap = u->ratio_floor;
    if (u->total_out <= cap) return false;
    bool first = !u->failed;
    in_fail(u, CG_R_PAYLOAD_TOO_LARGE, "decompressed archive exceeds %llu times its compressed size of %llu bytes",
            (unsigned long long)u->max_ratio, (unsigned long long)in);
    if (first) u->limit_name = "decompression_ratio";
    return true;
}

/* Produces the next chunk of the decoded tar stream: >0 bytes, 0 at end, -1 on error. */
static ssize_t produce(unpack_in *u, const void **buf) {
    if (!u->zstd) {
        ssize_t r;
        if (u->first_pending) {
            u->first_pending = false;
            r = (ssize_t)u->in.size;
            *buf = u->inbuf;
        } else {
            r = read_some(u->fd, u->outbuf, u->outcap);
            *buf = u->outbuf;
            if (r < 0) {
                in_fail(u, CG_R_NONE, "read archive: %s", strerror(errno));
                return -1;
            }
        }
        u->total_out += (uint64_t)r;
        if (u->total_out > u->limit) {
            in_fail(u, CG_R_PAYLOAD_TOO_LARGE, "archive stream exceeds the limit of %llu bytes",
                    (unsigned long long)u->limit);
            return -1;
        }
        if (r > 0) {
            u->last = *buf;
            u->last_len = (size_t)r;
        }
        return r;
    }
    for (;;) {
        if (u->in.pos == u->in.size && !u->eof) {
            ssize_t r = read_some(u->fd, u->inbuf, u->incap);
            if (r < 0) {
                in_fail(u, CG_R_NONE, "read archive: %s", strerror(errno));
                return -1;
            }
            if (r == 0) u->eof = true;
            u->total_in += (uint64_t)r;
            u->in.src = u->inbuf;
            u->in.size = (size_t)r;
            u->in.pos = 0;
        }
        if (u->eof && u->in.pos == u->in.size) {
            if (u->last_ret != 0) {
                in_fail(u, CG_R_MALFORMED_ARCHIVE, "truncated zstd stream");
                return -1;
            }
            return 0;
        }
        ZSTD_outBuffer out = {u->outbuf, u->outcap, 0};
        size_t r = ZSTD_decompressStream(u->z, &out, &u->in);
        if (ZSTD_isError(r)) {
            ZSTD_ErrorCode c = ZSTD_getErrorCode(r);
            if (c == ZSTD_error_frameParameter_windowTooLarge || c == ZSTD_error_memory_allocation)
                in_fail(u, CG_R_PAYLOAD_TOO_LARGE, "zstd window exceeds the limit: %s", ZSTD_getErrorName(r));
            else
                in_fail(u, CG_R_MALFORMED_ARCHIVE, "corrupt zstd stream: %s", ZSTD_getErrorName(r));
            return -1;
        }
        u->last_ret = r;
        if (out.pos) {
            u->total_out += out.pos;
            if (ratio_exceeded(u)) return -1;
            if (u->total_out > u->limit) {
                in_fail(u, CG_R_PAYLOAD_TOO_LARGE, "decompressed archive exceeds the limit of %llu bytes",
                        (unsigned long long)u->limit);
                return -1;
            }
            *buf = u->outbuf;
            u->last = u->outbuf;
            u->last_len = out.pos;
            return (ssize_t)out.pos;
        }
    }
}

static la_ssize_t unpack_read_cb(struct archive *a, void *ctx, const void **buf) {
    unpack_in *u = ctx;
    ssize_t r = produce(u, buf);
    if (r < 0) archive_set_error(a, EIO, "%s", u->msg);
    return r;
}

/* ---- string set for duplicate detection (base/hmap.h) ---- */
typedef struct strset {
    char **key; /* owned copies, in insertion order */
    size_t n, cap;
    cg_hmap index;
} strset;

static bool strset_eq(const void *ctx, uint32_t id, const void *key) {
    return strcmp(((const strset *)ctx)->key[id], key) == 0;
}

/* Looks key up: true when present; *h and *at are where strset_add puts it. */
static bool strset_find(const strset *s, const char *key, size_t len, uint64_t *h, size_t *at) {
    *h = cg_hmap_mix(cg_hmap_hash_bytes(0, key, len), 0);
    *at = 0;
    return s->index.slot && cg_hmap_find(&s->index, *h, strset_eq, s, key, at) != CG_HMAP_NONE;
}

static bool strset_has(const strset *s, const char *key) {
    uint64_t h;
    size_t at;
    return strset_find(s, key, strlen(key), &h, &at);
}

/* 1 inserted, 0 already present, -1 out of memory. */
static int strset_add(strset *s, const char *key) {
    if (!s->index.slot) cg_hmap_init(&s->index, 128);
    size_t len = strlen(key), at;
    uint64_t h;
    if (strset_find(s, key, len, &h, &at)) return 0;
    char **grown = s->n < UINT32_MAX - 1 ? cg_try_grow(s->key, &s->cap, s->n + 1, sizeof *s->key) : NULL;
    if (!grown) return -1;
    s->key = grown;
    char *copy = cg_try_strndup(key, len);
    if (!copy) return -1;
    s->key[s->n] = copy;
    cg_hmap_put_at(&s->index, at, h, (uint32_t)s->n++);
    return 1;
}

static void strset_free(strset *s) {
    for (size_t i = 0; i < s->n; i++) cg_free(s->key[i]);
    cg_free(s->key);
    cg_hmap_free(&s->index);
}

typedef struct unpack_state {
    const char *staging;
    const cg_archive_limits *lim;
    cg_error *err;
    strset seen;
    strset dirs;             /* every directory made in staging (paths relative to it) */
    uint64_t entries;        /* headers read */
    uint64_t implicit_dirs;  /* directories made for a path before (or without) their own header */
    uint64_t total_bytes;
    unsigned char *chunk;
} unpack_state;

/* Sets the error with its reason; a size limit is named "archive". */
static int st_fail(unpack_state *s, cg_reason reason, cg_errcode code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int st_fail(unpack_state *s, cg_reason reason, cg_errcode code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    cg_err_vset(s->err, code, fmt, ap);
    va_end(ap);
    cg_err_reason(s->err, reason);
    if (s->err && reason == CG_R_PAYLOAD_TOO_LARGE) s->err->limit = "archive";
    return -1;
}

/* The error the decoded-stream reader recorded, as the unpack's error. */
static int st_fail_input(unpack_state *s, const unpack_in *u) {
    cg_errcode code = u->reason == CG_R_PAYLOAD_TOO_LARGE ? CG_ELIMIT : u->reason == CG_R_NONE ? CG_EIO : CG_EPARSE;
    st_fail(s, u->reason, code, "%s", u->msg);
    if (s->err) s->err->limit = u->limit_name;
    return -1;
}

/* Normalizes an entry name into out: strips one leading "./" and a trailing
 * "/" (directories). Returns 0 (root entry "."), 1 (a path), -1 (unsafe), -2
 * (more than CG_ARCHIVE_MAX_DEPTH components). */
static int normalize_name(const char *name, bool is_dir, char *out, size_t outsz) {
    if (!strncmp(name, "./", 2)) name += 2;
    size_t n = strlen(name);
    if (is_dir && n && name[n - 1] == '/') n--;
    if (n == 0 || (n == 1 && name[0] == '.')) return is_dir ? 0 : -1;
    if (n >= outsz) return -1;
    memcpy(out, name, n);
    out[n] = '\0';
    if (!cg_bundle_path_is_safe(out)) return -1;
    unsigned depth = 0;
    for (const char *p = out; *p;) {
        const char *sl = strchr(p, '/');
        size_t len = sl ? (size_t)(sl - p) : strlen(p);
        if (len > NAME_MAX) return -1;
        if (++depth > CG_ARCHIVE_MAX_DEPTH) return -2;
        if (!sl) break;
        p = sl + 1;
    }
    return 1;
}

/* Over max_entries: headers, plus the directories made without a header of their own. */
static int too_many_entries(unpack_state *s) {
    return st_fail(s, CG_R_PAYLOAD_TOO_LARGE, CG_ELIMIT, "archive has more than %llu entries%s",
                   (unsigned long long)s->lim->max_entries,
                   s->implicit_dirs ? ", counting the directories its paths create" : "");
}

/* Makes one directory of an entry's path (path = staging/rel cut after it,
 * dir = its part below staging) unless it was made before. A directory made
 * for an entry below it, before any header of its own, counts against
 * max_entries with the headers: without that, 100,000 entries under chains of
 * fresh directories would create millions of them. */
static int make_dir(unpack_state *s, char *path, const char *dir, const char *rel, bool own_header) {
    int added = strset_add(&s->dirs, dir); /* a failure below fails the whole unpack */
    if (added < 0) return st_fail(s, CG_R_NONE, CG_ENOMEM, "out of memory");
    if (added == 0) return 0;
    if (mkdir(path, 0755) != 0) {
        struct stat st;
        if (errno != EEXIST || lstat(path, &st) != 0 || !S_ISDIR(st.st_mode))
            return st_fail(s, CG_R_MALFORMED_ARCHIVE, CG_EPARSE, "archive path %s is both a file and a directory", rel);
    } else if (!own_header && s->entries + ++s->implicit_dirs > s->lim->max_entries) {
        return too_many_entries(s);
    }
    return 0;
}

/* Creates every directory of rel (or its parents only) inside the staging
 * dir. An entry whose directory was made before costs one lookup, so entries
 * in a deep directory do not re-walk it (every mkdir of a d-deep path walks d
 * components: 20,000 files 1,000 levels down took minutes). */
static int make_dirs(unpack_state *s, const char *rel, bool include_last) {
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/%s", s->staging, rel);
    if (n < 0 || (size_t)n >= sizeof path)
        return st_fail(s, CG_R_UNSAFE_PATH, CG_EVERIFY, "archive entry path is too long: %s", rel);
    char *dir = path + strlen(s->staging) + 1;
    char *last = include_last ? dir + strlen(dir) : strrchr(dir, '/');
    if (!last || last == dir) return 0;
    char c = *last;
    *last = '\0';
    bool known = strset_has(&s->dirs, dir);
    *last = c;
    if (known) return 0;
    for (char *p = dir;; p++) {
        bool end = p == last;
        if (*p == '/' || end) {
            c = *p;
            *p = '\0';
            int rc = make_dir(s, path, dir, rel, end && include_last);
            *p = c;
            if (rc != 0) return rc;
        }
        if (end) return 0;
    }
}

static int extract_file(unpack_state *s, struct archive *a, const char *rel, struct archive_entry *e) {
    if (archive_entry_size_is_set(e)) {
        la_int64_t sz = archive_entry_size(e);
        if (sz < 0) return st_fail(s, CG_R_MALFORMED_ARCHIVE, CG_EPARSE, "archive entry %s has a negative size", rel);
        if ((uint64_t)sz > s->lim->max_file_bytes)
            return st_fail(s, CG_R_PAYLOAD_TOO_LARGE, CG_ELIMIT,
                           "archive entry %s is larger than the limit of %llu bytes", rel,
                           (unsigned long long)s->lim->max_file_bytes);
        if ((uint64_t)sz > s->lim->max_total_bytes - s->total_bytes)
            return st_fail(s, CG_R_PAYLOAD_TOO_LARGE, CG_ELIMIT, "archive content exceeds the limit of %llu bytes",
                           (unsigned long long)s->lim->max_total_bytes);
    }
    if (make_dirs(s, rel, false) != 0) return -1;
    char path[PATH_MAX];
    int pn = snprintf(path, sizeof path, "%s/%s", s->staging, rel);
    if (pn < 0 || (size_t)pn >= sizeof path)
        return st_fail(s, CG_R_UNSAFE_PATH, CG_EVERIFY, "archive entry path is too long: %s", rel);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        if (errno == EEXIST)
            return st_fail(s, CG_R_MALFORMED_ARCHIVE, CG_EPARSE, "archive path %s is both a file and a directory", rel);
        return st_fail(s, CG_R_NONE, cg_errcode_of_errno(errno), "create %s: %s", path, strerror(errno));
    }
    uint64_t written = 0;
    for (;;) {
        la_ssize_t r = archive_read_data(a, s->chunk, IO_CHUNK);
        if (r == 0) break;
        if (r < 0) {
            close(fd);
            return -2; /* reader error: classified by the caller */
        }
        written += (uint64_t)r;
        if (written > s->lim->max_file_bytes || s->total_bytes + written > s->lim->max_total_bytes) {
            close(fd);
            return st_fail(s, CG_R_PAYLOAD_TOO_LARGE, CG_ELIMIT, "archive content exceeds the size limits at %s", rel);
        }
        if (write_all(fd, s->chunk, (size_t)r) != 0) {
            int en = errno;
            close(fd);
            return st_fail(s, CG_R_NONE, cg_errcode_of_errno(en), "write %s: %s", path, strerror(en));
        }
    }
    s->total_bytes += written;
    if ((!s->lim->scratch && cg_fault_fsync(fd) != 0) || close(fd) != 0)
        return st_fail(s, CG_R_NONE, cg_errcode_of_errno(errno), "sync %s: %s", path, strerror(errno));
    return 0;
}

/* fsyncs every directory below (and including) path. */
static int sync_dirs(const char *path, cg_error *err) {
    if (cg_fsync_path(path, err) != 0) return -1;
    DIR *d = opendir(path);
    if (!d) return cg_err_set(err, CG_EIO, "open %s: %s", path, strerror(errno));
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char *child = cg_path_join(path, de->d_name);
        struct stat st;
        if (child && lstat(child, &st) == 0 && S_ISDIR(st.st_mode)) rc = sync_dirs(child, err);
        cg_free(child);
    }
    closedir(d);
    return rc;
}

/* The offset of the first non-zero byte of n bytes at p, or n. */
static size_t first_nonzero(const unsigned char *p, size_t n) {
    size_t i = 0;
    while (i < n && p[i] == 0) i++;
    return i;
}

/* After the end-of-archive marker: reads the rest of the decoded stream (so
 * that truncated or corrupt zstd input surfaces) and refuses any byte that is
 * not zero. Zeros are a tar's record padding; anything else — a second
 * archive appended, or a second zstd frame holding one — is content that
 * another reader (`tar --ignore-zeros`) would extract and this unpack did not
 * check. The bytes libarchive was handed but did not consume lie in the last
 * chunk produce() returned (libarchive asks for a chunk only when it needs
 * bytes past the current one). */
static int check_trailer(unpack_state *s, unpack_in *u, struct archive *a) {
    la_int64_t used = archive_filter_bytes(a, 0);
    uint64_t start = u->total_out - u->last_len;
    if (used < 0 || (uint64_t)used > u->total_out || (uint64_t)used < start)
        return st_fail(s, CG_R_MALFORMED_ARCHIVE, CG_EPARSE, "malformed archive: its end could not be located");
    uint64_t at = (uint64_t)used;
    size_t skip = (size_t)(at - start);
    size_t nz = u->last ? first_nonzero(u->last + skip, u->last_len - skip) : 0;
    const void *b;
    ssize_t r = 0;
    while (nz == u->last_len - skip && (r = produce(u, &b)) > 0) {
        at = u->total_out - (uint64_t)r;
        skip = 0;
        nz = first_nonzero(b, (size_t)r);
    }
    if (r < 0) return st_fail_input(s, u);
    if (nz < u->last_len - skip)
        return st_fail(s, CG_R_MALFORMED_ARCHIVE, CG_EPARSE,
                       "malformed archive: data after the end-of-archive marker at byte %llu of the tar stream",
                       (unsigned long long)(at + nz));
    return 0;
}

/* Runs the archive through libarchive into s->staging. */
static int unpack_entries(unpack_state *s, unpack_in *u) {
    struct archive *a = archive_read_new();
    if (!a) return st_fail(s, CG_R_NONE, CG_ENOMEM, "out of memory");
    archive_read_support_format_tar(a);
    int rc = -1;
    if (archive_read_open(a, u, NULL, unpack_read_cb, NULL) != ARCHIVE_OK) goto reader_error;
    for (;;) {
        struct archive_entry *e;
        int r = archive_read_next_header(a, &e);
        if (r == ARCHIVE_EOF) break;
        /* ARCHIVE_WARN: e.g. a UTF-8 pax name that the process locale cannot
         * represent; the entry is complete and the UTF-8 name is used below */
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN) goto reader_error;
        if (++s->entries + s->implicit_dirs > s->lim->max_entries) {
            too_many_entries(s);
            goto out;
        }
        /* UTF-8 (pax) name when libarchive can provide it, else the raw header bytes */
        const char *name = archive_entry_pathname_utf8(e);
        if (!name) name = archive_entry_pathname(e);
        if (!name) {
            st_fail(s, CG_R_MALFORMED_ARCHIVE, CG_EPARSE, "archive entry without a path");
            goto out;
        }
        /* control characters (newlines, escapes) in a name would forge log lines and
         * terminal output wherever the name is echoed: refuse, without echoing it */
        for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
            if (*c < 0x20 || *c == 0x7f) {
                st_fail(s, CG_R_UNSAFE_PATH, CG_EVERIFY,
                        "unsafe path in archive: entry name contains control character 0x%02x", *c);
                goto out;
            }
        }
        /* a name that is not UTF-8 (Latin-1 bytes, overlongs, surrogates) can never be a
         * declared bundle path (bundle.json is JSON) and would reach messages and logs as
         * raw bytes (RELIABILITY.md A22): refuse, without echoing it */
        if (!cg_utf8_valid(name, strlen(name))) {
            st_fail(s, CG_R_UNSAFE_PATH, CG_EVERIFY, "unsafe path in archive: entry name is not valid UTF-8");
            goto out;
        }
        mode_t type = archive_entry_filetype(e);
        bool is_dir = type == AE_IFDIR;
        char rel[PATH_MAX];
        int nr = normalize_name(name, is_dir, rel, sizeof rel);
        if (nr == -2) { /* named by its first 200 bytes at most, cut between characters */
            size_t shown = cg_utf8_valid_prefix(name, strnlen(name, 200));
            st_fail(s, CG_R_UNSAFE_PATH, CG_EVERIFY, "archive entry path has more than %d components: %.*s%s",
                    CG_ARCHIVE_MAX_DEPTH, (int)shown, name, name[shown] ? "…" : "");
            goto out;
        }
        if (nr < 0) {
            st_fail(s, CG_R_UNSAFE_PATH, CG_EVERIFY, "unsafe path in archive: %s", name);
            goto out;
        }
        /* the *_utf8/_w getters too: the plain getter returns NULL when the
         * target name cannot be converted to the current locale */
        if (archive_entry_hardlink(e) || archive_entry_hardlink_utf8(e) || archive_entry_hardlink_w(e)) {
            st_fail(s, CG_R_SPECIAL_FILE, CG_EVERIFY, "hard links are not allowed in archives: %s", name);
            goto out;
        }
        if (type == AE_IFLNK || archive_entry_symlink(e) || archive_entry_symlink_utf8(e) || archive_entry_symlink_w(e)) {
            st_fail(s, CG_R_SPECIAL_FILE, CG_EVERIFY, "symbolic links are not allowed in archives: %s", name);
            goto out;
        }
        if (type != AE_IFREG && type != AE_IFDIR) {
            st_fail(s, CG_R_SPECIAL_FILE, CG_EVERIFY, "special files are not allowed in archives: %s", name);
            goto out;
        }
        if (nr == 0) continue; /* the root directory entry "." */
        int added = strset_add(&s->seen, rel);
        if (added < 0) {
            st_fail(s, CG_R_NONE, CG_ENOMEM, "out of memory");
            goto out;
        }
        if (added == 0) {
            st_fail(s, CG_R_MALFORMED_ARCHIVE, CG_EPARSE, "duplicate archive entry: %s", rel);
            goto out;
        }
        if (is_dir) {
            if (make_dirs(s, rel, true) != 0) goto out;
            continue;
        }
        int xr = extract_file(s, a, rel, e);
        if (xr == -2) goto reader_error;
        if (xr != 0) goto out;
    }
    if (check_trailer(s, u, a) != 0) goto out;
    rc = 0;
    goto out;
reader_error:
    if (u->failed)
        st_fail_input(s, u);
    else
        st_fail(s, CG_R_MALFORMED_ARCHIVE, CG_EPARSE, "malformed archive: %s",
                archive_error_string(a) ? archive_error_string(a) : "unreadable tar data");
out:
    archive_read_free(a);
    return rc;
}

int cg_archive_unpack_fd(int fd, const char *dest, const cg_archive_limits *lim_in, cg_error *err) {
    cg_archive_limits lim;
    if (lim_in) lim = *lim_in;
    else cg_archive_limits_default(&lim);
    if (!lim.max_stream_bytes) lim.max_stream_bytes = lim.max_total_bytes + 1536 * lim.max_entries + (1u << 20);
    if (cg_path_exists(dest)) return cg_err_set(err, CG_EEXIST, "unpack destination already exists: %s", dest);
    char parent[PATH_MAX];
    cg_path_parent(dest, parent, sizeof parent);
    if (cg_mkdir_p(parent, err) != 0) return -1;
    char *staging = sibling_temp(dest, ".unpack");
    if (!staging) return cg_err_set(err, CG_ENOMEM, "out of memory");
    if (mkdir(staging, 0755) != 0) {
        int rc = cg_err_set(err, CG_EIO, "create %s: %s", staging, strerror(errno));
        cg_free(staging);
        return rc;
    }
    unpack_in u = {.fd = fd, .limit = lim.max_stream_bytes, .incap = ZSTD_DStreamInSize(),
                   .outcap = ZSTD_DStreamOutSize()};
    if (u.incap < 65536) u.incap = 65536;
    unpack_state s = {.staging = staging, .lim = &lim, .err = err};
    u.inbuf = malloc(u.incap);
    u.outbuf = malloc(u.outcap);
    s.chunk = malloc(IO_CHUNK);
    int rc = -1;
    if (!u.inbuf || !u.outbuf || !s.chunk) {
        st_fail(&s, CG_R_NONE, CG_ENOMEM, "out of memory");
        goto out;
    }
    /* peek for the zstd magic */
    size_t have = 0;
    while (have < 4) {
        ssize_t r = read_some(fd, u.inbuf + have, u.incap - have);
        if (r < 0) {
            st_fail(&s, CG_R_NONE, CG_EIO, "read archive: %s", strerror(errno));
            goto out;
        }
        if (r == 0) break;
        have += (size_t)r;
    }
    u.in.src = u.inbuf;
    u.in.size = have;
    u.in.pos = 0;
    u.total_in = have;
    u.max_ratio = lim.max_ratio;
    u.ratio_floor = lim.ratio_floor_bytes;
    struct stat ist;
    off_t here = lseek(fd, 0, SEEK_CUR);
    if (u.max_ratio && here >= 0 && fstat(fd, &ist) == 0 && S_ISREG(ist.st_mode) && ist.st_size >= here)
        u.compressed = (uint64_t)(ist.st_size - here) + have;
    u.zstd = have >= 4 && u.inbuf[0] == 0x28 && u.inbuf[1] == 0xB5 && u.inbuf[2] == 0x2F && u.inbuf[3] == 0xFD;
    if (u.zstd) {
        u.z = ZSTD_createDCtx();
        if (!u.z) {
            st_fail(&s, CG_R_NONE, CG_ENOMEM, "out of memory");
            goto out;
        }
        ZSTD_DCtx_setParameter(u.z, ZSTD_d_windowLogMax, lim.window_log_max);
        u.last_ret = 1;
    } else {
        u.first_pending = have > 0;
        if (have == 0) {
            st_fail(&s, CG_R_MALFORMED_ARCHIVE, CG_EPARSE, "malformed archive: empty input");
            goto out;
        }
    }
    if (unpack_entries(&s, &u) != 0) goto out;
    if (!lim.scratch && sync_dirs(staging, err) != 0) goto out;
    if (cg_fault_renameat2(AT_FDCWD, staging, AT_FDCWD, dest, RENAME_NOREPLACE) != 0) {
        int en = errno;
        if (en == EEXIST)
            st_fail(&s, CG_R_NONE, CG_EEXIST, "unpack destination already exists: %s", dest);
        else
            st_fail(&s, CG_R_NONE, cg_errcode_of_errno(en), "rename %s to %s: %s", staging, dest, strerror(en));
        goto out;
    }
    if (!lim.scratch && cg_fsync_path(parent, err) != 0)
        goto out; /* dest exists but its parent entry is not durable: report, keep data */
    rc = 0;
out:
    if (rc != 0) cg_rm_rf(staging);
    ZSTD_freeDCtx(u.z);
    cg_free(u.inbuf);
    cg_free(u.outbuf);
    cg_free(s.chunk);
    strset_free(&s.seen);
    strset_free(&s.dirs);
    cg_free(staging);
    return rc;
}

int cg_archive_unpack(const char *archive_path, const char *dest, const cg_archive_limits *lim, cg_error *err) {
    int fd = open(archive_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return cg_err_set(err, CG_EIO, "open %s: %s", archive_path, strerror(errno));
    int rc = cg_archive_unpack_fd(fd, dest, lim, err);
    close(fd);
    return rc;
}
