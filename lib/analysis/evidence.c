/* evidence.c — EvidencePacket::from_document as the crate builds it
 * (src/evidence.rs at 4abcd63f): findings, facts and gaps. */
#include "analysis/evidence.h"
#include "base/alloc.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/graph.h"

static cg_jv *fact(cg_arena *a, const char *code, const char *label, const char *kind, cg_jv *value,
                   const char *source, cg_cap_kind cap) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "code", cg_jv_str_nocopy(a, code));
    cg_jv_obj_put(a, o, "label", cg_jv_str_nocopy(a, label));
    cg_jv *v = cg_jv_obj(a);
    cg_jv_obj_put(a, v, "kind", cg_jv_str_nocopy(a, kind));
    cg_jv_obj_put(a, v, "value", value);
    cg_jv_obj_put(a, o, "value", v);
    cg_jv_obj_put(a, o, "source", cg_jv_str(a, source));
    cg_jv_obj_put(a, o, "capability", cg_jv_str_nocopy(a, cg_cap_kind_name(cap)));
    return o;
}

static cg_jv *finding(cg_arena *a, const char *code, const char *summary, const char *source,
                      const cg_cap_kind *requires, size_t n_requires, cg_cap_level qualification) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "code", cg_jv_str_nocopy(a, code));
    cg_jv_obj_put(a, o, "summary", cg_jv_str(a, summary));
    cg_jv_obj_put(a, o, "source", cg_jv_str_nocopy(a, source));
    cg_jv *req = cg_jv_arr(a);
    for (size_t i = 0; i < n_requires; i++) cg_jv_arr_push(a, req, cg_jv_str_nocopy(a, cg_cap_kind_name(requires[i])));
    cg_jv_obj_put(a, o, "requires", req);
    cg_jv_obj_put(a, o, "qualification", cg_jv_str_nocopy(a, cg_cap_level_name(qualification)));
    return o;
}

/* Nanoseconds as the crate's `{:.2}` milliseconds (ties to even on the exact
 * binary value, as printf does). */
static const char *ms(cg_arena *a, uint64_t ns) { return cg_arena_printf(a, "%.2f", (double)ns / 1000000.0); }

static void host_finding(cg_arena *a, cg_evidence *e, const cg_host_span_cost *c) {
    cg_cap_kind req[] = {CG_CAPK_NESTED_HOST_TIME};
    const char *summary = cg_arena_printf(
        a,
        "`%s` has the largest observed measured-scope host self-time (%s ms overlap-clipped, %s ms full "
        "self-time; `%s` span duration %s ms of %s ms full)",
        c->name, ms(a, c->measured_overlap_self_time_ns), ms(a, c->host_self_time_ns), cg_host_scope_name(c->scope),
        ms(a, c->measured_overlap_duration_ns), ms(a, c->full_duration_ns));
    cg_jv_arr_push(a, e->findings,
                   finding(a, "largest_observed_host_self_time", summary, c->id, req, 1,
                           e->caps.s[CG_CAPK_NESTED_HOST_TIME].level));
}

static void device_finding(cg_arena *a, cg_evidence *e, const cg_device_span_cost *c) {
    cg_cap_kind req[] = {CG_CAPK_NESTED_DEVICE_TIME};
    const char *summary =
        cg_arena_printf(a, "`%s` has the largest observed device-busy interval union on `%s` (%s ms)", c->name,
                        c->device, ms(a, c->device_busy_ns));
    cg_jv_arr_push(a, e->findings,
                   finding(a, "largest_observed_device_busy_time", summary, c->id, req, 1,
                           e->caps.s[CG_CAPK_NESTED_DEVICE_TIME].level));
}

static void kernel_finding(cg_arena *a, cg_evidence *e) {
    const cg_nsight_summary_row *k = cg_nsight_first_kernel(e->gpu);
    cg_cap_level gcl = e->caps.s[CG_CAPK_GPU_CORRELATION].level, pbl = e->caps.s[CG_CAPK_PROVENANCE_BINDING].level;
    if (!k || !e->health->structurally_valid || !e->health->capture_complete || !cg_cap_available(gcl) ||
        !cg_cap_available(pbl))
        return;
    cg_cap_kind req[] = {CG_CAPK_GPU_CORRELATION, CG_CAPK_PROVENANCE_BINDING};
    const char *summary = cg_arena_printf(a, "`%s` has the largest normalized Nsight kernel total (%s ms)", k->name,
                                          ms(a, k->total_ns));
    cg_jv_arr_push(a, e->findings,
                   finding(a, "largest_nsight_kernel_total", summary, "nsight.cuda_gpu_kern_sum", req, 2,
                           cg_cap_weakest(gcl, pbl)));
}

#define GRADIENT_CONTRACT_SOURCE "capture_contract.gradient_contract"

/* Facts and findings in the crate's order: outer wall time, the gradient
 * contract, the graph's host/device findings and gradient observations, the
 * logical peak, the Nsight kernel. A fact exists only when its capability is
 * available (partial or complete). */
static void build_findings_and_facts(cg_arena *a, cg_evidence *e, const cg_graph *g) {
    const cg_trace *t = e->trace;
    const cg_capabilities *c = &e->caps;
    e->findings = cg_jv_arr(a);
    e->facts = cg_jv_arr(a);
    if (cg_cap_available(c->s[CG_CAPK_OUTER_WALL_TIME].level))
        for (size_t i = 0; i < t->n_spans; i++) {
            const cg_span *s = &t->spans[i];
            if (!s->measured || !s->closed) continue;
            cg_jv_arr_push(a, e->facts,
                           fact(a, "outer_wall_time", "Measured region wall time", "duration_ns",
                                cg_jv_u64(a, s->duration_ns), "measured_span", CG_CAPK_OUTER_WALL_TIME));
            break;
        }
    const cg_gradient_contract *gc = t->run.contract.gradient_contract;
    if (gc && cg_cap_available(c->s[CG_CAPK_GRADIENTS].level)) {
        cg_jv_arr_push(a, e->facts,
                       fact(a, "gradient_manifest_sha256", "Gradient manifest SHA-256", "text",
                            cg_jv_str(a, gc->manifest_sha256), GRADIENT_CONTRACT_SOURCE, CG_CAPK_GRADIENTS));
        cg_jv_arr_push(a, e->facts,
                       fact(a, "gradient_manifest_entries", "Expected gradient parameters", "count",
                            cg_jv_u64(a, gc->n_expected), GRADIENT_CONTRACT_SOURCE, CG_CAPK_GRADIENTS));
        cg_jv_arr_push(a, e->facts,
                       fact(a, "gradient_family_expectations", "Gradient family expectations", "count",
                            cg_jv_u64(a, gc->n_families), GRADIENT_CONTRACT_SOURCE, CG_CAPK_GRADIENTS));
    }
    if (g) {
        const cg_host_span_cost *host = cg_graph_first_slowest_host(g);
        const cg_device_span_cost *dev = cg_graph_first_slowest_device(g);
        if (host) host_finding(a, e, host);
        if (dev) device_finding(a, e, dev);
        if (t->n_gradients) {
            uint64_t n = 0;
            for (size_t i = 0; i < t->n_gradients; i++) n += t->gradients[i].state != CG_GRAD_PRESENT;
            cg_jv_arr_push(a, e->facts,
                           fact(a, "gradient_observations", "Non-present gradient observations", "count",
                                cg_jv_u64(a, n), "trace.gradient", CG_CAPK_GRADIENTS));
        }
    }
    uint64_t peak, ts;
    if (cg_cap_available(c->s[CG_CAPK_LOGICAL_MEMORY].level) && cg_memory_logical_peak(e->memory, &peak, &ts))
        cg_jv_arr_push(a, e->facts,
                       fact(a, "logical_peak_live_bytes", "Peak live logical storage", "bytes", cg_jv_u64(a, peak),
                            "logical_storage_lifetimes", CG_CAPK_LOGICAL_MEMORY));
    kernel_finding(a, e);
}

static int cmp_str(const void *x, const void *y) { return strcmp(*(const char *const *)x, *(const char *const *)y); }

static void build_gaps(cg_arena *a, cg_evidence *e) {
    size_t cap = e->health->n_issues + CG_CAPK_COUNT, n = 0;
    const char **items = cg_xalloc(cap, sizeof *items);
    for (size_t i = 0; i < e->health->n_issues; i++)
        if (e->health->issues[i].severity == CG_SEV_WARNING) items[n++] = e->health->issues[i].message;
    for (int k = 0; k < CG_CAPK_COUNT; k++)
        if (e->caps.s[k].level != CG_CAP_COMPLETE) items[n++] = e->caps.s[k].reason;
    qsort(items, n, sizeof *items, cmp_str);
    e->gaps = cg_jv_arr(a);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || strcmp(items[i], items[i - 1]) != 0) cg_jv_arr_push(a, e->gaps, cg_jv_str(a, items[i]));
    cg_free(items);
}

cg_evidence *cg_evidence_build(cg_arena *a, const cg_trace *t, const char *nsight_dir, cg_error *err) {
    return cg_evidence_build_as(a, t, nsight_dir, NULL, err);
}

static cg_evidence *build(cg_arena *a, const cg_trace *t, const char *nsight_dir, const char *nsight_display,
                          bool summary_only, cg_error *err) {
    cg_evidence *e = cg_arena_zalloc(a, sizeof *e);
    e->trace = t;
    const cg_capture_contract *c = &t->run.contract;
    e->gpu = cg_nsight_load_as(a, nsight_dir, nsight_display, &c->required_semantic_labels,
                               &c->gpu_expected_semantic_labels, &c->cpu_only_semantic_labels, NULL);
    cg_nsight_bind_to_trace(e->gpu, t->run.run_id, t->run.correlation_id);
    e->health = cg_health_analyze(t);
    e->timing = cg_timing_analyze(t, a);
    e->memory = cg_memory_analyze(t, a);
    cg_capabilities_assess(a, t, e->health, e->timing->device_coverage, e->gpu, &e->caps);
    const cg_graph *graph = NULL;
    if (e->health->structurally_valid && e->health->capture_complete) {
        cg_graph *g = (summary_only ? cg_graph_build_summary : cg_graph_build_with)(t, e->health, e->timing,
                                                                                   e->memory, a, err);
        if (!g) {
            cg_health_free(e->health);
            return NULL;
        }
        e->graph = cg_graph_to_json_lazy(a, g);
        e->graph_model = g;
        graph = g;
    }
    build_findings_and_facts(a, e, graph);
    build_gaps(a, e);
    return e;
}

cg_evidence *cg_evidence_build_as(cg_arena *a, const cg_trace *t, const char *nsight_dir, const char *nsight_display,
                                  cg_error *err) {
    return build(a, t, nsight_dir, nsight_display, false, err);
}

cg_evidence *cg_evidence_build_summary(cg_arena *a, const cg_trace *t, const char *nsight_dir, cg_error *err) {
    return build(a, t, nsight_dir, NULL, true, err);
}

void cg_evidence_free(cg_evidence *e) {
    if (e && e->health) {
        cg_health_free(e->health);
        e->health = NULL;
    }
}

static cg_jv *tensor_stats_item(cg_arena *a, void *ctx, size_t i) {
    return cg_tensor_stats_record_json(a, &((const cg_trace *)ctx)->tensor_stats[i]);
}

cg_jv *cg_evidence_to_json_lazy(cg_arena *a, const cg_evidence *e) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "schema", cg_jv_str_nocopy(a, CG_EVIDENCE_SCHEMA));
    cg_jv_obj_put(a, o, "provenance", cg_run_meta_to_json(a, &e->trace->run));
    cg_jv_obj_put(a, o, "health", cg_health_to_json(a, e->health));
    cg_jv_obj_put(a, o, "capabilities", cg_capabilities_to_json(a, &e->caps));
    cg_jv_obj_put(a, o, "findings", e->findings);
    cg_jv_obj_put(a, o, "facts", e->facts);
    cg_jv_obj_put(a, o, "gaps", e->gaps);
    if (e->graph) cg_jv_obj_put(a, o, "graph", e->graph);
    if (e->trace->n_tensor_stats)
        cg_jv_obj_put(a, o, "tensor_stats",
                      cg_jv_lazy_arr(a, e->trace->n_tensor_stats, tensor_stats_item, (void *)(uintptr_t)e->trace));
    cg_jv_obj_put(a, o, "timing", cg_timing_to_json_lazy(a, e->timing));
    cg_jv_obj_put(a, o, "memory", cg_memory_to_json_lazy(a, e->memory));
    cg_jv_obj_put(a, o, "gpu", cg_nsight_to_json(a, e->gpu));
    return o;
}

cg_jv *cg_evidence_to_json(cg_arena *a, const cg_evidence *e) {
    return cg_jv_materialize(a, cg_evidence_to_json_lazy(a, e));
}

cg_jv *cg_evidence_build_file(cg_arena *a, const char *trace_path, const char *nsight_dir, cg_error *err) {
    return cg_evidence_build_file_as(a, trace_path, nsight_dir, NULL, err);
}

cg_jv *cg_evidence_build_file_as(cg_arena *a, const char *trace_path, const char *nsight_dir,
                                 const char *nsight_display, cg_error *err) {
    cg_trace *t = cg_trace_read_file(trace_path, NULL, err);
    if (!t) return NULL;
    cg_jv *out = NULL;
    cg_arena work;
    cg_arena_init(&work, 1 << 20);
    cg_evidence *e = cg_evidence_build_as(&work, t, nsight_dir, nsight_display, err);
    if (e) {
        /* the clone materializes the lazy arrays and copies every string into `a`,
         * so the result outlives the trace and the work arena */
        out = cg_jv_clone(a, cg_evidence_to_json_lazy(&work, e));
        cg_evidence_free(e);
    }
    cg_arena_free(&work);
    cg_trace_free(t);
    return out;
}

int cg_evidence_validate_schema(const cg_jv *p, cg_error *err) {
    if (!p || p->type != CG_JOBJ) return cg_err_set(err, CG_EPARSE, "evidence packet must be a JSON object");
    const char *schema = cg_jv_as_str(cg_jv_get(p, "schema"));
    if (!schema || strcmp(schema, CG_EVIDENCE_SCHEMA) != 0)
        return cg_err_set(err, CG_EPARSE, "unsupported evidence schema %s; expected %s",
                          schema ? CG_QUOTE(schema) : "(missing)", CG_QUOTE(CG_EVIDENCE_SCHEMA));
    static const struct { const char *k; cg_jtype t; } req[] = {
        {"provenance", CG_JOBJ}, {"health", CG_JOBJ}, {"capabilities", CG_JOBJ}, {"findings", CG_JARR},
        {"facts", CG_JARR},      {"gaps", CG_JARR},   {"timing", CG_JOBJ},       {"memory", CG_JOBJ},
        {"gpu", CG_JOBJ},
    };
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
        cg_jv *v = cg_jv_get(p, req[i].k);
        if (!v) return cg_err_set(err, CG_EPARSE, "evidence packet is missing field `%s`", req[i].k);
        if (v->type != req[i].t) return cg_err_set(err, CG_EPARSE, "evidence packet field `%s` has the wrong type", req[i].k);
    }
    cg_jv *g = cg_jv_get(p, "graph");
    if (g && g->type != CG_JNULL) {
        const char *gs = cg_jv_as_str(cg_jv_get(g, "schema"));
        if (!gs || strcmp(gs, CG_GRAPH_SCHEMA) != 0)
            return cg_err_set(err, CG_EPARSE, "unsupported graph schema %s; expected %s",
                              gs ? CG_QUOTE(gs) : "(missing)", CG_QUOTE(CG_GRAPH_SCHEMA));
    }
    return 0;
}
