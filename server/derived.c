/* derived.c — derived views of stored bundles (srv_derived.h): each (bundle,
 * view) is built at most once at a time, by at most SRV_DERIVED_BUILDS builds
 * in the whole process, into a file of <data_dir>/derived that every later
 * request is served from (sendfile, no memory held). Stored bundles never
 * change, so a file never goes stale; the directory is emptied on the first
 * use in a process (a new server binary may render differently) and kept under
 * SRV_DERIVED_CACHE_BYTES by removing the least recently served files. */
#include <dirent.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "srv_derived.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static char building[SRV_DERIVED_BUILDS][96]; /* "<id>.<view>"; "" = free (guarded by mu) */
static bool dir_ready;                        /* guarded by mu */
static pthread_mutex_t heavy_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t heavy_cv = PTHREAD_COND_INITIALIZER;
static bool heavy_busy; /* guarded by heavy_mu */

bool srv_derived_trace_fits(uint64_t trace_bytes, uint64_t max_decoded) { return trace_bytes <= max_decoded; }

uint64_t srv_derived_view_limit(uint64_t trace_bytes) {
    uint64_t scaled = trace_bytes > UINT64_MAX / SRV_DERIVED_OUT_RATIO ? UINT64_MAX : trace_bytes * SRV_DERIVED_OUT_RATIO;
    return scaled > SRV_DERIVED_MAX_BYTES ? scaled : SRV_DERIVED_MAX_BYTES;
}

int srv_heavy_enter(uint64_t trace_bytes, int wait_s) {
    if (trace_bytes <= SRV_DERIVED_HEAVY_BYTES) return 0;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += wait_s;
    int rc = 1;
    pthread_mutex_lock(&heavy_mu);
    while (heavy_busy && rc == 1) {
        if (wait_s <= 0) pthread_cond_wait(&heavy_cv, &heavy_mu);
        else if (pthread_cond_timedwait(&heavy_cv, &heavy_mu, &until) == ETIMEDOUT && heavy_busy) rc = -1;
    }
    if (rc == 1) heavy_busy = true;
    pthread_mutex_unlock(&heavy_mu);
    return rc;
}

void srv_memory_trim(void) {
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

void srv_heavy_leave(int token) {
    if (token != 1) return;
    pthread_mutex_lock(&heavy_mu);
    heavy_busy = false;
    pthread_cond_signal(&heavy_cv);
    pthread_mutex_unlock(&heavy_mu);
}

static bool key_building(const char *key) {
    for (size_t i = 0; i < SRV_DERIVED_BUILDS; i++)
        if (!strcmp(building[i], key)) return true;
    return false;
}

static int free_slot(void) {
    for (int i = 0; i < SRV_DERIVED_BUILDS; i++)
        if (!building[i][0]) return i;
    return -1;
}

/* Creates (first use: empties) <data_dir>/derived. Called with mu held. */
static int prepare_dir(const char *dir, cg_error *err) {
    if (dir_ready) return 0;
    cg_rm_rf(dir);
    if (cg_mkdir_p(dir, err) < 0) return -1;
    dir_ready = true;
    return 0;
}

/* Removes the least recently served files until the directory holds at most
 * SRV_DERIVED_CACHE_BYTES (the file just built, keep, always stays). */
static void evict(const char *dir, const char *keep) {
    for (int round = 0; round < 64; round++) {
        DIR *d = opendir(dir);
        if (!d) return;
        uint64_t total = 0;
        char oldest[256] = "";
        struct timespec ot = {0, 0};
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char p[PATH_MAX + 300];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            struct stat st;
            if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode)) continue;
            total += (uint64_t)st.st_size;
            if (!strcmp(e->d_name, keep)) continue;
            if (!oldest[0] || st.st_mtim.tv_sec < ot.tv_sec ||
                (st.st_mtim.tv_sec == ot.tv_sec && st.st_mtim.tv_nsec < ot.tv_nsec)) {
                snprintf(oldest, sizeof oldest, "%s", e->d_name);
                ot = st.st_mtim;
            }
        }
        closedir(d);
        if (total <= SRV_DERIVED_CACHE_BYTES || !oldest[0]) return;
        char p[PATH_MAX + 300];
        snprintf(p, sizeof p, "%s/%s", dir, oldest);
        unlink(p);
    }
}

/* Opens the cached file (refreshing its mtime: recently served). -1 when absent. */
static int open_cached(const char *path, uint64_t *size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }
    futimens(fd, NULL);
    *size = (uint64_t)st.st_size;
    return fd;
}

/* Waits until key is built by nobody and a build slot is free (then takes it:
 * returns the slot), or the file appeared (returns -2), or the wait ran out
 * (-1). */
static int take_slot(const char *key, const char *path, int *fd, uint64_t *size) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += SRV_DERIVED_WAIT_S;
    pthread_mutex_lock(&mu);
    int slot = -1;
    for (;;) {
        if (!key_building(key)) {
            if ((*fd = open_cached(path, size)) >= 0) {
                slot = -2;
                break;
            }
            if ((slot = free_slot()) >= 0) {
                snprintf(building[slot], sizeof building[slot], "%s", key);
                break;
            }
        }
        if (pthread_cond_timedwait(&cv, &mu, &until) == ETIMEDOUT) {
            slot = -1;
            break;
        }
    }
    pthread_mutex_unlock(&mu);
    return slot;
}

static void release_slot(int slot) {
    pthread_mutex_lock(&mu);
    building[slot][0] = 0;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static enum MHD_Result answer_fail(srv_req *r, const srv_derive_fail *f) {
    cg_jv *d = NULL;
    if (f->limit) {
        d = cg_jv_obj(&r->arena);
        cg_jv_obj_put(&r->arena, d, "limit", cg_jv_str(&r->arena, f->limit));
    }
    return srv_fail(r, f->reason, d, "%s", f->msg);
}

/* Builds into a temp file beside path and renames it into place. */
static int build(srv_req *r, const char *id, const char *dir, const char *name, const char *path, srv_derive_fn fn,
                 srv_derive_fail *f) {
    char tmp[PATH_MAX + 300];
    snprintf(tmp, sizeof tmp, "%s/.%s.%s", dir, name, r->id);
    unlink(tmp);
    if (fn(r, id, tmp, f) < 0) {
        unlink(tmp);
        return -1;
    }
    struct stat st;
    if (stat(tmp, &st) != 0) {
        *f = (srv_derive_fail){CG_R_INTERNAL, NULL, "the derived view was not written", 0};
        return -1;
    }
    uint64_t limit = srv_derived_view_limit(f->trace_bytes);
    if ((uint64_t)st.st_size > limit) {
        unlink(tmp);
        f->reason = CG_R_PAYLOAD_TOO_LARGE;
        f->limit = "derived_view_bytes";
        snprintf(f->msg, sizeof f->msg, "the %s view would be %lld bytes (limit %llu)", strchr(name, '.') + 1,
                 (long long)st.st_size, (unsigned long long)limit);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        unlink(tmp);
        *f = (srv_derive_fail){CG_R_INTERNAL, NULL, "cannot store the derived view", 0};
        return -1;
    }
    evict(dir, name);
    return 0;
}

enum MHD_Result srv_derived_serve(srv_req *r, const char *id, const char *view, const char *ctype, srv_derive_fn fn) {
    char dir[PATH_MAX + 16], name[96], path[PATH_MAX + 120];
    snprintf(dir, sizeof dir, "%s/derived", r->s->cfg.data_dir);
    snprintf(name, sizeof name, "%s.%s", id, view);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cg_error err = {0};
    pthread_mutex_lock(&mu);
    int prc = prepare_dir(dir, &err);
    pthread_mutex_unlock(&mu);
    if (prc < 0) return srv_fail_unavailable(r, &err);
    int fd = -1;
    uint64_t size = 0;
    int slot = take_slot(name, path, &fd, &size);
    if (slot == -1) return srv_fail(r, CG_R_TOO_MANY_REQUESTS, NULL, "derived views are being built; retry later");
    if (slot >= 0) {
        srv_derive_fail f = {CG_R_INTERNAL, NULL, "", 0};
        int rc = build(r, id, dir, name, path, fn, &f);
        if (rc == 0) fd = open_cached(path, &size);
        release_slot(slot);
        if (rc < 0) return answer_fail(r, &f);
        if (fd < 0) return srv_fail(r, CG_R_INTERNAL, NULL, "the derived view of %s vanished", id);
    }
    return srv_reply_fd(r, fd, size, ctype, name, true);
}
