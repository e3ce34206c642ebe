/* manifest_wire.h — one table per bundle envelope: the bundle/1 manifest
 * (bundle.json, read by verify, written by publish), the
 * bundle-verification/1 and publication/1 receipts, and any other envelope
 * built from a C struct (the CLI's verify/1).
 *
 * A cg_bw_record lists, in the crate's declaration order, each field: its JSON
 * name, type, offset in the C struct and, per type, its length/count member or
 * sub-table. The same table drives writing (cg_bw_encode: declaration order,
 * as serde serializes a struct) and reading (cg_bw_decode: serde's derive
 * semantics over the parsed value — members in input order, a repeated known
 * field is `duplicate field`, unknown fields ignored, then missing fields in
 * declaration order — with serde_json's " at line L column C" of where its
 * reader stood when the error arose, found again in the text).
 *
 * Ownership: decoded strings and arrays live in the caller's arena; encoded
 * values too. Errors: cg_bw_decode returns -1 with CG_EPARSE. */
#ifndef CG_BUNDLE_MANIFEST_WIRE_H
#define CG_BUNDLE_MANIFEST_WIRE_H

#include <stddef.h>

#include "base/arena.h"
#include "base/error.h"
#include "base/json.h"

typedef enum cg_bw_type {
    CG_BW_CONST,  /* written as the string `sub` (a schema); read as a required string into const char * */
    CG_BW_STR,    /* const char *, required; aux = 1 + offset of a size_t byte length, or 0 */
    CG_BW_CHARS,  /* char array inside the struct (write only) */
    CG_BW_U64,    /* uint64_t, required */
    CG_BW_ENUM,   /* int-sized enum, written as ((const char *const *)sub)[value] (write only) */
    CG_BW_STRUCT, /* embedded struct, sub = cg_bw_record */
    CG_BW_SEQ,    /* pointer to an array of structs (sub) at off, size_t count at aux, required */
    CG_BW_JV,     /* cg_jv * built elsewhere, written as is (write only) */
} cg_bw_type;

typedef struct cg_bw_field {
    const char *name;
    cg_bw_type type;
    size_t off, aux;
    const void *sub;
} cg_bw_field;

typedef struct cg_bw_record {
    const char *expecting; /* serde's name of the type: "struct BundleManifest" */
    const cg_bw_field *fields;
    size_t n_fields;
    size_t size; /* sizeof the C struct */
} cg_bw_record;

#define CG_BW_RECORD(expecting, st, tab) {expecting, tab, sizeof tab / sizeof tab[0], sizeof(st)}

/* The bundle envelopes (tables in manifest_wire.c). */
extern const cg_bw_record cg_bw_bundle_manifest, cg_bw_bundle_file, cg_bw_bundle_receipt,
    cg_bw_publication_receipt;

/* Decodes root (parsed from text[0..len)) into out (zeroed here) per rec. */
int cg_bw_decode(const cg_bw_record *rec, cg_arena *a, const cg_jv *root, const char *text, size_t len,
                 void *out, cg_error *err);
/* The object of in's fields in declaration order. */
cg_jv *cg_bw_encode(cg_arena *a, const cg_bw_record *rec, const void *in);

#endif
