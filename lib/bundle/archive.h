/* archive.h — transport archive of a bundle (ARCHITECTURE.md "Transport
 * archive"; CLI.md pack/unpack and hostile-archive error classes).
 *
 * Pack: a POSIX tar (pax, ustar-compatible headers where possible) of the
 * verified bundle — bundle.json first at the archive root, then a walk of the
 * directory (names sorted) with every directory (empty ones included: an empty
 * nsight/ changes the rederived evidence) and every declared file — with
 * normalized headers (mode 0644, uid/gid 0,
 * mtime 0, no owner names), optionally zstd-compressed (libzstd streaming,
 * level 3, frame checksum). The bundle is verified first and every file is
 * re-hashed while it is archived; a file that changed fails the pack. The
 * output is written to a temporary file beside out_path, fsynced and renamed.
 *
 * Unpack: a tar or tar.zst (detected by the zstd magic) is extracted into a
 * fresh directory `dest` that must not exist. Extraction happens in a staging
 * directory beside dest which is renamed to dest only when the whole archive
 * was accepted; on any refusal nothing is left behind. Only regular files and
 * directories are accepted. zstd runs with a bounded window (windowLogMax) and
 * the decoded stream, entry count, per-file and total sizes are bounded.
 *
 * Errors carry their reason (base/reason.def; the server answers its code):
 *   unsafe_path        absolute path, "..", empty or "." component, backslash, NUL,
 *                      a control character, a name that is not valid UTF-8, more than
 *                      CG_ARCHIVE_MAX_DEPTH (64) components
 *   special_file       symlink, hard link, device, FIFO, socket entry
 *   payload_too_large  a size / count / window / decoded-output limit (err->limit "archive";
 *                      the entry count includes directories made for a path before or
 *                      without their own header), or
 *                      zstd output over max_ratio × the compressed input size
 *                      (err->limit "decompression_ratio")
 *   malformed_archive  unreadable, truncated or corrupt input, duplicate entries,
 *                      a path that is both a file and a directory, a non-zero byte
 *                      after the tar end-of-archive marker (zero padding is accepted;
 *                      a tar split over several concatenated zstd frames is one stream)
 *   CG_R_NONE          local failure (dest exists, disk, permissions, memory)
 * Ownership: no allocation escapes; err carries the message. */
#ifndef CG_BUNDLE_ARCHIVE_H
#define CG_BUNDLE_ARCHIVE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "bundle/manifest.h"

/* Path components an entry may have (a bundle's are a handful: nsight/<file>).
 * Each directory made walks its whole path, so depth multiplies the work. */
#define CG_ARCHIVE_MAX_DEPTH 64

typedef struct cg_archive_limits {
    uint64_t max_entries;       /* default 100,000 */
    uint64_t max_file_bytes;    /* default 4 GiB */
    uint64_t max_total_bytes;   /* sum of file sizes; default 8 GiB */
    uint64_t max_stream_bytes;  /* decoded tar stream; default max_total_bytes + 1536*max_entries + 1 MiB */
    int window_log_max;         /* zstd windowLogMax; default 27 (128 MiB) */
    /* Decompression-ratio trip-wire, independent of the size limits: a zstd
     * archive may decode to at most max(ratio_floor_bytes, max_ratio × its
     * compressed size) bytes. The compressed size is the rest of the file when
     * the input is a regular file, else the bytes read so far. 0 = off
     * (default); ratio_floor_bytes default 16 MiB (small archives of tiny or
     * empty files compress far better than any real bundle). */
    uint64_t max_ratio;
    uint64_t ratio_floor_bytes;
    /* Unpack durability. false (default): every file and directory is fsynced
     * before the staging directory is renamed to dest, and dest's parent after.
     * true: dest is a scratch copy that the caller reads and then deletes (the
     * server's private ingest staging, whose durable copies are the blobs it
     * stores later) — nothing is fsynced; all checks and the rename are the
     * same. After a crash such a dest may be incomplete; only use it for data
     * whose leftovers are collected, never kept. */
    bool scratch;
} cg_archive_limits;

void cg_archive_limits_default(cg_archive_limits *l);
/* Packs the bundle directory into out_path; zstd selects tar.zst. */
int cg_archive_pack(const char *bundle, const char *out_path, bool zstd, cg_error *err);

/* The same archive from a manifest (bundle.json bytes, parsed and checked as
 * bundle/1) and the plain bytes of each declared file read through src, with
 * no bundle directory: every file is hashed as it is archived and one whose
 * size or SHA-256 differs from its manifest entry fails the pack (nothing is
 * left at out_path). Directories are those of the declared paths, in the order
 * of cg_archive_pack's sorted walk, so for a bundle without empty directories
 * the bytes are cg_archive_pack's. open returns a handle (NULL with err), read
 * returns up to n bytes (0 at the end, -1 with err), close frees the handle. */
typedef struct cg_archive_source {
    void *(*open)(void *ctx, const cg_bundle_file *f, cg_error *err);
    ssize_t (*read)(void *h, void *buf, size_t n, cg_error *err);
    void (*close)(void *h);
    void *ctx;
} cg_archive_source;
int cg_archive_pack_from(const char *manifest, size_t manifest_len, const cg_archive_source *src, const char *out_path,
                         bool zstd, cg_error *err);

/* Unpacks archive_path (or an open fd, read from its current offset) into dest.
 * lim may be NULL for the defaults. -1 with err and its reason on failure. */
int cg_archive_unpack(const char *archive_path, const char *dest, const cg_archive_limits *lim, cg_error *err);
int cg_archive_unpack_fd(int fd, const char *dest, const cg_archive_limits *lim, cg_error *err);

#endif
