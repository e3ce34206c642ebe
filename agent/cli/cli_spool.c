/* cli_spool.c — capture spool (see cli_spool.h). */
#include "cli_spool.h"

#include "base/alloc.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"

static char *join(const char *a, const char *b) {
    char *p = cg_path_join(a, b);
    if (!p) cg_oom_exit(strlen(a) + strlen(b)); /* the CLI's OOM policy (base/alloc.h) */
    return p;
}

int cli_spool_init(const char *spool, cg_error *err) {
    static const char *const sub[] = {".incoming", "ready", "sent", "rejected"};
    for (size_t i = 0; i < 4; i++) {
        char *p = join(spool, sub[i]);
        int rc = cg_mkdir_p(p, err);
        cg_free(p);
        if (rc != 0) return cg_err_context(err, "spool %s", spool);
    }
    /* .incoming/<entry> of a writer that died mid-copy: never finalized. */
    char *inc = join(spool, ".incoming");
    DIR *d = opendir(inc);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            unsigned long long ns = 0;
            long pid = 0;
            if (sscanf(e->d_name, "%20llu-%ld-", &ns, &pid) == 2 && pid > 0 &&
                kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
                char *p = join(inc, e->d_name);
                cg_rm_rf(p);
                cg_free(p);
            }
        }
        closedir(d);
    }
    cg_free(inc);
    return 0;
}

/* Copies a tree of regular files and folders; anything else is refused. */
static int copy_tree(const char *src, const char *dst, cg_error *err) {
    if (mkdir(dst, 0755) != 0) return cg_err_set(err, CG_EIO, "mkdir %s: %s", dst, strerror(errno));
    DIR *d = opendir(src);
    if (!d) return cg_err_set(err, CG_EIO, "open %s: %s", src, strerror(errno));
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char *s = join(src, e->d_name), *t = join(dst, e->d_name);
        struct stat st;
        if (lstat(s, &st) != 0) rc = cg_err_set(err, CG_EIO, "stat %s: %s", s, strerror(errno));
        else if (S_ISDIR(st.st_mode)) rc = copy_tree(s, t, err);
        else if (S_ISREG(st.st_mode)) rc = cg_copy_file(s, t, err);
        else rc = cg_err_set(err, CG_EINVAL, "%s: not a regular file or folder", s);
        cg_free(s);
        cg_free(t);
    }
    closedir(d);
    if (rc == 0) rc = cg_fsync_path(dst, err);
    return rc;
}

int cli_spool_enqueue(const char *spool, const char *bundle_dir, const char *sidecar,
                      char **entry_out, cg_error *err) {
    if (cli_spool_init(spool, err) != 0) return -1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned long long ns = (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
    char name[512];
    const char *base = cg_path_base(bundle_dir);
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) base = "bundle";
    snprintf(name, sizeof name, "%020llu-%ld-%s", ns, (long)getpid(), base);
    char *inc_dir = join(spool, ".incoming"), *ready_dir = join(spool, "ready");
    char *stage = join(inc_dir, name), *ready = join(ready_dir, name);
    char *stage_bundle = join(stage, "bundle");
    int rc = -1;
    if (mkdir(stage, 0755) != 0) {
        cg_err_set(err, CG_EIO, "mkdir %s: %s", stage, strerror(errno));
        goto out;
    }
    if (copy_tree(bundle_dir, stage_bundle, err) != 0) goto fail;
    if (sidecar) {
        char *sc = join(stage, "bundle.sig.json");
        int c = cg_copy_file(sidecar, sc, err);
        cg_free(sc);
        if (c != 0) goto fail;
    }
    if (cg_fsync_path(stage, err) != 0) goto fail;
    if (rename(stage, ready) != 0) {
        cg_err_set(err, CG_EIO, "rename %s: %s", stage, strerror(errno));
        goto fail;
    }
    if (cg_fsync_path(ready_dir, err) != 0 || cg_fsync_path(inc_dir, err) != 0) goto out;
    if (entry_out) {
        *entry_out = ready;
        ready = NULL;
    }
    rc = 0;
    goto out;
fail:
    cg_rm_rf(stage);
out:
    cg_free(inc_dir);
    cg_free(ready_dir);
    cg_free(stage);
    cg_free(ready);
    cg_free(stage_bundle);
    return rc;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int cli_spool_list(const char *spool, const char *state, char ***names, size_t *n,
                   cg_error *err) {
    *names = NULL;
    *n = 0;
    char *dir = join(spool, state);
    DIR *d = opendir(dir);
    if (!d) {
        cg_err_set(err, CG_EIO, "open %s: %s", dir, strerror(errno));
        cg_free(dir);
        return -1;
    }
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (*n == cap) *names = cg_xgrow(*names, &cap, *n + 1, sizeof **names);
        char *copy = cg_xstrdup(e->d_name);
        (*names)[(*n)++] = copy;
    }
    closedir(d);
    cg_free(dir);
    if (*n) qsort(*names, *n, sizeof **names, cmp_str);
    return 0;
}

void cli_spool_names_free(char **names, size_t n) {
    for (size_t i = 0; i < n; i++) cg_free(names[i]);
    cg_free(names);
}

int cli_spool_move(const char *spool, const char *entry, const char *state, const char *note_name,
                   const void *data, size_t len, cg_error *err) {
    if (strcmp(state, "sent") != 0 && strcmp(state, "rejected") != 0)
        return cg_err_set(err, CG_EINVAL, "unknown spool state %s", state);
    char *ready_dir = join(spool, "ready"), *dest_dir = join(spool, state);
    char *from = join(ready_dir, entry), *to = join(dest_dir, entry);
    int rc = -1;
    if (note_name) {
        char *note = join(from, note_name);
        int w = cg_write_file_atomic(note, data, len, err);
        cg_free(note);
        if (w != 0) goto out;
    }
    if (rename(from, to) != 0) {
        cg_err_set(err, CG_EIO, "rename %s -> %s: %s", from, to, strerror(errno));
        goto out;
    }
    if (cg_fsync_path(dest_dir, err) != 0 || cg_fsync_path(ready_dir, err) != 0) goto out;
    rc = 0;
out:
    cg_free(ready_dir);
    cg_free(dest_dir);
    cg_free(from);
    cg_free(to);
    return rc;
}
