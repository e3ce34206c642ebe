/* routes_static.c — serves the web app (web/index.html, web/app, web/viewer,
 * web/vendor) from the copies embedded into the binary. See srv_web.h for the
 * contract. No token is needed (API.md: the web app's static files). */
#include <pthread.h>
#include <string.h>

#include "srv_web.h"

/* Content types by extension; anything else is not served. */
static const char *content_type(const char *path) {
    const char *dot = strrchr(path, '.');
    if (!dot) return NULL;
    if (!strcmp(dot, ".html")) return "text/html; charset=utf-8";
    if (!strcmp(dot, ".js") || !strcmp(dot, ".mjs")) return "text/javascript; charset=utf-8";
    if (!strcmp(dot, ".css")) return "text/css; charset=utf-8";
    if (!strcmp(dot, ".json")) return "application/json; charset=utf-8";
    if (!strcmp(dot, ".svg")) return "image/svg+xml";
    if (!strcmp(dot, ".png")) return "image/png";
    if (!strcmp(dot, ".txt") || !strcmp(dot, ".LICENSE")) return "text/plain; charset=utf-8";
    return NULL;
}

/* true when every segment of rel is a plain name (no "", ".", ".." or backslash). */
static bool safe_relative(const char *rel) {
    if (!*rel) return false;
    const char *p = rel;
    for (;;) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 0) return false;
        if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) return false;
        for (size_t i = 0; i < n; i++)
            if (p[i] == '\\' || (unsigned char)p[i] < 0x20) return false;
        if (!e) return true;
        p = e + 1;
    }
}

/* Maps a URL path to an embedded file path ("web/..."); false when not ours. */
static bool web_path(const char *url, char *out, size_t outsz) {
    if (!strcmp(url, "/") || !strcmp(url, "/index.html")) {
        snprintf(out, outsz, "web/index.html");
        return true;
    }
    static const char *const dirs[] = {"/app/", "/viewer/", "/vendor/"};
    for (size_t k = 0; k < sizeof dirs / sizeof dirs[0]; k++) {
        size_t n = strlen(dirs[k]);
        if (strncmp(url, dirs[k], n) != 0) continue;
        if (!safe_relative(url + n)) return false;
        int w = snprintf(out, outsz, "web%s", url);
        return w > 0 && (size_t)w < outsz;
    }
    return false;
}

/* ETags of the embedded files, computed on first use (they never change). */
#define ETAG_SLOTS 256
static pthread_mutex_t etag_mu = PTHREAD_MUTEX_INITIALIZER;
static const char *etag_data[ETAG_SLOTS];
static char etag_hex[ETAG_SLOTS][65];
static size_t etag_n;

static void etag_of(const char *data, size_t len, char out[67]) {
    pthread_mutex_lock(&etag_mu);
    size_t k = 0;
    while (k < etag_n && etag_data[k] != data) k++;
    char hex[65];
    if (k < etag_n) {
        memcpy(hex, etag_hex[k], sizeof hex);
    } else {
        cg_sha256_hex(data, len, hex);
        if (etag_n < ETAG_SLOTS) {
            etag_data[etag_n] = data;
            memcpy(etag_hex[etag_n], hex, sizeof hex);
            etag_n++;
        }
    }
    pthread_mutex_unlock(&etag_mu);
    snprintf(out, 67, "\"%s\"", hex);
}

/* The app's own pages load scripts and styles from this origin only and talk
 * to this origin only; nothing else is reachable. */
#define WEB_APP_CSP                                                                                     \
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " \
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

bool srv_static_try(srv_req *r, const char *method, const char *path, enum MHD_Result *res) {
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) return false;
    char rel[512];
    if (!web_path(path, rel, sizeof rel)) return false;
    const char *ctype = content_type(rel);
    if (!ctype) return false;
    size_t len = 0;
    const char *data = srv_embedded_file(rel, &len);
    if (!data) return false;
    char etag[67];
    etag_of(data, len, etag);
    const char *inm = srv_header(r, MHD_HTTP_HEADER_IF_NONE_MATCH);
    bool html = strncmp(ctype, "text/html", 9) == 0;
    /* The app's files change with the binary: revalidate every time (cheap 304s). */
    const char *headers[] = {MHD_HTTP_HEADER_ETAG,
                             etag,
                             MHD_HTTP_HEADER_CACHE_CONTROL,
                             "no-cache",
                             "X-Content-Type-Options",
                             "nosniff",
                             html ? "Content-Security-Policy" : NULL,
                             WEB_APP_CSP,
                             NULL};
    if (inm && (strstr(inm, etag) || !strcmp(inm, "*"))) {
        *res = srv_reply_bytes(r, 304, NULL, "", 0, headers);
        return true;
    }
    *res = srv_reply_bytes(r, 200, ctype, data, len, headers);
    return true;
}
