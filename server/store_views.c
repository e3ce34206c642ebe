/* store_views.c — the SQL of the dashboard views (srv_views.h): resolving a
 * bundle id, and finding the verified files a view index is built from
 * (trace.jsonl, nsight/). Statements are fixed; values are bound parameters. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "srv_views.h"

static const char SQL_RESOLVE[] = "SELECT id FROM bundles WHERE id LIKE $1 ORDER BY id LIMIT 2";
static const char SQL_TRACE[] = "SELECT sha256, bytes FROM bundle_files WHERE bundle_id = $1 AND path = 'trace.jsonl'";
static const char SQL_NSIGHT[] =
    "SELECT path, sha256 FROM bundle_files WHERE bundle_id = $1 AND left(path, 7) = 'nsight/' ORDER BY path";

int srv_views_resolve(srv_req *r, PGconn *c, char id[65], enum MHD_Result *res) {
    const char *p = r->params[0];
    size_t n = strlen(p);
    bool hex = n >= 12 && n <= 64;
    for (size_t i = 0; hex && i < n; i++) hex = (p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f');
    if (!hex) {
        *res = srv_fail(r, CG_R_INVALID_PARAMETER, srv_detail_param(r, "id"),
                        "a bundle id is 12 to 64 lowercase hex characters");
        return 0;
    }
    cg_error err = {0};
    const char *q[1] = {cg_arena_printf(&r->arena, "%s%%", p)};
    PGresult *x = srv_q(c, SQL_RESOLVE, 1, q, NULL, NULL, &err);
    if (!x) {
        *res = srv_fail_unavailable(r, &err);
        return 0;
    }
    int rows = PQntuples(x);
    if (rows == 1) snprintf(id, 65, "%s", PQgetvalue(x, 0, 0));
    PQclear(x);
    if (rows == 0) {
        *res = srv_fail(r, CG_R_NOT_FOUND, NULL, "no bundle with id %s", p);
        return 0;
    }
    if (rows > 1) {
        *res = srv_fail(r, CG_R_INVALID_PARAMETER, srv_detail_param(r, "id"), "bundle id prefix %s is ambiguous", p);
        return 0;
    }
    return 1;
}

int srv_views_trace_blob(PGconn *c, const char *id, char hex[65], uint64_t *bytes, cg_error *err) {
    const char *p[1] = {id};
    PGresult *x = srv_q(c, SQL_TRACE, 1, p, NULL, NULL, err);
    if (!x) return -1;
    int found = PQntuples(x) == 1;
    if (found) {
        snprintf(hex, 65, "%s", PQgetvalue(x, 0, 0));
        *bytes = strtoull(PQgetvalue(x, 0, 1), NULL, 10);
    }
    PQclear(x);
    return found;
}

int srv_views_place_nsight(srv_server *s, PGconn *c, const char *id, const char *dir, size_t *n, cg_error *err) {
    *n = 0;
    const char *p[1] = {id};
    PGresult *x = srv_q(c, SQL_NSIGHT, 1, p, NULL, NULL, err);
    if (!x) return -1;
    int rc = PQntuples(x) ? cg_mkdir_p(dir, err) : 0;
    for (int i = 0; rc == 0 && i < PQntuples(x); i++) {
        char *dst = cg_path_join(dir, PQgetvalue(x, i, 0));
        char parent[PATH_MAX], src[PATH_MAX];
        cg_path_parent(dst, parent, sizeof parent);
        rc = cg_mkdir_p(parent, err);
        bool linked = false;
        if (rc == 0 && s->blobs.kind == SRV_BLOB_FS) {
            srv_blob_path(&s->blobs, PQgetvalue(x, i, 1), src, sizeof src);
            linked = link(src, dst) == 0;
        }
        if (rc == 0 && !linked) {
            size_t len = 0;
            char *data = srv_blob_read(&s->blobs, c, PQgetvalue(x, i, 1), (size_t)s->cfg.max_decoded_bytes, &len, err);
            rc = data ? cg_write_file(dst, data, len, false, err) : -1;
            free(data);
        }
        free(dst);
        if (rc == 0) (*n)++;
    }
    PQclear(x);
    return rc;
}
