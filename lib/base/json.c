#include "base/json.h"

#include "base/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void cg_json_limits_default(cg_json_limits *l) {
    l->max_depth = 64;
    l->max_string = 16u << 20;
    l->max_items = 10000000;
}

/* ------------------------------------------------------------------ parser */

typedef struct jp {
    cg_arena *a;
    const char *p, *end, *start;
    const cg_json_limits *lim;
    cg_error *err;
    unsigned depth;
    /* cg_json_parse_hooked only (hook NULL otherwise) */
    const cg_json_hook *hook;
    const char *path[CG_JSON_HOOK_DEPTH]; /* key per level, NULL for an array item */
    const char *item_start;               /* the lazy item being checked, NULL outside one */
    size_t lazy_bytes;                    /* text of the lazy arrays read so far */
} jp;

void cg_json_position(const char *text, size_t at, size_t *line, size_t *column) {
    size_t l = 1, bol = 0;
    for (const char *p = text, *end = text + at; (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++) {
        l++;
        bol = (size_t)(p - text) + 1;
    }
    *line = l;
    *column = at - bol;
}

/* ------------------------------------------------- locating a parsed value */

static const char *sk_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* p at an opening quote of valid JSON: past the closing one. */
static const char *sk_string(const char *p, const char *end) {
    for (p++; p < end && *p != '"'; p++)
        if (*p == '\\') p++;
    return p < end ? p + 1 : end;
}

/* p at a value of valid JSON: past it. */
static const char *sk_value(const char *p, const char *end) {
    if (p >= end) return end;
    if (*p == '"') return sk_string(p, end);
    if (*p != '{' && *p != '[') {
        while (p < end && !strchr(",]} \t\n\r", *p)) p++;
        return p;
    }
    size_t depth = 0;
    for (; p < end; p++) {
        if (*p == '"') p = sk_string(p, end) - 1;
        else if (*p == '{' || *p == '[') depth++;
        else if ((*p == '}' || *p == ']') && --depth == 0) return p + 1;
    }
    return end;
}

/* p at an object or array: the start of the wanted member's key (object) or
 * item (array), NULL when absent. */
static const char *sk_child(const char *p, const char *end, const cg_json_step *st) {
    bool obj = *p == '{';
    p = sk_ws(p + 1, end);
    for (size_t i = 0; p < end && *p != '}' && *p != ']'; i++) {
        const char *start = p;
        bool hit = !st->key && i == st->index;
        if (obj) {
            const char *kend = sk_string(p, end);
            size_t kl = strlen(st->key ? st->key : "");
            if (st->key && (size_t)(kend - p) == kl + 2 && !memcmp(p + 1, st->key, kl)) hit = true;
            p = sk_ws(sk_ws(kend, end) + 1, end); /* past ':' */
        }
        if (hit) return start;
        p = sk_ws(sk_value(p, end), end);
        if (p < end && *p == ',') p = sk_ws(p + 1, end);
    }
    return NULL;
}

size_t cg_json_locate(const char *text, size_t len, const cg_json_step *steps, size_t n, cg_json_at where) {
    bool key_end = where == CG_JSON_KEY_END;
    const char *end = text + len, *p = sk_ws(text, end);
    bool member = false;
    for (size_t i = 0; i < n; i++) {
        if (p >= end || (*p != '{' && *p != '[')) return len;
        member = *p == '{';
        if (!(p = sk_child(p, end, &steps[i]))) return len;
        if (member && (i + 1 < n || !key_end)) p = sk_ws(sk_ws(sk_string(p, end), end) + 1, end);
    }
    if (member && key_end) return (size_t)(sk_string(p, end) - text);
    return (size_t)((where == CG_JSON_VALUE_START ? p : sk_value(p, end)) - text);
}

void cg_json_err_at(cg_error *err, const char *text, size_t at) {
    if (!err) return;
    size_t line, col, n = strnlen(err->msg, sizeof err->msg);
    cg_json_position(text, at, &line, &col);
    snprintf(err->msg + n, sizeof err->msg - n, " at line %zu column %zu", line, col);
}

/* serde_json's Display of a syntax error: "MSG at line L column C", the
 * position being that of the reader just after byte `at` was consumed. Only
 * reached on failure, so the scan for line breaks costs nothing on success. */
static int jp_fail_at(jp *s, cg_errcode code, const char *what, const char *at) {
    size_t line, col;
    if (at > s->end) at = s->end;
    cg_json_position(s->start, (size_t)(at - s->start), &line, &col);
    return cg_err_setr(s->err, CG_R_MALFORMED_JSON, code, "%s at line %zu column %zu", what, line, col);
}

/* A parser limit: CG_ELIMIT, payload_too_large with the limit's static name. */
static int jp_limit(jp *s, const char *limit, const char *what) {
    jp_fail_at(s, CG_ELIMIT, what, s->p < s->end ? s->p + 1 : s->end);
    cg_err_reason(s->err, CG_R_PAYLOAD_TOO_LARGE);
    if (s->err) s->err->limit = limit;
    return -1;
}

/* serde_json's peek_error: the byte at p is the offending one (at the end of
 * the text, the end). */
static int jp_fail(jp *s, cg_errcode code, const char *what) {
    return jp_fail_at(s, code, what, s->p < s->end ? s->p + 1 : s->end);
}

static void jp_ws(jp *s) {
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')) s->p++;
}

static cg_jv *jv_new(cg_arena *a, cg_jtype t) {
    cg_jv *v = cg_arena_alloc(a, sizeof *v);
    memset(v, 0, sizeof *v);
    v->type = t;
    return v;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int read_hex4(jp *s, unsigned *out) {
    if (s->end - s->p < 4) return jp_fail_at(s, CG_EPARSE, "EOF while parsing a string", s->end);
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(s->p[i]);
        if (h < 0) return jp_fail_at(s, CG_EPARSE, "invalid escape", s->p + i + 1);
        v = (v << 4) | (unsigned)h;
    }
    s->p += 4;
    *out = v;
    return 0;
}

static size_t utf8_put(char *o, unsigned cp) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F)); return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Validates one UTF-8 sequence at p; returns its length or 0 if invalid. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end) {
    unsigned c = p[0];
    if (c < 0x80) return 1;
    size_t n;
    unsigned cp;
    if ((c & 0xE0) == 0xC0) { n = 2; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { n = 3; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { n = 4; cp = c & 0x07; }
    else return 0;
    if ((size_t)(end - p) < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000)) return 0;
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

bool cg_utf8_valid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        size_t l = utf8_len(p, end);
        if (!l) return false;
        p += l;
    }
    return true;
}

#define LONE_SURROGATE "lone leading surrogate in hex escape"

/* Invalid UTF-8 at s->p inside a string: serde_json checks the string once it
 * has found its closing quote, so the error is "invalid unicode code point"
 * after that quote, unless the scan meets a control character or the end. */
static int jp_bad_utf8(jp *s) {
    for (const char *q = s->p; q < s->end; q++) {
        if (*q == '"') return jp_fail_at(s, CG_EPARSE, "invalid unicode code point", q + 1);
        if ((unsigned char)*q < 0x20)
            return jp_fail_at(s, CG_EPARSE, "control character (\\u0000-\\u001F) found while parsing a string", q + 1);
        if (*q == '\\') q++;
    }
    return jp_fail_at(s, CG_EPARSE, "EOF while parsing a string", s->end);
}

/* s->p points just after the opening quote. */
static int jp_string(jp *s, const char **out, size_t *out_len) {
    const char *q = s->p;
    /* fast scan: plain ASCII without escapes */
    while (q < s->end) {
        unsigned char c = (unsigned char)*q;
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
        q++;
    }
    if (q < s->end && *q == '"') {
        size_t n = (size_t)(q - s->p);
        if (n > s->lim->max_string) return jp_limit(s, CG_JSON_LIMIT_STRING, "string longer than the limit");
        *out = cg_arena_strndup(s->a, s->p, n);
        *out_len = n;
        s->p = q + 1;
        return 0;
    }
    /* slow path: decode into a buffer no longer than the remaining input */
    size_t cap = 0;
    const char *r = q;
    while (r < s->end && *r != '"') {
        if (*r == '\\' && r + 1 < s->end) r++;
        r++;
    }
    cap = (size_t)(r - s->p) + 4;
    char *buf = cg_arena_alloc(s->a, cap + 1);
    size_t n = (size_t)(q - s->p);
    memcpy(buf, s->p, n);
    s->p = q;
    for (;;) {
        if (s->p >= s->end) return jp_fail(s, CG_EPARSE, "EOF while parsing a string");
        unsigned char c = (unsigned char)*s->p;
        if (c == '"') { s->p++; break; }
        if (c < 0x20) return jp_fail(s, CG_EPARSE, "control character (\\u0000-\\u001F) found while parsing a string");
        if (n > s->lim->max_string) return jp_limit(s, CG_JSON_LIMIT_STRING, "string longer than the limit");
        if (c == '\\') {
            s->p++;
            if (s->p >= s->end) return jp_fail(s, CG_EPARSE, "EOF while parsing a string");
            char e = *s->p++;
            switch (e) {
            case '"': buf[n++] = '"'; break;
            case '\\': buf[n++] = '\\'; break;
            case '/': buf[n++] = '/'; break;
            case 'b': buf[n++] = '\b'; break;
            case 'f': buf[n++] = '\f'; break;
            case 'n': buf[n++] = '\n'; break;
            case 'r': buf[n++] = '\r'; break;
            case 't': buf[n++] = '\t'; break;
            case 'u': {
                unsigned cp;
                if (read_hex4(s, &cp)) return -1;
                /* serde_json names a lone trailing surrogate "leading" too */
                if (cp >= 0xDC00 && cp <= 0xDFFF) return jp_fail_at(s, CG_EPARSE, LONE_SURROGATE, s->p);
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    unsigned lo;
                    for (int k = 0; k < 2; k++, s->p++) {
                        if (s->p >= s->end) return jp_fail_at(s, CG_EPARSE, "EOF while parsing a string", s->end);
                        if (*s->p != "\\u"[k]) return jp_fail(s, CG_EPARSE, "unexpected end of hex escape");
                    }
                    if (read_hex4(s, &lo)) return -1;
                    if (lo < 0xDC00 || lo > 0xDFFF) return jp_fail_at(s, CG_EPARSE, LONE_SURROGATE, s->p);
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                n += utf8_put(buf + n, cp);
                break;
            }
            default: return jp_fail_at(s, CG_EPARSE, "invalid escape", s->p);
            }
        } else if (c >= 0x80) {
            size_t l = utf8_len((const unsigned char *)s->p, (const unsigned char *)s->end);
            if (!l) return jp_bad_utf8(s);
            memcpy(buf + n, s->p, l);
            n += l;
            s->p += l;
        } else {
            buf[n++] = (char)c;
            s->p++;
        }
    }
    if (n > s->lim->max_string) return jp_limit(s, CG_JSON_LIMIT_STRING, "string longer than the limit");
    buf[n] = '\0';
    *out = buf;
    *out_len = n;
    return 0;
}

/* serde_json: a number cut short by the end of the text is an EOF error. */
#define NUMBER_END(s) ((s)->p >= (s)->end ? "EOF while parsing a value" : "invalid number")

static cg_jv *jp_number(jp *s) {
    const char *b = s->p;
    bool neg = false, real = false;
    if (s->p < s->end && *s->p == '-') { neg = true; s->p++; }
    if (s->p >= s->end) { jp_fail(s, CG_EPARSE, "EOF while parsing a value"); return NULL; }
    if (*s->p == '0') {
        s->p++;
        if (s->p < s->end && *s->p >= '0' && *s->p <= '9') { jp_fail(s, CG_EPARSE, "invalid number"); return NULL; }
    } else if (*s->p >= '1' && *s->p <= '9') {
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9') s->p++;
    } else {
        jp_fail(s, CG_EPARSE, "invalid number");
        return NULL;
    }
    if (s->p < s->end && *s->p == '.') {
        real = true;
        s->p++;
        if (s->p >= s->end || *s->p < '0' || *s->p > '9') { jp_fail(s, CG_EPARSE, NUMBER_END(s)); return NULL; }
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9') s->p++;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        real = true;
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-')) s->p++;
        if (s->p >= s->end || *s->p < '0' || *s->p > '9') { jp_fail(s, CG_EPARSE, NUMBER_END(s)); return NULL; }
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9') s->p++;
    }
    size_t len = (size_t)(s->p - b);
    if (!real) {
        const char *d = b + (neg ? 1 : 0);
        uint64_t mag = 0;
        bool overflow = false;
        for (; d < s->p; d++) {
            unsigned dig = (unsigned)(*d - '0');
            if (mag > (UINT64_MAX - dig) / 10) { overflow = true; break; }
            mag = mag * 10 + dig;
        }
        /* like serde_json, "-0" is the float -0.0 */
        if (!overflow && (!neg || (mag != 0 && mag <= (uint64_t)INT64_MAX + 1u))) {
            cg_jv *v = jv_new(s->a, CG_JINT);
            v->u.i.mag = mag;
            v->u.i.neg = neg;
            return v;
        }
    }
    char tmp[512];
    char *heap = NULL;
    char *nb = tmp;
    if (len >= sizeof tmp) {
        heap = malloc(len + 1);
        if (!heap) { jp_fail(s, CG_ENOMEM, "out of memory"); return NULL; }
        nb = heap;
    }
    memcpy(nb, b, len);
    nb[len] = '\0';
    errno = 0;
    double d = strtod(nb, NULL);
    cg_free(heap);
    if (!isfinite(d)) { jp_fail_at(s, CG_EPARSE, "number out of range", s->p); return NULL; }
    cg_jv *v = jv_new(s->a, CG_JREAL);
    v->u.d = d;
    return v;
}

/* true/false/null; a broken one fails as serde_json's parse_ident does: at
 * the first byte that differs ("expected ident") or at the end. */
static int lit(jp *s, const char *w, size_t n) {
    if ((size_t)(s->end - s->p) >= n && memcmp(s->p, w, n) == 0) {
        s->p += n;
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if (s->p + i >= s->end) return jp_fail_at(s, CG_EPARSE, "EOF while parsing a value", s->end);
        if (s->p[i] != w[i]) return jp_fail_at(s, CG_EPARSE, "expected ident", s->p + i + 1);
    }
    return -1;
}

static cg_jv *jp_value(jp *s);

/* ---- hooks of cg_json_parse_hooked ---- */

/* The limits on what a hooked parse holds at once: the text kept as a tree
 * (outside lazy arrays) and one lazy item. */
static bool hook_over(jp *s) {
    size_t at = (size_t)(s->p - s->start);
    if (s->item_start) {
        if (s->hook->max_item_bytes && (size_t)(s->p - s->item_start) > s->hook->max_item_bytes) {
            jp_fail(s, CG_ELIMIT, "array item longer than the limit");
            return true;
        }
    } else if (s->hook->max_tree_bytes && at - s->lazy_bytes > s->hook->max_tree_bytes) {
        jp_fail(s, CG_ELIMIT, "JSON text kept as a tree longer than the limit");
        return true;
    }
    return false;
}

/* s->p just past the '[' of an array at depth s->depth: read lazily? */
static bool hook_lazy(jp *s) {
    if (!s->hook || s->item_start || s->depth > CG_JSON_HOOK_DEPTH + 1) return false;
    return s->hook->want_lazy(s->hook->ctx, s->path, s->depth - 1);
}

/* An array read lazily: every item is parsed (same errors and limits as
 * jp_array) into a scratch arena reset per item, then the hook makes the
 * value standing for the whole array. */
static cg_jv *jp_lazy_array(jp *s) {
    const char *open = s->p - 1;
    cg_arena *keep = s->a, scratch;
    cg_arena_init(&scratch, 0);
    s->a = &scratch;
    size_t n = 0;
    bool ok = false;
    jp_ws(s);
    if (s->p < s->end && *s->p == ']') {
        s->p++;
        ok = true;
    } else if (s->p >= s->end) {
        jp_fail(s, CG_EPARSE, "EOF while parsing a list");
    } else {
        for (;;) {
            jp_ws(s);
            s->item_start = s->p;
            cg_jv *item = jp_value(s);
            s->item_start = NULL;
            if (!item) break;
            if (n >= s->lim->max_items) { jp_fail(s, CG_ELIMIT, "array has more items than the limit"); break; }
            n++;
            cg_arena_reset(&scratch);
            if (s->hook->progress) s->hook->progress(s->hook->ctx, (size_t)(s->p - s->start));
            jp_ws(s);
            if (s->p >= s->end) { jp_fail(s, CG_EPARSE, "EOF while parsing a list"); break; }
            if (*s->p == ']') { s->p++; ok = true; break; }
            if (*s->p == ',') {
                s->p++;
                jp_ws(s);
                if (s->p < s->end && *s->p == ']') { jp_fail(s, CG_EPARSE, "trailing comma"); break; }
                continue;
            }
            jp_fail(s, CG_EPARSE, "expected `,` or `]`");
            break;
        }
    }
    s->a = keep;
    cg_arena_free(&scratch);
    if (!ok) return NULL;
    size_t start = (size_t)(open - s->start), end = (size_t)(s->p - s->start);
    s->lazy_bytes += end - start;
    cg_jv *v = s->hook->make_lazy(s->hook->ctx, s->a, start, end, n);
    if (!v) jp_fail(s, CG_ENOMEM, "out of memory");
    return v;
}

static cg_jv *jp_array(jp *s) {
    cg_jv *v = jv_new(s->a, CG_JARR);
    if (s->hook && s->depth <= CG_JSON_HOOK_DEPTH) s->path[s->depth - 1] = NULL;
    jp_ws(s);
    if (s->p < s->end && *s->p == ']') { s->p++; return v; }
    if (s->p >= s->end) { jp_fail(s, CG_EPARSE, "EOF while parsing a list"); return NULL; }
    for (;;) {
        cg_jv *item = jp_value(s);
        if (!item) return NULL;
        if (v->u.arr.n >= s->lim->max_items) { jp_limit(s, CG_JSON_LIMIT_ITEMS, "array has more items than the limit"); return NULL; }
        cg_jv_arr_push(s->a, v, item);
        jp_ws(s);
        if (s->p >= s->end) { jp_fail(s, CG_EPARSE, "EOF while parsing a list"); return NULL; }
        if (*s->p == ']') { s->p++; return v; }
        if (*s->p == ',') {
            s->p++;
            jp_ws(s);
            if (s->p < s->end && *s->p == ']') { jp_fail(s, CG_EPARSE, "trailing comma"); return NULL; }
            continue;
        }
        jp_fail(s, CG_EPARSE, "expected `,` or `]`");
        return NULL;
    }
}

static cg_jv *jp_object(jp *s) {
    cg_jv *v = jv_new(s->a, CG_JOBJ);
    jp_ws(s);
    if (s->p < s->end && *s->p == '}') { s->p++; return v; }
    for (bool first = true;; first = false) {
        jp_ws(s);
        if (s->p >= s->end) {
            jp_fail(s, CG_EPARSE, first ? "EOF while parsing an object" : "EOF while parsing a value");
            return NULL;
        }
        if (*s->p == '}') { jp_fail(s, CG_EPARSE, "trailing comma"); return NULL; }
        if (*s->p != '"') { jp_fail(s, CG_EPARSE, "key must be a string"); return NULL; }
        s->p++;
        const char *key;
        size_t klen;
        if (jp_string(s, &key, &klen)) return NULL;
        if (s->hook && s->depth <= CG_JSON_HOOK_DEPTH) s->path[s->depth - 1] = key;
        jp_ws(s);
        if (s->p >= s->end || *s->p != ':') {
            jp_fail(s, CG_EPARSE, s->p >= s->end ? "EOF while parsing an object" : "expected `:`");
            return NULL;
        }
        s->p++;
        cg_jv *item = jp_value(s);
        if (!item) return NULL;
        if (v->u.obj.n >= s->lim->max_items) { jp_limit(s, CG_JSON_LIMIT_ITEMS, "object has more members than the limit"); return NULL; }
        cg_jv_obj_put(s->a, v, key, item);
        v->u.obj.m[v->u.obj.n - 1].key_len = klen;
        jp_ws(s);
        if (s->p >= s->end) { jp_fail(s, CG_EPARSE, "EOF while parsing an object"); return NULL; }
        if (*s->p == ',') { s->p++; continue; }
        if (*s->p == '}') { s->p++; return v; }
        jp_fail(s, CG_EPARSE, "expected `,` or `}`");
        return NULL;
    }
}

static cg_jv *jp_value(jp *s) {
    jp_ws(s);
    if (s->hook && hook_over(s)) return NULL;
    if (s->p >= s->end) { jp_fail(s, CG_EPARSE, "EOF while parsing a value"); return NULL; }
    char c = *s->p;
    switch (c) {
    case '{':
    case '[': {
        if (++s->depth > s->lim->max_depth) {
            jp_limit(s, CG_JSON_LIMIT_DEPTH, "JSON nesting deeper than the limit");
            return NULL;
        }
        s->p++;
        cg_jv *v = c == '{' ? jp_object(s) : hook_lazy(s) ? jp_lazy_array(s) : jp_array(s);
        s->depth--;
        return v;
    }
    case '"': {
        s->p++;
        const char *str;
        size_t n;
        if (jp_string(s, &str, &n)) return NULL;
        cg_jv *v = jv_new(s->a, CG_JSTR);
        v->u.str.s = str;
        v->u.str.len = n;
        return v;
    }
    case 't': return lit(s, "true", 4) ? NULL : cg_jv_bool(s->a, true);
    case 'f': return lit(s, "false", 5) ? NULL : cg_jv_bool(s->a, false);
    case 'n': return lit(s, "null", 4) ? NULL : jv_new(s->a, CG_JNULL);
    default:
        if (c == '-' || (c >= '0' && c <= '9')) return jp_number(s);
    }
    jp_fail(s, CG_EPARSE, "expected value");
    return NULL;
}

cg_jv *cg_json_parse_hooked(cg_arena *a, const char *text, size_t len, const cg_json_limits *lim,
                            const cg_json_hook *hook, cg_error *err) {
    cg_json_limits def;
    if (!lim) {
        cg_json_limits_default(&def);
        lim = &def;
    }
    jp s = {a, text, text + len, text, lim, err, 0, hook, {0}, NULL, 0};
    cg_jv *v = jp_value(&s);
    if (!v) return NULL;
    jp_ws(&s);
    if (s.p != s.end) {
        jp_fail(&s, CG_EPARSE, "trailing characters");
        return NULL;
    }
    return v;
}

cg_jv *cg_json_parse(cg_arena *a, const char *text, size_t len, const cg_json_limits *lim,
                     cg_error *err) {
    return cg_json_parse_hooked(a, text, len, lim, NULL, err);
}

cg_jv *cg_json_parse_at(cg_arena *a, const char *text, size_t len, size_t *pos, const cg_json_limits *lim,
                        cg_error *err) {
    cg_json_limits def;
    if (!lim) {
        cg_json_limits_default(&def);
        lim = &def;
    }
    jp s = {a, text + (*pos < len ? *pos : len), text + len, text, lim, err, 0, NULL, {0}, NULL, 0};
    cg_jv *v = jp_value(&s);
    if (v) *pos = (size_t)(s.p - text);
    return v;
}

/* ------------------------------------------------------------ construction */

cg_jv *cg_jv_null(cg_arena *a) { return jv_new(a, CG_JNULL); }
cg_jv *cg_jv_bool(cg_arena *a, bool b) {
    cg_jv *v = jv_new(a, CG_JBOOL);
    v->u.b = b;
    return v;
}
cg_jv *cg_jv_u64(cg_arena *a, uint64_t x) {
    cg_jv *v = jv_new(a, CG_JINT);
    v->u.i.mag = x;
    return v;
}
cg_jv *cg_jv_i64(cg_arena *a, int64_t x) {
    cg_jv *v = jv_new(a, CG_JINT);
    if (x < 0) {
        v->u.i.neg = true;
        v->u.i.mag = (uint64_t)(-(x + 1)) + 1u;
    } else {
        v->u.i.mag = (uint64_t)x;
    }
    return v;
}
cg_jv *cg_jv_f64(cg_arena *a, double d) {
    cg_jv *v = jv_new(a, CG_JREAL);
    v->u.d = d;
    return v;
}
cg_jv *cg_jv_strn(cg_arena *a, const char *s, size_t n) {
    cg_jv *v = jv_new(a, CG_JSTR);
    v->u.str.s = cg_arena_strndup(a, s, n);
    v->u.str.len = n;
    return v;
}
cg_jv *cg_jv_str(cg_arena *a, const char *s) { return cg_jv_strn(a, s, strlen(s)); }
cg_jv *cg_jv_str_nocopy(cg_arena *a, const char *s) {
    cg_jv *v = jv_new(a, CG_JSTR);
    v->u.str.s = s;
    v->u.str.len = strlen(s);
    return v;
}
cg_jv *cg_jv_arr(cg_arena *a) { return jv_new(a, CG_JARR); }
cg_jv *cg_jv_obj(cg_arena *a) { return jv_new(a, CG_JOBJ); }

cg_jv *cg_jv_lazy_arr(cg_arena *a, size_t n, cg_jv_item_fn item, void *ctx) {
    cg_jv *v = jv_new(a, CG_JLAZY);
    v->u.lazy.item = item;
    v->u.lazy.ctx = ctx;
    v->u.lazy.n = n;
    return v;
}

cg_jv *cg_jv_materialize(cg_arena *a, cg_jv *v) {
    if (!v) return v;
    switch (v->type) {
    case CG_JARR:
        for (size_t i = 0; i < v->u.arr.n; i++) cg_jv_materialize(a, v->u.arr.items[i]);
        break;
    case CG_JOBJ:
        for (size_t i = 0; i < v->u.obj.n; i++) cg_jv_materialize(a, v->u.obj.m[i].val);
        break;
    case CG_JLAZY: {
        cg_jv_item_fn item = v->u.lazy.item;
        void *ctx = v->u.lazy.ctx;
        size_t n = v->u.lazy.n;
        cg_jv **items = n ? cg_arena_alloc(a, n * sizeof *items) : NULL;
        for (size_t i = 0; i < n; i++) items[i] = cg_jv_materialize(a, item(a, ctx, i));
        v->type = CG_JARR;
        v->u.arr.items = items;
        v->u.arr.n = v->u.arr.cap = n;
        break;
    }
    default: break;
    }
    return v;
}

size_t cg_jv_items(const cg_jv *v) {
    return !v ? 0 : v->type == CG_JLAZY ? v->u.lazy.n : v->type == CG_JARR ? v->u.arr.n : 0;
}

int cg_jv_each(const cg_jv *v, cg_jv_visit_fn fn, void *ctx) {
    if (!v) return 0;
    if (v->type == CG_JARR) {
        for (size_t i = 0; i < v->u.arr.n; i++) {
            int r = fn(ctx, i, v->u.arr.items[i]);
            if (r) return r;
        }
        return 0;
    }
    if (v->type != CG_JLAZY) return 0;
    cg_arena scratch;
    cg_arena_init(&scratch, 0);
    int r = 0;
    for (size_t i = 0; i < v->u.lazy.n && !r; i++) {
        r = fn(ctx, i, v->u.lazy.item(&scratch, v->u.lazy.ctx, i));
        cg_arena_reset(&scratch);
    }
    cg_arena_free(&scratch);
    return r;
}

void cg_jv_arr_push(cg_arena *a, cg_jv *arr, cg_jv *v) {
    if (arr->u.arr.n == arr->u.arr.cap) {
        size_t cap = arr->u.arr.cap ? arr->u.arr.cap * 2 : 4;
        cg_jv **items = cg_arena_alloc(a, cap * sizeof *items);
        if (arr->u.arr.n) memcpy(items, arr->u.arr.items, arr->u.arr.n * sizeof *items);
        arr->u.arr.items = items;
        arr->u.arr.cap = cap;
    }
    arr->u.arr.items[arr->u.arr.n++] = v;
}

void cg_jv_obj_putn(cg_arena *a, cg_jv *obj, const char *key, size_t key_len, cg_jv *v) {
    if (obj->u.obj.n == obj->u.obj.cap) {
        size_t cap = obj->u.obj.cap ? obj->u.obj.cap * 2 : 8;
        cg_jmember *m = cg_arena_alloc(a, cap * sizeof *m);
        if (obj->u.obj.n) memcpy(m, obj->u.obj.m, obj->u.obj.n * sizeof *m);
        obj->u.obj.m = m;
        obj->u.obj.cap = cap;
    }
    cg_jmember *mm = &obj->u.obj.m[obj->u.obj.n++];
    mm->key = key;
    mm->key_len = key_len;
    mm->val = v;
}

void cg_jv_obj_set(cg_arena *a, cg_jv *obj, const char *key, cg_jv *v) {
    for (size_t i = 0; i < obj->u.obj.n; i++) {
        if (strcmp(obj->u.obj.m[i].key, key) == 0) {
            obj->u.obj.m[i].val = v;
            return;
        }
    }
    cg_jv_obj_put(a, obj, key, v);
}

cg_jv *cg_jv_clone(cg_arena *a, const cg_jv *v) {
    if (!v) return NULL;
    cg_jv *c = jv_new(a, v->type);
    switch (v->type) {
    case CG_JSTR:
        c->u.str.s = cg_arena_strndup(a, v->u.str.s, v->u.str.len);
        c->u.str.len = v->u.str.len;
        break;
    case CG_JARR:
        for (size_t i = 0; i < v->u.arr.n; i++) cg_jv_arr_push(a, c, cg_jv_clone(a, v->u.arr.items[i]));
        break;
    case CG_JOBJ:
        for (size_t i = 0; i < v->u.obj.n; i++) {
            const cg_jmember *m = &v->u.obj.m[i];
            char *k = cg_arena_strndup(a, m->key, m->key_len);
            cg_jv_obj_put(a, c, k, cg_jv_clone(a, m->val));
            c->u.obj.m[c->u.obj.n - 1].key_len = m->key_len;
        }
        break;
    case CG_JLAZY: {
        c->type = CG_JARR;
        size_t n = v->u.lazy.n;
        c->u.arr.items = n ? cg_arena_alloc(a, n * sizeof *c->u.arr.items) : NULL;
        c->u.arr.n = c->u.arr.cap = n;
        cg_arena scratch;
        cg_arena_init(&scratch, 0);
        for (size_t i = 0; i < n; i++) {
            c->u.arr.items[i] = cg_jv_clone(a, v->u.lazy.item(&scratch, v->u.lazy.ctx, i));
            cg_arena_reset(&scratch);
        }
        cg_arena_free(&scratch);
        break;
    }
    default:
        c->u = v->u;
    }
    return c;
}

/* ------------------------------------------------------------------ access */

cg_jv *cg_jv_get(const cg_jv *obj, const char *key) {
    if (!obj || obj->type != CG_JOBJ) return NULL;
    size_t kl = strlen(key);
    for (size_t i = 0; i < obj->u.obj.n; i++) {
        const cg_jmember *m = &obj->u.obj.m[i];
        if (m->key_len == kl && memcmp(m->key, key, kl) == 0) return m->val;
    }
    return NULL;
}

bool cg_jv_obj_remove(cg_jv *obj, const char *key) {
    if (!obj || obj->type != CG_JOBJ) return false;
    for (size_t i = 0; i < obj->u.obj.n; i++) {
        if (strcmp(obj->u.obj.m[i].key, key) == 0) {
            memmove(&obj->u.obj.m[i], &obj->u.obj.m[i + 1], (obj->u.obj.n - i - 1) * sizeof(cg_jmember));
            obj->u.obj.n--;
            return true;
        }
    }
    return false;
}

/* key order for duplicate detection: bytes, then length, then document position */
typedef struct dup_ref {
    const cg_jmember *m;
    size_t pos;
} dup_ref;

static int dup_ref_cmp(const void *x, const void *y) {
    const dup_ref *a = x, *b = y;
    size_t n = a->m->key_len < b->m->key_len ? a->m->key_len : b->m->key_len;
    int c = memcmp(a->m->key, b->m->key, n);
    if (c) return c;
    if (a->m->key_len != b->m->key_len) return a->m->key_len < b->m->key_len ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

static bool same_key(const cg_jmember *a, const cg_jmember *b) {
    return a->key_len == b->key_len && memcmp(a->key, b->key, a->key_len) == 0;
}

/* Returns the key whose second occurrence comes first in document order. Small
 * objects are scanned pairwise; larger ones through a sorted index, so an
 * object with many members costs O(n log n), not O(n^2). */
const char *cg_jv_obj_dup_key(const cg_jv *obj) {
    if (!obj || obj->type != CG_JOBJ) return NULL;
    size_t n = obj->u.obj.n;
    if (n <= 32) {
        for (size_t i = 1; i < n; i++)
            for (size_t j = 0; j < i; j++)
                if (same_key(&obj->u.obj.m[i], &obj->u.obj.m[j])) return obj->u.obj.m[i].key;
        return NULL;
    }
    dup_ref *v = cg_xalloc(n, sizeof *v); /* like the arena (base/alloc.h) */
    for (size_t i = 0; i < n; i++) v[i] = (dup_ref){&obj->u.obj.m[i], i};
    qsort(v, n, sizeof *v, dup_ref_cmp);
    const char *key = NULL;
    size_t best = SIZE_MAX;
    for (size_t i = 1; i < n; i++) {
        /* v[i] is a second occurrence when it equals v[i-1] but not v[i-2] */
        if (!same_key(v[i].m, v[i - 1].m) || (i >= 2 && same_key(v[i].m, v[i - 2].m))) continue;
        if (v[i].pos < best) {
            best = v[i].pos;
            key = v[i].m->key;
        }
    }
    cg_free(v);
    return key;
}

bool cg_jv_is_u64(const cg_jv *v) { return v && v->type == CG_JINT && !v->u.i.neg; }

bool cg_jv_as_u64(const cg_jv *v, uint64_t *out) {
    if (!cg_jv_is_u64(v)) return false;
    *out = v->u.i.mag;
    return true;
}

bool cg_jv_as_i64(const cg_jv *v, int64_t *out) {
    if (!v || v->type != CG_JINT) return false;
    if (v->u.i.neg) {
        if (v->u.i.mag > (uint64_t)INT64_MAX + 1u) return false;
        *out = v->u.i.mag == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)v->u.i.mag;
    } else {
        if (v->u.i.mag > (uint64_t)INT64_MAX) return false;
        *out = (int64_t)v->u.i.mag;
    }
    return true;
}

bool cg_jv_as_f64(const cg_jv *v, double *out) {
    if (!v) return false;
    if (v->type == CG_JREAL) {
        *out = v->u.d;
        return true;
    }
    if (v->type == CG_JINT) {
        *out = v->u.i.neg ? -(double)v->u.i.mag : (double)v->u.i.mag;
        return true;
    }
    return false;
}

const char *cg_jv_as_str(const cg_jv *v) { return v && v->type == CG_JSTR ? v->u.str.s : NULL; }
const char *cg_jv_as_cstr(const cg_jv *v) {
    const char *s = cg_jv_as_str(v);
    return s && strlen(s) == v->u.str.len ? s : NULL;
}

static size_t arr_like_len(const cg_jv *v) { return v->type == CG_JLAZY ? v->u.lazy.n : v->u.arr.n; }

/* Equality when at least one side is lazy: items pairwise, each lazy item
 * built in its own scratch arena, reset per item. */
static bool equal_lazy(const cg_jv *a, const cg_jv *b) {
    if ((a->type != CG_JARR && a->type != CG_JLAZY) || (b->type != CG_JARR && b->type != CG_JLAZY)) return false;
    size_t n = arr_like_len(a);
    if (n != arr_like_len(b)) return false;
    cg_arena sa, sb;
    cg_arena_init(&sa, 0);
    cg_arena_init(&sb, 0);
    bool eq = true;
    for (size_t i = 0; i < n && eq; i++) {
        const cg_jv *x = a->type == CG_JLAZY ? a->u.lazy.item(&sa, a->u.lazy.ctx, i) : a->u.arr.items[i];
        const cg_jv *y = b->type == CG_JLAZY ? b->u.lazy.item(&sb, b->u.lazy.ctx, i) : b->u.arr.items[i];
        eq = cg_jv_equal(x, y);
        cg_arena_reset(&sa);
        cg_arena_reset(&sb);
    }
    cg_arena_free(&sa);
    cg_arena_free(&sb);
    return eq;
}

bool cg_jv_equal(const cg_jv *a, const cg_jv *b) {
    if (a == b) return true;
    if (!a || !b) return false;
    if (a->type == CG_JLAZY || b->type == CG_JLAZY) return equal_lazy(a, b);
    if (a->type != b->type) return false;
    switch (a->type) {
    case CG_JNULL: return true;
    case CG_JBOOL: return a->u.b == b->u.b;
    case CG_JINT: return a->u.i.mag == b->u.i.mag && a->u.i.neg == b->u.i.neg;
    case CG_JREAL: return a->u.d == b->u.d;
    case CG_JSTR: return a->u.str.len == b->u.str.len && memcmp(a->u.str.s, b->u.str.s, a->u.str.len) == 0;
    case CG_JARR:
        if (a->u.arr.n != b->u.arr.n) return false;
        for (size_t i = 0; i < a->u.arr.n; i++)
            if (!cg_jv_equal(a->u.arr.items[i], b->u.arr.items[i])) return false;
        return true;
    case CG_JOBJ:
        if (a->u.obj.n != b->u.obj.n) return false;
        for (size_t i = 0; i < a->u.obj.n; i++) {
            const cg_jmember *m = &a->u.obj.m[i];
            cg_jv *o = NULL;
            for (size_t j = 0; j < b->u.obj.n; j++) {
                const cg_jmember *k = &b->u.obj.m[(i + j) % b->u.obj.n];
                if (k->key_len == m->key_len && memcmp(k->key, m->key, m->key_len) == 0) {
                    o = k->val;
                    break;
                }
            }
            if (!o || !cg_jv_equal(m->val, o)) return false;
        }
        return true;
    case CG_JLAZY: break; /* handled above */
    }
    return false;
}

/* ------------------------------------------------------------------ output */

/* Room for n more bytes (plus the NUL the public entry points restore); the
 * returned pointer is where they go. Appends do not re-terminate. */
static inline char *w_room(cg_buf *b, size_t n) {
    if (b->len + n + 1 > b->cap) cg_buf_reserve(b, n);
    return b->data + b->len;
}

static inline void w_putc(cg_buf *b, char c) {
    *w_room(b, 1) = c;
    b->len++;
}

static inline void w_put(cg_buf *b, const char *s, size_t n) {
    memcpy(w_room(b, n), s, n);
    b->len += n;
}

static const char digit_pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                  "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                  "8081828384858687888990919293949596979899";

/* Decimal digits of v written backwards ending at end; returns the count. */
static inline size_t u64_digits_back(char *end, uint64_t v) {
    char *p = end;
    while (v >= 100) {
        const char *d = digit_pairs + 2 * (v % 100);
        v /= 100;
        *--p = d[1];
        *--p = d[0];
    }
    if (v >= 10) {
        *--p = digit_pairs[2 * v + 1];
        *--p = digit_pairs[2 * v];
    } else {
        *--p = (char)('0' + v);
    }
    return (size_t)(end - p);
}

static inline void w_u64(cg_buf *out, uint64_t v) {
    char tmp[20];
    size_t n = u64_digits_back(tmp + sizeof tmp, v);
    w_put(out, tmp + sizeof tmp - n, n);
}

void cg_json_write_u64(cg_buf *out, uint64_t v) {
    w_u64(out, v);
    out->data[out->len] = '\0';
}

/* %.*e of d with prec significant digits when it reads back as d. */
static bool exp_digits(double d, int prec, char *tmp, size_t cap) {
    snprintf(tmp, cap, "%.*e", prec - 1, d);
    return strtod(tmp, NULL) == d;
}

void cg_json_write_f64(cg_buf *out, double d) {
    if (!isfinite(d)) {
        cg_buf_append(out, "null", 4);
        return;
    }
    if (d == 0) {
        cg_buf_puts(out, signbit(d) ? "-0.0" : "0.0");
        return;
    }
    /* Shortest round-trip digits. A double's rounding interval is narrower
     * than the spacing of 15-digit decimals, so at most one decimal of 15 or
     * fewer digits lies in it, and it is then the correctly rounded 15-digit
     * value: if %.14e reads back, its digits without trailing zeros are the
     * shortest; if not, no spelling of 15 or fewer digits does, and 16 or 17
     * digits decide (the same digits as trying every precision from 1 up).
     * Subnormals have fewer bits (wider intervals): every precision is tried. */
    char tmp[40];
    int prec = fabs(d) < DBL_MIN ? 1 : 15;
    while (!exp_digits(d, prec, tmp, sizeof tmp) && prec < 17) prec++;
    /* tmp = [-]D[.DDD]e[+-]XX */
    const char *p = tmp;
    bool neg = false;
    if (*p == '-') {
        neg = true;
        p++;
    }
    char digits[24];
    int nd = 0;
    while (*p && *p != 'e') {
        if (*p != '.') digits[nd++] = *p;
        p++;
    }
    int e10 = (int)strtol(p + 1, NULL, 10);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    int kk = e10 + 1; /* position of the decimal point relative to the digit string */
    int k = kk - nd;  /* exponent of the last digit */
    char o[64];
    int n = 0;
    if (neg) o[n++] = '-';
    if (k >= 0 && kk <= 16) {
        memcpy(o + n, digits, (size_t)nd);
        n += nd;
        for (int i = 0; i < k; i++) o[n++] = '0';
        o[n++] = '.';
        o[n++] = '0';
    } else if (kk > 0 && kk <= 16) {
        memcpy(o + n, digits, (size_t)kk);
        n += kk;
        o[n++] = '.';
        memcpy(o + n, digits + kk, (size_t)(nd - kk));
        n += nd - kk;
    } else if (kk > -5 && kk <= 0) {
        o[n++] = '0';
        o[n++] = '.';
        for (int i = 0; i < -kk; i++) o[n++] = '0';
        memcpy(o + n, digits, (size_t)nd);
        n += nd;
    } else {
        o[n++] = digits[0];
        if (nd > 1) {
            o[n++] = '.';
            memcpy(o + n, digits + 1, (size_t)(nd - 1));
            n += nd - 1;
        }
        n += snprintf(o + n, sizeof o - (size_t)n, "e%d", kk - 1);
    }
    cg_buf_append(out, o, (size_t)n);
}

/* true when none of the 8 bytes at p needs escaping (no byte < 0x20, '"' or
 * '\\'); exact as a whole-word test (SWAR has-less / has-zero). */
static inline bool word_plain(const char *p) {
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t x;
    memcpy(&x, p, 8);
    uint64_t lt = (x - ones * 0x20) & ~x & highs;
    uint64_t q = x ^ (ones * (unsigned char)'"'), b = x ^ (ones * (unsigned char)'\\');
    uint64_t hq = (q - ones) & ~q & highs, hb = (b - ones) & ~b & highs;
    return !(lt | hq | hb);
}

static inline bool byte_plain(unsigned char c) { return c >= 0x20 && c != '"' && c != '\\'; }

/* Length of the prefix of s[0..len) that needs no escaping. */
static inline size_t plain_prefix(const char *s, size_t len) {
    size_t i = 0;
    if (len >= 8) {
        while (i + 8 <= len && word_plain(s + i)) i += 8;
        if (i + 8 > len && word_plain(s + len - 8)) return len; /* the tail, overlapping */
    }
    while (i < len && byte_plain((unsigned char)s[i])) i++;
    return i;
}

/* The escaped body of s from `from` on (s[0..from) needs no escaping), without quotes. */
static void w_escaped(cg_buf *out, const char *s, size_t len, size_t from) {
    static const char hex[] = "0123456789abcdef";
    size_t run = 0;
    for (size_t i = from; i < len;) {
        if (i + 8 <= len && word_plain(s + i)) {
            i += 8;
            continue;
        }
        unsigned char c = (unsigned char)s[i++];
        if (byte_plain(c)) continue;
        if (i - 1 > run) w_put(out, s + run, i - 1 - run);
        run = i;
        switch (c) {
        case '"': w_put(out, "\\\"", 2); break;
        case '\\': w_put(out, "\\\\", 2); break;
        case '\b': w_put(out, "\\b", 2); break;
        case '\f': w_put(out, "\\f", 2); break;
        case '\n': w_put(out, "\\n", 2); break;
        case '\r': w_put(out, "\\r", 2); break;
        case '\t': w_put(out, "\\t", 2); break;
        default: {
            char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            w_put(out, u, 6);
        }
        }
    }
    if (len > run) w_put(out, s + run, len - run);
}

/* Quoted + escaped; one copy when nothing needs escaping (the common case). */
static inline void w_str(cg_buf *out, const char *s, size_t len) {
    size_t plain = plain_prefix(s, len);
    if (plain == len) {
        char *o = w_room(out, len + 2);
        o[0] = '"';
        memcpy(o + 1, s, len);
        o[len + 1] = '"';
        out->len += len + 2;
        return;
    }
    w_putc(out, '"');
    w_escaped(out, s, len, plain);
    w_putc(out, '"');
}

void cg_json_write_str(cg_buf *out, const char *s, size_t len) {
    w_str(out, s, len);
    out->data[out->len] = '\0';
}

/* Writer state. `out` accumulates bytes; with a sink, it is handed over and
 * reset whenever it reaches CG_JSON_CHUNK (checked between container items). */
typedef struct jw {
    cg_buf *out;
    bool pretty;
    cg_json_sink sink;
    void *sink_ctx;
    int stop; /* non-zero: the sink asked to stop */
} jw;

static void w_flush(jw *w) {
    if (!w->sink || w->stop || !w->out->len) return;
    w->stop = w->sink(w->sink_ctx, w->out->data, w->out->len);
    w->out->len = 0;
}

static inline void w_maybe_flush(jw *w) {
    if (w->sink && w->out->len >= CG_JSON_CHUNK) w_flush(w);
}

/* "\n" + 2 * MAX_FAST_LEVEL spaces: one copy for the indentation of any level up to it. */
#define MAX_FAST_LEVEL 48
static const char newline_spaces[] = "\n"
                                     "                                                "
                                     "                                                ";

static inline void indent(cg_buf *out, int level) {
    if (level <= MAX_FAST_LEVEL) {
        w_put(out, newline_spaces, 2 * (size_t)level + 1);
        return;
    }
    w_putc(out, '\n');
    for (int i = 0; i < level; i++) w_put(out, "  ", 2);
}

/* Member i of an object at `level`: separator, indentation, key and ": " in
 * one copy when the key needs no escaping. */
static inline void w_member_key(jw *w, const cg_jmember *m, size_t i, int level) {
    cg_buf *out = w->out;
    size_t kl = m->key_len;
    if (w->pretty && level < MAX_FAST_LEVEL && plain_prefix(m->key, kl) == kl) {
        size_t ind = 2 * (size_t)(level + 1) + 1;
        char *o = w_room(out, 1 + ind + kl + 4);
        char *p = o;
        if (i) *p++ = ',';
        memcpy(p, newline_spaces, ind);
        p += ind;
        *p++ = '"';
        memcpy(p, m->key, kl);
        p += kl;
        memcpy(p, "\": ", 3);
        p += 3;
        out->len += (size_t)(p - o);
        return;
    }
    if (i) w_putc(out, ',');
    if (w->pretty) indent(out, level + 1);
    w_str(out, m->key, kl);
    if (w->pretty) w_put(out, ": ", 2);
    else w_putc(out, ':');
}

static void write_value(jw *w, const cg_jv *v, int level);

static void write_lazy(jw *w, const cg_jv *v, int level) {
    cg_buf *out = w->out;
    w_putc(out, '[');
    if (!v->u.lazy.n) {
        w_putc(out, ']');
        return;
    }
    cg_arena scratch;
    cg_arena_init(&scratch, 0);
    for (size_t i = 0; i < v->u.lazy.n && !w->stop; i++) {
        if (i) w_putc(out, ',');
        if (w->pretty) indent(out, level + 1);
        cg_jv *item = v->u.lazy.item(&scratch, v->u.lazy.ctx, i);
        write_value(w, item, level + 1);
        cg_arena_reset(&scratch);
        w_maybe_flush(w);
    }
    cg_arena_free(&scratch);
    if (w->pretty) indent(out, level);
    w_putc(out, ']');
}

static void write_value(jw *w, const cg_jv *v, int level) {
    cg_buf *out = w->out;
    if (w->stop) return;
    switch (v->type) {
    case CG_JNULL: w_put(out, "null", 4); break;
    case CG_JBOOL:
        if (v->u.b) w_put(out, "true", 4);
        else w_put(out, "false", 5);
        break;
    case CG_JINT:
        if (v->u.i.neg) w_putc(out, '-');
        w_u64(out, v->u.i.mag);
        break;
    case CG_JREAL: cg_json_write_f64(out, v->u.d); break;
    case CG_JSTR: w_str(out, v->u.str.s, v->u.str.len); break;
    case CG_JARR:
        w_putc(out, '[');
        for (size_t i = 0; i < v->u.arr.n; i++) {
            if (i) w_putc(out, ',');
            if (w->pretty) indent(out, level + 1);
            write_value(w, v->u.arr.items[i], level + 1);
            w_maybe_flush(w);
        }
        if (w->pretty && v->u.arr.n) indent(out, level);
        w_putc(out, ']');
        break;
    case CG_JOBJ:
        w_putc(out, '{');
        for (size_t i = 0; i < v->u.obj.n; i++) {
            const cg_jmember *m = &v->u.obj.m[i];
            w_member_key(w, m, i, level);
            write_value(w, m->val, level + 1);
            w_maybe_flush(w);
        }
        if (w->pretty && v->u.obj.n) indent(out, level);
        w_putc(out, '}');
        break;
    case CG_JLAZY: write_lazy(w, v, level); break;
    }
}

void cg_json_write(cg_buf *out, const cg_jv *v, bool pretty) {
    jw w = {out, pretty, NULL, NULL, 0};
    write_value(&w, v, 0);
    cg_buf_reserve(out, 0);
    out->data[out->len] = '\0';
}

int cg_json_write_sink(const cg_jv *v, bool pretty, bool newline, cg_json_sink sink, void *ctx) {
    cg_buf b = CG_BUF_INIT;
    cg_buf_reserve(&b, CG_JSON_CHUNK + 64 * 1024);
    jw w = {&b, pretty, sink, ctx, 0};
    write_value(&w, v, 0);
    if (newline) w_putc(&b, '\n');
    w_flush(&w);
    cg_buf_free(&b);
    return w.stop;
}

int cg_fd_sink(void *ctx, const char *data, size_t len) {
    cg_fd_sink_ctx *s = ctx;
    while (len) {
        ssize_t n = write(s->fd, data, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            s->err_no = errno;
            return -1;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

int cg_json_write_fd(int fd, const cg_jv *v, bool pretty, bool newline, cg_error *err) {
    cg_fd_sink_ctx s = {fd, 0};
    if (cg_json_write_sink(v, pretty, newline, cg_fd_sink, &s) != 0)
        return cg_err_set(err, CG_EIO, "write: %s", strerror(s.err_no));
    return 0;
}

int cg_json_write_file(const char *path, const cg_jv *v, bool pretty, cg_error *err) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return cg_err_set(err, CG_EIO, "create %s: %s", path, strerror(errno));
    cg_fd_sink_ctx s = {fd, 0};
    int rc = cg_json_write_sink(v, pretty, true, cg_fd_sink, &s);
    if (close(fd) != 0 && rc == 0) {
        s.err_no = errno;
        rc = -1;
    }
    if (rc != 0) return cg_err_set(err, CG_EIO, "write %s: %s", path, strerror(s.err_no));
    return 0;
}

size_t cg_utf8_seq_len(const char *p, size_t n) {
    return n ? utf8_len((const unsigned char *)p, (const unsigned char *)p + n) : 0;
}

size_t cg_utf8_valid_prefix(const char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        if ((unsigned char)s[i] < 0x80) {
            i++;
            continue;
        }
        size_t l = cg_utf8_seq_len(s + i, n - i);
        if (!l) break;
        i += l;
    }
    return i;
}
