/* Streamed (lazy-array) JSON output must be byte-identical to the DOM output:
 * base/json lazy arrays (pretty/compact, nesting, empty, chunked sinks, early
 * stop, equality, clone, materialize), the evidence/4 packet of every fixture
 * trace and of a generated 20,000-record trace (lazy packet streamed through a
 * sink vs. the materialized DOM written into one buffer; the viewer payload and
 * report.md rendered from each, byte for byte), and
 * cg_evidence_semantic_match (byte-equal, value-equal but reformatted, changed,
 * not JSON). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/evidence.h"
#include "base/fs.h"
#include "render/artifacts.h"
#include "render/payload.h"
#include "render/report.h"
#include "test_tmpdir.h"

/* the benchmark's synthetic trace generator, as a function */
int cg_bench_gen_trace_main(int argc, char **argv);
#define main cg_bench_gen_trace_main
#include "../../bench/trace_ingest/gen_trace.c"
#undef main

/* ---------------------------------------------------------------- json level */

typedef struct gen {
    size_t inner;  /* items per nested lazy array */
    size_t calls;  /* item calls seen */
    size_t expect; /* next index expected (order check) */
    bool out_of_order;
} gen;

static cg_jv *inner_item(cg_arena *a, void *ctx, size_t i) {
    (void)ctx;
    if (i % 3 == 0) return cg_jv_f64(a, (double)i / 7.0);
    if (i % 3 == 1) return cg_jv_str(a, "tab\there \"q\"");
    return cg_jv_i64(a, -(int64_t)i);
}

static cg_jv *outer_item(cg_arena *a, void *ctx, size_t i) {
    gen *g = ctx;
    g->calls++;
    if (i == 0) g->expect = 0;
    if (i != g->expect) g->out_of_order = true;
    g->expect = i + 1;
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "i", cg_jv_u64(a, i));
    cg_jv_obj_put(a, o, "empty_lazy", cg_jv_lazy_arr(a, 0, inner_item, NULL));
    cg_jv_obj_put(a, o, "empty_obj", cg_jv_obj(a));
    cg_jv_obj_put(a, o, "nested", cg_jv_lazy_arr(a, g->inner, inner_item, NULL));
    cg_jv_obj_put(a, o, "flag", cg_jv_bool(a, i & 1));
    cg_jv_obj_put(a, o, "nothing", cg_jv_null(a));
    return o;
}

static cg_jv *doc(cg_arena *a, gen *g, size_t n) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "head", cg_jv_str(a, "x"));
    cg_jv_obj_put(a, o, "items", cg_jv_lazy_arr(a, n, outer_item, g));
    cg_jv *arr = cg_jv_arr(a);
    cg_jv_arr_push(a, arr, cg_jv_lazy_arr(a, 2, inner_item, NULL));
    cg_jv_obj_put(a, o, "tail", arr);
    return o;
}

static int buf_sink(void *ctx, const char *data, size_t len) {
    cg_buf *b = ctx;
    cg_buf_append(b, data, len);
    return 0;
}

typedef struct count_sink {
    size_t calls, max_chunk, stop_after;
} count_sink;

static int counting_sink(void *ctx, const char *data, size_t len) {
    (void)data;
    count_sink *c = ctx;
    c->calls++;
    if (len > c->max_chunk) c->max_chunk = len;
    return c->stop_after && c->calls >= c->stop_after ? 7 : 0;
}

static void test_lazy_matches_dom(void **state) {
    (void)state;
    for (int pretty = 0; pretty < 2; pretty++) {
        cg_arena a;
        cg_arena_init(&a, 0);
        gen g = {3, 0, 0, false};
        cg_jv *lazy = doc(&a, &g, 50);
        cg_buf streamed = CG_BUF_INIT, direct = CG_BUF_INIT, dom = CG_BUF_INIT;
        assert_int_equal(cg_json_write_sink(lazy, pretty, true, buf_sink, &streamed), 0);
        cg_json_write(&direct, lazy, pretty);
        cg_buf_putc(&direct, '\n');
        /* the same document built eagerly */
        cg_jv *clone = cg_jv_clone(&a, lazy);
        assert_int_equal(cg_jv_get(clone, "items")->type, CG_JARR);
        cg_json_write(&dom, clone, pretty);
        cg_buf_putc(&dom, '\n');
        assert_int_equal(streamed.len, dom.len);
        assert_memory_equal(streamed.data, dom.data, dom.len);
        assert_int_equal(direct.len, dom.len);
        assert_memory_equal(direct.data, dom.data, dom.len);
        assert_true(cg_jv_equal(lazy, clone));
        assert_true(cg_jv_equal(clone, lazy));
        assert_true(cg_jv_equal(lazy, lazy));
        /* materialize in place: same bytes, now a DOM */
        gen g2 = {3, 0, 0, false};
        cg_jv *m = cg_jv_materialize(&a, doc(&a, &g2, 50));
        assert_int_equal(cg_jv_get(m, "items")->type, CG_JARR);
        assert_int_equal(cg_jv_len(cg_jv_get(m, "items")), 50);
        assert_int_equal(cg_jv_get(cg_jv_at(cg_jv_get(m, "items"), 4), "nested")->type, CG_JARR);
        cg_buf mb = CG_BUF_INIT;
        cg_json_write(&mb, m, pretty);
        assert_int_equal(mb.len + 1, dom.len);
        assert_memory_equal(mb.data, dom.data, mb.len);
        assert_false(g.out_of_order);
        if (pretty) assert_non_null(strstr(streamed.data, "\"empty_lazy\": [],\n"));
        else assert_non_null(strstr(streamed.data, "\"empty_lazy\":[],"));
        cg_buf_free(&mb);
        cg_buf_free(&streamed);
        cg_buf_free(&direct);
        cg_buf_free(&dom);
        cg_arena_free(&a);
    }
}

static void test_lazy_inequality(void **state) {
    (void)state;
    cg_arena a;
    cg_arena_init(&a, 0);
    gen g = {3, 0, 0, false}, h = {4, 0, 0, false};
    cg_jv *x = doc(&a, &g, 5), *y = doc(&a, &h, 5);
    assert_false(cg_jv_equal(x, y));         /* nested lengths differ */
    cg_jv *z = cg_jv_clone(&a, doc(&a, &g, 5));
    cg_jv_obj_set(&a, cg_jv_at(cg_jv_get(z, "items"), 4), "flag", cg_jv_bool(&a, true));
    assert_false(cg_jv_equal(x, z));         /* one item differs */
    assert_false(cg_jv_equal(doc(&a, &g, 5), doc(&a, &g, 6)));
    assert_false(cg_jv_equal(cg_jv_lazy_arr(&a, 0, inner_item, NULL), cg_jv_obj(&a)));
    assert_true(cg_jv_equal(cg_jv_lazy_arr(&a, 0, inner_item, NULL), cg_jv_arr(&a)));
    cg_arena_free(&a);
}

static void test_sink_chunks_and_stop(void **state) {
    (void)state;
    cg_arena a;
    cg_arena_init(&a, 0);
    gen g = {40, 0, 0, false};
    cg_jv *big = doc(&a, &g, 20000); /* several MiB pretty */
    count_sink c = {0, 0, 0};
    assert_int_equal(cg_json_write_sink(big, true, true, counting_sink, &c), 0);
    assert_true(c.calls >= 3);
    assert_true(c.max_chunk < CG_JSON_CHUNK + 64 * 1024); /* bounded: chunk + one item */
    size_t all_items = g.calls;
    assert_int_equal(all_items, 20000);
    /* a sink that stops: the writer returns its value and stops producing items */
    count_sink s = {0, 0, 1};
    g.calls = 0;
    assert_int_equal(cg_json_write_sink(big, true, false, counting_sink, &s), 7);
    assert_int_equal(s.calls, 1);
    assert_true(g.calls < all_items);
    cg_arena_free(&a);
}

/* reference escaper: serde_json rules, one byte at a time */
static void ref_escape(cg_buf *b, const unsigned char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    cg_buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c == '"') cg_buf_puts(b, "\\\"");
        else if (c == '\\') cg_buf_puts(b, "\\\\");
        else if (c == '\b') cg_buf_puts(b, "\\b");
        else if (c == '\f') cg_buf_puts(b, "\\f");
        else if (c == '\n') cg_buf_puts(b, "\\n");
        else if (c == '\r') cg_buf_puts(b, "\\r");
        else if (c == '\t') cg_buf_puts(b, "\\t");
        else if (c < 0x20) {
            char u[7] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15], 0};
            cg_buf_puts(b, u);
        } else cg_buf_putc(b, (char)c);
    }
    cg_buf_putc(b, '"');
}

static void test_string_escaping_word_at_a_time(void **state) {
    (void)state;
    /* every special byte at every offset of strings up to 40 bytes, on plain,
     * UTF-8 and boundary (0x1f/0x20/0x7f/0x80/0xff) backgrounds */
    static const unsigned char special[] = {'"', '\\', 0, 1, '\b', '\t', '\n', '\f', '\r', 0x1f};
    static const unsigned char bg[] = {'a', 0x20, 0x7f, 0x80, 0xc3, 0xff, '!', '#', '[', ']'};
    unsigned char s[48];
    size_t checked = 0;
    for (size_t len = 0; len <= 40; len++)
        for (size_t k = 0; k < sizeof bg; k++)
            for (size_t sp = 0; sp <= sizeof special; sp++)
                for (size_t pos = 0; pos < (len ? len : 1); pos++) {
                    for (size_t i = 0; i < len; i++) s[i] = bg[(k + i) % sizeof bg];
                    if (sp < sizeof special && len) s[pos] = special[sp];
                    cg_buf got = CG_BUF_INIT, want = CG_BUF_INIT;
                    cg_json_write_str(&got, (const char *)s, len);
                    ref_escape(&want, s, len);
                    assert_int_equal(got.len, want.len);
                    assert_memory_equal(got.data, want.data, want.len);
                    assert_int_equal(got.data[got.len], '\0');
                    cg_buf_free(&got);
                    cg_buf_free(&want);
                    checked++;
                }
    assert_true(checked > 10000);
}

/* ----------------------------------------------------------- evidence level */

static const char *fixtures(void) {
    const char *d = getenv("CG_FIXTURES");
    return d ? d : "fixtures";
}

/* The viewer payload and report.md walk the lazy packet without materializing
 * it; they must be exactly what the DOM gives (payload compared as bytes). */
static bool derived_views_equal(cg_arena *la, const cg_jv *lazy, cg_arena *da, const cg_jv *dom) {
    cg_buf x = CG_BUF_INIT, y = CG_BUF_INIT, rx = CG_BUF_INIT, ry = CG_BUF_INIT;
    cg_error err;
    cg_err_clear(&err);
    cg_json_write(&x, cg_viewer_payload(la, lazy), false);
    cg_json_write(&y, cg_viewer_payload(da, dom), false);
    bool same = x.len == y.len && !memcmp(x.data, y.data, x.len);
    same = same && cg_report_render(lazy, &rx, &err) == 0 && cg_report_render(dom, &ry, &err) == 0 &&
           rx.len == ry.len && !memcmp(rx.data, ry.data, rx.len);
    cg_buf_free(&x);
    cg_buf_free(&y);
    cg_buf_free(&rx);
    cg_buf_free(&ry);
    return same;
}

/* Streams the lazy packet and writes the materialized DOM of a second build;
 * returns 1 when both were built and are byte-identical, 0 when evidence
 * construction failed identically on both paths, -1 on any difference. */
static int stream_equals_dom(const char *trace_path, const char *nsight, char *why, size_t whysz) {
    cg_error e1, e2;
    cg_err_clear(&e1);
    cg_err_clear(&e2);
    cg_trace *t = cg_trace_read_file(trace_path, NULL, &e1);
    if (!t) {
        snprintf(why, whysz, "read %.300s: %.600s", trace_path, e1.msg);
        return -1;
    }
    cg_arena a, b;
    cg_arena_init(&a, 0);
    cg_arena_init(&b, 0);
    cg_buf streamed = CG_BUF_INIT, dom = CG_BUF_INIT;
    int rc = -1;
    cg_evidence *ev = cg_evidence_build(&a, t, nsight, &e1);
    cg_jv *reference = cg_evidence_build_file(&b, trace_path, nsight, &e2);
    if (!ev || !reference) {
        if (!ev && !reference && !strcmp(e1.msg, e2.msg)) rc = 0;
        else snprintf(why, whysz, "%.300s: build differs: [%.300s] vs [%.300s]", trace_path, e1.msg, e2.msg);
        goto out;
    }
    cg_jv *lazy = cg_evidence_to_json_lazy(&a, ev);
    assert_int_equal(cg_json_write_sink(lazy, true, true, buf_sink, &streamed), 0);
    cg_json_write(&dom, reference, true);
    cg_buf_putc(&dom, '\n');
    if (streamed.len != dom.len || memcmp(streamed.data, dom.data, dom.len) != 0) {
        size_t i = 0;
        while (i < streamed.len && i < dom.len && streamed.data[i] == dom.data[i]) i++;
        snprintf(why, whysz, "%.300s: streamed (%zu bytes) differs from DOM (%zu bytes) at byte %zu", trace_path,
                 streamed.len, dom.len, i);
        goto out;
    }
    if (!cg_jv_equal(lazy, reference)) {
        snprintf(why, whysz, "%.300s: lazy packet not value-equal to the DOM", trace_path);
        goto out;
    }
    if (!derived_views_equal(&a, lazy, &b, reference)) {
        snprintf(why, whysz, "%.300s: viewer payload or report.md from the lazy packet differs from the DOM's",
                 trace_path);
        goto out;
    }
    rc = 1;
out:
    if (ev) cg_evidence_free(ev);
    cg_buf_free(&streamed);
    cg_buf_free(&dom);
    cg_arena_free(&a);
    cg_arena_free(&b);
    cg_trace_free(t);
    return rc;
}

static void run_dir(const char *area, int *built) {
    char root[2048];
    snprintf(root, sizeof root, "%.1500s/%s", fixtures(), area);
    DIR *d = opendir(root);
    assert_non_null(d);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char trace[3000], nsight[3000], why[1200];
        snprintf(trace, sizeof trace, "%s/%.200s/trace.jsonl", root, de->d_name);
        snprintf(nsight, sizeof nsight, "%s/%.200s/nsight_input", root, de->d_name);
        if (!cg_path_exists(trace)) continue;
        int r = stream_equals_dom(trace, cg_is_dir(nsight) ? nsight : NULL, why, sizeof why);
        if (r < 0) fail_msg("%s", why);
        *built += r;
    }
    closedir(d);
}

static void test_fixture_packets_stream_identically(void **state) {
    (void)state;
    int built = 0;
    run_dir("evidence", &built);
    run_dir("analysis", &built);
    char trace[2048], why[1200];
    snprintf(trace, sizeof trace, "%.1500s/reader/illustrative.jsonl", fixtures());
    int r = stream_equals_dom(trace, NULL, why, sizeof why);
    if (r < 0) fail_msg("%s", why);
    built += r;
    assert_true(built >= 10); /* the corpus really was exercised */
}

/* A generated trace of `records` records at path (n bytes), in a fresh
 * directory of its own; drop_generated removes both. */
static void make_generated(char *path, size_t n, const char *records) {
    char dir[900];
    assert_int_equal(test_tmpdir_in(dir, sizeof dir, "json-stream"), 0);
    snprintf(path, n, "%s/trace.jsonl", dir);
    char *argv[] = {"bench_gen_trace", "--records", (char *)records, "--out", path, NULL};
    assert_int_equal(cg_bench_gen_trace_main(5, argv), 0);
}

static void drop_generated(const char *path) {
    char dir[1024];
    cg_path_parent(path, dir, sizeof dir);
    assert_int_equal(cg_rm_rf(dir), 0);
}

static void test_generated_trace_streams_identically(void **state) {
    (void)state;
    char trace[1024], why[1200];
    make_generated(trace, sizeof trace, "20000");
    int r = stream_equals_dom(trace, NULL, why, sizeof why);
    drop_generated(trace);
    if (r < 0) fail_msg("%s", why);
    assert_int_equal(r, 1);
}

/* ------------------------------------------------------ semantic comparison */

static void write_text(const char *path, const char *s, size_t n) {
    cg_error err;
    cg_err_clear(&err);
    assert_int_equal(cg_write_file(path, s, n, false, &err), 0);
}

static void test_semantic_match(void **state) {
    (void)state;
    char trace[1024], ev[1100];
    make_generated(trace, sizeof trace, "3000");
    snprintf(ev, sizeof ev, "%s.evidence.json", trace);
    cg_buf pub = CG_BUF_INIT;
    cg_error err;
    cg_err_clear(&err);
    assert_int_equal(cg_render_bundle_artifacts(trace, NULL, &pub, NULL, NULL, &err), 0);
    bool match = false;

    /* 1. the published bytes: match (byte path) */
    write_text(ev, pub.data, pub.len);
    assert_int_equal(cg_evidence_semantic_match(trace, NULL, ev, &match, &err), 0);
    assert_true(match);

    /* 2. the same value re-serialized compactly: match (value path) */
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_jv *v = cg_json_parse(&a, pub.data, pub.len, NULL, &err);
    assert_non_null(v);
    cg_buf compact = CG_BUF_INIT;
    cg_json_write(&compact, v, false);
    write_text(ev, compact.data, compact.len);
    match = false;
    assert_int_equal(cg_evidence_semantic_match(trace, NULL, ev, &match, &err), 0);
    assert_true(match);

    /* 3. published bytes plus trailing garbage, truncated, or one value changed: no match */
    cg_buf longer = CG_BUF_INIT;
    cg_buf_append(&longer, pub.data, pub.len);
    cg_buf_puts(&longer, "{}");
    write_text(ev, longer.data, longer.len);
    assert_int_equal(cg_evidence_semantic_match(trace, NULL, ev, &match, &err), 0);
    assert_false(match);
    write_text(ev, pub.data, pub.len - 2);
    match = true;
    assert_int_equal(cg_evidence_semantic_match(trace, NULL, ev, &match, &err), 0);
    assert_false(match);
    char *changed = strstr(pub.data, "\"start_ns\": ");
    assert_non_null(changed);
    changed[12] = changed[12] == '9' ? '8' : '9';
    write_text(ev, pub.data, pub.len);
    match = true;
    assert_int_equal(cg_evidence_semantic_match(trace, NULL, ev, &match, &err), 0);
    assert_false(match);

    /* 4. errors: missing evidence file, unreadable trace */
    unlink(ev);
    assert_int_equal(cg_evidence_semantic_match(trace, NULL, ev, &match, &err), -1);
    assert_int_equal(err.code, CG_EIO);
    assert_int_equal(cg_evidence_semantic_match("/nonexistent/trace.jsonl", NULL, ev, &match, &err), -1);

    drop_generated(trace);
    cg_buf_free(&pub);
    cg_buf_free(&compact);
    cg_buf_free(&longer);
    cg_arena_free(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lazy_matches_dom),
        cmocka_unit_test(test_lazy_inequality),
        cmocka_unit_test(test_sink_chunks_and_stop),
        cmocka_unit_test(test_string_escaping_word_at_a_time),
        cmocka_unit_test(test_fixture_packets_stream_identically),
        cmocka_unit_test(test_generated_trace_streams_identically),
        cmocka_unit_test(test_semantic_match),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
