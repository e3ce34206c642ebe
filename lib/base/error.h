/* error.h — the one error type of libcandlegraph.
 *
 * Every fallible function takes a `cg_error *err` (may be NULL) and returns a
 * status (0 / non-NULL on success). The message is human-readable text in the
 * upstream crate's wording; context is prepended "context: cause" like anyhow's
 * alternate display. Messages longer than CG_ERROR_MAX-1 bytes are truncated.
 * The struct owns no heap memory. */
#ifndef CG_BASE_ERROR_H
#define CG_BASE_ERROR_H

#include <stdarg.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/reason.h"

#define CG_ERROR_MAX 4096

typedef enum cg_errcode {
    CG_OK = 0,
    CG_EINVAL,   /* invalid argument or misuse of an API */
    CG_EIO,      /* filesystem or OS error */
    CG_EPARSE,   /* malformed input (JSON, trace rules, CSV) */
    CG_ELIMIT,   /* a size, depth or count limit was exceeded */
    CG_ENOMEM,   /* allocation failure */
    CG_EVERIFY,  /* bundle / signature verification failure */
    CG_ESTATE,   /* operation not allowed in the current state */
    CG_EEXIST,   /* destination already exists */
    CG_ENOSPC,   /* storage exhausted (ENOSPC, EDQUOT): the disk or a quota is full */
} cg_errcode;

#define CG_ERROR_CHAIN 8

typedef struct cg_error {
    cg_errcode code;
    cg_reason reason;       /* why, set where detected (base/reason.h); CG_R_NONE: a local failure */
    const char *limit;      /* static name of the limit exceeded (CG_R_PAYLOAD_TOO_LARGE), or NULL */
    int line;               /* 1-based input line when relevant, else 0 */
    char msg[CG_ERROR_MAX];
    /* anyhow's context chain inside msg: ctx_end[i] is where the i-th context
     * (outermost first) ends, before its ": " separator. */
    unsigned n_ctx;
    unsigned ctx_end[CG_ERROR_CHAIN];
} cg_error;

/* Sets code and message (printf format). Returns 0 (or NULL-equivalent) for
 * convenient `return cg_err_set(...)` in int-returning functions: it returns -1. */
int cg_err_set(cg_error *err, cg_errcode code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int cg_err_vset(cg_error *err, cg_errcode code, const char *fmt, va_list ap);
/* cg_err_set that also records the reason (cg_err_set itself resets the
 * reason to CG_R_NONE and the limit to NULL). Returns -1. */
int cg_err_setr(cg_error *err, cg_reason reason, cg_errcode code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Sets the reason of an error already set (keeps code and message). Returns -1. */
int cg_err_reason(cg_error *err, cg_reason reason);
/* Prepends "context: " to the existing message; keeps the code and reason. Returns -1. */
int cg_err_context(cg_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cg_err_clear(cg_error *err);
/* Appends anyhow's Debug rendering of the chain (what a Rust main returning
 * Err prints after "Error: "): the outermost message, then, when there are
 * causes, "\n\nCaused by:\n" and each cause indented by four spaces,
 * numbered "N: " when there is more than one. No trailing newline. */
void cg_err_write_chain(cg_buf *out, const cg_error *err);
/* CG_ENOSPC for ENOSPC and EDQUOT, CG_EIO for every other errno value. */
cg_errcode cg_errcode_of_errno(int e);

/* Rust's {:?} of a string, as the crate's messages quote values: s in double
 * quotes with \" \\ \n \r \t escaped, written into buf (truncated to size;
 * always terminated). Returns buf. */
const char *cg_err_quote(char *buf, size_t size, const char *s);
/* cg_err_quote into a temporary buffer that lives until the end of the
 * enclosing full expression (for message arguments). */
#define CG_QUOTE(s) cg_err_quote((char[CG_ERROR_MAX / 2]){0}, CG_ERROR_MAX / 2, (s))

#endif
