/* errors.c — the one table of error reasons (API.md "Errors"): each code with
 * its category, HTTP status and whether a client may retry it. The server maps
 * reason → status here and nowhere else (srv_fail looks the code up); input
 * errors are never 5xx: 5xx is only for our own store or its dependencies. */
#include <stdio.h>
#include <string.h>

#include "srv.h"

/* X(code, category, status, retryable) */
#define SRV_REASONS(X)                                      \
    X(bad_request, SRV_CAT_INPUT, 400, false)               \
    X(invalid_parameter, SRV_CAT_INPUT, 400, false)         \
    X(malformed_json, SRV_CAT_INPUT, 400, false)            \
    X(malformed_archive, SRV_CAT_INPUT, 400, false)         \
    X(malformed_manifest, SRV_CAT_INPUT, 400, false)        \
    X(malformed_signature, SRV_CAT_INPUT, 400, false)       \
    X(duplicate_key, SRV_CAT_INPUT, 400, false)             \
    X(ambiguous_series, SRV_CAT_INPUT, 400, false)          \
    X(unauthorized, SRV_CAT_AUTH, 401, false)               \
    X(forbidden, SRV_CAT_AUTH, 403, false)                  \
    X(signer_unknown, SRV_CAT_AUTH, 403, false)             \
    X(signer_revoked, SRV_CAT_AUTH, 403, false)             \
    X(not_found, SRV_CAT_INPUT, 404, false)                 \
    X(method_not_allowed, SRV_CAT_INPUT, 405, false)        \
    X(run_id_conflict, SRV_CAT_CONFLICT, 409, false)        \
    X(campaign_conflict, SRV_CAT_CONFLICT, 409, false)      \
    X(payload_too_large, SRV_CAT_LIMIT, 413, false)         \
    X(uri_too_long, SRV_CAT_LIMIT, 414, false)              \
    X(unsupported_media_type, SRV_CAT_INPUT, 415, false)    \
    X(unsupported_bundle_schema, SRV_CAT_VERIFY, 422, false) \
    X(unsafe_path, SRV_CAT_VERIFY, 422, false)              \
    X(duplicate_path, SRV_CAT_VERIFY, 422, false)           \
    X(invalid_digest, SRV_CAT_VERIFY, 422, false)           \
    X(special_file, SRV_CAT_VERIFY, 422, false)             \
    X(undeclared_file, SRV_CAT_VERIFY, 422, false)          \
    X(missing_file, SRV_CAT_VERIFY, 422, false)             \
    X(size_mismatch, SRV_CAT_VERIFY, 422, false)            \
    X(digest_mismatch, SRV_CAT_VERIFY, 422, false)          \
    X(run_id_mismatch, SRV_CAT_VERIFY, 422, false)          \
    X(invalid_run_id, SRV_CAT_VERIFY, 422, false)           \
    X(trace_invalid, SRV_CAT_VERIFY, 422, false)            \
    X(semantic_mismatch, SRV_CAT_VERIFY, 422, false)        \
    X(signature_missing, SRV_CAT_VERIFY, 422, false)        \
    X(signature_invalid, SRV_CAT_VERIFY, 422, false)        \
    X(ineligible, SRV_CAT_VERIFY, 422, false)               \
    X(too_many_requests, SRV_CAT_OVERLOAD, 429, true)       \
    X(too_many_parameters, SRV_CAT_LIMIT, 431, false)       \
    X(internal, SRV_CAT_STORE, 500, false)                  \
    X(not_implemented, SRV_CAT_INPUT, 501, false)           \
    X(unavailable, SRV_CAT_STORE, 503, true)                \
    X(insufficient_storage, SRV_CAT_STORE, 507, true)

#define ROW(code, cat, status, retry) {#code, cat, status, retry},
static const srv_reason_info table[] = {SRV_REASONS(ROW)};
#undef ROW

#define NAME(code, cat, status, retry) #code,
const char *const srv_error_codes[] = {SRV_REASONS(NAME) NULL};
#undef NAME

const srv_reason_info *srv_reason(const char *code) {
    for (size_t i = 0; code && i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].code, code) == 0) return &table[i];
    return NULL;
}

unsigned srv_error_status(const char *code) {
    const srv_reason_info *r = srv_reason(code);
    return r ? r->status : 500;
}

bool srv_error_retryable(const char *code) {
    const srv_reason_info *r = srv_reason(code);
    return r && r->retryable;
}
