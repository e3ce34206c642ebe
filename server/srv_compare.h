/* srv_compare.h — issue 7: comparison, span diffs, campaigns and series served
 * from per-bundle facts kept in the index (migrations/0002_compare_facts.sql).
 *
 * index_compare.c computes the facts of one bundle (cohort row, series point,
 * terminal reason, span/op/device-clock totals) and inserts them through the
 * caller's connection, inside the ingest transaction; bundles stored before the
 * facts existed are backfilled once from their stored trace.
 * routes_compare.c / routes_campaigns.c answer from those rows only.
 *
 * Ownership: nothing returned needs freeing; JSON lives in the request arena.
 * Errors: -1 with err ("database: …") and sqlstate (when non-NULL) set. */
#ifndef SRV_COMPARE_H
#define SRV_COMPARE_H

#include "srv.h"
#include "trace/health.h"
#include "trace/trace.h"

/* Inserts the facts of bundle `id` (whose bundle.json run ID is run_id). Runs
 * in the caller's transaction; the bundles row must exist. */
int srv_facts_insert(PGconn *c, const char *id, const char *run_id, const cg_trace *t, const cg_health *h,
                     char sqlstate[6], cg_error *err);

/* The per-path totals of a trace as a JSON array [{"k": "span"|"op"|"device",
 * "p": path, "t": total_ns, "n": occurrences}] (any order; paths in arena a):
 * span paths join names from the root with "/" (a missing parent or a cycle
 * ends the chain), closed spans only; op path = span path + "/" + op name;
 * device path = "device:<device>/<clock_id>" with the clock's busy time and
 * interval count. Totals saturate at 2^63-1. */
void srv_span_totals_json(cg_arena *a, const cg_trace *t, cg_buf *out);

/* Computes and stores the facts of an already stored bundle that has none
 * (reads its trace.jsonl blob once). Concurrent backfills of the same bundle
 * converge on one row. Runs its own transaction on c. */
int srv_facts_backfill(srv_server *s, PGconn *c, const char *id, cg_error *err);

/* Builds a PostgreSQL text[] literal of lowercase-hex ids (arena). */
const char *srv_id_array(cg_arena *a, const char *const *ids, size_t n);

/* Cohort resolution shared by /compare, /compare/spans and /series: the
 * argument is a comma list of ids / unique ≥ 12-hex prefixes, or a selector
 * (`campaign:<id>`, `implementation:<id>`) to which the GET /bundles list
 * filters of the request apply. */
typedef struct srv_cohort {
    const char **ids;   /* full ids, cohort order */
    const char **given; /* the token the client wrote for each id (selectors: the id) */
    size_t n;
} srv_cohort;

/* Parses + resolves one cohort. `text` is the query string form; `json`, when
 * non-NULL, is the POST body form (array of ids or a selector string). Returns
 * 1 when resolved, 0 after answering the request (4xx/503). */
int srv_cohort_resolve(srv_req *r, PGconn *c, const char *name, const char *text, const cg_jv *json,
                       srv_cohort *out, enum MHD_Result *res);

/* Loads one stored text fact column ("cohort_row" or "series_point") for each
 * id, backfilling bundles without facts. texts[i] (arena) belongs to ids[i].
 * 1 on success, 0 after answering. */
int srv_facts_load(srv_req *r, PGconn *c, const char *column, const char *const *ids, size_t n, const char **texts,
                   enum MHD_Result *res);

/* compare_cache.c: answers of /compare keyed by the resolved cohorts (ordered
 * ids). get returns a malloc'd copy (caller frees) or NULL on a miss. */
void srv_compare_cache_key(const srv_cohort *a, const srv_cohort *b, char key[65]);
char *srv_compare_cache_get(const char key[65], size_t *len, bool *ineligible);
void srv_compare_cache_put(const char key[65], const char *data, size_t len, bool ineligible);

enum MHD_Result srv_h_compare_get(srv_req *r);
enum MHD_Result srv_h_compare_post(srv_req *r);
enum MHD_Result srv_h_compare_spans(srv_req *r);
enum MHD_Result srv_h_campaign_put(srv_req *r);
enum MHD_Result srv_h_campaigns_list(srv_req *r);
enum MHD_Result srv_h_campaign_get(srv_req *r);
enum MHD_Result srv_h_campaign_status(srv_req *r);
enum MHD_Result srv_h_campaign_series(srv_req *r);
enum MHD_Result srv_h_series(srv_req *r);

#endif
