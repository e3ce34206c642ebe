/* dirnames.c — sorted directory entry names (see dirnames.h). */
#include "bundle/dirnames.h"
#include "base/alloc.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cg_dir_name_cmp(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

void cg_dir_names_free(char **names, size_t n) {
    for (size_t i = 0; i < n; i++) cg_free(names[i]);
    cg_free(names);
}

static int names_of(DIR *d, const char *dir, const char *what, char ***out, size_t *out_n, cg_error *err);

static int names_error(const char *dir, const char *what, int e, cg_error *err) {
    if (e == ENOMEM) return cg_err_set(err, CG_ENOMEM, "out of memory");
    return cg_err_set(err, CG_EIO, "read %s directory %s: %s", what, dir, strerror(e));
}

int cg_dir_names_sorted(const char *dir, const char *what, char ***out, size_t *out_n, cg_error *err) {
    *out = NULL;
    *out_n = 0;
    DIR *d = opendir(dir);
    if (!d) return names_error(dir, what, errno, err);
    return names_of(d, dir, what, out, out_n, err);
}

int cg_dir_names_sorted_fd(int fd, const char *dir, const char *what, char ***out, size_t *out_n, cg_error *err) {
    *out = NULL;
    *out_n = 0;
    int own = dup(fd);
    DIR *d = own >= 0 ? fdopendir(own) : NULL;
    if (!d) {
        int e = errno;
        if (own >= 0) close(own);
        return names_error(dir, what, e, err);
    }
    rewinddir(d);
    return names_of(d, dir, what, out, out_n, err);
}

/* Reads, closes and sorts d. */
static int names_of(DIR *d, const char *dir, const char *what, char ***out, size_t *out_n, cg_error *err) {
    char **names = NULL;
    size_t n = 0, cap = 0;
    int e = 0;
    struct dirent *de;
    errno = 0;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) {
                e = ENOMEM;
                break;
            }
            names = nn;
        }
        if (!(names[n] = strdup(de->d_name))) {
            e = ENOMEM;
            break;
        }
        n++;
        errno = 0;
    }
    if (!e && errno) e = errno;
    closedir(d);
    if (e) {
        cg_dir_names_free(names, n);
        return names_error(dir, what, e, err);
    }
    if (n > 1) qsort(names, n, sizeof *names, cg_dir_name_cmp);
    *out = names;
    *out_n = n;
    return 0;
}
