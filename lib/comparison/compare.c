/* compare.c — comparison/6 over cohort rows: reasons, statistics, verdict and
 * the tensor-stats comparison (the upstream compare_documents). */
#include "comparison/compare.h"

#include "base/hmap.h"
#include "base/num.h"

#include "base/alloc.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"
#include "comparison/stats.h"

/* ---------------------------------------------------------------- reasons */

static void add_reason(cg_arena *a, cg_jv *reasons, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add_reason(cg_arena *a, cg_jv *reasons, const char *code, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cg_jv *r = cg_jv_obj(a);
    cg_jv_obj_put(a, r, "code", cg_jv_str_nocopy(a, code));
    cg_jv_obj_put(a, r, "message", cg_jv_str(a, msg));
    cg_jv_arr_push(a, reasons, r);
}

/* A cohort as the core sees it. */
typedef struct cohort {
    const char *name; /* "baseline" | "candidate" */
    const cg_cohort_row *rows;
    size_t n;
    const cg_cohort_receipt *receipts;
    size_t nr;
} cohort;

static void check_receipts(cg_arena *a, cg_jv *reasons, const cohort *c) {
    if (c->nr != c->n) {
        add_reason(a, reasons, "receipt_count_mismatch",
                   "%s bundle receipts must correspond one-to-one with trace documents", c->name);
        return;
    }
    for (size_t i = 0; i < c->n; i++) {
        const cg_cohort_receipt *r = &c->receipts[i];
        if (strcmp(r->run_id, c->rows[i].run_id) != 0)
            add_reason(a, reasons, "receipt_run_id_mismatch",
                       "%s bundle %zu receipt run ID does not match its trace", c->name, i + 1);
        if (!cg_is_sha256_hex(r->manifest_sha256))
            add_reason(a, reasons, "receipt_digest_invalid",
                       "%s bundle %zu receipt has an invalid manifest SHA-256", c->name, i + 1);
    }
}

static void check_runs(cg_arena *a, cg_jv *reasons, const cohort *c) {
    for (size_t i = 0; i < c->n; i++) {
        const cg_cohort_row *r = &c->rows[i];
        if (!(r->structurally_valid && r->capture_complete))
            add_reason(a, reasons, "incomplete_capture",
                       "%s run %zu is not a complete, structurally valid capture", c->name, i + 1);
        if (r->measurement_scope != CG_SCOPE_PRODUCTION_EQUIVALENT)
            add_reason(a, reasons, "not_production_equivalent",
                       "%s run %zu is not declared production-equivalent", c->name, i + 1);
        if (strncmp(r->device, "cpu", 3) != 0 && !r->measured_region_device_synchronized)
            add_reason(a, reasons, "unsynchronized_device_region",
                       "%s run %zu does not synchronize its measured device region", c->name, i + 1);
        if (r->measured_regions != 1)
            add_reason(a, reasons, "measured_region_count_invalid",
                       "%s run %zu does not contain exactly one closed measured region", c->name, i + 1);
    }
}

static int cmp_strp(const void *x, const void *y) {
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static bool has_duplicate_run_ids(const cohort *b, const cohort *c) {
    size_t n = b->n + c->n;
    if (n < 2) return false;
    const char **ids = cg_xalloc(n, sizeof *ids);
    for (size_t i = 0; i < b->n; i++) ids[i] = b->rows[i].run_id;
    for (size_t i = 0; i < c->n; i++) ids[b->n + i] = c->rows[i].run_id;
    qsort(ids, n, sizeof *ids, cmp_strp);
    bool dup = false;
    for (size_t i = 1; i < n && !dup; i++) dup = strcmp(ids[i - 1], ids[i]) == 0;
    cg_free(ids);
    return dup;
}

static bool same_semantics(const cg_cohort_row *x, const cg_cohort_row *y) {
    return !strcmp(x->entrypoint, y->entrypoint) && x->phase == y->phase && !strcmp(x->device, y->device) &&
           x->timing_mode == y->timing_mode && x->warmup_steps == y->warmup_steps &&
           x->capture_step == y->capture_step && !strcmp(x->capture_contract_json, y->capture_contract_json) &&
           x->measured_region_device_synchronized == y->measured_region_device_synchronized;
}

static bool same_conditions(const cg_comparison_identity *x, const cg_comparison_identity *y) {
    return !strcmp(x->workload_id, y->workload_id) && !strcmp(x->model_id, y->model_id) &&
           !strcmp(x->config_id, y->config_id) && !strcmp(x->data_id, y->data_id) &&
           !strcmp(x->seed_policy, y->seed_policy) && x->physical_batch == y->physical_batch &&
           x->accumulation_steps == y->accumulation_steps && !strcmp(x->precision, y->precision) &&
           !strcmp(x->device_state, y->device_state);
}

/* Step 6: returns the common identity (implementation/pair removed) or NULL. */
static cg_jv *check_identity(cg_arena *a, cg_jv *reasons, const cohort *b, const cohort *c) {
    const cg_cohort_row *first = b->n ? &b->rows[0] : c->n ? &c->rows[0] : NULL;
    if (!first || !first->identity) {
        add_reason(a, reasons, "identity_missing", "comparison identity is missing");
        return NULL;
    }
    const cohort *cs[2] = {b, c};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < cs[k]->n; i++)
            if (!cs[k]->rows[i].identity) {
                add_reason(a, reasons, "identity_missing", "comparison identity is missing from one or more runs");
                return NULL;
            }
    cg_error err;
    cg_err_clear(&err);
    if (cg_comparison_identity_validate(first->identity, &err) != 0) {
        add_reason(a, reasons, "identity_invalid", "comparison identity is invalid: %s", err.msg);
        return NULL;
    }
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < cs[k]->n; i++)
            if (!same_conditions(first->identity, cs[k]->rows[i].identity)) {
                add_reason(a, reasons, "identity_conditions_differ",
                           "workload, model, configuration, data, seed, batch, precision, or device state differs");
                return NULL;
            }
    cg_comparison_identity common = *first->identity;
    common.implementation_id = NULL;
    common.pair_id = NULL;
    return cg_comparison_identity_to_json(a, &common);
}

static const char *impl_id(const cg_cohort_row *r) {
    return r->identity ? r->identity->implementation_id : NULL;
}

/* Step 7 for one cohort: the cohort's implementation ID, or NULL after a reason. */
static const char *check_implementation(cg_arena *a, cg_jv *reasons, const cohort *c) {
    if (c->n == 0 || !impl_id(&c->rows[0])) {
        add_reason(a, reasons, "implementation_id_missing", "%s implementation ID is missing", c->name);
        return NULL;
    }
    for (size_t i = 1; i < c->n; i++)
        if (!impl_id(&c->rows[i])) {
            add_reason(a, reasons, "implementation_id_missing",
                       "%s implementation ID is missing from one or more runs", c->name);
            return NULL;
        }
    for (size_t i = 0; i < c->n; i++)
        if (cg_str_blank(impl_id(&c->rows[i]))) {
            add_reason(a, reasons, "implementation_id_empty", "%s implementation ID must not be empty", c->name);
            return NULL;
        }
    const char *first = impl_id(&c->rows[0]);
    for (size_t i = 1; i < c->n; i++)
        if (strcmp(first, impl_id(&c->rows[i])) != 0) {
            add_reason(a, reasons, "implementation_id_inconsistent", "%s implementation ID differs within the cohort",
                       c->name);
            return NULL;
        }
    return first;
}

/* ---------------------------------------------------------------- pairing */

typedef struct pair_entry {
    const char *pair_id;
    uint64_t sample;
} pair_entry;

static int cmp_pair_entry(const void *x, const void *y) {
    return strcmp(((const pair_entry *)x)->pair_id, ((const pair_entry *)y)->pair_id);
}

static const char *pair_id_of(const cg_cohort_row *r) {
    return r->identity ? r->identity->pair_id : NULL;
}

static bool pairing_requested(const cohort *b, const cohort *c) {
    for (size_t i = 0; i < b->n; i++)
        if (pair_id_of(&b->rows[i])) return true;
    for (size_t i = 0; i < c->n; i++)
        if (pair_id_of(&c->rows[i])) return true;
    return false;
}

/* Builds the cohort's pair map (sorted by pair ID). Returns false after adding
 * the reason that stops pairing. *out is malloc'd (caller frees). */
static bool pair_map(cg_arena *a, cg_jv *reasons, const cohort *c, pair_entry **out) {
    pair_entry *m = cg_xalloc(c->n, sizeof *m);
    *out = m;
    for (size_t i = 0; i < c->n; i++) {
        const cg_cohort_row *r = &c->rows[i];
        if (!pair_id_of(r)) {
            add_reason(a, reasons, "pairing_incomplete", "pair IDs must be present on every run when pairing is requested");
            return false;
        }
        if (r->measured_regions == 0) {
            add_reason(a, reasons, "pairing_incomplete", "paired runs require one closed measured region");
            return false;
        }
        for (size_t k = 0; k < i; k++)
            if (!strcmp(m[k].pair_id, pair_id_of(r))) {
                add_reason(a, reasons, "pair_ids_duplicated", "pair IDs must be unique within each cohort");
                return false;
            }
        m[i].pair_id = pair_id_of(r);
        m[i].sample = r->measured_duration_ns;
    }
    qsort(m, c->n, sizeof *m, cmp_pair_entry);
    return true;
}

/* Step 8: returns the pairs (malloc'd, ordered by pair ID) and sets *np, or NULL. */
static cg_pair *check_pairing(cg_arena *a, cg_jv *reasons, const cohort *b, const cohort *c, size_t *np) {
    *np = 0;
    if (!pairing_requested(b, c)) return NULL;
    pair_entry *mb = NULL, *mc = NULL;
    cg_pair *pairs = NULL;
    if (!pair_map(a, reasons, b, &mb) || !pair_map(a, reasons, c, &mc)) goto done;
    bool same = b->n == c->n;
    for (size_t i = 0; same && i < b->n; i++) same = !strcmp(mb[i].pair_id, mc[i].pair_id);
    if (!same) {
        add_reason(a, reasons, "pair_sets_mismatch", "baseline and candidate pair-ID sets must match exactly");
        goto done;
    }
    pairs = cg_xalloc(b->n, sizeof *pairs);
    for (size_t i = 0; i < b->n; i++) {
        pairs[i].baseline = mb[i].sample;
        pairs[i].candidate = mc[i].sample;
    }
    *np = b->n;
done:
    cg_free(mb);
    cg_free(mc);
    return pairs;
}

/* ----------------------------------------------------------- tensor stats */

typedef struct label_agg {
    const char *label;
    double rms_sum, abs_max_sum;
    uint64_t non_finite, samples, runs;
} label_agg;

typedef struct label_map {
    label_agg *items; /* in first-seen order */
    size_t n, cap;
    cg_hmap index;    /* label -> position in items (base/hmap.h) */
} label_map;

static uint64_t label_hash(const char *label) {
    return cg_hmap_mix(cg_hmap_hash_bytes(0, label, strlen(label)), 0);
}

static bool label_eq(const void *ctx, uint32_t id, const void *key) {
    return strcmp(((const label_map *)ctx)->items[id].label, key) == 0;
}

static label_agg *map_get(label_map *m, const char *label) {
    if (!m->index.slot) cg_hmap_init(&m->index, 16);
    size_t at = 0;
    uint64_t h = label_hash(label);
    uint32_t id = cg_hmap_find(&m->index, h, label_eq, m, label, &at);
    if (id != CG_HMAP_NONE) return &m->items[id];
    m->items = cg_xgrow(m->items, &m->cap, m->n + 1, sizeof *m->items);
    label_agg *e = &m->items[m->n];
    memset(e, 0, sizeof *e);
    e->label = label;
    cg_hmap_put_at(&m->index, at, h, (uint32_t)m->n++);
    return e;
}

static label_agg *map_find(const label_map *m, const char *label) {
    if (!m->index.slot) return NULL;
    uint32_t id = cg_hmap_find(&m->index, label_hash(label), label_eq, m, label, NULL);
    return id == CG_HMAP_NONE ? NULL : &m->items[id];
}

static void map_free(label_map *m) {
    cg_free(m->items);
    cg_hmap_free(&m->index);
}

static void aggregate(const cohort *c, label_map *m) {
    for (size_t i = 0; i < c->n; i++) {
        const cg_cohort_row *r = &c->rows[i];
        for (size_t k = 0; k < r->n_tensor_stats; k++) {
            const cg_cohort_tensor_stat *s = &r->tensor_stats[k];
            label_agg *e = map_get(m, s->label);
            for (size_t j = 0; j < s->n; j++) {
                e->rms_sum += s->rms[j];
                e->abs_max_sum += s->abs_max[j];
            }
            e->non_finite = cg_sat_add_u64(e->non_finite, s->non_finite);
            e->samples += s->n;
            e->runs++;
        }
    }
}

/* ratio(a, b): a == 0 → 1.0 when b == 0 else none; otherwise b / a. */
static bool ratio(double x, double y, double *out) {
    if (x == 0.0) {
        if (y == 0.0) {
            *out = 1.0;
            return true;
        }
        return false;
    }
    *out = y / x;
    return true;
}

typedef struct matched_row {
    const label_agg *a, *b;
    double rms_a, rms_b, rms_ratio, abs_max_ratio;
    bool has_rms_ratio, has_abs_max_ratio;
    double key;
} matched_row;

static int cmp_matched(const void *x, const void *y) {
    const matched_row *p = x, *q = y;
    if (p->key > q->key) return -1;
    if (p->key < q->key) return 1;
    return strcmp(p->a->label, q->a->label);
}

static int cmp_agg_label(const void *x, const void *y) {
    return strcmp((*(const label_agg *const *)x)->label, (*(const label_agg *const *)y)->label);
}

static cg_jv *sorted_unmatched(cg_arena *a, const label_map *mine, const label_map *other) {
    const label_agg **only = cg_xalloc(mine->n, sizeof *only);
    size_t n = 0;
    for (size_t i = 0; i < mine->n; i++)
        if (!map_find(other, mine->items[i].label)) only[n++] = &mine->items[i];
    qsort(only, n, sizeof *only, cmp_agg_label);
    cg_jv *arr = cg_jv_arr(a);
    for (size_t i = 0; i < n; i++) cg_jv_arr_push(a, arr, cg_jv_str(a, only[i]->label));
    cg_free(only);
    return arr;
}

static cg_jv *opt_f64(cg_arena *a, bool has, double v) {
    return has ? cg_jv_f64(a, v) : cg_jv_null(a);
}

static cg_jv *tensor_stats_comparison(cg_arena *a, const cohort *b, const cohort *c) {
    label_map ma = {0}, mb = {0};
    aggregate(b, &ma);
    aggregate(c, &mb);
    matched_row *rows = cg_xalloc(ma.n, sizeof *rows);
    size_t n = 0;
    for (size_t i = 0; i < ma.n; i++) {
        const label_agg *x = &ma.items[i], *y = map_find(&mb, x->label);
        if (!y) continue;
        matched_row *r = &rows[n++];
        r->a = x;
        r->b = y;
        r->rms_a = x->rms_sum / (double)x->samples;
        r->rms_b = y->rms_sum / (double)y->samples;
        r->has_rms_ratio = ratio(r->rms_a, r->rms_b, &r->rms_ratio);
        r->has_abs_max_ratio =
            ratio(x->abs_max_sum / (double)x->samples, y->abs_max_sum / (double)y->samples, &r->abs_max_ratio);
        if (!r->has_rms_ratio || !(r->rms_ratio > 0.0))
            r->key = INFINITY; /* none, ≤ 0 (and NaN) rank first */
        else {
            r->key = fabs(log(r->rms_ratio));
            if (isnan(r->key)) r->key = INFINITY;
        }
    }
    qsort(rows, n, sizeof *rows, cmp_matched);
    cg_jv *o = cg_jv_obj(a), *matched = cg_jv_arr(a);
    cg_jv_obj_put(a, o, "baseline_runs", cg_jv_u64(a, b->n));
    cg_jv_obj_put(a, o, "candidate_runs", cg_jv_u64(a, c->n));
    for (size_t i = 0; i < n; i++) {
        const matched_row *r = &rows[i];
        cg_jv *e = cg_jv_obj(a);
        cg_jv_obj_put(a, e, "label", cg_jv_str(a, r->a->label));
        cg_jv_obj_put(a, e, "rms_a", cg_jv_f64(a, r->rms_a));
        cg_jv_obj_put(a, e, "rms_b", cg_jv_f64(a, r->rms_b));
        cg_jv_obj_put(a, e, "rms_ratio", opt_f64(a, r->has_rms_ratio, r->rms_ratio));
        cg_jv_obj_put(a, e, "abs_max_ratio", opt_f64(a, r->has_abs_max_ratio, r->abs_max_ratio));
        cg_jv_obj_put(a, e, "non_finite_a", cg_jv_u64(a, r->a->non_finite));
        cg_jv_obj_put(a, e, "non_finite_b", cg_jv_u64(a, r->b->non_finite));
        cg_jv_obj_put(a, e, "samples_a", cg_jv_u64(a, r->a->samples));
        cg_jv_obj_put(a, e, "samples_b", cg_jv_u64(a, r->b->samples));
        cg_jv_obj_put(a, e, "runs_a", cg_jv_u64(a, r->a->runs));
        cg_jv_obj_put(a, e, "runs_b", cg_jv_u64(a, r->b->runs));
        cg_jv_arr_push(a, matched, e);
    }
    cg_jv_obj_put(a, o, "matched", matched);
    cg_jv_obj_put(a, o, "unmatched_a", sorted_unmatched(a, &ma, &mb));
    cg_jv_obj_put(a, o, "unmatched_b", sorted_unmatched(a, &mb, &ma));
    cg_free(rows);
    map_free(&ma);
    map_free(&mb);
    return o;
}

/* ------------------------------------------------------------ statistics */

static uint64_t *samples_of(const cohort *c) {
    uint64_t *s = cg_xalloc(c->n, sizeof *s);
    for (size_t i = 0; i < c->n; i++) s[i] = c->rows[i].measured_regions ? c->rows[i].measured_duration_ns : 0;
    return s;
}

static cg_jv *sample_stats_json(cg_arena *a, const uint64_t *s, size_t n, cg_sample_stats *st) {
    cg_stats_sample(s, n, st);
    cg_jv *o = cg_jv_obj(a), *arr = cg_jv_arr(a);
    for (size_t i = 0; i < n; i++) cg_jv_arr_push(a, arr, cg_jv_u64(a, s[i]));
    cg_jv_obj_put(a, o, "samples_ns", arr);
    cg_jv_obj_put(a, o, "median_ns", cg_jv_f64(a, st->median_ns));
    cg_jv_obj_put(a, o, "p95_ns", cg_jv_f64(a, st->p95_ns));
    cg_jv_obj_put(a, o, "mad_ns", cg_jv_f64(a, st->mad_ns));
    return o;
}

static cg_jv *receipts_json(cg_arena *a, const cohort *c, cg_comparison_verification kind) {
    cg_jv *arr = cg_jv_arr(a);
    if (kind != CG_CMP_VERIFIED_BUNDLES) return arr;
    for (size_t i = 0; i < c->nr; i++) {
        cg_jv *r = cg_jv_obj(a);
        cg_jv_obj_put(a, r, "run_id", cg_jv_str(a, c->receipts[i].run_id));
        cg_jv_obj_put(a, r, "manifest_sha256", cg_jv_str(a, c->receipts[i].manifest_sha256));
        cg_jv_arr_push(a, arr, r);
    }
    return arr;
}

/* compare_documents (§3): the one function every entry point ends in. */
static cg_jv *compare_core(cg_arena *a, const cohort *b, const cohort *c, cg_comparison_verification kind) {
    cg_jv *reasons = cg_jv_arr(a);
    /* 1. input provenance */
    if (kind == CG_CMP_UNVERIFIED_TRACES) {
        add_reason(a, reasons, "unverified_inputs",
                   "unverified raw trace inputs are diagnostic only; finalized verified bundles are required for an "
                   "eligible comparison");
    } else {
        check_receipts(a, reasons, b);
        check_receipts(a, reasons, c);
    }
    /* 2. per-run checks */
    check_runs(a, reasons, b);
    check_runs(a, reasons, c);
    /* 3–5 */
    if (b->n < CG_COMPARISON_MINIMUM_RUNS || c->n < CG_COMPARISON_MINIMUM_RUNS)
        add_reason(a, reasons, "insufficient_runs", "at least 5 independent baseline and candidate runs are required");
    if (has_duplicate_run_ids(b, c))
        add_reason(a, reasons, "duplicate_run_ids", "run IDs must be unique across all replicates");
    if (b->n + c->n == 0) {
        add_reason(a, reasons, "no_runs", "comparison contains no runs");
    } else {
        const cg_cohort_row *first = b->n ? &b->rows[0] : &c->rows[0];
        bool same = true;
        for (size_t i = 0; same && i < b->n; i++) same = same_semantics(first, &b->rows[i]);
        for (size_t i = 0; same && i < c->n; i++) same = same_semantics(first, &c->rows[i]);
        if (!same)
            add_reason(a, reasons, "capture_semantics_mismatch",
                       "entrypoint, phase, device, timing mode, synchronization, warmup, capture step, and capture "
                       "contract must match");
    }
    /* 6–8 */
    cg_jv *identity = check_identity(a, reasons, b, c);
    const char *impl_b = check_implementation(a, reasons, b);
    const char *impl_c = check_implementation(a, reasons, c);
    size_t np = 0;
    cg_pair *pairs = check_pairing(a, reasons, b, c, &np);
    bool paired = pairs != NULL;
    bool comparable = cg_jv_len(reasons) == 0;

    /* statistics (always computed) */
    uint64_t *sb = samples_of(b), *sc = samples_of(c);
    cg_sample_stats stb, stc;
    cg_jv *jb = sample_stats_json(a, sb, b->n, &stb);
    cg_jv *jc = sample_stats_json(a, sc, c->n, &stc);
    double median_delta;
    if (paired) {
        int64_t *d = cg_xalloc(np, sizeof *d);
        for (size_t i = 0; i < np; i++) d[i] = (int64_t)(pairs[i].candidate - pairs[i].baseline);
        median_delta = cg_stats_integer_median(d, np);
        cg_free(d);
    } else {
        median_delta = stc.median_ns - stb.median_ns;
    }
    bool has_percent = stb.median_ns != 0.0;
    double percent = has_percent ? median_delta / stb.median_ns * 100.0 : 0.0;

    const char *verdict = "ineligible";
    cg_jv *ci_json = cg_jv_null(a);
    if (comparable) {
        cg_ci ci;
        if (paired)
            cg_stats_bootstrap_paired(pairs, np, &ci);
        else
            cg_stats_bootstrap_unpaired(sb, b->n, sc, c->n, &ci);
        ci_json = cg_jv_obj(a);
        cg_jv_obj_put(a, ci_json, "level", cg_jv_f64(a, CG_CI_LEVEL));
        cg_jv_obj_put(a, ci_json, "lower_delta_ns", cg_jv_f64(a, ci.lower_delta_ns));
        cg_jv_obj_put(a, ci_json, "upper_delta_ns", cg_jv_f64(a, ci.upper_delta_ns));
        verdict = ci.upper_delta_ns < 0.0   ? "candidate_faster"
                  : ci.lower_delta_ns > 0.0 ? "candidate_slower"
                                            : "inconclusive";
    }

    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "schema", cg_jv_str_nocopy(a, CG_COMPARISON_SCHEMA));
    cg_jv_obj_put(a, o, "metric", cg_jv_str_nocopy(a, "outer_wall_time_ns"));
    cg_jv *inputs = cg_jv_obj(a);
    cg_jv_obj_put(a, inputs, "verification",
                  cg_jv_str_nocopy(a, kind == CG_CMP_VERIFIED_BUNDLES ? "verified_bundles" : "unverified_traces"));
    cg_jv_obj_put(a, inputs, "baseline", receipts_json(a, b, kind));
    cg_jv_obj_put(a, inputs, "candidate", receipts_json(a, c, kind));
    cg_jv_obj_put(a, o, "inputs", inputs);
    cg_jv_obj_put(a, o, "comparable", cg_jv_bool(a, comparable));
    cg_jv_obj_put(a, o, "paired", cg_jv_bool(a, paired));
    cg_jv_obj_put(a, o, "verdict", cg_jv_str_nocopy(a, verdict));
    cg_jv_obj_put(a, o, "reasons", reasons);
    cg_jv_obj_put(a, o, "baseline_implementation_id", impl_b ? cg_jv_str(a, impl_b) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "candidate_implementation_id", impl_c ? cg_jv_str(a, impl_c) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "identity", identity ? identity : cg_jv_null(a));
    cg_jv_obj_put(a, o, "baseline", jb);
    cg_jv_obj_put(a, o, "candidate", jc);
    cg_jv_obj_put(a, o, "median_delta_ns", cg_jv_f64(a, median_delta));
    cg_jv_obj_put(a, o, "median_delta_percent", opt_f64(a, has_percent, percent));
    cg_jv_obj_put(a, o, "confidence_interval", ci_json);
    cg_jv_obj_put(a, o, "tensor_stats", tensor_stats_comparison(a, b, c));
    cg_free(sb);
    cg_free(sc);
    cg_free(pairs);
    return o;
}

/* ------------------------------------------------------------ entry points */

cg_jv *cg_compare_rows_with_receipts(cg_arena *a, const cg_cohort_row *baseline, size_t nb,
                                     const cg_cohort_receipt *baseline_receipts, size_t nbr,
                                     const cg_cohort_row *candidate, size_t nc,
                                     const cg_cohort_receipt *candidate_receipts, size_t ncr,
                                     cg_comparison_verification kind) {
    cohort b = {"baseline", baseline, nb, baseline_receipts, nbr};
    cohort c = {"candidate", candidate, nc, candidate_receipts, ncr};
    if (kind != CG_CMP_VERIFIED_BUNDLES) b.nr = c.nr = 0;
    return compare_core(a, &b, &c, kind);
}

/* The receipts carried by rows, in row order (rows without one are skipped). */
static cg_cohort_receipt *row_receipts(const cg_cohort_row *rows, size_t n, size_t *nr) {
    cg_cohort_receipt *r = cg_xalloc(n, sizeof *r);
    *nr = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i].has_receipt) r[(*nr)++] = rows[i].receipt;
    return r;
}

cg_jv *cg_compare_rows(cg_arena *a, const cg_cohort_row *baseline, size_t nb, const cg_cohort_row *candidate,
                       size_t nc, cg_comparison_verification kind) {
    size_t nbr, ncr;
    cg_cohort_receipt *rb = row_receipts(baseline, nb, &nbr), *rc = row_receipts(candidate, nc, &ncr);
    cg_jv *v = cg_compare_rows_with_receipts(a, baseline, nb, rb, nbr, candidate, nc, rc, ncr, kind);
    cg_free(rb);
    cg_free(rc);
    return v;
}

/* ------------------------------------------------------------ verdict helpers */

bool cg_comparison_is_ineligible(const cg_jv *comparison) {
    const char *v = cg_jv_as_str(cg_jv_get(comparison, "verdict"));
    return v && !strcmp(v, "ineligible");
}

void cg_comparison_ineligible_message(const cg_jv *comparison, cg_buf *out) {
    const cg_jv *reasons = cg_jv_get(comparison, "reasons");
    size_t n = cg_jv_len(reasons);
    const char **codes = cg_xalloc(n, sizeof *codes);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *c = cg_jv_as_str(cg_jv_get(cg_jv_at(reasons, i), "code"));
        if (c) codes[k++] = c;
    }
    qsort(codes, k, sizeof *codes, cmp_strp);
    cg_buf_puts(out, "comparison ineligible: ");
    for (size_t i = 0; i < k; i++) {
        if (i > 0 && !strcmp(codes[i], codes[i - 1])) continue;
        if (i > 0) cg_buf_puts(out, ", ");
        cg_buf_puts(out, codes[i]);
    }
    cg_free(codes);
}
