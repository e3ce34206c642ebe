/* webhook_delivery.c — the webhook outbox (srv_history.h). Events are written
 * in the transaction that raised them (webhook_events: the exact body every
 * attempt sends; webhook_deliveries: one pending row per subscribed webhook), so
 * a restart or a dead receiver never loses one. One background thread claims
 * due rows (FOR UPDATE SKIP LOCKED, a 60 s lease so several server instances
 * never send the same row at once), POSTs the body with
 * Candle-Graph-Event-Id and Candle-Graph-Signature-256: sha256=<hex
 * HMAC-SHA256(secret, body)>, and records the outcome: 2xx → delivered; any
 * other answer or none → retried after 1, 2, 4, … s (capped at one hour),
 * without limit. Delivery is at least once; receivers deduplicate by event id.
 * Ingest never waits on it. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>
#ifdef CG_HAVE_CURL
#include <curl/curl.h>
#endif

#include "srv_history.h"
#include "srv_store.h"

#define CLAIM_BATCH 8
#define POST_TIMEOUT_S 10L

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_t thread;
static bool running, stopping, kicked;

void srv_webhook_kick(void) {
    pthread_mutex_lock(&mu);
    kicked = true;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
}

static const char *now_rfc3339(cg_arena *a) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    return cg_arena_printf(a, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                           tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000L);
}

int srv_webhook_enqueue(PGconn *c, cg_arena *a, const char *type, long long alert_id, const cg_jv *alert,
                        cg_error *err) {
    int any = srv_store_webhook_subscribed(c, type, err);
    if (any <= 0) return any;
    unsigned char rnd[16];
    randombytes_buf(rnd, sizeof rnd);
    char hex[33];
    sodium_bin2hex(hex, sizeof hex, rnd, sizeof rnd);
    const char *id = cg_arena_printf(a, "evt_%s", hex);
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "id", cg_jv_str(a, id));
    cg_jv_obj_put(a, o, "type", cg_jv_str(a, type));
    cg_jv_obj_put(a, o, "created_at", cg_jv_str(a, now_rfc3339(a)));
    cg_jv_obj_put(a, o, "alert", cg_jv_clone(a, alert));
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, o, false);
    const char *body = cg_arena_strndup(a, b.data, b.len);
    cg_buf_free(&b);
    return srv_store_webhook_event(c, id, type, cg_arena_printf(a, "%lld", alert_id), body, err);
}

/* ------------------------------------------------------------ sending */

static void signature(const char *secret, const char *body, size_t len, char out[72]) {
    crypto_auth_hmacsha256_state st;
    unsigned char mac[crypto_auth_hmacsha256_BYTES];
    crypto_auth_hmacsha256_init(&st, (const unsigned char *)secret, strlen(secret));
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)body, len);
    crypto_auth_hmacsha256_final(&st, mac);
    memcpy(out, "sha256=", 7);
    sodium_bin2hex(out + 7, 65, mac, sizeof mac);
}

#ifdef CG_HAVE_CURL
static size_t discard(char *p, size_t sz, size_t n, void *ud) {
    (void)p;
    (void)ud;
    return sz * n;
}

/* POSTs one event; returns the HTTP status (0: no answer, error filled). */
static long post(const char *url, const char *secret, const char *event_id, const char *body, char *error, size_t esz) {
    CURL *h = curl_easy_init();
    if (!h) {
        snprintf(error, esz, "curl initialisation failed");
        return 0;
    }
    char sig[72], hid[160], hsig[128];
    signature(secret, body, strlen(body), sig);
    snprintf(hid, sizeof hid, "Candle-Graph-Event-Id: %s", event_id);
    snprintf(hsig, sizeof hsig, "Candle-Graph-Signature-256: %s", sig);
    struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
    hd = curl_slist_append(hd, hid);
    hd = curl_slist_append(hd, hsig);
    hd = curl_slist_append(hd, "Expect:");
    char ebuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, POST_TIMEOUT_S);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
    long status = 0;
    CURLcode rc = curl_easy_perform(h);
    if (rc == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    else snprintf(error, esz, "%s", ebuf[0] ? ebuf : curl_easy_strerror(rc));
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    return status;
}
#else
static long post(const char *url, const char *secret, const char *event_id, const char *body, char *error, size_t esz) {
    (void)url, (void)secret, (void)event_id, (void)body;
    snprintf(error, esz, "candle-graph-server was built without libcurl");
    return 0;
}
#endif

/* Claims and sends one batch; returns how many were due. A pooled connection
 * is taken only for the claim and for each outcome, never during a POST. */
static int deliver_due(srv_server *s) {
    cg_error err = {0};
    PGresult *x = srv_store_webhook_claim(s->pool, &err);
    if (!x) {
        srv_log("error", "webhook outbox unreadable", "error", err.msg, NULL);
        return 0;
    }
    int n = PQntuples(x);
    for (int i = 0; i < n && !atomic_load(&s->stopping); i++) {
        const char *wid = PQgetvalue(x, i, 0), *eid = PQgetvalue(x, i, 1);
        char error[256] = "";
        long status = 0;
        bool live = strcmp(PQgetvalue(x, i, 5), "t") == 0;
        if (live) status = post(PQgetvalue(x, i, 2), PQgetvalue(x, i, 3), eid, PQgetvalue(x, i, 4), error, sizeof error);
        int rc = live ? srv_store_webhook_outcome(s->pool, wid, eid, status, error, &err)
                      : srv_store_webhook_abandon(s->pool, wid, eid, &err);
        if (rc < 0) /* the lease expires and the row is retried */
            srv_log("error", "webhook delivery not recorded", "webhook", wid, "event", eid, "error", err.msg, NULL);
    }
    PQclear(x);
    return n;
}

static void *run(void *ud) {
    srv_server *s = ud;
    for (;;) {
        int due = deliver_due(s);
        pthread_mutex_lock(&mu);
        if (!stopping && !kicked && due < CLAIM_BATCH) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 1;
            pthread_cond_timedwait(&cv, &mu, &until);
        }
        kicked = false;
        bool stop = stopping;
        pthread_mutex_unlock(&mu);
        if (stop) return NULL;
    }
}

int srv_webhook_start(srv_server *s) {
#ifdef CG_HAVE_CURL
    curl_global_init(CURL_GLOBAL_DEFAULT);
#endif
    stopping = false;
    if (pthread_create(&thread, NULL, run, s) != 0) return -1;
    running = true;
    return 0;
}

void srv_webhook_stop(void) {
    if (!running) return;
    pthread_mutex_lock(&mu);
    stopping = true;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(thread, NULL);
    running = false;
}
