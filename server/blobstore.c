/* blobstore.c — content-addressed blob stores keyed by SHA-256.
 *
 * fs (default): <data>/blobs/sha256/ab/<hex>, zstd-compressed at rest in the
 *   seekable form of blobfmt.c (plain when incompressible; files of older
 *   servers are plain and read as they are). A put writes a temp file in <data>/blobs/tmp, fsyncs
 *   it, renames it into place and fsyncs the directory; an existing blob of the
 *   right plain size is kept (dedup) and its mtime refreshed, so the janitor's
 *   grace period protects it while the upload commits.
 * pg: the same at-rest form (zstd frames, or the plain bytes behind a raw
 *   header: always framed) as chunked bytea rows (pg_blobs holds the plain
 *   size; pg_blob_chunks the form), written inside the ingest transaction, so
 *   a failed upload leaves no orphan; for several server instances that share
 *   no filesystem. Chunks of older servers (plain bytes) are still read.
 *   Their statements are store_blobs.c's.
 * Blobs are named only by digest: archive paths never reach the filesystem. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fs.h"
#include "srv_store.h"

#define CHUNK (1u << 20)

/* /metrics totals of the fs store, cached (srv_blob_totals_get); a put that
 * writes a new blob makes the next read walk again. */
static pthread_mutex_t totals_mu = PTHREAD_MUTEX_INITIALIZER;
static srv_blob_totals totals_cache;
static time_t totals_at;
static atomic_bool totals_stale; /* set by puts, which never wait for a walk */

/* Blobs are 0600 in 0700 directories: only the server's user reads them (an
 * older store's 0755 directories are tightened here; without search permission
 * on the root nothing below is reachable whatever its own mode). */
static int private_dir(const char *dir, cg_error *err) {
    if (chmod(dir, 0700) != 0) return cg_err_set(err, CG_EIO, "chmod %s: %s", dir, strerror(errno));
    return 0;
}

int srv_blob_init(srv_blobstore *b, srv_blob_kind kind, const char *data_dir, cg_error *err) {
    memset(b, 0, sizeof *b);
    b->kind = kind;
    snprintf(b->root, sizeof b->root, "%s/blobs", data_dir);
    char p[PATH_MAX + 16];
    snprintf(p, sizeof p, "%s/tmp", b->root);
    if (cg_mkdir_p(p, err) < 0 || private_dir(p, err) < 0 || private_dir(b->root, err) < 0) return -1;
    if (kind == SRV_BLOB_FS) {
        snprintf(p, sizeof p, "%s/sha256", b->root);
        if (cg_mkdir_p(p, err) < 0 || private_dir(p, err) < 0) return -1;
    }
    return 0;
}

void srv_blob_path(const srv_blobstore *b, const char *hex, char *out, size_t outsz) {
    snprintf(out, outsz, "%s/sha256/%.2s/%s", b->root, hex, hex);
}

uint64_t srv_free_bytes(const char *path) {
    struct statvfs sv;
    if (statvfs(path, &sv) != 0) return UINT64_MAX;
    return (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
}

/* Plain size of the blob file at path, UINT64_MAX when there is none. */
static uint64_t stored_plain_size(const char *path) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return UINT64_MAX;
    srv_blob_view v;
    uint64_t n = srv_blob_view_open(fd, &v, NULL) == 0 ? v.plain_size : UINT64_MAX;
    close(fd);
    return n;
}

/* The source: a descriptor the caller opened (src_fd ≥ 0, read from its start)
 * or the file at src. */
static int open_src(const char *src, int src_fd) {
    if (src_fd < 0) return open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    int fd = lseek(src_fd, 0, SEEK_SET) == 0 ? fcntl(src_fd, F_DUPFD_CLOEXEC, 0) : -1;
    return fd;
}

static int put_fs(srv_blobstore *b, const char *src, int src_fd, const char *hex, uint64_t size, bool *enospc,
                  cg_error *err) {
    char dst[PATH_MAX + 128], dir[PATH_MAX + 64], tmp[PATH_MAX + 128];
    srv_blob_path(b, hex, dst, sizeof dst);
    if (stored_plain_size(dst) == size) {
        utimensat(AT_FDCWD, dst, NULL, 0); /* restart the orphan grace period */
        return 0;
    }
    snprintf(dir, sizeof dir, "%s/sha256/%.2s", b->root, hex);
    bool new_dir = mkdir(dir, 0700) == 0;
    if (!new_dir && errno != EEXIST) return cg_err_set(err, CG_EIO, "mkdir %s: %s", dir, strerror(errno));
    snprintf(tmp, sizeof tmp, "%s/tmp/%s.XXXXXX", b->root, hex);
    int out = mkstemp(tmp);
    if (out < 0) {
        if (errno == ENOSPC || errno == EDQUOT) *enospc = true;
        return cg_err_set(err, CG_EIO, "create blob temp file: %s", strerror(errno));
    }
    int in = open_src(src, src_fd);
    uint64_t stored = 0;
    int rc = in < 0 ? cg_err_set(err, CG_EIO, "open %s: %s", src, strerror(errno))
                    : srv_blob_encode(in, out, size, SRV_BLOB_ENC_COMPRESS, &stored, enospc, err);
    if (in >= 0) close(in);
    if (rc == 0 && fchmod(out, 0600) != 0) rc = cg_err_set(err, CG_EIO, "fchmod: %s", strerror(errno));
    if (rc == 0 && cg_fault_fsync(out) != 0) {
        if (errno == ENOSPC || errno == EDQUOT) *enospc = true;
        rc = cg_err_set(err, CG_EIO, "fsync blob: %s", strerror(errno));
    }
    if (close(out) != 0 && rc == 0) {
        if (errno == ENOSPC || errno == EDQUOT) *enospc = true;
        rc = cg_err_set(err, CG_EIO, "close blob: %s", strerror(errno));
    }
    if (rc == 0 && cg_fault_rename(tmp, dst) != 0) rc = cg_err_set(err, cg_errcode_of_errno(errno), "rename blob: %s", strerror(errno));
    if (rc != 0) {
        unlink(tmp);
        return -1;
    }
    atomic_store(&totals_stale, true);
    if (cg_fsync_path(dir, err) < 0) return -1;
    if (new_dir) {
        char parent[PATH_MAX + 16];
        snprintf(parent, sizeof parent, "%s/sha256", b->root);
        if (cg_fsync_path(parent, err) < 0) return -1;
    }
    return 0;
}

/* Reads up to CHUNK bytes (fewer only at the end). */
static int read_chunk(int fd, char *buf, size_t *got, cg_error *err) {
    *got = 0;
    while (*got < CHUNK) {
        ssize_t n = read(fd, buf + *got, CHUNK - *got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return cg_err_set(err, CG_EIO, "read blob: %s", strerror(errno));
        if (n == 0) break;
        *got += (size_t)n;
    }
    return 0;
}

/* The blob form of the source (srv_blob_encode, compressed and always framed)
 * in an unlinked temp file of the store's tmp/, rewound; -1 with err. */
static int encode_temp(srv_blobstore *b, const char *src, int src_fd, uint64_t size, cg_error *err) {
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s/tmp/pg-put-XXXXXX", b->root);
    int out = mkstemp(tmp);
    if (out < 0) return cg_err_set(err, CG_EIO, "create blob temp file: %s", strerror(errno));
    unlink(tmp);
    int in = open_src(src, src_fd);
    uint64_t stored = 0;
    bool enospc = false;
    int rc = in < 0 ? cg_err_set(err, CG_EIO, "open %s: %s", src, strerror(errno))
                    : srv_blob_encode(in, out, size, SRV_BLOB_ENC_COMPRESS | SRV_BLOB_ENC_FRAMED, &stored, &enospc, err);
    if (in >= 0) close(in);
    if (rc == 0 && lseek(out, 0, SEEK_SET) != 0) rc = cg_err_set(err, CG_EIO, "seek: %s", strerror(errno));
    if (rc != 0) {
        close(out);
        return -1;
    }
    return out;
}

/* pg: the blob form (zstd frames, or the plain bytes behind a raw header)
 * stored as CHUNK-byte bytea rows; pg_blobs.bytes is the plain size. */
static int put_pg(srv_blobstore *b, PGconn *c, const char *src, int src_fd, const char *hex, uint64_t size,
                  cg_error *err) {
    bool fresh;
    if (srv_store_pg_blob_claim(c, hex, size, &fresh, err) < 0) return -1;
    if (!fresh) return 0;
    int in = encode_temp(b, src, src_fd, size, err);
    if (in < 0) return -1;
    char *buf = malloc(CHUNK);
    int rc = buf ? 0 : cg_err_set(err, CG_ENOMEM, "out of memory");
    for (int idx = 0; rc == 0; idx++) {
        size_t got = 0;
        if ((rc = read_chunk(in, buf, &got, err)) != 0 || (got == 0 && idx > 0)) break;
        if (srv_store_pg_blob_chunk_put(c, hex, idx, buf, got, err) < 0) rc = -1;
        if (got < CHUNK) break;
    }
    cg_free(buf);
    close(in);
    return rc;
}

int srv_blob_put(srv_blobstore *b, PGconn *conn, const char *src, const char *hex, uint64_t size, bool *enospc,
                 cg_error *err) {
    return srv_blob_put_fd(b, conn, -1, src, hex, size, enospc, err);
}

int srv_blob_put_fd(srv_blobstore *b, PGconn *conn, int src_fd, const char *src, const char *hex, uint64_t size,
                    bool *enospc, cg_error *err) {
    *enospc = false;
    int rc = b->kind == SRV_BLOB_FS ? put_fs(b, src, src_fd, hex, size, enospc, err)
                                    : put_pg(b, conn, src, src_fd, hex, size, err);
    if (rc != 0 && err && err->code == CG_ENOSPC) *enospc = true; /* rename or directory sync found the disk full */
    return rc;
}

static int write_all(int fd, const char *d, size_t n, cg_error *err) {
    for (size_t off = 0; off < n;) {
        ssize_t w = cg_fault_write(fd, d + off, n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return cg_err_set(err, CG_EIO, "write: %s", strerror(errno));
        off += (size_t)w;
    }
    return 0;
}

/* Appends the chunks of blob hex to fd in order. The first one decides the
 * form: *framed when it starts with a blob header of plain size `plain` (what
 * this server writes), else plain chunks of an older server, which go behind
 * SRV_BLOB_HDR placeholder bytes for srv_blob_raw_seal. *total: chunk bytes. */
static int copy_chunks(PGconn *c, const char *hex, int fd, uint64_t plain, bool *framed, uint64_t *total, cg_error *err) {
    static const char zero[SRV_BLOB_HDR];
    *total = 0;
    for (int idx = 0;; idx++) {
        PGresult *x = srv_store_pg_blob_chunk(c, hex, idx, err);
        if (!x) return -1;
        int rows = PQntuples(x);
        const char *d = rows ? PQgetvalue(x, 0, 0) : "";
        size_t n = rows ? (size_t)PQgetlength(x, 0, 0) : 0;
        if (idx == 0) *framed = srv_blob_header_claims(d, n, plain);
        int rc = idx == 0 && !*framed ? write_all(fd, zero, sizeof zero, err) : 0;
        if (rc == 0) rc = write_all(fd, d, n, err);
        PQclear(x);
        if (rc != 0) return -1;
        if (!rows) return 0;
        *total += n;
    }
}

/* pg: the chunks copied into an unlinked temp file, a blob file that
 * srv_blob_view_open reads: the stored form itself, or the plain bytes of an
 * older server's blob made a raw blob file. */
static int open_pg(srv_blobstore *b, PGconn *c, const char *hex, uint64_t *size, bool *missing, cg_error *err) {
    bool exists;
    uint64_t plain = 0;
    if (srv_store_pg_blob_exists(c, hex, &exists, &plain, err) < 0) return -1;
    if (!exists) {
        *missing = true;
        return cg_err_set(err, CG_EIO, "blob %s is missing from the store", hex);
    }
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s/tmp/read-XXXXXX", b->root);
    int fd = mkstemp(tmp);
    if (fd < 0) return cg_err_set(err, CG_EIO, "temp file: %s", strerror(errno));
    unlink(tmp);
    bool framed = false;
    uint64_t total = 0;
    srv_blob_view v;
    int rc = copy_chunks(c, hex, fd, plain, &framed, &total, err);
    if (rc == 0 && !framed) {
        rc = srv_blob_raw_seal(fd, total, err);
        *size = total;
    } else if (rc == 0) {
        rc = srv_blob_view_open(fd, &v, err);
        if (rc == 0 && (v.form == SRV_BLOBF_PLAIN || v.plain_size != plain))
            rc = cg_err_set(err, CG_EIO, "stored blob %s is damaged: its frames disagree with its header", hex);
        *size = plain;
    }
    if (rc != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int srv_blob_open(srv_blobstore *b, PGconn *conn, const char *hex, uint64_t *size, bool *missing, cg_error *err) {
    *missing = false;
    if (b->kind == SRV_BLOB_PG) return open_pg(b, conn, hex, size, missing, err);
    char path[PATH_MAX + 128];
    srv_blob_path(b, hex, path, sizeof path);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        *missing = errno == ENOENT;
        return cg_err_set(err, CG_EIO, "blob %s: %s", hex, strerror(errno));
    }
    srv_blob_view v;
    if (srv_blob_view_open(fd, &v, err) < 0) {
        close(fd);
        return -1;
    }
    *size = v.plain_size;
    return fd;
}

/* Calls each(ctx, bytes, n) over the plain bytes of an open blob in order;
 * returns the count read or -1 (damaged, unreadable, or each failed). */
static int64_t for_each_chunk(int fd, int (*each)(void *, const char *, size_t), void *ctx, cg_error *err) {
    srv_blob_view v;
    if (srv_blob_view_open(fd, &v, err) < 0) return -1;
    srv_blob_cursor *c = srv_blob_cursor_new(&v);
    char *buf = malloc(CHUNK);
    int64_t total = c && buf ? 0 : cg_err_set(err, CG_ENOMEM, "out of memory");
    while (total >= 0) {
        ssize_t n = srv_blob_pread(c, buf, CHUNK, (uint64_t)total, err);
        if (n < 0) total = -1;
        if (n <= 0) break;
        if (each(ctx, buf, (size_t)n) < 0) total = -1;
        else total += n;
    }
    cg_free(buf);
    srv_blob_cursor_free(c);
    return total;
}

typedef struct mem_sink {
    char *buf;
    size_t len, cap;
} mem_sink;

static int to_mem(void *ctx, const char *p, size_t n) {
    mem_sink *m = ctx;
    if (n > m->cap - m->len) return -1;
    memcpy(m->buf + m->len, p, n);
    m->len += n;
    return 0;
}

char *srv_blob_read(srv_blobstore *b, PGconn *conn, const char *hex, size_t max, size_t *len, cg_error *err) {
    uint64_t size;
    bool missing;
    int fd = srv_blob_open(b, conn, hex, &size, &missing, err);
    if (fd < 0) return NULL;
    if (size > max) {
        close(fd);
        cg_err_set(err, CG_ELIMIT, "blob %s is larger than %zu bytes", hex, max);
        return NULL;
    }
    mem_sink m = {malloc((size_t)size + 1), 0, (size_t)size};
    int64_t got = m.buf ? for_each_chunk(fd, to_mem, &m, err) : cg_err_set(err, CG_ENOMEM, "out of memory");
    close(fd);
    if (got != (int64_t)size) {
        cg_free(m.buf);
        if (got >= 0) cg_err_set(err, CG_EIO, "short read of blob %s", hex);
        return NULL;
    }
    m.buf[m.len] = 0;
    *len = m.len;
    return m.buf;
}

static int to_sha(void *ctx, const char *p, size_t n) {
    cg_sha256_update(ctx, p, n);
    return 0;
}

int srv_blob_hash(srv_blobstore *b, PGconn *conn, const char *hex, char got[65], uint64_t *plain, const char **form,
                  bool *missing, cg_error *err) {
    uint64_t size;
    int fd = srv_blob_open(b, conn, hex, &size, missing, err);
    if (fd < 0) return -1;
    srv_blob_view v;
    *form = srv_blob_view_open(fd, &v, NULL) == 0 && v.form == SRV_BLOBF_ZSTD ? "zstd"
            : v.form == SRV_BLOBF_RAW                                        ? "raw"
                                                                             : "plain";
    cg_sha256 h;
    cg_sha256_init(&h);
    int64_t n = for_each_chunk(fd, to_sha, &h, err);
    close(fd);
    unsigned char dg[32];
    cg_sha256_final(&h, dg);
    cg_hex(dg, 32, got);
    if (n < 0) snprintf(got, 65, "%s", "unreadable"); /* a damaged frame: the digest cannot match */
    *plain = n < 0 ? 0 : (uint64_t)n;
    return 0;
}

typedef struct fd_out {
    int fd;
    cg_error *err;
} fd_out;

/* A scratch copy for a derived view (not durable data): plain write(2), outside
 * fault injection like the hard link it replaces. */
static int to_fd(void *ctx, const char *p, size_t n) {
    fd_out *o = ctx;
    for (size_t off = 0; off < n;) {
        ssize_t w = write(o->fd, p + off, n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return cg_err_set(o->err, cg_errcode_of_errno(errno), "write: %s", strerror(errno));
        off += (size_t)w;
    }
    return 0;
}

int srv_blob_place(srv_blobstore *b, int fd, const char *hex, const char *dst, cg_error *err) {
    srv_blob_view v;
    int rc = srv_blob_view_open(fd, &v, err);
    uint64_t size = v.plain_size;
    if (rc == 0 && b->kind == SRV_BLOB_FS && v.form == SRV_BLOBF_PLAIN) {
        char src[PATH_MAX + 128];
        srv_blob_path(b, hex, src, sizeof src);
        if (link(src, dst) == 0) {
            close(fd);
            return 0;
        }
    }
    fd_out o = {open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600), err};
    if (rc == 0 && o.fd < 0) rc = cg_err_set(err, CG_EIO, "create %s: %s", dst, strerror(errno));
    int64_t n = rc == 0 ? for_each_chunk(fd, to_fd, &o, err) : -1;
    if (rc == 0 && n < 0) rc = -1;
    else if (rc == 0 && (uint64_t)n != size) rc = cg_err_set(err, CG_EIO, "short read of blob %s", hex);
    if (o.fd >= 0 && close(o.fd) != 0 && rc == 0) rc = cg_err_set(err, CG_EIO, "close %s: %s", dst, strerror(errno));
    close(fd);
    return rc;
}

/* ------------------------------------------------------------ totals */

static cg_walk_action add_file(void *ctx, const cg_walk_entry *e) {
    srv_blob_totals *t = ctx;
    if (!S_ISREG(e->st.st_mode) || strlen(e->name) != 64) return CG_WALK_SKIP;
    int fd = openat(e->dirfd, e->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return CG_WALK_SKIP;
    srv_blob_view v;
    if (srv_blob_view_open(fd, &v, NULL) == 0) {
        t->stored += (int64_t)v.stored_size;
        t->plain += (int64_t)v.plain_size;
        if (v.form == SRV_BLOBF_ZSTD) t->n_zstd++;
        else if (v.form == SRV_BLOBF_RAW) t->n_raw++;
        else t->n_plain++;
    }
    close(fd);
    return CG_WALK_SKIP;
}

static void walk_fs(srv_blobstore *b, srv_blob_totals *t) {
    cg_error err = {0};
    if (srv_blob_tree_walk(b, add_file, t, &err) < 0) t->stored = t->plain = -1;
}

void srv_blob_totals_get(srv_blobstore *b, PGconn *conn, srv_blob_totals *t) {
    memset(t, 0, sizeof *t);
    if (b->kind == SRV_BLOB_PG) {
        if (!conn || srv_store_pg_blob_sum(conn, t) < 0) t->stored = t->plain = -1;
        return;
    }
    pthread_mutex_lock(&totals_mu);
    time_t now = time(NULL);
    if (atomic_exchange(&totals_stale, false) || totals_at == 0 || now - totals_at >= 30 || now < totals_at) {
        srv_blob_totals fresh = {0};
        walk_fs(b, &fresh);
        totals_cache = fresh;
        totals_at = now;
    }
    *t = totals_cache;
    pthread_mutex_unlock(&totals_mu);
}

int srv_blob_ready(srv_blobstore *b, PGconn *conn, cg_error *err) {
    if (b->kind == SRV_BLOB_PG) return srv_store_pg_blob_probe(conn, err);
    char p[PATH_MAX + 16];
    snprintf(p, sizeof p, "%s/sha256", b->root);
    if (access(p, W_OK | X_OK) != 0) return cg_err_set(err, CG_EIO, "blob store %s is not writable", p);
    return 0;
}
