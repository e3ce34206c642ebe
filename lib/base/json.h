/* json.h — JSON values, a bounded parser and serde_json-compatible writers.
 *
 * Values live in a cg_arena (the arena owns every node and string; nothing is
 * freed individually). Objects keep member order (insertion / document order),
 * which the writers reproduce, so struct field order is whatever order the
 * builder inserts. Integers keep full u64 / i64 range; a number with '.', 'e'
 * or 'E' (or an integer beyond u64 / below i64, or "-0") is a real, as in serde_json.
 *
 * Parser limits (cg_json_limits): nesting depth, string length, members/items
 * per container; exceeding one is CG_ELIMIT with a message naming the limit.
 * A parse failure carries its reason (base/reason.h), set here: syntax errors
 * CG_R_MALFORMED_JSON, limits CG_R_PAYLOAD_TOO_LARGE with cg_error.limit one
 * of the CG_JSON_LIMIT_* names below. Callers that parse a document of a
 * known kind (bundle.json, a signature) may replace it with their own.
 * Duplicate object keys are kept (lookups return the first); callers that need
 * struct semantics call cg_jv_obj_dup_key().
 *
 * Writers: compact (serde_json::to_string) and pretty (to_string_pretty: two
 * spaces, ": ", empty containers as [] / {}). Reals use the shortest decimal
 * that round-trips, formatted as Rust's ryu does (1.0, 0.71, 1e-7, 1e16);
 * NaN and infinities are written as null like serde_json. Strings escape ",
 * \, control characters (\b \f \n \r \t, others \u00XX lowercase hex) and
 * nothing else. */
#ifndef CG_BASE_JSON_H
#define CG_BASE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/error.h"

typedef enum cg_jtype {
    CG_JNULL = 0,
    CG_JBOOL,
    CG_JINT,   /* integer: magnitude u + sign neg */
    CG_JREAL,
    CG_JSTR,
    CG_JARR,
    CG_JOBJ,
    CG_JLAZY,  /* an array whose items are produced on demand (cg_jv_lazy_arr) */
} cg_jtype;

typedef struct cg_jv cg_jv;

/* Produces item i of a lazy array into arena a. Items are always requested in
 * order 0, 1, …, n-1 within one pass (a generator may keep running state in
 * ctx and reset it when i == 0); a value may be walked several times (write,
 * compare, materialize), each walk being a new pass. The returned value may use
 * strings that outlive the pass (nocopy) and may itself contain lazy arrays. */
typedef cg_jv *(*cg_jv_item_fn)(cg_arena *a, void *ctx, size_t i);

typedef struct cg_jmember {
    const char *key;
    size_t key_len;
    cg_jv *val;
} cg_jmember;

struct cg_jv {
    cg_jtype type;
    union {
        bool b;
        struct { uint64_t mag; bool neg; } i;
        double d;
        struct { const char *s; size_t len; } str;  /* NUL-terminated, may contain NUL */
        struct { cg_jv **items; size_t n, cap; } arr;
        struct { cg_jmember *m; size_t n, cap; } obj;
        struct { cg_jv_item_fn item; void *ctx; size_t n; } lazy;
    } u;
};

typedef struct cg_json_limits {
    unsigned max_depth;        /* default 64 */
    size_t max_string;         /* bytes, default 16 MiB */
    size_t max_items;          /* per array/object, default 10,000,000 */
} cg_json_limits;

void cg_json_limits_default(cg_json_limits *l);

/* cg_error.limit of a parse that exceeded a cg_json_limits field. */
#define CG_JSON_LIMIT_DEPTH "json_depth"
#define CG_JSON_LIMIT_STRING "json_string_bytes"
#define CG_JSON_LIMIT_ITEMS "json_items"

/* true when the n bytes at s are well-formed UTF-8 (no overlongs, no surrogates). */
bool cg_utf8_valid(const char *s, size_t n);

/* Parses exactly one JSON value (surrounding whitespace allowed). NULL on error:
 * CG_EPARSE with serde_json's message and position ("EOF while parsing an
 * object at line 3 column 1"; line 1-based, column = bytes of that line before
 * the reader's position, as serde_json's SliceRead counts them), CG_ELIMIT for
 * a limit (our words, same position suffix), CG_ENOMEM. */
cg_jv *cg_json_parse(cg_arena *a, const char *text, size_t len, const cg_json_limits *lim,
                     cg_error *err);
/* ---- parsing with lazy arrays (readers of documents larger than memory) ----
 * cg_json_parse_hooked parses like cg_json_parse (same errors, positions and
 * limits) but asks want_lazy before each array whose route from the root has
 * at most CG_JSON_HOOK_DEPTH steps (path[k]: the member key of step k, NULL
 * for an array item; arrays inside a lazy array are never asked). A lazy
 * array's items are each parsed into a scratch arena reset per item (so all
 * of the text is checked), progress is told the bytes behind the reader after
 * each item, and make_lazy returns the value standing for the array: its
 * text is [start, end) ('[' through ']'), holding n items (NULL: out of
 * memory). Two more limits (0 = none), CG_ELIMIT with the position suffix:
 * max_item_bytes, the text of one lazy item ("array item longer than the
 * limit"), and max_tree_bytes, the text outside lazy arrays ("JSON text kept
 * as a tree longer than the limit"); both are checked at each value start,
 * so a hostile text costs O(its size) time and O(one item + the tree)
 * memory. */
#define CG_JSON_HOOK_DEPTH 8
typedef struct cg_json_hook {
    bool (*want_lazy)(void *ctx, const char *const *path, size_t depth);
    void (*progress)(void *ctx, size_t done); /* may be NULL */
    cg_jv *(*make_lazy)(void *ctx, cg_arena *a, size_t start, size_t end, size_t n);
    size_t max_item_bytes, max_tree_bytes;
    void *ctx;
} cg_json_hook;
cg_jv *cg_json_parse_hooked(cg_arena *a, const char *text, size_t len, const cg_json_limits *lim,
                            const cg_json_hook *hook, cg_error *err);
/* Parses the one value at text[*pos..len) (leading whitespace skipped) and
 * leaves *pos just past it; what follows is not looked at. Errors as
 * cg_json_parse, positions counted from text. For re-reading the items of a
 * lazy array. */
cg_jv *cg_json_parse_at(cg_arena *a, const char *text, size_t len, size_t *pos, const cg_json_limits *lim,
                        cg_error *err);

/* serde_json's position of byte index `at` of text: *line = 1 + the line
 * breaks before it, *column = the bytes between the last of them and `at`. */
void cg_json_position(const char *text, size_t at, size_t *line, size_t *column);

/* One step down a parsed text: an object member named `key` (its first
 * occurrence), or with key NULL the member or item at ordinal `index` (input
 * order, repeated keys counted). */
typedef struct cg_json_step {
    const char *key;
    size_t index;
} cg_json_step;
/* Where serde_json's reader stands at the value reached by steps[0..n) from
 * the root of text (n = 0: the root): CG_JSON_VALUE_END just past that value
 * (read), CG_JSON_VALUE_START at its first byte (peeked, as for a map or a
 * sequence of the wrong type), CG_JSON_KEY_END just past the key of the last
 * step (an object member). text must be valid JSON (cg_json_parse accepted
 * it); returns len when a step does not exist. Costs one scan; for errors. */
typedef enum cg_json_at { CG_JSON_VALUE_END, CG_JSON_VALUE_START, CG_JSON_KEY_END } cg_json_at;
size_t cg_json_locate(const char *text, size_t len, const cg_json_step *steps, size_t n, cg_json_at where);
/* Appends serde_json's " at line L column C" for byte index at to err's
 * message (its innermost cause). */
void cg_json_err_at(cg_error *err, const char *text, size_t at);

/* ---- construction ---- */
cg_jv *cg_jv_null(cg_arena *a);
cg_jv *cg_jv_bool(cg_arena *a, bool b);
cg_jv *cg_jv_u64(cg_arena *a, uint64_t v);
cg_jv *cg_jv_i64(cg_arena *a, int64_t v);
cg_jv *cg_jv_f64(cg_arena *a, double v);
cg_jv *cg_jv_str(cg_arena *a, const char *s);          /* copies */
cg_jv *cg_jv_strn(cg_arena *a, const char *s, size_t n); /* copies */
cg_jv *cg_jv_str_nocopy(cg_arena *a, const char *s);   /* s must outlive the value */
cg_jv *cg_jv_arr(cg_arena *a);
cg_jv *cg_jv_obj(cg_arena *a);
void cg_jv_arr_push(cg_arena *a, cg_jv *arr, cg_jv *v);
/* Appends a member (no duplicate check); key is NOT copied (use literals or arena strings).
 * Inline so that strlen of a literal key folds to a constant. */
void cg_jv_obj_putn(cg_arena *a, cg_jv *obj, const char *key, size_t key_len, cg_jv *v);
static inline void cg_jv_obj_put(cg_arena *a, cg_jv *obj, const char *key, cg_jv *v) {
    cg_jv_obj_putn(a, obj, key, strlen(key), v);
}
/* Replaces the first member named key, or appends. */
void cg_jv_obj_set(cg_arena *a, cg_jv *obj, const char *key, cg_jv *v);
/* Deep copy into arena a (strings and keys copied). Lazy arrays are
 * materialized into ordinary arrays in the copy. */
cg_jv *cg_jv_clone(cg_arena *a, const cg_jv *v);

/* ---- lazy arrays (streaming) ----
 * A CG_JLAZY value is an array of n items that item(a, ctx, i) produces when
 * the value is written, compared, cloned or materialized; nothing of the items
 * is kept. The writers produce exactly the bytes of the equivalent ordinary
 * array (pretty indentation included), building each item in a scratch arena
 * that is reset per item, so a document of lazy arrays is written in memory
 * bounded by its largest item. ctx and whatever the items reference must
 * outlive every use of the value. The access functions below (cg_jv_len,
 * cg_jv_at, cg_jv_get on items) see a lazy array as an opaque value: call
 * cg_jv_materialize first when a DOM is needed. */
cg_jv *cg_jv_lazy_arr(cg_arena *a, size_t n, cg_jv_item_fn item, void *ctx);
/* Replaces, in place, every lazy array reachable from v by an ordinary array
 * whose items are built in arena a; returns v. Keys and strings are not copied. */
cg_jv *cg_jv_materialize(cg_arena *a, cg_jv *v);
/* Items of an array or a lazy array (0 for anything else). */
size_t cg_jv_items(const cg_jv *v);
/* Visits the items of an array or lazy array in order without materializing
 * it: a lazy item lives in a scratch arena that is reset after fn returns, so
 * fn must copy (cg_jv_clone) whatever it keeps. fn returns 0 to continue;
 * a non-zero return stops the walk and is returned. Anything that is neither
 * an array nor a lazy array has no items (returns 0). */
typedef int (*cg_jv_visit_fn)(void *ctx, size_t i, const cg_jv *item);
int cg_jv_each(const cg_jv *v, cg_jv_visit_fn fn, void *ctx);

/* ---- access ---- */
cg_jv *cg_jv_get(const cg_jv *obj, const char *key);  /* NULL if absent or not an object */
bool cg_jv_obj_remove(cg_jv *obj, const char *key);
const char *cg_jv_obj_dup_key(const cg_jv *obj);       /* first duplicated key or NULL */
bool cg_jv_is_u64(const cg_jv *v);
bool cg_jv_as_u64(const cg_jv *v, uint64_t *out);      /* non-negative integer */
bool cg_jv_as_i64(const cg_jv *v, int64_t *out);
bool cg_jv_as_f64(const cg_jv *v, double *out);        /* any number */
const char *cg_jv_as_str(const cg_jv *v);              /* NULL unless string */
/* The string as a C string: NULL unless v is a string with no NUL (\u0000) inside,
 * which a C string would silently end at. */
const char *cg_jv_as_cstr(const cg_jv *v);
static inline size_t cg_jv_len(const cg_jv *v) {
    return !v ? 0 : v->type == CG_JARR ? v->u.arr.n : v->type == CG_JOBJ ? v->u.obj.n : 0;
}
static inline cg_jv *cg_jv_at(const cg_jv *v, size_t i) { return v->u.arr.items[i]; }

/* serde_json::Value equality (a lazy array equals the array it produces): same type; integers equal by value; an integer
 * never equals a real (serde_json keeps them apart); objects equal as key sets
 * regardless of order; arrays element-wise. */
bool cg_jv_equal(const cg_jv *a, const cg_jv *b);

/* ---- output ---- */
void cg_json_write(cg_buf *out, const cg_jv *v, bool pretty);
void cg_json_write_str(cg_buf *out, const char *s, size_t len);  /* quoted + escaped */
void cg_json_write_f64(cg_buf *out, double d);                    /* ryu-style shortest */
void cg_json_write_u64(cg_buf *out, uint64_t v);
/* Writes `v` (pretty or compact) + one trailing newline into path (not atomic;
 * caller decides). Streams through a bounded buffer. */
int cg_json_write_file(const char *path, const cg_jv *v, bool pretty, cg_error *err);

/* Streaming output: the same bytes as cg_json_write (+ "\n" when newline),
 * handed to sink in chunks of about CG_JSON_CHUNK bytes (a chunk may exceed it
 * by the size of one scalar / one indentation run; never by a whole container),
 * so memory stays bounded by the chunk plus the largest lazy item. sink returns
 * 0 to continue, non-zero to stop; the writer then stops early and returns that
 * value. Returns 0 when everything was delivered. */
#define CG_JSON_CHUNK ((size_t)1 << 20)
typedef int (*cg_json_sink)(void *ctx, const char *data, size_t len);
int cg_json_write_sink(const cg_jv *v, bool pretty, bool newline, cg_json_sink sink, void *ctx);
/* A sink writing everything to a file descriptor (ctx: cg_fd_sink_ctx; the fd is
 * not closed); retries EINTR, keeps the errno of a failed write in err_no. */
typedef struct cg_fd_sink_ctx {
    int fd;
    int err_no;
} cg_fd_sink_ctx;
int cg_fd_sink(void *ctx, const char *data, size_t len);
/* Streams to an open file descriptor (not closed). Errors: CG_EIO with strerror. */
int cg_json_write_fd(int fd, const cg_jv *v, bool pretty, bool newline, cg_error *err);

/* ---- UTF-8 ----
 * Length of the one valid UTF-8 sequence at p (within n bytes), 0 when the
 * bytes there are not one (overlong forms, surrogates and > U+10FFFF are
 * invalid, as in the parser). */
size_t cg_utf8_seq_len(const char *p, size_t n);
/* Length of the longest valid UTF-8 prefix of s (== n when all of s is valid). */
size_t cg_utf8_valid_prefix(const char *s, size_t n);

#endif
