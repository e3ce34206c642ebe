/* fs.h — small filesystem helpers with explicit errors. */
#ifndef CG_BASE_FS_H
#define CG_BASE_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* Reads a whole file (malloc'd, NUL-terminated; caller frees). Refuses files
 * larger than max_bytes (0 = no limit) with CG_ELIMIT. */
char *cg_read_file(const char *path, size_t max_bytes, size_t *len, cg_error *err);
/* Writes data to path (create/truncate), optionally fsyncing the file. */
int cg_write_file(const char *path, const void *data, size_t len, bool do_fsync, cg_error *err);
/* Writes to a temp file beside path, fsyncs, renames over path, fsyncs the directory. */
int cg_write_file_atomic(const char *path, const void *data, size_t len, cg_error *err);
int cg_fsync_path(const char *path, cg_error *err); /* file or directory */
int cg_mkdir_p(const char *path, cg_error *err);
int cg_rm_rf(const char *path);                      /* best effort; 0 on success */
bool cg_path_exists(const char *path);               /* lstat succeeds */
bool cg_is_dir(const char *path);                    /* stat (follows links) */
bool cg_is_regular_nofollow(const char *path);
/* Copies src to dst (create, exclusive) and fsyncs dst. */
int cg_copy_file(const char *src, const char *dst, cg_error *err);
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

#endif
