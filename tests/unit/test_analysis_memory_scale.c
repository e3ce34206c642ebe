/* test_analysis_memory_scale.c — the logical memory plane and the per-span
 * metrics on generated traces large enough to take every path of memory.c and
 * memory_span.c (time sort, key reuse, aliases, unmatched frees, zero-length
 * lifetimes, three devices, a flat list of hundreds of small child spans, deep
 * chains), checked against a naive restatement of the crate's rules: pair the
 * events in (timestamp, document) order, replay every timestamp group, and walk
 * every span's window over its subtree's lifetimes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/memory.h"
#include "base/buf.h"
#include "base/json.h"

#define META                                                                                          \
    "{\"kind\":\"meta\",\"schema\":\"candle-graph/trace/10\",\"run_id\":\"r\",\"correlation_id\":\"c\"," \
    "\"entrypoint\":\"app\",\"phase\":\"infer\",\"timestamp\":\"2026-09-01T12:00:00.000Z\","           \
    "\"capture_step\":1,\"warmup_steps\":0,\"device\":\"cuda:0\",\"timing_mode\":\"host\","            \
    "\"capture_contract\":{\"measurement_scope\":\"profiled_work\",\"operations\":\"partial\","        \
    "\"logical_memory\":\"%s\",\"physical_memory\":\"partial\",\"device_timing\":\"none\"},"          \
    "\"tags\":{}}\n"

enum { NSP = 1200, NST = 5000, NDEV = 3, END = 1000000 };
static const char *const DEVS[NDEV] = {"cuda:1", "cpu", "cuda:0"};

static uint64_t seed;
static uint64_t rnd(uint64_t n) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return n ? (seed >> 33) % n : 0;
}

typedef struct gspan {
    int parent;
    uint64_t start, dur;
} gspan;

typedef struct gev { /* one memory event as generated */
    uint64_t ts, bytes;
    int key, dev, span, tensor, cat;
    bool is_free;
    size_t doc; /* document position */
} gev;

typedef struct glife { /* a lifetime found by the naive pairing */
    int key, dev, span;
    uint64_t start, end, bytes;
    bool has_end;
    int cat;
    size_t open_order;
} glife;

typedef struct gen {
    gspan sp[NSP];
    gev *ev;
    size_t n_ev;
    glife *life;
    size_t n_life;
} gen;

static void add_ev(gen *g, gev e) {
    e.doc = g->n_ev;
    g->ev[g->n_ev++] = e;
}

static void gen_spans(gen *g) {
    g->sp[0] = (gspan){-1, 0, END};
    g->sp[1] = (gspan){0, 0, END};
    for (int i = 2; i < NSP; i++) {
        int p = i < 400 ? 1 : i < 600 ? i - 1 : (int)rnd((uint64_t)i); /* flat, chain, random */
        uint64_t pend = g->sp[p].start + g->sp[p].dur;
        uint64_t s0 = g->sp[p].start + rnd(g->sp[p].dur + 1) / 10 * 10;
        uint64_t d = rnd(pend - s0 + 1) / 10 * 10;
        if (i < 400) d = d / 50;
        g->sp[i] = (gspan){p, s0, d};
    }
}

/* Storages: each key is (device, storage) and may be reused after its free;
 * some allocs alias a live storage; some frees name nothing live. */
static void gen_events(gen *g) {
    g->ev = calloc(6 * NST + NSP, sizeof *g->ev);
    uint64_t *free_at = calloc(NST, sizeof *free_at);
    for (int k = 0; k < NST; k++) {
        bool reuse = k % 7 == 3 && free_at[k - 1] != 0;
        int key = reuse ? g->ev[g->n_ev - 1].key : k, span = (int)rnd(NSP), dev = reuse ? g->ev[g->n_ev - 1].dev : (int)rnd(NDEV);
        const gspan *s = &g->sp[span];
        uint64_t a = s->start + rnd(s->dur / 10 + 1) * 10;
        if (reuse) a = free_at[k - 1] + rnd(3) * 10;
        uint64_t bytes = 1 + rnd(1u << 20);
        int cat = (int)rnd(CG_CAT_COUNT);
        add_ev(g, (gev){a, bytes, key, dev, span, 2 * k, cat, false, 0});
        uint64_t f = a + rnd(40) * 10;
        if (rnd(9) == 0) add_ev(g, (gev){a + rnd(f - a + 1), bytes, key, dev, span, 2 * k + 1, cat, false, 0});
        if (rnd(3) != 0) {
            add_ev(g, (gev){f, bytes, key, dev, 0, 2 * k, cat, true, 0});
            free_at[k] = f;
        }
        if (rnd(50) == 0) add_ev(g, (gev){rnd(END), 5, NST + k, dev, 0, 2 * k, cat, true, 0});
    }
    free(free_at);
    for (int i = 400; i < 600; i += 3) { /* zero-length lifetimes at chain spans' ends */
        uint64_t e = g->sp[i].start + g->sp[i].dur;
        add_ev(g, (gev){e, 64, 2 * NST + i, 0, i, 2 * NST + i, 0, false, 0});
        add_ev(g, (gev){e, 64, 2 * NST + i, 0, 0, 2 * NST + i, 0, true, 0});
    }
    for (size_t i = g->n_ev; i > 1; i--) { /* a few events out of time order */
        if (rnd(20)) continue;
        size_t j = rnd(i);
        gev t = g->ev[i - 1];
        g->ev[i - 1] = g->ev[j];
        g->ev[j] = t;
    }
    for (size_t i = 0; i < g->n_ev; i++) g->ev[i].doc = i;
}

static char *trace_text(const gen *g, bool complete) {
    cg_buf b = CG_BUF_INIT;
    cg_buf_printf(&b, META, complete ? "complete" : "partial");
    for (int i = 0; i < NSP; i++) {
        cg_buf_printf(&b, "{\"kind\":\"span_start\",\"id\":\"s%d\",", i);
        if (g->sp[i].parent >= 0) cg_buf_printf(&b, "\"parent_id\":\"s%d\",", g->sp[i].parent);
        cg_buf_printf(&b, "\"name\":\"n%d\",\"start_ns\":%llu,\"span_kind\":\"function\"}\n", i,
                      (unsigned long long)g->sp[i].start);
    }
    for (size_t i = 0; i < g->n_ev; i++) {
        const gev *e = &g->ev[i];
        cg_buf_printf(&b,
                      "{\"kind\":\"memory\",\"timestamp_ns\":%llu,\"storage_id\":\"m%d\",\"tensor_id\":\"t%d\","
                      "\"span_id\":\"s%d\",\"device\":\"%s\",\"bytes\":%llu,\"action\":\"%s\",\"dtype\":\"f32\","
                      "\"category\":\"%s\"}\n",
                      (unsigned long long)e->ts, e->key, e->tensor, e->span, DEVS[e->dev], (unsigned long long)e->bytes,
                      e->is_free ? "free" : "alloc", cg_category_name((cg_category)e->cat));
    }
    for (int i = NSP - 1; i >= 0; i--)
        cg_buf_printf(&b, "{\"kind\":\"span_end\",\"id\":\"s%d\",\"duration_ns\":%llu}\n", i,
                      (unsigned long long)g->sp[i].dur);
    cg_buf_printf(&b, "{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":%d}\n", END);
    return b.data;
}

static int cmp_ev_time(const void *pa, const void *pb) {
    const gev *a = pa, *b = pb;
    if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
    return a->doc < b->doc ? -1 : a->doc > b->doc;
}

static int cmp_key_name(int a, int b) { /* storage ids "m<key>" by byte order */
    char x[16], y[16];
    snprintf(x, sizeof x, "m%d", a);
    snprintf(y, sizeof y, "m%d", b);
    return strcmp(x, y);
}

static int cmp_life(const void *pa, const void *pb) {
    const glife *a = pa, *b = pb;
    if (a->start != b->start) return a->start < b->start ? -1 : 1;
    int c = strcmp(DEVS[a->dev], DEVS[b->dev]);
    if (!c) c = cmp_key_name(a->key, b->key);
    if (c) return c;
    return a->open_order < b->open_order ? -1 : a->open_order > b->open_order;
}

/* Replays the sorted events group by group; checks each timeline point of tl. */
static void check_timeline(gen *g, const cg_jv *tl) {
    qsort(g->ev, g->n_ev, sizeof *g->ev, cmp_ev_time);
    size_t nkeys = 2 * NST + NSP, *open = malloc(nkeys * NDEV * sizeof *open);
    for (size_t i = 0; i < nkeys * NDEV; i++) open[i] = SIZE_MAX;
    g->life = calloc(g->n_ev, sizeof *g->life);
    uint64_t dev_live[NDEV] = {0}, cat_live[CG_CAT_COUNT] = {0};
    size_t dev_n[NDEV] = {0}, cat_n[CG_CAT_COUNT] = {0}, point = 0;
    for (size_t i = 0, j; i < g->n_ev; i = j, point++) {
        for (j = i; j < g->n_ev && g->ev[j].ts == g->ev[i].ts; j++) {
            const gev *e = &g->ev[j];
            size_t *o = &open[(size_t)e->key * NDEV + (size_t)e->dev];
            if (!e->is_free && *o == SIZE_MAX) {
                *o = g->n_life;
                g->life[g->n_life++] = (glife){e->key, e->dev, e->span, e->ts, 0, e->bytes, false, e->cat, j};
                dev_live[e->dev] += e->bytes, dev_n[e->dev]++, cat_live[e->cat] += e->bytes, cat_n[e->cat]++;
            } else if (e->is_free && *o != SIZE_MAX) {
                glife *l = &g->life[*o];
                l->has_end = true, l->end = e->ts;
                dev_live[l->dev] -= l->bytes, dev_n[l->dev]--, cat_live[l->cat] -= l->bytes, cat_n[l->cat]--;
                *o = SIZE_MAX;
            }
        }
        const cg_jv *pt = cg_jv_at(tl, point), *bd = cg_jv_get(pt, "live_bytes_by_device"),
                    *bc = cg_jv_get(pt, "live_bytes_by_category");
        uint64_t v = 0, total = 0, seen = 0;
        assert_true(cg_jv_as_u64(cg_jv_get(pt, "timestamp_ns"), &v));
        assert_int_equal(v, g->ev[i].ts);
        for (int d = 0; d < NDEV; d++) {
            total += dev_live[d];
            const cg_jv *x = cg_jv_get(bd, DEVS[d]);
            assert_true(dev_n[d] ? x != NULL : x == NULL);
            if (x) assert_true(cg_jv_as_u64(x, &v) && v == dev_live[d]), seen++;
        }
        assert_int_equal(cg_jv_len(bd), seen);
        seen = 0;
        for (int c = 0; c < CG_CAT_COUNT; c++) {
            const cg_jv *x = cg_jv_get(bc, cg_category_name((cg_category)c));
            assert_true(cat_n[c] ? x != NULL : x == NULL);
            if (x) assert_true(cg_jv_as_u64(x, &v) && v == cat_live[c]), seen++;
        }
        assert_int_equal(cg_jv_len(bc), seen);
        assert_true(cg_jv_as_u64(cg_jv_get(pt, "live_bytes"), &v));
        assert_int_equal(v, total);
    }
    assert_int_equal(cg_jv_len(tl), point);
    free(open);
}

static void check_lifetimes(gen *g, const cg_logical_memory *l) {
    qsort(g->life, g->n_life, sizeof *g->life, cmp_life);
    assert_int_equal(l->n_lifetimes, g->n_life);
    for (size_t k = 0; k < g->n_life; k++) {
        const glife *w = &g->life[k];
        cg_lifetime got = cg_logical_lifetime(l, &l->lifetimes[k]);
        char st[16];
        snprintf(st, sizeof st, "m%d", w->key);
        assert_string_equal(got.device, DEVS[w->dev]);
        assert_string_equal(got.storage_id, st);
        assert_int_equal(got.start_timestamp_ns, w->start);
        assert_int_equal(got.bytes, w->bytes);
        assert_int_equal(got.has_end, w->has_end);
        if (w->has_end) assert_int_equal(got.end_timestamp_ns, w->end);
        assert_true(got.n_tensor_ids >= 1);
        for (size_t i = 1; i < got.n_tensor_ids; i++)
            assert_true(strcmp(cg_logical_tensor_id(l, &l->lifetimes[k], i - 1),
                               cg_logical_tensor_id(l, &l->lifetimes[k], i)) < 0);
    }
}

static bool in_subtree(const gen *g, int s, int v) {
    for (; s >= 0; s = g->sp[s].parent)
        if (s == v) return true;
    return false;
}

typedef struct tstep {
    uint64_t ts, alloc, free;
} tstep;

static int cmp_tstep(const void *pa, const void *pb) {
    const tstep *a = pa, *b = pb;
    return a->ts < b->ts ? -1 : a->ts > b->ts;
}

/* The crate's clipped_lifetime_metrics over the lifetimes of v's subtree. */
static void reference_window(const gen *g, int v, uint64_t *peak, uint64_t *resid, bool *any) {
    uint64_t ws = g->sp[v].start, we = ws + g->sp[v].dur, live = 0;
    tstep *st = calloc(2 * g->n_life + 1, sizeof *st);
    size_t n = 0;
    *peak = *resid = 0;
    *any = false;
    for (size_t k = 0; k < g->n_life; k++) {
        const glife *l = &g->life[k];
        if (!in_subtree(g, l->span, v)) continue;
        *any = true;
        uint64_t end = l->has_end ? l->end : UINT64_MAX;
        if (l->start < we && end > we) *resid += l->bytes;
        if (we <= ws || l->start >= we || end <= ws) continue;
        if (l->start <= ws)
            live += l->bytes;
        else
            st[n++] = (tstep){l->start, l->bytes, 0};
        if (end > ws && end < we) st[n++] = (tstep){end, 0, l->bytes};
    }
    if (we <= ws) *resid = 0;
    qsort(st, n, sizeof *st, cmp_tstep);
    *peak = live;
    for (size_t i = 0, j; i < n; i = j) {
        uint64_t a = 0, f = 0;
        for (j = i; j < n && st[j].ts == st[i].ts; j++) a += st[j].alloc, f += st[j].free;
        live = (live > f ? live - f : 0) + a;
        if (live > *peak) *peak = live;
    }
    free(st);
}

static void check_spans(const gen *g, const cg_trace *t, const cg_memory_profile *p, bool complete, cg_arena *a) {
    cg_span_memory *sm = cg_memory_span_metrics(t, p, a);
    assert_non_null(sm);
    for (int v = 0; v < NSP; v++) {
        char id[16];
        snprintf(id, sizeof id, "s%d", v);
        const cg_span *s = cg_trace_find_span(t, id);
        assert_non_null(s);
        const cg_span_memory *o = &sm[s - t->spans];
        uint64_t peak, resid, direct = 0;
        bool any, own = false;
        for (size_t k = 0; k < g->n_life; k++)
            if (g->life[k].span == v) direct += g->life[k].bytes, own = true;
        reference_window(g, v, &peak, &resid, &any);
        assert_int_equal(o->has_allocated, complete || own);
        if (o->has_allocated) assert_int_equal(o->allocated_bytes, direct);
        assert_int_equal(o->has_window, complete || any);
        if (!o->has_window) continue;
        if (o->peak_live_bytes != peak || o->residual_bytes != resid)
            fail_msg("span %s [%llu,+%llu): peak %llu resid %llu, want %llu %llu", id,
                     (unsigned long long)g->sp[v].start, (unsigned long long)g->sp[v].dur,
                     (unsigned long long)o->peak_live_bytes, (unsigned long long)o->residual_bytes,
                     (unsigned long long)peak, (unsigned long long)resid);
    }
}

static void run_round(uint64_t round_seed, bool complete) {
    seed = round_seed;
    gen *g = calloc(1, sizeof *g);
    gen_spans(g);
    gen_events(g);
    char *text = trace_text(g, complete);
    cg_error err;
    cg_err_clear(&err);
    cg_trace *t = cg_trace_read_mem(text, strlen(text), "scale.jsonl", NULL, &err);
    free(text);
    if (!t) fail_msg("parse: %s", err.msg);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_memory_profile *p = cg_memory_analyze(t, &a);
    assert_non_null(p->logical);
    cg_jv *json = cg_memory_to_json(&a, p);
    check_timeline(g, cg_jv_get(cg_jv_get(json, "logical"), "timeline"));
    check_lifetimes(g, p->logical);
    check_spans(g, t, p, complete, &a);
    cg_arena_free(&a);
    cg_trace_free(t);
    free(g->life);
    free(g->ev);
    free(g);
}

static void test_partial_coverage(void **st) {
    (void)st;
    run_round(7, false);
    run_round(11, false);
}

static void test_complete_coverage(void **st) {
    (void)st;
    run_round(23, true);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partial_coverage),
        cmocka_unit_test(test_complete_coverage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
