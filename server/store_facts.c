/* store_facts.c — SQL of the comparison facts, cohort id prefixes and span
 * diffs (srv_store.h). The reads take a pooled connection each; the insert runs
 * in the caller's transaction.
 * The path tree (one row per node and per total, a million each for a
 * 5M-record trace) streams in through COPY FROM STDIN in its text format,
 * written a chunk at a time: no statement per batch, no JSON to expand.
 * The path and total rows have no row-level foreign key (migration 0013):
 * they are written only after this transaction inserted the bundle's
 * bundle_facts row, whose key check holds the bundles row FOR KEY SHARE to
 * the end of the transaction, so the bundle exists and stays. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "srv_compare.h"
#include "srv_store.h"

static const char SQL_BEGIN[] = "BEGIN";
static const char SQL_COMMIT[] = "COMMIT";
static const char SQL_ROLLBACK[] = "ROLLBACK";

static const char SQL_FACTS_INSERT[] =
    "INSERT INTO bundle_facts (bundle_id, cohort_row, series_point, terminal_reason) "
    "VALUES ($1, $2, $3, $4) ON CONFLICT (bundle_id) DO NOTHING";

/* A tree's nodes are distinct by hash and its (kind, node) totals distinct.
 * A bundle published in the same transaction has no path rows yet (they
 * reference its row), so its nodes go straight into the table. A stored
 * bundle whose facts are backfilled may still have its path rows (only the
 * facts and totals rows are ever missing together): its nodes go through a
 * staging table, then in with ON CONFLICT DO NOTHING, as before. */
static const char SQL_FACTS_COPY[] =
    "COPY bundle_facts (bundle_id, cohort_row, series_point, terminal_reason) FROM STDIN";

static const char SQL_PATHS_COPY[] = "COPY bundle_span_paths (bundle_seq, hash, parent, name) FROM STDIN";

static const char SQL_PATHS_STAGE[] =
    "CREATE TEMP TABLE span_paths_in (LIKE bundle_span_paths INCLUDING DEFAULTS) ON COMMIT DROP";

static const char SQL_PATHS_STAGE_COPY[] = "COPY span_paths_in (bundle_seq, hash, parent, name) FROM STDIN";

static const char SQL_PATHS_FROM_STAGE[] =
    "INSERT INTO bundle_span_paths (bundle_seq, hash, parent, name) SELECT bundle_seq, hash, parent, name "
    "FROM span_paths_in ON CONFLICT DO NOTHING";

static const char SQL_TOTALS_COPY[] =
    "COPY bundle_span_totals (bundle_seq, kind, path_hash, total_ns, occurrences) FROM STDIN";

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
    "FROM unnest($1::text[]) AS u(id) JOIN bundles b ON b.id = u.id JOIN bundle_span_totals t ON t.bundle_seq = b.seq "
    "GROUP BY t.kind, t.path_hash ORDER BY t.kind COLLATE \"C\", t.path_hash";

static const char SQL_SPAN_NODES[] =
    "SELECT DISTINCT ON (s.hash) encode(s.hash, 'hex'), encode(s.parent, 'hex'), s.name "
    "FROM unnest($1::text[]) AS u(id) JOIN bundles b ON b.id = u.id JOIN bundle_span_paths s ON s.bundle_seq = b.seq "
    "ORDER BY s.hash";

static void facts_row(const void *src, size_t k, srv_copy_out *o) {
    const srv_facts_text *f = src;
    (void)k;
    cg_buf_puts(&o->b, f->id);
    cg_buf_putc(&o->b, '\t');
    srv_copy_text_out(o, f->cohort_row);
    cg_buf_putc(&o->b, '\t');
    srv_copy_text_out(o, f->series_point);
    cg_buf_putc(&o->b, '\t');
    if (f->terminal_reason) srv_copy_text_out(o, f->terminal_reason);
    else cg_buf_append(&o->b, "\\N", 2);
    cg_buf_putc(&o->b, '\n');
}

/* Rows go in ordered by their primary key (bundle_seq, hash) / (bundle_seq,
 * kind, path_hash): each lands next to the one before in the btree instead
 * of on a random page (measured: a third faster than first-seen order). The
 * order is a permutation of pointers; the tree itself is not touched. */
static int cmp_node(const void *x, const void *y) {
    return memcmp((*(const srv_path_node *const *)x)->hash, (*(const srv_path_node *const *)y)->hash, 32);
}

static const char *kind_name(char kind) { return kind == 's' ? "span" : kind == 'o' ? "op" : "device"; }

typedef struct total_ref {
    const srv_path_total *x;
    const unsigned char *hash;
} total_ref;

static int cmp_total(const void *x, const void *y) {
    const total_ref *a = x, *b = y;
    int c = strcmp(kind_name(a->x->kind), kind_name(b->x->kind));
    return c ? c : memcmp(a->hash, b->hash, 32);
}

typedef struct copy_src {
    const srv_path_totals *pt;
    const char *seq; /* the bundle's bundles.seq: the rows' key (migration 0014) */
    const srv_path_node **nodes; /* nodes in key order */
    total_ref *totals;           /* totals in key order */
} copy_src;

static void node_row(const void *from, size_t k, srv_copy_out *o) {
    const copy_src *src = from;
    cg_buf *b = &o->b;
    const srv_path_node *nd = src->nodes[k];
    cg_buf_puts(b, src->seq);
    cg_buf_putc(b, '\t');
    srv_copy_hash(b, nd->hash);
    cg_buf_putc(b, '\t');
    if (nd->parent == SRV_PATH_ROOT) cg_buf_append(b, "\\N", 2);
    else srv_copy_hash(b, src->pt->nodes[nd->parent].hash);
    cg_buf_putc(b, '\t');
    srv_copy_text(b, nd->name);
    cg_buf_putc(b, '\n');
}

static void total_row(const void *from, size_t k, srv_copy_out *o) {
    const copy_src *src = from;
    cg_buf *b = &o->b;
    const total_ref *r = &src->totals[k];
    cg_buf_printf(b, "%s\t%s\t", src->seq, kind_name(r->x->kind));
    srv_copy_hash(b, r->hash);
    cg_buf_printf(b, "\t%" PRIu64 "\t%" PRIu64 "\n", r->x->total, r->x->n);
}

/* A statement without parameters whose result is not needed. */
static int exec0(PGconn *c, const char *sql, char sqlstate[6], cg_error *err) {
    PGresult *x = srv_q(c, sql, 0, NULL, NULL, sqlstate, err);
    if (!x) return -1;
    PQclear(x);
    return 0;
}

static int copy_tree(PGconn *c, const srv_path_totals *pt, const char *id, bool new_bundle, char sqlstate[6],
                     cg_error *err) {
    char seq[24];
    if (srv_copy_bundle_seq(c, id, seq, sqlstate, err) < 0) return -1;
    copy_src src = {pt, seq, cg_xalloc(pt->n_nodes + 1, sizeof *src.nodes), NULL};
    for (size_t k = 0; k < pt->n_nodes; k++) src.nodes[k] = &pt->nodes[k];
    qsort(src.nodes, pt->n_nodes, sizeof *src.nodes, cmp_node);
    int rc = new_bundle ? srv_copy_rows(c, SQL_PATHS_COPY, &src, pt->n_nodes, node_row, sqlstate, err)
                        : exec0(c, SQL_PATHS_STAGE, sqlstate, err) < 0 ||
                                  srv_copy_rows(c, SQL_PATHS_STAGE_COPY, &src, pt->n_nodes, node_row, sqlstate, err) < 0 ||
                                  exec0(c, SQL_PATHS_FROM_STAGE, sqlstate, err) < 0
                              ? -1
                              : 0;
    cg_free(src.nodes);
    if (rc < 0) return -1;
    src.totals = cg_xalloc(pt->n_totals + 1, sizeof *src.totals);
    for (size_t k = 0; k < pt->n_totals; k++)
        src.totals[k] = (total_ref){&pt->totals[k], pt->nodes[pt->totals[k].node].hash};
    qsort(src.totals, pt->n_totals, sizeof *src.totals, cmp_total);
    rc = srv_copy_rows(c, SQL_TOTALS_COPY, &src, pt->n_totals, total_row, sqlstate, err);
    cg_free(src.totals);
    return rc;
}

int srv_store_facts_put(PGconn *c, const srv_facts_text *f, bool new_bundle, bool *inserted, char sqlstate[6],
                        cg_error *err) {
    if (new_bundle) { /* no facts row can exist yet: the texts stream in */
        if (srv_copy_rows(c, SQL_FACTS_COPY, f, 1, facts_row, sqlstate, err) < 0) return -1;
        *inserted = true;
        return copy_tree(c, f->paths, f->id, true, sqlstate, err);
    }
    const char *p[4] = {f->id, f->cohort_row, f->series_point, f->terminal_reason};
    PGresult *x = srv_q(c, SQL_FACTS_INSERT, 4, p, NULL, sqlstate, err);
    if (!x) return -1;
    *inserted = strcmp(PQcmdTuples(x), "1") == 0;
    PQclear(x);
    if (!*inserted) return 0;
    return copy_tree(c, f->paths, f->id, new_bundle, sqlstate, err);
}

int srv_store_facts_put_tx(srv_pool *p, const srv_facts_text *f, cg_error *err) {
    PGconn *c = srv_pool_get(p, err);
    if (!c) return -1;
    bool inserted;
    int rc = -1;
    if (srv_exec(c, SQL_BEGIN, err) == 0) {
        if (srv_store_facts_put(c, f, false, &inserted, NULL, err) == 0 && srv_exec(c, SQL_COMMIT, err) == 0) rc = 0;
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
