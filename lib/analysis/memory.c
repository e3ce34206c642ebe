/* memory.c — logical and physical memory planes (spec §8) and per-span logical
 * metrics for the graph. */
#include "analysis/memory.h"
#include "base/alloc.h"
#include "base/num.h"

#include <stdlib.h>
#include <string.h>

#define NONE ((size_t)-1)


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

/* Interns (device, storage_id) keys and devices: key_of / dev_of per event
 * index; devices[] named and sorted by device (every device with an event). */
static size_t intern_keys(const cg_trace *t, cg_arena *a, mref *r, size_t *key_of, size_t *dev_of,
                          cg_logical_memory *lm) {
    size_t n = t->n_memory, n_keys = 0, n_devs = 0;
    qsort(r, n, sizeof *r, cmp_by_key);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || strcmp(r[i - 1].m->device, r[i].m->device) != 0) n_devs++;
    lm->devices = cg_arena_zalloc(a, (n_devs ? n_devs : 1) * sizeof *lm->devices);
    lm->n_devices = n_devs;
    n_devs = 0;
    for (size_t i = 0; i < n; i++) {
        bool new_dev = i == 0 || strcmp(r[i - 1].m->device, r[i].m->device) != 0;
        if (new_dev) lm->devices[n_devs++].device = r[i].m->device;
        if (new_dev || strcmp(r[i - 1].m->storage_id, r[i].m->storage_id) != 0) n_keys++;
        key_of[r[i].idx] = n_keys - 1;
        dev_of[r[i].idx] = n_devs - 1;
    }
    return n_keys;
}

/* Running state of the walk over timestamp groups. */
typedef struct walk {
    uint64_t total_live, cat_live[CG_CAT_COUNT];
    size_t cat_active[CG_CAT_COUNT];
    uint64_t *dev_live;
    size_t *dev_active, *dev_stamp, *touched, n_touched, group;
} walk;

static void walk_touch(walk *w, size_t d) {
    if (w->dev_stamp[d] == w->group) return;
    w->dev_stamp[d] = w->group;
    w->touched[w->n_touched++] = d;
}

static void walk_change(walk *w, size_t d, cg_category c, uint64_t bytes, bool add) {
    if (add) {
        w->total_live += bytes;
        w->cat_live[c] += bytes;
        w->dev_live[d] += bytes;
        w->cat_active[c]++;
        w->dev_active[d]++;
    } else {
        w->total_live -= bytes;
        w->cat_live[c] -= bytes;
        w->dev_live[d] -= bytes;
        w->cat_active[c]--;
        w->dev_active[d]--;
    }
    walk_touch(w, d);
}

/* Closes the group just walked: its timeline point, device changes and peaks. */
static void close_point(cg_logical_memory *lm, walk *w, uint64_t ts, size_t end_pos, size_t *peak_limit) {
    cg_logical_point *pt = &lm->timeline[lm->n_timeline];
    pt->timestamp_ns = ts;
    pt->live_bytes = w->total_live;
    memcpy(pt->live_bytes_by_category, w->cat_live, sizeof w->cat_live);
    pt->category_present = 0;
    for (int c = 0; c < CG_CAT_COUNT; c++)
        if (w->cat_active[c]) pt->category_present |= (uint8_t)(1u << c);
    pt->change_first = lm->n_changes;
    pt->n_changes = w->n_touched;
    for (size_t k = 0; k < w->n_touched; k++) {
        size_t d = w->touched[k];
        lm->changes[lm->n_changes++] = (cg_device_live_change){d, w->dev_live[d], w->dev_active[d] > 0};
        cg_logical_device *dv = &lm->devices[d];
        if (!dv->has_peak || w->dev_live[d] > dv->peak_live_bytes) {
            dv->has_peak = true;
            dv->peak_live_bytes = w->dev_live[d];
            dv->peak_timestamp_ns = ts;
        }
    }
    if (lm->storage_allocation_count > 0 &&
        (!lm->has_peak || w->total_live > lm->timeline[lm->peak_point].live_bytes)) {
        lm->has_peak = true;
        lm->peak_point = lm->n_timeline;
        *peak_limit = end_pos;
    }
    lm->n_timeline++;
}

/* Final lifetimes, sorted by (start, device, storage_id) with their tensor ids,
 * and the snapshot of those live at the peak (aliases seen by then, no end). */
static void finish_lifetimes(cg_logical_memory *lm, cg_arena *a, wlife *lives, size_t n_lives, alias *al,
                             size_t n_al, size_t peak_limit) {
    /* tensor ids per lifetime (final and at the peak) */
    qsort(al, n_al, sizeof *al, cmp_alias);
    size_t *al_first = cg_xalloc((n_lives + 1), sizeof *al_first);
    for (size_t k = 0, l = 0; l <= n_lives; l++) {
        while (k < n_al && al[k].life < l) k++;
        al_first[l] = k;
    }
    for (size_t l = 0; l < n_lives; l++)
        lives[l].l.tensor_ids =
            alias_ids(a, al, al_first[l], al_first[l + 1], NONE, &lives[l].l.n_tensor_ids);
    /* order (start, device, storage_id) */
    lorder *lo = cg_xalloc((n_lives ? n_lives : 1), sizeof *lo);
    for (size_t l = 0; l < n_lives; l++)
        lo[l] = (lorder){lives[l].l.start_timestamp_ns, lives[l].l.device, lives[l].l.storage_id,
                         lives[l].open_pos, l};
    qsort(lo, n_lives, sizeof *lo, cmp_life_order);
    size_t *order = cg_xalloc((n_lives ? n_lives : 1), sizeof *order);
    for (size_t l = 0; l < n_lives; l++) order[l] = lo[l].life;
    free(lo);
    lm->lifetimes = cg_arena_alloc(a, (n_lives ? n_lives : 1) * sizeof *lm->lifetimes);
    lm->n_lifetimes = n_lives;
    size_t n_peak = 0;
    for (size_t k = 0; k < n_lives; k++) {
        const wlife *wl = &lives[order[k]];
        lm->lifetimes[k] = wl->l;
        if (wl->open_pos < peak_limit && (wl->close_pos == NONE || wl->close_pos >= peak_limit)) n_peak++;
    }
    lm->peak_live_allocations = cg_arena_alloc(a, (n_peak ? n_peak : 1) * sizeof(cg_lifetime));
    for (size_t k = 0; k < n_lives; k++) {
        size_t l = order[k];
        const wlife *wl = &lives[l];
        if (!(wl->open_pos < peak_limit && (wl->close_pos == NONE || wl->close_pos >= peak_limit))) continue;
        cg_lifetime *s = &lm->peak_live_allocations[lm->n_peak_live_allocations++];
        *s = wl->l;
        s->has_end = false;
        s->end_timestamp_ns = 0;
        s->tensor_ids = alias_ids(a, al, al_first[l], al_first[l + 1], peak_limit, &s->n_tensor_ids);
    }

    free(order);
    free(al_first);
}

static cg_logical_memory *logical_analyze(const cg_trace *t, cg_arena *a) {
    size_t n = t->n_memory;
    cg_logical_memory *lm = cg_arena_zalloc(a, sizeof *lm);
    mref *r = cg_xalloc(n, sizeof *r);
    for (size_t i = 0; i < n; i++) {
        r[i].m = &t->memory[i];
        r[i].idx = i;
    }
    size_t *key_of = cg_xalloc(n, sizeof *key_of), *dev_of = cg_xalloc(n, sizeof *dev_of);
    size_t n_keys = intern_keys(t, a, r, key_of, dev_of, lm);
    size_t nd = lm->n_devices;
    walk w = {0};
    w.dev_live = cg_xzalloc(nd, sizeof *w.dev_live);
    w.dev_active = cg_xzalloc(nd, sizeof *w.dev_active);
    w.dev_stamp = cg_xalloc(nd, sizeof *w.dev_stamp);
    for (size_t d = 0; d < nd; d++) w.dev_stamp[d] = NONE;
    w.touched = cg_xalloc(nd, sizeof *w.touched);

    /* walk in (timestamp, index) order, by groups of equal timestamp */
    qsort(r, n, sizeof *r, cmp_by_time);
    size_t *live = cg_xalloc(n_keys, sizeof *live);
    for (size_t k = 0; k < n_keys; k++) live[k] = NONE;
    wlife *lives = cg_xalloc(n, sizeof *lives);
    size_t n_lives = 0;
    alias *al = cg_xalloc(2 * n, sizeof *al);
    size_t n_al = 0;
    lm->timeline = cg_arena_alloc(a, n * sizeof *lm->timeline);
    lm->changes = cg_arena_alloc(a, n * sizeof *lm->changes);
    size_t peak_limit = 0;
    for (size_t i = 0; i < n; w.group++) {
        size_t j = i;
        uint64_t ts = r[i].m->timestamp_ns;
        w.n_touched = 0;
        for (; j < n && r[j].m->timestamp_ns == ts; j++) {
            const cg_memory *m = r[j].m;
            size_t key = key_of[r[j].idx], d = dev_of[r[j].idx];
            if (!m->is_free) {
                if (live[key] == NONE) {
                    wlife *wl = &lives[n_lives];
                    memset(wl, 0, sizeof *wl);
                    wl->l.device = m->device;
                    wl->l.storage_id = m->storage_id;
                    wl->l.allocation_span_id = m->span_id;
                    wl->l.op_name = m->op_name;
                    wl->l.bytes = m->bytes;
                    wl->l.shape = &m->shape;
                    wl->l.dtype = m->dtype;
                    wl->l.category = m->category;
                    wl->l.start_timestamp_ns = ts;
                    wl->dev = d;
                    wl->open_pos = j;
                    wl->close_pos = NONE;
                    live[key] = n_lives++;
                    lm->storage_allocation_count++;
                    lm->total_allocated_bytes = cg_sat_add_u64(lm->total_allocated_bytes, m->bytes);
                    lm->devices[d].storage_allocation_count++;
                    lm->devices[d].total_allocated_bytes = cg_sat_add_u64(lm->devices[d].total_allocated_bytes, m->bytes);
                    walk_change(&w, d, m->category, m->bytes, true);
                }
                al[n_al++] = (alias){live[key], m->tensor_id, j};
            } else if (live[key] != NONE) {
                wlife *wl = &lives[live[key]];
                wl->l.has_end = true;
                wl->l.end_timestamp_ns = ts;
                wl->close_pos = j;
                al[n_al++] = (alias){live[key], m->tensor_id, j};
                lm->matched_storage_free_count++;
                lm->devices[wl->dev].matched_storage_free_count++;
                walk_change(&w, wl->dev, wl->l.category, wl->l.bytes, false);
                live[key] = NONE;
            }
        }
        close_point(lm, &w, ts, j, &peak_limit);
        i = j;
    }

    finish_lifetimes(lm, a, lives, n_lives, al, n_al, peak_limit);
    free(al);
    free(lives);
    free(live);
    free(w.touched);
    free(w.dev_stamp);
    free(w.dev_active);
    free(w.dev_live);
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
            seen[c->device] = c->present;
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
    const cg_device_memory **byd = cg_xalloc(n, sizeof *byd);
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
    if (!p || !p->logical || !p->logical->has_peak) return false;
    const cg_logical_point *pt = &p->logical->timeline[p->logical->peak_point];
    if (bytes) *bytes = pt->live_bytes;
    if (timestamp_ns) *timestamp_ns = pt->timestamp_ns;
    return true;
}

/* ------------------------------------------------------ per-span metrics */

/* The crate's clipped_lifetime_metrics walks one window: live = the bytes live
 * at its start, then per timestamp T inside it live = sat_sub(live, F_T) + A_T
 * (F_T / A_T: bytes of the lifetimes ending / starting at T), peak = the largest
 * live seen. Each step is the map x -> max(x + (A_T - F_T), A_T), and such maps
 * compose (x -> max(x + a, b)), as does "the largest value met along the way"
 * (x -> max(x + c, d)); so a segment tree over the distinct timestamps holding
 * A_T, F_T and Z_T (bytes of zero-length lifetimes at T) answers a window's
 * peak and residual in O(log n) for whatever set of lifetimes it holds.
 * Figures are exact while byte sums stay below 2^63 (the map coefficients
 * saturate there); the A/F/Z sums wrap exactly (each removal undoes an addition). */
typedef struct fnode {
    bool empty;          /* identity (queries only) */
    uint64_t sa, sf, sz; /* sums of A, F, Z over the segment */
    int64_t a, b, c, d;  /* step map max(x + a, b), peak map max(x + c, d) */
} fnode;

typedef struct ftree {
    size_t size; /* leaves, a power of two >= the number of timestamps */
    fnode *n;    /* n[1] root, leaves at [size, 2 size) */
} ftree;

static int64_t i64_of(uint64_t v) { return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v; }

static int64_t add_i64(int64_t x, int64_t y) {
    if (y > 0 && x > INT64_MAX - y) return INT64_MAX;
    if (y < 0 && x < INT64_MIN - y) return INT64_MIN;
    return x + y;
}

static int64_t max_i64(int64_t x, int64_t y) { return x > y ? x : y; }

static fnode fnode_join(const fnode *l, const fnode *r) {
    if (l->empty) return *r;
    if (r->empty) return *l;
    fnode o = {false, l->sa + r->sa, l->sf + r->sf, l->sz + r->sz, add_i64(l->a, r->a),
               max_i64(add_i64(l->b, r->a), r->b), max_i64(l->c, add_i64(l->a, r->c)), 0};
    o.d = max_i64(max_i64(l->d, add_i64(l->b, r->c)), r->d);
    return o;
}

static void ftree_init(ftree *f, size_t m) {
    f->size = 1;
    while (f->size < m) f->size *= 2;
    f->n = cg_xzalloc(2 * f->size, sizeof *f->n); /* all-zero leaves are x -> max(x, 0) = x */
}

/* adds (or removes) bytes to leaf k's A, F or Z sum (which: 0, 1, 2) */
static void ftree_update(ftree *f, size_t k, int which, uint64_t bytes, bool add) {
    fnode *leaf = &f->n[f->size + k];
    uint64_t *sum = which == 0 ? &leaf->sa : which == 1 ? &leaf->sf : &leaf->sz;
    *sum = add ? *sum + bytes : *sum - bytes;
    int64_t A = i64_of(leaf->sa), F = i64_of(leaf->sf);
    leaf->a = leaf->c = A - F;
    leaf->b = leaf->d = A;
    for (size_t i = (f->size + k) / 2; i >= 1; i /= 2) f->n[i] = fnode_join(&f->n[2 * i], &f->n[2 * i + 1]);
}

/* the join of leaves [lo, hi) */
static fnode ftree_query(const ftree *f, size_t lo, size_t hi) {
    fnode left = {.empty = true}, right = {.empty = true};
    for (lo += f->size, hi += f->size; lo < hi; lo /= 2, hi /= 2) {
        if (lo & 1) left = fnode_join(&left, &f->n[lo++]);
        if (hi & 1) right = fnode_join(&f->n[--hi], &right);
    }
    return fnode_join(&left, &right);
}

typedef struct slife {
    size_t span;       /* owning span index */
    size_t tin;        /* preorder position of that span */
    size_t life;       /* index into the profile's lifetimes */
    size_t k0, k1;     /* leaves of its start and end timestamps */
    uint64_t bytes;
    bool zero;         /* start = end: allocated and freed at one timestamp */
} slife;

static uint64_t lifetime_end(const cg_lifetime *l) { return l->has_end ? l->end_timestamp_ns : UINT64_MAX; }

static int cmp_u64(const void *pa, const void *pb) {
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

/* count of x[i] < v (or <= v when inclusive) */
static size_t count_below(const uint64_t *x, size_t m, uint64_t v, bool inclusive) {
    size_t lo = 0, hi = m;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x[mid] < v || (inclusive && x[mid] == v))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int cmp_slife_tin(const void *pa, const void *pb) {
    const slife *a = pa, *b = pb;
    return a->tin < b->tin ? -1 : a->tin > b->tin;
}

static void apply_range(ftree *f, const slife *ls, size_t from, size_t to, bool add) {
    for (size_t k = from; k < to; k++) {
        ftree_update(f, ls[k].k0, 0, ls[k].bytes, add);
        ftree_update(f, ls[k].k1, 1, ls[k].bytes, add);
        if (ls[k].zero) ftree_update(f, ls[k].k0, 2, ls[k].bytes, add);
    }
}

/* The span forest: parents, children (CSR), preorder positions and subtree
 * extents [tin, tout), built without recursion. Unreachable spans keep NONE. */
typedef struct stree {
    size_t ns, reached;
    size_t *par, *nch, *child, *tin, *tout;
} stree;

static void stree_build(stree *T, const cg_trace *t) {
    size_t ns = T->ns = t->n_spans;
    T->par = cg_xalloc(ns, sizeof *T->par);
    T->nch = cg_xzalloc(ns + 1, sizeof *T->nch);
    for (size_t i = 0; i < ns; i++) {
        const cg_span *ps = t->spans[i].parent_id ? cg_trace_find_span(t, t->spans[i].parent_id) : NULL;
        T->par[i] = ps ? (size_t)(ps - t->spans) : NONE;
        if (T->par[i] != NONE) T->nch[T->par[i] + 1]++;
    }
    for (size_t i = 0; i < ns; i++) T->nch[i + 1] += T->nch[i];
    T->child = cg_xalloc(ns, sizeof *T->child);
    size_t *fill = cg_xalloc(ns, sizeof *fill), *order = cg_xalloc(ns, sizeof *order), *stack = cg_xalloc(ns, sizeof *stack);
    memcpy(fill, T->nch, ns * sizeof *fill);
    for (size_t i = 0; i < ns; i++)
        if (T->par[i] != NONE) T->child[fill[T->par[i]]++] = i;
    T->tin = cg_xalloc(ns, sizeof *T->tin);
    T->tout = cg_xalloc(ns, sizeof *T->tout);
    for (size_t i = 0; i < ns; i++) T->tin[i] = T->tout[i] = NONE;
    T->reached = 0;
    for (size_t root = 0; root < ns; root++) {
        if (T->par[root] != NONE) continue;
        size_t sp = 0;
        stack[sp++] = root;
        while (sp) {
            size_t v = stack[--sp];
            T->tin[v] = T->reached;
            order[T->reached++] = v;
            for (size_t k = T->nch[v + 1]; k > T->nch[v]; k--) stack[sp++] = T->child[k - 1];
        }
    }
    for (size_t k = T->reached; k > 0; k--) { /* subtree extents, reverse preorder */
        size_t v = order[k - 1], size = 1;
        for (size_t c = T->nch[v]; c < T->nch[v + 1]; c++) size += T->tout[T->child[c]] - T->tin[T->child[c]];
        T->tout[v] = T->tin[v] + size;
    }
    free(stack);
    free(order);
    free(fill);
}

static void stree_free(stree *T) {
    free(T->tout);
    free(T->tin);
    free(T->child);
    free(T->nch);
    free(T->par);
}

/* The lifetimes of reachable spans, in preorder of their span (pref[i] = first
 * with tin >= i, so a subtree's lifetimes are ls[pref[tin], pref[tout])), on
 * the compressed timestamps xs[0..m). Fills every span's direct allocation. */
typedef struct slives {
    slife *ls;
    size_t nls, m;
    uint64_t *xs; /* distinct start and end timestamps, sorted */
    size_t *pref;
} slives;

static void slives_collect(slives *L, const cg_trace *t, const cg_logical_memory *lm, const stree *T,
                           cg_span_memory *out) {
    size_t nl = lm->n_lifetimes, nx = 0;
    L->ls = cg_xalloc((nl ? nl : 1), sizeof *L->ls);
    L->xs = cg_xalloc((nl ? 2 * nl : 1), sizeof *L->xs);
    L->nls = 0;
    for (size_t k = 0; k < nl; k++) {
        const cg_lifetime *l = &lm->lifetimes[k];
        const cg_span *sp = cg_trace_find_span(t, l->allocation_span_id);
        if (!sp) continue;
        size_t s = (size_t)(sp - t->spans);
        out[s].has_allocated = true;
        out[s].allocated_bytes = cg_sat_add_u64(out[s].allocated_bytes, l->bytes);
        if (T->tin[s] == NONE) continue;
        L->ls[L->nls++] = (slife){s, T->tin[s], k, 0, 0, l->bytes, l->has_end && l->end_timestamp_ns == l->start_timestamp_ns};
        L->xs[nx++] = l->start_timestamp_ns;
        L->xs[nx++] = lifetime_end(l);
    }
    qsort(L->xs, nx, sizeof *L->xs, cmp_u64);
    L->m = 0;
    for (size_t k = 0; k < nx; k++)
        if (L->m == 0 || L->xs[L->m - 1] != L->xs[k]) L->xs[L->m++] = L->xs[k];
    for (size_t k = 0; k < L->nls; k++) {
        const cg_lifetime *l = &lm->lifetimes[L->ls[k].life];
        L->ls[k].k0 = count_below(L->xs, L->m, l->start_timestamp_ns, false);
        L->ls[k].k1 = count_below(L->xs, L->m, lifetime_end(l), false);
    }
    qsort(L->ls, L->nls, sizeof *L->ls, cmp_slife_tin);
    L->pref = cg_xalloc((T->reached + 1), sizeof *L->pref);
    for (size_t i = 0, k = 0; i <= T->reached; i++) {
        while (k < L->nls && L->ls[k].tin < i) k++;
        L->pref[i] = k;
    }
}

static void slives_free(slives *L) {
    free(L->pref);
    free(L->xs);
    free(L->ls);
}

/* Heavy child of every reachable span: the child with the most subtree lifetimes. */
static size_t *heavy_children(const stree *T, const slives *L) {
    size_t *heavy = cg_xalloc(T->ns, sizeof *heavy);
    for (size_t i = 0; i < T->ns; i++) {
        heavy[i] = NONE;
        if (T->tin[i] == NONE) continue;
        size_t best = 0;
        for (size_t c = T->nch[i]; c < T->nch[i + 1]; c++) {
            size_t ch = T->child[c], w = L->pref[T->tout[ch]] - L->pref[T->tin[ch]];
            if (heavy[i] == NONE || w > best) {
                heavy[i] = ch;
                best = w;
            }
        }
    }
    return heavy;
}

/* Peak and residual of a span's window while the tree holds exactly its subtree:
 * peak = the crate's walk from the live bytes at the window start through the
 * timestamps strictly inside; residual = bytes with start < window end < end. */
static void span_window(cg_span_memory *o, const ftree *f, const slives *L, const cg_span *s) {
    uint64_t ws = s->start_ns;
    uint64_t we = ws + s->duration_ns < ws ? UINT64_MAX : ws + s->duration_ns;
    o->has_window = true;
    if (we <= ws || L->m == 0) return; /* an empty window is 0 / 0 */
    size_t at_start = count_below(L->xs, L->m, ws, true), before_end = count_below(L->xs, L->m, we, false);
    size_t to_end = count_below(L->xs, L->m, we, true);
    fnode head = ftree_query(f, 0, at_start);
    uint64_t live = head.empty ? 0 : head.sa - head.sf;
    int64_t x0 = i64_of(live), peak = x0;
    if (before_end > at_start) {
        fnode mid = ftree_query(f, at_start, before_end);
        peak = max_i64(peak, max_i64(add_i64(x0, mid.c), mid.d));
    }
    o->peak_live_bytes = (uint64_t)peak;
    fnode upto = ftree_query(f, 0, before_end), incl = ftree_query(f, 0, to_end);
    uint64_t started = upto.empty ? 0 : upto.sa, ended = incl.empty ? 0 : incl.sf;
    uint64_t zero_at_end = to_end > before_end ? f->n[f->size + before_end].sz : 0;
    o->residual_bytes = started - ended + zero_at_end;
}

typedef struct frame {
    size_t v;
    unsigned char keep, state;
} frame;

/* Small-to-large walk: every span's subtree lifetimes are in the tree when its
 * window is measured; light subtrees are removed again afterwards. */
static void subtree_walk(cg_span_memory *out, const cg_trace *t, const stree *T, const slives *L, bool complete) {
    size_t *heavy = heavy_children(T, L);
    ftree f;
    ftree_init(&f, L->m ? L->m : 1);
    frame *fs = cg_xalloc(T->ns, sizeof *fs);
    const size_t *nch = T->nch, *child = T->child, *tin = T->tin, *tout = T->tout, *pref = L->pref;
    for (size_t root = 0; root < T->ns; root++) {
        if (T->par[root] != NONE || tin[root] == NONE) continue;
        size_t sp = 0;
        fs[sp++] = (frame){root, 0, 0};
        while (sp) {
            frame fr = fs[--sp];
            size_t v = fr.v;
            if (fr.state == 0) {
                fs[sp++] = (frame){v, fr.keep, 1};
                if (heavy[v] != NONE) fs[sp++] = (frame){heavy[v], 1, 0};
                for (size_t c = nch[v]; c < nch[v + 1]; c++)
                    if (child[c] != heavy[v]) fs[sp++] = (frame){child[c], 0, 0};
                continue;
            }
            for (size_t c = nch[v]; c < nch[v + 1]; c++)
                if (child[c] != heavy[v]) apply_range(&f, L->ls, pref[tin[child[c]]], pref[tout[child[c]]], true);
            apply_range(&f, L->ls, pref[tin[v]], pref[tin[v] + 1], true);
            const cg_span *s = &t->spans[v];
            if (s->closed && (complete || pref[tout[v]] > pref[tin[v]])) span_window(&out[v], &f, L, s);
            if (!fr.keep) apply_range(&f, L->ls, pref[tin[v]], pref[tout[v]], false);
        }
    }
    free(fs);
    free(f.n);
    free(heavy);
}

cg_span_memory *cg_memory_span_metrics(const cg_trace *t, const cg_memory_profile *p, cg_arena *a) {
    if (!p || !p->logical) return NULL;
    const cg_logical_memory *lm = p->logical;
    size_t ns = t->n_spans;
    cg_span_memory *out = cg_arena_zalloc(a, (ns ? ns : 1) * sizeof *out);
    bool complete = t->run.contract.logical_memory == CG_COV_COMPLETE;
    for (size_t i = 0; i < ns; i++) out[i].has_allocated = complete;
    if (ns == 0) return out;
    stree T;
    stree_build(&T, t);
    slives L;
    slives_collect(&L, t, lm, &T, out);
    subtree_walk(out, t, &T, &L, complete);
    slives_free(&L);
    stree_free(&T);
    return out;
}

/* ------------------------------------------------------ per-op metrics */

typedef struct opref {
    const char *span_id, *op_name;
    size_t idx;
} opref;

static int opref_cmp_key(const char *span_a, const char *name_a, const char *span_b, const char *name_b) {
    int c = strcmp(span_a, span_b);
    return c ? c : strcmp(name_a, name_b);
}

static int cmp_opref(const void *pa, const void *pb) {
    const opref *a = pa, *b = pb;
    int c = opref_cmp_key(a->span_id, a->op_name, b->span_id, b->op_name);
    if (c) return c;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* first ref with key >= (span_id, op_name) */
static size_t opref_lower(const opref *r, size_t n, const char *span_id, const char *op_name) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (opref_cmp_key(r[mid].span_id, r[mid].op_name, span_id, op_name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

cg_op_memory *cg_memory_op_metrics(const cg_trace *t, const cg_memory_profile *p, cg_arena *a) {
    if (!p || !p->logical) return NULL;
    size_t no = t->n_ops;
    cg_op_memory *out = cg_arena_zalloc(a, (no ? no : 1) * sizeof *out);
    opref *r = cg_xalloc(no, sizeof *r);
    for (size_t i = 0; i < no; i++) r[i] = (opref){t->ops[i].span_id, t->ops[i].op_name, i};
    qsort(r, no, sizeof *r, cmp_opref);
    const cg_logical_memory *lm = p->logical;
    for (size_t k = 0; k < lm->n_lifetimes; k++) {
        const cg_lifetime *l = &lm->lifetimes[k];
        if (!l->op_name) continue;
        size_t i = opref_lower(r, no, l->allocation_span_id, l->op_name);
        if (i >= no || opref_cmp_key(r[i].span_id, r[i].op_name, l->allocation_span_id, l->op_name) != 0) continue;
        if (i + 1 < no && opref_cmp_key(r[i + 1].span_id, r[i + 1].op_name, l->allocation_span_id, l->op_name) == 0)
            continue; /* ambiguous within the span: span-level attribution only */
        cg_op_memory *o = &out[r[i].idx];
        o->has_allocated = true;
        o->allocated_bytes = cg_sat_add_u64(o->allocated_bytes, l->bytes);
    }
    free(r);
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
    cg_jv_obj_put(a, o, "op_name", l->op_name ? cg_jv_str_nocopy(a, l->op_name) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "bytes", cg_jv_u64(a, l->bytes));
    cg_jv_obj_put(a, o, "shape", shape_json(a, l->shape));
    cg_jv_obj_put(a, o, "dtype", cg_jv_str_nocopy(a, l->dtype));
    cg_jv_obj_put(a, o, "category", cg_jv_str_nocopy(a, cg_category_name(l->category)));
    cg_jv_obj_put(a, o, "start_timestamp_ns", cg_jv_u64(a, l->start_timestamp_ns));
    if (l->has_end) cg_jv_obj_put(a, o, "end_timestamp_ns", cg_jv_u64(a, l->end_timestamp_ns));
    return o;
}

/* categories of a point's map, keys sorted (a BTreeMap in the crate) */
static cg_jv *by_category_json(cg_arena *a, const cg_logical_point *pt) {
    int order[CG_CAT_COUNT];
    for (int c = 0; c < CG_CAT_COUNT; c++) {
        int k = c;
        while (k > 0 && strcmp(cg_category_name((cg_category)order[k - 1]), cg_category_name((cg_category)c)) > 0) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = c;
    }
    cg_jv *o = cg_jv_obj(a);
    for (int k = 0; k < CG_CAT_COUNT; k++)
        if (pt->category_present & (1u << order[k]))
            cg_jv_obj_put(a, o, cg_category_name((cg_category)order[k]), cg_jv_u64(a, pt->live_bytes_by_category[order[k]]));
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
        g->seen[c->device] = c->present;
    }
    cg_jv *e = cg_jv_obj(a);
    cg_jv_obj_put(a, e, "timestamp_ns", cg_jv_u64(a, pt->timestamp_ns));
    cg_jv_obj_put(a, e, "live_bytes", cg_jv_u64(a, pt->live_bytes));
    cg_jv_obj_put(a, e, "live_bytes_by_device", by_device_json(a, l, g->live, g->seen));
    cg_jv_obj_put(a, e, "live_bytes_by_category", by_category_json(a, pt));
    return e;
}

static void put_opt(cg_arena *a, cg_jv *o, const char *k, bool has, uint64_t v) {
    if (has) cg_jv_obj_put(a, o, k, cg_jv_u64(a, v));
}

static cg_jv *logical_peak_json(cg_arena *a, const cg_logical_memory *l, timeline_gen *tg) {
    const cg_logical_point *pk = &l->timeline[l->peak_point];
    cg_logical_live_by_device(l, l->peak_point, tg->live, tg->seen);
    cg_jv *peak = cg_jv_obj(a);
    cg_jv_obj_put(a, peak, "timestamp_ns", cg_jv_u64(a, pk->timestamp_ns));
    cg_jv_obj_put(a, peak, "live_bytes", cg_jv_u64(a, pk->live_bytes));
    cg_jv_obj_put(a, peak, "live_bytes_by_device", by_device_json(a, l, tg->live, tg->seen));
    cg_jv_obj_put(a, peak, "live_bytes_by_category", by_category_json(a, pk));
    cg_jv_obj_put(a, peak, "live_allocations",
                  cg_jv_lazy_arr(a, l->n_peak_live_allocations, peak_live_item, (void *)(uintptr_t)l));
    return peak;
}

static cg_jv *logical_device_json(cg_arena *a, const cg_logical_device *dv) {
    cg_jv *e = cg_jv_obj(a);
    cg_jv_obj_put(a, e, "device", cg_jv_str_nocopy(a, dv->device));
    cg_jv_obj_put(a, e, "storage_allocation_count", cg_jv_u64(a, dv->storage_allocation_count));
    cg_jv_obj_put(a, e, "matched_storage_free_count", cg_jv_u64(a, dv->matched_storage_free_count));
    cg_jv_obj_put(a, e, "total_allocated_bytes", cg_jv_u64(a, dv->total_allocated_bytes));
    put_opt(a, e, "peak_live_bytes", dv->has_peak, dv->peak_live_bytes);
    put_opt(a, e, "peak_timestamp_ns", dv->has_peak, dv->peak_timestamp_ns);
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
    /* the peak borrows the generator's scratch: the timeline restarts it at point 0 */
    if (l->has_peak) cg_jv_obj_put(a, o, "peak", logical_peak_json(a, l, tg));
    cg_jv_obj_put(a, o, "timeline", cg_jv_lazy_arr(a, l->n_timeline, timeline_item, tg));
    cg_jv_obj_put(a, o, "lifetimes", cg_jv_lazy_arr(a, l->n_lifetimes, lifetime_item, ctx));
    cg_jv *devs = cg_jv_arr(a);
    for (size_t d = 0; d < l->n_devices; d++) cg_jv_arr_push(a, devs, logical_device_json(a, &l->devices[d]));
    cg_jv_obj_put(a, o, "by_device", devs);
    return o;
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
    cg_jv *devs = cg_jv_arr(a);
    for (size_t d = 0; d < pm->n_devices; d++) {
        const cg_physical_device *pd = &pm->devices[d];
        cg_jv *e = cg_jv_obj(a);
        cg_jv_obj_put(a, e, "device", cg_jv_str_nocopy(a, pd->device));
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
        cg_jv_arr_push(a, devs, e);
    }
    cg_jv_obj_put(a, o, "by_device", devs);
    return o;
}

cg_jv *cg_memory_to_json(cg_arena *a, const cg_memory_profile *p) {
    return cg_jv_materialize(a, cg_memory_to_json_lazy(a, p));
}

cg_jv *cg_memory_to_json_lazy(cg_arena *a, const cg_memory_profile *p) {
    cg_jv *o = cg_jv_obj(a);
    if (p->logical) cg_jv_obj_put(a, o, "logical", logical_json(a, p->logical));
    if (p->physical) cg_jv_obj_put(a, o, "physical", physical_json(a, p->physical));
    return o;
}
