/* test_server_compare.c — unit tests of issue 7's server pieces that need no
 * database: per-path span/op/device totals of a trace (span-diff input), the
 * comparison answer cache (keys, copies, LRU eviction, size cap) and the
 * routes of the compare/campaign/series table. Runs from the source root. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "base/fs.h"
#include "base/sha256.h"
#include "srv_compare.h"

#define FIXTURE "tests/fixtures/reader/illustrative.jsonl"

typedef struct totals {
    cg_arena *a;
    srv_path_totals pt;
    size_t n; /* entries */
} totals;

/* total and count of (kind, path text); -1 when absent */
static int64_t lookup(const totals *v, const char *kind, const char *path, uint64_t *n) {
    char k = kind[0] == 's' ? 's' : kind[0] == 'o' ? 'o' : 'd';
    for (size_t i = 0; i < v->pt.n_totals; i++) {
        const srv_path_total *x = &v->pt.totals[i];
        if (x->kind != k || strcmp(srv_path_text(v->a, &v->pt, x->node), path)) continue;
        *n = x->n;
        return (int64_t)x->total;
    }
    return -1;
}

static totals *totals_of(cg_arena *a, const char *text, size_t len) {
    cg_error err = {0};
    cg_trace *t = cg_trace_read_mem(text, len, "mem.jsonl", NULL, &err);
    if (!t) fail_msg("trace: %s", err.msg);
    totals *v = cg_arena_zalloc(a, sizeof *v);
    v->a = a;
    srv_path_totals_build(a, t, &v->pt);
    v->n = v->pt.n_totals;
    /* names are the trace's: keep the texts alive past cg_trace_free */
    for (size_t k = 0; k < v->pt.n_nodes; k++) v->pt.nodes[k].name = cg_arena_strdup(a, v->pt.nodes[k].name);
    /* the row sets are valid JSON with one object per node / total */
    cg_buf nb = CG_BUF_INIT, tb = CG_BUF_INIT;
    srv_path_totals_json(&v->pt, &nb, &tb);
    cg_json_limits lim;
    cg_json_limits_default(&lim);
    cg_jv *nj = cg_json_parse(a, nb.data, nb.len, &lim, &err), *tj = cg_json_parse(a, tb.data, tb.len, &lim, &err);
    assert_non_null(nj);
    assert_non_null(tj);
    assert_int_equal(cg_jv_len(nj), v->pt.n_nodes);
    assert_int_equal(cg_jv_len(tj), v->pt.n_totals);
    /* the store's batches (two rows each here) are the same rows, in order */
    cg_buf joined = CG_BUF_INIT, part = CG_BUF_INIT;
    for (int set = 0; set < 2; set++) {
        size_t n = set ? v->pt.n_totals : v->pt.n_nodes;
        cg_buf_reset(&joined);
        cg_buf_putc(&joined, '[');
        for (size_t k = 0; k < n; k += 2) {
            cg_buf_reset(&part);
            if (set) srv_path_rows_json(&v->pt, k, k + 2, &part);
            else srv_path_nodes_json(&v->pt, k, k + 2, &part);
            assert_non_null(cg_json_parse(a, part.data, part.len, &lim, &err));
            if (k) cg_buf_putc(&joined, ',');
            cg_buf_append(&joined, part.data + 1, part.len - 2);
        }
        cg_buf_putc(&joined, ']');
        const cg_buf *whole = set ? &tb : &nb;
        assert_int_equal(joined.len, whole->len);
        assert_memory_equal(joined.data, whole->data, whole->len);
    }
    cg_buf_free(&joined);
    cg_buf_free(&part);
    cg_buf_free(&nb);
    cg_buf_free(&tb);
    cg_trace_free(t);
    return v;
}

/* The totals tests' state: an arena and the fixture trace's text. */
typedef struct fixture {
    cg_arena a;
    char *text;
    size_t len;
} fixture;

static int fixture_setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    cg_error err = {0};
    if (!f || !(f->text = cg_read_file(FIXTURE, 1 << 20, &f->len, &err))) {
        cg_free(f);
        return -1;
    }
    cg_arena_init(&f->a, 0);
    *state = f;
    return 0;
}

static int fixture_teardown(void **state) {
    fixture *f = *state;
    cg_free(f->text);
    cg_arena_free(&f->a);
    cg_free(f);
    return 0;
}

static void test_totals_fixture(void **state) {
    fixture *f = *state;
    totals *v = totals_of(&f->a, f->text, f->len);
    uint64_t n = 0;
    const char *root = "toy::train::update", *upd = "toy::train::update/toy/update-000000000003";
    assert_int_equal(lookup(v, "span", root, &n), 1100);
    assert_int_equal(n, 1);
    assert_int_equal(lookup(v, "span", upd, &n), 950);
    char p[256];
    snprintf(p, sizeof p, "%s/toy/update-000000000003/forward", upd);
    assert_int_equal(lookup(v, "span", p, &n), 500);
    snprintf(p, sizeof p, "%s/toy/update-000000000003/backward", upd);
    assert_int_equal(lookup(v, "span", p, &n), 250);
    snprintf(p, sizeof p, "%s/toy/update-000000000003/optimizer", upd);
    assert_int_equal(lookup(v, "span", p, &n), 40);
    snprintf(p, sizeof p, "%s/toy/update-000000000003/forward/matmul", upd);
    assert_int_equal(lookup(v, "op", p, &n), 400);
    assert_int_equal(n, 1);
    assert_int_equal(lookup(v, "device", "device:cuda:0/cuda-event-0", &n), 300);
    assert_int_equal(n, 1);
    assert_int_equal(v->n, 7); /* 5 spans, 1 op, 1 device clock */
}

/* Repeated names sum per path; an open span is left out. */
static void test_totals_repeats_and_open(void **state) {
    fixture *f = *state;
    const char *text = f->text;
    cg_error err = {0};
    /* a second "backward" child under s2 (closed) and an open child of s1 */
    cg_buf b = CG_BUF_INIT;
    const char *end_s2 = strstr(text, "{\"kind\":\"span_end\",\"id\":\"s2\"");
    assert_non_null(end_s2);
    cg_buf_append(&b, text, (size_t)(end_s2 - text));
    cg_buf_puts(&b, "{\"kind\":\"span_start\",\"id\":\"s8\",\"parent_id\":\"s2\",\"name\":\"toy/update-000000000003/backward\","
                    "\"start_ns\":1000,\"span_kind\":\"function\",\"measured\":false}\n"
                    "{\"kind\":\"span_end\",\"id\":\"s8\",\"duration_ns\":7}\n"
                    "{\"kind\":\"span_start\",\"id\":\"s9\",\"parent_id\":\"s1\",\"name\":\"never/closed\","
                    "\"start_ns\":1010,\"span_kind\":\"function\",\"measured\":false}\n");
    cg_buf_puts(&b, end_s2);
    cg_trace *t = cg_trace_read_mem(b.data, b.len, "mem.jsonl", NULL, &err);
    if (t) { /* the reader may refuse an unclosed span; then only check the repeat */
        cg_trace_free(t);
        totals *v = totals_of(&f->a, b.data, b.len);
        uint64_t n = 0;
        assert_int_equal(lookup(v, "span", "toy::train::update/toy/update-000000000003/toy/update-000000000003/backward", &n),
                         257);
        assert_int_equal(n, 2);
        assert_int_equal(lookup(v, "span", "toy::train::update/never/closed", &n), -1);
    } else {
        fail_msg("reader refused the test trace: %s", err.msg);
    }
    cg_buf_free(&b);
}

/* A 5,000-deep chain: one node per span (linear), each keyed by the SHA-256 of
 * its text, and a name holding "/" gives the same node as the split it spells. */
static void test_totals_deep_chain(void **state) {
    fixture *f = *state;
    cg_arena *a = &f->a;
    const char *text = f->text;
    cg_buf b = CG_BUF_INIT;
    cg_buf_append(&b, text, (size_t)(strchr(text, '\n') + 1 - text)); /* the meta line */
    enum { D = 5000 };
    for (int i = 1; i <= D; i++) {
        cg_buf_printf(&b, "{\"kind\":\"span_start\",\"id\":\"s%d\",", i);
        if (i > 1) cg_buf_printf(&b, "\"parent_id\":\"s%d\",", i - 1);
        cg_buf_printf(&b, "\"name\":\"n\",\"start_ns\":%d,\"span_kind\":\"function\",\"measured\":%s}\n", i,
                      i == 1 ? "true" : "false");
    }
    cg_buf_puts(&b, "{\"kind\":\"span_start\",\"id\":\"x1\",\"name\":\"n/n\",\"start_ns\":1,\"span_kind\":\"function\","
                    "\"measured\":false}\n{\"kind\":\"span_end\",\"id\":\"x1\",\"duration_ns\":5}\n");
    for (int i = D; i >= 1; i--) cg_buf_printf(&b, "{\"kind\":\"span_end\",\"id\":\"s%d\",\"duration_ns\":%d}\n", i, 3 * D - i);
    cg_buf_printf(&b, "{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":%d}\n", 4 * D);
    totals *v = totals_of(a, b.data, b.len);
    assert_int_equal(v->pt.n_nodes, D); /* "n/n" is the node of s2's path */
    uint64_t n = 0;
    assert_int_equal(lookup(v, "span", "n/n", &n), (3 * D - 2) + 5);
    assert_int_equal(n, 2);
    size_t deepest = SIZE_MAX;
    for (size_t k = 0; k < v->pt.n_nodes; k++)
        if (strlen(srv_path_text(a, &v->pt, k)) == 2 * D - 1) deepest = k;
    assert_true(deepest != SIZE_MAX);
    const char *p = srv_path_text(a, &v->pt, deepest);
    unsigned char h[32];
    cg_sha256_buf(p, strlen(p), h);
    assert_memory_equal(h, v->pt.nodes[deepest].hash, 32);
    cg_buf_free(&b);
}

static void cohort(srv_cohort *c, const char **ids, size_t n) {
    c->ids = ids;
    c->given = ids;
    c->n = n;
}

static void test_cache(void **state) {
    (void)state;
    const char *x[] = {"aa", "bb"}, *y[] = {"bb", "aa"}, *z[] = {"cc"};
    srv_cohort a, b, c;
    cohort(&a, x, 2);
    cohort(&b, y, 2);
    cohort(&c, z, 1);
    char k1[65], k2[65], k3[65], k1b[65];
    srv_compare_cache_key(&a, &c, k1);
    srv_compare_cache_key(&b, &c, k2);
    srv_compare_cache_key(&c, &a, k3);
    srv_compare_cache_key(&a, &c, k1b);
    assert_string_equal(k1, k1b);       /* deterministic */
    assert_string_not_equal(k1, k2);    /* order matters */
    assert_string_not_equal(k1, k3);    /* sides matter */
    size_t len = 0;
    bool inel = false;
    assert_null(srv_compare_cache_get(k1, &len, &inel));
    srv_compare_cache_put(k1, "{\"x\":1}\n", 8, true);
    char *got = srv_compare_cache_get(k1, &len, &inel);
    assert_non_null(got);
    assert_int_equal(len, 8);
    assert_memory_equal(got, "{\"x\":1}\n", 8);
    assert_true(inel);
    cg_free(got);
    assert_null(srv_compare_cache_get(k2, &len, &inel));
    /* 128 newer entries evict k1 (least recently used) */
    for (int i = 0; i < 128; i++) {
        char key[65];
        snprintf(key, sizeof key, "%064d", i);
        srv_compare_cache_put(key, "v", 1, false);
    }
    assert_null(srv_compare_cache_get(k1, &len, &inel));
    char key0[65];
    snprintf(key0, sizeof key0, "%064d", 127);
    got = srv_compare_cache_get(key0, &len, &inel);
    assert_non_null(got);
    assert_false(inel);
    cg_free(got);
    /* answers above the cap are not kept */
    size_t big = (4u << 20) + 1;
    char *data = calloc(big, 1);
    assert_non_null(data);
    srv_compare_cache_put(k2, data, big, false);
    cg_free(data);
    assert_null(srv_compare_cache_get(k2, &len, &inel));
}

static void test_routes(void **state) {
    (void)state;
    cg_arena a;
    cg_arena_init(&a, 0);
    const char *p[SRV_MAX_PARAMS] = {0};
    char allow[64];
    int i = srv_route_match(&a, "GET", "/compare/spans", p, allow, sizeof allow);
    assert_true(i >= 0);
    assert_ptr_equal(srv_routes[i].handler, srv_h_compare_spans);
    i = srv_route_match(&a, "POST", "/compare", p, allow, sizeof allow);
    assert_ptr_equal(srv_routes[i].handler, srv_h_compare_post);
    assert_int_equal(srv_routes[i].body, SRV_BODY_JSON);
    i = srv_route_match(&a, "PUT", "/campaigns/c1", p, allow, sizeof allow);
    assert_ptr_equal(srv_routes[i].handler, srv_h_campaign_put);
    assert_int_equal(srv_routes[i].scope, SRV_SCOPE_UPLOAD);
    assert_string_equal(p[0], "c1");
    i = srv_route_match(&a, "GET", "/campaigns/c1/series", p, allow, sizeof allow);
    assert_ptr_equal(srv_routes[i].handler, srv_h_campaign_series);
    assert_int_equal(srv_route_match(&a, "DELETE", "/campaigns/c1", p, allow, sizeof allow), -2);
    assert_non_null(strstr(allow, "PUT"));
    assert_non_null(strstr(allow, "GET"));
    cg_arena_free(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_totals_fixture, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_totals_repeats_and_open, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_totals_deep_chain, fixture_setup, fixture_teardown),
        cmocka_unit_test(test_cache), cmocka_unit_test(test_routes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
