/* reason.h — why an operation failed, as one value from one table
 * (base/reason.def): its stable code string, its category and whether a retry
 * may succeed. A cg_error carries the reason set where the failure was
 * detected (library or server); the server maps each reason to its HTTP status
 * in server/errors.c and nowhere else.
 *
 * CG_R_NONE means "no reason of the table": a local failure of the operation
 * itself (out of memory, an I/O error of our own disk, a caller's misuse).
 * The tables are static; nothing here allocates. */
#ifndef CG_BASE_REASON_H
#define CG_BASE_REASON_H

#include <stdbool.h>

typedef enum cg_reason {
    CG_R_NONE = 0,
#define CG_REASON(id, code, cat, retry, meaning) CG_R_##id,
#include "base/reason.def"
#undef CG_REASON
    CG_R__COUNT /* one past the last reason */
} cg_reason;

typedef enum cg_reason_category {
    CG_CAT_NONE = 0,    /* CG_R_NONE only */
    CG_CAT_INPUT,       /* the request itself: syntax, parameters, route, media type (4xx) */
    CG_CAT_VERIFY,      /* the uploaded bundle or the comparison fails a verification rule (422) */
    CG_CAT_AUTH,        /* token or signing key (401/403) */
    CG_CAT_CONFLICT,    /* the request conflicts with stored data (409) */
    CG_CAT_LIMIT,       /* a size or count limit of this server (413/414/431) */
    CG_CAT_OVERLOAD,    /* our capacity is busy; retry later (429) */
    CG_CAT_UNSUPPORTED, /* the request needs a feature this server does not implement (501) */
    CG_CAT_INTERNAL,    /* damage inside our own store (500) */
    CG_CAT_DEPENDENCY,  /* the database or blob store is unreachable (503) */
    CG_CAT_STORE,       /* our disk or quota is full (507) */
    CG_CAT__COUNT
} cg_reason_category;

/* The stable code ("not_found"); "none" for CG_R_NONE, NULL out of range. */
const char *cg_reason_code(cg_reason r);
/* The reason of a code, or CG_R_NONE for an unknown code. */
cg_reason cg_reason_from_code(const char *code);
cg_reason_category cg_reason_cat(cg_reason r); /* CG_CAT_NONE out of range */
bool cg_reason_retryable(cg_reason r);
/* One line on what the reason means (docs/api.md); "" for CG_R_NONE. */
const char *cg_reason_meaning(cg_reason r);
/* Lowercase name of a category ("input", "verify", ...); NULL out of range. */
const char *cg_reason_category_name(cg_reason_category c);

#endif
