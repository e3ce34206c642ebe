/* timing.c — interval union and the device timing plane (spec §7). */
#include "analysis/timing.h"
#include "base/alloc.h"
#include "base/num.h"

#include <stdlib.h>
#include <string.h>

static int cmp_interval(const void *pa, const void *pb) {
    const cg_interval *a = pa, *b = pb;
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns ? -1 : 1;
    if (a->end_ns != b->end_ns) return a->end_ns < b->end_ns ? -1 : 1;
    return 0;
}


uint64_t cg_union_length(cg_interval *iv, size_t n) {
    if (n == 0) return 0;
    qsort(iv, n, sizeof *iv, cmp_interval);
    uint64_t total = 0;
    uint64_t cs = iv[0].start_ns;
    uint64_t ce = iv[0].end_ns < cs ? cs : iv[0].end_ns;
    for (size_t i = 1; i < n; i++) {
        uint64_t s = iv[i].start_ns, e = iv[i].end_ns < s ? s : iv[i].end_ns;
        if (s <= ce) {
            if (e > ce) ce = e;
        } else {
            total = cg_sat_add_u64(total, ce - cs);
            cs = s;
            ce = e;
        }
    }
    return cg_sat_add_u64(total, ce - cs);
}

/* ---- grouping ---- */

typedef struct ref {
    const cg_device_interval *d;
} ref;

static int cmp_str3(const char *a1, const char *a2, const char *a3, const char *b1, const char *b2,
                    const char *b3) {
    int c = strcmp(a1, b1);
    if (c) return c;
    c = strcmp(a2, b2);
    if (c) return c;
    return strcmp(a3, b3);
}

static int cmp_span_key(const void *pa, const void *pb) {
    const cg_device_interval *a = ((const ref *)pa)->d, *b = ((const ref *)pb)->d;
    int c = cmp_str3(a->span_id, a->device, a->clock_id, b->span_id, b->device, b->clock_id);
    if (c) return c;
    return a < b ? -1 : a > b;
}

static int cmp_clock_key(const void *pa, const void *pb) {
    const cg_device_interval *a = ((const ref *)pa)->d, *b = ((const ref *)pb)->d;
    int c = strcmp(a->device, b->device);
    if (!c) c = strcmp(a->clock_id, b->clock_id);
    if (c) return c;
    return a < b ? -1 : a > b;
}

static int cmp_strp(const void *pa, const void *pb) {
    return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

/* Sorted, deduplicated copy of strs[0..n) into the arena. */
static const char **sorted_unique(cg_arena *a, const char **strs, size_t n, size_t *out_n) {
    qsort(strs, n, sizeof *strs, cmp_strp);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || strcmp(strs[m - 1], strs[i]) != 0) strs[m++] = strs[i];
    const char **out = cg_arena_alloc(a, (m ? m : 1) * sizeof *out);
    memcpy(out, strs, m * sizeof *out);
    *out_n = m;
    return out;
}


cg_timing_profile *cg_timing_analyze(const cg_trace *t, cg_arena *a) {
    cg_timing_profile *p = cg_arena_zalloc(a, sizeof *p);
    size_t n = t->n_device_intervals;
    p->device_coverage = t->run.contract.device_timing;
    if (n > 0 && p->device_coverage == CG_COV_NONE) p->device_coverage = CG_COV_PARTIAL;
    if (n == 0) return p;

    ref *refs = cg_xalloc(n, sizeof *refs);
    cg_interval *ivs = cg_xalloc(n, sizeof *ivs);
    const char **b1 = cg_xalloc(n, sizeof *b1), **b2 = cg_xalloc(n, sizeof *b2);
    for (size_t i = 0; i < n; i++) refs[i].d = &t->device_intervals[i];

    /* per (span_id, device, clock_id) */
    qsort(refs, n, sizeof *refs, cmp_span_key);
    size_t groups = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || cmp_str3(refs[i - 1].d->span_id, refs[i - 1].d->device, refs[i - 1].d->clock_id,
                               refs[i].d->span_id, refs[i].d->device, refs[i].d->clock_id))
            groups++;
    p->device_spans = cg_arena_zalloc(a, groups * sizeof *p->device_spans);
    for (size_t i = 0, g = 0; i < n; g++) {
        size_t j = i;
        while (j < n && !cmp_str3(refs[i].d->span_id, refs[i].d->device, refs[i].d->clock_id,
                                  refs[j].d->span_id, refs[j].d->device, refs[j].d->clock_id))
            j++;
        cg_device_span_timing *s = &p->device_spans[g];
        s->span_id = refs[i].d->span_id;
        s->device = refs[i].d->device;
        s->clock_id = refs[i].d->clock_id;
        for (size_t k = i; k < j; k++) {
            ivs[k - i] = cg_interval_of(refs[k].d->start_ns, refs[k].d->duration_ns);
            b1[k - i] = refs[k].d->backend;
            b2[k - i] = refs[k].d->stream_id;
        }
        s->interval_count = j - i;
        s->busy_ns = cg_union_length(ivs, j - i);
        s->backends = sorted_unique(a, b1, j - i, &s->n_backends);
        s->streams = sorted_unique(a, b2, j - i, &s->n_streams);
        i = j;
    }
    p->n_device_spans = groups;

    /* per (device, clock_id) */
    qsort(refs, n, sizeof *refs, cmp_clock_key);
    groups = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || strcmp(refs[i - 1].d->device, refs[i].d->device) ||
            strcmp(refs[i - 1].d->clock_id, refs[i].d->clock_id))
            groups++;
    p->device_clocks = cg_arena_zalloc(a, groups * sizeof *p->device_clocks);
    for (size_t i = 0, g = 0; i < n; g++) {
        size_t j = i;
        while (j < n && !strcmp(refs[i].d->device, refs[j].d->device) &&
               !strcmp(refs[i].d->clock_id, refs[j].d->clock_id))
            j++;
        cg_device_clock_timing *c = &p->device_clocks[g];
        c->device = refs[i].d->device;
        c->clock_id = refs[i].d->clock_id;
        for (size_t k = i; k < j; k++) ivs[k - i] = cg_interval_of(refs[k].d->start_ns, refs[k].d->duration_ns);
        c->interval_count = j - i;
        c->busy_ns = cg_union_length(ivs, j - i);
        i = j;
    }
    p->n_device_clocks = groups;
    cg_free(refs);
    cg_free(ivs);
    cg_free(b1);
    cg_free(b2);
    return p;
}

const cg_device_span_timing *cg_timing_find_span(const cg_timing_profile *p, const char *span_id,
                                                 size_t *count) {
    size_t lo = 0, hi = p->n_device_spans;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(p->device_spans[mid].span_id, span_id) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = lo;
    while (end < p->n_device_spans && !strcmp(p->device_spans[end].span_id, span_id)) end++;
    *count = end - lo;
    return end > lo ? &p->device_spans[lo] : NULL;
}

static cg_jv *str_array(cg_arena *a, const char **s, size_t n) {
    cg_jv *arr = cg_jv_arr(a);
    for (size_t i = 0; i < n; i++) cg_jv_arr_push(a, arr, cg_jv_str_nocopy(a, s[i]));
    return arr;
}

static cg_jv *device_span_item(cg_arena *a, void *ctx, size_t i) {
    const cg_device_span_timing *s = &((const cg_timing_profile *)ctx)->device_spans[i];
    cg_jv *e = cg_jv_obj(a);
    cg_jv_obj_put(a, e, "span_id", cg_jv_str_nocopy(a, s->span_id));
    cg_jv_obj_put(a, e, "device", cg_jv_str_nocopy(a, s->device));
    cg_jv_obj_put(a, e, "clock_id", cg_jv_str_nocopy(a, s->clock_id));
    cg_jv_obj_put(a, e, "backends", str_array(a, s->backends, s->n_backends));
    cg_jv_obj_put(a, e, "streams", str_array(a, s->streams, s->n_streams));
    cg_jv_obj_put(a, e, "interval_count", cg_jv_u64(a, s->interval_count));
    cg_jv_obj_put(a, e, "busy_ns", cg_jv_u64(a, s->busy_ns));
    return e;
}

static cg_jv *device_clock_item(cg_arena *a, void *ctx, size_t i) {
    const cg_device_clock_timing *c = &((const cg_timing_profile *)ctx)->device_clocks[i];
    cg_jv *e = cg_jv_obj(a);
    cg_jv_obj_put(a, e, "device", cg_jv_str_nocopy(a, c->device));
    cg_jv_obj_put(a, e, "clock_id", cg_jv_str_nocopy(a, c->clock_id));
    cg_jv_obj_put(a, e, "interval_count", cg_jv_u64(a, c->interval_count));
    cg_jv_obj_put(a, e, "busy_ns", cg_jv_u64(a, c->busy_ns));
    return e;
}

cg_jv *cg_timing_to_json_lazy(cg_arena *a, const cg_timing_profile *p) {
    void *ctx = (void *)(uintptr_t)p; /* items only read the profile */
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "device_coverage", cg_jv_str_nocopy(a, cg_coverage_name(p->device_coverage)));
    cg_jv_obj_put(a, o, "device_spans", cg_jv_lazy_arr(a, p->n_device_spans, device_span_item, ctx));
    cg_jv_obj_put(a, o, "device_clocks", cg_jv_lazy_arr(a, p->n_device_clocks, device_clock_item, ctx));
    return o;
}

cg_jv *cg_timing_to_json(cg_arena *a, const cg_timing_profile *p) {
    return cg_jv_materialize(a, cg_timing_to_json_lazy(a, p));
}
