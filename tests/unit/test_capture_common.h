/* test_capture_common.h — helpers shared by the tests/unit/test_capture_*.c
 * programs (header-only; include after <cmocka.h>). */
#ifndef TEST_CAPTURE_COMMON_H
#define TEST_CAPTURE_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "capture/capture.h"
#include "trace/health.h"
#include "trace/trace.h"
#include "test_tmpdir.h"

/* A fresh directory (test_tmpdir.h); caller frees, removes with cg_rm_rf. */
static inline char *cap_tmpdir(void) {
    char *d = test_tmpdir("capture");
    if (!d) {
        perror("test_tmpdir capture");
        abort();
    }
    return d;
}

/* Whole file as a malloc'd NUL-terminated string ("" when absent). */
static inline char *cap_slurp(const char *path) {
    size_t len = 0;
    char *d = cg_read_file(path, 0, &len, NULL);
    if (!d) {
        d = malloc(1);
        d[0] = '\0';
    }
    return d;
}

/* Parses path; fails the test with the reader's message on error. */
static inline cg_trace *cap_parse_ok(const char *path) {
    cg_error err;
    cg_err_clear(&err);
    cg_trace *t = cg_trace_read_file(path, NULL, &err);
    if (!t) fail_msg("trace %s rejected: %s", path, err.msg);
    return t;
}

/* Number of '\n'-terminated lines in s. */
static inline size_t cap_count_lines(const char *s) {
    size_t n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* Line i (0-based) of s without its newline, into a malloc'd string. */
static inline char *cap_line(const char *s, size_t i) {
    while (i-- > 0) {
        s = strchr(s, '\n');
        if (!s) return NULL;
        s++;
    }
    const char *e = strchr(s, '\n');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    char *out = malloc(n + 1);
    memcpy(out, s, n);
    out[n] = '\0';
    return out;
}

/* true when some line of s equals want exactly. */
static inline bool cap_has_line(const char *s, const char *want) {
    size_t wl = strlen(want);
    while (*s) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == wl && memcmp(s, want, n) == 0) return true;
        if (!e) break;
        s = e + 1;
    }
    return false;
}

/* A valid training run for "demo::step" on cpu, capture step 3. */
static inline cg_profile_run *cap_demo_run(void) {
    cg_profile_run *r = cg_profile_run_training("demo::step", 3, "cpu");
    assert_non_null(r);
    return r;
}

static inline cg_session *cap_open_ok(const char *path) {
    cg_error err;
    cg_err_clear(&err);
    cg_profile_run *r = cap_demo_run();
    cg_session *s = cg_session_open(path, r, &err);
    cg_profile_run_free(r);
    if (!s) fail_msg("open %s: %s", path, err.msg);
    return s;
}

/* Structural health: no error-severity issue. Prints the issues on failure. */
static inline void cap_assert_healthy(const cg_trace *t, bool want_complete) {
    cg_health *h = cg_health_analyze(t);
    assert_non_null(h);
    for (size_t i = 0; i < h->n_issues; i++)
        if (h->issues[i].severity == CG_SEV_ERROR)
            fprintf(stderr, "health error %s: %s\n", h->issues[i].code, h->issues[i].message);
    assert_true(h->structurally_valid);
    assert_int_equal(h->capture_complete, want_complete);
    cg_health_free(h);
}

#endif
