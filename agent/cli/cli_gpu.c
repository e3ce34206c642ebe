#include "cli_gpu.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"

#define ROW_LIMIT 50
#define LABEL_LIMIT 100
#define DIAGNOSTIC_LIMIT 50

/* The two reports projected ranges and phase attribution need. */
#define NVTX "nvtx_gpu_proj_trace"
#define TIMELINE "cuda_gpu_trace"

typedef struct report_ref {
    const char *kind;     /* report name as diagnostics and limits spell it */
    const char *coverage; /* its gpu.coverage flag */
} report_ref;

static const report_ref nvtx_report = {NVTX, "nvtx_projection"};
static const report_ref phase_reports[] = {{NVTX, "nvtx_projection"}, {TIMELINE, "gpu_timeline"}};

typedef struct availability {
    bool available, failed;
    const char *reason; /* NULL when available */
} availability;

static cg_jv *gpu_of(cg_jv *p) { return cg_jv_get(p, "gpu"); }
static cg_jv *or_null(cg_arena *a, cg_jv *v) { return v ? v : cg_jv_null(a); }
static size_t len_of(cg_jv *v) { return v && v->type == CG_JARR ? cg_jv_len(v) : 0; }

static bool is_true(const cg_jv *v) { return v && v->type == CG_JBOOL && v->u.b; }

static uint64_t u64_of(const cg_jv *v) {
    uint64_t x = 0;
    return cg_jv_as_u64(v, &x) ? x : 0;
}

static bool str_is(const cg_jv *v, const char *s) {
    const char *x = cg_jv_as_str(v);
    return x && !strcmp(x, s);
}

cg_jv *cli_bounded(cg_arena *a, cg_jv *arr, size_t limit) {
    size_t total = len_of(arr), shown = total < limit ? total : limit;
    cg_jv *rows = cg_jv_arr(a);
    for (size_t i = 0; i < shown; i++) cg_jv_arr_push(a, rows, cg_jv_at(arr, i));
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "total", cg_jv_u64(a, total));
    cg_jv_obj_put(a, o, "displayed", cg_jv_u64(a, shown));
    cg_jv_obj_put(a, o, "truncated", cg_jv_bool(a, shown < total));
    cg_jv_obj_put(a, o, "rows", rows);
    return o;
}

static availability report_availability(cg_arena *a, cg_jv *p, const report_ref *r) {
    cg_jv *g = gpu_of(p), *diags = cg_jv_get(g, "diagnostics");
    bool parse_failed = false;
    for (size_t i = 0; i < len_of(diags) && !parse_failed; i++) {
        const char *d = cg_jv_as_str(cg_jv_at(diags, i));
        parse_failed = d && strstr(d, r->kind);
    }
    availability av = {0};
    if (is_true(cg_jv_get(cg_jv_get(g, "coverage"), r->coverage)) && !parse_failed) {
        av.available = true;
        return av;
    }
    av.failed = parse_failed || str_is(cg_jv_get(g, "status"), "failed");
    av.reason = cg_arena_printf(a, "Nsight report `%s` %s; its row population is unknown, not zero", r->kind,
                                av.failed ? "failed to normalize" : "was not normalized");
    return av;
}

static availability combined_availability(cg_arena *a, cg_jv *p, const report_ref *rs, size_t n) {
    availability av = {.available = true};
    const char *names = NULL;
    for (size_t i = 0; i < n; i++) {
        availability one = report_availability(a, p, &rs[i]);
        if (one.available) continue;
        av.available = false;
        av.failed |= one.failed;
        names = names ? cg_arena_printf(a, "%s, %s", names, rs[i].kind) : rs[i].kind;
    }
    if (!av.available)
        av.reason = cg_arena_printf(
            a, "required normalized Nsight report(s) unavailable: %s; the derived result is unknown, not zero", names);
    return av;
}

static const char *status_name(const availability *av) {
    return av->available ? "available" : av->failed ? "failed" : "unavailable";
}

static cg_jv *reason_or_null(cg_arena *a, const availability *av) {
    return av->reason ? cg_jv_str(a, av->reason) : cg_jv_null(a);
}

/* {status, reason (omitted when available)}: the serialized QueryAvailability */
static cg_jv *availability_json(cg_arena *a, const availability *av) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "status", cg_jv_str_nocopy(a, status_name(av)));
    if (av->reason) cg_jv_obj_put(a, o, "reason", cg_jv_str(a, av->reason));
    return o;
}

static cg_jv *required_reports(cg_arena *a, cg_jv *p, const report_ref *rs, size_t n) {
    cg_jv *o = cg_jv_obj(a);
    for (size_t i = 0; i < n; i++) {
        availability av = report_availability(a, p, &rs[i]);
        cg_jv_obj_put(a, o, rs[i].kind, availability_json(a, &av));
    }
    return o;
}

/* The report's population: its limits' total_rows summed, never below the rows kept. */
static uint64_t total_report_rows(cg_jv *p, const char *kind, uint64_t fallback) {
    cg_jv *limits = cg_jv_get(gpu_of(p), "limits");
    uint64_t total = 0;
    for (size_t i = 0; limits && limits->type == CG_JOBJ && i < limits->u.obj.n; i++)
        if (strstr(limits->u.obj.m[i].key, kind)) total += u64_of(cg_jv_get(limits->u.obj.m[i].val, "total_rows"));
    return total > fallback ? total : fallback;
}

static cg_jv *row_count(cg_arena *a, cg_jv *p, const char *kind, const char *coverage, const char *rows_key) {
    report_ref r = {kind, coverage};
    availability av = report_availability(a, p, &r);
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "status", cg_jv_str_nocopy(a, status_name(&av)));
    cg_jv_obj_put(a, o, "reason", reason_or_null(a, &av));
    cg_jv_obj_put(a, o, "total",
                  av.available ? cg_jv_u64(a, total_report_rows(p, kind, len_of(cg_jv_get(gpu_of(p), rows_key))))
                               : cg_jv_null(a));
    return o;
}

static cg_jv *normalized_rows(cg_arena *a, cg_jv *p) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "kernels", row_count(a, p, "cuda_gpu_kern_sum", "kernel_summary", "kernels"));
    cg_jv_obj_put(a, o, "runtime_calls", row_count(a, p, "cuda_api_sum", "runtime_summary", "runtime_calls"));
    cg_jv_obj_put(a, o, "memory_operations",
                  row_count(a, p, "cuda_gpu_mem_time_sum", "memory_summary", "memory_operations"));
    cg_jv_obj_put(a, o, "projected_ranges", row_count(a, p, NVTX, "nvtx_projection", "nvtx_ranges"));
    cg_jv_obj_put(a, o, "gpu_timeline", row_count(a, p, TIMELINE, "gpu_timeline", "gpu_timeline"));
    return o;
}

/* {status, reason, complete}: complete only when the projection is available */
static cg_jv *correlation_state(cg_arena *a, cg_jv *p) {
    availability av = report_availability(a, p, &nvtx_report);
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "status", cg_jv_str_nocopy(a, status_name(&av)));
    cg_jv_obj_put(a, o, "reason", reason_or_null(a, &av));
    cg_jv_obj_put(a, o, "complete",
                  av.available ? or_null(a, cg_jv_get(cg_jv_get(gpu_of(p), "correlation"), "complete")) : cg_jv_null(a));
    return o;
}

static cg_jv *gpu_capabilities(cg_arena *a, cg_jv *p) {
    cg_jv *caps = cg_jv_get(p, "capabilities"), *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "gpu_correlation", or_null(a, cg_jv_get(caps, "gpu_correlation")));
    cg_jv_obj_put(a, o, "provenance_binding", or_null(a, cg_jv_get(caps, "provenance_binding")));
    return o;
}

static cg_jv *binding(cg_arena *a, cg_jv *p) {
    return or_null(a, cg_jv_get(cg_jv_get(gpu_of(p), "provenance"), "binding"));
}

/* status, reason, provenance_binding: the head every GPU view starts with */
static void put_head(cg_arena *a, cg_jv *o, const char *status, const char *reason, cg_jv *p) {
    cg_jv_obj_put(a, o, "status", cg_jv_str(a, status));
    cg_jv_obj_put(a, o, "reason", reason ? cg_jv_str(a, reason) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "provenance_binding", binding(a, p));
}

/* A new object with the GPU evidence's status and reason, then
 * provenance_binding: the head of the summary and status views. */
static cg_jv *evidence_head(cg_arena *a, cg_jv *p) {
    cg_jv *g = gpu_of(p), *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "status", or_null(a, cg_jv_get(g, "status")));
    cg_jv_obj_put(a, o, "reason", or_null(a, cg_jv_get(g, "reason")));
    cg_jv_obj_put(a, o, "provenance_binding", binding(a, p));
    return o;
}

cg_jv *cli_gpu_summary(cg_arena *a, cg_jv *p) {
    cg_jv *g = gpu_of(p), *o = evidence_head(a, p);
    cg_jv_obj_put(a, o, "correlation", correlation_state(a, p));
    cg_jv_obj_put(a, o, "coverage", or_null(a, cg_jv_get(g, "coverage")));
    cg_jv_obj_put(a, o, "normalized_rows", normalized_rows(a, p));
    availability phases = combined_availability(a, p, phase_reports, 2);
    cg_jv *ap = cg_jv_obj(a);
    cg_jv_obj_put(a, ap, "status", cg_jv_str_nocopy(a, status_name(&phases)));
    cg_jv_obj_put(a, ap, "reason", reason_or_null(a, &phases));
    cg_jv_obj_put(a, ap, "total",
                  phases.available ? cg_jv_u64(a, len_of(cg_jv_get(g, "phase_attribution"))) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "attributed_phases", ap);
    size_t diags = len_of(cg_jv_get(g, "diagnostics")) + len_of(cg_jv_get(cg_jv_get(g, "provenance"), "diagnostics"));
    cg_jv_obj_put(a, o, "diagnostic_count", cg_jv_u64(a, diags));
    return o;
}

static int str_cmp(const void *l, const void *r) {
    const cg_jv *x = *(cg_jv *const *)l, *y = *(cg_jv *const *)r;
    size_t n = x->u.str.len < y->u.str.len ? x->u.str.len : y->u.str.len;
    int c = memcmp(x->u.str.s, y->u.str.s, n);
    return c ? c : (x->u.str.len > y->u.str.len) - (x->u.str.len < y->u.str.len);
}

/* provenance diagnostics then GPU diagnostics, sorted, duplicates dropped */
static cg_jv *all_diagnostics(cg_arena *a, cg_jv *p) {
    cg_jv *g = gpu_of(p);
    cg_jv *src[2] = {cg_jv_get(cg_jv_get(g, "provenance"), "diagnostics"), cg_jv_get(g, "diagnostics")};
    size_t n = len_of(src[0]) + len_of(src[1]), k = 0;
    cg_jv **items = cg_arena_alloc(a, sizeof *items * (n ? n : 1));
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < len_of(src[s]); i++)
            if (cg_jv_at(src[s], i)->type == CG_JSTR) items[k++] = cg_jv_at(src[s], i);
    qsort(items, k, sizeof *items, str_cmp);
    cg_jv *out = cg_jv_arr(a);
    for (size_t i = 0; i < k; i++)
        if (i == 0 || str_cmp(&items[i - 1], &items[i]) != 0) cg_jv_arr_push(a, out, items[i]);
    return out;
}

cg_jv *cli_query_gpu_status(cg_arena *a, cg_jv *p) {
    cg_jv *g = gpu_of(p), *o = evidence_head(a, p);
    cg_jv_obj_put(a, o, "capabilities", gpu_capabilities(a, p));
    cg_jv_obj_put(a, o, "coverage", or_null(a, cg_jv_get(g, "coverage")));
    cg_jv_obj_put(a, o, "correlation", correlation_state(a, p));
    cg_jv_obj_put(a, o, "normalized_rows", normalized_rows(a, p));
    cg_jv *src = cg_jv_obj(a);
    cg_jv *raw = cg_jv_get(g, "raw_report");
    cg_jv_obj_put(a, src, "raw_report", cg_jv_bool(a, raw && raw->type != CG_JNULL));
    cg_jv_obj_put(a, src, "csv_files", cg_jv_u64(a, len_of(cg_jv_get(g, "source_csv"))));
    cg_jv_obj_put(a, o, "source_artifacts", src);
    cg_jv_obj_put(a, o, "diagnostics", cli_bounded(a, all_diagnostics(a, p), DIAGNOSTIC_LIMIT));
    return o;
}

static cg_jv *ledger_view(cg_arena *a, cg_jv *ledger) {
    static const char *const lists[] = {"expected",         "cpu_only",           "observed",           "matched",
                                        "missing_expected", "unexpected_observed", "unexpected_cpu_only"};
    cg_jv *o = cg_jv_obj(a);
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
        cg_jv_obj_put(a, o, lists[i], cli_bounded(a, cg_jv_get(ledger, lists[i]), LABEL_LIMIT));
    cg_jv_obj_put(a, o, "duplicates", cli_bounded(a, cg_jv_get(ledger, "duplicates"), LABEL_LIMIT));
    return o;
}

cg_jv *cli_query_gpu_correlation(cg_arena *a, cg_jv *p) {
    availability av = report_availability(a, p, &nvtx_report);
    cg_jv *corr = cg_jv_get(gpu_of(p), "correlation"), *o = cg_jv_obj(a);
    put_head(a, o, status_name(&av), av.reason, p);
    cg_jv_obj_put(a, o, "required_reports", required_reports(a, p, &nvtx_report, 1));
    cg_jv_obj_put(a, o, "capabilities", gpu_capabilities(a, p));
    static const char *const keys[] = {"mode", "clock_aligned", "complete"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        cg_jv_obj_put(a, o, keys[i], av.available ? or_null(a, cg_jv_get(corr, keys[i])) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "correlation_reason", av.available ? or_null(a, cg_jv_get(corr, "reason")) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "ledger", av.available ? ledger_view(a, cg_jv_get(corr, "ledger")) : cg_jv_null(a));
    return o;
}

/* Stable descending sort of rows by a u64 field, ties by a string field ascending. */
typedef struct ranked {
    cg_jv *row;
    uint64_t value;
    const char *tie;
    size_t index;
} ranked;

static int ranked_cmp(const void *l, const void *r) {
    const ranked *x = l, *y = r;
    if (x->value != y->value) return x->value < y->value ? 1 : -1;
    int c = strcmp(x->tie ? x->tie : "", y->tie ? y->tie : "");
    if (c) return c;
    return (x->index > y->index) - (x->index < y->index);
}

/* rows of arr sorted; returns the count, *out the array (arena) */
static size_t rank_rows(cg_arena *a, cg_jv *arr, const char *value_key, const char *tie_key, ranked **out) {
    size_t n = len_of(arr);
    ranked *r = cg_arena_alloc(a, sizeof *r * (n ? n : 1));
    for (size_t i = 0; i < n; i++) {
        cg_jv *row = cg_jv_at(arr, i);
        r[i] = (ranked){row, u64_of(cg_jv_get(row, value_key)), cg_jv_as_str(cg_jv_get(row, tie_key)), i};
    }
    qsort(r, n, sizeof *r, ranked_cmp);
    *out = r;
    return n;
}

static bool present(cg_jv *row, const char *key) {
    cg_jv *v = cg_jv_get(row, key);
    return v && v->type != CG_JNULL;
}

static cg_jv *projected_row(cg_arena *a, cg_jv *row) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "name", or_null(a, cg_jv_get(row, "name")));
    cg_jv_obj_put(a, o, "semantic_key", or_null(a, cg_jv_get(row, "semantic_key")));
    cg_jv_obj_put(a, o, "projected_start_ns", or_null(a, cg_jv_get(row, "projected_start_ns")));
    cg_jv_obj_put(a, o, "projected_duration_ns", or_null(a, cg_jv_get(row, "projected_duration_ns")));
    cg_jv_obj_put(a, o, "declared_gpu_operations", or_null(a, cg_jv_get(row, "gpu_operations")));
    static const char *const keys[] = {"correlation_id", "device", "context", "stream"};
    cg_jv *join = cg_jv_arr(a);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (present(row, keys[i])) cg_jv_arr_push(a, join, cg_jv_str_nocopy(a, keys[i]));
    cg_jv_obj_put(a, o, "join_keys", join);
    return o;
}

static cg_jv *projected_ranges(cg_arena *a, cg_jv *p) {
    availability av = report_availability(a, p, &nvtx_report);
    ranked *r = NULL;
    size_t sample = av.available ? rank_rows(a, cg_jv_get(gpu_of(p), "nvtx_ranges"), "projected_duration_ns", "name", &r)
                                 : 0;
    size_t shown = sample < ROW_LIMIT ? sample : ROW_LIMIT;
    cg_jv *rows = cg_jv_arr(a);
    for (size_t i = 0; i < shown; i++) cg_jv_arr_push(a, rows, projected_row(a, r[i].row));
    uint64_t population = av.available ? total_report_rows(p, NVTX, sample) : 0;
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "status", cg_jv_str_nocopy(a, status_name(&av)));
    cg_jv_obj_put(a, o, "reason", reason_or_null(a, &av));
    cg_jv_obj_put(a, o, "population_total", av.available ? cg_jv_u64(a, population) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "retained_sample_total", av.available ? cg_jv_u64(a, sample) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "displayed", cg_jv_u64(a, shown));
    cg_jv_obj_put(a, o, "population_truncated_before_ranking",
                  av.available ? cg_jv_bool(a, sample < population) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "display_truncated", av.available ? cg_jv_bool(a, shown < sample) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "sample_selection", cg_jv_str_nocopy(a, "earliest_original_start_rows"));
    cg_jv_obj_put(a, o, "ordering", cg_jv_str_nocopy(a, "projected_duration_ns_desc_within_retained_sample"));
    cg_jv_obj_put(a, o, "global_duration_ranking", cg_jv_bool(a, false));
    cg_jv_obj_put(a, o, "rows", rows);
    return o;
}

static cg_jv *attributed_phases(cg_arena *a, cg_jv *p, const availability *av) {
    ranked *r = NULL;
    size_t total =
        av->available ? rank_rows(a, cg_jv_get(gpu_of(p), "phase_attribution"), "gpu_busy_ns", "semantic_key", &r) : 0;
    size_t shown = total < ROW_LIMIT ? total : ROW_LIMIT;
    cg_jv *rows = cg_jv_arr(a);
    for (size_t i = 0; i < shown; i++) cg_jv_arr_push(a, rows, r[i].row);
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "status", cg_jv_str_nocopy(a, status_name(av)));
    cg_jv_obj_put(a, o, "reason", reason_or_null(a, av));
    cg_jv_obj_put(a, o, "population_total", av->available ? cg_jv_u64(a, total) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "displayed", cg_jv_u64(a, shown));
    cg_jv_obj_put(a, o, "display_truncated", av->available ? cg_jv_bool(a, shown < total) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "ordering", cg_jv_str_nocopy(a, "gpu_busy_ns_desc_across_normalized_population"));
    cg_jv_obj_put(a, o, "rows", rows);
    return o;
}

cg_jv *cli_query_gpu_phases(cg_arena *a, cg_jv *p) {
    availability av = combined_availability(a, p, phase_reports, 2);
    cg_jv *o = cg_jv_obj(a);
    put_head(a, o, status_name(&av), av.reason, p);
    cg_jv_obj_put(a, o, "required_reports", required_reports(a, p, phase_reports, 2));
    cg_jv_obj_put(a, o, "clock_plane", cg_jv_str_nocopy(a, "nsight_projected_not_host_aligned"));
    cg_jv_obj_put(a, o, "projected_ranges", projected_ranges(a, p));
    cg_jv_obj_put(a, o, "attributed_phases", attributed_phases(a, p, &av));
    return o;
}

cg_jv *cli_query_gpu_kernels(cg_arena *a, cg_jv *p) {
    static const report_ref kern = {"cuda_gpu_kern_sum", "kernel_summary"};
    availability av = report_availability(a, p, &kern);
    ranked *r = NULL;
    size_t n = av.available ? rank_rows(a, cg_jv_get(gpu_of(p), "kernels"), "total_ns", "name", &r) : 0;
    size_t shown = n < ROW_LIMIT ? n : ROW_LIMIT;
    cg_jv *rows = cg_jv_arr(a);
    for (size_t i = 0; i < shown; i++) cg_jv_arr_push(a, rows, r[i].row);
    uint64_t total = av.available ? total_report_rows(p, kern.kind, n) : 0;
    cg_jv *o = cg_jv_obj(a);
    put_head(a, o, status_name(&av), av.reason, p);
    cg_jv_obj_put(a, o, "required_reports", required_reports(a, p, &kern, 1));
    cg_jv_obj_put(a, o, "clock_plane", cg_jv_str_nocopy(a, "nsight_gpu"));
    cg_jv_obj_put(a, o, "population_total", av.available ? cg_jv_u64(a, total) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "displayed", cg_jv_u64(a, shown));
    cg_jv_obj_put(a, o, "display_truncated", av.available ? cg_jv_bool(a, shown < total) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "rows", rows);
    return o;
}

static bool in_strings(cg_jv *arr, const char *s) {
    for (size_t i = 0; i < len_of(arr); i++)
        if (str_is(cg_jv_at(arr, i), s)) return true;
    return false;
}

/* sorted, deduplicated semantic keys of the attributed phases */
static cg_jv *attributed_keys(cg_arena *a, cg_jv *phases) {
    cg_jv *keys = cg_jv_arr(a);
    for (size_t i = 0; i < len_of(phases); i++) {
        cg_jv *k = cg_jv_get(cg_jv_at(phases, i), "semantic_key");
        if (k && k->type == CG_JSTR) cg_jv_arr_push(a, keys, k);
    }
    qsort(keys->u.arr.items, keys->u.arr.n, sizeof *keys->u.arr.items, str_cmp);
    cg_jv *out = cg_jv_arr(a);
    for (size_t i = 0; i < keys->u.arr.n; i++)
        if (i == 0 || str_cmp(&keys->u.arr.items[i - 1], &keys->u.arr.items[i]) != 0)
            cg_jv_arr_push(a, out, keys->u.arr.items[i]);
    return out;
}

static cg_jv *truncated_reports(cg_arena *a, cg_jv *p) {
    /* by report name, as the crate's BTreeMap iterates */
    cg_jv *limits = cli_jv_sorted(a, cg_jv_get(gpu_of(p), "limits"));
    cg_jv *rows = cg_jv_arr(a);
    size_t total = 0;
    for (size_t i = 0; limits->type == CG_JOBJ && i < limits->u.obj.n; i++) {
        cg_jv *l = limits->u.obj.m[i].val;
        if (!is_true(cg_jv_get(l, "truncated"))) continue;
        if (total++ >= ROW_LIMIT) continue;
        cg_jv *row = cg_jv_obj(a);
        cg_jv_obj_put(a, row, "report", cg_jv_strn(a, limits->u.obj.m[i].key, limits->u.obj.m[i].key_len));
        cg_jv_obj_put(a, row, "total_rows", or_null(a, cg_jv_get(l, "total_rows")));
        cg_jv_obj_put(a, row, "displayed_rows", or_null(a, cg_jv_get(l, "displayed_rows")));
        cg_jv_arr_push(a, rows, row);
    }
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "total", cg_jv_u64(a, total));
    cg_jv_obj_put(a, o, "displayed", cg_jv_u64(a, cg_jv_len(rows)));
    cg_jv_obj_put(a, o, "truncated", cg_jv_bool(a, cg_jv_len(rows) < total));
    cg_jv_obj_put(a, o, "rows", rows);
    return o;
}

static void put_unavailable_gaps(cg_arena *a, cg_jv *o) {
    static const char *const keys[] = {"correlation_complete",
                                       "correlation_reason",
                                       "missing_expected",
                                       "unexpected_observed",
                                       "unexpected_cpu_only",
                                       "duplicate_labels",
                                       "matched_without_exact_gpu_busy_attribution",
                                       "attributed_unexpected",
                                       "projected_range_rows",
                                       "exactly_attributed_phase_rows",
                                       "truncated_reports"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) cg_jv_obj_put(a, o, keys[i], cg_jv_null(a));
}

static void put_available_gaps(cg_arena *a, cg_jv *o, cg_jv *p) {
    cg_jv *g = gpu_of(p), *corr = cg_jv_get(g, "correlation"), *ledger = cg_jv_get(corr, "ledger");
    cg_jv *phases = cg_jv_get(g, "phase_attribution"), *keys = attributed_keys(a, phases);
    cg_jv *expected = cg_jv_get(ledger, "expected"), *matched = cg_jv_get(ledger, "matched");
    cg_jv *unattributed = cg_jv_arr(a), *unexpected = cg_jv_arr(a);
    for (size_t i = 0; i < len_of(matched); i++)
        if (!in_strings(keys, cg_jv_as_str(cg_jv_at(matched, i)))) cg_jv_arr_push(a, unattributed, cg_jv_at(matched, i));
    for (size_t i = 0; i < len_of(keys); i++)
        if (!in_strings(expected, cg_jv_as_str(cg_jv_at(keys, i)))) cg_jv_arr_push(a, unexpected, cg_jv_at(keys, i));
    cg_jv_obj_put(a, o, "correlation_complete", or_null(a, cg_jv_get(corr, "complete")));
    cg_jv_obj_put(a, o, "correlation_reason", or_null(a, cg_jv_get(corr, "reason")));
    static const char *const lists[][2] = {{"missing_expected", "missing_expected"},
                                           {"unexpected_observed", "unexpected_observed"},
                                           {"unexpected_cpu_only", "unexpected_cpu_only"},
                                           {"duplicate_labels", "duplicates"}};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
        cg_jv_obj_put(a, o, lists[i][0], cli_bounded(a, cg_jv_get(ledger, lists[i][1]), LABEL_LIMIT));
    cg_jv_obj_put(a, o, "matched_without_exact_gpu_busy_attribution", cli_bounded(a, unattributed, LABEL_LIMIT));
    cg_jv_obj_put(a, o, "attributed_unexpected", cli_bounded(a, unexpected, LABEL_LIMIT));
    cg_jv_obj_put(a, o, "projected_range_rows",
                  cg_jv_u64(a, total_report_rows(p, NVTX, len_of(cg_jv_get(g, "nvtx_ranges")))));
    cg_jv_obj_put(a, o, "exactly_attributed_phase_rows", cg_jv_u64(a, len_of(phases)));
    cg_jv_obj_put(a, o, "truncated_reports", truncated_reports(a, p));
}

cg_jv *cli_query_gpu_attribution_gaps(cg_arena *a, cg_jv *p) {
    availability av = combined_availability(a, p, phase_reports, 2);
    cg_jv *o = cg_jv_obj(a);
    put_head(a, o, status_name(&av), av.reason, p);
    cg_jv_obj_put(a, o, "required_reports", required_reports(a, p, phase_reports, 2));
    if (av.available) put_available_gaps(a, o, p);
    else put_unavailable_gaps(a, o);
    cg_jv_obj_put(a, o, "diagnostics", cli_bounded(a, all_diagnostics(a, p), DIAGNOSTIC_LIMIT));
    return o;
}
