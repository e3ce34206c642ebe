/* errors.c — API.md error codes and the HTTP status of each category. */
#include <string.h>

#include "srv.h"

struct code_status { const char *code; unsigned status; };
static const struct code_status table[] = {
    {"bad_request", 400}, {"invalid_parameter", 400}, {"malformed_json", 400}, {"ambiguous_series", 400},
    {"malformed_archive", 400}, {"malformed_manifest", 400}, {"malformed_signature", 400},
    {"unauthorized", 401},
    {"forbidden", 403}, {"signer_unknown", 403}, {"signer_revoked", 403},
    {"not_found", 404},
    {"method_not_allowed", 405},
    {"run_id_conflict", 409}, {"campaign_conflict", 409},
    {"payload_too_large", 413},
    {"unsupported_media_type", 415},
    {"unsupported_bundle_schema", 422}, {"unsafe_path", 422}, {"duplicate_path", 422},
    {"invalid_digest", 422}, {"special_file", 422}, {"undeclared_file", 422},
    {"missing_file", 422}, {"size_mismatch", 422}, {"digest_mismatch", 422},
    {"run_id_mismatch", 422}, {"trace_invalid", 422}, {"semantic_mismatch", 422},
    {"signature_missing", 422}, {"signature_invalid", 422}, {"ineligible", 422},
    {"too_many_requests", 429},
    {"internal", 500},
    {"unavailable", 503},
    {"insufficient_storage", 507},
};

const char *const srv_error_codes[] = {
    "bad_request", "invalid_parameter", "malformed_json", "malformed_archive", "malformed_manifest",
    "malformed_signature", "unauthorized", "forbidden", "signer_unknown", "signer_revoked",
    "not_found", "method_not_allowed", "run_id_conflict", "campaign_conflict", "payload_too_large",
    "unsupported_media_type", "unsupported_bundle_schema", "unsafe_path", "duplicate_path",
    "invalid_digest", "special_file", "undeclared_file", "missing_file", "size_mismatch",
    "digest_mismatch", "run_id_mismatch", "trace_invalid", "semantic_mismatch", "signature_missing",
    "signature_invalid", "ineligible", "too_many_requests", "unavailable", "insufficient_storage",
    "ambiguous_series", NULL,
};

unsigned srv_error_status(const char *code) {
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].code, code) == 0) return table[i].status;
    return 500;
}
