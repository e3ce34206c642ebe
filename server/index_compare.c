/* index_compare.c — the comparison/campaign/series facts of one bundle
 * (srv_compare.h): cohort row and series point JSON, terminal reason, and the
 * per-path totals behind GET /compare/spans. Everything is computed once, from
 * the parsed trace at ingest (or once from the stored trace for bundles that
 * predate migration 0002), so the routes never read traces. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/timing.h"
#include "campaign/series.h"
#include "comparison/cohort.h"
#include "srv_compare.h"

/* ------------------------------------------------------------ path totals */

typedef struct tot {
    char kind; /* 's' span, 'o' op, 'd' device */
    const char *path;
    uint64_t total, n;
} tot;

typedef struct totmap {
    tot *slots; /* path == NULL: empty */
    size_t cap, used;
} totmap;

static uint64_t hash(char kind, const char *s) {
    uint64_t h = 1469598103934665603ull ^ (unsigned char)kind;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void map_grow(totmap *m) {
    size_t ncap = m->cap ? m->cap * 2 : 256;
    tot *ns = calloc(ncap, sizeof *ns);
    if (!ns) abort();
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].path) continue;
        size_t j = hash(m->slots[i].kind, m->slots[i].path) & (ncap - 1);
        while (ns[j].path) j = (j + 1) & (ncap - 1);
        ns[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
}

/* Adds one occurrence; path must outlive the map (arena). */
static tot *map_add(totmap *m, char kind, const char *path, uint64_t ns) {
    if ((m->used + 1) * 2 > m->cap) map_grow(m);
    size_t j = hash(kind, path) & (m->cap - 1);
    while (m->slots[j].path && !(m->slots[j].kind == kind && strcmp(m->slots[j].path, path) == 0))
        j = (j + 1) & (m->cap - 1);
    tot *t = &m->slots[j];
    if (!t->path) {
        t->kind = kind;
        t->path = path;
        m->used++;
    }
    t->total = t->total + ns < t->total || t->total + ns > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : t->total + ns;
    t->n++;
    return t;
}

/* Name path of every span ("root/child/…"), memoized by span index. A parent
 * that is missing (or a cycle) ends the chain there. */
static const char **span_paths(cg_arena *a, const cg_trace *t) {
    size_t n = t->n_spans ? t->n_spans : 1;
    const char **paths = cg_arena_zalloc(a, n * sizeof *paths);
    size_t *chain = malloc(n * sizeof *chain);
    unsigned char *on_chain = calloc(n, 1);
    if (!chain || !on_chain) abort();
    for (size_t i = 0; i < t->n_spans; i++) {
        if (paths[i]) continue;
        size_t depth = 0, k = i;
        for (;;) { /* walk up until a span with a path, a root, or a cycle */
            chain[depth++] = k;
            on_chain[k] = 1;
            const cg_span *sp = &t->spans[k];
            const cg_span *par = sp->parent_id ? cg_trace_find_span(t, sp->parent_id) : NULL;
            if (!par) break;
            k = (size_t)(par - t->spans);
            if (paths[k] || on_chain[k]) break;
        }
        /* top of the chain first: its parent (if any, and not on the chain) has a path */
        for (size_t q = depth; q-- > 0;) {
            size_t x = chain[q];
            const cg_span *sp = &t->spans[x];
            const cg_span *par = sp->parent_id ? cg_trace_find_span(t, sp->parent_id) : NULL;
            const char *pp = par ? paths[par - t->spans] : NULL;
            paths[x] = pp ? cg_arena_printf(a, "%s/%s", pp, sp->name) : sp->name;
        }
        for (size_t q = 0; q < depth; q++) on_chain[chain[q]] = 0;
    }
    free(on_chain);
    free(chain);
    return paths;
}

void srv_span_totals_json(cg_arena *a, const cg_trace *t, cg_buf *out) {
    totmap m = {0};
    const char **paths = span_paths(a, t);
    for (size_t i = 0; i < t->n_spans; i++)
        if (t->spans[i].closed) map_add(&m, 's', paths[i], t->spans[i].duration_ns);
    for (size_t i = 0; i < t->n_ops; i++) {
        const cg_op *op = &t->ops[i];
        const cg_span *sp = op->span_id ? cg_trace_find_span(t, op->span_id) : NULL;
        const char *p = sp ? cg_arena_printf(a, "%s/%s", paths[sp - t->spans], op->op_name) : op->op_name;
        map_add(&m, 'o', p, op->duration_ns);
    }
    cg_timing_profile *tp = cg_timing_analyze(t, a);
    for (size_t i = 0; i < tp->n_device_clocks; i++) {
        const cg_device_clock_timing *d = &tp->device_clocks[i];
        const char *p = cg_arena_printf(a, "device:%s/%s", d->device, d->clock_id);
        map_add(&m, 'd', p, d->busy_ns)->n = d->interval_count; /* one busy value per clock */
    }
    cg_buf_putc(out, '[');
    bool first = true;
    for (size_t i = 0; i < m.cap; i++) {
        const tot *x = &m.slots[i];
        if (!x->path) continue;
        if (!first) cg_buf_putc(out, ',');
        first = false;
        cg_buf_puts(out, x->kind == 's' ? "{\"k\":\"span\",\"p\":" : x->kind == 'o' ? "{\"k\":\"op\",\"p\":" : "{\"k\":\"device\",\"p\":");
        cg_json_write_str(out, x->path, strlen(x->path));
        cg_buf_printf(out, ",\"t\":%" PRIu64 ",\"n\":%" PRIu64 "}", x->total, x->n);
    }
    cg_buf_putc(out, ']');
    free(m.slots);
}

/* ------------------------------------------------------------ insert */

int srv_facts_insert(PGconn *c, const char *id, const char *run_id, const cg_trace *t, const cg_health *h,
                     char sqlstate[6], cg_error *err) {
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_cohort_receipt rc = {run_id, id};
    cg_cohort_row row;
    cg_cohort_row_from_trace(&a, t, h, &rc, &row);
    cg_buf crow = CG_BUF_INIT, spt = CG_BUF_INIT, tots = CG_BUF_INIT;
    cg_cohort_row_write(&crow, &row);
    cg_series_point sp;
    cg_series_point_from_trace(&a, t, id, run_id, id, &sp);
    cg_json_write(&spt, cg_series_point_to_json(&a, &sp), false);
    srv_span_totals_json(&a, t, &tots);
    int ret = -1;
    const char *p[4] = {id, crow.data, spt.data, t->terminal.reason};
    PGresult *x = srv_q(c,
                        "INSERT INTO bundle_facts (bundle_id, cohort_row, series_point, terminal_reason) "
                        "VALUES ($1, $2, $3, $4) ON CONFLICT (bundle_id) DO NOTHING",
                        4, p, NULL, sqlstate, err);
    if (!x) goto out;
    bool inserted = strcmp(PQcmdTuples(x), "1") == 0;
    PQclear(x);
    if (inserted) {
        const char *q[2] = {id, tots.data};
        x = srv_q(c,
                  "INSERT INTO bundle_span_totals (bundle_id, kind, path, total_ns, occurrences) "
                  "SELECT $1, r.k, r.p, r.t, r.n FROM json_to_recordset($2::json) AS r(k text, p text, t bigint, n bigint)",
                  2, q, NULL, sqlstate, err);
        if (!x) goto out;
        PQclear(x);
    }
    ret = 0;
out:
    cg_buf_free(&crow);
    cg_buf_free(&spt);
    cg_buf_free(&tots);
    cg_arena_free(&a);
    return ret;
}

int srv_facts_backfill(srv_server *s, PGconn *c, const char *id, cg_error *err) {
    const char *p[1] = {id};
    PGresult *x = srv_q(c,
                        "SELECT b.run_id, f.sha256, f.bytes FROM bundles b JOIN bundle_files f ON f.bundle_id = b.id "
                        "AND f.path = 'trace.jsonl' WHERE b.id = $1",
                        1, p, NULL, NULL, err);
    if (!x) return -1;
    if (PQntuples(x) != 1) {
        PQclear(x);
        return cg_err_set(err, CG_EIO, "bundle %s has no stored trace.jsonl", id);
    }
    char *run_id = strdup(PQgetvalue(x, 0, 0)), sha[65];
    snprintf(sha, sizeof sha, "%s", PQgetvalue(x, 0, 1));
    PQclear(x);
    if (!run_id) abort();
    size_t len = 0;
    char *data = srv_blob_read(&s->blobs, c, sha, (size_t)16 << 30, &len, err);
    if (!data) {
        free(run_id);
        return -1;
    }
    cg_trace_limits tl;
    cg_trace_limits_default(&tl);
    cg_trace *t = cg_trace_read_mem(data, len, "trace.jsonl", &tl, err);
    free(data);
    if (!t) {
        free(run_id);
        return -1;
    }
    cg_health *h = cg_health_analyze(t);
    int rc = -1;
    if (srv_exec(c, "BEGIN", err) == 0) {
        if (srv_facts_insert(c, id, run_id, t, h, NULL, err) == 0 && srv_exec(c, "COMMIT", err) == 0) rc = 0;
        else srv_exec(c, "ROLLBACK", &(cg_error){0});
    }
    if (rc == 0) srv_log("info", "comparison facts backfilled", "id", id, NULL);
    cg_health_free(h);
    cg_trace_free(t);
    free(run_id);
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
