/* intern.h — the trace reader's string and shape store (internal to lib/trace).
 *
 * Every string and shape of a document is stored once in the document's
 * arena, packed: strings NUL-terminated without alignment padding in 64 KiB
 * pool chunks, shapes' dims arrays in the arena.
 *   - tstore_intern: a short string (≤ 96 bytes) equal to one stored before
 *     is returned as that copy; longer strings are copied. The table keeps
 *     the first 524,288 distinct strings (an 8 MiB slot array, so that its
 *     probes stay in the last-level cache at any document size: a document's
 *     vocabulary — names, devices, dtypes, early ids — comes first); a string
 *     first seen after that is shared only while it stays in the front below.
 *   - tstore_copy: for nearly unique identifiers (a record's own id): copied
 *     unless the same string was stored a few records before (the front
 *     below), so an id that repeats at once (an alloc and its free) is kept
 *     once without growing the table.
 *   - tstore_dims: a shape of 1–16 dims equal to one stored before shares its
 *     array (dims repeat: [16,64] …); longer shapes are copied. The arrays
 *     are shared: never written through a cg_shape.
 * Lookups go through cg_hmap (base/hmap.h); a direct-mapped front of recent
 * strings answers a string referenced again a few records later without
 * touching the (large, cache-cold) table. A string's table id is its chunk
 * number and offset, so the table needs no array of its own; after 65,535
 * chunks (4 GiB of strings) new strings are copied, not interned.
 *
 * Ownership: the stored bytes belong to the arena given to tstore_init (the
 * document's); tstore_done frees only the lookup tables, which the document
 * does not need after reading. Allocation failure follows base/alloc.h. */
#ifndef CG_TRACE_INTERN_H
#define CG_TRACE_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/hmap.h"

typedef struct tstore_slot {
    const char *s;
    uint32_t tag; /* hash bits with the length in the low 7 */
} tstore_slot;

typedef struct tstore_shape {
    uint64_t *dims;
    size_t n;
} tstore_shape;

typedef struct tstore {
    cg_arena *arena;
    char *pool; /* the current chunk's free bytes */
    size_t pool_left;
    char **chunks; /* chunk bases, indexed by the high 16 bits of a string id */
    size_t n_chunks, cap_chunks;
    cg_hmap strings;
    tstore_slot *front;
    cg_hmap shapes;
    tstore_shape *shape; /* id -> stored shape */
    size_t n_shapes, cap_shapes;
} tstore;

/* expect_strings: about how many distinct strings the document will intern
 * (0 when unknown): the table is sized for them up front, so that it is not
 * rebuilt as it grows. */
void tstore_init(tstore *st, cg_arena *arena, size_t expect_strings);
void tstore_done(tstore *st);
const char *tstore_intern(tstore *st, const char *s, size_t len);
const char *tstore_copy(tstore *st, const char *s, size_t len);
/* The stored dims of a shape of n dims (NULL for n = 0). */
uint64_t *tstore_dims(tstore *st, const uint64_t *dims, size_t n);

#endif
