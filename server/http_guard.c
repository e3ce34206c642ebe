/* http_guard.c — the slow-client watchdog (issue 13, finding 3).
 *
 * libmicrohttpd's connection timeout is an inactivity timeout: a client that
 * sends one header byte every few seconds never reaches it, and in
 * thread-per-connection mode each such client holds a thread and a connection
 * slot. The guard tracks every TCP connection through MHD's socket context and
 * a watchdog thread closes (shutdown(2) of the socket, which MHD then sees as
 * a client abort and cleans up itself) a connection that
 *   - has not completed a request head header_timeout_s after it connected or
 *     after its previous request was answered (keep-alive included), or
 *   - is sending a body slower than min_body_rate bytes/s once body_timeout_s
 *     has passed (deadline = body start + body_timeout_s + bytes/min_body_rate).
 * Connections waiting for their head are capped at half the connection limit:
 * a new connection over the cap sheds the oldest one still waiting, so slow
 * clients can never hold every slot and others keep being served (the other
 * half is headroom for requests in progress and for shed connections that MHD
 * has not finished closing).
 *
 * Safety of shutdown(): an entry is unlinked (under mu) in MHD's CLOSED
 * notification, which MHD sends before it closes the socket, and shutdown() is
 * only called under mu on linked entries, so the fd is always still ours. */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "srv.h"
#include "base/alloc.h"

enum { PH_HEAD = 0, PH_BODY, PH_BUSY };

typedef struct srv_conn {
    struct srv_conn *prev, *next;
    int fd;
    int phase;
    double since;        /* monotonic seconds: start of the current phase */
    uint64_t body_bytes;
    const char *shed;    /* why the guard closed it; NULL while open */
} srv_conn;

struct srv_guard {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool stop;
    srv_conn *first, *last; /* oldest phase change first */
    unsigned waiting;       /* PH_HEAD entries not shed */
    unsigned cap;
    double header_s, body_s, min_rate;
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void unlink_conn(srv_guard *g, srv_conn *k) {
    if (k->prev) k->prev->next = k->next;
    else g->first = k->next;
    if (k->next) k->next->prev = k->prev;
    else g->last = k->prev;
    k->prev = k->next = NULL;
}

static void append_conn(srv_guard *g, srv_conn *k) {
    k->prev = g->last;
    k->next = NULL;
    if (g->last) g->last->next = k;
    else g->first = k;
    g->last = k;
}

/* mu held. */
static void set_phase(srv_guard *g, srv_conn *k, int phase) {
    if (k->phase == PH_HEAD && !k->shed) g->waiting--;
    k->phase = phase;
    k->since = now_s();
    k->body_bytes = 0;
    if (phase == PH_HEAD && !k->shed) g->waiting++;
    unlink_conn(g, k);
    append_conn(g, k);
}

/* mu held. */
static void shed(srv_guard *g, srv_conn *k, const char *why) {
    if (k->shed) return;
    if (k->phase == PH_HEAD) g->waiting--;
    k->shed = why;
    shutdown(k->fd, SHUT_RDWR);
    srv_log("info", "closed a slow connection", "reason", why, NULL);
}

static srv_conn *conn_of(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = c ? MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : NULL;
    return ci ? ci->socket_context : NULL;
}

void srv_guard_notify(void *cls, struct MHD_Connection *c, void **socket_ctx, enum MHD_ConnectionNotificationCode toe) {
    srv_server *s = cls;
    srv_guard *g = s->guard;
    if (!g) return;
    if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        srv_conn *k = *socket_ctx;
        if (!k) return;
        pthread_mutex_lock(&g->mu);
        if (k->phase == PH_HEAD && !k->shed) g->waiting--;
        unlink_conn(g, k);
        pthread_mutex_unlock(&g->mu);
        cg_free(k);
        *socket_ctx = NULL;
        return;
    }
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    srv_conn *k = ci ? calloc(1, sizeof *k) : NULL;
    if (!k) return; /* unguarded; MHD's own timeouts still apply */
    k->fd = ci->connect_fd;
    k->phase = PH_HEAD;
    k->since = now_s();
    pthread_mutex_lock(&g->mu);
    append_conn(g, k);
    g->waiting++;
    for (srv_conn *o = g->first; o && g->waiting > g->cap; o = o->next)
        if (o->phase == PH_HEAD && !o->shed && o != k)
            shed(g, o, "terminated: too many connections waiting for a request head");
    pthread_mutex_unlock(&g->mu);
    *socket_ctx = k;
}

static void phase(struct MHD_Connection *c, srv_guard *g, int ph) {
    srv_conn *k = conn_of(c);
    if (!k || !g) return;
    pthread_mutex_lock(&g->mu);
    if (k->phase != ph) set_phase(g, k, ph);
    pthread_mutex_unlock(&g->mu);
}

void srv_guard_body_begin(srv_req *r) { phase(r->conn, r->s->guard, PH_BODY); }
void srv_guard_busy(srv_req *r) { phase(r->conn, r->s->guard, PH_BUSY); }

void srv_guard_idle(srv_server *s, struct MHD_Connection *c) { phase(c, s->guard, PH_HEAD); }

void srv_guard_body_bytes(srv_req *r, uint64_t n) {
    srv_guard *g = r->s->guard;
    srv_conn *k = conn_of(r->conn);
    if (!k || !g) return;
    pthread_mutex_lock(&g->mu);
    k->body_bytes += n;
    pthread_mutex_unlock(&g->mu);
}

const char *srv_guard_reason(srv_server *s, struct MHD_Connection *c) {
    srv_guard *g = s->guard;
    srv_conn *k = conn_of(c);
    if (!k || !g) return NULL;
    pthread_mutex_lock(&g->mu);
    const char *why = k->shed;
    pthread_mutex_unlock(&g->mu);
    return why;
}

/* mu held: one pass over the connections. */
static void sweep(srv_guard *g) {
    double t = now_s();
    for (srv_conn *k = g->first; k; k = k->next) {
        if (k->shed) continue;
        double age = t - k->since;
        if (k->phase == PH_HEAD && g->header_s > 0 && age > g->header_s)
            shed(g, k, "terminated: request head not complete within the header deadline");
        else if (k->phase == PH_BODY && g->min_rate > 0 && age > g->body_s + (double)k->body_bytes / g->min_rate)
            shed(g, k, "terminated: request body slower than the minimum rate");
    }
}

static void *watchdog(void *arg) {
    srv_guard *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_nsec += 200 * 1000000L;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&g->cv, &g->mu, &dl);
        if (!g->stop) sweep(g);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

int srv_guard_start(srv_server *s) {
    srv_guard *g = calloc(1, sizeof *g);
    if (!g) return -1;
    pthread_mutex_init(&g->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_cond_init(&g->cv, &ca);
    pthread_condattr_destroy(&ca);
    unsigned lim = s->cfg.conn_limit ? s->cfg.conn_limit : 1;
    g->cap = lim / 2;
    if (g->cap == 0) g->cap = 1;
    g->header_s = (double)s->cfg.header_timeout_s;
    g->body_s = (double)s->cfg.body_timeout_s;
    g->min_rate = (double)s->cfg.min_body_rate;
    if (pthread_create(&g->thread, NULL, watchdog, g) != 0) {
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->mu);
        cg_free(g);
        return -1;
    }
    s->guard = g;
    return 0;
}

/* After MHD_stop_daemon: every connection has been closed and unlinked. */
void srv_guard_stop(srv_server *s) {
    srv_guard *g = s->guard;
    if (!g) return;
    pthread_mutex_lock(&g->mu);
    g->stop = true;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    while (g->first) {
        srv_conn *k = g->first;
        unlink_conn(g, k);
        cg_free(k);
    }
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    cg_free(g);
    s->guard = NULL;
}
