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

/* Builder: nodes deduplicated by hash (a table of node ids keyed by the hash's
 * first 8 bytes); each node has at most one total per kind, found through
 * slot[node][kind]. Arrays are sized once for the most there can be (a span,
 * an op, a clock each: no array doubles while the tree grows); pages never
 * written are never resident. */
typedef struct ptb {
    srv_path_totals *pt;
    uint32_t (*slot)[3];  /* per node: index of its total of each kind, NO_TOTAL when none */
    cg_sha256 *state;     /* per span node (the first n_state nodes): SHA-256 state after its text */
    size_t n_state;
    bool leaves;          /* op and device nodes: never a parent, so no state kept */
    cg_hmap by_hash;
} ptb;

#define NO_TOTAL UINT32_MAX

static int kind_slot(char kind) { return kind == 's' ? 0 : kind == 'o' ? 1 : 2; }

static uint64_t hash_key(const unsigned char h[32]) {
    uint64_t k;
    memcpy(&k, h, sizeof k);
    return k;
}

static bool hash_eq(const void *ctx, uint32_t id, const void *key) {
    return memcmp(((const srv_path_totals *)ctx)->nodes[id].hash, key, 32) == 0;
}

/* The node for (parent, name), created when new. Its hash is SHA-256 of its
 * text, continued from the parent's saved hash state ("/" + name), so no text
 * is built and equal texts are one node however their names split. Only span
 * nodes are parents and they all come first, so only theirs is kept. */
static uint32_t node_of(ptb *b, uint32_t parent, const char *name) {
    cg_sha256 st, fin;
    if (parent == SRV_PATH_ROOT) {
        cg_sha256_init(&st);
    } else {
        st = b->state[parent];
        cg_sha256_update(&st, "/", 1);
    }
    cg_sha256_update(&st, name, strlen(name));
    fin = st;
    unsigned char hb[32];
    cg_sha256_final(&fin, hb);
    srv_path_totals *pt = b->pt;
    size_t at = 0;
    uint64_t hk = hash_key(hb);
    uint32_t hit = cg_hmap_find(&b->by_hash, hk, hash_eq, pt, hb, &at);
    if (hit != CG_HMAP_NONE) return hit;
    uint32_t k = (uint32_t)pt->n_nodes++;
    srv_path_node *nd = &pt->nodes[k];
    memcpy(nd->hash, hb, 32);
    nd->name = name;
    nd->parent = parent;
    b->slot[k][0] = b->slot[k][1] = b->slot[k][2] = NO_TOTAL;
    if (!b->leaves) b->state[b->n_state++] = st;
    cg_hmap_put_at(&b->by_hash, at, hk, k);
    return k;
}

static void add_total(ptb *b, uint32_t node, char kind, uint64_t ns) {
    srv_path_totals *pt = b->pt;
    uint32_t *ix = &b->slot[node][kind_slot(kind)];
    if (*ix == NO_TOTAL) {
        *ix = (uint32_t)pt->n_totals++;
        pt->totals[*ix] = (srv_path_total){0, 0, node, kind};
    }
    srv_path_total *x = &pt->totals[*ix];
    uint64_t t = x->total;
    x->total = t + ns < t || t + ns > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : t + ns;
    x->n++;
}

/* The path node of every span (index aligned with t->spans), each computed once
 * from its parent's: an explicit chain instead of recursion, so a deep chain
 * costs O(depth) once. A parent that is missing (or a cycle) ends the chain. */
static uint32_t *span_nodes(ptb *b, const cg_trace *t) {
    size_t n = t->n_spans ? t->n_spans : 1;
    uint32_t *node = cg_xalloc(n, sizeof *node), *chain = cg_xalloc(n, sizeof *chain);
    unsigned char *state = cg_xzalloc(n, 1); /* 0 new, 1 on the chain, 2 done */
    for (size_t i = 0; i < t->n_spans; i++) {
        if (state[i] == 2) continue;
        size_t depth = 0, k = i;
        for (;;) { /* walk up until a done span, a root, or a cycle */
            chain[depth++] = (uint32_t)k;
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
            uint32_t parent = pi != SIZE_MAX && state[pi] == 2 ? node[pi] : SRV_PATH_ROOT;
            node[x] = node_of(b, parent, sp->name);
            state[x] = 2;
        }
    }
    cg_free(state);
    cg_free(chain);
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
    size_t most = t->n_spans + t->n_ops + n_clocks + 1;
    if (most >= SRV_PATH_ROOT) cg_oom_exit(most); /* node ids are 32-bit (the trace reader's record limit is lower) */
    out->nodes = cg_arena_alloc(a, most * sizeof *out->nodes);
    out->totals = cg_arena_alloc(a, most * sizeof *out->totals);
    ptb b = {out, cg_xalloc(most, sizeof *b.slot), NULL, 0, false, {0}};
    b.state = aligned_alloc(_Alignof(cg_sha256), (t->n_spans + 1) * sizeof *b.state);
    if (!b.state) cg_oom_exit((t->n_spans + 1) * sizeof *b.state); /* aligned: no cg_x* variant */
    cg_hmap_init(&b.by_hash, most);
    uint32_t *sn = span_nodes(&b, t);
    b.leaves = true;
    for (size_t i = 0; i < t->n_spans; i++)
        if (t->spans[i].closed) add_total(&b, sn[i], 's', t->spans[i].duration_ns);
    for (size_t i = 0; i < t->n_ops; i++) {
        const cg_op *op = &t->ops[i];
        const cg_span *sp = op->span_id ? cg_trace_find_span(t, op->span_id) : NULL;
        add_total(&b, node_of(&b, sp ? sn[sp - t->spans] : SRV_PATH_ROOT, op->op_name), 'o', op->duration_ns);
    }
    cg_free(sn);
    cg_free(b.state);
    for (size_t i = 0; i < n_clocks; i++) {
        const cg_device_clock_timing *d = &clocks[i];
        uint32_t k = node_of(&b, SRV_PATH_ROOT, cg_arena_printf(a, "device:%s/%s", d->device, d->clock_id));
        add_total(&b, k, 'd', d->busy_ns);
        out->totals[b.slot[k][2]].n = d->interval_count; /* one busy value per clock */
    }
    cg_free(b.slot);
    cg_hmap_free(&b.by_hash);
}

void srv_path_nodes_json(const srv_path_totals *pt, size_t from, size_t to, cg_buf *nodes) {
    char hex[65], phex[65];
    if (to > pt->n_nodes) to = pt->n_nodes;
    cg_buf_putc(nodes, '[');
    for (size_t k = from; k < to; k++) {
        const srv_path_node *nd = &pt->nodes[k];
        cg_hex(nd->hash, 32, hex);
        cg_buf_printf(nodes, "%s{\"h\":\"%s\",\"p\":", k > from ? "," : "", hex);
        if (nd->parent == SRV_PATH_ROOT) {
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
    for (size_t x = k; x != SRV_PATH_ROOT && steps <= pt->n_nodes; x = pt->nodes[x].parent, steps++)
        len += strlen(pt->nodes[x].name) + (x == k ? 0 : 1);
    char *out = cg_arena_alloc(a, len + 1), *end = out + len;
    *end = 0;
    steps = 0;
    for (size_t x = k; x != SRV_PATH_ROOT && steps <= pt->n_nodes; x = pt->nodes[x].parent, steps++) {
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
