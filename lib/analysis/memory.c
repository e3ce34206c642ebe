/* memory.c — logical and physical memory planes (spec §8) and per-span logical
 * metrics for the graph. */
#include "analysis/memory.h"

#include <stdlib.h>
#include <string.h>

#define NONE ((size_t)-1)

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) abort();
    return p;
}
static void *xcalloc(size_t n, size_t sz) {
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) abort();
    return p;
}
static uint64_t sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

/* ---------------------------------------------------------------- logical */

typedef struct mref {
    const cg_memory *m;
    size_t idx;
} mref;

static int cmp_by_key(const void *pa, const void *pb) {
    const mref *a = pa, *b = pb;
    int c = strcmp(a->m->device, b->m->device);
    if (!c) c = strcmp(a->m->storage_id, b->m->storage_id);
    if (c) return c;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int cmp_by_time(const void *pa, const void *pb) {
    const mref *a = pa, *b = pb;
    if (a->m->timestamp_ns != b->m->timestamp_ns) return a->m->timestamp_ns < b->m->timestamp_ns ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

typedef struct wlife { /* lifetime under construction */
    cg_lifetime l;
    size_t dev;       /* compact device index */
    size_t open_pos;  /* position in time order of the opening alloc */
    size_t close_pos; /* NONE while live */
} wlife;

typedef struct alias {
    size_t life;
    const char *tensor_id;
    size_t pos;
} alias;

static int cmp_alias(const void *pa, const void *pb) {
    const alias *a = pa, *b = pb;
    if (a->life != b->life) return a->life < b->life ? -1 : 1;
    int c = strcmp(a->tensor_id, b->tensor_id);
    if (c) return c;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

typedef struct lorder { /* sort key of a lifetime: (start, device, storage_id, opening order) */
    uint64_t start;
    const char *device, *storage_id;
    size_t open_pos, life;
} lorder;

static int cmp_life_order(const void *pa, const void *pb) {
    const lorder *a = pa, *b = pb;
    if (a->start != b->start) return a->start < b->start ? -1 : 1;
    int c = strcmp(a->device, b->device);
    if (!c) c = strcmp(a->storage_id, b->storage_id);
    if (c) return c;
    return a->open_pos < b->open_pos ? -1 : a->open_pos > b->open_pos;
}

/* Sorted unique tensor ids of aliases[first..end) with pos < limit. */
static const char **alias_ids(cg_arena *a, const alias *al, size_t first, size_t end, size_t limit,
                              size_t *n_out) {
    size_t n = 0;
    for (size_t k = first; k < end; k++)
        if (al[k].pos < limit) n++;
    const char **ids = cg_arena_alloc(a, (n ? n : 1) * sizeof *ids);
    size_t m = 0;
    for (size_t k = first; k < end; k++) {
        if (al[k].pos >= limit) continue;
        if (m > 0 && strcmp(ids[m - 1], al[k].tensor_id) == 0) continue;
        ids[m++] = al[k].tensor_id;
    }
    *n_out = m;
    return ids;
}

static cg_logical_memory *logical_analyze(const cg_trace *t, cg_arena *a) {
    size_t n = t->n_memory;
    cg_logical_memory *lm = cg_arena_zalloc(a, sizeof *lm);
    mref *r = xmalloc(n * sizeof *r);
    for (size_t i = 0; i < n; i++) {
        r[i].m = &t->memory[i];
        r[i].idx = i;
    }
    /* key ids (device, storage_id) and device ids, by sorting */
    qsort(r, n, sizeof *r, cmp_by_key);
    size_t *key_of = xmalloc(n * sizeof *key_of), *dev_of = xmalloc(n * sizeof *dev_of);
    size_t n_keys = 0, n_devs = 0;
    const char **dev_name = xmalloc(n * sizeof *dev_name);
    bool *dev_alloc = xcalloc(n, sizeof *dev_alloc);
    for (size_t i = 0; i < n; i++) {
        bool new_dev = i == 0 || strcmp(r[i - 1].m->device, r[i].m->device) != 0;
        if (new_dev) dev_name[n_devs++] = r[i].m->device;
        if (new_dev || strcmp(r[i - 1].m->storage_id, r[i].m->storage_id) != 0) n_keys++;
        key_of[r[i].idx] = n_keys - 1;
        dev_of[r[i].idx] = n_devs - 1;
        if (!r[i].m->is_free) dev_alloc[n_devs - 1] = true;
    }
    /* compact: only devices with an alloc ever open a lifetime */
    size_t *dev_map = xmalloc(n_devs * sizeof *dev_map);
    size_t nd = 0;
    for (size_t d = 0; d < n_devs; d++) dev_map[d] = dev_alloc[d] ? nd++ : NONE;
    lm->devices = cg_arena_zalloc(a, (nd ? nd : 1) * sizeof *lm->devices);
    lm->n_devices = nd;
    for (size_t d = 0; d < n_devs; d++)
        if (dev_map[d] != NONE) lm->devices[dev_map[d]].device = dev_name[d];
    bool *dev_peaked = xcalloc(nd, sizeof *dev_peaked);
    uint64_t *dev_live = xcalloc(nd, sizeof *dev_live);
    size_t *dev_stamp = xmalloc((nd ? nd : 1) * sizeof *dev_stamp);
    for (size_t d = 0; d < nd; d++) dev_stamp[d] = NONE;
    size_t *touched = xmalloc((nd ? nd : 1) * sizeof *touched);

    /* walk in (timestamp, index) order, by groups of equal timestamp */
    qsort(r, n, sizeof *r, cmp_by_time);
    size_t *live = xmalloc(n_keys * sizeof *live);
    for (size_t k = 0; k < n_keys; k++) live[k] = NONE;
    wlife *lives = xmalloc(n * sizeof *lives);
    size_t n_lives = 0;
    alias *al = xmalloc(2 * n * sizeof *al);
    size_t n_al = 0;
    lm->timeline = cg_arena_alloc(a, n * sizeof *lm->timeline);
    lm->changes = cg_arena_alloc(a, n * sizeof *lm->changes);
    uint64_t total_live = 0, cat_live[CG_CAT_COUNT] = {0};
    size_t peak_limit = 0;
    for (size_t i = 0, group = 0; i < n; group++) {
        size_t j = i, nt = 0;
        uint64_t ts = r[i].m->timestamp_ns;
        for (; j < n && r[j].m->timestamp_ns == ts; j++) {
            const cg_memory *m = r[j].m;
            size_t key = key_of[r[j].idx];
            if (!m->is_free) {
                if (live[key] == NONE) {
                    size_t d = dev_map[dev_of[r[j].idx]];
                    wlife *w = &lives[n_lives];
                    memset(w, 0, sizeof *w);
                    w->l.device = m->device;
                    w->l.storage_id = m->storage_id;
                    w->l.allocation_span_id = m->span_id;
                    w->l.op_name = m->op_name;
                    w->l.bytes = m->bytes;
                    w->l.shape = &m->shape;
                    w->l.dtype = m->dtype;
                    w->l.category = m->category;
                    w->l.start_timestamp_ns = ts;
                    w->dev = d;
                    w->open_pos = j;
                    w->close_pos = NONE;
                    live[key] = n_lives++;
                    lm->storage_allocation_count++;
                    lm->total_allocated_bytes = sat_add(lm->total_allocated_bytes, m->bytes);
                    lm->devices[d].storage_allocation_count++;
                    lm->devices[d].total_allocated_bytes =
                        sat_add(lm->devices[d].total_allocated_bytes, m->bytes);
                    total_live += m->bytes;
                    cat_live[m->category] += m->bytes;
                    dev_live[d] += m->bytes;
                    if (dev_stamp[d] != group) {
                        dev_stamp[d] = group;
                        touched[nt++] = d;
                    }
                }
                al[n_al++] = (alias){live[key], m->tensor_id, j};
            } else if (live[key] != NONE) {
                wlife *w = &lives[live[key]];
                w->l.has_end = true;
                w->l.end_timestamp_ns = ts;
                w->close_pos = j;
                al[n_al++] = (alias){live[key], m->tensor_id, j};
                lm->matched_storage_free_count++;
                lm->devices[w->dev].matched_storage_free_count++;
                total_live -= w->l.bytes;
                cat_live[w->l.category] -= w->l.bytes;
                dev_live[w->dev] -= w->l.bytes;
                if (dev_stamp[w->dev] != group) {
                    dev_stamp[w->dev] = group;
                    touched[nt++] = w->dev;
                }
                live[key] = NONE;
            }
        }
        cg_logical_point *pt = &lm->timeline[lm->n_timeline];
        pt->timestamp_ns = ts;
        pt->live_bytes = total_live;
        memcpy(pt->live_bytes_by_category, cat_live, sizeof cat_live);
        pt->change_first = lm->n_changes;
        pt->n_changes = nt;
        for (size_t k = 0; k < nt; k++) {
            size_t d = touched[k];
            lm->changes[lm->n_changes++] = (cg_device_live_change){d, dev_live[d]};
            cg_logical_device *dv = &lm->devices[d];
            if (!dev_peaked[d] || dev_live[d] > dv->peak_live_bytes) {
                dev_peaked[d] = true;
                dv->peak_live_bytes = dev_live[d];
                dv->peak_timestamp_ns = ts;
            }
        }
        if (lm->n_timeline == 0 || total_live > lm->timeline[lm->peak_point].live_bytes) {
            lm->peak_point = lm->n_timeline;
            peak_limit = j;
        }
        lm->n_timeline++;
        i = j;
    }

    /* tensor ids per lifetime (final and at the peak) */
    qsort(al, n_al, sizeof *al, cmp_alias);
    size_t *al_first = xmalloc((n_lives + 1) * sizeof *al_first);
    for (size_t k = 0, l = 0; l <= n_lives; l++) {
        while (k < n_al && al[k].life < l) k++;
        al_first[l] = k;
    }
    for (size_t l = 0; l < n_lives; l++)
        lives[l].l.tensor_ids =
            alias_ids(a, al, al_first[l], al_first[l + 1], NONE, &lives[l].l.n_tensor_ids);

    /* order (start, device, storage_id) */
    lorder *lo = xmalloc((n_lives ? n_lives : 1) * sizeof *lo);
    for (size_t l = 0; l < n_lives; l++)
        lo[l] = (lorder){lives[l].l.start_timestamp_ns, lives[l].l.device, lives[l].l.storage_id,
                         lives[l].open_pos, l};
    qsort(lo, n_lives, sizeof *lo, cmp_life_order);
    size_t *order = xmalloc((n_lives ? n_lives : 1) * sizeof *order);
    for (size_t l = 0; l < n_lives; l++) order[l] = lo[l].life;
    free(lo);
    lm->lifetimes = cg_arena_alloc(a, (n_lives ? n_lives : 1) * sizeof *lm->lifetimes);
    lm->n_lifetimes = n_lives;
    size_t n_peak = 0;
    for (size_t k = 0; k < n_lives; k++) {
        const wlife *w = &lives[order[k]];
        lm->lifetimes[k] = w->l;
        if (w->open_pos < peak_limit && (w->close_pos == NONE || w->close_pos >= peak_limit)) n_peak++;
    }
    lm->peak_live_allocations = cg_arena_alloc(a, (n_peak ? n_peak : 1) * sizeof(cg_lifetime));
    for (size_t k = 0; k < n_lives; k++) {
        size_t l = order[k];
        const wlife *w = &lives[l];
        if (!(w->open_pos < peak_limit && (w->close_pos == NONE || w->close_pos >= peak_limit))) continue;
        cg_lifetime *s = &lm->peak_live_allocations[lm->n_peak_live_allocations++];
        *s = w->l;
        s->has_end = false;
        s->end_timestamp_ns = 0;
        s->tensor_ids = alias_ids(a, al, al_first[l], al_first[l + 1], peak_limit, &s->n_tensor_ids);
    }

    free(order);
    free(al_first);
    free(al);
    free(lives);
    free(live);
    free(touched);
    free(dev_stamp);
    free(dev_live);
    free(dev_peaked);
    free(dev_map);
    free(dev_alloc);
    free(dev_name);
    free(dev_of);
    free(key_of);
    free(r);
    return lm;
}

void cg_logical_live_by_device(const cg_logical_memory *l, size_t point, uint64_t *out, bool *seen) {
    for (size_t d = 0; d < l->n_devices; d++) {
        out[d] = 0;
        seen[d] = false;
    }
    for (size_t p = 0; p <= point && p < l->n_timeline; p++)
        for (size_t k = 0; k < l->timeline[p].n_changes; k++) {
            const cg_device_live_change *c = &l->changes[l->timeline[p].change_first + k];
            out[c->device] = c->live_bytes;
            seen[c->device] = true;
        }
}

/* --------------------------------------------------------------- physical */

static int cmp_dm_time(const void *pa, const void *pb) {
    const cg_device_memory *a = *(const cg_device_memory *const *)pa, *b = *(const cg_device_memory *const *)pb;
    if (a->timestamp_ns != b->timestamp_ns) return a->timestamp_ns < b->timestamp_ns ? -1 : 1;
    int c = strcmp(a->device, b->device);
    if (c) return c;
    return a < b ? -1 : a > b; /* stable: document order */
}

static int cmp_dm_dev(const void *pa, const void *pb) {
    const cg_device_memory *a = *(const cg_device_memory *const *)pa, *b = *(const cg_device_memory *const *)pb;
    int c = strcmp(a->device, b->device);
    if (c) return c;
    if (a->timestamp_ns != b->timestamp_ns) return a->timestamp_ns < b->timestamp_ns ? -1 : 1;
    return a < b ? -1 : a > b;
}

static cg_physical_memory *physical_analyze(const cg_trace *t, cg_arena *a) {
    size_t n = t->n_device_memory;
    cg_physical_memory *pm = cg_arena_zalloc(a, sizeof *pm);
    pm->timeline = cg_arena_alloc(a, n * sizeof *pm->timeline);
    pm->n_timeline = n;
    for (size_t i = 0; i < n; i++) pm->timeline[i] = &t->device_memory[i];
    qsort(pm->timeline, n, sizeof *pm->timeline, cmp_dm_time);
    const cg_device_memory **byd = xmalloc(n * sizeof *byd);
    memcpy(byd, pm->timeline, n * sizeof *byd);
    qsort(byd, n, sizeof *byd, cmp_dm_dev);
    size_t nd = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || strcmp(byd[i - 1]->device, byd[i]->device)) nd++;
    pm->devices = cg_arena_zalloc(a, nd * sizeof *pm->devices);
    pm->n_devices = nd;
    for (size_t i = 0, d = NONE; i < n; i++) {
        const cg_device_memory *s = byd[i];
        if (i == 0 || strcmp(byd[i - 1]->device, s->device)) pm->devices[++d].device = s->device;
        cg_physical_device *pd = &pm->devices[d];
        pd->sample_count++;
        if (s->has_used) {
            pd->used_sample_count++;
            if (!pd->has_peak_used || s->used_bytes > pd->peak_used_bytes) {
                pd->has_peak_used = true;
                pd->peak_used_bytes = s->used_bytes;
                pd->peak_used_timestamp_ns = s->timestamp_ns;
            }
        }
        if (s->has_free) {
            pd->free_sample_count++;
            if (!pd->has_minimum_free || s->free_bytes < pd->minimum_free_bytes) {
                pd->has_minimum_free = true;
                pd->minimum_free_bytes = s->free_bytes;
                pd->minimum_free_timestamp_ns = s->timestamp_ns;
            }
        }
        if (s->has_reserved) {
            pd->reserved_sample_count++;
            if (!pd->has_peak_reserved || s->reserved_bytes > pd->peak_reserved_bytes) {
                pd->has_peak_reserved = true;
                pd->peak_reserved_bytes = s->reserved_bytes;
                pd->peak_reserved_timestamp_ns = s->timestamp_ns;
            }
        }
        if (s->has_capacity) {
            pd->capacity_sample_count++;
            if (!pd->has_maximum_capacity || s->capacity_bytes > pd->maximum_observed_capacity_bytes) {
                pd->has_maximum_capacity = true;
                pd->maximum_observed_capacity_bytes = s->capacity_bytes;
            }
        }
    }
    free(byd);
    return pm;
}

cg_memory_profile *cg_memory_analyze(const cg_trace *t, cg_arena *a) {
    cg_memory_profile *p = cg_arena_zalloc(a, sizeof *p);
    if (t->n_memory > 0) p->logical = logical_analyze(t, a);
    if (t->n_device_memory > 0) p->physical = physical_analyze(t, a);
    return p;
}

bool cg_memory_logical_peak(const cg_memory_profile *p, uint64_t *bytes, uint64_t *timestamp_ns) {
    if (!p || !p->logical || p->logical->n_timeline == 0) return false;
    const cg_logical_point *pt = &p->logical->timeline[p->logical->peak_point];
    if (bytes) *bytes = pt->live_bytes;
    if (timestamp_ns) *timestamp_ns = pt->timestamp_ns;
    return true;
}

/* ------------------------------------------------------ per-span metrics */

/* Segment tree over compressed time cells: range add, range max, point value.
 * Values are true non-negative sums; u64 wrap-around arithmetic is exact while
 * every true sum fits in u64 (each removal undoes an earlier addition). */
typedef struct segtree {
    size_t m;
    uint64_t *mx, *lz;
} segtree;

static void st_add(segtree *s, size_t node, size_t l, size_t r, size_t ql, size_t qr, uint64_t v) {
    if (qr <= l || r <= ql) return;
    if (ql <= l && r <= qr) {
        s->mx[node] += v;
        s->lz[node] += v;
        return;
    }
    size_t mid = l + (r - l) / 2;
    st_add(s, 2 * node, l, mid, ql, qr, v);
    st_add(s, 2 * node + 1, mid, r, ql, qr, v);
    uint64_t a = s->mx[2 * node], b = s->mx[2 * node + 1];
    s->mx[node] = (a > b ? a : b) + s->lz[node];
}

static uint64_t st_max(const segtree *s, size_t node, size_t l, size_t r, size_t ql, size_t qr) {
    if (qr <= l || r <= ql) return 0;
    if (ql <= l && r <= qr) return s->mx[node];
    size_t mid = l + (r - l) / 2;
    /* a child outside the query contributes 0, which never exceeds a true (non-negative) value */
    uint64_t a = st_max(s, 2 * node, l, mid, ql, qr), b = st_max(s, 2 * node + 1, mid, r, ql, qr);
    return (a > b ? a : b) + s->lz[node];
}

typedef struct slife {
    size_t span;          /* owning span index */
    size_t tin;           /* preorder position of that span */
    size_t c0, c1;        /* covered cells [c0, c1) */
    uint64_t bytes;
} slife;

static size_t upper_cell(const uint64_t *x, size_t m, uint64_t v) { /* count of x <= v */
    size_t lo = 0, hi = m;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x[mid] <= v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int cmp_u64(const void *pa, const void *pb) {
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

static int cmp_slife_tin(const void *pa, const void *pb) {
    const slife *a = pa, *b = pb;
    return a->tin < b->tin ? -1 : a->tin > b->tin;
}

static void apply_range(segtree *st, const slife *ls, size_t from, size_t to, bool add) {
    for (size_t k = from; k < to; k++)
        if (ls[k].c0 < ls[k].c1)
            st_add(st, 1, 0, st->m, ls[k].c0, ls[k].c1, add ? ls[k].bytes : (uint64_t)0 - ls[k].bytes);
}

cg_span_memory *cg_memory_span_metrics(const cg_trace *t, const cg_memory_profile *p, cg_arena *a) {
    if (!p || !p->logical) return NULL;
    const cg_logical_memory *lm = p->logical;
    size_t ns = t->n_spans;
    cg_span_memory *out = cg_arena_zalloc(a, (ns ? ns : 1) * sizeof *out);
    for (size_t i = 0; i < ns; i++) out[i].known = true;
    if (ns == 0) return out;

    /* tree: parent index, children (CSR), Euler order from roots (iterative) */
    size_t *par = xmalloc(ns * sizeof *par), *nch = xcalloc(ns + 1, sizeof *nch);
    for (size_t i = 0; i < ns; i++) {
        const cg_span *ps = t->spans[i].parent_id ? cg_trace_find_span(t, t->spans[i].parent_id) : NULL;
        par[i] = ps ? (size_t)(ps - t->spans) : NONE;
        if (par[i] != NONE) nch[par[i] + 1]++;
    }
    for (size_t i = 0; i < ns; i++) nch[i + 1] += nch[i];
    size_t *child = xmalloc(ns * sizeof *child), *fill = xmalloc(ns * sizeof *fill);
    memcpy(fill, nch, ns * sizeof *fill);
    for (size_t i = 0; i < ns; i++)
        if (par[i] != NONE) child[fill[par[i]]++] = i;
    size_t *tin = xmalloc(ns * sizeof *tin), *tout = xmalloc(ns * sizeof *tout);
    size_t *order = xmalloc(ns * sizeof *order), *stack = xmalloc(ns * sizeof *stack);
    for (size_t i = 0; i < ns; i++) tin[i] = tout[i] = NONE;
    size_t timer = 0;
    for (size_t root = 0; root < ns; root++) {
        if (par[root] != NONE) continue;
        size_t sp = 0;
        stack[sp++] = root;
        while (sp) { /* preorder; tout filled afterwards from subtree sizes */
            size_t v = stack[--sp];
            tin[v] = timer;
            order[timer++] = v;
            for (size_t k = nch[v + 1]; k > nch[v]; k--) stack[sp++] = child[k - 1];
        }
    }
    size_t reached = timer;
    /* subtree node extents: process in reverse preorder */
    size_t *size = xmalloc(ns * sizeof *size);
    for (size_t k = reached; k > 0; k--) {
        size_t v = order[k - 1];
        size[v] = 1;
        for (size_t c = nch[v]; c < nch[v + 1]; c++) size[v] += size[child[c]];
        tout[v] = tin[v] + size[v];
    }

    /* lifetimes by span (direct bytes for every resolvable span; reachable ones join the tree) */
    size_t nl = lm->n_lifetimes;
    slife *ls = xmalloc((nl ? nl : 1) * sizeof *ls);
    uint64_t *xs = xmalloc((nl ? 2 * nl : 1) * sizeof *xs);
    size_t nls = 0, nx = 0;
    for (size_t k = 0; k < nl; k++) {
        const cg_lifetime *l = &lm->lifetimes[k];
        const cg_span *sp = cg_trace_find_span(t, l->allocation_span_id);
        if (!sp) continue;
        size_t s = (size_t)(sp - t->spans);
        out[s].allocated_bytes = sat_add(out[s].allocated_bytes, l->bytes);
        if (tin[s] == NONE) continue;
        ls[nls].span = s;
        ls[nls].tin = tin[s];
        ls[nls].bytes = l->bytes;
        ls[nls].c0 = k; /* temporarily: lifetime index */
        nls++;
        xs[nx++] = l->start_timestamp_ns;
        if (l->has_end) xs[nx++] = l->end_timestamp_ns;
    }
    qsort(xs, nx, sizeof *xs, cmp_u64);
    size_t m = 0;
    for (size_t k = 0; k < nx; k++)
        if (m == 0 || xs[m - 1] != xs[k]) xs[m++] = xs[k];
    for (size_t k = 0; k < nls; k++) {
        const cg_lifetime *l = &lm->lifetimes[ls[k].c0];
        ls[k].c0 = upper_cell(xs, m, l->start_timestamp_ns) - 1;
        ls[k].c1 = l->has_end ? upper_cell(xs, m, l->end_timestamp_ns) - 1 : m;
    }
    qsort(ls, nls, sizeof *ls, cmp_slife_tin);
    /* pref[i] = first lifetime whose span has tin >= i */
    size_t *pref = xmalloc((reached + 1) * sizeof *pref);
    for (size_t i = 0, k = 0; i <= reached; i++) {
        while (k < nls && ls[k].tin < i) k++;
        pref[i] = k;
    }
    /* heavy child by subtree lifetime count */
    size_t *heavy = xmalloc(ns * sizeof *heavy);
    for (size_t i = 0; i < ns; i++) {
        heavy[i] = NONE;
        if (tin[i] == NONE) continue;
        size_t best = 0;
        for (size_t c = nch[i]; c < nch[i + 1]; c++) {
            size_t w = pref[tout[child[c]]] - pref[tin[child[c]]];
            if (heavy[i] == NONE || w > best) {
                heavy[i] = child[c];
                best = w;
            }
        }
    }

    segtree st = {m ? m : 1, NULL, NULL};
    st.mx = xcalloc(4 * st.m, sizeof *st.mx);
    st.lz = xcalloc(4 * st.m, sizeof *st.lz);
    typedef struct frame { size_t v; unsigned char keep, state; } frame;
    frame *fs = xmalloc(ns * sizeof *fs);
    for (size_t root = 0; root < ns; root++) {
        if (par[root] != NONE || tin[root] == NONE) continue;
        size_t sp = 0;
        fs[sp++] = (frame){root, 0, 0};
        while (sp) {
            frame f = fs[--sp];
            size_t v = f.v;
            if (f.state == 0) {
                fs[sp++] = (frame){v, f.keep, 1};
                if (heavy[v] != NONE) fs[sp++] = (frame){heavy[v], 1, 0};
                for (size_t c = nch[v]; c < nch[v + 1]; c++)
                    if (child[c] != heavy[v]) fs[sp++] = (frame){child[c], 0, 0};
                continue;
            }
            for (size_t c = nch[v]; c < nch[v + 1]; c++)
                if (child[c] != heavy[v]) apply_range(&st, ls, pref[tin[child[c]]], pref[tout[child[c]]], true);
            apply_range(&st, ls, pref[tin[v]], pref[tin[v] + 1], true);
            const cg_span *s = &t->spans[v];
            if (s->closed) {
                uint64_t ws = s->start_ns;
                uint64_t we = ws + s->duration_ns < ws ? UINT64_MAX : ws + s->duration_ns;
                uint64_t wq = we > ws ? we - 1 : ws;
                size_t lo = upper_cell(xs, m, ws), hi = upper_cell(xs, m, wq);
                out[v].has_window = true;
                if (hi > 0) {
                    size_t from = lo > 0 ? lo - 1 : 0;
                    out[v].peak_live_bytes = st_max(&st, 1, 0, st.m, from, hi);
                    out[v].residual_bytes = st_max(&st, 1, 0, st.m, hi - 1, hi);
                }
            }
            if (!f.keep) apply_range(&st, ls, pref[tin[v]], pref[tout[v]], false);
        }
    }
    free(fs);
    free(st.mx);
    free(st.lz);
    free(heavy);
    free(pref);
    free(xs);
    free(ls);
    free(size);
    free(stack);
    free(order);
    free(tout);
    free(tin);
    free(fill);
    free(child);
    free(nch);
    free(par);
    return out;
}

/* ------------------------------------------------------------------- JSON */

static cg_jv *shape_json(cg_arena *a, const cg_shape *s) {
    cg_jv *arr = cg_jv_arr(a);
    for (size_t i = 0; s && i < s->n; i++) cg_jv_arr_push(a, arr, cg_jv_u64(a, s->dims[i]));
    return arr;
}

cg_jv *cg_lifetime_to_json(cg_arena *a, const cg_lifetime *l) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "device", cg_jv_str_nocopy(a, l->device));
    cg_jv_obj_put(a, o, "storage_id", cg_jv_str_nocopy(a, l->storage_id));
    cg_jv *ids = cg_jv_arr(a);
    for (size_t i = 0; i < l->n_tensor_ids; i++) cg_jv_arr_push(a, ids, cg_jv_str_nocopy(a, l->tensor_ids[i]));
    cg_jv_obj_put(a, o, "tensor_ids", ids);
    cg_jv_obj_put(a, o, "allocation_span_id", cg_jv_str_nocopy(a, l->allocation_span_id));
    if (l->op_name) cg_jv_obj_put(a, o, "op_name", cg_jv_str_nocopy(a, l->op_name));
    cg_jv_obj_put(a, o, "bytes", cg_jv_u64(a, l->bytes));
    cg_jv_obj_put(a, o, "shape", shape_json(a, l->shape));
    cg_jv_obj_put(a, o, "dtype", cg_jv_str_nocopy(a, l->dtype));
    cg_jv_obj_put(a, o, "category", cg_jv_str_nocopy(a, cg_category_name(l->category)));
    cg_jv_obj_put(a, o, "start_timestamp_ns", cg_jv_u64(a, l->start_timestamp_ns));
    if (l->has_end) cg_jv_obj_put(a, o, "end_timestamp_ns", cg_jv_u64(a, l->end_timestamp_ns));
    return o;
}

static cg_jv *by_category_json(cg_arena *a, const uint64_t *cat) {
    cg_jv *o = cg_jv_obj(a);
    for (int c = 0; c < CG_CAT_COUNT; c++)
        cg_jv_obj_put(a, o, cg_category_name((cg_category)c), cg_jv_u64(a, cat[c]));
    return o;
}

static cg_jv *by_device_json(cg_arena *a, const cg_logical_memory *l, const uint64_t *live, const bool *seen) {
    cg_jv *o = cg_jv_obj(a);
    for (size_t d = 0; d < l->n_devices; d++)
        if (seen[d]) cg_jv_obj_put(a, o, l->devices[d].device, cg_jv_u64(a, live[d]));
    return o;
}

static cg_jv *lifetime_item(cg_arena *a, void *ctx, size_t i) {
    return cg_lifetime_to_json(a, &((const cg_logical_memory *)ctx)->lifetimes[i]);
}

static cg_jv *peak_live_item(cg_arena *a, void *ctx, size_t i) {
    return cg_lifetime_to_json(a, &((const cg_logical_memory *)ctx)->peak_live_allocations[i]);
}

/* Timeline generator: live bytes per device carried from point to point
 * (items come in order; state restarts at point 0). */
typedef struct timeline_gen {
    const cg_logical_memory *l;
    uint64_t *live;
    bool *seen;
} timeline_gen;

static cg_jv *timeline_item(cg_arena *a, void *ctx, size_t p) {
    timeline_gen *g = ctx;
    const cg_logical_memory *l = g->l;
    if (p == 0) {
        for (size_t d = 0; d < l->n_devices; d++) {
            g->live[d] = 0;
            g->seen[d] = false;
        }
    }
    const cg_logical_point *pt = &l->timeline[p];
    for (size_t k = 0; k < pt->n_changes; k++) {
        const cg_device_live_change *c = &l->changes[pt->change_first + k];
        g->live[c->device] = c->live_bytes;
        g->seen[c->device] = true;
    }
    cg_jv *e = cg_jv_obj(a);
    cg_jv_obj_put(a, e, "timestamp_ns", cg_jv_u64(a, pt->timestamp_ns));
    cg_jv_obj_put(a, e, "live_bytes", cg_jv_u64(a, pt->live_bytes));
    cg_jv_obj_put(a, e, "live_bytes_by_device", by_device_json(a, l, g->live, g->seen));
    cg_jv_obj_put(a, e, "live_bytes_by_category", by_category_json(a, pt->live_bytes_by_category));
    return e;
}

static cg_jv *logical_json(cg_arena *a, const cg_logical_memory *l) {
    void *ctx = (void *)(uintptr_t)l; /* items only read the profile */
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "storage_allocation_count", cg_jv_u64(a, l->storage_allocation_count));
    cg_jv_obj_put(a, o, "matched_storage_free_count", cg_jv_u64(a, l->matched_storage_free_count));
    cg_jv_obj_put(a, o, "total_allocated_bytes", cg_jv_u64(a, l->total_allocated_bytes));
    timeline_gen *tg = cg_arena_alloc(a, sizeof *tg);
    tg->l = l;
    tg->live = cg_arena_zalloc(a, (l->n_devices ? l->n_devices : 1) * sizeof *tg->live);
    tg->seen = cg_arena_zalloc(a, (l->n_devices ? l->n_devices : 1) * sizeof *tg->seen);

    const cg_logical_point *pk = &l->timeline[l->peak_point];
    cg_logical_live_by_device(l, l->peak_point, tg->live, tg->seen);
    cg_jv *peak = cg_jv_obj(a);
    cg_jv_obj_put(a, peak, "timestamp_ns", cg_jv_u64(a, pk->timestamp_ns));
    cg_jv_obj_put(a, peak, "live_bytes", cg_jv_u64(a, pk->live_bytes));
    cg_jv_obj_put(a, peak, "live_bytes_by_device", by_device_json(a, l, tg->live, tg->seen));
    cg_jv_obj_put(a, peak, "live_bytes_by_category", by_category_json(a, pk->live_bytes_by_category));
    cg_jv_obj_put(a, peak, "live_allocations", cg_jv_lazy_arr(a, l->n_peak_live_allocations, peak_live_item, ctx));
    cg_jv_obj_put(a, o, "peak", peak);

    cg_jv *devs = cg_jv_obj(a);
    for (size_t d = 0; d < l->n_devices; d++) {
        const cg_logical_device *dv = &l->devices[d];
        cg_jv *e = cg_jv_obj(a);
        cg_jv_obj_put(a, e, "storage_allocation_count", cg_jv_u64(a, dv->storage_allocation_count));
        cg_jv_obj_put(a, e, "matched_storage_free_count", cg_jv_u64(a, dv->matched_storage_free_count));
        cg_jv_obj_put(a, e, "total_allocated_bytes", cg_jv_u64(a, dv->total_allocated_bytes));
        cg_jv_obj_put(a, e, "peak_live_bytes", cg_jv_u64(a, dv->peak_live_bytes));
        cg_jv_obj_put(a, e, "peak_timestamp_ns", cg_jv_u64(a, dv->peak_timestamp_ns));
        cg_jv_obj_put(a, devs, dv->device, e);
    }
    cg_jv_obj_put(a, o, "devices", devs);
    cg_jv_obj_put(a, o, "lifetimes", cg_jv_lazy_arr(a, l->n_lifetimes, lifetime_item, ctx));
    cg_jv_obj_put(a, o, "timeline", cg_jv_lazy_arr(a, l->n_timeline, timeline_item, tg));
    return o;
}

static void put_opt(cg_arena *a, cg_jv *o, const char *k, bool has, uint64_t v) {
    if (has) cg_jv_obj_put(a, o, k, cg_jv_u64(a, v));
}

static cg_jv *physical_item(cg_arena *a, void *ctx, size_t i) {
    const cg_device_memory *s = ((const cg_physical_memory *)ctx)->timeline[i];
    cg_jv *e = cg_jv_obj(a);
    cg_jv_obj_put(a, e, "timestamp_ns", cg_jv_u64(a, s->timestamp_ns));
    cg_jv_obj_put(a, e, "device", cg_jv_str_nocopy(a, s->device));
    put_opt(a, e, "used_bytes", s->has_used, s->used_bytes);
    put_opt(a, e, "free_bytes", s->has_free, s->free_bytes);
    put_opt(a, e, "reserved_bytes", s->has_reserved, s->reserved_bytes);
    put_opt(a, e, "capacity_bytes", s->has_capacity, s->capacity_bytes);
    return e;
}

static cg_jv *physical_json(cg_arena *a, const cg_physical_memory *pm) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "timeline", cg_jv_lazy_arr(a, pm->n_timeline, physical_item, (void *)(uintptr_t)pm));
    cg_jv *devs = cg_jv_obj(a);
    for (size_t d = 0; d < pm->n_devices; d++) {
        const cg_physical_device *pd = &pm->devices[d];
        cg_jv *e = cg_jv_obj(a);
        cg_jv_obj_put(a, e, "sample_count", cg_jv_u64(a, pd->sample_count));
        cg_jv_obj_put(a, e, "used_sample_count", cg_jv_u64(a, pd->used_sample_count));
        cg_jv_obj_put(a, e, "free_sample_count", cg_jv_u64(a, pd->free_sample_count));
        cg_jv_obj_put(a, e, "reserved_sample_count", cg_jv_u64(a, pd->reserved_sample_count));
        cg_jv_obj_put(a, e, "capacity_sample_count", cg_jv_u64(a, pd->capacity_sample_count));
        put_opt(a, e, "peak_used_bytes", pd->has_peak_used, pd->peak_used_bytes);
        put_opt(a, e, "peak_used_timestamp_ns", pd->has_peak_used, pd->peak_used_timestamp_ns);
        put_opt(a, e, "peak_reserved_bytes", pd->has_peak_reserved, pd->peak_reserved_bytes);
        put_opt(a, e, "peak_reserved_timestamp_ns", pd->has_peak_reserved, pd->peak_reserved_timestamp_ns);
        put_opt(a, e, "minimum_free_bytes", pd->has_minimum_free, pd->minimum_free_bytes);
        put_opt(a, e, "minimum_free_timestamp_ns", pd->has_minimum_free, pd->minimum_free_timestamp_ns);
        put_opt(a, e, "maximum_observed_capacity_bytes", pd->has_maximum_capacity,
                pd->maximum_observed_capacity_bytes);
        cg_jv_obj_put(a, devs, pd->device, e);
    }
    cg_jv_obj_put(a, o, "devices", devs);
    return o;
}

cg_jv *cg_memory_to_json(cg_arena *a, const cg_memory_profile *p) {
    return cg_jv_materialize(a, cg_memory_to_json_lazy(a, p));
}

cg_jv *cg_memory_to_json_lazy(cg_arena *a, const cg_memory_profile *p) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "logical", p->logical ? logical_json(a, p->logical) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "physical", p->physical ? physical_json(a, p->physical) : cg_jv_null(a));
    return o;
}
