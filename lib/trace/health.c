/* health.c — structural health of a trace: analyze_health of the crate
 * (src/trace/health.rs at 78b848e2), its codes, severities, messages,
 * multiplicity and order.
 *
 * Issue order (the crate's):
 *   1. run_provenance_invalid (TraceRunMeta::validate's first failure)
 *   2. complete_with_failure_reason | failed_without_reason,
 *      terminal_precedes_evidence, capture_failed (warning)
 *   3. duplicate_span_id (once), root_count, measurement_count (not when failed)
 *   4. per span in id order: open_span, unknown_parent | child_outside_parent,
 *      span_cycle
 *   5. unknown_span: operations, tensors, tensor stats, memory, device intervals
 *   6. empty_device_interval, operation_outside_span, memory_outside_span,
 *      empty_device_memory_sample
 *   7. per edge, one issue per bad edge: unknown_call_edge_span |
 *      call_edge_hierarchy_mismatch, call_edge_duration_mismatch;
 *      empty_data_edge_endpoint | unknown_data_edge_tensor
 *   8. memory pairing in timestamp order (stable), then retained_allocations
 *   9. gradient events; gradient contract (missing | without complete coverage
 *      | invalid, then per observed (root, key) in sorted order, per manifest
 *      entry, per family)
 *  10. absence warnings
 *  11. per required label: empty_, duplicate_, _cardinality (each occurrence,
 *      blank and repeated ones included); then, when either class list is
 *      declared, per GPU-expected then CPU-only label: empty_, duplicate_,
 *      unrequired_, overlapping_semantic_label_classification; then
 *      incomplete_semantic_label_partition. All of 11 are warnings when the
 *      capture failed.
 *
 * Cost: every lookup goes through open-addressing hash tables keyed by record
 * index (8 bytes a slot); the span of each op and memory event is looked up
 * once for checks 5 and 6 (slots prefetched; 4 bytes a record of scratch).
 * The only sorts are the memory walk's (only when the memory events are not
 * already in timestamp order) and the distinct gradient keys'. */
#include "trace/health.h"

#include "base/alloc.h"
#include "base/hmap.h"
#include "base/num.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *cg_severity_name(cg_severity s) { return s == CG_SEV_ERROR ? "error" : "warning"; }

/* ---- record indices by key (base/hmap.h) -------------------------------- */

typedef struct hkey {
    const char *a, *b;
    uint64_t n;
} hkey;
typedef hkey (*hkey_of)(const void *ctx, uint32_t id);

/* A table of record ids and the function that gives a record's key. */
typedef struct hmap {
    cg_hmap t;
    hkey_of key;
    const void *ctx;
} hmap;

#define HNONE CG_HMAP_NONE

static uint64_t str_hash(uint64_t h, const char *s) {
    return s ? cg_hmap_hash_bytes(h, s, strlen(s)) : h ^ 0x9e3779b97f4a7c15ULL;
}

static uint64_t hkey_hash(hkey k) {
    uint64_t h = str_hash(0xcbf29ce484222325ULL, k.a);
    h = str_hash(h * 0x100000001b3ULL, k.b);
    h = cg_hmap_mix(h, k.n);
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static bool str_eq(const char *x, const char *y) {
    if (x == y) return true;
    if (!x || !y) return false;
    return strcmp(x, y) == 0;
}

static bool hkey_eq(hkey x, hkey y) { return x.n == y.n && str_eq(x.a, y.a) && str_eq(x.b, y.b); }

static bool hmap_eq(const void *ctx, uint32_t id, const void *key) {
    const hmap *m = ctx;
    return hkey_eq(m->key(m->ctx, id), *(const hkey *)key);
}

static void hmap_init(hmap *m, size_t expect, hkey_of key, const void *ctx) {
    cg_hmap_init(&m->t, expect);
    m->key = key;
    m->ctx = ctx;
}

static void hmap_free(hmap *m) { cg_hmap_free(&m->t); }

/* Returns the id stored under k. When absent: inserts put_id (unless HNONE)
 * and returns HNONE. */
static uint32_t hmap_get_or_put(hmap *m, hkey k, uint32_t put_id) {
    uint64_t h = hkey_hash(k);
    if (put_id == HNONE) return cg_hmap_find(&m->t, h, hmap_eq, m, &k, NULL);
    return cg_hmap_find_or_put(&m->t, h, hmap_eq, m, &k, put_id);
}

static uint32_t hmap_get(const hmap *m, hkey k) { return cg_hmap_find(&m->t, hkey_hash(k), hmap_eq, m, &k, NULL); }

static hkey key1(const char *a) { return (hkey){a, NULL, 0}; }

/* Lookups of a run of keys in one table, each one's slot prefetched LOOKAHEAD
 * keys before its turn: the tables of a large trace do not fit the cache, and
 * a lone lookup waits for memory. Keys are answered in the order they are
 * pushed, so get-or-put runs see exactly the table a plain loop sees. */
#define LOOKAHEAD 16u

typedef struct lookahead {
    hkey k[LOOKAHEAD];
    uint64_t h[LOOKAHEAD];
    uint32_t tag[LOOKAHEAD]; /* the caller's note of what each key is for */
    unsigned head, n;
} lookahead;

/* Queues k; the queue must not be full (la_full: pop one first). */
static void la_push(lookahead *q, const hmap *m, hkey k, uint32_t tag) {
    unsigned i = (q->head + q->n++) % LOOKAHEAD;
    q->k[i] = k;
    q->h[i] = hkey_hash(k);
    q->tag[i] = tag;
    cg_hmap_prefetch(&m->t, q->h[i]);
}

static bool la_full(const lookahead *q) { return q->n == LOOKAHEAD; }

/* The oldest queued key's lookup (put_id stored when absent, unless HNONE);
 * *tag receives its note. */
static uint32_t la_pop(lookahead *q, hmap *m, uint32_t put_id, uint32_t *tag) {
    unsigned i = q->head;
    q->head = (q->head + 1) % LOOKAHEAD;
    q->n--;
    if (tag) *tag = q->tag[i];
    if (put_id == HNONE) return cg_hmap_find(&m->t, q->h[i], hmap_eq, m, &q->k[i], NULL);
    return cg_hmap_find_or_put(&m->t, q->h[i], hmap_eq, m, &q->k[i], put_id);
}

static const hkey *la_front(const lookahead *q) { return &q->k[q->head]; }

/* ---- analysis context ----------------------------------------------------- */

typedef struct hctx {
    const cg_trace *t;
    cg_health *h;
    bool failed; /* terminal outcome failed */
    cg_health_issue *v;
    size_t n, cap;
    hmap spans;          /* span id -> index of its first occurrence */
    const char *last_id; /* lookup cache: records of one span share the interned id */
    uint32_t last_idx;
    cg_buf dbg;          /* scratch for Rust `{:?}` renderings */
} hctx;

static void add_issue(hctx *c, cg_severity sev, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void add_issue(hctx *c, cg_severity sev, const char *code, const char *fmt, ...) {
    if (c->n == c->cap) c->v = cg_xgrow(c->v, &c->cap, c->n + 1, sizeof *c->v);
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (len < 0) len = 0;
    char *msg = cg_arena_alloc(&c->h->arena, (size_t)len + 1);
    vsnprintf(msg, (size_t)len + 1, fmt, ap2);
    va_end(ap2);
    c->v[c->n++] = (cg_health_issue){sev, code, msg};
}

/* The crate's required_semantic_label_issue: an error, a warning when the capture failed. */
static cg_severity sev_f(const hctx *c) { return c->failed ? CG_SEV_WARNING : CG_SEV_ERROR; }


static unsigned long long ull(uint64_t v) { return (unsigned long long)v; }

/* Rust `{:?}` of a string, copied into the health arena. */
static const char *dbg_str(hctx *c, const char *s) {
    cg_buf_reset(&c->dbg);
    cg_rust_debug_str(&c->dbg, s ? s : "");
    return cg_arena_strndup(&c->h->arena, c->dbg.data, c->dbg.len);
}

static hkey span_key(const void *ctx, uint32_t id) { return key1(((const cg_trace *)ctx)->spans[id].id); }

static uint32_t find_span(hctx *c, const char *id) {
    if (!id) return HNONE;
    if (id == c->last_id) return c->last_idx;
    uint32_t ix = hmap_get(&c->spans, key1(id));
    c->last_id = id;
    c->last_idx = ix;
    return ix;
}

static uint64_t span_end(const cg_span *s) { return cg_sat_add_u64(s->start_ns, s->duration_ns); }

/* ---- run provenance and terminal ------------------------------------------- */

static void check_run_provenance(hctx *c) {
    cg_error err;
    cg_err_clear(&err);
    if (cg_run_meta_validate(&c->t->run, &err) != 0)
        add_issue(c, CG_SEV_ERROR, "run_provenance_invalid", "%s", err.msg);
}

static void check_terminal(hctx *c) {
    const cg_terminal *term = &c->t->terminal;
    switch (cg_rule_terminal_reason(term)) {
    case CG_TERMINAL_COMPLETE_WITH_REASON:
        add_issue(c, CG_SEV_ERROR, "complete_with_failure_reason",
                  "complete terminal outcome cannot contain a failure reason");
        break;
    case CG_TERMINAL_FAILED_WITHOUT_REASON:
        add_issue(c, CG_SEV_ERROR, "failed_without_reason", "failed terminal outcome requires a non-empty reason");
        break;
    case CG_TERMINAL_REASON_OK: break;
    }
    uint64_t latest;
    if (cg_rule_terminal_precedes_evidence(c->t, &latest))
        add_issue(c, CG_SEV_ERROR, "terminal_precedes_evidence",
                  "terminal timestamp %llu precedes host evidence ending at %llu", ull(term->timestamp_ns),
                  ull(latest));
    if (c->failed)
        add_issue(c, CG_SEV_WARNING, "capture_failed", "%s",
                  term->reason ? term->reason : "capture ended with a failed outcome");
}

/* ---- spans ----------------------------------------------------------------- */

static void check_span_counts(hctx *c) {
    const cg_trace *t = c->t;
    bool dup = false;
    for (size_t i = 0; i < t->n_spans; i++)
        if (hmap_get_or_put(&c->spans, key1(t->spans[i].id), (uint32_t)i) != HNONE) dup = true;
    if (dup) add_issue(c, CG_SEV_ERROR, "duplicate_span_id", "span IDs must be unique");
    size_t roots = 0, measured = 0;
    for (size_t i = 0; i < t->n_spans; i++) {
        roots += !t->spans[i].parent_id;
        measured += t->spans[i].measured;
    }
    if (roots != 1) add_issue(c, CG_SEV_ERROR, "root_count", "expected exactly one root span, found %zu", roots);
    if (measured != 1 && !c->failed)
        add_issue(c, CG_SEV_ERROR, "measurement_count", "expected exactly one measured region, found %zu", measured);
}

enum { CYC_NEW = 0, CYC_PATH, CYC_OK, CYC_BAD };

/* Marks every span whose parent walk revisits a span (on or leading into a
 * cycle) as CYC_BAD: one colouring pass over the parent links, O(n). */
static unsigned char *cycle_states(const uint32_t *parent, size_t n) {
    unsigned char *state = cg_xzalloc(n, 1);
    uint32_t *path = cg_xzalloc(n, sizeof *path);
    for (size_t i = 0; i < n; i++) {
        if (state[i] != CYC_NEW) continue;
        size_t len = 0;
        uint32_t cur = (uint32_t)i;
        unsigned char verdict = CYC_OK;
        while (cur != HNONE) {
            if (state[cur] == CYC_PATH) {
                verdict = CYC_BAD;
                break;
            }
            if (state[cur] != CYC_NEW) {
                verdict = state[cur];
                break;
            }
            state[cur] = CYC_PATH;
            path[len++] = cur;
            cur = parent[cur];
        }
        for (size_t k = 0; k < len; k++) state[path[k]] = verdict;
    }
    cg_free(path);
    return state;
}

/* Per span (id order): open_span, unknown_parent | child_outside_parent, span_cycle. */
static void check_span_tree(hctx *c) {
    const cg_trace *t = c->t;
    size_t n = t->n_spans;
    uint32_t *parent = cg_xzalloc(n, sizeof *parent);
    for (size_t i = 0; i < n; i++) parent[i] = find_span(c, t->spans[i].parent_id);
    unsigned char *state = cycle_states(parent, n);
    for (size_t i = 0; i < n; i++) {
        const cg_span *s = &t->spans[i];
        if (!s->closed) {
            if (c->failed) add_issue(c, CG_SEV_WARNING, "open_span", "span `%s` was interrupted", s->id);
            else add_issue(c, CG_SEV_ERROR, "open_span", "span `%s` was not closed", s->id);
        }
        if (s->parent_id && parent[i] == HNONE) {
            add_issue(c, CG_SEV_ERROR, "unknown_parent", "span `%s` refers to missing parent `%s`", s->id,
                      s->parent_id);
        } else if (s->parent_id) {
            const cg_span *p = &t->spans[parent[i]];
            if (s->closed && p->closed && (s->start_ns < p->start_ns || span_end(s) > span_end(p)))
                add_issue(c, CG_SEV_ERROR, "child_outside_parent", "span `%s` lies outside parent `%s`", s->id,
                          s->parent_id);
        }
        if (state[i] == CYC_BAD)
            add_issue(c, CG_SEV_ERROR, "span_cycle", "span `%s` participates in a parent cycle", s->id);
    }
    cg_free(state);
    cg_free(parent);
}

/* ---- evidence records ------------------------------------------------------ */

/* The span_id of record i of one kind. */
typedef const char *(*span_id_of)(const cg_trace *t, size_t i);
static const char *op_span(const cg_trace *t, size_t i) { return t->ops[i].span_id; }
static const char *tensor_span(const cg_trace *t, size_t i) { return t->tensors[i].span_id; }
static const char *stats_span(const cg_trace *t, size_t i) { return t->tensor_stats[i].span_id; }
static const char *memory_span(const cg_trace *t, size_t i) { return t->memory[i].span_id; }
static const char *interval_span(const cg_trace *t, size_t i) { return t->device_intervals[i].span_id; }

#define SAME_AS_BEFORE (HNONE - 1) /* below every span index: fewer than 2^32 - 2 spans */

/* find_span of records 0..n-1 into a new array (the caller frees): a record
 * naming its predecessor's span (the interned pointer) reuses that answer,
 * every other lookup has its slot prefetched LOOKAHEAD lookups ahead. */
static uint32_t *span_indices(hctx *c, size_t n, span_id_of id_of) {
    uint32_t *ix = cg_xalloc(n ? n : 1, sizeof *ix);
    lookahead q = {0};
    const char *prev = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *id = id_of(c->t, i);
        if (!id) {
            ix[i] = HNONE;
        } else if (i > 0 && id == prev) {
            ix[i] = SAME_AS_BEFORE;
        } else {
            uint32_t tag;
            if (la_full(&q)) {
                uint32_t got = la_pop(&q, &c->spans, HNONE, &tag);
                ix[tag] = got;
            }
            la_push(&q, &c->spans, key1(id), (uint32_t)i);
        }
        prev = id;
    }
    while (q.n) {
        uint32_t tag, got = la_pop(&q, &c->spans, HNONE, &tag);
        ix[tag] = got;
    }
    for (size_t i = 1; i < n; i++)
        if (ix[i] == SAME_AS_BEFORE) ix[i] = ix[i - 1];
    return ix;
}

/* unknown_span of each record whose span index is HNONE. */
static void unknown_spans(hctx *c, const char *kind, size_t n, span_id_of id_of, const uint32_t *ix) {
    for (size_t i = 0; i < n; i++)
        if (ix[i] == HNONE)
            add_issue(c, CG_SEV_ERROR, "unknown_span", "%s evidence refers to missing span `%s`", kind, id_of(c->t, i));
}

/* The same for a kind whose indices serve no other check. */
static void unknown_spans_of(hctx *c, const char *kind, size_t n, span_id_of id_of) {
    uint32_t *ix = span_indices(c, n, id_of);
    unknown_spans(c, kind, n, id_of, ix);
    cg_free(ix);
}

/* op_ix / mem_ix: the span indices of the ops and memory events (span_indices). */
static void check_evidence_spans(hctx *c, const uint32_t *op_ix, const uint32_t *mem_ix) {
    const cg_trace *t = c->t;
    unknown_spans(c, "operation", t->n_ops, op_span, op_ix);
    unknown_spans_of(c, "tensor", t->n_tensors, tensor_span);
    unknown_spans_of(c, "tensor stats", t->n_tensor_stats, stats_span);
    unknown_spans(c, "memory", t->n_memory, memory_span, mem_ix);
    unknown_spans_of(c, "device interval", t->n_device_intervals, interval_span);
}

/* The closed span of span index si, or NULL. */
static const cg_span *closed_span(hctx *c, uint32_t si) {
    return si != HNONE && c->t->spans[si].closed ? &c->t->spans[si] : NULL;
}

static void check_records_inside_spans(hctx *c, const uint32_t *op_ix, const uint32_t *mem_ix) {
    const cg_trace *t = c->t;
    for (size_t i = 0; i < t->n_device_intervals; i++)
        if (t->device_intervals[i].duration_ns == 0)
            add_issue(c, CG_SEV_ERROR, "empty_device_interval", "device interval for `%s` has zero duration",
                      t->device_intervals[i].span_id);
    for (size_t i = 0; i < t->n_ops; i++) {
        const cg_op *o = &t->ops[i];
        const cg_span *s = closed_span(c, op_ix[i]);
        if (s && (o->timestamp_ns < s->start_ns || cg_sat_add_u64(o->timestamp_ns, o->duration_ns) > span_end(s)))
            add_issue(c, CG_SEV_ERROR, "operation_outside_span", "operation `%s` lies outside span `%s`",
                      o->op_name, o->span_id);
    }
    for (size_t i = 0; i < t->n_memory; i++) {
        const cg_memory *m = &t->memory[i];
        const cg_span *s = closed_span(c, mem_ix[i]);
        if (s && (m->timestamp_ns < s->start_ns || m->timestamp_ns > span_end(s)))
            add_issue(c, CG_SEV_ERROR, "memory_outside_span", "memory event for storage `%s` lies outside span `%s`",
                      m->storage_id, m->span_id);
    }
    for (size_t i = 0; i < t->n_device_memory; i++) {
        const cg_device_memory *d = &t->device_memory[i];
        if (!d->has_used && !d->has_free && !d->has_reserved && !d->has_capacity)
            add_issue(c, CG_SEV_ERROR, "empty_device_memory_sample",
                      "device-memory sample for `%s` contains no measurements", d->device);
    }
}

/* ---- edges: one issue per bad edge ------------------------------------------- */
typedef struct strvec {
    const char **s;
    size_t n, cap;
} strvec;

static hkey strvec_key(const void *ctx, uint32_t id) { return key1(((const strvec *)ctx)->s[id]); }

static void strvec_push(strvec *v, const char *s) {
    if (v->n == v->cap) v->s = cg_xgrow(v->s, &v->cap, v->n + 1, sizeof *v->s);
    v->s[v->n++] = s;
}

/* Queues endpoint lookup s, first marking the oldest queued one's answer when the queue is full. */
static void known_push(lookahead *q, hmap *ends, unsigned char *known, const char *s) {
    if (la_full(q)) {
        uint32_t id = la_pop(q, ends, HNONE, NULL);
        if (id != HNONE) known[id] = 1;
    }
    la_push(q, ends, key1(s), 0);
}

/* Marks which data-edge endpoints are known tensors (tensor events ∪ op inputs
 * ∪ op outputs); endpoints hold the distinct non-empty endpoint strings. */
static unsigned char *known_endpoints(const cg_trace *t, hmap *ends, size_t n_ends) {
    unsigned char *known = cg_xzalloc(n_ends, 1);
    lookahead q = {0};
    for (size_t i = 0; i < t->n_tensors; i++) known_push(&q, ends, known, t->tensors[i].tensor_id);
    for (size_t i = 0; i < t->n_ops; i++) {
        const cg_op *o = &t->ops[i];
        for (size_t j = 0; j < o->inputs.n; j++) known_push(&q, ends, known, o->inputs.items[j]);
        if (o->output) known_push(&q, ends, known, o->output);
    }
    while (q.n) {
        uint32_t id = la_pop(&q, ends, HNONE, NULL);
        if (id != HNONE) known[id] = 1;
    }
    return known;
}

static bool blank_id(const char *s) { return !s || !*s; }

static void check_call_edge(hctx *c, const cg_edge *e) {
    uint32_t from = find_span(c, e->from), to = find_span(c, e->to);
    if (from == HNONE || to == HNONE) {
        add_issue(c, CG_SEV_ERROR, "unknown_call_edge_span", "call edge `%s` -> `%s` refers to a missing span",
                  e->from, e->to);
        return;
    }
    const cg_span *target = &c->t->spans[to];
    if (!target->parent_id || strcmp(target->parent_id, e->from) != 0)
        add_issue(c, CG_SEV_ERROR, "call_edge_hierarchy_mismatch",
                  "call edge `%s` -> `%s` does not match the span hierarchy", e->from, e->to);
    if (target->closed && e->host_duration_ns != target->duration_ns)
        add_issue(c, CG_SEV_ERROR, "call_edge_duration_mismatch",
                  "call edge `%s` -> `%s` reports %llu ns but the span reports %llu ns", e->from, e->to,
                  ull(e->host_duration_ns), ull(target->duration_ns));
}

/* Stores the oldest queued endpoint in the table (a new one joins ends) and
 * notes its id at ep[tag]. */
static void endpoint_pop(lookahead *q, hmap *endmap, strvec *ends, uint32_t *ep) {
    strvec_push(ends, la_front(q)->a); /* the key must be readable if the insert grows the table */
    uint32_t tag, id = la_pop(q, endmap, (uint32_t)(ends->n - 1), &tag);
    if (id != HNONE) ends->n--;
    ep[tag] = id == HNONE ? (uint32_t)(ends->n - 1) : id;
}

/* The distinct non-empty data-edge endpoints, in first-seen order, with
 * ep[2i], ep[2i+1] the ids of edge i's from and to (HNONE when blank). */
static uint32_t *edge_endpoints(const cg_trace *t, hmap *endmap, strvec *ends) {
    uint32_t *ep = cg_xzalloc(2 * t->n_edges + 1, sizeof *ep);
    lookahead q = {0};
    for (size_t i = 0; i < t->n_edges; i++) {
        const cg_edge *e = &t->edges[i];
        if (!e->is_data) continue;
        const char *pts[2] = {e->from, e->to};
        for (int k = 0; k < 2; k++) {
            ep[2 * i + (size_t)k] = HNONE;
            if (blank_id(pts[k])) continue;
            if (la_full(&q)) endpoint_pop(&q, endmap, ends, ep);
            la_push(&q, endmap, key1(pts[k]), (uint32_t)(2 * i + (size_t)k));
        }
    }
    while (q.n) endpoint_pop(&q, endmap, ends, ep);
    return ep;
}

static void check_edges(hctx *c) {
    const cg_trace *t = c->t;
    strvec ends = {0};
    hmap endmap;
    hmap_init(&endmap, t->n_edges, strvec_key, &ends);
    uint32_t *ep = edge_endpoints(t, &endmap, &ends);
    unsigned char *known = ends.n ? known_endpoints(t, &endmap, ends.n) : NULL;
    for (size_t i = 0; i < t->n_edges; i++) {
        const cg_edge *e = &t->edges[i];
        if (!e->is_data) {
            check_call_edge(c, e);
        } else if (blank_id(e->from) || blank_id(e->to)) {
            add_issue(c, CG_SEV_ERROR, "empty_data_edge_endpoint", "data-edge tensor IDs cannot be empty");
        } else if (!known[ep[2 * i]] || !known[ep[2 * i + 1]]) {
            add_issue(c, CG_SEV_ERROR, "unknown_data_edge_tensor",
                      "data edge `%s` -> `%s` refers to unknown tensor evidence", e->from, e->to);
        }
    }
    cg_free(ep);
    cg_free(known);
    cg_free(ends.s);
    hmap_free(&endmap);
}

/* ---- 6. memory pairing walk ------------------------------------------------ */

/* The keys are kept beside the state (not looked up through the memory
 * record) so that a probe touches one entry, not the record too. */
typedef struct storage_state {
    const char *device, *storage_id; /* the key */
    const char *first_tensor;        /* tensor of the allocation that opened the live lifetime */
    uint32_t live_id;                /* 0 = not live */
    uint64_t bytes;                  /* bytes of the opening allocation while live */
} storage_state;

/* A further tensor allocated on a live storage (the opening one is the
 * storage's first_tensor): only aliases go through the alias table. */
typedef struct alias_ent {
    const char *tensor_id; /* of the memory event that made the alias */
    uint32_t live_id;      /* lifetime the alias belongs to */
} alias_ent;

typedef struct memwalk {
    const cg_trace *t;
    storage_state *st;
    size_t n_st, cap_st;
    alias_ent *al;
    size_t n_al, cap_al;
    hmap storages, aliases;
    uint32_t next_live;
    uint64_t live;
} memwalk;

static hkey storage_key(const void *ctx, uint32_t id) {
    const memwalk *w = ctx;
    return (hkey){w->st[id].device, w->st[id].storage_id, 0};
}

static hkey alias_key(const void *ctx, uint32_t id) {
    const memwalk *w = ctx;
    return (hkey){w->al[id].tensor_id, NULL, w->al[id].live_id};
}

typedef struct mem_order {
    uint64_t ts;
    uint32_t idx;
} mem_order;

static int mem_order_cmp(const void *pa, const void *pb) {
    const mem_order *a = pa, *b = pb;
    if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx; /* stable */
}

static void alias_add(memwalk *w, uint32_t event, uint32_t live_id) {
    if (w->n_al == w->cap_al) {
        w->cap_al = w->cap_al ? w->cap_al * 2 : 64;
        w->al = cg_xrealloc(w->al, w->cap_al, sizeof *w->al);
    }
    w->al[w->n_al] = (alias_ent){w->t->memory[event].tensor_id, live_id};
    hmap_get_or_put(&w->aliases, alias_key(w, (uint32_t)w->n_al), (uint32_t)w->n_al);
    w->n_al++;
}

/* Memory events in timestamp order (stable). */
static uint32_t *memory_order(const cg_trace *t) {
    size_t n = t->n_memory;
    uint32_t *order = cg_xzalloc(n, sizeof *order);
    bool sorted = true;
    for (size_t i = 0; i < n; i++) {
        order[i] = (uint32_t)i;
        if (i && t->memory[i].timestamp_ns < t->memory[i - 1].timestamp_ns) sorted = false;
    }
    if (!sorted) {
        mem_order *mo = cg_xzalloc(n, sizeof *mo);
        for (size_t i = 0; i < n; i++) mo[i] = (mem_order){t->memory[i].timestamp_ns, (uint32_t)i};
        qsort(mo, n, sizeof *mo, mem_order_cmp);
        for (size_t i = 0; i < n; i++) order[i] = mo[i].idx;
        cg_free(mo);
    }
    return order;
}

/* The state of the oldest queued event's storage (a new one is added);
 * *ei receives the event. */
static storage_state *storage_pop(memwalk *w, lookahead *q, uint32_t *ei) {
    if (w->n_st == w->cap_st) {
        w->cap_st = w->cap_st ? w->cap_st * 2 : 64;
        w->st = cg_xrealloc(w->st, w->cap_st, sizeof *w->st);
    }
    const hkey *k = la_front(q);
    w->st[w->n_st] = (storage_state){k->a, k->b, NULL, 0, 0}; /* tentative new key */
    uint32_t si = la_pop(q, &w->storages, (uint32_t)w->n_st, ei);
    if (si == HNONE) si = (uint32_t)w->n_st++;
    return &w->st[si];
}

/* One memory event of the walk against its storage's state. */
static void memory_event(hctx *c, memwalk *w, uint32_t ei, storage_state *s) {
    const cg_memory *m = &w->t->memory[ei];
    if (!m->is_free && !s->live_id) {
        s->live_id = w->next_live++;
        s->bytes = m->bytes;
        s->first_tensor = m->tensor_id;
        w->live++;
    } else if (!m->is_free && m->bytes != s->bytes) {
        add_issue(c, CG_SEV_ERROR, "allocation_size_mismatch",
                  "storage `%s` on `%s` has conflicting allocation sizes", m->storage_id, m->device);
    } else if (!m->is_free) {
        if (str_eq(m->tensor_id, s->first_tensor) ||
            hmap_get(&w->aliases, (hkey){m->tensor_id, NULL, s->live_id}) != HNONE)
            add_issue(c, CG_SEV_ERROR, "duplicate_allocation",
                      "tensor `%s` repeated an allocation for storage `%s` on `%s`", m->tensor_id, m->storage_id,
                      m->device);
        else alias_add(w, ei, s->live_id);
    } else if (!s->live_id) {
        add_issue(c, CG_SEV_ERROR, "unpaired_free", "storage `%s` on `%s` was freed while not live", m->storage_id,
                  m->device);
    } else {
        if (m->bytes != s->bytes)
            add_issue(c, CG_SEV_ERROR, "allocation_size_mismatch", "storage `%s` allocated %llu bytes but freed %llu",
                      m->storage_id, ull(s->bytes), ull(m->bytes));
        s->live_id = 0;
        w->live--;
    }
}

/* Pairs allocations and frees per (device, storage_id) in timestamp order. */
static void check_memory_pairing(hctx *c) {
    const cg_trace *t = c->t;
    if (t->n_memory == 0) return;
    uint32_t *order = memory_order(t);
    memwalk w = {.t = t, .next_live = 1};
    /* sized for one storage per alloc/free pair up front; aliases are rare */
    hmap_init(&w.storages, t->n_memory / 2 + 1, storage_key, &w);
    hmap_init(&w.aliases, 16, alias_key, &w);
    lookahead q = {0};
    uint32_t ei;
    for (size_t k = 0; k < t->n_memory; k++) {
        if (la_full(&q)) {
            storage_state *s = storage_pop(&w, &q, &ei);
            memory_event(c, &w, ei, s);
        }
        const cg_memory *m = &t->memory[order[k]];
        la_push(&q, &w.storages, (hkey){m->device, m->storage_id, 0}, order[k]);
    }
    while (q.n) {
        storage_state *s = storage_pop(&w, &q, &ei);
        memory_event(c, &w, ei, s);
    }
    if (w.live > 0)
        add_issue(c, CG_SEV_WARNING, "retained_allocations", "%llu storages remained live at capture end",
                  ull(w.live));
    hmap_free(&w.storages);
    hmap_free(&w.aliases);
    cg_free(w.st);
    cg_free(w.al);
    cg_free(order);
}

/* ---- gradient manifest ----------------------------------------------------------- */

static hkey grad_event_key(const void *ctx, uint32_t id) { return key1(((const cg_trace *)ctx)->gradients[id].event_id); }
static hkey grad_param_key(const void *ctx, uint32_t id) {
    const cg_gradient *g = &((const cg_trace *)ctx)->gradients[id];
    return (hkey){g->root, g->key, 0};
}
static hkey expected_key(const void *ctx, uint32_t id) {
    const cg_expected_gradient *e = &((const cg_gradient_contract *)ctx)->expected[id];
    return (hkey){e->root, e->key, 0};
}
static hkey family_key(const void *ctx, uint32_t id) {
    return key1(((const cg_gradient_contract *)ctx)->families[id].family);
}

/* GradientState::norm_is_valid */
static bool norm_is_valid(const cg_gradient *g) {
    switch (g->state) {
    case CG_GRAD_PRESENT: return g->has_norm && isfinite(g->norm) && g->norm > 0;
    case CG_GRAD_ZERO: return g->has_norm && g->norm == 0 && !signbit(g->norm);
    case CG_GRAD_MISSING:
    case CG_GRAD_NON_FINITE: return !g->has_norm;
    }
    return false;
}

/* Rust `{:?}` of Option<f64>. */
static const char *dbg_norm(hctx *c, const cg_gradient *g) {
    cg_buf_reset(&c->dbg);
    if (!g->has_norm) {
        cg_buf_puts(&c->dbg, "None");
    } else {
        cg_buf_puts(&c->dbg, "Some(");
        cg_rust_debug_f64(&c->dbg, g->norm);
        cg_buf_putc(&c->dbg, ')');
    }
    return cg_arena_strndup(&c->h->arena, c->dbg.data, c->dbg.len);
}

static void check_gradient_events(hctx *c) {
    const cg_trace *t = c->t;
    hmap ev;
    hmap_init(&ev, t->n_gradients, grad_event_key, t);
    for (size_t i = 0; i < t->n_gradients; i++) {
        const cg_gradient *g = &t->gradients[i];
        if (cg_str_blank(g->event_id))
            add_issue(c, CG_SEV_ERROR, "empty_gradient_event_id", "gradient event IDs must not be empty");
        if (cg_str_blank(g->root) || cg_str_blank(g->key))
            add_issue(c, CG_SEV_ERROR, "empty_gradient_parameter_key",
                      "gradient roots and parameter keys must not be empty");
        if (hmap_get_or_put(&ev, key1(g->event_id), (uint32_t)i) != HNONE)
            add_issue(c, CG_SEV_ERROR, "duplicate_gradient_event_id", "gradient event ID %s occurs more than once",
                      dbg_str(c, g->event_id));
        if (!norm_is_valid(g)) {
            const char *root = dbg_str(c, g->root), *key = dbg_str(c, g->key);
            add_issue(c, CG_SEV_ERROR, "gradient_state_norm_inconsistent",
                      "gradient (%s, %s) state `%s` is inconsistent with norm %s", root, key,
                      cg_grad_state_name(g->state), dbg_norm(c, g));
        }
    }
    hmap_free(&ev);
}

/* The contract gate: false when there is nothing further to check. */
static bool gradient_contract_applies(hctx *c) {
    const cg_capture_contract *cc = &c->t->run.contract;
    if (cc->gradients == CG_COV_COMPLETE && !cc->gradient_contract) {
        add_issue(c, CG_SEV_ERROR, "gradient_contract_missing",
                  "complete gradient coverage requires an exact gradient contract");
        return false;
    }
    if (!cc->gradient_contract) return false;
    if (cc->gradients != CG_COV_COMPLETE) {
        add_issue(c, CG_SEV_ERROR, "gradient_contract_without_complete_coverage",
                  "an exact gradient contract requires complete declared gradient coverage");
        return false;
    }
    cg_error err;
    cg_err_clear(&err);
    if (cg_gradient_contract_validate(cc->gradient_contract, &err) != 0) {
        add_issue(c, CG_SEV_ERROR, "gradient_contract_invalid", "%s", err.msg);
        return false;
    }
    return true;
}

typedef struct observed_key {
    const char *root, *key;
    uint32_t first, count;
} observed_key;

static int observed_cmp(const void *pa, const void *pb) {
    const observed_key *a = pa, *b = pb;
    int r = strcmp(a->root, b->root);
    return r ? r : strcmp(a->key, b->key);
}

/* Distinct (root, key) observations in BTreeMap order, with first event and count. */
static observed_key *observed_keys(const cg_trace *t, hmap *obs, size_t *n_out) {
    observed_key *o = cg_xzalloc(t->n_gradients, sizeof *o);
    size_t n = 0;
    uint32_t *slot = cg_xzalloc(t->n_gradients, sizeof *slot);
    for (size_t i = 0; i < t->n_gradients; i++) {
        uint32_t first = hmap_get_or_put(obs, grad_param_key(t, (uint32_t)i), (uint32_t)i);
        if (first == HNONE) {
            slot[i] = (uint32_t)n;
            o[n++] = (observed_key){t->gradients[i].root, t->gradients[i].key, (uint32_t)i, 1};
        } else {
            o[slot[first]].count++;
        }
    }
    cg_free(slot);
    qsort(o, n, sizeof *o, observed_cmp);
    *n_out = n;
    return o;
}

static void check_manifest_keys(hctx *c, const cg_gradient_contract *gc, hmap *obs) {
    size_t n;
    observed_key *o = observed_keys(c->t, obs, &n);
    hmap manifest;
    hmap_init(&manifest, gc->n_expected, expected_key, gc);
    for (size_t i = 0; i < gc->n_expected; i++) hmap_get_or_put(&manifest, expected_key(gc, (uint32_t)i), (uint32_t)i);
    for (size_t i = 0; i < n; i++) {
        const char *root = dbg_str(c, o[i].root), *key = dbg_str(c, o[i].key);
        if (o[i].count != 1)
            add_issue(c, CG_SEV_ERROR, "gradient_manifest_duplicate_key",
                      "gradient (%s, %s) occurs %u times; expected exactly once", root, key, o[i].count);
        if (hmap_get(&manifest, (hkey){o[i].root, o[i].key, 0}) == HNONE)
            add_issue(c, CG_SEV_ERROR, "gradient_manifest_undeclared_key", "gradient (%s, %s) is absent from the manifest",
                      root, key);
    }
    for (size_t i = 0; i < gc->n_expected; i++)
        if (hmap_get(obs, expected_key(gc, (uint32_t)i)) == HNONE) {
            const char *root = dbg_str(c, gc->expected[i].root), *key = dbg_str(c, gc->expected[i].key);
            add_issue(c, c->failed ? CG_SEV_WARNING : CG_SEV_ERROR, "gradient_manifest_missing_key",
                      "manifest gradient (%s, %s) was not captured", root, key);
        }
    hmap_free(&manifest);
    cg_free(o);
}

typedef struct family_tally {
    uint64_t members, observed, present, non_finite, attached;
} family_tally;

static void family_issues(hctx *c, const cg_family_contract *fc, const family_tally *f) {
    bool judged = !c->failed || f->observed == f->members;
    const char *fam = dbg_str(c, fc->family);
    if (f->non_finite)
        add_issue(c, CG_SEV_ERROR, "gradient_family_non_finite", "gradient family %s contains %llu non-finite gradients",
                  fam, ull(f->non_finite));
    if (fc->expectation == CG_FAM_ACTIVE && judged && f->present < fc->min_present)
        add_issue(c, CG_SEV_ERROR, "gradient_active_family_below_minimum",
                  "active gradient family %s has %llu present gradients; requires at least %llu", fam,
                  ull(f->present), ull(fc->min_present));
    if (fc->expectation == CG_FAM_INACTIVE && f->attached > 0)
        add_issue(c, CG_SEV_ERROR, "gradient_inactive_family_leakage",
                  "inactive gradient family %s has %llu attached gradients", fam, ull(f->attached));
    if (fc->expectation == CG_FAM_DATA_CONDITIONAL && judged && f->present > 0 && f->present < fc->min_present)
        add_issue(c, CG_SEV_ERROR, "gradient_conditional_family_below_minimum",
                  "data-conditional gradient family %s was attached but has %llu present gradients; requires at "
                  "least %llu",
                  fam, ull(f->present), ull(fc->min_present));
}

static void check_gradient_families(hctx *c, const cg_gradient_contract *gc, hmap *obs) {
    const cg_trace *t = c->t;
    hmap fams;
    hmap_init(&fams, gc->n_families, family_key, gc);
    for (size_t i = 0; i < gc->n_families; i++) hmap_get_or_put(&fams, family_key(gc, (uint32_t)i), (uint32_t)i);
    family_tally *ft = cg_xzalloc(gc->n_families, sizeof *ft);
    for (size_t i = 0; i < gc->n_expected; i++) {
        uint32_t fi = hmap_get(&fams, key1(gc->expected[i].family));
        if (fi == HNONE) continue; /* impossible after validation */
        family_tally *f = &ft[fi];
        f->members++;
        uint32_t first = hmap_get(obs, expected_key(gc, (uint32_t)i));
        if (first == HNONE) continue;
        cg_grad_state st = t->gradients[first].state;
        f->observed++;
        f->present += st == CG_GRAD_PRESENT;
        f->non_finite += st == CG_GRAD_NON_FINITE;
        f->attached += st != CG_GRAD_MISSING;
    }
    for (size_t i = 0; i < gc->n_families; i++) family_issues(c, &gc->families[i], &ft[i]);
    cg_free(ft);
    hmap_free(&fams);
}

static void check_gradient_manifest(hctx *c) {
    check_gradient_events(c);
    if (!gradient_contract_applies(c)) return;
    const cg_gradient_contract *gc = c->t->run.contract.gradient_contract;
    hmap obs;
    hmap_init(&obs, c->t->n_gradients, grad_param_key, c->t);
    check_manifest_keys(c, gc, &obs);
    check_gradient_families(c, gc, &obs);
    hmap_free(&obs);
}

/* ---- absence warnings -------------------------------------------------------- */

static void check_absence(hctx *c) {
    const cg_evidence_coverage *cov = &c->h->coverage;
    bool train = c->t->run.phase == CG_PHASE_TRAIN;
    static const struct {
        const char *code, *message;
    } rows[] = {
        {"operations_absent", "no operation evidence was captured"},
        {"tensors_absent", "no tensor checkpoints were captured"},
        {"logical_memory_absent", "no logical storage events were captured"},
        {"physical_memory_absent", "no physical device-memory samples were captured"},
        {"device_timing_absent", "no device timing intervals were captured"},
        {"gradients_absent", "no gradient facts were captured for this training run"},
        {"forward_absent", "no forward span was tagged"},
        {"backward_absent", "no backward span was tagged"},
        {"optimizer_absent", "no optimizer span was tagged"},
    };
    bool empty[] = {
        cov->operations == 0,          cov->tensors == 0,
        cov->memory_events == 0,       cov->device_memory_samples == 0,
        cov->device_intervals == 0,    cov->gradients == 0 && train,
        cov->forward_spans == 0 && train, cov->backward_spans == 0 && train,
        cov->optimizer_spans == 0 && train,
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (empty[i]) add_issue(c, CG_SEV_WARNING, rows[i].code, "%s", rows[i].message);
}

/* ---- semantic labels ----------------------------------------------------------- */

static hkey strlist_key(const void *ctx, uint32_t id) { return key1(((const cg_strlist *)ctx)->items[id]); }

/* Distinct values of a string list: value -> position of its first occurrence. */
static void label_set_build(hmap *m, const cg_strlist *l) {
    hmap_init(m, l->n, strlist_key, l);
    for (size_t i = 0; i < l->n; i++) hmap_get_or_put(m, key1(l->items[i]), (uint32_t)i);
}

static bool label_set_has(const hmap *m, const char *s) { return hmap_get(m, key1(s)) != HNONE; }

/* Per required label, in declaration order: empty_, duplicate_, cardinality. */
static void check_required_labels(hctx *c, const hmap *req_set) {
    const cg_trace *t = c->t;
    const cg_strlist *req = &t->run.contract.required_semantic_labels;
    uint64_t *matches = cg_xzalloc(req->n, sizeof *matches);
    if (req->n)
        for (size_t i = 0; i < t->n_spans; i++) {
            uint32_t id = hmap_get(req_set, key1(t->spans[i].name));
            if (id != HNONE) matches[id]++;
        }
    for (size_t i = 0; i < req->n; i++) {
        const char *l = req->items[i];
        uint32_t first = hmap_get(req_set, key1(l));
        if (cg_str_blank(l))
            add_issue(c, sev_f(c), "empty_required_semantic_label", "required semantic labels must not be empty");
        if (first != i)
            add_issue(c, sev_f(c), "duplicate_required_semantic_label",
                      "required semantic label `%s` is declared more than once", l);
        if (matches[first] != 1)
            add_issue(c, sev_f(c), "required_semantic_label_cardinality",
                      "required semantic label `%s` must occur exactly once; observed %llu", l, ull(matches[first]));
    }
    cg_free(matches);
}

/* One class list (GPU-expected, then CPU-only); `classified` accumulates both. */
static void check_label_class(hctx *c, const char *class, const cg_strlist *labels, const hmap *req_set,
                              const cg_strlist *gpu, bool is_cpu) {
    hmap own;
    label_set_build(&own, labels);
    hmap gpu_set;
    label_set_build(&gpu_set, gpu);
    for (size_t i = 0; i < labels->n; i++) {
        const char *l = labels->items[i];
        bool repeated = hmap_get(&own, key1(l)) != i;
        if (cg_str_blank(l))
            add_issue(c, sev_f(c), "empty_semantic_label_classification", "%s semantic labels must not be empty", class);
        if (repeated)
            add_issue(c, sev_f(c), "duplicate_semantic_label_classification",
                      "%s semantic label `%s` is declared more than once", class, l);
        if (!label_set_has(req_set, l))
            add_issue(c, sev_f(c), "unrequired_semantic_label_classification",
                      "%s semantic label `%s` is not a required application label", class, l);
        if (repeated || (is_cpu && label_set_has(&gpu_set, l)))
            add_issue(c, sev_f(c), "overlapping_semantic_label_classification",
                      "semantic label `%s` is classified as both GPU-expected and CPU-only", l);
    }
    hmap_free(&gpu_set);
    hmap_free(&own);
}

/* classified (GPU ∪ CPU) equals the required set */
static bool partition_complete(const cg_capture_contract *cc, const hmap *req_set) {
    hmap gpu, cpu;
    label_set_build(&gpu, &cc->gpu_expected_semantic_labels);
    label_set_build(&cpu, &cc->cpu_only_semantic_labels);
    bool ok = true;
    const cg_strlist *req = &cc->required_semantic_labels;
    for (size_t i = 0; ok && i < req->n; i++)
        ok = label_set_has(&gpu, req->items[i]) || label_set_has(&cpu, req->items[i]);
    for (size_t i = 0; ok && i < cc->gpu_expected_semantic_labels.n; i++)
        ok = label_set_has(req_set, cc->gpu_expected_semantic_labels.items[i]);
    for (size_t i = 0; ok && i < cc->cpu_only_semantic_labels.n; i++)
        ok = label_set_has(req_set, cc->cpu_only_semantic_labels.items[i]);
    hmap_free(&gpu);
    hmap_free(&cpu);
    return ok;
}

static void check_semantic_labels(hctx *c) {
    const cg_capture_contract *cc = &c->t->run.contract;
    hmap req_set;
    label_set_build(&req_set, &cc->required_semantic_labels);
    check_required_labels(c, &req_set);
    if (cc->gpu_expected_semantic_labels.n || cc->cpu_only_semantic_labels.n) {
        check_label_class(c, "GPU-expected", &cc->gpu_expected_semantic_labels, &req_set,
                          &cc->gpu_expected_semantic_labels, false);
        check_label_class(c, "CPU-only", &cc->cpu_only_semantic_labels, &req_set, &cc->gpu_expected_semantic_labels,
                          true);
        if (!partition_complete(cc, &req_set))
            add_issue(c, sev_f(c), "incomplete_semantic_label_partition",
                      "GPU-expected and CPU-only semantic labels must partition all required application labels");
    }
    hmap_free(&req_set);
}

/* ---- coverage and entry points ------------------------------------------------ */

static void count_coverage(const cg_trace *t, cg_evidence_coverage *cov) {
    memset(cov, 0, sizeof *cov);
    cov->spans = t->n_spans;
    for (size_t i = 0; i < t->n_spans; i++) {
        const cg_span *s = &t->spans[i];
        cov->closed_spans += s->closed;
        cov->root_spans += !s->parent_id;
        cov->measured_spans += s->measured;
        cov->forward_spans += s->step == CG_STEP_FORWARD;
        cov->backward_spans += s->step == CG_STEP_BACKWARD;
        cov->optimizer_spans += s->step == CG_STEP_OPTIMIZER;
    }
    cov->operations = t->n_ops;
    cov->tensors = t->n_tensors;
    cov->memory_events = t->n_memory;
    cov->device_memory_samples = t->n_device_memory;
    cov->device_intervals = t->n_device_intervals;
    cov->gradients = t->n_gradients;
    for (size_t i = 0; i < t->n_edges; i++) {
        if (t->edges[i].is_data) cov->data_edges++;
        else cov->call_edges++;
    }
}

cg_health *cg_health_analyze(const cg_trace *t) {
    cg_health *h = cg_xzalloc(1, sizeof *h);
    cg_arena_init(&h->arena, 0);
    hctx c = {.t = t, .h = h, .failed = t->terminal.outcome == CG_OUTCOME_FAILED};
    hmap_init(&c.spans, t->n_spans, span_key, t);
    count_coverage(t, &h->coverage);

    check_run_provenance(&c);
    check_terminal(&c);
    check_span_counts(&c);
    check_span_tree(&c);
    uint32_t *op_ix = span_indices(&c, t->n_ops, op_span), *mem_ix = span_indices(&c, t->n_memory, memory_span);
    check_evidence_spans(&c, op_ix, mem_ix);
    check_records_inside_spans(&c, op_ix, mem_ix);
    cg_free(op_ix);
    cg_free(mem_ix);
    check_edges(&c);
    check_memory_pairing(&c);
    check_gradient_manifest(&c);
    check_absence(&c);
    check_semantic_labels(&c);

    h->n_issues = c.n;
    h->issues = c.n ? cg_arena_alloc(&h->arena, c.n * sizeof *h->issues) : NULL;
    if (c.n) memcpy(h->issues, c.v, c.n * sizeof *h->issues);
    h->structurally_valid = true;
    for (size_t i = 0; i < c.n; i++)
        if (c.v[i].severity == CG_SEV_ERROR) h->structurally_valid = false;
    h->capture_complete = t->terminal.outcome == CG_OUTCOME_COMPLETE;
    cg_free(c.v);
    cg_buf_free(&c.dbg);
    hmap_free(&c.spans);
    return h;
}

void cg_health_free(cg_health *h) {
    if (!h) return;
    cg_arena_free(&h->arena);
    cg_free(h);
}

bool cg_health_has(const cg_health *h, const char *code) {
    for (size_t i = 0; i < h->n_issues; i++)
        if (!strcmp(h->issues[i].code, code)) return true;
    return false;
}

cg_jv *cg_coverage_to_json(cg_arena *a, const cg_evidence_coverage *c) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "spans", cg_jv_u64(a, c->spans));
    cg_jv_obj_put(a, o, "closed_spans", cg_jv_u64(a, c->closed_spans));
    cg_jv_obj_put(a, o, "root_spans", cg_jv_u64(a, c->root_spans));
    cg_jv_obj_put(a, o, "measured_spans", cg_jv_u64(a, c->measured_spans));
    cg_jv_obj_put(a, o, "operations", cg_jv_u64(a, c->operations));
    cg_jv_obj_put(a, o, "tensors", cg_jv_u64(a, c->tensors));
    cg_jv_obj_put(a, o, "memory_events", cg_jv_u64(a, c->memory_events));
    cg_jv_obj_put(a, o, "device_memory_samples", cg_jv_u64(a, c->device_memory_samples));
    cg_jv_obj_put(a, o, "device_intervals", cg_jv_u64(a, c->device_intervals));
    cg_jv_obj_put(a, o, "gradients", cg_jv_u64(a, c->gradients));
    cg_jv_obj_put(a, o, "call_edges", cg_jv_u64(a, c->call_edges));
    cg_jv_obj_put(a, o, "data_edges", cg_jv_u64(a, c->data_edges));
    cg_jv_obj_put(a, o, "forward_spans", cg_jv_u64(a, c->forward_spans));
    cg_jv_obj_put(a, o, "backward_spans", cg_jv_u64(a, c->backward_spans));
    cg_jv_obj_put(a, o, "optimizer_spans", cg_jv_u64(a, c->optimizer_spans));
    return o;
}

cg_jv *cg_health_to_json(cg_arena *a, const cg_health *h) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "structurally_valid", cg_jv_bool(a, h->structurally_valid));
    cg_jv_obj_put(a, o, "capture_complete", cg_jv_bool(a, h->capture_complete));
    cg_jv *issues = cg_jv_arr(a);
    for (size_t i = 0; i < h->n_issues; i++) {
        cg_jv *it = cg_jv_obj(a);
        cg_jv_obj_put(a, it, "severity", cg_jv_str_nocopy(a, cg_severity_name(h->issues[i].severity)));
        cg_jv_obj_put(a, it, "code", cg_jv_str(a, h->issues[i].code));
        cg_jv_obj_put(a, it, "message", cg_jv_str(a, h->issues[i].message));
        cg_jv_arr_push(a, issues, it);
    }
    cg_jv_obj_put(a, o, "issues", issues);
    cg_jv_obj_put(a, o, "coverage", cg_coverage_to_json(a, &h->coverage));
    return o;
}
