/* test_tmpdir.h — the one way a unit test makes its scratch directory
 * (header-only; not a test itself).
 *
 * test_tmpdir_in(buf, cap, tag) creates a fresh private directory
 * "cg-TAG-XXXXXX" with mkdtemp under $TMPDIR, or under the system's temporary
 * directory when TMPDIR is unset or empty (the rule mktemp(1) --tmpdir
 * follows), and writes its path into buf (cap bytes). 0, or -1 when the
 * directory cannot be made (path longer than cap, mkdtemp failed: errno).
 * test_tmpdir(tag) is the same with a malloc'd path (NULL on failure).
 * The caller removes the directory (cg_rm_rf) and frees a malloc'd path. */
#ifndef TEST_TMPDIR_H
#define TEST_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef P_tmpdir
#define P_tmpdir "/tmp"
#endif

static inline int test_tmpdir_in(char *buf, size_t cap, const char *tag) {
    const char *base = getenv("TMPDIR");
    int n = snprintf(buf, cap, "%s/cg-%s-XXXXXX", base && *base ? base : P_tmpdir, tag);
    if (n < 0 || (size_t)n >= cap) return -1;
    return mkdtemp(buf) ? 0 : -1;
}

static inline char *test_tmpdir(const char *tag) {
    char tmpl[4096];
    return test_tmpdir_in(tmpl, sizeof tmpl, tag) == 0 ? strdup(tmpl) : NULL;
}

#endif
