/* load.c — the entry points that start from traces, trace files or bundle
 * directories: they build cohort rows (§3.2 loading rules for bundles) and hand
 * them to cg_compare_rows*, so every path shares one comparison code. */
#include "comparison/compare.h"

#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "bundle/verify.h"
#include "trace/health.h"

static cg_cohort_row *rows_of_traces(cg_arena *a, const cg_trace *const *t, size_t n) {
    cg_cohort_row *rows = cg_arena_zalloc(a, (n ? n : 1) * sizeof *rows);
    for (size_t i = 0; i < n; i++) {
        cg_health *h = cg_health_analyze(t[i]);
        cg_cohort_row_from_trace(a, t[i], h, NULL, &rows[i]);
        cg_health_free(h);
    }
    return rows;
}

cg_jv *cg_compare_verified_traces(cg_arena *a, const cg_trace *const *baseline, size_t nb,
                                  const cg_cohort_receipt *baseline_receipts, size_t nbr,
                                  const cg_trace *const *candidate, size_t nc,
                                  const cg_cohort_receipt *candidate_receipts, size_t ncr) {
    cg_cohort_row *rb = rows_of_traces(a, baseline, nb), *rc = rows_of_traces(a, candidate, nc);
    return cg_compare_rows_with_receipts(a, rb, nb, baseline_receipts, nbr, rc, nc, candidate_receipts, ncr,
                                         CG_CMP_VERIFIED_BUNDLES);
}

cg_jv *cg_compare_unverified_traces(cg_arena *a, const cg_trace *const *baseline, size_t nb,
                                    const cg_trace *const *candidate, size_t nc) {
    cg_cohort_row *rb = rows_of_traces(a, baseline, nb), *rc = rows_of_traces(a, candidate, nc);
    return cg_compare_rows(a, rb, nb, rc, nc, CG_CMP_UNVERIFIED_TRACES);
}

int cg_cohort_row_from_bundle(cg_arena *a, const char *root, const char *cohort_name, size_t index,
                              cg_cohort_row *out, cg_error *err) {
    cg_bundle_receipt receipt;
    if (cg_bundle_verify(root, &receipt, err) != 0)
        return cg_err_context(err, "verify %s bundle %zu at %s", cohort_name, index, root);
    char *trace_path = cg_path_join_arena(a, root, "trace.jsonl");
    int rc = -1;
    cg_trace *t = cg_trace_read_file(trace_path, NULL, err);
    if (!t) {
        cg_err_context(err, "parse verified %s bundle %zu trace at %s", cohort_name, index, trace_path);
        goto done;
    }
    if (strcmp(t->run.run_id, receipt.run_id) != 0) {
        cg_err_set(err, CG_EVERIFY, "verified %s bundle %zu manifest run ID %s does not match trace run ID %s",
                   cohort_name, index, CG_QUOTE(receipt.run_id), CG_QUOTE(t->run.run_id));
        goto done;
    }
    static const char *const consumed[] = {"trace.jsonl"};
    if (cg_bundle_verify_consumed(root, &receipt, consumed, 1, err) != 0) {
        cg_err_context(err, "post-read verify %s bundle %zu trace at %s", cohort_name, index, trace_path);
        goto done;
    }
    cg_health *h = cg_health_analyze(t);
    cg_cohort_receipt r = {receipt.run_id, receipt.manifest_sha256};
    cg_cohort_row_from_trace(a, t, h, &r, out);
    cg_health_free(h);
    rc = 0;
done:
    cg_trace_free(t);
    return rc;
}

int cg_cohort_row_from_trace_file(cg_arena *a, const char *path, const char *cohort_name, size_t index,
                                  cg_cohort_row *out, cg_error *err) {
    (void)index; /* the crate's message names the path, not the position */
    cg_trace *t = cg_trace_read_file(path, NULL, err);
    if (!t) return cg_err_context(err, "parse unverified %s %s", cohort_name, path);
    cg_health *h = cg_health_analyze(t);
    cg_cohort_row_from_trace(a, t, h, NULL, out);
    cg_health_free(h);
    cg_trace_free(t);
    return 0;
}

typedef int (*row_loader)(cg_arena *, const char *, const char *, size_t, cg_cohort_row *, cg_error *);

static cg_jv *compare_paths(cg_arena *a, const char *const *bp, size_t nb, const char *const *cp, size_t nc,
                            row_loader load, cg_comparison_verification kind, cg_error *err) {
    cg_cohort_row *rb = cg_arena_zalloc(a, (nb ? nb : 1) * sizeof *rb);
    cg_cohort_row *rc = cg_arena_zalloc(a, (nc ? nc : 1) * sizeof *rc);
    for (size_t i = 0; i < nb; i++)
        if (load(a, bp[i], "baseline", i + 1, &rb[i], err) != 0) return NULL;
    for (size_t i = 0; i < nc; i++)
        if (load(a, cp[i], "candidate", i + 1, &rc[i], err) != 0) return NULL;
    return cg_compare_rows(a, rb, nb, rc, nc, kind);
}

cg_jv *cg_compare_verified_bundles(cg_arena *a, const char *const *baseline_roots, size_t nb,
                                   const char *const *candidate_roots, size_t nc, cg_error *err) {
    return compare_paths(a, baseline_roots, nb, candidate_roots, nc, cg_cohort_row_from_bundle,
                         CG_CMP_VERIFIED_BUNDLES, err);
}

cg_jv *cg_compare_unverified_trace_files(cg_arena *a, const char *const *baseline_paths, size_t nb,
                                         const char *const *candidate_paths, size_t nc, cg_error *err) {
    return compare_paths(a, baseline_paths, nb, candidate_paths, nc, cg_cohort_row_from_trace_file,
                         CG_CMP_UNVERIFIED_TRACES, err);
}

