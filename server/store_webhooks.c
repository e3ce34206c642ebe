/* store_webhooks.c — the SQL of webhooks and their outbox (srv_store.h):
 * subscriptions, the event + delivery rows written in the caller's alert
 * transaction, the leased claim of due deliveries and their outcome. */
#include <string.h>

#include "srv_store.h"

#define TS_MS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

static const char SQL_WEBHOOK_INSERT[] = "INSERT INTO webhooks (id, url, secret, events) VALUES ($1, $2, $3, $4::text[])";

static const char SQL_WEBHOOKS_LIST[] =
    "SELECT id, url, array_to_json(events)::text, " TS_MS("created_at") " FROM webhooks "
    "WHERE deleted_at IS NULL ORDER BY created_at, id";

static const char SQL_WEBHOOK_DELETE[] =
    "UPDATE webhooks SET deleted_at = coalesce(deleted_at, now()) WHERE id = $1 AND deleted_at IS NULL RETURNING id";

static const char SQL_WEBHOOK_EXISTS[] = "SELECT 1 FROM webhooks WHERE id = $1";

static const char SQL_DELIVERIES[] =
    "SELECT d.event_id, e.type, e.alert_id, d.state, d.attempts, d.last_status, d.last_error, "
    TS_MS("d.next_attempt_at") ", " TS_MS("d.delivered_at") ", " TS_MS("d.created_at") " "
    "FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id "
    "WHERE d.webhook_id = $1 ORDER BY d.created_at DESC, d.event_id LIMIT 500";

static const char SQL_SUBSCRIBED[] = "SELECT 1 FROM webhooks WHERE deleted_at IS NULL AND $1 = ANY(events) LIMIT 1";

static const char SQL_EVENT_INSERT[] =
    "INSERT INTO webhook_events (id, type, alert_id, body) VALUES ($1, $2, $3::bigint, $4)";

static const char SQL_DELIVERIES_INSERT[] =
    "INSERT INTO webhook_deliveries (webhook_id, event_id) SELECT id, $1 FROM webhooks "
    "WHERE deleted_at IS NULL AND $2 = ANY(events)";

/* A 60 s lease on up to 8 due rows, so several instances never send one twice at once. */
static const char SQL_CLAIM_DUE[] =
    "UPDATE webhook_deliveries d SET next_attempt_at = now() + interval '60 seconds' "
    "FROM (SELECT webhook_id, event_id FROM webhook_deliveries WHERE state = 'pending' AND "
    "next_attempt_at <= now() ORDER BY next_attempt_at LIMIT 8 FOR UPDATE SKIP LOCKED) due, "
    "webhooks w, webhook_events e WHERE d.webhook_id = due.webhook_id AND d.event_id = due.event_id "
    "AND w.id = d.webhook_id AND e.id = d.event_id "
    "RETURNING d.webhook_id, d.event_id, w.url, w.secret, e.body, w.deleted_at IS NULL";

static const char SQL_DELIVERED[] =
    "UPDATE webhook_deliveries SET state = 'delivered', attempts = attempts + 1, last_status = $3::int, "
    "last_error = NULL, delivered_at = now() WHERE webhook_id = $1 AND event_id = $2";

static const char SQL_RETRY_LATER[] =
    "UPDATE webhook_deliveries SET attempts = attempts + 1, last_status = $3::int, last_error = $4, "
    "next_attempt_at = now() + make_interval(secs => least(3600, power(2, attempts))) "
    "WHERE webhook_id = $1 AND event_id = $2";

static const char SQL_ABANDON[] =
    "UPDATE webhook_deliveries SET state = 'abandoned', last_error = 'webhook deleted' "
    "WHERE webhook_id = $1 AND event_id = $2";

static int exec_n(srv_pool *p, const char *sql, int n, const char *const *q, cg_error *err) {
    PGresult *x = srv_store_q(p, sql, n, q, NULL, err);
    if (!x) return -1;
    int rows = PQntuples(x);
    PQclear(x);
    return rows;
}

int srv_store_webhook_insert(srv_pool *p, const char *id, const char *url, const char *secret, const char *events_pg,
                             cg_error *err) {
    const char *q[4] = {id, url, secret, events_pg};
    return exec_n(p, SQL_WEBHOOK_INSERT, 4, q, err) < 0 ? -1 : 0;
}

PGresult *srv_store_webhooks_list(srv_pool *p, cg_error *err) { return srv_store_q(p, SQL_WEBHOOKS_LIST, 0, NULL, NULL, err); }

int srv_store_webhook_delete(srv_pool *p, const char *id, cg_error *err) {
    const char *q[1] = {id};
    int n = exec_n(p, SQL_WEBHOOK_DELETE, 1, q, err);
    return n < 0 ? -1 : n > 0;
}

int srv_store_webhook_deliveries(srv_pool *p, const char *id, PGresult **rows, cg_error *err) {
    *rows = NULL;
    const char *q[1] = {id};
    PGconn *c = srv_pool_get(p, err);
    if (!c) return -1;
    PGresult *w = srv_q(c, SQL_WEBHOOK_EXISTS, 1, q, NULL, NULL, err);
    int found = w ? PQntuples(w) > 0 : -1;
    PQclear(w);
    if (found == 1 && !(*rows = srv_q(c, SQL_DELIVERIES, 1, q, NULL, NULL, err))) found = -1;
    srv_pool_put(p, c);
    return found;
}

int srv_store_webhook_subscribed(PGconn *c, const char *type, cg_error *err) {
    const char *q[1] = {type};
    PGresult *x = srv_q(c, SQL_SUBSCRIBED, 1, q, NULL, NULL, err);
    if (!x) return -1;
    int any = PQntuples(x) > 0;
    PQclear(x);
    return any;
}

int srv_store_webhook_event(PGconn *c, const char *id, const char *type, const char *alert_id, const char *body,
                            cg_error *err) {
    const char *q[4] = {id, type, alert_id, body};
    PGresult *x = srv_q(c, SQL_EVENT_INSERT, 4, q, NULL, NULL, err);
    if (!x) return -1;
    PQclear(x);
    x = srv_q(c, SQL_DELIVERIES_INSERT, 2, q, NULL, NULL, err);
    if (!x) return -1;
    PQclear(x);
    return 0;
}

PGresult *srv_store_webhook_claim(srv_pool *p, cg_error *err) { return srv_store_q(p, SQL_CLAIM_DUE, 0, NULL, NULL, err); }

int srv_store_webhook_outcome(srv_pool *p, const char *wid, const char *eid, long status, const char *error,
                              cg_error *err) {
    char st[16];
    snprintf(st, sizeof st, "%ld", status);
    const char *q[4] = {wid, eid, status ? st : NULL, error && error[0] ? error : NULL};
    bool ok = status >= 200 && status < 300;
    return exec_n(p, ok ? SQL_DELIVERED : SQL_RETRY_LATER, ok ? 3 : 4, q, err) < 0 ? -1 : 0;
}

int srv_store_webhook_abandon(srv_pool *p, const char *wid, const char *eid, cg_error *err) {
    const char *q[2] = {wid, eid};
    return exec_n(p, SQL_ABANDON, 2, q, err) < 0 ? -1 : 0;
}
