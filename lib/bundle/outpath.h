/* outpath.h — write safety for commands that read bundles (spec §7): an output
 * path that resolves inside an input bundle (lexical "..", existing symlink
 * aliases, or the bundle root itself), or whose resolution passes through the
 * bundle on the way (the crate's resolve_write_path: "B/new/../../x"), is refused with
 * "refusing to write command output … inside verified bundle …".
 * No allocation escapes. Errors: -1 with CG_EINVAL (refusal) or CG_EIO. */
#ifndef CG_BUNDLE_OUTPATH_H
#define CG_BUNDLE_OUTPATH_H

#include <limits.h>

#include "base/error.h"

/* 0 when output (a file path, or "-"/NULL for stdout) lies outside bundle_root. */
int cg_bundle_check_output_path(const char *output, const char *bundle_root, cg_error *err);

/* Absolute, lexically normalized form of path: a relative path is joined to
 * the cwd, then ".", ".." and repeated '/' are folded (".." at the root stays
 * "/"); symlinks are not resolved. 0, or -1 when the cwd is unreadable or the
 * result does not fit in PATH_MAX. Also used by publication.c. */
int cg_bundle_path_lexical_abs(const char *path, char out[PATH_MAX]);

#endif
