/* cli_upload.c — HTTP upload of a bundle (see cli_upload.h). */
#include "cli_upload.h"

#include "base/alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "bundle/archive.h"

#define BODY_MAX_DEFAULT ((size_t)1 << 20)
#define SIDECAR_MAX ((size_t)64 << 10)

char *cli_upload_url(const char *server) {
    size_t sl = strlen(server);
    char *url = cg_xalloc(sl + 16, 1);
    snprintf(url, sl + 16, "%.*s/bundles", (int)(sl && server[sl - 1] == '/' ? sl - 1 : sl), server);
    return url;
}

double cli_upload_clock_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void cli_upload_result_free(cli_upload_result *r) {
    cg_free(r->body);
    r->body = NULL;
    r->body_len = 0;
}

#ifdef CG_HAVE_CURL
#include <curl/curl.h>
#include <sodium.h>

struct cli_upload {
    FILE *archive;  /* unlinked temp file; the stream keeps the bytes */
    uint64_t size;
    char *sig_header; /* "Candle-Graph-Signature: …" or NULL */
};

int cli_upload_global_init(cg_error *err) {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return cg_err_set(err, CG_EIO, "curl_global_init failed");
    if (sodium_init() < 0) return cg_err_set(err, CG_EIO, "sodium_init failed");
    return 0;
}

void cli_upload_global_cleanup(void) { curl_global_cleanup(); }

int cli_upload_prepare(const char *bundle_dir, const char *sidecar, size_t sidecar_len, cli_upload **out,
                       cg_error *err) {
    *out = NULL;
    const char *tmpdir = getenv("TMPDIR");
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s/cg-upload-%ld-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp",
                 (long)getpid()) >= (int)sizeof tmp)
        return cg_err_set(err, CG_EINVAL, "temporary archive path too long");
    int fd = mkstemp(tmp);
    if (fd < 0) return cg_err_set(err, CG_EIO, "temporary archive: %s", strerror(errno));
    close(fd);
    unlink(tmp); /* cg_archive_pack creates out_path itself */
    if (cg_archive_pack(bundle_dir, tmp, true, err) != 0) {
        unlink(tmp);
        return -1;
    }
    FILE *f = fopen(tmp, "rb");
    int open_errno = errno;
    unlink(tmp); /* the open stream keeps the bytes; nothing is left behind */
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0) {
        if (f) fclose(f);
        return cg_err_set(err, CG_EIO, "cannot reopen the packed archive: %s", strerror(f ? errno : open_errno));
    }
    cli_upload *u = cg_xzalloc(1, sizeof *u);
    u->archive = f;
    u->size = (uint64_t)st.st_size;
    if (sidecar) {
        size_t b64 = sodium_base64_ENCODED_LEN(sidecar_len, sodium_base64_VARIANT_ORIGINAL);
        u->sig_header = cg_xalloc(b64 + 32, 1);
        memcpy(u->sig_header, "Candle-Graph-Signature: ", 24);
        sodium_bin2base64(u->sig_header + 24, b64, (const unsigned char *)sidecar, sidecar_len,
                          sodium_base64_VARIANT_ORIGINAL);
    }
    *out = u;
    return 0;
}

uint64_t cli_upload_size(const cli_upload *u) { return u->size; }

void cli_upload_free(cli_upload *u) {
    if (!u) return;
    fclose(u->archive);
    cg_free(u->sig_header);
    cg_free(u);
}

typedef struct {
    cli_upload_result *r;
    size_t cap, max;
} sink;

static size_t on_body(char *p, size_t size, size_t n, void *ud) {
    sink *s = ud;
    size_t len = size * n, room = s->max - s->r->body_len;
    size_t take = len < room ? len : room; /* keep the head of a huge body */
    if (take < len) s->r->body_truncated = true;
    if (s->r->body_len + take + 1 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4096;
        while (cap < s->r->body_len + take + 1) cap *= 2;
        char *b = realloc(s->r->body, cap);
        if (!b) return 0;
        s->r->body = b;
        s->cap = cap;
    }
    memcpy(s->r->body + s->r->body_len, p, take);
    s->r->body_len += take;
    s->r->body[s->r->body_len] = '\0';
    return len;
}

static int on_seek(void *ud, curl_off_t off, int origin) {
    return fseeko((FILE *)ud, (off_t)off, origin) == 0 ? CURL_SEEKFUNC_OK : CURL_SEEKFUNC_FAIL;
}

/* The body-send stall rule of opts->abort_stalled: the next STALL_BYTES of the
 * body took more than STALL_S to go out. Once the whole body is out, the server
 * is working on its answer (a 5M-record ingest takes minutes) and no stall is
 * counted; that wait is bounded by opts->timeout_s and TCP keepalive only. */
#define STALL_S 60.0
#define STALL_BYTES ((curl_off_t)60 << 10)

typedef struct {
    cli_upload_progress_fn fn;
    void *ud;
    bool watch_stall, stalled;
    double mark_t;        /* when the body had mark_bytes out */
    curl_off_t mark_bytes;
} xfer;

static int on_xfer(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
    (void)dltotal;
    (void)dlnow;
    xfer *x = ud;
    if (x->fn) x->fn(x->ud, ulnow > 0 ? (uint64_t)ulnow : 0, ultotal > 0 ? (uint64_t)ultotal : 0);
    if (!x->watch_stall || (ultotal > 0 && ulnow >= ultotal)) return 0;
    double now = cli_upload_clock_s();
    if (ulnow < x->mark_bytes || ulnow - x->mark_bytes >= STALL_BYTES) { /* progress, or a rewind */
        x->mark_t = now;
        x->mark_bytes = ulnow;
    } else if (now - x->mark_t >= STALL_S) {
        x->stalled = true;
        return 1; /* CURLE_ABORTED_BY_CALLBACK */
    }
    return 0;
}

static bool retryable_curl(CURLcode c) {
    return c == CURLE_COULDNT_RESOLVE_HOST || c == CURLE_COULDNT_CONNECT || c == CURLE_OPERATION_TIMEDOUT ||
           c == CURLE_SEND_ERROR || c == CURLE_RECV_ERROR || c == CURLE_GOT_NOTHING || c == CURLE_PARTIAL_FILE ||
           c == CURLE_HTTP2_STREAM || c == CURLE_HTTP2;
}

int cli_upload_send(cli_upload *u, const char *server, const char *token, const cli_upload_opts *opts,
                    cli_upload_result *out, cg_error *err) {
    memset(out, 0, sizeof *out);
    out->retry_after_s = -1;
    int rc = -1;
    struct curl_slist *hdrs = NULL;
    CURL *c = NULL;
    char *url = cli_upload_url(server);
    size_t tl = strlen(token);
    char *auth = cg_xalloc(tl + 32, 1);
    snprintf(auth, tl + 32, "Authorization: Bearer %s", token);
    hdrs = curl_slist_append(hdrs, auth);
    hdrs = curl_slist_append(hdrs, "Content-Type: application/zstd");
    if (u->sig_header) hdrs = curl_slist_append(hdrs, u->sig_header);
    if (!opts->expect_continue) hdrs = curl_slist_append(hdrs, "Expect:");
    c = curl_easy_init();
    if (!c) {
        cg_err_set(err, CG_EIO, "curl_easy_init failed");
        goto out;
    }
    rewind(u->archive);
    sink s = {out, 0, opts->body_max ? opts->body_max : BODY_MAX_DEFAULT};
    xfer x = {opts->progress, opts->progress_ud, opts->abort_stalled, false, cli_upload_clock_s(), 0};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_READDATA, u->archive);
    curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, on_seek);
    curl_easy_setopt(c, CURLOPT_SEEKDATA, u->archive);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)u->size);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    if (opts->timeout_s > 0) curl_easy_setopt(c, CURLOPT_TIMEOUT, opts->timeout_s);
    if (opts->progress || opts->abort_stalled) {
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_xfer);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, &x);
    }
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, out->curl_error);
    CURLcode cr = curl_easy_perform(c);
    if (cr == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->http_status);
        curl_off_t ra = 0;
        if (curl_easy_getinfo(c, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0) out->retry_after_s = (long)ra;
    } else if (x.stalled) {
        out->http_status = 0;
        out->transport_retryable = true;
        snprintf(out->curl_error, sizeof out->curl_error,
                 "upload stalled: less than %lld KiB of the bundle sent in the last %.0f seconds",
                 (long long)(STALL_BYTES >> 10), STALL_S);
    } else {
        out->http_status = 0;
        out->transport_retryable = retryable_curl(cr);
        if (!out->curl_error[0]) snprintf(out->curl_error, sizeof out->curl_error, "%s", curl_easy_strerror(cr));
    }
    rc = 0;
out:
    if (c) curl_easy_cleanup(c);
    curl_slist_free_all(hdrs);
    cg_free(auth);
    cg_free(url);
    return rc;
}

#else /* no libcurl */

struct cli_upload {
    char unused;
};

#define NO_CURL "this candle-graph was built without libcurl: no uploads"

int cli_upload_global_init(cg_error *err) { return cg_err_set(err, CG_EINVAL, NO_CURL); }

void cli_upload_global_cleanup(void) {}

int cli_upload_prepare(const char *bundle_dir, const char *sidecar, size_t sidecar_len, cli_upload **out,
                       cg_error *err) {
    (void)bundle_dir, (void)sidecar, (void)sidecar_len;
    *out = NULL;
    return cg_err_set(err, CG_EINVAL, NO_CURL);
}

uint64_t cli_upload_size(const cli_upload *u) {
    (void)u;
    return 0;
}

int cli_upload_send(cli_upload *u, const char *server, const char *token, const cli_upload_opts *opts,
                    cli_upload_result *out, cg_error *err) {
    (void)u, (void)server, (void)token, (void)opts;
    memset(out, 0, sizeof *out);
    return cg_err_set(err, CG_EINVAL, NO_CURL);
}

void cli_upload_free(cli_upload *u) { (void)u; }

#endif

int cli_upload_bundle(const char *server, const char *token, const char *bundle_dir,
                      const char *sidecar_path, long timeout_s, cli_upload_result *out, cg_error *err) {
    memset(out, 0, sizeof *out);
    out->retry_after_s = -1;
    char *sidecar = NULL;
    size_t sidecar_len = 0;
    if (sidecar_path && !(sidecar = cg_read_file(sidecar_path, SIDECAR_MAX, &sidecar_len, err))) return -1;
    cli_upload *u = NULL;
    int rc = cli_upload_prepare(bundle_dir, sidecar, sidecar_len, &u, err);
    cg_free(sidecar);
    if (rc != 0) return cg_err_context(err, "pack %s", bundle_dir);
    cli_upload_opts opts = {.timeout_s = timeout_s > 0 ? timeout_s : 600L};
    rc = cli_upload_send(u, server, token, &opts, out, err);
    cli_upload_free(u);
    return rc;
}
