/* status.c — campaign-status/1: per planned capture reconciliation and the
 * status document (shared by the filesystem path and index-backed callers). */
#include "campaign/campaign.h"

#include "base/alloc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "base/fs.h"
#include "bundle/verify.h"

const char *cg_capture_state_name(cg_capture_state_kind k) {
    switch (k) {
    case CG_CAPTURE_MISSING: return "missing";
    case CG_CAPTURE_VERIFICATION_FAILED: return "verification_failed";
    case CG_CAPTURE_IDENTITY_MISMATCH: return "identity_mismatch";
    case CG_CAPTURE_FAILED_RUN: return "failed_run";
    case CG_CAPTURE_PUBLISHED: return "published";
    }
    return "missing";
}

void cg_capture_state_from_facts(cg_arena *a, const cg_campaign_manifest *m, const cg_planned_capture *planned,
                                 const char *trace_entrypoint, uint64_t trace_capture_step, cg_outcome outcome,
                                 const char *terminal_reason, const char *receipt_run_id,
                                 const char *manifest_sha256, cg_capture_state *out) {
    memset(out, 0, sizeof *out);
    if (strcmp(trace_entrypoint, m->entrypoint) != 0) {
        out->kind = CG_CAPTURE_IDENTITY_MISMATCH;
        out->message = cg_arena_printf(a, "entrypoint mismatch: manifest declares %s, bundle trace observes %s",
                                       CG_QUOTE(m->entrypoint), CG_QUOTE(trace_entrypoint));
    } else if (trace_capture_step != planned->capture_step) {
        out->kind = CG_CAPTURE_IDENTITY_MISMATCH;
        out->message = cg_arena_printf(a, "capture_step mismatch: manifest plans %llu, bundle trace observes %llu",
                                       (unsigned long long)planned->capture_step,
                                       (unsigned long long)trace_capture_step);
    } else if (outcome == CG_OUTCOME_FAILED) {
        out->kind = CG_CAPTURE_FAILED_RUN;
        out->run_id = cg_arena_strdup(a, receipt_run_id);
        out->reason = terminal_reason ? cg_arena_strdup(a, terminal_reason) : NULL;
    } else {
        out->kind = CG_CAPTURE_PUBLISHED;
        out->run_id = cg_arena_strdup(a, receipt_run_id);
        out->manifest_sha256 = cg_arena_strdup(a, manifest_sha256);
    }
}

void cg_capture_state_reconcile(cg_arena *a, const cg_campaign_manifest *m, const cg_planned_capture *planned,
                                const char *manifest_path, cg_capture_state *out) {
    memset(out, 0, sizeof *out);
    const char *root = cg_campaign_resolve_bundle(a, manifest_path, planned->bundle);
    struct stat st;
    if (stat(root, &st) != 0) { /* Path::exists follows links */
        out->kind = CG_CAPTURE_MISSING;
        return;
    }
    cg_error err;
    cg_err_clear(&err);
    cg_bundle_receipt receipt;
    if (cg_bundle_verify(root, &receipt, &err) != 0) {
        out->kind = CG_CAPTURE_VERIFICATION_FAILED;
        out->message = cg_arena_strdup(a, err.msg);
        return;
    }
    cg_trace *t = cg_trace_read_file(cg_path_join_arena(a, root, "trace.jsonl"), NULL, &err);
    if (!t) {
        out->kind = CG_CAPTURE_VERIFICATION_FAILED;
        out->message = cg_arena_strdup(a, err.msg);
        return;
    }
    cg_capture_state_from_facts(a, m, planned, t->run.entrypoint, t->run.capture_step, t->terminal.outcome,
                                t->terminal.reason, receipt.run_id, receipt.manifest_sha256, out);
    cg_trace_free(t);
}

size_t *cg_campaign_step_order(const cg_campaign_manifest *m) {
    size_t *idx = cg_xalloc(m->n_planned, sizeof *idx);
    for (size_t i = 0; i < m->n_planned; i++) idx[i] = i;
    /* insertion sort keeps this reentrant and stable; manifests are small */
    for (size_t i = 1; i < m->n_planned; i++) {
        size_t v = idx[i], j = i;
        while (j > 0 && m->planned[idx[j - 1]].capture_step > m->planned[v].capture_step) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = v;
    }
    return idx;
}

static cg_jv *state_json(cg_arena *a, const cg_capture_state *s) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "state", cg_jv_str_nocopy(a, cg_capture_state_name(s->kind)));
    switch (s->kind) {
    case CG_CAPTURE_MISSING: break;
    case CG_CAPTURE_VERIFICATION_FAILED:
    case CG_CAPTURE_IDENTITY_MISMATCH:
        cg_jv_obj_put(a, o, "message", cg_jv_str(a, s->message ? s->message : ""));
        break;
    case CG_CAPTURE_FAILED_RUN:
        cg_jv_obj_put(a, o, "run_id", cg_jv_str(a, s->run_id ? s->run_id : ""));
        cg_jv_obj_put(a, o, "reason", s->reason ? cg_jv_str(a, s->reason) : cg_jv_null(a));
        break;
    case CG_CAPTURE_PUBLISHED:
        cg_jv_obj_put(a, o, "run_id", cg_jv_str(a, s->run_id ? s->run_id : ""));
        cg_jv_obj_put(a, o, "manifest_sha256", cg_jv_str(a, s->manifest_sha256 ? s->manifest_sha256 : ""));
        break;
    }
    return o;
}

cg_jv *cg_campaign_status_from_states(cg_arena *a, const cg_campaign_manifest *m, const cg_capture_state *states) {
    uint64_t published = 0, missing = 0;
    for (size_t i = 0; i < m->n_planned; i++) {
        if (states[i].kind == CG_CAPTURE_PUBLISHED) published++;
        if (states[i].kind == CG_CAPTURE_MISSING) missing++;
    }
    cg_jv *o = cg_jv_obj(a), *caps = cg_jv_arr(a);
    cg_jv_obj_put(a, o, "schema", cg_jv_str_nocopy(a, CG_CAMPAIGN_STATUS_SCHEMA));
    cg_jv_obj_put(a, o, "campaign_id", cg_jv_str(a, m->campaign_id));
    cg_jv_obj_put(a, o, "entrypoint", cg_jv_str(a, m->entrypoint));
    cg_jv_obj_put(a, o, "planned", cg_jv_u64(a, m->n_planned));
    cg_jv_obj_put(a, o, "published", cg_jv_u64(a, published));
    cg_jv_obj_put(a, o, "missing", cg_jv_u64(a, missing));
    cg_jv_obj_put(a, o, "failed", cg_jv_u64(a, m->n_planned - published - missing));
    size_t *order = cg_campaign_step_order(m);
    for (size_t k = 0; k < m->n_planned; k++) {
        size_t i = order[k];
        cg_jv *c = cg_jv_obj(a);
        cg_jv_obj_put(a, c, "capture_step", cg_jv_u64(a, m->planned[i].capture_step));
        cg_jv_obj_put(a, c, "bundle", cg_jv_str(a, m->planned[i].bundle));
        cg_jv_obj_put(a, c, "state", state_json(a, &states[i]));
        cg_jv_arr_push(a, caps, c);
    }
    cg_free(order);
    cg_jv_obj_put(a, o, "captures", caps);
    return o;
}

cg_jv *cg_campaign_status(cg_arena *a, const char *manifest_path, cg_capture_state **states_out,
                          cg_campaign_manifest *manifest_out, cg_error *err) {
    cg_campaign_manifest local, *m = manifest_out ? manifest_out : &local;
    if (cg_campaign_manifest_load(a, manifest_path, m, err) != 0) return NULL;
    cg_capture_state *states = cg_arena_zalloc(a, (m->n_planned ? m->n_planned : 1) * sizeof *states);
    for (size_t i = 0; i < m->n_planned; i++) cg_capture_state_reconcile(a, m, &m->planned[i], manifest_path, &states[i]);
    if (states_out) *states_out = states;
    return cg_campaign_status_from_states(a, m, states);
}

int cg_campaign_require_published(const cg_campaign_manifest *m, const cg_capture_state *states, cg_error *err) {
    size_t *order = cg_campaign_step_order(m);
    cg_buf b = CG_BUF_INIT;
    size_t bad = 0;
    for (size_t k = 0; k < m->n_planned; k++) {
        size_t i = order[k];
        if (states[i].kind == CG_CAPTURE_PUBLISHED) continue;
        cg_buf_printf(&b, "%sstep %llu (%s): %s", bad ? ", " : "", (unsigned long long)m->planned[i].capture_step,
                      m->planned[i].bundle, cg_capture_state_name(states[i].kind));
        bad++;
    }
    cg_free(order);
    int rc = 0;
    if (bad)
        rc = cg_err_setr(err, CG_R_CAMPAIGN_CONFLICT, CG_ESTATE,
                         "series requires every planned capture to be published; not published: %s; run "
                         "`campaign-status` for the full reconciliation",
                         b.data);
    cg_buf_free(&b);
    return rc;
}
