/* pool.c — a fixed pool of libpq connections for the thread-per-connection
 * server (mutex + condition variable), created lazily and re-created after the
 * database comes back; plus parameterized-query helpers. Every connection gets
 * a statement timeout. SQL text is always constant; values go as parameters;
 * the session's own statements (setup, rollback on return) are store_session.c's. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "srv_store.h"
#include "base/alloc.h"

struct srv_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *conninfo;
    unsigned size, wait_ms, stmt_ms;
    PGconn **conns;   /* NULL slot = not connected */
    bool *busy;
    PGconn **out;     /* checked-out connection per busy slot */
    unsigned in_use;
};

/* Connections the current thread has checked out, and the answers queued while
 * a request's thread still held one (the store layer's rule: none). */
static _Thread_local int held_here;
static atomic_ulong held_at_reply;

int srv_pool_held_here(void) { return held_here; }

void srv_pool_held_adjust(int delta) { held_here += delta; }

void srv_pool_note_reply(void) {
    if (held_here > 0) atomic_fetch_add(&held_at_reply, 1);
}

unsigned long srv_pool_held_at_reply(void) { return atomic_load(&held_at_reply); }

/* CPU sections entered, and those entered while the thread held a connection. */
static atomic_ulong compute_sections, held_while_computing;

void srv_pool_note_compute(void) {
    atomic_fetch_add(&compute_sections, 1);
    if (held_here > 0) atomic_fetch_add(&held_while_computing, 1);
}

void srv_pool_metrics(cg_buf *b) {
    cg_buf_printf(b,
                  "# HELP cg_db_pool_held_at_reply_total Answers queued while the request still held a pooled "
                  "database connection (the store layer keeps this 0).\n"
                  "# TYPE cg_db_pool_held_at_reply_total counter\n"
                  "cg_db_pool_held_at_reply_total %lu\n"
                  "# HELP cg_db_pool_compute_sections_total CPU sections entered by change-point sweeps and "
                  "confirmations.\n"
                  "# TYPE cg_db_pool_compute_sections_total counter\n"
                  "cg_db_pool_compute_sections_total %lu\n"
                  "# HELP cg_db_pool_held_while_computing_total CPU sections entered while the thread held a "
                  "pooled database connection (kept 0).\n"
                  "# TYPE cg_db_pool_held_while_computing_total counter\n"
                  "cg_db_pool_held_while_computing_total %lu\n",
                  atomic_load(&held_at_reply), atomic_load(&compute_sections), atomic_load(&held_while_computing));
}

static void quiet_notice(void *arg, const char *msg) {
    (void)arg;
    (void)msg; /* server notices (e.g. "relation already exists, skipping") are not errors */
}

PGconn *srv_db_connect(const char *conninfo, unsigned stmt_timeout_ms, cg_error *err) {
    const char *keys[] = {"dbname", "connect_timeout", "application_name", NULL};
    const char *vals[] = {conninfo, "3", "candle-graph-server", NULL};
    PGconn *c = srv_fault_connect(keys, vals, 1);
    if (!c || PQstatus(c) != CONNECTION_OK) {
        const char *m = c ? PQerrorMessage(c) : "out of memory";
        char msg[512];
        snprintf(msg, sizeof msg, "%s", m);
        size_t n = strlen(msg);
        while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' ')) msg[--n] = 0;
        cg_err_set(err, CG_EIO, "database connection failed: %s", msg);
        PQfinish(c);
        return NULL;
    }
    PQsetNoticeProcessor(c, quiet_notice, NULL);
    if (srv_store_session_init(c, stmt_timeout_ms, &(cg_error){0}) < 0) {
        cg_err_set(err, CG_EIO, "database: cannot set statement_timeout");
        PQfinish(c);
        return NULL;
    }
    return c;
}

srv_pool *srv_pool_new(const char *conninfo, unsigned size, unsigned wait_ms, unsigned stmt_timeout_ms) {
    srv_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    if (size == 0) size = 1;
    p->conninfo = strdup(conninfo);
    p->size = size;
    p->wait_ms = wait_ms;
    p->stmt_ms = stmt_timeout_ms;
    p->conns = calloc(size, sizeof *p->conns);
    p->busy = calloc(size, sizeof *p->busy);
    p->out = calloc(size, sizeof *p->out);
    if (!p->conninfo || !p->conns || !p->busy || !p->out) {
        cg_free(p->out);
        cg_free(p->conninfo);
        cg_free(p->conns);
        cg_free(p->busy);
        cg_free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    return p;
}

void srv_pool_free(srv_pool *p) {
    if (!p) return;
    for (unsigned i = 0; i < p->size; i++) PQfinish(p->conns[i]);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    cg_free(p->conninfo);
    cg_free(p->conns);
    cg_free(p->busy);
    cg_free(p->out);
    cg_free(p);
}

PGconn *srv_pool_get(srv_pool *p, cg_error *err) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += p->wait_ms / 1000;
    dl.tv_nsec += (long)(p->wait_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&p->mu);
    int slot = -1;
    for (;;) {
        /* prefer an open idle connection, then an empty slot */
        for (unsigned i = 0; i < p->size && slot < 0; i++)
            if (!p->busy[i] && p->conns[i]) slot = (int)i;
        for (unsigned i = 0; i < p->size && slot < 0; i++)
            if (!p->busy[i]) slot = (int)i;
        if (slot >= 0) break;
        if (pthread_cond_timedwait(&p->cv, &p->mu, &dl) == ETIMEDOUT) {
            pthread_mutex_unlock(&p->mu);
            cg_err_set(err, CG_EIO, "database pool exhausted");
            return NULL;
        }
    }
    p->busy[slot] = true;
    p->in_use++;
    PGconn *c = p->conns[slot];
    p->conns[slot] = NULL;
    pthread_mutex_unlock(&p->mu);

    if (c && PQstatus(c) != CONNECTION_OK) {
        PQfinish(c);
        c = NULL;
    }
    if (!c) c = srv_db_connect(p->conninfo, p->stmt_ms, err);
    if (!c) {
        pthread_mutex_lock(&p->mu);
        p->busy[slot] = false;
        p->in_use--;
        pthread_cond_signal(&p->cv);
        pthread_mutex_unlock(&p->mu);
        return NULL;
    }
    pthread_mutex_lock(&p->mu);
    p->out[slot] = c;
    pthread_mutex_unlock(&p->mu);
    srv_pool_held_adjust(1);
    return c;
}

void srv_pool_put(srv_pool *p, PGconn *c) {
    if (!c) return;
    srv_pool_held_adjust(-1);
    int slot = -1;
    pthread_mutex_lock(&p->mu);
    for (unsigned i = 0; i < p->size; i++)
        if (p->busy[i] && p->out[i] == c) slot = (int)i;
    pthread_mutex_unlock(&p->mu);
    if (PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) != PQTRANS_IDLE) {
        srv_store_session_rollback(c);
        if (PQtransactionStatus(c) != PQTRANS_IDLE) {
            PQfinish(c);
            c = NULL;
        }
    }
    bool broken = c && PQstatus(c) != CONNECTION_OK;
    if (broken) {
        PQfinish(c);
        c = NULL;
    }
    pthread_mutex_lock(&p->mu);
    if (broken) {
        /* the server went away (restart, failover): every idle connection is
         * most likely dead too; drop them so the next checkout reconnects */
        for (unsigned i = 0; i < p->size; i++)
            if (!p->busy[i] && p->conns[i]) {
                PQfinish(p->conns[i]);
                p->conns[i] = NULL;
            }
    }
    if (slot >= 0 && (unsigned)slot < p->size) {
        p->conns[slot] = c;
        p->out[slot] = NULL;
        p->busy[slot] = false;
        p->in_use--;
    } else {
        PQfinish(c);
    }
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void srv_pool_stats(srv_pool *p, unsigned *size, unsigned *in_use, unsigned *open) {
    pthread_mutex_lock(&p->mu);
    *size = p->size;
    *in_use = p->in_use;
    unsigned o = p->in_use;
    for (unsigned i = 0; i < p->size; i++)
        if (!p->busy[i] && p->conns[i]) o++;
    *open = o;
    pthread_mutex_unlock(&p->mu);
}

int srv_pg_fail(PGconn *c, PGresult *r, char sqlstate[6], cg_error *err) {
    const char *code = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    if (sqlstate) snprintf(sqlstate, 6, "%s", code ? code : "08006");
    const char *m = r ? PQresultErrorMessage(r) : PQerrorMessage(c);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", m && *m ? m : "no result");
    size_t len = strlen(msg);
    while (len && (msg[len - 1] == '\n' || msg[len - 1] == ' ')) msg[--len] = 0;
    PQclear(r);
    return cg_err_set(err, CG_EIO, "database: %s", msg);
}

PGresult *srv_q(PGconn *c, const char *sql, int n, const char *const *params, const int *bin_lens,
                char sqlstate[6], cg_error *err) {
    int lens[48] = {0}, fmts[48] = {0}; /* zeroed: gcc -O3 cannot see that n == 0 reads none */
    if (n > 48) {
        cg_err_set(err, CG_EINVAL, "too many query parameters");
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        lens[i] = bin_lens ? bin_lens[i] : 0;
        fmts[i] = bin_lens && bin_lens[i] > 0 ? 1 : 0;
    }
    if (sqlstate) sqlstate[0] = 0;
    PGresult *r = srv_fault_exec_params(c, sql, n, NULL, params, lens, fmts, 0);
    ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return r;
    srv_pg_fail(c, r, sqlstate, err);
    return NULL;
}

int srv_exec(PGconn *c, const char *sql, cg_error *err) {
    PGresult *r = srv_q(c, sql, 0, NULL, NULL, NULL, err);
    if (!r) return -1;
    PQclear(r);
    return 0;
}

bool srv_sqlstate_unavailable(const char *sqlstate, PGconn *c) {
    if (c && PQstatus(c) != CONNECTION_OK) return true;
    if (!sqlstate || !sqlstate[0]) return true;
    return strncmp(sqlstate, "08", 2) == 0 || strncmp(sqlstate, "57", 2) == 0 || strncmp(sqlstate, "53", 2) == 0 ||
           strcmp(sqlstate, "40001") == 0 || strcmp(sqlstate, "40P01") == 0 || strcmp(sqlstate, "25006") == 0;
}
