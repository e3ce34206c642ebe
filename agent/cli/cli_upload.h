/* cli_upload.h — HTTP upload of a finalized bundle to candle-graph-server
 * (API.md "POST /bundles"), shared by `candle-graph daemon` and
 * `candle-graph upload`. The bundle is packed once (cg_archive_pack, tar.zst,
 * verified while packing) into an unlinked temporary file in TMPDIR; each send
 * POSTs it to <server>/bundles with `Authorization: Bearer <token>`,
 * `Content-Type: application/zstd` and, when a signature sidecar is given,
 * `Candle-Graph-Signature: <base64 of the sidecar JSON>`. No retries here: the
 * caller decides (daemon, upload); a prepared upload may be sent again.
 *
 * Result: http_status 0 means no HTTP answer (connection refused, reset,
 * timeout; curl_error says which, transport_retryable whether that kind of
 * failure is worth retrying). body is the response body (malloc'd,
 * NUL-terminated, the head of at most body_max bytes kept; body_truncated says
 * more came), retry_after_s the Retry-After header in seconds (-1 when absent
 * or 0). Free with cli_upload_result_free.
 *
 * Ownership: cli_upload_prepare returns a handle freed by cli_upload_free (it
 * owns the open archive stream and the signature header); cli_upload_url
 * returns a malloc'd string. Errors: -1 with err only for local failures
 * (packing, reading the sidecar, curl set-up); an HTTP error status is a
 * successful call with that status. Without libcurl at build time every call
 * fails with a message saying so. Thread-safe after cli_upload_global_init
 * (call once before starting threads); one handle is used by one thread. */
#ifndef CG_CLI_UPLOAD_H
#define CG_CLI_UPLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef struct cli_upload_result {
    long http_status;
    char *body;
    size_t body_len;
    bool body_truncated;
    long retry_after_s;
    bool transport_retryable; /* http_status 0 from resolve/connect/timeout/send/receive errors */
    char curl_error[256];
} cli_upload_result;

/* Called while a send is in progress with the archive bytes sent so far and
 * the archive size (total 0 while unknown). */
typedef void (*cli_upload_progress_fn)(void *ud, uint64_t sent, uint64_t total);

typedef struct cli_upload_opts {
    long timeout_s;         /* whole request; 0 = no limit */
    bool abort_stalled;     /* abort while sending the body when its next 60 KiB take over 60 s
                               (a retryable transport failure); never once the whole body is
                               sent and the server works on its answer */
    bool expect_continue;   /* let curl send `Expect: 100-continue` for large bodies */
    size_t body_max;        /* response bytes kept; 0 = 1 MiB */
    cli_upload_progress_fn progress; /* optional */
    void *progress_ud;
} cli_upload_opts;

typedef struct cli_upload cli_upload;

int cli_upload_global_init(cg_error *err);
void cli_upload_global_cleanup(void);

/* Packs bundle_dir. sidecar/sidecar_len: the signature sidecar JSON to send
 * (NULL = unsigned upload). Errors come from the packer without context. */
int cli_upload_prepare(const char *bundle_dir, const char *sidecar, size_t sidecar_len, cli_upload **out,
                       cg_error *err);
uint64_t cli_upload_size(const cli_upload *u);
/* One POST of the prepared archive (rewound first). */
int cli_upload_send(cli_upload *u, const char *server, const char *token, const cli_upload_opts *opts,
                    cli_upload_result *out, cg_error *err);
void cli_upload_free(cli_upload *u);

/* Monotonic seconds (CLOCK_MONOTONIC), for rates and stall windows. */
double cli_upload_clock_s(void);

/* <server>/bundles (one '/' between them); malloc'd, never NULL (base/alloc.h). */
char *cli_upload_url(const char *server);

/* Prepare + one send + free (the daemon): sidecar_path is read (64 KiB cap)
 * when not NULL; pack errors get the context "pack <bundle_dir>"; timeout_s 0
 * means 600 s; Expect: 100-continue is never sent. */
int cli_upload_bundle(const char *server, const char *token, const char *bundle_dir,
                      const char *sidecar_path, long timeout_s, cli_upload_result *out, cg_error *err);
void cli_upload_result_free(cli_upload_result *r);

#endif
