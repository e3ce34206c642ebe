/* cli_upload.c — one HTTP upload of a bundle (see cli_upload.h). */
#include "cli_upload.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/fs.h"
#include "bundle/archive.h"

#ifdef CG_HAVE_CURL
#include <curl/curl.h>
#include <sodium.h>

#define BODY_MAX ((size_t)1 << 20)

int cli_upload_global_init(cg_error *err) {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return cg_err_set(err, CG_EIO, "curl_global_init failed");
    if (sodium_init() < 0) return cg_err_set(err, CG_EIO, "sodium_init failed");
    return 0;
}

typedef struct {
    cli_upload_result *r;
    size_t cap;
} sink;

static size_t on_body(char *p, size_t size, size_t n, void *ud) {
    sink *s = ud;
    size_t len = size * n, room = BODY_MAX - s->r->body_len;
    size_t take = len < room ? len : room; /* keep the head of a huge body */
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

static size_t on_header(char *p, size_t size, size_t n, void *ud) {
    cli_upload_result *r = ud;
    size_t len = size * n;
    static const char key[] = "retry-after:";
    if (len > sizeof key - 1 && strncasecmp(p, key, sizeof key - 1) == 0) {
        char v[32];
        size_t vl = len - (sizeof key - 1);
        if (vl >= sizeof v) vl = sizeof v - 1;
        memcpy(v, p + sizeof key - 1, vl);
        v[vl] = '\0';
        char *end = NULL;
        errno = 0;
        long s = strtol(v, &end, 10);
        if (!errno && end != v && s >= 0) r->retry_after_s = s;
    }
    return len;
}

int cli_upload_bundle(const char *server, const char *token, const char *bundle_dir,
                      const char *sidecar, long timeout_s, cli_upload_result *out, cg_error *err) {
    memset(out, 0, sizeof *out);
    out->retry_after_s = -1;
    const char *tmpdir = getenv("TMPDIR");
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/cg-upload-%ld-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp",
             (long)getpid());
    int fd = mkstemp(tmp);
    if (fd < 0) return cg_err_set(err, CG_EIO, "temporary archive: %s", strerror(errno));
    close(fd);
    unlink(tmp); /* cg_archive_pack creates out_path itself */
    if (cg_archive_pack(bundle_dir, tmp, true, err) != 0) {
        unlink(tmp);
        return cg_err_context(err, "pack %s", bundle_dir);
    }
    int rc = -1;
    FILE *f = fopen(tmp, "rb");
    unlink(tmp); /* the open stream keeps the bytes */
    char *sig_header = NULL, *url = NULL;
    struct curl_slist *hdrs = NULL;
    CURL *c = NULL;
    if (!f) {
        cg_err_set(err, CG_EIO, "open archive: %s", strerror(errno));
        goto out;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (sidecar) {
        size_t sl = 0;
        char *st = cg_read_file(sidecar, 64 << 10, &sl, err);
        if (!st) goto out;
        size_t b64 = sodium_base64_ENCODED_LEN(sl, sodium_base64_VARIANT_ORIGINAL);
        sig_header = malloc(b64 + 32);
        if (!sig_header) abort();
        memcpy(sig_header, "Candle-Graph-Signature: ", 24);
        sodium_bin2base64(sig_header + 24, b64, (const unsigned char *)st, sl,
                          sodium_base64_VARIANT_ORIGINAL);
        free(st);
        hdrs = curl_slist_append(hdrs, sig_header);
    }
    size_t ul = strlen(server) + 16;
    url = malloc(ul);
    if (!url) abort();
    snprintf(url, ul, "%s%s", server, server[0] && server[strlen(server) - 1] == '/' ? "bundles" : "/bundles");
    char auth[1024];
    if (snprintf(auth, sizeof auth, "Authorization: Bearer %s", token) >= (int)sizeof auth) {
        cg_err_set(err, CG_EINVAL, "token too long");
        goto out;
    }
    hdrs = curl_slist_append(hdrs, auth);
    hdrs = curl_slist_append(hdrs, "Content-Type: application/zstd");
    hdrs = curl_slist_append(hdrs, "Expect:");
    c = curl_easy_init();
    if (!c) {
        cg_err_set(err, CG_EIO, "curl_easy_init failed");
        goto out;
    }
    sink s = {out, 0};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_READDATA, f);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)size);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, out);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s > 0 ? timeout_s : 600L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, out->curl_error);
    CURLcode cr = curl_easy_perform(c);
    if (cr == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->http_status);
    } else {
        out->http_status = 0;
        if (!out->curl_error[0]) snprintf(out->curl_error, sizeof out->curl_error, "%s", curl_easy_strerror(cr));
    }
    rc = 0;
out:
    if (c) curl_easy_cleanup(c);
    curl_slist_free_all(hdrs);
    free(sig_header);
    free(url);
    if (f) fclose(f);
    return rc;
}

#else /* no libcurl */

int cli_upload_global_init(cg_error *err) {
    return cg_err_set(err, CG_EINVAL, "this candle-graph was built without libcurl: no uploads");
}

int cli_upload_bundle(const char *server, const char *token, const char *bundle_dir,
                      const char *sidecar, long timeout_s, cli_upload_result *out, cg_error *err) {
    (void)server, (void)token, (void)bundle_dir, (void)sidecar, (void)timeout_s;
    memset(out, 0, sizeof *out);
    return cg_err_set(err, CG_EINVAL, "this candle-graph was built without libcurl: no uploads");
}

#endif

void cli_upload_result_free(cli_upload_result *r) {
    free(r->body);
    r->body = NULL;
    r->body_len = 0;
}
