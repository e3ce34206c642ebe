/* wire.c — the table of every trace/10 wire record and the one decoder and
 * encoder they drive (wire.h). The decoder restates serde's derive semantics
 * over an already parsed JSON value (what serde_json's Content buffering of an
 * internally tagged enum hands the variant): messages carry no position. */
#include "trace/wire.h"
#include "base/alloc.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- tables */

#define NL(nm) (sizeof(nm) - 1)
#define FLD(nm, ty, st, mem) {nm, ty, offsetof(st, mem), 0, 0, NULL, 0, NL(nm)}
#define FLDE(nm, ty, st, mem, en, d) {nm, ty, offsetof(st, mem), 0, sizeof(((st *)0)->mem), &en, d, NL(nm)}
#define FLDA(nm, ty, st, mem, aux) {nm, ty, offsetof(st, mem), offsetof(st, aux), 0, NULL, 0, NL(nm)}
#define FLDS(nm, ty, st, mem, rec) {nm, ty, offsetof(st, mem), 0, 0, &rec, 0, NL(nm)}
#define FLDSQ(nm, st, mem, cnt, rec) {nm, W_SEQ, offsetof(st, mem), offsetof(st, cnt), 0, &rec, 0, NL(nm)}
/* A W_OU64_DERIVED field: value, presence flag, derived flag. */
#define FLDD(nm, st, mem, has, derived) \
    {nm, W_OU64_DERIVED, offsetof(st, mem), offsetof(st, has), offsetof(st, derived), NULL, 0, NL(nm)}
#define RECORD(var, expecting, st, tab) \
    const wire_record var = {expecting, tab, sizeof tab / sizeof tab[0], sizeof(st)}

static const char *const action_names[] = {"alloc", "free"};
static const wire_enum wire_enum_action = {action_names, 2};

static const wire_field expected_gradient_fields[] = {
    FLD("root", W_STR, cg_expected_gradient, root),
    FLD("key", W_STR, cg_expected_gradient, key),
    FLD("family", W_STR, cg_expected_gradient, family),
};
static RECORD(wire_expected_gradient, "struct ExpectedGradient", cg_expected_gradient, expected_gradient_fields);

static const wire_field family_fields[] = {
    FLD("family", W_STR, cg_family_contract, family),
    FLDE("expectation", W_ENUM, cg_family_contract, expectation, wire_enum_family_expectation, 0),
    FLD("min_present", W_USIZE, cg_family_contract, min_present),
};
static RECORD(wire_family_contract, "struct GradientFamilyContract", cg_family_contract, family_fields);

static const wire_field gradient_contract_fields[] = {
    FLD("manifest_sha256", W_STR, cg_gradient_contract, manifest_sha256),
    FLDSQ("expected", cg_gradient_contract, expected, n_expected, wire_expected_gradient),
    FLDSQ("families", cg_gradient_contract, families, n_families, wire_family_contract),
};
RECORD(wire_gradient_contract, "struct GradientContract", cg_gradient_contract, gradient_contract_fields);

static const wire_field capture_contract_fields[] = {
    FLDE("measurement_scope", W_ENUM, cg_capture_contract, measurement_scope, wire_enum_scope, 0),
    FLDE("operations", W_ENUM, cg_capture_contract, operations, wire_enum_coverage, 0),
    FLDE("tensors", W_ENUM_DEF, cg_capture_contract, tensors, wire_enum_coverage, CG_COV_NONE),
    FLDE("gradients", W_ENUM_DEF, cg_capture_contract, gradients, wire_enum_coverage, CG_COV_NONE),
    FLDS("gradient_contract", W_OSTRUCT, cg_capture_contract, gradient_contract, wire_gradient_contract),
    FLDE("logical_memory", W_ENUM, cg_capture_contract, logical_memory, wire_enum_coverage, 0),
    FLDE("physical_memory", W_ENUM, cg_capture_contract, physical_memory, wire_enum_coverage, 0),
    FLDE("device_timing", W_ENUM, cg_capture_contract, device_timing, wire_enum_coverage, 0),
    FLD("required_semantic_labels", W_STRLIST_DEF, cg_capture_contract, required_semantic_labels),
    FLD("gpu_expected_semantic_labels", W_STRLIST_SKIP, cg_capture_contract, gpu_expected_semantic_labels),
    FLD("cpu_only_semantic_labels", W_STRLIST_SKIP, cg_capture_contract, cpu_only_semantic_labels),
};
RECORD(wire_capture_contract, "struct CaptureContract", cg_capture_contract, capture_contract_fields);

static const wire_field identity_fields[] = {
    FLD("implementation_id", W_OSTR, cg_comparison_identity, implementation_id),
    FLD("workload_id", W_STR, cg_comparison_identity, workload_id),
    FLD("model_id", W_STR, cg_comparison_identity, model_id),
    FLD("config_id", W_STR, cg_comparison_identity, config_id),
    FLD("data_id", W_STR, cg_comparison_identity, data_id),
    FLD("seed_policy", W_STR, cg_comparison_identity, seed_policy),
    FLD("physical_batch", W_U64, cg_comparison_identity, physical_batch),
    FLD("accumulation_steps", W_U64, cg_comparison_identity, accumulation_steps),
    FLD("precision", W_STR, cg_comparison_identity, precision),
    FLD("device_state", W_STR, cg_comparison_identity, device_state),
    FLD("pair_id", W_OSTR, cg_comparison_identity, pair_id),
};
RECORD(wire_comparison_identity, "struct ComparisonIdentity", cg_comparison_identity, identity_fields);

static const wire_field run_meta_fields[] = {
    FLD("run_id", W_STR, cg_run_meta, run_id),
    FLD("correlation_id", W_STR, cg_run_meta, correlation_id),
    FLD("entrypoint", W_STR, cg_run_meta, entrypoint),
    FLDE("phase", W_ENUM, cg_run_meta, phase, wire_enum_phase, 0),
    FLD("timestamp", W_STR, cg_run_meta, timestamp),
    FLD("capture_step", W_U64, cg_run_meta, capture_step),
    FLD("warmup_steps", W_U64, cg_run_meta, warmup_steps),
    FLD("device", W_STR, cg_run_meta, device),
    FLD("measured_region_device_synchronized", W_BOOL_DEF, cg_run_meta, measured_region_device_synchronized),
    FLDE("timing_mode", W_ENUM, cg_run_meta, timing_mode, wire_enum_timing_mode, 0),
    FLDS("capture_contract", W_STRUCT, cg_run_meta, contract, wire_capture_contract),
    FLDS("comparison_identity", W_OSTRUCT, cg_run_meta, identity, wire_comparison_identity),
    FLDA("tags", W_TAGS, cg_run_meta, tags, n_tags),
    FLD("candle_version", W_OSTR, cg_run_meta, candle_version),
};
RECORD(wire_run_meta, "struct TraceRunMeta", cg_run_meta, run_meta_fields);

static const wire_field span_start_fields[] = {
    FLD("id", W_ID, cg_span, id),
    FLD("parent_id", W_OSTR, cg_span, parent_id),
    FLD("name", W_STR, cg_span, name),
    FLD("start_ns", W_U64, cg_span, start_ns),
    FLDE("span_kind", W_ENUM, cg_span, kind, wire_enum_span_kind, 0),
    FLD("measured", W_BOOL_DEF, cg_span, measured),
    FLDE("step", W_OENUM, cg_span, step, wire_enum_step, 0),
};
RECORD(wire_span_start, "struct SpanStartEvent", cg_span, span_start_fields);

static const wire_field span_end_fields[] = {
    FLD("id", W_STR, wire_span_end_rec, id),
    FLD("duration_ns", W_U64_DEF, wire_span_end_rec, duration_ns),
};
RECORD(wire_span_end, "struct SpanEndEvent", wire_span_end_rec, span_end_fields);

static const wire_field op_fields[] = {
    FLD("span_id", W_STR, cg_op, span_id),
    FLD("op_name", W_STR, cg_op, op_name),
    FLD("inputs", W_STRLIST_DEF, cg_op, inputs),
    FLD("output", W_OSTR, cg_op, output),
    FLD("shape", W_SHAPE, cg_op, shape),
    FLD("dtype", W_STR, cg_op, dtype),
    FLD("device", W_STR, cg_op, device),
    FLD("duration_ns", W_U64, cg_op, duration_ns),
    FLD("timestamp_ns", W_U64_DEF, cg_op, timestamp_ns),
    FLDD("output_dense_bytes", cg_op, output_dense_bytes, has_output_dense_bytes, output_dense_bytes_derived),
    FLD("input_dense_bytes", W_U64, cg_op, input_dense_bytes),
};
RECORD(wire_op, "struct OpEvent", cg_op, op_fields);

static const wire_field tensor_fields[] = {
    FLD("span_id", W_STR, cg_tensor, span_id),
    FLD("tensor_id", W_ID, cg_tensor, tensor_id),
    FLD("label", W_OSTR, cg_tensor, label),
    FLD("shape", W_SHAPE, cg_tensor, shape),
    FLD("dtype", W_STR, cg_tensor, dtype),
    FLD("device", W_STR, cg_tensor, device),
    FLD("requires_grad", W_BOOL_DEF, cg_tensor, requires_grad),
    FLDD("dense_bytes", cg_tensor, dense_bytes, has_dense_bytes, dense_bytes_derived),
    FLDE("category", W_ENUM_DEF, cg_tensor, category, wire_enum_category, CG_CAT_OTHER),
};
RECORD(wire_tensor, "struct TensorEvent", cg_tensor, tensor_fields);

static const wire_field tensor_stats_fields[] = {
    FLD("span_id", W_STR, cg_tensor_stats, span_id),
    FLD("label", W_STR, cg_tensor_stats, label),
    FLD("shape", W_SHAPE, cg_tensor_stats, shape),
    FLD("dtype", W_STR, cg_tensor_stats, dtype),
    FLD("elements", W_U64, cg_tensor_stats, elements),
    FLD("non_finite", W_U64, cg_tensor_stats, non_finite),
    FLD("rms", W_F64, cg_tensor_stats, rms),
    FLD("abs_max", W_F64, cg_tensor_stats, abs_max),
    FLD("mean", W_F64, cg_tensor_stats, mean),
};
RECORD(wire_tensor_stats, "struct TensorStatsEvent", cg_tensor_stats, tensor_stats_fields);

static const wire_field memory_fields[] = {
    FLD("timestamp_ns", W_U64, cg_memory, timestamp_ns),
    FLD("storage_id", W_ID, cg_memory, storage_id),
    FLD("tensor_id", W_STR, cg_memory, tensor_id),
    FLD("span_id", W_STR, cg_memory, span_id),
    FLD("op_name", W_OSTR, cg_memory, op_name),
    FLD("device", W_STR, cg_memory, device),
    FLD("bytes", W_U64, cg_memory, bytes),
    FLDE("action", W_ENUM_BOOL, cg_memory, is_free, wire_enum_action, 0),
    FLD("shape", W_SHAPE_DEF, cg_memory, shape),
    FLD("dtype", W_STR, cg_memory, dtype),
    FLDE("category", W_ENUM_DEF, cg_memory, category, wire_enum_category, CG_CAT_OTHER),
};
RECORD(wire_memory, "struct MemoryEvent", cg_memory, memory_fields);

static const wire_field device_memory_fields[] = {
    FLD("timestamp_ns", W_U64, cg_device_memory, timestamp_ns),
    FLD("device", W_STR, cg_device_memory, device),
    FLDA("used_bytes", W_OU64, cg_device_memory, used_bytes, has_used),
    FLDA("free_bytes", W_OU64, cg_device_memory, free_bytes, has_free),
    FLDA("reserved_bytes", W_OU64, cg_device_memory, reserved_bytes, has_reserved),
    FLDA("capacity_bytes", W_OU64, cg_device_memory, capacity_bytes, has_capacity),
};
RECORD(wire_device_memory, "struct DeviceMemoryEvent", cg_device_memory, device_memory_fields);

static const wire_field device_interval_fields[] = {
    FLD("span_id", W_STR, cg_device_interval, span_id),
    FLD("device", W_STR, cg_device_interval, device),
    FLD("stream_id", W_STR, cg_device_interval, stream_id),
    FLD("clock_id", W_STR, cg_device_interval, clock_id),
    FLD("backend", W_STR, cg_device_interval, backend),
    FLD("start_ns", W_U64, cg_device_interval, start_ns),
    FLD("duration_ns", W_U64, cg_device_interval, duration_ns),
};
RECORD(wire_device_interval, "struct DeviceIntervalEvent", cg_device_interval, device_interval_fields);

static const wire_field gradient_fields[] = {
    FLD("event_id", W_ID, cg_gradient, event_id),
    FLD("root", W_STR, cg_gradient, root),
    FLD("key", W_STR, cg_gradient, key),
    FLDE("state", W_ENUM, cg_gradient, state, wire_enum_grad_state, 0),
    FLDA("norm", W_OF64, cg_gradient, norm, has_norm),
};
RECORD(wire_gradient, "struct GradientEvent", cg_gradient, gradient_fields);

static const wire_field call_edge_fields[] = {
    FLD("from_span", W_STR, cg_edge, from),
    FLD("to_span", W_STR, cg_edge, to),
    FLD("host_duration_ns", W_U64, cg_edge, host_duration_ns),
};
RECORD(wire_call_edge, "struct variant EdgeEvent::Call", cg_edge, call_edge_fields);

static const wire_field data_edge_fields[] = {
    FLD("from_tensor", W_STR, cg_edge, from),
    FLD("to_tensor", W_STR, cg_edge, to),
};
RECORD(wire_data_edge, "struct variant EdgeEvent::Data", cg_edge, data_edge_fields);

static const wire_field terminal_fields[] = {
    FLDE("outcome", W_ENUM, cg_terminal, outcome, wire_enum_outcome, 0),
    FLD("timestamp_ns", W_U64, cg_terminal, timestamp_ns),
    FLD("reason", W_OSTR, cg_terminal, reason),
};
RECORD(wire_terminal, "struct TerminalEvent", cg_terminal, terminal_fields);

/* ---------------------------------------------------------------- messages */

/* Messages follow the oracle's serde 1.0.152 / serde_json 1.0.87: null is
 * "null", floats use Rust's Display. */
void wire_unexpected(cg_buf *b, const cg_jv *v) {
    switch (v->type) {
    case CG_JNULL: cg_buf_puts(b, "null"); return;
    case CG_JBOOL: cg_buf_puts(b, v->u.b ? "boolean `true`" : "boolean `false`"); return;
    case CG_JINT: cg_buf_printf(b, "integer `%s%llu`", v->u.i.neg ? "-" : "", (unsigned long long)v->u.i.mag); return;
    case CG_JREAL:
        cg_buf_puts(b, "floating point `");
        cg_rust_display_f64(b, v->u.d);
        cg_buf_putc(b, '`');
        return;
    case CG_JSTR:
        cg_buf_puts(b, "string ");
        cg_rust_debug_str(b, v->u.str.s);
        return;
    case CG_JARR:
    case CG_JLAZY: cg_buf_puts(b, "sequence"); return;
    case CG_JOBJ: cg_buf_puts(b, "map"); return;
    }
}

void wire_unknown_variant(cg_buf *b, const char *variant, const char *const *names, size_t n) {
    size_t first = n && !names[0] ? 1 : 0, count = n - first;
    cg_buf_printf(b, "unknown variant `%s`, ", variant);
    if (count == 0) {
        cg_buf_puts(b, "there are no variants");
        return;
    }
    cg_buf_puts(b, count == 1 ? "expected " : count == 2 ? "expected " : "expected one of ");
    for (size_t i = first; i < n; i++) {
        if (i > first) cg_buf_puts(b, count == 2 ? " or " : ", ");
        cg_buf_printf(b, "`%s`", names[i]);
    }
}

static int invalid_type(cg_buf *msg, const cg_jv *v, const char *expected) {
    cg_buf_reset(msg);
    cg_buf_puts(msg, "invalid type: ");
    wire_unexpected(msg, v);
    cg_buf_printf(msg, ", expected %s", expected);
    return -1;
}

/* ---------------------------------------------------------------- decoding */

typedef struct dctx {
    const wire_sink *sink;
    cg_buf *msg;
} dctx;

static int decode_struct(dctx *d, const wire_record *rec, const cg_jv *obj, void *out);

static int dec_str(dctx *d, const cg_jv *v, bool copy, const char **out) {
    if (v->type != CG_JSTR) return invalid_type(d->msg, v, "a string");
    const wire_sink *s = d->sink;
    *out = (copy ? s->copy : s->intern)(s->ctx, v->u.str.s, v->u.str.len);
    return 0;
}

static int dec_u64(dctx *d, const cg_jv *v, const char *what, uint64_t *out) {
    if (v->type == CG_JINT && !v->u.i.neg) {
        *out = v->u.i.mag;
        return 0;
    }
    if (v->type == CG_JINT) {
        cg_buf_reset(d->msg);
        cg_buf_printf(d->msg, "invalid value: integer `-%llu`, expected %s", (unsigned long long)v->u.i.mag, what);
        return -1;
    }
    return invalid_type(d->msg, v, what);
}

static int dec_f64(dctx *d, const cg_jv *v, double *out) {
    if (v->type == CG_JINT) *out = v->u.i.neg ? -(double)v->u.i.mag : (double)v->u.i.mag;
    else if (v->type == CG_JREAL) *out = v->u.d;
    else return invalid_type(d->msg, v, "f64");
    return 0;
}

/* A unit variant: a string, or a map with a single key whose value is null. */
static int dec_enum(dctx *d, const cg_jv *v, const wire_enum *e, int *out) {
    const char *name;
    if (v->type == CG_JSTR) {
        name = v->u.str.s;
    } else if (v->type == CG_JOBJ && v->u.obj.n == 1) {
        name = v->u.obj.m[0].key;
        if (v->u.obj.m[0].val->type != CG_JNULL) return invalid_type(d->msg, v->u.obj.m[0].val, "unit");
    } else if (v->type == CG_JOBJ) {
        cg_buf_reset(d->msg);
        cg_buf_puts(d->msg, "invalid value: map, expected map with a single key");
        return -1;
    } else {
        return invalid_type(d->msg, v, "string or map");
    }
    for (size_t i = 0; i < e->n; i++)
        if (e->names[i] && !strcmp(e->names[i], name)) {
            *out = (int)i;
            return 0;
        }
    cg_buf_reset(d->msg);
    wire_unknown_variant(d->msg, name, e->names, e->n);
    return -1;
}

static int dec_strlist(dctx *d, const cg_jv *v, cg_strlist *out) {
    if (v->type != CG_JARR) return invalid_type(d->msg, v, "a sequence");
    out->n = v->u.arr.n;
    out->items = out->n ? cg_arena_alloc(d->sink->arena, out->n * sizeof *out->items) : NULL;
    for (size_t i = 0; i < out->n; i++)
        if (dec_str(d, v->u.arr.items[i], false, &out->items[i])) return -1;
    return 0;
}

static int dec_shape(dctx *d, const cg_jv *v, cg_shape *out) {
    if (v->type != CG_JARR) return invalid_type(d->msg, v, "a sequence");
    size_t n = v->u.arr.n;
    uint64_t tmp[WIRE_SHAPE_STACK];
    uint64_t *dims = n <= WIRE_SHAPE_STACK ? tmp : cg_arena_alloc(d->sink->arena, n * sizeof *dims);
    for (size_t i = 0; i < n; i++)
        if (dec_u64(d, v->u.arr.items[i], "usize", &dims[i])) return -1;
    out->n = n;
    out->dims = n <= WIRE_SHAPE_STACK ? d->sink->dims(d->sink->ctx, tmp, n) : dims;
    return 0;
}

typedef struct kv_at {
    cg_kv kv;
    size_t at;
} kv_at;

static int cmp_kv_at(const void *x, const void *y) {
    const kv_at *p = x, *q = y;
    int c = strcmp(p->kv.key, q->kv.key);
    return c ? c : (p->at > q->at) - (p->at < q->at);
}

/* BTreeMap<String, String>: sorted by key, a repeated key keeps its last value. */
static int dec_tags(dctx *d, const cg_jv *v, cg_kv **out, size_t *n_out) {
    if (v->type != CG_JOBJ) return invalid_type(d->msg, v, "a map");
    size_t n = v->u.obj.n, w = 0;
    kv_at *tmp = cg_xalloc(n, sizeof *tmp);
    for (size_t i = 0; i < n; i++) {
        const cg_jmember *m = &v->u.obj.m[i];
        tmp[i].at = i;
        tmp[i].kv.key = d->sink->intern(d->sink->ctx, m->key, m->key_len);
        if (dec_str(d, m->val, false, &tmp[i].kv.value)) {
            cg_free(tmp);
            return -1;
        }
    }
    qsort(tmp, n, sizeof *tmp, cmp_kv_at);
    cg_kv *kv = n ? cg_arena_alloc(d->sink->arena, n * sizeof *kv) : NULL;
    for (size_t i = 0; i < n; i++) {
        if (w && !strcmp(kv[w - 1].key, tmp[i].kv.key)) kv[w - 1] = tmp[i].kv;
        else kv[w++] = tmp[i].kv;
    }
    cg_free(tmp);
    *out = kv;
    *n_out = w;
    return 0;
}

static int dec_seq(dctx *d, const cg_jv *v, const wire_record *sub, void **out, size_t *n_out) {
    if (v->type != CG_JARR) return invalid_type(d->msg, v, "a sequence");
    size_t n = v->u.arr.n;
    char *items = cg_arena_zalloc(d->sink->arena, (n ? n : 1) * sub->size);
    for (size_t i = 0; i < n; i++)
        if (decode_struct(d, sub, v->u.arr.items[i], items + i * sub->size)) return -1;
    *out = items;
    *n_out = n;
    return 0;
}

#define AT(T, base, off) ((T *)((char *)(base) + (off)))

static int set_enum(dctx *d, const wire_field *f, const cg_jv *v, void *out) {
    int x;
    if (dec_enum(d, v, f->sub, &x)) return -1;
    if (f->type == W_ENUM_BOOL) *AT(bool, out, f->off) = x == 1;
    else wire_enum_put(f, out, x);
    return 0;
}

static int dec_field(dctx *d, const wire_field *f, const cg_jv *v, void *out) {
    bool null = v->type == CG_JNULL;
    switch (f->type) {
    case W_STR: return dec_str(d, v, false, AT(const char *, out, f->off));
    case W_ID: return dec_str(d, v, true, AT(const char *, out, f->off));
    case W_OSTR: return null ? 0 : dec_str(d, v, false, AT(const char *, out, f->off));
    case W_U64:
    case W_U64_DEF: return dec_u64(d, v, "u64", AT(uint64_t, out, f->off));
    case W_USIZE: return dec_u64(d, v, "usize", AT(uint64_t, out, f->off));
    case W_OU64:
    case W_OU64_DERIVED:
        if (null) return 0;
        *AT(bool, out, f->aux) = true;
        return dec_u64(d, v, "u64", AT(uint64_t, out, f->off));
    case W_F64: return dec_f64(d, v, AT(double, out, f->off));
    case W_OF64:
        if (null) return 0;
        *AT(bool, out, f->aux) = true;
        return dec_f64(d, v, AT(double, out, f->off));
    case W_BOOL_DEF:
        if (v->type != CG_JBOOL) return invalid_type(d->msg, v, "a boolean");
        *AT(bool, out, f->off) = v->u.b;
        return 0;
    case W_OENUM:
        if (null) return 0;
        /* fall through */
    case W_ENUM:
    case W_ENUM_DEF:
    case W_ENUM_BOOL: return set_enum(d, f, v, out);
    case W_STRLIST_DEF:
    case W_STRLIST_SKIP: return dec_strlist(d, v, AT(cg_strlist, out, f->off));
    case W_SHAPE:
    case W_SHAPE_DEF: return dec_shape(d, v, AT(cg_shape, out, f->off));
    case W_TAGS: return dec_tags(d, v, AT(cg_kv *, out, f->off), AT(size_t, out, f->aux));
    case W_STRUCT: return decode_struct(d, f->sub, v, AT(char, out, f->off));
    case W_OSTRUCT: {
        if (null) return 0;
        const wire_record *sub = f->sub;
        void *p = cg_arena_zalloc(d->sink->arena, sub->size);
        *AT(void *, out, f->off) = p;
        return decode_struct(d, sub, v, p);
    }
    case W_SEQ: return dec_seq(d, v, f->sub, AT(void *, out, f->off), AT(size_t, out, f->aux));
    }
    return 0;
}


static int field_index(const wire_record *rec, const char *key, size_t len) {
    for (size_t i = 0; i < rec->n_fields; i++)
        if (rec->fields[i].name_len == len && !memcmp(rec->fields[i].name, key, len)) return (int)i;
    return -1;
}

/* serde derive: known fields in input order (a repeat is `duplicate field`,
 * unknown keys are skipped), then missing required fields in declaration order. */
bool wire_required(wire_type t) {
    switch (t) {
    case W_STR: case W_ID: case W_U64: case W_USIZE: case W_F64: case W_ENUM: case W_ENUM_BOOL:
    case W_SHAPE: case W_TAGS: case W_STRUCT: case W_SEQ: return true;
    default: return false;
    }
}

static int invalid_length(dctx *d, size_t len, const char *what, size_t n, const char *unit) {
    cg_buf_reset(d->msg);
    cg_buf_printf(d->msg, "invalid length %zu, expected %s%s%zu element%s%s", len, what, *what ? " with " : "", n,
                  n == 1 ? "" : "s", unit);
    return -1;
}

/* serde derive's visit_seq: fields by position, a #[serde(default)] field may
 * be missing at the end; extra elements fail after the struct. */
static int decode_positional(dctx *d, const wire_record *rec, const cg_jv *arr, void *out) {
    size_t n = arr->u.arr.n;
    for (size_t i = 0; i < rec->n_fields; i++) {
        const wire_field *f = &rec->fields[i];
        if (i < n) {
            if (dec_field(d, f, arr->u.arr.items[i], out)) return -1;
        } else if (wire_required(f->type)) { /* every Option of these records is #[serde(default)] */
            return invalid_length(d, i, rec->expecting, rec->n_fields, "");
        } else if (f->type == W_ENUM_DEF) {
            wire_enum_put(f, out, f->def);
        }
    }
    return n > rec->n_fields ? invalid_length(d, n, "", rec->n_fields, " in sequence") : 0;
}

static int decode_struct(dctx *d, const wire_record *rec, const cg_jv *obj, void *out) {
    if (obj->type == CG_JARR) return decode_positional(d, rec, obj, out);
    if (obj->type != CG_JOBJ) return invalid_type(d->msg, obj, rec->expecting);
    uint32_t seen = 0;
    for (size_t i = 0; i < obj->u.obj.n; i++) {
        const cg_jmember *m = &obj->u.obj.m[i];
        int fi = field_index(rec, m->key, m->key_len);
        if (fi < 0) continue;
        if (seen & (1u << fi)) {
            cg_buf_reset(d->msg);
            cg_buf_printf(d->msg, "duplicate field `%s`", rec->fields[fi].name);
            return -1;
        }
        seen |= 1u << fi;
        if (dec_field(d, &rec->fields[fi], m->val, out)) return -1;
    }
    for (size_t i = 0; i < rec->n_fields; i++) {
        const wire_field *f = &rec->fields[i];
        if (seen & (1u << i)) continue;
        if (wire_required(f->type)) {
            cg_buf_reset(d->msg);
            cg_buf_printf(d->msg, "missing field `%s`", f->name);
            return -1;
        }
        if (f->type == W_ENUM_DEF) wire_enum_put(f, out, f->def);
    }
    return 0;
}

int wire_decode(const wire_record *rec, const cg_jv *obj, void *out, const wire_sink *sink, cg_buf *msg) {
    dctx d = {sink, msg};
    return decode_struct(&d, rec, obj, out);
}

/* ---------------------------------------------------------------- encoding */

static cg_jv *enc_struct(cg_arena *a, const wire_record *rec, const void *in, bool include_derived) {
    cg_jv *o = cg_jv_obj(a);
    wire_encode(a, o, rec, in, include_derived);
    return o;
}

static cg_jv *enc_tags(cg_arena *a, const cg_kv *kv, size_t n) {
    cg_jv *o = cg_jv_obj(a);
    for (size_t i = 0; i < n; i++) cg_jv_obj_put(a, o, cg_arena_strdup(a, kv[i].key), cg_jv_str(a, kv[i].value));
    return o;
}

static cg_jv *enc_seq(cg_arena *a, const wire_record *sub, const char *items, size_t n) {
    cg_jv *arr = cg_jv_arr(a);
    for (size_t i = 0; i < n; i++) cg_jv_arr_push(a, arr, enc_struct(a, sub, items + i * sub->size, false));
    return arr;
}

static cg_jv *enc_enum(cg_arena *a, const wire_field *f, int x) {
    return cg_jv_str_nocopy(a, ((const wire_enum *)f->sub)->names[x]);
}

/* The field's value, or NULL when it is omitted. */
static cg_jv *enc_field(cg_arena *a, const wire_field *f, const void *in, bool include_derived) {
    const char *s;
    switch (f->type) {
    case W_STR:
    case W_ID: return cg_jv_str(a, *AT(const char *const, in, f->off));
    case W_OSTR: return (s = *AT(const char *const, in, f->off)) ? cg_jv_str(a, s) : NULL;
    case W_U64:
    case W_U64_DEF:
    case W_USIZE: return cg_jv_u64(a, *AT(const uint64_t, in, f->off));
    case W_OU64_DERIVED:
        if (!include_derived && *AT(const bool, in, f->aux2)) return NULL;
        /* fall through */
    case W_OU64: return *AT(const bool, in, f->aux) ? cg_jv_u64(a, *AT(const uint64_t, in, f->off)) : NULL;
    case W_F64: return cg_jv_f64(a, *AT(const double, in, f->off));
    case W_OF64: return *AT(const bool, in, f->aux) ? cg_jv_f64(a, *AT(const double, in, f->off)) : NULL;
    case W_BOOL_DEF: return cg_jv_bool(a, *AT(const bool, in, f->off));
    case W_OENUM: return wire_enum_get(f, in) ? enc_enum(a, f, wire_enum_get(f, in)) : NULL;
    case W_ENUM:
    case W_ENUM_DEF: return enc_enum(a, f, wire_enum_get(f, in));
    case W_ENUM_BOOL: return enc_enum(a, f, *AT(const bool, in, f->off) ? 1 : 0);
    case W_STRLIST_SKIP:
        if (AT(const cg_strlist, in, f->off)->n == 0) return NULL;
        /* fall through */
    case W_STRLIST_DEF: return cg_strlist_to_json(a, AT(const cg_strlist, in, f->off));
    case W_SHAPE:
    case W_SHAPE_DEF: return cg_shape_to_json(a, AT(const cg_shape, in, f->off));
    case W_TAGS: return enc_tags(a, *AT(cg_kv *const, in, f->off), *AT(const size_t, in, f->aux));
    case W_STRUCT: return enc_struct(a, f->sub, AT(const char, in, f->off), include_derived);
    case W_OSTRUCT: {
        const void *p = *AT(const void *const, in, f->off);
        return p ? enc_struct(a, f->sub, p, include_derived) : NULL;
    }
    case W_SEQ: return enc_seq(a, f->sub, *AT(const char *const, in, f->off), *AT(const size_t, in, f->aux));
    }
    return NULL;
}

void wire_encode(cg_arena *a, cg_jv *obj, const wire_record *rec, const void *in, bool include_derived) {
    for (size_t i = 0; i < rec->n_fields; i++) {
        cg_jv *v = enc_field(a, &rec->fields[i], in, include_derived);
        if (v) cg_jv_obj_put(a, obj, rec->fields[i].name, v);
    }
}
