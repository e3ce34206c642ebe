/* analysis/evidence_read: a published evidence.json read with lazy arrays must
 * be the value cg_json_parse builds (equal, and written to the same bytes,
 * pretty and compact), for every fixture evidence file and a generated
 * 20,000-record packet; a damaged text must fail with cg_json_parse's exact
 * message at every truncation point and on byte mutations; lazy items can be
 * walked repeatedly, skipped ahead and restarted; and each limit of the
 * reader (item bytes, tree bytes, items, depth and string inside a lazy item)
 * refuses with its own message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/evidence_read.h"
#include "base/fs.h"
#include "render/artifacts.h"
#include "test_tmpdir.h"

/* the benchmark's synthetic trace generator, as a function */
int cg_bench_gen_trace_main(int argc, char **argv);
#define main cg_bench_gen_trace_main
#include "../../bench/trace_ingest/gen_trace.c"
#undef main

static char *tmpdir;

static int setup(void **state) {
    (void)state;
    tmpdir = test_tmpdir("evread");
    return tmpdir ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    int rc = cg_rm_rf(tmpdir);
    free(tmpdir);
    return rc == 0 ? 0 : -1;
}

static const char *fixtures(void) {
    const char *d = getenv("CG_FIXTURES");
    return d ? d : "fixtures";
}

static void write_text(const char *path, const char *s, size_t n) {
    cg_error err;
    cg_err_clear(&err);
    assert_int_equal(cg_write_file(path, s, n, false, &err), 0);
}

static bool bytes_equal(const cg_jv *a, const cg_jv *b, bool pretty) {
    cg_buf x = CG_BUF_INIT, y = CG_BUF_INIT;
    cg_json_write(&x, a, pretty);
    cg_json_write(&y, b, pretty);
    bool same = x.len == y.len && !memcmp(x.data, y.data, x.len);
    cg_buf_free(&x);
    cg_buf_free(&y);
    return same;
}

/* Reads path both ways (limits of the CLI: depth 128). Returns 1 when both
 * parsed to the same value and bytes, 0 when both failed with the same
 * message, -1 (why set) on any difference. */
static int read_equals_parse(const char *path, const cg_evidence_read_limits *lim, char *why, size_t whysz) {
    cg_error e1, e2;
    cg_err_clear(&e1);
    cg_err_clear(&e2);
    size_t len = 0;
    char *text = cg_read_file(path, 0, &len, &e1);
    assert_non_null(text);
    cg_arena a, b;
    cg_arena_init(&a, 0);
    cg_arena_init(&b, 0);
    cg_jv *dom = cg_json_parse(&a, text, len, &lim->json, &e1);
    cg_evidence_file *f = cg_evidence_file_open(path, false, &e2);
    assert_non_null(f);
    cg_jv *lazy = cg_evidence_file_parse(f, &b, lim, &e2);
    int r = -1;
    if (!dom || !lazy) {
        if (!dom && !lazy && !strcmp(e1.msg, e2.msg) && e1.code == e2.code) r = 0;
        else snprintf(why, whysz, "%.200s: parse %.300s / read %.300s", path, dom ? "ok" : e1.msg, lazy ? "ok" : e2.msg);
    } else if (!cg_jv_equal(dom, lazy) || !cg_jv_equal(lazy, dom)) {
        snprintf(why, whysz, "%.200s: values differ", path);
    } else if (!bytes_equal(dom, lazy, true) || !bytes_equal(dom, lazy, false) || !bytes_equal(lazy, dom, true)) {
        snprintf(why, whysz, "%.200s: written bytes differ", path);
    } else {
        r = 1;
    }
    cg_evidence_file_close(f);
    cg_arena_free(&a);
    cg_arena_free(&b);
    free(text);
    return r;
}

static void cli_limits(cg_evidence_read_limits *l) {
    cg_evidence_read_limits_default(l);
    l->json.max_depth = 128;
}

static size_t walk_fixtures(const char *dir, size_t *parsed) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    size_t n = 0;
    struct dirent *de;
    cg_evidence_read_limits lim;
    cli_limits(&lim);
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        char p[4096], why[1200];
        snprintf(p, sizeof p, "%.3000s/%.900s", dir, de->d_name);
        struct stat st;
        if (stat(p, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            n += walk_fixtures(p, parsed);
        } else if (strstr(de->d_name, "evidence") && strstr(de->d_name, ".json")) {
            int r = read_equals_parse(p, &lim, why, sizeof why);
            if (r < 0) fail_msg("%s", why);
            *parsed += (size_t)r;
            n++;
        }
    }
    closedir(d);
    return n;
}

static void test_fixture_evidence_files(void **state) {
    (void)state;
    size_t parsed = 0, n = walk_fixtures(fixtures(), &parsed);
    assert_true(n >= 50);
    assert_true(parsed >= 40);
}

/* A published packet of a generated trace, as text (pretty, newline). */
static char *generated_packet(size_t *len, const char *records) {
    char trace[1200];
    snprintf(trace, sizeof trace, "%s/trace.jsonl", tmpdir);
    char *argv[] = {"bench_gen_trace", "--records", (char *)records, "--out", trace, NULL};
    assert_int_equal(cg_bench_gen_trace_main(5, argv), 0);
    cg_buf pub = CG_BUF_INIT;
    cg_error err;
    cg_err_clear(&err);
    assert_int_equal(cg_render_bundle_artifacts(trace, NULL, &pub, NULL, NULL, &err), 0);
    unlink(trace);
    *len = pub.len;
    return pub.data;
}

static cg_jv *get_path(cg_jv *v, const char *a, const char *b) { return cg_jv_get(cg_jv_get(v, a), b); }

typedef struct count_ctx {
    size_t n;
    cg_buf out;
} count_ctx;

static int collect(void *ctx, size_t i, const cg_jv *item) {
    (void)i;
    count_ctx *c = ctx;
    c->n++;
    cg_json_write(&c->out, item, false);
    return 0;
}

static void test_generated_packet(void **state) {
    (void)state;
    size_t len;
    char *text = generated_packet(&len, "20000");
    char path[1200], why[1200];
    snprintf(path, sizeof path, "%s/evidence.json", tmpdir);
    write_text(path, text, len);
    cg_evidence_read_limits lim;
    cli_limits(&lim);
    assert_int_equal(read_equals_parse(path, &lim, why, sizeof why), 1);

    /* the large arrays are lazy; walks repeat, skip ahead and restart */
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_error err;
    cg_err_clear(&err);
    cg_evidence_file *f = cg_evidence_file_open(path, true, &err);
    assert_non_null(f);
    cg_jv *p = cg_evidence_file_parse(f, &a, &lim, &err);
    assert_non_null(p);
    cg_jv *spans = get_path(p, "graph", "spans");
    assert_int_equal(spans->type, CG_JLAZY);
    cg_jv *logical = get_path(p, "memory", "logical");
    assert_non_null(logical);
    assert_int_equal(cg_jv_get(logical, "timeline")->type, CG_JLAZY);
    assert_int_equal(cg_jv_get(p, "findings")->type, CG_JARR);
    size_t n = cg_jv_items(spans);
    assert_true(n > 100);
    count_ctx c1 = {0, CG_BUF_INIT}, c2 = {0, CG_BUF_INIT};
    cg_jv_each(spans, collect, &c1);
    cg_jv_each(spans, collect, &c2);
    assert_int_equal(c1.n, n);
    assert_int_equal(c1.out.len, c2.out.len);
    assert_memory_equal(c1.out.data, c2.out.data, c1.out.len);
    cg_buf x = CG_BUF_INIT, y = CG_BUF_INIT;
    cg_json_write(&x, spans->u.lazy.item(&a, spans->u.lazy.ctx, n - 1), false);  /* skip ahead */
    cg_json_write(&y, spans->u.lazy.item(&a, spans->u.lazy.ctx, 3), false);      /* back: restart */
    cg_json_write(&y, spans->u.lazy.item(&a, spans->u.lazy.ctx, n - 1), false);
    assert_true(y.len > x.len && !memcmp(y.data + (y.len - x.len), x.data, x.len));
    cg_buf_free(&x);
    cg_buf_free(&y);
    cg_buf_free(&c1.out);
    cg_buf_free(&c2.out);
    cg_evidence_file_close(f);
    cg_arena_free(&a);
    free(text);
}

/* Every truncation of a small packet, and every byte replaced by a few
 * others: the reader fails (or succeeds) exactly as cg_json_parse does. */
static void test_damage_matches_parser(void **state) {
    (void)state;
    size_t len;
    char *text = generated_packet(&len, "40");
    char path[1200], why[1200];
    snprintf(path, sizeof path, "%s/damaged.json", tmpdir);
    cg_evidence_read_limits lim;
    cli_limits(&lim);
    size_t failed = 0, step = len / 1500 + 1;
    for (size_t cut = 0; cut < len; cut += step) {
        write_text(path, text, cut);
        int r = read_equals_parse(path, &lim, why, sizeof why);
        if (r < 0) fail_msg("cut %zu: %s", cut, why);
        failed += r == 0;
    }
    static const char subst[] = {'x', ',', ']', '}', '"', '\\', '\n', '1'};
    for (size_t at = 0; at < len; at += step) {
        char was = text[at];
        text[at] = subst[at % sizeof subst];
        write_text(path, text, len);
        int r = read_equals_parse(path, &lim, why, sizeof why);
        if (r < 0) fail_msg("byte %zu: %s", at, why);
        failed += r == 0;
        text[at] = was;
    }
    assert_true(failed > 1000);
    free(text);
}

/* Parses text with lim; returns the error message (static) or NULL. */
static const char *read_error(const char *text, const cg_evidence_read_limits *lim) {
    static char msg[sizeof ((cg_error *)0)->msg];
    char path[1200];
    snprintf(path, sizeof path, "%s/limit.json", tmpdir);
    write_text(path, text, strlen(text));
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_error err;
    cg_err_clear(&err);
    cg_evidence_file *f = cg_evidence_file_open(path, false, &err);
    assert_non_null(f);
    cg_jv *v = cg_evidence_file_parse(f, &a, lim, &err);
    if (!v) assert_int_equal(err.code, CG_ELIMIT);
    snprintf(msg, sizeof msg, "%s", err.msg);
    cg_evidence_file_close(f);
    cg_arena_free(&a);
    return v ? NULL : msg;
}

static void expect_error(const char *doc, const cg_evidence_read_limits *lim, const char *want) {
    const char *got = read_error(doc, lim);
    if (!got || strcmp(got, want)) fail_msg("want \"%s\", got \"%s\"", want, got ? got : "(parsed)");
    if (lim->max_item_bytes != CG_EVIDENCE_READ_MAX_ITEM || lim->max_tree_bytes != CG_EVIDENCE_READ_MAX_TREE) return;
    /* a json limit: the reader's message is the parser's */
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_error err;
    cg_err_clear(&err);
    assert_null(cg_json_parse(&a, doc, strlen(doc), &lim->json, &err));
    assert_string_equal(err.msg, want);
    cg_arena_free(&a);
}

static void test_limits(void **state) {
    (void)state;
    cg_evidence_read_limits lim;
    cg_evidence_read_limits_default(&lim);
    const char *doc = "{\"graph\": {\"spans\": [{\"a\": [1, 2]}, {\"b\": \"0123456789\", \"c\": 1}]}, \"findings\": [1, 2, 3]}";
    assert_null(read_error(doc, &lim));

    lim.max_item_bytes = 12; /* the second span is 19 bytes */
    expect_error(doc, &lim, "array item longer than the limit at line 1 column 62");
    cg_evidence_read_limits_default(&lim);
    lim.max_tree_bytes = 30; /* 35 bytes outside the spans where findings opens */
    expect_error(doc, &lim, "JSON text kept as a tree longer than the limit at line 1 column 80");
    cg_evidence_read_limits_default(&lim);
    lim.json.max_items = 1; /* per container, inside a lazy array too */
    expect_error(doc, &lim, "array has more items than the limit at line 1 column 33");
    cg_evidence_read_limits_default(&lim);
    lim.json.max_depth = 4;
    expect_error(doc, &lim, "JSON nesting deeper than the limit at line 1 column 28");
    cg_evidence_read_limits_default(&lim);
    lim.json.max_string = 9;
    expect_error(doc, &lim, "string longer than the limit at line 1 column 44");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_evidence_files),
        cmocka_unit_test(test_generated_packet),
        cmocka_unit_test(test_damage_matches_parser),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
