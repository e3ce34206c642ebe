/* routes_views.c — GET /bundles/{id}/views/{spans,ops,costs,memory,gpu,evidence}
 *
 * The data of every tab of the web app's bundle page, answered from the
 * bundle's view index (view_index.c, srv_views.h), which is derived only from
 * the verified trace.jsonl and nsight/ files (never from an uploaded
 * viewer.html) and built once per bundle.
 *
 * spans / ops: a paged table {total, matched, offset, limit, sort, order,
 *   truncated, rows}; sort names a column (srv_vw_span_cols / srv_vw_op_cols),
 *   order asc|desc, filters: name (case-insensitive substring), spans: kind,
 *   step; ops: device, dtype, span. limit 1..SRV_VIEWS_MAX_LIMIT.
 * costs: span costs aggregated by (kind, name), paged and sorted the same way
 *   (by name, kind, count, self_ns, total_ns, max_ns; default total_ns desc),
 *   filters q (substring of the name) and kind.
 * memory: the logical live-bytes timeline in `buckets` equal time buckets of
 *   [start_ns, end_ns) with the min, max and last value of each (so no peak is
 *   lost), plus the logical peak and per-device figures.
 * gpu: the device plane's overview plus one paged table (table=kernels,
 *   runtime_calls, memory_operations, nvtx_ranges, gpu_timeline,
 *   device_clocks, device_spans) with a name filter.
 * evidence: provenance, health, capabilities, findings, facts and gaps
 *   (every list capped, cuts stated in truncation).
 *
 * No answer exceeds SRV_VIEWS_MAX_ANSWER bytes: a page stops early (truncated:
 * true; continue at offset + rows.length) and any other answer over it is
 * refused with 413 payload_too_large (detail.limit "view_answer_bytes").
 * Errors: 400 invalid_parameter (detail.parameter), 404 not_found,
 * 413 payload_too_large, 422 trace_invalid, 503 unavailable. */
#include <stdlib.h>
#include <string.h>

#include "srv_timeline.h" /* srv_sat_add */
#include "srv_views.h"
#include "trace/trace.h"

#define SRV_VIEWS_MAX_LIMIT 1000
#define SRV_VIEWS_MAX_BUCKETS 2000
#define SRV_VIEWS_MAX_ANSWER ((size_t)5 << 20)
#define ROWS_BUDGET ((size_t)4 << 20) /* estimated bytes of rows per page */
#define MAX_FILTER_BYTES 512
#define JSON_CT "application/json; charset=utf-8"

/* ---------------------------------------------------------------- parameters */

typedef struct vparams {
    uint64_t offset, limit;
    int sort;
    bool desc;
} vparams;

static enum MHD_Result bad(srv_req *r, const char *name, const char *msg) {
    return srv_fail(r, CG_R_INVALID_PARAMETER, srv_detail_param(r, name), "%s", msg);
}

/* The string parameter name: NULL when absent; *ok false (answered) when it is
 * not UTF-8 or longer than MAX_FILTER_BYTES. */
static const char *str_param(srv_req *r, const char *name, bool *ok, enum MHD_Result *res) {
    const char *v = srv_query(r, name);
    if (!v || !*ok) return v;
    size_t n = strlen(v);
    if (n > MAX_FILTER_BYTES || !cg_utf8_valid(v, n)) {
        *ok = false;
        *res = srv_fail(r, CG_R_INVALID_PARAMETER, srv_detail_param(r, name), "%s must be UTF-8 of at most %d bytes", name,
                        MAX_FILTER_BYTES);
    }
    return v;
}

static bool u64_param(srv_req *r, const char *name, uint64_t def, uint64_t lo, uint64_t hi, uint64_t *out,
                      enum MHD_Result *res) {
    const char *v = srv_query(r, name);
    *out = def;
    if (!v) return true;
    if (srv_parse_u64(v, hi, out) && *out >= lo) return true;
    *res = srv_fail(r, CG_R_INVALID_PARAMETER, srv_detail_param(r, name), "%s must be an integer from %llu to %llu", name,
                    (unsigned long long)lo, (unsigned long long)hi);
    return false;
}

/* offset, limit, sort (a name of cols), order. */
static bool page_params(srv_req *r, const char *const *cols, int def_sort, bool def_desc, uint64_t def_limit,
                        vparams *p, enum MHD_Result *res) {
    if (!u64_param(r, "offset", 0, 0, UINT32_MAX, &p->offset, res)) return false;
    if (!u64_param(r, "limit", def_limit, 1, SRV_VIEWS_MAX_LIMIT, &p->limit, res)) return false;
    p->sort = def_sort;
    p->desc = def_desc;
    const char *s = srv_query(r, "sort");
    if (s) {
        p->sort = -1;
        for (int i = 0; cols[i]; i++)
            if (!strcmp(cols[i], s)) p->sort = i;
        if (p->sort < 0) {
            *res = bad(r, "sort", "sort must name a column of this table");
            return false;
        }
        p->desc = false;
    }
    const char *o = srv_query(r, "order");
    if (o && strcmp(o, "asc") && strcmp(o, "desc")) {
        *res = bad(r, "order", "order must be asc or desc");
        return false;
    }
    if (o) p->desc = !strcmp(o, "desc");
    return true;
}

/* ASCII case-insensitive substring test; an empty or absent needle matches. */
static bool contains_ci(const char *hay, const char *needle) {
    if (!needle || !*needle) return true;
    if (!hay) return false;
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++) {
        size_t i = 0;
        while (i < n && p[i]) {
            unsigned char a = (unsigned char)p[i], b = (unsigned char)needle[i];
            if (a >= 'A' && a <= 'Z') a = (unsigned char)(a + 32);
            if (b >= 'A' && b <= 'Z') b = (unsigned char)(b + 32);
            if (a != b) break;
            i++;
        }
        if (i == n) return true;
    }
    return false;
}

/* ---------------------------------------------------------------- index access */

/* Resolves the bundle and takes a reference on its view index; NULL after answering. */
static srv_vw_index *open_index(srv_req *r, enum MHD_Result *res) {
    cg_error err = {0};
    char id[65];
    if (!srv_bundle_id_param(r, id, res)) return NULL;
    srv_vw_status st;
    srv_vw_index *x = srv_views_acquire(r->s, id, &st, &err);
    if (x) return x;
    if (st == SRV_VW_UNAVAILABLE) *res = srv_fail_unavailable(r, &err);
    else if (st == SRV_VW_NO_TRACE) *res = srv_fail(r, CG_R_NOT_FOUND, NULL, "%s", err.msg);
    else if (st == SRV_VW_INVALID) *res = srv_fail(r, CG_R_TRACE_INVALID, NULL, "%s", err.msg);
    else if (st == SRV_VW_TOO_LARGE) {
        cg_jv *d = cg_jv_obj(&r->arena);
        cg_jv_obj_put(&r->arena, d, "limit", cg_jv_str(&r->arena, "max_decoded_bytes"));
        *res = srv_fail(r, CG_R_PAYLOAD_TOO_LARGE, d, "%s", err.msg);
    } else *res = srv_fail(r, CG_R_INTERNAL, NULL, "cannot build the views of bundle %s: %s", id, err.msg);
    return NULL;
}

/* Writes o (which may point into x) and releases x. */
static enum MHD_Result answer(srv_req *r, srv_vw_index *x, const cg_jv *o) {
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, o, false);
    srv_views_release(r->s, x);
    enum MHD_Result res;
    if (b.len > SRV_VIEWS_MAX_ANSWER) {
        cg_jv *d = cg_jv_obj(&r->arena);
        cg_jv_obj_put(&r->arena, d, "limit", cg_jv_str(&r->arena, "view_answer_bytes"));
        res = srv_fail(r, CG_R_PAYLOAD_TOO_LARGE, d, "the answer would be %zu bytes (limit %zu)", b.len,
                       SRV_VIEWS_MAX_ANSWER);
    } else {
        res = srv_reply_bytes(r, 200, JSON_CT, b.data, b.len, NULL);
    }
    cg_buf_free(&b);
    return res;
}

static cg_jv *str_or_null(cg_arena *a, const char *s) { return s ? cg_jv_str_nocopy(a, s) : cg_jv_null(a); }
static size_t slen(const char *s) { return s ? strlen(s) : 0; }

/* ---------------------------------------------------------------- paging */

/* A row predicate and its JSON; est receives the row's estimated bytes. */
typedef bool (*row_match_fn)(const srv_vw_index *x, size_t i, const void *filter);
typedef cg_jv *(*row_json_fn)(cg_arena *a, const srv_vw_index *x, size_t i, size_t *est);

/* {total, matched, offset, limit, sort, order, truncated, rows} over the order of
 * (table, p->sort); match NULL = every row. */
static cg_jv *page(srv_req *r, srv_vw_index *x, int table, size_t total, const char *const *cols, const vparams *p,
                   row_match_fn match, const void *filter, row_json_fn json) {
    cg_arena *a = &r->arena;
    const uint32_t *ord = srv_views_order(x, table, p->sort);
    cg_jv *rows = cg_jv_arr(a);
    size_t matched = 0, shown = 0, bytes = 0;
    bool truncated = false;
    for (size_t k = match ? 0 : (p->offset < total ? (size_t)p->offset : total); k < total; k++) {
        size_t i = ord[p->desc ? total - 1 - k : k];
        if (match && !match(x, i, filter)) continue;
        size_t pos = match ? matched++ : k;
        if (pos < p->offset || shown >= p->limit || truncated) {
            if (!match) break;
            continue;
        }
        size_t est = 0;
        cg_jv *row = json(a, x, i, &est);
        if (shown && bytes + est > ROWS_BUDGET) {
            truncated = true;
            if (!match) break;
            continue;
        }
        bytes += est;
        cg_jv_arr_push(a, rows, row);
        shown++;
    }
    if (!match) matched = total;
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "id", cg_jv_str_nocopy(a, x->item.id));
    cg_jv_obj_put(a, o, "total", cg_jv_u64(a, total));
    cg_jv_obj_put(a, o, "matched", cg_jv_u64(a, matched));
    cg_jv_obj_put(a, o, "offset", cg_jv_u64(a, p->offset));
    cg_jv_obj_put(a, o, "limit", cg_jv_u64(a, p->limit));
    cg_jv_obj_put(a, o, "sort", cg_jv_str_nocopy(a, cols[p->sort]));
    cg_jv_obj_put(a, o, "order", cg_jv_str_nocopy(a, p->desc ? "desc" : "asc"));
    cg_jv_obj_put(a, o, "truncated", cg_jv_bool(a, truncated));
    cg_jv_obj_put(a, o, "rows", rows);
    return o;
}

/* ---------------------------------------------------------------- spans */

typedef struct span_filter { const char *name; int kind, step; } span_filter;

static bool span_match(const srv_vw_index *x, size_t i, const void *f) {
    const span_filter *sf = f;
    const srv_vw_span *s = &x->spans[i];
    if (sf->kind >= 0 && s->kind != sf->kind) return false;
    if (sf->step >= 0 && s->step != sf->step) return false;
    return contains_ci(s->name, sf->name);
}

static cg_jv *span_json(cg_arena *a, const srv_vw_index *x, size_t i, size_t *est) {
    const srv_vw_span *s = &x->spans[i];
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "id", cg_jv_str_nocopy(a, s->id));
    cg_jv_obj_put(a, o, "parent_id", str_or_null(a, s->parent_id));
    cg_jv_obj_put(a, o, "name", cg_jv_str_nocopy(a, s->name));
    cg_jv_obj_put(a, o, "kind", cg_jv_str_nocopy(a, cg_span_kind_name((cg_span_kind)s->kind)));
    cg_jv_obj_put(a, o, "step", s->step ? cg_jv_str_nocopy(a, cg_step_name((cg_step)s->step)) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "start_ns", cg_jv_u64(a, s->start_ns));
    cg_jv_obj_put(a, o, "duration_ns", s->closed ? cg_jv_u64(a, s->duration_ns) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "self_ns", s->has_times ? cg_jv_u64(a, s->self_ns) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "total_ns", s->has_times ? cg_jv_u64(a, s->total_ns) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "depth", cg_jv_u64(a, s->depth));
    cg_jv_obj_put(a, o, "ops", cg_jv_u64(a, s->ops));
    cg_jv_obj_put(a, o, "measured", cg_jv_bool(a, s->measured));
    *est = 2 * (slen(s->id) + slen(s->parent_id) + slen(s->name)) + 260;
    return o;
}

enum MHD_Result srv_h_views_spans(srv_req *r) {
    enum MHD_Result res = MHD_NO;
    vparams p;
    if (!page_params(r, srv_vw_span_cols, 4, false, 100, &p, &res)) return res;
    bool ok = true;
    span_filter f = {.name = str_param(r, "name", &ok, &res), .kind = -1, .step = -1};
    const char *kind = str_param(r, "kind", &ok, &res), *step = str_param(r, "step", &ok, &res);
    if (!ok) return res;
    if (kind && (f.kind = cg_span_kind_parse(kind)) < 0) return bad(r, "kind", "kind must be function, op or module");
    if (step && strcmp(step, "none") && (f.step = cg_step_parse(step)) < 0)
        return bad(r, "step", "step must be forward, backward, optimizer or none");
    if (step && !strcmp(step, "none")) f.step = CG_STEP_NONE;
    srv_vw_index *x = open_index(r, &res);
    if (!x) return res;
    bool any = (f.name && *f.name) || f.kind >= 0 || f.step >= 0;
    cg_jv *o = page(r, x, SRV_VW_SPANS, x->n_spans, srv_vw_span_cols, &p, any ? span_match : NULL, &f, span_json);
    cg_jv_obj_put(&r->arena, o, "graph_times", cg_jv_bool(&r->arena, x->complete && x->valid));
    return answer(r, x, o);
}

/* ---------------------------------------------------------------- ops */

typedef struct op_filter { const char *name, *device, *dtype, *span; } op_filter;

static bool op_match(const srv_vw_index *x, size_t i, const void *f) {
    const op_filter *of = f;
    const srv_vw_op *o = &x->ops[i];
    if (of->device && (!o->device || strcmp(o->device, of->device))) return false;
    if (of->dtype && (!o->dtype || strcmp(o->dtype, of->dtype))) return false;
    if (of->span && (!o->span_id || strcmp(o->span_id, of->span))) return false;
    return contains_ci(o->name, of->name);
}

static cg_jv *op_json(cg_arena *a, const srv_vw_index *x, size_t i, size_t *est) {
    const srv_vw_op *p = &x->ops[i];
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "index", cg_jv_u64(a, i));
    cg_jv_obj_put(a, o, "name", str_or_null(a, p->name));
    cg_jv_obj_put(a, o, "span_id", str_or_null(a, p->span_id));
    cg_jv_obj_put(a, o, "device", str_or_null(a, p->device));
    cg_jv_obj_put(a, o, "dtype", str_or_null(a, p->dtype));
    cg_jv_obj_put(a, o, "timestamp_ns", cg_jv_u64(a, p->timestamp_ns));
    cg_jv_obj_put(a, o, "duration_ns", cg_jv_u64(a, p->duration_ns));
    cg_jv_obj_put(a, o, "output_bytes", p->has_output_bytes ? cg_jv_u64(a, p->output_bytes) : cg_jv_null(a));
    *est = 2 * (slen(p->name) + slen(p->span_id) + slen(p->device) + slen(p->dtype)) + 200;
    return o;
}

enum MHD_Result srv_h_views_ops(srv_req *r) {
    enum MHD_Result res = MHD_NO;
    vparams p;
    if (!page_params(r, srv_vw_op_cols, 4, false, 100, &p, &res)) return res;
    bool ok = true;
    op_filter f = {str_param(r, "name", &ok, &res), str_param(r, "device", &ok, &res), str_param(r, "dtype", &ok, &res),
                   str_param(r, "span", &ok, &res)};
    if (!ok) return res;
    srv_vw_index *x = open_index(r, &res);
    if (!x) return res;
    bool any = (f.name && *f.name) || f.device || f.dtype || f.span;
    return answer(r, x, page(r, x, SRV_VW_OPS, x->n_ops, srv_vw_op_cols, &p, any ? op_match : NULL, &f, op_json));
}

/* ---------------------------------------------------------------- span costs */

typedef struct cost_filter { const char *q, *kind; } cost_filter;

static bool cost_match(const srv_vw_index *x, size_t i, const void *f) {
    const cost_filter *cf = f;
    const srv_vw_cost *c = &x->costs[i];
    if (cf->kind && strcmp(c->kind, cf->kind)) return false;
    return contains_ci(c->name, cf->q);
}

static cg_jv *cost_json(cg_arena *a, const srv_vw_index *x, size_t i, size_t *est) {
    const srv_vw_cost *c = &x->costs[i];
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "name", cg_jv_str_nocopy(a, c->name));
    cg_jv_obj_put(a, o, "kind", cg_jv_str_nocopy(a, c->kind));
    cg_jv_obj_put(a, o, "count", cg_jv_u64(a, c->count));
    cg_jv_obj_put(a, o, "self_ns", c->has_self ? cg_jv_u64(a, c->self_ns) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "total_ns", cg_jv_u64(a, c->total_ns));
    cg_jv_obj_put(a, o, "max_ns", cg_jv_u64(a, c->max_total_ns));
    *est = 2 * slen(c->name) + 160;
    return o;
}

enum MHD_Result srv_h_views_costs(srv_req *r) {
    enum MHD_Result res = MHD_NO;
    vparams p;
    if (!page_params(r, srv_vw_cost_cols, 4, true, 50, &p, &res)) return res;
    if (srv_query(r, "sort") && !srv_query(r, "order")) p.desc = p.sort >= 2; /* figures: largest first */
    bool ok = true;
    cost_filter f = {str_param(r, "q", &ok, &res), str_param(r, "kind", &ok, &res)};
    if (!ok) return res;
    srv_vw_index *x = open_index(r, &res);
    if (!x) return res;
    bool any = (f.q && *f.q) || f.kind;
    cg_jv *o = page(r, x, SRV_VW_COSTS, x->n_costs, srv_vw_cost_cols, &p, any ? cost_match : NULL, &f, cost_json);
    cg_jv_obj_put(&r->arena, o, "self_known", cg_jv_bool(&r->arena, x->complete && x->valid));
    return answer(r, x, o);
}

/* ---------------------------------------------------------------- memory */

static size_t first_at_or_after(const uint64_t *ts, size_t n, uint64_t t) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ts[mid] >= t) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* [[start_ns, min, max, last, points]…]: the step function of live bytes over
 * each bucket (the value entering it and every point inside). */
static cg_jv *mem_buckets(cg_arena *a, const srv_vw_index *x, uint64_t qs, uint64_t qe, uint64_t nb, uint64_t *w) {
    cg_jv *out = cg_jv_arr(a);
    *w = (qe - qs + nb - 1) / nb;
    if (*w == 0) *w = 1;
    size_t i = first_at_or_after(x->mem_ts, x->n_mem, qs);
    bool have = i > 0;
    uint64_t cur = have ? x->mem_live[i - 1] : 0;
    for (uint64_t b = 0; b < nb; b++) {
        uint64_t bs = qs + b * *w, be = cg_sat_add_u64(bs, *w);
        if (bs >= qe) break;
        if (be > qe) be = qe;
        uint64_t mn = cur, mx = cur, pts = 0;
        bool any = have;
        for (; i < x->n_mem && x->mem_ts[i] < be; i++, pts++) {
            cur = x->mem_live[i];
            if (!any || cur < mn) mn = cur;
            if (!any || cur > mx) mx = cur;
            any = have = true;
        }
        if (!any) continue;
        cg_jv *bx = cg_jv_arr(a);
        cg_jv_arr_push(a, bx, cg_jv_u64(a, bs));
        cg_jv_arr_push(a, bx, cg_jv_u64(a, mn));
        cg_jv_arr_push(a, bx, cg_jv_u64(a, mx));
        cg_jv_arr_push(a, bx, cg_jv_u64(a, cur));
        cg_jv_arr_push(a, bx, cg_jv_u64(a, pts));
        cg_jv_arr_push(a, out, bx);
    }
    return out;
}

enum MHD_Result srv_h_views_memory(srv_req *r) {
    enum MHD_Result res = MHD_NO;
    uint64_t nb, qs, qe;
    if (!u64_param(r, "buckets", 500, 1, SRV_VIEWS_MAX_BUCKETS, &nb, &res)) return res;
    if (!u64_param(r, "start_ns", 0, 0, UINT64_MAX, &qs, &res)) return res;
    if (!u64_param(r, "end_ns", 0, 0, UINT64_MAX, &qe, &res)) return res;
    srv_vw_index *x = open_index(r, &res);
    if (!x) return res;
    cg_arena *a = &r->arena;
    if (!srv_query(r, "start_ns")) qs = x->n_mem ? x->mem_ts[0] : 0;
    if (!srv_query(r, "end_ns")) qe = x->n_mem ? cg_sat_add_u64(x->mem_ts[x->n_mem - 1], 1) : cg_sat_add_u64(qs, 1);
    if (qe <= qs) {
        srv_views_release(r->s, x);
        return bad(r, "end_ns", "end_ns must be greater than start_ns");
    }
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "id", cg_jv_str_nocopy(a, x->item.id));
    for (size_t i = 0; i < x->memory->u.obj.n; i++) {
        const cg_jmember *m = &x->memory->u.obj.m[i];
        cg_jv_obj_putn(a, o, m->key, m->key_len, m->val);
    }
    cg_jv *tl = cg_jv_obj(a);
    uint64_t w = 1;
    cg_jv *b = mem_buckets(a, x, qs, qe, nb, &w);
    cg_jv_obj_put(a, tl, "points", cg_jv_u64(a, x->n_mem));
    cg_jv_obj_put(a, tl, "start_ns", cg_jv_u64(a, qs));
    cg_jv_obj_put(a, tl, "end_ns", cg_jv_u64(a, qe));
    cg_jv_obj_put(a, tl, "bucket_ns", cg_jv_u64(a, w));
    cg_jv_obj_put(a, tl, "buckets", b);
    cg_jv_obj_put(a, o, "timeline", tl);
    return answer(r, x, o);
}

/* ---------------------------------------------------------------- GPU */

typedef struct gpu_ctx { const srv_vw_table *t; int table; const char *name; } gpu_ctx;

static cg_jv *gpu_row_json(cg_arena *a, int table, const srv_vw_gpu_row *g, size_t *est) {
    cg_jv *o = cg_jv_obj(a);
    *est = 2 * (slen(g->name) + slen(g->category) + slen(g->device) + slen(g->context) + slen(g->stream) +
                slen(g->correlation_id) + slen(g->clock_id)) + 240;
    if (table <= SRV_VW_MEMORY_OPERATIONS) {
        cg_jv_obj_put(a, o, "name", str_or_null(a, g->name));
        cg_jv_obj_put(a, o, "category", str_or_null(a, g->category));
        cg_jv_obj_put(a, o, "total_ns", cg_jv_u64(a, g->total_ns));
        cg_jv_obj_put(a, o, "count", cg_jv_u64(a, g->count));
        cg_jv_obj_put(a, o, "average_ns", cg_jv_u64(a, g->average_ns));
        cg_jv_obj_put(a, o, "minimum_ns", cg_jv_u64(a, g->minimum_ns));
        cg_jv_obj_put(a, o, "maximum_ns", cg_jv_u64(a, g->maximum_ns));
    } else if (table <= SRV_VW_GPU_TIMELINE) {
        cg_jv_obj_put(a, o, "name", str_or_null(a, g->name));
        cg_jv_obj_put(a, o, "kind", str_or_null(a, g->kind));
        cg_jv_obj_put(a, o, "device", str_or_null(a, g->device));
        cg_jv_obj_put(a, o, "context", str_or_null(a, g->context));
        cg_jv_obj_put(a, o, "stream", str_or_null(a, g->stream));
        cg_jv_obj_put(a, o, "correlation_id", str_or_null(a, g->correlation_id));
        cg_jv_obj_put(a, o, "start_ns", cg_jv_u64(a, g->start_ns));
        cg_jv_obj_put(a, o, "duration_ns", cg_jv_u64(a, g->duration_ns));
    } else {
        if (table == SRV_VW_DEVICE_SPANS) {
            cg_jv_obj_put(a, o, "span_id", str_or_null(a, g->name));
            cg_jv_obj_put(a, o, "span_name", str_or_null(a, g->category));
        }
        cg_jv_obj_put(a, o, "device", str_or_null(a, g->device));
        cg_jv_obj_put(a, o, "clock_id", str_or_null(a, g->clock_id));
        cg_jv_obj_put(a, o, "interval_count", cg_jv_u64(a, g->count));
        cg_jv_obj_put(a, o, "busy_ns", cg_jv_u64(a, g->total_ns));
    }
    return o;
}

static bool gpu_match(const srv_vw_gpu_row *g, int table, const char *name) {
    if (table == SRV_VW_DEVICE_CLOCKS) return contains_ci(g->device, name) || contains_ci(g->clock_id, name);
    return contains_ci(g->name, name) || (table == SRV_VW_DEVICE_SPANS && contains_ci(g->category, name));
}

enum MHD_Result srv_h_views_gpu(srv_req *r) {
    enum MHD_Result res = MHD_NO;
    uint64_t offset, limit;
    if (!u64_param(r, "offset", 0, 0, UINT32_MAX, &offset, &res)) return res;
    if (!u64_param(r, "limit", 100, 1, SRV_VIEWS_MAX_LIMIT, &limit, &res)) return res;
    bool ok = true;
    const char *tname = str_param(r, "table", &ok, &res), *name = str_param(r, "name", &ok, &res);
    if (!ok) return res;
    int table = tname ? -1 : SRV_VW_KERNELS;
    for (int i = 0; tname && i < SRV_VW_GPU_TABLES; i++)
        if (!strcmp(tname, srv_vw_gpu_table_names[i])) table = i;
    if (table < 0) return bad(r, "table", "table must be kernels, runtime_calls, memory_operations, nvtx_ranges, gpu_timeline, device_clocks or device_spans");
    srv_vw_index *x = open_index(r, &res);
    if (!x) return res;
    cg_arena *a = &r->arena;
    const srv_vw_table *t = &x->gpu[table];
    cg_jv *rows = cg_jv_arr(a);
    size_t matched = 0, shown = 0, bytes = 0;
    bool truncated = false;
    for (size_t i = 0; i < t->n; i++) {
        if (name && *name && !gpu_match(&t->rows[i], table, name)) continue;
        if (matched++ < offset || shown >= limit || truncated) continue;
        size_t est = 0;
        cg_jv *row = gpu_row_json(a, table, &t->rows[i], &est);
        if (shown && bytes + est > ROWS_BUDGET) {
            truncated = true;
            continue;
        }
        bytes += est;
        cg_jv_arr_push(a, rows, row);
        shown++;
    }
    cg_jv *o = cg_jv_obj(a), *counts = cg_jv_obj(a);
    for (int i = 0; i < SRV_VW_GPU_TABLES; i++) cg_jv_obj_put(a, counts, srv_vw_gpu_table_names[i], cg_jv_u64(a, x->gpu[i].n));
    cg_jv_obj_put(a, o, "id", cg_jv_str_nocopy(a, x->item.id));
    cg_jv_obj_put(a, o, "summary", x->gpu_summary);
    cg_jv_obj_put(a, o, "tables", counts);
    cg_jv_obj_put(a, o, "table", cg_jv_str_nocopy(a, srv_vw_gpu_table_names[table]));
    cg_jv_obj_put(a, o, "total", cg_jv_u64(a, t->n));
    cg_jv_obj_put(a, o, "matched", cg_jv_u64(a, matched));
    cg_jv_obj_put(a, o, "offset", cg_jv_u64(a, offset));
    cg_jv_obj_put(a, o, "limit", cg_jv_u64(a, limit));
    cg_jv_obj_put(a, o, "truncated", cg_jv_bool(a, truncated));
    cg_jv_obj_put(a, o, "rows", rows);
    return answer(r, x, o);
}

/* ---------------------------------------------------------------- evidence */

enum MHD_Result srv_h_views_evidence(srv_req *r) {
    enum MHD_Result res = MHD_NO;
    srv_vw_index *x = open_index(r, &res);
    if (!x) return res;
    cg_arena *a = &r->arena;
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "id", cg_jv_str_nocopy(a, x->item.id));
    cg_jv_obj_put(a, o, "capture_complete", cg_jv_bool(a, x->complete));
    cg_jv_obj_put(a, o, "structurally_valid", cg_jv_bool(a, x->valid));
    cg_jv_obj_put(a, o, "spans", cg_jv_u64(a, x->n_spans));
    cg_jv_obj_put(a, o, "ops", cg_jv_u64(a, x->n_ops));
    for (size_t i = 0; i < x->evidence->u.obj.n; i++) {
        const cg_jmember *m = &x->evidence->u.obj.m[i];
        cg_jv_obj_putn(a, o, m->key, m->key_len, m->val);
    }
    return answer(r, x, o);
}
