/* rustfmt.c — Rust's text rules shared by every area (rustfmt.h). */
#include "base/rustfmt.h"

#include <stdint.h>

/* ---- whitespace (Rust's char::is_whitespace = Unicode White_Space) ---- */

static bool is_unicode_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

/* Decodes one UTF-8 sequence at s; returns its length (≥1). Invalid bytes
 * decode as a non-space code point of length 1, so they count as content. */
static size_t utf8_next(const unsigned char *s, uint32_t *cp) {
    unsigned char c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t n = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0) {
        *cp = 0xFFFD;
        return 1;
    }
    uint32_t v = c & (0x7F >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *cp = 0xFFFD;
            return 1;
        }
        v = (v << 6) | (s[i] & 0x3F);
    }
    *cp = v;
    return n;
}

bool cg_str_blank(const char *s) {
    if (!s) return true;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        uint32_t cp;
        size_t n = utf8_next(p, &cp);
        if (!is_unicode_space(cp)) return false;
        p += n;
    }
    return true;
}

/* The code point of the UTF-8 sequence at p within n bytes (0xFFFD, length 1, when truncated or invalid). */
static size_t utf8_next_n(const unsigned char *p, size_t n, uint32_t *cp) {
    unsigned char c = p[0];
    size_t want = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    if (want > n) {
        *cp = 0xFFFD;
        return 1;
    }
    return utf8_next(p, cp);
}

void cg_str_trim_span(const char *s, size_t n, size_t *start, size_t *end) {
    const unsigned char *p = (const unsigned char *)s;
    size_t b = 0, e = n;
    uint32_t cp;
    while (b < n) {
        size_t k = utf8_next_n(p + b, n - b, &cp);
        if (!is_unicode_space(cp)) break;
        b += k;
    }
    while (e > b) {
        size_t k = 1;
        while (k < 4 && e - k > b && (p[e - k] & 0xC0) == 0x80) k++; /* start of the last sequence */
        if (utf8_next_n(p + e - k, k, &cp) != k || !is_unicode_space(cp)) break;
        e -= k;
    }
    *start = b;
    *end = e;
}

void cg_rust_debug_str(cg_buf *b, const char *s) {
    cg_buf_putc(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            cg_buf_putc(b, '\\');
            cg_buf_putc(b, (char)c);
        } else if (c == '\n') cg_buf_puts(b, "\\n");
        else if (c == '\r') cg_buf_puts(b, "\\r");
        else if (c == '\t') cg_buf_puts(b, "\\t");
        else if (c == 0x7f || c < 0x20) cg_buf_printf(b, "\\u{%x}", c);
        else if (c == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9f) { /* C1 control U+0080..U+009F */
            cg_buf_printf(b, "\\u{%x}", (unsigned)p[1]);
            p++;
        } else cg_buf_putc(b, (char)c);
    }
    cg_buf_putc(b, '"');
}
