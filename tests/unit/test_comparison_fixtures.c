/* Data-driven comparison/6 cases: tests/fixtures/comparison/<case>/input.json
 * holds {"verification", "baseline": [cohort rows], "candidate": [cohort rows]}
 * and expected.json the exact comparison JSON (pretty + "\n"). Also checks
 * that stored rows survive a write → parse round trip byte for byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "comparison/compare.h"

static cg_cohort_row *rows_of(cg_arena *a, const cg_jv *arr, size_t *n, const char *name) {
    *n = cg_jv_len(arr);
    cg_cohort_row *rows = cg_arena_zalloc(a, (*n ? *n : 1) * sizeof *rows);
    for (size_t i = 0; i < *n; i++) {
        cg_error err;
        if (cg_cohort_row_from_json(a, cg_jv_at(arr, i), &rows[i], &err) != 0) fail_msg("%s: %s", name, err.msg);
        /* stable storage form: writing the parsed row reproduces the stored object */
        cg_buf b = CG_BUF_INIT, c = CG_BUF_INIT;
        cg_cohort_row_write(&b, &rows[i]);
        cg_json_write(&c, cg_jv_at(arr, i), false);
        assert_string_equal(b.data, c.data);
        cg_buf_free(&b);
        cg_buf_free(&c);
    }
    return rows;
}

static void test_fixture_cases(void **st) {
    (void)st;
    const char *fx = getenv("CG_FIXTURES");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/comparison", fx ? fx : "fixtures");
    DIR *d = opendir(dir);
    assert_non_null(d);
    int cases = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "README")) continue;
        char ip[4400], ep[4400];
        snprintf(ip, sizeof ip, "%s/%s/input.json", dir, e->d_name);
        snprintf(ep, sizeof ep, "%s/%s/expected.json", dir, e->d_name);
        size_t len;
        cg_error err;
        char *in = cg_read_file(ip, 0, &len, &err);
        if (!in) fail_msg("%s", err.msg);
        char *want = cg_read_file(ep, 0, NULL, &err);
        if (!want) fail_msg("%s", err.msg);
        cg_arena a;
        cg_arena_init(&a, 0);
        cg_jv *v = cg_json_parse(&a, in, len, NULL, &err);
        assert_non_null(v);
        const char *kind = cg_jv_as_str(cg_jv_get(v, "verification"));
        assert_non_null(kind);
        size_t nb, nc;
        cg_cohort_row *rb = rows_of(&a, cg_jv_get(v, "baseline"), &nb, e->d_name);
        cg_cohort_row *rc = rows_of(&a, cg_jv_get(v, "candidate"), &nc, e->d_name);
        cg_jv *out = cg_compare_rows(&a, rb, nb, rc, nc,
                                     !strcmp(kind, "verified_bundles") ? CG_CMP_VERIFIED_BUNDLES
                                                                       : CG_CMP_UNVERIFIED_TRACES);
        cg_buf b = CG_BUF_INIT;
        cg_json_write(&b, out, true);
        cg_buf_putc(&b, '\n');
        if (strcmp(b.data, want) != 0) fail_msg("case %s differs:\n%s", e->d_name, b.data);
        cg_buf_free(&b);
        cg_arena_free(&a);
        free(in);
        free(want);
        cases++;
    }
    closedir(d);
    assert_true(cases >= 8);
}

static void test_row_parse_errors(void **st) {
    (void)st;
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_cohort_row r;
    cg_error err;
    static const char *bad[] = {
        "[]",
        "{\"schema\":\"candle-graph/cohort-row/2\"}",
        "{\"schema\":\"candle-graph/cohort-row/1\",\"run_id\":1}",
        "{\"schema\":\"candle-graph/cohort-row/1\",\"run_id\":\"r\",\"receipt\":5}",
    };
    static const char *msg[] = {
        "cohort row must be a JSON object",
        "unsupported cohort row schema candle-graph/cohort-row/2; expected candle-graph/cohort-row/1",
        "cohort row run_id must be a string",
        "cohort row receipt must be an object or null",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(cg_cohort_row_parse(&a, bad[i], strlen(bad[i]), &r, &err), -1);
        assert_string_equal(err.msg, msg[i]);
    }
    assert_int_equal(cg_cohort_row_parse(&a, "{", 1, &r, &err), -1);
    assert_true(!strncmp(err.msg, "parse cohort row: ", 18));
    cg_arena_free(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_cases),
        cmocka_unit_test(test_row_parse_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
