/* cli_upload.h — one HTTP upload of a finalized bundle to candle-graph-server
 * (API.md "POST /bundles"): the bundle is packed (cg_archive_pack, tar.zst)
 * into a temporary file beside nothing else (TMPDIR), sent with
 * `Authorization: Bearer <token>`, `Content-Type: application/zstd` and, when
 * a signature sidecar is given, `Candle-Graph-Signature: <base64 of the
 * sidecar JSON>`. No retries here: the caller decides (daemon, upload).
 *
 * Result: http_status 0 means no HTTP answer (connection refused, reset,
 * timeout; curl_error says which). body is the response body (malloc'd,
 * NUL-terminated, capped at 1 MiB), retry_after_s the Retry-After header in
 * seconds (-1 when absent). Free with cli_upload_result_free.
 * Errors: -1 with err only for local failures (packing, curl set-up); an HTTP
 * error status is a successful call with that status. Without libcurl at build
 * time every call fails with a message saying so. Thread-safe after
 * cli_upload_global_init (call once before starting threads). */
#ifndef CG_CLI_UPLOAD_H
#define CG_CLI_UPLOAD_H

#include <stddef.h>

#include "base/error.h"

typedef struct cli_upload_result {
    long http_status;
    char *body;
    size_t body_len;
    long retry_after_s;
    char curl_error[256];
} cli_upload_result;

int cli_upload_global_init(cg_error *err);
int cli_upload_bundle(const char *server, const char *token, const char *bundle_dir,
                      const char *sidecar, long timeout_s, cli_upload_result *out, cg_error *err);
void cli_upload_result_free(cli_upload_result *r);

#endif
