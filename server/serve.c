/* serve.c — `serve`: start-up order (signals, sodium, config, database and
 * migrations, blob store, HTTP) and graceful shutdown on SIGTERM/SIGINT
 * (stop accepting, let in-flight uploads finish within the grace period, stop
 * the janitor, close the pool, stop the embedded cluster). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "base/alloc.h"
#include "base/fs.h"
#include "base/spill.h"
#include "srv.h"
#include "srv_web.h"
#include "srv_history.h"
#include "srv_views.h"

/* The data dir and its upload/staging areas are private to the server's user
 * (0700; the embedded cluster's user is let through the data dir by pgembed). */
static int private_dir(const char *p, cg_error *err) {
    if (cg_mkdir_p(p, err) < 0) return -1;
    if (chmod(p, 0700) != 0) return cg_err_set(err, CG_EIO, "chmod %s: %s", p, strerror(errno));
    return 0;
}

static int prepare_dirs(const srv_config *cfg, cg_error *err) {
    char p[PATH_MAX + 32];
    if (private_dir(cfg->data_dir, err) < 0) return -1;
    snprintf(p, sizeof p, "%s/tmp", cfg->data_dir);
    if (private_dir(p, err) < 0) return -1;
    snprintf(p, sizeof p, "%s/staging", cfg->data_dir);
    return private_dir(p, err);
}

/* base/alloc.h's OOM handler of the server: the first exhaustion gives back
 * an emergency reserve; every one writes one log line (with write(2): the
 * heap is exhausted) and lets the allocation be retried once, so the request
 * in progress and every other one go on instead of the process ending. */
#define OOM_RESERVE_BYTES ((size_t)16 << 20)
static _Atomic(void *) oom_reserve;

static bool server_oom(size_t bytes) {
    static const char line[] = "{\"level\":\"error\",\"msg\":\"out of memory: allocation retried\"}\n";
    (void)bytes;
    cg_free(atomic_exchange(&oom_reserve, NULL));
    ssize_t w = write(STDERR_FILENO, line, sizeof line - 1);
    (void)w;
    return true;
}

/* The server's large blocks (an ingest's trace and derivations above all)
 * live in unnamed files of <data>/staging and the resident set stays under
 * --resident-budget-bytes (base/spill.h); a data dir on tmpfs, or
 * --resident-budget-bytes 0, keeps them in memory. */
static void start_spilling(const srv_config *cfg) {
    if (!cfg->resident_budget) {
        srv_log("info", "spilling off", "reason", "--resident-budget-bytes 0", NULL);
        return;
    }
    char dir[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/staging", cfg->data_dir);
    cg_error err = {0};
    if (cg_spill_enable(dir, cfg->spill_min_bytes, cfg->resident_budget, &err) < 0)
        srv_log("warn", "spilling off: ingests hold their traces in memory", "error", err.msg, NULL);
}

int srv_cmd_serve(int argc, char **argv) {
    srv_server *s = calloc(1, sizeof *s);
    if (!s) return 1;
    srv_config_defaults(&s->cfg);
    for (int i = 1; i < argc; i++) {
        int r = srv_config_flag(&s->cfg, argc, argv, &i);
        if (r < 0) return 2;
        if (r == 0) {
            fprintf(stderr, "candle-graph-server serve: unknown flag %s\n", argv[i]);
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    atomic_store(&oom_reserve, cg_try_alloc(OOM_RESERVE_BYTES, 1)); /* untouched: costs no RSS */
    cg_set_oom_handler(server_oom);
    if (sodium_init() < 0) {
        fprintf(stderr, "candle-graph-server: libsodium initialisation failed\n");
        return 1;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* every thread inherits the mask; main waits */

    cg_error err = {0};
    srv_pgembed pg;
    memset(&pg, 0, sizeof pg);
    int rc = 1;
    if (prepare_dirs(&s->cfg, &err) < 0) goto fail;
    start_spilling(&s->cfg);
    if (s->cfg.database_url) {
        snprintf(s->conninfo, sizeof s->conninfo, "%s", s->cfg.database_url);
    } else if (srv_pgembed_start(&pg, &s->cfg, s->conninfo, sizeof s->conninfo, &err) < 0) {
        goto fail;
    }
    PGconn *mc = srv_db_connect(s->conninfo, 600000, &err);
    if (!mc) goto fail;
    if (srv_migrate(mc, true, &err) < 0) {
        PQfinish(mc);
        goto fail;
    }
    PQfinish(mc);
    if (srv_blob_init(&s->blobs, s->cfg.blob_kind, s->cfg.data_dir, &err) < 0) goto fail;
    s->pool = srv_pool_new(s->conninfo, s->cfg.pool_size, s->cfg.pool_wait_ms, s->cfg.statement_timeout_ms);
    if (!s->pool) {
        cg_err_set(&err, CG_ENOMEM, "out of memory");
        goto fail;
    }
    pthread_mutex_init(&s->upload_mu, NULL);
    pthread_cond_init(&s->upload_cv, NULL);
    s->upload_slots = s->cfg.max_uploads; /* 0: uploads refused (429), reads still served */
    if (srv_janitor_start(s) < 0) {
        cg_err_set(&err, CG_EIO, "cannot start the janitor thread");
        goto fail;
    }
    if (srv_webhook_start(s) < 0) { /* issue 15: webhook outbox delivery */
        srv_janitor_stop();
        cg_err_set(&err, CG_EIO, "cannot start the webhook delivery thread");
        goto fail;
    }
    if (srv_http_start(s, &err) < 0) {
        srv_webhook_stop();
        srv_janitor_stop();
        goto fail;
    }
    char port[16];
    snprintf(port, sizeof port, "%u", s->cfg.listen_port);
    srv_log("info", "listening", "host", s->cfg.listen_host, "port", port, "database",
            s->cfg.database_url ? "external" : "embedded", "blob_store", s->cfg.blob_kind == SRV_BLOB_PG ? "pg" : "fs",
            NULL);
    int sig = 0;
    while (sigwait(&set, &sig) != 0) {
    }
    srv_log("info", "shutting down", "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT", NULL);
    atomic_store(&s->stopping, true);
    pthread_mutex_lock(&s->upload_mu);
    pthread_cond_broadcast(&s->upload_cv);
    pthread_mutex_unlock(&s->upload_mu);
    srv_http_stop(s, s->cfg.shutdown_grace_s);
    srv_webhook_stop();
    srv_janitor_stop();
    rc = 0;
    goto done;
fail:
    srv_log("error", "cannot start", "error", err.msg, NULL);
    fprintf(stderr, "candle-graph-server: %s\n", err.msg);
done:
    srv_timeline_stop(s);
    srv_views_stop(s);
    srv_pool_free(s->pool);
    srv_pgembed_stop(&pg);
    if (rc == 0) srv_log("info", "stopped", NULL);
    srv_config_free(&s->cfg);
    cg_free(s);
    return rc;
}
