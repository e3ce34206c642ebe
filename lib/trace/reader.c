/* reader.c — streaming trace/10 (and trace/9) JSONL reader: parse_trace and
 * TraceDocument::from_events of the crate (src/trace/document.rs at 78b848e2).
 *
 * A flat record line is decoded in one pass straight into its struct (scan.c,
 * through the record's wire table). Any other non-blank line (Rust's
 * str::trim) — meta, sequences, escapes, nested values, anything malformed —
 * takes the general path: parsed into a per-line JSON arena and decoded
 * through the same table (wire.c) with serde's messages; the line arena is
 * then reset, so memory stays proportional to the document. Both paths give
 * the same values and the same errors (tests/unit/test_trace_scan.c).
 * A line that does not deserialize fails at once ("parse trace JSONL line N
 * from PATH" over serde's message). The rules of from_events are applied in
 * stream order as records arrive, but their first failure is held and
 * reported only at the end, because the crate deserializes every line before
 * it applies any rule. After the stream: missing meta, missing terminal,
 * unsupported schema, tensor_stats under trace/9, the terminal's reason, and
 * the terminal preceding host evidence, in that order. */
#include <errno.h>
#include "base/alloc.h"
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/hmap.h"
#include "trace/trace.h"
#include "trace/intern.h"
#include "trace/scan.h"
#include "trace/wire.h"

void cg_trace_limits_default(cg_trace_limits *l) {
    l->max_line_bytes = 64u << 20;
    l->max_records = 100000000;
    cg_json_limits_default(&l->json);
    l->json.max_items = 1000000;
    l->general_only = false;
}

/* growable array helper: grows by half (large blocks move by mremap, not by
 * copying), trimmed to fit when the document is complete (trim_arrays) */
#define VEC_PUSH(arr, n, cap)                                                        \
    do {                                                                             \
        if ((n) == (cap)) {                                                          \
            size_t ncap_ = (cap) ? (cap) + (cap) / 2 : 64;                           \
            void *np_ = cg_xrealloc((arr), ncap_, sizeof *(arr));                    \
            (arr) = np_;                                                             \
            (cap) = ncap_;                                                           \
        }                                                                            \
        memset(&(arr)[(n)], 0, sizeof *(arr));                                       \
        (n)++;                                                                       \
    } while (0)

typedef struct rd {
    cg_trace *t;
    const char *path;
    cg_error *err;
    size_t line;
    size_t index;    /* 0-based index among non-empty records */
    cg_arena la;     /* per-line JSON arena */
    tstore store;      /* strings and shapes, stored once in the trace arena */
    cg_hstr span_ix; /* span id -> index into t->spans (before sorting) */
    size_t cap_spans, cap_ops, cap_tensors, cap_stats, cap_memory, cap_dm, cap_di, cap_grad, cap_edges;
    bool have_meta, have_terminal;
    bool rule_failed; /* the first rule failure of from_events, held in rule_err */
    cg_error rule_err;
    cg_buf msg;       /* scratch for serde messages */
    wire_sink sink;
    const char *text; /* the trimmed line, for serde_json positions */
    size_t text_len;
    const cg_trace_limits *lim;
    bool fast;        /* take flat records through scan.c (off: the general path only) */
    scan_obj scan;    /* the fast path's members of the current line */
} rd;

/* ---- errors ---- */

/* A line that does not deserialize: serde's message under parse_trace's context. */
static int serde_fail(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int serde_fail(rd *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    cg_err_vset(r->err, CG_EPARSE, fmt, ap);
    va_end(ap);
    cg_err_reason(r->err, CG_R_TRACE_INVALID);
    cg_err_context(r->err, "parse trace JSONL line %zu from %s", r->line, r->path);
    if (r->err) r->err->line = (int)r->line;
    return -1;
}

/* serde_json adds the position to errors raised while it drives the visitor. */
static int serde_fail_at(rd *r, size_t column, const char *msg) {
    return serde_fail(r, "%s at line 1 column %zu", msg, column);
}

/* A from_events rule failure at the current record: held (the first one wins)
 * until every line has been deserialized. */
static void rule_defer(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rule_defer(rd *r, const char *fmt, ...) {
    if (r->rule_failed) return;
    va_list ap;
    va_start(ap, fmt);
    cg_err_vset(&r->rule_err, CG_EPARSE, fmt, ap);
    va_end(ap);
    cg_err_reason(&r->rule_err, CG_R_TRACE_INVALID);
    r->rule_err.line = (int)r->line;
    r->rule_failed = true;
}

/* A rule of the finished stream. */
static int rule_fail(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int rule_fail(rd *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    cg_err_vset(r->err, CG_EPARSE, fmt, ap);
    va_end(ap);
    cg_err_reason(r->err, CG_R_TRACE_INVALID);
    if (r->err) r->err->line = 0;
    return -1;
}

/* ---- storage (intern.h) ---- */

static const char *sink_intern(void *ctx, const char *s, size_t len) {
    return tstore_intern(&((rd *)ctx)->store, s, len);
}
static const char *sink_copy(void *ctx, const char *s, size_t len) { return tstore_copy(&((rd *)ctx)->store, s, len); }
static uint64_t *sink_dims(void *ctx, const uint64_t *d, size_t n) { return tstore_dims(&((rd *)ctx)->store, d, n); }

/* ---- serde_json positions of the tag errors ---- */

static size_t skip_ws(const char *p, size_t n, size_t i) {
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r')) i++;
    return i;
}

static size_t skip_string(const char *p, size_t n, size_t i) {
    for (i++; i < n && p[i] != '"'; i++)
        if (p[i] == '\\') i++;
    return i < n ? i + 1 : n;
}

static size_t skip_value(const char *p, size_t n, size_t i) {
    if (i < n && p[i] == '"') return skip_string(p, n, i);
    if (i < n && (p[i] == '{' || p[i] == '[')) {
        int depth = 0;
        while (i < n) {
            char c = p[i];
            if (c == '"') {
                i = skip_string(p, n, i);
                continue;
            }
            if (c == '{' || c == '[') depth++;
            else if ((c == '}' || c == ']') && --depth == 0) return i + 1;
            i++;
        }
        return n;
    }
    while (i < n && p[i] != ',' && p[i] != '}' && p[i] != ']' && p[i] != ' ' && p[i] != '\t' && p[i] != '\n' &&
           p[i] != '\r')
        i++;
    return i;
}

typedef struct member_span {
    size_t key_end, val_start, val_end; /* byte offsets in the trimmed line */
} member_span;

/* Offsets of member `want` of the line's top-level object (the line is valid JSON). */
static member_span find_member(const rd *r, size_t want) {
    const char *p = r->text;
    size_t n = r->text_len, i = skip_ws(p, n, 0) + 1;
    member_span m = {n, n, n};
    for (size_t k = 0; i < n; k++) {
        i = skip_string(p, n, skip_ws(p, n, i));
        m.key_end = i;
        i = skip_ws(p, n, skip_ws(p, n, i) + 1); /* past ':' */
        m.val_start = i;
        m.val_end = i = skip_value(p, n, i);
        if (k == want) return m;
        i = skip_ws(p, n, i) + 1; /* past ',' */
    }
    return m;
}

static bool key_is(const cg_jmember *m, const char *k) { return m->key_len == strlen(k) && !memcmp(m->key, k, m->key_len); }

/* ---- the event tag ("kind"), as serde_json drives TaggedContentVisitor ---- */

enum { K_META, K_SPAN_START, K_SPAN_END, K_OP, K_TENSOR, K_TENSOR_STATS, K_MEMORY, K_DEVICE_MEMORY,
       K_DEVICE_INTERVAL, K_GRADIENT, K_EDGE, K_TERMINAL, K_COUNT };
static const char *const kinds[K_COUNT] = {"meta", "span_start", "span_end", "op", "tensor", "tensor_stats",
                                           "memory", "device_memory", "device_interval", "gradient", "edge",
                                           "terminal"};

static int bad_tag_value(rd *r, const cg_jv *v, member_span m) {
    cg_buf_reset(&r->msg);
    cg_buf_puts(&r->msg, "invalid type: ");
    wire_unexpected(&r->msg, v);
    cg_buf_puts(&r->msg, ", expected variant identifier");
    /* scalars are consumed before the error; a sequence or map is not */
    bool container = v->type == CG_JARR || v->type == CG_JOBJ;
    return serde_fail_at(r, container ? m.val_start : m.val_end, r->msg.data);
}

static int read_kind(rd *r, const cg_jv *o, int *out) {
    bool found = false;
    for (size_t i = 0; i < o->u.obj.n; i++) {
        const cg_jmember *m = &o->u.obj.m[i];
        if (!key_is(m, "kind")) continue;
        if (found) return serde_fail_at(r, find_member(r, i).key_end, "duplicate field `kind`");
        found = true;
        if (m->val->type != CG_JSTR) return bad_tag_value(r, m->val, find_member(r, i));
        *out = -1;
        for (int k = 0; k < K_COUNT; k++)
            if (!strcmp(m->val->u.str.s, kinds[k])) *out = k;
        if (*out < 0) {
            cg_buf_reset(&r->msg);
            wire_unknown_variant(&r->msg, m->val->u.str.s, kinds, K_COUNT);
            return serde_fail_at(r, find_member(r, i).val_end, r->msg.data);
        }
    }
    return found ? 0 : serde_fail_at(r, r->text_len, "missing field `kind`");
}

/* ---- records ---- */

static int decode(rd *r, const wire_record *rec, const cg_jv *o, void *out) {
    cg_buf_reset(&r->msg);
    return wire_decode(rec, o, out, &r->sink, &r->msg) ? serde_fail(r, "%s", r->msg.data) : 0;
}

/* Meta { schema, #[serde(flatten)] run }: schema is checked over the whole
 * record first, then the flattened TraceRunMeta. */
static int parse_meta(rd *r, const cg_jv *o) {
    const char *schema = NULL;
    for (size_t i = 0; i < o->u.obj.n; i++) {
        const cg_jmember *m = &o->u.obj.m[i];
        if (!key_is(m, "schema")) continue;
        if (schema) return serde_fail(r, "duplicate field `schema`");
        if (m->val->type != CG_JSTR) {
            cg_buf_reset(&r->msg);
            wire_unexpected(&r->msg, m->val);
            return serde_fail(r, "invalid type: %s, expected a string", r->msg.data);
        }
        schema = r->sink.intern(r, m->val->u.str.s, m->val->u.str.len);
    }
    if (!schema) return serde_fail(r, "missing field `schema`");
    cg_run_meta run;
    memset(&run, 0, sizeof run);
    if (decode(r, &wire_run_meta, o, &run)) return -1;
    if (r->index == 0) { /* a later meta already failed the first-record rule */
        r->t->schema = schema;
        r->t->run = run;
        r->have_meta = true;
    }
    return 0;
}

/* The decoded record of any kind but meta. */
typedef union any_rec {
    cg_span span;
    wire_span_end_rec end;
    cg_op op;
    cg_tensor tensor;
    cg_tensor_stats stats;
    cg_memory memory;
    cg_device_memory device_memory;
    cg_device_interval interval;
    cg_gradient gradient;
    cg_edge edge;
    cg_terminal terminal;
} any_rec;

static void apply_span_start(rd *r, const cg_span *in) {
    cg_trace *t = r->t;
    cg_span s = *in;
    s.line = r->line < UINT32_MAX ? (uint32_t)r->line : UINT32_MAX;
    if (!cg_hstr_put(&r->span_ix, s.id, t->n_spans, NULL)) {
        rule_defer(r, "duplicate span_start id `%s` at index %zu", s.id, r->index);
        return;
    }
    VEC_PUSH(t->spans, t->n_spans, r->cap_spans);
    t->spans[t->n_spans - 1] = s;
}

static void apply_span_end(rd *r, const wire_span_end_rec *e) {
    size_t *ix = cg_hstr_get(&r->span_ix, e->id);
    if (!ix) {
        rule_defer(r, "span_end for unknown span `%s` at index %zu", e->id, r->index);
        return;
    }
    cg_span *s = &r->t->spans[*ix];
    if (s->closed) {
        rule_defer(r, "duplicate span_end for `%s` at index %zu", e->id, r->index);
        return;
    }
    s->closed = true;
    s->duration_ns = e->duration_ns;
}

/* resolve_dense_tensor_bytes: an absent footprint is derived from shape and dtype */
static void apply_op(rd *r, const cg_op *in) {
    cg_trace *t = r->t;
    VEC_PUSH(t->ops, t->n_ops, r->cap_ops);
    cg_op *op = &t->ops[t->n_ops - 1];
    *op = *in;
    if (!op->has_output_dense_bytes && cg_dense_bytes(&op->shape, op->dtype, &op->output_dense_bytes))
        op->has_output_dense_bytes = op->output_dense_bytes_derived = true;
}

static void apply_tensor(rd *r, const cg_tensor *in) {
    cg_trace *t = r->t;
    VEC_PUSH(t->tensors, t->n_tensors, r->cap_tensors);
    cg_tensor *tn = &t->tensors[t->n_tensors - 1];
    *tn = *in;
    if (!tn->has_dense_bytes && cg_dense_bytes(&tn->shape, tn->dtype, &tn->dense_bytes))
        tn->has_dense_bytes = tn->dense_bytes_derived = true;
}

static void apply_tensor_stats(rd *r, const cg_tensor_stats *s) {
    cg_trace *t = r->t;
    if (!cg_rule_tensor_stats_valid(s)) rule_defer(r, "invalid tensor_stats event at index %zu", r->index);
    VEC_PUSH(t->tensor_stats, t->n_tensor_stats, r->cap_stats);
    t->tensor_stats[t->n_tensor_stats - 1] = *s;
}

/* Appends v to a record array of the trace. */
#define APPEND(r, arr, count, cap, v)                 \
    do {                                             \
        VEC_PUSH((r)->t->arr, (r)->t->count, (r)->cap); \
        (r)->t->arr[(r)->t->count - 1] = (v);         \
    } while (0)

/* A decoded record of kind ki (not meta) joins the document. */
static void apply_record(rd *r, int ki, const any_rec *u) {
    switch (ki) {
    case K_SPAN_START: apply_span_start(r, &u->span); break;
    case K_SPAN_END: apply_span_end(r, &u->end); break;
    case K_OP: apply_op(r, &u->op); break;
    case K_TENSOR: apply_tensor(r, &u->tensor); break;
    case K_TENSOR_STATS: apply_tensor_stats(r, &u->stats); break;
    case K_MEMORY: APPEND(r, memory, n_memory, cap_memory, u->memory); break;
    case K_DEVICE_MEMORY: APPEND(r, device_memory, n_device_memory, cap_dm, u->device_memory); break;
    case K_DEVICE_INTERVAL: APPEND(r, device_intervals, n_device_intervals, cap_di, u->interval); break;
    case K_GRADIENT: APPEND(r, gradients, n_gradients, cap_grad, u->gradient); break;
    case K_EDGE: APPEND(r, edges, n_edges, cap_edges, u->edge); break;
    case K_TERMINAL:
        r->t->terminal = u->terminal;
        r->have_terminal = true;
        break;
    }
}

/* The wire table of each kind (serde's visit_seq takes the same); not meta,
 * and edges pick theirs by edge_kind. */
static const wire_record *const records[K_COUNT] = {
    [K_SPAN_START] = &wire_span_start, [K_SPAN_END] = &wire_span_end, [K_OP] = &wire_op,
    [K_TENSOR] = &wire_tensor, [K_TENSOR_STATS] = &wire_tensor_stats, [K_MEMORY] = &wire_memory,
    [K_DEVICE_MEMORY] = &wire_device_memory, [K_DEVICE_INTERVAL] = &wire_device_interval,
    [K_GRADIENT] = &wire_gradient, [K_EDGE] = &wire_call_edge, [K_TERMINAL] = &wire_terminal};

/* EdgeEvent, internally tagged by edge_kind inside the buffered record (no
 * position): the tag of a map, or the first element of a sequence. */
static int edge_kind(rd *r, const cg_jv *o, bool *is_data, cg_jv *rest) {
    static const char *const names[] = {"call", "data"};
    const cg_jv *tag = NULL;
    if (o->type == CG_JARR && o->u.arr.n) {
        tag = o->u.arr.items[0];
        *rest = *o;
        rest->u.arr.items++;
        rest->u.arr.n--;
    }
    for (size_t i = 0; o->type == CG_JOBJ && i < o->u.obj.n; i++) {
        if (!key_is(&o->u.obj.m[i], "edge_kind")) continue;
        if (tag) return serde_fail(r, "duplicate field `edge_kind`");
        tag = o->u.obj.m[i].val;
    }
    if (!tag) return serde_fail(r, "missing field `edge_kind`");
    if (tag->type == CG_JINT && !tag->u.i.neg && tag->u.i.mag < 2) { /* a variant index */
        *is_data = tag->u.i.mag == 1;
        return 0;
    }
    cg_buf_reset(&r->msg);
    if (tag->type == CG_JINT && !tag->u.i.neg)
        return serde_fail(r, "invalid value: integer `%llu`, expected variant index 0 <= i < 2",
                          (unsigned long long)tag->u.i.mag);
    if (tag->type != CG_JSTR) {
        wire_unexpected(&r->msg, tag);
        return serde_fail(r, "invalid type: %s, expected variant identifier", r->msg.data);
    }
    if (strcmp(tag->u.str.s, "call") && strcmp(tag->u.str.s, "data")) {
        wire_unknown_variant(&r->msg, tag->u.str.s, names, 2);
        return serde_fail(r, "%s", r->msg.data);
    }
    *is_data = !strcmp(tag->u.str.s, "data");
    return 0;
}

/* The general path of a record (not meta): decode the parsed line through its table. */
static int parse_record(rd *r, int ki, const cg_jv *o) {
    any_rec u;
    memset(&u, 0, sizeof u);
    if (ki == K_EDGE) {
        cg_jv rest;
        if (edge_kind(r, o, &u.edge.is_data, &rest)) return -1;
        if (decode(r, u.edge.is_data ? &wire_data_edge : &wire_call_edge, o->type == CG_JARR ? &rest : o, &u.edge))
            return -1;
    } else if (decode(r, records[ki], o, &u)) {
        return -1;
    }
    apply_record(r, ki, &u);
    return 0;
}

/* The record-order rules of from_events, checked before the record's own. */
static void check_record_order(rd *r, int ki) {
    if (r->have_terminal)
        rule_defer(r, "terminal event must be the final trace record; found another event at index %zu", r->index);
    else if (ki == K_META && r->index != 0)
        rule_defer(r, "meta event must be the first non-empty trace record, found at index %zu", r->index);
}

/* cg_json_parse already words and places a syntax error as serde_json does
 * ("MSG at line 1 column C" for the one-line text). */
static int syntax_fail(rd *r, const char *msg) { return serde_fail(r, "%s", msg); }

static int json_fail(rd *r, const cg_error *jerr, const char *p, size_t n) {
    if (jerr->code == CG_ELIMIT) {
        cg_err_setr(r->err, CG_R_TRACE_INVALID, CG_ELIMIT, "parse trace JSONL line %zu from %s: %s", r->line, r->path,
                    jerr->msg);
        if (r->err) r->err->line = (int)r->line;
        return -1;
    }
    if (!cg_utf8_valid(p, n)) { /* BufRead::lines fails before serde sees the line */
        cg_err_setr(r->err, CG_R_TRACE_INVALID, CG_EPARSE, "stream did not contain valid UTF-8");
        cg_err_context(r->err, "read trace JSONL line %zu from %s", r->line, r->path);
        if (r->err) r->err->line = (int)r->line;
        return -1;
    }
    return syntax_fail(r, jerr->msg);
}

/* A line that is not an object: TaggedContentVisitor sees a scalar (invalid
 * type at the end of the line) or a sequence whose first element is the tag
 * and whose rest is the record by position. Returns the kind, with *rest the
 * record's elements, or -1 after an error. */
static int sequence_record(rd *r, const cg_jv *o, cg_jv *rest) {
    cg_buf_reset(&r->msg);
    if (o->type != CG_JARR) {
        cg_buf_puts(&r->msg, "invalid type: ");
        wire_unexpected(&r->msg, o);
        cg_buf_puts(&r->msg, ", expected internally tagged enum TraceEvent");
        return serde_fail_at(r, r->text_len, r->msg.data);
    }
    if (o->u.arr.n == 0) return serde_fail_at(r, r->text_len, "missing field `kind`");
    const char *p = r->text;
    size_t n = r->text_len, start = skip_ws(p, n, skip_ws(p, n, 0) + 1), end = skip_value(p, n, start);
    const cg_jv *tag = o->u.arr.items[0];
    member_span m = {start, start, end};
    if (tag->type != CG_JSTR) return bad_tag_value(r, tag, m);
    for (int k = 0; k < K_COUNT; k++) {
        if (strcmp(tag->u.str.s, kinds[k]) != 0) continue;
        if (!records[k]) /* Meta has a flattened field: no visit_seq */
            return serde_fail(r, "invalid type: sequence, expected struct variant TraceEvent::Meta");
        *rest = *o;
        rest->u.arr.items++;
        rest->u.arr.n--;
        return k;
    }
    wire_unknown_variant(&r->msg, tag->u.str.s, kinds, K_COUNT);
    return serde_fail_at(r, end, r->msg.data);
}

/* The rules every record passes before its own: the record limit, then the
 * record order of from_events. 0, or -1 after the limit error. */
static int admit_record(rd *r, int ki) {
    if (r->index >= r->lim->max_records) {
        cg_err_setr(r->err, CG_R_TRACE_INVALID, CG_ELIMIT, "trace %s has more than the limit of %zu records (line %zu)",
                    r->path, r->lim->max_records, r->line);
        if (r->err) r->err->line = (int)r->line;
        return -1;
    }
    check_record_order(r, ki);
    return 0;
}

static int kind_index(const char *s, size_t len) {
    for (int k = 0; k < K_COUNT; k++)
        if (scan_name_is(kinds[k], s, len)) return k;
    return -1;
}

/* The fast path (scan.c) of a flat, well-formed record that decodes as-is:
 * true when it took the line (*rc its status), false when the general path
 * must parse it (meta, sequences, escapes, nested values, any error). */
static bool fast_line(rd *r, int *rc) {
    scan_obj *o = &r->scan;
    if (scan_object(r->text, r->text_len, &r->lim->json, o)) return false;
    const scan_member *k = scan_member_only(o, "kind", 4);
    if (!k || k->v.type != SV_STR) return false;
    int ki = kind_index(k->v.p, k->v.len);
    if (ki < 0 || !records[ki]) return false;
    const wire_record *rec = records[ki];
    bool is_data = false;
    if (ki == K_EDGE) {
        const scan_member *ek = scan_member_only(o, "edge_kind", 9);
        if (!ek || ek->v.type != SV_STR || ek->v.len != 4) return false;
        is_data = !memcmp(ek->v.p, "data", 4);
        if (!is_data && memcmp(ek->v.p, "call", 4)) return false;
        rec = is_data ? &wire_data_edge : &wire_call_edge;
    }
    any_rec u;
    memset(&u, 0, sizeof u);
    if (scan_decode(rec, o, &u, &r->sink)) return false;
    if (ki == K_EDGE) u.edge.is_data = is_data;
    if ((*rc = admit_record(r, ki)) == 0) apply_record(r, ki, &u);
    r->index++;
    return true;
}

/* The general path: the line as a JSON value, then serde's tag and record rules. */
static int general_line(rd *r, const char *p, size_t n) {
    cg_error jerr;
    cg_err_clear(&jerr);
    cg_arena_reset(&r->la);
    cg_jv *o = cg_json_parse(&r->la, r->text, r->text_len, &r->lim->json, &jerr);
    if (!o) return json_fail(r, &jerr, p, n);
    int ki = -1;
    cg_jv rest;
    if (o->type != CG_JOBJ) {
        if ((ki = sequence_record(r, o, &rest)) < 0) return -1;
        o = &rest;
    } else if (read_kind(r, o, &ki)) {
        return -1;
    }
    if (admit_record(r, ki)) return -1;
    int rc = ki == K_META ? parse_meta(r, o) : parse_record(r, ki, o);
    r->index++;
    return rc;
}

static int handle_line(rd *r, const char *p, size_t n) {
    size_t b = 0, e = n;
    if (n < 2 || p[0] != '{' || p[n - 1] != '}') { /* a record line needs no trimming */
        cg_str_trim_span(p, n, &b, &e);
        if (b == e) return 0;
    }
    r->text = p + b;
    r->text_len = e - b;
    int rc;
    if (r->fast && fast_line(r, &rc)) return rc;
    return general_line(r, p, n);
}

static int cmp_span(const void *x, const void *y) { return strcmp(((const cg_span *)x)->id, ((const cg_span *)y)->id); }

static unsigned long long ull(uint64_t v) { return (unsigned long long)v; }

/* Rust's `{:?}` of a string, into the scratch buffer. */
static const char *dbg(rd *r, const char *s) {
    cg_buf_reset(&r->msg);
    cg_rust_debug_str(&r->msg, s);
    return r->msg.data;
}

#define TRIM(arr, n)                                                    \
    do {                                                                \
        if ((n) && (arr)) {                                             \
            void *p_ = cg_try_realloc((arr), (n), sizeof *(arr));      \
            if (p_) (arr) = p_;                                         \
        }                                                               \
    } while (0)

/* Gives the arrays' spare capacity back. */
static void trim_arrays(cg_trace *t) {
    TRIM(t->spans, t->n_spans);
    TRIM(t->ops, t->n_ops);
    TRIM(t->tensors, t->n_tensors);
    TRIM(t->tensor_stats, t->n_tensor_stats);
    TRIM(t->memory, t->n_memory);
    TRIM(t->device_memory, t->n_device_memory);
    TRIM(t->device_intervals, t->n_device_intervals);
    TRIM(t->gradients, t->n_gradients);
    TRIM(t->edges, t->n_edges);
}

static int finish_doc(rd *r) {
    cg_trace *t = r->t;
    if (r->rule_failed) {
        if (r->err) *r->err = r->rule_err;
        return -1;
    }
    if (!r->have_meta) return rule_fail(r, "trace stream is missing a meta event with run metadata");
    if (!r->have_terminal) return rule_fail(r, "trace stream is missing its terminal event");
    bool trace9 = !strcmp(t->schema, CG_TRACE_SCHEMA_PREVIOUS);
    if (strcmp(t->schema, CG_TRACE_SCHEMA) != 0 && !trace9)
        return rule_fail(r, "unsupported trace schema %s; expected \"%s\" or \"%s\"", dbg(r, t->schema),
                         CG_TRACE_SCHEMA, CG_TRACE_SCHEMA_PREVIOUS);
    if (trace9 && t->n_tensor_stats)
        return rule_fail(r,
                         "trace schema \"%s\" does not define tensor_stats events; producers emitting tensor "
                         "statistics must declare \"%s\"",
                         CG_TRACE_SCHEMA_PREVIOUS, CG_TRACE_SCHEMA);
    switch (cg_rule_terminal_reason(&t->terminal)) {
    case CG_TERMINAL_COMPLETE_WITH_REASON:
        return rule_fail(r, "complete terminal event cannot contain a failure reason");
    case CG_TERMINAL_FAILED_WITHOUT_REASON: return rule_fail(r, "failed terminal event requires a non-empty reason");
    case CG_TERMINAL_REASON_OK: break;
    }
    uint64_t latest;
    if (cg_rule_terminal_precedes_evidence(t, &latest))
        return rule_fail(r, "terminal timestamp %llu precedes host evidence ending at %llu",
                         ull(t->terminal.timestamp_ns), ull(latest));
    if (t->n_spans > 1) qsort(t->spans, t->n_spans, sizeof *t->spans, cmp_span);
    trim_arrays(t);
    return 0;
}

/* ---- drivers ---- */

static cg_trace *new_trace(void) {
    cg_trace *t = cg_xzalloc(1, sizeof *t);
    cg_arena_init(&t->arena, 1 << 20);
    return t;
}

/* About one distinct short string per this many bytes of a trace (the
 * generated bench traces: tensor ids, labels, keys; real captures repeat
 * more): the string table is sized from the input's size with it. */
#define BYTES_PER_STRING 320u

static void rd_init(rd *r, cg_trace *t, const char *path, cg_error *err, cg_trace_limits *lim, size_t bytes) {
    memset(r, 0, sizeof *r);
    r->t = t;
    r->path = path;
    r->err = err;
    cg_arena_init(&r->la, 64 * 1024);
    cg_hstr_init(&r->span_ix, 0);
    r->lim = lim;
    r->fast = !lim->general_only;
    tstore_init(&r->store, &t->arena, bytes / BYTES_PER_STRING);
    r->sink = (wire_sink){&t->arena, sink_intern, sink_copy, sink_dims, r};
}

static void rd_done(rd *r) {
    tstore_done(&r->store);
    cg_arena_free(&r->la);
    cg_hstr_free(&r->span_ix);
    cg_buf_free(&r->msg);
}

/* Every line of the len bytes at data. 0, or -1 after the error. */
static int read_lines(rd *r, const char *data, size_t len) {
    const char *p = data, *end = data + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        r->line++;
        if ((size_t)(le - p) > r->lim->max_line_bytes) {
            cg_err_setr(r->err, CG_R_TRACE_INVALID, CG_ELIMIT, "trace %s line %zu is longer than the limit of %zu bytes",
                        r->path, r->line, r->lim->max_line_bytes);
            if (r->err) r->err->line = (int)r->line;
            return -1;
        }
        if (handle_line(r, p, (size_t)(le - p))) return -1;
        p = nl ? nl + 1 : end;
    }
    return 0;
}

/* The end of a read: the document's rules when the lines were read (rc 0). */
static cg_trace *read_done(rd *r, cg_trace *t, int rc) {
    if (!rc) rc = finish_doc(r);
    rd_done(r);
    if (rc) {
        cg_trace_free(t);
        return NULL;
    }
    return t;
}

cg_trace *cg_trace_read_mem(const char *data, size_t len, const char *display_path, const cg_trace_limits *lim,
                            cg_error *err) {
    cg_trace_limits l;
    if (lim) l = *lim;
    else cg_trace_limits_default(&l);
    cg_trace *t = new_trace();
    rd r;
    rd_init(&r, t, display_path ? display_path : "<memory>", err, &l, len);
    return read_done(&r, t, read_lines(&r, data, len));
}

cg_trace *cg_trace_read_file(const char *path, const cg_trace_limits *lim, cg_error *err) {
    cg_trace_limits l;
    if (lim) l = *lim;
    else cg_trace_limits_default(&l);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        cg_err_set(err, CG_EIO, "%s (os error %d)", strerror(e), e); /* Rust's io::Error */
        cg_err_context(err, "open trace file %s", path);
        return NULL;
    }
    cg_trace *t = new_trace();
    rd r;
    struct stat sb;
    size_t bytes = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 ? (size_t)sb.st_size : 0;
    rd_init(&r, t, path, err, &l, bytes);
    /* read() into a buffer, for files and pipes alike: a mapping measured no
     * faster (parse + health at 1M and 5M), and a file truncated under a
     * mapping kills the reader with SIGBUS instead of an error */
    size_t cap = 4u << 20, len = 0, off = 0;
    char *buf = cg_xalloc(1, cap);
    int rc = 0;
    bool eof = false;
    while (!rc) {
        /* process complete lines in buf[off..len) */
        char *nl;
        while ((nl = memchr(buf + off, '\n', len - off)) != NULL) {
            size_t ll = (size_t)(nl - (buf + off));
            r.line++;
            if (ll > l.max_line_bytes) {
                rc = cg_err_setr(err, CG_R_TRACE_INVALID, CG_ELIMIT,
                                 "trace %s line %zu is longer than the limit of %zu bytes", path, r.line, l.max_line_bytes);
                if (err) err->line = (int)r.line;
                break;
            }
            if ((rc = handle_line(&r, buf + off, ll)) != 0) break;
            off += ll + 1;
        }
        if (rc) break;
        if (eof) {
            if (off < len) {
                r.line++;
                if (len - off > l.max_line_bytes) {
                    rc = cg_err_setr(err, CG_R_TRACE_INVALID, CG_ELIMIT,
                                     "trace %s line %zu is longer than the limit of %zu bytes", path, r.line,
                                     l.max_line_bytes);
                    if (err) err->line = (int)r.line;
                } else {
                    rc = handle_line(&r, buf + off, len - off);
                }
            }
            break;
        }
        /* compact, grow if a single line does not fit */
        if (off) {
            memmove(buf, buf + off, len - off);
            len -= off;
            off = 0;
        }
        if (len == cap) {
            if (len > l.max_line_bytes) {
                rc = cg_err_setr(err, CG_R_TRACE_INVALID, CG_ELIMIT,
                                 "trace %s line %zu is longer than the limit of %zu bytes", path, r.line + 1,
                                 l.max_line_bytes);
                if (err) err->line = (int)(r.line + 1);
                break;
            }
            cap *= 2;
            char *nb = cg_xrealloc(buf, 1, cap);
            buf = nb;
        }
        ssize_t got = read(fd, buf + len, cap - len);
        if (got < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            rc = cg_err_set(err, CG_EIO, "%s (os error %d)", strerror(e), e);
            cg_err_context(err, "read trace JSONL line %zu from %s", r.line + 1, path);
            break;
        }
        if (got == 0) eof = true;
        len += (size_t)got;
    }
    cg_free(buf);
    close(fd);
    return read_done(&r, t, rc);
}

void cg_trace_free(cg_trace *t) {
    if (!t) return;
    cg_free(t->spans);
    cg_free(t->ops);
    cg_free(t->tensors);
    cg_free(t->tensor_stats);
    cg_free(t->memory);
    cg_free(t->device_memory);
    cg_free(t->device_intervals);
    cg_free(t->gradients);
    cg_free(t->edges);
    cg_arena_free(&t->arena);
    cg_free(t);
}
