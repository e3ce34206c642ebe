/* srv_store.h — the store layer (issue 13): server/store_*.c own every SQL
 * statement of the server, each a named static const string (a structural test,
 * tests/integration/test_server_store_layer.sh, fails on SQL anywhere else).
 * Handlers parse the request, call the store, and build the answer from what
 * it returned.
 *
 * Connections: functions taking an srv_pool (or srv_server) take a pooled
 * connection for their statements and return it before they return, so no
 * handler holds one while it computes (http.c counts any answer queued while
 * the thread still holds one: cg_db_pool_held_at_reply_total in
 * /metrics). Functions taking a PGconn run inside a transaction or connection
 * the caller owns (ingest's commit, offline commands, background jobs).
 *
 * Ownership: a returned PGresult is the caller's (PQclear); it stays valid
 * after the connection went back. Errors: NULL / -1 with err ("database: …")
 * and, where given, sqlstate (srv_q). */
#ifndef SRV_STORE_H
#define SRV_STORE_H

#include "srv.h"
#include "base/json.h"
#include "trace/trace.h"

/* ------------------------------------------------------------ COPY (store_copy.c) */

/* Rows of a COPY … FROM STDIN (text format) are written into b and sent
 * whenever it holds SRV_COPY_CHUNK bytes; sent turns false once a send failed
 * (nothing more is sent, srv_copy_rows then fails). */
#define SRV_COPY_CHUNK (256u << 10)
typedef struct srv_copy_out {
    PGconn *c;
    cg_buf b;
    bool sent;
} srv_copy_out;
typedef void (*srv_copy_row_fn)(const void *src, size_t k, srv_copy_out *o);

/* n bytes of a text in COPY's text format: backslash, tab, newline and
 * carriage return escaped (trace strings carry no NUL: ingest refuses them). */
void srv_copy_text_n(cg_buf *b, const char *s, size_t n);
void srv_copy_text(cg_buf *b, const char *s);
/* A 32-byte hash as a bytea in COPY text ("\\x" + hex: the backslash escaped). */
void srv_copy_hash(cg_buf *b, const unsigned char h[32]);
/* Sends the buffered rows when they are a chunk (or any, when all). */
void srv_copy_flush(srv_copy_out *o, bool all);
/* srv_copy_text of a text of any length, sent a chunk at a time (a facts text
 * of a 5M-record trace is tens of MB: never copied whole into libpq's buffer). */
void srv_copy_text_out(srv_copy_out *o, const char *s);
/* The bundles.seq of bundle id as decimal text: the key of its bulk fact rows
 * (migration 0014). 0, or -1 with err (and sqlstate) when the query fails, or
 * CG_ESTATE when the bundle has no row (callers run in the transaction that
 * inserted it or holds it FOR KEY SHARE, so that is a bug, not input). */
int srv_copy_bundle_seq(PGconn *c, const char *id, char seq[24], char sqlstate[6], cg_error *err);
/* COPY sql FROM STDIN in the caller's transaction, rows [0, n) written by row
 * (which may flush); the statement's result is read to its end whatever
 * happened, so the connection is ready for the next statement (or the
 * rollback). 0, or -1 with err and sqlstate. */
int srv_copy_rows(PGconn *c, const char *sql, const void *src, size_t n, srv_copy_row_fn row, char sqlstate[6],
                  cg_error *err);

/* One bundle's facts: cohort row, series point and terminal reason (may be
 * NULL) as text, and its path tree (srv_compare.h), streamed in by COPY in
 * chunks of rows (store_facts.c), so that neither this process nor the
 * database holds the whole tree as text. */
struct srv_path_totals;
typedef struct srv_facts_text {
    const char *id, *cohort_row, *series_point, *terminal_reason;
    const struct srv_path_totals *paths;
} srv_facts_text;

/* Inserts them in the caller's transaction; a bundle that already has facts is
 * left alone (*inserted = false). new_bundle: the bundle's row was inserted in
 * this same transaction (ingest), so none of its path rows can exist yet;
 * false (backfill): path nodes already stored are kept. */
int srv_store_facts_put(PGconn *c, const srv_facts_text *f, bool new_bundle, bool *inserted, char sqlstate[6],
                        cg_error *err);
/* The same in a transaction of its own on a pooled connection (backfill). */
int srv_store_facts_put_tx(srv_pool *p, const srv_facts_text *f, cg_error *err);
/* run_id, trace.jsonl sha256 and bytes of bundle id (0 or 1 row). */
PGresult *srv_store_trace_of(srv_pool *p, const char *id, cg_error *err);
/* The ids of a text[] literal without facts (DISTINCT). */
PGresult *srv_store_facts_missing(srv_pool *p, const char *id_array, cg_error *err);
/* For each entry of a text[] literal of ≥ 12-hex prefixes, in order: its
 * 1-based ordinal and up to two ids starting with it (NULL id: none). */
PGresult *srv_store_resolve_prefixes(srv_pool *p, const char *prefix_array, cg_error *err);
/* ordinal and the series_point (series) or cohort_row fact of each id of a
 * text[] literal, in order (NULL: no facts yet). */
PGresult *srv_store_facts_column(srv_pool *p, const char *id_array, bool series, cg_error *err);
/* Per (kind, path hash) over the cohort's bundles: kind, hex hash, runs, the two
 * middle per-run totals; ordered by kind (byte order), hash. */
PGresult *srv_store_span_groups(srv_pool *p, const char *id_array, cg_error *err);
/* The path nodes of the bundles (one row per hash): hex hash, hex parent|NULL, name. */
PGresult *srv_store_span_nodes(srv_pool *p, const char *id_array, cg_error *err);

/* ------------------------------------------------------------ store_query.c */

/* One statement on a pooled connection taken and returned here (text results). */
PGresult *srv_store_q(srv_pool *p, const char *sql, int n, const char *const *params, char sqlstate[6],
                      cg_error *err);
/* The same with binary results (exact bytes of a bytea column). */
PGresult *srv_store_q_binary(srv_pool *p, const char *sql, int n, const char *const *params, cg_error *err);

/* A bundle filter condition: SQL fragments from the store's filter table,
 * values bound as parameters (with their names and casts, so that a class-22
 * failure names the parameter). params[0] is a selector's argument when given. */
#define SRV_WHERE_MAX 24
typedef struct srv_where {
    cg_buf sql; /* " AND …" fragments */
    const char *params[SRV_WHERE_MAX], *names[SRV_WHERE_MAX], *casts[SRV_WHERE_MAX];
    int n;
} srv_where;

void srv_where_init(srv_where *w, const char *arg);
void srv_where_free(srv_where *w);
/* The query parameter name of list filter k (0..), NULL past the last one. */
const char *srv_bundle_filter_param(size_t k);
/* Binds value to filter k / a tag key:value; false when the set is full. */
bool srv_where_filter(srv_where *w, size_t k, const char *value);
bool srv_where_tag(srv_where *w, const char *key, const char *value);
/* Runs sql with w's parameters; after a SQLSTATE class-22 failure *bad names
 * the first parameter whose value does not convert with its cast (or NULL). */
PGresult *srv_store_q_where(srv_pool *p, const char *sql, const srv_where *w, const char **bad, char sqlstate[6],
                            cg_error *err);
/* That check on a connection the caller holds (one "SELECT $1<cast>" each). */
const char *srv_store_sql22_param(PGconn *c, int n, const char *const *values, const char *const *casts,
                                  const char *const *names);

/* ------------------------------------------------------------ store_bundles.c */

/* Full id of a ≥ 12-hex prefix: the number of matches (0, 1 = id filled, 2 =
 * ambiguous) or -1. */
int srv_store_bundle_resolve(srv_pool *p, const char *prefix, char id[65], cg_error *err);

/* GET /bundles page: limit rows (ask one more to know about a next page),
 * newest first, below cursor (a seq) when given. Columns: */
enum {
    SRV_SUMMARY_SEQ, SRV_SUMMARY_ID, SRV_SUMMARY_RUN_ID, SRV_SUMMARY_ENTRYPOINT, SRV_SUMMARY_PHASE,
    SRV_SUMMARY_DEVICE, SRV_SUMMARY_CAPTURE_STEP, SRV_SUMMARY_IMPLEMENTATION, SRV_SUMMARY_WORKLOAD,
    SRV_SUMMARY_OUTCOME, SRV_SUMMARY_VALID, SRV_SUMMARY_COMPLETE, SRV_SUMMARY_MEASURED_NS, SRV_SUMMARY_MEASURED_COUNT,
    SRV_SUMMARY_SIGNER, SRV_SUMMARY_HOST, SRV_SUMMARY_CAMPAIGN, SRV_SUMMARY_PLANNED, SRV_SUMMARY_UPLOADED_AT,
    SRV_SUMMARY_SEMANTIC,
};
PGresult *srv_store_bundle_list(srv_pool *p, srv_where *w, const char *cursor, unsigned limit, const char **bad,
                                char sqlstate[6], cg_error *err);

/* Cohort selectors (routes_compare.c); w was initialised with the argument. */
typedef enum srv_selector { SRV_SEL_IMPLEMENTATION, SRV_SEL_ID_ARRAY, SRV_SEL_COMMIT, SRV_SEL_BRANCH } srv_selector;
PGresult *srv_store_cohort_ids(srv_pool *p, srv_selector sel, srv_where *w, int limit, const char **bad,
                               char sqlstate[6], cg_error *err);

/* One bundle: its row (columns in SQL_BUNDLE_ROW order, see routes_bundles.c),
 * files (path, bytes, sha256) and tags (key, value). 0, or -1 (err; nothing to clear). */
typedef struct srv_bundle_rows {
    PGresult *row, *files, *tags;
} srv_bundle_rows;
int srv_store_bundle_detail(srv_pool *p, const char *id, srv_bundle_rows *out, cg_error *err);
void srv_store_bundle_rows_clear(srv_bundle_rows *rows);
PGresult *srv_store_bundle_manifest(srv_pool *p, const char *id, cg_error *err); /* binary: exact bytes */
PGresult *srv_store_bundle_signature(srv_pool *p, const char *id, cg_error *err);
/* The blob of one stored file: 1 (hex, *bytes filled), 0 no such file, -1. */
int srv_store_file_ref(srv_pool *p, const char *id, const char *path, char hex[65], uint64_t *bytes, cg_error *err);
/* 1 when evidence.json is stored and was rederived at ingest (hex filled), 0 otherwise, -1. */
int srv_store_evidence_ref(srv_pool *p, const char *id, char hex[65], cg_error *err);
/* path, sha256 of the files whose path starts with prefix, by path. */
PGresult *srv_store_files_under(srv_pool *p, const char *id, const char *prefix, cg_error *err);

/* Places the stored files of bundle id whose path starts with prefix under dir
 * (hard links to plain fs blobs, decompressed copies otherwise); *n receives
 * their count. 0 or -1 with err. */
int srv_store_place_files(srv_server *s, const char *id, const char *prefix, const char *dir, size_t *n, cg_error *err);
/* Blob reads through the store: a connection is taken only for the pg kind. */
int srv_store_blob_open(srv_server *s, const char *hex, uint64_t *size, bool *missing, cg_error *err);
char *srv_store_blob_read(srv_server *s, const char *hex, size_t max, size_t *len, cg_error *err);
/* /readyz: the database answers, the blob store is reachable. */
void srv_store_ready(srv_server *s, bool *db_ok, bool *store_ok, cg_error *err);
/* Distinct stored blob bytes and count (/metrics). */
int srv_store_blob_totals(srv_pool *p, int64_t *bytes, int64_t *count, cg_error *err);
/* The blob store at rest (/metrics): srv_blob_totals_get, with a pooled
 * connection only for the pg store's own table; -1 totals when none is free. */
void srv_store_blob_at_rest(srv_server *s, srv_blob_totals *t);

/* ------------------------------------------------------------ store_campaigns.c */

/* The stored rows of one campaign: campaign (manifest text, manifest_sha256,
 * created_at) and captures, one row per planned capture by position: */
enum {
    SRV_CAP_NAME, SRV_CAP_BUNDLE, SRV_CAP_RUN_ID, SRV_CAP_ENTRYPOINT, SRV_CAP_STEP, SRV_CAP_OUTCOME,
    SRV_CAP_TERMINAL_REASON, SRV_CAP_HOST, SRV_CAP_DEVICE, SRV_CAP_FAILED_MESSAGE, SRV_CAP_FAILED_HOST,
    SRV_CAP_FAILED_DEVICE, SRV_CAP_NEEDS_FACTS, SRV_CAP_POSITION,
};
typedef struct srv_campaign_rows {
    PGresult *campaign, *captures;
} srv_campaign_rows;
/* The rows of n campaigns through one pooled connection (returned before this
 * returns): 1 all found, 0 one does not exist, -1 (err). Nothing to clear
 * unless 1. */
int srv_store_campaign_rows(srv_pool *p, const char *const *ids, size_t n, srv_campaign_rows *out, cg_error *err);
void srv_store_campaign_rows_clear(srv_campaign_rows *rows);
/* Up to limit campaign ids after `after` (byte order; NULL = from the start). */
PGresult *srv_store_campaign_ids(srv_pool *p, const char *after, unsigned limit, cg_error *err);
/* Creates the campaign and its planned captures (captures_json: [{"n": name,
 * "s": capture_step, "p": position}]) or compares with the stored one:
 * *status 201 created, 200 identical, 409 different. 0 or -1. */
int srv_store_campaign_put(srv_pool *p, const char *cid, const char *manifest, const char *sha,
                           const char *captures_json, unsigned *status, cg_error *err);
/* 1 when campaign cid plans a capture `name`, 0 when not, -1. */
int srv_store_capture_exists(srv_pool *p, const char *cid, const char *name, cg_error *err);

/* ------------------------------------------------------------ store_ingest.c */

/* The signer key of key_id: 1 (pk filled when *pk_ok: 32 bytes stored), 0
 * unknown, -1. */
int srv_store_signer_key(srv_pool *p, const char *key_id, unsigned char pk[32], bool *pk_ok, bool *revoked,
                         cg_error *err);

/* A planned campaign capture an upload is for (campaign NULL: none). */
typedef struct srv_attempt {
    const char *campaign, *planned, *run_id, *host, *device;
} srv_attempt;
/* Records a rejected upload for a planned capture (best effort). */
void srv_store_attempt_failed(srv_pool *p, const srv_attempt *at, const char *code, const char *message);

struct srv_index_params;
/* What the publishing transaction stores; everything computed beforehand. */
typedef struct srv_ingest_tx {
    const char *id;                      /* bundle id */
    int64_t lock_key;                    /* advisory lock of the id */
    srv_attempt attempt;                 /* run_id always; campaign/planned when attached */
    const struct srv_index_params *index;
    const srv_facts_text *facts;
    const cg_trace *trace;               /* history revision (srv_history_index) */
    /* pg blob store: puts the blobs inside the transaction (NULL: fs store, done before) */
    int (*put_blobs)(void *ctx, PGconn *c, cg_error *err);
    void *blob_ctx;
    /* statement timeout inside this transaction (ms; 0: the pool's): the index,
     * facts and history rows of a large trace take longer than a small one's */
    uint64_t statement_timeout_ms;
} srv_ingest_tx;
typedef struct srv_ingest_outcome {
    bool existed;        /* an identical bundle was stored: nothing inserted */
    bool conflict;       /* another bundle holds the run_id (other = its id; "" after a race) */
    char other[65];
    long long history_series; /* series to re-detect after the commit, -1 = none */
} srv_ingest_outcome;
/* Runs the transaction on one pooled connection (returned before this
 * returns). A conflict rolls back and returns 0 with out->conflict. */
int srv_store_ingest_commit(srv_pool *p, const srv_ingest_tx *tx, srv_ingest_outcome *out, cg_error *err);

/* ------------------------------------------------------------ store_admin.c */

/* Where a statement runs: a pooled connection taken and returned per call
 * (server), or a connection the caller owns (offline commands). */
typedef struct srv_db {
    srv_pool *pool;
    PGconn *conn;
} srv_db;
#define SRV_DB_POOL(p) ((srv_db){(p), NULL})
#define SRV_DB_CONN(c) ((srv_db){NULL, (c)})
PGresult *srv_store_db_q(srv_db db, const char *sql, int n, const char *const *params, const int *bin_lens,
                         cg_error *err);

/* API tokens: stored as the SHA-256 of the token; scopes_pg is a text[] literal. */
int srv_store_token_insert(srv_db db, const char *id, const char *name, const unsigned char hash[32],
                           const char *scopes_pg, cg_error *err);
/* id, scopes (comma list) of a live token with that hash (0 or 1 row). */
PGresult *srv_store_token_lookup(srv_db db, const unsigned char hash[32], cg_error *err);
/* Lists: id|key_id, name, scopes|public_key (base64), created_at, revoked_at (NULL when live). */
PGresult *srv_store_tokens_list(srv_db db, cg_error *err);
PGresult *srv_store_keys_list(srv_db db, cg_error *err);
/* Registers a signer key; *fresh false when the key id was registered already. */
int srv_store_key_insert(srv_db db, const char *key_id, const char *name, const unsigned char pk[32], bool *fresh,
                         cg_error *err);
/* Revokes a token (key false) or signer key: 1 done (or already revoked), 0 no such id, -1. */
int srv_store_revoke(srv_db db, bool key, const char *id, cg_error *err);

/* ------------------------------------------------------------ store_webhooks.c */

/* Registers a webhook (events_pg: text[] literal of event types). */
int srv_store_webhook_insert(srv_pool *p, const char *id, const char *url, const char *secret, const char *events_pg,
                             cg_error *err);
/* Live webhooks: id, url, events (JSON array text), created_at. */
PGresult *srv_store_webhooks_list(srv_pool *p, cg_error *err);
/* 1 deleted, 0 no live webhook with that id, -1. */
int srv_store_webhook_delete(srv_pool *p, const char *id, cg_error *err);
/* The newest 500 deliveries of webhook id (*rows: event_id, type, alert_id,
 * state, attempts, last_status, last_error, next_attempt_at, delivered_at,
 * created_at): 1 (rows set), 0 no such webhook, -1. */
int srv_store_webhook_deliveries(srv_pool *p, const char *id, PGresult **rows, cg_error *err);
/* In the caller's transaction: whether a live webhook takes event `type`
 * (1/0/-1), and the event with one pending delivery per such webhook. */
int srv_store_webhook_subscribed(PGconn *c, const char *type, cg_error *err);
int srv_store_webhook_event(PGconn *c, const char *id, const char *type, const char *alert_id, const char *body,
                            cg_error *err);
/* Leases up to 8 due deliveries for 60 s: webhook_id, event_id, url, secret,
 * body, webhook live ('t'/'f'). */
PGresult *srv_store_webhook_claim(srv_pool *p, cg_error *err);
/* Records an attempt: delivered on a 2xx status, else retried with backoff. */
int srv_store_webhook_outcome(srv_pool *p, const char *wid, const char *eid, long status, const char *error,
                              cg_error *err);
int srv_store_webhook_abandon(srv_pool *p, const char *wid, const char *eid, cg_error *err);

/* ------------------------------------------------------------ store_alerts.c */

/* One alert's row (columns as srv_alert_json reads them), on the caller's connection. */
PGresult *srv_store_alert_row(PGconn *c, long long id, cg_error *err);
/* GET /alerts: up to limit rows, newest first, each filter given (NULL = any). */
enum { SRV_ALERTS_STATE, SRV_ALERTS_WORKLOAD, SRV_ALERTS_BRANCH, SRV_ALERTS_METRIC, SRV_ALERTS_BEFORE_ID,
       SRV_ALERTS_NFILTERS };
PGresult *srv_store_alerts_page(srv_pool *p, const char *const filters[SRV_ALERTS_NFILTERS], unsigned limit,
                                cg_error *err);
/* PATCH /alerts/{id} in one transaction: new state, note (NULL keeps it), who;
 * then the alert.updated event. 1 (*alert: its JSON, arena a), 0 no such
 * alert, -1. The caller kicks the webhook thread after 1. */
int srv_store_alert_triage(srv_pool *p, long long id, const char *state, const char *note, const char *token_id,
                           cg_arena *a, cg_jv **alert, cg_error *err);

/* ------------------------------------------------------------ store_history.c */

/* In the ingest transaction (srv_history_index): upserts the series of
 * (series_key, branch), fills its id and takes the series lock. */
int srv_store_history_series_put(PGconn *c, const char *series_key, const char *branch, char sid[24], char ss[6],
                                 cg_error *err);
/* The revision row: bundle_id, series_id, commit, branch, commit_time,
 * repository, run_url, measured_ns (repository and run_url may be NULL). */
int srv_store_revision_put(PGconn *c, const char *const q[8], char ss[6], cg_error *err);
/* Position of the commit's point, inserting it (later points move up one
 * when an older commit arrives late). */
int srv_store_history_point_pos(PGconn *c, const char *sid, const char *commit, const char *ctime, long *pos,
                                char ss[6], cg_error *err);
/* Marks the series for re-detection from pos. */
int srv_store_history_mark(PGconn *c, const char *sid, long pos, char ss[6], cg_error *err);

/* Points at positions >= from: pos, commit, commit_time, ids (comma list,
 * ascending), values (comma list, same order). kind NULL: the outer metric;
 * else kind "span"/"op"/"device" and the path of bundle_span_totals. */
PGresult *srv_store_history_points(srv_pool *p, const char *sid, const char *from, const char *kind,
                                   const char *path, cg_error *err);
/* The cohort_row fact of each id of a text[] literal that has one, in order. */
PGresult *srv_store_history_cohort_rows(srv_pool *p, const char *id_array, cg_error *err);
/* The alert of key (series id, metric, before commit, after commit): *id, or
 * -1 when none; on c when given (a transaction), else on a pooled connection. */
int srv_store_alert_id(srv_pool *p, PGconn *c, const char *const key[4], long long *id, cg_error *err);

/* The post-upload change-point sweep (history.c): reads with no lock, each on
 * a pooled connection returned before the caller computes, then one short
 * write transaction.
 * detect_state: dirty_from (-1: not marked), params and version (arena a). */
int srv_store_history_detect_state(srv_pool *p, cg_arena *a, const char *sid, long *dirty_from, const char **params,
                                   const char **version, cg_error *err);
/* The highest position of a change point detected before k (0: none). */
int srv_store_history_cp_kept(srv_pool *p, const char *sid, const char *metric, long k, long *last, cg_error *err);
/* One change point to write. row: series id, metric, pos, detected_pos,
 * commit, before commit, p_value, relative_change, state, verdict, reasons
 * JSON, (alert id: filled by the write). alert, when confirmed: series id,
 * metric, before, after, delta, relative change, ci lower, ci upper, baseline
 * and candidate text[] literals. */
typedef struct srv_cp_write {
    const char *row[12];
    const char *alert[10];
    bool confirmed;
} srv_cp_write;
/* The sweep's result: the change points of metric detected from position
 * `from` on, computed from what the series was at `version`. */
typedef struct srv_sweep_write {
    const char *sid, *metric, *version;
    long from;
    const srv_cp_write *cps;
    size_t n;
} srv_sweep_write;
/* In one transaction under the series lock: when the series is still at
 * w->version, marks it clean (version + 1), replaces its change points
 * detected from w->from with w's, opens or refreshes their alerts and queues
 * their events (*kick: the caller wakes the webhook thread); otherwise
 * *conflict and nothing is written. 0 or -1 (rolled back). */
int srv_store_history_sweep_commit(srv_pool *p, cg_arena *a, const srv_sweep_write *w, bool *conflict, bool *kick,
                                   cg_error *err);

/* GET /history: the series matching the given identity values (one per
 * srv_series_fields entry, NULL = any) and branch: id, identity, branch,
 * params; at most 51 rows by id. */
PGresult *srv_store_history_series_find(srv_pool *p, const char *const values[], const char *branch, cg_error *err);
/* Highest point position of a series (-1: none). */
int srv_store_history_max_pos(srv_pool *p, const char *sid, long *max_pos, cg_error *err);
/* Stored change points at positions >= from: commit, before commit, p_value,
 * relative_change, state, verdict, reasons, alert_id|NULL; by position. */
PGresult *srv_store_history_change_points(srv_pool *p, const char *sid, const char *metric, const char *from,
                                          cg_error *err);

/* ------------------------------------------------------------ store_maintenance.c */

/* On the caller's connection (fsck, the janitor). Every referenced blob:
 * sha256, min(bytes), max(bytes), by sha256. */
PGresult *srv_store_blob_refs(PGconn *c, cg_error *err);
/* sha256 of the pg_blobs rows no bundle file references, by sha256. */
PGresult *srv_store_pg_blob_orphans(PGconn *c, cg_error *err);
/* Every bundle's id and exact manifest bytes (binary results), by seq. */
PGresult *srv_store_manifests(PGconn *c, cg_error *err);
/* Whether a bundle file references blob hex: 1, 0, or -1. */
int srv_store_blob_referenced(PGconn *c, const char *hex, cg_error *err);

/* ------------------------------------------------------------ store_blobs.c */

/* The pg blob store's rows, on the caller's connection (puts: the ingest
 * transaction). claim inserts the blob's row; *fresh = false when it was
 * already stored (its chunks are then not written again). */
int srv_store_pg_blob_claim(PGconn *c, const char *hex, uint64_t size, bool *fresh, cg_error *err);
/* Chunk idx (0-based) of blob hex: len bytes (0: an empty blob's one chunk). */
int srv_store_pg_blob_chunk_put(PGconn *c, const char *hex, int idx, const char *data, size_t len, cg_error *err);
/* Whether blob hex has its row, and its plain size (bytes may be NULL). */
int srv_store_pg_blob_exists(PGconn *c, const char *hex, bool *exists, uint64_t *bytes, cg_error *err);
/* Chunk idx of blob hex, binary result (0 rows past the last chunk); NULL + err. */
PGresult *srv_store_pg_blob_chunk(PGconn *c, const char *hex, int idx, cg_error *err);
/* The store's at-rest totals (/metrics): plain bytes (pg_blobs), stored bytes
 * (the chunks) and blobs by form (from each first chunk's header); -1 on failure. */
int srv_store_pg_blob_sum(PGconn *c, srv_blob_totals *t);
/* /readyz: the pg blob table answers. */
int srv_store_pg_blob_probe(PGconn *c, cg_error *err);

/* ------------------------------------------------------------ store_schema.c */

/* migrate.c, on its dedicated connection: open takes the migration advisory
 * lock, creates schema_migrations when missing and returns its rows (version,
 * name, sha256 by version; caller's to clear); close releases the lock (open
 * releases it itself on failure). */
int srv_store_migrations_open(PGconn *c, PGresult **applied, cg_error *err);
void srv_store_migrations_close(PGconn *c);
/* Runs one migration body (several statements) and records it, in one
 * transaction; rolled back on failure ("migration NAME failed: …"). */
int srv_store_migration_apply(PGconn *c, const char *version, const char *name, const char *sql, const char *sha256,
                              cg_error *err);
/* pgembed.c: creates database name unless it exists (another starter winning
 * the race is fine). */
int srv_store_database_ensure(PGconn *c, const char *name, cg_error *err);

/* ------------------------------------------------------------ store_session.c */

/* A fresh connection's session: its statement timeout (pool.c). */
int srv_store_session_init(PGconn *c, unsigned stmt_timeout_ms, cg_error *err);
/* Rolls back the open transaction of a connection going back to the pool. */
void srv_store_session_rollback(PGconn *c);
/* The statement an injected libpq fault runs instead of the caller's (fault.c):
 * it raises SQLSTATE 53100 for ENOSPC/EDQUOT, 25006 for EROFS, else 58030. */
const char *srv_store_fault_statement(int e);

#endif
