#include "base/error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int cg_err_vset(cg_error *err, cg_errcode code, const char *fmt, va_list ap) {
    if (!err) return -1;
    err->code = code;
    err->reason = CG_R_NONE;
    err->limit = NULL;
    err->n_ctx = 0;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    return -1;
}

int cg_err_set(cg_error *err, cg_errcode code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    cg_err_vset(err, code, fmt, ap);
    va_end(ap);
    return -1;
}

int cg_err_setr(cg_error *err, cg_reason reason, cg_errcode code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    cg_err_vset(err, code, fmt, ap);
    va_end(ap);
    return cg_err_reason(err, reason);
}

int cg_err_reason(cg_error *err, cg_reason reason) {
    if (err) err->reason = reason;
    return -1;
}

int cg_err_context(cg_error *err, const char *fmt, ...) {
    if (!err) return -1;
    char prefix[CG_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char old[CG_ERROR_MAX];
    memcpy(old, err->msg, sizeof old);
    size_t pl = strnlen(prefix, sizeof err->msg - 1);
    memcpy(err->msg, prefix, pl);
    size_t n = pl;
    if (n + 2 < sizeof err->msg) {
        err->msg[n++] = ':';
        err->msg[n++] = ' ';
    }
    size_t ol = strnlen(old, sizeof old);
    if (ol > sizeof err->msg - 1 - n) ol = sizeof err->msg - 1 - n;
    memcpy(err->msg + n, old, ol);
    err->msg[n + ol] = '\0';
    if (err->n_ctx == CG_ERROR_CHAIN) err->n_ctx--; /* the innermost boundary is dropped */
    for (unsigned i = err->n_ctx; i > 0; i--) err->ctx_end[i] = err->ctx_end[i - 1] + (unsigned)n;
    err->ctx_end[0] = (unsigned)pl;
    err->n_ctx++;
    return -1;
}

void cg_err_clear(cg_error *err) {
    if (!err) return;
    err->code = CG_OK;
    err->reason = CG_R_NONE;
    err->limit = NULL;
    err->line = 0;
    err->msg[0] = '\0';
    err->n_ctx = 0;
}

void cg_err_write_chain(cg_buf *out, const cg_error *err) {
    size_t len = strnlen(err->msg, sizeof err->msg), start = 0;
    for (unsigned i = 0; i <= err->n_ctx; i++) {
        size_t end = i < err->n_ctx && err->ctx_end[i] <= len ? err->ctx_end[i] : len;
        if (i == 1) cg_buf_puts(out, "\n\nCaused by:");
        if (i >= 1 && err->n_ctx > 1) cg_buf_printf(out, "\n%5u: ", i - 1); /* anyhow's "{: >5}: " */
        else if (i >= 1) cg_buf_puts(out, "\n    ");
        cg_buf_append(out, err->msg + start, end - start);
        start = end + 2 <= len ? end + 2 : len;
    }
}

const char *cg_err_quote(char *buf, size_t size, const char *s) {
    size_t o = 0;
    if (size < 3) {
        if (size) buf[0] = '\0';
        return buf;
    }
    buf[o++] = '"';
    for (; *s && o + 4 < size; s++) {
        char e = *s == '"' ? '"' : *s == '\\' ? '\\' : *s == '\n' ? 'n' : *s == '\r' ? 'r' : *s == '\t' ? 't' : 0;
        if (e) {
            buf[o++] = '\\';
            buf[o++] = e;
        } else {
            buf[o++] = *s;
        }
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

cg_errcode cg_errcode_of_errno(int e) { return e == ENOSPC || e == EDQUOT ? CG_ENOSPC : CG_EIO; }
