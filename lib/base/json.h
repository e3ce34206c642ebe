/* json.h — JSON values, a bounded parser and serde_json-compatible writers.
 *
 * Values live in a cg_arena (the arena owns every node and string; nothing is
 * freed individually). Objects keep member order (insertion / document order),
 * which the writers reproduce, so struct field order is whatever order the
 * builder inserts. Integers keep full u64 / i64 range; a number with '.', 'e'
 * or 'E' (or an integer beyond u64) is a real.
 *
 * Parser limits (cg_json_limits): nesting depth, string length, members/items
 * per container; exceeding one is CG_ELIMIT with a message naming the limit.
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
} cg_jtype;

typedef struct cg_jv cg_jv;
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
    } u;
};

typedef struct cg_json_limits {
    unsigned max_depth;        /* default 64 */
    size_t max_string;         /* bytes, default 16 MiB */
    size_t max_items;          /* per array/object, default 10,000,000 */
} cg_json_limits;

void cg_json_limits_default(cg_json_limits *l);

/* Parses exactly one JSON value (surrounding whitespace allowed). NULL on error. */
cg_jv *cg_json_parse(cg_arena *a, const char *text, size_t len, const cg_json_limits *lim,
                     cg_error *err);

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
/* Appends a member (no duplicate check); key is NOT copied (use literals or arena strings). */
void cg_jv_obj_put(cg_arena *a, cg_jv *obj, const char *key, cg_jv *v);
/* Replaces the first member named key, or appends. */
void cg_jv_obj_set(cg_arena *a, cg_jv *obj, const char *key, cg_jv *v);
/* Deep copy into arena a. */
cg_jv *cg_jv_clone(cg_arena *a, const cg_jv *v);

/* ---- access ---- */
cg_jv *cg_jv_get(const cg_jv *obj, const char *key);  /* NULL if absent or not an object */
bool cg_jv_obj_remove(cg_jv *obj, const char *key);
const char *cg_jv_obj_dup_key(const cg_jv *obj);       /* first duplicated key or NULL */
bool cg_jv_is_u64(const cg_jv *v);
bool cg_jv_as_u64(const cg_jv *v, uint64_t *out);      /* non-negative integer */
bool cg_jv_as_i64(const cg_jv *v, int64_t *out);
bool cg_jv_as_f64(const cg_jv *v, double *out);        /* any number */
const char *cg_jv_as_str(const cg_jv *v);              /* NULL unless string */
static inline size_t cg_jv_len(const cg_jv *v) {
    return !v ? 0 : v->type == CG_JARR ? v->u.arr.n : v->type == CG_JOBJ ? v->u.obj.n : 0;
}
static inline cg_jv *cg_jv_at(const cg_jv *v, size_t i) { return v->u.arr.items[i]; }

/* serde_json::Value equality: same type; integers equal by value; an integer
 * never equals a real (serde_json keeps them apart); objects equal as key sets
 * regardless of order; arrays element-wise. */
bool cg_jv_equal(const cg_jv *a, const cg_jv *b);

/* ---- output ---- */
void cg_json_write(cg_buf *out, const cg_jv *v, bool pretty);
void cg_json_write_str(cg_buf *out, const char *s, size_t len);  /* quoted + escaped */
void cg_json_write_f64(cg_buf *out, double d);                    /* ryu-style shortest */
void cg_json_write_u64(cg_buf *out, uint64_t v);
/* Writes `v` pretty + one trailing newline into path (not atomic; caller decides). */
int cg_json_write_file(const char *path, const cg_jv *v, bool pretty, cg_error *err);

#endif
