/* capability.c — assessment of the 11 capability states (spec §9).
 * Where the spec gives no text for a source or reason, the wording here is ours
 * (listed in docs/compatibility.md); levels follow the spec's rules exactly. */
#include "analysis/capability.h"

#include <stdlib.h>
#include <string.h>

#include "base/strmap.h"

static const char *const level_names[] = {"unavailable", "partial", "complete", "invalid"};
static const char *const kind_names[] = {"structural_trace", "outer_wall_time", "nested_host_time",
                                         "nested_device_time", "operations", "tensors", "gradients",
                                         "logical_memory", "physical_memory", "gpu_correlation",
                                         "provenance_binding"};
static const char *const field_names[] = {"structural_trace", "outer_wall_time", "nested_host_time",
                                          "nested_device_time", "operation_coverage", "tensor_coverage",
                                          "gradient_coverage", "logical_memory_coverage",
                                          "physical_memory_coverage", "gpu_correlation", "provenance_binding"};

#define DEFAULT_REASON "capability was not recorded by this evidence schema"
#define FAILED_SUFFIX "; failed capture means observations are diagnostic only"

const char *cg_cap_level_name(cg_cap_level l) { return level_names[l]; }
const char *cg_cap_kind_name(cg_cap_kind k) { return kind_names[k]; }
const char *cg_cap_field_name(cg_cap_kind k) { return field_names[k]; }

int cg_cap_level_parse(const char *s) {
    for (int i = 0; i < 4; i++)
        if (s && !strcmp(s, level_names[i])) return i;
    return -1;
}

static int rank(cg_cap_level l) {
    switch (l) {
    case CG_CAP_INVALID: return 0;
    case CG_CAP_UNAVAILABLE: return 1;
    case CG_CAP_PARTIAL: return 2;
    case CG_CAP_COMPLETE: return 3;
    }
    return 0;
}

cg_cap_level cg_cap_weakest(cg_cap_level a, cg_cap_level b) { return rank(a) <= rank(b) ? a : b; }

static void set(cg_cap_state *s, cg_cap_level l, const char *source, const char *reason) {
    s->level = l;
    s->source = source;
    s->reason = reason;
}

static const char *plural(uint64_t n, const char *one, const char *many) { return n == 1 ? one : many; }

/* CoverageLevel declared vs. observation count (observed_coverage). */
static void observed(cg_arena *a, cg_cap_state *s, cg_coverage declared, uint64_t count, const char *what,
                     const char *source) {
    const char *decl = cg_coverage_name(declared);
    const char *events = plural(count, "event", "events");
    switch (declared) {
    case CG_COV_COMPLETE:
        if (count == 0)
            set(s, CG_CAP_INVALID, source,
                cg_arena_printf(a, "%s coverage is declared complete but no %s events were observed", what, what));
        else
            set(s, CG_CAP_COMPLETE, source,
                cg_arena_printf(a, "%s coverage is declared complete; %llu %s observed", what,
                                (unsigned long long)count, events));
        break;
    case CG_COV_PARTIAL:
    case CG_COV_NONE:
        if (count == 0)
            set(s, CG_CAP_UNAVAILABLE, source,
                cg_arena_printf(a, "no %s events were observed (declared coverage: %s)", what, decl));
        else
            set(s, CG_CAP_PARTIAL, source,
                cg_arena_printf(a, "%s coverage is declared %s: %llu %s observed, not claimed complete", what, decl,
                                (unsigned long long)count, events));
        break;
    }
}

static bool gradient_related(const char *code) {
    return !strncmp(code, "gradient_", 9) || !strcmp(code, "empty_gradient_event_id") ||
           !strcmp(code, "duplicate_gradient_event_id") || !strcmp(code, "empty_gradient_parameter_key");
}

static void assess_gradients(cg_arena *a, const cg_trace *t, const cg_health *h, cg_cap_state *s) {
    const cg_capture_contract *c = &t->run.contract;
    const char *src = "capture contract gradient manifest";
    if (c->gradients != CG_COV_COMPLETE) {
        observed(a, s, c->gradients, t->n_gradients, "gradient", "gradient events");
        return;
    }
    if (!c->gradient_contract) {
        set(s, CG_CAP_INVALID, src, "complete gradient coverage requires an exact gradient contract");
        return;
    }
    cg_error err;
    cg_err_clear(&err);
    if (cg_gradient_contract_validate(c->gradient_contract, &err) != 0) {
        set(s, CG_CAP_INVALID, src, cg_arena_printf(a, "gradient contract is invalid: %s", err.msg));
        return;
    }
    bool warn = false;
    for (size_t i = 0; i < h->n_issues; i++) {
        if (!gradient_related(h->issues[i].code)) continue;
        if (h->issues[i].severity == CG_SEV_ERROR) {
            set(s, CG_CAP_INVALID, src,
                cg_arena_printf(a, "gradient evidence violates the contract: %s", h->issues[i].message));
            return;
        }
        warn = true;
    }
    const cg_gradient_contract *g = c->gradient_contract;
    if (warn) {
        set(s, CG_CAP_PARTIAL, src,
            cg_arena_printf(a, "gradient contract %s has warnings; see gaps", g->manifest_sha256));
        return;
    }
    set(s, CG_CAP_COMPLETE, src,
        cg_arena_printf(a, "%zu manifest entries and %zu family expectations validated against %s", g->n_expected,
                        g->n_families, g->manifest_sha256));
}

/* Required labels each name exactly one span, and none is declared twice. */
static const char *label_problem(cg_arena *a, const cg_trace *t) {
    const cg_strlist *req = &t->run.contract.required_semantic_labels;
    if (!req->n) return NULL;
    cg_strmap names;
    cg_strmap_init(&names);
    for (size_t i = 0; i < t->n_spans; i++) {
        size_t *v;
        if (!cg_strmap_put(&names, t->spans[i].name, 1, &v)) (*v)++;
    }
    const char *problem = NULL;
    for (size_t i = 0; i < req->n && !problem; i++) {
        for (size_t j = 0; j < i; j++)
            if (!strcmp(req->items[i], req->items[j])) {
                problem = cg_arena_printf(a, "required semantic label %s is declared more than once", req->items[i]);
                break;
            }
        if (problem) break;
        size_t *v = cg_strmap_get(&names, req->items[i]);
        size_t count = v ? *v : 0;
        if (count != 1)
            problem = cg_arena_printf(a, "required semantic label %s names %zu spans; exactly one is required",
                                      req->items[i], count);
    }
    cg_strmap_free(&names);
    return problem;
}

void cg_capabilities_assess(cg_arena *a, const cg_trace *t, const cg_health *h, cg_coverage device_coverage,
                            const cg_nsight_evidence *gpu, cg_capabilities *out) {
    cg_cap_state *s = out->s;
    bool valid = h->structurally_valid, complete = h->capture_complete;
    bool failed = t->terminal.outcome == CG_OUTCOME_FAILED;

    /* structural_trace */
    const char *schema_src = cg_arena_printf(a, "%s validation", t->schema);
    if (valid) {
        set(&s[CG_CAPK_STRUCTURAL_TRACE], CG_CAP_COMPLETE, schema_src, "span and event invariants passed");
    } else {
        size_t errors = 0;
        for (size_t i = 0; i < h->n_issues; i++) errors += h->issues[i].severity == CG_SEV_ERROR;
        set(&s[CG_CAPK_STRUCTURAL_TRACE], CG_CAP_INVALID, schema_src,
            cg_arena_printf(a, "%zu structural %s; see health issues", errors, errors == 1 ? "error" : "errors"));
    }

    /* outer_wall_time */
    size_t measured_closed = 0;
    for (size_t i = 0; i < t->n_spans; i++) measured_closed += t->spans[i].measured && t->spans[i].closed;
    cg_cap_state *ow = &s[CG_CAPK_OUTER_WALL_TIME];
    if (!valid) set(ow, CG_CAP_INVALID, "measured span", "trace is structurally invalid");
    else if (failed) set(ow, CG_CAP_UNAVAILABLE, "measured span", "capture failed before the measured region completed");
    else if (measured_closed == 1)
        set(ow, CG_CAP_COMPLETE, "measured span", "exactly one closed measured region on the host clock");
    else
        set(ow, CG_CAP_INVALID, "measured span",
            cg_arena_printf(a, "expected exactly one closed measured region, found %zu", measured_closed));

    /* nested_host_time */
    cg_cap_state *nh = &s[CG_CAPK_NESTED_HOST_TIME];
    if (!valid) set(nh, CG_CAP_INVALID, "host span timing", "trace is structurally invalid");
    else if (complete)
        set(nh, CG_CAP_COMPLETE, "host span timing",
            "nested host spans of a complete capture, measured on the session's monotonic host clock");
    else set(nh, CG_CAP_UNAVAILABLE, "host span timing", "capture is not complete");

    /* declared vs observed */
    const cg_capture_contract *c = &t->run.contract;
    observed(a, &s[CG_CAPK_NESTED_DEVICE_TIME], device_coverage, t->n_device_intervals, "device interval",
             "device_interval events");
    observed(a, &s[CG_CAPK_OPERATIONS], c->operations, t->n_ops, "operation", "op events");
    observed(a, &s[CG_CAPK_TENSORS], c->tensors, t->n_tensors, "tensor", "tensor events");
    assess_gradients(a, t, h, &s[CG_CAPK_GRADIENTS]);
    observed(a, &s[CG_CAPK_LOGICAL_MEMORY], c->logical_memory, t->n_memory, "logical memory", "memory events");
    observed(a, &s[CG_CAPK_PHYSICAL_MEMORY], c->physical_memory, t->n_device_memory, "physical memory",
             "device_memory samples");

    /* provenance_binding */
    cg_cap_state *pb = &s[CG_CAPK_PROVENANCE_BINDING];
    cg_nsight_status gst = gpu->status;
    const char *gsrc = "Nsight Systems";
    if (gst == CG_NSIGHT_UNAVAILABLE)
        set(pb, CG_CAP_UNAVAILABLE, gsrc, gpu->reason ? gpu->reason : "Nsight evidence is unavailable");
    else if (gst == CG_NSIGHT_FAILED)
        set(pb, CG_CAP_INVALID, gsrc, gpu->reason ? gpu->reason : "Nsight evidence failed to load");
    else {
        const char *why = gpu->provenance.reason;
        switch (gpu->provenance.binding) {
        case CG_NSIGHT_BOUND:
            set(pb, CG_CAP_COMPLETE, "capture-manifest.json",
                why ? why : "capture manifest hashes and run identity are bound to this trace");
            break;
        case CG_NSIGHT_PARTIAL:
            set(pb, CG_CAP_PARTIAL, "capture-manifest.json", why ? why : "capture manifest is absent or incomplete");
            break;
        case CG_NSIGHT_MISMATCH:
            set(pb, CG_CAP_INVALID, "capture-manifest.json", why ? why : "capture manifest does not match");
            break;
        }
    }

    /* gpu_correlation */
    cg_cap_state *gc = &s[CG_CAPK_GPU_CORRELATION];
    const char *lp = label_problem(a, t);
    if (lp) set(gc, CG_CAP_INVALID, "required semantic labels", lp);
    else if (gst == CG_NSIGHT_AVAILABLE && gpu->correlation.complete)
        set(gc, CG_CAP_COMPLETE, "nvtx_projected_range",
            gpu->correlation.reason ? gpu->correlation.reason : "every GPU-expected label correlated");
    else if (gst == CG_NSIGHT_AVAILABLE)
        set(gc, CG_CAP_PARTIAL, "nvtx_projected_range",
            gpu->correlation.reason ? gpu->correlation.reason : "GPU correlation is incomplete");
    else if (gst == CG_NSIGHT_UNAVAILABLE)
        set(gc, CG_CAP_UNAVAILABLE, gsrc, gpu->reason ? gpu->reason : "Nsight evidence is unavailable");
    else set(gc, CG_CAP_INVALID, gsrc, gpu->reason ? gpu->reason : "Nsight evidence failed to load");

    /* post-rules */
    static const cg_cap_kind demote_invalid[] = {CG_CAPK_NESTED_DEVICE_TIME, CG_CAPK_OPERATIONS, CG_CAPK_TENSORS,
                                                 CG_CAPK_GRADIENTS, CG_CAPK_LOGICAL_MEMORY, CG_CAPK_GPU_CORRELATION};
    if (!valid) {
        for (size_t i = 0; i < sizeof demote_invalid / sizeof demote_invalid[0]; i++) {
            cg_cap_state *x = &s[demote_invalid[i]];
            if (cg_cap_available(x->level)) {
                x->level = CG_CAP_INVALID;
                x->reason = cg_arena_printf(a, "%s; trace is structurally invalid", x->reason);
            }
        }
    }
    if (failed) {
        static const cg_cap_kind lower[] = {CG_CAPK_NESTED_DEVICE_TIME, CG_CAPK_OPERATIONS, CG_CAPK_TENSORS,
                                            CG_CAPK_GRADIENTS, CG_CAPK_LOGICAL_MEMORY, CG_CAPK_GPU_CORRELATION,
                                            CG_CAPK_PHYSICAL_MEMORY, CG_CAPK_PROVENANCE_BINDING};
        for (size_t i = 0; i < sizeof lower / sizeof lower[0]; i++) {
            cg_cap_state *x = &s[lower[i]];
            if (x->level == CG_CAP_COMPLETE) {
                x->level = CG_CAP_PARTIAL;
                x->reason = cg_arena_printf(a, "%s" FAILED_SUFFIX, x->reason);
            }
        }
    }
}

cg_jv *cg_cap_state_to_json(cg_arena *a, const cg_cap_state *s) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "level", cg_jv_str_nocopy(a, cg_cap_level_name(s->level)));
    cg_jv_obj_put(a, o, "source", cg_jv_str(a, s->source));
    cg_jv_obj_put(a, o, "reason", cg_jv_str(a, s->reason));
    return o;
}

cg_jv *cg_capabilities_to_json(cg_arena *a, const cg_capabilities *c) {
    cg_jv *o = cg_jv_obj(a);
    for (int k = 0; k < CG_CAPK_COUNT; k++) cg_jv_obj_put(a, o, field_names[k], cg_cap_state_to_json(a, &c->s[k]));
    return o;
}

int cg_capabilities_from_json(cg_arena *a, const cg_jv *v, cg_capabilities *out, cg_error *err) {
    if (!v || v->type != CG_JOBJ) return cg_err_set(err, CG_EPARSE, "capabilities must be an object");
    for (int k = 0; k < CG_CAPK_COUNT; k++) {
        cg_cap_state *s = &out->s[k];
        set(s, CG_CAP_UNAVAILABLE, "none", DEFAULT_REASON);
        cg_jv *e = cg_jv_get(v, field_names[k]);
        if (!e) continue;
        int l = cg_cap_level_parse(cg_jv_as_str(cg_jv_get(e, "level")));
        const char *src = cg_jv_as_str(cg_jv_get(e, "source"));
        const char *why = cg_jv_as_str(cg_jv_get(e, "reason"));
        if (l < 0 || !src || !why)
            return cg_err_set(err, CG_EPARSE, "capability %s needs level, source and reason", field_names[k]);
        set(s, (cg_cap_level)l, cg_arena_strdup(a, src), cg_arena_strdup(a, why));
    }
    return 0;
}
