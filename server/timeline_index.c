/* timeline_index.c — the Timeline index of a bundle (srv_timeline.h): built
 * once from trace.jsonl (sorted intervals per track, a running maximum of their
 * ends, names copied once, a coarse level for whole-track windows), saved to
 * <data_dir>/timeline/<id>.idx and read back after a restart, and kept in a
 * small LRU cache that lives in the server (srv_server.timeline), with one
 * build per bundle at a time and a background worker that builds the index of
 * each freshly published bundle. */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/fs.h"
#include "base/alloc.h"
#include "base/hmap.h"
#include "srv_cache.h"
#include "srv_store.h"
#include "srv_timeline.h"
#include "srv_views.h"
#include "srv_web.h"
#include "trace/trace.h"

#define CACHE_SLOTS 4
#define COARSE_BOXES 8192

/* ---------------------------------------------------------------- state (one per server) */

#define WARM_QUEUE 16

struct srv_timeline {
    srv_server *server;
    srv_cache cache; /* of srv_tl_index (item first) */
    pthread_mutex_t warm_mu;
    pthread_cond_t warm_cv;
    char warm_ids[WARM_QUEUE][65]; /* guarded by warm_mu */
    size_t warm_n;
    bool warm_started, warm_stopping;
    pthread_t warm_thread;
};

static void free_item(srv_cache_item *it);

/* The server's timeline state, created on first use (the first creator wins). */
static struct srv_timeline *tl_of(srv_server *s) {
    struct srv_timeline *T = atomic_load(&s->timeline);
    if (T) return T;
    struct srv_timeline *n = cg_xzalloc(1, sizeof *n);
    n->server = s;
    srv_cache_init(&n->cache, CACHE_SLOTS, UINT64_MAX, free_item);
    pthread_mutex_init(&n->warm_mu, NULL);
    pthread_cond_init(&n->warm_cv, NULL);
    if (atomic_compare_exchange_strong(&s->timeline, &T, n)) return n;
    srv_cache_destroy(&n->cache);
    pthread_mutex_destroy(&n->warm_mu);
    pthread_cond_destroy(&n->warm_cv);
    cg_free(n);
    return T; /* set by the winner */
}

static void build_coarse(srv_tl_track *t);

/* ---------------------------------------------------------------- building */

typedef struct tl_builder {
    srv_tl_index *x;
    size_t cap_tracks;
    /* pointer-keyed intern of names (trace strings are mostly interned): names maps a
     * trace string to its index in copies (arena copies owned by the index) */
    struct ptrmap *names;
    size_t cap_copies;
    const char **copies;
} tl_builder;

/* Pointer-keyed map (base/hmap.h): keys are kept in insertion order, and the
 * value of a key is its insertion index. */
typedef struct ptrmap {
    const char **order;
    size_t n, cap;
    cg_hmap index;
} ptrmap;

static bool ptr_eq(const void *ctx, uint32_t id, const void *key) {
    return ((const ptrmap *)ctx)->order[id] == key;
}

static uint32_t ptrmap_get(ptrmap *m, const char *p) {
    if (!m->index.slot) cg_hmap_init(&m->index, 512);
    uint64_t h = cg_hmap_mix((uintptr_t)p, 0);
    size_t at = 0;
    uint32_t id = cg_hmap_find(&m->index, h, ptr_eq, m, p, &at);
    if (id != CG_HMAP_NONE) return id;
    m->order = cg_xgrow(m->order, &m->cap, m->n + 1, sizeof *m->order);
    m->order[m->n] = p;
    cg_hmap_put_at(&m->index, at, h, (uint32_t)m->n);
    return (uint32_t)m->n++;
}

static void ptrmap_free(ptrmap *m) {
    cg_free(m->order);
    cg_hmap_free(&m->index);
}

static const char *intern(tl_builder *b, const char *s) {
    if (!s) return NULL;
    size_t before = b->names->n;
    uint32_t i = ptrmap_get(b->names, s);
    if (b->names->n != before) {
        b->copies = cg_xgrow(b->copies, &b->cap_copies, b->names->n, sizeof *b->copies);
        b->copies[i] = cg_arena_strdup(&b->x->arena, s);
    }
    return b->copies[i];
}

static srv_tl_track *add_track(tl_builder *b, const char *kind, const char *device, int depth, const char *label) {
    srv_tl_index *x = b->x;
    if (x->n_tracks == b->cap_tracks) {
        b->cap_tracks = b->cap_tracks ? b->cap_tracks * 2 : 8;
        x->tracks = cg_xrealloc(x->tracks, b->cap_tracks, sizeof *x->tracks);
    }
    srv_tl_track *t = &x->tracks[x->n_tracks++];
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->depth = depth;
    t->device = device ? cg_arena_strdup(&x->arena, device) : NULL;
    t->label = cg_arena_strdup(&x->arena, label);
    t->id = cg_arena_printf(&x->arena, "t%zu", x->n_tracks - 1);
    return t;
}

static void push(srv_tl_track *t, uint64_t s, uint64_t e, const char *name) {
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        t->start = cg_xrealloc(t->start, t->cap, sizeof *t->start);
        t->end = cg_xrealloc(t->end, t->cap, sizeof *t->end);
        t->name = cg_xrealloc(t->name, t->cap, sizeof *t->name);
    }
    t->start[t->n] = s;
    t->end[t->n] = e < s ? s : e;
    t->name[t->n] = name;
    t->n++;
}

/* Sorts a track by (start, end) and computes the running maximum of ends. */
typedef struct tl_item { uint64_t s, e; const char *name; } tl_item;
static int cmp_item(const void *pa, const void *pb) {
    const tl_item *a = pa, *b = pb;
    if (a->s != b->s) return a->s < b->s ? -1 : 1;
    if (a->e != b->e) return a->e < b->e ? -1 : 1;
    return 0;
}
static void finish_track(srv_tl_track *t) {
    tl_item *it = cg_xalloc(t->n, sizeof *it);
    for (size_t i = 0; i < t->n; i++) it[i] = (tl_item){t->start[i], t->end[i], t->name[i]};
    qsort(it, t->n, sizeof *it, cmp_item);
    t->maxend = cg_xrealloc(NULL, (t->n ? t->n : 1), sizeof *t->maxend);
    uint64_t m = 0;
    for (size_t i = 0; i < t->n; i++) {
        t->start[i] = it[i].s;
        t->end[i] = it[i].e;
        t->name[i] = it[i].name;
        if (it[i].e > m) m = it[i].e;
        t->maxend[i] = m;
    }
    cg_free(it);
}

/* Nesting depth of every span (index aligned with t->spans); cycles and
 * missing parents end the walk. */
int *srv_tl_span_depths(const cg_trace *t) {
    int *d = cg_xalloc(t->n_spans ? t->n_spans : 1, sizeof *d);
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

static void index_free(srv_tl_index *x) {
    if (!x) return;
    for (size_t i = 0; i < x->n_tracks; i++) {
        cg_free(x->tracks[i].start);
        cg_free(x->tracks[i].end);
        cg_free(x->tracks[i].maxend);
        cg_free(x->tracks[i].name);
        cg_free(x->tracks[i].cs);
        cg_free(x->tracks[i].ce);
        cg_free(x->tracks[i].cn);
        cg_free(x->tracks[i].cname);
    }
    cg_free(x->tracks);
    cg_free(x->clocks);
    cg_arena_free(&x->arena);
    cg_free(x);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static srv_tl_index *index_build(const char *id, const cg_trace *t) {
    srv_tl_index *x = cg_xzalloc(1, sizeof *x);
    snprintf(x->item.id, sizeof x->item.id, "%s", id);
    cg_arena_init(&x->arena, 0);
    ptrmap names = {0};
    tl_builder b = {.x = x, .names = &names};

    /* host clock: span lanes by depth, then one op lane */
    int *depth = srv_tl_span_depths(t);
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
        uint64_t e = s->closed ? cg_sat_add_u64(s->start_ns, s->duration_ns) : s->start_ns;
        push(&x->tracks[first_span_track + (size_t)depth[i]], s->start_ns, e, intern(&b, s->name));
    }
    cg_free(depth);
    if (t->n_ops) {
        srv_tl_track *ot = add_track(&b, "op", NULL, -1, "host ops");
        for (size_t i = 0; i < t->n_ops; i++)
            push(ot, t->ops[i].timestamp_ns, cg_sat_add_u64(t->ops[i].timestamp_ns, t->ops[i].duration_ns),
                 intern(&b, t->ops[i].op_name));
    }
    size_t host_tracks = x->n_tracks;

    /* device clocks: sorted distinct clock ids, then sorted devices per clock */
    const char **clk = cg_xalloc(t->n_device_intervals, sizeof *clk);
    size_t nclk = 0;
    for (size_t i = 0; i < t->n_device_intervals; i++) clk[nclk++] = t->device_intervals[i].clock_id;
    qsort(clk, nclk, sizeof *clk, cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < nclk; i++)
        if (u == 0 || strcmp(clk[u - 1], clk[i]) != 0) clk[u++] = clk[i];
    nclk = u;
    x->clocks = cg_xzalloc(1 + nclk, sizeof *x->clocks);
    x->n_clocks = 1 + nclk;
    x->clocks[0] = (srv_tl_clock){.clock = cg_arena_strdup(&x->arena, "host"), .host = true, .first_track = 0,
                              .n_tracks = host_tracks};
    const char **devs = cg_xalloc(t->n_device_intervals, sizeof *devs);
    for (size_t c = 0; c < nclk; c++) {
        srv_tl_clock *ck = &x->clocks[1 + c];
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
            srv_tl_clock *ck = &x->clocks[c];
            if (strcmp(ck->clock, di->clock_id) != 0) continue;
            for (size_t k = ck->first_track; k < ck->first_track + ck->n_tracks; k++) {
                if (strcmp(x->tracks[k].device, di->device) != 0) continue;
                const cg_span *sp = di->span_id ? cg_trace_find_span(t, di->span_id) : NULL;
                push(&x->tracks[k], di->start_ns, cg_sat_add_u64(di->start_ns, di->duration_ns),
                     intern(&b, sp ? sp->name : di->span_id));
                break;
            }
            break;
        }
    }
    cg_free(devs);
    cg_free(clk);
    ptrmap_free(&names);
    cg_free(b.copies);

    for (size_t k = 0; k < x->n_tracks; k++) {
        finish_track(&x->tracks[k]);
        build_coarse(&x->tracks[k]);
    }
    for (size_t c = 0; c < x->n_clocks; c++) {
        srv_tl_clock *ck = &x->clocks[c];
        bool any = false;
        for (size_t k = ck->first_track; k < ck->first_track + ck->n_tracks; k++) {
            srv_tl_track *tr = &x->tracks[k];
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
static int index_save(const srv_tl_index *x, const char *path, cg_error *err) {
    ptrmap m = {0};
    uint32_t **ix = cg_xzalloc(x->n_tracks, sizeof *ix);
    for (size_t k = 0; k < x->n_tracks; k++) {
        const srv_tl_track *t = &x->tracks[k];
        ix[k] = cg_xrealloc(NULL, (t->n ? t->n : 1), sizeof **ix);
        for (size_t i = 0; i < t->n; i++) ix[k][i] = t->name[i] ? ptrmap_get(&m, t->name[i]) : NO_NAME;
    }
    cg_buf b = CG_BUF_INIT;
    cg_buf_append(&b, IDX_MAGIC, 8);
    put_u32(&b, (uint32_t)m.n);
    for (size_t i = 0; i < m.n; i++) put_str(&b, m.order[i]);
    put_u32(&b, (uint32_t)x->n_clocks);
    for (size_t c = 0; c < x->n_clocks; c++) {
        const srv_tl_clock *ck = &x->clocks[c];
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
        const srv_tl_track *t = &x->tracks[k];
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
        cg_free(ix[k]);
    }
    cg_free(ix);
    ptrmap_free(&m);
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
static srv_tl_index *index_load(const char *id, const char *path) {
    if (!cg_path_exists(path)) return NULL;
    cg_error err = {0};
    size_t len = 0;
    char *data = cg_read_file(path, 0, &len, &err);
    if (!data) return NULL;
    rd r = {(const unsigned char *)data, (const unsigned char *)data + len, true};
    char magic[8];
    srv_tl_index *x = cg_xzalloc(1, sizeof *x);
    snprintf(x->item.id, sizeof x->item.id, "%s", id);
    cg_arena_init(&x->arena, 0);
    const char **names = NULL;
    bool none = false;
    if (!rd_take(&r, magic, 8) || memcmp(magic, IDX_MAGIC, 8) != 0) r.ok = false;
    uint32_t n_names = rd_u32(&r);
    if (r.ok && n_names > (size_t)(r.end - r.p) / 4) r.ok = false;
    if (r.ok) names = cg_xrealloc(NULL, (n_names ? n_names : 1), sizeof *names);
    for (uint32_t i = 0; r.ok && i < n_names; i++) {
        names[i] = rd_str(&r, &x->arena, &none);
        if (none) r.ok = false;
    }
    uint32_t n_clocks = rd_u32(&r);
    if (r.ok && (n_clocks == 0 || n_clocks > (size_t)(r.end - r.p) / 48)) r.ok = false;
    if (r.ok) {
        x->clocks = cg_xzalloc(n_clocks, sizeof *x->clocks);
        x->n_clocks = n_clocks;
    }
    for (uint32_t c = 0; r.ok && c < n_clocks; c++) {
        srv_tl_clock *ck = &x->clocks[c];
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
        x->tracks = cg_xzalloc(n_tracks, sizeof *x->tracks);
    }
    for (uint32_t k = 0; r.ok && k < n_tracks; k++) {
        srv_tl_track *t = &x->tracks[k];
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
        t->start = cg_xrealloc(NULL, (n ? n : 1), sizeof *t->start);
        t->end = cg_xrealloc(NULL, (n ? n : 1), sizeof *t->end);
        t->maxend = cg_xrealloc(NULL, (n ? n : 1), sizeof *t->maxend);
        t->name = cg_xrealloc(NULL, (n ? n : 1), sizeof *t->name);
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
    cg_free(names);
    cg_free(data);
    if (!r.ok) {
        index_free(x);
        return NULL;
    }
    for (size_t k = 0; k < x->n_tracks; k++) build_coarse(&x->tracks[k]);
    return x;
}

/* ---------------------------------------------------------------- cache */

static void free_item(srv_cache_item *it) { index_free((srv_tl_index *)it); }

/* ---------------------------------------------------------------- query */

/* Merges t's intervals with gap coarse_gap into the coarse level (same rule as
 * a query: the next interval joins when it starts within the gap of the box's
 * end; a box keeps a name only when all its intervals share it). Merging these
 * boxes again with any gap >= coarse_gap gives exactly what merging the
 * intervals with that gap gives, so whole-track windows cost O(boxes). */
static void build_coarse(srv_tl_track *t) {
    if (!t->n) return;
    uint64_t g = (t->maxend[t->n - 1] - t->start[0]) / COARSE_BOXES;
    t->coarse_gap = g ? g : 1;
    size_t cap = 64;
    t->cs = cg_xrealloc(NULL, cap, sizeof *t->cs);
    t->ce = cg_xrealloc(NULL, cap, sizeof *t->ce);
    t->cn = cg_xrealloc(NULL, cap, sizeof *t->cn);
    t->cname = cg_xrealloc(NULL, cap, sizeof *t->cname);
    for (size_t i = 0; i < t->n; i++) {
        if (t->nc && t->start[i] <= cg_sat_add_u64(t->ce[t->nc - 1], t->coarse_gap)) {
            size_t k = t->nc - 1;
            if (t->end[i] > t->ce[k]) t->ce[k] = t->end[i];
            if (t->cname[k] != t->name[i]) t->cname[k] = NULL;
            t->cn[k]++;
            continue;
        }
        if (t->nc == cap) {
            cap *= 2;
            t->cs = cg_xrealloc(t->cs, cap, sizeof *t->cs);
            t->ce = cg_xrealloc(t->ce, cap, sizeof *t->ce);
            t->cn = cg_xrealloc(t->cn, cap, sizeof *t->cn);
            t->cname = cg_xrealloc(t->cname, cap, sizeof *t->cname);
        }
        t->cs[t->nc] = t->start[i];
        t->ce[t->nc] = t->end[i];
        t->cn[t->nc] = 1;
        t->cname[t->nc] = t->name[i];
        t->nc++;
    }
}

static double ms_since(const struct timespec *t0) {
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}



static void index_paths(const srv_server *s, const char *id, char *dir, size_t dl, char *path, size_t pl) {
    snprintf(dir, dl, "%s/timeline", s->cfg.data_dir);
    snprintf(path, pl, "%s/%s.idx", dir, id);
}

/* Logs the build of ix (read, parse and build times in ms) and saves it at path. */
static void log_saved(const srv_tl_index *ix, const char *dir, const char *path, double read_ms, double parse_ms,
                      double build_ms) {
    size_t records = 0;
    for (size_t k = 0; k < ix->n_tracks; k++) records += ix->tracks[k].n;
    char rec[32], r_ms[32], p_ms[32], b_ms[32];
    snprintf(rec, sizeof rec, "%zu", records);
    snprintf(r_ms, sizeof r_ms, "%.1f", read_ms);
    snprintf(p_ms, sizeof p_ms, "%.1f", parse_ms);
    snprintf(b_ms, sizeof b_ms, "%.1f", build_ms);
    srv_log("info", "timeline index built", "id", ix->item.id, "intervals", rec, "read_ms", r_ms, "parse_ms", p_ms,
            "build_ms", b_ms, NULL);
    cg_error serr = {0};
    if (cg_mkdir_p(dir, &serr) < 0 || index_save(ix, path, &serr) < 0)
        srv_log("warning", "timeline index not saved", "id", ix->item.id, "error", serr.msg, NULL);
}

/* Reads trace.jsonl of bundle id into a fresh index (the store takes a pooled
 * connection for the lookup and, pg store, the blob; none is held while
 * parsing). On failure returns NULL with err and its reason set. */
static srv_tl_index *load_index(srv_server *s, const char *id, cg_error *err) {
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char dir[PATH_MAX + 16], path[PATH_MAX + 96];
    index_paths(s, id, dir, sizeof dir, path, sizeof path);
    srv_tl_index *saved = index_load(id, path);
    if (saved) {
        char l_ms[32];
        snprintf(l_ms, sizeof l_ms, "%.1f", ms_since(&t0));
        srv_log("info", "timeline index loaded", "id", id, "load_ms", l_ms, NULL);
        return saved;
    }
    char hex[65];
    int found = srv_store_file_ref(s->pool, id, "trace.jsonl", hex, NULL, err);
    if (found < 0) return NULL; /* the store's own failure: no reason, 503 */
    if (found == 0) {
        cg_err_setr(err, CG_R_NOT_FOUND, CG_EIO, "bundle %s has no trace.jsonl", id);
        return NULL;
    }
    uint64_t size;
    bool missing, store_error = true;
    int fd = srv_store_blob_open(s, hex, &size, &missing, err);
    double read_ms = ms_since(&t0);
    /* streamed from the blob (decompressed frame by frame): parse time includes reading */
    cg_trace *t = fd < 0 ? NULL : srv_blob_trace_fd(&s->blobs, fd, hex, s->cfg.max_decoded_bytes, NULL, &store_error, err);
    if (!t) {
        /* indexed but unreadable is damage inside our store; else the reader
         * set the trace's own reason (trace_invalid) */
        if (store_error || (err && !err->reason)) cg_err_reason(err, CG_R_INTERNAL);
        return NULL;
    }
    double parse_ms = ms_since(&t0) - read_ms;
    srv_tl_index *ix = index_build(id, t);
    cg_trace_free(t);
    log_saved(ix, dir, path, read_ms, parse_ms, ms_since(&t0) - read_ms - parse_ms);
    return ix;
}

srv_tl_index *srv_timeline_build(const char *id, const cg_trace *t) {
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    srv_tl_index *ix = index_build(id, t);
    ix->build_ms = ms_since(&t0);
    return ix;
}

void srv_timeline_keep(srv_server *s, srv_tl_index *x) {
    char dir[PATH_MAX + 16], path[PATH_MAX + 96];
    index_paths(s, x->item.id, dir, sizeof dir, path, sizeof path);
    log_saved(x, dir, path, 0, 0, x->build_ms);
    index_free(x);
}

void srv_timeline_discard(srv_tl_index *x) { index_free(x); }

typedef struct build_ctx {
    srv_server *s;
    cg_error *err;
} build_ctx;

static srv_cache_item *build_item(void *ctx, const char *id) {
    build_ctx *b = ctx;
    srv_tl_index *x = load_index(b->s, id, b->err);
    return x ? &x->item : NULL;
}

/* The cached index of id with a reference taken (srv_timeline_release it),
 * building it from the store when needed (one build per bundle at a time).
 * NULL with err (and its reason). */
srv_tl_index *srv_timeline_acquire(srv_server *s, const char *id, cg_error *err) {
    build_ctx b = {s, err};
    return (srv_tl_index *)srv_cache_acquire(&tl_of(s)->cache, id, build_item, &b);
}

/* ---------------------------------------------------------------- warming after upload */

static void *warm_main(void *arg) {
    struct srv_timeline *T = arg;
    for (;;) {
        char id[65];
        pthread_mutex_lock(&T->warm_mu);
        while (!T->warm_n && !T->warm_stopping) pthread_cond_wait(&T->warm_cv, &T->warm_mu);
        if (T->warm_stopping) {
            pthread_mutex_unlock(&T->warm_mu);
            return NULL;
        }
        memcpy(id, T->warm_ids[0], sizeof id);
        memmove(T->warm_ids[0], T->warm_ids[1], (T->warm_n - 1) * sizeof T->warm_ids[0]);
        T->warm_n--;
        pthread_mutex_unlock(&T->warm_mu);
        srv_cache_item *hit = srv_cache_get(&T->cache, id);
        if (hit) {
            srv_cache_release(&T->cache, hit);
            continue;
        }
        cg_error err = {0};
        srv_tl_index *ix = srv_timeline_acquire(T->server, id, &err);
        if (ix) srv_cache_release(&T->cache, &ix->item);
        srv_views_warm(T->server, id); /* then the dashboard views of the bundle (view_index.c) */
    }
}

void srv_timeline_warm(srv_server *s, const char *id) {
    struct srv_timeline *T = tl_of(s);
    pthread_mutex_lock(&T->warm_mu);
    if (!T->warm_started && !T->warm_stopping)
        T->warm_started = pthread_create(&T->warm_thread, NULL, warm_main, T) == 0;
    if (T->warm_started && !T->warm_stopping && T->warm_n < WARM_QUEUE && strlen(id) == 64) {
        memcpy(T->warm_ids[T->warm_n++], id, 65);
        pthread_cond_signal(&T->warm_cv);
    }
    pthread_mutex_unlock(&T->warm_mu);
}

void srv_timeline_stop(srv_server *s) {
    struct srv_timeline *T = atomic_load(&s->timeline);
    if (!T) return;
    pthread_mutex_lock(&T->warm_mu);
    T->warm_stopping = true;
    bool join = T->warm_started;
    pthread_cond_broadcast(&T->warm_cv);
    pthread_mutex_unlock(&T->warm_mu);
    if (join) pthread_join(T->warm_thread, NULL);
    atomic_store(&s->timeline, NULL);
    srv_cache_destroy(&T->cache);
    pthread_mutex_destroy(&T->warm_mu);
    pthread_cond_destroy(&T->warm_cv);
    cg_free(T);
}

void srv_timeline_release(srv_server *s, srv_tl_index *x) { srv_cache_release(&tl_of(s)->cache, &x->item); }

void srv_timeline_cache_clear(srv_server *s) { srv_cache_clear(&tl_of(s)->cache); }
