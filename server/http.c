/* http.c — libmicrohttpd glue: bounded thread-per-connection daemon, the
 * per-request lifecycle (route, authenticate, stream the body under limits,
 * dispatch, one response), the error envelope, and file responses with ETag and
 * Range. Per-request state is freed in the completion callback, which also
 * removes a streamed upload's temp file on every path (client abort included). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "srv.h"
#include "srv_web.h"

#define JSON_CT "application/json; charset=utf-8"

static double elapsed_ms(const struct timespec *t0) {
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

const char *srv_query(srv_req *r, const char *name) {
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *srv_header(srv_req *r, const char *name) {
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

/* ---------------------------------------------------------------- responses */

static enum MHD_Result queue(srv_req *r, unsigned status, struct MHD_Response *resp) {
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, "X-Request-Id", r->id);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    if (status == 401) MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (status == 405 && r->allow[0]) MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow);
    if (status == 429 || status == 503) MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (atomic_load(&r->s->stopping)) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result res = MHD_queue_response(r->conn, status, resp);
    MHD_destroy_response(resp);
    if (res == MHD_YES) {
        r->queued = true;
        r->status = (int)status;
    } else {
        srv_log("error", "MHD_queue_response failed", "request_id", r->id, NULL);
    }
    return res;
}

enum MHD_Result srv_reply_bytes(srv_req *r, unsigned status, const char *ctype, const void *data, size_t len,
                                const char *const *headers) {
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);
    if (!resp) return MHD_NO;
    if (ctype) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    for (size_t i = 0; headers && headers[i]; i += 2) MHD_add_response_header(resp, headers[i], headers[i + 1]);
    return queue(r, status, resp);
}

enum MHD_Result srv_reply_json(srv_req *r, unsigned status, const cg_jv *v) {
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, v, true);
    cg_buf_putc(&b, '\n');
    size_t len;
    char *data = cg_buf_take(&b, &len);
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(data);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, JSON_CT);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    return queue(r, status, resp);
}

enum MHD_Result srv_fail(srv_req *r, const char *code, cg_jv *detail, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cg_arena *a = &r->arena;
    cg_jv *e = cg_jv_obj(a);
    cg_jv_obj_put(a, e, "code", cg_jv_str(a, code));
    cg_jv_obj_put(a, e, "message", cg_jv_str(a, msg));
    if (detail) cg_jv_obj_put(a, e, "detail", detail);
    cg_jv *root = cg_jv_obj(a);
    cg_jv_obj_put(a, root, "error", e);
    r->err_code = code;
    return srv_reply_json(r, srv_error_status(code), root);
}

enum MHD_Result srv_fail_unavailable(srv_req *r, const cg_error *err) {
    srv_log("error", "dependency unavailable", "request_id", r->id, "error", err ? err->msg : "", NULL);
    return srv_fail(r, "unavailable", NULL, "the database or blob store is not reachable; retry later");
}

/* Parses a single "bytes=a-b" range; false when absent/unsupported/unsatisfiable
 * (RFC 9110 lets a server ignore Range, so those get the full 200). */
bool srv_parse_range(const char *h, uint64_t size, uint64_t *off, uint64_t *len) {
    if (!h || strncmp(h, "bytes=", 6) != 0 || size == 0) return false;
    const char *p = h + 6;
    if (strchr(p, ',')) return false;
    char *end;
    if (*p == '-') {
        errno = 0;
        unsigned long long n = strtoull(p + 1, &end, 10);
        if (errno || end == p + 1 || *end || n == 0) return false;
        if (n > size) n = size;
        *off = size - n;
        *len = n;
        return true;
    }
    if (*p < '0' || *p > '9') return false;
    errno = 0;
    unsigned long long a = strtoull(p, &end, 10);
    if (errno || *end != '-') return false;
    p = end + 1;
    unsigned long long b = size - 1;
    if (*p) {
        if (*p < '0' || *p > '9') return false;
        errno = 0;
        b = strtoull(p, &end, 10);
        if (errno || *end) return false;
        if (b >= size) b = size - 1;
    }
    if (a >= size || b < a) return false;
    *off = a;
    *len = b - a + 1;
    return true;
}

enum MHD_Result srv_reply_fd(srv_req *r, int fd, uint64_t size, const char *ctype, const char *etag_hex,
                             bool immutable) {
    char etag[80] = "";
    if (etag_hex) snprintf(etag, sizeof etag, "\"%s\"", etag_hex);
    const char *inm = srv_header(r, MHD_HTTP_HEADER_IF_NONE_MATCH);
    if (etag[0] && inm && (strstr(inm, etag) || strcmp(inm, "*") == 0)) {
        close(fd);
        struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        if (!resp) return MHD_NO;
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, etag);
        if (immutable)
            MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "public, max-age=31536000, immutable");
        return queue(r, 304, resp);
    }
    uint64_t off = 0, len = size;
    unsigned status = 200;
    if (srv_parse_range(srv_header(r, MHD_HTTP_HEADER_RANGE), size, &off, &len)) status = 206;
    struct MHD_Response *resp = MHD_create_response_from_fd_at_offset64(len, fd, (int64_t)off);
    if (!resp) {
        close(fd);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
    if (strncmp(ctype, "text/html", 9) == 0) MHD_add_response_header(resp, "Content-Security-Policy", SRV_HTML_CSP);
    if (etag[0]) MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, etag);
    if (immutable)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "public, max-age=31536000, immutable");
    if (status == 206) {
        char cr[128];
        snprintf(cr, sizeof cr, "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, off, off + len - 1, size);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
    }
    return queue(r, status, resp);
}

/* ---------------------------------------------------------------- lifecycle */

static void release_slot(srv_req *r) {
    if (!r->has_slot) return;
    srv_server *s = r->s;
    pthread_mutex_lock(&s->upload_mu);
    s->upload_slots++;
    pthread_cond_signal(&s->upload_cv);
    pthread_mutex_unlock(&s->upload_mu);
    atomic_fetch_sub(&s->uploads_active, 1);
    r->has_slot = false;
}

/* Waits up to wait_ms for an ingest slot. */
static bool take_slot(srv_req *r) {
    srv_server *s = r->s;
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += s->cfg.upload_wait_ms / 1000;
    dl.tv_nsec += (long)(s->cfg.upload_wait_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&s->upload_mu);
    while (s->upload_slots == 0 && !atomic_load(&s->stopping)) {
        if (pthread_cond_timedwait(&s->upload_cv, &s->upload_mu, &dl) == ETIMEDOUT) break;
    }
    bool ok = s->upload_slots > 0 && !atomic_load(&s->stopping);
    if (ok) s->upload_slots--;
    pthread_mutex_unlock(&s->upload_mu);
    if (ok) {
        r->has_slot = true;
        atomic_fetch_add(&s->uploads_active, 1);
    }
    return ok;
}

static void req_free(srv_req *r) {
    if (r->body_fd >= 0) close(r->body_fd);
    if (r->body_path[0]) unlink(r->body_path);
    release_slot(r);
    cg_buf_free(&r->body);
    cg_arena_free(&r->arena);
    free(r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)cls;
    (void)c;
    srv_req *r = *con_cls;
    if (!r) return;
    const char *extra = NULL;
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) {
        extra = toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ? "terminated: timeout"
                : toe == MHD_REQUEST_TERMINATED_CLIENT_ABORT  ? "terminated: client abort"
                : toe == MHD_REQUEST_TERMINATED_READ_ERROR    ? "terminated: read error"
                : toe == MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN ? "terminated: shutdown"
                                                                : "terminated: error";
        if (r->body_timed_out) extra = "terminated: request deadline exceeded";
    }
    srv_log_request(r->id, r->method, r->path, r->queued ? r->status : 0, r->err_code, elapsed_ms(&r->t0),
                    r->body_len, extra);
    srv_metrics_request(r->route, r->queued ? r->status : 0);
    *con_cls = NULL;
    req_free(r);
}

static bool has_scope(srv_req *r, unsigned need) {
    if (need == SRV_SCOPE_NONE) return true;
    if (need == SRV_SCOPE_READ && r->s->cfg.public_read) return true;
    return (r->scopes & need) != 0;
}

/* Call 1: route, authenticate, check the body's declared size and type.
 * Returns true when a response was queued (the request is answered). */
static bool precheck(srv_req *r, enum MHD_Result *res) {
    const srv_route *rt = &srv_routes[r->route];
    if (rt->scope != SRV_SCOPE_NONE && !(rt->scope == SRV_SCOPE_READ && r->s->cfg.public_read)) {
        const char *auth = srv_header(r, MHD_HTTP_HEADER_AUTHORIZATION);
        if (!auth || strncmp(auth, "Bearer ", 7) != 0 || auth[7] == 0) {
            *res = srv_fail(r, "unauthorized", NULL, "missing bearer token");
            return true;
        }
        cg_error err = {0};
        PGconn *c = srv_pool_get(r->s->pool, &err);
        if (!c) {
            *res = srv_fail_unavailable(r, &err);
            return true;
        }
        int ok = srv_token_check(c, auth + 7, &r->arena, &r->token_id, &r->scopes, &err);
        srv_pool_put(r->s->pool, c);
        if (ok < 0) {
            *res = srv_fail_unavailable(r, &err);
            return true;
        }
        if (ok == 0) {
            *res = srv_fail(r, "unauthorized", NULL, "unknown, expired or revoked token");
            return true;
        }
        if (!has_scope(r, rt->scope)) {
            *res = srv_fail(r, "forbidden", NULL, "the token lacks the %s scope",
                            rt->scope == SRV_SCOPE_ADMIN ? "admin" : rt->scope == SRV_SCOPE_UPLOAD ? "upload" : "read");
            return true;
        }
    }
    r->body_kind = rt->body;
    const char *cl = srv_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
    uint64_t declared = 0;
    if (cl) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(cl, &end, 10);
        if (errno || end == cl || *end) {
            *res = srv_fail(r, "bad_request", NULL, "invalid Content-Length");
            return true;
        }
        declared = v;
    }
    if (rt->body == SRV_BODY_NONE) return false;
    uint64_t cap = rt->body == SRV_BODY_JSON ? r->s->cfg.max_json_body : r->s->cfg.max_body_bytes;
    if (declared > cap) {
        cg_arena *a = &r->arena;
        cg_jv *d = cg_jv_obj(a);
        cg_jv_obj_put(a, d, "limit", cg_jv_str(a, "body_bytes"));
        cg_jv_obj_put(a, d, "expected", cg_jv_u64(a, cap));
        cg_jv_obj_put(a, d, "observed", cg_jv_u64(a, declared));
        *res = srv_fail(r, "payload_too_large", d, "request body of %llu bytes exceeds the limit of %llu bytes",
                        (unsigned long long)declared, (unsigned long long)cap);
        return true;
    }
    if (rt->body == SRV_BODY_JSON) {
        const char *ct = srv_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (ct && strncmp(ct, "application/json", 16) != 0) {
            *res = srv_fail(r, "unsupported_media_type", NULL, "expected application/json, got %s", ct);
            return true;
        }
        return false;
    }
    /* streamed upload (POST /bundles) */
    const char *ct = srv_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
    const char *ce = srv_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING);
    bool ct_ok = !ct || strncmp(ct, "application/x-tar", 17) == 0 || strncmp(ct, "application/zstd", 16) == 0 ||
                 strncmp(ct, "application/octet-stream", 24) == 0;
    bool ce_ok = !ce || strcmp(ce, "zstd") == 0 || strcmp(ce, "identity") == 0;
    if (!ct_ok || !ce_ok) {
        *res = srv_fail(r, "unsupported_media_type", NULL,
                        "upload a tar (application/x-tar) or a zstd-compressed tar (application/zstd or "
                        "Content-Encoding: zstd)");
        return true;
    }
    if (r->s->cfg.min_free_bytes) {
        uint64_t fb = srv_free_bytes(r->s->cfg.data_dir);
        if (fb < r->s->cfg.min_free_bytes) {
            cg_arena *a = &r->arena;
            cg_jv *d = cg_jv_obj(a);
            cg_jv_obj_put(a, d, "limit", cg_jv_str(a, "min_free_bytes"));
            cg_jv_obj_put(a, d, "expected", cg_jv_u64(a, r->s->cfg.min_free_bytes));
            cg_jv_obj_put(a, d, "observed", cg_jv_u64(a, fb));
            *res = srv_fail(r, "insufficient_storage", d, "the data directory is below its free-space watermark");
            return true;
        }
    }
    if (!take_slot(r)) {
        *res = srv_fail(r, "too_many_requests", NULL, "too many uploads in progress; retry later");
        return true;
    }
    if (snprintf(r->body_path, sizeof r->body_path, "%s/tmp/upload-XXXXXX", r->s->cfg.data_dir) >= (int)sizeof r->body_path)
        r->body_fd = -1;
    else
        r->body_fd = mkstemp(r->body_path);
    if (r->body_fd < 0) {
        r->body_path[0] = 0;
        bool full = errno == ENOSPC || errno == EDQUOT;
        *res = full ? srv_fail(r, "insufficient_storage", NULL, "no space left for the upload")
                    : srv_fail(r, "unavailable", NULL, "cannot create the upload file: %s", strerror(errno));
        return true;
    }
    return false;
}

static int absorb(srv_req *r, const char *data, size_t n) {
    srv_config *cfg = &r->s->cfg;
    if (elapsed_ms(&r->t0) > (double)cfg->request_timeout_s * 1e3) {
        r->body_timed_out = true;
        return -1;
    }
    r->body_len += n;
    if (r->body_too_large) return 0;
    uint64_t cap = r->body_kind == SRV_BODY_JSON ? cfg->max_json_body : cfg->max_body_bytes;
    if (r->body_len > cap) {
        r->body_too_large = true;
        if (r->body_fd >= 0) {
            if (ftruncate(r->body_fd, 0) != 0) { /* space is reclaimed on unlink anyway */ }
        }
        cg_buf_free(&r->body);
        return 0;
    }
    if (r->body_kind == SRV_BODY_JSON) {
        cg_buf_append(&r->body, data, n);
        return 0;
    }
    if (r->body_kind == SRV_BODY_STREAM && r->body_fd >= 0) {
        while (n > 0) {
            ssize_t w = cg_fault_write(r->body_fd, data, n);
            if (w < 0) {
                if (errno == EINTR) continue;
                return errno == ENOSPC || errno == EDQUOT ? -2 : -3;
            }
            data += w;
            n -= (size_t)w;
        }
    }
    return 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *data, size_t *data_size, void **con_cls) {
    (void)version;
    srv_server *s = cls;
    srv_req *r = *con_cls;
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r) return MHD_NO;
        r->s = s;
        r->conn = conn;
        r->body_fd = -1;
        r->route = -1;
        cg_arena_init(&r->arena, 8192);
        clock_gettime(CLOCK_MONOTONIC, &r->t0);
        unsigned char rnd[8];
        randombytes_buf(rnd, sizeof rnd);
        cg_hex(rnd, sizeof rnd, r->id);
        r->method = cg_arena_strdup(&r->arena, method);
        r->path = cg_arena_strdup(&r->arena, url);
        *con_cls = r;
        const char *m = strcmp(method, "HEAD") == 0 ? "GET" : method;
        int idx = srv_route_match(&r->arena, m, url, r->params, r->allow, sizeof r->allow);
        enum MHD_Result sres;
        if (idx == -1 && srv_static_try(r, method, url, &sres)) return sres; /* the web app (web/) */
        if (idx == -1) return srv_fail(r, "not_found", NULL, "no route for %s", url);
        if (idx == -2) return srv_fail(r, "method_not_allowed", NULL, "%s is not allowed here", method);
        r->route = idx;
        enum MHD_Result res;
        if (precheck(r, &res)) return res;
        return MHD_YES;
    }
    if (*data_size != 0) {
        size_t n = *data_size;
        *data_size = 0;
        if (r->queued) return MHD_YES; /* answered in call 1; MHD discards the rest */
        int rc = absorb(r, data, n);
        if (rc == -1) return MHD_NO; /* over the request deadline: drop the connection */
        if (rc == -2) r->err_code = "insufficient_storage";
        if (rc == -3) r->err_code = "unavailable";
        return MHD_YES;
    }
    if (r->queued) return MHD_YES;
    if (r->err_code && strcmp(r->err_code, "insufficient_storage") == 0)
        return srv_fail(r, "insufficient_storage", NULL, "no space left for the upload");
    if (r->err_code && strcmp(r->err_code, "unavailable") == 0)
        return srv_fail(r, "unavailable", NULL, "cannot write the upload file");
    if (r->body_too_large) {
        cg_arena *a = &r->arena;
        uint64_t cap = r->body_kind == SRV_BODY_JSON ? s->cfg.max_json_body : s->cfg.max_body_bytes;
        cg_jv *d = cg_jv_obj(a);
        cg_jv_obj_put(a, d, "limit", cg_jv_str(a, "body_bytes"));
        cg_jv_obj_put(a, d, "expected", cg_jv_u64(a, cap));
        return srv_fail(r, "payload_too_large", d, "request body exceeds the limit of %llu bytes",
                        (unsigned long long)cap);
    }
    enum MHD_Result res = srv_routes[r->route].handler(r);
    if (!r->queued && res == MHD_YES) {
        srv_log("error", "handler queued no response", "request_id", r->id, NULL);
        return MHD_NO;
    }
    return res;
}

static void mhd_logger(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = 0;
    srv_log("warn", "libmicrohttpd", "detail", msg, NULL);
}

int srv_http_start(srv_server *s, cg_error *err) {
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_AUTO |
                     MHD_USE_ERROR_LOG | MHD_USE_ITC;
    struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, s->cfg.listen_host, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)s->cfg.listen_port);
    } else if (inet_pton(AF_INET6, s->cfg.listen_host, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)s->cfg.listen_port);
        flags |= MHD_USE_IPv6;
    } else if (strcmp(s->cfg.listen_host, "localhost") == 0) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)s->cfg.listen_port);
        in4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    } else {
        return cg_err_set(err, CG_EINVAL, "--listen host must be an IP address, got %s", s->cfg.listen_host);
    }
    s->mhd = MHD_start_daemon(
        flags, (uint16_t)s->cfg.listen_port, NULL, NULL, on_request, s,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)s->cfg.conn_limit,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)s->cfg.per_ip_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)s->cfg.idle_timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(128 * 1024),
        MHD_OPTION_THREAD_STACK_SIZE, (size_t)(4 * 1024 * 1024),
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)256,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
        MHD_OPTION_END);
    if (!s->mhd) return cg_err_set(err, CG_EIO, "cannot listen on %s:%u", s->cfg.listen_host, s->cfg.listen_port);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
    if (info) s->cfg.listen_port = info->port;
    return 0;
}

void srv_http_stop(srv_server *s, unsigned grace_s) {
    if (!s->mhd) return;
    MHD_socket fd = MHD_quiesce_daemon(s->mhd);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        if (!info || info->num_connections == 0) break;
        if (elapsed_ms(&t0) > (double)grace_s * 1e3) {
            srv_log("warn", "shutdown grace period over; closing remaining connections", NULL);
            break;
        }
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    MHD_stop_daemon(s->mhd);
    if (fd != MHD_INVALID_SOCKET) close(fd);
    s->mhd = NULL;
}
