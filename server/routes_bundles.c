/* routes_bundles.c — read routes: GET /bundles (filters, keyset pagination),
 * /bundles/{id} (summary), /manifest (exact bytes), /files/{path} (ETag,
 * immutable caching, Range), /archive (tar.zst that verifies), /signature,
 * /evidence, /graph, /viewer. Ids may be any unique prefix of ≥ 12 hex chars.
 * Derived views (/graph, rebuilt /evidence and /viewer, /export, /archive) are
 * built from the blob store through derived.c (srv_derived.h): no request
 * copies a bundle (/archive is packed straight from the blobs); the pooled
 * connection is returned before any CPU work. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/graph.h"
#include "render/chrome_trace.h"
#include "base/alloc.h"
#include "base/fs.h"
#include "bundle/archive.h"
#include "analysis/evidence.h"
#include "render/payload.h"
#include "render/viewer_html.h"
#include "srv_derived.h"
#include "srv_store.h"
#include "trace/health.h"
#include "trace/trace.h"

#define JSON_CT "application/json; charset=utf-8"

/* ------------------------------------------------------------ helpers */

/* Resolves r->params[0] to a full id. Returns 1 (id filled), or 0 after answering. */
static int resolve(srv_req *r, char id[65], enum MHD_Result *res) {
    const char *p = r->params[0];
    size_t n = strlen(p);
    bool hex = n >= 12 && n <= 64;
    for (size_t i = 0; hex && i < n; i++) hex = (p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f');
    if (!hex) {
        *res = srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "a bundle id is 12 to 64 lowercase hex characters");
        return 0;
    }
    cg_error err = {0};
    int rows = srv_store_bundle_resolve(r->s->pool, p, id, &err);
    if (rows < 0) *res = srv_fail_unavailable(r, &err);
    else if (rows == 0) *res = srv_fail(r, CG_R_NOT_FOUND, NULL, "no bundle with id %s", p);
    else if (rows > 1) *res = srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "bundle id prefix %s is ambiguous", p);
    return rows == 1;
}

/* Resolves the id of the route (answering 400/404/503 when it does not). */
#define WITH_BUNDLE(r, id)                                     \
    char id[65];                                               \
    enum MHD_Result res_;                                      \
    if (!resolve((r), id, &res_)) return res_;

/* ------------------------------------------------------------ derived views (srv_derived.h) */

static void fail_set(srv_derive_fail *f, cg_reason reason, const char *limit, const char *msg) {
    f->reason = reason;
    f->limit = limit;
    if (snprintf(f->msg, sizeof f->msg, "%s", msg) < 0) f->msg[0] = 0; /* long messages are cut */
}

/* The stored trace.jsonl of id, parsed as it streams from the blob store; the
 * pooled connection is held only while the blob is opened. A trace over the
 * server's decoded-bytes limit is refused; a large one waits for the heavy-build
 * gate (*heavy: pass to unload_trace). */
static cg_trace *load_trace(srv_req *r, const char *id, srv_derive_fail *f, int *heavy) {
    cg_error err = {0};
    char hex[65];
    uint64_t bytes = 0;
    *heavy = 0;
    int found = srv_store_file_ref(r->s->pool, id, "trace.jsonl", hex, &bytes, &err);
    if (found != 1) {
        fail_set(f, found == 0 ? CG_R_INTERNAL : CG_R_UNAVAILABLE, NULL,
                 found == 0 ? "the bundle has no stored trace.jsonl" : err.msg);
        return NULL;
    }
    uint64_t max = r->s->cfg.max_decoded_bytes;
    if (!srv_derived_trace_fits(bytes, max)) {
        fail_set(f, CG_R_PAYLOAD_TOO_LARGE, "derived_trace_bytes", "the trace is too large for a derived view");
        return NULL;
    }
    f->trace_bytes = bytes;
    if ((*heavy = srv_heavy_enter(bytes, SRV_DERIVED_WAIT_S)) < 0) {
        fail_set(f, CG_R_TOO_MANY_REQUESTS, NULL, "a large derived view is being built; retry later");
        return NULL;
    }
    bool missing, store_error = true;
    int fd = srv_store_blob_open(r->s, hex, &bytes, &missing, &err);
    cg_trace *t = fd < 0 ? NULL : srv_blob_trace_fd(&r->s->blobs, fd, hex, max, NULL, &store_error, &err);
    if (!t) {
        fail_set(f, store_error ? CG_R_INTERNAL : CG_R_TRACE_INVALID, NULL,
                 store_error ? "the stored trace is missing or damaged; run candle-graph-server fsck" : err.msg);
        srv_heavy_leave(*heavy);
        *heavy = 0;
    }
    return t;
}

/* Frees what load_trace returned and opens the gate it took. */
static void unload_trace(cg_trace *t, int heavy) {
    cg_trace_free(t);
    if (heavy) srv_memory_trim();
    srv_heavy_leave(heavy);
}

static void staging_for(srv_req *r, const char *what, char *out, size_t outsz) {
    if (snprintf(out, outsz, "%s/staging/%s-%s", r->s->cfg.data_dir, what, r->id) >= (int)outsz) out[0] = 0;
}

static int write_json_file(const char *path, const cg_jv *v, srv_derive_fail *f) {
    cg_error err = {0};
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int rc = fd < 0 ? -1 : cg_json_write_fd(fd, v, true, true, &err);
    if (fd >= 0 && close(fd) != 0) rc = -1;
    if (rc < 0) fail_set(f, CG_R_INSUFFICIENT_STORAGE, NULL, "cannot write the derived view");
    return rc;
}

static int derive_graph(srv_req *r, const char *id, const char *out, srv_derive_fail *f) {
    int heavy;
    cg_trace *t = load_trace(r, id, f, &heavy);
    if (!t) return -1;
    cg_health *h = cg_health_analyze(t);
    int rc = -1;
    if (!h->structurally_valid || t->terminal.outcome == CG_OUTCOME_FAILED) {
        fail_set(f, CG_R_TRACE_INVALID, NULL, "no execution graph is derived for a failed or structurally invalid capture");
    } else {
        cg_arena a;
        cg_arena_init(&a, 1 << 20);
        cg_error err = {0};
        cg_graph *g = cg_graph_build(t, h, &a, &err);
        if (!g) fail_set(f, CG_R_TRACE_INVALID, NULL, err.msg);
        else rc = write_json_file(out, cg_graph_to_json_lazy(&a, g), f);
        cg_arena_free(&a);
    }
    cg_health_free(h);
    unload_trace(t, heavy);
    return rc;
}

/* evidence/4 (as JSON) or viewer/5 HTML from the stored trace and nsight/. */
static int derive_packet(srv_req *r, const char *id, const char *out, bool html, srv_derive_fail *f) {
    int heavy;
    cg_trace *t = load_trace(r, id, f, &heavy);
    if (!t) return -1;
    char nsdir[PATH_MAX], ns[PATH_MAX + 16];
    staging_for(r, "nsight", nsdir, sizeof nsdir);
    snprintf(ns, sizeof ns, "%s/nsight", nsdir);
    size_t n_ns = 0;
    cg_error err = {0};
    int rc = -1;
    if (!nsdir[0] || srv_store_place_files(r->s, id, "nsight/", nsdir, &n_ns, &err) < 0) {
        fail_set(f, CG_R_UNAVAILABLE, NULL, err.msg[0] ? err.msg : "cannot read the stored nsight files");
        goto out;
    }
    cg_arena a;
    cg_arena_init(&a, 1 << 20);
    cg_evidence *e = cg_evidence_build(&a, t, n_ns ? ns : NULL, &err);
    if (!e) {
        fail_set(f, CG_R_TRACE_INVALID, NULL, err.msg);
    } else if (!html) {
        rc = write_json_file(out, cg_evidence_to_json_lazy(&a, e), f);
    } else {
        cg_jv *packet = cg_evidence_to_json_lazy(&a, e);
        cg_jv_materialize(&a, packet);
        cg_buf b = CG_BUF_INIT;
        if (cg_viewer_render_html(cg_viewer_payload(&a, packet), &b, &err) != 0) {
            fail_set(f, CG_R_TRACE_INVALID, NULL, err.msg);
        } else if (cg_write_file_atomic(out, b.data, b.len, &err) != 0) {
            fail_set(f, CG_R_INSUFFICIENT_STORAGE, NULL, "cannot write the derived view");
        } else {
            rc = 0;
        }
        cg_buf_free(&b);
    }
    if (e) cg_evidence_free(e);
    cg_arena_free(&a);
out:
    if (nsdir[0]) cg_rm_rf(nsdir);
    unload_trace(t, heavy);
    return rc;
}

static int derive_evidence(srv_req *r, const char *id, const char *out, srv_derive_fail *f) {
    return derive_packet(r, id, out, false, f);
}

static int derive_viewer(srv_req *r, const char *id, const char *out, srv_derive_fail *f) {
    return derive_packet(r, id, out, true, f);
}

/* Chrome Trace Event Format JSON of the stored trace (the bytes of `candle-graph export`). */
static int derive_chrome(srv_req *r, const char *id, const char *out, srv_derive_fail *f) {
    int heavy;
    cg_trace *t = load_trace(r, id, f, &heavy);
    if (!t) return -1;
    cg_error err = {0};
    cg_fd_sink_ctx sink = {open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600), 0};
    int rc = sink.fd < 0 ? -1 : cg_chrome_trace_write(t, cg_fd_sink, &sink, &err);
    if (sink.fd >= 0 && close(sink.fd) != 0) rc = -1;
    if (rc < 0) fail_set(f, CG_R_INSUFFICIENT_STORAGE, NULL, "cannot write the derived view");
    unload_trace(t, heavy);
    return rc;
}

/* A file of the archive read from its blob (srv_blob_pread: zstd frames are
 * decompressed one at a time, nothing is copied). */
typedef struct arc_file {
    srv_blob_cursor *c;
    int fd;
    uint64_t at;
} arc_file;

/* Opens the blob of declared file f: its content address is the manifest's
 * digest (verified at ingest; pack_data hashes the bytes again). */
static void *arc_open(void *ctx, const cg_bundle_file *f, cg_error *err) {
    srv_req *r = ctx;
    char hex[65];
    for (int k = 0; k < 64; k++) hex[k] = (char)tolower((unsigned char)f->sha256[k]);
    hex[64] = 0;
    uint64_t size;
    bool missing;
    arc_file *h = calloc(1, sizeof *h);
    srv_blob_view v;
    if (!h) {
        cg_err_set(err, CG_ENOMEM, "out of memory");
        return NULL;
    }
    h->fd = strlen(f->sha256) == 64 ? srv_store_blob_open(r->s, hex, &size, &missing, err) : -1;
    if (h->fd >= 0 && srv_blob_view_open(h->fd, &v, err) == 0) h->c = srv_blob_cursor_new(&v);
    if (!h->c) {
        if (h->fd >= 0) close(h->fd);
        cg_free(h);
        if (!err || !err->msg[0]) cg_err_set(err, CG_EIO, "stored blob %s is missing or damaged", hex);
        return NULL;
    }
    return h;
}

static ssize_t arc_read(void *hp, void *buf, size_t n, cg_error *err) {
    arc_file *h = hp;
    ssize_t got = srv_blob_pread(h->c, buf, n, h->at, err);
    if (got > 0) h->at += (uint64_t)got;
    return got;
}

static void arc_close(void *hp) {
    arc_file *h = hp;
    srv_blob_cursor_free(h->c);
    close(h->fd);
    cg_free(h);
}

/* tar.zst of the bundle written straight from its blobs (no staging copy):
 * the stored manifest, whose digest must be the id, then every declared file
 * hashed as it is archived (cg_archive_pack_from), so the archive verifies. */
static int derive_archive(srv_req *r, const char *id, const char *out, srv_derive_fail *f) {
    cg_error err = {0};
    PGresult *x = srv_store_bundle_manifest(r->s->pool, id, &err);
    int rc = -1;
    if (x && PQntuples(x) == 1) {
        const char *m = PQgetvalue(x, 0, 0);
        size_t mlen = (size_t)PQgetlength(x, 0, 0);
        char hex[65];
        cg_sha256_hex(m, mlen, hex);
        cg_archive_source src = {arc_open, arc_read, arc_close, r};
        if (strcmp(hex, id) != 0) cg_err_set(&err, CG_EVERIFY, "the stored manifest does not hash to the bundle id");
        else rc = cg_archive_pack_from(m, mlen, &src, out, true, &err);
    } else if (!err.msg[0]) {
        cg_err_set(&err, CG_EIO, "the stored manifest is missing");
    }
    PQclear(x);
    if (rc < 0) {
        srv_log("error", "archive build failed", "request_id", r->id, "error", err.msg, NULL);
        f->reason = CG_R_INTERNAL;
        if (snprintf(f->msg, sizeof f->msg, "cannot build the archive of bundle %s: %s", id, err.msg) < 0) f->msg[0] = 0;
    }
    return rc;
}

/* ------------------------------------------------------------ list */

static cg_jv *summary_item(cg_arena *a, PGresult *x, int i) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "id", srv_col_str(a, x, i, 1));
    cg_jv_obj_put(a, o, "run_id", srv_col_str(a, x, i, 2));
    cg_jv_obj_put(a, o, "entrypoint", srv_col_str(a, x, i, 3));
    cg_jv_obj_put(a, o, "phase", srv_col_str(a, x, i, 4));
    cg_jv_obj_put(a, o, "device", srv_col_str(a, x, i, 5));
    cg_jv_obj_put(a, o, "capture_step", srv_col_u64(a, x, i, 6));
    cg_jv_obj_put(a, o, "implementation_id", srv_col_str(a, x, i, 7));
    cg_jv_obj_put(a, o, "workload_id", srv_col_str(a, x, i, 8));
    cg_jv_obj_put(a, o, "outcome", srv_col_str(a, x, i, 9));
    cg_jv *h = cg_jv_obj(a);
    cg_jv_obj_put(a, h, "structurally_valid", srv_col_bool(a, x, i, 10));
    cg_jv_obj_put(a, h, "capture_complete", srv_col_bool(a, x, i, 11));
    cg_jv_obj_put(a, o, "health", h);
    cg_jv *m = cg_jv_obj(a);
    cg_jv_obj_put(a, m, "wall_ns", srv_col_u64(a, x, i, 12));
    cg_jv_obj_put(a, m, "measured_span_count", srv_col_u64(a, x, i, 13));
    cg_jv_obj_put(a, o, "measured", m);
    cg_jv_obj_put(a, o, "signer", srv_col_str(a, x, i, 14));
    cg_jv_obj_put(a, o, "host", srv_col_str(a, x, i, 15));
    if (PQgetisnull(x, i, 16)) {
        cg_jv_obj_put(a, o, "campaign", cg_jv_null(a));
    } else {
        cg_jv *cp = cg_jv_obj(a);
        cg_jv_obj_put(a, cp, "campaign_id", srv_col_str(a, x, i, 16));
        cg_jv_obj_put(a, cp, "planned", srv_col_str(a, x, i, 17));
        cg_jv_obj_put(a, o, "campaign", cp);
    }
    cg_jv_obj_put(a, o, "uploaded_at", srv_col_str(a, x, i, 18));
    cg_jv_obj_put(a, o, "semantic", srv_col_str(a, x, i, 19));
    return o;
}

enum MHD_Result srv_h_bundles_list(srv_req *r) {
    cg_arena *a = &r->arena;
    unsigned limit = 50;
    const char *ls = srv_query(r, "limit");
    if (ls) {
        uint64_t v = 0;
        if (!srv_parse_u64(ls, 500, &v) || v < 1)
            return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "limit must be an integer from 1 to 500");
        limit = (unsigned)v;
    }
    const char *cursor = srv_query(r, "cursor");
    if (cursor && !srv_parse_u64(cursor, INT64_MAX, NULL)) /* seq is a bigint */
        return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "cursor is not one this server issued");
    srv_where w;
    srv_where_init(&w, NULL);
    enum MHD_Result refused;
    if (!srv_bundle_filters_add(r, &w, &refused)) {
        srv_where_free(&w);
        return refused;
    }
    cg_error err = {0};
    char sqlstate[6];
    const char *bad;
    PGresult *x = srv_store_bundle_list(r->s->pool, &w, cursor, limit + 1, &bad, sqlstate, &err);
    srv_where_free(&w);
    if (!x) {
        if (bad) {
            cg_jv *d = cg_jv_obj(a);
            cg_jv_obj_put(a, d, "parameter", cg_jv_str(a, bad));
            return srv_fail(r, CG_R_INVALID_PARAMETER, d, "invalid value for parameter %s", bad);
        }
        if (!strncmp(sqlstate, "22", 2)) return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "invalid query parameter value");
        return srv_fail_unavailable(r, &err);
    }
    cg_jv *items = cg_jv_arr(a);
    int rows = PQntuples(x);
    int shown = rows > (int)limit ? (int)limit : rows;
    for (int i = 0; i < shown; i++) cg_jv_arr_push(a, items, summary_item(a, x, i));
    cg_jv *out = cg_jv_obj(a);
    cg_jv_obj_put(a, out, "items", items);
    cg_jv_obj_put(a, out, "next_cursor",
                  rows > (int)limit ? cg_jv_str(a, PQgetvalue(x, shown - 1, SRV_SUMMARY_SEQ)) : cg_jv_null(a));
    PQclear(x);
    return srv_reply_json(r, 200, out);
}

/* ------------------------------------------------------------ one bundle */

enum MHD_Result srv_h_bundle_get(srv_req *r) {
    WITH_BUNDLE(r, id);
    cg_error err = {0};
    cg_arena *a = &r->arena;
    srv_bundle_rows rows;
    if (srv_store_bundle_detail(r->s->pool, id, &rows, &err) < 0) return srv_fail_unavailable(r, &err);
    PGresult *x = rows.row, *f = rows.files, *t = rows.tags;
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "id", srv_col_str(a, x, 0, 0));
    cg_jv_obj_put(a, o, "run_id", srv_col_str(a, x, 0, 1));
    cg_jv_obj_put(a, o, "manifest", srv_col_json(a, x, 0, 2));
    cg_jv *files = cg_jv_arr(a);
    for (int i = 0; i < PQntuples(f); i++) {
        cg_jv *fo = cg_jv_obj(a);
        cg_jv_obj_put(a, fo, "path", srv_col_str(a, f, i, 0));
        cg_jv_obj_put(a, fo, "bytes", srv_col_u64(a, f, i, 1));
        cg_jv_obj_put(a, fo, "sha256", srv_col_str(a, f, i, 2));
        cg_jv_arr_push(a, files, fo);
    }
    cg_jv_obj_put(a, o, "files", files);
    cg_jv_obj_put(a, o, "file_count", srv_col_u64(a, x, 0, 19));
    cg_jv_obj_put(a, o, "total_bytes", srv_col_u64(a, x, 0, 20));
    cg_jv_obj_put(a, o, "provenance", srv_col_json(a, x, 0, 3));
    cg_jv_obj_put(a, o, "identity", srv_col_json(a, x, 0, 4));
    cg_jv *tags = cg_jv_obj(a);
    for (int i = 0; i < PQntuples(t); i++)
        cg_jv_obj_put(a, tags, cg_arena_strdup(a, PQgetvalue(t, i, 0)), cg_jv_str(a, PQgetvalue(t, i, 1)));
    cg_jv_obj_put(a, o, "tags", tags);
    cg_jv_obj_put(a, o, "health", srv_col_json(a, x, 0, 5));
    cg_jv_obj_put(a, o, "outcome", srv_col_str(a, x, 0, 6));
    cg_jv *m = cg_jv_obj(a);
    cg_jv_obj_put(a, m, "measurement_scope", srv_col_str(a, x, 0, 21));
    cg_jv_obj_put(a, m, "wall_ns", srv_col_u64(a, x, 0, 7));
    cg_jv_obj_put(a, m, "measured_span_count", srv_col_u64(a, x, 0, 8));
    cg_jv_obj_put(a, o, "measured", m);
    cg_jv *sem = cg_jv_obj(a);
    cg_jv_obj_put(a, sem, "status", srv_col_str(a, x, 0, 16));
    cg_jv_obj_put(a, sem, "evidence_schema", srv_col_str(a, x, 0, 17));
    cg_jv_obj_put(a, o, "semantic", sem);
    if (PQgetisnull(x, 0, 10)) {
        cg_jv_obj_put(a, o, "signature", cg_jv_null(a));
    } else {
        cg_jv *sg = cg_jv_obj(a);
        cg_jv_obj_put(a, sg, "algorithm", cg_jv_str(a, "ed25519"));
        cg_jv_obj_put(a, sg, "key_id", srv_col_str(a, x, 0, 10));
        cg_jv_obj_put(a, sg, "signer_revoked", srv_col_bool(a, x, 0, 11));
        cg_jv_obj_put(a, o, "signature", sg);
    }
    cg_jv_obj_put(a, o, "uploader", srv_col_str(a, x, 0, 12));
    cg_jv_obj_put(a, o, "uploaded_at", srv_col_str(a, x, 0, 13));
    cg_jv_obj_put(a, o, "host", srv_col_str(a, x, 0, 18));
    if (PQgetisnull(x, 0, 14)) {
        cg_jv_obj_put(a, o, "campaign", cg_jv_null(a));
    } else {
        cg_jv *cp = cg_jv_obj(a);
        cg_jv_obj_put(a, cp, "campaign_id", srv_col_str(a, x, 0, 14));
        cg_jv_obj_put(a, cp, "planned", srv_col_str(a, x, 0, 15));
        cg_jv_obj_put(a, o, "campaign", cp);
    }
    srv_store_bundle_rows_clear(&rows);
    return srv_reply_json(r, 200, o);
}

enum MHD_Result srv_h_bundle_manifest(srv_req *r) {
    WITH_BUNDLE(r, id);
    cg_error err = {0};
    PGresult *x = srv_store_bundle_manifest(r->s->pool, id, &err);
    if (!x || PQntuples(x) != 1) {
        PQclear(x);
        return srv_fail(r, CG_R_UNAVAILABLE, NULL, "the database is not reachable");
    }
    char etag[70];
    snprintf(etag, sizeof etag, "\"%s\"", id);
    const char *hdrs[] = {"ETag", etag, "Cache-Control", srv_cache_immutable(r), NULL};
    enum MHD_Result res = srv_reply_bytes(r, 200, JSON_CT, PQgetvalue(x, 0, 0), (size_t)PQgetlength(x, 0, 0), hdrs);
    PQclear(x);
    return res;
}

static const char *ctype_for(const char *path) {
    const char *dot = strrchr(path, '.');
    if (!dot) return "application/octet-stream";
    if (!strcmp(dot, ".json")) return JSON_CT;
    if (!strcmp(dot, ".jsonl")) return "application/x-ndjson";
    if (!strcmp(dot, ".md")) return "text/markdown; charset=utf-8";
    if (!strcmp(dot, ".html")) return "text/html; charset=utf-8";
    if (!strcmp(dot, ".csv")) return "text/csv; charset=utf-8";
    return "application/octet-stream";
}

enum MHD_Result srv_h_bundle_file(srv_req *r) {
    WITH_BUNDLE(r, id);
    cg_error err = {0};
    char hex[65];
    uint64_t want = 0;
    int found = srv_store_file_ref(r->s->pool, id, r->params[1], hex, &want, &err);
    if (found < 0) return srv_fail_unavailable(r, &err);
    if (found == 0) return srv_fail(r, CG_R_NOT_FOUND, NULL, "bundle %s has no file %s", id, r->params[1]);
    uint64_t size = 0;
    bool missing = false;
    int fd = srv_store_blob_open(r->s, hex, &size, &missing, &err);
    if (fd < 0 || size != want) {
        if (fd >= 0) close(fd);
        srv_log("error", "stored blob missing or damaged", "request_id", r->id, "sha256", hex, NULL);
        return srv_fail(r, CG_R_INTERNAL, NULL, "stored blob %s is missing or damaged; run candle-graph-server fsck", hex);
    }
    return srv_reply_fd(r, fd, size, ctype_for(r->params[1]), hex, true);
}

enum MHD_Result srv_h_bundle_archive(srv_req *r) {
    WITH_BUNDLE(r, id);
    return srv_derived_serve(r, id, "archive", "application/zstd", derive_archive);
}

enum MHD_Result srv_h_bundle_signature(srv_req *r) {
    WITH_BUNDLE(r, id);
    cg_error err = {0};
    PGresult *x = srv_store_bundle_signature(r->s->pool, id, &err);
    if (!x) return srv_fail_unavailable(r, &err);
    if (PQntuples(x) != 1 || PQgetisnull(x, 0, 0)) {
        PQclear(x);
        return srv_fail(r, CG_R_NOT_FOUND, NULL, "bundle %s was uploaded without a signature", id);
    }
    cg_jv *v = srv_col_json(&r->arena, x, 0, 0);
    PQclear(x);
    return srv_reply_json(r, 200, v);
}

/* A stored file served as it is (its blob), or 500 when the blob is gone. */
static enum MHD_Result serve_blob(srv_req *r, const char *hex, const char *ctype) {
    cg_error err = {0};
    uint64_t size;
    bool missing;
    int fd = srv_store_blob_open(r->s, hex, &size, &missing, &err);
    if (fd < 0) return srv_fail(r, CG_R_INTERNAL, NULL, "stored blob %s is missing; run candle-graph-server fsck", hex);
    return srv_reply_fd(r, fd, size, ctype, hex, true);
}

enum MHD_Result srv_h_bundle_evidence(srv_req *r) {
    WITH_BUNDLE(r, id);
    cg_error err = {0};
    char hex[65];
    int stored = srv_store_evidence_ref(r->s->pool, id, hex, &err);
    if (stored < 0) return srv_fail_unavailable(r, &err);
    if (stored) return serve_blob(r, hex, JSON_CT);
    /* not rederivable (other evidence schema): rebuild evidence/4 from the trace */
    return srv_derived_serve(r, id, "evidence", JSON_CT, derive_evidence);
}

enum MHD_Result srv_h_bundle_graph(srv_req *r) {
    WITH_BUNDLE(r, id);
    return srv_derived_serve(r, id, "graph", JSON_CT, derive_graph);
}

enum MHD_Result srv_h_bundle_export(srv_req *r) {
    const char *format = srv_query(r, "format");
    if (!format || strcmp(format, "chrome"))
        return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "format must be chrome (Chrome Trace Event Format JSON)");
    WITH_BUNDLE(r, id);
    return srv_derived_serve(r, id, "chrome", JSON_CT, derive_chrome);
}

enum MHD_Result srv_h_bundle_viewer(srv_req *r) {
    WITH_BUNDLE(r, id);
    cg_error err = {0};
    char hex[65];
    int found = srv_store_file_ref(r->s->pool, id, "viewer.html", hex, NULL, &err);
    if (found < 0) return srv_fail_unavailable(r, &err);
    if (found) return serve_blob(r, hex, "text/html; charset=utf-8");
    return srv_derived_serve(r, id, "viewer", "text/html; charset=utf-8", derive_viewer);
}
