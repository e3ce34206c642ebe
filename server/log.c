/* log.c — structured one-line JSON logs on stderr (request IDs, no secrets).
 * Every value is JSON-escaped, so CR/LF or control bytes from clients cannot
 * forge log lines. One fputs per line under a lock keeps lines whole. */
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

static void put_kv(cg_buf *b, const char *k, const char *v) {
    cg_buf_putc(b, ',');
    cg_json_write_str(b, k, strlen(k));
    cg_buf_putc(b, ':');
    if (v) {
        size_t n = strlen(v);
        if (n > 2048) n = 2048; /* bounded lines */
        cg_json_write_str(b, v, n);
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
