/* scan.h — the fast path of the trace reader (internal to lib/trace).
 *
 * One pass over a trimmed JSONL line that is a flat JSON object: members whose
 * values are plain strings (no escapes, no control characters, valid UTF-8),
 * integers, other numbers, true/false/null, or flat arrays of plain strings or
 * of non-negative integers. Nothing is allocated: a scan_obj points into the
 * line. scan_decode then fills a record struct through its wire table
 * (wire.h) with exactly the values the general path (cg_json_parse +
 * wire_decode) produces.
 *
 * Both functions only ever accept: any line or record they cannot take as-is
 * (a nested object, an escape, a duplicate field, a wrong type, a missing
 * field, a limit reached, a syntax error) returns -1 and the caller runs the
 * general path, which yields the value or serde's exact message. A refused
 * scan_decode may have interned strings or allocated arrays (never freed
 * early; harmless). */
#ifndef CG_TRACE_SCAN_H
#define CG_TRACE_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/json.h"
#include "trace/wire.h"

typedef enum scan_type {
    SV_STR,    /* p,len: the string's bytes (no escapes) */
    SV_INT,    /* u: a non-negative integer that fits u64 */
    SV_NUM,    /* p,len: any other number literal (negative, fraction, exponent, > u64) */
    SV_TRUE,
    SV_FALSE,
    SV_NULL,
    SV_STRARR, /* p,len: between the brackets; n plain strings */
    SV_INTARR, /* p,len: between the brackets; n non-negative u64 integers */
    SV_EMPTY,  /* [] */
} scan_type;

typedef struct scan_val {
    const char *p;
    size_t len, n;
    uint64_t u;
    scan_type type;
} scan_val;

typedef struct scan_member {
    const char *key;
    size_t key_len;
    scan_val v;
} scan_member;

#define SCAN_MAX_MEMBERS 32

typedef struct scan_obj {
    scan_member m[SCAN_MAX_MEMBERS];
    size_t n;
} scan_obj;

/* Whether the NUL-terminated name equals the len bytes at s (which hold no NUL). */
static inline bool scan_name_is(const char *name, const char *s, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (name[i] != s[i]) return false;
    return name[len] == '\0';
}

/* Scans the n bytes at p (already trimmed) as one flat object within lim.
 * 0 on success, -1 when the line needs the general path. */
int scan_object(const char *p, size_t n, const cg_json_limits *lim, scan_obj *o);

/* The only member named key (len bytes); NULL when there is none or more than one. */
const scan_member *scan_member_only(const scan_obj *o, const char *key, size_t len);

/* Decodes o into out (zeroed by the caller) per rec, with serde derive's
 * semantics; 0, or -1 when the general path must decide. */
int scan_decode(const wire_record *rec, const scan_obj *o, void *out, const wire_sink *sink);

#endif
