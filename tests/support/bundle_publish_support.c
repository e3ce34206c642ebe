/* bundle_publish_support.c — see bundle_publish_support.h. */
#include "bundle_publish_support.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/fs.h"
#include "bundle/publish.h"

static void die(const char *what, const char *path) {
    fprintf(stderr, "bundle_publish_support: %s %s failed\n", what, path);
    abort();
}

static int str_cmp(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

char *tbs_listing(const char *dir, bool skip_hidden) {
    DIR *d = opendir(dir);
    if (!d) die("opendir", dir);
    char *names[64];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 64) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        if (skip_hidden && de->d_name[0] == '.') continue;
        if (!(names[n++] = strdup(de->d_name))) die("strdup", de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, str_cmp);
    cg_buf b = CG_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        cg_buf_puts(&b, names[i]);
        cg_buf_putc(&b, '\n');
        free(names[i]);
    }
    if (!b.data) cg_buf_puts(&b, "");
    return cg_buf_take(&b, NULL);
}

int tbs_count_bundles(const char *parent) {
    DIR *d = opendir(parent);
    if (!d) die("opendir", parent);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char *p = cg_path_join(parent, de->d_name);
        char *m = p ? cg_path_join(p, "bundle.json") : NULL;
        if (!m) die("path join", parent);
        if (cg_is_dir(p) && cg_path_exists(m)) n++;
        free(m);
        free(p);
    }
    closedir(d);
    return n;
}

static int g_kill_at;

static void kill_at_step(cg_publish_step s, const char *staging, void *ctx) {
    (void)staging;
    (void)ctx;
    if ((int)s == g_kill_at) raise(SIGKILL);
}

void tbs_kill_at_publish_step(int step) {
    g_kill_at = step;
    cg_publish_set_hook(kill_at_step, NULL);
}
