/* view_store.c — the on-disk copy of a dashboard view index (srv_views.h):
 * <data_dir>/views/<id>.idx keeps a built index across restarts. It is a cache
 * in native byte order, rebuilt from the verified trace whenever it is missing
 * or does not read back exactly (bounds, string numbers, enum ranges, JSON).
 *
 * Layout: "CGVWIDX1"; u32 complete, valid; u32 n_strings, strings (u32 len,
 * bytes); spans (u64 n; per span u32 id, parent, name; u64 start, duration,
 * self, total, ops; u32 depth; u8 kind, step, closed, measured, has_times);
 * ops (u64 n; u32 span, name, device, dtype; u64 timestamp, duration, output;
 * u8 has_output); costs (u64 n; u32 name, kind; u64 count, self, total, max;
 * u8 has_self); memory (u64 n; u64 ts[n]; u64 live[n]); SRV_VW_GPU_TABLES
 * tables (u64 n; u32 x 8 strings; u64 x 7); the evidence, memory and GPU
 * summary sections as JSON text (u32 len, bytes). String number UINT32_MAX =
 * NULL. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fs.h"
#include "base/hmap.h"
#include "srv_views.h"
#include "trace/trace.h"

#define MAGIC "CGVWIDX1"
#define NONE UINT32_MAX

/* ---------------------------------------------------------------- writing */

typedef struct wr {
    cg_buf b;
    cg_hstr ids; /* string → number */
    const char **strs;
    size_t n, cap;
} wr;

static void w_u8(wr *w, unsigned v) { unsigned char c = (unsigned char)v; cg_buf_append(&w->b, &c, 1); }
static void w_u32(wr *w, uint32_t v) { cg_buf_append(&w->b, &v, sizeof v); }
static void w_u64(wr *w, uint64_t v) { cg_buf_append(&w->b, &v, sizeof v); }

/* The number of s in the string table (added on first use). */
static uint32_t sid(wr *w, const char *s) {
    if (!s) return NONE;
    size_t *v = cg_hstr_get(&w->ids, s);
    if (v) return (uint32_t)*v;
    if (w->n == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 1024;
        w->strs = cg_xrealloc(w->strs, w->cap, sizeof *w->strs);
    }
    w->strs[w->n] = s;
    cg_hstr_put(&w->ids, s, w->n, NULL);
    return (uint32_t)w->n++;
}

static void w_json(wr *w, const cg_jv *v) {
    cg_buf t = CG_BUF_INIT;
    cg_json_write(&t, v, false);
    w_u32(w, (uint32_t)t.len);
    cg_buf_append(&w->b, t.data, t.len);
    cg_buf_free(&t);
}

/* The rows part (everything after the string table) into w->b. */
static void write_rows(wr *w, const srv_vw_index *x) {
    w_u64(w, x->n_spans);
    for (size_t i = 0; i < x->n_spans; i++) {
        const srv_vw_span *s = &x->spans[i];
        w_u32(w, sid(w, s->id)); w_u32(w, sid(w, s->parent_id)); w_u32(w, sid(w, s->name));
        w_u64(w, s->start_ns); w_u64(w, s->duration_ns); w_u64(w, s->self_ns); w_u64(w, s->total_ns); w_u64(w, s->ops);
        w_u32(w, s->depth);
        w_u8(w, s->kind); w_u8(w, s->step);
        w_u8(w, s->closed); w_u8(w, s->measured); w_u8(w, s->has_times);
    }
    w_u64(w, x->n_ops);
    for (size_t i = 0; i < x->n_ops; i++) {
        const srv_vw_op *o = &x->ops[i];
        w_u32(w, sid(w, o->span_id)); w_u32(w, sid(w, o->name)); w_u32(w, sid(w, o->device)); w_u32(w, sid(w, o->dtype));
        w_u64(w, o->timestamp_ns); w_u64(w, o->duration_ns); w_u64(w, o->output_bytes);
        w_u8(w, o->has_output_bytes);
    }
    w_u64(w, x->n_costs);
    for (size_t i = 0; i < x->n_costs; i++) {
        const srv_vw_cost *c = &x->costs[i];
        w_u32(w, sid(w, c->name)); w_u32(w, sid(w, c->kind));
        w_u64(w, c->count); w_u64(w, c->self_ns); w_u64(w, c->total_ns); w_u64(w, c->max_total_ns);
        w_u8(w, c->has_self);
    }
    w_u64(w, x->n_mem);
    cg_buf_append(&w->b, x->mem_ts, x->n_mem * sizeof *x->mem_ts);
    cg_buf_append(&w->b, x->mem_live, x->n_mem * sizeof *x->mem_live);
    for (int t = 0; t < SRV_VW_GPU_TABLES; t++) {
        w_u64(w, x->gpu[t].n);
        for (size_t i = 0; i < x->gpu[t].n; i++) {
            const srv_vw_gpu_row *g = &x->gpu[t].rows[i];
            const char *s[8] = {g->name, g->category, g->kind, g->device, g->context, g->stream, g->correlation_id, g->clock_id};
            for (int k = 0; k < 8; k++) w_u32(w, sid(w, s[k]));
            uint64_t v[7] = {g->total_ns, g->count, g->average_ns, g->minimum_ns, g->maximum_ns, g->start_ns, g->duration_ns};
            for (int k = 0; k < 7; k++) w_u64(w, v[k]);
        }
    }
    w_json(w, x->evidence);
    w_json(w, x->memory);
    w_json(w, x->gpu_summary);
}

int srv_vw_save(const srv_vw_index *x, const char *path, cg_error *err) {
    wr w = {.b = CG_BUF_INIT};
    cg_hstr_init(&w.ids, 0);
    write_rows(&w, x);
    cg_buf out = CG_BUF_INIT;
    cg_buf_append(&out, MAGIC, 8);
    uint32_t flags[2] = {x->complete, x->valid}, n = (uint32_t)w.n;
    cg_buf_append(&out, flags, sizeof flags);
    cg_buf_append(&out, &n, sizeof n);
    for (size_t i = 0; i < w.n; i++) {
        uint32_t len = (uint32_t)strlen(w.strs[i]);
        cg_buf_append(&out, &len, sizeof len);
        cg_buf_append(&out, w.strs[i], len);
    }
    cg_buf_append(&out, w.b.data, w.b.len);
    int rc = cg_write_file_atomic(path, out.data, out.len, err);
    cg_buf_free(&out);
    cg_buf_free(&w.b);
    cg_hstr_free(&w.ids);
    cg_free(w.strs);
    return rc;
}

/* ---------------------------------------------------------------- reading */

typedef struct rd {
    const unsigned char *p, *end;
    bool ok;
    const char **strs;
    uint32_t n_strs;
} rd;

static void take(rd *r, void *out, size_t n) {
    if (!r->ok || (size_t)(r->end - r->p) < n) {
        r->ok = false;
        memset(out, 0, n);
        return;
    }
    memcpy(out, r->p, n);
    r->p += n;
}
static uint8_t r_u8(rd *r) { uint8_t v; take(r, &v, 1); return v; }
static uint32_t r_u32(rd *r) { uint32_t v; take(r, &v, sizeof v); return v; }
static uint64_t r_u64(rd *r) { uint64_t v; take(r, &v, sizeof v); return v; }
static const char *r_str(rd *r) {
    uint32_t i = r_u32(r);
    if (i == NONE) return NULL;
    if (i >= r->n_strs) r->ok = false;
    return r->ok ? r->strs[i] : NULL;
}
static const char *r_req(rd *r) { /* a required string */
    const char *s = r_str(r);
    if (!s) r->ok = false;
    return s;
}
/* A row count that the rest of the file can hold at min_row bytes per row. */
static size_t r_count(rd *r, size_t min_row) {
    uint64_t n = r_u64(r);
    if (!r->ok || n > (uint64_t)(r->end - r->p) / min_row) r->ok = false;
    return r->ok ? (size_t)n : 0;
}
static void *r_alloc(size_t n, size_t sz) { return cg_xzalloc(n, sz); }
static cg_jv *r_json(rd *r, cg_arena *a) {
    uint32_t n = r_u32(r);
    if (!r->ok || n > (size_t)(r->end - r->p)) {
        r->ok = false;
        return NULL;
    }
    cg_json_limits lim;
    cg_json_limits_default(&lim);
    cg_error err = {0};
    cg_jv *v = cg_json_parse(a, (const char *)r->p, n, &lim, &err);
    r->p += n;
    if (!v || v->type != CG_JOBJ) r->ok = false;
    return v;
}

static void read_rows(rd *r, srv_vw_index *x) {
    x->n_spans = r_count(r, 61);
    x->spans = r_alloc(x->n_spans, sizeof *x->spans);
    for (size_t i = 0; r->ok && i < x->n_spans; i++) {
        srv_vw_span *s = &x->spans[i];
        s->id = r_req(r); s->parent_id = r_str(r); s->name = r_req(r);
        s->start_ns = r_u64(r); s->duration_ns = r_u64(r); s->self_ns = r_u64(r); s->total_ns = r_u64(r); s->ops = r_u64(r);
        s->depth = r_u32(r);
        s->kind = r_u8(r); s->step = r_u8(r);
        s->closed = r_u8(r); s->measured = r_u8(r); s->has_times = r_u8(r);
        if (s->kind > CG_SPAN_MODULE || s->step > CG_STEP_OPTIMIZER) r->ok = false;
    }
    x->n_ops = r_count(r, 41);
    x->ops = r_alloc(x->n_ops, sizeof *x->ops);
    for (size_t i = 0; r->ok && i < x->n_ops; i++) {
        srv_vw_op *o = &x->ops[i];
        o->span_id = r_str(r); o->name = r_str(r); o->device = r_str(r); o->dtype = r_str(r);
        o->timestamp_ns = r_u64(r); o->duration_ns = r_u64(r); o->output_bytes = r_u64(r);
        o->has_output_bytes = r_u8(r);
    }
    x->n_costs = r_count(r, 41);
    x->costs = r_alloc(x->n_costs, sizeof *x->costs);
    for (size_t i = 0; r->ok && i < x->n_costs; i++) {
        srv_vw_cost *c = &x->costs[i];
        c->name = r_req(r); c->kind = r_req(r);
        c->count = r_u64(r); c->self_ns = r_u64(r); c->total_ns = r_u64(r); c->max_total_ns = r_u64(r);
        c->has_self = r_u8(r);
    }
    x->n_mem = r_count(r, 16);
    x->mem_ts = r_alloc(x->n_mem, sizeof *x->mem_ts);
    x->mem_live = r_alloc(x->n_mem, sizeof *x->mem_live);
    take(r, x->mem_ts, x->n_mem * sizeof *x->mem_ts);
    take(r, x->mem_live, x->n_mem * sizeof *x->mem_live);
    for (int t = 0; t < SRV_VW_GPU_TABLES; t++) {
        srv_vw_table *tb = &x->gpu[t];
        tb->n = r_count(r, 88);
        tb->rows = r_alloc(tb->n, sizeof *tb->rows);
        for (size_t i = 0; r->ok && i < tb->n; i++) {
            srv_vw_gpu_row *g = &tb->rows[i];
            const char **s[8] = {&g->name, &g->category, &g->kind, &g->device, &g->context, &g->stream, &g->correlation_id, &g->clock_id};
            for (int k = 0; k < 8; k++) *s[k] = r_str(r);
            uint64_t *v[7] = {&g->total_ns, &g->count, &g->average_ns, &g->minimum_ns, &g->maximum_ns, &g->start_ns, &g->duration_ns};
            for (int k = 0; k < 7; k++) *v[k] = r_u64(r);
        }
    }
    x->evidence = r_json(r, &x->arena);
    x->memory = r_json(r, &x->arena);
    x->gpu_summary = r_json(r, &x->arena);
}

srv_vw_index *srv_vw_load(const char *id, const char *path) {
    if (!cg_path_exists(path)) return NULL;
    cg_error err = {0};
    size_t len = 0;
    char *data = cg_read_file(path, 0, &len, &err);
    if (!data) return NULL;
    rd r = {(const unsigned char *)data, (const unsigned char *)data + len, true, NULL, 0};
    char magic[8];
    take(&r, magic, 8);
    if (r.ok && memcmp(magic, MAGIC, 8) != 0) r.ok = false;
    srv_vw_index *x = srv_vw_new(id);
    x->complete = r_u32(&r) != 0;
    x->valid = r_u32(&r) != 0;
    r.n_strs = r_u32(&r);
    if (r.ok && r.n_strs > (size_t)(r.end - r.p) / 4) r.ok = false;
    if (r.ok) r.strs = r_alloc(r.n_strs, sizeof *r.strs);
    for (uint32_t i = 0; r.ok && i < r.n_strs; i++) {
        uint32_t n = r_u32(&r);
        if (!r.ok || n > (size_t)(r.end - r.p)) {
            r.ok = false;
            break;
        }
        r.strs[i] = cg_arena_strndup(&x->arena, (const char *)r.p, n);
        r.p += n;
    }
    if (r.ok) read_rows(&r, x);
    if (r.ok && r.p != r.end) r.ok = false;
    cg_free(r.strs);
    cg_free(data);
    if (!r.ok) {
        srv_vw_free(x);
        return NULL;
    }
    return x;
}
