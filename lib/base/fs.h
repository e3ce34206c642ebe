/* fs.h — small filesystem helpers with explicit errors. */
#ifndef CG_BASE_FS_H
#define CG_BASE_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "base/error.h"

/* Reads a whole file (malloc'd, NUL-terminated; caller frees). Refuses files
 * larger than max_bytes (0 = no limit) with CG_ELIMIT. */
char *cg_read_file(const char *path, size_t max_bytes, size_t *len, cg_error *err);
/* The same from an open descriptor (read from its current offset; not closed);
 * path names it in messages. */
char *cg_read_fd(int fd, const char *path, size_t max_bytes, size_t *len, cg_error *err);
/* cg_read_file / cg_read_fd whose OS failures are the bare io::Error ("No
 * such file or directory (os error 2)"), as Rust's fs::read returns it: the
 * caller adds the crate's context. */
char *cg_read_file_io(const char *path, size_t max_bytes, size_t *len, cg_error *err);
char *cg_read_fd_io(int fd, const char *path, size_t max_bytes, size_t *len, cg_error *err);
/* Writes data to path (create/truncate), optionally fsyncing the file. */
int cg_write_file(const char *path, const void *data, size_t len, bool do_fsync, cg_error *err);
/* Writes to a temp file beside path, fsyncs, renames over path, fsyncs the directory. */
int cg_write_file_atomic(const char *path, const void *data, size_t len, cg_error *err);
int cg_fsync_path(const char *path, cg_error *err); /* file or directory */
/* mkdir -p; on failure errno is the failing mkdir's. */
int cg_mkdir_p(const char *path, cg_error *err);
int cg_rm_rf(const char *path);                      /* best effort; 0 on success */
bool cg_path_exists(const char *path);               /* lstat succeeds */
bool cg_is_dir(const char *path);                    /* stat (follows links) */
bool cg_is_regular_nofollow(const char *path);
/* Copies src to dst (create, exclusive) and fsyncs dst. */
int cg_copy_file(const char *src, const char *dst, cg_error *err);
/* Same, also giving the SHA-256 (lowercase hex) and size of the bytes written. */
int cg_copy_file_sha256(const char *src, const char *dst, char hex[65], uint64_t *size, cg_error *err);
/* Parent directory of path into out (size outsz): "a/b" -> "a", "b" -> ".". */
void cg_path_parent(const char *path, char *out, size_t outsz);
/* Final component of path (pointer into path). */
const char *cg_path_base(const char *path);
/* Joins a and b with one '/'; returns a malloc'd string, NULL when out of
 * memory. */
char *cg_path_join(const char *a, const char *b);
/* The same join allocated from arena (never NULL: base/alloc.h's cg_x* policy). */
struct cg_arena;
char *cg_path_join_arena(struct cg_arena *arena, const char *a, const char *b);

/* ---- the one directory walk ----
 * Walks the tree under root fd-relatively (openat/fdopendir from the root's
 * fd, never by path), never following a symbolic link: the root and every
 * directory descended into are opened with O_NOFOLLOW | O_DIRECTORY, entries
 * are lstat'ed (fstatat AT_SYMLINK_NOFOLLOW). visit sees every entry but "."
 * and "..", pre-order, in readdir order; entries that vanish meanwhile are
 * skipped. A directory is descended into when visit returns CG_WALK_NEXT and
 * its depth is below max_depth (entries of root have depth 0, so max_depth 0
 * lists root only); CG_WALK_SKIP does not descend, CG_WALK_STOP ends the walk.
 * At most one directory fd per level is open at a time.
 * Returns 0 (walked or stopped), or -1 with err: CG_EIO when root (or a
 * directory below it) cannot be opened or read — the entries visited before
 * stay visited —, CG_ELIMIT when more than max_entries (0 = no limit) entries
 * were seen. */
typedef enum cg_walk_action { CG_WALK_NEXT, CG_WALK_SKIP, CG_WALK_STOP } cg_walk_action;

typedef struct cg_walk_entry {
    int dirfd;        /* the directory holding the entry (valid during visit) */
    const char *name; /* its name in that directory */
    const char *path; /* root-relative path, "/"-joined (valid during visit) */
    unsigned depth;   /* 0 for the entries of root */
    struct stat st;   /* lstat of the entry */
} cg_walk_entry;

typedef cg_walk_action (*cg_walk_fn)(void *ctx, const cg_walk_entry *e);

typedef struct cg_walk_limits {
    unsigned max_depth;
    uint64_t max_entries;
} cg_walk_limits;

int cg_walk(const char *root, cg_walk_limits lim, cg_walk_fn visit, void *ctx, cg_error *err);

#endif
