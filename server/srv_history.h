/* srv_history.h — issue 15: revisions, per-commit history, change points,
 * alerts and webhooks (migrations/0010_history.sql, docs/statistics.md).
 *
 * history.c indexes a bundle's revision inside the ingest transaction
 * (srv_history_index) and, after the commit, re-runs the change-point sweep of
 * its series from the first changed point (srv_history_detect: O(window²) per
 * upload, independent of the history's length). Confirmed change points become
 * alerts; alert events go into the webhook outbox in the same transaction and
 * are delivered by webhook_delivery.c's thread, never by the ingest thread.
 *
 * Ownership: JSON and strings returned live in the caller's arena. Errors: -1
 * with err ("database: …") and, where taken, sqlstate. */
#ifndef SRV_HISTORY_H
#define SRV_HISTORY_H

#include "changepoint.h"
#include "srv.h"
#include "trace/trace.h"

#define SRV_METRIC_OUTER "outer_wall_time_ns"

/* The identity fields of a series, in the order of series_key and of
 * GET /history's `series` object. */
extern const char *const srv_series_fields[];
extern const size_t srv_n_series_fields;

/* In the ingest transaction: when the trace carries vcs.commit (7–64 lowercase
 * hex), vcs.branch and an RFC 3339 vcs.commit_time, has a comparison identity
 * and a single closed measured region, records the revision and its point and
 * marks the series for re-detection. *series_id = -1 when nothing was indexed. */
int srv_history_index(PGconn *c, const char *bundle_id, const cg_trace *t, long long *series_id, char sqlstate[6],
                      cg_error *err);

/* After the ingest commit: re-detects the series when it is marked. The
 * sweep reads and computes with no connection held and writes in one short
 * transaction under the series lock, recomputing when the series moved in
 * between (history.c). Failures are logged; the mark stays, so the next upload
 * of the series catches up. */
void srv_history_detect(srv_server *s, long long series_id);
int srv_history_redetect(srv_pool *pool, long long series_id, cg_error *err);
/* /metrics: cg_history_sweeps_total by result (written, conflict). */
void srv_history_metrics(cg_buf *b);

/* One point of a history: a commit's cohort (bundle ids ascending) and the
 * metric value of each of its runs that has one. */
typedef struct srv_point {
    long pos;
    const char *commit, *commit_time;
    const char **ids;      /* n_ids */
    size_t n_ids;
    uint64_t *values;      /* per run with a value (n), same order as the ids that have one */
    size_t n;
    double median;
} srv_point;

/* Loads the points at positions ≥ from_pos (all when 0) of a series for a
 * metric (outer_wall_time_ns, span:/op:/device: paths). Points whose cohort
 * has no value for the metric are kept with n = 0. 0 or -1.
 * Connections (here and in srv_history_confirm): one from pool for each read,
 * returned before computing. */
int srv_history_points(srv_pool *pool, cg_arena *a, long long series_id, const char *metric, long from_pos,
                       srv_point **out, size_t *n, cg_error *err);

/* Confirmation of a change point between two commit cohorts (fail-closed):
 * comparison/6 of the stored cohort rows must be comparable with an interval
 * that excludes zero (for span/op/device metrics, also the bootstrap interval
 * of that metric's median delta). Fills the comparison JSON (outer metric:
 * the comparison/6 document itself). 0 or -1. */
typedef struct srv_confirmation {
    bool confirmed;
    const char *verdict;
    cg_jv *reasons;    /* array of codes */
    cg_jv *comparison; /* comparison/6 */
    double delta_ns, relative_change, ci_lower, ci_upper;
} srv_confirmation;
int srv_history_confirm(srv_pool *pool, cg_arena *a, const char *metric, const srv_point *before,
                        const srv_point *after, srv_confirmation *out, cg_error *err);

/* Detection parameters of a series: defaults overridden by its params JSON. */
void srv_history_params(const char *params_json, srv_cp_params *p);

/* routes_alerts.c: an alert's JSON from row i of an alert row set (store_alerts.c). */
cg_jv *srv_alert_json(cg_arena *a, PGresult *x, int row);
/* Loads one alert's JSON (NULL + err when missing: err.code CG_ESTATE). */
cg_jv *srv_alert_load(PGconn *c, cg_arena *a, long long id, cg_error *err);

/* webhook_delivery.c: in the caller's transaction, writes one event (exact
 * body fixed now) and a pending delivery for every live webhook subscribed to
 * `type`; nothing when none is. Then wakes the delivery thread (after commit
 * the caller calls srv_webhook_kick). */
int srv_webhook_enqueue(PGconn *c, cg_arena *a, const char *type, long long alert_id, const cg_jv *alert,
                        cg_error *err);
void srv_webhook_kick(void);
int srv_webhook_start(srv_server *s);
void srv_webhook_stop(void);

enum MHD_Result srv_h_history(srv_req *r);
enum MHD_Result srv_h_alerts_list(srv_req *r);
enum MHD_Result srv_h_alert_patch(srv_req *r);
enum MHD_Result srv_h_compare_advice(srv_req *r);
enum MHD_Result srv_h_webhooks_create(srv_req *r);
enum MHD_Result srv_h_webhooks_list(srv_req *r);
enum MHD_Result srv_h_webhooks_delete(srv_req *r);
enum MHD_Result srv_h_webhook_deliveries(srv_req *r);

#endif
