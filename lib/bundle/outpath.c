/* outpath.c — refuse command outputs that resolve inside an input bundle (§7). */
#include "bundle/outpath.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* p made absolute against the cwd (not normalized) into buf. */
static int join_cwd(const char *p, char *buf, size_t size) {
    if (p[0] == '/') {
        if (strlen(p) >= size) return -1;
        memcpy(buf, p, strlen(p) + 1);
        return 0;
    }
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return -1;
    int n = snprintf(buf, size, "%s/%s", cwd, p);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

int cg_bundle_path_lexical_abs(const char *p, char out[PATH_MAX]) {
    char tmp[PATH_MAX * 2];
    if (join_cwd(p, tmp, sizeof tmp) != 0) return -1;
    size_t o = 0;
    out[0] = '\0';
    for (char *s = tmp; *s;) {
        while (*s == '/') s++;
        if (!*s) break;
        char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 1 && s[0] == '.') {
        } else if (n == 2 && s[0] == '.' && s[1] == '.') {
            while (o > 0 && out[o - 1] != '/') o--;
            if (o > 0) o--;
            out[o] = '\0';
        } else {
            if (o + 1 + n >= PATH_MAX) return -1;
            out[o++] = '/';
            memcpy(out + o, s, n);
            o += n;
            out[o] = '\0';
        }
        s += n;
    }
    if (o == 0) {
        out[0] = '/';
        out[1] = '\0';
    }
    return 0;
}

/* Physical resolution: realpath of the longest existing prefix + the rest. */
static int physical(const char *p, char out[PATH_MAX]) {
    char work[PATH_MAX * 2];
    if (join_cwd(p, work, sizeof work) != 0) return -1;
    size_t len = strlen(work);
    for (;;) {
        char save = work[len];
        work[len] = '\0';
        char real[PATH_MAX];
        bool ok = realpath(work, real) != NULL;
        work[len] = save;
        if (ok) {
            char joined[PATH_MAX * 3];
            snprintf(joined, sizeof joined, "%s/%s", real, work + len);
            return cg_bundle_path_lexical_abs(joined, out);
        }
        size_t k = len;
        while (k > 0 && work[k - 1] != '/') k--;
        if (k <= 1) return cg_bundle_path_lexical_abs(work, out);
        len = k - 1;
    }
}

static bool inside(const char *path, const char *root) {
    size_t n = strlen(root);
    if (!strcmp(root, "/")) return true;
    return !strncmp(path, root, n) && (path[n] == '\0' || path[n] == '/');
}

/* The crate's resolve_write_path: walk the absolute (cwd-joined) path component
 * by component, resolving every component that exists (symlinks included) and
 * keeping the rest lexically; *traversed is set when any intermediate path lay
 * inside root. 0, or -1 when a path does not fit. */
static int resolve_write_path(const char *p, const char *root, char out[PATH_MAX], bool *traversed) {
    char work[PATH_MAX * 2];
    if (join_cwd(p, work, sizeof work) != 0) return -1;
    size_t o = 0;
    out[0] = '/';
    out[1] = '\0';
    *traversed = inside(out, root);
    for (char *s = work; *s;) {
        while (*s == '/') s++;
        if (!*s) break;
        char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 2 && s[0] == '.' && s[1] == '.') {
            while (o > 0 && out[o - 1] != '/') o--;
            if (o > 0) o--;
            out[o] = '\0';
        } else if (!(n == 1 && s[0] == '.')) {
            if (o + 1 + n >= PATH_MAX) return -1;
            out[o++] = '/';
            memcpy(out + o, s, n);
            o += n;
            out[o] = '\0';
            struct stat st;
            char real[PATH_MAX];
            if (lstat(out, &st) == 0 && realpath(out, real)) {
                o = strlen(real);
                memcpy(out, real, o + 1);
                if (o == 1) o = 0; /* "/" */
            }
        }
        if (o == 0) {
            out[0] = '/';
            out[1] = '\0';
        }
        *traversed |= inside(out, root);
        s += n;
    }
    return 0;
}

int cg_bundle_check_output_path(const char *output, const char *bundle_root, cg_error *err) {
    if (!output || !strcmp(output, "-")) return 0;
    char out_lex[PATH_MAX], root_lex[PATH_MAX], out_phys[PATH_MAX], root_phys[PATH_MAX];
    if (cg_bundle_path_lexical_abs(output, out_lex) != 0 ||
        cg_bundle_path_lexical_abs(bundle_root, root_lex) != 0)
        return cg_err_set(err, CG_EIO, "resolve output path %s: %s", output, strerror(errno ? errno : ENAMETOOLONG));
    if (physical(bundle_root, root_phys) != 0) memcpy(root_phys, root_lex, sizeof root_lex);
    bool traversed = false;
    if (resolve_write_path(output, root_phys, out_phys, &traversed) != 0) memcpy(out_phys, out_lex, sizeof out_lex);
    if (traversed || inside(out_lex, root_lex) || inside(out_phys, root_phys) || inside(out_lex, root_phys) ||
        inside(out_phys, root_lex))
        return cg_err_set(err, CG_EINVAL, "refusing to write command output %s inside verified bundle %s", output,
                          bundle_root);
    return 0;
}
