/* reader.c — streaming trace/10 (and trace/9) JSONL reader with the parse-time
 * rules of spec §3. Each line is parsed into a per-line JSON arena, converted
 * into the document's records (strings interned into the document arena) and
 * the line arena is reset, so memory stays proportional to the document. */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/strmap.h"
#include "trace/trace.h"

void cg_trace_limits_default(cg_trace_limits *l) {
    l->max_line_bytes = 64u << 20;
    l->max_records = 100000000;
    cg_json_limits_default(&l->json);
    l->json.max_items = 1000000;
}

/* growable array helper */
#define VEC_PUSH(arr, n, cap)                                                        \
    do {                                                                             \
        if ((n) == (cap)) {                                                          \
            size_t ncap_ = (cap) ? (cap) * 2 : 64;                                   \
            void *np_ = realloc((arr), ncap_ * sizeof *(arr));                       \
            if (!np_) abort();                                                       \
            (arr) = np_;                                                             \
            (cap) = ncap_;                                                           \
        }                                                                            \
        memset(&(arr)[(n)], 0, sizeof *(arr));                                       \
        (n)++;                                                                       \
    } while (0)

/* Interning table (reader-local): open addressing, linear probing, at most
 * half full; a slot keeps the string, its length and 32 bits of its hash. */
typedef struct islot {
    const char *s;
    uint32_t len, h;
} islot;

typedef struct itab {
    islot *slots;
    size_t cap, n;
} itab;

typedef struct rd {
    cg_trace *t;
    const char *path;
    cg_error *err;
    size_t line;
    size_t index;    /* 0-based index among non-empty records */
    cg_arena la;     /* per-line JSON arena */
    itab intern;
    cg_strmap span_ix; /* span id -> index into t->spans (before sorting) */
    size_t cap_spans, cap_ops, cap_tensors, cap_stats, cap_memory, cap_dm, cap_di, cap_grad, cap_edges;
    bool have_meta, have_terminal, trace9;
    /* §3: every line is deserialized before the rules of from_events run, so
     * the first rule failure is held here and reported only if no later line
     * fails to deserialize. */
    bool rule_failed;
    cg_error rule_err;
    const cg_trace_limits *lim;
} rd;

/* ---- errors ---- */

static int json_fail(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int json_fail(rd *r, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cg_err_set(r->err, CG_EPARSE, "parse trace JSONL line %zu from %s: %s", r->line, r->path, msg);
    if (r->err) r->err->line = (int)r->line;
    return -1;
}

static int rule_vset(rd *r, cg_error *err, bool with_line, const char *fmt, va_list ap) {
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (with_line) {
        cg_err_set(err, CG_EPARSE, "invalid trace %s: line %zu: %s", r->path, r->line, msg);
        if (err) err->line = (int)r->line;
    } else {
        cg_err_set(err, CG_EPARSE, "invalid trace %s: %s", r->path, msg);
        if (err) err->line = 0;
    }
    return -1;
}

/* A rule failure inside the stream: held (first one wins) until the end of the
 * document; parsing continues so later serde failures still take precedence. */
static void rule_defer(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rule_defer(rd *r, const char *fmt, ...) {
    if (r->rule_failed) return;
    va_list ap;
    va_start(ap, fmt);
    rule_vset(r, &r->rule_err, true, fmt, ap);
    va_end(ap);
    r->rule_failed = true;
}

static int rule_fail(rd *r, bool with_line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int rule_fail(rd *r, bool with_line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    rule_vset(r, r->err, with_line, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- interning ---- */

static inline uint64_t load64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* 8 bytes per step, multiply-xorshift mixing (strings here are short ids and names). */
static uint64_t str_hash64(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)n * 0xff51afd7ed558ccdull);
    while (n >= 8) {
        h = (h ^ load64(p)) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    uint64_t tail = 0;
    if (n) memcpy(&tail, p, n);
    h = (h ^ tail) * 0x94d049bb133111ebull;
    h ^= h >> 32;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 29;
    return h;
}

static void itab_grow(itab *m) {
    size_t ncap = m->cap ? m->cap * 2 : 1024;
    islot *ns = calloc(ncap, sizeof *ns);
    if (!ns) abort();
    for (size_t i = 0; i < m->cap; i++) {
        const islot *o = &m->slots[i];
        if (!o->s) continue;
        size_t j = o->h & (ncap - 1);
        while (ns[j].s) j = (j + 1) & (ncap - 1);
        ns[j] = *o;
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
}

static void itab_free(itab *m) {
    free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
}

static const char *intern(rd *r, const char *s, size_t len) {
    if (len > 96) return cg_arena_strndup(&r->t->arena, s, len);
    itab *m = &r->intern;
    if (2 * (m->n + 1) > m->cap) itab_grow(m);
    uint32_t h = (uint32_t)(str_hash64(s, len) >> 32);
    size_t mask = m->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        islot *sl = &m->slots[i];
        if (!sl->s) {
            char *c = cg_arena_strndup(&r->t->arena, s, len);
            sl->s = c;
            sl->len = (uint32_t)len;
            sl->h = h;
            m->n++;
            return c;
        }
        if (sl->h == h && sl->len == len && memcmp(sl->s, s, len) == 0) return sl->s;
    }
}

/* Nearly unique identifiers (a record's own id): copied, not interned — they
 * would only grow the table; references to them elsewhere are still interned. */
static const char *copy_str(rd *r, const char *s, size_t len) { return cg_arena_strndup(&r->t->arena, s, len); }

/* ---- typed field access (serde semantics) ---- */

static const char *type_name(const cg_jv *v) {
    switch (v->type) {
    case CG_JNULL: return "null";
    case CG_JBOOL: return "boolean";
    case CG_JINT: return v->u.i.neg ? "integer (negative)" : "integer";
    case CG_JREAL: return "floating point";
    case CG_JSTR: return "string";
    case CG_JARR: return "sequence";
    case CG_JOBJ: return "map";
    case CG_JLAZY: return "sequence";
    }
    return "value";
}

static int missing(rd *r, const char *k) { return json_fail(r, "missing field `%s`", k); }
static int bad_type(rd *r, const char *k, const cg_jv *v, const char *want) {
    return json_fail(r, "invalid type: %s, expected %s for field `%s`", type_name(v), want, k);
}

/* required string */
static int f_str(rd *r, const cg_jv *o, const char *k, const char **out) {
    cg_jv *v = cg_jv_get(o, k);
    if (!v) return missing(r, k);
    if (v->type != CG_JSTR) return bad_type(r, k, v, "a string");
    *out = intern(r, v->u.str.s, v->u.str.len);
    return 0;
}

/* required string, a nearly unique identifier (copied, not interned) */
static int f_id(rd *r, const cg_jv *o, const char *k, const char **out) {
    cg_jv *v = cg_jv_get(o, k);
    if (!v) return missing(r, k);
    if (v->type != CG_JSTR) return bad_type(r, k, v, "a string");
    *out = copy_str(r, v->u.str.s, v->u.str.len);
    return 0;
}

/* optional string: absent or null -> NULL */
static int f_ostr(rd *r, const cg_jv *o, const char *k, const char **out) {
    cg_jv *v = cg_jv_get(o, k);
    *out = NULL;
    if (!v || v->type == CG_JNULL) return 0;
    if (v->type != CG_JSTR) return bad_type(r, k, v, "a string");
    *out = intern(r, v->u.str.s, v->u.str.len);
    return 0;
}

static int f_u64v(rd *r, const char *k, const cg_jv *v, uint64_t *out) {
    if (v->type != CG_JINT || v->u.i.neg) return bad_type(r, k, v, "u64");
    *out = v->u.i.mag;
    return 0;
}

static int f_u64(rd *r, const cg_jv *o, const char *k, uint64_t *out) {
    cg_jv *v = cg_jv_get(o, k);
    if (!v) return missing(r, k);
    return f_u64v(r, k, v, out);
}

/* u64 with serde default 0 */
static int f_u64_def(rd *r, const cg_jv *o, const char *k, uint64_t *out) {
    cg_jv *v = cg_jv_get(o, k);
    *out = 0;
    if (!v) return 0;
    return f_u64v(r, k, v, out);
}

/* optional u64: absent/null -> has=false */
static int f_ou64(rd *r, const cg_jv *o, const char *k, bool *has, uint64_t *out) {
    cg_jv *v = cg_jv_get(o, k);
    *has = false;
    *out = 0;
    if (!v || v->type == CG_JNULL) return 0;
    if (f_u64v(r, k, v, out)) return -1;
    *has = true;
    return 0;
}

static int f_f64v(rd *r, const char *k, const cg_jv *v, double *out) {
    if (!cg_jv_as_f64(v, out)) return bad_type(r, k, v, "f64");
    return 0;
}

static int f_f64(rd *r, const cg_jv *o, const char *k, double *out) {
    cg_jv *v = cg_jv_get(o, k);
    if (!v) return missing(r, k);
    return f_f64v(r, k, v, out);
}

static int f_bool_def(rd *r, const cg_jv *o, const char *k, bool *out) {
    cg_jv *v = cg_jv_get(o, k);
    *out = false;
    if (!v) return 0;
    if (v->type != CG_JBOOL) return bad_type(r, k, v, "a boolean");
    *out = v->u.b;
    return 0;
}

typedef int (*enum_parse_fn)(const char *);

static int enum_value(rd *r, const char *k, const cg_jv *v, enum_parse_fn parse, const char *variants, int *out) {
    if (v->type != CG_JSTR) return bad_type(r, k, v, "a string variant");
    int x = parse(v->u.str.s);
    if (x < 0 || strlen(v->u.str.s) != v->u.str.len)
        return json_fail(r, "unknown variant `%s` for field `%s`, expected one of %s", v->u.str.s, k, variants);
    *out = x;
    return 0;
}

static int f_enum(rd *r, const cg_jv *o, const char *k, enum_parse_fn parse, const char *variants, int *out) {
    cg_jv *v = cg_jv_get(o, k);
    if (!v) return missing(r, k);
    return enum_value(r, k, v, parse, variants, out);
}

static int f_enum_def(rd *r, const cg_jv *o, const char *k, enum_parse_fn parse, const char *variants, int def,
                      int *out) {
    cg_jv *v = cg_jv_get(o, k);
    *out = def;
    if (!v) return 0;
    return enum_value(r, k, v, parse, variants, out);
}

#define V_COVERAGE "`none`, `partial`, `complete`"
#define V_CATEGORY "`parameter`, `activation`, `gradient`, `optimizer`, `other`"

static int strlist_value(rd *r, const char *k, const cg_jv *v, cg_strlist *out) {
    if (v->type != CG_JARR) return bad_type(r, k, v, "a sequence of strings");
    out->n = v->u.arr.n;
    out->items = out->n ? cg_arena_alloc(&r->t->arena, out->n * sizeof *out->items) : NULL;
    for (size_t i = 0; i < out->n; i++) {
        const cg_jv *it = v->u.arr.items[i];
        if (it->type != CG_JSTR) return bad_type(r, k, it, "a string");
        out->items[i] = intern(r, it->u.str.s, it->u.str.len);
    }
    return 0;
}

static int f_strlist(rd *r, const cg_jv *o, const char *k, bool required, cg_strlist *out) {
    cg_jv *v = cg_jv_get(o, k);
    out->n = 0;
    out->items = NULL;
    if (!v) return required ? missing(r, k) : 0;
    return strlist_value(r, k, v, out);
}

static int f_shape(rd *r, const cg_jv *o, const char *k, bool required, cg_shape *out) {
    cg_jv *v = cg_jv_get(o, k);
    out->n = 0;
    out->dims = NULL;
    if (!v) return required ? missing(r, k) : 0;
    if (v->type != CG_JARR) return bad_type(r, k, v, "a sequence of usize");
    out->n = v->u.arr.n;
    out->dims = out->n ? cg_arena_alloc(&r->t->arena, out->n * sizeof *out->dims) : NULL;
    for (size_t i = 0; i < out->n; i++)
        if (f_u64v(r, k, v->u.arr.items[i], &out->dims[i])) return -1;
    return 0;
}

/* ---- meta ---- */

/* serde refuses a repeated field of a struct at any depth (maps such as tags excepted). */
static int no_dup_field(rd *r, const cg_jv *o) {
    const char *dup = cg_jv_obj_dup_key(o);
    return dup ? json_fail(r, "duplicate field `%s`", dup) : 0;
}

static int parse_gradient_contract(rd *r, const cg_jv *v, cg_gradient_contract **out) {
    if (v->type != CG_JOBJ) return bad_type(r, "gradient_contract", v, "struct GradientContract");
    if (no_dup_field(r, v)) return -1;
    cg_gradient_contract *g = cg_arena_zalloc(&r->t->arena, sizeof *g);
    if (f_str(r, v, "manifest_sha256", &g->manifest_sha256)) return -1;
    cg_jv *exp = cg_jv_get(v, "expected");
    if (!exp) return missing(r, "expected");
    if (exp->type != CG_JARR) return bad_type(r, "expected", exp, "a sequence");
    g->n_expected = exp->u.arr.n;
    g->expected = cg_arena_zalloc(&r->t->arena, (g->n_expected ? g->n_expected : 1) * sizeof *g->expected);
    for (size_t i = 0; i < g->n_expected; i++) {
        const cg_jv *e = exp->u.arr.items[i];
        if (e->type != CG_JOBJ) return bad_type(r, "expected", e, "struct ExpectedGradient");
        if (no_dup_field(r, e)) return -1;
        if (f_str(r, e, "root", &g->expected[i].root) || f_str(r, e, "key", &g->expected[i].key) ||
            f_str(r, e, "family", &g->expected[i].family))
            return -1;
    }
    cg_jv *fam = cg_jv_get(v, "families");
    if (!fam) return missing(r, "families");
    if (fam->type != CG_JARR) return bad_type(r, "families", fam, "a sequence");
    g->n_families = fam->u.arr.n;
    g->families = cg_arena_zalloc(&r->t->arena, (g->n_families ? g->n_families : 1) * sizeof *g->families);
    for (size_t i = 0; i < g->n_families; i++) {
        const cg_jv *f = fam->u.arr.items[i];
        if (f->type != CG_JOBJ) return bad_type(r, "families", f, "struct GradientFamilyContract");
        if (no_dup_field(r, f)) return -1;
        int x;
        if (f_str(r, f, "family", &g->families[i].family) ||
            f_enum(r, f, "expectation", cg_family_expectation_parse, "`active`, `inactive`, `data_conditional`", &x) ||
            f_u64(r, f, "min_present", &g->families[i].min_present))
            return -1;
        g->families[i].expectation = (cg_family_expectation)x;
    }
    *out = g;
    return 0;
}

static int parse_contract(rd *r, const cg_jv *v, cg_capture_contract *c) {
    if (v->type != CG_JOBJ) return bad_type(r, "capture_contract", v, "struct CaptureContract");
    if (no_dup_field(r, v)) return -1;
    int x;
    if (f_enum(r, v, "measurement_scope", cg_scope_parse, "`unknown`, `profiled_work`, `production_equivalent`", &x))
        return -1;
    c->measurement_scope = (cg_scope)x;
    if (f_enum(r, v, "operations", cg_coverage_parse, V_COVERAGE, &x)) return -1;
    c->operations = (cg_coverage)x;
    if (f_enum_def(r, v, "tensors", cg_coverage_parse, V_COVERAGE, CG_COV_NONE, &x)) return -1;
    c->tensors = (cg_coverage)x;
    if (f_enum_def(r, v, "gradients", cg_coverage_parse, V_COVERAGE, CG_COV_NONE, &x)) return -1;
    c->gradients = (cg_coverage)x;
    cg_jv *gc = cg_jv_get(v, "gradient_contract");
    c->gradient_contract = NULL;
    if (gc && gc->type != CG_JNULL && parse_gradient_contract(r, gc, &c->gradient_contract)) return -1;
    if (f_enum(r, v, "logical_memory", cg_coverage_parse, V_COVERAGE, &x)) return -1;
    c->logical_memory = (cg_coverage)x;
    if (f_enum(r, v, "physical_memory", cg_coverage_parse, V_COVERAGE, &x)) return -1;
    c->physical_memory = (cg_coverage)x;
    if (f_enum(r, v, "device_timing", cg_coverage_parse, V_COVERAGE, &x)) return -1;
    c->device_timing = (cg_coverage)x;
    if (f_strlist(r, v, "required_semantic_labels", false, &c->required_semantic_labels) ||
        f_strlist(r, v, "gpu_expected_semantic_labels", false, &c->gpu_expected_semantic_labels) ||
        f_strlist(r, v, "cpu_only_semantic_labels", false, &c->cpu_only_semantic_labels))
        return -1;
    return 0;
}

static int parse_identity(rd *r, const cg_jv *v, cg_comparison_identity **out) {
    if (v->type != CG_JOBJ) return bad_type(r, "comparison_identity", v, "struct ComparisonIdentity");
    if (no_dup_field(r, v)) return -1;
    cg_comparison_identity *id = cg_arena_zalloc(&r->t->arena, sizeof *id);
    if (f_ostr(r, v, "implementation_id", &id->implementation_id) || f_str(r, v, "workload_id", &id->workload_id) ||
        f_str(r, v, "model_id", &id->model_id) || f_str(r, v, "config_id", &id->config_id) ||
        f_str(r, v, "data_id", &id->data_id) || f_str(r, v, "seed_policy", &id->seed_policy) ||
        f_u64(r, v, "physical_batch", &id->physical_batch) ||
        f_u64(r, v, "accumulation_steps", &id->accumulation_steps) || f_str(r, v, "precision", &id->precision) ||
        f_str(r, v, "device_state", &id->device_state) || f_ostr(r, v, "pair_id", &id->pair_id))
        return -1;
    *out = id;
    return 0;
}

static int cmp_kv(const void *x, const void *y) { return strcmp(((const cg_kv *)x)->key, ((const cg_kv *)y)->key); }

static int parse_meta(rd *r, const cg_jv *o) {
    cg_trace *t = r->t;
    cg_run_meta *m = &t->run;
    const char *schema;
    if (f_str(r, o, "schema", &schema)) return -1;
    if (strcmp(schema, CG_TRACE_SCHEMA) != 0 && strcmp(schema, CG_TRACE_SCHEMA_PREVIOUS) != 0)
        rule_defer(r, "unsupported trace schema %s; expected %s or %s", schema, CG_TRACE_SCHEMA,
                   CG_TRACE_SCHEMA_PREVIOUS);
    t->schema = schema;
    r->trace9 = strcmp(schema, CG_TRACE_SCHEMA_PREVIOUS) == 0;
    int x;
    if (f_str(r, o, "run_id", &m->run_id) || f_str(r, o, "correlation_id", &m->correlation_id) ||
        f_str(r, o, "entrypoint", &m->entrypoint))
        return -1;
    if (f_enum(r, o, "phase", cg_phase_parse, "`train`, `infer`", &x)) return -1;
    m->phase = (cg_phase)x;
    if (f_str(r, o, "timestamp", &m->timestamp) || f_u64(r, o, "capture_step", &m->capture_step) ||
        f_u64(r, o, "warmup_steps", &m->warmup_steps) || f_str(r, o, "device", &m->device) ||
        f_bool_def(r, o, "measured_region_device_synchronized", &m->measured_region_device_synchronized))
        return -1;
    if (f_enum(r, o, "timing_mode", cg_timing_mode_parse, "`host`, `device_synchronized`", &x)) return -1;
    m->timing_mode = (cg_timing_mode)x;
    cg_jv *c = cg_jv_get(o, "capture_contract");
    if (!c) return missing(r, "capture_contract");
    if (parse_contract(r, c, &m->contract)) return -1;
    cg_jv *id = cg_jv_get(o, "comparison_identity");
    m->identity = NULL;
    if (id && id->type != CG_JNULL && parse_identity(r, id, &m->identity)) return -1;
    cg_jv *tags = cg_jv_get(o, "tags");
    if (!tags) return missing(r, "tags");
    if (tags->type != CG_JOBJ) return bad_type(r, "tags", tags, "a map");
    m->n_tags = 0;
    m->tags = tags->u.obj.n ? cg_arena_alloc(&t->arena, tags->u.obj.n * sizeof *m->tags) : NULL;
    for (size_t i = 0; i < tags->u.obj.n; i++) {
        const cg_jmember *mm = &tags->u.obj.m[i];
        if (mm->val->type != CG_JSTR) return bad_type(r, "tags", mm->val, "a string");
        const char *k = intern(r, mm->key, mm->key_len);
        const char *v = intern(r, mm->val->u.str.s, mm->val->u.str.len);
        bool replaced = false;
        for (size_t j = 0; j < m->n_tags && tags->u.obj.n <= 64; j++) /* map semantics: last wins */
            if (!strcmp(m->tags[j].key, k)) {
                m->tags[j].value = v;
                replaced = true;
            }
        if (!replaced) {
            m->tags[m->n_tags].key = k;
            m->tags[m->n_tags].value = v;
            m->n_tags++;
        }
    }
    if (m->n_tags > 1) qsort(m->tags, m->n_tags, sizeof *m->tags, cmp_kv);
    /* BTreeMap: equal keys after sort collapse to the last one */
    if (m->n_tags > 1) {
        size_t w = 0;
        for (size_t i = 0; i < m->n_tags; i++) {
            if (w && !strcmp(m->tags[w - 1].key, m->tags[i].key)) m->tags[w - 1] = m->tags[i];
            else m->tags[w++] = m->tags[i];
        }
        m->n_tags = w;
    }
    if (f_ostr(r, o, "candle_version", &m->candle_version)) return -1;
    return 0;
}

/* ---- body records ---- */

static int parse_span_start(rd *r, const cg_jv *o) {
    cg_trace *t = r->t;
    cg_span s;
    memset(&s, 0, sizeof s);
    int x;
    if (f_id(r, o, "id", &s.id) || f_ostr(r, o, "parent_id", &s.parent_id) || f_str(r, o, "name", &s.name) ||
        f_u64(r, o, "start_ns", &s.start_ns))
        return -1;
    if (f_enum(r, o, "span_kind", cg_span_kind_parse, "`function`, `op`, `module`", &x)) return -1;
    s.kind = (cg_span_kind)x;
    if (f_bool_def(r, o, "measured", &s.measured)) return -1;
    cg_jv *st = cg_jv_get(o, "step");
    s.step = CG_STEP_NONE;
    if (st && st->type != CG_JNULL) {
        if (enum_value(r, "step", st, cg_step_parse, "`forward`, `backward`, `optimizer`", &x)) return -1;
        s.step = (cg_step)x;
    }
    s.line = r->line;
    if (!cg_strmap_put(&r->span_ix, s.id, t->n_spans, NULL)) {
        rule_defer(r, "duplicate span_start for span %s", s.id);
        return 0;
    }
    VEC_PUSH(t->spans, t->n_spans, r->cap_spans);
    t->spans[t->n_spans - 1] = s;
    return 0;
}

static int parse_span_end(rd *r, const cg_jv *o) {
    const char *id;
    uint64_t dur;
    if (f_str(r, o, "id", &id) || f_u64_def(r, o, "duration_ns", &dur)) return -1;
    size_t *ix = cg_strmap_get(&r->span_ix, id);
    if (!ix) {
        rule_defer(r, "span_end for unknown span %s", id);
        return 0;
    }
    cg_span *s = &r->t->spans[*ix];
    if (s->closed) {
        rule_defer(r, "duplicate span_end for span %s", id);
        return 0;
    }
    s->closed = true;
    s->duration_ns = dur;
    return 0;
}

static int parse_op(rd *r, const cg_jv *o) {
    cg_trace *t = r->t;
    cg_op op;
    memset(&op, 0, sizeof op);
    bool has_out;
    if (f_str(r, o, "span_id", &op.span_id) || f_str(r, o, "op_name", &op.op_name) ||
        f_strlist(r, o, "inputs", false, &op.inputs) || f_ostr(r, o, "output", &op.output) ||
        f_shape(r, o, "shape", true, &op.shape) || f_str(r, o, "dtype", &op.dtype) ||
        f_str(r, o, "device", &op.device) || f_u64(r, o, "duration_ns", &op.duration_ns) ||
        f_u64_def(r, o, "timestamp_ns", &op.timestamp_ns) ||
        f_ou64(r, o, "output_dense_bytes", &has_out, &op.output_dense_bytes) ||
        f_u64(r, o, "input_dense_bytes", &op.input_dense_bytes))
        return -1;
    op.has_output_dense_bytes = has_out;
    if (!has_out && cg_dense_bytes(&op.shape, op.dtype, &op.output_dense_bytes)) {
        op.has_output_dense_bytes = true;
        op.output_dense_bytes_derived = true;
    }
    VEC_PUSH(t->ops, t->n_ops, r->cap_ops);
    t->ops[t->n_ops - 1] = op;
    return 0;
}

static int parse_tensor(rd *r, const cg_jv *o) {
    cg_trace *t = r->t;
    cg_tensor tn;
    memset(&tn, 0, sizeof tn);
    bool has;
    int x;
    if (f_str(r, o, "span_id", &tn.span_id) || f_id(r, o, "tensor_id", &tn.tensor_id) ||
        f_ostr(r, o, "label", &tn.label) || f_shape(r, o, "shape", true, &tn.shape) ||
        f_str(r, o, "dtype", &tn.dtype) || f_str(r, o, "device", &tn.device) ||
        f_bool_def(r, o, "requires_grad", &tn.requires_grad) || f_ou64(r, o, "dense_bytes", &has, &tn.dense_bytes) ||
        f_enum_def(r, o, "category", cg_category_parse, V_CATEGORY, CG_CAT_OTHER, &x))
        return -1;
    tn.category = (cg_category)x;
    tn.has_dense_bytes = has;
    if (!has && cg_dense_bytes(&tn.shape, tn.dtype, &tn.dense_bytes)) {
        tn.has_dense_bytes = true;
        tn.dense_bytes_derived = true;
    }
    VEC_PUSH(t->tensors, t->n_tensors, r->cap_tensors);
    t->tensors[t->n_tensors - 1] = tn;
    return 0;
}

static int parse_tensor_stats(rd *r, const cg_jv *o) {
    cg_trace *t = r->t;
    cg_tensor_stats s;
    memset(&s, 0, sizeof s);
    if (f_str(r, o, "span_id", &s.span_id) || f_str(r, o, "label", &s.label) ||
        f_shape(r, o, "shape", true, &s.shape) || f_str(r, o, "dtype", &s.dtype) ||
        f_u64(r, o, "elements", &s.elements) || f_u64(r, o, "non_finite", &s.non_finite) ||
        f_f64(r, o, "rms", &s.rms) || f_f64(r, o, "abs_max", &s.abs_max) || f_f64(r, o, "mean", &s.mean))
        return -1;
    /* validity (§2.5); the product of the shape is checked (overflow = invalid) */
    bool ok = !cg_str_blank(s.label);
    uint64_t prod = 1;
    for (size_t i = 0; ok && i < s.shape.n; i++) {
        uint64_t d = s.shape.dims[i];
        if (d && prod > UINT64_MAX / d) ok = false;
        else prod *= d;
    }
    const char *why = NULL;
    if (!ok) why = cg_str_blank(s.label) ? "label is blank" : "shape element count overflows";
    else if (prod != s.elements) why = "shape product does not equal elements";
    else if (s.non_finite > s.elements) why = "non_finite exceeds elements";
    else if (!(s.rms >= 0) || s.rms != s.rms || s.rms > 1.7976931348623157e308) why = "rms must be finite and non-negative";
    else if (!(s.abs_max >= 0) || s.abs_max > 1.7976931348623157e308) why = "abs_max must be finite and non-negative";
    else if (s.mean != s.mean || s.mean > 1.7976931348623157e308 || s.mean < -1.7976931348623157e308)
        why = "mean must be finite";
    if (why) {
        rule_defer(r, "invalid tensor_stats event at index %zu: %s", r->index, why);
        return 0;
    }
    VEC_PUSH(t->tensor_stats, t->n_tensor_stats, r->cap_stats);
    t->tensor_stats[t->n_tensor_stats - 1] = s;
    return 0;
}

static int parse_memory(rd *r, const cg_jv *o) {
    cg_trace *t = r->t;
    cg_memory m;
    memset(&m, 0, sizeof m);
    int x, act;
    if (f_u64(r, o, "timestamp_ns", &m.timestamp_ns) || f_id(r, o, "storage_id", &m.storage_id) ||
        f_str(r, o, "tensor_id", &m.tensor_id) || f_str(r, o, "span_id", &m.span_id) ||
        f_ostr(r, o, "op_name", &m.op_name) || f_str(r, o, "device", &m.device) || f_u64(r, o, "bytes", &m.bytes))
        return -1;
    static const char *const actions[] = {"alloc", "free"};
    cg_jv *av = cg_jv_get(o, "action");
    if (!av) return missing(r, "action");
    if (av->type != CG_JSTR) return bad_type(r, "action", av, "a string variant");
    act = -1;
    for (int i = 0; i < 2; i++)
        if (!strcmp(av->u.str.s, actions[i])) act = i;
    if (act < 0) return json_fail(r, "unknown variant `%s` for field `action`, expected `alloc` or `free`", av->u.str.s);
    m.is_free = act == 1;
    if (f_shape(r, o, "shape", false, &m.shape) || f_str(r, o, "dtype", &m.dtype) ||
        f_enum_def(r, o, "category", cg_category_parse, V_CATEGORY, CG_CAT_OTHER, &x))
        return -1;
    m.category = (cg_category)x;
    VEC_PUSH(t->memory, t->n_memory, r->cap_memory);
    t->memory[t->n_memory - 1] = m;
    return 0;
}

static int parse_device_memory(rd *r, const cg_jv *o) {
    cg_trace *t = r->t;
    cg_device_memory m;
    memset(&m, 0, sizeof m);
    if (f_u64(r, o, "timestamp_ns", &m.timestamp_ns) || f_str(r, o, "device", &m.device) ||
        f_ou64(r, o, "used_bytes", &m.has_used, &m.used_bytes) ||
        f_ou64(r, o, "free_bytes", &m.has_free, &m.free_bytes) ||
        f_ou64(r, o, "reserved_bytes", &m.has_reserved, &m.reserved_bytes) ||
        f_ou64(r, o, "capacity_bytes", &m.has_capacity, &m.capacity_bytes))
        return -1;
    VEC_PUSH(t->device_memory, t->n_device_memory, r->cap_dm);
    t->device_memory[t->n_device_memory - 1] = m;
    return 0;
}

static int parse_device_interval(rd *r, const cg_jv *o) {
    cg_trace *t = r->t;
    cg_device_interval d;
    memset(&d, 0, sizeof d);
    if (f_str(r, o, "span_id", &d.span_id) || f_str(r, o, "device", &d.device) ||
        f_str(r, o, "stream_id", &d.stream_id) || f_str(r, o, "clock_id", &d.clock_id) ||
        f_str(r, o, "backend", &d.backend) || f_u64(r, o, "start_ns", &d.start_ns) ||
        f_u64(r, o, "duration_ns", &d.duration_ns))
        return -1;
    VEC_PUSH(t->device_intervals, t->n_device_intervals, r->cap_di);
    t->device_intervals[t->n_device_intervals - 1] = d;
    return 0;
}

static int parse_gradient(rd *r, const cg_jv *o) {
    cg_trace *t = r->t;
    cg_gradient g;
    memset(&g, 0, sizeof g);
    int x;
    if (f_id(r, o, "event_id", &g.event_id) || f_str(r, o, "root", &g.root) || f_str(r, o, "key", &g.key) ||
        f_enum(r, o, "state", cg_grad_state_parse, "`present`, `missing`, `zero`, `non_finite`", &x))
        return -1;
    g.state = (cg_grad_state)x;
    cg_jv *n = cg_jv_get(o, "norm");
    if (n && n->type != CG_JNULL) {
        if (f_f64v(r, "norm", n, &g.norm)) return -1;
        g.has_norm = true;
    }
    VEC_PUSH(t->gradients, t->n_gradients, r->cap_grad);
    t->gradients[t->n_gradients - 1] = g;
    return 0;
}

static int parse_edge(rd *r, const cg_jv *o) {
    cg_trace *t = r->t;
    cg_edge e;
    memset(&e, 0, sizeof e);
    cg_jv *k = cg_jv_get(o, "edge_kind");
    if (!k) return missing(r, "edge_kind");
    if (k->type != CG_JSTR) return bad_type(r, "edge_kind", k, "a string variant");
    if (!strcmp(k->u.str.s, "call")) {
        if (f_str(r, o, "from_span", &e.from) || f_str(r, o, "to_span", &e.to) ||
            f_u64(r, o, "host_duration_ns", &e.host_duration_ns))
            return -1;
    } else if (!strcmp(k->u.str.s, "data")) {
        e.is_data = true;
        if (f_str(r, o, "from_tensor", &e.from) || f_str(r, o, "to_tensor", &e.to)) return -1;
    } else {
        return json_fail(r, "unknown variant `%s` for field `edge_kind`, expected `call` or `data`", k->u.str.s);
    }
    VEC_PUSH(t->edges, t->n_edges, r->cap_edges);
    t->edges[t->n_edges - 1] = e;
    return 0;
}

static int parse_terminal(rd *r, const cg_jv *o) {
    cg_terminal *tm = &r->t->terminal;
    int x;
    if (f_enum(r, o, "outcome", cg_outcome_parse, "`complete`, `failed`", &x) ||
        f_u64(r, o, "timestamp_ns", &tm->timestamp_ns) || f_ostr(r, o, "reason", &tm->reason))
        return -1;
    tm->outcome = (cg_outcome)x;
    return 0;
}

/* ---- one line ---- */

static int handle_line(rd *r, const char *p, size_t n) {
    /* skip blank / whitespace-only lines */
    size_t k = 0;
    while (k < n && (p[k] == ' ' || p[k] == '\t' || p[k] == '\r' || p[k] == '\n' || p[k] == '\f' || p[k] == '\v')) k++;
    if (k == n) return 0;
    cg_error jerr;
    cg_err_clear(&jerr);
    cg_arena_reset(&r->la);
    /* Rust's str::trim is Unicode-aware: a line of U+00A0, U+3000, … is blank too */
    if ((unsigned char)p[k] >= 0x80 && !memchr(p + k, '\0', n - k) &&
        cg_str_blank(cg_arena_strndup(&r->la, p + k, n - k)))
        return 0;
    cg_jv *o = cg_json_parse(&r->la, p, n, &r->lim->json, &jerr);
    if (!o) {
        if (jerr.code == CG_ELIMIT) {
            cg_err_set(r->err, CG_ELIMIT, "parse trace JSONL line %zu from %s: %s", r->line, r->path, jerr.msg);
            if (r->err) r->err->line = (int)r->line;
            return -1;
        }
        return json_fail(r, "%s", jerr.msg);
    }
    if (o->type != CG_JOBJ) return json_fail(r, "invalid type: %s, expected a trace event object", type_name(o));
    const char *dup = cg_jv_obj_dup_key(o);
    if (dup) return json_fail(r, "duplicate field `%s`", dup);
    cg_jv *kind = cg_jv_get(o, "kind");
    if (!kind) return json_fail(r, "missing field `kind`");
    if (kind->type != CG_JSTR) return bad_type(r, "kind", kind, "a string variant");
    const char *ks = kind->u.str.s;
    size_t maxrec = r->lim->max_records;
    if (r->index >= maxrec) {
        cg_err_set(r->err, CG_ELIMIT, "trace %s has more than the limit of %zu records (line %zu)", r->path, maxrec,
                   r->line);
        if (r->err) r->err->line = (int)r->line;
        return -1;
    }
    static const char *const kinds[] = {"meta", "span_start", "span_end", "op", "tensor", "tensor_stats", "memory",
                                        "device_memory", "device_interval", "gradient", "edge", "terminal"};
    int ki = -1;
    for (int i = 0; i < 12; i++)
        if (!strcmp(ks, kinds[i])) ki = i;
    if (ki < 0)
        return json_fail(r,
                         "unknown variant `%s`, expected one of `meta`, `span_start`, `span_end`, `op`, `tensor`, "
                         "`tensor_stats`, `memory`, `device_memory`, `device_interval`, `gradient`, `edge`, `terminal`",
                         ks);
    /* ordering rules */
    if (r->have_terminal) rule_defer(r, "terminal event must be the final trace record");
    if (ki == 0) {
        if (r->have_meta) rule_defer(r, "duplicate meta event");
        else if (r->index != 0) rule_defer(r, "meta event must be the first non-empty trace record");
    } else if (!r->have_meta) {
        rule_defer(r, "meta event must be the first non-empty trace record");
    }
    int rc = 0;
    switch (ki) {
    case 0: rc = parse_meta(r, o); if (!rc) r->have_meta = true; break;
    case 1: rc = parse_span_start(r, o); break;
    case 2: rc = parse_span_end(r, o); break;
    case 3: rc = parse_op(r, o); break;
    case 4: rc = parse_tensor(r, o); break;
    case 5:
        if (r->trace9) rule_defer(r, "trace/9 does not define tensor_stats events");
        rc = parse_tensor_stats(r, o);
        break;
    case 6: rc = parse_memory(r, o); break;
    case 7: rc = parse_device_memory(r, o); break;
    case 8: rc = parse_device_interval(r, o); break;
    case 9: rc = parse_gradient(r, o); break;
    case 10: rc = parse_edge(r, o); break;
    case 11: rc = parse_terminal(r, o); if (!rc) r->have_terminal = true; break;
    }
    r->index++;
    return rc;
}

static int cmp_span(const void *x, const void *y) { return strcmp(((const cg_span *)x)->id, ((const cg_span *)y)->id); }

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

static int finish_doc(rd *r) {
    cg_trace *t = r->t;
    if (r->rule_failed) {
        if (r->err) *r->err = r->rule_err;
        return -1;
    }
    if (!r->have_meta) return rule_fail(r, false, "missing a meta event with run metadata");
    if (!r->have_terminal) return rule_fail(r, false, "missing a terminal event");
    const cg_terminal *tm = &t->terminal;
    bool blank_reason = !tm->reason || cg_str_blank(tm->reason);
    if (tm->outcome == CG_OUTCOME_COMPLETE && tm->reason)
        return rule_fail(r, false, "complete terminal event cannot contain a failure reason");
    if (tm->outcome == CG_OUTCOME_FAILED && blank_reason)
        return rule_fail(r, false, "failed terminal event requires a non-empty reason");
    uint64_t latest = 0;
    for (size_t i = 0; i < t->n_spans; i++) {
        uint64_t e = sat_add(t->spans[i].start_ns, t->spans[i].closed ? t->spans[i].duration_ns : 0);
        if (e > latest) latest = e;
    }
    for (size_t i = 0; i < t->n_ops; i++) {
        uint64_t e = sat_add(t->ops[i].timestamp_ns, t->ops[i].duration_ns);
        if (e > latest) latest = e;
    }
    for (size_t i = 0; i < t->n_memory; i++)
        if (t->memory[i].timestamp_ns > latest) latest = t->memory[i].timestamp_ns;
    for (size_t i = 0; i < t->n_device_memory; i++)
        if (t->device_memory[i].timestamp_ns > latest) latest = t->device_memory[i].timestamp_ns;
    if (tm->timestamp_ns < latest)
        return rule_fail(r, false, "terminal event timestamp %llu precedes the latest host evidence end %llu",
                         (unsigned long long)tm->timestamp_ns, (unsigned long long)latest);
    if (t->n_spans > 1) qsort(t->spans, t->n_spans, sizeof *t->spans, cmp_span);
    return 0;
}

/* ---- drivers ---- */

static cg_trace *new_trace(void) {
    cg_trace *t = calloc(1, sizeof *t);
    if (!t) abort();
    cg_arena_init(&t->arena, 1 << 20);
    return t;
}

static void rd_init(rd *r, cg_trace *t, const char *path, cg_error *err, cg_trace_limits *lim) {
    memset(r, 0, sizeof *r);
    r->t = t;
    r->path = path;
    r->err = err;
    cg_arena_init(&r->la, 64 * 1024);
    cg_strmap_init(&r->span_ix);
    r->lim = lim;
}

static void rd_done(rd *r) {
    cg_arena_free(&r->la);
    itab_free(&r->intern);
    cg_strmap_free(&r->span_ix);
}

cg_trace *cg_trace_read_mem(const char *data, size_t len, const char *display_path, const cg_trace_limits *lim,
                            cg_error *err) {
    cg_trace_limits l;
    if (lim) l = *lim;
    else cg_trace_limits_default(&l);
    cg_trace *t = new_trace();
    rd r;
    rd_init(&r, t, display_path ? display_path : "<memory>", err, &l);
    const char *p = data, *end = data + len;
    int rc = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        r.line++;
        if ((size_t)(le - p) > l.max_line_bytes) {
            rc = cg_err_set(err, CG_ELIMIT, "trace %s line %zu is longer than the limit of %zu bytes", r.path, r.line,
                            l.max_line_bytes);
            if (err) err->line = (int)r.line;
            break;
        }
        if ((rc = handle_line(&r, p, (size_t)(le - p))) != 0) break;
        p = nl ? nl + 1 : end;
    }
    if (!rc) rc = finish_doc(&r);
    rd_done(&r);
    if (rc) {
        cg_trace_free(t);
        return NULL;
    }
    return t;
}

cg_trace *cg_trace_read_file(const char *path, const cg_trace_limits *lim, cg_error *err) {
    cg_trace_limits l;
    if (lim) l = *lim;
    else cg_trace_limits_default(&l);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cg_err_set(err, CG_EIO, "read trace %s: %s", path, strerror(errno));
        return NULL;
    }
    cg_trace *t = new_trace();
    rd r;
    rd_init(&r, t, path, err, &l);
    size_t cap = 4u << 20, len = 0, off = 0;
    char *buf = malloc(cap);
    if (!buf) abort();
    int rc = 0;
    bool eof = false;
    while (!rc) {
        /* process complete lines in buf[off..len) */
        char *nl;
        while ((nl = memchr(buf + off, '\n', len - off)) != NULL) {
            size_t ll = (size_t)(nl - (buf + off));
            r.line++;
            if (ll > l.max_line_bytes) {
                rc = cg_err_set(err, CG_ELIMIT, "trace %s line %zu is longer than the limit of %zu bytes", path,
                                r.line, l.max_line_bytes);
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
                    rc = cg_err_set(err, CG_ELIMIT, "trace %s line %zu is longer than the limit of %zu bytes", path,
                                    r.line, l.max_line_bytes);
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
                rc = cg_err_set(err, CG_ELIMIT, "trace %s line %zu is longer than the limit of %zu bytes", path,
                                r.line + 1, l.max_line_bytes);
                if (err) err->line = (int)(r.line + 1);
                break;
            }
            cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb) abort();
            buf = nb;
        }
        ssize_t got = read(fd, buf + len, cap - len);
        if (got < 0) {
            if (errno == EINTR) continue;
            rc = cg_err_set(err, CG_EIO, "read trace %s: %s", path, strerror(errno));
            break;
        }
        if (got == 0) eof = true;
        len += (size_t)got;
    }
    free(buf);
    close(fd);
    if (!rc) rc = finish_doc(&r);
    rd_done(&r);
    if (rc) {
        cg_trace_free(t);
        return NULL;
    }
    return t;
}

void cg_trace_free(cg_trace *t) {
    if (!t) return;
    free(t->spans);
    free(t->ops);
    free(t->tensors);
    free(t->tensor_stats);
    free(t->memory);
    free(t->device_memory);
    free(t->device_intervals);
    free(t->gradients);
    free(t->edges);
    cg_arena_free(&t->arena);
    free(t);
}
