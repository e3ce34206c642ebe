/* capability.c — assessment of the 11 capability states, as the crate's
 * evidence.rs (assess_capabilities, observed_coverage, assess_gradient_coverage)
 * words and levels them at commit 4abcd63f; every source and reason is part of
 * evidence.json and compared value for value by semantic verification. */
#include "analysis/capability.h"

#include <stdlib.h>
#include <string.h>

#include "base/hmap.h"

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

/* CapabilityState::unavailable: the source of every unavailable state is "none". */
static void unavailable(cg_cap_state *s, const char *reason) { set(s, CG_CAP_UNAVAILABLE, "none", reason); }

/* observed_coverage: declared coverage against the number of observations. */
static void observed(cg_arena *a, cg_cap_state *s, cg_coverage declared, size_t count, const char *source,
                     const char *label) {
    switch (declared) {
    case CG_COV_COMPLETE:
        if (count == 0)
            set(s, CG_CAP_INVALID, source,
                cg_arena_printf(a, "producer declared complete %s, but emitted no observations", label));
        else set(s, CG_CAP_COMPLETE, source, cg_arena_printf(a, "producer declared complete %s", label));
        break;
    case CG_COV_PARTIAL:
        if (count == 0)
            unavailable(s, cg_arena_printf(a, "producer declared partial %s, but this run emitted no observations",
                                           label));
        else set(s, CG_CAP_PARTIAL, source, cg_arena_printf(a, "producer declared partial %s", label));
        break;
    case CG_COV_NONE:
        if (count == 0) unavailable(s, cg_arena_printf(a, "producer did not declare or emit %s", label));
        else
            set(s, CG_CAP_PARTIAL, source,
                cg_arena_printf(a, "observations exist, but producer did not declare complete %s", label));
        break;
    }
}

/* Health codes that speak about gradient evidence. */
static bool gradient_related(const char *code) {
    return !strncmp(code, "gradient_", 9) || !strcmp(code, "empty_gradient_event_id") ||
           !strcmp(code, "duplicate_gradient_event_id");
}

#define GRADIENT_SOURCE "exact gradient contract"

static void assess_gradients(cg_arena *a, const cg_trace *t, const cg_health *h, cg_cap_state *s) {
    const cg_capture_contract *c = &t->run.contract;
    if (c->gradients != CG_COV_COMPLETE) {
        observed(a, s, c->gradients, t->n_gradients, "trace gradient events", "gradient coverage");
        return;
    }
    const cg_gradient_contract *g = c->gradient_contract;
    if (!g) {
        set(s, CG_CAP_INVALID, GRADIENT_SOURCE,
            "complete gradient coverage requires a digest-bound parameter manifest");
        return;
    }
    cg_error err;
    cg_err_clear(&err);
    if (cg_gradient_contract_validate(g, &err) != 0) {
        set(s, CG_CAP_INVALID, GRADIENT_SOURCE, cg_arena_printf(a, "gradient contract validation failed: %s", err.msg));
        return;
    }
    bool any = false;
    for (size_t i = 0; i < h->n_issues; i++) {
        if (!gradient_related(h->issues[i].code)) continue;
        if (h->issues[i].severity == CG_SEV_ERROR) {
            set(s, CG_CAP_INVALID, GRADIENT_SOURCE,
                "gradient events did not satisfy the exact manifest and family contract");
            return;
        }
        any = true;
    }
    if (any) {
        set(s, CG_CAP_PARTIAL, GRADIENT_SOURCE,
            "capture ended before every manifest and family expectation could be validated");
        return;
    }
    set(s, CG_CAP_COMPLETE, GRADIENT_SOURCE,
        cg_arena_printf(a, "%zu manifest entries and %zu family expectations validated against %s", g->n_expected,
                        g->n_families, g->manifest_sha256));
}

/* Every required label is declared once and names exactly one span. */
static bool required_labels_present(const cg_trace *t) {
    const cg_strlist *req = &t->run.contract.required_semantic_labels;
    if (!req->n) return true;
    cg_hstr names;
    cg_hstr_init(&names, t->n_spans);
    for (size_t i = 0; i < t->n_spans; i++) {
        size_t *v;
        if (!cg_hstr_put(&names, t->spans[i].name, 1, &v)) (*v)++;
    }
    bool ok = true;
    for (size_t i = 0; i < req->n && ok; i++) {
        for (size_t j = 0; j < i && ok; j++) ok = strcmp(req->items[i], req->items[j]) != 0;
        size_t *v = cg_hstr_get(&names, req->items[i]);
        if (ok) ok = v && *v == 1;
    }
    cg_hstr_free(&names);
    return ok;
}

static void assess_provenance(const cg_nsight_evidence *gpu, cg_cap_state *s) {
    if (gpu->status == CG_NSIGHT_UNAVAILABLE) unavailable(s, "no Nsight artifacts were supplied");
    else if (gpu->status == CG_NSIGHT_FAILED) set(s, CG_CAP_INVALID, "Nsight artifact manifest", "artifact loading failed");
    else if (gpu->provenance.binding == CG_NSIGHT_BOUND)
        set(s, CG_CAP_COMPLETE, "capture-manifest.json", "manifest IDs and artifact hashes match this trace");
    else if (gpu->provenance.binding == CG_NSIGHT_PARTIAL)
        set(s, CG_CAP_PARTIAL, "Nsight artifact hashes", "artifacts are hashed, but trace binding is incomplete");
    else set(s, CG_CAP_INVALID, "capture-manifest.json", "manifest IDs or artifact hashes do not match");
}

static void assess_gpu_correlation(const cg_trace *t, const cg_nsight_evidence *gpu, cg_cap_state *s) {
    const char *why = gpu->reason;
    if (!required_labels_present(t))
        set(s, CG_CAP_INVALID, "trace semantic labels",
            "one or more labels required for GPU correlation are absent from the application trace");
    else if (gpu->status == CG_NSIGHT_AVAILABLE && gpu->correlation.complete)
        set(s, CG_CAP_COMPLETE, "Nsight NVTX projection", "application and projected semantic labels matched");
    else if (gpu->status == CG_NSIGHT_AVAILABLE)
        set(s, CG_CAP_PARTIAL, "Nsight NVTX projection",
            gpu->correlation.reason ? gpu->correlation.reason : "correlation is incomplete");
    else if (gpu->status == CG_NSIGHT_UNAVAILABLE) unavailable(s, why ? why : "Nsight evidence was not supplied");
    else set(s, CG_CAP_INVALID, "Nsight normalization", why ? why : "Nsight normalization failed");
}

static void assess_host_time(const cg_health *h, const cg_trace *t, const char *trace_src, cg_cap_state *s) {
    bool valid = h->structurally_valid, complete = h->capture_complete;
    cg_cap_state *st = &s[CG_CAPK_STRUCTURAL_TRACE], *ow = &s[CG_CAPK_OUTER_WALL_TIME],
                 *nh = &s[CG_CAPK_NESTED_HOST_TIME];
    if (valid) set(st, CG_CAP_COMPLETE, trace_src, "span and event invariants passed");
    else set(st, CG_CAP_INVALID, trace_src, "one or more structural invariants failed");

    size_t measured = 0;
    for (size_t i = 0; i < t->n_spans; i++) measured += t->spans[i].measured && t->spans[i].closed;
    if (!valid)
        set(ow, CG_CAP_INVALID, trace_src, "outer wall time is not qualified for a structurally invalid trace");
    else if (!complete) unavailable(ow, "capture did not complete");
    else if (measured == 1) set(ow, CG_CAP_COMPLETE, "measured span", "one closed measured region was observed");
    else set(ow, CG_CAP_INVALID, "measured span", "exactly one closed measured region is required");

    if (!valid) set(nh, CG_CAP_INVALID, trace_src, "nested host attribution requires a structurally valid trace");
    else if (complete)
        set(nh, CG_CAP_COMPLETE, "span wall intervals",
            "measured-subtree and concurrent-overlap host intervals are structurally valid");
    else unavailable(nh, "measured-scope host attribution requires a complete, valid capture");
}

void cg_capabilities_assess(cg_arena *a, const cg_trace *t, const cg_health *h, cg_coverage device_coverage,
                            const cg_nsight_evidence *gpu, cg_capabilities *out) {
    cg_cap_state *s = out->s;
    /* the source names the schema this reader validates against, not the one read */
    const char *trace_src = CG_TRACE_SCHEMA " validation";
    assess_host_time(h, t, trace_src, s);
    const cg_capture_contract *c = &t->run.contract;
    observed(a, &s[CG_CAPK_NESTED_DEVICE_TIME], device_coverage, t->n_device_intervals, "device intervals",
             "device timing");
    observed(a, &s[CG_CAPK_OPERATIONS], c->operations, t->n_ops, "trace op events", "operation coverage");
    observed(a, &s[CG_CAPK_TENSORS], c->tensors, t->n_tensors, "trace tensor events", "tensor coverage");
    assess_gradients(a, t, h, &s[CG_CAPK_GRADIENTS]);
    observed(a, &s[CG_CAPK_LOGICAL_MEMORY], c->logical_memory, t->n_memory, "storage lifetime events",
             "logical memory coverage");
    observed(a, &s[CG_CAPK_PHYSICAL_MEMORY], c->physical_memory, t->n_device_memory, "device memory samples",
             "physical memory coverage");
    assess_provenance(gpu, &s[CG_CAPK_PROVENANCE_BINDING]);
    assess_gpu_correlation(t, gpu, &s[CG_CAPK_GPU_CORRELATION]);

    if (!h->structurally_valid) {
        static const cg_cap_kind linked[] = {CG_CAPK_NESTED_DEVICE_TIME, CG_CAPK_OPERATIONS, CG_CAPK_TENSORS,
                                             CG_CAPK_GRADIENTS, CG_CAPK_LOGICAL_MEMORY, CG_CAPK_GPU_CORRELATION};
        for (size_t i = 0; i < sizeof linked / sizeof linked[0]; i++)
            if (cg_cap_available(s[linked[i]].level))
                set(&s[linked[i]], CG_CAP_INVALID, trace_src,
                    "structurally invalid trace cannot qualify trace-linked evidence");
    }
    if (!h->capture_complete) {
        static const cg_cap_kind lower[] = {CG_CAPK_NESTED_DEVICE_TIME, CG_CAPK_OPERATIONS, CG_CAPK_TENSORS,
                                            CG_CAPK_GRADIENTS, CG_CAPK_LOGICAL_MEMORY, CG_CAPK_PHYSICAL_MEMORY,
                                            CG_CAPK_GPU_CORRELATION, CG_CAPK_PROVENANCE_BINDING};
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
