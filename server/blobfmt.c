/* blobfmt.c — the at-rest form of an fs blob (and of a pg blob's read copy).
 *
 * A stored blob file is one of
 *   plain: the plain bytes, nothing else. Blobs of older servers (the migration
 *          path: read as they are, never rewritten) and incompressible blobs
 *          (the first frame shrinks by less than 1/16), so those keep sendfile
 *          and hard links;
 *   raw:   a 64-byte header, then the plain bytes: only for plain content that
 *          would itself read as a valid header (below), so no uploaded content
 *          can pass for another form;
 *   zstd:  a 64-byte header, independent zstd frames of SRV_BLOB_FRAME plain
 *          bytes each (the last one shorter; level 3, content checksum), then
 *          the frame index: one little-endian u64 per frame, the file offset of
 *          the frame, bit 63 set when that frame is kept plain because zstd did
 *          not shrink it.
 * Header (little-endian): magic "\x89CGBLOB\n", u32 version 1, u32 form
 * (1 raw, 2 zstd), u64 plain size, u32 frame size, u32 frame count, u64 index
 * offset, 16 zero bytes, then the first 8 bytes of the SHA-256 of bytes 0–55.
 * A file is raw or zstd only when the magic, the header digest and every size
 * agree with the file's length; anything else is plain, so a damaged header
 * reads as a plain blob of the wrong size or digest (fsck reports it).
 *
 * The content address is always the SHA-256 of the plain bytes. A read of
 * plain bytes [off, off+len) decompresses only the frames it touches: O(len +
 * one frame) time, one frame of memory. Frames are 256 KiB rather than 1 MiB
 * so that each concurrent download holds about 0.6 MiB (frame, its zstd bound,
 * a decompression context). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "srv.h"
#include "base/alloc.h"

#define HDR SRV_BLOB_HDR
#define VERSION 1u
#define RAW_FRAME (UINT64_C(1) << 63)
#define ZSTD_LEVEL 3
static const unsigned char MAGIC[8] = {0x89, 'C', 'G', 'B', 'L', 'O', 'B', '\n'};

static void put32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static uint64_t get64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* pread of exactly n bytes (0), short file (1) or error (-1, errno). */
static int pread_full(int fd, void *buf, size_t n, uint64_t off) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) return 1;
        got += (size_t)r;
    }
    return 0;
}

static int read_full(int fd, void *buf, size_t n, size_t *got) {
    *got = 0;
    while (*got < n) {
        ssize_t r = read(fd, (char *)buf + *got, n - *got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) break;
        *got += (size_t)r;
    }
    return 0;
}

static int write_full(int fd, const void *buf, size_t n, bool *enospc, cg_error *err) {
    for (size_t off = 0; off < n;) {
        ssize_t w = cg_fault_write(fd, (const char *)buf + off, n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
            if (errno == ENOSPC || errno == EDQUOT) *enospc = true;
            return cg_err_set(err, CG_EIO, "write blob: %s", strerror(errno));
        }
        off += (size_t)w;
    }
    return 0;
}

static void header(unsigned char h[HDR], uint32_t form, uint64_t plain, uint32_t frame, uint32_t n, uint64_t index) {
    memset(h, 0, HDR);
    memcpy(h, MAGIC, 8);
    put32(h + 8, VERSION);
    put32(h + 12, form);
    put64(h + 16, plain);
    put32(h + 24, frame);
    put32(h + 28, n);
    put64(h + 32, index);
    unsigned char dg[32];
    cg_sha256_buf(h, 56, dg);
    memcpy(h + 56, dg, 8);
}

static bool header_valid(const unsigned char h[HDR], uint64_t file, srv_blob_view *v) {
    unsigned char dg[32];
    cg_sha256_buf(h, 56, dg);
    if (memcmp(h, MAGIC, 8) != 0 || memcmp(h + 56, dg, 8) != 0 || get32(h + 8) != VERSION) return false;
    uint32_t form = get32(h + 12), frame = get32(h + 24), n = get32(h + 28);
    uint64_t plain = get64(h + 16), index = get64(h + 32);
    if (form == SRV_BLOBF_RAW) {
        if (plain != file - HDR || n != 0) return false;
    } else if (form == SRV_BLOBF_ZSTD) {
        if (frame < 4096 || frame > (16u << 20)) return false;
        uint64_t want = plain / frame + (plain % frame != 0);
        if (n != want || index < HDR || index > file || (file - index) / 8 != n || (file - index) % 8 != 0) return false;
    } else {
        return false;
    }
    v->form = (srv_blob_form)form;
    v->plain_size = plain;
    v->frame_size = frame;
    v->n_frames = n;
    v->index_off = index;
    return true;
}

int srv_blob_view_open(int fd, srv_blob_view *v, cg_error *err) {
    memset(v, 0, sizeof *v);
    v->fd = fd;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return cg_err_set(err, CG_EIO, "blob is not a regular file");
    v->stored_size = (uint64_t)st.st_size;
    v->form = SRV_BLOBF_PLAIN;
    v->plain_size = v->stored_size;
    unsigned char h[HDR];
    if (v->stored_size < HDR) return 0;
    int r = pread_full(fd, h, HDR, 0);
    if (r < 0) return cg_err_set(err, CG_EIO, "read blob header: %s", strerror(errno));
    if (r == 0 && !header_valid(h, v->stored_size, v)) {
        v->form = SRV_BLOBF_PLAIN;
        v->plain_size = v->stored_size;
    }
    return 0;
}

/* ------------------------------------------------------------ writing */

typedef struct enc {
    int in, out;
    unsigned char *plain, *packed;
    size_t packed_cap;
    ZSTD_CCtx *z;
    bool *enospc;
    cg_error *err;
} enc;

/* Reads the next frame of up to SRV_BLOB_FRAME bytes; a file shorter than the
 * size it was stored under is an error (the staging copy changed). */
static int next_frame(enc *e, uint64_t left, size_t *len) {
    size_t want = left < SRV_BLOB_FRAME ? (size_t)left : SRV_BLOB_FRAME;
    if (read_full(e->in, e->plain, want, len) < 0) return cg_err_set(e->err, CG_EIO, "read: %s", strerror(errno));
    if (*len != want) return cg_err_set(e->err, CG_EIO, "blob source is shorter than its recorded size");
    return 0;
}

/* zstd size of the frame in e->plain, or 0 when it does not shrink it. */
static size_t pack_frame(enc *e, size_t len) {
    size_t c = ZSTD_compress2(e->z, e->packed, e->packed_cap, e->plain, len);
    return ZSTD_isError(c) || c >= len ? 0 : c;
}

/* The plain bytes, behind a raw header only when they would read as one. */
static int encode_plain(enc *e, uint64_t size, size_t first, bool framed, uint64_t *stored) {
    unsigned char h[HDR];
    srv_blob_view probe;
    bool wrap = framed || (first >= HDR && header_valid(e->plain, size, &probe));
    header(h, SRV_BLOBF_RAW, size, 0, 0, HDR + size);
    if ((wrap && write_full(e->out, h, HDR, e->enospc, e->err) < 0) ||
        write_full(e->out, e->plain, first, e->enospc, e->err) < 0)
        return -1;
    for (uint64_t left = size - first; left > 0;) {
        size_t len;
        if (next_frame(e, left, &len) < 0 || write_full(e->out, e->plain, len, e->enospc, e->err) < 0) return -1;
        left -= len;
    }
    *stored = wrap ? HDR + size : size;
    return 0;
}

static int encode_zstd(enc *e, uint64_t size, size_t first, size_t first_packed, uint64_t *stored) {
    uint32_t n = (uint32_t)(size / SRV_BLOB_FRAME + (size % SRV_BLOB_FRAME != 0));
    unsigned char *index = malloc((size_t)n * 8);
    if (!index) return cg_err_set(e->err, CG_ENOMEM, "out of memory");
    unsigned char h[HDR] = {0};
    int rc = write_full(e->out, h, HDR, e->enospc, e->err); /* the real header goes in last */
    uint64_t at = HDR, left = size;
    size_t len = first, packed = first_packed;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        if (i > 0 && (rc = next_frame(e, left, &len)) == 0) packed = pack_frame(e, len);
        if (rc != 0) break;
        put64(index + (size_t)i * 8, packed ? at : at | RAW_FRAME);
        rc = packed ? write_full(e->out, e->packed, packed, e->enospc, e->err)
                    : write_full(e->out, e->plain, len, e->enospc, e->err);
        at += packed ? packed : len;
        left -= len;
    }
    if (rc == 0) rc = write_full(e->out, index, (size_t)n * 8, e->enospc, e->err);
    cg_free(index);
    header(h, SRV_BLOBF_ZSTD, size, SRV_BLOB_FRAME, n, at);
    if (rc == 0 && lseek(e->out, 0, SEEK_SET) != 0) rc = cg_err_set(e->err, CG_EIO, "seek: %s", strerror(errno));
    if (rc == 0) rc = write_full(e->out, h, HDR, e->enospc, e->err);
    *stored = at + (uint64_t)n * 8;
    return rc;
}

int srv_blob_encode(int in, int out, uint64_t size, unsigned flags, uint64_t *stored, bool *enospc, cg_error *err) {
    enc e = {.in = in, .out = out, .enospc = enospc, .err = err, .packed_cap = ZSTD_compressBound(SRV_BLOB_FRAME)};
    e.plain = malloc(SRV_BLOB_FRAME);
    e.packed = malloc(e.packed_cap);
    e.z = ZSTD_createCCtx();
    int rc = e.plain && e.packed && e.z ? 0 : cg_err_set(err, CG_ENOMEM, "out of memory");
    if (rc == 0) {
        ZSTD_CCtx_setParameter(e.z, ZSTD_c_compressionLevel, ZSTD_LEVEL);
        ZSTD_CCtx_setParameter(e.z, ZSTD_c_checksumFlag, 1);
    }
    size_t first = 0, packed = 0;
    if (rc == 0) rc = next_frame(&e, size, &first);
    /* the first frame decides: a blob whose first frame saves under 1/16 is kept plain */
    if (rc == 0 && (flags & SRV_BLOB_ENC_COMPRESS) && first > 0) packed = pack_frame(&e, first);
    bool zstd = packed > 0 && packed <= first - first / 16;
    if (rc == 0) rc = zstd ? encode_zstd(&e, size, first, packed, stored)
              : encode_plain(&e, size, first, (flags & SRV_BLOB_ENC_FRAMED) != 0, stored);
    if (rc == 0) { /* a longer source than recorded is refused as well */
        char extra;
        size_t got;
        if (read_full(in, &extra, 1, &got) < 0 || got != 0)
            rc = cg_err_set(err, CG_EIO, "blob source is longer than its recorded size");
    }
    ZSTD_freeCCtx(e.z);
    cg_free(e.packed);
    cg_free(e.plain);
    return rc;
}

bool srv_blob_header_claims(const void *p, size_t n, uint64_t plain) {
    const unsigned char *h = p;
    if (n < HDR || memcmp(h, MAGIC, 8) != 0 || get32(h + 8) != VERSION || get64(h + 16) != plain) return false;
    unsigned char dg[32];
    cg_sha256_buf(h, 56, dg);
    uint32_t form = get32(h + 12);
    return memcmp(h + 56, dg, 8) == 0 && (form == SRV_BLOBF_RAW || form == SRV_BLOBF_ZSTD);
}

int srv_blob_raw_seal(int fd, uint64_t plain, cg_error *err) {
    unsigned char h[HDR];
    header(h, SRV_BLOBF_RAW, plain, 0, 0, HDR + plain);
    ssize_t w;
    do w = pwrite(fd, h, HDR, 0);
    while (w < 0 && errno == EINTR);
    if (w != (ssize_t)HDR) return cg_err_set(err, CG_EIO, "write blob header: %s", w < 0 ? strerror(errno) : "short write");
    return 0;
}

/* ------------------------------------------------------------ reading */

struct srv_blob_cursor {
    srv_blob_view v;
    ZSTD_DCtx *z;
    unsigned char *frame, *packed;
    size_t packed_cap;
    int64_t loaded; /* frame index in frame[], -1 none */
    size_t loaded_len;
};

srv_blob_cursor *srv_blob_cursor_new(const srv_blob_view *v) {
    srv_blob_cursor *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->v = *v;
    c->loaded = -1;
    if (v->form != SRV_BLOBF_ZSTD) return c;
    c->packed_cap = ZSTD_compressBound(v->frame_size);
    c->z = ZSTD_createDCtx();
    c->frame = malloc(v->frame_size);
    c->packed = malloc(c->packed_cap);
    if (!c->z || !c->frame || !c->packed) {
        srv_blob_cursor_free(c);
        return NULL;
    }
    return c;
}

void srv_blob_cursor_free(srv_blob_cursor *c) {
    if (!c) return;
    ZSTD_freeDCtx(c->z);
    cg_free(c->frame);
    cg_free(c->packed);
    cg_free(c);
}

static int damaged(cg_error *err, const char *what) {
    return cg_err_set(err, CG_EIO, "stored blob is damaged: %s", what);
}

static int load_frame(srv_blob_cursor *c, uint32_t k, cg_error *err) {
    const srv_blob_view *v = &c->v;
    unsigned char ent[16];
    size_t n_ent = k + 1 < v->n_frames ? 16 : 8;
    if (pread_full(v->fd, ent, n_ent, v->index_off + (uint64_t)k * 8) != 0) return damaged(err, "frame index");
    uint64_t start = get64(ent) & ~RAW_FRAME, end = n_ent == 16 ? get64(ent + 8) & ~RAW_FRAME : v->index_off;
    bool raw = (get64(ent) & RAW_FRAME) != 0;
    uint64_t plain_at = (uint64_t)k * v->frame_size;
    size_t want = v->plain_size - plain_at < v->frame_size ? (size_t)(v->plain_size - plain_at) : v->frame_size;
    if (start < HDR || end < start || end > v->index_off || end - start > c->packed_cap) return damaged(err, "frame offsets");
    size_t clen = (size_t)(end - start);
    if (raw) {
        if (clen != want || pread_full(v->fd, c->frame, clen, start) != 0) return damaged(err, "plain frame");
    } else {
        if (pread_full(v->fd, c->packed, clen, start) != 0) return damaged(err, "short frame");
        size_t got = ZSTD_decompressDCtx(c->z, c->frame, v->frame_size, c->packed, clen);
        if (ZSTD_isError(got) || got != want) return damaged(err, "zstd frame");
    }
    c->loaded = k;
    c->loaded_len = want;
    return 0;
}

ssize_t srv_blob_pread(srv_blob_cursor *c, void *buf, size_t n, uint64_t off, cg_error *err) {
    const srv_blob_view *v = &c->v;
    if (off >= v->plain_size || n == 0) return 0;
    if (n > v->plain_size - off) n = (size_t)(v->plain_size - off);
    if (v->form != SRV_BLOBF_ZSTD) {
        uint64_t base = v->form == SRV_BLOBF_RAW ? HDR : 0;
        ssize_t r;
        do r = pread(v->fd, buf, n, (off_t)(base + off));
        while (r < 0 && errno == EINTR);
        if (r < 0) return cg_err_set(err, CG_EIO, "read blob: %s", strerror(errno));
        return r;
    }
    uint32_t k = (uint32_t)(off / v->frame_size);
    if (c->loaded != (int64_t)k && load_frame(c, k, err) < 0) return -1;
    size_t in = (size_t)(off - (uint64_t)k * v->frame_size);
    size_t take = c->loaded_len - in < n ? c->loaded_len - in : n;
    memcpy(buf, c->frame + in, take);
    return (ssize_t)take;
}

/* ------------------------------------------------------------ HTTP bodies */

typedef struct body {
    srv_blob_cursor *c;
    uint64_t base;
} body;

static ssize_t body_read(void *cls, uint64_t pos, char *buf, size_t max) {
    body *b = cls;
    cg_error err = {0};
    ssize_t n = srv_blob_pread(b->c, buf, max, b->base + pos, &err);
    if (n <= 0) {
        srv_log("error", "stored blob read failed", "error", n < 0 ? err.msg : "unexpected end of blob", NULL);
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    return n;
}

static void body_free(void *cls) {
    body *b = cls;
    close(b->c->v.fd);
    srv_blob_cursor_free(b->c);
    cg_free(b);
}

struct MHD_Response *srv_blob_response(int fd, uint64_t off, uint64_t len) {
    srv_blob_view v;
    if (srv_blob_view_open(fd, &v, NULL) < 0 || v.form == SRV_BLOBF_PLAIN)
        return MHD_create_response_from_fd_at_offset64(len, fd, (int64_t)off);
    if (v.form == SRV_BLOBF_RAW) return MHD_create_response_from_fd_at_offset64(len, fd, (int64_t)(HDR + off));
    body *b = malloc(sizeof *b);
    srv_blob_cursor *c = b ? srv_blob_cursor_new(&v) : NULL;
    struct MHD_Response *resp = c ? MHD_create_response_from_callback(len, 64 * 1024, body_read, b, body_free) : NULL;
    if (!resp) { /* the caller closes fd */
        srv_blob_cursor_free(c);
        cg_free(b);
        return NULL;
    }
    b->c = c;
    b->base = off;
    return resp;
}
