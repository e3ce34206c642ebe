/* buf.h — growable byte buffer (heap). The buffer owns `data`; cg_buf_free
 * releases it. `data` is always NUL-terminated after any append (len excludes it).
 * Allocation failure follows the cg_x* policy of base/alloc.h. */
#ifndef CG_BASE_BUF_H
#define CG_BASE_BUF_H

#include <stddef.h>

typedef struct cg_buf {
    char *data;
    size_t len, cap;
} cg_buf;

#define CG_BUF_INIT {0, 0, 0}

void cg_buf_reserve(cg_buf *b, size_t extra);
void cg_buf_append(cg_buf *b, const void *p, size_t n);
void cg_buf_puts(cg_buf *b, const char *s);
void cg_buf_putc(cg_buf *b, char c);
void cg_buf_printf(cg_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cg_buf_reset(cg_buf *b);  /* len = 0, keeps capacity */
void cg_buf_free(cg_buf *b);
/* Transfers ownership of the data to the caller (malloc'd, NUL-terminated). */
char *cg_buf_take(cg_buf *b, size_t *len);

#endif
