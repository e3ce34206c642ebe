/* janitor.c — background collection of leftovers: upload temp files, staging
 * dirs and blob temp files of crashed or killed requests, and fs blobs that no
 * bundle references (stored before a failed commit), each only once older than
 * the grace period (janitor_grace_s). A blob's mtime is refreshed whenever an
 * upload reuses it, and re-checked right before removal, so an upload that is
 * about to commit keeps its blobs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "base/fs.h"
#include "srv.h"
#include "srv_store.h"

static pthread_t thr;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static bool running, stop_flag;

static bool older_than(const struct stat *st, unsigned grace_s) {
    return time(NULL) - st->st_mtime >= (time_t)grace_s;
}

typedef struct sweep {
    const char *dir;
    unsigned grace_s;
    bool recursive;
    srv_server *s;
    PGconn *c;
} sweep;

/* One entry of a temp or staging directory: removed once older than grace. */
static cg_walk_action sweep_entry(void *ctx, const cg_walk_entry *e) {
    const sweep *w = ctx;
    if (!older_than(&e->st, w->grace_s)) return CG_WALK_SKIP;
    char p[PATH_MAX + 300];
    if (snprintf(p, sizeof p, "%s/%s", w->dir, e->name) >= (int)sizeof p) return CG_WALK_SKIP;
    if (S_ISDIR(e->st.st_mode)) {
        if (w->recursive) cg_rm_rf(p);
    } else {
        unlinkat(e->dirfd, e->name, 0);
    }
    srv_log("info", "janitor removed stale entry", "path", p, NULL);
    return CG_WALK_SKIP;
}

static void sweep_dir(const char *dir, unsigned grace_s, bool recursive) {
    sweep w = {.dir = dir, .grace_s = grace_s, .recursive = recursive};
    cg_error err = {0};
    cg_walk(dir, (cg_walk_limits){.max_depth = 0}, sweep_entry, &w, &err); /* missing: nothing to do */
}

/* One fs blob: removed when no bundle references it and it stayed older than
 * grace (re-checked right before the unlink). */
static cg_walk_action sweep_blob(void *ctx, const cg_walk_entry *e) {
    const sweep *w = ctx;
    if (!cg_is_sha256_hex(e->name) || !older_than(&e->st, w->grace_s)) return CG_WALK_SKIP;
    cg_error err = {0};
    int referenced = srv_store_blob_referenced(w->c, e->name, &err);
    if (referenced < 0) return CG_WALK_STOP; /* database gone: try again next round */
    struct stat st;
    if (!referenced && fstatat(e->dirfd, e->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && older_than(&st, w->grace_s) &&
        unlinkat(e->dirfd, e->name, 0) == 0)
        srv_log("info", "janitor removed orphan blob", "sha256", e->name, NULL);
    return CG_WALK_SKIP;
}

static void sweep_blobs(srv_server *s, PGconn *c) {
    sweep w = {.grace_s = s->cfg.janitor_grace_s, .s = s, .c = c};
    cg_error err = {0};
    srv_blob_tree_walk(&s->blobs, sweep_blob, &w, &err);
}

void srv_janitor_sweep(srv_server *s, PGconn *c) {
    char p[PATH_MAX + 32];
    snprintf(p, sizeof p, "%s/tmp", s->cfg.data_dir);
    sweep_dir(p, s->cfg.janitor_grace_s, false);
    snprintf(p, sizeof p, "%s/staging", s->cfg.data_dir);
    sweep_dir(p, s->cfg.janitor_grace_s, true);
    snprintf(p, sizeof p, "%s/tmp", s->blobs.root);
    sweep_dir(p, s->cfg.janitor_grace_s, false);
    if (s->blobs.kind == SRV_BLOB_FS && c) sweep_blobs(s, c);
}

static void *loop(void *arg) {
    srv_server *s = arg;
    pthread_mutex_lock(&mu);
    while (!stop_flag) {
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += s->cfg.janitor_interval_s ? s->cfg.janitor_interval_s : 1;
        pthread_cond_timedwait(&cv, &mu, &dl);
        if (stop_flag) break;
        pthread_mutex_unlock(&mu);
        cg_error err = {0};
        PGconn *c = srv_pool_get(s->pool, &err);
        if (c) {
            srv_janitor_sweep(s, c);
            srv_pool_put(s->pool, c);
        }
        pthread_mutex_lock(&mu);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

int srv_janitor_start(srv_server *s) {
    stop_flag = false;
    if (pthread_create(&thr, NULL, loop, s) != 0) return -1;
    running = true;
    return 0;
}

void srv_janitor_stop(void) {
    if (!running) return;
    pthread_mutex_lock(&mu);
    stop_flag = true;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(thr, NULL);
    running = false;
}
