/* wire.h — one table per trace/10 wire record (internal to lib/trace).
 *
 * A wire_record lists, in the crate's declaration order, every field of one
 * record: its JSON name, wire type, offset in the C struct, its default and
 * when it is omitted on write. The same table drives reading (wire_decode,
 * with serde's semantics and messages: fields checked in input order, a
 * repeated known field is `duplicate field`, unknown fields are ignored, then
 * missing required fields in declaration order), writing (wire_encode) and
 * the field order of every JSON rendering of the record. */
#ifndef CG_TRACE_WIRE_H
#define CG_TRACE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "trace/trace.h"

typedef enum wire_type {
    W_STR,         /* const char *, required */
    W_ID,          /* const char *, required; a nearly unique id: sink->copy (not the intern table) */
    W_OSTR,        /* const char *, Option<String>: absent/null -> NULL, omitted when NULL */
    W_U64,         /* uint64_t, required */
    W_U64_DEF,     /* uint64_t, #[serde(default)] 0, always written */
    W_USIZE,       /* uint64_t, required, named usize in messages */
    W_OU64,        /* uint64_t + bool at aux (has), Option<u64>, omitted when absent */
    W_OU64_DERIVED,/* W_OU64 whose value the reader may derive (flag at aux2): events omit derived values */
    W_F64,         /* double, required */
    W_OF64,        /* double + bool at aux (has), Option<f64>, omitted when absent */
    W_BOOL_DEF,    /* bool, #[serde(default)] false, always written */
    W_ENUM,        /* int-sized enum, required */
    W_ENUM_DEF,    /* int-sized enum, #[serde(default)] = def */
    W_OENUM,       /* int-sized enum whose value 0 means absent (Option<enum>), omitted when 0 */
    W_ENUM_BOOL,   /* bool storing a two-variant enum (variant 1 = true), required */
    W_STRLIST_DEF, /* cg_strlist, #[serde(default)], always written */
    W_STRLIST_SKIP,/* cg_strlist, #[serde(default)], omitted when empty */
    W_SHAPE,       /* cg_shape (Vec<usize>), required */
    W_SHAPE_DEF,   /* cg_shape, #[serde(default)] */
    W_TAGS,        /* cg_kv * at off, size_t count at aux: BTreeMap<String, String>, required */
    W_STRUCT,      /* embedded struct (sub = wire_record), required */
    W_OSTRUCT,     /* pointer to struct (sub), Option<…>: absent/null -> NULL, omitted when NULL */
    W_SEQ,         /* pointer to an array of structs (sub) at off, size_t count at aux, required */
} wire_type;

typedef struct wire_enum {
    const char *const *names; /* names[0] is NULL for W_OENUM (absent) */
    size_t n;
} wire_enum;

typedef struct wire_field {
    const char *name;
    wire_type type;
    size_t off, aux, aux2; /* enum types: aux2 is the member's size (int, or uint8_t in the record arrays) */
    const void *sub; /* wire_enum * for enum types, wire_record * for struct types */
    int def;
    size_t name_len; /* strlen(name) */
} wire_field;

typedef struct wire_record {
    const char *expecting; /* serde's name of the type: "struct CaptureContract" */
    const wire_field *fields;
    size_t n_fields;
    size_t size; /* sizeof the C struct */
} wire_record;

/* Enums (their names live in model.c) and records (one table each, wire.c). */
extern const wire_enum wire_enum_phase, wire_enum_timing_mode, wire_enum_coverage, wire_enum_scope,
    wire_enum_span_kind, wire_enum_step, wire_enum_category, wire_enum_grad_state, wire_enum_family_expectation,
    wire_enum_outcome;
extern const wire_record wire_run_meta, wire_capture_contract, wire_comparison_identity, wire_gradient_contract,
    wire_span_start, wire_span_end, wire_op, wire_tensor, wire_tensor_stats, wire_memory, wire_device_memory,
    wire_device_interval, wire_gradient, wire_call_edge, wire_data_edge, wire_terminal;

/* span_end decodes into this (a span_end updates the span it names). */
typedef struct wire_span_end_rec {
    const char *id;
    uint64_t duration_ns;
} wire_span_end_rec;

/* How strings are stored: intern(ctx, s, len) for W_STR/W_OSTR/lists/tags,
 * copy(ctx, s, len) for W_ID; dims(ctx, d, n) stores a shape's dims (maybe
 * shared with an equal shape: never written afterwards); arena for the other
 * arrays. */
typedef struct wire_sink {
    cg_arena *arena;
    const char *(*intern)(void *ctx, const char *s, size_t len);
    const char *(*copy)(void *ctx, const char *s, size_t len);
    uint64_t *(*dims)(void *ctx, const uint64_t *d, size_t n);
    void *ctx;
} wire_sink;
/* Shapes of up to this many dims are decoded on the stack and stored through
 * sink->dims; longer ones go straight into the arena (not shared). */
#define WIRE_SHAPE_STACK 16

/* An enum-typed member of a record (W_ENUM, W_ENUM_DEF, W_OENUM), by its size. */
static inline void wire_enum_put(const wire_field *f, void *out, int x) {
    if (f->aux2 == 1) *((uint8_t *)out + f->off) = (uint8_t)x;
    else *(int *)(void *)((char *)out + f->off) = x;
}
static inline int wire_enum_get(const wire_field *f, const void *in) {
    if (f->aux2 == 1) return *((const uint8_t *)in + f->off);
    return *(const int *)(const void *)((const char *)in + f->off);
}

/* Decodes obj into out (zeroed by the caller) per rec. On failure returns -1
 * with serde's message (no position) in msg. */
int wire_decode(const wire_record *rec, const cg_jv *obj, void *out, const wire_sink *sink, cg_buf *msg);

/* true for the types serde requires (no default, not an Option). */
bool wire_required(wire_type t);

/* Appends rec's fields of in to obj in declaration order, applying the omission
 * rules; include_derived also writes reader-derived values (record renderings). */
void wire_encode(cg_arena *a, cg_jv *obj, const wire_record *rec, const void *in, bool include_derived);

/* serde_json's description of an unexpected value: `integer `5``, `string "x"`, `map`, … */
void wire_unexpected(cg_buf *b, const cg_jv *v);
/* serde's "unknown variant `x`, expected …" for a list of names. */
void wire_unknown_variant(cg_buf *b, const char *variant, const char *const *names, size_t n);

#endif
