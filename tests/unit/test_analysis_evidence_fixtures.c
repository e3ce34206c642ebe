/* Evidence fixture corpus: tests/fixtures/evidence/<case>/ holds trace.jsonl, an
 * optional nsight/ directory and expected.json with the capability levels, the
 * findings (code → qualification), the facts (code → value), whether a graph is
 * built, and optional reason/gap checks. illustrative/ also pins report.md. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/evidence.h"
#include "base/fs.h"
#include "render/report.h"

static const char *dir_root(void) {
    const char *d = getenv("CG_FIXTURES");
    return d ? d : "fixtures";
}

static int check_case(const char *name, char *why, size_t whysz) {
    char base[3000], trace[3100], nsight[3100], exp_path[3100];
    snprintf(base, sizeof base, "%.1500s/evidence/%.1000s", dir_root(), name);
    snprintf(trace, sizeof trace, "%s/trace.jsonl", base);
    snprintf(nsight, sizeof nsight, "%s/nsight_input", base);
    snprintf(exp_path, sizeof exp_path, "%s/expected.json", base);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_error err;
    cg_err_clear(&err);
    int bad = 0;
#define FAILF(...) do { snprintf(why, whysz, __VA_ARGS__); bad = 1; goto out; } while (0)
    size_t len;
    char *text = cg_read_file(exp_path, 0, &len, &err);
    if (!text) FAILF("no expected.json: %.900s", err.msg);
    cg_jv *exp = cg_json_parse(&a, text, len, NULL, &err);
    free(text);
    if (!exp) FAILF("expected.json: %.900s", err.msg);
    cg_jv *p = cg_evidence_build_file(&a, trace, cg_is_dir(nsight) ? nsight : NULL, &err);
    if (!p) FAILF("evidence build failed: %.900s", err.msg);
    if (cg_evidence_validate_schema(p, &err) != 0) FAILF("schema: %.900s", err.msg);
    cg_jv *hg = cg_jv_get(exp, "has_graph");
    if (hg && (cg_jv_get(p, "graph") != NULL) != hg->u.b) FAILF("has_graph: expected %d", hg->u.b);
    cg_jv *caps = cg_jv_get(exp, "capabilities");
    for (size_t i = 0; i < cg_jv_len(caps); i++) {
        const cg_jmember *m = &caps->u.obj.m[i];
        const char *got = cg_jv_as_str(cg_jv_get(cg_jv_get(cg_jv_get(p, "capabilities"), m->key), "level"));
        if (!got || strcmp(got, cg_jv_as_str(m->val)))
            FAILF("capability %s: expected %s, got %s (%s)", m->key, cg_jv_as_str(m->val), got ? got : "(none)",
                  cg_jv_as_str(cg_jv_get(cg_jv_get(cg_jv_get(p, "capabilities"), m->key), "reason")));
    }
    cg_jv *findings = cg_jv_get(exp, "findings"), *pf = cg_jv_get(p, "findings");
    if (findings) {
        if (cg_jv_len(pf) != cg_jv_len(findings)) FAILF("findings: expected %zu, got %zu", cg_jv_len(findings), cg_jv_len(pf));
        for (size_t i = 0; i < cg_jv_len(pf); i++) {
            cg_jv *f = cg_jv_at(pf, i);
            const char *want = cg_jv_as_str(cg_jv_get(findings, cg_jv_as_str(cg_jv_get(f, "code"))));
            const char *q = cg_jv_as_str(cg_jv_get(f, "qualification"));
            if (!want || strcmp(want, q)) FAILF("finding %s: qualification %s, expected %s", cg_jv_as_str(cg_jv_get(f, "code")), q, want ? want : "(unexpected)");
        }
    }
    cg_jv *facts = cg_jv_get(exp, "facts"), *pfa = cg_jv_get(p, "facts");
    if (facts) {
        if (cg_jv_len(pfa) != cg_jv_len(facts)) FAILF("facts: expected %zu, got %zu", cg_jv_len(facts), cg_jv_len(pfa));
        for (size_t i = 0; i < cg_jv_len(pfa); i++) {
            cg_jv *f = cg_jv_at(pfa, i);
            const char *code = cg_jv_as_str(cg_jv_get(f, "code"));
            cg_jv *want = cg_jv_get(facts, code);
            if (!want || !cg_jv_equal(want, cg_jv_get(cg_jv_get(f, "value"), "value"))) FAILF("fact %s differs", code);
        }
    }
    cg_jv *suffix = cg_jv_get(exp, "reason_suffix"), *equals = cg_jv_get(exp, "reason_equals");
    for (int pass = 0; pass < 2; pass++) {
        cg_jv *set = pass ? equals : suffix;
        for (size_t i = 0; set && i < set->u.obj.n; i++) {
            const char *r = cg_jv_as_str(cg_jv_get(cg_jv_get(cg_jv_get(p, "capabilities"), set->u.obj.m[i].key), "reason"));
            const char *w = cg_jv_as_str(set->u.obj.m[i].val);
            size_t rl = r ? strlen(r) : 0, wl = strlen(w);
            bool ok = pass ? (r && !strcmp(r, w)) : (r && rl >= wl && !strcmp(r + rl - wl, w));
            if (!ok) FAILF("reason of %s: '%s' vs '%s'", set->u.obj.m[i].key, r ? r : "", w);
        }
    }
    uint64_t gc;
    if (cg_jv_as_u64(cg_jv_get(exp, "gaps_count"), &gc) && gc != cg_jv_len(cg_jv_get(p, "gaps")))
        FAILF("gaps: expected %llu, got %zu", (unsigned long long)gc, cg_jv_len(cg_jv_get(p, "gaps")));
    cg_jv *contains = cg_jv_get(exp, "gaps_contains");
    for (size_t i = 0; i < cg_jv_len(contains); i++) {
        bool found = false;
        cg_jv *gaps = cg_jv_get(p, "gaps");
        for (size_t j = 0; j < cg_jv_len(gaps); j++) found |= !strcmp(cg_jv_as_str(cg_jv_at(gaps, j)), cg_jv_as_str(cg_jv_at(contains, i)));
        if (!found) FAILF("gap missing: %s", cg_jv_as_str(cg_jv_at(contains, i)));
    }
    /* gaps are sorted and unique */
    cg_jv *gaps = cg_jv_get(p, "gaps");
    for (size_t j = 1; j < cg_jv_len(gaps); j++)
        if (strcmp(cg_jv_as_str(cg_jv_at(gaps, j - 1)), cg_jv_as_str(cg_jv_at(gaps, j))) >= 0) FAILF("gaps not sorted/unique");
    char md_path[3100];
    snprintf(md_path, sizeof md_path, "%s/report.md", base);
    if (cg_path_exists(md_path)) {
        char *want = cg_read_file(md_path, 0, &len, &err);
        cg_buf md = CG_BUF_INIT;
        cg_report_render(p, &md, &err);
        int differ = !want || strcmp(want, md.data);
        if (differ && getenv("CG_REGEN")) cg_write_file(md_path, md.data, md.len, false, &err);
        free(want);
        cg_buf_free(&md);
        if (differ) FAILF("report.md differs from the golden file");
    }
out:
    cg_arena_free(&a);
    return bad;
}

static void test_evidence_fixture_corpus(void **st) {
    (void)st;
    char path[4096];
    snprintf(path, sizeof path, "%s/evidence", dir_root());
    DIR *d = opendir(path);
    assert_non_null(d);
    int cases = 0, failures = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char why[1024] = "";
        int bad = check_case(de->d_name, why, sizeof why);
        printf("%-32s %s %s\n", de->d_name, bad ? "FAIL" : "ok", why);
        failures += bad;
        cases++;
    }
    closedir(d);
    assert_true(cases >= 7);
    assert_int_equal(failures, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_evidence_fixture_corpus)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
