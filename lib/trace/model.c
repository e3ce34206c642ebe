/* model.c — enum wire names, dtype sizes and the JSON shape of every trace record. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace.h"

/* ---------------------------------------------------------------- enums */

#define NAMES(fn, parse, ...)                                                      \
    static const char *const fn##_names[] = {__VA_ARGS__};                         \
    int parse(const char *s) {                                                     \
        if (!s) return -1;                                                         \
        for (size_t i = 0; i < sizeof fn##_names / sizeof fn##_names[0]; i++)      \
            if (fn##_names[i] && strcmp(fn##_names[i], s) == 0) return (int)i;     \
        return -1;                                                                 \
    }

NAMES(phase, cg_phase_parse, "train", "infer")
NAMES(timing, cg_timing_mode_parse, "host", "device_synchronized")
NAMES(coverage, cg_coverage_parse, "none", "partial", "complete")
NAMES(scope, cg_scope_parse, "unknown", "profiled_work", "production_equivalent")
NAMES(span_kind, cg_span_kind_parse, "function", "op", "module")
NAMES(step, cg_step_parse, NULL, "forward", "backward", "optimizer")
NAMES(category, cg_category_parse, "parameter", "activation", "gradient", "optimizer", "other")
NAMES(grad, cg_grad_state_parse, "present", "missing", "zero", "non_finite")
NAMES(family, cg_family_expectation_parse, "active", "inactive", "data_conditional")
NAMES(outcome, cg_outcome_parse, "complete", "failed")

const char *cg_phase_name(cg_phase v) { return phase_names[v]; }
const char *cg_timing_mode_name(cg_timing_mode v) { return timing_names[v]; }
const char *cg_coverage_name(cg_coverage v) { return coverage_names[v]; }
const char *cg_scope_name(cg_scope v) { return scope_names[v]; }
const char *cg_span_kind_name(cg_span_kind v) { return span_kind_names[v]; }
const char *cg_step_name(cg_step v) { return step_names[v]; }
const char *cg_category_name(cg_category v) { return category_names[v]; }
const char *cg_grad_state_name(cg_grad_state v) { return grad_names[v]; }
const char *cg_family_expectation_name(cg_family_expectation v) { return family_names[v]; }
const char *cg_outcome_name(cg_outcome v) { return outcome_names[v]; }

/* Normalizes an alias: lowercase, '-' -> '_', trimmed. */
static void norm_alias(const char *s, char *out, size_t outsz) {
    while (*s && isspace((unsigned char)*s)) s++;
    size_t n = 0;
    for (; *s && n + 1 < outsz; s++) out[n++] = *s == '-' ? '_' : (char)tolower((unsigned char)*s);
    while (n && isspace((unsigned char)out[n - 1])) n--;
    out[n] = '\0';
}

int cg_phase_parse_alias(const char *s) {
    char b[64];
    if (!s) return -1;
    norm_alias(s, b, sizeof b);
    if (!strcmp(b, "train") || !strcmp(b, "training")) return CG_PHASE_TRAIN;
    if (!strcmp(b, "infer") || !strcmp(b, "inference") || !strcmp(b, "eval") || !strcmp(b, "evaluate"))
        return CG_PHASE_INFER;
    return -1;
}

int cg_step_parse_alias(const char *s) {
    char b[64];
    if (!s) return -1;
    norm_alias(s, b, sizeof b);
    if (!strcmp(b, "forward") || !strcmp(b, "fwd")) return CG_STEP_FORWARD;
    if (!strcmp(b, "backward") || !strcmp(b, "backward_pass") || !strcmp(b, "bwd") || !strcmp(b, "backprop"))
        return CG_STEP_BACKWARD;
    if (!strcmp(b, "optimizer") || !strcmp(b, "optim") || !strcmp(b, "step")) return CG_STEP_OPTIMIZER;
    return -1;
}

/* ---------------------------------------------------------------- dtypes */

size_t cg_dtype_size(const char *dtype) {
    if (!dtype) return 0;
    char b[16];
    while (*dtype && isspace((unsigned char)*dtype)) dtype++;
    size_t n = 0;
    for (; *dtype && n + 1 < sizeof b; dtype++) b[n++] = (char)tolower((unsigned char)*dtype);
    if (*dtype && !isspace((unsigned char)*dtype)) return 0; /* longer than any known dtype */
    while (n && isspace((unsigned char)b[n - 1])) n--;
    b[n] = '\0';
    static const struct { const char *name; size_t size; } table[] = {
        {"u8", 1}, {"i8", 1}, {"bool", 1}, {"f8", 1},
        {"u16", 2}, {"i16", 2}, {"f16", 2}, {"bf16", 2},
        {"u32", 4}, {"i32", 4}, {"f32", 4},
        {"u64", 8}, {"i64", 8}, {"f64", 8},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i].name, b)) return table[i].size;
    return 0;
}

uint64_t cg_shape_elements(const cg_shape *s) {
    uint64_t e = 1;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t d = s->dims[i];
        if (d && e > UINT64_MAX / d) return UINT64_MAX;
        e *= d;
    }
    return e;
}

bool cg_dense_bytes(const cg_shape *s, const char *dtype, uint64_t *out) {
    size_t sz = cg_dtype_size(dtype);
    if (!sz) return false;
    uint64_t e = cg_shape_elements(s);
    *out = e > UINT64_MAX / sz ? UINT64_MAX : e * sz;
    return true;
}

/* ---------------------------------------------------------------- JSON builders */

#define PUT(k, v) cg_jv_obj_put(a, o, k, v)
#define STR(s) cg_jv_str(a, s)

cg_jv *cg_shape_to_json(cg_arena *a, const cg_shape *s) {
    cg_jv *arr = cg_jv_arr(a);
    for (size_t i = 0; i < s->n; i++) cg_jv_arr_push(a, arr, cg_jv_u64(a, s->dims[i]));
    return arr;
}

cg_jv *cg_strlist_to_json(cg_arena *a, const cg_strlist *l) {
    cg_jv *arr = cg_jv_arr(a);
    for (size_t i = 0; i < l->n; i++) cg_jv_arr_push(a, arr, cg_jv_str(a, l->items[i]));
    return arr;
}

static cg_jv *gradient_contract_json(cg_arena *a, const cg_gradient_contract *g) {
    cg_jv *o = cg_jv_obj(a);
    PUT("manifest_sha256", STR(g->manifest_sha256));
    cg_jv *exp = cg_jv_arr(a);
    for (size_t i = 0; i < g->n_expected; i++) {
        cg_jv *e = cg_jv_obj(a);
        cg_jv_obj_put(a, e, "root", STR(g->expected[i].root));
        cg_jv_obj_put(a, e, "key", STR(g->expected[i].key));
        cg_jv_obj_put(a, e, "family", STR(g->expected[i].family));
        cg_jv_arr_push(a, exp, e);
    }
    PUT("expected", exp);
    cg_jv *fam = cg_jv_arr(a);
    for (size_t i = 0; i < g->n_families; i++) {
        cg_jv *f = cg_jv_obj(a);
        cg_jv_obj_put(a, f, "family", STR(g->families[i].family));
        cg_jv_obj_put(a, f, "expectation", STR(cg_family_expectation_name(g->families[i].expectation)));
        cg_jv_obj_put(a, f, "min_present", cg_jv_u64(a, g->families[i].min_present));
        cg_jv_arr_push(a, fam, f);
    }
    PUT("families", fam);
    return o;
}

cg_jv *cg_capture_contract_to_json(cg_arena *a, const cg_capture_contract *c) {
    cg_jv *o = cg_jv_obj(a);
    PUT("measurement_scope", STR(cg_scope_name(c->measurement_scope)));
    PUT("operations", STR(cg_coverage_name(c->operations)));
    PUT("tensors", STR(cg_coverage_name(c->tensors)));
    PUT("gradients", STR(cg_coverage_name(c->gradients)));
    if (c->gradient_contract) PUT("gradient_contract", gradient_contract_json(a, c->gradient_contract));
    PUT("logical_memory", STR(cg_coverage_name(c->logical_memory)));
    PUT("physical_memory", STR(cg_coverage_name(c->physical_memory)));
    PUT("device_timing", STR(cg_coverage_name(c->device_timing)));
    PUT("required_semantic_labels", cg_strlist_to_json(a, &c->required_semantic_labels));
    /* Compatibility choice (docs/compatibility.md): the trace/10 partition lists are
     * plain Vec fields upstream (serde default on read, always serialized), so they
     * are always written, empty when the contract is legacy. */
    PUT("gpu_expected_semantic_labels", cg_strlist_to_json(a, &c->gpu_expected_semantic_labels));
    PUT("cpu_only_semantic_labels", cg_strlist_to_json(a, &c->cpu_only_semantic_labels));
    return o;
}

cg_jv *cg_comparison_identity_to_json(cg_arena *a, const cg_comparison_identity *id) {
    cg_jv *o = cg_jv_obj(a);
    if (id->implementation_id) PUT("implementation_id", STR(id->implementation_id));
    PUT("workload_id", STR(id->workload_id));
    PUT("model_id", STR(id->model_id));
    PUT("config_id", STR(id->config_id));
    PUT("data_id", STR(id->data_id));
    PUT("seed_policy", STR(id->seed_policy));
    PUT("physical_batch", cg_jv_u64(a, id->physical_batch));
    PUT("accumulation_steps", cg_jv_u64(a, id->accumulation_steps));
    PUT("precision", STR(id->precision));
    PUT("device_state", STR(id->device_state));
    if (id->pair_id) PUT("pair_id", STR(id->pair_id));
    return o;
}

static void put_meta_fields(cg_arena *a, cg_jv *o, const cg_run_meta *m) {
    PUT("run_id", STR(m->run_id));
    PUT("correlation_id", STR(m->correlation_id));
    PUT("entrypoint", STR(m->entrypoint));
    PUT("phase", STR(cg_phase_name(m->phase)));
    PUT("timestamp", STR(m->timestamp));
    PUT("capture_step", cg_jv_u64(a, m->capture_step));
    PUT("warmup_steps", cg_jv_u64(a, m->warmup_steps));
    PUT("device", STR(m->device));
    PUT("measured_region_device_synchronized", cg_jv_bool(a, m->measured_region_device_synchronized));
    PUT("timing_mode", STR(cg_timing_mode_name(m->timing_mode)));
    PUT("capture_contract", cg_capture_contract_to_json(a, &m->contract));
    if (m->identity) PUT("comparison_identity", cg_comparison_identity_to_json(a, m->identity));
    cg_jv *tags = cg_jv_obj(a);
    for (size_t i = 0; i < m->n_tags; i++) cg_jv_obj_put(a, tags, cg_arena_strdup(a, m->tags[i].key), STR(m->tags[i].value));
    PUT("tags", tags);
    if (m->candle_version) PUT("candle_version", STR(m->candle_version));
}

cg_jv *cg_run_meta_to_json(cg_arena *a, const cg_run_meta *m) {
    cg_jv *o = cg_jv_obj(a);
    put_meta_fields(a, o, m);
    return o;
}

static cg_jv *event(cg_arena *a, const char *kind) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "kind", cg_jv_str_nocopy(a, kind));
    return o;
}

cg_jv *cg_event_meta_json(cg_arena *a, const char *schema, const cg_run_meta *m) {
    cg_jv *o = event(a, "meta");
    PUT("schema", STR(schema));
    put_meta_fields(a, o, m);
    return o;
}

cg_jv *cg_event_span_start_json(cg_arena *a, const cg_span *s) {
    cg_jv *o = event(a, "span_start");
    PUT("id", STR(s->id));
    if (s->parent_id) PUT("parent_id", STR(s->parent_id));
    PUT("name", STR(s->name));
    PUT("start_ns", cg_jv_u64(a, s->start_ns));
    PUT("span_kind", STR(cg_span_kind_name(s->kind)));
    PUT("measured", cg_jv_bool(a, s->measured));
    if (s->step != CG_STEP_NONE) PUT("step", STR(cg_step_name(s->step)));
    return o;
}

cg_jv *cg_event_span_end_json(cg_arena *a, const cg_span *s) {
    cg_jv *o = event(a, "span_end");
    PUT("id", STR(s->id));
    PUT("duration_ns", cg_jv_u64(a, s->duration_ns));
    return o;
}

static void put_op_fields(cg_arena *a, cg_jv *o, const cg_op *op, bool include_derived) {
    PUT("span_id", STR(op->span_id));
    PUT("op_name", STR(op->op_name));
    PUT("inputs", cg_strlist_to_json(a, &op->inputs));
    if (op->output) PUT("output", STR(op->output));
    PUT("shape", cg_shape_to_json(a, &op->shape));
    PUT("dtype", STR(op->dtype));
    PUT("device", STR(op->device));
    PUT("duration_ns", cg_jv_u64(a, op->duration_ns));
    PUT("timestamp_ns", cg_jv_u64(a, op->timestamp_ns));
    if (op->has_output_dense_bytes && (include_derived || !op->output_dense_bytes_derived))
        PUT("output_dense_bytes", cg_jv_u64(a, op->output_dense_bytes));
    PUT("input_dense_bytes", cg_jv_u64(a, op->input_dense_bytes));
}

cg_jv *cg_event_op_json(cg_arena *a, const cg_op *op) {
    cg_jv *o = event(a, "op");
    put_op_fields(a, o, op, false);
    return o;
}

static void put_tensor_fields(cg_arena *a, cg_jv *o, const cg_tensor *t, bool include_derived) {
    PUT("span_id", STR(t->span_id));
    PUT("tensor_id", STR(t->tensor_id));
    if (t->label) PUT("label", STR(t->label));
    PUT("shape", cg_shape_to_json(a, &t->shape));
    PUT("dtype", STR(t->dtype));
    PUT("device", STR(t->device));
    PUT("requires_grad", cg_jv_bool(a, t->requires_grad));
    if (t->has_dense_bytes && (include_derived || !t->dense_bytes_derived))
        PUT("dense_bytes", cg_jv_u64(a, t->dense_bytes));
    PUT("category", STR(cg_category_name(t->category)));
}

cg_jv *cg_event_tensor_json(cg_arena *a, const cg_tensor *t) {
    cg_jv *o = event(a, "tensor");
    put_tensor_fields(a, o, t, false);
    return o;
}

cg_jv *cg_tensor_record_json(cg_arena *a, const cg_tensor *t) {
    cg_jv *o = cg_jv_obj(a);
    put_tensor_fields(a, o, t, true);
    return o;
}

static void put_stats_fields(cg_arena *a, cg_jv *o, const cg_tensor_stats *s) {
    PUT("span_id", STR(s->span_id));
    PUT("label", STR(s->label));
    PUT("shape", cg_shape_to_json(a, &s->shape));
    PUT("dtype", STR(s->dtype));
    PUT("elements", cg_jv_u64(a, s->elements));
    PUT("non_finite", cg_jv_u64(a, s->non_finite));
    PUT("rms", cg_jv_f64(a, s->rms));
    PUT("abs_max", cg_jv_f64(a, s->abs_max));
    PUT("mean", cg_jv_f64(a, s->mean));
}

cg_jv *cg_event_tensor_stats_json(cg_arena *a, const cg_tensor_stats *s) {
    cg_jv *o = event(a, "tensor_stats");
    put_stats_fields(a, o, s);
    return o;
}

cg_jv *cg_tensor_stats_record_json(cg_arena *a, const cg_tensor_stats *s) {
    cg_jv *o = cg_jv_obj(a);
    put_stats_fields(a, o, s);
    return o;
}

cg_jv *cg_event_memory_json(cg_arena *a, const cg_memory *m) {
    cg_jv *o = event(a, "memory");
    PUT("timestamp_ns", cg_jv_u64(a, m->timestamp_ns));
    PUT("storage_id", STR(m->storage_id));
    PUT("tensor_id", STR(m->tensor_id));
    PUT("span_id", STR(m->span_id));
    if (m->op_name) PUT("op_name", STR(m->op_name));
    PUT("device", STR(m->device));
    PUT("bytes", cg_jv_u64(a, m->bytes));
    PUT("action", cg_jv_str_nocopy(a, m->is_free ? "free" : "alloc"));
    PUT("shape", cg_shape_to_json(a, &m->shape));
    PUT("dtype", STR(m->dtype));
    PUT("category", STR(cg_category_name(m->category)));
    return o;
}

cg_jv *cg_event_device_memory_json(cg_arena *a, const cg_device_memory *m) {
    cg_jv *o = event(a, "device_memory");
    PUT("timestamp_ns", cg_jv_u64(a, m->timestamp_ns));
    PUT("device", STR(m->device));
    if (m->has_used) PUT("used_bytes", cg_jv_u64(a, m->used_bytes));
    if (m->has_free) PUT("free_bytes", cg_jv_u64(a, m->free_bytes));
    if (m->has_reserved) PUT("reserved_bytes", cg_jv_u64(a, m->reserved_bytes));
    if (m->has_capacity) PUT("capacity_bytes", cg_jv_u64(a, m->capacity_bytes));
    return o;
}

cg_jv *cg_event_device_interval_json(cg_arena *a, const cg_device_interval *d) {
    cg_jv *o = event(a, "device_interval");
    PUT("span_id", STR(d->span_id));
    PUT("device", STR(d->device));
    PUT("stream_id", STR(d->stream_id));
    PUT("clock_id", STR(d->clock_id));
    PUT("backend", STR(d->backend));
    PUT("start_ns", cg_jv_u64(a, d->start_ns));
    PUT("duration_ns", cg_jv_u64(a, d->duration_ns));
    return o;
}

static void put_gradient_fields(cg_arena *a, cg_jv *o, const cg_gradient *g, bool with_event_id) {
    if (with_event_id) PUT("event_id", STR(g->event_id));
    PUT("root", STR(g->root));
    PUT("key", STR(g->key));
    PUT("state", STR(cg_grad_state_name(g->state)));
    if (g->has_norm) PUT("norm", cg_jv_f64(a, g->norm));
}

cg_jv *cg_event_gradient_json(cg_arena *a, const cg_gradient *g) {
    cg_jv *o = event(a, "gradient");
    put_gradient_fields(a, o, g, true);
    return o;
}

cg_jv *cg_gradient_record_json(cg_arena *a, const cg_gradient *g) {
    cg_jv *o = cg_jv_obj(a);
    put_gradient_fields(a, o, g, false);
    return o;
}

cg_jv *cg_event_edge_json(cg_arena *a, const cg_edge *e) {
    cg_jv *o = event(a, "edge");
    if (e->is_data) {
        PUT("edge_kind", cg_jv_str_nocopy(a, "data"));
        PUT("from_tensor", STR(e->from));
        PUT("to_tensor", STR(e->to));
    } else {
        PUT("edge_kind", cg_jv_str_nocopy(a, "call"));
        PUT("from_span", STR(e->from));
        PUT("to_span", STR(e->to));
        PUT("host_duration_ns", cg_jv_u64(a, e->host_duration_ns));
    }
    return o;
}

cg_jv *cg_event_terminal_json(cg_arena *a, const cg_terminal *t) {
    cg_jv *o = event(a, "terminal");
    PUT("outcome", STR(cg_outcome_name(t->outcome)));
    PUT("timestamp_ns", cg_jv_u64(a, t->timestamp_ns));
    if (t->reason) PUT("reason", STR(t->reason));
    return o;
}

/* ---------------------------------------------------------------- lookup */

const cg_span *cg_trace_find_span(const cg_trace *t, const char *id) {
    size_t lo = 0, hi = t->n_spans;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(t->spans[mid].id, id);
        if (c == 0) return &t->spans[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* ---------------------------------------------------------------- Rust Debug */

void cg_rust_debug_str(cg_buf *b, const char *s) {
    cg_buf_putc(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            cg_buf_putc(b, '\\');
            cg_buf_putc(b, (char)c);
        } else if (c == '\n') cg_buf_puts(b, "\\n");
        else if (c == '\r') cg_buf_puts(b, "\\r");
        else if (c == '\t') cg_buf_puts(b, "\\t");
        else if (c == 0x7f || c < 0x20) cg_buf_printf(b, "\\u{%x}", c);
        else if (c == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9f) { /* C1 control U+0080..U+009F */
            cg_buf_printf(b, "\\u{%x}", (unsigned)p[1]);
            p++;
        } else cg_buf_putc(b, (char)c);
    }
    cg_buf_putc(b, '"');
}

/* Rust prints finite f64 Debug like serde_json's ryu except below 1e-4, where it
 * switches to exponent form one decade earlier (1e-5 rather than 0.00001). */
void cg_rust_debug_f64(cg_buf *b, double d) {
    if (d == 0 || !isfinite(d) || fabs(d) >= 1e-4) {
        if (isnan(d)) cg_buf_puts(b, "NaN");
        else if (isinf(d)) cg_buf_puts(b, d < 0 ? "-inf" : "inf");
        else cg_json_write_f64(b, d);
        return;
    }
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, d);
        if (strtod(tmp, NULL) == d) break;
    }
    char *e = strchr(tmp, 'e'), *m_end = e;
    if (strchr(tmp, '.'))
        while (m_end[-1] == '0') m_end--;
    if (m_end[-1] == '.') m_end--;
    cg_buf_append(b, tmp, (size_t)(m_end - tmp));
    cg_buf_printf(b, "e%ld", strtol(e + 1, NULL, 10));
}
