/* srv_compare.h — issue 7: comparison, span diffs, campaigns and series served
 * from per-bundle facts kept in the index (migrations/0002_compare_facts.sql).
 *
 * index_compare.c computes the facts of one bundle (cohort row, series point,
 * terminal reason, span/op/device-clock totals) before the ingest transaction,
 * which inserts them (store_facts.c); bundles stored before the
 * facts existed are backfilled once from their stored trace.
 * routes_compare.c / routes_campaigns.c answer from those rows only.
 *
 * Ownership: nothing returned needs freeing; JSON lives in the request arena.
 * Errors: -1 with err ("database: …") and sqlstate (when non-NULL) set. */
#ifndef SRV_COMPARE_H
#define SRV_COMPARE_H

#include "srv_store.h"
#include "trace/health.h"
#include "trace/trace.h"

/* The facts of bundle `id` (whose bundle.json run ID is run_id) as the store
 * inserts them (srv_store_facts_put), all in arena a (the cohort row and
 * series point behind the texts are scratch, freed before it returns; the
 * path tree's names are t's, so t must outlive the insert). clocks: the device clock
 * timings of t (cg_timing_analyze's device_clocks, n_clocks of them) when the
 * caller already has them, NULL to analyze t here. Of h only the verdicts
 * (structurally_valid, capture_complete) are read. CPU only. */
struct cg_device_clock_timing;
void srv_facts_compute(cg_arena *a, const char *id, const char *run_id, const cg_trace *t, const cg_health *h,
                       const struct cg_device_clock_timing *clocks, size_t n_clocks, srv_facts_text *out);

/* The per-path totals of a trace (span-diff input), linear in the trace.
 * A path is a node of a tree: a root's text is its name, a child's is its
 * parent's text + "/" + its name. A node is keyed by the SHA-256 of its text
 * (sha256(convert_to(text, 'UTF8')) in SQL), computed by continuing the
 * parent's hash state, so no path text is ever built: memory and rows stay
 * linear in the trace however deep its spans nest. Equal texts are one node. Span paths follow parent links from the root (a missing parent or a
 * cycle ends the chain), closed spans only; an op's path is its span's path
 * node + the op name; a device clock is the root "device:<device>/<clock_id>"
 * with the clock's busy time and interval count. Totals saturate at 2^63-1.
 * Everything lives in arena a. */
#define SRV_PATH_ROOT UINT32_MAX /* parent of a root */
typedef struct srv_path_node {
    unsigned char hash[32];
    const char *name;
    uint32_t parent; /* index into nodes; SRV_PATH_ROOT at a root */
} srv_path_node;

typedef struct srv_path_total {
    uint64_t total, n;
    uint32_t node; /* index into nodes */
    char kind;     /* 's' span, 'o' op, 'd' device */
} srv_path_total;

/* nodes: first-seen order (span nodes first, then op nodes, then device
 * clocks); totals: in the order each (node, kind) was first met. Node ids are
 * 32-bit: a trace has fewer spans + ops + clocks than 2^32 - 1 (the reader's
 * record limit). */
typedef struct srv_path_totals {
    srv_path_node *nodes;
    size_t n_nodes;
    srv_path_total *totals;
    size_t n_totals;
} srv_path_totals;

void srv_path_totals_build(cg_arena *a, const cg_trace *t, srv_path_totals *out);
/* The same with t's device clock timings given (see srv_facts_compute). */
void srv_path_totals_build_clocks(cg_arena *a, const cg_trace *t, const struct cg_device_clock_timing *clocks,
                                  size_t n_clocks, srv_path_totals *out);
/* Row sets for the index: nodes [{"h": hex, "p": hex|null, "n": name}],
 * totals [{"k": "span"|"op"|"device", "h": hex, "t": total_ns, "n": count}]. */
void srv_path_totals_json(const srv_path_totals *pt, cg_buf *nodes, cg_buf *totals);
/* The same for nodes (totals) [from, to) only, clamped to the tree: one
 * statement's row set (appended to the buffer). */
void srv_path_nodes_json(const srv_path_totals *pt, size_t from, size_t to, cg_buf *nodes);
void srv_path_rows_json(const srv_path_totals *pt, size_t from, size_t to, cg_buf *totals);
/* The text of node k (arena a); tests and diagnostics. */
const char *srv_path_text(cg_arena *a, const srv_path_totals *pt, size_t k);

/* Computes and stores the facts of an already stored bundle that has none
 * (reads its trace.jsonl blob once). Concurrent backfills of the same bundle
 * converge on one row. Connections are taken for the statements only (the
 * insert in its own transaction), none while the facts are computed. */
int srv_facts_backfill(srv_server *s, const char *id, cg_error *err);

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
int srv_cohort_resolve(srv_req *r, const char *name, const char *text, const cg_jv *json,
                       srv_cohort *out, enum MHD_Result *res);

/* Loads one stored text fact column ("cohort_row" or "series_point") for each
 * id, backfilling bundles without facts. texts[i] (arena) belongs to ids[i].
 * 1 on success, 0 after answering. */
int srv_facts_load(srv_req *r, const char *column, const char *const *ids, size_t n, const char **texts,
                   enum MHD_Result *res);

/* compare_cache.c: answers of /compare keyed by the resolved cohorts (ordered
 * ids). get returns a malloc'd copy (caller frees) or NULL on a miss. */
void srv_compare_cache_key(const srv_cohort *a, const srv_cohort *b, char key[65]);
char *srv_compare_cache_get(const char key[65], size_t *len, bool *ineligible);
void srv_compare_cache_put(const char key[65], const char *data, size_t len, bool ineligible);

/* GET /compare/spans answers 413 payload_too_large (detail.limit
 * "span_diff_path_bytes") rather than carry more path text than this: the text
 * of a path grows with its depth, so a deep chain's answer is quadratic in the
 * trace even though everything stored is linear. */
#define SRV_SPAN_DIFF_MAX_PATH_BYTES ((uint64_t)32 << 20)

/* PUT /campaigns/{id} refuses a manifest planning more captures with 413
 * payload_too_large (detail.limit "planned_captures"). */
#define SRV_MAX_PLANNED_CAPTURES 10000

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
