/* evidence_read.h — reading a published evidence.json (an evidence/4 packet)
 * without building it whole.
 *
 * The file is mapped (read into memory only when it cannot be mapped) and
 * parsed once by cg_json_parse_hooked: every byte is checked with the
 * parser's errors, positions and limits, but the packet's large arrays — the
 * ones cg_evidence_to_json_lazy also streams: graph spans/edges/tensors/
 * gradients, tensor_stats, timing device_spans/device_clocks, memory logical
 * peak live_allocations/timeline/lifetimes and physical timeline — are kept
 * as lazy arrays (base/json.h) over their bytes; each item is parsed again
 * when a walk asks for it. Everything else is an ordinary tree in the arena.
 * So a consumer that works on the rebuilt lazy packet works on a read one
 * unchanged, and writes the same bytes.
 *
 * Memory: the tree, one item per walk in progress, and the pages of the file
 * near each reader (pages behind a reader are released every
 * CG_EVIDENCE_READ_RELEASE bytes, and all of an array's when a walk ends).
 * Limits (CG_ELIMIT, with the position suffix): those of the cg_json_limits
 * given (per container: depth, string, items), CG_EVIDENCE_READ_MAX_ITEM
 * bytes of text per lazy item, and CG_EVIDENCE_READ_MAX_TREE bytes of text
 * outside the lazy arrays (the whole file's limit before this reader, so no
 * file read before is refused). Both byte limits are checked at each value
 * start (base/json.h), so an item may pass its limit by one string.
 *
 * Ownership: the cg_evidence_file owns the mapping; the packet's lazy arrays
 * read it, so close the file only after the last use of the packet. The file
 * is read as it is when parsed: it must not change while open (callers check
 * its digest after reading, as for any consumed bundle file). Not
 * thread-safe: one walk of a given lazy array at a time. */
#ifndef CG_ANALYSIS_EVIDENCE_READ_H
#define CG_ANALYSIS_EVIDENCE_READ_H

#include <stdbool.h>
#include <stddef.h>

#include "base/arena.h"
#include "base/error.h"
#include "base/json.h"

#define CG_EVIDENCE_READ_MAX_ITEM ((size_t)64 << 20)
#define CG_EVIDENCE_READ_MAX_TREE ((size_t)1 << 30)
#define CG_EVIDENCE_READ_RELEASE ((size_t)8 << 20)

typedef struct cg_evidence_file cg_evidence_file;

/* Opens path for reading. Errors as the file readers of base/fs.h give them:
 * with bare, the OS error alone (cg_read_file_io's words); otherwise "open
 * PATH: strerror" / "read PATH: …" (cg_read_file's). NULL on error. */
cg_evidence_file *cg_evidence_file_open(const char *path, bool bare, cg_error *err);
void cg_evidence_file_close(cg_evidence_file *f); /* NULL is fine */
/* The file's bytes (for error positions: cg_json_locate). */
const char *cg_evidence_file_text(const cg_evidence_file *f, size_t *len);

/* Limits of one parse; cg_evidence_read_limits_default sets the defaults
 * above with the json defaults (lim) of base/json.h. */
typedef struct cg_evidence_read_limits {
    cg_json_limits json;
    size_t max_item_bytes, max_tree_bytes;
} cg_evidence_read_limits;
void cg_evidence_read_limits_default(cg_evidence_read_limits *l);

/* Parses the whole file into a packet value in arena a (any JSON value: the
 * caller checks the schema). NULL with cg_json_parse's error (or a limit's) on
 * failure. */
cg_jv *cg_evidence_file_parse(cg_evidence_file *f, cg_arena *a, const cg_evidence_read_limits *lim, cg_error *err);

#endif
