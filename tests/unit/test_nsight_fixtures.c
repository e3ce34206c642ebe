/* Data-driven Nsight fixtures: every tests/fixtures/nsight/<case>/ with a
 * case.json is loaded with cg_nsight_load_ex (+ cg_nsight_bind_to_trace when
 * case.json has "bind") and cg_nsight_to_json must equal expected.json, both
 * as a JSON value (cg_jv_equal) and byte for byte as pretty JSON + "\n" (field
 * order is part of the contract). Paths under the case folder are written as
 * "$CASE". On a mismatch the actual output is written to
 * $CG_BINARY_DIR/nsight-fixtures/<case>.actual.json for `diff`.
 * CG_NSIGHT_REGEN=1 writes expected.json instead (for review; never in CI). */
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
#include "base/json.h"
#include "nsight/nsight.h"

static int cmp_name(const void *x, const void *y) {
    return strcmp(*(char *const *)x, *(char *const *)y);
}

static cg_strlist list_of(cg_arena *a, const cg_jv *case_json, const char *key) {
    cg_strlist l = {NULL, 0};
    const cg_jv *v = cg_jv_get(case_json, key);
    if (!v || v->type != CG_JARR) return l;
    l.items = cg_arena_alloc(a, (cg_jv_len(v) + 1) * sizeof(char *));
    for (size_t i = 0; i < cg_jv_len(v); i++) l.items[l.n++] = cg_jv_as_str(cg_jv_at(v, i));
    return l;
}

/* Replaces every occurrence of `from` in s with `to` (malloc'd result). */
static char *replace_all(const char *s, const char *from, const char *to) {
    cg_buf b = CG_BUF_INIT;
    size_t fl = strlen(from);
    const char *p = s, *q;
    while ((q = strstr(p, from)) != NULL) {
        cg_buf_append(&b, p, (size_t)(q - p));
        cg_buf_puts(&b, to);
        p = q + fl;
    }
    cg_buf_puts(&b, p);
    return cg_buf_take(&b, NULL);
}

static bool run_case(const char *root, const char *name, bool regen) {
    cg_arena a;
    cg_arena_init(&a, 0);
    bool ok = false;
    char *case_dir = cg_path_join(root, name);
    char *case_path = cg_path_join(case_dir, "case.json");
    char *exp_path = cg_path_join(case_dir, "expected.json");
    char *input = NULL, *actual_text = NULL, *exp_text = NULL;
    cg_error err;
    size_t len;
    char *text = cg_read_file(case_path, 1 << 20, &len, &err);
    if (!text) {
        print_error("%s: %s\n", name, err.msg);
        goto out;
    }
    cg_jv *cj = cg_json_parse(&a, text, len, NULL, &err);
    free(text);
    if (!cj) {
        print_error("%s: case.json: %s\n", name, err.msg);
        goto out;
    }
    cg_strlist req = list_of(&a, cj, "required"), gpu = list_of(&a, cj, "gpu_expected"),
               cpu = list_of(&a, cj, "cpu_only");
    const cg_jv *jin = cg_jv_get(cj, "input");
    /* messages quoting the directory name it by its case-relative name */
    const char *display = !jin ? "input" : jin->type == CG_JSTR ? cg_jv_as_str(jin) : NULL;
    if (display) input = cg_path_join(case_dir, display);
    cg_nsight_limits lim;
    cg_nsight_limits_default(&lim);
    const cg_jv *jl = cg_jv_get(cj, "limits");
    uint64_t u;
    if (jl) {
        if (cg_jv_as_u64(cg_jv_get(jl, "max_rows"), &u)) lim.max_rows = u;
        if (cg_jv_as_u64(cg_jv_get(jl, "max_field_bytes"), &u)) lim.max_field_bytes = (size_t)u;
        if (cg_jv_as_u64(cg_jv_get(jl, "max_columns"), &u)) lim.max_columns = (size_t)u;
        if (cg_jv_as_u64(cg_jv_get(jl, "max_csv_bytes"), &u)) lim.max_csv_bytes = u;
    }
    cg_nsight_evidence *ev = cg_nsight_load_as(&a, input, display, &req, &gpu, &cpu, &lim);
    const cg_jv *bind = cg_jv_get(cj, "bind");
    if (bind && bind->type == CG_JOBJ)
        cg_nsight_bind_to_trace(ev, cg_jv_as_str(cg_jv_get(bind, "run_id")),
                                cg_jv_as_str(cg_jv_get(bind, "correlation_id")));
    cg_jv *out = cg_nsight_to_json(&a, ev);
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, out, true);
    cg_buf_putc(&b, '\n');
    actual_text = replace_all(b.data, case_dir, "$CASE");
    cg_buf_free(&b);
    if (regen) {
        ok = cg_write_file(exp_path, actual_text, strlen(actual_text), false, &err) == 0;
        goto out;
    }
    exp_text = cg_read_file(exp_path, 64 << 20, &len, &err);
    if (!exp_text) {
        print_error("%s: expected.json: %s\n", name, err.msg);
        goto out;
    }
    cg_jv *want = cg_json_parse(&a, exp_text, len, NULL, &err);
    cg_jv *got = cg_json_parse(&a, actual_text, strlen(actual_text), NULL, &err);
    if (!want || !got) {
        print_error("%s: unparsable JSON: %s\n", name, err.msg);
        goto out;
    }
    bool equal = cg_jv_equal(want, got);
    bool bytes = strcmp(exp_text, actual_text) == 0;
    if (equal && bytes) {
        ok = true;
        goto out;
    }
    const char *bin = getenv("CG_BINARY_DIR");
    char *adir = cg_path_join(bin ? bin : ".", "nsight-fixtures");
    cg_mkdir_p(adir, NULL);
    char *fname = cg_arena_printf(&a, "%s.actual.json", name);
    char *apath = cg_path_join(adir, fname);
    cg_write_file(apath, actual_text, strlen(actual_text), false, NULL);
    print_error("fixture %s: output differs from expected.json (%s)\n  diff %s %s\n", name,
                equal ? "same value, different field order or formatting" : "different value",
                exp_path, apath);
    free(apath);
    free(adir);
out:
    free(exp_text);
    free(actual_text);
    free(input);
    free(exp_path);
    free(case_path);
    free(case_dir);
    cg_arena_free(&a);
    return ok;
}

static void test_nsight_fixture_cases(void **st) {
    (void)st;
    const char *fx = getenv("CG_FIXTURES");
    char *root = cg_path_join(fx ? fx : "fixtures", "nsight");
    bool regen = getenv("CG_NSIGHT_REGEN") != NULL;
    DIR *d = opendir(root);
    assert_non_null(d);
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        char *cdir = cg_path_join(root, de->d_name);
        char *cj = cg_path_join(cdir, "case.json");
        bool is_case = cg_path_exists(cj);
        free(cj);
        free(cdir);
        if (!is_case) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, cap * sizeof *names);
            assert_non_null(names);
        }
        names[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_name);
    size_t failed = 0;
    for (size_t i = 0; i < n; i++) {
        if (!run_case(root, names[i], regen)) failed++;
        free(names[i]);
    }
    free(names);
    free(root);
    print_message("nsight fixtures: %zu cases, %zu failed%s\n", n, failed, regen ? " (regenerated)" : "");
    assert_true(n >= 35); /* the folder must not silently lose cases */
    assert_int_equal(failed, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nsight_fixture_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
