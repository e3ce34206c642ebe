/* store_facts.c — SQL of the comparison facts, cohort id prefixes and span
 * diffs (srv_store.h). The reads take a pooled connection each; the insert runs
 * in the caller's transaction.
 * Row sets go in as JSON expanded by json_to_recordset: one round trip each. */
#include <string.h>

#include "srv_compare.h"
#include "srv_store.h"

static const char SQL_BEGIN[] = "BEGIN";
static const char SQL_COMMIT[] = "COMMIT";
static const char SQL_ROLLBACK[] = "ROLLBACK";

static const char SQL_FACTS_INSERT[] =
    "INSERT INTO bundle_facts (bundle_id, cohort_row, series_point, terminal_reason) "
    "VALUES ($1, $2, $3, $4) ON CONFLICT (bundle_id) DO NOTHING";

static const char SQL_PATHS_INSERT[] =
    "INSERT INTO bundle_span_paths (bundle_id, hash, parent, name) "
    "SELECT $1, decode(r.h, 'hex'), decode(r.p, 'hex'), r.n FROM json_to_recordset($2::json) "
    "AS r(h text, p text, n text) ON CONFLICT DO NOTHING";

static const char SQL_TOTALS_INSERT[] =
    "INSERT INTO bundle_span_totals (bundle_id, kind, path_hash, total_ns, occurrences) "
    "SELECT $1, r.k, decode(r.h, 'hex'), r.t, r.n FROM json_to_recordset($2::json) "
    "AS r(k text, h text, t bigint, n bigint)";

static const char SQL_TRACE_OF[] =
    "SELECT b.run_id, f.sha256, f.bytes FROM bundles b JOIN bundle_files f ON f.bundle_id = b.id "
    "AND f.path = 'trace.jsonl' WHERE b.id = $1";

static const char SQL_FACTS_MISSING[] =
    "SELECT DISTINCT u.id FROM unnest($1::text[]) AS u(id) "
    "WHERE NOT EXISTS (SELECT 1 FROM bundle_facts f WHERE f.bundle_id = u.id)";

static const char SQL_RESOLVE_PREFIXES[] =
    "SELECT u.ord, b.id FROM unnest($1::text[]) WITH ORDINALITY AS u(p, ord) "
    "LEFT JOIN LATERAL (SELECT id FROM bundles WHERE id >= u.p AND id < u.p || 'g' ORDER BY id "
    "LIMIT 2) b ON true ORDER BY u.ord, b.id";

static const char SQL_FACTS_SERIES[] =
    "SELECT u.ord, f.series_point FROM unnest($1::text[]) WITH ORDINALITY AS u(id, ord) "
    "LEFT JOIN bundle_facts f ON f.bundle_id = u.id ORDER BY u.ord";

static const char SQL_FACTS_COHORT[] =
    "SELECT u.ord, f.cohort_row FROM unnest($1::text[]) WITH ORDINALITY AS u(id, ord) "
    "LEFT JOIN bundle_facts f ON f.bundle_id = u.id ORDER BY u.ord";

static const char SQL_SPAN_GROUPS[] =
    "SELECT t.kind, encode(t.path_hash, 'hex'), count(*), "
    "(array_agg(t.total_ns ORDER BY t.total_ns))[(count(*) + 1) / 2], "
    "(array_agg(t.total_ns ORDER BY t.total_ns))[count(*) / 2 + 1] "
    "FROM unnest($1::text[]) AS u(id) JOIN bundle_span_totals t ON t.bundle_id = u.id "
    "GROUP BY t.kind, t.path_hash ORDER BY t.kind COLLATE \"C\", t.path_hash";

static const char SQL_SPAN_NODES[] =
    "SELECT DISTINCT ON (s.hash) encode(s.hash, 'hex'), encode(s.parent, 'hex'), s.name "
    "FROM unnest($1::text[]) AS u(id) JOIN bundle_span_paths s ON s.bundle_id = u.id ORDER BY s.hash";

static int exec2(PGconn *c, const char *sql, const char *a, const char *b, char sqlstate[6], cg_error *err) {
    const char *p[2] = {a, b};
    PGresult *x = srv_q(c, sql, 2, p, NULL, sqlstate, err);
    if (!x) return -1;
    PQclear(x);
    return 0;
}

int srv_store_facts_put(PGconn *c, const srv_facts_text *f, bool *inserted, char sqlstate[6], cg_error *err) {
    const char *p[4] = {f->id, f->cohort_row, f->series_point, f->terminal_reason};
    PGresult *x = srv_q(c, SQL_FACTS_INSERT, 4, p, NULL, sqlstate, err);
    if (!x) return -1;
    *inserted = strcmp(PQcmdTuples(x), "1") == 0;
    PQclear(x);
    if (!*inserted) return 0;
    const srv_path_totals *pt = f->paths;
    cg_buf b = CG_BUF_INIT;
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < pt->n_nodes; k += SRV_FACTS_BATCH) {
        cg_buf_reset(&b);
        srv_path_nodes_json(pt, k, k + SRV_FACTS_BATCH, &b);
        rc = exec2(c, SQL_PATHS_INSERT, f->id, b.data, sqlstate, err);
    }
    for (size_t k = 0; rc == 0 && k < pt->n_totals; k += SRV_FACTS_BATCH) {
        cg_buf_reset(&b);
        srv_path_rows_json(pt, k, k + SRV_FACTS_BATCH, &b);
        rc = exec2(c, SQL_TOTALS_INSERT, f->id, b.data, sqlstate, err);
    }
    cg_buf_free(&b);
    return rc;
}

int srv_store_facts_put_tx(srv_pool *p, const srv_facts_text *f, cg_error *err) {
    PGconn *c = srv_pool_get(p, err);
    if (!c) return -1;
    bool inserted;
    int rc = -1;
    if (srv_exec(c, SQL_BEGIN, err) == 0) {
        if (srv_store_facts_put(c, f, &inserted, NULL, err) == 0 && srv_exec(c, SQL_COMMIT, err) == 0) rc = 0;
        else srv_exec(c, SQL_ROLLBACK, &(cg_error){0});
    }
    srv_pool_put(p, c);
    return rc;
}

static PGresult *q1(srv_pool *p, const char *sql, const char *a, cg_error *err) {
    const char *q[1] = {a};
    return srv_store_q(p, sql, 1, q, NULL, err);
}

PGresult *srv_store_trace_of(srv_pool *p, const char *id, cg_error *err) { return q1(p, SQL_TRACE_OF, id, err); }

PGresult *srv_store_facts_missing(srv_pool *p, const char *id_array, cg_error *err) {
    return q1(p, SQL_FACTS_MISSING, id_array, err);
}

PGresult *srv_store_span_groups(srv_pool *p, const char *id_array, cg_error *err) {
    return q1(p, SQL_SPAN_GROUPS, id_array, err);
}

PGresult *srv_store_span_nodes(srv_pool *p, const char *id_array, cg_error *err) {
    return q1(p, SQL_SPAN_NODES, id_array, err);
}

PGresult *srv_store_resolve_prefixes(srv_pool *p, const char *prefix_array, cg_error *err) {
    return q1(p, SQL_RESOLVE_PREFIXES, prefix_array, err);
}

PGresult *srv_store_facts_column(srv_pool *p, const char *id_array, bool series, cg_error *err) {
    return q1(p, series ? SQL_FACTS_SERIES : SQL_FACTS_COHORT, id_array, err);
}
