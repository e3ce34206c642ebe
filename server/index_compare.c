/* index_compare.c — the comparison/campaign/series facts of one bundle
 * (srv_compare.h): cohort row and series point JSON, terminal reason, and the
 * per-path totals behind GET /compare/spans. Everything is computed once, from
 * the parsed trace at ingest (or once from the stored trace for bundles that
 * predate migration 0002), so the routes never read traces. */
#include <inttypes.h>
#include "base/alloc.h"
#include <stdlib.h>
#include <string.h>

#include "analysis/timing.h"
#include "base/sha256.h"
#include "base/hmap.h"
#include "campaign/series.h"
#include "comparison/cohort.h"
#include "srv_compare.h"
#include "srv_store.h"

/* ------------------------------------------------------------ path totals */

/* Builder: nodes deduplicated by hash; each node keeps one total per kind. */
typedef struct node_acc {
    uint64_t total[3], n[3];
    bool has[3];
} node_acc;

typedef struct ptb {
    cg_arena *a;
    srv_path_totals *pt;
    node_acc *acc;
    cg_sha256 *state; /* per span node (the first n_state nodes): SHA-256 state after its text */
    size_t cap, n_state, cap_state;
    bool leaves;      /* op and device nodes: never a parent, so no state kept */
    cg_hstr by_hash; /* 32-byte hash → node index */
} ptb;

static int kind_slot(char kind) { return kind == 's' ? 0 : kind == 'o' ? 1 : 2; }

/* The node for (parent, name), created when new. Its hash is SHA-256 of its
 * text, continued from the parent's saved hash state ("/" + name), so no text
 * is built and equal texts are one node however their names split. Only span
 * nodes are parents and they all come first, so only theirs is kept. */
static size_t node_of(ptb *b, size_t parent, const char *name) {
    cg_sha256 st, fin;
    if (parent == SIZE_MAX) {
        cg_sha256_init(&st);
    } else {
        st = b->state[parent];
        cg_sha256_update(&st, "/", 1);
    }
    cg_sha256_update(&st, name, strlen(name));
    fin = st;
    unsigned char hb[32];
    cg_sha256_final(&fin, hb);
    size_t *hit = cg_hstr_getn(&b->by_hash, (const char *)hb, 32);
    if (hit) return *hit;
    unsigned char *h = cg_arena_alloc(b->a, 32);
    memcpy(h, hb, 32);
    srv_path_totals *pt = b->pt;
    if (pt->n_nodes == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 256;
        pt->nodes = cg_xrealloc(pt->nodes, b->cap, sizeof *pt->nodes);
        b->acc = cg_xrealloc(b->acc, b->cap, sizeof *b->acc);
    }
    if (!b->leaves && b->n_state == b->cap_state) {
        b->cap_state = b->cap_state ? b->cap_state * 2 : 256;
        cg_sha256 *ns = aligned_alloc(_Alignof(cg_sha256), b->cap_state * sizeof *ns);
        if (!ns) cg_oom_exit(b->cap_state * sizeof *ns); /* aligned: no cg_x* variant */
        if (b->n_state) memcpy(ns, b->state, b->n_state * sizeof *ns);
        free(b->state);
        b->state = ns;
    }
    size_t k = pt->n_nodes++;
    pt->nodes[k] = (srv_path_node){h, parent, name};
    memset(&b->acc[k], 0, sizeof b->acc[k]);
    if (!b->leaves) b->state[b->n_state++] = st;
    cg_hstr_putn(&b->by_hash, (const char *)h, 32, k, NULL);
    return k;
}

static void add_total(ptb *b, size_t node, char kind, uint64_t ns) {
    node_acc *x = &b->acc[node];
    int s = kind_slot(kind);
    x->has[s] = true;
    uint64_t t = x->total[s];
    x->total[s] = t + ns < t || t + ns > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : t + ns;
    x->n[s]++;
}

/* The path node of every span (index aligned with t->spans), each computed once
 * from its parent's: an explicit chain instead of recursion, so a deep chain
 * costs O(depth) once. A parent that is missing (or a cycle) ends the chain. */
static size_t *span_nodes(ptb *b, const cg_trace *t) {
    size_t n = t->n_spans ? t->n_spans : 1;
    size_t *node = cg_xalloc(n, sizeof *node), *chain = cg_xalloc(n, sizeof *chain);
    unsigned char *state = cg_xzalloc(n, 1); /* 0 new, 1 on the chain, 2 done */
    for (size_t i = 0; i < t->n_spans; i++) {
        if (state[i] == 2) continue;
        size_t depth = 0, k = i;
        for (;;) { /* walk up until a done span, a root, or a cycle */
            chain[depth++] = k;
            state[k] = 1;
            const cg_span *sp = &t->spans[k];
            const cg_span *par = sp->parent_id ? cg_trace_find_span(t, sp->parent_id) : NULL;
            if (!par) break;
            k = (size_t)(par - t->spans);
            if (state[k]) break;
        }
        for (size_t q = depth; q-- > 0;) { /* top of the chain first */
            size_t x = chain[q];
            const cg_span *sp = &t->spans[x];
            const cg_span *par = sp->parent_id ? cg_trace_find_span(t, sp->parent_id) : NULL;
            size_t pi = par ? (size_t)(par - t->spans) : SIZE_MAX;
            size_t parent = pi != SIZE_MAX && state[pi] == 2 ? node[pi] : SIZE_MAX;
            node[x] = node_of(b, parent, sp->name);
            state[x] = 2;
        }
    }
    free(state);
    free(chain);
    return node;
}

void srv_path_totals_build(cg_arena *a, const cg_trace *t, srv_path_totals *out) {
    cg_arena w; /* the timing profile (its clocks name the trace's strings) */
    cg_arena_init(&w, 0);
    cg_timing_profile *tp = cg_timing_analyze(t, &w);
    srv_path_totals_build_clocks(a, t, tp->device_clocks, tp->n_device_clocks, out);
    cg_arena_free(&w);
}

void srv_path_totals_build_clocks(cg_arena *a, const cg_trace *t, const cg_device_clock_timing *clocks,
                                  size_t n_clocks, srv_path_totals *out) {
    memset(out, 0, sizeof *out);
    ptb b = {a, out, NULL, NULL, 0, 0, 0, false, {{0}, NULL, 0, 0}};
    /* sized once for the most nodes there can be (a span, an op, a clock
     * each): no array doubles (and is copied) while the tree grows */
    b.cap = t->n_spans + t->n_ops + n_clocks + 1;
    out->nodes = cg_xalloc(b.cap, sizeof *out->nodes);
    b.acc = cg_xalloc(b.cap, sizeof *b.acc);
    b.cap_state = t->n_spans + 1;
    b.state = aligned_alloc(_Alignof(cg_sha256), b.cap_state * sizeof *b.state);
    if (!b.state) cg_oom_exit(b.cap_state * sizeof *b.state); /* aligned: no cg_x* variant */
    cg_hstr_init(&b.by_hash, b.cap);
    size_t *sn = span_nodes(&b, t);
    b.leaves = true;
    for (size_t i = 0; i < t->n_spans; i++)
        if (t->spans[i].closed) add_total(&b, sn[i], 's', t->spans[i].duration_ns);
    for (size_t i = 0; i < t->n_ops; i++) {
        const cg_op *op = &t->ops[i];
        const cg_span *sp = op->span_id ? cg_trace_find_span(t, op->span_id) : NULL;
        add_total(&b, node_of(&b, sp ? sn[sp - t->spans] : SIZE_MAX, op->op_name), 'o', op->duration_ns);
    }
    free(sn);
    for (size_t i = 0; i < n_clocks; i++) {
        const cg_device_clock_timing *d = &clocks[i];
        size_t k = node_of(&b, SIZE_MAX, cg_arena_printf(a, "device:%s/%s", d->device, d->clock_id));
        add_total(&b, k, 'd', d->busy_ns);
        b.acc[k].n[2] = d->interval_count; /* one busy value per clock */
    }
    size_t nt = 0;
    for (size_t k = 0; k < out->n_nodes; k++)
        for (int s = 0; s < 3; s++) nt += b.acc[k].has[s];
    out->totals = cg_arena_zalloc(a, (nt + 1) * sizeof *out->totals);
    static const char kinds[3] = {'s', 'o', 'd'};
    for (size_t k = 0; k < out->n_nodes; k++)
        for (int s = 0; s < 3; s++)
            if (b.acc[k].has[s])
                out->totals[out->n_totals++] = (srv_path_total){kinds[s], k, b.acc[k].total[s], b.acc[k].n[s]};
    /* nodes move into the arena so the caller owns nothing */
    srv_path_node *nodes = cg_arena_alloc(a, (out->n_nodes + 1) * sizeof *nodes);
    if (out->n_nodes) memcpy(nodes, out->nodes, out->n_nodes * sizeof *nodes);
    free(out->nodes);
    out->nodes = nodes;
    free(b.acc);
    free(b.state);
    cg_hstr_free(&b.by_hash);
}

void srv_path_nodes_json(const srv_path_totals *pt, size_t from, size_t to, cg_buf *nodes) {
    char hex[65], phex[65];
    if (to > pt->n_nodes) to = pt->n_nodes;
    cg_buf_putc(nodes, '[');
    for (size_t k = from; k < to; k++) {
        const srv_path_node *nd = &pt->nodes[k];
        cg_hex(nd->hash, 32, hex);
        cg_buf_printf(nodes, "%s{\"h\":\"%s\",\"p\":", k > from ? "," : "", hex);
        if (nd->parent == SIZE_MAX) {
            cg_buf_puts(nodes, "null");
        } else {
            cg_hex(pt->nodes[nd->parent].hash, 32, phex);
            cg_buf_printf(nodes, "\"%s\"", phex);
        }
        cg_buf_puts(nodes, ",\"n\":");
        cg_json_write_str(nodes, nd->name, strlen(nd->name));
        cg_buf_putc(nodes, '}');
    }
    cg_buf_putc(nodes, ']');
}

void srv_path_rows_json(const srv_path_totals *pt, size_t from, size_t to, cg_buf *totals) {
    char hex[65];
    if (to > pt->n_totals) to = pt->n_totals;
    cg_buf_putc(totals, '[');
    for (size_t i = from; i < to; i++) {
        const srv_path_total *x = &pt->totals[i];
        cg_hex(pt->nodes[x->node].hash, 32, hex);
        cg_buf_printf(totals, "%s{\"k\":\"%s\",\"h\":\"%s\",\"t\":%" PRIu64 ",\"n\":%" PRIu64 "}", i > from ? "," : "",
                      x->kind == 's' ? "span" : x->kind == 'o' ? "op" : "device", hex, x->total, x->n);
    }
    cg_buf_putc(totals, ']');
}

void srv_path_totals_json(const srv_path_totals *pt, cg_buf *nodes, cg_buf *totals) {
    srv_path_nodes_json(pt, 0, pt->n_nodes, nodes);
    srv_path_rows_json(pt, 0, pt->n_totals, totals);
}

const char *srv_path_text(cg_arena *a, const srv_path_totals *pt, size_t k) {
    size_t len = 0, steps = 0;
    for (size_t x = k; x != SIZE_MAX && steps <= pt->n_nodes; x = pt->nodes[x].parent, steps++)
        len += strlen(pt->nodes[x].name) + (x == k ? 0 : 1);
    char *out = cg_arena_alloc(a, len + 1), *end = out + len;
    *end = 0;
    steps = 0;
    for (size_t x = k; x != SIZE_MAX && steps <= pt->n_nodes; x = pt->nodes[x].parent, steps++) {
        size_t nl = strlen(pt->nodes[x].name);
        if (x != k) *--end = '/';
        end -= nl;
        memcpy(end, pt->nodes[x].name, nl);
    }
    return out;
}

/* ------------------------------------------------------------ insert */

void srv_facts_compute(cg_arena *a, const char *id, const char *run_id, const cg_trace *t, const cg_health *h,
                       const cg_device_clock_timing *clocks, size_t n_clocks, srv_facts_text *out) {
    cg_arena w; /* the cohort row and series point behind the texts */
    cg_arena_init(&w, 0);
    cg_cohort_receipt rc = {run_id, id};
    cg_cohort_row row;
    cg_cohort_row_from_trace(&w, t, h, &rc, &row);
    cg_buf crow = CG_BUF_INIT, spt = CG_BUF_INIT;
    cg_cohort_row_write(&crow, &row);
    cg_series_point sp;
    cg_series_point_from_trace(&w, t, id, run_id, id, &sp);
    cg_json_write(&spt, cg_series_point_to_json(&w, &sp), false);
    cg_arena_free(&w);
    srv_path_totals *pt = cg_arena_zalloc(a, sizeof *pt);
    if (clocks) srv_path_totals_build_clocks(a, t, clocks, n_clocks, pt);
    else srv_path_totals_build(a, t, pt);
    out->id = cg_arena_strdup(a, id);
    out->cohort_row = cg_arena_strndup(a, crow.data, crow.len);
    out->series_point = cg_arena_strndup(a, spt.data, spt.len);
    out->terminal_reason = t->terminal.reason ? cg_arena_strdup(a, t->terminal.reason) : NULL;
    out->paths = pt;
    cg_buf_free(&crow);
    cg_buf_free(&spt);
}

/* Reads the stored trace of id (connections only for the statement and, pg
 * store, the blob), then computes its facts with no connection held. *tp: the
 * trace, which the facts' path names point into (the caller frees it). */
static int backfill_compute(srv_server *s, cg_arena *a, const char *id, srv_facts_text *ft, cg_trace **tp,
                            cg_error *err) {
    PGresult *x = srv_store_trace_of(s->pool, id, err);
    if (!x) return -1;
    if (PQntuples(x) != 1) {
        PQclear(x);
        return cg_err_set(err, CG_EIO, "bundle %s has no stored trace.jsonl", id);
    }
    const char *run_id = cg_arena_strdup(a, PQgetvalue(x, 0, 0));
    char sha[65];
    snprintf(sha, sizeof sha, "%s", PQgetvalue(x, 0, 1));
    PQclear(x);
    uint64_t size;
    bool missing, store_error;
    int fd = srv_store_blob_open(s, sha, &size, &missing, err);
    cg_trace_limits tl;
    cg_trace_limits_default(&tl);
    cg_trace *t = fd < 0 ? NULL : srv_blob_trace_fd(&s->blobs, fd, sha, (uint64_t)16 << 30, &tl, &store_error, err);
    if (!t) return -1;
    cg_health *h = cg_health_analyze(t);
    srv_facts_compute(a, id, run_id, t, h, NULL, 0, ft);
    cg_health_free(h);
    *tp = t;
    return 0;
}

int srv_facts_backfill(srv_server *s, const char *id, cg_error *err) {
    cg_arena a;
    cg_arena_init(&a, 0);
    srv_facts_text ft;
    cg_trace *t = NULL;
    int rc = backfill_compute(s, &a, id, &ft, &t, err) < 0 ? -1 : srv_store_facts_put_tx(s->pool, &ft, err);
    cg_trace_free(t);
    if (rc == 0) srv_log("info", "comparison facts backfilled", "id", id, NULL);
    cg_arena_free(&a);
    return rc;
}

const char *srv_id_array(cg_arena *a, const char *const *ids, size_t n) {
    cg_buf b = CG_BUF_INIT;
    cg_buf_putc(&b, '{');
    for (size_t i = 0; i < n; i++) cg_buf_printf(&b, "%s\"%s\"", i ? "," : "", ids[i]);
    cg_buf_putc(&b, '}');
    const char *s = cg_arena_strndup(a, b.data, b.len);
    cg_buf_free(&b);
    return s;
}
