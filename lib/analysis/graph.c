/* graph.c — execution graph construction (graph/5, spec §6).
 *
 * Nodes live in compact per-kind records (struct cg_graph_store); the ids of
 * op nodes ("<span>/op/<n>") and tensor nodes ("tensor/<id>") are formatted
 * only when a node or edge is viewed. Every string order the crate defines
 * (node ids; edges by (from, to, kind)) is computed once: the id strings are
 * sorted by a multikey quicksort on cached 8-byte keys and merged linearly
 * into one rank per node, and edges sort on those integer ranks. */
#include "analysis/graph.h"
#include "base/alloc.h"
#include "base/hmap.h"
#include "base/num.h"

#include <stdlib.h>
#include <string.h>

#define NONE CG_GRAPH_NONE
#define NONE32 UINT32_MAX

const char *cg_node_kind_name(cg_node_kind k) {
    switch (k) {
    case CG_NODE_ROOT: return "root";
    case CG_NODE_FUNCTION: return "function";
    case CG_NODE_MODULE: return "module";
    case CG_NODE_OP: return "op";
    case CG_NODE_TENSOR: return "tensor";
    default: return "other";
    }
}

const char *cg_host_scope_name(cg_host_scope s) {
    return s == CG_HOST_SCOPE_MEASURED_SUBTREE ? "measured_subtree" : "concurrent_overlap";
}

/* ---- the compact graph ---- */

typedef struct span_node {
    uint64_t self_ns, total_ns;
    const cg_device_span_timing *dt;
    uint32_t n_dt, parent;
    uint8_t kind;
    bool in_measured;
} span_node;

typedef struct op_node {
    uint32_t k, parent; /* id "<span_id>/op/<k>"; parent span or NONE32 */
} op_node;

typedef struct tensor_node {
    const char *tid;
    uint32_t tev, parent; /* first tensor event of the id, its span (NONE32: none) */
} tensor_node;

enum { E_TRACE, E_SPAN_CALL, E_OP_CALL, E_OP_INPUT, E_OP_OUTPUT };

/* endpoints: node index, or n_nodes + index into foreign (strings naming no node) */
typedef struct edge_rec {
    uint32_t from, to, src; /* src: trace edge, child span or op index by type */
    uint8_t type;
} edge_rec;

/* an id as two pieces: pre (never NULL, often "") then s */
typedef struct idref {
    const char *pre, *s;
} idref;

struct cg_graph_store {
    span_node *spans;
    op_node *ops;
    tensor_node *tensors;
    uint32_t *by_id; /* node indices in id order */
    edge_rec *edges;
    idref *foreign;
    size_t n_foreign;
    const cg_span_memory *sm; /* per span, NULL without a logical plane */
    const cg_op_memory *om;   /* per op, likewise */
};

static int idcmp(idref a, idref b) {
    const unsigned char *x = (const unsigned char *)a.pre, *y = (const unsigned char *)b.pre;
    bool xs = false, ys = false;
    for (;;) {
        if (!*x && !xs) {
            x = (const unsigned char *)a.s;
            xs = true;
            continue;
        }
        if (!*y && !ys) {
            y = (const unsigned char *)b.s;
            ys = true;
            continue;
        }
        if (*x != *y) return *x < *y ? -1 : 1;
        if (!*x) return 0;
        x++;
        y++;
    }
}

/* ---- multikey quicksort of strings on cached 8-byte keys ---- */

typedef struct skey {
    uint64_t k; /* bytes d..d+7 of s, big-endian, zero past the end */
    const char *s;
    size_t idx;
} skey;

static uint64_t load8(const char *s, size_t d) {
    uint64_t k = 0;
    const unsigned char *p = (const unsigned char *)s + d;
    int i = 0;
    for (; i < 8 && p[i]; i++) k = k << 8 | p[i];
    return k << (8 * (8 - i));
}

typedef struct mk_range {
    size_t lo, n, d;
} mk_range;

static void mk_push(mk_range **st, size_t *sp, size_t *cap, size_t lo, size_t n, size_t d) {
    if (n < 2) return;
    if (*sp == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *st = cg_xrealloc(*st, *cap, sizeof **st);
    }
    (*st)[(*sp)++] = (mk_range){lo, n, d};
}

static void mk_small(skey *a, size_t n, size_t d) {
    for (size_t i = 1; i < n; i++) {
        skey x = a[i];
        size_t j = i;
        while (j > 0 && (a[j - 1].k > x.k || (a[j - 1].k == x.k && (x.k & 0xff) &&
                                               strcmp(a[j - 1].s + d + 8, x.s + d + 8) > 0))) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = x;
    }
}

static uint64_t med3(uint64_t a, uint64_t b, uint64_t c) {
    return a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
}

/* Sorts v by s (byte order; equal strings in no particular order). */
static void strsort(skey *v, size_t n) {
    for (size_t i = 0; i < n; i++) v[i].k = load8(v[i].s, 0);
    mk_range *st = NULL;
    size_t sp = 0, cap = 0;
    mk_push(&st, &sp, &cap, 0, n, 0);
    while (sp) {
        mk_range r = st[--sp];
        skey *a = v + r.lo;
        if (r.n < 16) {
            mk_small(a, r.n, r.d);
            continue;
        }
        uint64_t p = med3(a[0].k, a[r.n / 2].k, a[r.n - 1].k);
        size_t lt = 0, i = 0, gt = r.n;
        while (i < gt) {
            if (a[i].k < p) {
                skey x = a[lt];
                a[lt++] = a[i];
                a[i++] = x;
            } else if (a[i].k > p) {
                skey x = a[--gt];
                a[gt] = a[i];
                a[i] = x;
            } else {
                i++;
            }
        }
        mk_push(&st, &sp, &cap, r.lo, lt, r.d);
        mk_push(&st, &sp, &cap, r.lo + gt, r.n - gt, r.d);
        if ((p & 0xff) && gt - lt > 1) { /* equal 8 bytes, none the end: the next 8 */
            for (size_t k = lt; k < gt; k++) a[k].k = load8(a[k].s, r.d + 8);
            mk_push(&st, &sp, &cap, r.lo + lt, gt - lt, r.d + 8);
        }
    }
    cg_free(st);
}

/* ---- span and tensor id lookup ----
 * The reader interns short strings, so an id usually shares its pointer with
 * every other mention of it: lookups try the pointer first (no strlen, no
 * strcmp) and fall back to the string's content. */

static uint64_t str_hash(const char *s) { return cg_hmap_mix(cg_hmap_hash_bytes(0, s, strlen(s)), 0); }
static uint64_t ptr_hash(const char *s) { return cg_hmap_mix(0x9e3779b97f4a7c15ULL, (uint64_t)(uintptr_t)s); }

static bool span_eq(const void *ctx, uint32_t id, const void *key) {
    return strcmp(((const cg_trace *)ctx)->spans[id].id, key) == 0;
}
static bool span_ptr_eq(const void *ctx, uint32_t id, const void *key) {
    return ((const cg_trace *)ctx)->spans[id].id == key;
}

typedef struct span_index {
    cg_hmap by_ptr, by_str;
} span_index;

static uint32_t span_lookup(const span_index *m, const cg_trace *t, const char *id) {
    if (!id) return NONE32;
    uint32_t i = cg_hmap_find(&m->by_ptr, ptr_hash(id), span_ptr_eq, t, id, NULL);
    return i != NONE32 ? i : cg_hmap_find(&m->by_str, str_hash(id), span_eq, t, id, NULL);
}

static bool ptr_eq(const void *ctx, uint32_t id, const void *key) { return ((const char *const *)ctx)[id] == key; }

static void put_dec(cg_buf *b, uint64_t v) {
    char d[20];
    size_t n = 0;
    do d[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    cg_buf_reserve(b, n);
    while (n) b->data[b->len++] = d[--n];
}

/* ---- refusal ---- */

static int check_usable(const cg_health *h, cg_error *err) {
    if (!h->capture_complete)
        return cg_err_set(err, CG_ESTATE, "cannot build a graph from a failed capture");
    if (!h->structurally_valid) {
        cg_buf b = CG_BUF_INIT;
        bool first = true;
        for (size_t i = 0; i < h->n_issues; i++) {
            if (h->issues[i].severity != CG_SEV_ERROR) continue;
            if (!first) cg_buf_puts(&b, "; ");
            cg_buf_puts(&b, h->issues[i].message);
            first = false;
        }
        cg_err_set(err, CG_EINVAL, "trace is structurally invalid: %s", b.data ? b.data : "");
        cg_buf_free(&b);
        return -1;
    }
    return 0;
}

/* build_from_trace's refusal of a repeated node id; the id is quoted and
 * escaped as JSON writes it (Rust's {:?} for every id without control characters) */
static int duplicate_node_error(cg_error *err, const char *id) {
    cg_buf q = CG_BUF_INIT;
    cg_json_write_str(&q, id, strlen(id));
    cg_err_set(err, CG_EINVAL,
               "duplicate graph node ID %s: span IDs must not collide with synthesized `<span>/op/<n>` or "
               "`tensor/<id>` node IDs",
               q.data ? q.data : "\"\"");
    cg_buf_free(&q);
    return -1;
}

/* The most inputs of one op: an edge's sort key holds its input number in 28 bits. */
#define EDGE_MAX_INPUTS ((size_t)0xfffffff)

/* Upper bound of the graph's edges: trace edges, span and op call edges, op
 * data edges (SIZE_MAX when an op has more than EDGE_MAX_INPUTS inputs). */
static size_t edge_capacity(const cg_trace *t) {
    size_t cap = t->n_edges + t->n_spans + t->n_ops;
    for (size_t i = 0; i < t->n_ops; i++) {
        if (t->ops[i].inputs.n > EDGE_MAX_INPUTS) return SIZE_MAX;
        cap += t->ops[i].inputs.n + (t->ops[i].output ? 1 : 0);
    }
    return cap;
}

/* ---- rankings ---- */

static int cmp_host_cost(const void *pa, const void *pb) {
    const cg_host_span_cost *a = pa, *b = pb;
    if (a->measured_overlap_self_time_ns != b->measured_overlap_self_time_ns)
        return a->measured_overlap_self_time_ns > b->measured_overlap_self_time_ns ? -1 : 1;
    if (a->host_self_time_ns != b->host_self_time_ns) return a->host_self_time_ns > b->host_self_time_ns ? -1 : 1;
    return strcmp(a->id, b->id);
}

typedef struct dref {
    cg_device_span_cost c;
    size_t seq;
} dref;
static int cmp_dref(const void *pa, const void *pb) {
    const dref *a = pa, *b = pb;
    if (a->c.device_busy_ns != b->c.device_busy_ns) return a->c.device_busy_ns > b->c.device_busy_ns ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

typedef struct href {
    cg_heavy_span c;
    size_t seq;
} href;
static int cmp_href(const void *pa, const void *pb) {
    const href *a = pa, *b = pb;
    if (a->c.allocated_bytes != b->c.allocated_bytes) return a->c.allocated_bytes > b->c.allocated_bytes ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* ---- build ---- */

typedef struct bctx {
    const cg_trace *t;
    cg_graph *g;
    cg_graph_store *st;
    cg_arena *a;
    size_t ns, no, nu;
    span_index spans;    /* span id -> span index */
    cg_hmap tmap;        /* tensor id pointer -> index into tstr */
    const char **tstr;   /* distinct tensor id pointers, first-seen order */
    uint32_t *tpos;      /* tstr index -> tensor node (sorted position) */
    uint32_t *opref;     /* tensor node of each op input and output, in op order */
    uint32_t *dend;      /* tensor node of each trace edge's from and to (data edges; NONE32: none) */
    const char **opid;   /* op node ids (scratch, in opbuf) */
    cg_buf opbuf;
    uint32_t *rank;      /* node -> position in by_id */
    size_t *nch, *child, *order, *tin, *tout, reached;
    uint64_t *op_sum;
    size_t *cfirst, *clist; /* children (spans and ops) of each span, CSR */
    cg_interval *ivs;
} bctx;

static idref build_ref(const bctx *b, size_t i) {
    if (i < b->ns) return (idref){"", b->t->spans[i].id};
    if (i < b->ns + b->no) return (idref){"", b->opid[i - b->ns]};
    return (idref){"tensor/", b->st->tensors[i - b->ns - b->no].tid};
}

static void index_spans(bctx *b) {
    cg_hmap_init(&b->spans.by_ptr, b->ns);
    cg_hmap_init(&b->spans.by_str, b->ns);
    for (size_t i = 0; i < b->ns; i++) {
        const char *id = b->t->spans[i].id;
        cg_hmap_find_or_put(&b->spans.by_ptr, ptr_hash(id), span_ptr_eq, b->t, id, (uint32_t)i);
        cg_hmap_find_or_put(&b->spans.by_str, str_hash(id), span_eq, b->t, id, (uint32_t)i);
    }
}

/* the tensor node of id tid by content, or NONE32 (the nodes are sorted) */
static uint32_t tensor_find(const bctx *b, const char *tid) {
    size_t lo = 0, hi = b->nu;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(b->st->tensors[mid].tid, tid);
        if (c == 0) return (uint32_t)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NONE32;
}

/* the tensor id pointers (tensor events ∪ op inputs ∪ op outputs), then the
 * distinct ids among them, sorted */
typedef struct tcollect {
    size_t n, cap;
    uint32_t *tev; /* tstr index -> first tensor event or NONE32 */
} tcollect;

/* the tstr index of tid, added when new */
static uint32_t tensor_add(bctx *b, tcollect *c, const char *tid, uint32_t tev) {
    uint64_t h = ptr_hash(tid);
    size_t at = 0;
    uint32_t f = cg_hmap_find(&b->tmap, h, ptr_eq, b->tstr, tid, &at);
    if (f != NONE32) return f;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 1024;
        b->tstr = cg_xrealloc(b->tstr, c->cap, sizeof *b->tstr);
        c->tev = cg_xrealloc(c->tev, c->cap, sizeof *c->tev);
    }
    cg_hmap_put_at(&b->tmap, at, h, (uint32_t)c->n);
    b->tstr[c->n] = tid;
    c->tev[c->n] = tev;
    return (uint32_t)c->n++;
}

/* the distinct ids of the sorted keys k (equal ids under several pointers: one) */
static size_t count_distinct(const skey *k, size_t n) {
    size_t nu = 0;
    for (size_t i = 0; i < n; i++) nu += i == 0 || strcmp(k[i - 1].s, k[i].s) != 0;
    return nu;
}

/* The number of distinct tensor ids (tensor events, op inputs and outputs) by
 * content, from one sort of every mention: no pointer map. */
static size_t count_tensor_ids(const cg_trace *t) {
    size_t n = t->n_tensors, j = 0;
    for (size_t i = 0; i < t->n_ops; i++) n += t->ops[i].inputs.n + (t->ops[i].output ? 1 : 0);
    skey *k = cg_xalloc(n ? n : 1, sizeof *k);
    for (size_t i = 0; i < t->n_tensors; i++) k[j++] = (skey){0, t->tensors[i].tensor_id, 0};
    for (size_t i = 0; i < t->n_ops; i++) {
        for (size_t x = 0; x < t->ops[i].inputs.n; x++) k[j++] = (skey){0, t->ops[i].inputs.items[x], 0};
        if (t->ops[i].output) k[j++] = (skey){0, t->ops[i].output, 0};
    }
    strsort(k, n);
    size_t nu = count_distinct(k, n);
    cg_free(k);
    return nu;
}

/* The data edges' endpoints by pointer: the tstr index of each, or NONE32
 * (a pointer no tensor mention has); then the id map, the largest scratch of
 * the build, goes before the id sort takes its keys. */
static void data_edge_refs(bctx *b) {
    const cg_trace *t = b->t;
    b->dend = cg_xalloc(2 * t->n_edges + 1, sizeof *b->dend);
    for (size_t i = 0; i < 2 * t->n_edges; i++) {
        const cg_edge *e = &t->edges[i / 2];
        const char *id = i % 2 ? e->to : e->from;
        b->dend[i] = e->is_data ? cg_hmap_find(&b->tmap, ptr_hash(id), ptr_eq, b->tstr, id, NULL) : NONE32;
    }
    cg_hmap_free(&b->tmap);
}

/* Every later use of a tensor id as a node (op inputs and outputs, data edge
 * endpoints) resolved to its node now, so that the positions go before the
 * ranks, summary and edges take their scratch. */
static void tensor_refs_resolve(bctx *b, size_t nref) {
    const cg_trace *t = b->t;
    for (size_t r = 0; r < nref; r++) b->opref[r] = b->tpos[b->opref[r]];
    for (size_t i = 0; i < 2 * t->n_edges; i++) {
        const cg_edge *e = &t->edges[i / 2];
        if (!e->is_data) continue;
        b->dend[i] = b->dend[i] != NONE32 ? b->tpos[b->dend[i]] : tensor_find(b, i % 2 ? e->to : e->from);
    }
    cg_free(b->tpos);
    b->tpos = NULL;
}

/* The tensor nodes; count_only: only their number (a summary-only graph views none). */
static void collect_tensors(bctx *b, bool count_only) {
    const cg_trace *t = b->t;
    if (count_only) {
        b->nu = count_tensor_ids(t);
        return;
    }
    tcollect c = {0, 0, NULL};
    cg_hmap_init(&b->tmap, t->n_tensors + 2 * t->n_ops);
    for (size_t i = 0; i < t->n_tensors; i++) tensor_add(b, &c, t->tensors[i].tensor_id, (uint32_t)i);
    size_t nref = 0;
    for (size_t i = 0; i < t->n_ops; i++) nref += t->ops[i].inputs.n + (t->ops[i].output ? 1 : 0);
    b->opref = cg_xalloc(nref ? nref : 1, sizeof *b->opref);
    nref = 0;
    for (size_t i = 0; i < t->n_ops; i++) {
        for (size_t k = 0; k < t->ops[i].inputs.n; k++) b->opref[nref++] = tensor_add(b, &c, t->ops[i].inputs.items[k], NONE32);
        if (t->ops[i].output) b->opref[nref++] = tensor_add(b, &c, t->ops[i].output, NONE32);
    }
    data_edge_refs(b);
    skey *k = cg_xalloc(c.n ? c.n : 1, sizeof *k);
    for (size_t i = 0; i < c.n; i++) k[i] = (skey){0, b->tstr[i], i};
    cg_free(b->tstr); /* the keys hold the pointers */
    b->tstr = NULL;
    strsort(k, c.n);
    b->tpos = cg_xalloc(c.n ? c.n : 1, sizeof *b->tpos);
    b->st->tensors = cg_arena_alloc(b->a, (c.n ? c.n : 1) * sizeof *b->st->tensors);
    size_t nu = 0;
    for (size_t i = 0; i < c.n; i++) {
        uint32_t ev = c.tev[k[i].idx]; /* equal ids under several pointers: one node, the first event */
        if (nu > 0 && strcmp(b->st->tensors[nu - 1].tid, k[i].s) == 0) {
            if (ev < b->st->tensors[nu - 1].tev) b->st->tensors[nu - 1].tev = ev;
        } else {
            b->st->tensors[nu++] = (tensor_node){k[i].s, ev, NONE32};
        }
        b->tpos[k[i].idx] = (uint32_t)(nu - 1);
    }
    for (size_t u = 0; u < nu; u++) {
        uint32_t ev = b->st->tensors[u].tev;
        if (ev != NONE32) b->st->tensors[u].parent = span_lookup(&b->spans, t, t->tensors[ev].span_id);
    }
    b->nu = nu;
    cg_free(k);
    cg_free(c.tev);
    tensor_refs_resolve(b, nref);
}

/* parents, child lists, op time per span and a preorder (no recursion) */
static void span_tree(bctx *b) {
    const cg_trace *t = b->t;
    size_t ns = b->ns, no = b->no;
    span_node *sp = b->st->spans;
    b->nch = cg_xzalloc(ns + 1, sizeof *b->nch);
    for (size_t i = 0; i < ns; i++) {
        sp[i].parent = span_lookup(&b->spans, t, t->spans[i].parent_id);
        if (sp[i].parent != NONE32) b->nch[sp[i].parent + 1]++;
    }
    for (size_t i = 0; i < ns; i++) b->nch[i + 1] += b->nch[i];
    b->child = cg_xalloc(ns ? ns : 1, sizeof *b->child);
    size_t *fill = cg_xalloc(ns ? ns : 1, sizeof *fill);
    memcpy(fill, b->nch, ns * sizeof *fill);
    for (size_t i = 0; i < ns; i++)
        if (sp[i].parent != NONE32) b->child[fill[sp[i].parent]++] = i;
    cg_free(fill);
    b->op_sum = cg_xzalloc(ns ? ns : 1, sizeof *b->op_sum);
    for (size_t i = 0; i < no; i++) {
        uint32_t s = span_lookup(&b->spans, t, t->ops[i].span_id);
        b->st->ops[i].parent = s;
        if (s != NONE32) b->op_sum[s] = cg_sat_add_u64(b->op_sum[s], t->ops[i].duration_ns);
    }
    b->order = cg_xalloc(ns ? ns : 1, sizeof *b->order);
    b->tin = cg_xalloc(ns ? ns : 1, sizeof *b->tin);
    b->tout = cg_xalloc(ns ? ns : 1, sizeof *b->tout);
    size_t *stack = cg_xalloc(ns ? ns : 1, sizeof *stack);
    for (size_t i = 0; i < ns; i++) b->tin[i] = b->tout[i] = NONE;
    for (size_t r = 0; r < ns; r++) {
        if (sp[r].parent != NONE32) continue;
        size_t top = 0;
        stack[top++] = r;
        while (top) {
            size_t v = stack[--top];
            b->tin[v] = b->reached;
            b->order[b->reached++] = v;
            for (size_t k = b->nch[v + 1]; k > b->nch[v]; k--) stack[top++] = b->child[k - 1];
        }
    }
    cg_free(stack);
}

static void fill_spans(bctx *b, const cg_timing_profile *timing) {
    const cg_trace *t = b->t;
    span_node *sp = b->st->spans;
    for (size_t i = 0; i < b->ns; i++) {
        const cg_span *s = &t->spans[i];
        sp[i].kind = (uint8_t)(!s->parent_id ? CG_NODE_ROOT
                               : s->kind == CG_SPAN_OP ? CG_NODE_OP
                               : s->kind == CG_SPAN_MODULE ? CG_NODE_MODULE
                                                           : CG_NODE_FUNCTION);
        size_t cnt = 0;
        sp[i].dt = cg_timing_find_span(timing, s->id, &cnt);
        sp[i].n_dt = cnt ? (uint32_t)cnt : 0;
        if (!cnt) sp[i].dt = NULL;
        sp[i].total_ns = s->duration_ns > 0 ? s->duration_ns : b->op_sum[i];
    }
    /* effective totals of zero-duration spans, bottom-up (reverse preorder) */
    for (size_t k = b->reached; k > 0; k--) {
        size_t v = b->order[k - 1];
        if (t->spans[v].duration_ns > 0) continue;
        uint64_t tot = b->op_sum[v];
        for (size_t c = b->nch[v]; c < b->nch[v + 1]; c++) tot = cg_sat_add_u64(tot, sp[b->child[c]].total_ns);
        sp[v].total_ns = tot;
    }
    /* subtree extents */
    for (size_t k = b->reached; k > 0; k--) {
        size_t v = b->order[k - 1];
        size_t size = 1;
        for (size_t c = b->nch[v]; c < b->nch[v + 1]; c++) size += b->tout[b->child[c]] - b->tin[b->child[c]];
        b->tout[v] = b->tin[v] + size;
    }
}

/* per-span op numbers and the op ids "<span_id>/op/<k>" (scratch, for the id order) */
static void fill_ops(bctx *b) {
    const cg_trace *t = b->t;
    uint32_t *counter = cg_xzalloc(b->ns ? b->ns : 1, sizeof *counter);
    size_t *off = cg_xalloc(b->no ? b->no : 1, sizeof *off);
    for (size_t i = 0; i < b->no; i++) {
        op_node *o = &b->st->ops[i];
        o->k = o->parent != NONE32 ? counter[o->parent]++ : (uint32_t)i;
        off[i] = b->opbuf.len;
        cg_buf_puts(&b->opbuf, t->ops[i].span_id);
        cg_buf_append(&b->opbuf, "/op/", 4);
        put_dec(&b->opbuf, o->k);
        cg_buf_putc(&b->opbuf, '\0');
    }
    b->opid = cg_xalloc(b->no ? b->no : 1, sizeof *b->opid);
    for (size_t i = 0; i < b->no; i++) b->opid[i] = b->opbuf.data + off[i];
    cg_free(off);
    cg_free(counter);
}

/* node indices base + k[i].idx in id order, equal ids by index */
static uint32_t *sorted_ids(skey *k, size_t n, size_t base) {
    strsort(k, n);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && strcmp(k[i].s, k[j].s) == 0; j++) {}
        for (size_t x = i + 1; x < j; x++) /* a run of equal ids (rare): by index */
            for (size_t y = x; y > i && k[y - 1].idx > k[y].idx; y--) {
                skey s = k[y];
                k[y] = k[y - 1];
                k[y - 1] = s;
            }
    }
    uint32_t *out = cg_xalloc(n ? n : 1, sizeof *out);
    for (size_t i = 0; i < n; i++) out[i] = (uint32_t)(base + k[i].idx);
    return out;
}

static uint32_t *span_order(const bctx *b) {
    bool sorted = true;
    for (size_t i = 1; i < b->ns && sorted; i++) sorted = strcmp(b->t->spans[i - 1].id, b->t->spans[i].id) < 0;
    if (!sorted) {
        skey *k = cg_xalloc(b->ns, sizeof *k);
        for (size_t i = 0; i < b->ns; i++) k[i] = (skey){0, b->t->spans[i].id, i};
        uint32_t *out = sorted_ids(k, b->ns, 0);
        cg_free(k);
        return out;
    }
    uint32_t *out = cg_xalloc(b->ns ? b->ns : 1, sizeof *out);
    for (size_t i = 0; i < b->ns; i++) out[i] = (uint32_t)i;
    return out;
}

/* the merged id order being written: by_id, rank and the first repeated id */
typedef struct merge_out {
    uint32_t *by_id, *rank;
    size_t r, dup, group_len;
    idref prev;
} merge_out;

/* distinct: ref is known to differ from the previous id */
static void merge_emit(merge_out *m, uint32_t node, idref ref, bool distinct) {
    m->by_id[m->r] = node;
    m->rank[node] = (uint32_t)m->r;
    m->group_len = !distinct && m->r > 0 && idcmp(m->prev, ref) == 0 ? m->group_len + 1 : 1;
    if (m->group_len == 2 && (m->dup == NONE || node < m->dup)) m->dup = node;
    m->prev = ref;
    m->r++;
}

static bool tensor_prefixed(const char *id) { return strncmp(id, "tensor/", 7) == 0; }

/* by_id and rank: the three id-sorted lists (spans, ops, tensors) merged; equal
 * ids come out by node index. When no span or op id starts with "tensor/" (the
 * usual case) the tensor ids are one block: every other id compares with each
 * of them as with "tensor/", so the block goes in whole where "tensor/" would,
 * without a comparison per tensor. Returns the node order position of the
 * first repeated id (the second node of its group), or NONE. */
static size_t rank_nodes(bctx *b) {
    size_t n = b->g->n_nodes;
    uint32_t *lists[3], len[3] = {(uint32_t)b->ns, (uint32_t)b->no, (uint32_t)b->nu}, pos[3] = {0, 0, 0};
    lists[0] = span_order(b);
    skey *k = cg_xalloc(b->no ? b->no : 1, sizeof *k);
    for (size_t i = 0; i < b->no; i++) k[i] = (skey){0, b->opid[i], i};
    lists[1] = sorted_ids(k, b->no, b->ns);
    cg_free(k);
    lists[2] = cg_xalloc(b->nu ? b->nu : 1, sizeof *lists[2]);
    for (size_t u = 0; u < b->nu; u++) lists[2][u] = (uint32_t)(b->ns + b->no + u);
    bool block = true;
    for (size_t i = 0; i < b->ns && block; i++) block = !tensor_prefixed(b->t->spans[i].id);
    for (size_t i = 0; i < b->no && block; i++) block = !tensor_prefixed(b->opid[i]);
    merge_out m = {cg_arena_alloc(b->a, (n ? n : 1) * sizeof *m.by_id), cg_xalloc(n ? n : 1, sizeof *m.rank), 0, NONE,
                   0, {"", ""}};
    b->rank = m.rank;
    const idref tensor_start = {"tensor/", ""};
    while (m.r < n) {
        int best = -1;
        idref bref = {"", ""};
        for (int l = 0; l < (block ? 2 : 3); l++) {
            if (pos[l] == len[l]) continue;
            idref x = build_ref(b, lists[l][pos[l]]);
            if (best < 0 || idcmp(x, bref) < 0) best = l, bref = x;
        }
        if (block && (best < 0 || idcmp(bref, tensor_start) > 0)) {
            for (; pos[2] < len[2]; pos[2]++) /* distinct ids, none equal to a span's or op's */
                merge_emit(&m, lists[2][pos[2]], build_ref(b, lists[2][pos[2]]), true);
            block = false;
            continue;
        }
        merge_emit(&m, lists[best][pos[best]++], bref, false);
    }
    for (int l = 0; l < 3; l++) cg_free(lists[l]);
    b->st->by_id = m.by_id;
    return m.dup;
}

/* Whether no node id can repeat without sorting them: span ids are distinct
 * (the build needs a structurally valid capture), tensor ids are deduplicated,
 * and an op id "<S>/op/<k>" or a tensor's "tensor/<id>" can equal another id
 * only when some span id or op span id contains "/op/" or starts "tensor". */
static bool ids_distinct(const cg_trace *t) {
    for (size_t i = 0; i < t->n_spans; i++)
        if (strstr(t->spans[i].id, "/op/") || !strncmp(t->spans[i].id, "tensor", 6)) return false;
    for (size_t i = 0; i < t->n_ops; i++)
        if (strstr(t->ops[i].span_id, "/op/") || !strncmp(t->ops[i].span_id, "tensor", 6)) return false;
    return true;
}

static cg_interval child_interval(const bctx *b, size_t node) {
    if (node < b->ns) return cg_interval_of(b->t->spans[node].start_ns, b->st->spans[node].total_ns);
    const cg_op *o = &b->t->ops[node - b->ns];
    return cg_interval_of(o->timestamp_ns, o->duration_ns);
}

/* self time: total less the union of the children's (spans and ops) intervals */
static void self_times(bctx *b) {
    size_t ns = b->ns, no = b->no;
    b->cfirst = cg_xzalloc(ns + 1, sizeof *b->cfirst);
    b->clist = cg_xalloc(ns + no ? ns + no : 1, sizeof *b->clist);
    b->ivs = cg_xalloc(ns + no ? ns + no : 1, sizeof *b->ivs);
#define PARENT_OF(i) ((i) < ns ? b->st->spans[i].parent : b->st->ops[(i) - ns].parent)
    for (size_t i = 0; i < ns + no; i++)
        if (PARENT_OF(i) != NONE32) b->cfirst[PARENT_OF(i) + 1]++;
    for (size_t i = 0; i < ns; i++) b->cfirst[i + 1] += b->cfirst[i];
    size_t *fill = cg_xalloc(ns ? ns : 1, sizeof *fill);
    memcpy(fill, b->cfirst, ns * sizeof *fill);
    for (size_t i = 0; i < ns + no; i++)
        if (PARENT_OF(i) != NONE32) b->clist[fill[PARENT_OF(i)]++] = i;
#undef PARENT_OF
    cg_free(fill);
    for (size_t v = 0; v < ns; v++) {
        size_t m = 0;
        for (size_t c = b->cfirst[v]; c < b->cfirst[v + 1]; c++) b->ivs[m++] = child_interval(b, b->clist[c]);
        uint64_t u = cg_union_length(b->ivs, m);
        uint64_t tot = b->st->spans[v].total_ns;
        b->st->spans[v].self_ns = tot > u ? tot - u : 0;
    }
}

/* ---- edges ---- */

typedef struct ekey {
    uint64_t ft;  /* endpoint keys from << 32 | to: positions in the id order of nodes and foreign ids */
    uint64_t seq; /* is_data << 63 | type << 60 | input number << 32 | trace edge or span/op index */
} ekey;

static bool ekey_less(const ekey *a, const ekey *b) { return a->ft != b->ft ? a->ft < b->ft : a->seq < b->seq; }

static void ekey_sift(ekey *k, size_t n, size_t i) {
    for (size_t c; (c = 2 * i + 1) < n; i = c) {
        if (c + 1 < n && ekey_less(&k[c], &k[c + 1])) c++;
        if (!ekey_less(&k[i], &k[c])) return;
        ekey x = k[i];
        k[i] = k[c];
        k[c] = x;
    }
}

/* In place (no scratch copy of the keys): quicksort on the median of three,
 * heapsort below a depth of 2 log n, insertion sort for short runs. The keys
 * are distinct (seq), so the order is the same as any sort's. */
static void sort_ekeys(ekey *k, size_t n) {
    unsigned depth = 0;
    for (size_t m = n; m > 1; m >>= 1) depth += 2;
    while (n > 16) {
        if (depth-- == 0) {
            for (size_t i = n / 2; i > 0; i--) ekey_sift(k, n, i - 1);
            for (size_t e = n - 1; e > 0; e--) {
                ekey x = k[0];
                k[0] = k[e];
                k[e] = x;
                ekey_sift(k, e, 0);
            }
            return;
        }
        ekey *a = &k[0], *b = &k[n / 2], *c = &k[n - 1];
        ekey p = ekey_less(a, b) ? (ekey_less(b, c) ? *b : ekey_less(a, c) ? *c : *a)
                                 : (ekey_less(a, c) ? *a : ekey_less(b, c) ? *c : *b);
        size_t i = 0, j = n - 1;
        for (;;) { /* Hoare partition: [0, j] <= p <= [j + 1, n) */
            while (ekey_less(&k[i], &p)) i++;
            while (ekey_less(&p, &k[j])) j--;
            if (i >= j) break;
            ekey x = k[i];
            k[i++] = k[j];
            k[j--] = x;
        }
        size_t left = j + 1;
        if (left < n - left) { /* recurse into the smaller side, loop on the larger */
            sort_ekeys(k, left);
            k += left;
            n -= left;
        } else {
            sort_ekeys(k + left, n - left);
            n = left;
        }
    }
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && ekey_less(&k[j], &k[j - 1]); j--) {
            ekey x = k[j];
            k[j] = k[j - 1];
            k[j - 1] = x;
        }
}

/* an endpoint naming no node, waiting for its foreign index */
typedef struct fpend {
    idref id;
    uint32_t edge;
    bool to;
} fpend;

typedef struct epend {
    fpend *v;
    size_t n, cap;
} epend;

static int cmp_fpend(const void *pa, const void *pb) { return idcmp(((const fpend *)pa)->id, ((const fpend *)pb)->id); }

/* node with id x (binary search over by_id), or NONE32 */
static uint32_t find_ref(const bctx *b, idref x) {
    size_t lo = 0, hi = b->g->n_nodes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = idcmp(build_ref(b, b->st->by_id[mid]), x);
        if (c == 0) return b->st->by_id[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NONE32;
}

/* trace edge `edge`'s endpoint: a call names a span id, a data edge "tensor/<id>" */
static uint32_t trace_end(const bctx *b, epend *p, const char *x, bool data, uint32_t edge, bool to) {
    uint32_t n = data ? b->dend[2 * (size_t)edge + to] : span_lookup(&b->spans, b->t, x);
    if (n != NONE32) return data ? (uint32_t)(b->ns + b->no + n) : n;
    idref r = {data ? "tensor/" : "", x};
    if ((n = find_ref(b, r)) != NONE32) return n;
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 16;
        p->v = cg_xrealloc(p->v, p->cap, sizeof *p->v);
    }
    p->v[p->n++] = (fpend){r, edge, to};
    return NONE32;
}

/* Distinct foreign endpoints in id order. Node ranks become positions in the
 * order of nodes and foreign ids together (each moves up by the foreign ids
 * below it); returns each foreign id's position. */
static uint32_t *edges_foreign(bctx *b, epend *p, uint32_t *tend) {
    if (!p->n) return NULL;
    qsort(p->v, p->n, sizeof *p->v, cmp_fpend);
    idref *fr = cg_arena_alloc(b->a, p->n * sizeof *fr);
    uint32_t *key = cg_xalloc(p->n, sizeof *key);
    size_t nf = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (nf == 0 || idcmp(fr[nf - 1], p->v[i].id) != 0) {
            fr[nf] = p->v[i].id;
            size_t lo = 0, hi = b->g->n_nodes; /* node ids below it */
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (idcmp(build_ref(b, b->st->by_id[mid]), fr[nf]) < 0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            key[nf] = (uint32_t)(lo + nf);
            nf++;
        }
        tend[2 * (size_t)p->v[i].edge + p->v[i].to] = (uint32_t)(b->g->n_nodes + nf - 1);
    }
    for (size_t r = 0, f = 0; r < b->g->n_nodes; r++) {
        while (f < nf && key[f] - f <= r) f++;
        b->rank[b->st->by_id[r]] = (uint32_t)(r + f);
    }
    b->st->foreign = fr;
    b->st->n_foreign = nf;
    return key;
}

/* The endpoints of the trace edges (nodes, or foreign ids once edges_foreign
 * has placed them) into tend, two per edge. */
static void trace_ends(bctx *b, uint32_t *tend, epend *p) {
    const cg_trace *t = b->t;
    for (size_t i = 0; i < t->n_edges; i++) {
        const cg_edge *e = &t->edges[i];
        tend[2 * i] = trace_end(b, p, e->from, e->is_data, (uint32_t)i, false);
        tend[2 * i + 1] = trace_end(b, p, e->to, e->is_data, (uint32_t)i, true);
    }
}

/* An edge's sort key: its endpoints' positions, then (kind, type, input
 * number, index): trace edges first, in trace order; keys are distinct. */
static ekey edge_key(const bctx *b, const uint32_t *fkey, uint32_t from, uint32_t to, bool data, uint64_t type,
                     uint64_t input, uint32_t src) {
    size_t n = b->g->n_nodes;
    uint64_t f = from < n ? b->rank[from] : fkey[from - n];
    uint64_t t = to < n ? b->rank[to] : fkey[to - n];
    return (ekey){f << 32 | t, (uint64_t)data << 63 | type << 60 | input << 32 | src};
}

/* every edge's key into k (trace edges, span calls, then per op its call,
 * inputs and output); off[i] receives op i's first reference in opref.
 * Returns the number of edges. */
static size_t edges_keys(const bctx *b, const uint32_t *tend, const uint32_t *fkey, ekey *k, uint32_t *off) {
    const cg_trace *t = b->t;
    size_t ne = 0, r = 0;
    uint32_t ns = (uint32_t)b->ns, no = (uint32_t)b->no;
    for (size_t i = 0; i < t->n_edges; i++)
        k[ne++] = edge_key(b, fkey, tend[2 * i], tend[2 * i + 1], t->edges[i].is_data, E_TRACE, 0, (uint32_t)i);
    for (uint32_t i = 0; i < ns; i++)
        if (b->st->spans[i].kind != CG_NODE_OP && b->st->spans[i].parent != NONE32)
            k[ne++] = edge_key(b, fkey, b->st->spans[i].parent, i, false, E_SPAN_CALL, 0, i);
    for (uint32_t i = 0; i < no; i++) {
        const cg_op *o = &t->ops[i];
        off[i] = (uint32_t)r;
        if (b->st->ops[i].parent != NONE32) k[ne++] = edge_key(b, fkey, b->st->ops[i].parent, ns + i, false, E_OP_CALL, 0, i);
        for (size_t x = 0; x < o->inputs.n; x++)
            k[ne++] = edge_key(b, fkey, ns + no + b->opref[r++], ns + i, true, E_OP_INPUT, x, i);
        if (o->output) k[ne++] = edge_key(b, fkey, ns + i, ns + no + b->opref[r++], true, E_OP_OUTPUT, 0, i);
    }
    return ne;
}

/* The edge record a key names. */
static edge_rec edge_of(const bctx *b, const uint32_t *tend, const uint32_t *off, ekey x) {
    uint32_t src = (uint32_t)x.seq, ns = (uint32_t)b->ns, no = (uint32_t)b->no;
    uint8_t type = (uint8_t)(x.seq >> 60 & 7);
    size_t input = (size_t)(x.seq >> 32 & 0xfffffff);
    switch (type) {
    case E_TRACE: return (edge_rec){tend[2 * (size_t)src], tend[2 * (size_t)src + 1], src, E_TRACE};
    case E_SPAN_CALL: return (edge_rec){b->st->spans[src].parent, src, src, E_SPAN_CALL};
    case E_OP_CALL: return (edge_rec){b->st->ops[src].parent, ns + src, src, E_OP_CALL};
    case E_OP_INPUT: return (edge_rec){ns + no + b->opref[off[src] + input], ns + src, src, E_OP_INPUT};
    default: return (edge_rec){ns + src, ns + no + b->opref[off[src] + b->t->ops[src].inputs.n], src, E_OP_OUTPUT};
    }
}

static bool rec_is_data(const cg_trace *t, const edge_rec *e) {
    return e->type == E_TRACE ? t->edges[e->src].is_data : e->type == E_OP_INPUT || e->type == E_OP_OUTPUT;
}

/* a sort key, then (same slot, once its key is read) the edge record it orders */
typedef union eslot {
    ekey k;
    edge_rec e;
} eslot;

/* edges sorted by (from, to, kind) with trace edges all kept (duplicates
 * included) and a synthesized edge dropped when an earlier edge (trace or
 * synthesized) has its (from, to, kind). The 16-byte sort keys live in the
 * graph's arena and name their edge (type, index, input number): once sorted,
 * each kept slot takes the record rebuilt from its key, so the edges end up
 * in the key array with no second array of records. */
static void build_edges(bctx *b) {
    size_t cap = edge_capacity(b->t);
    uint32_t *tend = cg_xalloc(2 * b->t->n_edges + 1, sizeof *tend);
    epend p = {NULL, 0, 0};
    trace_ends(b, tend, &p);
    uint32_t *fkey = edges_foreign(b, &p, tend);
    cg_free(p.v);
    cg_free(b->dend); /* the data edges' tensor nodes are in tend */
    b->dend = NULL;
    _Static_assert(sizeof(eslot) == sizeof(ekey), "an edge record fits a key's slot");
    eslot *k = cg_arena_alloc(b->a, (cap ? cap : 1) * sizeof *k);
    uint32_t *off = cg_xalloc(b->no + 1, sizeof *off);
    size_t ne = edges_keys(b, tend, fkey, &k[0].k, off);
    cg_free(fkey);
    sort_ekeys(&k[0].k, ne); /* the keys, one per slot (sizes equal) */
    size_t kept = 0;
    ekey last = {0, 0};
    for (size_t i = 0; i < ne; i++) {
        ekey x = k[i].k;
        bool dropped = (x.seq >> 60 & 7) != E_TRACE && kept > 0 && last.ft == x.ft && last.seq >> 63 == x.seq >> 63;
        if (dropped) continue;
        last = x;
        k[kept++].e = edge_of(b, tend, off, x); /* kept <= i: slot i's key is already read */
    }
    cg_free(off);
    cg_free(tend);
    cg_free(b->opref); /* the tensor references are done */
    b->opref = NULL;
    b->st->edges = &k[0].e;
    b->g->n_edges = kept;
}

/* ---- summary ---- */

typedef struct rankings {
    cg_host_span_cost *hc;
    size_t nh;
    dref *dc;
    size_t nd, dcap;
    href *hv;
    size_t nhv;
} rankings;

/* span i's host-cost row against the measured window mw */
static void host_row(const bctx *b, size_t i, cg_interval mw, rankings *r) {
    const span_node *n = &b->st->spans[i];
    cg_interval iv = child_interval(b, i);
    uint64_t lo = iv.start_ns > mw.start_ns ? iv.start_ns : mw.start_ns;
    uint64_t hi = iv.end_ns < mw.end_ns ? iv.end_ns : mw.end_ns;
    uint64_t overlap = hi > lo ? hi - lo : 0;
    if (overlap == 0) return;
    size_t m = 0;
    for (size_t c = b->cfirst[i]; c < b->cfirst[i + 1]; c++) {
        cg_interval ci = child_interval(b, b->clist[c]);
        uint64_t cl = ci.start_ns > mw.start_ns ? ci.start_ns : mw.start_ns;
        uint64_t ch = ci.end_ns < mw.end_ns ? ci.end_ns : mw.end_ns;
        if (ch > cl) b->ivs[m++] = (cg_interval){cl, ch};
    }
    uint64_t u = cg_union_length(b->ivs, m);
    const cg_span *s = &b->t->spans[i];
    r->hc[r->nh++] = (cg_host_span_cost){s->id, s->name,
                                         n->in_measured ? CG_HOST_SCOPE_MEASURED_SUBTREE : CG_HOST_SCOPE_CONCURRENT_OVERLAP,
                                         n->self_ns, overlap > u ? overlap - u : 0, n->total_ns, overlap};
}

static void device_rows(const bctx *b, size_t i, rankings *r) {
    const span_node *n = &b->st->spans[i];
    const cg_span *s = &b->t->spans[i];
    for (size_t k = 0; k < n->n_dt; k++) {
        if (r->nd == r->dcap) {
            r->dcap = r->dcap ? 2 * r->dcap : 16;
            r->dc = cg_xrealloc(r->dc, r->dcap, sizeof *r->dc);
        }
        r->dc[r->nd].c = (cg_device_span_cost){s->id, s->name, n->dt[k].device, n->dt[k].clock_id, n->dt[k].busy_ns};
        r->dc[r->nd].seq = r->nd;
        r->nd++;
    }
}

static void build_summary(bctx *b) {
    const cg_trace *t = b->t;
    size_t ns = b->ns, meas = NONE;
    cg_graph_summary *sum = &b->g->summary;
    sum->entrypoint = t->run.entrypoint;
    for (size_t i = 0; i < ns && meas == NONE; i++)
        if (t->spans[i].measured) meas = i;
    if (meas == NONE || b->tin[meas] == NONE) return;
    span_node *sp = b->st->spans;
    sum->has_measured = true;
    sum->outer_wall_time_ns = sp[meas].total_ns;
    cg_interval mw = child_interval(b, meas);
    bool *ancestor = cg_xzalloc(ns, sizeof *ancestor);
    size_t steps = 0;
    for (uint32_t v = sp[meas].parent; v != NONE32 && steps < ns; v = sp[v].parent, steps++) ancestor[v] = true;
    for (size_t i = 0; i < ns; i++)
        sp[i].in_measured = b->tin[i] != NONE && b->tin[i] >= b->tin[meas] && b->tin[i] < b->tout[meas];
    rankings r = {cg_xalloc(ns, sizeof *r.hc), 0, NULL, 0, 0, cg_xalloc(ns, sizeof *r.hv), 0};
    for (size_t i = 0; i < ns; i++) {
        if (ancestor[i]) continue;
        bool op_kind = sp[i].kind == CG_NODE_OP; /* span_kind op: no host / heaviest row */
        if (!op_kind) host_row(b, i, mw, &r);
        if (!sp[i].in_measured) continue;
        device_rows(b, i, &r);
        const cg_span_memory *m = b->st->sm ? &b->st->sm[i] : NULL;
        if (m && m->has_allocated && !op_kind) {
            r.hv[r.nhv].c = (cg_heavy_span){t->spans[i].id, t->spans[i].name, m->allocated_bytes, m->has_window,
                                            m->peak_live_bytes};
            r.hv[r.nhv].seq = r.nhv;
            r.nhv++;
        }
    }
    if (r.nh > 1) qsort(r.hc, r.nh, sizeof *r.hc, cmp_host_cost);
    for (size_t i = 0; i < r.nh && i < CG_GRAPH_TOP; i++) sum->slowest_host_spans[sum->n_slowest_host_spans++] = r.hc[i];
    if (r.nd) qsort(r.dc, r.nd, sizeof *r.dc, cmp_dref);
    for (size_t i = 0; i < r.nd && i < CG_GRAPH_TOP; i++) sum->slowest_device_spans[sum->n_slowest_device_spans++] = r.dc[i].c;
    if (r.nhv > 1) qsort(r.hv, r.nhv, sizeof *r.hv, cmp_href);
    for (size_t i = 0; i < r.nhv && i < CG_GRAPH_TOP; i++) sum->heaviest_spans[sum->n_heaviest_spans++] = r.hv[i].c;
    cg_free(r.hc);
    cg_free(r.dc);
    cg_free(r.hv);
    cg_free(ancestor);
}

static void bctx_free(bctx *b) {
    cg_hmap_free(&b->spans.by_ptr);
    cg_hmap_free(&b->spans.by_str);
    cg_hmap_free(&b->tmap);
    cg_free(b->tstr);
    cg_free(b->tpos);
    cg_free(b->opref);
    cg_free(b->dend);
    cg_free(b->opid);
    cg_buf_free(&b->opbuf);
    cg_free(b->rank);
    cg_free(b->nch);
    cg_free(b->child);
    cg_free(b->order);
    cg_free(b->tin);
    cg_free(b->tout);
    cg_free(b->op_sum);
    cg_free(b->cfirst);
    cg_free(b->clist);
    cg_free(b->ivs);
}

cg_graph *cg_graph_build(const cg_trace *t, const cg_health *h, cg_arena *a, cg_error *err) {
    return cg_graph_build_with(t, h, NULL, NULL, a, err);
}

/* the duplicate refusal naming node dup's id */
static int refuse_duplicate(const bctx *b, size_t dup, cg_error *err) {
    cg_buf id = CG_BUF_INIT;
    idref r = build_ref(b, dup);
    cg_buf_puts(&id, r.pre);
    cg_buf_puts(&id, r.s);
    int rc = duplicate_node_error(err, id.data);
    cg_buf_free(&id);
    return rc;
}

static cg_graph *build(const cg_trace *t, const cg_health *h, const cg_timing_profile *timing,
                       const cg_memory_profile *memory, bool summary_only, cg_arena *a, cg_error *err) {
    if (check_usable(h, err) != 0) return NULL;
    /* every index (nodes, foreign endpoints, edges) fits 32 bits */
    size_t cap = edge_capacity(t);
    if (cap > UINT32_MAX || cap + t->n_tensors + t->n_edges >= UINT32_MAX) {
        cg_err_set(err, CG_ELIMIT, "execution graph would exceed %u edges", (unsigned)UINT32_MAX);
        return NULL;
    }
    if (!timing) timing = cg_timing_analyze(t, a);
    if (!memory) memory = cg_memory_analyze(t, a);
    cg_graph *g = cg_arena_zalloc(a, sizeof *g);
    cg_graph_store *st = cg_arena_zalloc(a, sizeof *st);
    bctx b = {.t = t, .g = g, .st = st, .a = a, .ns = t->n_spans, .no = t->n_ops, .opbuf = CG_BUF_INIT};
    g->trace = t;
    g->timing = timing;
    g->memory = memory;
    g->store = st;
    st->spans = cg_arena_zalloc(a, (b.ns ? b.ns : 1) * sizeof *st->spans);
    st->ops = cg_arena_zalloc(a, (b.no ? b.no : 1) * sizeof *st->ops);
    g->n_span_nodes = b.ns;
    g->n_op_nodes = b.no;
    /* the memory metrics first: their scratch is gone before the graph's */
    st->sm = cg_memory_span_metrics(t, memory, a);
    st->om = summary_only ? NULL : cg_memory_op_metrics(t, memory, a);
    g->summary_only = summary_only;
    index_spans(&b);
    bool no_order = summary_only && ids_distinct(t); /* nothing to view, nothing to refuse */
    collect_tensors(&b, no_order);
    g->n_tensor_nodes = b.nu;
    g->n_nodes = b.ns + b.no + b.nu;
    span_tree(&b);
    fill_spans(&b, timing);
    size_t dup = NONE;
    if (!no_order) {
        fill_ops(&b);
        dup = rank_nodes(&b);
    }
    int rc = 0;
    if (dup != NONE) {
        rc = refuse_duplicate(&b, dup, err);
    } else {
        self_times(&b);
        build_summary(&b);
        cg_free(b.cfirst); /* the child lists are done: the edges' scratch comes next */
        cg_free(b.clist);
        cg_free(b.ivs);
        b.cfirst = b.clist = NULL;
        b.ivs = NULL;
        if (!summary_only) build_edges(&b);
    }
    bctx_free(&b);
    return rc ? NULL : g;
}

cg_graph *cg_graph_build_with(const cg_trace *t, const cg_health *h, const cg_timing_profile *timing,
                              const cg_memory_profile *memory, cg_arena *a, cg_error *err) {
    return build(t, h, timing, memory, false, a, err);
}

cg_graph *cg_graph_build_summary(const cg_trace *t, const cg_health *h, const cg_timing_profile *timing,
                                 const cg_memory_profile *memory, cg_arena *a, cg_error *err) {
    return build(t, h, timing, memory, true, a, err);
}

/* ---- views ---- */

/* op node j's id "<span_id>/op/<k>" into a */
static const char *op_id(const cg_graph *g, size_t j, cg_arena *a) {
    const char *sid = g->trace->ops[j].span_id;
    size_t n = strlen(sid);
    char *s = cg_arena_alloc(a, n + 4 + 21);
    memcpy(s, sid, n);
    memcpy(s + n, "/op/", 4);
    char d[20];
    size_t m = 0;
    uint64_t v = g->store->ops[j].k;
    do d[m++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    n += 4;
    while (m) s[n++] = d[--m];
    s[n] = '\0';
    return s;
}

static const char *join_ref(idref r, cg_arena *a) {
    if (!*r.pre) return r.s;
    size_t p = strlen(r.pre), n = strlen(r.s);
    char *s = cg_arena_alloc(a, p + n + 1);
    memcpy(s, r.pre, p);
    memcpy(s + p, r.s, n + 1);
    return s;
}

/* the id of node i (or of foreign endpoint i - n_nodes); NULL for a synthesized id without a */
static const char *node_id(const cg_graph *g, size_t i, cg_arena *a) {
    if (i < g->n_span_nodes) return g->trace->spans[i].id;
    if (i >= g->n_nodes) return join_ref(g->store->foreign[i - g->n_nodes], a);
    if (!a) return NULL;
    if (i < g->n_span_nodes + g->n_op_nodes) return op_id(g, i - g->n_span_nodes, a);
    return join_ref((idref){"tensor/", g->store->tensors[i - g->n_span_nodes - g->n_op_nodes].tid}, a);
}

static size_t parent_index(uint32_t p) { return p == NONE32 ? NONE : p; }

static void span_view(const cg_graph *g, size_t i, cg_graph_node *o) {
    const cg_span *s = &g->trace->spans[i];
    const span_node *n = &g->store->spans[i];
    o->parent_id = s->parent_id;
    o->name = s->name;
    o->kind = (cg_node_kind)n->kind;
    o->start_ns = s->start_ns;
    o->host_self_time_ns = n->self_ns;
    o->host_total_time_ns = n->total_ns;
    o->device_timings = n->dt;
    o->n_device_timings = n->n_dt;
    o->parent = parent_index(n->parent);
    o->in_measured_subtree = n->in_measured;
    const cg_span_memory *m = g->store->sm ? &g->store->sm[i] : NULL;
    if (!m) return;
    o->has_allocated_bytes = m->has_allocated;
    o->allocated_bytes = m->allocated_bytes;
    o->has_peak_live_bytes = o->has_residual_bytes = m->has_window;
    o->peak_live_bytes = m->peak_live_bytes;
    o->residual_bytes = m->residual_bytes;
}

static void op_view(const cg_graph *g, size_t j, cg_graph_node *o) {
    const cg_op *op = &g->trace->ops[j];
    const op_node *n = &g->store->ops[j];
    o->parent_id = op->span_id;
    o->parent = parent_index(n->parent);
    o->name = op->op_name;
    o->kind = CG_NODE_OP;
    o->start_ns = op->timestamp_ns;
    o->host_self_time_ns = o->host_total_time_ns = op->duration_ns;
    o->shape = op->shape.n > 0 ? &op->shape : NULL;
    o->dtype = op->dtype;
    o->device = op->device;
    o->has_dense_bytes = op->has_output_dense_bytes;
    o->dense_bytes = op->output_dense_bytes;
    o->in_measured_subtree = n->parent != NONE32 && g->store->spans[n->parent].in_measured;
    if (g->store->om) {
        o->has_allocated_bytes = g->store->om[j].has_allocated;
        o->allocated_bytes = g->store->om[j].allocated_bytes;
    }
}

/* the first tensor event of the id carries the metadata (none: bare node) */
static void tensor_view(const cg_graph *g, size_t u, cg_graph_node *o) {
    const tensor_node *n = &g->store->tensors[u];
    o->name = n->tid;
    o->kind = CG_NODE_TENSOR;
    o->parent = NONE;
    if (n->tev == NONE32) return;
    const cg_tensor *te = &g->trace->tensors[n->tev];
    o->parent_id = te->span_id;
    o->parent = parent_index(n->parent);
    if (te->label) o->name = te->label;
    o->shape = te->shape.n > 0 ? &te->shape : NULL;
    o->dtype = te->dtype;
    o->device = te->device;
    o->has_dense_bytes = te->has_dense_bytes;
    o->dense_bytes = te->dense_bytes;
}

void cg_graph_node_view(const cg_graph *g, size_t i, cg_arena *a, cg_graph_node *out) {
    memset(out, 0, sizeof *out);
    out->id = node_id(g, i, a);
    if (i < g->n_span_nodes)
        span_view(g, i, out);
    else if (i < g->n_span_nodes + g->n_op_nodes)
        op_view(g, i - g->n_span_nodes, out);
    else
        tensor_view(g, i - g->n_span_nodes - g->n_op_nodes, out);
}

void cg_graph_edge_view(const cg_graph *g, size_t i, cg_arena *a, cg_graph_edge *out) {
    const edge_rec *e = &g->store->edges[i];
    const cg_trace *t = g->trace;
    memset(out, 0, sizeof *out);
    out->from = node_id(g, e->from, a);
    out->to = node_id(g, e->to, a);
    out->is_data = rec_is_data(t, e);
    switch (e->type) {
    case E_TRACE: out->host_duration_ns = out->is_data ? 0 : t->edges[e->src].host_duration_ns; break;
    case E_SPAN_CALL: out->host_duration_ns = g->store->spans[e->src].total_ns; break;
    case E_OP_CALL:
        out->host_duration_ns = t->ops[e->src].duration_ns;
        out->label = t->ops[e->src].op_name;
        break;
    case E_OP_INPUT: out->label = "input"; break;
    default: out->label = "output"; break;
    }
}

/* ---- accessors ---- */

bool cg_graph_outer_wall_time(const cg_graph *g, uint64_t *ns) {
    if (!g || !g->summary.has_measured) return false;
    if (ns) *ns = g->summary.outer_wall_time_ns;
    return true;
}

const cg_host_span_cost *cg_graph_first_slowest_host(const cg_graph *g) {
    return g && g->summary.n_slowest_host_spans ? &g->summary.slowest_host_spans[0] : NULL;
}

const cg_device_span_cost *cg_graph_first_slowest_device(const cg_graph *g) {
    return g && g->summary.n_slowest_device_spans ? &g->summary.slowest_device_spans[0] : NULL;
}

size_t cg_graph_find_node(const cg_graph *g, const char *id) {
    size_t lo = 0, hi = g ? g->n_nodes : 0, found = NONE;
    cg_arena a;
    cg_arena_init(&a, 0);
    while (lo < hi && found == NONE) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(node_id(g, g->store->by_id[mid], &a), id);
        if (c == 0) found = g->store->by_id[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    cg_arena_free(&a);
    return found;
}

/* ---- JSON ---- */

static cg_jv *str_or_null(cg_arena *a, const char *s) { return s ? cg_jv_str_nocopy(a, s) : cg_jv_null(a); }

cg_jv *cg_graph_node_to_json(cg_arena *a, const cg_graph_node *n) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "id", cg_jv_str_nocopy(a, n->id));
    cg_jv_obj_put(a, o, "parent_id", str_or_null(a, n->parent_id));
    cg_jv_obj_put(a, o, "name", cg_jv_str_nocopy(a, n->name));
    cg_jv_obj_put(a, o, "kind", cg_jv_str_nocopy(a, cg_node_kind_name(n->kind)));
    cg_jv_obj_put(a, o, "start_ns", cg_jv_u64(a, n->start_ns));
    cg_jv_obj_put(a, o, "host_self_time_ns", cg_jv_u64(a, n->host_self_time_ns));
    cg_jv_obj_put(a, o, "host_total_time_ns", cg_jv_u64(a, n->host_total_time_ns));
    if (n->n_device_timings) {
        cg_jv *arr = cg_jv_arr(a);
        for (size_t i = 0; i < n->n_device_timings; i++) {
            cg_jv *d = cg_jv_obj(a);
            cg_jv_obj_put(a, d, "device", cg_jv_str_nocopy(a, n->device_timings[i].device));
            cg_jv_obj_put(a, d, "clock_id", cg_jv_str_nocopy(a, n->device_timings[i].clock_id));
            cg_jv_obj_put(a, d, "busy_ns", cg_jv_u64(a, n->device_timings[i].busy_ns));
            cg_jv_arr_push(a, arr, d);
        }
        cg_jv_obj_put(a, o, "device_timings", arr);
    }
    if (n->shape) cg_jv_obj_put(a, o, "shape", cg_shape_to_json(a, n->shape));
    if (n->dtype) cg_jv_obj_put(a, o, "dtype", cg_jv_str_nocopy(a, n->dtype));
    if (n->device) cg_jv_obj_put(a, o, "device", cg_jv_str_nocopy(a, n->device));
    if (n->has_allocated_bytes) cg_jv_obj_put(a, o, "allocated_bytes", cg_jv_u64(a, n->allocated_bytes));
    if (n->has_peak_live_bytes) cg_jv_obj_put(a, o, "peak_live_bytes", cg_jv_u64(a, n->peak_live_bytes));
    if (n->has_residual_bytes) cg_jv_obj_put(a, o, "residual_bytes", cg_jv_u64(a, n->residual_bytes));
    if (n->has_dense_bytes) cg_jv_obj_put(a, o, "dense_bytes", cg_jv_u64(a, n->dense_bytes));
    return o;
}

cg_jv *cg_graph_edge_to_json(cg_arena *a, const cg_graph_edge *e) {
    cg_jv *o = cg_jv_obj(a);
    if (e->is_data) {
        cg_jv_obj_put(a, o, "kind", cg_jv_str_nocopy(a, "data"));
        cg_jv_obj_put(a, o, "from_tensor", cg_jv_str_nocopy(a, e->from));
        cg_jv_obj_put(a, o, "to_tensor", cg_jv_str_nocopy(a, e->to));
    } else {
        cg_jv_obj_put(a, o, "kind", cg_jv_str_nocopy(a, "call"));
        cg_jv_obj_put(a, o, "from_span", cg_jv_str_nocopy(a, e->from));
        cg_jv_obj_put(a, o, "to_span", cg_jv_str_nocopy(a, e->to));
        cg_jv_obj_put(a, o, "host_duration_ns", cg_jv_u64(a, e->host_duration_ns));
    }
    if (e->label) cg_jv_obj_put(a, o, "label", cg_jv_str_nocopy(a, e->label));
    return o;
}

cg_jv *cg_host_span_cost_to_json(cg_arena *a, const cg_host_span_cost *c) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "id", cg_jv_str_nocopy(a, c->id));
    cg_jv_obj_put(a, o, "name", cg_jv_str_nocopy(a, c->name));
    cg_jv_obj_put(a, o, "scope", cg_jv_str_nocopy(a, cg_host_scope_name(c->scope)));
    cg_jv_obj_put(a, o, "host_self_time_ns", cg_jv_u64(a, c->host_self_time_ns));
    cg_jv_obj_put(a, o, "measured_overlap_self_time_ns", cg_jv_u64(a, c->measured_overlap_self_time_ns));
    cg_jv_obj_put(a, o, "full_duration_ns", cg_jv_u64(a, c->full_duration_ns));
    cg_jv_obj_put(a, o, "measured_overlap_duration_ns", cg_jv_u64(a, c->measured_overlap_duration_ns));
    return o;
}

cg_jv *cg_device_span_cost_to_json(cg_arena *a, const cg_device_span_cost *c) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "id", cg_jv_str_nocopy(a, c->id));
    cg_jv_obj_put(a, o, "name", cg_jv_str_nocopy(a, c->name));
    cg_jv_obj_put(a, o, "device", cg_jv_str_nocopy(a, c->device));
    cg_jv_obj_put(a, o, "clock_id", cg_jv_str_nocopy(a, c->clock_id));
    cg_jv_obj_put(a, o, "device_busy_ns", cg_jv_u64(a, c->device_busy_ns));
    return o;
}

cg_jv *cg_heavy_span_to_json(cg_arena *a, const cg_heavy_span *c) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "id", cg_jv_str_nocopy(a, c->id));
    cg_jv_obj_put(a, o, "name", cg_jv_str_nocopy(a, c->name));
    cg_jv_obj_put(a, o, "allocated_bytes", cg_jv_u64(a, c->allocated_bytes));
    cg_jv_obj_put(a, o, "peak_live_bytes", c->has_peak_live_bytes ? cg_jv_u64(a, c->peak_live_bytes) : cg_jv_null(a));
    return o;
}

cg_jv *cg_graph_summary_to_json(cg_arena *a, const cg_graph_summary *s) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "entrypoint", cg_jv_str_nocopy(a, s->entrypoint));
    cg_jv_obj_put(a, o, "outer_wall_time_ns", cg_jv_u64(a, s->outer_wall_time_ns));
    cg_jv *h = cg_jv_arr(a), *d = cg_jv_arr(a), *w = cg_jv_arr(a);
    for (size_t i = 0; i < s->n_slowest_host_spans; i++)
        cg_jv_arr_push(a, h, cg_host_span_cost_to_json(a, &s->slowest_host_spans[i]));
    for (size_t i = 0; i < s->n_slowest_device_spans; i++)
        cg_jv_arr_push(a, d, cg_device_span_cost_to_json(a, &s->slowest_device_spans[i]));
    for (size_t i = 0; i < s->n_heaviest_spans; i++)
        cg_jv_arr_push(a, w, cg_heavy_span_to_json(a, &s->heaviest_spans[i]));
    cg_jv_obj_put(a, o, "slowest_host_spans", h);
    cg_jv_obj_put(a, o, "slowest_device_spans", d);
    cg_jv_obj_put(a, o, "heaviest_spans", w);
    return o;
}

static cg_jv *span_item(cg_arena *a, void *ctx, size_t i) {
    cg_graph_node n;
    cg_graph_node_view(ctx, i, a, &n);
    return cg_graph_node_to_json(a, &n);
}
static cg_jv *edge_item(cg_arena *a, void *ctx, size_t i) {
    cg_graph_edge e;
    cg_graph_edge_view(ctx, i, a, &e);
    return cg_graph_edge_to_json(a, &e);
}
static cg_jv *tensor_item(cg_arena *a, void *ctx, size_t i) {
    return cg_tensor_record_json(a, &((const cg_graph *)ctx)->trace->tensors[i]);
}
static cg_jv *gradient_item(cg_arena *a, void *ctx, size_t i) {
    return cg_gradient_record_json(a, &((const cg_graph *)ctx)->trace->gradients[i]);
}

cg_jv *cg_graph_to_json_lazy(cg_arena *a, const cg_graph *g) {
    void *ctx = (void *)(uintptr_t)g; /* items only read the graph */
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "schema", cg_jv_str_nocopy(a, CG_GRAPH_SCHEMA));
    if (g->summary_only) {
        cg_jv_obj_put(a, o, "summary", cg_graph_summary_to_json(a, &g->summary));
        return o;
    }
    cg_jv_obj_put(a, o, "spans", cg_jv_lazy_arr(a, g->n_nodes, span_item, ctx));
    cg_jv_obj_put(a, o, "edges", cg_jv_lazy_arr(a, g->n_edges, edge_item, ctx));
    cg_jv_obj_put(a, o, "tensors", cg_jv_lazy_arr(a, g->trace->n_tensors, tensor_item, ctx));
    cg_jv_obj_put(a, o, "gradients", cg_jv_lazy_arr(a, g->trace->n_gradients, gradient_item, ctx));
    cg_jv_obj_put(a, o, "summary", cg_graph_summary_to_json(a, &g->summary));
    return o;
}

cg_jv *cg_graph_to_json(cg_arena *a, const cg_graph *g) { return cg_jv_materialize(a, cg_graph_to_json_lazy(a, g)); }
