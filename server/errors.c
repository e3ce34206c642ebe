/* errors.c — the HTTP status of every reason (API.md "Errors"). The reasons
 * themselves — code, category, retryability — are the one table in
 * lib/base/reason.def; this file is the one place that maps a reason to a
 * status (srv_fail answers with it). Input errors are never 5xx: 5xx is only
 * for our own store, its dependencies, or a feature we do not implement. */
#include <stdio.h>
#include <string.h>

#include "srv.h"

/* X(reason, status): every reason of base/reason.def exactly once (a missing
 * row fails the _Static_assert below, a repeated one -Woverride-init). */
#define SRV_STATUS(X)                                                                                                  \
    X(BAD_REQUEST, 400)                                                                                                \
    X(INVALID_PARAMETER, 400)                                                                                          \
    X(MALFORMED_JSON, 400)                                                                                             \
    X(MALFORMED_ARCHIVE, 400)                                                                                          \
    X(MALFORMED_MANIFEST, 400)                                                                                         \
    X(MALFORMED_SIGNATURE, 400)                                                                                        \
    X(DUPLICATE_KEY, 400)                                                                                              \
    X(AMBIGUOUS_SERIES, 400)                                                                                           \
    X(UNAUTHORIZED, 401)                                                                                               \
    X(FORBIDDEN, 403)                                                                                                  \
    X(SIGNER_UNKNOWN, 403)                                                                                             \
    X(SIGNER_REVOKED, 403)                                                                                             \
    X(NOT_FOUND, 404)                                                                                                  \
    X(METHOD_NOT_ALLOWED, 405)                                                                                         \
    X(RUN_ID_CONFLICT, 409)                                                                                            \
    X(CAMPAIGN_CONFLICT, 409)                                                                                          \
    X(PAYLOAD_TOO_LARGE, 413)                                                                                          \
    X(URI_TOO_LONG, 414)                                                                                               \
    X(UNSUPPORTED_MEDIA_TYPE, 415)                                                                                     \
    X(UNSUPPORTED_BUNDLE_SCHEMA, 422)                                                                                  \
    X(UNSAFE_PATH, 422)                                                                                                \
    X(DUPLICATE_PATH, 422)                                                                                             \
    X(INVALID_DIGEST, 422)                                                                                             \
    X(SPECIAL_FILE, 422)                                                                                               \
    X(UNDECLARED_FILE, 422)                                                                                            \
    X(MISSING_FILE, 422)                                                                                               \
    X(SIZE_MISMATCH, 422)                                                                                              \
    X(DIGEST_MISMATCH, 422)                                                                                            \
    X(RUN_ID_MISMATCH, 422)                                                                                            \
    X(INVALID_RUN_ID, 422)                                                                                             \
    X(TRACE_INVALID, 422)                                                                                              \
    X(SEMANTIC_MISMATCH, 422)                                                                                          \
    X(SIGNATURE_MISSING, 422)                                                                                          \
    X(SIGNATURE_INVALID, 422)                                                                                          \
    X(INELIGIBLE, 422)                                                                                                 \
    X(TOO_MANY_REQUESTS, 429)                                                                                          \
    X(TOO_MANY_PARAMETERS, 431)                                                                                        \
    X(INTERNAL, 500)                                                                                                   \
    X(NOT_IMPLEMENTED, 501)                                                                                            \
    X(UNAVAILABLE, 503)                                                                                                \
    X(INSUFFICIENT_STORAGE, 507)

#define ROW(id, status) [CG_R_##id] = status,
static const unsigned short status_of[CG_R__COUNT] = {[CG_R_NONE] = 500, SRV_STATUS(ROW)};
#undef ROW
#define ONE(id, status) +1
_Static_assert(0 SRV_STATUS(ONE) == CG_R__COUNT - 1, "server/errors.c: every reason needs exactly one status");
#undef ONE

unsigned srv_reason_status(cg_reason r) { return (unsigned)r < CG_R__COUNT ? status_of[r] : 500; }

void srv_reasons_markdown(cg_buf *out) {
    cg_buf_puts(out, "| Code | Status | Category | Retry | Meaning |\n| --- | --- | --- | --- | --- |\n");
    for (unsigned i = CG_R_NONE + 1; i < CG_R__COUNT; i++) {
        cg_reason r = (cg_reason)i;
        cg_buf_printf(out, "| `%s` | %u | %s | %s | %s |\n", cg_reason_code(r), srv_reason_status(r),
                      cg_reason_category_name(cg_reason_cat(r)), cg_reason_retryable(r) ? "yes" : "no",
                      cg_reason_meaning(r));
    }
}

int srv_cmd_errors(int argc, char **argv) {
    (void)argc;
    (void)argv;
    cg_buf b = CG_BUF_INIT;
    srv_reasons_markdown(&b);
    fwrite(b.data, 1, b.len, stdout);
    cg_buf_free(&b);
    return 0;
}

cg_reason srv_reason_of(const cg_error *err) {
    if (err && err->reason > CG_R_NONE && err->reason < CG_R__COUNT) return err->reason;
    return err && err->code == CG_ENOSPC ? CG_R_INSUFFICIENT_STORAGE : CG_R_UNAVAILABLE;
}
