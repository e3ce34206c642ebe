/* correlation.c — the NVTX correlation ledger (NsightCorrelation) and phase
 * GPU attribution (PhaseGpuAttribution), as build_correlation and
 * attribute_gpu_phases of the crate's src/nsight.rs (65b3678d) derive them.
 * Both see every row (ranges in file order, the GPU timeline sorted by start),
 * before any display cap. The Nsight clock is never mapped
 * onto the host clock (clock_aligned is always false). */
#include <stdlib.h>
#include <string.h>

#include "nsight/nsight_internal.h"

#include "base/num.h"

static int cmp_str_ptr(const void *x, const void *y) {
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static int cmp_interval(const void *x, const void *y) {
    const cg_nsi_interval *a = x, *b = y;
    if (a->start != b->start) return a->start < b->start ? -1 : 1;
    if (a->end != b->end) return a->end < b->end ? -1 : 1;
    return 0;
}

uint64_t cg_nsi_union_clipped(cg_nsi_interval *iv, size_t n, uint64_t lo, uint64_t hi) {
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t s = iv[i].start > lo ? iv[i].start : lo;
        uint64_t e = iv[i].end < hi ? iv[i].end : hi;
        if (s < e) iv[m++] = (cg_nsi_interval){s, e};
    }
    if (m == 0) return 0;
    qsort(iv, m, sizeof *iv, cmp_interval);
    uint64_t total = 0, cs = iv[0].start, ce = iv[0].end;
    for (size_t i = 1; i < m; i++) {
        if (iv[i].start <= ce) {
            if (iv[i].end > ce) ce = iv[i].end;
        } else {
            total += ce - cs;
            cs = iv[i].start;
            ce = iv[i].end;
        }
    }
    return total + (ce - cs);
}

static bool key_eq(const char *range_key, const char *row_key) {
    return !range_key || (row_key && strcmp(range_key, row_key) == 0);
}

static bool has_join_key(const cg_nsight_timeline_row *r) {
    return r->correlation_id || r->device || r->context || r->stream;
}

/* GPU rows joined to a projected range: equal on every key the range has and
 * strictly overlapping [projected_start, projected_start + projected_duration).
 * Returns the count; appends clipped-later intervals to *iv when iv != NULL.
 * The GPU timeline is sorted by start; max_dur bounds how far back a row
 * starting before the interval can reach. */
static size_t joined_rows(cg_arena *a, const cg_nsight_timeline_table *gpu, uint64_t max_dur,
                          const cg_nsight_timeline_row *range, cg_nsi_interval **iv, size_t *n_iv,
                          size_t *cap_iv) {
    uint64_t ps = range->projected_start_ns;
    uint64_t pe = cg_sat_add_u64(ps, range->projected_duration_ns);
    uint64_t lo_start = ps > max_dur ? ps - max_dur : 0;
    size_t lo = 0, hi = gpu->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (gpu->rows[mid].start_ns < lo_start) lo = mid + 1;
        else hi = mid;
    }
    size_t count = 0;
    for (size_t i = lo; i < gpu->n && gpu->rows[i].start_ns < pe; i++) {
        const cg_nsight_timeline_row *g = &gpu->rows[i];
        uint64_t ge = cg_sat_add_u64(g->start_ns, g->duration_ns);
        if (!(g->start_ns < pe && ge > ps)) continue;
        if (!key_eq(range->correlation_id, g->correlation_id) || !key_eq(range->device, g->device) ||
            !key_eq(range->context, g->context) || !key_eq(range->stream, g->stream))
            continue;
        count++;
        if (iv) CG_NSI_PUSH(a, *iv, *n_iv, *cap_iv, ((cg_nsi_interval){g->start_ns, ge}));
    }
    return count;
}

static uint64_t max_duration(const cg_nsight_timeline_table *t) {
    uint64_t m = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->rows[i].duration_ns > m) m = t->rows[i].duration_ns;
    return m;
}

/* out = x ∩ y (both sorted sets) or x − y (when minus). */
static cg_strlist set_op(cg_arena *a, const cg_strlist *x, const cg_strlist *y, bool minus) {
    cg_strlist out = {cg_arena_alloc(a, (x->n ? x->n : 1) * sizeof(char *)), 0};
    for (size_t i = 0; i < x->n; i++)
        if (cg_nsi_set_contains(y, x->items[i]) != minus) out.items[out.n++] = x->items[i];
    return out;
}

void cg_nsi_correlate(cg_arena *a, cg_nsight_evidence *ev, const cg_strlist *gpu_expected,
                      const cg_strlist *cpu_only) {
    cg_nsight_correlation *c = &ev->correlation;
    cg_nsight_ledger *l = &c->ledger;
    const cg_nsight_timeline_table *nv = &ev->nvtx_ranges;
    memset(c, 0, sizeof *c);
    l->expected = cg_nsi_sorted_set(a, gpu_expected);
    l->cpu_only = cg_nsi_sorted_set(a, cpu_only);
    if (nv->n == 0) {
        /* the crate's empty correlation: every expected label is missing */
        c->mode = CG_NSIGHT_CORR_NONE;
        l->missing_expected = l->expected;
        c->reason = "No projected NVTX ranges were normalized";
        return;
    }

    /* observed names and duplicates */
    const char **names = cg_arena_alloc(a, nv->n * sizeof(char *));
    for (size_t i = 0; i < nv->n; i++) names[i] = nv->rows[i].name;
    qsort(names, nv->n, sizeof *names, cmp_str_ptr);
    l->observed.items = cg_arena_alloc(a, nv->n * sizeof(char *));
    size_t dup_cap = 0;
    for (size_t i = 0; i < nv->n;) {
        size_t j = i + 1;
        while (j < nv->n && strcmp(names[j], names[i]) == 0) j++;
        l->observed.items[l->observed.n++] = names[i];
        if (j - i > 1) {
            cg_nsight_duplicate d = {names[i], (uint64_t)(j - i)};
            CG_NSI_PUSH(a, l->duplicates, l->n_duplicates, dup_cap, d);
        }
        i = j;
    }

    l->matched = set_op(a, &l->expected, &l->observed, false);
    l->missing_expected = set_op(a, &l->expected, &l->observed, true);
    cg_strlist not_expected = set_op(a, &l->observed, &l->expected, true);
    l->unexpected_observed = set_op(a, &not_expected, &l->cpu_only, true);
    l->unexpected_cpu_only = set_op(a, &l->cpu_only, &l->observed, false);

    /* every range carrying an expected label, in row order, until the first
     * that fails (the crate's short-circuiting `all`) */
    size_t joinable = 0, unjoined = 0;
    bool qualified = true;
    uint64_t max_dur = max_duration(&ev->gpu_timeline);
    for (size_t i = 0; i < nv->n && qualified; i++) {
        const cg_nsight_timeline_row *r = &nv->rows[i];
        if (!cg_nsi_set_contains(&l->expected, r->name)) continue;
        if (r->has_gpu_operations && r->gpu_operations == 0) qualified = false;
        else if (r->has_gpu_operations && ev->gpu_timeline.n && has_join_key(r)) {
            joinable++;
            qualified = (uint64_t)joined_rows(a, &ev->gpu_timeline, max_dur, r, NULL, NULL, NULL) == r->gpu_operations;
        } else unjoined++;
    }

    c->mode = CG_NSIGHT_CORR_NVTX_PROJECTED_RANGE;
    c->complete = l->expected.n > 0 && l->missing_expected.n == 0 && l->unexpected_observed.n == 0 &&
                  l->unexpected_cpu_only.n == 0 && l->n_duplicates == 0 && qualified;
    if (c->complete)
        c->reason = cg_arena_printf(a,
                                    "GPU-expected and observed semantic labels match exactly; %zu joinable GPU "
                                    "operation count checks passed and %zu projected rows rely on the official "
                                    "projection report; Candle and Nsight clocks remain separate",
                                    joinable, unjoined);
    else
        c->reason = cg_arena_printf(a,
                                    "Correlation is incomplete: %zu missing GPU-expected, %zu unexpected observed, "
                                    "%zu CPU-only projected, %zu duplicate labels, joinable GPU operation counts "
                                    "complete=%s; clocks remain separate",
                                    l->missing_expected.n, l->unexpected_observed.n, l->unexpected_cpu_only.n,
                                    l->n_duplicates, qualified ? "true" : "false");
}

void cg_nsi_attribute(cg_arena *a, cg_nsight_evidence *ev) {
    const cg_nsight_timeline_table *nv = &ev->nvtx_ranges;
    uint64_t max_dur = max_duration(&ev->gpu_timeline);
    size_t cap = 0;
    ev->phase_attribution = NULL;
    ev->n_phase_attribution = 0;
    for (size_t i = 0; i < nv->n; i++) {
        const cg_nsight_timeline_row *r = &nv->rows[i];
        if (!has_join_key(r) || !r->has_projected_start || !r->has_projected_duration) continue;
        cg_nsi_interval *iv = NULL;
        size_t n_iv = 0, cap_iv = 0;
        size_t joined = joined_rows(a, &ev->gpu_timeline, max_dur, r, &iv, &n_iv, &cap_iv);
        /* (inferred) a range without a declared op count is not attributed:
         * "emitted only if the declared op count equals the joined count". */
        if (!r->has_gpu_operations || r->gpu_operations != (uint64_t)joined) continue;
        cg_nsight_phase_attribution pa;
        memset(&pa, 0, sizeof pa);
        pa.semantic_key = r->semantic_key ? r->semantic_key : r->name;
        pa.projected_start_ns = r->projected_start_ns;
        pa.projected_duration_ns = r->projected_duration_ns;
        pa.gpu_busy_ns = cg_nsi_union_clipped(iv, n_iv, r->projected_start_ns,
                                              cg_sat_add_u64(r->projected_start_ns, r->projected_duration_ns));
        pa.gpu_operation_count = (uint64_t)joined;
        pa.join_keys.items = cg_arena_alloc(a, 4 * sizeof(char *));
        if (r->correlation_id) pa.join_keys.items[pa.join_keys.n++] = "correlation_id";
        if (r->device) pa.join_keys.items[pa.join_keys.n++] = "device";
        if (r->context) pa.join_keys.items[pa.join_keys.n++] = "context";
        if (r->stream) pa.join_keys.items[pa.join_keys.n++] = "stream";
        CG_NSI_PUSH(a, ev->phase_attribution, ev->n_phase_attribution, cap, pa);
    }
}
