/* evidence.c — EvidencePacket construction (spec §9). */
#include "analysis/evidence.h"

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

static uint64_t ju64(const cg_jv *o, const char *k) {
    uint64_t v = 0;
    cg_jv_as_u64(cg_jv_get(o, k), &v);
    return v;
}

static const char *jstr(const cg_jv *o, const char *k) {
    const char *s = cg_jv_as_str(cg_jv_get(o, k));
    return s ? s : "";
}

static void build_findings(cg_arena *a, cg_evidence *e) {
    e->findings = cg_jv_arr(a);
    const cg_capabilities *c = &e->caps;
    if (e->graph) {
        cg_jv *summary = cg_jv_get(e->graph, "summary");
        cg_jv *host = cg_jv_get(summary, "slowest_host_spans");
        if (host && cg_jv_len(host)) {
            cg_jv *r = cg_jv_at(host, 0);
            cg_cap_kind req[] = {CG_CAPK_NESTED_HOST_TIME};
            cg_jv_arr_push(a, e->findings,
                           finding(a, "largest_observed_host_self_time",
                                   cg_arena_printf(a,
                                                   "%s (%s) has the largest observed host self time in the measured "
                                                   "window: %llu ns (%s)",
                                                   jstr(r, "name"), jstr(r, "id"),
                                                   (unsigned long long)ju64(r, "measured_overlap_self_time_ns"),
                                                   jstr(r, "scope")),
                                   "graph.summary.slowest_host_spans", req, 1,
                                   c->s[CG_CAPK_NESTED_HOST_TIME].level));
        }
        cg_jv *dev = cg_jv_get(summary, "slowest_device_spans");
        if (dev && cg_jv_len(dev)) {
            cg_jv *r = cg_jv_at(dev, 0);
            cg_cap_kind req[] = {CG_CAPK_NESTED_DEVICE_TIME};
            cg_jv_arr_push(a, e->findings,
                           finding(a, "largest_observed_device_busy_time",
                                   cg_arena_printf(a,
                                                   "%s (%s) has the largest observed device busy time: %llu ns on %s "
                                                   "clock %s",
                                                   jstr(r, "name"), jstr(r, "id"),
                                                   (unsigned long long)ju64(r, "device_busy_ns"), jstr(r, "device"),
                                                   jstr(r, "clock_id")),
                                   "graph.summary.slowest_device_spans", req, 1,
                                   c->s[CG_CAPK_NESTED_DEVICE_TIME].level));
        }
    }
    const cg_nsight_summary_row *k = cg_nsight_first_kernel(e->gpu);
    cg_cap_level gcl = c->s[CG_CAPK_GPU_CORRELATION].level, pbl = c->s[CG_CAPK_PROVENANCE_BINDING].level;
    if (k && e->health->structurally_valid && e->health->capture_complete && cg_cap_available(gcl) &&
        cg_cap_available(pbl)) {
        cg_cap_kind req[] = {CG_CAPK_GPU_CORRELATION, CG_CAPK_PROVENANCE_BINDING};
        cg_jv_arr_push(a, e->findings,
                       finding(a, "largest_nsight_kernel_total",
                               cg_arena_printf(a, "%s has the largest Nsight kernel total: %llu ns over %llu instances",
                                               k->name, (unsigned long long)k->total_ns,
                                               (unsigned long long)k->count),
                               "gpu.kernels", req, 2, cg_cap_weakest(gcl, pbl)));
    }
}

static void build_facts(cg_arena *a, cg_evidence *e) {
    const cg_trace *t = e->trace;
    e->facts = cg_jv_arr(a);
    for (size_t i = 0; i < t->n_spans; i++) {
        const cg_span *s = &t->spans[i];
        if (s->measured && s->closed) {
            cg_jv_arr_push(a, e->facts,
                           fact(a, "outer_wall_time", "Outer wall time", "duration_ns", cg_jv_u64(a, s->duration_ns),
                                cg_arena_printf(a, "measured span %s", s->id), CG_CAPK_OUTER_WALL_TIME));
            break;
        }
    }
    const cg_gradient_contract *g = t->run.contract.gradient_contract;
    if (g) {
        cg_jv_arr_push(a, e->facts,
                       fact(a, "gradient_manifest_sha256", "Gradient manifest digest", "text",
                            cg_jv_str(a, g->manifest_sha256), "capture_contract.gradient_contract",
                            CG_CAPK_GRADIENTS));
        cg_jv_arr_push(a, e->facts,
                       fact(a, "gradient_manifest_entries", "Gradient manifest entries", "count",
                            cg_jv_u64(a, g->n_expected), "capture_contract.gradient_contract", CG_CAPK_GRADIENTS));
        cg_jv_arr_push(a, e->facts,
                       fact(a, "gradient_family_expectations", "Gradient family expectations", "count",
                            cg_jv_u64(a, g->n_families), "capture_contract.gradient_contract", CG_CAPK_GRADIENTS));
    }
    if (e->graph && t->n_gradients) {
        uint64_t n = 0;
        for (size_t i = 0; i < t->n_gradients; i++) n += t->gradients[i].state != CG_GRAD_PRESENT;
        cg_jv_arr_push(a, e->facts,
                       fact(a, "gradient_observations", "Gradient observations that are not present", "count",
                            cg_jv_u64(a, n), "gradient events", CG_CAPK_GRADIENTS));
    }
    uint64_t peak, ts;
    if (cg_memory_logical_peak(e->memory, &peak, &ts)) {
        cg_jv_arr_push(a, e->facts,
                       fact(a, "logical_peak_live_bytes", "Logical peak live bytes", "bytes", cg_jv_u64(a, peak),
                            cg_arena_printf(a, "memory events (peak at %llu ns)", (unsigned long long)ts),
                            CG_CAPK_LOGICAL_MEMORY));
    }
}

static int cmp_str(const void *x, const void *y) { return strcmp(*(const char *const *)x, *(const char *const *)y); }

static void build_gaps(cg_arena *a, cg_evidence *e) {
    size_t cap = e->health->n_issues + CG_CAPK_COUNT, n = 0;
    const char **items = malloc(cap * sizeof *items);
    if (!items) abort();
    for (size_t i = 0; i < e->health->n_issues; i++)
        if (e->health->issues[i].severity == CG_SEV_WARNING) items[n++] = e->health->issues[i].message;
    for (int k = 0; k < CG_CAPK_COUNT; k++)
        if (e->caps.s[k].level != CG_CAP_COMPLETE) items[n++] = e->caps.s[k].reason;
    qsort(items, n, sizeof *items, cmp_str);
    e->gaps = cg_jv_arr(a);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || strcmp(items[i], items[i - 1]) != 0) cg_jv_arr_push(a, e->gaps, cg_jv_str(a, items[i]));
    free(items);
}

cg_evidence *cg_evidence_build(cg_arena *a, const cg_trace *t, const char *nsight_dir, cg_error *err) {
    cg_evidence *e = cg_arena_zalloc(a, sizeof *e);
    e->trace = t;
    const cg_capture_contract *c = &t->run.contract;
    e->gpu = cg_nsight_load(a, nsight_dir, &c->required_semantic_labels, &c->gpu_expected_semantic_labels,
                            &c->cpu_only_semantic_labels);
    cg_nsight_bind_to_trace(e->gpu, t->run.run_id, t->run.correlation_id);
    e->health = cg_health_analyze(t);
    e->timing = cg_timing_analyze(t, a);
    e->memory = cg_memory_analyze(t, a);
    cg_capabilities_assess(a, t, e->health, e->timing->device_coverage, e->gpu, &e->caps);
    if (e->health->structurally_valid && e->health->capture_complete) {
        cg_graph *g = cg_graph_build_with(t, e->health, e->timing, e->memory, a, err);
        if (!g) {
            cg_health_free(e->health);
            return NULL;
        }
        e->graph = cg_graph_to_json_lazy(a, g);
    }
    build_findings(a, e);
    build_facts(a, e);
    build_gaps(a, e);
    return e;
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
    cg_trace *t = cg_trace_read_file(trace_path, NULL, err);
    if (!t) return NULL;
    cg_jv *out = NULL;
    cg_arena work;
    cg_arena_init(&work, 1 << 20);
    cg_evidence *e = cg_evidence_build(&work, t, nsight_dir, err);
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
        return cg_err_set(err, CG_EPARSE, "unsupported evidence schema %s; expected %s", schema ? schema : "(missing)",
                          CG_EVIDENCE_SCHEMA);
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
            return cg_err_set(err, CG_EPARSE, "unsupported graph schema %s; expected %s", gs ? gs : "(missing)",
                              CG_GRAPH_SCHEMA);
    }
    return 0;
}
