/* cohort.c — one run's comparison facts (cg_cohort_row) and their stable JSON. */
#include "comparison/cohort.h"

#include "base/num.h"

#include <string.h>

#include "base/hmap.h"

/* Groups the run's tensor_stats events by label, first-seen order. */
static void collect_tensor_stats(cg_arena *a, const cg_trace *t, cg_cohort_row *out) {
    size_t n = t->n_tensor_stats;
    out->tensor_stats = NULL;
    out->n_tensor_stats = 0;
    if (n == 0) return;
    /* label -> group (first-seen order) through a hash map: linear in the events */
    size_t *group = cg_arena_alloc(a, n * sizeof *group);
    size_t *count = cg_arena_zalloc(a, n * sizeof *count);
    const char **labels = cg_arena_alloc(a, n * sizeof *labels);
    size_t ng = 0;
    cg_hstr by_label;
    cg_hstr_init(&by_label, 0);
    for (size_t i = 0; i < n; i++) {
        const char *l = t->tensor_stats[i].label;
        size_t *seen = NULL;
        if (cg_hstr_put(&by_label, l, ng, &seen)) labels[ng++] = l;
        size_t g = seen ? *seen : ng - 1;
        group[i] = g;
        count[g]++;
    }
    cg_hstr_free(&by_label);
    cg_cohort_tensor_stat *ts = cg_arena_zalloc(a, ng * sizeof *ts);
    for (size_t g = 0; g < ng; g++) {
        ts[g].label = cg_arena_strdup(a, labels[g]);
        ts[g].rms = cg_arena_alloc(a, count[g] * sizeof(double));
        ts[g].abs_max = cg_arena_alloc(a, count[g] * sizeof(double));
    }
    for (size_t i = 0; i < n; i++) {
        cg_cohort_tensor_stat *s = &ts[group[i]];
        s->rms[s->n] = t->tensor_stats[i].rms;
        s->abs_max[s->n] = t->tensor_stats[i].abs_max;
        s->n++;
        s->non_finite = cg_sat_add_u64(s->non_finite, t->tensor_stats[i].non_finite);
    }
    out->tensor_stats = ts;
    out->n_tensor_stats = ng;
}

void cg_cohort_row_from_trace(cg_arena *a, const cg_trace *t, const cg_health *h,
                              const cg_cohort_receipt *receipt, cg_cohort_row *out) {
    memset(out, 0, sizeof *out);
    const cg_run_meta *m = &t->run;
    out->run_id = cg_arena_strdup(a, m->run_id);
    if (receipt) {
        out->has_receipt = true;
        out->receipt.run_id = cg_arena_strdup(a, receipt->run_id);
        out->receipt.manifest_sha256 = cg_arena_strdup(a, receipt->manifest_sha256);
    }
    out->entrypoint = cg_arena_strdup(a, m->entrypoint);
    out->phase = m->phase;
    out->device = cg_arena_strdup(a, m->device);
    out->timing_mode = m->timing_mode;
    out->measured_region_device_synchronized = m->measured_region_device_synchronized;
    out->warmup_steps = m->warmup_steps;
    out->capture_step = m->capture_step;
    {
        cg_arena tmp;
        cg_arena_init(&tmp, 0);
        cg_buf b = CG_BUF_INIT;
        cg_json_write(&b, cg_capture_contract_to_json(&tmp, &m->contract), false);
        out->capture_contract_json = cg_arena_strndup(a, b.data, b.len);
        cg_buf_free(&b);
        cg_arena_free(&tmp);
    }
    out->measurement_scope = m->contract.measurement_scope;
    out->identity = cg_comparison_identity_copy(a, m->identity);
    out->structurally_valid = h->structurally_valid;
    out->capture_complete = h->capture_complete;
    for (size_t i = 0; i < t->n_spans; i++) {
        const cg_span *s = &t->spans[i];
        if (!(s->measured && s->closed)) continue;
        if (out->measured_regions == 0) out->measured_duration_ns = s->duration_ns;
        out->measured_regions++;
    }
    collect_tensor_stats(a, t, out);
}

/* ---- JSON ---- */

/* One tensor_stats item of a row, made while the row is written (a lazy
 * array: no DOM of a large trace's labels). */
static cg_jv *tensor_stat_item(cg_arena *a, void *ctx, size_t i) {
    const cg_cohort_tensor_stat *s = &((const cg_cohort_row *)ctx)->tensor_stats[i];
    cg_jv *e = cg_jv_obj(a), *rms = cg_jv_arr(a), *am = cg_jv_arr(a);
    for (size_t k = 0; k < s->n; k++) {
        cg_jv_arr_push(a, rms, cg_jv_f64(a, s->rms[k]));
        cg_jv_arr_push(a, am, cg_jv_f64(a, s->abs_max[k]));
    }
    cg_jv_obj_put(a, e, "label", cg_jv_str_nocopy(a, s->label));
    cg_jv_obj_put(a, e, "rms", rms);
    cg_jv_obj_put(a, e, "abs_max", am);
    cg_jv_obj_put(a, e, "non_finite", cg_jv_u64(a, s->non_finite));
    return e;
}

cg_jv *cg_cohort_row_to_json(cg_arena *a, const cg_cohort_row *r) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "schema", cg_jv_str_nocopy(a, CG_COHORT_ROW_SCHEMA));
    cg_jv_obj_put(a, o, "run_id", cg_jv_str(a, r->run_id));
    if (r->has_receipt) {
        cg_jv *rc = cg_jv_obj(a);
        cg_jv_obj_put(a, rc, "run_id", cg_jv_str(a, r->receipt.run_id));
        cg_jv_obj_put(a, rc, "manifest_sha256", cg_jv_str(a, r->receipt.manifest_sha256));
        cg_jv_obj_put(a, o, "receipt", rc);
    } else {
        cg_jv_obj_put(a, o, "receipt", cg_jv_null(a));
    }
    cg_jv_obj_put(a, o, "entrypoint", cg_jv_str(a, r->entrypoint));
    cg_jv_obj_put(a, o, "phase", cg_jv_str_nocopy(a, cg_phase_name(r->phase)));
    cg_jv_obj_put(a, o, "device", cg_jv_str(a, r->device));
    cg_jv_obj_put(a, o, "timing_mode", cg_jv_str_nocopy(a, cg_timing_mode_name(r->timing_mode)));
    cg_jv_obj_put(a, o, "measured_region_device_synchronized",
                  cg_jv_bool(a, r->measured_region_device_synchronized));
    cg_jv_obj_put(a, o, "warmup_steps", cg_jv_u64(a, r->warmup_steps));
    cg_jv_obj_put(a, o, "capture_step", cg_jv_u64(a, r->capture_step));
    cg_error err;
    cg_jv *contract = cg_json_parse(a, r->capture_contract_json, strlen(r->capture_contract_json),
                                    NULL, &err);
    cg_jv_obj_put(a, o, "capture_contract", contract ? contract : cg_jv_null(a));
    cg_jv_obj_put(a, o, "comparison_identity",
                  r->identity ? cg_comparison_identity_to_json(a, r->identity) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "structurally_valid", cg_jv_bool(a, r->structurally_valid));
    cg_jv_obj_put(a, o, "capture_complete", cg_jv_bool(a, r->capture_complete));
    cg_jv_obj_put(a, o, "measured_regions", cg_jv_u64(a, r->measured_regions));
    cg_jv_obj_put(a, o, "measured_duration_ns", cg_jv_u64(a, r->measured_duration_ns));
    cg_jv_obj_put(a, o, "tensor_stats", cg_jv_lazy_arr(a, r->n_tensor_stats, tensor_stat_item, (void *)r));
    return o;
}

void cg_cohort_row_write(cg_buf *out, const cg_cohort_row *row) {
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_json_write(out, cg_cohort_row_to_json(&a, row), false);
    cg_arena_free(&a);
}

/* -- reading -- */

static int need_str(cg_arena *a, const cg_jv *o, const char *key, const char *where,
                    const char **out, cg_error *err) {
    const char *s = cg_jv_as_str(cg_jv_get(o, key));
    if (!s) return cg_err_set(err, CG_EPARSE, "cohort row %s%s must be a string", where, key);
    *out = cg_arena_strdup(a, s);
    return 0;
}

static int opt_str(cg_arena *a, const cg_jv *o, const char *key, const char *where,
                   const char **out, cg_error *err) {
    const cg_jv *v = cg_jv_get(o, key);
    *out = NULL;
    if (!v || v->type == CG_JNULL) return 0;
    return need_str(a, o, key, where, out, err);
}

static int need_u64(const cg_jv *o, const char *key, const char *where, uint64_t *out, cg_error *err) {
    if (!cg_jv_as_u64(cg_jv_get(o, key), out))
        return cg_err_set(err, CG_EPARSE, "cohort row %s%s must be an unsigned integer", where, key);
    return 0;
}

static int need_bool(const cg_jv *o, const char *key, bool *out, cg_error *err) {
    const cg_jv *v = cg_jv_get(o, key);
    if (!v || v->type != CG_JBOOL) return cg_err_set(err, CG_EPARSE, "cohort row %s must be a boolean", key);
    *out = v->u.b;
    return 0;
}

static int need_f64(const cg_jv *v, const char *what, double *out, cg_error *err) {
    if (!v || (v->type != CG_JREAL && v->type != CG_JINT) || !cg_jv_as_f64(v, out))
        return cg_err_set(err, CG_EPARSE, "cohort row %s must be numbers", what);
    return 0;
}

static int parse_identity(cg_arena *a, const cg_jv *v, cg_comparison_identity **out, cg_error *err) {
    *out = NULL;
    if (!v || v->type == CG_JNULL) return 0;
    if (v->type != CG_JOBJ) return cg_err_set(err, CG_EPARSE, "cohort row comparison_identity must be an object or null");
    cg_comparison_identity *id = cg_arena_zalloc(a, sizeof *id);
    const char *w = "comparison_identity.";
    if (opt_str(a, v, "implementation_id", w, &id->implementation_id, err) ||
        need_str(a, v, "workload_id", w, &id->workload_id, err) ||
        need_str(a, v, "model_id", w, &id->model_id, err) ||
        need_str(a, v, "config_id", w, &id->config_id, err) ||
        need_str(a, v, "data_id", w, &id->data_id, err) ||
        need_str(a, v, "seed_policy", w, &id->seed_policy, err) ||
        need_u64(v, "physical_batch", w, &id->physical_batch, err) ||
        need_u64(v, "accumulation_steps", w, &id->accumulation_steps, err) ||
        need_str(a, v, "precision", w, &id->precision, err) ||
        need_str(a, v, "device_state", w, &id->device_state, err) ||
        opt_str(a, v, "pair_id", w, &id->pair_id, err))
        return -1;
    *out = id;
    return 0;
}

static int parse_tensor_stats(cg_arena *a, const cg_jv *v, cg_cohort_row *out, cg_error *err) {
    if (!v || v->type != CG_JARR) return cg_err_set(err, CG_EPARSE, "cohort row tensor_stats must be an array");
    size_t n = cg_jv_len(v);
    out->n_tensor_stats = n;
    out->tensor_stats = n ? cg_arena_zalloc(a, n * sizeof *out->tensor_stats) : NULL;
    for (size_t i = 0; i < n; i++) {
        const cg_jv *e = cg_jv_at(v, i);
        cg_cohort_tensor_stat *s = &out->tensor_stats[i];
        if (e->type != CG_JOBJ) return cg_err_set(err, CG_EPARSE, "cohort row tensor_stats entries must be objects");
        if (need_str(a, e, "label", "tensor_stats.", &s->label, err)) return -1;
        const cg_jv *rms = cg_jv_get(e, "rms"), *am = cg_jv_get(e, "abs_max");
        if (!rms || rms->type != CG_JARR || !am || am->type != CG_JARR || cg_jv_len(rms) != cg_jv_len(am) ||
            cg_jv_len(rms) == 0)
            return cg_err_set(err, CG_EPARSE,
                              "cohort row tensor_stats.rms and abs_max must be non-empty arrays of equal length");
        s->n = cg_jv_len(rms);
        s->rms = cg_arena_alloc(a, s->n * sizeof(double));
        s->abs_max = cg_arena_alloc(a, s->n * sizeof(double));
        for (size_t k = 0; k < s->n; k++)
            if (need_f64(cg_jv_at(rms, k), "tensor_stats.rms", &s->rms[k], err) ||
                need_f64(cg_jv_at(am, k), "tensor_stats.abs_max", &s->abs_max[k], err))
                return -1;
        if (need_u64(e, "non_finite", "tensor_stats.", &s->non_finite, err)) return -1;
        for (size_t k = 0; k < i; k++)
            if (!strcmp(out->tensor_stats[k].label, s->label))
                return cg_err_set(err, CG_EPARSE, "cohort row tensor_stats repeats label %s", s->label);
    }
    return 0;
}

int cg_cohort_row_from_json(cg_arena *a, const cg_jv *v, cg_cohort_row *out, cg_error *err) {
    memset(out, 0, sizeof *out);
    if (!v || v->type != CG_JOBJ) return cg_err_set(err, CG_EPARSE, "cohort row must be a JSON object");
    const char *schema = cg_jv_as_str(cg_jv_get(v, "schema"));
    if (!schema || strcmp(schema, CG_COHORT_ROW_SCHEMA) != 0)
        return cg_err_set(err, CG_EPARSE, "unsupported cohort row schema %s; expected %s",
                          schema ? schema : "(none)", CG_COHORT_ROW_SCHEMA);
    if (need_str(a, v, "run_id", "", &out->run_id, err)) return -1;
    const cg_jv *rc = cg_jv_get(v, "receipt");
    if (rc && rc->type == CG_JOBJ) {
        out->has_receipt = true;
        if (need_str(a, rc, "run_id", "receipt.", &out->receipt.run_id, err) ||
            need_str(a, rc, "manifest_sha256", "receipt.", &out->receipt.manifest_sha256, err))
            return -1;
    } else if (!rc || rc->type != CG_JNULL) {
        return cg_err_set(err, CG_EPARSE, "cohort row receipt must be an object or null");
    }
    const char *phase = NULL, *timing = NULL;
    if (need_str(a, v, "entrypoint", "", &out->entrypoint, err) ||
        need_str(a, v, "phase", "", &phase, err) || need_str(a, v, "device", "", &out->device, err) ||
        need_str(a, v, "timing_mode", "", &timing, err))
        return -1;
    int p = cg_phase_parse(phase), tm = cg_timing_mode_parse(timing);
    if (p < 0) return cg_err_set(err, CG_EPARSE, "cohort row phase %s is unknown", phase);
    if (tm < 0) return cg_err_set(err, CG_EPARSE, "cohort row timing_mode %s is unknown", timing);
    out->phase = (cg_phase)p;
    out->timing_mode = (cg_timing_mode)tm;
    if (need_bool(v, "measured_region_device_synchronized", &out->measured_region_device_synchronized, err) ||
        need_u64(v, "warmup_steps", "", &out->warmup_steps, err) ||
        need_u64(v, "capture_step", "", &out->capture_step, err))
        return -1;
    const cg_jv *contract = cg_jv_get(v, "capture_contract");
    if (!contract || contract->type != CG_JOBJ)
        return cg_err_set(err, CG_EPARSE, "cohort row capture_contract must be an object");
    const char *scope = cg_jv_as_str(cg_jv_get(contract, "measurement_scope"));
    int sc = scope ? cg_scope_parse(scope) : -1;
    if (sc < 0) return cg_err_set(err, CG_EPARSE, "cohort row capture_contract.measurement_scope is invalid");
    out->measurement_scope = (cg_scope)sc;
    {
        cg_buf b = CG_BUF_INIT;
        cg_json_write(&b, contract, false);
        out->capture_contract_json = cg_arena_strndup(a, b.data, b.len);
        cg_buf_free(&b);
    }
    if (parse_identity(a, cg_jv_get(v, "comparison_identity"), &out->identity, err)) return -1;
    if (need_bool(v, "structurally_valid", &out->structurally_valid, err) ||
        need_bool(v, "capture_complete", &out->capture_complete, err) ||
        need_u64(v, "measured_regions", "", &out->measured_regions, err) ||
        need_u64(v, "measured_duration_ns", "", &out->measured_duration_ns, err))
        return -1;
    return parse_tensor_stats(a, cg_jv_get(v, "tensor_stats"), out, err);
}

int cg_cohort_row_parse(cg_arena *a, const char *text, size_t len, cg_cohort_row *out, cg_error *err) {
    cg_jv *v = cg_json_parse(a, text, len, NULL, err);
    if (!v) return cg_err_context(err, "parse cohort row");
    return cg_cohort_row_from_json(a, v, out, err);
}
