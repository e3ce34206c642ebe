/* cli_http.c — bounded GET with a bearer token (cli_http.h). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#ifdef CG_HAVE_CURL
#include <curl/curl.h>
#endif

#include "cli_http.h"

void cli_http_escape(cg_buf *out, const char *s) {
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' ||
            *p == '.' || *p == '_' || *p == '~') {
            cg_buf_putc(out, (char)*p);
        } else {
            cg_buf_putc(out, '%');
            cg_buf_putc(out, hex[*p >> 4]);
            cg_buf_putc(out, hex[*p & 15]);
        }
    }
}

#ifdef CG_HAVE_CURL
typedef struct sink {
    cg_buf b;
    bool over;
} sink;

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
    sink *s = ud;
    if (s->b.len + sz * n > CLI_HTTP_BODY_MAX) {
        s->over = true;
        return 0;
    }
    cg_buf_append(&s->b, p, sz * n);
    return sz * n;
}

int cli_http_get(const char *url, const char *token, long *status, char **body, size_t *len, cg_error *err) {
    *status = 0;
    *body = NULL;
    *len = 0;
    CURL *c = curl_easy_init();
    if (!c) return cg_err_set(err, CG_EIO, "curl initialisation failed");
    cg_buf auth = CG_BUF_INIT;
    cg_buf_printf(&auth, "Authorization: Bearer %s", token ? token : "");
    struct curl_slist *hd = curl_slist_append(NULL, auth.data);
    hd = curl_slist_append(hd, "Accept: application/json");
    sink s = {CG_BUF_INIT, false};
    char ebuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
    CURLcode rc = curl_easy_perform(c);
    int ret = 0;
    if (rc != CURLE_OK) {
        ret = cg_err_set(err, CG_EIO, "GET %s: %s", url,
                         s.over ? "answer larger than 64 MiB" : ebuf[0] ? ebuf : curl_easy_strerror(rc));
        cg_buf_free(&s.b);
    } else {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
        cg_buf_putc(&s.b, 0);
        *len = s.b.len - 1;
        *body = cg_buf_take(&s.b, NULL);
    }
    curl_slist_free_all(hd);
    curl_easy_cleanup(c);
    cg_buf_free(&auth);
    return ret;
}
#else
int cli_http_get(const char *url, const char *token, long *status, char **body, size_t *len, cg_error *err) {
    (void)url, (void)token;
    *status = 0;
    *body = NULL;
    *len = 0;
    return cg_err_set(err, CG_EINVAL, "this candle-graph was built without libcurl");
}
#endif
