/* model.c — enum wire names, dtype sizes and the JSON shape of every trace record. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace.h"
#include "trace/wire.h"

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

#define WIRE_ENUM(var, arr) const wire_enum var = {arr, sizeof arr / sizeof arr[0]};
WIRE_ENUM(wire_enum_phase, phase_names)
WIRE_ENUM(wire_enum_timing_mode, timing_names)
WIRE_ENUM(wire_enum_coverage, coverage_names)
WIRE_ENUM(wire_enum_scope, scope_names)
WIRE_ENUM(wire_enum_span_kind, span_kind_names)
WIRE_ENUM(wire_enum_step, step_names)
WIRE_ENUM(wire_enum_category, category_names)
WIRE_ENUM(wire_enum_grad_state, grad_names)
WIRE_ENUM(wire_enum_family_expectation, family_names)
WIRE_ENUM(wire_enum_outcome, outcome_names)

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

/* Every trace record's JSON is written from its table in wire.c. */

cg_jv *cg_capture_contract_to_json(cg_arena *a, const cg_capture_contract *c) {
    cg_jv *o = cg_jv_obj(a);
    wire_encode(a, o, &wire_capture_contract, c, false);
    return o;
}

cg_jv *cg_comparison_identity_to_json(cg_arena *a, const cg_comparison_identity *id) {
    cg_jv *o = cg_jv_obj(a);
    wire_encode(a, o, &wire_comparison_identity, id, false);
    return o;
}

cg_jv *cg_run_meta_to_json(cg_arena *a, const cg_run_meta *m) {
    cg_jv *o = cg_jv_obj(a);
    wire_encode(a, o, &wire_run_meta, m, false);
    return o;
}

/* {"kind": kind, ...fields of rec} */
static cg_jv *event(cg_arena *a, const char *kind, const wire_record *rec, const void *in) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "kind", cg_jv_str_nocopy(a, kind));
    wire_encode(a, o, rec, in, false);
    return o;
}

cg_jv *cg_event_meta_json(cg_arena *a, const char *schema, const cg_run_meta *m) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "kind", cg_jv_str_nocopy(a, "meta"));
    PUT("schema", STR(schema));
    wire_encode(a, o, &wire_run_meta, m, false);
    return o;
}

cg_jv *cg_event_span_start_json(cg_arena *a, const cg_span *s) { return event(a, "span_start", &wire_span_start, s); }

cg_jv *cg_event_span_end_json(cg_arena *a, const cg_span *s) {
    wire_span_end_rec e = {s->id, s->duration_ns};
    return event(a, "span_end", &wire_span_end, &e);
}

cg_jv *cg_event_op_json(cg_arena *a, const cg_op *op) { return event(a, "op", &wire_op, op); }
cg_jv *cg_event_tensor_json(cg_arena *a, const cg_tensor *t) { return event(a, "tensor", &wire_tensor, t); }

cg_jv *cg_tensor_record_json(cg_arena *a, const cg_tensor *t) {
    cg_jv *o = cg_jv_obj(a);
    wire_encode(a, o, &wire_tensor, t, true);
    return o;
}

cg_jv *cg_event_tensor_stats_json(cg_arena *a, const cg_tensor_stats *s) {
    return event(a, "tensor_stats", &wire_tensor_stats, s);
}

cg_jv *cg_tensor_stats_record_json(cg_arena *a, const cg_tensor_stats *s) {
    cg_jv *o = cg_jv_obj(a);
    wire_encode(a, o, &wire_tensor_stats, s, false);
    return o;
}

cg_jv *cg_event_memory_json(cg_arena *a, const cg_memory *m) { return event(a, "memory", &wire_memory, m); }

cg_jv *cg_event_device_memory_json(cg_arena *a, const cg_device_memory *m) {
    return event(a, "device_memory", &wire_device_memory, m);
}

cg_jv *cg_event_device_interval_json(cg_arena *a, const cg_device_interval *d) {
    return event(a, "device_interval", &wire_device_interval, d);
}

cg_jv *cg_event_gradient_json(cg_arena *a, const cg_gradient *g) { return event(a, "gradient", &wire_gradient, g); }

/* GradientRecord of graph/evidence: the event's fields without event_id. */
cg_jv *cg_gradient_record_json(cg_arena *a, const cg_gradient *g) {
    cg_jv *o = cg_jv_obj(a);
    PUT("root", STR(g->root));
    PUT("key", STR(g->key));
    PUT("state", STR(cg_grad_state_name(g->state)));
    if (g->has_norm) PUT("norm", cg_jv_f64(a, g->norm));
    return o;
}

cg_jv *cg_event_edge_json(cg_arena *a, const cg_edge *e) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "kind", cg_jv_str_nocopy(a, "edge"));
    PUT("edge_kind", cg_jv_str_nocopy(a, e->is_data ? "data" : "call"));
    wire_encode(a, o, e->is_data ? &wire_data_edge : &wire_call_edge, e, false);
    return o;
}

cg_jv *cg_event_terminal_json(cg_arena *a, const cg_terminal *t) { return event(a, "terminal", &wire_terminal, t); }

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

/* Rust's `{}` (Display) of a finite f64: shortest round-trip digits, never an
 * exponent (1e20 is 100000000000000000000, 1.0 is 1, -0.0 is -0). */
void cg_rust_display_f64(cg_buf *b, double d) {
    if (signbit(d)) cg_buf_putc(b, '-');
    d = fabs(d);
    if (d == 0 || !isfinite(d)) {
        cg_buf_puts(b, d == 0 ? "0" : isnan(d) ? "NaN" : "inf");
        return;
    }
    char tmp[40], digits[24];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, d);
        if (strtod(tmp, NULL) == d) break;
    }
    int nd = 0;
    const char *p = tmp;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[nd++] = *p;
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    int kk = (int)strtol(p + 1, NULL, 10) + 1; /* digits are 0.DDD × 10^kk */
    if (kk <= 0) {
        cg_buf_puts(b, "0.");
        for (int i = 0; i < -kk; i++) cg_buf_putc(b, '0');
        cg_buf_append(b, digits, (size_t)nd);
    } else if (kk >= nd) {
        cg_buf_append(b, digits, (size_t)nd);
        for (int i = nd; i < kk; i++) cg_buf_putc(b, '0');
    } else {
        cg_buf_append(b, digits, (size_t)kk);
        cg_buf_putc(b, '.');
        cg_buf_append(b, digits + kk, (size_t)(nd - kk));
    }
}

void cg_serde_unexpected(cg_buf *b, const cg_jv *v) { wire_unexpected(b, v); }

cg_comparison_identity *cg_comparison_identity_copy(cg_arena *a, const cg_comparison_identity *id) {
    if (!id) return NULL;
    cg_comparison_identity *c = cg_arena_alloc(a, sizeof *c);
    *c = *id;
    const char **strs[] = {&c->implementation_id, &c->workload_id, &c->model_id, &c->config_id, &c->data_id,
                           &c->seed_policy, &c->precision, &c->device_state, &c->pair_id};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) *strs[i] = cg_arena_strdup_opt(a, *strs[i]);
    return c;
}
