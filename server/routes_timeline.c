/* routes_timeline.c — GET /bundles/{id}/timeline?clock=&start_ns=&end_ns=&px=
 *
 * Level-of-detail view of a bundle's trace for the web app's Timeline tab.
 * Tracks: host spans (one lane per nesting depth) and host ops on the host
 * clock; device intervals with one lane per (device, clock_id). Host and
 * device clocks are separate domains and are never aligned: a request names
 * one clock ("host", the default, or a device clock_id) and [start_ns, end_ns)
 * is on that clock; only that clock's tracks are answered. Within a track the
 * intervals overlapping the window are merged, in start order, whenever the
 * next one starts within one pixel ((end-start)/px ns) of the current box's
 * end, so a track carries at most about px+1 boxes whatever the trace size.
 *
 * Answer (candle-graph/timeline/1):
 *   {schema, id, clock, start_ns, end_ns, px,
 *    clocks: [{clock, kind: "host"|"device", devices: [..], min_ns, max_ns, records}],
 *    tracks: [{id, kind: "span"|"op"|"device", label, device|null, depth|null,
 *              records, window_records, boxes: [[start_ns, end_ns, count, name|null]…]}]}
 * A box of count 1 carries the span/op name; a merged box carries null.
 * start_ns/end_ns default to the clock's extent; px defaults to 1000 (1…10000).
 *
 * The index of a bundle (sorted intervals and a running maximum of their ends
 * per track, names copied once) is built from trace.jsonl on first use and
 * kept in an LRU cache of CACHE_SLOTS bundles (bundles are immutable, so
 * entries never go stale); a request costs O(log n + k) per track for k
 * intervals in the window (O(boxes of a coarse level) for a window holding the
 * whole track at coarse pixel sizes), and never re-reads the trace. Uploads queue their
 * bundle for a background build (srv_timeline_warm), and a request for an
 * index being built waits for that build rather than starting another. A built
 * index is also written to <data_dir>/timeline/<id>.idx and read back after a
 * restart instead of parsing the trace again. Errors: 400
 * invalid_parameter, 404 not_found, 422 trace_invalid (trace cannot be read),
 * 503 unavailable. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/fs.h"
#include "srv_web.h"
#include "trace/trace.h"

#define CACHE_SLOTS 4
#define PX_DEFAULT 1000
#define PX_MAX 10000
#define COARSE_BOXES 8192

typedef struct tl_track {
    char *id, *label, *device; /* device: NULL for host tracks */
    const char *kind;          /* "span" | "op" | "device" (static) */
    int depth;                 /* span lanes; -1 otherwise */
    size_t n, cap;
    uint64_t *start, *end, *maxend; /* maxend[i] = max(end[0..i]) */
    const char **name;              /* interned in the index arena */
    /* coarse level: the intervals merged at gap coarse_gap (extent / COARSE_BOXES),
     * used for windows that cover the whole track at that pixel size or coarser */
    size_t nc;
    uint64_t coarse_gap;
    uint64_t *cs, *ce, *cn;
    const char **cname;
} tl_track;

typedef struct tl_clock {
    char *clock;  /* "host" or a device clock_id */
    bool host;
    size_t first_track, n_tracks; /* tracks are grouped by clock */
    uint64_t min_ns, max_ns;
    size_t records;
} tl_clock;

typedef struct tl_index {
    char id[65];
    cg_arena arena; /* names and labels */
    tl_track *tracks;
    size_t n_tracks;
    tl_clock *clocks;
    size_t n_clocks;
    unsigned refs;      /* guarded by cache_mu */
    uint64_t last_use;  /* guarded by cache_mu */
} tl_index;

static void build_coarse(tl_track *t);

/* ---------------------------------------------------------------- building */

typedef struct tl_builder {
    tl_index *x;
    size_t cap_tracks;
    /* pointer-keyed intern of names (trace strings are mostly interned): names maps a
     * trace string to its index in copies (arena copies owned by the index) */
    struct ptrmap *names;
    const char **order;
    const char **copies;
} tl_builder;

static void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) abort();
    return q;
}

/* Pointer-keyed open-addressing map; keys are appended to *order in insertion order
 * and the value of a key is its insertion index. */
typedef struct ptrmap { const char **k; uint32_t *v; size_t cap, n; } ptrmap;
static uint32_t ptrmap_get(ptrmap *m, const char *p, const char ***order) {
    if (m->n * 2 >= m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 1024;
        const char **nk = calloc(ncap, sizeof *nk);
        uint32_t *nv = calloc(ncap, sizeof *nv);
        if (!nk || !nv) abort();
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->k[i]) continue;
            size_t h = ((uintptr_t)m->k[i] >> 3) * 11400714819323198485ull & (ncap - 1);
            while (nk[h]) h = (h + 1) & (ncap - 1);
            nk[h] = m->k[i];
            nv[h] = m->v[i];
        }
        free(m->k);
        free(m->v);
        m->k = nk;
        m->v = nv;
        m->cap = ncap;
    }
    size_t h = ((uintptr_t)p >> 3) * 11400714819323198485ull & (m->cap - 1);
    while (m->k[h]) {
        if (m->k[h] == p) return m->v[h];
        h = (h + 1) & (m->cap - 1);
    }
    m->k[h] = p;
    m->v[h] = (uint32_t)m->n;
    *order = xrealloc(*order, (m->n + 1) * sizeof **order);
    (*order)[m->n] = p;
    return (uint32_t)m->n++;
}

static const char *intern(tl_builder *b, const char *s) {
    if (!s) return NULL;
    size_t before = b->names->n;
    uint32_t i = ptrmap_get(b->names, s, &b->order);
    if (b->names->n != before) {
        b->copies = xrealloc(b->copies, b->names->n * sizeof *b->copies);
        b->copies[i] = cg_arena_strdup(&b->x->arena, s);
    }
    return b->copies[i];
}

static tl_track *add_track(tl_builder *b, const char *kind, const char *device, int depth, const char *label) {
    tl_index *x = b->x;
    if (x->n_tracks == b->cap_tracks) {
        b->cap_tracks = b->cap_tracks ? b->cap_tracks * 2 : 8;
        x->tracks = xrealloc(x->tracks, b->cap_tracks * sizeof *x->tracks);
    }
    tl_track *t = &x->tracks[x->n_tracks++];
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->depth = depth;
    t->device = device ? cg_arena_strdup(&x->arena, device) : NULL;
    t->label = cg_arena_strdup(&x->arena, label);
    t->id = cg_arena_printf(&x->arena, "t%zu", x->n_tracks - 1);
    return t;
}

static void push(tl_track *t, uint64_t s, uint64_t e, const char *name) {
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        t->start = xrealloc(t->start, t->cap * sizeof *t->start);
        t->end = xrealloc(t->end, t->cap * sizeof *t->end);
        t->name = xrealloc(t->name, t->cap * sizeof *t->name);
    }
    t->start[t->n] = s;
    t->end[t->n] = e < s ? s : e;
    t->name[t->n] = name;
    t->n++;
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* Sorts a track by (start, end) and computes the running maximum of ends. */
typedef struct tl_item { uint64_t s, e; const char *name; } tl_item;
static int cmp_item(const void *pa, const void *pb) {
    const tl_item *a = pa, *b = pb;
    if (a->s != b->s) return a->s < b->s ? -1 : 1;
    if (a->e != b->e) return a->e < b->e ? -1 : 1;
    return 0;
}
static void finish_track(tl_track *t) {
    tl_item *it = malloc((t->n ? t->n : 1) * sizeof *it);
    if (!it) abort();
    for (size_t i = 0; i < t->n; i++) it[i] = (tl_item){t->start[i], t->end[i], t->name[i]};
    qsort(it, t->n, sizeof *it, cmp_item);
    t->maxend = xrealloc(NULL, (t->n ? t->n : 1) * sizeof *t->maxend);
    uint64_t m = 0;
    for (size_t i = 0; i < t->n; i++) {
        t->start[i] = it[i].s;
        t->end[i] = it[i].e;
        t->name[i] = it[i].name;
        if (it[i].e > m) m = it[i].e;
        t->maxend[i] = m;
    }
    free(it);
}

/* Nesting depth of every span (index aligned with t->spans); cycles and
 * missing parents end the walk. */
static int *span_depths(const cg_trace *t) {
    int *d = malloc((t->n_spans ? t->n_spans : 1) * sizeof *d);
    if (!d) abort();
    for (size_t i = 0; i < t->n_spans; i++) d[i] = -1;
    for (size_t i = 0; i < t->n_spans; i++) {
        int depth = 0;
        const cg_span *s = &t->spans[i];
        while (s->parent_id && depth < 4096) {
            const cg_span *p = cg_trace_find_span(t, s->parent_id);
            if (!p) break;
            size_t pi = (size_t)(p - t->spans);
            if (d[pi] >= 0) {
                depth += d[pi] + 1;
                break;
            }
            depth++;
            s = p;
        }
        d[i] = depth;
    }
    return d;
}

static void index_free(tl_index *x) {
    if (!x) return;
    for (size_t i = 0; i < x->n_tracks; i++) {
        free(x->tracks[i].start);
        free(x->tracks[i].end);
        free(x->tracks[i].maxend);
        free(x->tracks[i].name);
        free(x->tracks[i].cs);
        free(x->tracks[i].ce);
        free(x->tracks[i].cn);
        free(x->tracks[i].cname);
    }
    free(x->tracks);
    free(x->clocks);
    cg_arena_free(&x->arena);
    free(x);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static tl_index *index_build(const char *id, const cg_trace *t) {
    tl_index *x = calloc(1, sizeof *x);
    if (!x) abort();
    snprintf(x->id, sizeof x->id, "%s", id);
    cg_arena_init(&x->arena, 0);
    ptrmap names = {0};
    tl_builder b = {.x = x, .names = &names};

    /* host clock: span lanes by depth, then one op lane */
    int *depth = span_depths(t);
    int max_depth = -1;
    for (size_t i = 0; i < t->n_spans; i++)
        if (depth[i] > max_depth) max_depth = depth[i];
    size_t first_span_track = x->n_tracks;
    for (int d = 0; d <= max_depth; d++) {
        char label[64];
        snprintf(label, sizeof label, "host spans, depth %d", d);
        add_track(&b, "span", NULL, d, label);
    }
    for (size_t i = 0; i < t->n_spans; i++) {
        const cg_span *s = &t->spans[i];
        uint64_t e = s->closed ? sat_add(s->start_ns, s->duration_ns) : s->start_ns;
        push(&x->tracks[first_span_track + (size_t)depth[i]], s->start_ns, e, intern(&b, s->name));
    }
    free(depth);
    if (t->n_ops) {
        tl_track *ot = add_track(&b, "op", NULL, -1, "host ops");
        for (size_t i = 0; i < t->n_ops; i++)
            push(ot, t->ops[i].timestamp_ns, sat_add(t->ops[i].timestamp_ns, t->ops[i].duration_ns),
                 intern(&b, t->ops[i].op_name));
    }
    size_t host_tracks = x->n_tracks;

    /* device clocks: sorted distinct clock ids, then sorted devices per clock */
    const char **clk = malloc((t->n_device_intervals ? t->n_device_intervals : 1) * sizeof *clk);
    if (!clk) abort();
    size_t nclk = 0;
    for (size_t i = 0; i < t->n_device_intervals; i++) clk[nclk++] = t->device_intervals[i].clock_id;
    qsort(clk, nclk, sizeof *clk, cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < nclk; i++)
        if (u == 0 || strcmp(clk[u - 1], clk[i]) != 0) clk[u++] = clk[i];
    nclk = u;
    x->clocks = calloc(1 + nclk, sizeof *x->clocks);
    if (!x->clocks) abort();
    x->n_clocks = 1 + nclk;
    x->clocks[0] = (tl_clock){.clock = cg_arena_strdup(&x->arena, "host"), .host = true, .first_track = 0,
                              .n_tracks = host_tracks};
    const char **devs = malloc((t->n_device_intervals ? t->n_device_intervals : 1) * sizeof *devs);
    if (!devs) abort();
    for (size_t c = 0; c < nclk; c++) {
        tl_clock *ck = &x->clocks[1 + c];
        ck->clock = cg_arena_strdup(&x->arena, clk[c]);
        ck->first_track = x->n_tracks;
        size_t nd = 0;
        for (size_t i = 0; i < t->n_device_intervals; i++)
            if (!strcmp(t->device_intervals[i].clock_id, clk[c])) devs[nd++] = t->device_intervals[i].device;
        qsort(devs, nd, sizeof *devs, cmp_str);
        size_t ud = 0;
        for (size_t i = 0; i < nd; i++)
            if (ud == 0 || strcmp(devs[ud - 1], devs[i]) != 0) devs[ud++] = devs[i];
        for (size_t k = 0; k < ud; k++) {
            char *label = cg_arena_printf(&x->arena, "device %s, clock %s", devs[k], clk[c]);
            add_track(&b, "device", devs[k], -1, label);
        }
        ck->n_tracks = x->n_tracks - ck->first_track;
    }
    for (size_t i = 0; i < t->n_device_intervals; i++) {
        const cg_device_interval *di = &t->device_intervals[i];
        for (size_t c = 1; c < x->n_clocks; c++) {
            tl_clock *ck = &x->clocks[c];
            if (strcmp(ck->clock, di->clock_id) != 0) continue;
            for (size_t k = ck->first_track; k < ck->first_track + ck->n_tracks; k++) {
                if (strcmp(x->tracks[k].device, di->device) != 0) continue;
                const cg_span *sp = di->span_id ? cg_trace_find_span(t, di->span_id) : NULL;
                push(&x->tracks[k], di->start_ns, sat_add(di->start_ns, di->duration_ns),
                     intern(&b, sp ? sp->name : di->span_id));
                break;
            }
            break;
        }
    }
    free(devs);
    free(clk);
    free(names.k);
    free(names.v);
    free(b.order);
    free(b.copies);

    for (size_t k = 0; k < x->n_tracks; k++) {
        finish_track(&x->tracks[k]);
        build_coarse(&x->tracks[k]);
    }
    for (size_t c = 0; c < x->n_clocks; c++) {
        tl_clock *ck = &x->clocks[c];
        bool any = false;
        for (size_t k = ck->first_track; k < ck->first_track + ck->n_tracks; k++) {
            tl_track *tr = &x->tracks[k];
            if (!tr->n) continue;
            if (!any || tr->start[0] < ck->min_ns) ck->min_ns = tr->start[0];
            if (!any || tr->maxend[tr->n - 1] > ck->max_ns) ck->max_ns = tr->maxend[tr->n - 1];
            any = true;
            ck->records += tr->n;
        }
    }
    return x;
}

/* ---------------------------------------------------------------- on-disk copy
 *
 * <data_dir>/timeline/<id>.idx keeps a built index across restarts (a cache:
 * native byte order, rebuilt from the trace whenever it is missing or does not
 * read back exactly). Layout: "CGTLIDX1"; u32 n_names, names (u32 len, bytes);
 * u32 n_clocks, clocks (str clock, u32 host, u64 first_track, n_tracks, min_ns,
 * max_ns, records); u32 n_tracks, tracks (str id, kind, label, device (len
 * UINT32_MAX = none), i32 depth, u64 n, u64 start[n], end[n], maxend[n],
 * u32 name[n] (UINT32_MAX = none)). */

#define IDX_MAGIC "CGTLIDX1"
#define NO_NAME UINT32_MAX

static void put_u32(cg_buf *b, uint32_t v) { cg_buf_append(b, &v, sizeof v); }
static void put_u64(cg_buf *b, uint64_t v) { cg_buf_append(b, &v, sizeof v); }
static void put_str(cg_buf *b, const char *s) {
    if (!s) {
        put_u32(b, UINT32_MAX);
        return;
    }
    size_t n = strlen(s);
    put_u32(b, (uint32_t)n);
    cg_buf_append(b, s, n);
}

/* pointer → name number (names are interned, so equal pointers = equal names) */
static int index_save(const tl_index *x, const char *path, cg_error *err) {
    ptrmap m = {0};
    const char **order = NULL;
    uint32_t **ix = calloc(x->n_tracks ? x->n_tracks : 1, sizeof *ix);
    if (!ix) abort();
    for (size_t k = 0; k < x->n_tracks; k++) {
        const tl_track *t = &x->tracks[k];
        ix[k] = xrealloc(NULL, (t->n ? t->n : 1) * sizeof **ix);
        for (size_t i = 0; i < t->n; i++) ix[k][i] = t->name[i] ? ptrmap_get(&m, t->name[i], &order) : NO_NAME;
    }
    cg_buf b = CG_BUF_INIT;
    cg_buf_append(&b, IDX_MAGIC, 8);
    put_u32(&b, (uint32_t)m.n);
    for (size_t i = 0; i < m.n; i++) put_str(&b, order[i]);
    put_u32(&b, (uint32_t)x->n_clocks);
    for (size_t c = 0; c < x->n_clocks; c++) {
        const tl_clock *ck = &x->clocks[c];
        put_str(&b, ck->clock);
        put_u32(&b, ck->host ? 1 : 0);
        put_u64(&b, ck->first_track);
        put_u64(&b, ck->n_tracks);
        put_u64(&b, ck->min_ns);
        put_u64(&b, ck->max_ns);
        put_u64(&b, ck->records);
    }
    put_u32(&b, (uint32_t)x->n_tracks);
    for (size_t k = 0; k < x->n_tracks; k++) {
        const tl_track *t = &x->tracks[k];
        put_str(&b, t->id);
        put_str(&b, t->kind);
        put_str(&b, t->label);
        put_str(&b, t->device);
        put_u32(&b, (uint32_t)(int32_t)t->depth);
        put_u64(&b, t->n);
        cg_buf_append(&b, t->start, t->n * sizeof *t->start);
        cg_buf_append(&b, t->end, t->n * sizeof *t->end);
        cg_buf_append(&b, t->maxend, t->n * sizeof *t->maxend);
        cg_buf_append(&b, ix[k], t->n * sizeof **ix);
        free(ix[k]);
    }
    free(ix);
    free(m.k);
    free(m.v);
    free(order);
    int rc = cg_write_file_atomic(path, b.data, b.len, err);
    cg_buf_free(&b);
    return rc;
}

typedef struct rd { const unsigned char *p, *end; bool ok; } rd;
static bool rd_take(rd *r, void *out, size_t n) {
    if (!r->ok || (size_t)(r->end - r->p) < n) return r->ok = false;
    memcpy(out, r->p, n);
    r->p += n;
    return true;
}
static uint32_t rd_u32(rd *r) { uint32_t v = 0; rd_take(r, &v, sizeof v); return v; }
static uint64_t rd_u64(rd *r) { uint64_t v = 0; rd_take(r, &v, sizeof v); return v; }
static char *rd_str(rd *r, cg_arena *a, bool *none) {
    uint32_t n = rd_u32(r);
    *none = r->ok && n == UINT32_MAX;
    if (!r->ok || *none) return NULL;
    if ((size_t)(r->end - r->p) < n) {
        r->ok = false;
        return NULL;
    }
    char *s = cg_arena_alloc(a, (size_t)n + 1);
    memcpy(s, r->p, n);
    s[n] = 0;
    r->p += n;
    return s;
}

/* NULL when the file is absent or does not read back as a whole, consistent index. */
static tl_index *index_load(const char *id, const char *path) {
    if (!cg_path_exists(path)) return NULL;
    cg_error err = {0};
    size_t len = 0;
    char *data = cg_read_file(path, 0, &len, &err);
    if (!data) return NULL;
    rd r = {(const unsigned char *)data, (const unsigned char *)data + len, true};
    char magic[8];
    tl_index *x = calloc(1, sizeof *x);
    if (!x) abort();
    snprintf(x->id, sizeof x->id, "%s", id);
    cg_arena_init(&x->arena, 0);
    const char **names = NULL;
    bool none = false;
    if (!rd_take(&r, magic, 8) || memcmp(magic, IDX_MAGIC, 8) != 0) r.ok = false;
    uint32_t n_names = rd_u32(&r);
    if (r.ok && n_names > (size_t)(r.end - r.p) / 4) r.ok = false;
    if (r.ok) names = xrealloc(NULL, (n_names ? n_names : 1) * sizeof *names);
    for (uint32_t i = 0; r.ok && i < n_names; i++) {
        names[i] = rd_str(&r, &x->arena, &none);
        if (none) r.ok = false;
    }
    uint32_t n_clocks = rd_u32(&r);
    if (r.ok && (n_clocks == 0 || n_clocks > (size_t)(r.end - r.p) / 48)) r.ok = false;
    if (r.ok) {
        x->clocks = calloc(n_clocks, sizeof *x->clocks);
        if (!x->clocks) abort();
        x->n_clocks = n_clocks;
    }
    for (uint32_t c = 0; r.ok && c < n_clocks; c++) {
        tl_clock *ck = &x->clocks[c];
        ck->clock = rd_str(&r, &x->arena, &none);
        if (none) r.ok = false;
        ck->host = rd_u32(&r) != 0;
        ck->first_track = (size_t)rd_u64(&r);
        ck->n_tracks = (size_t)rd_u64(&r);
        ck->min_ns = rd_u64(&r);
        ck->max_ns = rd_u64(&r);
        ck->records = (size_t)rd_u64(&r);
    }
    uint32_t n_tracks = rd_u32(&r);
    if (r.ok && n_tracks > (size_t)(r.end - r.p) / 28) r.ok = false;
    if (r.ok) {
        x->tracks = calloc(n_tracks ? n_tracks : 1, sizeof *x->tracks);
        if (!x->tracks) abort();
    }
    for (uint32_t k = 0; r.ok && k < n_tracks; k++) {
        tl_track *t = &x->tracks[k];
        x->n_tracks = (size_t)k + 1; /* so index_free releases what was read */
        t->id = rd_str(&r, &x->arena, &none);
        r.ok = r.ok && !none;
        char *kind = rd_str(&r, &x->arena, &none);
        r.ok = r.ok && !none;
        t->kind = !kind ? NULL : !strcmp(kind, "span") ? "span" : !strcmp(kind, "op") ? "op" : !strcmp(kind, "device") ? "device" : NULL;
        if (!t->kind) r.ok = false;
        t->label = rd_str(&r, &x->arena, &none);
        r.ok = r.ok && !none;
        t->device = rd_str(&r, &x->arena, &none);
        t->depth = (int)(int32_t)rd_u32(&r);
        uint64_t n = rd_u64(&r);
        if (!r.ok || n > (uint64_t)(r.end - r.p) / 28) {
            r.ok = false;
            break;
        }
        t->n = t->cap = (size_t)n;
        t->start = xrealloc(NULL, (n ? n : 1) * sizeof *t->start);
        t->end = xrealloc(NULL, (n ? n : 1) * sizeof *t->end);
        t->maxend = xrealloc(NULL, (n ? n : 1) * sizeof *t->maxend);
        t->name = xrealloc(NULL, (n ? n : 1) * sizeof *t->name);
        rd_take(&r, t->start, n * sizeof *t->start);
        rd_take(&r, t->end, n * sizeof *t->end);
        rd_take(&r, t->maxend, n * sizeof *t->maxend);
        for (size_t i = 0; r.ok && i < n; i++) {
            uint32_t v = rd_u32(&r);
            if (v != NO_NAME && v >= n_names) r.ok = false;
            t->name[i] = v == NO_NAME ? NULL : names[v];
        }
        for (size_t i = 0; r.ok && i < n; i++)
            if (t->end[i] < t->start[i] || (i && (t->start[i] < t->start[i - 1] || t->maxend[i] < t->maxend[i - 1])))
                r.ok = false;
    }
    for (uint32_t c = 0; r.ok && c < n_clocks; c++)
        if (x->clocks[c].first_track > n_tracks || x->clocks[c].n_tracks > n_tracks - x->clocks[c].first_track)
            r.ok = false;
    if (r.ok && r.p != r.end) r.ok = false;
    free(names);
    free(data);
    if (!r.ok) {
        index_free(x);
        return NULL;
    }
    for (size_t k = 0; k < x->n_tracks; k++) build_coarse(&x->tracks[k]);
    return x;
}

/* ---------------------------------------------------------------- cache */

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static tl_index *cache[CACHE_SLOTS];
static uint64_t cache_clock;

static tl_index *cache_get(const char *id) {
    tl_index *hit = NULL;
    pthread_mutex_lock(&cache_mu);
    for (size_t i = 0; i < CACHE_SLOTS; i++)
        if (cache[i] && !strcmp(cache[i]->id, id)) {
            hit = cache[i];
            hit->refs++;
            hit->last_use = ++cache_clock;
            break;
        }
    pthread_mutex_unlock(&cache_mu);
    return hit;
}

/* Inserts x (a fresh index with refs 0) unless another request did first;
 * returns the cached entry with one reference taken. */
static tl_index *cache_put(tl_index *x) {
    tl_index *drop = NULL, *out = x;
    pthread_mutex_lock(&cache_mu);
    for (size_t i = 0; i < CACHE_SLOTS; i++)
        if (cache[i] && !strcmp(cache[i]->id, x->id)) out = cache[i];
    if (out != x) {
        drop = x;
    } else {
        size_t slot = CACHE_SLOTS;
        for (size_t i = 0; i < CACHE_SLOTS && slot == CACHE_SLOTS; i++)
            if (!cache[i]) slot = i;
        if (slot == CACHE_SLOTS) { /* evict the least recently used entry nobody holds */
            for (size_t i = 0; i < CACHE_SLOTS; i++)
                if (cache[i]->refs == 0 && (slot == CACHE_SLOTS || cache[i]->last_use < cache[slot]->last_use))
                    slot = i;
            if (slot != CACHE_SLOTS) drop = cache[slot];
        }
        if (slot != CACHE_SLOTS) cache[slot] = x;
        else x->refs = UINT32_MAX / 2; /* every slot busy: serve uncached, freed by release */
    }
    out->refs++;
    out->last_use = ++cache_clock;
    pthread_mutex_unlock(&cache_mu);
    index_free(drop);
    return out;
}

static void cache_release(tl_index *x) {
    bool free_it = false;
    pthread_mutex_lock(&cache_mu);
    x->refs--;
    if (x->refs == UINT32_MAX / 2) free_it = true; /* the uncached case above */
    pthread_mutex_unlock(&cache_mu);
    if (free_it) index_free(x);
}

void srv_timeline_cache_clear(void) {
    pthread_mutex_lock(&cache_mu);
    for (size_t i = 0; i < CACHE_SLOTS; i++)
        if (cache[i] && cache[i]->refs == 0) {
            index_free(cache[i]);
            cache[i] = NULL;
        }
    pthread_mutex_unlock(&cache_mu);
}

/* ---------------------------------------------------------------- query */

/* Merges t's intervals with gap coarse_gap into the coarse level (same rule as
 * a query: the next interval joins when it starts within the gap of the box's
 * end; a box keeps a name only when all its intervals share it). Merging these
 * boxes again with any gap >= coarse_gap gives exactly what merging the
 * intervals with that gap gives, so whole-track windows cost O(boxes). */
static void build_coarse(tl_track *t) {
    if (!t->n) return;
    uint64_t g = (t->maxend[t->n - 1] - t->start[0]) / COARSE_BOXES;
    t->coarse_gap = g ? g : 1;
    size_t cap = 64;
    t->cs = xrealloc(NULL, cap * sizeof *t->cs);
    t->ce = xrealloc(NULL, cap * sizeof *t->ce);
    t->cn = xrealloc(NULL, cap * sizeof *t->cn);
    t->cname = xrealloc(NULL, cap * sizeof *t->cname);
    for (size_t i = 0; i < t->n; i++) {
        if (t->nc && t->start[i] <= sat_add(t->ce[t->nc - 1], t->coarse_gap)) {
            size_t k = t->nc - 1;
            if (t->end[i] > t->ce[k]) t->ce[k] = t->end[i];
            if (t->cname[k] != t->name[i]) t->cname[k] = NULL;
            t->cn[k]++;
            continue;
        }
        if (t->nc == cap) {
            cap *= 2;
            t->cs = xrealloc(t->cs, cap * sizeof *t->cs);
            t->ce = xrealloc(t->ce, cap * sizeof *t->ce);
            t->cn = xrealloc(t->cn, cap * sizeof *t->cn);
            t->cname = xrealloc(t->cname, cap * sizeof *t->cname);
        }
        t->cs[t->nc] = t->start[i];
        t->ce[t->nc] = t->end[i];
        t->cn[t->nc] = 1;
        t->cname[t->nc] = t->name[i];
        t->nc++;
    }
}

static size_t first_overlap(const tl_track *t, uint64_t qs) {
    size_t lo = 0, hi = t->n; /* first i with maxend[i] >= qs */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->maxend[mid] >= qs) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

static cg_jv *track_json(cg_arena *a, const tl_track *t, uint64_t qs, uint64_t qe, unsigned px) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "id", cg_jv_str(a, t->id));
    cg_jv_obj_put(a, o, "kind", cg_jv_str(a, t->kind));
    cg_jv_obj_put(a, o, "label", cg_jv_str(a, t->label));
    cg_jv_obj_put(a, o, "device", t->device ? cg_jv_str(a, t->device) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "depth", t->depth >= 0 ? cg_jv_u64(a, (uint64_t)t->depth) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "records", cg_jv_u64(a, t->n));
    cg_jv *boxes = cg_jv_arr(a);
    uint64_t w = (qe - qs) / px;
    if (w == 0) w = 1;
    uint64_t in_window = 0, bs = 0, be = 0, bn = 0;
    const char *bname = NULL;
    /* a window holding the whole track at coarse_gap per pixel or coarser reads the coarse level */
    bool coarse = t->nc && qs <= t->start[0] && qe > t->maxend[t->n - 1] && w >= t->coarse_gap;
    const uint64_t *S = coarse ? t->cs : t->start, *E = coarse ? t->ce : t->end;
    const char *const *NM = coarse ? t->cname : t->name;
    size_t n = coarse ? t->nc : t->n;
    for (size_t i = coarse ? 0 : first_overlap(t, qs); i < n && S[i] < qe; i++) {
        uint64_t s = S[i], e = E[i], c = coarse ? t->cn[i] : 1;
        if (e < qs || (e == qs && s < qs)) continue;
        in_window += c;
        if (bn && s <= sat_add(be, w)) {
            if (e > be) be = e;
            if (bname != NM[i]) bname = NULL;
            bn += c;
            continue;
        }
        if (bn) {
            cg_jv *bx = cg_jv_arr(a);
            cg_jv_arr_push(a, bx, cg_jv_u64(a, bs));
            cg_jv_arr_push(a, bx, cg_jv_u64(a, be));
            cg_jv_arr_push(a, bx, cg_jv_u64(a, bn));
            cg_jv_arr_push(a, bx, bname ? cg_jv_str_nocopy(a, bname) : cg_jv_null(a));
            cg_jv_arr_push(a, boxes, bx);
        }
        bs = s;
        be = e;
        bn = c;
        bname = NM[i];
    }
    if (bn) {
        cg_jv *bx = cg_jv_arr(a);
        cg_jv_arr_push(a, bx, cg_jv_u64(a, bs));
        cg_jv_arr_push(a, bx, cg_jv_u64(a, be));
        cg_jv_arr_push(a, bx, cg_jv_u64(a, bn));
        cg_jv_arr_push(a, bx, bname ? cg_jv_str_nocopy(a, bname) : cg_jv_null(a));
        cg_jv_arr_push(a, boxes, bx);
    }
    cg_jv_obj_put(a, o, "window_records", cg_jv_u64(a, in_window));
    cg_jv_obj_put(a, o, "boxes", boxes);
    return o;
}

static bool parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s || *s == '-' || *s == '+' || *s == ' ') return false;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || !end || *end) return false;
    *out = (uint64_t)v;
    return true;
}

static double ms_since(const struct timespec *t0) {
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

typedef enum { LOAD_OK = 0, LOAD_UNAVAILABLE, LOAD_NO_TRACE, LOAD_STORE, LOAD_INVALID } load_status;

/* Reads trace.jsonl of bundle id into a fresh index. Always returns c to the
 * pool (before parsing). On failure returns NULL with *st and err set. */
static tl_index *load_index(srv_server *s, PGconn *c, const char *id, load_status *st, cg_error *err) {
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char dir[PATH_MAX + 16], path[PATH_MAX + 96];
    snprintf(dir, sizeof dir, "%s/timeline", s->cfg.data_dir);
    snprintf(path, sizeof path, "%s/%s.idx", dir, id);
    tl_index *saved = index_load(id, path);
    if (saved) {
        srv_pool_put(s->pool, c);
        char l_ms[32];
        snprintf(l_ms, sizeof l_ms, "%.1f", ms_since(&t0));
        srv_log("info", "timeline index loaded", "id", id, "load_ms", l_ms, NULL);
        *st = LOAD_OK;
        return saved;
    }
    const char *p[1] = {id};
    PGresult *x = srv_q(c, "SELECT sha256 FROM bundle_files WHERE bundle_id = $1 AND path = 'trace.jsonl'", 1, p, NULL,
                        NULL, err);
    if (!x) {
        srv_pool_put(s->pool, c);
        *st = LOAD_UNAVAILABLE;
        return NULL;
    }
    if (PQntuples(x) != 1) {
        PQclear(x);
        srv_pool_put(s->pool, c);
        cg_err_set(err, CG_EIO, "bundle %s has no trace.jsonl", id);
        *st = LOAD_NO_TRACE;
        return NULL;
    }
    char hex[65];
    snprintf(hex, sizeof hex, "%s", PQgetvalue(x, 0, 0));
    PQclear(x);
    size_t len = 0;
    char *data = srv_blob_read(&s->blobs, c, hex, (size_t)s->cfg.max_decoded_bytes, &len, err);
    srv_pool_put(s->pool, c);
    if (!data) {
        *st = LOAD_STORE;
        return NULL;
    }
    double read_ms = ms_since(&t0);
    cg_trace *t = cg_trace_read_mem(data, len, "trace.jsonl", NULL, err);
    free(data);
    if (!t) {
        *st = LOAD_INVALID;
        return NULL;
    }
    double parse_ms = ms_since(&t0) - read_ms;
    tl_index *ix = index_build(id, t);
    cg_trace_free(t);
    size_t records = 0;
    for (size_t k = 0; k < ix->n_tracks; k++) records += ix->tracks[k].n;
    char rec[32], r_ms[32], p_ms[32], b_ms[32];
    snprintf(rec, sizeof rec, "%zu", records);
    snprintf(r_ms, sizeof r_ms, "%.1f", read_ms);
    snprintf(p_ms, sizeof p_ms, "%.1f", parse_ms);
    snprintf(b_ms, sizeof b_ms, "%.1f", ms_since(&t0) - read_ms - parse_ms);
    srv_log("info", "timeline index built", "id", id, "intervals", rec, "read_ms", r_ms, "parse_ms", p_ms, "build_ms", b_ms,
            NULL);
    cg_error serr = {0};
    if (cg_mkdir_p(dir, &serr) < 0 || index_save(ix, path, &serr) < 0)
        srv_log("warning", "timeline index not saved", "id", id, "error", serr.msg, NULL);
    *st = LOAD_OK;
    return ix;
}

/* One build per bundle at a time: a request for an index that another thread
 * is building waits for it instead of parsing the trace again. */
#define BUILDING_SLOTS 8
static pthread_cond_t build_cv = PTHREAD_COND_INITIALIZER;
static char building[BUILDING_SLOTS][65]; /* "" = free; guarded by cache_mu */

static tl_index *find_locked(const char *id) {
    for (size_t i = 0; i < CACHE_SLOTS; i++)
        if (cache[i] && !strcmp(cache[i]->id, id)) return cache[i];
    return NULL;
}

/* The cached index of id with a reference taken (cache_release it), building it
 * from the store when needed. Always returns c to the pool. NULL with *st/err. */
static tl_index *acquire(srv_server *s, PGconn *c, const char *id, load_status *st, cg_error *err) {
    int slot = -1;
    pthread_mutex_lock(&cache_mu);
    for (;;) {
        tl_index *hit = find_locked(id);
        if (hit) {
            hit->refs++;
            hit->last_use = ++cache_clock;
            pthread_mutex_unlock(&cache_mu);
            srv_pool_put(s->pool, c);
            *st = LOAD_OK;
            return hit;
        }
        bool busy = false;
        for (size_t i = 0; i < BUILDING_SLOTS; i++)
            if (!strcmp(building[i], id)) busy = true;
        if (!busy) break;
        pthread_cond_wait(&build_cv, &cache_mu);
    }
    for (size_t i = 0; i < BUILDING_SLOTS && slot < 0; i++)
        if (!building[i][0]) {
            slot = (int)i;
            snprintf(building[i], sizeof building[i], "%s", id);
        }
    pthread_mutex_unlock(&cache_mu);
    tl_index *x = load_index(s, c, id, st, err);
    tl_index *out = x ? cache_put(x) : NULL;
    if (slot >= 0) {
        pthread_mutex_lock(&cache_mu);
        building[slot][0] = 0;
        pthread_cond_broadcast(&build_cv);
        pthread_mutex_unlock(&cache_mu);
    }
    return out;
}

/* ---------------------------------------------------------------- warming after upload */

#define WARM_QUEUE 16
static pthread_mutex_t warm_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t warm_cv = PTHREAD_COND_INITIALIZER;
static char warm_ids[WARM_QUEUE][65];
static size_t warm_n;
static bool warm_started, warm_stopping;
static pthread_t warm_thread;
static srv_server *warm_server;

static void *warm_main(void *arg) {
    (void)arg;
    for (;;) {
        char id[65];
        pthread_mutex_lock(&warm_mu);
        while (!warm_n && !warm_stopping) pthread_cond_wait(&warm_cv, &warm_mu);
        if (warm_stopping) {
            pthread_mutex_unlock(&warm_mu);
            return NULL;
        }
        memcpy(id, warm_ids[0], sizeof id);
        memmove(warm_ids[0], warm_ids[1], (warm_n - 1) * sizeof warm_ids[0]);
        warm_n--;
        pthread_mutex_unlock(&warm_mu);
        tl_index *hit = cache_get(id);
        if (hit) {
            cache_release(hit);
            continue;
        }
        cg_error err = {0};
        PGconn *c = srv_pool_get(warm_server->pool, &err);
        if (!c) continue;
        load_status st;
        tl_index *ix = acquire(warm_server, c, id, &st, &err);
        if (ix) cache_release(ix);
    }
}

void srv_timeline_warm(srv_server *s, const char *id) {
    pthread_mutex_lock(&warm_mu);
    if (!warm_started && !warm_stopping) {
        warm_server = s;
        warm_started = pthread_create(&warm_thread, NULL, warm_main, NULL) == 0;
    }
    if (warm_started && !warm_stopping && warm_n < WARM_QUEUE && strlen(id) == 64) {
        memcpy(warm_ids[warm_n++], id, 65);
        pthread_cond_signal(&warm_cv);
    }
    pthread_mutex_unlock(&warm_mu);
}

void srv_timeline_stop(void) {
    pthread_mutex_lock(&warm_mu);
    warm_stopping = true;
    bool join = warm_started;
    pthread_cond_broadcast(&warm_cv);
    pthread_mutex_unlock(&warm_mu);
    if (join) pthread_join(warm_thread, NULL);
    srv_timeline_cache_clear();
}

enum MHD_Result srv_h_bundle_timeline(srv_req *r) {
    cg_arena *a = &r->arena;
    uint64_t qs = 0, qe = 0, pxv = PX_DEFAULT;
    const char *s_start = srv_query(r, "start_ns"), *s_end = srv_query(r, "end_ns"), *s_px = srv_query(r, "px");
    const char *clock = srv_query(r, "clock");
    if (!clock || !*clock) clock = "host";
    if (s_start && *s_start && !parse_u64(s_start, &qs))
        return srv_fail(r, "invalid_parameter", NULL, "start_ns must be a non-negative integer");
    if (s_end && *s_end && !parse_u64(s_end, &qe))
        return srv_fail(r, "invalid_parameter", NULL, "end_ns must be a non-negative integer");
    if (s_px && *s_px && (!parse_u64(s_px, &pxv) || pxv < 1 || pxv > PX_MAX))
        return srv_fail(r, "invalid_parameter", NULL, "px must be an integer from 1 to %d", PX_MAX);

    cg_error err = {0};
    PGconn *c = srv_pool_get(r->s->pool, &err);
    if (!c) return srv_fail_unavailable(r, &err);
    /* resolve the id (full or unique prefix of >= 12 hex) */
    const char *pid = r->params[0];
    size_t n = strlen(pid);
    bool hex = n >= 12 && n <= 64;
    for (size_t i = 0; hex && i < n; i++) hex = (pid[i] >= '0' && pid[i] <= '9') || (pid[i] >= 'a' && pid[i] <= 'f');
    if (!hex) {
        srv_pool_put(r->s->pool, c);
        return srv_fail(r, "invalid_parameter", NULL, "a bundle id is 12 to 64 lowercase hex characters");
    }
    const char *q[1] = {cg_arena_printf(a, "%s%%", pid)};
    PGresult *x = srv_q(c, "SELECT id FROM bundles WHERE id LIKE $1 ORDER BY id LIMIT 2", 1, q, NULL, NULL, &err);
    if (!x) {
        srv_pool_put(r->s->pool, c);
        return srv_fail_unavailable(r, &err);
    }
    int rows = PQntuples(x);
    char id[65] = "";
    if (rows == 1) snprintf(id, sizeof id, "%s", PQgetvalue(x, 0, 0));
    PQclear(x);
    if (rows != 1) {
        srv_pool_put(r->s->pool, c);
        return rows == 0 ? srv_fail(r, "not_found", NULL, "no bundle with id %s", pid)
                         : srv_fail(r, "invalid_parameter", NULL, "bundle id prefix %s is ambiguous", pid);
    }

    load_status st;
    tl_index *ix = acquire(r->s, c, id, &st, &err);
    if (!ix) {
        if (st == LOAD_UNAVAILABLE) return srv_fail_unavailable(r, &err);
        if (st == LOAD_NO_TRACE) return srv_fail(r, "not_found", NULL, "%s", err.msg);
        if (st == LOAD_INVALID) return srv_fail(r, "trace_invalid", NULL, "%s", err.msg);
        return srv_fail(r, "internal", NULL, "cannot read trace.jsonl of bundle %s: %s", id, err.msg);
    }

    const tl_clock *ck = NULL;
    for (size_t i = 0; i < ix->n_clocks && !ck; i++)
        if (!strcmp(ix->clocks[i].clock, clock)) ck = &ix->clocks[i];
    if (!ck) {
        cache_release(ix);
        return srv_fail(r, "invalid_parameter", NULL, "this trace has no clock %s", clock);
    }
    if (!s_start || !*s_start) qs = ck->min_ns;
    if (!s_end || !*s_end) qe = ck->max_ns > ck->min_ns ? ck->max_ns + 1 : ck->min_ns + 1;
    if (qe <= qs) {
        cache_release(ix);
        return srv_fail(r, "invalid_parameter", NULL, "end_ns must be greater than start_ns");
    }

    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "schema", cg_jv_str(a, "candle-graph/timeline/1"));
    cg_jv_obj_put(a, o, "id", cg_jv_str(a, id));
    cg_jv_obj_put(a, o, "clock", cg_jv_str(a, ck->clock));
    cg_jv_obj_put(a, o, "start_ns", cg_jv_u64(a, qs));
    cg_jv_obj_put(a, o, "end_ns", cg_jv_u64(a, qe));
    cg_jv_obj_put(a, o, "px", cg_jv_u64(a, pxv));
    cg_jv *clocks = cg_jv_arr(a);
    for (size_t i = 0; i < ix->n_clocks; i++) {
        const tl_clock *k = &ix->clocks[i];
        cg_jv *co = cg_jv_obj(a);
        cg_jv_obj_put(a, co, "clock", cg_jv_str(a, k->clock));
        cg_jv_obj_put(a, co, "kind", cg_jv_str(a, k->host ? "host" : "device"));
        cg_jv *devs = cg_jv_arr(a);
        for (size_t t = k->first_track; !k->host && t < k->first_track + k->n_tracks; t++)
            cg_jv_arr_push(a, devs, cg_jv_str(a, ix->tracks[t].device));
        cg_jv_obj_put(a, co, "devices", devs);
        cg_jv_obj_put(a, co, "min_ns", cg_jv_u64(a, k->min_ns));
        cg_jv_obj_put(a, co, "max_ns", cg_jv_u64(a, k->max_ns));
        cg_jv_obj_put(a, co, "records", cg_jv_u64(a, k->records));
        cg_jv_arr_push(a, clocks, co);
    }
    cg_jv_obj_put(a, o, "clocks", clocks);
    cg_jv *tracks = cg_jv_arr(a);
    for (size_t t = ck->first_track; t < ck->first_track + ck->n_tracks; t++)
        cg_jv_arr_push(a, tracks, track_json(a, &ix->tracks[t], qs, qe, (unsigned)pxv));
    cg_jv_obj_put(a, o, "tracks", tracks);
    /* the names in o point into the index: write the answer before releasing it */
    enum MHD_Result res = srv_reply_json(r, 200, o);
    cache_release(ix);
    return res;
}
