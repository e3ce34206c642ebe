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
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "srv_store.h"
#include "base/alloc.h"
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
    srv_pool_note_reply();
    MHD_add_response_header(resp, "X-Request-Id", r->id);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    if (status == 401) MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (status == 405 && r->allow[0]) MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow);
    if (status >= 400 && cg_reason_retryable(r->err_reason))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (atomic_load(&r->s->stopping) || r->close_conn)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
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
    if (cg_utf8_valid_prefix(b.data, b.len) != b.len) { /* every answer is valid UTF-8 */
        size_t n;
        const char *clean = srv_utf8_clean(&r->arena, b.data, b.len, &n);
        cg_buf c = CG_BUF_INIT;
        cg_buf_append(&c, clean, n);
        cg_buf_free(&b);
        b = c;
    }
    size_t len;
    char *data = cg_buf_take(&b, &len);
    struct MHD_Response *resp = MHD_create_response_from_buffer_with_free_callback(len, data, cg_free);
    if (!resp) {
        cg_free(data);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, JSON_CT);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    return queue(r, status, resp);
}

enum MHD_Result srv_fail(srv_req *r, cg_reason reason, cg_jv *detail, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (reason <= CG_R_NONE || reason >= CG_R__COUNT) {
        srv_log("error", "error answered without a reason", "request_id", r->id, "message", msg, NULL);
        reason = CG_R_INTERNAL;
    }
    cg_arena *a = &r->arena;
    cg_jv *e = cg_jv_obj(a);
    cg_jv_obj_put(a, e, "code", cg_jv_str_nocopy(a, cg_reason_code(reason)));
    cg_jv_obj_put(a, e, "message", cg_jv_str(a, srv_utf8_clean(a, msg, strlen(msg), NULL)));
    if (detail) cg_jv_obj_put(a, e, "detail", detail);
    cg_jv *root = cg_jv_obj(a);
    cg_jv_obj_put(a, root, "error", e);
    r->err_reason = reason;
    return srv_reply_json(r, srv_reason_status(reason), root);
}

enum MHD_Result srv_fail_unavailable(srv_req *r, const cg_error *err) {
    srv_log("error", "dependency unavailable", "request_id", r->id, "error", err ? err->msg : "", NULL);
    return srv_fail(r, CG_R_UNAVAILABLE, NULL, "the database or blob store is not reachable; retry later");
}

enum MHD_Result srv_fail_error(srv_req *r, const cg_error *err, cg_jv *detail) {
    cg_reason reason = srv_reason_of(err);
    if (srv_reason_status(reason) < 500) return srv_fail(r, reason, detail, "%s", err->msg);
    if (reason != CG_R_INSUFFICIENT_STORAGE) return srv_fail_unavailable(r, err);
    srv_log("error", "storage full", "request_id", r->id, "error", err ? err->msg : "", NULL);
    return srv_fail(r, reason, NULL, "no space left on the server's storage");
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

const char *srv_json_dup_key(const cg_jv *v) {
    if (!v) return NULL;
    if (v->type == CG_JOBJ) {
        const char *k = cg_jv_obj_dup_key(v);
        if (k) return k;
        for (size_t i = 0; i < v->u.obj.n; i++)
            if ((k = srv_json_dup_key(v->u.obj.m[i].val))) return k;
    } else if (v->type == CG_JARR) {
        for (size_t i = 0; i < v->u.arr.n; i++) {
            const char *k = srv_json_dup_key(v->u.arr.items[i]);
            if (k) return k;
        }
    }
    return NULL;
}

enum MHD_Result srv_fail_dup_key(srv_req *r, const char *key) {
    cg_arena *a = &r->arena;
    cg_jv *d = cg_jv_obj(a);
    cg_jv_obj_put(a, d, "key", cg_jv_str(a, key));
    return srv_fail(r, CG_R_DUPLICATE_KEY, d, "the request body has the key %s more than once in one object", key);
}

cg_jv *srv_detail_param(srv_req *r, const char *name) {
    cg_arena *a = &r->arena;
    cg_jv *d = cg_jv_obj(a);
    cg_jv_obj_put(a, d, "parameter", cg_jv_str(a, name));
    return d;
}

const char *srv_cache_immutable(const srv_req *r) {
    bool pub = r->route < 0 || srv_routes[r->route].scope == SRV_SCOPE_NONE ||
               (srv_routes[r->route].scope == SRV_SCOPE_READ && r->s->cfg.public_read);
    return pub ? "public, max-age=31536000, immutable" : "private, max-age=31536000, immutable";
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
        if (immutable) MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, srv_cache_immutable(r));
        return queue(r, 304, resp);
    }
    uint64_t off = 0, len = size;
    unsigned status = 200;
    if (srv_parse_range(srv_header(r, MHD_HTTP_HEADER_RANGE), size, &off, &len)) status = 206;
    struct MHD_Response *resp = srv_blob_response(fd, off, len);
    if (!resp) {
        close(fd);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
    if (strncmp(ctype, "text/html", 9) == 0)
        MHD_add_response_header(resp, "Content-Security-Policy", SRV_UPLOADED_HTML_CSP);
    if (etag[0]) MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, etag);
    if (immutable) MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, srv_cache_immutable(r));
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

/* Waits up to wait_ms for an ingest slot (none with --max-uploads 0). */
static bool take_slot(srv_req *r) {
    srv_server *s = r->s;
    if (s->cfg.max_uploads == 0) return false;
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += s->cfg.upload_wait_ms / 1000;
    dl.tv_nsec += (long)(s->cfg.upload_wait_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    /* a body that is complete is ingested even while shutting down: its client
     * was admitted before the stop (answers then carry Connection: close) */
    pthread_mutex_lock(&s->upload_mu);
    while (s->upload_slots == 0) {
        if (pthread_cond_timedwait(&s->upload_cv, &s->upload_mu, &dl) == ETIMEDOUT) break;
    }
    bool ok = s->upload_slots > 0;
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
    cg_free(r);
}

static srv_req *req_new(srv_server *s) {
    srv_req *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    cg_fault_thread_enable(); /* CG_FAULT counts request threads only (base/fault.h) */
    r->s = s;
    r->body_fd = -1;
    r->route = -1;
    cg_arena_init(&r->arena, 8192);
    clock_gettime(CLOCK_MONOTONIC, &r->t0);
    unsigned char rnd[8];
    randombytes_buf(rnd, sizeof rnd);
    cg_hex(rnd, sizeof rnd, r->id);
    return r;
}

/* MHD calls this with the request target as soon as the request line is read,
 * before it splits the query into arguments. A query of more parameters than
 * the limit would exhaust the connection's memory pool while MHD stores them,
 * and MHD then drops the connection without an answer; so the parameters are
 * counted here and, when over the limit (or the target is over its length
 * limit), the query is cut at its '?' in MHD's own copy of the line: MHD parses
 * no arguments and the handler answers 431 (or 414) normally. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c) {
    (void)c;
    srv_server *s = cls;
    srv_req *r = req_new(s);
    if (!r) return NULL;
    r->uri_len = strlen(uri);
    char *q = strchr(uri, '?');
    if (q && q[1]) {
        unsigned n = 1;
        for (const char *p = q + 1; *p && n <= s->cfg.max_query_params; p++) n += *p == '&';
        r->n_query = n;
    }
    if (q && (r->n_query > s->cfg.max_query_params || r->uri_len > s->cfg.max_uri_bytes)) q[1] = 0;
    return r;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    srv_server *s = cls;
    srv_req *r = *con_cls;
    srv_guard_idle(s, c);
    if (!r) return;
    const char *extra = NULL;
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) {
        extra = toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ? "terminated: timeout"
                : toe == MHD_REQUEST_TERMINATED_CLIENT_ABORT  ? "terminated: client abort"
                : toe == MHD_REQUEST_TERMINATED_READ_ERROR    ? "terminated: read error"
                : toe == MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN ? "terminated: shutdown"
                                                                : "terminated: error";
        const char *why = srv_guard_reason(s, c);
        if (why) extra = why;
        if (r->body_timed_out) extra = "terminated: request deadline exceeded";
    }
    srv_log_request(r->id, r->method, r->path, r->queued ? r->status : 0,
                    r->err_reason ? cg_reason_code(r->err_reason) : NULL, elapsed_ms(&r->t0), r->body_len, extra);
    srv_metrics_request(r->route, r->queued ? r->status : 0);
    *con_cls = NULL;
    req_free(r);
}

static bool has_scope(srv_req *r, unsigned need) {
    if (need == SRV_SCOPE_NONE) return true;
    if (need == SRV_SCOPE_READ && r->s->cfg.public_read) return true;
    return (r->scopes & need) != 0;
}

/* The token of an "Authorization: Bearer <token>" header (scheme matched
 * case-insensitively, RFC 9110 §11.1), or NULL. */
static const char *bearer_token(const char *auth) {
    if (!auth || strncasecmp(auth, "Bearer", 6) != 0 || (auth[6] != ' ' && auth[6] != '\t')) return NULL;
    const char *t = auth + 6;
    while (*t == ' ' || *t == '\t') t++;
    return *t ? t : NULL;
}

static bool authenticate(srv_req *r, const srv_route *rt, enum MHD_Result *res) {
    if (rt->scope == SRV_SCOPE_NONE || (rt->scope == SRV_SCOPE_READ && r->s->cfg.public_read)) return false;
    const char *tok = bearer_token(srv_header(r, MHD_HTTP_HEADER_AUTHORIZATION));
    if (!tok) {
        *res = srv_fail(r, CG_R_UNAUTHORIZED, NULL, "missing bearer token");
        return true;
    }
    cg_error err = {0};
    int ok = srv_token_check(SRV_DB_POOL(r->s->pool), tok, &r->arena, &r->token_id, &r->scopes, &err);
    if (ok < 0) {
        *res = srv_fail_unavailable(r, &err);
        return true;
    }
    if (ok == 0) {
        *res = srv_fail(r, CG_R_UNAUTHORIZED, NULL, "unknown, expired or revoked token");
        return true;
    }
    if (!has_scope(r, rt->scope)) {
        *res = srv_fail(r, CG_R_FORBIDDEN, NULL, "the token lacks the %s scope",
                        rt->scope == SRV_SCOPE_ADMIN    ? "admin"
                        : rt->scope == SRV_SCOPE_UPLOAD ? "upload"
                                                        : "read");
        return true;
    }
    return false;
}

/* Message framing (RFC 9112 §6): one Content-Length at most, never together
 * with Transfer-Encoding, and "chunked" as the only transfer coding. */
typedef struct framing {
    unsigned n_length, n_coding;
    bool chunked_only;
    const char *coding;
} framing;

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    (void)kind;
    framing *f = cls;
    if (!key) return MHD_YES;
    if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) f->n_length++;
    if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
        f->n_coding++;
        const char *v = value ? value : "";
        while (*v == ' ' || *v == '\t') v++;
        size_t n = strlen(v);
        while (n && (v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
        if (n != 7 || strncasecmp(v, "chunked", 7) != 0) {
            f->chunked_only = false;
            f->coding = value;
        }
    }
    return MHD_YES;
}

/* Refuses conflicting or unsupported framing; the connection is closed after
 * the answer, so no byte of such a body is ever read as a next request. */
static bool check_framing(srv_req *r, const char *version, enum MHD_Result *res) {
    framing f = {0, 0, true, NULL};
    MHD_get_connection_values(r->conn, MHD_HEADER_KIND, count_framing, &f);
    const char *why = NULL;
    if (f.n_length > 1) why = "more than one Content-Length header";
    else if (f.n_length && f.n_coding) why = "both Content-Length and Transfer-Encoding";
    else if (f.n_coding && version && !strcmp(version, MHD_HTTP_VERSION_1_0))
        why = "Transfer-Encoding in an HTTP/1.0 request";
    else if (f.n_coding > 1) why = "more than one Transfer-Encoding header";
    if (why) {
        r->close_conn = true;
        *res = srv_fail(r, CG_R_BAD_REQUEST, NULL, "conflicting message framing: %s", why);
        return true;
    }
    if (f.n_coding && !f.chunked_only) {
        r->close_conn = true;
        cg_arena *a = &r->arena;
        cg_jv *d = cg_jv_obj(a);
        cg_jv_obj_put(a, d, "header", cg_jv_str(a, "Transfer-Encoding"));
        *res = srv_fail(r, CG_R_NOT_IMPLEMENTED, d, "unsupported transfer coding %s (only chunked is accepted)",
                        f.coding ? f.coding : "");
        return true;
    }
    return false;
}

typedef struct argcheck {
    const char *bad;  /* first parameter (name) that is not valid UTF-8 */
} argcheck;

static enum MHD_Result check_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    (void)kind;
    argcheck *ac = cls;
    const char *k = key ? key : "";
    bool key_ok = cg_utf8_valid_prefix(k, strlen(k)) == strlen(k);
    bool value_ok = !value || cg_utf8_valid_prefix(value, strlen(value)) == strlen(value);
    if (!key_ok || !value_ok) {
        ac->bad = k;
        return MHD_NO;
    }
    return MHD_YES;
}

/* Limits of the request line and UTF-8 of the path and every query
 * parameter, before any handler or query sees them. */
static bool check_target(srv_req *r, enum MHD_Result *res) {
    cg_arena *a = &r->arena;
    const srv_config *cfg = &r->s->cfg;
    if (r->n_query > cfg->max_query_params) {
        r->close_conn = true;
        cg_jv *d = cg_jv_obj(a);
        cg_jv_obj_put(a, d, "limit", cg_jv_str(a, "query_parameters"));
        cg_jv_obj_put(a, d, "expected", cg_jv_u64(a, cfg->max_query_params));
        *res = srv_fail(r, CG_R_TOO_MANY_PARAMETERS, d, "the query has more than %u parameters", cfg->max_query_params);
        return true;
    }
    if (r->uri_len > cfg->max_uri_bytes) {
        r->close_conn = true;
        cg_jv *d = cg_jv_obj(a);
        cg_jv_obj_put(a, d, "limit", cg_jv_str(a, "uri_bytes"));
        cg_jv_obj_put(a, d, "expected", cg_jv_u64(a, cfg->max_uri_bytes));
        cg_jv_obj_put(a, d, "observed", cg_jv_u64(a, r->uri_len));
        *res = srv_fail(r, CG_R_URI_TOO_LONG, d, "the request target is longer than %u bytes", cfg->max_uri_bytes);
        return true;
    }
    if (cg_utf8_valid_prefix(r->path, strlen(r->path)) != strlen(r->path)) {
        *res = srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "the request path is not valid UTF-8");
        return true;
    }
    argcheck ac = {NULL};
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, check_arg, &ac);
    if (ac.bad) {
        cg_jv *d = cg_jv_obj(a);
        cg_jv_obj_put(a, d, "parameter", cg_jv_str(a, srv_utf8_clean(a, ac.bad, strlen(ac.bad), NULL)));
        *res = srv_fail(r, CG_R_INVALID_PARAMETER, d, "query parameter %s is not valid UTF-8", ac.bad);
        return true;
    }
    return false;
}

static bool check_stream_upload(srv_req *r, enum MHD_Result *res) {
    const char *ct = srv_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
    const char *ce = srv_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING);
    bool ct_ok = !ct || strncmp(ct, "application/x-tar", 17) == 0 || strncmp(ct, "application/zstd", 16) == 0 ||
                 strncmp(ct, "application/octet-stream", 24) == 0;
    bool ce_ok = !ce || strcmp(ce, "zstd") == 0 || strcmp(ce, "identity") == 0;
    if (!ct_ok || !ce_ok) {
        *res = srv_fail(r, CG_R_UNSUPPORTED_MEDIA_TYPE, NULL,
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
            *res = srv_fail(r, CG_R_INSUFFICIENT_STORAGE, d, "the data directory is below its free-space watermark");
            return true;
        }
    }
    /* the ingest slot is taken once the body is complete (on_request), so slow
     * senders never hold one */
    int w = snprintf(r->body_path, sizeof r->body_path, "%s/tmp/upload-XXXXXX", r->s->cfg.data_dir);
    if (w < 0 || w >= (int)sizeof r->body_path)
        r->body_fd = -1;
    else
        r->body_fd = mkstemp(r->body_path);
    if (r->body_fd < 0) {
        r->body_path[0] = 0;
        bool full = errno == ENOSPC || errno == EDQUOT;
        *res = full ? srv_fail(r, CG_R_INSUFFICIENT_STORAGE, NULL, "no space left for the upload")
                    : srv_fail(r, CG_R_UNAVAILABLE, NULL, "cannot create the upload file: %s", strerror(errno));
        return true;
    }
    return false;
}

/* Call 1: route, authenticate, check the body's declared size and type.
 * Returns true when a response was queued (the request is answered). */
static bool precheck(srv_req *r, enum MHD_Result *res) {
    const srv_route *rt = &srv_routes[r->route];
    if (authenticate(r, rt, res)) return true;
    r->body_kind = rt->body;
    const char *cl = srv_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
    uint64_t declared = 0;
    if (cl) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(cl, &end, 10);
        if (errno || end == cl || *end || cl[0] < '0' || cl[0] > '9') {
            r->close_conn = true;
            *res = srv_fail(r, CG_R_BAD_REQUEST, NULL, "invalid Content-Length");
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
        *res = srv_fail(r, CG_R_PAYLOAD_TOO_LARGE, d, "request body of %llu bytes exceeds the limit of %llu bytes",
                        (unsigned long long)declared, (unsigned long long)cap);
        return true;
    }
    if (rt->body == SRV_BODY_JSON) {
        const char *ct = srv_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (ct && strncmp(ct, "application/json", 16) != 0) {
            *res = srv_fail(r, CG_R_UNSUPPORTED_MEDIA_TYPE, NULL, "expected application/json, got %s", ct);
            return true;
        }
        return false;
    }
    return check_stream_upload(r, res); /* POST /bundles */
}

static int absorb(srv_req *r, const char *data, size_t n) {
    srv_config *cfg = &r->s->cfg;
    if (elapsed_ms(&r->t0) > (double)cfg->request_timeout_s * 1e3) {
        r->body_timed_out = true;
        return -1;
    }
    r->body_len += n;
    srv_guard_body_bytes(r, n);
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

/* Call 1 of a request: everything known from the head. */
static enum MHD_Result on_head(srv_req *r, const char *method, const char *url, const char *version) {
    r->started = true;
    r->method = cg_arena_strdup(&r->arena, method);
    r->path = cg_arena_strdup(&r->arena, url);
    enum MHD_Result res;
    if (check_framing(r, version, &res) || check_target(r, &res)) return res;
    const char *m = strcmp(method, "HEAD") == 0 ? "GET" : method;
    int idx = srv_route_match(&r->arena, m, url, r->params, r->allow, sizeof r->allow);
    if (idx == -1 && srv_static_try(r, method, url, &res)) return res; /* the web app (web/) */
    if (idx == -1) return srv_fail(r, CG_R_NOT_FOUND, NULL, "no route for %s", url);
    if (idx == -2) return srv_fail(r, CG_R_METHOD_NOT_ALLOWED, NULL, "%s is not allowed here", method);
    r->route = idx;
    if (precheck(r, &res)) return res;
    if (r->body_kind != SRV_BODY_NONE) srv_guard_body_begin(r);
    else srv_guard_busy(r);
    return MHD_YES;
}

/* Last call: the body is complete; answer it. */
static enum MHD_Result on_body_done(srv_req *r) {
    srv_server *s = r->s;
    srv_guard_busy(r);
    if (r->err_reason == CG_R_INSUFFICIENT_STORAGE)
        return srv_fail(r, CG_R_INSUFFICIENT_STORAGE, NULL, "no space left for the upload");
    if (r->err_reason == CG_R_UNAVAILABLE) return srv_fail(r, CG_R_UNAVAILABLE, NULL, "cannot write the upload file");
    if (r->body_too_large) {
        cg_arena *a = &r->arena;
        uint64_t cap = r->body_kind == SRV_BODY_JSON ? s->cfg.max_json_body : s->cfg.max_body_bytes;
        cg_jv *d = cg_jv_obj(a);
        cg_jv_obj_put(a, d, "limit", cg_jv_str(a, "body_bytes"));
        cg_jv_obj_put(a, d, "expected", cg_jv_u64(a, cap));
        return srv_fail(r, CG_R_PAYLOAD_TOO_LARGE, d, "request body exceeds the limit of %llu bytes",
                        (unsigned long long)cap);
    }
    if (r->body_kind == SRV_BODY_STREAM && !take_slot(r))
        return srv_fail(r, CG_R_TOO_MANY_REQUESTS, NULL, "too many uploads in progress; retry later");
    enum MHD_Result res = srv_routes[r->route].handler(r);
    if (!r->queued && res == MHD_YES) {
        srv_log("error", "handler queued no response", "request_id", r->id, NULL);
        return MHD_NO;
    }
    return res;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *data, size_t *data_size, void **con_cls) {
    srv_req *r = *con_cls;
    if (!r) { /* on_uri could not allocate */
        if (!(r = req_new(cls))) return MHD_NO;
        *con_cls = r;
    }
    if (!r->started) {
        r->conn = conn;
        return on_head(r, method, url, version);
    }
    if (*data_size != 0) {
        size_t n = *data_size;
        *data_size = 0;
        if (r->queued) return MHD_YES; /* answered in call 1; MHD discards the rest */
        int rc = absorb(r, data, n);
        if (rc == -1) return MHD_NO; /* over the request deadline: drop the connection */
        if (rc == -2) r->err_reason = CG_R_INSUFFICIENT_STORAGE;
        if (rc == -3) r->err_reason = CG_R_UNAVAILABLE;
        return MHD_YES;
    }
    if (r->queued) return MHD_YES;
    return on_body_done(r);
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
    if (srv_guard_start(s) < 0) return cg_err_set(err, CG_EIO, "cannot start the connection guard thread");
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
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_NOTIFY_CONNECTION, srv_guard_notify, s,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, s,
        MHD_OPTION_END);
    if (!s->mhd) {
        srv_guard_stop(s);
        return cg_err_set(err, CG_EIO, "cannot listen on %s:%u", s->cfg.listen_host, s->cfg.listen_port);
    }
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
    srv_guard_stop(s);
}
