/* scan.c — single-pass scanner of flat trace lines and the table-driven decode
 * of its members into record structs (scan.h). Every value it produces is the
 * one cg_json_parse + wire_decode produce for the same line; everything else
 * is refused so that the general path decides. */
#include "trace/scan.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- scanning */

typedef struct sc {
    const char *p, *end;
    const cg_json_limits *lim;
} sc;

static inline void ws(sc *s) {
    if (s->p < s->end && (unsigned char)*s->p > ' ') return; /* compact JSON: no whitespace */
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\r' || *s->p == '\n')) s->p++;
}

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* The high bit of each of the 8 bytes of w that is '"', '\\', a control
 * character or >= 0x80 (bytes above the first such byte may be flagged too:
 * the lowest flag is exact). */
static inline uint64_t special8(uint64_t w) {
    uint64_t quote = w ^ (ONES * '"'), slash = w ^ (ONES * '\\');
    uint64_t zero = ((quote - ONES) & ~quote) | ((slash - ONES) & ~slash);
    uint64_t ctrl = (w - ONES * 0x20) & ~w;
    return (zero | ctrl | w) & HIGHS;
}

/* 1 for the bytes a plain string stops at: '"', '\\', control characters, >= 0x80. */
static const unsigned char special[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};

/* s->p after the opening quote: the plain string up to its closing quote. */
static inline __attribute__((always_inline)) int str(sc *s, const char **out, size_t *len) {
    const unsigned char *b = (const unsigned char *)s->p, *q = b, *e = (const unsigned char *)s->end;
    bool high = false;
    for (;; q++) { /* q: at the next special byte, then past it (UTF-8) */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        for (uint64_t w, m; e - q >= 8; q += 8) { /* 8 bytes at a time; the lowest flag is the first special */
            memcpy(&w, q, 8);
            if ((m = special8(w)) != 0) {
                q += __builtin_ctzll(m) >> 3;
                break;
            }
        }
#endif
        while (q < e && !special[*q]) q++;
        if (q == e) return -1;
        unsigned c = *q;
        if (c == '"') break;
        if (c == '\\' || c < 0x20) return -1;
        high = true;
    }
    size_t n = (size_t)(q - b);
    if (n > s->lim->max_string) return -1;
    if (high && !cg_utf8_valid((const char *)b, n)) return -1;
    *out = (const char *)b;
    *len = n;
    s->p = (const char *)q + 1;
    return 0;
}

static inline bool digit(char c) { return c >= '0' && c <= '9'; }

/* A JSON number: SV_INT when it is a non-negative integer that fits u64, else SV_NUM. */
static int num(sc *s, scan_val *v) {
    const char *b = s->p;
    bool neg = s->p < s->end && *s->p == '-';
    if (neg) s->p++;
    if (s->p >= s->end || !digit(*s->p)) return -1;
    uint64_t mag = 0;
    bool fits = !neg;
    if (*s->p == '0') {
        s->p++;
        if (s->p < s->end && digit(*s->p)) return -1;
    } else {
        for (; s->p < s->end && digit(*s->p); s->p++) {
            unsigned d = (unsigned)(*s->p - '0');
            if (mag > (UINT64_MAX - d) / 10) fits = false;
            else mag = mag * 10 + d;
        }
    }
    if (s->p < s->end && *s->p == '.') {
        fits = false;
        if (++s->p >= s->end || !digit(*s->p)) return -1;
        while (s->p < s->end && digit(*s->p)) s->p++;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        fits = false;
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-')) s->p++;
        if (s->p >= s->end || !digit(*s->p)) return -1;
        while (s->p < s->end && digit(*s->p)) s->p++;
    }
    v->type = fits ? SV_INT : SV_NUM;
    v->u = mag;
    v->p = b;
    v->len = (size_t)(s->p - b);
    return 0;
}

static bool lit(sc *s, const char *w, size_t n) {
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n) != 0) return false;
    s->p += n;
    return true;
}

/* s->p after '[': a flat array of plain strings or of u64 integers. */
static int arr(sc *s, scan_val *v) {
    if (s->lim->max_depth < 2) return -1;
    v->p = s->p;
    v->n = 0;
    ws(s);
    if (s->p < s->end && *s->p == ']') {
        v->type = SV_EMPTY;
        v->len = (size_t)(s->p - v->p);
        s->p++;
        return 0;
    }
    v->type = s->p < s->end && *s->p == '"' ? SV_STRARR : SV_INTARR;
    for (;;) {
        if (s->p >= s->end) return -1;
        if (v->type == SV_STRARR) {
            const char *x;
            size_t xl;
            if (*s->p != '"') return -1;
            s->p++;
            if (str(s, &x, &xl)) return -1;
        } else {
            scan_val d;
            if (num(s, &d) || d.type != SV_INT) return -1;
        }
        if (++v->n > s->lim->max_items) return -1;
        ws(s);
        if (s->p >= s->end) return -1;
        if (*s->p == ']') break;
        if (*s->p != ',') return -1;
        s->p++;
        ws(s);
    }
    v->len = (size_t)(s->p - v->p);
    s->p++;
    return 0;
}

static int value(sc *s, scan_val *v) {
    if (s->p >= s->end) return -1;
    switch (*s->p) {
    case '"':
        s->p++;
        v->type = SV_STR;
        return str(s, &v->p, &v->len);
    case '[': s->p++; return arr(s, v);
    case 't': v->type = SV_TRUE; return lit(s, "true", 4) ? 0 : -1;
    case 'f': v->type = SV_FALSE; return lit(s, "false", 5) ? 0 : -1;
    case 'n': v->type = SV_NULL; return lit(s, "null", 4) ? 0 : -1;
    default: return num(s, v);
    }
}

int scan_object(const char *p, size_t n, const cg_json_limits *lim, scan_obj *o) {
    sc s = {p, p + n, lim};
    o->n = 0;
    if (n < 2 || p[0] != '{' || lim->max_depth < 1) return -1;
    s.p++;
    ws(&s);
    if (s.p < s.end && *s.p == '}') return -1; /* {} : missing `kind`, the general path words it */
    for (;;) {
        if (o->n == SCAN_MAX_MEMBERS || o->n >= lim->max_items) return -1;
        scan_member *m = &o->m[o->n];
        if (s.p >= s.end || *s.p != '"') return -1;
        s.p++;
        if (str(&s, &m->key, &m->key_len)) return -1;
        ws(&s);
        if (s.p >= s.end || *s.p != ':') return -1;
        s.p++;
        ws(&s);
        if (value(&s, &m->v)) return -1;
        o->n++;
        ws(&s);
        if (s.p >= s.end) return -1;
        if (*s.p == '}') break;
        if (*s.p != ',') return -1;
        s.p++;
        ws(&s);
    }
    s.p++;
    ws(&s);
    return s.p == s.end ? 0 : -1;
}

const scan_member *scan_member_only(const scan_obj *o, const char *key, size_t len) {
    const scan_member *hit = NULL;
    for (size_t i = 0; i < o->n; i++) {
        const scan_member *m = &o->m[i];
        if (m->key_len != len || memcmp(m->key, key, len) != 0) continue;
        if (hit) return NULL;
        hit = m;
    }
    return hit;
}

/* ---------------------------------------------------------------- decoding */

#define AT(T, base, off) ((T *)((char *)(base) + (off)))

static const char *put_str(const wire_sink *k, const scan_val *v, bool copy) {
    return (copy ? k->copy : k->intern)(k->ctx, v->p, v->len);
}

/* serde_json hands f64 an integer as a cast, any other number as strtod's value. */
static int to_f64(const scan_val *v, double *out) {
    if (v->type == SV_INT) {
        *out = (double)v->u;
        return 0;
    }
    if (v->type != SV_NUM || v->len >= 64) return -1;
    char tmp[64];
    memcpy(tmp, v->p, v->len);
    tmp[v->len] = '\0';
    double d = strtod(tmp, NULL);
    if (!isfinite(d)) return -1;
    *out = d;
    return 0;
}

static int to_enum(const wire_field *f, const scan_val *v, int *out) {
    if (v->type != SV_STR) return -1;
    const wire_enum *e = f->sub;
    for (size_t i = 0; i < e->n; i++) {
        const char *nm = e->names[i];
        if (nm && scan_name_is(nm, v->p, v->len)) {
            *out = (int)i;
            return 0;
        }
    }
    return -1;
}

/* The next plain string of a validated SV_STRARR (*q inside the brackets, before end). */
static void next_str(const char **q, const char *end, const char **s, size_t *len) {
    const char *p = (const char *)memchr(*q, '"', (size_t)(end - *q)) + 1;
    const char *e = memchr(p, '"', (size_t)(end - p));
    *s = p;
    *len = (size_t)(e - p);
    *q = e + 1;
}

static int to_strlist(const wire_sink *k, const scan_val *v, cg_strlist *out) {
    if (v->type == SV_EMPTY) return 0;
    if (v->type != SV_STRARR) return -1;
    out->n = v->n;
    out->items = cg_arena_alloc(k->arena, v->n * sizeof *out->items);
    const char *q = v->p;
    for (size_t i = 0; i < v->n; i++) {
        const char *s;
        size_t len;
        next_str(&q, v->p + v->len, &s, &len);
        out->items[i] = k->intern(k->ctx, s, len);
    }
    return 0;
}

static int to_shape(const wire_sink *k, const scan_val *v, cg_shape *out) {
    if (v->type == SV_EMPTY) return 0;
    if (v->type != SV_INTARR) return -1;
    uint64_t tmp[WIRE_SHAPE_STACK];
    uint64_t *dims = v->n <= WIRE_SHAPE_STACK ? tmp : cg_arena_alloc(k->arena, v->n * sizeof *dims);
    const char *q = v->p;
    for (size_t i = 0; i < v->n; i++) {
        while (!digit(*q)) q++;
        uint64_t x = 0;
        for (; digit(*q); q++) x = x * 10 + (uint64_t)(*q - '0');
        dims[i] = x;
    }
    out->n = v->n;
    out->dims = v->n <= WIRE_SHAPE_STACK ? k->dims(k->ctx, tmp, v->n) : dims;
    return 0;
}

static int field(const wire_field *f, const scan_val *v, void *out, const wire_sink *k) {
    bool null = v->type == SV_NULL;
    int x;
    switch (f->type) {
    case W_OSTR:
        if (null) return 0;
        /* fall through */
    case W_STR:
    case W_ID:
        if (v->type != SV_STR) return -1;
        *AT(const char *, out, f->off) = put_str(k, v, f->type == W_ID);
        return 0;
    case W_OU64:
    case W_OU64_DERIVED:
        if (null) return 0;
        if (v->type != SV_INT) return -1;
        *AT(bool, out, f->aux) = true;
        *AT(uint64_t, out, f->off) = v->u;
        return 0;
    case W_U64:
    case W_U64_DEF:
    case W_USIZE:
        if (v->type != SV_INT) return -1;
        *AT(uint64_t, out, f->off) = v->u;
        return 0;
    case W_OF64:
        if (null) return 0;
        if (to_f64(v, AT(double, out, f->off))) return -1;
        *AT(bool, out, f->aux) = true;
        return 0;
    case W_F64: return to_f64(v, AT(double, out, f->off));
    case W_BOOL_DEF:
        if (v->type != SV_TRUE && v->type != SV_FALSE) return -1;
        *AT(bool, out, f->off) = v->type == SV_TRUE;
        return 0;
    case W_OENUM:
        if (null) return 0;
        /* fall through */
    case W_ENUM:
    case W_ENUM_DEF:
        if (to_enum(f, v, &x)) return -1;
        wire_enum_put(f, out, x);
        return 0;
    case W_ENUM_BOOL:
        if (to_enum(f, v, &x)) return -1;
        *AT(bool, out, f->off) = x == 1;
        return 0;
    case W_STRLIST_DEF:
    case W_STRLIST_SKIP: return to_strlist(k, v, AT(cg_strlist, out, f->off));
    case W_SHAPE:
    case W_SHAPE_DEF: return to_shape(k, v, AT(cg_shape, out, f->off));
    case W_TAGS:
    case W_STRUCT:
    case W_OSTRUCT:
    case W_SEQ: return -1; /* nested records: the general path */
    }
    return -1;
}

/* Whether the n bytes at a and b are equal (short keys: no library call). */
static inline bool same_bytes(const char *a, const char *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return false;
    return true;
}

static int field_index(const wire_record *rec, const char *key, size_t len) {
    for (size_t i = 0; i < rec->n_fields; i++) {
        const wire_field *f = &rec->fields[i];
        if (f->name_len == len && same_bytes(f->name, key, len)) return (int)i;
    }
    return -1;
}

/* Members usually come in declaration order: the field after the last match is tried first. */
static int field_at(const wire_record *rec, size_t guess, const char *key, size_t len) {
    if (guess < rec->n_fields) {
        const wire_field *f = &rec->fields[guess];
        if (f->name_len == len && same_bytes(f->name, key, len)) return (int)guess;
    }
    return len ? field_index(rec, key, len) : -1;
}

int scan_decode(const wire_record *rec, const scan_obj *o, void *out, const wire_sink *sink) {
    uint32_t seen = 0;
    size_t guess = 0;
    for (size_t i = 0; i < o->n; i++) {
        const scan_member *m = &o->m[i];
        int fi = field_at(rec, guess, m->key, m->key_len);
        if (fi >= 0) guess = (size_t)fi + 1;
        if (fi < 0) continue;
        if (seen & (1u << fi)) return -1;
        seen |= 1u << fi;
        if (field(&rec->fields[fi], &m->v, out, sink)) return -1;
    }
    for (size_t i = 0; i < rec->n_fields; i++) {
        const wire_field *f = &rec->fields[i];
        if (seen & (1u << i)) continue;
        if (wire_required(f->type)) return -1;
        if (f->type == W_ENUM_DEF) wire_enum_put(f, out, f->def);
    }
    return 0;
}
