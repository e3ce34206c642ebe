/* janitor.c — background collection of leftovers: upload temp files, staging
 * dirs and blob temp files of crashed or killed requests, and fs blobs that no
 * bundle references (stored before a failed commit), each only once older than
 * the grace period (janitor_grace_s). A blob's mtime is refreshed whenever an
 * upload reuses it, and re-checked right before removal, so an upload that is
 * about to commit keeps its blobs. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "srv.h"

static pthread_t thr;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static bool running, stop_flag;

static bool older_than(const struct stat *st, unsigned grace_s) {
    return time(NULL) - st->st_mtime >= (time_t)grace_s;
}

static void sweep_dir(const char *dir, unsigned grace_s, bool recursive) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[PATH_MAX + 300];
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p) continue;
        struct stat st;
        if (lstat(p, &st) != 0 || !older_than(&st, grace_s)) continue;
        if (S_ISDIR(st.st_mode)) {
            if (recursive) cg_rm_rf(p);
        } else {
            unlink(p);
        }
        srv_log("info", "janitor removed stale entry", "path", p, NULL);
    }
    closedir(d);
}

static void sweep_blobs(srv_server *s, PGconn *c) {
    char root[PATH_MAX + 16];
    snprintf(root, sizeof root, "%s/sha256", s->blobs.root);
    DIR *d = opendir(root);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strlen(e->d_name) != 2 || !isxdigit((unsigned char)e->d_name[0]) || !isxdigit((unsigned char)e->d_name[1])) continue;
        char sub[PATH_MAX + 32];
        if (snprintf(sub, sizeof sub, "%s/%s", root, e->d_name) >= (int)sizeof sub) continue;
        DIR *d2 = opendir(sub);
        if (!d2) continue;
        struct dirent *f;
        while ((f = readdir(d2))) {
            if (!cg_is_sha256_hex(f->d_name)) continue;
            char p[PATH_MAX + 128];
            if (snprintf(p, sizeof p, "%s/%s", sub, f->d_name) >= (int)sizeof p) continue;
            struct stat st;
            if (lstat(p, &st) != 0 || !older_than(&st, s->cfg.janitor_grace_s)) continue;
            cg_error err = {0};
            const char *q[1] = {f->d_name};
            PGresult *r = srv_q(c, "SELECT 1 FROM bundle_files WHERE sha256 = $1 LIMIT 1", 1, q, NULL, NULL, &err);
            if (!r) {
                closedir(d2);
                closedir(d);
                return; /* database gone: try again next round */
            }
            bool referenced = PQntuples(r) > 0;
            PQclear(r);
            if (referenced) continue;
            if (lstat(p, &st) == 0 && older_than(&st, s->cfg.janitor_grace_s) && unlink(p) == 0)
                srv_log("info", "janitor removed orphan blob", "sha256", f->d_name, NULL);
        }
        closedir(d2);
    }
    closedir(d);
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
