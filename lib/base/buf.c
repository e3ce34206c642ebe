#include "base/buf.h"

#include "base/alloc.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cg_buf_reserve(cg_buf *b, size_t extra) {
    size_t need = b->len + extra + 1;
    if (need < b->len) cg_oom_exit(SIZE_MAX);
    if (need <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap = cap * 2;
    b->data = cg_xrealloc(b->data, cap, 1);
    b->cap = cap;
}

void cg_buf_append(cg_buf *b, const void *p, size_t n) {
    cg_buf_reserve(b, n);
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void cg_buf_puts(cg_buf *b, const char *s) { cg_buf_append(b, s, strlen(s)); }

void cg_buf_putc(cg_buf *b, char c) {
    cg_buf_reserve(b, 1);
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
}

void cg_buf_printf(cg_buf *b, const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0) {
        cg_buf_reserve(b, (size_t)n);
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
}

void cg_buf_reset(cg_buf *b) {
    b->len = 0;
    if (b->data) b->data[0] = '\0';
}

void cg_buf_free(cg_buf *b) {
    cg_free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

char *cg_buf_take(cg_buf *b, size_t *len) {
    cg_buf_reserve(b, 0);
    char *p = b->data;
    if (len) *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}
