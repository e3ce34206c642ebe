/* graph.c — execution graph construction (graph/5, spec §6). */
#include "analysis/graph.h"
#include "base/alloc.h"
#include "base/num.h"

#include <stdlib.h>
#include <string.h>

#define NONE CG_GRAPH_NONE


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

typedef struct sref {
    const char *s;
    size_t idx;
} sref;

static int cmp_sref(const void *pa, const void *pb) {
    const sref *a = pa, *b = pb;
    int c = strcmp(a->s, b->s);
    if (c) return c;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int cmp_strp(const void *pa, const void *pb) {
    return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

/* qsort, skipped when the input is already in order (records usually come in
 * id order; the comparators are total orders or compare string content only,
 * so the result is the same either way) */
static void sort_sref(sref *v, size_t n) {
    for (size_t i = 1; i < n; i++)
        if (cmp_sref(&v[i - 1], &v[i]) > 0) {
            qsort(v, n, sizeof *v, cmp_sref);
            return;
        }
}

static void sort_strp(const char **v, size_t n) {
    for (size_t i = 1; i < n; i++)
        if (cmp_strp(&v[i - 1], &v[i]) > 0) {
            qsort(v, n, sizeof *v, cmp_strp);
            return;
        }
}

/* index of s in the sorted unique array, or NONE */
static size_t find_sorted(const char **arr, size_t n, const char *s) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(arr[mid], s);
        if (c == 0) return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NONE;
}

static size_t span_index(const cg_trace *t, const char *id) {
    const cg_span *s = id ? cg_trace_find_span(t, id) : NULL;
    return s ? (size_t)(s - t->spans) : NONE;
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

/* ---- edges ---- */

/* Upper bound of the graph's edges: trace edges, span and op call edges, op data edges. */
static size_t edge_capacity(const cg_trace *t) {
    size_t cap = t->n_edges + t->n_spans + t->n_ops;
    for (size_t i = 0; i < t->n_ops; i++) cap += t->ops[i].inputs.n + (t->ops[i].output ? 1 : 0);
    return cap;
}

static int cmp_edge(const void *pa, const void *pb) {
    const cg_graph_edge *a = pa, *b = pb;
    int c = strcmp(a->from, b->from);
    if (!c) c = strcmp(a->to, b->to);
    if (c) return c;
    if (a->is_data != b->is_data) return a->is_data ? 1 : -1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
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

static cg_interval node_interval(const cg_graph_node *n) {
    return cg_interval_of(n->start_ns, n->host_total_time_ns);
}

/* ---- memory ---- */

/* node_memory_metrics onto span nodes (nodes[0..n_spans)) and op nodes
 * (nodes[n_spans..)): unknown figures stay absent. */
static void apply_memory_metrics(const cg_trace *t, const cg_memory_profile *memory, cg_graph_node *nodes,
                                 cg_arena *a) {
    size_t ns = t->n_spans;
    cg_span_memory *sm = cg_memory_span_metrics(t, memory, a);
    for (size_t i = 0; sm && i < ns; i++) {
        cg_graph_node *n = &nodes[i];
        n->has_allocated_bytes = sm[i].has_allocated;
        n->allocated_bytes = sm[i].allocated_bytes;
        n->has_peak_live_bytes = n->has_residual_bytes = sm[i].has_window;
        n->peak_live_bytes = sm[i].peak_live_bytes;
        n->residual_bytes = sm[i].residual_bytes;
    }
    cg_op_memory *om = cg_memory_op_metrics(t, memory, a);
    for (size_t i = 0; om && i < t->n_ops; i++) {
        nodes[ns + i].has_allocated_bytes = om[i].has_allocated;
        nodes[ns + i].allocated_bytes = om[i].allocated_bytes;
    }
}

/* ---- build ---- */

cg_graph *cg_graph_build(const cg_trace *t, const cg_health *h, cg_arena *a, cg_error *err) {
    return cg_graph_build_with(t, h, NULL, NULL, a, err);
}

cg_graph *cg_graph_build_with(const cg_trace *t, const cg_health *h, const cg_timing_profile *timing,
                              const cg_memory_profile *memory, cg_arena *a, cg_error *err) {
    if (check_usable(h, err) != 0) return NULL;
    if (!timing) timing = cg_timing_analyze(t, a);
    if (!memory) memory = cg_memory_analyze(t, a);

    size_t ns = t->n_spans, no = t->n_ops;

    /* distinct tensor ids: tensor events ∪ op inputs ∪ op outputs */
    size_t n_tref = t->n_tensors;
    for (size_t i = 0; i < no; i++) n_tref += t->ops[i].inputs.n + (t->ops[i].output ? 1 : 0);
    const char **tids = cg_xalloc(n_tref, sizeof *tids);
    size_t nt = 0;
    for (size_t i = 0; i < t->n_tensors; i++) tids[nt++] = t->tensors[i].tensor_id;
    for (size_t i = 0; i < no; i++) {
        for (size_t k = 0; k < t->ops[i].inputs.n; k++) tids[nt++] = t->ops[i].inputs.items[k];
        if (t->ops[i].output) tids[nt++] = t->ops[i].output;
    }
    sort_strp(tids, nt);
    size_t nu = 0;
    for (size_t i = 0; i < nt; i++)
        if (nu == 0 || strcmp(tids[nu - 1], tids[i])) tids[nu++] = tids[i];

    cg_graph *g = cg_arena_zalloc(a, sizeof *g);
    g->trace = t;
    g->timing = timing;
    g->memory = memory;
    g->n_span_nodes = ns;
    g->n_op_nodes = no;
    g->n_tensor_nodes = nu;
    g->n_nodes = ns + no + nu;
    g->nodes = cg_arena_zalloc(a, (g->n_nodes ? g->n_nodes : 1) * sizeof *g->nodes);
    cg_graph_node *nodes = g->nodes;

    /* span tree */
    size_t *par = cg_xalloc((ns ? ns : 1), sizeof *par);
    size_t *nch = cg_xzalloc(ns + 1, sizeof *nch);
    uint64_t *op_sum = cg_xzalloc(ns, sizeof *op_sum);
    for (size_t i = 0; i < ns; i++) {
        par[i] = span_index(t, t->spans[i].parent_id);
        if (par[i] != NONE) nch[par[i] + 1]++;
    }
    for (size_t i = 0; i < ns; i++) nch[i + 1] += nch[i];
    size_t *child = cg_xalloc((ns ? ns : 1), sizeof *child), *fill = cg_xalloc((ns ? ns : 1), sizeof *fill);
    memcpy(fill, nch, ns * sizeof *fill);
    for (size_t i = 0; i < ns; i++)
        if (par[i] != NONE) child[fill[par[i]]++] = i;
    size_t *op_span = cg_xalloc((no ? no : 1), sizeof *op_span);
    for (size_t i = 0; i < no; i++) {
        op_span[i] = span_index(t, t->ops[i].span_id);
        if (op_span[i] != NONE) op_sum[op_span[i]] = cg_sat_add_u64(op_sum[op_span[i]], t->ops[i].duration_ns);
    }
    size_t *order = cg_xalloc((ns ? ns : 1), sizeof *order), *stack = cg_xalloc((ns ? ns : 1), sizeof *stack);
    size_t *tin = cg_xalloc((ns ? ns : 1), sizeof *tin), *tout = cg_xalloc((ns ? ns : 1), sizeof *tout);
    for (size_t i = 0; i < ns; i++) tin[i] = tout[i] = NONE;
    size_t reached = 0;
    for (size_t r = 0; r < ns; r++) {
        if (par[r] != NONE) continue;
        size_t sp = 0;
        stack[sp++] = r;
        while (sp) {
            size_t v = stack[--sp];
            tin[v] = reached;
            order[reached++] = v;
            for (size_t k = nch[v + 1]; k > nch[v]; k--) stack[sp++] = child[k - 1];
        }
    }

    /* span nodes */
    for (size_t i = 0; i < ns; i++) {
        const cg_span *s = &t->spans[i];
        cg_graph_node *n = &nodes[i];
        n->id = s->id;
        n->parent_id = s->parent_id;
        n->name = s->name;
        n->kind = !s->parent_id ? CG_NODE_ROOT
                  : s->kind == CG_SPAN_OP ? CG_NODE_OP
                  : s->kind == CG_SPAN_MODULE ? CG_NODE_MODULE
                                              : CG_NODE_FUNCTION;
        n->start_ns = s->start_ns;
        n->parent = par[i];
        size_t cnt = 0;
        const cg_device_span_timing *dt = cg_timing_find_span(timing, s->id, &cnt);
        if (cnt) {
            cg_node_device_timing *d = cg_arena_alloc(a, cnt * sizeof *d);
            for (size_t k = 0; k < cnt; k++) {
                d[k].device = dt[k].device;
                d[k].clock_id = dt[k].clock_id;
                d[k].busy_ns = dt[k].busy_ns;
            }
            n->device_timings = d;
            n->n_device_timings = (uint32_t)cnt;
        }
        n->host_total_time_ns = s->duration_ns > 0 ? s->duration_ns : op_sum[i];
    }
    /* effective totals of zero-duration spans, bottom-up (reverse preorder) */
    for (size_t k = reached; k > 0; k--) {
        size_t v = order[k - 1];
        if (t->spans[v].duration_ns > 0) continue;
        uint64_t tot = op_sum[v];
        for (size_t c = nch[v]; c < nch[v + 1]; c++) tot = cg_sat_add_u64(tot, nodes[child[c]].host_total_time_ns);
        nodes[v].host_total_time_ns = tot;
    }
    /* subtree extents */
    for (size_t k = reached; k > 0; k--) {
        size_t v = order[k - 1];
        size_t size = 1;
        for (size_t c = nch[v]; c < nch[v + 1]; c++) size += tout[child[c]] - tin[child[c]];
        tout[v] = tin[v] + size;
    }

    /* op nodes */
    size_t *op_counter = cg_xzalloc(ns, sizeof *op_counter);
    for (size_t i = 0; i < no; i++) {
        const cg_op *o = &t->ops[i];
        cg_graph_node *n = &nodes[ns + i];
        size_t k = op_span[i] != NONE ? op_counter[op_span[i]]++ : i;
        n->id = cg_arena_printf(a, "%s/op/%zu", o->span_id, k);
        n->parent_id = o->span_id;
        n->parent = op_span[i];
        n->name = o->op_name;
        n->kind = CG_NODE_OP;
        n->start_ns = o->timestamp_ns;
        n->host_self_time_ns = n->host_total_time_ns = o->duration_ns;
        if (o->shape.n > 0) n->shape = &o->shape;
        n->dtype = o->dtype;
        n->device = o->device;
        n->has_dense_bytes = o->has_output_dense_bytes;
        n->dense_bytes = o->output_dense_bytes;
    }

    /* tensor nodes: the first tensor event of the id carries the metadata (none: bare node) */
    sref *tev = cg_xalloc((t->n_tensors ? t->n_tensors : 1), sizeof *tev);
    for (size_t i = 0; i < t->n_tensors; i++) tev[i] = (sref){t->tensors[i].tensor_id, i};
    sort_sref(tev, t->n_tensors);
    for (size_t u = 0, p = 0; u < nu; u++) {
        cg_graph_node *n = &nodes[ns + no + u];
        n->id = cg_arena_printf(a, "tensor/%s", tids[u]);
        n->name = tids[u];
        n->kind = CG_NODE_TENSOR;
        n->parent = NONE;
        while (p < t->n_tensors && strcmp(tev[p].s, tids[u]) < 0) p++;
        if (p < t->n_tensors && strcmp(tev[p].s, tids[u]) == 0) {
            const cg_tensor *te = &t->tensors[tev[p].idx];
            n->parent_id = te->span_id;
            n->parent = span_index(t, te->span_id);
            if (te->label) n->name = te->label;
            if (te->shape.n > 0) n->shape = &te->shape;
            n->dtype = te->dtype;
            n->device = te->device;
            n->has_dense_bytes = te->has_dense_bytes;
            n->dense_bytes = te->dense_bytes;
        }
    }

    /* duplicate node ids */
    int rc = 0;
    {
        sref *ids = cg_xalloc((g->n_nodes ? g->n_nodes : 1), sizeof *ids);
        for (size_t i = 0; i < g->n_nodes; i++) ids[i] = (sref){nodes[i].id, i};
        sort_sref(ids, g->n_nodes);
        size_t *by_id = cg_arena_alloc(a, (g->n_nodes ? g->n_nodes : 1) * sizeof *by_id);
        size_t dup = NONE; /* node order position of the first repeated id */
        for (size_t i = 0; i < g->n_nodes; i++) {
            by_id[i] = ids[i].idx;
            bool repeat = i > 0 && strcmp(ids[i - 1].s, ids[i].s) == 0;
            bool second = repeat && (i < 2 || strcmp(ids[i - 2].s, ids[i].s) != 0);
            if (second && (dup == NONE || ids[i].idx < dup)) dup = ids[i].idx;
        }
        if (dup != NONE) rc = duplicate_node_error(err, nodes[dup].id);
        g->node_by_id = by_id;
        free(ids);
    }

    if (!rc) apply_memory_metrics(t, memory, nodes, a);

    /* self time: children (spans and ops) by parent, CSR over span nodes */
    size_t *cfirst = cg_xzalloc(ns + 1, sizeof *cfirst);
    size_t *clist = cg_xalloc((ns + no ? ns + no : 1), sizeof *clist);
    cg_interval *ivs = cg_xalloc((ns + no ? ns + no : 1), sizeof *ivs);
    for (size_t i = 0; i < ns + no; i++)
        if (nodes[i].parent != NONE) cfirst[nodes[i].parent + 1]++;
    for (size_t i = 0; i < ns; i++) cfirst[i + 1] += cfirst[i];
    size_t *cfill = cg_xalloc((ns ? ns : 1), sizeof *cfill);
    memcpy(cfill, cfirst, ns * sizeof *cfill);
    for (size_t i = 0; i < ns + no; i++)
        if (nodes[i].parent != NONE) clist[cfill[nodes[i].parent]++] = i;
    for (size_t v = 0; !rc && v < ns; v++) {
        size_t m = 0;
        for (size_t c = cfirst[v]; c < cfirst[v + 1]; c++) ivs[m++] = node_interval(&nodes[clist[c]]);
        uint64_t u = cg_union_length(ivs, m);
        uint64_t tot = nodes[v].host_total_time_ns;
        nodes[v].host_self_time_ns = tot > u ? tot - u : 0;
    }

    /* edges (their construction order is kept in 32 bits) */
    if (!rc && edge_capacity(t) > UINT32_MAX)
        rc = cg_err_set(err, CG_ELIMIT, "execution graph would exceed %u edges", (unsigned)UINT32_MAX);
    if (!rc) {
        size_t cap = edge_capacity(t);
        /* built in place, sorted, then deduplicated in place (no scratch copy) */
        cg_graph_edge *es = cg_arena_alloc(a, (cap ? cap : 1) * sizeof *es);
        size_t ne = 0;
#define TENSOR_NODE(tid)                                                                       \
    (find_sorted(tids, nu, (tid)) != NONE ? nodes[ns + no + find_sorted(tids, nu, (tid))].id \
                                          : cg_arena_printf(a, "tensor/%s", (tid)))
        for (size_t i = 0; i < t->n_edges; i++) {
            const cg_edge *e = &t->edges[i];
            cg_graph_edge *r = &es[ne];
            memset(r, 0, sizeof *r);
            r->seq = (uint32_t)ne++;
            r->is_data = e->is_data;
            if (e->is_data) {
                r->from = TENSOR_NODE(e->from);
                r->to = TENSOR_NODE(e->to);
            } else {
                r->from = e->from;
                r->to = e->to;
                r->host_duration_ns = e->host_duration_ns;
            }
        }
        for (size_t i = 0; i < ns; i++) {
            if (nodes[i].kind == CG_NODE_OP || nodes[i].parent == NONE) continue;
            cg_graph_edge *r = &es[ne];
            memset(r, 0, sizeof *r);
            r->seq = (uint32_t)ne++;
            r->from = nodes[nodes[i].parent].id;
            r->to = nodes[i].id;
            r->host_duration_ns = nodes[i].host_total_time_ns;
        }
        for (size_t i = 0; i < no; i++) {
            const cg_op *o = &t->ops[i];
            const cg_graph_node *on = &nodes[ns + i];
            if (on->parent != NONE) {
                cg_graph_edge *r = &es[ne];
                memset(r, 0, sizeof *r);
                r->seq = (uint32_t)ne++;
                r->from = nodes[on->parent].id;
                r->to = on->id;
                r->host_duration_ns = o->duration_ns;
                r->label = o->op_name;
            }
            for (size_t k = 0; k < o->inputs.n; k++) {
                cg_graph_edge *r = &es[ne];
                memset(r, 0, sizeof *r);
                r->seq = (uint32_t)ne++;
                r->is_data = true;
                r->from = TENSOR_NODE(o->inputs.items[k]);
                r->to = on->id;
                r->label = "input";
            }
            if (o->output) {
                cg_graph_edge *r = &es[ne];
                memset(r, 0, sizeof *r);
                r->seq = (uint32_t)ne++;
                r->is_data = true;
                r->from = on->id;
                r->to = TENSOR_NODE(o->output);
                r->label = "output";
            }
        }
#undef TENSOR_NODE
        qsort(es, ne, sizeof *es, cmp_edge);
        g->edges = es;
        /* trace edges all stay (duplicates included); a synthesized edge is dropped
         * when an earlier edge (trace or synthesized) has its (from, to, kind) */
        for (size_t i = 0; i < ne; i++) {
            bool synthesized = es[i].seq >= t->n_edges;
            if (synthesized && g->n_edges > 0) {
                const cg_graph_edge *p = &g->edges[g->n_edges - 1];
                if (p->is_data == es[i].is_data && !strcmp(p->from, es[i].from) && !strcmp(p->to, es[i].to))
                    continue;
            }
            g->edges[g->n_edges++] = es[i];
        }
    }

    /* summary */
    cg_graph_summary *sum = &g->summary;
    sum->entrypoint = t->run.entrypoint;
    size_t meas = NONE;
    for (size_t i = 0; i < ns && meas == NONE; i++)
        if (t->spans[i].measured) meas = i;
    if (!rc && meas != NONE && tin[meas] != NONE) {
        sum->has_measured = true;
        const cg_graph_node *mn = &nodes[meas];
        sum->outer_wall_time_ns = mn->host_total_time_ns;
        cg_interval mw = node_interval(mn);
        bool *ancestor = cg_xzalloc(ns, sizeof *ancestor);
        size_t steps = 0;
        for (size_t v = par[meas]; v != NONE && steps < ns; v = par[v], steps++) ancestor[v] = true;
        for (size_t i = 0; i < ns + no; i++) {
            size_t sv = i < ns ? i : nodes[i].parent;
            nodes[i].in_measured_subtree =
                sv != NONE && tin[sv] != NONE && tin[sv] >= tin[meas] && tin[sv] < tout[meas];
        }
        cg_host_span_cost *hc = cg_xalloc((ns ? ns : 1), sizeof *hc);
        size_t nh = 0;
        dref *dc = NULL;
        size_t nd = 0, dcap = 0;
        href *hv = cg_xalloc((ns ? ns : 1), sizeof *hv);
        size_t nhv = 0;
        for (size_t i = 0; i < ns; i++) {
            const cg_graph_node *n = &nodes[i];
            if (ancestor[i]) continue;
            bool op_kind = n->kind == CG_NODE_OP; /* span_kind op: no host / heaviest row */
            cg_interval iv = node_interval(n);
            uint64_t lo = iv.start_ns > mw.start_ns ? iv.start_ns : mw.start_ns;
            uint64_t hi = iv.end_ns < mw.end_ns ? iv.end_ns : mw.end_ns;
            uint64_t overlap = hi > lo ? hi - lo : 0;
            if (overlap > 0 && !op_kind) {
                size_t m = 0;
                for (size_t c = cfirst[i]; c < cfirst[i + 1]; c++) {
                    cg_interval ci = node_interval(&nodes[clist[c]]);
                    uint64_t cl = ci.start_ns > mw.start_ns ? ci.start_ns : mw.start_ns;
                    uint64_t ch = ci.end_ns < mw.end_ns ? ci.end_ns : mw.end_ns;
                    if (ch > cl) ivs[m++] = (cg_interval){cl, ch};
                }
                uint64_t u = cg_union_length(ivs, m);
                cg_host_span_cost *c = &hc[nh++];
                c->id = n->id;
                c->name = n->name;
                c->scope = n->in_measured_subtree ? CG_HOST_SCOPE_MEASURED_SUBTREE : CG_HOST_SCOPE_CONCURRENT_OVERLAP;
                c->host_self_time_ns = n->host_self_time_ns;
                c->measured_overlap_self_time_ns = overlap > u ? overlap - u : 0;
                c->full_duration_ns = n->host_total_time_ns;
                c->measured_overlap_duration_ns = overlap;
            }
            if (!n->in_measured_subtree) continue;
            for (size_t k = 0; k < n->n_device_timings; k++) {
                if (nd == dcap) {
                    dcap = dcap ? 2 * dcap : 16;
                    dref *grown = cg_xrealloc(dc, dcap, sizeof *dc);
                    dc = grown;
                }
                dc[nd].c = (cg_device_span_cost){n->id, n->name, n->device_timings[k].device,
                                                 n->device_timings[k].clock_id, n->device_timings[k].busy_ns};
                dc[nd].seq = nd;
                nd++;
            }
            if (n->has_allocated_bytes && !op_kind) {
                hv[nhv].c = (cg_heavy_span){n->id, n->name, n->allocated_bytes, n->has_peak_live_bytes,
                                            n->peak_live_bytes};
                hv[nhv].seq = nhv;
                nhv++;
            }
        }
        if (nh > 1) qsort(hc, nh, sizeof *hc, cmp_host_cost);
        for (size_t i = 0; i < nh && i < CG_GRAPH_TOP; i++) sum->slowest_host_spans[sum->n_slowest_host_spans++] = hc[i];
        if (nd) qsort(dc, nd, sizeof *dc, cmp_dref);
        for (size_t i = 0; i < nd && i < CG_GRAPH_TOP; i++)
            sum->slowest_device_spans[sum->n_slowest_device_spans++] = dc[i].c;
        if (nhv > 1) qsort(hv, nhv, sizeof *hv, cmp_href);
        for (size_t i = 0; i < nhv && i < CG_GRAPH_TOP; i++) sum->heaviest_spans[sum->n_heaviest_spans++] = hv[i].c;
        free(hc);
        free(dc);
        free(hv);
        free(ancestor);
    }

    free(cfill);
    free(ivs);
    free(clist);
    free(cfirst);
    free(tev);
    free(op_counter);
    free(tout);
    free(tin);
    free(stack);
    free(order);
    free(op_span);
    free(fill);
    free(child);
    free(op_sum);
    free(nch);
    free(par);
    free(tids);
    return rc ? NULL : g;
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

const cg_graph_node *cg_graph_find_node(const cg_graph *g, const char *id) {
    size_t lo = 0, hi = g ? g->n_nodes : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(g->nodes[g->node_by_id[mid]].id, id);
        if (c == 0) return &g->nodes[g->node_by_id[mid]];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
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
    return cg_graph_node_to_json(a, &((const cg_graph *)ctx)->nodes[i]);
}
static cg_jv *edge_item(cg_arena *a, void *ctx, size_t i) {
    return cg_graph_edge_to_json(a, &((const cg_graph *)ctx)->edges[i]);
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
    cg_jv_obj_put(a, o, "spans", cg_jv_lazy_arr(a, g->n_nodes, span_item, ctx));
    cg_jv_obj_put(a, o, "edges", cg_jv_lazy_arr(a, g->n_edges, edge_item, ctx));
    cg_jv_obj_put(a, o, "tensors", cg_jv_lazy_arr(a, g->trace->n_tensors, tensor_item, ctx));
    cg_jv_obj_put(a, o, "gradients", cg_jv_lazy_arr(a, g->trace->n_gradients, gradient_item, ctx));
    cg_jv_obj_put(a, o, "summary", cg_graph_summary_to_json(a, &g->summary));
    return o;
}

cg_jv *cg_graph_to_json(cg_arena *a, const cg_graph *g) { return cg_jv_materialize(a, cg_graph_to_json_lazy(a, g)); }
