/* store_bundles.c — the SQL of the bundle read routes (srv_store.h): id
 * prefixes, the list and its filters, one bundle's rows, file references, the
 * cohort selectors, and blob reads that need a connection (pg blob store).
 * Every function takes a pooled connection for its statements and returns it
 * before returning; results (PGresult) stay valid without the connection. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "srv_store.h"
#include "base/alloc.h"

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"

static const char SQL_RESOLVE_ID[] = "SELECT id FROM bundles WHERE id LIKE $1 ORDER BY id LIMIT 2";

/* srv_store.h lists the column order (SRV_SUMMARY_*). */
static const char SQL_LIST_FMT[] =
    "SELECT b.seq, b.id, b.run_id, b.entrypoint, b.phase, b.device, b.capture_step, b.implementation_id, "
    "b.workload_id, b.outcome, b.structurally_valid, b.capture_complete, b.measured_ns, b.measured_span_count, "
    "b.signer_key_id, b.host, b.campaign_id, b.planned_name, " TS("b.uploaded_at") ", b.semantic_status "
    "FROM bundles b WHERE TRUE%s ORDER BY b.seq DESC LIMIT $%d::int";

static const char SQL_LIST_CURSOR_FMT[] = " AND b.seq < $%d::bigint";

static const char SQL_BUNDLE_ROW[] =
    "SELECT b.id, b.run_id, convert_from(b.manifest, 'UTF8'), b.provenance, b.identity, b.health, "
    "b.outcome, b.measured_ns, b.measured_span_count, b.signature, b.signer_key_id, "
    "k.revoked_at IS NOT NULL, b.uploader_token_id, " TS("b.uploaded_at") ", b.campaign_id, "
    "b.planned_name, b.semantic_status, b.evidence_schema, b.host, b.file_count, b.total_bytes, "
    "b.measurement_scope FROM bundles b LEFT JOIN signer_keys k ON k.key_id = b.signer_key_id "
    "WHERE b.id = $1";

static const char SQL_BUNDLE_FILES[] = "SELECT path, bytes, sha256 FROM bundle_files WHERE bundle_id = $1 ORDER BY path";

static const char SQL_BUNDLE_TAGS[] = "SELECT key, value FROM bundle_tags WHERE bundle_id = $1 ORDER BY key";

static const char SQL_MANIFEST[] = "SELECT manifest FROM bundles WHERE id = $1";

static const char SQL_SIGNATURE[] = "SELECT signature FROM bundles WHERE id = $1";

static const char SQL_FILE_REF[] = "SELECT sha256, bytes FROM bundle_files WHERE bundle_id = $1 AND path = $2";

static const char SQL_EVIDENCE_REF[] =
    "SELECT f.sha256, f.bytes, b.semantic_status FROM bundles b LEFT JOIN bundle_files f ON "
    "f.bundle_id = b.id AND f.path = 'evidence.json' WHERE b.id = $1";

static const char SQL_FILES_UNDER[] =
    "SELECT path, sha256 FROM bundle_files WHERE bundle_id = $1 AND left(path, length($2)) = $2 ORDER BY path";

static const char SQL_PING[] = "SELECT 1";

static const char SQL_BLOB_TOTALS[] =
    "SELECT coalesce(sum(bytes), 0), count(*) FROM (SELECT DISTINCT sha256, bytes FROM bundle_files) b";

/* Cohort selectors: the base condition binds the selector's argument as $1. */
static const char SQL_COHORT_FMT[] = "SELECT b.id FROM bundles b WHERE %s%s ORDER BY %s LIMIT %d";
static const struct {
    const char *where, *order;
} SELECTORS[] = {
    [SRV_SEL_IMPLEMENTATION] = {"b.implementation_id = $1", "b.seq"},
    [SRV_SEL_ID_ARRAY] = {"b.id = ANY($1::text[])", "array_position($1::text[], b.id)"},
    [SRV_SEL_COMMIT] = {"b.id IN (SELECT bundle_id FROM bundle_revisions WHERE starts_with(commit_sha, $1))", "b.id"},
    [SRV_SEL_BRANCH] = {"b.id IN (SELECT bundle_id FROM bundle_revisions WHERE branch = $1 AND commit_sha = "
                        "(SELECT commit_sha FROM bundle_revisions WHERE branch = $1 "
                        "ORDER BY commit_time DESC, commit_sha DESC LIMIT 1))",
                        "b.id"},
};

/* The GET /bundles list filters: each a fixed fragment "<lhs> $n<cast>". */
static const struct {
    const char *param, *lhs, *cast;
} FILTERS[] = {
    {"entrypoint", "b.entrypoint =", ""},
    {"phase", "b.phase =", ""},
    {"device", "b.device =", ""},
    {"implementation_id", "b.implementation_id =", ""},
    {"workload_id", "b.workload_id =", ""},
    {"campaign", "b.campaign_id =", ""},
    {"capture_step", "b.capture_step =", "::numeric"},
    {"outcome", "b.outcome =", ""},
    {"signer", "b.signer_key_id =", ""},
    {"since", "b.uploaded_at >=", "::timestamptz"},
    {"until", "b.uploaded_at <", "::timestamptz"},
    /* issue 15: revision filters (a commit hash or prefix, a branch) */
    {"commit", "EXISTS (SELECT 1 FROM bundle_revisions v WHERE v.bundle_id = b.id AND starts_with(v.commit_sha,", "))"},
    {"branch", "EXISTS (SELECT 1 FROM bundle_revisions v WHERE v.bundle_id = b.id AND v.branch =", ")"},
};

static const char SQL_TAG_FILTER_FMT[] =
    " AND EXISTS (SELECT 1 FROM bundle_tags t WHERE t.bundle_id = b.id AND t.key = $%d AND t.value = $%d)";

/* ------------------------------------------------------------ filters */

const char *srv_bundle_filter_param(size_t k) {
    return k < sizeof FILTERS / sizeof FILTERS[0] ? FILTERS[k].param : NULL;
}

void srv_where_init(srv_where *w, const char *arg) {
    memset(w, 0, sizeof *w);
    if (arg) w->params[w->n++] = arg;
}

void srv_where_free(srv_where *w) { cg_buf_free(&w->sql); }

static bool where_bind(srv_where *w, const char *value, const char *name, const char *cast) {
    if (w->n >= SRV_WHERE_MAX - 2) return false; /* two slots stay for cursor and limit */
    w->names[w->n] = name;
    w->casts[w->n] = cast;
    w->params[w->n++] = value;
    return true;
}

bool srv_where_filter(srv_where *w, size_t k, const char *value) {
    if (!srv_bundle_filter_param(k) || !where_bind(w, value, FILTERS[k].param, FILTERS[k].cast)) return false;
    cg_buf_printf(&w->sql, " AND %s $%d%s", FILTERS[k].lhs, w->n, FILTERS[k].cast);
    return true;
}

bool srv_where_tag(srv_where *w, const char *key, const char *value) {
    if (!where_bind(w, key, NULL, NULL) || !where_bind(w, value, NULL, NULL)) return false;
    cg_buf_printf(&w->sql, SQL_TAG_FILTER_FMT, w->n - 1, w->n);
    return true;
}

/* ------------------------------------------------------------ reads */

int srv_store_bundle_resolve(srv_pool *p, const char *prefix, char id[65], cg_error *err) {
    char like[80];
    snprintf(like, sizeof like, "%s%%", prefix);
    const char *q[1] = {like};
    PGresult *x = srv_store_q(p, SQL_RESOLVE_ID, 1, q, NULL, err);
    if (!x) return -1;
    int rows = PQntuples(x);
    if (rows == 1) snprintf(id, 65, "%s", PQgetvalue(x, 0, 0));
    PQclear(x);
    return rows;
}

PGresult *srv_store_bundle_list(srv_pool *p, srv_where *w, const char *cursor, unsigned limit, const char **bad,
                                char sqlstate[6], cg_error *err) {
    if (cursor) {
        w->params[w->n++] = cursor;
        cg_buf_printf(&w->sql, SQL_LIST_CURSOR_FMT, w->n);
    }
    char lim[16];
    snprintf(lim, sizeof lim, "%u", limit);
    w->params[w->n++] = lim;
    cg_buf sql = CG_BUF_INIT;
    cg_buf_printf(&sql, SQL_LIST_FMT, w->sql.data ? w->sql.data : "", w->n);
    PGresult *x = srv_store_q_where(p, sql.data, w, bad, sqlstate, err);
    cg_buf_free(&sql);
    return x;
}

PGresult *srv_store_cohort_ids(srv_pool *p, srv_selector sel, srv_where *w, int limit, const char **bad,
                               char sqlstate[6], cg_error *err) {
    cg_buf sql = CG_BUF_INIT;
    cg_buf_printf(&sql, SQL_COHORT_FMT, SELECTORS[sel].where, w->sql.data ? w->sql.data : "", SELECTORS[sel].order,
                  limit);
    PGresult *x = srv_store_q_where(p, sql.data, w, bad, sqlstate, err);
    cg_buf_free(&sql);
    return x;
}

int srv_store_bundle_detail(srv_pool *p, const char *id, srv_bundle_rows *out, cg_error *err) {
    memset(out, 0, sizeof *out);
    const char *q[1] = {id};
    PGconn *c = srv_pool_get(p, err);
    if (!c) return -1;
    out->row = srv_q(c, SQL_BUNDLE_ROW, 1, q, NULL, NULL, err);
    out->files = out->row ? srv_q(c, SQL_BUNDLE_FILES, 1, q, NULL, NULL, err) : NULL;
    out->tags = out->files ? srv_q(c, SQL_BUNDLE_TAGS, 1, q, NULL, NULL, err) : NULL;
    srv_pool_put(p, c);
    if (out->tags && PQntuples(out->row) == 1) return 0;
    if (out->tags) cg_err_set(err, CG_EIO, "database: bundle %s vanished while read", id);
    srv_store_bundle_rows_clear(out);
    return -1;
}

void srv_store_bundle_rows_clear(srv_bundle_rows *rows) {
    PQclear(rows->row);
    PQclear(rows->files);
    PQclear(rows->tags);
    memset(rows, 0, sizeof *rows);
}

PGresult *srv_store_bundle_manifest(srv_pool *p, const char *id, cg_error *err) {
    const char *q[1] = {id};
    return srv_store_q_binary(p, SQL_MANIFEST, 1, q, err);
}

PGresult *srv_store_bundle_signature(srv_pool *p, const char *id, cg_error *err) {
    const char *q[1] = {id};
    return srv_store_q(p, SQL_SIGNATURE, 1, q, NULL, err);
}

int srv_store_file_ref(srv_pool *p, const char *id, const char *path, char hex[65], uint64_t *bytes, cg_error *err) {
    const char *q[2] = {id, path};
    PGresult *x = srv_store_q(p, SQL_FILE_REF, 2, q, NULL, err);
    if (!x) return -1;
    int found = PQntuples(x) > 0;
    if (found) {
        snprintf(hex, 65, "%s", PQgetvalue(x, 0, 0));
        if (bytes) *bytes = strtoull(PQgetvalue(x, 0, 1), NULL, 10);
    }
    PQclear(x);
    return found;
}

int srv_store_evidence_ref(srv_pool *p, const char *id, char hex[65], cg_error *err) {
    const char *q[1] = {id};
    PGresult *x = srv_store_q(p, SQL_EVIDENCE_REF, 1, q, NULL, err);
    if (!x) return -1;
    int stored = PQntuples(x) == 1 && !PQgetisnull(x, 0, 0) && !strcmp(PQgetvalue(x, 0, 2), "rederived_match");
    if (stored) snprintf(hex, 65, "%s", PQgetvalue(x, 0, 0));
    PQclear(x);
    return stored;
}

PGresult *srv_store_files_under(srv_pool *p, const char *id, const char *prefix, cg_error *err) {
    const char *q[2] = {id, prefix};
    return srv_store_q(p, SQL_FILES_UNDER, 2, q, NULL, err);
}

/* ------------------------------------------------------------ blobs and health */

int srv_store_blob_open(srv_server *s, const char *hex, uint64_t *size, bool *missing, cg_error *err) {
    if (s->blobs.kind != SRV_BLOB_PG) return srv_blob_open(&s->blobs, NULL, hex, size, missing, err);
    PGconn *c = srv_pool_get(s->pool, err);
    if (!c) return -1;
    int fd = srv_blob_open(&s->blobs, c, hex, size, missing, err);
    srv_pool_put(s->pool, c);
    return fd;
}

char *srv_store_blob_read(srv_server *s, const char *hex, size_t max, size_t *len, cg_error *err) {
    if (s->blobs.kind != SRV_BLOB_PG) return srv_blob_read(&s->blobs, NULL, hex, max, len, err);
    PGconn *c = srv_pool_get(s->pool, err);
    if (!c) return NULL;
    char *data = srv_blob_read(&s->blobs, c, hex, max, len, err);
    srv_pool_put(s->pool, c);
    return data;
}

void srv_store_ready(srv_server *s, bool *db_ok, bool *store_ok, cg_error *err) {
    *db_ok = *store_ok = false;
    PGconn *c = srv_pool_get(s->pool, err);
    if (!c) return;
    PGresult *x = srv_q(c, SQL_PING, 0, NULL, NULL, NULL, err);
    *db_ok = x != NULL;
    PQclear(x);
    if (*db_ok) *store_ok = srv_blob_ready(&s->blobs, c, err) == 0;
    srv_pool_put(s->pool, c);
}

void srv_store_blob_at_rest(srv_server *s, srv_blob_totals *t) {
    cg_error err = {0};
    PGconn *c = s->blobs.kind == SRV_BLOB_PG ? srv_pool_get(s->pool, &err) : NULL;
    if (s->blobs.kind == SRV_BLOB_PG && !c) {
        memset(t, 0, sizeof *t);
        t->stored = t->plain = -1;
        return;
    }
    srv_blob_totals_get(&s->blobs, c, t);
    if (c) srv_pool_put(s->pool, c);
}

int srv_store_blob_totals(srv_pool *p, int64_t *bytes, int64_t *count, cg_error *err) {
    PGresult *x = srv_store_q(p, SQL_BLOB_TOTALS, 0, NULL, NULL, err);
    if (!x) return -1;
    *bytes = strtoll(PQgetvalue(x, 0, 0), NULL, 10);
    *count = strtoll(PQgetvalue(x, 0, 1), NULL, 10);
    PQclear(x);
    return 0;
}

/* Places the stored files of id whose path starts with prefix under dir:
 * hard links to plain fs blobs, decompressed copies otherwise (srv_blob_place).
 * *n receives the count. */
int srv_store_place_files(srv_server *s, const char *id, const char *prefix, const char *dir, size_t *n, cg_error *err) {
    *n = 0;
    PGresult *x = srv_store_files_under(s->pool, id, prefix, err);
    int rc = x && cg_mkdir_p(dir, err) == 0 ? 0 : -1;
    for (int i = 0; rc == 0 && i < PQntuples(x); i++) {
        char *dst = cg_path_join(dir, PQgetvalue(x, i, 0));
        char parent[PATH_MAX];
        cg_path_parent(dst, parent, sizeof parent);
        rc = cg_mkdir_p(parent, err);
        if (rc == 0) {
            uint64_t size;
            bool missing;
            int fd = srv_store_blob_open(s, PQgetvalue(x, i, 1), &size, &missing, err);
            rc = fd < 0 ? -1 : srv_blob_place(&s->blobs, fd, PQgetvalue(x, i, 1), dst, err);
        }
        cg_free(dst);
        if (rc == 0) (*n)++;
    }
    PQclear(x);
    return rc;
}
