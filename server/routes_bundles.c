/* routes_bundles.c — read routes: GET /bundles (filters, keyset pagination),
 * /bundles/{id} (summary), /manifest (exact bytes), /files/{path} (ETag,
 * immutable caching, Range), /archive (tar.zst that verifies), /signature,
 * /evidence, /graph, /viewer. Ids may be any unique prefix of ≥ 12 hex chars. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/graph.h"
#include "base/fs.h"
#include "bundle/archive.h"
#include "render/artifacts.h"
#include "srv.h"
#include "trace/health.h"
#include "trace/trace.h"

#define JSON_CT "application/json; charset=utf-8"
#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"

/* ------------------------------------------------------------ helpers */

/* Resolves r->params[0] to a full id. Returns 1 (id filled), or 0 after answering. */
static int resolve(srv_req *r, PGconn *c, char id[65], enum MHD_Result *res) {
    const char *p = r->params[0];
    size_t n = strlen(p);
    bool hex = n >= 12 && n <= 64;
    for (size_t i = 0; hex && i < n; i++) hex = (p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f');
    if (!hex) {
        *res = srv_fail(r, "invalid_parameter", NULL, "a bundle id is 12 to 64 lowercase hex characters");
        return 0;
    }
    cg_error err = {0};
    const char *q[1] = {cg_arena_printf(&r->arena, "%s%%", p)};
    PGresult *x = srv_q(c, "SELECT id FROM bundles WHERE id LIKE $1 ORDER BY id LIMIT 2", 1, q, NULL, NULL, &err);
    if (!x) {
        *res = srv_fail_unavailable(r, &err);
        return 0;
    }
    int rows = PQntuples(x);
    if (rows == 1) snprintf(id, 65, "%s", PQgetvalue(x, 0, 0));
    PQclear(x);
    if (rows == 0) {
        *res = srv_fail(r, "not_found", NULL, "no bundle with id %s", p);
        return 0;
    }
    if (rows > 1) {
        *res = srv_fail(r, "invalid_parameter", NULL, "bundle id prefix %s is ambiguous", p);
        return 0;
    }
    return 1;
}

static cg_jv *parse_json_col(cg_arena *a, PGresult *x, int row, int col) {
    if (PQgetisnull(x, row, col)) return cg_jv_null(a);
    cg_json_limits lim;
    cg_json_limits_default(&lim);
    cg_error err = {0};
    cg_jv *v = cg_json_parse(a, PQgetvalue(x, row, col), (size_t)PQgetlength(x, row, col), &lim, &err);
    return v ? v : cg_jv_null(a);
}

static cg_jv *str_or_null(cg_arena *a, PGresult *x, int row, int col) {
    return PQgetisnull(x, row, col) ? cg_jv_null(a) : cg_jv_str(a, PQgetvalue(x, row, col));
}

static cg_jv *u64_or_null(cg_arena *a, PGresult *x, int row, int col) {
    return PQgetisnull(x, row, col) ? cg_jv_null(a) : cg_jv_u64(a, strtoull(PQgetvalue(x, row, col), NULL, 10));
}

static cg_jv *bool_col(cg_arena *a, PGresult *x, int row, int col) {
    return cg_jv_bool(a, PQgetvalue(x, row, col)[0] == 't');
}

#define WITH_BUNDLE(r, c, id)                                  \
    cg_error err = {0};                                        \
    PGconn *c = srv_pool_get((r)->s->pool, &err);              \
    if (!c) return srv_fail_unavailable((r), &err);            \
    char id[65];                                               \
    enum MHD_Result res_;                                      \
    if (!resolve((r), c, id, &res_)) {                         \
        srv_pool_put((r)->s->pool, c);                         \
        return res_;                                           \
    }

/* Copies every file of the bundle out of the blob store into dir (created). */
static int materialize(srv_req *r, PGconn *c, const char *id, const char *dir, cg_error *err) {
    const char *p[1] = {id};
    PGresult *x = srv_q(c, "SELECT path, sha256 FROM bundle_files WHERE bundle_id = $1 ORDER BY path", 1, p, NULL, NULL,
                        err);
    if (!x) return -1;
    int rc = cg_mkdir_p(dir, err);
    for (int i = 0; rc == 0 && i < PQntuples(x); i++) {
        const char *path = PQgetvalue(x, i, 0);
        char *dst = cg_path_join(dir, path);
        char parent[PATH_MAX];
        cg_path_parent(dst, parent, sizeof parent);
        rc = cg_mkdir_p(parent, err);
        uint64_t size;
        bool missing;
        int fd = rc == 0 ? srv_blob_open(&r->s->blobs, c, PQgetvalue(x, i, 1), &size, &missing, err) : -1;
        if (fd < 0) rc = -1;
        int out = rc == 0 ? open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644) : -1;
        if (rc == 0 && out < 0) rc = cg_err_set(err, CG_EIO, "create %s: %s", dst, strerror(errno));
        char buf[65536];
        ssize_t n;
        while (rc == 0 && (n = read(fd, buf, sizeof buf)) > 0)
            if (write(out, buf, (size_t)n) != n) rc = cg_err_set(err, CG_EIO, "write %s: %s", dst, strerror(errno));
        if (fd >= 0) close(fd);
        if (out >= 0) close(out);
        free(dst);
    }
    PQclear(x);
    return rc;
}

static void tmpdir_for(srv_req *r, const char *what, char *out, size_t outsz) {
    if (snprintf(out, outsz, "%s/staging/%s-%s", r->s->cfg.data_dir, what, r->id) >= (int)outsz) out[0] = 0;
}

/* ------------------------------------------------------------ list */

/* Each filter is a fixed SQL fragment "<lhs> $n<cast>"; values are parameters. */
struct filter { const char *param; const char *lhs; const char *cast; };
static const struct filter filters[] = {
    {"entrypoint", "b.entrypoint =", ""},
    {"phase", "b.phase =", ""},
    {"device", "b.device =", ""},
    {"implementation_id", "b.implementation_id =", ""},
    {"workload_id", "b.workload_id =", ""},
    {"campaign", "b.campaign_id =", ""},
    {"capture_step", "b.capture_step =", "::bigint"},
    {"outcome", "b.outcome =", ""},
    {"signer", "b.signer_key_id =", ""},
    {"since", "b.uploaded_at >=", "::timestamptz"},
    {"until", "b.uploaded_at <", "::timestamptz"},
    /* issue 15: revision filters (a commit hash or prefix, a branch) */
    {"commit", "EXISTS (SELECT 1 FROM bundle_revisions v WHERE v.bundle_id = b.id AND starts_with(v.commit_sha,", "))"},
    {"branch", "EXISTS (SELECT 1 FROM bundle_revisions v WHERE v.bundle_id = b.id AND v.branch =", ")"},
};

static bool is_uint(const char *s) {
    if (!*s || strlen(s) > 19) return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return false;
    return true;
}

#define SUMMARY_COLS                                                                                                 \
    "b.seq, b.id, b.run_id, b.entrypoint, b.phase, b.device, b.capture_step, b.implementation_id, b.workload_id, "   \
    "b.outcome, b.structurally_valid, b.capture_complete, b.measured_ns, b.measured_span_count, b.signer_key_id, "  \
    "b.host, b.campaign_id, b.planned_name, " TS("b.uploaded_at") ", b.semantic_status"

static cg_jv *summary_item(cg_arena *a, PGresult *x, int i) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "id", str_or_null(a, x, i, 1));
    cg_jv_obj_put(a, o, "run_id", str_or_null(a, x, i, 2));
    cg_jv_obj_put(a, o, "entrypoint", str_or_null(a, x, i, 3));
    cg_jv_obj_put(a, o, "phase", str_or_null(a, x, i, 4));
    cg_jv_obj_put(a, o, "device", str_or_null(a, x, i, 5));
    cg_jv_obj_put(a, o, "capture_step", u64_or_null(a, x, i, 6));
    cg_jv_obj_put(a, o, "implementation_id", str_or_null(a, x, i, 7));
    cg_jv_obj_put(a, o, "workload_id", str_or_null(a, x, i, 8));
    cg_jv_obj_put(a, o, "outcome", str_or_null(a, x, i, 9));
    cg_jv *h = cg_jv_obj(a);
    cg_jv_obj_put(a, h, "structurally_valid", bool_col(a, x, i, 10));
    cg_jv_obj_put(a, h, "capture_complete", bool_col(a, x, i, 11));
    cg_jv_obj_put(a, o, "health", h);
    cg_jv *m = cg_jv_obj(a);
    cg_jv_obj_put(a, m, "wall_ns", u64_or_null(a, x, i, 12));
    cg_jv_obj_put(a, m, "measured_span_count", u64_or_null(a, x, i, 13));
    cg_jv_obj_put(a, o, "measured", m);
    cg_jv_obj_put(a, o, "signer", str_or_null(a, x, i, 14));
    cg_jv_obj_put(a, o, "host", str_or_null(a, x, i, 15));
    if (PQgetisnull(x, i, 16)) {
        cg_jv_obj_put(a, o, "campaign", cg_jv_null(a));
    } else {
        cg_jv *cp = cg_jv_obj(a);
        cg_jv_obj_put(a, cp, "campaign_id", str_or_null(a, x, i, 16));
        cg_jv_obj_put(a, cp, "planned", str_or_null(a, x, i, 17));
        cg_jv_obj_put(a, o, "campaign", cp);
    }
    cg_jv_obj_put(a, o, "uploaded_at", str_or_null(a, x, i, 18));
    cg_jv_obj_put(a, o, "semantic", str_or_null(a, x, i, 19));
    return o;
}

enum MHD_Result srv_h_bundles_list(srv_req *r) {
    cg_arena *a = &r->arena;
    const char *params[16];
    int np = 0;
    cg_buf where = CG_BUF_INIT;
    cg_buf_puts(&where, "TRUE");
    unsigned long limit = 50;
    const char *ls = srv_query(r, "limit");
    if (ls) {
        if (!is_uint(ls) || (limit = strtoul(ls, NULL, 10)) < 1 || limit > 500) {
            cg_buf_free(&where);
            return srv_fail(r, "invalid_parameter", NULL, "limit must be an integer from 1 to 500");
        }
    }
    for (size_t k = 0; k < sizeof filters / sizeof filters[0]; k++) {
        const char *v = srv_query(r, filters[k].param);
        if (!v) continue;
        if (!strcmp(filters[k].param, "capture_step") && !is_uint(v)) {
            cg_buf_free(&where);
            return srv_fail(r, "invalid_parameter", NULL, "capture_step must be a non-negative integer");
        }
        params[np++] = v;
        cg_buf_puts(&where, " AND ");
        cg_buf_printf(&where, "%s $%d%s", filters[k].lhs, np, filters[k].cast);
    }
    const char *tag = srv_query(r, "tag");
    if (tag) {
        const char *colon = strchr(tag, ':');
        if (!colon || colon == tag) {
            cg_buf_free(&where);
            return srv_fail(r, "invalid_parameter", NULL, "tag must be key:value");
        }
        params[np++] = cg_arena_strndup(a, tag, (size_t)(colon - tag));
        params[np++] = colon + 1;
        cg_buf_printf(&where,
                      " AND EXISTS (SELECT 1 FROM bundle_tags t WHERE t.bundle_id = b.id AND t.key = $%d AND t.value = $%d)",
                      np - 1, np);
    }
    const char *cursor = srv_query(r, "cursor");
    if (cursor) {
        if (!is_uint(cursor)) {
            cg_buf_free(&where);
            return srv_fail(r, "invalid_parameter", NULL, "cursor is not one this server issued");
        }
        params[np++] = cursor;
        cg_buf_printf(&where, " AND b.seq < $%d::bigint", np);
    }
    params[np++] = cg_arena_printf(a, "%lu", limit + 1);
    char *sql = cg_arena_printf(a, "SELECT " SUMMARY_COLS " FROM bundles b WHERE %s ORDER BY b.seq DESC LIMIT $%d::int",
                                where.data, np);
    cg_buf_free(&where);
    cg_error err = {0};
    PGconn *c = srv_pool_get(r->s->pool, &err);
    if (!c) return srv_fail_unavailable(r, &err);
    char sqlstate[6];
    PGresult *x = srv_q(c, sql, np, params, NULL, sqlstate, &err);
    srv_pool_put(r->s->pool, c);
    if (!x) {
        if (!strncmp(sqlstate, "22", 2)) return srv_fail(r, "invalid_parameter", NULL, "invalid since/until timestamp");
        return srv_fail_unavailable(r, &err);
    }
    cg_jv *items = cg_jv_arr(a);
    int rows = PQntuples(x);
    int shown = rows > (int)limit ? (int)limit : rows;
    for (int i = 0; i < shown; i++) cg_jv_arr_push(a, items, summary_item(a, x, i));
    cg_jv *out = cg_jv_obj(a);
    cg_jv_obj_put(a, out, "items", items);
    cg_jv_obj_put(a, out, "next_cursor", rows > (int)limit ? cg_jv_str(a, PQgetvalue(x, shown - 1, 0)) : cg_jv_null(a));
    PQclear(x);
    return srv_reply_json(r, 200, out);
}

/* ------------------------------------------------------------ one bundle */

enum MHD_Result srv_h_bundle_get(srv_req *r) {
    WITH_BUNDLE(r, c, id);
    cg_arena *a = &r->arena;
    const char *p[1] = {id};
    PGresult *x = srv_q(c,
                        "SELECT b.id, b.run_id, convert_from(b.manifest, 'UTF8'), b.provenance, b.identity, b.health, "
                        "b.outcome, b.measured_ns, b.measured_span_count, b.signature, b.signer_key_id, "
                        "k.revoked_at IS NOT NULL, b.uploader_token_id, " TS("b.uploaded_at") ", b.campaign_id, "
                        "b.planned_name, b.semantic_status, b.evidence_schema, b.host, b.file_count, b.total_bytes, "
                        "b.measurement_scope FROM bundles b LEFT JOIN signer_keys k ON k.key_id = b.signer_key_id "
                        "WHERE b.id = $1",
                        1, p, NULL, NULL, &err);
    PGresult *f = x ? srv_q(c, "SELECT path, bytes, sha256 FROM bundle_files WHERE bundle_id = $1 ORDER BY path", 1, p,
                            NULL, NULL, &err)
                    : NULL;
    PGresult *t = f ? srv_q(c, "SELECT key, value FROM bundle_tags WHERE bundle_id = $1 ORDER BY key", 1, p, NULL, NULL,
                            &err)
                    : NULL;
    srv_pool_put(r->s->pool, c);
    if (!x || !f || !t || PQntuples(x) != 1) {
        PQclear(x);
        PQclear(f);
        PQclear(t);
        return srv_fail_unavailable(r, &err);
    }
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "id", str_or_null(a, x, 0, 0));
    cg_jv_obj_put(a, o, "run_id", str_or_null(a, x, 0, 1));
    cg_jv_obj_put(a, o, "manifest", parse_json_col(a, x, 0, 2));
    cg_jv *files = cg_jv_arr(a);
    for (int i = 0; i < PQntuples(f); i++) {
        cg_jv *fo = cg_jv_obj(a);
        cg_jv_obj_put(a, fo, "path", str_or_null(a, f, i, 0));
        cg_jv_obj_put(a, fo, "bytes", u64_or_null(a, f, i, 1));
        cg_jv_obj_put(a, fo, "sha256", str_or_null(a, f, i, 2));
        cg_jv_arr_push(a, files, fo);
    }
    cg_jv_obj_put(a, o, "files", files);
    cg_jv_obj_put(a, o, "file_count", u64_or_null(a, x, 0, 19));
    cg_jv_obj_put(a, o, "total_bytes", u64_or_null(a, x, 0, 20));
    cg_jv_obj_put(a, o, "provenance", parse_json_col(a, x, 0, 3));
    cg_jv_obj_put(a, o, "identity", parse_json_col(a, x, 0, 4));
    cg_jv *tags = cg_jv_obj(a);
    for (int i = 0; i < PQntuples(t); i++)
        cg_jv_obj_put(a, tags, cg_arena_strdup(a, PQgetvalue(t, i, 0)), cg_jv_str(a, PQgetvalue(t, i, 1)));
    cg_jv_obj_put(a, o, "tags", tags);
    cg_jv_obj_put(a, o, "health", parse_json_col(a, x, 0, 5));
    cg_jv_obj_put(a, o, "outcome", str_or_null(a, x, 0, 6));
    cg_jv *m = cg_jv_obj(a);
    cg_jv_obj_put(a, m, "measurement_scope", str_or_null(a, x, 0, 21));
    cg_jv_obj_put(a, m, "wall_ns", u64_or_null(a, x, 0, 7));
    cg_jv_obj_put(a, m, "measured_span_count", u64_or_null(a, x, 0, 8));
    cg_jv_obj_put(a, o, "measured", m);
    cg_jv *sem = cg_jv_obj(a);
    cg_jv_obj_put(a, sem, "status", str_or_null(a, x, 0, 16));
    cg_jv_obj_put(a, sem, "evidence_schema", str_or_null(a, x, 0, 17));
    cg_jv_obj_put(a, o, "semantic", sem);
    if (PQgetisnull(x, 0, 10)) {
        cg_jv_obj_put(a, o, "signature", cg_jv_null(a));
    } else {
        cg_jv *sg = cg_jv_obj(a);
        cg_jv_obj_put(a, sg, "algorithm", cg_jv_str(a, "ed25519"));
        cg_jv_obj_put(a, sg, "key_id", str_or_null(a, x, 0, 10));
        cg_jv_obj_put(a, sg, "signer_revoked", bool_col(a, x, 0, 11));
        cg_jv_obj_put(a, o, "signature", sg);
    }
    cg_jv_obj_put(a, o, "uploader", str_or_null(a, x, 0, 12));
    cg_jv_obj_put(a, o, "uploaded_at", str_or_null(a, x, 0, 13));
    cg_jv_obj_put(a, o, "host", str_or_null(a, x, 0, 18));
    if (PQgetisnull(x, 0, 14)) {
        cg_jv_obj_put(a, o, "campaign", cg_jv_null(a));
    } else {
        cg_jv *cp = cg_jv_obj(a);
        cg_jv_obj_put(a, cp, "campaign_id", str_or_null(a, x, 0, 14));
        cg_jv_obj_put(a, cp, "planned", str_or_null(a, x, 0, 15));
        cg_jv_obj_put(a, o, "campaign", cp);
    }
    PQclear(x);
    PQclear(f);
    PQclear(t);
    return srv_reply_json(r, 200, o);
}

enum MHD_Result srv_h_bundle_manifest(srv_req *r) {
    WITH_BUNDLE(r, c, id);
    const char *p[1] = {id};
    PGresult *x = PQexecParams(c, "SELECT manifest FROM bundles WHERE id = $1", 1, NULL, p, NULL, NULL, 1);
    srv_pool_put(r->s->pool, c);
    if (PQresultStatus(x) != PGRES_TUPLES_OK || PQntuples(x) != 1) {
        PQclear(x);
        return srv_fail(r, "unavailable", NULL, "the database is not reachable");
    }
    char etag[70];
    snprintf(etag, sizeof etag, "\"%s\"", id);
    const char *hdrs[] = {"ETag", etag, "Cache-Control", "public, max-age=31536000, immutable", NULL};
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
    WITH_BUNDLE(r, c, id);
    const char *p[2] = {id, r->params[1]};
    PGresult *x = srv_q(c, "SELECT sha256, bytes FROM bundle_files WHERE bundle_id = $1 AND path = $2", 2, p, NULL, NULL,
                        &err);
    if (!x) {
        srv_pool_put(r->s->pool, c);
        return srv_fail_unavailable(r, &err);
    }
    if (PQntuples(x) == 0) {
        PQclear(x);
        srv_pool_put(r->s->pool, c);
        return srv_fail(r, "not_found", NULL, "bundle %s has no file %s", id, r->params[1]);
    }
    char hex[65];
    snprintf(hex, sizeof hex, "%s", PQgetvalue(x, 0, 0));
    uint64_t want = strtoull(PQgetvalue(x, 0, 1), NULL, 10);
    PQclear(x);
    uint64_t size = 0;
    bool missing = false;
    int fd = srv_blob_open(&r->s->blobs, c, hex, &size, &missing, &err);
    srv_pool_put(r->s->pool, c);
    if (fd < 0 || size != want) {
        if (fd >= 0) close(fd);
        srv_log("error", "stored blob missing or damaged", "request_id", r->id, "sha256", hex, NULL);
        return srv_fail(r, "internal", NULL, "stored blob %s is missing or damaged; run candle-graph-server fsck", hex);
    }
    return srv_reply_fd(r, fd, size, ctype_for(r->params[1]), hex, true);
}

enum MHD_Result srv_h_bundle_archive(srv_req *r) {
    WITH_BUNDLE(r, c, id);
    char dir[PATH_MAX], bdir[PATH_MAX + 8], out[PATH_MAX + 16];
    tmpdir_for(r, "archive", dir, sizeof dir);
    snprintf(bdir, sizeof bdir, "%s/b", dir);
    snprintf(out, sizeof out, "%s/a.tar.zst", dir);
    int rc = materialize(r, c, id, bdir, &err);
    srv_pool_put(r->s->pool, c);
    if (rc == 0) rc = cg_archive_pack(bdir, out, true, &err);
    int fd = rc == 0 ? open(out, O_RDONLY | O_CLOEXEC) : -1;
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) != 0) {
        close(fd);
        fd = -1;
    }
    cg_rm_rf(dir); /* the open fd keeps the archive readable */
    if (fd < 0) {
        srv_log("error", "archive build failed", "request_id", r->id, "error", err.msg, NULL);
        return srv_fail(r, "internal", NULL, "cannot build the archive of bundle %s: %s", id, err.msg);
    }
    return srv_reply_fd(r, fd, (uint64_t)st.st_size, "application/zstd", NULL, false);
}

enum MHD_Result srv_h_bundle_signature(srv_req *r) {
    WITH_BUNDLE(r, c, id);
    const char *p[1] = {id};
    PGresult *x = srv_q(c, "SELECT signature FROM bundles WHERE id = $1", 1, p, NULL, NULL, &err);
    srv_pool_put(r->s->pool, c);
    if (!x) return srv_fail_unavailable(r, &err);
    if (PQntuples(x) != 1 || PQgetisnull(x, 0, 0)) {
        PQclear(x);
        return srv_fail(r, "not_found", NULL, "bundle %s was uploaded without a signature", id);
    }
    cg_jv *v = parse_json_col(&r->arena, x, 0, 0);
    PQclear(x);
    return srv_reply_json(r, 200, v);
}

/* Materializes the bundle and loads trace/nsight paths for derived views. */
static int stage_bundle(srv_req *r, PGconn *c, const char *id, const char *what, char *dir, size_t dirsz, char *trace,
                        char *nsight, cg_error *err) {
    char base[PATH_MAX];
    tmpdir_for(r, what, base, sizeof base);
    snprintf(dir, dirsz, "%s", base);
    if (materialize(r, c, id, base, err) < 0) return -1;
    if (snprintf(trace, PATH_MAX, "%s/trace.jsonl", base) >= PATH_MAX ||
        snprintf(nsight, PATH_MAX, "%s/nsight", base) >= PATH_MAX)
        return cg_err_set(err, CG_EINVAL, "path too long");
    if (!cg_is_dir(nsight)) nsight[0] = 0;
    return 0;
}

enum MHD_Result srv_h_bundle_evidence(srv_req *r) {
    WITH_BUNDLE(r, c, id);
    const char *p[1] = {id};
    PGresult *x = srv_q(c,
                        "SELECT f.sha256, f.bytes, b.semantic_status FROM bundles b LEFT JOIN bundle_files f ON "
                        "f.bundle_id = b.id AND f.path = 'evidence.json' WHERE b.id = $1",
                        1, p, NULL, NULL, &err);
    if (!x) {
        srv_pool_put(r->s->pool, c);
        return srv_fail_unavailable(r, &err);
    }
    bool stored = PQntuples(x) == 1 && !PQgetisnull(x, 0, 0) && !strcmp(PQgetvalue(x, 0, 2), "rederived_match");
    if (stored) {
        char hex[65];
        snprintf(hex, sizeof hex, "%s", PQgetvalue(x, 0, 0));
        PQclear(x);
        uint64_t size;
        bool missing;
        int fd = srv_blob_open(&r->s->blobs, c, hex, &size, &missing, &err);
        srv_pool_put(r->s->pool, c);
        if (fd < 0) return srv_fail(r, "internal", NULL, "stored blob %s is missing; run candle-graph-server fsck", hex);
        return srv_reply_fd(r, fd, size, JSON_CT, hex, true);
    }
    PQclear(x);
    /* not rederivable (other evidence schema): rebuild evidence/4 from the trace */
    char dir[PATH_MAX], trace[PATH_MAX], nsight[PATH_MAX];
    int rc = stage_bundle(r, c, id, "evidence", dir, sizeof dir, trace, nsight, &err);
    srv_pool_put(r->s->pool, c);
    cg_jv *ev = rc == 0 ? cg_evidence_build_json(&r->arena, trace, nsight[0] ? nsight : NULL, &err) : NULL;
    cg_rm_rf(dir);
    if (!ev) return srv_fail(r, "trace_invalid", NULL, "%s", err.msg);
    return srv_reply_json(r, 200, ev);
}

enum MHD_Result srv_h_bundle_graph(srv_req *r) {
    WITH_BUNDLE(r, c, id);
    char dir[PATH_MAX], trace[PATH_MAX], nsight[PATH_MAX];
    int rc = stage_bundle(r, c, id, "graph", dir, sizeof dir, trace, nsight, &err);
    srv_pool_put(r->s->pool, c);
    if (rc < 0) {
        cg_rm_rf(dir);
        return srv_fail(r, "internal", NULL, "cannot read bundle %s from the store: %s", id, err.msg);
    }
    cg_trace *t = cg_trace_read_file(trace, NULL, &err);
    cg_rm_rf(dir);
    if (!t) return srv_fail(r, "trace_invalid", NULL, "%s", err.msg);
    cg_health *h = cg_health_analyze(t);
    enum MHD_Result res;
    if (!h->structurally_valid || t->terminal.outcome == CG_OUTCOME_FAILED) {
        res = srv_fail(r, "trace_invalid", NULL,
                       "no execution graph is derived for a failed or structurally invalid capture");
    } else {
        cg_graph *g = cg_graph_build(t, h, &r->arena, &err);
        res = g ? srv_reply_json(r, 200, cg_graph_to_json(&r->arena, g)) : srv_fail(r, "trace_invalid", NULL, "%s", err.msg);
    }
    cg_health_free(h);
    cg_trace_free(t);
    return res;
}

enum MHD_Result srv_h_bundle_viewer(srv_req *r) {
    WITH_BUNDLE(r, c, id);
    const char *p[1] = {id};
    PGresult *x = srv_q(c, "SELECT sha256 FROM bundle_files WHERE bundle_id = $1 AND path = 'viewer.html'", 1, p, NULL,
                        NULL, &err);
    if (!x) {
        srv_pool_put(r->s->pool, c);
        return srv_fail_unavailable(r, &err);
    }
    if (PQntuples(x) == 1) {
        char hex[65];
        snprintf(hex, sizeof hex, "%s", PQgetvalue(x, 0, 0));
        PQclear(x);
        uint64_t size;
        bool missing;
        int fd = srv_blob_open(&r->s->blobs, c, hex, &size, &missing, &err);
        srv_pool_put(r->s->pool, c);
        if (fd < 0) return srv_fail(r, "internal", NULL, "stored blob %s is missing; run candle-graph-server fsck", hex);
        return srv_reply_fd(r, fd, size, "text/html; charset=utf-8", hex, true);
    }
    PQclear(x);
    char dir[PATH_MAX], trace[PATH_MAX], nsight[PATH_MAX];
    int rc = stage_bundle(r, c, id, "viewer", dir, sizeof dir, trace, nsight, &err);
    srv_pool_put(r->s->pool, c);
    cg_buf html = CG_BUF_INIT;
    if (rc == 0) rc = cg_render_bundle_artifacts(trace, nsight[0] ? nsight : NULL, NULL, NULL, &html, &err);
    cg_rm_rf(dir);
    if (rc < 0) {
        cg_buf_free(&html);
        return srv_fail(r, "trace_invalid", NULL, "%s", err.msg);
    }
    const char *hdrs[] = {"Content-Security-Policy", SRV_HTML_CSP, NULL};
    enum MHD_Result res = srv_reply_bytes(r, 200, "text/html; charset=utf-8", html.data, html.len, hdrs);
    cg_buf_free(&html);
    return res;
}
