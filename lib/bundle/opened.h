/* opened.h — a bundle directory opened once (ARCHITECTURE.md ingest, issue 13
 * "ingest over one opened bundle").
 *
 * cg_bundle_open_dir opens the root as a directory descriptor and reads and
 * parses bundle.json through it (bundle/1 checks 1–3 with the upstream
 * messages); cg_bundle_verify_handle (verify.h) runs checks 4–14 on the
 * handle, and every later stage opens the bundle's files relative to that
 * descriptor with cg_bundle_handle_open — each path component with
 * O_NOFOLLOW, so no file is reached by a path through the filesystem after the
 * bundle was checked.
 *
 * Library code that only takes a path (the trace reader, the evidence
 * builder) is given cg_bundle_fd_name of a descriptor the handle opened: the
 * /proc/self/fd name of that open file, not a path through the bundle.
 *
 * Ownership: the handle owns its descriptor, the manifest bytes (manifest,
 * NUL-terminated) and the arena holding the parsed manifest (man) and root;
 * cg_bundle_handle_close frees them (also after a failed cg_bundle_open_dir).
 * Errors: -1 with err and its reason as cg_bundle_verify (malformed_archive:
 * not a directory; malformed_manifest: bundle.json missing, not a regular
 * file, unreadable or not parsing; CG_R_NONE: out of memory). */
#ifndef CG_BUNDLE_OPENED_H
#define CG_BUNDLE_OPENED_H

#include <stdbool.h>
#include <stddef.h>

#include "base/arena.h"
#include "base/error.h"
#include "bundle/manifest.h"
#include "bundle/verify.h"

typedef struct cg_bundle_handle {
    int dirfd;                  /* -1 when closed */
    const char *root;           /* as given, for messages (arena) */
    char *manifest;             /* bundle.json bytes as read (malloc'd) */
    size_t manifest_len;
    char manifest_sha256[65];   /* lowercase hex of those bytes */
    cg_bundle_manifest man;     /* parsed once (arena) */
    cg_arena arena;
} cg_bundle_handle;

/* Opens root (a directory; a link to one is followed, as stat does) and reads
 * and parses bundle.json: checks 1–3 and the run_id length rule. */
int cg_bundle_open_dir(const char *root, cg_bundle_handle *h, cg_error *err);
void cg_bundle_handle_close(cg_bundle_handle *h);

/* Opens rel ('/'-separated, safe per cg_bundle_path_is_safe) beneath the
 * handle's directory, never following a link: every directory component with
 * O_DIRECTORY|O_NOFOLLOW, the last with flags|O_NOFOLLOW|O_CLOEXEC (add
 * O_DIRECTORY to open a directory). Returns the fd, or -1 with errno set
 * (ELOOP for a link anywhere on the way). */
int cg_bundle_handle_open(const cg_bundle_handle *h, const char *rel, int flags);

/* "/proc/self/fd/<fd>" in buf (32 bytes): a name for the open file itself. */
const char *cg_bundle_fd_name(int fd, char buf[32]);

#endif
