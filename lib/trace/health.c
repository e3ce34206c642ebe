/* health.c — structural health of a trace (protocol-trace-evidence.md §5).
 *
 * Check order (stable; each pass walks its records in document order unless
 * stated):
 *   1. terminal: complete_with_failure_reason, failed_without_reason,
 *      terminal_precedes_evidence, capture_failed
 *   2. run metadata: invalid_run_metadata (cg_run_meta_validate; design/CLI.md)
 *   3. spans (id order), one pass per code: duplicate_span_id, root_count,
 *      measurement_count, open_span, unknown_parent, child_outside_parent,
 *      span_cycle
 *   4. records: unknown_span (ops, tensors, memory, device intervals),
 *      empty_device_interval, operation_outside_span, empty_device_memory_sample
 *   5. edges, per edge: unknown_call_edge_span, call_edge_hierarchy_mismatch,
 *      call_edge_duration_mismatch | empty_data_edge_endpoint,
 *      unknown_data_edge_tensor
 *   6. memory pairing walk (timestamp order, stable): allocation_size_mismatch,
 *      duplicate_allocation, unpaired_free, then retained_allocations
 *   7. absence warnings
 *   8. semantic labels: empty_, duplicate_, required_semantic_label_cardinality,
 *      semantic_label_partition_invalid
 *   9. gradient events, per event: empty_gradient_event_id,
 *      empty_gradient_parameter_key, duplicate_gradient_event_id,
 *      gradient_state_norm_inconsistent
 *  10. gradient contract
 *
 * Decisions where the spec is silent:
 *   - semantic_label_partition_invalid (upstream code not recovered): error,
 *     warning on failed captures like the other semantic-label codes; fires
 *     for each required label classified in both or neither list, and for each
 *     classification entry that is duplicated or names no required label.
 *     Legacy contracts (both lists empty) are not checked.
 *   - duplicate codes (span id, semantic label, gradient event id) are
 *     reported once per duplicated value.
 *   - blank required labels get empty_required_semantic_label only (no
 *     cardinality issue for the blank label).
 *   - empty_gradient_parameter_key covers a blank root as well as a blank key.
 *
 * Cost: every lookup goes through open-addressing hash tables keyed by record
 * index (8 bytes a slot); the only sort is the memory walk's, and only when the
 * memory events are not already in timestamp order. */
#include "trace/health.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *cg_severity_name(cg_severity s) { return s == CG_SEV_ERROR ? "error" : "warning"; }

/* ---- hash table of record indices ---------------------------------------- */

typedef struct hkey {
    const char *a, *b;
    uint64_t n;
} hkey;
typedef hkey (*hkey_of)(const void *ctx, uint32_t id);

typedef struct hmap {
    uint64_t *slot; /* 0 = empty, else (hash >> 32) << 32 | (id + 1) */
    size_t mask, count;
    hkey_of key;
    const void *ctx;
} hmap;

#define HNONE UINT32_MAX

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) abort();
    return p;
}

static void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) abort();
    return q;
}

/* Word-at-a-time string hash (strlen is vectorised by libc); the final
 * avalanche in hkey_hash spreads the bits. Length is mixed in, so adjacent
 * strings of a two-string key cannot trade bytes. */
static uint64_t str_hash(uint64_t h, const char *s) {
    if (!s) return h ^ 0x9e3779b97f4a7c15ULL;
    size_t n = strlen(s);
    const unsigned char *p = (const unsigned char *)s;
    uint64_t w;
    h ^= (uint64_t)n * 0xff51afd7ed558ccdULL;
    while (n >= 8) {
        memcpy(&w, p, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    w = 0;
    memcpy(&w, p, n);
    h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
    return h ^ (h >> 32);
}

static uint64_t hkey_hash(hkey k) {
    uint64_t h = str_hash(0xcbf29ce484222325ULL, k.a);
    h = str_hash(h * 0x100000001b3ULL, k.b);
    h ^= k.n * 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
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

static void hmap_init(hmap *m, size_t expect, hkey_of key, const void *ctx) {
    size_t cap = 16;
    while (cap / 2 < expect) cap <<= 1;
    m->slot = xcalloc(cap, sizeof *m->slot);
    m->mask = cap - 1;
    m->count = 0;
    m->key = key;
    m->ctx = ctx;
}

static void hmap_free(hmap *m) {
    free(m->slot);
    m->slot = NULL;
}

static void hmap_place(uint64_t *slot, size_t mask, uint64_t h, uint32_t id) {
    size_t i = (size_t)h & mask;
    while (slot[i]) i = (i + 1) & mask;
    slot[i] = (h >> 32 << 32) | ((uint64_t)id + 1);
}

static void hmap_grow(hmap *m) {
    size_t cap = (m->mask + 1) * 2;
    uint64_t *ns = xcalloc(cap, sizeof *ns);
    for (size_t i = 0; i <= m->mask; i++) {
        if (!m->slot[i]) continue;
        uint32_t id = (uint32_t)(m->slot[i] & 0xffffffffu) - 1;
        hmap_place(ns, cap - 1, hkey_hash(m->key(m->ctx, id)), id);
    }
    free(m->slot);
    m->slot = ns;
    m->mask = cap - 1;
}

/* Returns the id stored under k. When absent: inserts put_id (unless HNONE)
 * and returns HNONE. */
static uint32_t hmap_get_or_put(hmap *m, hkey k, uint32_t put_id) {
    uint64_t h = hkey_hash(k);
    uint64_t tag = h >> 32 << 32;
    size_t i = (size_t)h & m->mask;
    while (m->slot[i]) {
        if ((m->slot[i] & ~(uint64_t)0xffffffffu) == tag) {
            uint32_t id = (uint32_t)(m->slot[i] & 0xffffffffu) - 1;
            if (hkey_eq(m->key(m->ctx, id), k)) return id;
        }
        i = (i + 1) & m->mask;
    }
    if (put_id == HNONE) return HNONE;
    m->slot[i] = tag | ((uint64_t)put_id + 1);
    if (++m->count * 2 > m->mask + 1) hmap_grow(m);
    return HNONE;
}

static uint32_t hmap_get(const hmap *m, hkey k) { return hmap_get_or_put((hmap *)m, k, HNONE); }

static hkey key1(const char *a) { return (hkey){a, NULL, 0}; }

/* ---- analysis context ----------------------------------------------------- */

typedef struct hctx {
    const cg_trace *t;
    cg_health *h;
    bool failed; /* F: terminal outcome failed */
    cg_health_issue *v;
    size_t n, cap;
    hmap spans;        /* span id -> index of its first occurrence */
    const char *last_id; /* lookup cache: records of one span share the interned id */
    uint32_t last_idx;
    uint32_t *parent;  /* parent span index, HNONE for root / unknown parent */
} hctx;

static void add_issue(hctx *c, cg_severity sev, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void add_issue(hctx *c, cg_severity sev, const char *code, const char *fmt, ...) {
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->v = xrealloc(c->v, c->cap * sizeof *c->v);
    }
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

/* error normally, warning when the capture failed */
static cg_severity sev_f(const hctx *c) { return c->failed ? CG_SEV_WARNING : CG_SEV_ERROR; }

static const char *nz(const char *s) { return s ? s : ""; }

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

static unsigned long long ull(uint64_t v) { return (unsigned long long)v; }

static hkey span_key(const void *ctx, uint32_t id) { return key1(((const cg_trace *)ctx)->spans[id].id); }

static uint32_t find_span(hctx *c, const char *id) {
    if (!id) return HNONE;
    if (id == c->last_id) return c->last_idx;
    uint32_t ix = hmap_get(&c->spans, key1(id));
    c->last_id = id;
    c->last_idx = ix;
    return ix;
}

static uint64_t span_end(const cg_span *s) { return sat_add(s->start_ns, s->duration_ns); }

/* ---- 1. terminal ----------------------------------------------------------- */

static uint64_t latest_host_evidence_end(const cg_trace *t) {
    uint64_t end = 0;
    for (size_t i = 0; i < t->n_spans; i++) {
        const cg_span *s = &t->spans[i];
        uint64_t e = s->closed ? span_end(s) : s->start_ns;
        if (e > end) end = e;
    }
    for (size_t i = 0; i < t->n_ops; i++) {
        uint64_t e = sat_add(t->ops[i].timestamp_ns, t->ops[i].duration_ns);
        if (e > end) end = e;
    }
    for (size_t i = 0; i < t->n_memory; i++)
        if (t->memory[i].timestamp_ns > end) end = t->memory[i].timestamp_ns;
    for (size_t i = 0; i < t->n_device_memory; i++)
        if (t->device_memory[i].timestamp_ns > end) end = t->device_memory[i].timestamp_ns;
    return end;
}

static void check_terminal(hctx *c) {
    const cg_terminal *term = &c->t->terminal;
    if (term->outcome == CG_OUTCOME_COMPLETE && term->reason)
        add_issue(c, CG_SEV_ERROR, "complete_with_failure_reason",
                  "complete terminal event cannot contain a failure reason (%s)", term->reason);
    if (term->outcome == CG_OUTCOME_FAILED && cg_str_blank(term->reason))
        add_issue(c, CG_SEV_ERROR, "failed_without_reason", "failed terminal event requires a non-empty reason");
    uint64_t end = latest_host_evidence_end(c->t);
    if (term->timestamp_ns < end)
        add_issue(c, CG_SEV_ERROR, "terminal_precedes_evidence",
                  "terminal timestamp %llu ns precedes the latest host evidence end %llu ns",
                  ull(term->timestamp_ns), ull(end));
    if (c->failed)
        add_issue(c, CG_SEV_WARNING, "capture_failed", "%s",
                  cg_str_blank(term->reason) ? "capture failed without a reason" : term->reason);
}

/* ---- 2. run metadata ---------------------------------------------------------- */

static void check_run_meta(hctx *c) {
    cg_error err;
    cg_err_clear(&err);
    if (cg_run_meta_validate(&c->t->run, &err) != 0)
        add_issue(c, CG_SEV_ERROR, "invalid_run_metadata", "%s", err.msg);
}

/* ---- 3. spans --------------------------------------------------------------- */

enum { CYC_NEW = 0, CYC_PATH, CYC_OK, CYC_BAD };

static void check_spans(hctx *c) {
    const cg_trace *t = c->t;
    size_t n = t->n_spans;
    unsigned char *dup_seen = xcalloc(n, 1);
    for (size_t i = 0; i < n; i++) {
        uint32_t first = hmap_get_or_put(&c->spans, key1(t->spans[i].id), (uint32_t)i);
        if (first != HNONE && !dup_seen[first]) {
            dup_seen[first] = 1;
            add_issue(c, CG_SEV_ERROR, "duplicate_span_id", "span id %s is used by more than one span",
                      t->spans[i].id);
        }
    }
    free(dup_seen);

    size_t roots = 0, measured = 0;
    for (size_t i = 0; i < n; i++) {
        if (!t->spans[i].parent_id) roots++;
        if (t->spans[i].measured) measured++;
    }
    if (roots != 1)
        add_issue(c, CG_SEV_ERROR, "root_count", "trace has %zu root spans; exactly one is required", roots);
    if (measured != 1 && !c->failed)
        add_issue(c, CG_SEV_ERROR, "measurement_count", "trace has %zu measured spans; exactly one is required",
                  measured);

    for (size_t i = 0; i < n; i++)
        if (!t->spans[i].closed) {
            if (c->failed)
                add_issue(c, CG_SEV_WARNING, "open_span", "span %s was interrupted", t->spans[i].id);
            else
                add_issue(c, CG_SEV_ERROR, "open_span", "span %s was not closed", t->spans[i].id);
        }

    c->parent = xcalloc(n, sizeof *c->parent);
    for (size_t i = 0; i < n; i++) {
        const cg_span *s = &t->spans[i];
        c->parent[i] = s->parent_id ? find_span(c, s->parent_id) : HNONE;
        if (s->parent_id && c->parent[i] == HNONE)
            add_issue(c, CG_SEV_ERROR, "unknown_parent", "span %s has unknown parent %s", s->id, s->parent_id);
    }

    for (size_t i = 0; i < n; i++) {
        if (c->parent[i] == HNONE) continue;
        const cg_span *s = &t->spans[i], *p = &t->spans[c->parent[i]];
        if (!s->closed || !p->closed) continue;
        if (s->start_ns < p->start_ns || span_end(s) > span_end(p))
            add_issue(c, CG_SEV_ERROR, "child_outside_parent",
                      "span %s [%llu, %llu) lies outside its parent %s [%llu, %llu)", s->id, ull(s->start_ns),
                      ull(span_end(s)), p->id, ull(p->start_ns), ull(span_end(p)));
    }

    /* Parent-link walk with path colouring: O(n) overall. A walk that reaches a
     * span on its own path found a cycle; every span on the path is on or
     * leads into it. Reaching a span already classified settles the path. */
    unsigned char *state = xcalloc(n, 1);
    uint32_t *path = xcalloc(n, sizeof *path);
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
            cur = c->parent[cur];
        }
        for (size_t k = 0; k < len; k++) state[path[k]] = verdict;
    }
    for (size_t i = 0; i < n; i++)
        if (state[i] == CYC_BAD)
            add_issue(c, CG_SEV_ERROR, "span_cycle", "walking the parents of span %s revisits a span (cycle)",
                      t->spans[i].id);
    free(path);
    free(state);
}

/* ---- 4. record references ---------------------------------------------------- */

static void check_records(hctx *c) {
    const cg_trace *t = c->t;
    for (size_t i = 0; i < t->n_ops; i++)
        if (find_span(c, t->ops[i].span_id) == HNONE)
            add_issue(c, CG_SEV_ERROR, "unknown_span", "operation %zu (%s) references unknown span %s", i,
                      t->ops[i].op_name, nz(t->ops[i].span_id));
    for (size_t i = 0; i < t->n_tensors; i++)
        if (find_span(c, t->tensors[i].span_id) == HNONE)
            add_issue(c, CG_SEV_ERROR, "unknown_span", "tensor %s references unknown span %s",
                      t->tensors[i].tensor_id, nz(t->tensors[i].span_id));
    for (size_t i = 0; i < t->n_memory; i++)
        if (find_span(c, t->memory[i].span_id) == HNONE)
            add_issue(c, CG_SEV_ERROR, "unknown_span", "memory event %zu (storage %s) references unknown span %s", i,
                      t->memory[i].storage_id, nz(t->memory[i].span_id));
    for (size_t i = 0; i < t->n_device_intervals; i++)
        if (find_span(c, t->device_intervals[i].span_id) == HNONE)
            add_issue(c, CG_SEV_ERROR, "unknown_span", "device interval %zu references unknown span %s", i,
                      nz(t->device_intervals[i].span_id));

    for (size_t i = 0; i < t->n_device_intervals; i++)
        if (t->device_intervals[i].duration_ns == 0)
            add_issue(c, CG_SEV_ERROR, "empty_device_interval",
                      "device interval %zu of span %s on %s has zero duration", i, t->device_intervals[i].span_id,
                      t->device_intervals[i].device);

    for (size_t i = 0; i < t->n_ops; i++) {
        const cg_op *o = &t->ops[i];
        uint32_t si = find_span(c, o->span_id);
        if (si == HNONE || !t->spans[si].closed) continue;
        const cg_span *s = &t->spans[si];
        uint64_t end = sat_add(o->timestamp_ns, o->duration_ns);
        if (o->timestamp_ns < s->start_ns || end > span_end(s))
            add_issue(c, CG_SEV_ERROR, "operation_outside_span",
                      "operation %zu (%s) [%llu, %llu] lies outside span %s [%llu, %llu]", i, o->op_name,
                      ull(o->timestamp_ns), ull(end), s->id, ull(s->start_ns), ull(span_end(s)));
    }

    for (size_t i = 0; i < t->n_device_memory; i++) {
        const cg_device_memory *d = &t->device_memory[i];
        if (!d->has_used && !d->has_free && !d->has_reserved && !d->has_capacity)
            add_issue(c, CG_SEV_ERROR, "empty_device_memory_sample",
                      "device memory sample %zu on %s at %llu ns carries no value", i, d->device,
                      ull(d->timestamp_ns));
    }
}

/* ---- 5. edges ------------------------------------------------------------------ */

typedef struct strvec {
    const char **s;
    size_t n, cap;
} strvec;

static hkey strvec_key(const void *ctx, uint32_t id) { return key1(((const strvec *)ctx)->s[id]); }

static void strvec_push(strvec *v, const char *s) {
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 16;
        v->s = xrealloc(v->s, v->cap * sizeof *v->s);
    }
    v->s[v->n++] = s;
}

/* Marks which data-edge endpoints are known tensors (tensor events ∪ op inputs
 * ∪ op outputs); endpoints hold the distinct non-empty endpoint strings. */
static unsigned char *known_endpoints(const cg_trace *t, const hmap *ends, size_t n_ends) {
    unsigned char *known = xcalloc(n_ends, 1);
    uint32_t id;
    for (size_t i = 0; i < t->n_tensors; i++)
        if ((id = hmap_get(ends, key1(t->tensors[i].tensor_id))) != HNONE) known[id] = 1;
    for (size_t i = 0; i < t->n_ops; i++) {
        const cg_op *o = &t->ops[i];
        for (size_t j = 0; j < o->inputs.n; j++)
            if ((id = hmap_get(ends, key1(o->inputs.items[j]))) != HNONE) known[id] = 1;
        if (o->output && (id = hmap_get(ends, key1(o->output))) != HNONE) known[id] = 1;
    }
    return known;
}

static void check_edges(hctx *c) {
    const cg_trace *t = c->t;
    strvec ends = {0};
    hmap endmap;
    hmap_init(&endmap, 16, strvec_key, &ends);
    for (size_t i = 0; i < t->n_edges; i++) {
        const cg_edge *e = &t->edges[i];
        if (!e->is_data) continue;
        const char *pts[2] = {e->from, e->to};
        for (int k = 0; k < 2; k++) {
            if (!pts[k] || !*pts[k]) continue;
            strvec_push(&ends, pts[k]); /* the key must be readable if the insert grows the table */
            if (hmap_get_or_put(&endmap, key1(pts[k]), (uint32_t)(ends.n - 1)) != HNONE) ends.n--;
        }
    }
    unsigned char *known = ends.n ? known_endpoints(t, &endmap, ends.n) : NULL;

    for (size_t i = 0; i < t->n_edges; i++) {
        const cg_edge *e = &t->edges[i];
        if (!e->is_data) {
            uint32_t from = find_span(c, e->from), to = find_span(c, e->to);
            if (from == HNONE || to == HNONE) {
                if (from == HNONE)
                    add_issue(c, CG_SEV_ERROR, "unknown_call_edge_span",
                              "call edge %s -> %s: from_span %s is not a span", nz(e->from), nz(e->to), nz(e->from));
                if (to == HNONE)
                    add_issue(c, CG_SEV_ERROR, "unknown_call_edge_span",
                              "call edge %s -> %s: to_span %s is not a span", nz(e->from), nz(e->to), nz(e->to));
                continue;
            }
            const cg_span *target = &t->spans[to];
            if (!str_eq(target->parent_id, e->from))
                add_issue(c, CG_SEV_ERROR, "call_edge_hierarchy_mismatch",
                          "call edge %s -> %s: the parent of %s is %s, not %s", e->from, e->to, e->to,
                          target->parent_id ? target->parent_id : "(none)", e->from);
            if (target->closed && e->host_duration_ns != target->duration_ns)
                add_issue(c, CG_SEV_ERROR, "call_edge_duration_mismatch",
                          "call edge %s -> %s: host_duration_ns %llu differs from the duration %llu of span %s",
                          e->from, e->to, ull(e->host_duration_ns), ull(target->duration_ns), e->to);
            continue;
        }
        const char *pts[2] = {e->from, e->to};
        static const char *const names[2] = {"from_tensor", "to_tensor"};
        bool empty = false;
        for (int k = 0; k < 2; k++)
            if (!pts[k] || !*pts[k]) {
                empty = true;
                add_issue(c, CG_SEV_ERROR, "empty_data_edge_endpoint", "data edge %zu has an empty %s", i,
                          names[k]);
            }
        if (empty) continue;
        for (int k = 0; k < 2; k++) {
            uint32_t id = hmap_get(&endmap, key1(pts[k]));
            if (id == HNONE || !known[id])
                add_issue(c, CG_SEV_ERROR, "unknown_data_edge_tensor",
                          "data edge %s -> %s: %s %s is not a recorded tensor, op input or op output", e->from,
                          e->to, names[k], pts[k]);
        }
    }
    free(known);
    free(ends.s);
    hmap_free(&endmap);
}

/* ---- 6. memory pairing walk ------------------------------------------------ */

typedef struct storage_state {
    uint32_t first_event; /* memory index that names the key (device, storage_id) */
    uint32_t live_id;     /* 0 = not live */
    uint64_t bytes;       /* bytes of the opening allocation while live */
} storage_state;

typedef struct alias_ent {
    uint32_t event;   /* memory index carrying the tensor_id */
    uint32_t live_id; /* lifetime the alias belongs to */
} alias_ent;

typedef struct memwalk {
    const cg_trace *t;
    storage_state *st;
    size_t n_st, cap_st;
    alias_ent *al;
    size_t n_al, cap_al;
} memwalk;

static hkey storage_key(const void *ctx, uint32_t id) {
    const memwalk *w = ctx;
    const cg_memory *m = &w->t->memory[w->st[id].first_event];
    return (hkey){m->device, m->storage_id, 0};
}

static hkey alias_key(const void *ctx, uint32_t id) {
    const memwalk *w = ctx;
    return (hkey){w->t->memory[w->al[id].event].tensor_id, NULL, w->al[id].live_id};
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

static void alias_add(memwalk *w, hmap *aliases, uint32_t event, uint32_t live_id) {
    if (w->n_al == w->cap_al) {
        w->cap_al = w->cap_al ? w->cap_al * 2 : 64;
        w->al = xrealloc(w->al, w->cap_al * sizeof *w->al);
    }
    w->al[w->n_al] = (alias_ent){event, live_id};
    hmap_get_or_put(aliases, alias_key(w, (uint32_t)w->n_al), (uint32_t)w->n_al);
    w->n_al++;
}

static void check_memory(hctx *c) {
    const cg_trace *t = c->t;
    size_t n = t->n_memory;
    if (n == 0) return;
    uint32_t *order = xcalloc(n, sizeof *order);
    bool sorted = true;
    for (size_t i = 0; i < n; i++) {
        order[i] = (uint32_t)i;
        if (i && t->memory[i].timestamp_ns < t->memory[i - 1].timestamp_ns) sorted = false;
    }
    if (!sorted) {
        mem_order *mo = xcalloc(n, sizeof *mo);
        for (size_t i = 0; i < n; i++) mo[i] = (mem_order){t->memory[i].timestamp_ns, (uint32_t)i};
        qsort(mo, n, sizeof *mo, mem_order_cmp);
        for (size_t i = 0; i < n; i++) order[i] = mo[i].idx;
        free(mo);
    }

    memwalk w = {.t = t};
    hmap storages, aliases;
    hmap_init(&storages, 64, storage_key, &w);
    hmap_init(&aliases, 64, alias_key, &w);
    uint32_t next_live = 1;
    uint64_t live = 0;
    for (size_t k = 0; k < n; k++) {
        uint32_t ei = order[k];
        const cg_memory *m = &t->memory[ei];
        if (w.n_st == w.cap_st) {
            w.cap_st = w.cap_st ? w.cap_st * 2 : 64;
            w.st = xrealloc(w.st, w.cap_st * sizeof *w.st);
        }
        w.st[w.n_st] = (storage_state){ei, 0, 0}; /* tentative new key */
        uint32_t si = hmap_get_or_put(&storages, (hkey){m->device, m->storage_id, 0}, (uint32_t)w.n_st);
        if (si == HNONE) si = (uint32_t)w.n_st++;
        storage_state *s = &w.st[si];
        if (!m->is_free) {
            if (!s->live_id) {
                s->live_id = next_live++;
                s->bytes = m->bytes;
                live++;
                alias_add(&w, &aliases, ei, s->live_id);
            } else if (m->bytes != s->bytes) {
                add_issue(c, CG_SEV_ERROR, "allocation_size_mismatch",
                          "allocation of live storage %s on %s by tensor %s at %llu ns has %llu bytes, "
                          "but the storage is live with %llu bytes",
                          m->storage_id, m->device, m->tensor_id, ull(m->timestamp_ns), ull(m->bytes), ull(s->bytes));
            } else if (hmap_get(&aliases, (hkey){m->tensor_id, NULL, s->live_id}) != HNONE) {
                add_issue(c, CG_SEV_ERROR, "duplicate_allocation",
                          "tensor %s allocates storage %s on %s again at %llu ns while it is still live",
                          m->tensor_id, m->storage_id, m->device, ull(m->timestamp_ns));
            } else {
                alias_add(&w, &aliases, ei, s->live_id);
            }
        } else if (s->live_id) {
            if (m->bytes != s->bytes)
                add_issue(c, CG_SEV_ERROR, "allocation_size_mismatch",
                          "free of storage %s on %s at %llu ns has %llu bytes, but it was allocated with %llu bytes",
                          m->storage_id, m->device, ull(m->timestamp_ns), ull(m->bytes), ull(s->bytes));
            s->live_id = 0;
            live--;
        } else {
            add_issue(c, CG_SEV_ERROR, "unpaired_free",
                      "free of storage %s on %s by tensor %s at %llu ns has no live allocation", m->storage_id,
                      m->device, m->tensor_id, ull(m->timestamp_ns));
        }
    }
    if (live > 0)
        add_issue(c, CG_SEV_WARNING, "retained_allocations", "%llu storages remained live at capture end", ull(live));
    hmap_free(&storages);
    hmap_free(&aliases);
    free(w.st);
    free(w.al);
    free(order);
}

/* ---- 7. absence ----------------------------------------------------------- */

static void check_absence(hctx *c) {
    const cg_trace *t = c->t;
    if (t->n_ops == 0) add_issue(c, CG_SEV_WARNING, "operations_absent", "no operations were recorded");
    if (t->n_tensors == 0) add_issue(c, CG_SEV_WARNING, "tensors_absent", "no tensors were recorded");
    if (t->n_memory == 0)
        add_issue(c, CG_SEV_WARNING, "logical_memory_absent", "no logical memory events were recorded");
    if (t->n_device_memory == 0)
        add_issue(c, CG_SEV_WARNING, "physical_memory_absent", "no physical device memory samples were recorded");
    if (t->n_device_intervals == 0)
        add_issue(c, CG_SEV_WARNING, "device_timing_absent", "no device timing intervals were recorded");
    if (t->run.phase != CG_PHASE_TRAIN) return;
    if (t->n_gradients == 0)
        add_issue(c, CG_SEV_WARNING, "gradients_absent", "training capture recorded no gradients");
    const cg_evidence_coverage *cov = &c->h->coverage;
    if (cov->forward_spans == 0)
        add_issue(c, CG_SEV_WARNING, "forward_absent", "training capture recorded no forward step span");
    if (cov->backward_spans == 0)
        add_issue(c, CG_SEV_WARNING, "backward_absent", "training capture recorded no backward step span");
    if (cov->optimizer_spans == 0)
        add_issue(c, CG_SEV_WARNING, "optimizer_absent", "training capture recorded no optimizer step span");
}

/* ---- 8. semantic labels ---------------------------------------------------- */

static hkey strlist_key(const void *ctx, uint32_t id) { return key1(((const cg_strlist *)ctx)->items[id]); }

/* Index of distinct values of a string list: map value -> first position,
 * count[first] = occurrences. */
typedef struct label_index {
    hmap map;
    uint32_t *count;
} label_index;

static void label_index_build(label_index *x, const cg_strlist *l) {
    hmap_init(&x->map, l->n, strlist_key, l);
    x->count = xcalloc(l->n, sizeof *x->count);
    for (size_t i = 0; i < l->n; i++) {
        uint32_t first = hmap_get_or_put(&x->map, key1(l->items[i]), (uint32_t)i);
        x->count[first == HNONE ? i : first]++;
    }
}

static uint32_t label_index_count(const label_index *x, const char *s) {
    uint32_t id = hmap_get(&x->map, key1(s));
    return id == HNONE ? 0 : x->count[id];
}

static void label_index_free(label_index *x) {
    hmap_free(&x->map);
    free(x->count);
}

static void check_partition_list(hctx *c, const cg_strlist *l, const label_index *own, const label_index *req,
                                 const char *what) {
    for (size_t i = 0; i < l->n; i++) {
        const char *s = l->items[i];
        if (hmap_get(&own->map, key1(s)) != i) continue; /* later occurrence */
        if (own->count[i] > 1)
            add_issue(c, sev_f(c), "semantic_label_partition_invalid", "%s semantic label %s is declared %u times",
                      what, s, own->count[i]);
        if (label_index_count(req, s) == 0)
            add_issue(c, sev_f(c), "semantic_label_partition_invalid",
                      "%s semantic label %s is not a required semantic label", what, s);
    }
}

static void check_semantic_labels(hctx *c) {
    const cg_trace *t = c->t;
    const cg_strlist *req = &t->run.contract.required_semantic_labels;
    label_index ri;
    label_index_build(&ri, req);
    for (size_t i = 0; i < req->n; i++)
        if (cg_str_blank(req->items[i]))
            add_issue(c, sev_f(c), "empty_required_semantic_label", "required semantic label %zu is empty", i);
    for (size_t i = 0; i < req->n; i++)
        if (ri.count[i] > 1)
            add_issue(c, sev_f(c), "duplicate_required_semantic_label",
                      "required semantic label %s is declared %u times", req->items[i], ri.count[i]);

    uint64_t *matches = xcalloc(req->n, sizeof *matches);
    if (req->n)
        for (size_t i = 0; i < t->n_spans; i++) {
            uint32_t id = hmap_get(&ri.map, key1(t->spans[i].name));
            if (id != HNONE) matches[id]++;
        }
    for (size_t i = 0; i < req->n; i++) {
        if (!ri.count[i] || cg_str_blank(req->items[i])) continue; /* not a first occurrence, or blank */
        if (matches[i] != 1)
            add_issue(c, sev_f(c), "required_semantic_label_cardinality",
                      "required semantic label %s names %llu spans; exactly one is required", req->items[i],
                      ull(matches[i]));
    }
    free(matches);

    const cg_strlist *gpu = &t->run.contract.gpu_expected_semantic_labels;
    const cg_strlist *cpu = &t->run.contract.cpu_only_semantic_labels;
    if (gpu->n || cpu->n) {
        label_index gi, ci;
        label_index_build(&gi, gpu);
        label_index_build(&ci, cpu);
        for (size_t i = 0; i < req->n; i++) {
            if (!ri.count[i]) continue;
            bool in_g = label_index_count(&gi, req->items[i]) > 0, in_c = label_index_count(&ci, req->items[i]) > 0;
            if (in_g && in_c)
                add_issue(c, sev_f(c), "semantic_label_partition_invalid",
                          "required semantic label %s is classified as both GPU-expected and CPU-only",
                          req->items[i]);
            else if (!in_g && !in_c)
                add_issue(c, sev_f(c), "semantic_label_partition_invalid",
                          "required semantic label %s is classified as neither GPU-expected nor CPU-only",
                          req->items[i]);
        }
        check_partition_list(c, gpu, &gi, &ri, "GPU-expected");
        check_partition_list(c, cpu, &ci, &ri, "CPU-only");
        label_index_free(&gi);
        label_index_free(&ci);
    }
    label_index_free(&ri);
}

/* ---- 9. gradient events ----------------------------------------------------- */

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

static const char *state_norm_problem(const cg_gradient *g) {
    switch (g->state) {
    case CG_GRAD_PRESENT:
        if (!g->has_norm || !isfinite(g->norm) || !(g->norm > 0)) return "requires a finite norm greater than zero";
        return NULL;
    case CG_GRAD_ZERO:
        if (!g->has_norm || g->norm != 0 || signbit(g->norm)) return "requires a norm of exactly 0.0";
        return NULL;
    default:
        return g->has_norm ? "must not carry a norm" : NULL;
    }
}

static void check_gradient_events(hctx *c) {
    const cg_trace *t = c->t;
    size_t n = t->n_gradients;
    hmap ev;
    hmap_init(&ev, n, grad_event_key, t);
    uint32_t *seen = xcalloc(n, sizeof *seen);
    for (size_t i = 0; i < n; i++) {
        const cg_gradient *g = &t->gradients[i];
        if (cg_str_blank(g->event_id)) {
            add_issue(c, CG_SEV_ERROR, "empty_gradient_event_id", "gradient event %zu (%s/%s) has an empty event_id",
                      i, nz(g->root), nz(g->key));
        }
        if (cg_str_blank(g->root) || cg_str_blank(g->key))
            add_issue(c, CG_SEV_ERROR, "empty_gradient_parameter_key",
                      "gradient event %s has an empty parameter root or key", nz(g->event_id));
        if (!cg_str_blank(g->event_id)) {
            uint32_t first = hmap_get_or_put(&ev, key1(g->event_id), (uint32_t)i);
            if (first != HNONE && ++seen[first] == 1)
                add_issue(c, CG_SEV_ERROR, "duplicate_gradient_event_id",
                          "gradient event id %s is used more than once", g->event_id);
        }
        const char *why = state_norm_problem(g);
        if (why)
            add_issue(c, CG_SEV_ERROR, "gradient_state_norm_inconsistent",
                      "gradient event %s (%s/%s) has state %s, which %s", nz(g->event_id), nz(g->root), nz(g->key),
                      cg_grad_state_name(g->state), why);
    }
    free(seen);
    hmap_free(&ev);
}

/* ---- 10. gradient contract --------------------------------------------------- */

typedef struct family_tally {
    uint64_t members, observed, present, non_finite, attached;
} family_tally;

static void check_gradient_contract(hctx *c) {
    const cg_trace *t = c->t;
    const cg_capture_contract *cc = &t->run.contract;
    const cg_gradient_contract *gc = cc->gradient_contract;
    if (cc->gradients == CG_COV_COMPLETE && !gc) {
        add_issue(c, CG_SEV_ERROR, "gradient_contract_missing",
                  "complete gradient coverage requires an exact gradient contract");
        return;
    }
    if (!gc) return;
    if (cc->gradients != CG_COV_COMPLETE) {
        add_issue(c, CG_SEV_ERROR, "gradient_contract_without_complete_coverage",
                  "an exact gradient contract requires complete declared gradient coverage");
        return;
    }
    cg_error err;
    cg_err_clear(&err);
    if (cg_gradient_contract_validate(gc, &err) != 0) {
        add_issue(c, CG_SEV_ERROR, "gradient_contract_invalid", "%s", err.msg);
        return;
    }

    /* observations: (root, key) -> first event; count per first event */
    size_t n = t->n_gradients;
    hmap obs;
    hmap_init(&obs, n, grad_param_key, t);
    uint32_t *count = xcalloc(n, sizeof *count);
    for (size_t i = 0; i < n; i++) {
        uint32_t first = hmap_get_or_put(&obs, grad_param_key(t, (uint32_t)i), (uint32_t)i);
        count[first == HNONE ? i : first]++;
    }
    hmap manifest;
    hmap_init(&manifest, gc->n_expected, expected_key, gc);
    for (size_t i = 0; i < gc->n_expected; i++) hmap_get_or_put(&manifest, expected_key(gc, (uint32_t)i), (uint32_t)i);

    for (size_t i = 0; i < gc->n_expected; i++) {
        const cg_expected_gradient *e = &gc->expected[i];
        uint32_t first = hmap_get(&obs, expected_key(gc, (uint32_t)i));
        uint32_t k = first == HNONE ? 0 : count[first];
        if (k == 0)
            add_issue(c, sev_f(c), "gradient_manifest_missing_key",
                      "gradient manifest entry %s/%s (family %s) was not observed", e->root, e->key, e->family);
        else if (k > 1)
            add_issue(c, CG_SEV_ERROR, "gradient_manifest_duplicate_key",
                      "gradient manifest entry %s/%s was observed %u times; exactly once is required", e->root,
                      e->key, k);
    }
    for (size_t i = 0; i < n; i++) {
        if (!count[i]) continue; /* not the first event of its (root, key) */
        if (hmap_get(&manifest, grad_param_key(t, (uint32_t)i)) == HNONE)
            add_issue(c, CG_SEV_ERROR, "gradient_manifest_undeclared_key",
                      "gradient %s/%s (event %s) is not declared in the gradient manifest", t->gradients[i].root,
                      t->gradients[i].key, t->gradients[i].event_id);
    }

    hmap fams;
    hmap_init(&fams, gc->n_families, family_key, gc);
    for (size_t i = 0; i < gc->n_families; i++) hmap_get_or_put(&fams, family_key(gc, (uint32_t)i), (uint32_t)i);
    family_tally *ft = xcalloc(gc->n_families, sizeof *ft);
    for (size_t i = 0; i < gc->n_expected; i++) {
        uint32_t fi = hmap_get(&fams, key1(gc->expected[i].family));
        if (fi == HNONE) continue; /* impossible after validation */
        family_tally *f = &ft[fi];
        f->members++;
        uint32_t first = hmap_get(&obs, expected_key(gc, (uint32_t)i));
        if (first == HNONE) continue;
        cg_grad_state st = t->gradients[first].state;
        f->observed++;
        if (st == CG_GRAD_PRESENT) f->present++;
        if (st == CG_GRAD_NON_FINITE) f->non_finite++;
        if (st != CG_GRAD_MISSING) f->attached++;
    }
    for (size_t i = 0; i < gc->n_families; i++) {
        const cg_family_contract *fc = &gc->families[i];
        const family_tally *f = &ft[i];
        bool incomplete = f->observed < f->members;
        if (f->non_finite)
            add_issue(c, CG_SEV_ERROR, "gradient_family_non_finite",
                      "gradient family %s has %llu non-finite member gradients", fc->family, ull(f->non_finite));
        switch (fc->expectation) {
        case CG_FAM_ACTIVE:
            if (f->present < fc->min_present && !(c->failed && incomplete))
                add_issue(c, CG_SEV_ERROR, "gradient_active_family_below_minimum",
                          "active gradient family %s has %llu present gradients; at least %llu are required",
                          fc->family, ull(f->present), ull(fc->min_present));
            break;
        case CG_FAM_INACTIVE:
            if (f->attached)
                add_issue(c, CG_SEV_ERROR, "gradient_inactive_family_leakage",
                          "inactive gradient family %s has %llu member gradients that are not missing", fc->family,
                          ull(f->attached));
            break;
        case CG_FAM_DATA_CONDITIONAL:
            if (f->present > 0 && f->present < fc->min_present && !(c->failed && incomplete))
                add_issue(c, CG_SEV_ERROR, "gradient_conditional_family_below_minimum",
                          "data-conditional gradient family %s has %llu present gradients; once any is present "
                          "at least %llu are required",
                          fc->family, ull(f->present), ull(fc->min_present));
            break;
        }
    }
    free(ft);
    hmap_free(&fams);
    hmap_free(&manifest);
    hmap_free(&obs);
    free(count);
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
    cg_health *h = xcalloc(1, sizeof *h);
    cg_arena_init(&h->arena, 0);
    hctx c = {.t = t, .h = h, .failed = t->terminal.outcome == CG_OUTCOME_FAILED};
    hmap_init(&c.spans, t->n_spans, span_key, t);
    count_coverage(t, &h->coverage);

    check_terminal(&c);
    check_run_meta(&c);
    check_spans(&c);
    check_records(&c);
    check_edges(&c);
    check_memory(&c);
    check_absence(&c);
    check_semantic_labels(&c);
    check_gradient_events(&c);
    check_gradient_contract(&c);

    h->n_issues = c.n;
    h->issues = c.n ? cg_arena_alloc(&h->arena, c.n * sizeof *h->issues) : NULL;
    if (c.n) memcpy(h->issues, c.v, c.n * sizeof *h->issues);
    h->structurally_valid = true;
    for (size_t i = 0; i < c.n; i++)
        if (c.v[i].severity == CG_SEV_ERROR) h->structurally_valid = false;
    h->capture_complete = t->terminal.outcome == CG_OUTCOME_COMPLETE;
    free(c.v);
    free(c.parent);
    hmap_free(&c.spans);
    return h;
}

void cg_health_free(cg_health *h) {
    if (!h) return;
    cg_arena_free(&h->arena);
    free(h);
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
