/* cmd_upload.c — `candle-graph upload BUNDLE --server URL --token T [--key KEYFILE]`.
 *
 * Packs the bundle with the library's archive packer (tar.zst, verified and
 * re-hashed while packing) into a temp file, signs bundle.json with --key (or
 * sends the existing <bundle>.sig.json sidecar), and POSTs it to URL/bundles.
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "base/buf.h"
#include "base/fs.h"
#include "bundle/archive.h"
#include "bundle/signature.h"
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

#include <curl/curl.h>

typedef struct progress {
    bool tty;
    double t0;
    curl_off_t last_shown;
} progress;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void human(double b, char *out, size_t n) {
    const char *u[] = {"B", "KiB", "MiB", "GiB"};
    int i = 0;
    while (b >= 1024 && i < 3) {
        b /= 1024;
        i++;
    }
    snprintf(out, n, "%.1f %s", b, u[i]);
}

static int on_progress(void *cls, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
    (void)dltotal;
    (void)dlnow;
    progress *p = cls;
    if (!p->tty || ultotal <= 0 || ulnow == p->last_shown) return 0;
    p->last_shown = ulnow;
    double el = now_s() - p->t0;
    char a[32], b[32], r[32];
    human((double)ulnow, a, sizeof a);
    human((double)ultotal, b, sizeof b);
    human(el > 0 ? (double)ulnow / el : 0, r, sizeof r);
    int width = 30, fill = (int)((double)width * (double)ulnow / (double)ultotal);
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
    bar[width] = 0;
    fprintf(stderr, "\r[%s] %s / %s  %s/s ", bar, a, b, r);
    return 0;
}

static size_t on_body(char *data, size_t size, size_t n, void *cls) {
    cg_buf *b = cls;
    if (b->len + size * n > (64u << 20)) return 0; /* bounded response */
    cg_buf_append(b, data, size * n);
    return size * n;
}

static int on_seek(void *cls, curl_off_t off, int origin) {
    return fseeko((FILE *)cls, (off_t)off, origin) == 0 ? CURL_SEEKFUNC_OK : CURL_SEEKFUNC_FAIL;
}

static bool retryable_curl(CURLcode c) {
    return c == CURLE_COULDNT_RESOLVE_HOST || c == CURLE_COULDNT_CONNECT || c == CURLE_OPERATION_TIMEDOUT ||
           c == CURLE_SEND_ERROR || c == CURLE_RECV_ERROR || c == CURLE_GOT_NOTHING || c == CURLE_PARTIAL_FILE ||
           c == CURLE_HTTP2_STREAM || c == CURLE_HTTP2;
}

static bool retryable_status(long s) { return s == 408 || s == 429 || s == 500 || s == 502 || s == 503 || s == 504; }

/* Signature header value (base64 of the sidecar JSON), or NULL when unsigned. */
static char *signature_header(const char *bundle, const char *key, cg_error *err, bool *failed) {
    *failed = false;
    cg_buf sidecar = CG_BUF_INIT;
    if (key) {
        unsigned char seed[CG_SIG_SEED_BYTES], pk[CG_SIG_PUBLIC_BYTES];
        char *mpath = cg_path_join(bundle, "bundle.json");
        size_t mlen = 0;
        char *manifest = cg_read_file(mpath, (size_t)256 << 20, &mlen, err);
        free(mpath);
        if (!manifest || cg_sig_load_private(key, seed, pk, err) < 0 ||
            cg_sig_sign_manifest(manifest, mlen, seed, &sidecar, err) < 0) {
            sodium_memzero(seed, sizeof seed);
            free(manifest);
            cg_buf_free(&sidecar);
            *failed = true;
            return NULL;
        }
        sodium_memzero(seed, sizeof seed);
        free(manifest);
    } else {
        char *sp = cg_signature_sidecar_path(bundle, err);
        if (!sp || !cg_path_exists(sp)) {
            free(sp);
            return NULL;
        }
        size_t len = 0;
        char *text = cg_read_file(sp, 64 * 1024, &len, err);
        free(sp);
        if (!text) {
            *failed = true;
            return NULL;
        }
        cg_buf_append(&sidecar, text, len);
        free(text);
    }
    size_t b64len = sodium_base64_encoded_len(sidecar.len, sodium_base64_VARIANT_ORIGINAL);
    char *hdr = malloc(b64len + 32);
    if (hdr) {
        memcpy(hdr, "Candle-Graph-Signature: ", 24);
        sodium_bin2base64(hdr + 24, b64len, (const unsigned char *)sidecar.data, sidecar.len,
                          sodium_base64_VARIANT_ORIGINAL);
    }
    cg_buf_free(&sidecar);
    return hdr;
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
            return cli_usage_error("upload", "unexpected argument %s", argv[i]);
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
    if (sodium_init() < 0) return cli_failf("upload: libsodium initialisation failed");
    cg_error err = {0};
    bool sig_failed;
    char *sig_hdr = signature_header(bundle, key, &err, &sig_failed);
    if (sig_failed) return cli_fail(&err);

    /* pack into a private temp file (tar.zst) */
    const char *tmpdir = getenv("TMPDIR");
    char *tmp = malloc(4096);
    if (!tmp || snprintf(tmp, 4096, "%s/cg-upload-%ld-%ld.tar.zst", tmpdir && *tmpdir ? tmpdir : "/tmp",
                         (long)getpid(), (long)time(NULL)) >= 4096) {
        free(tmp);
        free(sig_hdr);
        return cli_failf("upload: temp path too long");
    }
    if (cg_archive_pack(bundle, tmp, true, &err) < 0) {
        free(sig_hdr);
        free(tmp);
        return cli_fail(&err);
    }
    FILE *f = fopen(tmp, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0) {
        if (f) fclose(f);
        unlink(tmp);
        free(tmp);
        free(sig_hdr);
        return cli_failf("upload: cannot reopen the packed archive");
    }
    unlink(tmp); /* the open stream keeps it; nothing is left behind */
    free(tmp);

    size_t sl = strlen(server), tl = strlen(token);
    char *url = malloc(sl + 16), *auth = malloc(tl + 32);
    if (url) snprintf(url, sl + 16, "%.*s/bundles", (int)(sl && server[sl - 1] == '/' ? sl - 1 : sl), server);
    if (auth) snprintf(auth, tl + 32, "Authorization: Bearer %s", token);
    if (!url || !auth || curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
        fclose(f);
        free(url);
        free(auth);
        free(sig_hdr);
        return cli_failf("upload: initialisation failed");
    }
    CURL *h = curl_easy_init();
    struct curl_slist *hdrs = NULL;
    hdrs = curl_slist_append(hdrs, "Content-Type: application/zstd");
    hdrs = curl_slist_append(hdrs, auth);
    if (sig_hdr) hdrs = curl_slist_append(hdrs, sig_hdr);
    progress prog = {isatty(STDERR_FILENO) != 0, 0, -1};
    cg_buf body = CG_BUF_INIT;
    char errbuf[CURL_ERROR_SIZE];
    int rc = 1;
    long status = 0;
    char sz[32];
    human((double)st.st_size, sz, sizeof sz);
    for (long attempt = 0; h; attempt++) {
        rewind(f);
        cg_buf_reset(&body);
        errbuf[0] = 0;
        curl_easy_reset(h);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)st.st_size);
        curl_easy_setopt(h, CURLOPT_READDATA, f);
        curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, on_seek);
        curl_easy_setopt(h, CURLOPT_SEEKDATA, f);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1024L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
        curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, &prog);
        prog.t0 = now_s();
        prog.last_shown = -1;
        if (!prog.tty) fprintf(stderr, "candle-graph upload: sending %s to %s (attempt %ld)\n", sz, url, attempt + 1);
        CURLcode cc = curl_easy_perform(h);
        if (prog.tty) fputc('\n', stderr);
        status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        bool again = cc != CURLE_OK ? retryable_curl(cc) : retryable_status(status);
        if (cc == CURLE_OK && status >= 200 && status < 300) {
            fwrite(body.data ? body.data : "", 1, body.len, stdout);
            if (body.len && body.data[body.len - 1] != '\n') fputc('\n', stdout);
            rc = fflush(stdout) == 0 ? 0 : 1;
            break;
        }
        if (!again || attempt >= retries) {
            if (cc != CURLE_OK)
                fprintf(stderr, "candle-graph: upload failed: %s\n", errbuf[0] ? errbuf : curl_easy_strerror(cc));
            else {
                fprintf(stderr, "candle-graph: upload rejected with HTTP %ld\n", status);
                fwrite(body.data ? body.data : "", 1, body.len, stderr);
                if (body.len && body.data[body.len - 1] != '\n') fputc('\n', stderr);
            }
            break;
        }
        /* exponential backoff with full jitter, at least Retry-After */
        double cap = 0.5 * (double)(1L << (attempt < 6 ? attempt : 6));
        if (cap > 30) cap = 30;
        double wait = cap * ((double)randombytes_uniform(1000) / 1000.0);
        curl_off_t ra = 0;
        if (cc == CURLE_OK && curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0 &&
            (double)ra > wait)
            wait = ra > 60 ? 60 : (double)ra;
        fprintf(stderr, "candle-graph upload: %s; retrying in %.1fs\n",
                cc != CURLE_OK ? (errbuf[0] ? errbuf : curl_easy_strerror(cc)) : "server busy or unavailable", wait);
        struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
        nanosleep(&ts, NULL);
    }
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
    curl_global_cleanup();
    cg_buf_free(&body);
    fclose(f);
    free(url);
    free(auth);
    free(sig_hdr);
    return rc;
}

#endif
