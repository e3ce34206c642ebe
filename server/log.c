/* log.c — structured one-line JSON logs on stderr (request IDs, no secrets).
 * Every value is JSON-escaped, so CR/LF or control bytes from clients cannot
 * forge log lines, and invalid UTF-8 is replaced by U+FFFD, so every line is
 * valid UTF-8 JSON. One fputs per line under a lock keeps lines whole. */
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "srv.h"

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

static void put_ts(cg_buf *b) {
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    cg_buf_printf(b, "{\"ts\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\"", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
}

/* Appends s[0..n) to b with every invalid UTF-8 sequence replaced by U+FFFD. */
static void put_clean(cg_buf *b, const char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        size_t ok = cg_utf8_valid_prefix(s + i, n - i);
        cg_buf_append(b, s + i, ok);
        i += ok;
        if (i < n) {
            cg_buf_append(b, "\xEF\xBF\xBD", 3);
            i++;
        }
    }
}

const char *srv_utf8_clean(cg_arena *a, const char *s, size_t n, size_t *out_len) {
    size_t ok = cg_utf8_valid_prefix(s, n);
    if (ok == n) {
        if (out_len) *out_len = n;
        return s;
    }
    cg_buf b = CG_BUF_INIT;
    put_clean(&b, s, n);
    char *out = cg_arena_strndup(a, b.data, b.len);
    if (out_len) *out_len = b.len;
    cg_buf_free(&b);
    return out;
}

static void put_kv(cg_buf *b, const char *k, const char *v) {
    cg_buf_putc(b, ',');
    cg_json_write_str(b, k, strlen(k));
    cg_buf_putc(b, ':');
    if (v) {
        size_t n = strlen(v);
        if (n > 2048) n = 2048; /* bounded lines (a cut sequence becomes U+FFFD) */
        if (cg_utf8_valid_prefix(v, n) == n) {
            cg_json_write_str(b, v, n);
        } else {
            cg_buf c = CG_BUF_INIT;
            put_clean(&c, v, n);
            cg_json_write_str(b, c.data, c.len);
            cg_buf_free(&c);
        }
    } else {
        cg_buf_puts(b, "null");
    }
}

static void emit(cg_buf *b) {
    cg_buf_puts(b, "}\n");
    pthread_mutex_lock(&log_mu);
    fputs(b->data, stderr);
    fflush(stderr);
    pthread_mutex_unlock(&log_mu);
    cg_buf_free(b);
}

void srv_log(const char *level, const char *msg, ...) {
    cg_buf b = CG_BUF_INIT;
    put_ts(&b);
    put_kv(&b, "level", level);
    put_kv(&b, "msg", msg);
    va_list ap;
    va_start(ap, msg);
    for (;;) {
        const char *k = va_arg(ap, const char *);
        if (!k) break;
        const char *v = va_arg(ap, const char *);
        put_kv(&b, k, v);
    }
    va_end(ap);
    emit(&b);
}

void srv_log_request(const char *req_id, const char *method, const char *path, int status,
                     const char *code, double ms, uint64_t bytes_in, const char *extra) {
    cg_buf b = CG_BUF_INIT;
    char num[64];
    put_ts(&b);
    put_kv(&b, "level", status >= 500 ? "error" : "info");
    put_kv(&b, "msg", "request");
    put_kv(&b, "request_id", req_id);
    put_kv(&b, "method", method);
    put_kv(&b, "path", path);
    cg_buf_printf(&b, ",\"status\":%d", status);
    if (code) put_kv(&b, "code", code);
    snprintf(num, sizeof num, "%.3f", ms);
    cg_buf_printf(&b, ",\"ms\":%s,\"bytes_in\":%llu", num, (unsigned long long)bytes_in);
    if (extra) put_kv(&b, "detail", extra);
    emit(&b);
}

/* ,"key":{"unpack":v,…}: each stage's value to one decimal. */
static void put_stage_obj(cg_buf *b, const char *key, const double v[SRV_STAGE_COUNT]) {
    cg_buf_printf(b, ",\"%s\":{", key);
    for (int i = 0; i < SRV_STAGE_COUNT; i++)
        cg_buf_printf(b, "%s\"%s\":%.1f", i ? "," : "", srv_ingest_stage_names[i], v[i]);
    cg_buf_putc(b, '}');
}

void srv_log_ingest_stages(const char *req_id, const char *id, const srv_ingest_stages *st, double total_s) {
    double ms[SRV_STAGE_COUNT], rss[SRV_STAGE_COUNT], peak[SRV_STAGE_COUNT];
    for (int i = 0; i < SRV_STAGE_COUNT; i++) {
        ms[i] = st->seconds[i] * 1e3;
        rss[i] = (double)st->rss_bytes[i] / (1024.0 * 1024.0);
        peak[i] = (double)st->peak_bytes[i] / (1024.0 * 1024.0);
    }
    cg_buf b = CG_BUF_INIT;
    put_ts(&b);
    put_kv(&b, "level", "info");
    put_kv(&b, "msg", "ingest stages");
    put_kv(&b, "request_id", req_id);
    put_kv(&b, "id", id);
    put_stage_obj(&b, "stages_ms", ms);
    put_stage_obj(&b, "rss_mib", rss);
    put_stage_obj(&b, "peak_mib", peak);
    cg_buf_printf(&b, ",\"total_ms\":%.1f", total_s * 1e3);
    emit(&b);
}
