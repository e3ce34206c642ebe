/* cmd_upload.c — `candle-graph upload BUNDLE --server URL --token T [--key KEYFILE]`.
 *
 * Packs and POSTs the bundle through cli_upload.h (tar.zst, verified and
 * re-hashed while packing, packed once for all attempts), signing bundle.json
 * with --key (or sending the existing <bundle>.sig.json sidecar).
 * Uploads are idempotent by content address, so every retry is safe: connection
 * errors, 408, 429, 500, 502, 503 and 504 are retried with exponential backoff
 * and full jitter (honouring Retry-After). Prints the candle-graph/ingest/1
 * receipt on success; on rejection exits 1 with the server's error envelope on
 * stderr. A progress bar (bytes, rate) is drawn when stderr is a terminal;
 * otherwise plain lines are printed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/fs.h"
#include "bundle/signature.h"
#include "cli_upload.h"
#include "cli_util.h"

const char cg_cmd_upload_help[] =
    "usage: candle-graph upload BUNDLE --server URL --token TOKEN [--key KEYFILE] [--retries N]\n"
    "Uploads one finalized bundle to a candle-graph-server and prints the candle-graph/ingest/1 receipt.\n"
    "  --server URL     server base URL (http:// or https://)\n"
    "  --token TOKEN    bearer token with the upload scope (or env CANDLE_GRAPH_TOKEN)\n"
    "  --key KEYFILE    Ed25519 private key (PKCS#8 PEM) to sign bundle.json; without it the\n"
    "                   sidecar <BUNDLE>.sig.json is sent when it exists\n"
    "  --retries N      attempts after the first on connection errors, 408, 429 and 5xx (default 6)\n";

#ifndef CG_HAVE_CURL

int cg_cmd_upload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_failf("upload: this candle-graph was built without libcurl");
}

#else

#define BODY_MAX ((size_t)64 << 20) /* bounded response */

typedef struct progress {
    bool tty;
    double t0;
    uint64_t last_shown;
} progress;

static void human(double b, char *out, size_t n) {
    const char *u[] = {"B", "KiB", "MiB", "GiB"};
    int i = 0;
    while (b >= 1024 && i < 3) {
        b /= 1024;
        i++;
    }
    snprintf(out, n, "%.1f %s", b, u[i]);
}

/* The terminal progress bar (bytes, rate); nothing when stderr is no terminal. */
static void on_progress(void *cls, uint64_t ulnow, uint64_t ultotal) {
    progress *p = cls;
    if (!p->tty || ultotal == 0 || ulnow == p->last_shown) return;
    p->last_shown = ulnow;
    double el = cli_upload_clock_s() - p->t0;
    char a[32], b[32], r[32];
    human((double)ulnow, a, sizeof a);
    human((double)ultotal, b, sizeof b);
    human(el > 0 ? (double)ulnow / el : 0, r, sizeof r);
    int width = 30, fill = (int)((double)width * (double)ulnow / (double)ultotal);
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
    bar[width] = 0;
    fprintf(stderr, "\r[%s] %s / %s  %s/s ", bar, a, b, r);
}

static bool retryable_status(long s) { return s == 408 || s == 429 || s == 500 || s == 502 || s == 503 || s == 504; }

/* The signature sidecar to send: made now with --key, else the existing
 * <bundle>.sig.json; *unsigned_upload when there is neither. -1 on error. */
static int sidecar_bytes(const char *bundle, const char *key, cg_buf *sidecar, bool *unsigned_upload, cg_error *err) {
    *unsigned_upload = false;
    if (key) {
        unsigned char seed[CG_SIG_SEED_BYTES], pk[CG_SIG_PUBLIC_BYTES];
        char *mpath = cg_path_join(bundle, "bundle.json");
        size_t mlen = 0;
        char *manifest = cg_read_file(mpath, (size_t)256 << 20, &mlen, err);
        cg_free(mpath);
        int rc = !manifest || cg_sig_load_private(key, seed, pk, err) < 0 ||
                         cg_sig_sign_manifest(manifest, mlen, seed, sidecar, err) < 0
                     ? -1
                     : 0;
        sodium_memzero(seed, sizeof seed);
        cg_free(manifest);
        return rc;
    }
    char *sp = cg_signature_sidecar_path(bundle, err);
    if (!sp || !cg_path_exists(sp)) {
        cg_free(sp);
        *unsigned_upload = true;
        return 0;
    }
    size_t len = 0;
    char *text = cg_read_file(sp, 64 * 1024, &len, err);
    cg_free(sp);
    if (!text) return -1;
    cg_buf_append(sidecar, text, len);
    cg_free(text);
    return 0;
}

static void print_body(FILE *to, const cli_upload_result *r) {
    fwrite(r->body ? r->body : "", 1, r->body_len, to);
    if (r->body_len && r->body[r->body_len - 1] != '\n') fputc('\n', to);
}

int cg_cmd_upload(int argc, char **argv) {
    const char *bundle = NULL, *server = NULL, *token = getenv("CANDLE_GRAPH_TOKEN"), *key = NULL, *retries_s = NULL;
    for (int i = 1; i < argc; i++) {
        int r;
        if ((r = cli_take_value(argc, argv, &i, "--server", NULL, &server)) != 0) {
            if (r < 0) return 2;
        } else if ((r = cli_take_value(argc, argv, &i, "--token", NULL, &token)) != 0) {
            if (r < 0) return 2;
        } else if ((r = cli_take_value(argc, argv, &i, "--key", NULL, &key)) != 0) {
            if (r < 0) return 2;
        } else if ((r = cli_take_value(argc, argv, &i, "--retries", NULL, &retries_s)) != 0) {
            if (r < 0) return 2;
        } else if (argv[i][0] == '-' || bundle) {
            return cli_usage_unexpected("upload", argv[i]);
        } else {
            bundle = argv[i];
        }
    }
    if (!bundle || !server || !token || !*token)
        return cli_usage_error("upload", "BUNDLE, --server and --token are required");
    long retries = 6;
    if (retries_s) {
        char *end;
        errno = 0;
        retries = strtol(retries_s, &end, 10);
        if (errno || *end || retries < 0 || retries > 100) return cli_usage_error("upload", "invalid --retries");
    }
    cg_error err = {0};
    if (cli_upload_global_init(&err) != 0) return cli_fail(&err);
    cg_buf sidecar = CG_BUF_INIT;
    bool unsigned_upload;
    cli_upload *up = NULL;
    if (sidecar_bytes(bundle, key, &sidecar, &unsigned_upload, &err) != 0 ||
        cli_upload_prepare(bundle, unsigned_upload ? NULL : (sidecar.data ? sidecar.data : ""), sidecar.len, &up,
                           &err) != 0) {
        cg_buf_free(&sidecar);
        cli_upload_global_cleanup();
        return cli_fail(&err);
    }
    cg_buf_free(&sidecar);
    char *url = cli_upload_url(server);
    progress prog = {isatty(STDERR_FILENO) != 0, 0, 0};
    cli_upload_opts opts = {.abort_stalled = true, .expect_continue = true, .body_max = BODY_MAX,
                            .progress = on_progress, .progress_ud = &prog};
    int rc = 1;
    char sz[32];
    human((double)cli_upload_size(up), sz, sizeof sz);
    for (long attempt = 0;; attempt++) {
        prog.t0 = cli_upload_clock_s();
        prog.last_shown = UINT64_MAX;
        if (!prog.tty) fprintf(stderr, "candle-graph upload: sending %s to %s (attempt %ld)\n", sz, url, attempt + 1);
        cli_upload_result r;
        if (cli_upload_send(up, server, token, &opts, &r, &err) != 0) {
            rc = cli_fail(&err);
            break;
        }
        if (prog.tty) fputc('\n', stderr);
        bool sent = r.http_status != 0;
        if (sent && r.body_truncated) {
            fprintf(stderr, "Error: upload failed: response larger than %zu bytes\n", BODY_MAX);
            cli_upload_result_free(&r);
            break;
        }
        if (sent && r.http_status >= 200 && r.http_status < 300) {
            print_body(stdout, &r);
            rc = fflush(stdout) == 0 ? 0 : 1;
            cli_upload_result_free(&r);
            break;
        }
        bool again = sent ? retryable_status(r.http_status) : r.transport_retryable;
        if (!again || attempt >= retries) {
            if (!sent) {
                fprintf(stderr, "Error: upload failed: %s\n", r.curl_error);
            } else {
                fprintf(stderr, "Error: upload rejected with HTTP %ld\n", r.http_status);
                print_body(stderr, &r);
            }
            cli_upload_result_free(&r);
            break;
        }
        /* exponential backoff with full jitter, at least Retry-After */
        double cap = 0.5 * (double)(1L << (attempt < 6 ? attempt : 6));
        if (cap > 30) cap = 30;
        double wait = cap * ((double)randombytes_uniform(1000) / 1000.0);
        if (sent && r.retry_after_s > 0 && (double)r.retry_after_s > wait)
            wait = r.retry_after_s > 60 ? 60 : (double)r.retry_after_s;
        fprintf(stderr, "candle-graph upload: %s; retrying in %.1fs\n",
                sent ? "server busy or unavailable" : r.curl_error, wait);
        cli_upload_result_free(&r);
        struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
        nanosleep(&ts, NULL);
    }
    cli_upload_free(up);
    cli_upload_global_cleanup();
    cg_free(url);
    return rc;
}

#endif
