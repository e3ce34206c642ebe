#include "base/reason.h"

#include <string.h>

typedef struct reason_row {
    const char *code;
    cg_reason_category cat;
    bool retryable;
    const char *meaning;
} reason_row;

static const reason_row rows[CG_R__COUNT] = {
    [CG_R_NONE] = {"none", CG_CAT_NONE, false, ""},
#define CG_REASON(id, code, cat, retry, meaning) [CG_R_##id] = {code, CG_CAT_##cat, retry, meaning},
#include "base/reason.def"
#undef CG_REASON
};

static const char *const category_names[CG_CAT__COUNT] = {
    [CG_CAT_NONE] = "none",         [CG_CAT_INPUT] = "input",
    [CG_CAT_VERIFY] = "verify",     [CG_CAT_AUTH] = "auth",
    [CG_CAT_CONFLICT] = "conflict", [CG_CAT_LIMIT] = "limit",
    [CG_CAT_OVERLOAD] = "overload", [CG_CAT_UNSUPPORTED] = "unsupported",
    [CG_CAT_INTERNAL] = "internal", [CG_CAT_DEPENDENCY] = "dependency",
    [CG_CAT_STORE] = "store",
};

static bool valid(cg_reason r) { return (unsigned)r < CG_R__COUNT; }

const char *cg_reason_code(cg_reason r) { return valid(r) ? rows[r].code : NULL; }

cg_reason cg_reason_from_code(const char *code) {
    for (unsigned i = 1; code && i < CG_R__COUNT; i++)
        if (strcmp(rows[i].code, code) == 0) return (cg_reason)i;
    return CG_R_NONE;
}

cg_reason_category cg_reason_cat(cg_reason r) { return valid(r) ? rows[r].cat : CG_CAT_NONE; }

bool cg_reason_retryable(cg_reason r) { return valid(r) && rows[r].retryable; }

const char *cg_reason_meaning(cg_reason r) { return valid(r) ? rows[r].meaning : ""; }

const char *cg_reason_category_name(cg_reason_category c) {
    return (unsigned)c < CG_CAT__COUNT ? category_names[c] : NULL;
}
