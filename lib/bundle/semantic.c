/* semantic.c — run-ID binding and evidence rederivation of a verified bundle. */
#include "bundle/semantic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/evidence.h"
#include "base/fs.h"
#include "bundle/manifest.h"
#include "render/artifacts.h"
#include "trace/trace.h"

#define EVIDENCE_MAX ((size_t)1 << 30)

const char *cg_semantic_result_name(cg_semantic_result r) {
    return r == CG_SEMANTIC_NOT_REDERIVABLE ? "not_rederivable" : "rederived_match";
}

static int semfail(cg_error *err, cg_reason reason, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int semfail(cg_error *err, cg_reason reason, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    cg_err_vset(err, CG_EVERIFY, fmt, ap);
    va_end(ap);
    return cg_err_reason(err, reason);
}

/* First top-level key whose values differ (or that only one side has). */
static const char *first_difference(const cg_jv *a, const cg_jv *b) {
    if (a->type != CG_JOBJ || b->type != CG_JOBJ) return "(root)";
    for (size_t i = 0; i < a->u.obj.n; i++) {
        const cg_jv *o = cg_jv_get(b, a->u.obj.m[i].key);
        if (!o || !cg_jv_equal(a->u.obj.m[i].val, o)) return a->u.obj.m[i].key;
    }
    for (size_t i = 0; i < b->u.obj.n; i++)
        if (!cg_jv_get(a, b->u.obj.m[i].key)) return b->u.obj.m[i].key;
    return "(root)";
}

int cg_bundle_verify_semantic(const char *root, const cg_bundle_receipt *receipt, bool allow_not_rederivable,
                              cg_semantic_result *result, cg_error *err) {
    return cg_bundle_verify_semantic_trace(root, receipt, allow_not_rederivable, result, NULL, err);
}

int cg_bundle_verify_semantic_trace(const char *root, const cg_bundle_receipt *receipt, bool allow_not_rederivable,
                                    cg_semantic_result *result, cg_trace **trace_out, cg_error *err) {
    if (trace_out) *trace_out = NULL;
    int rc = -1;
    cg_arena a;
    cg_arena_init(&a, 0);
    char *tp = cg_path_join(root, "trace.jsonl"), *ep = cg_path_join(root, "evidence.json"),
         *np = cg_path_join(root, "nsight"), *mp = cg_path_join(root, CG_BUNDLE_MANIFEST_NAME);
    char *edata = NULL, *mdata = NULL;
    const char **consumed = NULL;
    cg_trace *t = NULL;
    if (!tp || !ep || !np || !mp) {
        cg_err_set(err, CG_ENOMEM, "out of memory");
        goto out;
    }
    cg_error terr;
    cg_err_clear(&terr);
    t = cg_trace_read_file(tp, NULL, &terr);
    if (!t) {
        semfail(err, CG_R_TRACE_INVALID, "read bundle trace %s: %s", tp, terr.msg);
        goto out;
    }
    const char *trace_run = t->run.run_id ? t->run.run_id : "";
    if (strcmp(receipt->run_id, trace_run) != 0) {
        semfail(err, CG_R_RUN_ID_MISMATCH, "bundle manifest run ID %s does not match its trace run ID %s",
                receipt->run_id, trace_run);
        goto out;
    }
    cg_semantic_result res = CG_SEMANTIC_REDERIVED_MATCH;
    {
        /* fast path: stream the rebuilt packet and compare bytes (no DOM); any
         * other outcome falls through to the value comparison with its messages */
        bool match = false;
        cg_error merr;
        cg_err_clear(&merr);
        if (cg_evidence_semantic_match_trace(t, cg_is_dir(np) ? np : NULL, ep, &match, &merr) == 0 && match)
            goto post_read;
    }
    size_t elen = 0;
    edata = cg_read_file(ep, EVIDENCE_MAX, &elen, &terr);
    cg_jv *stored = edata ? cg_json_parse(&a, edata, elen, NULL, &terr) : NULL;
    if (!stored) {
        semfail(err, CG_R_SEMANTIC_MISMATCH, "semantic verification failed: read evidence.json: %s", terr.msg);
        goto out;
    }
    const char *schema = cg_jv_as_str(cg_jv_get(stored, "schema"));
    if (!schema || strcmp(schema, CG_EVIDENCE_SCHEMA) != 0) {
        if (!allow_not_rederivable) {
            semfail(err, CG_R_SEMANTIC_MISMATCH,
                    "semantic verification failed: evidence schema %s cannot be rederived (expected %s)",
                    schema ? schema : "(missing)", CG_EVIDENCE_SCHEMA);
            goto out;
        }
        res = CG_SEMANTIC_NOT_REDERIVABLE;
    } else {
        bool have_nsight = cg_is_dir(np);
        cg_jv *rebuilt = cg_evidence_build_json(&a, tp, have_nsight ? np : NULL, &terr);
        if (!rebuilt) {
            semfail(err, CG_R_SEMANTIC_MISMATCH,
                    "semantic verification failed: evidence cannot be rebuilt from trace.jsonl: %s", terr.msg);
            goto out;
        }
        if (!cg_jv_equal(stored, rebuilt)) {
            semfail(err, CG_R_SEMANTIC_MISMATCH,
                    "semantic verification failed: evidence.json differs from the evidence rederived from the "
                    "bundle trace (first difference at `%s`)",
                    first_difference(stored, rebuilt));
            goto out;
        }
    }
post_read:; /* a label cannot precede a declaration in C11 (clang refuses it) */
    /* post-read re-check of everything read: trace, evidence and nsight inputs */
    size_t mlen = 0;
    mdata = cg_read_file(mp, CG_BUNDLE_MANIFEST_MAX, &mlen, &terr);
    cg_bundle_manifest m;
    if (!mdata || cg_bundle_manifest_parse(&a, mdata, mlen, &m, &terr) != 0) {
        semfail(err, CG_R_DIGEST_MISMATCH, "bundle manifest changed after initial verification");
        goto out;
    }
    consumed = malloc((m.n_files + 2) * sizeof *consumed);
    if (!consumed) {
        cg_err_set(err, CG_ENOMEM, "out of memory");
        goto out;
    }
    size_t nc = 0;
    consumed[nc++] = "trace.jsonl";
    consumed[nc++] = "evidence.json";
    if (res == CG_SEMANTIC_REDERIVED_MATCH)
        for (size_t i = 0; i < m.n_files; i++)
            if (!strncmp(m.files[i].path, "nsight/", 7)) consumed[nc++] = m.files[i].path;
    if (cg_bundle_verify_consumed(root, receipt, consumed, nc, err) != 0) goto out; /* digest_mismatch */
    if (result) *result = res;
    if (trace_out) {
        *trace_out = t;
        t = NULL;
    }
    rc = 0;
out:
    free(consumed);
    cg_trace_free(t);
    free(edata);
    free(mdata);
    free(tp);
    free(ep);
    free(np);
    free(mp);
    cg_arena_free(&a);
    return rc;
}
